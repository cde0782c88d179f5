"""The gpu profile as a test (``make test-gpu``, marker ``gpu``): every notebook is executed
with papermill under ``profile="gpu"`` and its records are checked — every number finite,
every mAP in [0, 100], the full-label oracle above AN wherever a record holds both, a claims
table in every chapter with valid verdicts. It needs CUDA and fails (does not skip) without it.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mlpl_lab.reporting.report import all_finite

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/claims_oracle.py
from claims_oracle import check_claims_record  # noqa: E402

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
ORACLE_NAMES = ("full labels", "full labels (oracle)", "BCE (full)", "full")


def _maps(value, path=()):
    """Every (path, number) under a record named mAP."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _maps(v, path + (k,))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield path, float(value)


def _oracle_vs_an(value):
    """(oracle, AN) pairs of sibling entries of a mAP record."""
    if isinstance(value, dict):
        oracle = next((value[k] for k in ORACLE_NAMES if isinstance(value.get(k), (int, float))), None)
        an = value.get("AN")
        if oracle is not None and isinstance(an, (int, float)):
            yield float(oracle), float(an)
        for v in value.values():
            yield from _oracle_vs_an(v)


@pytest.fixture(scope="session")
def run_gpu(tmp_path_factory):
    import torch

    if not torch.cuda.is_available():
        pytest.fail("the gpu-profile tests need CUDA (make test-gpu checks this first)", pytrace=False)
    from mlpl_lab.reporting.execute import execute_notebook
    from mlpl_lab.reporting.report import read_records

    out = tmp_path_factory.mktemp("gpu-reports")
    return lambda name: read_records(execute_notebook(ROOT / "notebooks" / name, out, profile="gpu",
                                                      html=True, timeout=None))


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_under_the_gpu_profile(run_gpu, name):
    rec = run_gpu(name)
    assert rec, f"{name} recorded nothing"
    assert all_finite(rec), f"{name}: a recorded number is not finite"
    for key, value in rec.items():
        if key.startswith("mAP"):
            for path, v in _maps(value):
                assert 0.0 <= v <= 100.0, (name, key, path, v)
            for oracle, an in _oracle_vs_an(value):
                assert oracle > an, f"{name}: the full-label oracle ({oracle:.1f}) is not above AN ({an:.1f})"
    if not name.startswith("00_"):
        assert "claims" in rec and rec["claims"], f"{name} has no claims table"
        check_claims_record(rec["claims"])  # the paired rule, recomputed with scipy
        # the protocol: every run recorded its convergence, and at least 90 % converged
        conv = {f"{k}: {run}": v for k, r in rec.items() if "convergence" in k for run, v in r.items()}
        assert conv, f"{name} records no convergence"
        share = sum(conv.values()) / len(conv)
        assert share >= 0.9, f"{name}: {share:.0%} of its runs converged: " + ", ".join(
            k for k, v in conv.items() if not v)


def test_benchmark_grid_under_the_gpu_profile(run_gpu):
    """Notebook 07 under gpu: every cell of the gpu design's grid (a course-sized grid: cpu's shape
    at the gpu scale) has a score and an interval, the oracle is above AN in every column, and what
    the notebook says it leaves out is what the design leaves out."""
    from mlpl_lab.chapters.benchmark import design, left_out

    d = design("gpu")
    rec = run_gpu("07_benchmark.ipynb")
    for regime, row in d.cells():
        v = rec["mAP"][row][regime]
        assert v is not None and 0.0 <= v <= 100.0, (row, regime, v)
        assert rec["ci95"][row][regime] is not None, (row, regime)
    for regime in d.grid:
        assert rec["mAP"]["full labels"][regime] > rec["mAP"]["AN"][regime], regime
    assert rec["left_out"] == left_out(d)
