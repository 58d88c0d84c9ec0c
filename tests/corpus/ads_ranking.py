"""Ads / feed ranking in the style of DLRM, torchrec and DeepCTR: hashed embedding bags from
feature configs, DCN-v2 crosses, DIN target attention, ESMM / MMoE towers, calibration,
position-bias towers, request batching and AUC / logloss accumulators."""
import functools
import logging
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("ads_ranking")
logger.addHandler(logging.NullHandler())

HASH_PRIME = 2_654_435_761  # Knuth's multiplicative constant
PAD_ID = -1
MAX_SEQ_LEN = 12
DEFAULT_EMB_DIM = 8
LOGIT_CLAMP = 15.0
NUM_AUC_BUCKETS = 32
MIN_BATCH_FOR_STATS = 8
RESERVE_ECPM = 0.05
ENABLE_POSITION_DEBIAS = True

# --------------------------------------------------------------------------- feature configs
@dataclass
class FeatureConfig:
    name: str
    vocab_size: int
    emb_dim: int = DEFAULT_EMB_DIM
    pooling: str = "sum"
    hashed: bool = True
    max_len: int = 4
    shared_table: Optional[str] = None

    @property
    def table_name(self) -> str:
        return self.shared_table or f"t_{self.name}"

    @property
    def salt(self) -> int:
        return zlib.crc32(self.name.encode("utf-8")) & 0xFFFF  # expect: FL000 GB0007

@dataclass
class ModelConfig:
    sparse: List[FeatureConfig] = field(default_factory=list)
    dense_dim: int = 5
    cross_layers: int = 2
    cross_rank: Optional[int] = None
    tower_dims: Tuple[int, ...] = (16, 6)
    activation: str = "relu"
    num_experts: int = 3
    dropout: float = 0.0

DEFAULT_FEATURES = [
    FeatureConfig("user_id", 97),
    FeatureConfig("ad_id", 53, max_len=3),
    FeatureConfig("category", 11, emb_dim=4, pooling="mean", hashed=False),
    FeatureConfig("hist_ad_id", 53, pooling="mean", max_len=6, shared_table="t_ad_id"),
]

def default_config(**overrides) -> ModelConfig:
    cfg = ModelConfig(sparse=list(DEFAULT_FEATURES))
    for key, value in overrides.items():
        setattr(cfg, key, value)
    return cfg

# --------------------------------------------------------------------------- small utilities
def hash_ids(ids: torch.Tensor, num_buckets: int, salt: int = 0) -> torch.Tensor:
    hashed = torch.remainder(ids * HASH_PRIME + salt, num_buckets)
    return torch.where(ids >= 0, hashed, torch.zeros_like(hashed))

def truncate_ids(ids: torch.Tensor, max_len: int) -> torch.Tensor:
    return ids[:, -max_len:] if ids.dim() == 2 else ids

def _pool_sum(emb, mask):
    return (emb * mask.unsqueeze(-1)).sum(1)

def _pool_mean(emb, mask):
    return _pool_sum(emb, mask) / mask.sum(1, keepdim=True).clamp_min(1.0)

POOLERS: Dict[str, Callable] = {"sum": _pool_sum, "mean": _pool_mean}
ACTIVATIONS = {"relu": nn.ReLU, "prelu": nn.PReLU, "gelu": nn.GELU}

def sequence_mask(lengths: torch.Tensor, max_len: int) -> torch.Tensor:
    return torch.arange(max_len, device=lengths.device)[None, :] < lengths[:, None]

def clip_history(keys: torch.Tensor, lengths: torch.Tensor, max_len: int = MAX_SEQ_LEN):
    """Keep the most recent `max_len` behaviours (sequences are right-aligned in time)."""
    if keys.size(1) > max_len:  # expect: FL301
        keys = keys[:, -max_len:]
        lengths = lengths.clamp(max=max_len)
    return keys, lengths

def trim_to_longest(keys: torch.Tensor, lengths: torch.Tensor):
    longest = int(lengths.max())  # expect: FL000 GB0124
    return keys[:, :longest], longest

