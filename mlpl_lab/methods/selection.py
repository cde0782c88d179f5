"""Pure selection functions of the co-training family, and what a selection really removes.

Everything here is a function of tensors: no networks, no optimiser, no global state, so the
tests can check each rule against a hand count. The methods in :mod:`.cls` (label selection)
and :mod:`.coteaching` (sample selection) call them once per mini-batch.

Schedules
---------
* CLS (Lyu et al., AAAI 2025, Alg. 1 step 12)::

      R(e) = 1 - min(e / E_k * tau, tau)                                  (R_h with tau_h, R_l with tau_l)

  ``e`` is the number of **completed** epochs: Alg. 1 updates R *after* each epoch, so the
  first epoch (the loop's 0-based epoch 0) runs with R = 1 and selects nothing.
* Co-teaching (Han et al., NeurIPS 2018, Alg. 1; reused by Co-teaching+ and JoCoR), the
  fraction of samples *forgotten* in epoch ``e`` (completed epochs, as above)::

      forget(e) = tau * min(e**c / T_k, 1)           schedule="paper" (default; c = 1 in all papers)

  The official code (``bhanML/Co-teaching``, ``hongxin001/JoCoR``, ``xingruiyu/coteaching_plus``)
  builds ``rate_schedule[:T_k] = linspace(0, tau**c, T_k)`` and trains from epoch index 1, so
  its ``e``-th training epoch forgets ``linspace(0, tau**c, T_k)[e + 1]`` (``tau`` from index
  ``T_k`` on): it already forgets ``tau / (T_k - 1)`` in the first epoch, reaches ``tau`` at
  0-based epoch ``T_k - 2`` — **two** epochs before the paper's formula (which reaches it at
  ``e = T_k``) — and puts the exponent on ``tau`` instead of on ``e``.
  ``schedule="code"`` reproduces that.

Counts and rounding
-------------------
Every selection keeps ``keep_count(R, n) = floor(R * n)`` of ``n`` candidates (the rounding of
the Co-teaching/JoCoR code, ``int(remember_rate * len(loss))``; the CLS paper writes
``R |Y_N|`` without saying). It is computed as ``floor(R * n + 1e-9)`` so that a product that
is whole in decimal arithmetic (0.97 x 100) is not rounded down by binary floating point.
Ties in the ranking are broken by the flattened (row-major) index: the earlier entry ranks
first, so a selection is a deterministic function of its inputs.

Label selection (CLS, Eq. 1-4)
------------------------------
The candidate negatives ``Y_N`` are the **unknown** entries (-1) of the whole mini-batch,
ranked together over the flattened B x C set ("within all labels contained in a mini-batch").
Observed negatives (0) are never candidates (never dropped) and observed positives are
always kept. For network f:

* cross selection, Eq. (1): keep the ``floor(R_h |Y_N|)`` candidates with the **smallest**
  loss under the **peer** g — the entries g finds most negative; the rest are *removed as
  high-loss* (suspected false negatives, i.e. hidden positives);
* self selection, Eq. (3): of those, keep the ``floor(R_l |Y_N^f|)`` with the **largest**
  loss under f **itself**; the rest are *removed as low-loss* (easy, non-informative negatives).

The "loss" of a candidate is its per-entry BCE as a negative, ``-log(1 - sigmoid(s)) =
softplus(s)``, from the current forward pass, detached (the notes' open point 2).

Diagnostics
-----------
The embedded data keeps the true labels, so each selection can be scored: of the entries a
method removed as high-loss, the share that are truly hidden positives (precision), and the
share of all hidden positives of the batch that were removed (recall). For sample selection
the removed labels are *all C labels* of each dropped sample, so the same two numbers say how
many clean labels Co-teaching throws away for each hidden positive it drops.
:func:`selection_frame` turns the per-epoch logs of trained methods into one table.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping

import numpy as np
import torch
import torch.nn.functional as F

from ..core.labels import POS, UNK
from .topk import top_k_mask

#: tolerance added before flooring R * n (see the module docstring)
ROUNDING_EPS = 1e-9


# ---------------------------------------------------------------------------------------
# schedules
# ---------------------------------------------------------------------------------------
def _check_rate(name: str, value, high_open: bool = False) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number in [0, 1], got {value!r}") from None
    if not (0.0 <= v <= 1.0) or (high_open and v >= 1.0) or math.isnan(v):
        interval = "[0, 1)" if high_open else "[0, 1]"
        raise ValueError(f"{name} must be in {interval}, got {value!r}")
    return v


def _check_epoch(epoch) -> int:
    if isinstance(epoch, bool) or not isinstance(epoch, (int, np.integer)) or epoch < 0:
        raise ValueError(f"epoch must be an integer >= 0 (completed epochs, 0-based), got {epoch!r}")
    return int(epoch)


def _check_ramp(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not value > 0 or not math.isfinite(value):
        raise ValueError(f"{name} must be a positive number of epochs, got {value!r}")
    return float(value)


def reserve_rate(epoch: int, tau: float, E_k: float = 10) -> float:
    """CLS's reserving rate R(e) = 1 - min(e / E_k * tau, tau)   (Alg. 1 step 12).

    ``epoch`` = completed epochs (the loop's 0-based epoch), so ``reserve_rate(0, ...) == 1``.
    ``tau`` in [0, 1] is the final fraction removed (tau_h or tau_l); ``E_k`` > 0 the number of
    epochs of the linear ramp (paper: 10 for every dataset).
    """
    e = _check_epoch(epoch)
    tau = _check_rate("tau", tau)
    E_k = _check_ramp("E_k", E_k)
    return 1.0 - min(e / E_k * tau, tau)


def forget_rate(epoch: int, tau: float, T_k: float = 10, exponent: float = 1.0,
                schedule: str = "paper") -> float:
    """Co-teaching's fraction of samples forgotten in epoch ``epoch`` (completed epochs).

    ``schedule="paper"``: tau * min(e**c / T_k, 1) (Han et al. 2018, R(T) = 1 - min(T^c/T_k tau, tau)).
    ``schedule="code"``: the official code's ``linspace(0, tau**c, T_k)[e + 1]`` for e + 1 < T_k,
    else tau (its training loop starts at epoch index 1). Defaults T_k = 10, c = 1 (all three
    papers and codes).
    """
    e = _check_epoch(epoch)
    tau = _check_rate("forget rate tau", tau, high_open=True)
    T_k = _check_ramp("T_k", T_k)
    if not exponent > 0:
        raise ValueError(f"exponent c must be > 0, got {exponent!r}")
    if schedule == "paper":
        return tau * min(e ** exponent / T_k, 1.0)
    if schedule == "code":
        n = int(round(T_k))
        if n != T_k or n < 2:
            raise ValueError(f"schedule='code' needs an integer T_k >= 2 (a linspace length), got {T_k!r}")
        i = e + 1
        return float(np.linspace(0.0, tau ** exponent, n)[i]) if i < n else tau
    raise ValueError(f"schedule must be 'paper' or 'code', got {schedule!r}")


def reserve_schedule(tau: float, E_k: float, epochs: int) -> np.ndarray:
    """R(e) for e = 0 .. epochs-1 (what each training epoch uses), as a numpy array."""
    if isinstance(epochs, bool) or not isinstance(epochs, (int, np.integer)) or epochs < 1:
        raise ValueError(f"epochs must be an integer >= 1, got {epochs!r}")
    return np.array([reserve_rate(e, tau, E_k) for e in range(int(epochs))])


def forget_schedule(tau: float, T_k: float, epochs: int, exponent: float = 1.0,
                    schedule: str = "paper") -> np.ndarray:
    """forget(e) for e = 0 .. epochs-1, as a numpy array."""
    if isinstance(epochs, bool) or not isinstance(epochs, (int, np.integer)) or epochs < 1:
        raise ValueError(f"epochs must be an integer >= 1, got {epochs!r}")
    return np.array([forget_rate(e, tau, T_k, exponent, schedule) for e in range(int(epochs))])


def keep_count(rate: float, n: int) -> int:
    """floor(rate * n): how many of ``n`` candidates a selection with reserving rate ``rate`` keeps."""
    rate = _check_rate("rate", rate)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be an integer >= 0, got {n!r}")
    return min(int(n), int(math.floor(rate * int(n) + ROUNDING_EPS)))


# ---------------------------------------------------------------------------------------
# rankings
# ---------------------------------------------------------------------------------------
def _check_scores(scores: torch.Tensor, candidates: torch.Tensor) -> None:
    if not torch.is_tensor(scores) or not torch.is_floating_point(scores):
        raise TypeError("scores must be a floating torch tensor (per-entry losses)")
    if not torch.is_tensor(candidates) or candidates.dtype != torch.bool:
        raise TypeError("candidates must be a bool torch tensor of the same shape as scores")
    if candidates.shape != scores.shape:
        raise ValueError(f"candidates shape {tuple(candidates.shape)} does not match scores "
                         f"shape {tuple(scores.shape)}")
    if bool(torch.isnan(scores[candidates]).any()):
        raise ValueError("scores hold NaN among the candidates; a ranking needs finite losses")


def _select(scores: torch.Tensor, candidates: torch.Tensor, rate: float, largest: bool) -> torch.Tensor:
    _check_scores(scores, candidates)
    k = keep_count(rate, int(candidates.sum()))
    # the lab's one top-k routine: among equal losses the earlier (row-major) entry ranks first
    return top_k_mask(scores, k, candidates, largest=largest)


def select_smallest(scores: torch.Tensor, candidates: torch.Tensor, rate: float) -> torch.Tensor:
    """Sel_min: of the ``candidates`` (bool mask), keep the ``floor(rate * n)`` with the smallest
    ``scores``, ranked together over all entries (flattened). Returns the kept mask."""
    return _select(scores, candidates, rate, largest=False)


def select_largest(scores: torch.Tensor, candidates: torch.Tensor, rate: float) -> torch.Tensor:
    """Sel_max: of the ``candidates``, keep the ``floor(rate * n)`` with the largest ``scores``."""
    return _select(scores, candidates, rate, largest=True)


def negative_entry_loss(logits: torch.Tensor) -> torch.Tensor:
    """Per-entry BCE of a negative target, -log(1 - sigmoid(s)) = softplus(s), detached:
    the loss the CLS rankings use (monotone in the logit)."""
    return F.softplus(logits.detach().float())


def _check_observed(observed: torch.Tensor, shape) -> None:
    if not torch.is_tensor(observed) or observed.shape != shape:
        raise ValueError(f"observed must be a tensor of shape {tuple(shape)} (1/0/-1), got "
                         f"{getattr(observed, 'shape', type(observed).__name__)}")
    bad = (observed != 1) & (observed != 0) & (observed != -1)
    if bool(bad.any()):
        raise ValueError("observed must hold only 1 (positive), 0 (negative) and -1 (unknown); "
                         "convert Cole-style labels with mlpl_lab.core.labels.from_cole")


@dataclass
class LabelSelection:
    """One network's label selection in one mini-batch (bool B x C masks).

    ``candidates`` = Y_N, the unknown entries; ``kept`` = Y_N^{f'} (trained as negatives);
    ``removed_high`` = Y_N minus Y_N^f (Eq. 1/2: high loss under the peer);
    ``removed_low`` = Y_N^f minus Y_N^{f'} (Eq. 3/4: low loss under the network itself).
    The three are disjoint and their union is ``candidates``.
    """

    candidates: torch.Tensor
    kept: torch.Tensor
    removed_high: torch.Tensor
    removed_low: torch.Tensor

    def status(self, observed: torch.Tensor) -> torch.Tensor:
        """Integer B x C map: 0 observed negative, 1 observed positive, 2 kept negative,
        3 removed as high-loss, 4 removed as low-loss (used by the plots)."""
        out = torch.zeros(self.kept.shape, dtype=torch.long, device=self.kept.device)
        out[observed == POS] = 1
        out[self.kept] = 2
        out[self.removed_high] = 3
        out[self.removed_low] = 4
        return out


def co_label_selection(own_loss: torch.Tensor, peer_loss: torch.Tensor, observed: torch.Tensor,
                       R_h: float, R_l: float) -> LabelSelection:
    """CLS's label selection for one network (Eq. 1 then Eq. 3; call it again with the roles
    swapped for the peer, Eq. 2 and 4).

    ``own_loss``/``peer_loss``: per-entry negative losses (B x C) of this network and of its
    peer (:func:`negative_entry_loss`); ``observed``: B x C labels 1/0/-1; ``R_h``/``R_l``:
    reserving rates (``R_h = 1`` switches the cross removal off — CLS-H; ``R_l = 1`` the self
    removal — CLS-L). Counts: ``|kept ∪ removed_low| = floor(R_h |Y_N|)`` and
    ``|kept| = floor(R_l floor(R_h |Y_N|))``.
    """
    if own_loss.shape != peer_loss.shape:
        raise ValueError(f"own_loss {tuple(own_loss.shape)} and peer_loss {tuple(peer_loss.shape)} "
                         "must have the same shape (B, C)")
    _check_observed(observed, own_loss.shape)
    candidates = observed == UNK
    cross_kept = select_smallest(peer_loss, candidates, R_h)      # Eq. (1): ranked by the PEER
    kept = select_largest(own_loss, cross_kept, R_l)               # Eq. (3): ranked by ITSELF
    return LabelSelection(candidates=candidates, kept=kept,
                          removed_high=candidates & ~cross_kept, removed_low=cross_kept & ~kept)


def select_small_loss_samples(per_sample_loss: torch.Tensor, rate: float,
                              among: torch.Tensor | None = None) -> torch.Tensor:
    """Sample selection: keep the ``floor(rate * n)`` samples with the smallest loss among the
    ``n`` samples of ``among`` (default: all). When that count is 0 every sample of ``among`` is
    kept (the Co-teaching+ code's fallback; it avoids an empty update). Returns a (B,) mask."""
    if per_sample_loss.ndim != 1:
        raise ValueError(f"per_sample_loss must be 1-D (B,), got shape {tuple(per_sample_loss.shape)}")
    among = torch.ones_like(per_sample_loss, dtype=torch.bool) if among is None else among
    keep = select_smallest(per_sample_loss, among, rate)
    if not bool(keep.any()):
        keep = among.clone()
    return keep


# ---------------------------------------------------------------------------------------
# diagnostics against the true labels
# ---------------------------------------------------------------------------------------
def _hidden(observed: torch.Tensor, true_labels: torch.Tensor) -> torch.Tensor:
    if true_labels.shape != observed.shape:
        raise ValueError(f"true_labels shape {tuple(true_labels.shape)} does not match observed "
                         f"{tuple(observed.shape)}")
    return (observed == UNK) & (true_labels == 1)


def label_selection_counts(selection: LabelSelection, observed: torch.Tensor,
                           true_labels: torch.Tensor) -> Dict[str, int]:
    """Counts of one label selection against the truth (diagnostics only).

    ``unknown`` |Y_N|, ``hidden`` the hidden positives among them, ``removed``/``removed_hidden``
    the entries removed as high-loss and how many of them are hidden positives,
    ``removed_low``/``removed_low_hidden`` the same for the low-loss removal, ``kept_hidden``
    the hidden positives still trained as negatives.
    """
    hidden = _hidden(observed, true_labels)
    return {
        "unknown": int(selection.candidates.sum()),
        "hidden": int(hidden.sum()),
        "removed": int(selection.removed_high.sum()),
        "removed_hidden": int((selection.removed_high & hidden).sum()),
        "removed_low": int(selection.removed_low.sum()),
        "removed_low_hidden": int((selection.removed_low & hidden).sum()),
        "kept_hidden": int((selection.kept & hidden).sum()),
    }


def sample_selection_counts(used: torch.Tensor, observed: torch.Tensor,
                            true_labels: torch.Tensor) -> Dict[str, int]:
    """Counts of one sample selection (``used``: (B,) mask of the samples a network is updated
    on) against the truth. A dropped sample removes *all* its C labels: ``removed`` counts them,
    ``removed_hidden`` the hidden positives among them, ``removed_clean`` the others (observed
    positives, observed negatives and unknowns that are truly negative — correct under AN),
    ``removed_observed_pos`` the annotated positives thrown away."""
    if used.ndim != 1 or used.shape[0] != observed.shape[0]:
        raise ValueError(f"used must be a (B,) mask with B = {observed.shape[0]}, got shape "
                         f"{tuple(used.shape)}")
    hidden = _hidden(observed, true_labels)
    dropped = ~used.bool()
    C = observed.shape[1]
    removed_hidden = int(hidden[dropped].sum())
    return {
        "samples": int(observed.shape[0]),
        "dropped": int(dropped.sum()),
        "unknown": int((observed == UNK).sum()),
        "hidden": int(hidden.sum()),
        "removed": int(dropped.sum()) * C,
        "removed_hidden": removed_hidden,
        "removed_clean": int(dropped.sum()) * C - removed_hidden,
        "removed_observed_pos": int((observed[dropped] == POS).sum()),
    }


def selection_rates(counts: Mapping[str, float]) -> Dict[str, float]:
    """Ratios from (summed) counts: ``precision`` = removed_hidden / removed (NaN when nothing was
    removed), ``recall`` = removed_hidden / hidden, plus ``clean_per_dropped`` for sample
    selection and ``low_precision`` for the low-loss removal when present."""
    def ratio(a, b):
        return float(counts[a]) / float(counts[b]) if counts.get(b, 0) else math.nan

    out = {"precision": ratio("removed_hidden", "removed"), "recall": ratio("removed_hidden", "hidden")}
    if "dropped" in counts:
        out["clean_per_dropped"] = ratio("removed_clean", "dropped")
        out["dropped_fraction"] = ratio("dropped", "samples")
    if "removed_low" in counts:
        out["low_precision"] = ratio("removed_low_hidden", "removed_low")
        out["kept_hidden_fraction"] = ratio("kept_hidden", "hidden")
    return out


#: prefix of the selection diagnostics in a history row: ``sel[<network>].<count or rate>``
SELECTION_KEY = "sel[{network}].{name}"


class SelectionLog:
    """Sums one epoch's selection counts per network and reports them through the method's
    :meth:`~mlpl_lab.methods.Method.log_epoch` (keys ``sel[f].removed_hidden``, ...), so they
    land in the run's history. Holds nothing across epochs (the history does)."""

    def __init__(self):
        self._current: Dict[str, Dict[str, float]] = {}

    def start_epoch(self) -> None:
        self._current = {}

    def add(self, network: str, counts: Mapping[str, float]) -> None:
        acc = self._current.setdefault(network, {})
        for k, v in counts.items():
            acc[k] = acc.get(k, 0) + v

    def flush(self, **extra) -> Dict[str, float]:
        """The epoch's sums and rates per network (plus ``extra`` schedule values), flat."""
        out: Dict[str, float] = {k: float(v) for k, v in extra.items()}
        for network, counts in sorted(self._current.items()):
            for k, v in list(counts.items()) + list(selection_rates(counts).items()):
                out[SELECTION_KEY.format(network=network, name=k)] = float(v)
        self._current = {}
        return out


def selection_rows(history) -> List[Dict[str, float]]:
    """Per (epoch, network) rows of the selection diagnostics in a run's history."""
    rows = []
    for row in history:
        per_net: Dict[str, Dict[str, float]] = {}
        extra = {k: row[k] for k in ("R_h", "R_l", "forget_rate") if k in row}
        for key, value in row.items():
            if key.startswith("sel[") and "]." in key:
                network, name = key[4:].split("].", 1)
                per_net.setdefault(network, {})[name] = value
        for network, vals in sorted(per_net.items()):
            rows.append({"epoch": int(row["epoch"]), "network": network, **extra, **vals})
    return rows


def selection_frame(results: Mapping[str, Iterable]):
    """One DataFrame of the per-epoch selection diagnostics of trained methods.

    ``results``: ``{label: [TrainResult, ...]}`` (from ``experiment.compare``) or
    ``{label: TrainResult}`` (or stored runs). Runs without selection diagnostics are skipped. Columns: method,
    seed (run index), epoch (1-based), network, the summed counts and the rates of
    :func:`selection_rates`.
    """
    import pandas as pd

    rows = []
    for label, runs in results.items():
        runs = runs if isinstance(runs, (list, tuple)) else [runs]
        for i, run in enumerate(runs):
            for r in selection_rows(run.history):
                rows.append({"method": label, "run": i, **r})
    if not rows:
        raise ValueError("none of these results has a selection log; train a co-training "
                         "method (cls, cls_h, cls_l, clc, coteaching, coteaching_plus, jocor)")
    return pd.DataFrame(rows)


def selection_summary(frame, epoch: int | None = None):
    """One row per method at ``epoch`` (default: each method's last epoch), summed over its
    networks and runs: labels removed per image, precision and recall of the removal, and for
    sample selection the clean labels thrown away per dropped image."""
    import pandas as pd

    rows = []
    for method, part in frame.groupby("method", sort=False):
        e = part["epoch"].max() if epoch is None else epoch
        at = part[part["epoch"] == e]
        counts = at.select_dtypes("number").sum()
        row = {"method": method, "epoch": int(e)}
        per_image = at["samples"].sum() if "samples" in at and at["samples"].notna().any() else None
        rates = selection_rates({k: counts[k] for k in counts.index if not pd.isna(counts[k])})
        row["precision (%)"] = 100 * rates["precision"]
        row["recall (%)"] = 100 * rates["recall"]
        row["removed labels"] = int(counts["removed"])
        if per_image:
            row["clean labels lost per dropped image"] = rates.get("clean_per_dropped", math.nan)
            row["observed positives lost"] = int(counts.get("removed_observed_pos", 0))
        rows.append(row)
    return pd.DataFrame(rows).set_index("method").round(2)
