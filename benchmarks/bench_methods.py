"""Steps/s of the training step per method family, and what evaluation and the probes cost per epoch, cpu profile, one thread.

Issue 51 ("profile, then cut, the slowest runs"). The families are those of
``benchmarks/method_steps.py``: AN, LAC (stage 2 with the queue, from a stage 1 set up from the
same seed), PU-MLC + LgConv, CLS -- the chapters' specs under the cpu profile from random weights,
seed 0.

**Steps/s** (the record's ``steps_per_s``): the loop's step as ``fit`` takes it (the method's
``training_step``, ``backward``, the optimisers, ``on_step_end``, the schedules; evaluation
excluded), after 10 warm-up steps. Each tree runs in one long-lived process (``--serve``); the
parent asks the trees in turn, family by family, for ``--steps`` steps at a time (ABBA: the trees
take turns going first), ``--rounds`` times, and keeps each round's mean step time; steps/s = 1 /
the best round's (best of N: the rounds a shared machine slowed down are dropped), the median
kept beside it. Fine-grained interleaving is what makes a before/after pair comparable on a
machine that other work loads unevenly.

**Evaluation** (one ``fit`` of ``--epochs`` epochs per tree and family, in its own process): after
the run the child times, on the trained method, one validation pass (``_evaluate`` on the 1,000
validation images, extra heads such as LAC's EMA included), the same pass without the extra heads,
and one pass of the profile's probes (``separation`` on the first 512 training images), the best of
two each; ``eval_share`` = (val + probes) / (train epoch + val + probes). The fit's per-epoch losses
and val mAP (``repr`` of the floats) say whether the two trees compute the same numbers.

Before and after: ``--baseline-commit REF`` measures ``mlpl_lab`` as committed at REF (``git
archive``) against this tree; the record keeps every round, the load average at start and end, and
the comparison. Without a baseline the tree is measured alone as ``now`` (what ``make benchmark``
does), keeping the recorded pair.

Usage (one thread: the machine is shared)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_methods.py --baseline-commit d8cfb61
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_methods.py          # this tree: "now"
"""
from __future__ import annotations


import argparse
import datetime as _dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from records_io import write_record

import torch

import method_steps as M

RECORD = M.ROOT / "benchmarks" / "records" / "methods_cpu.json"


