"""The data path's memory: a design holds specs, not images; the in-memory scene sets are bounded
in bytes and shared by every regime of a seed (issue 21)."""
from __future__ import annotations

import pytest
import torch

from mlpl_lab.runs import splits_cache
from mlpl_lab.chapters import benchmark as chapter
from mlpl_lab.protocol.asked import nothing_stored
from mlpl_lab.data import make_splits
from mlpl_lab.profiles import get_profile


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path))
    splits_cache.clear_caches()
    yield
    splits_cache.clear_caches()


def test_building_the_gpu_grid_builds_no_training_images(fresh, monkeypatch):
    """Bug caught: EPR's and ROLE's expected positives built the whole splits (train, val, test
    images) of every regime and seed while the design was made — over 24 GB for the gpu grid.
    Building the specs must not build a scene set; k must still be the mean number of positives
    per image of the clean validation labels (oracle: a naive count over make_splits' val set)."""
    P = get_profile("gpu", n_train=40, n_val=30, n_test=20, image_size=16, seeds=[0, 1], scene={})  # 16 px: the default scenes

    def refuse(*a, **k):
        raise AssertionError("the design built whole scene sets")

    monkeypatch.setattr(splits_cache, "make_scene_sets", refuse)
    specs = chapter.specs(chapter.design(P, tuning=False), nothing_stored).flat()  # untuned: k per seed
    epr = [s for s in specs if s.method == "epr"]
    assert epr, "the gpu grid has EPR cells"
    for s in epr:
        val = make_splits(seed=s.seed, **P.data_kwargs()).val.labels.tolist()
        naive = sum(sum(row) for row in val) / len(val)
        assert s.method_params["expected_num_pos"] == pytest.approx(round(naive, 4), abs=1e-9)


def test_every_regime_of_a_seed_shares_one_copy_of_its_scenes(fresh):
    """Bug caught: each (regime, seed) loading its own copy of the same images (the grid held
    regimes x seeds copies). The shared copy must give the same splits as building them alone."""
    P = get_profile("smoke", n_train=40, n_val=20, n_test=20, image_size=16)
    a = splits_cache.build_splits(P.spec("an", regime="single_positive", seed=1))
    b = splits_cache.build_splits(P.spec("an", regime="known_proportion", regime_params={"p": 0.5}, seed=1))
    assert a.train.scenes is b.train.scenes and a.val.scenes is b.val.scenes
    for regime, params, got in (("single_positive", {}, a), ("known_proportion", {"p": 0.5}, b)):
        alone = make_splits(seed=1, regime=regime, regime_params=params, **P.data_kwargs())
        assert torch.equal(got.train.observed, alone.train.observed), regime
        assert torch.equal(got.train.scenes.images, alone.train.scenes.images)
    assert len(splits_cache._SCENE_SETS.keys()) == 1


def test_the_scene_set_cache_is_bounded_in_bytes(fresh, monkeypatch):
    """Bug caught: a cache bounded by a count (24 splits) whatever their size. Oracle: the sizes
    of the sets' tensors added by hand; the newest set stays even when it alone is over budget."""
    P = get_profile("smoke", n_train=40, n_val=20, n_test=20, image_size=16)
    one = splits_cache.build_splits(P.spec("an", seed=0))
    sets = (one.train.scenes, one.val.scenes, one.test.scenes)
    by_hand = 0
    for sc in sets:
        n, c = sc.labels.shape
        h = w = 16
        by_hand += n * 3 * h * w * 4 + n * c * 8 + n * h * w * 1 + n * c * 4 * 8 + n * 8 + n * 8
    assert splits_cache._SCENE_SETS.total_bytes() == by_hand
    monkeypatch.setenv(splits_cache.SCENE_CACHE_ENV, str(2.5 * by_hand / 2 ** 30))  # room for two seeds
    # room is made before a set is built: what the cache holds then, plus the new set's images
    # and segmentation (n x 16 x 16 x (3 float32 + 1 int8) by hand), fits the budget
    held_at_build = []
    real = splits_cache.make_scene_sets

    def watched(*a, **k):
        held_at_build.append(splits_cache._SCENE_SETS.total_bytes())
        return real(*a, **k)

    monkeypatch.setattr(splits_cache, "make_scene_sets", watched)
    for seed in (1, 2, 3):
        splits_cache.build_splits(P.spec("an", seed=seed))
    new_images = (40 + 20 + 20) * 16 * 16 * (3 * 4 + 1)
    assert held_at_build and all(h + new_images <= 2.5 * by_hand for h in held_at_build), held_at_build
    keys = splits_cache._SCENE_SETS.keys()
    assert len(keys) == 2 and '"seed": 3' not in keys[0] and keys[-1].endswith("3]")
    assert splits_cache._SCENE_SETS.total_bytes() <= 2.5 * by_hand
    monkeypatch.setenv(splits_cache.SCENE_CACHE_ENV, "0")  # nothing fits: the newest is kept alone
    splits_cache.build_splits(P.spec("an", seed=4))
    assert len(splits_cache._SCENE_SETS.keys()) == 1 and splits_cache._SCENE_SETS.keys()[0].endswith("4]")
    monkeypatch.setenv(splits_cache.SCENE_CACHE_ENV, "lots")
    with pytest.raises(ValueError, match="GiB"):
        splits_cache.build_splits(P.spec("an", seed=5))
