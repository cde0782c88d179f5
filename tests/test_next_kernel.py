"""The next notebook's kernel, started ahead (``mlpl_lab.reporting.next_kernel``).

Oracles: import lists written by hand from a notebook written here, ``sys.modules`` and the
namespace as a kernel reports them from inside, and a fresh kernel's outputs of the same notebook.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest

from mlpl_lab.commands import benchmark_csv, series
from mlpl_lab.reporting import next_kernel
from mlpl_lab.reporting.next_kernel import exec_line, imported_modules, preload


def _notebook(path: Path, cells) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
    nb.cells[0].metadata["tags"] = ["parameters"]
    nbformat.write(nb, str(path))
    return path


def test_imported_modules_lists_every_top_level_import_in_order(tmp_path):
    """Bugs caught: ``from pkg import submodule`` not listed (the chapter module would not be
    loaded ahead: the gain is lost), a magic cell stopping the scan, imports inside a function
    or relative imports listed (they do not run at the cell's top level)."""
    nb = _notebook(tmp_path / "n.ipynb", [
        "profile = 'smoke'",
        "import json, xml.dom\nfrom email import message as m, utils",
        "%matplotlib inline\nimport wave",  # a magic: not Python, skipped
        "def f():\n    import csv\nfrom . import nothing\nfrom html.parser import HTMLParser",
    ])
    assert imported_modules(nb) == ["json", "xml.dom", "email", "email.message", "email.utils",
                                    "html.parser", "html.parser.HTMLParser"]


def test_preload_imports_modules_skips_names_and_never_raises():
    """Bugs caught: a ``from``-imported class tried as a module and raising at kernel start (the
    kernel would print a traceback and skip the rest), a submodule not imported."""
    for name in ("xdrlib_not_here", "mailbox", "tabnanny"):
        sys.modules.pop(name, None)
    preload(["mailbox", "mailbox.Maildir", "tabnanny", "tabnanny.check"])
    assert "mailbox" in sys.modules and "tabnanny" in sys.modules
    preload(["xdrlib_not_here", "xdrlib_not_here.x"])  # a missing package: no exception
    preload(["json.decoder.this_raises_nothing"])


def test_the_start_up_line_binds_no_name_and_loads_the_modules():
    """Bug caught: a start-up line that leaves a name (a loop variable, an import alias) in the
    notebook's namespace, where a later cell could use it before its own import."""
    sys.modules.pop("fractions", None)
    namespace: dict = {}
    exec(exec_line(["fractions"]), namespace)
    assert set(namespace) == {"__builtins__"}
    assert "fractions" in sys.modules


def test_a_report_runs_the_next_notebook_on_the_kernel_started_ahead(tmp_path, monkeypatch):
    """Two notebooks through ``run_notebooks``. Bugs caught: the second notebook's kernel not the
    one started ahead (its module not imported before its first cell), the kernel carrying the
    first notebook's chapter name (progress lines under the wrong chapter), a name bound by
    the start-up imports, execution counts shifted by them, outputs different from a fresh
    kernel's, a kernel left running after its notebook."""
    probe = ("import os as _os, sys as _sys, json as _json\n"
             "print(_json.dumps({'chapter': _os.environ.get('MLPL_LAB_CHAPTER'),\n"
             "  'preloaded': 'mailbox' in _sys.modules,\n"
             "  'names': sorted(k for k in globals() if not k.startswith('_') and k not in\n"
             "                  ('In', 'Out', 'get_ipython', 'exit', 'quit', 'open', 'profile'))}))")
    cells = ["profile = 'smoke'", probe + "\nimport mailbox", "print(1 + 1)"]
    first = _notebook(tmp_path / "a_first.ipynb", cells)
    second = _notebook(tmp_path / "b_second.ipynb", cells)
    monkeypatch.setenv("MLPL_LAB_PROGRESS_FILE", str(tmp_path / "progress"))
    monkeypatch.setattr(benchmark_csv, "BENCHMARK_NOTEBOOK", "none")
    handed, stopped = [], []
    real_execute, real_shutdown = series.execute_notebook, next_kernel.shutdown

    def execute(path, out, profile, parameters=None, km=None, timeout=None):
        handed.append(km)
        return real_execute(path, out, profile, parameters, html=False, km=km, timeout=timeout)

    def shutdown(km, now=False):
        real_shutdown(km, now=now)
        stopped.append(km)

    monkeypatch.setattr(series, "execute_notebook", execute)
    monkeypatch.setattr(next_kernel, "shutdown", shutdown)
    out = tmp_path / "out"
    series.run_notebooks([first, second], out, "smoke")

    assert handed[0] is None and handed[1] is not None  # papermill's own kernel, then ours
    assert stopped == [handed[1]]
    from jupyter_core.utils import run_sync
    assert not run_sync(handed[1].is_alive)()

    def report(nb_path):
        nb = nbformat.read(str(out / nb_path.name), as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]  # papermill adds a parameters cell
        probed = next(c for c in code if c.source.startswith("import os as _os"))
        last = next(c for c in code if c.source == "print(1 + 1)")
        return json.loads(probed.outputs[0]["text"]), [c.execution_count for c in code], last.outputs[0]["text"]

    a, counts_a, two_a = report(first)
    b, counts_b, two_b = report(second)
    assert a == {"chapter": "a_first", "preloaded": False, "names": []}
    assert b == {"chapter": "b_second", "preloaded": True, "names": []}
    assert counts_b == counts_a and two_b == two_a == "2\n"


def test_a_failing_notebook_shuts_down_the_kernel_waiting_for_the_next(tmp_path, monkeypatch):
    """Bug caught: a kernel started ahead left running when the report stops early."""
    first = _notebook(tmp_path / "a.ipynb", ["profile = 'smoke'"])
    second = _notebook(tmp_path / "b.ipynb", ["profile = 'smoke'"])
    monkeypatch.setenv("MLPL_LAB_PROGRESS_FILE", str(tmp_path / "progress"))
    started = []
    real_start = next_kernel.NextKernel.start

    def start(self, path, env, **kw):
        real_start(self, path, env, **kw)
        started.append(self.km)

    def fail(*a, **k):
        raise RuntimeError("the notebook failed")

    monkeypatch.setattr(next_kernel.NextKernel, "start", start)
    monkeypatch.setattr(series, "execute_notebook", fail)
    with pytest.raises(RuntimeError, match="the notebook failed"):
        series.run_notebooks([first, second], tmp_path / "out", "smoke")
    from jupyter_core.utils import run_sync
    assert len(started) == 1 and not run_sync(started[0].is_alive)()
