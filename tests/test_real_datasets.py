"""Tests of mlpl_lab.data.real on tiny fixture trees in the real on-disk formats."""

import json
import os

import numpy as np
import pytest
import torch
from PIL import Image

from mlpl_lab.core import labels as L

from mlpl_lab.core import regimes
from mlpl_lab.data import real as R


def write_image(path, color=(200, 30, 30), size=(12, 10), fmt=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, color).save(path, format=fmt)


# --------------------------------------------------------------------------- Cole layout
@pytest.fixture
def cole_pascal(tmp_path):
    root = tmp_path / "pascal"
    root.mkdir()
    rng = np.random.default_rng(0)
    files = {}
    for phase, n in (("train", 23), ("val", 7)):
        names = np.array([f"{phase}_{i:04d}.jpg" for i in range(n)])
        y = (rng.random((n, 20)) < 0.15).astype(float)
        y[np.arange(n), rng.integers(0, 20, n)] = 1.0  # every image has a positive (Cole)
        np.save(root / f"formatted_{phase}_images.npy", names)
        np.save(root / f"formatted_{phase}_labels.npy", y)
        files[phase] = (names, y)
    img_dir = root / "VOCdevkit" / "VOC2012" / "JPEGImages"
    for phase in files:
        for name in files[phase][0]:
            write_image(img_dir / name, fmt="JPEG")
    return root, files


def cole_generate_split(num_ex, frac, rng):
    """Cole's datasets.generate_split, restated for the comparison."""
    n_2 = int(np.round(frac * num_ex))
    n_1 = num_ex - n_2
    idx_rand = rng.permutation(num_ex)
    return np.sort(idx_rand[:n_1]), np.sort(idx_rand[-n_2:])


def test_cole_split_matches_cole_and_voc_sizes():
    tr, va = R.cole_split(5717)
    assert (len(tr), len(va)) == (4574, 1143)  # VOC2012 sizes in Cole / OPML Table I
    ctr, cva = cole_generate_split(5717, 0.2, np.random.RandomState(1200))
    assert np.array_equal(tr, ctr) and np.array_equal(va, cva)
    assert len(np.intersect1d(tr, va)) == 0
    tr2, va2 = R.cole_split(82081)  # COCO train2014 with annotations
    assert (len(tr2), len(va2)) == (65665, 16416)


def test_load_cole_formatted_splits(cole_pascal):
    root, files = cole_pascal
    train = R.load_cole_formatted(root, "pascal", "train", image_size=16)
    val = R.load_cole_formatted(root, "voc2012", "val", image_size=16)
    test = R.load_cole_formatted(root, "pascal", "test", image_size=16)
    assert (len(train), len(val), len(test)) == (18, 5, 7)  # round(0.2 * 23) = 5
    assert train.class_names == list(R.VOC_CLASSES) and len(train.class_names) == 20
    assert train.labels.dtype == torch.int64 and train.labels.shape == (18, 20)
    # disjoint, sorted, covering the official train split
    idx = np.concatenate([train.source_indices, val.source_indices])
    assert sorted(idx.tolist()) == list(range(23))
    assert np.all(np.diff(train.source_indices) > 0)
    expected_tr, _ = cole_generate_split(23, 0.2, np.random.RandomState(1200))
    assert np.array_equal(train.source_indices, expected_tr)
    names, y = files["train"]
    assert np.array_equal(train.labels.numpy(), y[expected_tr].astype(int))
    assert os.path.basename(train.image_paths[0]) == names[expected_tr[0]]
    # deterministic
    again = R.load_cole_formatted(root, "pascal", "train", image_size=16)
    assert again.image_paths == train.image_paths
    # test = official val files, in file order
    assert np.array_equal(test.labels.numpy(), files["val"][1].astype(int))
    # a different split seed gives a different split
    other = R.load_cole_formatted(root, "pascal", "train", split_seed=7, image_size=16)
    assert other.image_paths != train.image_paths


def test_cole_getitem_and_regimes(cole_pascal):
    root, _ = cole_pascal
    ds = R.load_cole_formatted(root, "pascal", "train", image_size=16)
    item = ds[3]
    assert set(item) == {"image", "labels", "index"}
    assert item["image"].shape == (3, 16, 16) and item["image"].dtype == torch.float32
    assert torch.equal(item["labels"], ds.labels[3]) and item["index"] == 3
    obs = regimes.single_positive(ds.labels, seed=1200)  # observed labels: drawn by the caller
    assert isinstance(obs, torch.Tensor) and ((obs == L.POS).sum(1) == 1).all()


