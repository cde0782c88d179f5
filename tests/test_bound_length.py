"""Chapter 07's view of its schedule-bound rows' length checks (mlpl_lab.protocol.bound_length),
against hand-built runs: which rows it shows, at which lengths, and what it records per seed."""
from types import SimpleNamespace

import pytest

from mlpl_lab.catalogue import LABEL
from mlpl_lab.protocol import bound_length


def run(seed, epochs, mAP, converged=True):
    return SimpleNamespace(spec=SimpleNamespace(seed=seed, train={"epochs": epochs}), best={"test_mAP": mAP},
                           converged=converged, convergence={"gain": 0.1 * seed})


def cell(epochs, base, converged=True):
    return [run(s, epochs, base + s, converged) for s in (1, 2, 3)]


AN, GR = LABEL.an, LABEL.gr
SP, DROP = "single positive", "drop 50 %"
RESULTS = {SP: {AN: cell(54, 60.0), GR: cell(54, 70.0, False), "LL-Ct": cell(54, 65.0, False),
                "LL-R": cell(54, 66.0)},
           DROP: {AN: cell(54, 75.0), "LL-R": cell(54, 77.0, False)}}


def test_every_stored_check_is_shown_beside_its_row_and_an_once_per_regime():
    """Hand-derived: under single positive GR's check (from GR's own family) and LL-Ct's (a row with
    no claim) both show, each at 54 and 72 epochs, AN once and last; LL-R has no check there (it
    converged) and is left out. Under drop 50 % LL-R's check shows. A regime with no check is absent.
    Bugs caught: a row with no paper claim left out, AN repeated per row, the base cell taken from
    the check instead of the results, a check of a row whose base cell is absent shown half."""
    gr_length = {SP: {GR: cell(72, 71.0), AN: cell(72, 60.5)}}
    bound = {SP: {"LL-Ct": {"method": cell(72, 67.0), AN: cell(72, 60.5)},
                  "EM+APL": {"method": cell(72, 1.0), AN: cell(72, 60.5)}},  # no base cell: left out
             DROP: {"LL-R": {"method": cell(72, 78.0), AN: cell(72, 75.5)}}}
    table = bound_length.checks(RESULTS, gr_length, bound)
    assert list(table) == [DROP, SP]
    assert list(table[SP]) == [GR, "LL-Ct", AN]
    assert list(table[DROP]) == ["LL-R", AN]
    assert [r.best["test_mAP"] for r in table[SP]["LL-Ct"]] == [68.0, 69.0, 70.0]
    shown = bound_length.view_runs(RESULTS, table)
    assert list(shown)[:2] == ["drop 50 % · LL-R · 54 epochs", "drop 50 % · LL-R · 72 epochs"]
    assert shown["single positive · LL-Ct · 54 epochs"] is RESULTS[SP]["LL-Ct"]  # the base cell, from results
    assert len(shown) == 2 * (3 + 2)
    rec = bound_length.record(RESULTS, table)
    assert rec["single positive · LL-Ct · 54 epochs"] == {"test_mAP": {"1": 66.0, "2": 67.0, "3": 68.0},
                                                          "gain": {"1": 0.1, "2": 0.2, "3": pytest.approx(0.3)},
                                                          "converged": {"1": False, "2": False, "3": False}}
    assert rec["single positive · AN · 72 epochs"]["test_mAP"] == {"1": 61.5, "2": 62.5, "3": 63.5}
    assert rec["drop 50 % · LL-R · 72 epochs"]["converged"] == {"1": True, "2": True, "3": True}
    assert set(rec) == set(shown)


def test_no_check_stored_shows_nothing_and_says_what_waits():
    """Only AN's side stored (no schedule-bound row) is no check; the view then says so in words,
    with the runs still waiting summed. Bug caught: AN alone shown as a check."""
    assert bound_length.checks(RESULTS, {}, {SP: {"LL-Ct": {"method": [], AN: cell(72, 60.5)}}}) == {}
    md = bound_length.view(RESULTS, {}, {"LL-Cp · single positive": 5, "AN for LL-R · drop 50 %": 5})
    assert "No schedule-bound row has a stored length check yet" in md.data and "10 runs" in md.data
