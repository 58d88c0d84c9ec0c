"""Task-agnostic distillation of a BERT-style encoder into a narrow, shallow student (TinyBERT /
MiniLM style): hidden-state + attention transfer through a layer map, temperature-scaled KL, schedules,
token-level augmentation and the evaluation / logging helpers the training loop relies on."""
import logging
import math
import random
import time
import warnings
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger(__name__)

PAD_ID, CLS_ID, SEP_ID, MASK_ID = 0, 1, 2, 3
NUM_SPECIAL = 4
ATTN_MASK_VALUE = -1e4
# filled by the stats monitor / loss recorder, flushed to TensorBoard by the trainer
LAYER_STATS: Dict[str, List[float]] = defaultdict(list)


@dataclass
class EncoderConfig:
    vocab_size: int = 40
    hidden: int = 16
    heads: int = 4
    layers: int = 4
    ffn: int = 32
    max_len: int = 12
    type_vocab: int = 2
    dropout: float = 0.0
    num_labels: int = 3


@dataclass
class DistillConfig:
    temperature: float = 4.0
    min_temperature: float = 1.0
    alpha_kd: float = 0.7
    beta_hidden: float = 1.0
    gamma_attn: float = 1.0
    layer_map: str = "uniform"  # "uniform" | "last"
    total_steps: int = 1000
    mask_prob: float = 0.15
    replace_prob: float = 0.1
    keep_prob: float = 0.1
    extra: Dict[str, float] = field(default_factory=dict)


TEACHER_CFG = EncoderConfig()
STUDENT_CFG = EncoderConfig(hidden=8, heads=2, layers=2, ffn=16, max_len=8)


def build_layer_map(n_teacher: int, n_student: int, strategy: str = "uniform") -> List[int]:
    """Teacher layer each student layer learns from (0-based, embedding output excluded)."""
    if strategy == "last":
        return list(range(n_teacher - n_student, n_teacher))
    return [round((i + 1) * n_teacher / n_student) - 1 for i in range(n_student)]


def extended_attention_mask(attention_mask: torch.Tensor, dtype=torch.float32) -> torch.Tensor:
    ext = attention_mask[:, None, None, :].to(dtype)
    return (1.0 - ext) * ATTN_MASK_VALUE


@dataclass
class EncoderOutput:
    logits: torch.Tensor
    pooled: torch.Tensor
    hidden_states: List[torch.Tensor]
    attentions: List[torch.Tensor]


# --------------------------------------------------------------------------- encoders

class Embeddings(nn.Module):
    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        self.word = nn.Embedding(cfg.vocab_size, cfg.hidden, padding_idx=PAD_ID)
        self.position = nn.Embedding(cfg.max_len, cfg.hidden)
        self.token_type = nn.Embedding(cfg.type_vocab, cfg.hidden)
        self.norm = nn.LayerNorm(cfg.hidden, eps=1e-12)
        self.dropout = nn.Dropout(cfg.dropout)
        self.register_buffer("position_ids", torch.arange(cfg.max_len).unsqueeze(0), persistent=False)

    def forward(self, input_ids, token_type_ids=None):
        seq_len = input_ids.size(1)
        positions = self.position_ids[:, :seq_len]
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        h = self.word(input_ids) + self.position(positions) + self.token_type(token_type_ids)
        return self.dropout(self.norm(h))


class SelfAttention(nn.Module):
    """Returns the pre-softmax scores too: TinyBERT matches those, not the probabilities."""

    def __init__(self, hidden: int, heads: int, dropout: float = 0.0):
        super().__init__()
        assert hidden % heads == 0, "hidden must be divisible by heads"
        self.heads, self.head_dim = heads, hidden // heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, ext_mask=None):
        b, n, _ = x.shape
        qkv = self.qkv(x).view(b, n, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        if ext_mask is not None:
            scores = scores + ext_mask
        probs = self.drop(scores.softmax(dim=-1))
        ctx = (probs @ v).transpose(1, 2).reshape(b, n, -1)
        return self.out(ctx), scores


class EncoderLayer(nn.Module):
    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        self.attn = SelfAttention(cfg.hidden, cfg.heads, cfg.dropout)
        self.ln1 = nn.LayerNorm(cfg.hidden, eps=1e-12)
        self.ffn = nn.Sequential(nn.Linear(cfg.hidden, cfg.ffn), nn.GELU(), nn.Linear(cfg.ffn, cfg.hidden))
        self.ln2 = nn.LayerNorm(cfg.hidden, eps=1e-12)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x, ext_mask=None):
        a, scores = self.attn(x, ext_mask)
        x = self.ln1(x + self.drop(a))
        x = self.ln2(x + self.drop(self.ffn(x)))
        return x, scores


