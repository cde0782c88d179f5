"""The series plan (issue 34): its order on hand-built specs, its dry run against what a notebook
really stores, and the FLOP count of a network against a hand count."""
from __future__ import annotations

import pytest

from mlpl_lab.protocol import plan as P
from mlpl_lab.runs.spec import RunSpec

ROOT_NOTEBOOKS = __import__("pathlib").Path(__file__).resolve().parent.parent / "notebooks"


def _spec(method, seed, epochs, n_train=100, size=32, **deps):
    return RunSpec(method=method, seed=seed, data={"n_train": n_train, "image_size": size},
                   train={"epochs": epochs}, **deps)


def test_waves_put_dependencies_first_longest_first_each_run_once():
    # work by hand: epochs × n_train × (side / 32)²
    pre = _spec("full", 1000, 2, n_train=400)                      # 800, depends on nothing
    scratch = _spec("an", 7, 1, n_train=300)                       # 300, depends on nothing
    a = _spec("an", 0, 4, backbone_from=pre)                       # 400, after pre
    b = _spec("gr", 0, 8, backbone_from=pre)                       # 800, after pre
    big = _spec("an", 1, 3, size=64, backbone_from=pre)            # 3 × 100 × 4 = 1200, after pre
    first = _spec("an", 2, 3, backbone_from=pre)                   # 300, after pre
    second = _spec("gr", 2, 9, init_from=first)                    # 900, after first
    # asked: a stage two before its stage one, a duplicate, the pretraining run never named alone
    waves = P.waves([second, a, b, a, scratch, big])
    keys = [[s.key for s in w] for w in waves]
    # levels (work + the longest chain waiting for it): second 900; first 300 + 900 = 1200, tied
    # with big (1200) and asked before it (through second); b 800, a 400; scratch 300; pre 800 +
    # 1200: the pretraining run first although scratch was asked for first
    assert keys == [[pre.key, scratch.key], [first.key, big.key, b.key, a.key], [second.key]]
    flat = [k for w in keys for k in w]
    assert len(flat) == len(set(flat)) == 7


def test_a_run_that_others_wait_for_comes_before_a_longer_one():
    # level = work + the largest level among the runs that start from it (work: epochs × n_train)
    pre = _spec("full", 1000, 1, n_train=10)                       # 10 + max(4000, 3500) = 4010
    scratch = _spec("an", 7, 40)                                   # 4000, nothing waits for it
    stage1 = _spec("an", 0, 10, backbone_from=pre)                 # 1000 + 3000 = 4000
    other = _spec("gr", 0, 35, backbone_from=pre)                  # 3500
    stage2 = _spec("gr", 1, 30, init_from=stage1)                  # 3000
    w = P.waves([scratch, other, stage2])
    assert [s.key for s in w[0]] == [pre.key, scratch.key]         # 4010 > 4000 (work 10 < 4000)
    assert [s.key for s in w[1]] == [stage1.key, other.key]        # 4000 > 3500 (work 1000 < 3500)
    assert [s.key for s in w[2]] == [stage2.key]


def test_waves_break_ties_by_the_order_first_asked():
    pre = _spec("full", 1000, 2)
    x, y = _spec("an", 0, 4, backbone_from=pre), _spec("an", 1, 4, backbone_from=pre)
    assert [s.key for s in P.waves([y, x])[1]] == [y.key, x.key]
    assert [s.key for s in P.waves([x, y])[1]] == [x.key, y.key]


def test_images_trained_and_evaluated_count_what_the_loop_sees():
    s = RunSpec(method="an", data={"n_train": 50, "n_val": 20, "n_test": 30, "image_size": 32},
                train={"epochs": 3, "test_every_epoch": False, "probes": ["separation"], "probe_size": 10})
    assert P.images_trained(s) == 3 * 50
    # every epoch: validation 20 + probes 10; once: test 30 at the end, probes 10 before training
    assert P.images_evaluated(s) == 3 * (20 + 10) + 30 + 10
    two = s.replace(method="coteaching")  # two networks, each sees every image
    assert P.images_trained(two) == 2 * 3 * 50


