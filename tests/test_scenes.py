"""Tests of the embedded scene data: generator, cache, datasets, splits, plots."""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from mlpl_lab.core import labels as L

from mlpl_lab.core import regimes as R
from mlpl_lab.data import SHAPES, SceneDataset, Scenes, make_scenes, make_splits, masks_from_segmentation
from mlpl_lab.data import glyphs as G
from mlpl_lab.data import splits as splits_mod


@pytest.fixture(scope="module")
def s1000() -> Scenes:
    return make_scenes(1000, seed=11)


def _boxes_from_masks(masks: torch.Tensor) -> torch.Tensor:
    n, c, h, w = masks.shape
    rows, cols = masks.any(3), masks.any(2)
    out = torch.full((n, c, 4), -1, dtype=torch.int64)
    for i in range(n):
        for k in range(c):
            ys, xs = torch.nonzero(rows[i, k]).flatten(), torch.nonzero(cols[i, k]).flatten()
            if len(ys):
                out[i, k] = torch.tensor([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1])
    return out


# ------------------------------------------------------------------------- generator
def test_determinism_and_seed_sensitivity():
    a, b = make_scenes(40, seed=3), make_scenes(40, seed=3)
    for f in ("images", "labels", "segmentation", "boxes", "contexts", "num_objects"):
        assert torch.equal(getattr(a, f), getattr(b, f)), f
    c = make_scenes(40, seed=4)
    assert not torch.equal(a.images, c.images)
    assert not torch.equal(a.labels, c.labels)


def test_output_independent_of_chunking(monkeypatch):
    from mlpl_lab.data import scenes as scenes_mod

    a = make_scenes(70, seed=8)
    monkeypatch.setattr(scenes_mod, "_CHUNK_PIXELS", 1)  # 16 images per chunk
    b = make_scenes(70, seed=8)
    for f in ("images", "labels", "segmentation", "boxes"):
        assert torch.equal(getattr(a, f), getattr(b, f)), f


def test_global_rng_untouched():
    np.random.seed(123)
    torch.manual_seed(123)
    state, tstate = np.random.get_state()[1].copy(), torch.get_rng_state().clone()
    make_scenes(10, seed=0)
    assert np.array_equal(np.random.get_state()[1], state)
    assert torch.equal(torch.get_rng_state(), tstate)


@pytest.mark.parametrize("size", [32, 48])
def test_shapes_dtypes_ranges(size):
    s = make_scenes(30, seed=1, image_size=size)
    n, C = 30, 20
    assert len(s) == n and s.num_classes == C and s.image_size == size
    assert s.images.shape == (n, 3, size, size) and s.images.dtype == torch.float32
    assert 0.0 <= s.images.min() and s.images.max() <= 1.0
    assert s.labels.shape == (n, C) and s.labels.dtype == torch.int64
    assert set(s.labels.unique().tolist()) <= {0, 1}
    assert s.masks.shape == (n, C, size, size) and s.masks.dtype == torch.bool
    assert s.boxes.shape == (n, C, 4) and s.boxes.dtype == torch.int64
    assert s.contexts.shape == (n,) and s.contexts.dtype == torch.int64
    assert int(s.contexts.min()) >= 0 and int(s.contexts.max()) < 5
    assert s.class_names[0] == "red circle" and len(set(s.class_names)) == C
    assert s.params["image_size"] == size and s.params["n"] == n
    # images live on the 8-bit grid (so the uint8 cache is lossless)
    assert torch.equal((s.images * 255).round() / 255, s.images)


def test_labels_masks_boxes_agree(s1000):
    s = s1000.subset(range(200))
    masks = s.masks
    assert torch.equal(s.labels.bool(), masks.flatten(2).any(-1))
    assert torch.equal(s.boxes, _boxes_from_masks(masks))
    # a pixel belongs to at most one class (the top object)
    assert int(masks.sum(1).max()) <= 1
    assert torch.equal(s.mask(5), masks[5])


def test_objects_and_labels_per_image(s1000):
    assert int(s1000.num_objects.min()) >= 1 and int(s1000.num_objects.max()) <= 4
    per_image = s1000.labels.sum(1)
    assert int(per_image.min()) >= 1 and int(per_image.max()) <= 4
    assert torch.all(per_image <= s1000.num_objects)
    assert 1.5 < per_image.float().mean() < 3.0
    one = make_scenes(50, seed=2, min_objects=1, max_objects=1)
    assert torch.equal(one.labels.sum(1), torch.ones(50, dtype=torch.int64))


