"""Equal-budget tuning (chapter 02 and the benchmark): the grids, the budget, the seeds, the choice.

Oracles: hand-written trial lists, the methods' own constructor defaults, a naive arg-max, and
runs trained directly from specs built in the test."""
from __future__ import annotations

import inspect

import pytest

from mlpl_lab.chapters import benchmark

from mlpl_lab.protocol import tuning
from mlpl_lab.protocol.asked import ensure_asked
from mlpl_lab.profiles import get_profile
from mlpl_lab.protocol import recipes


def test_trial_points_hold_only_what_differs_from_the_paper_default():
    """Bug caught: the default trial spelled out ({"q2": 0.01, ...}) gets another run key than
    the untuned run, so the default is trained twice and 02/07 do not share runs."""
    assert tuning.trial_points("GR", 3) == [{}, {"q2": 0.05}, {"schedule": "code"}]
    assert tuning.trial_points("EM", 2) == [{}, {"alpha": 0.1}]
    assert tuning.trial_points("OPML-SP", 3) == [{}, {"b": -1.0}, {"a": 1.0}]
    assert tuning.trial_points("AN", 3) == [{}]  # nothing to tune: one configuration


@pytest.mark.parametrize("label", sorted(tuning.GRIDS))
def test_every_grid_starts_at_the_methods_default_and_fills_the_budget(label):
    """Bug caught: a grid whose first value is not what the method runs untuned (the 'paper
    default' trial would be another setting), a value the method does not accept, or a grid too
    short for the equal budget. Oracle: the method's recorded hyperparameters, else its loss
    function's signature default."""
    from mlpl_lab.losses.registry import LOSSES
    from mlpl_lab.methods import build_method

    row = recipes.row(label)
    base = row.params(get_profile("cpu"), "single positive", 0)
    untuned = build_method(row.method, **base).hparams
    points = tuning.trial_points(label, tuning.TRIALS)
    assert len(points) == tuning.TRIALS and len({tuple(sorted(p.items())) for p in points}) == tuning.TRIALS
    for key, values in tuning.GRIDS[label].items():
        default = untuned[key] if key in untuned else \
            inspect.signature(LOSSES[row.method]).parameters[key].default
        assert default == values[0], (label, key)
        assert build_method(row.method, **dict(base, **{key: values[1]})).hparams[key] == values[1]


def test_fresh_seeds_follow_the_selection_seed():
    assert tuning.selection_seed("cpu") == 0
    assert tuning.fresh_seeds("cpu") == (1, 2, 3, 4, 5)  # five paired seeds, none the selection's
    assert tuning.fresh_seeds("smoke") == (1, 2)
    assert tuning.fresh_seeds(get_profile("smoke", seeds=[3, 4, 5])) == (4, 5, 6)
    assert tuning.trials_for("cpu") == 3 and tuning.trials_for("smoke") == 2


class Run:
    def __init__(self, val, test=0.0):
        self.best = {"val_mAP": val, "test_mAP": test}


def test_choose_reads_validation_and_keeps_the_first_of_ties():
    """Bug caught: choosing on test mAP, or a tie going to a later (non-default) trial."""
    assert tuning.choose([({}, Run(50, test=99)), ({"a": 1}, Run(60, test=1))]) == 1
    assert tuning.choose([({}, Run(60)), ({"a": 1}, Run(60)), ({"a": 2}, Run(59))]) == 0
    with pytest.raises(ValueError):
        tuning.choose([])


def test_benchmark_cpu_design_is_tuned_on_the_fresh_seeds():
    d = benchmark.design("cpu")
    assert d.tuning and d.selection_seed == 0
    assert set(d.seeds.values()) == {(1, 2, 3, 4, 5)}
    assert not benchmark.design("smoke").tuning
    assert not benchmark.design("cpu", tuning=False).tuning


def test_chapter_02_and_the_benchmark_share_gr_runs():
    """Bug caught: the two chapters building GR's trial or fresh-seed specs differently, so the
    same tuned GR is trained twice and the two tables disagree."""
    P = get_profile("cpu")
    for point in tuning.trial_points("GR", 3):
        for seed in (0, 3):
            ours = P.spec("gr", dict(point), "single_positive", {}, seed=seed)
            theirs = recipes.spec_for(P, "GR", "single positive", seed,
                                        dict(recipes.row("GR").params(P, "single positive", 0), **point))
            assert ours.key == theirs.key


@pytest.fixture()
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path))
    monkeypatch.setenv("MLPL_LAB_PROGRESS", "0")
    return tmp_path


