"""The GPU check's cut: the gpu design at sizes that let all eight notebooks execute end to end
inside the check's deadline (``benchmarks/gpu/check.sh``, step ``notebooks``).

The cut is the profile ``gpu_cut``: the ``gpu_shape`` profile's literals — the gpu profile's code
paths: ResNet-18 at 64 px, bfloat16 autocast, channels-last, the cosine schedule, the pretrained
backbone, and every chapter's gpu design (method lists, ablation rows, regimes, key seeds capped at
the profile's, LAC's ResNet-18 cut after layer3 with the label-query head at 128 px; the workers
of the series train it as it would the gpu profile, several per device) — with the sizes of
:data:`CUT_SIZES` for the mode: ``gpu`` (a CUDA device) or ``rehearse`` (the CPU, ``make
gpu-rehearse``). Both modes execute the same notebooks, chapter designs and cells; only the images
per run differ.

Every per-profile table of the chapters is keyed by the profile's name (gr's zoo and budget, LAC's
stage epochs, the tuning trials, the live exercise sizes): :func:`register_cut` gives ``gpu_cut``
gpu_shape's entries, and the live exercise the sizes of gpu_shape capped inside the cut's own
converged runs (fewer images than the cut, no more epochs), so the live exercises train under the
cut, sized to it. The notebooks' parameters take a profile's name only: :func:`startup_file` writes
an IPython startup file that registers the cut in each kernel before the notebook's first cell.

**Sized to the window** (:func:`size`): the notebooks step must finish on one card within
:data:`NOTEBOOKS_LIMIT_S`. The cut's planned runs are counted by the series' own plan at each of
:data:`LEVELS` (seeds and tuning trials, largest first) and priced from the GPU check's records:
the seconds a run of the cut took on the card (:func:`recorded_run_rate`: the notebooks step's
planned training, or its progress lines in ``logs.txt``), divided by the total-throughput gain of
the best recorded worker count (``throughput.json``), plus the longest notebook's execution (the
notebooks run side by side once the runs are trained; a GPU record's when there is one, else the
rehearsal's, a slower machine's). The first level that fits is the cut; where the card's last
check stopped notebooks at its budget, their need is unknown and the cut is the smallest level.
The rehearsal on the CPU takes the same level, so it runs the same plan at CPU sizes."""
from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, Optional

#: the base whose literals the cut takes (the gpu profile's code paths, every chapter's gpu design)
BASE = "gpu_shape"
NAME = "gpu_cut"

#: the cut's sizes per mode. gpu: half gpu_shape's training images (256, 2 epochs, two seeds: a
#: run's training is a fraction of a second of GPU time, so the notebooks' wall is mostly their
#: runs' fixed costs: tests/test_gpu_cut.py does the arithmetic); rehearse: the CPU (a CPU without
#: bf16 units trains an AMP spec in float32: benchmarks/records/amp_cpu.json), and the series is
#: about 320 runs: 8 training
#: images (one step an epoch, as at 32; the live exercises 4, still two a BatchNorm needs), the
#: probes on those 8, 32 validation and test images (scored in float32, a tenth of a training
#: image's cost each; fewer would leave classes without a positive), the test set scored once.
#: Two seeds and two epochs in both: the chapters' paired comparisons and the benchmark's fresh
#: seeds need two seeds, and what a method does between epochs (pseudo-labels, schedules, the
#: best-epoch choice) needs a second epoch (fewer leaves code paths unexecuted that the gpu series takes)
CUT_SIZES = {
    "gpu": {"n_train": 256, "n_val": 128, "n_test": 128, "epochs": 2, "seeds": [0, 1],
            "pretrain": {"n_train": 512, "n_val": 128, "n_test": 128, "epochs": 1}},
    "rehearse": {"n_train": 8, "n_val": 32, "n_test": 32, "epochs": 2, "seeds": [0, 1], "probe_size": 8,
                 "test_every_epoch": False,
                 "pretrain": {"n_train": 32, "n_val": 32, "n_test": 32, "epochs": 1}},
}

#: the notebooks the check executes, in series order (07 reads the runs of 01-06)
NOTEBOOKS = ("00_partial_labels", "01_assume_negative", "02_gr_loss", "03_opml", "04_cls", "05_lac",
             "06_pu_mlc", "07_benchmark")
#: the notebooks with a live exercise, trained under the cut (``live_training=True``)
LIVE_NOTEBOOKS = NOTEBOOKS[1:7]


#: the notebooks step's limit on one card, seconds: its planned training and all eight notebooks
NOTEBOOKS_LIMIT_S = 330
#: the cut's levels, largest first: fewer seeds and tuning trials, fewer planned runs (level 0 is
#: CUT_SIZES' own two seeds and gpu_shape's two trials a tuned row)
LEVELS = ({"seeds": [0, 1], "trials": 2}, {"seeds": [0, 1], "trials": 1},
          {"seeds": [0], "trials": 2}, {"seeds": [0], "trials": 1})
#: the GPU check's records (a check on a card writes them)
GPU_RECORDS = Path(__file__).resolve().parents[1] / "records" / "gpu"