def test_cole_observed_npy(cole_pascal, tmp_path):
    root, files = cole_pascal
    y = files["train"][1]
    cole_obs = np.zeros_like(y)
    first = y.argmax(1)
    cole_obs[np.arange(len(y)), first] = 1.0
    cole_obs[0, (first[0] + 1) % 20] = -1.0  # one observed negative
    path = root / "formatted_train_labels_obs.npy"
    np.save(path, cole_obs)
    obs = R.observed_from_cole_npy(path)
    assert obs.dtype == torch.int64
    assert obs[0, first[0]] == L.POS and obs[0, (first[0] + 1) % 20] == L.NEG
    assert (obs == L.UNK).sum() == y.size - len(y) - 1
    ds = R.load_cole_formatted(root, "pascal", "val", image_size=16)
    sub = R.observed_from_cole_npy(path, indices=ds.source_indices)
    assert torch.equal(sub, obs[torch.from_numpy(ds.source_indices)])
    with pytest.raises(FileNotFoundError, match="generate_observed_labels"):
        R.observed_from_cole_npy(tmp_path / "nope.npy")


def test_cole_errors(cole_pascal, tmp_path):
    root, _ = cole_pascal
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError) as e:
        R.load_cole_formatted(empty, "coco", "train")
    msg = str(e.value)
    for f in ("formatted_train_images.npy", "formatted_train_labels.npy",
              "formatted_val_images.npy", "formatted_val_labels.npy"):
        assert f in msg
    assert "format_coco.py" in msg and "elijahcole/single-positive-multi-label" in msg
    assert str(empty) in msg
    with pytest.raises(FileNotFoundError, match="does not exist|missing"):
        R.load_cole_formatted(tmp_path / "absent", "pascal")
    with pytest.raises(ValueError, match=r"\(N, 80\)"):
        R.load_cole_formatted(root, "coco", "train")  # 20-column labels for an 80-class set
    with pytest.raises(ValueError, match="unknown dataset"):
        R.load_cole_formatted(root, "imagenet")
    with pytest.raises(ValueError, match="split"):
        R.load_cole_formatted(root, "pascal", "trainval")
    bad = tmp_path / "bad"
    bad.mkdir()
    np.save(bad / "formatted_train_images.npy", np.array(["a.jpg"]))
    np.save(bad / "formatted_train_labels.npy", np.full((1, 20), -1.0))
    with pytest.raises(ValueError, match="binary"):
        R.load_cole_formatted(bad, "pascal")
    # images missing on disk: a clear error at access time
    ds = R.load_cole_formatted(root, "pascal", image_root=tmp_path / "elsewhere", image_size=8)
    with pytest.raises(FileNotFoundError, match="image_root"):
        ds[0]


def test_cole_generic_class_names(tmp_path):
    root = tmp_path / "nus"
    root.mkdir()
    np.save(root / "formatted_train_images.npy", np.array([f"{i}.jpg" for i in range(10)]))
    np.save(root / "formatted_train_labels.npy", np.eye(10, 81))
    ds = R.load_cole_formatted(root, "nuswide", "train")
    assert len(ds.class_names) == 81 and ds.class_names[0] == "concept_00"
    assert ds.image_paths[0].startswith(str(root / "Flickr"))


# --------------------------------------------------------------------------- raw VOC
def voc_xml(objects):
    objs = "".join(
        f"<object><name>{n}</name><pose>Unspecified</pose><truncated>0</truncated>"
        f"<difficult>{d}</difficult><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax>"
        f"<ymax>5</ymax></bndbox></object>" for n, d in objects)
    return f"<annotation><folder>VOC2007</folder><size><width>12</width>" \
           f"<height>10</height><depth>3</depth></size>{objs}</annotation>"


@pytest.fixture
def voc_root(tmp_path):
    base = tmp_path / "VOCdevkit" / "VOC2007"
    ann = {
        "000005": [("dog", 0), ("person", 1)],
        "000002": [("cat", 1)],                   # only a difficult object
        "000009": [("car", 0), ("car", 1), ("chair", 0)],
        "000012": [("bird", 0)],
    }
    (base / "ImageSets" / "Main").mkdir(parents=True)
    (base / "Annotations").mkdir()
    for i, objs in ann.items():
        (base / "Annotations" / f"{i}.xml").write_text(voc_xml(objs))
        write_image(base / "JPEGImages" / f"{i}.jpg", fmt="JPEG")
    (base / "ImageSets" / "Main" / "train.txt").write_text("000009\n000005\n000002\n")
    (base / "ImageSets" / "Main" / "val.txt").write_text("000012\n000404\n")
    return tmp_path


def col(name):
    return R.VOC_CLASSES.index(name)


