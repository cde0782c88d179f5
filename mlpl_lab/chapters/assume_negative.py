"""Notebook 01 — assume negative: the full-label oracle vs AN, and the protocol every chapter uses.

The chapter as data: :func:`design` holds its per-profile literals (:data:`DESIGNS`),
:func:`specs` the runs they ask for, and the views below read the ensured runs.

* **The main comparison**: the oracle and AN under three regimes (:data:`REGIMES`), every run
  from the lab's pretrained backbone (``Profile.init="pretrained"``) and trained until its
  validation curve flattens (:mod:`mlpl_lab.core.convergence`). Single positive (the key
  comparison) on the design's ``key_seeds``, the other regimes on its ``other_seeds`` (one oracle
  run per seed serves every regime, see ``Profile.spec``).
* **The pretraining data, chosen by measurement** (:data:`PRETRAIN_CANDIDATES`): each candidate
  is pretrained once and AN and the oracle are fine-tuned from it on ``candidate_seeds``.
  :func:`choose_pretraining` states the rule — it never looks at a partial-label method.
* **Scratch vs pretrained** (``init="scratch"``, the same epochs and schedule) for AN and the
  oracle on ``scratch_seed``: learning curves, and what a comparison read before the curves
  flattened (``EARLY_EPOCH``, the lab's former protocol: 6 epochs) would have concluded.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from ..analysis.claims import Claim, Family, by_seed, claim_id, claims_table, paired
from ..protocol.regimes import regime_slug
from ..analysis.hidden_positives import hidden_positive_confidences, summarise_confidences
from ..analysis.tables import regimes_table, seed_mean
from ..core.regime_table import regime_table
from ..profiles import Profile, get_profile
from ..protocol.asked import Asked, Runs, Stored
from ..protocol.common import as_profile, specs_for, splits_for
from ..protocol.design import preset
from .. import catalogue
from ..catalogue import LABEL
from ..protocol.registry import Chapter, Live

REGIMES: Dict[str, tuple] = regime_table("single positive", "drop 50 %", "known 10 %")
#: the rows of every regime: the oracle and AN, each its catalogue entry's method
METHODS = {e.label: e.method for e in (catalogue.entry("oracle"), catalogue.entry("an"))}
#: pretraining candidates: overrides of ``Profile.pretrain`` (both object-centric: one object
#: per image, like ImageNet's photos; they differ in whether the classes are the chapters' own)
PRETRAIN_CANDIDATES: Dict[str, Dict[str, Any]] = {
    "digits (10 classes disjoint from the scenes')": {"glyphs": "digits"},
    "shapes (the scenes' own 20 classes)": {"glyphs": "shapes"},
}
#: the lab's premise: converged, the AN → oracle gap under single positive stays at least this
#: large (COCO's is about 12 mAP: Cole et al. / LL)
MIN_GAP = 5.0
#: the epoch at which the former protocol read its tables (6 epochs from scratch)
EARLY_EPOCH = 6

#: the notebook parameters that change which runs the chapter asks for: none (``seed`` picks the
#: runs the confidence histograms read, among those asked for anyway)
PARAMETERS: Tuple[str, ...] = ()


#: the chapter's question (its claims' family)
ORACLE_FAMILY = "full labels beat AN"


@dataclass(frozen=True)
class AssumeNegativeDesign:
    """Every per-profile literal of the chapter (seeds are the profile's first ``n``)."""

    profile: Profile
    key_seeds: Tuple[int, ...]        # single positive: the key comparison, oracle vs AN
    other_seeds: Tuple[int, ...]      # drop 50 %, known 10 %: AN runs (the oracle's are shared)
    candidate_seeds: Tuple[int, ...]  # AN and the oracle fine-tuned from each pretraining candidate
    scratch_seed: int                 # scratch vs pretrained: AN and the oracle on this seed

    @property
    def families(self) -> Dict[str, Family]:
        """The chapter's one question, asked once per regime of :data:`REGIMES` (declared here,
        before any run is read: :class:`mlpl_lab.analysis.claims.Family`)."""
        return {ORACLE_FAMILY: Family(ORACLE_FAMILY, len(REGIMES),
                                      "do full labels beat assume-negative, in every regime?")}

    @property
    def family_members(self) -> Dict[str, Tuple[str, ...]]:
        """``{family: claim ids}``: the claims each family of :attr:`families` asks, from the design
        alone (what the course pack's index records: :func:`mlpl_lab.protocol.plan.designed_families`)."""
        return {ORACLE_FAMILY: tuple(claim_id("oracle_beats_an", regime_slug(r)) for r in REGIMES)}


#: how many of the profile's seeds each part takes. Every claim pairs five seeds under cpu and
#: gpu; the other regimes reuse the key comparison's oracle runs, so they add AN runs
#: only. A profile without a row here takes another's by the designs' one rule
#: (:func:`mlpl_lab.protocol.common.preset`: gpu_shape gpu's, a custom profile cpu's, on its own seeds).
DESIGNS: Dict[str, Dict[str, int]] = {
    "smoke": {"key_seeds": 2, "other_seeds": 2, "candidate_seeds": 1},
    "cpu": {"key_seeds": 5, "other_seeds": 5, "candidate_seeds": 3},
    "gpu": {"key_seeds": 5, "other_seeds": 5, "candidate_seeds": 3},
}


def design(profile) -> AssumeNegativeDesign:
    """The chapter's design under ``profile`` (its :data:`DESIGNS` row by the designs' one rule,
    :func:`mlpl_lab.protocol.common.preset`, capped at the profile's own seeds)."""
    P = as_profile(profile)
    n = preset(DESIGNS, P)
    return AssumeNegativeDesign(profile=P, scratch_seed=int(P.seeds[0]),
                                **{part: tuple(P.seeds[:k]) for part, k in n.items()})


def key_seeds(profile) -> List[int]:
    """The seeds of the key comparison (single positive) under ``profile``."""
    return list(design(profile).key_seeds)


def candidate_family(cand: str) -> str:
    """The family of :func:`specs` that holds a pretraining candidate's runs."""
    return f"pretraining candidate: {cand}"


SCRATCH = "from scratch"


def specs(d: AssumeNegativeDesign, stored: Stored) -> Asked:
    """The chapter's runs (no choice waits on a result, so ``later`` is empty):

    * per pretraining candidate (:func:`candidate_family`): its pretraining run (``"pretraining"``)
      and AN / the oracle fine-tuned from it, single positive, on ``candidate_seeds``;
    * per regime of :data:`REGIMES`: AN and the oracle from the profile's backbone;
    * :data:`SCRATCH`: AN and the oracle from random initialisation on ``scratch_seed``."""
    P = d.profile
    now: Dict[str, Dict[str, list]] = {}
    for cand, overrides in PRETRAIN_CANDIDATES.items():
        base = specs_for(P, METHODS, "single_positive", seeds=d.candidate_seeds)
        first = base[LABEL.an][0]
        pre = P.pretrain_spec(first.train["model"], first.train["model_kwargs"], first.data["image_size"],
                              **overrides)
        now[candidate_family(cand)] = {"pretraining": [pre]} | {
            label: [s.replace(backbone_from=pre) for s in ss] for label, ss in base.items()}
    for label, (name, params) in REGIMES.items():
        seeds = d.key_seeds if label == "single positive" else d.other_seeds
        now[label] = specs_for(P, METHODS, name, params, seeds=seeds)
    now[SCRATCH] = specs_for(get_profile(P, init="scratch"), METHODS, "single_positive", seeds=[d.scratch_seed])
    return Asked(now)


def live_seeds(profile) -> Tuple[int, ...]:
    """The seeds the chapter shows AN on under single positive (its key comparison)."""
    return tuple(key_seeds(profile))


def live_spec(profile, seed: int, store=None):
    """The chapter's AN run under single positive on ``seed`` (the live exercise's converged run)."""
    return specs_for(as_profile(profile), {LABEL.an: METHODS[LABEL.an]}, "single_positive", seeds=[seed])[LABEL.an][0]


def results(runs: Runs) -> Dict[str, Dict[str, list]]:
    """The main comparison: ``{regime: {"full labels": runs, "AN": runs}}``."""
    return {label: runs[label] for label in REGIMES}


def table(results) -> "Any":
    t = regimes_table(results)
    t["gap"] = t[LABEL.oracle] - t[LABEL.an]
    return t


# --- the pretraining data, chosen by measurement ------------------------------------------------

def candidates(runs: Runs) -> Dict[str, Dict[str, Any]]:
    """Per candidate: its pretraining run (``"pretraining"``) and AN / the oracle fine-tuned from
    it (single positive, over the candidate seeds)."""
    out = {}
    for cand in PRETRAIN_CANDIDATES:
        fam = runs[candidate_family(cand)]
        out[cand] = {"pretraining": fam["pretraining"][0], LABEL.oracle: fam[LABEL.oracle], LABEL.an: fam[LABEL.an]}
    return out


def _gap(c) -> float:
    """Oracle − AN test mAP of a candidate, each side's mean over its seeds."""
    return seed_mean(c[LABEL.oracle]) - seed_mean(c[LABEL.an])


def candidates_table(cands):
    """One row per candidate: pretraining val mAP, AN and the oracle (mean over seeds), the gap,
    how many of their runs converged, and whether the profile uses it."""
    import pandas as pd

    rows = {}
    for cand, c in cands.items():
        runs = list(c[LABEL.an]) + list(c[LABEL.oracle])
        rows[cand] = {"pretraining val mAP": c["pretraining"].best["val_mAP"],
                      LABEL.an: seed_mean(c[LABEL.an]), LABEL.oracle: seed_mean(c[LABEL.oracle]),
                      "gap": _gap(c), "seeds": len(c[LABEL.an]),
                      "converged": f"{sum(r.converged for r in runs)} of {len(runs)}"}
    return pd.DataFrame(rows).T


def _gaps_by_seed(c) -> Dict[int, float]:
    """``{seed: oracle − AN test mAP}`` of a candidate, on the seeds both sides ran."""
    full, an = by_seed(c[LABEL.oracle]), by_seed(c[LABEL.an])
    return {s: full[s] - an[s] for s in sorted(set(full) & set(an))}


def choose_pretraining(cands, min_gap: float = MIN_GAP) -> Dict[str, Any]:
    """The rule: among the candidates whose AN and oracle runs all converged and whose AN →
    oracle gap is at least ``min_gap`` (the problem the lab studies stays visible), the one with
    the largest gap — unless that gap is not larger than another eligible candidate's beyond seed
    noise (the paired 95 % t-interval of the per-seed gap difference includes 0, or is undefined
    below two seeds). Tied candidates are broken by the order of ``cands`` (``PRETRAIN_CANDIDATES``:
    classes disjoint from the chapters' first, as ImageNet's are from COCO's labels, so the
    backbone is not handed the very classifier the chapters study).

    The tie-break exists because a largest-gap rule alone lets seed noise decide: gaps a fraction
    of a point apart on three seeds are not different. It reads the same two methods as the rule —
    AN and the oracle, never a partial-label method — so no method's result decides the backbone. ``{"chosen", "eligible", "excluded", "tied", "reason"}``."""
    eligible, why = {}, {}
    for cand, c in cands.items():
        runs = list(c[LABEL.an]) + list(c[LABEL.oracle])
        gap = _gap(c)
        if not all(r.converged for r in runs):
            why[cand] = "not every AN / oracle run converged"
        elif not gap >= min_gap:
            why[cand] = f"gap {gap:.1f} < {min_gap}"
        else:
            eligible[cand] = gap
    if not eligible:
        return {"chosen": None, "eligible": [], "excluded": why, "tied": [],
                "reason": "no candidate converged with a gap of at least "
                          f"{min_gap} mAP: the profile needs more epochs or other data"}
    best = max(eligible, key=eligible.get)
    tied = [best]
    for cand in eligible:
        if cand != best:
            d = paired(_gaps_by_seed(cands[best]), _gaps_by_seed(cands[cand]))
            if not d["lo"] > 0:  # NaN (too few seeds, zero spread) counts as a tie too
                tied.append(cand)
    chosen = next(c for c in cands if c in tied)
    if len(tied) == 1:
        reason = f"largest converged gap ({eligible[best]:.1f} mAP) among {len(eligible)} eligible"
    else:
        reason = (f"largest converged gap {eligible[best]:.1f} mAP ({best}) not beyond seed noise of "
                  + ", ".join(f"{eligible[c]:.1f} ({c})" for c in tied if c != best)
                  + ": tie broken by the candidates' order")
    return {"chosen": chosen, "eligible": sorted(eligible), "excluded": why, "tied": tied,
            "reason": reason}


def profile_candidate(profile) -> str | None:
    """The candidate the profile's literal ``pretrain`` uses."""
    P = as_profile(profile)
    for cand, overrides in PRETRAIN_CANDIDATES.items():
        if all(P.pretrain.get(k) == v for k, v in overrides.items()):
            return cand
    return None


def every_run_convergence(results, cands, curves):
    """The convergence record of every run the chapter reads, each once: the main comparison, the
    pretraining candidates' AN and oracle, the two runs from scratch — the union of its three
    ``convergence*`` records, which is what the protocol's share counts for the chapter
    (:func:`mlpl_lab.analysis.tables.share_sentence`)."""
    from ..analysis.tables import convergence_record

    return convergence_record(results, {f"candidate {c}": {k: v for k, v in r.items() if k in (LABEL.an, LABEL.oracle)}
                                        for c, r in cands.items()}, {"from scratch": curves["scratch"]})


def _run_name(label: str, run) -> str:
    """"full labels · seed 0 (run 1a2b3c4d5e, its last quarter added +0.61 mAP)": a run as the
    chapter names it."""
    spec = getattr(run, "spec", None)
    gain = (getattr(run, "convergence", None) or {}).get("gain")
    key = getattr(spec, "key", None)
    return (f"{label} · seed {getattr(spec, 'seed', '?')}"
            + (f" (run {str(key)[:10]}" if key else " (")
            + (f", its last quarter added {float(gain):+.2f} mAP)" if isinstance(gain, (int, float)) else ")"))


def _unconverged(runs_by_label: Mapping[str, Sequence[Any]]) -> Dict[Any, str]:
    """``{run key (or the run): its name}`` of the runs that did not converge."""
    return {getattr(getattr(r, "spec", None), "key", None) or id(r): _run_name(label, r)
            for label, runs in runs_by_label.items() for r in runs if getattr(r, "converged", True) is False}


def _converged_seeds(c) -> set:
    """The seeds on which every AN and oracle run of a candidate converged."""
    seeds = {r.spec.seed for label in (LABEL.an, LABEL.oracle) for r in c[label]}
    bad = {r.spec.seed for label in (LABEL.an, LABEL.oracle) for r in c[label] if r.converged is False}
    return seeds - bad


def checks_on_unconverged(cands, choice: Mapping[str, Any], in_profile: str | None,
                          sp: Mapping[str, Sequence[Any]], scene_targets: Mapping[str, Any],
                          seeds: Sequence[int]) -> str:
    """What the pretraining check (does the profile use the rule's candidate?) and the scenes'
    targets rest on, computed from the runs: where either fails because a run did not converge,
    it names that run (one run when both rest on the same), says what that means, and reads
    both again on the seeds where every run they read converged (``sp``: the main comparison's
    single-positive runs ``{label: runs}``; ``seeds``: the profile's). Empty when neither check
    rests on an unconverged run."""
    from ..protocol.scenes_choice import targets

    agrees = in_profile == choice.get("chosen")
    rule_runs = (_unconverged({LABEL.an: cands[in_profile][LABEL.an], LABEL.oracle: cands[in_profile][LABEL.oracle]})
                 if not agrees and in_profile in cands and in_profile in choice.get("excluded", {}) else {})
    seed0 = scene_targets["seed"]
    target_runs = {} if scene_targets["met"] else _unconverged(
        {label: [r for r in sp[label] if r.spec.seed == seed0] for label in (LABEL.oracle, LABEL.an)})
    shared = set(rule_runs) & set(target_runs)
    if not rule_runs and not target_runs:
        return ""
    names = {**rule_runs, **target_runs}
    which = []
    if rule_runs:
        which.append(f"the pretraining check (the profile uses {in_profile}, which the rule excluded: not every "
                     "one of its AN and oracle runs converged)")
    if target_runs:
        which.append(f"the scenes' targets (read on seed {seed0}, they count as met only when both runs converged)")
    head = (f"**These checks rest on {'one run' if len(names) == 1 else f'{len(names)} runs'} that did not "
            f"converge:** {'; '.join(names.values())}. "
            + ("It is the same run in both: " if shared and len(names) == 1 else "They fail in ")
            + " and ".join(which) + ". ")
    meaning = ("A run still gaining at its last epoch is not a measurement: the failures say that run was still "
               "learning, not that the choice was wrong. Read on the seeds where every run each check reads "
               "converged:")
    lines = [head + meaning]
    if rule_runs:
        keep = set.intersection(*(_converged_seeds(c) for c in cands.values()))
        kept = {cand: {"pretraining": c["pretraining"],
                       **{label: [r for r in c[label] if r.spec.seed in keep] for label in (LABEL.an, LABEL.oracle)}}
                for cand, c in cands.items()}
        again = choose_pretraining(kept) if keep else {"chosen": None, "reason": "no seed left"}
        lines.append(f"* the pretraining rule on seed(s) {', '.join(map(str, sorted(keep))) or 'none'} (every "
                     f"candidate's runs converged there): {again['reason']} -> {again['chosen']}; the profile uses "
                     f"{in_profile}" + (" (agrees)." if again["chosen"] == in_profile else " (still disagrees)."))
    if target_runs:
        ok_seeds = [s for s in seeds if all(r.converged is not False for label in (LABEL.oracle, LABEL.an)
                                            for r in sp[label] if r.spec.seed == s)
                    and any(r.spec.seed == s for r in sp[LABEL.oracle]) and any(r.spec.seed == s for r in sp[LABEL.an])]
        met = [s for s in ok_seeds if targets(sp[LABEL.oracle], sp[LABEL.an], seed=s)["met"]]
        lines.append(f"* the scenes' targets on the {len(ok_seeds)} seed(s) whose oracle and AN runs both converged "
                     f"({', '.join(map(str, ok_seeds)) or 'none'}): met on {len(met)} of them"
                     + (f" (not on {', '.join(str(s) for s in ok_seeds if s not in met)})." if len(met) < len(ok_seeds) else "."))
    return "\n".join(lines)


# --- scratch vs pretrained, and the comparison read too early ----------------------------------

def scratch_vs_pretrained(runs: Runs):
    """AN and the oracle from scratch (same epochs and schedule) next to their pretrained runs on
    the same seed, single positive: ``{"pretrained": {label: [run]}, "scratch": {label: [run]}}``."""
    scratch = runs[SCRATCH]
    seed = scratch[LABEL.an][0].spec.seed
    pre = {label: [r for r in rs if r.spec.seed == seed] for label, rs in runs["single positive"].items()}
    return {"pretrained": pre, "scratch": scratch}


def early_vs_converged(curves, epoch: int = EARLY_EPOCH):
    """The oracle − AN gap on clean validation read at ``epoch`` and at the best-val epoch, per
    start: what a table of unconverged runs would have reported vs the converged one."""
    import pandas as pd

    rows = {}
    for start, res in curves.items():
        an, full = res[LABEL.an][0], res[LABEL.oracle][0]
        e = min(epoch, len(an.history)) - 1
        rows[start] = {f"AN (epoch {e + 1})": an.history[e]["val_mAP"],
                       f"oracle (epoch {e + 1})": full.history[e]["val_mAP"],
                       f"gap (epoch {e + 1})": full.history[e]["val_mAP"] - an.history[e]["val_mAP"],
                       "AN (best)": an.best["val_mAP"], "oracle (best)": full.best["val_mAP"],
                       "gap (best)": full.best["val_mAP"] - an.best["val_mAP"],
                       "AN converged": an.converged, "oracle converged": full.converged}
    return pd.DataFrame(rows).T


# --- hidden positives and claims ---------------------------------------------------------------

def confidences(profile, results, seed: int = 0):
    """Confidence of the oracle and AN by label status, single positive, first seed."""
    P = as_profile(profile)
    splits = splits_for(P, *REGIMES["single positive"], seed=seed)
    conf = {label: hidden_positive_confidences(next(r for r in runs if r.spec.seed == seed), splits)
            for label, runs in results["single positive"].items()}
    summary = {label: summarise_confidences(c["train"]) for label, c in conf.items()}
    return conf, summary


def claims(results, design: AssumeNegativeDesign):
    """The chapter's claims table (paired verdicts, see :mod:`mlpl_lab.analysis.claims`), one
    family declared by ``design`` (:attr:`AssumeNegativeDesign.families`)."""
    family = design.families[ORACLE_FAMILY]
    rows = [Claim(f"full labels beat AN under {regime}",
                  "Cole et al. protocol, VOC: full 90.2 vs AN 85.1 (single positive; LL's table)"
                  if regime == "single positive" else "— (the gap the later chapters try to close)",
                  "full", LABEL.an, runs[LABEL.oracle], runs[LABEL.an], family=family,
                  id=claim_id("oracle_beats_an", regime_slug(regime)))
            for regime, runs in results.items()]
    return claims_table(rows)


def confidence_table(summary):
    """The confidence summary as a table: rows = statuses, columns = models."""
    import pandas as pd

    return pd.DataFrame(summary).round(3)


def gap_record(cands) -> Dict[str, float]:
    return {cand: _gap(c) for cand, c in cands.items()}



# --- what the notebook shows (the one table style, mlpl_lab.analysis.display) ------------------

def regimes_view():
    """The chapter's regimes: the label a table uses, the regime and its parameters."""
    from ..analysis.display import caption, text_table

    rows = {label: {"regime": name, "parameters": ", ".join(f"{k} = {v:g}" for k, v in params.items()) or "—"}
            for label, (name, params) in REGIMES.items()}
    return text_table(rows, caption("The regimes of the main comparison: the label the tables use, the "
                                    "regime of mlpl_lab.core.labels and its parameters", intervals=False,
                                    unconverged=False, bold=None), index="label", best=False)


def candidates_view(cands):
    """:func:`candidates_table` as the notebook shows it (mAP with one decimal)."""
    from ..analysis.display import caption, styled

    t = candidates_table(cands)
    return styled(t, caption("Per pretraining candidate: its own val mAP, AN's and the oracle's test mAP (%) "
                             "fine-tuned from it (single positive, mean over the seeds), the gap oracle − AN "
                             "and how many of their runs converged", intervals=False, unconverged=False,
                             bold=None), percent=["pretraining val mAP", LABEL.an, LABEL.oracle, "gap"],
                  counts=["seeds"], best=False)


def table_view(results):
    """The main table as the notebook shows it: rows = regimes, the oracle and AN as mean ± 95 %
    interval (seeds) with † where a run did not converge, and the gap (difference of the means);
    the better of the two in bold per regime."""
    from ..analysis.benchmark import cell_frame, unconverged_mark, wide
    from ..analysis.display import caption, styled

    cells = cell_frame(results)
    methods, regimes = list(METHODS), list(results)
    mean = wide(cells, "mean", methods, regimes).T
    half, n = wide(cells, "ci95", methods, regimes).T, wide(cells, "seeds", methods, regimes).T
    unconv = wide(cells, "converged", methods, regimes).T.map(unconverged_mark)
    frame = mean.copy()
    frame["gap"] = table(results)["gap"]
    frame.columns.name = None
    return styled(frame, caption("Test mAP (%) at each run's best clean-validation epoch, per regime; gap: "
                                 "oracle − AN, the difference of the means", bold="row"),
                  percent=True, half=half, seeds=n, unconverged=unconv, axis=1, reference=["gap"])


def early_view(early):
    """:func:`early_vs_converged` as the notebook shows it."""
    from ..analysis.display import caption, styled

    return styled(early, caption("Clean validation mAP (%) of AN and the oracle (first seed, single positive) "
                                 "read at the former protocol's epoch and at the best-val epoch, per start; "
                                 "✓ / ✗: whether the run converged", intervals=False, unconverged=False,
                                 bold=None), percent=True, best=False)


def confidence_view(summary):
    """The confidence summary (:func:`confidence_table`) as the notebook shows it."""
    import pandas as pd

    from ..analysis.display import caption, styled

    return styled(pd.DataFrame(summary), caption(
        "Predicted probability on the training set (single positive, first seed) by the label's true "
        "status: the mean, and the share at or above 0.5", intervals=False, unconverged=False, bold=None),
        best=False)


#: the chapter, as :mod:`mlpl_lab.protocol.registry` finds it; the live run's sizes per profile
#: (cpu: measured by benchmarks/bench_live.py to train in at most 3 minutes on 2 cores)
LIVE_SIZES = {
    "smoke": {"n_train": 128, "epochs": 1},
    "cpu": {"n_train": 2000, "epochs": 12},
    "gpu": {"n_train": 5000, "epochs": 4},
    "gpu_shape": {"n_train": 256, "epochs": 1},
}
CHAPTER = Chapter("01_assume_negative", live=Live(LABEL.an, LIVE_SIZES, live_seeds, live_spec))
