"""A chapter's runs as data: what it asks for, decided from what is stored.

Every chapter module exposes

* ``design(profile)`` -> a frozen dataclass of all of the chapter's per-profile literals (seeds,
  lengths, grids, regimes, tuning budgets), as nanoGPT's config files are literal;
* ``specs(design, stored)`` -> :class:`Asked`: a **pure** function of the design and of ``stored``
  (a read-only lookup, :data:`Stored`). ``Asked.now`` holds every run decidable from what is
  stored (choices made on validation — tuning, γ — read the stored runs they choose from);
  ``Asked.later`` holds, for each choice still waiting on runs of ``now``, the runs it will ask for
  under a *stand-in* choice (the grid's first point), so a plan can count them and their cost;
  ``Asked.pending`` holds runs the chapter designs but does **not** train by default: runs a
  later cold series makes (07's data sets, the length checks of schedule-bound methods). A
  notebook reads those of them that are stored (a pack that carries them serves them) and says
  which of its claims wait for the rest; :data:`PENDING_ENV` ``=1`` (the cold series, or a
  student who opts in) trains them like ``now``. A plan counts them apart (:func:`plan_rounds`);
* views that take the ensured runs and return tables, figures and claims.

A notebook calls :func:`ensure_asked`: ``specs`` → train what ``now`` lacks → ``specs`` again, until
nothing waits (the rounds). ``mlpl-lab plan`` calls the same ``specs`` (:func:`plan_rounds`) and
trains nothing: no dry-run proxies, no replay of notebooks.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..runs.ensure import ensure_grid, load_method
from ..runs.spec import RunSpec
from ..runs.store import RunStore, StoredRun
from .pilots import attach_pilots, pilot_families, protocol_asked, settle, settled_sentence

#: ``stored(spec)``: the stored run of ``spec``, or ``None`` (read-only; never trains)
Stored = Callable[[RunSpec], Optional[StoredRun]]
#: ``{family: {label: [RunSpec per seed]}}``
Families = Dict[str, Dict[str, List[RunSpec]]]
#: ``{family: {label: [StoredRun per seed]}}``
Runs = Dict[str, Dict[str, List[StoredRun]]]


#: set to 1 to train a chapter's pending runs (:attr:`Asked.pending`) like the others: what the cold
#: series does; without it a notebook trains none of them and reads those that are stored. Set to
#: pending families' names (separated by ``;``, e.g. ``data sets: printed letters``) to train those alone: a pack
#: can then gain one designed family at a time, each trained start to finish in one sitting
PENDING_ENV = "MLPL_LAB_TRAIN_PENDING"
#: :func:`pending_choice` when every pending family is trained
ALL_PENDING = "all"


def pending_choice():
    """What :data:`PENDING_ENV` asks: :data:`ALL_PENDING`, or the set of pending families named
    (empty: none is trained)."""
    raw = os.environ.get(PENDING_ENV, "").strip()
    if raw.lower() in ("", "0", "false", "no"):
        return frozenset()
    if raw.lower() in ("1", "true", "yes", ALL_PENDING):
        return ALL_PENDING
    return frozenset(name.strip() for name in raw.split(";") if name.strip())


def train_pending(family: str | None = None) -> bool:
    """Whether this process trains the pending runs of ``family`` (a pending family's name); with
    no family, whether it trains every pending family (:data:`PENDING_ENV`)."""
    choice = pending_choice()
    return choice == ALL_PENDING or (family is not None and family in choice)


@dataclass
class Asked:
    """What ``specs(design, stored)`` returns: the runs decidable now, the provisional runs
    of the choices that still wait on some of them (stand-ins, for counting only), and the
    pending runs (designed; trained only by the cold series or on opt-in, :data:`PENDING_ENV`).
    A pending family's name must differ from every family of ``now``."""

    now: Families
    later: Families = field(default_factory=dict)
    pending: Families = field(default_factory=dict)

    def flat(self, which: str = "now") -> List[RunSpec]:
        """The specs of ``now`` (or ``later``), in order, each key once."""
        seen: Dict[str, RunSpec] = {}
        for family in getattr(self, which).values():
            for specs in family.values():
                for s in specs:
                    seen.setdefault(s.key, s)
        return list(seen.values())


def store_lookup(store: RunStore | None = None) -> Stored:
    """A :data:`Stored` over ``store`` (the default store when ``None``): reads, never trains."""
    store = store or RunStore()

    def stored(spec: RunSpec) -> Optional[StoredRun]:
        return store.get(spec, loader=load_method)

    return stored


def nothing_stored(spec: RunSpec) -> None:
    """A :data:`Stored` for which nothing is stored (a plan from scratch)."""
    return None


def ensure_asked(specs: Callable[[Any, Stored], Asked], design: Any, store: RunStore | None = None,
                 label: str | None = None, max_rounds: int = 8, **engine) -> Runs:
    """The rounds: ``specs(design, stored)``, train what ``now`` lacks, and again until ``later``
    is empty; returns ``now``'s runs, family by family. ``engine``: ``workers=`` / ``scheduler=``
    (:func:`mlpl_lab.runs.ensure.ensure`)."""
    store = store or RunStore()
    stored = store_lookup(store)
    for _ in range(max_rounds):
        designed = specs(design, stored)
        asked = settle(designed, stored, getattr(design, "profile", None))  # a row whose pilot gains trains longer
        clash = set(asked.now) & set(asked.pending)
        if clash:
            raise ValueError(f"{getattr(specs, '__module__', specs)}.specs names families both now and "
                             f"pending: {sorted(clash)}; give the pending runs their own family")
        pilots = pilot_families(asked) if not asked.later else {}
        families = dict(asked.now) | {f: labels for f, labels in asked.pending.items() if train_pending(f)}
        families |= {f: labels for f, labels in pilots.items() if train_pending(f)}
        grid = {(fam, lab): ss for fam, labels in families.items() for lab, ss in labels.items()}
        done = ensure_grid(grid, store=store, label=label, **engine)
        if not asked.later:
            out: Runs = {fam: {} for fam in families if fam not in pilots}
            for (fam, lab), runs in done.items():
                if fam not in pilots:
                    out[fam][lab] = runs
            for fam, labels in asked.pending.items():  # not trained: the labels whose runs are all stored
                if fam in out:
                    continue
                for lab, ss in labels.items():
                    runs = [stored(s) for s in ss]
                    if runs and all(r is not None for r in runs):
                        out.setdefault(fam, {})[lab] = runs
            attach_pilots(asked, out, stored, getattr(design, "profile", None))  # a stored pilot decides its row's convergence
            said = settled_sentence(designed, asked)
            if said:
                print(said, flush=True)
            return out
    raise RuntimeError(f"{getattr(specs, '__module__', specs)}.specs still waits on results after "
                       f"{max_rounds} rounds: a choice reads a run its own round never asks for")


def pending_missing(asked: Asked, stored: Stored) -> Dict[str, Dict[str, int]]:
    """``{family: {label: runs not stored}}`` of ``asked.pending`` that this process does not train
    (:func:`train_pending`; labels with none missing left out)."""
    out: Dict[str, Dict[str, int]] = {}
    for fam, labels in asked.pending.items():
        if train_pending(fam):
            continue
        for lab, ss in labels.items():
            n = sum(stored(s) is None for s in ss)
            if n:
                out.setdefault(fam, {})[lab] = n
    return out


@dataclass
class Round:
    """One round of a plan: the runs decidable before it trains."""

    specs: List[RunSpec]
    provisional: bool  # True: stand-in choices (the real ones are made on the previous round)
    pending: bool = False  # True: designed, trained only by the cold series or on opt-in (PENDING_ENV)
    #: the names of the chapter's pending families (set on the first round)
    pending_families: Tuple[str, ...] = ()


def plan_rounds(specs: Callable[[Any, Stored], Asked], design: Any, stored: Stored = nothing_stored
                ) -> List[Round]:
    """What :func:`ensure_asked` would train, without training: round 1 is ``now`` given
    ``stored`` (with the pending runs when :func:`train_pending`); the next round is ``later``
    (provisional), when something waits; the last, the pending runs (:attr:`Round.pending`), when
    they are not trained in this process."""
    asked = protocol_asked(specs(design, stored), stored, getattr(design, "profile", None))
    trained = Asked(now={f: labels for f, labels in asked.pending.items() if train_pending(f)})
    waits = Asked(now={f: labels for f, labels in asked.pending.items() if not train_pending(f)})
    first = asked.flat("now") + trained.flat("now")
    first = list({s.key: s for s in first}.values())
    rounds = [Round(first, provisional=False, pending_families=tuple(asked.pending))]
    seen = {r.key for r in rounds[0].specs}
    later = [s for s in asked.flat("later") if s.key not in seen]
    if later:
        rounds.append(Round(later, provisional=True))
        seen |= {s.key for s in later}
    pending = [s for s in waits.flat("now") if s.key not in seen]
    if pending:
        rounds.append(Round(pending, provisional=False, pending=True))
    return rounds
