"""Chapter 08: the sweeps' gain curves and vanishing points on hand-worked cases, the label sets on a
tiny case whose thresholds are counted by hand, the wrong-side-information knobs of Crisp and of the
cardinality method against the truth computed here, the widget's pure update, and the design's
runs (the baselines are chapter 07's very cells; every family's claims are the ones it declares)."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from mlpl_lab.analysis.side_information import gain_curve, label_set_rows, prior_table, vanishing_point
from mlpl_lab.catalogue import LABEL

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tiny import tiny_config, tiny_splits  # noqa: E402


@pytest.fixture(scope="module")
def splits():
    return tiny_splits()


def _curve(xs, gains):
    import pandas as pd

    return pd.DataFrame({"gain": gains, "low": gains, "high": gains}, index=xs)


def test_gain_curve_pairs_by_seed_with_a_t_interval_worked_by_hand():
    """Point 1: gains 80 − 78 = 2 and 82 − 79 = 3 (seed 3 of AN has no partner): mean 2.5, sd
    0.7071, se 0.5, t(0.975, 1) = 12.7062 → 2.5 ± 6.3531. Bug caught: unpaired means, the
    unpartnered seed counted, a z instead of a t quantile."""
    c = gain_curve({2.0: {1: 79.0, 2: 80.0}, 1.0: {1: 80.0, 2: 82.0}}, {1: 78.0, 2: 79.0, 3: 77.0})
    assert list(c.index) == [1.0, 2.0]
    assert c.loc[1.0, "gain"] == pytest.approx(2.5)
    assert c.loc[1.0, "seeds"] == 2
    assert c.loc[1.0, "low"] == pytest.approx(2.5 - 6.35310, abs=1e-4)
    assert c.loc[1.0, "high"] == pytest.approx(2.5 + 6.35310, abs=1e-4)
    assert c.loc[2.0, "gain"] == pytest.approx(1.0)
    assert c.loc[2.0, "mAP"] == pytest.approx(79.5)
    one = gain_curve({1.0: {1: 80.0}}, {1: 78.0})
    assert math.isnan(one.loc[1.0, "low"])


def test_vanishing_point_by_linear_interpolation_worked_by_hand():
    """Below 1: gains 1 at 0.75 and −1 at 0.5 cross at 0.75 − 0.25·1/2 = 0.625; above: 1 at 1.5,
    −1 at 2 cross at 1.75. A side that stays positive gives None; a truth that gains nothing gives
    the truth on both sides. Bug caught: the walk starting at the sweep's end, the crossing taken at
    the first negative point, the sides swapped."""
    v = vanishing_point(_curve([0.5, 0.75, 1.0, 1.5, 2.0], [-1.0, 1.0, 2.0, 1.0, -1.0]), 1.0)
    assert v["below"] == pytest.approx(0.625)
    assert v["above"] == pytest.approx(1.75)
    v = vanishing_point(_curve([-1, 0, 1], [0.5, 2.0, 1.0]), 0)
    assert v == {"below": None, "above": None}
    v = vanishing_point(_curve([-1, 0, 1], [3.0, -0.5, 1.0]), 0)
    assert v == {"below": 0.0, "above": 0.0}
    # a negative point further out does not count once an earlier one crossed
    v = vanishing_point(_curve([0.25, 0.5, 1.0], [1.0, -2.0, 2.0]), 1.0)
    assert v["below"] == pytest.approx(1.0 - 0.5 * 2 / 4)


def test_prior_table_sorts_by_the_true_prior_and_signs_the_error():
    t = prior_table([0.30, 0.05], [0.25, 0.10], ["a", "b"])
    assert list(t.index) == ["b", "a"]
    assert t.loc["a", "error"] == pytest.approx(0.05)
    assert t.loc["b", "error"] == pytest.approx(-0.05)
    with pytest.raises(ValueError, match="one value per class"):
        prior_table([0.1], [0.1, 0.2])


def test_label_set_rows_on_a_case_counted_by_hand():
    """One class, validation scores 1 − p of its positives 0.1, 0.2, 0.3, 0.4 (n = 4): at α = 0.2 the
    rank is ⌈5 · 0.8⌉ = 4 → t = 0.4; the observed positives are the two most confident (0.1, 0.2):
    rank ⌈3 · 0.8⌉ = 3 > 2 → t = ∞ (every image in). Test positives score 1 − p = 0.05, 0.35, 0.45,
    0.6: calibrated covers 2 of 4, sets hold the images with 1 − p ≤ 0.4 (3 of 5 test images, the
    negative at 0.2 included); observed covers 4 of 4 with every image. Oracle at α = 0.2:
    ⌈4 · 0.8⌉ = 4th smallest test score, 0.6: covers all four."""
    p_val = np.array([[0.9], [0.8], [0.7], [0.6], [0.05]])
    y_val = np.array([[1], [1], [1], [1], [0]])
    obs_val = np.array([[1], [1], [-1], [-1], [-1]])
    p_test = np.array([[0.95], [0.65], [0.55], [0.4], [0.8]])
    y_test = np.array([[1], [1], [1], [1], [0]])
    s = {"p_val": p_val, "y_val": y_val, "obs_val": obs_val, "p_test": p_test, "y_test": y_test}
    r = label_set_rows(s, [0.2], calibration=5, draws=3, seed=0)[0.2]
    assert r["calibrated"]["coverage"] == pytest.approx(0.5)
    assert r["calibrated"]["mean_set_size"] == pytest.approx(3 / 5)
    assert r["observed"]["coverage"] == pytest.approx(1.0)
    assert r["observed"]["mean_set_size"] == pytest.approx(1.0)
    assert r["oracle"]["coverage"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="≥ 1"):
        label_set_rows(s, [0.2], calibration=0, draws=1, seed=0)


def test_crisp_prior_scale_multiplies_the_true_priors_and_clips(splits):
    """The truth's column means (computed here) times the factor, clipped at 1. Bug caught: the
    factor applied to the estimate only, or not clipped."""
    from mlpl_lab.engine.train import fit

    truth = splits.train.labels.double().mean(0).float()
    for f in (0.5, 50.0):
        t = fit("crisp", splits.train, splits.val, splits.test, tiny_config(epochs=1), priors="true",
                warmup_epochs=0, prior_scale=f)
        assert torch.allclose(t.method.priors, (truth * f).clamp(max=1.0))
    from mlpl_lab.methods import build_method

    for bad in (0, -1.0, True, "2"):
        with pytest.raises(ValueError, match="prior_scale"):
            build_method("crisp", prior_scale=bad)


def test_cardinality_k_offset_shifts_k_with_its_floor_and_cap(splits):
    """Per image: k_i + offset (k_i from the true labels, computed here), never below the image's
    observed positives nor above the number of classes; max grain: K + offset. Bug caught: the
    offset ignored, an image told it has fewer labels than it shows, k beyond C."""
    from mlpl_lab.engine.train import fit

    truth_k = splits.train.labels.sum(1)
    shown = (splits.train.observed == 1).sum(1)
    C = splits.train.labels.shape[1]
    cfg = tiny_config(epochs=1)
    for off in (-1, 2, -100, 100):
        m = fit("cardinality", splits.train, splits.val, splits.test, cfg, grain="per_image", k_offset=off).method
        assert torch.equal(m.k, torch.maximum(truth_k + off, shown).clamp(0, C))
    mx = fit("cardinality", splits.train, splits.val, splits.test, cfg, k_offset=-1).method
    assert int(mx.k) == int(truth_k.max()) - 1
    from mlpl_lab.methods import build_method

    with pytest.raises(ValueError, match="k_offset"):
        build_method("cardinality", k_offset=0.5)


def test_the_panel_interpolates_in_log_factor_and_its_sets_follow_alpha():
    """gain_at(√2) lies halfway (in log2) between the points at 1 and 2: (2 + 0)/2 = 1. At a larger
    α the calibrated sets are no larger (the threshold's rank falls). Setting a slider recomputes
    the state (the pure update the sliders call)."""
    pytest.importorskip("ipywidgets")
    from mlpl_lab.viz.side_info_panel import SideInfoPanel

    g = np.random.default_rng(0)
    n, C = 300, 4
    y = (g.uniform(size=(n, C)) < 0.4).astype(int)
    p = np.clip(0.35 * y + g.uniform(0, 0.65, size=(n, C)), 0, 1)
    obs = np.where(y == 1, np.where(g.uniform(size=(n, C)) < 0.3, 1, -1), -1)
    s = {"p_val": p[:150], "y_val": y[:150], "obs_val": obs[:150], "p_test": p[150:], "y_test": y[150:]}
    panel = SideInfoPanel(_curve([0.5, 1.0, 2.0], [-1.0, 2.0, 0.0]), {"Crisp": s}, calibration=100)
    assert panel.gain_at(2 ** 0.5) == pytest.approx(1.0)
    assert panel.gain_at(0.5 * 2 ** 0.5) == pytest.approx(0.5)
    a = panel.compute(1.0, 0.05)["sets"]["Crisp"]
    b = panel.compute(1.0, 0.3)["sets"]["Crisp"]
    assert b["calibrated_size"] <= a["calibrated_size"]
    panel.alpha.value = 0.3
    assert panel.state["alpha"] == pytest.approx(0.3)
    assert panel.state["sets"]["Crisp"] == b
    with pytest.raises(ValueError, match="factor"):
        SideInfoPanel(_curve([0.5, 1.0, 2.0], [0.0, 1.0, 0.0]), {"Crisp": s}, factor=4.0)


def test_the_design_shares_07s_cells_and_declares_its_claims():
    """AN, EM and the oracle are the specs chapter 07's grid builds for the same cells (so no run is
    trained twice); every sweep point is the row's method with the knob set; the claims' ids are
    exactly the families' declared members."""
    from mlpl_lab.chapters import side_information as ch
    from mlpl_lab.protocol.recipes import spec_for

    d = ch.design("cpu")
    asked = ch.specs(d, lambda s: None)
    # oracle: the specs written out here (the registered method, no hyperparameter, uniform single
    # positive, the profile's length), not through the recipes the chapter calls; then 07's own cells
    for label, method in ((LABEL.oracle, "full"), (LABEL.an, "an"), (LABEL.em, "em")):
        assert [s.key for s in asked.now[ch.BASELINES][label]] == \
            [d.profile.spec(method, {}, "single_positive", {}, seed=s).key for s in d.seeds]
        assert [s.key for s in asked.now[ch.BASELINES][label]] == \
            [spec_for(d.profile, label, "single positive", s).key for s in d.seeds]
    half = asked.now[ch.PRIOR_ERROR][f"{LABEL.crisp_true} × 0.5"][0]
    assert half.method == "crisp" and half.method_params == {"priors": "true", "prior_scale": 0.5}
    plus = asked.now[ch.CARDINALITY_ERROR][f"{LABEL.cardinality_per_image} +1"][0]
    assert plus.method_params == {"grain": "per_image", "k_offset": 1}
    assert len({s.seed for fam in asked.now.values() for runs in fam.values() for s in runs}) == len(d.seeds)
    declared = {i for ids in d.family_members.values() for i in ids}
    assert declared and all(f.size == len(d.family_members[name]) for name, f in d.families.items())


