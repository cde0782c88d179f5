"""Per-test durations of a test run: the whole suite (``make test-all``, what CI runs) or the fast
tier (``make test``), on the same two xdist workers the Makefile uses.

``python benchmarks/test_durations.py [--tier all|fast]`` (``make test-durations``: the whole suite)

Runs pytest with ``--durations=0`` and a JUnit XML report in a fresh store and writes
``benchmarks/records/test_durations.json`` (``--tier fast``: ``test_durations_fast.json``, a record
for the session that asks for it; the tree keeps the whole suite's, which marks every test of the
fast tier and sums their seconds under ``fast_tier``): the
wall seconds of the run, pytest's exit code and counts, every test's seconds (setup + call +
teardown, as the JUnit report counts them) and outcome, whether the test is in the fast tier, the
seconds per file, the load average before and after (a figure taken under load overstates the
time) and the commit. ``--junit FILE`` writes the record from a JUnit XML report of a run made
already (``make test PYTEST_ARGS=--junitxml=FILE``) instead of running pytest again.
The fast tier's selection is read from the Makefile (``FAST_MARKERS``), so it is the one
``make test`` runs.

**Layout** (:func:`layout`, ``"format": 2``): ``durations`` is ``{file: {test: seconds}}``, each
file's tests longest first, with the tests that did not pass under ``not_passed`` (``{node id:
outcome}``) and those outside the fast tier under ``outside_fast_tier``: the same facts as a list
of one object per test (format 1, which ``tests/scheduling.py`` still reads) in less than half the
bytes, each file's tests on one line (:func:`record_text`). ``--reformat FILE`` rewrites a record
of either format in this layout and changes no value.
"""
from __future__ import annotations

import argparse
import collections
import datetime as _dt
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORDS = ROOT / "benchmarks" / "records"
XDIST = ["-n", "2", "--dist", "loadfile"]


def fast_markers() -> str:
    """The fast tier's marker expression, as the Makefile gives it to ``make test``."""
    m = re.search(r"^FAST_MARKERS\s*:?=\s*(.+)$", (ROOT / "Makefile").read_text(), re.M)
    if not m:
        raise SystemExit("Makefile: no FAST_MARKERS line (the fast tier's -m expression)")
    return m.group(1).strip()


def _load():
    return [round(x, 2) for x in os.getloadavg()]


def _nodeid(case: ET.Element) -> str:
    """pytest's node id from a JUnit test case (classname ``tests.test_x`` or ``tests.test_x.Class``)."""
    parts = case.get("classname", "").split(".")
    file = [p for p in parts if p.startswith("test_")][:1]
    idx = parts.index(file[0]) if file else len(parts) - 1
    path = "/".join(parts[: idx + 1]) + ".py"
    return "::".join([path, *parts[idx + 1:], case.get("name", "")])


def read_junit(path: Path) -> list[dict]:
    tests = []
    for case in ET.parse(path).getroot().iter("testcase"):
        kinds = {child.tag for child in case}
        outcome = ("failed" if kinds & {"failure", "error"} else
                   "skipped" if "skipped" in kinds else "passed")
        tests.append({"test": _nodeid(case), "seconds": round(float(case.get("time") or 0.0), 2),
                      "outcome": outcome})
    return tests


def fast_ids(env: dict) -> set[str]:
    """The node ids ``make test`` selects (pytest --collect-only with the fast tier's markers)."""
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "--collect-only", "-m", fast_markers()], cwd=ROOT, env=env,
                         capture_output=True, text=True).stdout
    return {line.strip() for line in out.splitlines() if "::" in line}


def layout(tests: list[dict]) -> dict:
    """The record's fields that list the tests (see the module docstring): ``tests`` is one
    ``{"test", "seconds", "outcome", "fast_tier"}`` object per test, longest first."""
    durations: dict[str, dict[str, float]] = {}
    for t in tests:
        file, _, name = t["test"].partition("::")
        durations.setdefault(file, {})[name] = t["seconds"]
    return {"format": 2, "durations": durations,
            "not_passed": {t["test"]: t["outcome"] for t in tests if t["outcome"] != "passed"},
            "outside_fast_tier": [t["test"] for t in tests if not t["fast_tier"]]}


def unlayout(record: dict) -> list[dict]:
    """One ``{"test", "seconds", "outcome", "fast_tier"}`` object per test of a record of either
    format, longest first (ties in the record's order)."""
    if isinstance(record["durations"], list):
        return sorted(record["durations"], key=lambda t: -t["seconds"])
    not_passed, outside = record.get("not_passed", {}), set(record.get("outside_fast_tier", []))
    tests = [{"test": f"{file}::{name}", "seconds": seconds} for file, per in record["durations"].items()
             for name, seconds in per.items()]
    for t in tests:
        t["outcome"] = not_passed.get(t["test"], "passed")
        t["fast_tier"] = t["test"] not in outside
    return sorted(tests, key=lambda t: -t["seconds"])


