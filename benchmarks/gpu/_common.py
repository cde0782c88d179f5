"""What the steps of ``benchmarks/gpu/check.sh`` share: the mode (``gpu`` on a CUDA device, or
``rehearse`` on the CPU at CPU sizes), the sizes of each mode, and where records go.

check.sh sets ``GPU_CHECK_MODE`` and ``GPU_CHECK_OUT`` (the records folder: ``$OUT`` when set,
else ``benchmarks/records/gpu/``, or ``benchmarks/records/gpu/rehearsal/`` for ``--rehearse``)."""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the tree's lab first: it reads its notebooks, packs and records there

MODE = os.environ.get("GPU_CHECK_MODE", "gpu")
if MODE not in ("gpu", "rehearse"):
    raise SystemExit(f"GPU_CHECK_MODE must be gpu or rehearse (got {MODE!r})")
OUT = Path(os.environ.get("GPU_CHECK_OUT") or ROOT / "benchmarks" / "records" / "gpu")

#: the card's dense bfloat16 peak (no sparsity), TFLOP/s, by the name torch reports (NVIDIA's H100
#: datasheet: 989.4 dense BF16 Tensor Core TFLOP/s for SXM, 756 for PCIe; the H200 has the H100
#: SXM's compute; A100: 312)
BF16_PEAK_TFLOPS = {"H100 80GB HBM3": 989.4, "H100 SXM": 989.4, "H100 PCIe": 756.0, "H100 NVL": 835.0,
                    "H200": 989.4, "A100": 312.0}

#: the sizes of each mode. gpu: the gpu profile itself; rehearse: gpu_shape, the gpu profile's
#: backbone, image size, AMP and designs at a CPU's sizes
SIZES = {
    "gpu": {"profile": "gpu", "device": "cuda",
            # step 3: images held on the device and epochs timed through fit (the first is a warm-up);
            # the notebooks' sizes are the cut's (cut.py)
            "throughput_images": 4096, "throughput_epochs": 3, "throughput_eval_images": 256},
    # rehearsing, the step's validation and test sets are scored but not timed: 32 images each
    "rehearse": {"profile": "gpu_shape", "device": "cpu",
                 "throughput_images": 128, "throughput_epochs": 2, "throughput_eval_images": 32},
}[MODE]


def peak_tflops(device_name: str) -> float | None:
    """The dense bf16 peak of the card named ``device_name`` (None: not in the table)."""
    for key, value in BF16_PEAK_TFLOPS.items():
        if key in device_name:
            return value
    return None


def environment() -> dict:
    import torch

    env = {"mode": MODE, "python": platform.python_version(), "torch": torch.__version__,
           "cuda": torch.version.cuda, "host_cpus": os.cpu_count(),
           "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    if torch.cuda.is_available():
        env["device"] = torch.cuda.get_device_name(0)
        env["capability"] = list(torch.cuda.get_device_capability(0))
    else:
        env["device"] = f"cpu ({platform.processor() or platform.machine()}), {torch.get_num_threads()} threads"
    try:
        env["commit"] = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                       capture_output=True, text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        env["commit"] = None
    return env


def write(name: str, record: dict) -> Path:
    """``record`` (with the environment) as ``OUT/name.json``."""
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.json"
    path.write_text(json.dumps({"step": name, **record, "environment": environment()}, indent=1,
                               default=str) + "\n")
    print(f"wrote {path}")
    return path
