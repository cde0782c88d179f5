"""The zoo's methods: every loss trains through the engine's hooks; the stateful ones keep
their state as their papers' code does (ROLE's label matrix, APL, LL's schedule, EN)."""
from __future__ import annotations

import math

import pytest
import torch

from mlpl_lab.methods import METHODS, TrainContext, build_method
from mlpl_lab.methods.apl import apl_round
from mlpl_lab.methods.expected_negative import expected_negative_mask
from mlpl_lab.methods.role import role_initial_logits
from mlpl_lab.engine.train import TrainConfig, fit

ZOO_METHODS = ["an", "wan", "an_ls", "epr", "role", "focal", "asl", "hill", "splc", "em",
               "em_apl", "ll_r", "ll_ct", "ll_cp", "gr", "en", "gr_as_en", "gr_as_em",
               "gr_as_hill", "gr_as_splc"]


@pytest.fixture(scope="module")
def tiny_splits():
    from mlpl_lab.data import make_splits

    return make_splits(n_train=64, n_val=32, n_test=32, seed=0, image_size=16)


def config(epochs=2):
    return TrainConfig(epochs=epochs, batch_size=32, model="small_cnn", model_kwargs={"width": 8},
                       progress=False)


def make_ctx(observed, epochs=3, predict=None):
    from mlpl_lab.models import build_model

    n, c = observed.shape
    return TrainContext(num_classes=c, num_train=n, epochs=epochs, device=torch.device("cpu"),
                        train_observed=observed.clone(),
                        make_model=lambda: build_model("small_cnn", c, width=4),
                        make_optimizer=lambda params: torch.optim.Adam(params, lr=1e-3),
                        predict_train=predict, seed=0)


def test_every_zoo_name_is_a_method():
    missing = [n for n in ZOO_METHODS if n not in METHODS]
    assert not missing


@pytest.mark.parametrize("name", ZOO_METHODS)
def test_training_step_never_reads_the_true_labels(name):
    """A batch without "labels" must be enough: only the oracle may read the truth."""
    observed = -torch.ones(8, 5, dtype=torch.long)
    observed[torch.arange(8), torch.arange(8) % 5] = 1
    m = build_method(name)
    m.setup(make_ctx(observed, predict=lambda: torch.rand(8, 5)))
    m.on_epoch_start(0)
    batch = {"image": torch.rand(4, 3, 16, 16), "observed": observed[:4], "index": torch.arange(4)}
    loss, logs = m.training_step(batch, 1)
    assert torch.isfinite(loss) and all(math.isfinite(v) for v in logs.values())
    loss.backward()


def test_stateful_methods_train_through_fit(tiny_splits):
    for name in ("role", "ll_cp", "gr_as_en"):
        r = fit(name, tiny_splits.train, tiny_splits.val, tiny_splits.test, config())
        assert all(math.isfinite(row["test_mAP"]) and math.isfinite(row["loss"]) for row in r.history)


# ---------------------------------------------------------------------------------------
# ROLE
# ---------------------------------------------------------------------------------------
def test_role_initialisation_and_label_optimiser():
    obs = torch.tensor([[1, -1, 0], [-1, 1, -1]])
    init = role_initial_logits(obs, torch.Generator().manual_seed(0))
    assert torch.sigmoid(init[0, 0]).item() == pytest.approx(0.995)
    assert torch.sigmoid(init[0, 2]).item() == pytest.approx(0.005)
    unk = torch.sigmoid(init[obs == -1])
    assert ((unk > 0.4 - 1e-6) & (unk < 0.6 + 1e-6)).all()

    m = build_method("role")
    m.setup(make_ctx(obs))
    lr_net = m.optimizers()["net"].param_groups[0]["lr"]
    assert m.optimizers()["label_matrix"].param_groups[0]["lr"] == pytest.approx(10 * lr_net)


def test_role_label_matrix_learns(tiny_splits):
    m = build_method("role")
    r = fit(m, tiny_splits.train, tiny_splits.val, tiny_splits.test, config(epochs=1))
    init = role_initial_logits(tiny_splits.train.observed, torch.Generator().manual_seed(0))
    assert not torch.allclose(r.method.label_logits.detach().cpu(), init)
    assert "label_logits" in r.method.state_dict()["extra"]


