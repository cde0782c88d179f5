"""Chapter 07's design: the grid of every profile (:data:`DESIGNS`), the independent data sets the
ranks are taken over (:data:`DATA_SETS`), and :func:`design`, which turns a profile and the notebook's parameters into
a :class:`BenchmarkDesign` (regime -> rows, the seeds each cell reports, whether it is tuned).

The rows are the catalogue's entries for 07 with their recipes (:mod:`mlpl_lab.protocol.recipes`),
read when asked, so a method registered from outside the package is a row here too; how each cell
becomes runs is :mod:`.runs`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ...analysis.claims import Family
from ...catalogue import LABEL, paper_claims
from ...profiles import Profile
from ...protocol import bound_length, tuning as tuner
from ...protocol.common import with_dataset
from ...protocol.design import preset
from ...protocol.recipes import reference_rows, resolve_methods, row, rows, untuned_rows
from ...protocol.regimes import REGIMES, resolve_regimes
from ...protocol.datasets import DATASETS, scene_of

ORACLE, AN = LABEL.oracle, LABEL.an
#: rows shown, never ranked (the oracle): their recipes say so
REFERENCE_ROWS = reference_rows()
#: equal-budget tuning (:mod:`mlpl_lab.protocol.tuning`, shared with chapter 02): the grids and
#: the budget are the tuning module's; which designs are tuned is :data:`DESIGNS`'
TUNING_GRIDS = tuner.GRIDS


#: the rows every cpu regime holds (the oracle is shown, not ranked); over these label regimes of
#: one data set the ranks are description only (:func:`mlpl_lab.analysis.ranks.describe_ranks`)
_CPU_BLOCK = (ORACLE, LABEL.an, LABEL.gr, LABEL.em, LABEL.role, LABEL.ll_r, LABEL.cls, LABEL.lac, LABEL.opml_sp, LABEL.pu_mlc)


#: **the benchmark's data sets** (ranks with a p need independent data sets, Demšar 2006): each
#: differs from every other in what it is -- its own label space (glyph vocabulary and number of
#: classes), co-occurrence structure, objects per image, backgrounds and seeds -- not only in a knob
#: of one generator (:data:`mlpl_lab.protocol.datasets.DATASETS`; their independence and their
#: oracle − AN gaps are measured by ``benchmarks/dataset_candidates.py``, record
#: ``benchmarks/records/dataset_candidates_cpu.json``). The first, :data:`OWN_DATA_SET`, is the
#: profile's own scenes: its runs are the single-positive cells above, on their first seeds. Every
#: other trains under uniform single positive on its own seeds, its scenes over the generator's
#: defaults (not over the profile's chosen scenes).
DATA_SETS: Tuple[str, ...] = tuple(DATASETS)
OWN_DATA_SET = DATA_SETS[0]


def data_set_scene(name: str) -> Dict[str, Any]:
    """The generator arguments of data set ``name`` (:func:`mlpl_lab.protocol.datasets.scene_of`)."""
    return scene_of(name)


def data_set_seeds(name: str, n: int) -> Tuple[int, ...]:
    """The first ``n`` run seeds of data set ``name`` (its own: no other data set shares one)."""
    return tuple(int(s) for s in DATASETS[name]["seeds"])[:n]


FAMILY_MIN_GAP = 10.0


#: the methods ranked over the data sets (the oracle is trained for each data set's gap, not ranked):
#: eight of the block above, each under the setting tuning kept for it on the own data set's
#: single positive (no tuning again per data set). LAC (own head, two stages) and ROLE (its k read
#: from each data set's clean labels) are left out for their cost. Chapter 08's Crisp and its P(k)
#: grain of label cardinality are ranked too.
FAMILY_BLOCK = (ORACLE, LABEL.an, LABEL.hill, LABEL.em, LABEL.ll_r, LABEL.gr, LABEL.opml_sp, LABEL.cls, LABEL.pu_mlc,
                LABEL.crisp, LABEL.cardinality_distribution)


FAMILY_REGIME = "single positive"


#: the pending runs' families (:attr:`mlpl_lab.protocol.asked.Asked.pending`): one per data set
FAMILIES = "data sets"


#: the pending length checks of the schedule-bound rows (one family per row or data set: :func:`pending_name`)
BOUND_CHECK = bound_length.BOUND_CHECK


def pending_name(group: str, part: str) -> str:
    """The pending family of one part of a group (a data set of :data:`FAMILIES`, a row of
    :data:`BOUND_CHECK`): each part is its own pending family, so it can be trained in one sitting
    and join a pack alone (``MLPL_LAB_TRAIN_PENDING="data sets: printed letters"``)."""
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
    """One profile's benchmark, as literals: ``grid`` (regime -> rows, :data:`EVERY_ROW` for every
    row; ``None``: every row under every regime it applies to), ``tuned`` (equal-budget tuning by default) and ``seeds_per_cell``
    (``None``: every reported seed in every cell; else these cells' counts and one seed elsewhere)."""

    grid: Optional[Mapping[str, Optional[Tuple[str, ...]]]]
    tuned: bool
    seeds_per_cell: Optional[Mapping[Tuple[str, str], int]] = None
    #: the data sets ranked (:data:`DATA_SETS`), their rows and how many seeds each trains (its
    #: first ones: the own data set's are the cells' first reported seeds)
    families: Tuple[str, ...] = ()
    family_rows: Tuple[str, ...] = ()
    family_seeds: int = 3


#: a regime of a preset's grid that holds every row of 07 where it applies (the catalogue's, read
#: when the design is made: a registered row joins it)
EVERY_ROW = None
#: cpu's grid: every row under single positive, the block under one size-biased and one partial regime
DESIGNS_CPU_GRID = {"single positive": EVERY_ROW,
                    "single positive (size-biased)": _CPU_BLOCK, "drop 50 %": _CPU_BLOCK}


#: the benchmark of each profile (the designs' one rule, :func:`mlpl_lab.protocol.common.preset`:
#: ``gpu_shape`` takes gpu's, a profile not named here cpu's)
DESIGNS: Dict[str, Preset] = {
    "smoke": Preset(grid={"single positive": (ORACLE, LABEL.an, LABEL.gr), "drop 50 %": (ORACLE, LABEL.an, LABEL.gr)},
                    tuned=False),
    # cpu: every row under single positive, the block under two more regimes (one size-biased, one
    # partial); every cell on the five fresh seeds. The other 4 regimes are the gpu grid's (left_out())
    "cpu": Preset(grid=dict(DESIGNS_CPU_GRID), tuned=True, families=DATA_SETS,
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


#: ``Asked`` families besides the regimes (each regime is a family ``{row: [runs]}``): the tuning
#: trials, and AN on LAC's own network (``{regime: [runs]}``, its recipe's control)
TRIALS = tuner.TRIALS_FAMILY
SAME_HEAD_LABEL = LABEL.lac_an
#: the row whose recipe's baseline on its own network 07 trains (:data:`SAME_HEAD_LABEL`)
SAME_HEAD_ROW = LABEL.lac


@dataclass(frozen=True)
class BenchmarkDesign:
    """The benchmark under one profile: which rows run under which regime, the seeds each cell
    reports, whether the cells are tuned, and the data sets the ranks are taken over."""

    profile: Profile                     # the profile itself (it may read a real dataset)
    grid: Dict[str, Tuple[str, ...]]     # regime -> row labels
    seeds: Dict[Tuple[str, str], Tuple[int, ...]]  # (regime, row) -> reported seeds
    tuning: bool = False
    scenes: Tuple[str, ...] = ()         # the data sets ranked (DATA_SETS)
    family_rows: Tuple[str, ...] = ()
    family_seeds: Tuple[int, ...] = ()   # the own data set's (the cells' first reported seeds)

    def seeds_of(self, data_set: str) -> Tuple[int, ...]:
        """The seeds data set ``data_set`` trains: the own data set's are :attr:`family_seeds`
        (its runs are the cells'), every other's its own first as many."""
        if data_set == OWN_DATA_SET:
            return self.family_seeds
        return data_set_seeds(data_set, len(self.family_seeds))

    @property
    def selection_seed(self) -> Optional[int]:
        """The seed tuning selects on (never reported); None without tuning."""
        return tuner.selection_seed(self.profile) if self.tuning else None

    def cells(self) -> List[Tuple[str, str]]:
        return [(reg, row) for reg, labels in self.grid.items() for row in labels]

    @property
    def families(self) -> Dict[str, Family]:
        """The benchmark's questions, declared from the grid before any run is read
        (:class:`mlpl_lab.analysis.claims.Family`): per regime with AN, "each paper method beats
        AN" (one claim per row with a paper claim, :func:`mlpl_lab.catalogue.paper_claims`, the
        regime holds); LAC's gain on its
        own network (one claim per regime with LAC); whether clean validation flatters (one pooled
        claim per regime). The length checks are controls of the claims they repeat: each sits in
        its claim's family and is counted in its m when it is asked (:func:`mlpl_lab.analysis.claims.
        family_sizes`); the per-cell selection differences are exploratory, not claims."""
        out: Dict[str, Family] = {}
        for reg, labels in self.grid.items():
            if AN not in labels:
                continue
            m = sum(label in labels for label in paper_claims())
            if m:
                out[beats_an_family(reg)] = Family(beats_an_family(reg), m,
                                                   f"does each paper method beat AN under {reg}?")
        lac = sum(SAME_HEAD_ROW in labels and AN in labels for labels in self.grid.values())
        if lac:
            out[SAME_HEAD_FAMILY] = Family(SAME_HEAD_FAMILY, lac, "does LAC beat AN on LAC's own network?")
        flat = sum(any(r not in REFERENCE_ROWS for r in labels) for labels in self.grid.values())
        if flat:
            out[FLATTERS_FAMILY] = Family(FLATTERS_FAMILY, flat, "does clean validation flatter the "
                                          "methods (pooled over the methods of each regime)?")
        return out

    @property
    def family_members(self) -> Dict[str, Tuple[str, ...]]:
        """``{family: claim ids}``: the claims each family of :attr:`families` asks, from the grid
        alone (the ids :mod:`.claims` gives them; what the course pack's index records:
        :func:`mlpl_lab.protocol.plan.designed_families`)."""
        from ...analysis.claims import claim_id
        from ...catalogue import by_label
        from ...protocol.regimes import regime_slug

        out: Dict[str, Tuple[str, ...]] = {}
        for reg, labels in self.grid.items():
            if AN not in labels:
                continue
            ids = tuple(claim_id("beats_an", by_label(label).key, regime_slug(reg))
                        for label in paper_claims() if label in labels)
            if ids:
                out[beats_an_family(reg)] = ids
        lac = tuple(claim_id("beats_an_on_own_head", by_label(SAME_HEAD_ROW).key, regime_slug(reg))
                    for reg, labels in self.grid.items() if SAME_HEAD_ROW in labels and AN in labels)
        if lac:
            out[SAME_HEAD_FAMILY] = lac
        flat = tuple(claim_id("clean_validation_flatters", regime_slug(reg)) for reg, labels in self.grid.items()
                     if any(r not in REFERENCE_ROWS for r in labels))
        if flat:
            out[FLATTERS_FAMILY] = flat
        return out

    def tuned_cells(self) -> List[Tuple[str, str]]:
        """The cells that choose their hyperparameters on trials (every cell but the untuned rows')."""
        untuned = untuned_rows()
        return [(reg, r) for reg, r in self.cells() if r not in untuned] if self.tuning else []

    def describe(self) -> str:
        n_runs = sum(len(self.seeds[c]) for c in self.cells())
        return (f"{len(self.cells())} cells ({len({r for _, r in self.cells()})} methods × "
                f"{len(self.grid)} regimes where they apply), {n_runs} runs"
                + (f"; equal-budget tuning, {tuner.trials_for(self.profile)} trials per method on seed "
                   f"{self.selection_seed}" if self.tuning else ""))


def design(profile="cpu", methods: Sequence[str] | None = None, regimes: Sequence[str] | None = None,
           tuning: bool | None = None, dataset: str = "scenes", data_root: str | None = None,
           data_layout: str = "cole") -> BenchmarkDesign:
    """The grid under ``profile`` (:data:`DESIGNS`, by the designs' one rule), reading ``dataset``
    (:func:`mlpl_lab.protocol.common.with_dataset`);
    ``methods``/``regimes`` (labels, names or slugs) restrict it — or extend it with any method or
    regime outside the profile's grid (named methods: each under every regime it applies to, with
    the oracle and AN); ``tuning=None``: the preset's."""
    P = with_dataset(profile, dataset, data_root, data_layout)
    lit: Preset = preset(DESIGNS, P)
    every = rows()
    methods, regimes = resolve_methods(methods), resolve_regimes(regimes)
    if lit.grid is not None and methods is None:
        grid = {reg: tuple(r.label for r in every) if labels is EVERY_ROW else tuple(labels)
                for reg, labels in lit.grid.items()}
    else:  # every named row (every row) under every regime it applies to
        wanted = methods or [r.label for r in every]
        if ORACLE not in wanted:
            wanted = [ORACLE] + list(wanted)
        if AN not in wanted:
            wanted.insert(1, AN)  # the gap and the cost are relative to AN
        grid = {reg: tuple(m for m in wanted if row(m).applies(reg)) for reg in REGIMES}
    if regimes is not None:
        grid = {reg: grid.get(reg) or tuple(r.label for r in every if r.applies(reg)
                                           and (methods is None or r.label in methods
                                                or r.label in (ORACLE, AN)))
                for reg in regimes}
    grid = {reg: tuple(r for r in labels if row(r).applies(reg)) for reg, labels in grid.items()}
    tuning = lit.tuned if tuning is None else bool(tuning)
    # with tuning the first seed only selects: every cell reports the fresh seeds after it
    pool = tuner.fresh_seeds(P) if tuning else tuple(P.seeds)
    seeds = {}
    for reg, labels in grid.items():
        for label in labels:
            n = len(pool) if lit.seeds_per_cell is None else lit.seeds_per_cell.get((reg, label), 1)
            seeds[(reg, label)] = pool[:max(1, n)]
    # the data sets: only with the design's own grid on the scenes (a restricted or real-data
    # benchmark has none), and only where the own data set's cells are in the grid
    fam_rows = tuple(r for r in lit.family_rows if r in grid.get(FAMILY_REGIME, ()))
    families = (lit.families if lit.families and methods is None and regimes is None
                and P.dataset == "scenes" and len(fam_rows) == len(lit.family_rows) else ())
    fam_seeds = tuple(seeds.get((FAMILY_REGIME, AN), pool))[:lit.family_seeds] if families else ()
    return BenchmarkDesign(P, grid, seeds, tuning=tuning, scenes=tuple(families),
                           family_rows=fam_rows if families else (), family_seeds=fam_seeds)


def left_out(design: BenchmarkDesign) -> List[str]:
    """Cells of the full grid (every row where it applies × every regime, 3 or more seeds) not run."""
    out = []
    for reg in REGIMES:
        if reg not in design.grid:
            out.append(f"{reg}: every method")
            continue
        missing = [r.label for r in rows() if r.applies(reg) and r.label not in design.grid[reg]]
        if missing:
            out.append(f"{reg}: {', '.join(missing)}")
    few = sorted({row for (reg, row), s in design.seeds.items() if len(s) < 3})
    if few:
        out.append(f"fewer than 3 seeds: {', '.join(few)} (cells with one seed show no interval; "
                   f"their claims are observations)")
    return out


def trained_rows(profile) -> List[str]:
    """The rows the design of ``profile`` trains under some regime (chapter 02 says which of its
    left-out rows 07 reports)."""
    return list(dict.fromkeys(r for _, r in design(profile).cells()))
