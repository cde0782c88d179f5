"""Chapter 07's tables, computed from its ensured runs (:class:`.runs.BenchmarkRuns`): the cells
per metric, ranks, the share of the AN → oracle gap, cost, per-class gains, the data sets and
their rank test, the length checks, the clean-vs-observed selection; and what the notebook records.
Nothing here trains or asks for a run."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

from ...analysis import benchmark as bm
from ...protocol import bound_length
from ...protocol import tuning as tuner
from ...protocol.common import as_profile, splits_for
from ...protocol.recipes import rows, trial_params
from ...protocol.regimes import REGIMES
from .design import (AN, FAMILIES, FAMILY_MIN_GAP, ORACLE, OWN_DATA_SET, REFERENCE_ROWS, BenchmarkDesign,
                     data_set_scene, left_out, merged)
from .runs import BenchmarkRuns, cell_label

REGIME_RANKS_NOTE = ("description only: the label regimes of one data set share its images, test set, seeds "
                     "and backbone, so they are not the independent data sets a rank test needs (Demšar 2006); "
                     "no p and no critical difference over them (section 3's independent data sets give the test)")


def tables(results) -> Dict[str, Any]:
    """Every table of the chapter, as DataFrames keyed by their CSV name (``_``-prefixed
    entries are for the notebook only)."""
    import pandas as pd

    regimes = [r for r in REGIMES if r in results]
    course = [r.label for r in rows()]
    shown = [label for label in course if any(label in results[reg] for reg in regimes)]
    # a row added from a method file (mlpl-lab benchmark --add) after the course's rows
    shown += list(dict.fromkeys(m for reg in regimes for m in results[reg] if m not in course))
    out: Dict[str, Any] = {}
    cells = {}
    for metric, name in (("test_mAP", "mAP"), ("test_CF1", "CF1"), ("test_OF1", "OF1")):
        cells[name] = bm.cell_frame(results, metric)
        out[name] = bm.formatted(cells[name], shown, regimes)
        out[name + "_mean"] = bm.wide(cells[name], "mean", shown, regimes)
        out[name + "_ci95"] = bm.wide(cells[name], "ci95", shown, regimes)
        out["_" + name + "_bold"] = bm.paired_best(results, metric, REFERENCE_ROWS)
    out["seeds"] = bm.wide(cells["mAP"], "seeds", shown, regimes)
    out["converged"] = bm.wide(cells["mAP"], "converged", shown, regimes)
    rank = bm.rank_summary(cells["mAP"], exclude=REFERENCE_ROWS)
    out["ranks"] = rank["table"]
    out["regime_ranks"] = rank["ranks"].reindex(columns=[r for r in regimes if r in rank["regimes"]])
    out["ranks_left_out"] = pd.DataFrame({"left out of the ranks": rank["left_out"]}, dtype=object)
    fr = rank["friedman"]
    out["friedman"] = pd.DataFrame([{
        "methods (k)": fr["k"], "regimes (N)": fr["N"], "regimes": ", ".join(rank["regimes"]),
        "note": (fr["reason"] + "; " if fr["reason"] and "at least" in fr["reason"] else "") + REGIME_RANKS_NOTE}],
        index=["ranks"])
    gaps = bm.gap_closed(results, AN, ORACLE)
    out["gap_closed"] = bm.gap_formatted(gaps, shown, regimes)
    for col in ("estimate", "lo", "hi"):
        out["gap_closed_" + col] = gaps.pivot(index="method", columns="regime", values=col).reindex(
            index=[r for r in shown if r in set(gaps.method)], columns=[r for r in regimes if r in set(gaps.regime)])
    cost = bm.cost_table(results, AN).reindex(index=shown)
    # beside the ranks: what each method's place costs (the compared block's mean rank and mAP)
    block = block_mean(out["mAP_mean"], rank)
    cost.insert(0, "mean rank", rank["table"]["mean_rank"].reindex(shown))
    cost.insert(1, "block mAP", block.reindex(shown))
    out["cost"] = cost
    out["_cells"] = cells["mAP"]
    out["_rank"] = rank
    out["_gaps"] = gaps
    return out


def block_mean(mean, rank):
    """Each ranked method's mean mAP over the regimes of the compared block (absent outside it)."""
    return mean.loc[list(rank["methods"]), list(rank["regimes"])].mean(axis=1)