def build_mlp(in_dim: int, dims: Sequence[int], act: str = "relu", dropout: float = 0.0,
              out_dim: Optional[int] = None) -> nn.Sequential:
    layers: List[nn.Module] = []
    act_cls = ACTIVATIONS.get(act, nn.ReLU)
    for dim in dims:
        layers += [nn.Linear(in_dim, dim), act_cls()]
        if dropout > 0:
            layers.append(nn.Dropout(dropout))
        in_dim = dim
    if out_dim is not None:
        layers.append(nn.Linear(in_dim, out_dim))
    return nn.Sequential(*layers)

def _param(shape, seed: int, scale: float = 0.05) -> nn.Parameter:
    gen = torch.Generator().manual_seed(seed)
    return nn.Parameter(torch.randn(*shape, generator=gen) * scale)

# --------------------------------------------------------------------------- sparse arch
class HashedEmbeddingBag(nn.Module):
    """One embedding table; ids are [B] (single-valued) or [B, L] padded with PAD_ID."""
    def __init__(self, cfg: FeatureConfig, seed: int = 0):
        super().__init__()
        self.cfg = cfg
        self.weight = _param((cfg.vocab_size, cfg.emb_dim), seed)

    def lookup(self, ids: torch.Tensor) -> torch.Tensor:
        if self.cfg.hashed:
            idx = hash_ids(ids, self.cfg.vocab_size, self.cfg.salt)
        else:
            idx = ids.clamp(0, self.cfg.vocab_size - 1)
        return F.embedding(idx, self.weight)

    def forward(self, ids: torch.Tensor, pooling: Optional[str] = None) -> torch.Tensor:
        if ids.dim() == 1:
            return self.lookup(ids)
        mask = (ids != PAD_ID).to(self.weight.dtype)
        return POOLERS[pooling or self.cfg.pooling](self.lookup(ids), mask)

class SparseArch(nn.Module):
    def __init__(self, features: Sequence[FeatureConfig]):
        super().__init__()
        self.features = list(features)
        self.tables = nn.ModuleDict()
        for i, feat in enumerate(self.features):
            if feat.table_name not in self.tables:
                self.tables[feat.table_name] = HashedEmbeddingBag(feat, seed=i)
        self.out_dim = sum(f.emb_dim for f in self.features)

    def forward(self, sparse: Dict[str, torch.Tensor]) -> torch.Tensor:
        batch_size = next(iter(sparse.values())).size(0)
        ref = self.tables[self.features[0].table_name].weight
        pooled = []
        for feat in self.features:
            ids = sparse.get(feat.name)
            if ids is None:  # feature not logged for this traffic: zeros
                pooled.append(ref.new_zeros(batch_size, feat.emb_dim))
                continue
            table = self.tables[feat.table_name]
            pooled.append(table(truncate_ids(ids, feat.max_len), pooling=feat.pooling))
        return torch.cat(pooled, dim=1)

# --------------------------------------------------------------------------- interaction layers
class CrossNetV2(nn.Module):
    """DCN-v2: x_{l+1} = x0 * (W_l x_l + b_l) + x_l, optionally with W = U V (low rank)."""
    def __init__(self, dim: int, num_layers: int = 2, rank: Optional[int] = None):
        super().__init__()
        self.rank = rank
        if rank is None:
            self.kernels = nn.ParameterList([_param((dim, dim), 10 + i) for i in range(num_layers)])
        else:
            self.U = nn.ParameterList([_param((dim, rank), 20 + i) for i in range(num_layers)])
            self.V = nn.ParameterList([_param((rank, dim), 30 + i) for i in range(num_layers)])
        self.bias = nn.ParameterList([nn.Parameter(torch.zeros(dim)) for _ in range(num_layers)])
        self.num_layers = num_layers

    def _project(self, x: torch.Tensor, i: int) -> torch.Tensor:
        if self.rank is None:
            return x @ self.kernels[i]
        return (x @ self.U[i]) @ self.V[i]

    def forward(self, x0: torch.Tensor) -> torch.Tensor:
        xl = x0
        for i in range(self.num_layers):
            xl = x0 * (self._project(xl, i) + self.bias[i]) + xl
        return xl

