"""Real datasets through the same path as the scenes (issue 14): tiny fixture trees in the
three on-disk formats train one epoch end to end through the run store, and the benchmark
chapter runs on one."""
from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from mlpl_lab.protocol.asked import ensure_asked
from mlpl_lab.protocol.common import PAPER_STANDARD, with_dataset
from mlpl_lab.profiles import get_profile
from mlpl_lab.runs.splits_cache import build_splits
from mlpl_lab.runs.ensure import ensure
from mlpl_lab.data.real import COCO_CLASSES, VOC_CLASSES


def _image(path, i):
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(i)
    Image.fromarray(rng.integers(0, 255, (20, 24, 3), dtype=np.uint8)).save(path, format="JPEG")


def _labels(n, c, seed):
    rng = np.random.default_rng(seed)
    y = (rng.random((n, c)) < 0.15).astype(float)
    y[np.arange(n), rng.integers(0, c, n)] = 1.0
    return y


@pytest.fixture()
def cole_voc(tmp_path):
    root = tmp_path / "pascal"
    root.mkdir()
    for phase, n in (("train", 20), ("val", 6)):
        names = np.array([f"{phase}_{i:03d}.jpg" for i in range(n)])
        np.save(root / f"formatted_{phase}_images.npy", names)
        np.save(root / f"formatted_{phase}_labels.npy", _labels(n, 20, n))
        for i, name in enumerate(names):
            _image(root / "VOCdevkit" / "VOC2012" / "JPEGImages" / name, i)
    return root


@pytest.fixture()
def raw_voc(tmp_path):
    base = tmp_path / "voc" / "VOCdevkit" / "VOC2012"
    for image_set, n in (("train", 20), ("val", 6)):
        ids = [f"2012_{image_set}_{i:03d}" for i in range(n)]
        (base / "ImageSets" / "Main").mkdir(parents=True, exist_ok=True)
        (base / "ImageSets" / "Main" / f"{image_set}.txt").write_text("\n".join(ids) + "\n")
        for i, iid in enumerate(ids):
            objs = "".join(f"<object><name>{VOC_CLASSES[(i + k) % 20]}</name><difficult>0</difficult></object>"
                           for k in range(1 + i % 3))
            (base / "Annotations").mkdir(parents=True, exist_ok=True)
            (base / "Annotations" / f"{iid}.xml").write_text(f"<annotation>{objs}</annotation>")
            _image(base / "JPEGImages" / f"{iid}.jpg", i)
    return tmp_path / "voc"


@pytest.fixture()
def coco_json(tmp_path):
    root = tmp_path / "coco"
    cats = [{"id": i + 1, "name": n} for i, n in enumerate(COCO_CLASSES)]
    for split, n in (("train2014", 20), ("val2014", 6)):
        images = [{"id": 100 + i, "file_name": f"COCO_{split}_{i:012d}.jpg"} for i in range(n)]
        anns = [{"id": 1000 + 10 * i + k, "image_id": 100 + i, "category_id": 1 + (i * 7 + k) % 80}
                for i in range(n) for k in range(1 + i % 2)]
        (root / "annotations").mkdir(parents=True, exist_ok=True)
        (root / "annotations" / f"instances_{split}.json").write_text(
            json.dumps({"images": images, "annotations": anns, "categories": cats}))
        for i, im in enumerate(images):
            _image(root / split / im["file_name"], i)
    return root


@pytest.fixture()
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path / "store"))
    monkeypatch.setenv("MLPL_LAB_PROGRESS", "0")


@pytest.mark.parametrize("dataset,layout,fixture,classes", [
    ("voc2012", "cole", "cole_voc", 20), ("voc2012", "voc_raw", "raw_voc", 20),
    ("coco2014", "coco_json", "coco_json", 80)])
def test_fixture_trains_one_epoch_end_to_end(dataset, layout, fixture, classes, request, store):
    root = request.getfixturevalue(fixture)
    P = with_dataset(get_profile("smoke", epochs=1), dataset, str(root), layout)
    spec = P.spec("an", regime="single_positive", seed=3)
    assert spec.data == {"dataset": dataset, "root": str(root), "layout": layout, "image_size": 32}
    splits = build_splits(spec)
    assert splits.train.observed.shape == (16, classes)           # Cole's 80/20 split of 20
    assert len(splits.val) == 4 and len(splits.test) == 6
    assert ((splits.train.observed == 1).sum(1) == 1).all()       # single positive, drawn by seed 3
    assert (splits.val.observed >= 0).all()                       # clean validation
    run = ensure([spec])[0]
    assert len(run.history) == 1 and 0 <= run.best["test_mAP"] <= 100
    assert ensure([spec])[0].path == run.path                     # stored once, read back


def test_seed_draws_the_labels_not_the_split(cole_voc):
    P = with_dataset(get_profile("smoke"), "voc2012", str(cole_voc))
    a, b = (build_splits(P.spec("an", seed=s)) for s in (0, 1))
    assert a.train.images.image_paths == b.train.images.image_paths
    assert not (a.train.observed == b.train.observed).all()


def test_gpu_profile_gets_the_paper_standard(tmp_path):
    P = with_dataset("gpu", "coco2014", str(tmp_path), "cole")
    assert (P.image_size, P.model, P.model_kwargs) == (448, "resnet50", {"weights": "IMAGENET1K_V1"})
    assert P.data_kwargs()["image_size"] == 448 == PAPER_STANDARD["image_size"]
    assert with_dataset("cpu", "scenes") is not None and with_dataset("cpu").dataset == "scenes"


def test_bad_dataset_arguments_are_named(tmp_path):
    with pytest.raises(ValueError, match="needs data_root"):
        with_dataset("smoke", "voc2012", None)
    with pytest.raises(ValueError, match="unknown dataset 'imagenet'"):
        with_dataset("smoke", "imagenet", str(tmp_path))
    with pytest.raises(ValueError, match="cannot hold 'cub'"):
        with_dataset("smoke", "cub", str(tmp_path), "voc_raw")
    P = with_dataset(get_profile("smoke"), "voc2012", str(tmp_path / "absent"))
    with pytest.raises(FileNotFoundError, match="formatted_train_images.npy"):
        build_splits(P.spec("an"))


def test_benchmark_chapter_runs_on_a_real_format_dataset(cole_voc, store):
    from mlpl_lab.chapters import benchmark as chapter

    P = with_dataset(get_profile("smoke", epochs=1, seeds=[0]), "voc2012", str(cole_voc))
    d = chapter.design(P, ["AN", "GR"], ["single"])
    results = chapter.results(d, ensure_asked(chapter.specs, d)).results
    tabs = chapter.tables(results)
    assert set(tabs["mAP_mean"].index) == {"full labels", "AN", "GR"}
    assert list(tabs["mAP_mean"].columns) == ["single positive"]
    assert all(r.spec.data["dataset"] == "voc2012" for rows in results.values() for runs in rows.values()
               for r in runs)
