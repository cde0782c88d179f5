"""Notebooks 00 and 01 under the smoke profile: they run and record sane values."""
from __future__ import annotations

import pytest

from claims_oracle import check_claims_record
from mlpl_lab.reporting.report import all_finite

pytestmark = pytest.mark.notebook


def test_notebook_00_partial_labels(executed_notebooks):
    rec = executed_notebooks("00_partial_labels.ipynb")
    share = rec["hidden_positive_share"]
    assert all_finite(share)
    assert share["full"] == 0.0
    assert 0.3 < share["single positive"] < 1.0
    # dropping more positives hides more of them
    assert share["drop 25 %"] < share["drop 50 %"] < share["drop 75 %"]
    assert rec["num_classes"] == 20
    assert 1.0 <= rec["positives_per_image"] <= 4.0


@pytest.mark.smoke  # make test's one smoke notebook
def test_notebook_01_assume_negative(executed_notebooks):
    rec = executed_notebooks("01_assume_negative.ipynb")
    assert all_finite(rec["mAP"]) and all_finite(rec["gap"])
    for regime, row in rec["mAP"].items():
        assert 0 < row["AN"] <= 100 and 0 < row["full labels"] <= 100, regime
    assert rec["mAP"]["single positive"]["full labels"] > rec["mAP"]["single positive"]["AN"]


@pytest.mark.smoke  # make test's one smoke notebook
def test_notebook_01_claims_table(executed_notebooks):
    rec = executed_notebooks("01_assume_negative.ipynb")
    claims = rec["claims"]
    assert {c["claim"] for c in claims.values()} == {f"full labels beat AN under {r}" for r in rec["mAP"]}
    assert claims["oracle_beats_an/single"]["claim"] == "full labels beat AN under single positive"
    check_claims_record(claims)
    # smoke: two paired seeds in every regime, so every row is an observation: nothing decided
    assert all(c["n"] == 2 and c["kind"] == "observation" and c["verdict"] == "inconclusive (2 seeds)"
               for c in claims.values())
