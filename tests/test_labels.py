"""Tests of mlpl_lab.core.labels: encoding, converters, regimes, statistics, plots."""

import math

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from mlpl_lab.core import labels as L



from mlpl_lab.core import regimes as R
def random_Y(n=200, c=12, p=0.3, seed=0):
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, c)) < p).astype(np.int64)
    Y[0] = 0  # one row without positives
    Y[1] = 1  # one row with all positives
    return Y


binary_matrices = arrays(np.int64, st.tuples(st.integers(1, 12), st.integers(1, 8)),
                         elements=st.integers(0, 1))


# --------------------------------------------------------------------------- validate
def test_constants():
    assert (L.POS, L.NEG, L.UNK) == (1, 0, -1)


def test_validate_accepts_and_returns_input():
    x = np.array([[1, 0, -1], [-1, -1, 1]])
    assert L.validate(x) is x
    t = torch.tensor(x)
    assert L.validate(t, num_classes=3) is t
    assert L.validate(t.float()) is not None  # integral floats are fine


def test_validate_bad_values_lists_them_and_suggests_from_cole():
    x = np.array([[2, 0, -1], [5, 7, 3], [1, 9, 11], [4, 4, 4]])
    with pytest.raises(ValueError) as e:
        L.validate(x)
    msg = str(e.value)
    assert "[2, 3, 4, 5, 7]" in msg  # up to five distinct offending values, sorted
    assert "from_cole" in msg and "UNK=-1" in msg


def test_validate_errors_shape_dtype_num_classes():
    with pytest.raises(ValueError, match="2-D"):
        L.validate(np.array([1, 0, -1]))
    with pytest.raises(ValueError, match="num_classes"):
        L.validate(np.zeros((3, 4)), num_classes=5)
    with pytest.raises(ValueError, match="non-integral"):
        L.validate(torch.tensor([[0.5, 1.0]]))
    with pytest.raises(ValueError, match="non-integral"):
        L.validate(np.array([[np.nan, 1.0]]))
    with pytest.raises(TypeError, match="torch.Tensor or a numpy.ndarray"):
        L.validate([[1, 0]])


# --------------------------------------------------------------------------- converters
def test_cole_and_hcp_mappings():
    cole = np.array([[1, -1, 0]])
    assert L.from_cole(cole).tolist() == [[L.POS, L.NEG, L.UNK]]
    assert L.from_hcp(cole).tolist() == [[L.POS, L.NEG, L.UNK]]
    ours = np.array([[L.POS, L.NEG, L.UNK]])
    assert L.to_cole(ours).tolist() == [[1, -1, 0]]
    assert L.to_hcp(ours).tolist() == [[1, -1, 0]]


def test_converters_keep_container_type():
    t = torch.tensor([[1, -1, 0]], dtype=torch.float32)
    out = L.from_cole(t)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.int64
    out = L.to_cole(np.array([[1, 0, -1]]))
    assert isinstance(out, np.ndarray) and out.dtype == np.int64


def test_converters_validate():
    with pytest.raises(ValueError):
        L.from_cole(np.array([[2, 0]]))
    with pytest.raises(ValueError):
        L.to_cole(np.array([[1, 3]]))


@settings(max_examples=50, deadline=None)
@given(arrays(np.int64, st.tuples(st.integers(1, 10), st.integers(1, 10)),
              elements=st.sampled_from([-1, 0, 1])))
def test_converters_round_trip(obs):
    assert np.array_equal(L.from_cole(L.to_cole(obs)), obs)
    assert np.array_equal(L.to_cole(L.from_cole(obs)), obs)
    assert np.array_equal(L.from_hcp(L.to_hcp(obs)), obs)
    t = torch.from_numpy(obs)
    assert torch.equal(L.from_cole(L.to_cole(t)), t)


def test_assume_negative():
    obs = torch.tensor([[1, 0, -1], [-1, 1, 1]])
    an = L.assume_negative(obs)
    assert an.dtype == torch.float32
    assert an.tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]]
    assert isinstance(L.assume_negative(obs.numpy()), np.ndarray)
    with pytest.raises(ValueError):
        L.assume_negative(np.array([[1, -1, 2]]))


