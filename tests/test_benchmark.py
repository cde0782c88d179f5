"""The benchmark chapter: its numbers against hand-computed oracles, its specs against the
chapters' (so their runs are reused), a smoke grid end to end, resumption, the CLI."""
from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest

from mlpl_lab.analysis import benchmark as bm
from mlpl_lab.chapters import benchmark as chapter


class Fake:
    def __init__(self, mAP, seed=0, ap=None, seconds=10.0, mem=100.0):
        self.spec = type("Spec", (), {"seed": seed, "key": None})()
        self.best = {"test_mAP": mAP, "test_CF1": mAP / 2, "test_OF1": mAP / 3,
                     "test_AP": list(ap if ap is not None else [mAP, mAP])}
        self.history = [{"seconds": seconds / 2, "peak_memory_mib": mem / 2},
                        {"seconds": seconds / 2, "peak_memory_mib": mem}]


def test_t_interval_by_hand():
    mean, half, n = bm.t_interval([1.0, 2.0, 3.0])
    # s = 1, t(0.975, 2) = 4.302653 (table value)
    assert (mean, n) == (2.0, 3) and half == pytest.approx(4.302653 / math.sqrt(3), rel=1e-6)
    assert math.isnan(bm.t_interval([5.0])[1]) and bm.t_interval([])[2] == 0


def test_cells_ranks_gap_and_cost_by_hand():
    res = {"sp": {"full labels": [Fake(90, 0), Fake(92, 1)], "AN": [Fake(50, 0), Fake(52, 1)],
                  "X": [Fake(70, 0, seconds=20, mem=300), Fake(72, 1, seconds=20, mem=300)],
                  "Y": [Fake(60, 0)]},
           "d50": {"full labels": [Fake(90, 0)], "AN": [Fake(80, 0)], "X": [Fake(75, 0, seconds=20, mem=300)], "Y": [Fake(85, 0)]}}
    cells = bm.cell_frame(res)
    t = bm.formatted(cells, ["AN", "X", "Y"], ["sp", "d50"])
    assert t.loc["X", "sp"].startswith("71.0 ± ") and t.loc["Y", "sp"] == "60.0 (1 seed)"
    r = bm.regime_ranks(cells, exclude=["full labels"])
    assert r.loc["X", "sp"] == 1 and r.loc["Y", "sp"] == 2 and r.loc["AN", "sp"] == 3
    assert r.loc["Y", "d50"] == 1 and r.loc["X", "d50"] == 3
    m = bm.mean_ranks(cells, exclude=["full labels"])
    assert m.loc["X", "mean_rank"] == 2.0 and m.loc["Y", "mean_rank"] == 1.5 and m.loc["X", "regimes"] == 2
    g = bm.gap_closed(res)
    assert g.loc["X", "sp"] == pytest.approx(0.5)          # (70-50)/(90-50), (72-52)/(92-52)
    assert g.loc["Y", "sp"] == pytest.approx(0.25)         # seed 0 only
    assert g.loc["Y", "d50"] == pytest.approx(0.5) and g.loc["X", "d50"] == pytest.approx(-0.5)
    c = bm.cost_table(res)
    assert c.loc["X", "seconds_vs_AN"] == pytest.approx(2.0) and c.loc["X", "memory_vs_AN"] == pytest.approx(3.0)


def test_per_class_gain_pairs_seeds():
    res = {"sp": {"AN": [Fake(50, 0, ap=[10, 20]), Fake(50, 1, ap=[30, 40])],
                  "X": [Fake(60, 1, ap=[35, 40]), Fake(60, 0, ap=[20, 20])]}}
    g = bm.per_class_gain(res, "sp", ["X"])
    assert list(g["X"]) == [pytest.approx(7.5), pytest.approx(0.0)]


def test_rare_vs_frequent_by_hand():
    import pandas as pd

    gain = pd.DataFrame({"train_frequency": [0.4, 0.1, 0.3, 0.2], "X": [1.0, 5.0, 3.0, 7.0]},
                        index=["a", "b", "c", "d"])
    t = chapter.rare_vs_frequent(gain)  # rarer: b (0.1), d (0.2); frequent: c, a
    assert t.loc["X", "rarer half"] == 6.0 and t.loc["X", "more frequent half"] == 2.0


