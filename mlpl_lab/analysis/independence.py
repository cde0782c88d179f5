"""How independent two generated data sets are: what a rank test over data sets needs to count
each as one more observation.

A rank test across data sets (Friedman, Iman–Davenport, Nemenyi) treats each data set as an
independent draw. Two settings of one generator that share seeds, layouts or labels are not: the
same index then shows nearly the same image with nearly the same labels. Three measurements:

* :func:`pixel_correlation`: the Pearson correlation of the pixels of image ``i`` of one set
  with image ``i`` of the other, for every index (its median is the record's figure; settings that
  share seeds and layouts give medians near 1, independent sets near 0);
* :func:`label_agreement`: for two sets with one label space, the share of label entries that
  agree, beside the share that would agree by chance given each class's frequency in each set
  (``p_a p_b + (1 - p_a)(1 - p_b)`` averaged over classes);
* :func:`shared_draws`: the seeds and structure seeds two data sets' specs have in common.

:func:`independence_table` gives every pair of a collection of data sets.
"""
from __future__ import annotations

from itertools import combinations
from typing import Any, Dict, List, Mapping

import numpy as np


def pixel_correlation(a, b) -> np.ndarray:
    """Per index ``i < min(len(a), len(b))``, the Pearson correlation of image ``a[i]``'s pixels
    with image ``b[i]``'s (images as arrays or tensors ``(N, ...)`` of one shape per image; a
    constant image gives NaN, dropped by the median)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    n = min(len(a), len(b))
    x = a[:n].reshape(n, -1)
    y = b[:n].reshape(n, -1)
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"images of {x.shape[1]} and {y.shape[1]} values cannot be compared pixel by pixel; "
                         "render both sets at one image size")
    x = x - x.mean(1, keepdims=True)
    y = y - y.mean(1, keepdims=True)
    den = np.sqrt((x * x).sum(1) * (y * y).sum(1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (x * y).sum(1) / den


def label_agreement(a, b) -> Dict[str, float]:
    """``{"agreement", "chance"}`` of two ``(N, C)`` {0,1} label matrices of one label space (same
    index, same class): the share of equal entries, and what independent draws at each set's class
    frequencies would give."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    n = min(len(a), len(b))
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"label spaces of {a.shape[1]} and {b.shape[1]} classes: agreement needs one label space")
    a, b = a[:n], b[:n]
    pa, pb = a.mean(0), b.mean(0)
    return {"agreement": float((a == b).mean()), "chance": float((pa * pb + (1 - pa) * (1 - pb)).mean())}


def shared_draws(a: Mapping[str, Any], b: Mapping[str, Any]) -> Dict[str, List[int]]:
    """The split seeds and structure seeds two data sets share (``{"seeds": [...],
    "structure_seeds": [...]}``; each mapping holds ``seeds`` and ``structure_seed``)."""
    return {"seeds": sorted(set(map(int, a.get("seeds", ()))) & set(map(int, b.get("seeds", ())))),
            "structure_seeds": sorted({int(a.get("structure_seed", 0))} & {int(b.get("structure_seed", 0))})}


def independence_table(sets: Mapping[str, Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """Every pair of ``sets`` (``{name: {"images", "labels", "class_names", "seeds",
    "structure_seed"}}``): the median same-index pixel correlation, whether the label spaces are
    one (then the label agreement and its chance level), and the draws they share."""
    rows = []
    for (na, a), (nb, b) in combinations(sets.items(), 2):
        corr = pixel_correlation(a["images"], b["images"])
        same_space = list(a["class_names"]) == list(b["class_names"])
        row = {"a": na, "b": nb, "median_pixel_correlation": float(np.nanmedian(corr)),
               "shared_label_space": same_space,
               "shared_classes": sorted(set(a["class_names"]) & set(b["class_names"])),
               **{f"shared_{k}": v for k, v in shared_draws(a, b).items()}}
        if same_space:
            row.update({f"label_{k}": v for k, v in label_agreement(a["labels"], b["labels"]).items()})
        rows.append(row)
    return rows
