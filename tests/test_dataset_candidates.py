"""The independent data set candidates (``mlpl_lab.protocol.datasets``).

Oracles: ``numpy.corrcoef`` per image pair (not the package's vectorised correlation), seed sets
written by hand, and gaps worked out by hand from stand-in runs.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from mlpl_lab.catalogue import LABEL
from mlpl_lab.data.glyphs import COLOUR_BOUND
from mlpl_lab.protocol import datasets as ds


def test_every_candidate_is_its_own_label_space_seeds_and_structure():
    """Bugs caught: two candidates on one glyph vocabulary (one label space: not a data set of its
    own), the pretraining's digits used as a data set, a seed or a structure seed shared (the same
    layouts or co-occurrences again)."""
    vocab = [d["scene"].get("glyphs", "shapes") for d in ds.DATASETS.values()]
    assert len(set(vocab)) == len(vocab) >= 5
    assert "digits" not in vocab
    assert set(vocab) <= set(COLOUR_BOUND) | {"letters", "greek", "signs"}
    seeds = [s for d in ds.DATASETS.values() for s in d["seeds"]]
    assert len(seeds) == len(set(seeds))
    structure = [d["scene"].get("structure_seed", 0) for d in ds.DATASETS.values()]
    assert len(structure) == len(set(structure))
    with pytest.raises(KeyError, match="the data sets are: coloured shapes"):
        ds.scene_of("coloured shape")


def test_independence_reads_each_pair_by_hand(monkeypatch):
    """Three stand-in sets: b is a copy of a with noise (correlated), c independent; b shares a
    seed with a. Bugs caught: the median over the wrong axis, a shared seed not failing the pair,
    the threshold applied the wrong way."""
    rng = np.random.default_rng(0)
    a = rng.random((40, 3, 8, 8))
    images = {"a": a, "b": a + 0.3 * rng.random(a.shape), "c": rng.random(a.shape)}
    sets = {"a": {"scene": {"structure_seed": 1}, "seeds": (1, 2)},
            "b": {"scene": {"structure_seed": 2}, "seeds": (2, 3)},
            "c": {"scene": {"structure_seed": 3}, "seeds": (7,)}}
    monkeypatch.setattr(ds, "images_of", lambda profile, name, seed, datasets=None: images[name])
    got = ds.independence("smoke", sets, n_images=40)

    def median_corr(x, y):
        return float(np.median([np.corrcoef(x[i].ravel(), y[i].ravel())[0, 1] for i in range(len(x))]))

    assert got["a | b"]["median_pixel_correlation"] == pytest.approx(median_corr(images["a"], images["b"]), abs=1e-4)
    assert got["a | c"]["median_pixel_correlation"] == pytest.approx(median_corr(images["a"], images["c"]), abs=1e-4)
    assert got["a | b"]["seeds"] == [2] and not got["a | b"]["independent"]
    assert got["a | c"]["independent"] and got["b | c"]["independent"]
    assert median_corr(images["a"], images["b"]) > ds.MAX_PIXEL_CORRELATION  # the copy would fail on its own too


def test_gaps_are_the_oracles_mean_less_ans(monkeypatch):
    """Bugs caught: the gap taken on validation, the mean over the wrong runs, the threshold off by
    the sign."""
    def run(test, val, converged=True):
        return SimpleNamespace(best={"test_mAP": test, "val_mAP": val}, converged=converged)

    runs = {("x", LABEL.oracle): [run(90.0, 80.0), run(88.0, 70.0)], ("x", LABEL.an): [run(77.0, 79.0), run(79.0, 60.0)],
            ("y", LABEL.oracle): [run(85.0, 85.0)], ("y", LABEL.an): [run(76.0, 76.0, converged=False)]}
    monkeypatch.setattr("mlpl_lab.analysis.tables.seed_mean",
                        lambda rs, key: sum(r.best[key] for r in rs) / len(rs))
    got = ds.gaps(runs)
    assert got["x"]["gap test"] == pytest.approx(89.0 - 78.0) and got["x"]["gap met"]
    assert got["y"]["gap test"] == pytest.approx(9.0) and not got["y"]["gap met"]
    assert (got["y"]["converged"], got["y"]["runs"]) == (1, 2)
