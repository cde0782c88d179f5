"""Batched tensor augmentations: the weak and strong views the training loop serves.

They act on a batch (B, 3, H, W) in [0, 1] (or normalised) with the global torch RNG, which
the loop seeds per epoch, so runs and resumed runs see the same augmentations.

Colour is part of a class on the embedded scenes ("red circle"), so neither view changes
hue. The strong view (LAC's consistency terms) follows the official LAC recipe (``xiemk/SPML-LAC``:
flip + Cutout + RandAugment + ColorJitter) with its label-preserving part:

* **RandAugment** — torchvision's ``v2.RandAugment`` (2 ops, magnitude 9) on tensors, on the
  batch's device, restricted to the ops that keep hue: identity, shear x/y, translate x/y,
  rotate, brightness, contrast, sharpness, posterize, autocontrast. Left out: ``Color``
  (saturation), ``Solarize`` and ``Equalize``, which change colours and so the class here.
  Ops are drawn per group of :data:`RANDAUG_GROUP` images (one torchvision call per group:
  per-image calls cost ~10 % of a CPU step, per-batch calls would give every image the same ops);
* **colour jitter** — brightness and contrast ±40 % with probability 0.8 per image (the code's
  ColorJitter(0.4, 0.4, 0.4, 0.1) p = 0.8 without its saturation and hue parts);
* **Cutout** — one zeroed square of 0.35 x the side with probability 0.5. The code's cutout
  (probability 1, half the side, in the official code) can hide a whole glyph of a 32-px scene, which
  would turn a PLC target into label noise; ``cutout(x, 0.5, 1.0)`` is the code's setting.

**Views from a padded split** (the training loop's path): :func:`padded_nhwc` pads a
whole training split once (replicate padding of :data:`PAD` pixels, stored NHWC on the training
device), and :func:`gather_view` builds a batch's view from it with one gather: the rows, the
weak view's flip and its shift are a single index into the padded images (a flipped image's crop
at offset ``dx`` is the unflipped padded image read backwards from ``W + 2 PAD - 1 - dx``).
It draws the same random numbers in the same order as :data:`VIEWS` (flip, then the shifts) and
returns the same values; the result has channels-last strides (NHWC memory, NCHW shape).
"""
from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

#: images per RandAugment call (each group draws its own ops and magnitudes' signs)
RANDAUG_GROUP = 8
#: RandAugment ops that keep an object's hue (the class on the embedded scenes)
HUE_PRESERVING_OPS = ("Identity", "ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate",
                      "Brightness", "Contrast", "Sharpness", "Posterize", "AutoContrast")


@functools.lru_cache(maxsize=None)
def _randaug():
    """torchvision's RandAugment (2 ops, magnitude 9) with only :data:`HUE_PRESERVING_OPS`, made on
    first use: torchvision is imported when a run augments, not by every notebook that imports the
    training loop (its import costs ~1-2 s). It draws no random number when made."""
    from torchvision.transforms import v2

    class _HuePreservingRandAugment(v2.RandAugment):
        _AUGMENTATION_SPACE = {k: v for k, v in v2.RandAugment._AUGMENTATION_SPACE.items()
                               if k in HUE_PRESERVING_OPS}

    return _HuePreservingRandAugment(num_ops=2, magnitude=9)


def random_flip(x: torch.Tensor) -> torch.Tensor:
    flip = torch.rand(x.shape[0], device=x.device) < 0.5
    return torch.where(flip[:, None, None, None], x.flip(-1), x)


def random_translate(x: torch.Tensor, pad: int = 2) -> torch.Tensor:
    """Shift each image by up to ``pad`` pixels (replicate padding, then a random crop)."""
    if pad <= 0:
        return x
    b, _, h, w = x.shape
    padded = F.pad(x, (pad, pad, pad, pad), mode="replicate")
    dx = torch.randint(0, 2 * pad + 1, (b,), device=x.device)
    dy = torch.randint(0, 2 * pad + 1, (b,), device=x.device)
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


def brightness_contrast(x: torch.Tensor, strength: float = 0.4, p: float = 1.0) -> torch.Tensor:
    """Per image, with probability ``p``: contrast and brightness factors in 1 ± strength."""
    b = x.shape[0]
    bright = 1 + strength * (2 * torch.rand(b, 1, 1, 1, device=x.device) - 1)
    contrast = 1 + strength * (2 * torch.rand(b, 1, 1, 1, device=x.device) - 1)
    mean = x.mean(dim=(1, 2, 3), keepdim=True)
    out = ((x - mean) * contrast + mean) * bright
    if p >= 1.0:
        return out
    apply = torch.rand(b, 1, 1, 1, device=x.device) < p
    return torch.where(apply, out, x)