def test_flop_count_of_a_conv_and_a_linear_layer_by_hand():
    import torch.nn as nn

    size, c_in, c_out, k, classes = 8, 3, 4, 3, 5
    net = nn.Sequential(nn.Conv2d(c_in, c_out, k, padding=1, bias=False), nn.Flatten(),
                        nn.Linear(c_out * size * size, classes))
    conv = 2 * c_in * c_out * k * k * size * size        # one multiply-add = 2 FLOPs per output
    linear = 2 * (c_out * size * size) * classes
    forward = conv + linear
    # backward: the conv's weight gradient (its input needs none), the linear's input and weight
    # gradients, each as many FLOPs as the forward product
    backward = conv + 2 * linear
    both, fwd = P.count_flops(net, size)
    assert fwd == forward
    assert both == forward + backward


def test_notebook_parameters_reads_the_literals_of_the_parameters_cell():
    params = P.notebook_parameters(ROOT_NOTEBOOKS / "03_opml.ipynb")
    assert params["profile"] == "cpu" and params["a"] == 0.0 and params["regime"] == "single_positive"


def test_a_plan_reads_and_trains_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path))
    nb = P.plan_notebook("smoke", "05_lac", {"seed": 0})
    assert nb.left is None and nb.specs
    assert not (tmp_path / "runs").exists()  # nothing stored, not even the pretraining run
    stage2 = [s for s in nb.specs if s.init_from is not None]
    assert stage2 and all(any(t.key == s.init_from.key for t in nb.specs) for s in stage2)


def test_a_plan_builds_no_scenes(tmp_path, monkeypatch):
    """Notebook 03's specs need no scenes; notebook 02's EPR and ROLE read the clean validation
    labels, drawn without painting a scene: planning either generates and caches nothing."""
    from mlpl_lab.protocol import positives
    from mlpl_lab.runs import splits_cache

    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path))
    monkeypatch.setattr(positives, "_K", {})
    splits_cache.clear_caches()  # an earlier test may hold these scenes in memory
    assert P.plan_notebook("smoke", "03_opml", {"seed": 0}).specs
    assert P.plan_notebook("smoke", "02_gr_loss", {"seed": 0}).specs
    assert not (tmp_path / "cache").exists()


def test_a_plan_counts_the_runs_a_choice_on_results_waits_for(tmp_path, monkeypatch):
    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path))
    # gpu: the ladder's γ rows at the sweep's p read the γ chosen from the γ grid's results (under
    # smoke the choice only picks among the grid's own runs: nothing new waits)
    nb = P.plan_notebook("gpu", "06_pu_mlc", {"seed": 0})
    assert nb.left is not None and {s.method for s in nb.later} == {"pu_mlc_gamma", "pu_mlc_gamma_alpha", "pu_mlc"}
    assert any(s.method == "pu_mlc" for s in nb.specs)


@pytest.mark.parametrize("argv, message", [
    (["plan", "--tflops", "0"], "not a positive number"),
    (["plan", "--tflops", "fast"], "not a positive number"),
    (["plan", "--notebooks", "99"], "no notebook matches"),
    (["report", "--plan-workers", "-1"], "not a whole number >= 0"),
])
def test_cli_plan_arguments_fail_with_a_message(argv, message, capsys):
    from mlpl_lab import cli

    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.notebook
