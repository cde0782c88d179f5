"""The gpu profile's training step on the device (issue 49; ``make test-gpu``, ``check.sh``):
ResNet-18 at 64 px under bfloat16 autocast where the device has it, networks and batches NHWC
(``channels_last``, as the check measures the step), the training split held on the device for the
whole run (no per-step copy from the host) and every batch the method sees already there. Needs
CUDA and fails without it; ``MLPL_LAB_GPU_TEST_DEVICE=cpu`` runs it on the CPU (conftest.py)."""
from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from mlpl_lab.engine import train as train_mod
from mlpl_lab.methods import build_method
from mlpl_lab.profiles import get_profile
from mlpl_lab.runs.splits_cache import build_splits
from mlpl_lab.runs.validation import config_of

from gpu_oracle import native_bfloat16

pytestmark = pytest.mark.gpu


def test_the_gpu_step_trains_nhwc_from_the_split_held_on_the_device(monkeypatch, device):
    P = get_profile("gpu")
    spec = P.spec("an", scene={"n_train": 256, "n_val": 64, "n_test": 64}, epochs=2, probes=[],
                  test_every_epoch=False)
    assert (spec.train["model"], spec.data["image_size"], spec.train["amp"]) == ("resnet18", 64, True)
    splits = build_splits(spec, cache=False)
    cfg = replace(config_of(spec, progress=False, device=str(device)), channels_last=True)

    resident = []

    class Recording(train_mod.DeviceSplit):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            resident.append(self)

    monkeypatch.setattr(train_mod, "DeviceSplit", Recording)
    method = build_method("an")
    seen = []
    real_step = method.training_step

    def step(batch, epoch):
        x = batch["image"]
        with torch.no_grad():
            logits = method.net(x)  # what the step computes under the loop's autocast
        seen.append({"devices": {v.device.type for v in batch.values() if torch.is_tensor(v)},
                     "nhwc": x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous(),
                     "shape": tuple(x.shape), "dtype": logits.dtype,
                     "autocast": torch.is_autocast_enabled(device.type)})
        return real_step(batch, epoch)

    monkeypatch.setattr(method, "training_step", step)
    r = train_mod.fit(method, splits.train, splits.val, splits.test, cfg)

    want = torch.bfloat16 if native_bfloat16(device) else torch.float16
    steps = 2 * (256 // spec.train["batch_size"])
    assert len(seen) == steps
    assert all(s["devices"] == {device.type} for s in seen), seen  # nothing from the host
    assert all(s["nhwc"] and s["shape"] == (spec.train["batch_size"], 3, 64, 64) for s in seen), seen
    assert all(s["autocast"] and s["dtype"] == want for s in seen), seen
    # one split on the device for the run: every training image, padded, NHWC
    assert len(resident) == 1 and len(resident[0]) == 256
    assert resident[0].images.device.type == device.type
    assert all(v.device.type == device.type for v in resident[0].rows.values())
    # the network is NHWC (its 4-d weights) and on the device
    convs = [p for p in method.net.parameters() if p.ndim == 4]
    assert convs and all(p.is_contiguous(memory_format=torch.channels_last) for p in convs)
    assert {p.device.type for p in method.net.parameters()} == {device.type}
    assert all(torch.isfinite(torch.tensor(row["loss"])) for row in r.history)