# --------------------------------------------------------------------------- regimes
def test_full():
    Y = random_Y()
    obs = R.full(Y)
    assert np.array_equal(obs, np.where(Y == 1, L.POS, L.NEG))
    assert obs.dtype == np.int64
    obs_t = R.full(torch.from_numpy(Y))
    assert isinstance(obs_t, torch.Tensor) and obs_t.dtype == torch.int64


def check_single_positive(Y, obs):
    Y = np.asarray(Y)
    obs = np.asarray(obs)
    has_pos = Y.sum(1) > 0
    n_obs = (obs == L.POS).sum(1)
    assert np.all(n_obs[has_pos] == 1)
    assert np.all(obs[~has_pos] == L.UNK)
    assert np.all(Y[obs == L.POS] == 1)  # always a true positive
    assert not np.any(obs == L.NEG)  # nothing else observed
    assert set(np.unique(obs)) <= {L.POS, L.UNK}


def test_single_positive_invariants_and_determinism():
    Y = random_Y()
    a = R.single_positive(Y, seed=3)
    check_single_positive(Y, a)
    assert np.array_equal(a, R.single_positive(Y, seed=3))
    assert not np.array_equal(a, R.single_positive(Y, seed=4))


def test_single_positive_types():
    Y = random_Y(30, 5)
    assert isinstance(R.single_positive(Y), np.ndarray)
    out = R.single_positive(torch.from_numpy(Y))
    assert isinstance(out, torch.Tensor) and out.dtype == torch.int64
    assert np.array_equal(out.numpy(), R.single_positive(Y))
    # a bool true-label tensor is a valid binary matrix
    check_single_positive(Y, R.single_positive(torch.from_numpy(Y).bool()))


def test_single_positive_is_uniform_over_positives():
    Y = np.tile(np.array([[1, 1, 1, 0]]), (3000, 1))
    obs = R.single_positive(Y, seed=0)
    counts = (obs == L.POS).sum(0)
    assert counts[3] == 0
    assert np.all(np.abs(counts[:3] / 3000 - 1 / 3) < 0.04)


def test_single_positive_matches_cole_generator():
    """Re-implement Cole's generate_observed_labels.observe_uniform and compare."""
    Y = random_Y(50, 7, seed=5)
    rng = np.random.RandomState(1200)
    lm = np.where(Y == 1, 1.0, -1.0)
    expected = np.zeros_like(lm)
    for i in range(lm.shape[0]):
        idx_pos = np.nonzero(lm[i] == 1.0)[0]
        rng.shuffle(idx_pos)
        expected[i, idx_pos[:1]] = 1.0
        idx_neg = np.nonzero(lm[i] == -1.0)[0]
        rng.shuffle(idx_neg)
        expected[i, idx_neg[:0]] = -1.0
    assert np.array_equal(R.single_positive(Y, seed=1200), L.from_cole(expected.astype(int)))


def test_regimes_leave_global_rng_untouched():
    Y = random_Y()
    np.random.seed(123)
    torch.manual_seed(123)
    np_state = np.random.get_state()
    torch_state = torch.get_rng_state()
    R.single_positive(Y, seed=1)
    R.drop_positives(Y, 0.5, seed=1)
    R.known_proportion(Y, 0.3, seed=1)
    R.positives_only(Y, 0.3, seed=1)
    R.regime("single_positive")(torch.from_numpy(Y), seed=2)
    after = np.random.get_state()
    assert after[0] == np_state[0] and np.array_equal(after[1], np_state[1])
    assert after[2:] == np_state[2:]
    assert torch.equal(torch.get_rng_state(), torch_state)


def test_single_positive_bias_size_and_location():
    N, C, H, W = 2, 3, 9, 9
    Y = np.array([[1, 1, 1], [1, 0, 1]])
    masks = np.zeros((N, C, H, W), dtype=bool)
    masks[0, 0, :2, :2] = True          # small, in a corner
    masks[0, 1, :6, :6] = True          # large, off centre
    masks[0, 2, 3:6, 3:6] = True        # medium, centred on (4, 4)
    masks[1, 0, 0:3, 0:3] = True
    masks[1, 2, 0:4, 5:9] = True
    size = R.single_positive(Y, bias="size", masks=masks)
    assert size[0].tolist() == [L.UNK, L.POS, L.UNK]
    assert size[1].tolist() == [L.UNK, L.UNK, L.POS]
    loc = R.single_positive(Y, bias="location", masks=torch.from_numpy(masks))
    assert loc[0].tolist() == [L.UNK, L.UNK, L.POS]
    check_single_positive(Y, loc)
    with pytest.raises(ValueError, match="needs masks"):
        R.single_positive(Y, bias="size")
    with pytest.raises(ValueError, match="shape"):
        R.single_positive(Y, bias="size", masks=masks[:, :2])
    with pytest.raises(ValueError, match="bias"):
        R.single_positive(Y, bias="colour", masks=masks)