def cut_profile(mode: str, level: int = 0):
    """The ``gpu_cut`` Profile of ``mode`` at ``level`` of :data:`LEVELS` (not registered)."""
    from mlpl_lab.profiles import get_profile

    if mode not in CUT_SIZES:
        raise ValueError(f"mode must be one of {sorted(CUT_SIZES)} (got {mode!r})")
    size = dict(CUT_SIZES[mode]) | {"seeds": list(LEVELS[level]["seeds"])}
    B = get_profile(BASE)
    pre = dict(B.pretrain) | size.pop("pretrain")
    return replace(B, name=NAME, pretrain=pre, **size)


def live_sizes(base_live: dict, n_train: int, epochs: int) -> dict:
    """A chapter's live sizes inside a profile of ``n_train`` images and ``epochs`` epochs: fewer
    images than the converged run (at most half), no more epochs (per stage for LAC)."""
    def cap(e):
        return tuple(min(int(x), int(epochs)) for x in e) if isinstance(e, tuple) else min(int(e), int(epochs))

    return dict(base_live, n_train=min(int(base_live["n_train"]), int(n_train) // 2),
                epochs=cap(base_live["epochs"]))


def register_cut(mode: str, level: int = 0) -> str:
    """Register ``gpu_cut`` of ``mode`` at ``level`` with the lab: the profile, the gpu design
    (``DESIGN_OF``), and gpu_shape's entries of the chapters' per-profile tables (the tuning
    trials the level's); the live exercise sized inside the cut. Returns the name."""
    from mlpl_lab import profiles
    from mlpl_lab.chapters import gr, lac
    from mlpl_lab.protocol import common, lac_stages, registry, tuning

    P = cut_profile(mode, level)
    profiles.PROFILES[NAME] = P
    common.DESIGN_OF[NAME] = common.design_name(BASE)
    for table in (gr.DESIGNS, lac.DESIGNS, lac_stages.STAGES, tuning.TRIALS_OF_PROFILE):
        if BASE in table:
            table[NAME] = table[BASE]
    tuning.TRIALS_OF_PROFILE[NAME] = LEVELS[level]["trials"]
    for chapter in registry.live_chapters().values():
        chapter.live.sizes[NAME] = live_sizes(chapter.live.sizes[BASE], P.n_train, P.epochs)
    return NAME


def unregister_cut() -> None:
    """Undo :func:`register_cut` (tests)."""
    from mlpl_lab import profiles
    from mlpl_lab.chapters import gr, lac
    from mlpl_lab.protocol import common, lac_stages, registry, tuning

    for table in (profiles.PROFILES, common.DESIGN_OF, gr.DESIGNS, lac.DESIGNS, lac_stages.STAGES,
                  tuning.TRIALS_OF_PROFILE,
                  *(c.live.sizes for c in registry.live_chapters().values())):
        table.pop(NAME, None)


STARTUP = """# written by benchmarks/gpu/cut.py: the GPU check's cut profile, registered before the notebook runs
import sys
sys.path.insert(0, {here!r})
import cut
cut.register_cut({mode!r}, {level!r})
"""


def startup_file(ipython_dir: Path, mode: str, level: int = 0) -> Path:
    """An IPython startup file under ``ipython_dir`` (set ``IPYTHONDIR`` to it for the kernels)
    that registers the cut of ``mode`` at ``level`` in every kernel before the notebook's first cell."""
    startup = Path(ipython_dir) / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    path = startup / "00-gpu-check-cut.py"
    path.write_text(STARTUP.format(here=str(Path(__file__).resolve().parent), mode=mode, level=level))
    return path


# ------------------------------------------------------------------------- sized to the window
_SO_FAR = re.compile(r"\[plan\] runs: (\d+) done.*?· ([\d.]+) (s|min|h) so far")
_WORKERS = re.compile(r"\[plan\] \d+ runs to train \(\d+ stored\) on (\d+) worker")


def _read(path: Path) -> Optional[Any]:
    try:
        return json.loads(path.read_text()) if path.suffix == ".json" else path.read_text()
    except (OSError, ValueError):
        return None


def recorded_run_rate(records: Path = GPU_RECORDS) -> Optional[Dict[str, Any]]:
    """``{"seconds_per_run", "workers", "source"}``: the wall seconds per planned run of the cut on
    the card, from the GPU check's notebooks step: its record's planned training where it finished,
    else its last progress line in ``logs.txt`` (runs done and seconds so far); None without either."""
    rec = _read(records / "notebooks.json") or {}
    done = rec.get("planned_training") or {}
    if rec.get("mode") == "gpu" and done.get("status") == "done" and done.get("runs_stored"):
        return {"seconds_per_run": done["seconds"] / done["runs_stored"], "workers": int(done["workers"]),
                "source": f"notebooks.json: {done['runs_stored']} runs in {done['seconds']:.0f} s on "
                          f"{done['workers']} workers"}
    logs = _read(records / "logs.txt") or ""
    section = logs.split("=== notebooks", 1)[1].split("\n=== ", 1)[0] if "=== notebooks" in logs else ""
    lines = _SO_FAR.findall(section)
    workers = _WORKERS.findall(section)
    if not lines or not workers:
        return None
    n, value, unit = lines[-1]
    seconds = float(value) * {"s": 1, "min": 60, "h": 3600}[unit]
    return {"seconds_per_run": seconds / int(n), "workers": int(workers[0]),
            "source": f"logs.txt: {n} runs in {seconds:.0f} s on {workers[0]} worker(s)"}


def best_workers(records: Path = GPU_RECORDS) -> Dict[str, Any]:
    """``{"workers", "gain"}``: the recorded best workers per card and their total images/s over
    one run's (``throughput.json``'s best), or one worker and 1.0 without that record."""
    best = (_read(records / "throughput.json") or {}).get("best") or {}
    try:
        return {"workers": int(best["workers_per_device"]), "gain": float(best["total_over_one_run"])}
    except (KeyError, TypeError, ValueError):
        return {"workers": 1, "gain": 1.0}


def notebooks_seconds(records: Path = GPU_RECORDS) -> Optional[Dict[str, Any]]:
    """``{"seconds", "source", "stopped"}``: the longest completed notebook of the newest notebooks
    record, the card's where it completed any, else the rehearsal's (the CPU: slower, so an upper
    figure); where none completed anywhere, the longest the card stopped. ``stopped`` lists the
    card's notebooks its budget stopped: their seconds are only a lower bound on what they need, so
    :func:`size` cannot trust a projection that reads them."""
    card = _read(records / "notebooks.json") or {}
    stopped = sorted(n["notebook"] for n in card.get("notebooks", [])
                     if card.get("mode") == "gpu" and n.get("status") == "stopped")
    for path in (records / "notebooks.json", records / "rehearsal" / "notebooks.json"):
        rec = _read(path) or {}
        done = [n["seconds"] for n in rec.get("notebooks", []) if n.get("completed") and n.get("seconds")]
        if done:
            return {"seconds": max(done), "source": f"{path.relative_to(records.parent)} ({rec.get('mode')})",
                    "stopped": stopped}
    if stopped:  # none completed anywhere, yet the card stopped some: still a lower bound, not nothing
        seconds = [float(n.get("seconds") or 0) for n in card["notebooks"] if n["notebook"] in stopped]
        return {"seconds": max(seconds), "stopped": stopped,
                "source": f"{(records / 'notebooks.json').relative_to(records.parent)} (gpu, stopped only)"}
    return None


def planned_runs(level: int, mode: str = "gpu") -> int:
    """The distinct runs the series' plan trains under the cut at ``level`` (its runs chosen from
    results counted at their stand-ins; pending runs are not trained)."""
    from mlpl_lab.protocol.plan import plan_series

    root = Path(__file__).resolve().parents[2] / "notebooks"
    register_cut(mode, level)
    try:
        plan = plan_series(NAME, [root / f"{nb}.ipynb" for nb in NOTEBOOKS])
        later, _ = plan.stand_ins()
        return len(plan.order) + len(later)
    finally:
        unregister_cut()


def size(budget_s: float = NOTEBOOKS_LIMIT_S, records: Path = GPU_RECORDS, count=planned_runs) -> Dict[str, Any]:
    """The cut's level for the window (see the module docstring): the first of :data:`LEVELS`
    whose projected seconds fit ``budget_s``, else the last, with ``fits`` False. The projection:
    runs × seconds a run on the recorded workers ÷ the best workers' gain + the longest notebook."""
    rate, best, nbs = recorded_run_rate(records), best_workers(records), notebooks_seconds(records)
    out: Dict[str, Any] = {"budget_s": budget_s, "workers": best["workers"], "levels": []}
    if rate is None:
        return out | {"level": 0, "fits": None, "why": "no recorded GPU rate of the cut's runs: level 0"}
    per_run = rate["seconds_per_run"] * (1.0 if rate["workers"] == best["workers"] else 1.0 / best["gain"])
    nb_s = nbs["seconds"] if nbs else 0.0
    out.update(seconds_per_run=per_run, notebooks_s=nb_s,
               sources={"run rate": rate["source"], "workers": f"throughput.json: best {best['workers']} a card, "
                        f"{best['gain']:.2f}x one run's images/s", "notebooks": nbs["source"] if nbs else None})
    if nbs and nbs["stopped"]:  # how long those notebooks need is unknown: the fewest runs, the most time left
        return out | {"level": len(LEVELS) - 1, "fits": None,
                      "why": f"the card's last check stopped {', '.join(nbs['stopped'])} at its budget: "
                             "the smallest level"}
    for i, lv in enumerate(LEVELS):
        runs = count(i)
        projected = runs * per_run + nb_s
        out["levels"].append({"level": i, **lv, "runs": runs, "projected_s": round(projected, 1)})
        if projected <= budget_s:
            return out | {"level": i, "fits": True}
    return out | {"level": len(LEVELS) - 1, "fits": False}