def per_class(results, cells, profile, regime: str = "single positive", k: int = 3):
    """``(top, gain)``: per-class AP gain over AN of the ``k`` best methods under ``regime``
    (rows = classes), with each class's share of the training images of the first seed
    (``train_frequency``) — which classes gain, frequent or rare."""
    P = as_profile(profile)
    top = bm.top_methods(cells, regime, k, exclude=REFERENCE_ROWS + (AN,))
    gain = bm.per_class_gain(results, regime, top, AN)
    name, params = REGIMES[regime]
    splits = splits_for(P, name, params, P.seeds[0])
    gain.insert(0, "train_frequency", splits.train.labels.float().mean(0).numpy())
    gain.index = list(splits.class_names)
    return top, gain


def rare_vs_frequent(gain):
    """Mean gain per method over the rarer half of the classes and over the more frequent half."""
    import pandas as pd

    order = gain.sort_values("train_frequency").index
    half = len(order) // 2
    methods = [c for c in gain.columns if c != "train_frequency"]
    return pd.DataFrame({"rarer half": gain.loc[order[:half], methods].mean(),
                         "more frequent half": gain.loc[order[half:], methods].mean()})


def rows_table():
    """Every row: its registered method, chapter, where it applies and where it leaves the protocol."""
    import pandas as pd

    return pd.DataFrame([{"method": r.label, "registered as": r.method, "chapter": r.chapter,
                          "applies to": "every regime" if r.regimes is None else ", ".join(r.regimes),
                          "note": r.note} for r in rows()]).set_index("method")


def write_csv(tabs: Mapping[str, Any], out_dir, prefix: str = "07_benchmark") -> List[Path]:
    """Write every table next to the HTML: ``<prefix>_<name>.csv``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, t in tabs.items():
        if name.startswith("_"):
            continue
        p = out / f"{prefix}_{name}.csv"
        t.to_csv(p)
        paths.append(p)
    return paths


def _num(v):
    """A number for a record: rounded, NaN becomes None."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return None if not math.isfinite(v) else round(float(v), 4)
    return v


def _clean(d) -> Dict[str, Any]:
    return {str(k): _num(v) for k, v in d.items()}


def records(design: BenchmarkDesign, tabs, chosen, chosen_obs=None, runs: "BenchmarkRuns | None" = None
            ) -> Dict[str, Any]:
    """What the notebook records (numbers stay numbers; NaN becomes None); ``chosen_obs``:
    :attr:`BenchmarkRuns.chosen_observed`; ``runs`` (:class:`BenchmarkRuns`): its every run is
    keyed in ``benchmark_convergence``'s run-keyed twin (the cells, LAC's own-head AN, the length
    checks and the data sets), so the protocol counts distinct runs."""
    from ...analysis.tables import RunFlags, convergence_record, run_convergence

    conv = bm.convergence_record(tabs["_cells"])
    if runs is not None:
        # each run's label, for the rows a share below the protocol's names (the cells first)
        labels = convergence_record(runs.results, {"LAC's own-head AN": runs.same_head},
                                    {"length check": runs.length}, {"data set": runs.families},
                                    {"length check": runs.bound_length}).labels
        conv = RunFlags(conv, run_convergence(runs.results, runs.same_head, runs.length, runs.families,
                                              runs.bound_length), labels)
    def by_row(t):
        return {m: _clean(t.loc[m].to_dict()) for m in t.index}

    rank, fr, cost = tabs["_rank"], tabs["_rank"]["friedman"], tabs["cost"]
    return {"design": design.describe(),
            "mAP": by_row(tabs["mAP_mean"]), "ci95": by_row(tabs["mAP_ci95"]),
            "CF1": by_row(tabs["CF1_mean"]), "OF1": by_row(tabs["OF1_mean"]),
            "mean_rank": _clean(tabs["ranks"]["mean_rank"].to_dict()),
            # over label regimes: description only (no χ², p or CD; REGIME_RANKS_NOTE)
            "ranks": {"methods": list(rank["methods"]), "regimes": list(rank["regimes"]),
                      "left_out": dict(rank["left_out"]), "friedman_chi2": None,
                      "friedman_p": None, "cd": None,
                      "reason": fr["reason"] if "at least" in (fr["reason"] or "") else REGIME_RANKS_NOTE},
            "gap_closed": by_row(tabs["gap_closed_estimate"]),
            "gap_closed_detail": {cell_label(g.method, g.regime): {
                "estimate": _num(g.estimate), "ci95": [_num(g.lo), _num(g.hi)],
                "seeds": [int(x) for x in g.seeds], "reason": g.reason}
                for g in tabs["_gaps"].itertuples()},
            "benchmark_convergence": conv,
            "seconds_vs_AN": _clean(cost["seconds_vs_AN"].to_dict()) if "seconds_vs_AN" in cost else {},
            "memory_vs_AN": _clean(cost["memory_vs_AN"].to_dict()) if "memory_vs_AN" in cost else {},
            # a record's keys are text: a cell (regime, row) written "<regime> · <row>"
            "tuned": {f"{reg} · {label}": hp for (reg, label), hp in chosen.items()},
            "tuned_observed": {f"{reg} · {label}": hp for (reg, label), hp in (chosen_obs or {}).items()},
            "selection_seed": design.selection_seed,
            "left_out": left_out(design)}


