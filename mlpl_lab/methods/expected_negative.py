"""EN (expected negatives, Verelst et al. WACV 2023) as GR Loss Appendix B describes it.

At the start of every epoch, for each class i, the N - N_i training images with the lowest
EMA-smoothed confidence of class i (among its unknown labels) become pseudo-negatives for the
epoch; loss ``en`` (or its framework form ``gr_as_en``) trains on them and on the observed
positives.

Choices where the description is silent (documented, not from a reference code):

* N_i, the estimated number of positives of class i: the expected total N·k
  (k = ``expected_num_pos`` per image, default 1.5 as Cole's PASCAL value) shared among
  classes in proportion to their observed positives;
* the EMA momentum of the confidences: ``ema = 0.5`` (our runs are a few epochs long, so the
  ranking must follow the model quickly); the first epoch ranks the untrained model's output.
"""
from __future__ import annotations

import torch

from ..losses.cole import EXPECTED_NUM_POS
from .loss_method import LossMethod
from .topk import top_k_mask
from .registry import register_method


def expected_negative_mask(confidence: torch.Tensor, observed: torch.Tensor,
                           positives_per_class: torch.Tensor) -> torch.Tensor:
    """Per class i, the N - N_i lowest ``confidence`` entries, restricted to unknown labels."""
    n, c = confidence.shape
    mask = torch.zeros(n, c, dtype=torch.bool)
    for i in range(c):
        keep = max(0, n - int(positives_per_class[i]))
        mask[:, i] = top_k_mask(confidence[:, i], keep, largest=False)
    return mask & (observed == -1)


class ENMethod(LossMethod):
    """EN with epoch-start pseudo-negatives; ``loss`` is ``"en"`` or ``"gr_as_en"``."""

    def __init__(self, expected_num_pos: float = EXPECTED_NUM_POS, ema: float = 0.5, loss: str = "en"):
        if loss not in ("en", "gr_as_en"):
            raise ValueError(f"loss must be 'en' or its framework form 'gr_as_en', got {loss!r}")
        super().__init__(loss=loss)
        if not expected_num_pos > 0:
            raise ValueError(f"expected_num_pos must be positive, got {expected_num_pos!r}")
        if not 0.0 <= ema < 1.0:
            raise ValueError(f"ema must be in [0, 1), got {ema!r}")
        self.expected_num_pos = float(expected_num_pos)
        self.ema = float(ema)
        self.hparams.update(expected_num_pos=expected_num_pos, ema=ema)

    def setup(self, ctx):
        super().setup(ctx)
        obs_pos = (self.labels == 1).sum(0).double()
        share = obs_pos / obs_pos.sum().clamp(min=1)
        self.positives_per_class = torch.round(share * len(self.labels) * self.expected_num_pos).long()
        self.confidence = None
        self.negatives = None

    def on_epoch_start(self, epoch):
        probs = self.ctx.predict_train()
        self.confidence = probs if self.confidence is None else \
            self.ema * self.confidence + (1 - self.ema) * probs
        self.negatives = expected_negative_mask(self.confidence, self.labels, self.positives_per_class)

    def training_step(self, batch, epoch):
        rows = batch["index"].cpu()
        device = batch["image"].device
        logits = self.net(batch["image"])
        loss = self.loss_fn(logits, self.labels[rows].to(device),
                            negatives=self.negatives[rows].to(device), **self.loss_kwargs(epoch))
        return loss, {}

    def extra_state(self):
        return {"labels": self.labels, "confidence": self.confidence}

    def load_extra_state(self, state):
        self.labels = state["labels"]
        self.confidence = state["confidence"]


@register_method("en")
def en_method(expected_num_pos: float = EXPECTED_NUM_POS, ema: float = 0.5):
    """EN with the standalone ``en`` loss."""
    return ENMethod(expected_num_pos, ema, loss="en")


@register_method("gr_as_en")
def gr_as_en_method(expected_num_pos: float = EXPECTED_NUM_POS, ema: float = 0.5):
    """EN trained through its GR-framework form ``gr_as_en`` (Table 1)."""
    return ENMethod(expected_num_pos, ema, loss="gr_as_en")
