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

    from mlpl_lab.analysis.selection import best_epoch_by, by_seed_selected, metric_at, selection_claim

    hist = [{"val_mAP": 50, "val_obs_mAP": 30, "test_mAP": 40},
            {"val_mAP": 55, "val_obs_mAP": 33, "test_mAP": 44},
            {"val_mAP": 60, "val_obs_mAP": 33, "test_mAP": 47}]
    run = SimpleNamespace(spec=SimpleNamespace(seed=3), history=hist, best={"test_mAP": 47.0}, best_epoch=2)
    assert best_epoch_by(hist) == 1
    assert metric_at(run) == 44.0 and metric_at(run, "val_mAP") == 47.0
    assert best_epoch_by([{"val_mAP": 1}]) is None
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
    (claim,) = selection_claims(results)
    a, b = claim.sides()
    assert a == {1: 48.0, 2: 49.0, 3: 50.0} and b == {1: 44.0, 2: 44.0, 3: 44.0}