def selection_frame(results):
    """Per cell with observed-label validation recorded: test mAP (mean over seeds) at the best
    clean-validation epoch and at the best observed-validation epoch, their difference with the
    half-width of its paired 95 % t-interval (the claim's interval, ``analysis.claims.paired``; NaN
    below 2 seeds or at zero spread), the seeds with both, and on how many of them the two criteria
    keep different epochs. Empty when no run recorded ``val_obs_mAP`` (the runs of the shipped pack
    predate it)."""
    import math

    import pandas as pd

    from ...analysis.claims import paired
    from ...analysis.selection import CLEAN, HALF, OBSERVED, best_epoch_by, by_seed_selected

    out = []
    for regime, methods in results.items():
        for label, runs in methods.items():
            observed = by_seed_selected(runs, OBSERVED)
            if label in REFERENCE_ROWS or not observed:
                continue
            clean = {s: v for s, v in by_seed_selected(runs, CLEAN).items() if s in observed}
            moved = sum(best_epoch_by(r.history, OBSERVED) != r.best_epoch for r in runs
                        if int(r.spec.seed) in observed)
            c, o = sum(clean.values()) / len(clean), sum(observed.values()) / len(observed)
            pair = paired(clean, observed)
            half = (pair["hi"] - pair["lo"]) / 2 if math.isfinite(pair["hi"]) else math.nan
            out.append({"regime": regime, "method": label, "clean val": c, "observed val": o,
                        "difference": c - o, HALF: half, "seeds": len(observed), "other epoch": moved})
    return pd.DataFrame(out, columns=["regime", "method", "clean val", "observed val", "difference",
                                      HALF, "seeds", "other epoch"])


def observed_tuning_frame(runs: "BenchmarkRuns"):
    """One row per tuned cell: the setting clean validation kept, the one observed validation
    would keep, and whether they agree (— where the trials did not record observed mAP)."""
    import pandas as pd

    P = runs.design.profile
    out = []
    for (reg, label), hp in runs.chosen.items():
        obs = runs.chosen_observed.get((reg, label))
        base = trial_params(P, label, reg, {})  # the paper default: a setting names what differs from it

        def name(params):
            return tuner.describe_point({k: v for k, v in params.items() if k not in base or base[k] != v})

        out.append({"regime": reg, "method": label, "kept on clean labels": name(hp),
                    "kept on observed labels": "—" if obs is None else name(obs),
                    "same": "—" if obs is None else "✓" if obs == hp else "✗"})
    return pd.DataFrame(out, columns=["regime", "method", "kept on clean labels", "kept on observed labels", "same"])


def measured_gaps(record=None) -> Dict[str, Dict[str, Any]]:
    """``{data set: {"gap", "seeds"}}``: the full-label → AN test-mAP gap the data sets'
    measurement recorded for each (mean over its seeds), read from its record
    (``protocol.datasets.CPU_RECORD``, written by ``benchmarks/dataset_candidates.py``)."""
    from ...protocol.datasets import read_record

    try:
        gaps = read_record(record)["gaps"]
        return {name: {"gap": float(g["gap test"]), "seeds": int(g["seeds"])} for name, g in gaps.items()}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def family_frame(runs: "BenchmarkRuns", metric: str = "test_mAP"):
    """Rows = the families' block (the oracle first), columns = the families: mean ``metric`` over the
    family seeds each row has stored (NaN where its runs are not stored yet)."""
    import pandas as pd

    d = runs.design
    out = pd.DataFrame(index=list(d.family_rows), columns=list(d.scenes), dtype=float)
    for family, cells in runs.families.items():
        for label, rs in cells.items():
            vals = [float(v) for v in bm.by_seed(rs, metric).values()] if rs else []
            if vals:
                out.loc[label, family] = sum(vals) / len(vals)
    return out


