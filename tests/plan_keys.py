"""The full set of runs each notebook asks for, per profile: the fixture that keeps the chapters-
as-data refactor (issue 50) from changing what any notebook trains.

Each run is named by its **spec fingerprint**: sha256 of the spec's canonical JSON (the first 20
hex digits), without the numerics versions a run key adds, so the fixture outlives a change of
how keys are versioned (issue 51).

    python tests/plan_keys.py --write --profile cpu     # the shipped pack as the store
    python tests/plan_keys.py --write --profile smoke   # needs the smoke series trained in $MLPL_LAB_DATA
    python tests/plan_keys.py --write --profile gpu     # nothing stored: what is decidable at once

``cpu`` and ``smoke`` are complete (every choice is read from stored runs); ``gpu`` holds what is
decidable with nothing stored (``"complete": false``).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "goldens" / "plan_keys.json"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("0[0-7]_*.ipynb"))


def fingerprint(spec) -> str:
    return hashlib.sha256(spec.canonical_json().encode()).hexdigest()[:20]


def with_stages(specs):
    """Every spec and the specs it starts from (stage one, the pretraining run)."""
    out = {}
    todo = list(specs)
    while todo:
        s = todo.pop()
        out.setdefault(fingerprint(s), s)
        todo += [x for x in (s.init_from, s.backbone_from) if x is not None]
    return out


def old_planner_keys(profile: str, serve_stored: bool):
    """What the dry-run planner (before issue 50) asks for, per notebook."""
    from mlpl_lab.protocol.plan import plan_series

    plan = plan_series(profile, NOTEBOOKS, serve_stored=serve_stored)
    return {nb.name: sorted(with_stages(nb.specs)) for nb in plan.notebooks}, \
        [nb.name for nb in plan.notebooks if nb.left is not None]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", required=True, choices=["smoke", "cpu", "gpu"])
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    if args.profile == "cpu":
        from mlpl_lab.runs.shipped import import_missing

        import_missing("cpu")
    keys, stopped = old_planner_keys(args.profile, serve_stored=args.profile != "gpu")
    complete = not stopped
    if args.profile != "gpu" and not complete:
        print(f"{args.profile}: the plan still stops in {stopped}: train the series first", file=sys.stderr)
        return 1
    entry = {"complete": complete, "notebooks": keys}
    print(f"{args.profile}: {sum(map(len, keys.values()))} runs over {len(keys)} notebooks, "
          f"{len(set().union(*map(set, keys.values())))} distinct; complete: {complete}")
    if args.write:
        data = json.loads(FIXTURE.read_text()) if FIXTURE.exists() else {}
        data[args.profile] = entry
        FIXTURE.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(f"wrote {FIXTURE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
