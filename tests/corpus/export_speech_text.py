"""Speech and text models shipped via TorchScript / torch.export: log-mel frontend as matmuls
(no stft on the target), CMVN, a KWS convnet, causal-conv / LSTM streaming encoders with explicit
state, CTC / transducer greedy decoders, span post-processing, confidence gating, export helpers."""
import logging
import math
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

logger = logging.getLogger("speech_export")
logger.addHandler(logging.NullHandler())

BLANK_ID = 0
PAD_ID = 0
LOG_EPS = 1e-6
NEG_INF = -1e4
TEMPERATURE = 1.5
KEYWORDS = ("_silence_", "_unknown_", "yes", "no", "up", "down", "left", "right", "on")
NUM_SPECIAL = 2  # silence / unknown are never reported as detections


# ----------------------------------------------------------------------------- configs

@dataclass
class FrontendConfig:
    sample_rate: int = 8000
    n_fft: int = 64
    hop_length: int = 32
    n_mels: int = 10
    f_min: float = 20.0
    preemph: float = 0.97

    @property
    def n_freqs(self) -> int:
        return self.n_fft // 2 + 1


@dataclass
class KWSConfig:
    frontend: FrontendConfig = field(default_factory=FrontendConfig)
    channels: int = 24
    kernel_size: int = 5
    dilations: Tuple[int, ...] = (1, 2, 4)
    num_classes: int = len(KEYWORDS)


@dataclass
class TextConfig:
    vocab_size: int = 50
    dim: int = 16
    heads: int = 2
    layers: int = 2
    max_positions: int = 12
    num_classes: int = 5


# ----------------------------------------------------------------------------- feature math

def mel_filterbank(cfg: FrontendConfig) -> Tensor:
    """(n_freqs, n_mels) triangular HTK filters, built once in numpy."""
    fft_freqs = np.linspace(0.0, cfg.sample_rate / 2, cfg.n_freqs)
    mel_lo, mel_hi = 2595.0 * np.log10(1.0 + np.array([cfg.f_min, cfg.sample_rate / 2]) / 700.0)
    hz_pts = 700.0 * (10.0 ** (np.linspace(mel_lo, mel_hi, cfg.n_mels + 2) / 2595.0) - 1.0)
    fb = np.zeros((cfg.n_freqs, cfg.n_mels), dtype=np.float32)
    for m in range(cfg.n_mels):
        lo, center, hi = hz_pts[m], hz_pts[m + 1], hz_pts[m + 2]
        up = (fft_freqs - lo) / max(center - lo, 1e-5)
        down = (hi - fft_freqs) / max(hi - center, 1e-5)
        fb[:, m] = np.maximum(0.0, np.minimum(up, down))
    return torch.from_numpy(fb)


def preemphasis(wav: Tensor, coeff: float) -> Tensor:
    if coeff <= 0:
        return wav
    return torch.cat([wav[..., :1], wav[..., 1:] - coeff * wav[..., :-1]], dim=-1)


def length_mask(lengths: Tensor, max_len: Optional[int] = None) -> Tensor:
    if max_len is None:
        max_len = int(lengths.max())  # expect: FL000 GB0124; FL202
    positions = torch.arange(max_len, device=lengths.device)
    return positions.unsqueeze(0) < lengths.unsqueeze(1)


def masked_mean(x: Tensor, mask: Tensor, dim: int = 1) -> Tensor:
    weights = mask.unsqueeze(-1).to(x.dtype)
    return (x * weights).sum(dim) / weights.sum(dim).clamp_min(1.0)


def utterance_cmvn(feats: Tensor, lengths: Optional[Tensor] = None, norm_vars: bool = True,
                   eps: float = 1e-5) -> Tensor:
    """Per-utterance mean/variance normalisation over the valid frames of (B, T, F) features."""
    if lengths is None:
        mean = feats.mean(dim=1, keepdim=True)
        var = feats.var(dim=1, keepdim=True, unbiased=False)
    else:
        mask = length_mask(lengths, feats.size(1))
        mean = masked_mean(feats, mask).unsqueeze(1)
        var = masked_mean((feats - mean) ** 2, mask).unsqueeze(1)
    out = feats - mean
    if norm_vars:
        out = out / torch.sqrt(var + eps)
    return out


# ----------------------------------------------------------------------------- frontend / KWS

