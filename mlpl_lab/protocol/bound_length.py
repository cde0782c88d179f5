"""Chapter 07's length checks of its schedule-bound rows, shown beside the rows they check.

A schedule-bound row (its registry entry's flag: GR, LL-R/LL-Ct/LL-Cp and their BoostLU rows,
EM+APL, OPML-SP) moves its targets until the last epoch, so its curve can still rise at any length.
Its control is the same cell, and AN's cell, again at 4/3 of the epochs on the same seeds (the
rows' recipes, :mod:`mlpl_lab.protocol.recipes`; 07 asks for them in
:func:`mlpl_lab.chapters.benchmark.bound_check_specs`, GR's in
:func:`mlpl_lab.chapters.benchmark.length_check_specs`, and on each data set the ranks are taken over
in :func:`mlpl_lab.chapters.benchmark.family_check_specs`). A row with a paper claim gets the control as
a claim of its own; the rows without one (LL-Ct, LL-Cp, their BoostLU rows) would show it nowhere.
This module shows every stored check, claim or not: each row and AN at the profile's epochs and at
the longer schedule, side by side, and records the per-seed values. It is description (unadjusted
intervals over seeds), not a verdict."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping

from ..catalogue import LABEL
from .lengths import length_check_record, length_check_runs

#: ``{regime: {row: {"method": runs, "AN": runs}}}``, as :attr:`BenchmarkRuns.bound_length` holds it
BoundLength = Mapping[str, Mapping[str, Mapping[str, List[Any]]]]
#: ``{regime: {row: runs at the longer schedule}}``: what :func:`checks` returns
Checks = Dict[str, Dict[str, List[Any]]]


def checks(results: Mapping[str, Mapping[str, List[Any]]], with_cells: Mapping[str, Mapping[str, List[Any]]],
           bound_length: BoundLength) -> Checks:
    """``{regime: {row: runs at the longer schedule}}``: every schedule-bound row with a stored
    length check (those checked with the cells, GR's, from ``with_cells``, ``{regime: {row: runs,
    "AN": runs}}``; the others from ``bound_length``), and AN once per regime, each only where its
    cell at the profile's epochs is in ``results`` (``{regime: {row: runs}}``). A regime with AN
    alone is left out."""
    out: Checks = {}
    for regime in sorted(set(with_cells) | set(bound_length)):
        cells_side, bound_side = with_cells.get(regime) or {}, bound_length.get(regime) or {}
        longer = {row: sides.get("method") for row, sides in bound_side.items()}
        longer.update({row: runs for row, runs in cells_side.items() if row != LABEL.an})
        # AN at the longer schedule: the same runs wherever a check names them (same specs, same keys)
        longer[LABEL.an] = next((r for r in [cells_side.get(LABEL.an)] + [x.get(LABEL.an) for x in bound_side.values()]
                                 if r), None)
        rows = {row: runs for row, runs in longer.items() if runs and results.get(regime, {}).get(row)}
        if len(rows) > (LABEL.an in rows):  # at least one schedule-bound row, not AN alone
            out[regime] = dict(sorted(rows.items(), key=lambda kv: (kv[0] == LABEL.an, kv[0])))
    return out


def view_runs(results: Mapping[str, Mapping[str, List[Any]]], table: Checks) -> Dict[str, List[Any]]:
    """``{"<regime> · <row> · <E> epochs": runs}``: each row of :func:`checks` at the profile's epochs
    and at the longer schedule, side by side (chapter 02's
    :func:`mlpl_lab.protocol.lengths.length_check_runs`, per regime)."""
    return {f"{regime} · {name}": runs for regime, rows in table.items()
            for name, runs in length_check_runs(results[regime], rows).items()}


def record(results: Mapping[str, Mapping[str, List[Any]]], table: Checks) -> Dict[str, Any]:
    """``{"<regime> · <row> · <E> epochs": {"test_mAP", "gain", "converged"}}`` per seed: chapter
    02's :func:`mlpl_lab.protocol.lengths.length_check_record`, per regime (both schedules, so the
    change can be recomputed)."""
    return {f"{regime} · {name}": value for regime, rows in table.items()
            for name, value in length_check_record(results[regime], rows).items()}


def view(results: Mapping[str, Mapping[str, List[Any]]], table: Checks, waiting: Mapping[str, int] | None = None):
    """The checks as the notebook shows them (:func:`mlpl_lab.analysis.tables.results_view`: mean ±
    95 % interval over seeds, † where a run did not converge, best-val epochs, converged runs), or a
    sentence when none is stored; ``waiting`` (``{label: runs}`` of the checks not trained yet) is
    said under it."""
    from IPython.display import Markdown, display

    from ..analysis.tables import results_view

    waits = sum((waiting or {}).values())
    note = (f"{waits} runs of the length checks are not trained yet (a cold series trains them; one row at a "
            "time with `MLPL_LAB_TRAIN_PENDING` naming its family)." if waits else "")
    if not table:
        return Markdown("No schedule-bound row has a stored length check yet. " + note)
    if note:
        display(Markdown(note))
    return results_view(view_runs(results, table),
                        "Each schedule-bound row and AN at the profile's epochs and at the 4/3 longer "
                        "schedule, on the same seeds: test mAP, CF1 and OF1 (%) at each run's best "
                        "clean-validation epoch (unadjusted intervals: description, not a verdict)")
