"""GR Loss: schedules, Table 1 instantiations, Table 3 ablations, the method's hooks."""
from __future__ import annotations

import math

import pytest
import torch

from mlpl_lab import losses
from mlpl_lab.chapters.gr import table1
from mlpl_lab.losses.gr import gr_schedule
from mlpl_lab.methods import build_method
from mlpl_lab.methods.gr import ABLATIONS, GRMethod


@pytest.fixture(scope="module")
def tiny_splits():
    from mlpl_lab.data import make_splits

    return make_splits(n_train=64, n_val=32, n_test=32, seed=0, image_size=16)


def batch(n=9, c=7, seed=0, scale=3.0):
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(n, c, generator=g, dtype=torch.float64) * scale
    y = -torch.ones(n, c, dtype=torch.long)
    y[torch.arange(n), torch.randint(0, c, (n,), generator=g)] = 1
    y[torch.rand(n, c, generator=g) < 0.15] = 0
    y[0] = torch.tensor([1, 0, 0, 0, 0, 0, 0])[:c]  # a fully observed row
    y[1] = -1  # an all-unknown row
    return z, y


# ---------------------------------------------------------------------------------------
# the loss
# ---------------------------------------------------------------------------------------
def test_gr_entries_follow_eq_4_5_7_11_14():
    z = torch.tensor([[2.0, -1.0, 0.5]], dtype=torch.float64)
    y = torch.tensor([[1, -1, 0]])
    w, b, mu, s, q2, q3 = 2.0, -1.0, 0.6, 0.5, 0.1, 0.9
    m = losses.get("gr")(z, y, w=w, b=b, mu=mu, sigma=s, q2=q2, q3=q3, reduction="none")
    p = [1 / (1 + math.exp(-v)) for v in (2.0, -1.0, 0.5)]
    assert math.isclose(m[0, 0].item(), -math.log(p[0]), rel_tol=1e-12)
    k = 1 / (1 + math.exp(-(w * p[1] + b)))
    v = math.exp(-(p[1] - mu) ** 2 / (2 * s * s))
    unk = v * (k * (1 - p[1] ** q2) / q2 + (1 - k) * (1 - (1 - p[1]) ** q3) / q3)
    assert math.isclose(m[0, 1].item(), unk, rel_tol=1e-12)
    # observed negative: L3 with k̂ = 0 and v = 1
    assert math.isclose(m[0, 2].item(), (1 - (1 - p[2]) ** q3) / q3, rel_tol=1e-12)


def test_observed_negative_options():
    """``neg``: L3 (default), plain BCE, or nothing with zero gradient (the official GR_loss,
    which writes no loss for Cole's −1 = observed negative). Positives and unknowns unchanged."""
    z = torch.tensor([[2.0, -1.0, 0.5, 3.0]], dtype=torch.float64)
    y = torch.tensor([[1, -1, 0, 0]])
    p = [1 / (1 + math.exp(-v)) for v in (2.0, -1.0, 0.5, 3.0)]
    kw = dict(w=2.0, b=-1.0, mu=0.6, sigma=0.5, q2=0.1, q3=0.9)
    got = {}
    for neg in ("l3", "bce", "zero"):
        a = z.clone().requires_grad_(True)
        m = losses.get("gr")(a, y, neg=neg, reduction="none", **kw)
        m.sum().backward()
        got[neg] = (m.detach(), a.grad)
    for c in (2, 3):
        assert math.isclose(got["l3"][0][0, c].item(), (1 - (1 - p[c]) ** 0.9) / 0.9, rel_tol=1e-12)
        assert math.isclose(got["bce"][0][0, c].item(), -math.log(1 - p[c]), rel_tol=1e-12)
        assert math.isclose(got["bce"][1][0, c].item(), p[c], rel_tol=1e-12)   # d/dz −log(1−p) = p
        assert got["zero"][0][0, c].item() == 0.0 and got["zero"][1][0, c].item() == 0.0
    for neg in ("bce", "zero"):  # the observed positive and the unknown are untouched
        assert torch.equal(got[neg][0][0, :2], got["l3"][0][0, :2])
        assert torch.equal(got[neg][1][0, :2], got["l3"][1][0, :2])
    with pytest.raises(ValueError, match="neg"):
        losses.get("gr")(z, y, neg="mae")


