"""The one training loop, :func:`fit`. Methods differ only through the hooks of :class:`~mlpl_lab.methods.Method`.

How every method of the lab maps onto the hooks (none of them changes this loop):

* **Baselines and the loss zoo** (AN, WAN, EPR, Hill, SPLC, GR Loss, OPML, ...): a
  :class:`~mlpl_lab.methods.LossMethod` — ``training_step`` evaluates one registered loss on
  ``self.labels[batch["index"]]``; losses with schedules receive ``epoch``.
* **Two networks trained together** (CLS, Co-teaching, Co-teaching+, JoCoR): ``setup`` builds
  ``f`` and ``g`` with their optimisers; ``networks()``/``optimizers()`` return both, so the
  loop steps both after one ``backward`` of ``loss_f + loss_g`` (disjoint parameters, so the
  gradients are those of the separate losses); ``predict_proba`` averages them and
  ``extra_predictions`` reports ``f`` and ``g`` alone.
* **A learnable label matrix** (ROLE): the N x C label logits are a parameter with its own
  optimiser in ``optimizers()``; the batch's rows are indexed by ``batch["index"]``.
* **Epoch-end pseudo-labelling over the whole training set** (EM+APL, OPML's AP-based
  smoothing and correction, LL-Cp): ``on_epoch_end`` calls ``ctx.predict_train()`` (eval-mode
  probabilities over the train set, no augmentation) and rewrites ``self.labels``.
* **Weak and strong views, a memory queue, two stages** (LAC): ``views = ("weak",
  "strong")`` makes the loop add ``batch["image_strong"]``; the queue is method state
  (saved by ``extra_state``); stage two is a second :func:`fit` whose method starts from the
  stage-one weights (``init_from=``), so each stage keeps its own history and selection.
* **Mixup on a second forward pass** (PU-MLC): inside ``training_step``.

Each epoch the loop evaluates on val and test against the TRUE labels (mAP, CF1, OF1,
per-class AP), keeps a history, and reports the epoch with the best val mAP (clean
validation, as Cole et al., LL, GR Loss and LAGC do).

Reproducibility: one ``seed`` fixes model initialisation, and each epoch re-seeds the global
RNG from ``(seed, epoch)``, so batch order, augmentation and dropout depend only on the seed
and the epoch; a run resumed from a checkpoint reproduces the same history.

Data: an in-memory training split (a dataset with ``get_batch``) is held on the training device
for the whole run (:class:`~mlpl_lab.data.device_split.DeviceSplit`); each batch and its views are
gathered there, with no copy from the host per step and no DataLoader (on the CPU the losses and
val mAP are bit for bit those of a per-batch host copy: ``benchmarks/records/data_path_cpu.json``).
Image-file datasets go through a DataLoader, each batch copied to the device and augmented there.

Where the rest lives: the weights a run starts from in :mod:`~mlpl_lab.engine.init`, checkpoints
in :mod:`~mlpl_lab.engine.checkpoint`, torchrun/DDP in :mod:`~mlpl_lab.engine.distributed` (one
:class:`~mlpl_lab.engine.distributed.Ranks` object), peak memory in :mod:`~mlpl_lab.engine.memory`,
the device and the precision of the step in :mod:`~mlpl_lab.engine.device`.
"""
from __future__ import annotations

import math
import os
import random
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import torch
from tqdm.auto import tqdm

from . import distributed
from .checkpoint import Checkpoint, run_fingerprint
from .device import autocast_dtype, pick_device, uses_grad_scaler
from .init import INIT_WEIGHTS, init_backbones, transfer  # noqa: F401  (the first two re-exported)
from .memory import PeakMemory
from ..core import metrics
from ..core.history import OBSERVED, EpochRows, best_epoch_by
from ..core.labels import check_seed
from ..core.labels import validate as validate_labels
from ..data.augment import VIEWS
from ..data.device_split import DeviceSplit
from ..methods import Method, TrainContext, build_method
from ..methods.probes import PROBES, run_probes
from ..models import build_model


SCHEDULES = ("constant", "cosine", "onecycle")


