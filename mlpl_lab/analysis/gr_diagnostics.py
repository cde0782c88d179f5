"""Diagnostics of GR Loss that need the true labels (the embedded data keeps them).

* :func:`fn_rate_by_confidence` — GR Loss Appendix E.3 / Fig. 5: split [0, 1] into buckets
  of the model's confidence p and, among the *unknown* training labels of each bucket, the
  fraction that are hidden positives, FN / (FN + TN). Assumption 1 says this is flat before
  training; Assumption 2 that it increases with p after training, like k̂(p) (Eq. 6).
* :func:`separation` — Fig. 3a: the Wasserstein-1 distance between the confidence
  distributions of hidden positives and true negatives among the unknown labels (larger =
  the model tells them apart better).
* :class:`SeparationTracker` — wraps any method and records both per epoch during training
  (a ``ctx.predict_train()`` pass after every epoch, plus one before the first), so GR and AN
  can be compared epoch by epoch; :func:`compare_tracked` trains a dict of methods that way.

Where we measure: the paper uses the *validation* set's unannotated labels (its val labels
are single-positive); our validation and test sets are fully labelled, so we measure on the
unknown labels of the *training* set — the very labels the loss treats with k̂ and v. The
history rows of the training loop only carry ``training_step`` logs, so the per-epoch values
live on the tracker (``result.method.separation``), read with :func:`separation_curve`.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping

import numpy as np
import torch

from .. import metrics
from ..methods import Method, build_method


def _as_tensors(probs, observed, true_labels):
    probs = torch.as_tensor(probs).detach().float().cpu()
    observed = torch.as_tensor(observed).cpu()
    true_labels = torch.as_tensor(true_labels).cpu()
    if not (probs.shape == observed.shape == true_labels.shape) or probs.ndim != 2:
        raise ValueError(f"probs {tuple(probs.shape)}, observed {tuple(observed.shape)} and "
                         f"true_labels {tuple(true_labels.shape)} must all be the same (N, C)")
    return probs, observed, true_labels


def unknown_confidences(probs, observed, true_labels):
    """Confidences of the unknown labels (observed == -1), split into hidden positives
    (true label 1) and true negatives (true label 0): two 1-D numpy arrays."""
    probs, observed, true_labels = _as_tensors(probs, observed, true_labels)
    unk = observed == -1
    hidden = probs[unk & (true_labels == 1)].numpy()
    negatives = probs[unk & (true_labels == 0)].numpy()
    return hidden, negatives


def fn_rate_by_confidence(probs, observed, true_labels, bins: int = 20) -> Dict[str, np.ndarray]:
    """FN / (FN + TN) among unknown labels per confidence bucket (GR Loss Fig. 5).

    Returns ``{"edges", "centers", "rate", "count"}``; ``rate`` is NaN for an empty bucket.
    The paper uses 100 buckets on large validation sets; 20 suit our few thousand images.
    """
    if not isinstance(bins, int) or bins < 1:
        raise ValueError(f"bins must be a positive integer, got {bins!r}")
    hidden, negatives = unknown_confidences(probs, observed, true_labels)
    edges = np.linspace(0.0, 1.0, bins + 1)
    fn, _ = np.histogram(hidden, bins=edges)
    tn, _ = np.histogram(negatives, bins=edges)
    count = fn + tn
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(count > 0, fn / np.maximum(count, 1), np.nan)
    return {"edges": edges, "centers": (edges[:-1] + edges[1:]) / 2, "rate": rate, "count": count}


def separation(probs, observed, true_labels) -> float:
    """W1 distance between hidden-positive and true-negative confidences (GR Loss Fig. 3a).
    NaN when either group is empty (e.g. fully observed labels)."""
    hidden, negatives = unknown_confidences(probs, observed, true_labels)
    if hidden.size == 0 or negatives.size == 0:
        return float("nan")
    return metrics.wasserstein_1d(hidden, negatives)


def label_frequency(observed, true_labels) -> float:
    """a = P(s = 1 | y = 1), the fraction of true positives that are observed (SCAR constant
    of Eq. 6); 1/1.46 on VOC in the paper's Fig. 5c."""
    observed = torch.as_tensor(observed)
    true_labels = torch.as_tensor(true_labels)
    n_true = int((true_labels == 1).sum())
    if n_true == 0:
        raise ValueError("label_frequency: there are no true positives")
    return int(((observed == 1) & (true_labels == 1)).sum()) / n_true


def k_from_assumption(p, a: float) -> np.ndarray:
    """k(x) = (1 - a)·p / (1 - a·p) (Eq. 6): what k̂(p) should approach at the end of
    training if p were the calibrated posterior and labels were missing completely at random."""
    p = np.asarray(p, dtype=np.float64)
    return (1 - a) * p / (1 - a * p)


