"""Does bfloat16 autocast on the CPU change what the cpu profile's runs measure? (issue 51)

The measurement: chapter 02's main rows of AN and GR under the cpu profile (single positive, the
fresh seeds, GR's setting as the shipped pack chose it), once in float32 — the shipped pack's
runs, read, not retrained — and once with bfloat16 autocast in the training step
(``MLPL_LAB_CPU_PRECISION=bf16``: the same specs and run keys, trained into a separate store,
their pretraining run included). The rule that decides is :data:`RULE`, written into the record
before the bfloat16 runs were read.

    python benchmarks/bf16_decision.py train            # the bf16 runs: 2 worker processes x 1 thread
    python benchmarks/bf16_decision.py speed            # fp32 vs bf16 steps, interleaved, 1 thread
    python benchmarks/bf16_decision.py record           # compare, decide, write the record
    python benchmarks/bf16_decision.py train --methods GR --fp32-backbone --store DIR   # then:
    python benchmarks/bf16_decision.py supplement --methods GR --store DIR   # bf16 fine-tuning only

``MLPL_LAB_DATA`` names the data folder whose store gets the shipped cpu pack (the fp32 runs);
the bf16 runs go to ``--store`` (default ``$MLPL_LAB_DATA/bf16_runs``). The record:
``benchmarks/records/bf16_decision_cpu.json`` (``--out``).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OUT = ROOT / "benchmarks" / "records" / "bf16_decision_cpu.json"
METHODS = ("AN", "GR")

#: the decision rule, fixed before the bfloat16 runs were read (the float32 runs are the shipped
#: pack's, so their values were known)
RULE = {
    "difference": "per fresh seed s: d_s = test mAP (bf16) - test mAP (fp32), each at its run's best clean-val epoch",
    "interval": "95 % t-interval of the mean paired difference: mean(d) +/- t(0.975, n-1) * sd(d) / sqrt(n)",
    "seed_noise": "sigma = sd over the fresh seeds of the fp32 test mAP of the same method",
    "inside_seed_noise": ("the interval contains 0 AND its half-width <= 2 * sigma (the measurement "
                          "could have seen a shift of two seed-noise sd) AND |mean(d)| <= sigma"),
    "decision": "bf16 may become the cpu profile's training precision iff AN and GR are both inside seed noise",
    "why_2_sigma": ("with 5 seeds and differences as noisy as two independent runs (sd(d) ~ sqrt(2) sigma), "
                    "the expected half-width is t(0.975,4) * sqrt(2/5) sigma ~ 1.76 sigma: a bound of 1 sigma "
                    "would refuse bf16 by construction, 2 sigma refuses an interval wider than the "
                    "measurement can be"),
}


def _store_paths(args):
    from mlpl_lab.core import paths  # noqa: F401  (MLPL_LAB_DATA is read by RunStore)
    from mlpl_lab.runs.store import RunStore

    fp32 = RunStore()
    bf16 = RunStore(Path(args.store) if args.store else fp32.root.parent / "bf16_runs")
    return fp32, bf16


def fp32_runs(fp32_store):
    """``{label: [stored fp32 run per fresh seed]}``: chapter 02's main rows of AN and GR, read
    from the shipped pack (imported into the store when it lacks them)."""
    from mlpl_lab.chapters import gr
    from mlpl_lab.protocol.asked import ensure_asked
    from mlpl_lab.runs import shipped
    from mlpl_lab.runs.ensure import read_only

    shipped.import_missing("cpu", fp32_store)
    with read_only("bf16_decision reads the shipped fp32 runs"):
        d = gr.design("cpu")
        R = gr.results(d, ensure_asked(gr.specs, d, label="02"))
    return {label: list(R.main[label]) for label in METHODS}


def cmd_train(args) -> int:
    os.environ["MLPL_LAB_CPU_PRECISION"] = "bf16"  # the worker processes inherit it
    from mlpl_lab.runs import workers

    fp32, bf16 = _store_paths(args)
    runs = fp32_runs(fp32)
    specs = [r.spec for pair in zip(*(runs[m] for m in METHODS if m in args.methods)) for r in pair]
    if args.fp32_backbone:  # the fp32 pretraining run copied in: only the fine-tuning in bf16
        import shutil

        for spec in {s.backbone_from.key: s.backbone_from for s in specs}.values():
            if not bf16.path(spec).exists():
                bf16.root.mkdir(parents=True, exist_ok=True)
                shutil.copytree(fp32.path(spec), bf16.path(spec))
    t0 = time.time()
    report = workers.train(specs, store=bf16, workers=args.workers, threads=1,
                           note=lambda line: print(line, flush=True))
    print(json.dumps({"failed": report.failed, "wall_s": round(time.time() - t0)}), flush=True)
    return 1 if report.failed else 0


def _steps_per_epoch(spec) -> int:
    from mlpl_lab.engine.train import _steps_per_epoch

    return _steps_per_epoch(int(spec.data["n_train"]), int(spec.train["batch_size"]))


def per_run(run) -> dict:
    """What the record keeps of one run: test mAP at the best clean-val epoch, the best epoch,
    seconds per optimiser step (its epochs' training time over its steps) and its environment."""
    rows = run.history
    steps = _steps_per_epoch(run.spec) * len(rows)
    train_s = sum(r.get("train_seconds", 0.0) for r in rows)
    return {"key": run.spec.key, "seed": run.spec.seed, "test_mAP": round(float(run.summary["test_mAP"]), 3),
            "val_mAP": round(float(run.summary["val_mAP"]), 3), "best_epoch": int(run.best_epoch),
            "seconds_per_step": round(train_s / steps, 5), "converged": bool(run.converged),
            "environment": run.environment}


def t_interval(d):
    from scipy import stats

    n = len(d)
    mean = statistics.fmean(d)
    sd = statistics.stdev(d)
    half = float(stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    return mean, sd, half


def cmd_speed(args) -> int:
    """fp32 and bf16 training steps of AN and GR (seed of the first fresh run) timed in this one
    process at one thread, alternating ``--repeats`` times: one epoch of each, its
    ``train_seconds`` over its steps (the loop's own wall clock; no evaluation in it). On a shared
    machine the minimum over the repeats is the least disturbed figure; both are recorded."""
    import torch

    torch.set_num_threads(1)
    from mlpl_lab.engine.train import fit
    from mlpl_lab.methods import build_method
    from mlpl_lab.runs.ensure import pretrained_method
    from mlpl_lab.runs.splits_cache import build_splits
    from mlpl_lab.runs.validation import config_of

    fp32, _ = _store_paths(args)
    runs = fp32_runs(fp32)
    out = {"load_average": {"before": [round(x, 2) for x in os.getloadavg()]}}
    for label in METHODS:
        spec = runs[label][0].spec
        spec = spec.replace(train=dict(spec.train, epochs=1, probes=[]))
        splits = build_splits(spec)
        backbone = pretrained_method(spec.backbone_from, fp32)
        times = {"fp32": [], "bf16": []}
        for _ in range(args.repeats):
            for precision in ("fp32", "bf16"):
                os.environ["MLPL_LAB_CPU_PRECISION"] = precision
                method = build_method(spec.method, **spec.method_params)
                result = fit(method, splits.train, splits.val, splits.test, config_of(spec, progress=False),
                             backbone_from=backbone)
                times[precision].append(result.history[0]["train_seconds"] / _steps_per_epoch(spec))
        os.environ.pop("MLPL_LAB_CPU_PRECISION", None)
        med = {p: statistics.median(v) for p, v in times.items()}
        low = {p: min(v) for p, v in times.items()}  # the least disturbed epoch of each (a shared machine)
        out[label] = {"seconds_per_step": {p: [round(x, 5) for x in v] for p, v in times.items()},
                      "median": {p: round(v, 5) for p, v in med.items()},
                      "min": {p: round(v, 5) for p, v in low.items()},
                      "speedup_bf16_median": round(med["fp32"] / med["bf16"], 3),
                      "speedup_bf16_min": round(low["fp32"] / low["bf16"], 3)}
        print(label, json.dumps(out[label]), flush=True)
    out["load_average"]["after"] = [round(x, 2) for x in os.getloadavg()]
    Path(args.speed_file).write_text(json.dumps(out, indent=1))
    return 0


def cpu_flags() -> list:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = line.split(":", 1)[1].split()
                return sorted(f for f in flags if f.startswith(("avx", "amx", "fma", "f16c")))
    except OSError:
        pass
    return []


def machine() -> dict:
    import torch

    from mlpl_lab.engine.train import cpu_has_native_bf16

    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor())
    return {"cpu": model, "cores": os.cpu_count(), "torch": torch.__version__,
            "cpu_capability": torch.backends.cpu.get_cpu_capability(), "cpu_flags": cpu_flags(),
            "native_bf16": cpu_has_native_bf16(), "python": platform.python_version()}


def cmd_record(args) -> int:
    from mlpl_lab.runs.ensure import load_method

    fp32, bf16 = _store_paths(args)
    runs = fp32_runs(fp32)
    record = json.loads(Path(args.out).read_text()) if Path(args.out).exists() else {}
    record.update({"what": __doc__.split("\n\n")[0], "rule": RULE, "machine": machine()})
    methods, verdicts = {}, {}
    for label in METHODS:
        rows = []
        for run in runs[label]:
            other = bf16.get(run.spec, loader=load_method)
            if other is None:
                raise SystemExit(f"no bf16 run of {run.spec.describe()} in {bf16.root}: run `train` first")
            if (other.environment or {}).get("precision") != "bfloat16":
                raise SystemExit(f"{other.spec.key} in {bf16.root} was not trained in bfloat16: {other.environment}")
            a, b = per_run(run), per_run(other)
            rows.append({"seed": run.spec.seed, "key": run.spec.key, "fp32": a, "bf16": b,
                         "difference": round(b["test_mAP"] - a["test_mAP"], 3)})
        d = [r["bf16"]["test_mAP"] - r["fp32"]["test_mAP"] for r in rows]
        mean, sd_d, half = t_interval(d)
        sigma = statistics.stdev(r["fp32"]["test_mAP"] for r in rows)
        contains0 = mean - half <= 0 <= mean + half
        inside = bool(contains0 and half <= 2 * sigma and abs(mean) <= sigma)
        fp_s = statistics.fmean(r["fp32"]["seconds_per_step"] for r in rows)
        bf_s = statistics.fmean(r["bf16"]["seconds_per_step"] for r in rows)
        methods[label] = {"seeds": rows, "mean_difference": round(mean, 3), "sd_difference": round(sd_d, 3),
                          "ci95": [round(mean - half, 3), round(mean + half, 3)], "half_width": round(half, 3),
                          "seed_noise_sd_fp32": round(sigma, 3),
                          "seed_noise_sd_bf16": round(statistics.stdev(r["bf16"]["test_mAP"] for r in rows), 3),
                          "interval_contains_0": contains0, "half_width_over_sigma": round(half / sigma, 2),
                          "inside_seed_noise": inside,
                          "mean_seconds_per_step": {"fp32": round(fp_s, 5), "bf16": round(bf_s, 5)}}
        verdicts[label] = inside
    gr_an = {}
    for precision in ("fp32", "bf16"):
        d = [g[precision]["test_mAP"] - a[precision]["test_mAP"]
             for g, a in zip(methods["GR"]["seeds"], methods["AN"]["seeds"])]
        mean, _, half = t_interval(d)
        gr_an[precision] = {"mean": round(mean, 3), "ci95": [round(mean - half, 3), round(mean + half, 3)]}
    record["methods"] = methods
    record["gr_minus_an"] = {"what": "chapter 02's first claim (GR beats AN), paired over the fresh seeds, "
                             "in each precision (not part of the rule)", **gr_an}
    if Path(args.speed_file).exists():
        record["speed"] = {"what": "cmd_speed: one epoch of each precision, alternating, in one process at one "
                           "thread, seconds per step (the epoch's train_seconds over its steps); "
                           "the load average while it ran is under load_average",
                           **json.loads(Path(args.speed_file).read_text())}
    record["speed_note"] = ("methods.*.mean_seconds_per_step compares the shipped fp32 runs (trained in the "
                            "pack's cold series) with the bf16 runs trained here beside other work on this "
                            "2-core machine: not a like-for-like speed; `speed` is the interleaved one")
    from mlpl_lab.runs.shipped import manifest_of, shipped_pack

    record["fp32_source"] = {"pack": shipped_pack("cpu").name, "series": manifest_of(shipped_pack("cpu")).get("name")}
    record["commands"] = ["MLPL_LAB_DATA=/tmp/h9-data nice -n 10 python benchmarks/bf16_decision.py rule",
                          "MLPL_LAB_DATA=/tmp/h9-data nice -n 10 python benchmarks/bf16_decision.py train",
                          "MLPL_LAB_DATA=/tmp/h9-data nice -n 10 python benchmarks/bf16_decision.py speed",
                          "MLPL_LAB_DATA=/tmp/h9-data python benchmarks/bf16_decision.py record"]
    record["decision"] = {"inside_seed_noise": verdicts, "bf16_allowed": all(verdicts.values()),
                          "date": time.strftime("%Y-%m-%d")}
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps({k: {"mean": v["mean_difference"], "ci95": v["ci95"], "sigma": v["seed_noise_sd_fp32"],
                          "inside": v["inside_seed_noise"]} for k, v in methods.items()}))
    print(json.dumps(record["decision"]))
    return 0


