"""Chapter 07's claims: each paper method against AN under each regime (the catalogue's claims),
LAC against AN on LAC's own network, the length checks of the schedule-bound rows as controls of
the claims they repeat, and whether clean validation flatters the methods; and what they found,
in a few computed lines."""
from __future__ import annotations

from typing import List, Mapping

import numpy as np

from ...analysis import benchmark as bm
from ...analysis.claims import (CI_FAMILY, OVERTURNED, Claim, Family, claim_id, claims_table, mark_schedule_bound,
                                mark_uncontrolled)
from ...catalogue import LABEL, by_label, paper_claims
from ...core.bibliography import cite
from ...protocol.lengths import length_check_note
from ...protocol.recipes import WITH_CELLS, row
from ...protocol.regimes import regime_slug
from .design import (AN, FLATTERS_FAMILY, REFERENCE_ROWS, SAME_HEAD_FAMILY, SAME_HEAD_LABEL, SAME_HEAD_ROW,
                     BenchmarkDesign, beats_an_family)

SAME_HEAD_PAPER = f"{cite('lac')}, Table 3: VOC 89.6 vs 87.6, COCO 75.6 vs 72.3 (AN with LAC's head)"


#: the note of a schedule-bound claim whose control is not trained yet
CONTROL_WAITS = "schedule-bound; its length check (the control) waits for runs not trained yet"
#: why "LAC beats AN with LAC's own head" has no control where AN on LAC's head was still gaining
SAME_HEAD_UNCONTROLLED = ("AN on LAC's head, the losing side, was still gaining; its control, AN on "
                          "LAC's head trained longer, would need runs the design does not train")


def beats_an_id(label: str, regime: str) -> str:
    """The key of "<row> beats AN under <regime>": its catalogue key and the regime's short name."""
    return claim_id("beats_an", by_label(label).key, regime_slug(regime))


def claims(results, same_head: Mapping[str, list] | None = None,
           length: Mapping[str, Mapping[str, list]] | None = None,
           bound_length: Mapping[str, Mapping[str, Mapping[str, list]]] | None = None, *,
           design: BenchmarkDesign):
    """"<method> beats AN under <regime>" for every paper claim and every regime where both ran,
    in the families ``design`` declares (:attr:`BenchmarkDesign.families`: one per regime).
    With ``same_head`` (:attr:`BenchmarkRuns.same_head`, LAC's recipe's control) LAC is also
    compared with AN trained on its own network, which separates the method's gain from the
    head's. A schedule-bound cell (:func:`mlpl_lab.analysis.claims.mark_schedule_bound`) gets its
    length check as a control of its claim, which says whether that control agrees: a row checked
    with the cells (its recipe's: GR) from ``length`` (:attr:`BenchmarkRuns.length`), the others
    (LL-R, EM+APL, OPML-SP, ...) from ``bound_length`` (:attr:`BenchmarkRuns.bound_length`) where it
    is stored; where it is not, their claim says that its control waits (:data:`CONTROL_WAITS`).
    Last, whether clean validation flatters the methods, pooled per regime (:func:`selection_claims`).
    A control sits in the family of the claim it checks and is counted in its m
    (:mod:`mlpl_lab.analysis.claims`, "Controls decide"). A same-head claim whose losing side (AN
    on LAC's head) did not converge has no control in the design: it is marked ‡
    (:func:`mlpl_lab.analysis.claims.mark_uncontrolled`, :data:`SAME_HEAD_UNCONTROLLED`)."""
    fam = design.families
    papers = paper_claims()
    out, notes, same = [], {}, []
    for regime, methods in results.items():
        if AN not in methods:
            continue
        for label, paper in papers.items():
            if label in methods:
                out.append(Claim(f"{label} beats AN under {regime}", paper, label, AN,
                                 methods[label], methods[AN], family=fam[beats_an_family(regime)],
                                 id=beats_an_id(label, regime)))
        if SAME_HEAD_ROW in methods and same_head and regime in same_head:
            out.append(Claim(f"LAC beats AN with LAC's own head under {regime}", SAME_HEAD_PAPER,
                             SAME_HEAD_ROW, SAME_HEAD_LABEL, methods[SAME_HEAD_ROW], same_head[regime],
                             family=fam[SAME_HEAD_FAMILY],
                             id=claim_id("beats_an_on_own_head", by_label(SAME_HEAD_ROW).key, regime_slug(regime))))
            same.append(out[-1].key)
        for label in papers:
            if label not in methods or bm.convergence_mark(methods[label]) != "schedule-bound":
                continue
            claim = beats_an_id(label, regime)
            with_cells = row(label).recipe.length_check == WITH_CELLS
            if with_cells:  # its check is asked with the cells: there once a run did not converge
                got = (length or {}).get(regime) or {}
                ctl = {"method": got[label], LABEL.an: got[AN]} if label in got and AN in got else None
            else:
                ctl = (bound_length or {}).get(regime, {}).get(label)
            if ctl:
                epochs = ctl["method"][0].spec.train["epochs"]
                name = claim_id("length_check", *claim.split("/"))
                out.append(Claim(f"{label} beats AN with both trained {epochs} epochs under {regime} (length check)",
                                 f"the same comparison at a longer schedule ({label} is schedule-bound)",
                                 f"{label} ({epochs} ep.)", f"AN ({epochs} ep.)", ctl["method"], ctl[LABEL.an],
                                 control_of=claim, id=name))
                notes[claim] = name
            elif not with_cells:
                notes[claim] = None
    if FLATTERS_FAMILY in fam:
        out += selection_claims(results, fam[FLATTERS_FAMILY])
    table = claims_table(out)
    table = mark_uncontrolled(table, {claim: SAME_HEAD_UNCONTROLLED for claim in same})
    return mark_schedule_bound(table, {claim: CONTROL_WAITS if check is None else
                                       length_check_note(table, claim, check)
                                       for claim, check in notes.items()})


