"""Retrieval-augmented LMs in the style of DPR / ColBERT / FiD / kNN-LM research repos: dual-encoder
towers, an in-memory dense index with exact and chunked top-k, late interaction, re-rankers on a
common scorer base class, fusion-in-decoder readers, kNN-LM interpolation, an LRU embedding cache
keyed by token ids, rank fusion, metrics and padding / batching helpers."""
import functools
import logging
import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("rag")
logger.addHandler(logging.NullHandler())

VOCAB = 29
HIDDEN = 12
PAD_ID = 0
SEP_ID = 2
NEG_INF = -1e4
INDEX_CHUNK = 8
MAX_PASSAGE_LEN = 6
LOG_EVERY = 2


@dataclass
class RetrieverConfig:
    vocab_size: int = VOCAB
    hidden: int = HIDDEN
    proj_dim: int = 8
    pooling: str = "mean"
    normalize: bool = True
    temperature: float = 0.05
    share_towers: bool = False

    @property
    def scale(self) -> float:
        return 1.0 / self.temperature


@dataclass
class ReaderConfig:
    hidden: int = HIDDEN
    heads: int = 2
    n_passages: int = 3
    knn_k: int = 4
    knn_lambda: float = 0.25
    knn_temperature: float = 1.0


# --------------------------------------------------------------------------- small utilities

def attention_mask_from_ids(ids: torch.Tensor, pad_id: int = PAD_ID) -> torch.Tensor:
    return ids.ne(pad_id)


def masked_mean(hidden, mask):
    mask = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp_min(1e-6)


def max_pool(hidden, mask):
    return hidden.masked_fill(~mask.unsqueeze(-1), NEG_INF).amax(1)


POOLERS: Dict[str, Callable] = {"mean": masked_mean, "max": max_pool, "cls": lambda h, m: h[:, 0]}


def get_pooler(name: str) -> Callable:
    try:
        return POOLERS[name]
    except KeyError:
        logger.warning("unknown pooling %r, falling back to mean", name)
        return masked_mean


def dot_sim(q, d):
    return q @ d.transpose(-1, -2)


def cos_sim(q, d):
    return F.normalize(q, dim=-1) @ F.normalize(d, dim=-1).transpose(-1, -2)


SIMILARITIES = {"ip": dot_sim, "cos": cos_sim}


def temperature_scale(scores, t: float = 1.0):
    return scores / t


def minmax_norm(s):
    lo = s.amin(-1, keepdim=True)
    span = s.amax(-1, keepdim=True) - lo
    if (span < 1e-6).any():  # a constant row (e.g. BM25 found nothing): keep it flat  # expect: FL000 GB0170
        return torch.zeros_like(s)
    return (s - lo) / span


NORMALIZERS = {"minmax": minmax_norm, "sigmoid": torch.sigmoid}


def pad_sequences(seqs: Sequence[torch.Tensor], pad: int = PAD_ID, max_len: Optional[int] = None):
    max_len = max_len or max(s.shape[0] for s in seqs)
    out = seqs[0].new_full((len(seqs), max_len), pad)
    for i, s in enumerate(seqs):
        n = min(s.shape[0], max_len)
        out[i, :n] = s[:n]
    return out


def iter_batches(x: torch.Tensor, batch_size: int):
    for start in range(0, x.shape[0], batch_size):
        yield x[start:start + batch_size]


def merge_topk(best_s, best_i, s, i, k):
    if best_s is None:
        return s, i
    cat_s, cat_i = torch.cat([best_s, s], dim=-1), torch.cat([best_i, i], dim=-1)
    top_s, pos = cat_s.topk(k, dim=-1)
    return top_s, cat_i.gather(-1, pos)


# --------------------------------------------------------------------------- encoders

