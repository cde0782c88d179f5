"""Notebook 06 — PU-MLC (Zhixiang Yuan, Kaixin Zhang, Tao Huang, *Positive Label Is All You Need
for Multi-Label Classification*, ICME 2024): the chapter's design per profile, its runs as data,
tables and claims.

Two parts:

* **The ablation ladder at a low proportion of known labels** (the paper's hardest column,
  p = 0.1 of the labels known, only their positives used): AN on the PU labels, plain vPU, +γ
  (re-balance, Eq. 9), +γ+α (adaptive temperature, Eq. 10–11), PU-MLC (+ vPU's mixup, Eq. 8),
  PU-MLC + LgConv (Sec. III-D), partial BCE (which also reads the known *negatives*:
  ``known_proportion(p)``), and the full-label oracle (shared with chapter 01 through the run
  store). Every row on the same seeds, so every comparison pairs by seed. γ = 0.55 there: the
  paper's and code's COCO value for 10 % known labels.
* **Noisy negatives** (``labels.noisy_negatives(p, fn_rate)``) at p = 0.5: a share ``fn_rate`` of
  the *observed negatives* are missed objects. The observed negatives outnumber the positives
  about 8 to 1 on the scenes, so a small ``fn_rate`` reports a large share of the true positives
  as negatives: :func:`noise_table` counts it from the label matrices (share of the true
  positives flipped; false negatives per observed positive, what partial BCE reads). At every
  noise level γ is chosen on the clean validation split among ``gamma_grid``
  (:func:`select_gammas`): the paper sets "larger γ at smaller known ratios" without giving
  values. The **control** ``noisy_negatives(p, fn_rate, missed="unknown")`` misses the same
  positives but reports them unknown: partial BCE then loses the positives without reading wrong
  negatives, which separates "lost positives" from "wrong negatives" (:func:`decomposition`).
  PU-MLC reads only observed positives, which the control leaves as they are: its runs serve
  both (``tests/test_pu_mlc.py`` shows that PU-MLC's training does not depend on anything else).
  :func:`crossings` gives the noise level where PU-MLC and partial BCE cross, per seed.

The runs are data (:mod:`mlpl_lab.protocol.asked`): :func:`design` holds every per-profile
literal (:data:`DESIGNS`), :func:`specs` asks for the runs, the γ choices read from the stored γ
grid; the notebook ensures them (``ensure_asked(specs, design)``) and :func:`results` arranges them
for the tables. Every cell runs on all of the profile's seeds (five under cpu and gpu, so every
claim pairs five seeds); a claim on fewer than three paired seeds is an observation
(:mod:`mlpl_lab.analysis.claims`). Runs per profile: :func:`run_count` (the notebook prints it).

What differs from the paper's training is listed by :func:`training_differences`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Tuple

import numpy as np

from ..analysis.claims import Claim, Family, by_seed, claim_id, claims_table, mark_waiting
from ..analysis.equal_epochs import (Difference, column_label, epochs_read, equal_sentence, first_crossing as _cross, lesson,
                                     paired_differences as _differences, unequal_said)
from ..analysis.tables import column_frames as _frames, seed_mean
from ..core.labels import NEG, POS
from ..core.regimes import regime as make_regime
from ..profiles import Profile
from ..runs.spec import RunSpec
from ..protocol.asked import Asked, Runs, Stored, nothing_stored
from ..protocol.common import as_profile, splits_for, with_pending
from ..protocol.design import preset
from .. import catalogue
from ..catalogue import LABEL
from ..protocol.registry import Chapter, Live

#: label -> (method, the regime family it reads: "pu" = positives only, "partial" = known
#: proportion, and the model options of the row)
LADDER: Dict[str, Tuple[str, str, Dict]] = {
    **{e.label: (e.method, family, dict(e.params)) for e, family in (
        (catalogue.entry("an_pu"), "pu"), (catalogue.entry("vpu"), "pu"), (catalogue.entry("pu_gamma"), "pu"),
        (catalogue.entry("pu_gamma_alpha"), "pu"), (catalogue.entry("pu_mlc_row"), "pu"),
        (catalogue.entry("pu_lgconv"), "pu"), (catalogue.entry("partial_bce_row"), "partial"))},
}
#: the rows whose method has a re-balance factor γ
GAMMA_ROWS = (LABEL.pu_gamma, LABEL.pu_gamma_alpha, LABEL.pu_mlc_row, LABEL.pu_lgconv)
#: the ladder's rows that are the noise sweep's clean cells at the sweep's proportion
#: (``noisy_negatives(p, 0)`` has the ``known_proportion(p)`` mask, so PU-MLC there reads the
#: positives of ``positives_only(p)``: the same runs, not trained twice)
CLEAN_ROWS = (LABEL.pu_mlc_row, LABEL.partial_bce_row)
ORACLE = LABEL.oracle_row
PU, PBCE, CONTROL = LABEL.pu_mlc, LABEL.partial_bce, LABEL.partial_bce_missed
#: paper's COCO / VOC values of (α, γ) (paper and code); the chapter uses COCO's
PAPER_PRESETS = {"coco": {"alpha": 1.0, "gamma": 0.55}, "voc": {"alpha": 2.0, "gamma": 0.85}}
#: paper Table I, COCO / VOC 2007, mAP at 10 % and 50 % known labels
PAPER = {LABEL.pu_mlc_row: {0.1: (75.7, 88.0), 0.5: (82.0, 92.4)},
         LABEL.partial_bce_row: {0.1: (61.6, 80.7), 0.5: (77.2, 91.2)}}
#: the methods of the vPU family (the ladder's PU rows and the γ grid), which train
#: :attr:`PUDesign.pu_epochs`
PU_METHODS = ("vpu_plain", "pu_mlc_gamma", "pu_mlc_gamma_alpha", "pu_mlc")


@dataclass(frozen=True)
class PUDesign:
    """What the chapter trains under one profile (:func:`design`)."""

    profile: Profile
    #: epochs of AN, partial BCE and the oracle (the profile's)
    epochs: int
    #: every row and cell of the chapter runs on these (the profile's)
    seeds: Tuple[int, ...]
    #: proportions with a full ladder (the sweep's p without one gets PU-MLC and partial BCE
    #: from the sweep's clean cell)
    proportions: Tuple[float, ...]
    sweep_p: float
    #: noise levels of the sweep; 0.0 (the clean cell) is the reference of every other
    fn_rates: Tuple[float, ...]
    #: γ values tried for PU-MLC at every noise level (selected on clean validation mAP)
    gamma_grid: Tuple[float, ...]
    #: epochs of the vPU / PU-MLC rows and the γ grid (:data:`PU_METHODS`), which learn slowly
    pu_epochs: int
    #: γ of the ladder away from the sweep's p (the paper's COCO value for 10 %)
    paper_gamma: float = 0.55
    #: epochs of partial BCE's longer runs at the sweep's p (a verdict at risk: its runs did not
    #: converge at the profile's epochs); None: none designed
    longer_baseline: Optional[int] = None

    def __post_init__(self):
        if 0.0 not in self.fn_rates:
            raise ValueError(f"fn_rates {self.fn_rates} lack 0.0: the clean cell is every noise level's reference")

    @property
    def families(self) -> Dict[str, Family]:
        """The chapter's questions, declared before any run is read: the ladder's four steps at
        the lowest proportion, PU-MLC against partial BCE at each proportion of a ladder, and the
        paper's premise under noisy negatives (two comparisons)."""
        ladders = len(set(self.proportions) | {self.sweep_p})
        return {STEPS: Family(STEPS, 4, "does each step of the ladder help at the lowest proportion?"),
                PU_VS_PBCE: Family(PU_VS_PBCE, ladders, "does PU-MLC beat partial BCE, at each proportion?"),
                PREMISE: Family(PREMISE, 2, "do wrong negatives cost partial BCE, and PU-MLC less?")}

    def epochs_of(self, method: str) -> int:
        """The epochs a run of ``method`` trains in this design."""
        return self.pu_epochs if method in PU_METHODS else self.epochs


