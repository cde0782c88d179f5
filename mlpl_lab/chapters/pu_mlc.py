"""Notebook 06 — PU-MLC (Zhixiang Yuan, Kaixin Zhang, Tao Huang, *Positive Label Is All You Need
for Multi-Label Classification*, ICME 2024): the chapter's design per profile, its runs, tables
and claims.

Two parts:

* **The ablation ladder at a low proportion of known labels** (the paper's hardest column,
  p = 0.1 of the labels known, only their positives used): AN on the PU labels, plain vPU, +γ
  (re-balance, Eq. 9), +γ+α (adaptive temperature, Eq. 10–11), PU-MLC (+ vPU's mixup, Eq. 8),
  PU-MLC + LgConv (Sec. III-D), partial BCE (which also reads the known *negatives*:
  ``known_proportion(p)``), and the full-label oracle (shared with chapter 01 through the run
  store). Every row on the same seeds, so every comparison pairs by seed. γ = 0.55 there: the
  paper's and code's COCO value for 10 % known labels.
* **Noisy negatives** (``labels.noisy_negatives(p, fn_rate)``) at p = 0.5: a share ``fn_rate`` of
  the *observed negatives* are missed objects. The observed negatives outnumber the positives
  about 8 to 1 on the scenes, so a small ``fn_rate`` reports a large share of the true positives
  as negatives: :func:`noise_table` counts it from the label matrices (share of the true
  positives flipped; false negatives per observed positive, what partial BCE reads). At every
  noise level γ is chosen on the clean validation split among ``gamma_grid``
  (:func:`select_gammas`): the paper sets "larger γ at smaller known ratios" without giving
  values. The **control** ``noisy_negatives(p, fn_rate, missed="unknown")`` misses the same
  positives but reports them unknown: partial BCE then loses the positives without reading wrong
  negatives, which separates "lost positives" from "wrong negatives" (:func:`decomposition`).
  PU-MLC reads only observed positives, which the control leaves as they are: its runs serve
  both (``tests/test_pu_mlc.py`` shows that PU-MLC's training does not depend on anything else).
  :func:`crossings` gives the noise level where PU-MLC and partial BCE cross, per seed.

Seeds: every cell runs on the profile's first :data:`CELL_SEEDS` seeds (five under cpu and gpu,
so every claim of the chapter pairs five seeds, issue 36; three elsewhere), the key comparison
(PU-MLC vs partial BCE at p = 0.1, :data:`KEY_ROWS`) on :data:`KEY_SEEDS`; a claim on fewer than
three paired seeds is an observation (:mod:`mlpl_lab.analysis.claims`). Runs per profile:
:func:`run_count` (the notebook prints it).

What differs from the paper's training is listed by :func:`training_differences`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Tuple

import numpy as np

from ..analysis.claims import Claim, by_seed, claims_table
from ..core.labels import NEG, POS
from ..core.regimes import regime as make_regime
from .common import as_profile, design_name, splits_for
from ..runs.runner import ensure_grid

#: label -> (method, the regime family it reads: "pu" = positives only, "partial" = known
#: proportion, and the model options of the row)
LADDER: Dict[str, Tuple[str, str, Dict]] = {
    "AN (PU labels)": ("an", "pu", {}),
    "vPU": ("vpu_plain", "pu", {}),
    "+γ": ("pu_mlc_gamma", "pu", {}),
    "+γ+α": ("pu_mlc_gamma_alpha", "pu", {}),
    "PU-MLC (+mixup)": ("pu_mlc", "pu", {}),
    "PU-MLC + LgConv": ("pu_mlc", "pu", {"lgconv": True}),
    "partial BCE (+negatives)": ("partial_bce", "partial", {}),
}
#: the rows whose method has a re-balance factor γ
GAMMA_ROWS = ("+γ", "+γ+α", "PU-MLC (+mixup)", "PU-MLC + LgConv")
ORACLE = "full labels (oracle)"
PU, PBCE, CONTROL = "PU-MLC", "partial BCE", "partial BCE, missed → unknown"
#: paper's COCO / VOC values of (α, γ) (paper and code); the chapter uses COCO's
PAPER_PRESETS = {"coco": {"alpha": 1.0, "gamma": 0.55}, "voc": {"alpha": 2.0, "gamma": 0.85}}
#: paper Table I, COCO / VOC 2007, mAP at 10 % and 50 % known labels
PAPER = {"PU-MLC (+mixup)": {0.1: (75.7, 88.0), 0.5: (82.0, 92.4)},
         "partial BCE (+negatives)": {0.1: (61.6, 80.7), 0.5: (77.2, 91.2)}}


@dataclass(frozen=True)
class PUDesign:
    profile: str
    epochs: int
    seeds: Tuple[int, ...]
    #: proportions with a full ladder (the sweep's p without one gets PU-MLC and partial BCE
    #: from the sweep's clean cell)
    proportions: Tuple[float, ...]
    sweep_p: float
    fn_rates: Tuple[float, ...]
    #: γ values tried for PU-MLC at every noise level (selected on clean validation mAP)
    gamma_grid: Tuple[float, ...]
    #: γ of the ladder at p = 0.1 (the paper's COCO value for 10 %)
    paper_gamma: float = 0.55
    #: the key comparison (PU-MLC vs partial BCE on the ladder, :data:`KEY_ROWS`) runs on these
    key_seeds: Tuple[int, ...] = ()
    #: epochs of the vPU / PU-MLC rows (:data:`PU_METHODS`; None: :attr:`epochs`). They learn
    #: slowly: see :data:`PU_EPOCHS`
    pu_epochs: int | None = None

    def epochs_of(self, method: str) -> int:
        """The epochs a run of ``method`` trains in this design."""
        return self.pu_epochs if (method in PU_METHODS and self.pu_epochs) else self.epochs

    def seeds_of(self, label: str) -> Tuple[int, ...]:
        """A ladder row's seeds: the key rows on the key seeds (which start with :attr:`seeds`)."""
        return self.key_seeds if label in KEY_ROWS and len(self.key_seeds) > len(self.seeds) else self.seeds


