"""How ``make test`` and ``make test-all`` hand the suite to their two pytest-xdist workers
(``--dist loadfile``; used by ``conftest.pytest_xdist_make_scheduler``).

* **Scopes.** A test file is one unit of work (its module fixtures are built once); every file that
  asks for the executed smoke notebooks is one unit together (they share the session's notebooks
  and the runs those store); and each test named in :data:`OWN_SCOPE` is a unit of its own (the
  notebooks executed under ``gpu_shape``, the suite's longest units: 02 in every whole-suite run,
  every notebook under ``MLPL_LAB_GPU_SHAPE=all``; in one file two of them once kept one worker busy
  while the other sat idle, `benchmarks/records/test_durations.json` has their seconds).
* **Order: longest first.** The units go out in descending order of the seconds the last full run
  recorded for them (``benchmarks/records/test_durations.json``, ``make test-durations``), ties
  and units the record does not know by their number of tests, as xdist orders them. Started last,
  a long unit sets the run's end on its own; started first, it runs beside the short ones.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, Iterable, List, Mapping

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "benchmarks" / "records" / "test_durations.json"
NOTEBOOKS_SCOPE = "executed notebooks"
#: node-id prefixes of tests that are a unit of work each (their fixtures are session-scoped and
#: built by whichever worker runs them)
OWN_SCOPE = ("tests/test_gpu_shape.py::test_notebook_",)


def scope_of(nodeid: str, notebook_files: Iterable[str]) -> str:
    """The unit of work ``nodeid`` belongs to (see the module docstring)."""
    if nodeid.startswith(OWN_SCOPE):
        return nodeid
    file = nodeid.split("::", 1)[0]
    return NOTEBOOKS_SCOPE if file in set(notebook_files) else file


def recorded_tests(record: Path = RECORD) -> Dict[str, float]:
    """``{node id: seconds}`` of every test in a durations record: format 2 (``durations`` is
    ``{file: {test: seconds}}``) or format 1 (a list of ``{"test", "seconds", ...}``). Raises
    ``OSError``/``ValueError``/``KeyError``/``TypeError`` on a missing or malformed record."""
    durations = json.loads(Path(record).read_text())["durations"]
    if isinstance(durations, list):
        return {t["test"]: float(t["seconds"]) for t in durations}
    return {f"{file}::{name}": float(seconds) for file, tests in durations.items()
            for name, seconds in tests.items()}


def recorded_seconds(notebook_files: Iterable[str], record: Path = RECORD) -> Dict[str, float]:
    """Seconds per unit of work in the last full run's record (empty when there is none or it
    cannot be read: the order then falls back to xdist's)."""
    files = set(notebook_files)
    try:
        tests = recorded_tests(record)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}
    out: Dict[str, float] = {}
    for test, seconds in tests.items():
        scope = scope_of(test, files)
        out[scope] = out.get(scope, 0.0) + seconds
    return out


def longest_first(units: Mapping[str, Mapping[str, bool]], seconds: Mapping[str, float]) -> List[str]:
    """The units' names in the order they are handed out: recorded seconds descending, then number
    of tests descending, then as given (``sorted`` is stable)."""
    return sorted(units, key=lambda s: (-seconds.get(s, 0.0), -len(units[s])))
