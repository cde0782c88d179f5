"""Synthetic multi-label scenes: deterministic, fast, with masks and boxes per class.

Each image shows 1..``max_objects`` objects on a noisy, gently tinted background.

* **Classes.**  ``glyphs="shapes"``: 20 classes = 5 shapes x 4 colours ("red circle",
  ..., "yellow ring"); index ``c = 4 * shape + colour``.  A class is a shape *and* a
  colour, so a model must bind the two.  ``glyphs="digits"``: 10 classes ("digit 0"
  ... "digit 9") drawn from scikit-learn's real handwritten digits, each object in a
  random palette colour (colour is a nuisance there).  ``glyphs="symbols"``: 16 classes =
  8 outlines of their own x 2 colours of their own; ``"letters"``: 12 printed upper-case
  Latin letters, ``"greek"``: 10 printed lower-case Greek letters, ``"signs"``: 10 printed
  signs (matplotlib's bundled DejaVu faces), colour a nuisance (:mod:`mlpl_lab.data.glyphs`).
  Six label spaces, so data sets that share no class can be generated for a rank test
  across data sets.
* **Contexts.**  Every image first draws a scene context (uniform over
  ``num_contexts``); each object's class then comes from
  ``context_strength * prior[context] + (1 - context_strength) * uniform``.  Each
  context prefers a few "core" classes (each class is core in exactly one context,
  weights in [1, 2]) plus one "guest" class of weight 0.5.  The priors come from
  ``structure_seed`` (not from ``seed``) so that train/val/test sets drawn with
  different seeds share one label-correlation structure (``Scenes.context_prior``).
* **Occlusion.**  Objects are stacked; later ones paint over earlier ones.  An
  object whose hard mask would stay visible on less than ``min_visible`` of its area
  (default 0.3 for shapes, 0.5 for digits)
  is re-placed (``placement_tries`` positions) and, if that fails, *not drawn at all*
  -- so no class is ever labelled while hidden and no pixel of an unlabelled class is
  ever shown.  The topmost object is always drawn, so every image has >= 1 label.
  With ``occlusion=False`` objects may not overlap at all (``min_visible = 1``).
* **Masks, boxes, labels.**  ``segmentation[i, y, x]`` is the class of the visible
  object at that pixel (-1: background); ``masks[i, c] = segmentation[i] == c``;
  ``labels[i, c] = masks[i, c].any()``; ``boxes[i, c] = (x0, y0, x1, y1)`` of that
  mask with *exclusive* ends (``mask[y0:y1, x0:x1]`` crops it), -1 where absent.
* **Images** are float32 in [0, 1] on the 8-bit grid (multiples of 1/255), so cached
  scenes (stored as uint8) load back bit-identical.
* **Impossible parameters** (an inverted ``size_range``, ``min_visible`` outside (0, 1], negative
  noise, objects under 5 px, more objects than can all be drawn, ...) raise a one-line
  ``ValueError`` naming the parameter, its value and the fix before anything is generated
  (:func:`scene_params`); :func:`check_scene_data` checks a run spec's data the same way, and
  the runner calls it on every spec before any run trains.

Generation is vectorised except for a short per-object paste loop; 32 px shape scenes
run at several thousand images per second on one core (``benchmarks/bench_scenes.py``).
"""
from __future__ import annotations

import hashlib
import json
import warnings
import math
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from ..core.labels import check_seed

from . import glyphs as _g

#: the files whose source is the generator (this module and its glyphs)
GENERATOR_SOURCES = ("scenes.py", "glyphs.py")


def generator_version() -> str:
    """A sha256 prefix of the generator's source (:data:`GENERATOR_SOURCES`): any edit to it gives
    new cache file names, so a cached scene set always comes from the code that reads it."""
    here = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for name in GENERATOR_SOURCES:
        h.update(name.encode())
        h.update((here / name).read_bytes())
    return h.hexdigest()[:12]


#: the version cached scene sets are keyed by: the generator's source hash, so no edit of the
#: generator can serve a new run key stale images
FORMAT_VERSION = generator_version()

