"""Parameter-efficient fine-tuning: LoRA / DoRA / IA3, adapters, prefix & prompt tuning, rank masks, pruning masks, weight reparametrizations."""
import copy
import logging
import math
import random
import warnings
from typing import List, Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger(__name__)


class LoRALinear(nn.Module):
    def __init__(self, in_features: int = 8, out_features: int = 6, r: int = 4, alpha: float = 8.0, dropout: float = 0.0):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        self.base.weight.requires_grad_(False)
        self.lora_A = nn.Parameter(torch.randn(r, in_features) / math.sqrt(in_features))
        self.lora_B = nn.Parameter(torch.randn(out_features, r) * 0.01)
        self.scaling = alpha / r
        self.lora_dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.merged = False

    def merge(self):
        if not self.merged:
            self.base.weight.data += (self.lora_B @ self.lora_A) * self.scaling
            self.merged = True
        return self

    def forward(self, x):
        out = self.base(x)
        if self.merged:
            return out
        return out + (self.lora_dropout(x) @ self.lora_A.t() @ self.lora_B.t()) * self.scaling


class BottleneckAdapter(nn.Module):
    """Houlsby-style adapter: down-project, nonlinearity, up-project, residual."""

    def __init__(self, d_model: int = 8, bottleneck: int = 3, init_scale: float = 1e-3):
        super().__init__()
        self.ln = nn.LayerNorm(d_model)
        self.down = nn.Linear(d_model, bottleneck)
        self.up = nn.Linear(bottleneck, d_model)
        nn.init.normal_(self.up.weight, std=init_scale)
        nn.init.zeros_(self.up.bias)

    def forward(self, h):
        return h + self.up(F.gelu(self.down(self.ln(h))))


class AdapterBlock(nn.Module):
    def __init__(self, d_model: int = 8, n_heads: int = 2):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(d_model, 16), nn.GELU(), nn.Linear(16, d_model))
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.adapter_attn = BottleneckAdapter(d_model)
        self.adapter_ff = BottleneckAdapter(d_model)

    def forward(self, x, key_padding_mask: Optional[torch.Tensor] = None):
        a, _ = self.attn(x, x, x, key_padding_mask=key_padding_mask, need_weights=False)
        x = self.ln1(x + self.adapter_attn(a))
        return self.ln2(x + self.adapter_ff(self.ff(x)))


class PrefixAttention(nn.Module):
    """Prefix tuning: learned key/value prefixes prepended per layer (reparametrized through an MLP)."""

    def __init__(self, d_model: int = 8, n_heads: int = 2, prefix_len: int = 3):
        super().__init__()
        self.h, self.dh = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.prefix_tokens = nn.Parameter(torch.randn(prefix_len, d_model))
        self.prefix_mlp = nn.Sequential(nn.Linear(d_model, 16), nn.Tanh(), nn.Linear(16, 2 * d_model))

    def forward(self, x, attn_mask=None):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.h, self.dh).permute(2, 0, 3, 1, 4)
        pk, pv = self.prefix_mlp(self.prefix_tokens).view(-1, 2, self.h, self.dh).permute(1, 2, 0, 3)
        k = torch.cat([pk.expand(B, -1, -1, -1), k], dim=2)
        v = torch.cat([pv.expand(B, -1, -1, -1), v], dim=2)
        if attn_mask is not None:
            if not attn_mask.any(-1).all():  # expect: FL101 GB0170
                warnings.warn("PrefixAttention: fully masked sequence, letting it attend to the prefix only")  # expect: FL112 GB0007
            attn_mask = F.pad(attn_mask, (pk.shape[1], 0), value=True)[:, None, None, :]
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        return self.proj(out.transpose(1, 2).reshape(B, T, C))


