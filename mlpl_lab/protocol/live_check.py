"""The self-check of the live exercises (chapters 01–06): the student's prediction of the test
mAP of the cut-down run they train in class, graded against what that run recorded.

The runs, the table and the flow live in :mod:`mlpl_lab.protocol.live`; this module only grades,
the way every check does (:mod:`.grading`): one ``✓``/``✗`` line, a hint that points at the idea,
a bool returned, never an exception — ``None``, ``...``, a string or a NaN is a ``✗`` too.
"""
from __future__ import annotations

import math
from typing import Any

from .grading import never_raises, unanswered, verdict

#: how far (mAP points) a prediction may land from the live run's test mAP and still pass: the
#: spread of the lab's seeds on a converged cpu run is about one point, so three points asks for
#: the right ballpark, not for luck
TOLERANCE = 3.0
TITLE = "Live exercise — your prediction of the live run's test mAP"
NO_PREDICTION = ("no prediction yet: set `my_prediction` to the test mAP (%) you expect, before the "
                 "training cell, then run the cells again")


def as_number(answer: Any) -> float | None:
    """``answer`` as a finite float, or None (text, a bool, a NaN, an infinity, a list)."""
    if isinstance(answer, bool):
        return None
    try:
        value = float(answer)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def check_live_prediction(answer: Any, live_mAP: Any, hint: str, tol: float = TOLERANCE) -> bool:
    """*Predict, then check*: ``answer`` (test mAP in %, written before training) against the
    live run's recorded test mAP ``live_mAP``, within ``tol`` points. ``✗`` says whether the
    prediction was too high or too low (the table above it shows the value anyway)."""

    @never_raises(TITLE, hint)
    def run() -> bool:
        if unanswered(answer):
            return verdict(False, TITLE, NO_PREDICTION, hint)
        value = as_number(answer)
        if value is None:
            return verdict(False, TITLE, f"{answer!r} is not a number: give the test mAP in %, e.g. 70.5", hint)
        measured = as_number(live_mAP)
        if measured is None:
            return verdict(False, TITLE, "the live run recorded no finite test mAP to grade against: "
                                         "train it first (the cell above)", hint)
        if abs(value - measured) <= tol:
            return verdict(True, TITLE, f"the live run reached {measured:.1f}, you said {value:.1f} "
                                        f"(within {tol:g} points)")
        side = "high" if value > measured else "low"
        return verdict(False, TITLE, f"your {value:.1f} is more than {tol:g} points too {side}", hint)

    return run()