#: the chapter's questions (:attr:`PUDesign.families`)
STEPS, PU_VS_PBCE, PREMISE = "the ladder's steps", "PU-MLC beats partial BCE", "noisy negatives"

#: the chapter's literals per design (``protocol.common.DESIGN_OF``: gpu_shape takes gpu's); the
#: profile adds its epochs and seeds (:func:`design`). smoke and cpu sweep two noise levels (clean,
#: and fn 0.1, which flips ~46 % of the positives at p = 0.5) to keep the series within its budget;
#: gpu adds 0.05 and 0.15 and a full ladder at the sweep's p.
DESIGNS: Dict[str, Dict[str, Any]] = {
    "smoke": dict(proportions=(0.1,), sweep_p=0.5, fn_rates=(0.0, 0.1), gamma_grid=(0.0, 0.55)),
    # pu_epochs: the PU rows climb for longer than the profile's epochs; 128 puts their rise
    # before the last quarter (the measurements: notebooks/handbook.md, "06")
    # longer_baseline: partial BCE, the losing side of the sweep's claims, still gained 0.5-0.6 mAP
    # in its last quarter: the cold series trains it as long as the PU rows (pending runs)
    "cpu": dict(proportions=(0.1,), sweep_p=0.5, fn_rates=(0.0, 0.1), gamma_grid=(0.0, 0.55), pu_epochs=128,
                longer_baseline=128),
    "gpu": dict(proportions=(0.1, 0.5), sweep_p=0.5, fn_rates=(0.0, 0.05, 0.1, 0.15),
                gamma_grid=(0.0, 0.25, 0.55)),
}

#: the notebook parameters that change which runs the chapter asks for: none (``seed``, ``alpha``
#: and ``gamma`` choose what the widget and the splits shown display)
PARAMETERS: Tuple[str, ...] = ()


def design(profile="cpu") -> PUDesign:
    """The chapter's design under ``profile``: :data:`DESIGNS` by the designs' one rule
    (:func:`mlpl_lab.protocol.common.preset`), with the profile's epochs and seeds (its PU rows at
    ``pu_epochs`` where the design sets them)."""
    P = as_profile(profile)
    literals = preset(DESIGNS, P)
    return PUDesign(P, P.epochs, tuple(P.seeds), **({"pu_epochs": P.epochs} | literals))


def regime_of(family: str, p: float):
    return ("positives_only", {"p": p}) if family == "pu" else ("known_proportion", {"p": p})


def _noisy(d: PUDesign, fn: float, missed: str = "negative"):
    params = {"p": d.sweep_p, "fn_rate": float(fn)}
    return "noisy_negatives", (params if missed == "negative" else params | {"missed": missed})


def ladder_key(p: float) -> str:
    """The family (and the notebook's column) of the ladder at proportion ``p``."""
    return f"p={p}"


def sweep_key(fn: float) -> str:
    """The family of the noise sweep's cell at ``fn``: ``{PU, PBCE, CONTROL: runs}``."""
    return f"fn_rate={float(fn)}"


#: the family of the γ grid: ``{grid_label(fn, γ): runs}``
GRID = "γ grid"


def grid_label(fn: float, gamma: float) -> str:
    return f"fn_rate={float(fn)}, γ={float(gamma)}"


def _ladder_rows(d: PUDesign, p: float, gamma: float) -> Dict[str, List[RunSpec]]:
    """The ladder at proportion ``p`` on every seed, its γ rows at ``gamma``, the oracle last."""
    P = as_profile(d.profile)
    rows = {}
    for label, (method, family, model) in LADDER.items():
        regime, params = regime_of(family, p)
        hp = {"gamma": float(gamma)} if label in GAMMA_ROWS else {}
        extra = {"model_kwargs": dict(P.model_kwargs) | model} if model else {}
        rows[label] = [P.spec(method, hp, regime, params, seed=s, epochs=d.epochs_of(method), **extra)
                       for s in d.seeds]
    rows[ORACLE] = [P.spec("full", {}, seed=s, epochs=d.epochs) for s in d.seeds]
    return rows


