"""The series' runs, known before it starts: a plan across the notebooks.

Every chapter declares its runs as data (:mod:`mlpl_lab.protocol.asked`): ``design``
from the profile and the notebook's parameters (its ``parameters`` cell, the profile replaced),
and a pure ``specs(design, stored)``. :func:`plan_series` calls those ``specs``, never the
notebooks: what is decidable from the stored runs is the notebook's plan (:attr:`NotebookPlan.specs`);
the runs a choice made on results still waits for — chapter 06's validation-chosen γ, chapters
02's and 07's tuned hyperparameters — are counted under stand-in choices
(:attr:`NotebookPlan.later`) and the plan says so (:attr:`NotebookPlan.left`). ``mlpl-lab report``
therefore plans in **rounds**: it trains what the plan knows, plans again with the stored runs
read (``serve_stored=True``), trains what the choices now decide, and so on until nothing waits.

The plan's runs are **deduplicated** by key (chapter 07 reads the runs of chapters 01–05; every
run shares its pretraining run), **dependencies included** (a pretraining run named by
``backbone_from``, the stage one named by ``init_from``), and ordered in **waves**: wave 0 holds
the runs that depend on nothing (the pretraining runs, and runs from scratch), wave 1 the runs
whose dependencies are all in wave 0 (the stage-one runs), wave 2 the stage-two runs; each wave
longest first (:func:`level`: a run's images trained × pixels per image, plus the work of the
runs that wait for it), so the pretraining runs start first and the longest chains do not start
last. :mod:`mlpl_lab.runs.workers` trains the plan, then the notebooks execute warm.

:func:`flops_per_image` counts a model's floating-point operations with
``torch.utils.flop_counter.FlopCounterMode`` (matrix multiplications and convolutions, forward
and backward) on the real network :mod:`mlpl_lab.models` builds at a run's image size;
:func:`projection` turns the plan into total FLOPs and a time at a stated throughput
(``mlpl-lab plan --profile gpu --tflops X``).
"""
from __future__ import annotations

import ast
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ..profiles import Profile
from ..runs.spec import RunSpec
from .asked import PENDING_ENV
from ..runs import gpu_records
from ..runs.workers import dependencies
from .common import as_profile
from .registry import training_chapter

#: the GPU check's records (``benchmarks/gpu/check.sh`` on a lent card; absent in an installed package)
GPU_RECORDS = gpu_records.GPU_RECORDS


@dataclass(frozen=True)
class Throughput:
    """A measured effective rate for the projection, and where it was measured."""

    tflops: float
    source: str


def measured_gpu_throughput(records: Path = GPU_RECORDS) -> Optional[Throughput]:
    """The gpu profile's effective rate on one card of the kind the newest GPU check ran on, or ``None``.

    One run's end-to-end rate: the training FLOPs of the check's one run from an empty store
    (``train_run.json``: the pretraining run and AN, their images trained) at ``throughput.json``'s
    forward+backward FLOPs per image, over the run's wall seconds (scenes, evaluation and start-up
    included, so it is below the steady step's ``fit_tflops``). Times, where the check measured the
    throughput levers, the gain in total images/s of the best setting the series uses (several runs
    sharing the card, :func:`mlpl_lab.runs.gpu_records.throughput_choice`) over one run; without
    that record, the one run's rate as measured. The source names the card either way."""
    run, step = gpu_records.read("train_run", records), gpu_records.read("throughput", records)
    try:
        images = run["pretraining"]["images_trained"] + run["an"]["images_trained"]
        single = images * step["gflop_per_image_train"] * 1e9 / run["wall_seconds"] / 1e12
    except (ValueError, KeyError, TypeError, ZeroDivisionError):
        return None
    if not (single > 0 and math.isfinite(single)):
        return None
    where = (f"measured end to end on one {gpu_records.card(run)} by the GPU check (its end-to-end training "
             f"record: {single:.2f} TFLOP/s for one run; the steady step through fit: "
             f"{step.get('fit_tflops', float('nan')):.2f} TFLOP/s)")
    choice = gpu_records.throughput_choice(records)
    if choice is None:
        return Throughput(single, where + "; one run at a time: that check measured no throughput levers")
    return Throughput(single * choice["total_over_one_run"],
                      where + f", times {choice['total_over_one_run']:.2f}: the total images/s of "
                              f"{choice['workers_per_device']} runs sharing the card over one run (its throughput record, "
                              f"{choice['card']}), as the series' workers run them")


