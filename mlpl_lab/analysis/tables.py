"""Tables of finished runs (stored runs or fit results): ``{label: [run per seed]}`` in, frames out.

Every number is read at each run's best-val epoch (clean validation, as Cole et al., LL,
GR Loss and LAGC select). With several seeds a table shows the mean and the sample standard
deviation (``_std``, ddof = 1); one seed shows no spread. What a notebook *shows* is
:func:`results_view` (mean ± 95 % interval, in the one table style of
:mod:`mlpl_lab.analysis.display`); the frames here keep full precision for records and plots.
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Sequence

import numpy as np
from ..catalogue import LABEL
from ..core.convergence import (AFTER_CAPPED, AFTER_CONTROL, AFTER_OFF, AFTER_WAITING, MIN_CONVERGED_SHARE,
                                 share_percent)


def values(runs, metric: str = "test_mAP") -> np.ndarray:
    """``metric`` at the best-val epoch of each run (NaN where a run lacks it)."""
    return np.array([float(r.best.get(metric, np.nan)) for r in runs], dtype=float)


def mean_std(runs, metric: str = "test_mAP") -> tuple[float, float]:
    v = values(runs, metric)
    return float(np.nanmean(v)), (float(np.nanstd(v, ddof=1)) if len(v) > 1 else 0.0)


def results_table(results: Mapping[str, List[Any]], metrics=("test_mAP", "test_CF1", "test_OF1")):
    """A DataFrame, one row per label: each metric at the best-val epoch, mean (and std over
    seeds when there are several), the seeds, the mean best epoch and how many of the runs
    converged (``converged``: "k/n", :mod:`mlpl_lab.core.convergence`)."""
    import pandas as pd

    rows = []
    for label, runs in results.items():
        row: Dict[str, Any] = {"method": label}
        for m in metrics:
            mean, std = mean_std(runs, m)
            row[m.replace("test_", "")] = mean
            if len(runs) > 1:
                row[m.replace("test_", "") + "_std"] = std
        row["seeds"] = len(runs)
        row["best_epoch"] = float(np.mean([r.best_epoch + 1 for r in runs]))
        if all(hasattr(r, "converged") for r in runs):  # stored runs (mlpl_lab.core.convergence)
            row["converged"] = f"{sum(bool(r.converged) for r in runs)}/{len(runs)}"
        rows.append(row)
    return pd.DataFrame(rows).set_index("method")


def best_metric(results: Mapping[str, List[Any]], metric: str = "test_mAP") -> Dict[str, float]:
    """``{label: mean over seeds of metric at the best-val epoch}`` — what notebooks record."""
    return {label: mean_std(runs, metric)[0] for label, runs in results.items()}


def regimes_table(by_regime: Mapping[str, Mapping[str, List[Any]]], metric: str = "test_mAP"):
    """Rows = regimes, columns = methods: ``metric`` at the best-val epoch (mean over seeds)."""
    import pandas as pd

    return pd.DataFrame({r: best_metric(res, metric) for r, res in by_regime.items()}).T


def training_seconds(results: Mapping[str, List[Any]]) -> Dict[str, float]:
    """``{label: seconds}`` of training + per-epoch evaluation (mean over seeds)."""
    return {label: float(np.mean([sum(row.get("seconds", 0.0) for row in r.history) for r in runs]))
            for label, runs in results.items()}


def total_seconds(*result_sets) -> float:
    """Wall time of every distinct run in nested result dicts (a reused run counts once)."""
    seen = set()
    total = 0.0

    def walk(obj):
        nonlocal total
        if isinstance(obj, Mapping):
            for v in obj.values():
                walk(v)
        elif isinstance(obj, (list, tuple)):
            for v in obj:
                walk(v)
        elif hasattr(obj, "history"):
            key = getattr(getattr(obj, "spec", None), "key", None) or id(obj)
            if key not in seen:
                seen.add(key)
                total += sum(row.get("seconds", 0.0) for row in obj.history)

    for rs in result_sets:
        walk(rs)
    return total


def _runs_in(obj, prefix: str = ""):
    """``(label, run)`` for every run in nested ``{label: {label: [runs]}}`` results."""
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            yield from _runs_in(v, f"{prefix}{k} · " if not isinstance(k, tuple)
                                else prefix + " · ".join(map(str, k)) + " · ")
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _runs_in(v, prefix)
    elif hasattr(obj, "history"):
        seed = getattr(getattr(obj, "spec", None), "seed", None)
        yield f"{prefix}seed {seed}" if seed is not None else prefix.rstrip(" ·"), obj


#: a ``convergence`` record's value for a run that did not converge because its method's targets
#: move until the last epoch by design (its registry entry's flag,
#: :func:`mlpl_lab.methods.registry.is_schedule_bound`; tables mark it §)
SCHEDULE_BOUND = "schedule-bound"


#: the name a record's run-keyed twin gets (:class:`RunFlags`; ``mlpl_lab.reporting.report.record``
#: records it beside the labelled one, the protocol audit counts distinct runs from it)
RUN_KEYS_SUFFIX = " (by run key)"


class RunFlags(dict):
    """A labelled ``convergence`` record (``{label: flag}``) that also knows each run's key:
    ``run_flags`` is ``{run key: flag}``, every run once. Recording it records both, so a run
    that two chapters read, or two labels of one chapter, is counted once (the protocol audit)."""

    def __init__(self, labelled: Mapping[str, Any], run_flags: Mapping[str, Any],
                 labels: Mapping[str, str] | None = None, pilots: Mapping[str, Any] | None = None):
        super().__init__(labelled)
        self.run_flags = dict(run_flags)
        #: ``{run key: label}``: the label each run is listed under (the rows a share names)
        self.labels = dict(labels or {})
        #: ``{run key: its row's pilot verdict}`` where the pilot is stored
        #: (:func:`mlpl_lab.protocol.pilots.pilot_verdict`): it decided the run's flag
        self.pilots = dict(pilots or {})


def run_convergence(*result_sets) -> Dict[str, Any]:
    """``{run key: True | False | "schedule-bound"}`` of every distinct run in nested result
    dicts (:func:`run_flag`), each key once."""
    out: Dict[str, Any] = {}
    for rs in result_sets:
        for _, run in _runs_in(rs):
            key = getattr(getattr(run, "spec", None), "key", None)
            if key is not None and key not in out:
                out[key] = run_flag(run)
    return out


def distinct_run_counts(records: Iterable[Mapping[str, Any]]) -> Dict[str, int]:
    """``{"runs", "converged", "schedule-bound", "unconverged"}`` over the union of run-keyed
    records (``{run key: flag}``): a run in two records (two chapters, or two tables of one) is
    counted once. Schedule-bound runs are counted apart from the unconverged."""
    union: Dict[str, Any] = {}
    for rec in records:
        for key, flag in rec.items():
            union.setdefault(key, flag)
    return convergence_counts(union)


def convergence_record(*result_sets) -> Dict[str, Any]:
    """``{"<labels> · seed s": True | False | "schedule-bound"}`` of every run in nested result
    dicts (a run reached by two labels is listed under the first) — what every notebook records
    as ``convergence`` (criterion: :data:`mlpl_lab.core.convergence.CRITERION`); a
    :class:`RunFlags`, so the record also keys every run by its run key. A run that did
    not converge is ``"schedule-bound"`` when its method's registry entry says so
    (:func:`run_flag`), else False."""

    out: Dict[str, Any] = {}
    seen, labels, pilots = set(), {}, {}
    for rs in result_sets:
        for label, run in _runs_in(rs):
            key = getattr(getattr(run, "spec", None), "key", None) or id(run)
            if key in seen:
                continue
            seen.add(key)
            out[label] = run_flag(run)
            if isinstance(key, str):
                labels[key] = label
                if isinstance(getattr(run, "pilot", None), Mapping):
                    pilots[key] = dict(run.pilot)
    return RunFlags(out, run_convergence(*result_sets), labels, pilots)


def run_flag(run) -> Any:
    """One run's convergence flag: True, or :data:`SCHEDULE_BOUND` when it did not converge and
    its method (with the run's hyperparameters) is flagged schedule-bound in the registry
    (:func:`mlpl_lab.methods.registry.is_schedule_bound`), else False."""
    from ..methods.registry import is_schedule_bound

    if bool(run.converged):
        return True
    spec = getattr(run, "spec", None)
    bound = is_schedule_bound(getattr(spec, "method", None), getattr(spec, "method_params", None))
    return SCHEDULE_BOUND if bound else False


def convergence_counts(record: Mapping[str, Any]) -> Dict[str, int]:
    """``{"runs", "converged", "schedule-bound", "unconverged"}`` of a ``convergence`` record
    (older records hold only True/False)."""
    values = list(record.values())
    return {"runs": len(values), "converged": sum(v is True for v in values),
            "schedule-bound": sum(v == SCHEDULE_BOUND for v in values),
            "unconverged": sum(v is False for v in values)}


#: what a claims record's ``schedule_bound`` note says when the length check reaches the claim's
#: verdict, and when it does not (:func:`mlpl_lab.protocol.lengths.length_check_note` writes them)
LENGTH_CHECK_AGREES = "the length check agrees"
LENGTH_CHECK_DISAGREES = "the length check disagrees"


def length_check_agreement(claims: Mapping[str, Mapping[str, Any]] | None) -> Dict[str, bool]:
    """``{run key: True | False}`` from a claims record (:func:`mlpl_lab.analysis.claims.claims_record`):
    every run of a claim whose schedule-bound note says its length check agrees (True) or
    disagrees (False), and every run of that claim's control (the length check itself: the
    claim it is ``control_of``). A run read by two such claims agrees only where both do. Runs
    of claims without a length check are not listed."""
    claims = claims or {}
    said: Dict[str, bool] = {}
    for name, c in claims.items():
        note = str((c or {}).get("schedule_bound") or "")
        if LENGTH_CHECK_AGREES in note or LENGTH_CHECK_DISAGREES in note:
            said[str(c.get("id") or name)] = LENGTH_CHECK_AGREES in note
    out: Dict[str, bool] = {}
    for name, c in claims.items():
        if not isinstance(c, Mapping):
            continue
        agrees = said.get(str(c.get("id") or name), said.get(str(c.get("control_of"))))
        if agrees is None:
            continue
        for keys in (c.get("run_keys") or {}).values():
            for key in keys or ():
                out[key] = out.get(key, True) and agrees
    return out


def converged_share(flags: Mapping[str, Any], agreement: Mapping[str, bool] | None = None) -> Dict[str, Any]:
    """The protocol's share over **every** run of ``flags`` (``{run: True | False | "schedule-bound"}``,
    each run once): a run counts as converged when it converged, or when it is schedule-bound (§)
    and its length check agrees (``agreement``: ``{run: bool}``, :func:`length_check_agreement`).
    ``{"runs", "converged", "schedule-bound", "bound agreeing", "bound disagreeing", "bound
    unchecked", "unconverged", "counted converged", "share"}`` (share NaN without runs)."""
    agreement = agreement or {}
    bound = [k for k, v in flags.items() if v == SCHEDULE_BOUND]
    ok = sum(v is True for v in flags.values())
    agreeing = sum(agreement.get(k) is True for k in bound)
    n = len(flags)
    return {"runs": n, "converged": ok, "schedule-bound": len(bound), "bound agreeing": agreeing,
            "bound disagreeing": sum(agreement.get(k) is False for k in bound),
            "bound unchecked": sum(k not in agreement for k in bound),
            "unconverged": sum(v is False for v in flags.values()),
            "counted converged": ok + agreeing, "share": (ok + agreeing) / n if n else float("nan")}


def _keyed(record: Mapping[str, Any]) -> tuple[Dict[str, Any], Dict[str, str]]:
    """``({run: flag}, {run: label})`` of a convergence record: its run-keyed twin and labels
    where it is a :class:`RunFlags` that has them, else the labelled record itself."""
    flags = getattr(record, "run_flags", None)
    if isinstance(flags, dict) and flags:
        labels = getattr(record, "labels", None) or {}
        return dict(flags), {k: labels.get(k, k) for k in flags}
    return dict(record), {k: k for k in record}


#: why a run its row's pilot judged is not counted (:func:`not_converged_rows`)
PILOT_GAINED = "its row's pilot gained ≥ 0.5 test mAP trained 4/3 as long"


def pilot_gained_why(verdict: Mapping[str, Any]) -> str:
    """Why a row its pilot judged is not counted, from the verdict
    (:func:`mlpl_lab.protocol.pilots.pilot_verdict`): :data:`PILOT_GAINED` with the gain and the two
    lengths, then why the row is still at its length (the verdict's ``"after"``,
    :func:`mlpl_lab.protocol.pilots.attach_pilots`): the chapter reads it trained that long itself (a
    control), its longer runs wait to be trained, it was lengthened as often as the protocol allows,
    or the profile does not lengthen rows. Without those fields, :data:`PILOT_GAINED` alone."""
    try:
        gain, long, short = float(verdict["gain"]), int(verdict["epochs"]), int(verdict["of_epochs"])
    except (KeyError, TypeError, ValueError):
        return PILOT_GAINED
    head = f"its row's pilot gained {gain:+.2f} test mAP trained {long} epochs instead of {short} (≥ 0.5)"
    after, family = verdict.get("after"), verdict.get("family")
    if after == AFTER_CONTROL:
        return head + f"; the chapter reads this row trained {long} epochs on every seed itself, as a control"
    if after == AFTER_WAITING and family:
        return head + f"; its runs at {long} epochs wait: mlpl-lab train \"longer: {family}\""
    if after == AFTER_CAPPED:
        steps = verdict.get("max_steps")
        return head + (f"; the protocol lengthens a row at most {steps} times and this row has had them all, so it "
                       f"stays at {short} epochs" if steps else
                       f"; the protocol has lengthened this row as often as it does, so it stays at {short} epochs")
    if after == AFTER_OFF:
        return head + "; this profile does not lengthen rows"
    return head


def not_converged_rows(flags: Mapping[str, Any], labels: Mapping[str, str],
                       agreement: Mapping[str, bool] | None = None,
                       pilots: Mapping[str, Any] | None = None) -> Dict[str, Dict[str, int]]:
    """``{row: {why: runs}}`` of the runs :func:`converged_share` does not count as converged,
    each under its row (its label without the seed) and why: :data:`PILOT_GAINED` (†, where
    ``pilots``, ``{run key: pilot verdict}``, says so), "still gaining at its last epoch" (†),
    "schedule-bound, its length check disagrees" or "schedule-bound, no length check stored" (§; with
    "and " + :data:`PILOT_GAINED` where its row's pilot says so: a § row is never trained longer,
    :func:`mlpl_lab.protocol.pilots.settle`, so only a length check of its own counts it)."""
    agreement, pilots = agreement or {}, pilots or {}
    out: Dict[str, Dict[str, int]] = {}
    for key, flag in flags.items():
        if flag is True or (flag == SCHEDULE_BOUND and agreement.get(key) is True):
            continue
        verdict = pilots.get(key) or {}
        gained = verdict.get("converged") is False
        why = (pilot_gained_why(verdict) if flag is False and gained else
               "still gaining at its last epoch" if flag is False else
               "schedule-bound, its length check disagrees" if agreement.get(key) is False else
               f"schedule-bound, no length check stored and {PILOT_GAINED}" if gained else
               "schedule-bound, no length check stored")
        row = _row_of(str(labels.get(key, key)))
        out.setdefault(row, {})
        out[row][why] = out[row].get(why, 0) + 1
    return out


def share_sentence(record: Mapping[str, Any], agreement: Mapping[str, bool] | None = None,
                   what: str = "runs above") -> str:
    """The protocol's share of a chapter, computed from its ``convergence`` record (never typed):
    "Share converged: 25 of 28 distinct runs above (89 %; ...)". Every distinct run is counted, a
    schedule-bound one (§) as converged where its length check agrees (``agreement``:
    :func:`length_check_agreement`, or None where it is not read yet: then the share waits for it).
    Below :data:`~mlpl_lab.core.convergence.MIN_CONVERGED_SHARE` it names the rows whose runs it
    does not count and why."""
    flags, labels = _keyed(record)
    s = converged_share(flags, agreement)
    n = s["runs"]
    if not n:
        return "No run was trained or read above."
    if s["schedule-bound"] and agreement is None:
        return (f"Share converged: waits for the length checks of the {s['schedule-bound']} schedule-bound "
                f"run(s) (§), read with the claims below; {s['converged']} of {n} distinct {what} converged.")
    head = (f"Share converged: {s['counted converged']} of {n} distinct {what} ({share_percent(s['share'])} %; "
            f"the protocol asks at least {100 * MIN_CONVERGED_SHARE:.0f} %")
    if s["schedule-bound"]:
        head += (f"; a schedule-bound run (§) counts where its length check agrees: {s['bound agreeing']} "
                 f"of {s['schedule-bound']} do")
    head += ")."
    if s["share"] >= MIN_CONVERGED_SHARE:
        return head
    rows = not_converged_rows(flags, labels, agreement, getattr(record, "pilots", None))
    order = sorted(rows.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))
    return (head + " Below it. The rows whose runs are not counted: "
            + "; ".join(f"{row} (" + ", ".join(f"{k} run{'s' if k > 1 else ''}: {why}" for why, k in whys.items())
                        + ")" for row, whys in order) + ".")


