"""Crisp (Liu et al., NeurIPS 2025): the class-prior estimator of Eq. (2) and the risk of Eq. (5)/(7),
each against an oracle that shares no code with mlpl_lab.losses.crisp — a naive loop written here
from the paper's formulas, a case worked by hand, a mixture with a known proportion, and the
supervised risk the paper's rewriting starts from."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from mlpl_lab import losses
from mlpl_lab.losses.crisp import estimate_class_priors, threshold_prior
from mlpl_lab.methods import build_method

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tiny import tiny_config, tiny_splits  # noqa: E402


def sig(z):
    return 1.0 / (1.0 + math.exp(-z))


# ---------------------------------------------------------------------------------------- estimator
def naive_eq2(scores, pos_scores, delta=0.01, tau=0.01):
    """Eq. (2) by a loop over every candidate threshold (the outputs), counting by hand."""
    n, n_p = len(scores), len(pos_scores)
    slack = (1 + tau) * (math.sqrt(math.log(4 / delta) / (2 * n)) + math.sqrt(math.log(4 / delta) / (2 * n_p)))
    best = None
    for z in sorted(set(scores)):
        q = sum(1 for s in scores if s >= z) / n
        qp = sum(1 for s in pos_scores if s >= z) / n_p
        if qp == 0:
            continue
        obj = q / qp + slack / qp
        if best is None or obj < best[0]:
            best = (obj, q / qp, z)
    return best[1], best[2]


def test_eq2_by_hand():
    """Four examples, two observed positives (0.9 and 0.3). Candidates: z=0.2: 1 + S; z=0.3:
    0.75 + S; z=0.8: (0.5 + S)/0.5; z=0.9: (0.25 + S)/0.5, S = 1.01(√(ln 400/8) + √(ln 400/4)) ≈ 2.11.
    The slack makes z = 0.3 win (π̂ = 0.75); without it z = 0.9 would (π̂ = 0.5).
    Bug caught: a dropped or mis-scaled slack term, a ratio taken the other way round."""
    S = 1.01 * (math.sqrt(math.log(400) / 8) + math.sqrt(math.log(400) / 4))
    assert 0.75 + S < (0.25 + S) / 0.5  # the hand comparison
    pi, z = threshold_prior([0.9, 0.8, 0.3, 0.2], [0.9, 0.3])
    assert (pi, z) == (pytest.approx(0.75), pytest.approx(0.3))
    # one positive (0.9): q̂^p = 1 up to z = 0.9, so the smallest ratio, 0.25 at z = 0.9, wins
    assert threshold_prior([0.9, 0.8, 0.3, 0.2], [0.9]) == (pytest.approx(0.25), pytest.approx(0.9))


@pytest.mark.parametrize("seed", range(6))
def test_eq2_equals_a_naive_loop(seed):
    """Bug caught: '>' for '>=' in q̂, the candidates not the outputs, ties resolved to another
    threshold than the lowest, counts over the wrong set."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 40))
    scores = np.round(rng.random(n), 2).tolist()  # rounded: ties among the scores
    pos = [s for s in scores if rng.random() < 0.4] or [scores[0]]
    delta, tau = float(rng.choice([0.01, 0.1, 0.5])), float(rng.choice([0.0, 0.01, 0.5]))
    want_pi, want_z = naive_eq2(scores, pos, delta, tau)
    pi, z = threshold_prior(scores, pos, delta=delta, tau=tau)
    assert pi == pytest.approx(want_pi, abs=1e-12) and z == pytest.approx(want_z, abs=1e-12)


