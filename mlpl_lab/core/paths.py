"""Where mlpl_lab keeps what it generates: ``data/`` of the project, or ``$MLPL_LAB_DATA``.

* ``data_root()/cache`` — generated scene sets (keyed by their parameters);
* ``data_root()/runs`` — the run store (:mod:`mlpl_lab.runs.store`).

Set the environment variable ``MLPL_LAB_DATA`` to move both (a faster disk, a shared
folder, a temporary directory for tests).
"""
from __future__ import annotations

import os
from pathlib import Path

PROJECT_DATA = Path(__file__).resolve().parents[2] / "data"


def data_root() -> Path:
    env = os.environ.get("MLPL_LAB_DATA")
    return Path(env).expanduser() if env else PROJECT_DATA


def cache_dir() -> Path:
    return data_root() / "cache"


def runs_dir() -> Path:
    return data_root() / "runs"
