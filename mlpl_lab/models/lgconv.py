"""LgConv — the local-global convolution of PU-MLC (Zhixiang Yuan, Kaixin Zhang, Tao Huang, ICME 2024, Sec. III-D;
official code ``src/model/Global_Branch.py``; its batch norms are discussed in :mod:`mlpl_lab.methods.pu_mlc`, item 4 of the differences).

Every 3x3 convolution of the backbone gets a parallel **global branch**::

    y = conv(x) + BN(proj(x + broadcast(g) · b))

    x_l = ReLU(W_r x)                      1x1 reduce, C → C/4
    h   = [x_l, mean_HW(x_l)]              local and global context, C/2 channels
    a   = softmax_HW(W_a h)                attention pooling weights, one map per head (8 heads)
    b   = σ(W_b h)                         broadcast gates, one map per head
    v   = W_v x                            1x1, C → C, split into 8 heads of C/8 channels
    g   = Σ_HW v · a                       one pooled vector per head
    proj: 1x1 convolution C → C_out (with bias) with the original convolution's stride

This is the official ``GlobalBranch`` (``tests/test_lgconv.py`` ports its forward pass and
checks ours against it with the same weights). Differences: the code wraps *every* 3x3
convolution (its ResNet's first convolution is 7x7); ours skips those whose input channels the
8 heads do not divide (the small CNN's first, RGB, convolution).

The branch's BatchNorm weight γ starts near zero (N(0, 1e-4), as the code; ``gamma_init=0``
makes the wrapped network compute exactly the base network's function at initialisation), so
training starts from the plain backbone. Convolutions with fewer than 8 input channels, or a
channel count not divisible by the 8 heads, are left as they are (the first RGB convolution).

``lgconv_trainable(model, mode="paper")`` freezes everything except the global branches, the
last backbone stage and the head, and :func:`freeze_batchnorm` keeps every BatchNorm in eval
mode (the code's ``fix_bn``): meaningful when the backbone starts from pretrained weights (the
gpu profile can load them from the torchvision cache); from scratch the default trains all.
"""
from __future__ import annotations

from typing import List

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["LocalGlobalConv", "convert_to_lgconv", "lgconv_modules", "lgconv_trainable", "freeze_batchnorm"]

HEADS = 8


class LocalGlobalConv(nn.Module):
    """A 3x3 ``conv`` plus its global branch (module docstring)."""

    def __init__(self, conv: nn.Conv2d, heads: int = HEADS, gamma_init: float | None = 1e-4):
        super().__init__()
        c_in, c_out = conv.in_channels, conv.out_channels
        if c_in < heads or c_in % heads or c_in < 4:
            raise ValueError(f"LgConv needs in_channels divisible by {heads} (got {c_in})")
        self.conv, self.heads = conv, heads
        reduced = max(1, c_in // 4)
        self.reduce = nn.Conv2d(c_in, reduced, 1)
        self.agg = nn.Conv2d(2 * reduced, heads, 1)
        self.brd = nn.Conv2d(2 * reduced, heads, 1)
        self.value = nn.Conv2d(c_in, c_in, 1)
        self.proj = nn.Conv2d(c_in, c_out, 1, stride=conv.stride)  # with a bias, as the code
        self.bn = nn.BatchNorm2d(c_out)
        with torch.no_grad():
            if gamma_init is None or gamma_init == 0:
                self.bn.weight.zero_()
            else:
                self.bn.weight.normal_(0.0, float(gamma_init))
            self.bn.bias.zero_()

    def branch(self, x: torch.Tensor) -> torch.Tensor:
        b, c, h, w = x.shape
        x_l = F.relu(self.reduce(x))
        ctx = torch.cat([x_l, x_l.mean(dim=(2, 3), keepdim=True).expand_as(x_l)], dim=1)
        agg = torch.softmax(self.agg(ctx).flatten(2), dim=-1)            # (B, heads, HW)
        brd = torch.sigmoid(self.brd(ctx))                                # (B, heads, H, W)
        v = self.value(x).reshape(b, self.heads, c // self.heads, h * w)  # (B, heads, C/heads, HW)
        g = torch.einsum("bnd,bnkd->bnk", agg, v)                         # (B, heads, C/heads)
        out = x + (g[..., None, None] * brd[:, :, None]).reshape(b, c, h, w)
        return self.bn(self.proj(out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        g = self.branch(x)
        if g.shape[-2:] != y.shape[-2:]:  # padding/stride mismatch of the original conv
            g = F.interpolate(g, size=y.shape[-2:], mode="nearest")
        return y + g


def convert_to_lgconv(module: nn.Module, heads: int = HEADS, gamma_init: float | None = 1e-4) -> int:
    """Wrap every eligible 3x3 convolution inside ``module`` (in place); returns how many."""
    count = 0
    for name, child in list(module.named_children()):
        if isinstance(child, LocalGlobalConv):
            continue
        if isinstance(child, nn.Conv2d) and child.kernel_size == (3, 3) and child.groups == 1 \
                and child.in_channels >= heads and child.in_channels % heads == 0:
            setattr(module, name, LocalGlobalConv(child, heads, gamma_init))
            count += 1
        else:
            count += convert_to_lgconv(child, heads, gamma_init)
    return count


def lgconv_modules(model: nn.Module) -> List[LocalGlobalConv]:
    return [m for m in model.modules() if isinstance(m, LocalGlobalConv)]


def freeze_batchnorm(model: nn.Module) -> None:
    """Every BatchNorm in eval mode (running statistics frozen), as the code's ``fix_bn``."""
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.eval()


def lgconv_trainable(model: nn.Module, mode: str = "all") -> List[nn.Parameter]:
    """The parameters to optimise: ``"all"``, or ``"paper"`` — the global branches, the last
    backbone stage (``model.last_conv``) and the head; everything else gets ``requires_grad=False``."""
    if mode == "all":
        return [p for p in model.parameters()]
    if mode != "paper":
        raise ValueError(f"mode must be 'all' or 'paper', got {mode!r}")
    keep = set()
    for m in lgconv_modules(model):
        for n, p in m.named_parameters():
            if not n.startswith("conv."):
                keep.add(id(p))
    for part in (model.last_conv, model.head):
        keep.update(id(p) for p in part.parameters())
    params = []
    for p in model.parameters():
        p.requires_grad_(id(p) in keep)
        if id(p) in keep:
            params.append(p)
    if not lgconv_modules(model):
        raise ValueError("mode='paper' trains the LgConv branches: build the model with lgconv=True")
    return params
