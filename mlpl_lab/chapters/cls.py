"""Notebook 04 — CLS: the chapter's design per profile, its runs, tables and claims.

The full grid (five methods x four regimes, an ablation and two sensitivity
sweeps) is about 60 single-network trainings — over an hour on 2 CPU cores. So the design is
a literal per profile (:data:`DESIGNS`, read by :func:`design`):

* ``cpu`` (sized with the rest of the series): AN and CLS under single positive and drop 50 %
  (the drop rates are distinct regimes, see ``labels.drop_positives``; drop 25 % and 75 % are
  the gpu profile's); Co-teaching, Co-teaching+ and JoCoR under **single positive** only; every
  Table 2 row (each enters a claim) on the profile's five seeds (``table_seeds``); the
  ablation (CLS-H, CLS-L) under single positive on the notebook's seed. The sensitivity sweeps
  keep only their reused points: the value 0 of a sweep *is* the ablation run (CLS with
  tau_h = 0 computes exactly CLS-H) and the paper's value *is* the table's CLS run. Left out
  under cpu (listed by :func:`left_out`): drop 25 % and 75 %, the family under the drop
  regimes, the sweeps' other values, CLC.
* ``smoke``: the same structure on one seed, AN and CLS under single positive on three.
* ``gpu`` (and ``gpu_shape``, :data:`mlpl_lab.protocol.common.DESIGN_OF`): the family under all
  four regimes, CLC and wider sweeps, every Table 2 row on the profile's seeds.

The runs are data: :func:`specs` returns them (``{family: {label: [RunSpec per seed]}}``, the
families being the Table 2 regimes, ``"ablation"``, ``"tau_h"`` and ``"tau_l"``), the notebook
ensures them (:func:`mlpl_lab.protocol.asked.ensure_asked`) and the views take the stored runs.

E_k: the paper ramps R over E_k = 10 of its 100 epochs. Our runs are the profile's epochs (54
on cpu, 2 on smoke), so the chapter scales the ramp
to half the run, capped at the paper's value: ``E_k = min(10, max(1, epochs // 2))`` — 10 on
cpu (54 epochs) and gpu (20), 1 on smoke. The Co-teaching family gets the same ramp (T_k = E_k).
tau_h and tau_l are the paper's MS-COCO values for each regime (COCO is the dataset of the
paper's Figs. 4-8); the library's defaults stay the paper's own.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Tuple

import numpy as np

from ..core import labels as L

from ..core import regimes as R
from ..analysis.claims import Claim, Family, by_seed, claim_id, claims_table, mark_waiting
from ..protocol.regimes import regime_slug
from ..analysis.tables import seed_mean
from ..methods.cls import PAPER_E_K, paper_hparams
from ..methods.selection import forget_schedule, reserve_schedule
from ..profiles import Profile
from ..protocol.asked import Asked, Runs, Stored, nothing_stored
from ..protocol.common import as_profile, specs_for, splits_for, with_pending
from ..protocol.design import preset
from ..protocol.recipes import CLS_PAPER_REGIMES, FORGET_RATE, TAU_DATASET, ramp_epochs
from .. import catalogue
from ..catalogue import LABEL
from ..protocol.registry import Chapter, Live

#: display label -> (regime name, regime parameters); alpha is the fraction of positives DROPPED
REGIMES: Dict[str, Tuple[str, Dict[str, Any]]] = R.regime_table(*CLS_PAPER_REGIMES)

#: JoCoR is always quoted with its λ (the official code's default 0.1; its catalogue entry's)
JOCOR = LABEL.jocor_row
JOCOR_LAMBDA = catalogue.entry("jocor_row").params["co_lambda"]
FAMILY = (LABEL.coteaching, LABEL.coteaching_plus, JOCOR)
#: the key comparison's rows: under the study regime they run on the design's key seeds
KEY = (LABEL.an, LABEL.cls)
#: the notebook parameters that change which runs the chapter asks for
PARAMETERS = ("seed",)
#: the chapter's questions (:attr:`CLSDesign.families`)
CLS_VS_AN, CLS_VS_COTRAINING, GROWS = ("CLS beats AN", "CLS beats the co-training baselines",
                                       "the margin grows with the missing rate")

#: the chapter's literals per design (:func:`design` adds the profile's seeds and epochs;
#: ``gpu_shape`` takes gpu's, :data:`mlpl_lab.protocol.common.DESIGN_OF`). ``n_table_seeds`` /
#: ``n_key_seeds``: how many of the profile's seeds the Table 2 rows / the key comparison (AN
#: and CLS under the study regime) run on, ``None``: all. cpu keeps drop 25 % and 75 % for gpu:
#: converged two-network runs cost about two minutes each on 2 cores.
DESIGNS: Dict[str, Dict[str, Any]] = {
    "smoke": dict(table_regimes=("drop 50 %", "single positive"), family_regimes=("single positive",),
                  tau_h_grid=(0.0, 0.012), tau_l_grid=(0.0, 0.06), with_clc=False,
                  n_table_seeds=1, n_key_seeds=3),
    # longer: the co-training rows whose runs did not converge at the profile's epochs (4 of 5
    # Co-teaching+ runs), the losing sides of "CLS beats ..." claims: the cold series trains them at
    # 4/3 of the epochs under the study regime (pending runs, :func:`longer_specs`)
    "cpu": dict(table_regimes=("drop 50 %", "single positive"), family_regimes=("single positive",),
                tau_h_grid=(0.0, 0.012), tau_l_grid=(0.0, 0.06), with_clc=False,
                n_table_seeds=5, n_key_seeds=5, longer=((LABEL.coteaching, 72), (LABEL.coteaching_plus, 72))),
    "gpu": dict(table_regimes=tuple(REGIMES), family_regimes=tuple(REGIMES),
                tau_h_grid=(0.0, 0.006, 0.012, 0.021, 0.06), tau_l_grid=(0.0, 0.02, 0.06, 0.14),
                with_clc=True, n_table_seeds=None, n_key_seeds=None),
}


@dataclass(frozen=True)
class CLSDesign:
    """Which runs the chapter trains under one profile."""

    profile: Profile
    E_k: int
    table_regimes: Tuple[str, ...]       # AN and CLS run under each
    family_regimes: Tuple[str, ...]      # Co-teaching, Co-teaching+ and JoCoR run under these
    tau_h_grid: Tuple[float, ...]
    tau_l_grid: Tuple[float, ...]
    with_clc: bool
    #: the Table 2 rows (every regime's AN, CLS and family rows: each enters a claim) run on these
    table_seeds: Tuple[int, ...]
    #: AN and CLS under the study regime run on these (the claims' key comparison)
    key_seeds: Tuple[int, ...]
    #: the ablation and the sweeps' new points run on these (the notebook's ``seed``)
    study_seeds: Tuple[int, ...] = (0,)
    study_regime: str = "single positive"  # ablation and sensitivity sweeps
    #: (row, epochs) of the longer runs of losing sides at risk, under the study regime (pending)
    longer: Tuple[Tuple[str, int], ...] = ()
    tau_dataset: str = TAU_DATASET
    forget_rate: float = FORGET_RATE

    @property
    def families(self) -> Dict[str, Family]:
        """The chapter's questions, declared before any run is read: CLS against AN (once per
        table regime), CLS against the co-training baselines (each baseline in each regime it runs
        in), and, where the design has drop 25 % and 75 %, whether the margin grows with the
        missing rate."""
        out = {CLS_VS_AN: Family(CLS_VS_AN, len(self.table_regimes), "does CLS beat assume-negative?"),
               CLS_VS_COTRAINING: Family(CLS_VS_COTRAINING, len(FAMILY) * len(self.family_regimes),
                                         "does CLS beat each co-training baseline (Table 2)?")}
        if {"drop 25 %", "drop 75 %"} <= set(self.table_regimes):
            out[GROWS] = Family(GROWS, 1, "does CLS's margin over AN grow with the missing rate?")
        return out

    @property
    def family_members(self) -> Dict[str, Tuple[str, ...]]:
        """``{family: claim ids}``: the claims each family of :attr:`families` asks, from the design
        alone (what the course pack's index records: :func:`mlpl_lab.protocol.plan.designed_families`)."""
        out = {CLS_VS_AN: tuple(claim_id("cls_beats_an", regime_slug(r)) for r in self.table_regimes),
               CLS_VS_COTRAINING: tuple(beats_id(other, r) for r in self.family_regimes for other in FAMILY)}
        if {"drop 25 %", "drop 75 %"} <= set(self.table_regimes):
            out[GROWS] = (claim_id("margin_grows", "drop75_vs_drop25"),)
        return out

    def cls_hparams(self, regime_label: str) -> Dict[str, float]:
        regime, params = REGIMES[regime_label]
        return paper_hparams(self.tau_dataset, regime, params.get("alpha"), E_k=self.E_k)

    def family_hparams(self) -> Dict[str, Any]:
        """Co-teaching, Co-teaching+ and JoCoR: the forget rate and the ramp scaled to the run."""
        return {"forget_rate": self.forget_rate, "T_k": self.E_k}

    def seeds_of(self, regime_label: str, row: str) -> Tuple[int, ...]:
        """The seeds of a Table 2 row: the key comparison's on :attr:`key_seeds`, the others on
        :attr:`table_seeds`."""
        return self.key_seeds if (regime_label == self.study_regime and row in KEY) else self.table_seeds

    def planned_runs(self) -> Dict[str, int]:
        """Training runs by kind (a two-network run counts once in ``runs`` and twice in
        ``network_trainings``, the unit of CPU time), counted from :func:`specs`."""
        asked = specs(self)
        runs = asked.flat()
        two = sum(1 for s in runs if s.method != "an")
        return {"runs": len(runs), "network_trainings": len(runs) + two}

    def describe(self) -> str:
        p = self.planned_runs()
        return (f"profile {self.profile.name}: E_k = T_k = {self.E_k}; AN and CLS under "
                f"{', '.join(self.table_regimes)}; Co-teaching, Co-teaching+, JoCoR under "
                f"{', '.join(self.family_regimes)}; ablation and sweeps under {self.study_regime} "
                f"(tau_h in {list(self.tau_h_grid)}, tau_l in {list(self.tau_l_grid)}); "
                f"{p['runs']} runs = {p['network_trainings']} single-network trainings; "
                f"Table 2 rows on {len(self.table_seeds)} seed(s), the ablation and sweeps "
                f"on {len(self.study_seeds)}, AN and CLS under {self.study_regime} on "
                f"{len(self.key_seeds)} seed(s)")


def design(profile, seed: int = 0) -> CLSDesign:
    """The design of notebook 04 for a profile (name or :class:`Profile`): :data:`DESIGNS` with
    the profile's seeds and epochs; ``seed`` (the notebook's parameter) is the ablation's."""
    P = as_profile(profile)
    lit = dict(preset(DESIGNS, P))
    n_table, n_key = lit.pop("n_table_seeds"), lit.pop("n_key_seeds")
    seeds = tuple(P.seeds)
    return CLSDesign(P, ramp_epochs(P.epochs), table_seeds=seeds[:n_table], key_seeds=seeds[:n_key],
                     study_seeds=(int(seed),), **lit)


#: the name the benchmark and the live exercise call it by
chapter_design = design


def left_out(design: CLSDesign) -> List[str]:
    """What the paper's experiments hold that this design does not train."""
    out = [f"{r} (AN, CLS)" for r in REGIMES if r not in design.table_regimes]
    out += [f"Co-teaching family under {r}" for r in design.table_regimes if r not in design.family_regimes]
    if len(design.tau_h_grid) < 3:
        out.append("the tau_h and tau_l sweeps beyond the ablation and the paper's value")
    if not design.with_clc:
        out.append("CLC (co-label correction)")
    return out


def method_specs(design: CLSDesign, regime_label: str) -> Dict[str, Tuple[str, Dict[str, Any]]]:
    """``{display label: (method name, hyperparameters)}`` of the Table 2 rows under a regime."""
    if regime_label not in REGIMES:
        raise ValueError(f"unknown regime label {regime_label!r}; choose from {list(REGIMES)}")
    method = {label: catalogue.by_label(label).method for label in (LABEL.an, LABEL.cls) + FAMILY}
    specs: Dict[str, Tuple[str, Dict[str, Any]]] = {LABEL.an: (method[LABEL.an], {})}
    if regime_label in design.family_regimes:
        for row in FAMILY:  # the co-training rows: the design's ramp, each entry's fixed hyperparameters
            specs[row] = (method[row], dict(design.family_hparams(), **catalogue.by_label(row).params))
    specs[LABEL.cls] = (method[LABEL.cls], design.cls_hparams(regime_label))
    return specs


def specs(design: CLSDesign, stored: Stored = nothing_stored) -> Asked:
    """Every run of the chapter (nothing here is chosen on validation, so ``stored`` is not
    read and nothing waits): one family per Table 2 regime (``{row: [RunSpec per seed]}``), and
    ``"ablation"`` (AN, CLS, CLS-H, CLS-L[, CLC]), ``"tau_h"`` and ``"tau_l"`` (``{value:
    [RunSpec per seed]}``) under the study regime. The ablation's AN and CLS are the table's runs
    of the study regime, a sweep's 0 is the ablation's CLS-H / CLS-L run and its paper value the
    table's CLS run."""
    P = design.profile
    now: Dict[str, Dict[Any, list]] = {}
    for label in design.table_regimes:
        regime, params = REGIMES[label]
        now[label] = {row: specs_for(P, {row: m}, regime, params, design.seeds_of(label, row))[row]
                      for row, m in method_specs(design, label).items()}
    label = design.study_regime
    regime, params = REGIMES[label]
    center = design.cls_hparams(label)
    study = {LABEL.cls_h: ("cls_h", {k: v for k, v in center.items() if k != "tau_h"}),
             LABEL.cls_l: ("cls_l", {k: v for k, v in center.items() if k != "tau_l"})}
    if design.with_clc:
        study[LABEL.clc] = ("clc", dict(center))
    new = specs_for(P, study, regime, params, design.study_seeds)
    now["ablation"] = {**{k: now[label][k] for k in KEY}, **new}

    def sweep(grid, key, zero):
        out = {}
        for v in grid:
            if v == 0:
                out[v] = new[zero]
            elif v == center[key]:
                out[v] = now[label][LABEL.cls]
            else:
                out[v] = specs_for(P, {v: ("cls", {**center, key: v})}, regime, params, design.study_seeds)[v]
        return out

    now["tau_h"] = sweep(design.tau_h_grid, "tau_h", LABEL.cls_h)
    now["tau_l"] = sweep(design.tau_l_grid, "tau_l", LABEL.cls_l)
    return with_pending(Asked(now), longer_specs(design))


#: the pending family of the rows trained longer (:func:`longer_specs`)
LONGER = "co-training rows, trained longer"


def longer_label(row: str, epochs: int) -> str:
    return f"{row} ({epochs} epochs)"


def longer_specs(design: CLSDesign) -> Dict[str, Dict[str, list]]:
    """``{LONGER: {"<row> (<E> epochs)": [RunSpec per seed]}}``: each row of ``design.longer`` under
    the study regime on its table seeds with only its epochs changed; {} where the design has none.
    Pending runs (:func:`mlpl_lab.protocol.common.with_pending`): the cold series trains them."""
    if not design.longer:
        return {}
    label = design.study_regime
    regime, params = REGIMES[label]
    methods = method_specs(design, label)
    out = {}
    for row, epochs in design.longer:
        base = specs_for(design.profile, {row: methods[row]}, regime, params, design.seeds_of(label, row))[row]
        out[longer_label(row, epochs)] = [s.replace(train=dict(s.train, epochs=epochs)) for s in base]
    return {LONGER: out}


STUDY = ("ablation", "tau_h", "tau_l")


def live_seeds(profile) -> Tuple[int, ...]:
    """The seeds the chapter shows CLS's row on (the design's ``key_seeds``)."""
    return tuple(design(profile).key_seeds)


def live_spec(profile, seed: int, store=None):
    """The chapter's CLS run in its study regime on ``seed``."""
    P = as_profile(profile)
    d = design(P)
    method, hp = method_specs(d, d.study_regime)[LABEL.cls]
    regime, params = REGIMES[d.study_regime]
    return P.spec(method, hp, regime, params, seed=seed)


def table_runs(design: CLSDesign, runs: Runs) -> Dict[str, Dict[str, list]]:
    """The Table 2 runs of ``ensure_asked(specs, design)``: ``{regime: {method: [runs per seed]}}``."""
    return {label: runs[label] for label in design.table_regimes}


def study_runs(runs: Runs) -> Dict[str, Dict[Any, list]]:
    """The ablation (Fig. 6) and the sweeps (Figs. 7-8) of ``ensure_asked(specs, design)``:
    ``{"ablation": {"AN", "CLS", "CLS-H", "CLS-L"[, "CLC"]: runs}, "tau_h": {value: runs},
    "tau_l": {value: runs}}``."""
    return {k: runs[k] for k in STUDY}


def coteaching_plus_trace(results: Mapping[str, Mapping[str, list]], regime: str = "single positive"):
    """Per epoch, what Co-teaching+'s steps did (first seed): the share of the batch on which the
    networks disagree, the share of steps on each branch (no disagreement: whole batch;
    disagreement: co-teaching on it) and the samples each network was updated on per step."""
    import pandas as pd

    runs = results.get(regime, {}).get(LABEL.coteaching_plus)
    if not runs:
        raise ValueError(f"no Co-teaching+ run under {regime!r}")
    keys = ("disagree_fraction", "branch_empty", "branch_disagree", "used_f", "used_g", "val_mAP")
    rows = [{"epoch": r["epoch"], **{k: r.get(k, float("nan")) for k in keys}} for r in runs[0].history]
    return pd.DataFrame(rows).set_index("epoch").round(3)


def _splits(profile, regime_label: str, seed: int):
    regime, params = REGIMES[regime_label]
    return splits_for(as_profile(profile), regime, params, seed=seed)


def regime_summary(design: CLSDesign, profile, seed: int = 0):
    """Per regime: how much a label-level and a sample-level selection could find.

    Columns: observed and true positives per image; ``hidden / unknown`` (%) — the share of
    unknown entries that are hidden positives, i.e. the label noise CLS's tau_h fights;
    ``images with a hidden positive`` (%) — the *sample* noise rate a Co-teaching forget rate
    refers to; and the paper's (COCO) tau_h and tau_l used here.
    """
    import pandas as pd

    rows = []
    for label in design.table_regimes:
        sp = _splits(profile, label, seed)
        obs, y = sp.train.observed, sp.train.labels
        stats = R.label_stats(y, obs)
        hidden = (obs == L.UNK) & (y == 1)
        hp = design.cls_hparams(label)
        rows.append({
            "regime": label,
            "observed pos / image": stats["observed_positives_per_image"],
            "true pos / image": stats["positives_per_image"],
            "hidden / unknown (%)": 100 * float(hidden.sum()) / max(1, int((obs == L.UNK).sum())),
            "images with a hidden positive (%)": 100 * float(hidden.any(dim=1).float().mean()),
            "tau_h": hp["tau_h"], "tau_l": hp["tau_l"],
        })
    return pd.DataFrame(rows).set_index("regime")


def noise_sentences(noise, design: CLSDesign, profile=None, seed: int = 0,
                    num_classes: int | None = None) -> List[str]:
    """What section 2's table shows, one computed sentence per regime (never typed): the label noise
    (hidden / unknown) against the sample noise (images with a hidden positive), how many of the
    noisy images a sample selection forgetting ``design.forget_rate`` of the images could drop at
    most, how many correct labels an image holds on average (the classes minus its hidden
    positives: a forgotten image takes them all with it), and whether the paper's tau_h lies below
    the label noise."""
    out = []
    if num_classes is None:  # the classes of the chapter's training split
        num_classes = int(_splits(profile, next(iter(noise.index)), seed).train.labels.shape[1]) if len(noise) else 0
    for regime, row in noise.iterrows():
        label, sample = float(row["hidden / unknown (%)"]), float(row["images with a hidden positive (%)"])
        hidden = float(row["true pos / image"]) - float(row["observed pos / image"])
        tau = 100 * float(row["tau_h"])
        reach = 100 * min(1.0, design.forget_rate / (sample / 100)) if sample > 0 else 100.0
        side = "below" if tau < label else "above" if tau > label else "equal to"
        out.append(f"**{regime}**: {label:.1f} % of the unknown labels are hidden positives, while "
                   f"{sample:.1f} % of the images carry at least one. Forgetting {100 * design.forget_rate:g} % of "
                   f"the images drops at most {reach:.0f} % of those images; an image holds "
                   f"{num_classes - hidden:.1f} correct labels on average, and a forgotten one takes them all "
                   f"with it. The paper's "
                   f"τ_h = {tau:g} % is {side} this label noise.")
    return out


def noise_markdown(noise, design: CLSDesign, profile, seed: int = 0):
    """:func:`noise_sentences` as notebook output (Markdown, one paragraph per regime)."""
    from IPython.display import Markdown

    return Markdown("\n\n".join(noise_sentences(noise, design, profile, seed)))


# ---------------------------------------------------------------------------------------
# tables
# ---------------------------------------------------------------------------------------
def _mean(runs, key):
    """:func:`mlpl_lab.analysis.tables.seed_mean` over the runs that recorded ``key`` (NaN when
    none did: f and g alone exist only for two-network runs)."""
    having = [r for r in runs if key in r.best]
    return seed_mean(having, key) if having else float("nan")


def table2(results: Mapping[str, Mapping[str, list]], metrics=("mAP", "CF1", "OF1")):
    """Table 2 shape: rows = methods, columns = (regime, metric), values at the best-val epoch
    (mean over seeds) of the reported prediction (two networks: their averaged probabilities).
    Cells of methods not run under a regime are NaN."""
    import pandas as pd

    methods: List[str] = []
    for runs in results.values():
        methods += [m for m in runs if m not in methods]
    cols = pd.MultiIndex.from_tuples([(r, m) for r in results for m in metrics], names=["regime", "metric"])
    data = [[_mean(results[r][m], f"test_{k}") if m in results[r] else np.nan
             for r in results for k in metrics] for m in methods]
    return pd.DataFrame(data, index=pd.Index(methods, name="method"), columns=cols).round(2)


def heads_table(results: Mapping[str, Mapping[str, list]]):
    """test mAP of the averaged prediction and of f and g alone, per regime and two-network
    method (a single network trained with a peer vs the ensemble of the two)."""
    import pandas as pd

    rows = []
    for regime, runs in results.items():
        for m, rs in runs.items():
            if "test_mAP[f]" not in rs[0].best:
                continue
            rows.append({"regime": regime, "method": m, "average of f and g": _mean(rs, "test_mAP"),
                         "f alone": _mean(rs, "test_mAP[f]"), "g alone": _mean(rs, "test_mAP[g]")})
    return pd.DataFrame(rows).set_index(["regime", "method"]).round(2)


def margins(results: Mapping[str, Mapping[str, list]], method: str = LABEL.cls, baseline: str = LABEL.an,
            metric: str = "test_mAP") -> Dict[str, float]:
    """``{regime: method - baseline}`` of ``metric`` at the best-val epoch (mean over seeds)."""
    return {r: _mean(runs[method], metric) - _mean(runs[baseline], metric)
            for r, runs in results.items() if method in runs and baseline in runs}


def best_mAP(results: Mapping[str, Mapping[str, list]], metric: str = "test_mAP") -> Dict[str, Dict[str, float]]:
    """``{regime: {method: mAP}}`` (mean over seeds, best-val epoch) — what the notebook records."""
    return {r: {m: _mean(rs, metric) for m, rs in runs.items()} for r, runs in results.items()}


def sensitivity_table(sweep: Mapping[float, list], name: str = "tau"):
    """A sweep of :func:`study_runs` as a DataFrame indexed by the tau value: mAP, CF1, OF1 and
    the mAP of f alone."""
    import pandas as pd

    rows = {v: {"mAP": _mean(rs, "test_mAP"), "CF1": _mean(rs, "test_CF1"), "OF1": _mean(rs, "test_OF1"),
                "mAP (f alone)": _mean(rs, "test_mAP[f]")} for v, rs in sweep.items()}
    table = pd.DataFrame.from_dict(rows, orient="index").round(2)
    table.index.name = name
    return table


# ---------------------------------------------------------------------------------------
# small helpers the notebook calls
# ---------------------------------------------------------------------------------------
def chapter_splits(profile, regime_label: str, seed: int = 0):
    """The (cached) splits of one regime label of :data:`REGIMES`."""
    if regime_label not in REGIMES:
        raise ValueError(f"unknown regime label {regime_label!r}; choose from {list(REGIMES)}")
    return _splits(profile, regime_label, seed)


def chapter_schedules(design: CLSDesign, epochs: int) -> Dict[str, np.ndarray]:
    """The per-epoch rates the chapter's runs use under the study regime: CLS's R_h and R_l
    with the chapter's E_k and with the paper's E_k = 10, and the fraction of samples the
    co-teaching family *keeps*, 1 - forget(e), with the paper's and the code's schedule."""
    hp = design.cls_hparams(design.study_regime)
    return {
        f"CLS R_h (tau_h={hp['tau_h']}, E_k={design.E_k})": reserve_schedule(hp["tau_h"], design.E_k, epochs),
        f"CLS R_l (tau_l={hp['tau_l']}, E_k={design.E_k})": reserve_schedule(hp["tau_l"], design.E_k, epochs),
        f"CLS R_l with the paper's E_k={PAPER_E_K}": reserve_schedule(hp["tau_l"], PAPER_E_K, epochs),
        f"Co-teaching kept 1-forget (tau={design.forget_rate}, paper)":
            1 - forget_schedule(design.forget_rate, design.E_k, epochs),
        f"Co-teaching kept 1-forget (tau={design.forget_rate}, code)":
            1 - forget_schedule(design.forget_rate, max(2, design.E_k), epochs, schedule="code"),
    }


def beats_id(row: str, regime: str) -> str:
    """The key of "CLS beats <row> under <regime>" (:func:`mlpl_lab.analysis.claims.claim_id`)."""
    return claim_id("cls_beats", catalogue.by_label(row).key, regime_slug(regime))


def claims(results: Mapping[str, Mapping[str, list]], design: "CLSDesign",
           longer: Mapping[str, list] | None = None):
    """The paper's claims checked on these results: a claims table (paired verdicts,
    :mod:`mlpl_lab.analysis.claims`) in the families ``design`` declares
    (:attr:`CLSDesign.families`); the margin-growth row pairs each seed's CLS − AN margin at
    drop 75 % with the same seed's at drop 25 %. Paper numbers are CLS Table 2 (COCO)."""
    fam = design.families
    paper = {"single positive": "COCO: CLS 67.4 mAP, best of Table 2 (single positive)",
             "drop 50 %": "COCO: CLS 70.9 mAP, best of Table 2 (50 % left)",
             "drop 25 %": "COCO: CLS 72.8 mAP, best of Table 2 (75 % left)",
             "drop 75 %": "COCO: CLS 67.2 mAP, best of Table 2 (25 % left)"}
    rows = []
    for regime, runs in results.items():
        if LABEL.cls in runs and LABEL.an in runs:
            rows.append(Claim(f"CLS beats AN under {regime}", paper.get(regime, "Table 2"),
                              LABEL.cls, LABEL.an, runs[LABEL.cls], runs[LABEL.an], family=fam[CLS_VS_AN],
                              id=claim_id("cls_beats_an", regime_slug(regime))))
        for other in FAMILY:
            if LABEL.cls in runs and other in runs:
                rows.append(Claim(f"CLS beats {other} under {regime}",
                                  "Table 2: CLS above every co-training baseline", LABEL.cls, other,
                                  runs[LABEL.cls], runs[other], family=fam[CLS_VS_COTRAINING],
                                  id=beats_id(other, regime)))
    if "drop 75 %" in results and "drop 25 %" in results and all(
            k in results[r] for r in ("drop 75 %", "drop 25 %") for k in (LABEL.cls, LABEL.an)):
        def per_seed(regime):  # CLS − AN per seed under one regime
            cls_, an = by_seed(results[regime][LABEL.cls]), by_seed(results[regime][LABEL.an])
            return {s_: cls_[s_] - an[s_] for s_ in cls_ if s_ in an}

        # paired by seed: d_s = (CLS − AN at drop 75 %)_s − (CLS − AN at drop 25 %)_s
        rows.append(Claim.of_values(
            "the margin over AN grows with the missing rate (drop 75 % vs 25 %)",
            "COCO: CLS's lead over the baselines is largest at 25 % left (Table 2)",
            "CLS − AN at drop 75 %", "CLS − AN at drop 25 %", per_seed("drop 75 %"), per_seed("drop 25 %"),
            runs={f"{k} at {reg}": results[reg][k] for reg in ("drop 75 %", "drop 25 %") for k in (LABEL.cls, LABEL.an)},
            family=fam.get(GROWS), id=claim_id("margin_grows", "drop75_vs_drop25")))
    # the losing sides trained longer (pending runs, once stored): controls of the claims they repeat
    study = design.study_regime
    waiting = {}
    for row, epochs in design.longer:
        checked = beats_id(row, study)
        runs = (longer or {}).get(longer_label(row, epochs))
        if runs and study in results and LABEL.cls in results[study]:
            rows.append(Claim(f"CLS beats {longer_label(row, epochs)} under {study}",
                              "the same comparison, the baseline trained longer", LABEL.cls, longer_label(row, epochs),
                              results[study][LABEL.cls], runs, control_of=checked,
                              id=claim_id("trained_longer", *checked.split("/"))))
        else:
            waiting[checked] = f"its control, {longer_label(row, epochs)} (pending: the cold series trains them)"
    table = claims_table(rows)
    waiting = {c: w for c, w in waiting.items() if c in table.index and bool(table.at[c, "_at_risk"])}
    return mark_waiting(table, waiting) if waiting else table


def strategy_table():
    """The paper's Table 1 (cooperation strategies of co-training methods) as a DataFrame,
    with the multi-label unit each method of this lab selects."""
    import pandas as pd

    rows = {
        "Cross Update": [True, False, True, False, True],
        "Joint Training": [False, False, False, True, False],
        "Disagreement": [False, True, True, False, False],
        "Agreement": [False, False, False, True, False],
        "Label Selection": [False, False, False, False, True],
        "Sample Selection": [True, True, True, True, False],
    }
    cols = [LABEL.coteaching, "Decoupling", LABEL.coteaching_plus, LABEL.jocor, LABEL.cls]
    table = pd.DataFrame(rows, index=cols).T.replace({True: "✓", False: "✗"})
    table.loc["unit dropped here"] = ["whole image (C labels)", "(not in this lab)",
                                      "whole image (C labels)", "whole image (C labels)",
                                      "one (image, class) entry"]
    table.loc["lab method"] = ["coteaching", "—", "coteaching_plus", "jocor", "cls"]
    return table


# ---------------------------------------------------------------------------------------
# what the notebook shows (the one table style, mlpl_lab.analysis.display)
# ---------------------------------------------------------------------------------------
def strategy_view():
    """:func:`strategy_table` with its caption."""
    from ..analysis.display import styled

    return styled(strategy_table(), "CLS, Table 1: the cooperation strategies of co-training methods "
                  "(✓ / ✗), the unit each method drops in this lab's multi-label setting and its "
                  "registered method.", best=False)


def regime_view(summary):
    """:func:`regime_summary` as the notebook shows it (the taus with three decimals)."""
    from ..analysis.display import styled

    return styled(summary, "Per regime (training split, first seed): observed and true positives per image, "
                  "the share of unknown entries that are hidden positives (the label noise tau_h fights), "
                  "the share of images with a hidden positive (the sample noise a forget rate refers to) "
                  "and the paper's (COCO) tau_h and tau_l used here.",
                  digits={"tau_h": 3, "tau_l": 3}, best=False)


def table2_view(results: Mapping[str, Mapping[str, list]], metrics=("mAP", "CF1", "OF1")):
    """:func:`table2` as the notebook shows it: each cell mean ± 95 % interval (seeds) with †
    where a run did not converge, the best of each (regime, metric) column in bold."""
    import pandas as pd

    from ..analysis import benchmark as bm
    from ..analysis.display import caption, styled

    methods: List[str] = []
    for runs in results.values():
        methods += [m for m in runs if m not in methods]
    regimes = list(results)
    frames = {k: [] for k in ("mean", "ci95", "seeds", "converged")}
    for k in metrics:
        cells = bm.cell_frame(results, f"test_{k}")
        for v in frames:
            frames[v].append(bm.wide(cells, v, methods, regimes).reindex(index=methods, columns=regimes))
    cols = pd.MultiIndex.from_tuples([(r, k) for r in regimes for k in metrics], names=["regime", "metric"])

    def joined(v):
        return pd.concat({k: f for k, f in zip(metrics, frames[v])}, axis=1).swaplevel(axis=1).reindex(columns=cols)

    mean, unconv = joined("mean"), joined("converged").map(bm.unconverged_mark)
    return styled(mean, caption("CLS, Table 2 at this scale: test mAP, CF1 and OF1 (%) of the reported "
                                "prediction (two networks: their averaged probabilities) at the best "
                                "clean-validation epoch", note="— not run in that regime"),
                  percent=True, half=joined("ci95"), seeds=joined("seeds"), unconverged=unconv)


def heads_view(heads):
    """:func:`heads_table` as the notebook shows it (the best head of each row in bold)."""
    from ..analysis.display import caption, styled

    return styled(heads, caption("Test mAP (%) of the two-network methods' averaged prediction and of each "
                                 "network alone (mean over seeds, best clean-validation epoch)",
                                 intervals=False, unconverged=False, bold="row"), percent=True, axis=1)


def trace_view(trace):
    """:func:`coteaching_plus_trace` as the notebook shows it."""
    from ..analysis.display import compact_rows

    return compact_rows(trace, "Co-teaching+ per epoch (first seed): the share of the batch on which the two "
                        "networks disagree, the share of steps on each branch, the samples each network was "
                        "updated on per step and the clean validation mAP (%).",
                        record="coteaching_plus_trace", percent=["val_mAP"], counts=["used_f", "used_g"],
                        best=False)


def selection_view(summary):
    """:func:`mlpl_lab.methods.selection.selection_summary` as the notebook shows it."""
    from ..analysis.display import styled

    return styled(summary, "What each method's selection removed at its last epoch (summed over its networks "
                  "and runs): precision and recall (%) of the removal against the true labels, the labels "
                  "removed, and for sample selection the clean labels lost per dropped image.",
                  counts=["epoch", "removed labels", "observed positives lost"], best=False)


def sweep_coverage(d: CLSDesign) -> str:
    """What the sensitivity sweeps (Figs. 7-8) of ``design`` cover, in one sentence computed from
    its grids (``d``): under cpu and smoke each sweep holds only its reused points (0, the ablation run,
    and the paper's value, the table's CLS run), so it draws no curve; the gpu grids are named."""
    from ..profiles import get_profile

    center = d.cls_hparams(d.study_regime)
    gpu = design(get_profile("gpu"))

    def values(grid):
        return "{" + ", ".join(f"{v:g}" for v in grid) + "}"

    parts = []
    for name, grid, gpu_grid in (("tau_h", d.tau_h_grid, gpu.tau_h_grid),
                                 ("tau_l", d.tau_l_grid, gpu.tau_l_grid)):
        symbol = "τ_h" if name == "tau_h" else "τ_l"
        new = [v for v in grid if v not in (0, center[name])]
        if new:
            parts.append(f"the {symbol} sweep covers {values(grid)} ({len(grid)} values, {len(new)} trained for it)")
        else:
            parts.append(f"the {symbol} sweep holds only {values(grid)}: 0 is the ablation run "
                         f"({LABEL.cls_h if name == 'tau_h' else LABEL.cls_l}) and {center[name]:g} the table's CLS run"
                         + ("" if tuple(gpu_grid) == tuple(grid) else f" (the gpu profile sweeps {values(gpu_grid)})"))
    return f"Under the {d.profile.name} profile, " + "; ".join(parts) + "."


def sensitivity_figures(design: CLSDesign, sens_h, sens_l, reference: float | None = None):
    """Figs. 7-8 as far as the design's sweeps go: the sentence of :func:`sweep_coverage`, then a
    curve of test mAP against each τ whose sweep has three values or more (a line through the
    two reused points would only repeat the ablation). Returns the axes drawn (possibly none)."""
    from ..viz.cls_plots import plot_sensitivity

    print(sweep_coverage(design))
    drawn = []
    for table, name, fig in ((sens_h, "τ_h", 7), (sens_l, "τ_l", 8)):
        if len(table) >= 3:
            drawn.append(plot_sensitivity(table, reference=reference,
                                          title=f"test mAP vs {name} (Fig. {fig})"))
    return drawn


def sensitivity_view(sens_h, sens_l):
    """The two sweeps of :func:`sensitivity_table` side by side as the notebook shows them (the
    best value of each column in bold)."""
    from ..analysis.display import caption, styled

    t = sens_h.add_suffix(" (tau_h sweep)").join(sens_l.add_suffix(" (tau_l sweep)"), how="outer")
    t.index.name = "tau"
    return styled(t, caption("Test mAP, CF1, OF1 and the mAP of f alone (%) per tau value of each sweep (mean "
                             "over seeds, best clean-validation epoch); — the value is not on that sweep",
                             intervals=False, unconverged=False), percent=True)


#: the chapter, as :mod:`mlpl_lab.protocol.registry` finds it; the live run's sizes per profile
#: (cpu: measured by benchmarks/bench_live.py to train in at most 3 minutes on 2 cores)
LIVE_SIZES = {
    "smoke": {"n_train": 128, "epochs": 1},
    "cpu": {"n_train": 2000, "epochs": 10},
    "gpu": {"n_train": 5000, "epochs": 4},
    "gpu_shape": {"n_train": 256, "epochs": 1},
}
CHAPTER = Chapter("04_cls", live=Live(LABEL.cls, LIVE_SIZES, live_seeds, live_spec))
