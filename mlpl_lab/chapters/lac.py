"""Notebook 05 — LAC: the chapter's design per profile, its runs (Table 3's shape), tables and
claims; where the benchmark's LAC row is defined.

Every run uses the **label-query head** (:mod:`mlpl_lab.models.label_query`), so the rows
differ only in their losses, as in the paper's Table 3 (Xie, Xiao, Huang, NeurIPS 2022;
Table 2 holds the main single-positive results, Table 3 the ablation reproduced here). Rows:

* **AN** (``lac_an``), **+PLC** (``lac_plc``, stage 1) and **+LAC end-to-end**
  (``lac_end_to_end``) for E1 epochs;
* **two-stage** (``lac_no_queue``) and **two-stage + queue** (``lac``, the paper's method):
  E2 more epochs starting from the +PLC run's best-val weights (a stored stage-1 run of the
  same seed, ``init_from``);
* **PLC, E1+E2 epochs**: the control the paper lacks — stage 1 trained as long as both stages
  together. It is the reference of every stage-2 comparison: without it a stage-2 gain could
  come from the extra epochs alone.
* **LAC, the code's stage-2 start** (``lac`` with ``stage2_start="raw_or_ema"``): the paper's
  method started as the official code starts it, from whichever of stage 1's raw and EMA
  weights validates better; the LAC row starts from the raw weights (the paper's text). Paired
  with the LAC row by seed, it measures what the code's choice of start changes.

Every row runs on the same seeds, the profile's first ``n_seeds`` (:data:`DESIGNS`: five on cpu
and gpu, so every claim of the chapter pairs five seeds; smoke's two), so every claim
pairs by seed; a claim on fewer than 3 paired seeds is an observation, not a finding
(:mod:`mlpl_lab.analysis.claims`).

The runs are data: :func:`specs` returns them (one family, :data:`TABLE`: ``{row: [RunSpec per
seed]}``; a stage-2 spec carries the stage-1 spec it starts from), the notebook ensures them
(:func:`mlpl_lab.protocol.asked.ensure_asked`) and the views take the stored runs.

Every row passes both views through the network in **one** forward pass (``forward="joint"``,
:class:`mlpl_lab.methods.lac.LACMethod`), AN's included, so BatchNorm sees the same batches
in every row.

Training follows the paper's recipe where it transfers (AdamW, OneCycle, batches of 32; the OneCycle
warm-up restarts in stage 2, as in the code). LAC's network and the epochs of each stage per profile
are its recipe's (:mod:`mlpl_lab.protocol.lac_stages`, with the measurements behind them), shared
with 07's LAC cells; this chapter's own literals (:data:`DESIGNS`) are how many seeds every row
runs on and the longer runs of a verdict at risk.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Tuple

import numpy as np

from ..analysis.claims import Claim, Family, claim_id, claims_table, mark_waiting
from ..analysis.tables import ablation_frames, seed_mean
from ..methods import build_method
from ..protocol.asked import Asked, Stored, nothing_stored
from ..protocol.common import as_profile, splits_for, with_pending
from ..protocol.design import preset
from ..protocol.lac_stages import TwoStage, regime_defined, stage2, stage_fields, stage_spec  # noqa: F401 (regime_defined: the chapter's rule, the protocol's)
from .. import catalogue
from ..catalogue import LABEL
from ..protocol.registry import Chapter, Live

#: Table 3 of the paper (mAP %, VOC / COCO), rows in the order of :data:`ROWS`
PAPER_TABLE3 = {LABEL.an: (87.6, 72.3), LABEL.lac_plc: (89.0, 73.7), LABEL.lac_end_to_end: (84.5, 65.6),
                LABEL.lac_two_stage: (89.2, 74.7), LABEL.lac_row: (89.6, 75.6)}
#: Table 2 of the paper: LAC under single positive (mAP %, VOC / COCO / NUS / CUB)
PAPER_TABLE2 = {"VOC": 89.6, "COCO": 75.6, "NUS": 51.1, "CUB": 23.3}
CONTROL = LABEL.lac_control
#: the paper's method started from the better on validation of stage 1's raw and EMA weights
CODE_START = LABEL.lac_code_start
#: label -> (registered method, ✓ columns: PLC, LAC, two-stage, queue)
#: (AN here is AN on LAC's label-query head: the catalogue's ``lac_an``, named as the paper's Table 3
#: names it)
ROWS: Dict[str, Tuple[str, Tuple[bool, bool, bool, bool]]] = {
    LABEL.an: (catalogue.entry("lac_an").method, (False, False, False, False)),
    **{catalogue.entry(key).label: (catalogue.entry(key).method, marks) for key, marks in (
        ("lac_plc", (True, False, False, False)), ("lac_end_to_end", (True, True, False, False)),
        ("lac_two_stage", (True, True, True, False)), ("lac_row", (True, True, True, True)),
        ("lac_control", (True, False, False, False)), ("lac_code_start", (True, True, True, True)))},
}
#: method hyperparameters of a row beyond its registered defaults (its catalogue entry's)
ROW_PARAMS: Dict[str, Dict[str, Any]] = {CODE_START: dict(catalogue.entry("lac_code_start").params)}
STAGE2 = (LABEL.lac_two_stage, LABEL.lac_row, CODE_START)
#: the family of :func:`specs` (the chapter has one: Table 3's rows)
TABLE = "Table 3"
#: the notebook parameters that change which runs the chapter asks for
PARAMETERS = ("regime",)

#: the chapter's literals per profile: how many of the profile's seeds every row runs on (five on
#: cpu and gpu, so every claim pairs five seeds; smoke's three) and the end-to-end rows' longer
#: runs. LAC's network and stages (the head, the epochs of each stage, the optimiser) are its
#: recipe's, shared with 07's LAC cells (:data:`mlpl_lab.protocol.lac_stages.STAGES`).
#:
#: ``longer_end_to_end``: the end-to-end rows still gained 0.6-2.9 mAP in their last quarter at 28
#: epochs, the losing side of "end-to-end LAC is worse than PLC": the cold series trains them at
#: twice stage 1 (pending runs, :func:`longer_specs`)
DESIGNS: Dict[str, Dict[str, Any]] = {
    "smoke": dict(n_seeds=3),
    "cpu": dict(n_seeds=5, longer_end_to_end=56),
    "gpu": dict(n_seeds=5),
}


@dataclass(frozen=True)
class LACDesign(TwoStage):
    """What the chapter trains under one profile: LAC's network and stages (:class:`TwoStage`, its
    recipe's) and the chapter's own seeds, regime and longer runs."""

    seeds: Tuple[int, ...] = ()
    regime: str = "single_positive"
    #: epochs of the end-to-end rows' longer runs (a verdict at risk; None: none designed)
    longer_end_to_end: int | None = None

    @property
    def families(self) -> Dict[str, "Family"]:
        """The chapter's questions (:func:`families`), declared before any run is read."""
        return families(self)

    def epochs_of(self, label: str) -> int:
        """Total epochs behind a row's weights (stage-2 rows count stage 1's too)."""
        if label in STAGE2 or label == CONTROL:
            return self.stage1_epochs + self.stage2_epochs
        return self.stage1_epochs


