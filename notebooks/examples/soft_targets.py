"""A method with state: each unknown label's target follows the network's own predictions.

A :class:`~mlpl_lab.methods.base.Method` subclass for ``mlpl-lab benchmark --add
notebooks/examples/soft_targets.py`` (the handbook's "Rank your own method against the course").
It keeps a target matrix over the training set (N images x C classes): observed positives 1, observed negatives 0, unknowns
starting at 0 as AN's, then, each time an image is in a batch, moving its unknowns' targets
towards the network's current probabilities: ``target <- momentum * target + (1 - momentum) * p``.
The matrix is the method's state: it is saved with the run (``extra_state``).
"""
import torch
import torch.nn.functional as F

from mlpl_lab.methods.base import Method


class SoftTargets(Method):
    LABEL = "AN, unknowns follow the model"   # the row's name in the benchmark table
    GRID = {"momentum": [0.9, 0.99]}          # the constructor's keyword, the default first

    def __init__(self, momentum=0.9):
        super().__init__(momentum=momentum)
        self.momentum = momentum

    def setup(self, ctx):
        super().setup(ctx)  # self.net, self.optimizer, self.labels (N x C: 1, 0, -1)
        self.targets = (self.labels == 1).float()

    def training_step(self, batch, epoch):
        labels = self.batch_labels(batch)
        logits = self.net(batch["image"])
        rows = batch["index"].cpu()
        target = self.targets[rows].to(logits.device)
        loss = F.binary_cross_entropy_with_logits(logits, target)
        with torch.no_grad():  # the state moves after the loss is taken
            moved = self.momentum * target + (1 - self.momentum) * torch.sigmoid(logits.float())
            self.targets[rows] = torch.where(labels == -1, moved, target).cpu()
        return loss, {}

    def extra_state(self):
        return {"labels": self.labels, "targets": self.targets}

    def load_extra_state(self, state):
        self.labels, self.targets = state["labels"], state["targets"]


METHOD = SoftTargets
