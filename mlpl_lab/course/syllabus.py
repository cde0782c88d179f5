"""``notebooks/course.yml``: per chapter the objectives, prerequisites, paper and difficulty; the
notebook's objectives cell (second) and quiz cells (last) kept in sync with it (:func:`sync`);
the syllabus page with each chapter's measured times: from the pack and cold
(``notebooks/timings.json``), and its live exercise (the live-exercise record)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from ..core.bibliography import PAPERS, WORKS, cite, reference
from ..reporting.report import NOTEBOOK_DIR
from .notebooks import (COURSE_FILE, as_lines, CourseError, DIFFICULTIES, NOT_MEASURED, OBJECTIVES_ID, PROFILES,
                        QUIZ_ID, TIMINGS_FILE, chapter_notebooks, new_cell, read_nb, source_of,
                        write_nb)

# ---------------------------------------------------------------------------------------
# course.yml: objectives and the syllabus
# ---------------------------------------------------------------------------------------
CHAPTER_KEYS = {"notebook": str, "title": str, "paper": str, "difficulty": str, "prerequisites": list,
                "objectives": list, "minutes": dict}


def load_course(path: Path = COURSE_FILE) -> Dict[str, Any]:
    """Read and check ``course.yml``: every chapter has the keys of :data:`CHAPTER_KEYS`, 3–5
    objectives, a known difficulty, minutes per known profile (a measured number), and names a
    notebook that exists."""
    import yaml

    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("chapters"), list):
        raise CourseError(f"{path}: expected a mapping with a `chapters:` list")
    for i, ch in enumerate(data["chapters"]):
        where = f"{path}: chapter {i + 1} ({ch.get('notebook', '?')})"
        for key, kind in CHAPTER_KEYS.items():
            if not isinstance(ch.get(key), kind):
                raise CourseError(f"{where}: `{key}` must be a {kind.__name__}")
        if not 3 <= len(ch["objectives"]) <= 5:
            raise CourseError(f"{where}: give 3 to 5 objectives, not {len(ch['objectives'])}")
        if ch["paper"] not in WORKS and ch["paper"] != ALL_PAPERS:
            raise CourseError(f"{where}: `paper` must name a work of mlpl_lab/core/bibliography.py "
                              f"(one of {', '.join(sorted(WORKS))}) or {ALL_PAPERS!r}, not {ch['paper']!r}")
        if not isinstance(ch.get("paper_note", ""), str):
            raise CourseError(f"{where}: `paper_note` must be a str")
        if ch["difficulty"] not in DIFFICULTIES:
            raise CourseError(f"{where}: difficulty must be one of {DIFFICULTIES}")
        for profile, minutes in ch["minutes"].items():
            if profile not in PROFILES or not isinstance(minutes, (int, float)) or minutes <= 0:
                raise CourseError(f"{where}: minutes must map a profile {PROFILES} to a measured "
                                  "number of minutes (leave out a profile not yet measured)")
        if not (NOTEBOOK_DIR / f"{ch['notebook']}.ipynb").exists():
            raise CourseError(f"{where}: no notebook notebooks/{ch['notebook']}.ipynb")
    return data


def load_timings(path: Path = TIMINGS_FILE) -> Dict[str, Dict[str, float]]:
    """``{profile: {notebook: seconds}}`` measured by :func:`timings_from_executed` (empty if absent)."""
    return json.loads(Path(path).read_text()) if Path(path).exists() else {}


def minutes(chapter: Dict[str, Any], profile: str, timings: Optional[Dict] = None) -> str:
    """The measured minutes of a chapter under a profile: course.yml's value, else the timings
    file's, else "not yet measured" (never a guess)."""
    if profile in chapter["minutes"]:
        return f"{chapter['minutes'][profile]:g}"
    seconds = (timings or {}).get(profile, {}).get(chapter["notebook"])
    return f"{seconds / 60:.1f}" if seconds else NOT_MEASURED


#: course.yml's ``paper`` of a chapter on all five papers
ALL_PAPERS = "all"


def paper_line(chapter: Dict[str, Any]) -> str:
    """The chapter's paper as its objectives cell names it: the bibliography's reference of the
    key ``paper`` names (``all``: the five papers' citations), then course.yml's optional
    ``paper_note``."""
    note = chapter.get("paper_note")
    if chapter["paper"] == ALL_PAPERS:
        text = "all five papers: " + "; ".join(cite(k) for k in PAPERS)
    else:
        text = reference(chapter["paper"])
    return text + (f" — {note}" if note else "")


