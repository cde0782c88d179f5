"""Notebook 08 — beyond the five papers: what side information buys, and label sets you can trust.

The chapter as data: :func:`design` holds its per-profile literals (:data:`DESIGNS`) and the
notebook's parameters, :func:`specs` the runs they ask for, and the views below read the ensured
runs. The methods are :mod:`mlpl_lab.methods.crisp` (class priors, Crisp, NeurIPS 2025),
:mod:`mlpl_lab.methods.cardinality` (label cardinality, TMLR 2025) and the label sets of
:mod:`mlpl_lab.analysis.conformal` (class-wise split conformal, the idea of LAMC, 2025).

Five families of runs, all under single positive on the profile's scenes and the reported seeds:

* **baselines** — the full-label oracle, AN and EM, the very runs chapter 07 asks for (shared), and
  GR at its paper's default (07's GR cell keeps the schedule its tuning chose, so it is not shared);
* **class priors** — Crisp (priors estimated by Eq. 2 every epoch) and Crisp given the true priors;
* **label cardinality** — the three grains (the maximum K, the distribution P(k), each image's k);
* **prior error** — Crisp given the true priors times a factor (:attr:`SideInfoDesign.prior_factors`);
* **cardinality error** — the cardinality off by a whole number (:attr:`SideInfoDesign.k_offsets`),
  at the grains :attr:`SideInfoDesign.offset_rows` names.

The label sets read the probabilities of the rows in :attr:`SideInfoDesign.label_set_rows` on
their own validation and test scenes: nothing trains for them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Tuple

from .. import catalogue
from ..analysis.benchmark import convergence_mark
from ..analysis.claims import Claim, Family, by_seed, claim_id, claims_table, mark_schedule_bound
from ..catalogue import LABEL
from ..profiles import Profile
from ..protocol import bound_length
from ..protocol.asked import Asked, Stored
from ..protocol.common import as_profile
from ..protocol.design import preset
from ..protocol.recipes import spec_for
from ..protocol.regimes import regime_slug
from ..protocol.registry import Chapter
from ..protocol.tuning import fresh_seeds

#: the notebook parameters that change which runs the chapter asks for
PARAMETERS: Tuple[str, ...] = ()

#: the chapter's regime (07's label for it, whose cells the baselines share)
REGIME = "single positive"
#: the pending family of GR's length check (schedule-bound), with AN on its seeds
BOUND_CHECK = bound_length.BOUND_CHECK
#: the families of :func:`specs`
BASELINES, PRIORS, CARDINALITY, PRIOR_ERROR, CARDINALITY_ERROR = (
    "baselines", "class priors", "label cardinality", "prior error", "cardinality error")
#: the chapter's questions (:attr:`SideInfoDesign.families`)
PRIORS_Q, CARDINALITY_Q = "what class priors buy", "what label cardinality buys"

#: where a sweep's side information is right: factor 1 (the priors), offset 0 (the cardinality)
PRIOR_TRUTH, OFFSET_TRUTH = 1.0, 0


@dataclass(frozen=True)
class SideInfoDesign:
    """Every literal of the chapter under one profile."""

    profile: Profile
    seeds: Tuple[int, ...]                 # every row's seeds (07's reported seeds, first ones)
    baselines: Tuple[str, ...]             # 07's rows, shared with it
    prior_rows: Tuple[str, ...]
    cardinality_rows: Tuple[str, ...]
    prior_factors: Tuple[float, ...]       # the true priors times these (1 is the true-prior row)
    k_offsets: Tuple[int, ...]             # the cardinality plus these (0 is the row itself)
    offset_rows: Tuple[str, ...]           # the cardinality rows the offsets sweep
    label_set_rows: Tuple[str, ...]        # the rows whose models give label sets
    alphas: Tuple[float, ...] = (0.1, 0.2)
    calibration_images: int = 200          # the clean calibration set drawn from validation
    draws: int = 20                        # calibration draws per run

    @property
    def families(self) -> Dict[str, Family]:
        """The chapter's questions, declared before any run is read: what the priors buy (Crisp
        against AN and GR, the true priors against the estimated ones) and what the cardinality
        buys (each grain against AN)."""
        out = {}
        n_p = len(self.family_members.get(PRIORS_Q, ()))
        if n_p:
            out[PRIORS_Q] = Family(PRIORS_Q, n_p, "does Crisp beat AN and GR, and do the true priors beat "
                                   "its estimates?")
        n_c = len(self.family_members.get(CARDINALITY_Q, ()))
        if n_c:
            out[CARDINALITY_Q] = Family(CARDINALITY_Q, n_c, "does each grain of label cardinality beat AN?")
        return out

    @property
    def family_members(self) -> Dict[str, Tuple[str, ...]]:
        """``{family: claim ids}``: the claims each family asks, from the design alone."""
        priors = []
        if LABEL.crisp in self.prior_rows and LABEL.an in self.baselines:
            priors.append(claim_id("beats_an", catalogue.entry("crisp").key, regime_slug(REGIME)))
        if LABEL.crisp in self.prior_rows and LABEL.gr in self.baselines:
            priors.append(claim_id("crisp_beats_gr"))
        if LABEL.crisp in self.prior_rows and LABEL.crisp_true in self.prior_rows:
            priors.append(claim_id("true_priors_beat_estimated"))
        cards = [claim_id("beats_an", catalogue.by_label(r).key, regime_slug(REGIME))
                 for r in self.cardinality_rows if LABEL.an in self.baselines]
        return {k: tuple(v) for k, v in ((PRIORS_Q, priors), (CARDINALITY_Q, cards)) if v}

    def prior_label(self, factor: float) -> str:
        """The row of the prior sweep at ``factor`` (1: the true-prior row itself)."""
        return LABEL.crisp_true if factor == PRIOR_TRUTH else f"{LABEL.crisp_true} × {factor:g}"

    def offset_label(self, row: str, offset: int) -> str:
        """The row of the cardinality sweep of ``row`` at ``offset`` (0: ``row`` itself)."""
        return row if offset == OFFSET_TRUTH else f"{row} {offset:+d}"


#: per profile. cpu: four baselines (three shared with 07; GR at its default is the chapter's own), two
#: prior rows, three cardinality rows, four prior factors and two offsets at two grains, on three seeds
#: (:func:`run_count` counts them). smoke keeps two rows a family and two seeds, so the notebook runs in
#: seconds.
DESIGNS: Dict[str, Dict[str, Any]] = {
    "smoke": {"seeds": 2, "baselines": (LABEL.oracle, LABEL.an),
              "prior_rows": (LABEL.crisp, LABEL.crisp_true),
              "cardinality_rows": (LABEL.cardinality_max, LABEL.cardinality_per_image),
              "prior_factors": (0.5, 2.0), "k_offsets": (-1, 1), "offset_rows": (LABEL.cardinality_per_image,),
              "label_set_rows": (LABEL.crisp, LABEL.cardinality_per_image),
              "calibration_images": 32, "draws": 5},
    "cpu": {"seeds": 3, "baselines": (LABEL.oracle, LABEL.an, LABEL.em, LABEL.gr),
            "prior_rows": (LABEL.crisp, LABEL.crisp_true),
            "cardinality_rows": (LABEL.cardinality_max, LABEL.cardinality_distribution, LABEL.cardinality_per_image),
            "prior_factors": (0.5, 0.75, 1.5, 2.0), "k_offsets": (-1, 1),
            "offset_rows": (LABEL.cardinality_distribution, LABEL.cardinality_per_image),
            "label_set_rows": (LABEL.crisp, LABEL.cardinality_distribution, LABEL.cardinality_per_image)},
}
#: gpu: the cpu design on five seeds
DESIGNS["gpu"] = dict(DESIGNS["cpu"], seeds=5)


def design(profile) -> SideInfoDesign:
    """The chapter's design under ``profile`` (its :data:`DESIGNS` row, by the designs' one rule;
    the seeds are the first of 07's reported seeds, so the baselines are 07's runs)."""
    P = as_profile(profile)
    row = dict(preset(DESIGNS, P))
    n = row.pop("seeds")
    return SideInfoDesign(profile=P, seeds=tuple(fresh_seeds(P)[:n]), **row)


def _own_spec(P: Profile, label: str, seed: int, **extra):
    e = catalogue.by_label(label)
    return P.spec(e.method, dict(e.params, **extra), "single_positive", {}, seed=seed)


def specs(d: SideInfoDesign, stored: Stored) -> Asked:
    """The chapter's five families (module docstring); no choice waits on a result. Pending,
    :data:`BOUND_CHECK`: GR (schedule-bound) and AN on its seeds at 4/3 of the epochs where GR did
    not converge (:func:`mlpl_lab.protocol.bound_length.check_family`; a cold series or ``mlpl-lab
    train`` trains it, the notebook reads it when stored)."""
    P = d.profile
    seeds = list(d.seeds)
    baselines = {label: [spec_for(P, label, REGIME, s) for s in seeds] for label in d.baselines}
    priors = {label: [_own_spec(P, label, s) for s in seeds] for label in d.prior_rows}
    cards = {label: [_own_spec(P, label, s) for s in seeds] for label in d.cardinality_rows}
    prior_error = {d.prior_label(f): [_own_spec(P, LABEL.crisp_true, s, prior_scale=float(f)) for s in seeds]
                   for f in d.prior_factors if f != PRIOR_TRUTH}
    card_error = {d.offset_label(row, k): [_own_spec(P, row, s, k_offset=int(k)) for s in seeds]
                  for row in d.offset_rows for k in d.k_offsets if k != OFFSET_TRUTH}
    check = bound_length.check_family(baselines, baselines.get(LABEL.an, []), stored)
    return Asked({BASELINES: baselines, PRIORS: priors, CARDINALITY: cards,
                  PRIOR_ERROR: prior_error, CARDINALITY_ERROR: card_error},
                 pending={BOUND_CHECK: check} if check else {})


def convergence_sets(runs) -> List[Any]:
    """The result sets the chapter's convergence record reads: every family, the length check under
    its own name (its labels repeat the baselines')."""
    sets = [rows for family, rows in runs.items() if family != BOUND_CHECK]
    return sets + ([{"length check": runs[BOUND_CHECK]}] if runs.get(BOUND_CHECK) else [])


def bound_length_view(d: SideInfoDesign, runs, store=None):
    """GR's length check as the notebook shows it (GR and AN at both lengths), with how many of its
    runs are not trained yet."""
    from ..protocol.asked import pending_missing, store_lookup

    stored = store_lookup(store)
    waiting = pending_missing(specs(d, stored), stored).get(BOUND_CHECK, {})
    return bound_length.chapter_view(runs[BASELINES], runs.get(BOUND_CHECK), REGIME, waiting)


def bound_length_record(runs) -> Dict[str, Any]:
    """GR's check per seed at both lengths (:func:`mlpl_lab.protocol.bound_length.chapter_record`)."""
    return bound_length.chapter_record(runs[BASELINES], runs.get(BOUND_CHECK), REGIME)


def length_check_agreement(runs, claims) -> Dict[str, bool]:
    """``{run key: bool}``: whether each checked schedule-bound run's length check agrees ("GR beats
    AN" read the same at both lengths, :func:`mlpl_lab.protocol.bound_length.chapter_agreement`; and
    any claim's note), for the protocol's share."""
    return bound_length.claims_agreement(runs[BASELINES], runs.get(BOUND_CHECK), REGIME, claims)


def run_count(d: SideInfoDesign) -> int:
    """How many runs the design asks for (each key once)."""
    return len(specs(d, lambda s: None).flat())


def cardinality_rows(runs, d: SideInfoDesign) -> Dict[str, List[Any]]:
    """The rows of the cardinality table: the oracle and AN beside the design's cardinality rows."""
    rows = main_rows(runs)
    return {k: rows[k] for k in (LABEL.oracle, LABEL.an, *d.cardinality_rows) if k in rows}


def main_rows(runs) -> Dict[str, List[Any]]:
    """The rows of the results table: the baselines, the prior rows and the cardinality rows."""
    return {**runs.get(BASELINES, {}), **runs.get(PRIORS, {}), **runs.get(CARDINALITY, {})}


# ------------------------------------------------------------------------------------- the sweeps
def prior_sweep(d: SideInfoDesign, runs) -> Dict[float, List[Any]]:
    """``{factor: runs}`` of the prior sweep, the true-prior row at factor 1."""
    out = {PRIOR_TRUTH: runs[PRIORS][LABEL.crisp_true]}
    for f in d.prior_factors:
        if f != PRIOR_TRUTH:
            out[float(f)] = runs[PRIOR_ERROR][d.prior_label(f)]
    return dict(sorted(out.items()))


def offset_sweeps(d: SideInfoDesign, runs) -> Dict[str, Dict[int, List[Any]]]:
    """``{row: {offset: runs}}`` of the cardinality sweeps, each row itself at offset 0."""
    out = {}
    for row in d.offset_rows:
        pts = {OFFSET_TRUTH: runs[CARDINALITY][row]}
        for k in d.k_offsets:
            if k != OFFSET_TRUTH:
                pts[int(k)] = runs[CARDINALITY_ERROR][d.offset_label(row, k)]
        out[row] = dict(sorted(pts.items()))
    return out


def sweep_curves(d: SideInfoDesign, runs, metric: str = "test_mAP"):
    """``{name: (curve, truth)}``: each sweep as a :func:`mlpl_lab.analysis.side_information.gain_curve`
    against AN, with the x where its side information is right."""
    from ..analysis.side_information import gain_curve

    an = by_seed(runs[BASELINES][LABEL.an], metric)
    out = {f"{LABEL.crisp_true}: prior factor": (
        gain_curve({x: by_seed(r, metric) for x, r in prior_sweep(d, runs).items()}, an), PRIOR_TRUTH)}
    for row, pts in offset_sweeps(d, runs).items():
        out[f"{row}: k offset"] = (gain_curve({x: by_seed(r, metric) for x, r in pts.items()}, an), OFFSET_TRUTH)
    return out


def vanishing_table(curves):
    """Per sweep: the mean gain over AN at the truth, and where the gain falls to zero below and
    above it (None: it does not vanish within the sweep)."""
    import pandas as pd

    from ..analysis.side_information import vanishing_point

    rows = {}
    for name, (curve, truth) in curves.items():
        v = vanishing_point(curve, truth)
        at = curve.loc[curve.index[[abs(float(x) - truth) < 1e-12 for x in curve.index]]]
        rows[name] = {"gain at the truth": float(at["gain"].iloc[0]) if len(at) else float("nan"),
                      "vanishes below at": v["below"], "vanishes above at": v["above"],
                      "sweep": f"{min(curve.index):g} … {max(curve.index):g}"}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("sweep")


# ------------------------------------------------------------------------------------- the claims
def claims(runs, d: SideInfoDesign):
    """The chapter's claims table, in the families the design declares. Where GR's runs are
    schedule-bound (§), a claim that reads them says that GR's length check (GR against AN, which no
    claim here compares) does not cover it, or that no check is stored; no claim is added."""
    fam = d.families
    base, pri, card = runs.get(BASELINES, {}), runs.get(PRIORS, {}), runs.get(CARDINALITY, {})
    rows = []
    if LABEL.crisp in pri and LABEL.an in base:
        rows.append(Claim(f"{LABEL.crisp} beats AN (single positive)",
                          "COCO / NUS-WIDE: 74.64 / 50.00 (ResNet-50)", LABEL.crisp, LABEL.an,
                          pri[LABEL.crisp], base[LABEL.an], family=fam[PRIORS_Q],
                          id=claim_id("beats_an", catalogue.entry("crisp").key, regime_slug(REGIME))))
    if LABEL.crisp in pri and LABEL.gr in base:
        rows.append(Claim(f"{LABEL.crisp} beats GR (single positive)",
                          "COCO: 74.64 vs 73.17; NUS-WIDE: 50.00 vs 49.08; VOC, CUB equal",
                          LABEL.crisp, LABEL.gr, pri[LABEL.crisp], base[LABEL.gr], family=fam[PRIORS_Q],
                          id=claim_id("crisp_beats_gr")))
    if LABEL.crisp in pri and LABEL.crisp_true in pri:
        rows.append(Claim("the true priors beat Crisp's estimates", "— (the estimator converges to the "
                          "true priors, Theorem 4.1)", LABEL.crisp_true, LABEL.crisp,
                          pri[LABEL.crisp_true], pri[LABEL.crisp], family=fam[PRIORS_Q],
                          id=claim_id("true_priors_beat_estimated")))
    for row in d.cardinality_rows:
        if row in card and LABEL.an in base:
            paper = ("NUS-WIDE: nearly the full labels' mAP" if row == LABEL.cardinality_per_image
                     else "above AN on every data set")
            rows.append(Claim(f"{row} beats AN (single positive)", paper, row, LABEL.an, card[row], base[LABEL.an],
                              family=fam[CARDINALITY_Q],
                              id=claim_id("beats_an", catalogue.by_label(row).key, regime_slug(REGIME))))
    table = claims_table(rows)
    gr = base.get(LABEL.gr)
    if not gr or convergence_mark(gr) != "schedule-bound":
        return table
    # GR's length check compares GR with AN, which no claim here does: a claim that reads GR's
    # runs says so (its runs count as converged through the check, bound_length.chapter_agreement)
    note = ("schedule-bound; the length check (GR against AN) does not cover this comparison"
            if (runs.get(BOUND_CHECK) or {}).get(LABEL.gr) else "schedule-bound, no length check stored")
    notes = {c.key: note for c in rows if LABEL.gr in (c.a_label, c.b_label)}
    return mark_schedule_bound(table, notes) if notes else table


# ------------------------------------------------------------------------ priors and label sets
def run_scores(run, with_train: bool = False) -> Dict[str, Any]:
    """A stored run's probabilities (float64 numpy) on its own validation and test scenes (and
    training set with ``with_train``), with their true and observed labels and the class names."""
    import torch

    from ..engine.train import predict_dataset
    from ..runs.splits_cache import build_splits

    splits = build_splits(run.spec)
    method = run.method
    out: Dict[str, Any] = {"class_names": list(getattr(splits.train, "class_names", []) or [])}
    for name in (("train",) if with_train else ()) + ("val", "test"):
        ds = getattr(splits, name)
        out[f"p_{name}"] = predict_dataset(method, ds, torch.device("cpu")).double().numpy()
        out[f"y_{name}"] = ds.scenes.labels.numpy()
        out[f"obs_{name}"] = ds.observed.numpy()
    return out


def shown_crisp_run(runs, seed: int):
    """The Crisp run (estimated priors) of ``seed``: the one the prior figure reads."""
    by_seed = {r.spec.seed: r for r in runs[PRIORS][LABEL.crisp]}
    if seed not in by_seed:
        raise ValueError(f"no {LABEL.crisp} run on seed {seed}; the design's seeds: {sorted(by_seed)}")
    return by_seed[seed]


def estimated_priors(run) -> Dict[str, Any]:
    """Crisp's estimator (Eq. 2) on ``run``'s training-set probabilities and observed positives,
    with the true priors of its training labels: ``{"estimated", "true", "class_names"}``."""
    import torch

    from ..losses.crisp import estimate_class_priors

    s = run_scores(run, with_train=True)
    est = estimate_class_priors(torch.as_tensor(s["p_train"]), torch.as_tensor(s["obs_train"]))
    return {"estimated": est.double().numpy(), "true": (s["y_train"] == 1).mean(axis=0),
            "class_names": s["class_names"]}


def label_sets(d: SideInfoDesign, runs, alphas=None, calibration: int | None = None,
               draws: int | None = None):
    """The label-set table (:func:`mlpl_lab.analysis.side_information.label_set_table`) over the
    design's :attr:`~SideInfoDesign.label_set_rows`, every seed, and ``{method: {seed: scores}}``
    (the probabilities the widget reuses)."""
    from ..analysis.side_information import label_set_rows, label_set_table

    alphas = tuple(alphas or d.alphas)
    calibration = int(calibration or d.calibration_images)
    draws = int(draws or d.draws)
    rows = main_rows(runs)
    per_run, scores = {}, {}
    for i, label in enumerate(d.label_set_rows):
        for run in rows[label]:
            s = run_scores(run)
            scores.setdefault(label, {})[run.spec.seed] = s
            per_run.setdefault(label, {})[run.spec.seed] = label_set_rows(
                s, alphas, calibration, draws, seed=1000 * (i + 1) + int(run.spec.seed))
    return label_set_table(per_run), scores


def findings(vanish, sets, slack: float = 0.02) -> str:
    """What the sweeps and the label sets found, as Markdown computed from the vanishing table
    (:func:`vanishing_table`) and the label-set table (:func:`label_sets`): per sweep the gain at
    the truth and where it vanishes; per α the calibrated and the observed-label coverage over the
    methods, and whether every calibrated mean reaches 1 − α − ``slack``."""
    import math

    from ..analysis.side_information import coverage_met

    met = coverage_met(sets, slack)

    def where(v):
        return "does not vanish within the sweep" if v is None or (isinstance(v, float) and math.isnan(v)) \
            else f"reaches 0 at {v:.2f}"

    lines = ["**What the sweeps and the label sets found** (computed from the tables above):", ""]
    for name, row in vanish.iterrows():
        g = row["gain at the truth"]
        if g <= 0:
            lines.append(f"* *{name}*: no gain over AN even with the side information right "
                         f"({g:+.2f} points at the truth), so there is no gain to lose.")
        else:
            lines.append(f"* *{name}*: {g:+.2f} points over AN at the truth; below it the gain "
                         f"{where(row['vanishes below at'])}, above it the gain {where(row['vanishes above at'])} "
                         f"(sweep {row['sweep']}).")
    frame = sets.reset_index()
    for alpha in sorted(frame["α"].unique()):
        at = frame[frame["α"] == alpha]
        cal, obs = at[at["thresholds"] == "calibrated"], at[at["thresholds"] == "observed"]
        ok = all(by_alpha[float(alpha)] for by_alpha in met.values())
        lines.append(f"* α = {alpha:g} (target {1 - alpha:.2f}): calibrated thresholds cover "
                     f"{cal['coverage'].min():.3f}–{cal['coverage'].max():.3f} of the test positives with "
                     f"{cal['mean_set_size'].min():.2f}–{cal['mean_set_size'].max():.2f} labels per image "
                     f"({'every method' if ok else 'not every method'} within {slack:g} of the target); the "
                     f"observed-label thresholds cover {obs['coverage'].min():.3f}–{obs['coverage'].max():.3f} "
                     f"over {len(cal)} method(s).")
    return "\n".join(lines)


# ------------------------------------------------------------------ what the notebook shows
def design_view(d: SideInfoDesign):
    """The design as a table: each family, its rows and their seeds."""
    import pandas as pd

    from ..analysis.display import styled

    a = specs(d, lambda s: None)
    rows = {fam: {"rows": len(labels), "runs": sum(len(v) for v in labels.values()),
                  "what": ", ".join(labels)} for fam, labels in a.now.items()}
    frame = pd.DataFrame.from_dict(rows, orient="index").rename_axis("family")
    return styled(frame, f"Chapter 08's runs under the {d.profile.name} profile, single positive, seeds "
                  f"{', '.join(map(str, d.seeds))}; the baselines are chapter 07's own runs.",
                  counts=["rows", "runs"], best=False)


def prior_view(table):
    """:func:`mlpl_lab.analysis.side_information.prior_table` as the notebook shows it."""
    from ..analysis.display import styled

    return styled(table, "Crisp's estimated class priors (Eq. 2, from the trained model's training-set "
                  "scores) against the true priors of the training labels, rarest class first.",
                  best=False)


def sweep_view(curves):
    """Every sweep's points: mean test mAP, mean gain over AN and its 95 % interval, seeds."""
    import pandas as pd

    from ..analysis.display import styled

    frames = []
    for name, (curve, _) in curves.items():
        c = curve.copy()
        c.index = [f"{name} = {x:g}" for x in c.index]
        frames.append(c)
    frame = pd.concat(frames).rename_axis("point")
    return styled(frame, "The sweeps of wrong side information: each point's mean test mAP (%), its mean "
                  "gain over AN paired by seed and that gain's 95 % interval (low, high).",
                  counts=["seeds"], best=False)


def vanishing_view(table):
    from ..analysis.display import styled

    return styled(table, "Where the gain over AN vanishes: the sweep's x at which the mean gain reaches 0 "
                  "on each side of the truth (linear between the two sweep points around it; empty: "
                  "the gain stays above 0 over that side of the sweep).", best=False)


def label_set_frame(table):
    """The label-set table wide: a row per method and threshold source, per α its coverage, its
    smallest class coverage and its mean set size (the columns name the target 1 − α)."""
    import pandas as pd

    rows: Dict[str, Dict[str, float]] = {}
    for (method, alpha, source), r in table.iterrows():
        row = rows.setdefault(f"{method} · {source}", {})
        tag = f"α={alpha:g}, target {1 - alpha:.2f}"
        row[f"coverage ({tag})"] = r["coverage"]
        row[f"worst class ({tag})"] = r["min_class_coverage"]
        row[f"set size (α={alpha:g})"] = r["mean_set_size"]
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("method · thresholds")


def label_set_view(table):
    from ..analysis.display import styled

    frame = label_set_frame(table)
    return styled(frame,
                  "Label sets on the test scenes: thresholds calibrated on a small clean set (class-wise "
                  "conformal), read off the observed validation labels, or read on the test labels (the "
                  "oracle, a ceiling). Coverage: the share of true positives in their image's set; worst "
                  "class: the smallest per-class coverage; set size: labels per image. Means over seeds "
                  "(and calibration draws).",
                  digits={c: 3 for c in frame.columns if not c.startswith("set size")}
                  | {c: 2 for c in frame.columns if c.startswith("set size")},
                  percent=[], best=False)


CHAPTER = Chapter("08_side_information")
