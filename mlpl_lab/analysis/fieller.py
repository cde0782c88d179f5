"""A ratio of two paired means with its Fieller interval (Fieller 1954).

The share of the AN → oracle gap a method closes is the ratio of two means over the same seeds,
ρ = d̄₁ / d̄₂ with d₁ₛ = methodₛ − ANₛ and d₂ₛ = oracleₛ − ANₛ. Its Fieller interval is the set of
ρ for which d̄₁ − ρ d̄₂ is within its own t-interval of 0: with v₁₁, v₂₂ the variances of the two
means (s²/n, ddof = 1), v₁₂ their covariance and t = t(1 − α/2, n − 1),

    (d̄₁ − ρ d̄₂)² ≤ t² (v₁₁ − 2ρ v₁₂ + ρ² v₂₂),

a quadratic a ρ² + b ρ + c ≤ 0 with a = d̄₂² − t² v₂₂, b = −2 (d̄₁ d̄₂ − t² v₁₂),
c = d̄₁² − t² v₁₁. When a > 0 (the denominator's own t-interval excludes 0) the interval is the
segment between the two roots; otherwise it is unbounded and none is given. It uses the t
distribution, so it is exact for normal differences, where a bootstrap over five seeds is not.
"""
from __future__ import annotations

import math
from typing import Any, Dict, Sequence

import numpy as np


def fieller(num: Sequence[float], den: Sequence[float], level: float = 0.95) -> Dict[str, Any]:
    """``{"estimate", "lo", "hi", "n", "reason"}`` of mean(num) / mean(den), the two paired by
    position (module docstring). ``reason`` says why an interval is missing (fewer than two pairs,
    a value not a number, a denominator whose interval reaches 0)."""
    from scipy import stats

    x, y = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"fieller pairs its two samples by position: got {x.size} and {y.size} values")
    n = x.size
    out = {"estimate": math.nan, "lo": math.nan, "hi": math.nan, "n": n, "reason": ""}
    if n < 2:
        out["reason"] = f"{n} pair(s): a ratio needs at least 2 for an interval"
        return out
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        out["reason"] = "a value is not a number"
        return out
    m1, m2 = float(x.mean()), float(y.mean())
    if m2 != 0:
        out["estimate"] = m1 / m2
    v11, v22 = float(x.var(ddof=1)) / n, float(y.var(ddof=1)) / n
    v12 = float(np.cov(x, y, ddof=1)[0, 1]) / n
    t2 = float(stats.t.ppf(0.5 + level / 2, n - 1)) ** 2
    a, b, c = m2 * m2 - t2 * v22, -2 * (m1 * m2 - t2 * v12), m1 * m1 - t2 * v11
    disc = b * b - 4 * a * c
    if a <= 0 or disc < 0:
        out["reason"] = ("the denominator's t-interval reaches 0: the Fieller interval is unbounded")
        return out
    root = math.sqrt(disc)
    out["lo"], out["hi"] = sorted(((-b - root) / (2 * a), (-b + root) / (2 * a)))
    return out