#: the methods of the vPU family (the ladder's PU rows and the γ grid), which train
#: :attr:`PUDesign.pu_epochs`
PU_METHODS = ("vpu_plain", "pu_mlc_gamma", "pu_mlc_gamma_alpha", "pu_mlc")
#: their epochs per profile where they differ from the profile's. Under cpu at the profile's 36
#: epochs every PU-MLC-family run at γ = 0.55 still gained 0.67-1.24 mAP over its last quarter
#: (measured 2026-11-23, notebook 06); a probe of PU-MLC at p = 0.1, seed 0, gave test mAP 80.5
#: at 36 epochs (not converged), 84.1 at 48 (gain 0.82), 86.5 at 60 (0.99) and 89.1 at 96
#: (converged, gain -0.08). In the 2026-11-25 cold series 6 of the 20 PU-MLC runs at 96 epochs
#: still counted as climbing (gains 0.50-1.20): on the noisy-negative rows the last 12 epochs were
#: flat within 0.2 mAP, but the rise came inside the last quarter (epochs 73-96). 128 epochs
#: (a third more, as for the profile) puts that rise before the last quarter.
PU_EPOCHS = {"cpu": 128}

#: the key comparison's ladder rows and its seeds per profile
KEY_ROWS = ("PU-MLC (+mixup)", "partial BCE (+negatives)", ORACLE)
KEY_SEEDS = {"smoke": 2, "cpu": 5, "gpu": 5}
#: every cell's seeds per profile (every claim of the chapter pairs five under cpu and gpu)
CELL_SEEDS = {"smoke": 3, "cpu": 5, "gpu": 5}


def chapter_design(profile="cpu") -> PUDesign:
    P = as_profile(profile)
    cells = tuple(P.seeds[:CELL_SEEDS.get(design_name(P), 3)])
    key = tuple(P.seeds[:KEY_SEEDS.get(design_name(P), 3)])
    if design_name(P) == "smoke":
        return PUDesign(P.name, P.epochs, cells, (0.1,), 0.5, (0.0, 0.1), (0.0, 0.55),
                        key_seeds=key, pu_epochs=PU_EPOCHS.get(P.name, P.epochs))
    if design_name(P) == "gpu":  # gpu and gpu_shape
        return PUDesign(P.name, P.epochs, cells, (0.1, 0.5), 0.5, (0.0, 0.05, 0.1, 0.15),
                        (0.0, 0.25, 0.55), key_seeds=key, pu_epochs=PU_EPOCHS.get(P.name, P.epochs))
    # cpu: two noise levels (clean and fn = 0.1, which flips ~46 % of the positives at p = 0.5)
    # keep the sweep's cost within the series' budget; gpu adds 0.05 and 0.15
    return PUDesign(P.name, P.epochs, cells, (0.1,), 0.5, (0.0, 0.1), (0.0, 0.55),
                    key_seeds=key, pu_epochs=PU_EPOCHS.get(P.name, P.epochs))


def regime_of(family: str, p: float):
    return ("positives_only", {"p": p}) if family == "pu" else ("known_proportion", {"p": p})


def _noisy(d: PUDesign, fn: float, missed: str = "negative"):
    params = {"p": d.sweep_p, "fn_rate": float(fn)}
    return "noisy_negatives", (params if missed == "negative" else params | {"missed": missed})


