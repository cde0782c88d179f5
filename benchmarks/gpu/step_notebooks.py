"""check.sh step 3 (right after the imports and tests/gpu): all eight notebooks (00-07) executed
end to end with papermill under the cut (:mod:`cut`: the gpu design at the mode's sizes, at the
level :func:`cut.size` chose from the GPU records so the step fits ``--budget`` on one card; the
rehearsal on the CPU takes the same level, so the same plan), as a series is: first the planned
runs trained on worker processes — several sharing each GPU (``--workers``, default: the
throughput record's best workers per device), one single-thread worker per core on the CPU — then
the eight notebooks side by side, as many at once as two cores each allow (one process and kernel each: the runs are stored, so each only
reads them and trains its live exercise), each under what is left of ``--budget``. The live
exercises of 01-06 train under the cut (``live_training=True``, sized inside the cut's converged
runs: :func:`cut.live_sizes`).

Records ``notebooks.json``, rewritten after each notebook (a step stopped by its timeout still
leaves what it did): the planned training (runs, workers, seconds) and, per notebook in series
order, completed or not, its seconds, the cells that ran and the first failure. A notebook not
reached within the budget is listed as such, never left out."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from types import SimpleNamespace

from _common import MODE, OUT, ROOT, write

import cut

#: rounds of plan-then-train before the notebooks (each reaches the runs chosen from the round
#: before: tuning, 06's γ); what is left the notebooks train themselves
PLAN_ROUNDS = 2


def default_workers() -> int:
    """Workers for the planned runs, the path the series takes in both modes: on CUDA, the devices
    × the workers per device that measured best in the GPU check's throughput record
    (:func:`cut.best_workers`, the committed record: this check measures throughput after the
    notebooks); on the CPU, one single-thread worker per core, as ``mlpl-lab report`` trains a
    series there (two threads in one process spend about twice the CPU time of one on a run of the
    rehearsal, measured on the shared 2-core machine: bfloat16 is emulated in short steps, and the
    second thread mostly waits)."""
    import torch

    if not torch.cuda.is_available():
        return os.cpu_count() or 1
    return cut.best_workers()["workers"] * torch.cuda.device_count()


def side_by_side(n: int) -> int:
    """How many notebooks run at once: two cores each (a kernel and its papermill), at most ``n``;
    one on the rehearsal's two cores, eight on a card's sixteen."""
    return max(1, min(n, (os.cpu_count() or 2) // 2))


def cells_of(executed: Path):
    """The code cells of an executed notebook: index, first line, papermill duration, error, and
    whether it was running when the notebook stopped (papermill's status, saved as the cell starts)."""
    if not executed.exists():
        return []
    nb = json.loads(executed.read_text())
    out = []
    for i, c in enumerate(nb["cells"]):
        if c["cell_type"] != "code":
            continue
        pm = c.get("metadata", {}).get("papermill", {})
        src = "".join(c["source"]).strip().splitlines()
        out.append({"index": i, "first_line": src[0][:100] if src else "", "duration": pm.get("duration"),
                    "error": any(o.get("output_type") == "error" for o in c.get("outputs", [])),
                    "running": pm.get("status") == "running"})  # papermill saves a cell's start
    return out


#: one notebook in a process of its own: execute_notebook sets environment variables for its kernel
RUNNER = """
import json, sys
from pathlib import Path
path, out, profile, params, timeout, here, mode, level = sys.argv[1:9]
sys.path.insert(0, here)
import cut
cut.register_cut(mode, int(level))
from mlpl_lab.reporting.execute import execute_notebook
execute_notebook(Path(path), Path(out), profile=profile, parameters=json.loads(params), html=False,
                 timeout=int(timeout))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=float, default=300, help="seconds for the whole step")
    ap.add_argument("--workers", type=int, default=None,
                    help="worker processes for the planned runs (0: the notebooks train them)")
    ap.add_argument("--notebooks", nargs="*", default=list(cut.NOTEBOOKS))
    args = ap.parse_args()
    t_start = time.perf_counter()
    sizing = cut.size(cut.NOTEBOOKS_LIMIT_S)  # from the GPU records in both modes: the same plan
    level = sizing["level"]
    ipython = Path(tempfile.mkdtemp(prefix="gpu-check-ipython-"))
    cut.startup_file(ipython, MODE, level)
    os.environ["IPYTHONDIR"] = str(ipython)  # the kernels register the cut before the first cell
    if MODE == "rehearse":  # one thread a kernel, as the workers: what is left to train runs there
        os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = "1"
    name = cut.register_cut(MODE, level)  # and this process, for the plan and the record
    from mlpl_lab.profiles import get_profile

    P = get_profile(name)
    paths = [ROOT / "notebooks" / f"{nb}.ipynb" for nb in args.notebooks]
    workers = default_workers() if args.workers is None else args.workers
    rec = {"what": f"the notebooks executed end to end with papermill under {name}: the gpu design (the "
                   f"{cut.BASE} profile's literals) at the {MODE} sizes; " + (
                       f"the planned runs trained first on {workers} worker processes sharing the device(s)"
                       if workers else "each notebook trains its own runs"),
           "mode": MODE, "profile": name, "sizes": cut.CUT_SIZES[MODE] | cut.LEVELS[level],
           "sizing": sizing, "budget_s": args.budget,
           "planned_training": None, "notebooks": [
               {"notebook": nb, "completed": False, "seconds": None, "status": "not reached"}
               for nb in args.notebooks]}

    def save():
        done = [n for n in rec["notebooks"] if n["completed"]]
        rec["completed"] = len(done)
        rec["wall_seconds"] = time.perf_counter() - t_start
        write("notebooks", rec)

    # 1. the planned runs, on workers sharing the device(s)
    from mlpl_lab.commands import plan_first
    from mlpl_lab.runs.store import RunStore

    t0 = time.perf_counter()
    before = sum(1 for _ in RunStore().keys()) if workers else 0
    if workers:  # a step stopped while the planned runs train still says so
        rec["planned_training"] = {"workers": workers, "rounds": PLAN_ROUNDS, "status": "started"}
        save()
    plan_first.PLAN_ROUNDS = PLAN_ROUNDS
    try:
        if workers:
            plan_first.train_plan_first(SimpleNamespace(profile=name, plan_workers=workers, workers=None,
                                                        scheduler=None), paths, {"live_training": True})
        error = None
    except Exception as exc:  # the notebooks train what is missing
        error = f"{type(exc).__name__}: {exc}"[:1000]
        traceback.print_exc()
    rec["planned_training"] = None if not workers else {
        "workers": workers, "rounds": PLAN_ROUNDS, "status": "done", "seconds": time.perf_counter() - t0,
        "runs_stored": sum(1 for _ in RunStore().keys()) - before, "error": error}
    save()

    # 2. the notebooks side by side (as many at once as the cores keep two each), each in a process
    # of its own under what is left of the budget, started in series order
    out = Path(tempfile.mkdtemp(prefix="gpu-check-nb-"))
    deadline = t_start + args.budget
    at_once = side_by_side(len(paths))
    rec["notebooks_at_once"] = at_once
    waiting = list(zip(rec["notebooks"], paths))
    running = {}
    print(f"{len(waiting)} notebooks under {name}, {at_once} at a time ...", flush=True)
    while waiting or running:
        while waiting and len(running) < at_once:
            entry, path = waiting.pop(0)
            left = deadline - time.perf_counter()
            if left < 5:
                entry["status"] = "not reached (budget spent)"
                continue
            live = entry["notebook"] in cut.LIVE_NOTEBOOKS
            entry["live_training"] = live
            entry["status"] = "started; the step's time ran out while it ran"  # what stays if the step is killed
            running[entry["notebook"]] = (entry, path, time.perf_counter(), subprocess.Popen(
                [sys.executable, "-c", RUNNER, str(path), str(out), name,
                 json.dumps({"live_training": True} if live else {}), str(int(left)),
                 str(Path(__file__).resolve().parent), MODE, str(level)],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
            save()
        for nb, (entry, path, t0, proc) in list(running.items()):
            if proc.poll() is None and time.perf_counter() < deadline:
                continue
            if proc.poll() is None:
                proc.kill()
            text = proc.communicate()[0] or ""
            entry["seconds"] = time.perf_counter() - t0
            if proc.returncode == 0:
                entry.update(completed=True, status="completed")
            else:
                entry.update(status="stopped", error=text.strip().splitlines()[-1][:1500] if text.strip()
                             else f"exit code {proc.returncode}")
            cells = cells_of(out / path.name)
            entry["cells_run"] = sum(c["duration"] is not None for c in cells)
            entry["slowest_cells"] = sorted((c for c in cells if c["duration"] is not None),
                                            key=lambda c: -c["duration"])[:3]
            if entry["status"] == "stopped":  # the cell the budget stopped it in: what to profile next
                entry["stopped_in"] = next(({"index": c["index"], "first_line": c["first_line"]}
                                            for c in cells if c["running"]), None)
            print(f"  {nb}: {entry['status']} in {entry['seconds']:.0f} s, {entry['cells_run']} cells", flush=True)
            del running[nb]
            save()
        time.sleep(0.5)
    save()
    print(f"{rec['completed']} of {len(paths)} notebooks completed under {name} in {rec['wall_seconds']:.0f} s")
    return 0 if rec["completed"] == len(paths) else 1


if __name__ == "__main__":
    raise SystemExit(main())
