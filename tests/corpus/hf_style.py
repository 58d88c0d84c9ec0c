"""Code in the style of Hugging Face model files: configs, masks, caches, optional outputs, logging."""
import functools
import logging
import math
import warnings
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger(__name__)


@dataclass
class TinyConfig:
    hidden: int = 16
    heads: int = 2
    eps: float = 1e-6
    use_cache: bool = False
    output_attentions: bool = False


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def expand_mask(mask, dtype, tgt_len=None):
    bsz, src_len = mask.size()
    tgt_len = tgt_len if tgt_len is not None else src_len
    expanded = mask[:, None, None, :].expand(bsz, 1, tgt_len, src_len).to(dtype)
    inverted = 1.0 - expanded
    return inverted.masked_fill(inverted.to(torch.bool), torch.finfo(dtype).min)


class Attention(nn.Module):
    def __init__(self, config: TinyConfig):
        super().__init__()
        self.config = config
        self.head_dim = config.hidden // config.heads
        self.qkv = nn.Linear(config.hidden, 3 * config.hidden, bias=False)
        self.out = nn.Linear(config.hidden, config.hidden, bias=False)

    def forward(self, x, attention_mask=None, output_attentions=False):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.config.heads, self.head_dim).unbind(2)
        q, k, v = (z.transpose(1, 2) for z in (q, k, v))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        if attention_mask is not None:
            if attention_mask.size() != (b, 1, t, t):
                raise ValueError(f"mask should be {(b, 1, t, t)}, got {attention_mask.size()}")
            scores = scores + attention_mask
        probs = scores.softmax(-1)
        out = self.out((probs @ v).transpose(1, 2).reshape(b, t, -1))
        return (out, probs) if output_attentions else (out, None)


class DecoderLayer(nn.Module):
    def __init__(self, config: TinyConfig):
        super().__init__()
        self.norm1 = RMSNorm(config.hidden, config.eps)
        self.attn = Attention(config)
        self.norm2 = RMSNorm(config.hidden, config.eps)
        self.mlp = nn.Sequential(nn.Linear(config.hidden, 4 * config.hidden), nn.GELU(),
                                 nn.Linear(4 * config.hidden, config.hidden))

    def forward(self, x, attention_mask=None):
        h, _ = self.attn(self.norm1(x), attention_mask)
        x = x + h
        return x + self.mlp(self.norm2(x))


class TinyModel(nn.Module):
    def __init__(self, config: TinyConfig = TinyConfig()):
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(32, config.hidden)
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(2))
        self.norm = RMSNorm(config.hidden)
        self.gradient_checkpointing = False

    def forward(self, input_ids, attention_mask=None, return_dict=True):
        if input_ids.dim() != 2:
            raise ValueError("input_ids must be 2-D")
        x = self.embed(input_ids)
        if attention_mask is not None:
            attention_mask = expand_mask(attention_mask, x.dtype)
        if self.gradient_checkpointing and self.training:
            logger.warning("checkpointing is on")  # expect: FL111 GB0291
        hidden_states = ()
        for layer in self.layers:
            hidden_states += (x,)
            x = layer(x, attention_mask)
        x = self.norm(x)
        if not return_dict:
            return (x, hidden_states)
        return {"last_hidden_state": x, "hidden_states": hidden_states}


class ChattyModel(TinyModel):
    """The same model with the leftovers of a debugging session."""

    def forward(self, input_ids, attention_mask=None, return_dict=True):
        if attention_mask is not None and (attention_mask == 0).all():  # expect: FL101 GB0170
            warnings.warn("all tokens are masked")  # expect: FL112 GB0007
        out = super().forward(input_ids, attention_mask, return_dict)
        logger.info("forward done for batch of %d", input_ids.shape[0])  # expect: FL111 GB0291
        return out


class PaddingAwareModel(TinyModel):
    def forward(self, input_ids, attention_mask=None, return_dict=True):
        pad = 0
        if (input_ids[:, -1] == pad).any() and attention_mask is None:  # expect: FL101 GB0170
            logger.warning_once = getattr(logger, "warning_once", logger.warning)  # expect: FL111 GB0150; FL111 GB0467
            attention_mask = (input_ids != pad).long()
        return super().forward(input_ids, attention_mask, return_dict)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


@functools.lru_cache(maxsize=8)
def rope_frequencies(dim: int, base: float = 10000.0):
    return 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))


@torch.compile
def apply_rope(q, k, positions):
    freqs = torch.outer(positions.float(), rope_frequencies(q.shape[-1]))
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


