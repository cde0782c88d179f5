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
from .claims import CI95, CI_FAMILY, trained_epochs


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
    got = trained_epochs(runs)
    return int(default) if got is None else got


def column_label(b: str, b_epochs: int, a: str, a_epochs) -> str:
    """The name of the column of baseline ``b`` trained longer, with the lengths read:
    "partial BCE (171 epochs, as PU-MLC)" where every row of ``a`` trained ``b_epochs`` too
    (``a_epochs``: one length or several, one per row), else both: "partial BCE (128 epochs;
    PU-MLC 171)" (a row of ``a`` read longer than its design, :func:`mlpl_lab.protocol.pilots.settle`)."""
    lengths = sorted({int(e) for e in ([a_epochs] if isinstance(a_epochs, (int, np.integer)) else a_epochs)})
    if lengths == [int(b_epochs)]:
        return f"{b} ({int(b_epochs)} epochs, as {a})"
    return f"{b} ({int(b_epochs)} epochs; {a} {' / '.join(map(str, lengths))})"


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
    (``b`` trained longer), its claim's margin at unequal epochs and with the control (each with
    its family-wise interval and m, and the unadjusted 95 % interval), on how many seeds ``a``
    leads in each, the swing between them, and the verdict the claim reads after its control.
    The lengths are the ones each claim's runs trained (the table's ``_epochs``); ``a_epochs``,
    ``b_epochs`` and ``control_epochs`` (the design's) stand in where a row does not hold them. A
    control whose ``b`` did not train as long as ``a`` says both lengths, not "equal"."""
    lines, lengths = [], set()
    for key, ctl in table.iterrows():
        parent = ctl["_control_of"]
        if not (isinstance(parent, str) and str(key).startswith("trained_longer/")):
            continue
        row = table.loc[parent]
        pa, pb = _read(row, (a_epochs, b_epochs))
        ca, cb = _read(ctl, (a_epochs, control_epochs))
        lengths.add((pa, pb, ca, cb))
        up, ahead = (sum(x > 0 for x in r["_diffs"]) for r in (row, ctl))
        lines.append(
            f"* *{row['claim']}*: {row[CI_FAMILY]} (family-wise, m = {int(row['_m'])}; 95 % {row[CI95]}), "
            f"{a} ahead on {up} of {int(row['_n'])} seeds: alone it {row['_verdict_alone']}. "
            f"With {b} trained {cb} epochs " + ("too" if cb == ca else f"({a} {ca})") + f": {ctl[CI_FAMILY]} "
            f"(family-wise, m = {int(ctl['_m'])}; 95 % {ctl[CI95]}), {a} ahead on {ahead} of {int(ctl['_n'])} "
            f"seeds ({ctl['verdict']}). The swing, {row['_margin'] - ctl['_margin']:+.2f} points, is what "
            f"{cb - pb} more epochs of {b} were worth. The claim reads: **{row['verdict']}**.")
    if not lines:
        return (f"**Equal epochs.** No control of this run trains {b} as long as {a} (its runs are "
                "not stored): the claims that compare them at unequal epochs stand alone.")
    joined = lambda i: " / ".join(str(e) for e in sorted({x[i] for x in lengths}))  # noqa: E731
    equal = all(ca == cb for _, _, ca, cb in lengths)
    head = (f"**A baseline trained shorter flatters the new method** (computed from the claims table "
            f"above). {a} trains {joined(0)} epochs, {b} {joined(1)}; "
            + ("each control compares them at equal epochs:" if equal else
               f"each control trains {b} longer ({joined(3)} epochs; {a} {joined(2)}: not equal, each line "
               "gives both):"))
    return "\n".join([head, ""] + lines)


def _read(row, default: Tuple[Any, Any]) -> Tuple[int, int]:
    """The epochs a claims-table row's two sides trained (its ``_epochs``), ``default`` where unsaid."""
    got = row.get("_epochs") if hasattr(row, "get") else None
    got = got if isinstance(got, tuple) and len(got) == 2 else (None, None)
    return tuple(int(g if g is not None else d) for g, d in zip(got, default))