class SoftPromptEncoder(nn.Module):
    def __init__(self, vocab: int = 20, d_model: int = 8, n_prompt: int = 4, max_positions: int = 12):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_positions, d_model)
        self.soft_prompt = nn.Parameter(torch.randn(n_prompt, d_model) * 0.02)
        self.n_prompt, self.max_positions = n_prompt, max_positions
        self.encoder = nn.Linear(d_model, d_model)

    def forward(self, input_ids, attention_mask):
        if input_ids.shape[1] + self.n_prompt > self.max_positions:  # expect: FL301
            keep = self.max_positions - self.n_prompt
            input_ids, attention_mask = input_ids[:, -keep:], attention_mask[:, -keep:]
        B = input_ids.shape[0]
        h = torch.cat([self.soft_prompt.expand(B, -1, -1), self.embed(input_ids)], dim=1)
        h = h + self.pos(torch.arange(h.shape[1]))
        mask = torch.cat([attention_mask.new_ones(B, self.n_prompt), attention_mask], dim=1)
        pooled = (self.encoder(h) * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        return pooled


class IA3FeedForward(nn.Module):
    def __init__(self, d_model: int = 8, d_ff: int = 16):
        super().__init__()
        self.wi, self.wo = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.ia3_ff = nn.Parameter(torch.ones(d_ff))

    def forward(self, x):
        return self.wo(F.relu(self.wi(x)) * self.ia3_ff)


class DoRALinear(nn.Module):
    """Weight-decomposed LoRA: magnitude vector times the column-normalized (W + BA)."""

    def __init__(self, in_features: int = 8, out_features: int = 6, r: int = 2):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features) * 0.2, requires_grad=False)
        self.magnitude = nn.Parameter(self.weight.norm(p=2, dim=1, keepdim=True).detach().clone())
        self.lora_A = nn.Parameter(torch.randn(r, in_features) * 0.1)
        self.lora_B = nn.Parameter(torch.zeros(out_features, r))

    def forward(self, x):
        w = self.weight + self.lora_B @ self.lora_A
        w = self.magnitude * w / w.norm(p=2, dim=1, keepdim=True).detach()
        return F.linear(x, w)


class WeightNormLinear(nn.Module):
    def __init__(self, in_features: int = 8, out_features: int = 5):
        super().__init__()
        v = torch.randn(out_features, in_features) * 0.3
        self.v = nn.Parameter(v)
        self.g = nn.Parameter(v.norm(dim=1))
        self.bias = nn.Parameter(torch.zeros(out_features))

    def forward(self, x):
        w = self.v * (self.g / self.v.norm(dim=1))[:, None]
        return F.linear(x, w, self.bias)


class SpectralNormLinear(nn.Module):
    """Spectral normalization with one step of power iteration per forward (buffer u updated in place)."""

    def __init__(self, in_features: int = 8, out_features: int = 6, n_power_iterations: int = 1, eps: float = 1e-12):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features) * 0.5)
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.register_buffer("u", F.normalize(torch.randn(out_features), dim=0, eps=eps))
        self.n_power_iterations, self.eps = n_power_iterations, eps

    def forward(self, x):
        u = self.u
        if self.training:
            with torch.no_grad():
                for _ in range(self.n_power_iterations):
                    v = F.normalize(self.weight.t() @ u, dim=0, eps=self.eps)
                    u = F.normalize(self.weight @ v, dim=0, eps=self.eps)
                self.u.copy_(u)
        v = F.normalize(self.weight.t() @ u, dim=0, eps=self.eps)
        sigma = torch.dot(u, self.weight @ v)
        return F.linear(x, self.weight / sigma, self.bias)


class SNDiscriminator(nn.Module):
    def __init__(self, in_dim: int = 8):
        super().__init__()
        self.fc1 = nn.utils.spectral_norm(nn.Linear(in_dim, 16))
        self.fc2 = nn.utils.parametrizations.weight_norm(nn.Linear(16, 1))

    def forward(self, x):
        return self.fc2(F.leaky_relu(self.fc1(x), 0.2))


class AdaLoRALinear(nn.Module):
    """SVD-shaped LoRA (P diag(E) Q) whose rank is pruned by an importance mask during training."""

    def __init__(self, in_features: int = 8, out_features: int = 6, r: int = 5, rank_mask=(1.0, 1.0, 0.0, 1.0, 0.0)):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        self.lora_P = nn.Parameter(torch.randn(out_features, r) * 0.1)
        self.lora_E = nn.Parameter(torch.randn(r))
        self.lora_Q = nn.Parameter(torch.randn(r, in_features) * 0.1)
        self.register_buffer("rank_mask", torch.tensor(rank_mask))

    def forward(self, x):
        active = self.rank_mask.nonzero().squeeze(-1)  # expect: FL105 GB0036
        r = int(active.numel())
        if r == 0:
            return self.base(x)
        delta = self.lora_P[:, active] @ (self.lora_E[active, None] * self.lora_Q[active])
        return self.base(x) + x @ delta.t() / r


@torch.compile
def update_rank_mask(lora_E, grad_E, budget: int = 3, beta: float = 0.85, ema=None):
    importance = (lora_E * grad_E).abs()
    if ema is not None:
        importance = beta * ema + (1 - beta) * importance
    threshold = torch.kthvalue(importance, importance.numel() - budget + 1).values
    mask = (importance >= threshold).float()
    kept = int(mask.sum())  # expect: FL102 GB0124
    if kept != budget:
        logger.warning("rank allocation kept %d of budget %d (ties)", kept, budget)  # expect: FL111 GB0291
    return mask, importance


@torch.compile
def magnitude_prune_(weight, sparsity: float = 0.5):
    k = int(weight.numel() * sparsity)
    threshold = weight.abs().flatten().kthvalue(k).values
    mask = weight.abs() > threshold
    weight.mul_(mask)
    logger.debug("pruned %.1f%% of %d weights", 100 * (1 - mask.float().mean()), weight.numel())  # expect: FL111 GB0291
    return mask


