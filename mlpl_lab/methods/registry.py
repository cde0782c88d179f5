"""Methods registered by name, so notebooks and papermill can pick them with a string.

Each entry may carry a **schedule-bound** flag: its method's targets move until the last epoch
by construction (a schedule tied to the epoch count: GR's k̂ and v, the Large Loss clean rate,
APL's pseudo-labelling rounds, OPML-SP's AP smoothing and label correction), so its validation
curve may still rise at the end however long it trains. A convergence check then marks its runs
schedule-bound (§ in the tables), not unconverged (†), and the chapter's control is the same
comparison at a longer schedule (the length check). The flag is ``True`` or a predicate on the
run's hyperparameters (a method whose moving parts can be switched off)."""
from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, Union

from .base import Method

METHODS: Dict[str, Callable[..., Method]] = {}
#: the runs of a researcher's own method file (``mlpl-lab benchmark --add FILE``): built from the
#: file its spec names by content hash (:mod:`mlpl_lab.methods.user_method`), not one of the
#: course's registered methods
USER_METHOD = "user_file"
#: registered name -> True, or a predicate on the hyperparameters (module docstring)
SCHEDULE_BOUND_FLAGS: Dict[str, Union[bool, Callable[[Mapping[str, Any]], bool]]] = {}


def register_method(name: str, schedule_bound: Union[bool, Callable[[Mapping[str, Any]], bool]] = False):
    def deco(factory):
        if name in METHODS and METHODS[name] is not factory:
            raise KeyError(f"method {name!r} is already registered")
        METHODS[name] = factory
        if schedule_bound:
            SCHEDULE_BOUND_FLAGS[name] = schedule_bound
        return factory

    return deco


def is_schedule_bound(name: str, hparams: Mapping[str, Any] | None = None) -> bool:
    """Whether method ``name`` with ``hparams`` is schedule-bound (its registry entry's flag);
    False for an unregistered name. (Importing this module runs the package's ``__init__`` first,
    which registers every method module.)"""
    flag = SCHEDULE_BOUND_FLAGS.get(str(name), False)
    return bool(flag(dict(hparams or {})) if callable(flag) else flag)


def schedule_bound_methods() -> frozenset:
    """The registered names flagged schedule-bound at their defaults."""
    return frozenset(n for n in SCHEDULE_BOUND_FLAGS if is_schedule_bound(n))


def build_method(name: str, **hparams) -> Method:
    """``build_method("an")``, ``build_method("gr", q2=0.01)``; unknown names list the valid ones.

    Unknown hyperparameters raise ``TypeError`` from the method's constructor, before training.
    """
    if isinstance(name, Method):
        return name
    if name == USER_METHOD:
        from .user_method import build_user_method

        method = build_user_method(**hparams)
        method.name = name
        return method
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; registered methods: {', '.join(sorted(METHODS))}")
    method = METHODS[name](**hparams)
    method.name = name
    return method
