"""The glyph vocabularies beyond shapes and digits (mlpl_lab.data.glyphs): symbols, printed Latin
and Greek letters. Oracles: areas of the polygons by their formulas, a symmetric letter against
its mirror image, counts of the label spaces written out, and the colour rule read off the pixels."""
from __future__ import annotations

import math

import numpy as np
import pytest

from mlpl_lab.data import glyphs as G
from mlpl_lab.data import make_scenes


@pytest.mark.parametrize("name, area", [
    ("hexagon", 3 * math.sqrt(3) / 2 * 0.95 ** 2),  # a regular hexagon of circumradius 0.95
    ("diamond", 2 * 0.7 * 0.95),                     # half-diagonals 0.7 and 0.95
    ("trapezoid", (0.9 + 1.9) / 2 * 1.4),            # parallel sides 0.9 and 1.9, height 1.4
])
def test_a_symbols_coverage_is_its_polygons_area_over_the_box(name, area):
    alpha = G.symbol_template(name, 96)
    assert float(alpha.mean()) == pytest.approx(area / 4.0, abs=0.01)


def test_a_symmetric_letter_is_its_own_mirror_image():
    for face in G.FONT_FACES:
        h = G.char_template("H", face, 48) >= 0.5
        assert h.sum() > 0.15 * h.size  # a bold letter fills a good part of its box
        assert (h != h[:, ::-1]).mean() < 0.02


def test_every_sign_is_drawn_in_each_of_its_faces_not_as_a_missing_glyph_box():
    """A face that lacks a character draws its missing-glyph box (a filled rectangle): every sign's
    template must differ from every other sign's, and none may fill most of its box."""
    for face in G.SIGN_FACES:
        masks = [G.char_template(ch, face, 32) >= 0.5 for ch in G.SIGNS]
        assert all(m.mean() < 0.75 for m in masks)
        assert len({m.tobytes() for m in masks}) == len(G.SIGNS)


def test_a_letter_keeps_its_holes():
    """Even-odd filling: the counter of an A (and of a Greek delta) stays background."""
    a = G.char_template("A", "DejaVuSans-Bold.ttf", 64) >= 0.5
    rows = a[20:40]
    inside = [np.flatnonzero(r) for r in rows if r.any()]
    assert any(len(idx) and (np.diff(idx) > 1).any() for idx in inside)  # a gap between the two strokes


def test_the_label_spaces_by_hand():
    assert len(G.class_names("symbols")) == 8 * 2 and G.class_names("symbols")[:2] == ["orange star", "purple star"]
    assert G.class_names("letters") == [f"letter {c}" for c in "AEFHKLMNRTXZ"]
    assert len(G.class_names("greek")) == 10 and len(G.class_names("signs")) == 10
    assert not set(G.class_names("symbols")) & set(G.class_names("shapes"))


def test_a_symbol_class_has_its_own_colour_and_a_letters_colour_is_a_nuisance():
    s = make_scenes(200, seed=11, glyphs="symbols", max_objects=1, noise=0.0, colour_jitter=0.0)
    purple = np.array(G.SYMBOL_COLOURS["purple"])
    for i in range(20):
        c = int(s.labels[i].nonzero()[0])
        pixel = s.images[i][:, s.segmentation[i] == c].median(1).values.numpy()
        assert (np.abs(pixel - purple).max() < 0.05) == (c % 2 == 1)
    letters = make_scenes(300, seed=12, glyphs="letters", max_objects=1, noise=0.0, colour_jitter=0.0)
    seen = {}
    for i in range(300):
        c = int(letters.labels[i].nonzero()[0])
        pixel = letters.images[i][:, letters.segmentation[i] == c].median(1).values.numpy()
        seen.setdefault(c, set()).add(tuple(np.round(pixel, 1)))
    assert max(len(v) for v in seen.values()) >= 3  # one letter, several colours
