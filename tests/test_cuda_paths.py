"""CUDA-only paths as far as a CPU can check them (issue 14), and the peak-memory probe."""
from __future__ import annotations

import os

import pytest
import torch

from mlpl_lab import train as train_mod
from mlpl_lab.memory import PeakMemory
from mlpl_lab.profiles import get_profile
from mlpl_lab.runner import build_splits, config_of


def test_no_pinning_and_no_async_copies_without_cuda(monkeypatch):
    calls, copies = [], []
    real_iter, real_to = train_mod.iterate_batches, torch.Tensor.to

    def spy_iter(*a, **kw):
        calls.append(kw.get("pin_memory", False))
        return real_iter(*a, **kw)

    def spy_to(self, *a, **kw):
        copies.append(kw.get("non_blocking", False))
        return real_to(self, *a, **kw)

    monkeypatch.setattr(train_mod, "iterate_batches", spy_iter)
    monkeypatch.setattr(torch.Tensor, "to", spy_to)
    spec = get_profile("smoke").spec("an", epochs=1, probes=[])
    s = build_splits(spec, cache=False)
    train_mod.fit("an", s.train, s.val, s.test, config_of(spec, progress=False, device="cpu"))
    assert calls and not any(calls)
    assert copies and not any(copies)


def test_batches_are_not_pinned_by_default_and_pinned_when_asked_under_cuda():
    spec = get_profile("smoke").spec("an")
    s = build_splits(spec, cache=False)
    batch = next(train_mod.iterate_batches(s.train, 8, shuffle=False, drop_last=True))
    assert not batch["image"].is_pinned()
    if torch.cuda.is_available():  # pinning needs a CUDA driver
        batch = next(train_mod.iterate_batches(s.train, 8, shuffle=False, drop_last=True, pin_memory=True))
        assert batch["image"].is_pinned()


def test_peak_memory_sees_a_large_allocation():
    probe = PeakMemory(torch.device("cpu"))
    if probe.mib() is None:  # not Linux
        return
    x = torch.ones(64 * 2**20 // 4)  # 64 MiB, touched
    assert float(x.sum()) > 0
    assert probe.mib() >= 60
    del x
    again = PeakMemory(torch.device("cpu"))  # a new probe starts from the current size
    assert again.mib() < 60


def test_runs_record_peak_memory():
    spec = get_profile("smoke").spec("an", epochs=1, probes=[])
    s = build_splits(spec, cache=False)
    r = train_mod.fit("an", s.train, s.val, s.test, config_of(spec, progress=False, device="cpu"))
    peak = r.history[-1]["peak_memory_mib"]
    if os.path.exists("/proc/self/clear_refs"):  # Linux: measured
        assert peak is not None and peak >= 0
    else:
        assert peak is None
    assert r.history[-1]["world_size"] == 1


def test_channels_last_changes_the_layout_not_the_numbers():
    spec = get_profile("smoke").spec("an", epochs=1, probes=[])
    s = build_splits(spec, cache=False)
    plain = train_mod.fit("an", s.train, s.val, s.test, config_of(spec, progress=False, device="cpu"))
    nhwc = train_mod.fit("an", s.train, s.val, s.test,
                         config_of(spec, progress=False, device="cpu", channels_last=True))
    w = nhwc.method.net.backbone[0][0].weight
    assert w.is_contiguous(memory_format=torch.channels_last) and not w.is_contiguous()
    assert nhwc.history[0]["loss"] == pytest.approx(plain.history[0]["loss"], rel=1e-4)
    assert nhwc.history[0]["val_mAP"] == pytest.approx(plain.history[0]["val_mAP"], abs=0.5)


def test_no_scale_read_per_step_for_methods_without_a_step_hook(monkeypatch):
    """GradScaler.get_scale() copies the scale to the host (a sync per step under CUDA AMP):
    the loop reads it only for methods that act after a step (EMA or their own on_step_end)."""
    reads = []
    real = torch.amp.GradScaler.get_scale

    def spy(self):
        reads.append(1)
        return real(self)

    monkeypatch.setattr(torch.amp.GradScaler, "get_scale", spy)
    monkeypatch.setattr(torch.amp.GradScaler, "is_enabled", lambda self: True)  # as under CUDA AMP
    spec = get_profile("smoke").spec("an", epochs=1, probes=[])
    s = build_splits(spec, cache=False)
    train_mod.fit("an", s.train, s.val, s.test, config_of(spec, progress=False, device="cpu"))
    assert reads == []
    from mlpl_lab.methods import build_method

    lac_like = build_method("lac_an")  # EMA per epoch: its steps need the check
    spec2 = get_profile("smoke").spec("lac_an", epochs=1, probes=[], model_kwargs={"width": 8, "head": "label_query"})
    s2 = build_splits(spec2, cache=False)
    train_mod.fit(lac_like, s2.train, s2.val, s2.test, config_of(spec2, progress=False, device="cpu"))
    assert len(reads) > 0
