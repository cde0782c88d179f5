"""Records survive in an executed notebook; hygiene of the committed notebooks."""
from __future__ import annotations

import json
import math
from pathlib import Path

import nbformat
import pytest

from mlpl_lab.commands.arguments import notebook_paths
from mlpl_lab.reporting.execute import execute_notebook
from mlpl_lab.reporting.report import RECORD_MIME, _plain, all_finite, read_records

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def test_record_roundtrip_through_papermill(tmp_path, capfd):
    """Bugs caught: a record lost between kernel and notebook; the kernel talking over plain
    TCP (it printed "Kernel is running over TCP without encryption" for every notebook); a
    record holding NaN printing jupyter_client's "Message serialization failed" warning into
    the student's notebook (notebook 04's selection table did)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    params = nbformat.v4.new_code_cell("profile = 'cpu'\nx = 1")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(
        "from mlpl_lab.reporting.report import record\nimport torch\n"
        "record('x', x)\nrecord('profile', profile)\nrecord('t', torch.tensor([1.5, 2.0]))\n"
        "record('gap', {'a': float('nan'), 'b': [1.0, float('inf')]})")]
    src = tmp_path / "nb.ipynb"
    nbformat.write(nb, str(src))
    executed = execute_notebook(src, tmp_path / "out", profile="smoke", parameters={"x": 7})
    records = read_records(executed)
    gap = records.pop("gap")
    assert records == {"x": 7, "profile": "smoke", "t": [1.5, 2.0]}
    assert math.isnan(gap["a"]) and gap["b"] == [1.0, math.inf]
    stderr = [o for c in nbformat.read(str(executed), as_version=4).cells for o in c.get("outputs", [])
              if o.get("name") == "stderr"]
    assert stderr == []
    assert (tmp_path / "out" / "nb.html").exists()
    captured = capfd.readouterr()
    assert "without encryption" not in captured.err + captured.out


def test_plain_and_finite():
    assert _plain({"a": (1, 2.5)}) == {"a": [1, 2.5]}
    assert all_finite({"a": [1, 2.0]}) and not all_finite({"a": [1, math.nan]})
    with pytest.raises(TypeError, match="cannot record"):
        _plain(object())


NOTEBOOK_FILES = sorted(NOTEBOOKS.glob("*.ipynb"))


def test_there_are_notebooks():
    assert [p.name for p in notebook_paths()] == [p.name for p in NOTEBOOK_FILES]
    assert len(NOTEBOOK_FILES) >= 2


@pytest.mark.parametrize("path", NOTEBOOK_FILES, ids=lambda p: p.name)
def test_committed_notebook_hygiene(path):
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code), \
        "commit notebooks without outputs"
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    tagged = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, "exactly one parameters cell"
    src = "".join(tagged[0]["source"])
    import ast

    for node in ast.parse(src).body:
        assert isinstance(node, ast.Assign) and isinstance(node.value, (ast.Constant, ast.List, ast.Tuple, ast.Dict)), \
            f"parameters cell must hold literals only: {ast.unparse(node)}"
        ast.literal_eval(node.value)
    assert "profile" in src
    assert RECORD_MIME not in path.read_text()


@pytest.mark.parametrize("path", NOTEBOOK_FILES, ids=lambda p: p.name)
def test_papermill_reads_every_parameter_without_a_warning(path, caplog):
    """papermill's own inspector is the oracle: it must name every assignment of the parameters
    cell. The bug this catches: a comment holding '=' (``# every run uses alpha = 1.0``) makes
    papermill print "Unable to parse line …" in every report and drop that parameter from
    ``papermill --help-notebook``."""
    import ast
    import logging

    import papermill

    nb = json.loads(path.read_text())
    src = "".join(next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))["source"])
    names = [t.id for node in ast.parse(src).body for t in node.targets]
    with caplog.at_level(logging.WARNING, logger="papermill"):
        found = papermill.inspect_notebook(str(path))
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert list(found) == names



def test_records_read_as_lines_and_tables():
    from mlpl_lab.reporting.report import readable

    assert readable("gap", 21.6583)["text/plain"] == "gap: 21.66"
    assert readable("gap", {"single positive": 21.6583, "drop 50 %": 3.0})["text/plain"] == \
        "gap: single positive 21.66 · drop 50 % 3.00"
    table = readable("mAP", {"single positive": {"full labels": 92.966, "AN": 75.1}})
    assert "<table" in table["text/html"] and "92.97" in table["text/html"]
    assert "{" not in table["text/plain"]
    long = readable("x", {"a": [1] * 500})["text/plain"]
    assert len(long) < 320 and long.endswith("…")


def test_mathjax_is_copied_next_to_the_reports_once(tmp_path):
    from mlpl_lab.reporting.report import install_mathjax

    url = install_mathjax(tmp_path)
    assert url.startswith("mathjax/MathJax.js?config=") and "://" not in url
    js = tmp_path / "mathjax" / "MathJax.js"
    assert js.exists() and js.stat().st_size > 10_000
    config = url.split("config=")[1].split(",")[0]
    assert (tmp_path / "mathjax" / "config" / f"{config}.js").exists()
    mtime = js.stat().st_mtime_ns
    assert install_mathjax(tmp_path) == url and js.stat().st_mtime_ns == mtime  # not copied twice


def test_deeply_nested_records_read_as_a_table():
    from mlpl_lab.reporting.report import readable

    out = readable("loc", {"AN": {"attention": {"energy": 0.2, "pairs": 3}}, "LAC": {"attention": {"energy": 0.3, "pairs": 4}}})
    assert "AN / attention" in out["text/plain"] and "text/html" in out
    assert "{" not in out["text/plain"]
