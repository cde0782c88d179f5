"""Augmentations against naive per-image loops."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from mlpl_lab.data.augment import random_translate


def test_translate_equals_a_per_image_crop():
    x = torch.rand(7, 3, 9, 11)
    torch.manual_seed(5)
    got = random_translate(x, pad=2)
    torch.manual_seed(5)
    dx = torch.randint(0, 5, (7,)).tolist()
    dy = torch.randint(0, 5, (7,)).tolist()
    padded = F.pad(x, (2, 2, 2, 2), mode="replicate")
    want = torch.stack([padded[i, :, dy[i]:dy[i] + 9, dx[i]:dx[i] + 11] for i in range(7)])
    assert torch.equal(got, want)


def naive_weak(img, flip, dx, dy, pad=2):
    """One image's weak view by hand: mirror it (if ``flip``), pad by repeating its border pixels
    (indices clamped) and read the window at (dy, dx)."""
    _, h, w = img.shape
    out = torch.empty_like(img)
    for y in range(h):
        for x in range(w):
            sy = min(max(dy + y - pad, 0), h - 1)
            sx = min(max(dx + x - pad, 0), w - 1)
            out[:, y, x] = img[:, sy, w - 1 - sx if flip else sx]
    return out


def test_the_weak_view_and_its_gather_from_a_padded_split_equal_a_per_pixel_loop():
    """Oracle: per-pixel loops with the flip, the shifts drawn as documented (flip, then x, then y
    shifts). Bugs caught: a mirrored crop read from the wrong side of the padding, rows gathered
    out of order, x and y swapped, a view that draws other numbers than the per-batch view (runs
    would then change with the data path)."""
    from mlpl_lab.data.augment import gather_view, padded_nhwc, weak_view

    x = torch.rand(10, 3, 6, 7)
    rows = torch.tensor([4, 0, 9, 4, 2])
    torch.manual_seed(11)
    flip = (torch.rand(5) < 0.5).tolist()
    dx, dy = torch.randint(0, 5, (5,)).tolist(), torch.randint(0, 5, (5,)).tolist()
    assert any(flip) and not all(flip)
    want = torch.stack([naive_weak(x[r], flip[i], dx[i], dy[i]) for i, r in enumerate(rows.tolist())])
    torch.manual_seed(11)
    gathered = gather_view("weak", padded_nhwc(x), rows)
    assert gathered.shape == (5, 3, 6, 7) and gathered.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(gathered, want)
    torch.manual_seed(11)
    assert torch.equal(weak_view(x[rows]), want)
    assert torch.equal(gather_view("none", padded_nhwc(x), rows), x[rows])


def test_the_strong_view_gathered_from_a_padded_split_is_the_per_batch_strong_view():
    """The strong view's RandAugment, jitter and cutout act on the gathered weak crop: with the same
    seed it equals ``strong_view`` of the batch. Bug caught: a strong view that reads a different
    weak crop (or other random numbers) on the training loop's path."""
    from mlpl_lab.data.augment import gather_view, padded_nhwc, strong_view

    x = torch.rand(12, 3, 16, 16)
    rows = torch.tensor([3, 7, 1, 11, 0, 5, 8, 2, 6])
    torch.manual_seed(3)
    want = strong_view(x[rows])
    torch.manual_seed(3)
    got = gather_view("strong", padded_nhwc(x), rows)
    assert torch.equal(got, want)
    torch.manual_seed(4)
    assert not torch.equal(gather_view("strong", padded_nhwc(x), rows), want)


def test_a_device_split_gathers_rows_keys_and_views_and_refuses_non_row_values():
    """Bugs caught: labels or indices not aligned with the images of a batch; a last partial batch
    kept (or the only batch dropped); a wrapping dataset's get_batch ignored; a non-row value
    silently dropped."""
    import pytest

    from mlpl_lab.data import make_splits
    from mlpl_lab.data.device_split import DeviceSplit

    train = make_splits(n_train=20, n_val=4, n_test=4, seed=2).train

    class Shifted:  # a wrapper whose get_batch changes what the loop sees
        def __len__(self):
            return len(train)

        def get_batch(self, idx):
            b = train.get_batch(idx)
            b["observed"] = b["observed"] + 10
            return b

    split = DeviceSplit(Shifted(), torch.device("cpu"))
    order = torch.tensor([5, 19, 0, 7, 3, 12, 1, 8, 2])
    batches = list(split.batches(order, 4, view="none"))
    assert [b["index"].tolist() for b in batches] == [[5, 19, 0, 7], [3, 12, 1, 8]]
    for b in batches:
        assert torch.equal(b["image"], train.images[b["index"]])
        assert torch.equal(b["labels"], train.labels[b["index"]])
        assert torch.equal(b["observed"], train.observed[b["index"]] + 10)
    only = list(split.batches(order[:3], 4, view="none"))
    assert len(only) == 1 and only[0]["index"].tolist() == [5, 19, 0]
    nhwc = split.batch(order[:2], view="weak", strong=True, channels_last=True)
    assert nhwc["image"].is_contiguous(memory_format=torch.channels_last)
    assert nhwc["image_strong"].is_contiguous(memory_format=torch.channels_last)

    class Named:
        def __len__(self):
            return len(train)

        def get_batch(self, idx):
            return train.get_batch(idx) | {"names": ["x"] * len(idx)}

    with pytest.raises(TypeError, match="'names' that is not a tensor with one row per image"):
        DeviceSplit(Named(), torch.device("cpu"))
