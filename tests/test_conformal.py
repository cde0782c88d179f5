"""Calibrated label sets (class-wise split conformal, mlpl_lab.analysis.conformal): the quantile on
cases worked by hand (the too-few-scores edge included), the coverage guarantee on exchangeable
draws, the set size against α, and the observed-label and oracle thresholds against what they
promise."""
from __future__ import annotations

import math

import numpy as np
import pytest

from mlpl_lab.analysis import conformal as CF


def test_the_conformal_quantile_by_hand():
    """Scores 0.5, 0.1, 0.4, 0.3, 0.2 (n = 5): α = 0.2 -> rank ⌈6·0.8⌉ = ⌈4.8⌉ = 5 -> 0.5; α = 0.4 ->
    ⌈3.6⌉ = 4 -> 0.4; α = 0.5 -> ⌈3⌉ = 3 -> 0.3. n = 3 at α = 0.2: ⌈3.2⌉ = 4 > 3 -> +inf (every label
    passes); n = 0 -> +inf. n = 9 at α = 0.1: (10)(0.9) is 9 exactly, the 9th score, not +inf.
    Bug caught: ⌈n(1 − α)⌉ without the +1 (α = 0.2 would give the 4th, 0.4), a 0-based rank, the
    edge answered with the largest score instead of +inf, 10·0.9 rounded up to 10."""
    s = [0.5, 0.1, 0.4, 0.3, 0.2]
    assert CF.conformal_quantile(s, 0.2) == 0.5
    assert CF.conformal_quantile(s, 0.4) == 0.4
    assert CF.conformal_quantile(s, 0.5) == 0.3
    assert CF.conformal_quantile([0.1, 0.2, 0.3], 0.2) == math.inf
    assert CF.conformal_quantile([], 0.5) == math.inf
    nine = [i / 10 for i in range(1, 10)]
    assert CF.conformal_rank(9, 0.1) == 9 and CF.conformal_quantile(nine, 0.1) == 0.9
    with pytest.raises(ValueError, match="alpha"):
        CF.conformal_quantile(s, 0.0)


def test_thresholds_sets_coverage_and_size_by_hand():
    """Three classes, five calibration images. Class 0's positives have p = 0.9, 0.6, 0.8 (scores
    0.1, 0.4, 0.2); α = 0.25: rank ⌈4·0.75⌉ = 3 -> t_0 = 0.4. Class 1's positives p = 0.7, 0.95,
    0.5, 0.85 (0.3, 0.05, 0.5, 0.15): rank ⌈3.75⌉ = 4 -> t_1 = 0.5. Class 2 has one positive:
    ⌈1.5⌉ = 2 > 1 -> +inf. Test images then: p_0 ≥ 0.6, p_1 ≥ 0.5, class 2 always — sets, coverage
    and mean size read off by hand."""
    cal_p = np.array([[0.9, 0.7, 0.1], [0.6, 0.95, 0.2], [0.8, 0.5, 0.3], [0.1, 0.85, 0.9], [0.2, 0.1, 0.4]])
    cal_y = np.array([[1, 1, 0], [1, 1, 0], [1, 1, 0], [0, 1, 1], [0, 0, 0]])
    t = CF.classwise_thresholds(cal_p, cal_y, 0.25)
    assert t[0] == pytest.approx(0.4) and t[1] == pytest.approx(0.5) and t[2] == math.inf
    test_p = np.array([[0.65, 0.4, 0.0], [0.55, 0.5, 0.9], [0.99, 0.2, 0.1]])
    test_y = np.array([[1, 1, 0], [1, 0, 1], [1, 1, 0]])
    sets = CF.label_sets(test_p, t)
    assert sets.tolist() == [[True, False, True], [False, True, True], [True, False, True]]
    cov = CF.coverage(sets, test_y)
    # class 0: 2 of 3 positives in; class 1: 0 of 2; class 2: 1 of 1; overall 3 of 6
    assert cov["per_class"].tolist() == pytest.approx([2 / 3, 0.0, 1.0])
    assert cov["overall"] == pytest.approx(0.5)
    assert CF.mean_set_size(sets) == pytest.approx(2.0)
    ev = CF.evaluate(test_p, test_y, t)
    assert ev["mean_set_size"] == pytest.approx(2.0) and ev["overall"] == pytest.approx(0.5)
    assert math.isnan(CF.coverage(sets, np.zeros((3, 3)))["overall"])