class BertEncoder(nn.Module):
    """Teacher: post-LN BERT with a pooler and a sequence-classification head."""

    def __init__(self, cfg: EncoderConfig = TEACHER_CFG):
        super().__init__()
        self.cfg = cfg
        self.embeddings = Embeddings(cfg)
        self.layers = nn.ModuleList([EncoderLayer(cfg) for _ in range(cfg.layers)])
        self.pooler = nn.Linear(cfg.hidden, cfg.hidden)
        self.classifier = nn.Linear(cfg.hidden, cfg.num_labels)

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        ext = extended_attention_mask(attention_mask)
        h = self.embeddings(input_ids, token_type_ids)
        hidden_states, attentions = [h], []
        for layer in self.layers:
            h, scores = layer(h, ext)
            hidden_states.append(h)
            attentions.append(scores)
        pooled = torch.tanh(self.pooler(h[:, 0]))
        return EncoderOutput(self.classifier(pooled), pooled, hidden_states, attentions)


class StudentEncoder(BertEncoder):
    """Narrow/shallow student; its position table is shorter, so long inputs are cut."""

    def __init__(self, cfg: EncoderConfig = STUDENT_CFG):
        super().__init__(cfg)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        if input_ids.size(1) > self.cfg.max_len:  # expect: FL301
            input_ids = input_ids[:, : self.cfg.max_len]
            if attention_mask is not None:
                attention_mask = attention_mask[:, : self.cfg.max_len]
        return super().forward(input_ids, attention_mask, token_type_ids)


# --------------------------------------------------------------------------- distillation losses

class HiddenProjector(nn.Module):
    """W_h of TinyBERT: maps student states (embeddings included) into the teacher's width."""

    def __init__(self, student_dim: int, teacher_dim: int, n_states: int):
        super().__init__()
        self.proj = nn.ModuleList(nn.Linear(student_dim, teacher_dim, bias=False) for _ in range(n_states))

    def forward(self, student_states: Sequence[torch.Tensor]) -> List[torch.Tensor]:
        return [proj(h) for proj, h in zip(self.proj, student_states)]


class HiddenStateLoss(nn.Module):
    def __init__(self, layer_map: List[int], student_dim: int, teacher_dim: int,
                 normalize: bool = False, track_layers: bool = True):
        super().__init__()
        self.layer_map = layer_map
        self.projector = HiddenProjector(student_dim, teacher_dim, len(layer_map) + 1)
        self.normalize = normalize
        self.track_layers = track_layers
        self.last_layer_losses: Dict[int, float] = {}

    def forward(self, student_states, teacher_states, attention_mask):
        projected = self.projector(student_states)
        mask = attention_mask.unsqueeze(-1).to(projected[0].dtype)
        denom = mask.sum() * teacher_states[0].size(-1)
        pairs = [(0, 0)] + [(s + 1, t + 1) for s, t in enumerate(self.layer_map)]
        total = projected[0].new_zeros(())
        for s_idx, t_idx in pairs:
            s_h, t_h = projected[s_idx], teacher_states[t_idx].detach()
            if self.normalize:
                s_h = F.layer_norm(s_h, s_h.shape[-1:])
                t_h = F.layer_norm(t_h, t_h.shape[-1:])
            layer_loss = (((s_h - t_h) ** 2) * mask).sum() / denom
            if self.track_layers:
                self.last_layer_losses[t_idx] = layer_loss.item()  # expect: FL000 GB0124
            total = total + layer_loss
        return total / len(pairs)


