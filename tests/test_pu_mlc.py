"""PU-MLC (paper 004): the mixup regulariser and its target's gradient, LgConv, and that the
method reads nothing but the observed positives (poisoned negatives and truth change nothing)."""
from __future__ import annotations

import copy
import math

import pytest
import torch

from mlpl_lab.data import make_splits
from mlpl_lab.losses import get
from mlpl_lab.methods import build_method
from mlpl_lab.methods.pu_mlc import mixup_regulariser, mixup_target
from mlpl_lab.models import build_model
from mlpl_lab.models.lgconv import LocalGlobalConv, lgconv_modules
from mlpl_lab.engine.train import TrainConfig, fit


def test_mixup_regulariser_by_its_formula():
    s = torch.tensor([[0.5, -1.0], [2.0, 0.0]])
    t = torch.tensor([[1.0, 0.2], [0.7, 0.5]])
    sig = lambda v: 1 / (1 + math.exp(-v))  # noqa: E731
    want = 0.0
    for c in range(2):
        want += sum((math.log(t[i, c].item() + 1e-10) - math.log(sig(s[i, c].item()))) ** 2 for i in range(2)) / 2
    assert mixup_regulariser(s, t).item() == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("detach", [False, True])
def test_mixup_target_gradient_flows_only_when_not_detached(detach):
    logits = torch.tensor([[0.3, -0.4], [1.0, 2.0]], requires_grad=True)
    labels = torch.tensor([[1, -1], [0, -1]])
    t = mixup_target(logits, labels, detach=detach)
    assert t[0, 0].item() == 1.0  # observed positive: target 1
    assert t[0, 1].item() == pytest.approx(1 / (1 + math.exp(0.4)))
    mixed = torch.zeros(2, 2)
    loss = mixup_regulariser(mixed, t)
    if detach:
        assert not t.requires_grad
    else:
        loss.backward()
        # gradient reaches the unlabeled entries through σ(s), not the observed positive
        assert logits.grad[0, 0] == 0 and logits.grad[0, 1] != 0 and logits.grad[1, 0] != 0


def test_lgconv_shapes_and_a_zero_gamma_leaves_the_base_network_unchanged():
    torch.manual_seed(0)
    base = build_model("small_cnn", 5, width=8).eval()
    torch.manual_seed(0)
    wrapped = build_model("small_cnn", 5, width=8, lgconv=True, lgconv_gamma_init=0).eval()
    # the first RGB conv (3 input channels) is skipped; the others are wrapped
    convs = lgconv_modules(wrapped)
    assert len(convs) == 3 and all(isinstance(m, LocalGlobalConv) for m in convs)
    state = {k.replace(".conv.", ".", 1) if ".conv." in k else k: v for k, v in wrapped.state_dict().items()}
    base_state = base.state_dict()
    for k, v in base_state.items():  # same base weights under both names
        assert torch.equal(state.get(k, v), v), k
    x = torch.rand(3, 3, 32, 32)
    assert torch.allclose(wrapped(x), base(x), atol=1e-6)
    assert wrapped.feature_map(x).shape == base.feature_map(x).shape
    # with a non-zero γ the branch changes the output
    with torch.no_grad():
        for m in convs:
            m.bn.weight.fill_(0.5)
    assert not torch.allclose(wrapped(x), base(x), atol=1e-4)


def test_lgconv_paper_mode_trains_only_branches_last_stage_and_head():
    from mlpl_lab.models.lgconv import lgconv_trainable
    m = build_model("small_cnn", 5, width=8, lgconv=True)
    params = lgconv_trainable(m, "paper")
    trained = {n for n, p in m.named_parameters() if p.requires_grad}
    assert trained and len(params) == len(trained)
    assert not any(n.startswith("backbone.0.") for n in trained)          # the first block: frozen
    assert any(".agg." in n for n in trained) and any(n.startswith("head.") for n in trained)
    with pytest.raises(ValueError, match="lgconv=True"):
        lgconv_trainable(build_model("small_cnn", 5, width=8), "paper")


@pytest.fixture(scope="module")
def pu_data():
    return make_splits(n_train=96, n_val=48, n_test=48, seed=0, image_size=16,
                       regime="known_proportion", regime_params={"p": 0.5})


def _cfg(**kw):
    return TrainConfig(**(dict(epochs=2, batch_size=32, lr=3e-3, model="small_cnn", model_kwargs={"width": 8},
                               progress=False, probes=()) | kw))