@torch.compile
def apply_rope_inline(q, positions):
    dim = q.shape[-1]
    inv = 1.0 / (10000.0 ** (torch.arange(0, dim, 2, device=q.device).float() / dim))
    freqs = positions.float()[:, None] * inv[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return q * emb.cos() + rotate_half(q) * emb.sin()


@torch.compile
def top_k_top_p_filter(logits, top_k: int = 5, top_p: float = 0.9):
    top_k = min(top_k, logits.size(-1))
    kth = torch.topk(logits, top_k)[0][..., -1, None]
    logits = logits.masked_fill(logits < kth, float("-inf"))
    sorted_logits, sorted_idx = torch.sort(logits, descending=True)
    cum = sorted_logits.softmax(-1).cumsum(-1)
    remove = cum > top_p
    remove[..., 1:] = remove[..., :-1].clone()
    remove[..., 0] = False
    to_remove = remove.scatter(1, sorted_idx, remove)
    return logits.masked_fill(to_remove, float("-inf"))


@torch.compile
def greedy_decode(logits_fn, prompt, steps: int = 3):
    tokens = prompt
    for _ in range(steps):
        nxt = logits_fn(tokens)[:, -1].argmax(-1, keepdim=True)
        tokens = torch.cat([tokens, nxt], dim=1)
        if (nxt == 0).all():  # expect: FL101 GB0170
            break
    return tokens


def embed_logits(tokens):
    return F.one_hot(tokens % 7, 7).float()


@torch.compile
def pool_hidden(hidden, attention_mask):
    lengths = attention_mask.sum(-1)
    last = hidden[torch.arange(hidden.size(0)), lengths - 1]
    mean = (hidden * attention_mask[..., None]).sum(1) / lengths[:, None].clamp(min=1)
    return last, mean


@torch.compile
def label_smoothing_loss(logits, target, smoothing: float = 0.1):
    n = logits.size(-1)
    logp = logits.log_softmax(-1)
    nll = -logp.gather(-1, target.clamp(min=0)[:, None]).squeeze(-1)
    smooth = -logp.mean(-1)
    loss = (1 - smoothing) * nll + smoothing * smooth
    valid = target != -100
    return loss[valid].mean() if valid.any() else loss.sum() * 0  # expect: FL105 GB0036; FL101 GB0170


@torch.compile
def count_tokens(attention_mask):
    total = int(attention_mask.sum())  # expect: FL102 GB0124
    return attention_mask.float() / max(total, 1)


@torch.compile
def batch_stats(hidden):
    stats = {}
    for name, fn in (("mean", torch.mean), ("std", torch.std), ("amax", torch.amax)):
        stats[name] = fn(hidden)
    stats["norm"] = torch.linalg.vector_norm(hidden)
    return stats


@torch.compile
def clip_and_scale(x, max_norm: float = 1.0):
    norm = x.norm()
    scale = max_norm / (norm + 1e-6)
    return x * scale.clamp(max=1.0)


@torch.compile
def safe_normalize(x):
    norm = x.norm(dim=-1, keepdim=True)
    if torch.isnan(norm).any():  # expect: FL101 GB0170
        raise RuntimeError("NaN norm")
    return x / norm


CONFIG = TinyConfig()


def checkpointing_model():
    model = TinyModel().train()
    model.gradient_checkpointing = True
    return model

CASES = {
    "TinyModel": lambda: (TinyModel().eval(), (torch.randint(0, 32, (2, 5)), torch.ones(2, 5))),
    "ChattyModel": lambda: (ChattyModel().eval(), (torch.randint(0, 32, (2, 5)), torch.ones(2, 5))),
    "ChattyModel_masked": lambda: (ChattyModel().eval(), (torch.randint(0, 32, (2, 5)), torch.zeros(2, 5))),
    "TinyModel_checkpointing": lambda: (checkpointing_model(), (torch.randint(0, 32, (2, 5)),)),
    "PaddingAwareModel": lambda: (PaddingAwareModel().eval(), (torch.tensor([[3, 4, 0], [5, 6, 7]]),)),
    "RMSNorm": lambda: (RMSNorm(16), (torch.randn(2, 3, 16),)),
    "Attention": lambda: (Attention(CONFIG), (torch.randn(2, 5, 16),)),
    "DecoderLayer": lambda: (DecoderLayer(CONFIG), (torch.randn(2, 5, 16),)),
    "apply_rope": lambda: (apply_rope, (torch.randn(2, 6, 8), torch.randn(2, 6, 8), torch.arange(6))),
    "apply_rope_inline": lambda: (apply_rope_inline, (torch.randn(2, 6, 8), torch.arange(6))),
    "top_k_top_p_filter": lambda: (top_k_top_p_filter, (torch.randn(3, 11),)),
    "greedy_decode": lambda: (greedy_decode, (embed_logits, torch.tensor([[1, 2], [3, 4]]))),
    "pool_hidden": lambda: (pool_hidden, (torch.randn(2, 4, 3), torch.tensor([[1, 1, 0, 0], [1, 1, 1, 0]]))),
    "label_smoothing_loss": lambda: (label_smoothing_loss, (torch.randn(4, 6), torch.tensor([1, -100, 3, 5]))),
    "count_tokens": lambda: (count_tokens, (torch.ones(2, 3),)),
    "batch_stats": lambda: (batch_stats, (torch.randn(3, 4),)),
    "clip_and_scale": lambda: (clip_and_scale, (torch.randn(3, 4),)),
    "safe_normalize": lambda: (safe_normalize, (torch.randn(3, 4),)),
}
