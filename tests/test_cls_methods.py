"""CLS and the co-teaching family in the training loop: hooks, counts, heads, no truth leak."""
from __future__ import annotations

import math

import pytest
import torch

from mlpl_lab.methods import build_method
from mlpl_lab.methods.cls import CoLabelSelection, explain_batch, paper_hparams, regime_key
from mlpl_lab.methods.coteaching import CoTeaching, JoCoR, bernoulli_kl, per_sample_an_loss
from mlpl_lab.methods.selection import keep_count, reserve_rate, selection_rows
from mlpl_lab.engine.train import fit
from tiny import PoisonedTruth, tiny_config, tiny_splits


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny CNNs run faster on one thread, and the 2-core machine is shared."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def tiny():
    return tiny_splits(seed=3)


cfg = tiny_config


@pytest.fixture(scope="module")
def cls_run(tiny):
    return fit(build_method("cls", tau_h=0.1, tau_l=0.2, E_k=1), tiny.train, tiny.val, tiny.test, cfg())


def _params(net):
    return torch.cat([p.detach().reshape(-1) for p in net.parameters()])


def test_cls_trains_two_different_networks_and_reports_three_heads(cls_run, tiny):
    m = cls_run.method
    assert set(m.networks()) == {"f", "g"} and set(m.optimizers()) == {"f", "g"}
    assert not torch.equal(_params(m.f), _params(m.g))
    row = cls_run.final
    for key in ("test_mAP", "test_mAP[f]", "test_mAP[g]", "loss_f", "loss_g"):
        assert math.isfinite(row[key]), key
    # the tables' prediction is the average of the two networks' probabilities
    x = tiny.test.images[:8]
    m.train(False)
    with torch.no_grad():
        avg = m.predict_proba(x)
        heads = m.extra_predictions(x)
        expected = (torch.sigmoid(m.f(x)) + torch.sigmoid(m.g(x))) / 2
    m.train(True)
    assert torch.allclose(avg, expected, atol=1e-6)
    assert torch.allclose(heads["f"], torch.sigmoid(m.f.eval()(x)), atol=1e-6)
    m.train(True)


def test_cls_removes_nothing_in_the_first_epoch_and_exact_counts_after(cls_run, tiny):
    rows = {(r["epoch"], r["network"]): r for r in selection_rows(cls_run.history)}
    for net in ("f", "g"):
        first = rows[(1, net)]
        assert first["removed"] == 0 and first["removed_low"] == 0 and first["R_h"] == 1.0
        second = rows[(2, net)]
        # three batches of 32 (drop_last): per batch n unknown entries, floor(R n) kept
        R_h, R_l = reserve_rate(1, 0.1, 1), reserve_rate(1, 0.2, 1)
        n_batch = 32 * tiny.train.num_classes - 32  # single positive: C-1 unknowns per image
        kept_cross = keep_count(R_h, n_batch)
        assert second["unknown"] == 3 * n_batch
        assert second["removed"] == 3 * (n_batch - kept_cross)
        assert second["removed_low"] == 3 * (kept_cross - keep_count(R_l, kept_cross))
        assert 0 <= second["precision"] <= 1 and 0 <= second["recall"] <= 1


def test_cls_first_step_equals_two_an_losses(tiny):
    m = build_method("cls")
    fit(m, tiny.train, tiny.val, tiny.test, cfg(epochs=1))
    batch = tiny.train.get_batch(torch.arange(32))
    from mlpl_lab.losses import get

    with torch.no_grad():
        loss, logs = m.training_step(batch, epoch=0)
        an = get("an")(m.f(batch["image"]), batch["observed"]) + get("an")(m.g(batch["image"]), batch["observed"])
    assert float(loss) == pytest.approx(float(an), rel=1e-5)


@pytest.mark.parametrize("name, hp", [("cls", {"E_k": 1, "tau_h": 0.1}), ("coteaching", {"T_k": 1}),
                                      ("coteaching_plus", {"T_k": 1}), ("jocor", {"T_k": 1})])
def test_training_never_reads_the_true_labels(tiny, name, hp):
    clean = fit(build_method(name, **hp), tiny.train, tiny.val, tiny.test, cfg())
    poisoned = fit(build_method(name, **hp), PoisonedTruth(tiny.train), tiny.val, tiny.test, cfg())
    assert clean.curve("loss") == poisoned.curve("loss")
    assert clean.curve("test_mAP") == poisoned.curve("test_mAP")
    # ...while the diagnostics do read them (the poisoned truth gives other counts)
    a = [r["removed_hidden"] for r in selection_rows(clean.history)]
    b = [r["removed_hidden"] for r in selection_rows(poisoned.history)]
    assert a != b


