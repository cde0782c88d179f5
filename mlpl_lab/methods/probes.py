"""Train-set probes: measurements of any method on its training set, taken by the loop.

A probe is a registered function ``fn(probs, observed, true_labels) -> {name: number}`` of
eval-mode train-set probabilities (no augmentation), the observed labels (1/0/-1) and the
TRUE labels (diagnostics only — a probe never feeds training). ``TrainConfig.probes`` names
the probes of a run; the loop runs them once before the first epoch (``result.initial``) and
after every epoch (``train_<name>`` in the history row), on the first ``probe_size`` training
images (a fixed subset: no random numbers are drawn, so a probed run trains exactly like an
unprobed one).
"""
from __future__ import annotations

from typing import Callable, Dict

import torch

from ..core import metrics

PROBES: Dict[str, Callable[..., Dict[str, float]]] = {}


def register_probe(name: str):
    def deco(fn):
        PROBES[name] = fn
        return fn

    return deco


def _unknown_split(probs, observed, true_labels):
    unk = observed == -1
    return probs[unk & (true_labels == 1)], probs[unk & (true_labels == 0)]


@register_probe("separation")
def separation_probe(probs: torch.Tensor, observed: torch.Tensor, true_labels: torch.Tensor) -> Dict[str, float]:
    """GR Loss Fig. 3a: W1 distance between the confidences of hidden positives and of true
    negatives among the unknown labels (NaN when either group is empty); plus the mean
    confidence of each group."""
    hidden, negatives = _unknown_split(probs, observed, true_labels)
    if hidden.numel() == 0 or negatives.numel() == 0:
        return {"separation": float("nan"), "hidden_conf": float("nan"), "negative_conf": float("nan")}
    return {"separation": metrics.wasserstein_1d(hidden.numpy(), negatives.numpy()),
            "hidden_conf": float(hidden.mean()), "negative_conf": float(negatives.mean())}


def run_probes(names, probs: torch.Tensor, observed: torch.Tensor, true_labels: torch.Tensor) -> Dict[str, float]:
    out: Dict[str, float] = {}
    for name in names:
        out.update(PROBES[name](probs, observed, true_labels))
    return out