def design(profile="cpu", regime: str = "single_positive") -> LACDesign:
    """The design of notebook 05 under ``profile`` (:data:`DESIGNS` by the designs' one rule,
    :func:`mlpl_lab.protocol.common.preset`, with LAC's network and stages,
    :func:`mlpl_lab.protocol.lac_stages.stage_fields`) and ``regime`` (the notebook's parameter)."""
    P = as_profile(profile)
    lit = dict(preset(DESIGNS, P))
    return LACDesign(seeds=tuple(P.seeds[:lit.pop("n_seeds")]), regime=regime, **stage_fields(P), **lit)


#: the name the benchmark, the live exercise and ``leaves_out`` call it by
chapter_design = design


def row_spec(profile, label: str, seed: int, regime: str = "single_positive", regime_params=None,
             design: LACDesign | None = None, method_params=None):
    """The RunSpec of one Table 3 row and seed, on LAC's network (:mod:`mlpl_lab.protocol.lac_stages`);
    a stage-2 row carries the +PLC spec of its seed (07's LAC cells are these specs too). Refuses a
    regime where the row is not defined (:func:`mlpl_lab.protocol.lac_stages.regime_defined`)."""
    d = design or chapter_design(as_profile(profile))
    method = ROWS[label][0]
    params = {**ROW_PARAMS.get(label, {}), **dict(method_params or {})}
    if label in STAGE2:
        return stage2(d, method, seed, regime, regime_params, params)
    epochs = d.stage1_epochs + d.stage2_epochs if label == CONTROL else d.stage1_epochs
    return stage_spec(d, method, epochs, seed, regime, regime_params, params=params)


