"""The GPU check's throughput levers (benchmarks/gpu/levers.py): the choice of the best setting the
series uses, by hand, and the worker-process measurement on the CPU at tiny sizes (the code path
the check takes on a card; a CPU's rates are never a GPU's)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "gpu"))
import levers  # noqa: E402


def test_best_is_the_highest_total_among_what_the_series_can_use():
    """Hand-made results: compile measured fastest, but the series cannot use it; of the rest, 4
    workers' 30,000 images/s in total beat 8 workers' 28,000 and one run's 9,000; a failed setting
    is never chosen."""
    rows = [{"lever": "1", "workers": 1, "compile": False, "status": "ok", "images_per_s_total": 9000.0},
            {"lever": "4", "workers": 4, "compile": False, "status": "ok", "images_per_s_total": 30000.0},
            {"lever": "8", "workers": 8, "compile": False, "status": "ok", "images_per_s_total": 28000.0},
            {"lever": "16", "workers": 16, "compile": False, "status": "failed", "error": "out of memory"},
            {"lever": "c", "workers": 1, "compile": True, "status": "ok", "images_per_s_total": 50000.0}]
    assert levers.best(rows, lambda r: not r["compile"])["lever"] == "4"
    assert levers.best(rows, lambda r: True)["lever"] == "c"
    assert levers.best(rows[3:4], lambda r: True) is None


def test_labels_name_every_lever_that_is_on():
    s = levers.Setting(workers=4, channels_last=True, cuda_graphs=True, batch_size=512)
    assert s.label == "4 workers, channels-last, CUDA graphs, batch 512"
    assert levers.Setting().label == "1 worker, batch 128"


SHAPE = {"model": "resnet18", "model_kwargs": {}, "classes": 20, "image_size": 32, "images": 8, "lr": 1e-3,
         "batch_size": 4, "threads": 1}


@pytest.mark.slow
def test_two_workers_on_the_cpu_report_per_run_and_total_and_scale_the_lr():
    """Two spawned workers at a doubled batch: each reports images/s, the total is their sum
    (computed here), the learning rate is scaled linearly (1e-3 × 8 / 4), and CUDA graphs on the
    CPU fail with the reason instead of hanging the other worker at the barrier."""
    r = levers.measure(levers.Setting(workers=2, batch_size=8), SHAPE, "cpu", warmup=1, seconds=0.2, limit_s=600)
    assert r["status"] == "ok", r
    assert len(r["images_per_s_per_run"]) == 2 and all(x > 0 for x in r["images_per_s_per_run"])
    assert r["images_per_s_total"] == pytest.approx(sum(r["images_per_s_per_run"]))
    assert r["lr"] == pytest.approx(2e-3)
    g = levers.measure(levers.Setting(cuda_graphs=True, batch_size=4), SHAPE, "cpu", warmup=1, seconds=0.2,
                       limit_s=600)
    assert g["status"] == "failed" and "CUDA graphs need a CUDA device" in g["error"]
