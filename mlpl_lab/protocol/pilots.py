"""Pilots: the length a row trains at is checked by training one of its seeds 4/3 as long.

The last-quarter criterion every run records (:mod:`mlpl_lab.core.convergence`) misses
under-training: under a cosine schedule the clean-validation curve flattens at the end of *any*
length, so a run can look converged and still gain when trained longer. The protocol therefore
asks the next epochs directly, once per row:

* a **row** is a chapter's label within one of its families: one method under one setting, over
  its seeds;
* its **pilot** is the row's first run trained :data:`~mlpl_lab.protocol.lengths.LENGTH_FACTOR`
  times as long (:func:`~mlpl_lab.protocol.lengths.lengthened_epochs`; the same spec, seed and
  data, only the epochs changed: :func:`pilot_spec`);
* the row is **converged at its length** when the pilot's test mAP gains less than
  :data:`~mlpl_lab.core.convergence.TOLERANCE` (0.5 points) over the run it lengthens
  (:func:`pilot_verdict`). Otherwise every run of the row is *not converged* (†; § where its method
  is schedule-bound, :func:`mlpl_lab.analysis.tables.run_flag`) and the row should train longer on
  every seed, as chapter 06 found for PU-MLC.

Tuning trials get no pilot (they choose a setting; the row they choose has one). Where the chapter already asks for a longer twin of the row's first run (a length check, a longer
run at ≥ 4/3 of the epochs), that twin is the pilot (the shortest such), and a row that is itself
such a twin of another row (a length check, a longer run) gets no pilot of its own: it is a
control, judged by its last quarter. The other pilots form pending families named
``pilot: <family>`` (:func:`pilot_families`): ``mlpl-lab plan --families`` prices them, ``mlpl-lab
train "pilot: <family>"`` trains them in sittings, and a notebook reads those that are stored
(:func:`attach_pilots`, called by :func:`mlpl_lab.protocol.asked.ensure_asked`): a stored pilot
decides its row's ``converged`` (:attr:`mlpl_lab.runs.store.StoredRun.pilot`), a row without one
keeps its last-quarter flag.

**A row whose pilot gains trains longer on every seed** (:func:`settle`): where every seed's run at
the pilot's length is stored, the row *is* those runs (and its pilot is the next 4/3 step: 54 → 72
→ 96 → 128 ...); where they are not, the row stays at its length, marked †, and the longer runs are
a pending family ``longer: <family>`` that ``mlpl-lab train`` trains in a sitting. Two kinds of row
are left to their chapter: a schedule-bound method's (its targets move to the end of any schedule,
so its length check decides its claims) and a row whose pilot is a longer run the chapter asks for
itself (the chapter's own control reads that comparison).
"""
from __future__ import annotations

import json
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

from ..core.convergence import AFTER_CAPPED, AFTER_CONTROL, AFTER_OFF, AFTER_WAITING, TOLERANCE
from ..runs.spec import RunSpec
from .lengths import lengthened_epochs
from .tuning import TRIAL_FAMILIES

#: the pending family of the pilots of a chapter's family ``F`` is ``PILOT_PREFIX + F``
PILOT_PREFIX = "pilot: "
#: the pending family of the rows of ``F`` that train longer on every seed (:func:`settle`)
LONGER_PREFIX = "longer: "
#: how many 4/3 steps :func:`settle` takes a row at most (54 -> 72 -> 96 -> 128 -> 171 -> 228); a row
#: that reaches it with a gaining pilot says so in its chapter's share (:data:`AFTER_CAPPED`)
MAX_STEPS = 5
#: what a pilot's verdict is measured in (the run's selected-epoch score on the test set)
PILOT_METRIC = "test_mAP"
#: the criterion, as the records and tables state it
PILOT_CRITERION = (f"its pilot (the row's first run trained 4/3 as long) gains < {TOLERANCE} test mAP")

Row = Tuple[str, str]  # (family, label)


def pilot_family(family: str) -> str:
    """The pending family that holds the pilots of ``family``'s rows."""
    return f"{PILOT_PREFIX}{family}"


def is_pilot_family(family: str) -> bool:
    """Whether ``family`` is a pilots' family (:func:`pilot_family`)."""
    return str(family).startswith(PILOT_PREFIX)


def _epochs(spec: RunSpec) -> int:
    return int(spec.train.get("epochs", 0))


def _twin_key(spec: RunSpec) -> str:
    """Everything of ``spec`` but its epochs (its seed, data, method, the runs it starts from): two
    specs with the same twin key differ only in how long they train."""
    d = spec.as_dict()
    d["train"] = {k: v for k, v in d["train"].items() if k != "epochs"}
    return json.dumps(d, sort_keys=True)


def pilot_spec(spec: RunSpec) -> RunSpec:
    """``spec`` trained :func:`~mlpl_lab.protocol.lengths.lengthened_epochs` as long (54 -> 72)."""
    return spec.replace(train=dict(spec.train, epochs=lengthened_epochs(_epochs(spec))))


