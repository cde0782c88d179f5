"""Ranks over independent data sets (mlpl_lab.analysis.ranks) against hand-worked oracles."""
import itertools
import math

import numpy as np
import pytest

from mlpl_lab.analysis import ranks as rk


def test_iman_davenport_reproduces_demsar_worked_example():
    # Demšar (JMLR 2006), §3.2.2: four methods on fourteen data sets, mean ranks 3.143, 2.000,
    # 2.893, 1.964; by hand χ²_F = 12·14/(4·5)·[3.143² + 2² + 2.893² + 1.964² − 4·5²/4] = 9.28 and
    # F_F = 13·9.28 / (14·3 − 9.28) = 3.69, above the F(3, 39) critical value 2.85 at α = 0.05
    f, p, df = rk.iman_davenport(9.28, 4, 14)
    assert df == (3, 39)
    assert f == pytest.approx(13 * 9.28 / (42 - 9.28))
    assert round(f, 2) == 3.69
    assert p < 0.05 and f > 2.85


def test_friedman_chi2_from_ranks_matches_the_formula_by_hand():
    # three methods ranked 1,2,3 on two data sets and 2,1,3 on a third: mean ranks 4/3, 5/3, 3
    r = np.array([[1, 1, 2], [2, 2, 1], [3, 3, 3]], dtype=float)
    by_hand = 12 * 3 / (3 * 4) * ((4 / 3) ** 2 + (5 / 3) ** 2 + 3 ** 2 - 3 * 16 / 4)
    assert rk.friedman_chi2(r) == pytest.approx(by_hand)  # = 14/3
    assert by_hand == pytest.approx(14 / 3)


def test_exact_permutation_p_on_three_methods_and_two_data_sets():
    # data set 1 fixed at ranks (1, 2, 3); the six orders of data set 2 give rank sums
    # (2,4,6) ΣR² 56, (3,3,6) 54, (2,5,5) 54, (4,4,4) 48, (3,5,4) 50, (4,3,5) 50
    same = np.array([[1, 1], [2, 2], [3, 3]], dtype=float)   # ΣR² = 56: 1 of 6 at least as large
    p, how = rk.permutation_p(same)
    assert p == pytest.approx(1 / 6) and how.startswith("exact")
    swapped = np.array([[1, 2], [2, 1], [3, 3]], dtype=float)  # ΣR² = 54: 3 of 6
    assert rk.permutation_p(swapped)[0] == pytest.approx(3 / 6)
    flat = np.array([[1, 3], [2, 2], [3, 1]], dtype=float)  # ΣR² = 48, the least: all 6
    assert rk.permutation_p(flat)[0] == pytest.approx(1.0)


def test_monte_carlo_permutation_p_agrees_with_enumeration():
    rng = np.random.default_rng(3)
    r = np.array([rng.permutation(4) + 1 for _ in range(4)], dtype=float).T  # 4 methods × 4 data sets
    exact, how = rk.permutation_p(r)
    assert how.startswith("exact")
    approx, how_mc = rk.permutation_p(r, exact_limit=0, draws=40_000)
    assert how_mc.startswith("Monte Carlo")
    assert abs(approx - exact) < 0.01


