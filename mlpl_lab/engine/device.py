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


#: environment variable: the training precision of runs on the CPU: ``fp32``, ``bf16`` (bfloat16
#: autocast in the training step) or ``auto`` (bf16 where the CPU computes bfloat16 natively,
#: :func:`cpu_has_native_bf16`; fp32 elsewhere). Unset, a spec with ``amp`` takes ``auto`` and one
#: without takes :data:`DEFAULT_CPU_PRECISION` (:func:`autocast_dtype`).
#: Not part of a run's key: the precision a run was trained in is recorded in its environment
#: (:func:`mlpl_lab.runs.environment.numeric_environment`, ``precision``), as its threads are, so
#: a pack trained in either precision is served on any machine.
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


def requested_autocast_dtype(device, amp: bool) -> torch.dtype | None:
    """The dtype a spec's ``amp`` asks for on ``device`` (recorded and checked as a run's
    ``amp_dtype``): bfloat16 on the CPU and on CUDA devices that compute it natively (compute
    capability 8.0 on: ``torch.cuda.is_bf16_supported(including_emulation=False)``), float16 on
    CUDA devices without it, None without AMP. What the step runs in is :func:`autocast_dtype`."""
    if not amp:
        return None
    if torch.device(device).type == "cuda" and not torch.cuda.is_bf16_supported(including_emulation=False):
        return torch.float16
    return torch.bfloat16


def autocast_dtype(device, amp: bool, precision: str | None = None) -> torch.dtype | None:
    """The dtype :func:`fit` autocasts its step to on ``device`` (a ``torch.device`` or its type),
    None for float32.

    * On CUDA: what the spec asks (:func:`requested_autocast_dtype`): with ``amp``, bfloat16 where
      the device computes it natively, with no loss scaling (bfloat16 keeps float32's exponent
      range, so small gradients do not underflow); float16 only as the fallback on devices without
      bfloat16, and only there does :func:`fit` scale the loss (:func:`uses_grad_scaler`).
    * On the CPU: bfloat16 when the precision resolves to ``"bf16"`` (:func:`cpu_precision`:
      ``precision``, else :data:`CPU_PRECISION_ENV`). A spec *with* ``amp`` resolves ``auto`` when
      neither is set: bfloat16 where the CPU computes it natively (:func:`cpu_has_native_bf16`),
      float32 elsewhere, where emulated bfloat16 is many times slower than float32
      (``benchmarks/bench_amp_cpu.py``, record ``benchmarks/records/amp_cpu.json``);
      ``MLPL_LAB_CPU_PRECISION=bf16`` forces it. A spec without ``amp`` resolves :data:`DEFAULT_CPU_PRECISION` when neither is set.

    The run store records the spec's AMP dtype (``amp_dtype``, checked) and the precision the step
    ran in (``precision``, recorded only): :func:`mlpl_lab.runs.environment.numeric_environment`."""
    if torch.device(device).type != "cpu":
        return requested_autocast_dtype(device, amp)
    if amp and precision is None and not os.environ.get(CPU_PRECISION_ENV, "").strip():
        precision = "auto"
    return torch.bfloat16 if cpu_precision(precision) == "bf16" else None


def uses_grad_scaler(dtype: torch.dtype | None) -> bool:
    """Loss scaling is for float16 autocast only (its 5-bit exponent underflows small gradients)."""
    return dtype == torch.float16
