"""Turn run specs into stored runs: build the data, train once, keep the result on disk.

``ensure(specs)`` is what chapters and the benchmark call: every spec already in the store is
read back (no training); the others are trained one after another — two torch jobs at once
are several times slower on 2 cores — saved, and their networks dropped, so memory stays
flat however many runs a notebook needs. Progress goes to a tqdm bar in a notebook and, when
``mlpl-lab report`` runs the notebook, to its terminal (``MLPL_LAB_PROGRESS_FILE``): which
notebook, which run, which epoch, and an estimate of the time left.

``with planning() as asked:`` runs a chapter's code as a dry run: :func:`ensure` trains and reads
nothing, records the specs it is asked for and returns :class:`PlannedRun` placeholders (reading a
result raises :class:`NeedsResults`), so a series' runs are known before it starts
(:mod:`mlpl_lab.chapters.plan`).
"""
from __future__ import annotations

import contextlib
import json
import os
import time
from typing import Any, Dict, Iterable, List, Sequence

from collections import OrderedDict

from ..engine import distributed
from ..data import make_scene_sets, make_val_scenes, with_regime
from ..data.scenes import check_scene_data
from ..core.labels import check_seed
from ..core.regimes import regime as build_regime
from ..methods import build_method
from ..core.paths import cache_dir
from .access import CHAPTER_ENV  # noqa: F401 (the notebook being run: read by the progress lines)
from .spec import RunSpec
from .store import RunStore, StoredRun
from ..engine.train import TrainConfig, cpu_copy, fit, init_backbones, prepare

#: env var naming a file the runner appends progress lines to (set by ``mlpl-lab report``)
PROGRESS_FILE_ENV = "MLPL_LAB_PROGRESS_FILE"

#: env var: the in-memory scene-set cache's budget in GiB (default :data:`SCENE_CACHE_GIB`)
SCENE_CACHE_ENV = "MLPL_LAB_SCENE_CACHE_GIB"
#: default budget of the in-memory scene-set cache: the cpu profile's five seeds take 0.4 GiB,
#: one seed of the gpu profile 1.3 GiB (26,000 float32 images at 64 px)
SCENE_CACHE_GIB = 4.0


class _SceneSetCache:
    """Scene sets of (data, seed) in memory, least recently used first out, bounded in **bytes**
    (the sum of their tensors' sizes): the newest set is always kept, older ones are dropped
    until the total fits. Every regime of a seed shares one copy (:func:`mlpl_lab.data.with_regime`)."""

    def __init__(self):
        self._sets: "OrderedDict[str, tuple]" = OrderedDict()
        self._bytes: Dict[str, int] = {}

    @staticmethod
    def nbytes(sets) -> int:
        return sum(int(t.nbytes) for sc in sets for t in (sc.images, sc.labels, sc.segmentation, sc.boxes,
                                                           sc.contexts, sc.num_objects)
                   ) + sum(int(sc._masks.nbytes) for sc in sets if sc._masks is not None)

    @staticmethod
    def budget() -> int:
        raw = os.environ.get(SCENE_CACHE_ENV)
        try:
            gib = SCENE_CACHE_GIB if raw in (None, "") else float(raw)
        except ValueError:
            raise ValueError(f"{SCENE_CACHE_ENV}={raw!r}: give the budget in GiB, e.g. 4") from None
        if gib < 0:
            raise ValueError(f"{SCENE_CACHE_ENV}={raw!r}: the budget must be >= 0 GiB")
        return int(gib * 2 ** 30)

    def get(self, key: str):
        if key in self._sets:
            self._sets.move_to_end(key)
            return self._sets[key]
        return None

    def make_room(self, incoming: int) -> None:
        """Drop the least recently used sets until ``incoming`` more bytes fit the budget (called
        before a set is read or generated, so the old and the new are not held together)."""
        limit = self.budget()
        while self._sets and sum(self._bytes.values()) + incoming > limit:
            old, _ = self._sets.popitem(last=False)
            del self._bytes[old]

    def put(self, key: str, sets) -> None:
        self._sets[key] = sets
        self._sets.move_to_end(key)
        self._bytes[key] = self.nbytes(sets)
        limit = self.budget()
        while len(self._sets) > 1 and sum(self._bytes.values()) > limit:
            old, _ = self._sets.popitem(last=False)
            del self._bytes[old]

    def total_bytes(self) -> int:
        return sum(self._bytes.values())

    def keys(self) -> List[str]:
        return list(self._sets)

    def clear(self) -> None:
        self._sets.clear()
        self._bytes.clear()


