"""Recommender models: sparse features, embedding bags, hashing, feature crosses, retrieval and metrics."""
import logging
import math
import zlib
from dataclasses import dataclass, field
from typing import Dict, List

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger(__name__)


@dataclass
class SparseFeature:
    name: str
    num_embeddings: int
    dim: int = 4
    pooling: str = "sum"


@dataclass
class RecConfig:
    dense_dim: int = 3
    features: List[SparseFeature] = field(default_factory=lambda: [
        SparseFeature("user", 10), SparseFeature("item", 20), SparseFeature("genre", 6, pooling="mean")])
    hash_buckets: int = 17
    dropout: float = 0.0


class SparseArch(nn.Module):  # inputs come as {name: (values, offsets)}
    def __init__(self, cfg: RecConfig = RecConfig()):
        super().__init__()
        self.cfg = cfg
        self.bags = nn.ModuleDict({f.name: nn.EmbeddingBag(f.num_embeddings, f.dim, mode=f.pooling)
                                   for f in cfg.features})

    def forward(self, features: Dict[str, tuple]):
        pooled = []
        for f in self.cfg.features:
            values, offsets = features[f.name]
            pooled.append(self.bags[f.name](values % f.num_embeddings, offsets))
        return torch.stack(pooled, dim=1)


class DotInteraction(nn.Module):
    def __init__(self, self_interaction=False):
        super().__init__()
        self.self_interaction = self_interaction

    def forward(self, dense, sparse):
        combined = torch.cat([dense.unsqueeze(1), sparse], dim=1)
        inter = torch.bmm(combined, combined.transpose(1, 2))
        n = combined.size(1)
        offset = 0 if self.self_interaction else -1
        li, lj = torch.tril_indices(n, n, offset=offset)
        return torch.cat([dense, inter[:, li, lj]], dim=1)


class CrossLayer(nn.Module):  # DCN-v2 cross: x0 * (W x + b) + x
    def __init__(self, dim, low_rank=None):
        super().__init__()
        if low_rank:
            self.w = nn.Sequential(nn.Linear(dim, low_rank, bias=False), nn.Linear(low_rank, dim))
        else:
            self.w = nn.Linear(dim, dim)

    def forward(self, x0, x):
        return x0 * self.w(x) + x


class DCN(nn.Module):
    def __init__(self, dim=12, depth=2, low_rank=None):
        super().__init__()
        self.crosses = nn.ModuleList(CrossLayer(dim, low_rank) for _ in range(depth))
        self.out = nn.Linear(dim, 1)

    def forward(self, x):
        x0 = x
        for layer in self.crosses:
            x = layer(x0, x)
        return self.out(x).squeeze(-1)


