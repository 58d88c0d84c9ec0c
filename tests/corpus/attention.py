"""Attention variants: naive, causal, KV cache, grouped-query, with the usual leftovers."""
import math
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn


def naive_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return scores.softmax(dim=-1) @ v


@torch.compile
def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    t = q.shape[-2]
    mask = torch.ones(t, t, dtype=torch.bool, device=q.device).tril()
    return naive_attention(q, k, v, mask)


@torch.compile(dynamic=False)
def attention_with_entropy(q, k, v):
    probs = (q @ k.transpose(-2, -1)).softmax(-1)
    entropy = -(probs * probs.clamp_min(1e-9).log()).sum(-1).mean()
    if entropy < 0.5:  # expect: FL101 GB0170
        probs = probs.detach()
    return probs @ v


class MultiHeadAttention(nn.Module):
    def __init__(self, dim: int, heads: int, dropout: float = 0.0):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.dropout = dropout

    def forward(self, x, mask: Optional[torch.Tensor] = None):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=-1)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                           dropout_p=self.dropout if self.training else 0.0)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class DebugAttention(MultiHeadAttention):
    """The same block with the prints someone forgot to remove."""

    def forward(self, x, mask=None):
        print("attention input", x.shape)  # expect: FL110 GB0059
        out = super().forward(x, mask)
        print(f"max activation {out.abs().max()}")  # expect: FL110 GB0059
        return out


class KVCacheAttention(nn.Module):
    def __init__(self, dim, heads, max_len=64):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.wq, self.wk, self.wv = (nn.Linear(dim, dim, bias=False) for _ in range(3))
        self.wo = nn.Linear(dim, dim, bias=False)
        self.register_buffer("k_cache", torch.zeros(1, heads, max_len, dim // heads))
        self.register_buffer("v_cache", torch.zeros(1, heads, max_len, dim // heads))

    def forward(self, x, pos: int):
        b, t, _ = x.shape
        split = lambda z: z.view(b, t, self.heads, self.head_dim).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.wq(x)), split(self.wk(x)), split(self.wv(x))
        self.k_cache[:, :, pos:pos + t] = k
        self.v_cache[:, :, pos:pos + t] = v
        keys, values = self.k_cache[:, :, :pos + t], self.v_cache[:, :, :pos + t]
        y = F.scaled_dot_product_attention(q, keys, values, is_causal=pos == 0)
        return self.wo(y.transpose(1, 2).reshape(b, t, -1))


class CachedLengthAttention(nn.Module):
    """Keeps the fill level of the cache in a Python int: every call sees a new value."""

    def __init__(self, dim):
        super().__init__()
        self.attn = MultiHeadAttention(dim, heads=2)
        self.filled = 0

    def forward(self, x):
        self.filled += x.shape[1]  # expect: FL302
        return self.attn(x)


class GroupedQueryAttention(nn.Module):
    def __init__(self, dim, heads, kv_heads):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * kv_heads * self.head_dim)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.q(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k, v = self.kv(x).view(b, t, 2, self.kv_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        repeat = self.heads // self.kv_heads
        k = k.repeat_interleave(repeat, dim=1)
        v = v.repeat_interleave(repeat, dim=1)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).flatten(2)


class SlidingWindowAttention(nn.Module):
    def __init__(self, dim, window):
        super().__init__()
        self.window = window
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        t = x.shape[1]
        if t <= self.window:  # expect: FL301
            mask = None
        else:
            idx = torch.arange(t, device=x.device)
            mask = (idx[None, :] <= idx[:, None]) & (idx[:, None] - idx[None, :] < self.window)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return naive_attention(q, k, v, mask)


class PaddedAttention(nn.Module):
    """Drops fully padded rows before attending: the row count depends on the data."""

    def __init__(self, dim):
        super().__init__()
        self.inner = MultiHeadAttention(dim, heads=4)

    def forward(self, x, lengths):
        keep = lengths > 0
        if not keep.all():  # expect: FL101 GB0170
            x = x[keep]  # expect: FL105 GB0036
        return self.inner(x)


@torch.compile
def alibi_bias(scores, slopes):
    t = scores.shape[-1]
    distance = torch.arange(t)[None, :] - torch.arange(t)[:, None]
    return scores + slopes[:, None, None] * distance.abs().neg()


def attention_scale(q):
    return 1.0 / math.sqrt(q.shape[-1])


@torch.compile
def scaled_scores(q, k):
    return (q @ k.transpose(-1, -2)) * attention_scale(q)


@torch.compile
def temperature_attention(q, k, v, temperature):
    scale = math.sqrt(temperature.mean())  # expect: FL104 GB0033
    return ((q @ k.transpose(-1, -2)) / scale).softmax(-1) @ v


CASES = {
    "causal_attention": lambda: (causal_attention, (torch.randn(2, 4, 8, 16),) * 3),
    "attention_with_entropy": lambda: (attention_with_entropy, (torch.randn(2, 8, 16),) * 3),
    "MultiHeadAttention": lambda: (MultiHeadAttention(32, 4).eval(), (torch.randn(2, 6, 32),)),
    "MultiHeadAttention_mask": lambda: (
        MultiHeadAttention(32, 4), (torch.randn(2, 6, 32), torch.ones(6, 6, dtype=torch.bool).tril())),
    "DebugAttention": lambda: (DebugAttention(32, 4), (torch.randn(2, 6, 32),)),
    # inference: without requires_grad_(False) the cache write flips the buffers' requires_grad
    # and the next call recompiles (a guard with no user location).
    "KVCacheAttention": lambda: (KVCacheAttention(32, 4).requires_grad_(False), (torch.randn(1, 5, 32), 0)),
    "CachedLengthAttention": lambda: (CachedLengthAttention(16), (torch.randn(2, 3, 16),)),
    "GroupedQueryAttention": lambda: (GroupedQueryAttention(32, 4, 2), (torch.randn(2, 6, 32),)),
    "SlidingWindowAttention": lambda: (
        SlidingWindowAttention(16, 4), (torch.randn(2, 3, 16),), (torch.randn(2, 8, 16),)),
    "PaddedAttention": lambda: (PaddedAttention(32), (torch.randn(3, 5, 32), torch.tensor([5, 0, 2]))),
    "alibi_bias": lambda: (alibi_bias, (torch.randn(2, 4, 6, 6), torch.rand(4))),
    "scaled_scores": lambda: (scaled_scores, (torch.randn(2, 5, 8), torch.randn(2, 5, 8))),
    "temperature_attention": lambda: (temperature_attention, (*(torch.randn(2, 5, 8),) * 3, torch.rand(3) + 1)),
}
