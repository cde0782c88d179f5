"""The README's picture, drawn from the lab's own scenes: ``mlpl-lab course figure`` writes
``notebooks/figures/front.png`` (eight scenes of the cpu profile's setting, each captioned with its
true labels and the single positive an annotator gave)."""
from __future__ import annotations

import io
from pathlib import Path

from ..reporting.report import NOTEBOOK_DIR

FRONT = NOTEBOOK_DIR / "figures" / "front.png"


def front_figure(path: Path = FRONT, seed: int = 0) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image

    from ..core.regimes import single_positive
    from ..data import SceneDataset, make_scenes
    from ..profiles import get_profile
    from ..viz.scenes_plots import show_scenes

    P = get_profile("cpu")
    scenes = make_scenes(8, seed=seed, image_size=64, glyphs=P.glyphs, **P.scene)
    observed = single_positive(scenes.labels, seed=seed)
    fig = show_scenes(SceneDataset(scenes, observed), range(8), ncols=4, figsize=(10, 6.6))
    fig.suptitle("Generated scenes keep the truth: each caption lists the true labels and the one "
                 "positive an annotator gave (✓; ? = unknown)", fontsize=11, y=1.0)
    fig.subplots_adjust(top=0.9, hspace=0.55)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    # The picture lives in git, so keep it small: 256 colours without dithering (the scenes' flat
    # glyphs and captions keep their look) is under half the full-colour file.
    image = Image.open(buffer).convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT,
                                                       dither=Image.Dither.NONE)
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, format="PNG", optimize=True)
    return path