def test_minimum_visible_fraction(s1000):
    """Each labelled class keeps >= min_visible of some object's area visible."""
    p = s1000.params
    smin = int(round(p["size_range"][0] * p["image_size"]))
    smallest = min(int((G.shape_template(sh, smin) >= 0.5).sum()) for sh in SHAPES)
    area = s1000.masks.flatten(2).sum(-1)
    assert int(area[s1000.labels.bool()].min()) >= np.ceil(p["min_visible"] * smallest)


def test_no_occlusion_means_no_overlap():
    s = make_scenes(200, seed=5, occlusion=False, max_objects=3)
    smin = int(round(s.params["size_range"][0] * 32))
    smallest = min(int((G.shape_template(sh, smin) >= 0.5).sum()) for sh in SHAPES)
    area = s.masks.flatten(2).sum(-1)
    assert int(area[s.labels.bool()].min()) >= smallest  # objects drawn whole


def test_every_class_present_and_balanced(s1000):
    counts = s1000.labels.sum(0)
    assert int(counts.min()) > 0
    assert counts.max() / counts.min() < 4


def test_cooccurrence_structure(s1000):
    y = s1000.labels.double()
    p = y.mean(0)
    joint = (y.T @ y) / len(y)
    lift = joint / torch.outer(p, p)
    lift.fill_diagonal_(0)
    assert float(lift.max()) > 2.0  # context-mates co-occur far more than chance
    flat = make_scenes(1000, seed=11, context_strength=0.0)
    yf = flat.labels.double()
    pf = yf.mean(0)
    lf = (yf.T @ yf) / len(yf) / torch.outer(pf, pf)
    lf.fill_diagonal_(0)
    assert float(lf.max()) < float(lift.max())
    # context structure is shared across seeds (structure_seed), not re-drawn per seed
    assert torch.equal(s1000.context_prior, make_scenes(5, seed=99).context_prior)


def test_shapes_scale_with_image_size():
    a, b = make_scenes(200, seed=0, image_size=32), make_scenes(200, seed=0, image_size=64)
    fa = a.masks.float().mean().item() * a.num_classes
    fb = b.masks.float().mean().item() * b.num_classes
    assert abs(fa - fb) / fa < 0.25


def test_digits_source():
    s = make_scenes(300, seed=0, glyphs="digits")
    assert s.num_classes == 10 and s.class_names == [f"digit {d}" for d in range(10)]
    assert int(s.labels.sum(0).min()) > 0
    assert torch.equal(s.labels.bool(), s.masks.flatten(2).any(-1))
    pools = {p: set(G.digit_pool_indices(p).tolist()) for p in ("train", "val", "test")}
    assert not (pools["train"] & pools["val"]) and not (pools["train"] & pools["test"])
    assert not (pools["val"] & pools["test"])
    assert len(pools["train"] | pools["val"] | pools["test"]) == 1797
    t = make_scenes(20, seed=0, glyphs="digits", digit_pool="test")
    assert not torch.equal(t.images, s.images[:20])


def test_subset(s1000):
    keep = torch.zeros(1000, dtype=torch.bool)
    keep[[3, 7, 9]] = True
    assert torch.equal(s1000.subset(keep).images, s1000.subset(torch.tensor([3, 7, 9])).images)
    sub = s1000.subset([3, 7, 9])
    assert len(sub) == 3 and torch.equal(sub.images[1], s1000.images[7])
    assert torch.equal(sub.masks[2], s1000.masks[9])


# --------------------------------------------------------------------------- cache
def test_cache_round_trip(tmp_path):
    a = make_scenes(60, seed=7, cache_dir=tmp_path)
    assert not a.from_cache and a.cache_path is not None
    files = list(tmp_path.glob("*.pt"))
    assert len(files) == 1
    b = make_scenes(60, seed=7, cache_dir=tmp_path)
    assert b.from_cache
    for f in ("images", "labels", "segmentation", "boxes", "contexts", "num_objects", "context_prior"):
        assert torch.equal(getattr(a, f), getattr(b, f)), f
    assert b.class_names == a.class_names and b.params == a.params
    c = make_scenes(60, seed=7, noise=0.02, cache_dir=tmp_path)
    assert not c.from_cache and len(list(tmp_path.glob("*.pt"))) == 2
    files[0].write_bytes(b"corrupt")  # a damaged cache file is regenerated, not fatal
    with pytest.warns(RuntimeWarning, match="unreadable"):
        d = make_scenes(60, seed=7, cache_dir=tmp_path)
    assert not d.from_cache and torch.equal(d.images, a.images)


