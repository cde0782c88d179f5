"""``Method.batch_labels``: the rows of the method's current labels, with the label matrix kept
on an accelerator between steps (issue 34: no per-step host-to-device copy) and renewed when the
labels change. The 'meta' device stands in for an accelerator (shapes only, no values)."""
from __future__ import annotations

import torch

from mlpl_lab.methods import build_method


def _method(labels):
    m = build_method("an")
    m.labels = labels
    return m


def test_rows_on_the_cpu_are_the_labels_rows():
    labels = torch.tensor([[1, 0, -1], [-1, -1, 1], [0, 1, 0]])
    m = _method(labels)
    index = torch.tensor([2, 0, 2])
    got = m.batch_labels({"image": torch.zeros(3, 1), "index": index})
    want = torch.stack([labels[int(i)] for i in index])  # naive loop
    assert torch.equal(got, want)


def test_the_device_copy_is_made_once_and_renewed_when_the_labels_change():
    """Bugs caught: a copy per step (the cache never hit), a stale copy after LL-R's in-place
    correction or after the labels were replaced (a checkpoint's labels loaded)."""
    m = _method(torch.tensor([[1, 0], [-1, 1]]))
    batch = {"image": torch.empty(2, 1, device="meta"), "index": torch.tensor([1, 0])}
    first = m.batch_labels(batch)
    assert first.device.type == "meta" and first.shape == (2, 2)
    copy = m._labels_on_device[1]
    m.batch_labels(batch)
    assert m._labels_on_device[1] is copy  # reused: no new host-to-device copy
    m.labels[0, 1] = 1  # in place, as LL-R corrects labels
    m.batch_labels(batch)
    assert m._labels_on_device[1] is not copy
    copy = m._labels_on_device[1]
    m.labels = torch.tensor([[0, 0], [0, 0]])  # replaced, as load_state_dict does
    m.batch_labels(batch)
    assert m._labels_on_device[1] is not copy
