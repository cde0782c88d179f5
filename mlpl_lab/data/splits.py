"""Datasets and train/val/test splits over generated scenes, with observed partial labels.

Label encoding (``mlpl_lab.core.labels``): observed 1 = positive, 0 = negative, -1 = unknown.

Seeds: ``make_splits(seed=s)`` draws train, val and test scenes with the scene seeds
``3*s + 0``, ``3*s + 1`` and ``3*s + 2``, so the three sets never share a scene, and two
different split seeds never share a scene set either.  ``make_splits(seed=0).train``
holds exactly the scenes of ``make_scenes(n_train, seed=0)``.  All three share one
context structure (``structure_seed``), i.e. the same label correlations.  With
``glyphs="digits"`` the three sets draw handwriting from the disjoint digit pools
"train", "val" and "test" (unless ``digit_pool`` is passed explicitly).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from ..core import labels as L

from ..core import regimes as R
from .scenes import Scenes, as_index, make_scenes, masks_from_segmentation, scene_params


class SceneDataset(Dataset):
    """A map-style dataset over a :class:`Scenes`, with an observed-label matrix.

    ``observed``: (N, C) in {1, 0, -1}; default = the true labels, fully observed.
    Items: ``{"image": (3,H,W) float32, "labels": (C,) int64 (true), "observed": (C,)
    int64, "index": int}`` plus ``"mask": (C,H,W) bool`` when ``return_masks``.
    ``get_batch(indices)`` returns the same keys batched (``index`` as an int64 tensor)
    by direct tensor indexing -- the fast path of the training loop.
    """

    def __init__(self, scenes: Scenes, observed=None, return_masks: bool = False):
        if not isinstance(scenes, Scenes):
            raise TypeError(f"scenes must be a Scenes (from make_scenes), got {type(scenes).__name__}")
        self.scenes = scenes
        if observed is None:
            obs = scenes.labels.clone()
        else:
            L.validate(observed, num_classes=scenes.num_classes)
            obs = torch.as_tensor(np.asarray(observed) if not torch.is_tensor(observed) else observed)
            obs = obs.detach().to("cpu", torch.int64)
            if obs.shape[0] != len(scenes):
                raise ValueError(f"observed has {obs.shape[0]} rows but there are {len(scenes)} scenes")
        self._observed = obs
        self.return_masks = bool(return_masks)

    def __len__(self) -> int:
        return len(self.scenes)

    def __repr__(self) -> str:
        unk = (self._observed == L.UNK).float().mean().item()
        return (f"SceneDataset(n={len(self)}, classes={self.num_classes}, "
                f"size={self.scenes.image_size}, unknown labels={100 * unk:.0f} %)")

    def __getitem__(self, i: int) -> dict[str, Any]:
        i = int(i)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(f"index {i} out of range for {len(self)} scenes")
        item = {"image": self.scenes.images[i], "labels": self.scenes.labels[i],
                "observed": self._observed[i], "index": i}
        if self.return_masks:
            item["mask"] = self.scenes.mask(i)
        return item

    def get_batch(self, indices) -> dict[str, Any]:
        idx = as_index(indices)
        batch = {"image": self.scenes.images[idx], "labels": self.scenes.labels[idx],
                 "observed": self._observed[idx], "index": idx.clone()}
        if self.return_masks:
            batch["mask"] = masks_from_segmentation(self.scenes.segmentation[idx], self.num_classes)
        return batch

    def with_observed(self, observed) -> "SceneDataset":
        """The same scenes with another observed-label matrix."""
        return SceneDataset(self.scenes, observed, self.return_masks)

    @property
    def num_classes(self) -> int:
        return self.scenes.num_classes

    @property
    def class_names(self) -> list[str]:
        return self.scenes.class_names

    @property
    def images(self) -> torch.Tensor:
        return self.scenes.images

    @property
    def labels(self) -> torch.Tensor:
        return self.scenes.labels

    @property
    def observed(self) -> torch.Tensor:
        return self._observed

    @property
    def masks(self) -> torch.Tensor:
        return self.scenes.masks


@dataclass
class SceneSplits:
    train: SceneDataset
    val: SceneDataset
    test: SceneDataset
    class_names: list[str]
    regime: str
    regime_params: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return (f"SceneSplits(train={len(self.train)}, val={len(self.val)}, test={len(self.test)}, "
                f"classes={len(self.class_names)}, regime={self.regime!r}, "
                f"regime_params={self.regime_params!r})")

    def __str__(self) -> str:
        """What ``print(splits)`` shows a reader: the sizes, the classes and the regime in words."""
        params = ", ".join(f"{k} = {v:g}" if isinstance(v, float) else f"{k} = {v}"
                           for k, v in self.regime_params.items() if k != "masks")
        return (f"splits: {len(self.train)} training, {len(self.val)} validation and {len(self.test)} test "
                f"images; {len(self.class_names)} classes; observed labels: {self.regime}"
                + (f" ({params})" if params else ""))


def split_seeds(seed: int) -> tuple[int, int, int]:
    """Scene seeds of (train, val, test) for a split seed."""
    return 3 * seed, 3 * seed + 1, 3 * seed + 2


def _scene_plan(n_train: int, n_val: int, n_test: int, seed: int, image_size: int, glyphs: str,
                scene_kwargs: dict[str, Any]) -> tuple[list[tuple[str, int, int, str]], dict[str, Any]]:
    """``([(split, n, scene seed, digit pool)] for train/val/test, the remaining scene kwargs)``,
    every set's parameters validated before anything is generated."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an int >= 0, got {seed!r}")
    scene_kwargs = dict(scene_kwargs)
    if "digit_pool" in scene_kwargs:
        pools = (scene_kwargs.pop("digit_pool"),) * 3
    else:
        pools = ("train", "val", "test") if glyphs == "digits" else ("all",) * 3
    plan = [(name, n, s, pool) for (name, n), s, pool in
            zip((("n_train", n_train), ("n_val", n_val), ("n_test", n_test)), split_seeds(int(seed)), pools)]
    for name, n, s, pool in plan:  # validate all before generating
        try:
            scene_params(n, s, image_size, glyphs, digit_pool=pool, **scene_kwargs)
        except ValueError as e:
            raise ValueError(f"{name}: {e}" if str(e).startswith("n ") else str(e)) from None
    return plan, scene_kwargs


