"""The "top of the table" exercises reward only what the records show: the two highest means are
facts of the record, and the lead is *decided* only where a claim comparing the two holds."""
from __future__ import annotations

import pytest

from mlpl_lab.course import exercises as ex

MAP = {"full labels": 90.0, "GR": 81.5, "EM": 81.3, "AN": 70.0}


def _claims(verdict_gr_em: str):
    return {"GR beats AN (single positive)": {"verdict": "holds"},
            "GR beats the best other zoo method (EM)": {"verdict": verdict_gr_em,
                                                        "a": {"1": 81.4, "2": 81.6}, "b": {"1": 81.2, "2": 81.4}}}


def test_an_inconclusive_lead_is_not_decided_and_calling_it_decided_fails(capsys):
    claims = _claims("inconclusive")
    assert ex.decided_lead("GR", "EM", claims) is False
    assert ex.check_top_mean("t", ("GR", "EM", False), MAP, claims, exclude=("full labels",))
    capsys.readouterr()
    assert not ex.check_top_mean("t", ("GR", "EM", True), MAP, claims, exclude=("full labels",))
    student = capsys.readouterr().out  # a student's line does not say what the evidence decides
    assert "does not decide" not in student and "the two rows are right" in student
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ex.ANSWERS_ENV, ex.INSTRUCTOR)
        assert not ex.check_top_mean("t", ("GR", "EM", True), MAP, claims, exclude=("full labels",))
    assert "not a finding" in capsys.readouterr().out


def test_a_holding_claim_decides_the_lead():
    claims = _claims("holds (Holm)")
    assert ex.decided_lead("GR", "EM", claims) is True
    assert ex.check_top_mean("t", ("GR", "EM", True), MAP, claims, exclude=("full labels",))
    assert not ex.check_top_mean("t", ("GR", "EM", False), MAP, claims, exclude=("full labels",))


def test_wrong_rows_unanswered_and_names_inside_other_names():
    claims = _claims("holds")
    assert not ex.check_top_mean("t", ("EM", "GR", False), MAP, claims, exclude=("full labels",))
    assert not ex.check_top_mean("t", (None, None, None), MAP, claims, exclude=("full labels",))
    assert not ex.check_top_mean("t", ("full labels", "GR", False), MAP, claims, exclude=("full labels",))
    # "EM" is not named by a claim on "EM+APL"
    assert ex.decided_lead("GR", "EM", {"GR beats EM+APL": {"verdict": "holds"}}) is False


def test_a_claim_on_other_runs_does_not_decide_the_lead():
    """GR vs EM holds at a longer schedule but is inconclusive on the runs the record shows (as in
    chapter 02 under cpu): only the claim on the same runs counts."""
    claims = {"GR beats the best other zoo method (EM)": {"verdict": "inconclusive",
                                                          "a": {"1": 81.4, "2": 81.6}, "b": {"1": 81.2, "2": 81.4}},
              "GR beats EM with both trained 72 epochs (length check)": {
                  "verdict": "holds", "a": {"1": 83.0, "2": 83.2}, "b": {"1": 82.4, "2": 82.6}}}
    values = {"full labels": 90.0, "GR": 81.5, "EM": 81.3, "AN": 70.0}
    assert ex.decided_lead("GR", "EM", claims) is True          # names alone: fooled by the other schedule
    assert ex.decided_lead("GR", "EM", claims, values) is False  # the same runs: not decided
    assert ex.check_top_mean("t", ("GR", "EM", False), values, claims, exclude=("full labels",))
    assert not ex.check_top_mean("t", ("GR", "EM", True), values, claims, exclude=("full labels",))


# --- the other "which row leads" exercises: 01's largest gap, 04's largest margin, 07's best mean rank ---
GAPS = {"single positive": 18.1, "drop 50 %": 13.1, "known 10 %": 38.4}


