"""Real datasets through the same path as the scenes: train/val/test with observed train labels.

A run spec's ``data`` names its dataset (absent or ``"scenes"``: the embedded scenes)::

    {"dataset": "voc2012", "root": "/data/pascal", "image_size": 448, "layout": "cole"}

* ``dataset``: ``"voc2012"``, ``"coco2014"``, ``"nuswide"`` or ``"cub"``.
* ``layout``: ``"cole"`` (default; Cole et al.'s ``formatted_*.npy`` files, every dataset),
  ``"voc_raw"`` (the VOC devkit, voc2012 only) or ``"coco_json"`` (``annotations/
  instances_{train,val}2014.json`` with ``train2014/`` and ``val2014/`` under ``root``;
  coco2014 only).
* **Cole's protocol**: train and val are Cole's fixed 80/20 split of the official train split
  (``RandomState(1200)``, :func:`~mlpl_lab.data.real.cole_split`), test is the official val
  split; val and test keep every true label (clean validation). The run's seed draws the
  observed training labels with the spec's regime (Cole draws them with seed 1200: pass
  seed 1200 to reproduce his files) and the initialisation; the split does not move with it.
* **Images**: resized to ``image_size`` (paper standard 448; the gpu profile's chapters use
  it), ImageNet normalisation (:func:`~mlpl_lab.data.real.default_transform`); the training
  loop adds the weak view (flip and translation) as on the scenes.

There are no object masks: Grad-CAM and attention *scores* need them and are skipped (the
scenes chapters say so); everything else — tables, claims, the benchmark — works unchanged.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List

import torch
from torch.utils.data import Dataset

from ..core import labels as L


from ..core import regimes
#: our dataset names -> Cole's dataset key
REAL_DATASETS = {"voc2012": "pascal", "coco2014": "coco", "nuswide": "nuswide", "cub": "cub"}
LAYOUTS = {"cole": tuple(REAL_DATASETS), "voc_raw": ("voc2012",), "coco_json": ("coco2014",)}


class ObservedImages(Dataset):
    """An image list with its true labels and the observed labels the method trains on."""

    def __init__(self, images, observed: torch.Tensor):
        self.images = images
        self.labels = images.labels
        self.observed = torch.as_tensor(observed).long()
        self.class_names = list(images.class_names)
        if tuple(self.observed.shape) != tuple(self.labels.shape):
            raise ValueError(f"observed labels {tuple(self.observed.shape)} do not match the "
                             f"dataset's labels {tuple(self.labels.shape)}")

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int) -> Dict[str, Any]:
        item = self.images[i]
        return {"image": item["image"], "labels": item["labels"], "observed": self.observed[i],
                "index": i}

    def __repr__(self) -> str:
        unk = float((self.observed == L.UNK).float().mean()) if len(self) else 0.0
        return f"ObservedImages(n={len(self)}, classes={len(self.class_names)}, unknown labels={unk:.0%})"


@dataclass
class RealSplits:
    train: ObservedImages
    val: ObservedImages
    test: ObservedImages
    class_names: List[str]
    regime: str
    regime_params: Dict[str, Any] = field(default_factory=dict)
    dataset: str = ""

    def __repr__(self) -> str:
        return (f"RealSplits({self.dataset}: train={len(self.train)}, val={len(self.val)}, "
                f"test={len(self.test)}, classes={len(self.class_names)}, regime={self.regime!r})")


def _load(dataset: str, root: Path, layout: str, image_size: int):
    from . import real as R

    transform = R.default_transform(image_size, train=False)
    if layout == "cole":
        key = REAL_DATASETS[dataset]
        return [R.load_cole_formatted(root, key, split, transform=transform) for split in ("train", "val", "test")]
    if layout == "voc_raw":
        full = R.load_voc_raw(root, "2012", "train", transform=transform)
        test = R.load_voc_raw(root, "2012", "val", transform=transform)
    else:  # coco_json
        full = R.load_coco_instances(root / "annotations" / "instances_train2014.json", root / "train2014",
                                     transform=transform)
        test = R.load_coco_instances(root / "annotations" / "instances_val2014.json", root / "val2014",
                                     transform=transform)
    def rows(idx):
        return R.ImageListDataset([full.image_paths[i] for i in idx], full.labels[idx], full.class_names,
                                  transform=transform, source_indices=idx)

    tr, va = R.cole_split(len(full))
    return [rows(tr), rows(va), test]


def make_real_splits(dataset: str, root, seed: int = 0, regime: str = "single_positive",
                     regime_params: Dict[str, Any] | None = None, image_size: int = 448,
                     layout: str = "cole") -> RealSplits:
    """Train/val/test of a real dataset under Cole's protocol (module docstring). Every
    argument is checked before an image is opened; missing files raise naming each one."""
    if dataset not in REAL_DATASETS:
        raise ValueError(f"unknown dataset {dataset!r}; choose 'scenes' (embedded) or one of "
                         f"{sorted(REAL_DATASETS)} with a root path")
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; choose one of {sorted(LAYOUTS)}")
    if dataset not in LAYOUTS[layout]:
        raise ValueError(f"layout {layout!r} holds {LAYOUTS[layout]} only, not {dataset!r}; use "
                         "layout='cole' (Cole et al.'s formatted files)")
    if root is None:
        raise ValueError(f"dataset {dataset!r} needs its root folder: data={{'dataset': {dataset!r}, "
                         "'root': '/path/to/it'}} (nothing is downloaded)")
    if isinstance(image_size, bool) or not isinstance(image_size, int) or image_size < 8:
        raise ValueError(f"image_size must be an integer >= 8, got {image_size!r}")
    seed = L.check_seed(seed)
    regime_params = dict(regime_params or {})
    make_obs = regimes.regime(regime, **regime_params)
    train, val, test = _load(dataset, Path(os.fspath(root)), layout, image_size)
    observed = make_obs(train.labels, seed=seed)
    return RealSplits(train=ObservedImages(train, observed), val=ObservedImages(val, regimes.full(val.labels)),
                      test=ObservedImages(test, regimes.full(test.labels)), class_names=list(train.class_names),
                      regime=regime, regime_params=regime_params, dataset=dataset)
