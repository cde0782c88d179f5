"""Notebook 01 — assume negative: the full-label oracle vs AN under three regimes.

Design (literals per profile): every regime is trained with AN on the same images as the
oracle (one oracle run per seed serves all regimes, see ``Profile.spec``). The key
comparison (oracle vs AN under single positive) runs on ``KEY_SEEDS`` seeds; the other
regimes on the first seed only.
"""
from __future__ import annotations

from typing import Any, Dict, List

from ..analysis.hidden_positives import hidden_positive_confidences, summarise_confidences
from ..analysis.tables import regimes_table
from .common import as_profile, runs_for, splits_for
from ..analysis.claims import Claim, claims_table

REGIMES: Dict[str, tuple] = {
    "single positive": ("single_positive", {}),
    "drop 50 %": ("drop_positives", {"alpha": 0.5}),
    "known 10 %": ("known_proportion", {"p": 0.1}),
}
METHODS = {"full labels": "full", "AN": "an"}
#: seeds of the key comparison per profile (the other regimes use the first)
KEY_SEEDS = {"smoke": 1, "cpu": 3, "gpu": 3}


def key_seeds(P) -> List[int]:
    return list(P.seeds[:KEY_SEEDS.get(P.name, 1)])


def run(profile) -> Dict[str, Dict[str, list]]:
    """``{regime: {"full labels": runs, "AN": runs}}``."""
    P = as_profile(profile)
    out = {}
    for label, (name, params) in REGIMES.items():
        seeds = key_seeds(P) if label == "single positive" else P.seeds[:1]
        out[label] = runs_for(P, METHODS, name, params, seeds=seeds, label="01 " + label)
    return out


def table(results) -> "Any":
    t = regimes_table(results)
    t["gap"] = t["full labels"] - t["AN"]
    return t


def confidences(profile, results, seed: int = 0):
    """Confidence of the oracle and AN by label status, single positive, first seed."""
    P = as_profile(profile)
    splits = splits_for(P, *REGIMES["single positive"], seed=seed)
    conf = {label: hidden_positive_confidences(runs[0], splits)
            for label, runs in results["single positive"].items()}
    summary = {label: summarise_confidences(c["train"]) for label, c in conf.items()}
    return conf, summary


def claims(results):
    """The chapter's claims table (verdicts from the runs, see :mod:`mlpl_lab.analysis.claims`)."""
    rows = [Claim(f"full labels beat AN under {regime}",
                  "Cole et al. protocol, VOC: full 90.2 vs AN 85.1 (single positive; LL's table)"
                  if regime == "single positive" else "— (the gap the later chapters try to close)",
                  "full", "AN", runs["full labels"], runs["AN"])
            for regime, runs in results.items()]
    return claims_table(rows)


def confidence_table(summary):
    """The confidence summary as a table: rows = statuses, columns = models."""
    import pandas as pd

    return pd.DataFrame(summary).round(3)
