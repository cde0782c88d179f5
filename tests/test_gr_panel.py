"""The GR widget panel, driven headlessly by setting slider values."""
from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from mlpl_lab.viz.gr_panel import GRPanel  # noqa: E402


@pytest.fixture
def panel():
    return GRPanel(num_epochs=8, n_points=41)


def test_initial_state_is_the_method_defaults(panel):
    s = panel.state
    assert (s["w"], s["b"], s["mu"], s["sigma"]) == (0.0, -2.0, 0.5, 2.0)
    # w = 0: k̂ is the constant σ(b) (Assumption 1)
    assert np.allclose(s["k_hat"], 1 / (1 + np.exp(2.0)))
    assert all(np.isfinite(s[k]).all() for k in ("k_hat", "v", "loss", "grad"))


def test_epoch_slider_moves_the_schedule(panel):
    panel.sliders["w_T"].value = 10.0
    panel.sliders["epoch"].value = 4
    s = panel.state
    assert s["w"] == pytest.approx(10.0 * 4 / 7) and s["mu"] == pytest.approx(0.5 + 0.3 * 4 / 7)
    assert np.all(np.diff(s["k_hat"]) > 0)  # w > 0: k̂ increases with p (Assumption 2)
    assert panel.redraws == 2


def test_sliders_change_the_curves(panel):
    before = {k: np.array(v) for k, v in panel.state.items() if isinstance(v, np.ndarray)}
    panel.sliders["q3"].value = 0.2
    assert not np.allclose(before["loss"], panel.state["loss"])
    assert np.allclose(before["k_hat"], panel.state["k_hat"])  # q3 does not touch k̂
    panel.sliders["epoch"].value = 7
    panel.sliders["sigma_T"].value = 0.1
    v = panel.state["v"]
    p = panel.state["p"]
    assert p[np.argmax(v)] == pytest.approx(panel.state["mu"], abs=0.03)  # v peaks at μ


def test_compute_is_pure_and_matches_the_registered_loss(panel):
    import torch

    from mlpl_lab import losses

    a = panel.compute(q2=0.01, q3=1.0, w_T=2.0, b_T=-2.0, mu_T=0.8, sigma_T=0.5, epoch=3)
    b = panel.compute(q2=0.01, q3=1.0, w_T=2.0, b_T=-2.0, mu_T=0.8, sigma_T=0.5, epoch=3)
    assert all(np.array_equal(a[k], b[k]) for k in ("loss", "grad"))
    z = torch.as_tensor(panel.logits).view(-1, 1)
    want = losses.get("gr")(z, -torch.ones_like(z, dtype=torch.long), w=a["w"], b=a["b"],
                            mu=a["mu"], sigma=a["sigma"], reduction="none").flatten().numpy()
    assert np.allclose(a["loss"], want)
    assert panel.redraws == 0  # compute does not redraw


def test_bad_arguments():
    with pytest.raises(ValueError, match="schedule values"):
        GRPanel(w_end=3)
    with pytest.raises(ValueError, match="num_epochs"):
        GRPanel(num_epochs=0)
