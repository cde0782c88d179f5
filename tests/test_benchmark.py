"""The benchmark chapter: its numbers against hand-computed oracles, its specs against the
chapters' (so their runs are reused), a smoke grid end to end, resumption, the CLI."""
from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest

from mlpl_lab.analysis import benchmark as bm
from mlpl_lab.chapters import benchmark as chapter
from mlpl_lab.protocol.asked import ensure_asked
from mlpl_lab.protocol import recipes
from mlpl_lab.protocol import regimes as protocol_regimes


class Fake:
    def __init__(self, mAP, seed=0, ap=None, seconds=10.0, mem=100.0, converged=None):
        self.spec = type("Spec", (), {"seed": seed, "key": None})()
        if converged is not None:
            self.converged = converged
        self.best = {"test_mAP": mAP, "test_CF1": mAP / 2, "test_OF1": mAP / 3,
                     "test_AP": list(ap if ap is not None else [mAP, mAP])}
        self.history = [{"seconds": seconds / 2, "peak_memory_mib": mem / 2},
                        {"seconds": seconds / 2, "peak_memory_mib": mem}]


def test_t_interval_by_hand():
    mean, half, n = bm.t_interval([1.0, 2.0, 3.0])
    # s = 1, t(0.975, 2) = 4.302653 (table value)
    assert (mean, n) == (2.0, 3) and half == pytest.approx(4.302653 / math.sqrt(3), rel=1e-6)
    assert math.isnan(bm.t_interval([5.0])[1]) and bm.t_interval([])[2] == 0


def test_cells_ranks_and_cost_by_hand():
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
    c = bm.cost_table(res)
    assert c.loc["X", "seconds_vs_AN"] == pytest.approx(2.0) and c.loc["X", "memory_vs_AN"] == pytest.approx(3.0)


def test_cost_table_sits_beside_the_ranks_by_hand():
    """Bug caught: the cost table's mean rank taken over every regime instead of the compared
    block, its mAP averaged over seeds of another regime, or the oracle ranked. Oracle: ranks and
    means worked out by hand (sp: GR 71 > EM 61 > AN 51; drop 50 %: EM 85 > AN 80 > GR 75)."""
    def cell(a, b, seconds=10.0):
        return [Fake(a, 0, seconds=seconds), Fake(b, 1, seconds=seconds)]

    res = {"single positive": {"full labels": cell(90, 92), "AN": cell(50, 52), "GR": cell(70, 72, 20.0),
                               "EM": cell(60, 62, 30.0), "ROLE": cell(99, 99)},
           "drop 50 %": {"full labels": cell(95, 95), "AN": cell(80, 80), "GR": cell(75, 75, 20.0),
                         "EM": cell(85, 85, 30.0)}}
    cost = chapter.tables(res)["cost"]
    assert cost.loc["GR", "mean rank"] == pytest.approx(2.0) and cost.loc["EM", "mean rank"] == pytest.approx(1.5)
    assert cost.loc["AN", "mean rank"] == pytest.approx(2.5)
    assert cost.loc["GR", "block mAP"] == pytest.approx(73.0) and cost.loc["AN", "block mAP"] == pytest.approx(65.5)
    assert math.isnan(cost.loc["ROLE", "mean rank"]) and math.isnan(cost.loc["full labels", "block mAP"])
    assert cost.loc["EM", "seconds_vs_AN"] == pytest.approx(3.0)


def test_observed_tuning_choice_is_named_beside_the_clean_one():
    """Bug caught: a cell whose observed choice differs shown as the same, or a setting named by
    its full hyperparameters instead of what differs from the paper default."""
    from mlpl_lab.profiles import get_profile

    P = get_profile("cpu")
    d = chapter.design(P, ["EM", "GR"], ["single"])
    base_em = recipes.trial_params(P, "EM", "single positive", {})
    runs = chapter.BenchmarkRuns(d, {}, {}, chosen={
        ("single positive", "EM"): dict(base_em), ("single positive", "GR"): recipes.trial_params(P, "GR", "single positive", {})},
        chosen_observed={("single positive", "EM"): dict(base_em, alpha=0.1), ("single positive", "GR"): None})
    f = chapter.observed_tuning_frame(runs).set_index("method")
    assert f.loc["EM", "kept on clean labels"] == "paper default" and f.loc["EM", "kept on observed labels"] == "alpha=0.1"
    assert f.loc["EM", "same"] == "✗" and f.loc["GR", "same"] == "—"


