"""The benchmark's numbers, from ``{regime: {method: [run per seed]}}`` (stored runs or fakes).

Every number is read at each run's best-val epoch (clean validation selects the epoch).

* **Cell**: mean over seeds and the 95 % Student-t interval half-width,
  t(0.975, n − 1) · s / √n with s the sample standard deviation (ddof = 1); one seed has no
  interval. A cell is marked unconverged (†) when any of its runs has ``converged is False``.
* **Ranks** (Demšar 2006, §3.2.2): within a regime, methods ordered by their cell mean (1 = best;
  ties share the mean rank). Across regimes only over a *complete block* — the methods that ran
  in every compared regime (the others are listed as left out) — with the **Friedman test**
  (``scipy.stats.friedmanchisquare``: χ²_F = 12N/(k(k+1)) [Σ_j R_j² − k(k+1)²/4], k − 1 degrees
  of freedom, k ≥ 3 methods, N ≥ 2 regimes) and the **Nemenyi critical difference**
  CD = q_α √(k(k+1)/(6N)), q_α the studentized range quantile for k groups and infinite df
  over √2 (q_0.05 = 2.569 for k = 4): two mean ranks further apart than CD differ at level α.
  No interval over the regimes (they are fixed, not sampled). Reference rows (the full-label
  oracle) are not ranked.
* **Gap closed** (per method and regime): the ratio of means over the seeds the method, AN and
  the oracle share, mean_s(method_s − AN_s) / mean_s(full_s − AN_s) — never the mean of per-seed
  ratios (a seed with a tiny gap would dominate it). Its 95 % interval is a percentile bootstrap
  over those seeds (seeds resampled jointly, :data:`BOOTSTRAP_RESAMPLES` resamples, a fixed RNG
  seed). NaN with a reason when fewer than 2 seeds are shared or the gap's own 95 % t-interval
  contains 0 (no gap to close). 0 = no better than AN, 1 = as good as full labels.
* **Per-class gain**: per-class test AP of a method minus AN's, mean over the seeds both ran.
* **Cost**: training + evaluation seconds and peak memory of a run (mean over seeds), and both
  relative to AN's.
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

import numpy as np

from .claims import by_seed  # {seed: metric at the best-val epoch}
from .display import interval_text  # the one table style (mlpl_lab.analysis.display)
from ..catalogue import LABEL

Results = Mapping[str, Mapping[str, Sequence[Any]]]
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0


def t_interval(values: Iterable[float], level: float = 0.95) -> tuple[float, float, int]:
    """``(mean, half-width, n)`` of the Student-t interval; half-width NaN for n < 2."""
    from scipy import stats

    v = np.asarray([x for x in values if x is not None and math.isfinite(x)], dtype=float)
    n = len(v)
    if n == 0:
        return math.nan, math.nan, 0
    if n == 1:
        return float(v[0]), math.nan, 1
    half = float(stats.t.ppf(0.5 + level / 2, n - 1) * v.std(ddof=1) / math.sqrt(n))
    return float(v.mean()), half, n


def _seed(run, i: int) -> int:
    return int(getattr(getattr(run, "spec", None), "seed", i))


def converged(runs) -> Optional[bool]:
    """False when any run has ``converged is False``, True when every run has True, else None."""
    flags = [getattr(r, "converged", None) for r in runs]
    if any(f is False for f in flags):
        return False
    return True if flags and all(f is True for f in flags) else None


def schedule_bound(run) -> bool:
    """Is ``run``'s method schedule-bound (its targets move until the last epoch by design: its
    registry entry's flag, :func:`mlpl_lab.methods.registry.is_schedule_bound`)?"""
    from ..methods.registry import is_schedule_bound

    spec = getattr(run, "spec", None)
    return is_schedule_bound(getattr(spec, "method", None), getattr(spec, "method_params", None))


def convergence_mark(runs):
    """A cell's convergence flag for the tables: False (every run converged, or unknown), True
    (a run did not converge: †), or ``"schedule-bound"`` when every run that did not converge is
    schedule-bound (§: its curve rises to the end by design; the length check is its control)."""
    if converged(runs) is not False:
        return False
    bad = [r for r in runs if getattr(r, "converged", None) is False]
    return "schedule-bound" if bad and all(schedule_bound(r) for r in bad) else True