def specs(design: LACDesign, stored: Stored = nothing_stored) -> Asked:
    """Every row of Table 3 on the design's seeds under its regime, as one family
    (``{TABLE: {row: [RunSpec per seed]}}``; a stage-2 spec carries the stage-1 spec it starts
    from, so ensuring it trains stage 1 first). Nothing is chosen on validation (the code-start
    row picks raw or EMA inside its own run), so ``stored`` is not read and nothing waits."""
    asked = Asked({TABLE: {label: [row_spec(design.profile, label, s, design.regime, None, design)
                                   for s in design.seeds] for label in ROWS}})
    return with_pending(asked, longer_specs(design))


#: the pending family of the end-to-end rows trained longer (:func:`longer_specs`)
LONGER = "end-to-end, trained longer"
END_TO_END_ROW = LABEL.lac_end_to_end


def longer_specs(design: LACDesign) -> Dict[str, Dict[str, list]]:
    """``{LONGER: {label: [RunSpec per seed]}}``: the end-to-end row at ``longer_end_to_end``
    epochs on the design's seeds (only its epochs differ), or {} where the design has none. Pending
    runs (:func:`mlpl_lab.protocol.common.with_pending`): the cold series trains them."""
    n = design.longer_end_to_end
    if not n:
        return {}
    base = [row_spec(design.profile, END_TO_END_ROW, s, design.regime, None, design) for s in design.seeds]
    return {LONGER: {f"{END_TO_END_ROW} ({n} epochs)": [s.replace(train=dict(s.train, epochs=n)) for s in base]}}


#: the row of Table 3 the live exercise cuts down (both stages)
LIVE_ROW = LABEL.lac_row


def live_seeds(profile) -> Tuple[int, ...]:
    """The seeds of Table 3: every row runs on the design's seeds."""
    return tuple(design(profile).seeds)


def live_spec(profile, seed: int, store=None):
    """LAC's run of Table 3 (:data:`LIVE_ROW`: two stages and the queue) on ``seed``."""
    return row_spec(as_profile(profile), LIVE_ROW, seed)


def chapter_splits(design: LACDesign, seed: int = 0):
    """The splits of ``seed`` the design's runs train on (its regime, its scene)."""
    return splits_for(design.profile, design.regime, None, seed, scene=design.scene)


def table3(results, design: LACDesign, metric: str = "test_mAP"):
    """Table 3's shape (:func:`mlpl_lab.analysis.tables.ablation_frames`): ``(table, half, seeds,
    unconverged)``; the table holds the ✓ / ✗ columns, the epochs and seeds of each row, our mAP
    (mean over seeds, raw weights at the best-val epoch), the best epoch per seed of the epochs
    the row trains itself and the paper's VOC / COCO numbers."""
    marks = {}
    for label, runs in results.items():
        _, (plc, lac, two, queue) = ROWS[label]
        paper = PAPER_TABLE3.get(label)
        own = design.stage2_epochs if label in STAGE2 else design.epochs_of(label)
        marks[label] = {LABEL.an: True, "PLC": plc, LABEL.lac: lac, LABEL.lac_two_stage: two, "queue": queue,
                        "epochs": design.epochs_of(label), "seeds": len(runs),
                        "best epoch / of": f"{','.join(str(r.best_epoch + 1) for r in runs)} / {own}",
                        "paper VOC / COCO": "—" if paper is None else f"{paper[0]} / {paper[1]}"}
    return ablation_frames(marks, results, metric)


def ema_table(results, metric: str = "test_mAP"):
    """Raw vs EMA weights per row (mean over seeds at the best raw-val epoch), with the val
    scores the code would compare to pick stage 2's start (the better of the two); NaN where a
    row keeps no EMA."""
    import pandas as pd

    def mean(runs, key):
        return seed_mean(runs, key) if all(key in r.best for r in runs) else float("nan")

    rows = {label: {"val raw": mean(runs, "val_mAP"), "val EMA": mean(runs, "val_mAP[ema]"),
                    "test raw": mean(runs, metric), "test EMA": mean(runs, f"{metric}[ema]")}
            for label, runs in results.items()}
    return pd.DataFrame(rows).T


