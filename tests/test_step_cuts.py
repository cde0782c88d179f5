"""Issue 51's bitwise-neutral cuts of the training step: each computes, bit for bit, what the code
it replaced computed (the goldens check whole runs; these check each cut against its own oracle).
"""
from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from mlpl_lab.engine.train import TrainConfig, _make_optimizer_factory
from mlpl_lab.losses.lac import lac_loss
from mlpl_lab.methods.ema import EMA
from mlpl_lab.models import build_model
from mlpl_lab.models.label_query import _position_encoding, sine_position_encoding


def test_ema_update_equals_the_per_tensor_update_bit_for_bit():
    torch.manual_seed(0)
    net = build_model("small_cnn", 20, width=16, head="label_query")
    net.to(memory_format=torch.channels_last)  # the loop's layout: the EMA copy stays NCHW
    ema = EMA(net, 0.5, 62)
    oracle = copy.deepcopy(ema.module)
    d = ema.decay
    for _ in range(5):
        with torch.no_grad():
            for p in net.parameters():
                p.add_(torch.randn_like(p) * 0.01)
            for b in net.buffers():
                if b.dtype.is_floating_point:
                    b.add_(torch.randn_like(b) * 0.01)
                else:
                    b.add_(1)
        ema.update(net)
        with torch.no_grad():  # θ ← d θ + (1 − d) θ', one tensor at a time; integers copied
            for t, v in list(zip(oracle.parameters(), net.parameters())) + list(zip(oracle.buffers(), net.buffers())):
                if t.dtype.is_floating_point:
                    t.mul_(d).add_(v, alpha=1.0 - d)
                else:
                    t.copy_(v)
    got, want = ema.module.state_dict(), oracle.state_dict()
    assert got.keys() == want.keys()
    for k in got:
        assert torch.equal(got[k], want[k]), k
    assert ema.updates == 5


def _contrastive_oracle(z_weak, z_strong, classes, queue_z, queue_classes, tau):
    """The code form of lac_loss as it was written before the cut (|P(a)| by summing the mask)."""
    feats = torch.cat([z_weak, queue_z[:, 0], z_strong, queue_z[:, 1]])
    cls = torch.cat([classes, queue_classes, classes, queue_classes])
    sim = feats @ feats.T / tau
    eye = torch.eye(len(feats), dtype=torch.bool)
    log_prob = sim - torch.logsumexp(sim.masked_fill(eye, float("-inf")), dim=1, keepdim=True)
    pos = (cls[:, None] == cls[None, :]) & ~eye
    n_pos = pos.sum(1)
    per_anchor = (log_prob.masked_fill(~pos, 0.0)).sum(1) / n_pos.clamp(min=1)
    return -(per_anchor[n_pos > 0]).mean()


def test_lac_loss_class_counts_give_the_mask_sum_bit_for_bit():
    torch.manual_seed(1)
    for n, m in ((1, 0), (7, 0), (40, 100)):
        zw = F.normalize(torch.randn(n, 16), dim=-1).requires_grad_()
        zs = F.normalize(torch.randn(n, 16), dim=-1).requires_grad_()
        c = torch.randint(0, 5, (n,))
        qz, qc = F.normalize(torch.randn(m, 2, 16), dim=-1), torch.randint(0, 5, (m,))
        got = lac_loss(zw, zs, c, qz, qc, tau=0.5)
        want = _contrastive_oracle(zw, zs, c, qz, qc, 0.5)
        assert torch.equal(got, want)
        for a, b in zip(torch.autograd.grad(got, [zw, zs]), torch.autograd.grad(want, [zw, zs])):
            assert torch.equal(a, b)


def test_fit_optimisers_step_as_the_per_tensor_loop_bit_for_bit():
    for name, cls, kw in (("adam", torch.optim.Adam, {}), ("adamw", torch.optim.AdamW, {}),
                          ("sgd", torch.optim.SGD, {"momentum": 0.9})):
        torch.manual_seed(2)
        a = build_model("small_cnn", 20, width=8)
        b = copy.deepcopy(a)
        opt_a = _make_optimizer_factory(TrainConfig(optimizer=name, lr=2e-3, weight_decay=1e-4))(a.parameters())
        opt_b = cls(b.parameters(), lr=2e-3, weight_decay=1e-4, foreach=False, **kw)
        assert opt_a.param_groups[0]["foreach"] is True
        for step in range(4):
            x = torch.randn(4, 3, 32, 32)
            for net, opt in ((a, opt_a), (b, opt_b)):
                opt.zero_grad(set_to_none=True)
                net(x).square().mean().backward()
                opt.step()
        for p, q in zip(a.parameters(), b.parameters()):
            assert torch.equal(p, q), name


def test_position_encoding_is_cached_and_equal_to_the_formula():
    a = _position_encoding(8, 8, 64, torch.device("cpu"), torch.float32)
    assert torch.equal(a, sine_position_encoding(8, 8, 64)[None])
    assert _position_encoding(8, 8, 64, torch.device("cpu"), torch.float32) is a
