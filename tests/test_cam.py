"""The multi-label Grad-CAM wrapper and the localisation scores."""
from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch

from mlpl_lab.models import SmallCNN
from mlpl_lab.viz.cam import (class_cams, class_status, evaluate_localisation, localisation_scores,
                              pair_cams, plot_cam_gallery, target_layer)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    m = SmallCNN(num_classes=5, width=4)
    with torch.no_grad():  # a few non-trivial BN statistics
        m.train()
        m(torch.rand(8, 3, 16, 16))
    return m


def manual_gradcam(model, image, k):
    """Independent Grad-CAM: mean-pooled gradients of logit k weight the last_conv map."""
    acts = {}
    h = model.last_conv.register_forward_hook(lambda mod, i, o: acts.setdefault("a", o))
    model.eval()
    try:
        logit = model(image[None])[0, k]
        (g,) = torch.autograd.grad(logit, acts["a"])
    finally:
        h.remove()
    cam = torch.relu((g.mean((2, 3), keepdim=True) * acts["a"]).sum(1))[0].detach().numpy()
    cam = cam - cam.min()
    cam = cam / (1e-7 + cam.max())
    cam = cv2.resize(np.float32(cam), image.shape[-2:][::-1])
    cam = cam - cam.min()                   # the library rescales again after upsampling
    return cam / (1e-7 + cam.max())


def test_maps_match_independent_gradcam_per_class(model):
    image = torch.rand(3, 16, 16)
    maps = class_cams(model, image, [0, 3, 4])
    assert maps.shape == (3, 16, 16)                      # the image's size
    for row, k in zip(maps, (0, 3, 4)):
        np.testing.assert_allclose(row, manual_gradcam(model, image, k), atol=1e-5)
    assert not np.allclose(maps[0], maps[1])              # one target per class, not argmax


def test_bad_class_index_and_count_raise(model):
    image = torch.rand(3, 16, 16)
    with pytest.raises(IndexError, match="out of range"):
        class_cams(model, image, [1, 5])
    with pytest.raises(IndexError):
        class_cams(model, image, [-1])
    with pytest.raises(ValueError, match="one class per image"):
        pair_cams(model, torch.rand(3, 3, 16, 16), [0, 1])
    with pytest.raises(AttributeError, match="last_conv"):
        target_layer(torch.nn.Linear(2, 2))


@pytest.mark.parametrize("mode", [True, False])
def test_training_mode_restored_and_hooks_released(model, mode):
    model.train(mode)
    model.classifier.train(not mode)   # a mixed state must come back exactly
    before = {name: m.training for name, m in model.named_modules()}
    frozen = next(model.parameters())
    frozen.requires_grad_(False)       # a frozen layer stays frozen, the others trainable
    grads = {name: p.requires_grad for name, p in model.named_parameters()}
    class_cams(model, torch.rand(3, 16, 16), [2])
    assert {name: m.training for name, m in model.named_modules()} == before
    assert {name: p.requires_grad for name, p in model.named_parameters()} == grads
    assert all(p.grad is None for p in model.parameters())  # no gradient left on the weights
    assert not model.last_conv._forward_hooks
    frozen.requires_grad_(True)
    with torch.no_grad():              # works inside no_grad (notebooks often are)
        assert class_cams(model, torch.rand(3, 16, 16), [1]).shape == (1, 16, 16)


def test_localisation_scores_reference_cases():
    mask = np.zeros((2, 8, 8), bool)
    mask[:, 2:4, 1:5] = True           # area share 8/64
    perfect = localisation_scores(mask.astype(float), mask)
    assert np.allclose(perfect["energy"], 1) and np.allclose(perfect["pointing"], 1)
    flat = localisation_scores(np.ones((2, 8, 8)), mask)
    assert np.allclose(flat["energy"], 8 / 64) and np.allclose(flat["pointing"], 8 / 64)
    zero = localisation_scores(np.zeros((2, 8, 8)), mask)  # Grad-CAM's output for a flat map
    assert np.allclose(zero["energy"], 8 / 64) and np.allclose(zero["pointing"], 8 / 64)
    off = np.zeros((2, 8, 8))
    off[:, 7, 7] = 1.0
    miss = localisation_scores(off, mask)
    assert np.allclose(miss["energy"], 0) and np.allclose(miss["pointing"], 0)
    half = np.zeros((8, 8))
    half[2, 1] = 1.0
    half[7, 7] = 1.0
    assert localisation_scores(half, mask[0])["energy"][0] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="empty"):
        localisation_scores(np.ones((1, 8, 8)), np.zeros((1, 8, 8), bool))


def test_evaluate_localisation_and_gallery_on_scenes(model):
    from mlpl_lab.data import make_splits

    sp = make_splits(24, 8, 16, seed=2, image_size=16)
    m = SmallCNN(num_classes=sp.train.num_classes, width=4)
    scores = evaluate_localisation(m, sp.test)
    assert scores["pairs"] == int(sp.test.labels.sum())
    assert 0 <= scores["energy"] <= 1 and 0 <= scores["pointing"] <= 1 and 0 < scores["area"] < 1
    hidden = evaluate_localisation(m, sp.train, which="hidden")
    assert hidden["pairs"] == int(((sp.train.labels == 1) & (sp.train.observed != 1)).sum())
    from mlpl_lab.viz.cam import hidden_examples

    idx = hidden_examples(sp.train, n=1, min_objects=2)
    fig = plot_cam_gallery({"A": m, "B": m}, sp.train, idx)
    titles = [ax.get_title() for ax in fig.axes]
    assert any("hidden positive" in t for t in titles) and any("not present" in t for t in titles)
    assert class_status(1, 1) == "observed positive" and class_status(-1, 1) == "hidden positive"
    assert class_status(-1, 0) == "not present"
