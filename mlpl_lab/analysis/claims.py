"""Claims computed from runs: the paper's claim and number, ours paired by seed, a verdict.

A claim says "A beats B" on a metric read at each run's best-val epoch. Its two sides are
**paired by seed** (seed ``s`` draws the split, the observed labels and the initialisation, so
A_s and B_s saw the same data): only the seeds both sides ran count, d_s = A_s − B_s.

* **margin** = mean of the n paired differences, d̄;
* **95 % interval** = d̄ ± t(0.975, n − 1) · s_d / √n (Student t, df = n − 1, s_d the sample
  standard deviation of the differences, ddof = 1);
* **p** = two-sided p-value of the paired t-test of d̄ = 0 (t = d̄ / (s_d / √n), df = n − 1);
* **p (Holm)** = Holm's step-down adjustment of p over the *findings* of one claims table
  (one chapter): with the m p-values sorted, p_(i) ↦ max_{j ≤ i} min(1, (m − j + 1) · p_(j))
  (Holm 1979, "A simple sequentially rejective multiple test procedure").

**Verdict** ("A beats B"):

* fewer than 3 paired seeds → ``"inconclusive (n seeds)"``, kind *observation*: its margin (and
  with two seeds its interval and p) is shown, never judged, and it is not in the Holm family;
  no spread is borrowed from another comparison;
* *holds* — the interval's lower bound > 0 **and** p (Holm) < 0.05;
* *does not hold* — the interval's upper bound < 0 **and** p (Holm) < 0.05;
* *inconclusive* — otherwise: the interval contains 0, or the difference does not survive
  the Holm adjustment, or the margin is not a number (a NaN value, no shared seed), or every
  difference is identical (zero spread: scipy's ``ttest_1samp`` then returns t = ±inf, p = 0
  and a zero-width interval, or NaN when the differences are all 0 — a point, not evidence).

The ``reason`` column says which. Bouthillier et al. (2021) and Demšar (2006) motivate pairing
and the correction; the notebooks display :func:`explain` instead of restating the rule.
Prose in the notebooks never states an outcome; it prints these verdicts.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive"
FINDING, OBSERVATION = "finding", "observation"
MIN_SEEDS = 3          # paired seeds a claim needs to be a finding
LEVEL = 0.95           # the interval's level
ALPHA = 0.05           # Holm-adjusted p a finding needs


def by_seed(runs, metric: str = "test_mAP") -> Dict[int, float]:
    """``{seed: metric at the best-val epoch}`` of a set of runs (index when a run has no spec)."""
    out = {}
    for i, r in enumerate(runs):
        seed = getattr(getattr(r, "spec", None), "seed", i)
        out[int(seed)] = float(r.best[metric])
    return out


def inconclusive(n: int) -> str:
    """The verdict of a claim on fewer than :data:`MIN_SEEDS` paired seeds (exact text)."""
    return f"{INCONCLUSIVE} ({n} seeds)"


def _seed_list(seeds) -> str:
    return ", ".join(str(s) for s in seeds) or "none"


def paired(a: Mapping[int, float], b: Mapping[int, float], level: float = LEVEL) -> Dict[str, Any]:
    """The paired comparison of two ``{seed: value}`` maps (module docstring):
    ``{"seeds", "diffs", "n", "margin", "sd", "lo", "hi", "p", "reason"}``. ``reason`` is ""
    when the interval and p are defined, else why not (NaN in ``lo``/``hi``/``p``)."""
    from scipy import stats

    seeds = sorted(set(a) & set(b))
    diffs = [float(a[s]) - float(b[s]) for s in seeds]
    n = len(seeds)
    out = {"seeds": seeds, "diffs": diffs, "n": n, "margin": math.nan, "sd": math.nan,
           "lo": math.nan, "hi": math.nan, "p": math.nan, "reason": ""}
    if n == 0:
        out["reason"] = (f"no seed ran on both sides (A on {_seed_list(sorted(a))}, "
                         f"B on {_seed_list(sorted(b))})")
        return out
    bad = [s for s, d in zip(seeds, diffs) if not math.isfinite(d)]
    if bad:
        out["reason"] = f"a value is not a number on seed {_seed_list(bad)}"
        return out
    d = np.asarray(diffs)
    out["margin"] = float(d.mean())
    if n < 2:
        out["reason"] = "one paired seed: no interval"
        return out
    sd = float(d.std(ddof=1))
    out["sd"] = sd
    if sd <= 1e-9 * max(1.0, abs(out["margin"])):
        out["reason"] = (f"zero spread: all {n} differences equal {out['margin']:+.2f}, so the "
                         "t-interval has zero width (undefined as evidence)")
        return out
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    t = out["margin"] / (sd / math.sqrt(n))
    out.update(lo=out["margin"] - half, hi=out["margin"] + half,
               p=float(2 * stats.t.sf(abs(t), n - 1)))
    return out


def holm(pvalues: Sequence[float]) -> List[float]:
    """Holm's step-down adjusted p-values (module docstring); NaN entries stay NaN and do not
    count in m."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(len(p), math.nan)
    idx = [i for i in range(len(p)) if math.isfinite(p[i])]
    m = len(idx)
    running = 0.0
    for j, i in enumerate(sorted(idx, key=lambda i: p[i])):
        running = max(running, min(1.0, (m - j) * p[i]))
        out[i] = running
    return [float(x) for x in out]


