"""Families declared per question and the one verdict rule (the family-wise interval decides),
against a printed t table and hand-made cases; never against the code's own helpers."""
from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest

from mlpl_lab.analysis.claims import Claim, Family, claims_record, claims_table

# Student t quantiles t(1 - tail, df), typed from a printed table (e.g. Fisher & Yates; any
# statistics textbook's Table of the t distribution), one-tailed probability in the column head
T_TABLE = {(4, 0.025): 2.776, (4, 0.005): 4.604, (4, 0.0025): 5.598,
           (2, 0.025): 4.303, (2, 0.005): 9.925}


def runs(values, converged=True):
    return [SimpleNamespace(spec=SimpleNamespace(seed=s), best={"test_mAP": v}, converged=converged)
            for s, v in enumerate(values)]


def family_of(m, name="q", head=None):
    """A table whose family ``name`` declares ``m`` claims: ``head`` (a, b) first, then fillers."""
    fam = Family(name, m)
    rows = [Claim("head", "", "A", "B", runs(head[0]), runs(head[1]), family=fam)] if head else []
    rows += [Claim(f"filler {i}", "", "A", "B", runs([71, 72, 73]), runs([70, 70, 70]), family=fam)
             for i in range(m - len(rows))]
    return rows


# d = 1, 2, 3, 4, 5: mean 3, s_d = sqrt(2.5), s_d/sqrt(5) = sqrt(0.5)
A5, B5 = [71, 72, 73, 74, 75], [70, 70, 70, 70, 70]
SE5 = math.sqrt(0.5)


@pytest.mark.parametrize("m, tail", [(1, 0.025), (5, 0.005), (10, 0.0025)])
def test_family_interval_is_bonferroni_from_the_printed_table(m, tail):
    """m = 5: level 1 − 0.05/5 = 0.99, two-sided, so the one-tailed 0.005 column; m = 10: 0.0025."""
    t = claims_table(family_of(m, head=(A5, B5)))
    half = T_TABLE[(4, tail)] * SE5
    assert t.loc["head", "_flo"] == pytest.approx(3 - half, abs=2e-3)
    assert t.loc["head", "_fhi"] == pytest.approx(3 + half, abs=2e-3)
    # the unadjusted 95 % interval does not move with m
    assert t.loc["head", "_lo"] == pytest.approx(3 - T_TABLE[(4, 0.025)] * SE5, abs=2e-3)
    rec = claims_record(t)["head"]
    assert rec["family"] == "q" and rec["family_size"] == m
    assert rec["ci_family"] == [pytest.approx(3 - half, abs=2e-3), pytest.approx(3 + half, abs=2e-3)]


def test_the_verdict_is_read_off_the_interval_shown():
    """3 ± 2.776·0.707 = [1.04, 4.96] holds alone; 3 ± 4.604·0.707 = [−0.26, 6.26] in a family of
    five contains 0: inconclusive, with the interval that decided it in the table."""
    alone = claims_table(family_of(1, head=(A5, B5))).loc["head"]
    five = claims_table(family_of(5, head=(A5, B5))).loc["head"]
    assert alone["verdict"] == "holds"
    assert five["verdict"] == "inconclusive" and "m = 5" in five["reason"]
    assert five["margin [family-wise CI]"] == "+3.00 [-0.26, +6.26]"
    assert five["family"] == "q (m = 5)"
    # the mirror: B − A lies below 0 on the same interval
    mirror = claims_table(family_of(1, head=(B5, A5))).loc["head"]
    assert mirror["verdict"] == "does not hold"


def test_three_seeds_at_two_df():
    """n = 3, d = 2, 3, 4: mean 3, s_d/sqrt(3) = 1/sqrt(3); m = 5 → 3 ± 9.925/sqrt(3) = 3 ± 5.73."""
    t = claims_table(family_of(5, head=([72, 73, 74], [70, 70, 70])))
    assert t.loc["head", "_fhi"] - 3 == pytest.approx(T_TABLE[(2, 0.005)] / math.sqrt(3), abs=3e-3)
    assert t.loc["head", "verdict"] == "inconclusive"
    one = claims_table(family_of(1, head=([72, 73, 74], [70, 70, 70])))
    assert one.loc["head", "_fhi"] - 3 == pytest.approx(T_TABLE[(2, 0.025)] / math.sqrt(3), abs=3e-3)
    assert one.loc["head", "verdict"] == "holds"