class Dice(nn.Module):
    """Data-adaptive activation from the DIN paper."""
    def __init__(self, dim: int, eps: float = 1e-8):
        super().__init__()
        self.bn = nn.BatchNorm1d(dim, eps=eps, affine=False)
        self.alpha = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 3:
            p = torch.sigmoid(self.bn(x.transpose(1, 2)).transpose(1, 2))
        else:
            p = torch.sigmoid(self.bn(x))
        return p * x + (1 - p) * self.alpha * x

class DINAttention(nn.Module):
    """Target attention of the candidate ad over the user's behaviour sequence."""
    def __init__(self, dim: int, hidden: Sequence[int] = (12, 6), trim_padding: bool = False):
        super().__init__()
        layers: List[nn.Module] = []
        in_dim = dim * 4
        for h in hidden:
            layers += [nn.Linear(in_dim, h), Dice(h)]
            in_dim = h
        layers.append(nn.Linear(in_dim, 1))
        self.mlp = nn.Sequential(*layers)
        self.trim_padding = trim_padding

    def forward(self, query: torch.Tensor, keys: torch.Tensor, lengths: torch.Tensor):
        keys, lengths = clip_history(keys, lengths)
        if self.trim_padding:
            keys, steps = trim_to_longest(keys, lengths)
        else:
            steps = keys.size(1)
        q = query.unsqueeze(1).expand(-1, steps, -1)
        scores = self.mlp(torch.cat([q, keys, q - keys, q * keys], dim=-1)).squeeze(-1)
        mask = sequence_mask(lengths, steps)
        weights = torch.softmax(scores.masked_fill(~mask, -1e9), dim=-1)
        return torch.einsum("bt,btd->bd", weights, keys)

class MMoE(nn.Module):
    def __init__(self, in_dim: int, expert_dim: int, num_experts: int, tasks: Sequence[str],
                 track_gates: bool = False):
        super().__init__()
        self.experts = nn.ModuleList(
            [nn.Sequential(nn.Linear(in_dim, expert_dim), nn.ReLU()) for _ in range(num_experts)])
        self.gates = nn.ModuleDict({t: nn.Linear(in_dim, num_experts) for t in tasks})
        self.tasks = tuple(tasks)
        self.track_gates = track_gates
        self.gate_usage: Dict[str, List[List[float]]] = defaultdict(list)

    def _record_gate(self, task: str, gate: torch.Tensor) -> None:
        self.gate_usage[task].append(gate.detach().mean(0).cpu().tolist())  # expect: FL000 GB0109; FL302

    def forward(self, x: torch.Tensor) -> Dict[str, torch.Tensor]:
        expert_out = torch.stack([expert(x) for expert in self.experts], dim=1)  # expect: FL000 GB4347
        outputs = {}
        for task in self.tasks:
            gate = torch.softmax(self.gates[task](x), dim=-1)
            if self.track_gates:
                self._record_gate(task, gate)
            outputs[task] = torch.einsum("be,bed->bd", gate, expert_out)
        return outputs

# --------------------------------------------------------------------------- ranking models
class BaseRankingModel(nn.Module):
    """Embeddings + dense projection + a single logistic head (the 'LR with embeddings' baseline)."""
    task_names: Tuple[str, ...] = ("ctr",)

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.sparse_arch = SparseArch(cfg.sparse)
        self.dense_proj = nn.Linear(cfg.dense_dim, DEFAULT_EMB_DIM)
        self.feature_dim = self.sparse_arch.out_dim + DEFAULT_EMB_DIM
        self.head = nn.Linear(self.feature_dim, 1)

    def embed(self, dense: torch.Tensor, sparse: Dict[str, torch.Tensor]) -> torch.Tensor:
        return torch.cat([F.relu(self.dense_proj(dense)), self.sparse_arch(sparse)], dim=1)

    def heads(self, h: torch.Tensor) -> Dict[str, torch.Tensor]:
        return {"ctr": self.head(h).squeeze(-1)}

    def forward(self, dense, sparse):
        logits = self.heads(self.embed(dense, sparse))
        return {k: v.clamp(-LOGIT_CLAMP, LOGIT_CLAMP) for k, v in logits.items()}

