"""benchmarks/probe_convergence.py: which stored runs it picks and what it refuses.

Oracle: run folders written here by hand (spec.json, summary.json) with known methods, inits and
gains; the expected keys are listed literally."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "probe_convergence.py"


def load():
    spec = importlib.util.spec_from_file_location("probe_convergence", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def folder(root: Path, key: str, method: str, gain: float, pretrained: bool = True) -> None:
    (root / key).mkdir(parents=True)
    (root / key / "spec.json").write_text(json.dumps({"method": method,
                                                      "backbone_from": {"method": "full"} if pretrained else None}))
    (root / key / "summary.json").write_text(json.dumps({"convergence": {"gain": gain, "converged": gain < 0.5},
                                                         "val_mAP": 70.0, "best_epoch": 3, "epochs": 4}))


def test_it_picks_the_unconverged_pretrained_runs_of_a_method_largest_gain_first(tmp_path):
    """Bugs caught: converged runs, another method's or a scratch run picked; the order reversed
    (the limit would then keep the smallest gains)."""
    probe = load()
    for key, method, gain, pre in [("a", "an", 0.8, True), ("b", "an", 1.4, True), ("c", "an", 0.2, True),
                                   ("d", "gr", 0.9, True), ("e", "an", 2.0, False), ("f", "an", 0.6, True)]:
        folder(tmp_path, key, method, gain, pre)
    (tmp_path / ".access").mkdir()  # not a run folder
    assert probe.unconverged(tmp_path, "an", 10) == ["b", "a", "f"]
    assert probe.unconverged(tmp_path, "an", 2) == ["b", "a"]
    assert probe.unconverged(tmp_path, "role", 3) == []


def test_bad_arguments_are_refused_before_any_training(tmp_path, capsys):
    probe = load()
    with pytest.raises(SystemExit):
        probe.main(["--series", str(tmp_path / "nowhere"), "--keys", "x"])
    assert "no such folder" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        probe.main(["--series", str(tmp_path)])
    assert "nothing to probe" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        probe.main(["--series", str(tmp_path), "--keys", "missing1"])
    err = capsys.readouterr().err
    assert "not in" in err and "missing1" in err
