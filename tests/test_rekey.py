"""``mlpl-lab plan --bump COMPONENT`` (issue 51): how many runs a bump re-keys and how long they take.

Oracles: the re-keyed runs are those whose key changes when the version is bumped in the table
(monkeypatched), not the membership the module computes; the recorded seconds are those written
into the store here; the projection is the plan's FLOPs at the stated rate."""
from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from mlpl_lab.protocol.plan import NotebookPlan, SeriesPlan, projection, waves
from mlpl_lab.protocol.rekey import bump_cost, describe_bump, rekeyed
from mlpl_lab.core import numerics
from mlpl_lab.profiles import get_profile
from mlpl_lab.runs.store import RunStore


def small_plan():
    P = get_profile("smoke")
    a = [P.spec("an", seed=s) for s in (0, 1)] + [P.spec("gr")]
    b = [P.spec("pu_mlc", seed=s) for s in (0, 1)] + [P.spec("partial_bce")]
    pre = P.pretrain_spec()
    nbs = [NotebookPlan("01_x", {}, [pre] + a), NotebookPlan("06_y", {}, [pre] + b)]
    return SeriesPlan(P, nbs, waves([pre] + a + b)), pre, a, b


def put(store, spec, seconds):
    store.put(spec, [{"epoch": 1, "val_mAP": 1.0, "seconds": seconds}], 0, {}, {"w": torch.zeros(1)})


@pytest.mark.parametrize("component", ["method.pu_mlc", "method.gr", "method.basic", "engine", "model.lgconv"])
def test_the_runs_a_bump_rekeys_are_those_whose_key_changes(component, monkeypatch):
    plan, *_ = small_plan()
    before = {s.key for s in plan.order}
    monkeypatch.setitem(numerics.VERSIONS, component, numerics.VERSIONS[component] + 1)
    changed = [s for s in plan.order if s.key not in before]
    monkeypatch.setitem(numerics.VERSIONS, component, numerics.VERSIONS[component] - 1)
    assert [s.as_dict() for s in rekeyed(plan.order, component)] == [s.as_dict() for s in changed]


def test_recorded_seconds_then_the_projection_at_the_recorded_rate(tmp_path):
    plan, pre, a, b = small_plan()
    store = RunStore(tmp_path / "runs")
    put(store, b[0], 30.0)
    put(store, a[0], 10.0)
    cost = bump_cost(plan, "method.pu_mlc", store)
    assert len(cost.runs) == 2 and cost.per_notebook == {"06_y": 2}
    assert cost.recorded == {b[0].key: 30.0}
    groups, _ = projection([b[1]])
    flops_missing = sum(g.flops for g in groups)
    timed = sum(g.flops for g in projection([a[0], b[0]])[0])
    rate = timed / 40.0  # the recorded runs' FLOPs over their 10 + 30 s
    assert cost.seconds == pytest.approx(30.0 + flops_missing / rate)
    text = describe_bump(cost)
    assert "re-keys 2 of the 7 distinct runs" in text and "06_y 2" in text
    assert "1 runs with their training time on record" in text and "2 recorded runs" in text
    at = bump_cost(plan, "method.pu_mlc", store, tflops=0.5)
    assert at.seconds == pytest.approx(30.0 + flops_missing / 0.5e12)
    everything = bump_cost(plan, "engine", RunStore(tmp_path / "empty"))
    assert len(everything.runs) == 7 and everything.seconds is None
    assert "give --tflops X" in describe_bump(everything)
    assert "nothing to retrain" in describe_bump(bump_cost(plan, "model.resnet", store))


def test_a_bad_component_is_refused_naming_the_components_without_torch():
    code = ("import sys\nfrom mlpl_lab.cli import main\n"
            "try:\n    main(['plan', '--bump', 'method.nope'])\nexcept SystemExit as e:\n"
            "    print('exit', e.code, 'torch' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.split() == ["exit", "2", "False"], proc.stdout + proc.stderr
    assert "unknown component 'method.nope'" in proc.stderr and "method.pu_mlc" in proc.stderr
