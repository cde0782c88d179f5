"""The full set of runs each notebook asks for, per profile: the fixture that keeps the chapters-
as-data refactor (issue 50) from changing what any notebook trains.

Each run is named by its **spec fingerprint**: sha256 of the spec's canonical JSON (the first 12
hex digits: 48 bits, so two of the fixture's ~1,600 specs share one with odds near 1 in 10^8),
without the numerics versions a run key adds, so the fixture outlives a change of how keys are
versioned (issue 51). The fixture is written a few fingerprints per line (:func:`fixture_text`).

    python tests/plan_keys.py --write --profile cpu     # the chapters' specs, the shipped pack as the store
    python tests/plan_keys.py --write --profile smoke   # needs the smoke series trained in $MLPL_LAB_DATA
    python tests/plan_keys.py --write --profile gpu     # nothing stored: what is decidable at once

``cpu`` and ``smoke`` are complete (every choice is read from stored runs); ``gpu`` holds what is
decidable with nothing stored (``"complete": false``).

``smoke`` and ``gpu`` were written by the dry-run planner from before the refactor and stay as they
are. ``cpu`` follows the shipped pack: a new pack can make a chapter ask for more (a pilot that
gained adds a schedule-bound row's length check), so after an export ``--write --profile cpu``
re-reads it from each chapter's ``specs`` (:func:`specs_keys`, the reading the tests make) with the
shipped pack as a read-only store; the diff is what the new pack asks for, to read before it is
committed.
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


#: hex digits of a spec's sha256 that name it in the fixture
FINGERPRINT_HEX = 12
#: fingerprints per line of the fixture's lists
PER_LINE = 6


def fingerprint(spec) -> str:
    return hashlib.sha256(spec.canonical_json().encode()).hexdigest()[:FINGERPRINT_HEX]


def fixture_text(data: dict) -> str:
    """``data`` (``{profile: {"complete": bool, "notebooks": {stem: [fingerprint, ...]}}}``) as JSON
    with sorted keys and each list :data:`PER_LINE` fingerprints to a line."""
    out = ["{"]
    for i, (profile, entry) in enumerate(sorted(data.items())):
        out.append(f' {json.dumps(profile)}: {{')
        out.append(f'  "complete": {json.dumps(entry["complete"])},')
        out.append('  "notebooks": {')
        stems = sorted(entry["notebooks"].items())
        for j, (stem, keys) in enumerate(stems):
            keys = sorted(keys)
            rows = [", ".join(json.dumps(k) for k in keys[n:n + PER_LINE]) for n in range(0, len(keys), PER_LINE)]
            body = "[]" if not rows else "[\n" + ",\n".join("    " + r for r in rows) + "\n   ]"
            out.append(f'   {json.dumps(stem)}: {body}' + ("," if j < len(stems) - 1 else ""))
        out.append("  }")
        out.append(" }" + ("," if i < len(data) - 1 else ""))
    out.append("}")
    return "\n".join(out) + "\n"


def with_stages(specs):
    """Every spec and the specs it starts from (stage one, the pretraining run)."""
    out = {}
    todo = list(specs)
    while todo:
        s = todo.pop()
        out.setdefault(fingerprint(s), s)
        todo += [x for x in (s.init_from, s.backbone_from) if x is not None]
    return out


def design_for(module, stem, profile):
    """The chapter's design for ``profile`` with its notebook's literal parameters."""
    from mlpl_lab.protocol.plan import notebook_parameters

    params = notebook_parameters(ROOT / "notebooks" / f"{stem}.ipynb")
    kwargs = {k: params[k] for k in getattr(module, "PARAMETERS", ()) if k in params}
    return module.design(profile, **kwargs)


def asked_keys(module, design, store, train: bool):
    """Every run the rounds ask for (and the stages they start from), by fingerprint."""
    from mlpl_lab.protocol.asked import ensure_asked
    from mlpl_lab.runs.ensure import read_only

    asked = []

    def recording(d, stored):
        a = module.specs(d, stored)
        asked.extend(a.flat("now"))
        return a

    if train:
        ensure_asked(recording, design, store=store)
    else:
        with read_only("the shipped pack holds every cpu run"):
            ensure_asked(recording, design, store=store)
    return set(with_stages(asked))


def specs_keys(profile: str, store):
    """What each chapter's ``specs`` asks for under ``profile``, read only from ``store`` (nothing for
    a chapter that trains nothing)."""
    from mlpl_lab.protocol.registry import chapters

    return {c.notebook: sorted(asked_keys(c.module, design_for(c.module, c.notebook, profile), store,
                                          train=False)) if c.trains else []
            for c in chapters()}


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
        import tempfile

        from mlpl_lab.runs.shipped import import_missing
        from mlpl_lab.runs.store import RunStore

        with tempfile.TemporaryDirectory() as tmp:
            store = RunStore(Path(tmp) / "runs")
            import_missing("cpu", store)
            keys, stopped = specs_keys("cpu", store), []
    else:
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
        text = fixture_text(data)
        assert json.loads(text) == data, "the fixture's text does not read back as its data"
        FIXTURE.write_text(text)
        print(f"wrote {FIXTURE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