def notebook_parameters(path: str | Path) -> Dict[str, Any]:
    """The literals of a notebook's ``parameters`` cell (``{}`` without one)."""
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code" and "parameters" in cell.get("metadata", {}).get("tags", []):
            src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            out = {}
            for node in ast.parse(src).body:
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    out[node.targets[0].id] = ast.literal_eval(node.value)
            return out
    return {}


# ---------------------------------------------------------------------------- the plan itself
def images_per_step(spec: RunSpec) -> int:
    """Forward-backward passes of one network per training image: the networks the method trains
    (two for the co-training family, :class:`~mlpl_lab.methods.coteaching.TwoNetworkMethod`) times
    the views the batch carries (two for LAC's stages with a strong view)."""
    key = json.dumps([spec.method, spec.method_params], sort_keys=True, default=str)
    if key not in _PASSES:
        from ..methods import build_method
        from ..methods.coteaching import TwoNetworkMethod

        method = build_method(spec.method, **spec.method_params)
        _PASSES[key] = (2 if isinstance(method, TwoNetworkMethod) else 1) * len(getattr(method, "views", ("weak",)))
    return _PASSES[key]


_PASSES: Dict[str, int] = {}


def images_trained(spec: RunSpec) -> int:
    """Training images one network passes forward and backward: epochs × n_train ×
    :func:`images_per_step` (0 where the data's size is unknown: a real dataset)."""
    n = int(spec.data.get("n_train", 0) or 0)
    return int(spec.train.get("epochs", 1)) * n * images_per_step(spec)


def images_evaluated(spec: RunSpec) -> int:
    """Images passed forward only: the clean validation set every epoch (the test set too with
    ``test_every_epoch``, else once at the end), and the probes' training images every epoch and
    once before training."""
    d, t = spec.data, spec.train
    epochs, n_val, n_test = int(t.get("epochs", 1)), int(d.get("n_val", 0) or 0), int(d.get("n_test", 0) or 0)
    probes = int(t.get("probe_size", 0)) if t.get("probes") else 0
    every = n_val + (n_test if t.get("test_every_epoch", True) else 0) + probes
    return epochs * every + (0 if t.get("test_every_epoch", True) else n_test) + probes


def work(spec: RunSpec) -> float:
    """What orders a wave, longest first: :func:`images_trained` × pixels per image."""
    side = int(spec.data.get("image_size", 32))
    return float(images_trained(spec)) * side * side


def waves(specs: Iterable[RunSpec]) -> List[List[RunSpec]]:
    """Every distinct run of ``specs`` and of their dependencies (by key), in waves: a run's wave
    is one more than its latest dependency's (0 without any); each wave longest first by
    :func:`level` (ties keep the order in which the runs were first asked for)."""
    seen: Dict[str, RunSpec] = {}
    depth: Dict[str, int] = {}

    def visit(spec: RunSpec) -> int:
        k = spec.key
        if k not in depth:
            deps = dependencies(spec)
            d = 1 + max((visit(x) for x in deps), default=-1)
            seen.setdefault(k, spec)
            depth[k] = d
        return depth[k]

    first: Dict[str, int] = {}
    for spec in specs:
        for dep_first in _walk(spec):
            first.setdefault(dep_first.key, len(first))
        visit(spec)
    out: List[List[RunSpec]] = [[] for _ in range(1 + max(depth.values(), default=-1))]
    for k, spec in seen.items():
        out[depth[k]].append(spec)
    levels = level(seen.values())
    return [sorted(w, key=lambda s: (-levels[s.key], first[s.key])) for w in out]