def test_single_positive_bias_empty_masks_fall_back_to_uniform():
    Y = np.ones((1, 3), dtype=int)
    masks = np.zeros((1, 3, 4, 4), dtype=bool)
    obs = R.single_positive(Y, seed=0, bias="size", masks=masks)
    assert np.array_equal(obs, R.single_positive(Y, seed=0))


@pytest.mark.parametrize("alpha", [0.0, 0.1, 0.3, 0.5, 0.7, 0.9])
def test_drop_positives_counts_per_image_keep_one(alpha):
    Y = random_Y(300, 15, p=0.4)
    obs = R.drop_positives(Y, alpha, seed=1, protocol="per_image_keep_one")
    k = Y.sum(1)
    kept = (obs == L.POS).sum(1)
    expected = np.array([0 if ki == 0 else max(1, math.floor((1 - alpha) * ki + 0.5 + 1e-9))
                         for ki in k])
    assert np.array_equal(kept, expected)
    assert np.all(Y[obs == L.POS] == 1)
    assert set(np.unique(obs)) <= {L.POS, L.UNK}


def test_drop_positives_rounding_is_half_up():
    # alpha = 0.5 on k = 1..6 positives: half-up gives 1, 1, 2, 2, 3, 3
    Y = np.zeros((6, 6), dtype=int)
    for i in range(6):
        Y[i, : i + 1] = 1
    kept = (R.drop_positives(Y, 0.5, seed=0, protocol="per_image_keep_one") == L.POS).sum(1)
    assert kept.tolist() == [1, 1, 2, 2, 3, 3]
    # 1 - 0.9 is 0.0999...98 in floating point; 15 positives must still keep round(1.5) = 2
    Y15 = np.ones((1, 15), dtype=int)
    assert (R.drop_positives(Y15, 0.9, protocol="per_image_keep_one") == L.POS).sum() == 2


@pytest.mark.parametrize("alpha", [0.0, 0.25, 0.5, 0.75, 0.9])
def test_drop_positives_per_label_drops_that_share_of_all_positives(alpha):
    Y = random_Y(300, 15, p=0.3)
    obs = R.drop_positives(Y, alpha, seed=4)
    P = int(Y.sum())
    dropped = int(((Y == 1) & (obs == L.UNK)).sum())
    assert dropped == math.floor(alpha * P + 0.5 + 1e-9)  # round half up of alpha * P
    assert np.all(Y[obs == L.POS] == 1) and set(np.unique(obs)) <= {L.POS, L.UNK}
    if alpha >= 0.5:  # labels, not images, are the unit: some images lose every positive
        assert ((obs == L.POS).sum(1)[Y.sum(1) > 0] == 0).any()


def test_drop_rates_are_distinct_regimes_on_the_scenes():
    """The CLS chapter's rows: observed positives per image fall by >= 0.3 from one rate to
    the next, and drop 75 % observes >= 0.2 fewer than single positive (cpu-profile data)."""
    from mlpl_lab.data import make_scenes

    Y = make_scenes(4000, seed=0).labels.numpy()
    per_image = {a: (R.drop_positives(Y, a, seed=0) == L.POS).sum(1).mean() for a in (0.25, 0.5, 0.75)}
    assert per_image[0.25] - per_image[0.5] >= 0.3 and per_image[0.5] - per_image[0.75] >= 0.3
    sp = (R.single_positive(Y, seed=0) == L.POS).sum(1).mean()
    assert sp - per_image[0.75] >= 0.2


