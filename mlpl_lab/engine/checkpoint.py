"""Checkpoints of one run of :func:`~mlpl_lab.engine.train.fit`: what a resumed run needs, and the
check that a checkpoint belongs to the run that would resume from it.

A checkpoint is written after every epoch (atomically: a ``.tmp`` file, then ``os.replace``) and
holds plain data only, so it loads with ``torch.load(weights_only=True)`` and never runs pickled
code. It carries a *fingerprint* of the run (method, hyperparameters, configuration, seed and a
hash of the observed training labels); resuming from a checkpoint whose fingerprint differs
raises, naming what differs, instead of silently continuing another run.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

import torch


@dataclass
class Progress:
    """What a run has done so far besides its weights: one history row per epoch, the CPU copies of
    the best-val weights and of the best observed-val weights (kept when the test set is scored
    only at the end), the probes measured before the first epoch, and the optimiser steps taken."""

    history: List[Dict[str, Any]] = field(default_factory=list)
    best_state: Any = None
    best_obs_state: Any = None  # the best observed-validation epoch's weights (test scored once)
    initial: Dict[str, float] = field(default_factory=dict)
    step: int = 0


def data_fingerprint(observed: torch.Tensor) -> str:
    """A short hash of the observed label matrix (its shape and bytes)."""
    h = hashlib.sha256(str(tuple(observed.shape)).encode())
    h.update(observed.contiguous().cpu().numpy().tobytes())
    return h.hexdigest()[:16]


def run_fingerprint(method, config, observed: torch.Tensor) -> Dict[str, Any]:
    """What identifies a run for resuming. ``epochs`` is left out (a run may be resumed to train
    longer); the seed is compared on its own, for a clearer error."""
    ident = config.identity()
    ident.pop("epochs")
    ident.pop("seed")
    return {"method": method.name, "hparams": repr(sorted(method.hparams.items())),
            "config": repr(sorted(ident.items())), "seed": config.seed,
            "train_set": data_fingerprint(observed)}


#: each fingerprint field, as the error names it
_DIFFERS = {"method": "another method", "hparams": "other hyperparameters",
            "config": "another training configuration", "seed": "another seed",
            "train_set": "another training set (images or observed labels)"}


def check_resume(state: Dict[str, Any], expected: Dict[str, Any], config, path) -> None:
    """Raise unless ``state`` (a loaded checkpoint) was made by the run ``expected`` fingerprints
    and holds no more epochs than ``config`` asks for."""
    got = state.get("fingerprint")
    if got is None:
        raise ValueError(f"checkpoint {path} has no run fingerprint (made by an older mlpl_lab); "
                         "delete it or train with resume=False")
    for key, what in _DIFFERS.items():
        if got.get(key) != expected[key]:
            raise ValueError(f"checkpoint {path} was made by {what} ({key}: {got.get(key)} != "
                             f"{expected[key]}); delete it, point checkpoint= elsewhere or train "
                             "with resume=False")
    if len(state["history"]) > config.epochs:
        raise ValueError(f"checkpoint {path} holds {len(state['history'])} epochs but the config "
                         f"asks for {config.epochs}; raise epochs or delete the checkpoint")


class Checkpoint:
    """The checkpoint file of one run (``path``; None: no checkpoint, and both methods do nothing)."""

    def __init__(self, path: Optional[str], fingerprint: Dict[str, Any]):
        self.path = Path(path) if path else None
        self.fingerprint = fingerprint

    def resume(self, method, schedulers: Dict[str, Any], config, device) -> Progress:
        """The progress stored in the checkpoint, with the method's state and the LR schedules
        loaded from it; a fresh :class:`Progress` when there is no checkpoint to resume from."""
        if not (config.resume and self.path is not None and self.path.exists()):
            return Progress()
        state = torch.load(self.path, map_location=device, weights_only=True)
        check_resume(state, self.fingerprint, config, self.path)
        method.load_state_dict(state["method"])
        for k, sch in schedulers.items():
            sch.load_state_dict(state["schedulers"][k])
        return Progress(history=state["history"], best_state=state.get("best_state"),
                        best_obs_state=state.get("best_obs_state"),
                        initial=state.get("initial", {}), step=state.get("step", 0))

    def save(self, method, schedulers: Dict[str, Any], config, progress: Progress) -> None:
        """Everything :meth:`resume` reads, written atomically."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        torch.save({"method": method.state_dict(), "history": progress.history, "config": asdict(config),
                    "fingerprint": self.fingerprint, "best_state": progress.best_state,
                    "best_obs_state": progress.best_obs_state,
                    "initial": progress.initial,
                    "schedulers": {k: v.state_dict() for k, v in schedulers.items()},
                    "step": progress.step}, tmp)
        os.replace(tmp, self.path)
