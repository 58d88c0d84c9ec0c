"""Metric learning and retrieval in the style of MoCo / XBM / pytorch-metric-learning repos:
memory queues, triplet / multi-similarity mining, ArcFace / CosFace / AdaCos / proxy-anchor heads,
temperature schedules, recall@k / mAP, k-reciprocal re-ranking, an id-keyed embedding cache."""
import functools
import logging
import math
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

try:  # optional dependency: most research code falls back to numpy when it is missing
    import faiss  # noqa: F401
    HAS_FAISS = True
except ImportError:
    faiss = None
    HAS_FAISS = False

logger = logging.getLogger("metric_retrieval")
logger.addHandler(logging.NullHandler())

EPS = 1e-12
RECALL_KS = (1, 2, 4)
SIM_CHUNK = 4


@dataclass
class MemoryConfig:
    dim: int = 6
    size: int = 12
    temperature: float = 0.07


@dataclass
class MarginConfig:
    scale: float = 16.0
    margin: float = 0.3
    easy_margin: bool = False


def l2_normalize(x: torch.Tensor, dim: int = -1, eps: float = EPS) -> torch.Tensor:
    return x / x.norm(p=2, dim=dim, keepdim=True).clamp_min(eps)


NORMALIZERS = {"l2": l2_normalize, "none": lambda x: x}


def get_normalizer(name: Optional[str]) -> Callable[[torch.Tensor], torch.Tensor]:
    if name is None:
        return NORMALIZERS["none"]
    return NORMALIZERS.get(name, l2_normalize)


def _check_finite(loss: torch.Tensor, where: str) -> torch.Tensor:
    if not torch.isfinite(loss).all():  # expect: FL000 GB0170
        raise FloatingPointError(f"non-finite loss in {where}")
    return loss


def pairwise_distance(a: torch.Tensor, b: Optional[torch.Tensor] = None, squared: bool = False):
    b = a if b is None else b
    dot = a @ b.t()
    sq = (a.pow(2).sum(1, keepdim=True) - 2.0 * dot + b.pow(2).sum(1).unsqueeze(0)).clamp_min(0.0)
    if squared:
        return sq
    zero = (sq == 0.0).float()
    return torch.sqrt(sq + zero * 1e-16) * (1.0 - zero)


