"""The training split held on the training device ("data on the device").

:class:`DeviceSplit` reads an in-memory dataset once per training run -- ``get_batch`` over all
its rows, so a wrapping dataset's ``get_batch`` applies as it would per batch -- and keeps every
per-row tensor on the device: the images replicate-padded and NHWC (:func:`~mlpl_lab.data.augment.
padded_nhwc`), the labels, observed labels and indices as they are. An epoch's batches are then
index operations on the device: the rows of a batch and its views (flip and shift in the same
gather, :func:`~mlpl_lab.data.augment.gather_view`) with no per-step host-to-device copy and no
DataLoader, as the CIFAR-10 speed runs (airbench) feed their GPU. The epoch's order is the only
thing copied to the device, once per epoch.

Datasets without ``get_batch`` (the real datasets' JPEG files, decoded and resized per image on
the host) are not held here: the loop feeds them through a DataLoader.

Memory: the padded images take (H + 4)(W + 4) / (H W) of the images (1.27x at 32 px, 1.13x at
64 px), on the device, for the run's duration.
"""
from __future__ import annotations

from typing import Dict, Iterator

import torch

from .augment import PAD, gather_view, padded_nhwc


class DeviceSplit:
    """Every row of ``dataset`` on ``device``; :meth:`batches` yields an epoch's batches."""

    def __init__(self, dataset, device: torch.device, pad: int = PAD):
        n = len(dataset)
        whole = dataset.get_batch(torch.arange(n))
        images = whole.pop("image")
        self.device, self.pad, self.n = torch.device(device), pad, n
        self.images = padded_nhwc(images.to(self.device), pad)
        del images
        self.rows: Dict[str, torch.Tensor] = {}
        for key, value in whole.items():
            if not torch.is_tensor(value) or value.ndim == 0 or value.shape[0] != n:
                raise TypeError(f"get_batch of {type(dataset).__name__} returned {key!r} that is not a "
                                f"tensor with one row per image ({n}); the training loop gathers "
                                "every key per batch: return per-row tensors only")
            self.rows[key] = value.to(self.device)

    def __len__(self) -> int:
        return self.n

    def batch(self, rows: torch.Tensor, view: str = "none", strong: bool = False,
              channels_last: bool = False) -> Dict[str, torch.Tensor]:
        """Rows ``rows`` (a tensor on the device): every per-row tensor, ``image`` in view
        ``view`` and, with ``strong``, ``image_strong`` in the strong view (drawn after ``view``,
        as the loop always drew them), each contiguous in NCHW or, with ``channels_last``, NHWC."""
        fmt = torch.channels_last if channels_last else torch.contiguous_format
        out = {key: value.index_select(0, rows) for key, value in self.rows.items()}
        out["image"] = gather_view(view, self.images, rows, self.pad).contiguous(memory_format=fmt)
        if strong:
            out["image_strong"] = gather_view("strong", self.images, rows, self.pad).contiguous(
                memory_format=fmt)
        return out

    def batches(self, order: torch.Tensor, batch_size: int, drop_last: bool = True,
                **views) -> Iterator[Dict[str, torch.Tensor]]:
        """The batches of ``order`` (row indices, one copy to the device here), ``batch_size``
        each; ``drop_last`` drops a last partial batch unless it is the only one. ``views``:
        :meth:`batch`'s."""
        order = order.to(self.device)
        m = len(order)
        stop = m - m % batch_size if (drop_last and m > batch_size) else m
        for start in range(0, stop, batch_size):
            yield self.batch(order[start:start + batch_size], **views)
