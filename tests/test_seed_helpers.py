"""The one mean over seeds and the one ablation table (issue 50), against hand-computed values."""
from types import SimpleNamespace

import pytest

from mlpl_lab.analysis.tables import ablation_frames, seed_mean


def _run(seed, mAP, converged=True):
    spec = SimpleNamespace(seed=seed)
    return SimpleNamespace(spec=spec, best={"test_mAP": mAP}, best_epoch=1,
                           converged=converged, convergence={"converged": converged})


def test_seed_mean_is_the_plain_mean_of_the_best_values():
    assert seed_mean([_run(1, 60.0), _run(2, 70.0), _run(3, 71.0)]) == pytest.approx(67.0)
    with pytest.raises(ValueError, match="no runs"):
        seed_mean([])


def test_ablation_frames_marks_and_means():
    runs = {"all off": [_run(1, 50.0), _run(2, 52.0)], "all on": [_run(1, 60.0), _run(2, 64.0)]}
    marks = {"all off": {"k": False, "v": False}, "all on": {"k": True, "v": "cap 3"}}
    table, half, n, _ = ablation_frames(marks, runs)
    assert list(table.index) == ["all off", "all on"]
    assert table.at["all off", "k"] == "✗" and table.at["all on", "k"] == "✓"
    assert table.at["all on", "v"] == "cap 3"
    assert table.at["all on", "mAP"] == pytest.approx(62.0)
    # t(0.975, 1) = 12.706; sd of (60, 64) = 2.828 → half = 12.706 * 2.828 / sqrt(2)
    assert float(half.at["all on", "mAP"]) == pytest.approx(12.7062 * 2.8284 / 2 ** 0.5, rel=1e-3)
    assert int(n.at["all on", "mAP"]) == 2
    with pytest.raises(ValueError, match="without runs"):
        ablation_frames({"x": {}}, runs)
