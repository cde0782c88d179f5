"""The length checks of the schedule-bound rows, shown beside the rows they check (07, 03, 08).

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
intervals over seeds), not a verdict; whether each check *agrees* (:func:`agreement`: "<row> beats
AN" decided the same at both lengths) is what the protocol's share counts a § run by.

Chapters 03 (OPML-SP) and 08 (GR) check their schedule-bound rows by the same rule, with no claim
added to their families: :func:`check_family` asks the pending family :data:`BOUND_CHECK` where a row
did not converge (:func:`row_gains`), :func:`stored_checks` reads it back in :func:`checks`' shape.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional

from ..catalogue import LABEL
from ..runs.spec import RunSpec
from .lengths import lengthen, lengthened_epochs, length_check_record, length_check_runs
from .pilots import pilot_spec, pilot_verdict

#: the pending family of a chapter's length checks of its schedule-bound rows (07: one per row or
#: data set, ``"<this>: <part>"``; 03 and 08: one)
BOUND_CHECK = "length check of schedule-bound rows"

#: ``{regime: {row: {"method": runs, "AN": runs}}}``, as :attr:`BenchmarkRuns.bound_length` holds it
BoundLength = Mapping[str, Mapping[str, Mapping[str, List[Any]]]]
#: ``{regime: {row: runs at the longer schedule}}``: what :func:`checks` returns
Checks = Dict[str, Dict[str, List[Any]]]


def paired_an_label(label: str) -> str:
    """The label of AN's runs beside ``label``'s length check (07's cells add their regime)."""
    return f"AN for {label}"


def row_gains(specs_: List[RunSpec], got: List[Any], stored: Callable[[RunSpec], Any]) -> bool:
    """Whether a row's stored runs ``got`` (of ``specs_``) did not converge as the chapter's table
    reads them: a run still gaining in its last quarter, or the row's pilot (its first run trained
    4/3 as long, :func:`mlpl_lab.protocol.pilots.pilot_spec`; for a schedule-bound row that is the
    first run of its length check) stored and gaining ≥ 0.5 test mAP over it
    (:func:`mlpl_lab.protocol.pilots.pilot_verdict`), which marks the whole row §."""
    if any(getattr(r, "converged", True) is False for r in got if r is not None):
        return True
    pilot = stored(pilot_spec(specs_[0])) if got and got[0] is not None else None
    verdict = pilot_verdict(got[0], pilot) if pilot is not None else None
    return verdict is not None and not verdict["converged"]


def check_family(rows: Mapping[str, List[RunSpec]], an: List[RunSpec],
                 stored: Callable[[RunSpec], Any]) -> Dict[str, List[RunSpec]]:
    """The length checks a chapter asks for its schedule-bound rows (03's OPML-SP, 08's GR):
    ``{row: its specs lengthened, paired_an_label(row): AN's specs on the same seeds lengthened
    alike}`` (4/3 of the row's epochs, :func:`mlpl_lab.protocol.lengths.lengthened_epochs`; only the
    epochs change), for every row of ``rows`` whose method is schedule-bound (its registry entry's
    flag) and whose runs are not all stored or did not converge (:func:`row_gains`). A row on a seed
    AN lacks is an error (the check pairs by seed)."""
    from ..methods.registry import is_schedule_bound

    by_seed = {s.seed: s for s in an}
    out: Dict[str, List[RunSpec]] = {}
    for label, specs_ in rows.items():
        if not specs_ or label == LABEL.an or not is_schedule_bound(specs_[0].method, specs_[0].method_params):
            continue
        got = [stored(s) for s in specs_]
        if all(r is not None for r in got) and not row_gains(specs_, got, stored):
            continue
        missing = [s.seed for s in specs_ if s.seed not in by_seed]
        if missing:
            raise ValueError(f"the length check of {label!r} pairs it with AN by seed, and AN has no run on "
                             f"seed(s) {missing}: give AN the row's seeds")
        epochs = lengthened_epochs(specs_[0].train.get("epochs"))
        out[label] = lengthen(specs_, epochs)
        out[paired_an_label(label)] = lengthen([by_seed[s.seed] for s in specs_], epochs)
    return out


def stored_checks(family: Mapping[str, List[Any]] | None, regime: str) -> Dict[str, Dict[str, Dict[str, List[Any]]]]:
    """``{regime: {row: {"method": runs, "AN": runs}}}`` (:data:`BoundLength`, what :func:`checks`
    reads) from the stored runs of a :func:`check_family` (``{label: runs}``, the labels whose runs
    are all stored): each row whose AN is stored too."""
    family = family or {}
    rows = {label: {"method": runs, LABEL.an: family[paired_an_label(label)]}
            for label, runs in family.items()
            if not label.startswith(paired_an_label("")) and family.get(paired_an_label(label))}
    return {regime: rows} if rows else {}


def agrees(here: List[Any], an_here: List[Any], longer: List[Any], an_longer: List[Any]) -> bool:
    """Whether "<row> beats AN" reads the same at the row's epochs (``here`` against ``an_here``) and at
    the longer schedule (``longer`` against ``an_longer``): each decided paired by seed at m = 1
    (:func:`mlpl_lab.analysis.claims.decide`; holds, does not hold or inconclusive)."""
    from ..analysis.claims import by_seed, decide, paired

    return (decide(paired(by_seed(here), by_seed(an_here)))[0]
            == decide(paired(by_seed(longer), by_seed(an_longer)))[0])


def agreement(results: Mapping[str, Mapping[str, List[Any]]], table: Checks,
              decided: Optional[Mapping[str, bool]] = None) -> Dict[str, bool]:
    """``{run key: bool}`` of every check in ``table`` (:func:`checks`) against ``results``
    (``{regime: {row: runs}}``): :func:`agrees`, listed for the row's runs at both lengths (a run two
    checks read agrees only where both do). A row any of whose runs ``decided`` already judges (07:
    a paper claim's note) is left to it."""
    decided = decided or {}
    out: Dict[str, bool] = {}
    for regime, checked in table.items():
        an_here, an_long = results[regime].get(LABEL.an), checked.get(LABEL.an)
        for row, longer in checked.items():
            here = results[regime].get(row)
            if row == LABEL.an or not here or not an_here or not an_long:
                continue
            keys = [k for k in (getattr(getattr(r, "spec", None), "key", None) for r in list(here) + list(longer))
                    if isinstance(k, str)]
            if any(k in decided for k in keys):
                continue
            ok = agrees(here, an_here, longer, an_long)
            for k in keys:
                out[k] = out.get(k, True) and ok
    return out


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


# --- one chapter's checks (03's OPML-SP, 08's GR): the rows of one regime and one pending family --
def chapter_table(rows: Mapping[str, List[Any]], family: Mapping[str, List[Any]] | None, regime: str) -> Checks:
    """:func:`checks` of a chapter whose rows (``{row: runs}``) are under one ``regime`` and whose
    checks are the stored runs of one :func:`check_family` (``family``: ``{label: runs}``)."""
    return checks({regime: rows}, {}, stored_checks(family, regime))


def chapter_record(rows: Mapping[str, List[Any]], family: Mapping[str, List[Any]] | None, regime: str) -> Dict[str, Any]:
    """:func:`record` of :func:`chapter_table` (per seed, both lengths)."""
    return record({regime: rows}, chapter_table(rows, family, regime))


def chapter_view(rows: Mapping[str, List[Any]], family: Mapping[str, List[Any]] | None, regime: str,
                 waiting: Mapping[str, int] | None = None):
    """:func:`view` of :func:`chapter_table` (``waiting``: ``{label: runs}`` of the check not trained yet)."""
    return view({regime: rows}, chapter_table(rows, family, regime), waiting)


def chapter_agreement(rows: Mapping[str, List[Any]], family: Mapping[str, List[Any]] | None, regime: str,
                      said: Mapping[str, bool] | None = None) -> Dict[str, bool]:
    """``said`` (``{run key: bool}`` from the claims' notes,
    :func:`mlpl_lab.analysis.tables.length_check_agreement`) and :func:`agreement` of
    :func:`chapter_table`, a run judged by both agreeing only where both do: what the protocol's
    share counts a chapter's § runs by."""
    out = dict(said or {})
    for key, ok in agreement({regime: rows}, chapter_table(rows, family, regime)).items():
        out[key] = out.get(key, True) and ok
    return out


def claims_agreement(rows: Mapping[str, List[Any]], family: Mapping[str, List[Any]] | None, regime: str,
                     claims) -> Dict[str, bool]:
    """:func:`chapter_agreement` with ``said`` read from the notes of a chapter's claims table
    (:func:`mlpl_lab.analysis.claims.claims_record`, :func:`mlpl_lab.analysis.tables.length_check_agreement`):
    what 02, 03 and 08 record as ``length_check_agreement``."""
    from ..analysis.claims import claims_record
    from ..analysis.tables import length_check_agreement

    return chapter_agreement(rows, family, regime, length_check_agreement(claims_record(claims)))
