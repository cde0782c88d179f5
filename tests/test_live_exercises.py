"""The live exercises (issues 33, 48): each chapter's cut-down run differs from its converged run
only in training images and epochs, is compared with the chapter's own row (the seeds it shows,
02's tuned GR row included), says where every time was measured, trains under smoke, stays out
of the pack's access log, and its compare/self-check grades a prediction without ever raising.
The cpu timings are a recorded measurement (benchmarks/bench_live.py), checked here, not timed."""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from mlpl_lab.protocol import live, plan
from mlpl_lab.protocol.asked import ensure_asked
from mlpl_lab.protocol.live_check import TOLERANCE, check_live_prediction
from mlpl_lab.profiles import get_profile
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
    assert lv.key != conv.key and lv.seed == conv.seed == live.shown_seeds(chapter, profile)[0]
    assert a["backbone_from"] == b["backbone_from"]
    assert a["data"]["n_val"] == b["data"]["n_val"] and a["data"]["n_test"] == b["data"]["n_test"]


@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if c != "02"])
@pytest.mark.parametrize("profile", ["smoke", "cpu"])
def test_the_reference_runs_are_runs_the_chapter_trains(chapter, profile):
    """The notebook's plan (its chapter's specs, or a dry run of its calls), first round: every run
    of the reference row (each seed the chapter shows) is a run the notebook really asks for.
    (02's row is chosen by its tuning: checked on the shipped pack below.)"""
    keys = {s.key for s in plan.plan_notebook(get_profile(profile), STEMS[chapter], {}).specs}
    for spec in live.reference_specs(chapter, profile):
        assert spec.key in keys, spec.describe()
        if spec.init_from is not None:
            assert spec.init_from.key in keys


SHIPPED = ROOT / "data" / "packs" / "cpu-course"


@pytest.fixture(scope="module")
def cpu_pack_store(tmp_path_factory):
    """A store holding the shipped cpu course pack (imported once for this module)."""
    from mlpl_lab.runs import pack

    if not SHIPPED.exists():
        pytest.skip("no course pack shipped (data/packs/cpu-course/)")
    store = RunStore(tmp_path_factory.mktemp("cpu-pack") / "runs")
    pack.import_pack(SHIPPED, store)
    return store


def test_02s_reference_is_the_gr_row_the_chapter_shows(cpu_pack_store, monkeypatch):
    """The issue's bug: the reference was GR on the selection seed 0 (80.12, shown nowhere). Now
    it is the chapter's own GR row, as notebook 02 asks for it from the pack's tuning trials: the
    fresh seeds, with the chosen setting; its mean is the chapter's number."""
    from mlpl_lab.chapters import gr
    from mlpl_lab.runs.ensure import read_only

    monkeypatch.setenv("MLPL_LAB_DATA", str(cpu_pack_store.root.parent))
    with read_only("the pack holds every run of 02"):
        d = gr.design("cpu")
        row = gr.results(d, ensure_asked(gr.specs, d)).main["GR"]
    assert [r.spec.key for r in row] == [s.key for s in live.reference_specs("02", "cpu")]
    assert 0 not in live.shown_seeds("02", "cpu")
    runs, source = live.reference("02", "cpu", cpu_pack_store)
    assert [r.spec.key for r in runs] == [r.spec.key for r in row] and "course pack" in source
    mean = sum(r.best["test_mAP"] for r in row) / len(row)
    assert live.row_over_seeds(runs, live.reference_specs("02", "cpu"), cpu_pack_store)["test mAP"] == round(mean, 2)


