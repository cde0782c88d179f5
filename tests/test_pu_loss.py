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
        vals = [float(v) for v in col]
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