_SCENE_SETS = _SceneSetCache()
#: real-dataset splits (file-backed: their images stay on disk), by count
_SPLITS_CACHE: Dict[str, Any] = {}


def clear_caches() -> None:
    """Forget the scene sets and splits held in memory (the disk cache stays)."""
    _SCENE_SETS.clear()
    _SPLITS_CACHE.clear()


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


_PLANNING: List[List[RunSpec]] = []
_SERVE_STORED: List[bool] = []


class NeedsResults(RuntimeError):
    """Code run under :func:`planning` read a run's results: what follows depends on them."""


class PlannedRun:
    """What :func:`ensure` returns under :func:`planning`: the spec, without a result (any other
    attribute raises :class:`NeedsResults`)."""

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


@contextlib.contextmanager
def planning(serve_stored: bool = False):
    """A dry run: within this block :func:`ensure` validates its specs, appends them to the list
    this yields (in the order asked for) and returns :class:`PlannedRun` placeholders, training
    nothing; :func:`build_splits` builds the splits on first use only (their clean validation
    labels alone without the train and test images), so planning a gpu series does not generate
    its data. ``serve_stored=True``: a run already in the store is returned as itself (its
    records read), so the dry run goes on past a choice made from stored results -- a series
    planned again after its first runs are trained learns the runs chosen from them."""
    asked: List[RunSpec] = []
    _PLANNING.append(asked)
    _SERVE_STORED.append(bool(serve_stored))
    try:
        yield asked
    finally:
        _PLANNING.pop()
        _SERVE_STORED.pop()


class _DeferredSplits:
    """:func:`build_splits` under :func:`planning`: the splits, built on first use."""

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


def build_splits(spec_or_data, regime: str | None = None, regime_params=None, seed: int | None = None,
                 cache: bool = True):
    """The train/val/test splits of a spec (or of a data dict + regime + seed). Cached in
    memory for the process and on disk under ``data/cache`` (scene sets). A data dict with
    ``dataset`` other than ``"scenes"`` reads a real dataset (:mod:`mlpl_lab.data.real_splits`).
    Under :func:`planning` they are built on first use."""
    if _PLANNING:
        return _DeferredSplits(spec_or_data, regime, regime_params, seed, cache)
    return _build_splits(spec_or_data, regime, regime_params, seed, cache)


def _build_splits(spec_or_data, regime, regime_params, seed, cache):
    if isinstance(spec_or_data, RunSpec):
        spec = spec_or_data
        data, regime, regime_params, seed = spec.data, spec.regime, spec.regime_params, spec.seed
    else:
        data = dict(spec_or_data)
        regime = regime or "single_positive"
    seed = check_seed(seed, "seed")
    regime_params = dict(regime_params or {})
    data = dict(data)
    dataset = data.pop("dataset", "scenes")
    if dataset == "scenes":
        sets = _scene_sets(data, seed, cache)
        return with_regime(sets, seed, regime, regime_params)
    key = json.dumps([dataset, data, regime, regime_params, seed], sort_keys=True, default=str)
    if key not in _SPLITS_CACHE:  # a real dataset (Cole's protocol): mlpl_lab.data.real_splits
        if len(_SPLITS_CACHE) > 24:
            _SPLITS_CACHE.clear()
        from ..data.real_splits import make_real_splits

        _SPLITS_CACHE[key] = make_real_splits(dataset, seed=seed, regime=regime,
                                              regime_params=regime_params, **data)
    return _SPLITS_CACHE[key]


def _scene_key(data: Dict[str, Any], seed: int) -> str:
    return json.dumps([data, seed], sort_keys=True, default=str)


def _image_bytes(data: Dict[str, Any]) -> int:
    """The images' and segmentation's bytes of the (train, val, test) sets of ``data`` (float32
    RGB and int8 per pixel; :func:`mlpl_lab.data.make_splits`'s defaults where ``data`` is silent):
    most of a scene set, known before it is built."""
    n = sum(int(data.get(k, d)) for k, d in (("n_train", 4000), ("n_val", 1000), ("n_test", 1000)))
    side = int(data.get("image_size", 32))
    return n * side * side * (3 * 4 + 1)


