"""``torch.autograd.gradcheck`` in float64 for the four papers' losses: PU-MLC (vPU and the mixup
regulariser), GR Loss, OPML (with ZLPR, the soft form and the high-rank penalty) and LAC (PLC
and the contrastive loss).

gradcheck compares autograd with central finite differences, so it catches a wrong backward
wherever one is written by hand or assembled from pieces (a missing chain-rule factor, a term
computed from a detached copy where it should not be, a float32 round trip that makes the
finite differences meaningless). Where a loss detaches a statistic *on purpose* (vPU's T_c and
w_c, GR's k̂ and v), its gradient is by design not the derivative of its value: those losses
are checked with the statistic held fixed (the differentiable part exposed for it), and in a
regime where the statistic is constant near the input (then the whole loss must pass).
"""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from mlpl_lab import losses
from mlpl_lab.losses.gr import GR_NEGATIVES, compose, k_hat, v_weight
from mlpl_lab.losses.lac import lac_loss, plc_loss
from mlpl_lab.losses.opml import high_rank_penalty, opml_loss, soft_opml_loss, zlpr_loss
from mlpl_lab.losses.pu import vpu_from_statistics
from mlpl_lab.losses.terms import gce_neg, gce_pos
from mlpl_lab.methods.pu_mlc import mix_log_targets, mixup_log_target, mixup_regulariser, mixup_target


def gradcheck(fn, *inputs):
    return torch.autograd.gradcheck(fn, tuple(x.detach().clone().requires_grad_(True) for x in inputs),
                                    eps=1e-6, atol=1e-7, rtol=1e-5)


def logits_and_labels(b=8, c=5, seed=0, scale=2.0):
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(b, c, generator=g, dtype=torch.float64) * scale
    y = torch.randint(-1, 2, (b, c), generator=g)
    y[:, 0] = -1            # a class with no positive in the batch
    y[0, 1] = 1             # and one with at least one
    return z, y


# ---------------------------------------------------------------------------------- PU-MLC
@pytest.mark.parametrize("seed", [0, 1])
def test_vpu_differentiable_part_with_fixed_temperature_and_weight(seed):
    z, y = logits_and_labels(seed=seed)
    g = torch.Generator().manual_seed(10 + seed)
    T = 0.2 + 0.8 * torch.rand(z.shape[1], generator=g, dtype=torch.float64)
    w = torch.rand(z.shape[1], generator=g, dtype=torch.float64)
    assert gradcheck(lambda s: vpu_from_statistics(s, y, T, w).sum(), z)


@pytest.mark.parametrize("hp", [{"alpha": None, "gamma": 0.0},          # plain vPU: T = 1, w = 1
                                {"alpha": 50.0, "gamma": 0.0}])          # T saturates at 1
def test_vpu_loss_where_its_detached_statistics_are_constant(hp):
    z, y = logits_and_labels(seed=2)
    out = losses.get("vpu")(z, y, **hp)
    assert out.dtype == torch.float64  # computed in the input's dtype, not float32
    assert gradcheck(lambda s: losses.get("vpu")(s, y, **hp), z)


@pytest.mark.parametrize("detach", [False, True])
@pytest.mark.parametrize("lam", [0.0, 0.3, 1.0])
def test_exact_mixup_regulariser_through_both_passes(lam, detach):
    """Inputs: the mixed pass's logits and, unless the target is detached (then it is a
    constant on purpose), the first pass's logits through the target; logits of tens, where the
    old one-sided guard had its floor."""
    z, y = logits_and_labels(b=6, c=4, seed=3, scale=15.0)
    mixed = torch.randn(3, 4, generator=torch.Generator().manual_seed(4), dtype=torch.float64) * 15
    perm = torch.tensor([2, 0, 1])

    def fn(first, s_mix):
        lt = mixup_log_target(first, y, detach=detach)
        return mixup_regulariser(s_mix, mixed_log_target=mix_log_targets(lt[:3][perm], lt[3:], lam))

    if detach:
        assert gradcheck(lambda s_mix: fn(z, s_mix), mixed)
    else:
        assert gradcheck(fn, z, mixed)