def test_chapter_02_tunes_with_one_budget_and_reports_fresh_seeds(store):
    """End to end under smoke (1 epoch): the trials are the runs an independent loop trains from
    specs built here; the kept setting is their naive arg-max on validation; every reported run
    (and every ablation row, with GR's kept schedule and q2) is on the fresh seeds."""
    from mlpl_lab.chapters import gr
    from mlpl_lab.runs import ensure

    P = get_profile("smoke", epochs=1)
    d = gr.design(P)
    out = gr.results(d, ensure_asked(gr.specs, d))
    results, record, ablation = out.main, out.tuning, out.ablation
    specs = {label: gr.as_spec(m) for label, m in gr.methods(P, gr.splits_for(P, "single_positive", {}, 0)).items()}
    tuned = [label for label in specs if label in tuning.GRIDS]
    assert set(record) == set(tuned) and {len(r["trials"]) for r in record.values()} == {2}
    for label in tuned:
        method, base = specs[label]
        points = tuning.trial_points(label, 2)
        trial_runs = ensure.ensure([P.spec(method, dict(base, **pt), "single_positive", {}, seed=0)
                                    for pt in points])
        vals = [r.best["val_mAP"] for r in trial_runs]
        best = 0
        for i, v in enumerate(vals):  # naive arg-max, first of ties
            if v > vals[best]:
                best = i
        assert record[label]["chosen"] == best, label
        assert [r.spec.seed for r in results[label]] == [1, 2]
        assert all(r.spec.method_params == dict(base, **points[best]) for r in results[label])
    assert all([r.spec.seed for r in runs] == [1, 2] for runs in results.values())
    gr_kept = record["GR"]["chosen_params"]
    robust_off = {"k̂", "v"}  # Table 3's rows without the robust losses: their q's are fixed "off"
    for label, runs in ablation.items():
        assert [r.spec.seed for r in runs] == [1, 2]
        want = {k: v for k, v in gr_kept.items() if label not in robust_off or not k.startswith("q")}
        assert all(r.spec.method_params == want for r in runs), label

# --- the stage as data (issue 50): a hand-made store whose validation mAPs the test sets --------

class _Trial:
    def __init__(self, val):
        self.best, self.best_epoch, self.converged = {"val_mAP": val}, 3, True
        self.history = [{"val_mAP": val}]  # no observed validation recorded


def _make(label, point, seed):
    """A stand-in spec: what the stage must pass through untouched."""
    return (label, None if point is None else tuple(sorted(point.items())), seed)


def test_stage_asks_for_the_trials_and_waits_with_a_stand_in_when_nothing_is_stored():
    """Bug caught: a stage that asks for fresh seeds of a choice it cannot make yet (or forgets
    the untuned labels, or the trials) — the plan would count the wrong runs."""
    points = {"EM": [{}, {"alpha": 0.1}], ("drop 50 %", "GR"): [{}, {"q2": 0.05}, {"schedule": "code"}]}
    st = tuning.stage(_make, points, ["AN"], selection=0, fresh=(1, 2), stored=lambda spec: None)
    assert st.trials == {"EM": [("EM", (), 0), ("EM", (("alpha", 0.1),), 0)],
                         ("drop 50 %", "GR"): [(("drop 50 %", "GR"), (), 0),
                                               (("drop 50 %", "GR"), (("q2", 0.05),), 0),
                                               (("drop 50 %", "GR"), (("schedule", "code"),), 0)]}
    assert st.chosen == {} and not st.decided
    assert st.fresh == {"AN": [("AN", None, 1), ("AN", None, 2)]}
    assert st.later == {"EM": [("EM", (), 1), ("EM", (), 2)],
                        ("drop 50 %", "GR"): [(("drop 50 %", "GR"), (), 1), (("drop 50 %", "GR"), (), 2)]}
    now, later = st.asked()
    assert now == {"trial": st.trials, "fresh": st.fresh} and later == {"fresh": st.later}


