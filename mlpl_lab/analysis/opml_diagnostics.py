"""Diagnostics of OPML runs read from their records (per-epoch AP and corrections)."""
from __future__ import annotations


def correction_log(result):
    """The per-epoch diagnostics of an OPML-SP run (mean train AP, corrections and their
    precision against the truth, from its history) as a DataFrame."""
    import pandas as pd

    keys = ("train_ap_mean", "corrected", "correction_precision", "corrected_total")
    rows = [{"epoch": r["epoch"], **{k: r[k] for k in keys if k in r}} for r in result.history]
    if not any(len(r) > 1 for r in rows):
        raise ValueError("this run logged no OPML diagnostics (train an opml_sp method)")
    return pd.DataFrame(rows).set_index("epoch")
