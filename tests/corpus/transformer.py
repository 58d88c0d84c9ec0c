"""A small GPT: embeddings, blocks, generation helpers, and the usual research-code additions."""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn


@dataclass
class GPTConfig:
    vocab: int = 64
    dim: int = 32
    heads: int = 4
    layers: int = 2
    max_len: int = 32
    dropout: float = 0.0


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.heads = cfg.heads
        self.c_attn = nn.Linear(cfg.dim, 3 * cfg.dim)
        self.c_proj = nn.Linear(cfg.dim, cfg.dim)
        self.register_buffer("bias", torch.tril(torch.ones(cfg.max_len, cfg.max_len)).view(1, 1, cfg.max_len, cfg.max_len))

    def forward(self, x: Tensor) -> Tensor:
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class MLP(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.c_fc = nn.Linear(cfg.dim, 4 * cfg.dim)
        self.c_proj = nn.Linear(4 * cfg.dim, cfg.dim)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.dim)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.dim)
        self.mlp = MLP(cfg)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, cfg: GPTConfig = GPTConfig()):
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab, cfg.dim)
        self.wpe = nn.Embedding(cfg.max_len, cfg.dim)
        self.h = nn.ModuleList([Block(cfg) for _ in range(cfg.layers)])
        self.ln_f = nn.LayerNorm(cfg.dim)
        self.lm_head = nn.Linear(cfg.dim, cfg.vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx, targets=None):
        b, t = idx.size()
        assert t <= self.cfg.max_len, f"Cannot forward sequence of length {t}"
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        else:
            logits = self.lm_head(x[:, [-1], :])
            loss = None
        return logits, loss


class GPTWithAuxLoss(GPT):
    """Adds a z-loss and reports it through a Python float."""

    def forward(self, idx, targets=None):
        logits, loss = super().forward(idx, targets)
        z = torch.logsumexp(logits, dim=-1).pow(2).mean()
        self.last_z = z.item()  # expect: FL102 GB0124
        return logits, loss + 1e-4 * z


class CheckpointedGPT(GPT):
    """Activation checkpointing per block (traceable by Dynamo)."""

    def forward(self, idx, targets=None):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for block in self.h:
            x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
        return self.lm_head(self.ln_f(x)), None


class LayerDropGPT(GPT):
    def __init__(self, cfg=GPTConfig(), p=0.5):
        super().__init__(cfg)
        self.p = p

    def forward(self, idx, targets=None):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for block in self.h:
            if self.training and torch.rand(1).item() < self.p:  # expect: FL102 GB0124
                continue
            x = block(x)
        return self.lm_head(self.ln_f(x)), None


class PrefixLM(nn.Module):
    """Prefix and suffix lengths come from the data: split with Python ints."""

    def __init__(self, cfg=GPTConfig()):
        super().__init__()
        self.gpt = GPT(cfg)

    def forward(self, idx, prefix_len):
        n = int(prefix_len)  # expect: FL102 GB0124
        prefix, rest = idx[:, :n], idx[:, n:]
        logits, _ = self.gpt(torch.cat([prefix, rest], dim=1))
        return logits


class ParallelBlock(nn.Module):
    """GPT-J style: attention and MLP read the same normalized input."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.ln = nn.LayerNorm(cfg.dim)
        self.attn = CausalSelfAttention(cfg)
        self.mlp = SwiGLU(cfg.dim, 2 * cfg.dim)

    def forward(self, x):
        h = self.ln(x)
        return x + self.attn(h) + self.mlp(h)


class TiedEmbeddingClassifier(nn.Module):
    def __init__(self, vocab=64, dim=16, classes=3):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens, offsets):
        return self.head(self.embed(tokens, offsets))


def crop_context(idx: Tensor, max_len: int) -> Tensor:
    return idx if idx.size(1) <= max_len else idx[:, -max_len:]  # expect: FL301


@torch.no_grad()
def generate(model: GPT, idx: Tensor, max_new_tokens: int, temperature: float = 1.0, top_k: int | None = None):
    for _ in range(max_new_tokens):
        idx_cond = crop_context(idx, model.cfg.max_len)
        logits, _ = model(idx_cond)
        logits = logits[:, -1, :] / temperature
        if top_k is not None:
            v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
            logits[logits < v[:, [-1]]] = -float("Inf")
        probs = F.softmax(logits, dim=-1)
        idx_next = torch.multinomial(probs, num_samples=1)
        idx = torch.cat((idx, idx_next), dim=1)
    return idx


@torch.compile
def generate_step(model: GPT, idx: Tensor, top_k: int = 5):
    return generate(model, idx, 1, top_k=top_k)


@torch.compile
def crop_for_model(idx, max_len: int = 8):
    return crop_context(idx, max_len) * 1


def _cfg():
    return GPTConfig(layers=2)


CASES = {
    "CausalSelfAttention": lambda: (CausalSelfAttention(_cfg()), (torch.randn(2, 5, 32),)),
    "SwiGLU": lambda: (SwiGLU(16, 32), (torch.randn(2, 5, 16),)),
    "Block": lambda: (Block(_cfg()), (torch.randn(2, 5, 32),)),
    "GPT": lambda: (GPT(_cfg()), (torch.randint(0, 64, (2, 7)), torch.randint(0, 64, (2, 7)))),
    "GPT_inference": lambda: (GPT(_cfg()).eval(), (torch.randint(0, 64, (2, 7)),)),
    "GPTWithAuxLoss": lambda: (GPTWithAuxLoss(_cfg()), (torch.randint(0, 64, (2, 7)), torch.randint(0, 64, (2, 7)))),
    "CheckpointedGPT": lambda: (CheckpointedGPT(_cfg()), (torch.randint(0, 64, (2, 7)),)),
    "LayerDropGPT": lambda: (LayerDropGPT(_cfg(), p=0.0), (torch.randint(0, 64, (2, 7)),)),
    "PrefixLM": lambda: (PrefixLM(_cfg()), (torch.randint(0, 64, (2, 7)), torch.tensor(3))),
    "ParallelBlock": lambda: (ParallelBlock(_cfg()), (torch.randn(2, 5, 32),)),
    "TiedEmbeddingClassifier": lambda: (TiedEmbeddingClassifier(), (torch.randint(0, 64, (9,)), torch.tensor([0, 4]))),
    "generate_step": lambda: (generate_step, (GPT(_cfg()).eval(), torch.randint(0, 64, (2, 5)))),
    "crop_for_model": lambda: (crop_for_model, (torch.randint(0, 64, (2, 5)),), (torch.randint(0, 64, (2, 11)),)),
}