class LogMelFrontend(nn.Module):
    def __init__(self, cfg: FrontendConfig):
        super().__init__()
        self.cfg = cfg
        angle = 2.0 * math.pi * np.outer(np.arange(cfg.n_fft), np.arange(cfg.n_freqs)) / cfg.n_fft
        angle = torch.from_numpy(angle).float()
        self.register_buffer("window", torch.hann_window(cfg.n_fft, periodic=True), persistent=False)
        self.register_buffer("dft_cos", angle.cos(), persistent=False)
        self.register_buffer("dft_sin", -angle.sin(), persistent=False)
        self.register_buffer("mel_fb", mel_filterbank(cfg), persistent=False)

    def forward(self, wav: Tensor) -> Tensor:
        if wav.dim() == 1:
            wav = wav.unsqueeze(0)
        wav = preemphasis(wav, self.cfg.preemph)
        short = self.cfg.n_fft - wav.shape[-1]
        if short > 0:  # clips shorter than one window still give one frame  # expect: FL203
            wav = F.pad(wav, (0, short))
        frames = wav.unfold(-1, self.cfg.n_fft, self.cfg.hop_length) * self.window
        power = (frames @ self.dft_cos).pow(2) + (frames @ self.dft_sin).pow(2)
        return torch.log(power @ self.mel_fb + LOG_EPS)


class DSConvBlock(nn.Module):
    """Depthwise-separable 1-D conv + BN + ReLU with a residual (MatchboxNet-style cell)."""

    def __init__(self, channels: int, kernel_size: int, dilation: int = 1):
        super().__init__()
        pad = dilation * (kernel_size - 1) // 2
        self.depthwise = nn.Conv1d(channels, channels, kernel_size, padding=pad, dilation=dilation,
                                   groups=channels, bias=False)
        self.pointwise = nn.Conv1d(channels, channels, 1, bias=False)
        self.norm = nn.BatchNorm1d(channels)

    def forward(self, x: Tensor) -> Tensor:
        y = self.norm(self.pointwise(self.depthwise(x)))
        return x + F.relu(y)


class KeywordSpotter(nn.Module):
    def __init__(self, cfg: Optional[KWSConfig] = None):
        super().__init__()
        self.cfg = cfg = cfg or KWSConfig()
        fe = cfg.frontend
        self.frontend = LogMelFrontend(fe)
        self.stem = nn.Conv1d(fe.n_mels, cfg.channels, 3, padding=1)
        self.blocks = nn.Sequential(*[DSConvBlock(cfg.channels, cfg.kernel_size, d)
                                      for d in cfg.dilations])
        self.classifier = nn.Linear(cfg.channels, cfg.num_classes)

    def embed(self, wav: Tensor) -> Tensor:
        feats = utterance_cmvn(self.frontend(wav), norm_vars=False)
        x = self.blocks(F.relu(self.stem(feats.transpose(1, 2))))
        return x.mean(dim=-1)

    def forward(self, wav: Tensor) -> Tensor:
        return self.classifier(self.embed(wav))


KWS_POSTPROCESS: List[Callable[[Tensor], Tensor]] = [
    lambda logits: logits / TEMPERATURE,
    partial(torch.softmax, dim=-1),
    partial(torch.clamp, min=1e-4, max=1.0),
]


def kws_posteriors(logits: Tensor, steps: Sequence[Callable] = KWS_POSTPROCESS) -> Tensor:
    for step in steps:
        logits = step(logits)
    return logits


def gate_predictions(logits: Tensor, threshold: float = 0.5,
                     unknown_index: int = KEYWORDS.index("_unknown_")) -> Tuple[Tensor, Tensor]:
    """Low-confidence clips are reported as _unknown_ (what the app shows as 'try again')."""
    conf, index = kws_posteriors(logits).max(dim=-1)
    index = torch.where(conf >= threshold, index, torch.full_like(index, unknown_index))
    return index, conf


def topk_keywords(logits: Tensor, k: int = 3) -> Tuple[Tensor, Tensor]:
    k = min(k, logits.size(-1) - NUM_SPECIAL)  # expect: FL203
    probs = kws_posteriors(logits)[..., NUM_SPECIAL:]
    scores, idx = probs.topk(k, dim=-1)
    return scores, idx + NUM_SPECIAL


