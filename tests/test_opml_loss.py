"""OPML / ZLPR / soft OPML losses, the high-rank penalty, and OPML-SP's smoothing and correction."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from mlpl_lab import losses
from mlpl_lab.methods.opml_ap import train_ap_observed
from mlpl_lab.losses.opml import high_rank_penalty, opml_loss, soft_opml_loss, zlpr_loss
from mlpl_lab.methods import build_method
from mlpl_lab.methods.opml import apply_label_correction, correction_counts, opml_objective, smoothing_targets
from mlpl_lab.viz.gradients import loss_and_gradient


def naive_opml(s, y, alpha=1.0, beta=1.0, t=None):
    """Independent per-row formula with Python floats: Eq. 6 (t=None) or Eq. 11 (soft t)."""
    out = []
    for i in range(s.shape[0]):
        neg, pos = [], []
        for j in range(s.shape[1]):
            target = float(y[i, j] == 1) if t is None else float(t[i, j])
            if target < 1:
                neg.append((1 - target) * math.exp(float(s[i, j])))
            if target > 0:
                pos.append(target * math.exp(-float(s[i, j])))
        val = 0.0
        if neg:
            val += math.log(alpha + sum(neg))
        if pos:
            val += math.log(beta + sum(pos))
        out.append(val)
    return np.array(out)


def random_case(n=7, c=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    s = torch.randn(n, c, generator=g, dtype=torch.float64) * 2
    y = torch.randint(-1, 2, (n, c), generator=g)
    y[0] = -1          # a row without positive
    y[1] = 1           # a row without negative
    y[2] = torch.tensor([1] + [-1] * (c - 1))  # single positive
    return s, y


@pytest.mark.parametrize("a,b", [(0.0, 0.0), (1.5, -0.5), (-2.0, 2.0)])
def test_value_matches_independent_formula(a, b):
    s, y = random_case()
    got = opml_loss(s, y, a=a, b=b, reduction="none").numpy()
    want = naive_opml(s.numpy(), y.numpy(), math.exp(a), math.exp(b))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert opml_loss(s, y, a=a, b=b).item() == pytest.approx(want.mean(), rel=1e-12)
    assert opml_loss(s, y, a=a, b=b, reduction="sum").item() == pytest.approx(want.sum(), rel=1e-12)
    # raw constants are the same loss
    np.testing.assert_allclose(opml_loss(s, y, alpha=math.exp(a), beta=math.exp(b), reduction="none").numpy(), want, rtol=1e-12)


def test_gradient_matches_independent_formula_and_gradcheck():
    s, y = random_case(seed=3)
    a, b = 0.7, -0.3
    x = s.clone().requires_grad_(True)
    opml_loss(x, y, a=a, b=b, reduction="sum").backward()
    # Eq. 9, general form: ∂/∂s_n = e^{s_n}/(α + Σ_neg e^s);  ∂/∂s_p = -e^{-s_p}/(β + Σ_pos e^{-s})
    sn, yn = s.numpy(), y.numpy()
    want = np.zeros_like(sn)
    for i in range(sn.shape[0]):
        pos = yn[i] == 1
        zn = math.exp(a) + np.exp(sn[i][~pos]).sum()
        zp = math.exp(b) + np.exp(-sn[i][pos]).sum()
        want[i][~pos] = np.exp(sn[i][~pos]) / zn
        want[i][pos] = -np.exp(-sn[i][pos]) / zp
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-10, atol=1e-12)
    assert torch.autograd.gradcheck(lambda z: opml_loss(z, y, a=a, b=b), (s.clone().requires_grad_(True),))
    t = torch.rand(s.shape, dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda z: soft_opml_loss(z, y, eps=t, a=a, b=b), (s.clone().requires_grad_(True),))


def test_extreme_logits_are_finite():
    y = torch.tensor([[1, -1, -1, 0], [-1, -1, -1, -1], [1, 1, 1, 1]])
    for scale in (1e2, 1e4, 1e30):
        for sign in (1, -1):
            x = (sign * scale * torch.tensor([[1., -1, 1, -1], [1, 1, 1, 1], [-1, -1, -1, -1]])).requires_grad_(True)
            val = opml_loss(x, y, a=1.0, b=-1.0)
            val.backward()
            assert torch.isfinite(val) and torch.isfinite(x.grad).all()
    # bounded below by log α + log β per row with both terms
    s = torch.tensor([[50.0, -50.0]])
    assert opml_loss(s, torch.tensor([[1, -1]]), a=0.3, b=0.2).item() == pytest.approx(0.5, abs=1e-9)


def test_zlpr_against_its_own_formula():
    """ZLPR (Su et al. 2022), written here: log(1 + Σ_neg e^s) + log(1 + Σ_pos e^-s) per row."""
    s, y = random_case(seed=7)
    want = []
    for i in range(s.shape[0]):
        neg = sum(math.exp(float(v)) for v, t in zip(s[i], y[i]) if t != 1)
        pos = sum(math.exp(-float(v)) for v, t in zip(s[i], y[i]) if t == 1)
        want.append(math.log(1 + neg) + math.log(1 + pos))
    got = zlpr_loss(s, y, reduction="none")
    assert got.tolist() == pytest.approx(want, rel=1e-6)


def test_zlpr_is_opml_at_zero_and_registered():
    s, y = random_case(seed=5)
    assert torch.equal(zlpr_loss(s, y, reduction="none"), opml_loss(s, y, reduction="none"))
    assert losses.get("zlpr") is zlpr_loss and losses.get("opml") is opml_loss
    assert losses.get("opml_soft") is soft_opml_loss
    assert not torch.equal(opml_loss(s, y, a=1.0, reduction="none"), zlpr_loss(s, y, reduction="none"))


def test_positive_gradient_equals_bce_and_negatives_get_less():
    grid = np.linspace(-8, 8, 41)
    ctx = [0.5, -1.0, 2.0, 0.0]
    opml = loss_and_gradient("opml", 1, grid, ctx, [-1] * 4)["grad"]
    np.testing.assert_allclose(opml, 1 / (1 + np.exp(-grid)) - 1, atol=1e-12)  # σ(s_p) − 1, Eq. 9
    bce = loss_and_gradient("an", 1, grid, ctx, [-1] * 4)["grad"]
    np.testing.assert_allclose(opml, bce, atol=1e-12)
    # one unknown: strictly smaller than BCE's σ(s_n), and all negatives together below 1
    unk = loss_and_gradient("opml", -1, grid, [0.0] + ctx[1:], [1, -1, -1, -1])["grad"]
    assert np.all(unk < 1 / (1 + np.exp(-grid))) and np.all(unk > 0)
    s = torch.tensor([[0.0] + [3.0] * 19], requires_grad=True)
    opml_loss(s, torch.tensor([[1] + [-1] * 19]), reduction="sum").backward()
    assert 0 < s.grad[0, 1:].sum() < 1
    # b moves the positive's threshold: β = e^b multiplies e^{s_p} in -1/(1 + β e^{s_p})
    g = loss_and_gradient("opml", 1, [0.0], ctx, [-1] * 4, b=math.log(3))["grad"][0]
    assert g == pytest.approx(-1 / (1 + 3.0))


def test_soft_form_reduces_to_hard_and_matches_formula():
    s, y = random_case(seed=7)
    assert torch.allclose(soft_opml_loss(s, y, eps=0.0, a=0.4, reduction="none"),
                          opml_loss(s, y, a=0.4, reduction="none"), atol=1e-12)
    eps = torch.rand(s.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) * 0.9 + 0.05
    t = torch.where(y == -1, eps, (y == 1).double())
    got = soft_opml_loss(s, y, eps=eps, a=0.2, b=-0.1, reduction="none").numpy()
    np.testing.assert_allclose(got, naive_opml(s.numpy(), y.numpy(), math.exp(0.2), math.exp(-0.1), t.numpy()), rtol=1e-6)


def test_bad_inputs_raise_clear_errors():
    s = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="outside"):
        opml_loss(s, torch.tensor([[2, 0, 1], [1, 0, 0]]))
    with pytest.raises(ValueError, match="shape"):
        opml_loss(s, torch.zeros(2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="alpha"):
        opml_loss(s, torch.ones(2, 3, dtype=torch.long), alpha=0.0)
    with pytest.raises(ValueError, match="eps"):
        soft_opml_loss(s, -torch.ones(2, 3, dtype=torch.long), eps=1.5)
    with pytest.raises(ValueError, match="reduction"):
        opml_loss(s, torch.ones(2, 3, dtype=torch.long), reduction="batchmean")
    with pytest.raises(ValueError, match="delta"):
        high_rank_penalty(torch.rand(4, 3), delta=0)
    with pytest.raises(ValueError, match="probabilities"):
        high_rank_penalty(torch.randn(4, 3) * 5)
    with pytest.raises(TypeError, match="hyperparameter"):
        build_method("zlpr", a=1.0)
    with pytest.raises(ValueError):
        build_method("opml", smoothing_form="cubic")


@pytest.mark.parametrize("b_rows,c", [(5, 12), (12, 5), (8, 8)])
def test_high_rank_forms_agree_and_match_singular_values(b_rows, c):
    p = torch.rand(b_rows, c, dtype=torch.float64, generator=torch.Generator().manual_seed(b_rows))
    delta = 1e-2
    sv = torch.linalg.svdvals(p)
    want = -(torch.log(sv ** 2 + delta).sum() + max(c - b_rows, 0) * math.log(delta))  # C x C eigenvalues
    grads = []
    for form in ("B", "C"):
        x = p.clone().float().requires_grad_(True)
        val = high_rank_penalty(x, delta=delta, form=form)
        val.backward()
        assert val.dtype == torch.float32
        assert val.item() == pytest.approx(want.item(), rel=1e-4, abs=1e-3)
        grads.append(x.grad)
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-3, atol=1e-4)
    # gradient = -2 P (PᵀP + δI)^{-1} (the notes' closed form), checked against autograd
    closed = -2 * p @ torch.linalg.inv(p.T @ p + delta * torch.eye(c, dtype=p.dtype))
    torch.testing.assert_close(grads[1].double(), closed, rtol=1e-3, atol=1e-3)


def test_high_rank_outside_autocast_and_rewards_spread_columns():
    p = torch.rand(6, 4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        val = high_rank_penalty(p)
    assert val.dtype == torch.float32 and val.item() == pytest.approx(high_rank_penalty(p).item(), rel=1e-5)
    same = torch.full((6, 4), 0.5)                 # rank 1: every label predicted alike
    spread = torch.eye(6, 4) * 0.9 + 0.05          # rank 4: labels pushed apart
    assert high_rank_penalty(spread) < high_rank_penalty(same)


def test_objective_adds_lambda_times_penalty():
    s, y = random_case(seed=2)
    s = s.float()
    base, _ = opml_objective(s, y, a=0.5)
    total, parts = opml_objective(s, y, a=0.5, hr_lambda=0.01)
    assert total.item() == pytest.approx(base.item() + 0.01 * high_rank_penalty(torch.sigmoid(s)).item(), rel=1e-5)
    assert set(parts) == {"opml", "high_rank"}


def test_smoothing_targets():
    p = torch.tensor([[0.2, 0.8], [1.0, 0.5]])
    ap = torch.tensor([0.5, 1.0], dtype=torch.float64)
    torch.testing.assert_close(smoothing_targets(p, ap, 2.0), torch.tensor([[0.05, 0.8], [0.25, 0.5]]))
    torch.testing.assert_close(smoothing_targets(p, ap, 2.0, "product_power"),
                               torch.tensor([[0.01, 0.64], [0.25, 0.25]]))
    assert torch.equal(smoothing_targets(p, torch.zeros(2), 1.0), torch.zeros(2, 2))


def test_correction_counts_formula_and_cap():
    ap = torch.tensor([1.0, 0.5, 0.0, 0.75])
    k = correction_counts(ap, num_train=1000, ratio=0.1)
    assert k.tolist() == [0, 50, 100, 25]   # ⌊N r (1 − AP_j)⌋
    capped = correction_counts(ap, 1000, 0.1, n_observed=torch.tensor([10, 10, 10, 10]), cap=3.0)
    assert capped.tolist() == [0, 30, 30, 25]


def test_correction_flips_exactly_k_unknowns_per_class():
    g = torch.Generator().manual_seed(0)
    labels = torch.randint(-1, 2, (200, 5), generator=g)
    scores = torch.rand(200, 5, generator=g)
    k = torch.tensor([0, 3, 10, 1000, 7])
    new, flipped = apply_label_correction(labels, scores, k)
    for j in range(5):
        n_unknown = int((labels[:, j] == -1).sum())
        assert int(flipped[:, j].sum()) == min(int(k[j]), n_unknown)
        assert bool((labels[flipped[:, j], j] == -1).all())          # only unknown ones
        if 0 < k[j] < n_unknown:                                     # the highest-scoring unknowns
            chosen = scores[flipped[:, j], j].min()
            rest = scores[(labels[:, j] == -1) & ~flipped[:, j], j].max()
            assert chosen >= rest
    assert torch.equal(new[~flipped], labels[~flipped]) and bool((new[flipped] == 1).all())


def test_train_ap_reading_of_unknowns():
    observed = torch.tensor([[1, -1], [-1, 1], [-1, -1], [1, -1]])
    probs = torch.tensor([[0.9, 0.1], [0.8, 0.7], [0.3, 0.9], [0.2, 0.4]])
    lit = train_ap_observed(probs, observed, unknowns="ignore")
    assert lit.tolist() == [1.0, 1.0]       # no negatives left: degenerate, hence the default
    an = train_ap_observed(probs, observed)
    assert an[0] < 1 and an[1] < 1


def test_opml_sp_trains_and_corrects_only_unknowns():
    from mlpl_lab.data import make_splits
    from mlpl_lab.engine.train import TrainConfig, fit

    sp = make_splits(96, 32, 32, seed=1, image_size=16)
    m = build_method("opml_sp", correction_ratio=0.05, correction_start=0)
    res = fit(m, sp.train, sp.val, sp.test, TrainConfig(epochs=3, batch_size=32, lr=2e-3,
                                                          model_kwargs={"width": 4}, progress=False))
    obs = sp.train.observed
    changed = m.labels != obs
    assert changed.any(), "AP-based correction flipped nothing"
    assert bool((obs[changed] == -1).all()) and bool((m.labels[changed] == 1).all())
    assert [r["epoch"] for r in res.history if "train_ap_mean" in r] == [1, 2]
    assert all(math.isfinite(r["test_mAP"]) and "high_rank" in r for r in res.history)
    for name, hp in (("opml", {"a": 1.0}), ("zlpr", {}), ("opml_sp", {"smoothing": False, "high_rank": False})):
        assert build_method(name, **hp).name == name


def test_half_precision_logits_are_computed_in_float32():
    s, y = random_case(seed=4)
    val = opml_loss(s.to(torch.bfloat16), y)
    assert val.dtype == torch.float32
    assert val.item() == pytest.approx(opml_loss(s.to(torch.bfloat16).double(), y).item(), rel=1e-5)


def _soft_opml_oracle(s, pos, eps):
    """Notes §3.2, Eq. 11 with α = β = 1, written here: one row, observed positive ``pos``,
    the other labels unknown with targets ``eps`` (detached)."""
    unk = [j for j in range(len(s)) if j != pos]
    neg = 1 + sum((1 - eps[j]) * torch.exp(s[j]) for j in unk)
    posv = 1 + torch.exp(-s[pos]) + sum(eps[j] * torch.exp(-s[j]) for j in unk)
    return torch.log(neg) + torch.log(posv)


@pytest.mark.parametrize("ap", [0.5, 1.0])
def test_smoothing_keeps_confident_negatives_down(ap):
    from mlpl_lab.methods.opml import SMOOTHING_PROBS, opml_objective, smoothing_targets

    logits = torch.tensor([[2.0, -4.0, -4.0, -4.0]], dtype=torch.float64, requires_grad=True)
    labels = torch.tensor([[1, -1, -1, -1]])
    eps = smoothing_targets(SMOOTHING_PROBS["calibrated"](logits.detach()), torch.full((4,), ap))
    loss, _ = opml_objective(logits, labels, eps=eps)
    (g,) = torch.autograd.grad(loss, logits)
    s = logits.detach()[0].clone().requires_grad_(True)
    e = [ap * float(torch.sigmoid(2 * s[j])) for j in range(4)]
    (want,) = torch.autograd.grad(_soft_opml_oracle(s, 0, e), s)
    assert torch.allclose(g[0], want, atol=1e-10)
    assert (g[0, 1:] > 0).all()  # the confident unknown negatives are still pushed down
    hard, _ = opml_objective(logits, labels)
    (gh,) = torch.autograd.grad(hard, logits)
    assert g[0, 0] / gh[0, 0] > 0.8  # the observed positive keeps most of its gradient


def test_the_sigmoid_reading_pulls_confident_negatives_up():
    """Why σ(s) is not the default: at AP = 0.5 the unknowns at -4, pushed down by the hard
    loss, are pulled up by the σ(s) smoothing (the audit's case; its exact figures depend on
    the row's width, the signs do not)."""
    from mlpl_lab.methods.opml import SMOOTHING_PROBS, opml_objective, smoothing_targets

    logits = torch.tensor([[2.0] + [-4.0] * 19], dtype=torch.float64, requires_grad=True)
    labels = torch.tensor([[1] + [-1] * 19])
    hard, _ = opml_objective(logits, labels)
    (gh,) = torch.autograd.grad(hard, logits)
    eps = smoothing_targets(SMOOTHING_PROBS["sigmoid"](logits.detach()), torch.full((20,), 0.5))
    soft, _ = opml_objective(logits, labels, eps=eps)
    (gs,) = torch.autograd.grad(soft, logits)
    assert gh[0, 1].item() > 0 and gs[0, 1].item() < 0
