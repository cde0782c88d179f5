"""The components a run uses, and their versions: what its key holds besides its spec.

:func:`components` maps a :class:`~mlpl_lab.runs.spec.RunSpec` to the components of
:data:`mlpl_lab.core.numerics.VERSIONS` that decide its numbers:

* ``engine`` (every run: the training loop, evaluation, probes, initialisation);
* its data: ``data.scenes`` for the synthetic scenes or ``data.real`` for a real dataset, and
  ``data.regimes`` (the observed labels a regime draws);
* its model: ``model.<module>`` of the backbone :data:`mlpl_lab.models.factory.MODELS` builds
  (``model.small_cnn``, ``model.resnet``), ``head.<name>`` of its head (``head.linear`` unless
  ``model_kwargs["head"]`` names another) and ``model.lgconv`` where ``model_kwargs["lgconv"]``;
* its method's family (:func:`method_family`, from the methods and losses registries);
* and, recursively, the components of the runs it starts from (``init_from``, ``backbone_from``),
  so a run's key follows the key of the run it starts from.

A component missing from the table is an error naming it (a new method module or model needs
its line in :data:`~mlpl_lab.core.numerics.VERSIONS`).
"""
from __future__ import annotations

import functools
from typing import Dict, FrozenSet, Mapping, Optional

from ..core.numerics import VERSIONS

# ``RunSpec`` (mlpl_lab.runs.spec) is named in annotations only: spec.py imports this module


class UnknownComponentError(KeyError):
    """A component a run uses has no version in the table (the message names it and the fix)."""

    def __str__(self) -> str:
        return str(self.args[0])


def _stem(module: str) -> str:
    return module.rsplit(".", 1)[-1]


@functools.lru_cache(maxsize=None)
def method_family(method: str) -> str:
    """The family component of registered method ``method``: ``method.<module>`` of the module that
    registers it (``methods/gr.py`` -> ``method.gr``), or, for one network trained with one
    registered loss (:mod:`mlpl_lab.methods.loss_method`), of the module that registers that loss
    (``an`` -> ``losses/basic.py`` -> ``method.basic``)."""
    from ..methods import loss_method
    from ..methods.registry import METHODS, USER_METHOD, build_method

    if method == USER_METHOD:  # a researcher's file: its content hash is in the spec
        return "method.user_method"
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; registered methods: {', '.join(sorted(METHODS))}")
    factory = METHODS[method]
    if factory.__module__ == loss_method.__name__:
        return f"method.{_stem(build_method(method).loss_fn.__module__)}"
    return f"method.{_stem(factory.__module__)}"


@functools.lru_cache(maxsize=None)
def _model_component(model: str) -> str:
    from ..models.factory import MODELS

    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; choose one of {sorted(MODELS)}")
    factory = MODELS[model]
    return f"model.{_stem(getattr(factory, 'func', factory).__module__)}"


def own_components(spec: "RunSpec") -> FrozenSet[str]:
    """The components ``spec`` itself uses (not those of the runs it starts from)."""
    out = {"engine", "data.regimes",
           "data.scenes" if spec.data.get("dataset", "scenes") == "scenes" else "data.real",
           method_family(spec.method), _model_component(spec.train.get("model", "small_cnn"))}
    kw = spec.train.get("model_kwargs", {}) or {}
    out.add(f"head.{kw.get('head', 'linear')}")
    if kw.get("lgconv"):
        out.add("model.lgconv")
    return frozenset(out)


def components(spec: "RunSpec") -> FrozenSet[str]:
    """Every component ``spec`` uses, those of the runs it starts from included (recursively)."""
    out = set(own_components(spec))
    for dep in (spec.init_from, spec.backbone_from):
        if dep is not None:
            out |= components(dep)
    return frozenset(out)


def versions_of(spec: "RunSpec", versions: Optional[Mapping[str, int]] = None) -> Dict[str, int]:
    """``{component: version}`` for every component ``spec`` uses, read from ``versions``
    (default: this code's :data:`~mlpl_lab.core.numerics.VERSIONS`)."""
    table = VERSIONS if versions is None else versions
    missing = sorted(c for c in components(spec) if c not in table)
    if missing:
        raise UnknownComponentError(
            f"run {spec.describe()} uses component(s) {missing} that have no version in "
            + ("mlpl_lab/core/numerics.py VERSIONS: add a line for each (version 1, with its reason)"
               if versions is None else "the given table (made by other code)")
            + f"; the components known: {', '.join(sorted(table))}")
    return {c: int(table[c]) for c in sorted(components(spec))}


def check_component(name: str) -> str:
    """``name`` if it is a component of :data:`VERSIONS`, else a ValueError listing them."""
    if name not in VERSIONS:
        raise ValueError(f"unknown component {name!r}; the components (mlpl_lab/core/numerics.py "
                         f"VERSIONS): {', '.join(sorted(VERSIONS))}")
    return name
