"""A smoke pack carries a notebook's results to an empty store: the same records, zero trainings,
and the header says where the results came from (issue 33's done-when, end to end)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mlpl_lab import cli
from mlpl_lab.runs import pack
from mlpl_lab.reporting.report import read_records
from mlpl_lab.runs.store import RunStore

NOTEBOOK = "04_cls"  # reads stored runs and loads weights (the CLS pairs, predictions)


def _comparable(records):
    """Records less what measures the machine (seconds, dates) or names the store."""
    def keep(k: str) -> bool:
        return not any(w in k.lower() for w in ("second", "time", "minutes", "created", "results"))

    def clean(v):
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items() if keep(str(k))}
        if isinstance(v, list):
            return [clean(x) for x in v]
        return v

    return json.loads(json.dumps(clean(records), sort_keys=True, default=str))


@pytest.mark.notebook
def test_a_smoke_pack_serves_a_notebook_in_an_empty_store_without_training(tmp_path, monkeypatch, capsys):
    source = Path(os.environ["MLPL_LAB_DATA"])  # the test session's store
    assert cli.main(["report", "--profile", "smoke", "--notebooks", NOTEBOOK, "--out", str(tmp_path / "a")]) == 0
    first = read_records(tmp_path / "a" / f"{NOTEBOOK}.ipynb")
    path = tmp_path / "smoke.mlplpack"
    manifest = pack.export(path, "smoke", [NOTEBOOK], store=RunStore(source / "runs"))
    assert manifest["notebooks"][NOTEBOOK]["weights"] >= 1  # the notebook loads some weights
    assert manifest["notebooks"][NOTEBOOK]["weights"] < manifest["notebooks"][NOTEBOOK]["runs"]

    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path / "empty"))
    counts = pack.import_pack(path, RunStore(tmp_path / "empty" / "runs"))
    assert counts["imported"] == len(manifest["runs"])
    capsys.readouterr()
    assert cli.main(["report", "--profile", "smoke", "--notebooks", NOTEBOOK, "--out", str(tmp_path / "b")]) == 0
    printed = capsys.readouterr().out
    trained = [line for line in printed.splitlines() if ": epoch " in line]
    assert not trained, f"the imported store trained: {trained[:3]}"
    assert sorted(RunStore(tmp_path / "empty" / "runs").keys()) == sorted(r["key"] for r in manifest["runs"]), \
        "the report stored runs the pack did not hold (it trained them)"
    second = read_records(tmp_path / "b" / f"{NOTEBOOK}.ipynb")
    assert _comparable(second) == _comparable(first)
    nb = json.loads((tmp_path / "b" / f"{NOTEBOOK}.ipynb").read_text())
    header = "".join("".join(o.get("text", "")) for c in nb["cells"] if c["cell_type"] == "code"
                     for o in c.get("outputs", []) if o.get("name") == "stdout")
    assert f"results from pack {manifest['name']} (commit " in header
