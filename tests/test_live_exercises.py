"""The live exercises (issue 33): each chapter's cut-down run differs from its converged run only
in training images and epochs, is what the chapter trains cut down, trains under smoke, stays out
of the pack's access log, and its compare/self-check grades a prediction without ever raising.
The cpu timings are a recorded measurement (benchmarks/bench_live.py), checked here, not timed."""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from mlpl_lab.chapters import live, plan
from mlpl_lab.course.exercises.live import TOLERANCE, check_live_prediction
from mlpl_lab.profiles import get_profile
from mlpl_lab.runs.runner import NeedsResults, planning
from mlpl_lab.runs.access import CHAPTER_ENV, PROFILE_ENV, accessed
from mlpl_lab.runs.store import RunStore

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ["01", "02", "03", "04", "05", "06"]
STEMS = {"01": "01_assume_negative", "02": "02_gr_loss", "03": "03_opml", "04": "04_cls", "05": "05_lac",
         "06": "06_pu_mlc"}
#: what a live spec may change against its converged spec, nothing else
CUT = {("data", "n_train"), ("train", "epochs")}


def differences(a, b, path=()):
    """Paths where two nested spec dicts differ (a plain recursive walk, not the library's)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += differences(a.get(k, "<absent>"), b.get(k, "<absent>"), path + (k,))
        return out
    return [] if a == b else [path]


@pytest.mark.parametrize("profile", ["smoke", "cpu", "gpu", "gpu_shape"])
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_live_spec_is_the_converged_spec_cut_down(chapter, profile):
    lv, conv = live.live_exercise(chapter, profile)
    a, b = lv.as_dict(), conv.as_dict()
    diff = differences(a, b)
    assert diff, "the live run must be a distinct run"
    allowed = CUT | {("init_from",) + p for p in CUT}  # LAC: its first stage is cut the same way
    assert set(diff) <= allowed, diff
    for path in diff:  # smaller, never larger
        x, y = a, b
        for k in path:
            x, y = x[k], y[k]
        assert 1 <= x < y, (path, x, y)
    assert lv.key != conv.key and lv.seed == conv.seed == 0
    assert a["backbone_from"] == b["backbone_from"]
    assert a["data"]["n_val"] == b["data"]["n_val"] and a["data"]["n_test"] == b["data"]["n_test"]


@pytest.mark.parametrize("chapter", CHAPTERS)
@pytest.mark.parametrize("profile", ["smoke", "cpu"])
def test_the_converged_spec_is_one_the_chapter_trains(chapter, profile):
    """The chapter's own calls (as its notebook makes them), recorded by a dry run: the
    reference is a run the notebook really asks the store for."""
    with planning() as asked:
        try:
            plan.NOTEBOOK_CALLS[STEMS[chapter]](get_profile(profile), {})
        except NeedsResults:
            pass
    keys = {s.key for s in asked}
    _, conv = live.live_exercise(chapter, profile)
    assert conv.key in keys
    if conv.init_from is not None:
        assert conv.init_from.key in keys


def test_bad_chapter_or_profile_is_a_clear_error():
    with pytest.raises(ValueError, match="has no live exercise"):
        live.live_exercise("07", "smoke")
    with pytest.raises(ValueError, match="no live exercise sizes"):
        live.live_exercise("01", dataclasses.replace(get_profile("cpu"), name="laptop"))


def marks(text):
    return [line[0] for line in text.splitlines() if line[:1] in "✓✗"]


GARBAGE = [None, ..., "about seventy", float("nan"), float("inf"), True, [70.0], {"mAP": 70}, object()]


def test_the_self_check_grades_and_never_raises(capsys):
    assert check_live_prediction(71.0, 70.0, "h") is True
    assert check_live_prediction(70.0 - TOLERANCE, 70.0, "h") is True
    assert check_live_prediction("70.5", 70.0, "h") is True          # a number typed as text
    assert check_live_prediction(70.0 + TOLERANCE + 0.01, 70.0, "h") is False
    out = capsys.readouterr().out
    assert marks(out) == ["✓", "✓", "✓", "✗"] and "too high" in out and "hint: h" in out
    assert check_live_prediction(60.0, 70.0, "h") is False and "too low" in capsys.readouterr().out
    for answer in GARBAGE:
        assert check_live_prediction(answer, 70.0, "h") is False
        assert marks(capsys.readouterr().out) == ["✗"]
    for measured in (None, float("nan"), "x"):
        assert check_live_prediction(70.0, measured, "h") is False
        assert marks(capsys.readouterr().out) == ["✗"]


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_smoke_live_exercise_trains_compares_and_stays_out_of_the_pack(chapter, capsys, monkeypatch):
    monkeypatch.setenv(CHAPTER_ENV, "live-test")  # as under `mlpl-lab report`: reads are logged
    monkeypatch.setenv(PROFILE_ENV, "smoke")
    store = RunStore()
    lv, conv = live.live_exercise(chapter, "smoke")
    run = live.train(chapter, "smoke")
    log = accessed(store.root, "smoke", "live-test")  # before this test reads anything itself
    assert run.spec == lv and (store.root / lv.key / "summary.json").exists()
    assert not {s.key for s in live.stages(lv)} & set(log), "a live run would travel in the pack"
    backbone = next(s.backbone_from for s in live.stages(lv) if s.backbone_from is not None)
    assert log.get(backbone.key) is True, "the pack must carry the backbone the live run starts from"
    got = float(run.best["test_mAP"])
    capsys.readouterr()

    assert live.compare(chapter, "smoke", run, got) is True
    out = capsys.readouterr().out
    assert marks(out) == ["✓"], out
    ref = store.get(conv)  # under smoke the reference was trained if missing
    assert ref is not None and "converged run" in out
    t = live.table(chapter, "smoke", run)
    (mine, theirs) = (t.iloc[0], t.iloc[1])
    assert mine["test mAP"] == round(got, 2) and theirs["test mAP"] == round(float(ref.best["test_mAP"]), 2)
    assert mine["training images"] == lv.data["n_train"]
    assert theirs["training images"] == get_profile("smoke").n_train > lv.data["n_train"]
    assert list(t.index) == ["live run", "converged run"] and "smoke profile's own run" in t.attrs["source"]

    assert live.compare(chapter, "smoke", run, got + TOLERANCE + 5) is False
    out = capsys.readouterr().out
    assert marks(out) == ["✗"] and "hint:" in out
    for answer in GARBAGE:
        assert live.compare(chapter, "smoke", run, answer) is False
        assert marks(capsys.readouterr().out) == ["✗"]
    for not_a_run in (None, "run", ref):  # the converged run is not the live run
        assert live.compare(chapter, "smoke", not_a_run, got) is False
        assert marks(capsys.readouterr().out) == ["✗"]
    assert live.compare("99", "smoke", run, got) is False
    assert marks(capsys.readouterr().out) == ["✗"]


def test_a_report_reads_the_live_run_and_never_trains_it(tmp_path, capsys, monkeypatch):
    """Bug caught: `mlpl-lab report` (live_training=False) training the live run, so a report from
    the course pack would not be free of training; a stored live run is read back."""
    from mlpl_lab.runs import runner

    store = RunStore(tmp_path / "runs")
    monkeypatch.setattr(runner, "fit", lambda *a, **k: pytest.fail("trained"))
    assert live.train("02", "smoke", store, live_training=False) is None
    assert "left to class" in capsys.readouterr().out
    assert not any(store.keys())
    monkeypatch.undo()
    trained = live.train("02", "smoke", store)
    monkeypatch.setattr(runner, "fit", lambda *a, **k: pytest.fail("trained"))
    again = live.train("02", "smoke", store, live_training=False)
    assert again is not None and again.history == trained.history


def test_a_missing_converged_run_is_said_not_invented(tmp_path, capsys):
    """Outside smoke the reference is read only: an empty store gives a row without numbers."""
    from mlpl_lab.chapters.live import reference

    store = RunStore(tmp_path / "runs")
    run, source = reference("01", "cpu", store)
    assert run is None and "not in the store" in source and "pack import" in source
    lv, conv = live.live_exercise("01", "cpu")
    row = live.row(None, conv, store)
    assert row["test mAP"] == "—" and row["train time"] == "—"
    assert row["training images"] == conv.data["n_train"] and row["epochs"] == str(conv.train["epochs"])


def test_the_cpu_benchmark_record_is_within_three_minutes():
    """benchmarks/bench_live.py's record: every chapter measured at the sizes live.py uses now,
    each at most 180 s, with the threads and the load it was taken under."""
    record = json.loads((ROOT / "benchmarks" / "records" / "live_exercises_cpu.json").read_text())
    assert record["profile"] == "cpu" and record["limit_s"] == 180.0
    assert sorted(record["chapters"]) == CHAPTERS
    for c, r in record["chapters"].items():
        lv, _ = live.live_exercise(c, "cpu")
        assert r["n_train"] == lv.data["n_train"], f"{c}: re-run benchmarks/bench_live.py --chapters {c}"
        assert r["epochs"] == [s.train["epochs"] for s in live.stages(lv)], c
        assert 0 < r["seconds"] <= 180.0, (c, r["seconds"])
        assert r["threads"] >= 1 and len(r["load_before"]) == 3 and math.isfinite(r["test_mAP"])
