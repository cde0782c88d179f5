"""Histograms of predicted confidence by true status (the shape of the OPML paper's Fig. 3)."""
from __future__ import annotations

from typing import Dict, Mapping

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns


def plot_confidence_histograms(panels: Mapping[str, Dict[str, np.ndarray]], statuses=None,
                               bins: int = 20, title: str | None = None):
    """One panel per model: overlaid, density-normalised histograms of confidence per status.

    ``panels`` maps a model label to ``confidence_by_status`` output. Returns the Figure.
    """
    n = len(panels)
    fig, axes = plt.subplots(1, n, figsize=(3.6 * n, 3.0), sharey=True, squeeze=False)
    palette = {"hidden positive": "tab:red", "positive": "tab:red", "observed positive": "tab:green",
               "negative": "tab:blue"}
    edges = np.linspace(0, 1, bins + 1)
    for ax, (label, conf) in zip(axes[0], panels.items()):
        for status, values in conf.items():
            if statuses is not None and status not in statuses:
                continue
            if len(values) == 0:
                continue
            sns.histplot(values, bins=edges, stat="probability", element="step", fill=True, alpha=0.3,
                         color=palette.get(status), label=f"{status} (n={len(values)})", ax=ax)
        ax.set_title(label)
        ax.set_xlabel("predicted probability")
        ax.set_ylabel("share of the entries" if ax is axes[0, 0] else "")
        ax.legend(fontsize=7)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