def _scene_sets(data: Dict[str, Any], seed: int, cache: bool = True):
    """The (train, val, test) scene sets of ``data`` and ``seed``, from memory (bytes-bounded,
    :class:`_SceneSetCache`), the disk cache or the generator."""
    key = _scene_key(data, seed)
    sets = _SCENE_SETS.get(key)
    if sets is None:
        _SCENE_SETS.make_room(_image_bytes(data))
        sets = make_scene_sets(seed=seed, cache_dir=str(cache_dir()) if cache else None, **data)
        _SCENE_SETS.put(key, sets)
    return sets


def clean_val_labels(data: Dict[str, Any], seed: int) -> Any:
    """The clean validation labels (N, C) of ``data`` and ``seed`` — for the embedded scenes
    without building the train and test images (e.g. EPR's and ROLE's expected positives while
    a design is built)."""
    seed = check_seed(seed, "seed")
    data = dict(data)
    if data.get("dataset", "scenes") != "scenes":
        return build_splits(data, "full", {}, seed).val.labels
    data.pop("dataset", None)
    sets = _SCENE_SETS.get(_scene_key(data, seed))
    if sets is not None:
        return sets[1].labels
    return make_val_scenes(seed=seed, cache_dir=str(cache_dir()), **data).labels


def config_of(spec: RunSpec, **runtime):
    """The :class:`~mlpl_lab.engine.train.TrainConfig` of a spec (``runtime``: device, progress, ...)."""
    fields = dict(spec.train)
    if "probes" in fields:
        fields["probes"] = tuple(fields["probes"])
    return TrainConfig(**fields, seed=spec.seed, **runtime)


def validate(spec: RunSpec) -> None:
    """Fail now, before any training, on an unknown method, hyperparameter, regime or setting, or
    on impossible scene parameters (:func:`mlpl_lab.data.scenes.check_scene_data`)."""
    check_seed(spec.seed, "seed")
    if spec.data.get("dataset", "scenes") == "scenes":
        check_scene_data(spec.data)
    method = build_method(spec.method, **spec.method_params)
    if getattr(method, "requires_init_from", False) and spec.init_from is None:
        raise ValueError(f"method {spec.method!r} is a second stage: give its spec init_from=<the "
                         "stage-1 RunSpec> (Profile.spec(..., init_from=stage1))")
    head = getattr(method, "required_head", None)
    if head is not None and spec.train.get("model_kwargs", {}).get("head", "linear") != head:
        raise ValueError(f"method {spec.method!r} needs the {head!r} head; add "
                         f"model_kwargs={{'head': {head!r}}} to the spec's training settings")
    build_regime(spec.regime, **spec.regime_params)
    config_of(spec).validate()
    if spec.init_from is not None:
        validate(spec.init_from)
        first = build_method(spec.init_from.method, **spec.init_from.method_params)
        if getattr(method, "init_weights", "raw") != "raw" and not first.keeps_ema():
            raise ValueError(f"method {spec.method!r} starts from the better of its first stage's raw "
                             f"and EMA weights, but {spec.init_from.method!r} keeps no EMA: give the "
                             "first stage an ema_decay, or start from its raw weights")
    if spec.backbone_from is not None:
        validate(spec.backbone_from)


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
    if _PLANNING and not (_SERVE_STORED[-1] and store.get(spec, loader=load_method) is not None):
        raise NeedsResults(f"{spec.describe()}: the pretrained backbone needs the run's weights")
    return store.get(spec, loader=load_method).method


class Progress:
    """Where the runner reports: a file ``mlpl-lab report`` tails, or the notebook."""

    def __init__(self, total: int, label: str | None = None):
        self.total = total
        self.label = label or os.environ.get(CHAPTER_ENV, "")
        self.path = os.environ.get(PROGRESS_FILE_ENV)
        self.done = 0
        self.epoch_seconds: List[float] = []
        self.t0 = time.perf_counter()

    def _eta(self, epochs_left_here: int, runs_left: int, epochs_per_run: int) -> float | None:
        if not self.epoch_seconds:
            return None
        per_epoch = sum(self.epoch_seconds[-16:]) / len(self.epoch_seconds[-16:])
        return per_epoch * (epochs_left_here + runs_left * epochs_per_run)

    def emit(self, text: str) -> None:
        if self.path:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(text + "\n")

    def epoch(self, i: int, spec: RunSpec, row: Dict[str, Any], epochs: int, runs_left: int) -> None:
        self.epoch_seconds.append(float(row.get("seconds", 0.0)))
        eta = self._eta(epochs - int(row["epoch"]), runs_left, epochs)
        eta_s = "?" if eta is None else _fmt_seconds(eta)
        self.emit(f"[{self.label}] run {i}/{self.total} {spec.describe()}: epoch {row['epoch']}/{epochs}"
                  f" val mAP {row['val_mAP']:.1f} · about {eta_s} left")

    def note(self, text: str) -> None:
        self.emit(f"[{self.label}] {text}")


