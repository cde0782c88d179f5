"""A chapter's code run as a dry run, so a series' runs are known before it starts
(:mod:`mlpl_lab.chapters.plan`): ``with planning() as asked:`` makes
:func:`mlpl_lab.runs.ensure.ensure` train and read nothing, record the specs it is asked for and
return :class:`PlannedRun` placeholders (reading a result raises :class:`NeedsResults`).

Everything the dry run needs lives here; the rest of the package reaches it only through
:mod:`mlpl_lab.runs.dry_run_hook`. It is deleted once the chapters declare their runs as data and
the planner calls their specs instead (issue 50).
"""
from __future__ import annotations

import contextlib
from typing import Any, List

from . import dry_run_hook
from .ensure import load_method
from .spec import RunSpec
from .splits_cache import _build_splits, clean_val_labels
from .store import RunStore


class NeedsResults(RuntimeError):
    """Code run under :func:`planning` read a run's results: what follows depends on them."""


class PlannedRun:
    """What :func:`mlpl_lab.runs.ensure.ensure` returns under :func:`planning`: the spec, without
    a result (any other attribute raises :class:`NeedsResults`)."""

    __slots__ = ("spec",)

    def __init__(self, spec: RunSpec):
        self.spec = spec

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise NeedsResults(f"{self.spec.describe()}: .{name} needs the run's results (a plan "
                           "records the runs asked for; it trains nothing)")

    def __repr__(self) -> str:
        return f"PlannedRun({self.spec.describe()})"


class _DryRun:
    """One active :func:`planning` block: what :mod:`mlpl_lab.runs.dry_run_hook` hands the
    callers that ask it."""

    def __init__(self, asked: List[RunSpec], serve_stored: bool):
        self.asked, self.serve_stored = asked, serve_stored

    def ensure(self, specs: List[RunSpec], store: RunStore) -> List[Any]:
        """Record ``specs`` (validated already) and train nothing: placeholders, or with
        ``serve_stored`` the runs already stored."""
        self.asked.extend(specs)
        if not self.serve_stored:
            return [PlannedRun(s) for s in specs]
        stored = {s.key: store.get(s, loader=load_method) for s in {s.key: s for s in specs}.values()}
        return [stored[s.key] or PlannedRun(s) for s in specs]

    def splits(self, *args) -> "_DeferredSplits":
        """:func:`mlpl_lab.runs.splits_cache.build_splits`'s answer: built on first use."""
        return _DeferredSplits(*args)

    def pretrained(self, spec: RunSpec, store: RunStore) -> None:
        """Raise :class:`NeedsResults` unless ``spec``'s weights are served from the store."""
        if not (self.serve_stored and store.get(spec, loader=load_method) is not None):
            raise NeedsResults(f"{spec.describe()}: the pretrained backbone needs the run's weights")


@contextlib.contextmanager
def planning(serve_stored: bool = False):
    """A dry run: within this block :func:`mlpl_lab.runs.ensure.ensure` validates its specs,
    appends them to the list this yields (in the order asked for) and returns :class:`PlannedRun`
    placeholders, training nothing; :func:`mlpl_lab.runs.splits_cache.build_splits` builds the
    splits on first use only (their clean validation labels alone without the train and test
    images), so planning a gpu series does not generate its data. ``serve_stored=True``: a run
    already in the store is returned as itself (its records read), so the dry run goes on past a
    choice made from stored results -- a series planned again after its first runs are trained
    learns the runs chosen from them."""
    asked: List[RunSpec] = []
    dry_run_hook.ACTIVE.append(_DryRun(asked, bool(serve_stored)))
    try:
        yield asked
    finally:
        dry_run_hook.ACTIVE.pop()


class _DeferredSplits:
    """:func:`mlpl_lab.runs.splits_cache.build_splits` under :func:`planning`: the splits, built
    on first use."""

    def __init__(self, *args):
        self._args, self._splits = args, None

    def _built(self):
        if self._splits is None:
            self._splits = _build_splits(*self._args)
        return self._splits

    def _val_labels(self):
        spec_or_data, _, _, seed, _ = self._args
        data = spec_or_data.data if isinstance(spec_or_data, RunSpec) else dict(spec_or_data)
        seed = spec_or_data.seed if isinstance(spec_or_data, RunSpec) else seed
        if data.get("dataset", "scenes") == "scenes":
            return clean_val_labels(data, seed)  # the validation scenes only
        return self._built().val.labels

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name == "val":
            return _DeferredVal(self)
        return getattr(self._built(), name)


class _DeferredVal:
    def __init__(self, owner: _DeferredSplits):
        self._owner = owner

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name == "labels":
            return self._owner._val_labels()
        return getattr(self._owner._built().val, name)
