"""The one shape of a chapter's design, and the one rule for a profile a chapter does not name.

Every chapter module that trains declares ``design(profile, **parameters)``, which returns a
frozen dataclass of all its per-profile choices, built the same way:

* **its literals** come from one per-profile table in the module (``DESIGNS``, or a recipe's table
  such as :data:`mlpl_lab.protocol.lac_stages.STAGES`), read by :func:`preset`: the profile's own
  row, else the row of the profile whose designs it takes (``gpu_shape`` takes gpu's,
  :data:`mlpl_lab.protocol.common.DESIGN_OF`), else cpu's -- the one rule for a profile the table
  does not name (a custom one), never an error and never a one-off default;
* **its seeds** are read off the profile, in ``design`` and nowhere else: the profile's first
  ``n`` (``P.seeds[:n]``), or, in a tuned chapter, the selection seed and the fresh seeds after it
  (:func:`mlpl_lab.protocol.tuning.selection_seed`, :func:`~mlpl_lab.protocol.tuning.fresh_seeds`);
  a literal table says how many, never which;
* **its field** ``profile`` holds the :class:`~mlpl_lab.profiles.Profile` itself (it may read a
  real dataset or be a custom profile), and its property ``families`` declares the chapter's
  questions (``{name: Family}``, :class:`mlpl_lab.analysis.claims.Family`) before any run is read.

:func:`shape_problems` checks a design against this shape (the tests run it on every chapter under
every profile and a custom one).
"""
from __future__ import annotations

import dataclasses
from typing import Any, List, Mapping

from ..analysis.claims import Family
from ..profiles import Profile
from .common import DESIGN_OF, as_profile
from .tuning import fresh_seeds

#: the design a profile no per-profile table names takes (a custom profile): the course's own
FALLBACK_DESIGN = "cpu"


def preset(table: Mapping[str, Any], profile) -> Any:
    """A chapter's (or a recipe's) per-profile literals under ``profile``, by the one rule every
    design follows: the profile's own row, else the row of the profile whose designs it takes
    (:data:`~mlpl_lab.protocol.common.DESIGN_OF`: ``gpu_shape`` takes gpu's), else
    :data:`FALLBACK_DESIGN`'s (a profile the table does not name). Seeds are read off the profile
    itself, so a custom profile's design runs on its own seeds (capped at their number)."""
    name = as_profile(profile).name
    for candidate in (name, DESIGN_OF.get(name), FALLBACK_DESIGN):
        if candidate in table:
            return table[candidate]
    raise KeyError(f"the table names neither {name!r} nor {FALLBACK_DESIGN!r}: {sorted(table)}")


def _seeds_in(value) -> List[int]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, (tuple, list)) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return list(value)
    return []


def shape_problems(design) -> List[str]:
    """What keeps ``design`` from the one shape (the module docstring), one line each; empty when
    it has it. Its seed fields (a field whose name holds ``seed``) may only name the profile's seeds
    or the fresh seeds after its selection seed."""
    out = []
    if not (dataclasses.is_dataclass(design) and not isinstance(design, type)):
        return [f"{type(design).__name__} is not a dataclass instance"]
    if not design.__dataclass_params__.frozen:
        out.append(f"{type(design).__name__} is not frozen")
    P = getattr(design, "profile", None)
    if not isinstance(P, Profile):
        out.append(f"{type(design).__name__}.profile is {type(P).__name__}, not a Profile")
        return out
    families = getattr(design, "families", None)
    if not isinstance(families, Mapping) or not all(isinstance(f, Family) and f.name == name
                                                    for name, f in families.items()):
        out.append(f"{type(design).__name__}.families is not {{name: Family of that name}}")
    allowed = set(P.seeds) | set(fresh_seeds(P))
    for f in dataclasses.fields(design):
        if "seed" in f.name:
            stray = sorted(set(_seeds_in(getattr(design, f.name))) - allowed)
            if stray:
                out.append(f"{type(design).__name__}.{f.name} names seeds {stray}, neither the profile's "
                           f"{list(P.seeds)} nor the fresh ones after its selection seed")
    return out
