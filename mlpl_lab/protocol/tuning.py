"""Equal-budget tuning on the clean validation split, shared by chapter 02 and the benchmark (07).

Cole et al. (2021, Sec. 4) tune every method on a clean validation set with one budget; the
papers' comparisons do the same. Here every method with a declared grid (:data:`GRIDS`, paper
default first) gets the same number of trials (:func:`trials_for`: 3, or 2 in the small CI
profiles) on the **selection seed** (the profile's first); the trial with the best clean-
validation mAP at its best epoch wins (ties: the earlier trial, i.e. the paper default). The
choice is then re-run on **fresh seeds** (:func:`fresh_seeds`: as many as the profile has seeds,
all after the selection seed) and only those are reported: a selection trial's test mAP is
biased upward by the choice. Methods with no hyperparameter of their own (the oracle, AN, WAN)
run their one configuration on the same fresh seeds, so every claim pairs by seed.

A trial holds only the values that differ from the paper default (trial 0 is ``{}``), so the
default trial *is* the untuned run: the same spec, the same stored run.

**The stage, as data** (one stage for 02 and 07)::

    stage(make, points, untuned, selection, fresh, stored) -> Stage

* ``make(label, point, seed) -> RunSpec``: the chapter's spec of ``label`` with trial ``point``
  (a dict of the values that differ from the paper default, :func:`trial_points`) on ``seed``;
  ``point is None`` for an untuned label (its one configuration, which may depend on the seed).
  The regime, scene and the profile's scale live in ``make``; a label may be any hashable (07:
  ``(regime, row)``).
* ``points``: ``{label: [point, ...]}`` of the tuned labels (the budget's first grid points, e.g.
  ``{l: trial_points(l, budget) for l in labels if l in GRIDS}``); ``untuned``: the labels that
  run one configuration on the fresh seeds with no trial.
* ``selection``: the selection seed; ``fresh``: the reported seeds; ``stored``: a
  :data:`mlpl_lab.protocol.asked.Stored` (read-only).

:class:`Stage` holds ``trials`` (``{label: [spec per point]}`` on the selection seed: always
asked now), ``chosen`` (``{label: index}`` for every tuned label whose trials are all stored:
:func:`choose` on their clean-validation mAP), ``fresh`` (``{label: [spec per fresh seed]}``
decided now: every untuned label, and every chosen label with its kept point) and ``later``
(``{label: [spec per fresh seed]}`` of the labels still waiting, under the stand-in point 0, the
paper default: for counting only). ``Stage.kept(label)`` is the chosen point, ``Stage.record()``
the :func:`tuning_record` of the chosen labels, ``Stage.asked()`` the three families ready for
:class:`mlpl_lab.protocol.asked.Asked`. Pure: it trains nothing and reads only ``stored``.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Callable, Dict, Hashable, List, Mapping, Optional, Sequence, Tuple

from ..analysis.selection import OBSERVED, best_epoch_by
from .. import catalogue
from .common import as_profile

#: row label -> {hyperparameter: values, paper default first}: each catalogue entry's grid
#: (:mod:`mlpl_lab.catalogue`). A grid is walked as a product in this order; its first
#: trials are the budget.
GRIDS: Dict[str, Dict[str, List[Any]]] = catalogue.grids()
#: trials per method (the equal budget); the small profiles that only prove the code paths in CI
#: take two, so the path from trials to a choice is still executed
TRIALS = 3
TRIALS_OF_PROFILE = {"smoke": 2, "gpu_shape": 2}
#: the family of a design's tuning trials among the runs it asks for (07's, a researcher's own row's)
TRIALS_FAMILY = "tuning trials"
#: the families that hold tuning trials (07's and a user row's; chapter 02's ``trial``): runs that
#: choose a setting, not rows; the row they choose gets the pilot (:mod:`mlpl_lab.protocol.pilots`)
TRIAL_FAMILIES = (TRIALS_FAMILY, "trial")


def trials_for(profile) -> int:
    """The budget: trials per tuned method under ``profile``."""
    return TRIALS_OF_PROFILE.get(as_profile(profile).name, TRIALS)


def trial_points(label: str, budget: int) -> List[Dict[str, Any]]:
    """The first ``budget`` points of ``label``'s grid, each holding only the values that differ
    from the paper default; ``[{}]`` for a method without a grid (one configuration)."""
    grid = GRIDS.get(label)
    if not grid:
        return [{}]
    keys = list(grid)
    default = {k: grid[k][0] for k in keys}
    points = [dict(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))]
    return [{k: v for k, v in p.items() if v != default[k]} for p in points[:budget]]


def selection_seed(profile) -> int:
    """The seed tuning selects on (never reported): the profile's first."""
    return int(as_profile(profile).seeds[0])


