"""Notebook 05 (LAC) executes under the smoke profile and records sane values."""
from __future__ import annotations

import math

import pytest

from mlpl_lab.chapters.lac import ROWS


@pytest.mark.notebook
def test_notebook_05(executed_notebooks):
    rec = executed_notebooks("05_lac.ipynb")
    for key in ("mAP", "mAP_ema", "train_seconds", "plc_diagnostics", "localisation", "embedding_gap", "claims"):
        assert key in rec, key
    assert set(rec["mAP"]) == set(ROWS)
    for table in ("mAP", "mAP_ema"):
        for row, value in rec[table].items():
            assert math.isfinite(value) and 0 <= value <= 100, (table, row, value)
    for run, q in rec["plc_diagnostics"].items():
        assert 0 <= q["plc_coverage"] <= 1, run
        for k in ("plc_pos_precision", "plc_pos_recall", "plc_neg_precision"):
            # NaN (recorded as "nan") when nothing was selected
            assert q[k] == "nan" or 0 <= q[k] <= 1, (run, k, q[k])
    assert len(rec["localisation"]) == 2 * 2 * 2  # AN/LAC x attention/Grad-CAM x observed/hidden
    for key, s in rec["localisation"].items():
        assert 0 <= s["energy"] <= 1 and 0 <= s["pointing"] <= 1 and 0 < s["area"] < 1, key
        assert s["pairs"] > 0
    for k, gap in rec["embedding_gap"].items():
        assert math.isfinite(gap) and -2 <= gap <= 2, k
    claims = rec["claims"]
    assert "PLC beats AN" in claims and len(claims) == 7
    for claim in claims.values():
        assert claim["verdict"] in ("holds", "does not hold", "inconclusive")
        assert claim["verdict"] == "inconclusive" or abs(claim["margin"]) > claim["spread"]
    assert claims["PLC beats AN"]["seeds"] == "2"  # smoke: two key seeds
    assert rec["train_seconds"] > 0
