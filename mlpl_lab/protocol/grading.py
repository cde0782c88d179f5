"""The line every self-check prints: ``✓`` (right) or ``✗`` (not yet, with a hint that points
at the idea without giving the answer), a bool returned, never an exception.

The chapters' live exercises grade a prediction with it (:mod:`mlpl_lab.protocol.live_check`) and
the course's exercise checks build on it (:mod:`mlpl_lab.course.exercises.core`), so it sits at
the chapters' layer: the course imports it, the chapters never import the course.

**Who reads the line.** A check hands :func:`verdict` the part of its line that states the
reference answer (the value the library computes, the row a record points to, what the evidence
decides) apart from the rest, as ``reference``. It is printed only for instructors: where
``$MLPL_LAB_ANSWERS`` is ``instructor`` (``mlpl-lab report --instructor``, ``make lab-instructor``;
the kernels inherit it). Anywhere else -- ``make lab``, ``make report``, papermill or nbconvert by
hand -- the line says ✓ or ✗, the student's own answer and the hint, never the reference.
"""
from __future__ import annotations

import functools
import os
from typing import Any, Callable

PASS, FAIL = "✓", "✗"
UNANSWERED = "no answer yet: replace the stub (`None` / `...`) with your code, then run the cell again"


#: ``instructor``: the checks' lines state the reference answer; unset or anything else: they do not
ANSWERS_ENV = "MLPL_LAB_ANSWERS"
INSTRUCTOR = "instructor"


def shows_answers() -> bool:
    """Whether the checks' lines state the reference answer (:data:`ANSWERS_ENV` is ``instructor``)."""
    return os.environ.get(ANSWERS_ENV, "").strip().lower() == INSTRUCTOR


def verdict(ok: bool, title: str, detail: str = "", hint: str = "", reference: str = "") -> bool:
    """Print the check's one line (and the hint on failure); return ``ok``. ``reference``: the
    words that state the reference answer, printed before ``detail`` for instructors only
    (:func:`shows_answers`)."""
    shown = ", ".join(part for part in ((reference if shows_answers() else ""), detail) if part)
    if ok:
        print(f"{PASS} {title}" + (f" — {shown}" if shown else ""))
    else:
        print(f"{FAIL} {title}" + (f" — {shown}" if shown else "") + (f"\n  hint: {hint}" if hint else ""))
    return bool(ok)


def unanswered(answer: Any) -> bool:
    """Whether ``answer`` is still the stub (``None`` or ``...``)."""
    return answer is None or answer is Ellipsis


def never_raises(title: str, hint: str = "") -> Callable:
    """Decorate a check: any exception (from the student's code or from a malformed answer)
    becomes a ``✗`` line naming the exception type and its message, never a traceback."""

    def wrap(check: Callable) -> Callable:
        @functools.wraps(check)
        def run(*args, **kwargs) -> bool:
            try:
                return bool(check(*args, **kwargs))
            except NotImplementedError:
                return verdict(False, title, UNANSWERED, hint)
            except Exception as exc:  # noqa: BLE001 — a check reports, it does not stop the notebook
                return verdict(False, title, f"your code raised {type(exc).__name__}: {exc}", hint)

        return run

    return wrap
