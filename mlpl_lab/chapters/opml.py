"""Notebook 03 — OPML: its design per profile, the runs it asks for, and Table IV.

The chapter as data: :func:`design` holds its per-profile literals (:data:`DESIGNS`)
and the notebook's parameters, :func:`specs` the runs they ask for, and the views below read the
ensured runs. Reconstructed parts of the paper and our confidence in each are documented in
:mod:`mlpl_lab.methods.opml`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Tuple

from ..analysis.benchmark import convergence_mark
from ..analysis.claims import Claim, Family, claim_id, claims_table, mark_schedule_bound
from ..analysis.tables import LENGTH_CHECK_AGREES, LENGTH_CHECK_DISAGREES
from ..profiles import Profile
from ..protocol import bound_length
from ..protocol.asked import Asked, Stored
from ..protocol.common import as_profile, as_spec, specs_for, splits_for
from ..protocol.design import preset
from ..protocol.recipes import opml_epochs
from .. import catalogue
from ..catalogue import LABEL
from ..protocol.registry import Chapter, Live

#: the notebook parameters that change which runs the chapter asks for
PARAMETERS: Tuple[str, ...] = ("a", "b", "regime", "seed")

#: every single-positive row the chapter can run, in the table's order (:func:`method_specs`
#: gives each its method and hyperparameters)
ROWS = (LABEL.an, LABEL.zlpr, LABEL.opml, LABEL.opml_hr, LABEL.opml_hr_ls, LABEL.opml_hr_lc, LABEL.opml_sp)
#: the rows the claims pair, run on the design's ``key_seeds`` (the other rows on ``seed``)
KEY = (LABEL.an, LABEL.opml_sp, LABEL.opml)
FULL_KEY = (LABEL.bce_full, "OPML (full)")
#: the methods of the OPML family: the ones :attr:`OPMLDesign.opml_epochs` lengthens
OPML_FAMILY = ("opml", "opml_sp")
#: the two families of :func:`specs`: the rows under the design's regime, and with full labels
PARTIAL, FULL = "partial labels", LABEL.oracle
#: the pending family of the length check of OPML-SP (schedule-bound), with AN on its seeds
BOUND_CHECK = bound_length.BOUND_CHECK


#: the chapter's questions (:attr:`OPMLDesign.families`)
HEADLINE, PARTS, WITH_FULL = "OPML-SP beats AN", "the loss's parts", "OPML with full labels"


@dataclass(frozen=True)
class OPMLDesign:
    """Every literal of the chapter under one profile, and the notebook's parameters."""

    profile: Profile
    rows: Tuple[str, ...]          # the single-positive rows (ZLPR left out where it equals OPML)
    key_seeds: Tuple[int, ...]     # the rows of KEY and FULL_KEY run on these
    a: float = 0.0                 # OPML's alpha is exp(a)
    b: float = 0.0                 # OPML's beta is exp(b)
    regime: str = "single_positive"
    seed: int = 0                  # the seed of the rows outside KEY (OPML+HR, the ablations, ZLPR)
    #: epochs of the OPML family where they differ from the profile's (None: the profile's): the
    #: OPML rows' recipe's (:data:`mlpl_lab.protocol.recipes.OPML_EPOCHS`, shared with 07's OPML
    #: cells; at the cpu profile's 54 epochs every OPML row meets the convergence criterion)
    opml_epochs: Optional[int] = None

    @property
    def families(self) -> Dict[str, Family]:
        """The chapter's questions, declared before any run is read: the headline (OPML-SP
        against AN), the loss's parts (OPML against AN, OPML-SP against OPML: asked where the
        design has an OPML row) and OPML against BCE with full labels."""
        out = {HEADLINE: Family(HEADLINE, 1, "does OPML-SP beat assume-negative under single positive?"),
               WITH_FULL: Family(WITH_FULL, 1, "does OPML beat BCE when every label is known?")}
        if LABEL.opml in self.rows:
            out[PARTS] = Family(PARTS, 2, "does each part of the loss help: OPML over AN, OPML-SP over OPML?")
        return out

    @property
    def family_members(self) -> Dict[str, Tuple[str, ...]]:
        """``{family: claim ids}``: the claims each family of :attr:`families` asks, from the design
        alone (what the course pack's index records: :func:`mlpl_lab.protocol.plan.designed_families`)."""
        out = {HEADLINE: (claim_id("opml_sp_beats_an"),), WITH_FULL: (claim_id("opml_beats_bce", "full_labels"),)}
        if LABEL.opml in self.rows:
            out[PARTS] = (claim_id("opml_sp_beats_opml"), claim_id("opml_beats_an"))
        return out