def _grid(d: PUDesign) -> Dict[Tuple[float, float], List[RunSpec]]:
    """``{(fn_rate, γ): [RunSpec per seed]}``: PU-MLC at the sweep's proportion, every noise
    level × every γ of the grid."""
    P = as_profile(d.profile)
    return {(float(fn), float(g)): [P.spec("pu_mlc", {"gamma": float(g)}, *_noisy(d, fn), seed=s,
                                           epochs=d.epochs_of("pu_mlc")) for s in d.seeds]
            for fn in d.fn_rates for g in d.gamma_grid}


def _baseline(d: PUDesign, fn: float, missed: str = "negative") -> List[RunSpec]:
    """Partial BCE on the noisy labels at ``fn`` (``missed="unknown"``: on the control)."""
    P = as_profile(d.profile)
    return [P.spec("partial_bce", {}, *_noisy(d, fn, missed), seed=s, epochs=d.epochs) for s in d.seeds]


def _chosen(grid: Dict[Tuple[float, float], List[RunSpec]], stored: Stored) -> Dict[float, float]:
    """``{fn_rate: γ}`` for every noise level whose γ grid is stored (:func:`select_gammas`)."""
    out = {}
    for fn in sorted({fn for fn, _ in grid}):
        runs = {(f, g): [stored(s) for s in specs] for (f, g), specs in grid.items() if f == fn}
        if all(r is not None for rs in runs.values() for r in rs):
            out[fn] = select_gammas(runs)[fn]
    return out


def specs(d: PUDesign, stored: Stored) -> Asked:
    """The chapter's runs (:mod:`mlpl_lab.protocol.asked`). Families: the ladder per proportion
    (:func:`ladder_key`), the γ grid (:data:`GRID`) and the sweep's cells (:func:`sweep_key`).
    The γ of each noise level is chosen on validation once its grid is stored; until then the
    cells that read it (the sweep's PU-MLC; at the sweep's p, the ladder's γ rows, of which
    PU-MLC is the clean cell) wait in ``later`` under the grid's first γ."""
    grid = _grid(d)
    chosen = _chosen(grid, stored)
    now: Dict[str, Dict[str, List[RunSpec]]] = {}
    later: Dict[str, Dict[str, List[RunSpec]]] = {}

    def ask(family: str, label: str, runs: List[RunSpec], waits: bool = False):
        (later if waits else now).setdefault(family, {})[label] = runs

    g0, waits0 = chosen.get(0.0, d.gamma_grid[0]), 0.0 not in chosen
    clean = {LABEL.pu_mlc_row: grid[(0.0, g0)], LABEL.partial_bce_row: _baseline(d, 0.0)}
    for p in d.proportions:
        at_sweep = p == d.sweep_p
        rows = _ladder_rows(d, p, g0 if at_sweep else d.paper_gamma)
        for label, runs in rows.items():
            ask(ladder_key(p), label, clean.get(label, runs) if at_sweep else runs,
                waits=at_sweep and label in GAMMA_ROWS and waits0)
    if d.sweep_p not in d.proportions:  # the sweep's clean cells are the ladder's two rows there
        for label, runs in clean.items():
            ask(ladder_key(d.sweep_p), label, runs, waits=label in GAMMA_ROWS and waits0)
    for (fn, g), runs in grid.items():
        ask(GRID, grid_label(fn, g), runs)
    for fn in map(float, d.fn_rates):
        ask(sweep_key(fn), PU, grid[(fn, chosen.get(fn, d.gamma_grid[0]))], waits=fn not in chosen)
        ask(sweep_key(fn), PBCE, _baseline(d, fn))
        ask(sweep_key(fn), CONTROL, _baseline(d, fn, "unknown") if fn else _baseline(d, fn))
    return with_pending(Asked(now, later), longer_specs(d))


#: the pending family of partial BCE trained longer (:func:`longer_specs`)
LONGER = "partial BCE, trained longer"


def longer_label(d: PUDesign, fn: float) -> str:
    return f"partial BCE ({d.longer_baseline} epochs) at fn_rate {float(fn)}"


def longer_specs(d: PUDesign) -> Dict[str, Dict[str, List[RunSpec]]]:
    """``{LONGER: {label: [RunSpec per seed]}}``: partial BCE at the sweep's p and every noise level
    at ``longer_baseline`` epochs (only the epochs differ), or {} where the design has none.
    Pending runs (:func:`mlpl_lab.protocol.common.with_pending`): the cold series trains them."""
    if not d.longer_baseline:
        return {}
    return {LONGER: {longer_label(d, fn): [s.replace(train=dict(s.train, epochs=d.longer_baseline))
                                            for s in _baseline(d, fn)] for fn in map(float, d.fn_rates)}}


def equal_epochs(d: PUDesign, longer: Optional[Mapping[str, List]] = None) -> Dict[float, List]:
    """``{fn_rate: runs}``: partial BCE trained as long as PU-MLC's design (:func:`longer_specs`, the
    equal-epochs control) where its runs are stored, for :func:`crossings` and :func:`sweep_table`."""
    if not d.longer_baseline or not longer:
        return {}
    return {float(fn): list(longer[longer_label(d, fn)]) for fn in map(float, d.fn_rates)
            if longer.get(longer_label(d, fn))}


def equal_label(d: PUDesign, sweep=None, equal: Optional[Mapping[float, List]] = None) -> str:
    """The sweep table's column of partial BCE trained longer, named by the lengths read
    (:func:`~mlpl_lab.analysis.equal_epochs.column_label`: ``equal``'s runs and PU-MLC's in ``sweep``
    at the same noise levels; the design's where not given)."""
    return _control_label(sweep, equal, d.epochs_of("pu_mlc"), d.longer_baseline)


