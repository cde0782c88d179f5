"""The partial-label regimes, and what they hide.

The functions :func:`full`, :func:`single_positive`, :func:`drop_positives`,
:func:`known_proportion`, :func:`positives_only` and :func:`noisy_negatives` turn a true matrix
``Y`` into an observed matrix (the encoding of :mod:`mlpl_lab.core.labels`) following the protocols
of the papers this lab reproduces.  Each one creates its own random generator from ``seed`` and
never touches numpy's or torch's global random state, so a notebook cell that draws labels
cannot change what a later cell draws. :func:`regime` builds such a function from a name and
parameters (handy as a papermill parameter).

:func:`label_stats` counts, per class, the observed positives, the *hidden* positives (true
positives that the Assume-Negative (AN) baseline of Cole et al. treats as negatives, i.e. its
false negatives), observed negatives and unknown negatives -- the quantities of Fig. 4 of the
GR Loss paper (Chen et al., IJCAI 2024).
"""

from __future__ import annotations

import functools
import inspect
import math
from fractions import Fraction
from typing import Any, Callable, Dict, Optional

import numpy as np

from .regime_table import FULL_LABELS, REGIME_TABLE, regime_table  # noqa: F401 (the chapters' table)
from .labels import (NEG, POS, UNK, Matrix, _as_binary, _check_container, _check_prob,
                     _distinct_bad_values, _like, _to_numpy, check_seed, validate)

__all__ = ["full", "single_positive", "drop_positives", "known_proportion", "positives_only",
           "noisy_negatives", "REGIMES", "REGIME_TABLE", "regime_table", "regime", "describe_regime", "label_stats"]

# ---------------------------------------------------------------------------------------
# regimes
# ---------------------------------------------------------------------------------------
def full(Y: Matrix, seed: int = 0) -> Matrix:
    """Fully observed labels: every positive is POS and every negative is NEG.

    The "full labels" upper bound of every SPML paper.  ``seed`` is accepted (and ignored)
    so that all regimes share the call signature ``f(Y, seed=...)``.
    """
    seed = check_seed(seed)
    arr = _as_binary(Y)
    out = np.where(arr == 1, POS, NEG).astype(np.int64)
    return _like(out, Y)


def _mask_scores(masks: Matrix, N: int, C: int, bias: str) -> np.ndarray:
    """Per (image, class) preference scores from instance masks; larger = preferred.

    ``size``: the mask area (pixels).  ``location``: minus the Euclidean distance of the
    mask centroid from the image centre, in pixels.  Empty masks get -inf (never preferred).
    """
    _check_container(masks, "masks")
    m = _to_numpy(masks)
    if m.ndim != 4 or m.shape[0] != N or m.shape[1] != C:
        raise ValueError(
            f"masks must have shape (N, C, H, W) = ({N}, {C}, H, W) matching Y, got "
            f"{tuple(m.shape)}; build one boolean mask per class (union of its instances)"
        )
    if m.dtype != np.bool_:
        bad = _distinct_bad_values(m, (0, 1))
        if bad:
            raise ValueError(f"masks must be boolean (or 0/1), found values {bad}")
        m = m.astype(bool)
    H, W = m.shape[2], m.shape[3]
    area = m.sum(axis=(2, 3)).astype(np.float64)  # (N, C)
    empty = area == 0
    if bias == "size":
        score = area
    else:
        rows = np.arange(H, dtype=np.float64)
        cols = np.arange(W, dtype=np.float64)
        safe = np.where(empty, 1.0, area)
        cy = (m.sum(axis=3) * rows).sum(axis=2) / safe  # centroid row
        cx = (m.sum(axis=2) * cols).sum(axis=2) / safe  # centroid column
        # pixel centres run 0..H-1, so the image centre is at (H-1)/2, (W-1)/2
        dist = np.hypot(cy - (H - 1) / 2.0, cx - (W - 1) / 2.0)
        score = -dist
    return np.where(empty, -np.inf, score)


