"""The splits runs train on, built once per process: the scene sets in memory (a cache bounded in
bytes, least recently used first out, over the disk cache under ``data/cache``), real datasets'
splits by count, and the clean validation labels alone (:func:`clean_val_labels`).
"""
from __future__ import annotations

import json
import os
from collections import OrderedDict
from typing import Any, Dict, List

import torch

from ..core.labels import check_seed
from ..core.paths import cache_dir
from ..data import make_scene_sets, with_regime
from ..data.scene_labels import val_scene_labels
from .spec import RunSpec

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


def build_splits(spec_or_data, regime: str | None = None, regime_params=None, seed: int | None = None,
                 cache: bool = True):
    """The train/val/test splits of a spec (or of a data dict + regime + seed). Cached in
    memory for the process and on disk under ``data/cache`` (scene sets). A data dict with
    ``dataset`` other than ``"scenes"`` reads a real dataset (:mod:`mlpl_lab.data.real_splits`).
    """
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
    without building any image (:func:`mlpl_lab.data.scene_labels.val_scene_labels`: e.g. EPR's
    and ROLE's expected positives while a design is built)."""
    seed = check_seed(seed, "seed")
    data = dict(data)
    if data.get("dataset", "scenes") != "scenes":
        return build_splits(data, "full", {}, seed).val.labels
    data.pop("dataset", None)
    sets = _SCENE_SETS.get(_scene_key(data, seed))
    if sets is not None:
        return sets[1].labels
    return torch.from_numpy(val_scene_labels(seed, **data))
