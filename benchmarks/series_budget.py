"""What the cold cpu series costs, and what each cut would save: the plan's runs priced at the
seconds per epoch the shipped pack's runs measured, under named cut sets.

``mlpl-lab plan --tflops`` prices a run by its FLOPs at one rate; the methods' steps differ more
than their FLOPs say (LAC's label-query head, the two-network rows, LgConv), so this prices each
run at its family's measured seconds per training epoch at the profile's 4,000 images
(``benchmarks/records/eval_share_cpu.json``: the pack's runs, evaluation included, one thread per
worker, two workers on the two cores), scaled by its images. A cut set is a list of rules over the
planned runs (drop some, shorten some); the wall time assumes two workers kept busy.

Every run the series trains is counted: the plan's runs, the runs chosen from results (at their
stand-in choices) and the pending runs (07's scene families, the length checks, the longer runs).

Usage::

    .venv/bin/python benchmarks/series_budget.py --out benchmarks/records/series_budget_cpu.json
"""
from __future__ import annotations

import argparse
import datetime as _dt
import glob
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Callable, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from records_io import write_record  # noqa: E402

RATES_RECORD = Path("benchmarks/records/eval_share_cpu.json")
TWO_NETWORKS = ("cls", "cls_h", "cls_l", "coteaching", "coteaching_plus", "jocor")
#: LAC's measured cuts (forward + backward of its loss and of its label-query head alone); the
#: whole step also runs the backbone, so the smaller of the two is an upper bound of the step's
CUTS_RECORD = Path("benchmarks/records/cut_candidates_cpu.json")


def lac_speedup(record: Path = CUTS_RECORD) -> float:
    """The step speed-up the LAC cuts are priced at: the smaller of the two measured ones."""
    d = json.loads(record.read_text())
    return min(d["lac_loss"]["forward_backward"]["speedup"], d["label_query_head"]["forward_backward"]["speedup"])
TARGET_HOURS = 2.5


def family_of(run: dict) -> str:
    """The eval_share record's family of a planned run."""
    mk = run["model_kwargs"] or {}
    if mk.get("head") == "label_query":
        return "LAC"
    if mk.get("lgconv"):
        return "PU-MLC + LgConv"
    if run["method"] in TWO_NETWORKS:
        return "two networks (CLS, Co-teaching)"
    if run["method"].startswith("pu_mlc") or run["method"] == "vpu_plain":
        return "PU-MLC"
    if run["method"].startswith("gr"):
        return "GR"
    if run["method"] == "an":
        return "AN"
    return "other single-network"


def rates(record: Path = RATES_RECORD) -> Dict[str, float]:
    """Seconds per training epoch at 4,000 images, per family (evaluation included)."""
    fams = json.loads(record.read_text())["families"]
    return {k: v["seconds"] / v["epochs"] for k, v in fams.items()}


def planned_runs(profile: str = "cpu") -> List[dict]:
    """Every distinct run the series trains, with the notebook that first asks for it and whether
    it is planned now, chosen from results (stand-in) or pending."""
    from mlpl_lab.protocol.plan import plan_series

    plan = plan_series(profile, sorted(glob.glob("notebooks/0*.ipynb")))
    later, pending = plan.stand_ins()
    first: Dict[str, str] = {}
    for nb in plan.notebooks:
        for s in nb.specs + nb.later + nb.pending:
            first.setdefault(s.key, nb.name[:2])
    out = []
    for kind, specs in (("planned", plan.order), ("chosen later", later), ("pending", pending)):
        for s in specs:
            out.append({"notebook": first.get(s.key, "--"), "kind": kind, "method": s.method,
                        "regime": s.regime, "regime_params": dict(s.regime_params), "seed": s.seed, "epochs": int(s.train["epochs"]),
                        "n_train": int(s.data.get("n_train") or 0), "model_kwargs": s.train.get("model_kwargs"),
                        "pretraining": s.data.get("glyphs") == "digits"})
    return out


#: a rule: run -> None (dropped) or the epochs it trains under the cut
Rule = Callable[[dict], Optional[float]]


def halve(run):
    """The 27-epoch schedule at twice the learning rate (every chapter's lengths halved with it)."""
    return run["epochs"] if run["pretraining"] else run["epochs"] / 2