class SeparationTracker(Method):
    """Wrap ``inner`` (a Method) and record, on the training set's unknown labels,

    * ``separation``: [W1 before training, after epoch 1, ..., after epoch T];
    * ``start_probs`` / ``end_probs``: train-set probabilities before the first and after the
      last epoch (for :func:`fn_rate_by_confidence`).

    Every hook delegates to ``inner``; the extra ``predict_train`` passes run in eval mode and
    draw no random numbers, so the wrapped run trains exactly as it would alone.
    """

    def __init__(self, inner: Method):
        if not isinstance(inner, Method):
            raise TypeError(f"SeparationTracker wraps a Method, got {type(inner).__name__}")
        super().__init__()
        self.inner = inner
        self.name = inner.name
        self.views = inner.views
        self.separation: List[float] = []
        self.start_probs = None
        self.end_probs = None

    def setup(self, ctx):
        if ctx.train_true_labels is None:
            raise ValueError("SeparationTracker needs the true training labels (a dataset with "
                             "a .labels attribute, e.g. the embedded scenes)")
        self.ctx = ctx
        self.inner.setup(ctx)
        self.observed = ctx.train_observed.clone()
        self.truth = ctx.train_true_labels.clone()

    def _record(self):
        probs = self.ctx.predict_train()
        self.separation.append(separation(probs, self.observed, self.truth))
        return probs

    # -- delegated hooks ---------------------------------------------------------------
    def networks(self):
        return self.inner.networks()

    def optimizers(self):
        return self.inner.optimizers()

    def on_epoch_start(self, epoch):
        if epoch == 0 and self.start_probs is None:
            self.start_probs = self._record()
        self.inner.on_epoch_start(epoch)

    def training_step(self, batch, epoch):
        return self.inner.training_step(batch, epoch)

    def on_epoch_end(self, epoch):
        self.inner.on_epoch_end(epoch)
        self.end_probs = self._record()

    def predict_logits(self, x):
        return self.inner.predict_logits(x)

    def predict_proba(self, x):
        return self.inner.predict_proba(x)

    def extra_predictions(self, x):
        return self.inner.extra_predictions(x)

    def extra_state(self):
        return {"inner": self.inner.extra_state(), "separation": list(self.separation),
                "start_probs": self.start_probs, "end_probs": self.end_probs}

    def load_extra_state(self, state):
        self.inner.load_extra_state(state["inner"])
        self.separation = list(state["separation"])
        self.start_probs, self.end_probs = state["start_probs"], state["end_probs"]

    def train(self, mode: bool = True):
        self.inner.train(mode)

    def __getattr__(self, item):
        # reach the wrapped method's own state (labels, schedules) through the tracker;
        # only called for attributes the tracker itself does not have
        inner = self.__dict__.get("inner")
        if inner is None:
            raise AttributeError(item)
        return getattr(inner, item)

    def __repr__(self) -> str:
        return f"SeparationTracker({self.inner!r})"


def compare_tracked(methods: Mapping[str, Any], splits, profile, track=None, seeds=None,
                    **config_overrides) -> Dict[str, list]:
    """Like :func:`mlpl_lab.experiment.compare` (``{label: [TrainResult per seed]}``) but the
    methods whose label is in ``track`` (default: all) run inside a :class:`SeparationTracker`.
    Names and hyperparameters are validated before any training."""
    from ..experiment import as_profile
    from ..train import fit

    p = as_profile(profile)
    seeds = list(p.seeds if seeds is None else seeds)
    specs = {label: ((m, {}) if isinstance(m, str) else m) for label, m in methods.items()}
    track = set(specs) if track is None else set(track)
    unknown = track - set(specs)
    if unknown:
        raise ValueError(f"track names {sorted(unknown)} are not among the methods {list(specs)}")
    for name, hp in specs.values():
        build_method(name, **hp)
    out: Dict[str, list] = {}
    for label, (name, hp) in specs.items():
        runs = []
        for s in seeds:
            m = build_method(name, **hp)
            if label in track:
                m = SeparationTracker(m)
            runs.append(fit(m, splits.train, splits.val, splits.test, p.train_config(seed=s, **config_overrides)))
        out[label] = runs
    return out


def separation_curve(result) -> List[float]:
    """[W1 before training, after epoch 1, ...] of a run trained inside a SeparationTracker."""
    method = result.method
    if not isinstance(method, SeparationTracker):
        raise ValueError("this run was not tracked; train it with compare_tracked(..., track=[label])")
    return list(method.separation)


def separation_table(results: Mapping[str, list]) -> Dict[str, List[float]]:
    """``{label: mean W1 curve over seeds}`` for the tracked methods of ``results``."""
    out = {}
    for label, runs in results.items():
        if runs and isinstance(runs[0].method, SeparationTracker):
            out[label] = np.mean([separation_curve(r) for r in runs], axis=0).tolist()
    return out


def assumption_check(result, bins: int = 20) -> Dict[str, Dict[str, np.ndarray]]:
    """FN-rate-per-bucket before and after training of one tracked run (Fig. 5)."""
    method = result.method
    if not isinstance(method, SeparationTracker) or method.start_probs is None:
        raise ValueError("assumption_check needs a run trained inside a SeparationTracker")
    return {"start": fn_rate_by_confidence(method.start_probs, method.observed, method.truth, bins),
            "end": fn_rate_by_confidence(method.end_probs, method.observed, method.truth, bins)}
