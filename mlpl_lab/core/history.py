"""The two history rows every run is read by: the best-validation epoch's and the last."""
from __future__ import annotations

from typing import Any, Dict, List


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
