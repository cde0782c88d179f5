"""CUDA AMP on a real device (``make test-gpu``, marker ``gpu``; issue 34): bfloat16 autocast
without loss scaling where the device has bfloat16 (compute capability 8.0 on: Ampere, Hopper,
...), float16 with a GradScaler only on older devices; the run store records the dtype the steps
used. It needs CUDA and fails (does not skip) without it; ``MLPL_LAB_GPU_TEST_DEVICE=cpu`` runs it
on the CPU (conftest.py: ``check.sh --rehearse``)."""
from __future__ import annotations

import pytest
import torch


from mlpl_lab.runs.environment import numeric_environment
from mlpl_lab.engine import train as train_mod
from mlpl_lab.profiles import get_profile
from mlpl_lab.runs.splits_cache import build_splits
from mlpl_lab.runs.validation import config_of

from gpu_oracle import native_bfloat16

pytestmark = pytest.mark.gpu


def test_cuda_amp_autocasts_to_bfloat16_where_the_device_has_it(monkeypatch, device):
    native = native_bfloat16(device)
    want = torch.bfloat16 if native else torch.float16
    scalers, casts = [], []
    real_init, real_autocast = torch.amp.GradScaler.__init__, torch.autocast

    def scaler_init(self, device="cuda", *a, enabled=True, **kw):
        scalers.append(bool(enabled))
        real_init(self, device, *a, enabled=enabled, **kw)

    def autocast(device_type, dtype=None, enabled=True, **kw):
        casts.append((device_type, dtype, bool(enabled)))
        return real_autocast(device_type, dtype=dtype, enabled=enabled, **kw)

    monkeypatch.setattr(torch.amp.GradScaler, "__init__", scaler_init)
    monkeypatch.setattr(torch, "autocast", autocast)
    spec = get_profile("smoke").spec("an", epochs=1, probes=[], amp=True)
    s = build_splits(spec, cache=False)
    r = train_mod.fit("an", s.train, s.val, s.test, config_of(spec, progress=False, device=str(device)))
    assert set(casts) == {(device.type, want, True)}
    assert scalers == [not native]  # loss scaling only in the float16 fallback
    assert torch.isfinite(torch.tensor(r.history[-1]["loss"]))
    assert numeric_environment(spec)["amp_dtype"] == str(want).removeprefix("torch.")
