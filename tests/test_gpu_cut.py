"""The GPU check's cut (benchmarks/gpu/cut.py): the gpu design at sizes that let the eight notebooks
execute inside the check's 540 s deadline, and the check's own deadline arithmetic (check.sh).

Oracles: the gpu profile's code paths written out (ResNet-18, 64 px, bfloat16 autocast, LAC at
128 px, the gpu design's names), and the deadline as a sum of the step limits read from check.sh
by a regular expression, not by the script's own arithmetic."""
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "gpu"))
import cut  # noqa: E402

from mlpl_lab.chapters import common, live  # noqa: E402


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
    from mlpl_lab.chapters import gr, lac, tuning
    from mlpl_lab.chapters.registry import live_chapters

    cut.register_cut("gpu")
    cut.unregister_cut()
    sizes = [c.live.sizes for c in live_chapters().values()]
    for table in (profiles.PROFILES, common.DESIGN_OF, gr.DESIGNS, lac.DESIGNS, tuning.TRIALS_OF_PROFILE, *sizes):
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


def test_the_checks_steps_fit_the_540_s_deadline_with_the_notebooks_budget():
    """The fixed steps' GPU limits (install, imports, tests/gpu, throughput) and the reserve kept for
    the steps after the notebooks leave the 8 notebooks at least 200 s of the 540 s deadline, and
    the reserve covers the run end to end and the summary. Bug caught: a step's limit raised
    without the notebooks' budget shrinking, or the steps reordered."""
    assert re.search(r'DEADLINE=\$\{GPU_CHECK_DEADLINE:-540\}', CHECK)
    fixed = sum(gpu_limit(s) for s in ("install", "imports", "tests_gpu", "throughput"))
    reserve = int(re.search(r'NB_BUDGET=\$\(\( DEADLINE - \(\$\(date \+%s\) - START\) - \$\(L (\d+) \d+\) \)\)',
                            CHECK).group(1))
    assert reserve >= gpu_limit("train_run") + 15  # the run end to end, then the summary's 15 s
    assert 540 - fixed - reserve >= 200
    order = re.findall(r"^(?:DEADLINE=\$\(\(.*?\)\) )?step (\w+)", CHECK, re.M)
    assert order == ["install", "imports", "tests_gpu", "throughput", "notebooks", "train_run", "summary"]


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
