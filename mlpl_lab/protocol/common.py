"""What every chapter does: turn ``{label: (method, hyperparameters)}`` into stored runs."""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Tuple, Union

from ..profiles import Profile, get_profile
from ..runs.splits_cache import build_splits

MethodSpec = Union[str, Tuple[str, Dict[str, Any]]]
#: the profile fields that set a run's scale (what a cpu run trades for time against gpu)
SCALE_FIELDS = ("n_train", "n_val", "n_test", "image_size", "model", "model_kwargs", "epochs",
                "batch_size", "amp")


#: profiles that take another profile's chapter designs — its method lists, rows, regimes, key
#: seeds (capped at the profile's own seeds) and a chapter's image sizes — at their own run scale:
#: ``gpu_shape`` executes the gpu designs at a CPU's sizes. A chapter's epoch tables
#: (LAC's stages, OPMLDesign.opml_epochs, PU_EPOCHS) stay keyed by the profile itself.
DESIGN_OF = {"gpu_shape": "gpu"}


def with_pending(asked, families):
    """``asked`` (a chapter's :class:`mlpl_lab.protocol.asked.Asked`) with ``families`` added to
    its *pending* runs: runs the chapter designs (longer runs for verdicts at risk, controls) that
    a notebook or a pack-served report never trains; the cold series trains them (the opt-in of
    :mod:`mlpl_lab.protocol.asked`), and a notebook reads those that are stored."""
    if families:
        asked.pending.update(families)
    return asked


def as_profile(profile) -> Profile:
    return get_profile(profile)


def design_name(profile) -> str:
    """The profile whose chapter designs ``profile`` takes (:data:`DESIGN_OF`; itself otherwise)."""
    name = as_profile(profile).name
    return DESIGN_OF.get(name, name)


def as_spec(m: MethodSpec) -> Tuple[str, Dict[str, Any]]:
    return (m, {}) if isinstance(m, str) else (m[0], dict(m[1]))


def specs_for(P: Profile, methods: Mapping[str, MethodSpec], regime: str = "single_positive",
              regime_params: Mapping[str, Any] | None = None, seeds: Iterable[int] | None = None,
              scene: Mapping[str, Any] | None = None, **train_overrides):
    """``{label: [RunSpec per seed]}`` for one regime."""
    seeds = list(P.seeds if seeds is None else seeds)
    out = {}
    for label, m in methods.items():
        name, hp = as_spec(m)
        out[label] = [P.spec(name, hp, regime, dict(regime_params or {}), seed=s, scene=scene,
                             **train_overrides) for s in seeds]
    return out


def splits_for(P: Profile, regime: str = "single_positive", regime_params=None, seed: int = 0,
               scene: Mapping[str, Any] | None = None):
    """The splits the runs of (regime, seed) train on."""
    return build_splits(P.data_kwargs(**dict(scene or {})), regime, dict(regime_params or {}), seed)


#: the papers' standard for real datasets under the gpu profile (Cole et al., LL, GR, LAC):
#: 448 px, ImageNet-pretrained ResNet-50 from the torchvision weights cache
PAPER_STANDARD = {"image_size": 448, "model": "resnet50", "model_kwargs": {"weights": "IMAGENET1K_V1"},
                  "init": "imagenet"}


def describe_start(profile) -> str:
    """Where the profile's runs start, in one line (every notebook's header prints it)."""
    P = as_profile(profile)
    if P.init == "scratch":
        return "random initialisation (init='scratch')"
    if P.init == "imagenet":
        from ..models.resnet import cache_path, weights_enum

        w = P.model_kwargs.get("weights")
        path = cache_path(weights_enum(P.model, w))
        return (f"torchvision ImageNet weights {P.model}/{w}: "
                + (f"cached at {path}" if path.exists() else
                   f"NOT in the local cache ({path}); a run stops with the fix before training"))
    pre = P.pretrain_spec()
    return (f"the lab's pretrained backbone: {pre.describe()}, {pre.data['n_train']} single-object "
            f"{pre.data['glyphs']} scenes, {pre.train['epochs']} epochs (run {pre.key}); heads fresh")