#: per profile: the single-positive rows and how many of the profile's seeds the key rows take.
#: Every claim pairs five seeds under cpu and gpu; smoke keeps four rows so the
#: notebook runs in seconds. A profile without a row here takes another's by the designs' one rule
#: (:func:`mlpl_lab.protocol.common.preset`: gpu_shape gpu's, a custom profile cpu's).
DESIGNS: Dict[str, Dict[str, object]] = {
    "smoke": {"rows": (LABEL.an, LABEL.opml, LABEL.opml_hr, LABEL.opml_sp), "key_seeds": 2},
    "cpu": {"rows": ROWS, "key_seeds": 5},
    "gpu": {"rows": ROWS, "key_seeds": 5},
}


def design(profile, a: float = 0.0, b: float = 0.0, regime: str = "single_positive",
           seed: int = 0) -> OPMLDesign:
    """The chapter's design under ``profile`` (its :data:`DESIGNS` row, or the one it takes
    through :data:`mlpl_lab.protocol.common.DESIGN_OF`, capped at the profile's own seeds).

    Default a = b = 0: on the validation mAP of the cpu profile (seed 0, single positive) the
    grid a ∈ {0, 1, 2} x b ∈ {-1, 0} gave 76.7 at (0, 0) against 73.3-75.8 elsewhere, so on the
    embedded scenes the val-selected OPML is ZLPR (the paper's Fig. 5 tunes (a, b) per dataset
    the same way; its values are lost in our copy). At a = b = 0 OPML *is* ZLPR, so the ZLPR row
    is left out rather than trained twice."""
    P = as_profile(profile)
    row = preset(DESIGNS, P)
    a, b = float(a), float(b)
    rows = tuple(r for r in row["rows"] if not (r == LABEL.zlpr and a == 0.0 and b == 0.0))
    return OPMLDesign(profile=P, rows=rows, key_seeds=tuple(P.seeds[:row["key_seeds"]]), a=a, b=b,
                      regime=regime, seed=int(seed), opml_epochs=opml_epochs(P))


def method_specs(d: OPMLDesign) -> Dict[str, Dict[str, tuple]]:
    """``{PARTIAL: {row: (method, hyperparameters)}, FULL: {...}}`` of a design.

    Under the design's regime: AN, ZLPR, OPML(a, b), OPML-SP and the Table IV ablation (OPML+HR,
    OPML+HR+LS, OPML+HR+LC), as far as ``d.rows`` holds them. With full labels (splits built
    with regime "full"): the BCE oracle (the ``full`` method) and OPML."""
    ab = {"a": d.a, "b": d.b}
    # each row: its catalogue entry's method and fixed hyperparameters, the design's a and b over them
    every = {label: (catalogue.by_label(label).method,
                     dict(catalogue.by_label(label).params, **({} if label in (LABEL.an, LABEL.zlpr) else ab)))
             for label in ROWS}
    method = {label: catalogue.by_label(label).method for label in (LABEL.opml, LABEL.bce_full)}
    return {PARTIAL: {row: every[row] for row in d.rows},
            FULL: {LABEL.bce_full: (method[LABEL.bce_full], {}), "OPML (full)": (method[LABEL.opml], dict(ab))}}


def train_overrides(profile, method: str, d: OPMLDesign | None = None) -> Dict[str, int]:
    """The training overrides of one of the chapter's methods: ``{"epochs": d.opml_epochs}`` for
    the OPML family where the design sets it, else ``{}`` (``d``: the design of ``profile``)."""
    d = d or design(profile)
    if method in OPML_FAMILY and d.opml_epochs is not None:
        return {"epochs": d.opml_epochs}
    return {}


