"""Steps/s of the training loop and of its data path alone, under the cpu profile, at one thread.

Issue 34 ("data on the device"): the training split is held as tensors on the training device and
each batch is gathered and augmented there. This script measures ``fit`` of this tree and of a
baseline tree (``--baseline DIR``: a folder holding the ``mlpl_lab`` package before the change;
``--baseline-commit REF``: the package as committed at REF), each run in its own process, the two
trees alternating, so both see the same machine load; the record's ``before`` and ``after`` are
such a pair. Without a baseline (``make benchmark``) the script measures this tree alone and
writes it as ``now`` into the record, keeping the pair. Three runs of the cpu profile's configuration
(4,000 training images, batch 64, small CNN width 16, NHWC, cosine LR; random initialisation, so
no pretraining run is needed; seed 0):

* ``an`` -- AN, the weak view (flip + 2-px shift): the common single-network run;
* ``lac_plc`` -- LAC's +PLC stage (label-query head): the weak and the strong view every step;
* ``data path only`` -- a method whose step reads the batch and does not call the network, so
  its steps/s is the loop's batch building, views and bookkeeping alone.

steps/s = optimiser steps / the epochs' ``train_seconds`` (evaluation excluded); the best of
``--repeats`` repeats, the two trees taking turns to go first. The record (``benchmarks/records/data_path_cpu.json``) keeps each run's
per-epoch loss and val mAP (``repr`` of the floats) and a hash of its training data, and says
whether the two trees' are identical, bit for bit.

Usage (one thread: the machine is shared)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_data_path.py --baseline /tmp/before \
        --baseline-note "what /tmp/before holds"
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_data_path.py        # this tree: "now"
"""
from __future__ import annotations


import argparse
import datetime as _dt
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from records_io import write_record

import torch

ROOT = Path(__file__).resolve().parent.parent
#: the tree whose ``mlpl_lab`` a child process imports (this one unless --baseline)
CODE = Path(os.environ.get("MLPL_LAB_BENCH_CODE", ROOT))
sys.path.insert(0, str(CODE))
os.environ.setdefault("MLPL_LAB_DATA", tempfile.mkdtemp(prefix="mlpl-bench-data-path-"))

from mlpl_lab.methods import Method  # noqa: E402
from mlpl_lab.profiles import get_profile  # noqa: E402
from mlpl_lab.runs.splits_cache import build_splits
from mlpl_lab.runs.validation import config_of
from mlpl_lab.engine.train import fit  # noqa: E402

RECORD = ROOT / "benchmarks" / "records" / "data_path_cpu.json"
#: run name -> (method, model_kwargs overrides)
RUNS = {"an": ("an", {}), "lac_plc": ("lac_plc", {"head": "label_query"}),
        "data path only": (None, {})}


class DataPathOnly(Method):
    """A step that touches every tensor of the batch (so nothing is skipped) but no network; its
    loss is a parameter's sum times zero, so the optimiser steps as usual."""

    name = "data path only"

    def training_step(self, batch, epoch):
        touched = sum(v.float().sum() for v in batch.values() if torch.is_tensor(v))
        param = next(self.net.parameters())
        return param.sum() * 0.0 + touched.detach() * 0.0, {}


