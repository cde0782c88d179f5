# Sphinx configuration of the course book (`make book`). mlpl_lab.course.stage_book copies it next
# to the staged pages; the notebooks are the ones a report executed: they are never run again.
from pathlib import Path

import mlpl_lab
from mlpl_lab.reporting.report import MATHJAX_CONFIG

variant = (Path(__file__).parent / "_variant.txt").read_text().strip()
project = "mlpl_lab — multi-label learning with partial labels"
author = "the mlpl_lab authors"
version = release = mlpl_lab.__version__
html_title = f"mlpl_lab course · edition {version} · {variant}"
extensions = ["myst_nb", "sphinx_exercise"]
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
nb_execution_mode = "off"            # the report executed them; no second execution
nb_ipywidgets_js = {}                # no widget JavaScript from a CDN: panels are static images
myst_enable_extensions = ["colon_fence", "dollarmath", "amsmath"]
nb_render_markdown_format = "myst"   # Markdown outputs (claims' verdict rule) keep their $…$ math
myst_heading_anchors = 3
suppress_warnings = ["mystnb.unknown_mime_type"]
html_theme = "sphinx_book_theme"
html_theme_options = {"show_navbar_depth": 1, "home_page_in_toc": True,
                      "extra_footer": f"<p>Edition {version} ({variant}) · see CHANGELOG.md</p>"}
# MathJax 2.7 copied into _static/mathjax (from jupyter_server_mathjax), as for the HTML reports,
# with the same configuration (the STIX-Web fonts its bundle ships: MATHJAX_CONFIG). A MathJax 2
# configuration: Sphinx writes math as \( \) and \[ \] inside class="math", and myst-parser marks
# each page's top section "tex2jax_ignore mathjax_ignore" so that only those are typeset; it says
# so to MathJax 3 only (window.MathJax.options), so tex2jax is told here, or no equation is typeset.
# HTML outputs (class text_html: tables whose cells hold $…$) are typeset too, as JupyterLab and
# the HTML reports do; elsewhere $ is no delimiter (dollarmath turned the prose's into math nodes)
mathjax_path = f"mathjax/MathJax.js?config={MATHJAX_CONFIG}"
mathjax2_config = {"tex2jax": {"inlineMath": [["$", "$"], ["\\(", "\\)"]],
                               "displayMath": [["$$", "$$"], ["\\[", "\\]"]],
                               "processEscapes": True, "ignoreClass": "tex2jax_ignore|mathjax_ignore",
                               "processClass": "tex2jax_process|mathjax_process|math|output_area|text_html"},
                   # the theme lays span.math out as a clipped flex box (made for MathJax 3's
                   # single element); MathJax 2 names its own inner box span.math too, and an
                   # inline-block that clips sits on its bottom edge: inline math rose above the line
                   "styles": {"span.math": {"display": "inline", "overflow": "visible"}}}
html_static_path = []
