"""The HTML export of ``mlpl-lab report`` reads offline (the browser tests open every report;
these check the page's source and the MathJax bundle without a browser).

Bugs caught: MathJax's stock configuration asked for TeX fonts the bundle lacks ("[Math
Processing Error]" on GR's Eq. 2 and 3 offline, hats floating above their letters); every page
loaded require.js from a CDN and the widget pages the widget manager from another; the widget
cells of 02, 05 and 06 were 0 px high in the static page.
"""
from __future__ import annotations

import base64
import re
from pathlib import Path

import nbformat

from mlpl_lab.reporting.execute import execute_notebook
from mlpl_lab.reporting.html_export import WIDGET_STATE, WIDGET_VIEW, widget_contents
from mlpl_lab.reporting.report import MATHJAX_CONFIG, install_mathjax


def test_mathjax_uses_only_fonts_its_bundle_ships(tmp_path):
    url = install_mathjax(tmp_path)
    root = tmp_path / "mathjax"
    configs = url.split("config=")[1].split(",")
    assert configs == MATHJAX_CONFIG.split(",")
    for name in configs:  # every configuration file the URL names is there
        assert (root / "config" / f"{name}.js").exists(), name
    local = (root / "config" / "local" / "mlpl_lab.js").read_text()
    assert local.rstrip().endswith('MathJax.Ajax.loadComplete("[MathJax]/config/local/mlpl_lab.js");')
    # the fonts it names are the ones the bundle has, for both outputs; none it could fall back to
    fonts = set(re.findall(r'(?:webFont|font): "([^"]+)"', local))
    assert fonts == {"STIX-Web"}
    for font in fonts:
        assert (root / "jax" / "output" / "HTML-CSS" / "fonts" / font / "fontdata.js").exists()
        assert (root / "jax" / "output" / "SVG" / "fonts" / font / "fontdata.js").exists()
        assert list((root / "fonts" / "HTML-CSS" / font / "woff").glob("*.woff"))
    assert "imageFont: null" in local and "availableFonts: []" in local
    # the default the stock configuration falls back to is indeed absent (else this fix is moot)
    assert not (root / "jax" / "output" / "HTML-CSS" / "fonts" / "TeX" / "fontdata.js").exists()


def test_a_panel_reads_as_its_default_image_and_nothing_comes_from_a_cdn(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    params = nbformat.v4.new_code_cell("profile = 'cpu'")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_markdown_cell("$$\\widehat{\\mathcal{R}}(f) = \\hat k$$"),
                nbformat.v4.new_code_cell("from mlpl_lab.viz.gr_panel import GRPanel\nGRPanel(num_epochs=3)")]
    src = tmp_path / "nb.ipynb"
    nbformat.write(nb, str(src))
    executed = nbformat.read(str(execute_notebook(src, tmp_path / "out", profile="smoke")), as_version=4)
    html = (tmp_path / "out" / "nb.html").read_text(encoding="utf-8")

    # the executed notebook keeps the live widget (JupyterLab); the page shows what it drew
    views = [o["data"][WIDGET_VIEW]["model_id"] for c in executed.cells for o in c.get("outputs", [])
             if WIDGET_VIEW in o.get("data", {})]
    assert len(views) == 1 and WIDGET_STATE in executed.metadata["widgets"]
    shown = widget_contents(executed, views[0])
    assert len(shown["pngs"]) == 1 and base64.b64decode(shown["pngs"][0])[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"data:image/png;base64,{shown['pngs'][0]}" in html.replace("\n", "")
    assert "q₂ = 0.01" in shown["html"][0] and "q₂ = 0.01" in html  # the panel's readout line
    assert "run the notebook in JupyterLab" in html
    assert WIDGET_VIEW not in html and WIDGET_STATE not in html

    # every script the page loads is a file next to it
    sources = re.findall(r"<script[^>]*\ssrc=\"([^\"]*)\"", html)
    assert sources == [f"mathjax/MathJax.js?config={MATHJAX_CONFIG}"]
    assert not re.search(r"(src|href)=\"(https?:)?//", html)
    assert (tmp_path / "out" / "mathjax" / "config" / "local" / "mlpl_lab.js").exists()
    assert "$$\\widehat{\\mathcal{R}}(f) = \\hat k$$" in html  # left for MathJax, intact
