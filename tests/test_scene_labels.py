"""The scene labels without the images (:mod:`mlpl_lab.data.scene_labels`) and EPR's and ROLE's k
computed from them (:func:`mlpl_lab.protocol.positives.expected_num_pos`).

Oracles: the full generator's labels (``make_scenes``, which paints every pixel and reads the
labels back off the segmentation), a naive count of positives over those labels, and the values
of k the chapters' specs carried when k was read off the rendered validation scenes."""
from __future__ import annotations

import numpy as np
import pytest

from mlpl_lab.data import make_scenes, make_val_scenes
from mlpl_lab.data.scene_labels import scene_labels, val_scene_labels


@pytest.mark.parametrize("kwargs", [
    dict(n=150, seed=4),
    dict(n=120, seed=7, glyphs="digits"),
    dict(n=120, seed=2, occlusion=False),
    dict(n=120, seed=1, image_size=64, colour_jitter=0.25, noise=0.15, size_range=[0.2, 0.4],
         max_objects=6, min_visible=0.2),
    dict(n=100, seed=3, glyphs="digits", digit_pool="val", max_objects=3, colour_jitter=0.0),
    dict(n=100, seed=5, placement_tries=1, max_objects=8, size_range=[0.4, 0.6]),
    dict(n=100, seed=6, glyphs="symbols", max_objects=5),
    dict(n=100, seed=8, glyphs="letters", image_size=48),
    dict(n=100, seed=9, glyphs="greek", max_objects=3),
])
def test_labels_without_images_equal_the_generators(kwargs):
    """Bug caught: a draw skipped or reordered (every later object's class and position shift), a
    placement rule that differs from the generator's (an occluded object labelled, or a
    placed one not). Oracle: the labels make_scenes reads off its painted segmentation."""
    want = make_scenes(**kwargs).labels.numpy()
    got = scene_labels(**kwargs)
    assert got.dtype == np.int64 and got.shape == want.shape
    assert np.array_equal(got, want), f"{int((got != want).any(1).sum())} images differ"


def test_validation_labels_are_the_validation_sets():
    """The split seed's validation set, not its train or test set (scene seed 3s + 1)."""
    data = dict(n_train=64, n_val=80, n_test=48, image_size=32, glyphs="shapes")
    assert np.array_equal(val_scene_labels(2, **data), make_val_scenes(seed=2, **data).labels.numpy())
    assert val_scene_labels(2, **data).shape == (80, 20)


def _naive_k(labels) -> float:
    rows = labels.tolist()
    return sum(sum(1 for v in row if v == 1) for row in rows) / len(rows)


def test_k_is_the_mean_positives_of_the_rendered_validation_scenes():
    """Oracle: a naive count of the positives per image over the full generator's validation
    scenes of the smoke profile (seed 0), rounded as the specs hold it."""
    from mlpl_lab.protocol.positives import expected_num_pos
    from mlpl_lab.profiles import get_profile

    P = get_profile("smoke")
    rendered = make_val_scenes(seed=0, **P.data_kwargs()).labels
    assert expected_num_pos(P, 0) == round(_naive_k(rendered), 4)


@pytest.mark.parametrize("profile, seed, k", [("smoke", 0, 2.1562), ("cpu", 0, 2.865), ("cpu", 3, 2.811),
                                              ("gpu", 0, 2.825), ("gpu", 1, 2.8665)])
def test_k_is_the_value_the_specs_carried(profile, seed, k):
    """Bug caught: a k that moves (EPR's and ROLE's run keys with it). Oracle: the values read
    off the rendered validation scenes before k was computed from the labels alone."""
    from mlpl_lab.protocol.positives import expected_num_pos

    assert expected_num_pos(profile, seed) == k


def test_k_renders_no_scene(monkeypatch):
    """Planning a design that asks for EPR or ROLE paints no image: the generator is never
    called (it would raise here)."""
    from mlpl_lab.protocol import positives
    from mlpl_lab.data import scenes
    from mlpl_lab.profiles import get_profile

    def boom(*a, **k):
        raise AssertionError("a scene set was rendered to compute k")

    monkeypatch.setattr(scenes, "_generate", boom)
    monkeypatch.setattr(positives, "_K", {})
    assert 1.0 <= positives.expected_num_pos(get_profile("smoke"), 7) <= 4.0
