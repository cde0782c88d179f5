"""What notebook 07 shows: every view takes the design or the tables and runs it is given
(:mod:`.tables`, :class:`.runs.BenchmarkRuns`) and returns a styled table, a figure's caption or
Markdown, in the lab's one table style (:mod:`mlpl_lab.analysis.display`). No view asks for a run.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from ...analysis import benchmark as bm
from ...protocol import tuning as tuner
from ...protocol.common import as_profile
from ...protocol.recipes import opml_epochs, rows
from ...protocol.regimes import REGIMES, regime_definition
from ...protocol import bound_length
from .design import (BOUND_CHECK, FAMILY_MIN_GAP, ORACLE, REFERENCE_ROWS, TUNING_GRIDS, BenchmarkDesign, design,
                     merged)
from .runs import BenchmarkRuns
from .tables import (bound_length_table, checked_results, family_frame, family_gaps, family_ranks,
                     observed_tuning_frame, rare_vs_frequent, rows_table, selection_frame)

def regimes_markdown(d: "BenchmarkDesign") -> str:
    """The columns the design's tables have, each with what it observes (:func:`regime_definition`),
    and the regimes of the lab this design leaves out."""
    lines = [f"**The regimes** — this design's {len(d.grid)} column(s), each its own draw of labels on the "
             "same scenes:", ""]
    lines += [f"* *{r}*: {regime_definition(r)}." for r in d.grid]
    out = [r for r in REGIMES if r not in d.grid]
    if out:
        lines += ["", f"The lab's other regimes ({', '.join(out)}) are not columns of this design; "
                  "`regimes = [...]` in the parameters cell adds them (chapter 00 defines each)."]
    return "\n".join(lines)


def seeds_text(d: "BenchmarkDesign") -> str:
    """The seeds the design's cells report (every table and claim) and the seed its tuning selects
    on, for the header and the protocol table."""
    return tuner.seeds_text({s for c in d.cells() for s in d.seeds[c]}, d.selection_seed)


def protocol(profile, d: Optional["BenchmarkDesign"] = None) -> Dict[str, Any]:
    """The protocol of every cell, read from the profile and the design (default: the profile's
    own, :func:`design`) — what the notebook states at the top."""
    from ...analysis.display import value_text

    P = as_profile(profile)
    d = design(P) if d is None else d
    opml = opml_epochs(P)
    data = (f"embedded scenes, {P.n_train} train / {P.n_val} val / {P.n_test} test, {P.image_size} px "
            f"({P.glyphs})" if P.dataset == "scenes" else
            f"{P.dataset} from {P.data_root} ({P.data_layout} layout), Cole et al.'s split, "
            f"{P.image_size} px, ImageNet normalisation")
    return {"data": data,
            "splits and label draws": "seed s draws the split, the observed labels and the initialisation",
            "backbone": f"{P.model}" + (f" ({value_text(P.model_kwargs)})" if P.model_kwargs else ""),
            "training": f"{P.epochs} epochs, batch {P.batch_size}, Adam lr {P.lr}, {P.lr_schedule} LR"
                        + (", AMP" if P.amp else "")
                        + (f"; the OPML rows {opml} epochs (their recipe's)" if opml else ""),
            "hyperparameters": "each method's paper defaults (the chapters' choices)",
            "selection": "test mAP at the epoch with the best clean-validation mAP",
            "seeds": seeds_text(d)}


def protocol_view(profile, d: Optional["BenchmarkDesign"] = None):
    """:func:`protocol` as a one-column table."""
    import pandas as pd

    from ...analysis.display import styled

    return styled(pd.Series(protocol(profile, d), name="every cell").to_frame(),
                  "The protocol every cell of the benchmark follows, read from the profile.", best=False)


def rows_view():
    """:func:`rows_table` with its caption, one row per chapter (every row at once reads as a wall): the
    chapter's methods (registered names in brackets), where they apply, and the notes of those
    that leave the protocol."""
    import pandas as pd

    from ...analysis.display import styled

    t = rows_table()
    grouped = {}
    for chapter, part in t.groupby("chapter", sort=True):
        grouped[chapter] = {
            "methods (registered as)": ", ".join(f"{m} ({r})" for m, r in part["registered as"].items()),
            "applies to": "; ".join(f"{m}: {a}" for m, a in part["applies to"].items() if a != "every regime")
                          or "every regime",
            "notes": "; ".join(f"{m}: {n}" for m, n in part["note"].items() if n) or "—"}
    frame = pd.DataFrame.from_dict(grouped, orient="index")
    frame.index.name = "chapter"
    return styled(frame, f"The {len(t)} rows of the benchmark by the chapter that teaches them: each method "
                  "with its registered name, the regimes it applies to (every regime unless named) and "
                  "where it leaves the protocol.", best=False)


METRIC_WHAT = {"mAP": "Test mAP (%)", "CF1": "Test CF1 (per-class F1 at 0.5, %)",
               "OF1": "Test OF1 (overall F1 at 0.5, %)"}


def metric_view(tabs: Mapping[str, Any], metric: str = "mAP"):
    """One metric of :func:`tables` as the notebook shows it: rows = methods, columns = regimes,
    mean ± 95 % interval (seeds) with † where a run did not converge; in bold, the best method of
    each regime and every method the paired test does not separate from it
    (:func:`mlpl_lab.analysis.benchmark.paired_best`; the full-label oracle left out)."""
    from ...analysis.display import caption, styled

    mean = tabs[f"{metric}_mean"]
    unconv = tabs["converged"].reindex(index=mean.index, columns=mean.columns).map(bm.unconverged_mark)
    ref = [r for r in REFERENCE_ROWS if r in mean.index]
    bold = tabs.get(f"_{metric}_bold")
    cap = caption(f"{METRIC_WHAT.get(metric, metric)} at each run's best clean-validation epoch, per regime",
                  bold=None if bold is not None else "column", reference=ref,
                  note="— the method does not run in that regime")
    if bold is not None:
        bold = bold.reindex(index=mean.index, columns=mean.columns).fillna(False).astype(bool)
        cap += (" Bold: the best mean of each regime and every method the paired test does not separate from "
                "it (the 95 % paired t-interval of the difference, seed by seed, contains 0, or fewer than 3 "
                f"seeds pair; unadjusted: the claims decide; {', '.join(ref) or 'no row'} left out).")
    return styled(mean, cap, percent=True, half=tabs[f"{metric}_ci95"], seeds=tabs["seeds"], unconverged=unconv,
                  reference=ref, bold=bold)


def convergence_view(rec: Mapping[str, Any], agreement: Optional[Mapping[str, bool]] = None):
    """``records(...)["benchmark_convergence"]`` as a ✓ / ✗ grid: rows = methods, columns = regimes;
    with ``agreement`` (:func:`.tables.length_check_agreement`) the protocol's share over every
    distinct run of the chapter is said above it
    (:func:`mlpl_lab.analysis.tables.share_sentence`)."""
    from IPython.display import Markdown, display

    from ...analysis.display import flags_table
    from ...analysis.tables import share_sentence

    if agreement is not None:
        display(Markdown(share_sentence(rec, agreement, what="runs of the chapter (cells, length checks, "
                                                               "data sets, LAC's own-head AN)")))
    return flags_table(rec, "Did every run of the cell converge (criterion of mlpl_lab.core.convergence)? ✓ yes, "
                       "✗ no (the cell carries a † in the tables above), 'schedule-bound': the runs that did not "
                       "are schedule-bound (§; section 8's length check is their control), — unknown.")


def selection_view(results):
    """:func:`selection_frame` as the notebook shows it, or a sentence saying why it is empty."""
    from IPython.display import Markdown

    from ...analysis.display import styled
    from ...analysis.selection import HALF, unscored

    frame = selection_frame(results)
    cells = [(regime, label) for regime, methods in results.items() for label, runs in methods.items()
             if label not in REFERENCE_ROWS and unscored(runs)]
    missing = sum(unscored(results[r][m]) for r, m in cells)
    waiting = (f"{len(cells)} cell(s) ({missing} runs) recorded the observed-label validation mAP every "
               "epoch but scored the test set only at the clean-best epoch: they were made before the "
               "engine also scored it at the epoch the observed labels pick. Pairing only the seeds where "
               "both criteria keep the same epoch would show a difference of zero by construction, so "
               "those cells wait for runs made since (the next series, or a run of your own).")
    if frame.empty:
        if cells:
            return Markdown(f"No cell can be compared yet: {waiting}")
        return Markdown("No run here recorded the observed-label validation mAP (`val_obs_mAP`): these runs "
                        "were trained before the engine scored it, so this comparison waits for runs trained "
                        "since (the next series, or a run of your own).")
    frame = frame.set_index(["regime", "method"])
    half = frame[[HALF]].rename(columns={HALF: "difference"})
    return styled(frame.drop(columns=[HALF]),
                  "Model selection without clean labels: test mAP (%) at the epoch the clean validation "
                  "labels pick and at the epoch the observed validation labels pick (the run's regime "
                  "on the validation split, unknown counted as negative), mean over seeds; 'difference': "
                  "clean minus observed ± the half-width of its paired 95 % t-interval, unadjusted. "
                  "Exploratory: one cell at a time, these intervals decide nothing (the question is "
                  "answered once per regime, pooled over the methods, in the claims of section 8); "
                  "'other epoch': seeds on which the two keep different epochs." + (f" Left out: {waiting}" if cells else ""),
                  half=half, counts=["seeds", "other epoch"], best=False)


def friedman_view(tabs: Mapping[str, Any]):
    """The block ranked over the regimes (description only: no test), with the methods left out of
    it in the caption."""
    from ...analysis.display import styled

    left = tabs["ranks_left_out"]
    out = ("; ".join(f"{m}: {why}" for m, why in left.iloc[:, 0].items()) if len(left)
           else "no method left out")
    return styled(tabs["friedman"], f"The ranks over the label regimes: methods (k) and regimes (N) compared, "
                  f"description only (the note says why). Left out of the ranks: {out}.",
                  counts=["methods (k)", "regimes (N)"], best=False)


def gap_view(tabs: Mapping[str, Any]):
    """The share of the AN → oracle gap each method closes (text cells: estimate [95 % bootstrap
    interval] (seeds), or — with the reason)."""
    from ...analysis.display import styled

    return styled(tabs["gap_closed"], "Share of the AN → oracle gap each method closes per regime (0: no better "
                  "than AN, 1: as good as full labels): the ratio of mean gains over the seeds the method, AN "
                  "and the oracle share, its 95 % percentile-bootstrap interval and those seeds; — with the "
                  "reason where it is not defined.", best=False)


def rare_view(gain):
    """:func:`rare_vs_frequent` as a table (AP points, one decimal)."""
    from ...analysis.display import styled

    return styled(rare_vs_frequent(gain), "Mean per-class AP gain over AN (AP points, mean over shared seeds) "
                  "on the rarer half of the classes and on the more frequent half (training frequency).",
                  percent=True, best=False)


def cost_view(tabs: Mapping[str, Any]):
    """The cost table as the notebook shows it."""
    from ...analysis.display import styled

    return styled(tabs["cost"], "Cost per method beside its place: the mean rank and mean test mAP (%) over "
                  "the compared block of section 3 (— outside it), then, over every regime and seed it ran, "
                  "training + evaluation seconds and peak memory (MiB; — unknown) of a run, the runs counted, "
                  "and both relative to AN's.", counts=["runs"], percent=["block mAP"], best=False)


def observed_tuning_view(runs: "BenchmarkRuns"):
    """:func:`observed_tuning_frame`, the cells where the two choices differ, with the count in the
    caption (or a sentence saying why there is nothing to compare)."""
    from IPython.display import Markdown

    from ...analysis.display import styled

    frame = observed_tuning_frame(runs)
    known = frame[frame["same"] != "—"]
    if known.empty:
        return Markdown("No tuned cell here has trials that recorded the observed-label validation mAP, so "
                        "the choice a practitioner without clean labels would make cannot be read.")
    differ = known[known["same"] == "✗"].set_index(["regime", "method"])
    text = (f"Tuning on observed validation labels: {len(known) - len(differ)} of {len(known)} tuned cells keep "
            f"the same setting as on clean labels")
    if differ.empty:
        return Markdown(text + ".")
    return styled(differ, text + "; the cells below keep another one (the tables report the clean choice's "
                  "fresh seeds).", best=False)


def tuning_view():
    """The declared tuning grids (paper default first), one column per hyperparameter."""
    import pandas as pd

    from ...analysis.display import number_text, styled

    t = pd.DataFrame({row: {k: ", ".join(number_text(x, digits=None) if not isinstance(x, float) else f"{x:g}"
                                         for x in v) for k, v in grid.items()}
                      for row, grid in TUNING_GRIDS.items() if row in {r.label for r in rows()}}).T.fillna("")
    return styled(t, "The declared tuning grids: each row's values per hyperparameter, the paper's default "
                  "first; a grid is walked as a product in this order and its first points are the trials "
                  "(the same number for every tuned method).", best=False)


def families_view(runs: "BenchmarkRuns"):
    """The data sets: what each is, its gap (measured and from the runs) and the runs it still waits
    for; then the rank test over them, or a sentence saying what it waits for."""
    from IPython.display import Markdown, display

    from ...analysis.display import styled

    if not runs.design.scenes:
        return Markdown(f"**No rank test here.** {family_ranks(runs)['reason']}: the ranks of section 3 "
                        "are description only, and the paired claims of section 8 are the comparisons to read.")
    gaps = family_gaps(runs)
    display(styled(gaps, f"The benchmark's data sets, under uniform single positive: each with its own label "
                   f"space, co-occurrence structure, objects, backgrounds and seeds ({independence_sentence()}). "
                   f"'measured gap': full labels minus AN (test mAP) in that measurement (its first seed); "
                   f"'gap from the runs': the same from this chapter's runs (on the seeds the oracle ran); every "
                   f"data set must keep ≥ {FAMILY_MIN_GAP:g} mAP; 'runs waiting': its runs not trained yet.",
                   percent=["measured gap", "gap from the runs"], counts=["seeds of the gap", "runs waiting"],
                   best=False))
    frame = family_frame(runs)
    display(styled(frame, f"Test mAP on each data set under uniform single positive: the mean over the seeds "
                   f"stored (up to {len(runs.design.family_seeds)}); blank: not trained yet. The oracle is shown, "
                   "not ranked; no cell is bold (a comparison of two rows rests on a paired claim).",
                   percent=True, reference=[ORACLE], best=False))
    test = family_ranks(runs)
    if test.get("p") is None:
        return Markdown(f"**No rank test yet.** {test['reason']}. Until then the ranks of section 3 are "
                        "description only, and the paired claims of section 8 are the comparisons to read.")
    return family_test_view(test)


def independence_sentence(record=None) -> str:
    """What the data sets' measurement found of their independence, read from its record
    (``protocol.datasets.CPU_RECORD``): the largest median same-index pixel correlation over the
    pairs and the seeds they share."""
    from ...protocol.datasets import read_record

    try:
        pairs = read_record(record)["independence"]
        worst = max(float(p["median_pixel_correlation"]) for p in pairs.values())
        shared = sum(len(p.get("seeds") or []) for p in pairs.values())
    except (OSError, ValueError, KeyError, TypeError):
        return "their independence not measured here"
    return (f"over the {len(pairs)} pairs the lab measured, the median same-index pixel correlation is at most "
            f"{worst:.4f} and {shared} seeds are shared")


def family_test_view(test: Mapping[str, Any]):
    """The rank test over the data sets as a table (mean ranks, then the tests)."""
    import pandas as pd

    from ...analysis.display import styled

    mean = pd.Series(test["mean_ranks"], name="mean rank").sort_values().to_frame()
    df1, df2 = test["df"]
    caption = (f"Mean ranks over {test['N']} independent data sets ({test['k']} methods; 1 = best). Iman–Davenport's "
               f"F = {test['F']:.2f} on ({df1}, {df2}) df, p = {test['p']:.2g} (the p this chapter reads); the "
               f"permutation p = {test['p_permutation']:.2g} ({test['permutation']}); Friedman's χ² = "
               f"{test['friedman_chi2']:.2f}, shown only beside them (its χ² approximation is rough at few data "
               f"sets). " + pairs_text(test))
    return styled(mean, caption, best=False)


def pairs_text(test: Mapping[str, Any]) -> str:
    """What the rank test over the data sets says of pairs of methods, computed from it:
    Nemenyi's CD and the pairs further apart — stated as findings only where a pairwise test at
    this N can reject (:func:`mlpl_lab.analysis.ranks.pairwise_can_reject`), else as description
    with the sentence saying why (:func:`mlpl_lab.analysis.ranks.pairwise_note`) — and that the
    pairs depend on which methods are pooled."""
    from ...analysis.ranks import ALPHA, pairwise_can_reject, pairwise_note

    n, alpha = int(test["N"]), float(test.get("alpha", ALPHA))
    pooled = (f"Nemenyi's CD = {test['cd']:.2f} among these {test['k']} methods; its pairs depend on which "
              "methods are pooled (the CD grows with k, and each mean rank depends on the others ranked).")
    apart = [f"{a} and {b}" for a, b in test["separated"]]
    if not pairwise_can_reject(n, alpha):
        return (f"{pooled} Mean ranks further apart than it: {', '.join(apart) if apart else 'none'}. But "
                f"{pairwise_note(n, alpha)}.")
    if test["p"] >= alpha:
        return (f"{pooled} The global test does not reject at α = {alpha:g}, so no pair is read "
                f"(mean ranks further apart than the CD: {', '.join(apart) if apart else 'none'}).")
    return (f"{pooled} " + (", ".join(f"{a} ahead of {b}" for a, b in test["separated"]) if test["separated"]
                            else "No pair of mean ranks lies further apart") + f" ({pairwise_note(n, alpha)}).")


def bound_length_view(runs: BenchmarkRuns):
    """:func:`bound_length_table` as the notebook shows it, with the checks still waiting for runs."""
    return bound_length.view(checked_results(runs), bound_length_table(runs), merged(runs.waiting, BOUND_CHECK))
