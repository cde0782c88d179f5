"""LAC (paper 002): the contrastive loss against naive double loops written from Eq. 5–7 and
from the SupCon definition, PLC masks on crafted probabilities, the memory queue, the
label-query head's attention maps, and the two-stage start."""
from __future__ import annotations

import copy
import math

import pytest
import torch

from mlpl_lab import losses
from mlpl_lab.data import make_splits
from mlpl_lab.losses.lac import lac_loss, plc_loss, plc_targets
from mlpl_lab.methods import build_method
from mlpl_lab.methods.ema import per_step_decay
from mlpl_lab.methods.lac import LACMethod, MemoryQueue
from mlpl_lab.models import build_model
from mlpl_lab.models.label_query import GroupWiseLinear, sine_position_encoding
from mlpl_lab.train import TrainConfig, fit


# ---------------------------------------------------------------------------- oracles
def naive_eq7(zw, zs, cls, qz, qc, tau, total):
    """Eq. 7 by the letter: anchors = weak views; for every (anchor k, same-class k') add
    log exp(z_k·z'_k'/τ) / Σ_{t: other class} exp(z_k·z'_t/τ); divide by B."""
    cand = [(zs[i], int(cls[i])) for i in range(len(cls))] + [(qz[i], int(qc[i])) for i in range(len(qc))]
    acc = zw.new_zeros(())
    for k in range(len(cls)):
        den = zw.new_zeros(())
        n_neg = 0
        for z, c in cand:
            if c != int(cls[k]):
                den = den + torch.exp(torch.dot(zw[k], z) / tau)
                n_neg += 1
        if n_neg == 0:
            continue
        for z, c in cand:
            if c == int(cls[k]):
                acc = acc + torch.log(torch.exp(torch.dot(zw[k], z) / tau) / den)
    return -acc / total


def naive_supcon(zw, zs, cls, qz, qc, tau):
    """SupCon over [weak; strong; queue], every entry an anchor, mean over positives, then
    over anchors that have one."""
    feats = [zw[i] for i in range(len(cls))] + [zs[i] for i in range(len(cls))] + [qz[i] for i in range(len(qc))]
    labs = [int(c) for c in cls] * 2 + [int(c) for c in qc]
    acc, anchors = zw.new_zeros(()), 0
    for a in range(len(feats)):
        pos = [p for p in range(len(feats)) if p != a and labs[p] == labs[a]]
        if not pos:
            continue
        den = sum(torch.exp(torch.dot(feats[a], feats[e]) / tau) for e in range(len(feats)) if e != a)
        acc = acc + sum(torch.log(torch.exp(torch.dot(feats[a], feats[p]) / tau) / den) for p in pos) / len(pos)
        anchors += 1
    return -acc / anchors


