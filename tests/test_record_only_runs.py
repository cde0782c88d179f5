"""A run imported from a pack without its weights serves tables but cannot start another run: the
trainer trains it again first, with its weights, and the run trained here replaces the copy.

Bug caught: 07's single-positive pilot (LAC's stage two) failed mid-sitting because its stage one
came from a pack that carried records only; the advice was to retrain the whole report. The oracle
is the store's folders as written by hand (a record-only copy is what an import leaves: no
``weights.pt``, a ``pack.json`` saying ``"weights": false``) and the dependency order derived
from the specs here, not from the trainer's helpers."""
from __future__ import annotations

import json
import shutil

import pytest
import torch

from mlpl_lab.profiles import get_profile
from mlpl_lab.runs import ensure, workers
from mlpl_lab.runs.folders import PACK_FILE, record_only
from mlpl_lab.runs.store import RunStore


def _lac():
    from mlpl_lab.chapters import lac

    P = get_profile("smoke")
    stage2 = lac.row_spec(P, "two-stage + queue (LAC)", 0)
    stage1 = stage2.init_from  # stage two starts from stage one, which starts from the pretraining run
    assert stage1 is not None and stage1.backbone_from is not None
    return stage1.backbone_from, stage1, stage2


def _put(store, spec, value=1.0):
    history = [{"epoch": 1, "val_mAP": value, "test_mAP": value}]
    return store.put(spec, history, 0, {}, {"networks": {"net": {"w": torch.full((2,), value)}}})


def _record_only(store, spec, value=1.0):
    """What an import of a pack without weights leaves in the store."""
    path = _put(store, spec, value)
    (path / "weights.pt").unlink()
    (path / PACK_FILE).write_text(json.dumps({"name": "a-pack", "weights": False}))
    return path


def test_a_record_only_run_is_trained_again_only_where_a_run_to_train_starts_from_it(tmp_path):
    pre, stage1, stage2 = _lac()
    store = RunStore(tmp_path / "runs")
    _put(store, pre)
    _record_only(store, stage1)
    assert record_only(store.path(stage1)) and not record_only(store.path(pre))
    # stage two missing: its record-only stage one comes first, the stored pretraining run stays
    assert [s.key for s in workers.to_train(store, [stage2])] == [stage1.key, stage2.key]
    said = []  # and the trainer says so before it starts
    workers._say_trained_again(store, workers.to_train(store, [stage2]), said.append)
    assert len(said) == 1 and said[0].startswith("1 stored run(s) came from a run pack without their weights")
    # nothing to train starts from it: the record serves its tables, nothing is trained
    assert workers.to_train(store, [stage1]) == []
    _put(store, stage2)
    assert workers.to_train(store, [stage2]) == []
    # a chain: the pretraining run record-only and stage one missing -> all three, in order
    shutil.rmtree(store.path(stage1))
    shutil.rmtree(store.path(stage2))
    shutil.rmtree(store.path(pre))
    _record_only(store, pre)
    assert [s.key for s in workers.to_train(store, [stage2])] == [pre.key, stage1.key, stage2.key]


def test_a_run_trained_here_replaces_a_record_only_copy_but_not_a_whole_run(tmp_path):
    pre, _, _ = _lac()
    store = RunStore(tmp_path / "runs")
    _record_only(store, pre, value=1.0)
    _put(store, pre, value=2.0)  # trained here: carries the weights the copy lacks
    path = store.path(pre)
    assert (path / "weights.pt").is_file() and not (path / PACK_FILE).exists()
    assert json.loads((path / "summary.json").read_text())["test_mAP"] == 2.0
    _put(store, pre, value=3.0)  # another writer's whole run is this run: kept
    assert json.loads((path / "summary.json").read_text())["test_mAP"] == 2.0


@pytest.mark.slow  # trains four smoke runs
def test_a_stage_two_trains_its_record_only_stage_one_again_first(tmp_path, monkeypatch):
    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path / "data"))
    pre, stage1, stage2 = _lac()
    store = RunStore(tmp_path / "runs")
    ensure.ensure([stage1], store=store, quiet=True)  # the pretraining run, then stage one
    (store.path(stage1) / "weights.pt").unlink()
    (store.path(stage1) / PACK_FILE).write_text(json.dumps({"name": "a-pack", "weights": False}))
    got = ensure.ensure([stage2], store=store, quiet=True)[0]
    assert got.spec.key == stage2.key
    assert (store.path(stage1) / "weights.pt").is_file() and not record_only(store.path(stage1))
    assert store.get(stage1).weights()  # loadable, its sha256 checked
