"""The runs of 07's cells that lack the test score at the epoch the observed validation labels
pick, moved aside so the series' report trains them again (issue 52, model selection without clean
labels).

The cpu profile scores the test set once, at the end. Until the engine also kept the test score
at the observed-validation epoch (``summary.json``'s ``selected``), a run knew it only where that
epoch was the clean-best one too, so 07 cannot compare the two criteria on the series' runs.
Training does not depend on the new record (the golden records are unchanged), so a run made again
has the same key and, on this machine kind, the same history and weights: ``--check`` compares
every re-made run with the one it replaced, bitwise (its measured seconds and memory aside).

    python benchmarks/series_cpu/rescore.py            # move those not yet made again to $STORE/superseded
    python benchmarks/series_cpu/rescore.py --dry-run  # count them only

The list is computed once, on the whole store, into ``rescore.txt`` (197 runs on 2026-11-28).
    python benchmarks/series_cpu/rescore.py --check    # re-made runs against the ones they replaced
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
#: the runs to make again, listed once from the whole store (a machine may lack some of them)
KEYS = HERE / "rescore.txt"
sys.path.insert(0, str(ROOT))


def cell_runs(store_root: Path):
    """Every stored run of 07's cells under the cpu profile (the report's own design), reference
    rows left out: ``[(regime, label, StoredRun)]``. Trains nothing: the caller checks that the
    design's runs are all stored."""
    os.environ.update(MLPL_LAB_DATA=str(store_root.parent), MLPL_LAB_SHIPPED_PACK="off", MLPL_LAB_WORKERS="1")
    from mlpl_lab.chapters import benchmark as chapter
    from mlpl_lab.runs import ensure

    def refuse(*_, **__):
        raise RuntimeError("a run of 07 is missing from the store: rescore.py trains nothing (run the "
                           "series' report, resume.sh, first)")

    ensure.fit = refuse

    design = chapter.design("cpu")
    results = chapter.results(design, chapter.run(design)).results
    return [(regime, label, run) for regime, methods in results.items() for label, runs in methods.items()
            if label not in chapter.REFERENCE_ROWS for run in runs]


def lacking(store_root: Path):
    from mlpl_lab.analysis.selection import unscored

    return [(regime, label, run) for regime, label, run in cell_runs(store_root) if unscored([run])]


#: what a run measures about the machine rather than computes: left out of the comparison
MEASURED = ("seconds", "train_seconds", "peak_memory_mib")


def numbers(history):
    """A run's history without the wall times and memory it measured."""
    return {"initial": history["initial"],
            "history": [{k: v for k, v in row.items() if k not in MEASURED} for row in history["history"]]}


def check(store_root: Path, aside: Path) -> int:
    """Each re-made run against the run it replaced: the same history (every number bitwise, the
    measured times and memory left out) and the same best weights (sha256); the re-made one
    carries the observed epoch's test score."""
    same = differ = waiting = 0
    for old in sorted(p for p in aside.iterdir() if p.is_dir()):
        new = store_root / old.name
        if not (new / "summary.json").exists():
            waiting += 1
            continue
        a, b = (numbers(json.loads((d / "history.json").read_text())) for d in (old, new))
        sa, sb = (json.loads((d / "summary.json").read_text()) for d in (old, new))
        ok = a == b and sa["weights_sha256"] == sb["weights_sha256"] and "selected" in sb
        same += ok
        differ += not ok
        if not ok:
            print(f"differs: {old.name} ({sb.get('describe')})")
    print(f"re-made runs: {same} equal to the runs they replaced (history bitwise, weights sha256) "
          f"and carrying the observed epoch's test score; {differ} differ; {waiting} not re-made yet")
    return 1 if differ else 0


def has_record(run_dir: Path) -> bool:
    return "selected" in json.loads((run_dir / "summary.json").read_text())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", type=Path, default=Path(os.environ.get(
        "STORE", ROOT / "data" / "series_cpu")) / "runs")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    aside = args.store.parent / "superseded"
    if args.check:
        return check(args.store, aside)
    if not KEYS.exists():  # once, on the whole store: which runs 07's cells read that lack the record
        runs = lacking(args.store)
        hours = sum(float(r.summary.get("seconds", 0.0)) for _, _, r in runs) / 3600
        print(f"{len(runs)} runs of 07's cells lack the test score at the observed-validation epoch "
              f"({hours:.1f} h of single-thread run time)")
        if args.dry_run:
            return 0
        KEYS.write_text("".join(f"{r.path.name}\n" for _, _, r in runs))
    # every machine, every resume: those of them still without it go aside (a part or $KEPT may
    # have brought an old copy back); the report makes them again
    keys = KEYS.read_text().split()
    todo = [args.store / k for k in keys if (args.store / k / "summary.json").exists()
            and not has_record(args.store / k)]
    print(f"{sum((args.store / k / 'summary.json').exists() and has_record(args.store / k) for k in keys)} "
          f"of the {len(keys)} runs in {KEYS.name} are made again; {len(todo)} stored ones wait")
    if args.dry_run:
        return 0
    aside.mkdir(exist_ok=True)
    for path in todo:
        target = aside / path.name
        if target.exists():  # moved aside before: this copy came back from a part or $KEPT
            shutil.rmtree(path)
        else:
            path.rename(target)
    print(f"moved {len(todo)} to {aside}: the series' report makes them again")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