class DCNRanker(BaseRankingModel):
    def __init__(self, cfg: ModelConfig):
        super().__init__(cfg)
        self.cross = CrossNetV2(self.feature_dim, cfg.cross_layers, cfg.cross_rank)
        self.deep = build_mlp(self.feature_dim, cfg.tower_dims, cfg.activation, cfg.dropout)
        self.head = nn.Linear(self.feature_dim + cfg.tower_dims[-1], 1)

    def heads(self, h):
        stacked = torch.cat([self.cross(h), self.deep(h)], dim=-1)
        return super().heads(stacked)

class ESMMRanker(BaseRankingModel):
    """Entire-space multi-task model: pCTCVR = pCTR * pCVR, optionally with an MMoE bottom."""
    task_names = ("ctr", "cvr")

    def __init__(self, cfg: ModelConfig, use_mmoe: bool = False):
        super().__init__(cfg)
        tower_in = self.feature_dim
        self.bottom = None
        if use_mmoe:
            self.bottom = MMoE(self.feature_dim, 10, cfg.num_experts, self.task_names)
            tower_in = 10
        self.towers = nn.ModuleDict({
            t: build_mlp(tower_in, cfg.tower_dims, cfg.activation, out_dim=1) for t in self.task_names})

    def heads(self, h):
        shared = self.bottom(h) if self.bottom is not None else dict.fromkeys(self.task_names, h)
        return {t: self.towers[t](shared[t]).squeeze(-1) for t in self.task_names}

    def forward(self, dense, sparse, labels: Optional[Dict[str, torch.Tensor]] = None):
        logits = super().forward(dense, sparse)
        p_ctr, p_cvr = torch.sigmoid(logits["ctr"]), torch.sigmoid(logits["cvr"])
        out = {"p_ctr": p_ctr, "p_cvr": p_cvr, "p_ctcvr": p_ctr * p_cvr}
        if labels is not None:
            out["loss"] = (F.binary_cross_entropy(p_ctr, labels["click"])
                           + F.binary_cross_entropy(out["p_ctcvr"].clamp(1e-7, 1 - 1e-7), labels["conv"]))
        return out

# --------------------------------------------------------------------------- position bias
class PositionBiasTower(nn.Module):
    """Shallow tower on the display slot, added to the logits in training only (YouTube-style)."""
    def __init__(self, num_positions: int = 10, dim: int = 4):
        super().__init__()
        self.pos_emb = nn.Embedding(num_positions, dim)
        self.proj = nn.Linear(dim, 1)
        self.num_positions = num_positions

    def forward(self, logits: torch.Tensor, positions: Optional[torch.Tensor] = None):
        if positions is None or not ENABLE_POSITION_DEBIAS:
            return logits
        if not self.training:
            return logits  # position is unknown at serving time
        if int(positions.max()) >= self.num_positions:  # expect: FL000 GB0124
            logger.warning("slot ids beyond %d are folded into the last slot", self.num_positions)  # expect: FL000 GB0291
        pos = positions.clamp(0, self.num_positions - 1)
        return logits + self.proj(self.pos_emb(pos)).squeeze(-1)

# --------------------------------------------------------------------------- calibration
class IsotonicCalibrator(nn.Module):
    """Piecewise-linear interpolation between isotonic-regression knots fitted offline."""
    def __init__(self, knots_x: np.ndarray, knots_y: np.ndarray):
        super().__init__()
        assert len(knots_x) == len(knots_y) and len(knots_x) >= 2, "need at least two knots"
        self.register_buffer("knots_x", torch.as_tensor(knots_x, dtype=torch.float32))
        self.register_buffer("knots_y", torch.as_tensor(knots_y, dtype=torch.float32))

    def forward(self, probs: torch.Tensor) -> torch.Tensor:
        n = self.knots_x.numel()
        idx = torch.bucketize(probs, self.knots_x).clamp(1, n - 1)
        x_lo, x_hi = self.knots_x[idx - 1], self.knots_x[idx]
        y_lo, y_hi = self.knots_y[idx - 1], self.knots_y[idx]
        frac = ((probs - x_lo) / (x_hi - x_lo).clamp_min(1e-6)).clamp(0, 1)
        return y_lo + frac * (y_hi - y_lo)

