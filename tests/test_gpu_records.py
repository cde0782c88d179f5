"""What the lab reads from the GPU check's records (mlpl_lab/runs/gpu_records.py): the projection's
rate in ``mlpl-lab plan --profile gpu`` and the series' workers per device.

Oracle: records written here by hand, and the rate computed by hand from their numbers."""
import json

import pytest

from mlpl_lab.protocol.plan import measured_gpu_throughput
from mlpl_lab.runs import gpu_records, workers

ENV = {"mode": "gpu", "cuda": "13.0", "device": "NVIDIA H200", "date": "2026-11-29 10:00:00 UTC"}


def write_records(folder, best=None, env=ENV, rehearsal=False):
    folder.mkdir(parents=True, exist_ok=True)
    run = {"pretraining": {"images_trained": 160_000}, "an": {"images_trained": 120_000},
           "wall_seconds": 50.0, "environment": env}
    step = {"gflop_per_image_train": 0.869, "fit_tflops": 8.0, "environment": env, "cpu_rehearsal": rehearsal}
    if best is not None:
        step["best"] = best
    (folder / "train_run.json").write_text(json.dumps(run))
    (folder / "throughput.json").write_text(json.dumps(step))
    return folder


def test_the_plan_rate_is_one_runs_rate_times_the_measured_gain(tmp_path):
    """(160,000 + 120,000) images × 0.869 GFLOP / 50 s = 4.8664 TFLOP/s for one run; 4 runs sharing
    the card at 3.1x one run's images/s give 15.086 TFLOP/s. The source names the card."""
    rec = write_records(tmp_path, best={"workers_per_device": 4, "total_over_one_run": 3.1,
                                        "images_per_s_total": 31000.0, "images_per_s_per_run": 7750.0})
    got = measured_gpu_throughput(rec)
    assert got.tflops == pytest.approx(280_000 * 0.869e9 / 50 / 1e12 * 3.1)
    assert got.tflops == pytest.approx(15.08584)
    assert "NVIDIA H200" in got.source and "4 runs sharing the card" in got.source


def test_without_the_levers_the_single_run_rate_with_the_card_named(tmp_path):
    """The first check (an H100) measured one run only: its rate as measured, and the fallback said."""
    rec = write_records(tmp_path)
    got = measured_gpu_throughput(rec)
    assert got.tflops == pytest.approx(4.8664)
    assert "NVIDIA H200" in got.source and "one run at a time" in got.source
    assert gpu_records.workers_per_device(rec) == gpu_records.FALLBACK_WORKERS_PER_DEVICE == 1


def test_a_cpu_rehearsal_is_never_read_as_a_gpu(tmp_path):
    """Bug caught: the rehearsal's CPU rates (or a record without CUDA) setting the gpu projection."""
    best = {"workers_per_device": 8, "total_over_one_run": 6.0}
    assert measured_gpu_throughput(write_records(tmp_path / "a", best=best, env=ENV | {"mode": "rehearse"})) is None
    assert gpu_records.throughput_choice(write_records(tmp_path / "b", best=best, rehearsal=True)) is None
    assert measured_gpu_throughput(write_records(tmp_path / "c", best=best, env=ENV | {"cuda": None})) is None
    assert measured_gpu_throughput(tmp_path / "missing") is None


def test_the_series_puts_the_measured_workers_on_each_gpu(tmp_path, monkeypatch):
    """2 GPUs × the record's 4 workers per device = 8 workers, never more than the runs; an
    explicit per_device wins; no record: one per GPU."""
    rec = write_records(tmp_path, best={"workers_per_device": 4, "total_over_one_run": 2.5})
    monkeypatch.setattr(gpu_records, "GPU_RECORDS", rec)
    monkeypatch.setattr(gpu_records.workers_per_device, "__defaults__", (rec,))
    assert workers.default_workers(100, gpus=2) == 8
    assert workers.default_workers(5, gpus=2) == 5
    assert workers.default_workers(100, gpus=2, per_device=3) == 6
    assert workers.default_workers(100, gpus=0) >= 1  # one per core without GPUs: the record is not read
    monkeypatch.setattr(gpu_records.workers_per_device, "__defaults__", (tmp_path / "none",))
    assert workers.default_workers(100, gpus=2) == 2
    with pytest.raises(ValueError, match="workers per device"):
        workers.default_workers(100, gpus=2, per_device=0)


def test_the_committed_gpu_records_name_their_card():
    """The records in the tree (the newest check's) give a rate and name the card that measured it."""
    got = measured_gpu_throughput()
    if got is None:
        pytest.skip("no GPU record in this checkout")
    assert "NVIDIA" in got.source and got.tflops > 0


def test_report_takes_workers_per_device():
    from mlpl_lab.cli import build_parser

    args = build_parser().parse_args(["report", "--profile", "gpu", "--workers-per-device", "4"])
    assert args.workers_per_device == 4
    with pytest.raises(SystemExit):
        build_parser().parse_args(["report", "--workers-per-device", "0"])


@pytest.mark.slow
def test_the_gpu_series_fits_an_evening_at_the_committed_rate():
    """The course-sized gpu design at the newest GPU record's rate: at most 4 h on one GPU for the
    runs every series trains (the plan's FLOPs, runs chosen from results counted at stand-in
    choices, over the measured rate), and at most three quarters of an hour more for the pending
    runs a cold series adds (controls and longer runs, and one pilot per row at 4/3 of its epochs;
    from scratch every schedule-bound cell's length check is counted, an upper bound: a series
    trains only those of cells that did not converge). At the single-run rate of the committed
    record the two are 3.9 h and 0.63 h (0.4 h before the pilots): under 4 h in all waits for the
    throughput levers measured on a card. Bug caught: a design change that grows the gpu series
    past an instructor's evening."""
    from mlpl_lab.protocol.plan import plan_series, projection
    from mlpl_lab.commands.arguments import notebook_paths

    rate = measured_gpu_throughput()
    if rate is None:
        pytest.skip("no GPU record in this checkout")
    plan = plan_series("gpu", notebook_paths(None))
    keys = {s.key for s in plan.order}
    later = list({s.key: s for nb in plan.notebooks for s in nb.later if s.key not in keys}.values())
    groups, unknown = projection(plan.order + later)
    assert not unknown
    hours = sum(g.flops for g in groups) / (rate.tflops * 1e12) / 3600
    assert hours <= 4.0, f"{hours:.2f} h at {rate.tflops:.2f} TFLOP/s ({rate.source})"
    keys |= {s.key for s in later}
    pending = list({s.key: s for nb in plan.notebooks for s in nb.pending if s.key not in keys}.values())
    p_groups, _ = projection(pending)
    p_hours = sum(g.flops for g in p_groups) / (rate.tflops * 1e12) / 3600
    assert p_hours <= 0.75, f"pending runs: {p_hours:.2f} h at {rate.tflops:.2f} TFLOP/s"