def cmd_supplement(args) -> int:
    """Adds ``supplement_fp32_backbone`` to the record: the rows of ``--methods`` fine-tuned in bf16
    from the shipped fp32 pretraining run (``train --fp32-backbone --store STORE``), paired with the
    fp32 runs as the rule pairs them; whether bf16's difference comes from the fine-tuning alone.
    Not part of the decision."""
    from mlpl_lab.runs.ensure import load_method

    fp32, other = _store_paths(args)
    runs = fp32_runs(fp32)
    record = json.loads(Path(args.out).read_text())
    out = {"what": cmd_supplement.__doc__.split("\n\n")[0].replace("\n    ", " "), "store": str(other.root),
           "command": f"python benchmarks/bf16_decision.py train --methods {' '.join(args.methods)} "
                      f"--fp32-backbone --store {other.root}"}
    for label in args.methods:
        rows = []
        for run in runs[label]:
            b = other.get(run.spec, loader=load_method)
            if b is None or (b.environment or {}).get("precision") != "bfloat16":
                raise SystemExit(f"no bf16 run of {run.spec.describe()} in {other.root}")
            rows.append({"seed": run.spec.seed, "fp32": per_run(run)["test_mAP"], "bf16": per_run(b)["test_mAP"],
                         "bf16_best_epoch": int(b.best_epoch)})
        d = [r["bf16"] - r["fp32"] for r in rows]
        mean, sd_d, half = t_interval(d)
        out[label] = {"seeds": rows, "mean_difference": round(mean, 3), "ci95": [round(mean - half, 3), round(mean + half, 3)]}
        print(label, json.dumps(out[label]))
    record["supplement_fp32_backbone"] = out
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=("train", "speed", "record", "rule", "supplement"))
    ap.add_argument("--store", default=None, help="the bf16 runs' store (default $MLPL_LAB_DATA/bf16_runs)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--methods", nargs="*", default=list(METHODS), help="train: which rows (default AN GR)")
    ap.add_argument("--fp32-backbone", action="store_true",
                    help="train: start from the shipped fp32 pretraining run (a supplementary check, not the rule's)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--speed-file", default=None, help="where `speed` writes (default: next to the bf16 store)")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    if args.speed_file is None:
        _, bf16 = _store_paths(args)
        args.speed_file = str(bf16.root.parent / "bf16_speed.json")
    if args.command == "rule":  # the record's rule, written before any bf16 run is read
        Path(args.out).write_text(json.dumps({"what": __doc__.split("\n\n")[0], "rule": RULE,
                                              "rule_written": time.strftime("%Y-%m-%d %H:%M")}, indent=1) + "\n")
        return 0
    return {"train": cmd_train, "speed": cmd_speed, "record": cmd_record,
            "supplement": cmd_supplement}[args.command](args)


if __name__ == "__main__":
    raise SystemExit(main())
