"""An executed notebook as an HTML page that reads offline (``mlpl-lab report``'s export).

nbconvert's ``lab`` template loads require.js from a CDN on every page, the Jupyter widget
manager from another CDN when the notebook saved widget state, and mermaid.js (from a CDN) when a
page holds a diagram. A report is read from disk, often with no network, and a static page cannot
run a panel's Python callbacks anyway, so :func:`report_html`

* replaces every widget output by what the panel showed in its default state (the images its
  ``Output`` widgets held and its readout line, found through the widget state nbclient saved in
  the notebook's metadata), with one line saying that the live panel runs in JupyterLab
  (:func:`static_widgets`, also used by the course book);
* drops the widget state, so no widget manager is requested, and renders with a template
  (:data:`REPORT_TEMPLATE`) that leaves out the require.js and mermaid.js scripts (no output of
  ours uses either);
* loads MathJax from the copy next to the reports (:func:`~mlpl_lab.reporting.report.install_mathjax`).
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Dict, List

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
STATIC_NOTE = ("A static image of the panel's default state; run the notebook in JupyterLab to "
               "move its sliders.")
NO_IMAGE_NOTE = "This live panel runs in JupyterLab only (no image of it was saved)."

# the lab template without the scripts that come from a CDN (require.js, mermaid.js); the widget
# manager's script is emitted only for a notebook that keeps widget state, which report_html drops
REPORT_TEMPLATE = """\
{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
"""


def _state(nb: Dict[str, Any]) -> Dict[str, Any]:
    return nb.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})


def widget_contents(nb: Dict[str, Any], model_id: str) -> Dict[str, List[str]]:
    """What a widget showed when the notebook was saved: ``pngs``, the images its ``Output``
    widgets held, and ``html``, the values of its ``HTML`` widgets (a panel's readout), both in
    the order of its children."""
    state = _state(nb)
    found: Dict[str, List[str]] = {"pngs": [], "html": []}

    def walk(mid: str, seen: set) -> None:
        if mid in seen or mid not in state:
            return
        seen.add(mid)
        entry = state[mid]
        model = entry.get("state", {})
        for out in model.get("outputs", []) or []:
            png = out.get("data", {}).get("image/png")
            if png:
                found["pngs"].append(png if isinstance(png, str) else "".join(png))
        if entry.get("model_name") == "HTMLModel" and str(model.get("value") or "").strip():
            found["html"].append(str(model["value"]))
        for child in model.get("children", []) or []:
            walk(str(child).replace("IPY_MODEL_", ""), seen)

    walk(model_id, set())
    return found


def _text(html: str) -> str:
    import html as html_lib
    import re

    return html_lib.unescape(re.sub(r"<[^>]+>", "", html))


def static_widgets(nb: Dict[str, Any]) -> int:
    """Replace every widget output by the image(s) of its default state (a static page cannot
    run the live panel), its readout line and a note; drop the saved widget state.
    Returns how many widget outputs were replaced."""
    n = 0
    for cell in nb.get("cells", []):
        if "outputs" not in cell:
            continue
        outputs = []
        for out in cell["outputs"]:
            view = out.get("data", {}).get(WIDGET_VIEW)
            if view is None:
                outputs.append(out)
                continue
            n += 1
            shown = widget_contents(nb, view.get("model_id", ""))
            outputs += [{"output_type": "display_data", "metadata": {}, "data": {"image/png": png}}
                        for png in shown["pngs"]]
            outputs += [{"output_type": "display_data", "metadata": {},
                         "data": {"text/html": html, "text/plain": _text(html)}} for html in shown["html"]]
            note = STATIC_NOTE if shown["pngs"] else NO_IMAGE_NOTE
            outputs.append({"output_type": "display_data", "metadata": {},
                            "data": {"text/markdown": f"*{note}*", "text/plain": note}})
        cell["outputs"] = outputs
    nb.get("metadata", {}).pop("widgets", None)
    return n


def report_exporter(mathjax_url: str):
    """nbconvert's HTMLExporter as the reports use it: no code, no prompts, no CDN script."""
    import nbconvert
    from jinja2 import DictLoader

    return nbconvert.HTMLExporter(exclude_input=True, exclude_input_prompt=True,
                                  exclude_output_prompt=True, mathjax_url=mathjax_url,
                                  extra_loaders=[DictLoader({"mlpl_lab_report.html.j2": REPORT_TEMPLATE})],
                                  template_file="mlpl_lab_report.html.j2")


def report_html(nb, out_dir: Path) -> str:
    """The HTML page of executed notebook ``nb`` (an nbformat node; not modified) for a report
    written to ``out_dir`` (MathJax is installed there)."""
    import nbformat

    from .report import install_mathjax

    nb = nbformat.from_dict(copy.deepcopy(dict(nb)))
    static_widgets(nb)
    body, _ = report_exporter(install_mathjax(Path(out_dir))).from_notebook_node(nb)
    return body