def test_the_table_says_where_each_time_was_measured(cpu_pack_store, monkeypatch, capsys):
    """A live run trained here with 2 threads against the pack's runs (1 thread, another
    machine): the rows name their device, threads and origin, and the times are called not
    comparable. The live run is a stand-in record (no training)."""
    import torch

    monkeypatch.setenv("MLPL_LAB_DATA", str(cpu_pack_store.root.parent))
    lv, conv = live.live_exercise("02", "cpu")
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        cpu_pack_store.put(lv, [{"epoch": 1, "val_mAP": 70.0, "test_mAP": 69.0, "seconds": 9.0}], 0, {},
                           {"w": torch.zeros(1)})
    finally:
        torch.set_num_threads(before)
    mine = cpu_pack_store.get(lv)
    t = live.table("02", "cpu", mine, cpu_pack_store)
    assert list(t.index) == ["live run", f"converged run, seed {conv.seed}", "the chapter's row, seeds 1–5 (mean)"]
    ref = cpu_pack_store.get(conv)
    env = ref.environment
    assert t.iloc[0]["timed on"] == "cpu, 2 threads, this store"
    assert t.iloc[1]["timed on"].startswith(f"{env['device']}, {env['threads']} thread") and ", pack cpu-" in t.iloc[1]["timed on"]
    assert t.iloc[1]["test mAP"] == round(float(ref.best["test_mAP"]), 2)
    assert t.iloc[2]["curve flattened"].endswith("of 5")
    assert t.attrs["comparable"] is (env.get("threads") == 2 and env.get("device") == "cpu")
    capsys.readouterr()
    assert live.compare("02", "cpu", mine, 69.0, cpu_pack_store) is True
    out = capsys.readouterr().out
    assert ("not comparable with yours" in out) is (not t.attrs["comparable"]) and "seed 1" in out


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
    assert "the chapter's converged runs" in out and "measured on this device with as many threads" in out
    ref = store.get(conv)  # under smoke the reference was trained if missing
    assert ref is not None and "converged run" in out
    t = live.table(chapter, "smoke", run)
    (mine, theirs) = (t.iloc[0], t.iloc[1])
    assert mine["test mAP"] == round(got, 2) and theirs["test mAP"] == round(float(ref.best["test_mAP"]), 2)
    assert mine["training images"] == lv.data["n_train"]
    assert theirs["training images"] == get_profile("smoke").n_train > lv.data["n_train"]
    assert list(t.index)[0] == "live run" and len(t.index) == 3 and "smoke profile's own runs" in t.attrs["source"]
    assert t.attrs["comparable"] is True  # every run trained here, with this process's threads

    assert live.compare(chapter, "smoke", run, got + TOLERANCE + 5) is False
    out = capsys.readouterr().out
    assert marks(out) == ["✗"] and "hint:" in out
    for answer in GARBAGE:
        assert live.compare(chapter, "smoke", run, answer) is False
        assert marks(capsys.readouterr().out) == ["✗"]
    for not_a_run in ("run", ref):  # the converged run is not the live run
        assert live.compare(chapter, "smoke", not_a_run, got) is False
        assert marks(capsys.readouterr().out) == ["✗"]
    # None is what live.train returns under live_training = False: nothing was trained, which is
    # said neutrally with how to run it, not as a failure
    assert live.compare(chapter, "smoke", None, got) is False
    out = capsys.readouterr().out
    assert marks(out) == [] and "not run" in out and "says how to run it" in out, out
    assert live.compare("99", "smoke", run, got) is False
    assert marks(capsys.readouterr().out) == ["✗"]


def test_a_report_reads_the_live_run_and_never_trains_it(tmp_path, capsys, monkeypatch):
    """Bug caught: `mlpl-lab report` (live_training=False) training the live run, so a report from
    the course pack would not be free of training; a stored live run is read back."""
    from mlpl_lab.runs import ensure as run_ensure

    store = RunStore(tmp_path / "runs")
    monkeypatch.setattr(run_ensure, "fit", lambda *a, **k: pytest.fail("trained"))
    assert live.train("02", "smoke", store, live_training=False) is None
    out = capsys.readouterr().out
    lv, _ = live.live_exercise("02", "smoke")
    assert "was not run" in out and "nothing was trained" in out and "✗" not in out, out
    assert f"on {lv.data['n_train']} images for {lv.train['epochs']} epochs" in out  # what it would train
    assert "`live_training = True`" in out and "papermill -p live_training True" in out  # how to run it
    assert not any(store.keys())
    monkeypatch.undo()
    trained = live.train("02", "smoke", store)
    monkeypatch.setattr(run_ensure, "fit", lambda *a, **k: pytest.fail("trained"))
    again = live.train("02", "smoke", store, live_training=False)
    assert again is not None and again.history == trained.history


