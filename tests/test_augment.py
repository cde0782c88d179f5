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