def stage2_start_table(results, row: str = LABEL.lac_plc):
    """Where stage 2 would start, per seed of the stage-1 row: the raw and the EMA weights' val mAP
    at the best raw-val epoch, and which of the two the official code's checkpoint would hold (the
    better on validation; ``stage2_start="raw_or_ema"``), next to what the :data:`CODE_START` row's
    run of that seed recorded when it loaded them (``init_from_ema``). The other stage-2 rows start
    from the raw weights (``"raw"``, the paper's continuation of stage 1)."""
    import pandas as pd

    loaded = {int(r.spec.seed): r.initial.get("init_from_ema") for r in results.get(CODE_START, [])}
    rows = []
    for r in results.get(row, []):
        raw, ema = float(r.best.get("val_mAP", np.nan)), float(r.best.get("val_mAP[ema]", np.nan))
        code = "—" if np.isnan(raw) or np.isnan(ema) else ("EMA" if ema > raw else "raw")
        got = loaded.get(int(r.spec.seed))
        rows.append({"seed": int(r.spec.seed), "val raw": raw, "val EMA": ema, "EMA - raw": ema - raw,
                     "the code starts from": code,
                     "the code-start row loaded": "—" if got is None else ("EMA" if got else "raw")})
    return pd.DataFrame(rows).set_index("seed") if rows else pd.DataFrame()


def pseudo_positive_counts(results, rows=STAGE2 + (LABEL.lac_plc,)) -> Dict[str, Dict[str, float]]:
    """``{row: {"delta", "per seed": [...], "total"}}``: unknown entries whose weak-view
    probability reached δ, summed over every step of every epoch (``plc_pseudo_positives``).
    A total of 0 means PLC made no pseudo-positive and LAC contrasted observed positives only."""
    out = {}
    for label in rows:
        runs = results.get(label, [])
        per_seed = [float(sum(row.get("plc_pseudo_positives", 0.0) for row in r.history)) for r in runs]
        spec = getattr(runs[0], "spec", None) if runs else None
        delta = build_method(spec.method, **spec.method_params).delta if spec is not None else None
        out[label] = {"delta": delta, "per seed": per_seed, "total": float(sum(per_seed))}
    return out


def pseudo_positive_sentences(counts: Mapping[str, Mapping[str, Any]]) -> List[str]:
    """One sentence per row, conditional on the recorded count (no outcome is written in advance)."""
    lines = []
    for label, c in counts.items():
        d = c["delta"]
        if c["total"] == 0:
            lines.append(f"{label} (δ = {d}): no unknown label reached δ in any step of any seed — PLC made "
                         "no pseudo-positive, and LAC's valid entries were the observed positives only.")
        else:
            per = ", ".join(f"{v:.0f}" for v in c["per seed"])
            lines.append(f"{label} (δ = {d}): {c['total']:.0f} pseudo-positive selections over all steps "
                         f"(per seed: {per}).")
    return lines


def flat_map_comparison(loc) -> Tuple[Any, List[str]]:
    """Grad-CAM and attention scores next to the flat-map baseline (``area``: what a map spread
    evenly over the image scores in energy share and, in expectation, in the pointing game),
    from :func:`mlpl_lab.viz.attention.map_localisation_table`. Returns (DataFrame with the
    differences, one sentence per (model, pair set) saying whether Grad-CAM's pointing score
    is above or below the flat map's — computed, not asserted)."""
    df = loc[["pointing", "energy", "area"]].copy()
    df["pointing − flat"] = df["pointing"] - df["area"]
    df["energy − flat"] = df["energy"] - df["area"]
    lines = []
    for (model, kind, pairs), r in df.iterrows():
        if kind != "grad-cam":
            continue
        side = "below" if r["pointing"] < r["area"] else "above" if r["pointing"] > r["area"] else "equal to"
        att = df.loc[(model, "attention", pairs), "pointing"] if (model, "attention", pairs) in df.index else np.nan
        lines.append(f"{model}, {pairs} positives: Grad-CAM pointing {r['pointing']:.3f} is {side} a flat map's "
                     f"{r['area']:.3f}; the attention map points at {att:.3f}.")
    return df, lines


#: the chapter's one question: the ablations of Table 3, six rows read together (:func:`families`)
ABLATIONS = "the ablations of chapter 05's Table 3"
#: how many comparisons the ablation family asks (the six rows of :func:`claims`)
ABLATION_ROWS = 6


