"""The pure selection rules of CLS and the co-teaching family (mlpl_lab.methods.selection)."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from mlpl_lab.methods.cls import selected_bce
from mlpl_lab.methods.selection import (co_label_selection, forget_rate, forget_schedule, keep_count,
                                        label_selection_counts, negative_entry_loss, reserve_rate,
                                        reserve_schedule, sample_selection_counts, select_largest,
                                        select_small_loss_samples, select_smallest, selection_rates)


def random_observed(B, C, seed, p_pos=0.1, p_neg=0.05):
    g = torch.Generator().manual_seed(seed)
    u = torch.rand(B, C, generator=g)
    obs = torch.full((B, C), -1, dtype=torch.long)
    obs[u < p_pos] = 1
    obs[(u >= p_pos) & (u < p_pos + p_neg)] = 0
    return obs


# ---------------------------------------------------------------------------------------
# schedules
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("tau, E_k", [(0.012, 10), (0.06, 4), (0.2, 2), (0.5, 1)])
def test_reserve_rate_at_0_half_full_and_twice_E_k(tau, E_k):
    assert reserve_rate(0, tau, E_k) == 1.0  # Alg. 1 updates R after the epoch: nothing selected first
    if E_k % 2 == 0:
        assert reserve_rate(E_k // 2, tau, E_k) == pytest.approx(1 - tau / 2, abs=1e-12)
    assert reserve_rate(E_k, tau, E_k) == pytest.approx(1 - tau, abs=1e-12)
    assert reserve_rate(2 * E_k, tau, E_k) == pytest.approx(1 - tau, abs=1e-12)  # constant after E_k


def test_reserve_schedule_is_linear_then_flat():
    R = reserve_schedule(0.06, 4, 8)
    np.testing.assert_allclose(R, [1, 0.985, 0.97, 0.955, 0.94, 0.94, 0.94, 0.94], atol=1e-12)


def test_forget_rate_paper_and_code_variants():
    # paper: tau * min(e^c / T_k, 1)
    assert forget_rate(0, 0.2, 10) == 0.0
    assert forget_rate(5, 0.2, 10) == pytest.approx(0.1)
    assert forget_rate(10, 0.2, 10) == pytest.approx(0.2)
    assert forget_rate(3, 0.2, 10, exponent=2) == pytest.approx(0.2 * 9 / 10)
    # code: linspace(0, tau^c, T_k)[e + 1] (its loop starts at epoch index 1), tau afterwards
    code = forget_schedule(0.2, 10, 12, schedule="code")
    np.testing.assert_allclose(code[:9], np.linspace(0, 0.2, 10)[1:10])
    assert code[0] == pytest.approx(0.2 / 9)  # forgets from the very first epoch
    assert code[8] == pytest.approx(0.2) and code[11] == pytest.approx(0.2)
    # the code puts the exponent on tau, not on the epoch
    assert forget_rate(8, 0.2, 10, exponent=2, schedule="code") == pytest.approx(0.04)


@pytest.mark.parametrize("call, message", [
    (lambda: reserve_rate(-1, 0.1, 10), "epoch"),
    (lambda: reserve_rate(0, 1.5, 10), "tau"),
    (lambda: reserve_rate(0, 0.1, 0), "E_k"),
    (lambda: forget_rate(0, 1.0, 10), "forget rate"),
    (lambda: forget_rate(0, 0.2, 10, schedule="linspace"), "schedule"),
    (lambda: forget_rate(0, 0.2, 2.5, schedule="code"), "integer T_k"),
    (lambda: keep_count(0.5, -3), "n must"),
])
def test_bad_schedule_arguments_name_the_problem(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()


# ---------------------------------------------------------------------------------------
# counts: floor(R * n), exactly
# ---------------------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.integers(0, 1000), st.integers(0, 5000))
def test_keep_count_is_the_exact_floor(milli, n):
    rate = milli / 1000
    assert keep_count(rate, n) == math.floor(Fraction(milli, 1000) * n)


@pytest.mark.parametrize("tau_h, tau_l, epoch, E_k", [
    (0.012, 0.06, 10, 10), (0.012, 0.06, 3, 10), (0.1, 0.2, 1, 2), (0.0, 0.14, 5, 5), (0.3, 0.0, 7, 4),
])
def test_co_label_selection_counts_are_floor_of_rate_times_candidates(tau_h, tau_l, epoch, E_k):
    B, C = 64, 20
    observed = random_observed(B, C, seed=epoch)
    g = torch.Generator().manual_seed(1)
    own, peer = torch.randn(B, C, generator=g), torch.randn(B, C, generator=g)
    R_h, R_l = reserve_rate(epoch, tau_h, E_k), reserve_rate(epoch, tau_l, E_k)
    sel = co_label_selection(own, peer, observed, R_h, R_l)
    n = int((observed == -1).sum())
    exact = lambda tau: Fraction(1) - min(Fraction(epoch, E_k) * Fraction(str(tau)), Fraction(str(tau)))  # noqa: E731
    n_cross = math.floor(exact(tau_h) * n)
    assert int(sel.candidates.sum()) == n
    assert int((sel.kept | sel.removed_low).sum()) == n_cross
    assert int(sel.removed_high.sum()) == n - n_cross
    assert int(sel.kept.sum()) == math.floor(exact(tau_l) * n_cross)
    # disjoint, and together exactly the candidates
    parts = sel.kept.int() + sel.removed_high.int() + sel.removed_low.int()
    assert torch.equal(parts.bool(), sel.candidates) and int(parts.max()) <= 1


# ---------------------------------------------------------------------------------------
# who ranks what
# ---------------------------------------------------------------------------------------
def test_cross_selection_follows_the_peers_losses():
    """f and g disagree on purpose: f finds entries A suspicious, g finds entries B suspicious.
    f's high-loss removal (Eq. 1) must follow g (B), and g's must follow f (A)."""
    B, C = 4, 5
    observed = torch.full((B, C), -1, dtype=torch.long)
    observed[:, 0] = 1  # one observed positive per image: never a candidate
    logits_f = torch.full((B, C), -4.0)
    logits_g = torch.full((B, C), -4.0)
    A = [(0, 1), (1, 2)]     # f: high logit = high negative loss
    Bset = [(2, 3), (3, 4)]  # g: high logit
    for i, j in A:
        logits_f[i, j] = 3.0
    for i, j in Bset:
        logits_g[i, j] = 3.0
    n = B * (C - 1)  # 16 candidates; remove 2 of them as high-loss
    R_h = 1 - 2 / n
    sel_f = co_label_selection(negative_entry_loss(logits_f), negative_entry_loss(logits_g), observed, R_h, 1.0)
    sel_g = co_label_selection(negative_entry_loss(logits_g), negative_entry_loss(logits_f), observed, R_h, 1.0)
    assert sorted(map(tuple, sel_f.removed_high.nonzero().tolist())) == sorted(Bset)
    assert sorted(map(tuple, sel_g.removed_high.nonzero().tolist())) == sorted(A)
    # f still trains on its own suspicious entries A as negatives: its peer vouched for them
    assert all(bool(sel_f.kept[i, j]) for i, j in A)


def test_self_selection_drops_the_lowest_own_losses():
    B, C = 2, 4
    observed = torch.full((B, C), -1, dtype=torch.long)
    own = torch.tensor([[0.1, 0.5, 0.9, 0.3], [0.05, 0.7, 0.2, 0.8]])
    peer = torch.zeros(B, C)  # peer indifferent: nothing stands out, R_h = 1 anyway
    sel = co_label_selection(own, peer, observed, 1.0, 0.75)  # keep 6 of 8: drop the 2 smallest own losses
    assert sorted(map(tuple, sel.removed_low.nonzero().tolist())) == [(0, 0), (1, 0)]
    assert int(sel.removed_high.sum()) == 0


def test_ranking_is_over_the_flattened_batch_not_per_image():
    # all the suspicious entries sit in image 0: a per-image rule would remove one per image
    observed = torch.full((3, 4), -1, dtype=torch.long)
    peer = torch.zeros(3, 4)
    peer[0, :3] = torch.tensor([5.0, 4.0, 3.0])
    sel = co_label_selection(torch.zeros(3, 4), peer, observed, 1 - 3 / 12, 1.0)
    assert sel.removed_high[0, :3].all() and int(sel.removed_high.sum()) == 3


def test_ties_are_broken_by_flat_index_deterministically():
    scores = torch.zeros(2, 3)
    cand = torch.ones(2, 3, dtype=torch.bool)
    kept = select_smallest(scores, cand, 0.5)
    assert kept.reshape(-1).tolist() == [True, True, True, False, False, False]
    kept = select_largest(scores, cand, 0.5)
    assert kept.reshape(-1).tolist() == [True, True, True, False, False, False]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.0, 0.5), st.floats(0.0, 0.5))
def test_observed_positives_and_negatives_are_never_removed(seed, tau_h, tau_l):
    B, C = 16, 10
    observed = random_observed(B, C, seed, p_pos=0.2, p_neg=0.2)
    g = torch.Generator().manual_seed(seed)
    # give the observed entries the most extreme losses: they must still not be touched
    own = torch.randn(B, C, generator=g) + 10 * (observed != -1)
    peer = torch.randn(B, C, generator=g) + 10 * (observed != -1)
    sel = co_label_selection(own, peer, observed, 1 - tau_h, 1 - tau_l)
    removed = sel.removed_high | sel.removed_low
    assert not bool(removed[observed != -1].any())
    # and the CLS loss keeps every observed entry: its gradient there is non-zero
    logits = torch.randn(B, C, generator=g, requires_grad=True)
    selected_bce(logits, observed, sel.kept).backward()
    grad = logits.grad
    assert bool((grad[observed != -1] != 0).all())
    assert bool((grad[removed] == 0).all())


def test_selection_inputs_are_checked():
    obs = torch.full((2, 3), -1)
    with pytest.raises(ValueError, match="NaN"):
        select_smallest(torch.tensor([[float("nan"), 0, 0], [0, 0, 0]]), obs == -1, 0.5)
    with pytest.raises(ValueError, match="shape"):
        select_smallest(torch.zeros(2, 3), torch.ones(3, 2, dtype=torch.bool), 0.5)
    with pytest.raises(TypeError, match="bool"):
        select_smallest(torch.zeros(2, 3), torch.ones(2, 3), 0.5)
    with pytest.raises(ValueError, match="only 1"):
        co_label_selection(torch.zeros(2, 3), torch.zeros(2, 3), torch.full((2, 3), 2), 1.0, 1.0)


def test_small_loss_samples_and_fallback():
    loss = torch.tensor([0.5, 0.1, 0.9, 0.3])
    assert select_small_loss_samples(loss, 0.5).tolist() == [False, True, False, True]
    among = torch.tensor([True, False, True, False])
    # floor(0.4 * 2) = 0 -> the whole set is kept (the Co-teaching+ code's fallback)
    assert select_small_loss_samples(loss, 0.4, among).tolist() == among.tolist()
    assert select_small_loss_samples(loss, 0.5, among).tolist() == [True, False, False, False]


# ---------------------------------------------------------------------------------------
# diagnostics against the truth
# ---------------------------------------------------------------------------------------
def test_label_selection_counts_on_a_hand_example():
    observed = torch.tensor([[1, -1, -1, -1], [-1, 1, -1, 0]])
    truth = torch.tensor([[1, 1, 0, 0], [1, 1, 0, 0]])  # hidden positives: (0,1), (1,0)
    own = torch.tensor([[0.0, 0.2, 0.1, 0.3], [0.0, 0.0, 0.4, 0.0]])
    peer = torch.tensor([[0.0, 5.0, 0.1, 0.2], [4.0, 0.0, 0.3, 0.0]])
    sel = co_label_selection(own, peer, observed, R_h=1 - 2 / 5, R_l=2 / 3)
    c = label_selection_counts(sel, observed, truth)
    # peer removes (0,1) and (1,0): both hidden positives; own drops the smallest of the rest: (0,2)
    assert c == {"unknown": 5, "hidden": 2, "removed": 2, "removed_hidden": 2, "removed_low": 1,
                 "removed_low_hidden": 0, "kept_hidden": 0}
    r = selection_rates(c)
    assert r["precision"] == 1.0 and r["recall"] == 1.0 and r["low_precision"] == 0.0


def test_sample_selection_counts_every_label_of_a_dropped_image():
    observed = torch.tensor([[1, -1, -1], [-1, 1, -1], [1, -1, 0]])
    truth = torch.tensor([[1, 1, 0], [0, 1, 0], [1, 0, 0]])
    used = torch.tensor([False, True, False])  # drop images 0 and 2
    c = sample_selection_counts(used, observed, truth)
    assert c["dropped"] == 2 and c["removed"] == 6
    assert c["removed_hidden"] == 1 and c["removed_clean"] == 5 and c["removed_observed_pos"] == 2
    r = selection_rates(c)
    assert r["precision"] == pytest.approx(1 / 6) and r["recall"] == 1.0
    assert r["clean_per_dropped"] == 2.5


def test_selected_bce_normalisations_and_first_epoch_equals_an():
    from mlpl_lab.losses import get

    g = torch.Generator().manual_seed(0)
    logits = torch.randn(8, 5, generator=g)
    observed = random_observed(8, 5, 3)
    everything = observed == -1  # R = 1: every unknown kept -> AN exactly
    an = get("an")(logits, observed)
    assert torch.allclose(selected_bce(logits, observed, everything), an)
    assert torch.allclose(selected_bce(logits, observed, everything, normalization="batch"), an * 5)
    assert torch.allclose(selected_bce(logits, observed, everything, normalization="selected"), an)
    with pytest.raises(ValueError, match="normalization"):
        selected_bce(logits, observed, everything, normalization="mean")
    # CLC: a flipped entry takes the positive term
    flip = torch.zeros_like(everything)
    flip[observed == -1] = True
    flipped = selected_bce(logits, observed, everything & ~flip, flipped=flip, normalization="batch")
    expected = (torch.nn.functional.softplus(-logits) * ((observed == 1) | flip)
                + torch.nn.functional.softplus(logits) * (observed == 0)).sum() / 8
    assert torch.allclose(flipped, expected)


def test_code_schedule_reaches_tau_two_epochs_before_the_paper():
    from mlpl_lab.methods.selection import forget_rate

    T_k, tau = 10, 0.2
    paper = [forget_rate(e, tau, T_k) for e in range(14)]
    code = [forget_rate(e, tau, T_k, schedule="code") for e in range(14)]
    first = lambda xs: next(e for e, x in enumerate(xs) if abs(x - tau) < 1e-12)  # noqa: E731
    assert first(paper) == T_k and first(code) == T_k - 2
