"""EPR's and ROLE's hyperparameter k, the expected positives per image, in one place: chapters 02
and 07 give those methods the same k, and both take it from here.

k is the mean number of positives per image on the **clean validation** labels of a split seed
(Cole et al. take it as known; the validation set is clean in this protocol and already used for
model selection, so no training label is peeked at), rounded to 4 decimals as the run specs hold
it. For the embedded scenes the labels are drawn without painting the images
(:func:`mlpl_lab.runs.splits_cache.clean_val_labels`), so a design that asks for EPR or ROLE is
planned without building a scene set.
"""
from __future__ import annotations

import json
from typing import Dict

from ..runs.splits_cache import clean_val_labels
from .common import as_profile

_K: Dict[str, float] = {}


def expected_positives(splits_or_labels) -> float:
    """Average number of positives per image of the validation labels: the splits (their
    ``val``), or the labels themselves (N, C)."""
    labels = getattr(getattr(splits_or_labels, "val", None), "labels", splits_or_labels)
    return float(labels.float().sum(1).mean())


def expected_num_pos(profile, seed: int) -> float:
    """k under ``profile``'s data on split seed ``seed``: :func:`expected_positives` of the clean
    validation labels, rounded to 4 decimals (the value EPR's and ROLE's specs carry). Memoised
    per data and seed."""
    data = as_profile(profile).data_kwargs()
    key = json.dumps([data, int(seed)], sort_keys=True, default=str)
    if key not in _K:
        _K[key] = round(expected_positives(clean_val_labels(data, seed)), 4)
    return _K[key]
