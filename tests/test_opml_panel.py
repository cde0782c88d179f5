"""The OPML widget (driven headlessly) and the chapter's gradient / confidence plots."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from mlpl_lab.analysis.confidence import confidence_summary, positive_confidences
from mlpl_lab.viz.opml_panel import OPMLPanel
from mlpl_lab.viz.opml_plots import gradient_comparison, negatives_gradient_sum, row_gradients

GRID = np.linspace(-5, 5, 21)


@pytest.fixture()
def panel():
    return OPMLPanel(grid=GRID, n_unknown=6, show=False)


def test_zlpr_positive_gradient_equals_bce_and_sliders_recompute(panel):
    st = panel.state
    np.testing.assert_allclose(st["pos_opml"], st["pos_bce"], atol=1e-12)     # Eq. 9 at α = β = 1
    assert np.all(st["unk_opml"] < st["unk_bce"])
    panel.b.value = 1.0                                                       # β = e: weaker positive push
    assert np.all(np.abs(panel.state["pos_opml"]) < np.abs(st["pos_bce"]))
    before = panel.state["unk_opml"].copy()
    panel.a.value = 2.0                                                       # α = e²: weaker negative push
    assert np.all(panel.state["unk_opml"] < before)
    np.testing.assert_allclose(panel.state["unk_bce"], st["unk_bce"])         # BCE does not move


def test_lambda_slider_changes_only_the_regularised_curve(panel):
    panel.log10_lambda.value = -5.5                                           # λ = 0
    np.testing.assert_allclose(panel.state["hidden_opml_hr"], panel.state["hidden_opml"], atol=1e-12)
    panel.log10_lambda.value = -1.0
    assert float(panel.state["lambda"]) == pytest.approx(0.1)
    assert np.max(np.abs(panel.state["hidden_opml_hr"] - panel.state["hidden_opml"])) > 1e-3
    panel.n_unknown.value = 3
    assert len(panel.state["pos_opml"]) == len(GRID)


def test_compute_is_pure(panel):
    a = panel.compute(a=0.5, b=-0.5, log10_lambda=-2, n_unknown=4)
    b = panel.compute(a=0.5, b=-0.5, log10_lambda=-2, n_unknown=4)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


def test_gradient_comparison_claims():
    curves = gradient_comparison(n_unknown=9, grid=GRID)
    (bce_p, opml_p) = curves["positive"].values()
    np.testing.assert_allclose(opml_p["grad"], bce_p["grad"], atol=1e-12)
    (bce_s, opml_s) = curves["sum"].values()
    assert np.all(opml_s["grad"] < 1) and np.all(opml_s["grad"] > 0)
    np.testing.assert_allclose(bce_s["grad"], 9 / (1 + np.exp(-GRID)), rtol=1e-10)   # 9 σ(z)
    assert negatives_gradient_sum("opml", [0.0], n_unknown=3, a=1.0)[0] == pytest.approx(3 / (np.e + 3))
    g = row_gradients([2.0, 1.0, -1.0, 0.5], [1, -1, -1, -1])
    bce, opml = g.values()
    assert opml[1:].sum() < 1 < bce[1:].sum()


def test_positive_confidences():
    probs = torch.tensor([[0.9, 0.2], [0.1, 0.6]])
    truth = torch.tensor([[1, 1], [0, 1]])
    observed = torch.tensor([[1, -1], [-1, 1]])
    assert sorted(positive_confidences(probs, truth).tolist()) == pytest.approx([0.2, 0.6, 0.9])
    assert positive_confidences(probs, truth, observed, "hidden").tolist() == pytest.approx([0.2])
    s = confidence_summary({"m": probs}, truth, observed, "hidden")["m"]
    assert s["n"] == 1 and s["share_below_0.1"] == 0
    with pytest.raises(ValueError, match="observed"):
        positive_confidences(probs, truth, which="hidden")
