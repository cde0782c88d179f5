"""The CLS widget and plots, driven headlessly (sliders fire .observe without a front end)."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from mlpl_lab.data import make_splits  # noqa: E402
from mlpl_lab.methods import build_method  # noqa: E402
from mlpl_lab.methods.selection import co_label_selection, selection_frame  # noqa: E402
from mlpl_lab.engine.train import TrainConfig, fit  # noqa: E402
from mlpl_lab.viz.cls_panel import CLSPanel  # noqa: E402
from mlpl_lab.viz.cls_plots import (CATEGORIES, plot_schedules, plot_selection_batch,
                                    plot_selection_curves, selection_categories)


@pytest.fixture(scope="module")
def trained():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    sp = make_splits(n_train=64, n_val=32, n_test=32, seed=5, regime="single_positive")
    cfg = TrainConfig(epochs=2, batch_size=32, lr=2e-3, model="small_cnn", model_kwargs={"width": 4},
                      progress=False)
    cls = fit(build_method("cls", E_k=1), sp.train, sp.val, sp.test, cfg)
    cot = fit(build_method("coteaching", T_k=1), sp.train, sp.val, sp.test, cfg)
    torch.set_num_threads(n)
    yield sp, cls, cot
    import matplotlib.pyplot as plt

    plt.close("all")


def test_schedule_only_panel_follows_the_sliders():
    panel = CLSPanel(tau_h=0.02, tau_l=0.1, E_k=10, epochs=20)
    assert panel.state["R_h"][0] == 1.0 and panel.state["R_h"][-1] == pytest.approx(0.98)
    panel.sliders["tau_h"].value = 0.05
    assert panel.state["R_h"][-1] == pytest.approx(0.95)
    panel.sliders["E_k"].value = 2
    np.testing.assert_allclose(panel.state["R_l"][:4], [1.0, 0.95, 0.9, 0.9])
    assert "selection_f" not in panel.state


def test_panel_with_a_trained_pair_removes_more_with_a_larger_tau_h(trained):
    sp, cls, _ = trained
    panel = CLSPanel(cls.method, sp.train, indices=list(range(32)), tau_h=0.01, tau_l=0.0, E_k=1,
                     epochs=2)
    before = panel.state["counts_f"]["removed"]
    panel.sliders["tau_h"].value = 0.1
    after = panel.state["counts_f"]["removed"]
    assert after > before
    n = panel.state["counts_f"]["unknown"]
    assert after == n - int(np.floor(0.9 * n + 1e-9))
    panel.sliders["epoch"].value = 1  # the first training epoch uses R(0) = 1: nothing removed
    assert panel.state["counts_f"]["removed"] == 0 and panel.state["counts_g"]["removed_low"] == 0
    assert panel.figure is not None


def test_the_slider_the_marker_and_the_readout_name_the_same_epoch():
    """Bug caught: the slider said epoch 53 (0-based, completed epochs) where the readout said 54.
    Oracle by hand: over 54 epochs with tau_h = 0.02, E_k = 10, training epoch 54 uses R(53) =
    1 - 0.02 = 0.98 and training epoch 3 uses R(2) = 1 - 2/10 * 0.02 = 0.996."""
    import re

    panel = CLSPanel(tau_h=0.02, tau_l=0.1, E_k=10, epochs=54)
    slider = panel.sliders["epoch"]
    assert (slider.min, slider.max, slider.value) == (1, 54, 54)
    for epoch, r_h in ((54, 0.98), (3, 0.996)):
        slider.value = epoch
        assert re.search(r"training epoch (\d+)</b>", panel.readout.value).group(1) == str(epoch)
        assert f"(e = {epoch - 1} completed)" in panel.readout.value
        assert panel.state["R_h_now"] == pytest.approx(r_h)
        marker = [line for line in panel.figure.axes[0].lines if line.get_color() == "r"]
        assert marker and marker[0].get_xdata()[0] == epoch


def test_the_panel_title_counts_the_rows_it_draws(trained):
    """The batch panel draws ``max_rows`` of the batch: its title counts those rows, as its legend
    does (issue 48: a title counted 8 removed labels of 32 rows while the legend, of the 24 drawn
    rows, counted 6)."""
    import re

    sp, cls, _ = trained
    panel = CLSPanel(cls.method, sp.train, indices=list(range(32)), tau_h=0.1, tau_l=0.2, E_k=1,
                     epochs=2, max_rows=5)
    ax = panel.figure.axes[1]
    legend = {t.get_text().rsplit(" (", 1)[0]: int(t.get_text().rsplit("(", 1)[1].rstrip(")"))
              for t in ax.get_legend().get_texts()}
    high = legend.get("removed high-loss (hidden positive: right)", 0) + \
        legend.get("removed high-loss (true negative: wasted)", 0)
    low = legend.get("removed low-loss (true negative)", 0) + legend.get("removed low-loss (hidden positive)", 0)
    title = ax.get_title()
    assert "the first 5 of 32 images" in title
    assert re.search(r"removed (\d+) high-loss", title).group(1) == str(high)
    assert re.search(r"(\d+) low-loss", title).group(1) == str(low)
    # the same counts from the selection's first 5 rows
    sel = panel.state["selection_f"]
    assert high == int(sel.removed_high[:5].sum()) and low == int(sel.removed_low[:5].sum())
    assert int(sel.removed_high.sum()) + int(sel.removed_low.sum()) > high + low  # the batch holds more


def test_panel_rejects_half_specified_batches():
    with pytest.raises(ValueError, match="both method and dataset"):
        CLSPanel(method=object())


def test_selection_categories_cross_status_with_truth():
    observed = torch.tensor([[1, -1, -1, -1, 0]])
    truth = torch.tensor([[1, 1, 0, 1, 0]])
    own = torch.tensor([[0.0, 0.5, 0.01, 0.6, 0.0]])
    peer = torch.tensor([[0.0, 5.0, 0.0, 0.0, 0.0]])
    sel = co_label_selection(own, peer, observed, R_h=2 / 3, R_l=0.5)
    cats = selection_categories(sel, observed, truth)
    names = [CATEGORIES[c][0] for c in cats[0]]
    assert names == ["observed positive", "removed high-loss (hidden positive: right)",
                     "removed low-loss (true negative)", "kept negative (HIDDEN positive)",
                     "observed negative"]
    ax = plot_selection_batch(sel, observed, truth)
    assert ax.get_legend() is not None


def test_selection_frame_and_curves(trained):
    _, cls, cot = trained
    frame = selection_frame({"CLS": [cls], "Co-teaching": [cot]})
    assert set(frame["method"]) == {"CLS", "Co-teaching"}
    assert {"precision", "recall", "epoch", "network"} <= set(frame.columns)
    axes = plot_selection_curves(frame)
    assert len(axes[0].lines) == 2
    ax = plot_schedules({"R_h": [1, 0.99, 0.98]}, E_k=2)
    assert len(ax.lines) >= 1
    with pytest.raises(ValueError, match="selection log"):
        selection_frame({"AN": [fit_stub()]})


def fit_stub():
    class R:
        history = [{"epoch": 1, "loss": 0.5, "val_mAP": 10.0}]  # no selection diagnostics
    return R()
