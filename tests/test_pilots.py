"""The pilots (protocol.pilots): which run checks each row's length, and what its verdict does.

Oracle: hand-built specs and runs whose pilots and verdicts are worked out by hand below (54
epochs × 4/3 = 72; a gain is the pilot's test mAP minus the run's), never the module's helpers.
"""
from __future__ import annotations

import pytest

from mlpl_lab.analysis.tables import SCHEDULE_BOUND, run_flag
from mlpl_lab.protocol.asked import Asked
from mlpl_lab.protocol.pilots import (MAX_STEPS, attach_pilots, pilot_families, pilot_verdict, row_pilots,
                                      with_pilots)
from mlpl_lab.runs.spec import RunSpec
from mlpl_lab.runs.store import StoredRun


def spec(method="an", seed=0, epochs=54, **params):
    return RunSpec(method=method, method_params=params, seed=seed, data={"glyphs": "shapes", "n_train": 64},
                   train={"epochs": epochs, "lr": 0.002})


def run(s, test, curve=(40.0, 50.0, 50.1, 50.1)):
    """A stored run whose last quarter is flat (converged by its own criterion) and test mAP ``test``."""
    history = [{"epoch": i + 1, "val_mAP": v, "test_mAP": test} for i, v in enumerate(curve)]
    return StoredRun(spec=s, history=history, best_epoch=len(curve) - 1, initial={},
                     summary={"test_mAP": test})


def test_a_row_without_a_longer_twin_gets_its_first_seed_at_four_thirds_the_epochs():
    """Bug caught: a pilot on the wrong seed, at the wrong length, or one per seed."""
    asked = Asked(now={"table": {"AN": [spec(seed=3), spec(seed=4)], "EM": [spec("em", 3), spec("em", 4)]}})
    pilots = row_pilots(asked)
    assert set(pilots) == {("table", "AN"), ("table", "EM")}
    assert pilots[("table", "AN")].key == spec(seed=3, epochs=72).key
    assert pilots[("table", "EM")].key == spec("em", seed=3, epochs=72).key
    fams = pilot_families(asked)
    assert list(fams) == ["pilot: table"]
    assert {k: [s.key for s in v] for k, v in fams["pilot: table"].items()} == {
        "AN": [spec(seed=3, epochs=72).key], "EM": [spec("em", 3, 72).key]}


def test_a_longer_twin_the_chapter_asks_for_is_the_pilot_and_gets_none_itself():
    """Bug caught: a length check (72 epochs) or a longer run (128) trained again as a pilot, or
    given a pilot of its own at 96 / 171 epochs."""
    asked = Asked(now={"table": {"GR": [spec("gr", 0), spec("gr", 1)], "PU": [spec("pu_mlc", 0)]}},
                  pending={"length check": {"GR": [spec("gr", 0, 72), spec("gr", 1, 72)]},
                           "longer": {"PU (128 epochs)": [spec("pu_mlc", 0, 128)]}})
    pilots = row_pilots(asked)
    assert set(pilots) == {("table", "GR"), ("table", "PU")}
    assert pilots[("table", "GR")].key == spec("gr", 0, 72).key
    assert pilots[("table", "PU")].key == spec("pu_mlc", 0, 128).key
    assert pilot_families(asked) == {}
    assert with_pilots(asked).pending.keys() == asked.pending.keys()


def test_tuning_trials_get_no_pilot_and_a_shared_row_gets_one():
    """Bug caught: a pilot per tuning trial (a hundred runs that decide nothing), or the same
    pilot listed twice for a row two families share."""
    asked = Asked(now={"tuning trials": {"EM · trial 1": [spec("em", 9, lr=1)]},
                       "single positive": {"AN": [spec(seed=0)]}, "drop 50 %": {"AN": [spec(seed=0)]}})
    fams = pilot_families(asked)
    assert list(fams) == ["pilot: single positive"]
    assert [s.key for s in fams["pilot: single positive"]["AN"]] == [spec(seed=0, epochs=72).key]


@pytest.mark.parametrize("pilot_test, converged, gain", [(80.4, True, 0.4), (80.5, False, 0.5), (83.0, False, 3.0),
                                                         (79.0, True, -1.0)])
def test_the_verdict_is_the_pilots_test_gain_below_half_a_point(pilot_test, converged, gain):
    """Bug caught: the gain taken the wrong way round, or ≤ in place of <."""
    v = pilot_verdict(run(spec(), 80.0), run(spec(epochs=72), pilot_test))
    assert v["converged"] is converged
    assert v["gain"] == pytest.approx(gain)
    assert (v["epochs"], v["of_epochs"]) == (72, 54)


