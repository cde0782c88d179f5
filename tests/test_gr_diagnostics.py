"""GR chapter diagnostics (FN rate per bucket, Wasserstein separation, the tracker) and plots."""
from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from scipy.stats import wasserstein_distance  # noqa: E402

from mlpl_lab.analysis import gr_diagnostics as D  # noqa: E402
from mlpl_lab.analysis.tables import training_seconds  # noqa: E402
from mlpl_lab.chapters import gr as chapter  # noqa: E402
from mlpl_lab.chapters.gr import ablation_table, expected_positives  # noqa: E402
from mlpl_lab.methods import METHODS, build_method  # noqa: E402
from mlpl_lab.engine.train import TrainConfig, fit  # noqa: E402
from mlpl_lab.viz import gr_plots  # noqa: E402


@pytest.fixture(scope="module")
def tiny_splits():
    from mlpl_lab.data import make_splits

    return make_splits(n_train=64, n_val=32, n_test=32, seed=0, image_size=16)


def test_fn_rate_by_confidence_counts_unknown_entries_only():
    probs = torch.tensor([[0.05, 0.15, 0.95], [0.07, 0.92, 0.5], [0.12, 0.97, 0.99]])
    observed = torch.tensor([[1, -1, -1], [-1, -1, 0], [-1, -1, -1]])
    truth = torch.tensor([[1, 0, 1], [0, 1, 0], [1, 1, 0]])
    out = D.fn_rate_by_confidence(probs, observed, truth, bins=2)
    # unknown entries below 0.5: 0.15 (TN), 0.07 (TN), 0.12 (FN); above: 0.95 (FN), 0.92 (FN),
    # 0.97 (FN), 0.99 (TN); the observed 0.05 and 0.5 are excluded
    assert out["count"].tolist() == [3, 4]
    assert out["rate"] == pytest.approx([1 / 3, 3 / 4])
    empty = D.fn_rate_by_confidence(probs, observed, truth, bins=10)
    assert np.isnan(empty["rate"][4])


def test_separation_is_w1_between_hidden_positives_and_true_negatives():
    g = torch.Generator().manual_seed(0)
    probs = torch.rand(50, 6, generator=g)
    truth = (torch.rand(50, 6, generator=g) < 0.3).long()
    observed = torch.where(torch.rand(50, 6, generator=g) < 0.2, truth, -torch.ones_like(truth))
    unk = observed == -1
    want = wasserstein_distance(probs[unk & (truth == 1)].numpy(), probs[unk & (truth == 0)].numpy())
    assert D.separation(probs, observed, truth) == pytest.approx(want)
    assert np.isnan(D.separation(probs, truth, truth))  # nothing unknown


def test_eq6_and_label_frequency():
    assert D.k_from_assumption([0.0, 1.0], 0.4).tolist() == pytest.approx([0.0, 1.0])
    # interior points by hand: k = (1 - a) p / (1 - a p); a = 0.4, p = 0.5 -> 0.3 / 0.8
    assert D.k_from_assumption([0.5, 0.25], 0.4).tolist() == pytest.approx([0.375, 0.15 / 0.9])
    obs = torch.tensor([[1, -1], [-1, 1]])
    truth = torch.tensor([[1, 1], [1, 1]])
    assert D.label_frequency(obs, truth) == pytest.approx(0.5)


def test_separation_probe_records_without_changing_training(tiny_splits):
    """The loop's separation probe: same training with and without it; its values equal the
    W1 formula on the probed subset (an independent scipy oracle)."""
    cfg = dict(epochs=2, batch_size=32, model="small_cnn", model_kwargs={"width": 8}, progress=False)
    plain = fit("gr", tiny_splits.train, tiny_splits.val, tiny_splits.test, TrainConfig(**cfg))
    probed = fit("gr", tiny_splits.train, tiny_splits.val, tiny_splits.test,
                 TrainConfig(**cfg, probes=("separation",), probe_size=48))
    assert [r["test_mAP"] for r in probed.history] == [r["test_mAP"] for r in plain.history]
    assert "train_separation" not in plain.history[0]
    curve = [probed.initial["separation"]] + [r["train_separation"] for r in probed.history]
    assert len(curve) == 3 and all(np.isfinite(curve))
    from mlpl_lab.engine.train import predict_dataset

    tr = tiny_splits.train
    probs = predict_dataset(probed.method, tr, torch.device("cpu"))[:48]
    obs, y = tr.observed[:48], tr.labels[:48]
    unk = obs == -1
    want = wasserstein_distance(probs[unk & (y == 1)].numpy(), probs[unk & (y == 0)].numpy())
    best = probed.history[probed.best_epoch]["train_separation"]
    assert best == pytest.approx(want, rel=1e-5)  # the restored best-epoch weights


def test_chapter_method_lists(tiny_splits):
    for profile in ("smoke", "cpu", "gpu"):
        methods = chapter.methods(profile, tiny_splits)
        for spec in methods.values():
            name, hp = (spec, {}) if isinstance(spec, str) else spec
            build_method(name, **hp)
        assert "GR" in methods and "AN" in methods
        assert all(chapter.ABLATION_LABELS[r] in METHODS for r in chapter.design(profile).ablation_rows)
        assert set(methods) | set(chapter.left_out(profile)) == set(chapter.ZOO_ALL)
    assert len(chapter.methods("gpu", tiny_splits)) == 12
    assert expected_positives(tiny_splits) == pytest.approx(float(tiny_splits.val.labels.sum(1).float().mean()))


