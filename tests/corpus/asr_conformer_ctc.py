"""Conformer-CTC speech recognition in the style of NeMo / ESPnet / torchaudio recipes: a log-mel
front end with SpecAugment, 2-D convolutional subsampling, macaron conformer blocks with rotary
self-attention and a depthwise convolution module, a CTC head, greedy and prefix-beam decoding,
chunked streaming inference with a left-context cache, and word-error-rate bookkeeping."""
import logging
import math
import random
import warnings
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

log = logging.getLogger("asr.conformer")
log.addHandler(logging.NullHandler())

SAMPLE_RATE = 8000
BLANK_ID = 0
VOCAB = ["<b>", " ", "a", "e", "h", "i", "l", "n", "o", "s", "t", "'"]
LOG_EPS = 1e-6
NEG_INF = -float("inf")
PREEMPH = 0.97
_STREAM_STATS = {"utterances": 0}


@dataclass
class FeatureConfig:
    sample_rate: int = SAMPLE_RATE
    n_fft: int = 64
    hop: int = 16
    n_mels: int = 12
    fmin: float = 20.0
    fmax: Optional[float] = None
    dither: float = 0.0


@dataclass
class SpecAugConfig:
    freq_masks: int = 2
    freq_width: int = 3
    time_masks: int = 2
    time_width_ratio: float = 0.1


@dataclass
class ConformerConfig:
    feat_dim: int = 12
    d_model: int = 16
    n_heads: int = 2
    ff_mult: int = 2
    conv_kernel: int = 5
    n_layers: int = 2
    dropout: float = 0.0
    layer_drop: float = 0.0
    causal: bool = False
    conv_norm: str = "batch"
    vocab_size: int = len(VOCAB)


@dataclass
class BeamConfig:
    beam_size: int = 3
    prune_logp: float = -4.0


# --------------------------------------------------------------------------- features
def mel_filterbank(cfg: FeatureConfig) -> torch.Tensor:
    """Triangular HTK-style filters, (n_mels, n_fft // 2 + 1)."""
    fmax = cfg.fmax or cfg.sample_rate / 2
    mel_lo, mel_hi = 2595.0 * np.log10(1.0 + np.array([cfg.fmin, fmax]) / 700.0)
    hz = 700.0 * (10.0 ** (np.linspace(mel_lo, mel_hi, cfg.n_mels + 2) / 2595.0) - 1.0)
    bins = np.fft.rfftfreq(cfg.n_fft, 1.0 / cfg.sample_rate)
    fb = np.zeros((cfg.n_mels, bins.shape[0]), dtype=np.float32)
    for m in range(1, cfg.n_mels + 1):
        lo, mid, hi = hz[m - 1], hz[m], hz[m + 1]
        up = (bins - lo) / max(mid - lo, 1e-3)
        down = (hi - bins) / max(hi - mid, 1e-3)
        fb[m - 1] = np.maximum(0.0, np.minimum(up, down))
    return torch.from_numpy(fb)


def make_pad_mask(lengths: torch.Tensor, max_len: Optional[int] = None) -> torch.Tensor:
    """True on valid frames, (B, T)."""
    if max_len is None:
        max_len = int(lengths.max())  # expect: FL000 GB0124
    steps = torch.arange(max_len, device=lengths.device)
    return steps.unsqueeze(0) < lengths.unsqueeze(1)


class LogMelFrontend(nn.Module):
    def __init__(self, cfg: FeatureConfig = FeatureConfig()):
        super().__init__()
        self.cfg = cfg
        self.register_buffer("window", torch.hann_window(cfg.n_fft), persistent=False)
        self.register_buffer("fbank", mel_filterbank(cfg), persistent=False)

    def num_frames(self, wav_lens: torch.Tensor) -> torch.Tensor:
        return torch.div(wav_lens - self.cfg.n_fft, self.cfg.hop, rounding_mode="floor") + 1

    def forward(self, wav: torch.Tensor) -> torch.Tensor:
        if wav.shape[-1] < self.cfg.n_fft:  # expect: FL301
            wav = F.pad(wav, (0, self.cfg.n_fft - wav.shape[-1]))
        if self.training and self.cfg.dither > 0:
            wav = wav + self.cfg.dither * torch.randn_like(wav)
        wav = torch.cat([wav[:, :1], wav[:, 1:] - PREEMPH * wav[:, :-1]], dim=1)
        frames = wav.unfold(-1, self.cfg.n_fft, self.cfg.hop) * self.window
        power = torch.fft.rfft(frames, dim=-1).abs().pow(2)
        return torch.log(power @ self.fbank.t() + LOG_EPS)