class AttentionTransferLoss(nn.Module):
    """MSE (TinyBERT) or KL (MiniLM) between attention maps of mapped layers."""

    def __init__(self, layer_map: List[int], mode: str = "mse"):
        super().__init__()
        self.layer_map = layer_map
        self.mode = mode

    def forward(self, student_attn, teacher_attn):
        losses = []
        for s_idx, t_idx in enumerate(self.layer_map):
            s, t = student_attn[s_idx], teacher_attn[t_idx].detach()
            if s.size(1) != t.size(1):
                # different head counts: compare head-averaged maps
                s, t = s.mean(1, keepdim=True), t.mean(1, keepdim=True)
            if self.mode == "kl":
                losses.append(F.kl_div(F.log_softmax(s, -1), F.softmax(t, -1), reduction="batchmean"))
            else:
                s = torch.where(s <= ATTN_MASK_VALUE / 2, torch.zeros_like(s), s)
                t = torch.where(t <= ATTN_MASK_VALUE / 2, torch.zeros_like(t), t)
                losses.append(F.mse_loss(s, t))
        total = torch.stack(losses).mean()
        if not torch.isfinite(total):  # expect: FL000 GB0170
            warnings.warn("attention transfer loss is not finite; dropping it for this step")
            return total.new_zeros(())
        return total


@torch.compile
def soft_target_kl(student_logits, teacher_logits, temperature: float = 2.0):
    """Hinton KD term; the T^2 factor keeps gradient magnitudes comparable across temperatures."""
    log_p_s = F.log_softmax(student_logits / temperature, dim=-1)
    p_t = F.softmax(teacher_logits / temperature, dim=-1)
    return F.kl_div(log_p_s, p_t, reduction="batchmean") * temperature ** 2


@torch.compile(dynamic=True)
def cosine_hidden_loss(student_h, teacher_h, attention_mask):
    """DistilBERT's cosine embedding loss over non-pad positions (no boolean indexing)."""
    cos = F.cosine_similarity(student_h, teacher_h, dim=-1)
    m = attention_mask.to(cos.dtype)
    return ((1.0 - cos) * m).sum() / m.sum().clamp_min(1.0)


class TemperatureScheduler(nn.Module):
    """Cosine-anneals the KD temperature from cfg.temperature to cfg.min_temperature."""

    def __init__(self, cfg: DistillConfig = DistillConfig()):
        super().__init__()
        self.cfg = cfg
        self.num_steps = 0

    def current(self) -> float:
        progress = min(1.0, self.num_steps / max(1, self.cfg.total_steps))
        span = self.cfg.temperature - self.cfg.min_temperature
        return self.cfg.min_temperature + 0.5 * span * (1.0 + math.cos(math.pi * progress))

    def forward(self, student_logits, teacher_logits):
        T = self.current()
        self.num_steps += 1  # expect: FL302
        return soft_target_kl(student_logits, teacher_logits, T)


@torch.compile
def calibrate_temperature(teacher_logits, target_entropy: float = 0.6, max_temperature: float = 20.0):
    """Raises T until the teacher's soft targets reach a minimum normalised entropy."""
    T = 1.0
    max_ent = math.log(teacher_logits.size(-1))
    p = F.softmax(teacher_logits, dim=-1)
    ent = -(p * p.clamp_min(1e-9).log()).sum(-1).mean() / max_ent
    while ent < target_entropy and T < max_temperature:  # expect: FL000 GB0170
        T *= 1.25
        p = F.softmax(teacher_logits / T, dim=-1)
        ent = -(p * p.clamp_min(1e-9).log()).sum(-1).mean() / max_ent
    return T


@torch.compile
def masked_lm_distill(student_mlm_logits, teacher_mlm_logits, masked_positions, temperature: float = 2.0):
    """KD on the MLM head, only where the augmenter masked a token."""
    s = student_mlm_logits[masked_positions]  # expect: FL000 GB0036
    t = teacher_mlm_logits[masked_positions]  # expect: FL000 GB0036
    return soft_target_kl(s, t, temperature)


# --------------------------------------------------------------------------- augmentation

