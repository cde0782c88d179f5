"""The plan's runs on worker processes (issue 34): each run trained once, into one store, with one
thread recorded, the same numbers as one process; a failure costs only its run and its dependants.

The task wrappers are module-level so the spawned workers import them from this file.
"""
from __future__ import annotations

import json
import os

import pytest
import torch

from mlpl_lab.runs import ensure, workers
from mlpl_lab.profiles import get_profile
from mlpl_lab.runs.store import RunStore

_LOG_ENV = "MLPL_LAB_TEST_WORKER_LOG"
_FAIL_ENV = "MLPL_LAB_TEST_WORKER_FAIL"   # key of the run whose task raises
_DIE_ENV = "MLPL_LAB_TEST_WORKER_DIE"     # key of the run whose worker exits


def logging_task(spec, root):
    out = workers._train_one(spec, root)
    with open(os.environ[_LOG_ENV], "a") as f:
        f.write(json.dumps(out) + "\n")
    return out


def failing_task(spec, root):
    from mlpl_lab.runs.spec import RunSpec

    key = RunSpec.from_dict(spec).key
    if key == os.environ.get(_FAIL_ENV):
        raise RuntimeError("this run fails on purpose")
    if key == os.environ.get(_DIE_ENV):
        os._exit(3)
    return workers._train_one(spec, root)


def _numbers(history):
    """A history less what measures the machine (wall times, memory)."""
    return [{k: v for k, v in row.items() if "seconds" not in k and "memory" not in k and "mib" not in k.lower()}
            for row in history]


def _specs():
    """Smoke runs: AN and GR on two seeds (each from the pretraining run), and LAC's stage two on
    seed 0 (its stage one not named: the pool adds it)."""
    from mlpl_lab.chapters import lac

    P = get_profile("smoke")
    plain = [P.spec(m, seed=s) for m in ("an", "gr") for s in (0, 1)]
    return plain + [lac.row_spec(P, "two-stage + queue (LAC)", 0)]


@pytest.mark.slow  # > 30 s: make test-all, not make test
def test_two_workers_train_each_run_once_with_one_thread_as_one_process_would(tmp_path, monkeypatch):
    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path / "data"))
    monkeypatch.setenv(_LOG_ENV, str(tmp_path / "log.jsonl"))
    specs = _specs()
    store = RunStore(tmp_path / "pool")
    report = workers.train(specs + specs[:2], store, workers=2, task=logging_task)
    log = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    expected = {s.key for s in workers.with_dependencies(specs)}
    assert len(expected) == len(specs) + 2  # the pretraining run and LAC's stage one added
    assert sorted(e["key"] for e in log if e["trained"]) == sorted(expected)  # each once
    assert report.workers == 2 and not report.failed and not report.skipped
    assert os.getpid() not in {e["pid"] for e in log}
    for key in expected:
        summary = json.loads((store.root / key / "summary.json").read_text())
        assert summary["environment"]["threads"] == 1

    # one process, one thread: the same numbers, bit for bit
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        one = RunStore(tmp_path / "one")
        ref = ensure.ensure(specs, store=one)
    finally:
        torch.set_num_threads(before)
    got = [store.get(s) for s in specs]
    for r, g in zip(ref, got):
        assert _numbers(r.history) == _numbers(g.history) and r.best_epoch == g.best_epoch

    # a second call finds everything stored and starts no worker
    again = workers.train(specs, store, workers=2, task=logging_task)
    assert again.workers == 0 and again.already_stored == len(expected) and not again.results


@pytest.mark.slow  # > 30 s: make test-all, not make test
def test_reproduce_trains_with_the_recorded_thread_count(tmp_path, monkeypatch):
    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path / "data"))
    spec = get_profile("smoke").spec("gr", seed=0)
    store = RunStore(tmp_path / "pool")
    workers.train([spec], store, workers=1)
    run = store.get(spec)
    assert run.environment["threads"] == 1
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        again = workers.reproduce(run, RunStore(tmp_path / "again"))
        assert torch.get_num_threads() == 2  # restored
    finally:
        torch.set_num_threads(before)
    assert again.environment["threads"] == 1
    assert _numbers(again.history) == _numbers(run.history)


@pytest.mark.slow  # > 30 s: make test-all, not make test
def test_a_failed_run_skips_its_dependants_and_a_dead_worker_loses_only_its_run(tmp_path, monkeypatch):
    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path / "data"))
    specs = _specs()
    stage2 = specs[-1]
    monkeypatch.setenv(_FAIL_ENV, stage2.init_from.key)  # LAC's stage one raises
    monkeypatch.setenv(_DIE_ENV, specs[1].key)          # AN seed 1's worker exits
    store = RunStore(tmp_path / "pool")
    lines = []
    report = workers.train(specs, store, workers=2, task=failing_task, note=lines.append)
    assert set(report.failed) == {stage2.init_from.key, specs[1].key}
    assert "fails on purpose" in report.failed[stage2.init_from.key]
    assert "worker died" in report.failed[specs[1].key]
    assert set(report.skipped) == {stage2.key}  # it starts from the failed stage one
    others = [s for s in specs if s.key not in (specs[1].key, stage2.key)]
    assert all(store.get(s) is not None for s in others)
    assert any(line.startswith("FAILED") for line in lines)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_worker_and_thread_counts_are_checked(bad, tmp_path):
    spec = get_profile("smoke").spec("an", seed=0)
    with pytest.raises(ValueError, match="whole number >= 1"):
        workers.train([spec], RunStore(tmp_path), workers=bad)
    with pytest.raises(ValueError, match="threads must be a whole number"):
        workers.train([spec], RunStore(tmp_path), threads=bad)