def with_dataset(profile, dataset: str = "scenes", root: str | None = None, layout: str = "cole") -> Profile:
    """``profile`` reading ``dataset`` ("scenes" returns it unchanged). Under the gpu profile a
    real dataset gets the paper standard (:data:`PAPER_STANDARD`: torchvision's ImageNet weights,
    from the local cache — :func:`describe_start` says whether they are there); the other
    profiles keep their small backbone and input size, from scratch, so a fixture or a laptop can
    run the same chapter."""
    P = as_profile(profile)
    if dataset in (None, "scenes"):
        return P
    if root is None:
        raise ValueError(f"dataset {dataset!r} needs data_root='/path/to/it' (nothing is downloaded)")
    from ..data.real_splits import LAYOUTS, REAL_DATASETS

    if dataset not in REAL_DATASETS:
        raise ValueError(f"unknown dataset {dataset!r}; choose 'scenes' or one of {sorted(REAL_DATASETS)}")
    if layout not in LAYOUTS or dataset not in LAYOUTS[layout]:
        raise ValueError(f"layout {layout!r} cannot hold {dataset!r}; layouts: {LAYOUTS}")
    # gpu: the papers' ImageNet ResNet-50; the small CNN of the other profiles has no ImageNet
    # weights, and the lab's backbone is pretrained on 32-px scenes: it starts from scratch
    overrides = dict(PAPER_STANDARD) if P.name == "gpu" else {"init": "scratch"}
    return get_profile(P, dataset=dataset, data_root=str(root), data_layout=layout, **overrides)


def leaves_out(profile, design_of=None) -> List[str]:
    """What ``profile``'s design of a chapter leaves out against the gpu profile's, one line per
    difference: the design's fields that differ (``design_of(profile)`` returns a dataclass,
    e.g. a chapter's ``chapter_design``) and the run scale (:data:`SCALE_FIELDS`). Computed from
    the two designs, so it cannot drift from what runs. Empty under gpu."""
    import dataclasses

    P, G = as_profile(profile), get_profile("gpu")
    if P.name == "gpu":
        return []
    out = []
    if design_of is not None:
        here, there = design_of(P), design_of(G)
        for f in dataclasses.fields(here):
            a, b = getattr(here, f.name), getattr(there, f.name)
            if f.name != "profile" and a != b:
                out.append(f"{f.name}: {a!r} here, {b!r} under gpu")
    scale = [f"{k} {getattr(P, k)!r} (gpu {getattr(G, k)!r})" for k in SCALE_FIELDS
             if getattr(P, k) != getattr(G, k)]
    if scale:
        out.append("run scale: " + "; ".join(scale))
    return out


#: the profile's settings by what they decide (a setting not named here is shown under "other")
PROFILE_GROUPS = {
    "data": ("dataset", "n_train", "n_val", "n_test", "image_size", "glyphs", "scene", "data_root", "data_layout"),
    "network": ("model", "model_kwargs", "init", "pretrain", "channels_last"),
    "training": ("epochs", "batch_size", "lr", "lr_schedule", "amp"),
    "seeds and evaluation": ("seeds", "probes", "probe_size", "test_every_epoch", "cell_timeout_s"),
}


def profile_frame(profile):
    """The profile's settings as a reader reads them, not the dataclass repr: one row per group of
    :data:`PROFILE_GROUPS`, each setting as ``name = value``
    (:func:`~mlpl_lab.analysis.display.value_text`)."""
    import dataclasses

    import pandas as pd

    from ..analysis.display import header_words, value_text

    P = as_profile(profile)
    names = [f.name for f in dataclasses.fields(P) if f.name != "name"]
    grouped = {g: [n for n in fields if n in names] for g, fields in PROFILE_GROUPS.items()}
    rest = [n for n in names if not any(n in f for f in grouped.values())]
    if rest:
        grouped["other"] = rest

    def shown(name):
        v = getattr(P, name)
        text = value_text(v)
        return f"{header_words(name)} = " + (f"({text})" if isinstance(v, dict) and v else text)

    rows = {g: "; ".join(shown(n) for n in fields) for g, fields in grouped.items() if fields}
    return pd.Series(rows, name="settings").to_frame().rename_axis("")


def profile_view(profile):
    """:func:`profile_frame` in the lab's table style."""
    from ..analysis.display import styled

    P = as_profile(profile)
    return styled(profile_frame(P), f"The {P.name} profile: every setting its runs are built from.", best=False)
