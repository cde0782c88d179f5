"""The default scenes' choice (mlpl_lab.protocol.scenes_choice): candidates, rule, table.

The rule is checked on hand-made runs whose verdicts are worked out here from its statement
(issue 36): eligible = every oracle / AN run converged, oracle val mAP in [81, 91], val gap >= 11;
the largest val gap wins, gaps within 1 mAP of it tie and go to the oracle nearest 86.
"""
from __future__ import annotations

import dataclasses

from types import SimpleNamespace

import pytest

from mlpl_lab.protocol import scenes_choice as sc
from mlpl_lab.data.scenes import check_scene_data
from mlpl_lab.profiles import get_profile


def _run(val, test=None, converged=True):
    return SimpleNamespace(best={"val_mAP": val, "test_mAP": val if test is None else test},
                           converged=converged)


def _cand(oracle, an, converged=(True, True), tests=None):
    """One seed: the oracle's and AN's runs at the given val mAP."""
    t = tests or (None, None)
    return {"full labels": [_run(oracle, t[0], converged[0])], "AN": [_run(an, t[1], converged[1])]}


#: verdicts by hand: A's oracle above 91, B eligible (gap 14), C eligible (gap 16.5, the largest),
#: D unconverged, E's gap 10.5 < 11, F's oracle 80.5 < 81
CANDS = {"A": _cand(95.0, 80.0), "B": _cand(88.0, 74.0), "C": _cand(84.0, 67.5),
         "D": _cand(86.0, 60.0, converged=(True, False)), "E": _cand(90.5, 80.0), "F": _cand(80.5, 60.0)}


def test_rule_picks_the_largest_val_gap_among_eligible():
    out = sc.choose_scenes(CANDS)
    assert out["chosen"] == "C"
    assert sorted(out["eligible"]) == ["B", "C"] and out["tied"] == ["C"]
    assert set(out["excluded"]) == {"A", "D", "E", "F"}
    assert "converge" in out["excluded"]["D"] and "10.5" in out["excluded"]["E"]
    assert "95.00" in out["excluded"]["A"] and "80.50" in out["excluded"]["F"]


def test_margins_are_inclusive_at_the_tightened_bounds():
    edge = {"low": _cand(81.0, 70.0), "high": _cand(91.0, 80.0), "just out": _cand(91.01, 70.0)}
    out = sc.choose_scenes(edge)
    assert sorted(out["eligible"]) == ["high", "low"]  # gaps 11 and 11: exactly the least
    assert "just out" in out["excluded"]


def test_a_gap_tie_goes_to_the_oracle_nearest_the_band_centre():
    cands = {"hard": _cand(82.0, 65.5), "mid": _cand(86.5, 70.5), "small gap": _cand(86.0, 73.0)}
    out = sc.choose_scenes(cands)  # gaps 16.5, 16.0 (tied within 1), 13.0
    assert out["tied"] == ["hard", "mid"] and out["chosen"] == "mid"
    assert sc.choose_scenes(cands, gap_tie=0.1)["chosen"] == "hard"


def test_the_rule_reads_neither_test_mAP_nor_other_methods():
    def same_val(r, test):
        return _run(r.best["val_mAP"], test=test, converged=r.converged)
    flipped = {k: {"full labels": [same_val(c["full labels"][0], 50.0)], "AN": [same_val(c["AN"][0], 49.0)],
                   "GR": [_run(99.0)], "EM": [_run(10.0, converged=False)]} for k, c in CANDS.items()}
    assert sc.choose_scenes(flipped) == sc.choose_scenes(CANDS)


def test_no_eligible_candidate_chooses_none():
    out = sc.choose_scenes({"easy": _cand(97.0, 89.3), "unconverged": _cand(86.0, 70.0, (False, True))})
    assert out["chosen"] is None and out["eligible"] == [] and "measure other settings" in out["reason"]


