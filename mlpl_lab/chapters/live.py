"""Live exercises: one cut-down run per chapter (01–06) that a student trains in class, then
compares with the converged run of the same method (issue 33, course delivery).

Each chapter's **key method** — 01 AN, 02 GR Loss, 03 OPML-SP, 04 CLS, 05 LAC (both stages),
06 PU-MLC — is taken from the chapter's own design (:func:`converged_spec`: seed 0, the chapter's
regime, hyperparameters, schedule and pretrained backbone). The **live spec** is that spec with
fewer training images and fewer epochs (:data:`LIVE`, literals per profile; LAC cuts both
stages), nothing else: the same validation and test scenes, the same method parameters (CLS's
ramp E_k stays the converged run's), the schedule spanning the shorter run. Its key therefore
differs, so it is never served from the course pack's converged run nor overwrites it.

The flow in a notebook: :func:`describe` (what will train, what it is compared with), the
student's prediction of the live test mAP, :func:`train` (the run store's tqdm bar with its time
estimate), :func:`compare` (a table of both runs and the self-check of
:mod:`mlpl_lab.course.exercises.live`, which never raises).

* The live run is trained **without an access-log entry** (:func:`mlpl_lab.runs.store.log_access`), so
  ``mlpl-lab pack export`` never ships it: a student who imports the pack trains it. The
  pretraining run it starts from is logged with its weights, so the pack carries them.
* The converged run is read from the store. Under ``smoke`` (:data:`TRAIN_REFERENCE`) the
  reference is the smoke profile's run of the same method, trained if missing; under the other
  profiles a missing run is reported (import the course pack) — no number is made up.
* The cpu sizes were measured by ``benchmarks/bench_live.py`` on the lab's 2-core machine
  (``benchmarks/records/live_exercises_cpu.json``: seconds per chapter, each ≤ 180 s, with the
  threads and the load average they were taken under; :func:`describe` prints the figure); the
  gpu and gpu_shape sizes are not measured.
"""
from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from ..course.exercises.live import TOLERANCE, as_number, check_live_prediction
from ..runs.runner import ensure, load_method
from ..runs.access import CHAPTER_ENV, log_access
from ..runs.spec import RunSpec
from ..runs.store import RunStore, StoredRun
from .common import as_profile, specs_for

CHAPTERS = ("01", "02", "03", "04", "05", "06")
#: the method each chapter's live exercise trains (display names)
KEY_METHOD = {"01": "AN", "02": "GR Loss", "03": "OPML-SP", "04": "CLS", "05": "LAC (two stages)",
              "06": "PU-MLC"}
#: every live run and its reference use this seed (the first of every profile)
SEED = 0
#: per profile and chapter: training images and epochs of the live run (05: stage 1, stage 2).
#: cpu: sized by benchmarks/bench_live.py to train in at most 3 minutes on 2 cores
LIVE: Dict[str, Dict[str, Dict[str, Any]]] = {
    "smoke": {"01": {"n_train": 128, "epochs": 1}, "02": {"n_train": 128, "epochs": 1},
              "03": {"n_train": 128, "epochs": 1}, "04": {"n_train": 128, "epochs": 1},
              "05": {"n_train": 128, "epochs": (1, 1)}, "06": {"n_train": 128, "epochs": 1}},
    "cpu": {"01": {"n_train": 2000, "epochs": 12}, "02": {"n_train": 2000, "epochs": 12},
            "03": {"n_train": 2000, "epochs": 12}, "04": {"n_train": 2000, "epochs": 10},
            "05": {"n_train": 1000, "epochs": (6, 3)}, "06": {"n_train": 2000, "epochs": 20}},
    "gpu": {"01": {"n_train": 5000, "epochs": 4}, "02": {"n_train": 5000, "epochs": 4},
            "03": {"n_train": 5000, "epochs": 4}, "04": {"n_train": 5000, "epochs": 4},
            "05": {"n_train": 5000, "epochs": (4, 2)}, "06": {"n_train": 5000, "epochs": 4}},
    "gpu_shape": {c: {"n_train": 256, "epochs": (1, 1) if c == "05" else 1} for c in CHAPTERS},
}
#: profiles whose reference run is trained when it is missing (cheap); elsewhere it is read only
TRAIN_REFERENCE = ("smoke",)


def _chapter(chapter: Any) -> str:
    c = str(chapter).zfill(2)
    if c not in CHAPTERS:
        raise ValueError(f"chapter {chapter!r} has no live exercise; choose one of {list(CHAPTERS)}")
    return c