class TextTower(nn.Module):
    """Bag-of-embeddings encoder with one residual MLP and a pooling head (one DPR tower)."""

    def __init__(self, cfg: Optional[RetrieverConfig] = None):
        super().__init__()
        self.cfg = cfg or RetrieverConfig()
        self.embed = nn.Embedding(self.cfg.vocab_size, self.cfg.hidden, padding_idx=PAD_ID)
        self.mix = nn.Sequential(nn.Linear(self.cfg.hidden, self.cfg.hidden), nn.GELU())
        self.proj = nn.Linear(self.cfg.hidden, self.cfg.proj_dim, bias=False)
        self.pool = get_pooler(self.cfg.pooling)

    def forward(self, ids):
        mask = attention_mask_from_ids(ids)
        h = self.embed(ids)
        h = h + self.mix(h)
        out = self.proj(self.pool(h, mask))
        if self.cfg.normalize:
            out = F.normalize(out, dim=-1)
        return out


def in_batch_accuracy(scores, labels) -> float:
    return (scores.argmax(-1) == labels).float().mean().item()  # expect: FL000 GB0124


class DualEncoder(nn.Module):
    """DPR-style bi-encoder trained with in-batch negatives (+ hard negatives per query)."""

    def __init__(self, cfg: Optional[RetrieverConfig] = None):
        super().__init__()
        self.cfg = cfg or RetrieverConfig()
        self.query_tower = TextTower(self.cfg)
        self.passage_tower = self.query_tower if self.cfg.share_towers else TextTower(self.cfg)

    def forward(self, q_ids, p_ids):
        q, p = self.query_tower(q_ids), self.passage_tower(p_ids)
        per_query = p.shape[0] // q.shape[0]
        scores = dot_sim(q, p) * self.cfg.scale
        labels = torch.arange(q.shape[0], device=q.device) * per_query
        return {"loss": F.cross_entropy(scores, labels), "acc": in_batch_accuracy(scores, labels)}


# --------------------------------------------------------------------------- index / search

class DenseIndex:
    """Flat in-memory index (what faiss.IndexFlatIP does, minus faiss)."""

    def __init__(self, dim: int, metric: str = "ip"):
        self.dim, self.metric = dim, metric
        self.vectors = torch.empty(0, dim)
        self.doc_ids: List[str] = []

    def add(self, vecs: torch.Tensor, ids: Sequence[str]) -> None:
        assert vecs.shape[-1] == self.dim, f"expected dim {self.dim}, got {vecs.shape[-1]}"
        self.vectors = torch.cat([self.vectors, vecs.detach()], dim=0)
        self.doc_ids.extend(ids)

    @classmethod
    def from_vectors(cls, vecs: torch.Tensor, metric: str = "ip") -> "DenseIndex":
        index = cls(vecs.shape[-1], metric)
        index.add(vecs, [f"doc-{i}" for i in range(vecs.shape[0])])
        return index

    def __len__(self) -> int:
        return self.vectors.shape[0]

    def search(self, q, k: int):
        k = min(k, len(self))
        scores = SIMILARITIES[self.metric](q, self.vectors)
        return scores.topk(k, dim=-1)

    def lookup(self, idx: torch.Tensor) -> List[List[str]]:
        return [[self.doc_ids[i] for i in row] for row in idx.tolist()]  # expect: FL000 GB0033


@torch.compile
def retrieve_documents(index: DenseIndex, q, k: int = 3):
    scores, idx = index.search(q, k)
    return scores, index.lookup(idx)


@torch.compile
def chunked_topk(q, corpus, k: int = 3, chunk: int = INDEX_CHUNK):
    """Exact top-k over a corpus too large for one matmul, merged block by block."""
    best_s, best_i = None, None
    for start in range(0, corpus.shape[0], chunk):  # expect: FL301
        s = dot_sim(q, corpus[start:start + chunk])
        s, i = s.topk(k, dim=-1)
        best_s, best_i = merge_topk(best_s, best_i, s, i + start, k)
    return best_s, best_i