def level(specs: Iterable[RunSpec]) -> Dict[str, float]:
    """``{key: level}``: a run's :func:`work` plus the largest level among the runs of ``specs``
    that start from it — the longest chain of work that waits for it. A run nothing depends on
    has its own work; the pretraining run, which every run waits for, the highest; a stage one
    carries its stage two's work, so a long two-stage chain does not start last."""
    specs = list(specs)
    after: Dict[str, List[RunSpec]] = {s.key: [] for s in specs}
    for s in specs:
        for d in dependencies(s):
            if d.key in after:
                after[d.key].append(s)
    out: Dict[str, float] = {}

    def visit(s: RunSpec) -> float:
        if s.key not in out:
            out[s.key] = work(s) + max((visit(x) for x in after[s.key]), default=0.0)
        return out[s.key]

    for s in specs:
        visit(s)
    return out


def _walk(spec: RunSpec) -> List[RunSpec]:
    """``spec`` and its dependencies, dependencies first."""
    out = []
    for dep in dependencies(spec):
        out += _walk(dep)
    return out + [spec]


#: what each wave holds, for printing
WAVE_NAMES = ("pretraining and runs from scratch", "stage one", "stage two")


@dataclass
class NotebookPlan:
    """The runs one notebook asks for (its parameters, the profile replaced)."""

    name: str
    parameters: Dict[str, Any]
    #: every distinct run the notebook asks for, dependencies included, in the order asked
    specs: List[RunSpec] = field(default_factory=list)
    #: what the plan could not decide yet (None: it covers every run the notebook asks for): the
    #: runs chosen from results that are not stored yet
    left: Optional[str] = None
    #: those runs under stand-in choices (counted, e.g. by the projection; not trained by a plan)
    later: List[RunSpec] = field(default_factory=list)
    #: the chapter's pending runs (:attr:`mlpl_lab.protocol.asked.Asked.pending`): designed, trained
    #: only by the cold series or on opt-in; counted apart
    pending: List[RunSpec] = field(default_factory=list)
    #: the names of the chapter's pending families (what ``MLPL_LAB_TRAIN_PENDING`` may name)
    pending_families: List[str] = field(default_factory=list)


@dataclass
class SeriesPlan:
    profile: Profile
    notebooks: List[NotebookPlan]
    waves: List[List[RunSpec]]

    @property
    def order(self) -> List[RunSpec]:
        """Every distinct run, in the order a pool takes them (wave by wave, longest first)."""
        return [s for w in self.waves for s in w]

    def stand_ins(self) -> Tuple[List[RunSpec], List[RunSpec]]:
        """``(later, pending)``: the distinct runs counted beside :attr:`order` -- those chosen
        from results (at stand-in choices) and the pending ones -- each once, none in ``order``."""
        keys = {s.key for s in self.order}
        later = list({s.key: s for nb in self.notebooks for s in nb.later if s.key not in keys}.values())
        keys |= {s.key for s in later}
        pending = list({s.key: s for nb in self.notebooks for s in nb.pending if s.key not in keys}.values())
        return later, pending

    def first_notebook(self) -> Dict[str, str]:
        """``{key: the first notebook that asks for it}``."""
        out: Dict[str, str] = {}
        for nb in self.notebooks:
            for s in nb.specs:
                out.setdefault(s.key, nb.name)
        return out


def chapter_module(name: str):
    """The chapter module of notebook ``name`` when it declares its runs as data (``design`` and
    ``specs``; :mod:`mlpl_lab.protocol.registry`), else None (00 trains nothing)."""
    found = training_chapter(name)
    return None if found is None else found.module


