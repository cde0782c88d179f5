"""The label-query head of LAC (Xie et al., NeurIPS 2022, Sec. 4.1 "Implementation"; Query2Label-style).

One learned query E_j per class attends to the backbone's spatial features and comes out as
a **label-wise embedding** h_j; class j's logit is its own linear map of h_j. Structure, as in
the official code (``xiemk/SPML-LAC`` ``lib/models``):

* memory = the feature map's h·w tokens (``input_proj`` is the identity when ``d_model`` equals
  the backbone's width, a 1x1 convolution otherwise) plus a fixed, normalised 2-D **sine
  position encoding** (DETR) added to the attention keys (and encoder queries);
* **one encoder layer**: self-attention over the image tokens, FFN, post-norm;
* **decoder layers without self-attention** (the code's ``rm_self_attn_dec_func``): the target
  starts at zero, the class queries are its position embedding, each layer is cross-attention
  (label queries → image tokens) + FFN, post-norm; a final LayerNorm gives h_j. There is no
  label-to-label attention: the paper's "self-attention block" is the encoder's;
* ``GroupWiseLinear``: logit_j = W_j · h_j + b_j (one weight vector per class, U(±1/√d) init);
* a **projector** shared by all labels (Linear-ReLU-Linear, L2-normalised output) used only by
  the stage-2 contrastive loss; it gets no gradient in stage 1 (the paper freezes it there) and
  stage 2 starts from its random initialisation, as in the code.

Initialisation as in the code: Xavier for the encoder/decoder weights, N(0, 1) for the
queries (``nn.Embedding``'s default).

**Sizes** (``d_model``): the paper's ResNet-50 gives 2048-d with 4 heads and FFN 8192
(4 x d). We keep the ratios and let the width follow the backbone: the cpu profile's small CNN
(width 24) gives d = 96 with 4 heads of 24 and FFN 384 over its 8 x 8 map; ResNet-18 gives 512.
The projector maps d → d → ``proj_dim`` (the code's 128; ``min(128, d)`` by default).

**Attention maps** (what the paper's Fig. 6 shows and its code never computes):
:meth:`LabelQueryHead.outputs` returns the cross-attention weights of the last decoder layer,
averaged over heads, reshaped to (B, C, h, w): each class's map sums to 1 over positions in
eval mode (in train mode attention dropout rescales them). ``forward`` skips them.
"""
from __future__ import annotations

import functools
import math
from typing import Dict, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn

from .heads import register_head

__all__ = ["LabelQueryHead", "GroupWiseLinear", "sine_position_encoding"]


def sine_position_encoding(h: int, w: int, d: int, device=None, dtype=torch.float32,
                           temperature: float = 10000.0) -> torch.Tensor:
    """DETR's normalised 2-D sine encoding, (h·w, d): the first d/2 channels encode the row,
    the last d/2 the column; within each half sin and cos alternate over frequencies
    ``temperature ** (2⌊i/2⌋ / (d/2))``; positions are cumulative counts scaled to (0, 2π]."""
    if d % 4:
        raise ValueError(f"the sine position encoding needs d_model divisible by 4, got {d}")
    half = d // 2
    eps, scale = 1e-6, 2 * math.pi
    y = torch.arange(1, h + 1, device=device, dtype=torch.float32)[:, None].expand(h, w)
    x = torch.arange(1, w + 1, device=device, dtype=torch.float32)[None, :].expand(h, w)
    y = y / (h + eps) * scale
    x = x / (w + eps) * scale
    i = torch.arange(half, device=device, dtype=torch.float32)
    dim_t = temperature ** (2 * torch.div(i, 2, rounding_mode="floor") / half)
    px, py = x[..., None] / dim_t, y[..., None] / dim_t
    px = torch.stack((px[..., 0::2].sin(), px[..., 1::2].cos()), dim=-1).flatten(-2)
    py = torch.stack((py[..., 0::2].sin(), py[..., 1::2].cos()), dim=-1).flatten(-2)
    return torch.cat((py, px), dim=-1).reshape(h * w, d).to(dtype)


@functools.lru_cache(maxsize=16)
def _position_encoding(h: int, w: int, d: int, device, dtype) -> torch.Tensor:
    """:func:`sine_position_encoding` as (1, h·w, d), computed once per shape, device and dtype
    (a constant: the head adds it to every batch's keys, never in place)."""
    return sine_position_encoding(h, w, d, device, dtype)[None]


class GroupWiseLinear(nn.Module):
    """logit_j = W_j · h_j + b_j for label-wise embeddings h (B, C, d)."""

    def __init__(self, num_classes: int, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(1, num_classes, dim))
        self.bias = nn.Parameter(torch.empty(1, num_classes))
        bound = 1.0 / math.sqrt(dim)
        nn.init.uniform_(self.weight, -bound, bound)
        nn.init.uniform_(self.bias, -bound, bound)

    @property
    def out_features(self) -> int:
        return self.weight.shape[1]

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return (self.weight * h).sum(-1) + self.bias


def _ffn(d: int, hidden: int, dropout: float) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d, hidden), nn.ReLU(inplace=True), nn.Dropout(dropout), nn.Linear(hidden, d))