def rand_augment(x: torch.Tensor, group: int = RANDAUG_GROUP) -> torch.Tensor:
    """Hue-preserving RandAugment (2 ops, magnitude 9), one draw per group of ``group`` images.

    torchvision's ops expect [0, 1]; the batch is mapped there by its own min and max and
    back afterwards, so ImageNet-normalised inputs (the real-dataset loaders) work too."""
    lo, hi = x.amin(), x.amax()
    scale = (hi - lo).clamp(min=1e-6)
    u = (x - lo) / scale
    u = torch.cat([_randaug()(chunk) for chunk in u.split(group)]).clamp(0, 1)
    return u * scale + lo


#: the weak view's largest shift, pixels (replicate padding)
PAD = 2


def padded_nhwc(images: torch.Tensor, pad: int = PAD) -> torch.Tensor:
    """(N, C, H, W) -> (N, H + 2 pad, W + 2 pad, C): replicate-padded, channels last (contiguous)."""
    return F.pad(images, (pad, pad, pad, pad), mode="replicate").permute(0, 2, 3, 1).contiguous()


def _crops(padded: torch.Tensor, rows: torch.Tensor, dx: torch.Tensor, dy: torch.Tensor,
           flip: torch.Tensor, pad: int) -> torch.Tensor:
    """Image ``rows[i]`` of ``padded`` (NHWC), cropped at ``(dy_i, dx_i)`` to the unpadded size and
    mirrored left-right where ``flip_i``: one gather, (B, C, H, W) with channels-last strides."""
    _, hp, wp, ch = padded.shape
    h, w = hp - 2 * pad, wp - 2 * pad
    dev = padded.device
    r = (dy[:, None] + torch.arange(h, device=dev))[:, :, None]
    c = dx[:, None] + torch.arange(w, device=dev)
    c = torch.where(flip[:, None], wp - 1 - c, c)[:, None, :]
    # the pixels' row numbers in the (N * Hp * Wp, C) view: index_select copies whole pixels
    # (about twice as fast on the CPU as indexing with three tensors, measured at 32 px)
    pixel = ((rows[:, None, None] * hp + r) * wp + c).reshape(-1)
    out = padded.view(-1, ch).index_select(0, pixel)
    return out.view(rows.shape[0], h, w, ch).permute(0, 3, 1, 2)


def _weak_crops(padded: torch.Tensor, rows: torch.Tensor, pad: int) -> torch.Tensor:
    """The weak view of ``rows``: draws the flips, then the x and y shifts (what
    ``random_translate(random_flip(x))`` draws, in its order, on the images' device)."""
    b, dev = rows.shape[0], padded.device
    flip = torch.rand(b, device=dev) < 0.5
    if pad <= 0:
        zero = torch.zeros(b, dtype=torch.long, device=dev)
        return _crops(padded, rows, zero, zero, flip, 0)
    dx = torch.randint(0, 2 * pad + 1, (b,), device=dev)
    dy = torch.randint(0, 2 * pad + 1, (b,), device=dev)
    return _crops(padded, rows, dx, dy, flip, pad)


def gather_view(view: str, padded: torch.Tensor, rows: torch.Tensor, pad: int = PAD) -> torch.Tensor:
    """View ``view`` (a key of :data:`VIEWS`) of images ``rows`` of ``padded`` (from
    :func:`padded_nhwc` with the same ``pad``), on ``padded``'s device. Channels-last strides;
    ``.contiguous()`` gives what ``VIEWS[view](images[rows])`` gives (the same draws, the same values)."""
    if view == "none":
        b, dev = rows.shape[0], padded.device
        at = torch.full((b,), pad, dtype=torch.long, device=dev)
        return _crops(padded, rows, at, at, torch.zeros(b, dtype=torch.bool, device=dev), pad)
    weak = _weak_crops(padded, rows, pad)
    if view == "weak":
        return weak
    if view == "strong":
        return strong_tail(weak.contiguous())
    raise ValueError(f"unknown view {view!r}; views: {sorted(VIEWS)}")


def weak_view(x: torch.Tensor) -> torch.Tensor:
    """Flip + ±2 px shift: the lab's weak view (LAC's code uses flip + resize)."""
    return _weak_crops(padded_nhwc(x), torch.arange(x.shape[0], device=x.device), PAD).contiguous()


def strong_tail(x: torch.Tensor) -> torch.Tensor:
    """What the strong view adds to its own weak view: hue-preserving RandAugment, brightness/
    contrast jitter (p = 0.8), cutout (module docstring)."""
    return cutout(brightness_contrast(rand_augment(x), p=0.8))


def strong_view(x: torch.Tensor) -> torch.Tensor:
    """Weak view (its own flip) + hue-preserving RandAugment + brightness/contrast jitter
    (p = 0.8) + cutout (module docstring)."""
    return strong_tail(weak_view(x))


VIEWS = {"weak": weak_view, "strong": strong_view, "none": lambda x: x}