def converged_spec(chapter, profile) -> RunSpec:
    """The chapter's own run of its key method under ``profile``, seed :data:`SEED` (what its
    notebook trains; under cpu the course pack's converged run)."""
    c, P = _chapter(chapter), as_profile(profile)
    if c == "01":
        from .assume_negative import METHODS

        return specs_for(P, {"AN": METHODS["AN"]}, "single_positive", seeds=[SEED])["AN"][0]
    if c == "02":
        return specs_for(P, {"GR": "gr"}, "single_positive", seeds=[SEED])["GR"][0]
    if c == "03":
        from . import opml

        method, hp = opml.method_specs(P)["single_positive"]["OPML-SP"]
        return P.spec(method, hp, "single_positive", {}, seed=SEED, **opml.train_overrides(P, method))
    if c == "04":
        from . import cls

        d = cls.chapter_design(P)
        method, hp = cls.method_specs(d, d.study_regime)["CLS"]
        regime, params = cls.REGIMES[d.study_regime]
        return P.spec(method, hp, regime, params, seed=SEED)
    if c == "05":
        from . import lac

        return lac.row_spec(P, "two-stage + queue (LAC)", SEED)
    from . import pu_mlc

    d = pu_mlc.chapter_design(P)
    return pu_mlc.ladder_specs(P, d)[f"p={d.proportions[0]}"]["PU-MLC (+mixup)"][0]


def _cut(spec: RunSpec, n_train: int, epochs: int) -> RunSpec:
    if n_train > spec.data["n_train"] or epochs > spec.train["epochs"]:
        raise ValueError(f"a live run cannot be larger than its converged run ({spec.describe()}, "
                         f"{spec.data['n_train']} images): got {n_train} images, {epochs} epochs; "
                         "lower LIVE in mlpl_lab/chapters/live.py")
    return spec.replace(data=dict(spec.data, n_train=int(n_train)), train=dict(spec.train, epochs=int(epochs)))


