"""The training loop's overhead: images/s of ``fit`` (training only, evaluation excluded)
against a bare forward/backward/step loop over the same model and the same batches,
side by side in one process. Target: the loop at >= 0.9 of the bare loop.

Usage: python benchmarks/bench_loop.py [--n 2000] [--epochs 2] [--repeats 2]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("MLPL_LAB_DATA", tempfile.mkdtemp(prefix="mlpl-bench-"))

from mlpl_lab.data import make_splits  # noqa: E402
from mlpl_lab.data.augment import VIEWS  # noqa: E402
from mlpl_lab.losses import an_loss  # noqa: E402
from mlpl_lab.models import build_model  # noqa: E402
from mlpl_lab.engine.train import TrainConfig, fit, iterate_batches, seed_everything  # noqa: E402


def bare(train, epochs, batch_size, augment, width, lr, head="linear"):
    """forward / backward / step on the loop's batches (same order and views), nothing else."""
    seed_everything(0)
    model = build_model("small_cnn", train.num_classes, width=width, head=head)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    view = VIEWS[augment]
    n = 0
    t0 = time.perf_counter()
    for epoch in range(epochs):
        seed_everything(epoch)
        for batch in iterate_batches(train, batch_size, shuffle=True, drop_last=True):
            x = view(batch["image"])
            loss = an_loss(model(x), batch["observed"])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            n += x.shape[0]
    return n / (time.perf_counter() - t0)


def looped(splits, epochs, batch_size, augment, width, lr, method="an", head="linear"):
    cfg = TrainConfig(epochs=epochs, batch_size=batch_size, lr=lr, model="small_cnn",
                      model_kwargs={"width": width, "head": head} if head != "linear" else {"width": width},
                      augment=augment, progress=False, probes=())
    r = fit(method, splits.train, splits.val, splits.test, cfg)
    steps = (len(splits.train) // batch_size) * batch_size * epochs
    return steps / sum(row["train_seconds"] for row in r.history)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    splits = make_splits(n_train=args.n, n_val=256, n_test=256, seed=0)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, small_cnn width 32, "
          f"{args.n} images x {args.epochs} epochs, batch 64")
    for augment in ("none", "weak"):
        b, l = [], []
        for _ in range(args.repeats):  # interleaved, so drift hits both
            b.append(bare(splits.train, args.epochs, 64, augment, 32, 2e-3))
            l.append(looped(splits, args.epochs, 64, augment, 32, 2e-3))
        print(f"augment={augment:<5} bare loop {max(b):7.0f} img/s   fit {max(l):7.0f} img/s   "
              f"ratio {max(l) / max(b):.3f} (target >= 0.9)")


if __name__ == "__main__":
    main()
