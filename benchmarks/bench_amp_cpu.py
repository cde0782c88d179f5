"""What bfloat16 autocast costs on this CPU against float32: the training step of the gpu profile's
network at gpu_shape's sizes (ResNet-18 at 64 px, NHWC, batch 32, one thread), the two precisions
alternating, with whether the CPU computes bfloat16 natively (``engine.device.cpu_has_native_bf16``).
It is the measurement behind the rule that a spec with AMP trains in float32 on a CPU that would
emulate bfloat16 (``engine.device.autocast_dtype``).

Usage: ``.venv/bin/python benchmarks/bench_amp_cpu.py [--out benchmarks/records/amp_cpu.json]``
"""
from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
import torchvision

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from records_io import write_record  # noqa: E402
from mlpl_lab.engine.device import cpu_has_native_bf16  # noqa: E402

RECORD = Path(__file__).resolve().parent / "records" / "amp_cpu.json"


def step_seconds(net, x, bf16: bool) -> float:
    t = time.perf_counter()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        loss = net(x).float().sum()
    loss.backward()
    return time.perf_counter() - t


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=3, help="timed steps per precision (after one warm-up each)")
    ap.add_argument("--out", type=Path, default=RECORD)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    net = torchvision.models.resnet18(num_classes=20).to(memory_format=torch.channels_last)
    x = torch.randn(32, 3, 64, 64).to(memory_format=torch.channels_last)
    times = {"float32": [], "bfloat16": []}
    for bf16 in (False, True):
        step_seconds(net, x, bf16)  # warm-up
    for _ in range(args.steps):  # alternating, so a change in the machine's load falls on both
        for bf16, name in ((False, "float32"), (True, "bfloat16")):
            times[name].append(step_seconds(net, x, bf16))
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = med["bfloat16"] / med["float32"]
    print(f"{cpu_model()}: native bfloat16 {cpu_has_native_bf16()}; a step in float32 {med['float32']:.2f} s, "
          f"under bfloat16 autocast {med['bfloat16']:.2f} s ({ratio:.1f}x)")
    write_record(args.out, {
        "what": __doc__.split("\n\n")[0], "made": _dt.datetime.now().isoformat(timespec="seconds"),
        "machine": {"cpu": cpu_model(), "cpus": os.cpu_count(), "threads": 1, "torch": torch.__version__,
                    "native_bf16": cpu_has_native_bf16(), "load_average_at_end": list(os.getloadavg())},
        "shape": {"model": "resnet18", "image_size": 64, "batch_size": 32, "channels_last": True},
        "seconds_per_step": {k: [round(s, 4) for s in v] for k, v in times.items()},
        "median_seconds_per_step": {k: round(v, 4) for k, v in med.items()},
        "bfloat16_over_float32": round(ratio, 2)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
