"""Predicted confidence at the positions of true positives (OPML paper, Fig. 3).

The paper takes the test label matrix, finds its positive entries and histograms the
predicted confidence there: a loss dominated by (false) negatives pushes those scores
towards 0.  :func:`positive_confidences` returns those scores, for all true positives of a
fully labelled set (``which="positives"``, the paper's figure) or only for the *hidden*
positives of a partially observed training set (``which="hidden"``: true positives the
learner saw as unknown, the false negatives of the AN assumption).
"""
from __future__ import annotations

from typing import Dict, Mapping

import numpy as np
import torch

from ..engine.train import predict_dataset

__all__ = ["positive_confidences", "confidence_histograms", "confidence_summary", "predicted_probabilities"]


def positive_confidences(probs, truth, observed=None, which: str = "positives") -> np.ndarray:
    """The scores ``probs[i, j]`` at true positives (``truth[i, j] = 1``), as a 1-D array.

    ``which``: "positives" (all true positives), "hidden" (true positives whose observed label
    is not 1: needs ``observed``), "observed" (true positives observed as 1).
    """
    p = torch.as_tensor(probs).detach().float().cpu()
    y = torch.as_tensor(truth).cpu()
    if p.shape != y.shape or p.ndim != 2:
        raise ValueError(f"probs {tuple(p.shape)} and truth {tuple(y.shape)} must be the same (N, C) shape")
    if bool(((p < 0) | (p > 1)).any()):
        raise ValueError("probs must be probabilities in [0, 1] (apply torch.sigmoid to logits)")
    sel = y == 1
    if which in ("hidden", "observed"):
        if observed is None:
            raise ValueError(f"which={which!r} needs the observed labels (1/0/-1) of the same images")
        o = torch.as_tensor(observed).cpu()
        if o.shape != y.shape:
            raise ValueError(f"observed {tuple(o.shape)} does not match truth {tuple(y.shape)}")
        sel = sel & ((o != 1) if which == "hidden" else (o == 1))
    elif which != "positives":
        raise ValueError(f"which must be 'positives', 'hidden' or 'observed', got {which!r}")
    return p[sel].numpy().astype(np.float64)


def confidence_histograms(probs_by_method: Mapping[str, torch.Tensor], truth, observed=None,
                          which: str = "positives", bins: int = 10) -> Dict[str, np.ndarray]:
    """``{method: counts}`` over ``bins`` equal bins of [0, 1], plus ``"edges"``."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    out: Dict[str, np.ndarray] = {"edges": edges}
    for label, probs in probs_by_method.items():
        out[label] = np.histogram(positive_confidences(probs, truth, observed, which), bins=edges)[0]
    return out


def confidence_summary(probs_by_method: Mapping[str, torch.Tensor], truth, observed=None,
                       which: str = "positives", low: float = 0.1, high: float = 0.5) -> Dict[str, Dict[str, float]]:
    """Per method: number of scores, their mean, the share below ``low`` (pushed to
    "absent") and the share at or above ``high`` (predicted present at threshold 0.5)."""
    out = {}
    for label, probs in probs_by_method.items():
        c = positive_confidences(probs, truth, observed, which)
        out[label] = {"n": int(c.size), "mean": float(c.mean()) if c.size else float("nan"),
                      f"share_below_{low}": float((c < low).mean()) if c.size else float("nan"),
                      f"share_at_least_{high}": float((c >= high).mean()) if c.size else float("nan")}
    return out


def predicted_probabilities(results, dataset, labels=None) -> Dict[str, torch.Tensor]:
    """``{label: probs}`` of the first seed's trained method over ``dataset`` (eval mode, the
    final-epoch weights the method holds after :func:`mlpl_lab.engine.train.fit`)."""
    labels = list(results) if labels is None else list(labels)
    missing = [k for k in labels if k not in results]
    if missing:
        raise KeyError(f"no results for {missing}; available: {sorted(results)}")
    out = {}
    for k in labels:
        method = results[k][0].method
        device = next(next(iter(method.networks().values())).parameters()).device
        out[k] = predict_dataset(method, dataset, device)
    return out
