"""Writing a benchmark's record (shared by the benchmark scripts)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Mapping, Optional


def write_record(out: str | Path, record: Dict[str, Any], now: Optional[Mapping[str, Any]] = None) -> Path:
    """Write ``record`` to ``out`` as JSON. ``now``: a run without its baseline — keep the
    before/after pair ``out`` holds (measured together) and replace only its ``labels.now`` with
    this run's, ``now`` added to it."""
    out = Path(out)
    if now is not None and out.exists():
        kept = json.loads(out.read_text())
        kept.setdefault("labels", {})["now"] = record["labels"]["now"] | dict(now)
        record = kept
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"record: {out}")
    return out