def cell_flag(runs):
    """A cell's flag in :func:`cell_frame`'s ``converged`` column: True (every run converged),
    ``"schedule-bound"`` (the runs that did not are all schedule-bound: §, :func:`convergence_mark`),
    False (a run did not converge for another reason: †) or None (the runs do not say)."""
    return "schedule-bound" if convergence_mark(runs) == "schedule-bound" else converged(runs)


def unconverged_mark(flag):
    """The mark a table prints for a :func:`cell_flag`: "schedule-bound" (§), True (†) or False."""
    return "schedule-bound" if isinstance(flag, str) and flag == "schedule-bound" else is_false(flag)


def is_false(flag) -> bool:
    """A convergence flag that says "did not converge" (Python or NumPy bool False)."""
    return isinstance(flag, (bool, np.bool_)) and not flag


def cell_frame(results: Results, metric: str = "test_mAP"):
    """Long table: one row per (method, regime) with mean, half-width, seeds and whether its
    runs converged (:func:`cell_flag`: True, False, "schedule-bound" or None)."""
    import pandas as pd

    rows = []
    for regime, methods in results.items():
        for method, runs in methods.items():
            mean, half, n = t_interval(by_seed(runs, metric).values())
            rows.append({"method": method, "regime": regime, "mean": mean, "ci95": half, "seeds": n,
                         "converged": cell_flag(runs)})
    return pd.DataFrame(rows, columns=["method", "regime", "mean", "ci95", "seeds", "converged"])


def paired_best(results: Results, metric: str = "test_mAP", exclude: Sequence[str] = ()):
    """Which cells of each regime are bold: the method with the best mean and every method the
    paired test does not separate from it — its paired 95 % t-interval of (best − method) over
    the seeds both ran contains 0, or fewer than 3 seeds pair (no test). Rows = methods, columns
    = regimes, booleans (``exclude``: reference rows, never bold). Unadjusted: the table marks,
    the claims decide."""
    import pandas as pd

    from .claims import MIN_SEEDS, paired

    out = {}
    for regime, methods in results.items():
        vals = {m: by_seed(runs, metric) for m, runs in methods.items() if m not in exclude and runs}
        means = {m: float(np.mean(list(v.values()))) for m, v in vals.items()
                 if v and all(math.isfinite(x) for x in v.values())}
        if len(means) < 2:
            continue
        top = max(means, key=means.get)
        col = {}
        for m in means:
            c = paired(vals[top], vals[m])
            col[m] = m == top or c["n"] < MIN_SEEDS or not (c["lo"] > 0)
        out[regime] = col
    return pd.DataFrame(out).fillna(False).astype(bool) if out else pd.DataFrame()


def wide(cells, value: str = "mean", methods: Sequence[str] | None = None,
         regimes: Sequence[str] | None = None):
    """Rows = methods, columns = regimes (NaN where a method did not run in a regime)."""
    t = cells.pivot(index="method", columns="regime", values=value)
    if methods is not None:
        t = t.reindex(index=[m for m in methods if m in t.index])
    if regimes is not None:
        t = t.reindex(columns=[r for r in regimes if r in t.columns])
    return t


def formatted(cells, methods=None, regimes=None, digits: int = 1):
    """The cells as text: "mean ± half-width (seeds)" ("mean (1 seed)" without an interval; "—"
    where the method did not run in that regime; a † when a run of the cell did not converge),
    :func:`mlpl_lab.analysis.display.interval_text`. What a notebook shows is
    :func:`cells_view` (the same cells with a caption and the best of each regime in bold)."""
    mean = wide(cells, "mean", methods, regimes)
    half = wide(cells, "ci95", methods, regimes)
    n = wide(cells, "seeds", methods, regimes)
    conv = wide(cells, "converged", methods, regimes)

    def fmt(m, h, k, flag):
        if m is None or not math.isfinite(m):
            return "—"
        return interval_text(m, h, 1 if h is None or not math.isfinite(h) else k, unconverged_mark(flag), digits)

    out = mean.copy().astype(object)
    for r in mean.index:
        for c in mean.columns:
            out.loc[r, c] = fmt(mean.loc[r, c], half.loc[r, c], n.loc[r, c], conv.loc[r, c])
    return out