def _row_spec(P, d: PUDesign, label: str, p: float, seed: int, gamma: float | None):
    method, family, model = LADDER[label]
    regime, params = regime_of(family, p)
    hp = {"gamma": float(gamma)} if label in GAMMA_ROWS and gamma is not None else {}
    extra = {"model_kwargs": dict(P.model_kwargs) | model} if model else {}
    return P.spec(method, hp, regime, params, seed=seed, epochs=d.epochs_of(method), **extra)


def ladder_specs(profile="cpu", design: PUDesign | None = None, gamma_at_sweep_p: float | None = None,
                 ) -> Dict[str, Dict[str, List]]:
    """``{"p=0.1": {row: [RunSpec per seed]}, ...}`` (the oracle included). At the sweep's
    proportion the γ rows take ``gamma_at_sweep_p`` (the validation-chosen γ; None leaves them
    out); elsewhere the paper's γ."""
    P = as_profile(profile)
    d = design or chapter_design(P)
    out = {}
    for p in d.proportions:
        at_sweep = p == d.sweep_p
        gamma = gamma_at_sweep_p if at_sweep else d.paper_gamma
        rows = {label: [_row_spec(P, d, label, p, s, gamma) for s in d.seeds_of(label)] for label in LADDER
                if not (at_sweep and label in GAMMA_ROWS and gamma is None)}
        rows[ORACLE] = [P.spec("full", {}, seed=s, epochs=d.epochs) for s in d.seeds_of(ORACLE)]
        out[f"p={p}"] = rows
    return out


def gamma_specs(profile="cpu", design: PUDesign | None = None) -> Dict[Tuple[float, float], List]:
    """``{(fn_rate, γ): [RunSpec per seed]}``: PU-MLC at the sweep's proportion, every noise
    level × every γ of the grid."""
    P = as_profile(profile)
    d = design or chapter_design(P)
    out = {}
    for fn in d.fn_rates:
        regime, params = _noisy(d, fn)
        for g in d.gamma_grid:
            out[(float(fn), float(g))] = [P.spec("pu_mlc", {"gamma": float(g)}, regime, params, seed=s,
                                                 epochs=d.epochs_of("pu_mlc")) for s in d.seeds]
    return out


def baseline_specs(profile="cpu", design: PUDesign | None = None) -> Dict[Tuple[str, float], List]:
    """``{(PBCE or CONTROL, fn_rate): [RunSpec per seed]}``: partial BCE on the noisy labels and
    on the control (the missed positives reported unknown; at fn_rate 0 the two are the same
    labels, so the control there is the noisy cell)."""
    P = as_profile(profile)
    d = design or chapter_design(P)
    out = {}
    for fn in d.fn_rates:
        for label, missed in ((PBCE, "negative"), (CONTROL, "unknown")):
            if label == CONTROL and fn == 0:
                continue
            regime, params = _noisy(d, fn, missed)
            out[(label, float(fn))] = [P.spec("partial_bce", {}, regime, params, seed=s, epochs=d.epochs)
                                       for s in d.seeds]
    return out


def run_count(profile="cpu") -> Dict[str, int]:
    """How many runs the design asks the store for, by part (the oracle counted apart: chapter
    01 trains the same runs)."""
    P = as_profile(profile)
    d = chapter_design(P)
    ladder = ladder_specs(P, d, gamma_at_sweep_p=d.paper_gamma)
    rows = sum(len(v) for rows in ladder.values() for k, v in rows.items() if k != ORACLE)
    if d.sweep_p in d.proportions:  # PU-MLC and partial BCE there are the sweep's clean cells
        rows -= 2 * len(d.seeds)
    out = {"ladder": rows, "oracle (shared)": len(d.seeds_of(ORACLE)),
           "γ selection": sum(len(v) for v in gamma_specs(P, d).values()),
           "partial BCE sweep + control": sum(len(v) for v in baseline_specs(P, d).values())}
    out["total"] = sum(out.values())
    return out


def select_gammas(gamma_runs, metric: str = "val_mAP") -> Dict[float, float]:
    """``{fn_rate: γ}``: at each noise level the γ with the best mean validation mAP over seeds
    (best-val epoch; ties: the smaller γ). The test split plays no part."""
    out = {}
    for fn in sorted({fn for fn, _ in gamma_runs}):
        scores = {g: float(np.mean([r.best[metric] for r in runs]))
                  for (f, g), runs in gamma_runs.items() if f == fn}
        out[fn] = max(sorted(scores), key=lambda g: scores[g])
    return out