class TokenAugmenter(nn.Module):
    """BERT-style corruption: mask / random-replace / keep among the selected positions."""

    def __init__(self, vocab_size: int, cfg: DistillConfig = DistillConfig()):
        super().__init__()
        self.vocab_size = vocab_size
        self.mask_prob, self.replace_prob, self.keep_prob = cfg.mask_prob, cfg.replace_prob, cfg.keep_prob

    def forward(self, input_ids):
        special = input_ids < NUM_SPECIAL
        probs = torch.full(input_ids.shape, self.mask_prob).masked_fill(special, 0.0)
        selected = torch.bernoulli(probs).bool()
        roll = torch.rand(input_ids.shape)
        mask_cut = 1.0 - self.replace_prob - self.keep_prob
        to_mask = selected & (roll < mask_cut)
        to_replace = selected & (roll >= mask_cut) & (roll < 1.0 - self.keep_prob)
        # deterministic "random" replacement keeps teacher targets reproducible across epochs
        shifted = (input_ids * 7 + 3) % (self.vocab_size - NUM_SPECIAL) + NUM_SPECIAL
        corrupted = torch.where(to_replace, shifted, input_ids.masked_fill(to_mask, MASK_ID))
        logger.debug("augmenter selected %d of %d tokens", int(selected.sum()), input_ids.numel())  # expect: FL000 GB0124; FL000 GB0291
        positions = selected.nonzero(as_tuple=False)  # expect: FL000 GB0036
        return corrupted, positions


class NeighbourReplacer(nn.Module):
    """TinyBERT-style word replacement from an offline nearest-neighbour table."""

    def __init__(self, neighbours: Dict[int, List[int]], p: float = 0.9):
        super().__init__()
        self.neighbours = neighbours
        self.p = p

    def forward(self, input_ids):
        out = input_ids.clone()
        for b, row in enumerate(input_ids.tolist()):  # expect: FL000 GB0033
            for i, tok in enumerate(row):
                try:
                    candidates = self.neighbours[tok]
                except KeyError:
                    continue
                if random.random() < self.p:  # expect: FL000 GB0007
                    out[b, i] = candidates[(b + i) % len(candidates)]
        return out


def _augmented_views(input_ids, n_views: int, mask_prob: float):
    for _ in range(n_views):
        keep = (torch.rand(input_ids.shape) >= mask_prob) | (input_ids < NUM_SPECIAL)
        yield torch.where(keep, input_ids, torch.full_like(input_ids, MASK_ID))


@torch.compile
def ensemble_soft_targets(teacher, input_ids, attention_mask, n_views: int = 3, temperature: float = 2.0):
    """Averages the teacher's soft targets over several masked views of the batch."""
    probs = [F.softmax(teacher(view, attention_mask).logits / temperature, dim=-1)
             for view in _augmented_views(input_ids, n_views, 0.2)]
    return torch.stack(probs).mean(0)


# --------------------------------------------------------------------------- logging / evaluation

@torch.compiler.disable
def _record_losses(losses: Dict[str, torch.Tensor], prefix: str = "train") -> None:
    for name, value in losses.items():
        LAYER_STATS[f"{prefix}/{name}"].append(float(value.detach()))


class LayerStatsMonitor(nn.Module):
    """Identity on the hidden states; records per-layer norm / sparsity for the dashboards."""

    def __init__(self, tag: str = "student"):
        super().__init__()
        self.tag = tag

    def forward(self, hidden_states: List[torch.Tensor]):
        norms = torch.stack([h.norm(dim=-1).mean() for h in hidden_states])
        near_zero = torch.stack([(h.abs() < 1e-2).float().mean() for h in hidden_states])
        for i, (n, z) in enumerate(zip(norms.tolist(), near_zero.tolist())):  # expect: FL000 GB0109
            LAYER_STATS[f"{self.tag}/layer{i}/norm"].append(n)  # expect: FL302
            LAYER_STATS[f"{self.tag}/layer{i}/near_zero"].append(z)
        logger.info(f"[{self.tag}] layer norms {norms}")  # expect: FL000 GB0291
        return hidden_states


