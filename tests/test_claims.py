"""Claims: margin, spread over seeds and verdict, against hand-computed cases."""
from __future__ import annotations

import math

import pytest

from mlpl_lab.analysis.claims import Claim, claims_record, claims_table, margin, verdict


class R:
    def __init__(self, seed, v):
        self.spec = type("S", (), {"seed": seed})()
        self.best = {"test_mAP": v}


def test_paired_spread_over_common_seeds():
    a = [R(0, 80.0), R(1, 82.0), R(2, 84.0)]
    b = [R(0, 79.0), R(1, 80.0), R(2, 81.0)]
    m = margin(a, b)
    # differences 1, 2, 3: mean 2, sample std 1
    assert m["margin"] == pytest.approx(2.0) and m["spread"] == pytest.approx(1.0)
    assert verdict(m["margin"], m["spread"]) == "holds"


def test_verdicts():
    assert verdict(0.5, 1.0) == "inconclusive"
    assert verdict(-2.0, 1.0) == "does not hold"
    assert verdict(3.0, math.nan) == "inconclusive"
    assert verdict(-1.0, 1.0) == "inconclusive"  # a margin equal to the spread is not enough


def test_one_sided_seeds_use_that_sides_spread():
    a = [R(0, 70.0)]
    b = [R(0, 60.0), R(1, 62.0), R(2, 64.0)]
    m = margin(a, b)
    assert m["margin"] == pytest.approx(70 - 62) and m["spread"] == pytest.approx(2.0)
    assert m["seeds"] == "1 vs 3"
    one = margin([R(0, 1.0)], [R(0, 2.0)])
    assert math.isnan(one["spread"])


def test_table_and_record():
    t = claims_table([Claim("A beats B", "paper: +1", "A", "B", [R(0, 2.0), R(1, 4.0)], [R(0, 1.0), R(1, 1.0)])])
    row = t.loc["A beats B"]
    assert row["verdict"] == "holds" and row["seeds"] == "2"
    rec = claims_record(t)
    assert rec["A beats B"]["margin"] == pytest.approx(2.0) and rec["A beats B"]["verdict"] == "holds"


def test_one_seed_claims_borrow_the_key_comparisons_spread():
    key = Claim("key", "", "A", "B", [R(0, 80.0), R(1, 82.0), R(2, 84.0)], [R(0, 79.0), R(1, 80.0), R(2, 81.0)])
    big = Claim("big", "", "A", "B", [R(0, 90.0)], [R(0, 80.0)])
    small = Claim("small", "", "A", "B", [R(0, 80.5)], [R(0, 80.0)])
    t = claims_table([key, big, small])
    assert t.loc["big", "verdict"] == "holds" and t.loc["big", "spread from"] == "borrowed: key"
    assert t.loc["small", "verdict"] == "inconclusive"
    assert t.loc["key", "spread from"] == "these runs"
    alone = claims_table([big])
    assert alone.loc["big", "verdict"] == "inconclusive" and alone.loc["big", "spread from"] == "—"
