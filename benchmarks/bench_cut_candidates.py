"""Cuts of LAC's step that change bits, measured and NOT applied (each would bump a numerics version).

Issue 51 asks for cuts that leave the goldens bitwise identical, or else bump the version of the
component they change (re-keying that family's runs in the shipped pack). These two candidates
compute the same function up to float rounding but not bit for bit, so they are prototyped here,
outside the library, timed against the library's code in the same process (interleaved rounds,
best of N, one thread), and left for a decision:

* ``lac_loss`` (component ``method.lac``): the contrastive loss's sum over positives taken
  algebraically, Σ_{p∈P(a)} s(a, p) − |P(a)|·lse_a from per-class sums of the embeddings, instead
  of the |E| x |E| log-probability matrix masked and summed (|E| = 1,024: LAC's queue of K = 512
  pairs full, as in stage 2 after its first steps);
* the label-query head (component ``head.label_query``): its attention computed batch-major
  (the in-projections on (B, L, d), ``scaled_dot_product_attention`` on (B, heads, L, d/heads)),
  instead of ``nn.MultiheadAttention(batch_first=True)``, which transposes to (L, B, d) and copies
  the inputs and their gradients (``aten::copy_``: ~10 % of a LAC step in
  ``records/profile_steps_cpu.json``). The chapter's cpu head: d 64, 4 heads, FFN x2, no dropout;
  a batch of 128 feature maps (the weak and the strong view of 64 images).

Decision (issue 51): **not applied.** Both parts are a fraction of a LAC step (the head with the
backbone and two views, the loss in stage two only), so the step gains less than the parts, and
applying them bumps ``head.label_query`` and ``method.lac``, which re-keys every LAC run
(``mlpl-lab plan --bump head.label_query`` says how many and how long). They stay measured here for
the next change that alters LAC's numerics anyway: land them with it, under the same bumps.

The record (``benchmarks/records/cut_candidates_cpu.json``) keeps the milliseconds of each
(forward + backward), the largest difference in value and in gradient against the library's code,
and the machine's load.

Usage::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_cut_candidates.py
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mlpl_lab.losses.lac import lac_loss  # noqa: E402
from mlpl_lab.models.label_query import LabelQueryHead, sine_position_encoding  # noqa: E402

RECORD = ROOT / "benchmarks" / "records" / "cut_candidates_cpu.json"


def lac_loss_algebraic(z_weak, z_strong, classes, queue_z, queue_classes, tau=0.5):
    """lac_loss (form "code") with Σ_{p∈P(a)} log p(a, p) = Σ_{p∈P(a)} s(a, p) − |P(a)| lse_a."""
    feats = torch.cat([z_weak, queue_z[:, 0], z_strong, queue_z[:, 1]])
    cls = torch.cat([classes, queue_classes, classes, queue_classes])
    sim = feats @ feats.T / tau
    eye = torch.eye(len(feats), dtype=torch.bool, device=feats.device)
    lse = torch.logsumexp(sim.masked_fill(eye, float("-inf")), dim=1)
    _, of_class, counts = torch.unique(cls, return_inverse=True, return_counts=True)
    class_sum = F.one_hot(of_class, len(counts)).to(feats.dtype).T @ feats          # (K, d)
    pos_sim = ((feats * class_sum[of_class]).sum(1) - (feats * feats).sum(1)) / tau
    n_pos = counts[of_class] - 1
    per_anchor = (pos_sim - n_pos * lse) / n_pos.clamp(min=1)
    return -(per_anchor[n_pos > 0]).mean()


def _attention(attn, q, k, v):
    """nn.MultiheadAttention's computation (no mask, no dropout) on batch-major inputs."""
    E, H, B = q.shape[-1], attn.num_heads, q.shape[0]
    w, b = attn.in_proj_weight, attn.in_proj_bias

    def heads(x, i):
        return F.linear(x, w[i * E:(i + 1) * E], b[i * E:(i + 1) * E]).view(B, -1, H, E // H).transpose(1, 2)

    o = F.scaled_dot_product_attention(heads(q, 0), heads(k, 1), heads(v, 2))
    return F.linear(o.transpose(1, 2).reshape(B, -1, E), attn.out_proj.weight, attn.out_proj.bias)


def head_batch_major(head: LabelQueryHead, fmap):
    """LabelQueryHead.forward with :func:`_attention` (post-norm layers as the library's)."""
    b, _, hh, ww = fmap.shape
    src = head.input_proj(fmap).flatten(2).transpose(1, 2)
    pos = sine_position_encoding(hh, ww, head.d_model, fmap.device, src.dtype)[None]
    for layer in head.encoder:
        q = src + pos
        src = layer.norm1(src + layer.drop1(_attention(layer.attn, q, q, src)))
        src = layer.norm2(src + layer.drop2(layer.ffn(src)))
    query_pos = head.query.weight[None].expand(b, -1, -1)
    tgt = torch.zeros_like(query_pos)
    for layer in head.decoder:
        tgt = layer.norm1(tgt + layer.drop1(_attention(layer.cross, tgt + query_pos, src + pos, src)))
        tgt = layer.norm2(tgt + layer.drop2(layer.ffn(tgt)))
    return head.fc(head.norm(tgt))


def _time(fn, reps: int) -> float:
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps * 1e3


def paired(current, candidate, reps: int, rounds: int) -> dict:
    a, b = [], []
    for _ in range(rounds):  # interleaved: load hits both alike
        a.append(_time(current, reps))
        b.append(_time(candidate, reps))
    return {"current_ms": round(min(a), 3), "candidate_ms": round(min(b), 3),
            "speedup": round(min(a) / min(b), 3), "current_ms_each_round": [round(x, 3) for x in a],
            "candidate_ms_each_round": [round(x, 3) for x in b]}


def _max_grad_diff(fa, fb, inputs) -> float:
    ga = torch.autograd.grad(fa(), inputs, allow_unused=True)
    gb = torch.autograd.grad(fb(), inputs, allow_unused=True)
    return max(float((x - y).abs().max()) for x, y in zip(ga, gb) if x is not None)


def main() -> int:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    record = {"what": __doc__.split("\n\n")[0], "started": _dt.datetime.now().isoformat(timespec="seconds"),
              "machine": {"python": platform.python_version(), "torch": torch.__version__, "threads": 1,
                          "cpus": os.cpu_count(), "load average at start": os.getloadavg()}}
    n, m = 70, 442  # ~70 valid entries a step (the profile's warm-up), the queue's other pairs: |E| = 1024
    zw = F.normalize(torch.randn(n, 64), dim=-1).requires_grad_()
    zs = F.normalize(torch.randn(n, 64), dim=-1).requires_grad_()
    c, qc = torch.randint(0, 20, (n,)), torch.randint(0, 20, (m,))
    qz = F.normalize(torch.randn(m, 2, 64), dim=-1)
    cur = lambda: lac_loss(zw, zs, c, qz, qc)  # noqa: E731
    cand = lambda: lac_loss_algebraic(zw, zs, c, qz, qc)  # noqa: E731
    record["lac_loss"] = {"component": "method.lac", "entries": 2 * (n + m),
                          "max_abs_value_diff": float((cur() - cand()).detach().abs()),
                          "max_abs_grad_diff": _max_grad_diff(cur, cand, [zw, zs]),
                          "forward_backward": paired(lambda: cur().backward(), lambda: cand().backward(), 10, 15)}
    print("lac_loss", {k: v for k, v in record["lac_loss"]["forward_backward"].items() if "each" not in k}, flush=True)

    head = LabelQueryHead(64, 20, d_model=64, dropout=0.0, ffn_mult=2).train()
    fmap = torch.randn(128, 64, 8, 8).contiguous(memory_format=torch.channels_last).requires_grad_()
    cur = lambda: head(fmap).sum()  # noqa: E731
    cand = lambda: head_batch_major(head, fmap).sum()  # noqa: E731
    with torch.no_grad():
        value_diff = float((head(fmap) - head_batch_major(head, fmap)).abs().max())
    record["label_query_head"] = {"component": "head.label_query", "batch": 128,
                                  "head_kwargs": {"d_model": 64, "heads": 4, "ffn_mult": 2, "dropout": 0.0},
                                  "max_abs_logit_diff": value_diff,
                                  "max_abs_grad_diff": _max_grad_diff(cur, cand, list(head.parameters()) + [fmap]),
                                  "forward_backward": paired(lambda: cur().backward(), lambda: cand().backward(), 3, 15)}
    print("label-query head", {k: v for k, v in record["label_query_head"]["forward_backward"].items()
                               if "each" not in k}, flush=True)
    record["machine"]["load average at end"] = os.getloadavg()
    RECORD.write_text(json.dumps(record, indent=1) + "\n")
    print(f"record: {RECORD}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
