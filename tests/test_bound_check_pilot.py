"""Chapter 07 asks a schedule-bound row's length check wherever its table marks the row §: a run
still gaining in its last quarter, or the row's pilot (its first run trained 4/3 as long) gaining
≥ 0.5 test mAP. Hand-built stored runs; the oracle is the rule itself, applied by hand."""
from types import SimpleNamespace

import pytest

from mlpl_lab.protocol import asked as A

SP = "single positive"
CHECK = "length check of schedule-bound rows: LL-R"


def _cells(b, d):
    asked = b.specs(d, A.nothing_stored)
    out = {}
    for fams in (asked.later, asked.now):
        for reg, labels in fams.items():
            if reg in d.grid:
                out.update({(reg, lab): ss for lab, ss in labels.items()})
    return out


def _store(cells, pilot_gain):
    """Every cell run stored, converged by its last quarter, at 60 test mAP; LL-R's first run under
    single positive trained 72 epochs (its pilot) stored at 60 + ``pilot_gain``."""
    held = {}
    for ss in cells.values():
        for s in ss:
            held[s.key] = SimpleNamespace(spec=s, converged=True, summary={"test_mAP": 60.0}, best={})
    first = cells[(SP, "LL-R")][0]
    pilot = first.replace(train=dict(first.train, epochs=72))
    held[pilot.key] = SimpleNamespace(spec=pilot, converged=True, summary={"test_mAP": 60.0 + pilot_gain}, best={})
    return lambda s: held.get(s.key)


@pytest.mark.parametrize("gain, asked", [(1.2, True), (0.49, False), (0.5, True)])
def test_a_row_whose_pilot_gains_gets_its_length_check(gain, asked, monkeypatch):
    """LL-R under single positive: every run converged by its last quarter, so only its pilot can
    mark it § (gain ≥ 0.5: 1.2 and exactly 0.5; 0.49 is converged). Bug caught: the check asked on
    the last-quarter flag alone, which left a row the table marks § (its pilot gained) with a claim
    whose control "waits for runs not trained yet" and no run ever planned for it."""
    from mlpl_lab.chapters import benchmark as b

    monkeypatch.delenv(A.PENDING_ENV, raising=False)
    d = b.design("cpu")
    cells = _cells(b, d)
    assert (SP, "LL-R") in cells and cells[(SP, "LL-R")][0].train["epochs"] == 54
    got = b.bound_check_specs(d, cells, _store(cells, gain))
    labels = (got.get(CHECK) or {})
    assert (f"LL-R · {SP}" in labels) is asked
    if asked:
        assert [s.train["epochs"] for s in labels[f"LL-R · {SP}"]] == [72] * len(cells[(SP, "LL-R")])
        assert [s.seed for s in labels[f"AN for LL-R · {SP}"]] == [s.seed for s in cells[(SP, b.AN)]]
    # no other row's pilot is stored and every run converged: nothing else is asked
    assert set(got) <= {CHECK} and set(labels) <= {f"LL-R · {SP}", f"AN for LL-R · {SP}"}