@dataclass
class TrainConfig:
    """Everything the loop needs besides the method and the data (literal, papermill-friendly).

    LR schedules (``lr_schedule``): ``"constant"`` (default); ``"cosine"`` — cosine decay from
    ``lr`` to 0 over the run (CLS); ``"onecycle"`` — PyTorch's OneCycleLR with peak ``lr`` and
    ``onecycle_pct_start`` of the run warming up (LAC, PU-MLC). ``schedule_step`` says whether
    the schedule advances per optimiser step (``"step"``, default, what the papers' code does)
    or per epoch (``"epoch"``; not for OneCycle).

    ``restore_best`` (default True): at the end, the method is put back to the epoch with the
    best val mAP, so what a table reports is what Grad-CAM and attention maps explain.
    ``test_every_epoch`` (default True): evaluate the test set after every epoch (test curves);
    ``False`` evaluates it once, at the end, on the restored best-val weights, and writes it into
    the best epoch's row — the same numbers a table reports, for a third less evaluation (the
    per-epoch curves then come from the clean validation set). Needs ``restore_best``. Where the
    validation labels are partly hidden, it also keeps the weights of the best *observed*-validation
    epoch and scores the test set once on them (:attr:`TrainResult.selected`), so model selection
    without clean labels can be read from such runs too (07).
    ``probes``: names of train-set probes (:mod:`mlpl_lab.methods.probes`) measured every epoch
    on the first ``probe_size`` training images.
    """

    epochs: int = 8
    batch_size: int = 64
    lr: float = 1e-3
    weight_decay: float = 0.0
    optimizer: str = "adam"  # "adam" | "adamw" | "sgd"
    model: str = "small_cnn"
    model_kwargs: Dict[str, Any] = field(default_factory=dict)
    augment: str = "weak"  # the train view: "weak" | "none"
    seed: int = 0
    device: str = "auto"  # "auto" picks CUDA when available
    amp: bool = False
    eval_batch_size: int = 512
    lr_schedule: str = "constant"
    schedule_step: str = "step"
    onecycle_pct_start: float = 0.2
    restore_best: bool = True
    test_every_epoch: bool = True
    probes: Tuple[str, ...] = ()
    probe_size: int = 1024
    progress: Optional[bool] = None  # None: env MLPL_LAB_PROGRESS (default on)
    checkpoint: Optional[str] = None  # path; saved after every epoch
    resume: bool = False  # continue from ``checkpoint`` if it exists
    num_workers: int = 0  # DataLoader workers for datasets without a fast get_batch
    channels_last: bool = False  # NHWC networks and batches: faster convolutions under CUDA AMP and on the CPU (benchmarks/bench_training.py)

    def validate(self) -> None:
        problems = []

        def is_int(v):
            return isinstance(v, int) and not isinstance(v, bool)

        def is_num(v):
            return isinstance(v, (int, float)) and not isinstance(v, bool)

        if not is_int(self.epochs) or self.epochs < 1:
            problems.append(f"epochs must be an integer >= 1 (got {self.epochs!r})")
        if not is_int(self.batch_size) or self.batch_size < 2:
            problems.append(f"batch_size must be an integer >= 2 (got {self.batch_size!r}); "
                            "BatchNorm needs at least 2 images")
        if not is_int(self.eval_batch_size) or self.eval_batch_size < 1:
            problems.append(f"eval_batch_size must be an integer >= 1 (got {self.eval_batch_size!r})")
        if not is_num(self.lr) or not (self.lr > 0 and math.isfinite(self.lr)):
            problems.append(f"lr must be a positive number, e.g. lr=1e-3 (got {self.lr!r})")
        if not is_num(self.weight_decay) or self.weight_decay < 0:
            problems.append(f"weight_decay must be a number >= 0 (got {self.weight_decay!r})")
        if self.optimizer not in ("adam", "adamw", "sgd"):
            problems.append(f"optimizer must be 'adam', 'adamw' or 'sgd' (got {self.optimizer!r})")
        if self.augment not in VIEWS:
            problems.append(f"augment must be one of {sorted(VIEWS)} (got {self.augment!r})")
        if self.lr_schedule not in SCHEDULES:
            problems.append(f"lr_schedule must be one of {SCHEDULES} (got {self.lr_schedule!r})")
        if self.schedule_step not in ("step", "epoch"):
            problems.append(f"schedule_step must be 'step' or 'epoch' (got {self.schedule_step!r})")
        if self.lr_schedule == "onecycle" and self.schedule_step != "step":
            problems.append("OneCycle is stepped per optimiser step: use schedule_step='step'")
        if not is_num(self.onecycle_pct_start) or not 0 < self.onecycle_pct_start < 1:
            problems.append(f"onecycle_pct_start must be in (0, 1) (got {self.onecycle_pct_start!r})")
        unknown = [p for p in self.probes if p not in PROBES]
        if unknown:
            problems.append(f"unknown probe(s) {unknown}; registered: {sorted(PROBES)}")
        if not is_int(self.probe_size) or self.probe_size < 1:
            problems.append(f"probe_size must be an integer >= 1 (got {self.probe_size!r})")
        if not self.test_every_epoch and not self.restore_best:
            problems.append("test_every_epoch=False evaluates the test set on the restored best "
                            "weights: it needs restore_best=True")
        if self.resume and not self.checkpoint:
            problems.append("resume=True needs a checkpoint path")
        try:
            check_seed(self.seed, "seed")
        except (TypeError, ValueError) as exc:
            problems.append(str(exc))
        if problems:
            raise ValueError("bad training configuration: " + "; ".join(problems))

    def identity(self) -> Dict[str, Any]:
        """The fields that change what a run computes (not where it runs or how it reports)."""
        d = asdict(self)
        for k in ("device", "progress", "checkpoint", "resume", "num_workers", "eval_batch_size",
                  "channels_last"):
            d.pop(k)
        d["probes"] = list(self.probes)
        return d