def write_record(record: dict, out: Path) -> None:
    """``record`` (its ``durations`` as one object per test) to ``out`` in the current layout."""
    tests = unlayout(record)
    body = {k: v for k, v in record.items() if k not in ("format", "durations", "not_passed", "outside_fast_tier")}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(record_text(body | layout(tests)))
    tmp.replace(out)


def record_text(data: dict) -> str:
    """``data`` (a record in the layout of format 2) as JSON indented by one space, each file's
    ``durations`` on one line: a diff between two records names the files whose tests moved."""
    fields = []
    for key, value in data.items():
        if key == "durations":
            text = "{\n" + ",\n".join(f"  {json.dumps(f)}: {json.dumps(per)}" for f, per in value.items()) + "\n }"
        else:
            text = json.dumps(value, indent=1).replace("\n", "\n ")
        fields.append(f" {json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(fields) + "\n}\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tier", choices=("all", "fast"), default="all")
    ap.add_argument("--junit", help="a JUnit XML report of a run made already: record it, run nothing")
    ap.add_argument("--seconds", type=float, help="with --junit: the run's wall seconds (`time make test`)")
    ap.add_argument("--out", help="the record (default benchmarks/records/test_durations[_fast].json)")
    ap.add_argument("--reformat", metavar="FILE", help="rewrite the record FILE in the current layout, run nothing")
    args, pytest_args = ap.parse_known_args(argv)
    if args.reformat:
        path = Path(args.reformat)
        write_record(json.loads(path.read_text()), path)
        print(f"{path}: rewritten in the layout of format 2 ({path.stat().st_size} bytes)")
        return 0
    out = Path(args.out) if args.out else RECORDS / ("test_durations.json" if args.tier == "all"
                                                      else "test_durations_fast.json")
    env = os.environ | {"MLPL_LAB_PROGRESS": "0", "MPLBACKEND": "Agg",
                        "MLPL_LAB_DATA": tempfile.mkdtemp(prefix="test_durations_data_")}
    selection = ["-m", fast_markers()] if args.tier == "fast" else []
    command = ["pytest", "-q", *XDIST, *selection, "--durations=0", *pytest_args]
    load_before = _load()
    if args.junit:
        junit, rc, seconds = Path(args.junit), None, args.seconds
        command = None
    else:
        junit = Path(tempfile.mkdtemp(prefix="test_durations_")) / "junit.xml"
        start = time.perf_counter()
        rc = subprocess.call([sys.executable, "-m", *command, f"--junitxml={junit}"], cwd=ROOT, env=env)
        seconds = round(time.perf_counter() - start, 1)
    if not junit.exists():
        print(f"no JUnit report at {junit} (pytest exit {rc}): no record written")
        return rc or 1
    tests = sorted(read_junit(junit), key=lambda t: -t["seconds"])
    fast = fast_ids(env)
    for t in tests:
        t["fast_tier"] = t["test"] in fast
    counts = collections.Counter(t["outcome"] for t in tests)
    per_file = collections.defaultdict(float)
    for t in tests:
        per_file[t["test"].split("::")[0]] += t["seconds"]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip() or None
    import torch

    record = {
        "what": f"per-test durations of {'the whole suite (make test-all)' if args.tier == 'all' else 'the fast tier (make test)'}"
                " on 2 xdist workers, one torch thread each (benchmarks/test_durations.py)",
        "started": _dt.datetime.now().isoformat(timespec="seconds"), "commit": commit,
        "machine": {"python": platform.python_version(), "torch": torch.__version__, "cpus": os.cpu_count(),
                    "platform": platform.platform()},
        "command": " ".join(command) if command else f"recorded from {junit.name}",
        "pytest_exit": rc, "wall_seconds": seconds,
        "load_average_before": None if args.junit else load_before,
        "load_average_after": None if args.junit else _load(),
        "counts": dict(counts), "tests": len(tests),
        "test_seconds": round(sum(t["seconds"] for t in tests), 1),
        "fast_tier": {"tests": sum(t["fast_tier"] for t in tests),
                      "test_seconds": round(sum(t["seconds"] for t in tests if t["fast_tier"]), 1),
                      "markers": fast_markers()},
        "seconds_per_file": {k: round(v, 1) for k, v in sorted(per_file.items(), key=lambda kv: -kv[1])},
        "durations": tests,
    }
    write_record(record, out)
    print(f"{len(tests)} tests ({dict(counts)}), {record['test_seconds'] / 60:.1f} min of test time"
          + (f", {seconds / 60:.1f} min wall" if seconds else "") + f", pytest exit {rc}: {out}")
    return rc or 0


if __name__ == "__main__":
    sys.exit(main())
