"""Kernel start-up file for the figure tests (copied to an IPython profile's ``startup/`` folder by
``tests/conftest.py``): after every cell, before the inline backend closes the cell's figures,
each open figure is drawn and what it shows -- overlapping tick labels, legend colours, axis
labels and titles -- is appended as one JSON line to the file named by FIGURE_CHECK_LOG."""


def _register():
    import json
    import os

    from IPython import get_ipython

    ip = get_ipython()
    if ip is None:
        return

    def watch(*_):
        path = os.environ.get("FIGURE_CHECK_LOG")
        if not path:
            return
        import sys

        if "matplotlib.pyplot" not in sys.modules:
            return
        import matplotlib.pyplot as plt

        from mlpl_lab.viz.layout import legend_colours, tick_overlaps

        lines = []
        for num in plt.get_fignums():
            fig = plt.figure(num)
            try:
                entry = {"cell": ip.execution_count, "overlaps": tick_overlaps(fig),
                         "legend": legend_colours(fig),
                         "suptitle": fig._suptitle.get_text() if fig._suptitle else "",
                         "axes": [{"title": ax.get_title(), "xlabel": ax.get_xlabel(),
                                   "ylabel": ax.get_ylabel()} for ax in fig.axes]}
            except Exception as exc:  # the check must never break the notebook it watches
                entry = {"cell": ip.execution_count, "error": repr(exc)}
            lines.append(json.dumps(entry))
        if lines:
            with open(path, "a", encoding="utf-8") as fh:
                fh.write("\n".join(lines) + "\n")

    ip.events.register("post_execute", watch)


_register()
del _register