def chapter_design(profile, name: str, parameters: Mapping[str, Any] | None = None):
    """``(module, design)`` of notebook ``name`` under ``profile`` with the notebook's parameters
    (only the names its module's ``PARAMETERS`` lists reach ``design``), or ``(None, None)``."""
    module = chapter_module(name)
    if module is None:
        return None, None
    params = dict(parameters or {})
    kwargs = {k: params[k] for k in getattr(module, "PARAMETERS", ()) if k in params}
    return module, module.design(as_profile(profile), **kwargs)


def plan_notebook(profile, name: str, parameters: Mapping[str, Any] | None = None,
                  serve_stored: bool = False, stored=None) -> NotebookPlan:
    """The runs notebook ``name`` (a stem, e.g. ``"02_gr_loss"``) asks for under ``profile``: its
    chapter's ``specs`` (:mod:`mlpl_lab.protocol.asked`) given what is stored — ``stored``, or the
    run store when ``serve_stored``, or nothing. The runs that choices made on results still wait
    for are :attr:`NotebookPlan.later` (stand-ins, counted but not trained by a plan)."""
    from .asked import nothing_stored, plan_rounds, store_lookup

    P = as_profile(profile)
    params = dict(parameters or {})
    plan = NotebookPlan(name, params)
    module, design = chapter_design(P, name, params)
    if module is None:
        return plan
    if stored is None:
        stored = store_lookup() if serve_stored else nothing_stored
    rounds = plan_rounds(module.specs, design, stored)
    plan.pending_families = list(rounds[0].pending_families)
    plan.specs = _with_dependencies(rounds[0].specs)
    known = {x.key for x in plan.specs}
    plan.later = [s for s in _with_dependencies(s for r in rounds[1:] if not r.pending for s in r.specs)
                  if s.key not in known]
    known |= {x.key for x in plan.later}
    plan.pending = [s for s in _with_dependencies(s for r in rounds[1:] if r.pending for s in r.specs)
                    if s.key not in known]
    if plan.later:
        plan.left = (f"{len(plan.later)} runs chosen from the results of the first "
                     f"{len(plan.specs)} (tuning, γ)")
    return plan


def _with_dependencies(specs: Iterable[RunSpec]) -> List[RunSpec]:
    keys: Dict[str, RunSpec] = {}
    for spec in specs:
        for s in _walk(spec):
            keys.setdefault(s.key, s)
    return list(keys.values())


def plan_series(profile, notebooks: Sequence[str | Path], parameters: Mapping[str, Any] | None = None,
                serve_stored: bool = False) -> SeriesPlan:
    """The plan of the notebooks at ``notebooks`` (paths; each with its own ``parameters`` cell,
    the profile and ``parameters`` replacing its values) under ``profile``. ``serve_stored``: the
    chapters' ``specs`` read the stored runs (:func:`plan_notebook`), so a series planned
    again after a first round of training knows the runs chosen from that round's results
    (``mlpl-lab report`` plans in such rounds)."""
    P = as_profile(profile)
    plans = []
    for path in notebooks:
        path = Path(path)
        params = notebook_parameters(path) | {"profile": P.name} | dict(parameters or {})
        plans.append(plan_notebook(P, path.stem, params, serve_stored))
    return SeriesPlan(P, plans, waves(s for nb in plans for s in nb.specs))


def run_families(profile, notebooks: Sequence[str | Path], stored=None) -> Dict[str, Tuple[str, str]]:
    """``{key: (notebook, family)}``: the designed family that first asks for each run (notebooks in
    order, then each chapter's families in the order its ``specs`` declares them, ``now`` before
    ``pending``), a run's dependencies going with it; ``stored``: what the choices read (the run
    store by default). What a pack of parts groups its runs by (:mod:`mlpl_lab.runs.parts`)."""
    from .asked import store_lookup
    from .pilots import protocol_asked

    P = as_profile(profile)
    stored = stored or store_lookup()
    out: Dict[str, Tuple[str, str]] = {}
    for path in notebooks:
        path = Path(path)
        params = notebook_parameters(path) | {"profile": P.name}
        module, design = chapter_design(P, path.stem, params)
        if module is None:
            continue
        asked = protocol_asked(module.specs(design, stored), stored, P)
        for family, labels in list(asked.now.items()) + list(asked.pending.items()):
            for specs in labels.values():
                for spec in specs:
                    for s in _walk(spec):
                        out.setdefault(s.key, (path.stem, family))
    return out


