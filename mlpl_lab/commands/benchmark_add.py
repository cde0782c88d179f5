"""``mlpl-lab benchmark --add FILE [--profile ...] [--regimes ...]``: rank your own method among the
course's rows with one command (the handbook's "Rank your own method against the course").

1. The file is read and checked before anything is written or trained
   (:mod:`mlpl_lab.methods.user_file`, :mod:`mlpl_lab.methods.user_checks`): a damaged file
   stops the command with its problem and fix, and writes nothing.
2. Its bytes are kept by content hash (:func:`mlpl_lab.methods.user_method.keep_source`); the
   shipped course pack is imported where the store lacks its runs (as ``mlpl-lab report`` does).
3. The course's cells are read from the store, never trained (:func:`mlpl_lab.protocol.user_row.course`);
   a cell not stored is left out and named. Then only the new row's runs are trained -- its
   tuning trials on the selection seed, then the kept setting on the reported seeds
   (:func:`mlpl_lab.protocol.user_row.specs`) -- after a line with their count and the time they
   should take (AN's seconds per run in the served cells); on ``--plan-workers`` worker
   processes (default one per core; 0: here, with a progress line per run and epoch).
4. Printed: each regime's rows ranked with the new one marked, the setting tuning kept, and the
   claims against AN and the best course row. Written to ``--out``: the benchmark's tables with
   the new row (``07_benchmark_add_<label>_<table>.csv``), the ranking, the claims and the trials.
"""
from __future__ import annotations

import math
import re
import time
from pathlib import Path

from .arguments import check_out_dir
from .errors import CommandError, UsageError


def check_add_args(args) -> None:
    """The method file, checked before any other argument and before anything is written."""
    from ..protocol.user_row import reserved_labels
    from ..methods.user_checks import check_user_file
    from ..methods.user_file import UserFileError

    if args.fresh or args.fresh_after is not None:
        raise UsageError("--add trains only the runs of your method that are not stored: --fresh and "
                         "--fresh-after do not apply (an edited file is new runs)")
    try:
        args.user_file = check_user_file(args.add, reserved_labels())
    except UserFileError as exc:
        raise UsageError(str(exc)) from None


def slug(label: str) -> str:
    """The label as a file-name part: lower case, runs of other characters as one ``_``."""
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")[:40] or "method"


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 90 else f"{seconds:.0f} s"


def _say(text: str) -> None:
    print(f"[mlpl-lab] {text}", flush=True)


