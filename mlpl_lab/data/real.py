"""Readers for the real benchmark datasets of the partial-label papers (nothing is downloaded).

Three on-disk layouts are supported:

1. **Cole et al.'s formatted files** (:func:`load_cole_formatted`), the shared SPML protocol
   of Cole et al. (CVPR 2021), Large Loss Matters, EM/APL, GR Loss, LAGC and OPML:
   ``formatted_{train,val}_{images,labels}.npy`` written by the ``preproc/format_*.py``
   scripts of https://github.com/elijahcole/single-positive-multi-label, with Cole's split
   (val = 20 % of the official train split drawn with ``RandomState(1200)``; test = the
   official val split).
2. **Raw PASCAL VOC** (:func:`load_voc_raw`): ``VOCdevkit/VOC{year}/`` from the PASCAL VOC
   site (ImageSets, Annotations XML, JPEGImages).
3. **COCO instances JSON** (:func:`load_coco_instances`): ``instances_*.json`` from
   cocodataset.org.

Every loader returns an :class:`ImageListDataset` holding the **true** {0,1} labels.  The
observed (partial) labels are produced by the *caller* with a regime of
:mod:`mlpl_lab.core.regimes`, e.g. ``regimes.single_positive(ds.labels, seed=1200)``; to use the
exact observed labels Cole distributed instead, read them with :func:`observed_from_cole_npy`.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
from torch.utils.data import Dataset

from mlpl_lab.core import labels as L

__all__ = [
    "VOC_CLASSES",
    "COCO_CLASSES",
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "ImageListDataset",
    "default_transform",
    "cole_split",
    "load_cole_formatted",
    "observed_from_cole_npy",
    "load_voc_raw",
    "load_coco_instances",
]

PathLike = Union[str, os.PathLike]

COLE_REPO = "https://github.com/elijahcole/single-positive-multi-label"

# PASCAL VOC class order: the devkit's order, also Cole's ``format_pascal.py`` catName_to_catID.
VOC_CLASSES: Tuple[str, ...] = (
    "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow",
    "diningtable", "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa",
    "train", "tvmonitor",
)

# COCO 2014 class order: the order of ``categories`` in instances_{train,val}2014.json
# (ascending category id), which is what Cole's ``format_coco.py`` uses as column order.
COCO_CLASSES: Tuple[str, ...] = (
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat",
    "traffic light", "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat",
    "dog", "horse", "sheep", "cow", "elephant", "bear", "zebra", "giraffe", "backpack",
    "umbrella", "handbag", "tie", "suitcase", "frisbee", "skis", "snowboard", "sports ball",
    "kite", "baseball bat", "baseball glove", "skateboard", "surfboard", "tennis racket",
    "bottle", "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple",
    "sandwich", "orange", "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair",
    "couch", "potted plant", "bed", "dining table", "toilet", "tv", "laptop", "mouse",
    "remote", "keyboard", "cell phone", "microwave", "oven", "toaster", "sink",
    "refrigerator", "book", "clock", "vase", "scissors", "teddy bear", "hair drier",
    "toothbrush",
)

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


# ---------------------------------------------------------------------------------------
# the dataset object
# ---------------------------------------------------------------------------------------
def default_transform(size: int = 448, train: bool = False) -> Callable:
    """Cole et al.'s transforms (``datasets.get_transforms``): Resize((size, size)),
    a horizontal flip with probability 0.5 for training only, ToTensor, ImageNet
    normalisation.  Cole uses size 448; small CPU runs of this lab use 64 or less."""
    from torchvision import transforms as T

    steps: List[Callable] = [T.Resize((int(size), int(size)))]
    if train:
        steps.append(T.RandomHorizontalFlip(0.5))
    steps += [T.ToTensor(), T.Normalize(mean=IMAGENET_MEAN, std=IMAGENET_STD)]
    return T.Compose(steps)


class ImageListDataset(Dataset):
    """A list of image files with their true multi-label vectors.

    Attributes
    ----------
    image_paths: list of str, full paths, one per row.
    labels: (N, C) torch.int64 tensor of true {0,1} labels.
    class_names: list of C class names (column order).
    transform: callable applied to the PIL image (RGB).
    source_indices: (N,) int64 numpy array, the rows of the source file/listing these
        images came from (for Cole's files: rows of ``formatted_*_labels.npy``), so that
        per-row side information (e.g. Cole's observed labels) can be aligned.
    ignore_mask: optional (N, C) bool tensor of entries to leave out of evaluation
        (VOC "difficult"-only objects with ``use_difficult="ignore"``); see
        :meth:`eval_targets`.

    ``ds[i]`` returns ``{"image": transform(PIL image), "labels": labels[i], "index": i}``.
    Observed (partial) labels are not stored here: draw them with a regime from
    :mod:`mlpl_lab.core.labels` from ``ds.labels`` and index them with ``"index"``.
    """

    def __init__(self, image_paths: Sequence[PathLike], labels, class_names: Sequence[str],
                 transform: Optional[Callable] = None, image_size: int = 448,
                 source_indices: Optional[Sequence[int]] = None, ignore_mask=None):
        y = torch.as_tensor(np.asarray(labels)).to(torch.int64)
        L._as_binary(y, "labels")
        if len(image_paths) != y.shape[0]:
            raise ValueError(f"{len(image_paths)} image paths but {y.shape[0]} label rows; "
                             f"they must correspond one to one")
        if len(class_names) != y.shape[1]:
            raise ValueError(f"{len(class_names)} class names but the label matrix has "
                             f"{y.shape[1]} columns")
        self.image_paths = [os.fspath(p) for p in image_paths]
        self.labels = y
        self.class_names = list(class_names)
        self.transform = transform if transform is not None else default_transform(image_size)
        self.source_indices = (np.arange(len(self.image_paths), dtype=np.int64)
                               if source_indices is None
                               else np.asarray(source_indices, dtype=np.int64))
        if ignore_mask is not None:
            ignore_mask = torch.as_tensor(np.asarray(ignore_mask)).to(torch.bool)
            if tuple(ignore_mask.shape) != tuple(y.shape):
                raise ValueError(f"ignore_mask has shape {tuple(ignore_mask.shape)}, labels "
                                 f"{tuple(y.shape)}")
        self.ignore_mask = ignore_mask

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    def __len__(self) -> int:
        return len(self.image_paths)

    def eval_targets(self) -> torch.Tensor:
        """Targets for :mod:`mlpl_lab.core.metrics`: the labels, with UNK (-1) where
        ``ignore_mask`` is set; use them with ``ignore_index=-1``."""
        if self.ignore_mask is None:
            return self.labels.clone()
        return torch.where(self.ignore_mask, torch.full_like(self.labels, L.UNK), self.labels)

    def __getitem__(self, index: int) -> Dict[str, object]:
        from PIL import Image

        path = self.image_paths[index]
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"image file {path!r} (row {index}) does not exist; the label files were "
                f"found, so check the image root (image_root=...) and that the images were "
                f"extracted there"
            )
        with Image.open(path) as img:
            image = self.transform(img.convert("RGB"))
        return {"image": image, "labels": self.labels[index], "index": index}

    def __repr__(self) -> str:
        return (f"ImageListDataset(n={len(self)}, num_classes={self.num_classes}, "
                f"positives/image={self.labels.sum(1).float().mean().item() if len(self) else 0:.2f})")


# ---------------------------------------------------------------------------------------
# Cole et al.'s formatted files
# ---------------------------------------------------------------------------------------
# name -> (canonical name, number of classes, default image root relative to `root`)
# image roots follow Cole's datasets.get_metadata
_COLE_DATASETS = {
    "pascal": ("pascal", 20, os.path.join("VOCdevkit", "VOC2012", "JPEGImages")),
    "coco": ("coco", 80, ""),
    "nuswide": ("nuswide", 81, "Flickr"),
    "cub": ("cub", 312, os.path.join("CUB_200_2011", "CUB_200_2011", "images")),
}
_COLE_ALIASES = {
    "pascal": "pascal", "voc": "pascal", "voc2012": "pascal", "pascal_voc": "pascal",
    "coco": "coco", "coco2014": "coco", "mscoco": "coco",
    "nuswide": "nuswide", "nus-wide": "nuswide", "nus_wide": "nuswide", "nus": "nuswide",
    "cub": "cub", "cub200": "cub", "cub_200_2011": "cub",
}
_COLE_SOURCES = {
    "pascal": f"produced by Cole et al.'s preproc/format_pascal.py from VOC2012, see {COLE_REPO}",
    "coco": f"produced by Cole et al.'s preproc/format_coco.py from COCO 2014, see {COLE_REPO}",
    "nuswide": ("downloaded pre-formatted from Zenodo record 10162606 as described in "
                f"data/README.md of {COLE_REPO}"),
    "cub": f"produced by Cole et al.'s preproc/format_cub.py from CUB-200-2011, see {COLE_REPO}",
}


def cole_split(num_examples: int, val_frac: float = 0.2,
               seed: int = 1200) -> Tuple[np.ndarray, np.ndarray]:
    """Cole et al.'s train/val split of the official train split (``generate_split``).

    ``perm = np.random.RandomState(seed).permutation(N)``; ``n_val = int(np.round(val_frac *
    N))`` (numpy rounds halves to even, as Cole's code does), ``n_train = N - n_val``;
    train = ``sort(perm[:n_train])``, val = ``sort(perm[n_train:])``.  (Cole writes the val
    part as ``perm[-n_val:]``, which would be the whole permutation if n_val were 0; we
    return an empty val set then.)  For VOC2012 (N = 5717) this gives 4574 / 1143.
    """
    if not 0.0 <= float(val_frac) < 1.0:
        raise ValueError(f"val_frac must be in [0, 1), got {val_frac}")
    n_val = int(np.round(val_frac * num_examples))
    n_train = num_examples - n_val
    perm = np.random.RandomState(seed).permutation(num_examples)
    return np.sort(perm[:n_train]), np.sort(perm[n_train:])


def _missing_error(what: str, root: PathLike, expected: Sequence[str], source: str,
                   missing: Sequence[str]) -> FileNotFoundError:
    lines = "\n".join(f"  - {e}" for e in expected)
    return FileNotFoundError(
        f"{what}: missing {', '.join(repr(m) for m in missing)} under root {os.fspath(root)!r}.\n"
        f"Expected files:\n{lines}\nThey are {source}. Nothing is downloaded by mlpl_lab; "
        f"put the files there or pass the right root."
    )


def load_cole_formatted(root: PathLike, dataset: str, split: str = "train", *,
                        val_frac: float = 0.2, split_seed: int = 1200,
                        image_root: Optional[PathLike] = None,
                        class_names: Optional[Sequence[str]] = None,
                        transform: Optional[Callable] = None,
                        image_size: int = 448) -> ImageListDataset:
    """Load one split of a dataset in Cole et al.'s formatted layout.

    Parameters
    ----------
    root: the dataset folder holding ``formatted_{train,val}_{images,labels}.npy``
        (Cole's ``data/<dataset>``).
    dataset: "pascal" (aliases "voc", "voc2012"; 20 classes), "coco" ("coco2014"; 80),
        "nuswide" ("nus-wide"; 81) or "cub" (312 attributes).
    split: "train" or "val" (Cole's 80/20 split of the official train split, see
        :func:`cole_split`), or "test" (the official val files, ``formatted_val_*``).
    val_frac, split_seed: Cole's defaults 0.2 and 1200.
    image_root: folder the stored relative image paths are relative to; default as in
        Cole's ``get_metadata``: ``root/VOCdevkit/VOC2012/JPEGImages`` (pascal), ``root``
        (coco: paths look like ``train2014/COCO_train2014_....jpg``), ``root/Flickr``
        (nuswide), ``root/CUB_200_2011/CUB_200_2011/images`` (cub).
    class_names: column names; default VOC / COCO names, generic ``concept_00`` /
        ``attribute_000`` names for NUS-WIDE / CUB (whose column order we cannot verify
        without the files).
    transform, image_size: see :class:`ImageListDataset` / :func:`default_transform`.

    The label matrix must be {0,1} and have exactly the dataset's number of columns.
    ``ds.source_indices`` are the rows of the ``formatted_*`` file, so Cole's observed
    labels align as ``observed_from_cole_npy(path)[ds.source_indices]``.
    """
    key = _COLE_ALIASES.get(str(dataset).lower())
    if key is None:
        raise ValueError(f"unknown dataset {dataset!r}; valid: pascal (voc2012), coco "
                         f"(coco2014), nuswide, cub")
    if split not in ("train", "val", "test"):
        raise ValueError(f"split must be 'train', 'val' or 'test', got {split!r}")
    name, num_classes, default_img = _COLE_DATASETS[key]
    root = Path(root)
    expected = [f"formatted_{ph}_{kind}.npy" for ph in ("train", "val")
                for kind in ("images", "labels")]
    phase = "val" if split == "test" else "train"
    needed = [f"formatted_{phase}_images.npy", f"formatted_{phase}_labels.npy"]
    if not root.is_dir():
        raise _missing_error(f"Cole-formatted {name}", root, expected, _COLE_SOURCES[name],
                             [os.fspath(root)])
    missing = [f for f in needed if not (root / f).is_file()]
    if missing:
        raise _missing_error(f"Cole-formatted {name}", root, expected, _COLE_SOURCES[name],
                             missing)

    images = np.load(root / needed[0], allow_pickle=False)
    labels = np.load(root / needed[1], allow_pickle=False)
    if labels.ndim != 2 or labels.shape[1] != num_classes:
        raise ValueError(f"{needed[1]} has shape {labels.shape}, expected (N, {num_classes}) "
                         f"for {name}; is root pointing at the right dataset?")
    if images.ndim != 1 or images.shape[0] != labels.shape[0]:
        raise ValueError(f"{needed[0]} has shape {images.shape} but {needed[1]} has "
                         f"{labels.shape[0]} rows; the two files must come from the same run")
    labels = L._as_binary(labels, needed[1])

    if split == "test":
        idx = np.arange(labels.shape[0], dtype=np.int64)
    else:
        tr, va = cole_split(labels.shape[0], val_frac, split_seed)
        idx = tr if split == "train" else va

    if class_names is None:
        if name == "pascal":
            class_names = VOC_CLASSES
        elif name == "coco":
            class_names = COCO_CLASSES
        elif name == "nuswide":
            class_names = [f"concept_{i:02d}" for i in range(num_classes)]
        else:
            class_names = [f"attribute_{i:03d}" for i in range(num_classes)]
    if len(class_names) != num_classes:
        raise ValueError(f"class_names has {len(class_names)} entries, {name} has {num_classes}")

    img_root = Path(image_root) if image_root is not None else root / default_img
    paths = [os.fspath(img_root / str(images[i])) for i in idx]
    return ImageListDataset(paths, labels[idx], class_names, transform=transform,
                            image_size=image_size, source_indices=idx)


def observed_from_cole_npy(path: PathLike,
                           indices: Optional[Sequence[int]] = None) -> torch.Tensor:
    """Read Cole's ``formatted_{train,val}[_<bias>]_labels_obs.npy`` into our encoding.

    Cole's ``preproc/generate_observed_labels.py`` writes +1 (observed positive), 0
    (unobserved) and -1 (observed negative); this converts with
    :func:`mlpl_lab.core.labels.from_cole` and returns a torch.int64 (N, C) matrix with POS=1,
    NEG=0, UNK=-1.  ``indices`` selects rows, e.g. ``ds.source_indices`` of a dataset from
    :func:`load_cole_formatted` (the file covers the whole official train split).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"observed-label file {os.fspath(path)!r} does not exist; it is written by "
            f"preproc/generate_observed_labels.py of {COLE_REPO} (named "
            f"formatted_<train|val>_labels_obs.npy, or formatted_<phase>_<bias>_labels_obs.npy "
            f"in newer versions). Alternatively draw the labels with "
            f"mlpl_lab.core.regimes.single_positive(Y, seed=1200)"
        )
    arr = np.load(path, allow_pickle=False)
    obs = L.from_cole(torch.from_numpy(np.asarray(arr)))
    if indices is not None:
        obs = obs[torch.as_tensor(np.asarray(indices, dtype=np.int64))]
    return obs


# ---------------------------------------------------------------------------------------
# raw PASCAL VOC
# ---------------------------------------------------------------------------------------
def _parse_voc_xml(path: Path, class_index: Dict[str, int], num_classes: int):
    """(present, difficult_only) boolean vectors of one VOC annotation file."""
    try:
        tree = ET.parse(path)
    except ET.ParseError as exc:
        raise ValueError(f"cannot parse VOC annotation {os.fspath(path)!r}: {exc}") from None
    present = np.zeros(num_classes, dtype=bool)  # some non-difficult instance
    any_inst = np.zeros(num_classes, dtype=bool)  # any instance at all
    for obj in tree.getroot().iter("object"):
        name_el = obj.find("name")
        if name_el is None or name_el.text is None:
            raise ValueError(f"{os.fspath(path)!r}: an <object> without <name>")
        cname = name_el.text.strip()
        if cname not in class_index:
            raise ValueError(f"{os.fspath(path)!r}: unknown VOC class {cname!r}; expected one "
                             f"of {list(class_index)}")
        k = class_index[cname]
        diff_el = obj.find("difficult")
        difficult = diff_el is not None and (diff_el.text or "0").strip() == "1"
        any_inst[k] = True
        if not difficult:
            present[k] = True
    return present, any_inst & ~present


def load_voc_raw(root: PathLike, year: str = "2012", image_set: str = "train", *,
                 use_difficult: str = "negative", drop_empty: bool = True,
                 transform: Optional[Callable] = None,
                 image_size: int = 448) -> ImageListDataset:
    """Load PASCAL VOC from the devkit layout (XML annotations).

    Reads ``root/VOCdevkit/VOC{year}/ImageSets/Main/{image_set}.txt`` (one image id a line),
    ``Annotations/<id>.xml`` and points at ``JPEGImages/<id>.jpg``.  ``root`` may also be the
    ``VOCdevkit`` folder or the ``VOC{year}`` folder itself.  Rows are sorted by image id
    (Cole sorts by file name); columns follow :data:`VOC_CLASSES`.

    ``use_difficult`` -- what a class whose every instance in the image is marked
    ``<difficult>1</difficult>`` becomes:

    * ``"negative"`` (default): label 0.  This is what Cole et al. get: ``format_pascal.py``
      reads ``ImageSets/Main/<cat>_<split>.txt``, where such an image has the value 0 (1 =
      present, -1 = absent, 0 = only difficult instances), and keeps only the value 1.
      PU-MLC (via HCP-MLR-PL's VOC reader) also counts difficult as negative.
    * ``"positive"``: label 1 (the object *is* there, just hard to see).
    * ``"ignore"``: label 0 in ``ds.labels`` (regimes need a {0,1} matrix) and
      ``ds.ignore_mask`` marks the entries; ``ds.eval_targets()`` returns them as UNK for
      metrics with ``ignore_index=-1``, as the official VOC devkit evaluation ignores
      difficult objects.

    ``drop_empty=True`` keeps only images with at least one positive (Cole's convention;
    with "negative"/"ignore" an image holding only difficult objects is dropped).
    """
    if use_difficult not in ("negative", "positive", "ignore"):
        raise ValueError(f"use_difficult must be 'negative', 'positive' or 'ignore', got "
                         f"{use_difficult!r}")
    year = str(year)
    if year not in ("2007", "2012"):
        raise ValueError(f"year must be '2007' or '2012', got {year!r}")
    if image_set not in ("train", "val", "trainval", "test"):
        raise ValueError(f"image_set must be 'train', 'val', 'trainval' or 'test', got "
                         f"{image_set!r}")
    root = Path(root)
    candidates = [root / "VOCdevkit" / f"VOC{year}", root / f"VOC{year}", root]
    base = next((c for c in candidates if (c / "ImageSets" / "Main").is_dir()), None)
    expected = [f"VOCdevkit/VOC{year}/ImageSets/Main/{image_set}.txt",
                f"VOCdevkit/VOC{year}/Annotations/<image id>.xml (one per listed image)",
                f"VOCdevkit/VOC{year}/JPEGImages/<image id>.jpg (one per listed image)"]
    source = ("the VOC devkit from the PASCAL VOC site "
              "(http://host.robots.ox.ac.uk/pascal/VOC/), e.g. VOCtrainval_11-May-2012.tar"
              if year == "2012" else
              "the VOC devkit from the PASCAL VOC site (http://host.robots.ox.ac.uk/pascal/VOC/"
              "voc2007/): VOCtrainval_06-Nov-2007.tar and, for test, VOCtest_06-Nov-2007.tar")
    if base is None:
        raise _missing_error(f"PASCAL VOC{year}", root, expected, source,
                             [f"VOCdevkit/VOC{year}/ImageSets/Main"])
    list_file = base / "ImageSets" / "Main" / f"{image_set}.txt"
    if not list_file.is_file():
        raise _missing_error(f"PASCAL VOC{year}", root, expected, source,
                             [os.fspath(list_file.relative_to(root))])
    ids = sorted({ln.split()[0] for ln in list_file.read_text().splitlines() if ln.strip()})
    class_index = {c: i for i, c in enumerate(VOC_CLASSES)}
    C = len(VOC_CLASSES)
    missing = [i for i in ids if not (base / "Annotations" / f"{i}.xml").is_file()]
    if missing:
        shown = ", ".join(f"Annotations/{m}.xml" for m in missing[:5])
        raise _missing_error(f"PASCAL VOC{year}", root, expected, source,
                             [f"{shown}{' ...' if len(missing) > 5 else ''} "
                              f"({len(missing)} of {len(ids)} annotation files)"])
    present = np.zeros((len(ids), C), dtype=bool)
    diff_only = np.zeros((len(ids), C), dtype=bool)
    for r, image_id in enumerate(ids):
        present[r], diff_only[r] = _parse_voc_xml(base / "Annotations" / f"{image_id}.xml",
                                                  class_index, C)
    y = present | diff_only if use_difficult == "positive" else present
    keep = np.arange(len(ids))
    if drop_empty:
        keep = np.nonzero(y.any(axis=1))[0]
    paths = [os.fspath(base / "JPEGImages" / f"{ids[r]}.jpg") for r in keep]
    ignore = diff_only[keep] if use_difficult == "ignore" else None
    return ImageListDataset(paths, y[keep].astype(np.int64), VOC_CLASSES, transform=transform,
                            image_size=image_size, source_indices=keep, ignore_mask=ignore)


# ---------------------------------------------------------------------------------------
# COCO instances JSON
# ---------------------------------------------------------------------------------------
def load_coco_instances(annotation_json: PathLike, image_dir: PathLike, *,
                        drop_empty: bool = True, transform: Optional[Callable] = None,
                        image_size: int = 448) -> ImageListDataset:
    """Load a COCO ``instances_*.json`` as a multi-label dataset (Cole's ``format_coco.py``).

    * Columns: the order of ``categories`` in the JSON (ascending id in the official files),
      class names from their ``name`` fields.
    * Rows: image ids **sorted as strings** (Cole sorts ``str(image_id)`` "for backwards
      compatibility", so id 100 comes before id 25); with ``drop_empty=True`` only images
      with at least one annotation (Cole's convention: 82,081 train / 40,137 val images
      for 2014).  With ``drop_empty=False`` every entry of ``images`` is kept.
    * Paths: ``image_dir / file_name`` from the JSON's ``images`` entries.

    The returned dataset also has ``image_ids``: the COCO image id of each row.
    """
    annotation_json = Path(annotation_json)
    image_dir = Path(image_dir)
    source = ("the COCO annotations from cocodataset.org (annotations_trainval2014.zip -> "
              "annotations/instances_{train,val}2014.json) and the matching image folder")
    if not annotation_json.is_file():
        raise _missing_error("COCO instances", annotation_json.parent,
                             [annotation_json.name, f"{os.fspath(image_dir)}/<file_name>"],
                             source, [annotation_json.name])
    if not image_dir.is_dir():
        raise _missing_error("COCO instances", image_dir.parent,
                             [annotation_json.name, f"{os.fspath(image_dir)}/<file_name>"],
                             source, [os.fspath(image_dir)])
    with open(annotation_json, "r") as f:
        D = json.load(f)
    for key in ("images", "annotations", "categories"):
        if key not in D:
            raise ValueError(f"{os.fspath(annotation_json)!r} has no {key!r} key; is it an "
                             f"instances_*.json (not captions_* or person_keypoints_*)?")
    cats = D["categories"]
    cat_to_col = {c["id"]: i for i, c in enumerate(cats)}
    names = [c["name"] for c in cats]
    file_names = {img["id"]: img["file_name"] for img in D["images"]}

    annotated = {a["image_id"] for a in D["annotations"]}
    ids = annotated if drop_empty else set(file_names) | annotated
    order = sorted(ids, key=lambda i: str(i))  # Cole: sorted as strings
    row_of = {img_id: r for r, img_id in enumerate(order)}
    y = np.zeros((len(order), len(cats)), dtype=np.int64)
    for a in D["annotations"]:
        if a["category_id"] not in cat_to_col:
            raise ValueError(f"annotation {a.get('id')} has category_id {a['category_id']} "
                             f"that is not in 'categories'")
        y[row_of[a["image_id"]], cat_to_col[a["category_id"]]] = 1
    unknown = [i for i in order if i not in file_names]
    if unknown:
        raise ValueError(f"{len(unknown)} annotated image ids are missing from 'images' "
                         f"(e.g. {unknown[:5]}); the JSON is inconsistent")
    paths = [os.fspath(image_dir / file_names[i]) for i in order]
    ds = ImageListDataset(paths, y, names, transform=transform, image_size=image_size)
    ds.image_ids = list(order)
    return ds