def cosine_similarity_matrix(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return l2_normalize(a) @ l2_normalize(b).t()


SIMILARITIES = {"cosine": cosine_similarity_matrix, "dot": lambda a, b: a @ b.t(),
                "neg_l2": lambda a, b: -pairwise_distance(a, b)}


def same_label_mask(labels: torch.Tensor, other: Optional[torch.Tensor] = None) -> torch.Tensor:
    other = labels if other is None else other
    return labels.unsqueeze(1) == other.unsqueeze(0)


class MoCoQueue(nn.Module):
    def __init__(self, cfg: MemoryConfig = MemoryConfig()):
        super().__init__()
        self.cfg = cfg
        self.register_buffer("queue", l2_normalize(torch.ones(cfg.size, cfg.dim)))
        self.ptr = 0

    @torch.no_grad()
    def _dequeue_and_enqueue(self, keys: torch.Tensor) -> None:
        end = self.ptr + keys.shape[0]
        self.queue[self.ptr:end] = keys
        self.ptr = end % self.cfg.size  # expect: FL302

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        q, k = l2_normalize(q), l2_normalize(k)
        l_pos = (q * k).sum(dim=1, keepdim=True)
        l_neg = q @ self.queue.clone().detach().t()
        logits = torch.cat([l_pos, l_neg], dim=1) / self.cfg.temperature
        self._dequeue_and_enqueue(k)
        return logits


class MoCoV2Queue(nn.Module):
    """The reference MoCo code keeps the pointer in a long buffer so it survives state_dict()."""

    def __init__(self, cfg: MemoryConfig = MemoryConfig()):
        super().__init__()
        self.K, self.T = cfg.size, cfg.temperature
        self.register_buffer("queue", F.normalize(torch.arange(cfg.size * cfg.dim, dtype=torch.float32)
                                                  .reshape(cfg.dim, cfg.size).sin(), dim=0))
        self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

    @torch.no_grad()
    def _dequeue_and_enqueue(self, keys):
        batch_size = keys.shape[0]
        ptr = int(self.queue_ptr)  # expect: FL000 GB0124
        assert self.K % batch_size == 0, "queue size must be divisible by the batch size"
        self.queue[:, ptr:ptr + batch_size] = keys.T
        self.queue_ptr[0] = (ptr + batch_size) % self.K

    def forward(self, q, k):
        q, k = F.normalize(q, dim=1), F.normalize(k, dim=1)
        l_pos = torch.einsum("nc,nc->n", [q, k]).unsqueeze(-1)
        l_neg = torch.einsum("nc,ck->nk", [q, self.queue.clone().detach()])
        logits = torch.cat([l_pos, l_neg], dim=1) / self.T
        labels = torch.zeros(logits.shape[0], dtype=torch.long)
        self._dequeue_and_enqueue(k)
        return F.cross_entropy(logits, labels)


class CrossBatchMemory(nn.Module):
    def __init__(self, cfg: MemoryConfig = MemoryConfig(), margin: float = 0.5):
        super().__init__()
        self.size, self.margin = cfg.size, margin
        self.register_buffer("feats", torch.zeros(cfg.size, cfg.dim))
        self.register_buffer("targets", torch.full((cfg.size,), -1, dtype=torch.long))
        self.register_buffer("ptr", torch.zeros((), dtype=torch.long))

    @torch.no_grad()
    def enqueue_dequeue(self, feats: torch.Tensor, targets: torch.Tensor) -> None:
        idx = (self.ptr + torch.arange(feats.size(0))) % self.size
        self.feats.index_copy_(0, idx, feats.detach())
        self.targets.index_copy_(0, idx, targets)
        self.ptr.add_(feats.size(0)).remainder_(self.size)

    def contrastive(self, x, y, mem_x, mem_y):
        sim = x @ mem_x.t()
        valid = (mem_y >= 0).unsqueeze(0)
        same = same_label_mask(y, mem_y)
        pos, neg = same & valid, ~same & valid
        pos_loss = ((1.0 - sim) * pos).sum(1)
        neg_loss = ((sim - self.margin).clamp_min(0.0) * neg).sum(1)
        return (pos_loss + neg_loss).mean()

    def forward(self, feats, targets):
        feats = l2_normalize(feats)
        loss = self.contrastive(feats, targets, feats, targets)
        self.enqueue_dequeue(feats, targets)
        return _check_finite(loss + self.contrastive(feats, targets, self.feats, self.targets), "xbm")


def _masked_max(x: torch.Tensor, mask: torch.Tensor, dim: int = 1) -> torch.Tensor:
    low = x.min(dim, keepdim=True).values
    return ((x - low) * mask).max(dim, keepdim=True).values + low


def _masked_min(x: torch.Tensor, mask: torch.Tensor, dim: int = 1) -> torch.Tensor:
    high = x.max(dim, keepdim=True).values
    return ((x - high) * mask).min(dim, keepdim=True).values + high


@torch.compile
def batch_hard_triplet_loss(emb: torch.Tensor, labels: torch.Tensor, margin: float = 0.2,
                            normalize: str = "l2"):
    emb = get_normalizer(normalize)(emb)
    dist = pairwise_distance(emb)
    same = same_label_mask(labels)
    eye = torch.eye(labels.size(0), dtype=torch.bool)
    hardest_pos = (dist * (same & ~eye).float()).max(1).values
    hardest_neg = (dist + dist.max() * same.float()).min(1).values
    return _check_finite(F.relu(hardest_pos - hardest_neg + margin).mean(), "batch_hard")


def semi_hard_triplet_loss(emb, labels, margin: float = 0.2):
    """Port of tf.contrib.losses.metric_learning.triplet_semihard_loss."""
    dist = pairwise_distance(emb, squared=True)
    adjacency = same_label_mask(labels)
    n = labels.size(0)
    dist_tile = dist.repeat(n, 1)
    mask = (~adjacency).repeat(n, 1) & (dist_tile > dist.t().reshape(-1, 1))
    mask_final = (mask.float().sum(1, keepdim=True) > 0.0).reshape(n, n).t()
    neg_outside = _masked_min(dist_tile, mask.float()).reshape(n, n).t()
    neg_inside = _masked_max(dist, (~adjacency).float()).repeat(1, n)
    semi_hard = torch.where(mask_final, neg_outside, neg_inside)
    loss_mat = margin + dist - semi_hard
    mask_pos = adjacency.float() - torch.eye(n)
    loss = (loss_mat.clamp_min(0.0) * mask_pos).sum() / mask_pos.sum().clamp_min(1.0)
    return _check_finite(loss, "semi_hard")


semi_hard_triplet = torch.compile(semi_hard_triplet_loss)


class MultiSimilarityLoss(nn.Module):
    def __init__(self, thresh=0.5, margin=0.1, scale_pos=2.0, scale_neg=40.0):
        super().__init__()
        self.thresh, self.margin = thresh, margin
        self.scale_pos, self.scale_neg = scale_pos, scale_neg

    def _anchor_loss(self, sim_row, pos_mask, neg_mask):
        pos_pair_ = sim_row[pos_mask]  # expect: FL000 GB0036
        pos_pair_ = pos_pair_[pos_pair_ < 1 - 1e-5]  # expect: FL000 GB0036
        neg_pair_ = sim_row[neg_mask]  # expect: FL000 GB0036
        neg_pair = neg_pair_[neg_pair_ + self.margin > pos_pair_.min()]  # expect: FL000 GB0036
        pos_pair = pos_pair_[pos_pair_ - self.margin < neg_pair_.max()]  # expect: FL000 GB0036
        if len(neg_pair) < 1 or len(pos_pair) < 1:
            return None
        pos_loss = 1.0 / self.scale_pos * torch.log(1 + torch.sum(torch.exp(-self.scale_pos * (pos_pair - self.thresh))))
        neg_loss = 1.0 / self.scale_neg * torch.log(1 + torch.sum(torch.exp(self.scale_neg * (neg_pair - self.thresh))))
        return pos_loss + neg_loss

    def forward(self, feats, labels):
        assert feats.size(0) == labels.size(0), \
            f"feats.size(0): {feats.size(0)} is not equal to labels.size(0): {labels.size(0)}"
        sim_mat = cosine_similarity_matrix(feats, feats)
        same = same_label_mask(labels)
        losses = []
        for i in range(feats.size(0)):
            loss = self._anchor_loss(sim_mat[i], same[i], ~same[i])
            if loss is not None:
                losses.append(loss)
        if not losses:
            return torch.zeros([], requires_grad=True)
        return sum(losses) / feats.size(0)


class ArcFaceHead(nn.Module):
    def __init__(self, in_features=6, out_features=4, cfg: MarginConfig = MarginConfig()):
        super().__init__()
        self.cfg = cfg
        w = torch.linspace(-1.0, 1.0, out_features * in_features).reshape(out_features, in_features)
        self.weight = nn.Parameter(w.cos())
        self.cos_m, self.sin_m = math.cos(cfg.margin), math.sin(cfg.margin)
        self.th = math.cos(math.pi - cfg.margin)
        self.mm = math.sin(math.pi - cfg.margin) * cfg.margin

    def _apply_margin(self, cosine: torch.Tensor) -> torch.Tensor:
        sine = torch.sqrt((1.0 - cosine.pow(2)).clamp(0, 1))
        phi = cosine * self.cos_m - sine * self.sin_m
        if self.cfg.easy_margin:
            return torch.where(cosine > 0, phi, cosine)
        return torch.where(cosine > self.th, phi, cosine - self.mm)

    def forward(self, x, label):
        cosine = F.linear(F.normalize(x), F.normalize(self.weight))
        phi = self._apply_margin(cosine)
        one_hot = torch.zeros_like(cosine).scatter_(1, label.view(-1, 1).long(), 1)
        output = one_hot * phi + (1.0 - one_hot) * cosine
        return output * self.cfg.scale


class CosFaceHead(ArcFaceHead):
    def _apply_margin(self, cosine):
        return cosine - self.cfg.margin


class AdaCosHead(nn.Module):
    """AdaCos (Zhang et al. 2019): the scale is re-estimated from every training batch."""

    def __init__(self, num_features=6, num_classes=4):
        super().__init__()
        self.n_classes = num_classes
        self.s = math.sqrt(2) * math.log(num_classes - 1)
        self.W = nn.Parameter(torch.linspace(0.1, 1.0, num_classes * num_features).reshape(num_classes, num_features))

    def forward(self, x, label):
        logits = F.linear(F.normalize(x), F.normalize(self.W))
        theta = torch.acos(torch.clamp(logits, -1.0 + 1e-7, 1.0 - 1e-7))
        one_hot = F.one_hot(label, self.n_classes).float()
        with torch.no_grad():
            B_avg = torch.where(one_hot < 1, torch.exp(self.s * logits), torch.zeros_like(logits))
            B_avg = torch.sum(B_avg) / x.size(0)
            theta_med = torch.median(theta[one_hot == 1])  # expect: FL000 GB0036
            self.s = torch.log(B_avg) / torch.cos(torch.min(math.pi / 4 * torch.ones_like(theta_med), theta_med))  # expect: FL302
        return self.s * logits


class ProxyAnchorLoss(nn.Module):
    def __init__(self, nb_classes=4, sz_embed=6, mrg=0.1, alpha=32):
        super().__init__()
        g = torch.Generator().manual_seed(3)
        self.proxies = nn.Parameter(torch.randn(nb_classes, sz_embed, generator=g))
        self.nb_classes, self.mrg, self.alpha = nb_classes, mrg, alpha

    def forward(self, X, T):
        cos = F.linear(l2_normalize(X), l2_normalize(self.proxies))
        P_one_hot = F.one_hot(T, self.nb_classes).float()
        N_one_hot = 1 - P_one_hot
        pos_exp = torch.exp(-self.alpha * (cos - self.mrg))
        neg_exp = torch.exp(self.alpha * (cos + self.mrg))
        with_pos_proxies = torch.nonzero(P_one_hot.sum(dim=0) != 0).squeeze(dim=1)  # expect: FL000 GB0036
        num_valid_proxies = len(with_pos_proxies)
        P_sim_sum = torch.where(P_one_hot == 1, pos_exp, torch.zeros_like(pos_exp)).sum(dim=0)
        N_sim_sum = torch.where(N_one_hot == 1, neg_exp, torch.zeros_like(neg_exp)).sum(dim=0)
        pos_term = torch.log(1 + P_sim_sum).sum() / num_valid_proxies
        neg_term = torch.log(1 + N_sim_sum).sum() / self.nb_classes
        return pos_term + neg_term


def make_temperature_schedule(kind: str, t_start: float, t_end: float, total: int):
    def cosine(step: int) -> float:
        progress = min(step, total) / total
        return t_end + 0.5 * (t_start - t_end) * (1.0 + math.cos(math.pi * progress))

    schedules = {"cosine": cosine, "const": lambda step: t_start}
    return schedules[kind]


class ScheduledInfoNCE(nn.Module):
    def __init__(self, kind="cosine", t_start=0.2, t_end=0.05, total_steps=100):
        super().__init__()
        self.schedule = make_temperature_schedule(kind, t_start, t_end, total_steps)
        self.global_step = 0
        self.callbacks: List[Callable[[], None]] = [self._advance]

    def _advance(self):
        self.global_step += 1  # expect: FL302

    @property
    def temperature(self) -> float:
        return self.schedule(self.global_step)

    def forward(self, z1, z2):
        z1, z2 = l2_normalize(z1), l2_normalize(z2)
        logits = z1 @ z2.t() / self.temperature
        targets = torch.arange(z1.size(0))
        loss = 0.5 * (F.cross_entropy(logits, targets) + F.cross_entropy(logits.t(), targets))
        for cb in self.callbacks:
            cb()
        return loss


class MLPEmbedder(nn.Module):
    def __init__(self, in_dim=5, dim=6, normalize="l2"):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(in_dim, 8), nn.ReLU(), nn.Linear(8, dim))
        self.normalize = get_normalizer(normalize)

    def embed(self, x):
        return self.trunk(x)

    def forward(self, x):
        return self.normalize(self.embed(x))