def decide(c: Mapping[str, Any], p_holm: float) -> tuple[str, str, str]:
    """``(verdict, kind, reason)`` of a paired comparison ``c`` (from :func:`paired`) whose
    adjusted p is ``p_holm`` (module docstring)."""
    n = c["n"]
    kind = FINDING if n >= MIN_SEEDS else OBSERVATION
    if n < MIN_SEEDS:
        why = c["reason"] or "shown, not judged"
        return inconclusive(n), kind, f"fewer than {MIN_SEEDS} paired seeds: {why}"
    if c["reason"]:
        return INCONCLUSIVE, kind, c["reason"]
    if c["lo"] <= 0 <= c["hi"]:
        return INCONCLUSIVE, kind, "the 95 % interval contains 0"
    if not p_holm < ALPHA:
        return INCONCLUSIVE, kind, f"not after Holm adjustment (p (Holm) = {p_holm:.3f})"
    return (HOLDS if c["lo"] > 0 else FAILS), kind, ""


def convergence(sides: Sequence[tuple[str, Sequence[Any]]]) -> tuple[str, Optional[bool]]:
    """``(text, flag)`` over every run of the claim: ``("yes", True)`` when every run has
    ``converged is True``; which label/seeds did not (``False``); ``("unknown", None)`` when
    no run says it did not but some do not say."""
    failed, unknown = [], False
    for label, runs in sides:
        seeds = [getattr(getattr(r, "spec", None), "seed", i) for i, r in enumerate(runs)
                 if getattr(r, "converged", None) is False]
        unknown |= any(getattr(r, "converged", None) is None for r in runs)
        if seeds:
            failed.append(f"{label} seed{'s' if len(seeds) > 1 else ''} {_seed_list(seeds)}")
    if failed:
        return "no: " + "; ".join(failed) + (" (others unknown)" if unknown else ""), False
    return ("unknown", None) if unknown else ("yes", True)


def _num(x: float, fmt: str = "+.2f") -> str:
    return "—" if not math.isfinite(x) else format(x, fmt)


def _p(x: float) -> str:
    if not math.isfinite(x):
        return "—"
    return "< 0.001" if x < 0.001 else f"{x:.3f}"