@dataclass
class TrainResult(EpochRows):
    """What :func:`fit` returns. ``method`` holds the best-val epoch's weights (unless
    ``restore_best=False``); ``initial`` the probes measured before the first epoch."""

    method: Method
    config: TrainConfig
    history: List[Dict[str, Any]]
    best_epoch: int
    initial: Dict[str, float] = field(default_factory=dict)
    #: ``{"val_obs_mAP": {"epoch": e, "test_mAP": ..., ...}}``: the test set scored at the epoch the
    #: observed validation labels pick, when the test set is not scored every epoch (else empty: the
    #: history holds every epoch's test metrics)
    selected: Dict[str, Dict[str, Any]] = field(default_factory=dict)

    def curve(self, key: str = "test_mAP") -> List[float]:
        return [row[key] for row in self.history]

    def summary(self) -> Dict[str, float]:
        row = self.best
        return {k: row[k] for k in ("test_mAP", "test_CF1", "test_OF1", "val_mAP") if k in row} | {
            "best_epoch": self.best_epoch}


def fit(method, train, val, test, config: TrainConfig | None = None, *, init_from: Method | None = None,
        backbone_from: Method | None = None, desc: str | None = None, on_epoch: Callable[[Dict[str, Any]], None] | None = None,
        **method_hparams) -> TrainResult:
    """Train ``method`` (a :class:`Method` or a registered name) on ``train``; evaluate each
    epoch on ``val`` and ``test`` with their true labels. Bad configuration (unknown method, loss
    or hyperparameter, empty data, labels that do not match the data) fails before any training.

    ``init_from``: a trained method whose networks a second stage (LAC) starts from.
    ``backbone_from``: a pretraining run whose backbone every network starts from, heads fresh
    (:mod:`~mlpl_lab.engine.init`). ``desc`` labels the progress bar; ``on_epoch(row)`` is called
    after every epoch (the runner reports progress with it)."""
    config = config or TrainConfig()
    method, observed, true_labels = _checked_inputs(method, train, val, test, config, init_from, method_hparams)
    device = distributed.local_device(pick_device(config.device))

    # ---- setup: networks from the seed, then the weights the run starts from
    seed_everything(config.seed)
    ctx = _context(method, train, observed, config, device)
    method.setup(ctx)
    init_record = transfer(method, init_from, backbone_from,
                           score_val=lambda m, dev: _evaluate(m, val, dev, 512, "val"))
    method.setup_ema()  # after the transfer: a second stage's EMA starts from the loaded weights (LAC's code)
    method.train(True)
    if config.channels_last:  # a memory layout: the numbers stay the same
        for net in method.networks().values():
            net.to(memory_format=torch.channels_last)
    ranks = distributed.Ranks(method, device, config.batch_size)  # torchrun's DDP; inert in one process
    schedulers = _make_schedulers(method, config, ctx.steps_per_epoch)
    amp_dtype = autocast_dtype(device, bool(config.amp))
    # loss scaling only in the float16 fallback (CUDA without bfloat16); disabled, a no-op
    scaler = torch.amp.GradScaler("cuda", enabled=uses_grad_scaler(amp_dtype))
    optimizers = method.optimizers()
    # does the method act after a step (EMA, its own hook)? Without one, no per-step sync
    step_hook = method.ema_model is not None or type(method).on_step_end is not Method.on_step_end

    # ---- resume: a checkpoint of this same run continues where it stopped
    ckpt = Checkpoint(config.checkpoint, run_fingerprint(method, config, observed))
    progress = ckpt.resume(method, schedulers, config, device)
    start_epoch = len(progress.history)
    probe = _prober(method, train, observed, true_labels, config, device)
    if start_epoch == 0:
        if probe is not None and ranks.main:
            progress.initial = probe()
        progress.initial = {**progress.initial, **init_record}

    memory = PeakMemory(device)
    resident = DeviceSplit(train, device) if hasattr(train, "get_batch") else None
    show = _progress_enabled(config) and ranks.main
    epochs_bar = tqdm(range(start_epoch, config.epochs), desc=desc or method.name, disable=not show,
                      initial=start_epoch, total=config.epochs, leave=True)
    for epoch in epochs_bar:
        t0 = time.perf_counter()
        # ---- train: one pass of optimiser steps. Augmentations and dropout differ per rank;
        # rank 0 draws what a single process draws
        seed_everything(config.seed * 1_000_003 + epoch + 7_919 * ranks.rank)
        method.on_epoch_start(epoch)
        sums, n_batches = {}, 0  # the epoch's losses and logs (summed on the device), its batches
        order = ranks.shard(len(train), config.seed, epoch)
        ranks.begin_epoch()
        batches = _epoch_batches(train, resident, order, ranks.local_batch, config, method.views, device)
        for batch in tqdm(batches, total=ctx.steps_per_epoch, leave=False, disable=not show,
                          desc=f"epoch {epoch + 1}"):
            with torch.autocast(device.type, dtype=amp_dtype, enabled=amp_dtype is not None):
                loss, logs = method.training_step(batch, epoch)
            for opt in optimizers.values():
                opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            ranks.average_gradients()
            if _optimizer_step(optimizers, scaler, step_hook):
                method.on_step_end(progress.step)
                progress.step += 1
            for sch in schedulers.values() if config.schedule_step == "step" else ():
                sch.step()
            n_batches += 1
            _add_logs(sums, loss, logs)
        _check_epoch_loss(method, sums, n_batches, len(train), config, epoch)
        for sch in schedulers.values() if config.schedule_step == "epoch" else ():
            sch.step()
        ranks.end_epoch()  # label changes and BatchNorm statistics agree across ranks
        method.on_epoch_end(epoch)  # pseudo-labelling sees the epoch's last weights
        row = _train_row(method, sums, n_batches, optimizers, epoch)
        train_seconds = time.perf_counter() - t0
        if not ranks.main:  # the other ranks train on; rank 0 evaluates and keeps the history
            progress.history.append(row)
            continue

        # ---- evaluate: probes on the train set, then val and test against the true labels
        if probe is not None:
            row.update({f"train_{k}": v for k, v in probe().items()})
        row.update(_evaluate(method, val, device, config.eval_batch_size, "val"))
        if config.test_every_epoch:
            row.update(_evaluate(method, test, device, config.eval_batch_size, "test"))
        row.update(train_seconds=train_seconds, seconds=time.perf_counter() - t0,
                   peak_memory_mib=memory.mib(), world_size=ranks.world_size)
        progress.history.append(row)

        # ---- keep the best-val weights (ties keep the earlier epoch), report, checkpoint
        if best_epoch_by(progress.history) == len(progress.history) - 1 and config.restore_best:
            progress.best_state = cpu_copy(method.weights_state())
        if not config.test_every_epoch and best_epoch_by(progress.history, OBSERVED) == len(progress.history) - 1:
            progress.best_obs_state = cpu_copy(method.weights_state())
        epochs_bar.set_postfix(loss=f"{row['loss']:.4f}", val_mAP=f"{row['val_mAP']:.1f}")
        if on_epoch is not None:
            on_epoch(row)
        ckpt.save(method, schedulers, config, progress)
    epochs_bar.close()

    # ---- finish (rank 0): the best-val weights restored, the test set scored once on them (and on
    # the best observed-val weights) if not every epoch. The other ranks keep their last epoch
    ranks.unwrap()
    best_epoch, selected = _finish(method, progress, config, test, device, ranks.main)
    return TrainResult(method=method, config=config, history=progress.history, best_epoch=best_epoch,
                       initial=progress.initial, selected=selected)