def test_ablation_table_marks_components():
    class R:
        def __init__(self, v):
            self.best = {"test_mAP": v}
            self.history = [{"seconds": v / 10}, {"seconds": 1.0}]

    table = ablation_table({"k̂": [R(70.0)]}, {"AN": [R(60.0)], "GR": [R(80.0)]})
    assert list(table.index) == ["AN (all off)", "k̂", "GR (all on)"]
    assert table.loc["k̂", "k̂(p;β)"] == "✓" and table.loc["k̂", "v(p;α)"] == "✗"
    assert table["mAP"].tolist() == [60.0, 70.0, 80.0]
    assert training_seconds({"a": [R(10.0), R(30.0)]}) == {"a": pytest.approx(3.0)}


def test_plot_curves_come_from_the_registered_losses():
    l3 = gr_plots.l3_curves(q3s=(1.0,))
    p = 1 / (1 + np.exp(-l3["q3 = 1"]["logit"]))
    assert np.allclose(l3["q3 = 1"]["loss"], p)  # q3 = 1: L3 = MAE = p
    curves = gr_plots.unknown_gradient_curves(w0=0.0, b0=-2.0)
    first = curves["GR, β(0) = (0, -2)"]
    p = 1 / (1 + np.exp(-first["logit"]))
    k = 1 / (1 + np.exp(2.0))
    assert np.allclose(first["grad"], (1 - k) * p * (1 - p) - k * p ** 0.01 * (1 - p))  # Eq. 18
    assert np.allclose(curves["AN"]["grad"], p)


def test_plots_draw(tiny_splits):
    g = torch.Generator().manual_seed(0)
    probs = torch.rand(64, 20, generator=g)
    check = {"start": D.fn_rate_by_confidence(probs, tiny_splits.train.observed, tiny_splits.train.labels),
             "end": D.fn_rate_by_confidence(probs ** 2, tiny_splits.train.observed, tiny_splits.train.labels)}
    gr_plots.plot_l3_curves()
    gr_plots.plot_unknown_gradients()
    axes = gr_plots.plot_assumption_check(check, a=0.5)
    assert len(axes) >= 2 and all(ax.has_data() for ax in axes[:2])
    ax = gr_plots.plot_separation({"AN": [0.1, 0.2, 0.3]})
    assert ax.lines[0].get_ydata().tolist() == [0.1, 0.2, 0.3]
    hidden, neg = D.unknown_confidences(probs, tiny_splits.train.observed, tiny_splits.train.labels)
    axes = gr_plots.plot_unknown_histograms({"AN": (hidden, neg)})
    assert len(axes[0].patches) > 0
    plt.close("all")


def test_fig1b_sentence_reads_the_sign_changes_of_eq18():
    """Oracle: Eq. 18 by hand. With w = 0 (β(0) = (0, -2)), k̂ = σ(-2) and q3 = 1,
    g(p) = (1 - p)[(1 - k̂) p - k̂ p^q2], zero where p^(1-q2) = k̂ / (1 - k̂); at β(T) = (10, -8)
    the root of (1 - k̂(p)) p = k̂(p) p^q2 is found by bisection on the closed form."""
    from scipy.optimize import brentq

    k0 = 1 / (1 + np.exp(2.0))
    start = (k0 / (1 - k0)) ** (1 / (1 - 0.01))

    def g_end(p):
        k = 1 / (1 + np.exp(-(10 * p - 8)))
        return (1 - k) * (1 - p) * p - k * p ** 0.01 * (1 - p)

    end = brentq(g_end, 0.3, 0.99)
    text = chapter.fig1b_markdown(w_T=10.0, b_T=-8.0)
    assert f"negative only below p ≈ {start:.2f}" in text, text
    assert f"negative above p ≈ {end:.2f}" in text, text
    assert "every unknown label" not in text


def test_separation_sentence_states_the_record():
    """Bug caught: typed prose ("AN's training destroys the separation") against a record in which
    AN's W1 rises; the sentence is the record's first, last and peak values."""
    text = chapter.separation_markdown({"AN": [0.016, 0.2, 0.15], "GR": [0.016, 0.1, 0.3]})
    assert "AN from 0.016 before training to 0.150 after the last epoch (highest, 0.200, after epoch 1)" in text
    assert "GR from 0.016 before training to 0.300 after the last epoch" in text and "GR from 0.016 before training to 0.300 after the last epoch (" not in text


def test_left_out_rows_say_where_07_reports_them():
    from mlpl_lab.chapters import benchmark

    in_07 = {row for _, row in benchmark.design("cpu").cells()}
    assert set(benchmark.trained_rows("cpu")) == in_07
    text = chapter.left_out_text("cpu", benchmark.trained_rows("cpu"))
    out = chapter.left_out("cpu")
    assert out and all(m in text for m in out)
    assert ("chapter 07's benchmark trains" in text) == any(m in in_07 for m in out)
    assert "not trained under this profile" not in text