def _rewrite_cache(path, **changes):
    blob = torch.load(path, weights_only=True)
    blob.update(changes)
    torch.save(blob, path)


def test_a_cache_that_does_not_match_is_regenerated(tmp_path):
    a = make_scenes(40, seed=3, cache_dir=tmp_path)
    path = next(tmp_path.glob("*.pt"))
    blob = torch.load(path, weights_only=True)
    # fewer images than the parameters say
    _rewrite_cache(path, images_u8=blob["images_u8"][:30], labels=blob["labels"][:30])
    with pytest.warns(RuntimeWarning, match="does not match"):
        b = make_scenes(40, seed=3, cache_dir=tmp_path)
    assert not b.from_cache and torch.equal(b.images, a.images)
    # same shape, one pixel changed: the stored checksum catches it
    u8 = torch.load(path, weights_only=True)["images_u8"].clone()
    u8[0, 0, 0, 0] ^= 1
    _rewrite_cache(path, images_u8=u8)
    with pytest.warns(RuntimeWarning, match="checksum"):
        c = make_scenes(40, seed=3, cache_dir=tmp_path)
    assert not c.from_cache and torch.equal(c.images, a.images)
    assert make_scenes(40, seed=3, cache_dir=tmp_path).from_cache  # rewritten, good again


