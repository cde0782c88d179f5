"""Where a run trains and in which precision: the device choice and the CPU precision policy.

* :func:`pick_device`: ``"auto"`` (CUDA where it exists, else the CPU), or a named device,
  refused with the fix when CUDA is asked for and missing.
* :func:`autocast_dtype`: the dtype :func:`mlpl_lab.engine.train.fit` autocasts its step to, from
  the spec's ``amp`` and, on the CPU, the precision policy :func:`cpu_precision`
  (``MLPL_LAB_CPU_PRECISION``, not part of a run's key; the run store records it).
* :func:`uses_grad_scaler`: whether the step scales its loss (float16 only).
"""
from __future__ import annotations

import os
from pathlib import Path

import torch


def pick_device(device: str = "auto") -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} requested but CUDA is not available; use 'auto' or 'cpu'")
    return dev


#: environment variable: the training precision of runs on the CPU whose spec asks for no AMP
#: (``train.amp`` false): ``fp32``, ``bf16`` (bfloat16 autocast in the training step) or ``auto``
#: (bf16 where the CPU computes bfloat16 natively, :func:`cpu_has_native_bf16`; fp32 elsewhere).
#: Not part of a run's key: the precision a run was trained in is recorded in its environment
#: (:func:`mlpl_lab.runs.environment.numeric_environment`, ``precision``), as its threads are, so
#: a pack trained in either precision is served on any machine. Unset: :data:`DEFAULT_CPU_PRECISION`
CPU_PRECISION_ENV = "MLPL_LAB_CPU_PRECISION"
CPU_PRECISIONS = ("fp32", "bf16", "auto")
#: the precision when :data:`CPU_PRECISION_ENV` is unset. fp32: the shipped pack and the goldens
#: are fp32, and the measurement (benchmarks/records/bf16_decision_cpu.json) decides whether a
#: later series switches to ``auto``
DEFAULT_CPU_PRECISION = "fp32"


def cpu_has_native_bf16() -> bool:
    """Whether this CPU computes bfloat16 in hardware: the AVX512-BF16 or AMX-BF16 instructions
    (torch's own check where this build has it, else the Linux cpuinfo flags ``avx512_bf16`` /
    ``amx_bf16``). Without them, bfloat16 autocast is emulated and slower than float32."""
    cpu = getattr(torch._C, "_cpu", None)
    checks = [getattr(cpu, name, None) for name in ("_is_avx512_bf16_supported", "_is_amx_tile_supported")]
    if all(callable(c) for c in checks):
        return any(bool(c()) for c in checks)
    try:
        flags = set(Path("/proc/cpuinfo").read_text().split())
    except OSError:
        return False
    return bool(flags & {"avx512_bf16", "amx_bf16"})


def cpu_precision(value: str | None = None) -> str:
    """The CPU training precision, resolved to ``"fp32"`` or ``"bf16"``: ``value``, else
    :data:`CPU_PRECISION_ENV`, else :data:`DEFAULT_CPU_PRECISION`; ``auto`` is bf16 exactly when
    :func:`cpu_has_native_bf16`."""
    raw = value if value is not None else os.environ.get(CPU_PRECISION_ENV, "")
    choice = (raw.strip().lower() or DEFAULT_CPU_PRECISION)
    if choice not in CPU_PRECISIONS:
        raise ValueError(f"{CPU_PRECISION_ENV}={raw!r} is not one of {CPU_PRECISIONS}: fp32, bf16 "
                         "(bfloat16 autocast on the CPU) or auto (bf16 where the CPU has it natively)")
    if choice == "auto":
        return "bf16" if cpu_has_native_bf16() else "fp32"
    return choice


def autocast_dtype(device, amp: bool, precision: str | None = None) -> torch.dtype | None:
    """The dtype :func:`fit` autocasts to on ``device`` (a ``torch.device`` or its type), None
    for float32. With ``amp``: bfloat16 wherever the device computes it natively — the CPU, and
    CUDA devices that support it (compute capability 8.0 on: ``torch.cuda.is_bf16_supported(
    including_emulation=False)``) — with no loss scaling: bfloat16 keeps float32's exponent range,
    so small gradients do not underflow. float16 only as the fallback on CUDA devices without
    bfloat16, and only there does :func:`fit` scale the loss (a ``GradScaler``,
    :func:`uses_grad_scaler`). Without ``amp``, on the CPU: bfloat16 when ``precision``
    resolves to ``"bf16"`` (:func:`cpu_precision`; ``None``, as :func:`fit` calls it, reads
    :data:`CPU_PRECISION_ENV`; ``"fp32"`` gives what the spec alone asks for). The run store
    records the spec's AMP dtype (``amp_dtype``, checked) and the precision the step ran in
    (``precision``, recorded only): :func:`mlpl_lab.runs.environment.numeric_environment`."""
    if not amp:
        if torch.device(device).type == "cpu" and cpu_precision(precision) == "bf16":
            return torch.bfloat16
        return None
    if torch.device(device).type == "cuda" and not torch.cuda.is_bf16_supported(including_emulation=False):
        return torch.float16
    return torch.bfloat16


def uses_grad_scaler(dtype: torch.dtype | None) -> bool:
    """Loss scaling is for float16 autocast only (its 5-bit exponent underflows small gradients)."""
    return dtype == torch.float16
