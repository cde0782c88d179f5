"""A spec checked before anything trains: :func:`validate` fails on an unknown method,
hyperparameter, regime or setting, or on impossible scene parameters, so a typo in a grid stops
:func:`mlpl_lab.runs.ensure.ensure` before its first run; :func:`config_of` is a spec's training
configuration.
"""
from __future__ import annotations

from ..core.labels import check_seed
from ..core.regimes import regime as build_regime
from ..data.scenes import check_scene_data
from ..engine.train import TrainConfig
from ..methods import build_method
from .spec import RunSpec


def config_of(spec: RunSpec, **runtime):
    """The :class:`~mlpl_lab.engine.train.TrainConfig` of a spec (``runtime``: device, progress, ...)."""
    fields = dict(spec.train)
    if "probes" in fields:
        fields["probes"] = tuple(fields["probes"])
    return TrainConfig(**fields, seed=spec.seed, **runtime)


def validate(spec: RunSpec) -> None:
    """Fail now, before any training, on an unknown method, hyperparameter, regime or setting, or
    on impossible scene parameters (:func:`mlpl_lab.data.scenes.check_scene_data`)."""
    check_seed(spec.seed, "seed")
    if spec.data.get("dataset", "scenes") == "scenes":
        check_scene_data(spec.data)
    method = build_method(spec.method, **spec.method_params)
    if getattr(method, "requires_init_from", False) and spec.init_from is None:
        raise ValueError(f"method {spec.method!r} is a second stage: give its spec init_from=<the "
                         "stage-1 RunSpec> (Profile.spec(..., init_from=stage1))")
    head = getattr(method, "required_head", None)
    if head is not None and spec.train.get("model_kwargs", {}).get("head", "linear") != head:
        raise ValueError(f"method {spec.method!r} needs the {head!r} head; add "
                         f"model_kwargs={{'head': {head!r}}} to the spec's training settings")
    build_regime(spec.regime, **spec.regime_params)
    config_of(spec).validate()
    if spec.init_from is not None:
        validate(spec.init_from)
        first = build_method(spec.init_from.method, **spec.init_from.method_params)
        if getattr(method, "init_weights", "raw") != "raw" and not first.keeps_ema():
            raise ValueError(f"method {spec.method!r} starts from the better of its first stage's raw "
                             f"and EMA weights, but {spec.init_from.method!r} keeps no EMA: give the "
                             "first stage an ema_decay, or start from its raw weights")
    if spec.backbone_from is not None:
        validate(spec.backbone_from)
