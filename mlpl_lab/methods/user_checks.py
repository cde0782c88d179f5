"""A method file tried on a tiny batch before any run trains (:func:`check_on_tiny_batch`).

A loss is called at every point of its grid on 4 images × 5 classes of logits and observed labels
holding each of 1, 0 and -1; it must return one finite number that depends on the logits, whose
gradient is finite, and leave ``observed`` as it was (the method's label matrix is shared by every
batch). A Method subclass is built at every point, set up on a tiny network, and takes one
training step on 4 tiny images; the step's loss is checked the same way, and its predictions must
be probabilities of shape (images, classes). Each failure is a
:class:`~mlpl_lab.methods.user_file.UserFileError` saying at which grid point and what to fix.
"""
from __future__ import annotations

from typing import Any, Dict

import torch

from ..losses.registry import accepts
from .base import TrainContext
from .user_file import LOOP_KEYWORDS, MAX_CHECKED_POINTS, UserFile, UserFileError, forget, read_user_file

N, C, SIDE = 4, 5, 16


def tiny_batch() -> Dict[str, torch.Tensor]:
    """4 images of 16 px, 5 classes: logits drawn from a fixed seed, observed labels with each of
    1, 0 and -1 (and an image with no positive), the true labels beside them."""
    g = torch.Generator().manual_seed(0)
    observed = torch.tensor([[1, -1, -1, 0, -1], [-1, 1, 0, -1, -1], [-1, -1, -1, -1, -1],
                             [0, 0, 1, -1, 1]], dtype=torch.long)
    labels = (observed == 1).long()
    labels[2, 3] = 1
    return {"image": torch.rand(N, 3, SIDE, SIDE, generator=g), "observed": observed,
            "labels": labels, "index": torch.arange(N),
            "logits": torch.randn(N, C, generator=g)}


def _at(point: Dict[str, Any]) -> str:
    return f" at GRID point {point}" if point else ""


def check_value(uf: UserFile, value: Any, point: Dict[str, Any], what: str, logits=None) -> torch.Tensor:
    """The value a loss (or a step) returned: one finite number with a gradient, and (with
    ``logits``) a finite gradient that reaches them."""
    fail = lambda problem, fix: UserFileError(f"{uf.path}: {what} {problem}{_at(point)}; {fix}")  # noqa: E731
    if not torch.is_tensor(value):
        raise fail(f"returned a {type(value).__name__}, not a torch tensor",
                   "return a tensor built from the logits (e.g. torch's own operations, .mean())")
    if value.numel() != 1:
        raise fail(f"returned a tensor of shape {tuple(value.shape)}, not a scalar",
                   "reduce it to one number (.mean() or .sum())")
    if not torch.isfinite(value.detach()).all():
        raise fail(f"returned {float(value.detach().reshape(-1)[0])} on a tiny batch (4 images × 5 classes)",
                   "guard its logs and divisions (torch.clamp, F.logsigmoid, a small epsilon)")
    if not value.requires_grad:
        raise fail("returned a number with no gradient (it does not depend on the logits)",
                   "compute it from the logits with torch operations (no .item(), no numpy)")
    if logits is not None:
        value.backward()
        grad = logits.grad
        if grad is None:
            raise fail("returned a number whose gradient does not reach the logits",
                       "compute it from the logits with torch operations")
        if not torch.isfinite(grad).all():
            raise fail("has a gradient that is not finite on a tiny batch",
                       "guard its logs and divisions (F.logsigmoid, a small epsilon)")
    return value


def _loop_keywords(uf: UserFile, epochs: int = 2) -> Dict[str, int]:
    """What the loop passes the loss besides its hyperparameters (``UserLossMethod.loss_kwargs``)."""
    return {k: v for k, v in zip(LOOP_KEYWORDS, (0, epochs)) if accepts(uf.target, k)}


def check_loss(uf: UserFile) -> None:
    """The loss at every grid point (the first :data:`MAX_CHECKED_POINTS`) on :func:`tiny_batch`."""
    batch = tiny_batch()
    for point in uf.points(MAX_CHECKED_POINTS):
        logits = batch["logits"].clone().requires_grad_(True)
        observed = batch["observed"].clone()
        try:
            value = uf.target(logits, observed, **point, **_loop_keywords(uf))
        except Exception as exc:  # noqa: BLE001 — any error of the user's loss is reported
            raise UserFileError(f"{uf.path}: loss raised {type(exc).__name__}{_at(point)} on a tiny batch "
                                f"(logits 4 × 5, observed holding 1, 0 and -1): {exc}; fix the loss (it "
                                "gets torch tensors: logits float, observed int64)") from None
        if not torch.equal(observed, batch["observed"]):
            raise UserFileError(f"{uf.path}: loss changed observed in place{_at(point)}; work on a copy "
                                "(observed.clone()) or on new tensors: the labels are shared by every batch")
        check_value(uf, value, point, "loss", logits)


