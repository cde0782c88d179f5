"""The engine's hooks and guards: best-epoch restore, on_step_end, EMA, LR schedules,
init_from, resume checks and bad inputs. Oracles are written here from the definitions."""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from mlpl_lab import losses
from mlpl_lab.core import metrics
from mlpl_lab.data import make_splits
from mlpl_lab.methods import build_method
from mlpl_lab.methods.ema import per_step_decay
from mlpl_lab.methods.loss_method import LossMethod
from mlpl_lab.engine.train import fit, predict_dataset
from tiny import tiny_config, tiny_splits


@pytest.fixture(scope="module")
def tiny():
    return tiny_splits(seed=0, image_size=16)


def cfg(**kw):
    return tiny_config(**{"epochs": 3, "lr": 5e-3, **kw})


class Recorder(LossMethod):
    """AN that records, after every real optimiser step, the step index, the LR and the
    network's weights (for the EMA oracle)."""

    def __init__(self, ema_decay=None):
        super().__init__(loss="an")
        self.ema_decay = ema_decay
        self.steps, self.lrs, self.snapshots = [], [], []

    def on_step_end(self, step):
        super().on_step_end(step)
        self.steps.append(step)
        self.lrs.append(self.optimizer.param_groups[0]["lr"])
        self.snapshots.append(copy.deepcopy(self.net.state_dict()))


def test_best_epoch_weights_are_restored(tiny):
    # a high lr makes val mAP move around, so the best epoch is rarely the last
    r = fit("an", tiny.train, tiny.val, tiny.test, cfg(epochs=5, lr=3e-2, seed=3))
    probs = predict_dataset(r.method, tiny.val, torch.device("cpu"))
    assert metrics.mean_average_precision(probs, tiny.val.labels) == pytest.approx(r.best["val_mAP"], abs=1e-4)
    last = fit("an", tiny.train, tiny.val, tiny.test, cfg(epochs=5, lr=3e-2, seed=3, restore_best=False))
    probs = predict_dataset(last.method, tiny.val, torch.device("cpu"))
    assert metrics.mean_average_precision(probs, tiny.val.labels) == pytest.approx(last.final["val_mAP"], abs=1e-4)


def test_on_step_end_counts_the_optimiser_steps(tiny):
    m = Recorder()
    fit(m, tiny.train, tiny.val, tiny.test, cfg(epochs=3))
    per_epoch = len(tiny.train) // 32  # drop_last batches
    assert m.steps == list(range(3 * per_epoch))


def test_ema_follows_its_formula(tiny):
    m = Recorder(ema_decay=0.5)
    r = fit(m, tiny.train, tiny.val, tiny.test, cfg(epochs=2, restore_best=False))
    steps_per_epoch = len(tiny.train) // 32
    d = 0.5 ** (1 / steps_per_epoch)
    assert per_step_decay(0.5, steps_per_epoch) == pytest.approx(d)
    # oracle: start from the initial weights (the snapshot before step 0 is the EMA's copy),
    # then e <- d e + (1 - d) theta_t after every step
    start = build_method("an")
    from mlpl_lab.engine.train import prepare

    prepare(start, tiny.train, cfg(epochs=2))
    ema = {k: v.clone().double() for k, v in start.net.state_dict().items()}
    for snap in m.snapshots:
        for k, v in snap.items():
            if v.dtype.is_floating_point:
                ema[k] = d * ema[k] + (1 - d) * v.double()
            else:
                ema[k] = v.clone()
    got = r.method.ema_model.module.state_dict()
    for k in ema:
        assert torch.allclose(got[k].double(), ema[k].double(), atol=1e-5), k
    assert r.method.ema_model.updates == len(m.snapshots)
    assert "val_mAP[ema]" in r.history[-1]


