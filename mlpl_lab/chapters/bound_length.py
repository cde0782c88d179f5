"""Chapter 07's length checks of its schedule-bound rows, shown beside the rows they check.

A schedule-bound row (its registry entry's flag: GR, LL-R/LL-Ct/LL-Cp and their BoostLU rows,
EM+APL, OPML-SP) moves its targets until the last epoch, so its curve can still rise at any length.
Its control is the same cell, and AN's cell, again at 4/3 of the epochs on the same seeds
(:func:`mlpl_lab.chapters.benchmark.bound_check_specs`; GR's:
:func:`mlpl_lab.chapters.benchmark.length_check_specs`). A row with a paper claim gets the control as
a claim of its own; the rows without one (LL-Ct, LL-Cp, their BoostLU rows) would show it nowhere.
This module shows every stored check, claim or not: each row and AN at the profile's epochs and at
the longer schedule, side by side, and records the per-seed values. It is description (unadjusted
intervals over seeds), not a verdict."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping

from ..catalogue import LABEL

#: ``{regime: {row: {"method": runs, "AN": runs}}}``, as :attr:`BenchmarkRuns.bound_length` holds it
BoundLength = Mapping[str, Mapping[str, Mapping[str, List[Any]]]]


def _epochs(runs) -> int:
    return int(runs[0].spec.train["epochs"])


def checks(results: Mapping[str, Mapping[str, List[Any]]], gr_length: Mapping[str, Mapping[str, List[Any]]],
           bound_length: BoundLength) -> Dict[str, Dict[str, Dict[str, List[Any]]]]:
    """``{regime: {row: {"<E> epochs": runs, "<E'> epochs": runs}}}``: every schedule-bound row with a
    stored length check, and AN once per regime, at the profile's epochs (the cell in ``results``,
    ``{regime: {row: runs}}``) and at the check's (GR's from ``gr_length``, ``{regime: {"GR": runs,
    "AN": runs}}``; the others from ``bound_length``). A check whose base cell is absent is left out."""
    out: Dict[str, Dict[str, Dict[str, List[Any]]]] = {}
    for regime in sorted(set(gr_length) | set(bound_length)):
        cells = results.get(regime, {})
        pairs = {}  # row -> its runs at the longer schedule
        if LABEL.gr in (gr_length.get(regime) or {}):
            pairs[LABEL.gr] = gr_length[regime][LABEL.gr]
            pairs.setdefault(LABEL.an, gr_length[regime].get(LABEL.an))
        for row, sides in (bound_length.get(regime) or {}).items():
            pairs[row] = sides["method"]
            pairs.setdefault(LABEL.an, sides.get(LABEL.an))
        rows = {}
        for row, longer in pairs.items():
            if not longer or not cells.get(row):
                continue
            rows[row] = {f"{_epochs(cells[row])} epochs": cells[row], f"{_epochs(longer)} epochs": longer}
        if len(rows) > (LABEL.an in rows):  # at least one schedule-bound row, not AN alone
            out[regime] = dict(sorted(rows.items(), key=lambda kv: (kv[0] == LABEL.an, kv[0])))
    return out


def view_runs(table: Mapping[str, Mapping[str, Mapping[str, List[Any]]]]) -> Dict[str, List[Any]]:
    """``{"<row> · <regime> · <E> epochs": runs}``: :func:`checks` flattened for a results table."""
    return {f"{row} · {regime} · {length}": runs for regime, rows in table.items()
            for row, lengths in rows.items() for length, runs in lengths.items()}


def record(table: Mapping[str, Mapping[str, Mapping[str, List[Any]]]]) -> Dict[str, Any]:
    """``{"<row> · <regime> · <E> epochs": {"test_mAP": {seed: v}, "converged": {seed: bool}}}``:
    what the notebook records (both schedules per seed, so the change can be recomputed)."""
    from ..analysis.claims import by_seed

    return {name: {"test_mAP": {str(s): float(v) for s, v in by_seed(runs, "test_mAP").items()},
                   "converged": {str(r.spec.seed): bool(r.converged) for r in runs}}
            for name, runs in view_runs(table).items()}


def view(table: Mapping[str, Mapping[str, Mapping[str, List[Any]]]], waiting: Mapping[str, int] | None = None):
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
    return results_view(view_runs(table),
                        "Each schedule-bound row and AN at the profile's epochs and at the 4/3 longer "
                        "schedule, on the same seeds: test mAP, CF1 and OF1 (%) at each run's best "
                        "clean-validation epoch (unadjusted intervals: description, not a verdict)")
