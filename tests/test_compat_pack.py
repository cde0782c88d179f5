"""The shipped cpu course pack served across versions (issue 49; ``make test-compat``, marker
``compat``): imported into an empty store, it serves every notebook under the cpu profile with 0
trainings. ``make test-compat`` runs it in the second environment (Python 3.12, torch 2.11), where
the pack was not made; it passes in the lab's own too. Zero trainings is checked twice, as
tests/test_pack_notebooks.py checks a smoke pack: no epoch was printed, and the store holds
exactly the runs the pack brought (a training would have stored one more)."""
from __future__ import annotations

import time

import pytest

from mlpl_lab import cli
from mlpl_lab.commands.arguments import notebook_paths
from mlpl_lab.reporting.report import read_records
from mlpl_lab.runs import pack
from mlpl_lab.runs.shipped import shipped_pack
from mlpl_lab.runs.store import RunStore

pytestmark = pytest.mark.compat
SHIPPED = shipped_pack("cpu")


@pytest.mark.skipif(SHIPPED is None, reason="no cpu course pack shipped (data/packs/cpu-course/)")
def test_the_shipped_cpu_pack_serves_every_notebook_with_zero_trainings(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path / "empty"))
    store = RunStore(tmp_path / "empty" / "runs")
    assert list(store.keys()) == []
    t0 = time.perf_counter()
    counts = pack.import_pack(SHIPPED, store)
    print(f"imported {counts['imported']} runs in {time.perf_counter() - t0:.1f} s")
    manifest = pack.inspect(SHIPPED)
    assert counts["imported"] == len(manifest["runs"])
    capsys.readouterr()
    out = tmp_path / "reports"
    assert cli.main(["report", "--profile", "cpu", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    trained = [line for line in printed.splitlines() if ": epoch " in line]
    assert not trained, f"the imported store trained: {trained[:3]}"
    assert sorted(store.keys()) == sorted(r["key"] for r in manifest["runs"]), \
        "the report stored runs the pack did not hold (it trained them)"
    for nb in notebook_paths(None):
        assert read_records(out / nb.name), f"{nb.name} recorded nothing"
