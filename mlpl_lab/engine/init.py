"""The weights a run starts from, other than its seed's random initialisation.

* ``init_from``: a second training stage (LAC) copies the networks of its trained first stage,
  matched by name; every name and tensor shape must match (:func:`init_networks`). With
  ``init_weights="raw_or_ema"`` the main network is the first stage's EMA copy when that validated
  better (:func:`init_sources`).
* ``backbone_from``: the lab's pretrained start copies only the backbone of a pretraining run into
  every network; heads keep their fresh initialisation (:func:`init_backbones`).

:func:`transfer` does both, in the order :func:`~mlpl_lab.engine.train.fit` needs.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Tuple

import torch

from ..methods import Method

#: the values of a second stage's ``init_weights``
INIT_WEIGHTS = ("raw", "raw_or_ema")

#: ``score_val(method, device)``: the validation row (``val_mAP``, ``val_mAP[head]``) of ``method``
ScoreVal = Callable[[Method, torch.device], Dict[str, float]]


def transfer(method: Method, init_from: Method | None, backbone_from: Method | None,
             score_val: ScoreVal) -> Dict[str, float]:
    """Copy the pretrained backbone, then a first stage's networks, into the freshly set up
    ``method``. Returns what decided the second-stage start (:func:`init_sources`; empty without
    ``init_from``), which the run records in its ``initial``."""
    if backbone_from is not None:
        init_backbones(method, backbone_from)
    if init_from is None:
        return {}
    sources, record = init_sources(method, init_from, score_val)
    init_networks(method, init_from, sources)
    return record


def init_sources(method: Method, init_from: Method,
                 score_val: ScoreVal) -> Tuple[Dict[str, torch.nn.Module], Dict[str, float]]:
    """The networks a second stage copies (``method.init_weights``) and what decided it.

    ``"raw"``: ``init_from``'s networks — its best-validation weights. ``"raw_or_ema"``: its main
    network replaced by its EMA copy when the EMA scores the higher validation mAP (both scored by
    ``score_val`` on ``init_from``'s device), as LAC's official checkpoint holds whichever of the
    two validated better. Returns ``({name: network}, record)``; the record (``init_val_mAP``,
    ``init_val_mAP[ema]``, ``init_from_ema`` 1/0) lands in the run's ``initial``."""
    choice = getattr(method, "init_weights", "raw")
    if choice not in INIT_WEIGHTS:
        raise ValueError(f"{method.name}: init_weights must be one of {INIT_WEIGHTS}, got {choice!r}")
    sources = dict(init_from.networks())
    if choice == "raw":
        return sources, {}
    if init_from.ema_model is None:
        raise ValueError(f"{method.name} starts from the better of {init_from.name!r}'s raw and EMA "
                         "weights, but that run kept no EMA: train the first stage with ema_decay set, "
                         "or start from its raw weights (init_weights='raw')")
    main = next(iter(sources))
    device = next(sources[main].parameters()).device
    row = score_val(init_from, device)
    raw, ema = float(row["val_mAP"]), float(row["val_mAP[ema]"])
    if ema > raw:
        sources[main] = init_from.ema_model.module
    return sources, {"init_val_mAP": raw, "init_val_mAP[ema]": ema, "init_from_ema": float(ema > raw)}


def init_networks(method: Method, init_from: Method, sources: Dict[str, torch.nn.Module] | None = None) -> None:
    """Copy ``init_from``'s networks (or ``sources``: the same names, e.g. with the EMA copy as the
    main network, :func:`init_sources`) into ``method``'s, matched by name; every name and every
    tensor shape must match (a stage-two network may add modules of its own: those keep
    their fresh initialisation and are listed in the error if nothing matches)."""
    sources = init_from.networks() if sources is None else sources
    targets = method.networks()
    missing = [k for k in targets if k not in sources]
    if missing:
        raise ValueError(f"init_from: {method.name!r} has network(s) {missing} that "
                         f"{init_from.name!r} lacks (it has {list(sources)}); networks are "
                         "matched by name")
    for key, net in targets.items():
        src = sources[key].state_dict()
        dst = net.state_dict()
        absent = [k for k in src if k not in dst]
        if absent:
            raise ValueError(f"init_from: network {key!r} of {init_from.name!r} has weights "
                             f"{absent[:5]} that the new network lacks: not the same architecture")
        bad = [f"{k}: {tuple(src[k].shape)} vs {tuple(dst[k].shape)}" for k in src
               if src[k].shape != dst[k].shape]
        if bad:
            raise ValueError(f"init_from: network {key!r} shape mismatch: {bad[:5]}")
        net.load_state_dict(src, strict=False)


def _backbone_key_map(src_keys, dst_keys) -> Dict[str, str]:
    """Target key of every backbone weight: the same name, or the name inside an LgConv wrapper
    (``....conv.weight`` for ``....weight``: PU-MLC's global branch wraps the 3x3 convolution and
    keeps its weights, as the official code loads ImageNet weights into the base convolution)."""
    out = {}
    for k in src_keys:
        if k in dst_keys:
            out[k] = k
            continue
        head, _, leaf = k.rpartition(".")
        alt = f"{head}.conv.{leaf}" if head else f"conv.{leaf}"
        if alt in dst_keys:
            out[k] = alt
    return out


def init_backbones(method: Method, source: Method) -> Dict[str, List[str]]:
    """Copy the backbone of ``source``'s network into the backbone of every network of
    ``method``; heads keep their fresh initialisation (ImageNet-style transfer: only the
    feature extractor is reused, the classifier is new — the source may even have other
    classes). Every source weight must land on a weight of the same shape, or this raises;
    target weights the source lacks (LgConv's global branches) keep their initialisation and
    are returned per network."""
    nets = source.networks()
    if len(nets) != 1:
        raise ValueError(f"backbone_from: the pretraining run must have one network, {source.name!r} "
                         f"has {list(nets)}")
    src_net = next(iter(nets.values()))
    if not hasattr(src_net, "backbone"):
        raise ValueError(f"backbone_from: {type(src_net).__name__} has no .backbone to copy")
    src = src_net.backbone.state_dict()
    fresh: Dict[str, List[str]] = {}
    for name, net in method.networks().items():
        if not hasattr(net, "backbone"):
            raise ValueError(f"backbone_from: network {name!r} of {method.name!r} has no .backbone")
        dst = net.backbone.state_dict()
        mapping = _backbone_key_map(src, dst)
        unmapped = [k for k in src if k not in mapping]
        bad = [f"{k}: {tuple(src[k].shape)} vs {tuple(dst[v].shape)}" for k, v in mapping.items()
               if src[k].shape != dst[v].shape]
        if unmapped or bad:
            raise ValueError(f"backbone_from: network {name!r} of {method.name!r} is not the pretrained "
                             f"backbone's architecture (missing {unmapped[:4]}, shape mismatch {bad[:4]}); "
                             "pretrain with the same model and model_kwargs (Profile.pretrain_spec does)")
        net.backbone.load_state_dict({v: src[k] for k, v in mapping.items()}, strict=False)
        fresh[name] = sorted(set(dst) - set(mapping.values()))
    return fresh