def run(profile="cpu", seed: int = 0):
    """``(design, splits at the first proportion, {"p=…": {row: runs}}, sweep, gammas)``.

    ``sweep`` is ``{fn_rate: {PU: runs, PBCE: runs, CONTROL: runs}}`` (PU-MLC with the γ chosen
    at that noise level), ``gammas`` is ``{(fn_rate, γ): runs}``. The ladder at the sweep's
    proportion (gpu) runs its γ rows with the γ chosen at fn_rate 0; PU-MLC and partial BCE there
    are the sweep's clean cells (``noisy_negatives(p, 0)`` has the ``known_proportion(p)`` mask,
    so PU-MLC reads the positives of ``positives_only(p)``: the same runs, not trained twice)."""
    P = as_profile(profile)
    d = chapter_design(P)
    sweep_key = f"p={d.sweep_p}"
    first = ladder_specs(P, d, gamma_at_sweep_p=None)
    if sweep_key in first:  # the sweep's clean cells stand in for these two rows
        for label in ("PU-MLC (+mixup)", "partial BCE (+negatives)"):
            first[sweep_key].pop(label, None)
    flat = {("ladder", key, label): specs for key, rows in first.items() for label, specs in rows.items()}
    flat |= {("gamma",) + k: v for k, v in gamma_specs(P, d).items()}
    flat |= {("base",) + k: v for k, v in baseline_specs(P, d).items()}
    done = ensure_grid(flat, label="06 PU-MLC")  # one pass: one progress estimate
    ladders: Dict[str, Dict[str, List]] = {}
    gammas, base = {}, {}
    for k, runs in done.items():
        if k[0] == "ladder":
            ladders.setdefault(k[1], {})[k[2]] = runs
        elif k[0] == "gamma":
            gammas[(k[1], k[2])] = runs
        else:
            base[(k[1], k[2])] = runs
    chosen = select_gammas(gammas)
    sweep = {fn: {PU: gammas[(fn, chosen[fn])], PBCE: base[(PBCE, fn)],
                  CONTROL: base[(CONTROL, fn)] if fn else base[(PBCE, fn)]} for fn in sorted(chosen)}
    if 0.0 in sweep:
        clean = {"PU-MLC (+mixup)": sweep[0.0][PU], "partial BCE (+negatives)": sweep[0.0][PBCE]}
        if sweep_key in ladders:  # the γ rows with the validation-chosen γ
            rest = ladder_specs(P, d, gamma_at_sweep_p=chosen[0.0])[sweep_key]
            todo = {label: rest[label] for label in GAMMA_ROWS if label != "PU-MLC (+mixup)"}
            ladders[sweep_key] |= ensure_grid(todo, label="06 PU-MLC, γ rows at the sweep's p")
            ladders[sweep_key] |= clean
            ladders[sweep_key] = {label: ladders[sweep_key][label] for label in list(LADDER) + [ORACLE]}
        else:
            ladders[sweep_key] = clean
    splits = splits_for(P, "positives_only", {"p": d.proportions[0]}, seed)
    return d, splits, ladders, sweep, gammas


# -- the noise, counted -------------------------------------------------------------------------
def noise_counts(Y, observed) -> Dict[str, float]:
    """What a noisy-negative label matrix does to the positives: ``flipped`` = true positives
    reported negative, their share of all true positives, the observed positives left, and
    false negatives per observed positive (what partial BCE reads as negatives vs positives)."""
    Y, obs = np.asarray(Y), np.asarray(observed)
    positives = int((Y == 1).sum())
    flipped = int(((Y == 1) & (obs == NEG)).sum())
    kept = int((obs == POS).sum())
    negatives = int((obs == NEG).sum())
    return {"share of true positives reported negative": flipped / positives,
            "false negatives per observed positive": flipped / kept if kept else math.nan,
            "false share of observed negatives": flipped / negatives if negatives else math.nan,
            "observed positives": kept, "false negatives": flipped}


def noise_by_seed(profile="cpu", design: PUDesign | None = None) -> Dict[float, Dict[int, Dict[str, float]]]:
    """``{fn_rate: {seed: noise_counts}}`` of the sweep's training labels, computed from each
    seed's true label matrix with the regime the runs use (``make_splits`` applies
    ``labels.regime(name, **params)(Y_train, seed=seed)``)."""
    P = as_profile(profile)
    d = design or chapter_design(P)
    out: Dict[float, Dict[int, Dict[str, float]]] = {}
    for s in d.seeds:
        Y = splits_for(P, *_noisy(d, 0.0), seed=s).train.labels.numpy()
        for fn in d.fn_rates:
            name, params = _noisy(d, fn)
            out.setdefault(float(fn), {})[s] = noise_counts(Y, make_regime(name, **params)(Y, seed=s))
    return out


def noise_table(noise):
    """Mean over seeds of :func:`noise_counts` per fn_rate (the sweep's axis, stated honestly)."""
    import pandas as pd

    frame = pd.DataFrame({fn: pd.DataFrame(by_seed_).T.mean() for fn, by_seed_ in noise.items()}).T
    frame.index.name = "fn_rate (share of observed negatives)"
    return frame


