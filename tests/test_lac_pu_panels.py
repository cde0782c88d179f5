"""The LAC and PU-MLC widgets, headless: set ``.value`` and check the pure state against
oracles written here (a naive loop over entries, the per-class formula)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from mlpl_lab.analysis.lac_diagnostics import plc_breakdown
from mlpl_lab.data import make_splits
from mlpl_lab.engine.train import TrainConfig, fit
from mlpl_lab.viz.pu_panel import PUPanel


def test_plc_breakdown_against_a_naive_loop():
    g = torch.Generator().manual_seed(0)
    p = torch.rand(30, 7, generator=g)
    obs = torch.randint(-1, 2, (30, 7), generator=g)
    y = torch.randint(0, 2, (30, 7), generator=g)
    b = plc_breakdown(p, obs, y, 0.7)
    counts = {}
    for i in range(30):
        for j in range(7):
            if obs[i, j] != -1:
                continue
            kind = "pseudo_pos" if p[i, j] >= 0.7 else "pseudo_neg" if p[i, j] <= 0.3 + 1e-12 else "ignored"
            key = f"{kind}_{'present' if y[i, j] == 1 else 'absent'}"
            counts[key] = counts.get(key, 0) + 1
    # every one of the six groups, zeros included (a group the loop never met must be 0 there too)
    groups = [f"{g}_{t}" for g in ("pseudo_pos", "pseudo_neg", "ignored") for t in ("present", "absent")]
    assert all(counts.get(k, 0) > 0 for k in groups), "the draw must fill every group"
    for k in groups:
        assert b[k] == counts.get(k, 0), k
    hidden = sum(1 for i in range(30) for j in range(7) if obs[i, j] == -1 and y[i, j] == 1)
    unknown = sum(1 for i in range(30) for j in range(7) if obs[i, j] == -1)
    n_pos = counts["pseudo_pos_present"] + counts["pseudo_pos_absent"]
    n_neg = counts["pseudo_neg_present"] + counts["pseudo_neg_absent"]
    assert b["pos_recall"] == pytest.approx(counts["pseudo_pos_present"] / hidden)
    assert b["pos_precision"] == pytest.approx(counts["pseudo_pos_present"] / n_pos)
    assert b["neg_precision"] == pytest.approx(counts["pseudo_neg_absent"] / n_neg)
    assert b["coverage"] == pytest.approx((n_pos + n_neg) / unknown)
    assert (b["unknown"], b["hidden"]) == (unknown, hidden)
    with pytest.raises(ValueError, match="delta"):
        plc_breakdown(p, obs, y, 0.3)


@pytest.fixture(scope="module")
def lac_model():
    s = make_splits(n_train=96, n_val=48, n_test=48, seed=0, image_size=16)
    cfg = TrainConfig(epochs=1, batch_size=32, lr=3e-3, model="small_cnn",
                      model_kwargs={"width": 4, "head": "label_query"}, progress=False)
    return s, fit("lac_plc", s.train, s.val, s.test, cfg).method


def test_lac_panel_updates_headlessly(lac_model):
    from mlpl_lab.viz.lac_panel import LACPanel

    s, method = lac_model
    panel = LACPanel(method, s.train, indices=range(40), delta=0.6)
    first = dict(panel.state["breakdown"])
    want = plc_breakdown(panel.probs, s.train.observed[:40], s.train.labels[:40], 0.95)
    panel.delta.value = 0.95
    assert panel.state["breakdown"] == pytest.approx(want, nan_ok=True)
    assert panel.state["breakdown"]["coverage"] <= first["coverage"]  # a stricter δ selects fewer
    assert "δ = 0.95" in panel.readout.value
    panel.image.value = 3
    assert panel.class_index.value in [c for _, c in panel.class_index.options]
    assert panel.state["map"].shape == (16, 16)
    cls = [c for _, c in panel.class_index.options][-1]
    panel.class_index.value = cls
    assert np.allclose(panel.state["map"], panel.maps[3, cls].numpy())


def test_pu_panel_matches_the_per_class_formula():
    g = torch.Generator().manual_seed(2)
    logits = torch.randn(16, 5, generator=g, dtype=torch.float64) * 2
    observed = torch.full((16, 5), -1)
    observed[:6, 0] = 1
    observed[:1, 3] = 1
    panel = PUPanel(logits=logits, observed=observed, alpha=1.0, gamma=0.55)
    panel.gamma.value = 1.5
    panel.alpha.value = math.log10(0.5)
    st = panel.state
    for k, c in enumerate(panel.order.tolist()):
        s = logits[:, c]
        T = min(0.5 * float(s.std(unbiased=False)), 1.0)
        q = torch.sigmoid(s / T)
        w = float(torch.sigmoid(s).mean()) ** 1.5
        pos = observed[:, c] == 1
        want = w * math.log(float(q.mean())) - (float(torch.log(q[pos]).mean()) if pos.any() else 0.0)
        assert st["temperature"][k] == pytest.approx(T)
        assert st["weight"][k] == pytest.approx(w)
        assert st["loss"][k] == pytest.approx(want, rel=1e-6)
    assert list(st["positives"]) == sorted(st["positives"])  # rare classes first
    panel.alpha.value = -1.05  # far left: no temperature
    assert np.all(panel.state["temperature"] == 1.0)
    assert "γ = 1.50" in panel.readout.value
