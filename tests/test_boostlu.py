"""BoostLU's head (mlpl_lab/models/boostlu.py) and its benchmark rows.

Oracles: a naive per-class, per-location loop restating the official forward; a transcription of
the official ``ImageClassifier.forward`` (``youngwk/BridgeGapExplanationPAMC``, ``models.py``) on
identical weights; the linear head with the same weights (α = 1); autograd's finite differences;
and the LL rows' specs and grids, written without the BoostLU rows."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from mlpl_lab.models import build_model
from mlpl_lab.models.boostlu import DEFAULT_ALPHA, BoostLUHead
from mlpl_lab.models.heads import HEADS, LinearHead
from mlpl_lab.protocol import recipes
from mlpl_lab.catalogue import paper_claims


def naive(fmap, weight, bias, alpha):
    """The official forward, one class and one location at a time: z = w·f + b; z = α·z if
    z > 0 else z; the mean over the locations."""
    fmap, weight, bias = fmap.detach(), weight.detach(), bias.detach()
    B, D, h, w = fmap.shape
    C = weight.shape[0]
    out = torch.zeros(B, C, dtype=fmap.dtype)
    cam = torch.zeros(B, C, h, w, dtype=fmap.dtype)
    for b in range(B):
        for c in range(C):
            total = 0.0
            for y in range(h):
                for x in range(w):
                    z = sum(float(weight[c, d]) * float(fmap[b, d, y, x]) for d in range(D)) + float(bias[c])
                    z = alpha * z if z > 0 else z
                    cam[b, c, y, x] = z
                    total += z
            out[b, c] = total / (h * w)
    return out, cam


class Official(nn.Module):
    """``ImageClassifier`` of the official models.py from the feature map on (its backbone is the
    lab's): ``onebyone_conv``, the BoostLU line, ``adaptive_avg_pool2d``."""

    def __init__(self, feat_dim, num_classes, alpha):
        super().__init__()
        self.onebyone_conv = nn.Conv2d(feat_dim, num_classes, 1)
        self.alpha = alpha

    def forward(self, feats):
        CAM = self.onebyone_conv(feats)
        CAM = torch.where(CAM > 0, CAM * self.alpha, CAM)  # BoostLU operation
        return F.adaptive_avg_pool2d(CAM, 1).squeeze(-1).squeeze(-1)


def test_the_head_is_registered_with_the_papers_default():
    """Bug caught: the head not registered when models are imported (a spec naming it fails to
    build), or a default other than the paper's α = 5."""
    assert HEADS["boostlu"] is BoostLUHead
    assert DEFAULT_ALPHA == 5.0 and BoostLUHead(4, 3).alpha == 5.0
    model = build_model("small_cnn", 6, head="boostlu", head_kwargs={"alpha": 2.5}, width=4)
    assert isinstance(model.head, BoostLUHead) and model.head.alpha == 2.5
    assert model.head.conv.weight.shape == (6, model.feature_dim, 1, 1) and model.head.conv.bias is not None


@pytest.mark.parametrize("alpha", [5.0, 1.0, 0.5, 12.0])
def test_the_head_equals_the_naive_loop(alpha):
    """Bug caught: the boost applied to the negative part (or to both), after the pooling instead of
    before it, the bias left out of the map, or a sum instead of a mean. Oracle: :func:`naive`."""
    torch.manual_seed(1)
    head = BoostLUHead(5, 4, alpha=alpha).double()
    fmap = torch.randn(3, 5, 3, 2, dtype=torch.float64)
    want, want_cam = naive(fmap, head.conv.weight[:, :, 0, 0], head.conv.bias, alpha)
    assert (want_cam > 0).any() and (want_cam < 0).any()  # both sides of the kink are exercised
    torch.testing.assert_close(head(fmap), want, rtol=0, atol=1e-12)
    out = head.outputs(fmap)
    torch.testing.assert_close(out["logits"], want, rtol=0, atol=1e-12)
    torch.testing.assert_close(out["cam"], want_cam, rtol=0, atol=1e-12)
    torch.testing.assert_close(out["embedding"], fmap.mean(dim=(2, 3)), rtol=0, atol=0)


def test_alpha_one_is_the_linear_head():
    """A linear head is a CAM head: with α = 1 the 1x1 convolution then pooling equals pooling
    then ``Linear(D, C)`` with the same weights. Bug caught: anything the head adds besides the
    boost (a ReLU, a scale, a missing bias)."""
    torch.manual_seed(2)
    linear = LinearHead(7, 5).double()
    head = BoostLUHead(7, 5, alpha=1.0).double()
    with torch.no_grad():
        head.conv.weight.copy_(linear.fc.weight.reshape(5, 7, 1, 1))
        head.conv.bias.copy_(linear.fc.bias)
    fmap = torch.randn(4, 7, 6, 6, dtype=torch.float64)
    torch.testing.assert_close(head(fmap), linear(fmap), rtol=0, atol=1e-12)
    # and α ≠ 1 is not linear: the same weights give other logits wherever a map changes sign
    boosted = BoostLUHead(7, 5, alpha=5.0).double()
    boosted.load_state_dict(head.state_dict())
    assert (boosted(fmap) - linear(fmap)).abs().max() > 1e-3


#: notebooks/fidelity.md's comparison: (images, channels, classes, map side) x α x feature scale
FIDELITY_SIZES = [(8, 16, 5, 8), (16, 64, 20, 7), (4, 512, 80, 14), (32, 24, 20, 8), (2, 2048, 80, 7)]
FIDELITY_ALPHAS = (1.0, 2.0, 5.0, 10.0)
FIDELITY_SCALES = (1.0, 30.0)


def test_the_head_matches_the_official_forward_on_identical_weights():
    """notebooks/fidelity.md's figure (its 40 cases): logits and gradients (input map, weight, bias)
    against a transcription of the official forward on identical weights, float64, equal to the
    last bit. Bug caught: any departure from the official operations (the boost's side or place,
    the pooling: the code calls ``adaptive_avg_pool2d``, the lab takes the mean)."""
    torch.manual_seed(3)
    cases = 0
    for B, D, C, h in FIDELITY_SIZES:
        for alpha in FIDELITY_ALPHAS:
            for scale in FIDELITY_SCALES:
                lab = BoostLUHead(D, C, alpha=alpha).double()
                off = Official(D, C, alpha).double()
                off.onebyone_conv.load_state_dict(lab.conv.state_dict())
                f1 = (torch.randn(B, D, h, h, dtype=torch.float64) * scale).requires_grad_()
                f2 = f1.detach().clone().requires_grad_()
                g = torch.randn(B, C, dtype=torch.float64)
                a, b = lab(f1), off(f2)
                (a * g).sum().backward()
                (b * g).sum().backward()
                assert torch.equal(a, b), (B, D, C, h, alpha, scale)
                assert torch.equal(f1.grad, f2.grad)
                assert torch.equal(lab.conv.weight.grad, off.onebyone_conv.weight.grad)
                assert torch.equal(lab.conv.bias.grad, off.onebyone_conv.bias.grad)
                cases += 1
    assert cases == 40


def test_gradcheck_away_from_the_kink():
    """Bug caught: a boost that stops the gradient (a detached α·M, a ``clamp`` in place) or the
    wrong slope on either side. Inputs keep every map entry at least 0.05 from 0, where
    finite differences do not straddle the kink."""
    for seed in range(200):  # the first seed whose map keeps clear of the kink, on both sides
        torch.manual_seed(seed)
        head = BoostLUHead(3, 4, alpha=5.0).double()
        fmap = torch.randn(2, 3, 3, 3, dtype=torch.float64)
        with torch.no_grad():
            cam = head.conv(fmap)
        if cam.abs().min() > 0.05 and (cam > 0).any() and (cam < 0).any():
            break
    else:
        raise AssertionError("no seed gave a map clear of the kink")
    fmap.requires_grad_()
    assert torch.autograd.gradcheck(head, (fmap,), eps=1e-6, atol=1e-8)
    w, b = head.conv.weight.detach().clone().requires_grad_(), head.conv.bias.detach().clone().requires_grad_()

    def by_params(w, b):
        return torch.where((m := F.conv2d(fmap.detach(), w, b)) > 0, m * 5.0, m).mean(dim=(2, 3))

    assert torch.autograd.gradcheck(by_params, (w, b), eps=1e-6, atol=1e-8)
    # the slopes themselves: α on the positive side, 1 on the negative side
    z = torch.tensor([-2.0, -0.5, 0.5, 2.0], dtype=torch.float64, requires_grad=True)
    from mlpl_lab.models.boostlu import boostlu
    boostlu(z, 5.0).sum().backward()
    assert z.grad.tolist() == [1.0, 1.0, 5.0, 5.0]


@pytest.mark.parametrize("alpha", [0, -1.0, 0.0, float("nan"), float("inf"), "5", None, True])
def test_a_bad_alpha_is_refused_with_the_fix(alpha):
    """Bug caught: α ≤ 0 (flips or kills the positive evidence), NaN or a string accepted silently."""
    with pytest.raises(ValueError, match=r"alpha must be a finite number > 0.*head_kwargs=\{'alpha': 5\}"):
        BoostLUHead(4, 3, alpha=alpha)
    with pytest.raises(ValueError, match="alpha must be"):
        build_model("small_cnn", 3, head="boostlu", head_kwargs={"alpha": alpha}, width=4)


# ---- the benchmark rows -------------------------------------------------------------------------

BOOST = {"LL-R + BoostLU": ("LL-R", "ll_r"), "LL-Ct + BoostLU": ("LL-Ct", "ll_ct"),
         "LL-Cp + BoostLU": ("LL-Cp", "ll_cp")}


@pytest.mark.parametrize("profile", ["smoke", "cpu", "gpu"])
def test_the_boostlu_rows_are_their_ll_rows_with_the_head(profile):
    """Bug caught: a BoostLU row whose spec differs from its LL row in anything but the head (its
    method, hyperparameters, seed, data, epochs), a head that drops the profile's backbone
    settings (the small CNN's width, a ResNet's weights), or a pretraining run of its own (the
    pretrained backbone is shared: only the head is new). Oracle: the LL row's spec with the head
    written into model_kwargs by hand."""
    from mlpl_lab.chapters import benchmark
    from mlpl_lab.profiles import get_profile
    from mlpl_lab.runs.components import components, own_components

    P = get_profile(profile)
    for label, (ll, method) in BOOST.items():
        row = recipes.row(label)
        assert row.method == method and "own head" in row.note
        mine = recipes.spec_for(P, label, "single positive", 1)
        base = recipes.spec_for(P, ll, "single positive", 1)
        want_kw = dict(P.model_kwargs, head="boostlu", head_kwargs={"alpha": 5.0})
        assert mine.train["model_kwargs"] == want_kw
        assert mine.replace(train=dict(mine.train, model_kwargs=base.train["model_kwargs"])) == base
        assert mine.backbone_from == base.backbone_from and mine.backbone_from is not None
        assert mine.key != base.key
        # its own network has the BoostLU head; the pretraining run it starts from keeps the linear one
        assert set(own_components(mine)) == set(own_components(base)) - {"head.linear"} | {"head.boostlu"}
        assert set(components(mine)) == set(components(base)) | {"head.boostlu"}


def test_the_boostlu_rows_get_their_ll_rows_grid_and_claim():
    """Bug caught: an unequal budget (a BoostLU row tuned on another grid than the loss it shares)
    or a paper claim cited to the wrong work."""
    from mlpl_lab.chapters import benchmark
    from mlpl_lab.protocol import tuning
    from mlpl_lab.core.bibliography import cite

    for label, (ll, _) in BOOST.items():
        assert tuning.GRIDS[label] == tuning.GRIDS[ll]
        assert tuning.trial_points(label, tuning.TRIALS) == tuning.trial_points(ll, tuning.TRIALS)
    assert cite("boostlu") == "BoostLU (CVPR 2023)"  # the paper's venue, written by hand
    assert paper_claims()["LL-R + BoostLU"].startswith("BoostLU (CVPR 2023)")
    left = benchmark.left_out(benchmark.design("cpu"))
    for label in BOOST:  # the cpu grid does not run them, and says so
        assert any(label in line for line in left), label


def test_a_smoke_run_of_ll_r_with_the_head_trains_and_stores(tmp_path):
    """The whole path: the benchmark row's spec → the run store → engine.fit → a stored network
    whose head is BoostLU with α = 5 and whose logits are the naive loop's on its own weights.
    Bug caught: model_kwargs' head not reaching the model, the head's kwargs lost, a head the
    backbone transfer, the training loop or channels_last cannot run, or a stored run that reloads
    with another head."""
    from mlpl_lab.chapters import benchmark
    from mlpl_lab.profiles import get_profile
    from mlpl_lab.runs.components import components
    from mlpl_lab.runs.ensure import execute
    from mlpl_lab.runs.store import RunStore
    from mlpl_lab.viz.cam import as_model

    small = {"n_train": 64, "n_val": 32, "n_test": 32}
    P = get_profile("smoke", epochs=2, seeds=[0], channels_last=True, **small,  # cpu's NHWC too
                    pretrain=dict(get_profile("smoke").pretrain, epochs=1, **small))
    spec = recipes.spec_for(P, "LL-R + BoostLU", "single positive", 0)
    assert spec.backbone_from is not None  # the benchmark's protocol: the pretrained backbone, a fresh head
    assert "head.boostlu" in components(spec) and "head.boostlu" not in components(spec.backbone_from)
    assert spec.method == "ll_r" and spec.train["model_kwargs"]["head"] == "boostlu"
    run = execute(spec, store=RunStore(tmp_path / "runs"))
    assert len(run.history) == 2 and all(math.isfinite(row["loss"]) for row in run.history)
    # LL-R's clean-rate schedule ran on the boosted logits: AN in epoch 1, 1 - Δ_rel in epoch 2
    assert [row["clean_rate"] for row in run.history] == pytest.approx([1.0, 0.998])
    net = as_model(run.method)
    assert isinstance(net.head, BoostLUHead) and net.head.alpha == 5.0
    net = net.double().eval()
    x = torch.randn(2, 3, P.image_size, P.image_size, dtype=torch.float64)
    with torch.no_grad():
        fmap = net.feature_map(x)
        want, _ = naive(fmap, net.head.conv.weight[:, :, 0, 0], net.head.conv.bias, 5.0)
        got = net(x)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-10)