def live_exercise(chapter, profile) -> Tuple[RunSpec, RunSpec]:
    """``(live spec, converged spec)`` of a chapter under ``profile``: the live spec is the
    converged one with :data:`LIVE`'s training images and epochs (LAC: both stages cut, stage 2
    starting from the live stage 1)."""
    c, P = _chapter(chapter), as_profile(profile)
    if P.name not in LIVE:
        raise ValueError(f"profile {P.name!r} has no live exercise sizes; choose one of {sorted(LIVE)}")
    if P.dataset != "scenes":
        raise ValueError("live exercises train on the embedded scenes; use dataset='scenes'")
    conv = converged_spec(c, P)
    size = LIVE[P.name][c]
    if conv.init_from is not None:  # LAC: stage 1, then stage 2 from it
        e1, e2 = size["epochs"]
        live = _cut(conv, size["n_train"], e2).replace(init_from=_cut(conv.init_from, size["n_train"], e1))
    else:
        live = _cut(conv, size["n_train"], size["epochs"])
    if live.key == conv.key:
        raise ValueError(f"chapter {c}'s live run under {P.name!r} equals its converged run: nothing is "
                         "cut; lower LIVE in mlpl_lab/chapters/live.py")
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
    ``live_training=False`` (what ``mlpl-lab report`` passes: a report trains nothing a pack does
    not hold) reads the live run when it is stored and otherwise says so and returns None."""
    store = store or RunStore()
    live, _ = live_exercise(chapter, profile)
    if not live_training:
        with _unlogged():
            run = store.get(live, loader=load_method)
        if run is None:
            print(f"The live exercise of chapter {_chapter(chapter)} is left to class: this execution has "
                  "live_training = False (mlpl-lab report sets it, so a report trains nothing); open the "
                  "notebook in JupyterLab and run this cell to train it.")
        return run
    with _unlogged():
        run = ensure([live], store=store, label=f"{_chapter(chapter)} live exercise")[0]
    for s in stages(live):  # the pack must carry the backbone the live run starts from
        if s.backbone_from is not None:
            log_access(store.root, s.backbone_from.key, weights=True)
    return run


def reference(chapter, profile, store: RunStore | None = None) -> Tuple[Optional[StoredRun], str]:
    """``(converged run or None, where it comes from)``: read from the store; under
    :data:`TRAIN_REFERENCE` profiles trained if missing."""
    store = store or RunStore()
    _, conv = live_exercise(chapter, profile)
    P = as_profile(profile)
    if P.name in TRAIN_REFERENCE:
        run = ensure([conv], store=store, label=f"{_chapter(chapter)} live exercise reference")[0]
        return run, f"the {P.name} profile's own run of the same method, the reference under {P.name}"
    run = store.get(conv, loader=load_method)
    if run is None:
        return None, (f"the converged {P.name} run is not in the store: import the course pack "
                      f"(mlpl-lab pack import data/packs/{P.name}-course.mlplpack) or run the notebook "
                      "with mlpl-lab report")
    origin = run.origin
    return run, (f"course pack {origin.get('name')!r}" if origin else "this store (trained here)")


def _stage_runs(run: StoredRun, store: RunStore) -> List[Optional[StoredRun]]:
    return [store.get(s) for s in stages(run.spec)[:-1]] + [run]


def row(run: Optional[StoredRun], spec: RunSpec, store: RunStore) -> Dict[str, Any]:
    """One row of the comparison: epochs (per stage), training images, test mAP at the best-val
    epoch, whether the validation curve flattened, training seconds (all stages) and threads."""
    out: Dict[str, Any] = {"epochs": epochs(spec),
                           "training images": spec.data["n_train"]}
    if run is None:
        return out | {"test mAP": "—", "curve flattened": "—", "train time": "—", "threads": "—"}
    parts = _stage_runs(run, store)
    seconds = [p.summary.get("seconds") for p in parts if p is not None]
    known = len(seconds) == len(parts) and all(as_number(s) is not None for s in seconds)
    return out | {"test mAP": round(float(run.best["test_mAP"]), 2),
                  "curve flattened": "yes" if run.converged else "no",
                  "train time": f"{sum(seconds):.0f} s" if known else "—",
                  "threads": run.environment.get("threads", "—")}


def table(chapter, profile, live_run: StoredRun, store: RunStore | None = None):
    """The comparison as a DataFrame (rows ``live run`` and ``converged run``); its ``attrs["source"]``
    says where the converged run comes from (:func:`reference`)."""
    import pandas as pd

    store = store or RunStore()
    live, conv = live_exercise(chapter, profile)
    ref, source = reference(chapter, profile, store)
    with _unlogged():  # the live stages stay out of the access log (module docstring)
        mine = row(live_run, live, store)
    out = pd.DataFrame({"live run": mine, "converged run": row(ref, conv, store)}).T
    out.attrs["source"] = source
    return out


#: the benchmark's records (a checkout's benchmarks/records; absent in an installed package)
RECORDS = Path(__file__).resolve().parents[2] / "benchmarks" / "records"


def measured(chapter, profile) -> Optional[Dict[str, Any]]:
    """The benchmark's figure for this live run (``benchmarks/bench_live.py``), or None when no
    record measured the sizes :data:`LIVE` has now."""
    live, _ = live_exercise(chapter, profile)
    try:
        rec = json.loads((RECORDS / f"live_exercises_{as_profile(profile).name}.json").read_text())
        r = rec["chapters"][_chapter(chapter)]
    except (OSError, ValueError, KeyError):
        return None
    sizes = (live.data["n_train"], [s.train["epochs"] for s in stages(live)])
    return r if (r.get("n_train"), r.get("epochs")) == sizes else None


def describe(chapter, profile) -> str:
    """What the live exercise trains against what it is compared with, one paragraph."""
    live, conv = live_exercise(chapter, profile)
    c, m = _chapter(chapter), measured(chapter, profile)
    return (f"Live exercise {c}: {KEY_METHOD[c]} ({live.describe()}) on {live.data['n_train']} training "
            f"images, epochs {epochs(live)}, against the converged run of the same method on "
            f"{conv.data['n_train']} images, epochs {epochs(conv)}. Everything else is the same: seed "
            f"{live.seed}, regime {live.regime}, the method's parameters, the pretrained backbone, the "
            f"validation and test scenes. Your prediction passes within {TOLERANCE:g} mAP points."
            + ("" if m is None else f" On the lab's 2-core machine it took {m['seconds']:.0f} s with "
               f"{m['threads']} torch thread(s) at a load average of {m['load_before'][0]:.1f} "
               f"({m['date'][:10]}, benchmarks/bench_live.py)."))


def _show(table) -> None:
    """The comparison in the lab's table style (displayed in a notebook, printed elsewhere)."""
    from ..analysis.display import styled

    view = styled(table, f"The live run against the converged run of the same method ({table.attrs['source']}); "
                  "test mAP at the best-validation epoch", percent=["test mAP"], best=False)
    try:
        from IPython import get_ipython
        from IPython.display import display

        if get_ipython() is not None:
            display(view)
            return
    except ImportError:
        pass
    print(table.to_string())


def compare(chapter, profile, live_run: Any, prediction: Any, store: RunStore | None = None) -> bool:
    """Print the table of the live run against the converged run and grade ``prediction`` (the
    live test mAP in %, written before training). Returns the check's bool; never raises: a
    missing run or a garbage prediction is a ``✗`` line with what to do."""
    title = "Live exercise — the live run against the converged run"
    try:
        c = _chapter(chapter)
        live, conv = live_exercise(c, profile)
        if not isinstance(live_run, StoredRun) or live_run.spec != live:
            print(f"✗ {title} — no live run of chapter {c} under {as_profile(profile).name!r} to compare: "
                  "run the training cell (live.train) first and pass its result")
            return False
        t = table(c, profile, live_run, store)
        print(f"{KEY_METHOD[c]}: the run you trained against the converged run — {t.attrs['source']}")
        _show(t)
        hint = (f"the live run sees {live.data['n_train']} of {conv.data['n_train']} images for "
                f"{epochs(live)} of {epochs(conv)} epochs, and its schedule anneals over the shorter "
                "run: read the converged run's test mAP and its validation curve at the live run's last "
                "epoch, then decide how much is lost")
        return check_live_prediction(prediction, live_run.best.get("test_mAP"), hint)
    except Exception as exc:  # noqa: BLE001 — an exercise reports, it does not stop the notebook
        print(f"✗ {title} — {type(exc).__name__}: {exc}")
        return False
