"""The GPU check's cut: the gpu design at sizes that let all eight notebooks execute end to end
inside the check's deadline (``benchmarks/gpu/check.sh``, step ``notebooks``).

The cut is the profile ``gpu_cut``: the ``gpu_shape`` profile's literals — the gpu profile's code
paths: ResNet-18 at 64 px, bfloat16 autocast, channels-last, the cosine schedule, the pretrained
backbone, and every chapter's gpu design (method lists, ablation rows, regimes, key seeds capped at
the profile's, LAC's ResNet-18 cut after layer3 with the label-query head at 128 px; the workers
of the series train it as it would the gpu profile, several per device) — with the sizes of
:data:`CUT_SIZES` for the mode: ``gpu`` (a CUDA device) or ``rehearse`` (the CPU, ``make
gpu-rehearse``). Both modes execute the same notebooks, chapter designs and cells; only the images
per run differ.

Every per-profile table of the chapters is keyed by the profile's name (gr's zoo and budget, LAC's
stage epochs, the tuning trials, the live exercise sizes): :func:`register_cut` gives ``gpu_cut``
gpu_shape's entries, and the live exercise the sizes of gpu_shape capped inside the cut's own
converged runs (fewer images than the cut, no more epochs), so the live exercises train under the
cut, sized to it. The notebooks' parameters take a profile's name only: :func:`startup_file` writes
an IPython startup file that registers the cut in each kernel before the notebook's first cell.

How long it takes, measured (``benchmarks/records/gpu/rehearsal/notebooks.json``, rehearsal
on the CPU) or projected for the GPU from the one check that ran (:func:`gpu_seconds`, the
deadline arithmetic ``tests/test_gpu_cut.py`` checks)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

#: the base whose literals the cut takes (the gpu profile's code paths, every chapter's gpu design)
BASE = "gpu_shape"
NAME = "gpu_cut"

#: the cut's sizes per mode. gpu: half gpu_shape's training images (256, 2 epochs, two seeds: a
#: run's training is a fraction of a second of GPU time, so the notebooks' wall is mostly their
#: runs' fixed costs: tests/test_gpu_cut.py does the arithmetic); rehearse: the CPU (a CPU without
#: bf16 units trains an AMP spec in float32: benchmarks/records/amp_cpu.json), and the series is
#: about 320 runs: 8 training
#: images (one step an epoch, as at 32; the live exercises 4, still two a BatchNorm needs), the
#: probes on those 8, 32 validation and test images (scored in float32, a tenth of a training
#: image's cost each; fewer would leave classes without a positive), the test set scored once.
#: Two seeds and two epochs in both: the chapters' paired comparisons and the benchmark's fresh
#: seeds need two seeds, and what a method does between epochs (pseudo-labels, schedules, the
#: best-epoch choice) needs a second epoch (fewer leaves code paths unexecuted that the gpu series takes)
CUT_SIZES = {
    "gpu": {"n_train": 256, "n_val": 128, "n_test": 128, "epochs": 2, "seeds": [0, 1],
            "pretrain": {"n_train": 512, "n_val": 128, "n_test": 128, "epochs": 1}},
    "rehearse": {"n_train": 8, "n_val": 32, "n_test": 32, "epochs": 2, "seeds": [0, 1], "probe_size": 8,
                 "test_every_epoch": False,
                 "pretrain": {"n_train": 32, "n_val": 32, "n_test": 32, "epochs": 1}},
}

#: the notebooks the check executes, in series order (07 reads the runs of 01-06)
NOTEBOOKS = ("00_partial_labels", "01_assume_negative", "02_gr_loss", "03_opml", "04_cls", "05_lac",
             "06_pu_mlc", "07_benchmark")
#: the notebooks with a live exercise, trained under the cut (``live_training=True``)
LIVE_NOTEBOOKS = NOTEBOOKS[1:7]


def cut_profile(mode: str):
    """The ``gpu_cut`` Profile of ``mode`` (not registered)."""
    from mlpl_lab.profiles import get_profile

    if mode not in CUT_SIZES:
        raise ValueError(f"mode must be one of {sorted(CUT_SIZES)} (got {mode!r})")
    size = dict(CUT_SIZES[mode])
    B = get_profile(BASE)
    pre = dict(B.pretrain) | size.pop("pretrain")
    return replace(B, name=NAME, pretrain=pre, **size)


def live_sizes(base_live: dict, n_train: int, epochs: int) -> dict:
    """A chapter's live sizes inside a profile of ``n_train`` images and ``epochs`` epochs: fewer
    images than the converged run (at most half), no more epochs (per stage for LAC)."""
    def cap(e):
        return tuple(min(int(x), int(epochs)) for x in e) if isinstance(e, tuple) else min(int(e), int(epochs))

    return dict(base_live, n_train=min(int(base_live["n_train"]), int(n_train) // 2),
                epochs=cap(base_live["epochs"]))


def register_cut(mode: str) -> str:
    """Register ``gpu_cut`` of ``mode`` with the lab: the profile, the gpu design
    (``DESIGN_OF``), and gpu_shape's entries of the chapters' per-profile tables; the live
    exercise sized inside the cut. Returns the name."""
    from mlpl_lab import profiles
    from mlpl_lab.chapters import common, gr, lac, registry, tuning

    P = cut_profile(mode)
    profiles.PROFILES[NAME] = P
    common.DESIGN_OF[NAME] = common.design_name(BASE)
    for table in (gr.DESIGNS, lac.DESIGNS, tuning.TRIALS_OF_PROFILE):
        if BASE in table:
            table[NAME] = table[BASE]
    for chapter in registry.live_chapters().values():
        chapter.live.sizes[NAME] = live_sizes(chapter.live.sizes[BASE], P.n_train, P.epochs)
    return NAME


def unregister_cut() -> None:
    """Undo :func:`register_cut` (tests)."""
    from mlpl_lab import profiles
    from mlpl_lab.chapters import common, gr, lac, registry, tuning

    for table in (profiles.PROFILES, common.DESIGN_OF, gr.DESIGNS, lac.DESIGNS, tuning.TRIALS_OF_PROFILE,
                  *(c.live.sizes for c in registry.live_chapters().values())):
        table.pop(NAME, None)


STARTUP = """# written by benchmarks/gpu/cut.py: the GPU check's cut profile, registered before the notebook runs
import sys
sys.path.insert(0, {here!r})
import cut
cut.register_cut({mode!r})
"""


def startup_file(ipython_dir: Path, mode: str) -> Path:
    """An IPython startup file under ``ipython_dir`` (set ``IPYTHONDIR`` to it for the kernels)
    that registers the cut of ``mode`` in every kernel before the notebook's first cell."""
    startup = Path(ipython_dir) / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    path = startup / "00-gpu-check-cut.py"
    path.write_text(STARTUP.format(here=str(Path(__file__).resolve().parent), mode=mode))
    return path