def _fmt_seconds(s: float) -> str:
    s = max(0.0, s)
    return f"{s / 60:.1f} min" if s >= 90 else f"{s:.0f} s"


class ChapterProgress:
    """One progress line for a notebook's whole chapter (issue 48): ``run k of N``, the run being
    trained, its epoch and the time left for every run the chapter still has to train.

    :func:`mlpl_lab.reporting.report.setup_notebook` starts it (:func:`chapter_progress`) with the
    runs the chapter's dry run found missing (``work``: ``{key: images trained}``); :func:`ensure`
    advances it. The time left is the images still to train times the seconds per image measured
    so far (shown once the chapter has trained for :data:`MEASURED_AFTER_S`; epochs count as they
    end). In a notebook the line is one output, updated in place (one per cell that trains);
    elsewhere a line is printed when a run starts."""

    MEASURED_AFTER_S = 20.0

    def __init__(self, label: str, work: Dict[str, float], images_of=None):
        self.label, self.images_of = label, images_of
        self.work = {k: float(v) for k, v in work.items()}
        self.done: List[str] = []
        self.done_seconds = 0.0
        self.stack: List[Any] = []  # [spec, start time, fraction of its epochs done]
        self._handle, self._cell = None, None

    @property
    def total(self) -> int:
        return len(self.work)

    def seconds_left(self) -> float | None:
        """Images still to train × seconds per image measured here; None before the chapter has
        trained for :data:`MEASURED_AFTER_S` (or finished an epoch)."""
        current = {e[0].key: e[2] for e in self.stack}
        left = sum(w * (1.0 - current.get(k, 0.0)) for k, w in self.work.items() if k not in self.done)
        done = sum(self.work[k] for k in self.done) + sum(self.work[k] * f for k, f in current.items())
        elapsed = self.done_seconds + (time.perf_counter() - self.stack[0][1] if self.stack else 0.0)
        if done <= 0 or elapsed < self.MEASURED_AFTER_S:
            return None
        return elapsed / done * left

    def line(self) -> str:
        if not self.stack:
            return f"[{self.label}] {len(self.done)} of {self.total} runs trained"
        spec, _, frac = self.stack[-1]
        left = self.seconds_left()
        k = min(self.total, len(self.done) + 1)
        return (f"[{self.label}] run {k} of {self.total}: {spec.describe()} · {frac * 100:.0f} % of its epochs"
                + (" · time left: measuring" if left is None else f" · about {_fmt_seconds(left)} left for the chapter"))

    def begin(self, spec: RunSpec) -> None:
        if spec.key not in self.work:  # a run the dry run could not foresee (chosen from results)
            self.work[spec.key] = float(self.images_of(spec) if self.images_of is not None else
                                        int(spec.train.get("epochs", 1)) * int(spec.data.get("n_train", 0) or 0))
        self.stack.append([spec, time.perf_counter(), 0.0])
        self.show()

    def epoch(self, spec: RunSpec, row: Dict[str, Any], epochs: int) -> None:
        if self.stack and self.stack[-1][0].key == spec.key:
            self.stack[-1][2] = min(1.0, int(row.get("epoch", 0)) / max(1, epochs))
        self.show(new_line=False)

    def end(self, spec: RunSpec, finished: bool = True) -> None:
        """The run ended: stored (``finished``), or stopped (an interrupt, an error)."""
        if self.stack and self.stack[-1][0].key == spec.key:
            _, t0, _ = self.stack.pop()
            if not self.stack:
                self.done_seconds += time.perf_counter() - t0
        if finished and spec.key not in self.done:
            self.done.append(spec.key)
        self.show(new_line=False)

    def show(self, new_line: bool = True) -> None:
        text = self.line()
        try:
            from IPython import get_ipython

            ip = get_ipython()
        except ImportError:
            ip = None
        if ip is None or not hasattr(ip, "kernel"):
            if new_line:
                print(text, flush=True)
            return
        from IPython.display import display

        cell = getattr(ip, "execution_count", None)
        if self._handle is None or cell != self._cell:
            self._handle, self._cell = display({"text/plain": text}, raw=True, display_id=True), cell
        else:
            self._handle.update({"text/plain": text}, raw=True)


