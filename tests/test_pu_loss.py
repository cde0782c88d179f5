"""PU-MLC's variational PU loss against a per-class formula written here from the paper."""
from __future__ import annotations

import math

import pytest
import torch

from mlpl_lab import losses


def oracle(S, Y, alpha=1.0, gamma=0.55, rebalance="paper", floor=1e-3):
    """Plain loops (torch scalars so autograd gives the oracle's gradient): per class c,
    T = min(alpha * population std, 1) (detached), q = sigmoid(s/T),
    w = (mean sigmoid(s) or mean q)^gamma (detached), L_c = w log mean q - mean_{P_c} log q."""
    B, C = S.shape
    total = 0.0
    for c in range(C):
        col = [S[i, c] for i in range(B)]
        vals = [float(v.detach()) for v in col]
        mean = sum(vals) / B
        std = math.sqrt(sum((v - mean) ** 2 for v in vals) / B)
        T = 1.0 if alpha is None else min(max(alpha * std, floor), 1.0)
        q = [torch.sigmoid(v / T) for v in col]
        base = [1 / (1 + math.exp(-v)) for v in vals] if rebalance == "paper" else [float(x) for x in q]
        w = (sum(base) / B) ** gamma
        unl = w * torch.log(sum(q) / B)
        P = [i for i in range(B) if int(Y[i, c]) == 1]
        pos = -sum(torch.log(q[i]) for i in P) / len(P) if P else 0.0
        total = total + unl + pos
    return total


def case(seed=0, B=8, C=5):
    g = torch.Generator().manual_seed(seed)
    S = torch.randn(B, C, generator=g, dtype=torch.float64) * 1.5
    Y = torch.randint(-1, 2, (B, C), generator=g)
    Y[:, 0] = -1  # a class with no positive in the batch
    return S, Y


@pytest.mark.parametrize("hp", [{}, {"alpha": 2.0, "gamma": 0.85}, {"alpha": None, "gamma": 0.0},
                                {"rebalance": "code"}, {"alpha": 0.3}])
@pytest.mark.parametrize("seed", [0, 1])
def test_value_and_gradient_match_the_per_class_formula(hp, seed):
    S, Y = case(seed)
    a = S.clone().requires_grad_(True)
    got = losses.get("vpu")(a, Y, **hp)
    (ga,) = torch.autograd.grad(got, a)
    b = S.clone().requires_grad_(True)
    want = oracle(b, Y, **{k: v for k, v in hp.items()})
    (gb,) = torch.autograd.grad(want, b)
    assert float(got) == pytest.approx(float(want), rel=1e-5, abs=1e-6)
    assert torch.allclose(ga.double(), gb, rtol=1e-4, atol=1e-6)


def test_zero_spread_is_guarded():
    S = torch.zeros(6, 3, requires_grad=True)  # every logit equal: std 0
    Y = torch.tensor([[1, -1, -1]] * 6)
    val = losses.get("vpu")(S, Y)
    val.backward()
    assert math.isfinite(float(val)) and torch.isfinite(S.grad).all()


def test_it_never_reads_negatives():
    S, Y = case(3)
    poisoned = torch.where(Y == 0, torch.full_like(Y, -1), Y)  # observed negatives -> unknown
    assert float(losses.get("vpu")(S, Y)) == pytest.approx(float(losses.get("vpu")(S, poisoned)))


def test_reductions_and_errors():
    S, Y = case(2)
    per = losses.get("vpu")(S, Y, reduction="none")
    assert per.shape == (S.shape[1],)
    assert float(losses.get("vpu")(S, Y)) == pytest.approx(float(per.sum()))
    assert float(losses.get("vpu")(S, Y, reduction="mean")) == pytest.approx(float(per.mean()))
    for bad in ({"alpha": 0}, {"gamma": -1}, {"rebalance": "x"}, {"reduction": "max"}):
        with pytest.raises(ValueError):
            losses.get("vpu")(S, Y, **bad)


def test_dtype_follows_the_input():
    """float64 stays float64 (gradcheck needs it), half precision is computed in float32."""
    S, Y = case(4)
    assert losses.get("vpu")(S, Y).dtype == torch.float64
    assert losses.get("vpu")(S.to(torch.bfloat16), Y).dtype == torch.float32
    # float64 keeps digits float32 would lose: a difference of 1e-9 in one logit shows
    bumped = S.clone()
    bumped[1, 2] += 1e-9
    assert float(losses.get("vpu")(bumped, Y)) != float(losses.get("vpu")(S, Y))


# -- PU-MLC's mixup regulariser -----------------------------------------------------------------
from mlpl_lab.methods.pu_mlc import (PUMLCMethod, mix_log_targets, mixup_log_target, mixup_regulariser,
                                     mixup_target)


def log_sigmoid(v):
    """log σ(v) in plain python, exact for negative v."""
    return -math.log1p(math.exp(-v)) if v >= 0 else v - math.log1p(math.exp(v))


