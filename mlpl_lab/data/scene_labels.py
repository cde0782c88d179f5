"""The labels of a scene set without its images: the generator's draws and its placement rule,
nothing painted.

A scene's label is the set of classes of the objects the generator places
(:mod:`mlpl_lab.data.scenes`: an object is placed when enough of its glyph's mask stays
uncovered by the objects above it). That needs the random draws and the glyphs' masks, not the
background, colours, noise or the painted pixels, so the labels of a 64 px validation set take a
fraction of the time and none of the memory of the set itself. Statistics of the clean labels
(EPR's and ROLE's expected positives per image) are read here while a design is built.

:func:`scene_labels` repeats the generator's draws in the generator's order, so it returns
exactly ``make_scenes(...).labels`` (tests/test_scene_labels.py compares the two on shapes and
digits, with and without occlusion).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import glyphs as _g
from .scenes import context_priors, scene_params


def scene_labels(n: int, seed: int = 0, image_size: int = 32, glyphs: str = "shapes",
                 **scene_kwargs: Any) -> np.ndarray:
    """``(n, C)`` int64 labels of ``make_scenes(n, seed, image_size, glyphs, **scene_kwargs)``,
    computed without painting a pixel (same arguments, same validation: :func:`scene_params`)."""
    p = scene_params(n, seed, image_size, glyphs, **scene_kwargs)
    n, H = p["n"], p["image_size"]
    M, T = p["max_objects"], p["placement_tries"]
    C = len(_g.class_names(p["glyphs"]))
    K = p["num_contexts"]
    bound = p["glyphs"] in _g.COLOUR_BOUND
    source = _g.source(p["glyphs"], p["digit_pool"])
    n_col = len(_g.palette(p["glyphs"]))

    # the generator's draws, in its order: every draw before the last one placement reads is
    # made (with its shape) so the stream stays aligned; the background and noise come after
    prior = context_priors(C, K, p["structure_seed"])
    rng = np.random.default_rng(p["seed"])
    contexts = rng.integers(0, K, size=n)
    n_obj = rng.integers(p["min_objects"], p["max_objects"] + 1, size=n)
    probs = p["context_strength"] * prior + (1.0 - p["context_strength"]) / C
    cdf = np.cumsum(probs, axis=1)
    cdf[:, -1] = 1.0
    u = rng.random((n, M))
    cls = (u[:, :, None] >= cdf[contexts][:, None, :]).sum(-1)
    smin = int(round(p["size_range"][0] * H))
    smax = max(smin, int(round(p["size_range"][1] * H)))
    sizes = rng.integers(smin, smax + 1, size=(n, M))
    pos = rng.random((n, M, T, 2))
    if not bound:
        rng.integers(0, n_col, size=(n, M))  # the colour of each object
    rng.uniform(-p["colour_jitter"], p["colour_jitter"], size=(n, M, 3))
    instance = rng.integers(0, 1 << 30, size=(n, M))
    kind = cls // n_col if bound else cls

    min_vis = p["min_visible"] if p["occlusion"] else 1.0
    masks: dict[tuple[int, int, int], tuple[np.ndarray, int]] = {}
    labels = np.zeros((n, C), dtype=np.int64)
    covered = np.zeros((H, H), dtype=bool)
    for i in range(n):
        covered[:] = False
        placed = False
        for j in range(int(n_obj[i])):  # top to bottom
            k = int(kind[i, j])
            key = (k, int(instance[i, j]) % source.num_variants(k), int(sizes[i, j]))
            hit = masks.get(key)
            if hit is None:
                m = source.template(*key) >= 0.5
                hit = masks[key] = (m, int(m.sum()))
            m, area = hit
            if area == 0:
                continue
            s = m.shape[0]
            need = math.ceil(min_vis * area - 1e-9)
            for t in range(T):
                y = int(pos[i, j, t, 0] * (H - s + 1))
                x = int(pos[i, j, t, 1] * (H - s + 1))
                window = covered[y:y + s, x:x + s]
                visible = np.count_nonzero(m & ~window)
                if not placed or visible >= need:
                    window |= m
                    placed = True
                    if visible:  # its uncovered pixels keep its class: nothing above paints them
                        labels[i, cls[i, j]] = 1
                    break
    return labels


def val_scene_labels(seed: int, n_train: int = 4000, n_val: int = 1000, n_test: int = 1000,
                     image_size: int = 32, glyphs: str = "shapes", **scene_kwargs: Any) -> np.ndarray:
    """The labels of the validation set of split seed ``seed`` (the set
    :func:`mlpl_lab.data.make_val_scenes` builds), without its images."""
    from .splits import _scene_plan

    plan, kw = _scene_plan(n_train, n_val, n_test, seed, image_size, glyphs, scene_kwargs)
    _, n, s, pool = plan[1]
    return scene_labels(n, seed=s, image_size=image_size, glyphs=glyphs, digit_pool=pool, **kw)