def epochs_note(profile) -> str:
    """One line for the notebook: how many epochs each row trains under ``profile``."""
    P = as_profile(profile)
    e = train_overrides(P, "opml_sp").get("epochs")
    if e is None:
        return f"every row trains {P.epochs} epochs"
    return (f"the OPML rows (OPML, OPML+HR, OPML-SP and its ablations) train {e} epochs, the others "
            f"(AN, the BCE oracle) the profile's {P.epochs}; chosen so that every curve flattens "
            f"(protocol/recipes.py: OPML_EPOCHS records the measurement behind it)")


def specs(d: OPMLDesign, stored: Stored) -> Asked:
    """The chapter's runs (no choice waits on a result, so ``later`` is empty): :data:`PARTIAL`,
    every row of ``d.rows`` under ``d.regime`` (the rows of :data:`KEY` on ``d.key_seeds``, the
    others on ``d.seed``); :data:`FULL`, the BCE oracle and OPML with full labels on the key seeds;
    pending, :data:`BOUND_CHECK`: OPML-SP (schedule-bound) and AN on the key seeds at 4/3 of the
    epochs where OPML-SP did not converge (:func:`mlpl_lab.protocol.bound_length.check_family`;
    a cold series or ``mlpl-lab train`` trains it, the notebook reads it when stored)."""
    P, methods = d.profile, method_specs(d)

    def row_specs(label, m, regime, seeds):
        return specs_for(P, {label: m}, regime, seeds=seeds, **train_overrides(P, as_spec(m)[0], d))[label]

    partial = {label: row_specs(label, m, d.regime, d.key_seeds if label in KEY else [d.seed])
               for label, m in methods[PARTIAL].items()}
    full = {label: row_specs(label, m, "full", d.key_seeds) for label, m in methods[FULL].items()}
    check = bound_length.check_family({k: partial[k] for k in KEY if k in partial and k != LABEL.an},
                                      partial.get(LABEL.an, []), stored)
    return Asked({PARTIAL: partial, FULL: full}, pending={BOUND_CHECK: check} if check else {})


def bound_checks(d: OPMLDesign, runs) -> Dict[str, Dict[str, Dict[str, list]]]:
    """``{regime: {row: {"method": runs, "AN": runs}}}``: the stored length check of
    :data:`BOUND_CHECK` (:func:`mlpl_lab.protocol.bound_length.stored_checks`), what :func:`claims` reads."""
    return bound_length.stored_checks(runs.get(BOUND_CHECK), d.regime)


def bound_length_view(d: OPMLDesign, runs, store=None):
    """The length check as the notebook shows it (OPML-SP and AN at both lengths), with how many of
    its runs are not trained yet."""
    from ..protocol.asked import pending_missing, store_lookup

    stored = store_lookup(store)
    waiting = pending_missing(specs(d, stored), stored).get(BOUND_CHECK, {})
    return bound_length.chapter_view(runs[PARTIAL], runs.get(BOUND_CHECK), d.regime, waiting)


def bound_length_record(d: OPMLDesign, runs) -> Dict[str, object]:
    """The check per seed at both lengths (:func:`mlpl_lab.protocol.bound_length.chapter_record`)."""
    return bound_length.chapter_record(runs[PARTIAL], runs.get(BOUND_CHECK), d.regime)


def length_check_agreement(d: OPMLDesign, runs, claims) -> Dict[str, bool]:
    """``{run key: bool}``: whether each checked schedule-bound run's length check agrees — from the
    claims' notes (:func:`mlpl_lab.analysis.tables.length_check_agreement`) and from the check itself
    ("OPML-SP beats AN" read the same at both lengths, :func:`mlpl_lab.protocol.bound_length.chapter_agreement`),
    for the protocol's share."""
    return bound_length.claims_agreement(runs[PARTIAL], runs.get(BOUND_CHECK), d.regime, claims)