def test_method_passes_neg_and_records_it_only_off_default():
    m = build_method("gr", neg="zero")
    m.ctx = _Ctx()
    assert m.loss_kwargs(0)["neg"] == "zero" and m.hparams["neg"] == "zero"
    d = build_method("gr")
    d.ctx = _Ctx()
    assert "neg" not in d.loss_kwargs(0) and "neg" not in d.hparams
    with pytest.raises(ValueError, match="neg"):
        build_method("gr_k_only", neg="bad")


def test_q1_number_is_the_gce_form_and_none_is_minus_log():
    z = torch.tensor([[-3.0, 0.2, 4.0]], dtype=torch.float64)
    y = torch.ones_like(z, dtype=torch.long)
    p = torch.sigmoid(z)
    m = losses.get("gr")(z, y, q1=0.3, reduction="none")
    assert torch.allclose(m, (1 - p ** 0.3) / 0.3)
    assert torch.allclose(losses.get("gr")(z, y, reduction="none"), -torch.log(p))
    # small q1 approaches -log p (GR Loss Sec. 3.3: q -> 0 gives BCE)
    assert torch.allclose(losses.get("gr")(z, y, q1=1e-6, reduction="none"), -torch.log(p), rtol=1e-4)


def test_all_off_is_an_up_to_q():
    """Table 3 caption: k̂ = 0, v = 1, q = 0.01 everywhere is the AN assumption."""
    z, y = batch()
    off = losses.get("gr")(z, y, w=None, b=None, mu=None, sigma=None, q1=0.01, q2=0.01, q3=0.01)
    an = losses.get("an")(z, y)
    assert abs(off.item() - an.item()) / an.item() < 0.05
    exact = losses.get("gr")(z, y, w=None, b=None, mu=None, sigma=None, q1=None, q2=1e-7, q3=1e-7)
    assert torch.allclose(exact, an, rtol=1e-5)


# ---------------------------------------------------------------------------------------
# schedules
# ---------------------------------------------------------------------------------------
def test_paper_schedule_starts_at_the_start_and_ends_at_the_end():
    T = 8
    first = gr_schedule(0, T)
    assert first == {"w": 0.0, "b": -2.0, "mu": 0.5, "sigma": 2.0}  # Assumption 1: k̂ constant
    last = gr_schedule(T - 1, T, w_T=10.0, b_T=-8.0)
    assert last == pytest.approx({"w": 10.0, "b": -8.0, "mu": 0.8, "sigma": 0.5})  # Table 6 values
    for e in range(T):
        s = gr_schedule(e, T, w_T=10.0, b_T=-8.0)
        assert math.isclose(s["w"], 10.0 * e / 7)
        assert math.isclose(s["b"], -2.0 - 6.0 * e / 7)
        assert math.isclose(s["mu"], 0.5 + 0.3 * e / 7)
        assert math.isclose(s["sigma"], 2.0 - 1.5 * e / 7)


def test_paper_schedule_with_a_warm_up():
    T, n = 8, 2
    for e in range(T):
        s = gr_schedule(e, T, linear_init=n)
        assert math.isclose(s["w"], 2.0 * max(e - n, 0) / (T - 1 - n))
    assert gr_schedule(0, 1)["w"] == 2.0  # one epoch: no room for a ramp, the end values