@torch.compile
def structured_channel_prune(conv_weight, bn_gamma, keep_ratio: float = 0.5):
    scores = bn_gamma.abs() * conv_weight.flatten(1).norm(dim=1)
    thresh = scores.sort(descending=True).values[int(scores.numel() * keep_ratio) - 1]
    keep = torch.nonzero(scores >= thresh).squeeze(1)  # expect: FL105 GB0036
    print(f"keeping {keep.numel()}/{scores.numel()} channels")  # expect: FL110 GB0059
    return conv_weight[keep], bn_gamma[keep], keep


class MaskedSparseLinear(nn.Module):
    """Linear layer with a fixed (lottery-ticket) sparsity mask and an L1 penalty on surviving weights."""

    def __init__(self, in_features: int = 8, out_features: int = 6, density: float = 0.4):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_features, in_features) * 0.3)
        self.register_buffer("mask", (torch.rand(out_features, in_features) < density))

    def forward(self, x):
        w = self.weight * self.mask
        l1 = self.weight[self.mask].abs().sum()  # expect: FL105 GB0036
        density = np.count_nonzero(self.mask.numpy()) / self.mask.numel()
        return F.linear(x, w), l1, density


class GradualPruner(nn.Module):
    """Zhu & Gupta cubic sparsity schedule, re-masking every few steps."""

    def __init__(self, layer: nn.Linear, final_sparsity: float = 0.8, total_steps: int = 10, prune_every: int = 2):
        super().__init__()
        self.layer = layer
        self.final_sparsity, self.total_steps, self.prune_every = final_sparsity, total_steps, prune_every
        self.register_buffer("mask", torch.ones_like(layer.weight, dtype=torch.bool))
        self.step_count = 0

    def forward(self, x):
        if self.step_count % self.prune_every == 0:
            t = min(self.step_count / self.total_steps, 1.0)
            sparsity = self.final_sparsity * (1 - (1 - t) ** 3)
            k = max(1, int(sparsity * self.mask.numel()))
            thresh = self.layer.weight.abs().flatten().kthvalue(k).values
            self.mask.copy_(self.layer.weight.abs() > thresh)
            logger.info("step %d: target sparsity %.3f", self.step_count, sparsity)  # expect: FL111 GB0291
        self.step_count += 1  # expect: FL302
        return F.linear(x, self.layer.weight * self.mask, self.layer.bias)


class MultiLoRA(nn.Module):
    """One base layer, several task adapters; a mixed batch is routed per example by task id."""

    def __init__(self, in_features: int = 8, out_features: int = 6, tasks: List[str] = ["sst2", "mnli", "qqp"], r: int = 2):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        self.A = nn.ParameterDict({t: nn.Parameter(torch.randn(r, in_features) * 0.1) for t in tasks})
        self.B = nn.ParameterDict({t: nn.Parameter(torch.randn(out_features, r) * 0.1) for t in tasks})
        self.tasks = tasks

    def forward(self, x, task_ids):
        out = self.base(x)
        for tid in task_ids.unique().tolist():  # expect: FL105 GB0036; FL103 GB0033
            rows = task_ids == tid
            name = self.tasks[tid]
            out[rows] = out[rows] + x[rows] @ self.A[name].t() @ self.B[name].t()  # expect: FL105 GB0036
        return out


@torch.compile
def merge_and_unload(layer: LoRALinear, x):
    merged = copy.deepcopy(layer).merge()  # expect: FL120 GB4198
    return merged(x), merged.base.weight


def _lora_layers(model):
    for module in model.modules():
        if isinstance(module, LoRALinear):
            yield module


class LoRAClassifier(nn.Module):
    def __init__(self, d: int = 8, n_classes: int = 3, ortho_weight: float = 1e-2):
        super().__init__()
        self.l1, self.l2 = LoRALinear(d, 8), LoRALinear(8, n_classes)
        self.ortho_weight = ortho_weight

    def forward(self, x, y):
        logits = self.l2(F.relu(self.l1(x)))
        reg = sum(((m.lora_A @ m.lora_A.t()) - torch.eye(m.lora_A.shape[0])).pow(2).sum() for m in _lora_layers(self))
        return F.cross_entropy(logits, y) + self.ortho_weight * reg


class PromptDropoutEncoder(nn.Module):
    """Prompt tuning with prompt-token dropout: randomly skip a prompt token while training."""

    def __init__(self, d_model: int = 8, n_prompt: int = 5, p: float = 0.3):
        super().__init__()
        self.prompt = nn.Parameter(torch.randn(n_prompt, d_model) * 0.02)
        self.mix = nn.Linear(d_model, d_model)
        self.p = p

    def forward(self, h):
        prompt = self.prompt
        if self.training:
            keep = [i for i in range(prompt.shape[0]) if random.random() > self.p]  # expect: FL121 GB0007
            prompt = prompt[keep or [0]]
        h = torch.cat([prompt.expand(h.shape[0], -1, -1), h], dim=1)
        return self.mix(h).mean(1)


