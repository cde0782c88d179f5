"""Notebook 06 (PU-MLC) executes under the smoke profile and records sane values."""
from __future__ import annotations

import math

import pytest

from mlpl_lab.chapters.pu_mlc import LADDER, ORACLE


@pytest.mark.notebook
def test_notebook_06(executed_notebooks):
    rec = executed_notebooks("06_pu_mlc.ipynb")
    for key in ("mAP", "train_seconds", "temperature_mean", "sweep", "crossing", "claims", "gamma_selection"):
        assert key in rec, key
    assert set(rec["mAP"]) == {"p=0.1", "p=0.5"}
    # p = 0.5: PU-MLC and partial BCE come from the sweep's clean cells
    assert set(rec["mAP"]["p=0.5"]) == {"PU-MLC (+mixup)", "partial BCE (+negatives)"}
    assert rec["mAP"]["p=0.5"]["PU-MLC (+mixup)"] == pytest.approx(rec["sweep"]["0.0"]["PU-MLC"])
    assert set(rec["mAP"]["p=0.1"]) == set(LADDER) | {ORACLE}
    for row, value in rec["mAP"]["p=0.1"].items():
        assert math.isfinite(value) and 0 <= value <= 100, (row, value)
    for epoch, t in rec["temperature_mean"].items():
        assert 0 < t <= 1, (epoch, t)
    assert set(rec["sweep"]) == {"0.0", "0.1"}
    for fn, row in rec["sweep"].items():
        assert row["PU-MLC − partial BCE"] == pytest.approx(row["PU-MLC"] - row["partial BCE"])
    sel = rec["gamma_selection"]
    assert set(sel) == {"0.0", "0.55"} and sum(v["selected"] == "✓" for v in sel.values()) == 1
    best = max(sel, key=lambda g: (sel[g]["val mAP"], -float(g)))
    assert sel[best]["selected"] == "✓"  # chosen on validation mAP
    cross = rec["crossing"]["fn_rate"]
    assert cross is None or 0.0 <= cross <= 0.1
    claims = rec["claims"]
    assert len(claims) == 8
    for claim in claims.values():
        assert claim["verdict"] in ("holds", "does not hold", "inconclusive")
        assert claim["verdict"] == "inconclusive" or abs(claim["margin"]) > claim["spread"]
    assert rec["train_seconds"] > 0
