"""Mixture-of-experts routing: top-k gates, capacity limits, token dropping, load statistics."""
import torch
import torch.nn.functional as F
from torch import nn


class Expert(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


class TopKGate(nn.Module):
    def __init__(self, dim, num_experts, k=2):
        super().__init__()
        self.k = k
        self.w = nn.Linear(dim, num_experts, bias=False)

    def forward(self, x):
        logits = self.w(x)
        weights, experts = logits.softmax(-1).topk(self.k, dim=-1)
        return weights / weights.sum(-1, keepdim=True), experts


class SparseMoE(nn.Module):
    """The textbook loop: gather the tokens routed to each expert (dynamic shapes)."""

    def __init__(self, dim, num_experts=4, k=2):
        super().__init__()
        self.gate = TopKGate(dim, num_experts, k)
        self.experts = nn.ModuleList(Expert(dim, 2 * dim) for _ in range(num_experts))

    def forward(self, x):
        flat = x.reshape(-1, x.shape[-1])
        weights, experts = self.gate(flat)
        out = torch.zeros_like(flat)
        for i, expert in enumerate(self.experts):
            token_idx, slot = torch.where(experts == i)  # expect: FL105 GB0036
            if token_idx.numel() == 0:
                continue
            out[token_idx] += weights[token_idx, slot, None] * expert(flat[token_idx])
        return out.view_as(x)


class DenseMoE(nn.Module):
    """Runs every expert on every token and mixes with a dense gate: no dynamic shapes."""

    def __init__(self, dim, num_experts=4, k=2):
        super().__init__()
        self.num_experts = num_experts
        self.gate = TopKGate(dim, num_experts, k)
        self.experts = nn.ModuleList(Expert(dim, 2 * dim) for _ in range(num_experts))

    def forward(self, x):
        weights, experts = self.gate(x)
        dense = torch.zeros(*x.shape[:-1], self.num_experts, dtype=x.dtype)
        dense.scatter_add_(-1, experts, weights)
        outputs = torch.stack([expert(x) for expert in self.experts], dim=-2)
        return (dense.unsqueeze(-1) * outputs).sum(-2)


class CapacityRouter(nn.Module):
    """Switch-style routing with a capacity factor; dropped tokens pass through unchanged."""

    def __init__(self, dim, num_experts, capacity_factor=1.25):
        super().__init__()
        self.num_experts = num_experts
        self.capacity_factor = capacity_factor
        self.w = nn.Linear(dim, num_experts)

    def forward(self, x):
        tokens = x.shape[0]
        capacity = int(self.capacity_factor * tokens / self.num_experts)
        probs = self.w(x).softmax(-1)
        gate, expert = probs.max(-1)
        one_hot = F.one_hot(expert, self.num_experts)
        position = (one_hot.cumsum(0) - 1) * one_hot
        keep = (position < capacity).any(-1) & (one_hot.sum(-1) > 0)
        return torch.where(keep[:, None], x * gate[:, None], x), keep


class DroppingRouter(CapacityRouter):
    """The same routing, but dropped tokens are removed with a boolean mask."""

    def forward(self, x):
        routed, keep = super().forward(x)
        return routed[keep]  # expect: FL105 GB0036


class LoadBalancedMoE(nn.Module):
    def __init__(self, dim, num_experts=4):
        super().__init__()
        self.num_experts = num_experts
        self.router = nn.Linear(dim, num_experts)
        self.experts = nn.ModuleList(Expert(dim, dim) for _ in range(num_experts))
        self.aux_losses = []

    def forward(self, x):
        probs = self.router(x).softmax(-1)
        choice = probs.argmax(-1)
        counts = torch.bincount(choice, minlength=self.num_experts)  # expect: FL105 GB0036
        load = counts.float() / choice.numel()
        self.aux_losses.append((load * probs.mean(0)).sum() * self.num_experts)  # expect: FL302
        mixed = sum(probs[:, i:i + 1] * e(x) for i, e in enumerate(self.experts))
        return mixed


class RouterStats(nn.Module):
    """Logs per-expert utilisation every step."""

    def __init__(self, dim, num_experts=4):
        super().__init__()
        self.router = nn.Linear(dim, num_experts)
        self.history = []

    def forward(self, x):
        probs = self.router(x).softmax(-1)
        usage = probs.mean(0)
        self.history.append(usage.tolist())  # expect: FL103 GB0109; FL302
        return probs


@torch.compile
def top2_dispatch(logits, x):
    top_w, top_i = torch.topk(logits, 2, dim=-1)
    mask = F.one_hot(top_i, logits.shape[-1]).sum(-2)
    weights = torch.zeros_like(logits).scatter(-1, top_i, top_w.softmax(-1))
    return weights.unsqueeze(-1) * x.unsqueeze(-2), mask


@torch.compile
def expert_histogram(expert_ids, num_experts: int):
    return torch.zeros(num_experts, dtype=torch.long).index_add_(0, expert_ids, torch.ones_like(expert_ids))


@torch.compile
def tokens_per_expert(expert_ids, num_experts: int):
    return [int((expert_ids == e).sum()) for e in range(num_experts)]  # expect: FL102 GB0124


@torch.compile
def sort_by_expert(x, expert_ids):
    order = expert_ids.argsort(stable=True)
    counts = torch.bincount(expert_ids)  # expect: FL105 GB0036
    return x[order], counts


@torch.compile
def unique_experts(expert_ids):
    used = torch.unique(expert_ids)  # expect: FL105 GB0036
    return used.numel()


@torch.compile
def z_loss(router_logits):
    return torch.logsumexp(router_logits, dim=-1).square().mean()


def _ids():
    return torch.tensor([0, 2, 2, 1, 3, 0, 1, 2])


CASES = {
    "SparseMoE": lambda: (SparseMoE(8), (torch.randn(2, 5, 8),)),
    "DenseMoE": lambda: (DenseMoE(8), (torch.randn(2, 5, 8),)),
    "CapacityRouter": lambda: (CapacityRouter(8, 4), (torch.randn(12, 8),)),
    "DroppingRouter": lambda: (DroppingRouter(8, 4), (torch.randn(12, 8),)),
    "LoadBalancedMoE": lambda: (LoadBalancedMoE(8), (torch.randn(6, 8),)),
    "RouterStats": lambda: (RouterStats(8), (torch.randn(6, 8),)),
    "top2_dispatch": lambda: (top2_dispatch, (torch.randn(6, 4), torch.randn(6, 8))),
    "expert_histogram": lambda: (expert_histogram, (_ids(), 4)),
    "tokens_per_expert": lambda: (tokens_per_expert, (_ids(), 4)),
    "sort_by_expert": lambda: (sort_by_expert, (torch.randn(8, 3), _ids())),
    "unique_experts": lambda: (unique_experts, (_ids(),)),
    "z_loss": lambda: (z_loss, (torch.randn(6, 4),)),
}