def test_the_smoke_plan_of_notebook_02_is_what_the_notebook_stores(tmp_path, monkeypatch):
    """Notebook 02 tunes (its fresh-seed runs are chosen from the trials' results), so one dry run
    stops at the choice; the report's rounds of plan-then-train reach past it. Executed on the
    store those rounds filled, as a report executes it (its live exercise, a class activity, not
    trained), the notebook trains nothing: the rounds planned every run it reads.
    Bugs caught: a round that does not serve stored runs (the plan never gets past the choice),
    a chapter asking for runs its plan never names."""
    import argparse

    from mlpl_lab.commands.plan_first import train_plan_first
    from mlpl_lab.reporting.execute import execute_notebook
    from mlpl_lab.runs.store import RunStore

    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path / "data"))  # the kernel inherits it
    monkeypatch.setenv("MLPL_LAB_PROGRESS", "0")
    path = ROOT_NOTEBOOKS / "02_gr_loss.ipynb"
    first = P.plan_series("smoke", [path])
    assert first.notebooks[0].left is not None  # one dry run stops where the trials are read
    train_plan_first(argparse.Namespace(profile="smoke", plan_workers=2), [path],
                     {"live_training": False})
    store = RunStore(tmp_path / "data" / "runs")
    before = set(store.keys())
    final = P.plan_series("smoke", [path], {"live_training": False}, serve_stored=True)
    assert final.notebooks[0].left is None and {s.key for s in final.order} <= before
    assert len(before) > len({s.key for s in first.order})  # the rounds reached further
    execute_notebook(path, tmp_path / "out", profile="smoke", parameters={"live_training": False},
                     html=False, timeout=600)
    assert set(store.keys()) == before  # the notebook trained nothing the rounds had not

def test_the_gpu_projection_uses_the_check_s_end_to_end_rate(tmp_path):
    """The default rate is the GPU check's training FLOPs over its wall seconds (hand-computed)."""
    import json

    from mlpl_lab.protocol.plan import measured_gpu_throughput

    env = {"device": "Card X", "date": "2026-01-02 03:04:05 UTC"}
    (tmp_path / "train_run.json").write_text(json.dumps(
        {"pretraining": {"images_trained": 300}, "an": {"images_trained": 100}, "wall_seconds": 8.0,
         "environment": env}))
    (tmp_path / "throughput.json").write_text(json.dumps({"gflop_per_image_train": 2.0, "fit_tflops": 1.5}))
    got = measured_gpu_throughput(tmp_path)
    assert got.tflops == pytest.approx(400 * 2.0e9 / 8.0 / 1e12)
    assert "Card X" in got.source and "2026-01-02" in got.source
    (tmp_path / "train_run.json").write_text("{not json")
    assert measured_gpu_throughput(tmp_path) is None


def test_a_plan_whose_every_run_is_stored_says_so_and_counts_nothing_to_train():
    """Bug caught: `make report` on a store the course pack filled printed the plan as if it would
    train 80 M images. Hand-built: a pretraining run (2 × 400 images), two runs of 4 × 100 and 8 ×
    100 in one notebook and one of 3 × 100 in another; stored ones are left out of what is to train."""
    from mlpl_lab.profiles import get_profile

    pre = _spec("full", 1000, 2, n_train=400)
    a, b = _spec("an", 0, 4, backbone_from=pre), _spec("gr", 0, 8, backbone_from=pre)
    c = _spec("an", 1, 3, backbone_from=pre)
    nbs = [P.NotebookPlan("01_assume_negative", {}, [pre, a, b]), P.NotebookPlan("03_opml", {}, [pre, c])]
    series = P.SeriesPlan(get_profile("smoke"), nbs, P.waves([pre, a, b, c]))
    text = P.describe(series, stored=lambda s: True)
    assert "4 distinct runs, 4 of them already stored: every planned run is stored, nothing to train" in text
    assert "images" not in text and "wave" not in text
    assert [line.split()[1:3] for line in text.splitlines()[2:]] == [["3", "3"], ["2", "2"]]
    text = P.describe(series, stored=lambda s: s.key in (pre.key, b.key))
    rows = {line.split()[0]: line.split() for line in text.splitlines() if line.startswith("  0")}
    assert "images to train (new)" in text and "2 of them already stored" in text
    assert rows["01_assume_negative"][3] == "400" and rows["03_opml"][3] == "300"  # a: 4 × 100; c: 3 × 100
    assert "wave 1 (stage one): 3 runs, 2 to train, 700 images" in text
    unstored = P.describe(series)  # `mlpl-lab plan`: every run counted
    # 01 is the first to ask for pre, a and b: 800 + 400 + 800 images
    assert "images trained (new)" in unstored and "2,000" in unstored and "already stored" not in unstored