def test_pu_mlc_reads_only_the_observed_positives(pu_data):
    """Poison everything that is not an observed positive — negatives become unknowns, unknowns
    become negatives, the true labels are scrambled — and train again: same weights."""
    a = fit("pu_mlc", pu_data.train, pu_data.val, pu_data.test, _cfg(seed=4))
    train = pu_data.train
    obs = train.observed
    flipped = torch.where(obs == 0, torch.full_like(obs, -1), torch.where(obs == -1, torch.zeros_like(obs), obs))
    assert (flipped == 0).any() and (flipped == -1).any()
    scrambled = train.labels[torch.randperm(len(train), generator=torch.Generator().manual_seed(1))]

    class Poisoned:
        observed, labels = flipped, scrambled

        def __len__(self):
            return len(train)

        def get_batch(self, idx):
            b = train.get_batch(idx)
            b["observed"], b["labels"] = flipped[b["index"]], scrambled[b["index"]]
            return b

    poisoned = Poisoned()
    b = fit("pu_mlc", poisoned, pu_data.val, pu_data.test, _cfg(seed=4))
    for k, v in a.method.net.state_dict().items():
        assert torch.equal(v, b.method.net.state_dict()[k]), k
    assert a.history[-1]["loss"] == b.history[-1]["loss"]


def test_pu_mlc_logs_per_class_temperatures_and_trains_finite(pu_data):
    r = fit("pu_mlc", pu_data.train, pu_data.val, pu_data.test, _cfg())
    row = r.history[-1]
    temps = [row[f"temperature[{c}]"] for c in range(20)]
    assert all(0 < t <= 1 for t in temps) and row["temperature_mean"] == pytest.approx(sum(temps) / 20)
    assert math.isfinite(row["loss"]) and math.isfinite(row["loss_mix"])
    plain = fit("vpu_plain", pu_data.train, pu_data.val, pu_data.test, _cfg(epochs=1))
    assert plain.history[0]["temperature_mean"] == 1.0 and "loss_mix" not in plain.history[0]


def test_partial_bce_ignores_unknowns_and_bad_hparams_fail():
    s = torch.tensor([[1.0, -2.0, 0.3]])
    y = torch.tensor([[1, 0, -1]])
    sig = lambda v: 1 / (1 + math.exp(-v))  # noqa: E731
    want = (-math.log(sig(1.0)) - math.log(1 - sig(-2.0))) / 2
    assert get("partial_bce")(s, y).item() == pytest.approx(want)
    with pytest.raises(ValueError, match="gamma"):
        build_method("pu_mlc", gamma=-1)
    with pytest.raises(ValueError, match="trainable"):
        build_method("pu_mlc", trainable="some")


class _Identity(torch.nn.Module):
    """logits = the image's pixels (B, C, 1, 1) -> (B, C): the mixed batch's logits are the mixed
    images, so every number below is a hand computation."""

    def forward(self, x):
        return x.flatten(1)


@pytest.mark.parametrize("batch", [4, 5])
def test_training_step_assembles_mixup_as_the_code(batch):
    """λ weighs the *permuted first half* of both the images and the targets, 1 − λ the second
    half (the code's ``mixup``: x̃ = λ·x1[perm] + (1−λ)·x2, t̃ = λ·t1[perm] + (1−λ)·t2; an odd batch
    leaves out its middle row). Hand-derived case, C = 1, λ = 0.3, perm = (1, 0): catches λ and
    1 − λ swapped on the targets (or the images), targets not permuted with their images, the
    halves taken from the wrong rows, or the regulariser's weight left out of the loss."""
    from mlpl_lab.methods.pu_mlc import PUMLCMethod

    s = [0.4, -1.2, 2.0, 0.5, -0.3][:batch]            # image = logit of the first pass
    pos = [1, 0, 0, 1, 0][:batch]                     # observed positives
    m = PUMLCMethod(alpha=None, gamma=0.0, mix_weight=2.0)
    m.net = _Identity()
    m.labels = torch.tensor([[1 if p else -1] for p in pos])
    m._t_sum, m._t_n = None, 0
    m.draw_mix = lambda half, device: (0.3, torch.tensor([1, 0]))
    batch_ = {"image": torch.tensor(s).view(-1, 1, 1, 1), "index": torch.arange(batch)}
    loss, logs = m.training_step(batch_, epoch=0)

    sig = lambda v: 1 / (1 + math.exp(-v))  # noqa: E731
    t = [1.0 if p else sig(v) for v, p in zip(s, pos)]  # 1 on positives, σ(s) elsewhere
    x1, t1 = [s[1], s[0]], [t[1], t[0]]                 # first half, permuted by (1, 0)
    x2, t2 = s[-2:], t[-2:]                             # last two rows
    x_mix = [0.3 * a + 0.7 * b for a, b in zip(x1, x2)]
    t_mix = [0.3 * a + 0.7 * b for a, b in zip(t1, t2)]
    want = sum((math.log(tm + 1e-10) - math.log(sig(xm))) ** 2 for xm, tm in zip(x_mix, t_mix)) / 2
    assert float(logs["loss_mix"]) == pytest.approx(want, rel=1e-6)
    assert float(loss) == pytest.approx(float(logs["loss_vpu"]) + 2.0 * want, rel=1e-6)
    # the swap this test exists for gives another number
    swapped = [0.7 * a + 0.3 * b for a, b in zip(t1, t2)]
    other = sum((math.log(tm) - math.log(sig(xm))) ** 2 for xm, tm in zip(x_mix, swapped)) / 2
    assert abs(other - want) > 1e-2


