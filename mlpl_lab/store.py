"""Run specifications and the run store: every training run is described once and kept on disk.

A :class:`RunSpec` fully describes a run: the method and its hyperparameters, the label
regime and its parameters, the seed, the data settings and the training settings. Its
**key** is a hash of the spec and the numerics version (:data:`mlpl_lab.numerics.NUMERICS_VERSION`,
an explicit constant bumped when a change alters what a run computes; golden records in
``tests/goldens/`` make CI fail on a change that alters a run without a bump). A comment, a
renamed file or a moved module changes no key, so a stored run or a shipped course pack stays
valid across refactors. Each run also records the commit it was made at (provenance only).

What the key does not hold is **recorded with the run and checked when it is read**:

* the *numeric environment* (torch version, device type, AMP dtype, world size, threads;
  :func:`numeric_environment`). A stored run whose torch version, device type or AMP dtype
  differs from what this process would train it with is refused with a message naming the
  difference (:class:`ForeignRunError`), before any training; ``MLPL_LAB_FOREIGN_RUNS=serve``
  serves it anyway (e.g. a GPU-made store read on a laptop), ``=retrain`` trains it here
  instead. The environment is not in the key so that a reading elsewhere never silently
  retrains (or overwrites) a store. The world size and the thread count are recorded but never
  refused: training a spec under torchrun (``mlpl_lab.run``) or on single-thread workers
  (:mod:`mlpl_lab.workers`) is how a store is filled for the notebooks.
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

import errno
import hashlib
import io
import json
import os
import shutil
import socket
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from . import __version__
from .convergence import run_convergence
from .numerics import NUMERICS_VERSION
from .paths import runs_dir

#: environment variable: the notebook being run (set by ``mlpl-lab report``; names the access log)
CHAPTER_ENV = "MLPL_LAB_CHAPTER"
#: environment variable: the profile being run (set by ``mlpl-lab report``; names the access log)
PROFILE_ENV = "MLPL_LAB_PROFILE"
#: the file in a run folder that says the run came from a run pack (:mod:`mlpl_lab.pack`)
PACK_FILE = "pack.json"
#: environment variable: ignore stored runs created before this UNIX time (``--fresh``)
FRESH_ENV = "MLPL_LAB_FRESH_AFTER"
#: environment variable: what to do with a run made in another numeric environment
#: (:data:`FOREIGN_POLICIES`; default ``"refuse"``)
FOREIGN_ENV = "MLPL_LAB_FOREIGN_RUNS"
FOREIGN_POLICIES = ("refuse", "serve", "retrain")
#: the fields of :func:`numeric_environment` a stored run must share with this process
CHECKED_ENVIRONMENT = ("torch", "device", "amp_dtype")
#: a temporary folder older than this is an abandoned write, whatever its process
STALE_TMP_HOURS = 6.0


class ForeignRunError(RuntimeError):
    """A stored run was made in another numeric environment (torch version, device, AMP dtype)."""


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
        h.update(f"numerics={NUMERICS_VERSION}".encode())
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
        """One line for progress and errors: method, regime, seed, model (with its settings) and
        epochs — enough to tell apart two runs of one chapter (a control trained longer, an
        LgConv row) — and the start (stage 2, pretrained backbone)."""
        hp = ", ".join(f"{k}={v}" for k, v in sorted(self.method_params.items()))
        rp = ", ".join(f"{k}={v}" for k, v in sorted(self.regime_params.items()))
        mk = ", ".join(f"{k}={v}" for k, v in sorted(self.train.get("model_kwargs", {}).items()))
        model = f" · {self.train['model']}({mk})" if "model" in self.train else ""
        epochs = f" · {self.train['epochs']} epochs" if "epochs" in self.train else ""
        return (f"{self.method}({hp}) · {self.regime}({rp}) · seed {self.seed}{model}{epochs}"
                + (" · stage 2" if self.init_from is not None else "")
                + (" · pretrained backbone" if self.backbone_from is not None else ""))


def git_commit() -> Optional[str]:
    """The commit the project's checkout is at (read from ``.git``, no subprocess), or None
    outside a checkout: recorded with each run as provenance, never part of its key."""
    git = Path(__file__).resolve().parent.parent / ".git"
    try:
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head[:40] or None
        ref = head[5:]
        if (git / ref).is_file():
            return (git / ref).read_text().strip()[:40]
        for line in (git / "packed-refs").read_text().splitlines():
            if line.endswith(" " + ref):
                return line.split()[0][:40]
    except OSError:
        return None
    return None


# ----------------------------------------------------------------- what the key does not hold
def _amp_dtype_name(device_type: str, amp: bool) -> str:
    """The name of the dtype :func:`mlpl_lab.train.fit` autocasts to on this machine's
    ``device_type`` (:func:`mlpl_lab.train.autocast_dtype`, the function ``fit`` itself calls):
    ``"bfloat16"`` on the CPU and on CUDA devices with bfloat16, ``"float16"`` on CUDA devices
    without it, ``"off"`` without AMP."""
    from .train import autocast_dtype

    dtype = autocast_dtype(device_type, amp)
    return "off" if dtype is None else str(dtype).removeprefix("torch.")


def numeric_environment(spec: "RunSpec") -> Dict[str, Any]:
    """What decides a run's numbers besides its spec and the numerics version: the torch version (without
    its build tag), the device type the spec trains on here, the AMP dtype and the world size; and
    ``threads``, the intra-op threads of the training process (``torch.get_num_threads()``:
    recorded, never checked, so a store is served on a machine with another core count; a retrain
    meant to reproduce a run bitwise pins it, :func:`mlpl_lab.workers.reproduce`)."""
    import torch

    from . import distributed
    from .train import pick_device

    device = pick_device(spec.train.get("device", "auto")).type
    return {"torch": torch.__version__.split("+")[0], "device": device,
            "amp_dtype": _amp_dtype_name(device, bool(spec.train.get("amp", False))),
            "world_size": int(distributed.world_size()), "threads": int(torch.get_num_threads())}


def _foreign_policy() -> str:
    policy = os.environ.get(FOREIGN_ENV, "refuse").strip().lower() or "refuse"
    if policy not in FOREIGN_POLICIES:
        raise ValueError(f"{FOREIGN_ENV}={policy!r} is not one of {FOREIGN_POLICIES}; unset it to "
                         "refuse runs made in another environment, 'serve' to read them anyway, "
                         "'retrain' to train them here")
    return policy


#: the files that identify a real dataset's labels, per layout (relative to its root)
_LABEL_FILES = {
    "cole": ("formatted_train_labels.npy", "formatted_train_images.npy",
             "formatted_val_labels.npy", "formatted_val_images.npy"),
    "coco_json": ("annotations/instances_train2014.json", "annotations/instances_val2014.json"),
    "voc_raw": ("ImageSets/Main/train.txt", "ImageSets/Main/val.txt", "Annotations/"),
}
_HASHES: Dict[Tuple, str] = {}


def _file_sha256(path: Path) -> str:
    """sha256 of a file, memoised per process by (path, size, mtime, inode)."""
    st = path.stat()
    memo = (str(path), st.st_size, st.st_mtime_ns, st.st_ino)
    if memo not in _HASHES:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        _HASHES[memo] = h.hexdigest()
    return _HASHES[memo]


def data_identity(data: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """What identifies a spec's data beyond its key: None for the scenes (the key holds every
    generation parameter; a change to the generator bumps the numerics version); for a real dataset, the size and sha256
    of each label file under its root (a folder: the names and sizes of its files), or
    ``"missing"``."""
    if data.get("dataset", "scenes") == "scenes" or data.get("root") is None:
        return None
    root = Path(os.fspath(data["root"])).expanduser()
    layout = data.get("layout", "cole")
    if layout == "voc_raw":  # the devkit may sit under root, root/VOCdevkit/VOC2012
        root = next((c for c in (root / "VOCdevkit" / "VOC2012", root / "VOC2012", root)
                     if (c / "ImageSets" / "Main").is_dir()), root)
    out: Dict[str, Any] = {}
    for rel in _LABEL_FILES.get(layout, ()):
        path = root / rel
        if rel.endswith("/") and path.is_dir():
            listing = sorted((f.name, f.stat().st_size) for f in path.iterdir() if f.is_file())
            out[rel] = {"files": len(listing),
                        "sha256": hashlib.sha256(json.dumps(listing).encode()).hexdigest()}
        elif path.is_file():
            out[rel] = {"size": path.stat().st_size, "sha256": _file_sha256(path)}
        else:
            out[rel] = "missing"
    return out


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
                                   "mlpl_lab.runner.load_method(run)")
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


_RUN_FILES = ("summary.json", "spec.json", "history.json", "weights.pt", PACK_FILE)


def _read_folder(path: Path) -> Dict[str, bytes]:
    """The bytes of a run's files, opened through one descriptor of its folder: a folder another
    process moves aside meanwhile is read whole or raises FileNotFoundError, never mixed with its
    replacement. A missing file is empty (the caller finds it damaged)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        out = {}
        for name in _RUN_FILES:
            try:
                f = os.open(name, os.O_RDONLY, dir_fd=fd)
            except FileNotFoundError:
                if not os.path.exists(path):  # moved away: read again
                    raise
                out[name] = b""
                continue
            with os.fdopen(f, "rb") as fh:
                out[name] = fh.read()
        return out
    finally:
        os.close(fd)