@pytest.mark.parametrize("pi", [0.1, 0.3, 0.6])
def test_the_estimator_recovers_a_known_mixture_proportion(pi):
    """Negatives' scores ~ U[0, 0.6], positives' ~ U[0.4, 1]: above z0 = 0.6 the top bin holds
    positives only, so q(z)/q^p(z) = π there and Eq. (2) settles at z0 (the penalty's slope 3.75·S
    at z0 is below the ratio's 2.5(1 − π) for S ≈ 0.05, so going lower costs more). At z0,
    q = (2/3)π from n = 20,000 mixture draws and q^p = 2/3 from n_p = 2,000 positive draws: the
    ratio's standard error is π·√((1 − q)/(nq) + (1 − q^p)/(n_p q^p)) (delta method). Tolerance: 5 of
    them (200 seeds measured: at most 3.6). Bug caught: any other estimator of π (mean score ratio
    0.6 at π = 0.3, the ratio upside down, counts over the positives only)."""
    g = torch.Generator().manual_seed(17)
    n, n_p = 20_000, 2_000
    is_pos = torch.rand(n, generator=g) < pi
    scores = torch.where(is_pos, 0.4 + 0.6 * torch.rand(n, generator=g), 0.6 * torch.rand(n, generator=g))
    pos_scores = 0.4 + 0.6 * torch.rand(n_p, generator=g)
    truth = float(is_pos.double().mean())
    q, qp = 2 / 3 * pi, 2 / 3
    se = pi * math.sqrt((1 - q) / (n * q) + (1 - qp) / (n_p * qp))
    est, z = threshold_prior(scores, pos_scores)
    assert abs(est - truth) <= 5 * se, (est, truth, se)
    assert 0.55 <= z <= 0.7  # at the top bin's edge, not deep in the tail


def test_estimate_class_priors_reads_observed_positives_per_column():
    """Two columns built as the mixture above at π = 0.2 and 0.5; the observed positives are a
    random half of each column's positives (selected completely at random). Oracle: the
    truth per column, within the same 5-standard-error band. Bug caught: columns mixed up, the
    positives taken from another column or from the unknowns."""
    g = torch.Generator().manual_seed(3)
    n = 20_000
    cols, obs, truths = [], [], []
    for pi in (0.2, 0.5):
        is_pos = torch.rand(n, generator=g) < pi
        cols.append(torch.where(is_pos, 0.4 + 0.6 * torch.rand(n, generator=g), 0.6 * torch.rand(n, generator=g)))
        seen = is_pos & (torch.rand(n, generator=g) < 0.5)
        obs.append(torch.where(seen, 1, -1))
        truths.append(float(is_pos.double().mean()))
    got = estimate_class_priors(torch.stack(cols, 1), torch.stack(obs, 1))
    for j, pi in enumerate((0.2, 0.5)):
        n_p = int((obs[j] == 1).sum())
        q, qp = 2 / 3 * pi, 2 / 3
        se = pi * math.sqrt((1 - q) / (n * q) + (1 - qp) / (n_p * qp))
        assert abs(float(got[j]) - truths[j]) <= 5 * se


def test_a_class_without_positives_gets_zero_and_bad_arguments_are_refused():
    assert threshold_prior([0.2, 0.5], []) == (0.0, math.inf)
    with pytest.raises(ValueError, match="delta"):
        threshold_prior([0.2], [0.2], delta=0.0)
    with pytest.raises(ValueError, match="NaN"):
        threshold_prior([float("nan")], [0.2])


# ---------------------------------------------------------------------------------------- the risk
def naive_risk(Z, Y, pi, absolute=True):
    """Eq. (7) per class by loops: 2π_j/n^p_j Σ_{pos}(1 − σ) + |mean σ − π_j| (no |.|: Eq. 5)."""
    N, C = len(Z), len(Z[0])
    out = []
    for j in range(C):
        pos = [sig(Z[i][j]) for i in range(N) if Y[i][j] == 1]
        first = 2 * pi[j] * sum(1 - f for f in pos) / len(pos) if pos else 0.0
        gap = sum(sig(Z[i][j]) for i in range(N)) / N - pi[j]
        out.append(first + (abs(gap) if absolute else gap))
    return out


Z = [[2.0, -1.0, 0.5, -3.0], [-0.5, 1.5, -2.0, -1.0], [1.0, 0.0, -1.5, -2.5], [-2.0, -0.5, 3.0, -4.0],
     [0.3, 2.2, -0.7, -3.5]]