def test_drop_positives_determinism_and_errors():
    Y = random_Y()
    assert np.array_equal(R.drop_positives(Y, 0.5, seed=2), R.drop_positives(Y, 0.5, seed=2))
    assert not np.array_equal(R.drop_positives(Y, 0.5, seed=2), R.drop_positives(Y, 0.5, seed=3))
    for bad in (1.0, -0.1, 1.5):
        with pytest.raises(ValueError, match=r"\[0, 1\)"):
            R.drop_positives(Y, bad)
    out = R.drop_positives(torch.from_numpy(Y), 0.5)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.int64


def test_known_proportion():
    Y = random_Y(400, 50, p=0.2)
    for p in (0.1, 0.5):
        obs = R.known_proportion(Y, p, seed=0)
        known = obs != L.UNK
        assert abs(known.mean() - p) < 0.02
        assert np.array_equal(obs[known], Y[known])  # POS where Y=1, NEG where Y=0
    assert np.array_equal(R.known_proportion(Y, 1.0), R.full(Y))
    assert np.array_equal(R.known_proportion(Y, 0.3, seed=5), R.known_proportion(Y, 0.3, seed=5))
    assert not np.array_equal(R.known_proportion(Y, 0.3, seed=5),
                              R.known_proportion(Y, 0.3, seed=6))
    for bad in (0.0, 1.01, -1):
        with pytest.raises(ValueError, match=r"\(0, 1\]"):
            R.known_proportion(Y, bad)


def test_known_proportion_matches_hcp_mask():
    """HCP-MLR-PL: np.random.seed(0); mask = np.random.random(shape) < p."""
    Y = random_Y(20, 6)
    state = np.random.get_state()
    np.random.seed(0)
    mask = np.random.random(Y.shape) < 0.4
    np.random.set_state(state)
    obs = R.known_proportion(Y, 0.4, seed=0)
    assert np.array_equal(obs != L.UNK, mask)


def test_positives_only_is_positive_part_of_known_proportion():
    Y = random_Y()
    kp = R.known_proportion(Y, 0.3, seed=9)
    po = R.positives_only(Y, 0.3, seed=9)
    assert np.array_equal(po == L.POS, kp == L.POS)
    assert not np.any(po == L.NEG)


@settings(max_examples=50, deadline=None)
@given(binary_matrices, st.integers(0, 2**31 - 1))
def test_property_single_positive(Y, seed):
    check_single_positive(Y, R.single_positive(Y, seed=seed))


@settings(max_examples=50, deadline=None)
@given(binary_matrices, st.floats(0.0, 0.95), st.floats(0.05, 1.0), st.integers(0, 1000))
def test_property_regimes_never_contradict_truth(Y, alpha, p, seed):
    for obs in (R.drop_positives(Y, alpha, seed), R.known_proportion(Y, p, seed),
                R.positives_only(Y, p, seed), R.full(Y)):
        L.validate(obs, num_classes=Y.shape[1])
        assert np.all(Y[obs == L.POS] == 1)
        assert np.all(Y[obs == L.NEG] == 0)
    kept = (R.drop_positives(Y, alpha, seed, protocol="per_image_keep_one") == L.POS).sum(1)
    assert np.all(kept[Y.sum(1) > 0] >= 1)


def test_regimes_reject_non_binary_Y():
    with pytest.raises(ValueError, match="binary"):
        R.single_positive(np.array([[1, -1, 0]]))
    with pytest.raises(ValueError, match="2-D"):
        R.full(np.array([1, 0]))


# --------------------------------------------------------------------------- regime()
def test_regime_builder():
    Y = random_Y()
    f = R.regime("drop_positives", alpha=0.5)
    assert np.array_equal(f(Y, seed=4), R.drop_positives(Y, 0.5, seed=4))
    g = R.regime("known_proportion", p=0.2, seed=7)
    assert np.array_equal(g(Y), R.known_proportion(Y, 0.2, seed=7))
    assert np.array_equal(R.regime("single_positive")(Y, seed=1), R.single_positive(Y, seed=1))
    assert set(R.REGIMES) - {"noisy_negatives"} == {"full", "single_positive", "drop_positives",
                              "known_proportion", "positives_only"}


def test_regime_errors_at_build_time():
    with pytest.raises(ValueError, match="valid names"):
        R.regime("singel_positive")
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        R.regime("drop_positives", alpha=1.0)
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        R.regime("positives_only", p=0)
    with pytest.raises(ValueError, match="needs"):
        R.regime("known_proportion")
    with pytest.raises(ValueError, match="unexpected"):
        R.regime("full", alpha=0.3)


