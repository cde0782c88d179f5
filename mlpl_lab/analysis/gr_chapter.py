"""What notebook 02 (GR Loss) trains, by profile, and how its ablation table is assembled.

Keeping the method lists here lets the notebook stay a sequence of calls and lets the smoke
profile run a short list (the stateful methods and GR) while ``cpu``/``gpu`` run the whole
Table 2 baseline set and the Table 3 ablation.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Tuple

import numpy as np

from ..experiment import as_profile
from ..methods.gr import ABLATIONS


def expected_positives(splits) -> float:
    """Average number of positives per image on the *clean validation* labels: EPR's and
    ROLE's k (Cole et al. take it as known; the validation set is clean in this protocol
    and already used for model selection, so no training label is peeked at)."""
    return float(splits.val.labels.float().sum(1).mean())


def gr_notebook_methods(profile, splits) -> Dict[str, Any]:
    """``{label: method spec}`` of notebook 02's main comparison (GR Loss Table 2 shape).

    ``smoke``: AN, ROLE, EM+APL, LL-R and GR (every kind of state, seconds each).
    Otherwise: full labels (the oracle), AN, WAN, AN-LS, EPR, ROLE, Hill, SPLC, EM, EM+APL,
    LL-R and GR, each with its paper's defaults (see the losses' docstrings).
    """
    p = as_profile(profile)
    k = expected_positives(splits)
    methods = {
        "full labels": "full",
        "AN": "an",
        "WAN": "wan",
        "AN-LS": "an_ls",
        "EPR": ("epr", {"expected_num_pos": k}),
        "ROLE": ("role", {"expected_num_pos": k}),
        "Hill": "hill",
        "SPLC": "splc",
        "EM": "em",
        "EM+APL": "em_apl",
        "LL-R": "ll_r",
        "GR": "gr",
    }
    if p.name == "smoke":
        return {label: methods[label] for label in ("AN", "ROLE", "EM+APL", "LL-R", "GR")}
    return methods


#: Table 3 rows: display label -> registered ablation name (AN and the full GR come from the
#: main comparison, so they are not trained twice)
ABLATION_LABELS: Dict[str, str] = {
    "k̂": "gr_k_only",
    "v": "gr_v_only",
    "L": "gr_robust_only",
    "k̂+v": "gr_k_v",
    "k̂+L": "gr_k_robust",
    "v+L": "gr_v_robust",
}


def gr_ablation_methods(profile) -> Dict[str, str]:
    """``{label: method name}`` of the Table 3 ablation still to train (``smoke``: two rows)."""
    p = as_profile(profile)
    if p.name == "smoke":
        return {label: ABLATION_LABELS[label] for label in ("k̂", "L")}
    return dict(ABLATION_LABELS)


def ablation_table(ablation_results: Mapping[str, list], main_results: Mapping[str, list],
                   reuse: Tuple[Tuple[str, str], ...] = (("AN", "gr_none"), ("GR", "gr_all"))):
    """Table 3 as a DataFrame: ✓/✗ per component and test mAP (at the best val epoch, mean
    over seeds), with the AN row (all off, the caption's baseline) and the full GR row taken
    from the main comparison."""
    import pandas as pd

    rows = []
    entries = [(label, main_results[label], name) for label, name in reuse if label in main_results]
    entries[1:1] = [(label, runs, ABLATION_LABELS.get(label, label)) for label, runs in ablation_results.items()]
    for label, runs, name in entries:
        flags = ABLATIONS.get(name, (False, False, False))
        rows.append({"row": "AN (all off)" if name == "gr_none" else ("GR (all on)" if name == "gr_all" else label),
                     "k̂(p;β)": "✓" if flags[0] else "✗", "v(p;α)": "✓" if flags[1] else "✗",
                     "L1,L2,L3": "✓" if flags[2] else "✗",
                     "mAP": float(np.mean([r.best["test_mAP"] for r in runs]))})
    return pd.DataFrame(rows).set_index("row")


def training_seconds(results: Mapping[str, list]) -> Dict[str, float]:
    """``{label: seconds}`` of training + per-epoch evaluation (mean over seeds): what each
    method of a comparison cost on this machine."""
    return {label: float(np.mean([sum(row["seconds"] for row in r.history) for r in runs]))
            for label, runs in results.items()}
