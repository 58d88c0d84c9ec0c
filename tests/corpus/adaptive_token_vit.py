"""Adaptive-computation vision transformers in the style of ToMe, EViT, DynamicViT, A-ViT and the
early-exit ViT papers: patch embedding with position-embedding resizing, token merging by bipartite
soft matching, attention-score token pruning, a learned keep predictor, confidence-based early exit,
per-token halting (ACT), LayerDrop and a FLOPs budget controller whose statistics live on the module."""
import logging
import math
import time
import warnings
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("adaptive_vit")
logger.addHandler(logging.NullHandler())

HALT_EPS = 0.01
MIN_TOKENS = 4
_PROFILE_LOG: List[float] = []
_EXIT_EVENTS: List[Tuple[int, int]] = []


@dataclass
class ViTConfig:
    img_size: int = 16
    patch_size: int = 4
    in_chans: int = 3
    dim: int = 16
    depth: int = 4
    heads: int = 2
    mlp_ratio: float = 2.0
    num_classes: int = 10
    pool: str = "cls"


@dataclass
class MergeConfig:
    r: int = 3
    prop_attn: bool = True
    class_token: bool = True


@dataclass
class PruneConfig:
    keep_rate: float = 0.7
    locations: Tuple[int, ...] = (1, 2)
    fuse_inattentive: bool = True


@dataclass
class ExitConfig:
    threshold: float = 0.9
    min_layers: int = 1
    temperature: float = 1.0


# --------------------------------------------------------------------------- building blocks

class PatchEmbed(nn.Module):
    """Conv patchifier + class token + learned positions, resized bilinearly for other resolutions."""

    def __init__(self, cfg: ViTConfig):
        super().__init__()
        self.grid = cfg.img_size // cfg.patch_size
        self.proj = nn.Conv2d(cfg.in_chans, cfg.dim, cfg.patch_size, cfg.patch_size)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, cfg.dim))
        self.pos_embed = nn.Parameter(nn.init.trunc_normal_(torch.empty(1, self.grid ** 2 + 1, cfg.dim), std=0.02))

    def _resized_pos(self, gh: int, gw: int) -> torch.Tensor:
        cls_pos, grid_pos = self.pos_embed[:, :1], self.pos_embed[:, 1:]
        grid_pos = grid_pos.reshape(1, self.grid, self.grid, -1).permute(0, 3, 1, 2)
        grid_pos = F.interpolate(grid_pos, size=(gh, gw), mode="bilinear", align_corners=False)
        return torch.cat([cls_pos, grid_pos.flatten(2).transpose(1, 2)], dim=1)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.proj(images)
        b, _, gh, gw = x.shape
        x = torch.cat([self.cls_token.expand(b, -1, -1), x.flatten(2).transpose(1, 2)], dim=1)
        if gh == self.grid and gw == self.grid:  # expect: FL301
            pos = self.pos_embed
        else:
            pos = self._resized_pos(gh, gw)
        return x + pos