class GeMEmbedder(MLPEmbedder):
    def __init__(self, channels=3, dim=6, p=3.0, max_side=7):
        super().__init__(in_dim=channels, dim=dim)
        self.p = nn.Parameter(torch.ones(1) * p)
        self.max_side = max_side

    def embed(self, x):
        if x.size(-1) > self.max_side:  # expect: FL301
            x = F.avg_pool2d(x, 2)
        pooled = F.avg_pool2d(x.clamp(min=1e-6).pow(self.p), (x.size(-2), x.size(-1)))
        return super().embed(pooled.pow(1.0 / self.p).flatten(1))


def recall_at_k(sim, q_labels, g_labels, ks=RECALL_KS) -> Dict[int, torch.Tensor]:
    topk = sim.topk(max(ks), dim=1).indices
    match = g_labels[topk] == q_labels.unsqueeze(1)
    return {k: match[:, :k].any(dim=1).float().mean() for k in ks}


def _format_metrics(metrics: Dict[int, torch.Tensor], prefix="R@") -> Dict[str, float]:
    return {f"{prefix}{k}": round(v.item() * 100.0, 2) for k, v in metrics.items()}  # expect: FL000 GB0092; FL000 GB0124


@torch.compile
def evaluate_retrieval(queries, gallery, q_labels, g_labels, metric="cosine", ks=RECALL_KS):
    sim = SIMILARITIES[metric](queries, gallery)
    metrics = recall_at_k(sim, q_labels, g_labels, ks)
    return _format_metrics(metrics)


