"""Model selection without clean labels (issue 52): which epoch a practitioner would keep.

Every number in the chapters is read at the best epoch on the **clean** validation split
(``val_mAP``). A practitioner with single-positive labels has no clean validation set: the best
they can do is the same regime's *observed* validation labels, unknown counted as negative
(Cole et al.'s observed variant). The engine scores that every epoch as ``val_obs_mAP`` on the
same predictions. Here: the epoch each criterion picks, the test metric there, and the paired
difference over seeds — how much clean validation flatters a method.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Sequence

CLEAN = "val_mAP"
OBSERVED = "val_obs_mAP"


def best_epoch_by(history: Sequence[Mapping[str, Any]], select: str = OBSERVED) -> Optional[int]:
    """The epoch (0-based) with the highest ``select`` (ties keep the earlier, as the engine
    does), or None where no epoch recorded it (a run made before the metric existed, or one whose
    validation labels are fully observed)."""
    scored = [(float(row[select]), -i) for i, row in enumerate(history) if row.get(select) is not None]
    if not scored:
        return None
    return -max(scored)[1]


def metric_at(run: Any, select: str = OBSERVED, metric: str = "test_mAP") -> Optional[float]:
    """``metric`` at the epoch ``select`` picks, or None where that epoch was not scored on it
    (the test set is scored every epoch unless a spec says ``test_every_epoch=False``)."""
    if select == CLEAN:
        return float(run.best[metric])
    epoch = best_epoch_by(run.history, select)
    if epoch is None or run.history[epoch].get(metric) is None:
        return None
    return float(run.history[epoch][metric])


def by_seed_selected(runs: Sequence[Any], select: str = OBSERVED, metric: str = "test_mAP") -> Dict[int, float]:
    """``{seed: metric at the epoch select picks}``, the seeds where it is known."""
    out = {}
    for run in runs:
        value = metric_at(run, select, metric)
        if value is not None:
            out[int(run.spec.seed)] = value
    return out


def selection_claim(label: str, runs: Sequence[Any], metric: str = "test_mAP"):
    """The paired claim "clean validation flatters ``label``": test ``metric`` at the clean-
    validation best epoch against the observed-validation best epoch, on the seeds that have both."""
    from .claims import Claim

    observed = by_seed_selected(runs, OBSERVED, metric)
    clean = {s: v for s, v in by_seed_selected(runs, CLEAN, metric).items() if s in observed}
    return Claim.of_values(f"{label}: the clean-validation epoch beats the observed-validation epoch",
                           "Cole et al. report both variants", f"{label} (clean val)",
                           f"{label} (observed val)", clean, observed, runs={label: runs})