def test_a_stored_pilot_decides_every_run_of_its_row_and_a_missing_one_changes_nothing():
    """Bug caught: the pilot's verdict applied to its seed only, to another row, or ignored by the
    flags the tables and the protocol's share read. By hand: EM's pilot gains 81.2 - 80.0 = 1.2 ≥
    0.5, so both EM runs (flat last quarters, converged on their own) are not converged; GR's
    (schedule-bound) pilot gains 2.0: §; AN's pilot is not stored: its own flag stays True."""
    em = [run(spec("em", 0), 80.0), run(spec("em", 1), 79.0)]
    gr = [run(spec("gr", 0), 70.0)]
    an = [run(spec(seed=0), 60.0)]
    asked = Asked(now={"table": {"EM": [r.spec for r in em], "GR": [r.spec for r in gr], "AN": [r.spec for r in an]}})
    store = {spec("em", 0, 72).key: run(spec("em", 0, 72), 81.2), spec("gr", 0, 72).key: run(spec("gr", 0, 72), 72.0)}
    verdicts = attach_pilots(asked, {"table": {"EM": em, "GR": gr, "AN": an}}, lambda s: store.get(s.key))
    assert set(verdicts) == {("table", "EM"), ("table", "GR")}
    assert [r.converged for r in em] == [False, False]
    assert [run_flag(r) for r in em] == [False, False]
    assert run_flag(gr[0]) == SCHEDULE_BOUND
    assert an[0].converged is True and an[0].pilot is None
    assert em[1].convergence["last_quarter"]["converged"] is True
    assert "81.2" not in em[1].convergence["reason"] and "+1.20" in em[1].convergence["reason"]


def test_a_pilot_that_gains_little_makes_a_run_still_rising_at_its_end_converged():
    """Bug caught: the last quarter overruling the pilot. The run's own curve rises 2 points in its
    last quarter (not converged by itself); its pilot gains 0.3 < 0.5: the row is converged."""
    r = run(spec(), 80.0, curve=(40.0, 45.0, 48.0, 50.0))
    assert r.converged is False
    attach_pilots(Asked(now={"t": {"AN": [r.spec]}}), {"t": {"AN": [r]}},
                  lambda s: run(spec(epochs=72), 80.3) if s.key == spec(epochs=72).key else None)
    assert r.converged is True


def _store(*runs):
    table = {r.spec.key: r for r in runs}
    return lambda s: table.get(s.key)


def test_a_row_whose_pilot_gains_trains_longer_on_every_seed_and_waits_as_a_family_until_stored():
    """Bug caught: a gaining row left at its length with nothing asked, lengthened on its pilot's
    seed only, or swapped to runs that are not all stored (a report that would train them). By
    hand: EM at 54 epochs, pilot (seed 0, 72) gains 81.2 - 80.0 = 1.2 ≥ 0.5 → EM trains 72 epochs
    on seeds 0 and 1; seed 1's is missing, so the row stays and `longer: table` asks for both."""
    from mlpl_lab.protocol.pilots import settle

    em = [spec("em", 0), spec("em", 1)]
    asked = Asked(now={"table": {"EM": em, "AN": [spec(seed=0)]}})
    stored = _store(run(em[0], 80.0), run(em[1], 79.0), run(spec("em", 0, 72), 81.2), run(spec(seed=0), 60.0))
    out = settle(asked, stored)
    assert [s.key for s in out.now["table"]["EM"]] == [s.key for s in em]
    assert {k: [s.key for s in v] for k, v in out.pending["longer: table"].items()} == {
        "EM": [spec("em", 0, 72).key, spec("em", 1, 72).key]}


def test_a_row_trained_longer_on_every_seed_is_read_at_that_length_and_gets_the_next_pilot():
    """By hand: both seeds at 72 are stored, so the row is them; its pilot is then seed 0 at
    round(72 × 4/3) = 96 epochs, and nothing waits in `longer: table`."""
    from mlpl_lab.protocol.pilots import settle

    em = [spec("em", 0), spec("em", 1)]
    stored = _store(run(em[0], 80.0), run(em[1], 79.0), run(spec("em", 0, 72), 81.2), run(spec("em", 1, 72), 80.1))
    out = settle(Asked(now={"table": {"EM": em}}), stored)
    assert [s.key for s in out.now["table"]["EM"]] == [spec("em", 0, 72).key, spec("em", 1, 72).key]
    assert "longer: table" not in out.pending
    assert [s.key for s in pilot_families(out)["pilot: table"]["EM"]] == [spec("em", 0, 96).key]