def _embeddings(n=7, m=9, d=5, n_cls=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    unit = lambda k: torch.nn.functional.normalize(torch.randn(k, d, generator=g, dtype=torch.float64), dim=1)  # noqa: E731
    zw, zs, qz = unit(n), unit(n), unit(m)
    cls = torch.randint(0, n_cls, (n,), generator=g)
    qc = torch.randint(0, n_cls, (m,), generator=g)
    return zw, zs, cls, qz, qc


@pytest.mark.parametrize("with_queue", [False, True])
@pytest.mark.parametrize("form", ["paper", "code"])
def test_lac_loss_matches_a_naive_double_loop_in_value_and_gradient(form, with_queue):
    zw, zs, cls, qz, qc = _embeddings(seed=3 + with_queue)
    if not with_queue:
        qz, qc = qz[:0], qc[:0]
    tau, total = 0.5, 40
    a = [t.clone().requires_grad_(True) for t in (zw, zs)]
    b = [t.clone().requires_grad_(True) for t in (zw, zs)]
    kw = dict(queue_z=qz, queue_classes=qc) if with_queue else {}
    got = lac_loss(a[0], a[1], cls, tau=tau, form=form, num_embeddings=total if form == "paper" else None, **kw)
    want = naive_eq7(b[0], b[1], cls, qz, qc, tau, total) if form == "paper" else \
        naive_supcon(b[0], b[1], cls, qz, qc, tau)
    assert got.item() == pytest.approx(want.item(), rel=1e-10)
    got.backward()
    want.backward()
    for x, y in zip(a, b):
        assert torch.allclose(x.grad, y.grad, atol=1e-12)


def test_lac_forms_differ_and_paper_denominator_excludes_same_class():
    zw, zs, cls, qz, qc = _embeddings(seed=11)
    paper = lac_loss(zw, zs, cls, qz, qc, form="paper")
    code = lac_loss(zw, zs, cls, qz, qc, form="code")
    assert not math.isclose(paper.item(), code.item())
    # one class only: no inter-class entry, so every anchor's Eq. 7 denominator is empty
    one = torch.zeros_like(cls)
    assert lac_loss(zw, zs, one, form="paper").item() == 0.0


def test_lac_gradient_does_not_reach_the_queue():
    zw, zs, cls, qz, qc = _embeddings(seed=5)
    q = qz.clone().requires_grad_(True)
    lac_loss(zw.requires_grad_(True), zs, cls, q, qc).backward()
    assert q.grad is None


# ---------------------------------------------------------------------------- PLC
def test_plc_masks_on_crafted_probabilities():
    p = torch.tensor([[0.95, 0.65, 0.5, 0.35, 0.05, 0.7]])
    y = torch.tensor([[-1, -1, -1, -1, -1, 1]])
    t, m = plc_targets(p, y, delta=0.6, form="paper")
    # unknown entries: ≥ 0.6 → positive, ≤ 0.4 → negative, in between ignored; the observed positive ignored
    assert m.tolist() == [[True, True, False, True, True, False]]
    assert t[m].tolist() == [1, 1, 0, 0]
    t, m = plc_targets(p, y, delta=0.6, form="code")
    # code: pl = p + 1[observed positive]; the observed positive is always a target 1
    assert m.tolist() == [[True, True, False, True, True, True]]
    assert t.tolist() == [[1, 1, 0, 0, 0, 1]]
    t, m = plc_targets(p, y, delta=0.9, form="paper")
    assert m.tolist() == [[True, False, False, False, True, False]]


def test_plc_loss_by_hand():
    s = torch.tensor([[2.0, -1.0, 0.5, 0.0]])
    pw = torch.tensor([[0.97, 0.02, 0.5, 0.2]])
    y = torch.tensor([[-1, -1, -1, 1]])
    sig = lambda v: 1 / (1 + math.exp(-v))  # noqa: E731
    terms = [-math.log(sig(2.0)), -math.log(1 - sig(-1.0))]  # entry 3 ignored (0.5), entry 4 observed
    assert plc_loss(s, y, weak_probs=pw, delta=0.6).item() == pytest.approx(sum(terms) / 4)
    # code: masked mean, and the observed positive counts (target 1)
    code_terms = terms + [-math.log(sig(0.0))]
    assert plc_loss(s, y, weak_probs=pw, delta=0.6, form="code").item() == pytest.approx(sum(code_terms) / 3)
    with pytest.raises(ValueError, match="delta"):
        plc_loss(s, y, weak_probs=pw, delta=0.3)
    assert "plc" in losses.LOSSES


# ---------------------------------------------------------------------------- queue
def test_queue_is_fifo_and_guards_overflow():
    q = MemoryQueue(5, 2)
    z = lambda *v: torch.tensor([[float(x), 0.0] for x in v])  # noqa: E731
    q.push(z(1, 2, 3), torch.tensor([1, 2, 3]))
    zs, cs = q.contents()
    assert cs.tolist() == [1, 2, 3] and q.fill == 3
    q.push(z(4, 5, 6), torch.tensor([4, 5, 6]))  # 1 is the oldest: overwritten
    zs, cs = q.contents()
    assert cs.tolist() == [2, 3, 4, 5, 6] and zs[:, 0].tolist() == [2, 3, 4, 5, 6]
    q.push(z(*range(10, 18)), torch.arange(10, 18))  # 8 > size: the newest 5 stay (no crash)
    assert q.contents()[1].tolist() == [13, 14, 15, 16, 17]
    x = torch.ones(1, 2, requires_grad=True)
    q.push(x * 2, torch.tensor([0]))
    assert not q.contents()[0].requires_grad
    with pytest.raises(ValueError, match="queue size"):
        MemoryQueue(0, 2)


# ---------------------------------------------------------------------------- head
def test_attention_maps_are_distributions_with_the_documented_shape():
    torch.manual_seed(0)
    m = build_model("small_cnn", 6, width=8, head="label_query").eval()
    x = torch.rand(3, 3, 32, 32)
    out = m.outputs(x)
    assert out["attention"].shape == (3, 6, 8, 8)
    assert torch.allclose(out["attention"].sum(dim=(2, 3)), torch.ones(3, 6), atol=1e-5)
    assert (out["attention"] >= 0).all()
    assert torch.allclose(out["logits"], m(x), atol=1e-5)  # outputs() does not change forward
    assert out["label_embeddings"].shape == (3, 6, 32)
    assert torch.allclose(out["projection"].norm(dim=-1), torch.ones(3, 6), atol=1e-5)


def test_group_wise_linear_is_one_dot_product_per_class():
    g = GroupWiseLinear(4, 3)
    h = torch.randn(2, 4, 3)
    want = torch.stack([torch.stack([g.weight[0, j] @ h[i, j] + g.bias[0, j] for j in range(4)])
                        for i in range(2)])
    assert torch.allclose(g(h), want, atol=1e-6)


def test_sine_position_encoding_by_the_formula():
    h, w, d = 3, 4, 8
    pe = sine_position_encoding(h, w, d)
    half = d // 2
    r, c = 2, 1  # row 3, column 2 (1-based counts), normalised to (0, 2π]
    y, x = 3 / (3 + 1e-6) * 2 * math.pi, 2 / (4 + 1e-6) * 2 * math.pi
    row = pe[r * w + c]
    for i in range(half):
        f = 10000 ** (2 * (i // 2) / half)
        want_y = math.sin(y / f) if i % 2 == 0 else math.cos(y / f)
        want_x = math.sin(x / f) if i % 2 == 0 else math.cos(x / f)
        assert row[i].item() == pytest.approx(want_y, abs=1e-5)
        assert row[half + i].item() == pytest.approx(want_x, abs=1e-5)


def test_label_query_head_bad_sizes_fail_clearly():
    with pytest.raises(ValueError, match="divisible by heads"):
        build_model("small_cnn", 5, width=8, head="label_query", head_kwargs={"heads": 5})


# ---------------------------------------------------------------------------- method
@pytest.fixture(scope="module")
def tiny():
    return make_splits(n_train=96, n_val=48, n_test=48, seed=0, image_size=16)  # single positive


def cfg(**kw):
    base = dict(epochs=2, batch_size=32, lr=3e-3, model="small_cnn",
                model_kwargs={"width": 4, "head": "label_query"}, progress=False)
    base.update(kw)
    return TrainConfig(**base)


class StartRecorder(LACMethod):
    """Stage 2 that records its weights and its EMA's when the first epoch starts, and counts
    EMA updates against real steps."""

    def __init__(self, **kw):
        super().__init__(**(dict(plc=True, lac=True, delta=0.9, queue_size=64, stage=2) | kw))
        self.start = None
        self.steps = 0

    def on_epoch_start(self, epoch):
        super().on_epoch_start(epoch)
        if epoch == 0:
            self.start = (copy.deepcopy(self.net.state_dict()), copy.deepcopy(self.ema_model.module.state_dict()))

    def on_step_end(self, step):
        super().on_step_end(step)
        self.steps += 1


def test_stage_two_starts_from_stage_one_best_weights_and_counts_ema_steps(tiny):
    s1 = fit("lac_plc", tiny.train, tiny.val, tiny.test, cfg(epochs=3, lr=2e-2, seed=1))
    best = copy.deepcopy(s1.method.net.state_dict())
    m = StartRecorder()
    r = fit(m, tiny.train, tiny.val, tiny.test, cfg(epochs=2), init_from=s1.method)
    net0, ema0 = m.start
    for k, v in best.items():
        assert torch.equal(net0[k], v), k
        assert torch.equal(ema0[k], v), k  # a fresh EMA of the loaded weights
    assert m.ema_model.updates == m.steps == 2 * (len(tiny.train) // 32)
    assert all(math.isfinite(row["loss_lac"]) for row in r.history)
    assert r.history[-1]["queue_fill"] > 0


def test_stage_two_refuses_to_start_from_scratch_and_the_head_is_checked(tiny):
    with pytest.raises(ValueError, match="second stage"):
        fit("lac", tiny.train, tiny.val, tiny.test, cfg())
    with pytest.raises(ValueError, match="label-query head"):
        fit("lac_plc", tiny.train, tiny.val, tiny.test, cfg(model_kwargs={"width": 4}))
    with pytest.raises(ValueError, match="delta"):
        build_method("lac_plc", delta=0.2)
    with pytest.raises(ValueError, match="needs lac=True"):
        build_method("lac_plc", queue_size=8)


def test_runner_validates_lac_specs_before_training():
    from mlpl_lab.profiles import get_profile
    from mlpl_lab.runner import validate

    P = get_profile("smoke")
    mk = {"width": 8, "head": "label_query"}
    s1 = P.spec("lac_plc", model_kwargs=mk)
    validate(P.spec("lac", model_kwargs=mk, init_from=s1))
    with pytest.raises(ValueError, match="init_from"):
        validate(P.spec("lac", model_kwargs=mk))
    with pytest.raises(ValueError, match="label_query"):
        validate(P.spec("lac_plc"))


def test_plc_diagnostics_count_against_the_truth(tiny):
    r = fit("lac_plc", tiny.train, tiny.val, tiny.test, cfg(epochs=1))
    row = r.history[0]
    for k in ("plc_pos_recall", "plc_neg_precision", "plc_coverage"):
        assert 0.0 <= row[k] <= 1.0
    assert r.history[0]["val_mAP[ema]"] > 0


def test_code_ema_is_0_9997_per_step(tiny):
    r = fit("lac_plc", tiny.train, tiny.val, tiny.test, cfg(epochs=1), ema_decay="code")
    assert r.method.ema_model.decay == pytest.approx(0.9997)
    r = fit("lac_plc", tiny.train, tiny.val, tiny.test, cfg(epochs=1))
    assert r.method.ema_model.decay == pytest.approx(per_step_decay(0.5, len(tiny.train) // 32))
