"""Successive halving for the equal-budget tuning, measured on the shipped cpu course pack before it
is built: which trial would it keep, and what would it save?

The tuning (``mlpl_lab.protocol.tuning``) trains every trial of a method to the end on the
selection seed and keeps the best clean-validation mAP at its best epoch. Successive halving with
three trials stops every trial at a rung (a fraction of its epochs) and continues only the best so
far. A trial's schedule spans its full length either way, and a run is deterministic, so a trial
stopped at epoch ``r`` *is* the first ``r`` epochs of the pack's full trial: the rung's choice is
read from the pack's recorded validation curves, with no training.

Per tuned group (the selection-seed runs that differ only in their method parameters, and whose
parameters are exactly a catalogue row's tuning trials, in the tuning's order: a chapter's own rows
that differ in a parameter, 03's ablations or 06's γ, are not trials): the full
choice, the rung's choice at each fraction, whether they agree, the clean-validation mAP the rung's
choice gives up (its best over the whole run against the full choice's), and the trial epochs saved
(the survivor continues from its rung: ``E + (k - 1) r`` epochs instead of ``k E``). Ties go to the
earlier trial, the paper default first: ``tuning.choose`` itself decides both.

Usage: ``.venv/bin/python benchmarks/tuning_halving.py [--out benchmarks/records/tuning_halving_cpu.json]``
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import sys
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
from records_io import write_record  # noqa: E402
from mlpl_lab.catalogue.entries import by_label  # noqa: E402
from mlpl_lab.protocol.tuning import GRIDS, choose, selection_seed, trial_points, trials_for  # noqa: E402

PACK = ROOT / "data" / "packs" / "cpu-course"
FRACTIONS = (0.25, 1 / 3, 0.5)
#: the seed the shipped pack's tuning trials ran on
SELECTION_SEED = selection_seed("cpu")


def trial_settings(method: str, budget: int):
    """``[(label, grid keys, [setting per trial])]`` for the catalogue rows of ``method`` that have
    a tuning grid, in catalogue order (a group of a method with two such rows, LL-R with and
    without BoostLU, takes the first label whose trials it holds): a setting is every grid key's
    value in that trial (the paper default where the trial point leaves it), in the tuning's order."""
    out = []
    for label, grid in GRIDS.items():
        e = by_label(label)
        if e is not None and e.method == method:
            default = {k: v[0] for k, v in grid.items()}
            out.append((label, tuple(grid), [default | p for p in trial_points(label, budget)]))
    return out


def groups(manifest_runs, budget: int):
    """``{group: (label, [run per trial])}``: selection-seed runs equal but for ``method_params``,
    among which one run per trial of a catalogue row's tuning is found (:func:`trial_settings`):
    runs whose parameters outside the grid are the same (a chapter's design may add its own, e.g.
    ROLE's expected positives) and whose grid values are each trial's. Other variants (03's
    ablation switches, 06's γ rows) are left out. The trials in the tuning's order."""
    by = defaultdict(list)
    for run in manifest_runs:
        spec = run["spec"]
        if spec["seed"] != SELECTION_SEED:
            continue
        rest = {k: v for k, v in spec.items() if k != "method_params"}
        by[json.dumps(rest, sort_keys=True)].append(run)
    out = {}
    for key, runs in by.items():
        for label, keys, settings in trial_settings(runs[0]["spec"]["method"], budget):
            if len(settings) < 2:
                continue
            default = settings[0]
            by_rest = defaultdict(dict)  # parameters outside the grid -> {grid setting: run}
            for r in runs:
                params = r["spec"]["method_params"]
                outside = json.dumps({k: v for k, v in params.items() if k not in keys}, sort_keys=True)
                setting = json.dumps({k: params.get(k, default[k]) for k in keys}, sort_keys=True)
                by_rest[outside].setdefault(setting, r)
            for outside in sorted(by_rest, key=len):  # the fewest extra parameters first
                found = [by_rest[outside].get(json.dumps(t, sort_keys=True)) for t in settings]
                if all(found):
                    out[key] = (label, found)
                    break
            if key in out:
                break
    return out


