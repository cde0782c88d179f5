"""What per-epoch evaluation and probes cost in the shipped cpu course pack's runs, per method family.

Issue 51: every epoch of every run scores the validation split (extra heads included: LAC's EMA,
CLS's f and g) and runs the profile's probes (``separation`` on 512 training images). The loop
records per epoch ``train_seconds`` (the optimiser steps) and ``seconds`` (the epoch with its
evaluation), so ``seconds - train_seconds`` is the epoch's evaluation and probes, measured when the
run trained. This script sums them over the pack's runs (``data/packs/cpu-course.mlplpack``), per
family (the run's method), and writes ``benchmarks/records/eval_share_cpu.json``.

It also says which per-epoch quantities a figure or table reads (found by reading the chapters
and viz; listed in :data:`READERS`) and, using the split of an epoch's evaluation into validation
and probes measured by ``bench_methods.py`` (``records/methods_cpu.json``), what computing the
unread ones once, at the restored best epoch, would save. Nothing here changes a run.

Usage::

    .venv/bin/python benchmarks/eval_share.py
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACK = ROOT / "data" / "packs" / "cpu-course"
METHODS_RECORD = ROOT / "benchmarks" / "records" / "methods_cpu.json"
RECORD = ROOT / "benchmarks" / "records" / "eval_share_cpu.json"

#: per-epoch history fields and who reads them per epoch (grep of mlpl_lab/chapters, mlpl_lab/viz,
#: mlpl_lab/analysis and notebooks/*.ipynb, 2026-11-27)
READERS = {
    "val_mAP": "every epoch: the best-epoch selection of every run (engine), the validation curves "
               "of 01, 02, 03 (viz.opml_plots), 04 and 05 (viz.results.plot_curves)",
    "val_obs_mAP": "every epoch: analysis.selection (model selection on observed labels); the same "
                   "predictions as val_mAP, no extra pass",
    "train_separation": "every epoch, but only 02's separation table (chapters.gr.separation_table, "
                        "rows AN and GR); every other run computes it for no reader",
    "val_mAP[ema]": "at the best epoch only (chapters.lac raw-vs-EMA table reads run.best); a "
                    "second forward pass over the validation split every epoch of every LAC run",
    "val_mAP[f], val_mAP[g]": "no reader (04 reads test_mAP[f]/[g] at the best epoch); the "
                              "networks' predictions are cached, so no extra pass, only the metric",
}


def family(spec: dict) -> str:
    m = spec["method"]
    if m.startswith("lac"):
        return "LAC"
    if m in ("pu_mlc", "pu_mlc_gamma", "pu_mlc_gamma_alpha", "vpu_plain"):
        lg = spec["train"].get("model_kwargs", {}).get("lgconv")
        return "PU-MLC + LgConv" if lg else "PU-MLC"
    if m in ("cls", "cls_h", "cls_l", "clc", "coteaching", "coteaching_plus", "jocor"):
        return "two networks (CLS, Co-teaching)"
    if m == "an":
        return "AN"
    if m == "gr":
        return "GR"
    return "other single-network"


def main() -> int:
    from mlpl_lab.runs.pack import contents

    fam = defaultdict(lambda: defaultdict(float))
    for item in contents(PACK):
        spec = item["meta"]["spec"]
        hist = json.loads(item["files"]["history.json"])["history"]
        f = fam[family(spec)]
        f["runs"] += 1
        f["epochs"] += len(hist)
        f["train_seconds"] += sum(r["train_seconds"] for r in hist)
        f["seconds"] += sum(r["seconds"] for r in hist)
        f["eval_seconds"] += sum(r["seconds"] - r["train_seconds"] for r in hist)
        f["with_probes"] += bool(spec["train"].get("probes"))
        if spec["train"].get("probes"):
            f["eval_seconds_of_runs_with_probes"] += sum(r["seconds"] - r["train_seconds"] for r in hist)
        f["with_ema_head"] += any("val_mAP[ema]" in r for r in hist)
    out = {}
    for name, f in sorted(fam.items()):
        out[name] = {k: (round(v, 1) if isinstance(v, float) else v) for k, v in f.items()} | {
            "eval_share_of_epoch_seconds": round(f["eval_seconds"] / f["seconds"], 4)}
    total = {k: round(sum(f[k] for f in fam.values()), 1) for k in ("runs", "seconds", "eval_seconds")}
    total["eval_share_of_epoch_seconds"] = round(total["eval_seconds"] / total["seconds"], 4)

    # the split of one epoch's evaluation (bench_methods.py, this machine): validation with its
    # extra heads, validation without them, probes
    saving = {}
    if METHODS_RECORD.exists():
        rec = json.loads(METHODS_RECORD.read_text())
        label = "after" if "after" in rec.get("labels", {}) else "now"
        fams = rec["labels"][label]["families"]
        for name, r in fams.items():
            val, probe = r["val_seconds_best"], r["probe_seconds_best"]
            saving[name] = {"val_seconds": val, "probe_seconds": probe,
                            "probe_share_of_epoch_eval": round(probe / (val + probe), 4)}
            if "val_main_only_seconds" in r:
                saving[name]["extra_heads_share_of_epoch_eval"] = round(
                    (val - r["val_main_only_seconds"]) / (val + probe), 4)
    # probes unread outside 02's AN and GR rows: their share of each family's evaluation seconds
    unread = {}
    for name, f in fam.items():
        probe_share = {"AN": "AN", "GR": "AN", "LAC": "LAC", "PU-MLC + LgConv": "PU-MLC + LgConv",
                       "PU-MLC": "AN", "two networks (CLS, Co-teaching)": "CLS",
                       "other single-network": "AN"}[name]
        s = saving.get(probe_share)
        if not s:
            continue
        probe_s = f["eval_seconds_of_runs_with_probes"] * s["probe_share_of_epoch_eval"]
        ema_s = f["eval_seconds"] * s.get("extra_heads_share_of_epoch_eval", 0.0) if name == "LAC" else 0.0
        unread[name] = {"probe_seconds_estimated": round(probe_s, 1),
                        "probes_read_per_epoch": name in ("AN", "GR"),
                        "ema_val_seconds_estimated": round(ema_s, 1),
                        "measured_split_from": probe_share}
    droppable = sum(u["probe_seconds_estimated"] for n, u in unread.items() if not u["probes_read_per_epoch"])
    droppable += sum(u["ema_val_seconds_estimated"] for u in unread.values())
    record = {"what": __doc__.split("\n\n")[0], "pack": str(PACK.relative_to(ROOT)),
              "pack_created": manifest.get("created"), "readers": READERS, "families": out,
              "total": total, "one_epoch_split_measured": saving, "estimate_per_family": unread,
              "droppable_seconds_estimated": round(droppable, 1),
              "droppable_share_of_pack_seconds": round(droppable / total["seconds"], 4),
              "note": "probes kept per epoch on every AN and GR run (02 reads them; an AN run is shared "
                      "by several chapters), dropped elsewhere; LAC's EMA validation computed once at the "
                      "restored best epoch. Estimates: the pack's measured evaluation seconds times the "
                      "share of an epoch's evaluation the probes (or the EMA head) took in bench_methods.py"}
    RECORD.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    for name, f in out.items():
        print(f"{name:<34} {f['runs']:4.0f} runs {f['seconds']:9.0f} s, evaluation {f['eval_seconds']:8.0f} s "
              f"({100 * f['eval_share_of_epoch_seconds']:.1f} %)")
    print(f"{'total':<34} {total['runs']:4.0f} runs {total['seconds']:9.0f} s, evaluation "
          f"{total['eval_seconds']:8.0f} s ({100 * total['eval_share_of_epoch_seconds']:.1f} %)")
    print(f"droppable (unread probes, per-epoch EMA validation): {droppable:.0f} s "
          f"({100 * record['droppable_share_of_pack_seconds']:.1f} % of the pack's seconds)")
    print(f"record: {RECORD}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