def test_code_schedule_puts_mu_sigma_one_step_ahead():
    """Official train.py (notes §3.4, 1-based t, warm-up n): w uses max(t-n-1, 0)/(T-n),
    mu uses max(t-n, 0)/(T-n)."""
    T = 8
    for n in (0, 2):
        for t in range(1, T + 1):  # the official code's 1-based epoch
            s = gr_schedule(t - 1, T, schedule="code", linear_init=n)
            assert math.isclose(s["w"], 0 + 2 * max(t - n - 1, 0) / (T - n))
            assert math.isclose(s["mu"], 0.5 + 0.3 * max(t - n, 0) / (T - n))
            assert math.isclose(s["sigma"], 2.0 - 1.5 * max(t - n, 0) / (T - n))
    assert gr_schedule(T - 1, T, schedule="code")["mu"] == pytest.approx(0.8)  # reaches mu_T
    assert gr_schedule(T - 1, T, schedule="code")["w"] == pytest.approx(2.0 * 7 / 8)  # never w_T


def test_schedule_errors():
    with pytest.raises(ValueError, match="schedule"):
        gr_schedule(0, 8, schedule="fast")
    with pytest.raises(ValueError, match="epoch"):
        gr_schedule(8, 8)
    with pytest.raises(ValueError, match="linear_init"):
        gr_schedule(0, 8, linear_init=8)


def test_ablation_rows_keep_q1_and_refuse_overridden_qs():
    from mlpl_lab.methods import build_method

    full = build_method("gr")
    off = build_method("gr_k_only")
    assert full.loss_hparams["q1"] is None and off.loss_hparams["q1"] is None
    assert off.loss_hparams["q2"] == off.loss_hparams["q3"] == 0.01
    with pytest.raises(ValueError, match="would override"):
        build_method("gr", robust=False, q3=1.5)


# ---------------------------------------------------------------------------------------
# Table 1: EN, EM, Hill, SPLC as framework configurations equal the standalone losses
# ---------------------------------------------------------------------------------------
def _soft(z, seed=2):
    g = torch.Generator().manual_seed(seed)
    soft = torch.full(z.shape, float("nan"), dtype=z.dtype)
    pick = torch.rand(z.shape, generator=g) < 0.5
    soft[pick] = torch.rand(int(pick.sum()), generator=g, dtype=z.dtype) * 0.2
    return soft


TABLE1_PAIRS = [
    ("en", "gr_as_en", {"tau": 0.4}),
    ("en", "gr_as_en", {"tau": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]}),
    ("em", "gr_as_em", {"alpha": 0.3}),
    ("em_apl", "gr_as_em", {"soft_targets": "soft", "alpha": 0.2, "beta": 0.5}),
    ("hill", "gr_as_hill", {"positive": "bce"}),
    ("hill", "gr_as_hill", {"positive": "focal_margin", "lamb": 1.2}),
    ("splc", "gr_as_splc", {"epoch": 3, "negative": "hill", "corrected_margin": True, "lamb": 1.2}),
    ("splc", "gr_as_splc_code", {"epoch": 3}),
    ("splc", "gr_as_splc", {"epoch": 3, "negative": "hill", "corrected_margin": True}),
    ("splc", "gr_as_splc", {"epoch": 3, "negative": "focal", "corrected_margin": False}),
    ("splc", "gr_as_splc", {"epoch": 0, "negative": "hill", "corrected_margin": True}),
]


@pytest.mark.parametrize("standalone,framework,hp", TABLE1_PAIRS)
@pytest.mark.parametrize("seed", [0, 1])
def test_table1_instantiations_equal_standalone(standalone, framework, hp, seed):
    z, y = batch(seed=seed)
    hp = {k: (_soft(z, seed) if v == "soft" else v) for k, v in hp.items()}
    a = losses.get(standalone)(z, y, reduction="none", **hp)
    b = losses.get(framework)(z, y, reduction="none", **hp)
    assert torch.allclose(a, b, rtol=1e-12, atol=1e-14)
    za, zb = z.clone().requires_grad_(True), z.clone().requires_grad_(True)
    losses.get(standalone)(za, y, **hp).backward()
    losses.get(framework)(zb, y, **hp).backward()
    assert torch.allclose(za.grad, zb.grad, rtol=1e-12, atol=1e-14)
    # and against a plain-python oracle written from the paper's Table 1 (test_losses_zoo),
    # so a wrong term shared by both implementations (a wrong λ in the Hill negative) fails
    if not isinstance(hp.get("tau"), list):
        from test_losses_zoo import oracle

        kw = {k: (v.numpy() if torch.is_tensor(v) else v) for k, v in hp.items()}
        want = oracle(standalone, z.numpy(), y.numpy(), **kw)
        assert math.isclose(float(b.mean()), want, rel_tol=1e-9, abs_tol=1e-12)


