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
tuning stage shared with chapter 02, :func:`mlpl_lab.chapters.tuning.stage`): each method with a declared grid
(:data:`TUNING_GRIDS`) gets the same number of trials (the first points of its grid, paper
default first) under each regime on the profile's first seed (the *selection seed*); the trial
with the best clean-validation mAP is then re-run on **fresh seeds** — as many as the profile has
seeds, all after the selection seed — and only those are reported (the selection trials never
are: their test mAP is optimistically biased by the choice). Every row, tuned or not, reports the
same fresh seeds, so the pairing by seed holds. Methods without hyperparameters to tune (AN, WAN,
...) have one trial, their one configuration; the oracle and LAC (chapter 05's design) have none.

**As data** (issue 50): :func:`design` (the profile's :data:`DESIGNS` entry and the notebook's
:data:`PARAMETERS`) → :func:`specs` (pure: the trials, each cell once its choice is read from the
stored trials, LAC's own-head AN) → :func:`run` (:func:`mlpl_lab.chapters.asked.ensure_asked`) →
the tables and views, which take the ensured runs.

**Profiles** (:data:`DESIGNS`):

* ``smoke``: AN and GR × single positive and drop 50 % × 2 seeds, with the oracle as the
  reference row (the issue's smoke grid).
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

from ..analysis import benchmark as bm
from ..analysis.claims import Claim, claims_table, mark_schedule_bound
from ..profiles import Profile
from ..runs.splits_cache import clean_val_labels
from ..runs.spec import RunSpec
from . import cls as cls_chapter
from . import lac as lac_chapter
from . import opml as opml_chapter
from . import tuning as tuner
from ..core.bibliography import cite
from ..methods.cls import paper_hparams
from .asked import Asked, Families, Runs, Stored, ensure_asked
from .common import as_profile, design_name, splits_for, with_dataset
from . import gr as gr_chapter
from .gr import expected_positives

#: column label -> (regime name, parameters); the drop rates are distinct regimes
REGIMES: Dict[str, Tuple[str, Dict[str, Any]]] = {
    "single positive": ("single_positive", {}),
    # the single positive drawn in proportion to the objects' pixel areas (Cole et al.'s size-biased
    # labels; core.regimes.single_positive(bias="size") reads the masks the scenes keep)
    "single positive (size-biased)": ("single_positive", {"bias": "size"}),
    "drop 25 %": ("drop_positives", {"alpha": 0.25}),
    "drop 50 %": ("drop_positives", {"alpha": 0.5}),
    "drop 75 %": ("drop_positives", {"alpha": 0.75}),
    "known 10 %": ("known_proportion", {"p": 0.1}),
    "positives only 10 %": ("positives_only", {"p": 0.1}),
}
#: short names for the command line
REGIME_SLUGS = {"single": "single positive", "single_size": "single positive (size-biased)", "drop25": "drop 25 %", "drop50": "drop 50 %",
                "drop75": "drop 75 %", "known10": "known 10 %", "pos10": "positives only 10 %"}

ORACLE, AN = "full labels", "AN"
LAC_ROW = "two-stage + queue (LAC)"  # chapter 05's row the benchmark's LAC cells are
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
    """EPR's and ROLE's expected positives per image, from the clean validation labels (ch. 02).
    They do not depend on the regime, and only the validation images are built for them: a
    design holds specs, not splits (building the gpu grid's whole splits for every regime and
    seed here once took over 24 GB)."""
    return {"expected_num_pos": round(expected_positives(clean_val_labels(P.data_kwargs(), seed)), 4)}


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


ROWS: Tuple[Row, ...] = (
    Row(ORACLE, "full", "01", note="reads the true labels: the upper bound (one run per seed serves every column)"),
    Row(AN, "an", "01"),
    Row("WAN", "wan", "02"),
    Row("AN-LS", "an_ls", "02"),
    Row("EPR", "epr", "02", params=_k),
    Row("ROLE", "role", "02", params=_k),
    Row("Focal", "focal", "02"),
    Row("ASL", "asl", "02"),
    Row("Hill", "hill", "02"),
    Row("SPLC", "splc", "02"),
    Row("EM", "em", "02"),
    Row("EM+APL", "em_apl", "02"),
    Row("LL-R", "ll_r", "02"),
    Row("LL-Ct", "ll_ct", "02"),
    Row("LL-Cp", "ll_cp", "02"),
    Row("LL-R + BoostLU", "ll_r", "02", train=_boostlu, note=BOOSTLU_NOTE),
    Row("LL-Ct + BoostLU", "ll_ct", "02", train=_boostlu, note=BOOSTLU_NOTE),
    Row("LL-Cp + BoostLU", "ll_cp", "02", train=_boostlu, note=BOOSTLU_NOTE),
    Row("GR", "gr", "02"),
    Row("OPML", "opml", "03", params=lambda P, r, s: {"a": 0.0, "b": 0.0}),
    Row("OPML-SP", "opml_sp", "03", params=lambda P, r, s: {"a": 0.0, "b": 0.0}),
    Row("CLS", "cls", "04", params=_cls, regimes=CLS_REGIMES,
        note="τ_h is given by its paper for single positive and the drop rates only"),
    Row("Co-teaching", "coteaching", "04", params=lambda P, r, s: _family(P)),
    Row("Co-teaching+", "coteaching_plus", "04", params=lambda P, r, s: _family(P)),
    Row(cls_chapter.JOCOR, "jocor", "04",
        params=lambda P, r, s: _family(P, {"co_lambda": cls_chapter.JOCOR_LAMBDA})),
    Row("LAC", "lac", "05",
        regimes=tuple(label for label, (name, params) in REGIMES.items()
                      if lac_chapter.regime_defined(name, params)),
        note="own head (label query) and two stages with its paper's optimiser: chapter 05's design; "
             "known negatives are masked out of PLC and the contrastive loss (never pseudo-positives)"),
    Row("PU-MLC", "pu_mlc", "06", note="reads observed positives only (observed negatives count as unlabelled)"),
)
ROW_BY_LABEL = {r.label: r for r in ROWS}
REFERENCE_ROWS = (ORACLE,)  # shown, never ranked

#: equal-budget tuning (:mod:`mlpl_lab.chapters.tuning`, shared with chapter 02): the grids and
#: the budget are the tuning module's; which designs are tuned is :data:`DESIGNS`'
TUNING_GRIDS = tuner.GRIDS
#: rows never tuned: the oracle reads the true labels, LAC keeps chapter 05's two-stage design
UNTUNED_ROWS = (ORACLE, "LAC")

#: the rows every cpu regime holds: the block Friedman's test ranks (the oracle is shown, not ranked)
_CPU_BLOCK = (ORACLE, "AN", "GR", "EM", "ROLE", "LL-R", "CLS", "LAC", "OPML-SP", "PU-MLC")


@dataclass(frozen=True)
class Preset:
    """One profile's benchmark, as literals: ``grid`` (regime -> rows; ``None``: every row under
    every regime it applies to), ``tuned`` (equal-budget tuning by default) and ``seeds_per_cell``
    (``None``: every reported seed in every cell; else these cells' counts and one seed elsewhere)."""

    grid: Optional[Mapping[str, Tuple[str, ...]]]
    tuned: bool
    seeds_per_cell: Optional[Mapping[Tuple[str, str], int]] = None


#: cpu's grid: every row under single positive, the block under one size-biased and one partial regime
DESIGNS_CPU_GRID = {"single positive": tuple(r.label for r in ROWS),
                    "single positive (size-biased)": _CPU_BLOCK, "drop 50 %": _CPU_BLOCK}
#: the benchmark of each profile (``gpu_shape`` takes gpu's: :data:`common.DESIGN_OF`)
DESIGNS: Dict[str, Preset] = {
    "smoke": Preset(grid={"single positive": (ORACLE, "AN", "GR"), "drop 50 %": (ORACLE, "AN", "GR")},
                    tuned=False),
    # cpu: every row under single positive, the block under two more regimes (one size-biased, one
    # partial); every cell on the five fresh seeds. The other 4 regimes are the gpu grid's (left_out())
    "cpu": Preset(grid=dict(DESIGNS_CPU_GRID), tuned=True),
    # gpu, sized for a course (one evening on one GPU, `mlpl-lab plan --profile gpu`): the cpu grid's
    # shape at the gpu scale, tuned, five fresh seeds. What it costs: the full grid (every row under
    # all seven regimes, several times the runs) would decide each method under every regime; here the
    # drop 25 % / 75 %, known 10 % and positives-only regimes are left out (left_out() lists them)
    # and the rows outside the block are measured under single positive only
    "gpu": Preset(grid=dict(DESIGNS_CPU_GRID), tuned=True),
}
#: the notebook's ``parameters`` that change which runs the chapter asks for
PARAMETERS = ("methods", "regimes", "tuning", "dataset", "data_root", "data_layout")

#: ``Asked`` families besides the regimes (each regime is a family ``{row: [runs]}``)
TRIALS = "tuning trials"
SAME_HEAD_LABEL = "AN (LAC's head)"
#: chapter 05's AN row: AN trained with LAC's own network (label-query head, its epochs and
#: optimiser), the baseline that isolates the method from the head in :func:`claims`
LAC_SAME_HEAD_AN = "AN"


@dataclass(frozen=True)
class BenchmarkDesign:
    profile: Profile                     # the profile itself (it may read a real dataset)
    grid: Dict[str, Tuple[str, ...]]     # regime -> row labels
    seeds: Dict[Tuple[str, str], Tuple[int, ...]]  # (regime, row) -> reported seeds
    tuning: bool = False

    @property
    def selection_seed(self) -> Optional[int]:
        """The seed tuning selects on (never reported); None without tuning."""
        return tuner.selection_seed(self.profile) if self.tuning else None

    def cells(self) -> List[Tuple[str, str]]:
        return [(reg, row) for reg, rows in self.grid.items() for row in rows]

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
    return BenchmarkDesign(P, grid, seeds, tuning=tuning)


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
    with ``point`` (what differs from the paper default, :func:`mlpl_lab.chapters.tuning.trial_points`)
    over them. The kept point runs with these on every fresh seed."""
    return dict(ROW_BY_LABEL[row_label].params(P, regime, tuner.selection_seed(P)), **point)


def stages(d: BenchmarkDesign, stored: Stored) -> List[tuner.Stage]:
    """The one tuning stage (:func:`mlpl_lab.chapters.tuning.stage`) over the cells, one stage per
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
    *observed* validation (:func:`mlpl_lab.chapters.tuning.choose_observed`; None where a trial did
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
        if "LAC" in rows:
            name, rp = REGIMES[reg]
            out[reg] = [lac_chapter.row_spec(P, LAC_SAME_HEAD_AN, s, name, rp, lac)
                        for s in sorted(d.seeds[(reg, "LAC")])]
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
        if "GR" not in rows or AN not in rows or (reg, "GR") not in cells or (reg, AN) not in cells:
            continue
        got = [stored(s) for s in cells[(reg, "GR")]]
        pair = {f"GR · {reg}": gr_chapter.lengthen(cells[(reg, "GR")], epochs),
                f"AN · {reg}": gr_chapter.lengthen(cells[(reg, AN)], epochs)}
        if any(r is None for r in got):
            later.setdefault(LENGTH_CHECK, {}).update(pair)
        elif any(getattr(r, "converged", True) is False for r in got):
            now.setdefault(LENGTH_CHECK, {}).update(pair)
    return now, later


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
    return Asked(now=now, later=later)


@dataclass
class BenchmarkRuns:
    """What :func:`run` returns: the design, ``results`` (``{regime: {row: [stored runs]}}``, the
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


def run(d: BenchmarkDesign, store=None, **engine) -> Runs:
    """Every run of :func:`specs` under design ``d``, from the run store (training what is
    missing; an interrupted grid resumes: finished runs are stored one by one; ``engine``:
    :func:`mlpl_lab.chapters.asked.ensure_asked`'s): ``{family: {label: [runs]}}``, which
    :func:`results` arranges. (Every chapter's ``run`` has this shape.)"""
    return ensure_asked(specs, d, store=store, label="07 benchmark", **engine)


def results(d: BenchmarkDesign, runs: Runs) -> BenchmarkRuns:
    """:class:`BenchmarkRuns` from :func:`run`'s runs: the reported cells, LAC's own-head AN and
    the tuning choices (re-decided from the trial runs themselves, as chapter 02's)."""
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
    return BenchmarkRuns(d, cells, runs.get(SAME_HEAD_LABEL, {}), *choices(d, stored), length)


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


def protocol(profile) -> Dict[str, Any]:
    """The protocol of every cell, read from the profile (what the notebook states at the top)."""
    from ..analysis.display import value_text

    P = as_profile(profile)
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
            "seeds": ", ".join(str(s) for s in P.seeds)}


FRIEDMAN_NOTE = ("ranks over the methods that ran in every compared regime; Friedman's χ² with "
                 "k − 1 df; CD = Nemenyi critical difference at α = 0.05 (Demšar 2006)")


def tables(results) -> Dict[str, Any]:
    """Every table of the chapter, as DataFrames keyed by their CSV name (``_``-prefixed
    entries are for the notebook only)."""
    import pandas as pd

    regimes = [r for r in REGIMES if r in results]
    rows = [r.label for r in ROWS if any(r.label in results[reg] for reg in regimes)]
    out: Dict[str, Any] = {}
    cells = {}
    for metric, name in (("test_mAP", "mAP"), ("test_CF1", "CF1"), ("test_OF1", "OF1")):
        cells[name] = bm.cell_frame(results, metric)
        out[name] = bm.formatted(cells[name], rows, regimes)
        out[name + "_mean"] = bm.wide(cells[name], "mean", rows, regimes)
        out[name + "_ci95"] = bm.wide(cells[name], "ci95", rows, regimes)
    out["seeds"] = bm.wide(cells["mAP"], "seeds", rows, regimes)
    out["converged"] = bm.wide(cells["mAP"], "converged", rows, regimes)
    rank = bm.rank_summary(cells["mAP"], exclude=REFERENCE_ROWS)
    out["ranks"] = rank["table"]
    out["regime_ranks"] = rank["ranks"].reindex(columns=[r for r in regimes if r in rank["regimes"]])
    out["ranks_left_out"] = pd.DataFrame({"left out of the ranks": rank["left_out"]}, dtype=object)
    fr = rank["friedman"]
    out["friedman"] = pd.DataFrame([{
        "methods (k)": fr["k"], "regimes (N)": fr["N"], "regimes": ", ".join(rank["regimes"]),
        "Friedman χ²": fr["statistic"], "p": fr["p"], "CD (α = 0.05)": rank["cd"],
        "note": fr["reason"] or FRIEDMAN_NOTE}], index=["ranks"])
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


def records(design: BenchmarkDesign, tabs, chosen, chosen_obs=None) -> Dict[str, Any]:
    """What the notebook records (numbers stay numbers; NaN becomes None); ``chosen_obs``:
    :attr:`BenchmarkRuns.chosen_observed`."""
    def by_row(t):
        return {m: _clean(t.loc[m].to_dict()) for m in t.index}

    rank, fr, cost = tabs["_rank"], tabs["_rank"]["friedman"], tabs["cost"]
    return {"design": design.describe(),
            "mAP": by_row(tabs["mAP_mean"]), "ci95": by_row(tabs["mAP_ci95"]),
            "CF1": by_row(tabs["CF1_mean"]), "OF1": by_row(tabs["OF1_mean"]),
            "mean_rank": _clean(tabs["ranks"]["mean_rank"].to_dict()),
            "ranks": {"methods": list(rank["methods"]), "regimes": list(rank["regimes"]),
                      "left_out": dict(rank["left_out"]), "friedman_chi2": _num(fr["statistic"]),
                      "friedman_p": _num(fr["p"]), "cd": _num(rank["cd"]), "reason": fr["reason"]},
            "gap_closed": by_row(tabs["gap_closed_estimate"]),
            "gap_closed_detail": {f"{g.method} · {g.regime}": {
                "estimate": _num(g.estimate), "ci95": [_num(g.lo), _num(g.hi)],
                "seeds": [int(x) for x in g.seeds], "reason": g.reason}
                for g in tabs["_gaps"].itertuples()},
            "benchmark_convergence": bm.convergence_record(tabs["_cells"]),
            "seconds_vs_AN": _clean(cost["seconds_vs_AN"].to_dict()) if "seconds_vs_AN" in cost else {},
            "memory_vs_AN": _clean(cost["memory_vs_AN"].to_dict()) if "memory_vs_AN" in cost else {},
            "tuned": {f"{reg} · {row}": hp for (reg, row), hp in chosen.items()},
            "tuned_observed": {f"{reg} · {row}": hp for (reg, row), hp in (chosen_obs or {}).items()},
            "selection_seed": design.selection_seed,
            "left_out": left_out(design)}


#: each paper's headline claim against AN (single positive unless said), for the claims table
PAPER_CLAIMS: Dict[str, str] = {
    "GR": f"{cite('gr')}, Table 2: beats AN on VOC, COCO, NUS, CUB (single positive)",
    "OPML-SP": f"{cite('opml')}: beats AN on VOC, COCO, NUS, CUB (single positive)",
    "CLS": f"{cite('cls')}, Table 2: beats AN on COCO in every regime of its table",
    "LAC": f"{cite('lac')}, Table 2: beats AN on VOC, COCO, NUS, CUB (single positive)",
    "PU-MLC": f"{cite('pu_mlc')}: beats BCE with partial labels at low known proportions",
    "EM+APL": f"{cite('em_apl')}: beats AN on four datasets (single positive)",
    "ROLE": f"{cite('cole')}, Table 2: beats AN (single positive)",
    "LL-R": f"{cite('large_loss')}, Table 1: beats AN (single positive)",
    "LL-R + BoostLU": f"{cite('boostlu')}: boosting improves the Large Loss schemes on three single-positive "
                      "datasets (its abstract), and LL-R beats AN (Large Loss Matters, Table 1)",
}


SAME_HEAD_PAPER = f"{cite('lac')}, Table 3: VOC 89.6 vs 87.6, COCO 75.6 vs 72.3 (AN with LAC's head)"


def claims(results, same_head: Mapping[str, list] | None = None,
           length: Mapping[str, Mapping[str, list]] | None = None):
    """"<method> beats AN under <regime>" for every paper claim and every regime where both ran
    (paired verdicts from the runs, Holm over this table: :mod:`mlpl_lab.analysis.claims`).
    With ``same_head`` (:attr:`BenchmarkRuns.same_head`, :func:`same_head_specs`) LAC is also compared with AN trained on its
    own network, which separates the method's gain from the head's. With ``length``
    (:attr:`BenchmarkRuns.length`) a regime whose GR runs did not all converge gets GR against AN
    at the longer schedule too, and its "GR beats AN" claim says whether that control agrees
    (GR is schedule-bound: :func:`mlpl_lab.analysis.claims.mark_schedule_bound`)."""
    rows, notes = [], {}
    for regime, methods in results.items():
        if AN not in methods:
            continue
        for label, paper in PAPER_CLAIMS.items():
            if label in methods:
                rows.append(Claim(f"{label} beats AN under {regime}", paper, label, AN,
                                  methods[label], methods[AN]))
        if "LAC" in methods and same_head and regime in same_head:
            rows.append(Claim(f"LAC beats AN with LAC's own head under {regime}", SAME_HEAD_PAPER,
                              "LAC", SAME_HEAD_LABEL, methods["LAC"], same_head[regime]))
        check = (length or {}).get(regime)
        if "GR" in methods and check and bm.convergence_mark(methods["GR"]) == "schedule-bound":
            epochs = check["GR"][0].spec.train["epochs"]
            name = f"GR beats AN with both trained {epochs} epochs under {regime} (length check)"
            rows.append(Claim(name, "the same comparison at a longer schedule (GR is schedule-bound)",
                              f"GR ({epochs} ep.)", f"AN ({epochs} ep.)", check["GR"], check[AN]))
            notes[f"GR beats AN under {regime}"] = name
    rows += selection_claims(results)
    table = claims_table(rows)
    return mark_schedule_bound(table, {claim: gr_chapter.length_check_note(table, claim, check)
                                       for claim, check in notes.items()})


def selection_claims(results) -> List[Claim]:
    """Does clean validation flatter a method? For every cell whose runs recorded the observed-label
    validation mAP (``val_obs_mAP``: the run's regime on the validation labels, unknown as
    negative), the paired claim "the clean-validation epoch beats the observed-validation epoch"
    on test mAP (:func:`mlpl_lab.analysis.selection.selection_claim`). Runs made before the engine
    recorded it add none."""
    from ..analysis.selection import by_seed_selected, selection_claim

    out = []
    for regime, methods in results.items():
        for label, runs in methods.items():
            if label in REFERENCE_ROWS or not by_seed_selected(runs):
                continue
            claim = selection_claim(f"{label} under {regime}", runs)
            out.append(claim)
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

def protocol_view(profile):
    """:func:`protocol` as a one-column table."""
    import pandas as pd

    from ..analysis.display import styled

    return styled(pd.Series(protocol(profile), name="every cell").to_frame(),
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
    mean ± 95 % interval (seeds) with † where a run did not converge, the best method of each
    regime in bold (the full-label oracle left out)."""
    from ..analysis.display import caption, styled

    mean = tabs[f"{metric}_mean"]
    unconv = tabs["converged"].reindex(index=mean.index, columns=mean.columns).map(bm.unconverged_mark)
    ref = [r for r in REFERENCE_ROWS if r in mean.index]
    return styled(mean, caption(f"{METRIC_WHAT.get(metric, metric)} at each run's best clean-validation epoch, "
                                "per regime", reference=ref, note="— the method does not run in that regime"),
                  percent=True, half=tabs[f"{metric}_ci95"], seeds=tabs["seeds"], unconverged=unconv,
                  reference=ref)


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
                  "clean minus observed ± the half-width of its paired 95 % t-interval (the claims below "
                  "test it, Holm across the chapter); 'other epoch': seeds on which the two keep "
                  "different epochs." + (f" Left out: {waiting}" if cells else ""),
                  half=half, counts=["seeds", "other epoch"], best=False)


def friedman_view(tabs: Mapping[str, Any]):
    """The Friedman test over the ranks, with the methods left out of them in the caption."""
    from ..analysis.display import styled

    left = tabs["ranks_left_out"]
    out = ("; ".join(f"{m}: {why}" for m, why in left.iloc[:, 0].items()) if len(left)
           else "no method left out")
    return styled(tabs["friedman"], f"The ranks' test: methods (k) and regimes (N) compared, Friedman's χ² and p, "
                  f"the Nemenyi critical difference of mean ranks. Left out of the ranks: {out}.",
                  counts=["methods (k)", "regimes (N)"], p_values=["p"], best=False)


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