def test_an_unwritable_cache_warns_and_keeps_the_data(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache folder should be")
    with pytest.warns(RuntimeWarning, match="could not write the scene cache"):
        s = make_scenes(20, seed=1, cache_dir=blocker / "cache")
    assert s.images.shape[0] == 20 and not s.from_cache


@pytest.mark.parametrize("seed, err", [(None, ValueError), (1.5, TypeError), (-1, ValueError),
                                       (2**32, ValueError), (True, TypeError)])
def test_bad_seeds_are_refused_everywhere(seed, err):
    from mlpl_lab.core import regimes as R
    from mlpl_lab.data import make_splits

    Y = torch.tensor([[1, 0, 1], [0, 1, 0]])
    for regime in (R.full, R.single_positive):
        with pytest.raises(err, match="seed"):
            regime(Y, seed=seed)
    for regime, kw in ((R.drop_positives, {"alpha": 0.5}), (R.known_proportion, {"p": 0.5}),
                       (R.positives_only, {"p": 0.5})):
        with pytest.raises(err, match="seed"):
            regime(Y, seed=seed, **kw)
    with pytest.raises((TypeError, ValueError), match="seed"):
        make_scenes(4, seed=seed)
    with pytest.raises((TypeError, ValueError), match="seed"):
        make_splits(8, 4, 4, seed=seed)


# ----------------------------------------------------------------------------- args
@pytest.mark.parametrize("kwargs, match", [
    (dict(n=0), "n must be"),
    (dict(n=5, image_size=8), "image_size"),
    (dict(n=5, min_objects=0), "min_objects"),
    (dict(n=5, min_objects=3, max_objects=2), "min_objects <= max_objects"),
    (dict(n=5, glyphs="klingon"), "shapes"),
    (dict(n=5, context_strength=1.5), "context_strength"),
    (dict(n=5, num_contexts=0), "num_contexts"),
    (dict(n=5, glyphs="digits", digit_pool="dev"), "digit_pool"),
    (dict(n=5, min_visible=0.0), "min_visible"),
])
def test_bad_args(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_scenes(**kwargs)


# ------------------------------------------------- impossible scene parameters (issue 36)
@pytest.mark.parametrize("kwargs, name, value", [
    (dict(size_range=[0.5, 0.3]), "size_range", r"\[0\.5, 0\.3\]"),  # inverted
    (dict(size_range=[0.0, 0.3]), r"size_range\[0\]", "0.0"),
    (dict(size_range=[0.3, 1.2]), r"size_range\[1\]", "1.2"),
    (dict(size_range=(0.3,)), "size_range", r"\(0\.3,\)"),
    (dict(min_visible=1.5), "min_visible", "1.5"),
    (dict(min_visible=-0.2), "min_visible", "-0.2"),
    (dict(noise=-0.01), "noise", "-0.01"),
    (dict(noise=float("nan")), "noise", "nan"),
    (dict(colour_jitter=-0.1), "colour_jitter", "-0.1"),
    (dict(colour_jitter=1.2), "colour_jitter", "1.2"),
    (dict(background_gradient=0.9), "background_gradient", "0.9"),
    (dict(context_strength="high"), "context_strength", "'high'"),
    (dict(occlusion="yes"), "occlusion", "'yes'"),
    (dict(size_range=[0.1, 0.3]), "size_range", r"\[0\.1, 0\.3\]"),  # 3 px objects at 32 px
    (dict(image_size=20, size_range=[0.2, 0.4]), "image_size", "20"),  # 4 px objects
])
def test_impossible_scene_values_name_parameter_value_and_fix(kwargs, name, value):
    with pytest.raises(ValueError) as err:
        make_scenes(5, **kwargs)
    msg = str(err.value)
    assert re.search(name, msg) and re.search(value, msg), msg
    assert "; " in msg and "\n" not in msg, msg  # one line: the problem, then the fix


def test_size_range_inverted_suggests_the_swapped_pair():
    with pytest.raises(ValueError, match=r"inverted.*size_range=\[0\.4, 0\.6\]"):
        make_scenes(5, size_range=[0.6, 0.4])


def _fit_by_hand(image_size, side, share):
    """Objects that can all keep ``share`` of their mask visible: visible pixels of two objects
    never coincide, so each needs ceil(share * area) of the image's pixels, area that of the
    smallest shape at ``side`` px (shapes rasterised by the glyph module, counted here)."""
    areas = [int((G.shape_template(s, side) >= 0.5).sum()) for s in SHAPES]
    return image_size * image_size // int(np.ceil(share * min(areas) - 1e-9))


@pytest.mark.parametrize("image_size, size_range, min_visible, occlusion", [
    (16, [0.5, 0.5], 0.3, False),   # 8 px objects drawn whole in a 16 px image
    (16, [0.75, 1.0], 0.9, True),   # 12-16 px objects keeping 90 % visible
    (32, [0.8, 1.0], 1.0, True),
])
def test_more_objects_than_fit_are_refused(image_size, size_range, min_visible, occlusion):
    side = int(round(size_range[0] * image_size))
    fit = _fit_by_hand(image_size, side, min_visible if occlusion else 1.0)
    assert 1 <= fit < 16
    kw = dict(image_size=image_size, size_range=size_range, min_visible=min_visible, occlusion=occlusion)
    with pytest.raises(ValueError, match=rf"max_objects={fit + 1} .*lower max_objects to {fit}\b"):
        make_scenes(5, max_objects=fit + 1, **kw)
    s = make_scenes(40, seed=1, max_objects=fit, **kw)  # the bound itself is accepted
    assert int(s.num_objects.max()) <= fit


def test_run_spec_data_is_checked_before_any_scene_or_training(monkeypatch):
    """A bad scene parameter in any spec of a list stops ensure() before the first run's
    scenes are generated or it trains (the good spec comes first)."""
    from mlpl_lab.runs import ensure, ensure as run_ensure, splits_cache, validation
    from mlpl_lab.profiles import get_profile

    def boom(*a, **k):
        raise AssertionError("scenes generated or training started before the specs were checked")
    monkeypatch.setattr(run_ensure, "fit", boom)
    monkeypatch.setattr(splits_cache, "make_scene_sets", boom)
    monkeypatch.setattr(splits_cache, "val_scene_labels", boom)
    P = get_profile("smoke", seeds=[0])
    good = P.spec("an", seed=0)
    for scene, match in [({"size_range": [0.5, 0.3]}, "size_range.*inverted"),
                         ({"min_visible": 1.5}, "min_visible=1.5"),
                         ({"max_objects": 16, "size_range": [0.8, 1.0], "min_visible": 1.0},
                          "max_objects=16 objects cannot all be drawn"),
                         ({"nosie": 0.1}, r"unknown scene parameter.*nosie"),
                         ({"n_val": 0}, "n_val")]:
        bad = P.spec("full", seed=0, scene=scene)
        with pytest.raises(ValueError, match=match):
            ensure.ensure([good, bad])
        with pytest.raises(ValueError, match=match):
            validation.validate(bad)


# ------------------------------------------------------------------ dataset / splits
def test_scene_dataset_item_and_batch(s1000):
    obs = R.single_positive(s1000.labels, seed=0)
    ds = SceneDataset(s1000, obs, return_masks=True)
    assert len(ds) == 1000 and ds.num_classes == 20 and ds.class_names == s1000.class_names
    idx = [4, 0, 17]
    batch = ds.get_batch(idx)
    assert batch["image"].shape == (3, 3, 32, 32) and batch["index"].dtype == torch.int64
    for k, i in enumerate(idx):
        item = ds[i]
        assert item["index"] == i == int(batch["index"][k])
        for key in ("image", "labels", "observed", "mask"):
            assert torch.equal(item[key], batch[key][k]), key
    assert item["observed"].dtype == torch.int64 and item["labels"].dtype == torch.int64
    assert torch.equal(batch["mask"], masks_from_segmentation(s1000.segmentation[idx], 20))
    plain = SceneDataset(s1000)
    assert "mask" not in plain[0] and torch.equal(plain.observed, s1000.labels)
    with pytest.raises(ValueError):
        SceneDataset(s1000, torch.full((1000, 20), 2))
    with pytest.raises(ValueError):
        SceneDataset(s1000, obs[:10])


def test_make_splits():
    sp = make_splits(n_train=120, n_val=40, n_test=30, seed=2)
    assert (len(sp.train), len(sp.val), len(sp.test)) == (120, 40, 30)
    assert sp.regime == "single_positive" and sp.class_names == sp.train.class_names
    assert torch.equal(sp.train.images, make_scenes(120, seed=6).images)  # 3*seed + 0
    seeds = {sp.train.scenes.params["seed"], sp.val.scenes.params["seed"], sp.test.scenes.params["seed"]}
    assert len(seeds) == 3
    assert not torch.equal(sp.val.images[:30], sp.test.images)
    # the val set's observed labels: the run's regime on the val labels with its seed (Cole's observed
    # validation); the test set fully observed
    assert torch.equal(sp.val.observed, R.single_positive(sp.val.labels, seed=2))
    assert torch.equal(sp.test.observed, sp.test.labels)
    assert torch.equal((sp.train.observed == L.POS).sum(1), torch.ones(120, dtype=torch.int64))
    assert torch.equal(sp.train.observed, R.single_positive(sp.train.labels, seed=2))
    sp2 = make_splits(n_train=120, n_val=40, n_test=30, seed=2, regime="drop_positives",
                      regime_params={"alpha": 0.5}, regime_seed=9)
    assert torch.equal(sp2.train.observed, R.drop_positives(sp2.train.labels, alpha=0.5, seed=9))
    assert torch.equal(sp2.val.observed, R.drop_positives(sp2.val.labels, alpha=0.5, seed=9))
    biased = make_splits(n_train=50, n_val=10, n_test=10, regime_params={"bias": "size"})
    assert torch.equal(biased.val.observed, R.single_positive(biased.val.labels, seed=0, bias="size",
                                                              masks=biased.val.masks))
    assert torch.equal((biased.train.observed == L.POS).sum(1), torch.ones(50, dtype=torch.int64))


def test_digit_splits_use_disjoint_pools():
    sp = make_splits(n_train=20, n_val=10, n_test=10, glyphs="digits", regime="full")
    assert [d.scenes.params["digit_pool"] for d in (sp.train, sp.val, sp.test)] == ["train", "val", "test"]
    assert torch.equal(sp.train.observed, sp.train.labels)


@pytest.mark.parametrize("regime, params", [
    ("bogus", {}), ("drop_positives", {"alpha": 1.5}), ("known_proportion", {}),
])
def test_regime_errors_raise_before_generation(monkeypatch, regime, params):
    def boom(*a, **k):
        raise AssertionError("scenes generated before the regime was checked")
    monkeypatch.setattr(splits_mod, "make_scenes", boom)
    with pytest.raises(ValueError):
        make_splits(n_train=10, n_val=5, n_test=5, regime=regime, regime_params=params)


def test_split_args_validated_before_generation(monkeypatch):
    monkeypatch.setattr(splits_mod, "make_scenes", lambda *a, **k: pytest.fail("generated"))
    with pytest.raises(ValueError, match="n_test"):
        make_splits(n_train=10, n_val=5, n_test=0)


# ---------------------------------------------------------------------------- plots
def test_plots_smoke():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    from mlpl_lab.viz.scenes_plots import show_masks, show_scenes

    sp = make_splits(n_train=16, n_val=4, n_test=4)
    fig = show_scenes(sp.train, range(6), ncols=3)
    assert isinstance(fig, Figure)
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert any(t.startswith("✓ ") for t in texts) and any(t.startswith("? ") for t in texts)
    fig2 = show_scenes(sp.val.scenes, [0, 1], observed=False)
    assert not any(t.get_text()[:2] in ("✓ ", "? ") for ax in fig2.axes for t in ax.texts)
    fig3 = show_masks(sp.train.scenes, 0)
    assert len(fig3.axes) == 1 + int(sp.train.labels[0].sum())
    with pytest.raises(ValueError):
        show_scenes(sp.train, [0], observed=torch.zeros(3, 20))
    plt.close("all")
