"""Claims computed from runs: the paper's claim and number, ours with its seed noise, a verdict.

A claim compares two sets of runs (A and B, one run per seed) on a metric at the best-val
epoch: margin = mean over seeds of A − B. Its **spread** is the sample standard deviation
over seeds of the paired differences A_s − B_s (seeds both sides ran); when only one side has
several seeds, the standard deviation of that side's values stands in; with a single seed on
both sides the chapter's **key comparison** (run on several seeds) lends its spread — the seed
noise of the same protocol — and the table says so in ``spread from``. **Verdict** for
"A beats B":

* ``holds`` — margin > 0 and |margin| > spread;
* ``does not hold`` — margin ≤ 0 and |margin| > spread;
* ``inconclusive`` — |margin| ≤ spread, or no spread at all (no comparison on several seeds).

Prose in the notebooks never states an outcome; it prints these verdicts.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Sequence

import numpy as np

HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive"


def by_seed(runs, metric: str = "test_mAP") -> Dict[int, float]:
    """``{seed: metric at the best-val epoch}`` of a set of runs (index when a run has no spec)."""
    out = {}
    for i, r in enumerate(runs):
        seed = getattr(getattr(r, "spec", None), "seed", i)
        out[int(seed)] = float(r.best[metric])
    return out


def margin(a_runs: Sequence[Any], b_runs: Sequence[Any], metric: str = "test_mAP") -> Dict[str, float]:
    """``{"a", "b", "margin", "spread", "seeds"}`` of A − B (see the module docstring)."""
    a, b = by_seed(a_runs, metric), by_seed(b_runs, metric)
    if not a or not b:
        raise ValueError("a claim needs runs on both sides")
    common = sorted(set(a) & set(b))
    ma, mb = float(np.mean(list(a.values()))), float(np.mean(list(b.values())))
    if len(common) >= 2:
        diffs = np.array([a[s] - b[s] for s in common])
        m, spread = float(diffs.mean()), float(diffs.std(ddof=1))
    else:
        m = ma - mb
        several = [list(x.values()) for x in (a, b) if len(x) >= 2]
        spread = float(max(np.std(v, ddof=1) for v in several)) if several else math.nan
    return {"a": ma, "b": mb, "margin": m, "spread": spread,
            "seeds": f"{len(a)} vs {len(b)}" if len(a) != len(b) else str(len(a))}


def verdict(m: float, spread: float) -> str:
    if not math.isfinite(spread) or abs(m) <= spread:
        return INCONCLUSIVE
    return HOLDS if m > 0 else FAILS


@dataclass
class Claim:
    """One row of a chapter's claims table."""

    claim: str                    # "A beats B under <regime>"
    paper: str                    # the paper's number(s), as a short text
    a_label: str
    b_label: str
    a_runs: Sequence[Any] = field(repr=False)
    b_runs: Sequence[Any] = field(repr=False)
    metric: str = "test_mAP"

    def row(self, fallback: float = math.nan, fallback_from: str = "") -> Dict[str, Any]:
        r = margin(self.a_runs, self.b_runs, self.metric)
        source = "these runs"
        if not math.isfinite(r["spread"]) and math.isfinite(fallback):
            r["spread"], source = fallback, f"borrowed: {fallback_from}"
        spread = "n/a" if not math.isfinite(r["spread"]) else f"{r['spread']:.2f}"
        return {"claim": self.claim, "paper": self.paper,
                "ours": f"{self.a_label} {r['a']:.2f} vs {self.b_label} {r['b']:.2f}",
                "margin ± spread": f"{r['margin']:+.2f} ± {spread}", "seeds": r["seeds"],
                "spread from": source if math.isfinite(r["spread"]) else "—",
                "verdict": verdict(r["margin"], r["spread"]),
                "_margin": r["margin"], "_spread": r["spread"]}


def claims_table(claims: List[Claim]):
    """The claims as a DataFrame (one row each), indexed by the claim. The first claim whose
    runs give a spread over seeds (the chapter's key comparison, listed first) lends it to the
    claims that have one seed on both sides."""
    import pandas as pd

    rows = [c.row() for c in claims]
    key = next((c for c, r in zip(claims, rows) if math.isfinite(r["_spread"])), None)
    if key is not None:
        rows = [c.row(key.row()["_spread"], key.claim) if not math.isfinite(r["_spread"]) else r
                for c, r in zip(claims, rows)]
    return pd.DataFrame(rows).set_index("claim")


def claims_record(table) -> Dict[str, Dict[str, Any]]:
    """What a notebook records: per claim, margin, spread and verdict (numbers stay numbers)."""
    return {claim: {"margin": float(row["_margin"]),
                    "spread": None if not math.isfinite(row["_spread"]) else float(row["_spread"]),
                    "verdict": row["verdict"], "seeds": row["seeds"]}
            for claim, row in table.iterrows()}


def display_table(table):
    """The table without its numeric helper columns (for the report)."""
    return table[[c for c in table.columns if not c.startswith("_")]]