def _control_label(sweep, equal, pu_default: int, long_default: Optional[int]) -> str:
    """:func:`equal_label` from the runs: their lengths, the defaults where none is read."""
    fns = [fn for fn in (sweep or {}) if (equal or {}).get(float(fn))]
    pu = {epochs_read(sweep[fn][PU], pu_default) for fn in fns} or {pu_default}
    return column_label(PBCE, epochs_read([r for fn in fns for r in equal[float(fn)]], long_default or 0), PU, pu)


class PUResults(NamedTuple):
    """The chapter's ensured runs, arranged for its tables."""

    #: ``{"p=…": {row: runs}}``, the proportions in order, then the sweep's p
    ladders: Dict[str, Dict[str, List]]
    #: ``{fn_rate: {PU: runs of the γ chosen there, PBCE: runs, CONTROL: runs}}`` (at fn 0 the
    #: control is the noisy cell: the same labels)
    sweep: Dict[float, Dict[str, List]]
    #: ``{(fn_rate, γ): runs}``
    gammas: Dict[Tuple[float, float], List]


def results(d: PUDesign, runs: Runs) -> PUResults:
    """The runs of ``ensure_asked(specs, d)`` as :class:`PUResults`."""
    keys = [ladder_key(p) for p in d.proportions]
    keys += [ladder_key(d.sweep_p)] if d.sweep_p not in d.proportions else []
    ladders = {k: runs[k] for k in keys}
    sweep = {float(fn): runs[sweep_key(fn)] for fn in d.fn_rates}
    gammas = {(float(fn), float(g)): runs[GRID][grid_label(fn, g)] for fn in d.fn_rates for g in d.gamma_grid}
    return PUResults(ladders, sweep, gammas)


#: the row of the ablation ladder the live exercise cuts down
LIVE_ROW = LABEL.pu_mlc_row


def live_seeds(profile) -> Tuple[int, ...]:
    """The seeds of the ladder: every row runs on the design's seeds."""
    return tuple(design(profile).seeds)


def live_spec(profile, seed: int, store=None) -> RunSpec:
    """PU-MLC's run (:data:`LIVE_ROW`) of the ladder at the design's first proportion on ``seed``."""
    d = design(profile)
    ladder = specs(d, nothing_stored).now[ladder_key(d.proportions[0])][LIVE_ROW]
    found = [s for s in ladder if s.seed == seed]
    if not found:
        raise ValueError(f"chapter 06 shows {LIVE_ROW} on seeds {[s.seed for s in ladder]}, not {seed}")
    return found[0]


def shown_splits(d: PUDesign, seed: int = 0):
    """The splits of the ladder's first proportion (PU labels) on ``seed``: what the widget shows."""
    return splits_for(as_profile(d.profile), "positives_only", {"p": d.proportions[0]}, seed)


def run_count(d: PUDesign) -> Dict[str, int]:
    """How many distinct runs the design asks the store for, by part (the oracle counted apart:
    chapter 01 trains the same runs; the γ choices at their stand-in, the same count)."""
    asked = specs(d, nothing_stored)
    families = {f: dict(asked.now.get(f, {})) | asked.later.get(f, {}) for f in set(asked.now) | set(asked.later)}

    def keys(fams, labels=None) -> set:
        return {s.key for f in fams for lab, ss in families[f].items() if labels is None or lab in labels
                for s in ss}

    ladder_fams = [ladder_key(p) for p in set(d.proportions) | {d.sweep_p}]
    oracle = keys(ladder_fams, (ORACLE,))
    grid = keys([GRID])
    base = keys([sweep_key(fn) for fn in d.fn_rates], (PBCE, CONTROL))
    out = {"ladder": len(keys(ladder_fams) - oracle - grid - base), "oracle (shared)": len(oracle),
           "γ selection": len(grid), "partial BCE sweep + control": len(base)}
    out["total"] = sum(out.values())
    return out


def select_gammas(gamma_runs, metric: str = "val_mAP") -> Dict[float, float]:
    """``{fn_rate: γ}``: at each noise level the γ with the best mean validation mAP over seeds
    (best-val epoch; ties: the smaller γ). The test split plays no part."""
    out = {}
    for fn in sorted({fn for fn, _ in gamma_runs}):
        scores = {g: seed_mean(runs, metric) for (f, g), runs in gamma_runs.items() if f == fn}
        out[fn] = max(sorted(scores), key=lambda g: scores[g])
    return out


# -- the noise, counted -------------------------------------------------------------------------
def noise_counts(Y, observed) -> Dict[str, float]:
    """What a noisy-negative label matrix does to the positives: ``flipped`` = true positives
    reported negative, their share of all true positives, the observed positives left, and
    false negatives per observed positive (what partial BCE reads as negatives vs positives)."""
    Y, obs = np.asarray(Y), np.asarray(observed)
    positives = int((Y == 1).sum())
    flipped = int(((Y == 1) & (obs == NEG)).sum())
    kept = int((obs == POS).sum())
    negatives = int((obs == NEG).sum())
    return {"share of true positives reported negative": flipped / positives,
            "false negatives per observed positive": flipped / kept if kept else math.nan,
            "false share of observed negatives": flipped / negatives if negatives else math.nan,
            "observed positives": kept, "false negatives": flipped}


def noise_by_seed(d: PUDesign) -> Dict[float, Dict[int, Dict[str, float]]]:
    """``{fn_rate: {seed: noise_counts}}`` of the sweep's training labels, computed from each
    seed's true label matrix with the regime the runs use (``make_splits`` applies
    ``labels.regime(name, **params)(Y_train, seed=seed)``)."""
    P = as_profile(d.profile)
    out: Dict[float, Dict[int, Dict[str, float]]] = {}
    for s in d.seeds:
        Y = splits_for(P, *_noisy(d, 0.0), seed=s).train.labels.numpy()
        for fn in d.fn_rates:
            name, params = _noisy(d, fn)
            out.setdefault(float(fn), {})[s] = noise_counts(Y, make_regime(name, **params)(Y, seed=s))
    return out