def test_cosine_schedule_values(tiny):
    m = Recorder()
    fit(m, tiny.train, tiny.val, tiny.test, cfg(epochs=3, lr=1e-2, lr_schedule="cosine"))
    T = len(m.lrs)
    want = [1e-2 * 0.5 * (1 + math.cos(math.pi * t / T)) for t in range(T)]
    assert m.lrs == pytest.approx(want, rel=1e-6)  # the LR used by step t


def test_cosine_per_epoch(tiny):
    m = Recorder()
    fit(m, tiny.train, tiny.val, tiny.test, cfg(epochs=3, lr=1e-2, lr_schedule="cosine", schedule_step="epoch"))
    per = len(m.lrs) // 3
    for e in range(3):
        want = 1e-2 * 0.5 * (1 + math.cos(math.pi * e / 3))
        assert m.lrs[e * per:(e + 1) * per] == pytest.approx([want] * per)


def test_onecycle_schedule_shape(tiny):
    m = Recorder()
    fit(m, tiny.train, tiny.val, tiny.test, cfg(epochs=4, lr=1e-2, lr_schedule="onecycle", onecycle_pct_start=0.25))
    T = len(m.lrs)
    lrs = np.array(m.lrs)
    # OneCycle (Smith): starts at max_lr / 25, peaks at max_lr after pct_start of the steps,
    # then anneals (cosine) to max_lr / 25 / 1e4
    assert lrs[0] == pytest.approx(1e-2 / 25, rel=1e-6)
    peak = int(np.argmax(lrs))
    assert lrs[peak] == pytest.approx(1e-2, rel=1e-3) and abs(peak - (0.25 * T - 1)) <= 1
    assert np.all(np.diff(lrs[:peak + 1]) > 0) and np.all(np.diff(lrs[peak:]) < 0)
    assert lrs[-1] < 1e-2 / 25


def test_init_from_matches_by_name_and_shape(tiny):
    a = fit("an", tiny.train, tiny.val, tiny.test, cfg(epochs=1))
    b = fit("an", tiny.train, tiny.val, tiny.test, cfg(epochs=1, lr=1e-9), init_from=a.method)
    wa, wb = a.method.net.state_dict(), b.method.net.state_dict()
    assert all(torch.allclose(wa[k].float(), wb[k].float(), atol=1e-4) for k in wa
               if "running" not in k and "num_batches" not in k)
    with pytest.raises(ValueError, match="network\\(s\\) \\['f', 'g'\\]"):
        fit("cls", tiny.train, tiny.val, tiny.test, cfg(epochs=1), init_from=a.method)
    with pytest.raises(ValueError, match="shape mismatch"):
        fit("an", tiny.train, tiny.val, tiny.test, cfg(epochs=1, model_kwargs={"width": 8}), init_from=a.method)


@pytest.mark.parametrize("change, match", [
    (dict(method="wan"), "another method"),
    (dict(hp={"q2": 0.5}), "other hyperparameters"),
    (dict(seed=9), "another seed"),
    (dict(lr=1e-4), "another training configuration"),
    (dict(train_seed=1), "another training set"),
])
def test_resume_refuses_a_checkpoint_of_another_run(tiny, tmp_path, change, match):
    ckpt = str(tmp_path / "run.pt")
    fit("gr", tiny.train, tiny.val, tiny.test, cfg(epochs=1, checkpoint=ckpt))
    method = build_method(change.get("method", "gr"), **change.get("hp", {}))
    train = tiny.train
    if "train_seed" in change:
        other = make_splits(n_train=96, n_val=48, n_test=48, seed=0, image_size=16, regime_seed=1)
        train = other.train
    kw = {k: change[k] for k in ("seed", "lr") if k in change}
    with pytest.raises(ValueError, match=match):
        fit(method, train, tiny.val, tiny.test, cfg(epochs=2, checkpoint=ckpt, resume=True, **kw))


