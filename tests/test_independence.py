"""Independence of data sets (mlpl_lab.analysis.independence). Oracles: correlations of
hand-built images, label agreement counted by hand, and the generator's own behaviour (a setting
that differs in one knob only keeps its images; another seed does not)."""
from __future__ import annotations

import numpy as np
import pytest

from mlpl_lab.analysis.independence import independence_table, label_agreement, pixel_correlation
from mlpl_lab.data import make_scenes


def test_pixel_correlation_by_hand():
    a = np.array([[1.0, 2.0, 3.0], [1.0, 0.0, 1.0]])
    b = np.array([[2.0, 4.0, 6.0], [0.0, 1.0, 0.0]])
    assert pixel_correlation(a, b) == pytest.approx([1.0, -1.0])


def test_label_agreement_by_hand():
    a = np.array([[1, 0], [1, 1], [0, 0], [0, 1]])
    b = np.array([[1, 1], [0, 1], [0, 0], [0, 0]])
    got = label_agreement(a, b)
    assert got["agreement"] == pytest.approx(5 / 8)
    # class 0: pa=0.5, pb=0.25 -> 0.125 + 0.375 = 0.5; class 1: pa=0.5, pb=0.5 -> 0.5
    assert got["chance"] == pytest.approx(0.5)


def test_one_knob_changed_keeps_the_images_and_another_seed_does_not():
    """What made the old scene families one data set: less noise on the same seeds and layouts
    gives the same pictures; another seed and vocabulary gives pictures unrelated to them."""
    base = make_scenes(120, seed=3)
    quieter = make_scenes(120, seed=3, noise=0.02)
    other = make_scenes(120, seed=103, glyphs="letters", structure_seed=7)
    assert np.nanmedian(pixel_correlation(base.images, quieter.images)) > 0.8
    assert abs(np.nanmedian(pixel_correlation(base.images, other.images))) < 0.2
    rows = independence_table({
        "base": {"images": base.images, "labels": base.labels, "class_names": base.class_names,
                 "seeds": [3], "structure_seed": 0},
        "quieter": {"images": quieter.images, "labels": quieter.labels, "class_names": quieter.class_names,
                    "seeds": [3], "structure_seed": 0},
        "letters": {"images": other.images, "labels": other.labels, "class_names": other.class_names,
                    "seeds": [103], "structure_seed": 7}})
    first = rows[0]
    assert (first["a"], first["b"], first["shared_label_space"], first["shared_seeds"]) == ("base", "quieter", True, [3])
    assert first["label_agreement"] > 0.99 > first["label_chance"]
    assert rows[1]["shared_label_space"] is False and "label_agreement" not in rows[1]
    assert rows[1]["shared_seeds"] == [] and rows[1]["shared_classes"] == []
