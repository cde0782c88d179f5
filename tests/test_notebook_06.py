"""Notebook 06 (PU-MLC) executes under the smoke profile and records sane values."""
from __future__ import annotations

import math

import pytest

from mlpl_lab.chapters.pu_mlc import LADDER, ORACLE


@pytest.mark.notebook
def test_notebook_06(executed_notebooks):
    rec = executed_notebooks("06_pu_mlc.ipynb")
    for key in ("mAP", "train_seconds", "temperature_mean", "sweep", "crossing", "claims"):
        assert key in rec, key
    assert set(rec["mAP"]) == {"p=0.1"}
    assert set(rec["mAP"]["p=0.1"]) == set(LADDER) | {ORACLE}
    for row, value in rec["mAP"]["p=0.1"].items():
        assert math.isfinite(value) and 0 <= value <= 100, (row, value)
    for epoch, t in rec["temperature_mean"].items():
        assert 0 < t <= 1, (epoch, t)
    assert set(rec["sweep"]) == {"0.0", "0.1"}
    for fn, row in rec["sweep"].items():
        assert row["PU-MLC − partial BCE"] == pytest.approx(row["PU-MLC"] - row["partial BCE"])
    cross = rec["crossing"]["fn_rate"]
    assert cross is None or 0.0 <= cross <= 0.1
    claims = rec["claims"]
    assert len(claims) == 7
    for claim in claims.values():
        assert claim["verdict"] in ("holds", "does not hold", "inconclusive")
        assert claim["verdict"] == "inconclusive" or abs(claim["margin"]) > claim["spread"]
    assert rec["train_seconds"] > 0