# -- the chapter's wiring (no training) ------------------------------------------------------------
from types import SimpleNamespace

import numpy as np

from mlpl_lab.core import labels as L

from mlpl_lab.core import regimes as R
from mlpl_lab.chapters import pu_mlc as chapter


def test_control_hides_exactly_the_false_negatives():
    """``missed="unknown"`` is the noisy matrix with every false negative set to unknown: catches a
    control that draws other entries, or leaves some missed positives negative."""
    rng = np.random.default_rng(0)
    Y = (rng.random((500, 12)) < 0.12).astype(np.int64)
    noisy = R.noisy_negatives(Y, 0.5, 0.1, seed=3)
    control = R.noisy_negatives(Y, 0.5, 0.1, seed=3, missed="unknown")
    want = np.where((noisy == L.NEG) & (Y == 1), L.UNK, noisy)
    assert np.array_equal(control, want)
    assert ((noisy == L.NEG) & (Y == 1)).sum() > 100 and not ((control == L.NEG) & (Y == 1)).any()
    with pytest.raises(ValueError, match="missed"):
        R.regime("noisy_negatives", p=0.5, fn_rate=0.1, missed="maybe")


def test_noise_counts_match_the_training_splits():
    """The noise table's counts equal counts over the labels the runs train on (the splits),
    so the chapter's own application of the regime cannot drift from the data's."""
    from mlpl_lab.protocol.common import splits_for

    noise = chapter.noise_by_seed(chapter.design("smoke"))
    from mlpl_lab.profiles import get_profile

    tr = splits_for(get_profile("smoke"), "noisy_negatives", {"p": 0.5, "fn_rate": 0.1}, seed=1).train
    Y, obs = tr.labels.numpy(), tr.observed.numpy()
    fn = int(((Y == 1) & (obs == L.NEG)).sum())
    got = noise[0.1][1]
    assert got["false negatives"] == fn and got["observed positives"] == int((obs == L.POS).sum())
    assert got["share of true positives reported negative"] == pytest.approx(fn / int((Y == 1).sum()))
    assert 0.35 < got["share of true positives reported negative"] < 0.6  # the audit's ~46 %


def test_crossing_by_hand():
    """y = (2, 1, −1) at x = (0, 0.05, 0.1): the sign changes between 0.05 and 0.1, at
    0.05 + 0.05 · 1/2 = 0.075; no sign change gives NaN and which side."""
    assert chapter._cross([0, 0.05, 0.1], [2, 1, -1], "PU-MLC", "partial BCE") == (pytest.approx(0.075), "")
    x, why = chapter._cross([0, 0.1], [1.0, 0.5], "PU-MLC", "partial BCE")
    assert math.isnan(x) and "above" in why
    x, why = chapter._cross([0, 0.1], [-1.0, -0.5], "PU-MLC", "partial BCE")
    assert math.isnan(x) and "below" in why


def _runs(values, metric="test_mAP", val=None):
    return [SimpleNamespace(best={metric: v, "val_mAP": (val or values)[i]}, spec=SimpleNamespace(seed=i))
            for i, v in enumerate(values)]


