"""The GPU check's cut (benchmarks/gpu/cut.py): the gpu design at sizes that let the eight notebooks
execute inside the check's 540 s deadline, and the check's own deadline arithmetic (check.sh).

Oracles: the gpu profile's code paths written out (ResNet-18, 64 px, bfloat16 autocast, LAC at
128 px, the gpu design's names), and the deadline as a sum of the step limits read from check.sh
by a regular expression, not by the script's own arithmetic."""
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "gpu"))
import cut  # noqa: E402

from mlpl_lab.protocol import common, live  # noqa: E402


@pytest.fixture(params=["gpu", "rehearse"])
def cut_name(request):
    name = cut.register_cut(request.param)
    yield name
    cut.unregister_cut()


def test_the_cut_keeps_the_gpu_code_paths(cut_name):
    """Bug caught: a cut that drops to the small CNN, 32 px, float32, or the cpu designs — then the
    notebooks would pass on paths the gpu series never takes."""
    from mlpl_lab.chapters import benchmark, lac
    from mlpl_lab.profiles import get_profile

    P = get_profile(cut_name)
    assert (P.model, P.image_size, P.amp, P.channels_last, P.lr_schedule, P.init) == (
        "resnet18", 64, True, True, "cosine", "pretrained")
    assert common.design_name(P) == "gpu"
    d = lac.design(P)
    assert (d.model, d.scene["image_size"], d.model_kwargs["head"]) == ("resnet18", 128, "label_query")
    # the benchmark takes the gpu grid (its regimes), tuned, on the fresh seed(s) after seed 0
    bd = benchmark.design(P)
    assert set(bd.grid) == set(benchmark.design("gpu").grid) and bd.tuning
    spec = P.spec("an")
    assert spec.train["amp"] is True and spec.data["image_size"] == 64 and spec.train["model"] == "resnet18"


def test_the_cut_sizes_are_the_modes(cut_name):
    """The registered profile has the sizes CUT_SIZES lists for its mode, and no more than 2 seeds."""
    from mlpl_lab.profiles import get_profile

    P = get_profile(cut_name)
    sizes = [s for s in cut.CUT_SIZES.values() if s["n_train"] == P.n_train]
    assert len(sizes) == 1
    assert (P.n_val, P.n_test, P.epochs, list(P.seeds)) == (
        sizes[0]["n_val"], sizes[0]["n_test"], sizes[0]["epochs"], sizes[0]["seeds"])
    assert P.pretrain["n_train"] == sizes[0]["pretrain"]["n_train"] and len(P.seeds) <= 2


@pytest.mark.parametrize("chapter", list(live.chapters()))
def test_every_live_run_fits_inside_the_cut(cut_name, chapter):
    """Bug caught: the first GPU check stopped at 02's live cell (a 4-epoch, 5,000-image live run
    against 1-epoch converged runs): 'a live run cannot be larger than its converged run'."""
    spec, conv = live.live_exercise(chapter, cut_name)
    for s, c in zip(live.stages(spec), live.stages(conv)):
        assert s.train["epochs"] <= c.train["epochs"]
        assert s.data["n_train"] < c.data["n_train"]
        assert s.data["n_train"] >= 2  # a training batch for BatchNorm: the rehearsal's 8 halved stays above it
    assert spec.key != conv.key


def test_live_sizes_by_hand():
    assert cut.live_sizes({"n_train": 5000, "epochs": 4}, 512, 2) == {"n_train": 256, "epochs": 2}
    assert cut.live_sizes({"n_train": 100, "epochs": (4, 2)}, 512, 3) == {"n_train": 100, "epochs": (3, 2)}


def test_unregister_leaves_no_trace():
    from mlpl_lab import profiles
    from mlpl_lab.chapters import gr, lac
    from mlpl_lab.protocol import lac_stages, tuning
    from mlpl_lab.protocol.registry import live_chapters

    cut.register_cut("gpu")
    cut.unregister_cut()
    sizes = [c.live.sizes for c in live_chapters().values()]
    for table in (profiles.PROFILES, common.DESIGN_OF, gr.DESIGNS, lac.DESIGNS, lac_stages.STAGES,
                  tuning.TRIALS_OF_PROFILE, *sizes):
        assert cut.NAME not in table


def test_startup_file_registers_the_cut(tmp_path):
    """The kernels see the cut only through the IPython startup file: execute its text as IPython
    does at start-up (the interpreter already holding the lab, as a kernel would after it)."""
    from mlpl_lab.profiles import PROFILES

    path = cut.startup_file(tmp_path, "rehearse")
    assert path.parent == tmp_path / "profile_default" / "startup"
    try:
        exec(compile(path.read_text(), str(path), "exec"), {})
        assert PROFILES["gpu_cut"].n_train == cut.CUT_SIZES["rehearse"]["n_train"]
        assert common.DESIGN_OF["gpu_cut"] == "gpu"
    finally:
        cut.unregister_cut()