class StreamingDetector(nn.Module):
    """Posterior smoothing over the last few windows plus a threshold, for a stream of one."""

    def __init__(self, model: KeywordSpotter, window: int = 3, threshold: float = 0.6):
        super().__init__()
        self.model = model
        self.window = window
        self.threshold = threshold

    def forward(self, wav: Tensor, history: Tensor) -> Tuple[Tensor, Tensor]:
        probs = kws_posteriors(self.model(wav))
        history = torch.cat([history, probs], dim=0)[-self.window:]
        smoothed = history.mean(dim=0)
        score, index = smoothed[NUM_SPECIAL:].max(dim=0)
        logger.debug("kws smoothed posteriors: %s", smoothed)  # expect: FL000 GB0291; FL204
        if score < self.threshold:  # expect: FL000 GB0170; FL201
            return torch.zeros_like(index), history
        return index + NUM_SPECIAL, history


# ----------------------------------------------------------------------------- streaming ASR

class CausalConv1d(nn.Conv1d):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, dilation: int = 1):
        super().__init__(in_channels, out_channels, kernel_size, dilation=dilation)
        self.context = (kernel_size - 1) * dilation

    def forward(self, x: Tensor, cache: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
        if cache is None:
            x = F.pad(x, (self.context, 0))
        else:
            x = torch.cat([cache, x], dim=-1)
        return super().forward(x), x[..., -self.context:]


class StreamingConvEncoder(nn.Module):
    def __init__(self, in_dim: int, channels: int, kernel_size: int = 3, dilations=(1, 2, 4)):
        super().__init__()
        self.inp = nn.Linear(in_dim, channels)
        self.convs = nn.ModuleList(CausalConv1d(channels, channels, kernel_size, d) for d in dilations)
        self.norms = nn.ModuleList(nn.LayerNorm(channels) for _ in dilations)

    def initial_state(self, batch_size: int) -> Tuple[Tensor, ...]:
        weight = self.inp.weight
        return tuple(weight.new_zeros(batch_size, weight.size(0), conv.context) for conv in self.convs)

    def forward(self, feats: Tensor, state: Optional[Tuple[Tensor, ...]] = None):
        x = self.inp(feats).transpose(1, 2)
        if state is None:
            state = self.initial_state(x.size(0))
        new_state = []
        for conv, norm, cache in zip(self.convs, self.norms, state):
            y, cache = conv(x, cache)
            x = x + norm(F.gelu(y).transpose(1, 2)).transpose(1, 2)
            new_state.append(cache)
        return x.transpose(1, 2), tuple(new_state)


class StreamingCTCModel(nn.Module):
    """Features come from the app's frontend; stacks `subsample` frames, runs one chunk."""

    def __init__(self, n_mels: int = 10, vocab_size: int = 12, channels: int = 20, subsample: int = 2):
        super().__init__()
        self.subsample = subsample
        self.encoder = StreamingConvEncoder(n_mels * subsample, channels)
        self.head = nn.Linear(channels, vocab_size)

    def stack_frames(self, feats: Tensor) -> Tensor:
        b, t, f = feats.shape
        t = t - t % self.subsample
        return feats[:, :t].reshape(b, t // self.subsample, f * self.subsample)

    def forward(self, feats: Tensor, state: Optional[Tuple[Tensor, ...]] = None):
        enc, state = self.encoder(self.stack_frames(feats), state)
        return self.head(enc).log_softmax(dim=-1), state


def ctc_collapse(log_probs: Tensor, blank: int = BLANK_ID) -> Tensor:
    """Fixed-shape greedy CTC: repeated and blank frames become -1, the app drops them."""
    best = log_probs.argmax(dim=-1)
    prev = F.pad(best[:, :-1], (1, 0), value=blank)
    keep = (best != prev) & (best != blank)
    return torch.where(keep, best, torch.full_like(best, -1))


def greedy_tokens(log_probs: Tensor, blank: int = BLANK_ID) -> Tensor:
    best = log_probs[0].argmax(dim=-1)
    collapsed = torch.unique_consecutive(best)  # expect: FL000 GB0036
    return collapsed[collapsed != blank]  # expect: FL000 GB0036


decode_tokens = torch.compile(greedy_tokens, dynamic=False)


@torch.compile(dynamic=True)
def chunk_features(feats: Tensor, chunk_size: int = 4, left_context: int = 2) -> Tensor:
    """(B, T, F) -> (B, N, left_context + chunk_size, F) overlapping chunks for streaming."""
    remainder = feats.size(1) % chunk_size
    if remainder:  # expect: FL301
        feats = F.pad(feats, (0, 0, 0, chunk_size - remainder))
    feats = F.pad(feats, (0, 0, left_context, 0))
    return feats.unfold(1, chunk_size + left_context, chunk_size).permute(0, 1, 3, 2)


# ----------------------------------------------------------------------------- transducer

class LSTMEncoder(nn.Module):
    def __init__(self, in_dim: int, hidden: int, num_layers: int = 2):
        super().__init__()
        self.lstm = nn.LSTM(in_dim, hidden, num_layers, batch_first=True)

    def forward(self, x: Tensor, hx: Optional[Tuple[Tensor, Tensor]] = None):
        if hx is None:
            zeros = x.new_zeros(self.lstm.num_layers, x.size(0), self.lstm.hidden_size)  # expect: FL000 GB0014
            hx = (zeros, zeros)
        out, (h, c) = self.lstm(x, hx)  # expect: FL203
        return out, h, c


class Transducer(nn.Module):
    """LSTM encoder + stateless predictor (embedding of the previous token) + joiner."""

    def __init__(self, in_dim: int = 10, vocab_size: int = 9, dim: int = 16):
        super().__init__()
        self.encoder = LSTMEncoder(in_dim, dim)
        self.embed = nn.Embedding(vocab_size, dim, padding_idx=BLANK_ID)
        self.joint = nn.Linear(dim, vocab_size)

    def joiner(self, enc: Tensor, pred: Tensor) -> Tensor:
        return self.joint(torch.tanh(enc.unsqueeze(2) + pred.unsqueeze(1)))

    def forward(self, feats: Tensor, targets: Tensor) -> Tensor:
        enc, _, _ = self.encoder(feats)
        pred = self.embed(F.pad(targets, (1, 0), value=BLANK_ID))
        return self.joiner(enc, pred).log_softmax(dim=-1)


def greedy_transducer_search(model: Transducer, feats: Tensor, max_symbols: int = 2) -> List[int]:
    enc, _, _ = model.encoder(feats)
    hyp = [BLANK_ID]
    for t in range(enc.size(1)):
        for _ in range(max_symbols):
            pred = model.embed(torch.tensor([hyp[-1:]]))
            token = int(model.joiner(enc[:, t:t + 1], pred).argmax(dim=-1))  # expect: FL000 GB0124; FL202
            if token == BLANK_ID:
                break
            hyp.append(token)
    return hyp[1:]


class GreedyTransducerDecoder(nn.Module):
    """What gets exported for the demo app: audio features in, token ids out (batch of one)."""

    def __init__(self, model: Transducer, max_symbols: int = 2):
        super().__init__()
        self.model = model
        self.max_symbols = max_symbols

    def forward(self, feats: Tensor) -> Tensor:
        hyp = greedy_transducer_search(self.model, feats, self.max_symbols)
        return torch.tensor(hyp, dtype=torch.long)


# ----------------------------------------------------------------------------- text models

class SelfAttentionBlock(nn.Module):
    def __init__(self, dim: int, heads: int, ff_mult: int = 2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, ff_mult * dim), nn.GELU(), nn.Linear(ff_mult * dim, dim))

    def attend(self, x: Tensor, key_padding_mask: Optional[Tensor]) -> Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)  # expect: FL203
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.size(-1))  # expect: FL203
        if key_padding_mask is not None:
            scores = scores.masked_fill(~key_padding_mask[:, None, None, :], float("-inf"))
        ctx = scores.softmax(dim=-1) @ v
        return self.out(ctx.transpose(1, 2).reshape(b, t, d))

    def forward(self, x: Tensor, key_padding_mask: Optional[Tensor] = None) -> Tensor:
        x = x + self.attend(self.ln1(x), key_padding_mask)
        return x + self.ff(self.ln2(x))