def single_positive(Y: Matrix, seed: int = 0, bias: Optional[str] = None,
                    masks: Optional[Matrix] = None) -> Matrix:
    """Single positive labels (Cole et al., CVPR 2021): one observed positive per image.

    For each image with at least one true positive, exactly one of its positives is
    observed; everything else (the other positives and all negatives) is UNK.  An image
    with no true positive stays all UNK (Cole's preprocessing drops such images anyway).

    Randomness (``bias=None``): the draw is uniform over the image's positives and follows
    Cole's ``preproc/generate_observed_labels.py`` step for step: one
    ``numpy.random.RandomState(seed)`` for the whole matrix, rows visited in order, and for
    each row the positive indices are shuffled and the first is kept, *then* the negative
    indices are shuffled (Cole does this even with ``--num-neg 0``, and it consumes random
    numbers).  So ``single_positive(Y_train, seed=1200)`` on Cole's
    ``formatted_train_labels.npy`` reproduces his ``formatted_train_labels_obs.npy``
    (his script re-creates the generator per phase, i.e. call this once per file).  The
    generator is local: the global numpy / torch random state is never used.

    Label bias (``bias="size"`` or ``"location"``): the label-bias study of the Cole
    family (Arroyo et al., "Understanding Label Bias in Single Positive Multi-Label
    Learning", ICLR 2023 Tiny Papers; ``preproc/biased_labels.py``) asks which positive an
    annotator would name.  Here the choice is deterministic: ``"size"`` observes the
    positive whose mask is largest, ``"location"`` the one whose mask centroid is nearest
    the image centre.  (Arroyo et al. *sample* with weights proportional to area or to
    1/distance; the arg-max is the extreme of that bias and is easier to reason about.)
    Ties go to the lowest class index; positives with an empty mask are never preferred,
    and a row whose positives all have empty masks falls back to the uniform draw.

    Parameters
    ----------
    Y: (N, C) true {0,1} labels, numpy or torch.
    seed: seed of the local generator.
    bias: None (uniform), "size" or "location".
    masks: (N, C, H, W) boolean masks, one per class (the union of its instances);
        required when ``bias`` is given.

    Returns
    -------
    (N, C) int64 observed labels (POS / UNK), same container as ``Y``.
    """
    seed = check_seed(seed)
    arr = _as_binary(Y)
    N, C = arr.shape
    if bias not in (None, "size", "location"):
        raise ValueError(f"bias must be None, 'size' or 'location', got {bias!r}")
    if bias is not None and masks is None:
        raise ValueError(
            f"bias={bias!r} needs masks of shape (N, C, H, W) (one boolean mask per class, "
            f"e.g. from COCO instance segmentations); pass masks=... or use bias=None"
        )
    if bias is None and masks is not None:
        raise ValueError("masks were given but bias=None; pass bias='size' or 'location'")
    pref = _mask_scores(masks, N, C, bias) if bias is not None else None

    rng = np.random.RandomState(seed)
    out = np.full((N, C), UNK, dtype=np.int64)
    for i in range(N):
        row = arr[i]
        idx_pos = np.nonzero(row == 1)[0]
        rng.shuffle(idx_pos)
        idx_neg = np.nonzero(row == 0)[0]
        rng.shuffle(idx_neg)  # Cole shuffles negatives too; keep the random stream aligned
        if idx_pos.size == 0:
            continue
        choice = idx_pos[0]
        if pref is not None:
            cand = np.sort(np.nonzero(row == 1)[0])
            scores = pref[i, cand]
            if np.isfinite(scores).any():
                choice = cand[int(np.argmax(scores))]  # argmax: first (lowest index) on ties
        out[i, choice] = POS
    return _like(out, Y)


