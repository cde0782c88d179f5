"""Embedded data: synthetic multi-label scenes (shapes or real handwritten digits).

``make_scenes`` generates a :class:`Scenes` (images, labels, per-class masks and boxes);
``make_splits`` builds train/val/test :class:`SceneDataset` s with partially observed
train labels.  Loaders for real datasets live in ``mlpl_lab.data.real`` (imported on
demand, not here).
"""
from .glyphs import COLOURS, DIGIT_POOLS, GLYPH_SOURCES, SHAPES, class_names
from .scenes import FORMAT_VERSION, Scenes, context_priors, make_scenes, masks_from_segmentation
from .splits import (SceneDataset, SceneSplits, make_scene_sets, make_splits, make_val_scenes,
                     split_seeds, with_regime)

__all__ = [
    "COLOURS", "DIGIT_POOLS", "GLYPH_SOURCES", "SHAPES", "class_names",
    "FORMAT_VERSION", "Scenes", "context_priors", "make_scenes", "masks_from_segmentation",
    "SceneDataset", "SceneSplits", "make_scene_sets", "make_splits", "make_val_scenes", "split_seeds",
    "with_regime",
]