def live_seeds(profile) -> Tuple[int, ...]:
    """The seeds the chapter's claims pair OPML-SP on (the design's ``key_seeds``)."""
    return tuple(design(profile).key_seeds)


def live_spec(profile, seed: int, store=None):
    """The chapter's OPML-SP run under single positive on ``seed``."""
    P = as_profile(profile)
    d = design(P)
    method, hp = method_specs(d)[PARTIAL][LABEL.opml_sp]
    return P.spec(method, hp, "single_positive", {}, seed=seed, **train_overrides(P, method, d))


def splits(d: OPMLDesign):
    """The splits the design's rows outside :data:`KEY` train on (regime ``d.regime``, seed
    ``d.seed``): what the confidence plots and Grad-CAM read."""
    return splits_for(d.profile, d.regime, {}, d.seed)


def claims(sp, full, design: OPMLDesign, checks: Mapping[str, Mapping[str, Mapping[str, list]]] | None = None):
    """The chapter's claims table (verdicts from the runs, seed noise included), in the families
    ``design`` declares (:attr:`OPMLDesign.families`). Where OPML-SP's runs are schedule-bound (§)
    its claims say what its length check found (``checks``: :func:`bound_checks`; no claim is
    added to a family): the headline, which *is* the check's comparison, whether it reads the same
    at 4/3 of the epochs (:func:`mlpl_lab.protocol.bound_length.agrees`), the others that the check
    does not cover them."""
    fam = design.families
    rows = [Claim("OPML-SP beats AN (single positive)", "COCO: OPML-SP 71.75 vs AN 64.1 (AN from LL)",
                  LABEL.opml_sp, LABEL.an, sp[LABEL.opml_sp], sp[LABEL.an], family=fam[HEADLINE],
                  id=claim_id("opml_sp_beats_an"))]
    if LABEL.opml in sp:
        rows.append(Claim("OPML-SP beats OPML (single positive)", "COCO: 71.75 vs 68.93 (Table IV)",
                          LABEL.opml_sp, LABEL.opml, sp[LABEL.opml_sp], sp[LABEL.opml], family=fam[PARTS],
                          id=claim_id("opml_sp_beats_opml")))
        rows.append(Claim("OPML beats AN (single positive)", "COCO: 68.93 vs AN 64.1",
                          LABEL.opml, LABEL.an, sp[LABEL.opml], sp[LABEL.an], family=fam[PARTS],
                          id=claim_id("opml_beats_an")))
    if "OPML (full)" in full:
        rows.append(Claim("OPML beats BCE with full labels", "VOC: 91.36 vs 89.42; COCO: 76.71 vs 76.78 (Table V)",
                          LABEL.opml, "BCE", full["OPML (full)"], full[LABEL.bce_full], family=fam[WITH_FULL],
                          id=claim_id("opml_beats_bce", "full_labels")))
    table = claims_table(rows)
    if convergence_mark(sp[LABEL.opml_sp]) != "schedule-bound":
        return table
    check = ((checks or {}).get(design.regime) or {}).get(LABEL.opml_sp)
    notes = {}
    for claim in rows:
        if LABEL.opml_sp not in (claim.a_label, claim.b_label):
            continue
        if claim.key != claim_id("opml_sp_beats_an"):
            notes[claim.key] = "schedule-bound; the length check (OPML-SP against AN) does not cover this comparison"
        elif check is None:
            notes[claim.key] = "schedule-bound, no length check stored"
        else:
            epochs = int(check["method"][0].spec.train["epochs"])
            ok = bound_length.agrees(sp[LABEL.opml_sp], sp[LABEL.an], check["method"], check[LABEL.an])
            notes[claim.key] = (f"schedule-bound; {LENGTH_CHECK_AGREES} (the same verdict at {epochs} epochs)" if ok
                                else f"schedule-bound; {LENGTH_CHECK_DISAGREES} (another verdict at {epochs} epochs)")
    return mark_schedule_bound(table, notes) if notes else table


