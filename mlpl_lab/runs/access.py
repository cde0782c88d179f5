"""Which runs each notebook read: the access logs that ``mlpl-lab pack export`` reads to know a
notebook's runs and which of them need their weights (:mod:`mlpl_lab.runs.pack`)."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Dict

#: environment variable: the notebook being run (set by ``mlpl-lab report``; names the access log)
CHAPTER_ENV = "MLPL_LAB_CHAPTER"
#: environment variable: the profile being run (set by ``mlpl-lab report``; names the access log)
PROFILE_ENV = "MLPL_LAB_PROFILE"


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
