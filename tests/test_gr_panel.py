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


def test_initial_state_is_the_method_defaults_at_the_last_epoch(panel):
    """The panel opens at t = T - 1, where the paper's schedule reaches the end values of the
    ``gr`` method (w, b, μ, σ) = (2, -2, 0.8, 0.5): every final-value slider acts there."""
    s = panel.state
    assert panel.sliders["epoch"].value == 7
    assert (s["w"], s["b"], s["mu"], s["sigma"]) == (2.0, -2.0, 0.8, 0.5)
    p = s["p"]
    assert np.allclose(s["k_hat"], 1 / (1 + np.exp(-(2.0 * p - 2.0))))  # σ(w p + b), by hand
    assert all(np.isfinite(s[k]).all() for k in ("k_hat", "v", "loss", "grad"))
    assert panel.inert() == [] and "start value" not in panel.readout.value


@pytest.mark.parametrize("name, value, curve", [("q2", 0.2, "loss"), ("q3", 0.3, "loss"), ("w_T", 8.0, "k_hat"),
                                                ("b_T", -6.0, "k_hat"), ("mu_T", 0.3, "v"),
                                                ("sigma_T", 0.2, "v"), ("epoch", 3, "k_hat")])
def test_every_slider_moves_the_plot_where_the_panel_opens(panel, name, value, curve):
    """Bug caught: a panel opening at t = 0, where the final w, b, μ, σ do nothing."""
    before = np.array(panel.state[curve])
    panel.sliders[name].value = value
    assert not np.allclose(before, panel.state[curve]), name


def test_at_the_first_epoch_the_readout_says_which_sliders_cannot_act(panel):
    """Paper schedule, t = 0: the start values (0, -2, 0.5, 2) whatever the final ones, so the
    four final-value sliders are inert there, and the readout says so."""
    panel.sliders["epoch"].value = 0
    s = dict(panel.state)
    assert (s["w"], s["b"], s["mu"], s["sigma"]) == (0.0, -2.0, 0.5, 2.0)
    panel.sliders["w_T"].value = 12.0
    assert np.allclose(s["k_hat"], panel.state["k_hat"])
    assert panel.inert() == ["w_T", "b_T", "mu_T", "sigma_T"]
    assert "start value of w, b, μ, σ" in panel.readout.value and "last epoch" in panel.readout.value


@pytest.mark.parametrize("kwargs, shown", [({"q2": 5}, "q2 = 5 is outside its slider's range [0.001, 1]"),
                                           ({"q3": 0.0}, "q3 = 0.0 is outside its slider's range [0.01, 2]"),
                                           ({"w_T": 25.0}, "w_T = 25.0 is outside its slider's range [0, 20]"),
                                           ({"sigma_T": float("nan")}, "[0.05, 3]"),
                                           ({"epoch": 8}, "epoch = 8 is outside its slider's range [0, 7]")])
def test_a_value_out_of_a_slider_range_is_an_error_not_a_clamp(kwargs, shown):
    with pytest.raises(ValueError) as err:
        GRPanel(num_epochs=8, **kwargs)
    assert shown in str(err.value) and "GRPanel" in str(err.value), str(err.value)


def test_the_panel_shows_the_chapter_symbols(panel):
    labels = [s.description for s in panel.sliders.values()]
    assert {"β: w (final)", "β: b (final)", "α: μ (final)", "α: σ (final)", "q₂", "q₃"} <= set(labels)
    assert "β = (w, b) = (2.00, -2.00)" in panel.readout.value and "α = (μ, σ) = (0.80, 0.50)" in panel.readout.value


def test_epoch_slider_moves_the_schedule(panel):
    panel.sliders["epoch"].value = 4
    panel.sliders["w_T"].value = 10.0
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
