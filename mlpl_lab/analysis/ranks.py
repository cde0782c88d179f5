"""Ranks of k methods over N independent data sets, and the p-values a reviewer accepts for them.

Demšar (JMLR 2006, §3.2.2) compares k classifiers over N data sets by their ranks within each
data set (1 = best, ties share the mean rank). The data sets must be **independent samples** of
a population of problems: label regimes of one data set (same images, test set, seeds and
backbone) are not, so over them ranks are description only (:func:`describe_ranks`) and no p
is printed.

Over independent data sets (:func:`rank_test`):

* **Friedman's χ²** (``scipy.stats.friedmanchisquare``),
  χ²_F = 12N/(k(k+1)) [Σ_j R_j² − k(k+1)²/4] with R_j the mean ranks; its χ²(k − 1) p is far
  off for few data sets (Demšar: "undesirably conservative"), so it is reported, never used.
* **Iman–Davenport's F** (:func:`iman_davenport`), F_F = (N − 1) χ²_F / (N(k − 1) − χ²_F),
  distributed as F(k − 1, (k − 1)(N − 1)) under the null: the p the chapter prints.
* **The permutation p** (:func:`permutation_p`): under the null every method is equally good, so
  within each data set every assignment of its ranks to the methods is equally likely. The p is
  the share of assignments whose Σ_j R_j² (equivalently χ²_F) is at least the observed one:
  enumerated exactly when the assignments are few enough (the first data set's held fixed, which
  leaves the p unchanged), else estimated from :data:`PERMUTATIONS` random assignments with a
  fixed RNG seed as (1 + hits) / (1 + draws) — said in ``"method"``.
* **Nemenyi's critical difference** of mean ranks, CD = q_α √(k(k+1)/(6N)), q_α the studentized
  range quantile (k groups, infinite df) over √2: two mean ranks further apart than CD differ at
  level α. The diagram is worth drawing only where it can separate something
  (:func:`cd_separates`: the global test rejects, at least one pair is further apart than CD, and
  a pairwise test at this N can reject at all). Its pairs depend on which methods are pooled: the
  CD grows with k, and each method's mean rank depends on the others ranked beside it.

**A pair of methods is compared on N data sets**, and an exact pairwise test at small N cannot
reject whatever the data: the two-sided sign test (and Wilcoxon's signed-rank, whose most extreme
outcome is the same: every data set favouring one side) reaches at best p = 2/2^N
(:func:`smallest_pairwise_p`), 0.0625 at N = 5. Where that is above α no pairwise statement is a
finding (:func:`pairwise_can_reject`): ranks and CD are description only, and the chapter says why
(:func:`pairwise_note`).
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

#: random assignments of the permutation p when exact enumeration is too long
PERMUTATIONS = 100_000
PERMUTATION_SEED = 0
#: exact enumeration up to this many assignments ((k!)^(N−1)); beyond it, random assignments
EXACT_LIMIT = 200_000
ALPHA = 0.05


def _matrix(scores) -> np.ndarray:
    """``scores`` as a float array, methods × data sets, with a clear error on bad shapes."""
    a = np.asarray(scores.to_numpy(dtype=float) if hasattr(scores, "to_numpy") else scores, dtype=float)
    if a.ndim != 2:
        raise ValueError(f"scores must be a 2-d table (methods × data sets), got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError("scores hold NaN or infinity: rank only a complete block (every method on every data set)")
    return a


def ranks(scores, higher_is_better: bool = True) -> np.ndarray:
    """Methods × data sets: each method's rank within its data set (1 = best; ties share the
    mean rank; ``scipy.stats.rankdata``)."""
    from scipy import stats

    a = _matrix(scores)
    return stats.rankdata(-a if higher_is_better else a, axis=0, method="average")


def friedman_chi2(r: np.ndarray) -> float:
    """Friedman's χ²_F from a methods × data sets rank matrix (Demšar 2006, Eq. in §3.2.2; no
    tie correction)."""
    k, n = r.shape
    mean = r.mean(axis=1)
    return 12.0 * n / (k * (k + 1)) * (float(np.sum(mean ** 2)) - k * (k + 1) ** 2 / 4.0)


def iman_davenport(chi2: float, k: int, n: int) -> Tuple[float, float, Tuple[int, int]]:
    """``(F_F, p, (df1, df2))``: Iman and Davenport's F from Friedman's χ²_F with k methods and
    N data sets, F_F = (N − 1) χ²_F / (N(k − 1) − χ²_F) on (k − 1, (k − 1)(N − 1)) degrees of
    freedom. When every data set ranks the methods alike the denominator is 0: F is infinite
    and p is 0."""
    from scipy import stats

    if k < 2 or n < 2:
        raise ValueError(f"Iman–Davenport needs at least 2 methods and 2 data sets, got k = {k}, N = {n}")
    df = (k - 1, (k - 1) * (n - 1))
    denom = n * (k - 1) - chi2
    if denom <= 1e-12:
        return math.inf, 0.0, df
    f = (n - 1) * chi2 / denom
    return f, float(stats.f.sf(f, *df)), df


def permutation_p(r: np.ndarray, draws: int = PERMUTATIONS, seed: int = PERMUTATION_SEED,
                  exact_limit: int = EXACT_LIMIT) -> Tuple[float, str]:
    """``(p, method)``: the permutation p of Σ_j R_j² (module docstring) for the rank matrix
    ``r`` (methods × data sets): exact when (k!)^(N−1) ≤ ``exact_limit``, else from ``draws``
    random assignments (RNG ``seed``)."""
    k, n = r.shape
    sums = r.sum(axis=1)
    observed = float(np.sum(sums ** 2))
    tol = 1e-9 * max(1.0, observed)
    count = math.factorial(k) ** (n - 1)
    if count <= exact_limit:
        columns = [np.array(list(itertools.permutations(r[:, j]))) for j in range(1, n)]  # (k!, k) each
        total = np.zeros((1, k)) + r[:, 0]
        for perms in columns:  # every combination of the later data sets' assignments
            total = (total[:, None, :] + perms[None, :, :]).reshape(-1, k)
        stat = np.sum(total ** 2, axis=1)
        return float(np.mean(stat >= observed - tol)), f"exact ({count:,} assignments)"
    rng = np.random.default_rng(seed)
    hits = 0
    batch = 10_000
    done = 0
    while done < draws:
        b = min(batch, draws - done)
        perm = np.argsort(rng.random((b, n, k)), axis=2)  # a random assignment per data set
        cols = r.T  # (n, k)
        shuffled = np.take_along_axis(np.broadcast_to(cols, (b, n, k)), perm, axis=2)
        stat = np.sum(shuffled.sum(axis=1) ** 2, axis=1)
        hits += int(np.sum(stat >= observed - tol))
        done += b
    return (1 + hits) / (1 + draws), f"Monte Carlo ({draws:,} random assignments, seed {seed})"


def critical_difference(k: int, n: int, alpha: float = ALPHA) -> float:
    """Nemenyi's critical difference of mean ranks, q_α √(k(k+1)/(6N))."""
    from scipy import stats

    if k < 2 or n < 1:
        return math.nan
    q = float(stats.studentized_range.ppf(1 - alpha, k, np.inf)) / math.sqrt(2)
    return q * math.sqrt(k * (k + 1) / (6 * n))