def test_summary_averages_seeds_and_counts_convergence():
    c = {"full labels": [_run(90.0, 89.0), _run(86.0, 87.0, converged=False)],
         "AN": [_run(70.0, 71.0), _run(74.0, 73.0)]}
    r = sc.summarise({"x": c})["x"]
    assert r["oracle val"] == pytest.approx(88.0) and r["AN val"] == pytest.approx(72.0)
    assert r["gap val"] == pytest.approx(16.0) and r["gap test"] == pytest.approx(16.0)
    assert (r["seeds"], r["converged"], r["runs"]) == (2, 3, 4)


def test_table_has_a_row_and_a_verdict_per_candidate():
    t = sc.candidates_table(CANDS)
    assert list(t.index) == list(CANDS)
    assert t.loc["C", "rule"] == "chosen" and t.loc["B", "rule"] == "eligible"
    assert "converge" in t.loc["D", "rule"] and t.loc["D", "converged"] == "1 of 2"


@pytest.mark.parametrize("profile", ["smoke", "cpu", "gpu"])
def test_every_candidate_is_a_valid_distinct_scene_setting(profile):
    P = get_profile(profile)
    specs = sc.candidate_specs(P, seeds=[0, 1])
    assert len(specs) == 2 * len(sc.SCENE_CANDIDATES)
    datas = set()
    for (cand, label), ss in specs.items():
        assert [s.seed for s in ss] == [0, 1] and ss[0].method == sc.METHODS[label]
        check_scene_data(ss[0].data)
        # over the generator's defaults, not over the profile's chosen scenes
        expected = dataclasses.replace(P, scene={}).data_kwargs() | dict(sc.SCENE_CANDIDATES[cand])
        assert ss[0].data == expected
        datas.add(repr(sorted(ss[0].data.items())))
    assert len(datas) == len(sc.SCENE_CANDIDATES)  # no two candidates the same scenes
    backbones = {s.backbone_from.key for ss in specs.values() for s in ss}
    assert len(backbones) == 1  # one pretraining run serves every candidate
    an = specs[(next(iter(sc.SCENE_CANDIDATES)), "AN")][0]
    assert an.regime == "single_positive"


def test_the_probe_is_the_issue_36_setting():
    p = sc.SCENE_CANDIDATES["probe"]
    assert p == {"colour_jitter": 0.2, "noise": 0.12, "size_range": [0.22, 0.42], "max_objects": 6,
                 "min_visible": 0.2}
    assert sc.SCENE_CANDIDATES["generator defaults"] == {}


def _row(cand, method, seed, val, converged=True):
    return {"candidate": cand, "method": method, "seed": seed, "val_mAP": val, "test_mAP": val - 1,
            "converged": converged}


def test_runs_from_a_record_keep_the_seeds_asked_for():
    record = {"runs": [_row("p", "full labels", 0, 90.0), _row("p", "AN", 0, 74.0),
                       _row("q", "full labels", 0, 88.0), _row("q", "AN", 0, 70.0),
                       _row("p", "full labels", 1, 86.0), _row("p", "AN", 1, 72.0, converged=False)]}
    both = sc.runs_from_record(record, seeds=[0, 1])
    assert list(both) == ["p"]  # q has no seed 1
    r = sc.summarise(both)["p"]
    assert (r["oracle val"], r["AN val"], r["oracle test"]) == (88.0, 73.0, 87.0)
    assert (r["converged"], r["runs"]) == (3, 4)
    assert sc.choose_scenes(sc.runs_from_record(record, seeds=[0]))["chosen"] == "q"  # gaps 16 vs 18
    assert sc.choose_scenes(both)["chosen"] is None  # p's seed-1 AN did not converge
    assert set(sc.runs_from_record(record)) == {"p", "q"}


@pytest.mark.skipif(not sc.CPU_RECORD.exists(), reason="no cpu measurement recorded")
def test_the_recorded_decision_is_what_the_rule_says_of_the_record():
    """The committed record and the rule's code agree: a change to the rule (or the candidates)
    that would choose differently on the same measurements fails here until re-measured."""
    import json

    record = json.loads(sc.CPU_RECORD.read_text())
    decision = record["decision"]
    runs = sc.runs_from_record(record, seeds=decision["seeds"])
    assert sc.choose_scenes(runs)["chosen"] == decision["chosen"]
    assert record["candidates"][decision["chosen"]] == sc.SCENE_CANDIDATES[decision["chosen"]]
    assert set(sc.runs_from_record(record, seeds=[decision["seeds"][0]])) == set(sc.SCENE_CANDIDATES)