def _rows(asked) -> Iterator[Tuple[Row, List[RunSpec]]]:
    """The rows of ``asked``: every label of its ``now`` and ``pending`` families but the pilots'
    and the tuning trials' (:data:`~mlpl_lab.protocol.tuning.TRIAL_FAMILIES`: they choose a setting;
    the row they choose gets the pilot)."""
    for family, labels in list(asked.now.items()) + list(asked.pending.items()):
        if is_pilot_family(family) or family in TRIAL_FAMILIES or str(family).startswith(LONGER_PREFIX):
            continue
        for label, specs in labels.items():
            if specs and all(isinstance(s, RunSpec) for s in specs):
                yield (family, label), list(specs)


def row_pilots(asked) -> Dict[Row, RunSpec]:
    """``{(family, label): pilot spec}`` of every row of ``asked`` (its ``now`` and ``pending``
    families, a :class:`~mlpl_lab.protocol.asked.Asked`) that gets a pilot: the shortest longer twin
    the chapter asks for at ≥ :func:`~mlpl_lab.protocol.lengths.lengthened_epochs` of the row's
    epochs, else :func:`pilot_spec` of its first run. A row whose first run is itself such a twin of
    another run asked is a control and has none (module docstring)."""
    by_twin: Dict[str, List[RunSpec]] = {}
    for _, specs in _rows(asked):
        for s in specs:
            twins = by_twin.setdefault(_twin_key(s), [])
            if all(t.key != s.key for t in twins):
                twins.append(s)
    out: Dict[Row, RunSpec] = {}
    for row, specs in _rows(asked):
        first = specs[0]
        twins = by_twin[_twin_key(first)]
        if any(_epochs(first) >= lengthened_epochs(_epochs(t)) for t in twins):
            continue  # a longer twin of another run: a control
        longer = [t for t in twins if _epochs(t) >= lengthened_epochs(_epochs(first))]
        out[row] = min(longer, key=_epochs) if longer else pilot_spec(first)
    return out


def pilot_families(asked) -> Dict[str, Dict[str, List[RunSpec]]]:
    """``{"pilot: <family>": {label: [pilot spec]}}``: the pilots of :func:`row_pilots` that the
    chapter does not already ask for, each run once (under the first row that needs it)."""
    asked_keys = {s.key for _, specs in _rows(asked) for s in specs}
    out: Dict[str, Dict[str, List[RunSpec]]] = {}
    seen = set()
    for (family, label), spec in row_pilots(asked).items():
        if spec.key in asked_keys or spec.key in seen:
            continue
        seen.add(spec.key)
        out.setdefault(pilot_family(family), {})[label] = [spec]
    return out


def with_pilots(asked):
    """``asked`` with its pilots' families (:func:`pilot_families`) among its pending families: what
    the plan, ``mlpl-lab train`` and a pack's grouping of runs read."""
    return type(asked)(now=asked.now, later=asked.later, pending={**asked.pending, **pilot_families(asked)})


def _score(run) -> Optional[float]:
    value = (getattr(run, "summary", None) or {}).get(PILOT_METRIC)
    if value is None:
        value = (getattr(run, "best", None) or {}).get(PILOT_METRIC)
    return None if value is None else float(value)


def pilot_verdict(run, pilot) -> Optional[Dict[str, Any]]:
    """The verdict a stored ``pilot`` gives the row of ``run`` (the run it lengthens: same seed):
    ``{"key", "epochs", "of_epochs", "gain", "converged", "reason"}``, gain = the pilot's test mAP
    − the run's (mAP points), converged ⇔ gain < :data:`~mlpl_lab.core.convergence.TOLERANCE`.
    None where either has no test mAP."""
    a, b = _score(run), _score(pilot)
    if a is None or b is None:
        return None
    gain = b - a
    ok = gain < TOLERANCE
    e, long = _epochs(run.spec), _epochs(pilot.spec)
    reason = (f"its pilot (seed {pilot.spec.seed}, {long} epochs) gained {gain:+.2f} test mAP over {e} epochs"
              + ("" if ok else f" (≥ {TOLERANCE}): train the row longer"))
    return {"key": pilot.spec.key, "epochs": long, "of_epochs": e, "gain": float(gain),
            "converged": bool(ok), "reason": reason, "criterion": PILOT_CRITERION}


def _after(asked, family: str, label: str, pilot_key: str, asked_keys, profile) -> str:
    """What :func:`settle` did with a row whose pilot gained (:data:`AFTER_CONTROL` ...): it moves
    such a row to its longer runs where all are stored, so a row still at its length has one of
    these four reasons."""
    if pilot_key in asked_keys:
        return AFTER_CONTROL
    if label in (asked.pending.get(LONGER_PREFIX + family) or {}):
        return AFTER_WAITING
    if profile is not None and not getattr(profile, "lengthen_rows", True):
        return AFTER_OFF
    return AFTER_CAPPED


