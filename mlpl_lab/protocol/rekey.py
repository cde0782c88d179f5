"""What bumping one component's version costs: the runs it re-keys and the time they take.

``mlpl-lab plan --bump COMPONENT`` answers, before anyone bumps
:data:`mlpl_lab.core.numerics.VERSIONS`: how many runs of the profile's series the bump re-keys
(:func:`rekeyed`: the runs using the component, and those starting from them, since a run's
components include those of the runs it starts from; :mod:`mlpl_lab.runs.components`), which
notebooks ask for them, and how long retraining them takes: the **recorded** seconds of each run
where the store (or the shipped course pack's manifest) has it, else the FLOP **projection** of
:mod:`mlpl_lab.protocol.plan` at ``--tflops`` or, without it, at the rate the series' recorded
runs reached (their FLOPs over their seconds), stated with its source.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from ..core.numerics import VERSIONS
from ..runs.components import check_component, components
from ..runs.spec import RunSpec
from ..runs.store import RunStore
from .plan import SeriesPlan, _hours, projection


def rekeyed(specs: Sequence[RunSpec], component: str) -> List[RunSpec]:
    """The runs of ``specs`` whose key a bump of ``component`` changes (in order)."""
    check_component(component)
    return [s for s in specs if component in components(s)]


def recorded_seconds(specs: Sequence[RunSpec], store: RunStore,
                     manifest: Optional[Dict] = None) -> Dict[str, float]:
    """``{key: seconds}`` of the runs of ``specs`` whose training time is on record: the store's
    ``summary.json`` (whatever environment made it), else the pack ``manifest``'s entry."""
    from ..runs.pack import current_keys

    packed = {}
    if manifest is not None:
        current = set(current_keys(manifest))
        packed = {str(r["key"]): float(r["seconds"]) for r in manifest["runs"]
                  if r.get("seconds") is not None and str(r["key"]) in current}
    out = {}
    for spec in specs:
        try:
            out[spec.key] = float(json.loads((store.root / spec.key / "summary.json").read_text())["seconds"])
        except (OSError, ValueError, KeyError, TypeError):
            if spec.key in packed:
                out[spec.key] = packed[spec.key]
    return out


def _flops(specs: Sequence[RunSpec]) -> float:
    groups, _ = projection(specs)
    return sum(g.flops for g in groups)


@dataclass
class BumpCost:
    component: str
    total: int                                   # distinct runs in the plan
    runs: List[RunSpec]                          # those the bump re-keys
    per_notebook: Dict[str, int]                 # the notebook that first asks for each, counted
    recorded: Dict[str, float]                   # key -> seconds on record
    projected_flops: float = 0.0                 # of the re-keyed runs without a record
    uncounted: int = 0                           # without a record, on a real dataset (no FLOPs)
    rate: Optional[float] = None                 # FLOP/s the projection uses
    rate_source: str = ""
    notes: List[str] = field(default_factory=list)

    @property
    def projected(self) -> List[RunSpec]:
        return [s for s in self.runs if s.key not in self.recorded]

    @property
    def seconds(self) -> Optional[float]:
        """Recorded seconds plus the projected ones (None where a projection has no rate)."""
        rec = sum(self.recorded[s.key] for s in self.runs if s.key in self.recorded)
        if not self.projected:
            return rec
        return None if self.rate is None else rec + self.projected_flops / self.rate


def bump_cost(plan: SeriesPlan, component: str, store: RunStore | None = None,
              manifest: Optional[Dict] = None, tflops: float | None = None) -> BumpCost:
    """What bumping ``component`` costs the series ``plan`` (see the module docstring)."""
    store = store or RunStore()
    keys = {s.key for s in plan.order}
    order = plan.order + list({s.key: s for nb in plan.notebooks for s in nb.later
                               if s.key not in keys}.values())
    hit = rekeyed(order, component)
    first = plan.first_notebook()
    for nb in plan.notebooks:
        for s in nb.later:
            first.setdefault(s.key, nb.name)
    per_nb: Dict[str, int] = {}
    for s in hit:
        per_nb[first.get(s.key, "?")] = per_nb.get(first.get(s.key, "?"), 0) + 1
    recorded_all = recorded_seconds(order, store, manifest)
    cost = BumpCost(component, len(order), hit, per_nb,
                    {k: v for k, v in recorded_all.items() if k in {s.key for s in hit}})
    missing = cost.projected
    if missing:
        groups, unknown = projection(missing)
        cost.projected_flops, cost.uncounted = sum(g.flops for g in groups), len(unknown)
        if tflops is not None:
            cost.rate, cost.rate_source = tflops * 1e12, f"--tflops {tflops:g}"
        else:
            timed = [s for s in order if s.key in recorded_all]
            flops, seconds = _flops(timed), sum(recorded_all[s.key] for s in timed)
            if flops > 0 and seconds > 0:
                cost.rate = flops / seconds
                cost.rate_source = (f"the rate the series' {len(timed)} recorded runs reached "
                                    f"({flops / 1e15:.2f} PFLOP in {seconds:,.0f} s)")
    return cost


def describe_bump(cost: BumpCost) -> str:
    """The lines ``mlpl-lab plan --bump`` prints."""
    v = VERSIONS[cost.component]
    lines = [f"bumping {cost.component} (version {v} -> {v + 1}) re-keys {len(cost.runs)} of the "
             f"{cost.total} distinct runs the series plans"
             + (": " + ", ".join(f"{nb} {n}" for nb, n in sorted(cost.per_notebook.items()))
                if cost.runs else "; nothing to retrain")]
    if not cost.runs:
        return "\n".join(lines)
    rec = [s for s in cost.runs if s.key in cost.recorded]
    if rec:
        sec = sum(cost.recorded[s.key] for s in rec)
        lines.append(f"  {len(rec)} runs with their training time on record (the store's or the shipped "
                     f"pack's): {sec:,.0f} s ({_hours(sec)}) of run time")
    if cost.projected:
        n = len(cost.projected) - cost.uncounted
        if cost.rate is not None:
            sec = cost.projected_flops / cost.rate
            lines.append(f"  {n} runs without a record, projected from their FLOPs: "
                         f"{cost.projected_flops / 1e15:.2f} PFLOP at {cost.rate / 1e12:.3g} TFLOP/s "
                         f"({cost.rate_source}): {sec:,.0f} s ({_hours(sec)})")
        else:
            lines.append(f"  {n} runs without a record: {cost.projected_flops / 1e15:.2f} PFLOP; give "
                         "--tflops X for their time (no recorded run of the series gives a rate)")
        if cost.uncounted:
            lines.append(f"  {cost.uncounted} runs on a real dataset without a record are not counted")
    total = cost.seconds
    if total is not None:
        lines.append(f"total: {len(cost.runs)} runs to retrain, {total:,.0f} s ({_hours(total)}) of "
                     "single-process run time (the series' workers share it out)")
    return "\n".join(lines)
