"""The run grid on Dask workers (issue 23): one store, the same results as one process, stage
two after stage one, a killed worker's run retried, a failed run reported while the rest
completes, two writers of one key, a second call that trains nothing.

Oracles: one process's ``ensure`` on the same specs (the engine must not change a number), the
tasks' own start/end times written by a wrapper (ordering), the store's folders (what exists).
The wrappers below are module-level so the workers import them from this file.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from mlpl_lab.runs import cluster, ensure
from mlpl_lab.profiles import get_profile
from mlpl_lab.runs.store import RunStore

TIMING_KEYS = ("seconds", "train_seconds", "peak_memory_mib")
_TRAIN_TASK = cluster.train_task  # the real task, for the wrappers (also on the workers)


def tiny(init="scratch"):
    """A tiny smoke profile; ``init="pretrained"`` adds the pretraining run every spec depends on."""
    pre = {"glyphs": "digits", "max_objects": 1, "n_train": 64, "n_val": 32, "n_test": 32, "epochs": 1,
           "seed": 1000}
    return get_profile("smoke", n_train=128, n_val=64, n_test=64, epochs=1, init=init, pretrain=pre)


def log_path(store_root) -> Path:
    return Path(store_root).parent / "tasks.jsonl"


def recording_task(spec, store_root, execute, env, *stage_one):
    """The real task, with its wall-clock start and end appended to a log next to the store."""
    start = time.time()
    out = _TRAIN_TASK(spec, store_root, execute, env, *stage_one)
    with open(log_path(store_root), "a") as f:
        f.write(json.dumps({"key": spec.key, "start": start, "end": time.time(), "pid": os.getpid(),
                            "trained": out["trained"]}) + "\n")
    return out


def dies_once_on_seed_1(spec, store_root, execute, env, *stage_one):
    """The worker process dies (no exception, no cleanup) the first time it gets a seed-1 run."""
    marker = Path(store_root).parent / "died"
    if spec.seed == 1 and not marker.exists():
        marker.write_text(str(os.getpid()))
        os._exit(1)
    return recording_task(spec, store_root, execute, env, *stage_one)


def fails_on_seed_1_stage_one(spec, store_root, execute, env, *stage_one):
    if spec.seed == 1 and spec.init_from is None:
        raise RuntimeError("injected failure")
    return recording_task(spec, store_root, execute, env, *stage_one)


def task_log(store_root):
    path = log_path(store_root)
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def stored_keys(root: Path):
    return sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) if root.exists() else []


def numbers(run):
    """Every history number except timings (the engine may change how long, never what), as
    JSON so that NaN equals NaN."""
    return json.dumps([{k: v for k, v in row.items() if k not in TIMING_KEYS} for row in run.history],
                      sort_keys=True)


@pytest.fixture(scope="module")
def two_workers():
    c = cluster.client(2)
    assert len(c.nthreads()) == 2 and set(c.nthreads().values()) == {1}  # 2 single-thread workers
    yield c
    cluster.close_all()


@pytest.fixture
def no_worker_env(monkeypatch):
    monkeypatch.delenv(cluster.WORKERS_ENV, raising=False)
    monkeypatch.delenv(cluster.SCHEDULER_ENV, raising=False)


def grid(init="scratch"):
    """A smoke grid: two methods, two seeds, the oracle, a duplicate, and LAC's stage two (its
    stage one is not in the list: the engine must find and train it first)."""
    from mlpl_lab.chapters import lac

    P = tiny(init)
    stage2 = lac.row_spec(P, sorted(lac.STAGE2)[0], 0)
    assert stage2.init_from is not None
    return [P.spec("an", seed=0), P.spec("gr", seed=0), P.spec("an", seed=1), P.spec("full", seed=0),
            stage2, P.spec("an", seed=0)]


@pytest.mark.slow  # > 30 s: make test-all, not make test
def test_two_workers_fill_one_store_with_one_process_results(tmp_path, two_workers, monkeypatch,
                                                             no_worker_env):
    specs = grid()
    one = RunStore(tmp_path / "one" / "runs")
    many = RunStore(tmp_path / "many" / "runs")
    # the workers train with one thread; so does the reference (a thread count can change the
    # order of a float reduction, not what a run computes)
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        reference = ensure.ensure(specs, store=one)
    finally:
        torch.set_num_threads(threads)
    monkeypatch.setattr(cluster, "train_task", recording_task)
    got = ensure.ensure(specs, store=many, workers=2)

    assert [r.spec for r in got] == specs
    for a, b in zip(reference, got):
        assert numbers(b) == numbers(a), a.spec.describe()
        assert b.best_epoch == a.best_epoch
    # one folder per distinct run, the stage one included, and the same keys as one process
    assert stored_keys(many.root) == stored_keys(one.root)
    assert len(stored_keys(many.root)) == 6
    log = task_log(many.root)
    assert len(log) == 6 and len({e["key"] for e in log}) == 6  # each distinct run once
    assert len({e["pid"] for e in log}) == 2  # both workers trained
    stage2 = specs[4]
    by_key = {e["key"]: e for e in log}
    assert by_key[stage2.key]["start"] >= by_key[stage2.init_from.key]["end"]  # waited for stage one
    assert not list(many.root.glob(".tmp-*"))

    # a second call trains nothing: the engine is not even asked
    def no_engine(*a, **k):
        raise AssertionError("the second call asked the cluster to train")

    monkeypatch.setattr(cluster, "train", no_engine)
    again = ensure.ensure(specs, store=many, workers=2)
    assert [numbers(r) for r in again] == [numbers(r) for r in got]


@pytest.mark.slow  # > 30 s: make test-all, not make test
def test_the_pretraining_run_is_trained_once_before_every_run_that_starts_from_it(
        tmp_path, two_workers, monkeypatch, no_worker_env):
    specs = grid("pretrained")  # every first-stage run starts from the pretraining run
    many = RunStore(tmp_path / "many" / "runs")
    monkeypatch.setattr(cluster, "train_task", recording_task)
    got = ensure.ensure(specs, store=many, workers=2)
    assert [r.spec for r in got] == specs
    pre = specs[0].backbone_from
    assert pre is not None and all(s.backbone_from == pre for s in specs if s.init_from is None)
    assert len(stored_keys(many.root)) == 6 + 1  # and the pretraining run, once
    log = task_log(many.root)
    assert len(log) == 7 and len({e["key"] for e in log}) == 7
    by_key = {e["key"]: e for e in log}
    for spec in specs[:4]:  # every first-stage run waited for the pretraining run
        assert by_key[spec.key]["start"] >= by_key[pre.key]["end"], spec.describe()


@pytest.mark.slow  # > 30 s: make test-all, not make test
def test_a_killed_worker_loses_only_its_run(tmp_path, two_workers, monkeypatch, no_worker_env):
    P = tiny()
    specs = [P.spec("an", seed=0), P.spec("an", seed=1), P.spec("gr", seed=0)]
    store = RunStore(tmp_path / "runs")
    monkeypatch.setattr(cluster, "train_task", dies_once_on_seed_1)
    runs = ensure.ensure(specs, store=store, workers=2)
    died = tmp_path / "died"
    assert died.exists()  # a worker really died on the seed-1 run
    assert [r.spec for r in runs] == specs and all(len(r.history) == 1 for r in runs)
    assert len(stored_keys(store.root)) == 3
    log = task_log(store.root)
    seed1 = [e for e in log if e["key"] == specs[1].key]
    assert len(seed1) == 1 and seed1[0]["trained"] and seed1[0]["pid"] != int(died.read_text())
    two_workers.wait_for_workers(2, timeout=120)  # the nanny replaced the dead worker


def test_a_failed_run_is_reported_and_the_rest_completes(tmp_path, two_workers, monkeypatch,
                                                         no_worker_env):
    P = tiny()
    failing = P.spec("an", seed=1)
    needs_failing = P.spec("an", seed=1, init_from=failing)  # a stage two of the failing run
    specs = [P.spec("an", seed=0), failing, P.spec("gr", seed=0), needs_failing]
    store = RunStore(tmp_path / "runs")
    monkeypatch.setattr(cluster, "train_task", fails_on_seed_1_stage_one)
    with pytest.raises(cluster.GridFailed) as err:
        ensure.ensure(specs, store=store, workers=2)
    msg = str(err.value)
    assert msg.startswith("2 of 4 runs failed") and "injected failure" in msg
    assert failing.describe() in msg and needs_failing.describe() in msg
    assert "again" in msg  # says what to do
    assert sorted(stored_keys(store.root)) == sorted([specs[0].key, specs[2].key])

    # a second call trains only what is missing
    monkeypatch.setattr(cluster, "train_task", recording_task)
    log_path(store.root).unlink()
    runs = ensure.ensure(specs, store=store, workers=2)
    assert [r.spec for r in runs] == specs
    assert sorted(e["key"] for e in task_log(store.root)) == sorted([failing.key, needs_failing.key])
    log = {e["key"]: e for e in task_log(store.root)}
    assert log[needs_failing.key]["start"] >= log[failing.key]["end"]


def test_two_writers_of_one_key_under_the_engine(tmp_path, two_workers, no_worker_env):
    """The same spec submitted twice at once (two clients): both tasks finish, one run is stored."""
    spec = tiny().spec("an", seed=3)
    store = RunStore(tmp_path / "runs")
    env = {name: os.environ.get(name) for name in cluster.FORWARDED_ENV}
    futures = [two_workers.submit(recording_task, spec, str(store.root), ensure.execute, env,
                                  key=f"writer-{i}-{time.time_ns()}", pure=False) for i in range(2)]
    results = [f.result(timeout=300) for f in futures]
    assert all(r["key"] == spec.key for r in results)
    assert stored_keys(store.root) == [spec.key]
    assert not list(store.root.glob(".tmp-*"))
    run = store.get(spec)
    assert run is not None and len(run.history) == 1
    log = task_log(store.root)
    assert len(log) == 2 and any(e["trained"] for e in log)


def test_a_writer_that_loses_the_rename_reads_the_winner(tmp_path):
    """The task's guard, in this process: the rename fails because the run is there -> served;
    it fails and nothing is there -> the error stands."""
    spec = tiny().spec("an", seed=0)
    store = RunStore(tmp_path / "runs")

    def loses(s, st):
        ensure.execute(s, st)  # the winner's write
        raise OSError(39, "Directory not empty")  # what os.replace says to the loser

    out = cluster.train_task(spec, str(store.root), loses, {})
    assert out == {"key": spec.key, "trained": False, "seconds": out["seconds"]}
    assert store.get(spec) is not None

    def broken(s, st):
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        cluster.train_task(tiny().spec("an", seed=1), str(store.root), broken, {})


def test_plan_orders_dependencies_first_and_once():
    P = tiny()
    s1a, s1b = P.spec("an", seed=0), P.spec("an", seed=1)
    s2a = P.spec("gr", seed=0, init_from=s1a)
    s2b = P.spec("gr", seed=1, init_from=s1b)
    s3 = P.spec("wan", seed=0, init_from=s2a)
    stored = {s1b.key}
    order = cluster.plan([s3, s2a, s2b, s3], lambda s: s.key in stored)
    keys = [s.key for s in order]
    # by hand: s3 needs s2a needs s1a (missing); s2b needs s1b (stored); duplicates once
    assert keys == [s1a.key, s2a.key, s3.key, s2b.key]
    assert cluster.dependencies(s3) == [s2a] and cluster.dependencies(s1a) == []


def test_engine_requests_and_bad_values(monkeypatch):
    monkeypatch.delenv(cluster.WORKERS_ENV, raising=False)
    monkeypatch.delenv(cluster.SCHEDULER_ENV, raising=False)
    assert cluster.requested() is None  # the default stays one process
    assert cluster.requested(workers=3) == (3, None)
    monkeypatch.setenv(cluster.WORKERS_ENV, "2")
    assert cluster.requested() == (2, None)
    assert cluster.requested(scheduler="tcp://h:8786") == (None, "tcp://h:8786")  # arguments win
    monkeypatch.setenv(cluster.WORKERS_ENV, "")
    monkeypatch.setenv(cluster.SCHEDULER_ENV, "tcp://h:8786")
    assert cluster.requested() == (None, "tcp://h:8786")
    for bad in (0, -1, "two", "1.5", True):
        with pytest.raises(ValueError, match="whole number >= 1"):
            cluster.requested(workers=bad)
    with pytest.raises(ValueError, match="not both"):
        cluster.requested(workers=2, scheduler="tcp://h:8786")


@pytest.mark.parametrize("argv, match", [
    (["benchmark", "--workers", "0"], "not a whole number >= 1"),
    (["report", "--workers", "x"], "not a whole number >= 1"),
    (["benchmark", "--workers", "2", "--scheduler", "tcp://h:1"], "not allowed with argument"),
])
def test_cli_refuses_bad_engine_arguments(argv, match, capsys):
    from mlpl_lab.cli import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert match in capsys.readouterr().err


def test_cli_refuses_a_scheduler_nobody_answers(tmp_path, capsys, monkeypatch):
    import socket

    from mlpl_lab.cli import main

    with socket.socket() as s:  # a free port: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", "2s")
    t0 = time.perf_counter()
    with pytest.raises(SystemExit) as exc:
        main(["benchmark", "--profile", "smoke", "--scheduler", f"tcp://127.0.0.1:{port}",
              "--out", str(tmp_path)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "no Dask scheduler answers" in err and "--workers N" in err
    assert not (tmp_path / "07_benchmark.html").exists()
    print(f"unreachable scheduler refused in {time.perf_counter() - t0:.1f} s")


def test_cli_without_dask_names_the_extra_before_training(tmp_path, capsys, monkeypatch):
    """Dask is the optional ``cluster`` extra: where it is not installed, ``--workers`` is refused
    at once with the install command, and nothing is written. Bug caught: an ImportError
    traceback from deep in the engine, after the notebooks had started."""
    import sys

    from mlpl_lab.cli import main

    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    with pytest.raises(SystemExit) as exc:
        main(["benchmark", "--profile", "smoke", "--workers", "2", "--out", str(tmp_path)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "pip install 'mlpl-lab[cluster]'" in err and "--plan-workers" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.notebook
def test_cli_benchmark_with_two_workers_then_nothing_to_train(tmp_path, monkeypatch, capsys):
    """The issue's "done when", on the single-positive column of the smoke grid (to keep the
    suite short): ``mlpl-lab benchmark --profile smoke --workers 2`` on an empty store, then
    again: the second call trains nothing."""
    from mlpl_lab.chapters import benchmark
    from mlpl_lab.cli import main

    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path / "data"))
    monkeypatch.delenv(cluster.WORKERS_ENV, raising=False)
    monkeypatch.delenv(cluster.SCHEDULER_ENV, raising=False)
    argv = ["benchmark", "--profile", "smoke", "--regimes", "single", "--workers", "2",
            "--out", str(tmp_path / "out")]
    assert main(argv) == 0
    first = capsys.readouterr().out
    runs = tmp_path / "data" / "runs"
    from mlpl_lab.protocol.asked import nothing_stored

    specs = benchmark.specs(benchmark.design("smoke", regimes=["single"]), nothing_stored).flat()
    grid_keys = {s.key for s in specs}
    pretraining = {s.backbone_from.key for s in specs if s.backbone_from is not None}
    assert len(pretraining) == 1
    distinct = grid_keys | pretraining  # the grid and the pretraining run it starts from
    # GR is schedule-bound: where one of its runs did not converge, 07 adds the length check (GR
    # and AN with only their epochs raised to chapter 02's longer schedule), in a second round
    from mlpl_lab.chapters import gr
    from mlpl_lab.runs.store import RunStore

    store = RunStore(runs)
    cells = [s for s in specs if s.method in ("gr", "an")]
    if any(not store.get(s).converged for s in cells if s.method == "gr"):
        longer = gr.length_check_epochs(benchmark.design("smoke").profile)
        distinct |= {s.replace(train=dict(s.train, epochs=longer)).key for s in cells}
    assert set(stored_keys(runs)) == distinct
    assert f"training {len(grid_keys)}" in first and "Dask workers" in first
    base = grid_keys | pretraining
    assert f"runs: {len(base)} done, 0 running, 0 left" in first
    if distinct != base:  # the length check's round
        assert f"training {len(distinct - base)}" in first
        assert f"runs: {len(distinct - base)} done, 0 running, 0 left" in first
    assert (tmp_path / "out" / "07_benchmark_mAP.csv").exists()
    made = {k: (runs / k / "summary.json").stat().st_mtime_ns for k in distinct}

    assert main(argv) == 0
    second = capsys.readouterr().out
    assert "training" not in second and "Dask workers" not in second
    assert {k: (runs / k / "summary.json").stat().st_mtime_ns for k in stored_keys(runs)} == made