def test_unconverged_cells_are_marked():
    res = {"sp": {"AN": [Fake(50, 0, converged=True), Fake(52, 1, converged=False)],
                  "X": [Fake(70, 0, converged=True), Fake(72, 1, converged=True)],
                  "Y": [Fake(60, 0)]}}
    cells = bm.cell_frame(res)
    t = bm.formatted(cells, ["AN", "X", "Y"], ["sp"])
    assert t.loc["AN", "sp"].endswith(" †") and not t.loc["X", "sp"].endswith("†")
    assert not t.loc["Y", "sp"].endswith("†")  # unknown is not marked
    assert bm.convergence_record(cells) == {"AN · sp": False, "X · sp": True, "Y · sp": None}


def test_gap_closed_is_a_ratio_of_means():
    """Audit §2: gaps 0.1 and 10 with gains 0.5 and 5 averaged per-seed ratios (2.75); over two
    seeds that gap's t-interval contains 0, so there is no estimate, only the reason."""
    g = bm.gap_share({0: 50.5, 1: 55.0}, {0: 50.0, 1: 50.0}, {0: 50.1, 1: 60.0})
    assert math.isnan(g["estimate"]) and "contains 0" in g["reason"] and g["seeds"] == [0, 1]
    # gaps 9, 10, 11 (clearly positive), gains 1, 5, 9; seed 7 ran for the method only
    x, an, o = {0: 51.0, 1: 55.0, 2: 59.0, 7: 99.0}, {0: 50.0, 1: 50.0, 2: 50.0}, {0: 59.0, 1: 60.0, 2: 61.0}
    g = bm.gap_share(x, an, o)
    assert g["estimate"] == pytest.approx(15 / 30) and g["seeds"] == [0, 1, 2] and g["n"] == 3
    assert np.mean([1 / 9, 5 / 10, 9 / 11]) == pytest.approx(0.4764, abs=1e-4)  # not this
    assert g["lo"] <= g["estimate"] <= g["hi"]
    assert bm.gap_share(x, an, o) == g  # deterministic (fixed RNG seed)
    # the bootstrap by hand: resample seed indices jointly, ratio of the resampled means
    rng = np.random.default_rng(bm.BOOTSTRAP_SEED)
    idx = rng.integers(0, 3, size=(bm.BOOTSTRAP_RESAMPLES, 3))
    gain, gap = np.array([1.0, 5.0, 9.0]), np.array([9.0, 10.0, 11.0])
    ratios = gain[idx].mean(1) / gap[idx].mean(1)
    assert [g["lo"], g["hi"]] == pytest.approx(list(np.percentile(ratios, [2.5, 97.5])))
    one = bm.gap_share({0: 60.0}, {0: 50.0}, {0: 70.0})
    assert math.isnan(one["estimate"]) and "1 seed(s) shared" in one["reason"]


def test_gap_closed_table_shows_seeds_and_reasons():
    res = {"sp": {"full labels": [Fake(v, s) for s, v in enumerate((90, 91, 93))],
                  "AN": [Fake(v, s) for s, v in enumerate((50, 52, 51))],
                  "X": [Fake(v, s) for s, v in enumerate((70, 73, 71))], "Y": [Fake(60, 0)]}}
    gaps = bm.gap_closed(res)
    x = gaps.set_index("method").loc["X"]
    assert x["estimate"] == pytest.approx(np.mean([20, 21, 20]) / np.mean([40, 39, 42]))
    assert list(x["seeds"]) == [0, 1, 2]
    assert math.isnan(gaps.set_index("method").loc["Y", "estimate"])
    t = bm.gap_formatted(gaps, ["X", "Y"], ["sp"])
    assert t.loc["X", "sp"].endswith("(seeds 0, 1, 2)") and t.loc["Y", "sp"].startswith("— (1 seed(s)")