_CHAPTER: List[ChapterProgress] = []


def chapter_progress(label: str | None, work: Dict[str, float] | None = None,
                     images_of=None) -> ChapterProgress | None:
    """Start the chapter's progress line, replacing an earlier one of this process (``images_of``:
    images trained by a run the dry run did not foresee); ``label=None`` stops it."""
    _CHAPTER[:] = [] if label is None else [ChapterProgress(label, work or {}, images_of)]
    return current_chapter()


def current_chapter() -> ChapterProgress | None:
    return _CHAPTER[-1] if _CHAPTER else None


def execute(spec: RunSpec, store: RunStore | None = None, progress: Progress | None = None,
            index: int = 1, runs_left: int = 0) -> StoredRun:
    """Train ``spec`` now and store it (use :func:`ensure` to reuse stored runs)."""
    store = store or RunStore()
    splits = build_splits(spec)
    init = backbone = None
    if spec.init_from is not None:
        ensure([spec.init_from], store=store, quiet=True)  # every rank: stored by rank 0
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
    path = store.put(spec, result.history, result.best_epoch, result.initial, weights, extra)
    del result, method
    distributed.barrier()
    run = store.get(spec, loader=load_method)
    if run is None:  # e.g. a --fresh window set in the future: serve what was just written
        raise RuntimeError(f"the run store at {path} did not return the run just written")
    return run


def ensure(specs: Sequence[RunSpec], store: RunStore | None = None, label: str | None = None,
           quiet: bool = False, workers: int | None = None, scheduler: str | None = None) -> List[StoredRun]:
    """Stored runs of ``specs`` (same order): read from the store, or trained and stored.

    Every spec is validated first, so a typo fails before any training. Duplicate specs are
    trained once. Under :func:`planning` the specs are recorded, not read or trained. ``workers=N`` / ``scheduler=ADDRESS`` (or ``MLPL_LAB_WORKERS`` /
    ``MLPL_LAB_SCHEDULER``) train the missing runs on Dask workers (:mod:`mlpl_lab.runs.cluster`);
    the default trains them here, one after another.
    """
    store = store or RunStore()
    specs = list(specs)
    for spec in specs:
        if not isinstance(spec, RunSpec):
            raise TypeError(f"ensure() takes RunSpecs, got {type(spec).__name__}")
        validate(spec)
    if _PLANNING:  # a dry run (planning()): record and train nothing
        _PLANNING[-1].extend(specs)
        if not _SERVE_STORED[-1]:
            return [PlannedRun(s) for s in specs]
        stored = {s.key: store.get(s, loader=load_method) for s in {s.key: s for s in specs}.values()}
        return [stored[s.key] or PlannedRun(s) for s in specs]
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
    if todo and not distributed.is_distributed():
        from . import cluster

        engine = cluster.requested(workers, scheduler)
        if engine is not None:  # the missing runs on Dask workers, then read back
            cluster.train(todo, store, execute, progress, *engine)
            found.update({s.key: store.get(s, loader=load_method) for s in todo})
            todo = []
    chapter = current_chapter() if distributed.is_main() else None
    for i, spec in enumerate(todo, start=1):
        t0 = time.perf_counter()
        if chapter is not None:
            chapter.begin(spec)
        finished = False
        try:
            found[spec.key] = execute(spec, store, progress, index=i, runs_left=len(todo) - i)
            finished = True
        finally:
            if chapter is not None:
                chapter.end(spec, finished)
        if progress is not None:
            progress.note(f"run {i}/{len(todo)} {spec.describe()} done in "
                          f"{_fmt_seconds(time.perf_counter() - t0)}")
    if not distributed.is_main():
        return []  # the runs live in rank 0's store
    return [found[s.key] for s in specs]


def ensure_grid(specs: Dict[Any, Iterable[RunSpec]], store: RunStore | None = None,
                label: str | None = None, **engine) -> Dict[Any, List[StoredRun]]:
    """``{label: [specs per seed]}`` -> ``{label: [stored runs per seed]}``, trained in one pass
    (one progress estimate for the whole grid; ``workers=`` / ``scheduler=``: see :func:`ensure`)."""
    flat = [(k, s) for k, ss in specs.items() for s in ss]
    runs = ensure([s for _, s in flat], store=store, label=label, **engine)
    out: Dict[Any, List[StoredRun]] = {k: [] for k in specs}
    for (k, _), run in zip(flat, runs):
        out[k].append(run)
    return out