#: the sweep's axis as the share of the true positives it flips (a column of :func:`noise_table`)
SHARE = "share of true positives reported negative"


def noise_table(noise):
    """Mean over seeds of :func:`noise_counts` per fn_rate (the sweep's axis, stated honestly;
    every table reads the noise's means here)."""
    import pandas as pd

    frame = pd.DataFrame({fn: pd.DataFrame(by_seed_).T.mean() for fn, by_seed_ in noise.items()}).T
    frame.index.name = "fn_rate (share of observed negatives)"
    return frame


# -- tables -------------------------------------------------------------------------------------
def gamma_table(gammas, metric: str = "val_mAP"):
    """Validation and test mAP of PU-MLC per (fn_rate, γ) (mean over seeds) and the selection."""
    import pandas as pd

    chosen = select_gammas(gammas, metric)
    rows = {(fn, g): {"val mAP": seed_mean(runs, metric), "test mAP": seed_mean(runs, "test_mAP"),
                      "selected": "✓" if chosen[fn] == g else ""} for (fn, g), runs in sorted(gammas.items())}
    frame = pd.DataFrame(rows).T
    frame.index.names = ["fn_rate", "γ"]
    return frame


def _sd(runs, metric: str) -> float:
    """The sample standard deviation over seeds (NaN for one seed)."""
    v = list(by_seed(runs, metric).values())
    return float(np.std(v, ddof=1)) if len(v) > 1 else math.nan


def _cell(runs, metric: str) -> str:
    """``mean ± sd`` over seeds as text (the mean alone for one seed)."""
    sd = _sd(runs, metric)
    return f"{seed_mean(runs, metric):.1f}" + ("" if math.isnan(sd) else f" ± {sd:.1f}")


def ladder_table(ladders, metric: str = "test_mAP"):
    """One row per method, one column per proportion: mean ± sd over seeds, and the paper's COCO /
    VOC numbers where it has them."""
    import pandas as pd

    rows: Dict[str, Dict[str, str]] = {}
    for key, results in ladders.items():
        p = float(key.split("=")[1])
        for label, runs in results.items():
            rows.setdefault(label, {})[f"{key} (ours)"] = _cell(runs, metric)
            paper = PAPER.get(label, {}).get(p)
            rows[label][f"{key} paper COCO / VOC"] = "—" if paper is None else f"{paper[0]} / {paper[1]}"
    return pd.DataFrame(rows).T.fillna("—")


EQUAL_DIFF = "PU-MLC − partial BCE (trained longer)"  #: :func:`sweep_table`'s difference with the control


def sweep_table(sweep, noise, metric: str = "test_mAP", equal: Optional[Mapping[float, List]] = None,
                design: Optional["PUDesign"] = None):
    """Indexed by fn_rate: the share of true positives reported negative (mean over seeds), then
    test mAP (mean and sd over seeds) of PU-MLC, partial BCE and the control, and the paired
    difference PU-MLC − partial BCE (mean and sd over seeds). With ``equal`` (:func:`equal_epochs`)
    and ``design``: also partial BCE trained longer (:func:`equal_label`, named by both lengths) and the paired
    difference at equal epochs (:data:`EQUAL_DIFF`), NaN at a noise level without those runs."""
    import pandas as pd

    share = noise_table(noise)[SHARE]
    rows = {}
    for fn, cells in sweep.items():
        row = {"positives reported negative": float(share[fn])}
        for label in (PU, PBCE, CONTROL):
            row[label], row[f"{label} sd"] = seed_mean(cells[label], metric), _sd(cells[label], metric)
        diff = _differences(cells[PU], cells[PBCE], metric)
        row["PU-MLC − partial BCE"], row["PU-MLC − partial BCE sd"] = seed_mean(diff, metric), _sd(diff, metric)
        long = equal.get(float(fn)) if equal and design is not None else None
        for name, runs in (((equal_label(design, sweep, equal), long), (EQUAL_DIFF, long and _differences(cells[PU], long, metric)))
                           if equal and design is not None else ()):
            row[name], row[f"{name} sd"] = (seed_mean(runs, metric), _sd(runs, metric)) if runs else (math.nan,) * 2
        rows[fn] = row
    frame = pd.DataFrame(rows).T.sort_index()
    frame.index.name = "fn_rate"
    return frame


def _parts(sweep, fn, metric: str) -> Dict[str, List[Difference]]:
    """What noisy negatives at ``fn`` cost partial BCE, as paired differences (:func:`decomposition`)."""
    clean, cells = sweep[min(sweep)][PBCE], sweep[fn]
    return {"lost positives (clean − control)": _differences(clean, cells[CONTROL], metric),
            "wrong negatives (control − noisy)": _differences(cells[CONTROL], cells[PBCE], metric),
            "whole drop (clean − noisy)": _differences(clean, cells[PBCE], metric)}


def decomposition(sweep, metric: str = "test_mAP", as_text: bool = True):
    """What noisy negatives cost partial BCE, per noise level, paired by seed (mean ± sd):
    ``lost positives`` = clean (fn 0) − control, ``wrong negatives`` = control − noisy; the two
    add up to the whole drop clean − noisy. ``as_text=False``: the means over seeds, as numbers."""
    import pandas as pd

    rows = {fn: {k: _cell(v, metric) if as_text else seed_mean(v, metric) for k, v in _parts(sweep, fn, metric).items()}
            for fn in sorted(sweep) if fn != min(sweep)}
    frame = pd.DataFrame(rows).T
    frame.index.name = "fn_rate"
    return frame