class TextEncoder(nn.Module):
    def __init__(self, cfg: TextConfig):
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab_size, cfg.dim, padding_idx=PAD_ID)
        self.pos = nn.Embedding(cfg.max_positions, cfg.dim)
        self.blocks = nn.ModuleList(SelfAttentionBlock(cfg.dim, cfg.heads) for _ in range(cfg.layers))
        self.norm = nn.LayerNorm(cfg.dim)

    def forward(self, tokens: Tensor, mask: Optional[Tensor] = None) -> Tensor:
        if mask is None:
            mask = tokens != PAD_ID
        x = self.tok(tokens) + self.pos(torch.arange(tokens.size(1), device=tokens.device))
        for block in self.blocks:
            x = block(x, mask)
        return self.norm(x)


class TextClassifier(nn.Module):
    def __init__(self, cfg: Optional[TextConfig] = None):
        super().__init__()
        cfg = cfg or TextConfig()
        self.encoder = TextEncoder(cfg)
        self.head = nn.Linear(cfg.dim, cfg.num_classes)

    @property
    def max_positions(self) -> int:
        return self.encoder.cfg.max_positions

    def forward(self, tokens: Tensor, lengths: Optional[Tensor] = None) -> Tensor:
        if tokens.size(1) > self.max_positions:  # same right-truncation as the training collate  # expect: FL203; FL301
            tokens = tokens[:, :self.max_positions]
            lengths = lengths.clamp(max=self.max_positions) if lengths is not None else None
        mask = length_mask(lengths, tokens.size(1)) if lengths is not None else tokens != PAD_ID
        return self.head(masked_mean(self.encoder(tokens, mask), mask))