class TopKRetriever(nn.Module):
    """Holds passage embeddings as a buffer and applies a chain of score hooks."""

    def __init__(self, passage_emb, metric: str = "cos", hooks: Optional[List[Callable]] = None):
        super().__init__()
        self.register_buffer("passage_emb", passage_emb)
        self.similarity = SIMILARITIES[metric]
        self.hooks = hooks or [functools.partial(temperature_scale, t=0.5)]
        self.num_searches = 0

    def forward(self, q, k: int = 4):
        scores = self.similarity(q, self.passage_emb)
        for hook in self.hooks:
            scores = hook(scores)
        self.num_searches += 1  # expect: FL302
        top, idx = scores.topk(k, dim=-1)
        return top.softmax(-1), idx


# --------------------------------------------------------------------------- re-ranking

class PassageScorer(nn.Module):
    """Scores one query against N candidate passages and returns them best-first."""

    def __init__(self, cfg: Optional[RetrieverConfig] = None, min_score: Optional[float] = None):
        super().__init__()
        self.cfg = cfg or RetrieverConfig(proj_dim=HIDDEN)
        self.encoder = TextTower(self.cfg)
        self.min_score = min_score

    def score(self, q_ids, p_ids):
        q = self.encoder(q_ids[None])
        return (q * self.encoder(p_ids)).sum(-1) * self.cfg.scale

    def forward(self, q_ids, p_ids):
        logits = self.score(q_ids, p_ids)
        order = logits.argsort(dim=-1, descending=True)
        ranked = logits.gather(-1, order)
        if self.min_score is not None:
            keep = ranked > self.min_score
            return ranked[keep], order[keep]  # expect: FL000 GB0036
        return ranked, order


class CrossEncoderReranker(PassageScorer):
    """monoBERT-style: query and passage concatenated, one logit from the [CLS] position."""

    def __init__(self, min_score: Optional[float] = None):
        super().__init__(RetrieverConfig(proj_dim=HIDDEN, pooling="cls", normalize=False), min_score)
        self.head = nn.Linear(HIDDEN, 1)

    def score(self, q_ids, p_ids):
        n = p_ids.shape[0]
        sep = p_ids.new_full((n, 1), SEP_ID)
        pairs = torch.cat([q_ids.expand(n, -1), sep, p_ids], dim=1)
        return self.head(self.encoder(pairs)).squeeze(-1)


@torch.compile
def prepare_passages(p_ids, max_len: int = MAX_PASSAGE_LEN):
    if p_ids.shape[1] > max_len:  # expect: FL301
        p_ids = p_ids[:, :max_len]
    mask = attention_mask_from_ids(p_ids)
    return p_ids * mask, mask.sum(-1)


@torch.compile
def hybrid_scores(dense, sparse, alpha: float = 0.6, norm: str = "minmax"):
    normalize = NORMALIZERS.get(norm, minmax_norm)
    dense, sparse = (normalize(s) for s in (dense, sparse))
    return alpha * dense + (1 - alpha) * sparse


@torch.compile
def mine_hard_negatives(q_emb, p_emb, positives, n_neg: int = 2, margin: float = 0.1):
    scores = dot_sim(q_emb, p_emb)
    pos = scores.gather(1, positives[:, None])
    scores = scores.masked_fill(F.one_hot(positives, p_emb.shape[0]).bool(), NEG_INF)
    scores = torch.where(scores > pos - margin, torch.full_like(scores, NEG_INF), scores)
    if (scores > NEG_INF).sum(-1).min() < n_neg:  # expect: FL000 GB0170
        logger.warning("fewer than %d usable negatives for some queries", n_neg)
    return scores.topk(n_neg, dim=-1).indices


# --------------------------------------------------------------------------- readers