def _an_claims(intervals):
    """Chapter 01's claims: one per regime, full labels vs AN, each with its family-wise interval
    (``intervals``: regime -> (low, high)); none compares two regimes' gaps."""
    return {f"full labels beat AN under {r}": {"verdict": "holds", "margin": GAPS[r], "ci_family": list(ci), "n": 5}
            for r, ci in intervals.items()}


#: the cpu series' intervals (the handbook's results block): known 10 % [35.08, 41.74] lies 15 points
#: above single positive's [16.73, 19.54]
APART = {"single positive": (16.73, 19.54), "drop 50 %": (11.65, 14.48), "known 10 %": (35.08, 41.74)}


def test_01_a_lead_whose_intervals_lie_apart_is_decided():
    """Bug caught: the key called a 20-point gap (38.4 vs 18.1) with family-wise intervals 15 points
    apart "not decided", because no claim compares two regimes. The intervals decide it: the top
    regime's lies wholly above the runner-up's."""
    claims = _an_claims(APART)
    assert ex.intervals_apart("known 10 %", "single positive", claims, GAPS) is True
    assert ex.check_top_interval("t", ("known 10 %", "single positive", True), GAPS, claims)
    assert not ex.check_top_interval("t", ("known 10 %", "single positive", False), GAPS, claims)
    assert not ex.check_top_interval("t", ("single positive", "known 10 %", True), GAPS, claims)
    # two paired seeds decide nothing, however far apart their intervals (the claims' own rule)
    two = {c: dict(row, n=2) for c, row in claims.items()}
    assert ex.intervals_apart("known 10 %", "single positive", two, GAPS) is False


def test_01_overlapping_intervals_do_not_decide_the_lead():
    """single positive 18.1 [16.0, 20.2] vs drop 50 % 13.1 [12.0, 16.5]: the means differ by 5 points
    but the intervals overlap (16.0 < 16.5), so the lead is not decided; touching is not apart either."""
    gaps = {"single positive": 18.1, "drop 50 %": 13.1}
    claims = _an_claims({"single positive": (16.0, 20.2), "drop 50 %": (12.0, 16.5)})
    assert ex.intervals_apart("single positive", "drop 50 %", claims, gaps) is False
    assert ex.check_top_interval("t", ("single positive", "drop 50 %", False), gaps, claims)
    assert not ex.check_top_interval("t", ("single positive", "drop 50 %", True), gaps, claims)
    touching = _an_claims({"single positive": (16.5, 20.2), "drop 50 %": (12.0, 16.5)})
    assert ex.intervals_apart("single positive", "drop 50 %", touching, gaps) is False
    # a row no claim measures decides nothing
    assert ex.intervals_apart("single positive", "known 10 %", claims, gaps | {"known 10 %": 1.0}) is False


MARGINS = {"drop 25 %": 1.0, "drop 50 %": 1.5, "drop 75 %": 2.5, "single positive": 0.5}


def _cls_claims(verdict: str, a=(2.4, 2.6), b=(0.9, 1.1)):
    """Chapter 04's margin-growth claim: CLS − AN per seed at drop 75 % vs at drop 25 %."""
    return {"CLS beats AN under drop 75 %": {"verdict": "holds", "a": {"1": 70.0}, "b": {"1": 67.5}},
            "the margin over AN grows with the missing rate (drop 75 % vs 25 %)": {
                "verdict": verdict, "a": {"1": a[0], "2": a[1]}, "b": {"1": b[0], "2": b[1]}}}


def test_04_a_margin_lead_over_a_regime_no_claim_compares_is_not_decided():
    """drop 75 % leads drop 50 % (2.5 vs 1.5), but the growth claim compares drop 75 % with 25 %:
    nothing decides 75 vs 50."""
    claims = _cls_claims("holds (Holm)")
    assert ex.decided_lead("drop 75 %", "drop 50 %", claims, MARGINS) is False
    assert ex.check_top_mean("t", ("drop 75 %", "drop 50 %", False), MARGINS, claims)
    assert not ex.check_top_mean("t", ("drop 75 %", "drop 50 %", True), MARGINS, claims)