def cells_view(cells, what: str, methods=None, regimes=None, reference: Sequence[str] = ()):
    """Rows = methods, columns = regimes: the cells of :func:`cell_frame` in the one table style
    (:func:`mlpl_lab.analysis.display.styled`), the best of each regime in bold (``reference``
    rows left out of the comparison)."""
    from .display import caption, styled

    mean = wide(cells, "mean", methods, regimes)
    half, n = wide(cells, "ci95", methods, regimes), wide(cells, "seeds", methods, regimes)
    unconv = wide(cells, "converged", methods, regimes).map(unconverged_mark)
    ref = [r for r in reference if r in mean.index]
    return styled(mean, caption(what, reference=ref, note="— the method does not run in that regime"),
                  percent=True, half=half, seeds=n, unconverged=unconv, reference=ref)


def convergence_record(cells) -> Dict[str, Any]:
    """``{"<method> · <regime>": converged}`` for every cell: True, False, "schedule-bound" (the
    runs that did not converge are all schedule-bound) or None (the runs do not say)."""
    return {f"{m} · {r}": (c if isinstance(c, str) and c == "schedule-bound" else
                           bool(c) if isinstance(c, (bool, np.bool_)) else None)
            for m, r, c in zip(cells["method"], cells["regime"], cells["converged"])}


def regime_ranks(cells, exclude: Sequence[str] = ()):
    """Rows = methods, columns = regimes: the rank of each method's mean within its regime."""
    mean = wide(cells, "mean")
    mean = mean.drop(index=[m for m in exclude if m in mean.index])
    return mean.rank(axis=0, ascending=False, method="average")


def complete_block(mean, min_methods: int = 3, min_regimes: int = 2) -> tuple[List[str], List[str]]:
    """``(methods, regimes)``: the largest set of methods × regimes in which every method ran in
    every regime (most cells, then most regimes, then the table's order), among blocks of at
    least ``min_methods`` × ``min_regimes``; without one, every regime and the methods that ran
    in all of them. ``mean``: rows = methods, columns = regimes (NaN where not run)."""
    regimes = list(mean.columns)
    ran = mean.notna()
    best, best_key = None, None
    for size in range(len(regimes), 0, -1):
        for subset in itertools.combinations(regimes, size):
            methods = [m for m in mean.index if ran.loc[m, list(subset)].all()]
            if len(methods) < min_methods or size < min_regimes:
                continue
            key = (len(methods) * size, size)
            if best_key is None or key > best_key:
                best, best_key = (methods, list(subset)), key
    if best is None:
        best = ([m for m in mean.index if ran.loc[m].all()], regimes)
    return best


def critical_difference(k: int, n: int, alpha: float = 0.05) -> float:
    """Nemenyi's critical difference of mean ranks, q_α √(k(k+1)/(6N)) (Demšar 2006, Eq. in
    §3.2.2), q_α = studentized range quantile (k groups, infinite df) / √2."""
    from scipy import stats

    if k < 2 or n < 1:
        return math.nan
    q = float(stats.studentized_range.ppf(1 - alpha, k, np.inf)) / math.sqrt(2)
    return q * math.sqrt(k * (k + 1) / (6 * n))


