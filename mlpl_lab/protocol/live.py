"""Live exercises: one cut-down run per chapter (01–06) that a student trains in class, then
compares with the chapter's own converged row of the same method.

Each chapter declares its live exercise in its own module (``CHAPTER = Chapter(..., live=Live(...))``,
:mod:`mlpl_lab.protocol.registry`): the **key method** — 01 AN, 02 GR Loss, 03 OPML-SP, 04 CLS,
05 LAC (both stages), 06 PU-MLC — its own spec of it (:func:`converged_spec`: the chapter's regime,
hyperparameters, schedule and pretrained backbone), the seeds it shows it on and the live sizes. The **reference** is the chapter's row of
that method (:func:`reference_specs`): the same spec at full length on the seeds the chapter
shows (:func:`shown_seeds`; 02 reports its fresh seeds 1–5, never the selection seed 0 its
tuning reads). The **live spec** is the row's spec on the first of those seeds with fewer
training images and fewer epochs (the chapter's live sizes, literals per profile; LAC cuts both stages),
nothing else: the same validation and test scenes, the same method parameters (CLS's ramp E_k
stays the converged run's), the schedule spanning the shorter run. Its key therefore differs, so
it is never served from the course pack nor overwrites a converged run.

The flow in a notebook: :func:`describe` (what will train, what it is compared with, what it took
when measured and under which conditions), the student's prediction of the live test mAP,
:func:`train` (the run store's progress), :func:`compare` (a table: the live run, the converged run
of the same seed, the chapter's row over its seeds; and the self-check of
:mod:`mlpl_lab.protocol.live_check`, which never raises).

* The live run is trained **without an access-log entry** (:func:`mlpl_lab.runs.store.log_access`), so
  ``mlpl-lab pack export`` never ships it: a student who imports the pack trains it. The
  pretraining run it starts from is logged with its weights, so the pack carries them.
* The converged runs are read from the store. Under ``smoke`` (:data:`TRAIN_REFERENCE`) they are
  the smoke profile's runs, trained if missing; under the other profiles a missing run is
  reported (import the course pack) — no number is made up.
* **Times are stated with where they were taken**: every row of the table says the device, torch
  threads and origin (the course pack or this machine) its training time comes from, read from
  the run's stored environment; a reference trained on another machine or thread count is said
  to be so, not offered as comparable.
* The cpu sizes were measured by ``benchmarks/bench_live.py`` at 2 torch threads, the cores of a
  class laptop (``benchmarks/records/live_exercises_cpu.json``: seconds per chapter, each ≤ 180 s,
  with the threads and the load average they were taken under; :func:`describe` prints them); the
  gpu and gpu_shape sizes are not measured.
* Chapters 00 (no training: the scenes and the label regimes) and 07 (the benchmark, which reads
  the other chapters' runs) declare no live exercise (:func:`chapters`).
"""
from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from ..runs.ensure import ensure, load_method
from ..runs.access import CHAPTER_ENV, log_access
from ..runs.spec import RunSpec
from ..runs.store import RunStore, StoredRun
from .common import as_profile
from .live_check import TOLERANCE, as_number, check_live_prediction
from .registry import Live, live_chapters

#: profiles whose reference run is trained when it is missing (cheap); elsewhere it is read only
TRAIN_REFERENCE = ("smoke",)


def chapters() -> Tuple[str, ...]:
    """The chapters with a live exercise (``"01"``, ...): those whose ``CHAPTER`` declares one."""
    return tuple(live_chapters())


def _chapter(chapter: Any) -> str:
    c = str(chapter).zfill(2)
    if c not in live_chapters():
        raise ValueError(f"chapter {chapter!r} has no live exercise; choose one of {list(chapters())}")
    return c


def _live(chapter: Any) -> Live:
    return live_chapters()[_chapter(chapter)].live


def key_method(chapter) -> str:
    """The method the chapter's live exercise trains (display name)."""
    return _live(chapter).key_method


def shown_seeds(chapter, profile) -> Tuple[int, ...]:
    """The seeds on which the chapter shows its key method's row (its tables and claims)."""
    return tuple(_live(chapter).seeds(as_profile(profile)))


