"""Length checks: the one rule every chapter lengthens a run by, and how a check is shown.

A schedule-bound method (GR: its w, b, μ and σ move linearly in t/T until the last epoch, Eq.
9-13) changes its targets to the end of any schedule, so its clean-validation curve can still rise
in the last quarter however long it trains (probe: ``benchmarks/records/gr_length_probe_cpu.json``,
GR re-trained at 72 and 90 epochs). Its control is the same comparison at :data:`LENGTH_FACTOR`
times the epochs, on the same seeds, with only the epochs changed (:func:`lengthen`): chapter 02's
length checks and 07's (its GR cells, and the pending checks of the other schedule-bound rows,
:mod:`mlpl_lab.protocol.bound_length`) follow this one rule.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping

from ..analysis.claims import by_seed
from .common import as_profile

#: how much longer a length check trains than the runs it checks
LENGTH_FACTOR = 4 / 3


def lengthened_epochs(epochs: int) -> int:
    """A length check's epochs for runs of ``epochs``: round(LENGTH_FACTOR × epochs), and at least
    one more (54 -> 72; 2 -> 3). The one rule of every length check (chapters 02 and 07)."""
    return max(int(epochs) + 1, int(round(LENGTH_FACTOR * int(epochs))))


def length_check_epochs(profile) -> int:
    """The length check's epochs under ``profile`` (:func:`lengthened_epochs` of the profile's)."""
    return lengthened_epochs(as_profile(profile).epochs)


def lengthen(specs, epochs: int) -> list:
    """``specs`` with only their epochs changed (the length check's runs: the same tuned setting,
    regime, seeds and data as the runs they check)."""
    return [s.replace(train=dict(s.train, epochs=epochs)) for s in specs]


def lengthen_each(family: Mapping[str, list], epochs: int) -> Dict[str, list]:
    """``{label: [RunSpec per seed]}`` with only each spec's epochs changed (:func:`lengthen`)."""
    return {label: lengthen(ss, epochs) for label, ss in family.items()}


def length_check_note(table, claim: str, check: str) -> str:
    """The schedule-bound note of ``claim`` (a claims table's row): whether its length check
    ``check`` (the same comparison at the longer schedule) reaches the same verdict as the claim
    on its own interval (``_verdict_alone``: before the check decides with it)."""
    alone = "_verdict_alone" if "_verdict_alone" in table.columns else "verdict"
    here, there = table.at[claim, alone], table.at[check, "verdict"]
    return ("schedule-bound; the length check agrees" if here == there else
            f"schedule-bound; the length check disagrees ({there} at the longer schedule)")


def length_check_runs(results, length_check: Mapping[str, list]) -> Dict[str, list]:
    """``{"<label> · <E> epochs": runs}``: each method of the check at the profile's length and at
    the longer one, side by side (what the table and the record show)."""
    return {f"{label} · {int(runs[0].spec.train['epochs'])} epochs": runs
            for label, long_runs in length_check.items() for runs in (results[label], long_runs)}


def length_check_record(results, length_check: Mapping[str, list]) -> Dict[str, Any]:
    """``{"<label> · <E> epochs": {"test_mAP": {seed: v}, "gain": {seed: last-quarter gain},
    "converged": {seed: bool}}}`` — what the notebooks record for the tests and the book."""
    return {name: {"test_mAP": {str(s): v for s, v in by_seed(runs, "test_mAP").items()},
                   "gain": {str(r.spec.seed): float(r.convergence.get("gain", float("nan"))) for r in runs},
                   "converged": {str(r.spec.seed): bool(r.converged) for r in runs}}
            for name, runs in length_check_runs(results, length_check).items()}