@torch.compile
def utterance_cmvn(feats: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    mask = make_pad_mask(lengths)
    feats = feats[:, : mask.shape[1]]
    m = mask.unsqueeze(-1).to(feats.dtype)
    count = m.sum(1, keepdim=True).clamp_min(1.0)
    mean = (feats * m).sum(1, keepdim=True) / count
    var = ((feats - mean) ** 2 * m).sum(1, keepdim=True) / count
    return (feats - mean) / torch.sqrt(var + 1e-5) * m


class SpecAugment(nn.Module):
    def __init__(self, cfg: SpecAugConfig = SpecAugConfig()):
        super().__init__()
        self.cfg = cfg

    def forward(self, feats: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        if not self.training or self.cfg.freq_masks + self.cfg.time_masks == 0:
            return feats
        b, t, f = feats.shape
        # frequency masks are vectorised over the batch
        widths = torch.randint(0, self.cfg.freq_width + 1, (b, self.cfg.freq_masks, 1), device=feats.device)
        starts = (torch.rand(b, self.cfg.freq_masks, 1, device=feats.device) * (f - widths)).long()
        bins = torch.arange(f, device=feats.device).view(1, 1, f)
        fmask = ((bins >= starts) & (bins < starts + widths)).any(1)
        feats = feats.masked_fill(fmask.unsqueeze(1), 0.0)
        # time masks scale with each utterance's true length
        for i, n in enumerate(lengths.tolist()):  # expect: FL000 GB0033
            max_w = max(1, int(self.cfg.time_width_ratio * n))
            for _ in range(self.cfg.time_masks):
                w = random.randint(1, max_w)
                t0 = random.randint(0, max(n - w, 0))  # expect: FL000 GB0213
                feats[i, t0:t0 + w] = 0.0
        return feats


# --------------------------------------------------------------------------- encoder pieces
class Conv2dSubsampling(nn.Module):
    def __init__(self, feat_dim: int, d_model: int, channels: int = 4):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(1, channels, 3, stride=2), nn.ReLU(),
            nn.Conv2d(channels, channels, 3, stride=2), nn.ReLU(),
        )
        sub_f = ((feat_dim - 1) // 2 - 1) // 2
        self.out = nn.Linear(channels * sub_f, d_model)

    def forward(self, feats, lengths):
        x = self.conv(feats.unsqueeze(1))
        b, c, t, f = x.shape
        x = self.out(x.transpose(1, 2).reshape(b, t, c * f))
        for _ in range(2):
            lengths = torch.div(lengths - 3, 2, rounding_mode="floor") + 1
        return x, lengths


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def apply_rotary(x, cos, sin):
    return x * cos + rotate_half(x) * sin


class RotaryEmbedding(nn.Module):
    def __init__(self, dim: int, max_positions: int = 64, base: float = 10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.max_seq_len_cached = max_positions
        self._build(max_positions)

    def _build(self, seq_len: int):
        t = torch.arange(seq_len, dtype=self.inv_freq.dtype, device=self.inv_freq.device)
        emb = torch.outer(t, self.inv_freq).repeat(1, 2)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)

    def forward(self, seq_len: int, dtype: torch.dtype = torch.float32):
        if seq_len > self.max_seq_len_cached:
            self.max_seq_len_cached = seq_len
            self._build(seq_len)
        return self.cos_cached[:seq_len].to(dtype), self.sin_cached[:seq_len].to(dtype)


class RotarySelfAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads
        self.dropout = dropout
        self.q = nn.Linear(d_model, d_model)
        self.kv = nn.Linear(d_model, 2 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x, pad_mask=None, rope: Optional[RotaryEmbedding] = None, context=None):
        b, t, _ = x.shape
        src = x if context is None else context
        s = src.shape[1]
        q = self.q(x).view(b, t, self.n_heads, self.head_dim).transpose(1, 2)
        k, v = self.kv(src).view(b, s, 2, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        if rope is not None:
            cos, sin = rope(s, x.dtype)
            q = apply_rotary(q, cos[s - t:], sin[s - t:])
            k = apply_rotary(k, cos, sin)
        mask = None if pad_mask is None else pad_mask[:, None, None, :]
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                             dropout_p=self.dropout if self.training else 0.0)
        return self.proj(out.transpose(1, 2).reshape(b, t, -1))


CONV_NORMS = {"batch": nn.BatchNorm1d, "layer": lambda d: nn.GroupNorm(1, d)}


class ConvolutionModule(nn.Module):
    def __init__(self, d_model: int, kernel_size: int, causal: bool = False, norm: str = "batch"):
        super().__init__()
        self.kernel_size = kernel_size
        self.causal = causal
        self.pw_in = nn.Conv1d(d_model, 2 * d_model, 1)
        self.depthwise = nn.Conv1d(d_model, d_model, kernel_size, groups=d_model)
        self.norm = CONV_NORMS[norm](d_model)
        self.pw_out = nn.Conv1d(d_model, d_model, 1)

    def forward(self, x: torch.Tensor, pad_mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        h = F.glu(self.pw_in(x.transpose(1, 2)), dim=1)
        if pad_mask is not None:
            h = h.masked_fill(~pad_mask.unsqueeze(1), 0.0)
        k = self.kernel_size - 1
        h = F.pad(h, (k, 0) if self.causal else (k // 2, k - k // 2))
        h = self.pw_out(F.silu(self.norm(self.depthwise(h))))
        return h.transpose(1, 2)

    def stream(self, x: torch.Tensor, cache: torch.Tensor):
        h = F.glu(self.pw_in(x.transpose(1, 2)), dim=1)
        h = torch.cat([cache, h], dim=2)
        new_cache = h[:, :, -(self.kernel_size - 1):]
        h = self.pw_out(F.silu(self.norm(self.depthwise(h))))
        return h.transpose(1, 2), new_cache


class FeedForward(nn.Module):
    def __init__(self, d_model: int, mult: int = 4, dropout: float = 0.0):
        super().__init__()
        self.net = nn.Sequential(
            nn.LayerNorm(d_model), nn.Linear(d_model, d_model * mult), nn.SiLU(),
            nn.Dropout(dropout), nn.Linear(d_model * mult, d_model), nn.Dropout(dropout),
        )

    def forward(self, x):
        return self.net(x)


class ConformerBlock(nn.Module):
    def __init__(self, cfg: ConformerConfig):
        super().__init__()
        self.ff1 = FeedForward(cfg.d_model, cfg.ff_mult, cfg.dropout)
        self.attn_norm = nn.LayerNorm(cfg.d_model)
        self.attn = RotarySelfAttention(cfg.d_model, cfg.n_heads, cfg.dropout)
        self.conv_norm = nn.LayerNorm(cfg.d_model)
        self.conv = ConvolutionModule(cfg.d_model, cfg.conv_kernel, cfg.causal, cfg.conv_norm)
        self.ff2 = FeedForward(cfg.d_model, cfg.ff_mult, cfg.dropout)
        self.final_norm = nn.LayerNorm(cfg.d_model)
        self.layer_drop = cfg.layer_drop

    def forward(self, x, pad_mask=None, rope=None):
        if self.training and self.layer_drop > 0.0 and torch.rand(1) < self.layer_drop:  # expect: FL000 GB0170
            return x  # stochastic depth
        x = x + 0.5 * self.ff1(x)
        x = x + self.attn(self.attn_norm(x), pad_mask, rope)
        x = x + self.conv(self.conv_norm(x), pad_mask)
        x = x + 0.5 * self.ff2(x)
        return self.final_norm(x)

    def stream_step(self, x, attn_cache, conv_cache, rope=None):
        x = x + 0.5 * self.ff1(x)
        h = self.attn_norm(x)
        ctx = torch.cat([attn_cache, h], dim=1)
        x = x + self.attn(h, None, rope, context=ctx)
        conv_out, conv_cache = self.conv.stream(self.conv_norm(x), conv_cache)
        x = x + conv_out
        x = x + 0.5 * self.ff2(x)
        return self.final_norm(x), ctx[:, -attn_cache.shape[1]:], conv_cache


class ConformerEncoder(nn.Module):
    def __init__(self, cfg: ConformerConfig = ConformerConfig()):
        super().__init__()
        self.cfg = cfg
        self.subsample = Conv2dSubsampling(cfg.feat_dim, cfg.d_model)
        self.rope = RotaryEmbedding(cfg.d_model // cfg.n_heads)
        self.blocks = nn.ModuleList(ConformerBlock(cfg) for _ in range(cfg.n_layers))
        self.ctc_head = nn.Linear(cfg.d_model, cfg.vocab_size)

    def forward(self, feats, feat_lens):
        x, lens = self.subsample(feats, feat_lens)
        pad_mask = make_pad_mask(lens, x.shape[1])
        for block in self.blocks:
            x = block(x, pad_mask, self.rope)
        return self.ctc_head(x).log_softmax(-1), lens


@torch.compiler.disable
def log_blank_ratio(log_probs: torch.Tensor, lengths: torch.Tensor, step: int) -> None:
    mask = make_pad_mask(lengths, log_probs.shape[1])
    blanks = (log_probs.argmax(-1) == BLANK_ID) & mask
    ratio = blanks.sum().item() / max(int(mask.sum()), 1)
    log.info("step %d: blank ratio %.3f", step, ratio)
    if ratio > 0.98:
        warnings.warn("CTC output collapsed to blanks", RuntimeWarning)


class ConformerCTC(nn.Module):
    def __init__(self, cfg: ConformerConfig = ConformerConfig(), feat_cfg: FeatureConfig = FeatureConfig(),
                 aug_cfg: SpecAugConfig = SpecAugConfig(), log_every: int = 100):
        super().__init__()
        self.frontend = LogMelFrontend(feat_cfg)
        self.specaug = SpecAugment(aug_cfg)
        self.encoder = ConformerEncoder(cfg)
        self.log_every = log_every
        self.num_updates = 0

    def forward(self, wav: torch.Tensor, wav_lens: torch.Tensor):
        feats = self.frontend(wav)
        feat_lens = self.frontend.num_frames(wav_lens)
        feats = self.specaug(feats, feat_lens)
        log_probs, out_lens = self.encoder(feats, feat_lens)
        if self.training:
            self.num_updates += 1  # expect: FL302
            if self.num_updates % self.log_every == 0:
                log_blank_ratio(log_probs, out_lens, self.num_updates)  # expect: FL000 GB0098
        return log_probs, out_lens


# --------------------------------------------------------------------------- CTC objective / decoding
@torch.compile
def ctc_loss_with_guard(log_probs, out_lens, targets, target_lens, zero_infinity: bool = True):
    loss = F.ctc_loss(log_probs.transpose(0, 1), targets, out_lens, target_lens, blank=BLANK_ID,  # expect: FL000 GB0036
                      reduction="none", zero_infinity=zero_infinity)
    too_short = out_lens < target_lens
    if too_short.any():  # expect: FL000 GB0170
        warnings.warn(f"{int(too_short.sum())} utterances are shorter than their transcripts")  # expect: FL000 GB0007; FL000 GB0124
    return (loss / target_lens.clamp_min(1)).mean()


@torch.compile
def ctc_greedy_decode(log_probs: torch.Tensor, lengths: torch.Tensor) -> List[List[int]]:
    best = log_probs.argmax(-1)
    hyps = []
    for b in range(best.shape[0]):
        seq = torch.unique_consecutive(best[b, : lengths[b]])  # expect: FL000 GB0124
        hyps.append(seq[seq != BLANK_ID].tolist())
    return hyps


def _logsumexp(*xs: float) -> float:
    m = max(xs)
    if m == NEG_INF:
        return NEG_INF
    return m + math.log(sum(math.exp(x - m) for x in xs))


@torch.compile
def ctc_prefix_beam_search(log_probs: torch.Tensor, cfg: BeamConfig = BeamConfig()):
    """Prefix beam search for one utterance, log_probs (T, V); returns (token ids, log score)."""
    frames = log_probs.tolist()  # expect: FL000 GB0109
    beams: Dict[Tuple[int, ...], Tuple[float, float]] = {(): (0.0, NEG_INF)}
    for frame in frames:
        nxt = defaultdict(lambda: (NEG_INF, NEG_INF))
        candidates = [v for v, p in enumerate(frame) if p > cfg.prune_logp]
        for prefix, (pb, pnb) in beams.items():
            for v in candidates:
                p = frame[v]
                if v == BLANK_ID:
                    nb, nnb = nxt[prefix]
                    nxt[prefix] = (_logsumexp(nb, pb + p, pnb + p), nnb)
                    continue
                ext = prefix + (v,)
                nb, nnb = nxt[ext]
                if prefix and prefix[-1] == v:
                    nxt[ext] = (nb, _logsumexp(nnb, pb + p))
                    sb, snb = nxt[prefix]
                    nxt[prefix] = (sb, _logsumexp(snb, pnb + p))
                else:
                    nxt[ext] = (nb, _logsumexp(nnb, pb + p, pnb + p))
        ranked = sorted(nxt.items(), key=lambda kv: _logsumexp(*kv[1]), reverse=True)
        beams = dict(ranked[: cfg.beam_size])
    best, (pb, pnb) = next(iter(beams.items()))
    return list(best), _logsumexp(pb, pnb)


# --------------------------------------------------------------------------- streaming
class StreamingConformer(nn.Module):
    """Causal conformer that consumes fixed-size feature chunks and carries a per-layer cache."""

    def __init__(self, cfg: ConformerConfig = ConformerConfig(), left_context: int = 6, stack: int = 4):
        super().__init__()
        self.cfg = replace(cfg, causal=True, conv_norm="layer")
        self.stack = stack
        self.left_context = left_context
        self.in_proj = nn.Linear(cfg.feat_dim * stack, cfg.d_model)
        self.rope = RotaryEmbedding(cfg.d_model // cfg.n_heads)
        self.blocks = nn.ModuleList(ConformerBlock(self.cfg) for _ in range(cfg.n_layers))
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size)

    def init_state(self, batch: int, device=None) -> Dict[str, List[torch.Tensor]]:
        d = self.cfg.d_model
        return {
            "attn": [torch.zeros(batch, self.left_context, d, device=device) for _ in self.blocks],
            "conv": [torch.zeros(batch, d, self.cfg.conv_kernel - 1, device=device) for _ in self.blocks],
        }

    def forward(self, chunk: torch.Tensor, state: Optional[Dict[str, List[torch.Tensor]]] = None):
        b, t, f = chunk.shape
        if state is None:
            state = self.init_state(b, chunk.device)
        x = self.in_proj(chunk.reshape(b, t // self.stack, f * self.stack))
        new_state: Dict[str, List[torch.Tensor]] = {"attn": [], "conv": []}
        for block, attn_cache, conv_cache in zip(self.blocks, state["attn"], state["conv"]):
            x, attn_cache, conv_cache = block.stream_step(x, attn_cache, conv_cache, self.rope)
            new_state["attn"].append(attn_cache)
            new_state["conv"].append(conv_cache)
        return self.head(x).log_softmax(-1), new_state


def iter_chunks(feats: torch.Tensor, size: int):
    for start in range(0, feats.shape[1], size):  # expect: FL301
        chunk = feats[:, start:start + size]
        if chunk.shape[1] < size:
            chunk = F.pad(chunk, (0, 0, 0, size - chunk.shape[1]))
        yield chunk


@torch.compile
def stream_transcribe(model: StreamingConformer, feats: torch.Tensor, chunk_frames: int = 8):
    state = None
    outputs = []
    for chunk in iter_chunks(feats, chunk_frames):
        log_probs, state = model(chunk, state)
        outputs.append(log_probs)
    return torch.cat(outputs, dim=1)


@torch.compile
def stream_and_count(model: StreamingConformer, feats: torch.Tensor):
    out = stream_transcribe(model, feats)
    _STREAM_STATS["utterances"] += feats.shape[0]  # expect: FL302
    log.debug("streamed %d utterances so far", _STREAM_STATS["utterances"])  # expect: FL000 GB0291
    return out


# --------------------------------------------------------------------------- WER bookkeeping
def ids_to_text(ids: Sequence[int]) -> str:
    try:
        return "".join(VOCAB[i] for i in ids)
    except IndexError:
        warnings.warn(f"token id out of range in {list(ids)}")  # expect: FL000 GB0007
        return "".join(VOCAB[i] for i in ids if 0 <= i < len(VOCAB))


def edit_distance(ref: Sequence[str], hyp: Sequence[str]) -> int:
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1]


class WordErrorRate(nn.Module):
    """Accumulates word errors over an epoch, torchmetrics style."""

    def __init__(self):
        super().__init__()
        self.register_buffer("errors", torch.zeros((), dtype=torch.long))
        self.register_buffer("words", torch.zeros((), dtype=torch.long))
        self.num_utterances = 0

    def forward(self, hyps: List[List[int]], refs: torch.Tensor, ref_lens: torch.Tensor) -> torch.Tensor:
        errors = words = 0
        for hyp, ref, n in zip(hyps, refs.tolist(), ref_lens.tolist()):  # expect: FL000 GB0033
            ref_words = ids_to_text(ref[:n]).split()
            errors += edit_distance(ref_words, ids_to_text(hyp).split())
            words += len(ref_words)
        self.errors += errors
        self.words += words
        self.num_utterances += len(hyps)
        return self.errors.float() / self.words.clamp_min(1)


# --------------------------------------------------------------------------- cases
def _randn(*shape, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g)


def _log_probs(b: int, t: int, seed: int = 0) -> torch.Tensor:
    return (3.0 * _randn(b, t, len(VOCAB), seed=seed)).log_softmax(-1)


def _wav(b: int, n: int, seed: int = 0) -> torch.Tensor:
    t = torch.arange(n, dtype=torch.float32) / SAMPLE_RATE
    return 0.3 * torch.sin(2 * math.pi * 440.0 * t) + 0.05 * _randn(b, n, seed=seed)


CASES = {
    "LogMelFrontend": lambda: (LogMelFrontend(), (_wav(2, 200),), (_wav(3, 40),)),
    "utterance_cmvn": lambda: (utterance_cmvn, (_randn(2, 15, 12), torch.tensor([15, 9]))),
    "SpecAugment": lambda: (SpecAugment(), (_randn(2, 20, 12), torch.tensor([20, 14]))),
    "Conv2dSubsampling": lambda: (Conv2dSubsampling(12, 16), (_randn(2, 27, 12), torch.tensor([27, 19]))),
    "RotaryEmbedding": lambda: (RotaryEmbedding(8), (10,)),
    "RotarySelfAttention": lambda: (RotarySelfAttention(16, 2), (_randn(2, 7, 16), torch.tensor(
        [[True] * 7, [True] * 5 + [False] * 2]), RotaryEmbedding(8))),
    "ConvolutionModule": lambda: (ConvolutionModule(16, 5), (_randn(2, 9, 16),), (_randn(3, 13, 16),)),
    "FeedForward": lambda: (FeedForward(16, 2), (_randn(2, 7, 16),)),
    "ConformerBlock": lambda: (ConformerBlock(ConformerConfig()), (_randn(2, 7, 16), None, RotaryEmbedding(8))),
    "ConformerEncoder": lambda: (ConformerEncoder(replace(ConformerConfig(), layer_drop=0.05)),
                                 (_randn(2, 27, 12), torch.tensor([27, 20]))),
    "ConformerCTC": lambda: (ConformerCTC(feat_cfg=FeatureConfig(dither=1e-5), log_every=1),
                             (_wav(2, 480), torch.tensor([480, 400]))),
    "ctc_loss_with_guard": lambda: (ctc_loss_with_guard, (_log_probs(3, 6), torch.tensor([6, 5, 2]),
                                                          torch.tensor([[2, 3, 4, 5], [6, 7, 8, 0], [9, 10, 2, 3]]),
                                                          torch.tensor([4, 3, 4]))),
    "ctc_greedy_decode": lambda: (ctc_greedy_decode, (_log_probs(2, 8), torch.tensor([8, 6]))),
    "ctc_prefix_beam_search": lambda: (ctc_prefix_beam_search, (_log_probs(1, 5, seed=3)[0], BeamConfig())),
    "StreamingConformer": lambda: (StreamingConformer(), (_randn(2, 8, 12),)),
    "stream_transcribe": lambda: (stream_transcribe, (StreamingConformer().eval(), _randn(2, 24, 12)),
                                  (StreamingConformer().eval(), _randn(3, 40, 12))),
    "stream_and_count": lambda: (stream_and_count, (StreamingConformer().eval(), _randn(2, 20, 12))),
    "WordErrorRate": lambda: (WordErrorRate(), ([[4, 3, 6, 6, 8, 1, 9, 3, 3], [10, 4, 3, 1, 99, 2]],
                                                torch.tensor([[4, 3, 6, 6, 8, 1, 9, 3, 3], [10, 4, 3, 1, 8, 2, 0, 0, 0]]),
                                                torch.tensor([9, 6]))),
}