def convergence_summary(record: Mapping[str, Any], agreement: Mapping[str, bool] | None = None) -> str:
    """"n of N runs converged", the schedule-bound count, the labels of the runs that did
    not converge for another reason, then the protocol's share (:func:`share_sentence`)."""
    c = convergence_counts(record)
    bad = [k for k, v in record.items() if v is False]
    head = f"{c['converged']} of {c['runs']} runs converged"
    if c["schedule-bound"]:
        head += f", {c['schedule-bound']} schedule-bound (§)"
    return head + (f"; not converged: {', '.join(bad)}" if bad else "") + "\n" + share_sentence(record, agreement)


def convergence_sentence(record: Mapping[str, Any], agreement: Mapping[str, bool] | None = None) -> str:
    """The sentence a notebook states about its runs, computed from its ``convergence`` record:
    "63 of 75 runs above converged; 12 did not converge († in the tables)." (never typed), then
    the protocol's share over every distinct run (:func:`share_sentence`: a schedule-bound run
    counts where its length check agrees, ``agreement``), which below
    :data:`mlpl_lab.core.convergence.MIN_CONVERGED_SHARE` names the rows it does not count and why."""
    c = convergence_counts(record)
    n, ok = c["runs"], c["converged"]
    if n == 0:
        return "No run was trained or read above."
    if ok == n:
        return f"All {n} runs above converged."
    parts = []
    if c["schedule-bound"]:
        parts.append(f"{c['schedule-bound']} are schedule-bound (§: their targets move until the last epoch by design)")
    if c["unconverged"]:
        parts.append(f"{c['unconverged']} did not converge († in the tables)")
    text = f"{ok} of {n} runs above converged; " + " and ".join(parts) + ". " + share_sentence(record, agreement)
    flags, _ = _keyed(record)
    share = converged_share(flags, agreement)["share"]
    if c["unconverged"] and share < MIN_CONVERGED_SHARE and not (c["schedule-bound"] and agreement is None):
        afters = {str((v or {}).get("after")) for v in (getattr(record, "pilots", None) or {}).values()
                  if (v or {}).get("converged") is False}
        if AFTER_WAITING in afters:
            text += (" A row whose pilot (its first seed trained 4/3 as long) gains trains longer on every "
                     "seed: the chapter reads those runs once they are stored.")
        text += (" A verdict whose losing side is among these runs is marked ⚠ at risk in the claims table, "
                 "and a row trained longer, where the design has one, is that claim's control.")
    return text