def test_a_family_that_gains_an_unrelated_claim_keeps_its_verdicts():
    """Adding claims of another question (another family, and a control of a claim of that other
    family) changes nothing in the first family: neither its intervals nor its verdicts. Bug
    caught: m counted over the table."""
    base = family_of(2, head=([71.0, 72.0, 73.2, 74.1, 75.3], B5))
    before = claims_table(base)
    other = Family("another question", 3)
    more = base + [Claim(f"o{i}", "", "C", "D", runs([80, 81, 82]), runs([70, 70, 70]), family=other)
                   for i in range(3)] + [Claim("check", "", "C", "D", runs(A5), runs(B5), control_of="o0")]
    after = claims_table(more)
    for claim in before.index:
        for col in ("verdict", "margin [family-wise CI]", "_flo", "_fhi", "_m"):
            assert after.loc[claim, col] == before.loc[claim, col], (claim, col)
    # the control sits in the family of the claim it checks, which counts it: 3 declared + 1
    assert after.loc["check", "kind"] == "control" and after.loc["check", "_family"] == "another question"
    assert after.loc["check", "_m"] == after.loc["o1", "_m"] == 4
    assert after.loc["o1", "family"] == "another question (m = 4: 3 declared + 1 control)"


# -- controls decide: a family of two claims and one control, worked by hand ----------------------
# head: d = 1..5 (A5 − B5), mean 3, s_d/sqrt(5) = sqrt(0.5). The family declares m = 2; the control
# makes it m = 3, so every interval of the family is at level 1 − 0.05/3 (two-sided: t at
# 1 − 0.05/6, 4 df, from scipy): 3 ± t·sqrt(0.5) lies above 0, so the head holds alone.
def _t(m, df=4):
    from scipy import stats

    return float(stats.t.ppf(1 - 0.05 / (2 * m), df))


def _with_control(control_a, control_b):
    fam = Family("q", 2)
    return claims_table([Claim("head", "", "A", "B", runs(A5), runs(B5), family=fam),
                         Claim("other", "", "A", "B", runs([71, 72, 73]), runs([70, 70, 70]), family=fam),
                         Claim("check", "", "A", "B", runs(control_a), runs(control_b), control_of="head")])


def test_a_control_on_the_other_side_overturns_its_claim():
    """The control: d = −3, −4, −5, −6, −7 (mean −5, the same spread as the head's). At m = 3:
    head 3 ± 3.96·0.707 = [+0.20, +5.80] (holds alone), control −5 ± 2.80 = [−7.80, −2.20] (does
    not hold): the head is overturned by its control, and every total counts it so."""
    t = _with_control([70] * 5, [73, 74, 75, 76, 77])
    half = _t(3) * SE5
    assert half == pytest.approx(2.80, abs=5e-3)  # the hand-worked number, from scipy's quantile
    assert t.loc["head", "_m"] == t.loc["check", "_m"] == t.loc["other", "_m"] == 3
    assert t.loc["head", "_flo"] == pytest.approx(3 - half) and t.loc["head", "_fhi"] == pytest.approx(3 + half)
    assert t.loc["check", "_flo"] == pytest.approx(-5 - half) and t.loc["check", "_fhi"] == pytest.approx(-5 + half)
    # not at the declared m = 2 (t at 1 − 0.05/4): the interval that decides counts the control
    assert t.loc["head", "_fhi"] - 3 != pytest.approx(_t(2) * SE5, abs=1e-3)
    assert t.loc["check", "verdict"] == "does not hold" and t.loc["check", "kind"] == "control"
    assert t.loc["head", "_verdict_alone"] == "holds"
    assert t.loc["head", "verdict"] == "overturned by its control"
    assert "check" in t.loc["head", "reason"] and "other side" in t.loc["head", "reason"]
    rec = json.loads(json.dumps(claims_record(t)))
    assert rec["head"]["verdict"] == "overturned by its control" and rec["head"]["verdict_alone"] == "holds"
    assert rec["head"]["controls"] == ["check"] and rec["check"]["family"] == "q"
    assert rec["head"]["level_family"] == pytest.approx(1 - 0.05 / 3)
    from claims_oracle import check_claims_record

    check_claims_record({k: dict(v, id=k, claim=f"sentence {k}") for k, v in rec.items()})
    from mlpl_lab.analysis.claims import takeaways

    assert "**Overturned by its control at this scale** (1):" in takeaways(t)


