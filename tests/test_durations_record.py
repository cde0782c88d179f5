"""The per-test durations record (benchmarks/test_durations.py) in its compact layout."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("test_durations_script", ROOT / "benchmarks" / "test_durations.py")
script = importlib.util.module_from_spec(spec)
spec.loader.exec_module(script)

#: a hand-made record of format 1: one object per test (node ids with a class, a parametrised
#: name holding "::", a skipped test and one outside the fast tier)
TESTS = [
    {"test": "tests/test_b.py::test_long", "seconds": 9.5, "outcome": "passed", "fast_tier": False},
    {"test": "tests/test_a.py::TestX::test_y[p::q]", "seconds": 2.5, "outcome": "passed", "fast_tier": True},
    {"test": "tests/test_a.py::test_z", "seconds": 1.0, "outcome": "skipped", "fast_tier": True},
    {"test": "tests/test_b.py::test_short", "seconds": 0.25, "outcome": "failed", "fast_tier": True},
]


def test_the_layout_keeps_every_value_and_reads_back(tmp_path):
    """Format 1 written in the layout of format 2 reads back as the same tests, seconds, outcomes
    and tiers (the hand-made list is the oracle), and the other fields stay as they were. Bug
    caught: a test dropped (two tests of one file under one name), an outcome or a tier lost, a
    node id split at the wrong "::"."""
    record = {"what": "x", "wall_seconds": 12.0, "durations": TESTS}
    out = tmp_path / "r.json"
    script.write_record(record, out)
    data = json.loads(out.read_text())
    assert data["format"] == 2 and data["what"] == "x" and data["wall_seconds"] == 12.0
    assert data["durations"] == {"tests/test_b.py": {"test_long": 9.5, "test_short": 0.25},
                                 "tests/test_a.py": {"TestX::test_y[p::q]": 2.5, "test_z": 1.0}}
    assert data["not_passed"] == {"tests/test_a.py::test_z": "skipped", "tests/test_b.py::test_short": "failed"}
    assert data["outside_fast_tier"] == ["tests/test_b.py::test_long"]
    assert script.unlayout(data) == TESTS
    lines = out.read_text().splitlines()
    assert '  "tests/test_b.py": {"test_long": 9.5, "test_short": 0.25},' in lines  # one line per file
    assert '  "tests/test_a.py": {"TestX::test_y[p::q]": 2.5, "test_z": 1.0}' in lines


def test_reformat_rewrites_a_record_in_place_and_is_idempotent(tmp_path):
    """``--reformat`` turns a format 1 file into format 2 with the same values; a second pass
    changes no byte. Bug caught: a reformat that runs pytest, or one that drifts on each pass."""
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"what": "x", "durations": TESTS}, indent=1))
    assert script.main(["--reformat", str(path)]) == 0
    once = path.read_bytes()
    assert script.unlayout(json.loads(once)) == TESTS
    assert script.main(["--reformat", str(path)]) == 0
    assert path.read_bytes() == once


def test_the_committed_record_is_in_the_compact_layout():
    """The record in the tree uses the layout of format 2 (half the bytes of format 1), and its
    fast-tier summary matches the tests it marks."""
    data = json.loads((ROOT / "benchmarks" / "records" / "test_durations.json").read_text())
    assert data.get("format") == 2 and isinstance(data["durations"], dict)
    tests = script.unlayout(data)
    assert len(tests) == data["tests"] == sum(data["counts"].values())
    fast = [t for t in tests if t["fast_tier"]]
    assert len(fast) == data["fast_tier"]["tests"]
    assert abs(sum(t["seconds"] for t in fast) - data["fast_tier"]["test_seconds"]) < 0.5
