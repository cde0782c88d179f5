"""Notebook 02 — GR Loss and the loss zoo: its runs as data (:func:`design`, :func:`specs`), Tables
1 and 3 and the views.

:data:`DESIGNS` holds the per-profile literals. ``smoke``: AN, ROLE, EM+APL, LL-R and GR (every
kind of state, seconds each) and two ablation rows. ``cpu``: the oracle, AN and a reduced zoo (one
method per family: label smoothing, a learnt label matrix, entropy, pseudo-labelling, loss
rejection, a robust loss) and three ablation rows; ``gpu``: the whole Table 2 baseline set and the
full Table 3 ablation.

Every zoo method with a hyperparameter gets the same tuning budget on the clean validation split
of the selection seed (:func:`mlpl_lab.protocol.tuning.stage`); every row, tuned or not, and every
ablation row then runs on the fresh seeds (as many as the profile has seeds: five on cpu), the
only runs the tables and claims read. :func:`specs` asks for the runs in five families:
``trial`` (the tuning trials), ``main`` (the zoo on the fresh seeds), ``ablation`` (Table 3's rows
with GR's kept setting), ``length`` (the length check: GR, the best other method chosen on
validation, and AN, trained longer) and :data:`ABLATION_LENGTH` (Table 3's rows trained as long,
the length check of the ablation claims). Pending, :data:`BOUND_CHECK`: the zoo's other
schedule-bound rows (EM+APL, LL-R) and AN on the same seeds at 4/3 of the epochs, the control by
which the protocol counts their runs (:mod:`mlpl_lab.protocol.bound_length`, as 03, 07 and 08).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Tuple

import numpy as np

from ..analysis.benchmark import convergence_mark
from ..analysis.claims import Claim, Family, by_seed, claim_id, claims_table, mark_schedule_bound
from ..analysis.gr_diagnostics import fn_rate_by_confidence, unknown_confidences
from ..analysis.tables import ablation_frames, seed_mean
from ..losses.gr import GR_SCHEDULE_DEFAULTS, gr_schedule
from ..methods.gr import ABLATIONS
from ..profiles import Profile
from ..runs.splits_cache import build_splits
from ..runs.ensure import initial_method
from ..engine.train import predict_dataset
from ..protocol import bound_length, tuning
from ..protocol.asked import Asked, Runs, Stored
from ..protocol.common import as_profile, as_spec, splits_for
from ..protocol.design import preset
from .. import catalogue
from ..catalogue import LABEL
from ..protocol.registry import Chapter, Live
from ..protocol.positives import expected_num_pos, expected_positives
from ..protocol.lengths import (LENGTH_FACTOR, length_check_epochs, length_check_note,  # noqa: F401 (the notebook's)
                                length_check_record, length_check_runs, lengthen, lengthen_each)

#: chapter 02's catalogue entries: Table 2's zoo (in the catalogue's order) and Table 3's rows
_ENTRIES = tuple(e for e in catalogue.in_chapter("02") if e.alias_of is None)
ZOO_ALL = tuple(e.label for e in _ENTRIES if e.method not in ABLATIONS)
#: Table 3 rows: display label -> registered ablation name (AN and the full GR come from the
#: main comparison, so they are not trained twice)
ABLATION_LABELS: Dict[str, str] = {e.label: e.method for e in _ENTRIES if e.method in ABLATIONS}
KEY = (LABEL.an, LABEL.gr)
#: the notebook's parameters that change which runs it asks for
PARAMETERS = ("regime",)

#: per design: the zoo rows, Table 3's ablation rows, and the tuning budget (trials per tuned
#: method; the small CI profiles take two, so the path from trials to a choice still runs).
#: ``gpu_shape`` executes the gpu design at a CPU's sizes with the small budget; a profile not
#: named here takes the cpu design.
DESIGNS: Dict[str, Dict[str, Any]] = {
    "smoke": {"zoo": (LABEL.an, LABEL.role, LABEL.em_apl, LABEL.ll_r, LABEL.gr), "ablation_rows": (LABEL.gr_k, LABEL.gr_l), "budget": 2},
    "cpu": {"zoo": (LABEL.oracle, LABEL.an, LABEL.an_ls, LABEL.role, LABEL.hill, LABEL.em, LABEL.em_apl, LABEL.ll_r, LABEL.gr),
            "ablation_rows": (LABEL.gr_k, LABEL.gr_v, LABEL.gr_l), "budget": 3},
    "gpu": {"zoo": ZOO_ALL, "ablation_rows": tuple(ABLATION_LABELS), "budget": 3},
    "gpu_shape": {"zoo": ZOO_ALL, "ablation_rows": tuple(ABLATION_LABELS), "budget": 2},
}

#: the family of Table 3's rows trained :data:`LENGTH_FACTOR` times longer (:func:`specs`): with GR's
#: own length-check runs, the controls of the ablation claims
ABLATION_LENGTH = "ablation, trained longer"
#: the pending family of the length check of the zoo's schedule-bound rows other than GR (GR's is
#: ``length``): each row and AN on its seeds at 4/3 of the epochs
BOUND_CHECK = bound_length.BOUND_CHECK

#: the chapter's questions (:attr:`GRDesign.families`)
GR_VS_AN, GR_VS_BEST, ABLATION = "GR beats AN", "GR beats the best other method", "GR's components"
#: the keys of its first two claims (:func:`mlpl_lab.analysis.claims.claim_id`): the best other
#: method is chosen on validation, so its key says "best other" and its sentence names it
GR_BEATS_AN, GR_BEATS_BEST = "gr_beats_an", "gr_beats_best_other"


@dataclass(frozen=True)
class GRDesign:
    """Everything chapter 02 asks for under one profile (:data:`DESIGNS` and the profile's seeds
    and epochs)."""

    profile: Profile                 # the run scale (data, model, epochs) the specs are built at
    regime: str
    zoo: Tuple[str, ...]             # Table 2's rows
    ablation_rows: Tuple[str, ...]   # Table 3's rows (keys of ABLATION_LABELS)
    budget: int                      # trials per tuned method
    selection_seed: int              # tuning selects here; never reported
    fresh_seeds: Tuple[int, ...]     # every reported run
    length_epochs: int               # the length check's epochs

    @property
    def families(self) -> Dict[str, Family]:
        """The chapter's questions, declared before any run is read: GR against AN, GR against
        the best other zoo method, and Table 3's ablation (one claim per ablated row). The length
        checks are controls of the first two (:class:`mlpl_lab.analysis.claims.Family`)."""
        return {GR_VS_AN: Family(GR_VS_AN, 1, "does GR beat assume-negative?"),
                GR_VS_BEST: Family(GR_VS_BEST, 1, "does GR beat the best other method of the zoo?"),
                ABLATION: Family(ABLATION, len(self.ablation_rows),
                                 "does each of GR's components help (Table 3)?")}

    @property
    def family_members(self) -> Dict[str, Tuple[str, ...]]:
        """``{family: claim ids}``: the claims each family of :attr:`families` asks, from the design
        alone (what the course pack's index records: :func:`mlpl_lab.protocol.plan.designed_families`)."""
        return {GR_VS_AN: (GR_BEATS_AN,), GR_VS_BEST: (GR_BEATS_BEST,),
                ABLATION: tuple(claim_id("gr_beats_ablation", catalogue.by_label(label).key)
                                for label in self.ablation_rows)}


def design(profile, regime: str = "single_positive") -> GRDesign:
    """The chapter's design under ``profile`` (see :data:`DESIGNS`)."""
    P = as_profile(profile)
    lits = preset(DESIGNS, P)
    return GRDesign(P, regime, tuple(lits["zoo"]), tuple(lits["ablation_rows"]), int(lits["budget"]),
                    tuning.selection_seed(P), tuple(tuning.fresh_seeds(P)), length_check_epochs(P))


def methods(profile, splits_or_labels) -> Dict[str, Any]:
    """{label: method spec} of the main comparison under ``profile``, EPR's and ROLE's k from the
    validation labels of ``splits_or_labels`` (the splits, or the labels): :func:`zoo_methods`."""
    return zoo_methods(profile, round(expected_positives(splits_or_labels), 4))


def zoo_methods(profile, k: float) -> Dict[str, Any]:
    """``{label: method spec}`` of the main comparison under ``profile`` (the catalogue's entries),
    EPR's and ROLE's expected positives per image ``k``
    (:func:`mlpl_lab.protocol.positives.expected_num_pos`)."""
    zoo = {e.label: e.method for e in _ENTRIES if e.label in ZOO_ALL}
    for label in (LABEL.epr, LABEL.role):
        zoo[label] = (zoo[label], {"expected_num_pos": k})
    return {label: zoo[label] for label in design(profile).zoo}


def left_out(profile):
    """The Table 2 rows ``profile``'s design does not train."""
    zoo = design(profile).zoo
    return [m for m in ZOO_ALL if m not in zoo]


def left_out_text(profile, trained_in_07) -> str:
    """Which Table 2 rows this chapter leaves out under ``profile`` (:func:`left_out`), and which of
    them chapter 07's benchmark trains under the same profile (``trained_in_07``: its design's rows,
    :func:`mlpl_lab.chapters.benchmark.trained_rows`) -- the line printed under the zoo."""
    P = as_profile(profile)
    out = left_out(P)
    if not out:
        return f"This chapter trains every Table 2 row under the {P.name} profile."
    there = [m for m in out if m in set(trained_in_07)]
    text = f"Table 2 rows this chapter leaves out under the {P.name} profile: {', '.join(out)}"
    if there:
        which = "them" if there == out else ", ".join(there)
        text += f"; chapter 07's benchmark trains {which} under the same profile, on the same protocol, and reports them there"
    return text + "."


def seeds_text(profile) -> str:
    """The header's seeds: the fresh seeds every table and claim of this chapter uses, and the
    selection seed its tuning reads (from :func:`design`)."""
    d = design(profile)
    return tuning.seeds_text(d.fresh_seeds, d.selection_seed)


def sign_changes(curve: Mapping[str, np.ndarray]) -> list:
    """The confidences p at which a gradient curve (``{"logit", "grad"}``) changes sign, by linear
    interpolation between the grid points that bracket each change."""
    p = 1.0 / (1.0 + np.exp(-np.asarray(curve["logit"], dtype=float)))
    g = np.asarray(curve["grad"], dtype=float)
    out = []
    for i in np.nonzero(np.diff(np.sign(g)) != 0)[0]:
        out.append(float(p[i] - g[i] * (p[i + 1] - p[i]) / (g[i + 1] - g[i])))
    return out


def fig1b_markdown(w0: float | None = None, b0: float | None = None, w_T: float = 10.0, b_T: float = -8.0,
                   q2: float = 0.01, q3: float = 1.0) -> str:
    """What Fig. 1b shows for GR at the two ends of its schedule, read from its curves: below
    which p the gradient on an unknown label is negative (pushes p up) at β(0), and above which
    at β(T)."""
    from ..viz.gr_plots import unknown_gradient_curves

    # β(0) is GR's schedule default unless given (Fig. 1b's end values are the figure's own)
    w0 = GR_SCHEDULE_DEFAULTS["w0"] if w0 is None else w0
    b0 = GR_SCHEDULE_DEFAULTS["b0"] if b0 is None else b0
    curves = list(unknown_gradient_curves(w0=w0, b0=b0, w_T=w_T, b_T=b_T, q2=q2, q3=q3).values())
    start, end = sign_changes(curves[0]), sign_changes(curves[1])
    if len(start) != 1 or len(end) != 1:
        raise ValueError(f"expected one sign change per GR curve, got {start} and {end}")
    g0, gT = curves[0]["grad"], curves[1]["grad"]
    if not (g0[0] < 0 < g0[-1] and gT[0] > 0 > gT[-1]):
        raise ValueError("the GR curves of Fig. 1b no longer have the shape this text describes")
    return (f"**Read from the curves:** at the start of the schedule, β(0) = ({w0:g}, {b0:g}), GR's gradient on "
            f"an unknown label is negative only below p ≈ {start[0]:.2f}: those unknown labels are nudged up a "
            f"little, and above it they are pushed down, gently (MAE-like $\\mathcal{{L}}_3$). At the end, "
            f"β(T) = ({w_T:g}, {b_T:g}), it is negative above p ≈ {end[0]:.2f}: confident unknown labels are "
            "pushed up, learned as positives.")


def separation_markdown(sep: Mapping[str, list]) -> str:
    """The W1 curves of :func:`separation_table` in words: each method's distance before training
    and after the last epoch, and where it peaked (means over the seeds)."""
    parts = []
    for label, curve in sep.items():
        c = np.asarray(curve, dtype=float)
        peak = int(np.nanargmax(c))
        parts.append(f"{label} from {c[0]:.3f} before training to {c[-1]:.3f} after the last epoch"
                     + ("" if peak in (0, len(c) - 1) else f" (highest, {c[peak]:.3f}, after epoch {peak})"))
    return ("**Measured here** (W1, mean over the seeds): " + "; ".join(parts) + "."
            if parts else "No run recorded the separation probe.")


def _stage(d: GRDesign, stored: Stored) -> tuning.Stage:
    """The tuning stage of the zoo: every method with a grid tuned on the selection seed."""
    P = d.profile
    k = expected_num_pos(P, d.selection_seed)  # the labels alone: no scene is rendered
    zoo = {label: as_spec(m) for label, m in zoo_methods(P, k).items() if label in d.zoo}

    def make(label, point, seed):
        name, hp = zoo[label]
        return P.spec(name, dict(hp, **(point or {})), d.regime, {}, seed=seed)

    points = {label: tuning.trial_points(label, d.budget) for label in d.zoo if label in tuning.GRIDS}
    untuned = [label for label in d.zoo if label not in tuning.GRIDS]
    return tuning.stage(make, points, untuned, d.selection_seed, d.fresh_seeds, stored)


def gr_row(d: GRDesign, stored: Stored) -> list:
    """GR's row of the main comparison: its specs on the fresh seeds under the setting the tuning
    kept, decided from what ``stored`` holds (the same stage :func:`specs` reads); the paper
    default, :func:`specs`' own stand-in, while a tuning trial is missing."""
    st = _stage(d, stored)
    return list(st.fresh.get(LABEL.gr) or st.later[LABEL.gr])


def ablation_specs(d: GRDesign, gr_setting: Mapping[str, Any]) -> Dict[str, list]:
    """Table 3's rows on the fresh seeds, each with GR's kept setting (its schedule, and its q2
    where the row keeps the robust losses), so a row differs from the full GR run only in the
    components it turns off."""
    out = {}
    for label in d.ablation_rows:
        name = ABLATION_LABELS[label]
        robust = ABLATIONS[name][2]  # a row with the robust losses off has q = 0.01 (Table 3's "off")
        hp = {k: v for k, v in gr_setting.items() if robust or k not in ("q1", "q2", "q3")}
        out[label] = [d.profile.spec(name, dict(hp), d.regime, {}, seed=s) for s in d.fresh_seeds]
    return out


def _others(labels) -> list:
    return [k for k in labels if k not in (LABEL.gr, LABEL.an, LABEL.oracle)]


def best_other(results) -> str | None:
    """The strongest zoo method besides GR and AN (the oracle excluded), chosen on the clean
    validation set — mean best-val mAP over its fresh seeds — never on test."""
    others = _others(results)
    if not others:
        return None
    return max(others, key=lambda k: seed_mean(results[k], "val_mAP"))


def length_family(main: Mapping[str, list], best: str | None, epochs: int) -> Dict[str, list]:
    """``{label: [RunSpec per seed]}``: the main comparison's specs (``main``) of GR, the best
    other method ``best`` (None: none) and AN, each with only its epochs changed to ``epochs`` (so
    the tuned setting, the regime, the seeds and the data are those runs' own). The one rule of
    chapter 02's length check: :func:`specs` asks for these runs."""
    labels = [LABEL.gr] + [k for k in (best, LABEL.an) if k is not None]
    return lengthen_each({label: main[label] for label in labels}, epochs)


def length_check_specs(profile, results) -> Dict[str, list]:
    """:func:`length_family` of the main comparison's runs ``results`` (``{label: [run]}``), the
    best other method read from them (:func:`best_other`), at :func:`length_check_epochs`."""
    main = {label: [r.spec for r in runs] for label, runs in results.items()}
    return length_family(main, best_other(results), length_check_epochs(profile))


def specs(d: GRDesign, stored: Stored) -> Asked:
    """The runs of notebook 02, decided from what is stored (pure; :mod:`mlpl_lab.protocol.asked`).

    ``trial``: the tuning trials (always now). ``main``: the zoo on the fresh seeds, each tuned
    method once its trials are stored (else ``later``, paper default as stand-in). ``ablation``:
    once GR's setting is chosen (else ``later`` with the paper default). ``length``: GR, the best
    other method (mean clean-validation mAP of its stored fresh runs) and AN at
    ``d.length_epochs``, once GR is chosen and every other method's fresh runs are stored (else
    ``later`` with the zoo's first other method as stand-in). :data:`ABLATION_LENGTH`: Table 3's
    rows at ``d.length_epochs`` (:func:`lengthen_each`), when ``ablation`` is."""
    st = _stage(d, stored)
    main_now = {label: st.fresh[label] for label in d.zoo if label in st.fresh}
    main_later = {label: st.later[label] for label in d.zoo if label in st.later}
    now: Dict[str, Dict[str, list]] = {"trial": dict(st.trials), "main": main_now}
    later: Dict[str, Dict[str, list]] = {"main": main_later} if main_later else {}

    if LABEL.gr in st.chosen:
        now["ablation"] = ablation_specs(d, st.kept(LABEL.gr))
        now[ABLATION_LENGTH] = lengthen_each(now["ablation"], d.length_epochs)
    else:
        later["ablation"] = ablation_specs(d, {})
        later[ABLATION_LENGTH] = lengthen_each(later["ablation"], d.length_epochs)

    main = {label: main_now.get(label) or main_later[label] for label in d.zoo}
    others = _others(d.zoo)
    runs = {label: [stored(s) for s in main_now[label]] for label in others if label in main_now}
    if LABEL.gr in st.chosen and len(runs) == len(others) and all(
            r is not None for rs in runs.values() for r in rs):
        best, family = best_other(runs), now
    else:  # the stand-in: the zoo's first other method
        best, family = (others[0] if others else None), later
    family["length"] = length_family(main, best, d.length_epochs)
    check = bound_check_family(main_now, stored)
    return Asked(now, later, pending={BOUND_CHECK: check} if check else {})


def bound_check_family(main_now: Mapping[str, list], stored: Stored) -> Dict[str, list]:
    """:data:`BOUND_CHECK`: :func:`mlpl_lab.protocol.bound_length.check_family` of the zoo's rows
    decided now (tuned, or untuned) but GR (checked in ``length``) and AN, where a schedule-bound row
    did not converge or its pilot gained; empty until AN's runs are decided."""
    if LABEL.an not in main_now:
        return {}
    rows = {label: main_now[label] for label in _others(main_now)}
    return bound_length.check_family(rows, main_now[LABEL.an], stored)


@dataclass(frozen=True)
class GRRuns:
    """The chapter's runs, ensured (:func:`results`): what the notebook's tables and claims read."""

    design: GRDesign
    splits: Any                      # the splits of the first fresh seed (the diagnostics' data)
    main: Dict[str, list]            # {label: [run per fresh seed]} in the zoo's order
    tuning: Dict[str, Any]           # :meth:`mlpl_lab.protocol.tuning.Stage.record`
    ablation: Dict[str, list]        # Table 3's rows
    length: Dict[str, list]          # the length check
    ablation_length: Dict[str, list]  # Table 3's rows, trained as long as the length check
    bound_check: Dict[str, list] = field(default_factory=dict)  # the other schedule-bound rows and AN, trained 4/3 as long (stored ones)

    @property
    def compared(self) -> Dict[str, list]:
        """``{label: runs}`` at the profile's length: the zoo's rows, then Table 3's."""
        return {**self.main, **self.ablation}

    @property
    def longer(self) -> Dict[str, list]:
        """``{label: runs}`` at the length check's: GR, the best other method and AN, then
        Table 3's rows (what :func:`claims`, :func:`length_check_view` and the convergence record read)."""
        return {**self.length, **self.ablation_length}


def results(d: GRDesign, runs: Runs) -> GRRuns:
    """:class:`GRRuns` from :func:`~mlpl_lab.protocol.asked.ensure_asked`'s runs (the tuning
    record re-decided from the trial runs themselves)."""
    trial = {r.spec.key: r for rs in runs.get("trial", {}).values() for r in rs}
    st = _stage(d, lambda spec: trial.get(spec.key))
    return GRRuns(d, splits_for(d.profile, d.regime, {}, d.fresh_seeds[0]),
                  {label: runs["main"][label] for label in d.zoo}, st.record(),
                  {label: runs["ablation"][label] for label in d.ablation_rows}, dict(runs["length"]),
                  dict(runs[ABLATION_LENGTH]), dict(runs.get(BOUND_CHECK) or {}))


def _regime_text(d: GRDesign) -> str:
    return d.regime.replace("_", " ")


def bound_length_view(d: GRDesign, runs: GRRuns, store=None):
    """The length check of the zoo's other schedule-bound rows (each and AN at both lengths,
    :func:`mlpl_lab.protocol.bound_length.chapter_view`), with how many of its runs wait."""
    from ..protocol.asked import pending_missing, store_lookup

    stored = store_lookup(store)
    waiting = pending_missing(specs(d, stored), stored).get(BOUND_CHECK, {})
    return bound_length.chapter_view(runs.main, runs.bound_check, _regime_text(d), waiting)


def bound_length_record(d: GRDesign, runs: GRRuns) -> Dict[str, Any]:
    """That check per seed at both lengths (:func:`mlpl_lab.protocol.bound_length.chapter_record`)."""
    return bound_length.chapter_record(runs.main, runs.bound_check, _regime_text(d))


def length_check_agreement(d: GRDesign, runs: GRRuns, claims) -> Dict[str, bool]:
    """``{run key: bool}`` for the protocol's share: the claims' notes on GR's runs (GR's length
    check, :func:`mlpl_lab.analysis.tables.length_check_agreement`) and, for the other
    schedule-bound rows, whether "<row> beats AN" reads the same at both lengths
    (:func:`mlpl_lab.protocol.bound_length.chapter_agreement`)."""
    return bound_length.claims_agreement(runs.main, runs.bound_check, _regime_text(d), claims)


def live_seeds(profile) -> Tuple[int, ...]:
    """The seeds the chapter reports GR on: the fresh seeds (seed 0 only selects the settings)."""
    return tuple(tuning.fresh_seeds(as_profile(profile)))


def live_spec(profile, seed: int, store=None):
    """GR's run of the main comparison on ``seed`` under the setting the tuning kept, read from
    ``store``'s trial runs (the default store when None; the paper default while a trial is missing)."""
    from ..protocol.asked import store_lookup

    row = gr_row(design(profile), store_lookup(store))
    found = [s for s in row if s.seed == seed]
    if not found:
        raise ValueError(f"chapter 02 shows GR on seeds {[s.seed for s in row]}, not {seed}")
    return found[0]


def checked_best(length_check: Mapping[str, list] | None, ablation: Mapping[str, list]) -> str | None:
    """The best other zoo method the length check holds (None: no length check, or none in it):
    the one :func:`specs` chose on clean validation with every zoo row at the design's epochs.
    :func:`claims` names this one, not :func:`best_other` of the rows it reads, because a row the
    protocol reads longer (its pilot gained: :func:`mlpl_lab.protocol.pilots.settle`) would win
    the choice by its extra epochs, and its claim would then have no length check of its own."""
    others = [k for k in (length_check or {}) if k not in (LABEL.gr, LABEL.an) and k not in ablation]
    return others[0] if others else None


def claims(results, ablation, length_check: Mapping[str, list] | None = None, *, design: GRDesign):
    """The chapter's claims table (verdicts from the runs on the fresh seeds, seed noise included),
    in the families ``design`` declares (:attr:`GRDesign.families`). ``length_check``
    (:attr:`GRRuns.longer`) adds GR against AN, against the best other method and against each of
    Table 3's rows it holds, each pair trained :data:`LENGTH_FACTOR` times longer: controls of the
    claims they repeat, each in the family of the claim it checks and counted in its m. The best
    other method is the length check's (:func:`checked_best`), else :func:`best_other` of ``results``."""
    fam = design.families
    rows = [Claim("GR beats AN (single positive)", "VOC: GR 89.83 ± 0.12 vs AN 85.1 (Table 2; AN from LL)",
                  LABEL.gr, LABEL.an, results[LABEL.gr], results[LABEL.an], family=fam[GR_VS_AN], id=GR_BEATS_AN)]
    checked = {LABEL.an: GR_BEATS_AN}  # {the other side: the key of GR's claim against it}
    best = checked_best(length_check, ablation) or best_other(results)
    if best is not None:  # the winner chosen on validation is named by the sentence, never the key
        checked[best] = GR_BEATS_BEST
        rows.append(Claim(f"GR beats the best other zoo method ({best})", "GR is the best of Table 2 on all four datasets",
                          LABEL.gr, best, results[LABEL.gr], results[best], family=fam[GR_VS_BEST], id=GR_BEATS_BEST))
    for label, runs in ablation.items():
        checked[label] = claim_id("gr_beats_ablation", catalogue.by_label(label).key)
        rows.append(Claim(f"GR (all on) beats the ablation row {label!r}", "Table 3: the three components together are best",
                          LABEL.gr, label, results[LABEL.gr], runs, family=fam[ABLATION], id=checked[label]))
    checks = {}
    if length_check:
        epochs = length_check[LABEL.gr][0].spec.train["epochs"]
        for other in [k for k in length_check if k != LABEL.gr]:
            row, paper = (f"the ablation row {other!r}", "Table 3's") if other in ablation else (other, "Table 2's")
            of = checked.get(other)
            checks[other] = (claim_id("length_check", *of.split("/")) if of else
                             claim_id("length_check", "gr_beats", catalogue.by_label(other).key))
            rows.append(Claim(f"GR beats {row} with both trained {epochs} epochs (length check)",
                              f"{paper} comparison, at a longer schedule", f"GR ({epochs} ep.)",
                              f"{other} ({epochs} ep.)", length_check[LABEL.gr], length_check[other],
                              control_of=of, id=checks[other]))
    table = claims_table(rows)
    notes = schedule_notes(table, rows, checks) if convergence_mark(results[LABEL.gr]) == "schedule-bound" else {}
    # the length check's own rows: GR's runs there are schedule-bound too (§, as its table marks
    # them), not unconverged for another reason (†), when the other side's runs all converged
    if length_check and convergence_mark(length_check[LABEL.gr]) == "schedule-bound":
        for other, claim in checks.items():
            if convergence_mark(length_check[other]) is False:  # False: no † on that side
                notes[claim] = "schedule-bound at the longer schedule too: this row is the length check"
    return mark_schedule_bound(table, notes) if notes else table


def schedule_notes(table, rows, checks: Mapping[str, str]) -> Dict[str, str]:
    """For each claim on GR's unconverged, schedule-bound runs (not the length check's own): whether
    the length check agrees — the same verdict for GR against the same method trained
    :data:`LENGTH_FACTOR` times longer — computed from the two claims' verdicts."""
    notes = {}
    for claim in rows:
        if claim.key in checks.values() or LABEL.gr not in (claim.a_label, claim.b_label):
            continue
        other = claim.b_label if claim.a_label == LABEL.gr else claim.a_label
        check = checks.get(other)
        if check is None:
            notes[claim.key] = "schedule-bound; the length check does not cover this row"
            continue
        notes[claim.key] = length_check_note(table, claim.key, check)
    return notes


def tuning_view(record: Mapping[str, Any]):
    """The tuning record as the notebook shows it: each method's trials on the selection seed,
    their clean-validation mAP, and the setting kept."""
    from ..analysis.display import MAX_ROWS, styled

    budgets = sorted(set(tuning.budgets(record).values()))
    frame = tuning.tuning_frame(record)
    marks = "✓ marks the best clean-validation mAP"
    if len(frame) > MAX_ROWS:  # one row per method: its kept setting, the other trials in one cell
        frame = tuning.tuning_summary(record)
        marks = "the kept setting is the best clean-validation mAP (val mAP, %)"
    return styled(frame,
                  f"Equal-budget tuning: every zoo method with a hyperparameter ran {' / '.join(map(str, budgets))} "
                  f"trial(s) on the selection seed; {marks} (ties: the paper "
                  "default). The tables and claims report the kept setting on fresh seeds only "
                  "(every trial is in the record `tuning`). 'Kept on observed labels': the trial a "
                  "practitioner without clean labels would keep, by the best observed-validation mAP "
                  "(the regime's labels on the validation split, unknown counted as negative; — where "
                  "the trials did not record it).",
                  percent=["its val mAP", "observed val mAP"], best=False)


def table1():
    """Table 1 of GR Loss as a DataFrame of LaTeX strings (rows k̂, v, L1, L2, L3)."""
    import pandas as pd

    rows = {
        r"$\hat k(p)$": [r"$0$", r"$1$ ($0$ if pseudo-neg.)", r"$0$",
                         r"$\mathbb{1}[p>\tau]$", r"$\sigma(wp+b)$"],
        r"$v(p)$, $s=0$": [r"$\mathbb{1}[p\le\tau_1]$", r"$\alpha$ ($\beta$ if pseudo-neg.)",
                           r"$1$", r"$1$", r"$e^{-(p-\mu)^2/2\sigma^2}$"],
        r"$\mathcal{L}_1$": [r"$-\log p$", r"$-\log p$", r"$-\log p$",
                             r"$-(1-p_m)^\gamma\log p_m$", r"$(1-p^{q_1})/q_1$"],
        r"$\mathcal{L}_2$": [r"$-\log p$", r"$p\log p+(1-p)\log(1-p)$", "undefined",
                             r"$-(1-p_m)^\gamma\log p_m$", r"$(1-p^{q_2})/q_2$"],
        r"$\mathcal{L}_3$": [r"$-\log(1-p)$", r"$-\hat p\log p-(1-\hat p)\log(1-p)$",
                             r"$(\lambda-p)p^2$", r"$(\lambda-p)p^2$",
                             r"$(1-(1-p)^{q_3})/q_3$"],
        "registered loss": ["gr_as_en", "gr_as_em", "gr_as_hill", "gr_as_splc", "gr"],
    }
    return pd.DataFrame(rows, index=[LABEL.en, "EM (+APL)", LABEL.hill, LABEL.splc, "GR Loss"]).T


ABLATION_COMPONENTS = ("k̂(p;β)", "v(p;α)", "L1,L2,L3")


def ablation_rows(ablation_results: Mapping[str, list], main_results: Mapping[str, list]):
    """``(marks, runs)`` of Table 3 for :func:`mlpl_lab.analysis.tables.ablation_frames`: the AN
    row (all off, the caption's baseline) and the full GR row from the main comparison, the
    ablation rows between them; marks are ✓/✗ per component."""
    entries = [(LABEL.an_all_off, main_results.get(LABEL.an), "gr_none")]
    entries += [(label, runs, ABLATION_LABELS.get(label, label)) for label, runs in ablation_results.items()]
    entries += [(LABEL.gr_all_on, main_results.get(LABEL.gr), "gr_all")]
    marks, runs = {}, {}
    for row, rs, name in entries:
        if rs is None:
            continue
        marks[row] = dict(zip(ABLATION_COMPONENTS, ABLATIONS.get(name, (False, False, False))))
        runs[row] = rs
    return marks, runs


def ablation_table(ablation_results: Mapping[str, list], main_results: Mapping[str, list]):
    """Table 3 as a DataFrame: ✓/✗ per component and test mAP (at the best val epoch, mean
    over seeds), with the AN row (all off, the caption's baseline) and the full GR row taken
    from the main comparison."""
    table = ablation_frames(*ablation_rows(ablation_results, main_results))[0]
    table.index.name = "row"
    return table


def separation_table(results: Mapping[str, list], labels=None) -> Dict[str, list]:
    """``{label: [W1 before training, after epoch 1, ...]}`` (mean over seeds) from the
    ``separation`` probe every run records."""
    out = {}
    for label, runs in results.items():
        if labels is not None and label not in labels:
            continue
        curves = [[r.initial.get("separation", np.nan)] + [row.get("train_separation", np.nan)
                                                            for row in r.history] for r in runs]
        if all(np.isnan(c).all() for c in curves):
            continue
        out[label] = np.nanmean(np.array(curves, dtype=float), axis=0).tolist()
    return out


def assumption_check(run, bins: int = 20):
    """FN rate per confidence bucket among the unknown train labels (Fig. 5), before training
    (the run's own initialisation) and after (its best-val weights)."""
    tr = build_splits(run.spec).train
    start = predict_dataset(initial_method(run.spec), tr, _cpu())
    end = predict_dataset(run.method, tr, _cpu())
    return {"start": fn_rate_by_confidence(start, tr.observed, tr.labels, bins),
            "end": fn_rate_by_confidence(end, tr.observed, tr.labels, bins)}


def _cpu():
    import torch

    return torch.device("cpu")


def unknown_confidences_of(results: Mapping[str, list], labels) -> Dict[str, tuple]:
    """``{label: (hidden, negatives)}``: confidences of the unknown train labels under each
    run's best-val weights (first seed), split by the truth (Fig. 3b/c)."""
    out = {}
    for label in labels:
        run = results[label][0]
        tr = build_splits(run.spec).train
        out[label] = unknown_confidences(predict_dataset(run.method, tr, _cpu()), tr.observed, tr.labels)
    return out


def schedule_table(epochs: int):
    """(w, b, μ, σ) each training epoch uses, under the paper's schedule and the code's."""
    import pandas as pd

    rows = []
    for e in range(epochs):
        for sched in ("paper", "code"):
            v = gr_schedule(e, epochs, schedule=sched)
            rows.append({"epoch": e + 1, "schedule": sched, **{k: round(x, 4) for k, x in v.items()}})
    return pd.DataFrame(rows).set_index(["epoch", "schedule"]).unstack("schedule")


def schedule_record(table) -> Dict[str, Dict[str, float]]:
    """:func:`schedule_table` as a record: ``{epoch: {"w (paper)": ..., "w (code)": ...}}``."""
    return {str(e): {f"{p} ({s})": float(v) for (p, s), v in row.items()} for e, row in table.iterrows()}


# --- what the notebook shows (the one table style, mlpl_lab.analysis.display) ------------------

def table1_view():
    """:func:`table1` with its caption."""
    from ..analysis.display import styled

    return styled(table1(), "GR Loss, Table 1: each loss of the zoo as a choice of the label estimate k̂(p), "
                  "the weight v(p) and the three terms L1 (observed positive), L2, L3 (unknown label), "
                  "and the lab's registered loss of each row.", best=False)


def schedule_view(epochs: int):
    """:func:`schedule_table` as the notebook shows it."""
    from ..analysis.display import compact_rows

    return compact_rows(schedule_table(epochs), "The (w, b, μ, σ) each training epoch uses under the paper's "
                        "schedule and the official code's (the figure above draws every epoch)",
                        record="gr_schedule", counts=[], best=False)


def length_check_view(results, length_check: Mapping[str, list]):
    """The length check as the notebook shows it: :func:`mlpl_lab.analysis.tables.results_view`
    of :func:`length_check_runs` (mean ± 95 % interval over seeds, † where a run did not converge,
    best-val epochs, converged runs)."""
    from ..analysis.tables import results_view

    return results_view(length_check_runs(results, length_check),
                        "The length check: the same methods, settings and seeds at the profile's epochs "
                        "and at the longer schedule; test mAP, CF1 and OF1 (%) at each run's best "
                        "clean-validation epoch")


def ablation_view(ablation_results: Mapping[str, list], main_results: Mapping[str, list]):
    """:func:`ablation_table` as the notebook shows it: ✓ / ✗ per component, test mAP as mean ±
    95 % interval (seeds) with † where a run did not converge, the best in bold."""
    from ..analysis.display import caption, styled

    t, half, n, unconv = ablation_frames(*ablation_rows(ablation_results, main_results))
    t.index.name = "row"
    return styled(t, caption("GR Loss, Table 3 at this scale: which components are on (k̂, v and the robust "
                             "terms L) and test mAP (%) at the best clean-validation epoch; AN (all off) and "
                             "GR (all on) are the main comparison's runs"),
                  half=half, seeds=n, unconverged=unconv)


#: the papers' numbers behind GR's share of the gap, per dataset: AN and GR from GR Loss's Table 2
#: (single positive), full labels from OPML's Table V (BCE with every label; GR Loss reports no
#: full-label row, so the ratio crosses two papers on the same protocol, Cole et al.'s)
PAPER_GAP: Dict[str, Tuple[float, float, float]] = {
    "VOC": (85.89, 89.83, 89.42), "COCO": (64.92, 73.17, 76.78),
    "NUS": (42.49, 49.08, 52.08), "CUB": (18.66, 21.64, 30.90)}


def gap_share(results, length_check: Mapping[str, list] | None = None, full: str = LABEL.oracle,
              level: float = 0.95) -> Dict[str, Dict[str, Any]]:
    """GR's share of the AN → full-label gap, (GR − AN) / (full − AN) as a ratio of paired means
    over the seeds the three share, with its t-based Fieller interval
    (:func:`mlpl_lab.analysis.fieller.fieller`): at the profile's length and, with the length
    check, with GR and AN at the longer schedule (the oracle at the profile's: it is not
    schedule-bound). ``{row: {"estimate", "lo", "hi", "n", "seeds", "reason"}}``; {} without a
    full-label row."""
    from ..analysis.fieller import fieller

    if full not in results or LABEL.gr not in results or LABEL.an not in results:
        return {}
    o = by_seed(results[full])
    sides = {f"{results[LABEL.gr][0].spec.train['epochs']} epochs (the profile's)": (results[LABEL.gr], results[LABEL.an])}
    if length_check and LABEL.gr in length_check and LABEL.an in length_check:
        sides[f"{length_check[LABEL.gr][0].spec.train['epochs']} epochs (the length check; full labels at the "
              "profile's)"] = (length_check[LABEL.gr], length_check[LABEL.an])
    out = {}
    for row, (gr_runs, an_runs) in sides.items():
        g, a = by_seed(gr_runs), by_seed(an_runs)
        seeds = sorted(set(g) & set(a) & set(o))
        f = fieller([g[s] - a[s] for s in seeds], [o[s] - a[s] for s in seeds], level)
        out[row] = dict(f, seeds=seeds)
    return out


def gap_share_view(shares: Mapping[str, Mapping[str, Any]]):
    """:func:`gap_share` beside the papers' ratios per dataset (:data:`PAPER_GAP`), as the
    notebook shows it: share in %, its 95 % Fieller interval and the seeds (ours); the papers'
    AN, GR and full-label mAP and the ratio their numbers give (no interval: the papers give
    means only)."""
    import pandas as pd

    from ..analysis.display import styled
    from ..core.bibliography import cite

    def pct(x):
        return "—" if not np.isfinite(x) else f"{100 * x:.0f} %"

    rows = {}
    for row, f in shares.items():
        interval = (f"[{pct(f['lo'])}, {pct(f['hi'])}]" if np.isfinite(f["lo"]) else f["reason"] or "—")
        rows[f"this lab, {row}"] = {"share of the gap": pct(f["estimate"]), "95 % Fieller interval": interval,
                                    "seeds": ", ".join(map(str, f["seeds"])) or "none"}
    for data, (an, gr, fl) in PAPER_GAP.items():
        rows[f"papers, {data}"] = {"share of the gap": pct((gr - an) / (fl - an)),
                                   "95 % Fieller interval": f"— (AN {an}, GR {gr}, full labels {fl})",
                                   "seeds": "—"}
    frame = pd.DataFrame.from_dict(rows, orient="index")
    ratios = [(gr - an) / (fl - an) for an, gr, fl in PAPER_GAP.values()]
    return styled(frame, "GR's share of the AN → full-label gap, (GR − AN) / (full − AN), a ratio of the paired "
                  "means over the seeds the three share, with its t-based 95 % Fieller interval; beside it the "
                  f"ratio the papers' numbers give on each dataset ({pct(min(ratios))} to {pct(max(ratios))}): "
                  f"AN and GR from {cite('gr')}, Table 2, full labels from {cite('opml')}, Table V (GR's paper "
                  "has no full-label row), so each paper ratio crosses two papers on one protocol.", best=False)


#: the chapter, as :mod:`mlpl_lab.protocol.registry` finds it; the live run's sizes per profile
#: (cpu: measured by benchmarks/bench_live.py to train in at most 3 minutes on 2 cores)
LIVE_SIZES = {
    "smoke": {"n_train": 128, "epochs": 1},
    "cpu": {"n_train": 2000, "epochs": 12},
    "gpu": {"n_train": 5000, "epochs": 4},
    "gpu_shape": {"n_train": 256, "epochs": 1},
}
CHAPTER = Chapter("02_gr_loss", live=Live("GR Loss", LIVE_SIZES, live_seeds, live_spec))
