"""Pending families as sittings: what each costs on this machine kind, how it is split, and
training them resumably (``mlpl-lab train``, ``mlpl-lab plan --families``).

A chapter declares runs it does not train by default as *pending* families
(:attr:`mlpl_lab.protocol.asked.Asked.pending`: 07's data sets, the length checks, the longer
runs). A pack grows by such a family trained in one sitting and exported as one part
(:mod:`mlpl_lab.runs.parts`), so each must fit a sitting: :data:`SITTING_S` on :data:`WORKERS`
workers (90 minutes on the two cores of the course machine).

**Pricing** (:func:`price`): each run the store lacks is priced on this machine kind (the device
kind runs here: ``cuda`` where a GPU is visible, else ``cpu``) from records, never from a typed
rate: the seconds per training image of the stored runs of the same *shape* (method, head, LgConv,
model, image size, device kind; their median) times the run's images
(:func:`mlpl_lab.protocol.plan.images_trained`); else the median seconds per image-pixel of every
stored run of this device kind. Runs imported from a pack were timed on another machine: their
rates are scaled by this machine's speed against them, measured on the shapes trained here too
(:func:`stored_rates`), so a slower machine's sittings are priced, and cut, at its own pace. The wall time of
a sitting assumes its runs keep the workers busy (the sum over the workers).

**Sittings** (:func:`sittings`): a family whose price passes a sitting is split, in the order
its design lists the runs, into consecutive parts that each fit one, named ``<family> [i/n]``;
``mlpl-lab train`` takes a family's name or one of its parts' names.

**Training** (:func:`train_families`) hands each sitting's missing runs to the worker pool
(:func:`mlpl_lab.runs.workers.train`): every run is stored the moment it ends, so stopping the
command (Ctrl-C, a closed laptop, a killed job) loses at most the runs in flight, and running it
again trains only what is missing. It prints each sitting's price before it starts and the pool's
progress with the time left. A family's runs are trained on one device kind: a sitting whose
stored runs came from another kind is refused before any training, naming the kind.
"""
from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..runs.spec import RunSpec
from ..runs.store import RunStore
from .common import as_profile
from .plan import _walk, chapter_design, images_trained, notebook_parameters

#: one sitting: 90 minutes of wall time ...
SITTING_S = 90 * 60
#: ... on two workers (the course machine's two cores)
WORKERS = 2


@dataclass
class Family:
    """One pending family of one notebook (or one sitting of it)."""

    notebook: str
    name: str
    #: the family's runs, dependencies first, in the order its design lists them
    specs: List[RunSpec]
    #: keys of those already in the store
    stored: List[str] = field(default_factory=list)
    #: priced seconds of each run the store lacks (one worker)
    seconds: Dict[str, float] = field(default_factory=dict)
    #: how each missing run was priced: ``shape`` or ``overall``
    how: Dict[str, str] = field(default_factory=dict)

    @property
    def missing(self) -> List[RunSpec]:
        have = set(self.stored)
        return [s for s in self.specs if s.key not in have]

    def wall(self, workers: int = WORKERS) -> float:
        """Priced wall seconds of the missing runs on ``workers`` workers, each run handed in the
        design's order to the first worker free (as the trainer does), starting no earlier than the
        missing runs it starts from end: never less than the longest run or the longest chain, so a
        pilot of one long run, or a stage two behind its stage one, is priced at its whole time."""
        from ..runs.workers import dependencies

        free = [0.0] * max(1, workers)
        ends: Dict[str, float] = {}
        for spec in self.missing:
            if spec.key in self.seconds:
                i = free.index(min(free))
                ready = max((ends.get(d.key, 0.0) for d in dependencies(spec)), default=0.0)
                ends[spec.key] = free[i] = max(free[i], ready) + self.seconds[spec.key]
        return max(free)


class FamilyError(ValueError):
    """A family name no notebook declares, or a family that cannot be trained here (the message
    names the known families or the reason, and the fix)."""


def device_kind() -> str:
    """The device kind runs train on here: ``cuda`` where a GPU is visible, else ``cpu``."""
    from ..runs.workers import gpu_count

    return "cuda" if gpu_count() else "cpu"


