"""DNA sequence models in the style of Basenji / Enformer / BPNet / DNABERT repos: string encoding,
RC augmentation and RC-shared convolutions, dilated towers, attention pooling, PWM scanning,
coverage heads with Poisson / multinomial losses, and masked-LM pretraining."""
import functools
import logging
import re
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

log = logging.getLogger("genomics")
log.addHandler(logging.NullHandler())

DNA = "ACGT"
BASE_TO_INDEX = {b: i for i, b in enumerate(DNA)}
SPECIAL_TOKENS = ("[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]")
N_FILL = 0.25
MIN_POOL_LENGTH = 4


def build_vocab(k: int = 1) -> Dict[str, int]:
    """DNABERT-style vocabulary: special tokens first, then every k-mer in lexicographic order."""
    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS)}
    kmers = [""]
    for _ in range(k):
        kmers = [prefix + b for prefix in kmers for b in DNA]
    for kmer in kmers:
        vocab[kmer] = len(vocab)
    return vocab


VOCAB = build_vocab(1)
PAD_ID, CLS_ID, SEP_ID, MASK_ID, UNK_ID = (VOCAB[t] for t in SPECIAL_TOKENS)


@dataclass
class TowerConfig:
    channels: int = 8
    kernel_size: int = 5
    num_dilated: int = 3
    dilation_rate: float = 2.0
    dropout: float = 0.0
    activation: str = "gelu"
    pool_size: int = 2
    num_tracks: int = 3
    heads: Dict[str, int] = field(default_factory=lambda: {"human": 3, "mouse": 2})

    @property
    def dilations(self) -> List[int]:
        return [int(round(self.dilation_rate ** i)) for i in range(self.num_dilated)]


# --------------------------------------------------------------------------- encoding

def one_hot_from_string(seq: str) -> torch.Tensor:
    idx = torch.tensor([BASE_TO_INDEX.get(b, -1) for b in seq.upper()])
    out = torch.full((len(seq), 4), N_FILL)
    known = idx >= 0
    out[known] = F.one_hot(idx[known], 4).float()  # expect: FL000 GB0036
    return out.t()


@torch.compile
def encode_batch(seqs: Sequence[str], pad_to: Optional[int] = None):
    length = max(len(s) for s in seqs) if pad_to is None else pad_to
    rows = []
    for s in seqs:
        x = one_hot_from_string(s[:length])
        if x.shape[-1] < length:
            x = F.pad(x, (0, length - x.shape[-1]), value=0.0)
        rows.append(x)
    return torch.stack(rows)


def reverse_complement_onehot(x: torch.Tensor) -> torch.Tensor:
    # with ACGT ordering the complement is a flip of the channel axis
    return x.flip(-2).flip(-1)


@torch.compile
def kmer_frequencies(onehot: torch.Tensor, k: int = 3):
    """Counts of every k-mer of a one-hot batch (B, 4, L) -> (B, 4**k), as in gkm-style features."""
    idx = onehot.argmax(1)
    windows = idx.unfold(-1, k, 1)
    weights = 4 ** torch.arange(k - 1, -1, -1, device=onehot.device)
    codes = (windows * weights).sum(-1)
    counts = torch.stack([torch.bincount(row, minlength=4 ** k) for row in codes]).float()  # expect: FL000 GB0036
    return counts / counts.sum(-1, keepdim=True)


@torch.compile
def gc_content(onehot: torch.Tensor, window: int = 8):
    gc = onehot[:, 1] + onehot[:, 2]
    per_window = F.avg_pool1d(gc.unsqueeze(1), window, stride=window).squeeze(1)
    summary = {"mean": per_window.mean().item(), "windows": per_window.shape[-1]}  # expect: FL000 GB0124
    return per_window, summary


# --------------------------------------------------------------------------- augmentation

class StochasticReverseComplement(nn.Module):
    """Basenji's augmentation: flip the whole batch to the reverse strand with probability 1/2."""

    def forward(self, x: torch.Tensor, flip: Optional[torch.Tensor] = None):
        if not self.training:
            return x, False
        if flip is None:
            flip = torch.rand(())
        if flip > 0.5:  # expect: FL000 GB0170
            return reverse_complement_onehot(x), True
        return x, False


# --------------------------------------------------------------------------- layers