def objectives_markdown(chapter: Dict[str, Any]) -> str:
    """The notebook's objectives cell (generated; ``mlpl-lab course sync`` writes it)."""
    lines = ["**Learning objectives** · difficulty: " + chapter["difficulty"],
             "", "After this chapter you can:", ""]
    lines += [f"{i}. {o}" for i, o in enumerate(chapter["objectives"], 1)]
    lines += ["", "**Prerequisites:** " + "; ".join(chapter["prerequisites"]),
              "", "**Paper:** " + paper_line(chapter),
              "", "<!-- generated from notebooks/course.yml by `mlpl-lab course sync`; edit the YAML, not this cell -->"]
    return "\n".join(lines)


QUIZ_TITLE = "## Quiz\n\nCheck yourself: pick an answer and read the feedback (nothing is graded or sent)."


def quiz_cell_source(stem: str) -> str:
    return f'from mlpl_lab.course.quiz import show_quiz\n\nshow_quiz("{stem}")'


#: the generated line of a notebook's first cell that states its measured times
TIME_MARK = "<!-- measured times: notebooks/timings.json (mlpl-lab course timings); mlpl-lab course sync writes this line -->"
#: the timings of a series served by the course pack are kept under this suffix of the profile
PACK_SUFFIX = "-pack"


def time_line(stem: str, timings: Optional[Dict] = None, profile: str = "cpu") -> Optional[str]:
    """The first cell's last line: the notebook's measured cold time and its time from the course
    pack under ``profile`` (from ``notebooks/timings.json``, said as the README and the syllabus say
    them, :func:`mlpl_lab.course.readme_times.duration`; "not yet measured" when absent, never a
    guess). None for a notebook with no measurement of either kind."""
    timings = load_timings() if timings is None else timings

    def said(key: str) -> str:  # the one way every page says a time (the README, the syllabus, the guide)
        return _said(timings.get(key, {}).get(stem))

    cold, pack = said(profile), said(profile + PACK_SUFFIX)
    if cold == pack == NOT_MEASURED:
        return None
    return (f"{TIME_MARK}\n*Measured on two cores ({profile} profile): {cold} training every run from "
            f"scratch; {pack} from the course pack.*")


def sync_notebook(path: Path, chapter: Dict[str, Any], write: bool = True) -> List[str]:
    """Put the objectives cell second and the quiz cell last; return what was (or would be) changed."""
    nb = read_nb(path)
    cells = nb["cells"]
    changes: List[str] = []
    want = objectives_markdown(chapter)
    idx = [i for i, c in enumerate(cells) if c.get("id") == OBJECTIVES_ID]
    if not idx:
        cells.insert(1, new_cell("markdown", want, OBJECTIVES_ID))
        changes.append("objectives cell added")
    elif idx != [1] or source_of(cells[idx[0]]) != want:
        cells.pop(idx[0])
        cells.insert(1, new_cell("markdown", want, OBJECTIVES_ID))
        changes.append("objectives cell differs from course.yml")
    if cells and cells[0].get("cell_type") == "markdown":  # the opening states the measured times
        first = source_of(cells[0])
        body = first.split(TIME_MARK)[0].rstrip()
        line = time_line(path.stem)
        if line is not None and first != f"{body}\n\n{line}":
            cells[0]["source"] = as_lines(f"{body}\n\n{line}")
            changes.append("measured times in the first cell differ from notebooks/timings.json")
    tail = [new_cell("markdown", QUIZ_TITLE, QUIZ_ID + "-title"),
            new_cell("code", quiz_cell_source(path.stem), QUIZ_ID)]
    if [(c.get("id"), source_of(c)) for c in cells[-2:]] != [(c["id"], source_of(c)) for c in tail]:
        cells[:] = [c for c in cells if c.get("id") not in (QUIZ_ID, QUIZ_ID + "-title")] + tail
        changes.append("quiz cells missing or not last")
    if changes and write:
        write_nb(nb, path)
    return changes


def sync(write: bool = True) -> Dict[str, List[str]]:
    """:func:`sync_notebook` for every chapter of course.yml."""
    course = load_course()
    return {ch["notebook"]: sync_notebook(NOTEBOOK_DIR / f"{ch['notebook']}.ipynb", ch, write)
            for ch in course["chapters"]}


#: the record of notebooks run alone on an empty store, importing the shipped pack themselves
PACK_SERVE_RECORD = TIMINGS_FILE.parent.parent / "benchmarks" / "records" / "pack_serve_cpu.json"