def _best_time(fn, n: int = 2) -> float:
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def one_run(family: str, epochs: int) -> dict:
    from mlpl_lab.engine import train as T
    from mlpl_lab.methods import build_method
    from mlpl_lab.runs.splits_cache import build_splits
    from mlpl_lab.runs.validation import config_of

    spec = M.spec_of(family, epochs=epochs)
    splits = build_splits(spec)
    cfg = config_of(spec, progress=False, device="cpu")
    init_from = None
    if spec.init_from is not None:  # a stage 2 starts from a stage 1 (random weights, same seed)
        init_from = T.prepare(build_method(spec.init_from.method, **spec.init_from.method_params),
                              splits.train, config_of(spec.init_from, progress=False, device="cpu"))
    r = T.fit(build_method(spec.method, **spec.method_params), splits.train, splits.val, splits.test,
              cfg, init_from=init_from)
    steps = (len(splits.train) // cfg.batch_size) * epochs
    train_s = sum(row["train_seconds"] for row in r.history)
    device = torch.device("cpu")
    observed = splits.train.observed
    probe = T._prober(r.method, splits.train, observed, splits.train.labels, cfg, device)
    val_s = _best_time(lambda: T._evaluate(r.method, splits.val, device, cfg.eval_batch_size, "val"))
    main_s = _best_time(lambda: T.predict_dataset(r.method, splits.val, device, cfg.eval_batch_size))
    probe_s = _best_time(probe) if probe is not None else 0.0
    epoch_s = train_s / epochs
    return {"fit_steps_per_s": steps / train_s, "steps": steps, "train_seconds_per_epoch": epoch_s,
            "val_seconds": val_s, "val_main_only_seconds": main_s, "probe_seconds": probe_s, "probes": list(cfg.probes),
            "probe_size": cfg.probe_size, "n_val": len(splits.val),
            "eval_share": (val_s + probe_s) / (epoch_s + val_s + probe_s),
            "loss": [repr(row["loss"]) for row in r.history],
            "val_mAP": [repr(row["val_mAP"]) for row in r.history]}


def code_state(tree: Path) -> str:
    def git(*a):
        return subprocess.run(["git", *a], cwd=tree, capture_output=True, text=True).stdout.strip()

    if tree != M.ROOT:
        return f"baseline tree {tree}"
    dirty = git("status", "--porcelain", "--", "mlpl_lab")
    return git("rev-parse", "--short", "HEAD") + (" + uncommitted changes under mlpl_lab/" if dirty else "")


def _env(tree: Path, threads: int) -> dict:
    return dict(os.environ, MLPL_LAB_BENCH_CODE=str(tree), OMP_NUM_THREADS=str(threads),
                MLPL_LAB_PROGRESS="0")


def child(tree: Path, family: str, epochs: int, threads: int) -> dict:
    """One fit of ``family`` in a fresh process importing ``tree``'s mlpl_lab; its result dict."""
    proc = subprocess.run([sys.executable, __file__, "--child", family, "--epochs", str(epochs),
                           "--threads", str(threads)], env=_env(tree, threads), capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"{family} on {tree} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def serve() -> int:
    """Answer "FAMILY<TAB>STEPS" lines with the mean seconds of that many steps (JSON)."""
    harnesses = {}
    for line in sys.stdin:
        family, k = line.rstrip("\n").split("\t")
        if family not in harnesses:
            h = M.build(family, n_batches=16)
            for i in range(10):  # warm-up (fills LAC's queue)
                h.step(h.batches[i % len(h.batches)])
            harnesses[family] = [h, 10]
        h, i = harnesses[family]
        t0 = time.perf_counter()
        for j in range(int(k)):
            h.step(h.batches[(i + j) % len(h.batches)])
        harnesses[family][1] = i + int(k)
        print(json.dumps({"mean_step_s": (time.perf_counter() - t0) / int(k)}), flush=True)
    return 0


class Server:
    def __init__(self, tree: Path, threads: int):
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve", "--threads", str(threads)],
                                     env=_env(tree, threads), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def steps(self, family: str, k: int) -> float:
        self.proc.stdin.write(f"{family}\t{k}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"the step server stopped (exit {self.proc.wait()})")
        return json.loads(line)["mean_step_s"]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline-commit", default=None, help="the baseline: mlpl_lab as committed at REF")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=12, help="interleaved rounds of --steps steps per tree and family")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--families", nargs="+", default=list(M.FAMILIES), choices=list(M.FAMILIES))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=str(RECORD))
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.child:
        print(json.dumps(one_run(args.child, args.epochs)))
        return 0
    if args.serve:
        return serve()
    trees = {"now": M.ROOT}
    if args.baseline_commit:
        base = Path(tempfile.mkdtemp(prefix="mlpl-bench-methods-baseline-"))
        archive = subprocess.run(["git", "archive", args.baseline_commit, "mlpl_lab"], cwd=M.ROOT,
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        trees = {"after": M.ROOT, "before": base}
    record = {"what": __doc__.split("\n\n")[0], "profile": "cpu (init scratch)",
              "fit_epochs": args.epochs, "rounds": args.rounds, "steps_per_round": args.steps,
              "started": _dt.datetime.now().isoformat(timespec="seconds"),
              "machine": {"python": platform.python_version(), "torch": torch.__version__,
                          "threads": args.threads, "cpus": os.cpu_count(),
                          "load average at start": os.getloadavg()},
              "labels": {label: {"code": code_state(tree), "families": {}} for label, tree in trees.items()}}
    if args.baseline_commit:
        record["labels"]["before"]["code"] = f"mlpl_lab as committed at {args.baseline_commit}"
    servers = {label: Server(tree, args.threads) for label, tree in trees.items()}
    rounds = {(label, f): [] for label in trees for f in args.families}
    try:
        for r in range(args.rounds):  # interleaved: drift and other work hit both trees alike
            for f in args.families:
                for label in list(trees)[::1 if r % 2 == 0 else -1]:
                    rounds[label, f].append(servers[label].steps(f, args.steps))
            print(f"round {r + 1}/{args.rounds}: " + "; ".join(
                f"{label} {f} {1 / rounds[label, f][-1]:.2f}" for f in args.families for label in trees),
                flush=True)
    finally:
        for server in servers.values():
            server.close()
    fits = {(label, f): child(tree, f, args.epochs, args.threads)
            for f in args.families for label, tree in trees.items()}
    for (label, f), rs in rounds.items():
        x = fits[label, f]
        record["labels"][label]["families"][f] = x | {
            "steps_per_s": 1 / min(rs), "steps_per_s_median": 1 / statistics.median(rs),
            "steps_per_s_each_round": [1 / t for t in rs],
            "val_seconds_best": x["val_seconds"], "probe_seconds_best": x["probe_seconds"]}
        print(f"{label:>6}  {f:<16} {1 / min(rs):6.2f} steps/s (median {1 / statistics.median(rs):.2f}); "
              f"val {x['val_seconds']:.2f} s ({x['val_main_only_seconds']:.2f} s without extra heads), "
              f"probes {x['probe_seconds']:.2f} s per epoch ({100 * x['eval_share']:.1f} % of an epoch)")
    record["machine"]["load average at end"] = os.getloadavg()
    if "before" in trees:
        b, a = record["labels"]["before"]["families"], record["labels"]["after"]["families"]
        record["after vs before"] = {
            f: {"steps_per_s_ratio": a[f]["steps_per_s"] / b[f]["steps_per_s"],
                "steps_per_s_median_ratio": a[f]["steps_per_s_median"] / b[f]["steps_per_s_median"],
                "loss_identical": a[f]["loss"] == b[f]["loss"],
                "val_mAP_identical": a[f]["val_mAP"] == b[f]["val_mAP"]} for f in args.families}
        for f, c in record["after vs before"].items():
            print(f"after / before  {f:<16} {c['steps_per_s_ratio']:.3f}x steps/s (median "
                  f"{c['steps_per_s_median_ratio']:.3f}x); loss identical "
                  f"{c['loss_identical']}, val mAP identical {c['val_mAP_identical']}")
    # without the baseline: keep the before/after pair the record holds (measured together)
    write_record(args.out, record, now={"started": record["started"], "machine": record["machine"], "fit_epochs": args.epochs,
            "rounds": args.rounds, "steps_per_round": args.steps} if "before" not in trees else None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
