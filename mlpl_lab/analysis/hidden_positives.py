"""Where the hidden positives are, and how confident a trained model is about them.

A *hidden positive* is a true positive that the annotation did not give (observed -1):
under assume-negative (AN) training it is a false negative. The embedded data keeps the
truth, so these quantities can be measured rather than only argued about.
"""
from __future__ import annotations

from typing import Dict, Mapping, Tuple

import numpy as np
import torch

from ..core import labels as L

from ..core import regimes as R
from ..engine.train import predict_dataset


def regime_overview(Y, regimes: Mapping[str, Tuple[str, dict]], seed: int = 0):
    """One row per regime: how many labels are observed and how many positives are hidden.

    ``regimes`` maps a display label to ``(regime name, params)``. Columns: observed
    positives per image, share of true positives hidden, share of the entries that AN treats
    as negative which are in fact positive (AN's false-negative rate), share of entries unknown.
    """
    import pandas as pd

    rows = []
    for label, (name, params) in regimes.items():
        observed = R.regime(name, **params)(Y, seed=seed)
        stats = R.label_stats(Y, observed)
        obs = torch.as_tensor(observed)
        rows.append({
            "regime": label,
            "observed positives / image": float((obs == L.POS).sum(1).float().mean()),
            "true positives / image": float(torch.as_tensor(Y).sum(1).float().mean()),
            "hidden positive share": stats["hidden_positive_share"],
            "AN false-negative rate": stats["false_negative_rate_under_an"],
            "unknown share": float((obs == L.UNK).float().mean()),
        })
    return pd.DataFrame(rows).set_index("regime")


def confidence_by_status(probs: torch.Tensor, truth: torch.Tensor, observed: torch.Tensor | None = None
                         ) -> Dict[str, np.ndarray]:
    """Split predicted probabilities by the true status of each entry.

    Returns ``{"hidden positive", "observed positive", "negative"}`` arrays when ``observed``
    is given (train set), else ``{"positive", "negative"}`` (a fully labelled test set).
    """
    probs = torch.as_tensor(probs, dtype=torch.float32)
    truth = torch.as_tensor(truth)
    if probs.shape != truth.shape:
        raise ValueError(f"probs {tuple(probs.shape)} and truth {tuple(truth.shape)} differ in shape")
    if observed is None:
        return {"positive": probs[truth == 1].numpy(), "negative": probs[truth == 0].numpy()}
    observed = torch.as_tensor(observed)
    hidden = (truth == 1) & (observed != L.POS)
    return {
        "hidden positive": probs[hidden].numpy(),
        "observed positive": probs[(truth == 1) & (observed == L.POS)].numpy(),
        "negative": probs[truth == 0].numpy(),
    }


def hidden_positive_confidences(result, splits) -> Dict[str, Dict[str, np.ndarray]]:
    """Confidences of a trained run's model by status, on the train set (hidden vs observed
    positives vs negatives) and on the test set (positives vs negatives)."""
    method = result.method
    device = next(iter(method.networks().values())).parameters().__next__().device
    train_probs = predict_dataset(method, splits.train, device)
    test_probs = predict_dataset(method, splits.test, device)
    return {
        "train": confidence_by_status(train_probs, splits.train.labels, splits.train.observed),
        "test": confidence_by_status(test_probs, splits.test.labels),
    }


def summarise_confidences(conf: Dict[str, np.ndarray], threshold: float = 0.5) -> Dict[str, float]:
    """Mean confidence and share above ``threshold`` for each status (what a notebook records)."""
    out = {}
    for status, values in conf.items():
        out[f"{status} mean"] = float(np.mean(values)) if len(values) else float("nan")
        out[f"{status} >= {threshold}"] = float(np.mean(values >= threshold)) if len(values) else float("nan")
    return out


