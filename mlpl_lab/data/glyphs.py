"""Glyph sources for the synthetic scenes: rasterised shapes, real handwritten digits, a second
shape vocabulary, and printed Latin and Greek letters.

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
* ``SymbolGlyphs`` -- eight outlines no other source draws (star, hexagon, diamond, arrow,
  crescent, bow tie, trapezoid, chevron), each class one of them in one of two colours of its
  own (:data:`SYMBOL_COLOURS`).
* ``FontGlyphs`` -- characters of the DejaVu fonts that matplotlib bundles (read from its data
  folder, never from the system), rasterised from their outlines with 4x4 supersampling:
  twelve upper-case Latin letters (``letters``) or ten lower-case Greek letters (``greek``), each
  in two faces (sans bold, serif bold) as two instances, or ten signs (``signs``: card suits,
  umbrella, sun, note, aeroplane, anchor, snowflake) in sans bold, upright and oblique.

Each source says how a class maps to a glyph and a colour (:data:`COLOUR_BOUND`): a class of
``shapes`` and ``symbols`` binds a glyph and a colour (``class = glyph * colours + colour``);
for ``digits``, ``letters``, ``greek`` and ``signs`` a class is the glyph alone and each object takes a
random colour of :data:`COLOURS` (a nuisance).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path as Path_

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


SYMBOLS: tuple[str, ...] = ("star", "hexagon", "diamond", "arrow", "crescent", "bowtie", "trapezoid",
                            "chevron")
#: the symbols' own two colours (neither is a colour of :data:`COLOURS`)
SYMBOL_COLOURS: dict[str, tuple[float, float, float]] = {
    "orange": (0.96, 0.52, 0.08),
    "purple": (0.56, 0.18, 0.78),
}
#: the outlines of the symbols, as polygons in normalised coordinates (u right, v down, [-1, 1])
_SYMBOL_POLYGONS: dict[str, list[tuple[float, float]]] = {
    "hexagon": [(0.95 * np.cos(a), 0.95 * np.sin(a)) for a in np.linspace(0, 2 * np.pi, 7)[:-1]],
    "diamond": [(0.0, -0.95), (0.7, 0.0), (0.0, 0.95), (-0.7, 0.0)],
    "arrow": [(-0.95, -0.3), (0.15, -0.3), (0.15, -0.8), (0.95, 0.0), (0.15, 0.8), (0.15, 0.3), (-0.95, 0.3)],
    "bowtie": [(-0.95, -0.85), (0.0, -0.15), (0.95, -0.85), (0.95, 0.85), (0.0, 0.15), (-0.95, 0.85)],
    "trapezoid": [(-0.45, -0.7), (0.45, -0.7), (0.95, 0.7), (-0.95, 0.7)],
    "chevron": [(-0.95, -0.95), (-0.25, -0.95), (0.6, 0.0), (-0.25, 0.95), (-0.95, 0.95), (-0.1, 0.0)],
}


def _star(points: int = 5, outer: float = 0.97, inner: float = 0.42) -> list[tuple[float, float]]:
    angles = -np.pi / 2 + np.arange(2 * points) * np.pi / points
    radii = np.where(np.arange(2 * points) % 2 == 0, outer, inner)
    return [(float(r * np.cos(a)), float(r * np.sin(a))) for r, a in zip(radii, angles)]


_SYMBOL_POLYGONS["star"] = _star()


def _symbol_inside(name: str, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    if name == "crescent":
        return (u * u + v * v <= 0.95 ** 2) & ((u - 0.42) ** 2 + (v + 0.12) ** 2 >= 0.78 ** 2)
    if name not in _SYMBOL_POLYGONS:
        raise ValueError(f"unknown symbol {name!r}; valid: {list(SYMBOLS)}")
    from matplotlib.path import Path as _Path

    pts = np.stack([u.ravel(), v.ravel()], axis=1)
    return _Path(_SYMBOL_POLYGONS[name]).contains_points(pts).reshape(u.shape)


@lru_cache(maxsize=None)
def symbol_template(name: str, size: int) -> np.ndarray:
    """Anti-aliased alpha template of a symbol, ``(size, size)`` float32 in [0, 1]."""
    k = _SUPERSAMPLE
    t = (np.arange(size * k, dtype=np.float64) + 0.5) / (size * k) * 2.0 - 1.0
    v, u = np.meshgrid(t, t, indexing="ij")
    alpha = _symbol_inside(name, u, v).astype(np.float32).reshape(size, k, size, k).mean(axis=(1, 3))
    alpha.setflags(write=False)
    return alpha


class SymbolGlyphs:
    """Eight symbols; glyph id == symbol index."""

    name = "symbols"
    kinds = SYMBOLS

    def num_variants(self, kind: int) -> int:
        return 1

    def template(self, kind: int, instance: int, size: int) -> np.ndarray:
        return symbol_template(SYMBOLS[kind], size)


#: the characters of the font sources
LETTERS: tuple[str, ...] = tuple("AEFHKLMNRTXZ")
GREEK: tuple[str, ...] = tuple("αβγδελμπσω")
SIGNS: tuple[str, ...] = tuple("♠♣♥♦☂☀♪✈⚓❄")
#: the faces each character is drawn in (matplotlib's bundled DejaVu fonts), one instance each
FONT_FACES: tuple[str, ...] = ("DejaVuSans-Bold.ttf", "DejaVuSerif-Bold.ttf")
#: the signs' faces: the serif face lacks them (it would draw its box for a missing glyph)
SIGN_FACES: tuple[str, ...] = ("DejaVuSans-Bold.ttf", "DejaVuSans-BoldOblique.ttf")


@lru_cache(maxsize=None)
def char_template(char: str, face: str, size: int) -> np.ndarray:
    """Anti-aliased alpha template of ``char`` in ``face``: its outline scaled to fill the box
    (aspect kept, centred), ``(size, size)`` float32 in [0, 1]."""
    import matplotlib
    from matplotlib.font_manager import FontProperties
    from matplotlib.path import Path as _Path
    from matplotlib.textpath import TextPath

    font = Path_(matplotlib.get_data_path()) / "fonts" / "ttf" / face
    path = TextPath((0, 0), char, size=100, prop=FontProperties(fname=str(font)))
    box = path.get_extents()
    scale = 1.9 / max(box.width, box.height)
    cx, cy = (box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2
    k = _SUPERSAMPLE
    t = (np.arange(size * k, dtype=np.float64) + 0.5) / (size * k) * 2.0 - 1.0
    v, u = np.meshgrid(t, t, indexing="ij")
    pts = np.stack([u.ravel() / scale + cx, -v.ravel() / scale + cy], axis=1)  # font y points up
    inside = np.zeros(pts.shape[0], dtype=bool)
    for poly in path.to_polygons(closed_only=True):  # even-odd: holes (the bowl of an A) stay empty
        inside ^= _Path(poly).contains_points(pts)
    alpha = inside.astype(np.float32).reshape(size, k, size, k).mean(axis=(1, 3))
    alpha.setflags(write=False)
    return alpha


class FontGlyphs:
    """Characters of the bundled DejaVu fonts; glyph id == character index, instance == face."""

    def __init__(self, name: str, chars: tuple[str, ...], faces: tuple[str, ...] = FONT_FACES):
        self.name, self.kinds, self.faces = name, chars, faces

    def num_variants(self, kind: int) -> int:
        return len(self.faces)

    def template(self, kind: int, instance: int, size: int) -> np.ndarray:
        return char_template(self.kinds[kind], self.faces[instance % len(self.faces)], size)


def class_names(glyphs: str) -> list[str]:
    if glyphs == "shapes":
        return [f"{c} {s}" for s in SHAPES for c in COLOURS]
    if glyphs == "digits":
        return [f"digit {d}" for d in range(10)]
    if glyphs == "symbols":
        return [f"{c} {s}" for s in SYMBOLS for c in SYMBOL_COLOURS]
    if glyphs == "letters":
        return [f"letter {ch}" for ch in LETTERS]
    if glyphs == "greek":
        return [f"greek {ch}" for ch in GREEK]
    if glyphs == "signs":
        return [f"sign {ch}" for ch in SIGNS]
    raise ValueError(f"unknown glyphs {glyphs!r}; valid: {list(GLYPH_SOURCES)}")


GLYPH_SOURCES: tuple[str, ...] = ("shapes", "digits", "symbols", "letters", "greek", "signs")
#: the sources whose class binds a glyph and a colour (else the colour is a random nuisance)
COLOUR_BOUND: tuple[str, ...] = ("shapes", "symbols")


def palette(glyphs: str) -> np.ndarray:
    """The colours objects of ``glyphs`` are drawn in, ``(colours, 3)`` float32."""
    colours = SYMBOL_COLOURS if glyphs == "symbols" else COLOURS
    return np.array(list(colours.values()), dtype=np.float32)


def source(glyphs: str, digit_pool: str = "all"):
    """The glyph source of ``glyphs`` (``digit_pool``: the handwritten instances' pool)."""
    if glyphs == "shapes":
        return ShapeGlyphs()
    if glyphs == "digits":
        return DigitGlyphs(digit_pool)
    if glyphs == "symbols":
        return SymbolGlyphs()
    if glyphs == "letters":
        return FontGlyphs("letters", LETTERS)
    if glyphs == "greek":
        return FontGlyphs("greek", GREEK)
    if glyphs == "signs":
        return FontGlyphs("signs", SIGNS, SIGN_FACES)
    raise ValueError(f"unknown glyphs {glyphs!r}; valid: {list(GLYPH_SOURCES)}")
