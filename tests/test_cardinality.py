"""Label cardinality as side information (Gharib et al., TMLR 2025): the top-k pseudo-labels of each
grain on batches built by hand (the top-k read off the logits by eye, the observed positive always
kept), the matching of P(k) to images against a brute force over every assignment, the loss
against a per-entry loop, and the side information reaching the method from the training set."""
from __future__ import annotations

import itertools
import math
import sys
from pathlib import Path

import pytest
import torch

from mlpl_lab import losses
from mlpl_lab.losses.cardinality import cardinality_targets, match_cardinalities, slot_counts
from mlpl_lab.methods import build_method

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tiny import tiny_config, tiny_splits  # noqa: E402

# two images, five classes. Row 0: logits rank 0 (3.0) > 3 (2.0) > 1 (1.0) > 4 (0.0) > 2 (-1.0); its
# observed positive is class 4, the fourth by logit. Row 1: class 2 is an observed NEGATIVE with the
# largest logit; its observed positive is class 1; classes 0 and 3 tie at 0.5.
LOGITS = torch.tensor([[3.0, 1.0, -1.0, 2.0, 0.0],
                       [0.5, -2.0, 4.0, 0.5, -1.0]])
LABELS = torch.tensor([[-1, -1, -1, -1, 1],
                       [-1, 1, 0, -1, -1]])


def test_max_grain_by_hand():
    """K = 2: row 0's top two are its positive (4) and class 0; row 1's are its positive (1) and
    class 0 (tied with 3 at 0.5: the lower index wins); the observed negative (2) never ranks in.
    The top K other than the positive stay unknown (-1), the rest are pseudo-negatives (0).
    Bug caught: the positive not forced in (row 0 would keep 0 and 3), the negative ranked by its
    logit, the tie to the higher index, the top K made positives."""
    want = torch.tensor([[-1, 0, 0, 0, 1],
                         [-1, 1, 0, 0, 0]])
    assert torch.equal(cardinality_targets(LOGITS, LABELS, 2, "max"), want)
    # K = 1: only the positives stay; K = 0: the positives stay whatever K says
    assert torch.equal(cardinality_targets(LOGITS, LABELS, 1, "max"),
                       torch.tensor([[0, 0, 0, 0, 1], [0, 1, 0, 0, 0]]))
    assert torch.equal(cardinality_targets(LOGITS, LABELS, 0, "max"),
                       torch.tensor([[0, 0, 0, 0, 1], [0, 1, 0, 0, 0]]))
    # K = 5 (every class): nothing is a pseudo-negative; the observed negative stays 0
    assert torch.equal(cardinality_targets(LOGITS, LABELS, 5, "max"),
                       torch.tensor([[-1, -1, -1, -1, 1], [-1, 1, 0, -1, -1]]))


def test_per_image_grain_by_hand():
    """k = (3, 2): row 0's top three are 4 (positive), 0 and 3 -> pseudo-positives, the rest
    pseudo-negatives; row 1's top two are 1 (positive) and 0 (the tie). Bug caught: k not read per
    image (one k for the batch), the observed negative turned positive, the positive dropped when
    k is smaller than the positives (k = 0 below)."""
    want = torch.tensor([[1, 0, 0, 1, 1],
                         [1, 1, 0, 0, 0]])
    assert torch.equal(cardinality_targets(LOGITS, LABELS, torch.tensor([3, 2]), "per_image"), want)
    assert torch.equal(cardinality_targets(LOGITS, LABELS, [0, 4], "per_image"),
                       torch.tensor([[0, 0, 0, 0, 1], [1, 1, 0, 1, 1]]))


def test_slot_counts_and_the_matching_by_hand():
    """P(k) = (0, 0.5, 0.3, 0.2) over 5 images: 5·P = (0, 2.5, 1.5, 1.0) -> floors (0, 2, 1, 1), one
    short, remainders 0.5 tie between k = 1 and 2 -> the lower k: (0, 3, 1, 1). Expected counts
    (2.0, 0.5, 3.1, 1.0, 1.5) rank images 1, 3, 4, 0, 2 -> k̂ = (2, 1, 3, 1, 1); a floor of 2
    observed positives on image 1 lifts it to 2."""
    assert slot_counts([0, 0.5, 0.3, 0.2], 5).tolist() == [0, 3, 1, 1]
    e = torch.tensor([2.0, 0.5, 3.1, 1.0, 1.5])
    assert match_cardinalities(e, [0, 0.5, 0.3, 0.2]).tolist() == [2, 1, 3, 1, 1]
    assert match_cardinalities(e, [0, 0.5, 0.3, 0.2], min_k=torch.tensor([1, 2, 1, 1, 1])).tolist() == \
        [2, 2, 3, 1, 1]


@pytest.mark.parametrize("seed", range(4))
def test_the_matching_is_a_minimum_cost_perfect_matching(seed):
    """Oracle: every assignment of the multiset of cardinalities to 6 images (brute force); the
    sorted matching's cost Σ|e − k| is the minimum, and so is its squared cost. Bug caught: the
    slots matched in the opposite order, or unsorted."""
    g = torch.Generator().manual_seed(seed)
    e = torch.rand(6, generator=g) * 4
    pk = torch.rand(4, generator=g)
    got = match_cardinalities(e, pk)
    slots = sorted(got.tolist())
    assert slots == sorted(torch.repeat_interleave(torch.arange(4), slot_counts(pk, 6)).tolist())
    for power in (1, 2):
        best = min(sum(abs(float(e[i]) - k) ** power for i, k in enumerate(perm))
                   for perm in set(itertools.permutations(slots)))
        assert sum(abs(float(e[i]) - int(got[i])) ** power for i in range(6)) == pytest.approx(best)