class DamagedRunError(RuntimeError):
    """A run folder that cannot be read whole (the message names the folder and the problem)."""


def _tmp_name(key: str) -> str:
    return f".tmp-{key}.{os.getpid()}.{time.time_ns()}.{socket.gethostname()}"


def _abandoned(path: Path, now: float | None = None) -> bool:
    """Is this temporary folder a write whose process is gone (same host), or older than
    :data:`STALE_TMP_HOURS`? A folder another live process is writing is not."""
    now = time.time() if now is None else now
    try:
        age_h = (now - path.stat().st_mtime) / 3600.0
    except FileNotFoundError:
        return False  # already renamed into place or removed by its writer
    if age_h > STALE_TMP_HOURS:
        return True
    parts = path.name[len(".tmp-"):].split(".", 3)  # key, pid, time, host (_tmp_name)
    try:
        pid, host = int(parts[1]), parts[3]
    except (IndexError, ValueError):
        return False  # not named by this module: judged by its age only
    if host != socket.gethostname():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


def log_access(root: Path, key: str, weights: bool = False) -> None:
    """Note that the notebook being run (``MLPL_LAB_CHAPTER``, under ``MLPL_LAB_PROFILE``) read the
    run ``key`` (or loaded its weights) in the store at ``root``: ``<root>/.access/<profile>/
    <notebook>.jsonl``, which ``mlpl-lab pack export`` reads to know each notebook's runs and
    which of them need their weights. Nothing is written outside ``mlpl-lab report``'s notebooks,
    and a store that cannot be written to is read all the same."""
    chapter, profile = os.environ.get(CHAPTER_ENV), os.environ.get(PROFILE_ENV)
    if not chapter or not profile:
        return
    try:
        log = Path(root) / ".access" / profile / f"{chapter}.jsonl"
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a") as f:
            f.write(json.dumps({"key": key, "weights": bool(weights)}) + "\n")
    except OSError:
        pass


