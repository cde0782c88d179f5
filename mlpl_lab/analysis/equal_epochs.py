"""Comparisons at unequal and at equal epochs: paired differences of two sets of runs, where a
difference curve changes sign, and what an equal-epochs control found, in computed prose.

A new method trained longer than its baseline can lead for lack of the baseline's epochs alone:
a baseline trained shorter flatters the new method. A claim that compares them at unequal epochs
gets a control that trains the baseline as long (:mod:`mlpl_lab.analysis.claims`, "Controls
decide"); :func:`lesson` says, from the claims table, what that control found.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

from .benchmark import converged
from .claims import CI95, CI_FAMILY


@dataclass(frozen=True)
class Difference:
    """``a − b`` of one seed's two runs, read as a run by the tables (its seed, ``best[metric]``,
    and ``converged``: False when either run did not converge)."""

    spec: Any
    best: Dict[str, float]
    converged: Optional[bool]


def paired_differences(a_runs, b_runs, metric: str = "test_mAP") -> List[Difference]:
    """The paired differences ``a − b`` of ``metric``, one per seed both sets hold, by seed."""
    b = {r.spec.seed: r for r in b_runs}
    return [Difference(r.spec, {metric: float(r.best[metric]) - float(b[r.spec.seed].best[metric])},
                       converged([r, b[r.spec.seed]]))
            for r in sorted(a_runs, key=lambda r: r.spec.seed) if r.spec.seed in b]


def epochs_read(runs, default: int) -> int:
    """How long ``runs`` trained: the longest epochs among their specs (the protocol may read a row
    longer than the design's length, :func:`mlpl_lab.protocol.pilots.settle`), else ``default``."""
    got = [int(r.spec.train["epochs"]) for r in runs
           if isinstance(getattr(r.spec, "train", None), Mapping) and "epochs" in r.spec.train]
    return max(got) if got else int(default)


def unequal_said(a: str, b: str, a_epochs: int, b_epochs: int) -> str:
    """", PU-MLC 128 epochs vs partial BCE 54": how long each side of a claim trained, for its
    sentence (empty where both trained as long)."""
    return "" if a_epochs == b_epochs else f", {a} {a_epochs} epochs vs {b} {b_epochs}"


def equal_sentence(claim: str, said: str, epochs: int, b_epochs: Optional[int] = None, a: str = "",
                   b: str = "") -> str:
    """The sentence of the equal-epochs control of ``claim``: the claim's own with its
    :func:`unequal_said` part ``said`` replaced by "equal epochs: both <epochs> (the control)", so
    the two rows read as one comparison, before and after the epochs are made equal. Where the
    control's runs did not train as long (``b_epochs``, side ``b``, differs from ``epochs``, side
    ``a``: a row read longer than its design), it states both instead of "equal"."""
    if b_epochs is not None and b_epochs != epochs:
        both = unequal_said(a, b, epochs, b_epochs) + " (the control)"
        return claim.replace(said, both) if said else claim + both
    return claim.replace(said, f", equal epochs: both {epochs} (the control)") if said else f"{claim} (the control)"


def first_crossing(x, y, a: str, b: str) -> Tuple[float, str]:
    """First sign change of y = a − b over x (linear interpolation): (x, "") or (nan, reason)."""
    for i in range(len(x) - 1):
        if y[i] == 0:
            return float(x[i]), ""
        if y[i] * y[i + 1] < 0:
            return float(x[i] + (x[i + 1] - x[i]) * (-y[i]) / (y[i + 1] - y[i])), ""
    if len(y) and y[-1] == 0:
        return float(x[-1]), ""
    side = "above" if np.all(np.asarray(y) > 0) else "below"
    return math.nan, f"no crossing on the sweep: {a} {side} {b} at every noise level"


def lesson(table, a: str, b: str, a_epochs: int, b_epochs: int, control_epochs: Optional[int]) -> str:
    """What the equal-epochs controls found, as Markdown computed from the claims ``table``
    (:func:`mlpl_lab.analysis.claims.claims_table`): for each control keyed ``trained_longer/…``
    (``b`` trained ``control_epochs``, as long as ``a``), its claim's margin at unequal epochs
    (``a`` trained ``a_epochs``, ``b`` ``b_epochs``) and at equal epochs (each with its
    family-wise interval and m, and the unadjusted 95 % interval), on how many seeds ``a`` leads
    in each, the swing between them, and the verdict the claim reads after its control."""
    lines = []
    for key, ctl in table.iterrows():
        parent = ctl["_control_of"]
        if not (isinstance(parent, str) and str(key).startswith("trained_longer/")):
            continue
        row = table.loc[parent]
        up, ahead = (sum(x > 0 for x in r["_diffs"]) for r in (row, ctl))
        lines.append(
            f"* *{row['claim']}*: {row[CI_FAMILY]} (family-wise, m = {int(row['_m'])}; 95 % {row[CI95]}), "
            f"{a} ahead on {up} of {int(row['_n'])} seeds: alone it {row['_verdict_alone']}. "
            f"With {b} trained {control_epochs} epochs too: {ctl[CI_FAMILY]} (family-wise, "
            f"m = {int(ctl['_m'])}; 95 % {ctl[CI95]}), {a} ahead on {ahead} of {int(ctl['_n'])} seeds "
            f"({ctl['verdict']}). The swing, {row['_margin'] - ctl['_margin']:+.2f} points, is what "
            f"{control_epochs - b_epochs} more epochs of {b} were worth. The claim reads: "
            f"**{row['verdict']}**.")
    if not lines:
        return (f"**Equal epochs.** No control of this run trains {b} as long as {a} (its runs are "
                "not stored): the claims that compare them at unequal epochs stand alone.")
    head = (f"**A baseline trained shorter flatters the new method** (computed from the claims table "
            f"above). {a} trains {a_epochs} epochs, {b} {b_epochs}; each control compares them at "
            "equal epochs:")
    return "\n".join([head, ""] + lines)
