"""Two-tower candidate retrieval in the style of YouTube-DNN / TF-Recommenders / torchrec:
hashed id features through EmbeddingBags, attention-pooled watch history, sampled softmax over
in-batch negatives with logQ correction and a learned temperature, hard-negative mining, a flat
and an IVF-style ANN index with filtering of already-seen items, and the feature checks and
recall@k bookkeeping that sit on the online serving path."""
import logging
import math
import time
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

log = logging.getLogger("two_tower")
log.addHandler(logging.NullHandler())

HASH_MULT = 0x9E3779B1  # golden-ratio multiplicative hash
PAD = 0  # id 0 is reserved for padding in every table
MAX_HISTORY = 8
MIN_TEMPERATURE = 0.02
LOGQ_EPS = 1e-6
NEG_INF = -1e9
SERVING_STATS: Dict[str, float] = {"requests": 0, "last_served": 0.0}

# --------------------------------------------------------------------------- configs
@dataclass
class SparseFeature:
    name: str
    num_buckets: int
    dim: int = 8
    mode: str = "mean"
    salt: int = 0

@dataclass
class TowerConfig:
    features: List[SparseFeature] = field(default_factory=list)
    dense_dim: int = 0
    hidden: Tuple[int, ...] = (24,)
    out_dim: int = 12
    history_feature: Optional[str] = None
    history_buckets: int = 101
    normalize: bool = True

@dataclass
class RetrievalConfig:
    temperature: float = 0.07
    learn_temperature: bool = False
    logq_correction: bool = True
    remove_accidental_hits: bool = True

USER_FEATURES = [SparseFeature("user_id", 97, salt=11), SparseFeature("country", 13, dim=4, mode="sum"),
                 SparseFeature("device", 7, dim=4, salt=3)]
ITEM_FEATURES = [SparseFeature("item_id", 101, salt=5), SparseFeature("category", 17, dim=4),
                 SparseFeature("tags", 31, dim=6, mode="sum", salt=9)]

# --------------------------------------------------------------------------- helpers
def hash_bucket(ids: torch.Tensor, num_buckets: int, salt: int = 0) -> torch.Tensor:
    """Maps raw ids into [1, num_buckets) and keeps PAD at bucket 0."""
    mixed = torch.remainder(ids * HASH_MULT + salt, num_buckets - 1) + 1
    return torch.where(ids == PAD, torch.zeros_like(mixed), mixed)