def rank_summary(cells, exclude: Sequence[str] = (), alpha: float = 0.05) -> Dict[str, Any]:
    """Ranks over the :func:`complete_block` of the mAP table (``exclude``: reference rows):
    ``{"ranks"`` (methods × compared regimes), ``"table"`` (mean rank and its regimes, best
    first), ``"methods"``, ``"regimes"``, ``"left_out"`` ({method: why}), ``"friedman"``
    ({"statistic", "p", "k", "N", "reason"}), ``"cd"``, ``"alpha"}`` (module docstring)."""
    import pandas as pd
    from scipy import stats

    mean = wide(cells, "mean")
    mean = mean.drop(index=[m for m in exclude if m in mean.index])
    methods, regimes = complete_block(mean)
    left_out = {}
    for m in mean.index:
        if m not in methods:
            missing = [r for r in regimes if not math.isfinite(mean.loc[m, r])]
            left_out[m] = ("did not run under " + ", ".join(missing)) if missing else \
                "ran in other regimes than the compared block"
    block = mean.loc[methods, regimes]
    ranks = block.rank(axis=0, ascending=False, method="average")
    k, n = len(methods), len(regimes)
    table = pd.DataFrame({"mean_rank": ranks.mean(axis=1), "regimes": n}).sort_values("mean_rank")
    fr = {"statistic": math.nan, "p": math.nan, "k": k, "N": n, "reason": ""}
    if k < 3 or n < 2:
        fr["reason"] = (f"the Friedman test needs at least 3 methods in at least 2 regimes "
                        f"(here {k} methods × {n} regimes)")
    elif (block.nunique(axis=0) == 1).all():
        fr["reason"] = "every method ties in every regime"
    else:
        res = stats.friedmanchisquare(*[block.loc[m].to_numpy(dtype=float) for m in methods])
        fr.update(statistic=float(res.statistic), p=float(res.pvalue))
        if n <= 10 or k <= 5:
            fr["reason"] = "χ² approximation: rough with N ≤ 10 regimes or k ≤ 5 methods (Demšar 2006)"
    return {"ranks": ranks, "table": table, "methods": methods, "regimes": regimes,
            "left_out": left_out, "friedman": fr, "alpha": alpha,
            "cd": critical_difference(k, n, alpha) if k >= 3 and n >= 2 else math.nan}


def gap_share(x: Mapping[int, float], an: Mapping[int, float], oracle: Mapping[int, float],
              resamples: int = BOOTSTRAP_RESAMPLES, rng_seed: int = BOOTSTRAP_SEED,
              level: float = 0.95) -> Dict[str, Any]:
    """The share of the AN → oracle gap a method closes on the seeds all three share (module
    docstring): ``{"estimate", "lo", "hi", "seeds", "n", "gain", "gap", "reason"}``."""
    seeds = sorted(set(x) & set(an) & set(oracle))
    gain = np.array([x[s] - an[s] for s in seeds], dtype=float)
    gap = np.array([oracle[s] - an[s] for s in seeds], dtype=float)
    out = {"estimate": math.nan, "lo": math.nan, "hi": math.nan, "seeds": seeds, "n": len(seeds),
           "gain": float(gain.mean()) if len(seeds) else math.nan,
           "gap": float(gap.mean()) if len(seeds) else math.nan, "reason": ""}
    if len(seeds) < 2:
        out["reason"] = f"{len(seeds)} seed(s) shared by the method, AN and the oracle (2 needed)"
        return out
    if not (np.isfinite(gain).all() and np.isfinite(gap).all()):
        out["reason"] = "a value is not a number"
        return out
    g_mean, g_half, _ = t_interval(gap, level)
    if not (g_mean - g_half > 0):
        out["reason"] = (f"the gap's 95 % t-interval contains 0 or lies below it "
                         f"({g_mean:.2f} ± {g_half:.2f}): no gap to close")
        return out
    out["estimate"] = float(gain.mean() / gap.mean())
    rng = np.random.default_rng(rng_seed)
    idx = rng.integers(0, len(seeds), size=(resamples, len(seeds)))
    gaps = gap[idx].mean(axis=1)
    ok = gaps > 0
    ratios = gain[idx].mean(axis=1)[ok] / gaps[ok]
    out["lo"], out["hi"] = (float(v) for v in np.percentile(ratios, [50 * (1 - level), 50 * (1 + level)]))
    if not ok.all():
        out["reason"] = f"{int((~ok).sum())} of {resamples} resamples had no positive gap (left out)"
    return out