def members_sha(ids) -> str:
    """The sha256 (hex) of a claim family's members: its claim ids sorted, one per line."""
    import hashlib

    return hashlib.sha256("\n".join(sorted(str(i) for i in ids)).encode()).hexdigest()


def designed_families(profile, notebooks: Sequence[str | Path]) -> Dict[str, Dict[str, Dict[str, Any]]]:
    """``{notebook: {family: {"m": m, "members_sha": sha256 of its sorted claim ids}}}``: every claim
    family each chapter's design declares under ``profile`` (its ``families``, with the notebook's
    parameters), from the design alone, before any result is read. The members are the claim ids
    the design's ``family_members`` gives (:func:`members_sha`); a design that does not declare
    them records ``"members_sha": None`` (its m alone). What a pack of parts records in its index
    (:func:`mlpl_lab.runs.parts.export_parts`), so a later change of a family's members while its
    runs stay shows."""
    P = as_profile(profile)
    out: Dict[str, Dict[str, Dict[str, Any]]] = {}
    for path in notebooks:
        path = Path(path)
        module, design = chapter_design(P, path.stem, notebook_parameters(path) | {"profile": P.name})
        families = getattr(design, "families", None) if module is not None else None
        if not families:
            continue
        members = getattr(design, "family_members", None) or {}
        out[path.stem] = {name: {"m": int(f.size),
                                 "members_sha": members_sha(members[name]) if name in members else None}
                          for name, f in sorted(families.items())}
    return out


def unknown_pending_families(profile, notebooks: Sequence[str | Path]) -> Tuple[List[str], List[str]]:
    """``(unknown, known)``: the pending families ``MLPL_LAB_TRAIN_PENDING`` names that none of
    ``notebooks`` declares under ``profile``, and those they declare (both empty when it names
    none or asks for all)."""
    from .asked import ALL_PENDING, pending_choice

    choice = pending_choice()
    if not choice or choice == ALL_PENDING:
        return [], []
    known = sorted({f for nb in plan_series(profile, notebooks).notebooks for f in nb.pending_families})
    return sorted(set(choice) - set(known)), known


# ------------------------------------------------------------------------- FLOPs and projection
def num_classes(data: Mapping[str, Any]) -> Optional[int]:
    """Classes of a spec's data: the glyph set's for the scenes, None for a real dataset."""
    if data.get("dataset", "scenes") != "scenes":
        return None
    from ..data import class_names

    return len(class_names(data.get("glyphs", "shapes")))


_FLOPS: Dict[str, Tuple[float, float]] = {}


def flops_per_image(model: str, model_kwargs: Mapping[str, Any], image_size: int, classes: int,
                    batch: int = 2) -> Tuple[float, float]:
    """``(forward + backward, forward)`` FLOPs per image of the network
    ``build_model(model, classes, **model_kwargs)`` at ``image_size`` px, counted by
    ``torch.utils.flop_counter.FlopCounterMode`` on a batch of ``batch`` random images in training
    mode (the backward computes the weights' gradients; the input needs none). Memoised."""
    key = json.dumps([model, dict(model_kwargs), image_size, classes, batch], sort_keys=True, default=str)
    if key not in _FLOPS:
        from ..models import build_model

        kwargs = {k: v for k, v in dict(model_kwargs).items() if k != "weights"}  # no download
        _FLOPS[key] = count_flops(build_model(model, classes, **kwargs), image_size, batch)
    return _FLOPS[key]