def pending_families(profile, notebooks: Sequence[str | Path], store: RunStore | None = None,
                     now: bool = False) -> List[Family]:
    """Every pending family the ``notebooks`` declare under ``profile``, given what the store holds
    (the choices their designs make read it), with its runs and those stored. ``now``: the families
    a notebook trains when it runs come too, after the pending ones (``mlpl-lab train`` names them
    to train one in a sitting of its own, so it joins a pack as one part)."""
    from ..runs.workers import to_train
    from .asked import store_lookup
    from .pilots import protocol_asked

    P = as_profile(profile)
    store = store or RunStore()
    stored = store_lookup(store)
    out: List[Family] = []
    for path in notebooks:
        path = Path(path)
        module, design = chapter_design(P, path.stem, notebook_parameters(path) | {"profile": P.name})
        if module is None:
            continue
        asked = protocol_asked(module.specs(design, stored), stored, P)
        for name, labels in list(asked.pending.items()) + (list(asked.now.items()) if now else []):
            specs: Dict[str, RunSpec] = {}
            for runs in labels.values():
                for spec in runs:
                    for s in _walk(spec):
                        specs.setdefault(s.key, s)
            fam = Family(path.stem, name, list(specs.values()))
            again = {s.key for s in to_train(store, fam.specs)}  # a record-only run it starts from: again
            fam.stored = [s.key for s in fam.specs if s.key not in again]
            out.append(fam)
    return out


# ------------------------------------------------------------------------------------- pricing
def _shape(spec: RunSpec) -> Tuple:
    kw = spec.train.get("model_kwargs", {}) or {}
    return (spec.method, kw.get("head", "linear"), bool(kw.get("lgconv")), spec.train.get("model", "small_cnn"),
            int(spec.data.get("image_size", 32)))


def _pixels(spec: RunSpec) -> float:
    side = int(spec.data.get("image_size", 32))
    return float(images_trained(spec)) * side * side


def stored_rates(store: RunStore, device: str) -> Tuple[Dict[Tuple, float], Optional[float]]:
    """``(seconds per training image by shape, seconds per image-pixel overall)`` of the store's
    runs made on ``device``; medians over the runs.

    A run trained in this store timed this machine; one imported from a pack (its folder holds the
    pack's origin file) timed the machine it was made on, which may be several times faster or
    slower. So a shape is priced at the median of the runs trained here where there are any; else
    at the imported runs' median times this machine's *speed factor*: the median, over the shapes
    timed both here and in the packs, of (here / there); 1 where no shape is. The overall rate is
    the median over the runs trained here and the imported runs scaled by that factor."""
    from ..runs.folders import PACK_FILE

    here: Dict[Tuple, List[float]] = {}
    there: Dict[Tuple, List[float]] = {}
    here_pixel: List[float] = []
    there_pixel: List[float] = []
    for key in store.keys():
        try:
            summary = json.loads((store.root / key / "summary.json").read_text())
            spec = RunSpec.from_dict(json.loads((store.root / key / "spec.json").read_text()))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        seconds = summary.get("seconds")
        env = summary.get("environment") or {}
        if not seconds or str(env.get("device") or "cpu").split(":")[0] != device:
            continue
        images = images_trained(spec)
        if images > 0:
            local = not (store.root / key / PACK_FILE).exists()
            (here if local else there).setdefault(_shape(spec), []).append(float(seconds) / images)
            (here_pixel if local else there_pixel).append(float(seconds) / _pixels(spec))
    here_m = {k: statistics.median(v) for k, v in here.items()}
    there_m = {k: statistics.median(v) for k, v in there.items()}
    factor = speed_factor(here_m, there_m)
    shape = {k: v * factor for k, v in there_m.items()}
    shape.update(here_m)
    overall = here_pixel + [v * factor for v in there_pixel]
    return shape, (statistics.median(overall) if overall else None)


def speed_factor(here: Dict[Tuple, float], there: Dict[Tuple, float]) -> float:
    """How much slower this machine trains than the packs' machines: the median over the shapes
    both rate maps hold of ``here / there`` (seconds per image); 1.0 when none is shared."""
    ratios = [here[k] / there[k] for k in here if k in there and there[k] > 0]
    return statistics.median(ratios) if ratios else 1.0


