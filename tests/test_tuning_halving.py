"""The successive-halving measurement (benchmarks/tuning_halving.py) on hand-made trials: which
trial a rung keeps, what it saves, and which runs form a tuned group."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import tuning_halving as th  # noqa: E402


def _h(*vals):
    return [{"val_mAP": v} for v in vals]


def test_a_late_bloomer_is_lost_at_an_early_rung_and_kept_at_a_late_one():
    """Trial 1 leads until epoch 2, trial 2 overtakes from epoch 3 and ends best: a rung at a
    quarter of 8 epochs (epoch 2) keeps trial 1, one at a half (epoch 4) keeps trial 2. Saved by
    hand: the two stopped trials' seconds times (8 - r) / 8."""
    hist = [_h(10, 11, 12, 13, 14, 15, 16, 17),
            _h(20, 30, 31, 31, 31, 31, 31, 31),
            _h(5, 25, 40, 41, 42, 43, 44, 45)]
    secs = [80.0, 80.0, 160.0]
    assert th.halve_group(hist, secs, 0.25) == (2, 1, 2, 80 * 6 / 8 + 160 * 6 / 8)
    assert th.halve_group(hist, secs, 0.5) == (2, 2, 4, 80 * 4 / 8 + 80 * 4 / 8)


def test_ties_go_to_the_earlier_trial_the_paper_default():
    # the full runs tie at 60 (the default kept); at the rung (epoch 1) trial 1 leads
    assert th.halve_group([_h(50, 60), _h(60, 55)], [1.0, 1.0], 0.5)[:2] == (0, 1)
    # the rung ties at 60 (the default kept); over the full runs trial 1 wins
    assert th.halve_group([_h(60, 61), _h(60, 70)], [1.0, 1.0], 0.5)[:2] == (1, 0)


def test_groups_are_a_catalogue_rows_tuning_trials_on_the_selection_seed():
    """GR's grid (written out here from the catalogue's entry: schedule paper/code, q2 0.01/0.05)
    gives the trials {}, {q2: 0.05}, {schedule: code}: those three on seed 0 form a group in that
    order, a fourth variant beside them (a chapter's own row) is left out; the same trials on
    seed 1, an incomplete set, and a lone AN run form none. Bug caught: an ablation's rows that
    differ in a parameter scored as if they were tuning trials; a design's extra parameter (the
    same on every trial) hiding the trials."""
    def run(method, params, seed, regime="single_positive"):
        return {"key": f"{method}{params}{seed}{regime}", "spec": {
            "method": method, "method_params": params, "seed": seed, "regime": regime}}
    runs = [run("gr", {"schedule": "code"}, 0), run("gr", {}, 0), run("gr", {"q2": 0.05}, 0),
            run("gr", {"q2": 0.2, "schedule": "code"}, 0),
            run("gr", {}, 1), run("gr", {"q2": 0.05}, 1), run("gr", {"schedule": "code"}, 1),
            run("gr", {}, 0, "drop"), run("gr", {"q2": 0.05}, 0, "drop"), run("an", {}, 0)]
    # Co-teaching's grid (forget_rate 0.2 default, 0.1, 0.3) with the design's T_k on every trial
    # and the default written out: still its three trials
    co = [run("coteaching", {"T_k": 10, "forget_rate": f}, 0) for f in (0.3, 0.2, 0.1)]
    g = list(th.groups(runs + co, 3).values())
    assert [[r["spec"]["method_params"].get("forget_rate") for r in trials] for label, trials in g
            if label == "Co-teaching"] == [[0.2, 0.1, 0.3]]
    g = list(th.groups(runs, 3).values())
    assert len(g) == 1
    label, trials = g[0]
    assert label == "GR"
    assert [r["spec"]["method_params"] for r in trials] == [{}, {"q2": 0.05}, {"schedule": "code"}]