def test_coverage_holds_on_exchangeable_draws():
    """500 draws: per class (α = 0.1, n_c = 19 calibration positives, so ⌈20·0.9⌉ = 18), the
    calibration and 200 test positives' probabilities come from the same Beta law (one per class),
    negatives from another. Conformal theory: each test positive is covered with probability in
    [1 − α, 1 − α + 1/(n_c + 1)] = [0.90, 0.95] (continuous scores). Oracle: the mean coverage over
    the draws lies in that band widened by 4 Monte Carlo standard errors, overall and per class.
    Bug caught: the rank off by one either way (coverage ≈ 0.85 or 1.0 at n = 19), the scores
    taken as p instead of 1 − p, negatives in the calibration."""
    rng = np.random.default_rng(0)
    alpha, n_c, n_test, C, draws = 0.1, 19, 200, 3, 500
    laws = [(4, 2), (2, 2), (6, 1)]
    per_draw = np.empty((draws, C))
    for d in range(draws):
        cal_p = np.concatenate([np.stack([rng.beta(*laws[c], n_c) if c == k else rng.beta(1, 5, n_c)
                                          for c in range(C)], 1) for k in range(C)])
        cal_y = np.repeat(np.eye(C, dtype=int), n_c, axis=0)
        t = CF.classwise_thresholds(cal_p, cal_y, alpha)
        test_p = np.stack([rng.beta(*laws[c], n_test) for c in range(C)], 1)
        per_draw[d] = CF.coverage(CF.label_sets(test_p, t), np.ones((n_test, C)))["per_class"]
    lo, hi = 1 - alpha, 1 - alpha + 1 / (n_c + 1)
    for values in (per_draw.mean(1), *per_draw.T):
        se = values.std(ddof=1) / math.sqrt(draws)
        assert lo - 4 * se <= values.mean() <= hi + 4 * se, (values.mean(), lo, hi, se)


def test_the_set_size_shrinks_as_alpha_grows():
    """One calibration and test set; α from 0.02 to 0.6: the thresholds and the mean set size never
    grow, and fall overall. Bug caught: the rank read from the wrong end (sets growing with α)."""
    rng = np.random.default_rng(1)
    cal_p, test_p = rng.random((300, 4)), rng.random((300, 4))
    cal_y = (rng.random((300, 4)) < cal_p).astype(int)
    sizes, ts = [], []
    for a in (0.02, 0.05, 0.1, 0.2, 0.3, 0.45, 0.6):
        t = CF.classwise_thresholds(cal_p, cal_y, a)
        ts.append(t)
        sizes.append(CF.mean_set_size(CF.label_sets(test_p, t)))
    assert all(b <= a for a, b in zip(sizes, sizes[1:])) and sizes[-1] < sizes[0]
    assert all((b <= a).all() for a, b in zip(ts, ts[1:]))


def test_observed_thresholds_use_the_same_rule_and_lose_the_guarantee():
    """Fed the observed positives (1 in 1/0/-1 labels), the rule is the same function of them
    (oracle: classwise_thresholds on a 0/1 mask written here). When the annotator marks only the
    most confident positive of each class (not an exchangeable draw), the thresholds are too tight:
    test coverage falls far below 1 − α. Bug caught: unknowns (-1) or negatives read as positives."""
    rng = np.random.default_rng(2)
    p = rng.beta(3, 2, (400, 2))
    y = np.ones((400, 2), dtype=int)
    observed = np.full((400, 2), -1)
    top = np.argsort(-p, axis=0)[:40]  # the 40 most confident positives of each class are observed
    for c in range(2):
        observed[top[:, c], c] = 1
    observed[:5, 0] = 0
    mask = (observed == 1).astype(int)
    assert CF.observed_thresholds(p, observed, 0.1).tolist() == CF.classwise_thresholds(p, mask, 0.1).tolist()
    test_p = rng.beta(3, 2, (2000, 2))
    cov = CF.coverage(CF.label_sets(test_p, CF.observed_thresholds(p, observed, 0.1)), np.ones((2000, 2)))
    assert cov["overall"] < 0.5
    fair = CF.coverage(CF.label_sets(test_p, CF.classwise_thresholds(p, y, 0.1)), np.ones((2000, 2)))
    assert fair["overall"] >= 0.87


def test_the_oracle_threshold_is_the_smallest_that_covers():
    """On the test set itself: coverage of each class ≥ 1 − α with the oracle threshold, and below
    it with the next smaller score (oracle: checked by stepping down one score); a class with no
    positive gets -inf (an empty column). Bug caught: the conformal +1 in the oracle (too wide)."""
    rng = np.random.default_rng(3)
    p = rng.random((57, 3))
    y = (rng.random((57, 3)) < 0.5).astype(int)
    y[:, 2] = 0
    alpha = 0.2
    t = CF.oracle_thresholds(p, y, alpha)
    assert t[2] == -math.inf and not CF.label_sets(p, t)[:, 2].any()
    cov = CF.coverage(CF.label_sets(p, t), y)["per_class"]
    for c in range(2):
        assert cov[c] >= 1 - alpha
        scores = np.sort(1 - p[y[:, c] == 1, c])
        lower = scores[scores < t[c]]
        if lower.size:
            t2 = t.copy()
            t2[c] = lower[-1]
            assert CF.coverage(CF.label_sets(p, t2), y)["per_class"][c] < 1 - alpha