def test_a_missing_converged_run_is_said_not_invented(tmp_path, capsys):
    """Outside smoke the reference is read only: an empty store gives a row without numbers."""
    from mlpl_lab.protocol.live import reference

    store = RunStore(tmp_path / "runs")
    runs, source = reference("01", "cpu", store)
    assert runs == [None] * len(live.shown_seeds("01", "cpu")) and "not in the store" in source and "pack import" in source
    lv, conv = live.live_exercise("01", "cpu")
    row = live.row(None, conv, store)
    assert row["test mAP"] == "—" and row["train time"] == "—"
    assert row["training images"] == conv.data["n_train"] and row["epochs"] == str(conv.train["epochs"])


def test_the_cpu_benchmark_record_is_within_three_minutes_or_says_it_was_contended(cpu_pack_store, monkeypatch):
    """benchmarks/bench_live.py's record: every chapter measured on the live spec live.py builds
    now, at 2 threads, with the load and the cores the run obtained; at most 180 s wherever the
    run got its 2 cores (a figure taken while other work held the machine is kept as measured,
    and describe() prints the cores it got with it). The live specs are those a student's store
    gives, the shipped pack imported (02's GR takes the setting the pack's tuning kept), as
    bench_live.py measures them."""
    monkeypatch.setenv("MLPL_LAB_DATA", str(cpu_pack_store.root.parent))
    record = json.loads((ROOT / "benchmarks" / "records" / "live_exercises_cpu.json").read_text())
    assert record["profile"] == "cpu" and record["limit_s"] == 180.0
    assert sorted(record["chapters"]) == CHAPTERS
    for c, r in record["chapters"].items():
        lv, _ = live.live_exercise(c, "cpu")
        assert r["key"] == lv.key, f"{c}: re-run benchmarks/bench_live.py --chapters {c}"
        assert r["n_train"] == lv.data["n_train"]
        assert r["epochs"] == [s.train["epochs"] for s in live.stages(lv)], c
        # a class laptop: 2 cores, both busy with the run (issue 48: not 1 thread on a quiet machine)
        assert r["threads"] == 2 and len(r["load_before"]) == 3 and math.isfinite(r["test_mAP"])
        assert 0 < r["cpu_seconds"] and abs(r["cores_obtained"] - r["cpu_seconds"] / r["seconds"]) <= 0.02
        contended = r["cores_obtained"] < 0.9 * r["threads"]
        assert 0 < r["seconds"] and (r["seconds"] <= 180.0 or contended), (c, r["seconds"], r["cores_obtained"])
        text = live.describe(c, "cpu")
        assert f"{r['seconds']:.0f} s with 2 torch threads" in text and "benchmarks/" not in text
        assert f"which took {r['seconds']:.0f} s when measured" in live.not_run(c, "cpu")
        assert f"the run getting {r['cores_obtained']:.1f} cores" in text and f"load average of {r['load_before'][0]:.1f}" in text
        slower = [e for e in r.get("earlier", []) if e["seconds"] > r["seconds"]]
        if slower:  # the figure of a shared machine is printed with its conditions, not hidden
            worst = max(slower, key=lambda e: e["seconds"])
            assert f"cores) it took {worst['seconds']:.0f} s" in text and f"load average {worst['load_before'][0]:.1f}" in text


