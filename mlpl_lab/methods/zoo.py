"""Stateless members of the loss zoo: one network trained with one registered loss.

Each method row of the catalogue whose method is a registered loss with no stateful method of its
own is registered here as a method (:func:`register_stateless`), so
``build_method("hill", lamb=1.5)`` trains the ``hill`` loss with those hyperparameters.
Losses that need the epoch (SPLC's correction from ``change_epoch`` on) receive it from
:class:`~mlpl_lab.methods.LossMethod`. The stateful members live in their own modules:
``role`` (learnable label matrix), ``em_apl`` (epoch-end pseudo-labelling), ``ll_r`` /
``ll_ct`` / ``ll_cp`` (clean-rate schedule, stored corrections), ``en`` (epoch-start
pseudo-negatives) and ``gr`` (per-epoch schedules, Table 3 ablations).
"""
from __future__ import annotations

from typing import Iterable, List

from .loss_method import loss_method_factory
from .registry import METHODS, register_method


def register_stateless(entries: Iterable) -> List[str]:
    """Register a plain LossMethod for every method row of ``entries`` (the catalogue's:
    :func:`mlpl_lab.catalogue.all_entries`, or one entry :func:`mlpl_lab.catalogue.register` adds)
    whose method is a registered loss that no module registered as a method (``wan``, ``hill``,
    GR Loss's Table 1 instantiations ``gr_as_*``, ...): a new loss needs its catalogue entry, not a
    list here. Called once the package's modules have registered theirs; returns the names."""
    from ..losses.registry import LOSSES

    names = []
    for e in entries:
        if e.method in LOSSES and e.method not in METHODS:
            register_method(e.method)(loss_method_factory(e.method))
            names.append(e.method)
    return names