def guarded_target_only(v):
    """The lab's former form, restated: (log(t̃ + 1e-10) − log σ(s̃))² with t̃ = σ(v), s̃ = v, and
    its derivative in s̃ (target held): the hidden floor the fidelity audit measured."""
    d = math.log(math.exp(log_sigmoid(v)) + 1e-10) - log_sigmoid(v)
    return d * d, -2 * d * (1 - 1 / (1 + math.exp(-v)))


def test_the_former_one_sided_guard_had_the_floor_the_audit_measured():
    """The figures the docstring and the fidelity page quote (R 2.2e-3, 0.46, 4.4, 48.7 at
    v = −20, −23, −25, −30; gradient −13.9 at −30), recomputed from the formula."""
    want = {-20: 2.2e-3, -23: 0.46, -25: 4.4, -30: 48.7}
    for v, r in want.items():
        assert guarded_target_only(v)[0] == pytest.approx(r, rel=0.03), v
    assert guarded_target_only(-30)[1] == pytest.approx(-13.9, abs=0.1)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("v", [-20.0, -30.0, -50.0])
def test_exact_form_prediction_equal_to_target_costs_nothing(v, dtype):
    """t̃ = σ(v) (an unknown entry of the first pass, mixed with itself) and s̃ = v: R ≈ 0 and
    its gradient ≈ 0 in both inputs — no floor at any logit."""
    first = torch.full((2, 3), v, dtype=dtype, requires_grad=True)
    mixed = torch.full((1, 3), v, dtype=dtype, requires_grad=True)
    y = torch.full((2, 3), -1)
    lt = mixup_log_target(first, y)
    R = mixup_regulariser(mixed, mixed_log_target=mix_log_targets(lt[:1], lt[1:], 0.37))
    R.backward()
    assert float(R) < 1e-20
    assert float(first.grad.abs().max()) < 1e-8 and float(mixed.grad.abs().max()) < 1e-8


@pytest.mark.parametrize("v", [-20.0, -30.0, -50.0])
def test_official_form_stays_below_ln2_squared(v):
    """The code's form (target σ(s) + 1e-10, both logs guarded by 1e-10): a matched pair costs
    at most (ln 2)² per entry."""
    first = torch.full((2, 1), v, dtype=torch.float64)
    t = mixup_target(first, torch.full((2, 1), -1), form="official")
    R = mixup_regulariser(torch.full((1, 1), v, dtype=torch.float64), 0.4 * t[:1] + 0.6 * t[1:], form="official")
    assert float(R) <= math.log(2) ** 2 + 1e-12


def test_exact_form_of_a_real_mix_by_the_formula():
    """log t̃ = log(λ·t1 + (1−λ)·t2) with t = 1 on positives and σ(s) elsewhere, against plain
    python; a prediction at logit(t̃) costs nothing even where t̃ is 1e-20."""
    first = torch.tensor([[-45.0, 0.3], [2.0, -8.0], [-50.0, 1.0], [0.5, 4.0]], dtype=torch.float64)
    y = torch.tensor([[-1, 1], [1, 0], [-1, -1], [-1, 1]])
    mixed = torch.tensor([[-3.0, 0.5], [1.0, -2.0]], dtype=torch.float64)
    lam, perm = 0.3, [1, 0]
    lt = mixup_log_target(first, y)
    got = mixup_regulariser(mixed, mixed_log_target=mix_log_targets(lt[:2][torch.tensor(perm)], lt[2:], lam))
    t = [[1.0 if int(y[i, c]) == 1 else math.exp(log_sigmoid(float(first[i, c]))) for c in range(2)] for i in range(4)]
    want = 0.0
    for c in range(2):
        for i in range(2):
            tm = lam * t[perm[i]][c] + (1 - lam) * t[2 + i][c]
            want += (math.log(tm) - log_sigmoid(float(mixed[i, c]))) ** 2 / 2
    assert float(got) == pytest.approx(want, rel=1e-12)
    # a deep mix: t̃ = λσ(−45) + (1−λ)σ(−50) ≈ 1e-20; the prediction at logit(t̃) costs nothing
    tm = lam * math.exp(log_sigmoid(-45.0)) + (1 - lam) * math.exp(log_sigmoid(-50.0))
    logit = math.log(tm) - math.log1p(-tm)
    lt2 = mixup_log_target(torch.tensor([[-45.0], [-50.0]], dtype=torch.float64), torch.full((2, 1), -1))
    R = mixup_regulariser(torch.tensor([[logit]], dtype=torch.float64),
                          mixed_log_target=mix_log_targets(lt2[:1], lt2[1:], lam))
    assert float(R) < 1e-24


def test_mixup_form_is_validated_and_recorded_only_with_mixup():
    with pytest.raises(ValueError, match="mixup_form"):
        PUMLCMethod(mixup_form="guarded")
    with pytest.raises(ValueError, match="mixup_form"):
        mixup_regulariser(torch.zeros(1, 1), torch.ones(1, 1), form="x")
    with pytest.raises(ValueError, match="one of"):
        mixup_regulariser(torch.zeros(1, 1))
    assert PUMLCMethod().hparams["mixup_form"] == "exact"
    assert "mixup_form" not in PUMLCMethod(mixup=False).hparams
