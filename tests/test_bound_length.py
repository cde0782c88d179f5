"""The length checks of the schedule-bound rows (mlpl_lab.protocol.bound_length), against hand-built
runs and specs: which rows 07 shows, at which lengths, and what it records per seed; which checks 03
and 08 ask for, and when a check agrees (the protocol then counts the § runs as converged)."""
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


# --- the checks a chapter asks for (03's OPML-SP, 08's GR) and when they agree ---------------------
def _spec(method, seed, epochs=54):
    from mlpl_lab.profiles import get_profile
    return get_profile("smoke").spec(method, {}, "single_positive", {}, seed=seed, epochs=epochs)


def _stored(runs):
    by_key = {r.spec.key: r for r in runs}
    return lambda spec: by_key.get(spec.key)


def _as_run(spec, mAP, converged=True):
    return SimpleNamespace(spec=spec, best={"test_mAP": mAP}, summary={"test_mAP": mAP}, converged=converged)


def test_check_family_asks_a_schedule_bound_row_that_did_not_converge_and_an_on_its_seeds():
    """Hand-derived: GR (schedule-bound) with a run still gaining gets its check, GR and AN on GR's
    two seeds (AN has three) at round(4/3 × 54) = 72 epochs, only the epochs changed; EM (not
    schedule-bound, also gaining) and AN itself get none. Bugs caught: a non-bound row checked, AN
    lengthened on its own seeds instead of the row's, the epochs not lengthened or other fields changed."""
    gr = [_spec("gr", s) for s in (1, 2)]
    em = [_spec("em", s) for s in (1, 2)]
    an = [_spec("an", s) for s in (1, 2, 3)]
    stored = _stored([_as_run(gr[0], 70.0), _as_run(gr[1], 71.0, converged=False),
                      *(_as_run(s, 60.0, converged=False) for s in em), *(_as_run(s, 60.0) for s in an)])
    fam = bound_length.check_family({GR: gr, "EM": em, AN: an}, an, stored)
    assert list(fam) == [GR, "AN for GR"]
    assert [(s.method, s.seed, s.train["epochs"]) for s in fam[GR]] == [("gr", 1, 72), ("gr", 2, 72)]
    assert [(s.method, s.seed, s.train["epochs"]) for s in fam["AN for GR"]] == [("an", 1, 72), ("an", 2, 72)]
    assert fam[GR][0].key != gr[0].key and fam[GR][0].replace(train=gr[0].train).key == gr[0].key


def test_check_family_reads_the_rows_pilot_and_asks_what_is_not_stored():
    """A converged GR row whose pilot (its first run at 72 epochs) gains 0.8 ≥ 0.5 is checked; one
    whose pilot gains 0.3 is not; a row not stored yet is asked (a plan counts it); a row on a seed AN
    lacks is an error naming the seed. Bugs caught: the pilot ignored, the gain's bar wrong, a
    missing AN seed paired silently."""
    gr = [_spec("gr", s) for s in (1, 2)]
    an = [_spec("an", s) for s in (1, 2)]
    base = [_as_run(gr[0], 70.0), _as_run(gr[1], 71.0), *(_as_run(s, 60.0) for s in an)]
    pilot = gr[0].replace(train=dict(gr[0].train, epochs=72))
    gains = bound_length.check_family({GR: gr}, an, _stored(base + [_as_run(pilot, 70.8)]))
    flat = bound_length.check_family({GR: gr}, an, _stored(base + [_as_run(pilot, 70.3)]))
    assert list(gains) == [GR, "AN for GR"] and flat == {}
    assert list(bound_length.check_family({GR: gr}, an, _stored([]))) == [GR, "AN for GR"]
    with pytest.raises(ValueError, match=r"seed\(s\) \[2\]"):
        bound_length.check_family({GR: gr}, an[:1], _stored([]))


def keyed(name, seeds, epochs, values):
    return [SimpleNamespace(spec=SimpleNamespace(seed=s, key=f"{name}-{epochs}-{s}", train={"epochs": epochs}),
                            best={"test_mAP": v}) for s, v in zip(seeds, values)]


def test_a_check_agrees_where_row_beats_an_reads_the_same_at_both_lengths():
    """Hand-derived, three seeds: OPML-SP − AN = +9, +10, +11 at 54 epochs (t-interval ≈ [7.5, 12.5]:
    holds). At 72 epochs +8, +10, +12 (holds): the check agrees, listed for OPML-SP's six runs at both
    lengths (AN's runs are not § and are not listed). At 72 epochs −9, −10, −11 (does not hold): it
    disagrees. A row whose runs a claim's note already judged is left to it; ``chapter_agreement``
    ANDs a run two sources judge. Bugs caught: agreement read from one length, AN's runs listed,
    the claim's note overridden, a disagreeing source outvoted."""
    seeds = (1, 2, 3)
    an54, an72 = keyed("AN", seeds, 54, [60.0, 61.0, 62.0]), keyed("AN", seeds, 72, [60.0, 61.0, 62.0])
    sp54 = keyed("SP", seeds, 54, [69.0, 71.0, 73.0])
    rows = {AN: an54, "OPML-SP": sp54}
    same = {SP: {"OPML-SP": keyed("SP", seeds, 72, [68.0, 71.0, 74.0]), AN: an72}}
    other = {SP: {"OPML-SP": keyed("SP", seeds, 72, [51.0, 51.0, 51.0]), AN: an72}}
    agrees = bound_length.agreement({SP: rows}, same)
    assert agrees == {f"SP-{e}-{s}": True for e in (54, 72) for s in seeds}
    assert set(bound_length.agreement({SP: rows}, other).values()) == {False}
    assert bound_length.agreement({SP: rows}, other, decided={"SP-54-1": True}) == {}
    family = {"OPML-SP": same[SP]["OPML-SP"], "AN for OPML-SP": an72}
    assert bound_length.stored_checks(family, SP) == {SP: {"OPML-SP": {"method": family["OPML-SP"], AN: an72}}}
    assert bound_length.stored_checks({"OPML-SP": family["OPML-SP"]}, SP) == {}  # AN not stored: no check
    both = bound_length.chapter_agreement(rows, family, SP, said={"SP-54-1": False, "AN-54-1": True})
    assert both["SP-54-1"] is False and both["SP-72-3"] is True and both["AN-54-1"] is True