def correct_for_negative_sampling(p: torch.Tensor, rate: float) -> torch.Tensor:
    return p / (p + (1.0 - p) / rate)

@torch.compile
def serve_scores(logits, sample_rate: float = 0.1, temperature: float = 1.0):
    p = torch.sigmoid(logits / temperature)
    return correct_for_negative_sampling(p, sample_rate)

def _np_interp(values: torch.Tensor, xs: np.ndarray, ys: np.ndarray) -> torch.Tensor:
    out = np.interp(values.detach().cpu().numpy(), xs, ys)  # expect: FL000 GB0294
    return torch.from_numpy(np.asarray(out, dtype=np.float32))

@torch.compile
def calibrate_with_table(logits, knots_x, knots_y):
    probs = torch.sigmoid(logits)
    calibrated = _np_interp(probs, knots_x, knots_y)
    return calibrated.clamp(1e-6, 1 - 1e-6)

# --------------------------------------------------------------------------- metrics
class AUCAccumulator(nn.Module):
    """Streaming bucketed AUC, like tf.metrics.auc: histograms of positive / negative scores."""
    def __init__(self, num_buckets: int = NUM_AUC_BUCKETS):
        super().__init__()
        self.num_buckets = num_buckets
        self.register_buffer("pos_hist", torch.zeros(num_buckets))
        self.register_buffer("neg_hist", torch.zeros(num_buckets))
        self.num_updates = 0

    def compute(self) -> torch.Tensor:
        tp = self.pos_hist.flip(0).cumsum(0)
        fp = self.neg_hist.flip(0).cumsum(0)
        tpr = F.pad(tp / tp[-1].clamp_min(1.0), (1, 0))
        fpr = F.pad(fp / fp[-1].clamp_min(1.0), (1, 0))
        return torch.trapz(tpr, fpr)

    def forward(self, probs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        bucket = (probs.detach().clamp(0, 1 - 1e-6) * self.num_buckets).long()
        labels = labels.to(self.pos_hist.dtype)
        self.pos_hist.index_add_(0, bucket, labels)
        self.neg_hist.index_add_(0, bucket, 1 - labels)
        self.num_updates += 1  # expect: FL302
        return self.compute()

def pairwise_auc(probs: torch.Tensor, labels: torch.Tensor, weight: Optional[torch.Tensor] = None):
    diff = probs[:, None] - probs[None, :]
    pairs = labels[:, None] * (1 - labels[None, :])
    if weight is not None:
        pairs = pairs * weight[:, None] * weight[None, :]
    wins = (diff > 0).float() + 0.5 * (diff == 0).float()
    return (wins * pairs).sum() / pairs.sum().clamp_min(1.0), pairs.sum()

@torch.compile
def group_auc(probs, labels, user_ids):
    """GAUC: per-user AUC weighted by the number of pos/neg pairs of that user."""
    total, weight = probs.new_zeros(()), probs.new_zeros(())
    for uid in torch.unique(user_ids).tolist():  # expect: FL000 GB0033; FL000 GB0036
        auc, n_pairs = pairwise_auc(probs, labels, (user_ids == uid).float())
        total = total + auc * n_pairs
        weight = weight + n_pairs
    return total / weight.clamp_min(1.0)

class MetricLogger:
    def __init__(self, prefix: str = "train"):
        self.prefix, self.history = prefix, defaultdict(list)

    def log(self, name: str, value) -> None:
        self.history[f"{self.prefix}/{name}"].append(float(value))  # expect: FL000 GB0124; FL302

def _logloss(logits, labels):
    return F.binary_cross_entropy_with_logits(logits, labels)

def _calibration_ratio(logits, labels):
    return torch.sigmoid(logits).sum() / labels.sum().clamp_min(1.0)

STEP_METRICS = {"logloss": _logloss, "calib": _calibration_ratio}

@torch.compile
def train_step_metrics(logits, labels, metric_logger: MetricLogger):
    results = {name: fn(logits, labels) for name, fn in STEP_METRICS.items()}  # expect: FL000 GB4347
    for name, value in results.items():
        metric_logger.log(name, value)
    return results["logloss"]

# --------------------------------------------------------------------------- serving helpers
@torch.compile
def normalize_dense(x, running_mean, running_std, eps: float = 1e-5):
    """Small request batches use the offline statistics; big ones their own."""
    if x.size(0) >= MIN_BATCH_FOR_STATS:  # expect: FL301
        mean, std = x.mean(0), x.std(0)
    else:
        mean, std = running_mean, running_std
    return ((x - mean) / (std + eps)).clamp(-5.0, 5.0)

@torch.compile
def chunked_scoring(user_vec, cand_emb, chunk: int = 16):
    """Dot-product retrieval scores, chunked over candidates to bound peak memory."""
    scores = []
    for start in range(0, cand_emb.size(0), chunk):  # expect: FL301
        block = cand_emb[start:start + chunk]
        scores.append(block @ user_vec)
    return torch.cat(scores)

@torch.compile
def run_auction(p_ctr, bids, k: int = 3, reserve: float = RESERVE_ECPM):
    ecpm = p_ctr * bids * 1000.0
    if ecpm.max() < reserve:  # expect: FL000 GB0170
        return ecpm.new_zeros(0), torch.zeros(0, dtype=torch.long)
    top, idx = torch.topk(ecpm, min(k, ecpm.numel()))
    # generalised second price: pay the next ecpm divided by own ctr
    next_ecpm = torch.cat([top[1:], top.new_full((1,), reserve)])
    price = next_ecpm / (p_ctr[idx] * 1000.0)
    return price, idx

def _pad_sequences(seqs: List[torch.Tensor], max_len: int) -> torch.Tensor:
    out = torch.full((len(seqs), max_len), PAD_ID, dtype=torch.long)
    for i, seq in enumerate(seqs):
        seq = seq[-max_len:]
        out[i, : seq.numel()] = seq
    return out

@torch.compile
def collate_requests(requests: List[dict], features: Sequence[FeatureConfig] = tuple(DEFAULT_FEATURES)):
    """Packs a list of ad requests into (dense, {feature: ids}) the ranking model consumes."""
    dense = torch.stack([r["dense"] for r in requests])
    sparse = {}
    for feat in features:
        if feat.name not in requests[0]:
            logger.warning("request batch lacks feature %s", feat.name)
            continue
        if feat.max_len > 1 and feat.name.startswith("hist_"):
            ids = _pad_sequences([r[feat.name] for r in requests], feat.max_len)
        else:
            ids = torch.stack([r[feat.name] for r in requests])
        if feat.hashed:
            ids = hash_ids(ids, feat.vocab_size, feat.salt)
        sparse[feat.name] = ids
    return dense, sparse

# --------------------------------------------------------------------------- CASES inputs
def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)

