"""The run store and the runner: a spec is trained once, served from disk after, and a
changed spec or library source misses the store."""
from __future__ import annotations

import json
import os

import pytest
import torch

from mlpl_lab.core import metrics
from mlpl_lab.runs import ensure, ensure as run_ensure, splits_cache
from mlpl_lab.runs import ensure, splits_cache, store

from mlpl_lab.runs.environment import FOREIGN_ENV
from mlpl_lab.profiles import get_profile
from mlpl_lab.engine.train import predict_dataset


@pytest.fixture
def data_root(tmp_path, monkeypatch):
    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path))
    monkeypatch.delenv(store.FRESH_ENV, raising=False)
    monkeypatch.delenv(FOREIGN_ENV, raising=False)
    splits_cache.clear_caches()
    return tmp_path


@pytest.fixture
def P():
    return get_profile("smoke", n_train=96, n_val=48, n_test=48, epochs=2, batch_size=32,
                       model_kwargs={"width": 4}, seeds=[0, 1], init="scratch")


def count_fits(monkeypatch):
    calls = []
    real = run_ensure.fit  # the loop the runner trains with

    def counting(*a, **k):
        calls.append(a[0])
        return real(*a, **k)

    monkeypatch.setattr(run_ensure, "fit", counting)
    return calls


def test_second_request_is_served_without_training(data_root, P, monkeypatch):
    calls = count_fits(monkeypatch)
    spec = P.spec("an")
    first = ensure.ensure([spec])[0]
    assert len(calls) == 1 and (data_root / "runs" / spec.key / "weights.pt").exists()
    again = ensure.ensure([spec, P.spec("an")])  # an equal spec built anew
    assert len(calls) == 1
    assert again[0].history == first.history and again[1].best_epoch == first.best_epoch


def test_a_changed_spec_or_numerics_version_misses_the_store(data_root, P, monkeypatch):
    calls = count_fits(monkeypatch)
    ensure.ensure([P.spec("an")])
    ensure.ensure([P.spec("an", seed=1)])
    ensure.ensure([P.spec("an", lr=1e-2)])
    ensure.ensure([P.spec("gr", {"q2": 0.02})])
    assert len(calls) == 4
    from mlpl_lab.core import numerics

    monkeypatch.setitem(numerics.VERSIONS, "method.gr", numerics.VERSIONS["method.gr"] + 1)
    assert store.RunStore().get(P.spec("an")) is not None  # another family's bump keeps AN's run
    monkeypatch.setitem(numerics.VERSIONS, "method.basic", numerics.VERSIONS["method.basic"] + 1)
    assert store.RunStore().get(P.spec("an")) is None  # a numerics bump never serves a stale run
    ensure.ensure([P.spec("an")])
    assert len(calls) == 5


def test_the_oracle_is_one_run_for_every_regime(data_root, P):
    a = P.spec("full", regime="single_positive")
    b = P.spec("full", regime="drop_positives", regime_params={"alpha": 0.5})
    assert a == b and a.key == b.key and a.regime == "full"


def test_seed_draws_split_labels_and_initialisation(data_root, P):
    s0, s1 = splits_cache.build_splits(P.spec("an", seed=0)), splits_cache.build_splits(P.spec("an", seed=1))
    assert not torch.equal(s0.train.images, s1.train.images)
    assert not torch.equal(s0.train.observed, s1.train.observed)