def accessed(root: Path, profile: str, chapter: str) -> Dict[str, bool]:
    """``{key: weights loaded}`` of what ``chapter`` read under ``profile`` (:func:`log_access`);
    empty when it has not been run with ``mlpl-lab report`` on this store."""
    out: Dict[str, bool] = {}
    log = Path(root) / ".access" / profile / f"{chapter}.jsonl"
    if log.exists():
        for line in log.read_text().splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue  # a line cut by an interrupted write
            out[rec["key"]] = out.get(rec["key"], False) or bool(rec.get("weights"))
    return out


def forget_access(root: Path, profile: str, chapter: str) -> None:
    """Start ``chapter``'s access log afresh (``mlpl-lab report`` does, before running it)."""
    (Path(root) / ".access" / profile / f"{chapter}.jsonl").unlink(missing_ok=True)


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

    @staticmethod
    def _read(path: Path) -> Tuple[Dict[str, Any], Dict[str, Any], Dict[str, Any]]:
        """summary, spec and history of a run folder; :class:`DamagedRunError` names what is
        wrong; FileNotFoundError when the folder is absent (or moved away while reading)."""
        texts = _read_folder(path)  # every file from one folder, even if it is replaced meanwhile
        try:
            summary, stored, hist = (json.loads(texts[n]) for n in ("summary.json", "spec.json",
                                                                    "history.json"))
            hist["history"][int(summary["best_epoch"])]
            expected = summary["weights_sha256"]
            origin = json.loads(texts[PACK_FILE]) if texts[PACK_FILE] else None
        except (ValueError, KeyError, IndexError, TypeError) as exc:  # JSONDecodeError is a ValueError
            raise DamagedRunError(f"{path}: unreadable run files ({type(exc).__name__}: {exc})") from None
        if origin is not None:  # imported from a run pack (mlpl_lab.pack)
            summary["_pack"] = origin
            if not origin.get("weights", True) and not texts["weights.pt"]:
                return summary, stored, hist  # records and curves only: no weights to check
        if hashlib.sha256(texts["weights.pt"]).hexdigest() != expected:
            raise DamagedRunError(f"{path}: weights.pt is missing, truncated or altered (its sha256 "
                                  "differs from the one in summary.json)")
        return summary, stored, hist

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
                summary, stored, hist = self._read(path)
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
        if not self._same_data(spec, summary, path):
            return None
        # an imported run is served whatever environment it was made in: that is a pack's purpose
        if "_pack" not in summary and not self._same_environment(spec, summary, path):
            return None
        log_access(self.root, spec.key)
        return StoredRun(spec=spec, history=hist["history"], best_epoch=int(summary["best_epoch"]),
                         initial=hist.get("initial", {}), summary=summary, path=path, loader=loader)

    @staticmethod
    def _same_data(spec: RunSpec, summary: Dict[str, Any], path: Path) -> bool:
        now = data_identity(spec.data)
        then = summary.get("data_identity")
        if now == then:
            return True
        changed = sorted(k for k in set(now or {}) | set(then or {})
                         if (now or {}).get(k) != (then or {}).get(k))
        warnings.warn(f"run store: the data under {spec.data.get('root')!r} changed since {path} was "
                      f"made ({', '.join(changed) or 'its identity'}); the run is trained again",
                      RuntimeWarning, stacklevel=3)
        return False

    @staticmethod
    def _same_environment(spec: RunSpec, summary: Dict[str, Any], path: Path) -> bool:
        then = summary.get("environment") or {}
        now = numeric_environment(spec)
        diff = {k: (then.get(k), now[k]) for k in CHECKED_ENVIRONMENT if then.get(k) != now[k]}
        if not diff:
            return True
        policy = _foreign_policy()
        said = "; ".join(f"{k} {a} there, {b} here" for k, (a, b) in diff.items())
        if policy == "serve":
            warnings.warn(f"run store: serving {path}, made in another environment ({said})",
                          RuntimeWarning, stacklevel=3)
            return True
        if policy == "retrain":
            return False
        raise ForeignRunError(
            f"the stored run {path} ({spec.describe()}) was made in another numeric environment: "
            f"{said}. Set {FOREIGN_ENV}=serve to read such runs anyway, or {FOREIGN_ENV}=retrain "
            "to train them again here (that replaces them in the store).")

    def put(self, spec: RunSpec, history, best_epoch: int, initial, weights: Dict[str, Any],
            extra: Dict[str, Any] | None = None) -> Path:
        """Write a finished run atomically (temporary folder, then one rename). When another
        process wrote the same key meanwhile, its run is kept unless it is damaged or older
        than ``--fresh`` (then it is moved aside and replaced)."""
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
                       "numerics": NUMERICS_VERSION, "commit": git_commit(),
                       "environment": numeric_environment(spec),
                       "data_identity": data_identity(spec.data),
                       "weights_sha256": _file_sha256(tmp / "weights.pt"),
                       "seconds": float(sum(r.get("seconds", 0.0) for r in history)),
                       "train_seconds": float(sum(r.get("train_seconds", 0.0) for r in history)),
                       "convergence": run_convergence(history),
                       **{k: best[k] for k in ("val_mAP", "test_mAP", "test_CF1", "test_OF1") if k in best}}
            (tmp / "spec.json").write_text(json.dumps(spec.as_dict(), indent=1, sort_keys=True))
            (tmp / "history.json").write_text(json.dumps({"history": history, "initial": initial},
                                                         allow_nan=True))
            (tmp / "summary.json").write_text(json.dumps(summary, indent=1, allow_nan=True))
            self._publish(tmp, final)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return final

    def _keeps(self, final: Path) -> bool:
        """Is the run already at ``final`` whole and recent enough for this process?"""
        try:
            summary, _, _ = self._read(final)
        except (FileNotFoundError, DamagedRunError):
            return False
        return summary.get("created", 0.0) >= self._fresh_after()

    def _publish(self, tmp: Path, final: Path) -> None:
        for _ in range(20):
            try:
                os.rename(tmp, final)  # atomic; fails when another writer's run is in place
                return
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
            if self._keeps(final):
                return  # the same spec and code: the other writer's run is this run
            aside = self.root / _tmp_name(final.name).replace(".tmp-", ".old-", 1)
            try:
                os.rename(final, aside)  # damaged or stale: move it aside, then put ours in place
            except FileNotFoundError:
                continue  # another writer moved it first
            shutil.rmtree(aside, ignore_errors=True)
        raise RuntimeError(f"could not store {final}: other processes kept replacing it")

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
