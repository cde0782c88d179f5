"""An independent check of a notebook's claims record: the paired rule recomputed with
scipy.stats from the record's own per-seed values (never with mlpl_lab's helpers)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats


def check_claims_record(claims: dict, min_seeds: int = 3) -> None:
    """Each claim's diffs are a − b on the seeds both sides ran, n counts them, the kind follows
    n, every claim names its family and m, and the verdict is read off the family-wise interval
    (scipy's t interval at level 1 − 0.05/m), which the record shows beside the unadjusted one."""
    assert claims, "no claims recorded"
    sizes = {}
    for name, c in claims.items():
        assert c["family"] and isinstance(c["family_size"], int) and c["family_size"] >= 1, name
        assert sizes.setdefault(c["family"], c["family_size"]) == c["family_size"], name
        seeds = sorted(set(map(int, c["a"])) & set(map(int, c["b"])))
        assert c["seeds"] == seeds and c["n"] == len(seeds), name
        diffs = [c["a"][str(s)] - c["b"][str(s)] for s in seeds]
        assert c["diffs"] == pytest.approx(diffs), name
        want_kind = "observation" if len(seeds) < min_seeds else ("control" if c.get("control_of") else "finding")
        assert c["kind"] == want_kind, name
        if len(seeds) < min_seeds:
            assert c["verdict"] == f"inconclusive ({len(seeds)} seeds)", name
            continue
        assert c["margin"] == pytest.approx(float(np.mean(diffs))), name
        if np.std(diffs, ddof=1) <= 1e-9 * max(1.0, abs(np.mean(diffs))):
            assert c["verdict"] == "inconclusive" and c["p"] is None, name  # zero spread
            continue
        res = stats.ttest_1samp(diffs, 0.0)
        assert c["p"] == pytest.approx(res.pvalue), name
        assert c["ci95"] == pytest.approx(list(res.confidence_interval(0.95))), name
        lo, hi = res.confidence_interval(1 - 0.05 / c["family_size"])
        assert c["ci_family"] == pytest.approx([lo, hi]), name
        want = "holds" if lo > 0 else "does not hold" if hi < 0 else "inconclusive"
        assert c["verdict"] == want, name
    # no family holds more claims than it declared
    for fam, m in sizes.items():
        assert sum(c["family"] == fam for c in claims.values()) <= m, fam
    # keyed by a stable identifier, the sentence a field beside it; a control names the key it checks
    for key, c in claims.items():
        assert c["id"] == key and c["claim"] and key != c["claim"], key
        assert c.get("control_of") is None or c["control_of"] in claims, key


def by_sentence(claims: dict) -> dict:
    """A claims record (keyed by the claims' identifiers) read by the sentences the table shows:
    ``{sentence: claim}`` (a test names a claim the way a reader does)."""
    out = {c["claim"]: c for c in claims.values()}
    assert len(out) == len(claims), "two claims with one sentence"
    return out