def families(design: "LACDesign | None" = None) -> Dict[str, Family]:
    """The chapter's questions, declared before any run is read (every profile asks the same
    ones: the rows of Table 3 are literals of the chapter). The six ablation rows — PLC against
    AN, PLC against end-to-end LAC, each second-stage row against PLC trained as long, the queue,
    the code's stage-2 start — are one question, "what does each piece of LAC do?", asked six
    times: one family, m = 6, so a reader who scans the six rows for the one that moved is
    protected against the scan. A control of one of them (the end-to-end rows trained longer) is
    one more comparison of it (:mod:`mlpl_lab.analysis.claims`, "Controls decide")."""
    return {ABLATIONS: Family(ABLATIONS, ABLATION_ROWS, "what does each piece of LAC do (Table 3's ablation rows)?")}


def claims(results, design: "LACDesign | None" = None, longer: Mapping[str, list] | None = None):
    """The chapter's claims, paired by seed, in the families :func:`families` declares. Stage-1
    rows compare at equal epochs (E1); every stage-2 row is compared with the equal-epochs
    control (E1+E2), or with the other stage-2 row. The paper's "LAC beats AN" is left out: AN
    trains E1 epochs, LAC E1+E2."""
    r, fam = results, families(design)
    e2e = claim_id("plc_beats_end_to_end")
    rows = [
        Claim("PLC beats AN", "VOC 89.0 vs 87.6; COCO 73.7 vs 72.3 (Table 3)", LABEL.lac_plc, LABEL.an, r[LABEL.lac_plc], r[LABEL.an],
              family=fam[ABLATIONS], id=claim_id("plc_beats_an")),
        Claim("end-to-end LAC is worse than PLC (PLC beats it)", "VOC 89.0 vs 84.5; COCO 73.7 vs 65.6",
              LABEL.lac_plc, "end-to-end", r[LABEL.lac_plc], r[LABEL.lac_end_to_end], family=fam[ABLATIONS], id=e2e),
        Claim("two stages beat PLC trained as long (control)",
              "VOC 89.2 vs 89.0; COCO 74.7 vs 73.7 (against PLC trained one stage)",
              LABEL.lac_two_stage, "control", r[LABEL.lac_two_stage], r[CONTROL], family=fam[ABLATIONS],
              id=claim_id("two_stages_beat_equal_epochs")),
        Claim("the queue helps (two-stage + queue beats two-stage)", "VOC 89.6 vs 89.2; COCO 75.6 vs 74.7",
              LABEL.lac, LABEL.lac_two_stage, r[LABEL.lac_row], r[LABEL.lac_two_stage], family=fam[ABLATIONS],
              id=claim_id("queue_helps")),
        Claim("LAC (two stages + queue) beats PLC trained as long (control)",
              "VOC 89.6 vs 89.0; COCO 75.6 vs 73.7 (against PLC trained one stage)",
              LABEL.lac, "control", r[LABEL.lac_row], r[CONTROL], family=fam[ABLATIONS],
              id=claim_id("lac_beats_equal_epochs")),
        Claim("the code's stage-2 start (raw or EMA) beats the paper's (raw)",
              "not in the paper: its numbers come from the code's start",
              "code's start", LABEL.lac, r[CODE_START], r[LABEL.lac_row], family=fam[ABLATIONS],
              id=claim_id("code_start_beats_paper_start")),
    ]
    for label, runs in (longer or {}).items():  # the losing side trained longer: a control of the claim
        rows.append(Claim(f"PLC beats {label}", "the same comparison, the end-to-end rows trained longer",
                          LABEL.lac_plc, label, r[LABEL.lac_plc], runs, control_of=e2e,
                          id=claim_id("trained_longer", e2e)))
    table = claims_table(rows)
    wanted = longer_specs(design) if design is not None else {}
    if wanted and not longer and bool(table.at[e2e, "_at_risk"]):
        (label,) = wanted[LONGER]
        table = mark_waiting(table, {e2e: f"its control, {label} (pending: the cold series trains them)"})
    return table


# --- what the notebook shows (the one table style, mlpl_lab.analysis.display) ------------------