def test_voc_difficult_handling(voc_root):
    neg = R.load_voc_raw(voc_root, "2007", "train", image_size=8)  # default: negative
    assert [os.path.basename(p) for p in neg.image_paths] == ["000005.jpg", "000009.jpg"]
    assert neg.labels[0, col("dog")] == 1 and neg.labels[0, col("person")] == 0
    assert neg.labels[1, col("car")] == 1 and neg.labels[1, col("chair")] == 1
    assert neg.labels.sum() == 3 and neg.ignore_mask is None

    pos = R.load_voc_raw(voc_root, "2007", "train", use_difficult="positive", image_size=8)
    assert len(pos) == 3  # 000002 now has a positive (cat)
    assert pos.labels[0, col("cat")] == 1
    assert pos.labels[1, col("person")] == 1

    ign = R.load_voc_raw(voc_root, "2007", "train", use_difficult="ignore", image_size=8)
    assert len(ign) == 2 and ign.labels[0, col("person")] == 0
    assert ign.ignore_mask[0, col("person")] and ign.ignore_mask.sum() == 1
    assert ign.eval_targets()[0, col("person")] == L.UNK

    keep_all = R.load_voc_raw(voc_root / "VOCdevkit", "2007", "train", drop_empty=False,
                              image_size=8)
    assert len(keep_all) == 3 and keep_all.labels[0].sum() == 0  # 000002 kept, empty
    item = keep_all[1]
    assert item["image"].shape == (3, 8, 8)


def test_voc_errors(voc_root, tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        R.load_voc_raw(voc_root, "2007", "val")  # 000404.xml is missing
    assert "000404.xml" in str(e.value) and "PASCAL VOC site" in str(e.value)
    with pytest.raises(FileNotFoundError) as e:
        R.load_voc_raw(voc_root, "2012", "train")
    msg = str(e.value)
    assert "ImageSets/Main/train.txt" in msg and "Annotations" in msg and "JPEGImages" in msg
    assert str(voc_root) in msg
    with pytest.raises(FileNotFoundError, match="test.txt"):
        R.load_voc_raw(voc_root, "2007", "test")
    with pytest.raises(ValueError, match="use_difficult"):
        R.load_voc_raw(voc_root, "2007", use_difficult="maybe")
    bad = voc_root / "VOCdevkit" / "VOC2007" / "Annotations" / "000012.xml"
    bad.write_text(voc_xml([("unicorn", 0)]))
    (voc_root / "VOCdevkit" / "VOC2007" / "ImageSets" / "Main" / "val.txt").write_text("000012\n")
    with pytest.raises(ValueError, match="unicorn"):
        R.load_voc_raw(voc_root, "2007", "val")


# --------------------------------------------------------------------------- COCO
@pytest.fixture
def coco_files(tmp_path):
    img_dir = tmp_path / "val2014"
    images = [{"id": i, "file_name": f"COCO_val2014_{i:012d}.jpg", "width": 12, "height": 10}
              for i in (25, 100, 3, 7)]
    for im in images:
        write_image(img_dir / im["file_name"], fmt="JPEG")
    cats = [{"id": 5, "name": "airplane"}, {"id": 1, "name": "person"},
            {"id": 18, "name": "dog"}]
    anns = [{"id": 1, "image_id": 25, "category_id": 1},
            {"id": 2, "image_id": 25, "category_id": 18},
            {"id": 3, "image_id": 100, "category_id": 5},
            {"id": 4, "image_id": 3, "category_id": 1},
            {"id": 5, "image_id": 3, "category_id": 1}]
    path = tmp_path / "annotations" / "instances_val2014.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"images": images, "annotations": anns, "categories": cats}))
    return path, img_dir


def test_coco_instances(coco_files):
    path, img_dir = coco_files
    ds = R.load_coco_instances(path, img_dir, image_size=8)
    assert ds.image_ids == [100, 25, 3]  # sorted as strings, 7 has no annotation
    assert ds.class_names == ["airplane", "person", "dog"]  # order of `categories`
    assert ds.labels.tolist() == [[1, 0, 0], [0, 1, 1], [0, 1, 0]]
    assert ds[0]["image"].shape == (3, 8, 8)
    full = R.load_coco_instances(path, img_dir, drop_empty=False, image_size=8)
    assert full.image_ids == [100, 25, 3, 7] and full.labels[3].sum() == 0


def test_coco_errors(coco_files, tmp_path):
    path, img_dir = coco_files
    with pytest.raises(FileNotFoundError, match="cocodataset.org"):
        R.load_coco_instances(tmp_path / "nope.json", img_dir)
    with pytest.raises(FileNotFoundError, match="missing"):
        R.load_coco_instances(path, tmp_path / "no_images")
    bad = tmp_path / "captions.json"
    bad.write_text(json.dumps({"images": [], "annotations": []}))
    with pytest.raises(ValueError, match="categories"):
        R.load_coco_instances(bad, img_dir)