Y = [[1, -1, -1, -1], [-1, 1, 0, -1], [1, -1, -1, 0], [-1, -1, 1, -1], [-1, 1, -1, -1]]  # class 3: none
PI = [0.4, 0.5, 0.3, 0.05]


@pytest.mark.parametrize("absolute", [True, False])
def test_risk_equals_a_naive_loop_on_a_hand_built_batch(absolute):
    """Bug caught: π instead of 2π, the positive term averaged over the batch instead of the
    positives, the absolute value on the wrong term, observed negatives read as positives, a class
    without positives given a positive term."""
    z, y = torch.tensor(Z, dtype=torch.float64), torch.tensor(Y)
    want = naive_risk(Z, Y, PI, absolute)
    got = losses.get("crisp")(z, y, priors=PI, absolute=absolute, reduction="none")
    assert got.tolist() == pytest.approx(want, abs=1e-12)
    assert float(losses.get("crisp")(z, y, priors=PI, absolute=absolute)) == pytest.approx(sum(want), abs=1e-12)
    assert float(losses.get("crisp")(z, y, priors=PI, absolute=absolute, reduction="mean")) == \
        pytest.approx(sum(want) / 4, abs=1e-12)
    one = losses.get("crisp")(z, y, priors=0.3, absolute=absolute, reduction="none")
    assert one.tolist() == pytest.approx(naive_risk(Z, Y, [0.3] * 4, absolute), abs=1e-12)


def test_with_full_labels_and_the_true_priors_eq5_is_the_supervised_absolute_risk():
    """Exact identity (Appendix A.4): with every positive observed and π_j the batch's share of
    positives, Eq. (5)'s empirical form is Σ_j mean_i |σ(z_ij) − y_ij|, the supervised risk of the
    absolute loss the paper writes the risk with, for any logits. Eq. (7)'s |.| leaves it unchanged
    where mean σ ≥ π and raises it where not. Bug caught: any term of the rewriting off."""
    g = torch.Generator().manual_seed(0)
    z = torch.randn(40, 5, generator=g, dtype=torch.float64) * 2
    y = (torch.rand(40, 5, generator=g) < torch.tensor([0.1, 0.3, 0.5, 0.7, 0.2])).long()
    pi = y.double().mean(0)
    supervised = (torch.sigmoid(z) - y).abs().mean(0)
    eq5 = losses.get("crisp")(z, y, priors=pi, absolute=False, reduction="none")
    assert eq5.tolist() == pytest.approx(supervised.tolist(), abs=1e-12)
    eq7 = losses.get("crisp")(z, y, priors=pi, absolute=True, reduction="none")
    above = torch.sigmoid(z).mean(0) >= pi
    assert torch.allclose(eq7[above], supervised[above]) and bool((eq7[~above] > supervised[~above]).all())


def test_eq5_is_unbiased_when_positives_are_observed_at_random():
    """Monte Carlo over the observation: a fixed population (its logits and truth), every
    positive observed with probability 0.3 (completely at random, the paper's p(x|y=1) sample),
    Eq. (5) at the true priors averaged over 4,000 draws. Oracle: the supervised absolute risk of
    the population, within 4 Monte Carlo standard errors; the AN reading (unknowns negative) is
    far outside them. Bug caught: a risk that is not unbiased for the supervised one (π in place
    of 2π, the prior term dropped)."""
    g = torch.Generator().manual_seed(1)
    n = 60
    z = torch.randn(n, 3, generator=g, dtype=torch.float64) * 1.5
    y = (torch.rand(n, 3, generator=g) < torch.tensor([0.2, 0.4, 0.6])).long()
    pi = y.double().mean(0)
    supervised = float((torch.sigmoid(z) - y).abs().mean(0).sum())
    draws = 4000
    seen = (torch.rand(draws, n, 3, generator=g) < 0.3) & (y == 1)
    keep = seen.any(1).all(1)  # draws where every class shows a positive (Eq. 5 needs n^p ≥ 1)
    vals = torch.tensor([float(losses.get("crisp")(z, torch.where(s, 1, -1), priors=pi, absolute=False))
                         for s in seen[keep]])
    se = float(vals.std()) / math.sqrt(len(vals))
    assert abs(float(vals.mean()) - supervised) <= 4 * se, (float(vals.mean()), supervised, se)
    an = float(losses.get("an")(z, torch.where(seen[0], 1, -1), reduction="none").mean(0).sum())
    assert abs(an - supervised) > 10 * se


