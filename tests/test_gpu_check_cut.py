"""The GPU check's notebook step runs a chapter under ``<profile>_cut`` (benchmarks/gpu/
step_notebook.py). Its live exercise must still be a cut of the cut's converged run: the first
check on an H100 stopped at 02's live cell (a 4-epoch live run against 1-epoch converged runs)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "gpu"))
import step_notebook  # noqa: E402

from mlpl_lab import profiles  # noqa: E402
from mlpl_lab.chapters import common, live  # noqa: E402


@pytest.fixture
def cut_profile():
    name = step_notebook.register_cut("gpu", 1, 1)
    yield name
    profiles.PROFILES.pop(name, None)
    common.DESIGN_OF.pop(name, None)
    live.LIVE.pop(name, None)


@pytest.mark.parametrize("chapter", list(live.CHAPTERS))
def test_every_live_run_fits_inside_the_cut(cut_profile, chapter):
    spec, conv = live.live_exercise(chapter, cut_profile)
    for s, c in zip(live.stages(spec), live.stages(conv)):
        assert s.train["epochs"] <= c.train["epochs"]
        assert s.data["n_train"] < c.data["n_train"]
    assert spec.key != conv.key
