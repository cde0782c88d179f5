"""Methods registered by name, so notebooks and papermill can pick them with a string."""
from __future__ import annotations

from typing import Callable, Dict

from .base import Method

METHODS: Dict[str, Callable[..., Method]] = {}


def register_method(name: str):
    def deco(factory):
        if name in METHODS and METHODS[name] is not factory:
            raise KeyError(f"method {name!r} is already registered")
        METHODS[name] = factory
        return factory

    return deco


def build_method(name: str, **hparams) -> Method:
    """``build_method("an")``, ``build_method("gr", q2=0.01)``; unknown names list the valid ones.

    Unknown hyperparameters raise ``TypeError`` from the method's constructor, before training.
    """
    if isinstance(name, Method):
        return name
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; registered methods: {', '.join(sorted(METHODS))}")
    method = METHODS[name](**hparams)
    method.name = name
    return method