def test_describe_regime():
    assert R.describe_regime("single_positive") == "single positive"
    assert R.describe_regime("drop_positives", alpha=0.5) == "drop 50 % of positives"
    assert R.describe_regime("known_proportion", p=0.1) == "known proportion 10 %"
    assert R.describe_regime("full") == "full labels"
    assert "10 %" in R.describe_regime("positives_only", p=0.1)


# --------------------------------------------------------------------------- stats
def test_label_stats_hand_example():
    Y = np.array([[1, 1, 0], [0, 1, 0], [1, 0, 0]])
    obs = np.array([[1, -1, 0], [-1, 1, -1], [-1, -1, -1]])
    s = R.label_stats(Y, obs)
    pc = s["per_class"]
    assert pc["observed_positive"].tolist() == [1, 1, 0]
    assert pc["hidden_positive"].tolist() == [1, 1, 0]
    assert pc["observed_negative"].tolist() == [0, 0, 1]
    assert pc["unknown_negative"].tolist() == [1, 1, 2]
    assert s["hidden_positive_share"] == pytest.approx(2 / 4)
    assert s["false_negative_rate_under_an"] == pytest.approx(2 / 7)
    assert (s["num_images"], s["num_classes"]) == (3, 3)
    assert s["positives_per_image"] == pytest.approx(4 / 3)


def test_label_stats_partition_and_contradiction():
    Y = random_Y()
    obs = R.known_proportion(Y, 0.4, seed=1)
    pc = R.label_stats(torch.from_numpy(Y), torch.from_numpy(obs))["per_class"]
    total = sum(pc[k] for k in ("observed_positive", "hidden_positive", "observed_negative",
                                "unknown_negative"))
    assert np.all(total == Y.shape[0])
    assert R.label_stats(Y, R.full(Y))["hidden_positive_share"] == 0.0
    with pytest.raises(ValueError, match="contradicts"):
        R.label_stats(Y, np.where(Y == 1, L.NEG, L.POS))


# --------------------------------------------------------------------------- plots
def test_plots_return_axes():
    import matplotlib.pyplot as plt

    from mlpl_lab.viz.label_plots import plot_label_stats, show_label_matrix

    Y = random_Y(40, 6)
    obs = R.single_positive(Y, seed=0)
    s = R.label_stats(Y, obs)
    ax = plot_label_stats(s, class_names=list("abcdef"), title="SPML")
    assert "hidden" in ax.get_title() and "%" in ax.get_title()
    ax2 = plot_label_stats(s, show_negatives=False, orientation="horizontal")
    ax3 = show_label_matrix(Y, obs, max_rows=20)
    assert ax3.get_legend() is not None
    with pytest.raises(ValueError):
        plot_label_stats(s, class_names=["a"])
    plt.close("all")
    assert ax2 is not None



@pytest.mark.parametrize("fn_rate", [0.0, 0.1, 0.3])
def test_noisy_negatives_hits_its_false_negative_rate(fn_rate):
    Y = random_Y(2000, 20, p=0.15)
    obs = R.noisy_negatives(Y, 0.3, fn_rate, seed=5)
    known = R.known_proportion(Y, 0.3, seed=5) != L.UNK
    assert np.all((obs != L.UNK)[known])  # every known entry stays observed
    fn = int(((obs == L.NEG) & (Y == 1)).sum())
    tn = int(((obs == L.NEG) & (Y == 0)).sum())
    assert fn / (fn + tn) == pytest.approx(fn_rate, abs=2e-4)
    assert np.all(Y[obs == L.POS] == 1)  # observed positives are never wrong
    if fn_rate == 0.0:
        assert np.array_equal(obs, R.known_proportion(Y, 0.3, seed=5))
    f = R.regime("noisy_negatives", p=0.3, fn_rate=fn_rate)
    assert np.array_equal(f(Y, seed=5), obs)
    with pytest.raises(ValueError, match="fn_rate"):
        R.regime("noisy_negatives", p=0.3, fn_rate=1.0)
    with pytest.raises(ValueError, match="false negatives but Y has only"):
        R.noisy_negatives(Y, 1.0, 0.9)
