"""Model selection without clean labels (issue 52): every epoch scores ``val_obs_mAP``, the val
predictions against the *observed* val labels with unknown counted as negative, beside the clean
``val_mAP``. Oracle: a naive average precision written here, on the same predictions."""
import numpy as np
import torch

from mlpl_lab.engine.train import fit, predict_dataset
from mlpl_lab.methods import build_method
from mlpl_lab.profiles import get_profile
from mlpl_lab.runs.splits_cache import build_splits
from mlpl_lab.runs.validation import config_of


def tiny(regime="single_positive", epochs=2):
    spec = get_profile("smoke").spec("an", regime=regime, seed=1, epochs=epochs, probes=[],
                                     augment="none", model_kwargs={"width": 4, "norm": "none"})
    return spec, build_splits(spec), config_of(spec, progress=False, device="cpu")


def naive_map(scores, targets):
    """Mean over classes of scikit-learn's AP, written out: at each distinct score, from the
    highest down, the recall gained times the precision of everything scored at least that high
    (tied scores enter together); 0 for a class without positives (Cole et al.)."""
    aps = []
    for c in range(scores.shape[1]):
        s, t = scores[:, c].astype(np.float64), targets[:, c]
        if t.sum() == 0:
            aps.append(0.0)
            continue
        ap, recall = 0.0, 0.0
        for thr in sorted(set(s.tolist()), reverse=True):
            kept = s >= thr
            tp = float(t[kept].sum())
            ap += (tp / t.sum() - recall) * tp / kept.sum()
            recall = tp / t.sum()
        aps.append(ap)
    return 100.0 * float(np.mean(aps))


def test_every_epoch_scores_the_observed_validation_labels():
    _, splits, cfg = tiny()
    result = fit(build_method("an"), splits.train, splits.val, splits.test, cfg)
    assert all("val_obs_mAP" in row for row in result.history)
    probs = predict_dataset(result.method, splits.val, "cpu", 64).numpy()
    observed = (splits.val.observed == 1).numpy().astype(int)
    last = result.history[result.best_epoch]  # the restored best-val weights
    assert abs(last["val_obs_mAP"] - naive_map(probs, observed)) < 1e-3
    assert abs(last["val_mAP"] - naive_map(probs, splits.val.labels.numpy())) < 1e-3
    assert last["val_obs_mAP"] != last["val_mAP"]  # one positive per image hides the rest


def test_fully_observed_validation_adds_no_column():
    _, splits, cfg = tiny(regime="full", epochs=1)
    result = fit(build_method("an"), splits.train, splits.val, splits.test, cfg)
    assert "val_obs_mAP" not in result.history[0]


def test_selection_by_observed_validation_reads_the_epoch_it_picks():
    """Hand-made histories: the observed criterion picks epoch 1 (ties keep the earlier)."""
    from types import SimpleNamespace

    from mlpl_lab.analysis.selection import OBSERVED, best_epoch_by, by_seed_selected, metric_at, selection_claim

    hist = [{"val_mAP": 50, "val_obs_mAP": 30, "test_mAP": 40},
            {"val_mAP": 55, "val_obs_mAP": 33, "test_mAP": 44},
            {"val_mAP": 60, "val_obs_mAP": 33, "test_mAP": 47}]
    run = SimpleNamespace(spec=SimpleNamespace(seed=3), history=hist, best={"test_mAP": 47.0}, best_epoch=2)
    assert best_epoch_by(hist, OBSERVED) == 1
    assert metric_at(run) == 44.0 and metric_at(run, "val_mAP") == 47.0
    assert best_epoch_by([{"val_mAP": 1}], OBSERVED) is None
    assert by_seed_selected([run]) == {3: 44.0}
    runs = [SimpleNamespace(spec=SimpleNamespace(seed=s), history=hist, best={"test_mAP": 47.0 + s},
                            best_epoch=2) for s in (1, 2, 3)]
    a, b = selection_claim("AN", runs).sides()
    assert a == {1: 48.0, 2: 49.0, 3: 50.0} and b == {1: 44.0, 2: 44.0, 3: 44.0}


