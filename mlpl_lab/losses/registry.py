"""The loss registry: every loss is a plain function of logits and observed labels.

A registered loss has the signature ``fn(logits, labels, *, reduction="mean", **hyperparameters)``:

* ``logits``: raw scores, shape (N, C) — never probabilities;
* ``labels``: observed labels in mlpl_lab's encoding (1 observed positive, 0 observed
  negative, -1 unknown), shape (N, C);
* ``reduction``: ``"mean"`` (default: the mean over all N x C entries, the Cole / GR Loss
  code convention), ``"sum"``, or ``"none"`` (the N x C matrix) where the loss is per entry.

Losses whose value depends on the epoch (e.g. SPLC, GR Loss schedules) take ``epoch`` as a
keyword; :class:`mlpl_lab.methods.LossMethod` passes it only to losses that declare it.
Stateful losses (ROLE's label matrix, APL's pseudo-labels, LL-Cp's corrections) keep their
state in a method (``mlpl_lab.methods``), never in the function, so the function stays a
pure formula that the tests can check against an independent oracle.
"""
from __future__ import annotations

import inspect
from typing import Callable, Dict

import torch

LOSSES: Dict[str, Callable[..., torch.Tensor]] = {}


def register_loss(name: str):
    """Decorator: register ``fn`` under ``name`` (names are unique, lower-case)."""

    def deco(fn):
        if name in LOSSES and LOSSES[name] is not fn:
            raise KeyError(f"loss {name!r} is already registered (by {LOSSES[name].__module__})")
        LOSSES[name] = fn
        fn.loss_name = name
        return fn

    return deco


def get(name: str) -> Callable[..., torch.Tensor]:
    """Return the registered loss called ``name``; unknown names list the valid ones."""
    try:
        return LOSSES[name]
    except KeyError:
        raise ValueError(
            f"unknown loss {name!r}; registered losses: {', '.join(sorted(LOSSES))}"
        ) from None


def accepts(fn: Callable, keyword: str) -> bool:
    """True when ``fn`` takes ``keyword`` as a named argument (or **kwargs)."""
    params = inspect.signature(fn).parameters
    return keyword in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def check_inputs(logits: torch.Tensor, labels: torch.Tensor) -> None:
    """Shared argument checks: tensors, same non-empty (N, C) shape, floating logits, labels in
    {1, 0, -1} (the value scan is skipped while a CUDA graph is being captured: it reads back to the
    host, which capture forbids; the replayed graph runs on labels checked before capture)."""
    for name, value in (("logits", logits), ("labels", labels)):
        if not torch.is_tensor(value):
            raise TypeError(f"{name} must be a torch tensor, got {type(value).__name__}; convert "
                            f"with torch.as_tensor({name})")
    if logits.ndim != 2:
        raise ValueError(f"logits must be (N, C), got shape {tuple(logits.shape)}")
    if labels.shape != logits.shape:
        raise ValueError(
            f"labels shape {tuple(labels.shape)} does not match logits shape {tuple(logits.shape)}"
        )
    if logits.numel() == 0:
        raise ValueError(f"empty batch: logits have shape {tuple(logits.shape)}; a loss needs at "
                         "least one image and one class")
    if not torch.is_floating_point(logits):
        raise TypeError(f"logits must be a floating tensor, got {logits.dtype}")
    if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
        return  # inside a CUDA graph's capture: the value scan below reads back to the host, which capture forbids
    bad = (labels != 1) & (labels != 0) & (labels != -1)
    if bool(bad.any()):
        values = sorted({float(v) for v in labels[bad].flatten()[:50].tolist()})[:5]
        raise ValueError(
            f"labels hold values {values} outside {{1, 0, -1}} (mlpl_lab encoding: 1 observed "
            "positive, 0 observed negative, -1 unknown); convert Cole-style +1/-1/0 labels "
            "with mlpl_lab.core.labels.from_cole"
        )


def reduce(matrix: torch.Tensor, reduction: str, denominator=None) -> torch.Tensor:
    """Apply ``reduction`` to an N x C loss matrix; ``"mean"`` divides the sum by
    ``denominator`` where one is given (a masked loss's count of entries it scores)."""
    if reduction == "mean":
        return matrix.mean() if denominator is None else matrix.sum() / denominator
    if reduction == "sum":
        return matrix.sum()
    if reduction == "none":
        return matrix
    raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