def test_friedman_and_critical_difference_by_hand():
    """Demšar (2006), §3.2.2: q_0.05 = 2.569 for k = 4; with N = 14, CD = 2.569·√(4·5/(6·14)) = 1.25."""
    assert bm.critical_difference(4, 14) == pytest.approx(2.569 * math.sqrt(20 / 84), abs=1e-3)
    assert bm.critical_difference(4, 14) == pytest.approx(1.25, abs=0.005)
    assert bm.critical_difference(3, 10) == pytest.approx(2.343 * math.sqrt(12 / 60), abs=1e-3)  # Demšar Table 5a
    import pandas as pd

    # 3 methods × 4 regimes, no ties: rank sums by hand A: 1+1+2+1 = 5, B: 2+3+1+2 = 8, C: 3+2+3+3 = 11
    means = {"A": [80, 70, 60, 75], "B": [70, 50, 65, 74], "C": [60, 55, 50, 73]}
    cells = pd.DataFrame([{"method": m, "regime": f"r{j}", "mean": v, "ci95": 1.0, "seeds": 3, "converged": None}
                          for m, vs in means.items() for j, v in enumerate(vs)]
                         + [{"method": "D", "regime": "r0", "mean": 99.0, "ci95": 1.0, "seeds": 3, "converged": None}])
    s = bm.rank_summary(cells)
    assert s["methods"] == ["A", "B", "C"] and s["regimes"] == ["r0", "r1", "r2", "r3"]
    assert "r1" in s["left_out"]["D"]  # D ran in one regime only
    assert dict(s["table"]["mean_rank"]) == {"A": 1.25, "B": 2.0, "C": 2.75}
    k, n, R = 3, 4, np.array([5, 8, 11]) / 4
    chi2 = 12 * n / (k * (k + 1)) * (np.sum(R ** 2) - k * (k + 1) ** 2 / 4)  # = 4.5
    assert s["friedman"]["statistic"] == pytest.approx(chi2) == pytest.approx(4.5)
    assert s["friedman"]["p"] == pytest.approx(math.exp(-4.5 / 2))  # χ² with 2 df: p = e^{-x/2}
    assert s["cd"] == pytest.approx(bm.critical_difference(3, 4))
    two = bm.rank_summary(cells[cells.method.isin(["A", "B"])])
    assert math.isnan(two["friedman"]["p"]) and "at least 3 methods" in two["friedman"]["reason"]


def test_complete_block_prefers_most_cells():
    import pandas as pd

    nan = math.nan
    # regimes a, b, c: M1..M3 everywhere, M4 and M5 in a and b only -> block {a, b} × 5 (10 cells)
    mean = pd.DataFrame({"a": [1, 2, 3, 4, 5], "b": [1, 2, 3, 4, 5], "c": [1, 2, 3, nan, nan]},
                        index=["M1", "M2", "M3", "M4", "M5"])
    assert bm.complete_block(mean) == (["M1", "M2", "M3", "M4", "M5"], ["a", "b"])
    # one more regime for M1..M3 makes 3 × 4 = 12 cells > 5 × 2
    mean["d"] = [1, 2, 3, nan, nan]
    mean["e"] = [1, 2, 3, nan, nan]
    assert bm.complete_block(mean) == (["M1", "M2", "M3"], ["a", "b", "c", "d", "e"])


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