def family_table(runs: "BenchmarkRuns") -> Dict[str, Dict[str, Optional[float]]]:
    """:func:`family_frame` as the notebook records it (``{row: {family: mean test mAP}}``, None
    where the row's runs on that family are not stored): the report's ``family_mAP`` CSV."""
    frame = family_frame(runs)
    return {label: {f: _num(frame.loc[label, f]) for f in frame.columns} for label in frame.index}


def family_gaps(runs: "BenchmarkRuns"):
    """Per family: the gap the candidates' measurement recorded (— where the family was not
    measured), the gap from this chapter's runs (the oracle minus AN on the seeds both ran),
    whether it is at least :data:`FAMILY_MIN_GAP`, and the family's pending runs not stored."""
    import pandas as pd

    d, measured = runs.design, measured_gaps()
    waiting = merged(runs.waiting, FAMILIES)
    out = []
    for family in d.scenes:
        got = runs.families.get(family, {})
        full, an = bm.by_seed(got.get(ORACLE, []), "test_mAP"), bm.by_seed(got.get(AN, []), "test_mAP")
        shared = sorted(set(full) & set(an))
        gap = (sum(full[s] - an[s] for s in shared) / len(shared)) if shared else math.nan
        m = measured.get(family)
        labels = {cell_label(label, family) for label in d.family_rows}
        out.append({"family": family, "what it is": describe_data_set(family),
                    "measured gap": m["gap"] if m else math.nan,
                    "gap from the runs": gap, "seeds of the gap": len(shared),
                    f"gap ≥ {FAMILY_MIN_GAP:g}": ("—" if not shared else "✓" if gap >= FAMILY_MIN_GAP else "✗"),
                    "runs waiting": sum(n for label, n in waiting.items() if label in labels)})
    columns = ["family", "what it is", "measured gap", "gap from the runs", "seeds of the gap",
               f"gap ≥ {FAMILY_MIN_GAP:g}", "runs waiting"]
    return pd.DataFrame(out, columns=columns).set_index("family")  # no row: a design without families


def describe_data_set(name: str) -> str:
    """What data set ``name`` is, as text: its vocabulary and number of classes, its co-occurrence
    structure, objects per image and backgrounds, and its seeds."""
    import inspect

    from ...data.glyphs import class_names
    from ...data.scenes import make_scenes
    from ...protocol.datasets import DATASETS
    from .design import data_set_seeds

    scene = data_set_scene(name)
    defaults = {k: p.default for k, p in inspect.signature(make_scenes).parameters.items()}
    get = lambda k: scene.get(k, defaults.get(k))  # noqa: E731  (the generator's default where unset)
    glyphs, size = get("glyphs"), get("size_range")
    sizes = f" of {size[0]:g}–{size[1]:g} of the image" if size else ""
    seeds = data_set_seeds(name, len(DATASETS[name]["seeds"]))
    return (f"{glyphs} ({len(class_names(glyphs))} classes), co-occurrence structure {get('structure_seed')} "
            f"({get('num_contexts')} contexts, strength {get('context_strength')}), up to {get('max_objects')} "
            f"objects{sizes}, noise {get('noise')}, background gradient {get('background_gradient')}; "
            f"seeds {seeds[0]}–{seeds[-1]}"
            + (" (the chapters' own scenes)" if name == OWN_DATA_SET else ""))


#: a rank test needs this many data sets with every ranked row stored and the gap met
MIN_FAMILIES = 5


