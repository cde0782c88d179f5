"""Chapter 00 (the problem): the scenes and label regimes every later chapter trains on.

Chapter 00 trains nothing. It shows the **training split of the profile's scenes** — the same
scene set, built by :func:`~mlpl_lab.protocol.common.splits_for` from the profile's data
settings, that the runs of chapters 01–08 train on for the same seed — and what each regime of
those chapters hides in it. Every number its prose states is computed here from those splits.
"""
from __future__ import annotations

import inspect
from typing import Any, Dict, Tuple

from ..core import labels as L
from ..core import regimes as R
from ..protocol.regimes import REGIMES as PROTOCOL_REGIMES
from ..protocol.common import as_profile, splits_for
from ..protocol.registry import Chapter

#: the regimes of chapters 01–08 (display label -> (regime name, parameters)): the full labels, then
#: the benchmark's regimes, which hold every regime a chapter trains
REGIMES: Dict[str, Tuple[str, Dict[str, Any]]] = {"full": ("full", {}), **PROTOCOL_REGIMES}

#: the columns of :func:`label_statistics`
COLUMNS = ("observed positives / image", "true positives / image", "hidden positive share",
           "AN false-negative rate", "unknown share", "images with no observed positive")


def training_scenes(profile, seed: int = 0):
    """The training scenes of ``seed`` under ``profile``: the scene set every chapter's runs of
    that seed train on (its observed labels depend on the regime; the scenes do not)."""
    return splits_for(as_profile(profile), "full", {}, seed).train.scenes


def observed_labels(profile, regime_label: str, seed: int = 0):
    """The observed training labels a chapter's run of ``seed`` under ``regime_label`` trains on."""
    name, params = REGIMES[regime_label]
    return splits_for(as_profile(profile), name, params, seed).train.observed


def label_statistics(profile, seed: int = 0):
    """One row per regime (:data:`REGIMES`), read from the chapters' training split of ``seed``:
    observed and true positives per image, the share of true positives hidden, AN's
    false-negative rate (hidden positives / every entry AN treats as negative), the share of
    entries unknown and the share of images left with no observed positive."""
    import pandas as pd

    rows = []
    for label, (name, params) in REGIMES.items():
        sp = splits_for(as_profile(profile), name, params, seed)
        y, obs = sp.train.labels, sp.train.observed
        stats = R.label_stats(y, obs)
        rows.append({
            "regime": label,
            "observed positives / image": stats["observed_positives_per_image"],
            "true positives / image": stats["positives_per_image"],
            "hidden positive share": stats["hidden_positive_share"],
            "AN false-negative rate": stats["false_negative_rate_under_an"],
            "unknown share": float((obs == L.UNK).float().mean()),
            "images with no observed positive": float(((obs == L.POS).sum(1) == 0).float().mean()),
        })
    return pd.DataFrame(rows).set_index("regime")[list(COLUMNS)]


def statistics_view(stats):
    """:func:`label_statistics` as the notebook shows it (shares in %)."""
    from ..analysis.display import styled

    shown = stats.copy()
    for col in COLUMNS[2:]:
        shown[col] = 100 * shown[col]
    shown = shown.rename(columns={c: f"{c} (%)" for c in COLUMNS[2:]})
    return styled(shown.round(2), "Per regime, on the training scenes the chapters train on (this profile, this "
                  "seed): observed and true positives per image; the share of true positives hidden; AN's "
                  "false-negative rate (the share of the entries AN treats as negative that are in fact "
                  "positive); the share of label entries unknown; the share of images left with no observed "
                  "positive.", best=False)


def scene_settings(profile) -> Dict[str, Any]:
    """The scene generator's settings this profile's chapters train on: the profile's data sizes
    and its scene overrides (an empty ``scene`` means the generator's defaults)."""
    P = as_profile(profile)
    return {"profile": P.name, **P.data_kwargs(), "generator defaults": not P.scene}


def scenes_markdown(profile, seed: int = 0) -> str:
    """The sentence that introduces the scenes, computed from the training split."""
    P = as_profile(profile)
    scenes = training_scenes(P, seed)
    k = scenes.labels.sum(1)
    data = P.data_kwargs()
    which = ("the generator's default scenes" if not P.scene else
             "harder scenes than the generator's defaults (" +
             ", ".join(f"`{key}={value}`" for key, value in P.scene.items()) + "; notebook 01 shows how "
             "they were chosen)")
    return (f"Under the **{P.name}** profile every chapter trains on {which}. Below is the training split "
            f"of seed {seed}: {len(scenes)} images of {data['image_size']} px with "
            f"{int(k.min())}–{int(k.max())} classes present per image, "
            f"**{float(k.float().mean()):.2f}** on average.")