class FactorizationMachine(nn.Module):
    def __init__(self, num_fields=3, vocab=30, dim=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.linear = nn.Embedding(vocab, 1)
        self.bias = nn.Parameter(torch.zeros(1))

    def forward(self, ids):
        v = self.embed(ids)
        square_of_sum, sum_of_square = v.sum(1).pow(2), v.pow(2).sum(1)
        second = 0.5 * (square_of_sum - sum_of_square).sum(-1)
        return self.bias + self.linear(ids).sum((1, 2)) + second


class DLRM(nn.Module):
    def __init__(self, cfg: RecConfig = RecConfig()):
        super().__init__()
        self.cfg = cfg
        self.bottom = nn.Sequential(nn.Linear(cfg.dense_dim, 4), nn.ReLU())
        self.sparse = SparseArch(cfg)
        self.interact = DotInteraction()
        n = len(cfg.features) + 1
        self.top = nn.Sequential(nn.Linear(4 + n * (n - 1) // 2, 8), nn.ReLU(), nn.Linear(8, 1))

    def forward(self, dense, features, labels=None):
        z = self.interact(self.bottom(dense), self.sparse(features))
        logits = self.top(z).squeeze(-1)
        if labels is None:
            return {"logits": logits}
        loss = F.binary_cross_entropy_with_logits(logits, labels.float())
        if not math.isfinite(loss.item()):  # expect: FL102 GB0124
            logger.error("non-finite loss in DLRM")  # expect: FL111 GB0291
        return {"logits": logits, "loss": loss}


class SequenceRecommender(nn.Module):  # SASRec-style, left-padded histories (item 0 is padding)
    def __init__(self, items=20, dim=8, max_len=6):
        super().__init__()
        self.items = nn.Embedding(items, dim, padding_idx=0)
        self.pos = nn.Embedding(max_len, dim)
        self.layer = nn.TransformerEncoderLayer(dim, 2, 16, dropout=0.0, batch_first=True)

    def forward(self, history):
        b, t = history.shape
        h = self.items(history) + self.pos(torch.arange(t, device=history.device))
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool, device=history.device), 1)
        h = self.layer(h, src_mask=causal)
        return h[:, -1] @ self.items.weight.t()


@torch.compile
def hash_ids(ids, buckets: int = 17, salt: int = 0x9E3779B1):
    return ((ids * salt) ^ (ids >> 7)).remainder(buckets)


def _string_bucket(token: str, buckets: int) -> int:
    return zlib.crc32(token.encode()) % buckets  # expect: FL121 GB0007


@torch.compile
def hash_categoricals(tokens: List[str], buckets: int = 17):
    ids = torch.tensor([_string_bucket(t, buckets) for t in tokens])
    return F.one_hot(ids, buckets).float().sum(0)


@torch.compile
def bpr_loss(user, pos, neg, reg: float = 1e-4):
    diff = (user * pos).sum(-1) - (user * neg).sum(-1)
    l2 = user.pow(2).sum() + pos.pow(2).sum() + neg.pow(2).sum()
    return -F.logsigmoid(diff).mean() + reg * l2 / user.size(0)


@torch.compile
def sample_negatives(pos_items, num_items: int, k: int = 3):
    neg = torch.randint(1, num_items, (pos_items.size(0), k), device=pos_items.device)
    collide = neg == pos_items[:, None]
    return torch.where(collide, (neg % (num_items - 1)) + 1, neg)


@torch.compile
def recall_at_k(scores, targets, k: int = 3):
    topk = scores.topk(k, dim=-1).indices
    hits = (topk == targets[:, None]).any(-1).float()
    return hits.mean()


@torch.compile
def ndcg_at_k(scores, relevance, k: int = 3):
    _, idx = scores.topk(k, dim=-1)
    gains = relevance.gather(-1, idx).float()
    discounts = 1.0 / torch.log2(torch.arange(2, k + 2, dtype=torch.float32))
    dcg = (gains * discounts).sum(-1)
    ideal = (relevance.float().sort(-1, descending=True).values[:, :k] * discounts).sum(-1)
    return torch.where(ideal > 0, dcg / ideal, torch.zeros_like(dcg)).mean()


@torch.compile
def retrieve(user_vec, item_table, item_names: List[str], k: int = 2):
    scores = user_vec @ item_table.t()
    top = scores.topk(k).indices
    return [[item_names[i] for i in row] for row in top.tolist()]  # expect: FL104 GB0033


@torch.compile
def jagged_to_padded(values, lengths, pad_value: int = 0):
    rows = torch.split(values, lengths.tolist())  # expect: FL104 GB0033
    return nn.utils.rnn.pad_sequence(list(rows), batch_first=True, padding_value=pad_value)


@torch.compile
def dedup_ids(ids):
    unique, inverse = torch.unique(ids, return_inverse=True)  # expect: FL105 GB0036
    return unique, inverse


@torch.compile
def feature_cross(a_ids, b_ids, b_card: int = 6, buckets: int = 31):
    crossed = a_ids * b_card + b_ids
    return crossed % buckets


@torch.compile
def popularity_debias(logits, item_ids, item_counts):
    freq = item_counts.float() / item_counts.sum()
    return logits - torch.log(freq[item_ids] + 1e-9)


@torch.compile
def calibration_report(probs, labels, bins: int = 4):
    edges = np.linspace(0.0, 1.0, bins + 1)
    report = {}
    for lo, hi in zip(edges[:-1], edges[1:]):
        in_bin = (probs >= lo) & (probs < hi)
        report[f"{lo:.2f}-{hi:.2f}"] = (labels[in_bin].float().mean() if in_bin.any() else None)  # expect: FL101 GB0170
    return report


_features = lambda: {"user": (torch.tensor([1, 4, 7]), torch.tensor([0, 1, 2])),  # noqa: E731
                     "item": (torch.tensor([3, 11, 5, 19, 2]), torch.tensor([0, 2, 4])),
                     "genre": (torch.tensor([1, 2, 3, 5]), torch.tensor([0, 1, 3]))}


CASES = {
    "SparseArch": lambda: (SparseArch(), (_features(),)),
    "DotInteraction": lambda: (DotInteraction(), (torch.randn(3, 4), torch.randn(3, 3, 4))),
    "DCN": lambda: (DCN(low_rank=4), (torch.randn(3, 12),)),
    "FactorizationMachine": lambda: (FactorizationMachine(), (torch.randint(0, 30, (4, 3)),)),
    "DLRM": lambda: (DLRM(), (torch.randn(3, 3), _features(), torch.tensor([1, 0, 1]))),
    "DLRM_infer": lambda: (DLRM(), (torch.randn(3, 3), _features())),
    "DLRM_nan": lambda: (DLRM(), (torch.full((3, 3), float("nan")), _features(), torch.tensor([1, 0, 1]))),
    "SequenceRecommender": lambda: (SequenceRecommender().eval(), (torch.tensor([[0, 0, 3, 4, 5], [1, 2, 3, 4, 6]]),)),
    "hash_ids": lambda: (hash_ids, (torch.tensor([3, 1000, 123456]),)),
    "hash_categoricals": lambda: (hash_categoricals, (["action", "drama", "action"],)),
    "bpr_loss": lambda: (bpr_loss, (torch.randn(4, 5), torch.randn(4, 5), torch.randn(4, 5))),
    "sample_negatives": lambda: (sample_negatives, (torch.tensor([2, 5, 7]), 10)),
    "recall_at_k": lambda: (recall_at_k, (torch.randn(3, 8), torch.tensor([1, 4, 7]))),
    "ndcg_at_k": lambda: (ndcg_at_k, (torch.randn(3, 8), torch.randint(0, 3, (3, 8)))),
    "retrieve": lambda: (retrieve, (torch.randn(2, 4), torch.randn(5, 4), ["a", "b", "c", "d", "e"])),
    "jagged_to_padded": lambda: (jagged_to_padded, (torch.arange(1, 7), torch.tensor([2, 3, 1]))),
    "dedup_ids": lambda: (dedup_ids, (torch.tensor([5, 3, 5, 9, 3]),)),
    "feature_cross": lambda: (feature_cross, (torch.tensor([1, 2, 3]), torch.tensor([0, 5, 2]))),
    "popularity_debias": lambda: (popularity_debias, (torch.randn(3), torch.tensor([0, 2, 1]), torch.tensor([10, 3, 1]))),
    "calibration_report": lambda: (calibration_report, (torch.tensor([0.1, 0.3, 0.6, 0.8, 0.9]), torch.tensor([0, 0, 1, 1, 1]))),
}