def converged_spec(chapter, profile, seed: int | None = None, store: RunStore | None = None) -> RunSpec:
    """The chapter's own run of its key method under ``profile`` on ``seed`` (default: the first
    of :func:`shown_seeds`; what its notebook trains, under cpu a run of the course pack). A
    choice the chapter makes on results (02's tuned GR) is read from ``store`` (the default store
    when ``None``; the stand-in choice while its runs are missing)."""
    c, P = _chapter(chapter), as_profile(profile)
    seed = shown_seeds(c, P)[0] if seed is None else int(seed)
    return _live(c).spec(P, seed, store)


def reference_specs(chapter, profile, store: RunStore | None = None) -> List[RunSpec]:
    """The chapter's row of its key method: :func:`converged_spec` on every seed of
    :func:`shown_seeds` (the first is the live run's own seed)."""
    c, P = _chapter(chapter), as_profile(profile)
    return [converged_spec(c, P, s, store) for s in shown_seeds(c, P)]


def _cut(spec: RunSpec, n_train: int, epochs: int) -> RunSpec:
    if n_train > spec.data["n_train"] or epochs > spec.train["epochs"]:
        raise ValueError(f"a live run cannot be larger than its converged run ({spec.describe()}, "
                         f"{spec.data['n_train']} images): got {n_train} images, {epochs} epochs; "
                         "lower the chapter's live sizes (its CHAPTER declaration)")
    return spec.replace(data=dict(spec.data, n_train=int(n_train)), train=dict(spec.train, epochs=int(epochs)))


def live_exercise(chapter, profile, store: RunStore | None = None) -> Tuple[RunSpec, RunSpec]:
    """``(live spec, converged spec)`` of a chapter under ``profile``: the live spec is the
    converged one with the training images and epochs its ``CHAPTER`` declares (:class:`Live`) (LAC: both stages cut, stage 2
    starting from the live stage 1)."""
    c, P = _chapter(chapter), as_profile(profile)
    sizes = _live(c).sizes
    if P.name not in sizes:
        raise ValueError(f"profile {P.name!r} has no live exercise sizes; choose one of {sorted(sizes)}")
    if P.dataset != "scenes":
        raise ValueError("live exercises train on the embedded scenes; use dataset='scenes'")
    conv = converged_spec(c, P, store=store)
    size = sizes[P.name]
    if conv.init_from is not None:  # LAC: stage 1, then stage 2 from it
        e1, e2 = size["epochs"]
        live = _cut(conv, size["n_train"], e2).replace(init_from=_cut(conv.init_from, size["n_train"], e1))
    else:
        live = _cut(conv, size["n_train"], size["epochs"])
    if live.key == conv.key:
        raise ValueError(f"chapter {c}'s live run under {P.name!r} equals its converged run: nothing is "
                         "cut; lower the chapter's live sizes (its CHAPTER declaration)")
    return live, conv


# ------------------------------------------------------------------------------ runs
def stages(spec: RunSpec) -> List[RunSpec]:
    """A run and the stages it starts from, first stage first."""
    out = [spec]
    while out[0].init_from is not None:
        out.insert(0, out[0].init_from)
    return out


def epochs(spec: RunSpec) -> str:
    """The epochs of a run's stages, e.g. ``"12"`` or ``"6 + 3"`` (LAC)."""
    return " + ".join(str(s.train["epochs"]) for s in stages(spec))


