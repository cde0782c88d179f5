"""``report`` and ``benchmark`` first train the series' planned runs -- every run the notebooks
ask for that does not depend on another run's results, deduplicated, stage one before stage two,
longest first (:mod:`mlpl_lab.protocol.plan`) -- on ``--plan-workers N`` single-thread worker
processes (default: one per core, or ``--workers-per-device`` per GPU; :mod:`mlpl_lab.runs.workers`), then execute the
notebooks warm; ``--plan-workers 0`` leaves every run to the notebooks."""
from __future__ import annotations

import os
import time

from .errors import CommandError

#: notebooks a series executes at once (default: :func:`lanes_for`)
LANES_ENV = "MLPL_LAB_REPORT_LANES"

#: at most this many rounds of plan-then-train (each round reaches past the choices made from the
#: runs the round before stored: tuning, chapter 06's γ)
PLAN_ROUNDS = 4


def train_plan_first(args, paths, parameters=None) -> bool:
    """``report`` and ``benchmark``: train the notebooks' planned runs (under ``parameters``, the
    notebooks' own where None) on worker processes before the notebooks run (skipped with
    ``--plan-workers 0`` and under Dask's ``--workers`` / ``--scheduler``). Planned in rounds
    (:data:`PLAN_ROUNDS`), each reading the stored runs: after a round is trained the series is
    planned again, so runs chosen from results (tuning, chapter 06's γ) are trained here too; a
    store that already holds every planned run is planned once.

    Returns True when the last round found every planned run stored (nothing trained, nothing
    failed): the notebooks then only read, and may run side by side (:func:`lanes_for`)."""
    n = getattr(args, "plan_workers", None)
    if n == 0 or getattr(args, "workers", None) or getattr(args, "scheduler", None):
        return False
    from ..protocol.plan import describe, plan_series
    from ..runs import workers
    from ..runs.store import RunStore

    store = RunStore()
    for round_ in range(1, PLAN_ROUNDS + 1):
        t0 = time.perf_counter()
        # every round reads the stored runs, so the choices made from them (tuning, 06's γ) are
        # planned as far as the store reaches: a store that holds the series is planned once
        plan = plan_series(args.profile, paths, parameters, serve_stored=True)
        todo = [s for s in plan.order if not workers.looks_stored(store, s)]
        if round_ > 1 and not todo:
            return True
        text = describe(plan, stored=lambda spec: workers.looks_stored(store, spec))
        print(f"[mlpl-lab] round {round_}, planned in {time.perf_counter() - t0:.1f} s: "
              + text.replace("\n", "\n[mlpl-lab] "), flush=True)
        if not todo and not any(nb.left for nb in plan.notebooks):
            return True
        report = workers.train(plan.order, store, workers=n, per_device=getattr(args, "workers_per_device", None),
                               note=lambda text: print("  [plan] " + text, flush=True))
        print(f"[mlpl-lab] plan: {report.describe()}", flush=True)
        for why in list(report.failed.values()) + list(report.skipped.values()):
            print(f"  [plan] left to the notebooks: {why}", flush=True)
        if report.failed or not any(nb.left for nb in plan.notebooks):
            # everything reached, or a failed run the next round could not get past
            return not todo and not report.failed
    return False


def lanes_for(all_stored: bool) -> int:
    """How many notebooks a series executes at once: two on a machine of two cores or more when
    every planned run is stored (the notebooks only read; ``benchmarks/bench_make_report.py`` times
    both ways, record ``benchmarks/records/make_report_cpu.json``); one otherwise
    (two torch processes training at once are several times slower on 2 cores).
    ``MLPL_LAB_REPORT_LANES`` sets it (1: one by one)."""
    env = os.environ.get(LANES_ENV)
    if env:
        try:
            lanes = int(env)
        except ValueError:
            lanes = 0
        if lanes < 1:
            raise CommandError(f"{LANES_ENV}={env!r}: give a whole number of notebooks at once, 1 or more "
                               "(1 runs them one by one)")
        return lanes
    return min(2, os.cpu_count() or 1) if all_stored else 1
