"""One label encoding for the whole lab, its converters and its checks.

An *observed-label matrix* is a 2-D (N images x C classes) integer matrix holding only

* ``POS = 1``  -- the annotator said "this class is present",
* ``NEG = 0``  -- the annotator said "this class is absent",
* ``UNK = -1`` -- nobody said anything (the label is missing).

The *true-label matrix* ``Y`` is a plain {0, 1} matrix.  Every other code base in this
field uses a different encoding (the table below):

=============================================  ========  ========  =======
source                                         positive  negative  unknown
=============================================  ========  ========  =======
mlpl_lab (this module)                         1         0         -1
Cole et al. 2021 family (LL, EM/APL, GR Loss)  +1        -1        0
HCP-MLR-PL (SST/SARB/HST) and PU-MLC           1         -1        0
=============================================  ========  ========  =======

Because all three use the value set {-1, 0, 1}, a matrix in the wrong encoding passes a
naive range check and silently means something else (users of Cole's code hit exactly
this, elijahcole/single-positive-multi-label issues #6 and #12).  So: convert at the edges
with the named converters below and call :func:`validate` at every boundary. The regimes that
turn true labels into observed ones live in :mod:`mlpl_lab.core.regimes`.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Union

import numpy as np
import torch

__all__ = ["POS", "NEG", "UNK", "validate", "from_cole", "to_cole", "from_hcp", "to_hcp",
           "assume_negative", "check_seed"]

POS: int = 1
NEG: int = 0
UNK: int = -1

Matrix = Union[np.ndarray, torch.Tensor]

_VALID = (UNK, NEG, POS)
_HINT = "use POS=1, NEG=0, UNK=-1; convert Cole-style +1/-1/0 with from_cole"


# ---------------------------------------------------------------------------------------
# helpers: work in numpy, give back what came in
# ---------------------------------------------------------------------------------------
def _check_container(x: Any, what: str) -> None:
    if not isinstance(x, (np.ndarray, torch.Tensor)):
        raise TypeError(
            f"{what} must be a torch.Tensor or a numpy.ndarray, got {type(x).__name__}; "
            f"wrap lists with numpy.asarray(...) or torch.as_tensor(...)"
        )


def _to_numpy(x: Matrix) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def _like(result: np.ndarray, template: Matrix) -> Matrix:
    """Return ``result`` (numpy, int64 or float) as the container type of ``template``.

    torch in -> torch out on the template's device; numpy in -> numpy out.
    """
    if isinstance(template, torch.Tensor):
        return torch.from_numpy(np.ascontiguousarray(result)).to(template.device)
    return result


def _distinct_bad_values(arr: np.ndarray, allowed) -> list:
    """Up to five distinct values of ``arr`` that are not in ``allowed`` (NaN included)."""
    flat = arr.reshape(-1)
    if flat.dtype == np.bool_:
        return []
    bad_mask = ~np.isin(flat, np.asarray(allowed))
    bad = np.unique(flat[bad_mask])  # np.unique sorts and keeps one NaN
    return [v.item() for v in bad[:5]]


def _check_2d(arr: np.ndarray, what: str) -> None:
    if arr.ndim != 2:
        raise ValueError(
            f"{what} must be 2-D (num_images, num_classes), got shape {tuple(arr.shape)}; "
            f"for a single image use x[None, :] (numpy) or x.unsqueeze(0) (torch)"
        )


def _check_numeric_dtype(arr: np.ndarray, what: str) -> None:
    if not (arr.dtype == np.bool_ or np.issubdtype(arr.dtype, np.integer)
            or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(
            f"{what} has dtype {arr.dtype}, expected an integer, float or bool dtype; "
            f"cast it with .astype(np.int64) / .long()"
        )


def _check_integral(arr: np.ndarray, what: str) -> None:
    """A float matrix is accepted only if every entry is a whole number (hard codes)."""
    if np.issubdtype(arr.dtype, np.floating):
        finite = np.isfinite(arr)
        nonint = ~finite | (np.floor(np.where(finite, arr, 0)) != np.where(finite, arr, 0))
        if nonint.any():
            examples = [v.item() for v in np.unique(arr[nonint])[:5]]
            raise ValueError(
                f"{what} has float dtype {arr.dtype} holding non-integral values "
                f"{examples}; label matrices hold hard codes ({_HINT}). Soft targets or "
                f"probabilities belong in a separate float tensor, not in the label matrix"
            )


def _as_binary(Y: Matrix, what: str = "Y") -> np.ndarray:
    """Validate a true-label matrix (2-D, values in {0, 1}) and return it as int64 numpy."""
    _check_container(Y, what)
    arr = _to_numpy(Y)
    _check_2d(arr, what)
    _check_numeric_dtype(arr, what)
    _check_integral(arr, what)
    bad = _distinct_bad_values(arr, (0, 1))
    if bad:
        hint = ""
        if set(bad) <= {-1}:
            hint = (" (a -1 suggests an observed-label or Cole/HCP matrix; regimes need the "
                    "TRUE labels as a {0,1} matrix)")
        raise ValueError(
            f"{what} must be a binary {{0,1}} true-label matrix, found values {bad}{hint}"
        )
    return arr.astype(np.int64, copy=False)


def _check_prob(name: str, value: Any, low_open: bool, high_open: bool, low=0.0, high=1.0):
    """Range check for alpha / p with a message that states the valid interval."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, got {value!r}") from None
    ok_low = v > low if low_open else v >= low
    ok_high = v < high if high_open else v <= high
    if not (ok_low and ok_high) or math.isnan(v):
        interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        raise ValueError(f"{name} must be in {interval}, got {value!r}")
    return v


