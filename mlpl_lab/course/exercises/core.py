"""The machinery every exercise check shares: a verdict line, no exception, random inputs.

A check prints one line that starts with ``✓`` (right) or ``✗`` (not yet, with a hint that
points at the idea without giving the answer) and returns ``True`` / ``False``; the words that
state the reference answer go to :func:`verdict` as ``reference``, printed for instructors only
(:func:`~mlpl_lab.protocol.grading.shows_answers`). It never raises: an unfinished answer (``None``, ``...``, a stub function that returns ``None`` or
raises) is a ``✗`` too, so papermill runs a student copy end to end and the notebook goes on
with the library's reference.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Iterable

import numpy as np

from ...protocol.grading import (ANSWERS_ENV, FAIL, INSTRUCTOR, PASS, UNANSWERED, never_raises,  # noqa: F401
                                 shows_answers, unanswered, verdict)


def as_array(x: Any) -> np.ndarray:
    """A torch tensor, numpy array, list or number as a float64 numpy array."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


def max_abs_diff(got: Any, want: Any) -> float:
    """The largest absolute difference, ``inf`` for a shape mismatch or a non-finite entry where
    the reference is finite."""
    g, w = as_array(got), as_array(want)
    if g.shape != w.shape:
        return math.inf
    if g.size == 0:
        return 0.0
    diff = np.abs(g - w)
    return float(np.where(np.isfinite(diff), diff, math.inf).max())


def shape_of(x: Any) -> tuple:
    return tuple(as_array(x).shape)


def same_set(answer: Any, expected: Iterable[str]) -> bool:
    """An answer given as one name or a collection of names, compared as a set (case and
    surrounding spaces ignored)."""
    if isinstance(answer, str):
        answer = [answer]
    norm = lambda s: str(s).strip().lower()  # noqa: E731
    return {norm(a) for a in answer} == {norm(e) for e in expected}


def compare_functions(title: str, student: Callable, reference: Callable, cases: Iterable[tuple],
                      hint: str, atol: float = 1e-5, rtol: float = 1e-4) -> bool:
    """Call ``student(*args)`` and ``reference(*args)`` on every case; ✓ when every output is
    close (``atol + rtol·|reference|``), ✗ with the first failing case's size otherwise."""
    if not callable(student):
        return verdict(False, title, UNANSWERED, hint)
    n = 0
    for args in cases:
        n += 1
        got = student(*args)
        if unanswered(got):
            return verdict(False, title, "your function returned None: " + UNANSWERED, hint)
        want = reference(*args)
        gots = got if isinstance(got, tuple) else (got,)
        wants = want if isinstance(want, tuple) else (want,)
        if len(gots) != len(wants):
            return verdict(False, title, f"expected {len(wants)} return values, got {len(gots)}", hint)
        for g, w in zip(gots, wants):
            if shape_of(g) != shape_of(w):
                return verdict(False, title, f"case {n}: shape {shape_of(g)}, expected {shape_of(w)}", hint)
            err = max_abs_diff(g, w)
            scale = float(np.abs(as_array(w)).max()) if as_array(w).size else 0.0
            if not err <= atol + rtol * scale:
                return verdict(False, title, f"case {n}: off by up to {err:.3g} from the reference", hint)
    return verdict(True, title, f"matches the library's reference on {n} random cases")


def close_number(title: str, answer: Any, expected: float, tol: float, hint: str, unit: str = "",
                 source: str = "the reference gives") -> bool:
    """A numeric prediction against a computed value, within ``tol``."""
    if unanswered(answer):
        return verdict(False, title, UNANSWERED, hint)
    value = float(answer)
    if not math.isfinite(value):
        return verdict(False, title, f"your answer {value} is not a finite number", hint)
    if abs(value - expected) <= tol:
        return verdict(True, title, f"you said {value:.4g}{unit}", reference=f"{source} {expected:.4g}{unit}")
    return verdict(False, title, f"your answer {value:.4g}{unit} is more than {tol:g}{unit} away", hint)


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def implement(title: str, student: Callable, reference: Callable, cases: Iterable[tuple], hint: str,
              **tol) -> bool:
    """*Implement a piece*: :func:`compare_functions`, guarded (never raises)."""
    return never_raises(title, hint)(compare_functions)(title, student, reference, cases, hint, **tol)


def predict(title: str, answer: Any, expected: Callable[[], float], tol: float, hint: str, **kw) -> bool:
    """*Predict, then check*: :func:`close_number` against ``expected()`` (computed inside the
    guard, so a malformed record is a ✗ too)."""
    return never_raises(title, hint)(lambda: close_number(title, answer, expected(), tol, hint, **kw))()