@torch.compile(dynamic=True)
def in_batch_retrieval(emb, labels, k: int = 4):
    n = emb.size(0)
    if n <= k:  # expect: FL301
        k = n - 1
    sim = cosine_similarity_matrix(emb, emb)
    sim = sim - 2.0 * torch.eye(n)
    scores, idx = sim.topk(k, dim=1)
    return scores, (labels[idx] == labels.unsqueeze(1)).float().mean(1)


@torch.compile(dynamic=True)
def chunked_similarity(queries, gallery, chunk: int = SIM_CHUNK):
    q = l2_normalize(queries)
    parts = []
    for start in range(0, gallery.size(0), chunk):  # expect: FL301
        parts.append(q @ l2_normalize(gallery[start:start + chunk]).t())
    return torch.cat(parts, dim=1)


@torch.compile
def mean_average_precision(sim, q_labels, g_labels):
    order = sim.argsort(dim=1, descending=True)
    matches = g_labels[order] == q_labels.unsqueeze(1)
    aps = []
    for i in range(matches.size(0)):
        num_rel = matches[i].sum()
        if num_rel == 0:  # expect: FL000 GB0170
            continue
        hits = matches[i].float()
        precision = hits.cumsum(0) / torch.arange(1, hits.numel() + 1)
        aps.append((precision * hits).sum() / num_rel)
    return torch.stack(aps).mean() if aps else sim.new_zeros(())


