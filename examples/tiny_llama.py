"""A small decoder-only transformer with the graph breaks real model code tends to have.

Run `fuselens check examples/` to see them, or open this file in an editor with FuseLens.
"""
import logging
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

logger = logging.getLogger(__name__)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(q, k, cos, sin):
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class Attention(nn.Module):
    def __init__(self, dim: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)

    def forward(self, x, cos, sin, mask=None):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.n_heads, d // self.n_heads).unbind(2)
        q, k = apply_rope(q, k, cos, sin)
        scores = (q.transpose(1, 2) @ k.transpose(1, 2).transpose(-1, -2)) / math.sqrt(d // self.n_heads)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        if scores.isnan().any():
            logger.warning("NaN in attention scores")
        attn = F.softmax(scores, dim=-1)
        return self.out((attn @ v.transpose(1, 2)).transpose(1, 2).reshape(b, t, d))


class MoE(nn.Module):
    def __init__(self, dim: int, n_experts: int = 4):
        super().__init__()
        self.router = nn.Linear(dim, n_experts)
        self.experts = nn.ModuleList([nn.Linear(dim, dim) for _ in range(n_experts)])

    def forward(self, x):
        weights, chosen = self.router(x).softmax(-1).topk(1, dim=-1)
        out = torch.zeros_like(x)
        for i, expert in enumerate(self.experts):
            routed = chosen.squeeze(-1) == i
            if routed.any():
                out[routed] = expert(x[routed]) * weights[routed]
        return out


class Block(nn.Module):
    def __init__(self, dim: int, n_heads: int):
        super().__init__()
        self.norm1, self.norm2 = RMSNorm(dim), RMSNorm(dim)
        self.attn = Attention(dim, n_heads)
        self.moe = MoE(dim)

    def forward(self, x, cos, sin, mask=None):
        x = x + self.attn(self.norm1(x), cos, sin, mask)
        return x + self.moe(self.norm2(x))


class TinyLlama(nn.Module):
    def __init__(self, vocab: int = 256, dim: int = 64, n_heads: int = 4, n_layers: int = 2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList([Block(dim, n_heads) for _ in range(n_layers)])
        self.norm = RMSNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head_dim = dim // n_heads

    def forward(self, tokens):
        t = tokens.shape[1]
        pos = torch.arange(t, device=tokens.device)
        freqs = pos[:, None] / 10000 ** (torch.arange(0, self.head_dim, 2) / self.head_dim)
        cos, sin = freqs.cos().repeat(1, 2)[:, None], freqs.sin().repeat(1, 2)[:, None]
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x, cos, sin, mask)
        print("hidden norm", x.norm())
        return self.head(self.norm(x))


@torch.compile
def sample(model, tokens, steps: int, temperature: float = 1.0):
    for _ in range(steps):
        logits = model(tokens)[:, -1] / temperature
        next_token = torch.multinomial(logits.softmax(-1), 1)
        tokens = torch.cat([tokens, next_token], dim=1)
        if next_token.item() == 0:  # end of sequence
            break
    return tokens