def ablation_marks(results) -> Dict[str, Dict[str, object]]:
    """Table IV's marks: per OPML row of ``results``, the parts it switches on (high-rank, label
    smoothing, label correction) and the correction cap of the Algorithm's step 2 (reconstructed,
    R-med; our default: off — its own column), read from each row's method and hyperparameters.
    Rows that are not OPML methods (AN, ZLPR, ...) are left out."""
    defaults = {"opml": (False, False, False), "opml_sp": (True, True, True)}
    marks = {}
    for label, runs in results.items():
        spec = runs[0].spec
        if spec.method not in defaults:
            continue
        hr, ls, lc = defaults[spec.method]
        hp = spec.method_params
        correction = bool(hp.get("correction", lc))
        marks[label] = {LABEL.opml: True, "high-rank": bool(hp.get("high_rank", hr)),
                        "smoothing": bool(hp.get("smoothing", ls)), "correction": correction,
                        "cap (step 2)": str(hp.get("correction_cap") or "off") if correction else "—"}
    if not marks:
        raise ValueError("no OPML runs in these results")
    return marks


# --- what the notebook shows (the one table style, mlpl_lab.analysis.display) ------------------

def ablation_view(results, metric: str = "test_mAP"):
    """Table IV at this scale (:func:`mlpl_lab.analysis.tables.ablation_frames` over
    :func:`ablation_marks`): ✓ / ✗ per part, ``metric`` as mean ± 95 % interval (seeds) with †
    where a run did not converge, the best in bold."""
    from ..analysis.display import caption, styled
    from ..analysis.tables import ablation_frames

    table, half, n, unconv = ablation_frames(ablation_marks(results), results, metric)
    col = metric.replace("test_", "")
    return styled(table, caption(f"OPML, Table IV at this scale: the parts each OPML row switches on (✓) or "
                                 f"off (✗) and test {col} (%) at the best clean-validation epoch"),
                  percent=[col], half=half, seeds=n, unconverged=unconv)


def correction_view(log):
    """:func:`mlpl_lab.analysis.opml_diagnostics.correction_log` as the notebook shows it."""
    from ..analysis.display import compact_rows

    return compact_rows(log, "OPML-SP's label correction per epoch (first seed): the mean AP of the training "
                        "predictions (0–1), the labels corrected in the epoch and in total, and "
                        "the share of corrections that were true positives (— where nothing was logged).",
                        record="correction_log", counts=[c for c in log.columns if c.startswith("corrected")],
                        best=False)


def localisation_view(loc, where: str):
    """A Grad-CAM localisation table (:func:`mlpl_lab.viz.cam.localisation_table`) as the notebook
    shows it: the best energy share and pointing score in bold."""
    from ..analysis.display import styled

    return styled(loc, f"Grad-CAM localisation on {where}: the share of each map's energy inside the "
                  "class's object masks, the pointing game (the map's peak inside a mask) and area, the "
                  "mask's share of the image — what a flat map scores; pairs: (image, class) pairs "
                  "scored. Bold: the best energy share and pointing score.",
                  counts=["pairs"], best=["energy", "pointing"])


def confidence_view(summary, which: str):
    """:func:`mlpl_lab.analysis.confidence.confidence_summary` as the notebook shows it."""
    from ..analysis.display import text_table

    return text_table(summary, f"Predicted probability of {which}: how many scores, their mean, the share below "
                      "0.1 (pushed to absent) and the share at or above 0.5 (predicted present).",
                      index="method", counts=["n"], best=False)


#: the chapter, as :mod:`mlpl_lab.protocol.registry` finds it; the live run's sizes per profile
#: (cpu: measured by benchmarks/bench_live.py to train in at most 3 minutes on 2 cores)
LIVE_SIZES = {
    "smoke": {"n_train": 128, "epochs": 1},
    "cpu": {"n_train": 2000, "epochs": 12},
    "gpu": {"n_train": 5000, "epochs": 4},
    "gpu_shape": {"n_train": 256, "epochs": 1},
}
CHAPTER = Chapter("03_opml", live=Live(LABEL.opml_sp, LIVE_SIZES, live_seeds, live_spec))