# ------------------------------------------------------------------ the loop's steps, in the order fit takes them
def _finish(method, progress, config: TrainConfig, test, device, main: bool):
    """After the last epoch: ``(best epoch, selected)``. On rank 0 the best-val weights are
    restored and, when the test set is not scored every epoch, it is scored once on them (into the
    best row) and once on the best observed-val weights (``selected``). The other ranks keep their
    last epoch."""
    history = progress.history
    best_epoch = best_epoch_by(history) if main else len(history) - 1
    selected = {}
    if main and not config.test_every_epoch and progress.best_obs_state is not None:
        # the epoch the observed validation labels pick, scored on the test set with its own weights
        method.load_weights_state(progress.best_obs_state)
        selected[OBSERVED] = {"epoch": best_epoch_by(history, OBSERVED),
                              **_evaluate(method, test, device, config.eval_batch_size, "test")}
    if main and config.restore_best and progress.best_state is not None:
        method.load_weights_state(progress.best_state)  # networks and EMA; label state stays the last
    if main and not config.test_every_epoch:
        history[best_epoch].update(_evaluate(method, test, device, config.eval_batch_size, "test"))
    method.train(False)
    return best_epoch, selected



def _checked_inputs(method, train, val, test, config: TrainConfig, init_from, method_hparams):
    """The method built and every input checked before any training: ``(method, observed, true
    labels)``. A bad configuration, empty data, labels that do not match the data or a second
    stage without its first raise here."""
    config.validate()
    if method_hparams and not isinstance(method, str):
        raise TypeError("pass hyperparameters either to build_method or to fit, not both")
    method = build_method(method, **method_hparams) if isinstance(method, str) else method
    if not isinstance(method, Method):
        raise TypeError(f"method must be a registered name or a Method, got {type(method).__name__}")
    if getattr(method, "requires_init_from", False) and init_from is None:
        raise ValueError(f"method {method.name!r} is a second stage: it starts from a trained first "
                         "stage; pass init_from=<the stage-1 method> (RunSpec(init_from=...))")
    for name, ds in (("train", train), ("val", val), ("test", test)):
        _check_dataset(name, ds)
    for view in method.views:
        if view not in VIEWS:
            raise ValueError(f"method {method.name!r} asks for unknown view {view!r}")
    observed = _observed_of(train)
    true_labels = train.labels if hasattr(train, "labels") else None
    if observed.ndim != 2:
        raise ValueError(f"observed labels must be (N, C), got shape {tuple(observed.shape)}")
    if observed.shape[0] != len(train):
        raise ValueError(f"the training set has {len(train)} images but {observed.shape[0]} rows of "
                         "observed labels; build them from this set's true labels")
    if true_labels is not None and tuple(true_labels.shape) != tuple(observed.shape):
        raise ValueError(f"observed labels {tuple(observed.shape)} do not match the training set's "
                         f"true labels {tuple(true_labels.shape)}; build the observed matrix from "
                         "train.labels (labels.regime(...)(train.labels, seed=...))")
    validate_labels(observed)
    if config.probes and true_labels is None:
        raise ValueError("probes need the training set's true labels (the embedded scenes keep "
                         "them); set probes=() for this dataset")
    return method, observed, true_labels