def _row_of(label: str) -> str:
    """A convergence record's run label without its seed ("single positive · AN · seed 1" → "single
    positive · AN")."""
    head, sep, tail = label.rpartition(" · seed ")
    return head if sep and tail.strip().isdigit() else label


def convergence_markdown(record: Mapping[str, Any], agreement: Mapping[str, bool] | None = None):
    """:func:`convergence_sentence` as notebook output (Markdown)."""
    from IPython.display import Markdown

    return Markdown(convergence_sentence(record, agreement))


# --- what a notebook shows (mlpl_lab.analysis.display: the one table style) --------------------

def interval_frames(results: Mapping[str, List[Any]], metrics=("test_mAP", "test_CF1", "test_OF1")):
    """``(mean, half, seeds, unconverged)``: frames with one row per label and one column per
    metric (``test_`` dropped): the mean over seeds at the best-val epoch, the half-width of its
    95 % Student-t interval (NaN for one seed), the seed count and whether a run did not converge
    (:func:`mlpl_lab.analysis.benchmark.convergence_mark`: True, False or "schedule-bound";
    :func:`mlpl_lab.analysis.benchmark.t_interval`)."""
    import pandas as pd

    from .benchmark import convergence_mark, t_interval
    from .claims import by_seed

    cols = [m.replace("test_", "") for m in metrics]
    out = [pd.DataFrame(index=list(results), columns=cols, dtype=object) for _ in range(4)]
    for label, runs in results.items():
        for m, c in zip(metrics, cols):
            mean, half, n = t_interval(by_seed(runs, m).values())
            out[0].at[label, c], out[1].at[label, c], out[2].at[label, c] = mean, half, n
            out[3].at[label, c] = convergence_mark(runs)
    return tuple(out)


