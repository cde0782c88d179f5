"""CI's hand-over of the smoke series' runs from the whole suite to ``make book``
(``tests/keep_runs.py``, ``MLPL_LAB_TEST_KEEP_RUNS``)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from keep_runs import keep_smoke_runs

ROOT = Path(__file__).resolve().parent.parent
NB = ROOT / "notebooks" / "01_assume_negative.ipynb"


def _put(store, spec):
    history = [{"epoch": e, "loss": 1.0 / e, "val_mAP": 40.0 + e, "test_mAP": 39.0 + e, "seconds": 0.1}
               for e in (1, 2, 3)]
    return store.put(spec, history, best_epoch=2, initial={}, weights={"w": [1.0, 2.0]})


def test_only_whole_runs_of_the_smoke_series_are_kept_and_none_is_overwritten(tmp_path, monkeypatch):
    """Bugs caught: copying every run the session stored (a test's made-up run, here a seed the
    series never asks for), copying a run a test left damaged (the book would read it), writing
    over a run the target already holds, a half-copied folder left visible."""
    from mlpl_lab.protocol.plan import plan_series
    from mlpl_lab.runs.store import RunStore

    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path / "session"))
    src = RunStore()
    first, second, third = plan_series("smoke", [NB]).order[:3]
    _put(src, first)
    damaged = _put(src, second)
    (damaged / "history.json").write_text("{ not json")
    outside = first.replace(seed=first.seed + 999)  # a spec no notebook asks for
    _put(src, outside)
    target = tmp_path / "book-data"
    held = _put(RunStore(target / "runs"), third)
    before = (held / "summary.json").read_bytes()
    _put(src, third)  # the session's own copy of a run the target already holds

    n = keep_smoke_runs(target, [NB])
    kept = sorted(p.name for p in (target / "runs").iterdir())
    assert n == 1 and kept == sorted([first.key, third.key])
    assert (held / "summary.json").read_bytes() == before  # not overwritten
    copied = target / "runs" / first.key
    assert json.loads((copied / "summary.json").read_text())["key"] == first.key
    assert RunStore(target / "runs").get(first) is not None  # the book's store serves it
    assert keep_smoke_runs(target, [NB]) == 0  # a second hand-over copies nothing
