"""What a run's key does not hold, recorded with the run and checked when it is read: the numeric
environment it was made in (:func:`numeric_environment`; a run made elsewhere is refused, served
or retrained by ``MLPL_LAB_FOREIGN_RUNS``), the identity of a real dataset's label files
(:func:`data_identity`) and the commit it was made at (:func:`git_commit`, provenance only)."""
from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from .spec import RunSpec

#: environment variable: what to do with a run made in another numeric environment
#: (:data:`FOREIGN_POLICIES`; default ``"refuse"``)
FOREIGN_ENV = "MLPL_LAB_FOREIGN_RUNS"
FOREIGN_POLICIES = ("refuse", "serve", "retrain")
#: the fields of :func:`numeric_environment` a stored run must share with this process
CHECKED_ENVIRONMENT = ("torch", "device", "amp_dtype")


class ForeignRunError(RuntimeError):
    """A stored run was made in another numeric environment (torch version, device, AMP dtype)."""


def git_commit() -> Optional[str]:
    """The commit the project's checkout is at (read from ``.git``, no subprocess), or None
    outside a checkout: recorded with each run as provenance, never part of its key."""
    git = Path(__file__).resolve().parents[2] / ".git"
    try:
        if git.is_file():  # a worktree: ".git" names its own folder, whose "commondir" holds the refs
            git = (git.parent / git.read_text().strip().removeprefix("gitdir:").strip()).resolve()
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head[:40] or None
        ref = head[5:]
        common = (git / (git / "commondir").read_text().strip()).resolve() if (git / "commondir").is_file() else git
        for where in (git, common):
            if (where / ref).is_file():
                return (where / ref).read_text().strip()[:40]
        git = common
        for line in (git / "packed-refs").read_text().splitlines():
            if line.endswith(" " + ref):
                return line.split()[0][:40]
    except OSError:
        return None
    return None


# ----------------------------------------------------------------- what the key does not hold
def _amp_dtype_name(device_type: str, amp: bool) -> str:
    """The name of the dtype :func:`mlpl_lab.engine.train.fit` autocasts to on this machine's
    ``device_type`` as the spec asks it (:func:`mlpl_lab.engine.device.requested_autocast_dtype`):
    ``"bfloat16"`` on the CPU and on CUDA devices with bfloat16, ``"float16"`` on CUDA devices
    without it, ``"off"`` without AMP. (What the step ran in is ``precision``.)"""
    from ..engine.device import requested_autocast_dtype

    dtype = requested_autocast_dtype(device_type, amp)  # what the spec asks, not the CPU's precision
    return "off" if dtype is None else str(dtype).removeprefix("torch.")


def training_precision(spec: "RunSpec", device: str) -> str:
    """The precision of the training step of ``spec`` in this process: the name of the autocast
    dtype :func:`mlpl_lab.engine.train.fit` uses (``"bfloat16"``, ``"float16"``) or ``"float32"``.
    For a spec without AMP on the CPU it follows ``MLPL_LAB_CPU_PRECISION``
    (:func:`mlpl_lab.engine.device.cpu_precision`), which is not part of the key."""
    from ..engine.device import autocast_dtype

    dtype = autocast_dtype(device, bool(spec.train.get("amp", False)))
    return "float32" if dtype is None else str(dtype).removeprefix("torch.")


def numeric_environment(spec: "RunSpec") -> Dict[str, Any]:
    """What decides a run's numbers besides its spec and the numerics version: the torch version (without
    its build tag), the device type the spec trains on here, the AMP dtype the spec asks for and the
    world size; and, recorded but never checked, so a store is served on any machine:
    ``threads``, the intra-op threads of the training process (``torch.get_num_threads()``; a
    retrain meant to reproduce a run bitwise pins it, :func:`mlpl_lab.runs.workers.reproduce`),
    and ``precision``, the precision of the training step (:func:`training_precision`: a CPU run
    without AMP is ``"bfloat16"`` under ``MLPL_LAB_CPU_PRECISION=bf16``, or ``auto`` on a CPU with
    native bfloat16, else ``"float32"``; runs stored before it was recorded were float32). So a
    pack trained in bfloat16 is served on a laptop without it, and a float32 pack on one with it."""
    import torch

    from ..engine import distributed
    from ..engine.device import pick_device

    device = pick_device(spec.train.get("device", "auto")).type
    return {"torch": torch.__version__.split("+")[0], "device": device,
            "amp_dtype": _amp_dtype_name(device, bool(spec.train.get("amp", False))),
            "world_size": int(distributed.world_size()), "threads": int(torch.get_num_threads()),
            "precision": training_precision(spec, device)}


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


def same_data(spec: RunSpec, summary: Dict[str, Any], path: Path) -> bool:
    now = data_identity(spec.data)
    then = summary.get("data_identity")
    if now == then:
        return True
    changed = sorted(k for k in set(now or {}) | set(then or {})
                     if (now or {}).get(k) != (then or {}).get(k))
    warnings.warn(f"run store: the data under {spec.data.get('root')!r} changed since {path} was "
                  f"made ({', '.join(changed) or 'its identity'}); the run is trained again",
                  RuntimeWarning, stacklevel=4)
    return False

def same_environment(spec: RunSpec, summary: Dict[str, Any], path: Path) -> bool:
    then = summary.get("environment") or {}
    now = numeric_environment(spec)
    diff = {k: (then.get(k), now[k]) for k in CHECKED_ENVIRONMENT if then.get(k) != now[k]}
    if not diff:
        return True
    policy = _foreign_policy()
    said = "; ".join(f"{k} {a} there, {b} here" for k, (a, b) in diff.items())
    if policy == "serve":
        warnings.warn(f"run store: serving {path}, made in another environment ({said})",
                      RuntimeWarning, stacklevel=4)
        return True
    if policy == "retrain":
        return False
    raise ForeignRunError(
        f"the stored run {path} ({spec.describe()}) was made in another numeric environment: "
        f"{said}. Set {FOREIGN_ENV}=serve to read such runs anyway, or {FOREIGN_ENV}=retrain "
        "to train them again here (that replaces them in the store).")