def test_official_mixup_regulariser_through_both_passes():
    z, y = logits_and_labels(b=6, c=4, seed=5)
    mixed = torch.randn(3, 4, generator=torch.Generator().manual_seed(6), dtype=torch.float64)

    def fn(first, s_mix):
        t = mixup_target(first, y, form="official")
        return mixup_regulariser(s_mix, 0.4 * t[:3] + 0.6 * t[3:], form="official")

    assert gradcheck(fn, z, mixed)


# ---------------------------------------------------------------------------------- GR Loss
@pytest.mark.parametrize("neg", GR_NEGATIVES)
def test_gr_loss_where_khat_and_v_are_constant(neg):
    """w = 0 makes k̂ = σ(b) whatever p is, and v is switched off: nothing detached varies."""
    z, y = logits_and_labels(seed=7)
    y[1, 2] = 0  # an observed negative
    kw = dict(w=0.0, b=-1.0, mu=None, sigma=None, q1=0.2, q2=0.05, q3=0.8, neg=neg)
    assert gradcheck(lambda s: losses.get("gr")(s, y, **kw), z)


@pytest.mark.parametrize("q1", [None, 0.01])
def test_gr_framework_with_khat_and_v_frozen(q1):
    z, y = logits_and_labels(seed=8)
    p0 = torch.sigmoid(z)
    k, v = k_hat(p0, 3.0, -1.5), v_weight(p0, 0.6, 0.5)

    def fn(s):
        return compose(s, y, k=k, v=v, L1=gce_pos(s, q1), L2=gce_pos(s, 0.01), L3=gce_neg(s, 1.0))

    assert gradcheck(fn, z)


# ---------------------------------------------------------------------------------- OPML
@pytest.mark.parametrize("ab", [(0.0, 0.0), (1.5, -0.7)])
def test_opml_and_zlpr(ab):
    z, y = logits_and_labels(seed=9)
    y[2] = -1                 # a row without a positive: one term only
    assert gradcheck(lambda s: opml_loss(s, y, a=ab[0], b=ab[1]), z)
    assert gradcheck(lambda s: zlpr_loss(s, y, reduction="sum"), z)


def test_soft_opml():
    z, y = logits_and_labels(seed=10)
    eps = torch.rand(z.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 0.4
    assert gradcheck(lambda s: soft_opml_loss(s, y, eps=eps, a=0.5), z)


@pytest.mark.parametrize("form", ["B", "C"])
def test_high_rank_penalty_in_float64(form):
    z, _ = logits_and_labels(b=4, c=6, seed=11)
    assert high_rank_penalty(torch.sigmoid(z), form=form).dtype == torch.float64
    assert gradcheck(lambda s: high_rank_penalty(torch.sigmoid(s), delta=1e-2, form=form), z)


# ---------------------------------------------------------------------------------- LAC
@pytest.mark.parametrize("form", ["paper", "code"])
def test_plc(form):
    z, y = logits_and_labels(seed=12)
    weak = torch.rand(z.shape, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    assert gradcheck(lambda s: plc_loss(s, y, weak_probs=weak, delta=0.6, form=form), z)


@pytest.mark.parametrize("with_queue", [False, True])
@pytest.mark.parametrize("form", ["paper", "code"])
def test_lac_contrastive_loss(form, with_queue):
    g = torch.Generator().manual_seed(13)
    zw, zs = (torch.randn(6, 4, generator=g, dtype=torch.float64) for _ in range(2))
    cls = torch.tensor([0, 1, 0, 2, 1, 0])
    queue = {}
    if with_queue:
        queue = dict(queue_z=F.normalize(torch.randn(5, 2, 4, generator=g, dtype=torch.float64), dim=-1),
                     queue_classes=torch.tensor([1, 2, 0, 0, 1]))

    def fn(a, b):  # the loss takes L2-normalised projections
        return lac_loss(F.normalize(a, dim=1), F.normalize(b, dim=1), cls, tau=0.5, form=form, **queue)

    assert gradcheck(fn, zw, zs)