def test_cpu_cells_are_the_chapters_runs(monkeypatch):
    """Same spec, same store key: the benchmark reads the chapters' runs instead of retraining.
    Bug caught: a chapter trains a row with its own overrides (OPML's longer cpu schedule) that the
    benchmark's spec does not carry, so notebook 07 retrains the row under another key."""
    import dataclasses

    from mlpl_lab.chapters import cls, gr, lac, opml
    from mlpl_lab.protocol.asked import nothing_stored
    from mlpl_lab.protocol.common import splits_for
    from mlpl_lab.profiles import get_profile

    P = get_profile("cpu")
    sp = "single positive"
    splits = splits_for(P, "single_positive", {}, 0)
    zoo = gr.methods(P, splits)
    for label in ("AN", "ROLE", "EM+APL", "GR", "LL-R"):
        name, hp = (zoo[label], {}) if isinstance(zoo[label], str) else zoo[label]
        assert recipes.spec_for(P, label, sp, 0) == P.spec(name, hp, seed=0), label
    # what chapter 03 asks the store for (its pure specs: nothing trains)
    d03 = opml.design(P)
    asked = opml.specs(d03, nothing_stored).now
    sp_specs, full_specs = asked[opml.PARTIAL], asked[opml.FULL]
    # under cpu every row trains the profile's 54 epochs (more than the 48 OPML once needed)
    assert {k: v[0].train["epochs"] for k, v in sp_specs.items()} == {k: 54 for k in sp_specs}
    assert full_specs["BCE (full)"][0].train["epochs"] == 54 == full_specs["OPML (full)"][0].train["epochs"]
    # a design's opml_epochs reaches the OPML family only (AN and the oracle are shared with 01)
    asked = opml.specs(dataclasses.replace(d03, opml_epochs=60), nothing_stored).now
    longer, longer_full = asked[opml.PARTIAL], asked[opml.FULL]
    assert {k: v[0].train["epochs"] for k, v in longer.items()} == {
        k: (60 if k.startswith("OPML") else 54) for k in longer}
    assert longer_full["BCE (full)"][0].train["epochs"] == 54 and longer_full["OPML (full)"][0].train["epochs"] == 60
    assert recipes.spec_for(P, "OPML-SP", sp, 1) == sp_specs["OPML-SP"][1]
    assert recipes.spec_for(P, "AN", sp, 3) == sp_specs["AN"][3]
    d = cls.chapter_design(P)
    for reg in cls.REGIMES:
        name, params = cls.REGIMES[reg]
        assert recipes.spec_for(P, "CLS", reg, 0) == P.spec(*cls.method_specs(d, reg)["CLS"], name, params, seed=0)
    fam = cls.method_specs(d, sp)
    assert recipes.spec_for(P, cls.JOCOR, sp, 0) == P.spec(*fam[cls.JOCOR], seed=0)
    lac_spec = lac.specs(lac.design(P)).now[lac.TABLE]["two-stage + queue (LAC)"][0]
    assert recipes.spec_for(P, "LAC", sp, lac_spec.seed) == lac_spec
    assert recipes.spec_for(P, "full labels", "drop 75 %", 2).regime == "full"


def test_designs_and_names():
    cpu, smoke, gpu = (chapter.design(p) for p in ("cpu", "smoke", "gpu"))
    assert set(smoke.grid) == {"single positive", "drop 50 %"}
    assert all(len(s) == 2 for s in smoke.seeds.values())
    # gpu, sized for a course: cpu's grid at the gpu scale; the full grid on request
    assert gpu.grid == cpu.grid and all(len(s) == 5 for s in gpu.seeds.values())
    full = chapter.design("gpu", regimes=list(protocol_regimes.REGIMES))
    assert set(full.grid) == set(protocol_regimes.REGIMES)
    assert "CLS" not in full.grid["known 10 %"] and "CLS" in full.grid["drop 25 %"]
    # cpu: every row under single positive (>= 18 methods), a block of >= 8 ranked methods under
    # three regimes, one of them size-biased and one partial (issue 52)
    assert cpu.grid["single positive"] == tuple(r.label for r in recipes.rows())
    assert len(cpu.grid["single positive"]) - len(chapter.REFERENCE_ROWS) >= 18
    block = set.intersection(*(set(rows) for rows in cpu.grid.values())) - set(chapter.REFERENCE_ROWS)
    assert len(cpu.grid) == 3 and "single positive (size-biased)" in cpu.grid and "drop 50 %" in cpu.grid
    assert len(block) >= 8 and {"AN", "GR", "EM", "ROLE", "CLS", "LAC", "OPML-SP", "PU-MLC"} <= block
    assert all(s == (1, 2, 3, 4, 5) for s in cpu.seeds.values())  # tuned: the fresh seeds
    gone = [line.split(":")[0] for line in chapter.left_out(gpu) if line.endswith(": every method")]
    assert gone == ["drop 25 %", "drop 75 %", "known 10 %", "positives only 10 %"]
    assert any(line.startswith("drop 25 %") for line in chapter.left_out(cpu))
    d = chapter.design("smoke", ["gr", "EM+APL"], ["single", "known10"])
    assert set(d.grid) == {"single positive", "known 10 %"}
    assert d.grid["known 10 %"] == ("full labels", "AN", "GR", "EM+APL")
    with pytest.raises(ValueError, match="unknown benchmark method 'nope'"):
        chapter.design("smoke", ["nope"])
    with pytest.raises(ValueError, match="unknown benchmark regime"):
        chapter.design("smoke", None, ["drop10"])


