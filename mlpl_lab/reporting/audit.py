"""The protocol, checked on executed notebooks: how many runs converged, how the claims stand.

``mlpl-lab report`` prints :func:`summary_text` after the series (and writes it as
``protocol.csv`` next to the HTML), so a reader sees at once whether a chapter's tables rest on
converged runs — the protocol asks every run of a key comparison to converge and at least 90 %
of all runs — and how many of its claims are findings (≥ 3 paired seeds) or observations.

Runs are counted **by run key, each once**: per notebook over the union of its convergence
records, and for the course over the union of every notebook's (a run that two chapters read —
02's tuned rows in 07 — or that two tables of one chapter read counts once). A record without
its run-keyed twin (:data:`mlpl_lab.analysis.tables.RUN_KEYS_SUFFIX`; notebooks executed before
it existed) is counted by its labels, within its notebook. The share converged is over **every** distinct run: a
schedule-bound run (§: its method's targets move until the last epoch by design) counts as
converged where its length check agrees (a claim's note, :func:`length_check_agreement`, or the
run-keyed ``length_check_agreement`` record of a chapter that checks rows without a claim), and as
not converged where it disagrees or no check is stored.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Tuple

from ..analysis.claims import OVERTURNED
from ..analysis.tables import (RUN_KEYS_SUFFIX, SCHEDULE_BOUND, converged_share,
                               length_check_agreement)
from ..core.convergence import MIN_CONVERGED_SHARE, share_percent
from .report import read_records


def _is_flag(v: Any) -> bool:
    return isinstance(v, bool) or v == SCHEDULE_BOUND


def run_flags(records: Dict[str, Any], stem: str = "") -> Dict[str, Any]:
    """``{run: flag}`` of one notebook, each distinct run once: the run-keyed twins of its
    ``*convergence*`` records (keys: run keys, shared across notebooks), and, for a record
    without a twin, its labels (``"<stem>: <record>: <label>"``, this notebook's own)."""
    runs: Dict[str, Any] = {}
    for name, value in records.items():
        if "convergence" not in name or not isinstance(value, dict):
            continue
        if name.endswith(RUN_KEYS_SUFFIX):
            for k, v in value.items():
                if _is_flag(v):
                    runs.setdefault(k, v)
        elif name + RUN_KEYS_SUFFIX not in records:
            for k, v in value.items():
                if _is_flag(v):
                    runs.setdefault(f"{stem}: {name}: {k}", v)
    return runs


#: the record of a chapter that checks schedule-bound rows without a claim (07): ``{run key: bool}``
AGREEMENT_RECORD = "length_check_agreement"


def agreement_of(records: Mapping[str, Any]) -> Dict[str, bool]:
    """``{run key: bool}``: whether each checked schedule-bound run's length check agrees, from the
    notebook's claims (:func:`mlpl_lab.analysis.tables.length_check_agreement`) and its
    :data:`AGREEMENT_RECORD`; a run two sources judge agrees only where both say so."""
    out = dict(length_check_agreement(records.get("claims") or {}))
    for key, agrees in (records.get(AGREEMENT_RECORD) or {}).items():
        if isinstance(agrees, bool):
            out[key] = out.get(key, True) and agrees
    return out


def notebook_summary(records: Dict[str, Any], stem: str = "") -> Dict[str, Any]:
    """One notebook's distinct runs (:func:`run_flags`), how many count as converged (a § run
    where its length check agrees: :func:`agreement_of`), and its claims."""
    runs = run_flags(records, stem)
    agreement = agreement_of(records)
    labels: Dict[str, Any] = {}  # the labels of the runs that did not converge, for the listing
    for name, value in records.items():
        if "convergence" in name and not name.endswith(RUN_KEYS_SUFFIX) and isinstance(value, dict):
            labels.update({f"{name}: {k}": v for k, v in value.items() if _is_flag(v)})
    claims = records.get("claims") or {}
    kinds = [c.get("kind", "finding") for c in claims.values() if isinstance(c, dict)]
    verdicts = [str(c.get("verdict", "")) for c in claims.values()
                if isinstance(c, dict) and c.get("kind", "finding") == "finding"]
    # a claim on schedule-bound runs carries its control's verdict (``schedule_bound``): listed apart
    # a claim is named by its sentence (the record's ``claim``; an older record's key is the sentence)
    bound_claims = {c.get("claim") or k: c["schedule_bound"] for k, c in claims.items()
                    if isinstance(c, dict) and c.get("schedule_bound")}
    unconverged_claims = [c.get("claim") or k for k, c in claims.items() if isinstance(c, dict)
                          and (c.get("claim") or k) not in bound_claims and c.get("converged") not in (None, "yes", True)]
    counts = converged_share(runs, agreement)
    return {"runs": counts["runs"], "converged": counts["converged"],
            "schedule-bound": counts["schedule-bound"], "bound agreeing": counts["bound agreeing"],
            "unconverged": counts["unconverged"], "counted converged": counts["counted converged"],
            "not converged": [k for k, v in labels.items() if v is False],
            "_run_flags": runs, "_agreement": agreement,
            "claims": len(claims), "findings": sum(k == "finding" for k in kinds),
            "observations": sum(k == "observation" for k in kinds),
            "controls": sum(k == "control" for k in kinds),
            "holds": sum(v == "holds" for v in verdicts),
            "does not hold": sum(v == "does not hold" for v in verdicts),
            OVERTURNED: sum(v == OVERTURNED for v in verdicts),
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
    (comparisons stated in more than one notebook), "holds", "does not hold" and
    "overturned by its control" (in every notebook that states it), "differ" (the verdicts differ between notebooks: each reads it in
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
            OVERTURNED: sum(v == {OVERTURNED} for v in verdicts),
            "differ": sum(len(v) > 1 for v in verdicts), "where": where}


def summarise(executed: Iterable[Path]):
    """A DataFrame, one row per executed notebook and a total row. Runs are distinct runs: the
    total's run columns count the union of the notebooks' runs, each once (not their sum); its
    claim columns are sums. ``share converged``: counted converged / runs, every distinct run in
    the denominator (a § run counted converged where its length check agrees)."""
    return summarise_records({Path(p).stem: read_records(p) for p in sorted(Path(p) for p in executed)})


def summarise_records(records_by_notebook: Dict[str, Dict[str, Any]]):
    """:func:`summarise` from ``{notebook stem: its records}``."""
    import pandas as pd

    rows, union, agreement = {}, {}, {}
    for stem, records in records_by_notebook.items():
        s = notebook_summary(records, stem)
        for k, v in s["_run_flags"].items():
            union.setdefault(k, v)
        for k, v in s["_agreement"].items():
            agreement[k] = agreement.get(k, True) and v
        rows[stem] = {k: (len(v) if isinstance(v, list) else v) for k, v in s.items() if not k.startswith("_")}
    frame = pd.DataFrame(rows).T
    if len(frame):
        total = frame.sum(numeric_only=True)
        total.update(pd.Series({k: v for k, v in converged_share(union, agreement).items() if k != "share"}))
        frame.loc["total"] = total
        runs = frame["runs"]
        frame["share converged"] = (frame["counted converged"] / runs.where(runs > 0)).round(3)
    return frame


def protocol_line(row, what: str) -> str:
    """``"<what>: 180 of 200 distinct runs converged (90 %; ...; 12 are schedule-bound (§), 10 of
    them counted converged: their length check agrees)"`` from a :func:`summarise` row: every
    distinct run in the denominator."""
    n, bound = int(row["runs"]), int(row.get("schedule-bound", 0))
    ok = int(row.get("counted converged", row["converged"]))
    if not n:
        return f"{what}: no run recorded its convergence"
    agreeing = int(row.get("bound agreeing", 0))
    return (f"{what}: {ok} of {n} distinct runs converged ({share_percent(ok / n)}%; the protocol asks at least "
            f"{MIN_CONVERGED_SHARE:.0%}"
            + (f"; {bound} are schedule-bound (§), {agreeing} of them counted converged: their length check "
               "agrees" if bound else "") + ")")


def summary_text(executed: Iterable[Path]) -> str:
    """The lines ``mlpl-lab report`` prints after the series."""
    executed = list(executed)
    frame = summarise(executed)
    if not len(frame):
        return "no executed notebook to summarise"
    total = frame.loc["total"]
    lines = [protocol_line(total, "protocol")]
    for stem, row in frame.drop(index="total").iterrows():
        if row["runs"]:
            lines.append("  " + protocol_line(row, stem))
    for path in sorted(Path(p) for p in executed):
        s = notebook_summary(read_records(path), path.stem)
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
                 f"hold, {int(total.get(OVERTURNED, 0))} are overturned by their control, the rest are inconclusive")
    d = distinct_findings({Path(p).stem: read_records(Path(p)).get("claims") or {} for p in executed})
    lines.append(f"distinct findings of the course: {d['distinct']} ({d['stated'] - d['distinct']} stated again "
                 f"by another chapter on the same runs, counted once); {d['holds']} hold, "
                 f"{d['does not hold']} do not hold, {d[OVERTURNED]} are overturned by their control, wherever stated"
                 + (f", {d['differ']} get different verdicts in different chapters (each reads it in its "
                    "own family)" if d["differ"] else ""))
    return "\n".join(lines)
