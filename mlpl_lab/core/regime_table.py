"""The chapters' regimes by display label, kept free of torch so that labels can be read cheaply.

:mod:`mlpl_lab.core.regimes` re-exports both names; the regime functions live there.
"""
from __future__ import annotations

from typing import Any, Dict, Tuple

#: what a run under the "full" regime is shown as (:func:`mlpl_lab.core.regimes.describe_regime`),
#: which is also the oracle's row label (:mod:`mlpl_lab.catalogue`)
FULL_LABELS = "full labels"

#: the chapters' regimes: display label -> (regime name, parameters), the one table chapters 01, 04
#: and 07 read (each keeps the labels it trains, in its own order); the drop rates are distinct
#: regimes. Adding a regime to the lab is one entry here.
REGIME_TABLE: Dict[str, Tuple[str, Dict[str, Any]]] = {
    "single positive": ("single_positive", {}),
    # the single positive whose object covers the most visible pixels (the extreme of the size-biased
    # labels of Arroyo et al.; core.regimes.single_positive(bias="size") reads the masks the scenes keep)
    "single positive (size-biased)": ("single_positive", {"bias": "size"}),
    "drop 25 %": ("drop_positives", {"alpha": 0.25}),
    "drop 50 %": ("drop_positives", {"alpha": 0.5}),
    "drop 75 %": ("drop_positives", {"alpha": 0.75}),
    "known 10 %": ("known_proportion", {"p": 0.1}),
    "positives only 10 %": ("positives_only", {"p": 0.1}),
}


def regime_table(*labels: str) -> Dict[str, Tuple[str, Dict[str, Any]]]:
    """The rows of :data:`REGIME_TABLE` named by ``labels``, in that order (all of them, in the
    table's order, without ``labels``); an unknown label is an error naming the known ones."""
    unknown = [label for label in labels if label not in REGIME_TABLE]
    if unknown:
        raise KeyError(f"no regime labelled {unknown} in core.regimes.REGIME_TABLE; known: {list(REGIME_TABLE)}")
    return {label: (REGIME_TABLE[label][0], dict(REGIME_TABLE[label][1])) for label in labels or REGIME_TABLE}
