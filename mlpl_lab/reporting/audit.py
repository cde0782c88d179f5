"""The protocol, checked on executed notebooks: how many runs converged, how the claims stand.

``mlpl-lab report`` prints :func:`summary_text` after the series (and writes it as
``protocol.csv`` next to the HTML), so a reader sees at once whether a chapter's tables rest on
converged runs — the protocol asks every run of a key comparison to converge and at least 90 %
of all runs — and how many of its claims are findings (≥ 3 paired seeds) or observations.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Tuple

from ..analysis.tables import SCHEDULE_BOUND
from .report import read_records

#: the share of a series' runs that must converge (the protocol)
MIN_CONVERGED_SHARE = 0.9


def notebook_summary(records: Dict[str, Any]) -> Dict[str, Any]:
    """One notebook's runs (from every ``*convergence*`` record) and claims."""
    runs: Dict[str, Any] = {}
    for name, value in records.items():
        if "convergence" in name and isinstance(value, dict):
            runs.update({f"{name}: {k}": v for k, v in value.items()
                         if isinstance(v, bool) or v == SCHEDULE_BOUND})
    claims = records.get("claims") or {}
    kinds = [c.get("kind", "finding") for c in claims.values() if isinstance(c, dict)]
    verdicts = [str(c.get("verdict", "")) for c in claims.values()
                if isinstance(c, dict) and c.get("kind", "finding") == "finding"]
    # a claim on schedule-bound runs carries its control's verdict (``schedule_bound``): listed apart
    bound_claims = {k: c["schedule_bound"] for k, c in claims.items() if isinstance(c, dict) and c.get("schedule_bound")}
    unconverged_claims = [k for k, c in claims.items() if isinstance(c, dict) and k not in bound_claims
                          and c.get("converged") not in (None, "yes", True)]
    return {"runs": len(runs), "converged": sum(v is True for v in runs.values()),
            "schedule-bound": [k for k, v in runs.items() if v == SCHEDULE_BOUND],
            "not converged": [k for k, v in runs.items() if v is False],
            "claims": len(claims), "findings": sum(k == "finding" for k in kinds),
            "observations": sum(k == "observation" for k in kinds),
            "controls": sum(k == "control" for k in kinds),
            "holds": sum(v == "holds" for v in verdicts),
            "does not hold": sum(v == "does not hold" for v in verdicts),
            "claims on unconverged runs": unconverged_claims,
            "claims on schedule-bound runs": [f"{k} ({note})" for k, note in bound_claims.items()]}


def _side(values: Mapping[str, Any]) -> Tuple:
    return tuple(sorted((str(s), round(float(v), 6)) for s, v in values.items() if v is not None))


def comparison(claim: Mapping[str, Any]) -> frozenset:
    """What a claim compares, whichever chapter states it: its two sides' stored runs
    (``run_keys``), or for a record without them the per-seed values of both sides (the same
    runs give the same values). Unordered: "A beats B" and "B beats A" are one comparison."""
    keys = claim.get("run_keys") or {}
    if keys.get("a") and keys.get("b"):
        return frozenset({("runs",) + tuple(sorted(keys["a"])), ("runs",) + tuple(sorted(keys["b"]))})
    return frozenset({("values",) + _side(claim.get("a") or {}), ("values",) + _side(claim.get("b") or {})})


def distinct_findings(claims_by_notebook: Mapping[str, Mapping[str, Any]]) -> Dict[str, Any]:
    """The course's findings counted once each: ``claims_by_notebook`` is ``{notebook: its claims
    record}``; a finding (kind "finding": ≥ 3 paired seeds, not a control) that two chapters state
    on the same runs (:func:`comparison`) counts once. ``{"distinct", "stated", "shared"
    (comparisons stated in more than one notebook), "holds" and "does not hold" (in every
    notebook that states it), "differ" (the verdicts differ between notebooks: each reads it in
    its own family), "where": {comparison: [(notebook, claim, verdict)]}}``."""
    where: Dict[frozenset, List[Tuple[str, str, str]]] = {}
    for nb, claims in claims_by_notebook.items():
        for name, c in (claims or {}).items():
            if isinstance(c, Mapping) and c.get("kind") == "finding":
                where.setdefault(comparison(c), []).append((nb, name, str(c.get("verdict", ""))))
    verdicts = [{v for _, _, v in stated} for stated in where.values()]
    return {"distinct": len(where), "stated": sum(len(v) for v in where.values()),
            "shared": sum(len({nb for nb, _, _ in v}) > 1 for v in where.values()),
            "holds": sum(v == {"holds"} for v in verdicts),
            "does not hold": sum(v == {"does not hold"} for v in verdicts),
            "differ": sum(len(v) > 1 for v in verdicts), "where": where}


def summarise(executed: Iterable[Path]):
    """A DataFrame, one row per executed notebook (and a total row)."""
    import pandas as pd

    rows = {}
    for path in sorted(Path(p) for p in executed):
        s = notebook_summary(read_records(path))
        rows[path.stem] = {k: (len(v) if isinstance(v, list) else v) for k, v in s.items()}
    frame = pd.DataFrame(rows).T
    if len(frame):
        frame.loc["total"] = frame.sum(numeric_only=True)
        frame["share converged"] = (frame["converged"] / frame["runs"].where(frame["runs"] > 0)).round(3)
    return frame


def summary_text(executed: Iterable[Path]) -> str:
    """The lines ``mlpl-lab report`` prints after the series."""
    executed = list(executed)
    frame = summarise(executed)
    if not len(frame):
        return "no executed notebook to summarise"
    total = frame.loc["total"]
    share = float(total["converged"]) / float(total["runs"]) if total["runs"] else float("nan")
    bound = int(total.get("schedule-bound", 0))
    lines = [f"protocol: {int(total['converged'])} of {int(total['runs'])} runs converged "
             f"({share:.0%}; the protocol asks at least {MIN_CONVERGED_SHARE:.0%})"
             + (f", {bound} schedule-bound (§; their length check is the control)" if bound else "")
             if total["runs"] else "protocol: no run recorded its convergence"]
    for path in sorted(Path(p) for p in executed):
        s = notebook_summary(read_records(path))
        bad: List[str] = s["not converged"]
        if bad:
            lines.append(f"  {path.stem}: not converged: " + "; ".join(bad[:8])
                         + (f" (+{len(bad) - 8} more)" if len(bad) > 8 else ""))
        if s["claims on unconverged runs"]:
            lines.append(f"  {path.stem}: claims resting on an unconverged run: "
                         + "; ".join(s["claims on unconverged runs"]))
        if s["claims on schedule-bound runs"]:
            lines.append(f"  {path.stem}: claims on schedule-bound runs (§): "
                         + "; ".join(s["claims on schedule-bound runs"]))
    lines.append(f"claims, chapter by chapter: {int(total['claims'])} ({int(total['findings'])} findings on >= 3 "
                 f"paired seeds, {int(total['observations'])} observations, {int(total.get('controls', 0))} "
                 f"controls); of the findings {int(total['holds'])} hold, {int(total['does not hold'])} do not "
                 "hold, the rest are inconclusive")
    d = distinct_findings({Path(p).stem: read_records(Path(p)).get("claims") or {} for p in executed})
    lines.append(f"distinct findings of the course: {d['distinct']} ({d['stated'] - d['distinct']} stated again "
                 f"by another chapter on the same runs, counted once); {d['holds']} hold and "
                 f"{d['does not hold']} do not hold wherever stated"
                 + (f", {d['differ']} get different verdicts in different chapters (each reads it in its "
                    "own family)" if d["differ"] else ""))
    return "\n".join(lines)
