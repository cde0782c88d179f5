"""LAC's recipe: its own network and its two stages, per profile, and the specs they make.

LAC (Xie, Xiao, Huang, NeurIPS 2022) trains the **label-query head**
(:mod:`mlpl_lab.models.label_query`) in two stages: stage 1 (``lac_plc``: PLC's pseudo-labels)
for E1 epochs, then stage 2 (``lac``: the contrastive loss and its queue) for E2 more epochs from
stage 1's best-val weights (``init_from``), with the optimiser of its paper (AdamW, weight decay
1e-2, OneCycle with a 20 % warm-up, batches of 32; the peak LR is the profile's). Chapter 05
reproduces its Table 3 with these stages and 07's LAC cells are the same runs, so the stages live
here, once (:data:`STAGES`; :func:`two_stage` reads them by the designs' one rule,
:func:`mlpl_lab.protocol.common.preset`).

Per profile (the measurements behind the epochs: the handbook, and chapter 05's ``convergence``
record):

* ``cpu``: the small CNN (the profile's width; 8 x 8 map at 32 px) with a 64-d head (FFN 2 x d,
  no dropout: dropout 0.1 and FFN 4 x d cost 2.2x per step on 2 cores for the same structure);
  batches of 32 instead of the profile's 64 (at the same cost per epoch the label-query AN
  reached 83.1 val mAP after 5 epochs against 64; ``make benchmark``, ``bench_heads.py``).
  Stage 1 raised until the key comparison's runs stop climbing (12 + 4, 20 + 6, 20 + 8, then
  28 + 12).
* ``smoke``: the same head, 2 + 1 epochs on the smoke data.
* ``gpu``: ResNet-18 cut after ``layer3`` (stride 16) at **128 px**, so the attention maps are
  8 x 8 like the cpu profile's (a full ResNet-18 at 64 px would give 2 x 2 maps, which cannot
  localise anything); the code's head sizes (d = backbone width 256, 4 heads, FFN 4 x d, dropout
  0.1); the profile's batch size; 7 + 3 epochs (the gpu profile's 10 in all), so the series fits
  an evening on one GPU.
* ``gpu_shape``: the gpu network for 1 + 1 epochs (the gpu code path, executed on a CPU).

**Where LAC is defined** (:func:`regime_defined`): LAC's valid-entry rule must never turn a known
negative into a positive. The paper only has single positive (no observed negatives); the lab's
rule for regimes that observe negatives is to mask them out (PLC leaves observed entries to L_AN,
the contrastive loss uses observed positives and unknown entries with p^w ≥ δ only;
:func:`mlpl_lab.losses.lac.plc_targets`, :func:`mlpl_lab.losses.lac.lac_valid`), so the method is
defined wherever some labels are unknown: every regime but ``full``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional

from ..core.regimes import REGIMES as REGIME_NAMES
from ..profiles import Profile
from ..runs.spec import RunSpec
from .common import as_profile
from .design import preset

_SMALL_HEAD = {"ffn_mult": 2, "dropout": 0.0}
#: LAC's network and stages per profile. ``model`` ``None``: the profile's backbone, its
#: ``model_kwargs`` updated with these; ``batch_size`` ``None``: the profile's.
STAGES: Dict[str, Dict[str, Any]] = {
    "smoke": dict(stage1_epochs=2, stage2_epochs=1, model=None,
                  model_kwargs={"head": "label_query", "head_kwargs": _SMALL_HEAD}, scene={}, batch_size=32),
    "cpu": dict(stage1_epochs=28, stage2_epochs=12, model=None,
                model_kwargs={"head": "label_query", "head_kwargs": {"d_model": 64, **_SMALL_HEAD}},
                scene={}, batch_size=32),
    "gpu": dict(stage1_epochs=7, stage2_epochs=3, model="resnet18",
                model_kwargs={"last_layer": "layer3", "head": "label_query"}, scene={"image_size": 128},
                batch_size=None),
}
STAGES["gpu_shape"] = dict(STAGES["gpu"], stage1_epochs=1, stage2_epochs=1)

#: the registered methods of the two stages: stage 1 (PLC), and LAC's own stage 2
STAGE1_METHOD, LAC_METHOD = "lac_plc", "lac"


@dataclass(frozen=True)
class TwoStage:
    """LAC's network and schedule under one profile (:func:`two_stage`)."""

    profile: Profile
    stage1_epochs: int
    stage2_epochs: int
    model: str
    model_kwargs: Dict[str, Any]
    lr: float
    scene: Dict[str, Any] = field(default_factory=dict)
    optimizer: str = "adamw"
    weight_decay: float = 1e-2
    lr_schedule: str = "onecycle"
    onecycle_pct_start: float = 0.2
    batch_size: int = 32

    def train_overrides(self, epochs: int) -> Dict[str, Any]:
        """The training settings of a run of ``epochs`` on LAC's network (every stage's)."""
        return dict(epochs=epochs, model=self.model, model_kwargs=dict(self.model_kwargs), lr=self.lr,
                    batch_size=self.batch_size,
                    optimizer=self.optimizer, weight_decay=self.weight_decay,
                    lr_schedule=self.lr_schedule, onecycle_pct_start=self.onecycle_pct_start)


