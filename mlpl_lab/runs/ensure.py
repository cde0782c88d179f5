"""Turn run specs into stored runs: every spec already in the store is read back (no training);
the others are handed to one executor (:mod:`mlpl_lab.runs.executors`: here one after another,
Dask workers, or worker processes), trained, saved, and their networks dropped, so memory stays
flat however many runs a notebook needs. ``ensure(specs)`` is what chapters and the benchmark call.

Also here: :func:`read_only` (a block that trains nothing), :func:`execute` (train one spec now),
and a stored run's method rebuilt (:func:`load_method`, :func:`initial_method`,
:func:`pretrained_method`), which call back into :func:`ensure` for the runs they start from.
"""
from __future__ import annotations

import contextlib
from typing import Any, Dict, Iterable, List, Sequence

from ..engine import distributed
from ..engine.train import cpu_copy, fit, init_backbones, prepare
from ..methods import build_method
from . import executors
from .folders import record_only
from .progress import Progress, current_chapter
from .spec import RunSpec
from .splits_cache import build_splits
from .store import RunStore, StoredRun
from .validation import config_of, validate

_READ_ONLY: List[str] = []


@contextlib.contextmanager
def read_only(reason: str):
    """Within this block :func:`ensure` trains nothing: a spec missing from the store raises,
    with ``reason`` (e.g. the CLI's CSV step, which reads what a notebook just stored)."""
    _READ_ONLY.append(reason)
    try:
        yield
    finally:
        _READ_ONLY.pop()


def load_method(run: StoredRun, device: str = "cpu"):
    """Rebuild a stored run's method with its best-val weights (and final label state)."""
    method = initial_method(run.spec, device, pretrained=False)
    blob = run.weights()
    method.load_weights_state(blob["weights"])
    if blob.get("extra"):
        method.load_extra_state(blob["extra"])
    method.train(False)
    return method


def initial_method(spec: RunSpec, device: str = "cpu", pretrained: bool = True):
    """The method of ``spec`` before any training (same initialisation as the run: with
    ``backbone_from``, the pretrained backbone and a fresh head; ``pretrained=False`` skips
    loading it, for callers that overwrite every weight)."""
    splits = build_splits(spec)
    method = build_method(spec.method, **spec.method_params)
    prepare(method, splits.train, config_of(spec, device=device, progress=False))
    if pretrained and spec.backbone_from is not None:
        init_backbones(method, pretrained_method(spec.backbone_from))
    method.train(False)
    return method


def pretrained_method(spec: RunSpec, store: RunStore | None = None):
    """The trained method of a pretraining spec (``RunSpec.backbone_from``): from the store,
    trained first if missing."""
    store = store or RunStore()
    ensure([spec], store=store, quiet=True)  # every rank under torchrun: stored by rank 0
    if record_only(store.path(spec)):  # imported without its weights: trained again here
        execute(spec, store)
    return store.get(spec, loader=load_method).method


def execute(spec: RunSpec, store: RunStore | None = None, progress: Progress | None = None,
            index: int = 1, runs_left: int = 0) -> StoredRun:
    """Train ``spec`` now and store it (use :func:`ensure` to reuse stored runs)."""
    store = store or RunStore()
    splits = build_splits(spec)
    init = backbone = None
    if spec.init_from is not None:
        ensure([spec.init_from], store=store, quiet=True)  # every rank: stored by rank 0
        if record_only(store.path(spec.init_from)):  # imported without the weights it starts from
            execute(spec.init_from, store)
        init = store.get(spec.init_from, loader=load_method).method
    if spec.backbone_from is not None:
        backbone = pretrained_method(spec.backbone_from, store)
    method = build_method(spec.method, **spec.method_params)
    config = config_of(spec)
    cb = None
    chapter = current_chapter() if distributed.is_main() else None
    if progress is not None or chapter is not None:
        def cb(row):
            if progress is not None:
                progress.epoch(index, spec, row, config.epochs, runs_left)
            if chapter is not None:
                chapter.epoch(spec, row, config.epochs)
    result = fit(method, splits.train, splits.val, splits.test, config, init_from=init,
                 backbone_from=backbone, desc=spec.describe(), on_epoch=cb)
    if not distributed.is_main():  # under torchrun rank 0 stores; the others wait for it
        del result, method
        distributed.barrier()
        return None
    weights = cpu_copy(result.method.weights_state())
    extra = cpu_copy(result.method.extra_state())
    path = store.put(spec, result.history, result.best_epoch, result.initial, weights, extra,
                     selected=result.selected)
    del result, method
    distributed.barrier()
    run = store.get(spec, loader=load_method)
    if run is None:  # e.g. a --fresh window set in the future: serve what was just written
        raise RuntimeError(f"the run store at {path} did not return the run just written")
    return run


def ensure(specs: Sequence[RunSpec], store: RunStore | None = None, label: str | None = None,
           quiet: bool = False, workers: int | None = None, scheduler: str | None = None,
           executor: executors.Executor | None = None) -> List[StoredRun]:
    """Stored runs of ``specs`` (same order): read from the store, or trained and stored.

    Every spec is validated first, so a typo fails before any training. Duplicate specs are
    trained once. The missing runs go to ``executor`` (any
    :class:`~mlpl_lab.runs.executors.Executor`), else to the one :func:`executors.choose` picks:
    ``workers=N`` / ``scheduler=ADDRESS`` (or ``MLPL_LAB_WORKERS`` / ``MLPL_LAB_SCHEDULER``) train
    them on Dask workers (:mod:`mlpl_lab.runs.cluster`); the default trains them here, one after
    another.
    """
    store = store or RunStore()
    specs = list(specs)
    for spec in specs:
        if not isinstance(spec, RunSpec):
            raise TypeError(f"ensure() takes RunSpecs, got {type(spec).__name__}")
        validate(spec)
    unique: Dict[str, RunSpec] = {}
    for spec in specs:
        unique.setdefault(spec.key, spec)
    found = {k: store.get(s, loader=load_method) for k, s in unique.items()}
    # under torchrun every rank trains the same list: rank 0's reading of the store decides
    missing = distributed.broadcast_object([k for k, run in found.items() if run is None])
    todo = [unique[k] for k in missing]
    if todo and _READ_ONLY:
        raise RuntimeError(f"{len(todo)} runs are not in the store ({todo[0].describe()}, ...) and "
                           f"this step only reads: {_READ_ONLY[-1]}")
    progress = Progress(len(todo), label) if (todo and distributed.is_main()) else None
    if progress is not None and not quiet:
        progress.note(f"{len(unique) - len(todo)} of {len(unique)} runs stored; training {len(todo)}")
    if todo:
        executor = executor or executors.choose(execute, load_method, workers, scheduler)
        found.update(executor.train(todo, store, progress))
    if not distributed.is_main():
        return []  # the runs live in rank 0's store
    return [found[s.key] for s in specs]


def ensure_grid(specs: Dict[Any, Iterable[RunSpec]], store: RunStore | None = None,
                label: str | None = None, **engine) -> Dict[Any, List[StoredRun]]:
    """``{label: [specs per seed]}`` -> ``{label: [stored runs per seed]}``, trained in one pass
    (one progress estimate for the whole grid; ``workers=`` / ``scheduler=`` / ``executor=``: see
    :func:`ensure`)."""
    flat = [(k, s) for k, ss in specs.items() for s in ss]
    runs = ensure([s for _, s in flat], store=store, label=label, **engine)
    out: Dict[Any, List[StoredRun]] = {k: [] for k in specs}
    for (k, _), run in zip(flat, runs):
        out[k].append(run)
    return out