def test_table1_frame_names_registered_losses():
    t = table1()
    assert list(t.columns) == ["EN", "EM (+APL)", "Hill", "SPLC", "GR Loss"]
    assert all(n in losses.LOSSES for n in t.loc["registered loss"])


def test_splc_correction_starts_at_change_epoch():
    z = torch.tensor([[3.0, -3.0]], dtype=torch.float64)
    y = torch.tensor([[-1, -1]])
    before = losses.get("splc")(z, y, epoch=0, reduction="none")
    after = losses.get("splc")(z, y, epoch=1, reduction="none")
    assert before[0, 1] == after[0, 1]  # p < τ: still a negative
    assert after[0, 0] < before[0, 0]  # p > τ: corrected to positive, a small loss


# ---------------------------------------------------------------------------------------
# Table 3 ablations and the method
# ---------------------------------------------------------------------------------------
def test_ablation_names_and_switches():
    assert set(ABLATIONS) == {"gr_none", "gr_k_only", "gr_v_only", "gr_robust_only", "gr_k_v",
                              "gr_k_robust", "gr_v_robust", "gr_all"}
    for name, (k, v, r) in ABLATIONS.items():
        m = build_method(name)
        assert isinstance(m, GRMethod) and (m.use_k, m.use_v, m.robust) == (k, v, r)
        q = (m.loss_hparams["q1"], m.loss_hparams["q2"], m.loss_hparams["q3"])
        assert q == ((None, 0.01, 1.0) if r else (None, 0.01, 0.01))  # q1 the same in every row


class _Ctx:
    epochs = 8


def test_method_passes_scheduled_values_and_switches_off():
    m = build_method("gr_k_only", w_T=10.0, b_T=-8.0)
    m.ctx = _Ctx()
    kw = m.loss_kwargs(4)
    # epoch 4 of 8 under the paper schedule: tau = 4 / 7 of the way from start to end
    assert kw["w"] == pytest.approx(10.0 * 4 / 7) and kw["b"] == pytest.approx(-2.0 - 6.0 * 4 / 7)
    assert kw["mu"] is None and kw["sigma"] is None
    g = build_method("gr", schedule="code")
    g.ctx = _Ctx()
    assert g.loss_kwargs(0)["mu"] == pytest.approx(0.5 + 0.3 / 8)
    with pytest.raises(TypeError, match="unexpected keyword|unknown"):
        build_method("gr", beta=[0, 2, -2, -2])
    with pytest.raises(ValueError, match="schedule"):
        build_method("gr", schedule="fast")


def test_gr_trains_through_the_loop_and_logs_its_schedule(tiny_splits):
    from mlpl_lab.engine.train import TrainConfig, fit

    cfg = TrainConfig(epochs=2, batch_size=32, model="small_cnn", model_kwargs={"width": 8},
                      progress=False)
    r = fit("gr", tiny_splits.train, tiny_splits.val, tiny_splits.test, cfg)
    assert [row["w"] for row in r.history] == pytest.approx([0.0, 2.0])  # start, then the end value
    assert [row["mu"] for row in r.history] == pytest.approx([0.5, 0.8])
    assert all(math.isfinite(row["test_mAP"]) for row in r.history)