class RCConv1d(nn.Conv1d):
    """RC weight sharing (Shrikumar et al.): the second half of the filters is the RC of the first."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w_rc = self.weight.flip(1).flip(2)
        weight = torch.cat([self.weight, w_rc], 0)
        bias = None if self.bias is None else torch.cat([self.bias, self.bias], 0)
        return F.conv1d(x, weight, bias, self.stride, self.padding, self.dilation)


class ConvBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, kernel_size: int, dilation: int = 1,
                 activation: str = "gelu", dropout: float = 0.0):
        super().__init__()
        self.norm = nn.BatchNorm1d(c_in)
        self.act = getattr(F, activation)
        self.conv = nn.Conv1d(c_in, c_out, kernel_size, dilation=dilation,
                              padding=dilation * (kernel_size - 1) // 2)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.conv(self.act(self.norm(x))))


class DilatedResidualTower(nn.Module):
    """Basenji's dilated residual stack; the dilation schedule grows geometrically."""

    def __init__(self, cfg: TowerConfig):
        super().__init__()
        self.cfg = cfg
        self.blocks = nn.ModuleList(
            nn.Sequential(ConvBlock(cfg.channels, cfg.channels // 2, cfg.kernel_size, d, cfg.activation),
                          ConvBlock(cfg.channels // 2, cfg.channels, 1, 1, cfg.activation, cfg.dropout))
            for d in cfg.dilations)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = x + block(x)
        return x


class AttentionPool(nn.Module):
    def __init__(self, channels: int, pool_size: int = 2, w_init_scale: float = 2.0):
        super().__init__()
        self.pool_size = pool_size
        self.to_logits = nn.Conv2d(channels, channels, 1, bias=False)
        nn.init.dirac_(self.to_logits.weight.data).mul_(w_init_scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, n = x.shape
        remainder = n % self.pool_size
        if remainder > 0:  # expect: FL301
            x = F.pad(x, (0, self.pool_size - remainder), value=0.0)
            mask = torch.zeros(b, 1, n + self.pool_size - remainder, dtype=torch.bool, device=x.device)
            mask[..., n:] = True
        else:
            mask = None
        x = x.reshape(b, c, -1, self.pool_size)
        logits = self.to_logits(x)
        if mask is not None:
            logits = logits.masked_fill(mask.reshape(b, 1, -1, self.pool_size), -torch.finfo(x.dtype).max)
        return (x * logits.softmax(-1)).sum(-1)


class TargetLengthCrop(nn.Module):
    def __init__(self, target_length: Optional[int] = None):
        super().__init__()
        self.target_length = target_length

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.target_length is None:
            return x
        seq_len = x.shape[-1]
        trim = (seq_len - self.target_length) // 2
        if trim == 0:  # expect: FL301
            return x
        return x[..., trim:-trim]


class CoverageHead(nn.Module):
    def __init__(self, channels: int, num_tracks: int):
        super().__init__()
        self.proj = nn.Conv1d(channels, num_tracks, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.softplus(self.proj(x))


# --------------------------------------------------------------------------- full models

class SeqTrunk(nn.Module):
    def __init__(self, cfg: TowerConfig, rc_stem: bool = False):
        super().__init__()
        self.cfg = cfg
        stem_cls = RCConv1d if rc_stem else nn.Conv1d
        out = cfg.channels // 2 if rc_stem else cfg.channels
        self.stem = stem_cls(4, out, 7, padding=3)
        self.pool = AttentionPool(cfg.channels, cfg.pool_size)
        self.tower = DilatedResidualTower(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.stem(x))
        return self.tower(x)


class MiniEnformer(nn.Module):
    def __init__(self, cfg: TowerConfig, target_length: Optional[int] = None):
        super().__init__()
        self.trunk = SeqTrunk(cfg)
        self.crop = TargetLengthCrop(target_length)
        self.heads = nn.ModuleDict({k: CoverageHead(cfg.channels, n) for k, n in cfg.heads.items()})

    def forward(self, x: torch.Tensor, head: Optional[str] = None):
        emb = self.crop(self.trunk(x))
        if head is not None:
            return self.heads[head](emb)
        return {name: h(emb) for name, h in self.heads.items()}


class RCAveragedModel(nn.Module):
    """Test-time RC averaging: predict on both strands and flip the reverse-strand output back."""

    def __init__(self, cfg: TowerConfig):
        super().__init__()
        self.trunk = SeqTrunk(cfg, rc_stem=True)
        self.head = CoverageHead(cfg.channels, cfg.num_tracks)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        fwd = self.head(self.trunk(x))
        rev = self.head(self.trunk(reverse_complement_onehot(x))).flip(-1)
        return 0.5 * (fwd + rev)


class PWMScanner(nn.Module):
    """Motif scanning: position weight matrices as fixed conv filters, log-odds against background."""

    def __init__(self, pfms: List[np.ndarray], background=(0.3, 0.2, 0.2, 0.3), pseudocount: float = 0.1):
        super().__init__()
        width = max(m.shape[1] for m in pfms)
        bg = np.asarray(background)[:, None]
        filters = np.zeros((len(pfms), 4, width), dtype=np.float32)
        for i, pfm in enumerate(pfms):
            probs = (pfm + pseudocount) / (pfm + pseudocount).sum(0, keepdims=True)
            filters[i, :, :pfm.shape[1]] = np.log2(probs / bg)
        self.register_buffer("pwm", torch.from_numpy(filters))
        self.register_buffer("max_score", torch.from_numpy(filters.max(1).sum(-1)))
        self.threshold_frac = 0.8

    def scan(self, x: torch.Tensor) -> torch.Tensor:
        fwd = F.conv1d(x, self.pwm)
        rev = F.conv1d(x, reverse_complement_onehot(self.pwm))
        return torch.maximum(fwd, rev)

    def forward(self, x: torch.Tensor):
        scores = self.scan(x)
        hits = scores > self.threshold_frac * self.max_score[:, None]
        return scores.amax(-1), hits.any(-1)


class MotifHitCaller(PWMScanner):
    """Same scanner, but reports hit positions per motif as Python lists (for BED export)."""
    def forward(self, x: torch.Tensor):
        scores = self.scan(x)
        cutoff = self.threshold_frac * self.max_score
        calls = []
        for m in range(scores.shape[1]):
            pos = torch.nonzero(scores[:, m] > cutoff[m])  # expect: FL000 GB0036
            calls.append([(int(b), int(p)) for b, p in pos])
        return scores, calls


# --------------------------------------------------------------------------- losses

def poisson_nll(pred: torch.Tensor, target: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    return (pred - target * torch.log(pred + eps)).mean()


def multinomial_nll(pred: torch.Tensor, target: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """BPNet's profile loss: multinomial over positions, with the total count modelled separately."""
    total = target.sum(-1)
    log_p = torch.log_softmax(torch.log(pred + eps), -1)
    ll = torch.lgamma(total + 1) - torch.lgamma(target + 1).sum(-1) + (target * log_p).sum(-1)
    return -ll.mean()


def poisson_multinomial(pred, target, total_weight: float = 0.2, eps: float = 1e-6):
    """Borzoi's decomposition: Poisson on the summed coverage plus multinomial on the shape."""
    pois = poisson_nll(pred.sum(-1), target.sum(-1), eps)
    return total_weight * pois + multinomial_nll(pred, target, eps)


LOSSES: Dict[str, Callable] = {"poisson": poisson_nll, "multinomial": multinomial_nll,
                               "poisson_multinomial": poisson_multinomial, "mse": F.mse_loss}


@torch.compile
def coverage_loss(pred, target, name: str = "poisson_multinomial", track_weights=None):
    loss_fn = LOSSES[name]
    if name == "poisson_multinomial":
        loss_fn = functools.partial(loss_fn, total_weight=0.5)
    per_track = torch.stack([loss_fn(pred[:, t], target[:, t]) for t in range(pred.shape[1])])
    if track_weights is not None:
        per_track = per_track * track_weights
    return per_track.sum()


@torch.compile
def pearson_r(pred, target, dim: int = -1, eps: float = 1e-8):
    pred = pred - pred.mean(dim, keepdim=True)
    target = target - target.mean(dim, keepdim=True)
    r = (pred * target).sum(dim) / (pred.norm(dim=dim) * target.norm(dim=dim) + eps)
    if torch.isnan(r).any():  # expect: FL000 GB0170
        log.warning("NaN correlation for %d tracks", int(torch.isnan(r).sum()))
        r = torch.nan_to_num(r)
    return r.mean(0)


# --------------------------------------------------------------------------- masked LM

@dataclass
class MLMConfig:
    mask_prob: float = 0.15
    replace_prob: float = 0.8
    random_prob: float = 0.1
    span: int = 1
    vocab: Dict[str, int] = field(default_factory=lambda: dict(VOCAB))

    @property
    def num_bases(self) -> int:
        return sum(1 for t in self.vocab if t not in SPECIAL_TOKENS)


def special_tokens_mask(tokens: torch.Tensor, vocab: Dict[str, int]) -> torch.Tensor:
    mask = torch.zeros_like(tokens, dtype=torch.bool)
    for tok in SPECIAL_TOKENS:
        mask |= tokens == vocab[tok]
    return mask


@torch.compile
def mask_tokens(tokens: torch.Tensor, noise: torch.Tensor, cfg: MLMConfig):
    """BERT-style 80/10/10 corruption; `noise` is (3, B, L) uniform draws made by the data loader."""
    labels = tokens.clone()
    probability = torch.full(tokens.shape, cfg.mask_prob)
    probability.masked_fill_(special_tokens_mask(tokens, cfg.vocab), 0.0)
    masked = noise[0] < probability
    if cfg.span > 1:
        masked = F.max_pool1d(masked.float().unsqueeze(1), cfg.span, 1, cfg.span // 2).squeeze(1).bool()
    if not masked.any():  # expect: FL000 GB0170
        masked[:, 1] = True  # make sure every batch contributes to the loss
    labels[~masked] = -100
    replace = (noise[1] < cfg.replace_prob) & masked
    inputs = tokens.masked_fill(replace, cfg.vocab["[MASK]"])
    randomize = (noise[2] < cfg.random_prob / (1 - cfg.replace_prob)) & masked & ~replace
    first_base = len(SPECIAL_TOKENS)
    random_bases = first_base + (noise[2] * 1000).long() % cfg.num_bases
    inputs = torch.where(randomize, random_bases, inputs)
    return inputs, labels


class NucleotideMLM(nn.Module):
    def __init__(self, cfg: MLMConfig, dim: int = 16, depth: int = 2, max_len: int = 64):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(len(cfg.vocab), dim, padding_idx=cfg.vocab["[PAD]"])
        self.pos = nn.Parameter(torch.randn(max_len, dim, generator=torch.Generator().manual_seed(3)) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, 2, dim * 2, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.steps = 0

    def forward(self, tokens: torch.Tensor, labels: Optional[torch.Tensor] = None):
        if tokens.max() >= self.embed.num_embeddings:  # expect: FL000 GB0170
            raise IndexError("token id outside the vocabulary")
        pad = tokens == self.cfg.vocab["[PAD]"]
        h = self.embed(tokens) + self.pos[: tokens.shape[1]]
        h = self.norm(self.encoder(h, src_key_padding_mask=pad))
        logits = h @ self.embed.weight.t()
        if labels is None:
            return logits
        self.steps += 1  # expect: FL302
        loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)
        return logits, loss


@torch.compile
def mlm_accuracy(logits: torch.Tensor, labels: torch.Tensor) -> Dict[str, float]:
    valid = labels != -100
    n = valid.sum()
    if n == 0:  # expect: FL000 GB0170
        return {"acc": 0.0, "n": 0}
    correct = (logits.argmax(-1) == labels) & valid
    return {"acc": (correct.sum() / n).item(), "n": int(n)}  # expect: FL000 GB0124


# --------------------------------------------------------------------------- interpretation

def _window_scores(scores: torch.Tensor, window: int) -> torch.Tensor:
    n = scores.shape[-1]
    if n < window * MIN_POOL_LENGTH:  # expect: FL301
        return scores.unsqueeze(-1)
    return scores.unfold(-1, window, window)


@torch.compile(dynamic=True)
def attribution_windows(attr: torch.Tensor, onehot: torch.Tensor, window: int = 4):
    contrib = (attr * onehot).sum(1)
    win = _window_scores(contrib, window).sum(-1)
    return win.topk(min(2, win.shape[-1]), dim=-1)


def _clip_callback(name, value, max_val: float = 50.0):
    return value.clamp(max=max_val) if name == "coverage" else value


def _log_callback(name, value):
    log.info("%s: mean %.3f", name, float(value.mean()))  # expect: FL000 GB0124; FL000 GB0291
    return value


class TrainStep(nn.Module):
    def __init__(self, model: nn.Module, loss: str = "poisson", callbacks=None):
        super().__init__()
        self.model = model
        self.loss_fn = LOSSES[loss]
        self.callbacks = list(callbacks or [])

    def post(self, name: str, value):
        for cb in self.callbacks:
            value = cb(name, value)
        return value

    def forward(self, x: torch.Tensor, target: torch.Tensor):
        pred = self.post("coverage", self.model(x))
        loss = self.loss_fn(pred, target)
        assert loss.dim() == 0, "loss must be reduced"
        return pred, loss


@torch.compile
def ensemble_strands(models: List[nn.Module], onehot: torch.Tensor, strands: Tuple[str, ...] = ("+", "-"),
                     val_scores: Optional[Sequence[float]] = None):
    preds = []
    for model in models:
        for strand in strands:
            x = onehot if strand == "+" else reverse_complement_onehot(onehot)
            y = model(x)
            preds.append(y if strand == "+" else y.flip(-1))
    if val_scores is None:
        return torch.stack(preds).mean(0)
    w = np.repeat(np.asarray(val_scores, dtype=np.float32), len(strands))
    w = torch.from_numpy(w / w.sum()).to(onehot.device)
    return torch.einsum("m,m...->...", w, torch.stack(preds))


@torch.compile
def tokenize_kmers(seqs: List[str], k: int, vocab: Dict[str, int], max_len: int = 16):
    rows = []
    for s in seqs:
        s = re.sub("[^ACGT]", "N", s.upper())
        ids = [CLS_ID] + [vocab.get(s[i:i + k], UNK_ID) for i in range(len(s) - k + 1)] + [SEP_ID]
        ids = ids[:max_len] + [PAD_ID] * max(0, max_len - len(ids))
        rows.append(ids)
    return torch.tensor(rows, dtype=torch.long)


# --------------------------------------------------------------------------- cases

def _seqs(n: int, length: int, seed: int = 0) -> List[str]:
    rng = np.random.default_rng(seed)
    return ["".join(rng.choice(list(DNA + "N"), size=length, p=[0.24, 0.24, 0.24, 0.24, 0.04])) for _ in range(n)]


def _onehot(n: int, length: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, 4, (n, length), generator=g)
    return F.one_hot(idx, 4).float().transpose(1, 2).contiguous()


def _rand(*shape, seed: int = 0, positive: bool = False) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g)
    return x.abs() + 0.1 if positive else x


def _tokens(n: int, length: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    t = torch.randint(len(SPECIAL_TOKENS), len(VOCAB), (n, length), generator=g)
    t[:, 0], t[:, -1] = CLS_ID, SEP_ID
    return t


def _seeded(module: nn.Module, seed: int = 0) -> nn.Module:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.2)
    return module.eval()


CFG = TowerConfig()
PFMS = [np.random.default_rng(7).integers(0, 20, size=(4, w)).astype(np.float64) for w in (5, 3)]

CASES = {
    "encode_batch": lambda: (encode_batch, (_seqs(3, 10), 12)),
    "kmer_frequencies": lambda: (kmer_frequencies, (_onehot(3, 14), 2)),
    "gc_content": lambda: (gc_content, (_onehot(3, 16),)),
    "StochasticReverseComplement": lambda: (StochasticReverseComplement().train(),
                                            (_onehot(2, 9), torch.tensor(0.7))),
    "AttentionPool": lambda: (_seeded(AttentionPool(6, 3)), (_rand(2, 6, 10),), (_rand(3, 6, 12),)),
    "TargetLengthCrop": lambda: (TargetLengthCrop(6), (_rand(2, 3, 10),), (_rand(3, 5, 6),)),
    "MiniEnformer": lambda: (_seeded(MiniEnformer(CFG, target_length=4)), (_onehot(2, 12), "human")),
    "RCAveragedModel": lambda: (_seeded(RCAveragedModel(CFG)), (_onehot(2, 12),)),
    "PWMScanner": lambda: (PWMScanner(PFMS), (_onehot(3, 15),)),
    "MotifHitCaller": lambda: (MotifHitCaller(PFMS), (_onehot(3, 15),)),
    "coverage_loss": lambda: (coverage_loss, (_rand(2, 3, 7, positive=True), _rand(2, 3, 7, seed=1, positive=True),
                                              "poisson_multinomial", torch.tensor([1.0, 0.5, 0.25]))),
    "pearson_r": lambda: (pearson_r, (_rand(2, 3, 9), _rand(2, 3, 9, seed=1))),
    "mask_tokens": lambda: (mask_tokens, (_tokens(2, 10), torch.rand(3, 2, 10, generator=torch.Generator().manual_seed(5)),
                                          MLMConfig(span=3))),
    "NucleotideMLM": lambda: (_seeded(NucleotideMLM(MLMConfig())), (_tokens(2, 10), _tokens(2, 10, seed=2))),
    "mlm_accuracy": lambda: (mlm_accuracy, (_rand(2, 10, 9), _tokens(2, 10))),
    "attribution_windows": lambda: (attribution_windows, (_rand(2, 4, 20), _onehot(2, 20)),
                                    (_rand(3, 4, 11), _onehot(3, 11))),
    "TrainStep": lambda: (TrainStep(_seeded(CoverageHead(4, 3)), "poisson", [_clip_callback, _log_callback]),
                          (_onehot(2, 9), _rand(2, 3, 9, positive=True))),
    "ensemble_strands": lambda: (ensemble_strands, ([_seeded(CoverageHead(4, 2)), _seeded(CoverageHead(4, 2), 1)],
                                                    _onehot(2, 9), ("+", "-"), [0.61, 0.58])),
    "tokenize_kmers": lambda: (tokenize_kmers, (_seqs(2, 9), 3, build_vocab(3))),
}
