"""Model selection without clean labels: which epoch a practitioner would keep.

Every number in the chapters is read at the best epoch on the **clean** validation split
(``val_mAP``). A practitioner with single-positive labels has no clean validation set: the best
they can do is the same regime's *observed* validation labels, unknown counted as negative
(Cole et al.'s observed variant). The engine scores that every epoch as ``val_obs_mAP`` on the
same predictions. Here: the epoch each criterion picks, the test metric there, and the paired
difference over seeds — how much clean validation flatters a method.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

from ..core.history import CLEAN, OBSERVED, best_epoch_by

#: the column of a selection table (``chapters.benchmark.selection_frame``) holding the half-width
#: of the clean-minus-observed difference's paired 95 % t-interval; its plot reads the same name
HALF = "± (95 %)"


def metric_at(run: Any, select: str = OBSERVED, metric: str = "test_mAP") -> Optional[float]:
    """``metric`` at the epoch ``select`` picks, or None where that epoch was not scored on it.
    The test set is scored every epoch unless a spec says ``test_every_epoch=False``; then the
    engine scores it at the clean-best epoch (the history's best row) and at the epoch ``select``
    picks (the run's ``selected`` record). A run made before the engine kept that record has the
    test score at the observed epoch only where it is the clean-best epoch too: None elsewhere."""
    if select == CLEAN:
        return float(run.best[metric])
    epoch = best_epoch_by(run.history, select)
    if epoch is None:
        return None
    kept = (getattr(run, "selected", None) or {}).get(select) or {}
    if kept.get("epoch") == epoch and kept.get(metric) is not None:
        return float(kept[metric])
    if run.history[epoch].get(metric) is None:
        return None
    return float(run.history[epoch][metric])


def by_seed_selected(runs: Sequence[Any], select: str = OBSERVED, metric: str = "test_mAP") -> Dict[int, float]:
    """``{seed: metric at the epoch select picks}`` for a cell's runs, or ``{}`` unless it is known
    on *every* run that recorded ``select``. A cell of runs made before the engine kept the
    observed epoch's test score knows it only on the seeds where both criteria keep the same
    epoch; pairing those alone would report a difference of zero by construction."""
    recorded = [run for run in runs if best_epoch_by(run.history, select) is not None]
    out = {}
    for run in recorded:
        value = metric_at(run, select, metric)
        if value is None:
            return {}
        out[int(run.spec.seed)] = value
    return out


def unscored(runs: Sequence[Any], select: str = OBSERVED, metric: str = "test_mAP") -> int:
    """How many of a cell's runs recorded ``select`` but not ``metric`` at the epoch it picks."""
    return sum(best_epoch_by(run.history, select) is not None and metric_at(run, select, metric) is None
               for run in runs)


def selection_claim(label: str, runs: Sequence[Any], metric: str = "test_mAP"):
    """The paired claim "clean validation flatters ``label``": test ``metric`` at the clean-
    validation best epoch against the observed-validation best epoch, on the seeds that have both."""
    from .claims import Claim

    observed = by_seed_selected(runs, OBSERVED, metric)
    clean = {s: v for s, v in by_seed_selected(runs, CLEAN, metric).items() if s in observed}
    return Claim.of_values(f"{label}: the clean-validation epoch beats the observed-validation epoch",
                           "Cole et al. report both variants", f"{label} (clean val)",
                           f"{label} (observed val)", clean, observed, runs={label: runs})