def fresh_seeds(profile) -> Tuple[int, ...]:
    """The reported seeds: as many as the profile has, all after the selection seed (cpu: seeds
    0-4 -> selection 0, fresh 1-5)."""
    P = as_profile(profile)
    first = selection_seed(P)
    return tuple(range(first + 1, first + 1 + len(P.seeds)))


def seeds_text(reported, selection: Optional[int] = None) -> str:
    """The seeds a chapter's tables and claims use, for its header and protocol table, and the seed
    that only selects (tuning; never reported): e.g. "1–5 (every table and claim); seed 0 only
    selects the tuned settings and is never reported"."""
    seeds = sorted({int(s) for s in reported})
    if not seeds:
        raise ValueError("no reported seeds: the design reports nothing")
    run = len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1))
    text = (f"{seeds[0]}–{seeds[-1]}" if run else ", ".join(map(str, seeds))) + " (every table and claim)"
    if selection is not None:
        if int(selection) in seeds:
            raise ValueError(f"the selection seed {selection} is also reported ({seeds}): a selected "
                             "setting's run would be scored on the seed that chose it")
        text += f"; seed {int(selection)} only selects the tuned settings and is never reported"
    return text


def choose(trials: Sequence[Tuple[Dict[str, Any], Any]]) -> int:
    """Index of the winning trial: the best clean-validation mAP at its best epoch; ties go to
    the earlier trial (the paper default first)."""
    if not trials:
        raise ValueError("no trials to choose from")
    return max(range(len(trials)), key=lambda i: (trials[i][1].best["val_mAP"], -i))


def choose_observed(runs: Sequence[Any]) -> Optional[int]:
    """Index of the trial a practitioner without clean labels would keep: the best *observed*
    validation mAP (the regime's labels on the validation split, unknown counted as negative;
    :mod:`mlpl_lab.analysis.selection`) at that trial's own best observed epoch; ties go to the
    earlier trial, as in :func:`choose`. None when a trial did not record it (a run made before
    the engine scored it, or a regime whose validation labels are fully observed)."""
    scores = [observed_best(run) for run in runs]
    if not scores or any(v is None for v in scores):
        return None
    return max(range(len(scores)), key=lambda i: (scores[i], -i))


def observed_best(run: Any) -> Optional[float]:
    """The run's best observed-validation mAP over its epochs (None where it was not recorded)."""
    epoch = best_epoch_by(run.history, OBSERVED)
    return None if epoch is None else float(run.history[epoch][OBSERVED])


Point = Dict[str, Any]
#: ``make(label, point, seed)``: the chapter's spec (``point`` None: an untuned label's one configuration)
Make = Callable[[Hashable, Optional[Point], int], Any]


@dataclass(frozen=True)
class Stage:
    """What :func:`stage` decides from what is stored (see the module docstring)."""

    points: Dict[Hashable, List[Point]]
    trials: Dict[Hashable, List[Any]]
    chosen: Dict[Hashable, int]
    runs: Dict[Hashable, List[Any]]     # the stored trial runs of the chosen labels, per point
    fresh: Dict[Hashable, List[Any]]
    later: Dict[Hashable, List[Any]]

    @property
    def decided(self) -> bool:
        """Every tuned label has its choice (nothing waits on a trial)."""
        return not self.later

    def kept(self, label: Hashable) -> Point:
        """The chosen point of ``label`` (only what differs from the paper default)."""
        return dict(self.points[label][self.chosen[label]])

    def kept_observed(self, label: Hashable) -> Optional[Point]:
        """The point observed validation would keep (:func:`choose_observed`; None where a trial
        did not record it)."""
        i = choose_observed(self.runs[label])
        return None if i is None else dict(self.points[label][i])

    def record(self) -> Dict[str, Any]:
        """:func:`tuning_record` of the chosen labels (in the order of ``points``)."""
        return tuning_record({label: list(zip(self.points[label], self.runs[label]))
                              for label in self.points if label in self.chosen}, self.chosen)

    def asked(self, trial: str = "trial", fresh: str = "fresh"):
        """``(now, later)`` families: ``{trial: trials, fresh: fresh}`` and ``{fresh: later}``."""
        return ({trial: dict(self.trials), fresh: dict(self.fresh)},
                ({fresh: dict(self.later)} if self.later else {}))


