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
myst_heading_anchors = 3
suppress_warnings = ["mystnb.unknown_mime_type"]
html_theme = "sphinx_book_theme"
html_theme_options = {"show_navbar_depth": 1, "home_page_in_toc": True,
                      "extra_footer": f"<p>Edition {version} ({variant}) · see CHANGELOG.md</p>"}
# MathJax 2.7 copied into _static/mathjax (from jupyter_server_mathjax), as for the HTML reports;
# a MathJax 2 configuration (Sphinx writes math as \( \) and \[ \] inside class="math")
mathjax_path = f"mathjax/MathJax.js?config={MATHJAX_CONFIG}"
mathjax2_config = {"tex2jax": {"inlineMath": [["\\(", "\\)"]], "displayMath": [["\\[", "\\]"]],
                               "processEscapes": True}}
html_static_path = []