def column_frames(columns: Mapping[str, Mapping[Any, List[Any]]], rows: List, metric: str = "test_mAP"):
    """:func:`interval_frames` of each column's ``{row: runs}``, side by side: ``(mean, half, seeds,
    unconverged)`` indexed by ``rows`` (NaN where a column lacks a row)."""
    import pandas as pd

    parts: List[List] = [[], [], [], []]
    for column, results in columns.items():
        for i, frame in enumerate(interval_frames(results, (metric,))):
            parts[i].append(frame.iloc[:, 0].rename(column))
    mean, half, n, unconv = (pd.concat(p, axis=1).reindex(index=rows, columns=list(columns)) for p in parts)
    return mean.astype(float), half, n, unconv


def _epochs(runs) -> str:
    """The best-val epoch (1-based) over seeds: "2", or "2–3" where the seeds differ."""
    e = sorted({int(r.best_epoch) + 1 for r in runs})
    return str(e[0]) if len(e) == 1 else f"{e[0]}–{e[-1]}"


def results_view(results: Mapping[str, List[Any]], what: str = "Test mAP, CF1 and OF1 (%) at each "
                 "run's best clean-validation epoch", metrics=("test_mAP", "test_CF1", "test_OF1"),
                 reference: Sequence[str] = (LABEL.oracle, LABEL.bce_full, LABEL.oracle_row)):
    """:func:`results_table` as a notebook shows it (:func:`mlpl_lab.analysis.display.styled`):
    each metric as mean ± 95 % interval (seeds) with † where a run did not converge, the best-val
    epoch as an integer (a range over seeds), how many runs converged; the best of each metric in
    bold, the full-label oracle left out of the comparison."""
    from .display import caption, styled

    mean, half, n, unconv = interval_frames(results, metrics)
    frame = mean.copy()
    frame["best epoch"] = [_epochs(runs) for runs in results.values()]
    if all(all(hasattr(r, "converged") for r in runs) for runs in results.values()):
        frame["converged"] = [f"{sum(bool(r.converged) for r in runs)}/{len(runs)}" for runs in results.values()]
    ref = [r for r in reference if r in frame.index]
    return styled(frame, caption(what, reference=ref), percent=list(mean.columns), half=half,
                  seeds=n, unconverged=unconv, reference=ref)