def test_cpu_cells_are_the_chapters_runs():
    """Same spec, same store key: the benchmark reads the chapters' runs instead of retraining."""
    from mlpl_lab.chapters import cls, gr, lac, opml
    from mlpl_lab.chapters.common import splits_for
    from mlpl_lab.profiles import get_profile

    P = get_profile("cpu")
    sp = "single positive"
    splits = splits_for(P, "single_positive", {}, 0)
    zoo = gr.methods(P, splits)
    for label in ("AN", "ROLE", "EM+APL", "GR", "LL-R"):
        name, hp = (zoo[label], {}) if isinstance(zoo[label], str) else zoo[label]
        assert chapter.spec_for(P, label, sp, 0) == P.spec(name, hp, seed=0), label
    ospecs = opml.method_specs(P)["single_positive"]
    assert chapter.spec_for(P, "OPML-SP", sp, 1) == P.spec(*ospecs["OPML-SP"], seed=1)
    d = cls.chapter_design(P)
    for reg in cls.REGIMES:
        name, params = cls.REGIMES[reg]
        assert chapter.spec_for(P, "CLS", reg, 0) == P.spec(*cls.method_specs(d, reg)["CLS"], name, params, seed=0)
    fam = cls.method_specs(d, sp)
    assert chapter.spec_for(P, cls.JOCOR, sp, 0) == P.spec(*fam[cls.JOCOR], seed=0)
    lac_spec = lac.table3_specs(P)["two-stage + queue (LAC)"][0]
    assert chapter.spec_for(P, "LAC", sp, lac_spec.seed) == lac_spec
    assert chapter.spec_for(P, "full labels", "drop 75 %", 2).regime == "full"


def test_designs_and_names():
    cpu, smoke, gpu = (chapter.chapter_design(p) for p in ("cpu", "smoke", "gpu"))
    assert set(smoke.grid) == {"single positive", "drop 50 %"}
    assert all(len(s) == 2 for s in smoke.seeds.values())
    assert set(gpu.grid) == set(chapter.REGIMES) and all(len(s) == 3 for s in gpu.seeds.values())
    assert "CLS" not in gpu.grid["known 10 %"] and "CLS" in gpu.grid["drop 25 %"]
    assert set(cpu.grid["single positive"]) == {r.label for r in chapter.ROWS}
    assert cpu.seeds[("single positive", "GR")] == (0, 1, 2)
    assert cpu.seeds[("single positive", "CLS")] == (0, 1)  # chapter 04's key seeds
    assert chapter.left_out(gpu) == []
    assert any(line.startswith("drop 25 %") for line in chapter.left_out(cpu))
    d = chapter.chapter_design("smoke", ["gr", "EM+APL"], ["single", "known10"])
    assert set(d.grid) == {"single positive", "known 10 %"}
    assert d.grid["known 10 %"] == ("full labels", "AN", "GR", "EM+APL")
    with pytest.raises(ValueError, match="unknown benchmark method 'nope'"):
        chapter.chapter_design("smoke", ["nope"])
    with pytest.raises(ValueError, match="unknown benchmark regime"):
        chapter.chapter_design("smoke", None, ["drop10"])


def test_tuning_trials_share_one_budget():
    from mlpl_lab.profiles import get_profile

    P = get_profile("smoke")
    from mlpl_lab.methods import build_method

    for label in chapter.TUNING_GRIDS:
        trials = chapter.tuning_trials(P, label, "single positive")
        assert len(trials) == chapter.TUNING_TRIALS, label
        assert len({tuple(sorted(t.items())) for t in trials}) == chapter.TUNING_TRIALS, label  # distinct
        row = chapter.ROW_BY_LABEL[label]
        # the first trial is what the method runs with untuned: its row's params over its defaults
        untuned = build_method(row.method, **row.params(P, "single positive", 0)).hparams
        for k in chapter.TUNING_GRIDS[label]:
            assert trials[0][k] == untuned[k], (label, k)
    assert chapter.tuning_trials(P, "AN", "single positive") == [{}]