def gap_closed(results: Results, an: str = LABEL.an, oracle: str = LABEL.oracle, metric: str = "test_mAP"):
    """Long table, one row per (method, regime) with AN and the oracle (both excluded as
    rows): ``estimate``, ``lo``, ``hi`` (bootstrap), ``n``, ``seeds``, ``reason`` (:func:`gap_share`)."""
    import pandas as pd

    rows = []  # seeds: the list of seeds used
    for regime, methods in results.items():
        if an not in methods or oracle not in methods:
            continue
        a, o = by_seed(methods[an], metric), by_seed(methods[oracle], metric)
        for m, runs in methods.items():
            if m not in (an, oracle):
                g = gap_share(by_seed(runs, metric), a, o)
                rows.append({"method": m, "regime": regime, **{k: g[k] for k in (
                    "estimate", "lo", "hi", "n", "seeds", "reason")}})
    return pd.DataFrame(rows, columns=["method", "regime", "estimate", "lo", "hi", "n", "seeds", "reason"])


def gap_formatted(gaps, methods=None, regimes=None):
    """Rows = methods, columns = regimes: "0.54 [0.31, 0.80] (seeds 0, 1, 2)" or "— (reason)"."""
    import pandas as pd

    text = {(r.method, r.regime): (f"{r.estimate:.2f} [{r.lo:.2f}, {r.hi:.2f}] (seeds "
                                   f"{', '.join(map(str, r.seeds))})"
                                   if math.isfinite(r.estimate) else f"— ({r.reason})")
            for r in gaps.itertuples()}
    t = pd.Series(text, dtype=object).unstack() if text else pd.DataFrame()
    if methods is not None:
        t = t.reindex(index=[m for m in methods if m in t.index])
    if regimes is not None:
        t = t.reindex(columns=[r for r in regimes if r in t.columns])
    return t


def per_class_gain(results: Results, regime: str, methods: Sequence[str], an: str = LABEL.an,
                   metric: str = "test_AP"):
    """Rows = classes, columns = methods: per-class AP minus AN's (mean over shared seeds)."""
    import pandas as pd

    base = {_seed(r, i): np.asarray(r.best[metric], dtype=float)
            for i, r in enumerate(results[regime][an])}
    out = {}
    for m in methods:
        runs = results[regime][m]
        diffs = [np.asarray(r.best[metric], dtype=float) - base[_seed(r, i)]
                 for i, r in enumerate(runs) if _seed(r, i) in base]
        if diffs:
            out[m] = np.mean(diffs, axis=0)
    return pd.DataFrame(out)


def top_methods(cells, regime: str, k: int = 3, exclude: Sequence[str] = ()) -> List[str]:
    """The ``k`` best methods of ``regime`` by mean (reference rows excluded)."""
    col = cells[(cells.regime == regime) & ~cells.method.isin(list(exclude))]
    return list(col.sort_values("mean", ascending=False).method[:k])


def run_cost(run) -> Dict[str, float]:
    """Seconds (training + per-epoch evaluation) and peak memory (MiB; NaN when unknown) of a run."""
    hist = run.history
    seconds = float(sum(r.get("seconds", 0.0) for r in hist))
    peaks = [r.get("peak_memory_mib") for r in hist if r.get("peak_memory_mib") is not None]
    return {"seconds": seconds, "peak_memory_mib": float(max(peaks)) if peaks else math.nan}


def cost_table(results: Results, an: str = LABEL.an):
    """Per method (over every regime and seed it ran): mean seconds and peak memory, and each
    relative to AN's (AN's runs in the same regimes)."""
    import pandas as pd

    per: Dict[str, List[Dict[str, float]]] = {}
    for methods in results.values():
        for m, runs in methods.items():
            per.setdefault(m, []).extend(run_cost(r) for r in runs)
    rows = {}
    for m, costs in per.items():
        rows[m] = {"seconds": float(np.mean([c["seconds"] for c in costs])),
                   "peak_memory_mib": float(np.nanmean([c["peak_memory_mib"] for c in costs]))
                   if any(math.isfinite(c["peak_memory_mib"]) for c in costs) else math.nan,
                   "runs": len(costs)}
    t = pd.DataFrame(rows).T
    if an in t.index:
        t["seconds_vs_AN"] = t["seconds"] / t.loc[an, "seconds"]
        t["memory_vs_AN"] = t["peak_memory_mib"] / t.loc[an, "peak_memory_mib"]
    return t
