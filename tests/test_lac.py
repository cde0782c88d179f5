"""LAC (paper 002): the contrastive loss against naive double loops written from Eq. 5–7 and
from the SupCon definition, PLC masks on crafted probabilities, the memory queue, the
label-query head's attention maps, and the two-stage start."""
from __future__ import annotations

import copy
import math

import pytest
import torch

from mlpl_lab import losses
from mlpl_lab.chapters.lac import regime_defined
from mlpl_lab.losses.lac import lac_loss, lac_valid, plc_loss, plc_targets
from mlpl_lab.methods import build_method
from mlpl_lab.methods.lac import LACMethod, MemoryQueue
from mlpl_lab.models import build_model
from mlpl_lab.models.label_query import GroupWiseLinear, sine_position_encoding
from mlpl_lab.engine.train import fit
from tiny import tiny_config, tiny_splits


# ---------------------------------------------------------------------------- oracles
def naive_eq7(zw, zs, cls, qz, qc, tau, total):
    """Eq. 7 by the letter: anchors = weak views; candidates = the current strong views and the
    queue's strong views; for every (anchor k, same-class k') add
    log exp(z_k·z'_k'/τ) / Σ_{t: other class} exp(z_k·z'_t/τ); divide by B."""
    cand = [(zs[i], int(cls[i])) for i in range(len(cls))] + [(qz[i, 1], int(qc[i])) for i in range(len(qc))]
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


def naive_official(zw, zs, cls, qz, qc, tau):
    """The official ``lacloss.py`` + ``second_stage.py``, written as loops: the queue (Q, 2, d)
    holds the current pairs and the stored ones; its labels are class + 1 (0 = empty slot,
    dropped); ``contrast_feature = cat(unbind(features, 1))`` = [all weak; all strong]; every
    one of the 2Q entries is an anchor; ``mean_log_prob_pos`` averages log(exp s_ap / Σ_{e≠a}
    exp s_ae) over the positives p ≠ a of the anchor's label; the loss is the mean over anchors."""
    pairs = [(zw[i], zs[i], int(cls[i]) + 1) for i in range(len(cls))] + \
        [(qz[i, 0], qz[i, 1], int(qc[i]) + 1) for i in range(len(qc))]
    pairs = [p for p in pairs if p[2] != 0]
    feats = [p[0] for p in pairs] + [p[1] for p in pairs]
    labs = [p[2] for p in pairs] * 2
    losses_ = []
    for a in range(len(feats)):
        den = sum(torch.exp(torch.dot(feats[a], feats[e]) / tau) for e in range(len(feats)) if e != a)
        pos = [p for p in range(len(feats)) if p != a and labs[p] == labs[a]]
        lp = [torch.dot(feats[a], feats[p]) / tau - torch.log(den) for p in pos]
        losses_.append(-sum(lp) / len(pos))
    return sum(losses_) / len(losses_)


