"""What the GPU check measured on the card it last ran on (``benchmarks/gpu/check.sh``; its records
in ``benchmarks/records/gpu/``, the newest check's: a check overwrites the one before, which stays in
the repository's history), read for the choices that depend on the card:

* :func:`throughput_choice`: the throughput levers' best setting that the series uses as it stands
  (``throughput.json``'s ``best``: worker processes per device running the profile's own step), its
  total images/s and its gain over one run, with the card and date that measured it;
* :func:`workers_per_device`: how many of the series' worker processes share each GPU
  (:mod:`mlpl_lab.runs.workers`): the measured best, or **1** when no GPU record has the levers
  (the fallback: one run per device, as before the levers were measured).

A CPU rehearsal's records (``cpu_rehearsal``, or a check run in ``rehearse`` mode, which writes under
``rehearsal/``) are never read as a GPU's. Absent in an installed package: every reader falls back."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Dict, Optional

#: the newest GPU check's records (a checkout's; absent in an installed package)
GPU_RECORDS = Path(__file__).resolve().parents[2] / "benchmarks" / "records" / "gpu"
#: worker processes per GPU when no GPU record has the levers
FALLBACK_WORKERS_PER_DEVICE = 1


def read(name: str, records: Path = GPU_RECORDS) -> Optional[Dict[str, Any]]:
    """``records/name.json`` unless it is a CPU rehearsal's (``cpu_rehearsal``, the check's
    ``rehearse`` mode, or an environment without CUDA), or absent, or unreadable: then None."""
    try:
        rec = json.loads((Path(records) / f"{name}.json").read_text())
    except (OSError, ValueError):
        return None
    env = rec.get("environment") or {}
    if rec.get("cpu_rehearsal") or env.get("mode", "gpu") != "gpu" or ("cuda" in env and not env["cuda"]):
        return None
    return rec


def card(rec: Dict[str, Any]) -> str:
    """``"NVIDIA H200, 2026-11-29"``: the card and the date of a record."""
    env = rec.get("environment") or {}
    return f"{env.get('device', 'an unnamed GPU')}, {str(env.get('date', '?'))[:10]}"


def throughput_choice(records: Path = GPU_RECORDS) -> Optional[Dict[str, Any]]:
    """The levers' best setting the series uses (``workers_per_device``, ``images_per_s_total``,
    ``images_per_s_per_run``, ``total_over_one_run``) and ``card``; None when the newest GPU
    record has no levers (the first check measured one run only)."""
    rec = read("throughput", records)
    best = (rec or {}).get("best")
    try:
        per_device, gain = int(best["workers_per_device"]), float(best["total_over_one_run"])
    except (TypeError, KeyError, ValueError):
        return None
    if per_device < 1 or not (gain > 0 and math.isfinite(gain)):
        return None
    return dict(best, workers_per_device=per_device, total_over_one_run=gain, card=card(rec))


def workers_per_device(records: Path = GPU_RECORDS) -> int:
    """Worker processes per GPU for the series: the measured best (:func:`throughput_choice`), or
    :data:`FALLBACK_WORKERS_PER_DEVICE` without a GPU record of the levers."""
    choice = throughput_choice(records)
    return FALLBACK_WORKERS_PER_DEVICE if choice is None else choice["workers_per_device"]