# ---------------------------------------------------------------------------------------
# validation and converters
# ---------------------------------------------------------------------------------------
def validate(observed: Matrix, num_classes: Optional[int] = None) -> Matrix:
    """Check that ``observed`` is an observed-label matrix in the lab's encoding.

    Parameters
    ----------
    observed:
        torch tensor or numpy array of shape (N, C) holding only ``POS=1``, ``NEG=0`` and
        ``UNK=-1``.  Integer, bool and float dtypes are accepted, a float one only when
        every entry is a whole number.
    num_classes:
        if given, the number of columns must equal it.

    Returns
    -------
    The input object itself, unchanged, so ``obs = validate(obs)`` reads naturally.

    Raises
    ------
    TypeError  if it is neither a tensor nor an array.
    ValueError naming the problem: wrong ndim, wrong width, non-integral floats, or values
               outside {-1, 0, 1} (up to five of them are listed).
    """
    _check_container(observed, "observed")
    arr = _to_numpy(observed)
    _check_2d(arr, "observed")
    if num_classes is not None and arr.shape[1] != int(num_classes):
        raise ValueError(
            f"observed has {arr.shape[1]} columns but num_classes={num_classes}; "
            f"the matrix must be (num_images, num_classes) -- did you pass it transposed?"
        )
    _check_numeric_dtype(arr, "observed")
    _check_integral(arr, "observed")
    bad = _distinct_bad_values(arr, _VALID)
    if bad:
        raise ValueError(f"observed holds invalid label values {bad}; {_HINT}")
    return observed


def _remap(x: Matrix, what: str, src_pos: int, src_neg: int, src_unk: int,
           dst_pos: int, dst_neg: int, dst_unk: int) -> Matrix:
    """Vectorised value map between two {-1,0,1} encodings; int64 out, same container."""
    _check_container(x, what)
    arr = _to_numpy(x)
    _check_2d(arr, what)
    _check_numeric_dtype(arr, what)
    _check_integral(arr, what)
    bad = _distinct_bad_values(arr, (src_pos, src_neg, src_unk))
    if bad:
        raise ValueError(
            f"{what} holds values {bad} outside its encoding "
            f"(positive={src_pos}, negative={src_neg}, unknown={src_unk})"
        )
    arr = arr.astype(np.int64)
    out = np.empty_like(arr)
    out[arr == src_pos] = dst_pos
    out[arr == src_neg] = dst_neg
    out[arr == src_unk] = dst_unk
    return _like(out, x)


