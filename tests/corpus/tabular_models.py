"""Tabular and recsys-adjacent models: per-column embedding tables, numeric normalisation with running
statistics, NaN imputation and missing indicators, hashed feature crosses, dict-of-tensors batches,
TabTransformer / FT-Transformer tokenizers, NODE-style soft trees and boosting stages, quantile
binning, TabNet ghost batch norm, padded sharded lookups."""
import math
import warnings
from typing import Dict, List, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

CAT_CARDINALITIES = {"city": 7, "device": 4, "weekday": 7}
NUM_COLUMNS = ("age", "income", "tenure")
N_HASH_BUCKETS = 32
_CROSS_PRIME = 1_000_003


def make_batch(b: int = 5, with_nans: bool = False, seed: int = 0) -> Dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    batch = {name: torch.randint(0, card, (b,), generator=g) for name, card in CAT_CARDINALITIES.items()}
    for name in NUM_COLUMNS:
        col = torch.randn(b, generator=g) * 3 + 1
        if with_nans:
            col[1] = float("nan")
        batch[name] = col
    return batch


def stack_numeric(batch: Dict[str, torch.Tensor], columns: Sequence[str] = NUM_COLUMNS) -> torch.Tensor:
    return torch.stack([batch[c].float() for c in columns], dim=-1)


# --------------------------------------------------------------------------- embeddings / crosses

