"""The chapter's experiment design and tables (no training: fake results)."""
from __future__ import annotations

import math

import pytest

from mlpl_lab.chapters.cls import (REGIMES, chapter_design, chapter_schedules, claims,
                                   heads_table, left_out, margins, method_specs, sensitivity_table,
                                   table2)
from mlpl_lab.protocol.recipes import ramp_epochs
from mlpl_lab.analysis.tables import total_seconds


class Fake:
    def __init__(self, mAP, f=None, seconds=1.0, seed=0):
        self.spec = type("Spec", (), {"seed": seed, "key": None})()
        row = {"test_mAP": mAP, "test_CF1": mAP / 2, "test_OF1": mAP / 3, "seconds": seconds}
        if f is not None:
            row.update({"test_mAP[f]": f, "test_mAP[g]": f + 1})
        self.best = row
        self.history = [row, row]


def test_E_k_scales_to_the_run_and_caps_at_the_papers_value():
    assert [ramp_epochs(e) for e in (1, 2, 8, 20, 100)] == [1, 1, 4, 10, 10]
    with pytest.raises(ValueError, match="epochs"):
        ramp_epochs(0)


def test_designs_per_profile():
    cpu, smoke, gpu = chapter_design("cpu"), chapter_design("smoke"), chapter_design("gpu")
    assert cpu.E_k == 10 and smoke.E_k == 1 and gpu.E_k == 5  # min(10, epochs // 2): 54, 2, 10 epochs
    assert cpu.table_regimes == ("drop 50 %", "single positive") and cpu.family_regimes == ("single positive",)
    # cpu: every Table 2 row (each enters a claim) on five seeds: 2 AN + 2 CLS + 3 family (two
    # networks each but AN); CLS-H, CLS-L on one seed (the sweeps keep only their reused points)
    assert cpu.planned_runs() == {"runs": 5 * (2 + 2 + 3) + 2, "network_trainings": 5 * (2 + 2 * 5) + 2 * 2}
    assert cpu.key_seeds == cpu.table_seeds == (0, 1, 2, 3, 4) and cpu.study_seeds == (0,)
    assert smoke.planned_runs()["network_trainings"] <= cpu.planned_runs()["network_trainings"]
    assert "drop 25 % (AN, CLS)" in left_out(cpu) and left_out(gpu) == []
    assert gpu.family_regimes == tuple(REGIMES) and len(gpu.table_seeds) == 5
    # the ablation and the sweeps run on the notebook's seed under every profile
    assert chapter_design("gpu", seed=3).study_seeds == (3,) and len(gpu.study_seeds) == 1
    assert "E_k = T_k = 10" in cpu.describe()


def test_method_specs_use_the_papers_coco_taus_per_regime():
    d = chapter_design("cpu")
    single = method_specs(d, "single positive")
    assert list(single) == ["AN", "Co-teaching", "Co-teaching+", "JoCoR (λ=0.1)", "CLS"]
    assert single["CLS"] == ("cls", {"tau_h": 0.012, "tau_l": 0.06, "E_k": 10})
    assert single["JoCoR (λ=0.1)"][1]["T_k"] == 10
    drop25 = method_specs(d, "drop 25 %")
    assert list(drop25) == ["AN", "CLS"] and drop25["CLS"][1]["tau_h"] == 0.005
    with pytest.raises(ValueError, match="regime label"):
        method_specs(d, "drop 10 %")


