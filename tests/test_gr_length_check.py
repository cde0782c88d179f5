"""Chapter 02's length check: which runs it asks for (no training: specs and a fake result set)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from mlpl_lab.chapters import gr
from mlpl_lab.profiles import get_profile


def _run(method, params, seed, val, epochs=54):
    P = get_profile("cpu")
    spec = P.spec(method, params, "single_positive", {}, seed=seed, epochs=epochs)
    return SimpleNamespace(spec=spec, best={"val_mAP": val, "test_mAP": val - 1.0})


def _results():
    seeds = [1, 2, 3, 4, 5]
    return {"full labels": [_run("full", {}, s, 99.0) for s in seeds],
            "AN": [_run("an", {}, s, 60.0) for s in seeds],
            "EM": [_run("em", {"alpha": 0.4}, s, 79.0) for s in seeds],
            "ROLE": [_run("role", {"expected_num_pos": 2.9, "lr_mult": 30.0}, s, 80.0) for s in seeds],
            "GR": [_run("gr", {"q2": 0.05}, s, 81.0) for s in seeds]}


@pytest.mark.parametrize("profile, epochs", [("cpu", 72), ("smoke", 3), ("gpu", 13), ("gpu_shape", 3)])
def test_length_check_epochs(profile, epochs):
    """Oracle: round(4/3 x the profile's literal epochs) (54, 2, 10, 2), at least one more."""
    assert gr.length_check_epochs(profile) == epochs


@pytest.mark.parametrize("epochs, longer", [(54, 72), (2, 3), (10, 13), (1, 2), (3, 4), (6, 8)])
def test_lengthened_epochs(epochs, longer):
    """Oracle: round(4/3 x epochs), at least epochs + 1, worked by hand (3 -> round(4.0) = 4): the
    one rule of every length check (the protocol's; chapters 02 and 07 read it there)."""
    from mlpl_lab.protocol.lengths import lengthened_epochs

    assert lengthened_epochs(epochs) == longer


def test_specs_ask_for_the_length_family_rule():
    """The length family :func:`gr.specs` asks for is :func:`gr.length_family`: GR, the best other
    and AN, in that order, with only the epochs changed; without a best other, GR and AN."""
    main = {label: [r.spec for r in runs] for label, runs in _results().items()}
    fam = gr.length_family(main, "EM", 72)
    assert list(fam) == ["GR", "EM", "AN"]
    assert [s.train["epochs"] for s in fam["EM"]] == [72] * 5
    assert [s.method_params for s in fam["EM"]] == [{"alpha": 0.4}] * 5
    assert list(gr.length_family(main, None, 72)) == ["GR", "AN"]
    import inspect

    assert "length_family(main, best, d.length_epochs)" in inspect.getsource(gr.specs)


def test_length_check_specs_keep_settings_and_seeds():
    """Bugs caught: the best other chosen on anything but mean val (ROLE 80 > EM 79, the oracle
    at 99 excluded), a tuned setting dropped, other seeds, another regime, any field besides the
    epochs changed."""
    results = _results()
    specs = gr.length_check_specs("cpu", results)
    assert list(specs) == ["GR", "ROLE", "AN"]
    for label, ss in specs.items():
        assert [s.seed for s in ss] == [1, 2, 3, 4, 5]
        for s, r in zip(ss, results[label]):
            assert s.method == r.spec.method and s.method_params == r.spec.method_params
            assert s.regime == "single_positive" and s.regime_params == {} and s.data == r.spec.data
            assert s.backbone_from == r.spec.backbone_from and s.init_from is None
            assert s.train["epochs"] == 72
            assert {k: v for k, v in s.train.items() if k != "epochs"} == \
                   {k: v for k, v in r.spec.train.items() if k != "epochs"}
            assert s.key != r.spec.key
            # the run the profile itself names for 72 epochs: what the store and the pack hold
            assert s.key == get_profile("cpu").spec(r.spec.method, r.spec.method_params, seed=s.seed,
                                                    epochs=72).key


def test_best_other_reads_validation_not_test():
    results = _results()
    # make ROLE best on test but worst on val: EM must win
    for r in results["ROLE"]:
        r.best = {"val_mAP": 10.0, "test_mAP": 95.0}
    assert gr.best_other(results) == "EM"
    assert gr.best_other({"GR": results["GR"], "AN": results["AN"]}) is None


def test_specs_ask_for_table_3s_rows_at_the_length_checks_epochs():
    """Bugs caught: an ablation row missing from the longer family, another length, another setting
    or seed than the row's own runs, the family asked before GR's setting is chosen under anything
    but the stand-in. Oracle: the cpu literals (rows k̂, v, L; fresh seeds 1-5; 72 epochs) and the
    run the profile itself names for each row at 72 epochs."""
    from mlpl_lab.protocol.asked import nothing_stored

    d = gr.design("cpu")
    asked = gr.specs(d, nothing_stored)  # nothing stored: GR not chosen, both families wait
    assert gr.ABLATION_LENGTH in asked.later and gr.ABLATION_LENGTH not in asked.now
    fam = asked.later[gr.ABLATION_LENGTH]
    assert list(fam) == ["k̂", "v", "L"]
    P = get_profile("cpu")
    for label, ss in fam.items():
        short = asked.later["ablation"][label]
        assert [s.seed for s in ss] == [1, 2, 3, 4, 5]
        for s, r in zip(ss, short):
            assert s.train["epochs"] == 72 and r.train["epochs"] == 54
            assert s.key == P.spec(r.method, r.method_params, seed=r.seed, epochs=72).key


def test_gr_runs_put_table_3s_longer_rows_after_the_length_check():
    """What the notebook reads: ``compared`` holds the zoo then Table 3's rows at the profile's
    length, ``longer`` GR's length check then Table 3's rows trained as long."""
    r = gr.GRRuns(design=None, splits=None, main={"AN": ["a"], "GR": ["g"]}, tuning={},
                  ablation={"k̂": ["k"]}, length={"GR": ["G"], "AN": ["A"]}, ablation_length={"k̂": ["K"]})
    assert list(r.compared.items()) == [("AN", ["a"]), ("GR", ["g"]), ("k̂", ["k"])]
    assert list(r.longer.items()) == [("GR", ["G"]), ("AN", ["A"]), ("k̂", ["K"])]


def test_the_best_other_claim_names_the_method_its_length_check_holds():
    """Bug caught: ROLE read at 96 epochs (its pilot gained) out-scored EM on validation, so the
    claim "GR beats the best other zoo method" named ROLE while the length check, chosen with every
    row at 54 epochs, held EM: the claim had no control and the EM check none to control. By hand:
    ROLE's val 80 > EM's 79, the length check holds GR, EM and AN -> the claim is against EM and its
    length check is that claim's control; without a length check the best on validation (ROLE)."""
    results = _results()
    params = {"GR": ("gr", {"q2": 0.05}), "EM": ("em", {"alpha": 0.4}), "AN": ("an", {})}
    longer = {label: [_run(m, kw, s, 70.0, epochs=72) for s in [1, 2, 3, 4, 5]] for label, (m, kw) in params.items()}
    d = gr.design("cpu")
    rows = gr.claims(results, {}, longer, design=d)
    from mlpl_lab.analysis.claims import claims_record

    rec = claims_record(rows)
    assert rec["gr_beats_best_other"]["claim"] == "GR beats the best other zoo method (EM)"
    checks = [c for c in rec.values() if c.get("control_of") == "gr_beats_best_other"]
    assert [c["claim"] for c in checks] == ["GR beats EM with both trained 72 epochs (length check)"]
    alone = claims_record(gr.claims(results, {}, None, design=d))
    assert alone["gr_beats_best_other"]["claim"] == "GR beats the best other zoo method (ROLE)"


def test_the_zoos_other_schedule_bound_rows_get_a_pending_length_check_against_an():
    """EM+APL and LL-R are schedule-bound (registry flag) and 02 makes no claim about them, so their
    control is :data:`gr.BOUND_CHECK`: each row and AN on its seeds with only the epochs at 72
    (4/3 of 54, by hand), pending (never trained by a report). Not asked: GR (its check is
    ``length``), AN, the oracle and the rows that are not schedule-bound (EM, ROLE), and nothing at
    all once every run is stored and converged. Through :func:`gr.specs` (smoke, every run stored and
    converged but EM+APL's) the pending family is EM+APL and AN alone at 3 epochs, never ``now``. Bugs caught: GR checked twice, a non-§ row asked, the check
    trained as ``now``, AN on other seeds or settings, a longer run's other field changed."""
    main = {label: [r.spec for r in runs] for label, runs in _results().items()}
    main["EM+APL"] = [_run("em_apl", {"alpha": 0.1}, s, 75.0).spec for s in [1, 2, 3, 4, 5]]
    main["LL-R"] = [_run("ll_r", {"delta_rel": 0.2}, s, 74.0).spec for s in [1, 2, 3, 4, 5]]
    fam = gr.bound_check_family(main, lambda spec: None)
    assert list(fam) == ["EM+APL", "AN for EM+APL", "LL-R", "AN for LL-R"]
    for label in ("EM+APL", "LL-R"):
        for short, long_, an_short, an_long in zip(main[label], fam[label], main["AN"], fam[f"AN for {label}"]):
            assert (long_.seed, long_.train["epochs"]) == (short.seed, 72)
            assert long_.method_params == short.method_params and long_.regime == short.regime
            assert (an_long.method, an_long.seed, an_long.train["epochs"]) == ("an", an_short.seed, 72)
    assert gr.bound_check_family({k: v for k, v in main.items() if k != "AN"}, lambda spec: None) == {}

    def converged(spec):
        return SimpleNamespace(spec=spec, converged=True, summary={}, best={})
    assert gr.bound_check_family(main, converged) == {}
    cold = gr.specs(gr.design("smoke"), lambda spec: None)
    assert gr.BOUND_CHECK not in cold.now and gr.BOUND_CHECK not in cold.later

    def all_stored(spec):  # every run stored and converged but EM+APL's (so the tuning decides)
        return SimpleNamespace(spec=spec, converged=spec.method != "em_apl", summary={}, pilot=None,
                               best={"val_mAP": 50.0 + spec.seed, "test_mAP": 50.0}, history=[])
    asked = gr.specs(gr.design("smoke"), all_stored)
    fam = asked.pending[gr.BOUND_CHECK]
    assert gr.BOUND_CHECK not in asked.now and not asked.later
    # smoke trains 2 epochs on seeds 1 and 2: the check is 3 epochs (round(4/3 x 2)), EM+APL and AN only
    assert {k: [(s.method, s.seed, s.train["epochs"]) for s in v] for k, v in fam.items()} == {
        "EM+APL": [("em_apl", 1, 3), ("em_apl", 2, 3)], "AN for EM+APL": [("an", 1, 3), ("an", 2, 3)]}