def summary(table) -> str:
    """What the benchmark's claims found, as a few computed lines of Markdown (the claims table
    :func:`claims` holds every row): per family, how many of its claims hold, which do not and
    why (overturned by a control included), with m counting its controls; the controls; the
    verdicts at risk and those at risk with no control (‡)."""
    from ...analysis.claims import HOLDS

    is_control = table["_control_of"].map(lambda x: isinstance(x, str) and bool(x))
    lines = [f"**What the benchmark found** ({int((~is_control).sum())} claims in "
             f"{table['_family'].nunique()} families, and {int(is_control.sum())} controls counted in "
             "their claims' families; every number below is computed from the claims table above):", ""]
    for fam, whole in table.groupby("_family", sort=False):
        part = whole[~is_control.loc[whole.index]]
        k = int(is_control.loc[whole.index].sum())
        m = int(whole["_m"].iloc[0])
        held = [part.at[c, "claim"] for c, v in part["verdict"].items() if v == HOLDS]
        rest = [f"{part.at[c, 'claim']} ({v}: {part.at[c, 'reason'] or 'the interval lies below 0'})"
                for c, v in part["verdict"].items() if v != HOLDS]
        lines.append(f"* *{fam}* (m = {m}" + (f", {k} of them control{'s' if k > 1 else ''}" if k else "")
                     + f"): {len(held)} of {len(part)} hold" + (f"; not: {'; '.join(rest)}" if rest else ""))
    for c, line in table[is_control].iterrows():
        lines.append(f"* control of *{table.at[line['_control_of'], 'claim']}*: {line['claim']} — {line['verdict']} "
                     f"({line[CI_FAMILY]}, m = {int(line['_m'])})")
    turned = [table.at[c, "claim"] for c, v in table["verdict"].items() if v == OVERTURNED]
    if turned:
        lines.append(f"* {OVERTURNED} ({len(turned)}): " + "; ".join(turned))
    lines += family_size_notes(table)
    risky = [table.at[c, "claim"] for c, r in table["_at_risk"].items() if bool(r)]
    if risky:
        lines.append(f"* ⚠ at risk ({len(risky)}): the losing side did not converge in " + "; ".join(risky))
    bare = [f"{table.at[c, 'claim']} ({n})" for c, n in table["_uncontrolled"].items() if isinstance(n, str) and n]
    if bare:
        lines.append(f"* ‡ at risk with no control ({len(bare)}): " + "; ".join(bare))
    return "\n".join(lines)


def family_size_notes(table) -> List[str]:
    """One line per claim that its family's size alone leaves undecided: at least 3 paired seeds,
    the 95 % interval of a question of its own (m = 1) above 0, the family-wise interval at its
    m reaching 0. A chapter that asks the same comparison alone (03 asks OPML-SP against AN so)
    reads it as holding; this chapter, asking it among m comparisons, does not."""
    from ...analysis.claims import INCONCLUSIVE

    out = []
    for c, r in table.iterrows():
        if r["_control_of"] is not None and r["_control_of"] == r["_control_of"]:
            continue
        if (str(r["verdict"]).startswith(INCONCLUSIVE) and int(r["_m"]) > 1 and int(r["_n"]) >= 3
                and float(r["_lo"]) > 0):
            out.append(f"* *{r['claim']}*: its 95 % interval [{r['_lo']:+.2f}, {r['_hi']:+.2f}] lies above 0, "
                       f"so a chapter that asks it alone (m = 1) reads it as holding; here it is one of "
                       f"m = {int(r['_m'])} comparisons of *{r['_family']}*, and its family-wise interval "
                       f"[{r['_flo']:+.2f}, {r['_fhi']:+.2f}] reaches 0: inconclusive")
    return out


def selection_claims(results, family: Family | None = None) -> List[Claim]:
    """Does clean validation flatter the methods? One pooled claim per regime, "clean validation
    flatters the methods under <regime>": per seed, the test mAP at the clean-validation epoch
    and at the observed-validation epoch, each averaged over the regime's methods (the oracle
    left out) that recorded both on that seed's whole set, then paired by seed
    (:func:`mlpl_lab.analysis.selection.by_seed_selected`). A regime whose runs recorded no
    observed-validation score adds none; the per-cell differences are the exploratory table
    (:func:`.tables.selection_frame`)."""
    from ...analysis.selection import CLEAN, OBSERVED, by_seed_selected

    out = []
    for regime, methods in results.items():
        cells = {}
        for label, runs in methods.items():
            observed = by_seed_selected(runs, OBSERVED)
            if label in REFERENCE_ROWS or not observed:
                continue
            clean = by_seed_selected(runs, CLEAN)
            cells[label] = (clean, observed, runs)
        if not cells:
            continue
        seeds = sorted(set.intersection(*(set(c) & set(o) for c, o, _ in cells.values())))
        if not seeds:
            continue
        clean = {s: float(np.mean([c[s] for c, _, _ in cells.values()])) for s in seeds}
        observed = {s: float(np.mean([o[s] for _, o, _ in cells.values()])) for s in seeds}
        out.append(Claim.of_values(
            f"clean validation flatters the methods under {regime}",
            "Cole et al. report both variants (clean and observed validation)",
            f"clean val ({len(cells)} methods)", f"observed val ({len(cells)} methods)", clean, observed,
            runs={label: runs for label, (_, _, runs) in cells.items()}, family=family,
            id=claim_id("clean_validation_flatters", regime_slug(regime))))
    return out