def live_seconds(profile: str = "cpu") -> Dict[str, float]:
    """``{notebook: seconds}`` of each chapter's live exercise as measured under ``profile``
    (:func:`mlpl_lab.protocol.live.measured`: only a measurement of the live run this code
    builds now counts); a chapter without one is left out.

    A live run chosen on results (02's tuned GR) is the one the shipped course pack's runs choose,
    read from a temporary store holding that pack, never from this machine's store: the course's
    pages say the same on a fresh clone, after ``make report`` and after a cold series."""
    import tempfile

    from ..protocol import live
    from ..runs.shipped import import_missing
    from ..runs.store import RunStore

    out: Dict[str, float] = {}
    stems = {p.stem[:2]: p.stem for p in chapter_notebooks()}
    with tempfile.TemporaryDirectory(prefix="mlpl-lab-course-pack-") as tmp:
        store = RunStore(Path(tmp) / "runs")
        try:
            import_missing(profile, store)
        except Exception:  # no pack for the profile, or a damaged one: the stand-in choices
            pass
        for chapter in live.chapters():
            try:
                m = live.measured(chapter, profile, store)
            except Exception:  # a record this machine lacks: not measured here
                m = None
            if m and m.get("seconds") and chapter in stems:
                out[stems[chapter]] = float(m["seconds"])
    return out


def load_pack_serve(path: Path = PACK_SERVE_RECORD) -> Optional[Dict[str, Any]]:
    return json.loads(Path(path).read_text()) if Path(path).exists() else None


def _said(seconds: Optional[float]) -> str:
    from .readme_times import duration

    return duration(seconds)


def syllabus_markdown(course: Dict[str, Any], timings: Optional[Dict] = None, linked=None,
                      live: Optional[Dict[str, float]] = None, pack_serve: Optional[Dict[str, Any]] = None,
                      profile: str = "cpu") -> str:
    """The syllabus page (MyST): per chapter its measured times under ``profile`` -- served from
    the course pack, its live exercise (trained only when a student asks), and cold (every run
    trained) -- and the smoke rehearsal (course.yml, then the timings file); then one section per
    chapter with its objectives. Every time comes from a record; a missing one says "not yet measured"."""
    timings = load_timings() if timings is None else timings
    live = live_seconds(profile) if live is None else live
    from .. import __version__

    pack, cold = timings.get(profile + PACK_SUFFIX) or {}, timings.get(profile) or {}
    out = ["# Syllabus", "", f"Edition {__version__} · generated from `notebooks/course.yml`.", "",
           f"| chapter | difficulty | from the pack ({profile}) | live exercise ({profile}) | "
           f"cold ({profile}, every run trained) | smoke rehearsal (min) |",
           "|---|---|---|---|---|---|"]
    for ch in course["chapters"]:
        stem = ch["notebook"]
        title = ch["title"] if linked is not None and stem not in linked else f"[{ch['title']}]({stem}.ipynb)"
        has_live = stem[:2] in _live_chapters()
        out.append(f"| {title} | {ch['difficulty']} | {_said(pack.get(stem))} | "
                   + (_said(live.get(stem)) if has_live else "no live exercise")
                   + f" | {_said(cold.get(stem))} | {minutes(ch, 'smoke', timings)} |")
    out += ["", _times_note(pack, live, cold, pack_serve if pack_serve is not None else load_pack_serve(), profile), ""]
    for ch in course["chapters"]:
        out += [f"## {ch['title']}", "", objectives_markdown(ch).split("<!--")[0].rstrip(), ""]
    return "\n".join(out)


def _live_chapters() -> Sequence[str]:
    from ..protocol.live import chapters

    return chapters()