class Interrupted(Exception):
    pass


@pytest.fixture()
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path))
    monkeypatch.setenv("MLPL_LAB_PROGRESS", "0")
    return tmp_path


def test_smoke_grid_builds_every_view_and_resumes(store, monkeypatch):
    import matplotlib
    matplotlib.use("Agg")
    from mlpl_lab import runner
    from mlpl_lab.viz import benchmark_plots as plots

    calls, armed = [], [True]
    real_fit = runner.fit

    def interrupted(*a, **kw):
        calls.append(1)
        if len(calls) == 4 and armed[0]:
            armed[0] = False
            raise Interrupted("the machine went away mid-grid")
        return real_fit(*a, **kw)

    monkeypatch.setattr(runner, "fit", interrupted)
    with pytest.raises(Interrupted):
        chapter.run("smoke")
    assert len(list((store / "runs").iterdir())) == 3  # three runs stored, nothing half-written
    calls.clear()
    design, results, chosen = chapter.run("smoke")  # resumes: only the missing runs train
    assert len(calls) == 10 - 3  # 2 oracle + 4 AN/GR × 2 regimes (oracle shared) = 10 runs
    calls.clear()
    chapter.run("smoke")
    assert calls == []
    tabs = chapter.tables(results)
    assert list(tabs["mAP_mean"].columns) == ["single positive", "drop 50 %"]
    assert set(tabs["ranks"].index) == {"AN", "GR"}
    top, gain = chapter.per_class(results, tabs["_cells"], "smoke", "single positive", k=1)
    assert top == ["GR"] and list(gain.columns) == ["train_frequency", "GR"] and len(gain) == 20
    for fig_ax in (plots.plot_grid(tabs["mAP_mean"], tabs["seeds"]), plots.plot_ranks(tabs["ranks"]),
                   plots.plot_gap(tabs["gap_closed"]), plots.plot_per_class(gain, "single positive"),
                   plots.plot_cost(tabs["cost"])):
        assert fig_ax.get_title()
    paths = chapter.write_csv(tabs, store / "out")
    assert {p.name for p in paths} >= {"07_benchmark_mAP.csv", "07_benchmark_CF1.csv",
                                       "07_benchmark_OF1.csv", "07_benchmark_ranks.csv",
                                       "07_benchmark_gap_closed.csv", "07_benchmark_cost.csv"}
    claims = chapter.claims(results)
    assert len(claims) == 2


def test_tuning_selects_on_validation(store, monkeypatch):
    from mlpl_lab.profiles import get_profile

    monkeypatch.setitem(chapter.TUNING_GRIDS, "GR", {"q2": [0.01, 0.05, 0.001]})
    P = get_profile("smoke", epochs=1, seeds=[0])
    design = chapter.chapter_design(P, ["GR"], ["single"], tuning=True)
    chosen = chapter.tune(P, design)
    from mlpl_lab.runner import ensure

    trials = ensure([chapter.spec_for(P, "GR", "single positive", 0, hp)
                     for hp in chapter.tuning_trials(P, "GR", "single positive")])
    best = max(range(3), key=lambda i: (trials[i].best["val_mAP"], -i))
    assert chosen[("single positive", "GR")] == trials[best].spec.method_params
    assert ("single positive", "AN") in chosen and chosen[("single positive", "AN")] == {}


def test_cli_refuses_bad_names_before_any_work(tmp_path):
    env = dict(os.environ, MLPL_LAB_DATA=str(tmp_path))
    for args, what in ((["--methods", "nope"], "unknown benchmark method"),
                       (["--regimes", "drop10"], "unknown benchmark regime")):
        proc = subprocess.run([sys.executable, "-m", "mlpl_lab.cli", "benchmark", *args,
                               "--out", str(tmp_path / "r")], env=env, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 2 and what in proc.stderr
    assert not (tmp_path / "runs").exists()