def price(family: Family, store: RunStore | None = None, device: str | None = None,
          rates=None) -> Family:
    """Fill ``family.seconds`` and ``family.how`` for its missing runs (see the module docstring)."""
    store = store or RunStore()
    shape, overall = rates or stored_rates(store, device or device_kind())
    family.seconds, family.how = {}, {}
    for spec in family.missing:
        if _shape(spec) in shape:
            family.seconds[spec.key] = shape[_shape(spec)] * images_trained(spec)
            family.how[spec.key] = "shape"
        elif overall is not None:
            family.seconds[spec.key], family.how[spec.key] = overall * _pixels(spec), "overall"
    return family


def priced_families(profile, notebooks: Sequence[str | Path], store: RunStore | None = None,
                    now: bool = False) -> List[Family]:
    """:func:`pending_families` (``now``: with the families the notebooks train themselves), each
    priced (:func:`price`) at the rates of this store's runs made on this machine's device kind."""
    store = store or RunStore()
    rates = stored_rates(store, device_kind())
    return [price(f, store, rates=rates) for f in pending_families(profile, notebooks, store, now=now)]


def sittings(family: Family, workers: int = WORKERS, limit_s: float = SITTING_S) -> List[Family]:
    """``family`` as it is when its missing runs fit one sitting (or it is not priced), else cut in
    the design's order into consecutive parts whose priced wall (:meth:`Family.wall`) each fits, named
    ``<family> [i/n]`` (a run's dependencies travel with it)."""
    if family.wall(workers) <= limit_s or not family.seconds:
        return [family]
    chunks: List[List[RunSpec]] = [[]]
    for spec in family.missing:
        trial = Family(family.notebook, family.name, chunks[-1] + [spec], seconds=family.seconds)
        if chunks[-1] and trial.wall(workers) > limit_s:
            chunks.append([])
        chunks[-1].append(spec)
    n = len(chunks)
    out = []
    for i, chunk in enumerate(chunks):
        keys = {s.key for s in chunk}
        part = Family(family.notebook, f"{family.name} [{i + 1}/{n}]", chunk,
                      seconds={k: v for k, v in family.seconds.items() if k in keys},
                      how={k: v for k, v in family.how.items() if k in keys})
        out.append(part)
    return out


def select(families: Sequence[Family], names: Sequence[str], workers: int = WORKERS) -> List[Family]:
    """The sittings ``names`` asks for (a family's name: all its sittings; a sitting's name: that
    one); an unknown name raises :class:`FamilyError` listing the known ones, before any training."""
    table: Dict[str, List[Family]] = {}
    for fam in families:
        parts = sittings(fam, workers)
        table.setdefault(fam.name, []).extend(parts)
        if len(parts) > 1:
            for p in parts:
                table.setdefault(p.name, []).append(p)
    unknown = [n for n in names if n not in table]
    if unknown:
        raise FamilyError(f"no notebook declares the family {unknown[0]!r}; the families: "
                          + "; ".join(sorted(table)) + " (`mlpl-lab plan --families` prices them)")
    out: Dict[str, Family] = {}
    for n in names:
        for p in table[n]:
            out.setdefault(p.name, p)
    return list(out.values())