def table3_view(results, design: LACDesign, metric: str = "test_mAP"):
    """:func:`table3` as the notebook shows it: our mAP as mean ± 95 % interval (seeds) with †
    where a run did not converge, the best row in bold."""
    from ..analysis.display import caption, styled

    t, half, n, unconv = table3(results, design, metric)
    col = metric.replace("test_", "")
    order = [LABEL.an, "PLC", LABEL.lac, LABEL.lac_two_stage, "queue", "epochs", "seeds", col, "best epoch / of", "paper VOC / COCO"]
    t = t[order].rename(columns={col: "mAP"})
    return styled(t, caption("LAC, Table 3 at this scale: the parts of each row (✓ / ✗), its epochs and seeds, "
                             "our test mAP (%) with the raw weights at the best clean-validation epoch, the best "
                             "epochs per seed of the epochs the row trains, and the paper's VOC / COCO mAP"),
                  percent=["mAP"], half=half.rename(columns={col: "mAP"}), seeds=n.rename(columns={col: "mAP"}),
                  unconverged=unconv.rename(columns={col: "mAP"}), counts=["epochs", "seeds"])


def loss_forms_view(values: Mapping[str, float]):
    """``{form: loss}`` (the contrastive loss of one toy batch in each form) as a two-row table."""
    from ..analysis.display import text_table

    return text_table({form: {"contrastive loss": v} for form, v in values.items()},
                      "LAC's contrastive loss of the toy batch and queue above in the paper's form (a sum "
                      "over each anchor's positives) and the official code's (their mean).",
                      index="form", best=False)


def scale_view(scale_table):
    """The loss of each form against the queue size (:func:`loss_vs_queue`, pivoted)."""
    from ..analysis.display import styled

    t = scale_table.copy()
    t.columns.name = None
    return styled(t, "LAC's contrastive loss of one random batch against the number of queued pairs K, in "
                  "the paper's form (a sum over each anchor's positives, the queue's included) and the "
                  "code's (their mean).", best=False)


def ema_view(ema):
    """:func:`ema_table` as the notebook shows it."""
    from ..analysis.display import styled

    return styled(ema, "Validation and test mAP (%) of the raw and the EMA weights per row (mean over seeds, "
                  "at the best raw-validation epoch).", percent=True, best=False)


def stage2_start_view(start):
    """:func:`stage2_start_table` as the notebook shows it."""
    from ..analysis.display import styled

    return styled(start, "Per seed of stage 1 (+PLC): the validation mAP (%) of its raw and EMA weights at the "
                  "best raw-validation epoch, which of the two the official code would start stage 2 from, "
                  "and what the code-start row loaded.", percent=["val raw", "val EMA", "EMA - raw"], best=False)