@contextlib.contextmanager
def _unlogged():
    """Within this block the run store writes no access log (the report's notebook name is
    hidden), so ``mlpl-lab pack export`` does not see the runs read here."""
    saved = os.environ.pop(CHAPTER_ENV, None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ[CHAPTER_ENV] = saved


def train(chapter, profile, store: RunStore | None = None, live_training: bool = True) -> Optional[StoredRun]:
    """Train the live run (or read it back if it was trained before in this store), with the
    run store's progress bar; it stays out of the access log (module docstring).
    ``live_training=False`` (the notebooks' default, and what ``mlpl-lab report`` passes: Run All and
    a report train nothing a pack does not hold) reads the live run when it is stored and otherwise
    prints :func:`not_run` and returns None."""
    store = store or RunStore()
    live, _ = live_exercise(chapter, profile, store)
    if not live_training:
        with _unlogged():
            run = store.get(live, loader=load_method)
        if run is None:
            print(not_run(chapter, profile, store))
        return run
    with _unlogged():
        run = ensure([live], store=store, label=f"{_chapter(chapter)} live exercise")[0]
    for s in stages(live):  # the pack must carry the backbone the live run starts from
        if s.backbone_from is not None:
            log_access(store.root, s.backbone_from.key, weights=True)
    return run


#: how a student runs the live exercise (the notebooks' parameters cell sets ``live_training = False``)
HOW_TO_RUN = ("To run it, set `live_training = True` in the parameters cell at the top of the notebook, run "
              "that cell again, then the cells of this section; from the command line, "
              "`papermill -p live_training True`.")


def not_run(chapter, profile, store: RunStore | None = None) -> str:
    """The neutral sentence for an execution with ``live_training = False``: nothing was trained,
    what the exercise would train, how long it took when measured, and how to run it."""
    live, _ = live_exercise(chapter, profile, store)
    c, m = _chapter(chapter), measured(chapter, profile)
    took = "" if m is None else f", which took {m['seconds']:.0f} s when measured"
    return (f"The live exercise of chapter {c} was not run in this execution (`live_training = False`, the "
            f"default): nothing was trained. It trains {key_method(c)} on {live.data['n_train']} images for "
            f"{epochs(live)} epochs{took}. {HOW_TO_RUN}")


def reference(chapter, profile, store: RunStore | None = None) -> Tuple[List[Optional[StoredRun]], str]:
    """``(the chapter's row: a run or None per seed of :func:`reference_specs`, where they come
    from)``: read from the store; under :data:`TRAIN_REFERENCE` profiles trained if missing."""
    store = store or RunStore()
    specs = reference_specs(chapter, profile, store)
    P = as_profile(profile)
    if P.name in TRAIN_REFERENCE:
        runs = ensure(specs, store=store, label=f"{_chapter(chapter)} live exercise reference")
        return runs, f"the {P.name} profile's own runs of the same method, the reference under {P.name}"
    runs = [store.get(s, loader=load_method) for s in specs]
    if not any(runs):
        return runs, (f"the converged {P.name} runs are not in the store: import the course pack "
                      f"(mlpl-lab pack import data/packs/{P.name}-course) or run the notebook")
    packs = sorted({r.origin.get("name") for r in runs if r is not None and r.origin})
    local = sum(1 for r in runs if r is not None and not r.origin)
    parts = [f"course pack {', '.join(map(repr, packs))}"] if packs else []
    parts += [f"{local} trained in this store"] if local else []
    return runs, " and ".join(parts)


def _stage_runs(run: StoredRun, store: RunStore) -> List[Optional[StoredRun]]:
    return [store.get(s) for s in stages(run.spec)[:-1]] + [run]


def _seconds(run: StoredRun, store: RunStore) -> Optional[float]:
    """Training seconds of a run, all its stages; None when a stage is missing or unrecorded."""
    parts = _stage_runs(run, store)
    seconds = [p.summary.get("seconds") if p is not None else None for p in parts]
    if not all(as_number(x) is not None for x in seconds):
        return None
    return float(sum(seconds))


def timed_on(run: StoredRun) -> str:
    """Where a run's training time was measured, from its stored environment: the device, the
    torch threads, and the course pack it came from (or this store)."""
    env = run.environment or {}
    threads = env.get("threads")
    where = f"{env.get('device', '?')}, {threads if threads is not None else '?'} thread{'' if threads == 1 else 's'}"
    origin = run.origin
    return where + (f", pack {origin.get('name')}" if origin else ", this store")


def _seeds_text(seeds) -> str:
    seeds = list(seeds)
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}–{seeds[-1]}"
    return ", ".join(map(str, seeds))


def row(run: Optional[StoredRun], spec: RunSpec, store: RunStore) -> Dict[str, Any]:
    """One run's row: seed, epochs (per stage), training images, test mAP at the best-val epoch,
    whether the validation curve flattened, training seconds (all stages) and where they were
    measured (:func:`timed_on`)."""
    out: Dict[str, Any] = {"seeds": str(spec.seed), "epochs": epochs(spec), "training images": spec.data["n_train"]}
    if run is None:
        return out | {"test mAP": "—", "curve flattened": "—", "train time": "—", "timed on": "—"}
    seconds = _seconds(run, store)
    return out | {"test mAP": round(float(run.best["test_mAP"]), 2),
                  "curve flattened": "yes" if run.converged else "no",
                  "train time": "—" if seconds is None else f"{seconds:.0f} s",
                  "timed on": timed_on(run)}


