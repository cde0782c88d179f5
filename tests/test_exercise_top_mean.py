"""The "top of the table" exercises reward only what the records show: the two highest means are
facts of the record, and the lead is *decided* only where a claim comparing the two holds."""
from __future__ import annotations

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
