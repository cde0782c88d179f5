"""Claims: paired verdicts against scipy.stats as the oracle, family-wise (Bonferroni) intervals
against a printed t table, declared families, the audit's unpaired one-seed case, and the record a
reader recomputes from."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from mlpl_lab.analysis.claims import (Claim, Family, claims_record, claims_table, display_table,
                                      explain)


class R:
    def __init__(self, seed, v, converged=None):
        self.spec = type("S", (), {"seed": seed})()
        self.best = {"test_mAP": v}
        if converged is not None:
            self.converged = converged


def runs(values, **kw):
    return [R(s, v, **kw) for s, v in enumerate(values)]


def one(a, b, **kw):
    """The single row of a one-claim table."""
    return claims_table([Claim("A beats B", "paper", "A", "B", a, b, **kw)]).iloc[0]


def scipy_verdict(diffs):
    """The rule written from the issue with scipy: t-interval bounds, then the sign."""
    res = stats.ttest_1samp(diffs, 0.0)
    lo, hi = res.confidence_interval(0.95)
    if lo > 0:
        return "holds", res.pvalue
    if hi < 0:
        return "does not hold", res.pvalue
    return "inconclusive", res.pvalue


@pytest.mark.parametrize("n", [3, 10])
@pytest.mark.parametrize("shift", [2.0, 0.3, -2.0])
def test_paired_interval_and_p_match_scipy(n, shift):
    rng = np.random.default_rng(n)
    b = rng.normal(70, 3, n)
    a = b + shift + rng.normal(0, 1, n)
    row = one(runs(a), runs(b))
    res = stats.ttest_rel(a, b)
    lo, hi = res.confidence_interval(0.95)
    assert row["_margin"] == pytest.approx(np.mean(a - b))
    assert (row["_lo"], row["_hi"]) == (pytest.approx(lo), pytest.approx(hi))
    assert row["_p"] == pytest.approx(res.pvalue)
    assert (row["_flo"], row["_fhi"]) == (pytest.approx(lo), pytest.approx(hi))  # m = 1: the 95 % one
    assert row["verdict"] == scipy_verdict(a - b)[0] and row["kind"] == "finding"


def test_each_verdict_is_reached():
    assert one(runs([72, 73, 74]), runs([70, 70, 70]))["verdict"] == "holds"         # d = 2, 3, 4
    assert one(runs([67, 68, 66]), runs([70, 70, 70]))["verdict"] == "does not hold"  # d = -3, -2, -4
    row = one(runs([71, 69, 72]), runs([70, 70, 70]))                                 # d = 1, -1, 2
    assert row["verdict"] == "inconclusive" and row["reason"] == "the family-wise interval (95 %, m = 1) contains 0"


def test_two_seeds_are_an_observation_whatever_the_margin():
    # d = 10, 10.5: scipy gives t ≈ 41, p ≈ 0.015 — the old rule said "holds"
    row = one(runs([80, 80.5]), runs([70, 70]))
    assert stats.ttest_1samp([10, 10.5], 0).pvalue < 0.05
    assert row["verdict"] == "inconclusive (2 seeds)" and row["kind"] == "observation"
    assert row["_margin"] == pytest.approx(10.25)
    assert row["_m"] == 1
    assert one(runs([80]), runs([70]))["verdict"] == "inconclusive (1 seeds)"


def test_unpaired_one_seed_side_pairs_on_its_seed():
    """Audit §2: A = 70 on seed 0 vs B = 69, 60, 60 was +7 "holds"; paired it is +1 on seed 0."""
    row = one([R(0, 70.0)], runs([69.0, 60.0, 60.0]))
    assert row["_margin"] == pytest.approx(1.0) and row["_seeds"] == [0] and row["_diffs"] == [1.0]
    assert row["verdict"] == "inconclusive (1 seeds)" and row["kind"] == "observation"
    assert row["ours"] == "A 70.0 vs B 69.0" and row["seeds"] == "1: 0"


def test_zero_spread_is_inconclusive_where_scipy_degenerates():
    d = [1.5, 1.5, 1.5]
    res = stats.ttest_1samp(d, 0.0)
    lo, hi = res.confidence_interval(0.95)
    assert lo == hi == 1.5 and res.pvalue == 0.0  # scipy: zero-width interval, t = inf
    row = one(runs([71.5, 72.5, 73.5]), runs([70, 71, 72]))
    assert row["verdict"] == "inconclusive" and row["reason"].startswith("zero spread")
    assert math.isnan(row["_p"]) and math.isnan(row["_lo"]) and row["_margin"] == pytest.approx(1.5)
    same = one(runs([70, 71, 72]), runs([70, 71, 72]))  # scipy: NaN
    assert math.isnan(stats.ttest_1samp([0.0, 0.0, 0.0], 0.0).pvalue)
    assert same["verdict"] == "inconclusive" and same["reason"].startswith("zero spread")


def test_nan_and_empty_pairing_are_inconclusive_with_a_reason():
    row = one(runs([72, math.nan, 74]), runs([70, 70, 70]))
    assert math.isnan(stats.ttest_1samp([2, math.nan, 4], 0).pvalue)
    assert row["verdict"] == "inconclusive" and "seed 1" in row["reason"] and "not a number" in row["reason"]
    empty = one([R(0, 70.0), R(1, 71.0)], [R(2, 60.0), R(3, 61.0), R(4, 62.0)])
    assert empty["verdict"] == "inconclusive (0 seeds)" and empty["_n"] == 0
    assert "A on 0, 1" in empty["reason"] and "B on 2, 3, 4" in empty["reason"]


def test_converged_column():
    assert one(runs([72, 73, 74], converged=True), runs([70, 70, 70], converged=True))["converged"] == "yes"
    assert one(runs([72, 73, 74]), runs([70, 70, 70]))["converged"] == "unknown"
    mixed = [R(0, 72, True), R(1, 73, False), R(2, 74, False)]
    row = one(mixed, runs([70, 70, 70], converged=True))
    assert row["converged"] == "no: A seeds 1, 2" and not row["_converged"]
    assert claims_record(claims_table([Claim("c", "", "A", "B", mixed, runs([70, 70, 70]))]))["c"]["converged"] is False


def test_record_recomputes_and_is_json():
    a, b = [72.0, 73.5, 71.0, 74.0], [70.0, 71.0, 70.5, 70.0]
    t = claims_table([Claim("A beats B", "p", "A", "B", runs(a), runs(b)),
                      Claim("one seed", "p", "A", "B", [R(3, 70.0)], runs([69.0, 60.0, 60.0, 50.0]))])
    rec = json.loads(json.dumps(claims_record(t), allow_nan=False))
    r = rec["A beats B"]
    diffs = [r["a"][str(s)] - r["b"][str(s)] for s in r["seeds"]]
    assert r["diffs"] == pytest.approx(diffs) and r["n"] == len(r["seeds"]) == 4
    res = stats.ttest_1samp(diffs, 0.0)
    assert r["ci95"] == pytest.approx(list(res.confidence_interval(0.95)))
    assert r["p"] == pytest.approx(res.pvalue) and r["verdict"] == scipy_verdict(diffs)[0]
    assert r["kind"] == "finding" and r["sd"] == pytest.approx(np.std(diffs, ddof=1))
    o = rec["one seed"]
    assert o["seeds"] == [3] and o["diffs"] == [20.0] and o["kind"] == "observation"
    assert o["ci95"] == [None, None] and o["p"] is None and o["verdict"] == "inconclusive (1 seeds)"
    shown = display_table(t)
    assert not [c for c in shown.columns if c.startswith("_")]
    assert {"family", "paper", "ours", "margin [family-wise CI]", "95 % CI (unadjusted)", "seeds", "p",
            "verdict", "kind", "reason", "converged"} <= set(shown.columns)
    assert "p (Holm)" not in shown.columns
    assert t.loc["A beats B", "ours"] == f"A {np.mean(a):.1f} vs B {np.mean(b):.1f}"


def test_values_claim_and_explain():
    c = Claim.of_values("grows", "", "at 75", "at 25", {0: 3.0, 1: 4.0, 2: 5.0}, {0: 1.0, 1: 1.5, 2: 1.0})
    row = claims_table([c]).iloc[0]
    assert row["_diffs"] == [2.0, 2.5, 4.0] and row["kind"] == "finding"
    assert row["verdict"] == scipy_verdict([2.0, 2.5, 4.0])[0]
    text = explain()
    assert "Holm" not in text and "inconclusive (n seeds)" in text and "1 - 0.05/m" in text


def test_notebook_oracle_accepts_the_record_and_catches_a_wrong_verdict():
    """tests/claims_oracle.py (used by the notebook tests) on a table with findings in a declared
    family of three, an observation and a control; a flipped verdict, a wrong diff or a control
    that does not decide with its claim must fail it."""
    from claims_oracle import check_claims_record

    fam = Family("q", 3)
    t = claims_table([Claim("x", "", "A", "B", runs([72, 73, 74.5]), runs([70, 70, 70]), family=fam, id="q/x"),
                      Claim("y", "", "A", "B", runs([71, 69, 72, 70.5]), runs([70, 70, 70, 70]), family=fam, id="q/y"),
                      Claim("z", "", "A", "B", [R(1, 80.0)], runs([70, 71]), family=fam, id="q/z"),
                      Claim("w", "", "A", "B", runs([75, 76, 77.5]), runs([70, 70, 70]), control_of="q/x",
                            id="control/q/x")])
    rec = json.loads(json.dumps(claims_record(t)))
    check_claims_record(rec)
    # the control sits in the family of the claim it checks, counted in its m: 3 declared + 1
    assert rec["control/q/x"]["family"] == rec["q/x"]["family"] == "q"
    assert rec["control/q/x"]["family_size"] == rec["q/y"]["family_size"] == 4
    bad = json.loads(json.dumps(rec))
    bad["q/x"]["verdict"] = "inconclusive" if rec["q/x"]["verdict"] == "holds" else "holds"
    with pytest.raises(AssertionError):
        check_claims_record(bad)
    bad = json.loads(json.dumps(rec))
    bad["control/q/x"]["verdict"] = "does not hold"  # a control on the other side, its claim unchanged
    if rec["q/x"]["verdict"] == "holds":
        with pytest.raises(AssertionError):
            check_claims_record(bad)
    bad = json.loads(json.dumps(rec))
    bad["q/y"]["diffs"][0] += 1.0
    with pytest.raises(AssertionError):
        check_claims_record(bad)
    unkeyed = claims_record(claims_table([Claim("x", "", "A", "B", runs([72, 73, 74.5]), runs([70, 70, 70]))]))
    with pytest.raises(AssertionError):  # a claim keyed by its sentence
        check_claims_record(unkeyed)


def test_takeaways_group_every_claim_under_its_verdict():
    """Hand-built rows: a clear win on 5 seeds, its mirror, and a 2-seed row. Bugs caught: a
    claim dropped or listed under the wrong verdict, an inconclusive row without its reason, an
    unconverged row without its mark."""
    from types import SimpleNamespace

    from mlpl_lab.analysis.claims import Claim, claims_table, takeaways

    def runs(values, converged=True):
        return [SimpleNamespace(spec=SimpleNamespace(seed=s), best={"test_mAP": v}, converged=converged)
                for s, v in enumerate(values)]

    a, b = runs([81, 82.1, 83, 84.2, 85]), runs([80, 81, 82, 83, 84])
    table = claims_table([Claim("A beats B", "", "A", "B", a, b), Claim("B beats A", "", "B", "A", b, a),
                          Claim("C beats D", "", "C", "D", runs([70, 71]), runs([70.5, 70.2], converged=False))])
    text = takeaways(table)
    holds, fails, inconclusive = (text.split(f"**{h} at this scale**")[1] for h in
                                  ("Holds", "Does not hold", "Inconclusive"))
    assert "(1):" in holds and "*A beats B*" in holds.split("**Does not hold")[0]
    assert "*B beats A*" in fails.split("**Inconclusive")[0]
    assert "*C beats D*" in inconclusive and "fewer than 3 paired seeds" in inconclusive
    assert "did not converge" in inconclusive and "did not converge" not in holds.split("**Does not hold")[0]
    assert "5 paired seed(s)" in holds and "2 paired seed(s)" in inconclusive


def test_claims_are_keyed_by_identifier_and_shown_by_sentence():
    """Bug caught: a sentence used as the key (a claim naming a winner chosen on validation gets a
    new key each time the choice changes), or the identifier shown to the reader. Oracle: the
    table's index, its ``claim`` column, the record's fields and the view's index, written out."""
    from mlpl_lab.analysis.claims import claim_id, mark_schedule_bound, takeaways

    fam = Family("q", 2)
    t = claims_table([Claim("A beats B (the best)", "", "A", "B", runs([72, 73, 74.5]), runs([70, 70, 70]),
                            family=fam, id=claim_id("beats_best", "a")),
                      Claim("A beats C", "", "A", "C", runs([71, 73, 74]), runs([70, 70, 70]), family=fam,
                            id=claim_id("beats", "a", "c"))])
    assert list(t.index) == ["beats_best/a", "beats/a/c"]
    assert list(t["claim"]) == ["A beats B (the best)", "A beats C"]
    assert list(display_table(t).index) == ["A beats B (the best)", "A beats C"]
    assert "*A beats B (the best)*" in takeaways(t) and "beats_best/a" not in takeaways(t)
    rec = claims_record(mark_schedule_bound(t, {"beats/a/c": "schedule-bound; the length check agrees"}))
    assert rec["beats/a/c"]["claim"] == "A beats C" and rec["beats/a/c"]["id"] == "beats/a/c"
    assert rec["beats/a/c"]["schedule_bound"] == "schedule-bound; the length check agrees"
    with pytest.raises(ValueError, match="words without spaces"):
        claim_id("beats", "single positive")
    with pytest.raises(ValueError, match="claims named twice"):
        claims_table([Claim("one", "", "A", "B", runs([1, 2, 3]), runs([0, 0, 0]), id="k"),
                      Claim("two", "", "A", "B", runs([1, 2, 3]), runs([0, 0, 0]), id="k")])