def count_flops(net, image_size: int, batch: int = 2) -> Tuple[float, float]:
    """``(forward + backward, forward)`` FLOPs per image of ``net`` (an ``nn.Module`` taking
    ``(batch, 3, image_size, image_size)`` images), in training mode, counted by
    ``torch.utils.flop_counter.FlopCounterMode`` (2 per multiply-add of every matrix
    multiplication and convolution; the backward of the sum of the outputs)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    net = net.train()
    x = torch.rand(batch, 3, image_size, image_size)
    with FlopCounterMode(display=False) as fwd:
        net(x)
    with FlopCounterMode(display=False) as both:
        net(x).float().sum().backward()
    net.zero_grad(set_to_none=True)
    return both.get_total_flops() / batch, fwd.get_total_flops() / batch


@dataclass
class ModelCost:
    """The runs of one network at one image size: its FLOPs per image and the images it sees."""

    model: str
    model_kwargs: Dict[str, Any]
    image_size: int
    classes: int
    runs: int = 0
    images_trained: int = 0
    images_evaluated: int = 0
    flops_train: float = 0.0   # forward + backward, per image
    flops_eval: float = 0.0    # forward, per image

    @property
    def flops(self) -> float:
        return self.images_trained * self.flops_train + self.images_evaluated * self.flops_eval

    def describe(self) -> str:
        kw = ", ".join(f"{k}={v}" for k, v in sorted(self.model_kwargs.items()))
        return f"{self.model}({kw}) at {self.image_size} px, {self.classes} classes"


def projection(specs: Iterable[RunSpec]) -> Tuple[List[ModelCost], List[RunSpec]]:
    """The FLOPs of ``specs`` grouped by network and image size (:class:`ModelCost`), and the runs
    that cannot be counted (a real dataset: its size is not in the spec)."""
    groups: Dict[str, ModelCost] = {}
    unknown = []
    for spec in specs:
        classes = num_classes(spec.data)
        if classes is None or not spec.data.get("n_train"):
            unknown.append(spec)
            continue
        model, kw = spec.train.get("model", "small_cnn"), dict(spec.train.get("model_kwargs", {}))
        size = int(spec.data.get("image_size", 32))
        key = json.dumps([model, kw, size, classes], sort_keys=True, default=str)
        if key not in groups:
            groups[key] = ModelCost(model, kw, size, classes)
            groups[key].flops_train, groups[key].flops_eval = flops_per_image(model, kw, size, classes)
        g = groups[key]
        g.runs += 1
        g.images_trained += images_trained(spec)
        g.images_evaluated += images_evaluated(spec)
    return sorted(groups.values(), key=lambda g: -g.flops), unknown


# ---------------------------------------------------------------------------------- printing
def _left(nb) -> str:
    """What a notebook of the plan leaves to itself."""
    return ("no runs" if training_chapter(nb.name) is None else "nothing" if nb.left is None
            else "the runs it chooses from results")


def _num(x: float) -> str:
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.2f} {unit}"
    return f"{x:.0f} "


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h" if seconds >= 3600 else f"{seconds / 60:.1f} min"


def describe(plan: SeriesPlan, tflops: float | None = None, stored: Callable[[RunSpec], bool] | None = None,
             source: str | None = None) -> str:
    """The plan as text: runs per notebook (asked for, new to it, images trained), the waves, and
    with ``tflops`` the FLOPs per image of each network and the time they project to (``source``:
    where that rate was measured, printed with it). With ``stored`` (whether a run is in the store:
    what ``mlpl-lab report`` prints before it trains) the images are those still **to train**, the
    stored runs left out; a plan whose every run is stored says so and trains nothing."""
    if tflops is not None and not (isinstance(tflops, (int, float)) and tflops > 0 and math.isfinite(tflops)):
        raise ValueError(f"tflops must be a positive number of TFLOP/s, got {tflops!r}")
    order = plan.order
    first = plan.first_notebook()
    done = {s.key for s in order if stored(s)} if stored else set()
    lines = [f"series plan, profile {plan.profile.name}: {len(plan.notebooks)} notebooks, "
             f"{len(order)} distinct runs"
             + (f", {len(done)} of them already stored" if stored else "")]
    if stored and len(done) == len(order) and tflops is None:
        lines[0] += ": every planned run is stored, nothing to train"
        lines.append(f"  {'notebook':22s} {'runs asked':>10s} {'stored':>7s}  left to the notebook")
        for nb in plan.notebooks:
            lines.append(f"  {nb.name:22s} {len(nb.specs):10d} {len(nb.specs):7d}  {_left(nb)}")
        return "\n".join(lines)
    images = "images to train (new)" if stored else "images trained (new)"
    lines.append(f"  {'notebook':22s} {'runs asked':>10s} {'new':>5s} {images:>21s}  left to the notebook")
    for nb in plan.notebooks:
        new = [s for s in nb.specs if first[s.key] == nb.name]
        lines.append(f"  {nb.name:22s} {len(nb.specs):10d} {len(new):5d} "
                     f"{sum(images_trained(s) for s in new if s.key not in done):21,d}  {_left(nb)}")
        if nb.later:
            lines.append(f"  {'':22s} (then {len(nb.later)} runs chosen from results: counted in the "
                         "projection at a stand-in choice, trained once the choice is made)")
        if nb.pending:
            lines.append(f"  {'':22s} (and {len(nb.pending)} pending runs, {sum(images_trained(s) for s in nb.pending):,d} "
                         f"images trained: designed, trained only by the cold series or with "
                         f"{PENDING_ENV}=1; counted in the projection)")
    for i, w in enumerate(plan.waves):
        name = WAVE_NAMES[i] if i < len(WAVE_NAMES) else f"depth {i}"
        todo = [s for s in w if s.key not in done]
        lines.append(f"  wave {i} ({name}): {len(w)} runs, " + (
            f"{len(todo)} to train, {sum(images_trained(s) for s in todo):,d} images" if stored else
            f"{sum(images_trained(s) for s in w):,d} images trained"))
    if tflops is None:
        return "\n".join(lines)
    later, pending = plan.stand_ins()
    order = order + later + pending
    groups, unknown = projection(order)
    total = sum(g.flops for g in groups)
    lines.append("FLOPs per image (torch.utils.flop_counter on the network mlpl_lab.models builds; "
                 "matmuls and convolutions), and the images each network sees:")
    for g in groups:
        lines.append(f"  {g.describe()}: {g.flops_train / 1e9:.3f} GFLOP forward+backward, "
                     f"{g.flops_eval / 1e9:.3f} GFLOP forward; {g.runs} runs, "
                     f"{g.images_trained:,d} images trained, {g.images_evaluated:,d} evaluated: "
                     f"{g.flops / 1e15:.2f} PFLOP")
    if unknown:
        lines.append(f"  {len(unknown)} runs on a real dataset (size unknown to the plan) are not counted")
    trained = sum(g.images_trained for g in groups)
    seconds = total / (tflops * 1e12)
    if later:
        lines.append(f"  (the {len(later)} runs chosen from results are counted at stand-in choices)")
    if pending:
        p_groups, _ = projection(pending)
        p_seconds = sum(g.flops for g in p_groups) / (tflops * 1e12)
        lines.append(f"  of which {len(pending)} pending runs (trained only by the cold series or with "
                     f"{PENDING_ENV}=1): {_hours(p_seconds)}")
    lines.append(f"total: {len(order) - len(unknown)} runs, {trained:,d} images trained, "
                 f"{total / 1e15:.1f} PFLOP; at {tflops:.3g} TFLOP/s effective: {_hours(seconds)} "
                 f"({seconds / max(1, len(order) - len(unknown)):.1f} s per run)")
    if source:
        lines.append(f"  ({tflops:.2f} TFLOP/s: {source}; give --tflops X for another)")
    return "\n".join(lines)