class _EncoderLayer(nn.Module):
    def __init__(self, d, heads, hidden, dropout):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, heads, dropout=dropout, batch_first=True)
        self.ffn = _ffn(d, hidden, dropout)
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.drop1, self.drop2 = nn.Dropout(dropout), nn.Dropout(dropout)

    def forward(self, src, pos):
        q = k = src + pos
        src = self.norm1(src + self.drop1(self.attn(q, k, src, need_weights=False)[0]))
        return self.norm2(src + self.drop2(self.ffn(src)))


class _DecoderLayer(nn.Module):
    """Cross-attention (queries → memory) + FFN; no self-attention among the label queries."""

    def __init__(self, d, heads, hidden, dropout):
        super().__init__()
        self.cross = nn.MultiheadAttention(d, heads, dropout=dropout, batch_first=True)
        self.ffn = _ffn(d, hidden, dropout)
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.drop1, self.drop2 = nn.Dropout(dropout), nn.Dropout(dropout)

    def forward(self, tgt, memory, pos, query_pos, need_weights: bool = False):
        out, weights = self.cross(tgt + query_pos, memory + pos, memory, need_weights=need_weights,
                                  average_attn_weights=True)
        tgt = self.norm1(tgt + self.drop1(out))
        return self.norm2(tgt + self.drop2(self.ffn(tgt))), weights


@register_head("label_query")
class LabelQueryHead(nn.Module):
    """Label queries → label-wise embeddings → group-wise linear logits (module docstring).

    ``fc`` is the :class:`GroupWiseLinear` classifier (``out_features`` = C); ``projector`` the
    stage-2 projection MLP; :meth:`label_embeddings` is the training path the LAC method uses.
    """

    def __init__(self, feature_dim: int, num_classes: int, d_model: Optional[int] = None,
                 heads: int = 4, encoder_layers: int = 1, decoder_layers: int = 2, ffn_mult: int = 4,
                 dropout: float = 0.1, proj_dim: Optional[int] = None):
        super().__init__()
        d = int(d_model or feature_dim)
        problems = []
        if d % heads:
            problems.append(f"d_model {d} is not divisible by heads={heads}")
        if d % 4:
            problems.append(f"d_model {d} is not divisible by 4 (sine position encoding)")
        if decoder_layers < 1 or encoder_layers < 0:
            problems.append("need decoder_layers >= 1 and encoder_layers >= 0")
        if not 0.0 <= dropout < 1.0:
            problems.append(f"dropout must be in [0, 1), got {dropout}")
        if problems:
            raise ValueError("label_query head: " + "; ".join(problems)
                             + " (set head_kwargs={'d_model': ..., 'heads': ...})")
        self.d_model, self.num_classes = d, num_classes
        self.input_proj = nn.Identity() if d == feature_dim else nn.Conv2d(feature_dim, d, 1)
        self.query = nn.Embedding(num_classes, d)
        hidden = ffn_mult * d
        self.encoder = nn.ModuleList(_EncoderLayer(d, heads, hidden, dropout) for _ in range(encoder_layers))
        self.decoder = nn.ModuleList(_DecoderLayer(d, heads, hidden, dropout) for _ in range(decoder_layers))
        for p in list(self.encoder.parameters()) + list(self.decoder.parameters()):
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        self.norm = nn.LayerNorm(d)
        self.fc = GroupWiseLinear(num_classes, d)
        self.proj_dim = int(proj_dim or min(128, d))
        self.projector = nn.Sequential(nn.Linear(d, d), nn.ReLU(inplace=True), nn.Linear(d, self.proj_dim))

    def label_embeddings(self, fmap: torch.Tensor, attention: bool = False
                         ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """(h (B, C, d), attention (B, C, h, w) of the last decoder layer or None)."""
        b, _, hh, ww = fmap.shape
        src = self.input_proj(fmap).flatten(2).transpose(1, 2)  # (B, hw, d)
        pos = _position_encoding(hh, ww, self.d_model, fmap.device, src.dtype)
        for layer in self.encoder:
            src = layer(src, pos)
        query_pos = self.query.weight[None].expand(b, -1, -1).to(src.dtype)
        tgt = torch.zeros_like(query_pos)
        weights = None
        last = len(self.decoder) - 1
        for i, layer in enumerate(self.decoder):
            tgt, weights = layer(tgt, src, pos, query_pos, need_weights=attention and i == last)
        attn = weights.reshape(b, self.num_classes, hh, ww) if attention else None
        return self.norm(tgt), attn

    def project(self, h: torch.Tensor) -> torch.Tensor:
        """z = q(h) / ‖q(h)‖: the L2-normalised projections the contrastive loss compares."""
        return F.normalize(self.projector(h), dim=-1)

    def forward(self, fmap: torch.Tensor) -> torch.Tensor:
        return self.fc(self.label_embeddings(fmap)[0])

    def outputs(self, fmap: torch.Tensor, attention: bool = True) -> Dict[str, torch.Tensor]:
        h, attn = self.label_embeddings(fmap, attention=attention)
        out = {"logits": self.fc(h), "label_embeddings": h, "projection": self.project(h)}
        if attention:
            out["attention"] = attn
        return out
