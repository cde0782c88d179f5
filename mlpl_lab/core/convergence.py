"""When is a run converged? The lab's documented criterion, applied to every stored run.

A comparison of runs that are still learning measures how fast each method learns early, not
the method. The lab therefore trains every run until its clean-validation curve flattens and
records, with every run, whether it did:

    gain = max(val mAP over the last quarter of the epochs) − max(val mAP over the epochs before it)
    converged  ⇔  gain < 0.5 (mAP points)

The last quarter is ``ceil(E / 4)`` epochs of a run of ``E`` epochs (at least one, and at least
one epoch before it). A run whose curve is still rising by half a point or more in its last
quarter is *not converged*; a run that peaked earlier and then fell (overfitting, a collapsed
pseudo-labeller) has a gain ≤ 0 and counts as converged — its best-val epoch is what tables
report. Runs of a single epoch cannot be judged (``converged`` is False, with that reason).

This module imports nothing from the package: the store calls it when a run is written and
tables call it to mark unconverged runs.
"""
from __future__ import annotations

import math
from typing import Any, Dict, Sequence

#: mAP points the last quarter may still add
TOLERANCE = 0.5
#: share of the epochs that forms the "last" window
WINDOW = 0.25
CRITERION = (f"val mAP gained over the last quarter of the epochs < {TOLERANCE} "
             "(best of the last quarter minus best before it)")
#: the share of a chapter's (and a series') runs that must converge (the protocol), over every
#: distinct run: a schedule-bound run counts where its length check (its control) agrees
MIN_CONVERGED_SHARE = 0.9
#: why a row whose pilot gained is still at its length (a pilot verdict's ``"after"``, set by
#: :func:`mlpl_lab.protocol.pilots.attach_pilots`, named by :func:`mlpl_lab.analysis.tables.pilot_gained_why`):
#: its chapter reads it trained as long as the pilot on every seed itself (a control), those runs
#: wait in the pending family ``longer: <family>``, the protocol lengthened the row as often as it
#: does, or the profile does not lengthen rows (smoke)
AFTER_CONTROL, AFTER_WAITING, AFTER_CAPPED, AFTER_OFF = "control", "waiting", "capped", "off"


def share_percent(share: float) -> int:
    """``share`` as whole percent, rounded down: a share is printed beside the bar it must reach,
    and rounding 456 of 509 (89.6 %) up to "90 %" would read as reaching it."""
    return math.floor(round(100 * float(share), 9))


def convergence(curve: Sequence[float], tolerance: float = TOLERANCE, window: float = WINDOW) -> Dict[str, Any]:
    """``{"converged", "gain", "last_epochs", "criterion", "reason"}`` of a validation curve.

    ``curve``: val mAP after each epoch (the history's ``val_mAP``), in mAP points."""
    values = [float(v) for v in curve]
    n = len(values)
    out: Dict[str, Any] = {"criterion": CRITERION, "tolerance": tolerance, "epochs": n}
    if n < 2:
        return out | {"converged": False, "gain": math.nan, "last_epochs": n,
                      "reason": "one epoch: nothing to compare the last quarter with"}
    last = min(n - 1, max(1, math.ceil(window * n)))
    before, tail = values[: n - last], values[n - last:]
    if not all(math.isfinite(v) for v in values):
        return out | {"converged": False, "gain": math.nan, "last_epochs": last,
                      "reason": "the validation curve holds a NaN"}
    gain = max(tail) - max(before)
    ok = gain < tolerance
    reason = (f"the last {last} epoch(s) added {gain:+.2f} mAP"
              + ("" if ok else f" (≥ {tolerance}): still learning, train longer"))
    return out | {"converged": bool(ok), "gain": float(gain), "last_epochs": last, "reason": reason}


def run_convergence(history: Sequence[Dict[str, Any]], key: str = "val_mAP") -> Dict[str, Any]:
    """:func:`convergence` of a run's history (rows of per-epoch metrics)."""
    return convergence([row.get(key, math.nan) for row in history])
