"""torch.profiler over training steps of LAC, PU-MLC + LgConv, CLS (and AN for scale), cpu profile, one thread.

Each family's step is the loop's (:mod:`method_steps`: the chapters' specs under the cpu profile
from random weights, seed 0, batch 64). ``--warmup`` steps run first (they fill LAC's memory queue:
about 70 pairs a step against K = 512), then ``--steps`` steps under ``torch.profiler`` (CPU
activity, shapes off). The record (``benchmarks/records/profile_steps_cpu.json``) keeps, per
family: the mean wall time of a profiled step and of the same steps unprofiled, and the top
operators by self CPU time (name, calls per step, self ms per step, share of the step's self
time), plus the machine's load.

Usage (one thread: the machine is shared)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/profile_steps.py
"""
from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import subprocess
import time


from records_io import write_record

import torch
from torch.profiler import ProfilerActivity, profile

import method_steps as M

RECORD = M.ROOT / "benchmarks" / "records" / "profile_steps_cpu.json"


def profile_family(family: str, warmup: int, steps: int, top: int) -> dict:
    h = M.build(family, n_batches=warmup + 2 * steps)
    batches = iter(h.batches)
    for _ in range(warmup):
        h.step(next(batches))
    timed = [next(batches) for _ in range(steps)]
    t0 = time.perf_counter()
    for b in timed:
        h.step(b)
    plain = (time.perf_counter() - t0) / steps
    prof_batches = [next(batches) for _ in range(steps)]
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        t0 = time.perf_counter()
        for b in prof_batches:
            h.step(b)
        profiled = (time.perf_counter() - t0) / steps
    events = [e for e in prof.key_averages() if e.key != "ProfilerStep*"]
    total_self = sum(e.self_cpu_time_total for e in events)  # microseconds over all steps
    events.sort(key=lambda e: -e.self_cpu_time_total)
    ops = [{"op": e.key, "calls_per_step": e.count / steps,
            "self_ms_per_step": round(e.self_cpu_time_total / 1e3 / steps, 3),
            "share_of_self_time": round(e.self_cpu_time_total / total_self, 4)} for e in events[:top]]
    return {"spec_method": h.spec.method, "model_kwargs": h.spec.train.get("model_kwargs"),
            "views": list(h.method.views), "batch_size": len(timed[0]["image"]),
            "step_ms_unprofiled": round(plain * 1e3, 2), "step_ms_profiled": round(profiled * 1e3, 2),
            "self_ms_per_step_all_ops": round(total_self / 1e3 / steps, 2),
            "operators_per_step": round(sum(e.count for e in events) / steps, 1),
            "top_ops": ops}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--families", nargs="+", default=list(M.FAMILIES), choices=list(M.FAMILIES))
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=str(RECORD))
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    def git(*a):
        return subprocess.run(["git", *a], cwd=M.ROOT, capture_output=True, text=True).stdout.strip()

    dirty = git("status", "--porcelain", "--", "mlpl_lab")
    record = {"what": __doc__.split("\n\n")[0], "profile": "cpu (init scratch)",
              "code": git("rev-parse", "--short", "HEAD") + (" + uncommitted changes under mlpl_lab/" if dirty else ""),
              "warmup_steps": args.warmup, "profiled_steps": args.steps,
              "started": _dt.datetime.now().isoformat(timespec="seconds"),
              "machine": {"python": platform.python_version(), "torch": torch.__version__,
                          "threads": args.threads, "cpus": os.cpu_count(),
                          "load average at start": os.getloadavg()},
              "families": {}}
    for family in args.families:
        r = profile_family(family, args.warmup, args.steps, args.top)
        record["families"][family] = r
        print(f"{family:<16} {r['step_ms_unprofiled']:8.1f} ms/step ({r['operators_per_step']:.0f} ops/step)")
        for op in r["top_ops"][:10]:
            print(f"    {op['op']:<40} {op['calls_per_step']:7.1f} calls {op['self_ms_per_step']:8.2f} ms "
                  f"{100 * op['share_of_self_time']:5.1f} %")
    record["machine"]["load average at end"] = os.getloadavg()
    write_record(args.out, record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