def from_cole(labels: Matrix) -> Matrix:
    """Cole et al. encoding (+1 positive, -1 negative, 0 unknown) -> ours (1, 0, -1).

    The Cole family (Cole et al., "Multi-Label Learning from Single Positive Labels",
    CVPR 2021, code ``elijahcole/single-positive-multi-label``; reused by Large Loss
    Matters, EM/APL, GR Loss and LAGC) stores observed labels in
    ``formatted_*_labels_obs.npy`` as +1 / 0 / -1 with 0 = unobserved (see its
    ``preproc/generate_observed_labels.py``).  Returns int64, same container (numpy or
    torch, same device) as the input.
    """
    return _remap(labels, "Cole-encoded labels", 1, -1, 0, POS, NEG, UNK)


def to_cole(observed: Matrix) -> Matrix:
    """Ours (1, 0, -1) -> Cole et al. encoding (+1, -1, 0).  Inverse of :func:`from_cole`.

    Use it only at the boundary with code from the Cole family (their SPML losses expect
    +1 observed positive, 0 unobserved, -1 observed negative).  int64, same container.
    """
    validate(observed)
    return _remap(observed, "observed", POS, NEG, UNK, 1, -1, 0)


def from_hcp(labels: Matrix) -> Matrix:
    """HCP-MLR-PL / PU-MLC encoding (1 positive, -1 negative, 0 unknown) -> ours.

    HCP-MLR-PL (Pu et al. SARB, Chen et al. SST/HST; repo ``HCPLab-SYSU/HCP-MLR-PL``)
    builds partial labels by multiplying the {1,-1} label matrix with a random {0,1}
    "known" mask, so 0 means unknown; PU-MLC (Yuan, Zhang, Huang, ICME 2024,
    ``TAKELAMAG/PU-MLC``) copies that protocol.  The mapping is the same as Cole's; it is a
    separate function so that code says where its labels came from.
    """
    return _remap(labels, "HCP-encoded labels", 1, -1, 0, POS, NEG, UNK)


def to_hcp(observed: Matrix) -> Matrix:
    """Ours (1, 0, -1) -> HCP-MLR-PL / PU-MLC encoding (1, -1, 0).  Inverse of from_hcp."""
    validate(observed)
    return _remap(observed, "observed", POS, NEG, UNK, 1, -1, 0)


def assume_negative(observed: Matrix) -> Matrix:
    """The Assume-Negative (AN) targets: observed positives -> 1, everything else -> 0.

    This is the "AN" baseline of Cole et al. (CVPR 2021, Sec. 3): every unobserved label is
    treated as a negative, which turns each hidden positive into a false negative.  Returns
    float32 {0,1} targets in the input's container (torch on the same device, or numpy),
    ready for ``binary_cross_entropy``.
    """
    validate(observed)
    arr = _to_numpy(observed)
    return _like((arr == POS).astype(np.float32), observed)


#: seeds are integers in [0, 2**32): numpy's RandomState and torch accept them all
SEED_MAX = 2**32 - 1


def check_seed(seed, name: str = "seed") -> int:
    """Return ``seed`` as an int, or raise naming the problem: every random draw of the lab
    is seeded, and ``None`` would silently make it non-deterministic."""
    if seed is None:
        raise ValueError(f"{name}=None: every random draw of mlpl_lab is seeded; pass an integer "
                         f"in [0, {SEED_MAX}] (e.g. {name}=0)")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"{name} must be an integer in [0, {SEED_MAX}], got {seed!r} "
                        f"({type(seed).__name__})")
    if not 0 <= int(seed) <= SEED_MAX:
        raise ValueError(f"{name} must be in [0, {SEED_MAX}], got {seed}")
    return int(seed)