def test_variants_switch_the_right_removal(tiny):
    h = fit(build_method("cls_h", E_k=1), tiny.train, tiny.val, tiny.test, cfg())
    l_ = fit(build_method("cls_l", E_k=1), tiny.train, tiny.val, tiny.test, cfg())
    last = lambda r: [row for row in selection_rows(r.history) if row["epoch"] == 2]  # noqa: E731
    assert all(row["removed"] == 0 and row["removed_low"] > 0 for row in last(h))
    assert all(row["removed"] > 0 and row["removed_low"] == 0 for row in last(l_))
    # CLS-H computes exactly CLS with tau_h = 0 (the sweep reuses it)
    same = fit(build_method("cls", E_k=1, tau_h=0.0), tiny.train, tiny.val, tiny.test, cfg())
    assert same.curve("test_mAP") == h.curve("test_mAP")


def test_clc_flips_instead_of_removing():
    m = build_method("clc", tau_h=0.2, tau_l=0.0, E_k=1)
    logits = torch.tensor([[3.0, -2.0, -2.0, -2.0, -2.0]], requires_grad=True)
    peer = torch.tensor([[3.0, -2.0, -2.0, -2.0, -2.0]])
    observed = torch.tensor([[-1, -1, -1, -1, 1]])
    sel, _ = m.select(logits.detach(), peer, observed, epoch=1)
    assert sel.removed_high[0, 0] and int(sel.removed_high.sum()) == 1
    m._loss(logits, observed, sel).backward()
    assert float(logits.grad[0, 0]) < 0  # pushed UP, towards positive (CLS would give 0)


@pytest.mark.parametrize("name, hp, message", [
    ("cls", {"tau_h": 1.5}, "tau"),
    ("cls", {"E_k": 0}, "E_k"),
    ("cls", {"normalization": "mean"}, "normalization"),
    ("cls_h", {"tau_h": 0.01}, "fixes"),
    ("cls_l", {"tau_l": 0.01}, "fixes"),
    ("coteaching", {"forget_rate": 1.0}, "forget rate"),
    ("coteaching", {"schedule": "cosine"}, "schedule"),
    ("coteaching_plus", {"init_epoch": -1}, "init_epoch"),
    ("coteaching_plus", {"disagreement": "any"}, "disagreement"),
    ("jocor", {"co_lambda": 2.0}, "co_lambda"),
])
def test_bad_hyperparameters_fail_at_construction(name, hp, message):
    with pytest.raises((ValueError, TypeError), match=message):
        build_method(name, **hp)


def test_paper_hparams_table():
    assert paper_hparams("coco", "single_positive") == {"tau_h": 0.012, "tau_l": 0.06, "E_k": 10}
    assert paper_hparams("voc07", "drop_positives", 0.25)["tau_h"] == 0.002  # 75 % labels left
    assert paper_hparams("nus", "drop_positives", 0.75, E_k=4) == {"tau_h": 0.02, "tau_l": 0.06, "E_k": 4}
    assert regime_key("drop_positives", 0.5) == "drop50"
    with pytest.raises(ValueError, match="alpha"):
        regime_key("drop_positives", 0.3)
    with pytest.raises(ValueError, match="dataset"):
        paper_hparams("cub")


def test_coteaching_cross_update_uses_the_peers_choice():
    m = CoTeaching(forget_rate=0.5)
    lf = torch.tensor([0.1, 0.2, 0.9, 0.8])  # f likes samples 0, 1
    lg = torch.tensor([0.9, 0.8, 0.1, 0.2])  # g likes samples 2, 3
    used_f, used_g = m._cross_update(lf, lg, rate=0.5)
    assert used_f.tolist() == [False, False, True, True]   # f is trained on g's small-loss samples
    assert used_g.tolist() == [True, True, False, False]


def test_coteaching_plus_disagreement_readings():
    f = torch.tensor([[2.0, -1.0, -3.0], [-1.0, -2.0, -3.0], [1.0, 0.5, -3.0]])
    g = torch.tensor([[1.0, 3.0, -3.0], [-2.0, -1.0, -3.0], [2.0, -0.5, -3.0]])
    top1 = build_method("coteaching_plus").disagree(f, g)  # default: the official code's argmax
    thr = build_method("coteaching_plus", disagreement="threshold").disagree(f, g)
    assert top1.tolist() == [True, True, False]   # top classes: 0 vs 1, 0 vs 1, 0 vs 0
    assert thr.tolist() == [True, False, True]    # image 1: both predict all labels negative -> "agree"


def _prepared(name, tiny, **hp):
    from mlpl_lab.engine.train import prepare

    m = build_method(name, **hp)
    prepare(m, tiny.train, cfg(epochs=2))
    m.train(True)
    return m


def test_coteaching_plus_step_logs_its_branch_and_samples(tiny, monkeypatch):
    m = _prepared("coteaching_plus", tiny, forget_rate=0.5, T_k=1)
    batch = tiny.train.get_batch(torch.arange(16))
    monkeypatch.setattr(m, "disagree", lambda a, b: torch.zeros(16, dtype=torch.bool))
    _, logs = m.training_step(batch, epoch=1)
    assert logs["branch_empty"] == 1.0 and int(logs["used_f"]) == int(logs["used_g"]) == 16
    two = torch.zeros(16, dtype=torch.bool)
    two[[3, 7]] = True
    monkeypatch.setattr(m, "disagree", lambda a, b: two)
    loss, logs = m.training_step(batch, epoch=1)
    assert logs["branch_disagree"] == 1.0 and logs["branch_empty"] == 0.0
    # forget half of the 2-sample disagreement set: one sample each (a 1-sample Adam step)
    assert int(logs["used_f"]) == int(logs["used_g"]) == 1
    loss.backward()
    assert all(p.grad is not None for p in m.f.parameters()) and all(p.grad is not None for p in m.g.parameters())


