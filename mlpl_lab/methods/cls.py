"""CLS — Co-Label Selection (Lyu, Sun, Deng, Feng, AAAI 2025), faithful to its Algorithm 1.

Two networks f and g see the same mini-batch. Unknown labels are negatives (AN), and the
candidate negatives Y_N are all unknown entries of the batch, ranked together (flattened B x C).

* Cross selection, Eq. (1)/(2) — "avoid confirmation bias": f keeps the ``floor(R_h(e) |Y_N|)``
  candidates with the **smallest** loss under **g**'s predictions (and g those smallest under
  f's); the others are *removed as high-loss* (suspected hidden positives).
* Self selection, Eq. (3)/(4) — "imbalance": of what it kept, each network keeps the
  ``floor(R_l(e) |Y_N^f|)`` with the **largest** loss under its **own** predictions; the easiest
  negatives are *removed as low-loss*.
* Eq. (5)-(8): each network's loss is BCE on its selected negatives plus **all observed
  positives**; observed negatives (label 0) are never candidates, so never dropped.
* Alg. 1 step 12: ``R_h(e) = 1 - min(e/E_k tau_h, tau_h)``, ``R_l(e) = 1 - min(e/E_k tau_l, tau_l)``,
  updated after each epoch: ``e`` = completed epochs = the loop's 0-based epoch, so the first
  epoch selects nothing (two AN networks).

Selection rules, counts, rounding (floor) and tie-breaking live in :mod:`.selection`.

Decisions where the paper is silent
-----------------------------------
* Ranking loss: the per-entry BCE as a negative, softplus(s), of the current forward pass
  (train mode, same augmented batch for both networks), detached.
* Normalisation of Eq. (7): ``normalization="entries"`` (default) divides the summed BCE of the
  selected entries by B x C — the Cole/LL convention, so that CLS in its first epoch equals AN
  exactly; ``"batch"`` divides by B (Eq. 7 read literally: a per-sample sum, averaged over the
  batch; it is the default times C, which Adam absorbs up to its epsilon — only without coupled weight decay: Adam's L2 term is not rescaled with the loss; the lab's profiles use weight_decay = 0); ``"selected"``
  divides by the number of entries in the loss.
* Evaluation: the tables report the **average of the two networks' probabilities**
  (``predict_proba``); f and g alone are in the history as ``test_mAP[f]`` / ``test_mAP[g]``.
* The F1 threshold is 0.5 (the lab's ``metrics.evaluate``); model selection is the loop's best
  clean-validation epoch (the paper plots test mAP per epoch and names no validation split).

Defaults from the paper (Sec. "Implementation Details", cross-validated per dataset/regime):
E_k = 10; tau_l = 0.06 (COCO, NUS-WIDE) / 0.02 (VOC 2007); tau_h per configuration
(75 % / 50 % / 25 % labels left / single label) VOC07 {.002, .003, .005, .005}, COCO {.005, .010,
.012, .012}, NUS {.006, .012, .020, .020}. The method's defaults are COCO single label
(tau_h = 0.012, tau_l = 0.06, E_k = 10); :func:`paper_hparams` returns any other cell.

Variants (by name)
------------------
``cls_h``: no cross removal of high-loss negatives (R_h = 1): then f and g never exchange
anything — two independent "AN minus easy negatives" networks, averaged. ``cls_l``: no self
removal of low-loss negatives (R_l = 1). ``clc`` (co-label correction, the paper's Fig. 5):
the entries CLS would remove as high-loss are **flipped to positives** (target 1) for that
network instead of being removed; the low-loss removal is unchanged.
"""
from __future__ import annotations

from typing import Dict

import torch
import torch.nn.functional as F

from ..core.labels import NEG, POS
from .coteaching import TwoNetworkMethod
from .registry import register_method
from .selection import co_label_selection, label_selection_counts, negative_entry_loss, reserve_rate

# ---------------------------------------------------------------------------------------
# the paper's settings
# ---------------------------------------------------------------------------------------
#: tau_h of the paper (Implementation Details), per dataset and configuration
PAPER_TAU_H: Dict[str, Dict[str, float]] = {
    "voc07": {"drop25": 0.002, "drop50": 0.003, "drop75": 0.005, "single": 0.005},
    "coco": {"drop25": 0.005, "drop50": 0.010, "drop75": 0.012, "single": 0.012},
    "nus": {"drop25": 0.006, "drop50": 0.012, "drop75": 0.020, "single": 0.020},
}
#: tau_l of the paper, per dataset
PAPER_TAU_L: Dict[str, float] = {"voc07": 0.02, "coco": 0.06, "nus": 0.06}
#: E_k of the paper (all datasets)
PAPER_E_K = 10
#: the paper's sensitivity grids (Fig. 7 and 8, MS-COCO)
PAPER_TAU_H_GRID = tuple(round(0.003 * i, 3) for i in range(8))   # 0, 0.003, ..., 0.021
PAPER_TAU_L_GRID = tuple(round(0.02 * i, 2) for i in range(8))    # 0, 0.02, ..., 0.14