@torch.compile
def lora_rank_diagnostics(lora_A, lora_B, tol: float = 1e-3):
    delta = lora_B @ lora_A
    s = torch.linalg.svdvals(delta)
    eff_rank = (s > tol * s[0]).sum()
    if eff_rank < lora_A.shape[0]:  # expect: FL101 GB0170
        warnings.warn(f"LoRA update is rank-deficient: {int(eff_rank)} < {lora_A.shape[0]}")  # expect: FL102 GB0124; FL112 GB0007
    return s / s.sum()


def apply_rank_budget(delta_w, rank_mask):
    r = int(rank_mask.sum())  # expect: FL202
    U, S, Vh = torch.linalg.svd(delta_w, full_matrices=False)
    return U[:, :r] @ torch.diag(S[:r]) @ Vh[:r]


def export_merged_delta():
    return torch.jit.trace(apply_rank_budget, (torch.randn(6, 8), torch.ones(4)))


CASES = {
    "LoRALinear": lambda: (LoRALinear(dropout=0.1), (torch.randn(3, 5, 8),)),
    "LoRALinear_merged": lambda: (LoRALinear().merge(), (torch.randn(4, 8),)),
    "AdapterBlock": lambda: (AdapterBlock().eval(), (torch.randn(2, 5, 8), torch.tensor([[False] * 5, [False] * 3 + [True] * 2]))),
    "PrefixAttention": lambda: (PrefixAttention(), (torch.randn(2, 5, 8), torch.tensor([[True] * 5, [True] * 3 + [False] * 2]))),
    "PrefixAttention_empty_row": lambda: (PrefixAttention(), (torch.randn(2, 5, 8), torch.tensor([[True] * 5, [False] * 5]))),
    "SoftPromptEncoder": lambda: (SoftPromptEncoder(), (torch.randint(0, 20, (2, 5)), torch.ones(2, 5)),
                                  (torch.randint(0, 20, (3, 11)), torch.ones(3, 11))),
    "IA3FeedForward": lambda: (IA3FeedForward(), (torch.randn(2, 4, 8),)),
    "DoRALinear": lambda: (DoRALinear(), (torch.randn(5, 8),)),
    "WeightNormLinear": lambda: (WeightNormLinear(), (torch.randn(4, 8),)),
    "SpectralNormLinear": lambda: (SpectralNormLinear(), (torch.randn(4, 8),)),
    "SNDiscriminator": lambda: (SNDiscriminator(), (torch.randn(4, 8),)),
    "AdaLoRALinear": lambda: (AdaLoRALinear(), (torch.randn(4, 8),)),
    "AdaLoRALinear_fully_pruned": lambda: (AdaLoRALinear(rank_mask=(0.0,) * 5), (torch.randn(4, 8),)),
    "update_rank_mask": lambda: (update_rank_mask, (torch.randn(6), torch.randn(6), 3, 0.85, torch.rand(6))),
    "update_rank_mask_ties": lambda: (update_rank_mask, (torch.ones(6), torch.ones(6), 3)),
    "magnitude_prune_": lambda: (magnitude_prune_, (torch.randn(6, 8), 0.75)),
    "structured_channel_prune": lambda: (structured_channel_prune, (torch.randn(6, 3, 3, 3), torch.randn(6))),
    "MaskedSparseLinear": lambda: (MaskedSparseLinear(), (torch.randn(4, 8),)),
    "GradualPruner": lambda: (GradualPruner(nn.Linear(8, 6)), (torch.randn(4, 8),)),
    "MultiLoRA": lambda: (MultiLoRA(), (torch.randn(6, 8), torch.tensor([0, 2, 0, 1, 2, 2]))),
    "merge_and_unload": lambda: (merge_and_unload, (LoRALinear(), torch.randn(3, 8))),
    "LoRAClassifier": lambda: (LoRAClassifier(), (torch.randn(5, 8), torch.tensor([0, 1, 2, 1, 0]))),
    "PromptDropoutEncoder": lambda: (PromptDropoutEncoder(), (torch.randn(2, 3, 8),)),
    "lora_rank_diagnostics": lambda: (lora_rank_diagnostics, (torch.randn(4, 8), torch.randn(6, 2) @ torch.randn(2, 4))),
}

TRACED = {
    "apply_rank_budget": lambda: (apply_rank_budget, (torch.randn(6, 8), torch.tensor([1.0, 1.0, 0.0, 1.0]))),
}
