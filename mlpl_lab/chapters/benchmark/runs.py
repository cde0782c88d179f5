"""Chapter 07's runs as data: how its design (:mod:`.design`) becomes the runs it asks for, and the
ensured runs arranged for its tables, claims and views (:class:`BenchmarkRuns`).

Every cell is its row's recipe (:func:`mlpl_lab.protocol.recipes.spec_for`: the very spec a
chapter builds for the same method, so a run two chapters ask for is trained once); a tuned cell
takes the one tuning stage (:func:`mlpl_lab.protocol.tuning.stage`). Besides the cells: the tuning
trials, AN on LAC's own network (LAC's recipe's control), the length checks of the schedule-bound
rows (:mod:`mlpl_lab.protocol.lengths`: GR's asked with the cells, the others' pending) and the
data sets' runs (pending). Every label of a family is rendered from its cell by one function here
(:func:`cell_label`, :func:`trial_label`, :func:`paired_an_label`), and :func:`results` looks the
runs up by those labels, never by parsing them.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ...catalogue import LABEL
from ...protocol import tuning as tuner
from ...protocol.asked import Asked, Families, Runs, Stored
from ...protocol.lengths import length_check_epochs, lengthen, lengthened_epochs
from ...protocol.bound_length import paired_an_label as _paired_an, row_gains
from ...protocol.recipes import WITH_CELLS, row, same_head_spec, spec_for, trial_params
from ...runs.spec import RunSpec
from .design import (AN, BOUND_CHECK, FAMILIES, FAMILY_REGIME, ORACLE, REFERENCE_ROWS, SAME_HEAD_LABEL,
                     OWN_DATA_SET, SAME_HEAD_ROW, TRIALS, BenchmarkDesign, data_set_scene, merged, pending_name)

#: a cell of the grid: (regime label, row label)
Cell = Tuple[str, str]


def cell_label(row_label: str, part: str) -> str:
    """The label of a row's runs in one part of a family: ``"<row> · <regime>"`` (a length check),
    ``"<row> · <data set>"`` (a data set)."""
    return f"{row_label} · {part}"


def trial_label(cell: Cell, i: int) -> str:
    """The label of trial ``i`` (from 1) of ``cell`` among :data:`TRIALS`."""
    reg, row_label = cell
    return f"{row_label} · {reg} · trial {i}"


def paired_an_label(row_label: str, reg: str) -> str:
    """The label of AN's runs beside a row's pending length check under ``reg``."""
    return _paired_an(cell_label(row_label, reg))


def checked_with_cells(d: BenchmarkDesign) -> List[str]:
    """The rows of ``d`` whose length check is asked with the cells (their recipes': GR)."""
    return [label for label in dict.fromkeys(r for _, r in d.cells()) if row(label).recipe.length_check == WITH_CELLS]

def stages(d: BenchmarkDesign, stored: Stored) -> List[tuner.Stage]:
    """The one tuning stage (:func:`mlpl_lab.protocol.tuning.stage`) over the cells, one stage per
    set of reported seeds (a cpu grid extended by named methods reports one seed outside its key
    cells): every cell but the untuned rows' is tuned under a tuned design (a row without a grid
    has one trial, its defaults), each on the budget's first grid points; the oracle, LAC and
    every cell of an untuned design run their defaults on the reported seeds."""
    P = d.profile
    tuned = set(d.tuned_cells())

    def make(cell, point, seed):
        reg, label = cell
        return spec_for(P, label, reg, seed, None if point is None else trial_params(P, label, reg, point))

    by_seeds: Dict[Tuple[int, ...], List[Tuple[str, str]]] = {}
    for cell in d.cells():
        by_seeds.setdefault(d.seeds[cell], []).append(cell)
    budget = tuner.trials_for(P)
    return [tuner.stage(make, {c: tuner.trial_points(c[1], budget) for c in cells if c in tuned},
                        [c for c in cells if c not in tuned], tuner.selection_seed(P), seeds, stored)
            for seeds, cells in by_seeds.items()]


def cell_trials(d: BenchmarkDesign, stored: Stored) -> Dict[Cell, List[RunSpec]]:
    """``{(regime, row): [trial spec per point]}`` of every tuned cell (:func:`stages`)."""
    return {cell: list(ss) for st in stages(d, stored) for cell, ss in st.trials.items()}


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
    """``{regime: [RunSpec]}``: AN with LAC's label-query head and stage 1's schedule (LAC's
    recipe's control, :func:`mlpl_lab.protocol.recipes.same_head_spec`; chapter 05's AN row) in
    every regime with a LAC cell, on that cell's seeds (so the claim pairs all of them; chapter 05
    trains the seeds its design shares). LAC's cell differs from AN's in the head and the schedule
    as well as the loss; this row has LAC's network, so the head's share of the gain drops out
    (LAC's second stage still adds epochs: chapter 05's equal-epochs control isolates those)."""
    return {reg: [same_head_spec(d.profile, SAME_HEAD_ROW, reg, s) for s in sorted(d.seeds[(reg, SAME_HEAD_ROW)])]
            for reg, labels in d.grid.items() if SAME_HEAD_ROW in labels}


#: the family of the length checks asked with the cells (GR and AN at the longer schedule, per regime)
LENGTH_CHECK = "length check"


def length_check_specs(d: BenchmarkDesign, cells: Mapping[Tuple[str, str], List[RunSpec]],
                       stored: Stored) -> Tuple[Families, Families]:
    """``(now, later)``: the length check of every regime whose cell of a row checked with the
    cells (its recipe's: GR) did not converge as its table reads it (:func:`row_gains`: a run still
    gaining in its last quarter, or the row's pilot gaining ≥ 0.5 test mAP). GR is schedule-bound (its targets
    move until the last epoch, Eq. 9–13), so the control is the same comparison at the longer
    schedule (:func:`mlpl_lab.protocol.lengths.length_check_epochs`, chapter 02's too): the row's
    and AN's cell specs with only their epochs changed. Under uniform single positive these are
    chapter 02's own length-check runs. A regime whose runs of the row are not all stored yet waits
    in ``later`` (counted by a plan, trained only if one of them does not converge). Family
    :data:`LENGTH_CHECK`: ``{"GR · <regime>": [...], "AN · <regime>": [...]}`` (:func:`cell_label`)."""
    epochs = length_check_epochs(d.profile)
    now: Families = {}
    later: Families = {}
    checked = checked_with_cells(d)
    for reg, labels in d.grid.items():
        for label in labels:
            if label not in checked or AN not in labels or (reg, label) not in cells or (reg, AN) not in cells:
                continue
            got = [stored(s) for s in cells[(reg, label)]]
            pair = {cell_label(label, reg): lengthen(cells[(reg, label)], epochs),
                    cell_label(AN, reg): lengthen(cells[(reg, AN)], epochs)}
            if any(r is None for r in got):
                later.setdefault(LENGTH_CHECK, {}).update(pair)
            elif row_gains(cells[(reg, label)], got, stored):
                now.setdefault(LENGTH_CHECK, {}).update(pair)
    return now, later


def family_specs(d: BenchmarkDesign, cells: Mapping[Tuple[str, str], List[RunSpec]]) -> Families:
    """The data sets' runs (pending: :attr:`mlpl_lab.protocol.asked.Asked.pending`), family
    ``pending_name(FAMILIES, data set)`` per data set: ``{"<row> · <data set>": [RunSpec per seed of
    the data set]}`` for every data set but the own one (whose runs are the single-positive cells)
    and every row of the block, each with the hyperparameters of its own-data-set cell (``cells``:
    decided or stand-in specs), so no data set is tuned again. Each data set's scenes are its own
    generator arguments over the generator's defaults (not over the profile's chosen scenes) and its
    seeds its own (:meth:`BenchmarkDesign.seeds_of`). The oracle, which is not ranked and only
    checks the data set's full-label → AN gap, runs on its first seed alone (the gap is paired on
    that seed)."""
    out: Families = {}
    generator = replace(d.profile, scene={})
    for label in d.family_rows:
        cell = cells.get((FAMILY_REGIME, label))
        if not cell:
            continue
        params = cell[0].method_params
        for family in d.scenes:
            if family == OWN_DATA_SET:
                continue
            seeds = d.seeds_of(family)
            seeds = seeds[:1] if label == ORACLE else seeds
            out.setdefault(pending_name(FAMILIES, family), {})[cell_label(label, family)] = [
                spec_for(generator, label, FAMILY_REGIME, s, params, scene=data_set_scene(family)) for s in seeds]
    return out


def bound_check_specs(d: BenchmarkDesign, cells: Mapping[Tuple[str, str], List[RunSpec]],
                      stored: Stored) -> Families:
    """The pending length checks of the schedule-bound rows (their registry entry's flag: LL-R/LL-Ct/
    LL-Cp and their BoostLU rows, EM+APL, OPML-SP) whose recipe does not check them with the cells
    (GR's does): the row's and AN's cell specs with only their epochs lengthened by 4/3
    (:func:`mlpl_lab.protocol.lengths.lengthened_epochs`), in every regime where the row did not
    converge as its table reads it (:func:`row_gains`: a run still gaining in its last quarter, or the
    row's pilot gaining ≥ 0.5 test mAP) — or whose runs are not all stored yet (counted by a plan).
    One pending family per row (``pending_name(BOUND_CHECK, row)``: ``{"<row> · <regime>": [...],
    "AN for <row> · <regime>": [...]}``, :func:`cell_label`, :func:`paired_an_label`): trained by the
    cold series, not by a notebook."""
    from ...methods.registry import is_schedule_bound

    out: Families = {}
    skip = tuple(checked_with_cells(d)) + (AN,) + REFERENCE_ROWS
    for reg, labels in d.grid.items():
        if AN not in labels or (reg, AN) not in cells:
            continue
        for label in labels:
            specs_ = cells.get((reg, label))
            if label in skip or not specs_:
                continue
            if not is_schedule_bound(specs_[0].method, specs_[0].method_params):
                continue
            got = [stored(s) for s in specs_]
            if all(r is not None for r in got) and not row_gains(specs_, got, stored):
                continue
            epochs = lengthened_epochs(specs_[0].train.get("epochs", d.profile.epochs))
            fam = out.setdefault(pending_name(BOUND_CHECK, label), {})
            fam[cell_label(label, reg)] = lengthen(specs_, epochs)
            fam[paired_an_label(label, reg)] = lengthen(cells[(reg, AN)], epochs)
    return out


def family_check_specs(d: BenchmarkDesign, families: Mapping[str, Mapping[str, List[RunSpec]]],
                       stored: Stored) -> Families:
    """The pending length checks of the schedule-bound rows on the data sets ranked (``families``:
    :func:`family_specs`' families): on each data set, every schedule-bound row whose runs are
    stored and did not converge as its table reads it (:func:`row_gains`), and AN on the same data
    set, with only their epochs lengthened by 4/3 (the cells' rule, :func:`bound_check_specs`).
    One pending family per data set (``pending_name(BOUND_CHECK, data set)``: ``{"<row> · <data
    set>": [...], "AN for <row> · <data set>": [...]}``); it decides whether "<row> beats AN" on that
    data set reads the same at both lengths (:func:`.tables.length_check_agreement`)."""
    from ...methods.registry import is_schedule_bound

    out: Families = {}
    for family in d.scenes:
        rows = families.get(pending_name(FAMILIES, family)) or {}
        an = rows.get(cell_label(AN, family))
        for label in d.family_rows:
            specs_ = rows.get(cell_label(label, family))
            if not an or label == AN or not specs_ or not is_schedule_bound(specs_[0].method, specs_[0].method_params):
                continue
            got = [stored(s) for s in specs_]
            if any(r is None for r in got) or not row_gains(specs_, got, stored):
                continue
            epochs = lengthened_epochs(specs_[0].train.get("epochs", d.profile.epochs))
            fam = out.setdefault(pending_name(BOUND_CHECK, family), {})
            fam[cell_label(label, family)] = lengthen(specs_, epochs)
            fam[paired_an_label(label, family)] = lengthen(an, epochs)
    return out


def specs(d: BenchmarkDesign, stored: Stored) -> Asked:
    """Every run the benchmark asks for (pure): the tuning trials on the selection seed (tuned
    designs), each cell on its reported seeds — a tuned cell under the trial chosen on validation
    once its trials are stored (until then in ``later`` under the paper default, the stand-in) —
    LAC's own-head AN (:func:`same_head_specs`) and the length check where a GR run did not
    converge (:func:`length_check_specs`). Families: :data:`TRIALS`, one per regime (``{row:
    [runs]}``), :data:`SAME_HEAD_LABEL` (``{regime: [runs]}``) and :data:`LENGTH_CHECK`."""
    decided = stages(d, stored)
    trials = {trial_label(cell, i + 1): [spec] for st in decided
              for cell, ss in st.trials.items() for i, spec in enumerate(ss)}
    now: Families = {TRIALS: trials} if trials else {}
    later: Families = {}
    for st in decided:
        for (reg, label), ss in st.fresh.items():
            now.setdefault(reg, {})[label] = ss
        for (reg, label), ss in st.later.items():
            later.setdefault(reg, {})[label] = ss
    same_head = same_head_specs(d)
    if same_head:
        now[SAME_HEAD_LABEL] = same_head
    decided_cells = {cell: ss for st in decided for cell, ss in st.fresh.items()}
    length_now, length_later = length_check_specs(d, decided_cells, stored)
    now.update(length_now)
    later.update(length_later)
    # designed, not trained by the notebook: the data sets (under the own data set's choices,
    # stand-ins while undecided) and the other schedule-bound rows' length checks
    any_cells = {cell: ss for st in decided for cell, ss in list(st.later.items()) + list(st.fresh.items())}
    pending: Families = {}
    pending.update(family_specs(d, any_cells))
    pending.update(bound_check_specs(d, any_cells, stored))
    pending.update(family_check_specs(d, pending, stored))
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
    #: ``{data set: {row: runs}}`` of the data sets whose runs are stored (the own data set: the
    #: single-positive cells on its seeds)
    families: Dict[str, Dict[str, list]] = field(default_factory=dict)
    #: ``{regime: {row: {"method": runs, "AN": runs}}}``: the stored length checks of the other
    #: schedule-bound rows (:func:`bound_check_specs`)
    bound_length: Dict[str, Dict[str, Dict[str, list]]] = field(default_factory=dict)
    #: ``{family: {label: runs missing}}`` of the pending runs not stored (:func:`waiting`)
    waiting: Dict[str, Dict[str, int]] = field(default_factory=dict)


def waiting(d: BenchmarkDesign, store=None) -> Dict[str, Dict[str, int]]:
    """``{family: {label: runs}}`` of the pending runs (:func:`specs`) the store lacks: what the
    chapter's rank test over the data sets and its schedule-bound controls wait for (read-only)."""
    from ...protocol.asked import pending_missing, store_lookup

    stored = store_lookup(store)
    return pending_missing(specs(d, stored), stored)


def results(d: BenchmarkDesign, runs: Runs) -> BenchmarkRuns:
    """:class:`BenchmarkRuns` from the runs of ``ensure_asked(specs, d)``: the reported cells,
    LAC's own-head AN and the tuning choices (re-decided from the trial runs themselves, as
    chapter 02's)."""
    cells = {reg: {label: runs[reg][label] for label in labels} for reg, labels in d.grid.items() if labels}
    assert d.selection_seed is None or all(r.spec.seed != d.selection_seed for cell in cells.values()
                                           for rs in cell.values() for r in rs), "a selection seed is reported"
    trial = {r.spec.key: r for rs in runs.get(TRIALS, {}).values() for r in rs}

    def stored(spec):
        return trial.get(spec.key)

    length: Dict[str, Dict[str, list]] = {}
    asked = runs.get(LENGTH_CHECK, {})
    for reg in d.grid:
        for label in checked_with_cells(d) + [AN]:
            if cell_label(label, reg) in asked:
                length.setdefault(reg, {})[label] = asked[cell_label(label, reg)]
    families: Dict[str, Dict[str, list]] = {}
    if d.scenes and FAMILY_REGIME in cells:
        seeds = set(d.family_seeds)
        default = {label: [r for r in cells[FAMILY_REGIME][label] if int(r.spec.seed) in seeds]
                   for label in d.family_rows if label in cells[FAMILY_REGIME]}
        families[OWN_DATA_SET] = default
        scene_runs = merged(runs, FAMILIES)
        for family in d.scenes:
            for label in d.family_rows:
                if cell_label(label, family) in scene_runs:
                    families.setdefault(family, {})[label] = scene_runs[cell_label(label, family)]
    bound: Dict[str, Dict[str, Dict[str, list]]] = {}
    checks = merged(runs, BOUND_CHECK)
    for reg, labels in list(d.grid.items()) + [(family, d.family_rows) for family in d.scenes if family not in d.grid]:
        for label in labels:
            rs, an = checks.get(cell_label(label, reg)), checks.get(paired_an_label(label, reg))
            if rs and an:
                bound.setdefault(reg, {})[label] = {"method": rs, LABEL.an: an}
    return BenchmarkRuns(d, cells, runs.get(SAME_HEAD_LABEL, {}), *choices(d, stored), length, families, bound,
                         waiting(d))
