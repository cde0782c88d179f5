"""The suite's split over two xdist workers (tests/scheduling.py)."""
from __future__ import annotations

import json

from scheduling import NOTEBOOKS_SCOPE, RECORD, longest_first, recorded_seconds, recorded_tests, scope_of

NB_FILES = {"tests/test_notebook_02.py", "tests/test_course.py"}


def test_scopes_keep_files_and_notebooks_together_and_the_gpu_shape_notebooks_apart():
    """Bug caught: the two gpu_shape notebooks in one unit (one worker ran both, 29 min, while the
    other idled), or a smoke-notebook file sent to a worker of its own (it would execute the
    smoke notebooks a second time)."""
    assert scope_of("tests/test_layers.py::test_a", NB_FILES) == "tests/test_layers.py"
    assert scope_of("tests/test_course.py::test_b[x]", NB_FILES) == NOTEBOOKS_SCOPE
    assert scope_of("tests/test_notebook_02.py::test_c", NB_FILES) == NOTEBOOKS_SCOPE
    a = scope_of("tests/test_gpu_shape.py::test_notebook_02_under_gpu_shape", NB_FILES)
    b = scope_of("tests/test_gpu_shape.py::test_notebook_05_under_gpu_shape", NB_FILES)
    assert a != b and "tests/test_gpu_shape.py" not in (a, b)
    assert scope_of("tests/test_gpu_shape.py::test_the_cli_accepts_gpu_shape", NB_FILES) == \
        "tests/test_gpu_shape.py"


def test_longest_first_on_a_hand_made_case():
    units = {"a": {"1": False, "2": False}, "b": dict.fromkeys("12345", False), "c": {"1": False},
             "d": {"1": False}}
    assert longest_first(units, {"a": 10.0, "c": 900.0}) == ["c", "a", "b", "d"]
    assert longest_first(units, {}) == ["b", "a", "c", "d"]  # xdist's own order: most tests first


def _makespan(order, seconds, workers=2):
    """Naive list scheduling: each unit goes to the worker that is free first."""
    free = [0.0] * workers
    for unit in order:
        i = free.index(min(free))
        free[i] += seconds.get(unit, 0.0)
    return max(free)


def test_the_recorded_suite_ends_sooner_longest_first(tmp_path):
    """On the last full run's record: handed out longest first, the two workers finish sooner than
    in xdist's order (most tests first), and notebook 02 under gpu_shape is the first unit. Bug
    caught: an order reversed or keyed on the wrong field, which would leave a quarter-hour unit
    for the end."""
    files = {t.split("::")[0] for t in recorded_tests(RECORD)
             if t.startswith(("tests/test_course.py", "tests/test_notebook_0"))}
    seconds = recorded_seconds(files)
    assert seconds, "no record: make test-durations"
    units = {}
    for t in recorded_tests(RECORD):
        units.setdefault(scope_of(t, files), {})[t] = False
    ours, xdist = longest_first(units, seconds), longest_first(units, {})
    # notebook 02 under gpu_shape, the suite's longest unit in every record, goes out first
    assert ours[0] == "tests/test_gpu_shape.py::test_notebook_02_under_gpu_shape"
    assert _makespan(ours, seconds) < _makespan(xdist, seconds)
    assert _makespan(ours, seconds) <= 1.05 * max(sum(seconds.values()) / 2, max(seconds.values()))
    # no record, or an unreadable one: xdist's order
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert recorded_seconds(files, bad) == {} and recorded_seconds(files, tmp_path / "none.json") == {}


def test_both_record_layouts_give_the_same_seconds(tmp_path):
    """A hand-made record in format 1 (one object per test) and the same record in format 2
    (``{file: {test: seconds}}``) give the same seconds per unit. Bug caught: a reader that splits
    the node id at the wrong ``::`` (a class or a parametrised name holds more of them) or reads
    only one layout, which would drop the order back to xdist's without a word."""
    one = {"durations": [
        {"test": "tests/test_a.py::TestX::test_y[p::q]", "seconds": 2.5, "outcome": "passed", "fast_tier": True},
        {"test": "tests/test_a.py::test_z", "seconds": 1.0, "outcome": "skipped", "fast_tier": False},
        {"test": "tests/test_course.py::test_w", "seconds": 7.25, "outcome": "passed", "fast_tier": True}]}
    two = {"format": 2, "durations": {"tests/test_course.py": {"test_w": 7.25},
                                      "tests/test_a.py": {"TestX::test_y[p::q]": 2.5, "test_z": 1.0}},
           "not_passed": {"tests/test_a.py::test_z": "skipped"}, "outside_fast_tier": ["tests/test_a.py::test_z"]}
    (tmp_path / "one.json").write_text(json.dumps(one))
    (tmp_path / "two.json").write_text(json.dumps(two))
    expected = {"tests/test_a.py::TestX::test_y[p::q]": 2.5, "tests/test_a.py::test_z": 1.0,
                "tests/test_course.py::test_w": 7.25}
    assert recorded_tests(tmp_path / "one.json") == expected == recorded_tests(tmp_path / "two.json")
    per_unit = {"tests/test_a.py": 3.5, NOTEBOOKS_SCOPE: 7.25}
    assert recorded_seconds({"tests/test_course.py"}, tmp_path / "one.json") == per_unit
    assert recorded_seconds({"tests/test_course.py"}, tmp_path / "two.json") == per_unit