# -- tables -------------------------------------------------------------------------------------
def gamma_table(gammas, metric: str = "val_mAP"):
    """Validation and test mAP of PU-MLC per (fn_rate, γ) (mean over seeds) and the selection."""
    import pandas as pd

    chosen = select_gammas(gammas, metric)
    rows = {(fn, g): {"val mAP": float(np.mean([r.best[metric] for r in runs])),
                      "test mAP": float(np.mean([r.best["test_mAP"] for r in runs])),
                      "selected": "✓" if chosen[fn] == g else ""} for (fn, g), runs in sorted(gammas.items())}
    frame = pd.DataFrame(rows).T
    frame.index.names = ["fn_rate", "γ"]
    return frame


def _cell(values) -> str:
    v = np.asarray(values, dtype=float)
    return f"{v.mean():.1f}" + (f" ± {v.std(ddof=1):.1f}" if len(v) > 1 else "")


def ladder_table(ladders, metric: str = "test_mAP"):
    """One row per method, one column per proportion: mean ± sd over seeds, and the paper's COCO /
    VOC numbers where it has them."""
    import pandas as pd

    rows: Dict[str, Dict[str, str]] = {}
    for key, results in ladders.items():
        p = float(key.split("=")[1])
        for label, runs in results.items():
            rows.setdefault(label, {})[f"{key} (ours)"] = _cell([r.best[metric] for r in runs])
            paper = PAPER.get(label, {}).get(p)
            rows[label][f"{key} paper COCO / VOC"] = "—" if paper is None else f"{paper[0]} / {paper[1]}"
    return pd.DataFrame(rows).T.fillna("—")


def sweep_table(sweep, noise, metric: str = "test_mAP"):
    """Indexed by fn_rate: the share of true positives reported negative (mean over seeds), then
    test mAP (mean and sd over seeds) of PU-MLC, partial BCE and the control, and the paired
    difference PU-MLC − partial BCE (mean and sd over seeds)."""
    import pandas as pd

    rows = {}
    for fn, cells in sweep.items():
        row = {"positives reported negative": float(np.mean(
            [c["share of true positives reported negative"] for c in noise[fn].values()]))}
        for label in (PU, PBCE, CONTROL):
            v = list(by_seed(cells[label], metric).values())
            row[label], row[f"{label} sd"] = float(np.mean(v)), float(np.std(v, ddof=1)) if len(v) > 1 else math.nan
        diff = _paired(cells[PU], cells[PBCE], metric)
        row["PU-MLC − partial BCE"] = float(np.mean(list(diff.values())))
        row["PU-MLC − partial BCE sd"] = float(np.std(list(diff.values()), ddof=1)) if len(diff) > 1 else math.nan
        rows[fn] = row
    frame = pd.DataFrame(rows).T.sort_index()
    frame.index.name = "fn_rate"
    return frame


def _paired(a_runs, b_runs, metric: str = "test_mAP") -> Dict[int, float]:
    a, b = by_seed(a_runs, metric), by_seed(b_runs, metric)
    return {s: a[s] - b[s] for s in sorted(set(a) & set(b))}


def decomposition(sweep, metric: str = "test_mAP", as_text: bool = True):
    """What noisy negatives cost partial BCE, per noise level, paired by seed (mean ± sd):
    ``lost positives`` = clean (fn 0) − control, ``wrong negatives`` = control − noisy; the two
    add up to the whole drop clean − noisy. ``as_text=False``: the means over seeds, as numbers."""
    import pandas as pd

    clean = sweep[min(sweep)][PBCE]
    rows = {}
    for fn, cells in sorted(sweep.items()):
        if fn == min(sweep):
            continue
        parts = {"lost positives (clean − control)": _paired(clean, cells[CONTROL], metric),
                 "wrong negatives (control − noisy)": _paired(cells[CONTROL], cells[PBCE], metric),
                 "whole drop (clean − noisy)": _paired(clean, cells[PBCE], metric)}
        rows[fn] = {k: _cell(list(v.values())) if as_text else float(np.mean(list(v.values())))
                    for k, v in parts.items()}
    frame = pd.DataFrame(rows).T
    frame.index.name = "fn_rate"
    return frame


def _cross(x, y) -> Tuple[float, str]:
    """First sign change of y over x (linear interpolation): (x, "") or (nan, reason)."""
    for i in range(len(x) - 1):
        if y[i] == 0:
            return float(x[i]), ""
        if y[i] * y[i + 1] < 0:
            return float(x[i] + (x[i + 1] - x[i]) * (-y[i]) / (y[i + 1] - y[i])), ""
    if len(y) and y[-1] == 0:
        return float(x[-1]), ""
    side = "above" if np.all(np.asarray(y) > 0) else "below"
    return math.nan, f"no crossing on the sweep: PU-MLC {side} partial BCE at every noise level"