def test_resume_refuses_a_checkpoint_with_more_epochs(tiny, tmp_path):
    ckpt = str(tmp_path / "run.pt")
    fit("an", tiny.train, tiny.val, tiny.test, cfg(epochs=3, checkpoint=ckpt))
    with pytest.raises(ValueError, match="holds 3 epochs but the config asks for 2"):
        fit("an", tiny.train, tiny.val, tiny.test, cfg(epochs=2, checkpoint=ckpt, resume=True))


@pytest.mark.parametrize("field, value, match", [
    ("eval_batch_size", 0, "eval_batch_size"), ("lr", "fast", "lr must be a positive number"),
    ("lr", float("nan"), "lr must"), ("seed", None, "seed=None"), ("seed", 1.5, "seed must be"),
    ("seed", -3, "seed must be in"), ("lr_schedule", "step", "lr_schedule"),
    ("probes", ("nope",), "unknown probe"), ("epochs", 0, "epochs"),
])
def test_bad_configuration_fails_before_training(tiny, field, value, match):
    with pytest.raises(ValueError, match=match):
        fit("an", tiny.train, tiny.val, tiny.test, cfg(**{field: value}))


def test_observed_labels_must_match_the_training_set(tiny):
    class Mismatched:  # a dataset whose observed matrix is not built from its own labels
        labels = tiny.train.labels
        observed = tiny.train.observed[:, :10]

        def __len__(self):
            return len(tiny.train)

        def get_batch(self, idx):
            return tiny.train.get_batch(idx)

    with pytest.raises(ValueError, match="do not match the training set's true labels"):
        fit("an", Mismatched(), tiny.val, tiny.test, cfg())
    with pytest.raises(ValueError, match="columns but num_classes"):
        tiny.train.with_observed(tiny.train.observed[:, :10])


def test_losses_refuse_numpy_and_empty_batches():
    s, y = torch.zeros(4, 3), torch.ones(4, 3, dtype=torch.long)
    for name in ("an", "gr", "opml"):
        fn = losses.get(name)
        with pytest.raises(TypeError, match="torch tensor"):
            fn(s.numpy(), y)
        with pytest.raises(TypeError, match="torch tensor"):
            fn(s, y.numpy())
        with pytest.raises(ValueError, match="empty batch"):
            fn(torch.zeros(0, 3), torch.zeros(0, 3, dtype=torch.long))


def test_every_registered_loss_refuses_numpy_input():
    s, y = torch.zeros(4, 3), torch.zeros(4, 3, dtype=torch.long)
    y[:, 0] = 1
    for name, fn in sorted(losses.LOSSES.items()):
        with pytest.raises(TypeError, match="torch tensor"):
            fn(s.numpy(), y)


def test_test_set_scored_once_on_the_best_weights(tiny):
    every = fit("an", tiny.train, tiny.val, tiny.test, cfg(epochs=4, lr=3e-2, seed=2))
    once = fit("an", tiny.train, tiny.val, tiny.test, cfg(epochs=4, lr=3e-2, seed=2, test_every_epoch=False))
    assert once.best_epoch == every.best_epoch
    assert once.best["test_mAP"] == pytest.approx(every.best["test_mAP"], abs=1e-6)
    assert [("test_mAP" in r) for r in once.history] == [i == once.best_epoch for i in range(4)]
    with pytest.raises(ValueError, match="needs restore_best"):
        cfg(test_every_epoch=False, restore_best=False).validate()


def test_amp_on_cpu_uses_bfloat16_autocast_and_counts_every_step(tiny, monkeypatch):
    """The AMP path as far as a CPU exercises it: bfloat16 autocast (forced: a CPU without native
    bfloat16 runs an AMP spec in float32), no GradScaler (CUDA only), every optimiser step real —
    so on_step_end runs once per batch."""
    monkeypatch.setenv("MLPL_LAB_CPU_PRECISION", "bf16")
    m = Recorder()
    r = fit(m, tiny.train, tiny.val, tiny.test, cfg(epochs=2, amp=True))
    assert all(math.isfinite(row["loss"]) for row in r.history)
    assert len(m.steps) == 2 * (len(tiny.train) // 32)