def test_04_the_growth_claim_decides_75_over_25_when_it_holds_and_only_then():
    """With drop 50 % gone (the cpu-like grid has only two regimes a claim pairs), the top two are
    drop 75 % (mean 2.5) and drop 25 % (mean 1.0): the claim on exactly those per-seed margins
    decides the lead when it holds, and not when it is inconclusive."""
    two = {"drop 25 %": 1.0, "drop 75 %": 2.5}
    assert ex.check_top_mean("t", ("drop 75 %", "drop 25 %", True), two, _cls_claims("holds (Holm)"))
    assert not ex.check_top_mean("t", ("drop 75 %", "drop 25 %", False), two, _cls_claims("holds (Holm)"))
    assert ex.check_top_mean("t", ("drop 75 %", "drop 25 %", False), two, _cls_claims("inconclusive"))
    assert not ex.check_top_mean("t", ("drop 75 %", "drop 25 %", True), two, _cls_claims("inconclusive"))
    # the claim's runs are not the record's (its means 2.0 / 1.0, the record's 2.5 / 1.0): not decided
    assert ex.decided_lead("drop 75 %", "drop 25 %", _cls_claims("holds", a=(1.9, 2.1)), two) is False


RANKS = {"GR": 1.5, "LAC": 2.0, "CLS": 3.5, "AN": 5.0, "OPML-SP": None}


def test_07_a_mean_rank_lead_inside_the_critical_difference_is_not_decided():
    """Hand-derived: GR 1.5 vs LAC 2.0 differ by 0.5 < CD 1.2 — not decided even though Friedman
    rejects; GR vs CLS (2.0 > 1.2) would be. The left-out method (None) is never a leader."""
    rec = {"friedman_p": 0.01, "cd": 1.2, "methods": ["GR", "LAC", "CLS", "AN"]}
    assert ex.rank_lead_decided("GR", "LAC", RANKS, rec) is False
    assert ex.rank_lead_decided("GR", "CLS", RANKS, rec) is True
    assert ex.check_top_rank("t", ("GR", "LAC", False), RANKS, rec)
    assert not ex.check_top_rank("t", ("GR", "LAC", True), RANKS, rec)
    assert not ex.check_top_rank("t", ("AN", "CLS", False), RANKS, rec)  # the worst ranks, not the best


def test_07_a_lead_beyond_the_critical_difference_is_decided_only_if_friedman_rejects():
    ranks = {"GR": 1.0, "LAC": 3.0, "CLS": 3.5, "AN": 4.5}
    rec = {"friedman_p": 0.002, "cd": 1.2, "methods": list(ranks)}
    assert ex.check_top_rank("t", ("GR", "LAC", True), ranks, rec)
    assert not ex.check_top_rank("t", ("GR", "LAC", False), ranks, rec)
    # Friedman does not reject (p = 0.2): the post-hoc difference decides nothing
    assert ex.check_top_rank("t", ("GR", "LAC", False), ranks, dict(rec, friedman_p=0.2))
    assert not ex.check_top_rank("t", ("GR", "LAC", True), ranks, dict(rec, friedman_p=0.2))
    # no test at all (too few methods or regimes: the record holds None)
    assert ex.check_top_rank("t", ("GR", "LAC", False), ranks, dict(rec, friedman_p=None, cd=None))


def test_07_a_lead_over_five_data_sets_is_never_decided():
    """By hand: over N = 5 data sets no pairwise test can reach p <= 0.05 (a sign test's smallest p is
    2/2^5 = 0.0625), so a lead beyond the CD with a rejecting global test is still not decided;
    at N = 6 (2/2^6 = 0.03125) it is."""
    ranks = {"GR": 1.0, "LAC": 3.0, "CLS": 3.5, "AN": 4.5}
    rec = {"p": 0.002, "cd": 1.2, "methods": list(ranks), "N": 5}
    assert ex.rank_lead_decided("GR", "LAC", ranks, rec) is False
    assert ex.rank_lead_decided("GR", "LAC", ranks, dict(rec, N=6)) is True