def _dense(b: int = 6, d: int = 5, seed: int = 0) -> torch.Tensor:
    return torch.randn(b, d, generator=_gen(seed))

def _sparse_batch(b: int = 6, seed: int = 1) -> Dict[str, torch.Tensor]:
    g = _gen(seed)
    hist = torch.randint(0, 500, (b, 7), generator=g)
    hist[:, :2] = PAD_ID  # left padding: oldest slots empty
    return {"user_id": torch.randint(0, 10_000, (b,), generator=g), "hist_ad_id": hist,
            "ad_id": torch.randint(0, 500, (b, 3), generator=g),
            "category": torch.randint(0, 11, (b, 2), generator=g)}

def _seq(b: int, t: int, d: int, seed: int):
    g = _gen(seed)
    lengths = torch.randint(2, t + 1, (b,), generator=g)
    return torch.randn(b, d, generator=g), torch.randn(b, t, d, generator=g), lengths

def _probs_labels(n: int = 10, seed: int = 3):
    g = _gen(seed)
    probs = torch.rand(n, generator=g)
    labels = (torch.rand(n, generator=g) < probs).float()
    return probs, labels

def _requests(n: int = 3, seed: int = 4) -> List[dict]:
    g = _gen(seed)
    return [{"dense": torch.randn(5, generator=g), "user_id": torch.randint(0, 10_000, (), generator=g),
             "ad_id": torch.randint(0, 500, (3,), generator=g),
             "category": torch.randint(0, 11, (2,), generator=g),
             "hist_ad_id": torch.randint(0, 500, (2 + 2 * i,), generator=g)} for i in range(n)]

