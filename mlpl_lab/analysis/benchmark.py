"""The benchmark's numbers, from ``{regime: {method: [run per seed]}}`` (stored runs or fakes).

Every number is read at each run's best-val epoch (clean validation selects the epoch).

* **Cell**: mean over seeds and the 95 % Student-t interval half-width,
  t(0.975, n − 1) · s / √n with s the sample standard deviation (ddof = 1); one seed has no
  interval.
* **Rank**: within a regime, methods ordered by their cell mean (1 = best; ties share the mean
  rank); across regimes, the mean rank with a 95 % t-interval over the regimes a method ran in.
  Reference rows (the full-label oracle) are not ranked.
* **Gap closed**: (method − AN) / (oracle − AN) per regime, seed by seed where the three share
  a seed (then averaged), from the means otherwise. 0 = no better than AN, 1 = as good as full
  labels, < 0 = worse than AN.
* **Per-class gain**: per-class test AP of a method minus AN's, mean over the seeds both ran.
* **Cost**: training + evaluation seconds and peak memory of a run (mean over seeds), and both
  relative to AN's.
"""
from __future__ import annotations

import math
from typing import Any, Dict, Iterable, List, Mapping, Sequence

import numpy as np

from .claims import by_seed  # {seed: metric at the best-val epoch}

Results = Mapping[str, Mapping[str, Sequence[Any]]]


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


def cell_frame(results: Results, metric: str = "test_mAP"):
    """Long table: one row per (method, regime) with mean, half-width and seeds."""
    import pandas as pd

    rows = []
    for regime, methods in results.items():
        for method, runs in methods.items():
            mean, half, n = t_interval(by_seed(runs, metric).values())
            rows.append({"method": method, "regime": regime, "mean": mean, "ci95": half, "seeds": n})
    return pd.DataFrame(rows, columns=["method", "regime", "mean", "ci95", "seeds"])


def _methods(results: Results) -> List[str]:
    """Every method of ``results``, in first-seen order."""
    return list(dict.fromkeys(m for methods in results.values() for m in methods))


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
    """The table a reader sees: "mean ± half-width" ("mean (1 seed)" without an interval; "—"
    where the method did not run in that regime)."""
    mean = wide(cells, "mean", methods, regimes)
    half = wide(cells, "ci95", methods, regimes)
    n = wide(cells, "seeds", methods, regimes)

    def fmt(m, h, k):
        if m is None or not math.isfinite(m):
            return "—"
        if h is None or not math.isfinite(h):
            return f"{m:.{digits}f} (1 seed)"
        return f"{m:.{digits}f} ± {h:.{digits}f} ({int(k)})"

    out = mean.copy().astype(object)
    for r in mean.index:
        for c in mean.columns:
            out.loc[r, c] = fmt(mean.loc[r, c], half.loc[r, c], n.loc[r, c])
    return out


def regime_ranks(cells, exclude: Sequence[str] = ()):
    """Rows = methods, columns = regimes: the rank of each method's mean within its regime."""
    mean = wide(cells, "mean")
    mean = mean.drop(index=[m for m in exclude if m in mean.index])
    return mean.rank(axis=0, ascending=False, method="average")


def mean_ranks(cells, exclude: Sequence[str] = ()):
    """Per method: mean rank over the regimes it ran in, 95 % t-interval, number of regimes and
    of methods it was ranked against (sorted, best first)."""
    import pandas as pd

    ranks = regime_ranks(cells, exclude)
    rows = []
    for m in ranks.index:
        vals = ranks.loc[m].dropna()
        mean, half, n = t_interval(vals.values)
        rows.append({"method": m, "mean_rank": mean, "ci95": half, "regimes": n,
                     "field": float(ranks[vals.index].notna().sum().mean()) if n else math.nan})
    return pd.DataFrame(rows).set_index("method").sort_values("mean_rank")


def gap_closed(results: Results, an: str = "AN", oracle: str = "full labels", metric: str = "test_mAP"):
    """Rows = methods (AN and the oracle excluded), columns = regimes: the share of the AN →
    full-label gap each method closes (module docstring). NaN where a regime lacks AN or the
    oracle, or the gap is not positive."""
    import pandas as pd

    table: Dict[str, Dict[str, float]] = {}
    for regime, methods in results.items():
        if an not in methods or oracle not in methods:
            continue
        a, o = by_seed(methods[an], metric), by_seed(methods[oracle], metric)
        for m, runs in methods.items():
            if m in (an, oracle):
                continue
            x = by_seed(runs, metric)
            common = sorted(set(x) & set(a) & set(o))
            shares = [(x[s] - a[s]) / (o[s] - a[s]) for s in common if o[s] - a[s] > 0]
            if not shares:
                gap = np.mean(list(o.values())) - np.mean(list(a.values()))
                shares = [(np.mean(list(x.values())) - np.mean(list(a.values()))) / gap] if gap > 0 else []
            table.setdefault(m, {})[regime] = float(np.mean(shares)) if shares else math.nan
    order = [m for m in _methods(results) if m in table]
    return pd.DataFrame(table).T.reindex(index=order, columns=[r for r in results if any(
        r in v for v in table.values())])


def per_class_gain(results: Results, regime: str, methods: Sequence[str], an: str = "AN",
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


def cost_table(results: Results, an: str = "AN"):
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