def _k_reciprocal_neigh(initial_rank: torch.Tensor, i: int, k1: int) -> torch.Tensor:
    forward_k = initial_rank[i, : k1 + 1]
    backward_k = initial_rank[forward_k, : k1 + 1]
    fi = torch.nonzero(backward_k == i)[:, 0]  # expect: FL000 GB0036
    return forward_k[fi]


@torch.compile
def k_reciprocal_rerank(q_g_dist, q_q_dist, g_g_dist, k1: int = 3, lambda_value: float = 0.3):
    """A compact torch port of Zhong et al.'s re-ranking (jaccard + original distance)."""
    num_q = q_g_dist.size(0)
    original = torch.cat([torch.cat([q_q_dist, q_g_dist], 1),
                          torch.cat([q_g_dist.t(), g_g_dist], 1)], 0)
    original = original / original.max(dim=0, keepdim=True).values
    initial_rank = original.argsort(dim=1)
    all_num = original.size(0)
    V = torch.zeros_like(original)
    for i in range(all_num):
        expansion = _k_reciprocal_neigh(initial_rank, i, k1)
        weight = torch.exp(-original[i, expansion])
        V[i, expansion] = weight / weight.sum()
    jaccard = torch.zeros(num_q, all_num)
    for i in range(num_q):
        min_part = torch.minimum(V[i].unsqueeze(0), V).sum(1)
        jaccard[i] = 1 - min_part / (2 - min_part)
    final = jaccard * (1 - lambda_value) + original[:num_q] * lambda_value
    return final[:, num_q:]


def _numpy_knn(gallery, queries, k):
    g, q = (t.detach().cpu().numpy().astype(np.float32) for t in (gallery, queries))
    g, q = (a / (np.linalg.norm(a, axis=1, keepdims=True) + 1e-12) for a in (g, q))
    sims = q @ g.T
    idx = np.argsort(-sims, axis=1)[:, :k]
    return torch.from_numpy(np.take_along_axis(sims, idx, axis=1)), torch.from_numpy(idx)


def _faiss_knn(gallery, queries, k):
    index = faiss.IndexFlatIP(gallery.size(1))
    index.add(F.normalize(gallery).numpy())
    scores, idx = index.search(F.normalize(queries).numpy(), k)
    return torch.from_numpy(scores), torch.from_numpy(idx)


SEARCH_BACKENDS = {"numpy": _numpy_knn, "faiss": _faiss_knn}


@torch.compile
def search_gallery(gallery, queries, k: int = 3, backend: str = "faiss"):
    if backend == "faiss" and not HAS_FAISS:
        logger.debug("faiss is not installed, using the numpy fallback")  # expect: FL000 GB0291
        backend = "numpy"
    search = SEARCH_BACKENDS[backend]
    scores, idx = search(gallery, queries, k)
    return scores * 2.0 - 1.0, idx