def _keep_count(k: int, alpha: float) -> int:
    """Positives kept out of ``k`` under CLS's "alpha of the positives dropped".

    ``max(1, floor((1 - alpha) * k + 1/2))``: rounding half *up*.  Python's ``round`` is
    banker's rounding (halves go to the even neighbour: ``round(2.5) == 2`` but
    ``round(3.5) == 4``), which would make the kept count jump irregularly with k at
    alpha=0.5.  The value is computed in exact
    rational arithmetic from the decimal that was typed (``Fraction(repr(alpha))``), so
    that ``1 - 0.9 = 0.09999999999999998`` cannot turn an exact half into a round-down.
    """
    if k <= 0:
        return 0
    a = Fraction(repr(float(alpha)))
    return max(1, math.floor((1 - a) * k + Fraction(1, 2)))


DROP_PROTOCOLS = ("per_label", "per_image_keep_one")


def drop_positives(Y: Matrix, alpha: float, seed: int = 0, protocol: str = "per_label") -> Matrix:
    """Drop a proportion ``alpha`` of the positive labels (CLS protocol).

    CLS (Lyu et al., AAAI 2025) follows Chen et al. (2021b, ML-GCN TPAMI): "randomly drop a
    proportion of positive labels". Two protocols:

    * ``"per_label"`` (default, the papers'): of the P positive entries of the whole matrix,
      ``round(alpha * P)`` (half up) chosen uniformly at random without replacement become
      UNK. Labels, not images, are the unit: an image may lose all its positives (its row
      is then all UNK), and the mean observed positives per image falls linearly with alpha.
    * ``"per_image_keep_one"`` (the lab's first protocol, kept as an option): each image with
      k > 0 positives keeps ``max(1, floor((1 - alpha) * k + 0.5))`` of them. With at most
      five positives per image this keeps exactly one at alpha = 0.75 — the single-positive
      regime under another name.

    Everything else (dropped positives and all negatives) is UNK. Uses
    ``numpy.random.default_rng(seed)``; the global RNG is untouched.

    Parameters
    ----------
    Y: (N, C) true {0,1} labels.
    alpha: fraction of positives to drop, in [0, 1).  (alpha=0 keeps every positive but
        still hides the negatives.)
    seed: seed of the local generator.
    protocol: ``"per_label"`` or ``"per_image_keep_one"``.

    Returns
    -------
    (N, C) int64 observed labels (POS / UNK), same container as ``Y``.
    """
    seed = check_seed(seed)
    alpha = _check_prob("alpha", alpha, low_open=False, high_open=True)
    if protocol not in DROP_PROTOCOLS:
        raise ValueError(f"protocol must be one of {DROP_PROTOCOLS}, got {protocol!r}")
    arr = _as_binary(Y)
    N, C = arr.shape
    rng = np.random.default_rng(seed)
    if protocol == "per_label":
        flat = np.flatnonzero(arr.reshape(-1) == 1)
        n_drop = math.floor(Fraction(repr(float(alpha))) * flat.size + Fraction(1, 2))
        dropped = rng.permutation(flat)[:n_drop]
        observed = (arr == 1).reshape(-1).copy()
        observed[dropped] = False
        out = np.where(observed.reshape(N, C), POS, UNK).astype(np.int64)
        return _like(out, Y)
    k = arr.sum(axis=1)
    keep = np.array([_keep_count(int(ki), alpha) for ki in range(C + 1)])[k]
    # random keys for positives, +inf for negatives: the first `keep` entries of each row's
    # argsort are a uniformly random subset of its positives
    keys = np.where(arr == 1, rng.random((N, C)), np.inf)
    order = np.argsort(keys, axis=1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(C)[None, :].repeat(N, axis=0), axis=1)
    observed = (arr == 1) & (ranks < keep[:, None])
    out = np.where(observed, POS, UNK).astype(np.int64)
    return _like(out, Y)


def _known_mask(shape, p: float, seed: int) -> np.ndarray:
    """The "known" mask of HCP-MLR-PL: entry observed iff a uniform draw is < p.

    HCP-MLR-PL's ``changeLabelProportion`` draws ``np.random.random(labels.shape)`` after
    ``np.random.seed(0)``; ``RandomState(seed).random_sample(shape)`` is that same stream,
    so seed=0 reproduces its mask, without touching the global generator.
    """
    return np.random.RandomState(seed).random_sample(shape) < p