def test_tuned_designs_report_fresh_seeds_only():
    from mlpl_lab.profiles import get_profile

    from types import SimpleNamespace

    from mlpl_lab.protocol.asked import nothing_stored

    P = get_profile("smoke", seeds=[0, 1, 2])
    d = chapter.design(P, ["GR"], ["single"], tuning=True)
    assert d.selection_seed == 0
    assert all(seeds == (1, 2, 3) for seeds in d.seeds.values())  # every row, tuned or not

    def stored(spec):  # every trial stored; q2 = 0.05 validates best
        return SimpleNamespace(spec=spec, best={"val_mAP": 60.0 if spec.method_params.get("q2") == 0.05 else 50.0})

    asked = chapter.specs(d, stored)
    assert not asked.later
    cells = asked.now["single positive"]
    assert {s.seed for ss in cells.values() for s in ss} == {1, 2, 3}
    assert [s.method_params for s in cells["GR"]] == [{"q2": 0.05}] * 3
    assert {s.seed for ss in asked.now[chapter.TRIALS].values() for s in ss} == {0}  # trials only
    # nothing stored: GR waits on its trials (later, under the paper default as stand-in)
    waiting = chapter.specs(d, nothing_stored)
    assert "GR" not in waiting.now.get("single positive", {})
    assert [s.method_params for s in waiting.later["single positive"]["GR"]] == [{}] * 3
    assert chapter.design(P, ["GR"], ["single"]).seeds[("single positive", "GR")] == (0, 1, 2)
    one = chapter.design(get_profile("smoke", seeds=[0]), ["GR"], ["single"], tuning=True)
    assert set(one.seeds.values()) == {(1,)}  # one fresh seed after the selection seed


