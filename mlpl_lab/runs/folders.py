"""A run's folder on disk: its files, read whole through one descriptor (:func:`read_run`), and
written atomically: a temporary folder renamed into place (:func:`publish`), whose leftovers are
recognised when their process is gone (:func:`abandoned`)."""
from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import socket
import time
from pathlib import Path
from typing import Any, Dict, Tuple

#: the file in a run folder that says the run came from a run pack (:mod:`mlpl_lab.runs.pack`)
PACK_FILE = "pack.json"
#: a temporary folder older than this is an abandoned write, whatever its process
STALE_TMP_HOURS = 6.0


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
                if _moved_away(fd, path):  # the folder we opened is no longer at path: read again
                    raise
                out[name] = b""
                continue
            with os.fdopen(f, "rb") as fh:
                out[name] = fh.read()
        return out
    finally:
        os.close(fd)


def _moved_away(fd: int, path: Path) -> bool:
    """Is the folder opened as ``fd`` gone from ``path``: moved aside, deleted, or replaced by
    another writer's folder? Bug caught (the two-writers test, under load): checking only that
    *a* folder exists at ``path`` took a file deleted from the moved-aside folder for a file
    missing from the new one, and reported a whole run as damaged."""
    try:
        now = os.stat(path)
    except FileNotFoundError:
        return True
    opened = os.fstat(fd)
    return (now.st_dev, now.st_ino) != (opened.st_dev, opened.st_ino)


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



def read_run(path: Path) -> Tuple[Dict[str, Any], Dict[str, Any], Dict[str, Any]]:
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
    if origin is not None:  # imported from a run pack (mlpl_lab.runs.pack)
        summary["_pack"] = origin
        if not origin.get("weights", True) and not texts["weights.pt"]:
            return summary, stored, hist  # records and curves only: no weights to check
    if hashlib.sha256(texts["weights.pt"]).hexdigest() != expected:
        raise DamagedRunError(f"{path}: weights.pt is missing, truncated or altered (its sha256 "
                              "differs from the one in summary.json)")
    return summary, stored, hist



def whole_since(final: Path, after: float) -> bool:
    """Is the run at ``final`` whole and made at or after ``after`` (``--fresh``)?"""
    try:
        summary, _, _ = read_run(final)
    except (FileNotFoundError, DamagedRunError):
        return False
    return summary.get("created", 0.0) >= after


def record_only(path: Path) -> bool:
    """Is the run at ``path`` a copy imported from a run pack without its weights (records and
    curves only)? Such a run serves every table but cannot start another run (a stage two, a
    fine-tuning): a run trained here replaces it (:func:`publish`)."""
    try:
        origin = json.loads((Path(path) / PACK_FILE).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(origin, dict) and not origin.get("weights", True)


def publish(tmp: Path, final: Path, fresh_after: float) -> None:
    """Rename the written folder ``tmp`` to ``final`` atomically. When another process wrote the
    same key meanwhile, its run is kept (the same spec and numerics give the same run) unless it
    is damaged, older than ``fresh_after`` or a record-only import (:func:`record_only`: the run
    trained here carries the weights it lacks); then it is moved aside and replaced."""
    for _ in range(20):
        try:
            os.rename(tmp, final)  # atomic; fails when another writer's run is in place
            return
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
        if whole_since(final, fresh_after) and not record_only(final):
            return  # the same spec and code: the other writer's run is this run
        aside = final.parent / _tmp_name(final.name).replace(".tmp-", ".old-", 1)
        try:
            os.rename(final, aside)  # damaged or stale: move it aside, then put ours in place
        except FileNotFoundError:
            continue  # another writer moved it first
        shutil.rmtree(aside, ignore_errors=True)
    raise RuntimeError(f"could not store {final}: other processes kept replacing it")