def drop_rule_markdown(profile, seed: int = 0) -> str:
    """How :func:`mlpl_lab.core.regimes.drop_positives` drops positives in the chapters (its
    default protocol, ``per_label``), with what it leaves on this profile's training split."""
    P = as_profile(profile)
    y = training_scenes(P, seed).labels
    n_pos = int(y.sum())
    default = inspect.signature(R.drop_positives).parameters["protocol"].default
    parts, protocols = [], set()
    for label, (name, params) in REGIMES.items():
        if name != "drop_positives":
            continue
        protocols.add(params.get("protocol", default))
        obs = observed_labels(P, label, seed)
        kept = int((obs == L.POS).sum())
        empty = float(((obs == L.POS).sum(1) == 0).float().mean())
        parts.append(f"at α = {params['alpha']:g}, {n_pos - kept} of the {n_pos} positives are hidden, "
                     f"{kept / len(y):.2f} observed positives per image remain and "
                     f"{100 * empty:.1f} % of the images keep none")
    if protocols != {"per_label"}:
        raise ValueError(f"the chapters' drop regimes use the protocol(s) {sorted(protocols)}; this text "
                         "describes 'per_label' only")
    return ("**How `drop_positives(α)` drops** (the protocol the chapters use, `per_label`, the default of "
            "`mlpl_lab.core.regimes.drop_positives`): of all the P positive entries of the training matrix, "
            "round(α · P) chosen uniformly at random become unknown, and every negative is unknown too. "
            "Labels, not images, are the unit, so an image may lose all its positives. On these scenes: "
            + "; ".join(parts) + ". The other protocol, `protocol=\"per_image_keep_one\"` (each image keeps "
            "max(1, round((1 − α) · k)) of its k positives), is an option.")


#: the two single-positive rows of :data:`REGIMES` that :func:`size_bias_markdown` compares
UNIFORM, SIZE_BIASED = "single positive", "single positive (size-biased)"


def size_bias_figures(profile, seed: int = 0) -> Dict[str, float]:
    """How the size-biased single positive differs from the uniform one on the training split of
    ``seed``: over the images with two or more positives, the share whose observed positive is the
    class with the largest visible area (the size-biased draw's rule, so 1 for it; 1/k by chance for
    the uniform draw), and the share where the two regimes observe the same class; the images
    counted."""
    P = as_profile(profile)
    scenes = training_scenes(P, seed)
    area = scenes.masks.flatten(2).sum(-1).float()  # (N, C) visible pixels per class
    area = area.masked_fill(scenes.labels == 0, -1.0)
    many = scenes.labels.sum(1) >= 2
    largest = area.argmax(1)
    picked = {label: (observed_labels(P, label, seed) == L.POS).float().argmax(1) for label in (UNIFORM, SIZE_BIASED)}
    n = int(many.sum())
    share = lambda x: float(x[many].float().mean()) if n else float("nan")  # noqa: E731
    return {"images": n, "uniform_largest": share(picked[UNIFORM] == largest),
            "size_biased_largest": share(picked[SIZE_BIASED] == largest),
            "same_class": share(picked[UNIFORM] == picked[SIZE_BIASED])}


def size_bias_markdown(profile, seed: int = 0) -> str:
    """Why the two single-positive rows of the table show the same numbers, and how they differ,
    computed from the training split (:func:`size_bias_figures`)."""
    f = size_bias_figures(profile, seed)
    return (f"**Size-biased single positive** (`single_positive(bias=\"size\")`): each image still keeps exactly "
            "one positive, so every count of the table above — observed positives, hidden share, AN's "
            "false-negative rate, unknown share — is the same as under the uniform draw. What changes is "
            "*which* positive is kept: the class whose object covers the most visible pixels (the extreme of "
            "an annotator who names the biggest object first; Arroyo et al. draw it with probability growing "
            "with the area), where the uniform draw picks any of the image's positives. On the "
            f"{f['images']} training images with two or more positives, the kept positive is the largest "
            f"object in {100 * f['size_biased_largest']:.0f} % of them under the size-biased draw and in "
            f"{100 * f['uniform_largest']:.0f} % under the uniform one, and the two draws keep the same class in "
            f"{100 * f['same_class']:.0f} %. So small objects are hidden more often under the size-biased draw: "
            "chapter 07 compares the methods under both.")


def record_values(stats, profile) -> Dict[str, Any]:
    """What the notebook records: per-regime shares and the positives per image of the split."""
    return {
        "hidden_positive_share": stats["hidden positive share"].to_dict(),
        "an_false_negative_rate": stats["AN false-negative rate"].to_dict(),
        "observed_positives_per_image": stats["observed positives / image"].to_dict(),
        "positives_per_image": float(stats.loc["full", "true positives / image"]),
        "scene_settings": scene_settings(profile),
    }


#: the chapter, as :mod:`mlpl_lab.protocol.registry` finds it (it trains nothing: the scenes and the
#: label regimes)
CHAPTER = Chapter("00_partial_labels")
