"""Stateless members of the loss zoo: one network trained with one registered loss.

Each name is registered both as a loss (``mlpl_lab.losses``) and as a method here, so
``build_method("hill", lamb=1.5)`` trains the ``hill`` loss with those hyperparameters.
Losses that need the epoch (SPLC's correction from ``change_epoch`` on) receive it from
:class:`~mlpl_lab.methods.LossMethod`. The stateful members live in their own modules:
``role`` (learnable label matrix), ``em_apl`` (epoch-end pseudo-labelling), ``ll_r`` /
``ll_ct`` / ``ll_cp`` (clean-rate schedule, stored corrections), ``en`` (epoch-start
pseudo-negatives) and ``gr`` (per-epoch schedules, Table 3 ablations).
"""
from __future__ import annotations

from .loss_method import loss_method_factory
from .registry import register_method

#: zoo losses that train as a plain LossMethod (``an`` is registered beside LossMethod, in loss_method.py).
STATELESS = ("wan", "an_ls", "epr", "focal", "asl", "hill", "splc", "em",
             # GR Loss Table 1 instantiations (framework form of Hill, SPLC and EM)
             "gr_as_hill", "gr_as_splc", "gr_as_splc_code", "gr_as_em")

for _name in STATELESS:
    register_method(_name)(loss_method_factory(_name))