def family_ranks(runs: "BenchmarkRuns") -> Dict[str, Any]:
    """The ranks of the families' block (the oracle left out) over the data sets that are
    complete (every row stored) and keep a gap ≥ :data:`FAMILY_MIN_GAP`, with Iman–Davenport's p
    and the permutation p (:func:`mlpl_lab.analysis.ranks.rank_test`) when at least
    :data:`MIN_FAMILIES` remain; else ``"reason"`` says what waits. Keys: rank_test's, plus
    ``"families"``, ``"methods"``, ``"waiting"`` (pending runs not stored)."""
    from ...analysis.ranks import rank_test

    d = runs.design
    methods = [r for r in d.family_rows if r not in REFERENCE_ROWS]
    if not d.scenes:
        return dict(families=[], methods=methods, waiting=0, p=None, mean_ranks={},
                    reason=f"the {d.profile.name} design declares no data sets to rank over (the cpu design is the one that "
                           "ranks methods over independent data sets)")
    frame = family_frame(runs)
    gaps = family_gaps(runs)
    ok = [f for f in d.scenes if frame.loc[methods, f].notna().all()
          and math.isfinite(gaps.loc[f, "gap from the runs"]) and gaps.loc[f, "gap from the runs"] >= FAMILY_MIN_GAP]
    waiting = sum(merged(runs.waiting, FAMILIES).values())
    base = {"families": ok, "methods": methods, "waiting": waiting}
    if len(ok) < MIN_FAMILIES:
        reason = (f"{len(ok)} of the {len(d.scenes)} data sets have every ranked method stored and a "
                  f"full-label → AN gap ≥ {FAMILY_MIN_GAP:g} mAP; the test needs {MIN_FAMILIES}")
        if waiting:
            reason += (f": it waits for {waiting} runs not trained yet (a cold series trains them all; "
                       f"`mlpl-lab train \"{FAMILIES}: <name>\" --profile {d.profile.name}` trains one data set on its "
                       "own, resumably, and the handbook's Run packs says how it joins the pack as a part)")
        return dict(base, p=None, reason=reason, mean_ranks={})
    return dict(base, **rank_test(frame.loc[methods, ok], methods, ok))


def family_record(test: Mapping[str, Any]) -> Dict[str, Any]:
    """:func:`family_ranks` as the notebook records it (numbers, NaN as None)."""
    keys = ("families", "methods", "waiting", "mean_ranks", "k", "N", "friedman_chi2", "F", "df", "p",
            "p_permutation", "permutation", "cd", "separated", "pairwise_min_p", "pairwise", "alpha", "reason")
    out = {}
    for k in keys:
        v = test.get(k)
        out[k] = _clean(v) if isinstance(v, dict) else [list(x) for x in v] if k == "separated" and v else \
            list(v) if isinstance(v, tuple) else _num(v)
    for k in ("p", "p_permutation"):  # 4 significant digits: rounded to 4 decimals a small p reads 0
        v = test.get(k)
        if isinstance(v, float) and math.isfinite(v):
            out[k] = float(f"{v:.4g}")
    return out


def checked_results(runs: BenchmarkRuns) -> Dict[str, Dict[str, list]]:
    """``{regime or data set: {row: runs}}``: the cells and the data sets' runs (their names never
    meet), what the length checks are read against."""
    return {**{f: rows for f, rows in runs.families.items() if f not in runs.results}, **runs.results}


def bound_length_table(runs: BenchmarkRuns):
    """Every stored length check of a schedule-bound row (GR's and the others', in the regimes and
    on the data sets), with AN's: ``{regime or data set: {row: runs at the longer schedule}}``
    (:func:`mlpl_lab.protocol.bound_length.checks`)."""
    return bound_length.checks(checked_results(runs), runs.length, runs.bound_length)


def bound_length_record(runs: BenchmarkRuns) -> Dict[str, Any]:
    """What the notebook records of :func:`bound_length_table` (per seed, both schedules)."""
    return bound_length.record(checked_results(runs), bound_length_table(runs))


def length_check_agreement(runs: BenchmarkRuns, design: BenchmarkDesign) -> Dict[str, bool]:
    """``{run key: bool}``: whether the length check of each schedule-bound row's runs agrees, for
    the protocol's share (:func:`mlpl_lab.analysis.tables.converged_share`). A row with a paper claim
    reads its claim's note (:func:`.claims.claims`: the claim's verdict against its control's); a
    row checked without a claim (LL-Ct, LL-Cp and their BoostLU rows, and every schedule-bound row on
    a data set ranked, against AN on that data set and its seeds) gets the same rule on its
    check (:func:`bound_length_table`): "<row> beats AN" decided at the profile's epochs and at the
    longer schedule, paired by seed, m = 1 at both (:func:`mlpl_lab.analysis.claims.decide`), and
    it agrees where the two verdicts are the same. Its runs at both lengths are listed."""
    from ...analysis.claims import claims_record
    from ...analysis.tables import length_check_agreement as from_claims
    from .claims import claims

    table = claims(runs.results, runs.same_head, runs.length, runs.bound_length, design=design)
    out = from_claims(claims_record(table))
    out.update(bound_length.agreement(checked_results(runs), bound_length_table(runs), decided=out))
    return out