def crossings(sweep, noise, metric: str = "test_mAP"):
    """Per seed (and for the mean curves): where PU-MLC − partial BCE changes sign, as fn_rate
    and as the share of true positives reported negative (that seed's labels); NaN with the
    reason when the curves do not cross on the sweep."""
    import pandas as pd

    fns = sorted(sweep)
    diffs = {fn: _paired(sweep[fn][PU], sweep[fn][PBCE], metric) for fn in fns}
    share = "share of true positives reported negative"
    rows = {}
    seeds = sorted(set.intersection(*(set(v) for v in diffs.values())))
    for s in seeds + ["mean"]:
        y = [diffs[fn][s] if s != "mean" else float(np.mean(list(diffs[fn].values()))) for fn in fns]
        xs = [noise[fn][s][share] if s != "mean" else float(np.mean([c[share] for c in noise[fn].values()]))
              for fn in fns]
        at_fn, why = _cross(fns, y)
        at_share, _ = _cross(xs, y)
        rows[s] = {"fn_rate": at_fn, "positives reported negative": at_share, "note": why}
    frame = pd.DataFrame(rows).T
    frame.index.name = "seed"
    return frame


def temperature_curves(runs):
    """DataFrame (epoch x class) of the per-class temperature T_c (mean over the epoch's batches)
    of the first run."""
    import pandas as pd

    hist = runs[0].history
    classes = sorted(int(k[12:-1]) for k in hist[0] if k.startswith("temperature["))
    return pd.DataFrame([[row[f"temperature[{c}]"] for c in classes] for row in hist],
                        index=pd.Index([row["epoch"] for row in hist], name="epoch"), columns=classes)


def training_differences(profile="cpu"):
    """What differs from the paper's training (its code, TAKELAMAG/PU-MLC; the differences are listed in :mod:`mlpl_lab.methods.pu_mlc`) and why,
    with this profile's settings."""
    import pandas as pd

    from ..engine.train import TrainConfig

    P = as_profile(profile)
    t = TrainConfig(**{k: v for k, v in P.train_settings().items() if k in TrainConfig.__dataclass_fields__})
    d = chapter_design(P)
    rows = [
        ("backbone and head", "ResNet-101 (ImageNet, 448 px) + SSGRL semantic decoupling (GloVe) + gated GNN",
         f"{P.model} + linear head",
         "the lab's shared model; the paper credits PU-MLC to the loss and LgConv, not to the head"),
        ("trained parameters", "LgConv branches + layer4 + head; every BatchNorm frozen (fix_bn)",
         "every parameter, BatchNorm in training mode",
         "every chapter fine-tunes all of the lab's pretrained backbone, so the rows of every chapter "
         "differ only in the method; the paper's partial fine-tuning is the option trainable='paper' "
         "(not run in any profile)"),
        ("optimiser", "Adam, weight decay 1e-4", f"{t.optimizer}, weight decay {t.weight_decay:g}",
         "one optimiser for every chapter, so rows differ only in the method"),
        ("LR schedule", "OneCycle over 80 epochs, stopped at 41 (COCO) / 56 (VOC)", t.lr_schedule,
         "the profile's schedule for every method"),
        ("epochs", "80 planned (OneCycle), stopped at 41 / 56",
         f"{d.epochs_of('pu_mlc')} for the vPU / PU-MLC rows, {d.epochs} for AN, partial BCE and the oracle",
         "set so each row's validation curve can flatten (PU_EPOCHS records the measurement behind it)"),
        ("EMA", "0.9997 (COCO); reports max(raw, EMA)", "none (option ema_decay)",
         "the best of two models on the test set is an oracle choice"),
        ("model selection", "best test mAP over epochs", "test mAP at the best clean-validation epoch",
         "the test split is not used to choose"),
        ("partial BCE", "Durand et al. (CVPR 2019): per image, the sum over its known labels × g(p_y) / C, "
         "g a normalising function of the image's known share p_y",
         "a plain mean over the known entries of the batch",
         "one form for every chapter; at a fixed p the known share per image varies little, so the two "
         "differ mostly by a constant factor, which Adam absorbs"),
        ("γ, α", "α 1.0 / γ 0.55 (COCO), 2.0 / 0.85 (VOC), one γ per known ratio (values not given)",
         "α 1.0; γ 0.55 at p = 0.1, chosen on validation at the sweep's p and every noise level",
         "the paper gives γ for 10 % only"),
    ]
    return pd.DataFrame(rows, columns=["what", "paper (official code)", "here", "why"]).set_index("what")