def test_gamma_is_selected_on_validation_per_noise_level():
    """γ = 0.55 wins on validation at fn 0 and loses on test: the selection follows validation.
    Ties go to the smaller γ. Catches selecting on test mAP or once for all noise levels."""
    g = {(0.0, 0.0): _runs([80, 80], val=[50, 50]), (0.0, 0.55): _runs([70, 70], val=[60, 60]),
         (0.1, 0.0): _runs([60, 60], val=[40, 40]), (0.1, 0.55): _runs([65, 65], val=[40, 40])}
    assert chapter.select_gammas(g) == {0.0: 0.55, 0.1: 0.0}


def test_no_pair_of_runs_makes_two_claims():
    """With a sweep that stops at fn 0, the "noisy negatives" claim would compare the same runs
    as the p = 0.5 claim: the chapter refuses (the audit's double-counted pair)."""
    ladder = {label: _runs([50 + i, 51 + i, 52 + i]) for i, label in enumerate(chapter.LADDER)}
    clean = {chapter.PU: _runs([60, 61, 62]), chapter.PBCE: _runs([55, 56, 57])}
    clean[chapter.CONTROL] = clean[chapter.PBCE]
    ladders = {"p=0.1": ladder, "p=0.5": {"PU-MLC (+mixup)": clean[chapter.PU],
                                         "partial BCE (+negatives)": clean[chapter.PBCE]}}
    with pytest.raises(ValueError, match="same pair"):
        chapter.claims(ladders, {0.0: clean}, chapter.design("cpu"))
    noisy = {chapter.PU: _runs([58, 59, 60]), chapter.PBCE: _runs([50, 50, 51]), chapter.CONTROL: _runs([53, 54, 54])}
    table = chapter.claims(ladders, {0.0: clean, 0.1: noisy}, chapter.design("cpu"))
    assert len(table) == 8
    first = table["claim"].iloc[0]
    assert "+γ" in first and "vPU" in first  # re-balancing: the rows that differ only in γ
    assert table.index[0] == "step/gamma/p0.1"


def test_the_pu_rows_train_longer_and_the_shared_rows_keep_their_runs():
    """Bugs caught: the PU rows' longer schedule leaks onto AN, partial BCE or the oracle (the
    oracle would no longer be chapter 01's run and would be retrained), or misses the γ grid (the
    γ selection would then compare schedules, not γ)."""
    from mlpl_lab.protocol.asked import nothing_stored
    from mlpl_lab.profiles import get_profile

    P = get_profile("cpu")
    asked = chapter.specs(chapter.design(P), nothing_stored)
    ladder = asked.now["p=0.1"]
    epochs = {label: {s.train["epochs"] for s in specs} for label, specs in ladder.items()}
    longer = {"vPU", "+γ", "+γ+α", "PU-MLC (+mixup)", "PU-MLC + LgConv"}
    assert all(epochs[label] == {128} for label in longer), epochs
    assert all(epochs[label] == {P.epochs} for label in set(ladder) - longer), epochs
    assert {s.train["epochs"] for specs in asked.now[chapter.GRID].values() for s in specs} == {128}
    base = [s for fn in (0.0, 0.1) for label in (chapter.PBCE, chapter.CONTROL) for s in asked.now[f"fn_rate={fn}"][label]]
    assert {s.train["epochs"] for s in base} == {P.epochs}
    # the oracle is chapter 01's run (same key), the smoke design is unchanged
    assert ladder[chapter.ORACLE][0].key == P.spec("full", {}, seed=P.seeds[0]).key
    smoke = chapter.design("smoke")
    assert smoke.epochs_of("pu_mlc") == smoke.epochs


def _stored_with_val(val_of):
    """A :data:`~mlpl_lab.protocol.asked.Stored` that holds every γ-grid run, its validation mAP
    ``val_of(fn_rate, γ)``, and nothing else."""
    def stored(spec):
        if spec.method != "pu_mlc" or spec.regime != "noisy_negatives":
            return None
        fn, g = spec.regime_params["fn_rate"], spec.method_params["gamma"]
        return SimpleNamespace(spec=spec, best={"val_mAP": val_of(fn, g), "test_mAP": 0.0})
    return stored


