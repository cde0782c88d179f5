"""The one hook through which a dry run (:mod:`mlpl_lab.runs.dry_run`) stands in for training.

While :func:`mlpl_lab.runs.dry_run.planning` is active, :func:`active` returns its dry run and
three places ask it first: :func:`mlpl_lab.runs.ensure.ensure` (record the specs, train nothing),
:func:`mlpl_lab.runs.splits_cache.build_splits` (build the splits on first use) and
:func:`mlpl_lab.runs.ensure.pretrained_method` (a backbone needs results). The dry run goes once
the chapters declare their runs as data (issue 50); this module and those three lines go with it.
"""
from __future__ import annotations

from typing import Any, List

#: the active dry runs, innermost last (pushed and popped by ``dry_run.planning``)
ACTIVE: List[Any] = []


def active():
    """The innermost active dry run, or None (the normal case: runs are read or trained)."""
    return ACTIVE[-1] if ACTIVE else None
