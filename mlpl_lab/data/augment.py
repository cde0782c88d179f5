"""Batched tensor augmentations: the weak and strong views the training loop serves.

They act on a batch (B, 3, H, W) in [0, 1] (or normalised) with the global torch RNG, which
the loop seeds per epoch, so runs and resumed runs see the same augmentations.

Colour is part of a class on the embedded scenes ("red circle"), so neither view changes
hue: the strong view (for LAC's consistency terms) uses cutout and brightness/contrast
jitter, the label-preserving part of the papers' RandAugment + Cutout recipes.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F


def random_flip(x: torch.Tensor) -> torch.Tensor:
    flip = torch.rand(x.shape[0], device=x.device) < 0.5
    return torch.where(flip[:, None, None, None], x.flip(-1), x)


def random_translate(x: torch.Tensor, pad: int = 2) -> torch.Tensor:
    """Shift each image by up to ``pad`` pixels (replicate padding, then a random crop)."""
    if pad <= 0:
        return x
    b, _, h, w = x.shape
    padded = F.pad(x, (pad, pad, pad, pad), mode="replicate")
    dx = torch.randint(0, 2 * pad + 1, (b,)).to(x.device)
    dy = torch.randint(0, 2 * pad + 1, (b,)).to(x.device)
    # one gather for the whole batch: image i is padded[i, :, dy_i : dy_i + h, dx_i : dx_i + w]
    rows = (dy[:, None] + torch.arange(h, device=x.device))[:, :, None]
    cols = (dx[:, None] + torch.arange(w, device=x.device))[:, None, :]
    batch = torch.arange(b, device=x.device)[:, None, None]
    return padded.permute(0, 2, 3, 1)[batch, rows, cols].permute(0, 3, 1, 2).contiguous()


def cutout(x: torch.Tensor, size_fraction: float = 0.35, p: float = 0.5) -> torch.Tensor:
    """Zero a random square (side = size_fraction * H) in each image with probability p."""
    b, _, h, w = x.shape
    side = max(1, int(round(size_fraction * h)))
    cy = torch.randint(0, h, (b, 1, 1), device=x.device)
    cx = torch.randint(0, w, (b, 1, 1), device=x.device)
    ys = torch.arange(h, device=x.device)[None, :, None]
    xs = torch.arange(w, device=x.device)[None, None, :]
    box = ((ys - cy).abs() <= side // 2) & ((xs - cx).abs() <= side // 2)
    apply = (torch.rand(b, 1, 1, device=x.device) < p)
    return x * (~(box & apply))[:, None].to(x.dtype)


def brightness_contrast(x: torch.Tensor, strength: float = 0.4) -> torch.Tensor:
    b = x.shape[0]
    bright = 1 + strength * (2 * torch.rand(b, 1, 1, 1, device=x.device) - 1)
    contrast = 1 + strength * (2 * torch.rand(b, 1, 1, 1, device=x.device) - 1)
    mean = x.mean(dim=(1, 2, 3), keepdim=True)
    return ((x - mean) * contrast + mean) * bright


def weak_view(x: torch.Tensor) -> torch.Tensor:
    """Flip + small translation (the papers' "weak" augmentation)."""
    return random_translate(random_flip(x))


def strong_view(x: torch.Tensor) -> torch.Tensor:
    """Weak view + brightness/contrast jitter + cutout (label-preserving "strong" view)."""
    return cutout(brightness_contrast(weak_view(x)))


VIEWS = {"weak": weak_view, "strong": strong_view, "none": lambda x: x}
