"""Tests of mlpl_lab.core.metrics against scikit-learn, scipy and hand-computed examples."""

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.metrics import average_precision_score
from torchmetrics.functional.classification import multilabel_f1_score

from mlpl_lab.core import metrics as M
from mlpl_lab.core.labels import UNK


def sklearn_ap(y, p):
    """Per-class sklearn AP; a class without positives -> 0 (sklearn 1.9 gives 0 with a
    warning; older versions gave NaN, which Cole's code also counted as 0)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ap = average_precision_score(y, p, average=None)
    return np.nan_to_num(np.atleast_1d(np.asarray(ap, dtype=float)), nan=0.0)


def data(n=60, c=6, seed=0):
    rng = np.random.default_rng(seed)
    y = (rng.random((n, c)) < 0.3).astype(int)
    y[:, -1] = 0  # a class with no positive
    y[0, 0] = 1
    p = np.clip(0.5 * y + 0.6 * rng.random((n, c)), 0, 1)
    return p, y


# --------------------------------------------------------------------------- AP / mAP
def test_ap_matches_sklearn_with_empty_class():
    p, y = data()
    ap = M.average_precision(torch.from_numpy(p), torch.from_numpy(y))
    assert ap.shape == (6,)
    expected = sklearn_ap(y, p)
    assert expected[-1] == 0.0
    # torchmetrics computes in float32: agreement to ~1e-7
    np.testing.assert_allclose(ap.numpy(), expected, atol=1e-6)
    mAP = M.mean_average_precision(p, y)
    assert mAP == pytest.approx(expected.mean() * 100, abs=1e-4)
    assert M.mean_average_precision(p, y, exclude_empty=True) == pytest.approx(
        expected[:-1].mean() * 100, abs=1e-4)


def test_ap_emits_no_warning():
    p, y = data()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        M.average_precision(p, y)
        M.evaluate(p, y)


@settings(max_examples=50, deadline=None)
@given(arrays(np.int64, st.tuples(st.integers(2, 15), st.integers(1, 5)),
              elements=st.integers(0, 1)), st.integers(0, 10_000))
def test_property_ap_equals_sklearn(y, seed):
    # distinct scores: with ties sklearn and torchmetrics agree too, but keep it crisp
    rng = np.random.default_rng(seed)
    p = rng.permutation(y.size).reshape(y.shape) / y.size
    np.testing.assert_allclose(M.average_precision(p, y).numpy(), sklearn_ap(y, p), atol=1e-6)


def test_ignore_index_ignores_unknowns():
    p, y = data(seed=1)
    rng = np.random.default_rng(2)
    obs = np.where(rng.random(y.shape) < 0.3, UNK, y)
    ap = M.average_precision(p, obs, ignore_index=-1).numpy()
    for c in range(y.shape[1]):
        keep = obs[:, c] != UNK
        expected = sklearn_ap(y[keep, c][:, None], p[keep, c][:, None])[0]
        assert ap[c] == pytest.approx(expected, abs=1e-6)
    with pytest.raises(ValueError, match="ignore_index=-1"):
        M.average_precision(p, obs)  # unknowns without ignore_index are refused
    with pytest.raises(ValueError, match="ignore_index"):
        M.average_precision(p, y, ignore_index=255)


def test_logits_and_bad_inputs_rejected():
    p, y = data()
    with pytest.raises(ValueError, match="torch.sigmoid"):
        M.average_precision(p * 4 - 2, y)
    with pytest.raises(ValueError, match="torch.sigmoid"):
        M.mean_average_precision(p + 0.5, y)
    with pytest.raises(ValueError, match="torch.sigmoid"):
        M.f1_scores(p - 1, y)
    with pytest.raises(ValueError, match="shape"):
        M.average_precision(p[:, :3], y)
    with pytest.raises(ValueError, match="NaN"):
        M.average_precision(np.full_like(p, np.nan), y)
    with pytest.raises(ValueError, match="undefined"):
        M.mean_average_precision(p, np.zeros_like(y), exclude_empty=True)


# --------------------------------------------------------------------------- F1 family
Y_HAND = np.array([[1, 0, 1], [1, 1, 0], [0, 1, 0], [0, 0, 0]])
P_HAND = np.array([[0.9, 0.2, 0.4], [0.6, 0.7, 0.1], [0.8, 0.3, 0.2], [0.1, 0.9, 0.3]])


def test_f1_hand_computed():
    # per class at 0.5: Nc = (2, 1, 0), Np = (3, 2, 0 -> 1), Ng = (2, 2, 1)
    s = M.f1_scores(P_HAND, Y_HAND)
    assert s["OP"] == pytest.approx(100 * 3 / 6)
    assert s["OR"] == pytest.approx(100 * 3 / 5)
    assert s["OF1"] == pytest.approx(100 * 2 * 0.5 * 0.6 / 1.1)
    assert s["CP"] == pytest.approx(100 * 7 / 18)
    assert s["CR"] == pytest.approx(100 * 0.5)
    assert s["CF1"] == pytest.approx(100 * 7 / 16)
    # CF1 is not torchmetrics' macro F1 (mean of per-class F1 = (0.8 + 0.5 + 0) / 3)
    macro = multilabel_f1_score(torch.tensor(P_HAND), torch.tensor(Y_HAND), num_labels=3,
                                average="macro").item()
    assert macro == pytest.approx(1.3 / 3, abs=1e-6)
    assert macro * 100 != pytest.approx(s["CF1"], abs=0.1)


def test_f1_empty_class_treated_as_one():
    y = np.hstack([Y_HAND, np.zeros((4, 1), dtype=int)])
    p = np.hstack([P_HAND, np.array([[0.9], [0.1], [0.1], [0.1]])])
    s = M.f1_scores(p, y)
    # class 3: Nc = 0, Np = 1, Ng = 0 -> 1: adds P = 0, R = 0, and 1 to sum Np and sum Ng
    assert s["CR"] == pytest.approx(100 * 1.5 / 4)
    assert s["OR"] == pytest.approx(100 * 3 / 6)
    assert s["OP"] == pytest.approx(100 * 3 / 7)
    assert all(np.isfinite(v) for v in s.values())


def test_f1_zero_division_guards():
    s = M.f1_scores(np.zeros((3, 2)), np.zeros((3, 2), dtype=int))
    assert all(v == 0.0 for v in s.values())


def test_f1_swept_is_oracle_maximum():
    p, y = data(seed=3)
    y[:, -1] = (p[:, -1] > 0.4).astype(int)  # give every class a positive
    best = M.f1_scores_swept(p, y)
    grid = [i / 100 for i in range(1, 100)]
    of1 = [M.f1_scores(p, y, t)["OF1"] for t in grid]
    cf1 = [M.f1_scores(p, y, t)["CF1"] for t in grid]
    assert best["OF1"] == pytest.approx(max(of1))
    assert best["CF1"] == pytest.approx(max(cf1))
    assert best["OF1_threshold"] == grid[int(np.argmax(of1))]
    assert best["CF1_threshold"] == grid[int(np.argmax(cf1))]
    assert best["OF1"] >= M.f1_scores(p, y)["OF1"]
    only = M.f1_scores_swept(p, y, thresholds=[0.5])
    assert only["OF1"] == pytest.approx(M.f1_scores(p, y)["OF1"])


def test_evaluate_keys_and_values():
    p, y = data()
    out = M.evaluate(torch.from_numpy(p).float(), torch.from_numpy(y))
    assert set(out) == {"mAP", "CF1", "OF1", "CP", "CR", "OP", "OR", "AP"}
    assert isinstance(out["AP"], list) and len(out["AP"]) == y.shape[1]
    assert out["mAP"] == pytest.approx(np.mean(out["AP"]), abs=1e-6)
    assert out["mAP"] == pytest.approx(100 * sklearn_ap(y, p.astype(np.float32)).mean(), abs=1e-4)
    assert 0 <= out["CF1"] <= 100


# --------------------------------------------------------------------------- Wasserstein
def test_wasserstein_matches_scipy_and_fallback():
    from scipy.stats import wasserstein_distance

    rng = np.random.default_rng(0)
    a, b = rng.random(50), rng.random(31) * 0.5
    w = M.wasserstein_1d(torch.from_numpy(a), b)
    assert w == pytest.approx(wasserstein_distance(a, b))
    assert M._wasserstein_numpy(a, b) == pytest.approx(w)
    assert M.wasserstein_1d([0.0, 1.0], [0.0, 1.0]) == 0.0
    assert M.wasserstein_1d([0.0], [0.25]) == pytest.approx(0.25)
    with pytest.raises(ValueError):
        M.wasserstein_1d([], [1.0])