def test_the_benchmark_pairs_clean_and_observed_selection_per_cell():
    """07's table and claims from hand-made runs: clean picks epoch 3 (test 47 + seed), observed
    picks epoch 2 (test 44): difference 3 + mean seed offset; a cell without the metric adds nothing."""
    from types import SimpleNamespace

    from mlpl_lab.chapters.benchmark import selection_claims, selection_frame

    def run(seed, obs=True):
        hist = [{"val_mAP": 50, "test_mAP": 40}, {"val_mAP": 55, "test_mAP": 44},
                {"val_mAP": 60, "test_mAP": 47 + seed}]
        if obs:
            for row, v in zip(hist, (30, 35, 33)):
                row["val_obs_mAP"] = v
        return SimpleNamespace(spec=SimpleNamespace(seed=seed), history=hist, best=hist[2], best_epoch=2,
                               converged=True)

    results = {"single positive": {"full labels": [run(1), run(2)], "AN": [run(1), run(2), run(3)],
                                   "GR": [run(1, obs=False), run(2, obs=False)]}}
    frame = selection_frame(results)
    assert list(frame.method) == ["AN"]  # the oracle is a reference row; GR recorded no observed val
    row = frame.iloc[0]
    assert row["clean val"] == 49.0 and row["observed val"] == 44.0 and row["difference"] == 5.0
    assert row["seeds"] == 3 and row["other epoch"] == 3
    # differences 4, 5, 6: sd 1, so the half-width is t(0.975, 2 df) / sqrt(3), t from a printed table
    assert abs(row["± (95 %)"] - 4.3027 / 3 ** 0.5) < 1e-3
    (claim,) = selection_claims(results)
    a, b = claim.sides()
    assert a == {1: 48.0, 2: 49.0, 3: 50.0} and b == {1: 44.0, 2: 44.0, 3: 44.0}


def test_a_run_scored_once_keeps_the_test_score_of_the_observed_epoch():
    """Bug caught: with ``test_every_epoch=False`` (the cpu profile) the test set was scored at the
    clean-best epoch alone, so the epoch the observed labels pick had no test score. Oracle: the
    same run scoring the test set every epoch (training does not depend on it), read at the epoch
    a naive argmax of the observed validation mAP picks."""
    import dataclasses

    _, splits, cfg = tiny(epochs=3)
    once = fit(build_method("an"), splits.train, splits.val, splits.test,
               dataclasses.replace(cfg, seed=0, test_every_epoch=False))
    every = fit(build_method("an"), splits.train, splits.val, splits.test,
                dataclasses.replace(cfg, seed=0, test_every_epoch=True))
    obs = [row["val_obs_mAP"] for row in every.history]
    picked = obs.index(max(obs))  # the first epoch at the maximum
    assert picked != once.best_epoch  # the case under test: the two criteria keep different epochs
    kept = once.selected["val_obs_mAP"]
    assert kept["epoch"] == picked
    assert abs(kept["test_mAP"] - every.history[picked]["test_mAP"]) < 1e-6
    assert "test_mAP" not in once.history[picked]  # the history rows stay as they were (goldens)
    assert not every.selected  # scored every epoch: the history holds it already


def test_the_observed_epoch_is_read_from_the_stored_run(tmp_path):
    """The record survives the store, and analysis reads the test score there (hand-written
    expectation: the value put in, at the epoch the history's observed column peaks)."""
    import torch.nn as nn

    from mlpl_lab.analysis.selection import metric_at
    from mlpl_lab.runs.store import RunStore

    spec, _, _ = tiny()
    hist = [{"val_mAP": 60.0, "val_obs_mAP": 30.0, "test_mAP": 50.0}, {"val_mAP": 55.0, "val_obs_mAP": 35.0}]
    store = RunStore(tmp_path)
    store.put(spec, hist, 0, {}, {"net": nn.Linear(2, 2).state_dict()},
              selected={"val_obs_mAP": {"epoch": 1, "test_mAP": 41.5}})
    run = store.get(spec)
    assert run.selected == {"val_obs_mAP": {"epoch": 1, "test_mAP": 41.5}}
    assert metric_at(run) == 41.5 and metric_at(run, "val_mAP") == 50.0


