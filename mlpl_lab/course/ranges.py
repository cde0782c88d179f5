"""The instructor guide's expected result ranges, computed from the records of executed notebooks
(never typed)."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Dict, List

from .notebooks import RANGES_FILE, chapter_notebooks

# ---------------------------------------------------------------------------------------
# the instructor guide's expected ranges, computed from records
# ---------------------------------------------------------------------------------------
def _numbers(value: Any, prefix: str = ""):
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, (int, float)):
        if math.isfinite(value):
            yield prefix, float(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _numbers(v, f"{prefix} / {k}" if prefix else str(k))


GUIDE_RECORDS = {"00_partial_labels": ["hidden_positive_share", "an_false_negative_rate"],
                 "01_assume_negative": ["mAP", "gap"], "02_gr_loss": ["mAP", "GR_minus_AN"],
                 "03_opml": ["mAP"], "04_cls": ["mAP", "margin_over_AN"], "05_lac": ["mAP"],
                 "06_pu_mlc": ["mAP"], "07_benchmark": ["mAP", "mean_rank"]}
"""Which records the guide's result tables show per chapter."""


def expected_ranges(executed_dirs: Dict[str, Path]) -> Dict[str, Dict[str, Dict[str, str]]]:
    """``{notebook: {"record / key": {profile: value}}}`` read from executed notebooks' records,
    one folder per profile (a value over seeds is already the chapter's mean)."""
    from ..reporting.report import read_records

    out: Dict[str, Dict[str, Dict[str, str]]] = {}
    for profile, folder in executed_dirs.items():
        for path in chapter_notebooks(folder):
            records = read_records(path)
            for name in GUIDE_RECORDS.get(path.stem, []):
                for key, value in _numbers(records.get(name), name):
                    out.setdefault(path.stem, {}).setdefault(key, {})[profile] = f"{value:.3g}"
    return out


def load_ranges(path: Path = RANGES_FILE) -> Dict[str, Dict[str, Dict[str, str]]]:
    """The stored expected ranges (``{notebook: {"record / key": {profile: value}}}``), or {}."""
    return json.loads(Path(path).read_text()) if Path(path).exists() else {}


def merge_ranges(*parts: Dict[str, Dict[str, Dict[str, str]]]) -> Dict[str, Dict[str, Dict[str, str]]]:
    """Later parts win per notebook, record and profile."""
    out: Dict[str, Dict[str, Dict[str, str]]] = {}
    for part in parts:
        for stem, rows in part.items():
            for key, values in rows.items():
                out.setdefault(stem, {}).setdefault(key, {}).update(values)
    return out


def ranges_markdown(ranges: Dict[str, Dict[str, Dict[str, str]]], profiles: List[str]) -> str:
    if not ranges:
        return "_No executed notebooks were found when this page was built: run `make report` first._"
    out = []
    for stem, rows in ranges.items():
        out += [f"### {stem}", "", "| record | " + " | ".join(profiles) + " |",
                "|---|" + "---|" * len(profiles)]
        out += [f"| {key} | " + " | ".join(v.get(p, "—") for p in profiles) + " |" for key, v in rows.items()]
        out.append("")
    return "\n".join(out)