NORMALIZATIONS = ("entries", "batch", "selected")


def regime_key(regime: str, alpha: float | None = None) -> str:
    """The paper's configuration for one of our regimes: ``single_positive`` -> "single",
    ``drop_positives`` with alpha 0.25 / 0.5 / 0.75 (the fraction DROPPED, i.e. 75 / 50 / 25 %
    labels left) -> "drop25" / "drop50" / "drop75"."""
    if regime == "single_positive":
        return "single"
    if regime == "drop_positives":
        keys = {0.25: "drop25", 0.5: "drop50", 0.75: "drop75"}
        if alpha is None or round(float(alpha), 6) not in keys:
            raise ValueError(f"the paper sets tau_h only for drop_positives with alpha in "
                             f"{sorted(keys)} (25/50/75 % of positives dropped), got alpha={alpha!r}")
        return keys[round(float(alpha), 6)]
    raise ValueError(f"the paper has settings for 'single_positive' and 'drop_positives' only, "
                     f"got regime {regime!r}")


def paper_hparams(dataset: str = "coco", regime: str = "single_positive",
                  alpha: float | None = None, **overrides) -> Dict[str, float]:
    """``{"tau_h", "tau_l", "E_k"}`` of the paper for ``dataset`` ("voc07", "coco", "nus") and one
    of our regimes; ``overrides`` (e.g. ``E_k=4``) win."""
    if dataset not in PAPER_TAU_H:
        raise ValueError(f"dataset must be one of {sorted(PAPER_TAU_H)}, got {dataset!r}")
    hp = {"tau_h": PAPER_TAU_H[dataset][regime_key(regime, alpha)], "tau_l": PAPER_TAU_L[dataset],
          "E_k": PAPER_E_K}
    unknown = set(overrides) - set(hp)
    if unknown:
        raise ValueError(f"unknown CLS hyperparameter(s) {sorted(unknown)}; valid: {sorted(hp)}")
    hp.update(overrides)
    return hp


def selected_bce(logits: torch.Tensor, observed: torch.Tensor, kept_unknown: torch.Tensor,
                 flipped: torch.Tensor | None = None, normalization: str = "entries") -> torch.Tensor:
    """Eq. (7)/(8): BCE on the selected label set Y^f = Y_N^{f'} ∪ Y^P.

    Entries in the loss: observed positives (target 1), observed negatives (target 0, never
    dropped), the kept unknown entries ``kept_unknown`` (target 0) and, for CLC, the ``flipped``
    entries (target 1). ``normalization``: "entries" (sum / (B C), default), "batch" (sum / B,
    Eq. 7 literally) or "selected" (sum / number of entries in the loss).
    """
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got {normalization!r}")
    pos = observed == POS
    neg = (observed == NEG) | kept_unknown
    if flipped is not None:
        pos = pos | flipped
        neg = neg & ~flipped
    matrix = pos * F.softplus(-logits) + neg * F.softplus(logits)
    B, C = logits.shape
    if normalization == "entries":
        return matrix.sum() / (B * C)
    if normalization == "batch":
        return matrix.sum() / B
    return matrix.sum() / (pos | neg).sum().clamp(min=1)


