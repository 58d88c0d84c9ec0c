"""Rotary position embeddings: precomputed tables, caches keyed by length, NTK scaling."""
import math

import torch
from torch import nn


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary(q, k, cos, sin):
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, base=10000.0, max_len=128):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        t = torch.arange(max_len).float()
        freqs = torch.outer(t, inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def forward(self, q, k):
        t = q.shape[-2]
        return apply_rotary(q, k, self.cos[:t], self.sin[:t])


class LazyRotary(nn.Module):
    """Rebuilds the table when a longer sequence shows up (HF-style `_set_cos_sin_cache`)."""

    def __init__(self, dim, base=10000.0):
        super().__init__()
        self.dim, self.base = dim, base
        self.cached_len = 0
        self.cos_cached = self.sin_cached = None

    def _build(self, length, device):
        inv_freq = 1.0 / (self.base ** (torch.arange(0, self.dim, 2, device=device).float() / self.dim))
        freqs = torch.outer(torch.arange(length, device=device).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.cos_cached, self.sin_cached = emb.cos(), emb.sin()
        self.cached_len = length  # expect: FL302

    def forward(self, q, k):
        t = q.shape[-2]
        if t > self.cached_len:  # expect: FL301
            self._build(max(t, 16), q.device)
        return apply_rotary(q, k, self.cos_cached[:t], self.sin_cached[:t])


def rope_complex(x, freqs_cis):
    """LLaMA-style rotation through complex multiplication."""
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(xc * freqs_cis).flatten(-2).type_as(x)


@torch.compile
def llama_rope(q, k, freqs_cis):
    return rope_complex(q, freqs_cis), rope_complex(k, freqs_cis)


@torch.compile
def rope_at_positions(x, positions, inv_freq):
    angles = positions[:, None].float() * inv_freq[None, :]
    cos, sin = angles.cos().repeat(1, 2), angles.sin().repeat(1, 2)
    return x * cos + rotate_half(x) * sin


@torch.compile
def ntk_scaled_rope(x, inv_freq, max_trained: int = 16):
    t = x.shape[-2]
    if t > max_trained:  # expect: FL301
        inv_freq = inv_freq / (t / max_trained) ** (x.shape[-1] / (x.shape[-1] - 2))
    angles = torch.arange(t, dtype=torch.float32)[:, None] * inv_freq
    emb = torch.cat((angles, angles), dim=-1)
    return x * emb.cos() + rotate_half(x) * emb.sin()


@torch.compile
def rope_from_offsets(x, offset, inv_freq):
    start = offset.item()  # expect: FL102 GB0124
    positions = torch.arange(start, start + x.shape[-2])
    angles = positions[:, None].float() * inv_freq
    return x * torch.cat((angles, angles), -1).cos()


class ScaledSinusoidal(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(1) * dim ** -0.5)
        half = dim // 2
        self.register_buffer("inv_freq", torch.exp(-math.log(10000.0) * torch.arange(half) / half))

    def forward(self, x):
        pos = torch.arange(x.shape[1], device=x.device, dtype=x.dtype)
        emb = pos[:, None] * self.inv_freq[None, :]
        return x + torch.cat((emb.sin(), emb.cos()), dim=-1) * self.scale


class LearnedPositions(nn.Module):
    def __init__(self, max_len, dim):
        super().__init__()
        self.table = nn.Embedding(max_len, dim)

    def forward(self, x, start=0):
        positions = torch.arange(start, start + x.shape[1], device=x.device)
        return x + self.table(positions)


class CheckedPositions(LearnedPositions):
    def forward(self, x, start=0):
        last = start + x.shape[1]
        assert last <= self.table.num_embeddings, f"sequence too long: {last}"
        return super().forward(x, start)


def _freqs(dim, t):
    inv = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
    return torch.polar(torch.ones(t, dim // 2), torch.outer(torch.arange(t).float(), inv))


CASES = {
    "RotaryEmbedding": lambda: (RotaryEmbedding(16), (torch.randn(2, 4, 6, 16), torch.randn(2, 4, 6, 16))),
    "LazyRotary": lambda: (
        LazyRotary(8), (torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8)),
        (torch.randn(1, 2, 20, 8), torch.randn(1, 2, 20, 8))),
    "llama_rope": lambda: (llama_rope, (torch.randn(2, 6, 4, 16), torch.randn(2, 6, 4, 16), _freqs(16, 16)[:6, None])),
    "rope_at_positions": lambda: (rope_at_positions, (torch.randn(5, 8), torch.tensor([0, 3, 4, 9, 2]), torch.rand(4))),
    "ntk_scaled_rope": lambda: (ntk_scaled_rope, (torch.randn(2, 10, 8), torch.rand(4)), (torch.randn(2, 32, 8), torch.rand(4))),
    "rope_from_offsets": lambda: (rope_from_offsets, (torch.randn(2, 5, 8), torch.tensor(3), torch.rand(4))),
    "ScaledSinusoidal": lambda: (ScaledSinusoidal(16), (torch.randn(2, 7, 16),)),
    "LearnedPositions": lambda: (LearnedPositions(32, 16), (torch.randn(2, 7, 16), 3)),
    "CheckedPositions": lambda: (CheckedPositions(32, 16), (torch.randn(2, 7, 16),)),
}
