"""Notebook 05 (LAC) executes under the smoke profile and records what its prose reads."""
from __future__ import annotations

import math

import pytest

from mlpl_lab.chapters.lac import ROWS, STAGE2, chapter_design
from mlpl_lab.profiles import get_profile


@pytest.mark.notebook
def test_notebook_05(executed_notebooks):
    rec = executed_notebooks("05_lac.ipynb")
    for key in ("mAP", "ema_vs_raw", "stage2_start", "lac_an_ratio", "loss_scale", "pseudo_positives", "train_seconds",
                "plc_diagnostics", "localisation", "embedding_gap", "claims"):
        assert key in rec, key
    assert set(rec["mAP"]) == set(ROWS)
    design = chapter_design(get_profile("smoke"))
    # the pseudo-positive counts list one total per seed of the row
    for row, c in rec["pseudo_positives"].items():
        assert len(c["per seed"]) == len(design.seeds), row
        assert c["total"] == pytest.approx(sum(c["per seed"])), row
    assert {rec["pseudo_positives"][r]["delta"] for r in STAGE2} == {0.9}
    # where the code's stage 2 would start: one row per seed of the stage-1 (+PLC) row
    assert [r["seed"] for r in rec["stage2_start"]] == list(design.seeds)
    for r in rec["stage2_start"]:
        assert r["the code starts from"] in ("raw", "EMA"), r
        # the code-start row loaded the weights that validated better (its run's own record; the
        # two evaluations may differ by float rounding, so only a clear difference is checked)
        if abs(r["EMA - raw"]) >= 0.01:
            assert r["the code-start row loaded"] == r["the code starts from"], r
    # the loss-scale table: the paper's sum grows with the queue, the code's form moves by a log
    paper, code = rec["loss_scale"]["paper"], rec["loss_scale"]["code"]
    assert paper["512"] / paper["0"] > 5
    assert code["512"] - code["0"] < math.log(2 * (64 + 512) / (2 * 64)) + 0.5
    # the stage-2 rows log L_LAC / L_AN; the end-to-end row too (it has the contrastive term)
    assert set(rec["lac_an_ratio"]) == set(STAGE2) | {"+LAC end-to-end"}
    for key in ("mAP",):
        for row, value in rec[key].items():
            assert math.isfinite(value), (key, row, value)
    assert len(rec["localisation"]) == 2 * 2 * 2  # AN/LAC x attention/Grad-CAM x observed/hidden
    for key, s in rec["localisation"].items():
        assert 0 < s["area"] < 1 and s["pairs"] > 0, key
    claims = rec["claims"]
    from claims_oracle import by_sentence, check_claims_record

    assert set(by_sentence(claims)) == {
        "PLC beats AN", "end-to-end LAC is worse than PLC (PLC beats it)",
        "two stages beat PLC trained as long (control)", "the queue helps (two-stage + queue beats two-stage)",
        "LAC (two stages + queue) beats PLC trained as long (control)",
        "the code's stage-2 start (raw or EMA) beats the paper's (raw)"}
    check_claims_record(claims)  # paired on the seeds both rows ran, the rule recomputed with scipy
    assert claims["plc_beats_an"]["seeds"] == list(design.seeds)
    assert rec["train_seconds"] > 0