def test_the_loss_is_bce_on_the_pseudo_labels():
    """A per-entry loop over the hand targets above: -log σ(z) on 1, -log(1 − σ(z)) on 0, nothing
    on -1, averaged over all N × C entries. Bug caught: unknowns charged, the mean over the scored
    entries only, the wrong sign of a term."""
    def sig(z):
        return 1 / (1 + math.exp(-z))

    for grain, k, T in (("max", 2, [[-1, 0, 0, 0, 1], [-1, 1, 0, 0, 0]]),
                        ("per_image", torch.tensor([3, 2]), [[1, 0, 0, 1, 1], [1, 1, 0, 0, 0]])):
        total = 0.0
        for i in range(2):
            for j in range(5):
                p = sig(float(LOGITS[i, j]))
                total += -math.log(p) if T[i][j] == 1 else (-math.log(1 - p) if T[i][j] == 0 else 0.0)
        got = losses.get("cardinality")(LOGITS.double(), LABELS, k=k, grain=grain)
        assert float(got) == pytest.approx(total / 10, abs=1e-12)
    z = LOGITS.double().clone()
    z[1, 3] = 0.2  # away from the tie: a finite difference there would change the selection
    torch.autograd.gradcheck(lambda t: losses.get("cardinality")(t, LABELS, k=2), (z.requires_grad_(True),))


def test_bad_side_information_is_refused():
    with pytest.raises(ValueError, match="one integer K"):
        cardinality_targets(LOGITS, LABELS, [1, 2], "max")
    with pytest.raises(ValueError, match="one per image"):
        cardinality_targets(LOGITS, LABELS, [1, 2, 3], "per_image")
    with pytest.raises(ValueError, match=">= 0"):
        cardinality_targets(LOGITS, LABELS, -1, "max")
    with pytest.raises(ValueError, match="grain"):
        cardinality_targets(LOGITS, LABELS, 1, "distribution")
    with pytest.raises(ValueError, match="non-negative"):
        slot_counts([0.5, -0.1], 3)
    for bad in ({"grain": "mean"}, {"grain": "per_image", "max_k": 2}, {"grain": "max", "distribution": [1.0]},
                {"warmup_epochs": -1}):
        with pytest.raises(ValueError):
            build_method("cardinality", **bad)


# ---------------------------------------------------------------------------------------- the method
@pytest.fixture(scope="module")
def splits():
    return tiny_splits()


class WithSideInfo:
    """The training set with a ``side_info`` mapping (the engine hands it to the method)."""

    def __init__(self, ds, side_info):
        self.ds, self.observed, self.labels, self.side_info = ds, ds.observed, ds.labels, side_info

    def __len__(self):
        return len(self.ds)

    def get_batch(self, idx):
        return self.ds.get_batch(idx)


def test_the_side_information_reaches_the_method(splits):
    """Without side_info, each grain's value is the truth's statistic (oracle: computed here from
    the true labels); with it, the given values win (the engine's hook). The per-image k of a
    batch is that of its rows (batch["index"]). Bug caught: the hook dropped, a per-image value
    read in the wrong row order, the observed labels counted instead of the true ones."""
    from mlpl_lab.engine.train import fit

    truth_k = splits.train.labels.sum(1)
    cfg = tiny_config(epochs=1)
    per = fit("cardinality", splits.train, splits.val, splits.test, cfg, grain="per_image").method
    assert torch.equal(per.k, truth_k)
    assert int(fit("cardinality", splits.train, splits.val, splits.test, cfg).method.k) == int(truth_k.max())
    given = torch.arange(len(splits.train)) % 3
    per2 = fit("cardinality", WithSideInfo(splits.train, {"cardinality": given}), splits.val, splits.test,
               cfg, grain="per_image").method
    assert torch.equal(per2.k, given)
    rows = torch.tensor([5, 0, 7])
    assert per2.batch_k({"index": rows}).tolist() == [2, 0, 1]
    mx = fit("cardinality", WithSideInfo(splits.train, {"cardinality": given}), splits.val, splits.test,
             cfg).method
    assert int(mx.k) == 2  # the max of the given counts, not of the truth
    assert int(build_method("cardinality", max_k=4).hparams["max_k"]) == 4


def test_the_distribution_grain_matches_every_epoch(splits):
    """After the warm-up, k̂ holds one cardinality per image: the N slots n·P(k) of the truth's P(k)
    (largest remainder), each raised at most to its image's observed positives — so sorted k̂
    dominates the sorted slots entry by entry and never exceeds the larger of the two maxima; the
    log carries the share matched exactly from the first matched epoch on. Bug caught: k̂ never
    computed, the slots of another distribution, the floor not applied."""
    from mlpl_lab.engine.train import fit

    r = fit("cardinality", splits.train, splits.val, splits.test, tiny_config(epochs=2), grain="distribution")
    k = r.method.k
    assert k is not None and k.shape == (len(splits.train),)
    truth_k = splits.train.labels.sum(1)
    pk = torch.bincount(truth_k).double() / len(truth_k)
    slots = torch.repeat_interleave(torch.arange(len(pk)), slot_counts(pk, len(k)))
    floor = (splits.train.observed == 1).sum(1)
    assert bool((k >= floor).all())
    assert bool((torch.sort(k).values >= torch.sort(slots).values).all())
    assert int(k.max()) <= max(int(slots.max()), int(floor.max()))
    assert "cardinality_exact" in r.history[1] and "cardinality_exact" not in r.history[0]
