"""check.sh step 6: every step's exit status and seconds (steps.tsv), the pytest counts
(tests_gpu.xml) and the figures of the steps' JSON records, gathered into ``summary.json`` and a
one-screen ``summary.txt`` in the records folder. A step that failed or ran out of time shows as
such; its figures are absent, never filled in."""
from __future__ import annotations

import argparse
import csv
import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

from _common import MODE, OUT, environment


#: check.sh's steps in the order it runs them
ORDER = ["install", "imports", "tests_gpu", "throughput", "notebooks", "train_run", "summary"]


def load(name):
    p = OUT / f"{name}.json"
    return json.loads(p.read_text()) if p.exists() else None


def pytest_counts(p):
    if p is None or not p.exists():
        return None
    root = ET.parse(p).getroot()
    suites = [root] if root.tag == "testsuite" else list(root)
    counts = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
    counts["passed"] = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    return counts


def fmt(v, spec=",.0f"):
    return "-" if v is None else format(v, spec)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wall", type=float, help="seconds since check.sh started")
    ap.add_argument("--junit", type=Path, default=None, help="the tests/gpu step's JUnit XML")
    args = ap.parse_args()
    with open(OUT / "steps.tsv") as f:
        steps = list(csv.DictReader(f, delimiter="\t"))
    steps.sort(key=lambda s: ORDER.index(s["step"]) if s["step"] in ORDER else len(ORDER))  # a rerun's too
    tests, imp, thr, run, nb = (pytest_counts(args.junit), load("imports"), load("throughput"), load("train_run"),
                                load("notebooks"))
    rerun = os.environ.get("GPU_CHECK_STEPS", "").split()
    if tests is None and rerun and "tests_gpu" not in rerun:
        tests = (load("summary") or {}).get("tests_gpu")  # a rerun of other steps: the former check's counts
    env = environment()
    summary = {"mode": MODE, "wall_seconds_before_summary": args.wall, "rerun_steps": rerun or None,
               "steps": steps, "tests_gpu": tests,
               "imports_failed": None if imp is None else sorted(imp["failed"]),
               "throughput": None if thr is None else {k: thr.get(k) for k in (
                   "cpu_rehearsal", "fit_images_per_s", "fit_tflops", "fit_share_of_peak", "bf16_dense_peak_tflops",
                   "autocast_dtype", "best", "not_adopted")} | {"levers": [
                       {k: r.get(k) for k in ("lever", "status", "images_per_s_total", "images_per_s_per_run",
                                              "total_over_one_run")} for r in thr.get("levers", [])]},
               "train_run": None if run is None else {k: run.get(k) for k in (
                   "profile", "wall_seconds", "test_mAP", "best_epoch", "converged")} | {
                   "pretraining_seconds": (run.get("pretraining") or {}).get("wall_seconds"),
                   "an_seconds": run["an"]["wall_seconds"]},
               "notebooks": None if nb is None else {k: nb.get(k) for k in (
                   "profile", "mode", "completed", "wall_seconds", "planned_training")} | {"notebooks": [
                       {k: e.get(k) for k in ("notebook", "completed", "status", "seconds", "error")}
                       for e in nb["notebooks"]]},
               "environment": env}
    (OUT / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    lines = [f"GPU check ({'REHEARSAL on the CPU, CPU sizes' if MODE == 'rehearse' else 'gpu'}): "
             f"{env['device']}, Python {env['python']}, torch {env['torch']}, commit {env['commit']}",
             "steps: " + "  ".join(f"{s['step']} {'ok' if s['exit'] == '0' else 'TIMEOUT' if s['exit'] in ('124', '137') else 'FAIL(' + s['exit'] + ')'} {s['seconds']}s"
                                  for s in steps)]
    if rerun:
        lines.append(f"rerun of {', '.join(rerun)} ({env.get('date', '?')}) over a former check's records: the other "
                     "steps' figures are that check's (each record's own environment says when)")
    if args.wall is not None:
        lines.append(f"wall before the summary: {args.wall:.0f} s")
    if imp is not None:
        lines.append(f"imports: {len(imp['distributions'])} distributions, {imp['lab_modules_imported']} lab modules; "
                     f"failed: {', '.join(sorted(imp['failed'])) or 'none'}")
    if tests is not None:
        lines.append(f"tests/gpu: {tests['passed']} passed, {tests['failures'] + tests['errors']} failed, "
                     f"{tests['skipped']} skipped")
    if thr is not None:
        share = thr.get("fit_share_of_peak")
        lines.append(f"step ({thr['profile']}, {thr['model']}, {thr['image_size']} px, batch {thr['batch_size']}, "
                     f"{thr['autocast_dtype']}, {'NHWC' if thr.get('channels_last') else 'NCHW'}): fit "
                     f"{fmt(thr['fit_images_per_s'])} images/s, {thr['fit_tflops']:.2f} TFLOP/s"
                     + (f" = {share:.1%} of the {thr['bf16_dense_peak_tflops']:.0f} TFLOP/s dense bf16 peak" if share else "")
                     + (" (CPU REHEARSAL: not a GPU rate)" if thr.get("cpu_rehearsal") else ""))
        for r in thr.get("levers", []):
            lines.append(f"  {r['lever']}: " + (f"{fmt(r['images_per_s_total'])} images/s in total, "
                                                f"{fmt(r['images_per_s_per_run_mean'])} per run, "
                                                f"{r.get('total_over_one_run', float('nan')):.2f}x one run"
                                                if r.get("status") == "ok" else r.get("status", "?")))
        if thr.get("best"):
            b = thr["best"]
            lines.append(f"  best the series uses: {b['workers_per_device']} workers per device, "
                         f"{fmt(b['images_per_s_total'])} images/s in total ({b['total_over_one_run']:.2f}x one run)")
    if run is not None:
        pre = run.get("pretraining") or {}
        lines.append(f"one {run['profile']} run end to end: {run['wall_seconds']:.0f} s (pretraining "
                     f"{fmt(pre.get('wall_seconds'), '.0f')} s, AN {run['an']['wall_seconds']:.0f} s, "
                     f"{run['an']['epochs']} epochs); test mAP {run['test_mAP']:.2f} at epoch {run['best_epoch']}")
    if nb is not None:
        done = sum(e["completed"] for e in nb["notebooks"])
        pt = nb.get("planned_training")
        lines.append(f"notebooks under {nb['profile']} ({nb['mode']} sizes): {done} of {len(nb['notebooks'])} "
                     f"completed in {nb['wall_seconds']:.0f} s" + (
                         f" (planned runs first: {pt.get('runs_stored', '-')} runs on {pt.get('workers', '-')} "
                         f"workers, {fmt(pt.get('seconds'))} s)" if pt else " (each notebook training its own runs)"))
        for e in nb["notebooks"]:
            lines.append(f"  {e['notebook']}: {e['status']}" + (f" in {e['seconds']:.0f} s" if e.get("seconds") else "")
                         + (f" — {e['error'][:160]}" if e.get("error") else ""))
        apart = nb.get("executed_apart")
        if apart:  # a rehearsal's second process (its own store) for notebooks the series did not reach
            lines.append("  apart: " + apart["what"])
            for e in apart["notebooks"]:
                lines.append(f"    {e['notebook']}: {e['status']}" + (f" in {e['seconds']:.0f} s" if e.get("seconds") else "")
                             + (f" — {e['error'][:160]}" if e.get("error") else ""))
    text = "\n".join(lines) + "\n"
    (OUT / "summary.txt").write_text(text)
    print(f"wrote {OUT / 'summary.json'}")


if __name__ == "__main__":
    main()