def test_the_default_warm_up_is_a_sixth_of_the_run():
    """54 epochs → 9 (54 / 6), 2 → 1 (never zero), 1 → 1, a given length as given. Bug caught: the
    default still one epoch, a zero-length warm-up on short runs."""
    from mlpl_lab.methods import build_method
    from mlpl_lab.methods.side_information import warmup_length

    assert [warmup_length(None, e) for e in (54, 72, 2, 1)] == [9, 12, 1, 1]
    assert warmup_length(0, 54) == 0 and warmup_length(3, 54) == 3
    assert build_method("crisp").warmup_epochs is None
    assert build_method("cardinality").warmup_epochs is None


def test_the_findings_read_the_tables_they_are_given():
    """A sweep that gains 2 at the truth and vanishes at 0.6 below; one that gains nothing; label sets
    where one method's calibrated coverage misses 1 − α − 0.02 (0.85 < 0.88). Bug caught: a typed
    outcome, the sides swapped, 'every method' said when one misses the target."""
    import pandas as pd

    from mlpl_lab.chapters.side_information import findings

    vanish = pd.DataFrame({"gain at the truth": [2.0, -0.5], "vanishes below at": [0.6, 0.0],
                           "vanishes above at": [None, 0.0], "sweep": ["0.5 … 2", "-1 … 1"]},
                          index=["A: prior factor", "B: k offset"])
    rows = []
    for m, cov in (("X", 0.91), ("Y", 0.85)):
        rows += [{"method": m, "α": 0.1, "thresholds": "calibrated", "coverage": cov, "mean_set_size": 3.0},
                 {"method": m, "α": 0.1, "thresholds": "observed", "coverage": 0.7, "mean_set_size": 2.0}]
    sets = pd.DataFrame(rows).set_index(["method", "α", "thresholds"])
    text = findings(vanish, sets)
    assert "*A: prior factor*: +2.00 points over AN at the truth; below it the gain reaches 0 at 0.60, " \
           "above it the gain does not vanish within the sweep" in text
    assert "*B: k offset*: no gain over AN even with the side information right (-0.50" in text
    assert "cover 0.850–0.910 of the test positives" in text and "not every method within 0.02" in text
    assert "observed-label thresholds cover 0.700–0.700 over 2 method(s)" in text