def test_tuning_trials_share_one_budget():
    """Bug caught: a row given more (or fewer) trials than another, or its first trial not the
    untuned run (oracle: the row's own parameters, built without the tuning module)."""
    from mlpl_lab.protocol.asked import nothing_stored
    from mlpl_lab.profiles import get_profile

    sp = "single positive"
    for P, budget in ((get_profile("smoke"), 2), (get_profile("cpu"), 3)):
        d = chapter.design(P, list(chapter.TUNING_GRIDS), ["single"], tuning=True)
        trials = chapter.specs(d, nothing_stored).now[chapter.TRIALS]
        for label in chapter.TUNING_GRIDS:
            mine = [ss[0] for name, ss in trials.items() if name.startswith(f"{label} · {sp} · ")]
            assert len(mine) == budget, label
            assert len({s.key for s in mine}) == budget, label  # distinct
            assert {s.seed for s in mine} == {0}, label  # the selection seed
            row = recipes.row(label)
            assert mine[0].method_params == row.params(P, sp, 0), label
        assert len([name for name in trials if name.startswith(f"AN · {sp} · ")]) == 1  # nothing to tune
        assert not any(name.startswith(f"{chapter.ORACLE} · ") for name in trials)


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
    from mlpl_lab.runs import ensure as run_ensure
    from mlpl_lab.viz import benchmark_plots as plots

    calls, armed = [], [True]
    real_fit = run_ensure.fit

    def interrupted(*a, **kw):
        calls.append(1)
        if len(calls) == 4 and armed[0]:
            armed[0] = False
            raise Interrupted("the machine went away mid-grid")
        return real_fit(*a, **kw)

    monkeypatch.setattr(run_ensure, "fit", interrupted)
    with pytest.raises(Interrupted):
        ensure_asked(chapter.specs, chapter.design("smoke"))
    assert len(list((store / "runs").iterdir())) == 3  # three runs stored, nothing half-written
    calls.clear()
    d = chapter.design("smoke")
    out = chapter.results(d, ensure_asked(chapter.specs, d))  # resumes: only the missing runs train
    design, results, chosen = out.design, out.results, out.chosen
    # 1 pretraining + 2 oracle + (AN, GR) × 2 regimes × 2 seeds (oracle shared) = 11 runs, and the
    # length check (GR and AN × 2 seeds) of each regime whose GR runs did not all converge
    # or whose pilot (its first run at the length check's epochs, read from the store) gained ≥ 0.5
    from mlpl_lab.chapters import gr
    from mlpl_lab.runs.store import RunStore

    def gained(first):
        longer = RunStore().get(first.spec.replace(train=dict(first.spec.train, epochs=gr.length_check_epochs("smoke"))))
        return longer is not None and longer.summary["test_mAP"] - first.summary["test_mAP"] >= 0.5

    # (a run's last-quarter flag, its summary's; a stored pilot may call the row converged after)
    unconverged = [reg for reg in results if any(r.summary["convergence"]["converged"] is False
                                                 for r in results[reg]["GR"]) or gained(results[reg]["GR"][0])]
    assert sorted(out.length) == sorted(unconverged)
    assert len(calls) == 11 + 4 * len(unconverged) - 3
    calls.clear()
    ensure_asked(chapter.specs, chapter.design("smoke"))
    assert calls == []
    tabs = chapter.tables(results)
    assert list(tabs["mAP_mean"].columns) == ["single positive", "drop 50 %"]
    assert set(tabs["ranks"].index) == {"AN", "GR"}  # two methods: no Friedman test
    assert math.isnan(tabs["_rank"]["friedman"]["p"]) and "at least 3 methods" in tabs["friedman"].loc["ranks", "note"]
    top, gain = chapter.per_class(results, tabs["_cells"], "smoke", "single positive", k=1)
    assert top == ["GR"] and list(gain.columns) == ["train_frequency", "GR"] and len(gain) == 20
    for fig_ax in (plots.plot_grid(tabs["mAP_mean"], tabs["seeds"], tabs["converged"]),
                   plots.plot_ranks(tabs["_rank"]),
                   plots.plot_gap(tabs["gap_closed_estimate"], tabs["gap_closed_lo"], tabs["gap_closed_hi"]),
                   plots.plot_per_class(gain, "single positive"),
                   plots.plot_cost(tabs["cost"]),
                   plots.plot_rank_cost(tabs["cost"]),
                   plots.plot_selection(chapter.selection_frame(results))):
        assert fig_ax.get_title()
    paths = chapter.write_csv(tabs, store / "out")
    assert {p.name for p in paths} >= {"07_benchmark_mAP.csv", "07_benchmark_CF1.csv",
                                       "07_benchmark_OF1.csv", "07_benchmark_ranks.csv",
                                       "07_benchmark_gap_closed.csv", "07_benchmark_cost.csv"}
    claims = chapter.claims(results, design=design)
    from mlpl_lab.analysis.claims import claims_record
    from claims_oracle import check_claims_record

    # GR vs AN per regime, and the pooled model-selection claim of each regime (the runs record
    # val_obs_mAP); two paired seeds decide nothing
    assert len(claims) == 2 + 2 and set(claims["kind"]) == {"observation"}
    assert set(claims["verdict"]) == {"inconclusive (2 seeds)"}
    check_claims_record(claims_record(claims))
    rec = chapter.records(design, tabs, chosen, out.chosen_observed)
    assert set(rec["benchmark_convergence"]) == {f"{m} · {r}" for r in results for m in results[r]}
    assert rec["gap_closed_detail"]["GR · single positive"]["seeds"] == [0, 1]