class FiDReader(nn.Module):
    """Fusion-in-Decoder: encode (question, passage_j) separately, decode over the concatenation."""

    def __init__(self, cfg: Optional[ReaderConfig] = None):
        super().__init__()
        self.cfg = cfg or ReaderConfig()
        self.embed = nn.Embedding(VOCAB, self.cfg.hidden, padding_idx=PAD_ID)
        d = self.cfg.hidden
        self.encoder = nn.Sequential(nn.Linear(d, d), nn.Tanh())
        self.q, self.kv, self.out = nn.Linear(d, d), nn.Linear(d, 2 * d), nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, VOCAB)

    def _heads(self, x):
        b, t, d = x.shape
        return x.view(b, t, self.cfg.heads, d // self.cfg.heads).transpose(1, 2)

    def encode_passages(self, q_ids, ctx_ids):
        states, masks = [], []
        for j in range(ctx_ids.shape[1]):  # expect: FL301
            x = torch.cat([q_ids, ctx_ids[:, j]], dim=1)
            states.append(self.encoder(self.embed(x)))
            masks.append(attention_mask_from_ids(x))
        return torch.cat(states, dim=1), torch.cat(masks, dim=1)

    def forward(self, q_ids, ctx_ids, dec_ids):
        memory, mask = self.encode_passages(q_ids, ctx_ids)
        x = self.embed(dec_ids)
        k, v = (self._heads(t) for t in self.kv(memory).chunk(2, dim=-1))
        h = F.scaled_dot_product_attention(self._heads(self.q(x)), k, v, attn_mask=mask[:, None, None, :])
        h = self.norm(x + self.out(h.transpose(1, 2).reshape(x.shape)))
        return self.lm_head(h)


class TinyCausalLM(nn.Module):
    """Stand-in LM: embeddings + causal running mean + MLP; exposes its final hidden states."""

    def __init__(self, hidden: int = HIDDEN):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, hidden))
        self.head = nn.Linear(hidden, VOCAB)

    def hidden_states(self, ids):
        e = self.embed(ids)
        steps = torch.arange(1, ids.shape[-1] + 1, device=ids.device, dtype=e.dtype)
        ctx = e.cumsum(-2) / steps[:, None]
        return ctx + self.mlp(ctx)

    def forward(self, ids):
        return self.head(self.hidden_states(ids))


