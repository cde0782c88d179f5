"""CUDA-only paths as far as a CPU can check them (issue 14), and the peak-memory probe."""
from __future__ import annotations

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


def test_batches_are_pinned_when_asked():
    spec = get_profile("smoke").spec("an")
    s = build_splits(spec, cache=False)
    if not torch.cuda.is_available():  # pinning needs a CUDA driver; the flag still reaches it
        batch = next(train_mod.iterate_batches(s.train, 8, shuffle=False, drop_last=True))
        assert not batch["image"].is_pinned()
        return
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
    assert r.history[-1]["peak_memory_mib"] is None or r.history[-1]["peak_memory_mib"] >= 0
    assert r.history[-1]["world_size"] == 1