@dataclass
class Claim:
    """One row of a chapter's claims table: "A beats B" on ``metric``, paired by seed."""

    claim: str                    # "A beats B under <regime>"
    paper: str                    # the paper's number(s), as a short text
    a_label: str
    b_label: str
    a_runs: Sequence[Any] = field(repr=False)
    b_runs: Sequence[Any] = field(repr=False)
    metric: str = "test_mAP"
    values: Optional[tuple] = field(default=None, repr=False)  # (a, b) {seed: value}, see of_values
    groups: Optional[Dict[str, Sequence[Any]]] = field(default=None, repr=False)  # label -> runs

    @classmethod
    def of_values(cls, claim: str, paper: str, a_label: str, b_label: str,
                  a: Mapping[int, float], b: Mapping[int, float],
                  runs: Mapping[str, Sequence[Any]] | None = None) -> "Claim":
        """A claim on per-seed values computed elsewhere (e.g. a difference of two margins);
        ``runs``: ``{label: runs}`` they come from (their convergence is reported)."""
        return cls(claim, paper, a_label, b_label, [], [], values=(dict(a), dict(b)),
                   groups=dict(runs or {}))

    def sides(self) -> tuple[Dict[int, float], Dict[int, float]]:
        if self.values is not None:
            return self.values
        return by_seed(self.a_runs, self.metric), by_seed(self.b_runs, self.metric)

    def row(self) -> Dict[str, Any]:
        """The row without the Holm-dependent columns (see :func:`claims_table`)."""
        a, b = self.sides()
        c = paired(a, b)
        seeds = c["seeds"]
        if seeds:
            ma, mb = (float(np.mean([x[s] for s in seeds])) for x in (a, b))
        else:  # nothing paired: each side's own mean, for the reader only
            ma, mb = (float(np.mean(list(x.values()))) if x else math.nan for x in (a, b))
        groups = self.groups if self.groups is not None else {self.a_label: self.a_runs,
                                                               self.b_label: self.b_runs}
        conv, flag = convergence(list(groups.items()))
        return {"claim": self.claim, "paper": self.paper,
                "ours": f"{self.a_label} {ma:.1f} vs {self.b_label} {mb:.1f}",
                "margin [95 % CI]": f"{_num(c['margin'])} [{_num(c['lo'])}, {_num(c['hi'])}]",
                "seeds": f"{c['n']}: {_seed_list(seeds)}",
                "p": _p(c["p"]), "converged": conv,
                "_a": a, "_b": b, "_seeds": seeds, "_diffs": c["diffs"], "_n": c["n"],
                "_margin": c["margin"], "_lo": c["lo"], "_hi": c["hi"], "_p": c["p"],
                "_reason": c["reason"], "_converged": flag}


def claims_table(claims: List[Claim]):
    """The claims as a DataFrame (one row each), indexed by the claim; Holm's adjustment runs
    over the findings of this table (rows on ≥ 3 paired seeds with a p-value)."""
    import pandas as pd

    rows = [c.row() for c in claims]
    family = [i for i, r in enumerate(rows) if r["_n"] >= MIN_SEEDS and math.isfinite(r["_p"])]
    adjusted = dict(zip(family, holm([rows[i]["_p"] for i in family])))
    for i, r in enumerate(rows):
        ph = adjusted.get(i, math.nan)
        verdict, kind, reason = decide({"n": r["_n"], "lo": r["_lo"], "hi": r["_hi"],
                                        "reason": r["_reason"]}, ph)
        r.update({"p (Holm)": _p(ph), "verdict": verdict, "kind": kind, "reason": reason, "_p_holm": ph})
    cols = ["claim", "paper", "ours", "margin [95 % CI]", "seeds", "p", "p (Holm)", "verdict",
            "kind", "reason", "converged"]
    t = pd.DataFrame(rows, columns=cols + [k for k in (rows[0] if rows else {}) if k.startswith("_")])
    return t.set_index("claim")


def mark_schedule_bound(table, notes: Mapping[str, str]):
    """``table`` (:func:`claims_table`) with the claims in ``notes`` marked *schedule-bound*: a
    side's method moves its targets until the last epoch by design (GR, Eq. 9–13), so its runs'
    curves rise to the end; ``notes[claim]`` says what the control (the length check) found. The
    ``converged`` column shows "§ <note>" and ``_schedule`` keeps the note for the record and the
    take-aways. A claim not in the table is an error (a renamed claim would drop its mark)."""
    missing = [c for c in notes if c not in table.index]
    if missing:
        raise KeyError(f"no such claims to mark schedule-bound: {missing}")
    table = table.copy()
    table["_schedule"] = None
    for claim, note in notes.items():
        table.at[claim, "_schedule"] = note
        table.at[claim, "converged"] = f"§ {note}"
    return table


def _json(x: float) -> Optional[float]:
    return None if x is None or not math.isfinite(x) else float(x)


def claims_record(table) -> Dict[str, Dict[str, Any]]:
    """What a notebook records, per claim — enough to recompute the verdict: ``a`` and ``b``
    (``{seed: value}``, seeds as strings), the paired ``seeds`` and ``diffs``, ``n``,
    ``margin``, ``ci95`` ([lo, hi]), ``sd`` and ``spread`` (its alias: the differences' sample
    standard deviation), ``p``, ``p_holm``, ``verdict``, ``kind``, ``reason``, ``converged``
    (True/False/None). NaN becomes None."""
    out = {}
    for claim, row in table.iterrows():
        diffs = [float(d) for d in row["_diffs"]]
        sd = float(np.std(diffs, ddof=1)) if len(diffs) >= 2 and all(map(math.isfinite, diffs)) else math.nan
        out[claim] = {"a": {str(s): _json(v) for s, v in row["_a"].items()},
                      "b": {str(s): _json(v) for s, v in row["_b"].items()},
                      "seeds": [int(s) for s in row["_seeds"]], "diffs": [_json(d) for d in diffs],
                      "n": int(row["_n"]), "margin": _json(row["_margin"]),
                      "ci95": [_json(row["_lo"]), _json(row["_hi"])],
                      "sd": _json(sd), "spread": _json(sd),
                      "p": _json(row["_p"]), "p_holm": _json(row["_p_holm"]),
                      "verdict": row["verdict"], "kind": row["kind"], "reason": row["reason"],
                      "converged": None if row["_converged"] is None else bool(row["_converged"]),
                      "schedule_bound": row.get("_schedule") or None}
    return out