def test_stage_chooses_on_the_stored_validation_map_and_asks_for_the_kept_point_on_fresh_seeds():
    """Oracle: validation mAPs set by hand — EM's second trial is best; GR's first two tie above
    the third (the tie goes to the paper default); LL-R lacks a trial run, so it waits."""
    val = {("EM", (), 0): 40.0, ("EM", (("alpha", 0.1),), 0): 41.5,
           ("GR", (), 0): 50.0, ("GR", (("q2", 0.05),), 0): 50.0, ("GR", (("schedule", "code"),), 0): 49.0,
           ("LL-R", (), 0): 30.0}
    store = {k: _Trial(v) for k, v in val.items()}
    points = {"EM": [{}, {"alpha": 0.1}], "GR": [{}, {"q2": 0.05}, {"schedule": "code"}],
              "LL-R": [{}, {"delta_rel": 0.001}]}
    st = tuning.stage(_make, points, [], selection=0, fresh=(1, 2, 3), stored=store.get)
    assert st.chosen == {"EM": 1, "GR": 0}
    assert st.kept("EM") == {"alpha": 0.1} and st.kept("GR") == {}
    assert st.fresh == {"EM": [("EM", (("alpha", 0.1),), s) for s in (1, 2, 3)],
                        "GR": [("GR", (), s) for s in (1, 2, 3)]}
    assert st.later == {"LL-R": [("LL-R", (), s) for s in (1, 2, 3)]}
    rec = st.record()
    assert set(rec) == {"EM", "GR"}
    assert rec["EM"]["chosen_params"] == {"alpha": 0.1}
    assert [t["val_mAP"] for t in rec["GR"]["trials"]] == [50.0, 50.0, 49.0]
    # once LL-R's second trial is stored (worse), nothing waits and LL-R keeps its default
    store[("LL-R", (("delta_rel", 0.001),), 0)] = _Trial(29.0)
    st = tuning.stage(_make, points, [], selection=0, fresh=(1, 2, 3), stored=store.get)
    assert st.decided and st.chosen["LL-R"] == 0 and st.fresh["LL-R"] == [("LL-R", (), s) for s in (1, 2, 3)]


def test_stage_refuses_a_label_both_tuned_and_untuned():
    with pytest.raises(ValueError):
        tuning.stage(_make, {"EM": [{}]}, ["EM"], 0, (1,), lambda s: None)


@pytest.mark.parametrize("profile", ["smoke", "cpu", "gpu", "gpu_shape"])
def test_chapter_02_design_takes_the_budget_the_benchmark_tunes_with(profile):
    """Bug caught: 02's literal budget drifting from the benchmark's (07 reads 02's GR trials;
    a different budget would train other trials and break the equal-budget claim). Oracle: the
    literals written out (2 in the small CI profiles, 3 otherwise)."""
    from mlpl_lab.chapters import gr

    want = {"smoke": 2, "gpu_shape": 2}.get(profile, 3)
    assert gr.design(profile).budget == tuning.trials_for(profile) == want


class _Curves:
    """A stored trial with per-epoch clean and observed validation mAP."""

    def __init__(self, clean, observed):
        self.history = [{"val_mAP": c, "val_obs_mAP": o} for c, o in zip(clean, observed)]
        self.best_epoch = max(range(len(clean)), key=lambda i: (clean[i], -i))
        self.best, self.converged = {"val_mAP": clean[self.best_epoch]}, True


def test_observed_validation_keeps_its_own_trial_and_says_where_it_differs():
    """Bug caught: the observed choice read at the clean-best epoch (or from the clean column), a
    tie going to the later trial, or a record that claims an observed choice for runs that never
    scored one. Oracle: hand-written curves whose arg-maxes differ by criterion."""
    a = _Curves(clean=[40, 60, 55], observed=[30, 20, 25])   # clean best 60; observed best 30 (epoch 0)
    b = _Curves(clean=[50, 58, 57], observed=[10, 35, 20])   # clean best 58; observed best 35
    c = _Curves(clean=[45, 59, 50], observed=[35, 15, 12])   # ties b on observed: b (earlier) wins
    assert tuning.choose([({}, a), ({"x": 1}, b), ({"x": 2}, c)]) == 0
    assert tuning.choose_observed([a, b, c]) == 1
    assert tuning.observed_best(b) == 35
    assert tuning.choose_observed([a, _Trial(70)]) is None  # a trial without the metric: no choice
    store = {("M", (), 0): a, ("M", (("x", 1),), 0): b, ("M", (("x", 2),), 0): c}
    st = tuning.stage(_make, {"M": [{}, {"x": 1}, {"x": 2}]}, [], selection=0, fresh=(1,), stored=store.get)
    assert st.kept("M") == {} and st.kept_observed("M") == {"x": 1}
    rec = st.record()["M"]
    assert rec["chosen"] == 0 and rec["chosen_observed"] == 1 and rec["chosen_observed_params"] == {"x": 1}
    assert [t["val_obs_mAP"] for t in rec["trials"]] == [30, 35, 35]
    summary = tuning.tuning_summary(st.record())
    assert summary.loc["M", "kept on observed labels"] == "x=1"