def test_an_inconclusive_control_leaves_its_claim_inconclusive_and_an_agreeing_one_changes_nothing():
    """Control d = 0.5, −0.5, 1, −1, 0.5: mean 0.1, its interval at m = 3 contains 0, so the head
    (holds alone) reads "inconclusive (its control is inconclusive)". A control with the head's own
    differences holds: the head holds. A head inconclusive alone stays inconclusive whatever its
    control says."""
    t = _with_control([70.5, 69.5, 71, 69, 70.5], B5)
    assert t.loc["check", "verdict"] == "inconclusive"
    assert t.loc["head", "verdict"] == "inconclusive (its control is inconclusive)"
    agree = _with_control(A5, B5)
    assert agree.loc["check", "verdict"] == agree.loc["head", "verdict"] == "holds"
    # the head inconclusive alone: d = 3 ± large spread (m = 3: 0 inside); its control does not hold
    fam = Family("q", 1)
    weak = claims_table([Claim("head", "", "A", "B", runs([80, 60, 75, 66, 74]), runs(B5), family=fam),
                         Claim("check", "", "A", "B", runs([70] * 5), runs([73, 74, 75, 76, 77]), control_of="head")])
    assert weak.loc["head", "_verdict_alone"] == weak.loc["head", "verdict"] == "inconclusive"


def test_m_is_declared_not_counted():
    """A family declared with m = 4 whose table shows 2 claims (two rows did not run) is still
    corrected for 4; a family holding more claims than it declared is an error naming the fix."""
    fam = Family("q", 4)
    t = claims_table([Claim("head", "", "A", "B", runs(A5), runs(B5), family=fam),
                      Claim("x", "", "A", "B", runs(A5), runs(B5), family=fam)])
    assert t.loc["head", "_m"] == 4
    with pytest.raises(ValueError, match="declared m = 1"):
        claims_table([Claim("a", "", "A", "B", runs(A5), runs(B5), family=Family("q", 1)),
                      Claim("b", "", "A", "B", runs(A5), runs(B5), family=Family("q", 1))])
    with pytest.raises(ValueError, match="declared twice"):
        claims_table([Claim("a", "", "A", "B", runs(A5), runs(B5), family=Family("q", 2)),
                      Claim("b", "", "A", "B", runs(A5), runs(B5), family=Family("q", 3))])
    with pytest.raises(KeyError, match="controls of claims not in the table"):
        claims_table([Claim("a", "", "A", "B", runs(A5), runs(B5), control_of="missing")])
    with pytest.raises(ValueError, match="size must be"):
        Family("q", 0)


def test_tables_are_grouped_by_family_with_controls_after_their_claim():
    f, g = Family("F", 2), Family("G", 1)
    t = claims_table([Claim("f1", "", "A", "B", runs(A5), runs(B5), family=f),
                      Claim("g1", "", "A", "B", runs(A5), runs(B5), family=g),
                      Claim("c", "", "A", "B", runs(A5), runs(B5), control_of="f1"),
                      Claim("f2", "", "A", "B", runs(A5), runs(B5), family=f)])
    assert list(t.index) == ["f1", "f2", "c", "g1"]


def test_at_risk_marks_the_losing_side_only():
    """A wins; B (the loser) did not converge: at risk. A (the winner) did not converge: not at
    risk (conservative). Bug caught: the mark on any unconverged run, or on the winner."""
    lose_bad = claims_table([Claim("x", "", "A", "B", runs(A5), runs(B5, converged=False))])
    assert bool(lose_bad.loc["x", "_at_risk"]) and "at risk" in lose_bad.loc["x", "converged"]
    rec = json.loads(json.dumps(claims_record(lose_bad)))["x"]
    assert rec["at_risk"] is True and rec["losing_side"] == "B"
    win_bad = claims_table([Claim("x", "", "A", "B", runs(A5, converged=False), runs(B5))])
    assert not bool(win_bad.loc["x", "_at_risk"]) and "at risk" not in win_bad.loc["x", "converged"]
    # "B beats A" does not hold: its own first side (labelled B) loses, and it did not converge
    neg = claims_table([Claim("x", "", "B", "A", runs(B5, converged=False), runs(A5))])
    assert neg.loc["x", "verdict"] == "does not hold"
    assert bool(neg.loc["x", "_at_risk"]) and claims_record(neg)["x"]["losing_side"] == "B"