def test_the_loss_refuses_missing_or_bad_priors():
    z, y = torch.zeros(2, 3), torch.tensor([[1, -1, -1], [-1, 1, -1]])
    with pytest.raises(ValueError, match="needs the class priors"):
        losses.get("crisp")(z, y)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        losses.get("crisp")(z, y, priors=[0.2, 1.5, 0.1])
    with pytest.raises(ValueError, match="one per class"):
        losses.get("crisp")(z, y, priors=[0.2, 0.1])
    zz = torch.zeros(2, 3, dtype=torch.float64, requires_grad=True)
    torch.autograd.gradcheck(lambda t: losses.get("crisp")(t, y, priors=[0.3, 0.2, 0.1]), (zz,))


# ---------------------------------------------------------------------------------------- the method
def test_the_method_options():
    """Bug caught: a spec whose priors cannot be used passing construction (it would fail mid-run)."""
    assert build_method("crisp").hparams["priors"] == "estimated"
    assert build_method("crisp", priors=[0.1, 0.2]).hparams["priors"] == [0.1, 0.2]
    for bad in ({"priors": "guess"}, {"priors": 1.5}, {"warmup_epochs": -1}, {"estimate_every": 0},
                {"tau": 2.0}):
        with pytest.raises(ValueError):
            build_method("crisp", **bad)


@pytest.fixture(scope="module")
def splits():
    return tiny_splits()


class FlippedTruth:
    """The training set with its TRUE labels flipped (observed labels untouched, batches too)."""

    def __init__(self, ds):
        self.ds, self.observed, self.labels = ds, ds.observed, 1 - ds.labels

    def __len__(self):
        return len(self.ds)

    def get_batch(self, idx):
        return self.ds.get_batch(idx)


def test_estimated_priors_never_read_the_truth_and_true_priors_are_the_truths(splits):
    """Crisp with estimated priors trains the same on a training set whose true labels are
    flipped (only the diagnostic prior_abs_error may differ); with priors="true" it uses the
    truth's column means (oracle: computed here), and a dataset's side_info wins over them.
    Bug caught: the estimator fed with the true labels, the 'true' priors from the observed ones."""
    from mlpl_lab.engine.train import fit

    cfg = tiny_config(epochs=2)
    a = fit("crisp", splits.train, splits.val, splits.test, cfg)
    b = fit("crisp", FlippedTruth(splits.train), splits.val, splits.test, cfg)
    for ra, rb in zip(a.history, b.history):
        assert ra["loss"] == rb["loss"] and ra["val_mAP"] == rb["val_mAP"]
        assert ra.get("prior_mean") == rb.get("prior_mean")
    truth = splits.train.labels.double().mean(0).float()
    t = fit("crisp", splits.train, splits.val, splits.test, tiny_config(epochs=1), priors="true",
            warmup_epochs=0)
    assert torch.allclose(t.method.priors, truth)

    given = FlippedTruth(splits.train)
    given.side_info = {"class_priors": torch.full((truth.numel(),), 0.25)}
    t2 = fit("crisp", given, splits.val, splits.test, tiny_config(epochs=1), priors="true", warmup_epochs=0)
    assert torch.allclose(t2.method.priors, torch.full_like(truth, 0.25))
    state = t.method.extra_state()
    buf = __import__("io").BytesIO()
    torch.save(state, buf)
    buf.seek(0)
    assert torch.equal(torch.load(buf, weights_only=True)["priors"], state["priors"])
