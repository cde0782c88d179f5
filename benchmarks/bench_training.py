"""Training throughput and peak memory of the models on this machine (prints figures).

Speed targets are checked here, by a person reading numbers — never by a timed test.
Usage: python benchmarks/bench_training.py [--steps 20]
"""
from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mlpl_lab.losses import an_loss  # noqa: E402
from mlpl_lab.models import build_model  # noqa: E402
from mlpl_lab.engine.train import pick_device  # noqa: E402


def bench(name, size, batch, steps, device, channels_last=False, **kw):
    model = build_model(name, 20, **kw).to(device)
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    x = torch.rand(batch, 3, size, size, device=device)
    if channels_last:  # NHWC network and batch (Profile.channels_last; the cpu profile's layout)
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    y = (torch.rand(batch, 20, device=device) < 0.1).long()

    def step():
        loss = an_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    for _ in range(3):  # warm-up
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    params = sum(p.numel() for p in model.parameters())
    print(f"{name:<10} {size:>3} px  batch {batch:>3}  {params / 1e6:5.2f} M params  "
          f"{'NHWC' if channels_last else 'NCHW'}  {steps * batch / dt:8.0f} images/s  "
          f"{1000 * dt / steps:6.1f} ms/step")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    device = pick_device("auto")
    print(f"device {device}, torch {torch.__version__}, threads {torch.get_num_threads()}")
    bench("small_cnn", 32, 64, args.steps, device, width=16)  # the cpu profile's network
    bench("small_cnn", 32, 64, args.steps, device, channels_last=True, width=16)  # ... and its layout
    bench("small_cnn", 32, 64, args.steps, device, width=32)
    bench("small_cnn", 32, 128, args.steps, device, width=32)
    bench("small_cnn", 64, 64, max(5, args.steps // 2), device, width=32)
    bench("resnet18", 32, 128, max(5, args.steps // 2), device)
    bench("resnet18", 64, 64, max(5, args.steps // 4), device)
    print(f"peak resident memory {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