def test_default_workers_one_per_gpu_else_per_core_never_more_than_runs(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert workers.default_workers(10, gpus=0) == 2
    assert workers.default_workers(1, gpus=0) == 1
    # per GPU: the given count, independent of the committed GPU record (its measured best)
    assert workers.default_workers(10, gpus=4, per_device=1) == 4
    assert workers.default_workers(3, gpus=8, per_device=1) == 3
    assert workers.default_workers(50, gpus=4, per_device=8) == 32
    assert workers.default_workers(10, gpus=4, per_device=8) == 10
    assert workers.default_threads(2, gpus=0) == 1
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    assert workers.default_threads(1, gpus=1) == 16 and workers.default_threads(4, gpus=4) == 4


def sleeping_task(spec, root):
    """Writes its pid, then sleeps far longer than the test waits."""
    import time

    with open(os.environ[_LOG_ENV], "a") as f:
        f.write(f"{os.getpid()}\n")
    time.sleep(600)


def _workers_of(parent: int):
    """Pids of the spawned worker processes whose parent is ``parent`` (from /proc)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if ppid == parent and b"spawn_main" in cmd:
            out.append(int(d))
    return out


@pytest.mark.slow  # > 30 s: make test-all, not make test
def test_workers_end_when_the_parent_is_killed(tmp_path):
    """Bug caught: `kill` of `mlpl-lab report` (or its terminal closing) left both worker
    processes training on with nobody to read their answers, holding the cores for minutes."""
    import signal
    import subprocess
    import sys
    import time

    log = tmp_path / "pids"
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from test_workers import _specs, sleeping_task\n"
            "from mlpl_lab.runs import workers\nfrom mlpl_lab.runs.store import RunStore\n"
            "workers.train(_specs()[:2], RunStore(%r), workers=2, task=sleeping_task)\n"
            % (os.path.dirname(__file__), str(tmp_path / "pool")))
    env = dict(os.environ, **{_LOG_ENV: str(log), "MLPL_LAB_DATA": str(tmp_path / "data")})
    parent = subprocess.Popen([sys.executable, "-c", code], env=env)
    deadline = time.time() + 120
    while time.time() < deadline and not log.exists():
        time.sleep(0.2)
    assert log.exists(), "no worker started a run"
    pids = _workers_of(parent.pid)  # the one in a run and the one waiting for the next
    assert len(pids) == 2 and int(log.read_text().split()[0]) in pids
    parent.send_signal(signal.SIGKILL)
    parent.wait()

    def alive(pid):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        with open(f"/proc/{pid}/stat") as f:  # a zombie waiting for its reaper is gone too
            return f.read().split()[2] != "Z"

    deadline = time.time() + 20
    while time.time() < deadline and any(alive(p) for p in pids):
        time.sleep(0.2)
    assert not any(alive(p) for p in pids), "a worker outlived its parent"


def test_the_time_left_is_priced_until_a_run_is_done_then_measured():
    """Bug caught: a progress line that says "about ? left" for the whole first round of runs
    although the sitting was priced, one that keeps the price once runs have finished, or a
    negative time. Oracle: hand-computed cases (4 units of work, 1 done in 60 s: 3 left, 180 s)."""
    assert workers.time_left(60.0, 1.0, 4.0, priced=999.0) == "3.0 min"
    assert workers.time_left(60.0, 4.0, 4.0) == "0 s"
    assert workers.time_left(30.0, 0.0, 4.0) == "?"
    assert workers.time_left(60.0, 0.0, 4.0, priced=300.0) == "4.0 min (priced)"
    assert workers.time_left(360.0, 0.0, 4.0, priced=300.0) == "? (more than the 5.0 min priced)"


def test_the_time_left_counts_what_the_runs_in_flight_have_done():
    """Bug caught: an estimate that grows with every line while runs are in flight (it scaled the
    elapsed time by the work left, blind to the runs under way), or one shorter than the run in
    flight still needs. Oracle, by hand: 2 units done in 120 worker-seconds (60 s a unit); one
    1-unit run in flight for 30 s (30 s to go) and 1 unit queued (60 s), on 2 workers: (30 + 60) / 2
    = 45 s; on 8 workers the run in flight still needs 30 s."""
    assert workers.time_left(200.0, 2.0, 4.0, busy=120.0, running=[(1.0, 30.0)], workers=2) == "45 s"
    assert workers.time_left(200.0, 2.0, 4.0, busy=120.0, running=[(1.0, 30.0)], workers=8) == "30 s"
    assert workers.time_left(200.0, 2.0, 4.0, busy=120.0, running=[(1.0, 90.0)], workers=1) == "60 s"
