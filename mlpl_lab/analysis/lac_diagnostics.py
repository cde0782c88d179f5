"""LAC diagnostics measured against the truth the embedded scenes keep.

* :func:`plc_breakdown` — for one δ, what PLC does with the **unknown** labels of a set:
  which become pseudo-positives / pseudo-negatives / are ignored, split by their true status,
  with the pseudo-positives' precision and recall (pure; the δ widget calls it);
* :func:`plc_curves` / :func:`epoch_log` — the per-epoch diagnostics the method logged during
  training (PLC's pseudo-labels, ``lac_an_ratio``, ...);
* :func:`loss_vs_queue` — both forms of the contrastive loss on one set of random embeddings
  as the memory queue grows (why the code's form is the default);
* :func:`label_embeddings` and :func:`embedding_geometry` — within-class vs between-class
  cosine similarity of the label-wise embeddings of present classes (what the contrastive
  loss is meant to change).
"""
from __future__ import annotations

from typing import Dict, Mapping, Sequence

import numpy as np
import torch

PLC_KEYS = ("plc_pos_precision", "plc_pos_recall", "plc_neg_precision", "plc_coverage")


def plc_breakdown(probs, observed, truth, delta: float) -> Dict[str, float]:
    """Counts over the unknown entries (observed == -1) of a set, at threshold ``delta``.

    ``pseudo_pos_*``: p ≥ δ; ``pseudo_neg_*``: p ≤ 1 − δ; ``ignored_*``: in between; each
    split into ``_present`` (truly present: a hidden positive) and ``_absent``. Derived:
    ``pos_precision`` = present share of the pseudo-positives, ``pos_recall`` = share of the
    hidden positives that became pseudo-positives, ``neg_precision`` = absent share of the
    pseudo-negatives (NaN when a denominator is empty), ``coverage`` = share of unknowns that
    get a target.
    """
    if not 0.5 <= float(delta) < 1.0:
        raise ValueError(f"delta must be in [0.5, 1), got {delta!r}")
    p = torch.as_tensor(probs, dtype=torch.float64)
    obs, y = torch.as_tensor(observed), torch.as_tensor(truth)
    if not (p.shape == obs.shape == y.shape):
        raise ValueError(f"probs {tuple(p.shape)}, observed {tuple(obs.shape)} and truth "
                         f"{tuple(y.shape)} must have one shape")
    unk = obs == -1
    present = y == 1
    groups = {"pseudo_pos": p >= delta, "pseudo_neg": p <= 1 - delta}
    groups["ignored"] = ~(groups["pseudo_pos"] | groups["pseudo_neg"])
    out: Dict[str, float] = {}
    for g, sel in groups.items():
        out[f"{g}_present"] = float((unk & sel & present).sum())
        out[f"{g}_absent"] = float((unk & sel & ~present).sum())
    nan = float("nan")
    n_pos = out["pseudo_pos_present"] + out["pseudo_pos_absent"]
    n_neg = out["pseudo_neg_present"] + out["pseudo_neg_absent"]
    hidden = float((unk & present).sum())
    out["pos_precision"] = out["pseudo_pos_present"] / n_pos if n_pos else nan
    out["pos_recall"] = out["pseudo_pos_present"] / hidden if hidden else nan
    out["neg_precision"] = out["pseudo_neg_absent"] / n_neg if n_neg else nan
    out["coverage"] = (n_pos + n_neg) / float(unk.sum()) if bool(unk.any()) else nan
    out["unknown"], out["hidden"] = float(unk.sum()), hidden
    return out


def epoch_log(results: Mapping[str, Sequence], keys: Sequence[str]):
    """Long DataFrame (run label, seed, epoch, quantity, value) of the per-epoch ``keys`` in the
    runs' histories (runs and epochs without them are skipped)."""
    import pandas as pd

    rows = []
    for label, runs in results.items():
        for r in runs:
            seed = getattr(getattr(r, "spec", None), "seed", 0)
            for row in r.history:
                for k in keys:
                    if k in row and np.isfinite(row[k]):
                        rows.append({"run": label, "seed": seed, "epoch": int(row["epoch"]),
                                     "quantity": k, "value": float(row[k])})
    if not rows:
        raise ValueError(f"none of {list(keys)} in these runs' histories (train a lac_plc / lac method)")
    return pd.DataFrame(rows)