def stage(make: Make, points: Mapping[Hashable, Sequence[Point]], untuned: Sequence[Hashable],
          selection: int, fresh: Sequence[int], stored: Callable[[Any], Any]) -> Stage:
    """The tuning stage as data (the module docstring): the trials on ``selection``; for each
    tuned label whose trials are all stored, the choice on clean validation and its fresh-seed
    specs; for the others, fresh-seed specs under the stand-in point 0 in ``later``. Untuned labels
    go straight to the fresh seeds (``make(label, None, seed)``)."""
    points = {label: [dict(p) for p in pts] for label, pts in points.items()}
    if any(not pts for pts in points.values()):
        raise ValueError("a tuned label needs at least one trial point")
    overlap = set(points) & set(untuned)
    if overlap:
        raise ValueError(f"labels both tuned and untuned: {sorted(map(str, overlap))}")
    trials = {label: [make(label, p, selection) for p in pts] for label, pts in points.items()}
    chosen, runs, now, later = {}, {}, {}, {}
    for label in untuned:
        now[label] = [make(label, None, s) for s in fresh]
    for label, specs in trials.items():
        got = [stored(s) for s in specs]
        if all(r is not None for r in got):
            chosen[label] = choose(list(zip(points[label], got)))
            runs[label] = got
            now[label] = [make(label, points[label][chosen[label]], s) for s in fresh]
        else:
            later[label] = [make(label, points[label][0], s) for s in fresh]
    return Stage(points, trials, chosen, runs, now, later)


def tuning_record(trials: Mapping[str, Sequence[Tuple[Dict[str, Any], Any]]],
                  chosen: Mapping[str, int]) -> Dict[str, Any]:
    """``{label: {"trials": [{"params", "val_mAP", "best_epoch", "converged"}], "chosen": i,
    "chosen_params": {...}}}`` — what each method tried on the selection seed and kept."""
    out = {}
    for label, ts in trials.items():
        rows = [{"params": dict(p), "val_mAP": float(run.best["val_mAP"]), "val_obs_mAP": observed_best(run),
                 "best_epoch": int(run.best_epoch) + 1, "converged": bool(run.converged)} for p, run in ts]
        observed = choose_observed([run for _, run in ts])
        out[label] = {"trials": rows, "chosen": int(chosen[label]),
                      "chosen_params": dict(ts[chosen[label]][0]),
                      "chosen_observed": observed,
                      "chosen_observed_params": None if observed is None else dict(ts[observed][0])}
    return out


def tuning_frame(record: Mapping[str, Any]):
    """The record as a table: one row per method and trial, the trials' clean and observed
    validation mAP, the choice on clean labels and the one observed labels would make."""
    import pandas as pd

    rows = []
    for label, r in record.items():
        for i, t in enumerate(r["trials"]):
            observed = r.get("chosen_observed")
            rows.append({"method": label, "trial": i + 1,
                         "setting": describe_point(t["params"]),
                         "val mAP": t["val_mAP"], "chosen": "✓" if i == r["chosen"] else "",
                         "observed val mAP": t.get("val_obs_mAP"),
                         "kept on observed labels": "—" if observed is None else "✓" if i == observed else ""})
    return pd.DataFrame(rows).set_index(["method", "trial"]) if rows else pd.DataFrame()


def tuning_summary(record: Mapping[str, Any]):
    """The record in one row per method (what a notebook shows when :func:`tuning_frame` is
    longer than a screen): the trials run, the setting kept and its validation mAP, and the
    other trials' settings with theirs."""
    import pandas as pd

    rows = {}
    for label, r in record.items():
        trials, chosen = r["trials"], r["chosen"]
        observed = r.get("chosen_observed")
        rows[label] = {"trials": len(trials), "kept setting": describe_point(trials[chosen]["params"]),
                       "its val mAP": trials[chosen]["val_mAP"],
                       "kept on observed labels": "—" if observed is None else
                       "the same" if observed == chosen else describe_point(trials[observed]["params"]),
                       "the other trials (val mAP)": "; ".join(
                           f"{describe_point(t['params'])} ({t['val_mAP']:.1f})"
                           for i, t in enumerate(trials) if i != chosen) or "—"}
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "method"
    return frame


def describe_point(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "paper default"


def budgets(record: Mapping[str, Any]) -> Dict[str, int]:
    """``{label: trials run}`` (equal for every tuned method: the parity the claims rest on)."""
    return {label: len(r["trials"]) for label, r in record.items()}