def known_proportion(Y: Matrix, p: float, seed: int = 0) -> Matrix:
    """Each entry, positive or negative, is observed with probability ``p`` (HCP protocol).

    The "known label proportion" partial-label protocol of HCP-MLR-PL (SST, Chen et al.
    AAAI 2022; SARB, Pu et al. AAAI 2022) that PU-MLC (Yuan, Zhang, Huang, ICME 2024) copies
    with p in {10 %, ..., 90 %}.  Observed entries carry their true value (POS or NEG), the
    rest are UNK.  Entries are masked independently, so a row may end up with no observed
    positive.

    Parameters
    ----------
    Y: (N, C) true {0,1} labels.
    p: probability that an entry is observed, in (0, 1].
    seed: seed of a local ``numpy.random.RandomState`` (seed=0 gives HCP-MLR-PL's mask).

    Returns
    -------
    (N, C) int64 observed labels (POS / NEG / UNK), same container as ``Y``.
    """
    seed = check_seed(seed)
    p = _check_prob("p", p, low_open=True, high_open=False)
    arr = _as_binary(Y)
    known = _known_mask(arr.shape, p, seed)
    out = np.where(known, np.where(arr == 1, POS, NEG), UNK).astype(np.int64)
    return _like(out, Y)


def positives_only(Y: Matrix, p: float, seed: int = 0) -> Matrix:
    """The positives of :func:`known_proportion`, with every negative hidden (PU setting).

    Positive-unlabelled multi-label learning (PU-MLC, Yuan et al. ICME 2024): only some
    positives are annotated and no negative is.  The same mask as ``known_proportion(Y, p,
    seed)`` is used, so for equal ``(p, seed)`` the POS entries of both are identical; NEG
    entries become UNK.
    """
    seed = check_seed(seed)
    p = _check_prob("p", p, low_open=True, high_open=False)
    arr = _as_binary(Y)
    known = _known_mask(arr.shape, p, seed)
    out = np.where(known & (arr == 1), POS, UNK).astype(np.int64)
    return _like(out, Y)


MISSED = ("negative", "unknown")


def noisy_negatives(Y: Matrix, p: float, fn_rate: float, seed: int = 0, missed: str = "negative") -> Matrix:
    """:func:`known_proportion` with annotators who miss objects: among the observed
    negatives, a share ``fn_rate`` are in truth positives (false negatives).

    Start from ``known_proportion(Y, p, seed)``; its TN observed true negatives stay NEG. To
    reach FN / (FN + TN) = ``fn_rate``, FN = round(fn_rate · TN / (1 − fn_rate)) true
    positives, chosen uniformly at random among *all* true positives (``default_rng``; an
    annotator can mark a missed object absent whether or not the entry was in the known
    set), are reported as NEG. Observed positives are never wrong. A rate the matrix cannot
    reach (more false negatives than positives) raises. ``fn_rate = 0`` is
    ``known_proportion``. This is the regime behind
    PU-MLC's premise (annotated negatives are noisy; a positives-only learner never reads them).

    ``missed="unknown"`` is its control: the same entries are missed, but marked unknown instead
    of negative — the positives are lost as in the noisy regime, and no wrong negative is
    reported (``obs_unknown == where(obs_noisy is a false negative, UNK, obs_noisy)``).
    """
    seed = check_seed(seed)
    if missed not in MISSED:
        raise ValueError(f"missed must be one of {MISSED} (how a missed positive is reported), got {missed!r}")
    p = _check_prob("p", p, low_open=True, high_open=False)
    fn_rate = _check_prob("fn_rate", fn_rate, low_open=False, high_open=True)
    arr = _as_binary(Y)
    known = _known_mask(arr.shape, p, seed)
    out = np.where(known, np.where(arr == 1, POS, NEG), UNK).astype(np.int64)
    tn = int((known & (arr == 0)).sum())
    want = math.floor(Fraction(repr(float(fn_rate))) * tn / (1 - Fraction(repr(float(fn_rate)))) + Fraction(1, 2))
    pos_idx = np.flatnonzero((arr == 1).reshape(-1))
    if want > pos_idx.size:
        raise ValueError(f"fn_rate={fn_rate} needs {want} false negatives but Y has only "
                         f"{pos_idx.size} positives; lower fn_rate or p")
    flip = np.random.default_rng([seed, 7919]).permutation(pos_idx)[:want]
    flat = out.reshape(-1)
    flat[flip] = NEG if missed == "negative" else UNK
    return _like(flat.reshape(arr.shape), Y)