def pool_utterances(enc: Tensor, lengths: Tensor) -> Tensor:
    """Utterance embeddings for the speaker/intent head: mean over each utterance's frames."""
    mask = length_mask(lengths)
    return masked_mean(enc[:, :mask.size(1)], mask)


utterance_embeddings = torch.compile(pool_utterances)


def span_scores(start_logits: Tensor, end_logits: Tensor, max_answer_len: int = 4):
    """Best (start, end) with start <= end < start + max_answer_len, batched, no Python loop."""
    scores = start_logits.unsqueeze(-1) + end_logits.unsqueeze(-2)
    length = scores.size(-1)
    ones = torch.ones(length, length, dtype=torch.bool, device=scores.device)
    band = ones.triu() & ~ones.triu(max_answer_len)
    flat = scores.masked_fill(~band, NEG_INF).flatten(-2)
    best, index = flat.max(dim=-1)
    return index // length, index % length, best


def best_span(start_logits: Tensor, end_logits: Tensor, max_answer_len: int = 4):
    """SQuAD-style post-processing for a single example, as in the demo script."""
    start = int(start_logits.argmax())  # expect: FL202
    stop = min(start + max_answer_len, end_logits.size(-1))  # expect: FL203
    end = start + int(end_logits[start:stop].argmax())  # expect: FL202
    score = start_logits[start] + end_logits[end]
    return torch.tensor([start, end]), score


# ----------------------------------------------------------------------------- export helpers

EXPORTERS: Dict[str, Callable[..., object]] = {}


def register_exporter(name: str):
    def wrap(fn):
        EXPORTERS[name] = fn
        return fn
    return wrap


@register_exporter("kws")
def export_kws(path: str, model: Optional[KeywordSpotter] = None):
    wav, logits = torch.zeros(1, 400), torch.zeros(1, len(KEYWORDS))
    torch.jit.trace(KeywordSpotter().eval(), (wav,)).save(path)
    torch.jit.trace(gate_predictions, (logits,)).save(path.replace(".pt", "_gate.pt"))
    torch.jit.trace(topk_keywords, (logits,)).save(path.replace(".pt", "_topk.pt"))
    program = torch.export.export(StreamingDetector(model.eval()), (wav, torch.zeros(2, len(KEYWORDS))))
    torch.export.save(program, path.replace(".pt", "_stream.pt2"))


@register_exporter("asr")
def export_asr(path: str, model: Transducer):
    feats, log_probs = torch.zeros(1, 8, 10), torch.zeros(1, 8, 12)
    caches = tuple(torch.zeros(1, 20, c) for c in (2, 4, 8))  # causal conv left contexts
    modules = {
        "cmvn": torch.jit.trace(utterance_cmvn, (feats, torch.tensor([8]))),
        "ctc": torch.jit.trace(StreamingCTCModel().eval(), (feats, caches)),
        "collapse": torch.jit.trace(ctc_collapse, (log_probs,)),
        "tokens": torch.jit.trace(greedy_tokens, (log_probs,)),
        "transducer": torch.jit.trace(GreedyTransducerDecoder(model.eval()), (feats,)),
        "pool": torch.jit.trace(pool_utterances, (torch.zeros(2, 8, 16), torch.tensor([8, 5]))),
    }
    for name, module in modules.items():
        module.save(f"{path}/{name}.pt")
    return torch.export.export(LSTMEncoder(10, 16).eval(), (feats,))