class DistillationModel(nn.Module):
    """Teacher (frozen) + student + all transfer losses; returns the weighted total and its parts."""

    def __init__(self, teacher: BertEncoder, student: StudentEncoder, cfg: DistillConfig = DistillConfig()):
        super().__init__()
        self.teacher = teacher.eval()
        self.student = student
        self.cfg = cfg
        for p in self.teacher.parameters():
            p.requires_grad_(False)
        layer_map = build_layer_map(teacher.cfg.layers, student.cfg.layers, cfg.layer_map)
        self.hidden_loss = HiddenStateLoss(layer_map, student.cfg.hidden, teacher.cfg.hidden, track_layers=False)
        self.attn_loss = AttentionTransferLoss(layer_map, mode=cfg.extra.get("attn_mode", "mse"))

    def forward(self, input_ids, attention_mask, labels=None):
        with torch.no_grad():
            t_out = self.teacher(input_ids, attention_mask)
        s_out = self.student(input_ids, attention_mask)
        losses = {
            "kd": soft_target_kl(s_out.logits, t_out.logits, self.cfg.temperature),
            "hidden": self.hidden_loss(s_out.hidden_states, t_out.hidden_states, attention_mask),
            "attn": self.attn_loss(s_out.attentions, t_out.attentions),
        }
        total = (self.cfg.alpha_kd * losses["kd"] + self.cfg.beta_hidden * losses["hidden"]
                 + self.cfg.gamma_attn * losses["attn"])
        if labels is not None:
            losses["ce"] = F.cross_entropy(s_out.logits, labels)
            total = total + (1.0 - self.cfg.alpha_kd) * losses["ce"]
        _record_losses(losses)  # expect: FL000 GB0098
        return total, losses


@torch.compile
def offline_distill_step(student, input_ids, attention_mask, teacher_logits,
                         callbacks: Sequence[Callable] = (), temperature: float = 2.0):
    """Distillation from teacher logits cached on disk (no teacher forward in the loop)."""
    t0 = time.perf_counter()  # expect: FL000 GB0007
    out = student(input_ids, attention_mask)
    loss = soft_target_kl(out.logits, teacher_logits, temperature)
    elapsed = time.perf_counter() - t0  # expect: FL000 GB0007
    for cb in callbacks:
        cb({"kd": loss}, elapsed)
    return loss


def _make_history_callback(history: List[torch.Tensor]):
    def _cb(losses, elapsed):
        history.append(losses["kd"].detach())  # expect: FL302
    return _cb


def _console_callback(losses, elapsed):
    logger.info("kd=%.4f (%.2f ms)", losses["kd"].item(), elapsed * 1e3)  # expect: FL000 GB0124


def _attention_entropy(attn_scores, attention_mask):
    """Mean attention entropy per head over real tokens: a collapse / over-smoothing probe."""
    probs = (attn_scores + extended_attention_mask(attention_mask)).softmax(-1)
    ent = -(probs * probs.clamp_min(1e-9).log()).sum(-1)
    m = attention_mask[:, None, :].to(ent.dtype)
    return (ent * m).sum((0, 2)) / m.sum((0, 2)).clamp_min(1.0)


attention_entropy = torch.compile(_attention_entropy)


@torch.compile
def classification_report(logits, labels, num_labels: int):
    preds = logits.argmax(-1)
    acc = (preds == labels).float().mean()
    confusion = torch.bincount(labels * num_labels + preds, minlength=num_labels ** 2)  # expect: FL000 GB0036
    rows = confusion.view(num_labels, num_labels).tolist()  # expect: FL000 GB0033
    f1s = []
    for c, row in enumerate(rows):
        tp = row[c]
        fn = sum(row) - tp
        fp = sum(r[c] for r in rows) - tp
        f1s.append(2 * tp / max(1, 2 * tp + fp + fn))
    return {"acc": acc, "macro_f1": sum(f1s) / len(f1s), "per_class_f1": f1s}


@torch.compile
def rank_agreement(student_scores, teacher_scores):
    """Spearman correlation between student and teacher regression heads (STS-B style)."""
    s = student_scores.detach().cpu().numpy()
    t = teacher_scores.detach().cpu().numpy()
    s_rank = np.argsort(np.argsort(s)).astype(np.float64)
    t_rank = np.argsort(np.argsort(t)).astype(np.float64)
    s_rank -= s_rank.mean()
    t_rank -= t_rank.mean()
    rho = (s_rank * t_rank).sum() / math.sqrt((s_rank ** 2).sum() * (t_rank ** 2).sum())  # expect: FL000 GB0033
    return torch.as_tensor(rho, dtype=torch.float32)


# --------------------------------------------------------------------------- cases

def _batch(b: int = 4, n: int = 6, seed: int = 0, vocab: int = 40):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(NUM_SPECIAL, vocab, (b, n), generator=g)
    ids[:, 0] = CLS_ID
    ids[:, -1] = SEP_ID
    mask = torch.ones(b, n, dtype=torch.long)
    ids[0, n - 2:] = PAD_ID
    mask[0, n - 2:] = 0
    return ids, mask


