"""A notebook run outside ``make report`` on a fresh store: served from the shipped pack, how fast.

``python benchmarks/bench_pack_serve.py [--notebooks 02 03] [--profile cpu]``

Issue 48's target: after ``make setup`` only, a student's papermill run of a chapter (the live
exercise off) imports the shipped course pack by itself and finishes in at most 3 minutes. For
each notebook this script makes an empty store in a temporary folder, runs papermill exactly as a
student would (no ``mlpl-lab report``), and records the wall time, the seconds the pack import
took (the notebook's own notice line), the runs stored and whether any run was trained (a run in
the store that the pack does not hold). The load average before and after is recorded with it:
on a loaded machine the figure says so. Writes ``benchmarks/records/pack_serve_<profile>.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 180  # issue 48: "finishes in <= 3 min"


def manifest_keys(pack: Path) -> set:
    if pack.is_dir():  # a pack of parts: its index, with the run lists beside its parts
        from mlpl_lab.runs.parts import read_index
        return {r["key"] for r in read_index(pack)["runs"]}
    with tarfile.open(pack, "r:gz") as tar:
        first = tar.next()
        return {r["key"] for r in json.loads(tar.extractfile(first).read())["runs"]}


def notebook_path(stem: str) -> Path:
    found = sorted((ROOT / "notebooks").glob(f"{stem}*.ipynb"))
    if len(found) != 1:
        raise SystemExit(f"--notebooks {stem}: expected one notebook, found {[p.name for p in found]}")
    return found[0]


def run_one(path: Path, profile: str, pack_keys: set) -> dict:
    import papermill as pm

    with tempfile.TemporaryDirectory(prefix="bench-pack-serve-") as tmp:
        data = Path(tmp) / "data"
        env_before = {k: os.environ.get(k) for k in ("MLPL_LAB_DATA", "MLPL_LAB_PROGRESS")}
        os.environ.update(MLPL_LAB_DATA=str(data), MLPL_LAB_PROGRESS="0")
        params = {"profile": profile}
        if "live_training" in pm.inspect_notebook(str(path)):
            params["live_training"] = False
        load0 = os.getloadavg()[0]
        t0 = time.perf_counter()
        try:
            pm.execute_notebook(str(path), str(Path(tmp) / path.name), parameters=params,
                                kernel_name="python3", cwd=str(path.parent), progress_bar=False)
        finally:
            for k, v in env_before.items():
                os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
        seconds = time.perf_counter() - t0
        runs = data / "runs"
        stored = {p.name for p in runs.iterdir() if (p / "summary.json").exists()} if runs.is_dir() else set()
        out = json.load(open(Path(tmp) / path.name))
        notice = [line for c in out["cells"] for o in c.get("outputs", []) if o.get("name") == "stdout"
                  for line in "".join(o.get("text", "")).splitlines() if "[mlpl-lab] the store lacked" in line]
    return {"notebook": path.name, "seconds": round(seconds, 1), "within_target": seconds <= TARGET_S,
            "runs_stored": len(stored), "runs_trained": len(stored - pack_keys),
            "import_notice": notice[0] if notice else None,
            "load_average_before": round(load0, 2), "load_average_after": round(os.getloadavg()[0], 2)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notebooks", nargs="+", default=["02"], help="notebook numbers (default: 02)")
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--out", default=None, help="record path (default benchmarks/records/pack_serve_<profile>.json)")
    args = ap.parse_args(argv)
    pack = ROOT / "data" / "packs" / f"{args.profile}-course"
    if not (pack / "pack.json").is_file():
        raise SystemExit(f"no shipped pack for profile {args.profile!r} ({pack})")
    keys = manifest_keys(pack)
    rows = []
    for stem in args.notebooks:
        row = run_one(notebook_path(stem), args.profile, keys)
        print(f"{row['notebook']}: {row['seconds']:.0f} s from an empty store (target {TARGET_S} s), "
              f"{row['runs_trained']} runs trained, load {row['load_average_before']}->{row['load_average_after']}",
              flush=True)
        rows.append(row)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    record = {"what": "papermill from an empty store, the shipped pack imported by the notebook itself "
                      "(live exercise off)", "profile": args.profile, "target_s": TARGET_S,
              "threads": os.environ.get("OMP_NUM_THREADS", "default"), "cores": os.cpu_count(),
              "python": platform.python_version(), "commit": commit,
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "notebooks": rows}
    out = Path(args.out) if args.out else ROOT / "benchmarks" / "records" / f"pack_serve_{args.profile}.json"
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    tmp.replace(out)
    print(f"wrote {out}")
    return 0 if all(r["runs_trained"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