def test_tuning_selects_on_validation_and_reports_fresh_seeds(store, monkeypatch):
    from mlpl_lab.runs import ensure
    from mlpl_lab.profiles import get_profile

    monkeypatch.setitem(chapter.TUNING_GRIDS, "GR", {"q2": [0.01, 0.05, 0.001]})
    P = get_profile("smoke", epochs=1, seeds=[0, 1])
    d = chapter.design(P, ["GR"], ["single"], tuning=True)
    out = chapter.results(d, ensure_asked(chapter.specs, d))
    chosen = out.chosen
    # the oracle: GR's trials built here (smoke's budget: the grid's first two points)
    trials = ensure.ensure([P.spec("gr", hp, "single_positive", {}, seed=0) for hp in ({}, {"q2": 0.05})])
    best = max(range(len(trials)), key=lambda i: (trials[i].best["val_mAP"], -i))
    assert chosen[("single positive", "GR")] == trials[best].spec.method_params
    assert ("single positive", "AN") in chosen and chosen[("single positive", "AN")] == {}
    results = out.results
    reported = results["single positive"]["GR"]
    assert [r.spec.seed for r in reported] == [1, 2]  # the selection seed is never reported
    assert reported[0].spec.method_params == trials[best].spec.method_params
    assert {r.spec.key for r in reported}.isdisjoint({t.spec.key for t in trials})


def test_cli_refuses_bad_names_before_any_work(tmp_path):
    env = dict(os.environ, MLPL_LAB_DATA=str(tmp_path))
    for args, what in ((["--methods", "nope"], "unknown benchmark method"),
                       (["--regimes", "drop10"], "unknown benchmark regime")):
        proc = subprocess.run([sys.executable, "-m", "mlpl_lab.cli", "benchmark", *args,
                               "--out", str(tmp_path / "r")], env=env, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 2 and what in proc.stderr
    assert not (tmp_path / "runs").exists()


def test_lac_is_also_compared_with_an_on_its_own_network():
    """Bug caught: the benchmark credits LAC's label-query head to the method — LAC is compared
    only with AN on the shared linear-head network (07's first cpu run: LAC closed 75 % of the gap
    while AN on LAC's own network was within a point of LAC). The same-head row pairs LAC with
    that baseline on the seeds both ran; without the baseline the row is absent."""
    lac = [Fake(v, seed=s, converged=True) for s, v in enumerate([95.0, 95.4, 95.1, 95.6, 95.2])]
    an = [Fake(v, seed=s, converged=True) for s, v in enumerate([89.0, 89.5, 88.9, 89.9, 89.2])]
    head = [Fake(v, seed=s, converged=True) for s, v in enumerate([94.4, 94.5, 94.7])]
    results = {"single positive": {"AN": an, "LAC": lac}}
    d = chapter.design("smoke", methods=["LAC"], regimes=["single"])
    plain = chapter.claims(results, design=d)
    assert list(plain["claim"]) == ["LAC beats AN under single positive"]
    both = chapter.claims(results, {"single positive": head}, design=d)
    assert list(both["claim"]) == ["LAC beats AN under single positive",
                                   "LAC beats AN with LAC's own head under single positive"]
    # keyed by what they compare (catalogue keys, the regime's short name), never by the sentence
    assert list(both.index) == ["beats_an/lac/single", "beats_an_on_own_head/lac/single"]
    row = both.iloc[1]
    diffs = [95.0 - 94.4, 95.4 - 94.5, 95.1 - 94.7]  # by hand: seeds 0-2 only
    assert row["_n"] == 3 and row["_diffs"] == pytest.approx(diffs)
    assert row["_margin"] == pytest.approx(sum(diffs) / 3)
    assert both.iloc[0]["_n"] == 5 and both.iloc[0]["_margin"] == pytest.approx((6.0 + 5.9 + 6.2 + 5.7 + 6.0) / 5)


def test_the_gpu_grid_has_a_size_biased_single_positive_column():
    """Issue 52: a label-biased regime. Its cells draw the single positive with bias="size" (the
    spec says so), every method that applies to single positive applies, and CLS takes its paper's
    single-positive τ (by hand: the same hyperparameters as the uniform column)."""
    from mlpl_lab.profiles import get_profile

    d = chapter.design("gpu", [r.label for r in recipes.rows()])  # the full grid (the design has cpu's)
    col = "single positive (size-biased)"
    assert set(d.grid[col]) == set(d.grid["single positive"])
    spec = recipes.spec_for(get_profile("gpu"), "AN", col, 1)
    assert spec.regime == "single_positive" and spec.regime_params == {"bias": "size"}
    P = get_profile("gpu")
    assert recipes.spec_for(P, "CLS", col, 1).method_params == recipes.spec_for(P, "CLS", "single positive", 1).method_params
    assert protocol_regimes.resolve_regimes(["single_size"]) == [col]