def test_a_cell_is_compared_only_where_every_run_knows_its_observed_epoch():
    """Bug caught: 07 paired only the seeds whose observed epoch happened to be the clean-best one
    (the only epoch runs scored once had a test score for), so every difference was zero by
    construction. Oracle: hand-made runs; seed 2's observed epoch (1) differs from its best (2)."""
    from types import SimpleNamespace

    from mlpl_lab.analysis.selection import by_seed_selected, unscored
    from mlpl_lab.chapters.benchmark import selection_claims, selection_frame

    def run(seed, best, selected=None):
        hist = [{"val_mAP": 50, "val_obs_mAP": 30}, {"val_mAP": 55, "val_obs_mAP": 35},
                {"val_mAP": 60, "val_obs_mAP": 33 if best == 2 else 36}]
        hist[best]["test_mAP"] = 47.0 + seed
        return SimpleNamespace(spec=SimpleNamespace(seed=seed), history=hist, best=hist[best],
                               best_epoch=best, converged=True, selected=selected or {})

    moved, agree = run(2, best=2), run(3, best=2)  # seed 2: observed picks epoch 1
    agree.history[2]["val_obs_mAP"] = 40  # seed 3: both criteria keep epoch 2
    old = [agree, moved]
    assert by_seed_selected(old) == {} and unscored(old) == 1
    results = {"single positive": {"AN": old}}
    assert selection_frame(results).empty and selection_claims(results) == []
    moved.selected = {"val_obs_mAP": {"epoch": 1, "test_mAP": 43.0}}
    assert by_seed_selected(old) == {3: 50.0, 2: 43.0} and unscored(old) == 0
    row = selection_frame(results).iloc[0]
    assert row["clean val"] == 49.5 and row["observed val"] == 46.5 and row["other epoch"] == 1
    # differences 0 and 6: sd 3·sqrt(2), half-width t(0.975, 1 df) · 3 with t = 12.706 (a printed table)
    assert abs(row["± (95 %)"] - 12.706 * 3) < 0.01


def test_the_selection_plot_draws_each_difference_with_its_interval():
    """The §7 plot from a hand-written frame: each point sits at its difference, its bar spans
    difference ± half-width, a cell without an interval (one seed) gets a point and no bar, and the
    rows are labelled method · regime in the frame's order."""
    import math

    import matplotlib
    matplotlib.use("Agg")
    import pandas as pd
    from matplotlib.collections import LineCollection

    from mlpl_lab.viz.benchmark_plots import plot_selection

    frame = pd.DataFrame([
        {"regime": "single positive", "method": "AN", "difference": 2.0, "± (95 %)": 0.5},
        {"regime": "single positive", "method": "GR", "difference": -1.0, "± (95 %)": 1.5},
        {"regime": "drop 50 %", "method": "AN", "difference": 0.25, "± (95 %)": math.nan}])
    ax = plot_selection(frame)
    points = [tuple(line.get_xydata()[0]) for line in ax.lines if line.get_marker() == "o"]
    assert points == [(2.0, 0.0), (-1.0, -1.0), (0.25, -2.0)]
    bars = sorted(tuple(seg[:, 0]) for c in ax.collections if isinstance(c, LineCollection)
                  for seg in c.get_segments())
    assert bars == [(-2.5, 0.5), (1.5, 2.5)]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "AN · single positive", "GR · single positive", "AN · drop 50 %"]
    assert "no cell" in plot_selection(frame.iloc[:0]).get_title()