def row_over_seeds(runs: List[Optional[StoredRun]], specs: List[RunSpec], store: RunStore) -> Dict[str, Any]:
    """The chapter's row: the mean test mAP over its seeds (the runs present), how many curves
    flattened, the mean training seconds and where they were measured."""
    have = [r for r in runs if r is not None]
    out: Dict[str, Any] = {"seeds": _seeds_text(s.seed for s in specs), "epochs": epochs(specs[0]),
                           "training images": specs[0].data["n_train"]}
    if not have:
        return out | {"test mAP": "—", "curve flattened": "—", "train time": "—", "timed on": "—"}
    seconds = [_seconds(r, store) for r in have]
    places = sorted({timed_on(r) for r in have})
    mean = sum(float(r.best["test_mAP"]) for r in have) / len(have)
    return out | {"test mAP": round(mean, 2),
                  "curve flattened": f"{sum(bool(r.converged) for r in have)} of {len(have)}",
                  "train time": ("—" if any(x is None for x in seconds)
                                 else f"{sum(seconds) / len(seconds):.0f} s a run"),
                  "timed on": "; ".join(places)
                  + ("" if len(have) == len(specs) else f" ({len(specs) - len(have)} seeds not stored)")}


def table(chapter, profile, live_run: StoredRun, store: RunStore | None = None):
    """The comparison as a DataFrame: the live run, the converged run of the same spec and seed
    at full length, and the chapter's row over the seeds it shows (mean). ``attrs["source"]``
    says where the converged runs come from, ``attrs["comparable"]`` whether their times were
    measured under the live run's conditions (device and threads)."""
    import pandas as pd

    store = store or RunStore()
    c = _chapter(chapter)
    live, conv = live_exercise(c, profile, store)
    specs = reference_specs(c, profile, store)
    runs, source = reference(c, profile, store)
    with _unlogged():  # the live stages stay out of the access log (module docstring)
        mine = row(live_run, live, store)
    same = runs[0] if specs[0].key == conv.key else None
    rows = {"live run": mine, f"converged run, seed {conv.seed}": row(same, conv, store),
            f"the chapter's row, seeds {_seeds_text(shown_seeds(c, profile))} (mean)": row_over_seeds(runs, specs, store)}
    out = pd.DataFrame(rows).T
    here = (live_run.environment or {}) if isinstance(live_run, StoredRun) else {}
    others = [r for r in runs if r is not None]
    out.attrs["source"] = source
    out.attrs["comparable"] = bool(others) and all(
        (r.environment or {}).get(k) == here.get(k) for r in others for k in ("device", "threads"))
    return out


#: the benchmark's records (a checkout's benchmarks/records; absent in an installed package)
RECORDS = Path(__file__).resolve().parents[2] / "benchmarks" / "records"


def measured(chapter, profile, store: RunStore | None = None) -> Optional[Dict[str, Any]]:
    """The benchmark's figure for this live run (``benchmarks/bench_live.py``), with the machine's
    core count, or None when no record measured the live spec this code builds now (a choice made
    on results, 02's tuned GR, is read from ``store``: the default store when None)."""
    live, _ = live_exercise(chapter, profile, store)
    try:
        rec = json.loads((RECORDS / f"live_exercises_{as_profile(profile).name}.json").read_text())
        r = rec["chapters"][_chapter(chapter)]
    except (OSError, ValueError, KeyError):
        return None
    if r.get("key") != live.key:  # measured on another live spec (sizes or seed changed since)
        return None
    return {"cpus": (rec.get("machine") or {}).get("cpus")} | r


