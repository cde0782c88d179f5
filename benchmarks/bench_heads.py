"""Training throughput of the label-query head (LAC, notebook 05) relative to AN with the
linear head, through the one training loop (prints figures; never a timed test).

Rows: AN with the linear head (the reference); AN, stage 1 (AN + PLC, two views) and stage 2
(+ LAC with the queue) on the label-query head, with the cpu chapter's head (64-d, FFN 2x, no
dropout) and with the code's proportions (d = backbone width, FFN 4x, dropout 0.1).
Usage: python benchmarks/bench_heads.py [--n-train 1024] [--epochs 2]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mlpl_lab.data import make_splits  # noqa: E402
from mlpl_lab.engine.train import TrainConfig, fit  # noqa: E402


def throughput(method, splits, epochs, model_kwargs, init_from=None):
    cfg = TrainConfig(epochs=epochs, batch_size=64, lr=2e-3, model="small_cnn", model_kwargs=model_kwargs,
                      progress=False, probes=(), test_every_epoch=False)
    r = fit(method, splits.train, splits.val, splits.test, cfg, init_from=init_from)
    seconds = sum(row["train_seconds"] for row in r.history[1:]) or r.history[0]["train_seconds"]
    steps_epochs = max(1, epochs - 1)
    images = steps_epochs * (len(splits.train) // 64) * 64
    return images / seconds, r.method


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-train", type=int, default=1024)
    ap.add_argument("--epochs", type=int, default=3, help="the first epoch is a warm-up, not timed")
    args = ap.parse_args()
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, small CNN width 24 at 32 px, batch 64")
    splits = make_splits(n_train=args.n_train, n_val=128, n_test=128, seed=0, image_size=32)
    ref, _ = throughput("an", splits, args.epochs, {"width": 24})
    print(f"{'AN, linear head (reference)':<82} {ref:8.0f} images/s   1.00x")
    heads = {"cpu chapter head (64-d, FFN 2x, no dropout)": {"d_model": 64, "ffn_mult": 2, "dropout": 0.0},
             "code proportions (96-d, FFN 4x, dropout 0.1)": {}}
    for head_label, hk in heads.items():
        mk = {"width": 24, "head": "label_query", "head_kwargs": hk}
        stage1 = None
        for method in ("lac_an", "lac_plc", "lac"):
            init = stage1 if method == "lac" else None
            ips, m = throughput(method, splits, args.epochs, mk, init_from=init)
            if method == "lac_plc":
                stage1 = m
            label = {"lac_an": "AN", "lac_plc": "stage 1: AN + PLC", "lac": "stage 2: + LAC, queue 512"}[method]
            print(f"{label + ', ' + head_label:<82} {ips:8.0f} images/s   {ips / ref:.2f}x")


if __name__ == "__main__":
    main()