class Attention(nn.Module):
    """MHSA that also returns the mean key (ToMe's matching metric) and the attention map."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads, self.scale = heads, (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, size: Optional[torch.Tensor] = None):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        if size is not None:
            # proportional attention: a merged token speaks for size[i] patches
            attn = attn + size.log()[:, None, None, :, 0]
        attn = attn.softmax(dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(b, n, c)
        return self.proj(out), k.mean(1), attn


class Mlp(nn.Module):
    def __init__(self, dim: int, ratio: float = 2.0):
        super().__init__()
        hidden = int(dim * ratio)
        self.fc1, self.fc2 = nn.Linear(dim, hidden), nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class DropPath(nn.Module):
    def __init__(self, p: float = 0.0):
        super().__init__()
        self.p = p

    def forward(self, x):
        if self.p == 0.0 or not self.training:
            return x
        mask = x.new_empty(x.shape[0], *([1] * (x.ndim - 1))).bernoulli_(1.0 - self.p)
        return x * mask / (1.0 - self.p)


class Block(nn.Module):
    def __init__(self, dim: int, heads: int, mlp_ratio: float = 2.0, drop_path: float = 0.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = Mlp(dim, mlp_ratio)
        self.drop_path = DropPath(drop_path)

    def forward(self, x, size: Optional[torch.Tensor] = None):
        y, metric, attn = self.attn(self.norm1(x), size)
        x = x + self.drop_path(y)
        x = x + self.drop_path(self.mlp(self.norm2(x)))
        return x, metric, attn


class ClassifierHead(nn.Module):
    POOLERS: Dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
        "cls": lambda x: x[:, 0],
        "mean": lambda x: x[:, 1:].mean(dim=1),
        "max": lambda x: x[:, 1:].amax(dim=1),
    }

    def __init__(self, dim: int, num_classes: int, pool: str = "cls"):
        super().__init__()
        self.pool = pool
        self.norm = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, num_classes)

    def forward(self, x):
        try:
            pool_fn = self.POOLERS[self.pool]
        except KeyError:
            raise ValueError(f"unknown pooling {self.pool!r}") from None
        return self.fc(pool_fn(self.norm(x)))


# --------------------------------------------------------------------------- token merging (ToMe)

def bipartite_soft_matching(metric: torch.Tensor, r: int, class_token: bool = True):
    """Split tokens into alternating sets A/B, link each A token to its most similar B token and
    merge the r strongest edges. Returns a `merge(x, mode)` closure."""
    t = metric.shape[1]
    r = min(r, (t - int(class_token)) // 2)
    with torch.no_grad():
        metric = metric / metric.norm(dim=-1, keepdim=True)
        a, b = metric[..., ::2, :], metric[..., 1::2, :]
        scores = a @ b.transpose(-1, -2)
        if class_token:
            scores[..., 0, :] = -math.inf
        node_max, node_idx = scores.max(dim=-1)
        edge_idx = node_max.argsort(dim=-1, descending=True)[..., None]
        unm_idx = edge_idx[..., r:, :]
        src_idx = edge_idx[..., :r, :]
        dst_idx = node_idx[..., None].gather(dim=-2, index=src_idx)
        if class_token:
            unm_idx = unm_idx.sort(dim=1)[0]

    def merge(x: torch.Tensor, mode: str = "mean") -> torch.Tensor:
        src, dst = x[..., ::2, :], x[..., 1::2, :]
        n, t1, c = src.shape
        unm = src.gather(dim=-2, index=unm_idx.expand(n, t1 - r, c))
        src = src.gather(dim=-2, index=src_idx.expand(n, r, c))
        dst = dst.scatter_reduce(-2, dst_idx.expand(n, r, c), src, reduce=mode)
        return torch.cat([unm, dst], dim=1)

    return merge


def merge_wavg(merge, x: torch.Tensor, size: Optional[torch.Tensor]):
    if size is None:
        size = torch.ones_like(x[..., 0, None])
    x = merge(x * size, mode="sum")
    size = merge(size, mode="sum")
    return x / size, size


class ToMeBlock(Block):
    def __init__(self, dim: int, heads: int, merge_cfg: MergeConfig, mlp_ratio: float = 2.0):
        super().__init__(dim, heads, mlp_ratio)
        self.merge_cfg = merge_cfg

    def forward(self, x, size: Optional[torch.Tensor] = None):
        attn_size = size if self.merge_cfg.prop_attn else None
        y, metric, _ = self.attn(self.norm1(x), attn_size)
        x = x + y
        merge = bipartite_soft_matching(metric, self.merge_cfg.r, self.merge_cfg.class_token)
        x, size = merge_wavg(merge, x, size)
        x = x + self.mlp(self.norm2(x))
        return x, size


@torch.compile
def token_merge_report(size: torch.Tensor) -> Dict[str, object]:
    """Histogram of how many patches each surviving token represents (for the paper's figure)."""
    sizes = size.squeeze(-1).round().long()
    hist = Counter(sizes.flatten().tolist())  # expect: FL000 GB0033
    return {"histogram": dict(sorted(hist.items())), "largest": max(hist), "tokens": sizes.shape[1],
            "mean": sizes.float().mean()}


# --------------------------------------------------------------------------- token pruning

class TopKTokenPruner(nn.Module):
    """EViT: keep the patches the class token attends to most; fuse the rest into one token."""

    def __init__(self, keep_rate: float = 0.7, fuse: bool = True):
        super().__init__()
        self.keep_rate, self.fuse = keep_rate, fuse

    def forward(self, x: torch.Tensor, attn: torch.Tensor):
        b, n, c = x.shape
        if n - 1 <= MIN_TOKENS:  # expect: FL301
            return x, None
        k = math.ceil(self.keep_rate * (n - 1))
        cls_attn = attn[:, :, 0, 1:].mean(dim=1)
        _, idx = cls_attn.topk(k, dim=1, largest=True, sorted=True)
        patches = x[:, 1:]
        kept = patches.gather(1, idx.unsqueeze(-1).expand(-1, -1, c))
        parts = [x[:, :1], kept]
        if self.fuse:
            dropped = torch.ones_like(cls_attn, dtype=torch.bool).scatter(1, idx, False)
            w = cls_attn.masked_fill(~dropped, 0.0).unsqueeze(-1)
            parts.append((patches * w).sum(1, keepdim=True) / w.sum(1, keepdim=True).clamp_min(1e-6))
        return torch.cat(parts, dim=1), idx


class ScorePredictor(nn.Module):
    """DynamicViT predictor: local features + policy-weighted global context -> log p(keep/drop)."""

    def __init__(self, dim: int):
        super().__init__()
        self.in_conv = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim), nn.GELU())
        self.out_conv = nn.Sequential(nn.Linear(dim, dim // 2), nn.GELU(), nn.Linear(dim // 2, 2),
                                      nn.LogSoftmax(dim=-1))

    def forward(self, x, policy):
        x = self.in_conv(x)
        b, n, c = x.shape
        local_x = x[:, :, : c // 2]
        global_x = (x[:, :, c // 2:] * policy).sum(dim=1, keepdim=True) / policy.sum(dim=1, keepdim=True)
        return self.out_conv(torch.cat([local_x, global_x.expand(b, n, c // 2)], dim=-1))


class DynamicTokenSparsifier(nn.Module):
    """DynamicViT: Gumbel keep mask in training; at batch-1 inference really drop unlikely patches."""

    def __init__(self, dim: int, keep_threshold: float = 0.5, tau: float = 1.0):
        super().__init__()
        self.predictor = ScorePredictor(dim)
        self.keep_threshold, self.tau = keep_threshold, tau

    def forward(self, x: torch.Tensor, policy: torch.Tensor):
        patches = x[:, 1:]
        logits = self.predictor(patches, policy)
        if self.training:
            hard = F.gumbel_softmax(logits, tau=self.tau, hard=True)
            return x, hard[..., :1] * policy
        keep_prob = logits[0, :, 0].exp()
        keep = keep_prob > self.keep_threshold
        if not keep.any():  # expect: FL000 GB0170
            keep[keep_prob.argmax()] = True
        kept = patches[:, keep]  # expect: FL000 GB0036
        new_policy = kept.new_ones(kept.shape[0], kept.shape[1], 1)
        return torch.cat([x[:, :1], kept], dim=1), new_policy


@torch.compile(dynamic=True)
def cls_attention_entropy(attn: torch.Tensor) -> torch.Tensor:
    p = attn[:, :, 0, 1:]
    p = p / p.sum(-1, keepdim=True).clamp_min(1e-6)
    ent = -(p * (p + 1e-9).log()).sum(-1)
    return ent.mean(1) / math.log(p.shape[-1])


# --------------------------------------------------------------------------- early exit / halting

@torch.compiler.disable
def _record_exit(stats: Dict[int, int], layer: int, confidence: float) -> None:
    stats[layer] = stats.get(layer, 0) + 1
    logger.debug("early exit at layer %d (confidence %.3f)", layer, confidence)


class EarlyExitViT(nn.Module):
    def __init__(self, cfg: ViTConfig, exit_cfg: ExitConfig):
        super().__init__()
        self.embed = PatchEmbed(cfg)
        self.blocks = nn.ModuleList(Block(cfg.dim, cfg.heads, cfg.mlp_ratio) for _ in range(cfg.depth))
        self.exits = nn.ModuleList(ClassifierHead(cfg.dim, cfg.num_classes) for _ in range(cfg.depth))
        self.exit_cfg, self.exit_stats = exit_cfg, {}
        self.callbacks: List[Callable[[int, torch.Tensor], None]] = []

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.embed(images)
        logits, conf = None, 0.0
        exit_layer = len(self.blocks) - 1
        for i, blk in enumerate(self.blocks):
            x, _, _ = blk(x)
            if i + 1 < self.exit_cfg.min_layers:
                continue
            logits = self.exits[i](x)
            conf = (logits / self.exit_cfg.temperature).softmax(-1).amax(-1).min().item()  # expect: FL000 GB0124
            if conf >= self.exit_cfg.threshold:
                exit_layer = i
                break
        _record_exit(self.exit_stats, exit_layer, conf)
        for cb in self.callbacks:
            cb(exit_layer, logits)
        return logits


class HaltingViT(nn.Module):
    """A-ViT style per-token adaptive computation time with a ponder penalty."""

    def __init__(self, cfg: ViTConfig, gate_scale: float = 10.0, gate_center: float = -3.0,
                 ponder_weight: float = 5e-4):
        super().__init__()
        self.embed = PatchEmbed(cfg)
        self.blocks = nn.ModuleList(Block(cfg.dim, cfg.heads, cfg.mlp_ratio) for _ in range(cfg.depth))
        self.head = ClassifierHead(cfg.dim, cfg.num_classes, "mean")
        self.gate_scale, self.gate_center, self.ponder_weight = gate_scale, gate_center, ponder_weight

    def forward(self, images: torch.Tensor):
        x = self.embed(images)
        b, n, _ = x.shape
        cum, rho = x.new_zeros(b, n), x.new_zeros(b, n)
        active = x.new_ones(b, n)
        out = torch.zeros_like(x)
        depth = 0
        while depth < len(self.blocks) and (cum < 1 - HALT_EPS).any():  # expect: FL000 GB0170
            x, _, _ = self.blocks[depth](x * active.unsqueeze(-1))
            h = torch.sigmoid(self.gate_scale * x[..., 0] + self.gate_center)
            if depth == len(self.blocks) - 1:
                h = torch.ones_like(h)
            halting = ((cum + h) >= 1 - HALT_EPS).float() * active
            still = ((cum + h) < 1 - HALT_EPS).float() * active
            cum = cum + h * still
            remainder = 1.0 - cum
            rho = rho + still + halting * remainder
            out = out + x * (h * still + remainder * halting).unsqueeze(-1)
            active = still
            depth += 1
        return self.head(out), self.ponder_weight * rho.mean(), depth


# --------------------------------------------------------------------------- layer drop / budgets

class LayerDropEncoder(nn.Module):
    """Structured LayerDrop (Fan et al.): random skips in training, a fixed layer subset at inference."""

    def __init__(self, cfg: ViTConfig, layerdrop: float = 0.2, keep_layers: Optional[List[int]] = None):
        super().__init__()
        self.blocks = nn.ModuleList(Block(cfg.dim, cfg.heads, cfg.mlp_ratio, drop_path=0.1)
                                    for _ in range(cfg.depth))
        self.layerdrop = layerdrop
        self.keep_layers = keep_layers

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, blk in enumerate(self.blocks):
            if self.training:
                dropout_probability = torch.empty(1).uniform_()
                if dropout_probability < self.layerdrop:  # expect: FL000 GB0170
                    continue
            elif self.keep_layers is not None and i not in self.keep_layers:
                continue
            x, _, _ = blk(x)
        return x


class TokenBudgetController(nn.Module):
    """Online controller that nudges the pruning keep rate so the EMA token ratio tracks a target."""

    def __init__(self, target_ratio: float = 0.6, momentum: float = 0.9, lr: float = 0.5, log_every: int = 50):
        super().__init__()
        self.target_ratio, self.momentum, self.lr, self.log_every = target_ratio, momentum, lr, log_every
        self.register_buffer("ema_ratio", torch.tensor(1.0))
        self.register_buffer("keep_rate", torch.tensor(0.8))
        self.steps = 0

    def forward(self, token_counts: torch.Tensor, full_tokens: int) -> torch.Tensor:
        self.steps += 1  # expect: FL302
        ratio = token_counts.float().mean() / full_tokens
        self.ema_ratio.mul_(self.momentum).add_(ratio * (1.0 - self.momentum))
        self.keep_rate.sub_(self.lr * (self.ema_ratio - self.target_ratio)).clamp_(0.3, 0.95)
        if self.steps % self.log_every == 0:
            logger.info("budget step %d: ema ratio %.3f, keep rate %.3f",  # expect: FL000 GB0291
                        self.steps, float(self.ema_ratio), float(self.keep_rate))  # expect: FL000 GB0124
        return self.keep_rate.clone()


def _estimate_gflops(token_counts: torch.Tensor, dim: int, mlp_ratio: float = 2.0):
    n = token_counts.detach().cpu().numpy().astype(np.float64)
    attn = 4 * n * dim * dim + 2 * n * n * dim
    mlp = 2 * n * dim * dim * mlp_ratio
    total = float(np.sum(attn + mlp)) / 1e9  # expect: FL000 GB0033
    return torch.tensor(total), total


estimate_gflops = torch.compile(_estimate_gflops)


@torch.compile
def check_budget(token_counts: torch.Tensor, budget: int) -> torch.Tensor:
    total = token_counts.sum()
    excess = (total - budget).clamp_min(0)
    if excess > 0:  # expect: FL000 GB0170
        warnings.warn(f"token budget exceeded: {total} tokens for a budget of {budget}")  # expect: FL000 GB0007
    return excess


@torch.compile
def timed_block(block: Block, x: torch.Tensor, label: str = "block") -> torch.Tensor:
    t0 = time.perf_counter()  # expect: FL000 GB0007
    y, _, _ = block(x)
    mean_act = y.mean().item()  # expect: FL000 GB0124
    elapsed_ms = (time.perf_counter() - t0) * 1e3  # expect: FL000 GB0007; FL302
    _PROFILE_LOG.append(elapsed_ms)
    print(f"[{label}] {round(elapsed_ms, 2)} ms, mean activation {round(mean_act, 3)}")  # expect: FL000 GB0059
    return y


# --------------------------------------------------------------------------- full model

class AdaptiveViT(nn.Module):
    """EViT top-k pruning at fixed depths, then ToMe merging; per-stage token counts kept for logs."""

    def __init__(self, cfg: ViTConfig, prune: PruneConfig, merge: Optional[MergeConfig] = None):
        super().__init__()
        self.embed = PatchEmbed(cfg)
        last_prune = max(prune.locations) if prune.locations else -1
        self.blocks = nn.ModuleList(
            ToMeBlock(cfg.dim, cfg.heads, merge, cfg.mlp_ratio) if merge is not None and i > last_prune
            else Block(cfg.dim, cfg.heads, cfg.mlp_ratio) for i in range(cfg.depth))
        self.pruners = nn.ModuleDict({str(i): TopKTokenPruner(prune.keep_rate, prune.fuse_inattentive)
                                      for i in prune.locations})
        self.head = ClassifierHead(cfg.dim, cfg.num_classes, cfg.pool)
        self.token_counts: List[int] = []

    def _stages(self, x: torch.Tensor):
        size = None
        for i, blk in enumerate(self.blocks):
            if isinstance(blk, ToMeBlock):
                x, size = blk(x, size)
            else:
                x, _, attn = blk(x)
                if str(i) in self.pruners:
                    x, _ = self.pruners[str(i)](x, attn)
            yield i, x

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.embed(images)
        counts = [x.shape[1]]
        for _, x in self._stages(x):
            counts.append(x.shape[1])
        self.token_counts = counts
        logger.debug("token schedule: %s", " -> ".join(map(str, counts)))  # expect: FL000 GB0291
        return self.head(x)


# --------------------------------------------------------------------------- cases

def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _attn(b, heads, n, seed=0):
    return _randn(b, heads, n, n, seed=seed).softmax(-1)


def _seeded(factory, seed=0):
    torch.manual_seed(seed)
    return factory()


def _early_exit(threshold):
    model = _seeded(lambda: EarlyExitViT(ViTConfig(), ExitConfig(threshold=threshold, min_layers=2)))
    model.callbacks.append(lambda layer, logits: _EXIT_EVENTS.append((layer, logits.shape[0])))
    return model.eval()


_IMG = (2, 3, 16, 16)
_COUNTS = [17, 12, 9, 9]
_TOME_SIZES = torch.tensor([[1.0, 2.0, 2.0, 3.0, 1.0, 4.0], [1.0, 1.0, 3.0, 5.0, 2.0, 1.0]]).unsqueeze(-1)

CASES = {
    "PatchEmbed": lambda: (_seeded(lambda: PatchEmbed(ViTConfig())), (_randn(2, 3, 12, 20),),
                           (_randn(5, 3, 16, 16, seed=1),)),
    "Attention": lambda: (_seeded(lambda: Attention(16, 2)), (_randn(3, 9, 16),)),
    "Mlp": lambda: (_seeded(lambda: Mlp(16)), (_randn(3, 7, 16),)),
    "DropPath": lambda: (DropPath(0.25).train(), (_randn(4, 5, 6),)),
    "Block": lambda: (_seeded(lambda: Block(16, 2)).eval(), (_randn(3, 11, 16),)),
    "ClassifierHead": lambda: (_seeded(lambda: ClassifierHead(16, 10, "max")), (_randn(3, 9, 16),)),
    "ToMeBlock": lambda: (_seeded(lambda: ToMeBlock(16, 2, MergeConfig())).eval(), (_randn(3, 17, 16),),
                          (_randn(5, 23, 16, seed=1),)),
    "token_merge_report": lambda: (token_merge_report, (_TOME_SIZES.clone(),)),
    "TopKTokenPruner": lambda: (TopKTokenPruner(0.7), (_randn(3, 17, 16), _attn(3, 2, 17)),
                                (_randn(4, 5, 16, seed=1), _attn(4, 2, 5, seed=1))),
    "ScorePredictor": lambda: (_seeded(lambda: ScorePredictor(16)), (_randn(3, 9, 16), torch.ones(3, 9, 1))),
    "DynamicTokenSparsifier_eval": lambda: (_seeded(lambda: DynamicTokenSparsifier(16)).eval(),
                                            (_randn(1, 17, 16), torch.ones(1, 16, 1))),
    "DynamicTokenSparsifier_train": lambda: (_seeded(lambda: DynamicTokenSparsifier(16)).train(),
                                             (_randn(3, 17, 16), torch.ones(3, 16, 1))),
    "cls_attention_entropy": lambda: (cls_attention_entropy, (_attn(3, 2, 9),), (_attn(5, 4, 13, seed=1),)),
    "EarlyExitViT": lambda: (_early_exit(0.12), (_randn(*_IMG),)),
    "HaltingViT": lambda: (_seeded(lambda: HaltingViT(ViTConfig())).eval(), (_randn(*_IMG),)),
    "LayerDrop_train": lambda: (_seeded(lambda: LayerDropEncoder(ViTConfig())).train(), (_randn(3, 9, 16),)),
    "LayerDrop_eval": lambda: (_seeded(lambda: LayerDropEncoder(ViTConfig(), keep_layers=[0, 2])).eval(),
                               (_randn(3, 9, 16),)),
    "TokenBudgetController": lambda: (TokenBudgetController(log_every=1), (torch.tensor(_COUNTS), 17)),
    "estimate_gflops": lambda: (estimate_gflops, (torch.tensor(_COUNTS), 16)),
    "check_budget": lambda: (check_budget, (torch.tensor(_COUNTS), 40)),
    "timed_block": lambda: (timed_block, (_seeded(lambda: Block(16, 2)).eval(), _randn(2, 5, 16))),
    "AdaptiveViT": lambda: (_seeded(lambda: AdaptiveViT(ViTConfig(), PruneConfig())).eval(), (_randn(*_IMG),)),
    "AdaptiveViT_tome": lambda: (_seeded(lambda: AdaptiveViT(ViTConfig(pool="mean"), PruneConfig(0.8, (1,)),
                                                             MergeConfig(r=2))).eval(), (_randn(*_IMG),)),
}