GLYPH_SOURCES = _g.GLYPH_SOURCES
DEFAULT_SIZE_RANGE = {"shapes": (0.3, 0.5), "digits": (0.4, 0.6), "symbols": (0.3, 0.5),
                      "letters": (0.35, 0.55), "greek": (0.35, 0.55), "signs": (0.35, 0.55)}
#: thin strokes (handwriting, letters) need more of themselves visible to stay legible
DEFAULT_MIN_VISIBLE = {"shapes": 0.3, "digits": 0.5, "symbols": 0.3, "letters": 0.5, "greek": 0.5,
                       "signs": 0.4}
_CHUNK_PIXELS = 2048 * 32 * 32  # pixels per vectorised chunk (bounds peak memory)


def _chunk(h: int, w: int) -> int:
    """Images per chunk; the output does not depend on it (tested)."""
    return max(16, _CHUNK_PIXELS // (h * w))


@dataclass(eq=False, repr=False)
class Scenes:
    """A generated scene set (all tensors on CPU).

    images (N,3,H,W) float32 in [0,1]; labels (N,C) int64 {0,1}; segmentation (N,H,W)
    int8 (class of the visible object, -1 background); boxes (N,C,4) int64 (x0,y0,x1,y1,
    exclusive ends, -1 where absent); contexts (N,) int64; num_objects (N,) int64
    (objects actually drawn); context_prior (K,C) float32; ``masks`` (N,C,H,W) bool is
    derived from ``segmentation`` on first access and then kept.
    """

    images: torch.Tensor
    labels: torch.Tensor
    segmentation: torch.Tensor
    boxes: torch.Tensor
    contexts: torch.Tensor
    num_objects: torch.Tensor
    context_prior: torch.Tensor
    class_names: list[str]
    params: dict[str, Any]
    cache_path: str | None = None
    from_cache: bool = False
    _masks: torch.Tensor | None = field(default=None, init=False)

    def __len__(self) -> int:
        return int(self.images.shape[0])

    def __repr__(self) -> str:
        n, _, h, w = self.images.shape
        src = f", from_cache={self.cache_path!r}" if self.from_cache else ""
        return (f"Scenes(n={n}, size={h}x{w}, glyphs={self.params.get('glyphs')!r}, "
                f"classes={self.num_classes}, mean labels/image="
                f"{self.labels.sum(1).float().mean().item():.2f}{src})")

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    @property
    def image_size(self) -> int:
        return int(self.images.shape[-1])

    @property
    def masks(self) -> torch.Tensor:
        """(N, C, H, W) bool per-class visible masks (computed once, then cached)."""
        if self._masks is None:
            self._masks = masks_from_segmentation(self.segmentation, self.num_classes)
        return self._masks

    def mask(self, index) -> torch.Tensor:
        """Masks of some images without materialising all: (C,H,W) or (B,C,H,W) bool."""
        return masks_from_segmentation(self.segmentation[index], self.num_classes)

    def subset(self, indices) -> "Scenes":
        """A new ``Scenes`` with the given images (int sequence, tensor, array or slice)."""
        if not isinstance(indices, slice):
            indices = as_index(indices)
        return Scenes(
            images=self.images[indices], labels=self.labels[indices],
            segmentation=self.segmentation[indices], boxes=self.boxes[indices],
            contexts=self.contexts[indices], num_objects=self.num_objects[indices],
            context_prior=self.context_prior, class_names=list(self.class_names),
            params=dict(self.params),
        )


def as_index(indices) -> torch.Tensor:
    """Indices (ints, range, array, tensor; a bool mask selects its True rows) -> int64."""
    t = indices if torch.is_tensor(indices) else torch.as_tensor(np.asarray(indices))
    if t.dtype == torch.bool:
        return torch.nonzero(t.reshape(-1)).flatten()
    if t.is_floating_point():
        raise TypeError(f"indices must be integers, got dtype {t.dtype}")
    return t.to(torch.long).reshape(-1)


def masks_from_segmentation(seg: torch.Tensor, num_classes: int) -> torch.Tensor:
    """(..., H, W) class map -> (..., C, H, W) bool masks."""
    classes = torch.arange(num_classes, dtype=seg.dtype).view(-1, 1, 1)
    return seg.unsqueeze(-3) == classes


def context_priors(num_classes: int, num_contexts: int, structure_seed: int = 0) -> np.ndarray:
    """(K, C) preference distributions over classes, one per scene context."""
    rng = np.random.default_rng([int(structure_seed), num_classes, num_contexts, 7919])
    perm = rng.permutation(num_classes)
    prior = np.zeros((num_contexts, num_classes))
    for k, core in enumerate(np.array_split(perm, num_contexts)):
        prior[k, core] = rng.uniform(1.0, 2.0, size=len(core))
        others = np.setdiff1d(np.arange(num_classes), core)
        if len(others) and num_contexts > 1:
            prior[k, rng.choice(others)] = 0.5
    return prior / prior.sum(axis=1, keepdims=True)


def _check_int(name: str, value, lo: int | None = None, fix: str = "") -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an int, got {value!r}")
    if lo is not None and value < lo:
        raise ValueError(f"{name} must be >= {lo}, got {value}" + (f"; {fix}" if fix else ""))
    return int(value)


def _check_float(name: str, value, lo: float, hi: float, fix: str, lo_open: bool = False) -> float:
    """``value`` as a float in [lo, hi] (``(lo, hi]`` when ``lo_open``), else a ValueError that names
    the parameter, its value and ``fix``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number, got {value!r}; {fix}")
    v = float(value)
    inside = (lo < v if lo_open else lo <= v) and v <= hi  # False for NaN
    if not inside:
        interval = f"({lo:g}, {hi:g}]" if lo_open else f"[{lo:g}, {hi:g}]"
        raise ValueError(f"{name}={value!r} is outside {interval}; {fix}")
    return v


#: the hard-mask area (pixels) of the smallest glyph of a set at a side length, by (glyphs, side)
_SMALLEST_AREA: dict[tuple[str, int], int] = {}


def smallest_glyph_area(glyphs: str, side: int) -> int:
    """The fewest pixels any glyph of ``glyphs`` covers (hard mask ``alpha >= 0.5``) when drawn
    ``side`` pixels wide: every shape, or every handwritten digit instance."""
    key = (glyphs, int(side))
    if key not in _SMALLEST_AREA:
        source = _g.source(glyphs)
        areas = np.array([int((source.template(k, i, side) >= 0.5).sum())
                          for k in range(len(source.kinds)) for i in range(source.num_variants(k))])
        areas = areas[areas > 0]  # an empty glyph is skipped by the generator, needs no room
        _SMALLEST_AREA[key] = int(areas.min()) if areas.size else 0
    return _SMALLEST_AREA[key]


def objects_that_fit(image_size: int, glyphs: str, size_range, min_visible: float,
                     occlusion: bool = True) -> int:
    """How many objects at most can all be drawn: each drawn object keeps at least
    ``ceil(min_visible * area)`` of its hard mask visible (``min_visible = 1`` without occlusion)
    and visible pixels of two objects never coincide, so even objects of the smallest glyph at the
    smallest size need that many pixels each of the ``image_size ** 2``. A bound: random
    placement may fit fewer."""
    side = int(round(float(size_range[0]) * image_size))
    area = smallest_glyph_area(glyphs, side)
    need = math.ceil((float(min_visible) if occlusion else 1.0) * area - 1e-9)
    return image_size * image_size // need if need > 0 else 16


def scene_params(n, seed=0, image_size=32, glyphs="shapes", min_objects=1, max_objects=4,
                 num_contexts=5, context_strength=0.7, occlusion=True, noise=0.05, *,
                 min_visible=None, size_range=None, colour_jitter=0.08,
                 background_gradient=0.15, digit_pool="all", structure_seed=0,
                 placement_tries=4) -> dict[str, Any]:
    """Validate the generation arguments and return them normalised (JSON-able dict).

    Every impossible value raises a one-line ``ValueError`` naming the parameter, its value and
    the fix (before anything is generated): a count below its minimum, ``min_objects >
    max_objects``, a fraction outside its interval (``min_visible`` in (0, 1], ``noise``,
    ``colour_jitter`` and ``background_gradient`` in [0, 0.5], ``context_strength`` in [0, 1]),
    an inverted or out-of-range ``size_range``, objects under 5 px at the smallest size, and more
    objects than can all be drawn (:func:`objects_that_fit`)."""
    n = _check_int("n", n, 1, "ask for at least one scene")
    seed = check_seed(seed)
    image_size = _check_int("image_size", image_size, 16, "use image_size=16 or more")
    if glyphs not in GLYPH_SOURCES:
        raise ValueError(f"unknown glyphs {glyphs!r}; valid: {list(GLYPH_SOURCES)}")
    min_objects = _check_int("min_objects", min_objects, 1, "every scene shows at least one object")
    max_objects = _check_int("max_objects", max_objects, 1, "every scene shows at least one object")
    if min_objects > max_objects:
        raise ValueError(f"need 1 <= min_objects <= max_objects, got {min_objects} > {max_objects}; "
                         f"raise max_objects to {min_objects} or lower min_objects to {max_objects}")
    if max_objects > 16:
        raise ValueError(f"max_objects must be <= 16, got {max_objects}; use max_objects=16 or fewer")
    num_classes = len(_g.class_names(glyphs))
    num_contexts = _check_int("num_contexts", num_contexts, 1, "use num_contexts=1 for no context structure")
    if num_contexts > num_classes:
        raise ValueError(f"num_contexts must be <= number of classes ({num_classes}), got {num_contexts}; "
                         f"use num_contexts={num_classes} or fewer")
    context_strength = _check_float("context_strength", context_strength, 0.0, 1.0,
                                    "0 draws classes uniformly, 1 from the context's prior alone")
    noise = _check_float("noise", noise, 0.0, 0.5, "give the pixel noise's std, e.g. noise=0.05 (0: none)")
    if not isinstance(occlusion, (bool, np.bool_)) and occlusion not in (0, 1):
        raise ValueError(f"occlusion must be True or False, got {occlusion!r}; True lets objects "
                         "overlap (keeping min_visible of each), False draws them apart")
    if min_visible is None:
        min_visible = DEFAULT_MIN_VISIBLE[glyphs]
    min_visible = _check_float("min_visible", min_visible, 0.0, 1.0,
                               "give the share of each object that must stay visible, e.g. "
                               f"min_visible={DEFAULT_MIN_VISIBLE[glyphs]} (1: no overlap)", lo_open=True)
    if size_range is None:
        size_range = DEFAULT_SIZE_RANGE[glyphs]
    if isinstance(size_range, (str, bytes)) or not hasattr(size_range, "__len__") or len(size_range) != 2:
        raise ValueError(f"size_range must be a pair [lo, hi] of fractions of the image side, got "
                         f"{size_range!r}; e.g. size_range={list(DEFAULT_SIZE_RANGE[glyphs])}")
    fix_pair = "give [lo, hi] with 0 < lo <= hi <= 1 (fractions of the image side)"
    lo = _check_float("size_range[0]", size_range[0], 0.0, 1.0, fix_pair, lo_open=True)
    hi = _check_float("size_range[1]", size_range[1], 0.0, 1.0, fix_pair, lo_open=True)
    if lo > hi:
        raise ValueError(f"size_range={size_range!r} is inverted (lo {lo:g} > hi {hi:g}); "
                         f"{fix_pair}, e.g. size_range={[hi, lo]}")
    if round(lo * image_size) < 5:
        raise ValueError(f"objects would be < 5 px (size_range={size_range}, image_size={image_size}); "
                         f"raise size_range's lo to {math.ceil(5 / image_size * 100) / 100:g} or "
                         f"image_size to {math.ceil(5 / lo)}")
    colour_jitter = _check_float("colour_jitter", colour_jitter, 0.0, 0.5,
                                 "give the per-channel colour jitter, e.g. colour_jitter=0.08 (0: none)")
    background_gradient = _check_float("background_gradient", background_gradient, 0.0, 0.5,
                                       "give the background gradient's amplitude, e.g. 0.15 (0: flat)")
    if digit_pool not in _g.DIGIT_POOLS:
        raise ValueError(f"unknown digit_pool {digit_pool!r}; valid: {list(_g.DIGIT_POOLS)}")
    share = min_visible if occlusion else 1.0
    boxes_fit = image_size * image_size // math.ceil(share * round(lo * image_size) ** 2 - 1e-9)
    # a glyph covers at most its box, so up to boxes_fit objects always fit: only more need the
    # glyphs' areas (which for digits means reading scikit-learn's digits)
    fit = boxes_fit if max_objects <= boxes_fit else objects_that_fit(
        image_size, glyphs, (lo, hi), min_visible, bool(occlusion))
    if max_objects > fit:
        raise ValueError(
            f"max_objects={max_objects} objects cannot all be drawn: at most {fit} of the smallest "
            f"(size_range lo {lo:g} of {image_size} px) keep min_visible={min_visible:g} of their area "
            f"visible; lower max_objects to {fit}, or shrink size_range, lower min_visible or raise "
            "image_size")
    return dict(
        n=n, seed=seed, image_size=image_size, glyphs=glyphs, min_objects=min_objects,
        max_objects=max_objects, num_contexts=num_contexts,
        context_strength=float(context_strength), occlusion=bool(occlusion), noise=float(noise),
        min_visible=float(min_visible), size_range=[lo, hi], colour_jitter=float(colour_jitter),
        background_gradient=float(background_gradient),
        digit_pool=digit_pool if glyphs == "digits" else "all",
        structure_seed=_check_int("structure_seed", structure_seed, 0),
        placement_tries=_check_int("placement_tries", placement_tries, 1),
        format_version=FORMAT_VERSION,
    )


#: the keys a run spec's ``data`` may hold for the embedded scenes: the split sizes
#: (:func:`mlpl_lab.data.make_splits`) and the generator's arguments
SPLIT_SIZES = {"n_train": 4000, "n_val": 1000, "n_test": 1000}
SCENE_ARGS = ("image_size", "glyphs", "min_objects", "max_objects", "num_contexts", "context_strength",
              "occlusion", "noise", "min_visible", "size_range", "colour_jitter", "background_gradient",
              "digit_pool", "structure_seed", "placement_tries")


def check_scene_data(data: dict[str, Any]) -> None:
    """Validate a run spec's ``data`` for the embedded scenes (``RunSpec.data``: split sizes and
    generator arguments) without generating anything: an unknown key or an impossible value raises
    the one-line ``ValueError`` of :func:`scene_params`. The runner calls it on every spec before
    any run trains (:func:`mlpl_lab.runs.validation.validate`)."""
    data = dict(data)
    data.pop("dataset", None)
    unknown = sorted(k for k in data if k not in SPLIT_SIZES and k not in SCENE_ARGS)
    if unknown:
        raise ValueError(f"unknown scene parameter(s) {unknown}; valid: {sorted(SPLIT_SIZES) + list(SCENE_ARGS)}")
    sizes = {k: data.pop(k, d) for k, d in SPLIT_SIZES.items()}
    for name, n in sizes.items():
        try:
            scene_params(n, **data)
        except ValueError as e:
            raise ValueError(f"{name}: {e}" if str(e).startswith("n ") else str(e)) from None


def params_hash(params: dict[str, Any]) -> str:
    blob = json.dumps(params, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def cache_file(params: dict[str, Any], cache_dir: str | os.PathLike) -> Path:
    p = params
    name = (f"scenes-v{FORMAT_VERSION}-{p['glyphs']}-{p['image_size']}px-n{p['n']}"
            f"-seed{p['seed']}-{params_hash(p)}.pt")
    return Path(cache_dir) / name


def make_scenes(n: int, seed: int = 0, image_size: int = 32, glyphs: str = "shapes",
                min_objects: int = 1, max_objects: int = 4, num_contexts: int = 5,
                context_strength: float = 0.7, occlusion: bool = True, noise: float = 0.05,
                *, min_visible: float | None = None, size_range: Sequence[float] | None = None,
                colour_jitter: float = 0.08, background_gradient: float = 0.15,
                digit_pool: str = "all", structure_seed: int = 0, placement_tries: int = 4,
                cache_dir: str | os.PathLike | None = None) -> Scenes:
    """Generate (or load from ``cache_dir``) ``n`` multi-label scenes; see module doc.

    Same arguments -> bit-identical tensors.  ``digit_pool`` ("all"|"train"|"val"|
    "test") selects a fixed, disjoint subset of the handwritten digit instances
    (digits only).  ``cache_dir``: if given, the result is stored there under a file
    name keyed by a hash of all generation parameters and ``FORMAT_VERSION`` (the
    generator's source hash) and loaded on the next identical call.
    """
    params = scene_params(
        n, seed, image_size, glyphs, min_objects, max_objects, num_contexts,
        context_strength, occlusion, noise, min_visible=min_visible, size_range=size_range,
        colour_jitter=colour_jitter, background_gradient=background_gradient,
        digit_pool=digit_pool, structure_seed=structure_seed, placement_tries=placement_tries)
    path = None
    if cache_dir is not None:
        path = cache_file(params, cache_dir)
        cached = _load_cache(path, params)
        if cached is not None:
            return cached
    scenes = _generate(params)
    if path is not None:
        try:
            _save_cache(scenes, path)
            scenes.cache_path = str(path)
        except OSError as exc:  # read-only or full disk: the data is still good
            warnings.warn(f"could not write the scene cache {path} ({type(exc).__name__}: {exc}); "
                          "keeping the generated scenes in memory. Set MLPL_LAB_DATA to a "
                          "writable folder to cache them.", RuntimeWarning, stacklevel=2)
    return scenes


# ----------------------------------------------------------------------------- cache
def _checksum(images_u8: torch.Tensor, labels: torch.Tensor) -> str:
    h = hashlib.sha256(images_u8.contiguous().numpy().tobytes())
    h.update(labels.contiguous().numpy().tobytes())
    return h.hexdigest()


def _cache_problem(blob: dict, params: dict[str, Any]) -> str | None:
    """Why a cache file does not hold the scenes of ``params`` (None when it does)."""
    if blob.get("format_version") != FORMAT_VERSION:
        return f"format version {blob.get('format_version')} != {FORMAT_VERSION}"
    if json.loads(blob["params_json"]) != params:
        return "its parameters differ"
    n, size = params["n"], params["image_size"]
    images, labels = blob["images_u8"], blob["labels"]
    if tuple(images.shape) != (n, 3, size, size) or labels.shape[0] != n:
        return (f"it holds images {tuple(images.shape)} and labels {tuple(labels.shape)}, "
                f"expected ({n}, 3, {size}, {size}) and ({n}, C)")
    if blob.get("checksum") != _checksum(images, labels):
        return "its checksum does not match its contents"
    return None


def _load_cache(path: Path, params: dict[str, Any]) -> Scenes | None:
    if not path.exists():
        return None
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
        problem = _cache_problem(blob, params)
        if problem is not None:
            warnings.warn(f"scene cache {path} does not match ({problem}); regenerating it",
                          RuntimeWarning, stacklevel=3)
            return None
        return Scenes(
            images=_u8_to_float(blob["images_u8"]), labels=blob["labels"],
            segmentation=blob["segmentation"], boxes=blob["boxes"], contexts=blob["contexts"],
            num_objects=blob["num_objects"], context_prior=blob["context_prior"],
            class_names=list(blob["class_names"]), params=params, cache_path=str(path),
            from_cache=True)
    except Exception as exc:  # unreadable / partial file: regenerate and overwrite
        warnings.warn(f"scene cache {path} is unreadable ({type(exc).__name__}); regenerating it",
                      RuntimeWarning, stacklevel=3)
        return None


def _save_cache(s: Scenes, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    blob = dict(
        format_version=FORMAT_VERSION, params_json=json.dumps(s.params, sort_keys=True),
        images_u8=(u8 := _float_to_u8(s.images)), labels=s.labels, checksum=_checksum(u8, s.labels), segmentation=s.segmentation,
        boxes=s.boxes, contexts=s.contexts, num_objects=s.num_objects,
        context_prior=s.context_prior, class_names=list(s.class_names))
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    os.close(fd)
    try:
        torch.save(blob, tmp)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600
        os.replace(tmp, path)  # atomic: concurrent readers never see a partial file
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _u8_to_float(u8: torch.Tensor) -> torch.Tensor:
    return u8.to(torch.float32).div_(255.0)


def _float_to_u8(x: torch.Tensor) -> torch.Tensor:
    return x.mul(255.0).round_().to(torch.uint8)


# ------------------------------------------------------------------------ generation
def _generate(p: dict[str, Any]) -> Scenes:
    n, H = p["n"], p["image_size"]
    W = H
    M, T = p["max_objects"], p["placement_tries"]
    names = _g.class_names(p["glyphs"])
    C = len(names)
    K = p["num_contexts"]
    bound = p["glyphs"] in _g.COLOUR_BOUND  # a class binds a glyph and a colour (else colour is a nuisance)
    source = _g.source(p["glyphs"], p["digit_pool"])
    palette = _g.palette(p["glyphs"])  # (colours, 3)
    n_col = len(palette)

    prior = context_priors(C, K, p["structure_seed"])
    rng = np.random.default_rng(p["seed"])
    # ---- every random draw up front, in fixed-shape arrays (layout independent of n) --
    contexts = rng.integers(0, K, size=n)
    n_obj = rng.integers(p["min_objects"], p["max_objects"] + 1, size=n)
    probs = p["context_strength"] * prior + (1.0 - p["context_strength"]) / C  # (K, C)
    cdf = np.cumsum(probs, axis=1)
    cdf[:, -1] = 1.0
    u = rng.random((n, M))
    cls = (u[:, :, None] >= cdf[contexts][:, None, :]).sum(-1)  # slot 0 = topmost
    smin = int(round(p["size_range"][0] * H))
    smax = max(smin, int(round(p["size_range"][1] * H)))
    sizes = rng.integers(smin, smax + 1, size=(n, M))
    pos = rng.random((n, M, T, 2))
    col_idx = cls % n_col if bound else rng.integers(0, n_col, size=(n, M))
    jitter = rng.uniform(-p["colour_jitter"], p["colour_jitter"], size=(n, M, 3))
    colours = np.clip(palette[col_idx] + jitter, 0.0, 1.0).astype(np.float32)
    instance = rng.integers(0, 1 << 30, size=(n, M))
    bg_base = rng.uniform(0.35, 0.65, size=(n, 1)) + rng.uniform(-0.06, 0.06, size=(n, 3))
    bg_theta = rng.uniform(0.0, 2 * np.pi, size=n)
    bg_amp = rng.uniform(0.0, p["background_gradient"], size=n)
    kind = cls // n_col if bound else cls

    min_vis = p["min_visible"] if p["occlusion"] else 1.0
    coords = (np.arange(H, dtype=np.float32) + 0.5) / H * 2 - 1
    yy, xx = np.meshgrid(coords, coords, indexing="ij")

    images_u8 = torch.empty((n, 3, H, W), dtype=torch.uint8)
    seg_t = torch.full((n, H, W), -1, dtype=torch.int8)
    seg = seg_t.numpy()
    drawn = np.zeros(n, dtype=np.int64)
    tmpl_cache: dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray, int]] = {}

    def template(i: int, j: int):
        k = int(kind[i, j])
        inst = int(instance[i, j]) % source.num_variants(k)
        key = (k, inst, int(sizes[i, j]))
        hit = tmpl_cache.get(key)
        if hit is None:
            a = source.template(k, inst, key[2])
            m = a >= 0.5
            hit = tmpl_cache[key] = (a[None], m, int(m.sum()))
        return hit

    covered = np.zeros((H, W), dtype=bool)
    chunk = _chunk(H, W)
    for c0 in range(0, n, chunk):
        c1 = min(n, c0 + chunk)
        # background: tint + linear gradient in a random direction (vectorised)
        grad = (np.cos(bg_theta[c0:c1])[:, None, None] * xx + np.sin(bg_theta[c0:c1])[:, None, None] * yy)
        grad *= bg_amp[c0:c1, None, None]
        img = bg_base[c0:c1, :, None, None].astype(np.float32) + grad[:, None].astype(np.float32)
        for i in range(c0, c1):
            covered[:] = False
            placed = []
            for j in range(int(n_obj[i])):  # top to bottom
                a, m, area = template(i, j)
                if area == 0:
                    continue
                s = m.shape[0]
                need = math.ceil(min_vis * area - 1e-9)
                for t in range(T):
                    y = int(pos[i, j, t, 0] * (H - s + 1))
                    x = int(pos[i, j, t, 1] * (W - s + 1))
                    if not placed or np.count_nonzero(m & ~covered[y:y + s, x:x + s]) >= need:
                        covered[y:y + s, x:x + s] |= m
                        placed.append((j, y, x, a, m))
                        break
            drawn[i] = len(placed)
            im, sg = img[i - c0], seg[i]
            for j, y, x, a, m in reversed(placed):  # paint bottom to top
                win = im[:, y:y + a.shape[1], x:x + a.shape[2]]
                win *= 1.0 - a
                win += colours[i, j][:, None, None] * a
                sg[y:y + m.shape[0], x:x + m.shape[1]][m] = cls[i, j]
        if p["noise"] > 0:
            img += rng.standard_normal(img.shape, dtype=np.float32) * np.float32(p["noise"])
        np.clip(img, 0.0, 1.0, out=img)
        images_u8[c0:c1] = torch.from_numpy(img).mul_(255.0).round_().to(torch.uint8)

    labels, boxes = _labels_and_boxes(seg, C)
    return Scenes(
        images=_u8_to_float(images_u8), labels=torch.from_numpy(labels),
        segmentation=seg_t, boxes=torch.from_numpy(boxes),
        contexts=torch.from_numpy(contexts.astype(np.int64)), num_objects=torch.from_numpy(drawn),
        context_prior=torch.from_numpy(prior.astype(np.float32)), class_names=names, params=p)


def _labels_and_boxes(seg: np.ndarray, C: int) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised labels (N,C) and boxes (N,C,4) from the class map (N,H,W)."""
    n, H, W = seg.shape
    rows = np.zeros((n, C, H), dtype=bool)
    cols = np.zeros((n, C, W), dtype=bool)
    chunk = _chunk(H, W)
    for c0 in range(0, n, chunk):
        s = seg[c0:c0 + chunk].astype(np.int64)
        b = s.shape[0]
        valid = s >= 0
        ic = (np.arange(b)[:, None, None] * C + s)  # (b,H,W)
        ry = (ic * H + np.arange(H)[None, :, None])[valid]
        cx = (ic * W + np.arange(W)[None, None, :])[valid]
        rows[c0:c0 + b] = np.bincount(ry, minlength=b * C * H).reshape(b, C, H) > 0
        cols[c0:c0 + b] = np.bincount(cx, minlength=b * C * W).reshape(b, C, W) > 0
    labels = rows.any(-1)
    boxes = np.stack([
        cols.argmax(-1), rows.argmax(-1),
        W - cols[..., ::-1].argmax(-1), H - rows[..., ::-1].argmax(-1),
    ], axis=-1).astype(np.int64)
    boxes[~labels] = -1
    return labels.astype(np.int64), boxes
