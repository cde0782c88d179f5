"""What every figure of a report shows, logged while the notebook runs: after each cell, before the
inline backend closes the cell's figures, each open figure is drawn and its colliding labels
(:func:`mlpl_lab.viz.layout.tick_overlaps`: tick labels of plots, heatmaps and colour bars, legend
entries), legend colours, axis labels and titles are appended as one JSON line to a file.

``mlpl-lab report`` names the file (``<stem>.figures.jsonl`` next to the executed notebook) in
:data:`ENV`, and :func:`~mlpl_lab.reporting.report.setup_notebook` registers the hook in the
notebook's kernel, so the figure checks read what a report drew under any profile (the cpu report
as well as the smoke series), not only what the test suite executes itself.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List

#: the environment variable naming the log file (a report sets it per notebook)
ENV = "MLPL_LAB_FIGURE_LOG"


def figure_entries(cell: Any) -> List[Dict[str, Any]]:
    """One entry per open matplotlib figure (none when pyplot was never imported)."""
    import sys

    if "matplotlib.pyplot" not in sys.modules:
        return []
    import matplotlib.pyplot as plt

    from ..viz.layout import legend_colours, tick_overlaps

    out = []
    for num in plt.get_fignums():
        fig = plt.figure(num)
        try:
            out.append({"cell": cell, "overlaps": tick_overlaps(fig), "legend": legend_colours(fig),
                        "suptitle": fig._suptitle.get_text() if fig._suptitle else "",
                        "axes": [{"title": ax.get_title(), "xlabel": ax.get_xlabel(),
                                  "ylabel": ax.get_ylabel()} for ax in fig.axes]})
        except Exception as exc:  # noqa: BLE001 — the log must never break the notebook it watches
            out.append({"cell": cell, "error": repr(exc)})
    return out


def register(ip, env: str = ENV) -> bool:
    """Log every cell's figures to the file ``os.environ[env]`` names (nothing when unset), from a
    ``post_execute`` hook placed *first*, so it runs before the inline backend closes the figures.
    Registers once per kernel and variable; returns whether a hook is registered."""
    if ip is None:
        return False
    done = getattr(ip, "_mlpl_figure_logs", set())
    if env in done:
        return True

    def watch(*_):
        path = os.environ.get(env)
        if not path:
            return
        lines = [json.dumps(e) for e in figure_entries(ip.execution_count)]
        if lines:
            with open(path, "a", encoding="utf-8") as fh:
                fh.write("\n".join(lines) + "\n")

    ip.events.register("post_execute", watch)
    callbacks = ip.events.callbacks["post_execute"]  # first: before the inline backend's flush
    callbacks.insert(0, callbacks.pop(callbacks.index(watch)))
    ip._mlpl_figure_logs = done | {env}
    return True
