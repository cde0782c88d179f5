"""Notebook 07 — every method on one protocol: the grid, its run specs, tables and views.

**Protocol** (one for every cell): the profile's data (same images, same train/val/test split
and same observed-label draw per seed: seed ``s`` draws all three), the profile's backbone,
input size, epochs, batch size, optimiser and learning rate, each method's paper defaults
(the chapters' choices: k for EPR/ROLE from the clean validation set, CLS's τ from its paper's
COCO column for the regime, the Co-teaching family's ramp scaled to the run as in chapter 04),
test mAP at the best clean-validation epoch. Rows that cannot follow it say so in their
``note``: LAC needs its label-query head and trains in two stages with the optimiser of its
paper (chapter 05's design); the oracle reads the true labels (one run per seed serves every
column).

**Equal-budget tuning** (``tuning=None``: on for the cpu and gpu designs, off for smoke; the one
tuning stage shared with chapter 02, :func:`mlpl_lab.protocol.tuning.stage`): each method with a declared grid
(:data:`TUNING_GRIDS`) gets the same number of trials (the first points of its grid, paper
default first) under each regime on the profile's first seed (the *selection seed*); the trial
with the best clean-validation mAP is then re-run on **fresh seeds** — as many as the profile has
seeds, all after the selection seed — and only those are reported (the selection trials never
are: their test mAP is optimistically biased by the choice). Every row, tuned or not, reports the
same fresh seeds, so the pairing by seed holds. Methods without hyperparameters to tune (AN, WAN,
...) have one trial, their one configuration; the oracle and LAC (chapter 05's design) have none.

**As data**: :func:`design` (the profile's :data:`DESIGNS` entry and the notebook's
:data:`PARAMETERS`) → :func:`specs` (pure: the trials, each cell once its choice is read from the
stored trials, LAC's own-head AN) → the notebook's :func:`mlpl_lab.protocol.asked.ensure_asked` →
the tables and views, which take the ensured runs.

**Profiles** (:data:`DESIGNS`):

* ``smoke``: AN and GR × single positive and drop 50 % × 2 seeds, with the oracle as the
  reference row (the smoke grid).
* ``cpu``: every row under uniform single positive, and a block of ten rows (the oracle, AN,
  GR, EM, ROLE, LL-R, CLS, LAC, OPML-SP and PU-MLC) under the size-biased single positive and
  drop 50 % as well, tuned, on the five fresh seeds 1–5. Runs whose spec a chapter already asks
  for (02's tuned rows, 03's, 04's and 05's seeds) are the chapters' runs; the benchmark trains
  the rest. The block is what Friedman's test and the critical-difference diagram rank; the
  other four regimes are left out (:func:`left_out` lists them).
* ``gpu``: the cpu grid at the gpu profile's scale (ResNet-18, 64 px), tuned, on the five fresh
  seeds: a series sized for a course, one evening on one GPU (``mlpl-lab plan --profile gpu``).
  The full grid — every row × every regime it applies to — is several times the runs
  (``mlpl-lab plan`` counts them); a notebook asks for it with ``methods=[...]`` and ``regimes=[...]``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ..analysis import benchmark as bm
from ..analysis.claims import CI_FAMILY, Claim, Family, claims_table, mark_schedule_bound
from ..profiles import Profile
from ..runs.spec import RunSpec
from . import cls as cls_chapter
from . import lac as lac_chapter
from . import opml as opml_chapter
from ..protocol import tuning as tuner
from ..core.bibliography import cite
from ..core.regime_table import regime_table
from .. import catalogue
from ..catalogue import LABEL
from . import bound_length
from ..methods.cls import paper_hparams
from ..protocol.asked import Asked, Families, Runs, Stored
from ..protocol.common import as_profile, design_name, splits_for, with_dataset
from ..protocol.registry import Chapter
from . import gr as gr_chapter
from ..protocol.positives import expected_num_pos
from ..protocol.scenes_choice import SCENE_CANDIDATES

#: column label -> (regime name, parameters): every regime of the lab (:data:`mlpl_lab.core.regimes.REGIME_TABLE`)
REGIMES: Dict[str, Tuple[str, Dict[str, Any]]] = regime_table()


def regime_definition(label: str) -> str:
    """What the regime ``label`` of :data:`REGIMES` observes, from its name and parameters."""
    name, params = REGIMES[label]
    if name == "single_positive" and params.get("bias") == "size":
        return ("one positive per image: the class whose object covers the most visible pixels (an annotator "
                "naming the biggest object first); everything else unknown. Its counts equal single "
                "positive's; which positive is kept differs (chapter 00)")
    if name == "single_positive" and not params.get("bias"):
        return "one positive per image, drawn uniformly among its positives; everything else unknown"
    if name == "drop_positives":
        return f"{100 * params['alpha']:g} % of all positive labels hidden at random, every negative unknown"
    if name == "known_proportion":
        return f"each label entry, positive or negative, known with probability {params['p']:g}"
    if name == "positives_only":
        return (f"the positives of a draw that knows each entry with probability {params['p']:g}; every "
                "negative hidden (the PU setting)")
    raise ValueError(f"no definition for regime {label!r} ({name}, {params}): add one to regime_definition")


#: short names for the command line
REGIME_SLUGS = {"single": "single positive", "single_size": "single positive (size-biased)", "drop25": "drop 25 %", "drop50": "drop 50 %",
                "drop75": "drop 75 %", "known10": "known 10 %", "pos10": "positives only 10 %"}

ORACLE, AN = LABEL.oracle, LABEL.an
LAC_ROW = LABEL.lac_row  # chapter 05's row the benchmark's LAC cells are
#: CLS's paper gives τ_h for single positive and the drop rates only (a size-biased single positive
#: is still single positive: the same τ)
CLS_REGIMES = tuple(cls_chapter.REGIMES) + ("single positive (size-biased)",)


@dataclass(frozen=True)
class Row:
    """One method of the benchmark. ``params(P, regime_label, seed)`` gives its hyperparameters;
    ``train(P)`` its training overrides (``{"model_kwargs": {...}}`` is merged over the profile's
    model_kwargs, any other key replaces the profile's setting; ``{}``: the protocol's);
    ``regimes``: where it applies (None: everywhere); ``note``: where it leaves the protocol."""

    label: str
    method: str
    chapter: str
    params: Callable[[Profile, str, int], Dict[str, Any]] = field(default=lambda P, r, s: {})
    regimes: Optional[Tuple[str, ...]] = None
    note: str = ""
    train: Callable[[Profile], Dict[str, Any]] = field(default=lambda P: {})

    def applies(self, regime: str) -> bool:
        return self.regimes is None or regime in self.regimes


def _k(P: Profile, regime: str, seed: int) -> Dict[str, Any]:
    """EPR's and ROLE's expected positives per image, chapter 02's k
    (:func:`mlpl_lab.protocol.positives.expected_num_pos`). It does not depend on the regime, and
    only the validation labels are drawn for it: a design holds specs, not splits."""
    return {"expected_num_pos": expected_num_pos(P, seed)}


def _cls(P: Profile, regime: str, seed: int) -> Dict[str, Any]:
    """CLS's τ from its paper's column for the regime (chapter 04's rule, by regime name)."""
    d = cls_chapter.design(P)
    name, params = REGIMES[regime]
    return paper_hparams(d.tau_dataset, name, params.get("alpha"), E_k=d.E_k)


def _family(P: Profile, extra: Dict[str, Any] | None = None):
    return dict(cls_chapter.design(P).family_hparams(), **(extra or {}))


#: BoostLU's boost α on the positive part of the class activation map (its paper's default, 5)
BOOSTLU_ALPHA = 5.0


def _boostlu(P: Profile) -> Dict[str, Any]:
    """BoostLU's network: the profile's backbone with the ``boostlu`` head (1x1-conv CAM, positive
    part × α, then pooling; :mod:`mlpl_lab.models.boostlu`), at training and at evaluation."""
    return {"model_kwargs": {"head": "boostlu", "head_kwargs": {"alpha": BOOSTLU_ALPHA}}}


BOOSTLU_NOTE = (f"own head: a 1x1-conv class activation map whose positive part is boosted (BoostLU, "
                f"α = {BOOSTLU_ALPHA:g}) before the pooling, at training and at evaluation; the loss is the LL row's")


#: each row's protocol where it is not the default: hyperparameters read from the profile or the
#: regime (added under the catalogue entry's fixed ones), where it applies, its training, its note
_ROW_PARAMS: Dict[str, Callable[[Profile, str, int], Dict[str, Any]]] = {
    LABEL.epr: _k, LABEL.role: _k, LABEL.cls: _cls,
    LABEL.coteaching: lambda P, r, s: _family(P), LABEL.coteaching_plus: lambda P, r, s: _family(P),
    LABEL.jocor_row: lambda P, r, s: _family(P),
}
_ROW_REGIMES: Dict[str, Tuple[str, ...]] = {
    LABEL.cls: CLS_REGIMES,
    LABEL.lac: tuple(label for label, (name, params) in REGIMES.items() if lac_chapter.regime_defined(name, params)),
}
_ROW_TRAIN: Dict[str, Callable[[Profile], Dict[str, Any]]] = {
    LABEL.ll_r_boostlu: _boostlu, LABEL.ll_ct_boostlu: _boostlu, LABEL.ll_cp_boostlu: _boostlu}
_ROW_NOTES: Dict[str, str] = {
    LABEL.oracle: "reads the true labels: the upper bound (one run per seed serves every column)",
    LABEL.ll_r_boostlu: BOOSTLU_NOTE, LABEL.ll_ct_boostlu: BOOSTLU_NOTE, LABEL.ll_cp_boostlu: BOOSTLU_NOTE,
    LABEL.cls: "τ_h is given by its paper for single positive and the drop rates only",
    LABEL.lac: "own head (label query) and two stages with its paper's optimiser: chapter 05's design; "
               "known negatives are masked out of PLC and the contrastive loss (never pseudo-positives)",
    LABEL.pu_mlc: "reads observed positives only (observed negatives count as unlabelled)",
}


def _params(e: catalogue.Entry) -> Callable[[Profile, str, int], Dict[str, Any]]:
    """A row's hyperparameters: the benchmark's own (:data:`_ROW_PARAMS`) with the entry's fixed
    ones over them."""
    own, fixed = _ROW_PARAMS.get(e.label), dict(e.params)
    if own is None:
        return lambda P, r, s: dict(fixed)
    return lambda P, r, s: dict(own(P, r, s), **fixed)


#: every catalogue entry notebook 07 shows, in the catalogue's order
ROWS: Tuple[Row, ...] = tuple(
    Row(e.label, e.method, e.chapter, params=_params(e), regimes=_ROW_REGIMES.get(e.label),
        note=_ROW_NOTES.get(e.label, ""), train=_ROW_TRAIN.get(e.label, lambda P: {}))
    for e in catalogue.in_chapter("07"))
ROW_BY_LABEL = {r.label: r for r in ROWS}
REFERENCE_ROWS = (ORACLE,)  # shown, never ranked

#: equal-budget tuning (:mod:`mlpl_lab.protocol.tuning`, shared with chapter 02): the grids and
#: the budget are the tuning module's; which designs are tuned is :data:`DESIGNS`'
TUNING_GRIDS = tuner.GRIDS
#: rows never tuned: the oracle reads the true labels, LAC keeps chapter 05's two-stage design
UNTUNED_ROWS = (ORACLE, LABEL.lac)

#: the rows every cpu regime holds (the oracle is shown, not ranked); over these label regimes of
#: one data set the ranks are description only (:func:`mlpl_lab.analysis.ranks.describe_ranks`)
_CPU_BLOCK = (ORACLE, LABEL.an, LABEL.gr, LABEL.em, LABEL.role, LABEL.ll_r, LABEL.cls, LABEL.lac, LABEL.opml_sp, LABEL.pu_mlc)

#: **the benchmark's data sets** (ranks with a p need independent data sets, Demšar 2006): scene
#: families, each a setting of the generator's own knobs over the profile's scenes, trained under
#: uniform single positive. "default" is the profile's scenes (its cells are the single-positive
#: cells above, shared). Two are settings measured as candidates for the default scenes
#: (``protocol.scenes_choice.SCENE_CANDIDATES``, record ``benchmarks/records/scene_candidates_cpu.json``,
#: the oracle and AN on the selection seed at the cpu protocol: gaps 12.2 and 15.0 mAP); two are
#: not measured — smaller and more numerous objects, and another class co-occurrence structure
#: with stronger contexts (which classes appear together and how often) — so the chapter checks
#: their gap from their own runs. Every family's gap must be ≥ :data:`FAMILY_MIN_GAP` mAP; the
#: glyph set is not varied (the digit glyphs are the pretraining's classes).
SCENE_FAMILIES: Dict[str, Dict[str, Any]] = {
    "default": {},
    "milder": dict(SCENE_CANDIDATES["milder"]),
    "less noise": dict(SCENE_CANDIDATES["probe, less noise"]),
    "small objects, up to 8": {"size_range": [0.17, 0.34], "max_objects": 8},
    "other co-occurrence": {"structure_seed": 1, "context_strength": 0.9},
}
#: the candidate of the measurement record each family is (None: not measured)
FAMILY_CANDIDATE: Dict[str, Optional[str]] = {
    "default": "harder", "milder": "milder", "less noise": "probe, less noise",
    "small objects, up to 8": None, "other co-occurrence": None}
FAMILY_MIN_GAP = 10.0
#: the methods ranked over the families (the oracle is trained for each family's gap, not ranked):
#: eight of the block above, each under the setting tuning kept for it on the default family's
#: single positive (no tuning again per family). LAC (own head, two stages) and ROLE (its k read
#: from each family's clean labels) are left out for their cost.
FAMILY_BLOCK = (ORACLE, LABEL.an, LABEL.hill, LABEL.em, LABEL.ll_r, LABEL.gr, LABEL.opml_sp, LABEL.cls, LABEL.pu_mlc)
FAMILY_REGIME = "single positive"
#: the pending runs' families (:attr:`mlpl_lab.protocol.asked.Asked.pending`)
FAMILIES = "scene families"
BOUND_CHECK = "length check of schedule-bound rows"


def pending_name(group: str, part: str) -> str:
    """The pending family of one part of a group (a scene family of :data:`FAMILIES`, a row of
    :data:`BOUND_CHECK`): each part is its own pending family, so it can be trained in one sitting
    and join a pack alone (``MLPL_LAB_TRAIN_PENDING="scene families: milder"``)."""
    return f"{group}: {part}"


def merged(families: Mapping[str, Mapping[str, Any]], group: str) -> Dict[str, Any]:
    """``{label: value}`` over every pending family of ``group`` (:func:`pending_name`)."""
    out: Dict[str, Any] = {}
    for name, labels in families.items():
        if name == group or name.startswith(group + ": "):
            out.update(labels)
    return out


@dataclass(frozen=True)
class Preset:
    """One profile's benchmark, as literals: ``grid`` (regime -> rows; ``None``: every row under
    every regime it applies to), ``tuned`` (equal-budget tuning by default) and ``seeds_per_cell``
    (``None``: every reported seed in every cell; else these cells' counts and one seed elsewhere)."""

    grid: Optional[Mapping[str, Tuple[str, ...]]]
    tuned: bool
    seeds_per_cell: Optional[Mapping[Tuple[str, str], int]] = None
    #: the scene families ranked as independent data sets (:data:`SCENE_FAMILIES`), their rows
    #: and how many of the reported seeds each family trains (its first ones)
    families: Tuple[str, ...] = ()
    family_rows: Tuple[str, ...] = ()
    family_seeds: int = 3


#: cpu's grid: every row under single positive, the block under one size-biased and one partial regime
DESIGNS_CPU_GRID = {"single positive": tuple(r.label for r in ROWS),
                    "single positive (size-biased)": _CPU_BLOCK, "drop 50 %": _CPU_BLOCK}
#: the benchmark of each profile (``gpu_shape`` takes gpu's: :data:`common.DESIGN_OF`)
DESIGNS: Dict[str, Preset] = {
    "smoke": Preset(grid={"single positive": (ORACLE, LABEL.an, LABEL.gr), "drop 50 %": (ORACLE, LABEL.an, LABEL.gr)},
                    tuned=False),
    # cpu: every row under single positive, the block under two more regimes (one size-biased, one
    # partial); every cell on the five fresh seeds. The other 4 regimes are the gpu grid's (left_out())
    "cpu": Preset(grid=dict(DESIGNS_CPU_GRID), tuned=True, families=tuple(SCENE_FAMILIES),
                  family_rows=FAMILY_BLOCK, family_seeds=3),
    # gpu, sized for a course (one evening on one GPU, `mlpl-lab plan --profile gpu`): the cpu grid's
    # shape at the gpu scale, tuned, five fresh seeds. What it costs: the full grid (every row under
    # all seven regimes, several times the runs) would decide each method under every regime; here the
    # drop 25 % / 75 %, known 10 % and positives-only regimes are left out (left_out() lists them)
    # and the rows outside the block are measured under single positive only
    "gpu": Preset(grid=dict(DESIGNS_CPU_GRID), tuned=True),
}
#: the notebook's ``parameters`` that change which runs the chapter asks for
PARAMETERS = ("methods", "regimes", "tuning", "dataset", "data_root", "data_layout")

#: the benchmark's questions besides the per-regime "beats AN" ones (:attr:`BenchmarkDesign.families`)
SAME_HEAD_FAMILY = "LAC's gain on its own network"
FLATTERS_FAMILY = "clean validation flatters"


def beats_an_family(regime: str) -> str:
    """The family of the paper methods' claims against AN under ``regime``."""
    return f"each paper method beats AN under {regime}"


#: ``Asked`` families besides the regimes (each regime is a family ``{row: [runs]}``)
TRIALS = "tuning trials"
SAME_HEAD_LABEL = "AN (LAC's head)"
#: chapter 05's AN row: AN trained with LAC's own network (label-query head, its epochs and
#: optimiser), the baseline that isolates the method from the head in :func:`claims`
LAC_SAME_HEAD_AN = LABEL.an


@dataclass(frozen=True)
class BenchmarkDesign:
    profile: Profile                     # the profile itself (it may read a real dataset)
    grid: Dict[str, Tuple[str, ...]]     # regime -> row labels
    seeds: Dict[Tuple[str, str], Tuple[int, ...]]  # (regime, row) -> reported seeds
    tuning: bool = False
    scenes: Tuple[str, ...] = ()         # scene families ranked as data sets (SCENE_FAMILIES)
    family_rows: Tuple[str, ...] = ()
    family_seeds: Tuple[int, ...] = ()

    @property
    def selection_seed(self) -> Optional[int]:
        """The seed tuning selects on (never reported); None without tuning."""
        return tuner.selection_seed(self.profile) if self.tuning else None

    def cells(self) -> List[Tuple[str, str]]:
        return [(reg, row) for reg, rows in self.grid.items() for row in rows]

    @property
    def families(self) -> Dict[str, Family]:
        """The benchmark's questions, declared from the grid before any run is read
        (:class:`mlpl_lab.analysis.claims.Family`): per regime with AN, "each paper method beats
        AN" (one claim per paper row of :data:`PAPER_CLAIMS` the regime holds); LAC's gain on its
        own network (one claim per regime with LAC); whether clean validation flatters (one pooled
        claim per regime). The length checks are controls of the GR claims they repeat, outside
        every family; the per-cell selection differences are exploratory, not claims."""
        out: Dict[str, Family] = {}
        for reg, rows in self.grid.items():
            if AN not in rows:
                continue
            m = sum(label in rows for label in PAPER_CLAIMS)
            if m:
                out[beats_an_family(reg)] = Family(beats_an_family(reg), m,
                                                   f"does each paper method beat AN under {reg}?")
        lac = sum(LABEL.lac in rows and AN in rows for rows in self.grid.values())
        if lac:
            out[SAME_HEAD_FAMILY] = Family(SAME_HEAD_FAMILY, lac, "does LAC beat AN on LAC's own network?")
        flat = sum(any(r not in REFERENCE_ROWS for r in rows) for rows in self.grid.values())
        if flat:
            out[FLATTERS_FAMILY] = Family(FLATTERS_FAMILY, flat, "does clean validation flatter the "
                                          "methods (pooled over the methods of each regime)?")
        return out

    def tuned_cells(self) -> List[Tuple[str, str]]:
        """The cells that choose their hyperparameters on trials (every cell but the untuned rows')."""
        return [(reg, row) for reg, row in self.cells() if row not in UNTUNED_ROWS] if self.tuning else []

    def describe(self) -> str:
        n_runs = sum(len(self.seeds[c]) for c in self.cells())
        return (f"{len(self.cells())} cells ({len({r for _, r in self.cells()})} methods × "
                f"{len(self.grid)} regimes where they apply), {n_runs} runs"
                + (f"; equal-budget tuning, {tuner.trials_for(self.profile)} trials per method on seed "
                   f"{self.selection_seed}" if self.tuning else ""))


def resolve_methods(names: Sequence[str] | None) -> Optional[List[str]]:
    """Row labels from labels or registered method names (case-insensitive); a bad name is an
    error listing the choices."""
    if names is None:
        return None
    out = []
    for n in names:
        hit = [r.label for r in ROWS if n.lower() in (r.label.lower(), r.method.lower())]
        if not hit:
            raise ValueError(f"unknown benchmark method {n!r}; choose from "
                             f"{[r.label for r in ROWS]} (or their registered names "
                             f"{[r.method for r in ROWS]})")
        if hit[0] not in out:
            out.append(hit[0])
    return out


def resolve_regimes(names: Sequence[str] | None) -> Optional[List[str]]:
    if names is None:
        return None
    out = []
    for n in names:
        label = REGIME_SLUGS.get(n, n)
        if label not in REGIMES:
            raise ValueError(f"unknown benchmark regime {n!r}; choose from {list(REGIMES)} or "
                             f"{list(REGIME_SLUGS)}")
        if label not in out:
            out.append(label)
    return out


def design(profile="cpu", methods: Sequence[str] | None = None, regimes: Sequence[str] | None = None,
           tuning: bool | None = None, dataset: str = "scenes", data_root: str | None = None,
           data_layout: str = "cole") -> BenchmarkDesign:
    """The grid under ``profile`` (:data:`DESIGNS`), reading ``dataset`` (:func:`common.with_dataset`);
    ``methods``/``regimes`` (labels, names or slugs) restrict it — or extend it with any method or
    regime outside the profile's grid (named methods: each under every regime it applies to, with
    the oracle and AN); ``tuning=None``: the preset's."""
    P = with_dataset(profile, dataset, data_root, data_layout)
    preset = DESIGNS[design_name(P)]
    methods, regimes = resolve_methods(methods), resolve_regimes(regimes)
    if preset.grid is not None and methods is None:
        grid = {reg: tuple(rows) for reg, rows in preset.grid.items()}
    else:  # every named row (every row) under every regime it applies to
        wanted = methods or [r.label for r in ROWS]
        if ORACLE not in wanted:
            wanted = [ORACLE] + list(wanted)
        if AN not in wanted:
            wanted.insert(1, AN)  # the gap and the cost are relative to AN
        grid = {reg: tuple(m for m in wanted if ROW_BY_LABEL[m].applies(reg)) for reg in REGIMES}
    if regimes is not None:
        grid = {reg: grid.get(reg) or tuple(r.label for r in ROWS if r.applies(reg)
                                           and (methods is None or r.label in methods
                                                or r.label in (ORACLE, AN)))
                for reg in regimes}
    grid = {reg: tuple(r for r in rows if ROW_BY_LABEL[r].applies(reg)) for reg, rows in grid.items()}
    tuning = preset.tuned if tuning is None else bool(tuning)
    # with tuning the first seed only selects: every cell reports the fresh seeds after it
    pool = tuner.fresh_seeds(P) if tuning else tuple(P.seeds)
    seeds = {}
    for reg, rows in grid.items():
        for row in rows:
            n = len(pool) if preset.seeds_per_cell is None else preset.seeds_per_cell.get((reg, row), 1)
            seeds[(reg, row)] = pool[:max(1, n)]
    # the scene families: only with the design's own grid on the scenes (a restricted or real-data
    # benchmark has no families), and only where the default family's cells are in the grid
    fam_rows = tuple(r for r in preset.family_rows if r in grid.get(FAMILY_REGIME, ()))
    families = (preset.families if preset.families and methods is None and regimes is None
                and P.dataset == "scenes" and len(fam_rows) == len(preset.family_rows) else ())
    fam_seeds = tuple(seeds.get((FAMILY_REGIME, AN), pool))[:preset.family_seeds] if families else ()
    return BenchmarkDesign(P, grid, seeds, tuning=tuning, scenes=tuple(families),
                           family_rows=fam_rows if families else (), family_seeds=fam_seeds)


def spec_for(P: Profile, row_label: str, regime: str, seed: int,
             params: Dict[str, Any] | None = None) -> RunSpec:
    """The run spec of one cell and seed (identical to the chapter's, so its run is reused)."""
    row = ROW_BY_LABEL[row_label]
    name, rp = REGIMES[regime]
    hp = row.params(P, regime, seed) if params is None else dict(params)
    if row.method == "lac":  # chapter 05's two-stage row, stage 1 included
        return lac_chapter.row_spec(P, LAC_ROW, seed, name, rp, method_params=hp)
    train = dict(opml_chapter.train_overrides(P, row.method))
    for key, value in row.train(P).items():  # a row's own network (BoostLU's head): over the profile's
        train[key] = dict(P.model_kwargs, **value) if key == "model_kwargs" else value
    return P.spec(row.method, hp, name, rp, seed=seed, **train)


def trial_params(P: Profile, row_label: str, regime: str, point: Mapping[str, Any]) -> Dict[str, Any]:
    """A trial's (or the kept trial's) hyperparameters: the row's defaults on the selection seed
    with ``point`` (what differs from the paper default, :func:`mlpl_lab.protocol.tuning.trial_points`)
    over them. The kept point runs with these on every fresh seed."""
    return dict(ROW_BY_LABEL[row_label].params(P, regime, tuner.selection_seed(P)), **point)


def stages(d: BenchmarkDesign, stored: Stored) -> List[tuner.Stage]:
    """The one tuning stage (:func:`mlpl_lab.protocol.tuning.stage`) over the cells, one stage per
    set of reported seeds (a cpu grid extended by named methods reports one seed outside its key
    cells): every cell but the untuned rows' is tuned under a tuned design (a row without a grid
    has one trial, its defaults), each on the budget's first grid points; the oracle, LAC and
    every cell of an untuned design run their defaults on the reported seeds."""
    P = d.profile
    tuned = set(d.tuned_cells())

    def make(cell, point, seed):
        reg, row = cell
        return spec_for(P, row, reg, seed, None if point is None else trial_params(P, row, reg, point))

    by_seeds: Dict[Tuple[int, ...], List[Tuple[str, str]]] = {}
    for cell in d.cells():
        by_seeds.setdefault(d.seeds[cell], []).append(cell)
    budget = tuner.trials_for(P)
    return [tuner.stage(make, {c: tuner.trial_points(c[1], budget) for c in cells if c in tuned},
                        [c for c in cells if c not in tuned], tuner.selection_seed(P), seeds, stored)
            for seeds, cells in by_seeds.items()]


def choices(d: BenchmarkDesign, stored: Stored) -> Tuple[Dict[Tuple[str, str], Dict[str, Any]],
                                                         Dict[Tuple[str, str], Optional[Dict[str, Any]]]]:
    """``(clean, observed)``: ``{(regime, row): hyperparameters}`` kept by tuning on clean
    validation, for every cell whose trials are stored, and what the same trials would keep on
    *observed* validation (:func:`mlpl_lab.protocol.tuning.choose_observed`; None where a trial did
    not record it) — what a practitioner without clean labels would have tuned to. The cells
    report the clean choice's fresh seeds."""
    clean, observed = {}, {}
    for st in stages(d, stored):
        for cell in st.chosen:
            clean[cell] = trial_params(d.profile, cell[1], cell[0], st.kept(cell))
            point = st.kept_observed(cell)
            observed[cell] = None if point is None else trial_params(d.profile, cell[1], cell[0], point)
    return clean, observed


def same_head_specs(d: BenchmarkDesign) -> Dict[str, List[RunSpec]]:
    """``{regime: [RunSpec]}``: chapter 05's AN row (AN with LAC's label-query head, stage-1
    schedule) in every regime with a LAC cell, on that cell's seeds (so the claim pairs all of
    them; chapter 05 trains the seeds its design shares). LAC's cell differs from AN's in the head
    and the schedule as well as the loss; this row has LAC's network, so the head's share of the
    gain drops out (LAC's second stage still adds epochs: chapter 05's equal-epochs control
    isolates those)."""
    P = d.profile
    lac = lac_chapter.design(P)
    out = {}
    for reg, rows in d.grid.items():
        if LABEL.lac in rows:
            name, rp = REGIMES[reg]
            out[reg] = [lac_chapter.row_spec(P, LAC_SAME_HEAD_AN, s, name, rp, lac)
                        for s in sorted(d.seeds[(reg, LABEL.lac)])]
    return out


#: the family of the length check (GR and AN at chapter 02's longer schedule, per regime)
LENGTH_CHECK = "length check"


def length_check_specs(d: BenchmarkDesign, cells: Mapping[Tuple[str, str], List[RunSpec]],
                       stored: Stored) -> Tuple[Families, Families]:
    """``(now, later)``: the length check of every regime whose GR cell has a run that did not
    converge. GR is schedule-bound (its targets move until the last epoch, Eq. 9–13), so the
    control is the same comparison at chapter 02's longer schedule
    (:func:`mlpl_lab.chapters.gr.length_check_epochs`): GR's and AN's cell specs with only their
    epochs changed. Under uniform single positive these are chapter 02's own length-check runs.
    A regime whose GR runs are not all stored yet waits in ``later`` (counted by a plan, trained
    only if one of them does not converge). Family :data:`LENGTH_CHECK`: ``{"GR · <regime>": [...],
    "AN · <regime>": [...]}``."""
    epochs = gr_chapter.length_check_epochs(d.profile)
    now: Families = {}
    later: Families = {}
    for reg, rows in d.grid.items():
        if LABEL.gr not in rows or AN not in rows or (reg, LABEL.gr) not in cells or (reg, AN) not in cells:
            continue
        got = [stored(s) for s in cells[(reg, LABEL.gr)]]
        pair = {f"GR · {reg}": gr_chapter.lengthen(cells[(reg, LABEL.gr)], epochs),
                f"AN · {reg}": gr_chapter.lengthen(cells[(reg, AN)], epochs)}
        if any(r is None for r in got):
            later.setdefault(LENGTH_CHECK, {}).update(pair)
        elif any(getattr(r, "converged", True) is False for r in got):
            now.setdefault(LENGTH_CHECK, {}).update(pair)
    return now, later


def family_spec(P: Profile, row_label: str, family: str, seed: int, params: Mapping[str, Any]) -> RunSpec:
    """One row's run on a scene family (:data:`SCENE_FAMILIES`) under :data:`FAMILY_REGIME`: the
    cell's spec (same hyperparameters, training and seed) on the family's scenes."""
    row = ROW_BY_LABEL[row_label]
    if row.method == "lac":
        raise ValueError("LAC is not in the scene families' block (its own head and two stages)")
    name, rp = REGIMES[FAMILY_REGIME]
    train = dict(opml_chapter.train_overrides(P, row.method))
    for key, value in row.train(P).items():
        train[key] = dict(P.model_kwargs, **value) if key == "model_kwargs" else value
    return P.spec(row.method, dict(params), name, rp, seed=seed, scene=dict(SCENE_FAMILIES[family]), **train)


def family_specs(d: BenchmarkDesign, cells: Mapping[Tuple[str, str], List[RunSpec]]) -> Families:
    """The scene families' runs (pending: :attr:`mlpl_lab.protocol.asked.Asked.pending`), family
    ``pending_name(FAMILIES, family)`` per scene family: ``{"<row> · <family>": [RunSpec per family
    seed]}`` for every family but the
    default one (whose runs are the single-positive cells) and every row of the block, each with the
    hyperparameters of its default-family cell (``cells``: decided or stand-in specs), so no family
    is tuned again. The oracle, which is not ranked and only checks the family's full-label → AN
    gap, runs on the first family seed alone (the gap is paired on that seed)."""
    out: Families = {}
    for row in d.family_rows:
        cell = cells.get((FAMILY_REGIME, row))
        if not cell:
            continue
        params = cell[0].method_params
        for family in d.scenes:
            if family == "default":
                continue
            seeds = d.family_seeds[:1] if row == ORACLE else d.family_seeds
            out.setdefault(pending_name(FAMILIES, family), {})[f"{row} · {family}"] = [
                family_spec(d.profile, row, family, s, params) for s in seeds]
    return out


def check_epochs(epochs: int) -> int:
    """A length check's epochs for a run of ``epochs``: 4/3 of them, at least one more (GR's rule,
    :func:`mlpl_lab.chapters.gr.length_check_epochs`)."""
    return gr_chapter.lengthened_epochs(epochs)


def bound_check_specs(d: BenchmarkDesign, cells: Mapping[Tuple[str, str], List[RunSpec]],
                      stored: Stored) -> Families:
    """The length checks of the schedule-bound rows other than GR (their registry entry's flag:
    LL-R/LL-Ct/LL-Cp and their BoostLU rows, EM+APL, OPML-SP), as GR has its own: the row's and AN's
    cell specs with only their epochs lengthened by 4/3 (:func:`check_epochs`), in every regime where
    a run of the row did not converge — or whose runs are not all stored yet (counted by a plan).
    Pending runs, one pending family per row (``pending_name(BOUND_CHECK, row)``: ``{"<row> ·
    <regime>": [...], "AN for <row> · <regime>": [...]}``): trained by the cold series, not by a
    notebook."""
    from ..methods.registry import is_schedule_bound

    out: Families = {}
    for reg, rows in d.grid.items():
        if AN not in rows or (reg, AN) not in cells:
            continue
        for row in rows:
            specs_ = cells.get((reg, row))
            if row in (LABEL.gr, AN) + REFERENCE_ROWS or not specs_:
                continue
            if not is_schedule_bound(specs_[0].method, specs_[0].method_params):
                continue
            got = [stored(s) for s in specs_]
            if all(r is not None for r in got) and not any(getattr(r, "converged", True) is False for r in got):
                continue
            epochs = check_epochs(specs_[0].train.get("epochs", d.profile.epochs))
            fam = out.setdefault(pending_name(BOUND_CHECK, row), {})
            fam[f"{row} · {reg}"] = gr_chapter.lengthen(specs_, epochs)
            fam[f"AN for {row} · {reg}"] = gr_chapter.lengthen(cells[(reg, AN)], epochs)
    return out


def specs(d: BenchmarkDesign, stored: Stored) -> Asked:
    """Every run the benchmark asks for (pure): the tuning trials on the selection seed (tuned
    designs), each cell on its reported seeds — a tuned cell under the trial chosen on validation
    once its trials are stored (until then in ``later`` under the paper default, the stand-in) —
    LAC's own-head AN (:func:`same_head_specs`) and the length check where a GR run did not
    converge (:func:`length_check_specs`). Families: :data:`TRIALS`, one per regime (``{row:
    [runs]}``), :data:`SAME_HEAD_LABEL` (``{regime: [runs]}``) and :data:`LENGTH_CHECK`."""
    decided = stages(d, stored)
    trials = {f"{row} · {reg} · trial {i + 1}": [spec] for st in decided
              for (reg, row), ss in st.trials.items() for i, spec in enumerate(ss)}
    now: Families = {TRIALS: trials} if trials else {}
    later: Families = {}
    for st in decided:
        for (reg, row), ss in st.fresh.items():
            now.setdefault(reg, {})[row] = ss
        for (reg, row), ss in st.later.items():
            later.setdefault(reg, {})[row] = ss
    same_head = same_head_specs(d)
    if same_head:
        now[SAME_HEAD_LABEL] = same_head
    decided_cells = {cell: ss for st in decided for cell, ss in st.fresh.items()}
    length_now, length_later = length_check_specs(d, decided_cells, stored)
    now.update(length_now)
    later.update(length_later)
    # designed, not trained by the notebook: the scene families (under the default family's choices,
    # stand-ins while undecided) and the other schedule-bound rows' length checks
    any_cells = {cell: ss for st in decided for cell, ss in list(st.later.items()) + list(st.fresh.items())}
    pending: Families = {}
    pending.update(family_specs(d, any_cells))
    pending.update(bound_check_specs(d, any_cells, stored))
    return Asked(now=now, later=later, pending=pending)


@dataclass
class BenchmarkRuns:
    """What :func:`results` returns: the design, ``results`` (``{regime: {row: [stored runs]}}``, the
    reported seeds), ``same_head`` (``{regime: [stored runs]}``, :func:`same_head_specs`) and
    ``chosen`` (``{(regime, row): hyperparameters}`` kept by tuning; empty untuned),
    ``chosen_observed`` (what observed validation would have kept: :func:`choices`) and
    ``length`` (``{regime: {"GR": runs, "AN": runs}}`` at the longer schedule: :func:`length_check_specs`)."""

    design: BenchmarkDesign
    results: Dict[str, Dict[str, list]]
    same_head: Dict[str, list]
    chosen: Dict[Tuple[str, str], Dict[str, Any]]
    chosen_observed: Dict[Tuple[str, str], Optional[Dict[str, Any]]] = field(default_factory=dict)
    length: Dict[str, Dict[str, list]] = field(default_factory=dict)
    #: ``{family: {row: runs}}`` of the scene families whose runs are stored (the default family:
    #: the single-positive cells on the family seeds)
    families: Dict[str, Dict[str, list]] = field(default_factory=dict)
    #: ``{regime: {row: {"method": runs, "AN": runs}}}``: the stored length checks of the other
    #: schedule-bound rows (:func:`bound_check_specs`)
    bound_length: Dict[str, Dict[str, Dict[str, list]]] = field(default_factory=dict)
    #: ``{family: {label: runs missing}}`` of the pending runs not stored (:func:`waiting`)
    waiting: Dict[str, Dict[str, int]] = field(default_factory=dict)


def waiting(d: BenchmarkDesign, store=None) -> Dict[str, Dict[str, int]]:
    """``{family: {label: runs}}`` of the pending runs (:func:`specs`) the store lacks: what the
    chapter's claims on scene families and schedule-bound controls wait for (read-only)."""
    from ..protocol.asked import pending_missing, store_lookup

    stored = store_lookup(store)
    return pending_missing(specs(d, stored), stored)



def results(d: BenchmarkDesign, runs: Runs) -> BenchmarkRuns:
    """:class:`BenchmarkRuns` from the runs of ``ensure_asked(specs, d)``: the reported cells,
    LAC's own-head AN and the tuning choices (re-decided from the trial runs themselves, as
    chapter 02's)."""
    cells = {reg: {row: runs[reg][row] for row in rows} for reg, rows in d.grid.items() if rows}
    assert d.selection_seed is None or all(r.spec.seed != d.selection_seed for cell in cells.values()
                                           for rs in cell.values() for r in rs), "a selection seed is reported"
    trial = {r.spec.key: r for rs in runs.get(TRIALS, {}).values() for r in rs}

    def stored(spec):
        return trial.get(spec.key)

    length: Dict[str, Dict[str, list]] = {}
    for label, rs in runs.get(LENGTH_CHECK, {}).items():
        row, reg = label.split(" · ", 1)
        length.setdefault(reg, {})[row] = rs
    families: Dict[str, Dict[str, list]] = {}
    if d.scenes and FAMILY_REGIME in cells:
        seeds = set(d.family_seeds)
        default = {row: [r for r in cells[FAMILY_REGIME][row] if int(r.spec.seed) in seeds]
                   for row in d.family_rows if row in cells[FAMILY_REGIME]}
        families["default"] = default
        for label, rs in merged(runs, FAMILIES).items():
            row, family = label.split(" · ", 1)
            families.setdefault(family, {})[row] = rs
    bound: Dict[str, Dict[str, Dict[str, list]]] = {}
    checks = merged(runs, BOUND_CHECK)
    for label, rs in checks.items():
        if label.startswith("AN for "):
            continue
        row, reg = label.split(" · ", 1)
        an = checks.get(f"AN for {label}")
        if an:
            bound.setdefault(reg, {})[row] = {"method": rs, LABEL.an: an}
    return BenchmarkRuns(d, cells, runs.get(SAME_HEAD_LABEL, {}), *choices(d, stored), length, families, bound,
                         waiting(d))


def left_out(design: BenchmarkDesign) -> List[str]:
    """Cells of the full grid (every row where it applies × every regime, 3 or more seeds) not run."""
    out = []
    for reg in REGIMES:
        if reg not in design.grid:
            out.append(f"{reg}: every method")
            continue
        missing = [r.label for r in ROWS if r.applies(reg) and r.label not in design.grid[reg]]
        if missing:
            out.append(f"{reg}: {', '.join(missing)}")
    few = sorted({row for (reg, row), s in design.seeds.items() if len(s) < 3})
    if few:
        out.append(f"fewer than 3 seeds: {', '.join(few)} (cells with one seed show no interval; "
                   f"their claims are observations)")
    return out


def left_out_of_02(profile) -> str:
    """Which Table 2 rows chapter 02 leaves out under ``profile`` (:func:`mlpl_lab.chapters.gr.left_out`),
    and which of them this benchmark trains under the same profile (its design's rows) — the line 02
    prints under its zoo."""
    P = as_profile(profile)
    out = gr_chapter.left_out(P)
    if not out:
        return f"This chapter trains every Table 2 row under the {P.name} profile."
    in_07 = {row for _, row in design(P).cells()}
    there = [m for m in out if m in in_07]
    text = f"Table 2 rows this chapter leaves out under the {P.name} profile: {', '.join(out)}"
    if there:
        which = "them" if there == out else ", ".join(there)
        text += f"; chapter 07's benchmark trains {which} under the same profile, on the same protocol, and reports them there"
    return text + "."


def regimes_markdown(d: "BenchmarkDesign") -> str:
    """The columns the design's tables have, each with what it observes (:func:`regime_definition`),
    and the regimes of the lab this design leaves out."""
    lines = [f"**The regimes** — this design's {len(d.grid)} column(s), each its own draw of labels on the "
             "same scenes:", ""]
    lines += [f"* *{r}*: {regime_definition(r)}." for r in d.grid]
    out = [r for r in REGIMES if r not in d.grid]
    if out:
        lines += ["", f"The lab's other regimes ({', '.join(out)}) are not columns of this design; "
                  "`regimes = [...]` in the parameters cell adds them (chapter 00 defines each)."]
    return "\n".join(lines)


def seeds_text(d: "BenchmarkDesign") -> str:
    """The seeds the design's cells report (every table and claim) and the seed its tuning selects
    on, for the header and the protocol table."""
    return tuner.seeds_text({s for c in d.cells() for s in d.seeds[c]}, d.selection_seed)


def protocol(profile, d: Optional["BenchmarkDesign"] = None) -> Dict[str, Any]:
    """The protocol of every cell, read from the profile and the design (default: the profile's
    own, :func:`design`) — what the notebook states at the top."""
    from ..analysis.display import value_text

    P = as_profile(profile)
    d = design(P) if d is None else d
    opml_epochs = opml_chapter.train_overrides(P, "opml_sp").get("epochs")
    data = (f"embedded scenes, {P.n_train} train / {P.n_val} val / {P.n_test} test, {P.image_size} px "
            f"({P.glyphs})" if P.dataset == "scenes" else
            f"{P.dataset} from {P.data_root} ({P.data_layout} layout), Cole et al.'s split, "
            f"{P.image_size} px, ImageNet normalisation")
    return {"data": data,
            "splits and label draws": "seed s draws the split, the observed labels and the initialisation",
            "backbone": f"{P.model}" + (f" ({value_text(P.model_kwargs)})" if P.model_kwargs else ""),
            "training": f"{P.epochs} epochs, batch {P.batch_size}, Adam lr {P.lr}, {P.lr_schedule} LR"
                        + (", AMP" if P.amp else "")
                        + (f"; the OPML rows {opml_epochs} epochs (chapter 03's schedule)"
                           if opml_epochs else ""),
            "hyperparameters": "each method's paper defaults (the chapters' choices)",
            "selection": "test mAP at the epoch with the best clean-validation mAP",
            "seeds": seeds_text(d)}


REGIME_RANKS_NOTE = ("description only: the label regimes of one data set share its images, test set, seeds "
                     "and backbone, so they are not the independent data sets a rank test needs (Demšar 2006); "
                     "no p and no critical difference over them (section 3's scene families give the test)")


def tables(results) -> Dict[str, Any]:
    """Every table of the chapter, as DataFrames keyed by their CSV name (``_``-prefixed
    entries are for the notebook only)."""
    import pandas as pd

    regimes = [r for r in REGIMES if r in results]
    rows = [r.label for r in ROWS if any(r.label in results[reg] for reg in regimes)]
    # a row added from a method file (mlpl-lab benchmark --add) after the course's rows
    rows += list(dict.fromkeys(m for reg in regimes for m in results[reg] if m not in ROW_BY_LABEL))
    out: Dict[str, Any] = {}
    cells = {}
    for metric, name in (("test_mAP", "mAP"), ("test_CF1", "CF1"), ("test_OF1", "OF1")):
        cells[name] = bm.cell_frame(results, metric)
        out[name] = bm.formatted(cells[name], rows, regimes)
        out[name + "_mean"] = bm.wide(cells[name], "mean", rows, regimes)
        out[name + "_ci95"] = bm.wide(cells[name], "ci95", rows, regimes)
        out["_" + name + "_bold"] = bm.paired_best(results, metric, REFERENCE_ROWS)
    out["seeds"] = bm.wide(cells["mAP"], "seeds", rows, regimes)
    out["converged"] = bm.wide(cells["mAP"], "converged", rows, regimes)
    rank = bm.rank_summary(cells["mAP"], exclude=REFERENCE_ROWS)
    out["ranks"] = rank["table"]
    out["regime_ranks"] = rank["ranks"].reindex(columns=[r for r in regimes if r in rank["regimes"]])
    out["ranks_left_out"] = pd.DataFrame({"left out of the ranks": rank["left_out"]}, dtype=object)
    fr = rank["friedman"]
    out["friedman"] = pd.DataFrame([{
        "methods (k)": fr["k"], "regimes (N)": fr["N"], "regimes": ", ".join(rank["regimes"]),
        "note": (fr["reason"] + "; " if fr["reason"] and "at least" in fr["reason"] else "") + REGIME_RANKS_NOTE}],
        index=["ranks"])
    gaps = bm.gap_closed(results, AN, ORACLE)
    out["gap_closed"] = bm.gap_formatted(gaps, rows, regimes)
    for col in ("estimate", "lo", "hi"):
        out["gap_closed_" + col] = gaps.pivot(index="method", columns="regime", values=col).reindex(
            index=[r for r in rows if r in set(gaps.method)], columns=[r for r in regimes if r in set(gaps.regime)])
    cost = bm.cost_table(results, AN).reindex(index=rows)
    # beside the ranks: what each method's place costs (the compared block's mean rank and mAP)
    block = block_mean(out["mAP_mean"], rank)
    cost.insert(0, "mean rank", rank["table"]["mean_rank"].reindex(rows))
    cost.insert(1, "block mAP", block.reindex(rows))
    out["cost"] = cost
    out["_cells"] = cells["mAP"]
    out["_rank"] = rank
    out["_gaps"] = gaps
    return out


def block_mean(mean, rank):
    """Each ranked method's mean mAP over the regimes of the compared block (absent outside it)."""
    return mean.loc[list(rank["methods"]), list(rank["regimes"])].mean(axis=1)


def per_class(results, cells, profile, regime: str = "single positive", k: int = 3):
    """``(top, gain)``: per-class AP gain over AN of the ``k`` best methods under ``regime``
    (rows = classes), with each class's share of the training images of the first seed
    (``train_frequency``) — which classes gain, frequent or rare."""
    P = as_profile(profile)
    top = bm.top_methods(cells, regime, k, exclude=REFERENCE_ROWS + (AN,))
    gain = bm.per_class_gain(results, regime, top, AN)
    name, params = REGIMES[regime]
    splits = splits_for(P, name, params, P.seeds[0])
    gain.insert(0, "train_frequency", splits.train.labels.float().mean(0).numpy())
    gain.index = list(splits.class_names)
    return top, gain


def rare_vs_frequent(gain):
    """Mean gain per method over the rarer half of the classes and over the more frequent half."""
    import pandas as pd

    order = gain.sort_values("train_frequency").index
    half = len(order) // 2
    methods = [c for c in gain.columns if c != "train_frequency"]
    return pd.DataFrame({"rarer half": gain.loc[order[:half], methods].mean(),
                         "more frequent half": gain.loc[order[half:], methods].mean()})


def rows_table():
    """Every row: its registered method, chapter, where it applies and where it leaves the protocol."""
    import pandas as pd

    return pd.DataFrame([{"method": r.label, "registered as": r.method, "chapter": r.chapter,
                          "applies to": "every regime" if r.regimes is None else ", ".join(r.regimes),
                          "note": r.note} for r in ROWS]).set_index("method")


def write_csv(tabs: Mapping[str, Any], out_dir, prefix: str = "07_benchmark") -> List[Path]:
    """Write every table next to the HTML: ``<prefix>_<name>.csv``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, t in tabs.items():
        if name.startswith("_"):
            continue
        p = out / f"{prefix}_{name}.csv"
        t.to_csv(p)
        paths.append(p)
    return paths


def _num(v):
    """A number for a record: rounded, NaN becomes None."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return None if not math.isfinite(v) else round(float(v), 4)
    return v


def _clean(d) -> Dict[str, Any]:
    return {str(k): _num(v) for k, v in d.items()}


def records(design: BenchmarkDesign, tabs, chosen, chosen_obs=None, runs: "BenchmarkRuns | None" = None
            ) -> Dict[str, Any]:
    """What the notebook records (numbers stay numbers; NaN becomes None); ``chosen_obs``:
    :attr:`BenchmarkRuns.chosen_observed`; ``runs`` (:class:`BenchmarkRuns`): its every run is
    keyed in ``benchmark_convergence``'s run-keyed twin (the cells, LAC's own-head AN, the length
    checks and the scene families), so the protocol counts distinct runs."""
    from ..analysis.tables import RunFlags, run_convergence

    conv = bm.convergence_record(tabs["_cells"])
    if runs is not None:
        conv = RunFlags(conv, run_convergence(runs.results, runs.same_head, runs.length, runs.families,
                                              runs.bound_length))
    def by_row(t):
        return {m: _clean(t.loc[m].to_dict()) for m in t.index}

    rank, fr, cost = tabs["_rank"], tabs["_rank"]["friedman"], tabs["cost"]
    return {"design": design.describe(),
            "mAP": by_row(tabs["mAP_mean"]), "ci95": by_row(tabs["mAP_ci95"]),
            "CF1": by_row(tabs["CF1_mean"]), "OF1": by_row(tabs["OF1_mean"]),
            "mean_rank": _clean(tabs["ranks"]["mean_rank"].to_dict()),
            # over label regimes: description only (no χ², p or CD; REGIME_RANKS_NOTE)
            "ranks": {"methods": list(rank["methods"]), "regimes": list(rank["regimes"]),
                      "left_out": dict(rank["left_out"]), "friedman_chi2": None,
                      "friedman_p": None, "cd": None,
                      "reason": fr["reason"] if "at least" in (fr["reason"] or "") else REGIME_RANKS_NOTE},
            "gap_closed": by_row(tabs["gap_closed_estimate"]),
            "gap_closed_detail": {f"{g.method} · {g.regime}": {
                "estimate": _num(g.estimate), "ci95": [_num(g.lo), _num(g.hi)],
                "seeds": [int(x) for x in g.seeds], "reason": g.reason}
                for g in tabs["_gaps"].itertuples()},
            "benchmark_convergence": conv,
            "seconds_vs_AN": _clean(cost["seconds_vs_AN"].to_dict()) if "seconds_vs_AN" in cost else {},
            "memory_vs_AN": _clean(cost["memory_vs_AN"].to_dict()) if "memory_vs_AN" in cost else {},
            "tuned": {f"{reg} · {row}": hp for (reg, row), hp in chosen.items()},
            "tuned_observed": {f"{reg} · {row}": hp for (reg, row), hp in (chosen_obs or {}).items()},
            "selection_seed": design.selection_seed,
            "left_out": left_out(design)}


#: each paper's headline claim against AN (single positive unless said), for the claims table:
#: the catalogue entries' claims
PAPER_CLAIMS: Dict[str, str] = catalogue.paper_claims()


SAME_HEAD_PAPER = f"{cite('lac')}, Table 3: VOC 89.6 vs 87.6, COCO 75.6 vs 72.3 (AN with LAC's head)"


#: the note of a schedule-bound claim whose control is not trained yet
CONTROL_WAITS = "schedule-bound; its length check (the control) waits for runs not trained yet"


def claims(results, same_head: Mapping[str, list] | None = None,
           length: Mapping[str, Mapping[str, list]] | None = None,
           bound_length: Mapping[str, Mapping[str, Mapping[str, list]]] | None = None, *,
           design: BenchmarkDesign):
    """"<method> beats AN under <regime>" for every paper claim and every regime where both ran,
    in the families ``design`` declares (:attr:`BenchmarkDesign.families`: one per regime).
    With ``same_head`` (:attr:`BenchmarkRuns.same_head`, :func:`same_head_specs`) LAC is also
    compared with AN trained on its own network, which separates the method's gain from the
    head's. With ``length`` (:attr:`BenchmarkRuns.length`) a regime whose GR runs did not all
    converge gets GR against AN at the longer schedule too, a control of its "GR beats AN" claim,
    which says whether that control agrees (GR is schedule-bound:
    :func:`mlpl_lab.analysis.claims.mark_schedule_bound`). The other schedule-bound rows (their
    registry flag: LL-R, EM+APL, OPML-SP, ...) get the same control from ``bound_length``
    (:attr:`BenchmarkRuns.bound_length`) where it is stored; where it is not, their claim on a
    schedule-bound cell says that its control waits (:data:`CONTROL_WAITS`). Last, whether clean
    validation flatters the methods, pooled per regime (:func:`selection_claims`)."""
    fam = design.families
    rows, notes = [], {}
    for regime, methods in results.items():
        if AN not in methods:
            continue
        for label, paper in PAPER_CLAIMS.items():
            if label in methods:
                rows.append(Claim(f"{label} beats AN under {regime}", paper, label, AN,
                                  methods[label], methods[AN], family=fam[beats_an_family(regime)]))
        if LABEL.lac in methods and same_head and regime in same_head:
            rows.append(Claim(f"LAC beats AN with LAC's own head under {regime}", SAME_HEAD_PAPER,
                              LABEL.lac, SAME_HEAD_LABEL, methods[LABEL.lac], same_head[regime],
                              family=fam[SAME_HEAD_FAMILY]))
        check = (length or {}).get(regime)
        if LABEL.gr in methods and check and bm.convergence_mark(methods[LABEL.gr]) == "schedule-bound":
            epochs = check[LABEL.gr][0].spec.train["epochs"]
            name = f"GR beats AN with both trained {epochs} epochs under {regime} (length check)"
            rows.append(Claim(name, "the same comparison at a longer schedule (GR is schedule-bound)",
                              f"GR ({epochs} ep.)", f"AN ({epochs} ep.)", check[LABEL.gr], check[AN],
                              control_of=f"GR beats AN under {regime}"))
            notes[f"GR beats AN under {regime}"] = name
        for label in PAPER_CLAIMS:
            if label == LABEL.gr or label not in methods or bm.convergence_mark(methods[label]) != "schedule-bound":
                continue
            ctl = (bound_length or {}).get(regime, {}).get(label)
            if ctl:
                epochs = ctl["method"][0].spec.train["epochs"]
                name = f"{label} beats AN with both trained {epochs} epochs under {regime} (length check)"
                rows.append(Claim(name, f"the same comparison at a longer schedule ({label} is schedule-bound)",
                                  f"{label} ({epochs} ep.)", f"AN ({epochs} ep.)", ctl["method"], ctl[LABEL.an],
                                  control_of=f"{label} beats AN under {regime}"))
                notes[f"{label} beats AN under {regime}"] = name
            else:
                notes[f"{label} beats AN under {regime}"] = None
    if FLATTERS_FAMILY in fam:
        rows += selection_claims(results, fam[FLATTERS_FAMILY])
    table = claims_table(rows)
    return mark_schedule_bound(table, {claim: CONTROL_WAITS if check is None else
                                       gr_chapter.length_check_note(table, claim, check)
                                       for claim, check in notes.items()})


def summary(table) -> str:
    """What the benchmark's claims found, as a few computed lines of Markdown (the claims table
    :func:`claims` holds every row): per family, how many of its m claims hold, which do not and
    why; the controls; the verdicts at risk."""
    from ..analysis.claims import HOLDS

    lines = [f"**What the benchmark found** ({len(table)} claims in "
             f"{table['_family'].nunique()} families and controls; every number below is computed "
             "from the claims table above):", ""]
    for fam, part in table.groupby("_family", sort=False):
        if part["_control_of"].notna().any():
            continue
        m = int(part["_m"].iloc[0])
        held = [c for c, v in part["verdict"].items() if v == HOLDS]
        rest = [f"{c} ({v}: {part.at[c, 'reason'] or 'the interval lies below 0'})"
                for c, v in part["verdict"].items() if v != HOLDS]
        lines.append(f"* *{fam}* (m = {m}): {len(held)} of {len(part)} hold"
                     + (f"; not: {'; '.join(rest)}" if rest else ""))
    controls = table[table["_control_of"].notna()]
    for c, row in controls.iterrows():
        lines.append(f"* control of *{row['_control_of']}*: {c} — {row['verdict']} ({row[CI_FAMILY]})")
    risky = [c for c, r in table["_at_risk"].items() if bool(r)]
    if risky:
        lines.append(f"* ⚠ at risk ({len(risky)}): the losing side did not converge in " + "; ".join(risky))
    return "\n".join(lines)


def selection_claims(results, family: Family | None = None) -> List[Claim]:
    """Does clean validation flatter the methods? One pooled claim per regime, "clean validation
    flatters the methods under <regime>": per seed, the test mAP at the clean-validation epoch
    and at the observed-validation epoch, each averaged over the regime's methods (the oracle
    left out) that recorded both on that seed's whole set, then paired by seed
    (:func:`mlpl_lab.analysis.selection.by_seed_selected`). A regime whose runs recorded no
    observed-validation score adds none; the per-cell differences are the exploratory table
    (:func:`selection_frame`)."""
    from ..analysis.selection import CLEAN, OBSERVED, by_seed_selected

    out = []
    for regime, methods in results.items():
        cells = {}
        for label, runs in methods.items():
            observed = by_seed_selected(runs, OBSERVED)
            if label in REFERENCE_ROWS or not observed:
                continue
            clean = by_seed_selected(runs, CLEAN)
            cells[label] = (clean, observed, runs)
        if not cells:
            continue
        seeds = sorted(set.intersection(*(set(c) & set(o) for c, o, _ in cells.values())))
        if not seeds:
            continue
        clean = {s: float(np.mean([c[s] for c, _, _ in cells.values()])) for s in seeds}
        observed = {s: float(np.mean([o[s] for _, o, _ in cells.values()])) for s in seeds}
        out.append(Claim.of_values(
            f"clean validation flatters the methods under {regime}",
            "Cole et al. report both variants (clean and observed validation)",
            f"clean val ({len(cells)} methods)", f"observed val ({len(cells)} methods)", clean, observed,
            runs={label: runs for label, (_, _, runs) in cells.items()}, family=family))
    return out


def selection_frame(results):
    """Per cell with observed-label validation recorded: test mAP (mean over seeds) at the best
    clean-validation epoch and at the best observed-validation epoch, their difference with the
    half-width of its paired 95 % t-interval (the claim's interval, ``analysis.claims.paired``; NaN
    below 2 seeds or at zero spread), the seeds with both, and on how many of them the two criteria
    keep different epochs. Empty when no run recorded ``val_obs_mAP`` (the runs of the shipped pack
    predate it)."""
    import math

    import pandas as pd

    from ..analysis.claims import paired
    from ..analysis.selection import CLEAN, HALF, OBSERVED, best_epoch_by, by_seed_selected

    rows = []
    for regime, methods in results.items():
        for label, runs in methods.items():
            observed = by_seed_selected(runs, OBSERVED)
            if label in REFERENCE_ROWS or not observed:
                continue
            clean = {s: v for s, v in by_seed_selected(runs, CLEAN).items() if s in observed}
            moved = sum(best_epoch_by(r.history, OBSERVED) != r.best_epoch for r in runs
                        if int(r.spec.seed) in observed)
            c, o = sum(clean.values()) / len(clean), sum(observed.values()) / len(observed)
            pair = paired(clean, observed)
            half = (pair["hi"] - pair["lo"]) / 2 if math.isfinite(pair["hi"]) else math.nan
            rows.append({"regime": regime, "method": label, "clean val": c, "observed val": o,
                         "difference": c - o, HALF: half, "seeds": len(observed), "other epoch": moved})
    return pd.DataFrame(rows, columns=["regime", "method", "clean val", "observed val", "difference",
                                       HALF, "seeds", "other epoch"])


# --- what the notebook shows (the one table style, mlpl_lab.analysis.display) ------------------

def protocol_view(profile, d: Optional["BenchmarkDesign"] = None):
    """:func:`protocol` as a one-column table."""
    import pandas as pd

    from ..analysis.display import styled

    return styled(pd.Series(protocol(profile, d), name="every cell").to_frame(),
                  "The protocol every cell of the benchmark follows, read from the profile.", best=False)


def rows_view():
    """:func:`rows_table` with its caption, one row per chapter (every row at once reads as a wall): the
    chapter's methods (registered names in brackets), where they apply, and the notes of those
    that leave the protocol."""
    import pandas as pd

    from ..analysis.display import styled

    t = rows_table()
    grouped = {}
    for chapter, part in t.groupby("chapter", sort=True):
        grouped[chapter] = {
            "methods (registered as)": ", ".join(f"{m} ({r})" for m, r in part["registered as"].items()),
            "applies to": "; ".join(f"{m}: {a}" for m, a in part["applies to"].items() if a != "every regime")
                          or "every regime",
            "notes": "; ".join(f"{m}: {n}" for m, n in part["note"].items() if n) or "—"}
    frame = pd.DataFrame.from_dict(grouped, orient="index")
    frame.index.name = "chapter"
    return styled(frame, f"The {len(t)} rows of the benchmark by the chapter that teaches them: each method "
                  "with its registered name, the regimes it applies to (every regime unless named) and "
                  "where it leaves the protocol.", best=False)


METRIC_WHAT = {"mAP": "Test mAP (%)", "CF1": "Test CF1 (per-class F1 at 0.5, %)",
               "OF1": "Test OF1 (overall F1 at 0.5, %)"}


def metric_view(tabs: Mapping[str, Any], metric: str = "mAP"):
    """One metric of :func:`tables` as the notebook shows it: rows = methods, columns = regimes,
    mean ± 95 % interval (seeds) with † where a run did not converge; in bold, the best method of
    each regime and every method the paired test does not separate from it
    (:func:`mlpl_lab.analysis.benchmark.paired_best`; the full-label oracle left out)."""
    from ..analysis.display import caption, styled

    mean = tabs[f"{metric}_mean"]
    unconv = tabs["converged"].reindex(index=mean.index, columns=mean.columns).map(bm.unconverged_mark)
    ref = [r for r in REFERENCE_ROWS if r in mean.index]
    bold = tabs.get(f"_{metric}_bold")
    cap = caption(f"{METRIC_WHAT.get(metric, metric)} at each run's best clean-validation epoch, per regime",
                  bold=None if bold is not None else "column", reference=ref,
                  note="— the method does not run in that regime")
    if bold is not None:
        bold = bold.reindex(index=mean.index, columns=mean.columns).fillna(False).astype(bool)
        cap += (" Bold: the best mean of each regime and every method the paired test does not separate from "
                "it (the 95 % paired t-interval of the difference, seed by seed, contains 0, or fewer than 3 "
                f"seeds pair; unadjusted: the claims decide; {', '.join(ref) or 'no row'} left out).")
    return styled(mean, cap, percent=True, half=tabs[f"{metric}_ci95"], seeds=tabs["seeds"], unconverged=unconv,
                  reference=ref, bold=bold)


def convergence_view(rec: Mapping[str, Any]):
    """``records(...)["benchmark_convergence"]`` as a ✓ / ✗ grid: rows = methods, columns = regimes."""
    from ..analysis.display import flags_table

    return flags_table(rec, "Did every run of the cell converge (criterion of mlpl_lab.core.convergence)? ✓ yes, "
                       "✗ no (the cell carries a † in the tables above), 'schedule-bound': the runs that did not "
                       "are schedule-bound (§; section 8's length check is their control), — unknown.")


def selection_view(results):
    """:func:`selection_frame` as the notebook shows it, or a sentence saying why it is empty."""
    from IPython.display import Markdown

    from ..analysis.display import styled
    from ..analysis.selection import HALF, unscored

    frame = selection_frame(results)
    cells = [(regime, label) for regime, methods in results.items() for label, runs in methods.items()
             if label not in REFERENCE_ROWS and unscored(runs)]
    missing = sum(unscored(results[r][m]) for r, m in cells)
    waiting = (f"{len(cells)} cell(s) ({missing} runs) recorded the observed-label validation mAP every "
               "epoch but scored the test set only at the clean-best epoch: they were made before the "
               "engine also scored it at the epoch the observed labels pick. Pairing only the seeds where "
               "both criteria keep the same epoch would show a difference of zero by construction, so "
               "those cells wait for runs made since (the next series, or a run of your own).")
    if frame.empty:
        if cells:
            return Markdown(f"No cell can be compared yet: {waiting}")
        return Markdown("No run here recorded the observed-label validation mAP (`val_obs_mAP`): these runs "
                        "were trained before the engine scored it, so this comparison waits for runs trained "
                        "since (the next series, or a run of your own).")
    frame = frame.set_index(["regime", "method"])
    half = frame[[HALF]].rename(columns={HALF: "difference"})
    return styled(frame.drop(columns=[HALF]),
                  "Model selection without clean labels: test mAP (%) at the epoch the clean validation "
                  "labels pick and at the epoch the observed validation labels pick (the run's regime "
                  "on the validation split, unknown counted as negative), mean over seeds; 'difference': "
                  "clean minus observed ± the half-width of its paired 95 % t-interval, unadjusted. "
                  "Exploratory: one cell at a time, these intervals decide nothing (the question is "
                  "answered once per regime, pooled over the methods, in the claims of section 8); "
                  "'other epoch': seeds on which the two keep different epochs." + (f" Left out: {waiting}" if cells else ""),
                  half=half, counts=["seeds", "other epoch"], best=False)


def friedman_view(tabs: Mapping[str, Any]):
    """The block ranked over the regimes (description only: no test), with the methods left out of
    it in the caption."""
    from ..analysis.display import styled

    left = tabs["ranks_left_out"]
    out = ("; ".join(f"{m}: {why}" for m, why in left.iloc[:, 0].items()) if len(left)
           else "no method left out")
    return styled(tabs["friedman"], f"The ranks over the label regimes: methods (k) and regimes (N) compared, "
                  f"description only (the note says why). Left out of the ranks: {out}.",
                  counts=["methods (k)", "regimes (N)"], best=False)


def gap_view(tabs: Mapping[str, Any]):
    """The share of the AN → oracle gap each method closes (text cells: estimate [95 % bootstrap
    interval] (seeds), or — with the reason)."""
    from ..analysis.display import styled

    return styled(tabs["gap_closed"], "Share of the AN → oracle gap each method closes per regime (0: no better "
                  "than AN, 1: as good as full labels): the ratio of mean gains over the seeds the method, AN "
                  "and the oracle share, its 95 % percentile-bootstrap interval and those seeds; — with the "
                  "reason where it is not defined.", best=False)


def rare_view(gain):
    """:func:`rare_vs_frequent` as a table (AP points, one decimal)."""
    from ..analysis.display import styled

    return styled(rare_vs_frequent(gain), "Mean per-class AP gain over AN (AP points, mean over shared seeds) "
                  "on the rarer half of the classes and on the more frequent half (training frequency).",
                  percent=True, best=False)


def cost_view(tabs: Mapping[str, Any]):
    """The cost table as the notebook shows it."""
    from ..analysis.display import styled

    return styled(tabs["cost"], "Cost per method beside its place: the mean rank and mean test mAP (%) over "
                  "the compared block of section 3 (— outside it), then, over every regime and seed it ran, "
                  "training + evaluation seconds and peak memory (MiB; — unknown) of a run, the runs counted, "
                  "and both relative to AN's.", counts=["runs"], percent=["block mAP"], best=False)


def observed_tuning_frame(runs: "BenchmarkRuns"):
    """One row per tuned cell: the setting clean validation kept, the one observed validation
    would keep, and whether they agree (— where the trials did not record observed mAP)."""
    import pandas as pd

    P = runs.design.profile
    rows = []
    for (reg, row), hp in runs.chosen.items():
        obs = runs.chosen_observed.get((reg, row))
        base = trial_params(P, row, reg, {})  # the paper default: a setting names what differs from it

        def name(params):
            return tuner.describe_point({k: v for k, v in params.items() if k not in base or base[k] != v})

        rows.append({"regime": reg, "method": row, "kept on clean labels": name(hp),
                     "kept on observed labels": "—" if obs is None else name(obs),
                     "same": "—" if obs is None else "✓" if obs == hp else "✗"})
    return pd.DataFrame(rows, columns=["regime", "method", "kept on clean labels", "kept on observed labels", "same"])


def observed_tuning_view(runs: "BenchmarkRuns"):
    """:func:`observed_tuning_frame`, the cells where the two choices differ, with the count in the
    caption (or a sentence saying why there is nothing to compare)."""
    from IPython.display import Markdown

    from ..analysis.display import styled

    frame = observed_tuning_frame(runs)
    known = frame[frame["same"] != "—"]
    if known.empty:
        return Markdown("No tuned cell here has trials that recorded the observed-label validation mAP, so "
                        "the choice a practitioner without clean labels would make cannot be read.")
    differ = known[known["same"] == "✗"].set_index(["regime", "method"])
    text = (f"Tuning on observed validation labels: {len(known) - len(differ)} of {len(known)} tuned cells keep "
            f"the same setting as on clean labels")
    if differ.empty:
        return Markdown(text + ".")
    return styled(differ, text + "; the cells below keep another one (the tables report the clean choice's "
                  "fresh seeds).", best=False)


def tuning_view():
    """The declared tuning grids (paper default first), one column per hyperparameter."""
    import pandas as pd

    from ..analysis.display import number_text, styled

    t = pd.DataFrame({row: {k: ", ".join(number_text(x, digits=None) if not isinstance(x, float) else f"{x:g}"
                                         for x in v) for k, v in grid.items()}
                      for row, grid in TUNING_GRIDS.items() if row in ROW_BY_LABEL}).T.fillna("")
    return styled(t, "The declared tuning grids: each row's values per hyperparameter, the paper's default "
                  "first; a grid is walked as a product in this order and its first points are the trials "
                  "(the same number for every tuned method).", best=False)


# --- ranks over independent data sets: the scene families ---------------------------------------

def measured_gaps(record=None) -> Dict[str, Dict[str, Any]]:
    """``{family: {"gap", "seeds"}}``: the full-label → AN test-mAP gap the scene-candidates
    measurement recorded for each family that is one of its candidates (mean over its seeds;
    :data:`FAMILY_CANDIDATE`), read from its record (``protocol.scenes_choice.CPU_RECORD``)."""
    from ..protocol.scenes_choice import CPU_RECORD, runs_from_record, summarise

    try:
        cands = runs_from_record(record or CPU_RECORD)
    except (OSError, ValueError, KeyError):
        return {}
    rows = summarise(cands)
    return {fam: {"gap": rows[c]["gap test"], "seeds": rows[c]["seeds"]}
            for fam, c in FAMILY_CANDIDATE.items() if c in rows}


def family_frame(runs: "BenchmarkRuns", metric: str = "test_mAP"):
    """Rows = the families' block (the oracle first), columns = the families: mean ``metric`` over the
    family seeds each row has stored (NaN where its runs are not stored yet)."""
    import pandas as pd

    d = runs.design
    out = pd.DataFrame(index=list(d.family_rows), columns=list(d.scenes), dtype=float)
    for family, rows in runs.families.items():
        for row, rs in rows.items():
            vals = [float(v) for v in bm.by_seed(rs, metric).values()] if rs else []
            if vals:
                out.loc[row, family] = sum(vals) / len(vals)
    return out


def family_table(runs: "BenchmarkRuns") -> Dict[str, Dict[str, Optional[float]]]:
    """:func:`family_frame` as the notebook records it (``{row: {family: mean test mAP}}``, None
    where the row's runs on that family are not stored): the report's ``family_mAP`` CSV."""
    frame = family_frame(runs)
    return {row: {f: _num(frame.loc[row, f]) for f in frame.columns} for row in frame.index}


def family_gaps(runs: "BenchmarkRuns"):
    """Per family: the gap the candidates' measurement recorded (— where the family was not
    measured), the gap from this chapter's runs (the oracle minus AN on the seeds both ran),
    whether it is at least :data:`FAMILY_MIN_GAP`, and the family's pending runs not stored."""
    import math

    import pandas as pd

    d, measured = runs.design, measured_gaps()
    waiting = merged(runs.waiting, FAMILIES)
    rows = []
    for family in d.scenes:
        got = runs.families.get(family, {})
        full, an = bm.by_seed(got.get(ORACLE, []), "test_mAP"), bm.by_seed(got.get(AN, []), "test_mAP")
        shared = sorted(set(full) & set(an))
        gap = (sum(full[s] - an[s] for s in shared) / len(shared)) if shared else math.nan
        m = measured.get(family)
        rows.append({"family": family, "scenes": describe_scene(SCENE_FAMILIES[family]),
                     "measured gap": m["gap"] if m else math.nan,
                     "gap from the runs": gap, "seeds of the gap": len(shared),
                     f"gap ≥ {FAMILY_MIN_GAP:g}": ("—" if not shared else "✓" if gap >= FAMILY_MIN_GAP else "✗"),
                     "runs waiting": sum(n for label, n in waiting.items() if label.endswith(f" · {family}"))})
    columns = ["family", "scenes", "measured gap", "gap from the runs", "seeds of the gap",
               f"gap ≥ {FAMILY_MIN_GAP:g}", "runs waiting"]
    return pd.DataFrame(rows, columns=columns).set_index("family")  # no row: a design without families


def describe_scene(scene: Mapping[str, Any]) -> str:
    """A family's setting as text: the profile's scenes, or what it changes."""
    if not scene:
        return "the profile's scenes"
    return ", ".join(f"{k} {'–'.join(str(x) for x in v) if isinstance(v, (list, tuple)) else v}"
                     for k, v in scene.items())


#: a rank test needs this many scene families with every ranked row stored and the gap met
MIN_FAMILIES = 5


def family_ranks(runs: "BenchmarkRuns") -> Dict[str, Any]:
    """The ranks of the families' block (the oracle left out) over the scene families that are
    complete (every row stored) and keep a gap ≥ :data:`FAMILY_MIN_GAP`, with Iman–Davenport's p
    and the permutation p (:func:`mlpl_lab.analysis.ranks.rank_test`) when at least
    :data:`MIN_FAMILIES` remain; else ``"reason"`` says what waits. Keys: rank_test's, plus
    ``"families"``, ``"methods"``, ``"waiting"`` (pending runs not stored)."""
    import math

    from ..analysis.ranks import rank_test

    d = runs.design
    methods = [r for r in d.family_rows if r not in REFERENCE_ROWS]
    if not d.scenes:
        return dict(families=[], methods=methods, waiting=0, p=None, mean_ranks={},
                    reason=f"the {d.profile.name} design declares no scene families (the cpu design is the one that "
                           "ranks methods over independent data sets)")
    frame = family_frame(runs)
    gaps = family_gaps(runs)
    ok = [f for f in d.scenes if frame.loc[methods, f].notna().all()
          and math.isfinite(gaps.loc[f, "gap from the runs"]) and gaps.loc[f, "gap from the runs"] >= FAMILY_MIN_GAP]
    waiting = sum(merged(runs.waiting, FAMILIES).values())
    base = {"families": ok, "methods": methods, "waiting": waiting}
    if len(ok) < MIN_FAMILIES:
        reason = (f"{len(ok)} of the {len(d.scenes)} scene families have every ranked method stored and a "
                  f"full-label → AN gap ≥ {FAMILY_MIN_GAP:g} mAP; the test needs {MIN_FAMILIES}")
        if waiting:
            reason += (f": it waits for {waiting} runs not trained yet (a cold series trains them all; "
                       "`MLPL_LAB_TRAIN_PENDING` trains one family on its own, and the handbook's Run packs says how "
                       "it joins the pack)")
        return dict(base, p=None, reason=reason, mean_ranks={})
    return dict(base, **rank_test(frame.loc[methods, ok], methods, ok))


def family_record(test: Mapping[str, Any]) -> Dict[str, Any]:
    """:func:`family_ranks` as the notebook records it (numbers, NaN as None)."""
    keys = ("families", "methods", "waiting", "mean_ranks", "k", "N", "friedman_chi2", "F", "df", "p",
            "p_permutation", "permutation", "cd", "separated", "alpha", "reason")
    out = {}
    for k in keys:
        v = test.get(k)
        out[k] = _clean(v) if isinstance(v, dict) else [list(x) for x in v] if k == "separated" and v else \
            list(v) if isinstance(v, tuple) else _num(v)
    for k in ("p", "p_permutation"):  # 4 significant digits: rounded to 4 decimals a small p reads 0
        v = test.get(k)
        if isinstance(v, float) and math.isfinite(v):
            out[k] = float(f"{v:.4g}")
    return out


def families_view(runs: "BenchmarkRuns"):
    """The scene families: what each changes, its gap (measured and from the runs) and the runs it
    still waits for; then the rank test over them, or a sentence saying what it waits for."""
    from IPython.display import Markdown, display

    from ..analysis.display import styled

    if not runs.design.scenes:
        return Markdown(f"**No rank test here.** {family_ranks(runs)['reason']}: the ranks of section 3 "
                        "are description only, and the paired claims of section 8 are the comparisons to read.")
    gaps = family_gaps(runs)
    display(styled(gaps, f"The benchmark's data sets: scene families, each a setting of the generator's knobs, "
                   f"under uniform single positive. 'measured gap': full labels minus AN (test mAP) in the "
                   f"measurement that chose the default scenes (— not measured); 'gap from the runs': the same "
                   f"from this chapter's runs (on the seeds the oracle ran); every family must keep ≥ {FAMILY_MIN_GAP:g} "
                   "mAP; 'runs waiting': its runs not trained yet.",
                   percent=["measured gap", "gap from the runs"], counts=["seeds of the gap", "runs waiting"],
                   best=False))
    frame = family_frame(runs)
    display(styled(frame, f"Test mAP on each scene family under uniform single positive: the mean over the seeds "
                   f"stored (up to {len(runs.design.family_seeds)}); blank: not trained yet. The oracle is shown, "
                   "not ranked; no cell is bold (a comparison of two rows rests on a paired claim).",
                   percent=True, reference=[ORACLE], best=False))
    test = family_ranks(runs)
    if test.get("p") is None:
        return Markdown(f"**No rank test yet.** {test['reason']}. Until then the ranks of section 3 are "
                        "description only, and the paired claims of section 8 are the comparisons to read.")
    return family_test_view(test)


def family_test_view(test: Mapping[str, Any]):
    """The rank test over the scene families as a table (mean ranks, then the tests)."""
    import pandas as pd

    from ..analysis.display import styled

    mean = pd.Series(test["mean_ranks"], name="mean rank").sort_values().to_frame()
    df1, df2 = test["df"]
    caption = (f"Mean ranks over {test['N']} scene families ({test['k']} methods; 1 = best). Iman–Davenport's "
               f"F = {test['F']:.2f} on ({df1}, {df2}) df, p = {test['p']:.2g} (the p this chapter reads); the "
               f"permutation p = {test['p_permutation']:.2g} ({test['permutation']}); Friedman's χ² = "
               f"{test['friedman_chi2']:.2f}, shown only beside them (its χ² approximation is rough at few data "
               f"sets). Nemenyi's CD = {test['cd']:.2f}: "
               + (", ".join(f"{a} ahead of {b}" for a, b in test["separated"]) if test["separated"]
                  else "no pair of mean ranks lies further apart"))
    return styled(mean, caption, best=False)


#: the chapter, as :mod:`mlpl_lab.protocol.registry` finds it (no live exercise: it reads
#: the other chapters' runs)
CHAPTER = Chapter("07_benchmark")


def bound_length_table(runs: BenchmarkRuns):
    """Every stored length check of a schedule-bound row (GR's and the others'), with AN's:
    ``{regime: {row: runs at the longer schedule}}`` (:func:`mlpl_lab.chapters.bound_length.checks`)."""
    return bound_length.checks(runs.results, runs.length, runs.bound_length)


def bound_length_record(runs: BenchmarkRuns) -> Dict[str, Any]:
    """What the notebook records of :func:`bound_length_table` (per seed, both schedules)."""
    return bound_length.record(runs.results, bound_length_table(runs))


def bound_length_view(runs: BenchmarkRuns):
    """:func:`bound_length_table` as the notebook shows it, with the checks still waiting for runs."""
    return bound_length.view(runs.results, bound_length_table(runs), merged(runs.waiting, BOUND_CHECK))