def test_tables_margins_and_claims_from_results():
    results = {"drop 25 %": {"AN": [Fake(80)], "CLS": [Fake(81, f=80.5)]},
               "drop 50 %": {"AN": [Fake(78)], "CLS": [Fake(79, f=78)]},
               "drop 75 %": {"AN": [Fake(70)], "CLS": [Fake(73, f=72)]},
               "single positive": {"AN": [Fake(74)], "JoCoR (λ=0.1)": [Fake(73, f=72)], "CLS": [Fake(73.5, f=73)]}}
    t = table2(results)
    assert t.loc["CLS", ("drop 75 %", "mAP")] == 73 and math.isnan(t.loc["JoCoR (λ=0.1)", ("drop 25 %", "mAP")])
    assert t.loc["AN", ("single positive", "CF1")] == 37
    assert margins(results) == {"drop 25 %": 1, "drop 50 %": 1, "drop 75 %": 3, "single positive": -0.5}
    from mlpl_lab.chapters.cls import design as cls_design

    d = cls_design("gpu")  # its design asks every regime of these results
    keyed = claims(results, d)  # one seed each: every row is an observation, never judged
    assert keyed.at["cls_beats/jocor_row/single", "claim"] == "CLS beats JoCoR (λ=0.1) under single positive"
    c = keyed.set_index("claim")  # read by the sentences a reader sees
    assert c.loc["CLS beats AN under single positive", "_margin"] == pytest.approx(-0.5)
    assert c.loc["CLS beats JoCoR (λ=0.1) under single positive", "_margin"] == pytest.approx(0.5)
    grows = "the margin over AN grows with the missing rate (drop 75 % vs 25 %)"
    assert c.loc[grows, "_margin"] == pytest.approx(2.0)  # (73 − 70) − (81 − 80)
    assert set(c["verdict"]) == {"inconclusive (1 seeds)"} and set(c["kind"]) == {"observation"}
    # three paired seeds: a finding, judged by the paired t-interval (scipy as the oracle)
    from scipy import stats

    an = {"drop 25 %": (80, 81, 79), "drop 75 %": (70, 70, 71)}
    cl = {"drop 25 %": (81, 81.5, 80), "drop 75 %": (73, 74, 74.5)}
    three = {reg: {"AN": [Fake(v, seed=s) for s, v in enumerate(an[reg])],
                   "CLS": [Fake(v, seed=s) for s, v in enumerate(cl[reg])]} for reg in an}
    t3 = claims(three, d).set_index("claim")
    growth = [(cl["drop 75 %"][s] - an["drop 75 %"][s]) - (cl["drop 25 %"][s] - an["drop 25 %"][s])
              for s in range(3)]  # 2, 3.5, 2.5
    assert t3.loc[grows, "_diffs"] == pytest.approx(growth)
    p = {k: stats.ttest_1samp(d, 0).pvalue for k, d in (
        ("25", [cl["drop 25 %"][s] - an["drop 25 %"][s] for s in range(3)]),
        ("75", [cl["drop 75 %"][s] - an["drop 75 %"][s] for s in range(3)]), ("grows", growth))}
    assert t3.loc[grows, "_p"] == pytest.approx(p["grows"]) and t3.loc[grows, "kind"] == "finding"
    # each row is decided on its family's interval, m declared by the design (not counted here):
    # "CLS beats AN" is asked once per table regime, the growth once
    m_an = len(d.table_regimes)
    assert t3.loc["CLS beats AN under drop 25 %", "_m"] == m_an and t3.loc[grows, "_m"] == 1
    res = stats.ttest_1samp(growth, 0)
    lo, hi = res.confidence_interval(0.95)
    assert (t3.loc[grows, "_flo"], t3.loc[grows, "_fhi"]) == (pytest.approx(lo), pytest.approx(hi))
    d25 = [cl["drop 25 %"][s] - an["drop 25 %"][s] for s in range(3)]
    lo25, hi25 = stats.ttest_1samp(d25, 0).confidence_interval(1 - 0.05 / m_an)
    assert t3.loc["CLS beats AN under drop 25 %", "_flo"] == pytest.approx(lo25)
    assert t3.loc[grows, "verdict"] == ("holds" if lo > 0 else "inconclusive")
    assert t3.loc["CLS beats AN under drop 25 %", "verdict"] == ("holds" if lo25 > 0 else "inconclusive")
    h = heads_table(results)
    assert h.loc[("single positive", "CLS"), "f alone"] == 73 and ("drop 25 %", "AN") not in h.index
    assert total_seconds(results, {"again": results["drop 25 %"]}) == pytest.approx(2 * 9)
    s = sensitivity_table({0.0: [Fake(70, f=69)], 0.012: [Fake(72, f=71)]}, "tau_h")
    assert list(s.index) == [0.0, 0.012] and s.loc[0.012, "mAP"] == 72


def test_schedules_of_the_chapter():
    curves = chapter_schedules(chapter_design("cpu"), 20)
    R_h = next(v for k, v in curves.items() if k.startswith("CLS R_h"))
    assert R_h[0] == 1.0 and R_h[10] == pytest.approx(1 - 0.012) and R_h[5] == pytest.approx(1 - 0.012 * 5 / 10)
    assert len(R_h) == 20  # the cpu run: 20 epochs, ramp over E_k = 10
