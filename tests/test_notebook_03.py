"""Notebook 03 (OPML) runs under the smoke profile and records sane figures."""
from __future__ import annotations

import pytest

from claims_oracle import check_claims_record
from mlpl_lab.reporting.report import all_finite


@pytest.mark.notebook
def test_notebook_03(executed_notebooks):
    rec = executed_notebooks("03_opml.ipynb")
    for key in ("mAP", "CF1", "mAP_full", "confidence_test_positives", "confidence_hidden",
                "localisation", "localisation_hidden"):
        assert key in rec, f"notebook 03 did not record {key!r}"
        assert all_finite(rec[key]), f"{key} holds a non-finite value: {rec[key]}"
    assert {"AN", "OPML", "OPML-SP"} <= set(rec["mAP"])
    assert set(rec["mAP_full"]) == {"BCE (full)", "OPML (full)"}
    for table in (rec["mAP"], rec["CF1"], rec["mAP_full"]):
        assert all(0 <= v <= 100 for v in table.values())
    for key in ("localisation", "localisation_hidden"):
        assert set(rec[key]) == {"AN", "OPML", "OPML-SP", "BCE (full)"}
        for row in rec[key].values():
            assert 0 <= row["energy"] <= 1 and 0 <= row["pointing"] <= 1 and 0 < row["area"] < 1
            assert row["pairs"] > 0
    for row in rec["confidence_test_positives"].values():
        assert row["n"] > 0 and 0 <= row["mean"] <= 1


@pytest.mark.notebook
def test_notebook_03_claims_table(executed_notebooks):
    claims = executed_notebooks("03_opml.ipynb")["claims"]
    key = claims["opml_sp_beats_an"]
    assert key["claim"] == "OPML-SP beats AN (single positive)"
    check_claims_record(claims)
    # smoke: the key comparison on two paired seeds, the rows on one seed: all observations
    assert key["n"] == 2 and key["kind"] == "observation"
    assert key["verdict"] == "inconclusive (2 seeds)"
    assert all(c["kind"] == "observation" and c["verdict"] == "inconclusive (1 seeds)"
               for name, c in claims.items() if c["n"] == 1)