def test_specs_choose_gamma_on_the_stored_grid_and_wait_without_it():
    """gpu's ladder at the sweep's p = 0.5 reads the γ chosen at fn 0. With nothing stored its γ
    rows wait in ``later`` under the grid's first γ (the stand-in), the rest is asked now; with
    the grid stored, γ = argmax of validation at fn 0 (0.25 here) reaches +γ, +γ+α and LgConv, the
    sweep's PU-MLC at each noise level is that level's own choice, and nothing waits. Catches a
    choice read from test mAP, one γ for every noise level, or a cell that never waits."""
    from mlpl_lab.protocol.asked import nothing_stored

    d = chapter.design("gpu")
    first = chapter.specs(d, nothing_stored)
    assert set(first.later["p=0.5"]) == set(chapter.GAMMA_ROWS)
    assert {s.method_params["gamma"] for s in first.later["p=0.5"]["+γ"]} == {d.gamma_grid[0]}
    assert set(first.now["p=0.5"]) == {"AN (PU labels)", "vPU", "partial BCE (+negatives)", chapter.ORACLE}
    assert all(chapter.PU in first.later[f"fn_rate={fn}"] for fn in d.fn_rates)

    best = {0.0: 0.25, 0.05: 0.55, 0.1: 0.0, 0.15: 0.55}
    decided = chapter.specs(d, _stored_with_val(lambda fn, g: 50.0 + 10 * (g == best[fn])))
    assert decided.later == {}
    for label in ("+γ", "+γ+α", "PU-MLC + LgConv"):
        assert {s.method_params["gamma"] for s in decided.now["p=0.5"][label]} == {0.25}, label
        assert {s.regime for s in decided.now["p=0.5"][label]} == {"positives_only"}
    clean = decided.now["p=0.5"]["PU-MLC (+mixup)"]  # the sweep's clean cell, not a new run
    assert [s.key for s in clean] == [s.key for s in decided.now["fn_rate=0.0"][chapter.PU]]
    for fn, g in best.items():
        assert {s.method_params["gamma"] for s in decided.now[f"fn_rate={fn}"][chapter.PU]} == {g}
    assert list(decided.now["p=0.5"]) == list(chapter.LADDER) + [chapter.ORACLE]
    # the choice adds no run the first round lacks but the γ rows: the count holds
    extra = {s.key for s in decided.flat()} - {s.key for s in first.flat()}
    assert len(extra) == 3 * len(d.seeds)
    assert chapter.run_count(d)["total"] == len({s.key for s in first.flat()}) + len(extra)


def test_results_arrange_the_ensured_families():
    """:func:`results` reads the families :func:`specs` names: the ladders in the design's order
    (then the sweep's p), the sweep per noise level, the γ grid per (fn_rate, γ)."""
    d = chapter.design("smoke")
    asked = chapter.specs(d, _stored_with_val(lambda fn, g: g))
    runs = {fam: {lab: [s.key for s in specs] for lab, specs in labels.items()} for fam, labels in asked.now.items()}
    res = chapter.results(d, runs)
    assert list(res.ladders) == ["p=0.1", "p=0.5"]
    assert set(res.ladders["p=0.5"]) == set(chapter.CLEAN_ROWS)
    assert res.sweep[0.1][chapter.PU] == res.gammas[(0.1, 0.55)]  # γ 0.55 validates higher
    assert res.sweep[0.0][chapter.CONTROL] == res.sweep[0.0][chapter.PBCE]
    assert set(res.gammas) == {(fn, g) for fn in d.fn_rates for g in d.gamma_grid}


def test_the_views_use_the_shared_interval_frames():
    """The sweep's paired difference is read as runs by ``interval_frames``: its mean is the mean
    of the per-seed differences, its seeds the paired ones, and a pair with an unconverged run is
    marked. Catches a difference averaged over unpaired seeds or a lost † mark."""
    def runs(values, conv=True):
        return [SimpleNamespace(best={"test_mAP": v}, spec=SimpleNamespace(seed=i), converged=conv)
                for i, v in enumerate(values)]

    diff = chapter._differences(runs([60, 62, 64]), runs([50, 55], conv=False))
    assert [d.best["test_mAP"] for d in diff] == [10, 7]
    mean, half, n, unconv = chapter._frames({"d": {0.1: diff}}, [0.1])
    assert mean.at[0.1, "d"] == pytest.approx(8.5) and n.at[0.1, "d"] == 2 and bool(unconv.at[0.1, "d"])
    assert half.at[0.1, "d"] == pytest.approx(12.706 * 1.5, rel=1e-3)