def announce(added, course_results, missing, stored, workers: int | None = None) -> int:
    """Print what is served and what will be trained, with the time it should take (the runs
    chosen after the trials counted at the default; ``workers``: the worker processes that share
    them, None for one process); returns how many runs wait."""
    from ..chapters import benchmark as bench
    from ..protocol import tuning as tuner
    from ..protocol import user_row

    d, uf = added.design, added.file
    rows = {row for cells in course_results.values() for row in cells}
    runs = sum(len(rs) for cells in course_results.values() for rs in cells.values())
    _say(f"course rows served from the store: {len(rows)} ({runs} runs), nothing of them trained")
    for regime, cells in missing.items():
        _say(f"  left out under {regime} (runs not stored: "
             + ", ".join(f"{row} {n}" for row, n in cells.items())
             + f"); `mlpl-lab benchmark --profile {d.profile.name}` trains them")
    if not any(bench.AN in cells for cells in course_results.values()):
        raise CommandError(f"AN's runs of this design are not stored, and the new row is compared with AN: "
                           f"run `mlpl-lab benchmark --profile {d.profile.name}"
                           + (f" --regimes {' '.join(_slugs(d.grid))}" if _slugs(d.grid) else "")
                           + "` first (or import a pack that holds them)")
    asked = user_row.specs(added, stored)
    now = [s for s in asked.flat("now") if stored(s) is None]
    later = [s for s in asked.flat("later") if stored(s) is None]
    trials = len(added.points()) if added.tuned else 0
    budget = tuner.trials_for(d.profile)
    plan = (f"{trials} trial(s) on seed {d.selection_seed} per regime (the equal budget is {budget} trials "
            f"per method: the first points of the {uf.grid_size()}-point GRID), then the kept setting on seeds "
            f"{', '.join(map(str, added.seeds(next(iter(d.grid)))))}" if added.tuned else
            f"its default on seeds {', '.join(map(str, added.seeds(next(iter(d.grid)))))} (an untuned design)")
    n = len(now) + len(later)
    if not n:
        _say(f"{uf.label}: every run is stored (the file is unchanged): nothing to train")
        return 0
    per = user_row.seconds_per_run(course_results)
    eta = ""
    if per is not None:
        eta = (f"; about {_minutes(n * per)} of training one run after another, at AN's {per:.1f} s per run "
               "(its served runs, measured where they were trained)")
        if workers and workers > 1:
            # the trials run side by side, then the fresh seeds: each round takes its longest share
            rounds = -(-len(now) // workers) + -(-len(later) // workers)
            eta += f"; on {workers} worker processes, about {_minutes(rounds * per)} if each keeps that pace"
    _say(f"{uf.label}: {n} runs to train under {len(d.grid)} regime(s): {plan}{eta}")
    return n


def _slugs(grid) -> list:
    from ..protocol.regimes import REGIME_SLUGS

    names = {v: k for k, v in REGIME_SLUGS.items()}
    return [names[r] for r in grid if r in names]


def pool_size(args) -> int | None:
    """The worker processes that train the new runs (None: this process trains them)."""
    from ..runs.workers import default_workers

    n = getattr(args, "plan_workers", None)
    if n == 0 or args.workers or args.scheduler:
        return None
    return n if n is not None else default_workers(1 << 10, per_device=getattr(args, "workers_per_device", None))


def train(args, added, store) -> dict:
    """Train the new row's runs: first on worker processes (each round of the tuning stage), then
    whatever is left here; returns :func:`mlpl_lab.protocol.asked.ensure_asked`'s runs."""
    from ..protocol import user_row
    from ..protocol.asked import ensure_asked, store_lookup
    from ..protocol.plan import images_trained
    from ..runs import workers
    from ..runs.progress import chapter_progress

    stored = store_lookup(store)
    n = getattr(args, "plan_workers", None)
    if n != 0 and not (args.workers or args.scheduler):
        for _ in range(3):  # the trials, then the seeds of the setting they keep
            todo = [s for s in user_row.specs(added, stored).flat("now") if not workers.looks_stored(store, s)]
            if not todo:
                break
            report = workers.train(todo, store, workers=n, per_device=getattr(args, "workers_per_device", None),
                                   note=lambda text: print("  [workers] " + text, flush=True))
            for why in list(report.failed.values()) + list(report.skipped.values()):
                print(f"  [workers] left to this process: {why}", flush=True)
            if report.failed or report.skipped:
                break
    asked = user_row.specs(added, stored)
    left = [s for s in asked.flat("now") + asked.flat("later") if stored(s) is None]
    chapter_progress(f"benchmark --add {added.label}", {s.key: images_trained(s) for s in left},
                     images_of=images_trained)
    try:
        return ensure_asked(user_row.specs, added, store=store, label=f"benchmark --add {added.label}",
                            workers=args.workers, scheduler=args.scheduler)
    finally:
        chapter_progress(None)


def print_ranking(results, regime: str, label: str) -> None:
    """One regime's rows, best first, the new row marked."""
    from ..protocol import user_row

    frame = user_row.ranking(results, regime)
    ranked = frame[frame["rank"].notna()]
    mine = frame.loc[label, "rank"] if label in frame.index else math.nan
    where = (f"ranks {mine:g} of {len(ranked)}" if math.isfinite(mine) else "is not ranked (no runs)")
    _say(f"{regime}: {label} {where} (test mAP %, mean ± 95 % half-width (seeds); "
         f"{', '.join(frame.index[frame['rank'].isna()]) or 'no row'} shown, not ranked)")
    width = max(len(m) for m in frame.index)
    for method, row in frame.iterrows():
        rank = "" if not math.isfinite(row["rank"]) else f"{row['rank']:g}"
        mark = "▶" if method == label else " "
        print(f"  {mark} {rank:>4}  {method:<{width}}  {row['test mAP']}", flush=True)


def print_claims(table) -> None:
    """The claims, one line each: the two means, the margin with its family-wise interval, the
    seeds, the verdict and why."""
    from ..analysis.claims import CI_FAMILY

    if table.empty:
        _say("no claim: the new row has no runs beside AN's")
        return
    fam = table["family"].iloc[0]
    _say(f"claims ({fam}; paired by seed, each decided on its family-wise interval):")
    for _, row in table.iterrows():
        why = f" — {row['reason']}" if row["reason"] else ""
        print(f"    {row['claim']}: {row['ours']}; margin {row[CI_FAMILY]}; seeds {row['seeds']} → "
              f"{row['verdict']}{why}", flush=True)


def write_csv(out: Path, added, results, claims, records) -> list:
    """The benchmark's tables with the new row, its ranking per regime, its claims and trials."""
    import pandas as pd

    from ..analysis.claims import display_table
    from ..chapters import benchmark as bench
    from ..protocol import tuning as tuner
    from ..protocol import user_row

    prefix = f"07_benchmark_add_{slug(added.label)}"
    paths = bench.write_csv(bench.tables(results), out, prefix=prefix)
    ranking = pd.concat({reg: user_row.ranking(results, reg) for reg in results}, names=["regime", "method"])
    extra = {"ranking": ranking, "claims": display_table(claims)}
    trials = [tuner.tuning_frame(r) for r in records.values() if r]  # one label per record: the regime
    if trials:
        extra["trials"] = pd.concat(trials).rename_axis(["regime", "trial"])
    for name, frame in extra.items():
        path = out / f"{prefix}_{name}.csv"
        frame.to_csv(path)
        paths.append(path)
    return paths


def cmd_add(args) -> int:
    """Rank the method of ``args.add`` among the course's rows (module docstring)."""
    from ..chapters import benchmark as bench
    from ..protocol import tuning as tuner
    from ..protocol import user_row
    from ..protocol.asked import store_lookup
    from ..methods.user_method import keep_source
    from ..runs.store import RunStore
    from .progress import progress_log, tailing

    t0 = time.perf_counter()
    out = check_out_dir(args.out)
    uf = args.user_file
    kept = keep_source(uf)
    _say(f"{uf.label}: {uf.path} (a {'loss' if uf.kind == 'loss' else 'Method subclass'}, content "
         f"{uf.source}) checked on a tiny batch at {min(uf.grid_size(), 64)} grid point(s); kept as {kept}")
    from .report import import_shipped_pack

    import_shipped_pack(args.profile)
    d = bench.design(args.profile, args.methods, args.regimes, args.tuning, args.dataset, args.root,
                     args.layout or "cole")
    _say(f"benchmark, profile {args.profile}, data {args.dataset}: {d.describe()}")
    added = user_row.AddedRow(d, uf)
    store = RunStore()
    stored = store_lookup(store)
    course_results, missing = user_row.course(d, bench.specs(d, stored), bench.cell_trials(d, stored), stored)
    announce(added, course_results, missing, stored, pool_size(args))
    with progress_log(out) as progress_file, tailing(progress_file):
        runs = train(args, added, store)
    results = user_row.results(added, course_results, runs)
    records = {}
    for regime in d.grid:
        st = added.stage(regime, stored)
        records[regime] = st.record() if st.chosen else {}
        if regime in st.chosen:
            trials = records[regime][regime]["trials"]
            _say(f"{regime}: tuning kept {tuner.describe_point(st.kept(regime))} "
                 f"(clean-validation mAP on seed {d.selection_seed}: "
                 + "; ".join(f"{tuner.describe_point(t['params'])} {t['val_mAP']:.1f}" for t in trials) + ")")
    for regime in results:
        print_ranking(results, regime, uf.label)
    for regime in results:
        best = user_row.best_other(results, regime, uf.label)
        _say(f"{regime}: the best course row is {best or 'none'}"
             + (" (so the claim against AN is also the claim against the best row)" if best == bench.AN else ""))
    table = user_row.claims(results, uf.label, list(d.grid))
    print_claims(table)
    paths = write_csv(out, added, results, table, records)
    _say(f"{len(paths)} tables as CSV: {out}/07_benchmark_add_{slug(uf.label)}_*.csv")
    _say(f"benchmark --add done in {time.perf_counter() - t0:.0f} s")
    return 0