def test_the_profiles_use_the_scenes_the_rule_chose():
    """Bug caught: a profile whose scenes are not the ones the measurement's rule picked (a
    setting typed by hand, or a record re-measured without switching the profiles)."""
    from mlpl_lab.protocol.scenes_choice import SCENE_CANDIDATES, choose_scenes, runs_from_record
    from mlpl_lab.profiles import SCENES_WITH_HEADROOM, get_profile

    chosen = choose_scenes(runs_from_record())["chosen"]
    assert dict(SCENE_CANDIDATES[chosen]) == SCENES_WITH_HEADROOM
    for name in ("cpu", "gpu", "gpu_shape"):
        data = get_profile(name).spec("an").data
        assert {k: data[k] for k in SCENES_WITH_HEADROOM} == SCENES_WITH_HEADROOM
    assert not set(SCENES_WITH_HEADROOM) & set(get_profile("smoke").spec("an").data)  # CI keeps the defaults


class _Run:
    """A stored run as targets() reads it: its spec (seed, epochs) and best-val test mAP."""

    def __init__(self, seed, test, epochs=54, converged=True):
        self.spec = type("Spec", (), {"seed": seed, "train": {"epochs": epochs}})()
        self.best = {"test_mAP": test, "val_mAP": test}
        self.converged = converged


@pytest.mark.parametrize("oracle, an, in_band, met", [
    (90.0, 75.0, True, True),     # inside 80-92, gap 15
    (92.5, 75.0, False, False),   # above the band
    (79.9, 60.0, False, False),   # below the band
    (85.0, 75.5, True, False),    # gap 9.5 < 10
    (80.0, 70.0, True, True),     # both bounds inclusive, as the issue states them
])
def test_targets_read_seed_0_of_the_profiles_own_runs(oracle, an, in_band, met):
    oracle_runs = [_Run(1, 50.0), _Run(0, oracle)]   # seed 1 first: the seed must be picked, not the first
    an_runs = [_Run(0, an), _Run(1, 99.0)]
    t = sc.targets(oracle_runs, an_runs, seed=0)
    assert (t["oracle test"], t["AN test"]) == (oracle, an)
    assert t["gap test"] == pytest.approx(oracle - an)
    assert t["oracle in band"] is in_band and t["met"] is met and t["epochs"] == 54
    assert ("met" if met else "NOT met") in sc.targets_summary(t)


def test_targets_are_not_met_on_a_run_still_learning():
    """An oracle inside the band and a wide gap, but the oracle's run had not converged."""
    t = sc.targets([_Run(0, 90.0, converged=False)], [_Run(0, 70.0)], seed=0)
    assert t["oracle in band"] and t["gap ok"] and t["met"] is False
    assert t["converged"] == {"full labels": False, "AN": True}
    assert "not converged: full labels" in sc.targets_summary(t) and "NOT met" in sc.targets_summary(t)


def test_the_summary_prints_the_band_the_targets_used():
    t = sc.targets([_Run(0, 90.0)], [_Run(0, 70.0)], seed=0, band=(85.0, 95.0))
    assert "inside 85-95" in sc.targets_summary(t)


def test_targets_name_a_missing_seed():
    with pytest.raises(ValueError, match="no run of seed 3"):
        sc.targets([_Run(0, 90.0)], [_Run(0, 70.0)], seed=3)


def test_the_candidates_caption_says_how_long_the_candidates_trained():
    record = {"runs": [_row("p", "full labels", 0, 90.0) | {"epochs": 36}, _row("p", "AN", 0, 74.0) | {"epochs": 36}]}
    html = sc.candidates_view(sc.runs_from_record(record)).to_html()
    assert "trained 36 epochs" in html
