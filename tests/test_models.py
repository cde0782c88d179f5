"""Models: shapes, documented attributes, and offline behaviour of pretrained weights."""
from __future__ import annotations

import time
import urllib.error

import pytest
import torch

from mlpl_lab.models import ResNetClassifier, SmallCNN, WeightsUnavailableError, build_model
from mlpl_lab.models import resnet as resnet_mod


@pytest.mark.parametrize("name, size", [("small_cnn", 32), ("resnet18", 64)])
def test_forward_shapes_and_attributes(name, size):
    model = build_model(name, 20)
    x = torch.rand(2, 3, size, size)
    assert model(x).shape == (2, 20)
    assert model.embed(x).shape == (2, model.feature_dim)
    fmap = model.feature_map(x)
    assert fmap.shape[:2] == (2, model.feature_dim)
    assert isinstance(model.classifier, torch.nn.Linear)
    assert any(m is model.last_conv for m in model.modules())


def test_small_cnn_parameter_budget():
    n = sum(p.numel() for p in SmallCNN(20).parameters())
    assert 100_000 <= n <= 500_000


def test_unknown_model_and_bad_input():
    with pytest.raises(ValueError, match="unknown model"):
        build_model("vgg", 20)
    with pytest.raises(ValueError, match="expected images"):
        SmallCNN(20)(torch.rand(3, 32, 32))
    with pytest.raises(ValueError, match="unknown weights"):
        ResNetClassifier(20, "resnet18", weights="IMAGENET9K")


def test_missing_weights_fail_fast_with_instructions(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))

    def offline(*args, **kwargs):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(torch.hub, "load_state_dict_from_url", offline)
    t0 = time.perf_counter()
    with pytest.raises(WeightsUnavailableError) as err:
        build_model("resnet18", 20, weights="IMAGENET1K_V1")
    assert time.perf_counter() - t0 < 10
    msg = str(err.value)
    assert "resnet18" in msg and "IMAGENET1K_V1" in msg
    assert str(tmp_path / "hub" / "checkpoints") in msg and "weights=None" in msg


def test_cached_weights_load_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    weight = resnet_mod.weights_enum("resnet18", "IMAGENET1K_V1")
    path = resnet_mod.cache_path(weight)
    path.parent.mkdir(parents=True)
    import torchvision

    reference = torchvision.models.resnet18(weights=None)
    torch.save(reference.state_dict(), path)
    monkeypatch.setattr(torch.hub, "load_state_dict_from_url",
                        lambda *a, **k: pytest.fail("must not download when cached"))
    model = build_model("resnet18", 20, weights="IMAGENET1K_V1")
    assert torch.equal(model.backbone[0].weight, reference.conv1.weight)
