"""Run specifications and the run store: every training run is described once and kept on disk.

A :class:`RunSpec` fully describes a run: the method and its hyperparameters, the label
regime and its parameters, the seed, the data settings and the training settings. Its
**key** is a hash of the spec and the versions of the components it uses (engine, data, model,
head, method family: :data:`mlpl_lab.core.numerics.VERSIONS`, explicit numbers bumped when a
change alters what a component computes; golden records in ``tests/goldens/`` make CI fail on a
change that alters a run without a bump). A comment, a renamed file or a moved module changes no
key, and a bump re-keys only the runs that use the component, so a stored run or a shipped course
pack stays valid across refactors. Each run also records the versions its key holds and the
commit it was made at (provenance only).

What the key does not hold is **recorded with the run and checked when it is read**:

* the *numeric environment* (torch version, device type, AMP dtype, world size, threads;
  :func:`numeric_environment`). A stored run whose torch version, device type or AMP dtype
  differs from what this process would train it with is refused with a message naming the
  difference (:class:`ForeignRunError`), before any training; ``MLPL_LAB_FOREIGN_RUNS=serve``
  serves it anyway (e.g. a GPU-made store read on a laptop), ``=retrain`` trains it here
  instead. The environment is not in the key so that a reading elsewhere never silently
  retrains (or overwrites) a store. The world size and the thread count are recorded but never
  refused: training a spec under torchrun (``mlpl_lab.commands.torchrun``) or on single-thread workers
  (:mod:`mlpl_lab.runs.workers`) is how a store is filled for the notebooks.
* the *identity of a real dataset* (:func:`data_identity`: size and sha256 of its label files):
  the key holds the root's path only, so a run whose label files changed is treated as missing
  (retrained), with a warning naming the file.

**Seeds** mean one thing everywhere: seed ``s`` draws the data split (train/val/test scenes),
the observed labels and the network initialisation. A profile's ``seeds`` are that many
independent splits.

The store lives under ``data/runs/`` (``$MLPL_LAB_DATA/runs`` when set), one folder per key::

    <key>/spec.json      the spec (readable, and re-checked on load)
    <key>/history.json   every epoch's metrics and diagnostics, the probes before training
    <key>/summary.json   best-val epoch, its test metrics, wall time, when it was made, the
                         environment, the weights' sha256
    <key>/weights.pt     the best-val epoch's weights and the method's final label state
                         (tensors, dicts, lists, numbers: loaded with ``weights_only=True``)

**Damage and sharing.** A run is written to a temporary folder (``.tmp-<key>.<pid>.<ns>.<host>``)
and renamed into place, so a reader sees a whole run or none. Two processes writing one key
both succeed: the second finds the first's run and keeps it (the same spec and code give the
same run), unless that run is damaged or older than ``--fresh``, which it moves aside and
replaces. A damaged folder (unreadable JSON, a truncated or altered weights file: the sha256
in ``summary.json`` is checked) is reported with its path and treated as missing, so it is
retrained. ``mlpl-lab store --clear`` deletes the finished runs and only those temporary folders
whose process is gone (or that are older than :data:`STALE_TMP_HOURS` hours); another
process's write in progress is left alone. ``mlpl-lab report --fresh`` ignores every run made
before it started.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional

from .. import __version__
from ..core.convergence import run_convergence
from ..core.history import EpochRows
from ..core.numerics import KEY_SCHEME
from ..core.paths import runs_dir
from .access import log_access
from .components import versions_of
from .environment import (_file_sha256, data_identity, git_commit, numeric_environment, same_data,
                          same_environment)
from .folders import DamagedRunError, _abandoned, _tmp_name, publish, read_run
from .spec import RunSpec

#: environment variable: ignore stored runs created before this UNIX time (``--fresh``)
FRESH_ENV = "MLPL_LAB_FRESH_AFTER"


def _loadable(value: Any, where: str) -> Any:
    """``value`` in the types ``torch.load(weights_only=True)`` reads back: tensors, dicts, lists,
    tuples, numbers, strings, None. NumPy arrays become tensors and NumPy scalars numbers;
    anything else is refused, naming where it sits (a method's ``extra_state``)."""
    import torch

    if value is None or isinstance(value, (bool, int, float, str, torch.Tensor, torch.Size,
                                           torch.dtype)):
        return value
    if isinstance(value, dict):
        return type(value)((k, _loadable(v, f"{where}[{k!r}]")) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return type(value)(_loadable(v, f"{where}[{i}]") for i, v in enumerate(value))
    if type(value).__module__ == "numpy":
        import numpy as np

        if isinstance(value, np.ndarray):
            return torch.from_numpy(np.array(value))
        if isinstance(value, np.generic):
            return value.item()
    raise TypeError(f"the run store keeps tensors, dicts, lists, numbers and strings (so it loads with "
                    f"weights_only=True); {where} is a {type(value).__module__}.{type(value).__name__}: "
                    "convert it in the method's extra_state()/weights_state()")


@dataclass
class StoredRun(EpochRows):
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
    #: the verdict of its row's pilot (:func:`mlpl_lab.protocol.pilots.pilot_verdict`: the row's
    #: first run trained 4/3 as long), set where the pilot is stored; it then decides
    #: :attr:`converged` in place of the last-quarter criterion
    pilot: Optional[Dict[str, Any]] = None

    @property
    def convergence(self) -> Dict[str, Any]:
        """The convergence record of :mod:`mlpl_lab.core.convergence` (written with the run); where
        its row's pilot is stored (:attr:`pilot`), ``converged``, ``criterion`` and ``reason`` are the
        pilot's and ``last_quarter`` keeps the run's own ``{"converged", "reason"}``."""
        own = self.summary.get("convergence") or run_convergence(self.history)
        if self.pilot is None:
            return own
        return {**own, "converged": bool(self.pilot["converged"]), "criterion": self.pilot["criterion"],
                "reason": self.pilot["reason"], "pilot": dict(self.pilot),
                "last_quarter": {"converged": own.get("converged"), "reason": own.get("reason")}}

    @property
    def selected(self) -> Dict[str, Dict[str, Any]]:
        """The test scores at the epochs other selection criteria pick (``{"val_obs_mAP": {"epoch":
        e, "test_mAP": ...}}``), written when the test set was scored only at the end; empty for
        runs made before the engine kept them."""
        return self.summary.get("selected") or {}

    @property
    def converged(self) -> bool:
        """Did the row's pilot gain < 0.5 test mAP (:attr:`pilot`, where stored), else did the
        clean-validation curve flatten (:data:`mlpl_lab.core.convergence.CRITERION`)?"""
        return bool(self.convergence["converged"])

    @property
    def environment(self) -> Dict[str, Any]:
        """The numeric environment the run was trained in (:func:`numeric_environment`)."""
        return dict(self.summary.get("environment") or {})

    @property
    def origin(self) -> Optional[Dict[str, Any]]:
        """Where an imported run came from (the pack's name, commit, date, whether its weights
        came along), or None for a run trained in this store."""
        return self.summary.get("_pack")

    def curve(self, key: str = "val_mAP") -> List[float]:
        return [row[key] for row in self.history]

    @property
    def method(self):
        """The trained method at its best-val epoch, rebuilt from the stored weights (CPU)."""
        if self._method is None:
            if self.loader is None:
                raise RuntimeError("this run was not read through a runner; use "
                                   "mlpl_lab.runs.ensure.load_method(run)")
            self._method = self.loader(self)
        return self._method

    def release(self) -> None:
        """Drop the loaded method (memory stays flat across many runs)."""
        self._method = None

    def weights(self) -> Dict[str, Any]:
        """The stored weights and label state, checked against the sha256 recorded with the run
        and loaded with ``weights_only=True`` (a shared store never runs pickled code)."""
        import torch

        if self.path is None:
            raise RuntimeError("this run has no folder in the store")
        origin = self.origin
        if origin is not None and not origin.get("weights", True):
            raise DamagedRunError(
                f"{self.spec.describe()} came from run pack {origin.get('name')!r} without its weights "
                "(records and curves only); import a pack made with --weights all, or retrain the "
                "run here (mlpl-lab report --fresh)")
        log_access(self.path.parent, self.path.name, weights=True)
        path = self.path / "weights.pt"
        try:
            data = path.read_bytes()  # hashed and loaded from the same bytes
        except FileNotFoundError:
            data = b""
        if hashlib.sha256(data).hexdigest() != self.summary.get("weights_sha256"):
            raise DamagedRunError(f"{path} does not match the sha256 recorded with the run (missing, "
                                  "altered, truncated, or replaced by another process since it was read); "
                                  "read the run again, or delete the folder and it is trained again")
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)

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
        """The stored run of ``spec``, or None: absent, damaged (reported with its folder),
        older than ``--fresh``, made on other data, or made in another numeric environment under
        ``MLPL_LAB_FOREIGN_RUNS=retrain``. Under the default policy a run made in another
        environment raises :class:`ForeignRunError`."""
        path = self.path(spec)
        for attempt in range(3):
            if not (path / "summary.json").exists():
                return None
            try:
                summary, stored, hist = read_run(path)
                break
            except FileNotFoundError:  # another writer is replacing this folder: read it again
                time.sleep(0.05 * (attempt + 1))
            except DamagedRunError as exc:
                warnings.warn(f"run store: {exc}; treating the run as missing (it is trained "
                              "again)", RuntimeWarning, stacklevel=2)
                return None
        else:
            return None
        if summary.get("created", 0.0) < self._fresh_after():
            return None
        if stored != spec.as_dict():  # a hash collision or a hand-edited folder
            return None
        if not same_data(spec, summary, path):
            return None
        # an imported run is served whatever environment it was made in: that is a pack's purpose
        if "_pack" not in summary and not same_environment(spec, summary, path):
            return None
        log_access(self.root, spec.key)
        return StoredRun(spec=spec, history=hist["history"], best_epoch=int(summary["best_epoch"]),
                         initial=hist.get("initial", {}), summary=summary, path=path, loader=loader)

    def put(self, spec: RunSpec, history, best_epoch: int, initial, weights: Dict[str, Any],
            extra: Dict[str, Any] | None = None, selected: Dict[str, Any] | None = None) -> Path:
        """Write a finished run atomically (temporary folder, then one rename). When another
        process wrote the same key meanwhile, its run is kept unless it is damaged or older
        than ``--fresh`` (then it is moved aside and replaced). ``selected``: the engine's test
        scores at epochs other criteria pick (``TrainResult.selected``), kept in the summary."""
        import torch

        blob = {"weights": _loadable(weights, "weights_state()"),
                "extra": _loadable(extra or {}, "extra_state()")}
        self.root.mkdir(parents=True, exist_ok=True)
        final = self.path(spec)
        tmp = self.root / _tmp_name(spec.key)
        tmp.mkdir()
        try:
            best = history[best_epoch]
            torch.save(blob, tmp / "weights.pt")
            summary = {"key": spec.key, "describe": spec.describe(), "best_epoch": int(best_epoch),
                       "epochs": len(history), "created": time.time(), "version": __version__,
                       "key_scheme": KEY_SCHEME, "versions": versions_of(spec), "commit": git_commit(),
                       "environment": numeric_environment(spec),
                       "data_identity": data_identity(spec.data),
                       "weights_sha256": _file_sha256(tmp / "weights.pt"),
                       "seconds": float(sum(r.get("seconds", 0.0) for r in history)),
                       "train_seconds": float(sum(r.get("train_seconds", 0.0) for r in history)),
                       "convergence": run_convergence(history),
                       **{k: best[k] for k in ("val_mAP", "test_mAP", "test_CF1", "test_OF1") if k in best}}
            if selected:
                summary["selected"] = selected
            (tmp / "spec.json").write_text(json.dumps(spec.as_dict(), indent=1, sort_keys=True))
            (tmp / "history.json").write_text(json.dumps({"history": history, "initial": initial},
                                                         allow_nan=True))
            (tmp / "summary.json").write_text(json.dumps(summary, indent=1, allow_nan=True))
            publish(tmp, final, self._fresh_after())
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
        """Delete every stored run and the leftovers of interrupted writes, leaving alone the
        temporary folders of writes still in progress (:func:`_abandoned`); returns how many runs."""
        if not self.root.exists():
            return 0
        n = 0
        for p in sorted(self.root.iterdir()):
            if not p.is_dir():
                continue
            if not p.name.startswith("."):
                n += (p / "summary.json").exists()
                shutil.rmtree(p, ignore_errors=True)
            elif p.name.startswith((".tmp-", ".old-")) and _abandoned(p):
                shutil.rmtree(p, ignore_errors=True)
        return n
