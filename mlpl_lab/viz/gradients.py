"""Loss and gradient curves, computed by autograd on the registered training loss itself.

There is deliberately no hand-derived derivative here: a plotted gradient is
``torch.autograd.grad`` of the exact function the training loop calls, so the picture
cannot drift from the code. (The tests compare these curves with closed forms from the
papers, which is how a hand-written formula is *checked*, never how it is *drawn*.)
"""
from __future__ import annotations

from typing import Callable, Dict, Iterable, Sequence, Union

import numpy as np
import torch

from .. import losses

LABEL_NAMES = {"positive": 1, "negative": 0, "unknown": -1}
LossLike = Union[str, Callable[..., torch.Tensor]]


def _label_code(label) -> int:
    if isinstance(label, str):
        if label not in LABEL_NAMES:
            raise ValueError(f"label must be one of {sorted(LABEL_NAMES)} or 1/0/-1, got {label!r}")
        return LABEL_NAMES[label]
    if label not in (1, 0, -1):
        raise ValueError(f"label must be 1 (positive), 0 (negative) or -1 (unknown), got {label!r}")
    return int(label)


def _resolve(loss: LossLike) -> Callable[..., torch.Tensor]:
    return losses.get(loss) if isinstance(loss, str) else loss


def loss_and_gradient(loss: LossLike, label, logits_grid: Iterable[float],
                      context_logits: Sequence[float] = (), context_labels: Sequence[int] = (),
                      **hyperparameters) -> Dict[str, np.ndarray]:
    """Loss value and ∂L/∂z of one entry as its logit z sweeps ``logits_grid``.

    Each grid point is one sample (one row) whose column 0 holds z with ``label`` and whose
    other columns hold ``context_logits`` with ``context_labels`` (e.g. OPML's single
    positive next to many unknowns). The loss is summed (``reduction="sum"``) so the value
    and gradient are those of that one row, not divided by a batch size.

    Returns ``{"logit", "loss", "grad"}`` as float64 numpy arrays.
    """
    fn = _resolve(loss)
    code = _label_code(label)
    grid = torch.as_tensor(np.asarray(list(logits_grid), dtype=np.float64))
    if grid.ndim != 1 or grid.numel() == 0:
        raise ValueError("logits_grid must be a non-empty 1-D sequence of logits")
    if len(context_logits) != len(context_labels):
        raise ValueError("context_logits and context_labels must have the same length")
    values, grads = [], []
    ctx = torch.tensor(list(context_logits), dtype=torch.float64)
    labels = torch.tensor([[code] + [_label_code(c) for c in context_labels]], dtype=torch.long)
    for z in grid:
        z = z.clone().requires_grad_(True)
        row = torch.cat([z.view(1), ctx]).view(1, -1)
        value = fn(row, labels, reduction="sum", **hyperparameters)
        (g,) = torch.autograd.grad(value, z)
        values.append(float(value.detach()))
        grads.append(float(g))
    return {"logit": grid.numpy(), "loss": np.array(values), "grad": np.array(grads)}


def plot_gradient_curves(curves: Dict[str, Dict[str, np.ndarray]], ax=None, what: str = "grad",
                         x: str = "logit", title: str | None = None):
    """Plot several ``loss_and_gradient`` results: ``{legend label: result}``.

    ``x="prob"`` plots against p = σ(z) (the papers' Fig. 1 axes) instead of the logit."""
    import matplotlib.pyplot as plt

    from .palette import colours_for

    ax = ax or plt.subplots(figsize=(5, 3.4))[1]
    colours = colours_for(curves)  # a method keeps its colour (viz.palette)
    for label, res in curves.items():
        xs = 1 / (1 + np.exp(-res["logit"])) if x == "prob" else res["logit"]
        ax.plot(xs, res[what], label=label, color=colours[label])
    ax.axhline(0, c="k", lw=0.6)
    ax.set_xlabel("confidence p = σ(z)" if x == "prob" else "logit z")
    ax.set_ylabel("gradient ∂L/∂z" if what == "grad" else "loss L")
    if title:
        ax.set_title(title)
    ax.legend(fontsize=8)
    return ax