# ---------------------------------------------------------------------------------------
# APL
# ---------------------------------------------------------------------------------------
def test_apl_round_picks_the_lowest_unlabelled_unknowns_per_class():
    probs = torch.tensor([[0.9, 0.1], [0.2, 0.3], [0.1, 0.05], [0.4, 0.6], [0.3, 0.2]])
    labels = torch.tensor([[1, -1], [-1, -1], [-1, 1], [-1, -1], [-1, -1]])
    soft = torch.full((5, 2), float("nan"))
    soft[2, 0] = 0.01  # already pseudo-labelled: excluded from the next round
    unlabel = (labels == -1).sum(0)  # [4, 4]
    added = apl_round(probs, labels, soft, unlabel, neg_proportion=0.5, rounds=1)  # 2 per class
    assert added == 4
    assert soft[1, 0] == pytest.approx(0.2) and soft[4, 0] == pytest.approx(0.3)
    assert soft[0, 1] == pytest.approx(0.1) and soft[4, 1] == pytest.approx(0.2)
    assert torch.isnan(soft[3]).all() and torch.isnan(soft[2, 1])


def test_em_apl_labels_after_warmup_and_keeps_hard_labels(tiny_splits):
    m = build_method("em_apl", warmup_epoch=1)
    r = fit(m, tiny_splits.train, tiny_splits.val, tiny_splits.test, config(epochs=3))
    soft = r.method.soft_targets
    n_soft = int((~torch.isnan(soft)).sum())
    unknown = (tiny_splits.train.observed == -1).sum(0)
    # rounds at the end of epochs 1, 2, 3 (epoch >= warmup), each int(0.9·U/(T - warmup))
    # per class, capped by what is left (Zhou's schedule over-covers: the last round takes
    # the rest)
    assert n_soft == sum(min(int(u), 3 * int(0.9 * int(u) / 2)) for u in unknown)
    assert bool((tiny_splits.train.observed[~torch.isnan(soft)] == -1).all())
    assert torch.equal(r.method.labels, tiny_splits.train.observed)
    assert r.history[-1]["apl_soft_negatives"] > 0


def test_em_apl_without_enough_epochs_is_em(tiny_splits):
    m = build_method("em_apl")  # warmup 5 > 2 epochs
    r = fit(m, tiny_splits.train, tiny_splits.val, tiny_splits.test, config(epochs=2))
    assert torch.isnan(r.method.soft_targets).all()


# ---------------------------------------------------------------------------------------
# Large Loss Matters
# ---------------------------------------------------------------------------------------
def test_ll_cp_corrects_labels_permanently_after_the_first_epoch(tiny_splits):
    m = build_method("ll_cp", delta_rel=0.05)
    r = fit(m, tiny_splits.train, tiny_splits.val, tiny_splits.test, config(epochs=2))
    obs = tiny_splits.train.observed
    changed = r.method.labels != obs
    assert changed.any()
    assert bool((obs[changed] == -1).all()) and bool((r.method.labels[changed] == 1).all())
    assert [row["clean_rate"] for row in r.history] == pytest.approx([1.0, 0.95])
    assert r.history[0]["corrections"] == 0


def test_ll_r_first_epoch_is_an():
    obs = -torch.ones(6, 4, dtype=torch.long)
    obs[:, 0] = 1
    m = build_method("ll_r")
    m.setup(make_ctx(obs))
    assert m.loss_kwargs(0)["clean_rate"] == 1.0
    m.on_epoch_end(0)
    assert m.loss_kwargs(1)["clean_rate"] == pytest.approx(0.998)


# ---------------------------------------------------------------------------------------
# EN
# ---------------------------------------------------------------------------------------
def test_expected_negative_mask_takes_the_lowest_n_minus_ni():
    conf = torch.tensor([[0.1, 0.9], [0.5, 0.2], [0.3, 0.4], [0.8, 0.1]])
    obs = torch.tensor([[-1, 1], [-1, -1], [1, -1], [-1, -1]])
    mask = expected_negative_mask(conf, obs, torch.tensor([2, 1]))
    # class 0: the N - N_0 = 2 lowest are rows 0 and 2, row 2 is observed -> only row 0
    assert mask[:, 0].tolist() == [True, False, False, False]
    # class 1: the 3 lowest are rows 3, 1, 2 (all unknown)
    assert mask[:, 1].tolist() == [False, True, True, True]
