"""Axis labels in words: what a curve or a bar measures and its unit, never the history key
(``val_mAP`` reads "validation mAP (%)")."""
from __future__ import annotations

import re

from ..analysis.display import WORDS

#: history and table keys -> the words a figure's axis uses (the tables' words, and these)
METRIC_WORDS = {
    **WORDS,
    "val_mAP": "validation mAP (%)", "test_mAP": "test mAP (%)", "train_mAP": "training mAP (%)",
    "val_CF1": "validation CF1 (%)", "test_CF1": "test CF1 (%)",
    "val_OF1": "validation OF1 (%)", "test_OF1": "test OF1 (%)",
    "mAP": "test mAP (%)", "CF1": "test CF1 (%)", "OF1": "test OF1 (%)",
    "train_loss": "training loss", "loss": "training loss", "lr": "learning rate",
    "seconds": "time (s)", "epoch_seconds": "time per epoch (s)",
    "peak_memory_mib": "peak memory (MiB)", "tau_h": "τ_h (high-loss threshold)",
    "tau_l": "τ_l (low-loss threshold)",
}


def metric_words(key: str) -> str:
    """The axis label of ``key``: :data:`METRIC_WORDS`, else the key with its underscores read as
    spaces (``"plc_coverage"`` -> ``"plc coverage"``)."""
    key = str(key)
    if key in METRIC_WORDS:
        return METRIC_WORDS[key]
    return re.sub(r"_+", " ", key)
