"""Side information about the training set that a method is *given* (not learnt): class priors,
label cardinalities.

Where it comes from, first found first:

1. the training set itself: a dataset with a ``side_info`` mapping hands it to the method through
   the engine's context (``ctx.extras``; :func:`mlpl_lab.engine.train.fit` copies it at setup), so
   a chapter can give estimated, noisy or annotator-reported values, one entry per key below;
2. else the statistic of the training set's true labels (``ctx.train_true_labels``) that the key
   names — the side information the papers assume is known. The method reads it **once, at
   setup**, as the value the key names; it never trains on the true labels themselves.

Keys (``SIDE_INFO_KEYS``):

* ``"class_priors"``: (C,) floats, π_j = P(y_j = 1) (Crisp with the true priors);
* ``"cardinality"``: (N,) integers, k_i = Σ_j y_ij of each training image, in the training set's
  row order (indexed by ``batch["index"]`` like the labels);
* ``"max_cardinality"``: one integer, max_i k_i;
* ``"cardinality_distribution"``: (K + 1,) floats, P(k) for k = 0..K.
"""
from __future__ import annotations

from typing import Any

import torch

SIDE_INFO_KEYS = ("class_priors", "cardinality", "max_cardinality", "cardinality_distribution")


def _from_truth(key: str, truth: torch.Tensor) -> Any:
    y = (torch.as_tensor(truth) == 1).long()
    k = y.sum(dim=1)
    if key == "class_priors":
        return y.double().mean(dim=0).float()
    if key == "cardinality":
        return k
    if key == "max_cardinality":
        return int(k.max()) if k.numel() else 0
    return (torch.bincount(k, minlength=1).double() / max(len(k), 1)).float()


def side_information(ctx, key: str) -> Any:
    """The value of ``key`` for the training set of ``ctx`` (module docstring: the dataset's
    ``side_info`` first, else the true labels' statistic). A count the dataset gives per image
    yields the max and the distribution too. No source: a ValueError naming both."""
    if key not in SIDE_INFO_KEYS:
        raise ValueError(f"unknown side information {key!r}; known: {SIDE_INFO_KEYS}")
    given = dict(getattr(ctx, "extras", None) or {})
    if key in given:
        return given[key]
    if key in ("max_cardinality", "cardinality_distribution") and "cardinality" in given:
        k = torch.as_tensor(given["cardinality"]).long().flatten()
        return int(k.max()) if key == "max_cardinality" else (
            torch.bincount(k, minlength=1).double() / max(len(k), 1)).float()
    if ctx.train_true_labels is None:
        raise ValueError(f"side information {key!r}: the training set gives none (side_info) and has "
                         "no true labels to compute it from; give it as train.side_info[{key!r}]")
    return _from_truth(key, ctx.train_true_labels)


#: the share of a run's epochs the side-information methods warm up with AN by default
WARMUP_SHARE = 1 / 6


def warmup_length(warmup_epochs, epochs: int) -> int:
    """The AN warm-up of a side-information method: ``warmup_epochs`` where given, else
    :data:`WARMUP_SHARE` of the run's ``epochs`` rounded, at least 1 (never the whole run)."""
    if warmup_epochs is not None:
        return int(warmup_epochs)
    return max(1, min(int(round(epochs * WARMUP_SHARE)), max(int(epochs) - 1, 1)))
