"""The run keys a pack of parts serves, read with json alone (independently of mlpl_lab): the
index's ``runs`` (format 2), or each listed part's run list beside it, less the runs the index
says a later part superseded (format 3)."""
from __future__ import annotations

import json
from pathlib import Path


def pack_keys(folder: Path) -> set:
    index = json.loads((Path(folder) / "pack.json").read_text())
    if "runs" in index:
        return {r["key"] for r in index["runs"]}
    keys = set()
    for part in index["parts"]:
        rows = json.loads((Path(folder) / "parts" / (part["file"][: -len(".mlplpart")] + ".runs.json")).read_text())
        keys |= {r["key"] for r in rows} - set(part.get("superseded", []))
    return keys