def describe(chapter, profile) -> str:
    """What the live exercise trains against what it is compared with, and what it took when
    measured (threads and load), one paragraph."""
    live, conv = live_exercise(chapter, profile)
    c, m = _chapter(chapter), measured(chapter, profile)
    seeds = _seeds_text(shown_seeds(c, profile))
    return (f"Live exercise {c}: {key_method(c)} ({live.describe()}) on {live.data['n_train']} training "
            f"images, epochs {epochs(live)}, against the chapter's own row of the same method: the same "
            f"spec on {conv.data['n_train']} images, epochs {epochs(conv)}, on seed {conv.seed} and over the "
            f"seeds the chapter shows ({seeds}). Everything else is the same: regime {live.regime}, the "
            "method's parameters, the pretrained backbone, the validation and test scenes. Your prediction "
            f"passes within {TOLERANCE:g} mAP points."
            + ("" if m is None else f" Measured {m['date'][:10]} on the lab's machine: {m['seconds']:.0f} s "
               f"with {m['threads']} torch thread{'' if m['threads'] == 1 else 's'} on a "
               f"{m.get('cpus', '?')}-core machine at a load average "
               f"of {m['load_before'][0]:.1f}"
               + (f", the run getting {m['cores_obtained']:.1f} cores" if m.get("cores_obtained") else "")
               + (". A busier or slower machine takes longer." if not _slowest(m) else
                  ". On the same machine shared with other work (load average {:.1f}, the run getting {:.1f} "
                  "cores) it took {:.0f} s: close other work before training.".format(
                      _slowest(m)["load_before"][0], _slowest(m)["cores_obtained"], _slowest(m)["seconds"]))))


def _slowest(m: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The slowest earlier measurement of a live run (``benchmarks/bench_live.py`` keeps those of
    the same run at the same threads), when it is slower than the figure shown."""
    slower = [e for e in m.get("earlier", []) if e.get("seconds", 0) > m["seconds"]]
    return max(slower, key=lambda e: e["seconds"]) if slower else None


def compare(chapter, profile, live_run: Any, prediction: Any, store: RunStore | None = None) -> bool:
    """Print the table of the live run against the chapter's converged runs and grade
    ``prediction`` (the live test mAP in %, written before training). Returns the check's bool;
    never raises: a missing run or a garbage prediction is a ``✗`` line with what to do."""
    title = "Live exercise — the live run against the converged run"
    try:
        c = _chapter(chapter)
        live, conv = live_exercise(c, profile, store)
        if live_run is None:  # live_training = False: nothing to compare, which is no failure
            print(f"{title}: the live exercise was not run in this execution, so there is nothing to "
                  "compare yet (the training cell above says how to run it).")
            return False
        if not isinstance(live_run, StoredRun) or live_run.spec != live:
            print(f"✗ {title} — no live run of chapter {c} under {as_profile(profile).name!r} to compare: "
                  "run the training cell (live.train) first and pass its result")
            return False
        t = table(c, profile, live_run, store)
        print(f"{key_method(c)}: the run you trained against the chapter's converged runs — {t.attrs['source']}. "
              + ("Their training times were measured on this device with as many threads as yours."
                 if t.attrs["comparable"] else
                 "Their training times were measured elsewhere or with another number of threads "
                 "(column 'timed on'): they are not comparable with yours."))
        _show(t)
        hint = (f"the live run sees {live.data['n_train']} of {conv.data['n_train']} images for "
                f"{epochs(live)} of {epochs(conv)} epochs, and its schedule anneals over the shorter "
                f"run: read the converged run of seed {conv.seed} and its validation curve at the live "
                "run's last epoch, then decide how much is lost")
        return check_live_prediction(prediction, live_run.best.get("test_mAP"), hint)
    except Exception as exc:  # noqa: BLE001 — an exercise reports, it does not stop the notebook
        print(f"✗ {title} — {type(exc).__name__}: {exc}")
        return False


def _show(table) -> None:
    """The comparison in the lab's table style (displayed in a notebook, printed elsewhere)."""
    from ..analysis.display import styled

    view = styled(table, f"The live run against the chapter's converged runs of the same method "
                  f"({table.attrs['source']}); test mAP at the best-validation epoch; 'timed on': where each "
                  "training time was measured", percent=["test mAP"], counts=["training images"], best=False)
    try:
        from IPython import get_ipython
        from IPython.display import display

        if get_ipython() is not None:
            display(view)
            return
    except ImportError:
        pass
    print(table.to_string())