@register_exporter("text")
def export_text(path: str, cfg: Optional[TextConfig] = None):
    tokens = torch.ones(1, 8, dtype=torch.long)
    classifier = torch.export.export(TextClassifier(cfg).eval(), (tokens, torch.tensor([8])))
    spans = torch.jit.trace(best_span, (torch.zeros(8), torch.zeros(8)))
    batched = torch.jit.trace(span_scores, (torch.zeros(1, 8), torch.zeros(1, 8)))
    return classifier, spans, batched


# ----------------------------------------------------------------------------- cases

def _randn(*shape: int, k: int = 0, scale: float = 1.0) -> Tensor:
    return scale * torch.randn(*shape, generator=torch.Generator().manual_seed(k))


def _log_probs(*shape: int, k: int = 2) -> Tensor:
    return _randn(*shape, k=k, scale=3.0).log_softmax(dim=-1)


def _tokens(batch: int, length: int, k: int = 3) -> Tensor:
    tokens = torch.randint(1, 50, (batch, length), generator=torch.Generator().manual_seed(k))
    tokens[-1, length - 2:] = PAD_ID
    return tokens


_wav = partial(_randn, scale=0.1)
_kws = lambda: KeywordSpotter().eval()  # noqa: E731

CASES = {
    "KeywordSpotter": lambda: (_kws(), (_wav(2, 400),)),
    "StreamingDetector": lambda: (StreamingDetector(_kws()), (_wav(3, 336), torch.zeros(2, 9))),
    "StreamingCTCModel": lambda: (StreamingCTCModel().eval(), (_randn(2, 9, 10),)),
    "GreedyTransducerDecoder": lambda: (GreedyTransducerDecoder(Transducer().eval()), (_randn(1, 5, 10),)),
    "TextClassifier": lambda: (TextClassifier().eval(), (_tokens(3, 7), torch.tensor([7, 6, 5])),
                               (_tokens(3, 14), torch.tensor([14, 9, 12]))),
    "decode_tokens": lambda: (decode_tokens, (_log_probs(1, 7, 6),)),
    "utterance_embeddings": lambda: (utterance_embeddings, (_randn(2, 6, 16), torch.tensor([6, 4]))),
    "chunk_features": lambda: (chunk_features, (_randn(2, 10, 6),), (_randn(2, 12, 6),)),
}

TRACED = {
    "KeywordSpotter": lambda: (_kws(), (_wav(1, 48),)),
    "gate_predictions": lambda: (gate_predictions, (_randn(2, 9, k=5),)),
    "topk_keywords": lambda: (topk_keywords, (_randn(2, 9, k=6),)),
    "StreamingDetector": lambda: (StreamingDetector(_kws()), (_wav(1, 336), torch.zeros(2, 9))),
    "utterance_cmvn": lambda: (utterance_cmvn, (_randn(2, 7, 10), torch.tensor([7, 5]))),
    "StreamingCTCModel": lambda: (StreamingCTCModel().eval(),
                                  (_randn(1, 9, 10), tuple(torch.zeros(1, 20, c) for c in (2, 4, 8)))),
    "ctc_collapse": lambda: (ctc_collapse, (_log_probs(2, 7, 12),)),
    "greedy_tokens": lambda: (greedy_tokens, (_log_probs(1, 7, 12),)),
    "GreedyTransducerDecoder": lambda: (GreedyTransducerDecoder(Transducer().eval()), (_randn(1, 4, 10),)),
    "pool_utterances": lambda: (pool_utterances, (_randn(2, 6, 16), torch.tensor([6, 4]))),
    "LSTMEncoder": lambda: (LSTMEncoder(10, 16).eval(), (_randn(2, 6, 10),)),
    "TextClassifier": lambda: (TextClassifier().eval(), (_tokens(2, 7), torch.tensor([7, 5]))),
    "best_span": lambda: (best_span, (_randn(8, k=7), _randn(8, k=8))),
    "span_scores": lambda: (span_scores, (_randn(2, 8, k=7), _randn(2, 8, k=8))),
}