def crossings(sweep, noise, metric: str = "test_mAP", equal: Optional[Mapping[float, List]] = None):
    """Per seed (and for the mean curves): where PU-MLC − partial BCE changes sign, as fn_rate
    and as the share of true positives reported negative (that seed's labels); NaN with the
    reason when the curves do not cross on the sweep. With ``equal`` (:func:`equal_epochs`) holding
    every noise level, partial BCE is read trained longer (at equal epochs where PU-MLC trained as long): the
    ``baseline`` column says which partial BCE the row reads."""
    import pandas as pd

    fns = sorted(sweep)
    at_equal = bool(equal) and all(equal.get(float(fn)) for fn in fns)
    said = _control_label(sweep, equal, 0, 0) if at_equal else f"{PBCE} at its own epochs"
    diffs = {fn: _differences(sweep[fn][PU], equal[float(fn)] if at_equal else sweep[fn][PBCE], metric) for fn in fns}
    per_seed = {fn: by_seed(v, metric) for fn, v in diffs.items()}
    mean_share = noise_table(noise)[SHARE]
    rows = {}
    seeds = sorted(set.intersection(*(set(v) for v in per_seed.values())))
    for s in seeds + ["mean"]:
        y = [per_seed[fn][s] if s != "mean" else seed_mean(diffs[fn], metric) for fn in fns]
        xs = [noise[fn][s][SHARE] if s != "mean" else float(mean_share[fn]) for fn in fns]
        at_fn, why = _cross(fns, y, LABEL.pu_mlc, LABEL.partial_bce)
        at_share, _ = _cross(xs, y, LABEL.pu_mlc, LABEL.partial_bce)
        rows[s] = {"fn_rate": at_fn, "positives reported negative": at_share, "note": why, "baseline": said}
    frame = pd.DataFrame(rows).T
    frame.index.name = "seed"
    return frame


def temperature_curves(runs):
    """DataFrame (epoch x class) of the per-class temperature T_c (mean over the epoch's batches)
    of the first run."""
    import pandas as pd

    hist = runs[0].history
    classes = sorted(int(k[12:-1]) for k in hist[0] if k.startswith("temperature["))
    return pd.DataFrame([[row[f"temperature[{c}]"] for c in classes] for row in hist],
                        index=pd.Index([row["epoch"] for row in hist], name="epoch"), columns=classes)


def training_differences(d: PUDesign):
    """What differs from the paper's training (its code, TAKELAMAG/PU-MLC; the differences are listed in :mod:`mlpl_lab.methods.pu_mlc`) and why,
    with this design's profile's settings."""
    import pandas as pd

    from ..engine.train import TrainConfig

    P = as_profile(d.profile)
    t = TrainConfig(**{k: v for k, v in P.train_settings().items() if k in TrainConfig.__dataclass_fields__})
    rows = [
        ("backbone and head", "ResNet-101 (ImageNet, 448 px) + SSGRL semantic decoupling (GloVe) + gated GNN",
         f"{P.model} + linear head",
         "the lab's shared model; the paper credits PU-MLC to the loss and LgConv, not to the head"),
        ("trained parameters", "LgConv branches + layer4 + head; every BatchNorm frozen (fix_bn)",
         "every parameter, BatchNorm in training mode",
         "every chapter fine-tunes all of the lab's pretrained backbone, so the rows of every chapter "
         "differ only in the method; the paper's partial fine-tuning is the option trainable='paper' "
         "(not run in any profile)"),
        ("optimiser", "Adam, weight decay 1e-4", f"{t.optimizer}, weight decay {t.weight_decay:g}",
         "one optimiser for every chapter, so rows differ only in the method"),
        ("LR schedule", "OneCycle over 80 epochs, stopped at 41 (COCO) / 56 (VOC)", t.lr_schedule,
         "the profile's schedule for every method"),
        ("epochs", "80 planned (OneCycle), stopped at 41 / 56",
         f"{d.epochs_of('pu_mlc')} for the vPU / PU-MLC rows, {d.epochs} for AN, partial BCE and the oracle",
         "set so each row's validation curve can flatten (DESIGNS records the reason, the handbook the measurements)"),
        ("EMA", "0.9997 (COCO); reports max(raw, EMA)", "none (option ema_decay)",
         "the best of two models on the test set is an oracle choice"),
        ("model selection", "best test mAP over epochs", "test mAP at the best clean-validation epoch",
         "the test split is not used to choose"),
        (LABEL.partial_bce, "Durand et al. (CVPR 2019): per image, the sum over its known labels × g(p_y) / C, "
         "g a normalising function of the image's known share p_y",
         "a plain mean over the known entries of the batch",
         "one form for every chapter; at a fixed p the known share per image varies little, so the two "
         "differ mostly by a constant factor, which Adam absorbs"),
        ("γ, α", "α 1.0 / γ 0.55 (COCO), 2.0 / 0.85 (VOC), one γ per known ratio (values not given)",
         "α 1.0; γ 0.55 at p = 0.1, chosen on validation at the sweep's p and every noise level",
         "the paper gives γ for 10 % only"),
    ]
    return pd.DataFrame(rows, columns=["what", "paper (official code)", "here", "why"]).set_index("what")