def test_the_course_counts_each_finding_once():
    """Hand-made records of three notebooks: 02 and 07 state "GR beats AN" on the same runs (07
    with another family, so another verdict), 07 states it mirrored as well under another name
    (one comparison), 01 a finding of its own, 07 a control and an observation (not findings).
    By hand: 3 distinct findings (5 stated: two stated again), 1 compared in two notebooks,
    1 holding everywhere (01's), 1 differing (GR beats AN); the other (X vs Y) is inconclusive."""
    from mlpl_lab.reporting.audit import distinct_findings

    gr, an = {"a": ["k1", "k2", "k3"], "b": ["k4", "k5", "k6"]}, None
    rec = {
        "01": {"full beats AN": {"kind": "finding", "verdict": "holds", "run_keys": {"a": ["f1"], "b": ["f2"]}}},
        "02": {"GR beats AN": {"kind": "finding", "verdict": "holds", "run_keys": gr}},
        "07": {"GR beats AN under sp": {"kind": "finding", "verdict": "inconclusive",
                                        "run_keys": {"a": ["k3", "k1", "k2"], "b": ["k6", "k5", "k4"]}},
               "AN beats GR under sp": {"kind": "finding", "verdict": "does not hold",
                                        "run_keys": {"a": gr["b"], "b": gr["a"]}},
               "X beats Y": {"kind": "finding", "verdict": "inconclusive", "run_keys": None,
                             "a": {"1": 70.0, "2": 71.0, "3": 72.0}, "b": {"1": 69.0, "2": 72.0, "3": 71.5}},
               "length check": {"kind": "control", "verdict": "holds", "run_keys": {"a": ["l1"], "b": ["l2"]}},
               "two seeds": {"kind": "observation", "verdict": "inconclusive (2 seeds)",
                             "run_keys": {"a": ["o1"], "b": ["o2"]}}},
    }
    d = distinct_findings(rec)
    assert (d["distinct"], d["stated"], d["shared"], d["holds"], d["does not hold"], d["differ"]) == (3, 5, 1, 1, 0, 1)
    # records without run keys: the per-seed values identify the comparison (mirrored too)
    va, vb = {"1": 80.0, "2": 81.5, "3": 79.0}, {"1": 70.0, "2": 70.5, "3": 71.0}
    old = {"02": {"GR beats AN": {"kind": "finding", "verdict": "holds", "a": va, "b": vb}},
           "07": {"GR beats AN under sp": {"kind": "finding", "verdict": "holds", "a": dict(va), "b": dict(vb)},
                  "AN beats GR": {"kind": "finding", "verdict": "does not hold", "a": vb, "b": va},
                  "GR beats EM": {"kind": "finding", "verdict": "holds", "a": va, "b": {"1": 75.0, "2": 70.5, "3": 71.0}}}}
    d = distinct_findings(old)
    assert (d["distinct"], d["stated"], d["shared"], d["holds"], d["differ"]) == (2, 4, 1, 1, 1)


def test_fieller_against_a_hand_worked_example():
    """d₁ = 2, 4, 2, 4 (mean 3), d₂ = 4, 6, 6, 4 (mean 5): v₁₁ = v₂₂ = (4/3)/4 = 1/3, v₁₂ = 0 (the
    deviations ∓1 cancel); t(0.975, 3) = 3.182 from a printed table, t² = 10.125. a = 25 − 3.375
    = 21.625, b = −30, c = 9 − 3.375 = 5.625; discriminant 900 − 4·21.625·5.625 = 413.44, root
    20.333; ρ = (30 ∓ 20.333)/43.25 = 0.2235 and 1.1638 around 3/5 = 0.6."""
    from mlpl_lab.analysis.fieller import fieller

    f = fieller([2, 4, 2, 4], [4, 6, 6, 4])
    assert f["estimate"] == pytest.approx(0.6)
    assert f["lo"] == pytest.approx(0.2235, abs=1e-3) and f["hi"] == pytest.approx(1.1638, abs=1e-3)
    # a denominator whose interval reaches 0 gives no interval, and says so
    wide = fieller([2, 4, 2, 4], [1, -1, 2, -1.5])
    assert math.isnan(wide["lo"]) and "unbounded" in wide["reason"]
    assert "at least 2" in fieller([1.0], [2.0])["reason"]