def test_rank_test_on_scores_ranks_higher_first_and_tests_over_data_sets():
    # five data sets, four methods; A always best, D always worst, B and C swap
    scores = np.array([[90, 80, 70, 60, 85], [80, 75, 60, 50, 70], [81, 70, 65, 49, 69],
                       [50, 40, 30, 20, 35]], dtype=float)
    t = rk.rank_test(scores, ["A", "B", "C", "D"], [f"d{i}" for i in range(5)])
    # ranks by hand: A 1,1,1,1,1; B 3,2,3,2,2; C 2,3,2,3,3; D 4,4,4,4,4
    assert t["mean_ranks"] == pytest.approx({"A": 1.0, "B": 2.4, "C": 2.6, "D": 4.0})
    chi2 = 12 * 5 / (4 * 5) * (1 + 2.4 ** 2 + 2.6 ** 2 + 16 - 4 * 25 / 4)
    assert t["friedman_chi2"] == pytest.approx(chi2)
    assert t["F"] == pytest.approx(4 * chi2 / (5 * 3 - chi2))
    assert t["p"] < 0.001 and t["p_permutation"] < 0.01
    assert ("A", "D") in t["separated"] and ("B", "C") not in t["separated"]
    # but at N = 5 no pairwise test can reject at 0.05 (2/2^5 = 0.0625): the CD separates nothing
    assert t["pairwise_min_p"] == pytest.approx(0.0625) and t["pairwise"] is False
    assert not rk.cd_separates(t)
    # a sixth data set ranking alike: 2/2^6 = 0.03125 <= 0.05, and A's lead over D is separated
    six = rk.rank_test(np.c_[scores, [95, 85, 84, 40]], ["A", "B", "C", "D"], [f"d{i}" for i in range(6)])
    assert six["pairwise"] is True and ("A", "D") in six["separated"] and rk.cd_separates(six)


def test_the_smallest_p_a_pairwise_test_reaches_over_n_data_sets():
    """By hand: a two-sided sign test's most extreme outcome (every data set favours one side) has
    probability 2 × (1/2)^N; scipy's exact binomial test and Wilcoxon's exact signed-rank test agree."""
    from scipy import stats

    for n, p in [(3, 0.25), (5, 0.0625), (6, 0.03125), (10, 2 / 1024)]:
        assert rk.smallest_pairwise_p(n) == pytest.approx(p)
        assert stats.binomtest(n, n, 0.5).pvalue == pytest.approx(p)
        assert stats.wilcoxon(np.arange(1, n + 1), alternative="two-sided", method="exact").pvalue == pytest.approx(p)
    assert not rk.pairwise_can_reject(5) and rk.pairwise_can_reject(6)
    assert "with 5 data sets no pairwise test can reject at α = 0.05" in rk.pairwise_note(5)
    assert "2/2^5 = 0.0625" in rk.pairwise_note(5)


def test_the_family_view_states_no_pairwise_finding_at_five_families():
    """Chapter 07's caption at N = 5 (the cpu design's data sets): ranks and CD as description,
    no "ahead of", the computed sentence and the pooling caveat."""
    from mlpl_lab.chapters.benchmark.views import pairs_text

    scores = np.array([[90, 80, 70, 60, 85], [80, 75, 60, 50, 70], [81, 70, 65, 49, 69],
                       [50, 40, 30, 20, 35]], dtype=float)
    t = rk.rank_test(scores, ["GR", "B", "C", "Hill"], [f"d{i}" for i in range(5)])
    text = pairs_text(t)
    assert "ahead of" not in text and "GR and Hill" in text
    assert "with 5 data sets no pairwise test can reject at α = 0.05" in text and "0.0625" in text
    assert "depend on which methods are pooled" in text


def test_no_test_below_three_methods_and_a_clear_error_on_gaps():
    t = rk.rank_test(np.array([[1.0, 2.0], [2.0, 1.0]]), ["A", "B"], ["x", "y"])
    assert math.isnan(t["p"]) and "at least 3 methods" in t["reason"]
    assert not rk.cd_separates(t)
    with pytest.raises(ValueError, match="complete block"):
        rk.ranks(np.array([[1.0, math.nan], [2.0, 1.0]]))


def test_describe_ranks_prints_no_p():
    d = rk.describe_ranks(np.array([[3.0, 1.0], [2.0, 2.0], [1.0, 3.0]]), ["A", "B", "C"], ["r1", "r2"])
    assert d["ranks"]["A"] == {"r1": 1.0, "r2": 3.0}
    assert not any("p" == k or k.startswith("p_") for k in d)
