"""LgConv (PU-MLC, paper 004 Sec. III-D) against a port of the official ``GlobalBranch``
(TAKELAMAG/PU-MLC @5c54d37, ``src/model/Global_Branch.py``): the forward pass is re-written
here from the code's equations, with plain loops over heads and pixels, and run on the same
weights as ours."""
from __future__ import annotations


import pytest
import torch
import torch.nn.functional as F
from torch import nn

from mlpl_lab.models import build_model
from mlpl_lab.models.lgconv import LocalGlobalConv, convert_to_lgconv, lgconv_modules


def official_global_branch(x, w, heads=8, bn_eval=True):
    """The code's ``GlobalBranch.forward``, step by step, from its weights ``w`` (a dict of
    tensors named as the code names them). Loops where the code uses views, so a wrong
    head/channel grouping or softmax axis in ours cannot hide in a shared reshape."""
    B, C, H, W = x.shape
    conv1 = lambda t, k, b=None, stride=1: F.conv2d(t, k, b, stride=stride)  # noqa: E731
    x_local = torch.relu(conv1(x, w["reduction.weight"], w["reduction.bias"]))
    x_global = x_local.mean(dim=(2, 3), keepdim=True)
    x_hidden = torch.cat([x_local, x_global.expand(-1, -1, H, W)], 1)
    agg_logits = conv1(x_hidden, w["agg_attn.weight"], w["agg_attn.bias"])       # (B, heads, H, W)
    broad = torch.sigmoid(conv1(x_hidden, w["broad_attn.weight"], w["broad_attn.bias"]))
    v = conv1(x, w["v.weight"], w["v.bias"])                                      # (B, C, H, W)
    per_head = C // heads
    out = x.clone()
    for b in range(B):
        for n in range(heads):
            a = agg_logits[b, n].flatten()
            a = torch.exp(a - a.max())
            a = (a / a.sum()).reshape(H, W)                                        # softmax over H·W
            for k in range(per_head):
                ch = n * per_head + k                                              # view(B, heads, C/heads)
                g = (v[b, ch] * a).sum()                                           # pooled value
                out[b, ch] = out[b, ch] + g * broad[b, n]                         # broadcast, gated
    y = conv1(out, w["proj.weight"], w["proj.bias"], stride=w["stride"])
    if bn_eval:
        mean, var = w["norm.running_mean"], w["norm.running_var"]
    else:
        mean, var = y.mean(dim=(0, 2, 3)), y.var(dim=(0, 2, 3), unbiased=False)
    shape = (1, -1, 1, 1)
    return (y - mean.view(shape)) / torch.sqrt(var.view(shape) + 1e-5) * w["norm.weight"].view(shape) \
        + w["norm.bias"].view(shape)


def official_weights(m: LocalGlobalConv):
    """Our module's parameters under the code's names (the 'same weights copied in')."""
    names = {"reduce": "reduction", "agg": "agg_attn", "brd": "broad_attn", "value": "v", "proj": "proj",
             "bn": "norm"}
    out = {"stride": m.conv.stride}
    for k, v in m.state_dict().items():
        head, _, rest = k.partition(".")
        if head in names:
            out[f"{names[head]}.{rest}"] = v.detach().clone()
    return out


@pytest.mark.parametrize("c_in,c_out,stride,size", [(16, 32, 1, 6), (32, 16, 2, 7), (8, 8, 1, 5)])
@pytest.mark.parametrize("train_mode", [False, True])
def test_local_global_conv_equals_the_official_branch(c_in, c_out, stride, size, train_mode):
    """Catches: a softmax over heads instead of pixels, channels grouped per head in the wrong
    order, the global mean taken before the ReLU, the broadcast gate left out, a proj without
    the code's bias or stride, the branch not added to the original convolution."""
    torch.manual_seed(c_in + stride)
    conv = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1)
    m = LocalGlobalConv(conv)
    with torch.no_grad():  # every weight non-trivial, so each term shows in the output
        for p in m.parameters():
            p.normal_(0, 0.3)
        m.bn.running_mean.normal_(0, 0.2)
        m.bn.running_var.uniform_(0.5, 2.0)
    m.train(train_mode)
    x = torch.randn(3, c_in, size, size)
    w = official_weights(m)
    want = conv(x) + official_global_branch(x, w, bn_eval=not train_mode)
    got = m(x)
    assert got.shape == want.shape
    assert torch.allclose(got, want, atol=1e-5, rtol=1e-4), float((got - want).abs().max())


def test_initialisation_as_the_code():
    """The branch's BN weight is drawn from N(0, 1e-4) (the code's ``normal_(0, 0.0001)``) and
    its bias is 0; the projection has a bias (``nn.Conv2d`` default). Catches a γ initialised at
    1 (the branch would swamp the pretrained features) or a projection without bias."""
    torch.manual_seed(0)
    m = LocalGlobalConv(nn.Conv2d(64, 128, 3, padding=1))
    g = m.bn.weight.detach()
    assert float(g.abs().max()) < 6e-4 and float(g.std()) == pytest.approx(1e-4, rel=0.3)
    assert torch.count_nonzero(m.bn.bias) == 0 and m.proj.bias is not None
    assert m.reduce.out_channels == 64 // 4 and m.agg.out_channels == 8 and m.brd.out_channels == 8


def test_conversion_wraps_the_code_selection():
    """The code wraps every 3x3 convolution; ours every 3x3 one whose input channels the 8 heads
    divide. Catches a 1x1 conv wrapped, a nested conv missed, or a conv wrapped twice."""
    net = nn.Sequential(nn.Conv2d(3, 8, 3), nn.Sequential(nn.Conv2d(8, 16, 3), nn.Conv2d(16, 16, 1)),
                        nn.Conv2d(16, 16, 3))
    assert convert_to_lgconv(net) == 2
    assert isinstance(net[1][0], LocalGlobalConv) and isinstance(net[2], LocalGlobalConv)
    assert isinstance(net[0], nn.Conv2d) and isinstance(net[1][1], nn.Conv2d)
    assert convert_to_lgconv(net) == 0  # already converted: nothing wrapped twice
    model = build_model("small_cnn", 5, width=8, lgconv=True)
    wrapped = [m.conv for m in lgconv_modules(model)]
    eligible = [c for c in wrapped if c.kernel_size == (3, 3) and c.in_channels % 8 == 0]
    assert len(wrapped) == len(eligible) == 3