def _minutes(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 5400 else f"{seconds / 60:.0f} min"


def describe_families(families: Sequence[Family], workers: int = WORKERS, device: str | None = None) -> str:
    """The table ``mlpl-lab plan --families`` prints: each family's runs, stored, priced wall on
    ``workers`` workers of this device kind, and its sittings."""
    device = device or device_kind()
    lines = [f"pending families, priced on this machine kind ({device}, {workers} workers; a sitting is "
             f"{SITTING_S // 60} min):"]
    for fam in families:
        parts = sittings(fam, workers)
        missing = len(fam.missing)
        how = sorted(set(fam.how.values()))
        unpriced = missing - len(fam.seconds)
        line = (f"  {fam.notebook} · {fam.name}: {len(fam.specs)} runs, {len(fam.stored)} stored"
                + (f", {missing} to train, about {_minutes(fam.wall(workers))}"
                   + (f" ({', '.join(how)} rates)" if how else "")
                   + (f", {unpriced} not priced (no stored run of this device kind)" if unpriced else "")
                   if missing else ", complete"))
        if len(parts) > 1:
            line += f"; {len(parts)} sittings: " + ", ".join(f"{p.name} ({_minutes(p.wall(workers))})" for p in parts)
        lines.append(line)
    if not families:
        lines.append("  none")
    return "\n".join(lines)


def train_families(chosen: Sequence[Family], store: RunStore | None = None, workers: int = WORKERS,
                   note: Callable[[str], None] = print, task: Callable | None = None) -> Dict[str, Any]:
    """Train each sitting's missing runs on the worker pool, one sitting after the other; returns
    ``{name: {"trained", "stored_before", "failed", "seconds"}}``. Safe to stop at any moment and
    to run again (see the module docstring)."""
    from ..runs.workers import to_train, train

    store = store or RunStore()
    here = device_kind()
    out: Dict[str, Any] = {}
    for fam in chosen:
        kinds = {_made_on(store, k) for k in fam.stored} - {None}
        if kinds - {here}:
            raise FamilyError(f"{fam.name}: its stored runs were trained on {', '.join(sorted(kinds))}, and this "
                              f"machine trains on {here}; a family's runs are trained on one device kind: "
                              "train it where its runs were trained, or retrain it whole (mlpl-lab store --clear)")
    for fam in chosen:
        todo = to_train(store, fam.specs)
        before = len(fam.specs) - len(todo)
        note(f"[mlpl-lab] {fam.notebook} · {fam.name}: {len(todo)} of {len(fam.specs)} runs to train"
             + (f", about {_minutes(fam.wall(workers))} on {workers} workers (priced from the stored runs)"
                if todo and fam.seconds else ""))
        if not todo:
            out[fam.name] = {"trained": 0, "stored_before": before, "failed": 0, "seconds": 0.0}
            continue
        report = train(todo, store=store, workers=workers, note=lambda t: note(f"[mlpl-lab]   {t}"), task=task,
                       priced=fam.wall(workers) if fam.seconds else None)
        record_sitting(store, fam.notebook, fam.name, report.trained)
        out[fam.name] = {"trained": len(report.trained), "stored_before": before, "failed": len(report.failed),
                         "seconds": report.seconds}
        note(f"[mlpl-lab] {fam.name}: {report.describe()}")
    return out


#: the store's log of which family each sitting trained (one JSON line per sitting): a pack groups a
#: run under the family whose sitting trained it (:func:`sitting_families`), so a family trained in
#: one sitting is one part even where another chapter's family also asks for some of its runs
SITTINGS_LOG = ".sittings.jsonl"


def base_family(name: str) -> str:
    """A sitting's family: ``name`` without its ``[i/n]`` part (:func:`sittings`)."""
    head, _, tail = str(name).rpartition(" [")
    return head if head and tail.endswith("]") and "/" in tail else str(name)


def record_sitting(store: RunStore, notebook: str, family: str, keys: Sequence[str]) -> None:
    """Append to the store's :data:`SITTINGS_LOG` that ``keys`` were trained as ``family`` of
    ``notebook`` (nothing when ``keys`` is empty)."""
    if not keys:
        return
    line = json.dumps({"notebook": notebook, "family": base_family(family), "keys": sorted(keys)})
    with open(store.root / SITTINGS_LOG, "a") as f:
        f.write(line + "\n")


def sitting_families(store: RunStore) -> Dict[str, Tuple[str, str]]:
    """``{key: (notebook, family)}`` of every run the store's sittings log names (the last sitting
    that trained a key wins); {} without a log. A damaged line is skipped."""
    out: Dict[str, Tuple[str, str]] = {}
    path = store.root / SITTINGS_LOG
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        try:
            entry = json.loads(line)
            for key in entry["keys"]:
                out[str(key)] = (str(entry["notebook"]), str(entry["family"]))
        except (ValueError, KeyError, TypeError):
            continue
    return out


def _made_on(store: RunStore, key: str) -> Optional[str]:
    try:
        env = json.loads((store.root / key / "summary.json").read_text()).get("environment") or {}
    except (OSError, ValueError):
        return None
    return str(env.get("device") or "cpu").split(":")[0]