def make_scene_sets(n_train: int = 4000, n_val: int = 1000, n_test: int = 1000, seed: int = 0,
                    image_size: int = 32, glyphs: str = "shapes", cache_dir=None,
                    **scene_kwargs) -> tuple[Scenes, Scenes, Scenes]:
    """The (train, val, test) scene sets of a split seed: what :func:`make_splits` labels. They
    do not depend on the label regime, so one copy serves every regime of a seed
    (:func:`with_regime`)."""
    plan, kw = _scene_plan(n_train, n_val, n_test, seed, image_size, glyphs, scene_kwargs)
    train, val, test = (make_scenes(n, seed=s, image_size=image_size, glyphs=glyphs, digit_pool=pool,
                                    cache_dir=cache_dir, **kw) for _, n, s, pool in plan)
    return train, val, test


def make_val_scenes(n_train: int = 4000, n_val: int = 1000, n_test: int = 1000, seed: int = 0,
                    image_size: int = 32, glyphs: str = "shapes", cache_dir=None, **scene_kwargs) -> Scenes:
    """The validation scene set of a split seed alone (the same set :func:`make_splits` builds),
    e.g. for statistics of the clean validation labels without the train and test images."""
    plan, kw = _scene_plan(n_train, n_val, n_test, seed, image_size, glyphs, scene_kwargs)
    _, n, s, pool = plan[1]
    return make_scenes(n, seed=s, image_size=image_size, glyphs=glyphs, digit_pool=pool,
                       cache_dir=cache_dir, **kw)


def with_regime(sets: tuple[Scenes, Scenes, Scenes], seed: int, regime: str = "single_positive",
                regime_params: dict[str, Any] | None = None, regime_seed: int | None = None) -> SceneSplits:
    """Splits over given (train, val, test) scene sets, the train labels observed under
    ``regime`` exactly as :func:`make_splits` observes them (the scene sets are shared, not
    copied)."""
    regime_params = dict(regime_params or {})
    make_obs = R.regime(regime, **regime_params)  # raises on unknown name / bad params
    if regime_seed is not None and (isinstance(regime_seed, bool)
                                    or not isinstance(regime_seed, (int, np.integer))):
        raise ValueError(f"regime_seed must be an int or None, got {regime_seed!r}")
    train_scenes, val_scenes, test_scenes = sets
    call_kwargs: dict[str, Any] = {}
    if regime_seed is not None or "seed" not in regime_params:  # a seed in regime_params is a default
        call_kwargs["seed"] = int(seed if regime_seed is None else regime_seed)
    if regime == "single_positive" and regime_params.get("bias") is not None \
            and "masks" not in regime_params:
        call_kwargs["masks"] = train_scenes.masks
    observed = make_obs(train_scenes.labels, **call_kwargs)
    # the validation labels a practitioner would hold: the same regime on the validation scenes
    # (Cole et al.'s observed validation variant). Training never reads them; the engine scores
    # val_obs_mAP on them beside the clean val_mAP, so model selection can be compared both ways
    if "masks" in call_kwargs:
        call_kwargs["masks"] = val_scenes.masks
    val_observed = make_obs(val_scenes.labels, **call_kwargs)
    return SceneSplits(
        train=SceneDataset(train_scenes, observed),
        val=SceneDataset(val_scenes, val_observed),
        test=SceneDataset(test_scenes, R.full(test_scenes.labels)),
        class_names=list(train_scenes.class_names), regime=regime, regime_params=regime_params)


def make_splits(n_train: int = 4000, n_val: int = 1000, n_test: int = 1000, seed: int = 0,
                image_size: int = 32, glyphs: str = "shapes", regime: str = "single_positive",
                regime_params: dict[str, Any] | None = None, regime_seed: int | None = None,
                cache_dir=None, **scene_kwargs) -> SceneSplits:
    """Train/val/test scene datasets; the train labels observed under ``regime``.

    ``regime``/``regime_params`` go to ``mlpl_lab.core.labels.regime`` (checked before any
    scene is generated); the train set's observed matrix is
    ``labels.regime(regime, **regime_params)(Y_train, seed=regime_seed or seed)``
    (``regime_seed=None`` -> ``seed``).  For ``single_positive`` with ``bias`` the
    train masks are passed automatically.  The val set's ``observed`` is the same regime on the
    val labels (same seed, its own masks), read only for ``val_obs_mAP``; its ``labels`` stay
    clean, and the test set is fully observed.
    ``scene_kwargs`` go to :func:`make_scenes` (e.g. ``max_objects``, ``noise``).
    """
    regime_params = dict(regime_params or {})
    R.regime(regime, **regime_params)  # raises on unknown name / bad params, before any scene
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an int >= 0, got {seed!r}")
    if regime_seed is not None and (isinstance(regime_seed, bool)
                                    or not isinstance(regime_seed, (int, np.integer))):
        raise ValueError(f"regime_seed must be an int or None, got {regime_seed!r}")
    sets = make_scene_sets(n_train, n_val, n_test, seed, image_size, glyphs, cache_dir=cache_dir,
                           **scene_kwargs)
    return with_regime(sets, int(seed), regime, regime_params, regime_seed)