def display_table(table):
    """The table without its numeric helper columns (for the report)."""
    return table[[c for c in table.columns if not c.startswith("_")]]


def claims_view(table, what: str = "The chapter's claims, each paired by seed"):
    """The claims table as a notebook shows it (:func:`mlpl_lab.analysis.display.styled`):
    :func:`display_table` with a caption saying how to read it; its cells are already text
    (margins with two decimals, p with three)."""
    from .display import styled

    cap = (f"{what.rstrip('. ')}. ours: each side's mean over the paired seeds; margin: the mean "
           "of the paired differences A − B with its 95 % Student-t interval; p: the paired "
           "t-test, p (Holm): adjusted over this table's findings (the rule above); converged: "
           "whether every run of the row met the convergence criterion.")
    return styled(display_table(table), cap, best=False)


def explain() -> str:
    """The verdict rule as Markdown (the notebooks display it rather than restate it)."""
    return (
        "**How a claim is judged.** Both sides are paired by seed (same split, same observed labels, "
        "same initialisation); only the seeds both ran count. For each seed $s$, $d_s = A_s - B_s$. "
        r"The **margin** is $\bar d$; its **95 % interval** is $\bar d \pm t_{0.975,\,n-1}\, s_d/\sqrt n$ "
        "(Student $t$, $n$ paired seeds); **p** is the two-sided paired $t$-test of $\\bar d = 0$, and "
        "**p (Holm)** adjusts it for the number of findings in this table (Holm's step-down method).\n\n"
        f"* **holds**: the interval lies above 0 and p (Holm) < {ALPHA};\n"
        f"* **does not hold**: the interval lies below 0 and p (Holm) < {ALPHA};\n"
        "* **inconclusive**: otherwise — the interval contains 0, the difference does not survive the "
        "Holm adjustment, a value is missing, or every seed gives the same difference (zero spread: "
        "the interval has zero width, a point rather than evidence);\n"
        f"* **inconclusive (n seeds)**: fewer than {MIN_SEEDS} paired seeds. Such a row is an "
        "*observation* (kind column): its numbers are shown, not judged.\n\n"
        "`converged` says whether every run of the row met the run store's convergence criterion. "
        "Each claim's record holds both sides per seed and the differences, so every verdict can be "
        "recomputed from it.")


def takeaways(table) -> str:
    """The chapter's claims grouped by verdict, as Markdown computed from ``table``
    (:func:`claims_table`): what *holds*, what *does not hold*, what is *inconclusive* and why
    (the interval contains 0, Holm, too few seeds, a missing value), and which rows rest on runs
    that did not converge. The notebooks' take-aways display this instead of stating outcomes."""
    groups = {HOLDS: [], FAILS: [], INCONCLUSIVE: []}
    for claim, row in table.iterrows():
        verdict = str(row["verdict"])
        key = HOLDS if verdict == HOLDS else FAILS if verdict == FAILS else INCONCLUSIVE
        text = f"*{claim}* — margin {row['margin [95 % CI]']}, {int(row['_n'])} paired seed(s)"
        if key == INCONCLUSIVE:
            text += f": {row['reason'] or verdict}"
        if row.get("_schedule"):
            text += f" (§ {row['_schedule']})"
        elif row.get("_converged") is False:
            text += " (†: a run of this row did not converge)"
        groups[key].append(text)
    heads = {HOLDS: "Holds at this scale", FAILS: "Does not hold at this scale",
             INCONCLUSIVE: "Inconclusive at this scale"}
    lines = [f"**These runs' verdicts** ({len(table)} claim(s), computed from the claims table above):", ""]
    for key, items in groups.items():
        lines.append(f"* **{heads[key]}** ({len(items)}):" + ("" if items else " none"))
        lines += [f"    * {t}" for t in items]
    return "\n".join(lines)
