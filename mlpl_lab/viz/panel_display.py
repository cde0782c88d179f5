"""How a widget panel puts its figure on screen: one PNG, rendered once, set as its ``Output``
widget's content.

IPython's inline display of a Figure renders it twice (``bbox_inches="tight"`` draws once to
measure); panels redraw on every slider step, so they render the PNG themselves at a fixed
size and dpi (the browser tests measure the update latency).

The image is *set* as the widget's ``outputs`` (one state update the kernel sends), never captured
with ``with output: display(...)``. Capturing makes a headless front end reply: nbclient (under
plain ``papermill`` and ``jupyter nbconvert --execute``) mimics the Output widget and, for each
captured output, sends a ``comm_msg`` to the kernel on the shell socket while it awaits that
cell's ``execute_reply`` on the same socket. jupyter_client's ``Session.send`` sends through a
plain (synchronous) shadow of the asyncio socket, which drains the socket's edge-triggered
wake-up; when the reply has already arrived (a fast cell, a busy machine), pyzmq is never told,
and the wait never ends (an open report of nbclient's): notebooks 03 and 04 stopped at their panel
cells. With the outputs set directly nbclient sends nothing to the kernel, and it saves the same
``outputs`` in the widget state (what the HTML export shows).
"""
from __future__ import annotations

import base64
import io

PANEL_DPI = 80


def figure_png(fig, dpi: int = PANEL_DPI) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def png_output(png: bytes) -> dict:
    """``png`` as one ``display_data`` output (nbformat's shape; the PNG base64-encoded, as
    IPython's display of an ``Image`` gives it)."""
    return {"output_type": "display_data", "metadata": {},
            "data": {"image/png": base64.b64encode(png).decode("ascii"),
                     "text/plain": "<IPython.core.display.Image object>"}}


def show_in(output, fig, dpi: int = PANEL_DPI) -> None:
    """Replace what ``output`` (an ipywidgets Output) shows with ``fig`` as one PNG: a single
    assignment of its ``outputs`` (no output capture; see the module docstring)."""
    output.outputs = (png_output(figure_png(fig, dpi)),)