# ------------------------------------------------------------------ the check's deadline arithmetic
CHECK = (ROOT / "benchmarks" / "gpu" / "check.sh").read_text()


def gpu_limit(step: str) -> int:
    """The GPU-mode limit of ``step`` in check.sh: ``step NAME "$(L GPU REHEARSE)"``."""
    m = re.search(rf'^step {step} "\$\(L (\d+) (\d+)\)"', CHECK, re.M)
    assert m, f"check.sh has no step {step} with an L limit"
    return int(m.group(1))


def test_the_checks_steps_put_the_notebooks_first_and_fit_the_540_s_deadline():
    """The notebooks run right after the imports and tests, with their 330 s (plus 10 s for the
    step's start); the fixed steps before them at their whole limits, the notebooks and the reserve
    kept for the run end to end and the summary fit the 540 s deadline, so the notebooks' limit is
    never cut short by it; the throughput step gets what is left. Bug caught: the notebooks back
    behind the throughput step (one window never reached a notebook), or a limit raised past the
    deadline."""
    assert re.search(r'DEADLINE=\$\{GPU_CHECK_DEADLINE:-540\}', CHECK)
    fixed = sum(gpu_limit(s) for s in ("install", "imports", "tests_gpu"))
    nb = int(re.search(r'^NB_BUDGET=\$\(L (\d+) \d+\)', CHECK, re.M).group(1))
    assert nb == cut.NOTEBOOKS_LIMIT_S
    assert re.search(r'^step notebooks "\$\(\(NB_BUDGET \+ 10\)\)"', CHECK, re.M)
    reserve = int(re.search(r'TP_LIMIT=\$\(\( DEADLINE - \(\$\(date \+%s\) - START\) - \$\(L (\d+) \d+\) \)\)',
                            CHECK).group(1))
    assert reserve >= gpu_limit("train_run") + 15  # the run end to end, then the summary's 15 s
    assert 540 - fixed - (nb + 10) - reserve >= 0
    order = re.findall(r"^(?:DEADLINE=\$\(\(.*?\)\) )?step (\w+)", CHECK, re.M)
    assert order == ["install", "imports", "tests_gpu", "notebooks", "throughput", "train_run", "summary"]


LOG = """=== imports
ok
=== notebooks
  [plan] 225 runs to train (0 stored) on 1 worker processes × 16 thread(s) sharing 1 GPU(s), 1 a GPU at most
  [plan] run 1/225 full() · full() · seed 1000 · resnet18() · 1 epochs: 4 s (worker 974, 16 thread(s))
  [plan] runs: 1 done, 0 running, 224 waiting · 23 s so far, about 24.5 min left
  [plan] runs: 100 done, 0 running, 125 waiting · 3.5 min so far, about 4.4 min left
=== throughput
  [plan] runs: 900 done, 0 running, 0 waiting · 1.0 h so far, about 0 s left
"""


def test_the_recorded_rate_is_read_from_the_notebooks_steps_last_progress_line(tmp_path):
    (tmp_path / "logs.txt").write_text(LOG)
    rate = cut.recorded_run_rate(tmp_path)
    assert rate["workers"] == 1 and rate["seconds_per_run"] == pytest.approx(210 / 100)
    (tmp_path / "notebooks.json").write_text('{"mode": "gpu", "planned_training": {"status": "done", '
                                             '"runs_stored": 300, "seconds": 150.0, "workers": 8}}')
    assert cut.recorded_run_rate(tmp_path)["seconds_per_run"] == pytest.approx(0.5)


def test_the_cut_takes_the_first_level_whose_projection_fits_the_window(tmp_path):
    """By hand: 2.1 s a run on one worker, 8 workers give 2.5x one run's images/s, so 0.84 s a run;
    the longest notebook took 80 s. Levels of 300, 250, 190 and 150 runs project 332, 290, 239.6
    and 206 s: the first under 240 s is level 2."""
    (tmp_path / "logs.txt").write_text(LOG)
    (tmp_path / "throughput.json").write_text('{"best": {"workers_per_device": 8, "total_over_one_run": 2.5}}')
    (tmp_path / "rehearsal").mkdir()
    (tmp_path / "rehearsal" / "notebooks.json").write_text(
        '{"mode": "rehearse", "notebooks": [{"completed": true, "seconds": 80.0}, {"completed": true, "seconds": 12.0},'
        ' {"completed": false, "seconds": 500.0}]}')
    runs = [300, 250, 190, 150]
    got = cut.size(240, tmp_path, count=lambda level: runs[level])
    assert (got["level"], got["fits"], got["workers"]) == (2, True, 8)
    assert [lv["projected_s"] for lv in got["levels"]] == [332.0, 290.0, 239.6]
    too_small = cut.size(100, tmp_path, count=lambda level: runs[level])
    assert (too_small["level"], too_small["fits"]) == (3, False)
    assert cut.size(240, tmp_path / "nothing", count=lambda level: 1)["level"] == 0


