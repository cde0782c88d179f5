"""The two history rows every run is read by: the best-validation epoch's and the last; and the
epoch a selection criterion picks (the engine restores it, the analysis reads it)."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

#: the per-epoch validation scores a run can be selected by: the clean labels, and the observed ones
#: (the run's regime on the validation split, unknown counted as negative)
CLEAN = "val_mAP"
OBSERVED = "val_obs_mAP"


def best_epoch_by(history: Sequence[Mapping[str, Any]], select: str = CLEAN) -> Optional[int]:
    """The epoch (0-based) with the highest ``select`` (ties keep the earlier), or None where no
    epoch recorded it (a run made before the metric existed, or one whose validation labels are
    fully observed)."""
    scored = [(float(row[select]), -i) for i, row in enumerate(history) if row.get(select) is not None]
    if not scored:
        return None
    return -max(scored)[1]


class EpochRows:
    """Mixin for a record with ``history`` (one dict per epoch) and ``best_epoch``
    (:class:`~mlpl_lab.engine.train.TrainResult`, :class:`~mlpl_lab.runs.store.StoredRun`)."""

    history: List[Dict[str, Any]]
    best_epoch: int

    @property
    def best(self) -> Dict[str, Any]:
        """The history row of the epoch with the best val mAP (what tables report)."""
        return self.history[self.best_epoch]

    @property
    def final(self) -> Dict[str, Any]:
        """The history row of the last epoch trained."""
        return self.history[-1]