class EmbeddingCache:
    def __init__(self, max_items: int = 256):
        self.max_items = max_items
        self._store: Dict[int, torch.Tensor] = {}

    def get_or_compute(self, ids: torch.Tensor, inputs: torch.Tensor, encode: Callable) -> torch.Tensor:
        keys = ids.tolist()  # expect: FL000 GB0033
        missing = [pos for pos, key in enumerate(keys) if key not in self._store]
        if missing:
            fresh = encode(inputs[torch.tensor(missing)])
            for row, pos in enumerate(missing):
                if len(self._store) < self.max_items:
                    self._store[keys[pos]] = fresh[row].detach()  # expect: FL302
        return torch.stack([self._store[key] for key in keys])


@torch.compile
def encode_with_cache(encoder: nn.Module, ids, inputs, cache: EmbeddingCache):
    encode = functools.partial(_encode_normalized, encoder)
    return cache.get_or_compute(ids, inputs, encode)


def _encode_normalized(encoder, x):
    return l2_normalize(encoder(x))


def _randn(*shape, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g)


def _labels(*values):
    return torch.tensor(values, dtype=torch.long)


_L5 = (0, 1, 0, 2, 1)
_L7 = (0, 1, 0, 2, 1, 2, 3)

CASES = {
    "MoCoQueue": lambda: (MoCoQueue(MemoryConfig(size=15)), (_randn(5, 6), _randn(5, 6, seed=1))),
    "MoCoV2Queue": lambda: (MoCoV2Queue(MemoryConfig(size=10)), (_randn(5, 6), _randn(5, 6, seed=1))),
    "CrossBatchMemory": lambda: (CrossBatchMemory(), (_randn(5, 6), _labels(*_L5))),
    "batch_hard_triplet_loss": lambda: (batch_hard_triplet_loss, (_randn(5, 6), _labels(*_L5))),
    "semi_hard_triplet": lambda: (semi_hard_triplet, (_randn(5, 6), _labels(*_L5))),
    "MultiSimilarityLoss": lambda: (MultiSimilarityLoss(), (_randn(5, 6), _labels(0, 1, 0, 1, 1))),
    "ArcFaceHead": lambda: (ArcFaceHead(), (_randn(5, 6), _labels(*_L5))),
    "CosFaceHead": lambda: (CosFaceHead(cfg=MarginConfig(margin=0.35)), (_randn(5, 6), _labels(*_L5))),
    "AdaCosHead": lambda: (AdaCosHead(), (_randn(5, 6), _labels(*_L5))),
    "ProxyAnchorLoss": lambda: (ProxyAnchorLoss(), (_randn(5, 6), _labels(*_L5))),
    "ScheduledInfoNCE": lambda: (ScheduledInfoNCE(), (_randn(5, 6), _randn(5, 6, seed=1))),
    "MLPEmbedder": lambda: (MLPEmbedder(), (_randn(3, 5),)),
    "GeMEmbedder": lambda: (GeMEmbedder(), (_randn(2, 3, 5, 6).abs(),), (_randn(2, 3, 9, 10).abs(),)),
    "evaluate_retrieval": lambda: (evaluate_retrieval, (_randn(3, 6), _randn(7, 6, seed=1), _labels(0, 1, 2), _labels(*_L7))),
    "in_batch_retrieval": lambda: (in_batch_retrieval, (_randn(7, 6), _labels(*_L7)),
                                   (_randn(3, 5), _labels(0, 1, 0))),
    "chunked_similarity": lambda: (chunked_similarity, (_randn(3, 6), _randn(7, 6, seed=1)),
                                   (_randn(2, 5), _randn(10, 5, seed=1))),
    "mean_average_precision": lambda: (mean_average_precision, (_randn(3, 7), _labels(0, 1, 4), _labels(*_L7))),
    "k_reciprocal_rerank": lambda: (k_reciprocal_rerank, (_randn(2, 4).abs(), _randn(2, 2, seed=1).abs(), _randn(4, 4, seed=2).abs())),
    "search_gallery": lambda: (search_gallery, (_randn(7, 6), _randn(3, 6, seed=1))),
    "encode_with_cache": lambda: (encode_with_cache, (MLPEmbedder(), _labels(4, 9, 2), _randn(3, 5), EmbeddingCache())),
}