class CategoricalEmbedder(nn.Module):
    """One table per categorical column, sized by the usual min(50, (card + 1) // 2) rule."""

    def __init__(self, cardinalities: Dict[str, int] = CAT_CARDINALITIES):
        super().__init__()
        self.tables = nn.ModuleDict({
            name: nn.Embedding(card + 1, min(50, (card + 1) // 2)) for name, card in cardinalities.items()
        })

    @property
    def out_dim(self) -> int:
        return sum(t.embedding_dim for t in self.tables.values())

    def forward(self, batch: Dict[str, torch.Tensor]):
        return torch.cat([table(batch[name]) for name, table in self.tables.items()], dim=-1)


class OOVSafeEmbedder(nn.Module):
    """Maps unseen category ids to a shared OOV row, warning when it happens."""

    def __init__(self, cardinalities: Dict[str, int] = CAT_CARDINALITIES, dim: int = 4):
        super().__init__()
        self.cards = dict(cardinalities)
        self.tables = nn.ModuleDict({n: nn.Embedding(c + 1, dim) for n, c in cardinalities.items()})

    def forward(self, batch: Dict[str, torch.Tensor]):
        outs = []
        for name, table in self.tables.items():
            ids = batch[name]
            oov = ids >= self.cards[name]
            if oov.any():  # expect: FL000 GB0170
                warnings.warn(f"column {name}: {int(oov.sum())} out-of-vocabulary ids")
            outs.append(table(torch.where(oov, self.cards[name], ids)))
        return torch.cat(outs, dim=-1)


class HashedCross(nn.Module):
    """Feature crosses of categorical pairs hashed into a fixed number of buckets (wide & deep)."""

    def __init__(self, pairs=(("city", "device"), ("device", "weekday")), buckets: int = N_HASH_BUCKETS, dim: int = 4):
        super().__init__()
        self.pairs, self.buckets = pairs, buckets
        self.table = nn.EmbeddingBag(buckets, dim, mode="sum")

    def forward(self, batch: Dict[str, torch.Tensor]):
        ids = torch.stack([(batch[a] * _CROSS_PRIME + batch[b]) % self.buckets for a, b in self.pairs], dim=1)
        return self.table(ids)


class PythonHashCross(nn.Module):
    """The same cross written with Python's hash() over row tuples, as in quick experiments."""

    def __init__(self, a: str = "city", b: str = "weekday", buckets: int = N_HASH_BUCKETS, dim: int = 4):
        super().__init__()
        self.a, self.b, self.buckets = a, b, buckets
        self.table = nn.Embedding(buckets, dim)

    def forward(self, batch: Dict[str, torch.Tensor]):
        keys = [hash((x, y)) % self.buckets for x, y in zip(batch[self.a].tolist(), batch[self.b].tolist())]  # expect: FL000 GB0033
        return self.table(torch.tensor(keys))


# --------------------------------------------------------------------------- numeric preprocessing

class RunningStatsNorm(nn.Module):
    """Standardises numeric columns with running mean / var buffers updated in training."""

    def __init__(self, n: int = len(NUM_COLUMNS), momentum: float = 0.1, eps: float = 1e-5):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.register_buffer("running_mean", torch.zeros(n))
        self.register_buffer("running_var", torch.ones(n))

    def forward(self, x):
        if self.training:
            with torch.no_grad():
                self.running_mean.lerp_(x.mean(0), self.momentum)
                self.running_var.lerp_(x.var(0, unbiased=True), self.momentum)
        return (x - self.running_mean) / (self.running_var + self.eps).sqrt()


class WelfordNormalizer(nn.Module):
    """Streaming mean / variance with a Python sample counter (online RL / streaming-tabular style)."""

    def __init__(self, n: int = len(NUM_COLUMNS), eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.register_buffer("mean", torch.zeros(n))
        self.register_buffer("m2", torch.zeros(n))
        self.count = 0

    def forward(self, x):
        b = x.shape[0]
        total = self.count + b
        delta = x.mean(0) - self.mean
        self.mean += delta * b / total
        self.m2 += x.var(0, unbiased=False) * b + delta ** 2 * self.count * b / total
        self.count = total  # expect: FL302
        return (x - self.mean) / (self.m2 / max(total - 1, 1) + self.eps).sqrt()


class NaNImputer(nn.Module):
    """Replaces NaNs with learned per-column fill values and appends missing indicators."""

    def __init__(self, n: int = len(NUM_COLUMNS)):
        super().__init__()
        self.fill = nn.Parameter(torch.zeros(n))

    def forward(self, x):
        missing = torch.isnan(x)
        x = torch.where(missing, self.fill.expand_as(x), x)
        return torch.cat([x, missing.float()], dim=-1)


class MedianImputer(nn.Module):
    """Imputes only when the batch has missing values (the branch most preprocessing code has)."""

    def __init__(self, n: int = len(NUM_COLUMNS)):
        super().__init__()
        self.register_buffer("medians", torch.zeros(n))

    def forward(self, x):
        if torch.isnan(x).any():  # expect: FL000 GB0170
            x = torch.where(torch.isnan(x), self.medians, x)
        return x


class DropAllMissingColumns(nn.Module):
    """Keeps only the columns that have at least one observed value in the batch."""

    def __init__(self, n: int = len(NUM_COLUMNS), dim: int = 4):
        super().__init__()
        self.col_emb = nn.Parameter(torch.randn(n, dim))

    def forward(self, x):
        observed = (~torch.isnan(x)).any(0).nonzero().flatten()  # expect: FL000 GB0036
        x = x[:, observed].nan_to_num(0.0)
        return x @ self.col_emb[observed]


# --------------------------------------------------------------------------- binning

class QuantileBinner(nn.Module):
    """Bins each numeric column by fixed quantile boundaries and embeds the bin id."""

    def __init__(self, n_bins: int = 4, n_cols: int = len(NUM_COLUMNS), dim: int = 3):
        super().__init__()
        qs = np.linspace(0, 1, n_bins + 1)[1:-1]
        ref = np.random.default_rng(0).normal(1.0, 3.0, size=(256, n_cols))
        self.register_buffer("boundaries", torch.from_numpy(np.quantile(ref, qs, axis=0).T.copy()).float())
        self.emb = nn.Embedding(n_cols * n_bins, dim)
        self.n_bins = n_bins

    def forward(self, x):
        ids = torch.stack([torch.bucketize(x[:, j].contiguous(), self.boundaries[j]) for j in range(x.shape[1])], 1)
        ids = ids + torch.arange(x.shape[1]) * self.n_bins
        return self.emb(ids).flatten(1)


class AdaptiveBinner(nn.Module):
    """Low-cardinality numeric columns use their distinct values as bin edges, others quantiles."""

    def __init__(self, n_bins: int = 4):
        super().__init__()
        self.n_bins = n_bins

    def forward(self, col):
        edges = torch.unique(col)  # expect: FL000 GB0036
        if edges.numel() > self.n_bins:
            edges = torch.quantile(col, torch.linspace(0, 1, self.n_bins + 1)[1:-1])
        return F.one_hot(torch.bucketize(col, edges), self.n_bins + 1).float()


# --------------------------------------------------------------------------- transformer-style tokenizers

class FeatureTokenizer(nn.Module):
    """FT-Transformer: one token per numeric column (x * W + b) and per categorical column, plus [CLS]."""

    def __init__(self, n_num: int = len(NUM_COLUMNS), cards: Dict[str, int] = CAT_CARDINALITIES, d: int = 8):
        super().__init__()
        self.num_weight = nn.Parameter(torch.randn(n_num, d) / math.sqrt(d))
        self.num_bias = nn.Parameter(torch.zeros(n_num, d))
        offsets = torch.tensor([0] + list(cards.values())[:-1]).cumsum(0)
        self.register_buffer("cat_offsets", offsets)
        self.cat_emb = nn.Embedding(sum(cards.values()), d)
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        self.cat_names = list(cards)

    def forward(self, batch: Dict[str, torch.Tensor]):
        x_num = stack_numeric(batch)
        num_tokens = x_num[..., None] * self.num_weight + self.num_bias
        x_cat = torch.stack([batch[n] for n in self.cat_names], dim=1)
        cat_tokens = self.cat_emb(x_cat + self.cat_offsets)
        tokens = torch.cat([num_tokens, cat_tokens], dim=1)
        return torch.cat([self.cls.expand(tokens.shape[0], -1, -1), tokens], dim=1)


class TabTransformer(nn.Module):
    """Contextual embeddings for categoricals via self-attention; numerics layer-normed and concatenated."""

    def __init__(self, cards: Dict[str, int] = CAT_CARDINALITIES, d: int = 8, heads: int = 2):
        super().__init__()
        self.embed = nn.ModuleDict({n: nn.Embedding(c, d) for n, c in cards.items()})
        self.col_embed = nn.Parameter(torch.randn(len(cards), d) * 0.02)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ff = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        self.num_norm = nn.LayerNorm(len(NUM_COLUMNS))
        self.head = nn.Linear(len(cards) * d + len(NUM_COLUMNS), 1)

    def forward(self, batch: Dict[str, torch.Tensor]):
        tokens = torch.stack([emb(batch[n]) for n, emb in self.embed.items()], dim=1) + self.col_embed
        h = tokens + self.attn(tokens, tokens, tokens, need_weights=False)[0]
        h = h + self.ff(h)
        feats = torch.cat([h.flatten(1), self.num_norm(stack_numeric(batch))], dim=-1)
        return self.head(feats).squeeze(-1)


class LazyColumnModel(nn.Module):
    """Fixes the column order from the first batch it sees (dict order is not trusted)."""

    def __init__(self, d: int = 6):
        super().__init__()
        self.column_order: Optional[List[str]] = None
        self.proj = nn.LazyLinear(d)

    def forward(self, batch: Dict[str, torch.Tensor]):
        if self.column_order is None:
            self.column_order = sorted(batch)  # expect: FL302
        x = torch.stack([batch[c].float() for c in self.column_order], dim=-1)
        return self.proj(x)


# --------------------------------------------------------------------------- trees / boosting

class SoftDecisionTree(nn.Module):
    """Oblivious soft tree (NODE): each level one sigmoid split shared by all nodes at that depth."""

    def __init__(self, n_in: int = 6, depth: int = 3, n_out: int = 1, temperature: float = 0.5):
        super().__init__()
        self.depth, self.temperature = depth, temperature
        self.split = nn.Linear(n_in, depth)
        self.leaves = nn.Parameter(torch.randn(2 ** depth, n_out) * 0.1)

    def forward(self, x):
        p_right = torch.sigmoid(self.split(x) / self.temperature)
        mu = x.new_ones(x.shape[0], 1)
        for d in range(self.depth):
            p = p_right[:, d:d + 1]
            mu = torch.stack([mu * (1 - p), mu * p], dim=2).flatten(1)
        return mu @ self.leaves


class BoostedSoftTrees(nn.Module):
    """Stage-wise residual fitting with shrinkage; stops adding stages once the residual is small."""

    def __init__(self, n_stages: int = 4, n_in: int = 6, shrinkage: float = 0.3, tol: float = 1e-3):
        super().__init__()
        self.stages = nn.ModuleList(SoftDecisionTree(n_in) for _ in range(n_stages))
        self.shrinkage, self.tol = shrinkage, tol

    def forward(self, x, y):
        pred = torch.zeros_like(y)
        for stage in self.stages:
            residual = y - pred
            if residual.abs().mean() < self.tol:  # expect: FL000 GB0170
                break
            pred = pred + self.shrinkage * stage(x).squeeze(-1)
        return pred


class GhostBatchNorm(nn.Module):
    """TabNet's ghost BN: batch norm over virtual batches of a fixed size."""

    def __init__(self, n: int = 6, virtual_batch_size: int = 4, momentum: float = 0.02):
        super().__init__()
        self.vbs = virtual_batch_size
        self.bn = nn.BatchNorm1d(n, momentum=momentum)

    def forward(self, x):
        chunks = x.chunk(int(math.ceil(x.shape[0] / self.vbs)), 0)
        return torch.cat([self.bn(c) for c in chunks], dim=0)  # expect: FL301


class ShardedEmbeddingLookup(nn.Module):
    """Pads the batch to a multiple of the shard count before a row-wise sharded lookup."""

    def __init__(self, num: int = 20, dim: int = 4, shards: int = 4):
        super().__init__()
        self.shards = shards
        self.table = nn.Embedding(num, dim)

    def forward(self, ids):
        b = ids.shape[0]
        if b % self.shards:  # expect: FL301
            ids = F.pad(ids, (0, self.shards - b % self.shards))
        out = torch.cat([self.table(part) for part in ids.chunk(self.shards)], 0)
        return out[:b]


# --------------------------------------------------------------------------- compiled functions

@torch.compile
def column_summary(batch: Dict[str, torch.Tensor]):
    return {name: round(col.float().mean().item(), 3) for name, col in batch.items()}  # expect: FL000 GB0092; FL000 GB0124


@torch.compile(dynamic=True)
def ranking_loss(scores, labels, group_sizes: List[int]):
    losses = []
    for s, l in zip(scores.split(group_sizes), labels.split(group_sizes)):
        losses.append(F.cross_entropy(s[None], l.argmax()[None]))
    return torch.stack(losses).mean()


def _digitize_numpy(x, edges: np.ndarray):
    ids = np.digitize(x.detach().numpy(), edges)  # expect: FL000 GB0294
    return torch.from_numpy(ids)


digitize_numpy = torch.compile(_digitize_numpy)


# --------------------------------------------------------------------------- cases

def _num(b: int = 5, with_nans: bool = False):
    return stack_numeric(make_batch(b, with_nans))


CASES = {
    "CategoricalEmbedder": lambda: (CategoricalEmbedder(), (make_batch(),)),
    "OOVSafeEmbedder": lambda: (OOVSafeEmbedder(), ({**make_batch(), "city": torch.tensor([0, 9, 3, 6, 8])},)),
    "HashedCross": lambda: (HashedCross(), (make_batch(),)),
    "PythonHashCross": lambda: (PythonHashCross(), (make_batch(),)),
    "RunningStatsNorm": lambda: (RunningStatsNorm(), (_num(),)),
    "WelfordNormalizer": lambda: (WelfordNormalizer(), (_num(),)),
    "NaNImputer": lambda: (NaNImputer(), (_num(with_nans=True),)),
    "MedianImputer": lambda: (MedianImputer(), (_num(with_nans=True),)),
    "DropAllMissingColumns": lambda: (DropAllMissingColumns(), (torch.tensor([[1.0, float("nan"), 2.0],
                                                                              [0.5, float("nan"), float("nan")]]),)),
    "QuantileBinner": lambda: (QuantileBinner(), (_num(),)),
    "AdaptiveBinner": lambda: (AdaptiveBinner(), (torch.tensor([0.0, 1.0, 1.0, 0.0, 2.0]),)),
    "AdaptiveBinner_continuous": lambda: (AdaptiveBinner(), (torch.tensor([0.3, -1.2, 2.5, 0.7, 1.9, -0.4]),)),
    "FeatureTokenizer": lambda: (FeatureTokenizer(), (make_batch(),)),
    "TabTransformer": lambda: (TabTransformer(), (make_batch(),)),
    "LazyColumnModel": lambda: (LazyColumnModel(), (make_batch(),)),
    "BoostedSoftTrees": lambda: (BoostedSoftTrees(), (torch.randn(5, 6), torch.randn(5))),
    "BoostedSoftTrees_zero_target": lambda: (BoostedSoftTrees(), (torch.randn(5, 6), torch.zeros(5))),
    "GhostBatchNorm": lambda: (GhostBatchNorm(), (torch.randn(6, 6),), (torch.randn(10, 6),)),
    "ShardedEmbeddingLookup": lambda: (ShardedEmbeddingLookup(), (torch.tensor([3, 1, 4, 1, 5, 9, 2, 6]),),
                                       (torch.tensor([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5]),)),
    "column_summary": lambda: (column_summary, (make_batch(),)),
    "ranking_loss": lambda: (ranking_loss, (torch.randn(9), torch.tensor([0, 1, 0, 0, 0, 1, 0, 1, 0]).float(), [3, 2, 4])),
    "digitize_numpy": lambda: (digitize_numpy, (torch.randn(6), np.array([-1.0, 0.0, 1.0]))),
}