_KNOTS_X = np.array([0.0, 0.1, 0.3, 0.6, 1.0])
_KNOTS_Y = np.array([0.0, 0.05, 0.2, 0.5, 0.9])
_SMALL_CFG = functools.partial(default_config, tower_dims=(12, 6))

CASES = {
    "HashedEmbeddingBag": lambda: (HashedEmbeddingBag(DEFAULT_FEATURES[3]), (_sparse_batch()["hist_ad_id"],)),
    "SparseArch": lambda: (SparseArch(DEFAULT_FEATURES), (_sparse_batch(),)),
    "CrossNetV2": lambda: (CrossNetV2(7, 3), (_dense(4, 7),)),
    "Dice": lambda: (Dice(6), (_dense(5, 6),)),
    "DINAttention": lambda: (DINAttention(6), _seq(4, 9, 6, 5), _seq(5, 15, 6, 6)),
    "DINAttention_trim": lambda: (DINAttention(6, trim_padding=True), _seq(4, 9, 6, 7)),
    "MMoE": lambda: (MMoE(7, 5, 3, ("ctr", "cvr")), (_dense(4, 7),)),
    "MMoE_tracked": lambda: (MMoE(7, 5, 3, ("ctr", "cvr"), track_gates=True), (_dense(4, 7),)),
    "BaseRankingModel": lambda: (BaseRankingModel(default_config()), (_dense(), _sparse_batch())),
    "DCNRanker": lambda: (DCNRanker(_SMALL_CFG(cross_rank=4)), (_dense(), _sparse_batch())),
    "ESMMRanker": lambda: (ESMMRanker(_SMALL_CFG(), use_mmoe=True), (_dense(), _sparse_batch(), {
        "click": torch.tensor([1., 0., 0., 1., 0., 0.]), "conv": torch.tensor([1., 0., 0., 0., 0., 0.])})),
    "PositionBiasTower": lambda: (PositionBiasTower(), (_dense(6, 5)[:, 0], torch.arange(6) * 2)),
    "IsotonicCalibrator": lambda: (IsotonicCalibrator(_KNOTS_X, _KNOTS_Y), (_probs_labels()[0],)),
    "AUCAccumulator": lambda: (AUCAccumulator(), _probs_labels()),
    "serve_scores": lambda: (serve_scores, (_dense(6, 5), 0.25)),
    "calibrate_with_table": lambda: (calibrate_with_table, (_dense(6, 5)[:, 0], _KNOTS_X, _KNOTS_Y)),
    "group_auc": lambda: (group_auc, (*_probs_labels(), torch.tensor([3, 3, 7, 7, 7, 9, 9, 3, 9, 7]))),
    "train_step_metrics": lambda: (train_step_metrics, (_dense(6, 5)[:, 0], _probs_labels(6)[1], MetricLogger())),
    "normalize_dense": lambda: (normalize_dense, (_dense(5, 3), torch.zeros(3), torch.ones(3)),
                                (_dense(11, 3), torch.zeros(3), torch.ones(3))),
    "chunked_scoring": lambda: (chunked_scoring, (torch.randn(6, generator=_gen(8)), _dense(13, 6)),
                                (torch.randn(6, generator=_gen(9)), _dense(37, 6))),
    "run_auction": lambda: (run_auction, (_probs_labels(7)[0], torch.rand(7, generator=_gen(10)))),
    "collate_requests": lambda: (collate_requests, (_requests(),)),
}