def _check_dataset(name: str, dataset) -> None:
    if dataset is None or len(dataset) == 0:
        raise ValueError(f"the {name} dataset is empty; build splits with n_{name} >= 1")


def _observed_of(train) -> torch.Tensor:
    return train.observed if hasattr(train, "observed") else torch.stack(
        [train[i]["observed"] for i in range(len(train))])


def _context(method, train, observed, config, device) -> TrainContext:
    true_labels = train.labels if hasattr(train, "labels") else None
    num_classes = observed.shape[1]

    def make_model():
        return build_model(config.model, num_classes, **config.model_kwargs)

    return TrainContext(
        num_classes=num_classes, num_train=len(train), epochs=config.epochs, device=device,
        train_observed=observed.clone().long(), make_model=make_model,
        make_optimizer=_make_optimizer_factory(config), seed=config.seed,
        train_true_labels=true_labels,
        steps_per_epoch=_steps_per_epoch(len(train) // distributed.world_size(),
                                         distributed.local_batch_size(config.batch_size)),
        predict_train=lambda: predict_dataset(method, train, device, config.eval_batch_size),
        # side information the training set gives its methods (class priors, label cardinalities:
        # methods/side_information.py); a plain dataset gives none
        extras=dict(getattr(train, "side_info", None) or {}),
    )


