"""The series breakdown's busy time (benchmarks/bench_series.py): the union of run intervals,
checked on hand-derived cases. Which bug fails it: summing overlapping runs (two workers count
twice), counting a pause between two stretches, or dropping a run that ends inside another."""
import importlib.util
from pathlib import Path

import pytest

spec = importlib.util.spec_from_file_location(
    "bench_series", Path(__file__).resolve().parent.parent / "benchmarks" / "bench_series.py")
bench_series = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_series)


@pytest.mark.parametrize("intervals, expected", [
    ([], 0.0),
    ([(0, 10)], 10.0),
    ([(0, 10), (5, 12)], 12.0),                 # two workers overlapping: 0..12
    ([(0, 10), (2, 4)], 10.0),                  # one run inside another
    ([(0, 10), (100, 130)], 40.0),              # a pause of 90 s is left out
    ([(100, 130), (0, 10), (8, 20)], 50.0),     # unsorted: 0..20 and 100..130
    ([(0, 10), (10, 15)], 15.0),                # touching
])
def test_busy_seconds_is_the_length_of_the_union(intervals, expected):
    assert bench_series.busy_seconds(intervals) == pytest.approx(expected)
