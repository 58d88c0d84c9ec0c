"""The compiler benchmark's cases, shared by bench/compiler_bench.py (timings) and
tests/compiler_backend/test_bench_cases.py (every case matches eager, at small sizes)."""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def pointwise_chain(x):
    y = x * 1.5 + 0.5
    for _ in range(4):
        y = torch.sigmoid(y) * y - 0.1 * y.abs() + torch.tanh(y)
    return y


def broadcast(x, row, col):
    return (x + row) * col - row.exp()


def sum_lastdim(x):
    return x.sum(-1)


def sum_dim0(x):
    return x.sum(0)


def softmax(x):
    return torch.softmax(x, -1)


def logsoftmax_nll(x, t):
    return F.cross_entropy(x, t)


def layernorm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b)


def rmsnorm(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def residual_norm(x, r, w, b):
    h = x + r
    return F.layer_norm(h, (h.shape[-1],), w, b), h


def swiglu(g, u):
    return F.silu(g) * u


def rope(x, cos, sin):
    half = x.shape[-1] // 2
    rot = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rot * sin


def naive_attention(q, k, v):
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    return torch.softmax(s, -1) @ v


def linear_gelu(x, w, b):
    return F.gelu(F.linear(x, w, b))


class Block(nn.Module):
    def __init__(self, d=256, heads=4):
        super().__init__()
        self.h = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // self.h), -1) @ v
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


def graph_break(x):
    y = torch.tanh(x * 2 + 1) * x
    print("", end="")  # a graph break: two compiled graphs
    return torch.sigmoid(y) * y + 1


def tiny(x):
    return x * 2 + 1


def shape_change(x):
    return torch.softmax(x * 2, -1) + x


class Calls(list):
    """Several argument tuples, one call each (a case whose shapes change between calls)."""


def runner(args):
    """`run(f)`: call f on the case's arguments (on each tuple, for `Calls`)."""
    if isinstance(args, Calls):
        return lambda f: [f(*a) for a in args]
    return lambda f: f(*args)


SIZES = {  # n: square matrices, rows x cols: row-wise cases, rope: (batch, heads, tokens, dim), ...
    "full": dict(n=4096, rows=8192, cols=1024, rope=(4, 8, 512, 64), attn=(2, 8, 256, 64), lin=(512, 1024, 2048),
                 mlp=(256, 512, 2048), block=(4, 128, 256, 4), change=((512, 1024), (1024, 512))),
    "quick": dict(n=1024, rows=1024, cols=1024, rope=(2, 4, 128, 64), attn=(2, 8, 256, 64), lin=(512, 1024, 2048),
                  mlp=(256, 512, 2048), block=(4, 128, 256, 4), change=((512, 1024), (1024, 512))),
    "test": dict(n=67, rows=24, cols=130, rope=(2, 2, 8, 6), attn=(2, 2, 8, 4), lin=(8, 16, 12),
                 mlp=(6, 16, 32), block=(2, 5, 16, 2), change=((6, 10), (10, 6))),
}


def build_cases(size: str = "full"):
    """[(name, fn, args, minimal bytes moved or None for compute-bound cases)]."""
    torch.manual_seed(0)
    s = SIZES[size]
    n, rows, cols, f = s["n"], s["rows"], s["cols"], 4  # f: bytes per float32
    m_rows, m_in, m_hidden = s["mlp"]
    mlp = nn.Sequential(nn.Linear(m_in, m_hidden), nn.GELU(), nn.Linear(m_hidden, m_in)).eval()
    b, t, d, heads = s["block"]
    block = Block(d, heads).eval()
    big = torch.randn(n, n)
    bt = s["rope"]
    lin_rows, lin_in, lin_out = s["lin"]
    return [
        ("pointwise_chain", pointwise_chain, (big,), 2 * n * n * f),
        ("broadcast", broadcast, (big, torch.randn(n), torch.randn(n, 1)), 2 * n * n * f),
        ("sum_lastdim", sum_lastdim, (big,), n * n * f),
        ("sum_dim0", sum_dim0, (big,), n * n * f),
        ("softmax", softmax, (torch.randn(rows, cols),), 2 * rows * cols * f),
        ("logsoftmax_nll", logsoftmax_nll, (torch.randn(rows, cols), torch.randint(0, cols, (rows,))),
         rows * cols * f),
        ("layernorm", layernorm, (torch.randn(rows, cols), torch.randn(cols), torch.randn(cols)), 2 * rows * cols * f),
        ("rmsnorm", rmsnorm, (torch.randn(rows, cols), torch.randn(cols)), 2 * rows * cols * f),
        ("residual_norm", residual_norm, (torch.randn(rows, cols), torch.randn(rows, cols), torch.randn(cols),
                                          torch.randn(cols)), 4 * rows * cols * f),
        ("swiglu", swiglu, (big, torch.randn(n, n)), 3 * n * n * f),
        ("rope", rope, (torch.randn(*bt), torch.randn(bt[2], bt[3]), torch.randn(bt[2], bt[3])),
         2 * math.prod(bt) * f),
        ("naive_attention", naive_attention, tuple(torch.randn(*s["attn"]) for _ in range(3)), None),
        ("linear_gelu", linear_gelu, (torch.randn(lin_rows, lin_in), torch.randn(lin_out, lin_in),
                                      torch.randn(lin_out)), None),
        ("mlp_module", mlp, (torch.randn(m_rows, m_in),), None),
        ("transformer_block", block, (torch.randn(b, t, d),), None),
        ("graph_break", graph_break, (torch.randn(rows, cols),), 2 * rows * cols * f),
        ("shape_change", shape_change, Calls([(torch.randn(*shape),) for shape in s["change"]]), None),
        ("tiny", tiny, (torch.randn(16),), None),
    ]
