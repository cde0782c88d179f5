"""Training methods: networks + optimisers + state, plugged into :func:`mlpl_lab.engine.train.fit`.

``build_method(name, **hp)`` builds a registered method; ``METHODS`` lists them.
"""
from .base import Method, TrainContext  # noqa: F401
from .registry import METHODS, build_method, register_method  # noqa: F401
from .loss_method import FullLabelOracle, LossMethod, loss_method_factory  # noqa: F401

from ..core.discover import import_submodules

# Every module of this package registers its methods on import (chapters add modules).
import_submodules(__name__, __path__)
# The catalogue's rows whose method is a plain registered loss train as a LossMethod.
from .zoo import register_stateless  # noqa: E402
from ..catalogue import all_entries  # noqa: E402

STATELESS = tuple(register_stateless(all_entries()))