def tiny_context(device: torch.device = torch.device("cpu")) -> TrainContext:
    """A :class:`TrainContext` over :func:`tiny_batch`'s 4 images: the lab's small CNN, Adam."""
    from ..models.factory import build_model

    batch = tiny_batch()

    def make_model():
        return build_model("small_cnn", C, width=4)

    ctx = TrainContext(num_classes=C, num_train=N, epochs=2, device=device,
                       train_observed=batch["observed"].clone(), make_model=make_model,
                       make_optimizer=lambda params: torch.optim.Adam(params, lr=1e-3),
                       train_true_labels=batch["labels"], seed=0, steps_per_epoch=1)
    return ctx


def check_method(uf: UserFile) -> None:
    """The Method subclass at every grid point: built, set up on :func:`tiny_context`, one
    training step and its predictions."""
    cls = uf.target
    for point in uf.points(MAX_CHECKED_POINTS):
        step = "building it"
        try:
            method = cls(**point)
            step = "setup(ctx)"
            ctx = tiny_context()
            batch = tiny_batch()
            ctx.predict_train = lambda: torch.full((N, C), 0.5)
            torch.manual_seed(0)
            method.setup(ctx)
            method.setup_ema()
            method.train(True)
            batch = {k: v for k, v in batch.items() if k != "logits"}
            if "strong" in getattr(method, "views", ("weak",)):
                batch["image_strong"] = batch["image"].flip(-1)
            step = "on_epoch_start(0)"
            method.on_epoch_start(0)
            step = "training_step(batch, 0)"
            out = method.training_step(batch, 0)
        except UserFileError:
            raise
        except Exception as exc:  # noqa: BLE001 — any error of the user's method is reported
            raise UserFileError(f"{uf.path}: {cls.__name__} raised {type(exc).__name__} in {step}{_at(point)} "
                                f"on a tiny batch (4 images of 16 px, 5 classes, the lab's small CNN): {exc}; "
                                "fix the method (the handbook's 'Rank your own method against the course' "
                                "shows the hooks)") from None
        if not (isinstance(out, tuple) and len(out) == 2):
            raise UserFileError(f"{uf.path}: {cls.__name__}.training_step returned {type(out).__name__}"
                                f"{_at(point)}; return (loss, logs), logs a dict of numbers (may be empty)")
        value = check_value(uf, out[0], point, f"{cls.__name__}.training_step's loss")
        value.backward()
        method.train(False)
        with torch.no_grad():
            try:
                probs = method.predict_proba(batch["image"])
            except Exception as exc:  # noqa: BLE001
                raise UserFileError(f"{uf.path}: {cls.__name__}.predict_proba raised {type(exc).__name__}"
                                    f"{_at(point)}: {exc}; it maps images (B, 3, H, W) to probabilities (B, C)") from None
        if not (torch.is_tensor(probs) and tuple(probs.shape) == (N, C) and torch.isfinite(probs).all()
                and bool(((probs >= 0) & (probs <= 1)).all())):
            shape = tuple(probs.shape) if torch.is_tensor(probs) else type(probs).__name__
            raise UserFileError(f"{uf.path}: {cls.__name__}.predict_proba returned {shape}{_at(point)}, not "
                                f"probabilities of shape ({N}, {C}); return torch.sigmoid of the logits")


def check_on_tiny_batch(uf: UserFile) -> None:
    """:func:`check_loss` or :func:`check_method`, by the file's kind (module docstring)."""
    with torch.enable_grad():
        (check_loss if uf.kind == "loss" else check_method)(uf)


def check_user_file(path, reserved=None) -> UserFile:
    """The method file at ``path`` read, its declarations checked
    (:func:`~mlpl_lab.methods.user_file.read_user_file`) and tried on the tiny batch: what
    ``mlpl-lab benchmark --add`` checks before anything is written. Every problem is a
    :class:`~mlpl_lab.methods.user_file.UserFileError` naming the fix."""
    uf = read_user_file(path, reserved)
    try:
        check_on_tiny_batch(uf)
    except UserFileError:
        forget(uf.source)
        raise
    return uf