def test_notebooks_the_card_stopped_take_the_smallest_level(tmp_path):
    """A card's record whose notebooks stopped at the budget (what the check of 2026-12-04 wrote:
    four completed, the longest 98 s; four stopped at 104 s) says only that they need more than
    that: the projection at level 0 would fit (100 runs × 0.5 s + 98 s), yet the cut must be the
    smallest level. Bug caught: a stopped notebook's seconds read as what it needs, or ignored."""
    (tmp_path / "notebooks.json").write_text(json.dumps({
        "mode": "gpu", "planned_training": {"status": "done", "runs_stored": 300, "seconds": 150.0, "workers": 8},
        "notebooks": [{"notebook": "00_partial_labels", "completed": True, "seconds": 98.0, "status": "completed"},
                      {"notebook": "07_benchmark", "completed": False, "seconds": 104.0, "status": "stopped"},
                      {"notebook": "02_gr_loss", "completed": False, "seconds": 103.0, "status": "stopped"}]}))
    (tmp_path / "throughput.json").write_text('{"best": {"workers_per_device": 8, "total_over_one_run": 3.4}}')
    got = cut.size(330, tmp_path, count=lambda level: 100)
    assert (got["level"], got["fits"]) == (len(cut.LEVELS) - 1, None)
    assert "02_gr_loss, 07_benchmark" in got["why"]
    # none completed, on the card or in a rehearsal: the stopped ones still decide (not level 0)
    only_stopped = tmp_path / "only_stopped"
    only_stopped.mkdir()
    rec = json.loads((tmp_path / "notebooks.json").read_text())
    rec["notebooks"] = [n for n in rec["notebooks"] if n["status"] == "stopped"]
    (only_stopped / "notebooks.json").write_text(json.dumps(rec))
    (only_stopped / "throughput.json").write_text((tmp_path / "throughput.json").read_text())
    got = cut.size(330, only_stopped, count=lambda level: 100)
    assert (got["level"], got["fits"]) == (len(cut.LEVELS) - 1, None)
    # the same record with every notebook completed: the projection decides (level 0 fits)
    rec = json.loads((tmp_path / "notebooks.json").read_text())
    for n in rec["notebooks"]:
        n.update(completed=True, status="completed")
    (tmp_path / "notebooks.json").write_text(json.dumps(rec))
    got = cut.size(330, tmp_path, count=lambda level: 100)
    assert (got["level"], got["fits"]) == (0, True)
    assert got["levels"][0]["projected_s"] == pytest.approx(100 * 0.5 + 104.0)


def test_a_level_registers_its_seeds_and_trials():
    from mlpl_lab.protocol import tuning
    from mlpl_lab.profiles import get_profile

    try:
        name = cut.register_cut("rehearse", 3)
        assert list(get_profile(name).seeds) == cut.LEVELS[3]["seeds"] == [0]
        assert tuning.trials_for(name) == cut.LEVELS[3]["trials"] == 1
    finally:
        cut.unregister_cut()


#: the notebooks' budget on the GPU when every step before them uses its whole limit
NB_FLOOR_S = 200


def test_the_cuts_training_is_a_small_share_of_the_notebooks_budget():
    """The gpu cut trains about 345 runs (its plan; 400 here for headroom), at most 40 of them at
    LAC's 128 px (4x the pixels of 64 px; the cut's LAC stages 1 + 1 epochs): at the 8,335 images/s
    the first check measured through fit for one run on an H100, their training takes under a fifth
    of the notebooks' floor, so the window goes to the runs' fixed costs and the notebooks' cells."""
    size = cut.CUT_SIZES["gpu"]
    per_run = size["n_train"] * size["epochs"]
    images = 360 * per_run + 40 * per_run * 4
    assert images / 8335 < NB_FLOOR_S / 5


def test_a_stopped_notebook_names_the_cell_it_was_running(tmp_path):
    """papermill saves each cell's status as it starts: of a notebook killed mid-way, the cell
    marked running is where the budget stopped it (by hand: the second code cell). Bug caught: the
    record listing only the cells that finished, so a slow cell and a hang look alike."""
    import step_notebooks

    def cell(src, **pm):
        return {"cell_type": "code", "source": [src], "outputs": [], "metadata": {"papermill": pm}}

    nb = {"cells": [cell("import torch", status="completed", duration=1.5),
                    {"cell_type": "markdown", "source": ["text"], "metadata": {}},
                    cell("loc = localisation_table(models)", status="running", duration=None),
                    cell("print(loc)", status="pending", duration=None)]}
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(nb))
    cells = step_notebooks.cells_of(path)
    assert [(c["index"], c["running"], c["duration"]) for c in cells] == [(0, False, 1.5), (2, True, None),
                                                                          (3, False, None)]
    assert cells[1]["first_line"] == "loc = localisation_table(models)"