def stage_fields(profile) -> Dict[str, Any]:
    """The fields of :class:`TwoStage` under ``profile``: :data:`STAGES`' row (the one rule), the
    profile's backbone and batch size where the row leaves them open, and the profile's LR."""
    P = as_profile(profile)
    lit = dict(preset(STAGES, P))
    model, kwargs = lit.pop("model"), lit.pop("model_kwargs")
    if model is None:  # the profile's backbone with LAC's head
        model, kwargs = P.model, dict(P.model_kwargs, **kwargs)
    if lit["batch_size"] is None:
        lit["batch_size"] = P.batch_size
    return dict(profile=P, model=model, model_kwargs=dict(kwargs), lr=P.lr, **lit)


def two_stage(profile) -> TwoStage:
    """LAC's network and stages under ``profile`` (:func:`stage_fields`)."""
    return TwoStage(**stage_fields(profile))


def regime_defined(regime: str, regime_params: Mapping[str, Any] | None = None) -> bool:
    """Whether LAC is defined under ``regime`` (a registered regime's name): wherever some labels
    are unknown, every regime but ``full`` (the module docstring). ``regime_params`` are accepted
    for the protocol's calling convention; no parameter of the lab's regimes changes the answer."""
    if regime not in REGIME_NAMES:
        raise ValueError(f"unknown label regime {regime!r}; valid names: {', '.join(sorted(REGIME_NAMES))}")
    return regime != "full"


def stage_spec(setup, method: str, epochs: int, seed: int, regime: str = "single_positive",
               regime_params: Mapping[str, Any] | None = None, init_from: Optional[RunSpec] = None,
               params: Mapping[str, Any] | None = None) -> RunSpec:
    """One run on LAC's network: ``method`` for ``epochs`` on ``seed`` under ``regime`` (``setup``:
    a :class:`TwoStage`, or a chapter's design with the same ``profile``, ``scene`` and
    ``train_overrides``). Refuses a regime where LAC is not defined (:func:`regime_defined`)."""
    if not regime_defined(regime, regime_params):
        raise ValueError(f"the LAC rows are not defined under regime {regime!r}: nothing is unknown, "
                         "so PLC has nothing to pseudo-label; use a partial-label regime")
    return setup.profile.spec(method, dict(params or {}), regime, dict(regime_params or {}), seed=seed,
                              scene=setup.scene, init_from=init_from, **setup.train_overrides(epochs))


def stage1(setup, seed: int, regime: str = "single_positive", regime_params=None) -> RunSpec:
    """Stage 1 of ``seed``: PLC for E1 epochs (what every stage-2 run starts from)."""
    return stage_spec(setup, STAGE1_METHOD, setup.stage1_epochs, seed, regime, regime_params)


def stage2(setup, method: str, seed: int, regime: str = "single_positive", regime_params=None,
           params: Mapping[str, Any] | None = None) -> RunSpec:
    """A stage-2 run of ``method`` on ``seed``: E2 epochs from stage 1's best-val weights."""
    return stage_spec(setup, method, setup.stage2_epochs, seed, regime, regime_params,
                      init_from=stage1(setup, seed, regime, regime_params), params=params)


def lac_spec(profile, regime: str, regime_params, seed: int, params: Mapping[str, Any] | None = None) -> RunSpec:
    """LAC's cell on ``seed``: two stages and the queue (``lac`` after ``lac_plc``), the spec of
    chapter 05's LAC row."""
    return stage2(two_stage(profile), LAC_METHOD, seed, regime, regime_params, params)


def on_own_head(profile, method: str, regime: str, regime_params, seed: int) -> RunSpec:
    """A one-stage method on LAC's network for E1 epochs (AN with LAC's head: the baseline that
    isolates LAC's loss from its head)."""
    setup = two_stage(profile)
    return stage_spec(setup, method, setup.stage1_epochs, seed, regime, regime_params)
