"""An independent check of a notebook's claims record: the paired rule recomputed with
scipy.stats from the record's own per-seed values (never with mlpl_lab's helpers)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats


def check_claims_record(claims: dict, min_seeds: int = 3) -> None:
    """Each claim's diffs are a − b on the seeds both sides ran, n counts them, the kind follows
    n, every claim names its family and m, and its own verdict (``verdict_alone``) is read off the
    family-wise interval (scipy's t interval at level 1 − 0.05/m), which the record shows beside
    the unadjusted one. A control sits in the family of the claim it checks; m counts the
    family's controls on top of its other claims; a claim that holds (does not hold) alone is
    "overturned by its control" when a control's own verdict is the opposite, "inconclusive (its
    control is inconclusive)" when a control's is neither, unchanged otherwise."""
    assert claims, "no claims recorded"
    sizes = {}
    alone = {}
    for name, c in claims.items():
        assert c["family"] and isinstance(c["family_size"], int) and c["family_size"] >= 1, name
        assert sizes.setdefault(c["family"], c["family_size"]) == c["family_size"], name
        seeds = sorted(set(map(int, c["a"])) & set(map(int, c["b"])))
        assert c["seeds"] == seeds and c["n"] == len(seeds), name
        diffs = [c["a"][str(s)] - c["b"][str(s)] for s in seeds]
        assert c["diffs"] == pytest.approx(diffs), name
        want_kind = "observation" if len(seeds) < min_seeds else ("control" if c.get("control_of") else "finding")
        assert c["kind"] == want_kind, name
        own = c.get("verdict_alone", c["verdict"])
        if len(seeds) < min_seeds:
            assert own == f"inconclusive ({len(seeds)} seeds)", name
            alone[name] = own
            continue
        assert c["margin"] == pytest.approx(float(np.mean(diffs))), name
        if np.std(diffs, ddof=1) <= 1e-9 * max(1.0, abs(np.mean(diffs))):
            assert own == "inconclusive" and c["p"] is None, name  # zero spread
            alone[name] = own
            continue
        res = stats.ttest_1samp(diffs, 0.0)
        assert c["p"] == pytest.approx(res.pvalue), name
        assert c["ci95"] == pytest.approx(list(res.confidence_interval(0.95))), name
        lo, hi = res.confidence_interval(1 - 0.05 / c["family_size"])
        assert c["ci_family"] == pytest.approx([lo, hi]), name
        want = "holds" if lo > 0 else "does not hold" if hi < 0 else "inconclusive"
        assert own == want, name
        alone[name] = want
    # the controls decide with the claims they check (their own verdicts, one level deep)
    for name, c in claims.items():
        mine = [k for k, d in claims.items() if d.get("control_of") == name]
        want = alone[name]
        if mine and want in ("holds", "does not hold"):
            other = "does not hold" if want == "holds" else "holds"
            said = [claims[k]["verdict"] for k in mine]
            want = ("overturned by its control" if other in said else
                    "inconclusive (its control is inconclusive)" if any(v not in ("holds", "does not hold") for v in said)
                    else want)
        assert c["verdict"] == want, name
    # a control sits in its parent's family; no family holds more claims than its declared m
    # plus the controls counted in it
    for name, c in claims.items():
        if c.get("control_of"):
            assert c["family"] == claims[c["control_of"]]["family"], name
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