# -- claims -------------------------------------------------------------------------------------
def claims(ladders, sweep):
    """The chapter's claims table. Every claim compares two sets of runs paired by seed, and no
    two claims compare the same pair (checked)."""
    low_key = min(ladders, key=lambda k: float(k.split("=")[1]))
    low, p_low = ladders[low_key], float(low_key.split("=")[1])
    rows = [
        Claim(f"re-balancing helps at p = {p_low}: +γ beats plain vPU (the rows differ only in γ)",
              "COCO 10 %: 51.8 without the re-balance factor (Sec. III-B; full method 75.7)", "+γ", "vPU",
              low["+γ"], low["vPU"]),
        Claim(f"the adaptive temperature helps at p = {p_low}: +γ+α beats +γ",
              "— (ablation in the appendix, not in our copy)", "+γ+α", "+γ", low["+γ+α"], low["+γ"]),
        Claim(f"mixup helps at p = {p_low}: PU-MLC beats +γ+α", "— (vPU's regulariser; no PU-MLC number)",
              "PU-MLC", "+γ+α", low["PU-MLC (+mixup)"], low["+γ+α"]),
        Claim(f"LgConv helps at p = {p_low}: PU-MLC + LgConv beats PU-MLC", "— (Sec. III-D; no number in our copy)",
              "+LgConv", "PU-MLC", low["PU-MLC + LgConv"], low["PU-MLC (+mixup)"]),
    ]
    for key in sorted(ladders, key=lambda k: float(k.split("=")[1])):
        p = float(key.split("=")[1])
        paper = PAPER["PU-MLC (+mixup)"].get(p), PAPER["partial BCE (+negatives)"].get(p)
        clean = " (clean negatives)" if p != p_low else ""
        rows.append(Claim(f"PU-MLC beats partial BCE (which also reads negatives) at p = {p}{clean}",
                          f"Table I, COCO {int(p * 100)} %: {paper[0][0]} vs {paper[1][0]}; VOC {paper[0][1]} vs "
                          f"{paper[1][1]}" if None not in paper else "—",
                          "PU-MLC", "partial BCE", ladders[key]["PU-MLC (+mixup)"],
                          ladders[key]["partial BCE (+negatives)"]))
    hi = max(sweep)
    rows.append(Claim(f"with noisy negatives (fn_rate {hi}) PU-MLC beats partial BCE",
                      "the paper's premise (no number)", "PU-MLC", "partial BCE", sweep[hi][PU], sweep[hi][PBCE]))
    rows.append(Claim(f"wrong negatives cost partial BCE at fn_rate {hi}: the control (missed positives "
                      "unknown) beats the noisy labels", "the paper's premise: negatives carry the noise",
                      "control", "partial BCE", sweep[hi][CONTROL], sweep[hi][PBCE]))
    pairs = [(tuple(id(r) for r in c.a_runs), tuple(id(r) for r in c.b_runs)) for c in rows]
    unordered = [frozenset(p) for p in pairs]
    if len(set(unordered)) != len(unordered):
        raise ValueError("two claims compare the same pair of runs: one comparison, one claim")
    return claims_table(rows)


# -- what the notebook shows (the one table style, mlpl_lab.analysis.display) -------------------

def _interval_row(values, runs=()) -> Tuple[float, float, float, bool]:
    """(mean, 95 % half-width, seeds, a run did not converge) of per-seed values."""
    from ..analysis.benchmark import converged, t_interval

    mean, half, n = t_interval(values)
    return mean, half, n, converged(list(runs)) is False


def _interval_frames(cells: Dict, columns: List[str]):
    """``{row: {column: (mean, half, n, unconverged)}}`` as the four frames :func:`styled` reads."""
    import pandas as pd

    parts = [pd.DataFrame({c: {r: v[c][i] for r, v in cells.items() if c in v} for c in columns})
             .reindex(index=list(cells), columns=columns) for i in range(4)]
    return parts[0].astype(float), parts[1], parts[2], parts[3]


def ladder_view(ladders, metric: str = "test_mAP"):
    """:func:`ladder_table` as the notebook shows it: our test mAP as mean ± 95 % interval (seeds)
    with † where a run did not converge, the paper's COCO / VOC numbers, the best of each
    proportion in bold (the oracle left out)."""
    from ..analysis.display import caption, styled

    text = ladder_table(ladders, metric)
    cells: Dict[str, Dict[str, tuple]] = {}
    ours = [c for c in text.columns if c.endswith("(ours)")]
    for key, results in ladders.items():
        for label, runs in results.items():
            cells.setdefault(label, {})[f"{key} (ours)"] = _interval_row([r.best[metric] for r in runs], runs)
    mean, half, n, unconv = _interval_frames({r: cells.get(r, {}) for r in text.index}, ours)
    frame = text.copy().astype(object)
    for c in ours:
        frame[c] = mean[c]
    ref = [r for r in text.index if "oracle" in r]
    return styled(frame, caption("PU-MLC's ladder at this scale: test mAP (%) at the best clean-validation "
                                 "epoch per known proportion p, and the paper's COCO / VOC numbers where it "
                                 "has them", reference=ref, note="— not run, or no number in the paper"),
                  percent=ours, half=half, seeds=n, unconverged=unconv, reference=ref, best=ours)