def separated_pairs(mean_ranks: Dict[str, float], cd: float) -> List[Tuple[str, str]]:
    """The pairs ``(better, worse)`` whose mean ranks differ by more than ``cd``."""
    items = sorted(mean_ranks.items(), key=lambda kv: kv[1])
    return [(a, b) for (a, ra), (b, rb) in itertools.combinations(items, 2) if rb - ra > cd]


def smallest_pairwise_p(n: int) -> float:
    """The smallest p an exact two-sided sign test (or Wilcoxon signed-rank test) can reach
    comparing two methods on ``n`` data sets: every data set favours one side, probability
    2 × (1/2)^n under the null (at most 1)."""
    return min(1.0, 2.0 / 2 ** int(n)) if n >= 1 else 1.0


def pairwise_can_reject(n: int, alpha: float = ALPHA) -> bool:
    """Whether any pairwise test over ``n`` data sets can reject at ``alpha``: its smallest
    attainable p (:func:`smallest_pairwise_p`) is at most ``alpha``."""
    return smallest_pairwise_p(n) <= alpha


def pairwise_note(n: int, alpha: float = ALPHA) -> str:
    """The sentence a chapter prints where pairs of methods are compared over ``n`` data sets,
    computed: whether a pairwise test at that N can reject at ``alpha``, with the smallest p."""
    p = smallest_pairwise_p(n)
    if p <= alpha:
        return (f"with {n} data sets a pairwise test can reject at α = {alpha:g} (the smallest p a two-sided "
                f"sign test can reach is 2/2^{n} = {p:.4g})")
    return (f"with {n} data sets no pairwise test can reject at α = {alpha:g} (the smallest p a two-sided sign "
            f"test, or Wilcoxon's signed-rank test, can reach is 2/2^{n} = {p:.4g}): the ranks and the critical "
            "difference are description only, and no pair of methods is a finding here")


