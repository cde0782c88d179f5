"""What a notebook calls: build a profile's splits, train methods, tabulate the results.

Notebooks only import and narrate; every loop over methods or seeds lives here.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Tuple, Union

import numpy as np

from .profiles import Profile, get_profile
from .train import TrainResult, fit

#: generated scene sets are cached here, keyed by their parameters
CACHE_DIR = Path(__file__).resolve().parent.parent / "data" / "cache"

MethodSpec = Union[str, Tuple[str, Dict[str, Any]]]


def as_profile(profile: Union[str, Profile]) -> Profile:
    return get_profile(profile) if isinstance(profile, str) else profile


def build_splits(profile: Union[str, Profile], regime: str = "single_positive",
                 regime_params: Mapping[str, Any] | None = None, seed: int = 0,
                 cache: bool = True, **scene_kwargs):
    """Train/val/test scenes of ``profile``; the train labels observed under ``regime``."""
    from .data import make_splits

    p = as_profile(profile)
    kwargs = p.data_kwargs() | scene_kwargs
    return make_splits(seed=seed, regime=regime, regime_params=dict(regime_params or {}),
                       cache_dir=str(CACHE_DIR) if cache else None, **kwargs)


def run(method: MethodSpec, splits, profile: Union[str, Profile], seed: int | None = None,
        **config_overrides) -> TrainResult:
    """Train one method (a name, or ``(name, hyperparameters)``) on ``splits``."""
    from .methods import build_method

    p = as_profile(profile)
    name, hp = (method, {}) if isinstance(method, str) else method
    m = build_method(name, **hp)
    return fit(m, splits.train, splits.val, splits.test, p.train_config(seed=seed, **config_overrides))


def compare(methods: Mapping[str, MethodSpec], splits, profile: Union[str, Profile],
            seeds: Iterable[int] | None = None, **config_overrides) -> Dict[str, List[TrainResult]]:
    """Train every method for every seed of the profile: ``{label: [result per seed]}``.

    ``methods`` maps a display label to a method name or ``(name, hyperparameters)``; the
    special name ``"full"`` (the oracle) trains on the true labels of the same images.
    All labels are built first, so a typo fails before any training.
    """
    from .methods import build_method

    p = as_profile(profile)
    seeds = list(p.seeds if seeds is None else seeds)
    specs = {label: ((m, {}) if isinstance(m, str) else m) for label, m in methods.items()}
    for name, hp in specs.values():
        build_method(name, **hp)  # validate names and hyperparameters up front
    out: Dict[str, List[TrainResult]] = {}
    for label, spec in specs.items():
        out[label] = [run(spec, splits, p, seed=s, **config_overrides) for s in seeds]
    return out


def results_table(results: Mapping[str, List[TrainResult]], metrics=("test_mAP", "test_CF1", "test_OF1")):
    """A DataFrame, one row per method: each metric at the best-val epoch, mean and std over
    seeds (std is 0 with one seed), plus the best epoch."""
    import pandas as pd

    rows = []
    for label, runs in results.items():
        row: Dict[str, Any] = {"method": label}
        for m in metrics:
            vals = np.array([r.best[m] for r in runs], dtype=float)
            row[m.replace("test_", "")] = vals.mean()
            if len(vals) > 1:
                row[m.replace("test_", "") + "_std"] = vals.std(ddof=1)
        row["best_epoch"] = float(np.mean([r.best_epoch + 1 for r in runs]))
        rows.append(row)
    return pd.DataFrame(rows).set_index("method")


def best_metric(results: Mapping[str, List[TrainResult]], metric: str = "test_mAP") -> Dict[str, float]:
    """``{label: mean over seeds of metric at the best-val epoch}`` — what notebooks record."""
    return {label: float(np.mean([r.best[metric] for r in runs])) for label, runs in results.items()}


def compare_regimes(regimes: Mapping[str, Tuple[str, Dict[str, Any]]], methods: Mapping[str, MethodSpec],
                    profile: Union[str, Profile], seed: int = 0, seeds: Iterable[int] | None = None,
                    **config_overrides) -> Dict[str, Dict[str, List[TrainResult]]]:
    """``{regime label: {method label: [results]}}`` — every method under every regime.

    All regimes share the same images (only the observed train labels differ), so the
    full-label oracle (method name ``"full"``) is trained once and reused for every regime.
    Every regime and method is validated before any training.
    """
    from .labels import regime as build_regime
    from .methods import build_method

    p = as_profile(profile)
    for name, params in regimes.values():
        build_regime(name, **params)
    specs = {label: ((m, {}) if isinstance(m, str) else m) for label, m in methods.items()}
    for name, hp in specs.values():
        build_method(name, **hp)
    out: Dict[str, Dict[str, List[TrainResult]]] = {}
    oracle: Dict[str, List[TrainResult]] = {}
    for r_label, (r_name, r_params) in regimes.items():
        splits = build_splits(p, r_name, r_params, seed=seed)
        out[r_label] = {}
        for m_label, spec in specs.items():
            if spec[0] == "full" and m_label in oracle:
                out[r_label][m_label] = oracle[m_label]
                continue
            out[r_label][m_label] = compare({m_label: spec}, splits, p, seeds=seeds, **config_overrides)[m_label]
            if spec[0] == "full":
                oracle[m_label] = out[r_label][m_label]
    return out


def regimes_table(by_regime: Mapping[str, Mapping[str, List[TrainResult]]], metric: str = "test_mAP"):
    """Rows = regimes, columns = methods: ``metric`` at the best-val epoch (mean over seeds)."""
    import pandas as pd

    return pd.DataFrame({r: best_metric(res, metric) for r, res in by_regime.items()}).T