def test_stored_weights_are_the_best_epoch_when_it_is_not_the_last(data_root, P, monkeypatch):
    """Bug caught: the store keeping the last epoch's weights (or row) instead of the best-val
    epoch's. The validation score is forced to fall after epoch 1, so the best epoch is the first
    of three; the oracle is a copy of the weights taken when epoch 1 was evaluated."""
    from mlpl_lab.engine import train

    real, seen = train._evaluate, []

    def falling_val(method, dataset, device, batch_size, prefix):
        row = real(method, dataset, device, batch_size, prefix)
        if prefix == "val":
            seen.append({k: v.detach().clone() for k, v in method.net.state_dict().items()})
            row["val_mAP"] = 90.0 - len(seen)  # epoch 1 scores best
        return row

    monkeypatch.setattr(train, "_evaluate", falling_val)
    run = ensure.ensure([P.spec("an", lr=3e-2, epochs=3)])[0]
    assert len(seen) == 3 and run.best_epoch == 0 and run.best is run.history[0]
    assert run._method is None  # nothing loaded until asked
    stored = run.method.net.state_dict()
    assert all(torch.equal(stored[k], seen[0][k]) for k in seen[0])
    assert any(not torch.equal(stored[k], seen[2][k]) for k in seen[2] if seen[2][k].is_floating_point())
    summary = json.loads((run.path / "summary.json").read_text())
    assert summary["best_epoch"] == 0 and summary["val_mAP"] == 89.0
    # the test set is scored on the restored weights (test_every_epoch False), into the best row
    splits = splits_cache.build_splits(run.spec)
    probs = predict_dataset(run.method, splits.test, torch.device("cpu"))
    assert summary["test_mAP"] == pytest.approx(metrics.mean_average_precision(probs, splits.test.labels), abs=1e-4)
    run.release()
    assert run._method is None


def test_an_interrupted_write_leaves_nothing(data_root, P, monkeypatch):
    spec = P.spec("an")
    st = store.RunStore()

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(torch, "save", boom)
    with pytest.raises(KeyboardInterrupt):
        st.put(spec, [{"epoch": 1, "val_mAP": 1.0}], 0, {}, {"networks": {}})
    assert st.get(spec) is None
    assert not any(p.name.startswith(".tmp") for p in st.root.iterdir())


def test_fresh_ignores_runs_made_before(data_root, P, monkeypatch):
    calls = count_fits(monkeypatch)
    ensure.ensure([P.spec("an")])
    import time

    monkeypatch.setenv(store.FRESH_ENV, str(time.time()))
    ensure.ensure([P.spec("an")])
    ensure.ensure([P.spec("an")])  # made after --fresh started: served
    assert len(calls) == 2


def test_clear_and_bad_specs_fail_before_training(data_root, P, monkeypatch):
    calls = count_fits(monkeypatch)
    with pytest.raises(ValueError, match="unknown method"):
        ensure.ensure([P.spec("an"), P.spec("nope")])
    with pytest.raises(TypeError):
        ensure.ensure([P.spec("an"), P.spec("gr", {"q9": 1})])
    with pytest.raises(ValueError, match="seed"):
        ensure.ensure([P.spec("an"), P.spec("an", seed=-1)])
    assert calls == []
    ensure.ensure([P.spec("an")])
    assert store.RunStore().clear() == 1 and store.RunStore().get(P.spec("an")) is None


def test_a_second_stage_starts_from_the_first(data_root, P, monkeypatch):
    calls = count_fits(monkeypatch)
    stage1 = P.spec("an")
    stage2 = P.spec("an", lr=1e-9, init_from=stage1)
    runs = ensure.ensure([stage2])
    assert len(calls) == 2  # stage one first, then stage two
    s1 = store.RunStore().get(stage1, loader=ensure.load_method)
    w1 = s1.method.net.state_dict()["head.fc.weight"]
    w2 = runs[0].method.net.state_dict()["head.fc.weight"]
    assert torch.allclose(w1, w2, atol=1e-5)


def test_data_location_follows_the_environment(data_root):
    from mlpl_lab.core.paths import cache_dir, runs_dir

    assert runs_dir() == data_root / "runs" and cache_dir() == data_root / "cache"


def test_the_progress_line_tells_apart_runs_that_differ_in_model_or_epochs(P):
    """Bug caught: a chapter's control (the same method and seed, trained longer) and an LgConv
    row (the same method, another model setting) printed the same progress line as the rows they
    are compared with, so a reader could not tell which run was training."""
    base = P.spec("an")
    longer = P.spec("an", epochs=base.train["epochs"] + 4)
    other_model = P.spec("an", model_kwargs={**base.train.get("model_kwargs", {}), "lgconv": True})
    lines = {base.describe(), longer.describe(), other_model.describe()}
    assert len(lines) == 3, lines
    assert f"{base.train['epochs'] + 4} epochs" in longer.describe()
    assert "lgconv=True" in other_model.describe()