def cd_separates(test: Dict[str, Any]) -> bool:
    """Whether a critical-difference diagram can separate something: the global test rejects at
    its α, at least one pair of mean ranks is further apart than the CD, and a pairwise test at
    the test's N can reject at all (:func:`pairwise_can_reject`)."""
    p = test.get("p")
    n = test.get("N")
    alpha = test.get("alpha", ALPHA)
    return bool(p is not None and math.isfinite(p) and p < alpha and test.get("separated")
                and n is not None and pairwise_can_reject(int(n), alpha))


def rank_test(scores, methods: Sequence[str], datasets: Sequence[str], alpha: float = ALPHA,
              draws: int = PERMUTATIONS, seed: int = PERMUTATION_SEED) -> Dict[str, Any]:
    """The ranks of ``methods`` (rows of ``scores``) over the independent ``datasets`` (its
    columns) and their tests: ``{"mean_ranks", "k", "N", "friedman_chi2", "friedman_p"``
    (χ² approximation, shown only beside the others), ``"F"``, ``"df"``, ``"p"`` (Iman–Davenport:
    the p the chapter reads), ``"p_permutation"``, ``"permutation"`` (exact or Monte Carlo),
    ``"cd"``, ``"separated"`` (pairs further apart than CD: findings only where ``"pairwise"``),
    ``"pairwise_min_p"`` (the smallest p a pairwise test over these N data sets can reach),
    ``"pairwise"`` (whether it reaches α), ``"alpha"``, ``"reason"`` (why there is no test, else
    "")``}``."""
    from scipy import stats

    r = ranks(scores)
    k, n = r.shape
    if (k, n) != (len(methods), len(datasets)):
        raise ValueError(f"scores are {k} × {n} but {len(methods)} methods and {len(datasets)} data sets were named")
    mean = {m: float(v) for m, v in zip(methods, r.mean(axis=1))}
    out: Dict[str, Any] = {"mean_ranks": mean, "k": k, "N": n, "friedman_chi2": math.nan,
                           "friedman_p": math.nan, "F": math.nan, "df": None, "p": math.nan,
                           "p_permutation": math.nan, "permutation": "", "cd": math.nan,
                           "separated": [], "alpha": alpha, "reason": ""}
    if k < 3 or n < 2:
        out["reason"] = f"a rank test needs at least 3 methods on at least 2 data sets (here {k} × {n})"
        return out
    chi2 = friedman_chi2(r)
    f, p, df = iman_davenport(chi2, k, n)
    p_perm, how = permutation_p(r, draws=draws, seed=seed)
    cd = critical_difference(k, n, alpha)
    out.update(friedman_chi2=chi2, friedman_p=float(stats.chi2.sf(chi2, k - 1)), F=f, df=df, p=p,
               p_permutation=p_perm, permutation=how, cd=cd, separated=separated_pairs(mean, cd),
               pairwise_min_p=smallest_pairwise_p(n), pairwise=pairwise_can_reject(n, alpha))
    return out


def describe_ranks(scores, methods: Sequence[str], columns: Sequence[str]) -> Dict[str, Any]:
    """Ranks over columns that are not independent data sets (label regimes of one data set):
    ``{"ranks": {method: {column: rank}}, "mean_ranks": {method: mean}}`` — description only,
    no test and no p."""
    r = ranks(scores)
    return {"ranks": {m: {c: float(v) for c, v in zip(columns, row)} for m, row in zip(methods, r)},
            "mean_ranks": {m: float(v) for m, v in zip(methods, r.mean(axis=1))}}
