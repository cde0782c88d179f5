"""Notebook 06 (PU-MLC) executes under the smoke profile; its records are wired as the chapter
says (each check names the bug it catches)."""
from __future__ import annotations

import pytest

from mlpl_lab.chapters.pu_mlc import CONTROL, LADDER, ORACLE, PBCE, PU


@pytest.mark.notebook
def test_notebook_06(executed_notebooks):
    rec = executed_notebooks("06_pu_mlc.ipynb")
    for key in ("mAP", "train_seconds", "temperature_mean", "noise", "gamma_selection", "sweep", "crossings",
                "decomposition", "claims", "runs_planned"):
        assert key in rec, key
    # the ladder at p = 0.1 has every row; p = 0.5 is the sweep's clean cell (same runs, not new ones)
    assert set(rec["mAP"]["p=0.1"]) == set(LADDER) | {ORACLE}
    assert set(rec["mAP"]["p=0.5"]) == {"PU-MLC (+mixup)", "partial BCE (+negatives)"}
    assert rec["mAP"]["p=0.5"]["PU-MLC (+mixup)"] == pytest.approx(rec["sweep"]["0.0"][PU])
    assert rec["mAP"]["p=0.5"]["partial BCE (+negatives)"] == pytest.approx(rec["sweep"]["0.0"][PBCE])
    assert len(rec["temperature_mean"]) == 2  # one value per epoch (smoke: 2 epochs)

    # the noise, counted: fn_rate is a share of the observed negatives (catches the axis computed
    # against another denominator); at p = 0.5 a rate of 0.1 reports ~46 % of the positives negative
    noise = rec["noise"]
    assert noise["0.0"]["share of true positives reported negative"] == 0
    assert noise["0.1"]["false share of observed negatives"] == pytest.approx(0.1, abs=2e-3)
    assert 0.35 < noise["0.1"]["share of true positives reported negative"] < 0.6
    assert noise["0.1"]["false negatives per observed positive"] > 1
    assert rec["sweep"]["0.1"]["positives reported negative"] == pytest.approx(
        noise["0.1"]["share of true positives reported negative"])

    # γ chosen on validation at every noise level, and the sweep's PU-MLC is that γ's runs
    sel = rec["gamma_selection"]
    for fn in ("0.0", "0.1"):
        cells = {k.split("|")[1]: v for k, v in sel.items() if k.split("|")[0] == fn}
        assert set(cells) == {"0.0", "0.55"}
        chosen = [g for g, v in cells.items() if v["selected"] == "✓"]
        assert len(chosen) == 1
        assert cells[chosen[0]]["val mAP"] == max(v["val mAP"] for v in cells.values())  # not test mAP
        assert rec["sweep"][fn][PU] == pytest.approx(cells[chosen[0]]["test mAP"])

    # the control: the same labels as the noisy cell at fn 0, other labels (other runs) at 0.1
    assert rec["sweep"]["0.0"][CONTROL] == rec["sweep"]["0.0"][PBCE]
    assert rec["sweep"]["0.1"][CONTROL] != rec["sweep"]["0.1"][PBCE]
    parts = rec["decomposition"]["0.1"]
    whole = parts["whole drop (clean − noisy)"]
    assert whole == pytest.approx(rec["sweep"]["0.0"][PBCE] - rec["sweep"]["0.1"][PBCE])
    assert parts["lost positives (clean − control)"] == pytest.approx(rec["sweep"]["0.0"][PBCE] - rec["sweep"]["0.1"][CONTROL])
    assert parts["lost positives (clean − control)"] + parts["wrong negatives (control − noisy)"] == pytest.approx(whole)

    # the crossing of the mean curves, by hand from the recorded differences (two sweep points)
    y0, y1 = rec["sweep"]["0.0"]["PU-MLC − partial BCE"], rec["sweep"]["0.1"]["PU-MLC − partial BCE"]
    mean = rec["crossings"]["mean"]
    if y0 * y1 < 0:
        assert mean["fn_rate"] == pytest.approx(0.1 * (-y0) / (y1 - y0))
    else:
        assert mean["fn_rate"] is None and "no crossing" in mean["note"]
    assert set(rec["crossings"]) == {"0", "1", "mean"}  # one crossing per seed (smoke: two)

    # claims: one per pair of runs (4 ladder steps, PU-MLC vs partial BCE at 0.1 and 0.5, noisy, control)
    claims = rec["claims"]
    assert len(claims) == 8
    from claims_oracle import check_claims_record

    check_claims_record(claims)
    assert sum("re-balancing" in c["claim"] and "+γ beats plain vPU" in c["claim"] for c in claims.values()) == 1
    assert {k.split("/")[0] for k in claims} == {"step", "pu_mlc_beats_partial_bce", "wrong_negatives_cost_partial_bce"}
    assert rec["train_seconds"] > 0