REGIMES: Dict[str, Callable[..., Matrix]] = {
    "full": full,
    "single_positive": single_positive,
    "drop_positives": drop_positives,
    "known_proportion": known_proportion,
    "positives_only": positives_only,
    "noisy_negatives": noisy_negatives,
}

# parameters each regime needs from the caller (besides Y and seed)
_REQUIRED = {"drop_positives": ("alpha",), "known_proportion": ("p",), "positives_only": ("p",),
             "noisy_negatives": ("p", "fn_rate")}


def _check_regime(name: str, params: Dict[str, Any]) -> Callable[..., Matrix]:
    if name not in REGIMES:
        raise ValueError(
            f"unknown label regime {name!r}; valid names: {', '.join(sorted(REGIMES))}"
        )
    fn = REGIMES[name]
    allowed = [q for q in inspect.signature(fn).parameters if q != "Y"]
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(
            f"regime {name!r} got unexpected parameter(s) {unknown}; it accepts {allowed}"
        )
    missing = [q for q in _REQUIRED.get(name, ()) if q not in params]
    if missing:
        raise ValueError(f"regime {name!r} needs parameter(s) {missing}, e.g. "
                         f"regime({name!r}, {missing[0]}=0.5)")
    if "alpha" in params:
        _check_prob("alpha", params["alpha"], low_open=False, high_open=True)
    if "p" in params:
        _check_prob("p", params["p"], low_open=True, high_open=False)
    if "fn_rate" in params:
        _check_prob("fn_rate", params["fn_rate"], low_open=False, high_open=True)
    if "missed" in params and params["missed"] not in MISSED:
        raise ValueError(f"missed must be one of {MISSED}, got {params['missed']!r}")
    if "protocol" in params and params["protocol"] not in DROP_PROTOCOLS:
        raise ValueError(f"protocol must be one of {DROP_PROTOCOLS}, got {params['protocol']!r}")
    if "bias" in params and params["bias"] not in (None, "size", "location"):
        raise ValueError(f"bias must be None, 'size' or 'location', got {params['bias']!r}")
    if "seed" in params and not isinstance(params["seed"], (int, np.integer)):
        raise TypeError(f"seed must be an int, got {params['seed']!r}")
    return fn


def regime(name: str, **params: Any) -> Callable[..., Matrix]:
    """Build a regime ``f(Y, seed=...)`` from its name and parameters.

    Example: ``make = regime("drop_positives", alpha=0.5); obs = make(Y, seed=1)``.
    Names: "full", "single_positive", "drop_positives" (needs ``alpha``),
    "known_proportion" (needs ``p``), "positives_only" (needs ``p``).  Parameters are
    checked here, at build time, so a bad papermill parameter fails in the first cell
    rather than after data loading.  A ``seed`` given here is a default that a later
    ``f(Y, seed=...)`` overrides.
    """
    fn = _check_regime(name, params)
    f = functools.partial(fn, **params)
    functools.update_wrapper(f, fn)
    return f


def _pct(x: float) -> str:
    return f"{100 * float(x):g} %"


