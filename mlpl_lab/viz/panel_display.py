"""How a widget panel puts its figure on screen: one PNG, rendered once.

IPython's inline display of a Figure renders it twice (``bbox_inches="tight"`` draws once to
measure); panels redraw on every slider step, so they render the PNG themselves at a fixed
size and dpi and show it as an image in their ``Output`` widget (the browser tests measure the
update latency).
"""
from __future__ import annotations

import io

PANEL_DPI = 80


def figure_png(fig, dpi: int = PANEL_DPI) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def show_in(output, fig, dpi: int = PANEL_DPI) -> None:
    """Replace what ``output`` (an ipywidgets Output) shows with ``fig`` as one PNG."""
    from IPython.display import Image, display

    png = figure_png(fig, dpi)
    with output:
        output.clear_output(wait=True)
        display(Image(data=png))