def ratio_view(ratio_table):
    """The per-epoch ``loss_lac / loss_an`` ratio and contrasted pairs (index run × quantity,
    columns epochs) as one row per run, the pairs as integers."""
    from ..analysis.display import MAX_COLUMNS, spaced, styled

    t = ratio_table.unstack("quantity").swaplevel(axis=1).sort_index(axis=1)
    t.columns.names = ["quantity", "epoch"]
    epochs = sorted({c[1] for c in t.columns})
    quantities = sorted({c[0] for c in t.columns})
    # at most MAX_COLUMNS columns: evenly spaced epochs (the first and last kept) per quantity
    shown = spaced(epochs, max(2, MAX_COLUMNS // max(1, len(quantities))))
    note = ("" if len(shown) == len(epochs) else
            f" Shown: epochs {', '.join(map(str, shown))} of 1–{max(epochs)}; every epoch is in the "
            "record `lac_an_ratio_per_epoch` (and its CSV).")
    t = t[[c for c in t.columns if c[1] in shown]]
    return styled(t, "Per epoch (mean over seeds): LAC's contrastive loss over AN's (lac_an_ratio) and the "
                  "contrasted pairs per step (lac_contrast_pairs); — the run has no such epoch." + note,
                  counts=[c for c in t.columns if c[0] == "lac_contrast_pairs"], best=False)


def plc_view(plc_last):
    """PLC's diagnostics at the last epoch (shares, 0–1) as the notebook shows them."""
    from ..analysis.display import styled

    t = plc_last.copy()
    t.columns.name = None
    return styled(t, "PLC at each run's last epoch (mean over seeds, shares 0–1): the unknown entries it "
                  "labels (coverage), and the precision of its negatives and of its positives and the "
                  "recall of the hidden positives against the true labels; — no pseudo-positive.", best=False)


def flat_map_view(versus_flat):
    """:func:`flat_map_comparison`'s table as the notebook shows it (three decimals: the
    differences from the flat map are small)."""
    from ..analysis.display import styled

    return styled(versus_flat, "Localisation of the attention maps and Grad-CAM (pointing game, energy share; "
                  "area: a flat map's score) and each minus the flat map's, per model and (image, class) "
                  "pair set. Bold: the best pointing and energy scores.",
                  digits={c: 3 for c in versus_flat.columns}, best=["pointing", "energy"])


def geometry_view(geo: Mapping[str, Mapping[str, Any]]):
    """:func:`mlpl_lab.analysis.lac_diagnostics.embedding_geometry` per stage and space as a table."""
    from ..analysis.display import text_table

    rows = {label: {"within a class": g["mean_within"], "between classes": g["mean_between"], "gap": g["gap"]}
            for label, g in geo.items()}
    return text_table(rows, "Mean cosine similarity of label embeddings (test set) within a class and between "
                      "classes, and their gap, after each stage, before (h) and after (z) the projection.",
                      index="stage, space", best=False)


def converged_view(results):
    """Whether each run of each row converged, as a ✓ / ✗ table (one column per seed)."""
    from ..analysis.display import flags_table

    return flags_table({label: [getattr(r, "converged", None) for r in runs] for label, runs in results.items()},
                       "Did each run converge (criterion of mlpl_lab.core.convergence)? ✓ yes, ✗ no, one column "
                       "per seed of the row.", seed_labels={label: [int(r.spec.seed) for r in runs]
                                                            for label, runs in results.items()})


def plc_targets_view(weak_probs, labels, delta: float = 0.6):
    """PLC's targets and mask on one row of toy probabilities in both forms
    (:func:`mlpl_lab.losses.lac.plc_targets`): one column per entry, rows target / used per form."""
    import pandas as pd

    from ..analysis.display import styled
    from ..losses.lac import plc_targets

    cols = [f"p = {float(p):g} ({'observed +' if int(y) == 1 else 'unknown' if int(y) == -1 else 'observed −'})"
            for p, y in zip(weak_probs[0].tolist(), labels[0].tolist())]
    rows = {}
    for form in ("paper", "code"):
        target, mask = plc_targets(weak_probs, labels, delta=delta, form=form)
        rows[(form, "target")] = [int(t) for t in target[0].tolist()]
        rows[(form, "used")] = [bool(m) for m in mask[0].tolist()]
    t = pd.DataFrame.from_dict(rows, orient="index", columns=cols).astype(object)
    t.index = pd.MultiIndex.from_tuples(list(rows), names=["form", ""])
    return styled(t, f"PLC with δ = {delta:g} on one image's weak-view probabilities: the hard target each entry "
                  "gets and whether it is used (✓), in the paper's form and the code's.", counts=cols, best=False)


def outputs_view(out: Mapping[str, Any], image: int = 0, classes: int = 4):
    """The outputs of LAC's network on a batch (``model.outputs(x)``): each output's shape, and the
    attention of ``image`` summed over its map for the first ``classes`` classes (1: a softmax)."""
    from ..analysis.display import text_table

    rows = {k: {"shape": " × ".join(str(int(d)) for d in v.shape)} for k, v in out.items()}
    sums = out["attention"].sum(dim=(2, 3))[image, :classes].tolist() if "attention" in out else []
    return text_table(rows, f"The outputs of LAC's network on a batch of {len(next(iter(out.values())))} random "
                      "images (batch × classes × …). The attention map of each class sums to 1 over the "
                      f"map: image {image}, classes 0–{classes - 1}: " + ", ".join(f"{s:.2f}" for s in sums) + ".",
                      index="output", best=False)


def design_view(design: LACDesign):
    """The chapter's design (:func:`design`) as a table of its fields (the profile named in the caption)."""
    from ..analysis.display import fields_table

    return fields_table(design, f"The chapter's design under the {design.profile.name} profile: what each row "
                        "trains.", skip=("profile",))


#: the chapter, as :mod:`mlpl_lab.protocol.registry` finds it; the live run's sizes per profile
#: (cpu: measured by benchmarks/bench_live.py to train in at most 3 minutes on 2 cores)
LIVE_SIZES = {
    "smoke": {"n_train": 128, "epochs": (1, 1)},
    "cpu": {"n_train": 1000, "epochs": (6, 3)},
    "gpu": {"n_train": 5000, "epochs": (4, 2)},
    "gpu_shape": {"n_train": 256, "epochs": (1, 1)},
}
CHAPTER = Chapter("05_lac", live=Live("LAC (two stages)", LIVE_SIZES, live_seeds, live_spec))
