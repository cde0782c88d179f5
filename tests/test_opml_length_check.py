"""Chapter 03's claims on OPML-SP's schedule-bound runs say what its length check found, against
hand-built runs (no claim is added to a family: the check is the headline's comparison at 4/3 of
the epochs), and the pending check is asked exactly where OPML-SP did not converge."""
from types import SimpleNamespace

from mlpl_lab.analysis.tables import LENGTH_CHECK_AGREES, LENGTH_CHECK_DISAGREES, length_check_agreement
from mlpl_lab.analysis.claims import claims_record
from mlpl_lab.catalogue import LABEL
from mlpl_lab.chapters import opml

SEEDS = (0, 1, 2)


def runs(method, values, epochs=2, converged=True):
    return [SimpleNamespace(spec=SimpleNamespace(seed=s, key=f"{method}-{epochs}-{s}", method=method, method_params={},
                                                 train={"epochs": epochs}),
                            best={"test_mAP": v, "val_mAP": v}, converged=converged)
            for s, v in zip(SEEDS, values)]


def sp_results():
    return {LABEL.an: runs("an", [60.0, 61.0, 62.0]), LABEL.opml: runs("opml", [62.0, 63.0, 64.5]),
            LABEL.opml_sp: runs("opml_sp", [69.0, 71.0, 73.0], converged=False)}


FULL = {LABEL.bce_full: runs("full", [80.0, 81.0, 82.0]), "OPML (full)": runs("opml_full", [80.5, 81.0, 82.5])}


def test_the_headline_reads_its_length_check_and_the_other_claims_say_it_does_not_cover_them():
    """Hand-derived: OPML-SP − AN = +9, +10, +11 (holds). Its check at 3 epochs: +8, +10, +12 (holds)
    → the headline's note says the check agrees, and the protocol then counts the headline's runs;
    at −9, −10, −11 (does not hold) → it disagrees. "OPML-SP beats OPML" is not the check's
    comparison: its note says so and carries no agreement. No check stored → "no length check
    stored". Bugs caught: the check read as agreeing whatever it found, another comparison credited
    with the headline's check, a claim added to a family (the ids stay the design's)."""
    d = opml.design("smoke")
    sp = sp_results()
    an3 = runs("an", [60.0, 61.0, 62.0], epochs=3)
    agree = {d.regime: {LABEL.opml_sp: {"method": runs("opml_sp", [68.0, 71.0, 74.0], epochs=3), LABEL.an: an3}}}
    flip = {d.regime: {LABEL.opml_sp: {"method": runs("opml_sp", [51.0, 51.0, 51.0], epochs=3), LABEL.an: an3}}}
    ids = {c for members in d.family_members.values() for c in members}
    table = opml.claims(sp, FULL, d, agree)
    assert set(table.index) == ids
    head, parts = "opml_sp_beats_an", "opml_sp_beats_opml"
    assert LENGTH_CHECK_AGREES in table.at[head, "_schedule"]
    assert "does not cover" in table.at[parts, "_schedule"] and LENGTH_CHECK_AGREES not in table.at[parts, "_schedule"]
    said = length_check_agreement(claims_record(table))
    assert said["opml_sp-2-0"] is True and not any(k.startswith("opml-") for k in said)
    assert LENGTH_CHECK_DISAGREES in opml.claims(sp, FULL, d, flip).at[head, "_schedule"]
    assert opml.claims(sp, FULL, d).at[head, "_schedule"] == "schedule-bound, no length check stored"
    converged = dict(sp, **{LABEL.opml_sp: runs("opml_sp", [69.0, 71.0, 73.0])})
    assert "_schedule" not in opml.claims(converged, FULL, d, agree).columns


def test_specs_ask_the_pending_check_only_while_opml_sp_is_not_shown_converged():
    """From scratch (nothing stored) the plan counts the check: OPML-SP and AN on the key seeds at
    lengthened epochs, pending (a notebook never trains it by default). With every run stored and
    converged nothing is asked. Bug caught: the check asked as ``now`` (a report would train it)."""
    from mlpl_lab.protocol.lengths import lengthened_epochs

    d = opml.design("smoke")
    cold = opml.specs(d, lambda spec: None)
    fam = cold.pending[opml.BOUND_CHECK]
    assert opml.BOUND_CHECK not in cold.now and list(fam) == [LABEL.opml_sp, f"AN for {LABEL.opml_sp}"]
    e = lengthened_epochs(cold.now[opml.PARTIAL][LABEL.opml_sp][0].train["epochs"])
    assert [(s.seed, s.train["epochs"]) for s in fam[LABEL.opml_sp]] == [(s, e) for s in d.key_seeds]
    assert [s.method for s in fam[f"AN for {LABEL.opml_sp}"]] == ["an"] * len(d.key_seeds)

    def converged(spec):
        return SimpleNamespace(spec=spec, converged=True, summary={}, best={})
    assert opml.specs(d, converged).pending == {}


def test_08s_claims_that_read_gr_say_its_length_check_does_not_cover_them():
    """Chapter 08 has no "GR beats AN" claim, so GR's length check (GR against AN) covers none of
    its claims: "Crisp beats GR" reads GR's schedule-bound runs and says so, and gives the
    protocol no agreement (GR's runs count through the check itself). No check stored → "no length
    check stored"; GR converged → no note. Bugs caught: a claim read as agreeing with a check that
    compares something else; a note on a claim that does not read GR."""
    from mlpl_lab.chapters import side_information as si

    d = si.design("cpu")
    base = {LABEL.an: runs("an", [60.0, 61.0, 62.0]), LABEL.gr: runs("gr", [70.0, 71.0, 72.0], converged=False)}
    pri = {LABEL.crisp: runs("crisp", [65.0, 66.0, 67.0]), LABEL.crisp_true: runs("crisp_true", [66.0, 67.0, 68.0])}
    check = {LABEL.gr: runs("gr", [71.0, 72.0, 73.0], epochs=3), f"AN for {LABEL.gr}": runs("an", [60.0, 61.0, 62.0], epochs=3)}
    res = {si.BASELINES: base, si.PRIORS: pri, si.CARDINALITY: {}}
    table = si.claims({**res, si.BOUND_CHECK: check}, d)
    notes = table["_schedule"].to_dict()
    assert notes["crisp_beats_gr"] == "schedule-bound; the length check (GR against AN) does not cover this comparison"
    assert not any(isinstance(v, str) and v for k, v in notes.items() if k != "crisp_beats_gr"), notes
    assert length_check_agreement(claims_record(table)) == {}
    assert si.claims(res, d).at["crisp_beats_gr", "_schedule"] == "schedule-bound, no length check stored"
    converged = {**res, si.BASELINES: dict(base, **{LABEL.gr: runs("gr", [70.0, 71.0, 72.0])})}
    assert "_schedule" not in si.claims(converged, d).columns