def best_upto(history, r=None):
    vals = [row["val_mAP"] for row in history[:r] if row.get("val_mAP") is not None]
    return max(vals) if vals else -math.inf


def argbest(scores):
    """The tuning's own choice (``tuning.choose``) among trials scoring ``scores``."""
    return choose([({}, SimpleNamespace(best={"val_mAP": v})) for v in scores])


def halve_group(histories, seconds, fraction):
    """One tuned group under a rung at ``fraction`` of its epochs: ``(full choice, rung choice,
    rung epoch, seconds saved)``. The trials other than the rung's choice stop at the rung and save
    the rest of their epochs' seconds (a run's seconds spread evenly over its epochs)."""
    E = min(len(h) for h in histories)
    r = max(1, math.ceil(fraction * E))
    chosen = argbest([best_upto(h) for h in histories])
    pick = argbest([best_upto(h, r) for h in histories])
    saved = sum(s * (E - r) / E for i, s in enumerate(seconds) if i != pick)
    return chosen, pick, r, saved


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    from mlpl_lab.runs.pack import contents

    items = contents(PACK)
    manifest = {"runs": [item["meta"] for item in items]}
    history = {item["key"]: json.loads(item["files"]["history.json"])["history"] for item in items}
    total_seconds = sum(float(r.get("seconds") or 0.0) for r in manifest["runs"])
    rows, trial_seconds = [], 0.0
    saved = {f: 0.0 for f in FRACTIONS}
    for label, runs in groups(manifest["runs"], trials_for("cpu")).values():
        hist = [history[r["key"]] for r in runs]
        full = [best_upto(h) for h in hist]
        chosen = argbest(full)
        secs = [float(r.get("seconds") or 0.0) for r in runs]
        trial_seconds += sum(secs)
        row = {"label": label, "describe": runs[0]["describe"].split(" · ")[1:3], "method": runs[0]["spec"]["method"],
               "trials": [r["spec"]["method_params"] for r in runs], "epochs": min(len(h) for h in hist),
               "full_choice": chosen,
               "full_best_val_mAP": [round(v, 3) for v in full], "rungs": {}}
        for f in FRACTIONS:
            _, pick, r, sec = halve_group(hist, secs, f)
            row["rungs"][f"{f:.3f}"] = {"rung_epoch": r, "choice": pick, "agrees": pick == chosen,
                                        "val_mAP_given_up": round(full[chosen] - full[pick], 3)}
            saved[f] += sec
        rows.append(row)
    summary = {}
    for f in FRACTIONS:
        key = f"{f:.3f}"
        agree = sum(r["rungs"][key]["agrees"] for r in rows)
        given = [r["rungs"][key]["val_mAP_given_up"] for r in rows]
        summary[key] = {"groups": len(rows), "agree": agree,
                        "val_mAP_given_up_mean": round(sum(given) / len(given), 3) if given else None,
                        "val_mAP_given_up_max": max(given) if given else None,
                        "trial_seconds_saved": round(saved[f], 1),
                        "share_of_trial_seconds": round(saved[f] / trial_seconds, 3) if trial_seconds else None,
                        "share_of_pack_seconds": round(saved[f] / total_seconds, 3) if total_seconds else None}
        print(f"rung at {f:.2f} of the epochs: {agree}/{len(rows)} groups keep the full tuning's choice; "
              f"clean-val mAP given up: mean {summary[key]['val_mAP_given_up_mean']}, max "
              f"{summary[key]['val_mAP_given_up_max']}; saves {summary[key]['share_of_trial_seconds']:.0%} of "
              f"the trials' seconds, {summary[key]['share_of_pack_seconds']:.1%} of the pack's")
    if args.out:
        write_record(args.out, {"what": __doc__.split("\n\n")[0], "pack": str(PACK.relative_to(ROOT)),
                                "pack_created": manifest.get("created"),
                                "made": _dt.datetime.now().isoformat(timespec="seconds"),
                                "trial_seconds": round(trial_seconds, 1), "pack_seconds": round(total_seconds, 1),
                                "summary": summary, "groups": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
