"""An independent check of a notebook's claims record: the paired rule of issue 20 recomputed
with scipy.stats from the record's own per-seed values (never with mlpl_lab's helpers)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats


def check_claims_record(claims: dict, min_seeds: int = 3) -> None:
    """Each claim's diffs are a − b on the seeds both sides ran, n counts them, the kind follows
    n, and the verdict (interval, p, Holm over the table's findings) is what scipy gives."""
    assert claims, "no claims recorded"
    p_raw = {}
    for name, c in claims.items():
        seeds = sorted(set(map(int, c["a"])) & set(map(int, c["b"])))
        assert c["seeds"] == seeds and c["n"] == len(seeds), name
        diffs = [c["a"][str(s)] - c["b"][str(s)] for s in seeds]
        assert c["diffs"] == pytest.approx(diffs), name
        assert c["kind"] == ("finding" if len(seeds) >= min_seeds else "observation"), name
        if len(seeds) < min_seeds:
            assert c["verdict"] == f"inconclusive ({len(seeds)} seeds)", name
            assert c["p_holm"] is None, name
            continue
        assert c["margin"] == pytest.approx(float(np.mean(diffs))), name
        if np.std(diffs, ddof=1) <= 1e-9 * max(1.0, abs(np.mean(diffs))):
            assert c["verdict"] == "inconclusive" and c["p"] is None, name  # zero spread
            continue
        res = stats.ttest_1samp(diffs, 0.0)
        assert c["p"] == pytest.approx(res.pvalue), name
        assert c["ci95"] == pytest.approx(list(res.confidence_interval(0.95))), name
        p_raw[name] = res.pvalue
    # Holm over the findings, by hand: sorted p times m, m − 1, ..., running maximum
    running, m = 0.0, len(p_raw)
    for j, name in enumerate(sorted(p_raw, key=p_raw.get)):
        running = max(running, min(1.0, (m - j) * p_raw[name]))
        c = claims[name]
        assert c["p_holm"] == pytest.approx(running), name
        lo, hi = c["ci95"]
        want = ("holds" if lo > 0 and running < 0.05 else
                "does not hold" if hi < 0 and running < 0.05 else "inconclusive")
        assert c["verdict"] == want, name
