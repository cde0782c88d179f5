"""Assume negative, softened: every unknown label is a negative with target eps instead of 0.

A plain loss for ``mlpl-lab benchmark --add notebooks/examples/an_eps.py`` (the handbook's "Add your own
method"). AN trains every unknown entry towards 0; here towards ``eps``, so an unknown that is
really a positive is pushed down less hard. ``eps = 0`` is AN itself.
"""
import torch
import torch.nn.functional as F

LABEL = "AN, unknowns at eps"          # the row's name in the benchmark table
GRID = {"eps": [0.05, 0.1]}            # tuned on the lab's equal budget; the default first


def loss(logits, observed, eps=0.05):
    """Binary cross-entropy with target 1 for observed positives, 0 for observed negatives and
    ``eps`` for unknowns (observed: 1 positive, 0 negative, -1 unknown), mean over every entry."""
    target = torch.where(observed == 1, 1.0, torch.where(observed == 0, 0.0, eps))
    return F.binary_cross_entropy_with_logits(logits, target.to(logits.dtype))