def attach_pilots(asked, runs: Mapping[str, Mapping[str, List[Any]]], stored,
                  profile=None) -> Dict[Row, Dict[str, Any]]:
    """Give every run of each row of ``runs`` (``{family: {label: [StoredRun per seed]}}``, what
    :func:`~mlpl_lab.protocol.asked.ensure_asked` returns) its row's verdict, where the row's pilot
    (:func:`row_pilots` of ``asked``, the settled rows: :func:`settle`) is stored (``stored``: a
    read-only lookup); returns ``{(family, label): verdict}``. A run reached by two rows keeps the
    first verdict. A verdict that gained also says why its row is still at its length (``"after"``,
    :func:`_after`; ``profile``: the design's) and names its ``"family"``, so a chapter's share can
    name the reason."""
    asked_keys = {s.key for _, specs in _rows(asked) for s in specs}
    out: Dict[Row, Dict[str, Any]] = {}
    for (family, label), spec in row_pilots(asked).items():
        row = list((runs.get(family) or {}).get(label) or [])
        if not row or row[0] is None:
            continue
        pilot = stored(spec)
        if pilot is None:
            continue
        verdict = pilot_verdict(row[0], pilot)
        if verdict is None:
            continue
        if not verdict["converged"]:
            verdict["after"] = _after(asked, family, label, spec.key, asked_keys, profile)
            verdict["family"] = family
            if verdict["after"] == AFTER_CAPPED:
                verdict["max_steps"] = MAX_STEPS
        out[(family, label)] = verdict
        for run in row:
            if run is not None and getattr(run, "pilot", None) is None:
                run.pilot = verdict
    return out


def settle(asked, stored, profile=None):
    """``asked`` with every row whose stored pilot gains ≥ 0.5 test mAP trained longer on every seed
    (module docstring): the row replaced by its runs at the pilot's length where all are stored (and
    checked again against its next pilot, :data:`MAX_STEPS` times at most), else those runs added as
    the pending family ``longer: <family>``. Schedule-bound rows and rows whose pilot the chapter
    asks for itself are left as they are. ``stored``: a read-only lookup; ``profile``: where given
    and its ``lengthen_rows`` is off (smoke), nothing is settled."""
    if profile is not None and not getattr(profile, "lengthen_rows", True):
        return asked
    from ..methods.registry import is_schedule_bound

    Asked = type(asked)  # the chapter's Asked (protocol.asked imports this module)
    now = {f: dict(labels) for f, labels in asked.now.items()}
    pending = {f: dict(labels) for f, labels in asked.pending.items()}
    extra: Dict[str, Dict[str, List[RunSpec]]] = {}
    for _ in range(MAX_STEPS):
        current = Asked(now=now, later=asked.later, pending=pending)
        asked_keys = {s.key for _, specs in _rows(current) for s in specs}
        changed = False
        for (family, label), pilot in row_pilots(current).items():
            where = now if family in now else pending
            specs = where[family][label]
            if pilot.key in asked_keys or is_schedule_bound(specs[0].method, specs[0].method_params):
                continue
            first, long = stored(specs[0]), stored(pilot)
            verdict = pilot_verdict(first, long) if first is not None and long is not None else None
            if verdict is None or verdict["converged"]:
                continue
            longer = [s.replace(train=dict(s.train, epochs=verdict["epochs"])) for s in specs]
            if all(stored(s) is not None for s in longer):
                where[family][label] = longer
                changed = True
            else:
                extra.setdefault(LONGER_PREFIX + family, {})[label] = longer
        if not changed:
            break
    return Asked(now=now, later=asked.later, pending={**pending, **extra})


def protocol_asked(asked, stored, profile=None):
    """What the protocol makes of a chapter's ``asked``: its rows settled (:func:`settle`), then
    their pilots among the pending families (:func:`with_pilots`). What the plan, ``mlpl-lab
    train`` and a pack's grouping read; :func:`~mlpl_lab.protocol.asked.ensure_asked` trains it.
    ``profile``: the design's (:func:`settle`)."""
    return with_pilots(settle(asked, stored, profile))


def settled_sentence(before, after) -> str:
    """What :func:`settle` changed, in words (empty when nothing): the rows read at a longer length
    than their design's, and the rows whose longer runs wait (``longer: <family>``)."""
    moved, waiting = [], []
    for family, labels in list(after.now.items()) + list(after.pending.items()):
        if str(family).startswith(LONGER_PREFIX):
            waiting += [f"{label} in {family[len(LONGER_PREFIX):]} ({_epochs(specs[0])} epochs)"
                        for label, specs in labels.items() if specs]
            continue
        old = (before.now.get(family) if family in before.now else before.pending.get(family)) or {}
        for label, specs in labels.items():
            if specs and label in old and old[label] and specs[0].key != old[label][0].key:
                moved.append(f"{label} in {family} ({_epochs(old[label][0])} → {_epochs(specs[0])} epochs)")
    out = []
    if moved:
        out.append("Read at a longer length than the design's, because the row's pilot (its first seed "
                   "trained 4/3 as long) gained ≥ 0.5 test mAP: " + "; ".join(moved) + ".")
    if waiting:
        out.append("Rows whose pilot gained and whose longer runs are not stored yet († until they are; "
                   "`mlpl-lab train \"longer: <family>\"` trains them): " + "; ".join(waiting) + ".")
    return " ".join(out)