def plc_curves(results: Mapping[str, Sequence], keys: Sequence[str] = PLC_KEYS):
    """:func:`epoch_log` of the PLC diagnostics."""
    return epoch_log(results, keys)


def loss_vs_queue(queue_sizes: Sequence[int] = (0, 128, 256, 512), n: int = 64, dim: int = 16,
                  num_classes: int = 10, noise: float = 0.3, tau: float = 0.5, seed: int = 0):
    """DataFrame (queue pairs K, form, loss): :func:`mlpl_lab.losses.lac.lac_loss` in both forms
    on ``n`` random current pairs (unit vectors; the strong view = the weak one + ``noise``,
    renormalised) of ``num_classes`` classes, against queues of K random pairs."""
    import pandas as pd

    from ..losses.lac import FORMS, lac_loss

    g = torch.Generator().manual_seed(seed)
    unit = lambda *shape: torch.nn.functional.normalize(torch.randn(*shape, generator=g), dim=-1)  # noqa: E731
    z_w = unit(n, dim)
    z_s = torch.nn.functional.normalize(z_w + noise * torch.randn(n, dim, generator=g), dim=-1)
    cls = torch.randint(0, num_classes, (n,), generator=g)
    rows = []
    for k in queue_sizes:
        q_z, q_c = unit(int(k), 2, dim), torch.randint(0, num_classes, (int(k),), generator=g)
        for form in FORMS:
            rows.append({"queue pairs K": int(k), "form": form,
                         "loss": float(lac_loss(z_w, z_s, cls, q_z, q_c, tau=tau, form=form))})
    return pd.DataFrame(rows)


@torch.no_grad()
def label_embeddings(model, dataset, max_images: int = 500, projected: bool = False,
                     batch_size: int = 250):
    """(embeddings (P, d), class ids (P,)) of every (image, truly present class) pair among the
    first ``max_images`` images: h_j of the label-query head (or its projection z_j)."""
    head = getattr(model, "head", None)
    if not hasattr(head, "label_embeddings"):
        raise TypeError("embedding geometry needs a model with the label-query head")
    n = min(int(max_images), len(dataset))
    was = model.training
    model.eval()
    device = next(model.parameters()).device
    embs, classes = [], []
    try:
        for start in range(0, n, batch_size):
            x = dataset.images[start:min(n, start + batch_size)].to(device)
            h, _ = head.label_embeddings(model.feature_map(x))
            if projected:
                h = head.project(h)
            y = dataset.labels[start:start + len(x)].to(device) == 1
            img, cls = torch.nonzero(y, as_tuple=True)
            embs.append(h[img, cls].float().cpu())
            classes.append(cls.cpu())
    finally:
        model.train(was)
    return torch.cat(embs), torch.cat(classes)


def embedding_geometry(emb: torch.Tensor, classes: torch.Tensor, max_pairs: int = 20000,
                       seed: int = 0) -> Dict[str, object]:
    """Cosine similarities of pairs of label embeddings: ``within`` (same class, different
    entries) and ``between`` (different classes), as arrays (a random subset of at most
    ``max_pairs`` each) and their means, and ``gap`` = mean within − mean between."""
    z = torch.nn.functional.normalize(emb.double(), dim=1)
    sim = z @ z.T
    same = classes[:, None] == classes[None, :]
    upper = torch.triu(torch.ones_like(same), diagonal=1)
    within = sim[same & upper].numpy()
    between = sim[~same & upper].numpy()
    if len(within) == 0 or len(between) == 0:
        raise ValueError("need at least two entries of one class and two classes")
    rng = np.random.default_rng(seed)
    if len(within) > max_pairs:
        within = rng.choice(within, max_pairs, replace=False)
    if len(between) > max_pairs:
        between = rng.choice(between, max_pairs, replace=False)
    return {"within": within, "between": between, "mean_within": float(within.mean()),
            "mean_between": float(between.mean()), "gap": float(within.mean() - between.mean())}
