"""The one training loop. Methods differ only through the hooks of :class:`~mlpl_lab.methods.Method`.

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
"""
from __future__ import annotations

import math
import os
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np
import torch
from tqdm.auto import tqdm

from . import metrics
from .data.augment import VIEWS
from .methods import Method, TrainContext, build_method
from .models import build_model


@dataclass
class TrainConfig:
    """Everything the loop needs besides the method and the data (literal, papermill-friendly)."""

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
    progress: Optional[bool] = None  # None: env MLPL_LAB_PROGRESS (default on)
    checkpoint: Optional[str] = None  # path; saved after every epoch
    resume: bool = False  # continue from ``checkpoint`` if it exists
    num_workers: int = 0  # DataLoader workers for datasets without a fast get_batch

    def validate(self) -> None:
        problems = []
        if not isinstance(self.epochs, int) or self.epochs < 1:
            problems.append(f"epochs must be an integer >= 1 (got {self.epochs!r})")
        if not isinstance(self.batch_size, int) or self.batch_size < 2:
            problems.append(f"batch_size must be an integer >= 2 (got {self.batch_size!r}); "
                            "BatchNorm needs at least 2 images")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            problems.append(f"lr must be a positive number (got {self.lr!r})")
        if self.optimizer not in ("adam", "adamw", "sgd"):
            problems.append(f"optimizer must be 'adam', 'adamw' or 'sgd' (got {self.optimizer!r})")
        if self.augment not in VIEWS:
            problems.append(f"augment must be one of {sorted(VIEWS)} (got {self.augment!r})")
        if self.resume and not self.checkpoint:
            problems.append("resume=True needs a checkpoint path")
        if problems:
            raise ValueError("bad training configuration: " + "; ".join(problems))


@dataclass
class TrainResult:
    method: Method
    config: TrainConfig
    history: List[Dict[str, Any]]
    best_epoch: int

    @property
    def best(self) -> Dict[str, Any]:
        """The history row of the epoch with the best val mAP (what tables report)."""
        return self.history[self.best_epoch]

    @property
    def final(self) -> Dict[str, Any]:
        return self.history[-1]

    def curve(self, key: str = "test_mAP") -> List[float]:
        return [row[key] for row in self.history]

    def history_frame(self):
        import pandas as pd

        return pd.DataFrame([{k: v for k, v in row.items() if not isinstance(v, list)}
                             for row in self.history])

    def summary(self) -> Dict[str, float]:
        row = self.best
        return {k: row[k] for k in ("test_mAP", "test_CF1", "test_OF1", "val_mAP") if k in row} | {
            "best_epoch": self.best_epoch}


def pick_device(device: str = "auto") -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} requested but CUDA is not available; use 'auto' or 'cpu'")
    return dev


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _progress_enabled(config: TrainConfig) -> bool:
    if config.progress is not None:
        return config.progress
    return os.environ.get("MLPL_LAB_PROGRESS", "1").lower() not in ("0", "off", "false", "no")


def iterate_batches(dataset, batch_size: int, shuffle: bool, drop_last: bool, num_workers: int = 0):
    """Yield batch dicts. In-memory datasets with ``get_batch(indices)`` are sliced directly
    (much faster than a DataLoader on 2 cores); others go through a DataLoader."""
    n = len(dataset)
    if hasattr(dataset, "get_batch"):
        order = torch.randperm(n) if shuffle else torch.arange(n)
        stop = n - n % batch_size if (drop_last and n > batch_size) else n
        for start in range(0, stop, batch_size):
            yield dataset.get_batch(order[start:start + batch_size])
        return
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=shuffle,
                                         drop_last=drop_last and n > batch_size,
                                         num_workers=num_workers)
    yield from loader


def _to_device(batch: Dict[str, Any], device: torch.device) -> Dict[str, Any]:
    return {k: (v.to(device, non_blocking=True) if torch.is_tensor(v) else v) for k, v in batch.items()}


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


def _check_dataset(name: str, dataset) -> None:
    if dataset is None or len(dataset) == 0:
        raise ValueError(f"the {name} dataset is empty; build splits with n_{name} >= 1")


def _make_optimizer_factory(config: TrainConfig):
    def make(params):
        if config.optimizer == "adam":
            return torch.optim.Adam(params, lr=config.lr, weight_decay=config.weight_decay)
        if config.optimizer == "adamw":
            return torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)
        return torch.optim.SGD(params, lr=config.lr, momentum=0.9, weight_decay=config.weight_decay)

    return make


def _evaluate(method, dataset, device, batch_size, prefix: str) -> Dict[str, Any]:
    probs, extra = predict_dataset(method, dataset, device, batch_size, heads=True)
    truth = dataset.labels if hasattr(dataset, "labels") else torch.stack(
        [dataset[i]["labels"] for i in range(len(dataset))])
    row = {f"{prefix}_{k}": v for k, v in metrics.evaluate(probs, truth).items()}
    for head, p in extra.items():
        row[f"{prefix}_mAP[{head}]"] = metrics.mean_average_precision(p, truth)
    return row