def describe_regime(name: str, **params: Any) -> str:
    """A short human label for plots and tables, e.g. "drop 50 % of positives"."""
    _check_regime(name, params)
    if name == "full":
        return FULL_LABELS
    if name == "single_positive":
        bias = params.get("bias")
        return "single positive" if bias is None else f"single positive ({bias}-biased)"
    if name == "drop_positives":
        return f"drop {_pct(params['alpha'])} of positives"
    if name == "known_proportion":
        return f"known proportion {_pct(params['p'])}"
    if name == "noisy_negatives":
        hidden = " (missed positives unknown)" if params.get("missed") == "unknown" else ""
        return f"known {_pct(params['p'])}, {_pct(params['fn_rate'])} of negatives false{hidden}"
    return f"positives only, {_pct(params['p'])} known"


# ---------------------------------------------------------------------------------------
# statistics
# ---------------------------------------------------------------------------------------
def label_stats(Y: Matrix, observed: Matrix) -> Dict[str, Any]:
    """Count what a partial-label regime hides, per class and overall.

    Returns a plain dict:

    * ``per_class``: dict of int64 numpy arrays of length C

      - ``observed_positive``: Y = 1 and observed POS,
      - ``hidden_positive``:   Y = 1 and not observed POS (UNK) -- the false negatives
        that the Assume-Negative baseline trains on,
      - ``observed_negative``: Y = 0 and observed NEG,
      - ``unknown_negative``:  Y = 0 and UNK (AN gets these right by luck),
      - ``true_positive``:     Y = 1 (= observed + hidden positives);

    * ``hidden_positive_share``: hidden positives / all true positives (0 if none);
    * ``false_negative_rate_under_an``: hidden positives / all entries AN treats as
      negative (everything not observed POS) (0 if none);
    * ``num_images``, ``num_classes``;
    * ``positives_per_image``: mean number of true positives per image;
    * ``observed_positives_per_image``: mean number of observed positives per image.

    These are the bars of Fig. 4 of the GR Loss paper (Chen et al., IJCAI 2024): "pos"
    (observed positives) and "pos (missing)" (hidden positives) per class.  Raises
    ValueError if ``observed`` contradicts ``Y`` (POS where Y = 0 or NEG where Y = 1):
    the regimes of this module never do that, and noisy labels are a different problem.
    """
    y = _as_binary(Y)
    validate(observed)
    o = _to_numpy(observed).astype(np.int64)
    if o.shape != y.shape:
        raise ValueError(f"Y has shape {y.shape} but observed has shape {o.shape}; "
                         f"they must describe the same images and classes")
    wrong_pos = int(((o == POS) & (y == 0)).sum())
    wrong_neg = int(((o == NEG) & (y == 1)).sum())
    if wrong_pos or wrong_neg:
        raise ValueError(
            f"observed contradicts Y: {wrong_pos} entries are POS where Y=0 and {wrong_neg} "
            f"are NEG where Y=1; pass the true labels Y that produced these observations "
            f"(check that rows are in the same order)"
        )
    pos, unk, neg_obs = (o == POS), (o == UNK), (o == NEG)
    per_class = {
        "observed_positive": (pos & (y == 1)).sum(axis=0).astype(np.int64),
        "hidden_positive": (unk & (y == 1)).sum(axis=0).astype(np.int64),
        "observed_negative": (neg_obs & (y == 0)).sum(axis=0).astype(np.int64),
        "unknown_negative": (unk & (y == 0)).sum(axis=0).astype(np.int64),
        "true_positive": (y == 1).sum(axis=0).astype(np.int64),
    }
    n, c = y.shape
    hidden = int(per_class["hidden_positive"].sum())
    true_pos = int(per_class["true_positive"].sum())
    treated_negative = int((~pos).sum())
    return {
        "per_class": per_class,
        "hidden_positive_share": hidden / true_pos if true_pos else 0.0,
        "false_negative_rate_under_an": hidden / treated_negative if treated_negative else 0.0,
        "num_images": int(n),
        "num_classes": int(c),
        "positives_per_image": float(y.sum(axis=1).mean()) if n else 0.0,
        "observed_positives_per_image": float(pos.sum(axis=1).mean()) if n else 0.0,
    }
