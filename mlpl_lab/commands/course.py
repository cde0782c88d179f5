"""``mlpl-lab course sync|export|lab|timings|ranges|gpu-plan|repo-size|book|figure|results|claims-snapshot|claims-change``: course material -- objectives
synced into the notebooks and the README, student and instructor copies (``lab``: the ones ``make lab``
opens, a student's changed copy kept), measured timings and
expected ranges, the book, the README's figure and the handbook's results block
(:mod:`mlpl_lab.course`)."""
from __future__ import annotations

import json
from pathlib import Path

from ..course.book import build_book
from ..course.notebooks import RANGES_FILE, TIMINGS_FILE, chapter_notebooks, export
from ..course.ranges import base_profile, expected_ranges, load_ranges, merge_ranges
from ..course.syllabus import PACK_SUFFIX, load_timings, sync, timings_from_executed


def cmd_course(args) -> int:
    if args.action == "figure":  # the README's picture, from the lab's own scenes
        from ..course.figures import front_figure

        print(f"wrote {front_figure()}")
        return 0
    if args.action == "sync":
        from ..course.readme_times import sync_readme

        changes = sync(write=not args.check)
        changes["README.md"] = sync_readme(write=not args.check)
        from ..course.gpu_window import sync_guide
        from ..course.guide_blocks import sync_blocks

        changes["notebooks/guide.md"] = sync_guide(write=not args.check) + sync_blocks(write=not args.check)
        bad = {k: v for k, v in changes.items() if v}
        for stem, what in bad.items():
            print(f"{stem}: {', '.join(what)}")
        if args.check and bad:
            print("notebooks, the README's times, the guide's GPU section, session plans or compute options and "
                  "their records disagree: run "
                  "`mlpl-lab course sync`")
            return 1
        print("notebooks and the README agree with course.yml and the records" if not bad
              else f"{len(bad)} files updated")
        return 0
    if args.action == "results":  # the handbook's results block, from the executed notebooks
        from ..course.results import write_results

        return _handbook_block(lambda: write_results(Path(args.executed), check=args.check), "results block", args)
    if args.action in ("claims-snapshot", "claims-change"):  # the old series' claims beside the new
        return _claims_change(args)
    if args.action == "ranges":  # the guide's expected results, from one series' executed notebooks
        found = timings_from_executed(Path(args.executed))
        if not found:
            print(f"no executed notebooks with papermill metadata in {args.executed}: run `mlpl-lab report` first")
            return 1
        ranges = merge_ranges(load_ranges(), expected_ranges({p: Path(args.executed) for p in found}))
        RANGES_FILE.write_text(json.dumps(ranges, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
        print(f"expected results of the {', '.join(sorted({base_profile(p) for p in found}))} series written to {RANGES_FILE}")
        return 0
    if args.action == "repo-size":  # what a clone downloads, for the README (measured on this checkout)
        from ..course.readme_times import REPO_RECORD, measure_repo_size

        size = measure_repo_size()
        REPO_RECORD.write_text(json.dumps(size, indent=1, sort_keys=True) + "\n")
        print(f"history {size['history_bytes'] / 2 ** 20:.0f} MiB, tree {size['tree_bytes'] / 2 ** 20:.0f} MiB "
              f"written to {REPO_RECORD}; run `mlpl-lab course sync` to put it in the README")
        return 0
    if args.action == "gpu-plan":  # the gpu series' plan counted once for the guide (minutes)
        from ..course.gpu_window import PLAN_FILE, write_plan

        counts = write_plan()
        print(f"gpu plan: {counts['runs']} runs, {counts['flops'] / 1e15:.1f} PFLOP written to {PLAN_FILE}; "
              "run `mlpl-lab course sync` to put it in the guide")
        return 0
    if args.action == "lab":  # the copies make lab (students) and make lab-instructor open
        return _lab_copies(args)
    if args.action == "export":
        written = export(Path(args.out))
        print(f"{len(written['student'])} student and {len(written['instructor'])} instructor notebooks "
              f"in {args.out}/student and {args.out}/instructor")
        return 0
    if args.action == "timings":
        found = timings_from_executed(Path(args.executed))
        if args.series_from_pack:
            if not args.store:
                print("mlpl-lab course timings: --series-from-pack needs --store (the series' store)")
                return 1
            from ..course.syllabus import as_series

            found = as_series(found)
        if not found:
            print(f"no executed notebooks with papermill timings in {args.executed}")
            return 1
        if args.store:  # a cold series run as mlpl-lab report runs it: add its runs' measured time
            from ..course.syllabus import cold_seconds

            executed = {p.stem: p for p in chapter_notebooks(Path(args.executed))}
            for profile in [p for p in found if not p.endswith(PACK_SUFFIX)]:
                try:
                    found[profile] = cold_seconds(found[profile], profile, Path(args.store), args.workers,
                                                  [executed[s] for s in found[profile]])
                except ValueError as exc:
                    print(f"mlpl-lab course timings: {exc}")
                    return 1
        data = load_timings() | {p: load_timings().get(p, {}) | t for p, t in found.items()}
        TIMINGS_FILE.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(f"timings of {sum(len(t) for t in found.values())} notebooks written to {TIMINGS_FILE}")
        ranges = merge_ranges(load_ranges(), expected_ranges({p: Path(args.executed) for p in found}))
        RANGES_FILE.write_text(json.dumps(ranges, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
        print(f"expected ranges of {', '.join(sorted(found))} written to {RANGES_FILE}")
        return 0
    from ..course.book import instructor_report

    executed = {"student": Path(args.executed),
                "instructor": Path(args.instructor_executed or instructor_report(Path(args.executed)))}
    for variant in (("student", "instructor") if args.variant == "both" else (args.variant,)):
        path = build_book(executed[variant], Path(args.out) / variant, variant, strict=args.strict)
        print(f"{variant} book: {path}")
    return 0


def _lab_copies(args) -> int:
    """``mlpl-lab course lab [--variant student|instructor] [--out lab]``: generate the copies
    JupyterLab opens, keeping every copy changed since it was generated."""
    from ..course.notebooks import lab_copies

    which = "student" if args.variant == "both" else args.variant
    target = Path(args.out) / which
    done = lab_copies(target, which)
    print(f"{which} copies in {target}: {len(done['written'])} written from notebooks/, "
          f"{len(done['current'])} already current"
          + (f"; kept as you changed them: {', '.join(done['kept'])} (delete a copy to get the current "
             "version)" if done["kept"] else ""))
    return 0


def add_parser(sub) -> None:
    """``mlpl-lab course sync|export|timings|ranges|gpu-plan|repo-size|book|figure|results``."""
    course = sub.add_parser("course", help="course material: objectives sync, student/instructor "
                                           "copies, timings, the book")
    course.add_argument("action", choices=("sync", "export", "lab", "timings", "ranges", "gpu-plan",
                                                 "repo-size", "book", "figure", "results",
                                                 "claims-snapshot", "claims-change"))
    course.add_argument("--check", action="store_true", help="sync: only report disagreements (exit 1)")
    course.add_argument("--out", default=None, help="export: dist (default); lab: lab (default, the copies "
                                                    "go to lab/student or lab/instructor); book: reports/book (default)")
    course.add_argument("--executed", default="reports", help="executed notebooks (timings, ranges, book: the "
                                                              "student report, as `mlpl-lab report` writes it)")
    course.add_argument("--instructor-executed", default=None,
                        help="book: the instructor report's executed notebooks (`mlpl-lab report --instructor`; "
                             "default: the folder instructor/ inside --executed)")
    course.add_argument("--old", default=None,
                        help="claims-change: the previous series' claims (a claims-snapshot JSON file)")
    course.add_argument("--variant", default="both", choices=("student", "instructor", "both"),
                        help="book: which books (default both); lab: which copies (default student)")
    course.add_argument("--strict", action="store_true", help="book: warnings are errors (CI)")
    course.add_argument("--store", default=None,
                        help="timings: the run store (folder 'runs') of the cold series the executed "
                             "notebooks came from; each notebook's cold time adds its runs' measured "
                             "time shared by --workers (mlpl-lab report trains the plan first)")
    course.add_argument("--series-from-pack", action="store_true",
                        help="timings: the executed notebooks read the series' runs through the "
                             "series' own pack imported into --store (a pack holds only the weights "
                             "the notebooks load, so that store stays pack-served): count them as the "
                             "series' warm executions, not as a pack-served report")
    course.add_argument("--workers", type=int, default=2,
                        help="timings: the worker processes that trained the series' plan (default 2)")
    course.set_defaults(func=_course_entry)


def _claims_change(args) -> int:
    """``claims-snapshot``: the executed series' claims to ``--out``; ``claims-change``: the
    handbook's table of the ``--old`` series' claims beside the executed ones."""
    from ..course.claims_change import snapshot, snapshot_text, write_change

    try:
        if args.action == "claims-snapshot":
            if not args.out or args.out == "reports/book":
                print("mlpl-lab course claims-snapshot: give --out FILE (the JSON record to write)")
                return 1
            record = snapshot(Path(args.executed))
            out = Path(args.out)
            out.parent.mkdir(parents=True, exist_ok=True)
            tmp = out.with_suffix(".tmp")
            tmp.write_text(snapshot_text(record), encoding="utf-8")
            tmp.replace(out)
            n = sum(len(c) for c in record["notebooks"].values())
            print(f"{n} claims of {len(record['notebooks'])} notebooks written to {out}")
            return 0
    except ValueError as exc:
        print(f"mlpl-lab course {args.action}: {exc}")
        return 1
    if not args.old:
        print("mlpl-lab course claims-change: give --old FILE (a claims-snapshot of the previous series)")
        return 1
    return _handbook_block(lambda: write_change(Path(args.old), Path(args.executed), check=args.check),
                           "claims-change table", args)


def _handbook_block(write, what: str, args) -> int:
    """Write (or with ``--check`` only compare) one generated block of the handbook: a clear
    message and exit 1 on a bad input or, under ``--check``, on a stale block."""
    from ..course.results import HANDBOOK

    try:
        changed = write()
    except ValueError as exc:
        print(f"mlpl-lab course {args.action}: {exc}")
        return 1
    if args.check and changed:
        print(f"{HANDBOOK} does not hold the {what} of {args.executed}: run `mlpl-lab course {args.action}`")
        return 1
    print(f"{HANDBOOK}: {what} {'updated' if changed and not args.check else 'current'}")
    return 0


def _course_entry(args) -> int:
    if args.out is None:
        args.out = {"export": "dist", "lab": "lab"}.get(args.action, "reports/book")
    return cmd_course(args)