# -- claims -------------------------------------------------------------------------------------
def claims(ladders, sweep, design: "PUDesign", longer: Dict[str, List] | None = None):
    """The chapter's claims table, in the families ``design`` declares
    (:attr:`PUDesign.families`). Every claim compares two sets of runs paired by seed, and no
    two claims compare the same pair (checked)."""
    fam = design.families
    low_key = min(ladders, key=lambda k: float(k.split("=")[1]))
    low, p_low = ladders[low_key], float(low_key.split("=")[1])
    rows = [
        Claim(f"re-balancing helps at p = {p_low}: +γ beats plain vPU (the rows differ only in γ)",
              "COCO 10 %: 51.8 without the re-balance factor (Sec. III-B; full method 75.7)", LABEL.pu_gamma, LABEL.vpu,
              low[LABEL.pu_gamma], low[LABEL.vpu], family=fam[STEPS], id=claim_id("step", "gamma", f"p{p_low}")),
        Claim(f"the adaptive temperature helps at p = {p_low}: +γ+α beats +γ",
              "— (ablation in the appendix, not in our copy)", LABEL.pu_gamma_alpha, LABEL.pu_gamma, low[LABEL.pu_gamma_alpha], low[LABEL.pu_gamma], family=fam[STEPS],
              id=claim_id("step", "temperature", f"p{p_low}")),
        Claim(f"mixup helps at p = {p_low}: PU-MLC beats +γ+α", "— (vPU's regulariser; no PU-MLC number)",
              LABEL.pu_mlc, LABEL.pu_gamma_alpha, low[LABEL.pu_mlc_row], low[LABEL.pu_gamma_alpha], family=fam[STEPS],
              id=claim_id("step", "mixup", f"p{p_low}")),
        Claim(f"LgConv helps at p = {p_low}: PU-MLC + LgConv beats PU-MLC", "— (Sec. III-D; no number in our copy)",
              "+LgConv", LABEL.pu_mlc, low[LABEL.pu_lgconv], low[LABEL.pu_mlc_row], family=fam[STEPS],
              id=claim_id("step", "lgconv", f"p{p_low}")),
    ]
    said: Dict[str, str] = {}  # each claim's "PU-MLC 128 epochs vs partial BCE 54", as its runs trained (unequal_said)
    said_of = lambda a, b: unequal_said(LABEL.pu_mlc, LABEL.partial_bce, epochs_read(a, design.epochs_of("pu_mlc")),  # noqa: E731
                                        epochs_read(b, design.epochs))
    for key in sorted(ladders, key=lambda k: float(k.split("=")[1])):
        p = float(key.split("=")[1])
        paper = PAPER[LABEL.pu_mlc_row].get(p), PAPER[LABEL.partial_bce_row].get(p)
        clean = " (clean negatives)" if p != p_low else ""
        said[(cid := claim_id("pu_mlc_beats_partial_bce", f"p{p}"))] = said_of(ladders[key][LABEL.pu_mlc_row], ladders[key][LABEL.partial_bce_row])
        rows.append(Claim(f"PU-MLC beats partial BCE (which also reads negatives) at p = {p}{clean}{said[cid]}",
                          f"Table I, COCO {int(p * 100)} %: {paper[0][0]} vs {paper[1][0]}; VOC {paper[0][1]} vs "
                          f"{paper[1][1]}" if None not in paper else "—",
                          LABEL.pu_mlc, LABEL.partial_bce, ladders[key][LABEL.pu_mlc_row],
                          ladders[key][LABEL.partial_bce_row], family=fam[PU_VS_PBCE],
                          id=cid))
    hi = max(sweep)
    said[(cid := claim_id("pu_mlc_beats_partial_bce", f"fn{hi}"))] = said_of(sweep[hi][PU], sweep[hi][PBCE])
    rows.append(Claim(f"with noisy negatives (fn_rate {hi}) PU-MLC beats partial BCE{said[cid]}",
                      "the paper's premise (no number)", LABEL.pu_mlc, LABEL.partial_bce, sweep[hi][PU], sweep[hi][PBCE], family=fam[PREMISE],
                      id=cid))
    rows.append(Claim(f"wrong negatives cost partial BCE at fn_rate {hi}: the control (missed positives "
                      "unknown) beats the noisy labels", "the paper's premise: negatives carry the noise",
                      "control", LABEL.partial_bce, sweep[hi][CONTROL], sweep[hi][PBCE], family=fam[PREMISE],
                      id=claim_id("wrong_negatives_cost_partial_bce", f"fn{hi}")))
    # partial BCE trained as long as the PU rows (pending runs, once stored): controls of the claims
    # where it is the losing side
    at_sweep = claim_id("pu_mlc_beats_partial_bce", f"p{float(design.sweep_p)}")
    checked = {0.0: at_sweep if any(c.key == at_sweep for c in rows) else None,
               hi: claim_id("pu_mlc_beats_partial_bce", f"fn{hi}")}
    waiting = {}
    for fn, claim in checked.items():
        label = longer_label(design, fn) if design.longer_baseline else None
        if claim is None or label is None:
            continue
        runs = (longer or {}).get(label)
        if runs:
            parent = next(c for c in rows if c.key == claim)
            rows.append(Claim(equal_sentence(parent.claim, said[claim], epochs_read(sweep[fn][PU], design.epochs_of("pu_mlc")),
                                             epochs_read(runs, design.longer_baseline), LABEL.pu_mlc, LABEL.partial_bce),
                              "the same comparison, partial BCE trained longer (the control; the sentence gives both lengths)",
                              LABEL.pu_mlc, label, sweep[fn][PU], runs, control_of=claim,
                              id=claim_id("trained_longer", *claim.split("/"))))
        else:
            waiting[claim] = f"its control, {label} (pending: the cold series trains them)"
    pairs = [(tuple(id(r) for r in c.a_runs), tuple(id(r) for r in c.b_runs)) for c in rows]
    unordered = [frozenset(p) for p in pairs]
    if len(set(unordered)) != len(unordered):
        raise ValueError("two claims compare the same pair of runs: one comparison, one claim")
    table = claims_table(rows)
    waiting = {c: w for c, w in waiting.items() if bool(table.at[c, "_at_risk"])}
    return mark_waiting(table, waiting) if waiting else table


def epochs_lesson(table, d: "PUDesign") -> str:
    """What the equal-epochs controls found (:func:`mlpl_lab.analysis.equal_epochs.lesson`), at the
    epochs each claim's runs trained (the design's, ``d.epochs_of("pu_mlc")``, ``d.epochs`` and
    ``d.longer_baseline``, where a row does not say)."""
    return lesson(table, LABEL.pu_mlc, LABEL.partial_bce, d.epochs_of("pu_mlc"), d.epochs, d.longer_baseline)


# -- what the notebook shows (the one table style, mlpl_lab.analysis.display) -------------------

