"""Run specifications and the run store: every training run is described once and kept on disk.

A :class:`RunSpec` fully describes a run: the method and its hyperparameters, the label
regime and its parameters, the seed, the data settings and the training settings. Its
**key** is a hash of the spec, the package version and a fingerprint of the source of every
module that decides what a run computes (labels, metrics, data, losses, models, methods,
train, the runner and this file), so a code change never serves a stale result while edits
to plots, chapters or notebooks keep the store valid.

**Seeds** mean one thing everywhere: seed ``s`` draws the data split (train/val/test scenes),
the observed labels and the network initialisation. A profile's ``seeds`` are that many
independent splits.

The store lives under ``data/runs/`` (``$MLPL_LAB_DATA/runs`` when set), one folder per key::

    <key>/spec.json      the spec (readable, and re-checked on load)
    <key>/history.json   every epoch's metrics and diagnostics, the probes before training
    <key>/summary.json   best-val epoch, its test metrics, wall time, when it was made
    <key>/weights.pt     the best-val epoch's weights and the method's final label state

Writing is atomic: a run is written to a temporary folder and renamed into place, so an
interrupt never leaves a half-written run. ``mlpl-lab store --clear`` (or deleting the
folder) clears it; ``mlpl-lab report --fresh`` ignores every run made before it started.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional

from . import __version__
from .convergence import run_convergence
from .paths import runs_dir

#: the modules (relative to the package) whose source decides what a run computes
FINGERPRINT_PARTS = ("labels.py", "metrics.py", "paths.py", "convergence.py", "data", "losses", "models",
                     "methods", "train.py", "runner.py", "store.py")

#: environment variable: ignore stored runs created before this UNIX time (``--fresh``)
FRESH_ENV = "MLPL_LAB_FRESH_AFTER"


def _canonical(value: Any) -> Any:
    """JSON-able, order-independent form of a spec value (tuples become lists)."""
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, float):
        return float(value)
    if hasattr(value, "item"):  # numpy / torch scalars
        return _canonical(value.item())
    raise TypeError(f"a run spec holds literals only (numbers, strings, lists, dicts); got "
                    f"{type(value).__name__}: {value!r}")


@dataclass(frozen=True, eq=False)
class RunSpec:
    """One training run, fully described (see the module docstring). Build one with
    :meth:`mlpl_lab.profiles.Profile.spec`; ``init_from`` names the run whose best weights a
    second stage starts from (LAC, every network whole); ``backbone_from`` names the pretraining
    run whose backbone every network of this run starts from, with a freshly initialised head
    (the lab's stand-in for an ImageNet backbone: :meth:`mlpl_lab.profiles.Profile.pretrain_spec`).
    Both are specs, so a run's key follows the run it starts from."""

    method: str
    method_params: Dict[str, Any] = field(default_factory=dict)
    regime: str = "single_positive"
    regime_params: Dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    data: Dict[str, Any] = field(default_factory=dict)
    train: Dict[str, Any] = field(default_factory=dict)
    init_from: Optional["RunSpec"] = None
    backbone_from: Optional["RunSpec"] = None

    def as_dict(self) -> Dict[str, Any]:
        return {"method": self.method, "method_params": _canonical(self.method_params),
                "regime": self.regime, "regime_params": _canonical(self.regime_params),
                "seed": int(self.seed), "data": _canonical(self.data), "train": _canonical(self.train),
                "init_from": None if self.init_from is None else self.init_from.as_dict(),
                "backbone_from": None if self.backbone_from is None else self.backbone_from.as_dict()}

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "RunSpec":
        return cls(method=d["method"], method_params=dict(d["method_params"]), regime=d["regime"],
                   regime_params=dict(d["regime_params"]), seed=int(d["seed"]), data=dict(d["data"]),
                   train=dict(d["train"]),
                   init_from=None if d.get("init_from") is None else cls.from_dict(d["init_from"]),
                   backbone_from=None if d.get("backbone_from") is None else cls.from_dict(d["backbone_from"]))

    def canonical_json(self) -> str:
        return json.dumps(self.as_dict(), sort_keys=True, separators=(",", ":"))

    @property
    def key(self) -> str:
        h = hashlib.sha256(self.canonical_json().encode())
        h.update(__version__.encode())
        h.update(source_fingerprint().encode())
        return h.hexdigest()[:20]

    def __eq__(self, other) -> bool:
        return isinstance(other, RunSpec) and self.canonical_json() == other.canonical_json()

    def __hash__(self) -> int:
        return hash(self.canonical_json())

    def replace(self, **changes) -> "RunSpec":
        d = {"method": self.method, "method_params": self.method_params, "regime": self.regime,
             "regime_params": self.regime_params, "seed": self.seed, "data": self.data,
             "train": self.train, "init_from": self.init_from, "backbone_from": self.backbone_from}
        d.update(changes)
        return RunSpec(**d)

    def describe(self) -> str:
        hp = ", ".join(f"{k}={v}" for k, v in sorted(self.method_params.items()))
        rp = ", ".join(f"{k}={v}" for k, v in sorted(self.regime_params.items()))
        return (f"{self.method}({hp}) · {self.regime}({rp}) · seed {self.seed}"
                + (" · stage 2" if self.init_from is not None else "")
                + (" · pretrained backbone" if self.backbone_from is not None else ""))


_FINGERPRINT: Dict[str, str] = {}


def source_fingerprint() -> str:
    """sha256 of the source of :data:`FINGERPRINT_PARTS` (computed once per process)."""
    if "value" not in _FINGERPRINT:
        root = Path(__file__).resolve().parent
        h = hashlib.sha256()
        for part in FINGERPRINT_PARTS:
            path = root / part
            files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
            for f in files:
                h.update(str(f.relative_to(root)).encode())
                h.update(f.read_bytes())
        _FINGERPRINT["value"] = h.hexdigest()[:16]
    return _FINGERPRINT["value"]


@dataclass
class StoredRun:
    """A finished run read from the store: its spec, history and summary; the method with
    the best-val weights is loaded on request (``run.method``, on CPU) and not kept otherwise."""

    spec: RunSpec
    history: List[Dict[str, Any]]
    best_epoch: int
    initial: Dict[str, float]
    summary: Dict[str, Any]
    path: Optional[Path] = None
    loader: Optional[Callable[["StoredRun"], Any]] = None
    _method: Any = None

    @property
    def best(self) -> Dict[str, Any]:
        """The history row of the epoch with the best val mAP (what tables report)."""
        return self.history[self.best_epoch]

    @property
    def final(self) -> Dict[str, Any]:
        return self.history[-1]

    @property
    def convergence(self) -> Dict[str, Any]:
        """The convergence record of :mod:`mlpl_lab.convergence` (written with the run)."""
        return self.summary.get("convergence") or run_convergence(self.history)

    @property
    def converged(self) -> bool:
        """Did the clean-validation curve flatten (:data:`mlpl_lab.convergence.CRITERION`)?"""
        return bool(self.convergence["converged"])

    def curve(self, key: str = "val_mAP") -> List[float]:
        return [row[key] for row in self.history]

    @property
    def method(self):
        """The trained method at its best-val epoch, rebuilt from the stored weights (CPU)."""
        if self._method is None:
            if self.loader is None:
                raise RuntimeError("this run was not read through a runner; use "
                                   "mlpl_lab.runner.load_method(run)")
            self._method = self.loader(self)
        return self._method

    def release(self) -> None:
        """Drop the loaded method (memory stays flat across many runs)."""
        self._method = None

    def weights(self) -> Dict[str, Any]:
        import torch

        if self.path is None:
            raise RuntimeError("this run has no folder in the store")
        return torch.load(self.path / "weights.pt", map_location="cpu", weights_only=False)

    def __repr__(self) -> str:
        return (f"StoredRun({self.spec.describe()}, best epoch {self.best_epoch + 1}, "
                f"test mAP {self.best.get('test_mAP', float('nan')):.2f})")


class RunStore:
    """The runs on disk (default ``data/runs``; ``MLPL_LAB_DATA`` moves it)."""

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = Path(root) if root is not None else runs_dir()

    def path(self, spec: RunSpec) -> Path:
        return self.root / spec.key

    def _fresh_after(self) -> float:
        try:
            return float(os.environ.get(FRESH_ENV, "0"))
        except ValueError:
            return 0.0

    def get(self, spec: RunSpec, loader=None) -> Optional[StoredRun]:
        """The stored run of ``spec``, or None (absent, or older than ``--fresh``)."""
        path = self.path(spec)
        if not (path / "summary.json").exists():
            return None
        summary = json.loads((path / "summary.json").read_text())
        if summary.get("created", 0.0) < self._fresh_after():
            return None
        stored = json.loads((path / "spec.json").read_text())
        if stored != spec.as_dict():  # a hash collision or a hand-edited folder
            return None
        hist = json.loads((path / "history.json").read_text())
        return StoredRun(spec=spec, history=hist["history"], best_epoch=int(summary["best_epoch"]),
                         initial=hist.get("initial", {}), summary=summary, path=path, loader=loader)

    def put(self, spec: RunSpec, history, best_epoch: int, initial, weights: Dict[str, Any],
            extra: Dict[str, Any] | None = None) -> Path:
        """Write a finished run atomically (temporary folder, then one rename)."""
        import torch

        self.root.mkdir(parents=True, exist_ok=True)
        final = self.path(spec)
        tmp = self.root / f".tmp-{spec.key}-{os.getpid()}-{time.time_ns()}"
        tmp.mkdir()
        try:
            best = history[best_epoch]
            summary = {"key": spec.key, "describe": spec.describe(), "best_epoch": int(best_epoch),
                       "epochs": len(history), "created": time.time(), "version": __version__,
                       "source": source_fingerprint(),
                       "seconds": float(sum(r.get("seconds", 0.0) for r in history)),
                       "train_seconds": float(sum(r.get("train_seconds", 0.0) for r in history)),
                       "convergence": run_convergence(history),
                       **{k: best[k] for k in ("val_mAP", "test_mAP", "test_CF1", "test_OF1") if k in best}}
            (tmp / "spec.json").write_text(json.dumps(spec.as_dict(), indent=1, sort_keys=True))
            (tmp / "history.json").write_text(json.dumps({"history": history, "initial": initial},
                                                         allow_nan=True))
            torch.save({"weights": weights, "extra": extra or {}}, tmp / "weights.pt")
            (tmp / "summary.json").write_text(json.dumps(summary, indent=1, allow_nan=True))
            if final.exists():
                shutil.rmtree(final)
            os.replace(tmp, final)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return final

    def keys(self) -> Iterator[str]:
        if not self.root.exists():
            return iter(())
        return (p.name for p in sorted(self.root.iterdir())
                if p.is_dir() and not p.name.startswith(".") and (p / "summary.json").exists())

    def clear(self) -> int:
        """Delete every stored run (and leftovers of interrupted writes); returns how many runs."""
        n = len(list(self.keys()))
        if self.root.exists():
            shutil.rmtree(self.root)
        return n
