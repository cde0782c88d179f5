"""Independent data sets for a rank test over data sets: candidates, their independence, their gap.

A rank test across data sets (Friedman, Iman–Davenport; Demšar 2006) counts each data set as one
independent draw. Settings of one generator that share seeds, layouts or labels are not
independent: 07's former scene families (one glyph set, one seed list, shared per-image contexts)
were measured as such (:mod:`mlpl_lab.analysis.independence`). Each candidate here differs from every
other in what it *is*:

* its own **label space**: a glyph vocabulary and number of classes of its own
  (:mod:`mlpl_lab.data.glyphs`; the handwritten digits are left out: they are the pretraining's
  classes);
* its own **co-occurrence structure** (``structure_seed``, ``num_contexts``, ``context_strength``);
* its own **objects per image** and object sizes, and its own **backgrounds** (gradient, noise,
  colour jitter);
* its own **seeds** (the run seed is the scenes', the labels' and the observed labels' seed):
  no seed is shared with another candidate, so no layout is either.

Each must leave room for the methods: the full-label oracle at least :data:`MIN_GAP` mAP above AN
under single positive (on its first seed, from the profile's shared pretraining run, like the
scene candidates of :mod:`mlpl_lab.protocol.scenes_choice`). The measurement is
``benchmarks/dataset_candidates.py``; its record is :data:`CPU_RECORD`.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, Iterable, Mapping, Tuple

from ..analysis.independence import pixel_correlation, shared_draws
from .common import as_profile, specs_for, splits_for
from .scenes_choice import METHODS, SCENE_CANDIDATES

#: the oracle − AN gap (test mAP, single positive) a data set must leave
MIN_GAP = 10.0
#: the most a same-index pixel correlation's median may be between two data sets
MAX_PIXEL_CORRELATION = 0.2

#: the data sets: ``{name: {"scene": generator arguments, "seeds": run seeds}}``, the ones 07's rank
#: test runs over (``chapters.benchmark.DATA_SETS``). The first is the profile's own scenes (the
#: chapters' data: coloured shapes, on 07's first three reported seeds); every other names its
#: vocabulary, and its seeds start at its own hundred.
DATASETS: Dict[str, Dict[str, Any]] = {
    "coloured shapes": {"scene": dict(SCENE_CANDIDATES["harder"]), "seeds": (1, 2, 3)},
    "two-tone symbols": {"scene": {"glyphs": "symbols", "structure_seed": 11, "num_contexts": 4,
                                   "context_strength": 0.6, "max_objects": 5, "size_range": [0.24, 0.44],
                                   "colour_jitter": 0.2, "noise": 0.12, "background_gradient": 0.3,
                                   "min_visible": 0.25},
                         "seeds": (101, 102, 103)},
    "printed letters": {"scene": {"glyphs": "letters", "structure_seed": 12, "num_contexts": 6,
                                  "context_strength": 0.8, "max_objects": 6, "size_range": [0.22, 0.4],
                                  "colour_jitter": 0.25, "noise": 0.15, "background_gradient": 0.1,
                                  "min_visible": 0.2},
                        "seeds": (201, 202, 203)},
    "printed Greek": {"scene": {"glyphs": "greek", "structure_seed": 13, "num_contexts": 3,
                                "context_strength": 0.5, "max_objects": 4, "size_range": [0.26, 0.46],
                                "colour_jitter": 0.15, "noise": 0.1, "background_gradient": 0.25,
                                "min_visible": 0.3},
                      "seeds": (301, 302, 303)},
    "printed signs": {"scene": {"glyphs": "signs", "structure_seed": 14, "num_contexts": 5,
                                "context_strength": 0.7, "max_objects": 5, "size_range": [0.2, 0.38],
                                "colour_jitter": 0.2, "noise": 0.18, "background_gradient": 0.2,
                                "min_visible": 0.2},
                      "seeds": (401, 402, 403)},
}

#: the measurement's record (``benchmarks/dataset_candidates.py --profile cpu``)
CPU_RECORD = Path(__file__).resolve().parents[2] / "benchmarks" / "records" / "dataset_candidates_cpu.json"


def read_record(record=None) -> Dict[str, Any]:
    """The data sets' measurement record (:data:`CPU_RECORD` by default); ``{}`` where it cannot be
    read. The one reader of it (07's table of gaps and its caption on independence)."""
    import json

    try:
        return json.loads(Path(record or CPU_RECORD).read_text())
    except (OSError, ValueError):
        return {}


def scene_of(name: str, datasets: Mapping[str, Mapping[str, Any]] | None = None) -> Dict[str, Any]:
    """The generator arguments of data set ``name`` (a clear error naming the known ones)."""
    sets = DATASETS if datasets is None else datasets
    if name not in sets:
        raise KeyError(f"unknown data set {name!r}; the data sets are: {', '.join(sets)}")
    return dict(sets[name]["scene"])


def gap_specs(profile, datasets: Mapping[str, Mapping[str, Any]] | None = None,
              seeds_each: int = 1) -> Dict[Tuple[str, str], list]:
    """``{(data set, "full labels" | "AN"): [RunSpec per seed]}``: single positive on each data
    set's first ``seeds_each`` seeds, the profile's protocol, the data set's scenes over the
    generator's defaults (not over the profile's chosen scenes: each data set is its own)."""
    P = replace(as_profile(profile), scene={})
    out = {}
    for name, d in (DATASETS if datasets is None else datasets).items():
        seeds = list(d["seeds"])[:seeds_each]
        for label, specs in specs_for(P, METHODS, "single_positive", seeds=seeds, scene=dict(d["scene"])).items():
            out[(name, label)] = specs
    return out


def images_of(profile, name: str, seed: int, datasets=None):
    """The test split's images of data set ``name`` at run seed ``seed`` under ``profile``."""
    P = replace(as_profile(profile), scene={})
    splits = splits_for(P, "single_positive", {}, seed=seed, scene=scene_of(name, datasets))
    return splits.test.images


def independence(profile, datasets: Mapping[str, Mapping[str, Any]] | None = None,
                 n_images: int = 500) -> Dict[str, Dict[str, Any]]:
    """Every pair of data sets: the median same-index pixel correlation of their first seeds'
    test images (the first ``n_images``), the seeds and structure seeds they share, and whether
    the pair passes (:data:`MAX_PIXEL_CORRELATION`, nothing shared). ``{"a | b": {...}}``."""
    import numpy as np

    sets = DATASETS if datasets is None else datasets
    images = {name: images_of(profile, name, int(d["seeds"][0]), sets)[:n_images] for name, d in sets.items()}
    draws = {name: {"seeds": list(d["seeds"]), "structure_seed": int(d["scene"].get("structure_seed", 0))}
             for name, d in sets.items()}
    out = {}
    names = list(sets)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            corr = float(np.nanmedian(pixel_correlation(images[a], images[b])))
            shared = shared_draws(draws[a], draws[b])
            out[f"{a} | {b}"] = {"median_pixel_correlation": round(corr, 4), **shared,
                                 "independent": bool(corr <= MAX_PIXEL_CORRELATION
                                                     and not shared["seeds"] and not shared["structure_seeds"])}
    return out


def gaps(runs: Mapping[Tuple[str, str], Iterable]) -> Dict[str, Dict[str, Any]]:
    """Per data set, from ``{(data set, label): runs}``: the oracle's and AN's test mAP at their
    best-val epochs (means over the runs), the gap, convergence, and whether the gap is at least
    :data:`MIN_GAP`."""
    from ..analysis.tables import seed_mean
    from ..catalogue import LABEL

    out: Dict[str, Dict[str, Any]] = {}
    for name in dict.fromkeys(n for n, _ in runs):
        full, an = list(runs[(name, LABEL.oracle)]), list(runs[(name, LABEL.an)])
        oracle, an_map = seed_mean(full, "test_mAP"), seed_mean(an, "test_mAP")
        out[name] = {"oracle test": round(oracle, 2), "AN test": round(an_map, 2),
                     "gap test": round(oracle - an_map, 2), "seeds": len(full),
                     "converged": sum(bool(r.converged) for r in full + an), "runs": len(full) + len(an),
                     "gap met": bool(oracle - an_map >= MIN_GAP)}
    return out
