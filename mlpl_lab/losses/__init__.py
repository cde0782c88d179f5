"""Losses for multi-label learning with partial labels, in one registry.

``mlpl_lab.losses.LOSSES`` maps a name to a plain function ``fn(logits, labels, **hp)``;
``mlpl_lab.losses.get(name)`` looks one up.  See :mod:`mlpl_lab.losses.registry` for the
contract every loss follows.
"""
from .registry import LOSSES, accepts, check_inputs, get, reduce, register_loss  # noqa: F401
from . import basic  # noqa: F401  (registers bce, an)
from .basic import an_loss, bce_loss  # noqa: F401

from ..core.discover import import_submodules

# Every module of this package registers its losses on import (chapters add modules, not
# edits here). An import error is a bug, so it is not guarded.
import_submodules(__name__, __path__)