def tune_once(run):
    """07 tunes each method under single positive only and keeps the choice for its other regimes."""
    if run["notebook"] == "07" and run["kind"] == "planned" and run["regime"] == "drop_positives" \
            and not run["method"].startswith("lac"):
        return None
    return run["epochs"]


def length_checks_3_seeds(run):
    """07's length checks on seeds 1-3 under single positive only."""
    if run["kind"] == "pending" and run["notebook"] == "07" and run["epochs"] == 72 \
            and (run["regime"] != "single_positive" or run["seed"] > 3):
        return None
    return run["epochs"]


def lac_cuts(run):
    """LAC's two measured cuts at the smaller measured speed-up, an upper bound for the step (same
    numbers up to float rounding; bump method.lac, head.label_query)."""
    head = (run["model_kwargs"] or {}).get("head") == "label_query"
    return run["epochs"] / lac_speedup() if head else run["epochs"]


def pu_at_profile_length(run):
    """06's PU rows at the profile's epochs instead of the design's ``pu_epochs``."""
    from mlpl_lab.chapters import pu_mlc

    d = pu_mlc.design("cpu")
    return run["epochs"] * d.epochs / d.pu_epochs if run["epochs"] == d.pu_epochs else run["epochs"]


#: the methods of the guardrail claims (01 oracle/AN, 02 GR, 03 OPML-SP, 04 CLS, 06 PU-MLC vs
#: partial BCE): their runs keep five seeds in the cut set that fits the target
GUARDRAIL_METHODS = ("full", "an", "gr", "opml_sp", "cls", "pu_mlc", "partial_bce")


def single_positive_only(run):
    """07 measures the uniform single-positive regime only (its size-biased and drop 50 % columns go)."""
    if run["notebook"] == "07" and (run["regime"] != "single_positive" or run["regime_params"]):
        return None
    return run["epochs"]


def three_seeds_beyond_guardrails(run):
    """Every row but the guardrail claims' on seeds 0-3 only (ranks need 3; paired claims on them
    become wider)."""
    if run["seed"] > 3 and run["method"] not in GUARDRAIL_METHODS and not run["pretraining"]:
        return None
    return run["epochs"]


def families_at_half_size(run):
    """07's scene families at 2,000 training images."""
    if run["kind"] == "pending" and run["notebook"] == "07" and run["epochs"] == 54:
        run["n_train"] = run["n_train"] // 2
    return run["epochs"]


def half_images(run):
    """Every run but pretraining on at most 2,000 training images (half the cpu profile's 4,000;
    measured to break convergence: benchmarks/records/guardrail_probe_cpu_e27_lr4_n2000.json)."""
    if not run["pretraining"]:
        run["n_train"] = min(run["n_train"] or 4000, 2000)
    return run["epochs"]


#: named cut sets, each cumulative but the last; the rules that select runs read the planned run's own fields,
#: so they come before the ones that change its length
CUT_SETS: Dict[str, List[Rule]] = {
    "today's design": [],
    "27 epochs at lr 4e-3": [halve],
    "+ tuning once, length checks on 3 seeds": [tune_once, length_checks_3_seeds, halve],
    "+ LAC's measured cuts": [tune_once, length_checks_3_seeds, halve, lac_cuts],
    "+ PU rows at the profile's length": [tune_once, length_checks_3_seeds, pu_at_profile_length, halve, lac_cuts],
    # what the target would cost: not applied, priced to say it
    "what 2.5 h would cost: + 07 single positive only, 3 seeds beyond the guardrails, families at half size":
        [tune_once, length_checks_3_seeds, pu_at_profile_length, single_positive_only,
         three_seeds_beyond_guardrails, families_at_half_size, halve, lac_cuts],
    "and on half the images (measured: most runs no longer converge)":
        [tune_once, length_checks_3_seeds, pu_at_profile_length, single_positive_only,
         three_seeds_beyond_guardrails, families_at_half_size, half_images, halve, lac_cuts],
    # not cumulative: the 54-epoch protocol with the cuts that change no run's length (27 epochs keep
    # the claims but not the convergence guardrail: benchmarks/records/guardrail_probe_cpu.json)
    "the 54-epoch protocol with tuning once, length checks on 3 seeds and LAC's measured cuts":
        [tune_once, length_checks_3_seeds, lac_cuts],
}