def one_run(name: str, epochs: int) -> dict:
    method, extra = RUNS[name]
    P = get_profile("cpu", init="scratch", epochs=epochs)
    spec = P.spec(method or "an", seed=0, probes=[],
                  model_kwargs=dict(P.model_kwargs) | extra)
    splits = build_splits(spec, cache=False)
    cfg = config_of(spec, progress=False, device="cpu")
    r = fit(DataPathOnly() if method is None else method, splits.train, splits.val, splits.test, cfg)
    steps = (len(splits.train) // cfg.batch_size) * epochs
    data = hashlib.sha256(splits.train.images.numpy().tobytes())
    data.update(splits.train.observed.numpy().tobytes())
    return {"steps_per_s": steps / sum(row["train_seconds"] for row in r.history),
            "steps": steps, "loss": [repr(row["loss"]) for row in r.history],
            "val_mAP": [repr(row["val_mAP"]) for row in r.history],
            "train_data_sha256": data.hexdigest()[:16]}


def code_state(tree: Path) -> str:
    def git(*a):
        return subprocess.run(["git", *a], cwd=tree, capture_output=True, text=True).stdout.strip()

    if tree != ROOT:
        return f"baseline tree {tree}"
    dirty = git("status", "--porcelain", "--", "mlpl_lab")
    return git("rev-parse", "--short", "HEAD") + (" + uncommitted changes under mlpl_lab/" if dirty else "")


def child(tree: Path, name: str, epochs: int, threads: int) -> dict:
    """One run in a fresh process importing ``tree``'s mlpl_lab; its result dict."""
    env = dict(os.environ, MLPL_LAB_BENCH_CODE=str(tree), OMP_NUM_THREADS=str(threads),
               MLPL_LAB_PROGRESS="0")
    proc = subprocess.run([sys.executable, __file__, "--child", name, "--epochs", str(epochs),
                           "--threads", str(threads)], env=env, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"{name} on {tree} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", default=None, help="a folder holding mlpl_lab before the change")
    ap.add_argument("--baseline-commit", default=None, help="the baseline: mlpl_lab as committed at REF")
    ap.add_argument("--baseline-note", default="", help="what the baseline tree is (kept in the record)")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--runs", nargs="+", default=list(RUNS), choices=list(RUNS))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=str(RECORD))
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.child:
        print(json.dumps(one_run(args.child, args.epochs)))
        return 0
    if args.baseline_commit:
        args.baseline = tempfile.mkdtemp(prefix="mlpl-bench-baseline-")
        archive = subprocess.run(["git", "archive", args.baseline_commit, "mlpl_lab"], cwd=ROOT,
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", args.baseline], input=archive, check=True)
        args.baseline_note = args.baseline_note or f"mlpl_lab as committed at {args.baseline_commit}"
    trees = ({"after": ROOT, "before": Path(args.baseline).resolve()} if args.baseline
             else {"now": ROOT})
    record = {"what": __doc__.split("\n\n")[0], "profile": "cpu (init scratch)",
              "epochs": args.epochs, "repeats": args.repeats,
              "started": _dt.datetime.now().isoformat(timespec="seconds"),
              "machine": {"python": platform.python_version(), "torch": torch.__version__,
                          "threads": args.threads, "cpus": os.cpu_count(),
                          "load average at start": os.getloadavg()},
              "labels": {label: {"code": code_state(tree), "runs": {}} for label, tree in trees.items()}}
    if args.baseline:
        record["labels"]["before"]["note"] = args.baseline_note
    results = {(label, name): [] for label in trees for name in args.runs}
    for r in range(args.repeats):  # interleaved, so drift and other processes hit every run alike
        for name in args.runs:
            # the trees take turns going first (ABBA), so neither gets the first slot's conditions
            for label, tree in list(trees.items())[::1 if r % 2 == 0 else -1]:
                t0 = time.perf_counter()
                results[label, name].append(child(tree, name, args.epochs, args.threads))
                print(f"{label:>6}  {name:<15} {results[label, name][-1]['steps_per_s']:7.1f} steps/s "
                      f"({time.perf_counter() - t0:.0f} s with data and evaluation)", flush=True)
    for (label, name), rs in results.items():
        best = max(rs, key=lambda r: r["steps_per_s"])
        record["labels"][label]["runs"][name] = best | {
            "steps_per_s_each": [r["steps_per_s"] for r in rs],
            "repeats_identical": all(r["loss"] == rs[0]["loss"] for r in rs)}
    record["machine"]["load average at end"] = os.getloadavg()
    if "before" in trees:
        b, a = record["labels"]["before"]["runs"], record["labels"]["after"]["runs"]
        record["after vs before"] = {
            name: {"steps_per_s_ratio": a[name]["steps_per_s"] / b[name]["steps_per_s"],
                   "same_train_data": a[name]["train_data_sha256"] == b[name]["train_data_sha256"],
                   "loss_identical": a[name]["loss"] == b[name]["loss"],
                   "val_mAP_identical": a[name]["val_mAP"] == b[name]["val_mAP"]}
            for name in args.runs}
        for name, c in record["after vs before"].items():
            print(f"after / before  {name:<15} {c['steps_per_s_ratio']:.3f}x steps/s; same data "
                  f"{c['same_train_data']}, loss identical {c['loss_identical']}, val mAP identical "
                  f"{c['val_mAP_identical']}")
    # without the baseline: keep the before/after pair the record holds (measured together)
    write_record(args.out, record, now={"started": record["started"], "machine": record["machine"], "epochs": args.epochs,
            "repeats": args.repeats} if not args.baseline else None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
