"""One network trained with one registered loss: the shape of most single-positive methods."""
from __future__ import annotations

import inspect

from .. import losses
from .base import Method
from .registry import register_method


class LossMethod(Method):
    """Train ``net`` with ``losses.get(loss)(logits, self.labels[idx], **loss_hparams)``.

    Unknown hyperparameters of the loss raise ``TypeError`` at construction, before training.
    Losses that declare ``epoch`` receive the 0-based epoch, and those that declare
    ``num_epochs`` receive the total (for schedules).
    """

    def __init__(self, loss: str = "an", **loss_hparams):
        super().__init__(loss=loss, **loss_hparams)
        self.loss_name = loss
        self.loss_fn = losses.get(loss)
        params = inspect.signature(self.loss_fn).parameters
        if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            unknown = [k for k in loss_hparams if k not in params]
            if unknown:
                valid = [k for k, p in params.items() if p.kind is p.KEYWORD_ONLY or
                         (p.default is not p.empty)]
                raise TypeError(
                    f"loss {loss!r} got unknown hyperparameter(s) {unknown}; it takes {valid}"
                )
        self.loss_hparams = loss_hparams

    def loss_kwargs(self, epoch: int) -> dict:
        kw = dict(self.loss_hparams)
        if losses.accepts(self.loss_fn, "epoch"):
            kw["epoch"] = epoch
        if losses.accepts(self.loss_fn, "num_epochs"):
            kw["num_epochs"] = self.ctx.epochs
        return kw

    def training_step(self, batch, epoch):
        labels = self.batch_labels(batch)
        logits = self.net(batch["image"])
        loss = self.loss_fn(logits, labels, **self.loss_kwargs(epoch))
        return loss, {}


def loss_method_factory(loss_name: str):
    def factory(**hp):
        return LossMethod(loss=loss_name, **hp)

    factory.__name__ = f"{loss_name}_method"
    factory.__doc__ = f"Single network trained with the registered loss {loss_name!r}."
    return factory


@register_method("full")
class FullLabelOracle(LossMethod):
    """The full-label oracle: BCE on the TRUE labels of the training set.

    It is the only method allowed to read ``batch["labels"]`` — it is the upper bound the
    partial-label methods are measured against, not a method for partial labels.
    """

    def __init__(self):
        super().__init__(loss="bce")

    def training_step(self, batch, epoch):
        logits = self.net(batch["image"])
        return self.loss_fn(logits, batch["labels"]), {}


register_method("an")(loss_method_factory("an"))