def _embeddings(n=7, m=9, d=5, n_cls=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    unit = lambda *k: torch.nn.functional.normalize(torch.randn(*k, d, generator=g, dtype=torch.float64), dim=-1)  # noqa: E731
    zw, zs, qz = unit(n), unit(n), unit(m, 2)
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
        naive_official(b[0], b[1], cls, qz, qc, tau)
    assert got.item() == pytest.approx(want.item(), rel=1e-10)
    got.backward()
    want.backward()
    for x, y in zip(a, b):
        assert torch.allclose(x.grad, y.grad, atol=1e-12)


def test_the_default_form_is_the_official_code_and_keeps_its_scale_with_the_queue():
    """Bug caught: the default falling back to the paper's literal sum, whose value grows with
    every queued same-class entry (the queue ablation would then measure a loss weight)."""
    zw, zs, cls, qz, qc = _embeddings(n=64, m=512, d=16, n_cls=10, seed=2)
    small = naive_official(zw[:6], zs[:6], cls[:6], qz[:5], qc[:5], 0.5)
    assert lac_loss(zw[:6], zs[:6], cls[:6], qz[:5], qc[:5]).item() == pytest.approx(small.item(), rel=1e-10)
    assert build_method("lac").lac_form == "code"
    none = {f: lac_loss(zw, zs, cls, form=f).item() for f in ("paper", "code")}
    full = {f: lac_loss(zw, zs, cls, qz, qc, form=f).item() for f in ("paper", "code")}
    # the code's form is a log-ratio: it moves by about log(|E| ratio) = log(9), the paper's
    # sum grows with the number of same-class queue entries (~ K / classes per anchor)
    assert full["code"] - none["code"] < math.log(2 * (64 + 512) / (2 * 64)) + 0.5
    assert full["paper"] / none["paper"] > 5


def test_lac_forms_differ_and_paper_denominator_excludes_same_class():
    zw, zs, cls, qz, qc = _embeddings(seed=11)
    paper = lac_loss(zw, zs, cls, qz, qc, form="paper")
    code = lac_loss(zw, zs, cls, qz, qc, form="code")
    assert not math.isclose(paper.item(), code.item())
    # one class only: no inter-class entry, so every anchor's Eq. 7 denominator is empty
    one = torch.zeros_like(cls)
    assert lac_loss(zw, zs, one, form="paper").item() == 0.0
    with pytest.raises(ValueError, match="pairs"):
        lac_loss(zw, zs, cls, qz[:, 0], qc)  # a queue of single embeddings is refused


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


@pytest.mark.parametrize("form", ["paper", "code"])
def test_known_negatives_never_become_positives(form):
    """Bug caught: an observed negative with p^w ≥ δ selected as a PLC target 1 (the code's
    pl = p + 1[pos] over every entry) or as a valid LAC entry (the former ``p ≥ δ | observed``)."""
    p = torch.tensor([[0.99, 0.99, 0.99, 0.02, 0.02]])
    y = torch.tensor([[0, -1, 1, 0, -1]])
    t, m = plc_targets(p, y, delta=0.9, form=form)
    assert not bool(m[0, 0]) and not bool(m[0, 3])  # observed negatives: left to L_AN
    assert t[0, 1] == 1 and bool(m[0, 1])  # the unknown at 0.99 is a pseudo-positive
    assert lac_valid(p, y, 0.9).tolist() == [[False, True, True, False, False]]
    assert regime_defined("known_proportion", {"p": 0.1}) and regime_defined("single_positive")
    assert not regime_defined("full")
    with pytest.raises(ValueError, match="unknown label regime"):
        regime_defined("single positive")


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
def test_queue_holds_pairs_fifo_and_returns_the_newest():
    q = MemoryQueue(5, 2)
    w = lambda *v: torch.tensor([[float(x), 0.0] for x in v])  # noqa: E731
    s = lambda *v: torch.tensor([[0.0, float(x)] for x in v])  # noqa: E731
    q.push(w(1, 2, 3), s(1, 2, 3), torch.tensor([1, 2, 3]))
    zs, cs = q.contents()
    assert cs.tolist() == [1, 2, 3] and q.fill == 3 and zs.shape == (3, 2, 2)
    q.push(w(4, 5, 6), s(4, 5, 6), torch.tensor([4, 5, 6]))  # 1 is the oldest: overwritten
    zs, cs = q.contents()
    assert cs.tolist() == [2, 3, 4, 5, 6]
    assert zs[:, 0, 0].tolist() == [2, 3, 4, 5, 6] and zs[:, 1, 1].tolist() == [2, 3, 4, 5, 6]  # pairs intact
    assert q.contents(limit=2)[1].tolist() == [5, 6] and len(q.contents(limit=0)[1]) == 0
    q.push(w(*range(10, 18)), s(*range(10, 18)), torch.arange(10, 18))  # 8 > size: the newest 5 stay
    assert q.contents()[1].tolist() == [13, 14, 15, 16, 17]
    x = torch.ones(1, 2, requires_grad=True)
    q.push(x * 2, x * 3, torch.tensor([0]))
    assert not q.contents()[0].requires_grad
    with pytest.raises(ValueError, match="queue size"):
        MemoryQueue(0, 2)


def official_contrast_sizes(K, batches):
    """The official ``second_stage.py`` queue, restated: ptr = n if ptr + n >= K else ptr + n; the
    batch is written at [ptr − n, ptr); the loss uses every slot whose label is not 0 (the
    filled prefix, stale tail included). Returns the number of pairs contrasted at each step."""
    filled = [False] * K
    ptr, sizes = 0, []
    for n in batches:
        ptr = n if ptr + n >= K else ptr + n
        for i in range(ptr - n, ptr):
            filled[i] = True
        sizes.append(sum(filled))
    return sizes


def test_queue_matches_the_code_until_its_first_wrap_then_contrasts_more():
    """The lab's ring contrasts min(K, n + stored) pairs every step. The code's pointer resets
    to n when ptr + n >= K, so after its first wrap it can contrast n fewer than K: with
    K = 128 and 32 pairs a step, 96 from the fourth step on (the audit measured 99 of 128 with
    its batch sizes). Bugs caught: the lab's ring losing pairs at the wrap, or the docstring's
    claim that the two agree before it."""
    K, n, steps = 128, 32, 8
    official = official_contrast_sizes(K, [n] * steps)
    q, lab = MemoryQueue(K, 2), []
    for _ in range(steps):
        z = torch.randn(n, 2)
        lab.append(n + len(q.contents(limit=K - n)[1]))
        q.push(z, z, torch.zeros(n, dtype=torch.long))
    assert lab[:3] == official[:3] == [32, 64, 96]          # before the first wrap: the same
    assert official[3:] == [96] * 5 and lab[3:] == [128] * 5  # after it: n below K in the code


def test_each_step_contrasts_k_pairs_including_the_current_batch(tiny, monkeypatch):
    """The official queue holds K pairs **including** the current batch. Oracle: every pair the
    steps pushed, in order; step t must see its own n_t pairs plus the newest K − n_t earlier
    ones, each a (weak, strong) pair of one entry. Bugs caught: a queue of K single embeddings
    (K/2 pairs), the current batch counted on top of K, views of different entries paired."""
    import mlpl_lab.methods.lac as lac_mod

    seen = []
    real = lac_mod.lac_loss

    def spy(z_w, z_s, cls, q_z, q_c, **kw):
        seen.append((z_w.detach().clone(), z_s.detach().clone(), cls.clone(),
                     None if q_z is None else q_z.clone(), None if q_c is None else q_c.clone()))
        return real(z_w, z_s, cls, q_z, q_c, **kw)

    monkeypatch.setattr(lac_mod, "lac_loss", spy)
    K = 40
    s1 = fit("lac_plc", tiny.train, tiny.val, tiny.test, cfg(epochs=1))
    fit(LACMethod(plc=True, lac=True, delta=0.9, queue_size=K, stage=2), tiny.train, tiny.val, tiny.test,
        cfg(epochs=2), init_from=s1.method)
    assert len(seen) == 2 * (len(tiny.train) // 32)
    history_w, history_s, history_c = [], [], []
    for z_w, z_s, cls, q_z, q_c in seen:
        n = len(cls)
        want = max(0, min(len(history_c), K - n))
        assert len(q_c) == want
        if want:
            assert torch.equal(q_z[:, 0], torch.stack(history_w[-want:]))
            assert torch.equal(q_z[:, 1], torch.stack(history_s[-want:]))
            assert q_c.tolist() == history_c[-want:]
        history_w += list(z_w)
        history_s += list(z_s)
        history_c += cls.tolist()


# ---------------------------------------------------------------------------- head
def test_attention_maps_are_the_last_cross_attention_computed_by_hand():
    """Oracle: softmax(q·k / √d_head) of the last decoder layer, from its own projection
    weights, with q = tgt + query_pos and k = memory + pos, averaged over heads and reshaped to
    (h, w). Bugs caught: the wrong layer, keys without the position encoding, maps taken
    before the head average, a transposed reshape (any softmax would sum to 1)."""
    torch.manual_seed(0)
    m = build_model("small_cnn", 6, width=8, head="label_query").eval()
    x = torch.rand(3, 3, 32, 32)
    captured = {}
    last = m.head.decoder[-1]
    hook = last.register_forward_pre_hook(lambda mod, args: captured.update(args=args))
    out = m.outputs(x)
    hook.remove()
    tgt, memory, pos, query_pos = captured["args"]
    attn = last.cross
    d = attn.embed_dim
    heads = attn.num_heads
    wq, wk = attn.in_proj_weight[:d], attn.in_proj_weight[d:2 * d]
    bq, bk = attn.in_proj_bias[:d], attn.in_proj_bias[d:2 * d]
    q = (tgt + query_pos) @ wq.T + bq                      # (B, C, d)
    k = (memory + pos) @ wk.T + bk                         # (B, hw, d)
    dh = d // heads
    maps = torch.zeros(3, 6, k.shape[1])
    for hd in range(heads):
        sl = slice(hd * dh, (hd + 1) * dh)
        maps += torch.softmax(q[..., sl] @ k[..., sl].transpose(1, 2) / math.sqrt(dh), dim=-1) / heads
    assert out["attention"].shape == (3, 6, 8, 8)
    assert torch.allclose(out["attention"], maps.reshape(3, 6, 8, 8), atol=1e-5)
    # row-major positions: token r * w + c is map[r, c] (the sine encoding's order)
    assert torch.allclose(out["attention"][1, 2, 3, 5], maps[1, 2, 3 * 8 + 5], atol=1e-6)
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
    return tiny_splits(seed=0, image_size=16)  # single positive


def cfg(**kw):
    return tiny_config(**{"lr": 3e-3, "model_kwargs": {"width": 4, "head": "label_query"}, **kw})


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
    # restore_best=False: the method keeps its last state, so the EMA's counter is every step's
    r = fit(m, tiny.train, tiny.val, tiny.test, cfg(epochs=2, restore_best=False), init_from=s1.method)
    net0, ema0 = m.start
    for k, v in best.items():
        assert torch.equal(net0[k], v), k
        assert torch.equal(ema0[k], v), k  # a fresh EMA of the loaded weights
    steps = len(tiny.train) // 32
    assert m.ema_model.updates == m.steps == 2 * steps
    # the queue holds every pair pushed, up to K = 64: lac_entries is the mean per batch
    pushed = sum(row["lac_entries"] * steps for row in r.history)
    assert r.history[-1]["queue_fill"] == min(64, round(pushed))
    # the logged ratio is the epoch's mean L_LAC over its mean L_AN
    for row in r.history:
        assert row["lac_an_ratio"] == pytest.approx(row["loss_lac"] / row["loss_an"], rel=1e-5)


def _naive_map(net, dataset) -> float:
    """Oracle: mean over classes of (mean precision at each positive's rank), in %, a class
    without positives counting 0 (Cole et al.'s convention), from the network's eval-mode scores
    (no helper of the lab's metrics)."""
    net.eval()
    with torch.no_grad():
        scores = net(dataset.get_batch(torch.arange(len(dataset)))["image"])
    truth = dataset.labels
    aps = []
    for j in range(truth.shape[1]):
        order = torch.argsort(scores[:, j], descending=True)
        y = truth[order, j].tolist()
        if sum(y) == 0:
            aps.append(0.0)
            continue
        hits, precisions = 0, []
        for rank, yi in enumerate(y, start=1):
            if yi:
                hits += 1
                precisions.append(hits / rank)
        aps.append(sum(precisions) / len(precisions))
    return 100.0 * sum(aps) / len(aps)


@pytest.mark.parametrize("spoil", ["raw", "ema"])
def test_code_stage_two_start_takes_whichever_of_raw_and_ema_validates_better(tiny, spoil):
    """stage2_start='raw_or_ema' (the official checkpoint, notes §3.3b-5). Bugs caught: the option
    ignored (always raw) or inverted (always the EMA), the comparison made on the wrong split or
    the wrong head, the record not matching what was loaded. One of the two is spoiled by negating
    its classifier (its ranking reverses), so the two cases must choose differently."""
    s1 = fit("lac_plc", tiny.train, tiny.val, tiny.test, cfg(epochs=3, lr=2e-2, seed=1))
    first = copy.deepcopy(s1.method)
    target = first.net if spoil == "raw" else first.ema_model.module
    with torch.no_grad():
        target.head.fc.weight.neg_()
        target.head.fc.bias.neg_()
    raw_map, ema_map = _naive_map(first.net, tiny.val), _naive_map(first.ema_model.module, tiny.val)
    assert raw_map != pytest.approx(ema_map)
    chosen = first.ema_model.module if ema_map > raw_map else first.net
    expected = copy.deepcopy(chosen.state_dict())
    m = StartRecorder(stage2_start="raw_or_ema")
    r = fit(m, tiny.train, tiny.val, tiny.test, cfg(epochs=1), init_from=first)
    net0, ema0 = m.start
    for k, v in expected.items():
        assert torch.equal(net0[k], v), k
        assert torch.equal(ema0[k], v), k
    assert r.initial["init_from_ema"] == float(ema_map > raw_map)
    assert r.initial["init_val_mAP"] == pytest.approx(raw_map, abs=1e-3)
    assert r.initial["init_val_mAP[ema]"] == pytest.approx(ema_map, abs=1e-3)
    # the default (the paper) loads the raw weights whatever the EMA scores, and records nothing
    m2 = StartRecorder()
    r2 = fit(m2, tiny.train, tiny.val, tiny.test, cfg(epochs=1), init_from=first)
    for k, v in first.net.state_dict().items():
        assert torch.equal(m2.start[0][k], v), k
    assert "init_from_ema" not in r2.initial


def test_code_stage_two_start_needs_an_ema_and_a_second_stage(tiny):
    """Bugs caught: the option accepted on a first stage, or a first stage without an EMA
    discovered only after it trained."""
    from mlpl_lab.profiles import get_profile
    from mlpl_lab.runs.validation import validate

    with pytest.raises(ValueError, match="stage2_start"):
        build_method("lac_plc", stage2_start="raw_or_ema")
    with pytest.raises(ValueError, match="stage2_start must be one of"):
        build_method("lac", stage2_start="ema")
    P = get_profile("smoke")
    mk = {"width": 8, "head": "label_query"}
    code = {"stage2_start": "raw_or_ema"}
    validate(P.spec("lac", code, model_kwargs=mk, init_from=P.spec("lac_plc", model_kwargs=mk)))
    no_ema = P.spec("lac_plc", {"ema_decay": None}, model_kwargs=mk)
    with pytest.raises(ValueError, match="keeps no EMA"):
        validate(P.spec("lac", code, model_kwargs=mk, init_from=no_ema))
    s1 = fit("lac_plc", tiny.train, tiny.val, tiny.test, cfg(epochs=1), ema_decay=None)
    with pytest.raises(ValueError, match="kept no EMA"):
        fit(build_method("lac", stage2_start="raw_or_ema"), tiny.train, tiny.val, tiny.test, cfg(epochs=1),
            init_from=s1.method)


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
    from mlpl_lab.runs.validation import validate

    P = get_profile("smoke")
    mk = {"width": 8, "head": "label_query"}
    s1 = P.spec("lac_plc", model_kwargs=mk)
    validate(P.spec("lac", model_kwargs=mk, init_from=s1))
    with pytest.raises(ValueError, match="init_from"):
        validate(P.spec("lac", model_kwargs=mk))
    with pytest.raises(ValueError, match="label_query"):
        validate(P.spec("lac_plc"))


class _Crafted(LACMethod):
    """A method whose two views' logits are given (no network output is used)."""

    def __init__(self, logits_w, logits_s, **kw):
        super().__init__(**kw)
        self.crafted = (logits_w, logits_s)

    def embed_views(self, weak, strong):
        b, c = self.crafted[0].shape
        h = torch.zeros(b, c, self.net.head.d_model, requires_grad=True)
        return h, self.crafted[0], h, self.crafted[1]


def test_plc_diagnostics_and_loss_ratio_against_a_naive_count(tiny):
    """Oracle: a loop over crafted entries (unknown / hidden / selected at δ) and the step
    losses computed here. Bugs caught: counting observed entries as unknown, precision and
    recall swapped, a ratio of the last step instead of the epoch's means, observed negatives
    counted as pseudo-positives."""
    from mlpl_lab.losses.basic import an_loss
    from mlpl_lab.engine.train import prepare

    g = torch.Generator().manual_seed(4)
    B, C, delta = 32, tiny.train.observed.shape[1], 0.6
    method = prepare(_Crafted(None, None, plc=True, lac=False, delta=delta), tiny.train, cfg())
    method.on_epoch_start(0)
    counts = dict(unknown=0, hidden=0, pos=0, pos_true=0, neg=0, neg_true=0)
    sum_an = 0.0
    for step in range(3):
        lw = torch.randn(B, C, generator=g) * 2
        obs = torch.randint(-1, 2, (B, C), generator=g)
        truth = torch.randint(0, 2, (B, C), generator=g)
        method.crafted = (lw, torch.randn(B, C, generator=g))
        batch = {"observed": obs, "labels": truth, "image": torch.zeros(B, 3, 16, 16),
                 "image_strong": torch.zeros(B, 3, 16, 16), "index": torch.arange(B)}
        method.batch_labels = lambda batch: batch["observed"]
        loss, logs = method.training_step(batch, 0)
        sum_an += float(an_loss(lw, obs))
        for i in range(B):
            for j in range(C):
                if obs[i, j] != -1:
                    continue
                p = 1 / (1 + math.exp(-float(lw[i, j])))
                counts["unknown"] += 1
                counts["hidden"] += int(truth[i, j] == 1)
                if p >= delta:
                    counts["pos"] += 1
                    counts["pos_true"] += int(truth[i, j] == 1)
                elif p <= 1 - delta:
                    counts["neg"] += 1
                    counts["neg_true"] += int(truth[i, j] == 0)
    method.on_epoch_end(0)
    row = method.pop_epoch_logs()
    assert row["plc_pseudo_positives"] == counts["pos"]
    assert row["plc_pos_precision"] == pytest.approx(counts["pos_true"] / counts["pos"])
    assert row["plc_pos_recall"] == pytest.approx(counts["pos_true"] / counts["hidden"])
    assert row["plc_neg_precision"] == pytest.approx(counts["neg_true"] / counts["neg"])
    assert row["plc_coverage"] == pytest.approx((counts["pos"] + counts["neg"]) / counts["unknown"])


def test_one_forward_pass_over_both_views(tiny):
    """The joint pass equals the network run on cat([weak, strong]) — BatchNorm's batch and
    running statistics over both views — and differs from two passes; with BatchNorm frozen
    (eval) the two agree. AN reads the weak half of the joint pass. Bugs caught: two passes
    with live BN (each row's BN then sees other batches), AN on a weak-only pass."""
    from mlpl_lab.losses.basic import an_loss
    from mlpl_lab.engine.train import prepare

    torch.manual_seed(0)
    w, s_ = torch.rand(8, 3, 16, 16), torch.rand(8, 3, 16, 16)
    config = cfg(model_kwargs={"width": 4, "head": "label_query", "head_kwargs": {"dropout": 0.0}})
    joint = prepare(LACMethod(plc=True, forward="joint"), tiny.train, config)
    separate = prepare(LACMethod(plc=True, forward="separate"), tiny.train, config)
    separate.net.load_state_dict(joint.net.state_dict())
    oracle = copy.deepcopy(joint.net).train()
    for m in (joint, separate):
        m.net.train()
    _, logits_w, _, logits_s = joint.embed_views(w, s_)
    want = oracle.head(oracle.feature_map(torch.cat([w, s_])))
    assert torch.allclose(torch.cat([logits_w, logits_s]), want, atol=1e-5)
    bn = [k for k in oracle.state_dict() if k.endswith("running_mean")]
    assert bn, "the test needs a network with BatchNorm"
    for k in bn:
        assert torch.allclose(joint.net.state_dict()[k], oracle.state_dict()[k])
    sep_w = separate.embed_views(w, s_)[1]
    assert not torch.allclose(sep_w, logits_w, atol=1e-4)  # live BN: weak-only batch statistics
    assert any(not torch.allclose(separate.net.state_dict()[k], oracle.state_dict()[k]) for k in bn)
    separate.net.load_state_dict(joint.net.state_dict())  # the same running statistics
    for m in (joint, separate):
        m.net.eval()
    a, b = joint.embed_views(w, s_), separate.embed_views(w, s_)
    assert torch.allclose(a[1], b[1], atol=1e-5) and torch.allclose(a[3], b[3], atol=1e-5)
    # AN (forward="joint" by default) reads the weak half of one pass over both views
    an = prepare(build_method("lac_an"), tiny.train, config)
    assert an.views == ("weak", "strong")
    an.net.load_state_dict(joint.net.state_dict())
    an.net.train()
    obs = tiny.train.observed[:8]
    ref = copy.deepcopy(an.net).train()
    loss, _ = an.training_step({"image": w, "image_strong": s_, "observed": obs, "index": torch.arange(8)}, 0)
    want_loss = an_loss(ref.head(ref.feature_map(torch.cat([w, s_])))[:8], obs)
    assert loss.item() == pytest.approx(want_loss.item(), rel=1e-5)
    with pytest.raises(ValueError, match="forward"):
        LACMethod(forward="twice")


def test_code_ema_is_0_9997_per_step(tiny):
    """Oracle: the decays written here (0.9997 per step; 0.5 per epoch over 3 steps = 0.5 ** (1/3))."""
    r = fit("lac_plc", tiny.train, tiny.val, tiny.test, cfg(epochs=1), ema_decay="code")
    assert r.method.ema_model.decay == pytest.approx(0.9997)
    r = fit("lac_plc", tiny.train, tiny.val, tiny.test, cfg(epochs=1))
    assert len(tiny.train) // 32 == 3
    assert r.method.ema_model.decay == pytest.approx(0.5 ** (1 / 3))
    assert r.method.ema_model.decay ** 3 == pytest.approx(0.5)
