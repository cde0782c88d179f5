"""The README's picture, drawn from the lab's own scenes: ``mlpl-lab course figure`` writes
``notebooks/figures/front.png`` (eight scenes of the cpu profile's setting, each captioned with its
true labels and the single positive an annotator gave)."""
from __future__ import annotations

from pathlib import Path

from ..reporting.report import NOTEBOOK_DIR

FRONT = NOTEBOOK_DIR / "figures" / "front.png"


def front_figure(path: Path = FRONT, seed: int = 0) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..core.regimes import single_positive
    from ..data import SceneDataset, make_scenes
    from ..profiles import get_profile
    from ..viz.scenes_plots import show_scenes

    P = get_profile("cpu")
    scenes = make_scenes(8, seed=seed, image_size=64, glyphs=P.glyphs, **P.scene)
    observed = single_positive(scenes.labels, seed=seed)
    fig = show_scenes(SceneDataset(scenes, observed), range(8), ncols=4, figsize=(10, 8.5))
    fig.suptitle("Generated scenes keep the truth: each caption lists the true labels and the one "
                 "positive an annotator gave (✓; ? = unknown)", fontsize=11, y=1.0)
    fig.subplots_adjust(hspace=0.55)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return path
