"""A panel's image never makes a headless front end write to the kernel during a cell.

Plain ``papermill`` (and ``jupyter nbconvert --execute``) waited forever at the panel cells of 03
and 04: nbclient mimics the ``Output`` widget, and for every output *captured* by one
(``with output: display(...)``) it sends a ``comm_msg`` to the kernel on the shell socket while it
awaits the cell's ``execute_reply`` on that socket. jupyter_client's ``Session.send`` sends it
through a synchronous shadow of the asyncio socket, which consumes the socket's edge-triggered
wake-up: a reply already there is never read (an open report of nbclient's). The panels now *set*
the widget's ``outputs`` (:func:`mlpl_lab.viz.panel_display.show_in`), so nbclient sends nothing.

Oracle: nbclient itself (the client papermill runs) executing a notebook written here, with its
shell channel's ``send`` recorded, and the widget state it saves. The race itself is not needed:
the test fails on the message that triggers it, every time.
"""
from __future__ import annotations

import base64

import nbformat
import pytest

SHOW_IN = """\
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import ipywidgets as W
from mlpl_lab.viz.panel_display import figure_png, show_in

out = W.Output()
fig, ax = plt.subplots(figsize=(2, 2))
ax.plot([0, 1])
show_in(out, fig)
ax.plot([1, 0])
show_in(out, fig)  # a slider step: the second image replaces the first
last_png = figure_png(fig)
plt.close(fig)
W.VBox([W.HTML("readout"), out])"""

# the pattern the panels used before: the control that shows the recording sees the trigger. The
# cell then sleeps, so its reply comes after nbclient's comm_msg went out: without the sleep the
# control itself can lose its reply (it once waited out the cell's timeout here)
CAPTURE = """\
import time
from IPython.display import Image, display
captured = W.Output()
with captured:
    captured.clear_output(wait=True)
    display(Image(data=last_png))
time.sleep(1.0)
captured"""


def _execute(cells):
    """Execute ``cells`` with nbclient; returns (the executed notebook, per cell the types of
    the messages the client sent on the shell channel after that cell's execute_request)."""
    from nbclient import NotebookClient

    sent = []

    class Recording(NotebookClient):
        async def async_start_new_kernel_client(self):
            kc = await super().async_start_new_kernel_client()
            send = kc.shell_channel.send

            def recording(msg):
                sent.append(msg["msg_type"])
                return send(msg)

            kc.shell_channel.send = recording  # nbclient's Output widget mimic sends through it
            return kc

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    Recording(nb, kernel_name="python3", timeout=120).execute()
    per_cell, current = [], None
    for m in sent:
        if m == "execute_request":
            current = []
            per_cell.append(current)
        elif current is not None:
            current.append(m)
    return nb, per_cell


@pytest.mark.timeout(240)
def test_show_in_sends_nothing_back_and_the_saved_widget_state_holds_the_last_image():
    """Bugs caught: a panel that captures its image into the Output widget (nbclient then writes
    to the kernel during the cell, the trigger of the plain-papermill hang); an image that does
    not reach the saved widget state (the HTML export shows the panels from it) or is the first
    draw instead of the last."""
    from mlpl_lab.reporting.html_export import WIDGET_VIEW, widget_contents

    nb, per_cell = _execute([SHOW_IN, "import base64\nprint(base64.b64encode(last_png).decode())", CAPTURE])
    assert len(per_cell) == 3, per_cell
    assert per_cell[0] == [], f"the panel's cell made nbclient send {per_cell[0]} to the kernel"
    # the control: the capture pattern does make nbclient send (the recording sees the trigger)
    assert "comm_msg" in per_cell[2], per_cell[2]

    view = next(o for o in nb.cells[0].outputs if WIDGET_VIEW in o.get("data", {}))
    pngs = widget_contents(nb, view["data"][WIDGET_VIEW]["model_id"])["pngs"]
    last = "".join(o["text"] for o in nb.cells[1].outputs if o.get("name") == "stdout").strip()
    assert pngs == [last], "the saved widget state does not hold the panel's last image (alone)"
    assert base64.b64decode(pngs[0]).startswith(b"\x89PNG")


def test_png_output_is_what_display_of_an_image_gives():
    """The output set on the widget has the shape nbformat and the front ends read (a base64
    string, not bytes: bytes in widget state would travel as a binary buffer and not render)."""
    from IPython.core.formatters import DisplayFormatter
    from IPython.display import Image

    from mlpl_lab.viz.panel_display import png_output

    png = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9Q"
                           "DwADhgGAWjR9awAAAABJRU5ErkJggg==")  # a 1x1 PNG
    data, metadata = DisplayFormatter().format(Image(data=png))
    out = png_output(png)
    assert out["output_type"] == "display_data" and out["metadata"] == metadata
    assert out["data"]["image/png"] == data["image/png"]
    nbformat.validate(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(outputs=[out])]))