def ladder_view(ladders, metric: str = "test_mAP"):
    """:func:`ladder_table` as the notebook shows it: our test mAP as mean ± 95 % interval (seeds)
    with † where a run did not converge, the paper's COCO / VOC numbers, the best of each
    proportion in bold (the oracle left out)."""
    from ..analysis.display import caption, styled

    text = ladder_table(ladders, metric)
    ours = [c for c in text.columns if c.endswith("(ours)")]
    mean, half, n, unconv = _frames({f"{key} (ours)": results for key, results in ladders.items()},
                                    list(text.index), metric)
    frame = text.copy().astype(object)
    for c in ours:
        frame[c] = mean[c]
    ref = [r for r in text.index if "oracle" in r]
    return styled(frame, caption("PU-MLC's ladder at this scale: test mAP (%) at the best clean-validation "
                                 "epoch per known proportion p, and the paper's COCO / VOC numbers where it "
                                 "has them", reference=ref, note="— not run, or no number in the paper"),
                  percent=ours, half=half, seeds=n, unconverged=unconv, reference=ref, best=ours)


def noise_view(noise_tab):
    """:func:`noise_table` as the notebook shows it."""
    from ..analysis.display import styled

    return styled(noise_tab, "The noise the sweep injects, per fn_rate (mean over seeds): the share of true "
                  "positives reported negative, false negatives per observed positive, the false share of "
                  "the observed negatives, and the observed positives and false negatives per split.",
                  digits={"observed positives": 1, "false negatives": 1}, best=False)


def gamma_view(gamma_tab):
    """:func:`gamma_table` as the notebook shows it."""
    from ..analysis.display import styled

    return styled(gamma_tab, "PU-MLC per (fn_rate, γ): validation and test mAP (%) (mean over seeds) and the γ "
                  "selected on the clean validation split (✓).", percent=["val mAP", "test mAP"], best=False)


def sweep_view(sweep, noise, metric: str = "test_mAP", equal: Optional[Mapping[float, List]] = None,
               design: Optional["PUDesign"] = None):
    """:func:`sweep_table` as the notebook shows it: each method's test mAP and the paired
    difference PU-MLC − partial BCE as mean ± 95 % interval (seeds), † where a run did not
    converge; the best method of each noise level in bold. With ``equal`` and ``design``, partial
    BCE trained longer and the difference with it as well (the column names both lengths)."""
    import pandas as pd

    from ..analysis.display import caption, styled

    fns = sorted(sweep)
    cols = [PU, PBCE, CONTROL, f"{PU} − {PBCE}"]
    columns = {label: {fn: sweep[fn][label] for fn in fns} for label in cols[:3]}
    columns[cols[3]] = {fn: _differences(sweep[fn][PU], sweep[fn][PBCE], metric) for fn in fns}
    if equal and design is not None:
        long = equal_label(design, sweep, equal)
        columns[long] = {fn: equal[float(fn)] for fn in fns if equal.get(float(fn))}
        columns[EQUAL_DIFF] = {fn: _differences(sweep[fn][PU], equal[float(fn)], metric)
                               for fn in fns if equal.get(float(fn))}
        cols = cols[:3] + [long, cols[3], EQUAL_DIFF]
    mean, half, n, unconv = _frames(columns, fns, metric)
    share = noise_table(noise)[SHARE].reindex(fns).astype(float).rename("positives reported negative")
    frame = pd.concat([share, mean], axis=1)
    frame.index.name = "fn_rate"
    return styled(frame, caption("Test mAP (%) per noise level (fn_rate: the share of observed negatives that "
                                 "are true positives) and the paired difference PU-MLC − partial BCE; "
                                 "positives reported negative: the share of true positives the noise flips "
                                 "(mean over seeds)", bold="row"),
                  percent=cols, half=half, seeds=n, unconverged=unconv, axis=1,
                  reference=["positives reported negative"] + [c for c in cols if " − " in c])


def crossings_view(cross):
    """:func:`crossings` as the notebook shows it."""
    from ..analysis.display import styled

    return styled(cross, "Where PU-MLC − partial BCE changes sign, per seed and for the mean curves: as fn_rate "
                  "and as the share of true positives reported negative (— no crossing, the note says why); "
                  "baseline: which partial BCE it reads (at equal epochs where its longer runs are stored).",
                  digits={"fn_rate": 3, "positives reported negative": 3}, best=False)


def decomposition_view(sweep, metric: str = "test_mAP"):
    """:func:`decomposition` as the notebook shows it: each part as mean ± 95 % interval over the
    paired seeds († where a run of the pair did not converge)."""
    from ..analysis.display import caption, styled

    fns = [fn for fn in sorted(sweep) if fn != min(sweep)]
    parts = {fn: _parts(sweep, fn, metric) for fn in fns}
    names = list(parts[fns[0]]) if fns else []
    mean, half, n, unconv = _frames({k: {fn: parts[fn][k] for fn in fns} for k in names}, fns, metric)
    mean.index.name = "fn_rate"
    return styled(mean, caption("What noisy negatives cost partial BCE, in test mAP points, paired by seed: the "
                                "positives lost (clean − control), the wrong negatives (control − noisy) and "
                                "the whole drop (clean − noisy)", bold=None),
                  percent=True, half=half, seeds=n, unconverged=unconv, best=False)


def differences_view(d: PUDesign):
    """:func:`training_differences` with its caption."""
    from ..analysis.display import styled

    return styled(training_differences(d), "What differs from the paper's training (its official code) "
                  "and why, with this profile's settings.", best=False)


def design_view(d: PUDesign):
    """The chapter's design (:func:`design`) as a table of its fields."""
    from ..analysis.display import fields_table

    return fields_table(d, f"The chapter's design under the {d.profile.name} profile: what it trains.",
                        skip=("profile",))


#: the chapter, as :mod:`mlpl_lab.protocol.registry` finds it; the live run's sizes per profile
#: (cpu: measured by benchmarks/bench_live.py to train in at most 3 minutes on 2 cores)
LIVE_SIZES = {
    "smoke": {"n_train": 128, "epochs": 1},
    "cpu": {"n_train": 2000, "epochs": 20},
    "gpu": {"n_train": 5000, "epochs": 4},
    "gpu_shape": {"n_train": 256, "epochs": 1},
}
CHAPTER = Chapter("06_pu_mlc", live=Live(LABEL.pu_mlc, LIVE_SIZES, live_seeds, live_spec))
