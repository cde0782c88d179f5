"""The issue's GPU throughput targets, side by side in one process (run it where CUDA exists):

* AN through the training loop (ResNet-50, 224 px, AMP, channels-last) against a bare
  forward/backward/step loop of the same backbone on synthetic tensors — target >= 0.85;
* a loss-only method (GR) against AN through the same loop — target >= 0.95.

Without CUDA it says so and exits 0 (``make benchmark`` runs everywhere); ``--cpu`` runs the same
comparison on the CPU with a small input (a smoke test of the script, not the target).

Usage: python benchmarks/bench_gpu.py [--n 2048] [--batch 64] [--size 224] [--epochs 2] [--cpu]
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
from mlpl_lab.losses import an_loss  # noqa: E402
from mlpl_lab.models import build_model  # noqa: E402
from mlpl_lab.engine.train import TrainConfig, fit  # noqa: E402


def bare(n, batch, size, classes, device, amp, steps_per_epoch, epochs):
    """Synthetic tensors already on the device: forward / backward / step, nothing else."""
    model = build_model("resnet50", classes).to(device).to(memory_format=torch.channels_last)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler("cuda", enabled=amp and device.type == "cuda")
    x = torch.randn(batch, 3, size, size, device=device).contiguous(memory_format=torch.channels_last)
    y = (torch.rand(batch, classes, device=device) < 0.1).long()
    dtype = torch.float16 if device.type == "cuda" else torch.bfloat16

    def step():
        with torch.autocast(device.type, dtype=dtype, enabled=amp):
            loss = an_loss(model(x), y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    for _ in range(3):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps_per_epoch * epochs):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return steps_per_epoch * epochs * batch / (time.perf_counter() - t0)


def looped(method, splits, batch, epochs, device, amp):
    cfg = TrainConfig(epochs=epochs, batch_size=batch, lr=1e-4, model="resnet50", amp=amp,
                      channels_last=True, device=str(device), progress=False, probes=(),
                      test_every_epoch=False)
    r = fit(method, splits.train, splits.val, splits.test, cfg)
    images = (len(splits.train) // batch) * batch * epochs
    return images / sum(row["train_seconds"] for row in r.history)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--cpu", action="store_true", help="smoke-test the script on the CPU (small input)")
    args = ap.parse_args()
    if not torch.cuda.is_available() and not args.cpu:
        print("bench_gpu: no CUDA device here; the GPU targets (loop >= 0.85 x bare, GR >= 0.95 x AN "
              "at ResNet-50, 224 px, AMP, channels-last) were not measured. Run it on a GPU machine.")
        return 0
    device = torch.device("cuda" if torch.cuda.is_available() and not args.cpu else "cpu")
    if args.cpu:
        args.n, args.batch, args.size, args.epochs = 128, 16, 64, 1
    splits = make_splits(n_train=args.n, n_val=64, n_test=64, image_size=args.size, seed=0)
    steps = args.n // args.batch
    amp = True
    print(f"device {device}, ResNet-50, {args.size} px, batch {args.batch}, AMP, channels-last, "
          f"{args.n} images x {args.epochs} epochs")
    b = bare(args.n, args.batch, args.size, splits.train.num_classes, device, amp, steps, args.epochs)
    an = looped("an", splits, args.batch, args.epochs, device, amp)
    gr = looped("gr", splits, args.batch, args.epochs, device, amp)
    print(f"bare loop  {b:8.1f} images/s")
    print(f"AN (fit)   {an:8.1f} images/s  = {an / b:.2f} x bare   (target >= 0.85)")
    print(f"GR (fit)   {gr:8.1f} images/s  = {gr / an:.2f} x AN     (target >= 0.95)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