def _steps_per_epoch(n: int, batch_size: int) -> int:
    return n // batch_size if n > batch_size else 1


def _make_optimizer_factory(config: TrainConfig):
    # foreach=True: one call per operation for all parameters instead of a Python loop over them
    # (on the CPU torch's default); the same per-tensor kernels, so the same numbers bit for bit
    # (the goldens), and torch's own default on CUDA
    def make(params):
        if config.optimizer == "adam":
            return torch.optim.Adam(params, lr=config.lr, weight_decay=config.weight_decay, foreach=True)
        if config.optimizer == "adamw":
            return torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay, foreach=True)
        return torch.optim.SGD(params, lr=config.lr, momentum=0.9, weight_decay=config.weight_decay,
                               foreach=True)

    return make


def _make_schedulers(method: Method, config: TrainConfig, steps_per_epoch: int):
    """One LR scheduler per optimiser of the method (None for a constant LR)."""
    if config.lr_schedule == "constant":
        return {}
    per_step = config.schedule_step == "step"
    total = config.epochs * steps_per_epoch if per_step else config.epochs
    out = {}
    for name, opt in method.optimizers().items():
        if config.lr_schedule == "cosine":
            out[name] = torch.optim.lr_scheduler.LambdaLR(
                opt, lambda t, T=total: 0.5 * (1.0 + math.cos(math.pi * min(t, T) / T)))
        else:  # onecycle: peak = each group's own lr
            out[name] = torch.optim.lr_scheduler.OneCycleLR(
                opt, max_lr=[g["lr"] for g in opt.param_groups], total_steps=total,
                pct_start=config.onecycle_pct_start)
    return out


def _prober(method, train, observed, true_labels, config: TrainConfig, device):
    """The train-set probes over the first ``probe_size`` images, or None without probes."""
    if not config.probes:
        return None
    probe_set = (_Subset(train, config.probe_size) if hasattr(train, "get_batch") else
                 torch.utils.data.Subset(train, range(min(config.probe_size, len(train)))))

    def probe() -> Dict[str, float]:
        probs = predict_dataset(method, probe_set, device, config.eval_batch_size)
        n = len(probe_set)
        return run_probes(config.probes, probs, observed[:n], true_labels[:n])

    return probe


class _Subset:
    """The first ``n`` items of an in-memory dataset (for probes)."""

    def __init__(self, dataset, n):
        self.dataset, self.n = dataset, min(n, len(dataset))

    def __len__(self):
        return self.n

    def get_batch(self, indices):
        return self.dataset.get_batch(indices)


def _progress_enabled(config: TrainConfig) -> bool:
    if config.progress is not None:
        return config.progress
    return os.environ.get("MLPL_LAB_PROGRESS", "1").lower() not in ("0", "off", "false", "no")


