"""The regime table the protocol's cells run under: every regime of the lab, its short name on the
command line, and what it observes in one sentence.

A column of 07's grid is one of :data:`REGIMES` (label -> (regime name, parameters), the lab's
one table, :data:`mlpl_lab.core.regime_table.REGIME_TABLE`); chapter 00 shows each draw and the
other chapters pick their columns from the same table.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..core.regime_table import regime_table

#: column label -> (regime name, parameters): every regime of the lab
REGIMES: Dict[str, Tuple[str, Dict[str, Any]]] = regime_table()

#: short names for the command line
REGIME_SLUGS = {"single": "single positive", "single_size": "single positive (size-biased)", "drop25": "drop 25 %",
                "drop50": "drop 50 %", "drop75": "drop 75 %", "known10": "known 10 %", "pos10": "positives only 10 %"}


def regime_definition(label: str) -> str:
    """What the regime ``label`` of :data:`REGIMES` observes, from its name and parameters."""
    name, params = REGIMES[label]
    if name == "single_positive" and params.get("bias") == "size":
        return ("one positive per image: the class whose object covers the most visible pixels (an annotator "
                "naming the biggest object first); everything else unknown. Its counts equal single "
                "positive's; which positive is kept differs (chapter 00)")
    if name == "single_positive" and not params.get("bias"):
        return "one positive per image, drawn uniformly among its positives; everything else unknown"
    if name == "drop_positives":
        return f"{100 * params['alpha']:g} % of all positive labels hidden at random, every negative unknown"
    if name == "known_proportion":
        return f"each label entry, positive or negative, known with probability {params['p']:g}"
    if name == "positives_only":
        return (f"the positives of a draw that knows each entry with probability {params['p']:g}; every "
                "negative hidden (the PU setting)")
    raise ValueError(f"no definition for regime {label!r} ({name}, {params}): add one to regime_definition")


def regime_slug(label: str) -> str:
    """The short name of the regime labelled ``label`` (:data:`REGIME_SLUGS`): what a claim's
    identifier names the regime by (:func:`mlpl_lab.analysis.claims.claim_id`)."""
    for slug, name in REGIME_SLUGS.items():
        if name == label:
            return slug
    raise KeyError(f"no short name for regime {label!r}; add one to REGIME_SLUGS")


def resolve_regimes(names: Sequence[str] | None) -> Optional[List[str]]:
    """Regime labels from labels or short names (:data:`REGIME_SLUGS`); a bad name is an error
    listing the choices."""
    if names is None:
        return None
    out = []
    for n in names:
        label = REGIME_SLUGS.get(n, n)
        if label not in REGIMES:
            raise ValueError(f"unknown benchmark regime {n!r}; choose from {list(REGIMES)} or "
                             f"{list(REGIME_SLUGS)}")
        if label not in out:
            out.append(label)
    return out