def l2_normalize(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    return x / x.norm(dim=-1, keepdim=True).clamp(min=eps)

def _iter_chunks(n: int, chunk: int):
    for start in range(0, n, chunk):
        yield start, min(start + chunk, n)

# --------------------------------------------------------------------------- sparse encoders
class SparseIdEncoder(nn.Module):
    """One EmbeddingBag per feature; each feature arrives as a padded [B, L] (or [B]) id tensor."""
    def __init__(self, features: Sequence[SparseFeature]):
        super().__init__()
        self.features = list(features)
        self.bags = nn.ModuleDict({
            f.name: nn.EmbeddingBag(f.num_buckets, f.dim, mode=f.mode, padding_idx=PAD)
            for f in self.features})

    @property
    def out_dim(self) -> int:
        return sum(f.dim for f in self.features)

    def forward(self, batch: Dict[str, torch.Tensor]) -> torch.Tensor:
        pooled = []
        for feat in self.features:
            ids = batch[feat.name]
            if ids.dim() == 1:
                ids = ids.unsqueeze(1)
            pooled.append(self.bags[feat.name](hash_bucket(ids, feat.num_buckets, feat.salt)))
        return torch.cat(pooled, dim=-1)

class JaggedBagEncoder(nn.Module):
    """KeyedJaggedTensor-style input: flat values plus per-sample lengths."""
    def __init__(self, feature: SparseFeature, strict: bool = True):
        super().__init__()
        self.feature = feature
        self.strict = strict
        self.bag = nn.EmbeddingBag(feature.num_buckets, feature.dim, mode=feature.mode)

    def forward(self, values: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        if self.strict:
            total = int(lengths.sum())  # expect: FL000 GB0124
            if total != values.numel():
                raise ValueError(f"{self.feature.name}: lengths sum to {total}, got {values.numel()} values")
        offsets = torch.cat([lengths.new_zeros(1), torch.cumsum(lengths, 0)[:-1]])
        return self.bag(hash_bucket(values, self.feature.num_buckets, self.feature.salt), offsets)

class TowerMLP(nn.Module):
    def __init__(self, in_dim: int, hidden: Sequence[int], out_dim: int, normalize: bool = True):
        super().__init__()
        dims = [in_dim, *hidden]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.head = nn.Linear(dims[-1], out_dim)
        self.normalize = normalize

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = F.gelu(layer(x))
        x = self.head(x)
        return l2_normalize(x) if self.normalize else x

# --------------------------------------------------------------------------- sequence features
class AttentionPooling(nn.Module):
    """Multi-query attention pooling over the most recent items (most recent last)."""
    def __init__(self, dim: int, heads: int = 2, max_len: int = MAX_HISTORY):
        super().__init__()
        self.max_len = max_len
        self.query = nn.Parameter(torch.randn(heads, dim) * 0.1)
        self.key = nn.Linear(dim, dim)
        self.pos = nn.Embedding(max_len, dim)
        self.scale = dim ** -0.5

    def forward(self, seq: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if seq.shape[1] > self.max_len:  # expect: FL301
            seq, mask = seq[:, -self.max_len:], mask[:, -self.max_len:]
        steps = seq.shape[1]
        positions = torch.arange(steps, device=seq.device) + (self.max_len - steps)
        keys = torch.tanh(self.key(seq + self.pos(positions)))
        scores = torch.einsum("btd,hd->bht", keys, self.query) * self.scale
        scores = scores.masked_fill(~mask.unsqueeze(1), NEG_INF)
        weights = scores.softmax(dim=-1)
        return torch.einsum("bht,btd->bhd", weights, seq).mean(dim=1)

# --------------------------------------------------------------------------- towers
class UserTower(nn.Module):
    def __init__(self, cfg: TowerConfig, history_table: Optional[nn.Embedding] = None, hist_dim: int = 8):
        super().__init__()
        self.cfg = cfg
        self.sparse = SparseIdEncoder(cfg.features)
        in_dim = self.sparse.out_dim + cfg.dense_dim
        if cfg.history_feature is not None:
            self.history_emb = history_table or nn.Embedding(cfg.history_buckets, hist_dim, padding_idx=PAD)
            self.cold_start = nn.Parameter(torch.zeros(self.history_emb.embedding_dim))
            self.pool = AttentionPooling(self.history_emb.embedding_dim)
            in_dim += self.history_emb.embedding_dim
        self.dense_norm = nn.LayerNorm(cfg.dense_dim) if cfg.dense_dim else None
        self.mlp = TowerMLP(in_dim, cfg.hidden, cfg.out_dim, cfg.normalize)

    def encode_history(self, hist_ids: torch.Tensor) -> torch.Tensor:
        mask = hist_ids != PAD
        seq = self.history_emb(hash_bucket(hist_ids, self.history_emb.num_embeddings))
        pooled = self.pool(seq, mask | ~mask.any(dim=1, keepdim=True))
        empty = ~mask.any(dim=1)
        if empty.any():  # cold-start users get a learned vector instead of attending over padding  # expect: FL000 GB0170
            pooled = torch.where(empty.unsqueeze(1), self.cold_start.expand_as(pooled), pooled)
        return pooled

    def forward(self, batch: Dict[str, torch.Tensor], dense: Optional[torch.Tensor] = None) -> torch.Tensor:
        parts = [self.sparse(batch)]
        if self.dense_norm is not None:
            parts.append(self.dense_norm(dense))
        if self.cfg.history_feature is not None:
            parts.append(self.encode_history(batch[self.cfg.history_feature]))
        return self.mlp(torch.cat(parts, dim=-1))

class ItemTower(nn.Module):
    def __init__(self, cfg: TowerConfig):
        super().__init__()
        self.sparse = SparseIdEncoder(cfg.features)
        self.content_proj = nn.Linear(cfg.dense_dim, 8) if cfg.dense_dim else None
        in_dim = self.sparse.out_dim + (8 if cfg.dense_dim else 0)
        self.mlp = TowerMLP(in_dim, cfg.hidden, cfg.out_dim, cfg.normalize)

    def forward(self, batch: Dict[str, torch.Tensor], content: Optional[torch.Tensor] = None) -> torch.Tensor:
        x = self.sparse(batch)
        if self.content_proj is not None and content is not None:
            x = torch.cat([x, F.relu(self.content_proj(content))], dim=-1)
        return self.mlp(x)

class TwoTowerModel(nn.Module):
    def __init__(self, user_cfg: TowerConfig, item_cfg: TowerConfig, rcfg: RetrievalConfig):
        super().__init__()
        assert user_cfg.out_dim == item_cfg.out_dim, "towers must share an output space"
        self.user_tower = UserTower(user_cfg)
        self.item_tower = ItemTower(item_cfg)
        init = math.log(1.0 / rcfg.temperature)
        self.log_inv_temp = nn.Parameter(torch.tensor(init), requires_grad=rcfg.learn_temperature)

    def forward(self, user_batch, item_batch, dense=None):
        u = self.user_tower(user_batch, dense)
        v = self.item_tower(item_batch)
        inv_temp = self.log_inv_temp.exp().clamp(max=1.0 / MIN_TEMPERATURE)
        return u, v, (u @ v.t()) * inv_temp

# --------------------------------------------------------------------------- sampling bias / losses
class StreamingFrequencyEstimator(nn.Module):
    """Yi et al. 2019: estimates each item's sampling probability from the gap between sightings."""
    def __init__(self, num_buckets: int = 257, alpha: float = 0.05):
        super().__init__()
        self.num_buckets = num_buckets
        self.alpha = alpha
        self.register_buffer("last_seen", torch.zeros(num_buckets))
        self.register_buffer("delta", torch.full((num_buckets,), float(num_buckets)))
        self.step = 0

    def forward(self, item_ids: torch.Tensor) -> torch.Tensor:
        self.step += 1  # expect: FL302
        h = hash_bucket(item_ids, self.num_buckets)
        gap = self.step - self.last_seen[h]
        self.delta[h] = (1.0 - self.alpha) * self.delta[h] + self.alpha * gap
        self.last_seen[h] = torch.full_like(gap, float(self.step))
        return torch.log(1.0 / self.delta[h].clamp(min=1.0) + LOGQ_EPS)

class InBatchSoftmaxLoss(nn.Module):
    def __init__(self, cfg: RetrievalConfig):
        super().__init__()
        self.cfg = cfg

    def forward(self, logits: torch.Tensor, item_ids: torch.Tensor, log_q: Optional[torch.Tensor] = None,
                weights: Optional[torch.Tensor] = None) -> torch.Tensor:
        if log_q is not None and self.cfg.logq_correction:
            logits = logits - log_q.unsqueeze(0)
        if self.cfg.remove_accidental_hits:
            same = item_ids.unsqueeze(0) == item_ids.unsqueeze(1)
            same = same & ~torch.eye(same.shape[0], dtype=torch.bool, device=same.device)
            n_hits = int(same.sum())  # expect: FL000 GB0124
            if n_hits:
                log.debug("masking %d accidental hits in a batch of %d", n_hits, same.shape[0])  # expect: FL000 GB0291
            logits = logits.masked_fill(same, NEG_INF)
        labels = torch.arange(logits.shape[0], device=logits.device)
        loss = F.cross_entropy(logits, labels, reduction="none")
        if weights is not None:
            loss = loss * weights
        return loss.mean()

class HardNegativeMiner(nn.Module):
    """Picks the highest-scoring non-positive items, skipping the very top ones (likely false negatives)."""
    def __init__(self, num_negatives: int = 2, skip_top: int = 1, margin: float = 0.1):
        super().__init__()
        self.num_negatives = num_negatives
        self.skip_top = skip_top
        self.margin = margin

    def forward(self, user_emb, item_emb, pos_idx):
        sims = user_emb @ item_emb.t()
        pos_scores = sims.gather(1, pos_idx.unsqueeze(1))
        sims = sims.scatter(1, pos_idx.unsqueeze(1), NEG_INF)
        k = min(self.num_negatives + self.skip_top, sims.shape[1] - 1)
        neg_scores, neg_idx = sims.topk(k, dim=1)
        neg_scores, neg_idx = neg_scores[:, self.skip_top:], neg_idx[:, self.skip_top:]
        hard = neg_scores > pos_scores - self.margin
        if not hard.any():  # expect: FL000 GB0170
            warnings.warn("no negatives inside the margin; falling back to random negatives")  # expect: FL000 GB0007
            return torch.randint(0, item_emb.shape[0], neg_idx.shape), neg_scores
        rows, cols = hard.nonzero(as_tuple=True)  # expect: FL000 GB0036
        return neg_idx[rows, cols], neg_scores[rows, cols]

@torch.compile
def mixed_negative_logits(user_emb, batch_item_emb, corpus_item_emb, num_random: int, temperature: float):
    """Mixed negative sampling: in-batch items plus uniformly sampled corpus items."""
    sampled = torch.from_numpy(np.random.choice(corpus_item_emb.shape[0], num_random, replace=False))  # expect: FL000 GB0033
    candidates = torch.cat([batch_item_emb, corpus_item_emb[sampled]], dim=0)
    return (user_emb @ candidates.t()) / temperature

@torch.compile
def annealed_temperature_logits(logits, step: int, total_steps: int, t_start: float = 0.2, t_end: float = 0.05):
    progress = min(step / max(total_steps, 1), 1.0)
    temperature = t_end + 0.5 * (t_start - t_end) * (1.0 + math.cos(math.pi * progress))
    return logits / max(temperature, MIN_TEMPERATURE)

@torch.compile
def logq_from_counts(item_counts: torch.Tensor, item_idx: torch.Tensor) -> torch.Tensor:
    """Popularity-based logQ from offline counts, the way the batch pipeline computes it."""
    probs = item_counts.double().numpy() / max(float(item_counts.sum()), 1.0)  # expect: FL000 GB0124
    log_q = torch.from_numpy(np.log(probs + LOGQ_EPS)).float()
    return log_q[item_idx]

# --------------------------------------------------------------------------- ANN-style retrieval
@torch.compile
def retrieve_topk(query: torch.Tensor, item_matrix: torch.Tensor, seen_mask: torch.Tensor, k: int = 5):
    scores = (query @ item_matrix.t()).masked_fill(seen_mask, NEG_INF)
    return scores.topk(k, dim=-1)

@torch.compile(dynamic=True)
def filter_seen_vectorized(cand_ids: torch.Tensor, cand_scores: torch.Tensor, history: torch.Tensor, k: int):
    seen = (cand_ids.unsqueeze(-1) == history.unsqueeze(1)).any(dim=-1) | (cand_ids == PAD)
    scores = cand_scores.masked_fill(seen, NEG_INF)
    top_scores, pos = scores.topk(k, dim=-1)
    return cand_ids.gather(1, pos), top_scores

@torch.compile
def filter_seen_candidates(cand_ids: torch.Tensor, cand_scores: torch.Tensor, history: torch.Tensor, k: int):
    """Reference implementation from the serving team: python sets per request."""
    out_ids, out_scores = [], []
    for row_ids, row_scores, row_hist in zip(cand_ids, cand_scores, history):
        seen = set(row_hist.tolist())  # expect: FL000 GB0033
        keep = [j for j, item in enumerate(row_ids.tolist()) if item not in seen and item != PAD][:k]
        keep += [keep[-1] if keep else 0] * (k - len(keep))
        idx = torch.tensor(keep)
        out_ids.append(row_ids[idx])
        out_scores.append(row_scores[idx])
    return torch.stack(out_ids), torch.stack(out_scores)

class FlatIPIndex(nn.Module):
    """Brute-force inner-product index; seen items are knocked out with a scatter."""
    def __init__(self, item_vectors: torch.Tensor, k: int = 5, chunk: int = 16):
        super().__init__()
        self.register_buffer("items", item_vectors)
        self.k = k
        self.chunk = chunk

    def forward(self, query: torch.Tensor, seen_ids: torch.Tensor):
        parts = [query @ self.items[lo:hi].t() for lo, hi in _iter_chunks(self.items.shape[0], self.chunk)]
        scores = torch.cat(parts, dim=1)
        scores = scores.scatter(1, seen_ids, NEG_INF)  # PAD column is masked too, which is intended
        return scores.topk(self.k, dim=-1)

def _kmeans(x: torch.Tensor, num_lists: int, iters: int = 4) -> torch.Tensor:
    centroids = x[torch.linspace(0, x.shape[0] - 1, num_lists).long()].clone()
    for _ in range(iters):
        assign = (x @ centroids.t()).argmax(dim=1)
        for c in range(num_lists):
            members = x[assign == c]
            if len(members):
                centroids[c] = l2_normalize(members.mean(0))
    return centroids

class IVFIndex(nn.Module):
    """Inverted-file index: probe the nprobe closest lists, score only their members."""
    def __init__(self, item_vectors: torch.Tensor, num_lists: int = 4, nprobe: int = 2, k: int = 4):
        super().__init__()
        centroids = _kmeans(item_vectors, num_lists)
        self.register_buffer("items", item_vectors)
        self.register_buffer("centroids", centroids)
        self.register_buffer("assign", (item_vectors @ centroids.t()).argmax(dim=1))
        self.nprobe, self.k = nprobe, k

    def forward(self, query: torch.Tensor, exclude: Optional[torch.Tensor] = None):
        probes = (query @ self.centroids.t()).topk(self.nprobe, dim=-1).indices
        all_ids, all_scores = [], []
        for b in range(query.shape[0]):
            members = torch.isin(self.assign, probes[b]).nonzero().squeeze(1)  # expect: FL000 GB0036
            scores = self.items[members] @ query[b]
            if exclude is not None:
                scores = scores.masked_fill(torch.isin(members, exclude[b]), NEG_INF)
            kk = min(self.k, members.numel())
            top_scores, top = scores.topk(kk)
            ids = members[top]
            if kk < self.k:
                log.debug("query %d: only %d candidates in probed lists", b, kk)
                ids = F.pad(ids, (0, self.k - kk), value=-1)
                top_scores = F.pad(top_scores, (0, self.k - kk), value=NEG_INF)
            all_ids.append(ids)
            all_scores.append(top_scores)
        return torch.stack(all_ids), torch.stack(all_scores)

# --------------------------------------------------------------------------- validation / metrics
class FeatureValidator(nn.Module):
    """Clips out-of-vocabulary ids and zeroes non-finite dense values before the towers see them."""
    def __init__(self, id_ranges: Dict[str, Tuple[int, int]], strict_dense: bool = False):
        super().__init__()
        self.id_ranges = dict(id_ranges)
        self.strict_dense = strict_dense
        self.register_buffer("num_invalid", torch.zeros((), dtype=torch.long))

    def forward(self, batch: Dict[str, torch.Tensor], dense: Optional[torch.Tensor] = None):
        clean = {}
        for name, (lo, hi) in self.id_ranges.items():
            try:
                ids = batch[name]
            except KeyError:
                log.warning("missing feature %s; substituting padding", name)
                ids = torch.zeros_like(next(iter(batch.values())))
            bad = (ids < lo) | (ids > hi)
            self.num_invalid += bad.sum()
            if bad.any():  # expect: FL000 GB0170
                log.warning(f"{name}: {bad.sum()} ids outside [{lo}, {hi}]")
            clean[name] = torch.where(bad, torch.full_like(ids, PAD), ids)
        if dense is not None:
            finite = torch.isfinite(dense)
            if self.strict_dense and not bool(finite.all()):
                raise ValueError("non-finite dense features in request")
            dense = torch.where(finite, dense, torch.zeros_like(dense))
        return clean, dense

@torch.compile
def recall_at_k(top_ids: torch.Tensor, target_ids: torch.Tensor, k: int) -> torch.Tensor:
    hits = (top_ids[:, :k].unsqueeze(-1) == target_ids.unsqueeze(1)).any(dim=1)
    valid = target_ids != PAD
    per_user = (hits & valid).sum(dim=1).float() / valid.sum(dim=1).clamp(min=1)
    return per_user.mean()

class RetrievalMetrics(nn.Module):
    """Running recall@k over serving logs; `forward` updates and returns the current report."""
    def __init__(self, ks: Sequence[int] = (1, 3, 5)):
        super().__init__()
        self.ks = tuple(ks)
        self.register_buffer("hit_sums", torch.zeros(len(self.ks)))
        self.register_buffer("num_users", torch.zeros(()))

    def forward(self, top_ids: torch.Tensor, target_ids: torch.Tensor) -> Dict[str, float]:
        n = top_ids.shape[0]
        for i, k in enumerate(self.ks):
            self.hit_sums[i] += recall_at_k(top_ids, target_ids, k) * n
        self.num_users += n
        report = {f"recall@{k}": (self.hit_sums[i] / self.num_users).item() for i, k in enumerate(self.ks)}  # expect: FL000 GB0124; FL000 GB4347; FL000 GB8335
        if report[f"recall@{self.ks[-1]}"] < 0.05:
            log.info("recall collapsed: %s", report)
        return report

# --------------------------------------------------------------------------- online serving
def log_impressions(ids: torch.Tensor, scores: torch.Tensor) -> None:
    log.debug("served %d candidates, best score %.3f", ids.numel(), scores.max())  # expect: FL000 GB0291

@torch.compiler.disable
def _record_served(batch_size: int) -> None:
    SERVING_STATS["requests"] += batch_size
    SERVING_STATS["last_served"] = time.perf_counter()

class OnlineRetriever(nn.Module):
    """Request -> validated features -> user vector (LRU-cached per user) -> ANN -> filtered top-k."""
    def __init__(self, user_tower: UserTower, index: FlatIPIndex, validator: FeatureValidator,
                 cache_size: int = 4, callbacks: Sequence[Callable] = ()):
        super().__init__()
        self.user_tower = user_tower
        self.index = index
        self.validator = validator
        self.cache_size = cache_size
        self.callbacks = list(callbacks)
        self._cache: "OrderedDict[int, torch.Tensor]" = OrderedDict()

    def _user_vector(self, batch: Dict[str, torch.Tensor]) -> torch.Tensor:
        key = int(batch["user_id"][0])  # expect: FL000 GB0124
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        vec = self.user_tower(batch)
        self._cache[key] = vec  # expect: FL302
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return vec

    def forward(self, request: Dict[str, torch.Tensor]):
        batch, _ = self.validator(request)
        user_vec = self._user_vector(batch)
        scores, ids = self.index(user_vec, request["seen_items"])
        for cb in self.callbacks:
            cb(ids, scores)
        _record_served(ids.shape[0])
        return ids, scores

# --------------------------------------------------------------------------- CASES inputs
def _g(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)

def _user_batch(b: int = 6, seed: int = 0, hist_len: int = 7, cold: int = 1) -> Dict[str, torch.Tensor]:
    g = _g(seed)
    hist = torch.randint(1, 400, (b, hist_len), generator=g)
    hist[:, :2] = PAD
    hist[:cold] = PAD  # cold-start users have no history at all
    return {"user_id": torch.randint(1, 50_000, (b,), generator=g),
            "country": torch.randint(1, 200, (b, 2), generator=g),
            "device": torch.randint(1, 9, (b,), generator=g), "history": hist}

def _item_batch(b: int = 6, seed: int = 1) -> Dict[str, torch.Tensor]:
    g = _g(seed)
    ids = torch.randint(1, 400, (b,), generator=g)
    ids[-1] = ids[0]  # an accidental hit inside the batch
    return {"item_id": ids, "category": torch.randint(1, 40, (b,), generator=g),
            "tags": torch.randint(0, 90, (b, 3), generator=g)}

def _vectors(n: int, d: int = 12, seed: int = 2) -> torch.Tensor:
    return l2_normalize(torch.randn(n, d, generator=_g(seed)))

def _candidates(b: int, c: int, h: int, seed: int = 3):
    g = _g(seed)
    ids = torch.randint(1, 30, (b, c), generator=g)
    return ids, torch.randn(b, c, generator=g), ids[:, : h].clone()

_USER_CFG = TowerConfig(features=USER_FEATURES, history_feature="history")
_USER_CFG_DENSE = TowerConfig(features=USER_FEATURES, dense_dim=5)
_ITEM_CFG = TowerConfig(features=ITEM_FEATURES, dense_dim=3)
_RCFG = RetrievalConfig()

def _online():
    torch.manual_seed(0)
    validator = FeatureValidator({"user_id": (1, 60_000), "country": (1, 250), "device": (1, 8),
                                  "history": (0, 1_000)})
    index = FlatIPIndex(_vectors(40), k=5, chunk=16)
    return OnlineRetriever(UserTower(_USER_CFG), index, validator, callbacks=[log_impressions])

def _seq_inputs(b: int, t: int, d: int = 8, seed: int = 4):
    g = _g(seed)
    mask = torch.rand(b, t, generator=g) > 0.3
    mask[:, -1] = True
    return torch.randn(b, t, d, generator=g), mask

CASES = {
    "SparseIdEncoder": lambda: (SparseIdEncoder(USER_FEATURES), (_user_batch(),)),
    "JaggedBagEncoder": lambda: (JaggedBagEncoder(ITEM_FEATURES[2]),
                                 (torch.arange(3, 12), torch.tensor([2, 3, 1, 3]))),
    "TowerMLP": lambda: (TowerMLP(10, (16, 12), 6), (torch.randn(4, 10, generator=_g(5)),)),
    "AttentionPooling": lambda: (AttentionPooling(8), _seq_inputs(3, 5), _seq_inputs(4, 11)),
    "UserTower": lambda: (UserTower(_USER_CFG), (_user_batch(),)),
    "UserTower_dense": lambda: (UserTower(_USER_CFG_DENSE), (_user_batch(), torch.randn(6, 5, generator=_g(6)))),
    "ItemTower": lambda: (ItemTower(_ITEM_CFG), (_item_batch(), torch.randn(6, 3, generator=_g(7)))),
    "TwoTowerModel": lambda: (TwoTowerModel(_USER_CFG, TowerConfig(features=ITEM_FEATURES), _RCFG),
                              (_user_batch(), _item_batch())),
    "StreamingFrequencyEstimator": lambda: (StreamingFrequencyEstimator(), (_item_batch()["item_id"],)),
    "InBatchSoftmaxLoss": lambda: (InBatchSoftmaxLoss(_RCFG), (torch.randn(6, 6, generator=_g(8)),
                                   _item_batch()["item_id"], torch.full((6,), -3.0), torch.ones(6))),
    "HardNegativeMiner": lambda: (HardNegativeMiner(2), (_vectors(5, seed=9), _vectors(9, seed=10),
                                  torch.tensor([0, 2, 4, 6, 8]))),
    "mixed_negative_logits": lambda: (mixed_negative_logits, (_vectors(4), _vectors(4, seed=11),
                                      _vectors(30, seed=12), 6, 0.1)),
    "annealed_temperature_logits": lambda: (annealed_temperature_logits, (torch.randn(4, 7, generator=_g(13)), 30, 100)),
    "logq_from_counts": lambda: (logq_from_counts, (torch.arange(1, 21), torch.tensor([0, 3, 3, 19]))),
    "retrieve_topk": lambda: (retrieve_topk, (_vectors(3), _vectors(20, seed=14), torch.rand(3, 20, generator=_g(15)) < 0.2),
                              (_vectors(5), _vectors(37, seed=14), torch.rand(5, 37, generator=_g(15)) < 0.2)),
    "filter_seen_vectorized": lambda: (filter_seen_vectorized, (*_candidates(3, 10, 4), 3),
                                       (*_candidates(5, 17, 6), 3)),
    "filter_seen_candidates": lambda: (filter_seen_candidates, (*_candidates(3, 10, 4), 3)),
    "FlatIPIndex": lambda: (FlatIPIndex(_vectors(40), k=5), (_vectors(3, seed=16), torch.tensor(
        [[3, 7, 0], [1, 2, 5], [9, 0, 0]]))),
    "HardNegativeMiner_no_hard": lambda: (HardNegativeMiner(2, margin=-4.0), (_vectors(5, seed=9), _vectors(9, seed=10),
                                          torch.tensor([0, 2, 4, 6, 8]))),
    "IVFIndex": lambda: (IVFIndex(_vectors(24, seed=17), num_lists=6, k=9), (_vectors(2, seed=18), torch.tensor([[1, 4], [0, 2]]))),
    "FeatureValidator": lambda: (FeatureValidator({"user_id": (1, 40_000), "device": (1, 6), "age": (0, 9)}),
                                 (_user_batch(), torch.tensor([[0.5, float("nan")], [1.0, 2.0]]))),
    "recall_at_k": lambda: (recall_at_k, (torch.tensor([[3, 5, 9], [1, 2, 4]]), torch.tensor([[5, 0], [7, 8]]), 2)),
    "RetrievalMetrics": lambda: (RetrievalMetrics(), (torch.tensor([[3, 5, 9, 2, 8], [1, 2, 4, 6, 7]]),
                                                      torch.tensor([[5, 0], [7, 8]]))),
    "OnlineRetriever": lambda: (_online(), ({**_user_batch(2, seed=19), "seen_items": torch.tensor([[4, 9, 0], [2, 0, 0]])},)),
}