def _epoch_batches(train, resident: DeviceSplit | None, order: torch.Tensor | None, batch_size: int,
                   config: TrainConfig, views, device: torch.device):
    """One epoch's training batches on ``device``, their views applied there (``image`` in
    ``config.augment``'s view, ``image_strong`` when ``views`` has ``"strong"``).

    From ``resident`` (the split held on the device, :class:`~mlpl_lab.data.device_split.
    DeviceSplit`): index operations on the device, no host-to-device copy per step. Without it (a
    dataset with no ``get_batch``: image files) from a DataLoader, each batch copied to the device
    and augmented there. ``order``: this rank's shard under torchrun; None draws a permutation
    from the global RNG when the first batch is asked for (after ``on_epoch_start``)."""
    strong = "strong" in views
    if resident is not None:
        order = torch.randperm(len(train)) if order is None else order
        yield from resident.batches(order, batch_size, drop_last=True, view=config.augment,
                                    strong=strong, channels_last=config.channels_last)
        return
    for batch in iterate_batches(train, batch_size, shuffle=True, drop_last=True,
                                 num_workers=config.num_workers, order=order,
                                 pin_memory=device.type == "cuda"):
        batch = _to_device(batch, device)
        raw = batch["image"]
        batch["image"] = VIEWS[config.augment](raw)
        if strong:
            batch["image_strong"] = VIEWS["strong"](raw)
        if config.channels_last:  # after the views: padding and cropping return NCHW
            for view in ("image", "image_strong"):
                if view in batch:
                    batch[view] = batch[view].contiguous(memory_format=torch.channels_last)
        yield batch


def _to_device(batch: Dict[str, Any], device: torch.device) -> Dict[str, Any]:
    """Copy a batch to ``device``; asynchronous (``non_blocking``) only to a CUDA device, where
    the batch comes from pinned memory (on the CPU it would be a no-op at best)."""
    cuda = device.type == "cuda"
    return {k: (v.to(device, non_blocking=cuda) if torch.is_tensor(v) else v) for k, v in batch.items()}


def _optimizer_step(optimizers: Dict[str, Any], scaler, step_hook: bool) -> bool:
    """Step every optimiser through the GradScaler (a plain step unless float16 AMP scales the
    loss). False when AMP skipped the step (inf/NaN gradients lower the scale): then the loop calls
    no ``on_step_end``. Reading the scale syncs host and device, so only for methods with a step hook."""
    scale_before = scaler.get_scale() if (scaler.is_enabled() and step_hook) else None
    for opt in optimizers.values():
        scaler.step(opt)
    scaler.update()
    return scale_before is None or scaler.get_scale() >= scale_before


def _add_logs(sums: Dict[str, Any], loss: torch.Tensor, logs: Dict[str, Any]) -> None:
    """Add one step's loss and logs to the epoch's sums, on the device: no host-device sync per step."""
    sums["loss"] = sums["loss"] + loss.detach() if "loss" in sums else loss.detach()
    for k, v in logs.items():
        v = v.detach() if torch.is_tensor(v) else v
        sums[k] = sums[k] + v if k in sums else v


def _check_epoch_loss(method, sums: Dict[str, Any], n_batches: int, n_train: int, config: TrainConfig,
                      epoch: int) -> None:
    """Raise when the epoch had no batch or its mean loss is not finite."""
    if n_batches == 0:
        raise ValueError(f"the training set ({n_train} images) gives no batch of "
                         f"{config.batch_size}; lower batch_size")
    mean_loss = float(sums["loss"]) / n_batches
    if not math.isfinite(mean_loss):
        raise FloatingPointError(
            f"{method.name}: the loss became {mean_loss} during epoch {epoch + 1}; lower the "
            f"learning rate (lr={config.lr}) or check the loss hyperparameters")


def _train_row(method, sums: Dict[str, Any], n_batches: int, optimizers: Dict[str, Any],
               epoch: int) -> Dict[str, Any]:
    """The epoch's history row so far: mean training logs, the LR at the end, the method's own
    per-epoch logs (``log_epoch``)."""
    row: Dict[str, Any] = {"epoch": epoch + 1}
    row.update({k: float(v) / n_batches for k, v in sums.items()})
    row["lr"] = float(next(iter(optimizers.values())).param_groups[0]["lr"])
    row.update(method.pop_epoch_logs())
    return row