def _seeded(fn):
    torch.manual_seed(0)
    return fn()


def _states(widths, b=4, n=6, count=3):
    g = torch.Generator().manual_seed(1)
    return [torch.randn(b, n, widths, generator=g) for _ in range(count)]


def _attn(heads, layers, b=4, n=6, seed=2):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(b, heads, n, n, generator=g) for _ in range(layers)]


def _logits(b, c, seed=3, scale=1.0):
    return torch.randn(b, c, generator=torch.Generator().manual_seed(seed)) * scale


_NEIGHBOURS = {t: [(t * 3) % 36 + 4, (t * 5) % 36 + 4] for t in range(4, 40) if t % 3}

CASES = {
    "Embeddings": lambda: _seeded(lambda: (Embeddings(TEACHER_CFG), (_batch()[0],), (_batch(5, 9)[0],))),
    "SelfAttention": lambda: _seeded(lambda: (SelfAttention(16, 4), (torch.randn(4, 6, 16),
                                                                      extended_attention_mask(_batch()[1])))),
    "EncoderLayer": lambda: _seeded(lambda: (EncoderLayer(TEACHER_CFG), (torch.randn(4, 6, 16),))),
    "BertEncoder": lambda: _seeded(lambda: (BertEncoder(), _batch())),
    "StudentEncoder": lambda: _seeded(lambda: (StudentEncoder(), _batch(), _batch(5, 10))),
    "HiddenProjector": lambda: _seeded(lambda: (HiddenProjector(8, 16, 3), (_states(8),))),
    "HiddenStateLoss": lambda: _seeded(lambda: (HiddenStateLoss([1, 3], 8, 16, normalize=True),
                                                (_states(8), _states(16, count=5), _batch()[1]))),
    "AttentionTransferLoss": lambda: (AttentionTransferLoss([1, 3]), (_attn(2, 2), _attn(4, 4, seed=5))),
    "soft_target_kl": lambda: (soft_target_kl, (_logits(4, 3), _logits(4, 3, seed=4), 3.0)),
    "cosine_hidden_loss": lambda: (cosine_hidden_loss, (*_states(16, count=2), _batch()[1]),
                                   (*_states(16, b=5, n=9, count=2), _batch(5, 9)[1])),
    "TemperatureScheduler": lambda: (TemperatureScheduler(), (_logits(4, 3), _logits(4, 3, seed=4))),
    "calibrate_temperature": lambda: (calibrate_temperature, (_logits(5, 3, scale=6.0),)),
    "masked_lm_distill": lambda: (masked_lm_distill, (torch.randn(4, 6, 40), torch.randn(4, 6, 40),
                                                      torch.arange(24).view(4, 6) % 5 == 0)),
    "TokenAugmenter": lambda: _seeded(lambda: (TokenAugmenter(40, DistillConfig(mask_prob=0.5, keep_prob=0.2)),
                                               (_batch()[0],))),
    "NeighbourReplacer": lambda: (NeighbourReplacer(_NEIGHBOURS), (_batch(2, 5)[0],)),
    "ensemble_soft_targets": lambda: _seeded(lambda: (ensemble_soft_targets, (BertEncoder(), *_batch()))),
    "LayerStatsMonitor": lambda: (LayerStatsMonitor(), (_states(8),)),
    "DistillationModel": lambda: _seeded(lambda: (DistillationModel(BertEncoder(), StudentEncoder(),
                                                                    DistillConfig(extra={"attn_mode": "kl"})),
                                                  (*_batch(), torch.tensor([0, 2, 1, 2])))),
    "offline_distill_step": lambda: _seeded(lambda: (offline_distill_step, (
        StudentEncoder(), *_batch(), _logits(4, 3), [_make_history_callback([]), _console_callback]))),
    "attention_entropy": lambda: (attention_entropy, (_attn(4, 1)[0], _batch()[1]),
                                  (_attn(4, 1, b=5, n=9)[0], _batch(5, 9)[1])),
    "classification_report": lambda: (classification_report, (_logits(6, 3), torch.tensor([0, 1, 2, 2, 1, 0]), 3)),
    "rank_agreement": lambda: (rank_agreement, (torch.randn(7), torch.randn(7))),
}