@register_method("cls")
class CoLabelSelection(TwoNetworkMethod):
    """CLS (Lyu et al., AAAI 2025): two networks select negative labels for each other.

    Hyperparameters (defaults: the paper's MS-COCO single-label cell; see
    :func:`paper_hparams`): ``tau_h`` = 0.012 final fraction of candidate negatives removed as
    high-loss (cross selection, Eq. 1-2), ``tau_l`` = 0.06 final fraction of the rest removed as
    low-loss (self selection, Eq. 3-4), ``E_k`` = 10 epochs of the linear ramp of R_h and R_l.
    ``remove_high`` / ``remove_low`` switch the two removals (``cls_h`` / ``cls_l``),
    ``correct_high`` flips the high-loss entries to positives instead (``clc``),
    ``normalization`` of Eq. (7) (see :func:`selected_bce`). Logs per epoch, per network, what
    the selection removed against the true labels (``self.selection_log``).
    """

    def __init__(self, tau_h: float = 0.012, tau_l: float = 0.06, E_k: float = PAPER_E_K,
                 remove_high: bool = True, remove_low: bool = True, correct_high: bool = False,
                 normalization: str = "entries"):
        super().__init__(tau_h=tau_h, tau_l=tau_l, E_k=E_k, remove_high=remove_high,
                         remove_low=remove_low, correct_high=correct_high, normalization=normalization)
        reserve_rate(0, tau_h, E_k)  # validates tau_h and E_k now, before training
        reserve_rate(0, tau_l, E_k)
        if normalization not in NORMALIZATIONS:
            raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got {normalization!r}")
        if correct_high and not remove_high:
            raise ValueError("correct_high flips the high-loss entries, so it needs remove_high=True")
        self.tau_h, self.tau_l, self.E_k = float(tau_h), float(tau_l), E_k
        self.remove_high, self.remove_low = bool(remove_high), bool(remove_low)
        self.correct_high, self.normalization = bool(correct_high), normalization

    def rates(self, epoch: int):
        """(R_h(e), R_l(e)) of the 0-based ``epoch`` (1 for a switched-off removal)."""
        R_h = reserve_rate(epoch, self.tau_h, self.E_k) if self.remove_high else 1.0
        R_l = reserve_rate(epoch, self.tau_l, self.E_k) if self.remove_low else 1.0
        return R_h, R_l

    def select(self, logits_f: torch.Tensor, logits_g: torch.Tensor, observed: torch.Tensor,
               epoch: int):
        """The two label selections of a batch: ``(selection_f, selection_g)``."""
        R_h, R_l = self.rates(epoch)
        loss_f, loss_g = negative_entry_loss(logits_f), negative_entry_loss(logits_g)
        return (co_label_selection(loss_f, loss_g, observed, R_h, R_l),
                co_label_selection(loss_g, loss_f, observed, R_h, R_l))

    def _loss(self, logits, observed, sel):
        flipped = sel.removed_high if self.correct_high else None
        return selected_bce(logits, observed, sel.kept, flipped, self.normalization)

    def training_step(self, batch, epoch):
        observed = self.batch_labels(batch)
        logits_f, logits_g = self.f(batch["image"]), self.g(batch["image"])
        sel_f, sel_g = self.select(logits_f, logits_g, observed, epoch)
        loss_f = self._loss(logits_f, observed, sel_f)
        loss_g = self._loss(logits_g, observed, sel_g)
        truth = self.true_labels(batch)
        if truth is not None:  # diagnostics only: counts, never used by the loss
            with torch.no_grad():
                self.selection_log.add("f", label_selection_counts(sel_f, observed, truth))
                self.selection_log.add("g", label_selection_counts(sel_g, observed, truth))
        R_h, R_l = self.rates(epoch)
        return loss_f + loss_g, {"loss_f": loss_f.detach(), "loss_g": loss_g.detach(),
                                 "R_h": R_h, "R_l": R_l}

    def on_epoch_end(self, epoch: int) -> None:
        R_h, R_l = self.rates(epoch)
        self.log_epoch(**self.selection_log.flush(R_h=R_h, R_l=R_l))


def _variant(name: str, fixed: Dict[str, bool], forbidden: tuple, doc: str):
    def factory(**hp):
        clash = sorted(set(hp) & (set(fixed) | set(forbidden)))
        if clash:
            raise TypeError(f"method {name!r} fixes or ignores {clash}; use method 'cls' to set them")
        return CoLabelSelection(**fixed, **hp)

    factory.__name__ = f"{name}_method"
    factory.__doc__ = doc
    return register_method(name)(factory)


_variant("cls_h", {"remove_high": False}, ("tau_h",),
         "CLS-H (paper Fig. 6): CLS without the cross removal of high-loss negatives (R_h = 1).")
_variant("cls_l", {"remove_low": False}, ("tau_l",),
         "CLS-L (paper Fig. 6): CLS without the self removal of low-loss negatives (R_l = 1).")
_variant("clc", {"correct_high": True}, (),
         "CLC (paper Fig. 5): co-label correction — the high-loss negatives are flipped to "
         "positives for the network instead of removed.")


@torch.no_grad()
def explain_batch(method: CoLabelSelection, dataset, indices, epoch: int | None = None) -> Dict[str, object]:
    """The label selections a trained CLS pair would make on a fixed batch of ``dataset``:
    ``indices``, or an int ``n`` for its first ``n`` images (all of them when it holds fewer).

    The networks run in **eval mode** on the un-augmented images (training runs them in
    train mode on an augmented view, so the picture is that of the final networks, not a
    replay of a training step). ``epoch`` (0-based, default: the last epoch trained) sets
    R_h and R_l. Returns ``{"f": LabelSelection, "g": ..., "observed", "labels" (true),
    "logits_f", "logits_g", "R_h", "R_l"}`` on CPU.
    """
    if not isinstance(method, CoLabelSelection) or getattr(method, "f", None) is None:
        raise TypeError("explain_batch needs a trained CLS-family method (cls, cls_h, cls_l, clc); "
                        "train one with experiment.run or fit first")
    if epoch is None:
        epoch = max(0, method.ctx.epochs - 1)
    if isinstance(indices, int):
        indices = range(min(indices, len(dataset)))
    batch = dataset.get_batch(indices)
    x = batch["image"].to(method.ctx.device)
    method.train(False)
    try:
        logits_f, logits_g = method.f(x).float().cpu(), method.g(x).float().cpu()
    finally:
        method.train(True)
    observed = batch["observed"].cpu()
    sel_f, sel_g = method.select(logits_f, logits_g, observed, epoch)
    R_h, R_l = method.rates(epoch)
    return {"f": sel_f, "g": sel_g, "observed": observed, "labels": batch["labels"].cpu(),
            "logits_f": logits_f, "logits_g": logits_g, "R_h": R_h, "R_l": R_l, "epoch": epoch}