def seed_mean(runs: Sequence[Any], metric: str = "test_mAP") -> float:
    """The mean over seeds of ``metric`` at each run's best-val epoch (the one mean every table and
    choice uses; :func:`mlpl_lab.analysis.claims.by_seed` holds the per-seed values)."""
    from .claims import by_seed

    values = list(by_seed(runs, metric).values())
    if not values:
        raise ValueError(f"no runs to average {metric} over")
    return float(sum(values) / len(values))


def ablation_frames(marks: Mapping[str, Mapping[str, Any]], runs: Mapping[str, Sequence[Any]],
                    metric: str = "test_mAP", on: str = "✓", off: str = "✗"):
    """An ablation table, computed once: ``(table, half, seeds, unconverged)``.

    ``marks``: ``{row: {component: True | False | text}}`` (True → ``on``, False → ``off``, text
    as it is); ``runs``: ``{row: [runs over seeds]}``. The table holds the marks and ``metric``
    (``test_`` dropped) as the mean over seeds at the best-val epoch; the other three frames are
    :func:`interval_frames`' for that column, ready for :func:`mlpl_lab.analysis.display.styled`."""
    import pandas as pd

    missing = [row for row in marks if row not in runs]
    if missing:
        raise ValueError(f"ablation rows without runs: {missing}")
    col = metric.replace("test_", "")
    mean, half, n, unconv = interval_frames({row: runs[row] for row in marks}, (metric,))
    rows = {}
    for row, parts in marks.items():
        rows[row] = {k: (on if v is True else off if v is False else v) for k, v in parts.items()}
        rows[row][col] = float(mean.at[row, col])
    table = pd.DataFrame.from_dict(rows, orient="index")
    return table, half, n, unconv
