"""``mlpl-lab benchmark --add FILE`` end to end under the smoke profile, from an empty store: the
course's smoke cells are trained first (as ``mlpl-lab benchmark`` would), then the command must
train the new method's runs and nothing else -- its two trials on the selection seed (the smoke
budget, two grid points) and the kept setting on the two fresh seeds -- rank it among the course's
rows, and print its claims against AN and the best course row (inconclusive: two seeds).

Oracles: the run folders' own spec files (which runs were added, by method, seed and source, the
source being the sha256 of the file's bytes computed here), and counts worked out from the smoke
design by hand (budget 2, seeds 0 | 1, 2)."""
from __future__ import annotations

import csv
import hashlib
import json
import os
from pathlib import Path

import pytest

from mlpl_lab import cli

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "notebooks" / "examples"
ARGS = ["--profile", "smoke", "--regimes", "single", "--tuning"]


@pytest.fixture(scope="module")
def course_store(tmp_path_factory):
    """An empty data folder holding, once this fixture ran, the smoke course's tuned single-positive
    cells (the oracle, AN and GR: their trials, fresh seeds and length check)."""
    from mlpl_lab.chapters import benchmark as bench
    from mlpl_lab.protocol.asked import ensure_asked

    root = tmp_path_factory.mktemp("byo-data")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLPL_LAB_DATA", str(root))
        assert not (root / "runs").exists()
        ensure_asked(bench.specs, bench.design("smoke", regimes=["single"], tuning=True))
        yield root


def keys(root: Path) -> set:
    return {p.name for p in (root / "runs").iterdir() if (p / "spec.json").exists()}


def spec_of(root: Path, key: str) -> dict:
    return json.loads((root / "runs" / key / "spec.json").read_text())


def add(root: Path, file: Path, out: Path, capsys, *extra) -> str:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLPL_LAB_DATA", str(root))
        assert cli.main(["benchmark", "--add", str(file), *ARGS, "--out", str(out), *extra]) == 0
    return capsys.readouterr().out


def test_add_trains_only_the_new_rows_runs_and_ranks_it(course_store, tmp_path, capsys):
    """Bug caught: a course row retrained (the new row compared with runs of another draw), the
    trials or the fresh seeds missing, the new row not ranked among the course's rows, or its
    claims not paired with AN's seeds."""
    before = keys(course_store)
    source = hashlib.sha256((EXAMPLES / "an_eps.py").read_bytes()).hexdigest()[:20]
    text = add(course_store, EXAMPLES / "an_eps.py", tmp_path / "out", capsys, "--plan-workers", "0")
    new = keys(course_store) - before
    specs = [spec_of(course_store, k) for k in new]
    assert {s["method"] for s in specs} == {"user_file"}
    assert {s["method_params"]["source"] for s in specs} == {source}
    trials = sorted(s["method_params"]["eps"] for s in specs if s["seed"] == 0)
    assert trials == [0.05, 0.1]  # smoke's budget: two trials, the grid's two points
    fresh = [s for s in specs if s["seed"] != 0]
    assert sorted(s["seed"] for s in fresh) == [1, 2] and len({s["method_params"]["eps"] for s in fresh}) == 1
    assert len(new) == 4

    label = "AN, unknowns at eps"
    marked = [line for line in text.splitlines() if line.lstrip().startswith("▶")]
    assert len(marked) == 1 and label in marked[0]
    assert f"{label} ranks " in text and " of 3 " in text  # among AN and GR (the oracle is not ranked)
    ranked = text.split(f"{label} ranks ")[1].split("[mlpl-lab]")[0]
    assert all(f"  {row}  " in ranked for row in ("AN", "GR", "full labels"))
    assert "the best course row is" in text
    assert f"{label} beats AN under single positive" in text
    assert "inconclusive (2 seeds)" in text
    best = text.split("the best course row is ")[1].split()[0]
    assert best == "AN" or f"{label} beats {best}, the best course row" in text

    out = tmp_path / "out"
    with open(out / "07_benchmark_add_an_unknowns_at_eps_mAP_mean.csv", newline="") as f:
        rows = [r[0] for r in csv.reader(f)][1:]
    assert label in rows and {"AN", "GR", "full labels"} <= set(rows)
    with open(out / "07_benchmark_add_an_unknowns_at_eps_claims.csv", newline="") as f:
        claims = list(csv.DictReader(f))
    assert claims and all(c["verdict"] == "inconclusive (2 seeds)" for c in claims)

    # unchanged file: served from the store, nothing trained
    again = add(course_store, EXAMPLES / "an_eps.py", tmp_path / "out2", capsys, "--plan-workers", "0")
    assert keys(course_store) - before == new
    assert "nothing to train" in again


@pytest.mark.slow  # a worker process's start (spawn, torch imported) is most of its minute and more
def test_a_method_subclass_trains_in_worker_processes(course_store, tmp_path, capsys):
    """Bug caught: a Method subclass in a user's file that a worker process cannot build (the
    spec names no file it can import). The second shipped example, on one worker process."""
    before = keys(course_store)
    text = add(course_store, EXAMPLES / "soft_targets.py", tmp_path / "out", capsys, "--plan-workers", "1")
    new = keys(course_store) - before
    assert len(new) == 4 and {spec_of(course_store, k)["method"] for k in new} == {"user_file"}
    assert text.count("[workers] 2 runs to train") == 2  # the trials, then the kept setting's fresh seeds
    assert text.count("[workers] run ") >= 4 and "FAILED" not in text
    assert "AN, unknowns follow the model ranks " in text


def test_a_damaged_file_writes_nothing(tmp_path, capsys):
    """Bug caught: a refused file leaving an --out folder, a kept copy or runs behind."""
    bad = tmp_path / "bad.py"
    bad.write_text('LABEL = "mine"\ndef loss(logits, observed):\n    return logits.mean(0)\n')
    data, out = tmp_path / "data", tmp_path / "out"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLPL_LAB_DATA", str(data))
        with pytest.raises(SystemExit) as exit_:
            cli.main(["benchmark", "--add", str(bad), *ARGS, "--out", str(out)])
    assert exit_.value.code == 2
    assert "not a scalar" in capsys.readouterr().err
    assert not out.exists() and not data.exists()
    assert os.listdir(tmp_path) == ["bad.py"]
