"""`make test-gpu` refuses to start without CUDA, with a clear message (checked on this CPU
machine: the refusal path is the only one a CPU can exercise)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: nothing to refuse")
def test_test_gpu_refuses_without_cuda():
    r = subprocess.run([sys.executable, str(ROOT / "tests" / "gpu" / "require_cuda.py")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert "needs a CUDA GPU" in r.stderr and "make test" in r.stderr


def test_gpu_tests_are_not_part_of_make_test():
    text = (ROOT / "pyproject.toml").read_text()
    assert "not gpu" in text and "not browser" in text
