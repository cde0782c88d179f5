"""Glyph sources for the synthetic scenes: rasterised shapes and real handwritten digits.

A glyph source turns ``(glyph id, size in pixels)`` into an *alpha template*: a
``(size, size)`` float32 array in [0, 1] (anti-aliased coverage).  The hard mask of
an object is ``alpha >= 0.5``; that is what the scene masks, labels and boxes use.

* ``ShapeGlyphs`` -- five geometric shapes, rasterised once per size with 4x4
  supersampling and cached (templates are tiny).
* ``DigitGlyphs`` -- the 1,797 real 8x8 handwritten digits bundled with
  scikit-learn (``sklearn.datasets.load_digits``), upsampled bilinearly to the object
  size.  Instances are split into fixed, disjoint pools ("train" 60 %, "val" 20 %,
  "test" 20 %, stratified by digit, with a fixed permutation that does not depend on
  the scene seed), so scenes built from different pools never share a handwritten
  instance.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

SHAPES: tuple[str, ...] = ("circle", "square", "triangle", "cross", "ring")

#: Object colours: name -> RGB in [0, 1].  Saturated and far apart; every object gets
#: a per-channel jitter on top (``colour_jitter`` in :func:`make_scenes`).
COLOURS: dict[str, tuple[float, float, float]] = {
    "red": (0.88, 0.14, 0.12),
    "green": (0.12, 0.72, 0.18),
    "blue": (0.14, 0.30, 0.92),
    "yellow": (0.95, 0.85, 0.12),
}

DIGIT_POOLS: tuple[str, ...] = ("all", "train", "val", "test")
_DIGIT_POOL_SEED = 20240611  # fixed: pools must not depend on the scene seed
_SUPERSAMPLE = 4


def _shape_inside(name: str, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Point-in-shape test in normalised coordinates u (right), v (down) in [-1, 1]."""
    r = np.sqrt(u * u + v * v)
    if name == "circle":
        return r <= 0.95
    if name == "square":
        return np.maximum(np.abs(u), np.abs(v)) <= 0.78
    if name == "triangle":  # apex at the top, base at the bottom
        top, bottom, half_base = -0.92, 0.82, 0.98
        return (v >= top) & (v <= bottom) & (np.abs(u) <= half_base * (v - top) / (bottom - top))
    if name == "cross":
        arm = 0.32
        return ((np.abs(u) <= arm) & (np.abs(v) <= 0.95)) | ((np.abs(v) <= arm) & (np.abs(u) <= 0.95))
    if name == "ring":
        return (r <= 0.95) & (r >= 0.52)
    raise ValueError(f"unknown shape {name!r}; valid: {list(SHAPES)}")


@lru_cache(maxsize=None)
def shape_template(name: str, size: int) -> np.ndarray:
    """Anti-aliased alpha template of a shape, ``(size, size)`` float32 in [0, 1]."""
    k = _SUPERSAMPLE
    t = (np.arange(size * k, dtype=np.float64) + 0.5) / (size * k) * 2.0 - 1.0
    v, u = np.meshgrid(t, t, indexing="ij")
    inside = _shape_inside(name, u, v).astype(np.float32)
    alpha = inside.reshape(size, k, size, k).mean(axis=(1, 3))
    alpha.setflags(write=False)
    return alpha


class ShapeGlyphs:
    """Five shapes; glyph id == shape index."""

    name = "shapes"
    kinds = SHAPES

    def num_variants(self, kind: int) -> int:
        return 1

    def template(self, kind: int, instance: int, size: int) -> np.ndarray:
        return shape_template(SHAPES[kind], size)


@lru_cache(maxsize=1)
def _load_digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    d = load_digits()
    images = (d.images / 16.0).astype(np.float32)  # (1797, 8, 8) in [0, 1]
    return images, d.target.astype(np.int64)


@lru_cache(maxsize=8)
def digit_pool_indices(pool: str) -> np.ndarray:
    """Indices (into ``load_digits()``) of the instances in a pool; fixed and disjoint."""
    if pool not in DIGIT_POOLS:
        raise ValueError(f"unknown digit_pool {pool!r}; valid: {list(DIGIT_POOLS)}")
    _, target = _load_digits()
    if pool == "all":
        return np.arange(len(target))
    rng = np.random.default_rng(_DIGIT_POOL_SEED)
    parts: dict[str, list[np.ndarray]] = {"train": [], "val": [], "test": []}
    for digit in range(10):
        idx = rng.permutation(np.flatnonzero(target == digit))
        a, b = int(round(0.6 * len(idx))), int(round(0.8 * len(idx)))
        parts["train"].append(idx[:a])
        parts["val"].append(idx[a:b])
        parts["test"].append(idx[b:])
    out = np.sort(np.concatenate(parts[pool]))
    out.setflags(write=False)
    return out


@lru_cache(maxsize=None)
def _bilinear_matrix(src: int, dst: int) -> np.ndarray:
    """(dst, src) matrix for 1-D bilinear resampling with pixel-centre alignment."""
    x = (np.arange(dst) + 0.5) * src / dst - 0.5
    x = np.clip(x, 0, src - 1)
    lo = np.floor(x).astype(int)
    hi = np.minimum(lo + 1, src - 1)
    w = x - lo
    m = np.zeros((dst, src), dtype=np.float32)
    m[np.arange(dst), lo] += 1 - w
    m[np.arange(dst), hi] += w
    return m


class DigitGlyphs:
    """Real handwritten digits from scikit-learn; glyph kind == digit, instance == row."""

    name = "digits"
    kinds = tuple(str(d) for d in range(10))

    def __init__(self, pool: str = "all"):
        images, target = _load_digits()
        self.pool = pool
        idx = digit_pool_indices(pool)
        self.images = images
        # per digit: the instance rows available in this pool
        self.by_digit = [idx[target[idx] == d] for d in range(10)]

    def num_variants(self, kind: int) -> int:
        return len(self.by_digit[kind])

    def template(self, kind: int, instance: int, size: int) -> np.ndarray:
        """Bilinear upsampling of the 8x8 bitmap, then a soft threshold (stroke edge)."""
        rows = self.by_digit[kind]
        img = self.images[rows[instance % len(rows)]]
        m = _bilinear_matrix(8, size)
        up = m @ img @ m.T
        # soft threshold: alpha >= 0.5 <=> intensity >= 0.5
        return np.clip((up - 0.35) / 0.3, 0.0, 1.0)


def class_names(glyphs: str) -> list[str]:
    if glyphs == "shapes":
        return [f"{c} {s}" for s in SHAPES for c in COLOURS]
    if glyphs == "digits":
        return [f"digit {d}" for d in range(10)]
    raise ValueError(f"unknown glyphs {glyphs!r}; valid: {list(GLYPH_SOURCES)}")


GLYPH_SOURCES: tuple[str, ...] = ("shapes", "digits")