def test_schedule_bound_rows_and_rows_whose_pilot_the_chapter_asks_for_are_left_to_their_controls():
    """Bug caught: GR (its targets move to the end of any schedule) lengthened without end, or a
    chapter's own length check swapped in for the row it checks."""
    from mlpl_lab.protocol.pilots import settle

    gr, pb = [spec("gr", 0)], [spec("partial_bce", 0)]
    asked = Asked(now={"table": {"GR": gr, "partial BCE": pb}},
                  pending={"trained longer": {"partial BCE (128)": [spec("partial_bce", 0, 128)]}})
    stored = _store(run(gr[0], 70.0), run(spec("gr", 0, 72), 73.0), run(pb[0], 80.0),
                    run(spec("partial_bce", 0, 128), 84.0))
    out = settle(asked, stored)
    assert [s.key for s in out.now["table"]["GR"]] == [gr[0].key]
    assert [s.key for s in out.now["table"]["partial BCE"]] == [pb[0].key]
    assert set(out.pending) == {"trained longer"}


def test_what_settling_changed_is_said_in_words():
    """Bug caught: a row read at 72 epochs with nothing telling the reader, or a waiting row unnamed."""
    from mlpl_lab.protocol.pilots import settle, settled_sentence

    em, an = [spec("em", 0), spec("em", 1)], [spec(seed=0), spec(seed=1)]
    stored = _store(run(em[0], 80.0), run(em[1], 79.0), run(spec("em", 0, 72), 81.2), run(spec("em", 1, 72), 80.1),
                    run(an[0], 60.0), run(an[1], 61.0), run(spec(seed=0, epochs=72), 62.0))
    asked = Asked(now={"table": {"EM": em, "AN": an}})
    text = settled_sentence(asked, settle(asked, stored))
    assert "EM in table (54 → 72 epochs)" in text
    assert "AN in table (72 epochs)" in text and "longer: <family>" in text
    assert settled_sentence(asked, asked) == ""


def test_a_gaining_row_left_at_its_length_says_why():
    """Bug caught: every row a gaining pilot left at its length said it "trains longer once its runs are
    stored" (04's Co-teaching, whose 72-epoch runs the chapter reads as a control, and 08's rows at
    171 epochs, lengthened four times already, never do). By hand, all three pilots gain 1.2 ≥ 0.5:
    EM's pilot is the chapter's own longer row (a control); AN's longer runs are a pending
    ``longer: table`` entry (waiting); OPML's pilot is asked by no row and its longer runs are pending
    nowhere (capped)."""
    em, an, opml = [run(spec("em", 0), 80.0)], [run(spec(seed=0), 60.0)], [run(spec("opml", 0), 70.0)]
    asked = Asked(now={"table": {"EM": [em[0].spec], "AN": [an[0].spec], "OPML": [opml[0].spec]},
                       "trained longer": {"EM (72 epochs)": [spec("em", 0, 72)]}},
                  pending={"longer: table": {"AN": [spec(seed=0, epochs=72)]}})
    store = _store(run(spec("em", 0, 72), 81.2), run(spec(seed=0, epochs=72), 61.2), run(spec("opml", 0, 72), 71.2))
    verdicts = attach_pilots(asked, {"table": {"EM": em, "AN": an, "OPML": opml}}, store)
    assert {row: v["after"] for row, v in verdicts.items()} == {
        ("table", "EM"): "control", ("table", "AN"): "waiting", ("table", "OPML"): "capped"}
    assert verdicts[("table", "AN")]["family"] == "table"
    assert verdicts[("table", "OPML")]["max_steps"] == MAX_STEPS == 5
    assert "after" not in attach_pilots(Asked(now={"t": {"AN": [spec(seed=5)]}}), {"t": {"AN": [run(spec(seed=5), 60.0)]}},
                                        _store(run(spec(seed=5, epochs=72), 60.2)))[("t", "AN")]


def test_a_gaining_row_under_a_profile_that_does_not_lengthen_says_so():
    """Bug caught: a smoke row (its profile's ``lengthen_rows`` off, so :func:`settle` moves nothing)
    called "lengthened as often as the protocol does". By hand: the pilot gains 61.2 - 60.0 = 1.2."""
    class Smoke:
        lengthen_rows = False

    an = [run(spec(seed=0), 60.0)]
    verdicts = attach_pilots(Asked(now={"table": {"AN": [an[0].spec]}}), {"table": {"AN": an}},
                             _store(run(spec(seed=0, epochs=72), 61.2)), Smoke())
    assert verdicts[("table", "AN")]["after"] == "off" and "max_steps" not in verdicts[("table", "AN")]
