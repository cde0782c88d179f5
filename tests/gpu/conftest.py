"""The device the fast GPU tests run on: CUDA (``make test-gpu``, ``benchmarks/gpu/check.sh``),
where they fail, not skip, without it; ``MLPL_LAB_GPU_TEST_DEVICE=cpu`` runs the same tests on the
CPU, with the CPU's oracle (bfloat16 autocast there too, no loss scaling; forced with
``MLPL_LAB_CPU_PRECISION=bf16``, as a CPU without native bfloat16 would train an AMP spec in
float32): ``check.sh --rehearse``."""
from __future__ import annotations

import os

import pytest

DEVICE_ENV = "MLPL_LAB_GPU_TEST_DEVICE"


@pytest.fixture
def device(monkeypatch):
    import torch

    name = os.environ.get(DEVICE_ENV, "cuda")
    if name not in ("cuda", "cpu"):
        pytest.fail(f"{DEVICE_ENV} must be cuda or cpu (got {name!r})", pytrace=False)
    if name == "cuda" and not torch.cuda.is_available():
        pytest.fail("this test needs CUDA (make test-gpu checks this first; "
                    f"{DEVICE_ENV}=cpu rehearses it on the CPU)", pytrace=False)
    if name == "cpu":  # the GPU's bfloat16 path, rehearsed on any CPU
        monkeypatch.setenv("MLPL_LAB_CPU_PRECISION", "bf16")
    return torch.device(name)

