"""How converged is a pack, by the protocol's two tests? Reads a pack of parts (the shipped course
pack by default) whole and writes ``benchmarks/records/convergence_audit_<profile>.json``:

* **rows and pilots**: a row is every run of one spec but its seed; its pilot is the longer twin of
  lowest seed that has one at ≥ 4/3 of its epochs, the shortest such (what
  :mod:`mlpl_lab.protocol.pilots` reads; here from the pack alone, without the chapters' families,
  so a row two chapters share is one row). How many rows have a pilot, and of those how many gain
  ≥ 0.5 test mAP (not converged at their length);
* **does one seed speak for its row?** Where a row's other seeds were also trained at its pilot's
  length, how many of their own gains agree with the pilot's verdict, and in how many rows the
  verdict on the mean gain over every seed agrees with the pilot's (the pilot is one seed: this
  measures how often that one seed misjudges its row);
* **called converged**: a run is called converged when its row's pilot gains < 0.5, else (no pilot)
  when its last quarter gained < 0.5; of the runs called converged that have a longer twin (their
  own seed, ≥ 4/3 of the epochs), the share whose twin gains ≥ 0.5 test mAP (the protocol's bar:
  at most 10 %), beside the same share under the last-quarter flag alone;
* the distinct runs, the share with the last-quarter flag, and with pilots where stored.

The chapters' own shares (schedule-bound runs counted where their length check agrees) are in the
executed reports; this reads the stored runs only. Usage: ``python benchmarks/convergence_audit.py
[PACK] [--profile cpu]``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
from records_io import write_record  # noqa: E402

from mlpl_lab.core.convergence import TOLERANCE  # noqa: E402
from mlpl_lab.protocol.lengths import lengthened_epochs  # noqa: E402
from mlpl_lab.runs.parts import read_parts  # noqa: E402


def _row_key(spec_dict: Dict[str, Any], drop_seed: bool) -> str:
    d = json.loads(json.dumps(spec_dict))
    d["train"].pop("epochs", None)
    if drop_seed:
        d.pop("seed", None)
    return json.dumps(d, sort_keys=True)


def audit(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
    rows: Dict[str, List[Dict[str, Any]]] = {}
    twins: Dict[str, List[Dict[str, Any]]] = {}
    for r in runs:
        summary = json.loads(r["files"]["summary.json"])
        spec = r["spec"].as_dict()
        item = {"key": r["key"], "seed": int(spec["seed"]), "epochs": int(spec["train"]["epochs"]),
                "method": spec["method"], "test": summary.get("test_mAP"),
                "last_quarter": bool((summary.get("convergence") or {}).get("converged")),
                "twins": _row_key(spec, False)}
        rows.setdefault(_row_key(spec, True) + f"|{item['epochs']}", []).append(item)
        twins.setdefault(item["twins"], []).append(item)

    def longer_twin(item, tw):
        longer = [t for t in tw if t["epochs"] >= lengthened_epochs(item["epochs"]) and t["test"] is not None]
        return min(longer, key=lambda t: t["epochs"]) if longer else None

    called: Dict[str, bool] = {}
    with_pilot = gaining = 0
    agreement = {"rows": 0, "other seeds": 0, "agree": 0, "rows whose seed mean agrees": 0,
                 "pilot gains, other seeds gain >= 0.5": 0, "pilot gains, other seeds": 0}
    for members in rows.values():
        # the row's pilot: the longer twin of its lowest seed that has one (chapters pilot their first
        # seed, which is not always the lowest a row shares with another chapter)
        pairs = [(m, longer_twin(m, twins[m["twins"]])) for m in sorted(members, key=lambda m: m["seed"])
                 if m["test"] is not None]
        first, pilot = next(((m, t) for m, t in pairs if t is not None), (None, None))
        verdict = None if pilot is None else pilot["test"] - first["test"] < TOLERANCE
        with_pilot += pilot is not None
        gaining += verdict is False
        for m in members:
            called[m["key"]] = m["last_quarter"] if verdict is None else verdict
        # does one seed's pilot speak for its row? the other seeds trained at the pilot's length too
        others = [(m, t) for m, t in pairs if t is not None and m is not first and t["epochs"] == pilot["epochs"]]
        if verdict is not None and others:
            gains = [t["test"] - m["test"] for m, t in others]
            agreement["rows"] += 1
            agreement["other seeds"] += len(gains)
            agreement["agree"] += sum((g < TOLERANCE) == verdict for g in gains)
            mean = (pilot["test"] - first["test"] + sum(gains)) / (1 + len(gains))
            agreement["rows whose seed mean agrees"] += (mean < TOLERANCE) == verdict
            if not verdict:
                agreement["pilot gains, other seeds"] += len(gains)
                agreement["pilot gains, other seeds gain >= 0.5"] += sum(g >= TOLERANCE for g in gains)

    def twin_share(flag_of) -> Dict[str, Any]:
        n = bad = 0
        for tw in twins.values():
            for item in tw:
                if not flag_of(item) or item["test"] is None:
                    continue
                t = longer_twin(item, tw)
                if t is None:
                    continue
                n += 1
                bad += t["test"] - item["test"] >= TOLERANCE
        return {"with a longer twin": n, "twin gains >= 0.5": bad, "share": bad / n if n else None}

    distinct = len(called)
    return {"distinct runs": distinct, "rows": len(rows), "rows with a pilot": with_pilot,
            "rows whose pilot gains >= 0.5": gaining,
            "share converged, last quarter": sum(i["last_quarter"] for tw in twins.values() for i in tw) / distinct,
            "share converged, pilots where stored": sum(called.values()) / distinct,
            "called converged and twin gains, pilots where stored": twin_share(lambda i: called[i["key"]]),
            "called converged and twin gains, last quarter alone": twin_share(lambda i: i["last_quarter"]),
            "pilot against the row's other seeds at the pilot's length": agreement}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pack", nargs="?", default="data/packs/cpu-course")
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    index, runs = read_parts(args.pack)
    record = {"pack": index["name"], "benchmark": "convergence_audit", **audit(runs)}
    print(json.dumps(record, indent=1))
    write_record(args.out or Path(__file__).resolve().parent / "records" / f"convergence_audit_{args.profile}.json",
                 record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