def noise_view(noise_tab):
    """:func:`noise_table` as the notebook shows it."""
    from ..analysis.display import styled

    return styled(noise_tab, "The noise the sweep injects, per fn_rate (mean over seeds): the share of true "
                  "positives reported negative, false negatives per observed positive, the false share of "
                  "the observed negatives, and the observed positives and false negatives per split.",
                  digits={"observed positives": 1, "false negatives": 1}, best=False)


def gamma_view(gamma_tab):
    """:func:`gamma_table` as the notebook shows it."""
    from ..analysis.display import styled

    return styled(gamma_tab, "PU-MLC per (fn_rate, γ): validation and test mAP (%) (mean over seeds) and the γ "
                  "selected on the clean validation split (✓).", percent=["val mAP", "test mAP"], best=False)


def sweep_view(sweep, noise, metric: str = "test_mAP"):
    """:func:`sweep_table` as the notebook shows it: each method's test mAP and the paired
    difference PU-MLC − partial BCE as mean ± 95 % interval (seeds), † where a run did not
    converge; the best method of each noise level in bold."""
    import pandas as pd

    from ..analysis.display import caption, styled

    cols = [PU, PBCE, CONTROL, f"{PU} − {PBCE}"]
    cells: Dict[float, Dict[str, tuple]] = {}
    share = {}
    for fn, c in sorted(sweep.items()):
        share[fn] = float(np.mean([x["share of true positives reported negative"] for x in noise[fn].values()]))
        cells[fn] = {label: _interval_row(list(by_seed(c[label], metric).values()), c[label])
                     for label in (PU, PBCE, CONTROL)}
        cells[fn][cols[3]] = _interval_row(list(_paired(c[PU], c[PBCE], metric).values()), list(c[PU]) + list(c[PBCE]))
    mean, half, n, unconv = _interval_frames(cells, cols)
    frame = pd.concat([pd.Series(share, name="positives reported negative"), mean], axis=1)
    frame.index.name = "fn_rate"
    return styled(frame, caption("Test mAP (%) per noise level (fn_rate: the share of observed negatives that "
                                 "are true positives) and the paired difference PU-MLC − partial BCE; "
                                 "positives reported negative: the share of true positives the noise flips "
                                 "(mean over seeds)", bold="row"),
                  percent=cols, half=half, seeds=n, unconverged=unconv, axis=1,
                  reference=["positives reported negative", cols[3]])


def crossings_view(cross):
    """:func:`crossings` as the notebook shows it."""
    from ..analysis.display import styled

    return styled(cross, "Where PU-MLC − partial BCE changes sign, per seed and for the mean curves: as fn_rate "
                  "and as the share of true positives reported negative (— no crossing, the note says why).",
                  digits={"fn_rate": 3, "positives reported negative": 3}, best=False)


def decomposition_view(sweep, metric: str = "test_mAP"):
    """:func:`decomposition` as the notebook shows it: each part as mean ± 95 % interval over the
    paired seeds."""
    from ..analysis.display import caption, styled

    numbers = decomposition(sweep, metric, as_text=False)
    clean = sweep[min(sweep)][PBCE]
    cells = {}
    for fn, c in sorted(sweep.items()):
        if fn == min(sweep):
            continue
        parts = dict(zip(numbers.columns, (_paired(clean, c[CONTROL], metric), _paired(c[CONTROL], c[PBCE], metric),
                                           _paired(clean, c[PBCE], metric))))
        runs = list(clean) + list(c[CONTROL]) + list(c[PBCE])
        cells[fn] = {k: _interval_row(list(v.values()), runs) for k, v in parts.items()}
    mean, half, n, unconv = _interval_frames(cells, list(numbers.columns))
    mean.index.name = "fn_rate"
    return styled(mean, caption("What noisy negatives cost partial BCE, in test mAP points, paired by seed: the "
                                "positives lost (clean − control), the wrong negatives (control − noisy) and "
                                "the whole drop (clean − noisy)", bold=None),
                  percent=True, half=half, seeds=n, unconverged=unconv, best=False)


def differences_view(profile="cpu"):
    """:func:`training_differences` with its caption."""
    from ..analysis.display import styled

    return styled(training_differences(profile), "What differs from the paper's training (its official code) "
                  "and why, with this profile's settings.", best=False)


def design_view(design: PUDesign):
    """The chapter's design (:func:`chapter_design`) as a table of its fields."""
    from ..analysis.display import fields_table

    return fields_table(design, f"The chapter's design under the {design.profile} profile: what it trains.")
