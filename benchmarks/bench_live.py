"""CPU time of each chapter's live exercise (mlpl_lab.protocol.live): the cut-down run a student
trains in class, on a 2-core laptop with 2 torch threads, in at most 3 minutes.

``python benchmarks/bench_live.py [--profile cpu] [--chapters 01 02 ...] [--threads 2]``

One process, in a temporary store (``MLPL_LAB_DATA``): the profile's shipped course pack is
imported first, as a student's notebook does (it carries the pretraining run the live runs start
from; without a pack that run is trained and its time recorded apart), then each chapter's live
run the way the notebook trains it (:func:`mlpl_lab.protocol.live.train`), each starting with no
scene set in memory or on disk, so the figure includes generating the run's scenes. Recorded per
chapter: the live run's key, wall seconds of the call, the run's own training seconds, its test
mAP, ``torch.get_num_threads()`` (2 by default: a class laptop's cores, both busy with this run),
the process's CPU seconds and the cores it obtained (CPU over wall seconds), and the load average
before and after (the machine may be shared: a figure taken while other work held cores
overstates a student's time; the notebooks print these conditions with the figure).
Writes ``benchmarks/records/live_exercises_<profile>.json``, keeping the record's earlier
measurements of the same live runs at the same threads under ``earlier`` (:func:`merge`: the
figure of a shared machine next to the quiet one's); prints a line per chapter and ``OVER`` for one
above the 180 s limit (tests/test_live_exercises.py checks the cpu record).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
LIMIT_S = 180.0


def _load():
    return [round(x, 2) for x in os.getloadavg()]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--chapters", nargs="*", default=None)
    ap.add_argument("--threads", type=int, default=2, help="torch threads (a student's 2 cores)")
    ap.add_argument("--out", default=None, help="default benchmarks/records/live_exercises_<profile>.json")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="bench_live_"))
    os.environ["MLPL_LAB_DATA"] = str(tmp)
    os.environ.setdefault("MLPL_LAB_PROGRESS", "0")
    import torch

    from mlpl_lab.runs import ensure, splits_cache, store
    from mlpl_lab.protocol import live
    from mlpl_lab.core.paths import cache_dir
    from mlpl_lab.profiles import get_profile

    torch.set_num_threads(args.threads)
    chapters = args.chapters or list(live.chapters())
    P = get_profile(args.profile)
    record = {"what": "live exercises (mlpl_lab.protocol.live): wall seconds of live.train per chapter, "
                      "scene generation included, the pretraining run already stored (the course pack)",
              "profile": P.name, "date": _dt.datetime.now().isoformat(timespec="seconds"),
              "limit_s": LIMIT_S,
              "machine": {"python": platform.python_version(), "torch": torch.__version__,
                          "cpus": os.cpu_count(), "threads": torch.get_num_threads(),
                          "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")},
              "chapters": {}}
    try:
        pre = live.live_exercise(chapters[0], P)[0]
        pre = next(s.backbone_from for s in live.stages(pre) if s.backbone_from is not None)
        from mlpl_lab.runs.shipped import import_missing

        t0, load0 = time.perf_counter(), _load()
        served = import_missing(P)  # what a student's notebook does first
        if served is not None:
            print(served["line"], flush=True)
        stored = store.RunStore().get(pre) is not None
        ensure.ensure([pre], quiet=True)
        record["pretraining"] = {"spec": pre.describe(), "seconds": round(time.perf_counter() - t0, 1),
                                 "from": "the shipped course pack" if stored else "trained here",
                                 "load_before": load0, "load_after": _load()}
        print(f"pretraining run {pre.describe()}: {record['pretraining']['from']}, "
              f"{record['pretraining']['seconds']} s (not counted)", flush=True)
        for c in chapters:
            splits_cache.clear_caches()
            shutil.rmtree(cache_dir(), ignore_errors=True)
            spec, conv = live.live_exercise(c, P)
            load0, threads = _load(), torch.get_num_threads()
            t0, c0 = time.perf_counter(), time.process_time()
            run = live.train(c, P)
            seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
            stage_runs = [store.RunStore().get(s) for s in live.stages(spec)]
            record["chapters"][c] = {
                "method": live.key_method(c), "spec": spec.describe(), "key": spec.key,
                "converged_key": conv.key,
                "n_train": spec.data["n_train"], "epochs": [s.train["epochs"] for s in live.stages(spec)],
                "converged_n_train": conv.data["n_train"],
                "converged_epochs": [s.train["epochs"] for s in live.stages(conv)],
                "seconds": round(seconds, 1),
                # CPU seconds of this process over the wall seconds: the cores the run got (at most
                # its threads); well under the threads means other work shared the machine
                "cpu_seconds": round(cpu, 1), "cores_obtained": round(cpu / seconds, 2),
                "train_seconds": round(sum(r.summary["seconds"] for r in stage_runs), 1),
                "test_mAP": round(float(run.best["test_mAP"]), 2),
                "threads": threads, "load_before": load0, "load_after": _load(),
                "date": _dt.datetime.now().isoformat(timespec="seconds")}
            r = record["chapters"][c]
            print(f"{c} {r['method']:<18} {r['n_train']} images, epochs {r['epochs']}: {r['seconds']:6.1f} s "
                  f"(training {r['train_seconds']} s, {r['cores_obtained']} cores obtained), test mAP "
                  f"{r['test_mAP']}, {threads} threads, load "
                  f"{load0[0]} -> {r['load_after'][0]}" + ("  OVER" if seconds > LIMIT_S else ""), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = Path(args.out) if args.out else ROOT / "benchmarks" / "records" / f"live_exercises_{P.name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists():
        record = merge(json.loads(out.read_text()), record, keep_other_chapters=bool(args.chapters))
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


#: the fields of one measurement of a live run (the rest of its entry describes the run)
EARLIER_FIELDS = ("seconds", "train_seconds", "cpu_seconds", "cores_obtained", "threads", "load_before",
                  "load_after", "date")


def merge(old: dict, new: dict, keep_other_chapters: bool = False) -> dict:
    """``new`` with what ``old`` measured of the same live runs (same key, same thread count):
    of all these measurements the one whose run obtained the most cores (the least shared
    machine) is the chapter's figure, the others stay under ``earlier`` with their conditions,
    so a figure taken on a shared machine is kept next to the quiet one, not lost or shown as
    the rule; ``keep_other_chapters``: chapters ``new`` did not measure keep ``old``'s entry."""
    chapters = dict(old.get("chapters", {})) if keep_other_chapters else {}
    for c, r in new["chapters"].items():
        was = old.get("chapters", {}).get(c)
        runs = [{k: r[k] for k in EARLIER_FIELDS if k in r}]
        if was is not None and was.get("key") == r["key"]:
            runs += [e for e in was.get("earlier", []) if e.get("threads") == r["threads"]]
            if was.get("threads") == r["threads"] and "cpu_seconds" in was:
                runs.append({k: was[k] for k in EARLIER_FIELDS if k in was})
        best = max(range(len(runs)), key=lambda i: (runs[i].get("cores_obtained", 0.0), -i))
        entry = {k: v for k, v in r.items() if k != "earlier"} | runs[best]
        earlier = [m for i, m in enumerate(runs) if i != best]
        chapters[c] = entry | ({"earlier": earlier} if earlier else {})
    return new | {"chapters": {c: chapters[c] for c in sorted(chapters)}}


if __name__ == "__main__":
    raise SystemExit(main())