def _times_note(pack: Dict[str, float], live: Dict[str, float], cold: Dict[str, float],
                pack_serve: Optional[Dict[str, Any]], profile: str) -> str:
    """How to read the three times, with the totals and the record of a notebook run alone."""
    def total(d: Dict[str, float]) -> str:
        return _said(sum(d.values())) if d else NOT_MEASURED

    text = (f"**From the pack** is what a session runs: the whole notebook executed with its runs served "
            f"from the shipped course pack (Run All in JupyterLab, papermill, `make report`), nothing "
            f"trained; {total(pack)} for the {len(pack)} chapters together. **Live exercise** is the one "
            f"cut-down run a student trains when they ask for it (the exercise says how); the notebook's "
            f"other cells never train; {total(live)} for the {len(live)} exercises measured. A 90-minute "
            f"session needs the first two. **Cold** trains every run the chapter needs from scratch and "
            f"then executes it (two cores, runs shared by two workers): {total(cold)} for the {len(cold)} "
            f"chapters; it is the preparation of a new pack, never a session. Measured on a 2-core "
            f"machine; a busier or slower one takes longer.")
    rows = (pack_serve or {}).get("notebooks") or []
    if rows and (pack_serve or {}).get("profile", profile) == profile:
        said = ", ".join(f"{r['notebook'][:2]} in {_said(r['seconds'])}" for r in rows if r.get("seconds"))
        text += (f" A notebook run alone on an empty store first imports the pack itself: {said} that way "
                 f"(measured {str(pack_serve.get('date', '?'))[:10]}, {sum(r.get('runs_trained', 0) for r in rows)} "
                 "runs trained).")
    return text


def timings_from_executed(executed_dir: Path) -> Dict[str, Dict[str, float]]:
    """``{profile: {notebook: seconds}}`` from papermill's metadata in executed notebooks
    (``metadata.papermill.duration`` and the injected ``profile`` parameter). A notebook whose
    header says its results came from a pack counts under ``<profile>-pack``."""
    out: Dict[str, Dict[str, float]] = {}
    for path in chapter_notebooks(executed_dir):
        nb = read_nb(path)
        meta = nb.get("metadata", {}).get("papermill", {})
        if meta.get("duration"):
            profile = meta.get("parameters", {}).get("profile", "?")
            header = "".join("".join(o.get("text", "")) for c in nb["cells"][:8] if c.get("cell_type") == "code"
                             for o in c.get("outputs", []) if o.get("name") == "stdout")
            if "results from pack " in header:
                profile += PACK_SUFFIX
            out.setdefault(profile, {})[path.stem] = float(meta["duration"])
    return out




def as_series(found: Dict[str, Dict[str, float]]) -> Dict[str, Dict[str, float]]:
    """``found`` (:func:`timings_from_executed`) with every ``<profile>-pack`` entry counted under
    ``<profile>``: for notebooks executed warm on a series' store that was rebuilt from the
    series' own pack (``mlpl-lab course timings --series-from-pack``). A pack carries only the
    weights the notebooks load, so such a store stays pack-served (its weightless runs cannot
    become local runs) and the headers say "results from pack"; the execution is the same warm
    one a series' report makes after its plan trained. Where both are present the series wins."""
    out = {p: dict(t) for p, t in found.items() if not p.endswith(PACK_SUFFIX)}
    for profile, times in found.items():
        if profile.endswith(PACK_SUFFIX):
            base = profile[: -len(PACK_SUFFIX)]
            out[base] = dict(times) | out.get(base, {})
    return out


def cold_seconds(warm: Dict[str, float], profile: str, store_root: Path, workers: int,
                 notebooks: Sequence[Path]) -> Dict[str, float]:
    """``{notebook: seconds}`` of a cold series run the way ``mlpl-lab report`` runs it (its plan
    trained first on ``workers`` single-thread processes, then each notebook executed warm): the
    notebook's measured warm execution (``warm``, papermill's duration) plus the measured run
    time (``summary.json``: ``seconds``) of the runs it is the first in the series to ask for,
    shared by the workers. Every term is a measurement of that series; the sharing assumes the
    workers were kept busy, which the plan's longest-first order aims at."""
    import os

    from ..protocol.plan import plan_series

    saved = os.environ.get("MLPL_LAB_DATA")
    os.environ["MLPL_LAB_DATA"] = str(Path(store_root).resolve().parent)  # the plan reads it
    try:
        plan = plan_series(profile, list(notebooks), serve_stored=True)
    finally:
        if saved is None:
            os.environ.pop("MLPL_LAB_DATA", None)
        else:
            os.environ["MLPL_LAB_DATA"] = saved
    run_seconds: Dict[str, float] = {}
    for key, name in plan.first_notebook().items():
        try:
            summary = json.loads((Path(store_root) / key / "summary.json").read_text())
        except (OSError, ValueError):
            raise ValueError(f"run {key} of {name} is not in {store_root}: the series is not complete "
                             "(run mlpl-lab report to its end first)") from None
        run_seconds[name] = run_seconds.get(name, 0.0) + float(summary["seconds"])
    return {stem: warm[stem] + run_seconds.get(stem, 0.0) / workers for stem in warm}