def fit(method, train, val, test, config: TrainConfig | None = None, *, init_from: Method | None = None,
        **method_hparams) -> TrainResult:
    """Train ``method`` (a :class:`Method` or a registered name) on ``train``; evaluate each
    epoch on ``val`` and ``test`` with their true labels.

    ``init_from``: copy the networks of a trained method (same architecture) before the
    first epoch — how a second training stage (LAC) starts from the first.
    Bad configuration (unknown method, loss or hyperparameter, empty data) fails here,
    before any training.
    """
    config = config or TrainConfig()
    config.validate()
    method = build_method(method, **method_hparams) if isinstance(method, str) else method
    if method_hparams and not isinstance(method, Method):
        raise TypeError("pass hyperparameters either to build_method or to fit, not both")
    for name, ds in (("train", train), ("val", val), ("test", test)):
        _check_dataset(name, ds)
    for view in method.views:
        if view not in VIEWS:
            raise ValueError(f"method {method.name!r} asks for unknown view {view!r}")

    device = pick_device(config.device)
    seed_everything(config.seed)
    observed = train.observed if hasattr(train, "observed") else torch.stack(
        [train[i]["observed"] for i in range(len(train))])
    true_labels = train.labels if hasattr(train, "labels") else None
    num_classes = observed.shape[1]

    def make_model():
        return build_model(config.model, num_classes, **config.model_kwargs)

    ctx = TrainContext(
        num_classes=num_classes, num_train=len(train), epochs=config.epochs, device=device,
        train_observed=observed.clone().long(), make_model=make_model,
        make_optimizer=_make_optimizer_factory(config), seed=config.seed,
        train_true_labels=true_labels,
        predict_train=lambda: predict_dataset(method, train, device, config.eval_batch_size),
    )
    method.setup(ctx)
    if init_from is not None:
        for key, net in method.networks().items():
            sources = init_from.networks()
            source = sources[key] if key in sources else next(iter(sources.values()))
            missing = net.load_state_dict(source.state_dict(), strict=False)
            if missing.missing_keys and len(missing.missing_keys) == len(net.state_dict()):
                raise ValueError(f"init_from: no weights of {key!r} match the new network")
    method.train(True)

    history: List[Dict[str, Any]] = []
    start_epoch = 0
    ckpt = Path(config.checkpoint) if config.checkpoint else None
    if config.resume and ckpt is not None and ckpt.exists():
        state = torch.load(ckpt, map_location=device, weights_only=False)
        method.load_state_dict(state["method"])
        history = state["history"]
        start_epoch = len(history)

    use_amp = bool(config.amp)
    amp_dtype = torch.float16 if device.type == "cuda" else torch.bfloat16
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp and device.type == "cuda")
    show = _progress_enabled(config)
    epochs_bar = tqdm(range(start_epoch, config.epochs), desc=f"{method.name}", disable=not show,
                      initial=start_epoch, total=config.epochs, leave=True)
    train_view = VIEWS[config.augment]
    for epoch in epochs_bar:
        t0 = time.perf_counter()
        seed_everything(config.seed * 1_000_003 + epoch)
        method.on_epoch_start(epoch)
        sums: Dict[str, float] = {}
        n_batches = 0
        batches = iterate_batches(train, config.batch_size, shuffle=True, drop_last=True,
                                  num_workers=config.num_workers)
        for batch in tqdm(batches, total=math.ceil(len(train) / config.batch_size), leave=False,
                          disable=not show, desc=f"epoch {epoch + 1}"):
            batch = _to_device(batch, device)
            raw = batch["image"]
            batch["image"] = train_view(raw)
            if "strong" in method.views:
                batch["image_strong"] = VIEWS["strong"](raw)
            with torch.autocast(device.type, dtype=amp_dtype, enabled=use_amp):
                loss, logs = method.training_step(batch, epoch)
            if not torch.isfinite(loss):
                raise FloatingPointError(
                    f"{method.name}: loss became {loss.item()} at epoch {epoch + 1}, batch "
                    f"{n_batches + 1}; lower the learning rate (lr={config.lr}) or check the "
                    "loss hyperparameters")
            for opt in method.optimizers().values():
                opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            for opt in method.optimizers().values():
                scaler.step(opt)
            scaler.update()
            n_batches += 1
            sums["loss"] = sums.get("loss", 0.0) + float(loss.detach())
            for k, v in logs.items():
                sums[k] = sums.get(k, 0.0) + float(v)
        method.on_epoch_end(epoch)
        row: Dict[str, Any] = {"epoch": epoch + 1}
        row.update({k: v / max(n_batches, 1) for k, v in sums.items()})
        row.update(_evaluate(method, val, device, config.eval_batch_size, "val"))
        row.update(_evaluate(method, test, device, config.eval_batch_size, "test"))
        row["seconds"] = time.perf_counter() - t0
        history.append(row)
        epochs_bar.set_postfix(loss=f"{row['loss']:.4f}", val_mAP=f"{row['val_mAP']:.1f}",
                               test_mAP=f"{row['test_mAP']:.1f}")
        if ckpt is not None:
            ckpt.parent.mkdir(parents=True, exist_ok=True)
            torch.save({"method": method.state_dict(), "history": history,
                        "config": asdict(config)}, ckpt)
    epochs_bar.close()
    best_epoch = max(range(len(history)), key=lambda i: (history[i]["val_mAP"], -i))
    return TrainResult(method=method, config=config, history=history, best_epoch=best_epoch)