def floor_runs(runs: List[dict]) -> List[dict]:
    """The least series the course's guardrails and the claims' new runs ask for, every other row
    of every chapter left out: the pretraining run; the five guardrail claims on five paired seeds
    (the oracle, AN, GR, OPML-SP and CLS under single positive at the profile's epochs; PU-MLC at
    06's ``pu_epochs`` and partial BCE at the profile's epochs, p = 0.5); 07's scene families as the
    plan designs them (its pending runs at the profile's epochs) with the default family's other
    block rows (Hill, EM, LL-R, PU-MLC under single positive, three seeds); a 4/3-length check on
    three seeds for each schedule-bound row of the block (GR, LL-R, OPML-SP). No tuning, no
    ablation, no sweep, no LAC, no other regime."""
    from mlpl_lab.chapters import pu_mlc
    from mlpl_lab.profiles import get_profile

    epochs = int(get_profile("cpu").epochs)
    pu_epochs = pu_mlc.design("cpu").pu_epochs

    def run(method, seed, e, regime="single_positive"):
        return {"notebook": "floor", "kind": "floor", "method": method, "regime": regime, "regime_params": {},
                "seed": seed, "epochs": e, "n_train": 4000, "model_kwargs": {}, "pretraining": False}

    out = [dict(r, kind="floor") for r in runs if r["pretraining"]]
    seeds5, seeds3 = range(1, 6), range(1, 4)
    for m in ("full", "an", "gr", "opml_sp", "cls", "partial_bce"):
        out += [run(m, s, epochs) for s in seeds5]
    out += [run("pu_mlc", s, pu_epochs, "noisy_negatives") for s in seeds5]
    out += [dict(r, kind="floor") for r in runs
            if r["kind"] == "pending" and r["notebook"] == "07" and r["epochs"] == epochs]
    out += [run(m, s, epochs) for m in ("hill", "em", "ll_r", "pu_mlc") for s in seeds3]
    out += [run(m, s, round(epochs * 4 / 3)) for m in ("gr", "ll_r", "opml_sp") for s in seeds3]
    return out


#: the floor's name in the record
FLOOR = "the floor: the guardrails and the claims' new runs alone"


def price(runs: List[dict], rules: List[Rule], rate: Dict[str, float]) -> dict:
    by = defaultdict(float)
    count = defaultdict(int)
    for run in runs:
        r = dict(run)
        for rule in rules:
            e = rule(r)
            if e is None:
                break
            r["epochs"] = e
        else:
            sec = r["epochs"] * rate[family_of(r)] * (r["n_train"] or 4000) / 4000
            by[f"{r['notebook']} {r['kind']}"] += sec
            count[f"{r['notebook']} {r['kind']}"] += 1
    total = sum(by.values())
    return {"runs": sum(count.values()), "single_thread_hours": total / 3600, "wall_hours_two_workers": total / 7200,
            "by_notebook": {k: {"runs": count[k], "hours": by[k] / 3600} for k in sorted(by)}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    rate = rates()
    runs = planned_runs()
    result = {name: price(runs, rules, rate) for name, rules in CUT_SETS.items()}
    floor = floor_runs(runs)
    result[FLOOR] = price(floor, [], rate)
    result[FLOOR + ", at 27 epochs (lr 4e-3)"] = price(floor, [halve], rate)
    for name, r in result.items():
        print(f"{name}: {r['runs']} runs, {r['single_thread_hours']:.1f} h single-thread, "
              f"{r['wall_hours_two_workers']:.2f} h on two workers (target {TARGET_HOURS} h)")
    if args.out:
        record = {"what": "the cold cpu series priced at the pack's measured seconds per epoch, under cut sets "
                          "(benchmarks/series_budget.py)",
                  "made": _dt.datetime.now().isoformat(timespec="seconds"), "rates_s_per_epoch": rate,
                  "cut_sets": {name: [r.__doc__.strip() for r in rules] for name, rules in CUT_SETS.items()}
                  | {FLOOR: [floor_runs.__doc__.strip()],
                     FLOOR + ", at 27 epochs (lr 4e-3)": [floor_runs.__doc__.strip(), halve.__doc__.strip()]},
                  "result": result, "target_hours": TARGET_HOURS}
        write_record(args.out, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