class KNNLM(TinyCausalLM):
    """kNN-LM: p(y|x) = lam * p_knn(y|x) + (1 - lam) * p_lm(y|x) over a (key, next-token) store."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, cfg: Optional[ReaderConfig] = None):
        super().__init__()
        self.cfg = cfg or ReaderConfig()
        self.register_buffer("keys", keys)
        self.register_buffer("values", values)

    def knn_search(self, h):
        d = torch.cdist(h.reshape(-1, h.shape[-1]), self.keys).pow(2)
        return d.topk(self.cfg.knn_k, dim=-1, largest=False)

    def knn_log_probs(self, dists, idx):
        w = torch.softmax(-dists / self.cfg.knn_temperature, dim=-1)
        probs = dists.new_zeros(dists.shape[0], VOCAB)
        probs.scatter_add_(1, self.values[idx], w)
        return probs.clamp_min(1e-10).log()

    def mixing_weight(self, dists) -> float:
        return self.cfg.knn_lambda

    def forward(self, ids):
        h = self.hidden_states(ids)
        lm_lp = F.log_softmax(self.head(h), dim=-1)
        dists, idx = self.knn_search(h)
        knn_lp = self.knn_log_probs(dists, idx).view_as(lm_lp)
        lam = self.mixing_weight(dists)
        return torch.logaddexp(lm_lp + math.log(1 - lam), knn_lp + math.log(lam))


class AdaptiveKNNLM(KNNLM):
    """Trusts the datastore more when the nearest neighbour is close (He et al. style)."""

    def __init__(self, *args, confident_dist: float = 4.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.confident_dist = confident_dist

    def mixing_weight(self, dists) -> float:
        nearest = dists[:, 0].mean().item()  # expect: FL000 GB0124
        if nearest < self.confident_dist:
            return min(0.9, self.cfg.knn_lambda * 2)
        return self.cfg.knn_lambda / 2


class RetrievalAugmentedLM(nn.Module):
    """RAG-ish: retrieve with the query tower, read with FiD, return logits + doc log-probs."""

    def __init__(self, passage_emb, passage_ids, cfg: Optional[ReaderConfig] = None):
        super().__init__()
        self.cfg = cfg or ReaderConfig()
        self.query_encoder = TextTower(RetrieverConfig())
        self.reader = FiDReader(self.cfg)
        self.register_buffer("passage_emb", passage_emb)
        self.register_buffer("passage_ids", passage_ids)

    def retrieve(self, q_ids):
        q = self.query_encoder(q_ids)
        scores = dot_sim(q, self.passage_emb)
        top, idx = scores.topk(self.cfg.n_passages, dim=-1)
        if logger.isEnabledFor(logging.DEBUG):  # expect: FL000 GB0291
            logger.debug("retrieved passages %s", idx.tolist())
        return F.log_softmax(top, dim=-1), self.passage_ids[idx]

    def forward(self, q_ids, dec_ids):
        doc_logp, ctx_ids = self.retrieve(q_ids)
        logits = self.reader(q_ids, ctx_ids, dec_ids)
        return logits, doc_logp


# --------------------------------------------------------------------------- caching / batching

class EmbeddingCache:
    """LRU cache of query embeddings keyed by the token ids (queries repeat a lot in eval)."""

    def __init__(self, encoder: nn.Module, capacity: int = 16):
        self.encoder = encoder
        self.capacity = capacity
        self._store: "OrderedDict[Tuple[int, ...], torch.Tensor]" = OrderedDict()

    @staticmethod
    def key(row: torch.Tensor) -> Tuple[int, ...]:
        return tuple(row.tolist())  # expect: FL000 GB0033

    def encode(self, ids):
        keys = [self.key(row) for row in ids]
        missing = [i for i, k in enumerate(keys) if k not in self._store]
        if missing:
            fresh = self.encoder(ids[missing])
            for j, i in enumerate(missing):
                self._store[keys[i]] = fresh[j].detach()  # expect: FL302
            while len(self._store) > self.capacity:
                self._store.popitem(last=False)
        return torch.stack([self._store[k] for k in keys])


@torch.compile
def cached_query_scores(cache: EmbeddingCache, q_ids, passage_emb):
    q = cache.encode(q_ids)
    return dot_sim(q, passage_emb).log_softmax(-1)


@torch.compile
def collate_retrieval_batch(queries: List[torch.Tensor], passages: List[List[torch.Tensor]]):
    q = pad_sequences(queries)
    flat = [p for group in passages for p in group]
    p = pad_sequences(flat, max_len=MAX_PASSAGE_LEN).view(len(queries), len(passages[0]), -1)
    return q, p, attention_mask_from_ids(p)


@torch.compile
def encode_corpus(encoder: nn.Module, passage_ids, batch_size: int = 4):
    embs = []
    for step, batch in enumerate(iter_batches(passage_ids, batch_size)):
        embs.append(encoder(batch))
        if step % LOG_EVERY == 0:
            logger.info("encoded %d passages", sum(e.shape[0] for e in embs))  # expect: FL000 GB0291
    return torch.cat(embs, dim=0)


@torch.compile
def retrieval_metrics(scores, gold, ks: Tuple[int, ...] = (1, 3)):
    ranked = scores.argsort(dim=-1, descending=True).cpu().numpy()
    gold_np = gold.cpu().numpy()
    out = {}
    for k in ks:
        hits = (ranked[:, :k] == gold_np[:, None]).any(axis=1)
        out[f"recall@{k}"] = float(hits.mean())  # expect: FL000 GB0033
    first_hit = np.argmax(ranked == gold_np[:, None], axis=1)
    out["mrr"] = float((1.0 / (first_hit + 1)).mean())
    return out


# --------------------------------------------------------------------------- cases

def _ids(*shape, seed: int = 0, pad_tail: int = 0):
    ids = torch.randint(3, VOCAB, shape, generator=torch.Generator().manual_seed(seed))
    if pad_tail:
        ids[..., -pad_tail:] = PAD_ID
    return ids


def _vecs(*shape, seed: int = 0, normalize: bool = False):
    v = torch.randn(*shape, generator=torch.Generator().manual_seed(seed))
    return F.normalize(v, dim=-1) if normalize else v


def _seeded(module: nn.Module, seed: int = 0, std: float = 0.3) -> nn.Module:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * std)
    return module


def _knnlm(cls=KNNLM, n_keys: int = 23, **kwargs):
    values = torch.randint(3, VOCAB, (n_keys,), generator=torch.Generator().manual_seed(6))
    return _seeded(cls(_vecs(n_keys, HIDDEN, seed=7), values, **kwargs), seed=5)


CASES = {
    "TextTower": lambda: (_seeded(TextTower()), (_ids(3, 7, pad_tail=2),)),
    "DualEncoder": lambda: (_seeded(DualEncoder(), seed=1), (_ids(3, 5, seed=1), _ids(6, 7, seed=2, pad_tail=2))),
    "retrieve_documents": lambda: (retrieve_documents, (DenseIndex.from_vectors(_vecs(11, 8, seed=3, normalize=True)), _vecs(2, 8, seed=4), 3)),
    "chunked_topk": lambda: (chunked_topk, (_vecs(2, 5, seed=1), _vecs(19, 5, seed=2)),
                             (_vecs(2, 5, seed=1), _vecs(27, 5, seed=2))),
    "TopKRetriever": lambda: (TopKRetriever(_vecs(11, 6, seed=3)), (_vecs(3, 6, seed=4),)),
    "PassageScorer": lambda: (_seeded(PassageScorer(), seed=2), (_ids(4, seed=1), _ids(5, 6, seed=2, pad_tail=1))),
    "CrossEncoderReranker": lambda: (_seeded(CrossEncoderReranker(min_score=0.0), seed=3),
                                     (_ids(4, seed=1), _ids(5, 6, seed=2, pad_tail=1))),
    "prepare_passages": lambda: (prepare_passages, (_ids(3, 9, pad_tail=2),), (_ids(3, 5, pad_tail=1),)),
    "hybrid_scores": lambda: (hybrid_scores, (_vecs(3, 7, seed=1), _vecs(3, 7, seed=2).abs())),
    "mine_hard_negatives": lambda: (mine_hard_negatives, (_vecs(3, 8, seed=1, normalize=True),
                                                          _vecs(10, 8, seed=2, normalize=True), torch.tensor([0, 4, 7]))),
    "FiDReader": lambda: (_seeded(FiDReader(), seed=5), (_ids(2, 4), _ids(2, 3, 5, seed=1, pad_tail=1), _ids(2, 6, seed=2)),
                          (_ids(2, 4), _ids(2, 7, 5, seed=1, pad_tail=1), _ids(2, 6, seed=2))),
    "TinyCausalLM": lambda: (_seeded(TinyCausalLM(), seed=6), (_ids(2, 7),)),
    "KNNLM": lambda: (_knnlm(), (_ids(2, 7, seed=4),)),
    "AdaptiveKNNLM": lambda: (_knnlm(AdaptiveKNNLM), (_ids(2, 7, seed=4),)),
    "RetrievalAugmentedLM": lambda: (_seeded(RetrievalAugmentedLM(_vecs(13, 8, seed=8), _ids(13, 5, seed=9, pad_tail=1)), seed=10),
                                     (_ids(2, 4, seed=11), _ids(2, 6, seed=12))),
    "cached_query_scores": lambda: (cached_query_scores, (EmbeddingCache(_seeded(TextTower(), seed=7), capacity=4),
                                                          _ids(3, 5, seed=13), _vecs(9, 8, seed=14))),
    "collate_retrieval_batch": lambda: (collate_retrieval_batch, ([_ids(4, seed=1), _ids(6, seed=2)],
                                                                   [[_ids(5, seed=3), _ids(8, seed=4), _ids(3, seed=5)],
                                                                    [_ids(7, seed=6), _ids(4, seed=7), _ids(6, seed=8)]])),
    "encode_corpus": lambda: (encode_corpus, (_seeded(TextTower(), seed=8), _ids(10, 5, seed=15, pad_tail=1))),
    "retrieval_metrics": lambda: (retrieval_metrics, (_vecs(4, 9, seed=1), torch.tensor([2, 0, 5, 8]))),
}