def test_the_benchmark_keeps_earlier_measurements_of_the_same_run():
    """bench_live.merge: of the measurements of one live run (same key and threads) the one that
    obtained the most cores is the figure, the others stay under ``earlier``; another key or
    thread count is not carried over."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_live", ROOT / "benchmarks" / "bench_live.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)

    def m(key, s, cores, threads=2):
        return {"key": key, "seconds": s, "cpu_seconds": s * cores, "cores_obtained": cores, "threads": threads,
                "load_before": [1, 1, 1], "load_after": [1, 1, 1], "date": "d", "method": "x", "test_mAP": 50.0}

    old = {"chapters": {"01": m("a", 300.0, 0.3), "02": m("b", 200.0, 0.5), "03": m("c", 100.0, 1.0, threads=1)}}
    new = {"chapters": {"01": m("a", 10.0, 1.7), "02": m("b2", 20.0, 1.6), "03": m("c", 30.0, 1.5)}}
    out = bench.merge(old, new)
    assert out["chapters"]["01"]["seconds"] == 10.0
    assert [e["seconds"] for e in out["chapters"]["01"]["earlier"]] == [300.0]
    assert "earlier" not in out["chapters"]["02"] and "earlier" not in out["chapters"]["03"]
    # a later measurement on a busier machine does not replace the quiet one: it joins earlier
    again = bench.merge(out, {"chapters": {"01": m("a", 200.0, 0.4)}}, keep_other_chapters=True)
    assert again["chapters"]["01"]["seconds"] == 10.0
    assert sorted(e["seconds"] for e in again["chapters"]["01"]["earlier"]) == [200.0, 300.0]
    assert again["chapters"]["02"]["key"] == "b2"


def test_02s_reference_follows_the_setting_the_tuning_kept(tmp_path):
    """Bug caught: 02's reference (and so the live run) built from GR's paper default while the
    chapter's tuning kept another setting, so a pack whose tuning kept a non-default point served
    no reference row. Hand-made trials on the selection seed: the second point wins on clean
    validation by construction; with no trials stored, the paper default stands in, as 02 plans."""
    import torch

    from mlpl_lab.chapters import gr

    from mlpl_lab.protocol import tuning

    d = gr.design("smoke")
    assert tuning.trials_for("smoke") >= 2, "the smoke budget tries a second point"
    store = RunStore(tmp_path / "runs")
    default = live.converged_spec("02", "smoke", store=store)  # nothing stored: the paper default
    assert default.method_params.get("q2", 0.01) == 0.01
    trials = gr.specs(d, lambda s: None).now["trial"]["GR"]
    for i, spec in enumerate(trials):
        val = 60.0 + 10.0 * (i == 1)
        store.put(spec, [{"epoch": 1, "val_mAP": val, "test_mAP": val - 1, "seconds": 1.0}], 0, {},
                  {"w": torch.zeros(1)})
    kept = live.converged_spec("02", "smoke", store=store)
    assert kept.key != default.key and kept.seed == default.seed == live.shown_seeds("02", "smoke")[0]
    # written out from GR's documented grid (schedule paper|code, q2 0.01|0.05; the default first):
    # trial 1 is q2 = 0.05 with the paper schedule, so the kept spec differs from the default in q2 alone
    changed = {k for k in set(kept.method_params) | set(default.method_params)
               if kept.method_params.get(k) != default.method_params.get(k)}
    assert changed == {"q2"} and kept.method_params["q2"] == 0.05, kept.describe()
    lv, conv = live.live_exercise("02", "smoke", store)
    assert conv.key == kept.key and lv.key != kept.key
    assert [s.key for s in live.reference_specs("02", "smoke", store)][0] == kept.key


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_run_all_and_papermill_leave_the_live_exercise_untrained(chapter):
    """Bug caught: a parameters cell with ``live_training = True``, so Run All, papermill and
    nbconvert train the live exercise unasked. The cell's value is read by executing the cell's
    code (as papermill's defaults are), and the exercise's text must say how to turn it on."""
    import nbformat

    nb = nbformat.read(str(ROOT / "notebooks" / f"{STEMS[chapter]}.ipynb"), as_version=4)
    [cell] = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    values: dict = {}
    exec(cell.source, {}, values)  # noqa: S102 — the notebook's own literal assignments
    assert values.get("live_training") is False, cell.source
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "`live_training = True`" in text and "papermill -p live_training True" in text
    [train] = [c for c in nb.cells if c.cell_type == "code" and "live.train(" in c.source]
    assert "live_training=live_training" in train.source
