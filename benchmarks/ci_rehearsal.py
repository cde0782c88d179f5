"""CI as it runs, measured: ``bash .ci/run`` on a fresh clone of this checkout's HEAD, each top-level
step timed (``bash -x`` with a time stamp in ``PS4``), the whole wall time and pytest's summary
lines kept; the record is ``benchmarks/records/ci_rehearsal_cpu.json`` (CI's limit is 90 min, the
project's target 40).

Usage (on a machine with nothing else running: the figure is CI's)::

    .venv/bin/python benchmarks/ci_rehearsal.py [--keep]
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from records_io import write_record  # noqa: E402

#: a top-level command of .ci/run under bash -x (one '+'), with the stamp PS4 puts before it
_STEP = re.compile(r"^\+ (\d+\.\d+) (.*)$")
_PYTEST = re.compile(r"^=*\s*(\d+ (?:passed|failed).*? in [\d.]+s.*?)\s*=*$")


def steps(trace: str, end: float):
    """``[(command, seconds)]`` of the top-level commands of a ``bash -x`` trace whose ``PS4`` is
    ``'+ $EPOCHREALTIME '``: each lasts until the next one starts (the last until ``end``)."""
    stamped = [(float(m.group(1)), m.group(2)) for m in map(_STEP.match, trace.splitlines()) if m]
    out = []
    for (t, cmd), nxt in zip(stamped, [s[0] for s in stamped[1:]] + [end]):
        out.append((cmd, nxt - t))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", action="store_true", help="keep the clone (its reports, its logs)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "records" / "ci_rehearsal_cpu.json")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="ci-rehearsal-"))
    clone = work / "clone"
    subprocess.run(["git", "clone", "-q", "--no-local", str(ROOT), str(clone)], check=True)
    commit = subprocess.run(["git", "-C", str(clone), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    env = dict(os.environ, CI="true")
    env.pop("MLPL_LAB_DATA", None)
    load0 = os.getloadavg()[0]
    t0 = time.time()
    log = work / "ci.log"
    with open(log, "w") as f:
        # PS4 is set by a start-up file (BASH_ENV): bash running as root ignores a PS4 it inherits
        # (the record of 2026-12-02's first rehearsal came out without its steps)
        ps4 = work / "ps4.sh"
        ps4.write_text("PS4='+ $EPOCHREALTIME '\n")
        proc = subprocess.run(["bash", "-x", ".ci/run"], cwd=clone, env=dict(env, BASH_ENV=str(ps4)),
                              stdout=f, stderr=subprocess.STDOUT)
    end = time.time()
    text = log.read_text(errors="replace")
    top = [(cmd, s) for cmd, s in steps(text, end) if not cmd.startswith(("export ", "cd ", "set ", "{ ", "uptime"))]
    record = {"what": "bash .ci/run on a fresh clone of main (CI=true), this 2-core machine; step times from "
                      "bash -x's time stamps (PS4) of each top-level command",
              "commit": commit, "date": _dt.date.today().isoformat(), "exit": proc.returncode,
              "wall_seconds": round(end - t0), "load_average_before": round(load0, 2),
              "steps": [{"step": cmd[:160], "seconds": round(s)} for cmd, s in top if s >= 1],
              "pytest": [m.group(1) for m in map(_PYTEST.match, text.splitlines()) if m]}
    write_record(args.out, record)
    print(json.dumps(record, indent=1))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"kept {work}")
    return proc.returncode


if __name__ == "__main__":
    raise SystemExit(main())
