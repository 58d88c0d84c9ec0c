"""Corpus: sizes under torch.jit.trace. While tracing, `x.shape[i]` is a 0-d tensor, so Python
that turns a size into a number or a bool (int/float, min/max, math.*, len, iterating or
unpacking a tensor, size checks inside GroupNorm/MultiheadAttention) warns and freezes the value
(FL203). Tensor arithmetic on sizes and slicing with them stay traced."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class PatchGrid(nn.Module):
    """ViT patch tokens back to a square feature map."""

    def __init__(self, dim: int = 8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, tokens):
        b, n, d = tokens.shape
        side = int(math.sqrt(n))  # expect: FL203
        return self.proj(tokens).transpose(1, 2).reshape(b, d, side, side)


def letterbox(images, canvas: int = 16):
    h, w = images.shape[-2:]
    scale = min(canvas / h, canvas / w)  # expect: FL203
    size = (int(h * scale), int(w * scale))  # expect: FL203
    resized = F.interpolate(images, size=size, mode="nearest")
    return F.pad(resized, (0, canvas - size[1], 0, canvas - size[0]))


class GroupNormBlock(nn.Module):
    def __init__(self, channels: int = 4):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.norm = nn.GroupNorm(2, channels)

    def forward(self, x):
        return x + F.silu(self.norm(self.conv(x)))  # expect: FL203


class ContextEncoder(nn.Module):
    def __init__(self, dim: int = 8):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, 2, batch_first=True)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        h, _ = self.attn(x, x, x, need_weights=False)  # expect: FL203
        return self.norm(x + h)


def per_sample_scale(batch, scales):
    rows = [row * s for row, s in zip(batch, scales)]  # expect: FL203
    return torch.stack(rows)


def split_heads(qkv):
    q, k, v = qkv.unbind(0)
    return (q @ k.transpose(-1, -2)).softmax(-1) @ v


def causal_pad(x, kernel: int = 3):
    left = kernel - 1
    return F.pad(x, (left, 0))[..., : x.shape[-1]]


def last_step_pool(states):
    steps = len(states)  # expect: FL203
    return states[steps - 1] + states.mean(0)


def example_letterbox():
    return torch.jit.trace(letterbox, (torch.randn(1, 3, 10, 14),))


def example_exports():
    torch.jit.trace(PatchGrid(), (torch.randn(2, 16, 8),))
    torch.jit.trace(GroupNormBlock(), (torch.randn(1, 4, 5, 5),))
    torch.jit.trace(ContextEncoder().eval(), (torch.randn(2, 5, 8),))
    torch.jit.trace(per_sample_scale, (torch.randn(3, 4), torch.randn(3)))
    torch.jit.trace(split_heads, (torch.randn(3, 2, 5, 4),))
    torch.jit.trace(causal_pad, (torch.randn(2, 4, 6),))
    torch.jit.trace(last_step_pool, (torch.randn(5, 2, 3),))


TRACED = {
    "PatchGrid": lambda: (PatchGrid(), (torch.randn(2, 16, 8),)),
    "letterbox": lambda: (letterbox, (torch.randn(1, 3, 10, 14),)),
    "GroupNormBlock": lambda: (GroupNormBlock(), (torch.randn(1, 4, 5, 5),)),
    "ContextEncoder": lambda: (ContextEncoder().eval(), (torch.randn(2, 5, 8),)),
    "per_sample_scale": lambda: (per_sample_scale, (torch.randn(3, 4), torch.randn(3))),
    "split_heads": lambda: (split_heads, (torch.randn(3, 2, 5, 4),)),
    "causal_pad": lambda: (causal_pad, (torch.randn(2, 4, 6),)),
    "last_step_pool": lambda: (last_step_pool, (torch.randn(5, 2, 3),)),
}
CASES = {
    "PatchGrid": lambda: (PatchGrid(), (torch.randn(2, 16, 8),)),
    "GroupNormBlock": lambda: (GroupNormBlock(), (torch.randn(1, 4, 5, 5),)),
    "ContextEncoder": lambda: (ContextEncoder().eval(), (torch.randn(2, 5, 8),)),
}
