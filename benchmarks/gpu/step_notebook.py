"""check.sh step 4: notebook 02 (GR Loss) executed with papermill under the gpu design, cut to
fit the window, recording every cell's duration (papermill's ``metadata.papermill.duration``).

The cut: profile ``<base>_cut`` = the gpu profile (rehearsal: gpu_shape) with ``epochs`` and the
first ``seeds`` seeds of :data:`_common.SIZES` (``--epochs``/``--seeds`` override), everything else
— data, backbone, 64 px, AMP, the pretraining run, the gpu design of the chapter (method lists,
ablation rows) — as the profile has it. The notebook's parameters take a profile's name only, so
the cut is registered in the kernel by an IPython startup file (``IPYTHONDIR``) before the
notebook's first cell. ``live_training=False``: the live exercise reads the store, as in a report.

A cell past ``--budget`` seconds stops the notebook; the cells that ran are still recorded."""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from _common import ROOT, SIZES, write

STARTUP = """# written by benchmarks/gpu/step_notebook.py: the cut profile of the GPU check
import sys
sys.path.insert(0, {here!r})
import step_notebook
step_notebook.register_cut({base!r}, {epochs!r}, {seeds!r})
"""


def register_cut(base: str, epochs: int, seeds: int) -> str:
    """Register profile ``<base>_cut`` (``base`` with ``epochs`` and its first ``seeds`` seeds),
    taking ``base``'s chapter designs and live-exercise sizes. Returns its name."""
    from dataclasses import replace

    from mlpl_lab import profiles
    from mlpl_lab.chapters import common, live

    P = profiles.get_profile(base)
    name = f"{base}_cut"
    profiles.PROFILES[name] = replace(P, name=name, epochs=int(epochs), seeds=list(P.seeds[:int(seeds)]))
    common.DESIGN_OF[name] = common.design_name(base)
    # the live exercise is a cut of the converged run, so it may not train longer than the cut does
    # (the first GPU check stopped there: a 4-epoch live run against 1-epoch converged runs)
    def capped(e):
        return tuple(min(int(x), int(epochs)) for x in e) if isinstance(e, tuple) else min(int(e), int(epochs))

    live.LIVE[name] = {c: dict(size, epochs=capped(size["epochs"])) for c, size in live.LIVE[base].items()}
    return name


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--notebook", default="02_gr_loss.ipynb")
    ap.add_argument("--epochs", type=int, default=SIZES["notebook_epochs"])
    ap.add_argument("--seeds", type=int, default=SIZES["notebook_seeds"])
    ap.add_argument("--budget", type=int, default=int(os.environ.get("GPU_CHECK_NOTEBOOK_BUDGET", 200)),
                    help="seconds one cell may run")
    args = ap.parse_args()
    base = SIZES["profile"]
    ipython = Path(tempfile.mkdtemp(prefix="gpu-check-ipython-"))
    startup = ipython / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-gpu-check-cut.py").write_text(STARTUP.format(
        here=str(Path(__file__).resolve().parent), base=base, epochs=args.epochs, seeds=args.seeds))
    os.environ["IPYTHONDIR"] = str(ipython)
    name = register_cut(base, args.epochs, args.seeds)  # here too: for the record below

    from mlpl_lab.reporting.execute import execute_notebook
    from mlpl_lab.reporting.report import read_records

    out = Path(tempfile.mkdtemp(prefix="gpu-check-nb-"))
    path = ROOT / "notebooks" / args.notebook
    t0 = time.perf_counter()
    error = None
    try:
        executed = execute_notebook(path, out, profile=name, parameters={"live_training": False},
                                    html=False, timeout=args.budget)
    except Exception as exc:  # NotebookFailed: the cell that failed or ran past the budget
        executed, error = out / path.name, f"{type(exc).__name__}: {exc}"[:2000]
    wall = time.perf_counter() - t0
    cells, records = [], {}
    if executed.exists():
        nb = json.loads(executed.read_text())
        for i, c in enumerate(nb["cells"]):
            if c["cell_type"] != "code":
                continue
            pm = c.get("metadata", {}).get("papermill", {})
            src = "".join(c["source"]).strip().splitlines()
            cells.append({"index": i, "first_line": src[0][:100] if src else "", "duration": pm.get("duration"),
                          "status": pm.get("status"),
                          "error": any(o.get("output_type") == "error" for o in c.get("outputs", []))})
        try:
            records = read_records(executed)
        except Exception as exc:  # a notebook stopped early may hold no records yet
            records = {"unreadable": str(exc)}
    P = __import__("mlpl_lab.profiles", fromlist=["get_profile"]).get_profile(name)
    rec = {"what": f"notebook {args.notebook} under {name}: the {base} profile cut to {args.epochs} epochs and "
                   f"{args.seeds} seed(s) (the gpu design otherwise), executed with papermill",
           "notebook": args.notebook, "profile": name, "base_profile": base, "epochs": P.epochs,
           "seeds": P.seeds, "cell_budget_s": args.budget, "wall_seconds": wall, "completed": error is None,
           "error": error, "cells_run": sum(c["duration"] is not None for c in cells),
           "cells": cells, "records": {k: v for k, v in records.items() if k in ("mAP", "GR_minus_AN", "train_seconds")}}
    done = [c for c in cells if c["duration"] is not None]
    print(f"{args.notebook} under {name}: {'completed' if error is None else 'STOPPED'} in {wall:.0f} s; "
          f"slowest cells: " + ", ".join(f"#{c['index']} {c['duration']:.0f} s"
                                         for c in sorted(done, key=lambda c: -c["duration"])[:3]))
    write("notebook", rec)
    return 0 if error is None else 1


if __name__ == "__main__":
    raise SystemExit(main())