def _evaluate(method, dataset, device, batch_size, prefix: str) -> Dict[str, Any]:
    probs, extra = predict_dataset(method, dataset, device, batch_size, heads=True)
    truth = dataset.labels if hasattr(dataset, "labels") else torch.stack(
        [dataset[i]["labels"] for i in range(len(dataset))])
    row = {f"{prefix}_{k}": v for k, v in metrics.evaluate(probs, truth).items()}
    for head, p in extra.items():
        row[f"{prefix}_mAP[{head}]"] = metrics.mean_average_precision(p, truth)
    observed = getattr(dataset, "observed", None)
    if prefix == "val" and torch.is_tensor(observed) and not torch.equal(observed, truth.to(observed)):
        # model selection without clean labels: the observed validation labels, unknown counted
        # as negative (Cole et al.'s observed variant); the same predictions, no extra pass
        row[OBSERVED] = metrics.mean_average_precision(probs, (observed == 1).long())
    return row


# ------------------------------------------------------------------ used by the loop and by the layers above
def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def iterate_batches(dataset, batch_size: int, shuffle: bool, drop_last: bool, num_workers: int = 0,
                    order: torch.Tensor | None = None, pin_memory: bool = False):
    """Yield batch dicts. In-memory datasets with ``get_batch(indices)`` are sliced directly
    (much faster than a DataLoader on 2 cores); others go through a DataLoader.

    ``order``: the indices to visit (a rank's shard under torchrun); default a permutation
    from the global RNG (``shuffle``) or 0..n-1. ``pin_memory`` only helps with CUDA."""
    n = len(dataset)
    if order is None:
        order = torch.randperm(n) if shuffle else torch.arange(n)
    m = len(order)
    if hasattr(dataset, "get_batch"):
        stop = m - m % batch_size if (drop_last and m > batch_size) else m
        for start in range(0, stop, batch_size):
            batch = dataset.get_batch(order[start:start + batch_size])
            if pin_memory:
                batch = {k: (v.pin_memory() if torch.is_tensor(v) else v) for k, v in batch.items()}
            yield batch
        return
    loader = torch.utils.data.DataLoader(torch.utils.data.Subset(dataset, order.tolist()),
                                         batch_size=batch_size, shuffle=False,
                                         drop_last=drop_last and m > batch_size,
                                         num_workers=num_workers, pin_memory=pin_memory)
    yield from loader


@torch.no_grad()
def predict_dataset(method: Method, dataset, device: torch.device, batch_size: int = 512,
                    heads: bool = False):
    """Eval-mode probabilities of ``method`` over ``dataset`` (no augmentation), on CPU.

    With ``heads=True`` returns ``(probs, {head: probs})`` including ``extra_predictions``.
    """
    method.train(False)
    main, extra = [], {}
    try:
        for batch in iterate_batches(dataset, batch_size, shuffle=False, drop_last=False):
            x = batch["image"].to(device)
            main.append(method.predict_proba(x).float().cpu())
            if heads:
                for k, v in method.extra_predictions(x).items():
                    extra.setdefault(k, []).append(v.float().cpu())
    finally:
        method.train(True)
    probs = torch.cat(main)
    if heads:
        return probs, {k: torch.cat(v) for k, v in extra.items()}
    return probs


def cpu_copy(obj):
    """A detached CPU copy of a (nested) state: what the best-epoch restore and the run store keep."""
    if torch.is_tensor(obj):
        return obj.detach().to("cpu", copy=True)
    if isinstance(obj, dict):
        return {k: cpu_copy(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(cpu_copy(v) for v in obj)
    return obj


def prepare(method, train, config: TrainConfig, device: torch.device | None = None) -> Method:
    """Build (from a name) and set up ``method`` for ``train`` exactly as :func:`fit` does,
    without training: networks initialised from ``config.seed``. Used to load stored weights."""
    config.validate()
    method = build_method(method) if isinstance(method, str) else method
    device = device or pick_device(config.device)
    observed = _observed_of(train)
    seed_everything(config.seed)
    ctx = _context(method, train, observed, config, device)
    method.setup(ctx)
    method.setup_ema()
    return method