def test_jocor_updates_both_networks_with_one_loss(tiny):
    m = _prepared("jocor", tiny, co_lambda=0.5)
    before = {k: {n: p.detach().clone() for n, p in net.named_parameters()} for k, net in m.networks().items()}
    batch = tiny.train.get_batch(torch.arange(32))
    loss, _ = m.training_step(batch, epoch=0)
    for opt in m.optimizers().values():
        opt.zero_grad()
    loss.backward()
    for opt in m.optimizers().values():
        opt.step()
    for k, net in m.networks().items():
        moved = [not torch.equal(p.detach(), before[k][n]) for n, p in net.named_parameters()]
        assert any(moved), f"network {k} did not move"
    # the agreement term couples them: g's gradient depends on f's output
    f_out = m.f(batch["image"]).detach()
    g_logits = m.g(batch["image"])
    lam_only = (bernoulli_kl(f_out, g_logits) + bernoulli_kl(g_logits, f_out)).mean()
    (gg,) = torch.autograd.grad(lam_only, [next(m.g.parameters())])
    assert gg.abs().sum() > 0


def test_jocor_joint_loss_and_bernoulli_kl():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(6, 4, generator=g), torch.randn(6, 4, generator=g)
    kl = bernoulli_kl(a, b)
    assert bool((kl >= -1e-7).all()) and torch.allclose(bernoulli_kl(a, a), torch.zeros_like(a), atol=1e-6)
    p, q = torch.sigmoid(a), torch.sigmoid(b)
    ref = p * torch.log(p / q) + (1 - p) * torch.log((1 - p) / (1 - q))
    assert torch.allclose(kl, ref, atol=1e-5)
    observed = torch.tensor([[1, -1, -1, -1]] * 6)
    j0 = JoCoR(co_lambda=0.0).joint_loss(a, b, observed)
    assert torch.allclose(j0, per_sample_an_loss(a, observed) + per_sample_an_loss(b, observed))
    j1 = JoCoR(co_lambda=1.0).joint_loss(a, b, observed)
    assert torch.allclose(j1, (kl + bernoulli_kl(b, a)).mean(1))


def test_sample_selection_logs_what_dropped_images_throw_away(tiny):
    r = fit(build_method("coteaching", forget_rate=0.25, T_k=1), tiny.train, tiny.val, tiny.test, cfg())
    rows = [row for row in selection_rows(r.history) if row["epoch"] == 2]
    C = tiny.train.num_classes
    for row in rows:
        assert row["dropped"] == 3 * (32 - keep_count(0.75, 32))
        assert row["removed"] == row["dropped"] * C
        assert row["removed_clean"] + row["removed_hidden"] == row["removed"]
        assert row["removed_observed_pos"] == row["dropped"]  # single positive: one per image


def test_checkpoint_keeps_the_selection_log(tiny, tmp_path):
    ckpt = tmp_path / "cls.pt"
    full = fit(build_method("cls", E_k=1, tau_h=0.1), tiny.train, tiny.val, tiny.test, cfg(epochs=2, seed=4))
    fit(build_method("cls", E_k=1, tau_h=0.1), tiny.train, tiny.val, tiny.test,
        cfg(epochs=1, seed=4, checkpoint=str(ckpt)))
    resumed = fit(build_method("cls", E_k=1, tau_h=0.1), tiny.train, tiny.val, tiny.test,
                  cfg(epochs=2, seed=4, checkpoint=str(ckpt), resume=True))
    import pandas as pd

    assert len(selection_rows(full.history)) == 4  # 2 epochs x 2 networks
    assert pd.DataFrame(selection_rows(resumed.history)).equals(pd.DataFrame(selection_rows(full.history)))


def test_explain_batch_of_a_trained_pair(cls_run, tiny):
    info = explain_batch(cls_run.method, tiny.train, list(range(16)))
    assert info["epoch"] == 1 and info["R_h"] == pytest.approx(0.9)
    n = int((info["observed"] == -1).sum())
    assert int(info["f"].removed_high.sum()) == n - keep_count(0.9, n)
    with pytest.raises(TypeError, match="trained CLS"):
        explain_batch(CoLabelSelection(), tiny.train, [0, 1])


def test_explain_batch_of_the_first_n_images_stops_at_the_split(cls_run, tiny):
    """Bug caught: a notebook asking for a 32-image batch of a smaller split (a cut profile) fails
    with an IndexError instead of showing the whole split."""
    size = len(tiny.train)
    whole = explain_batch(cls_run.method, tiny.train, size + 5)
    assert whole["observed"].shape[0] == size
    first = explain_batch(cls_run.method, tiny.train, 3)
    assert torch.equal(first["observed"], tiny.train.get_batch([0, 1, 2])["observed"].cpu())
