"""On-device streaming audio as shipped via TorchScript / torch.export: log-mel with pre-emphasis and
cached frame tails, running / per-utterance CMVN, a cached-conv keyword spotter with a feature ring
buffer, energy VAD gating, posterior smoothing and wake-word logic, a chunked conformer encoder with
left-context attention caches, a per-chunk session wrapper, CTC greedy decoding, export helpers."""
import logging
import math
from dataclasses import dataclass, replace
from functools import partial
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

logger = logging.getLogger("streaming_audio_export")
logger.addHandler(logging.NullHandler())

SAMPLE_RATE = 16000
SUPPORTED_RATES = (8000, 16000)
PREEMPHASIS = 0.97
LOG_EPS = 1e-6
BLANK_ID = 0
WAKE_THRESHOLD = 0.6
REFRACTORY_FRAMES = 8
DEBUG_STREAMING = False
KEYWORDS = ("_silence_", "_unknown_", "hey_device", "stop", "next")
THRESHOLDS = {"hey_device": WAKE_THRESHOLD, "stop": 0.7, "next": 0.75}

@dataclass
class FrontendConfig:
    sample_rate: int = SAMPLE_RATE
    n_fft: int = 64
    win_length: int = 48
    hop_length: int = 16
    n_mels: int = 10
    f_min: float = 20.0
    f_max: Optional[float] = None
    preemphasis: float = PREEMPHASIS
    normalize: str = "utterance"  # "utterance" | "running" | "none"

@dataclass
class EncoderConfig:
    n_mels: int = 10
    d_model: int = 24
    heads: int = 3
    layers: int = 2
    kernel_size: int = 5
    chunk_size: int = 4
    left_chunks: int = 2
    vocab: int = 12
    activation: str = "silu"
    ff_scale: float = 0.5

STREAMING_FRONTEND = replace(FrontendConfig(), normalize="none")

def hz_to_mel(freq):
    return 2595.0 * np.log10(1.0 + np.asarray(freq, dtype=np.float64) / 700.0)

def mel_to_hz(mel):
    return 700.0 * (10.0 ** (np.asarray(mel, dtype=np.float64) / 2595.0) - 1.0)

def mel_filterbank(cfg: FrontendConfig) -> Tensor:
    """HTK-style triangular filters as an (n_freqs, n_mels) matrix (no librosa on the device)."""
    f_max = cfg.f_max or cfg.sample_rate / 2
    fft_freqs = np.linspace(0.0, cfg.sample_rate / 2, cfg.n_fft // 2 + 1)
    edges = mel_to_hz(np.linspace(hz_to_mel(cfg.f_min), hz_to_mel(f_max), cfg.n_mels + 2))
    lower, center, upper = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    rising = (fft_freqs[None] - lower) / (center - lower)
    falling = (upper - fft_freqs[None]) / (upper - center)
    return torch.from_numpy(np.maximum(0.0, np.minimum(rising, falling)).T.astype(np.float32))

def validate_sample_rate(sample_rate: int, supported: Sequence[int] = SUPPORTED_RATES) -> int:
    if sample_rate not in supported:
        raise ValueError(f"unsupported sample rate {sample_rate}; expected one of {tuple(supported)}")
    return sample_rate

def pre_emphasis(wave: Tensor, coeff: float = PREEMPHASIS, prev: Optional[Tensor] = None) -> Tensor:
    """y[n] = x[n] - coeff * x[n-1]; `prev` is the last raw sample of the previous chunk."""
    if coeff == 0.0:
        return wave
    first = wave[..., :1] if prev is None else prev
    return wave - coeff * torch.cat([first, wave[..., :-1]], dim=-1)

def check_audio(wave: Tensor, name: str = "chunk") -> Tensor:
    if not torch.isfinite(wave).all():  # expect: FL000 GB0170; FL201
        raise ValueError(f"{name} has NaN/Inf samples (microphone driver glitch?)")
    return wave

def pad_or_trim(wave: Tensor, length: int, dim: int = -1) -> Tensor:
    n = wave.size(dim)
    if n > length:  # expect: FL203
        logger.warning("chunk of %d samples trimmed to %d", n, length)
        return wave.narrow(dim, 0, length)
    if n < length:  # expect: FL203; FL301
        trailing = wave.dim() - 1 - dim % wave.dim()
        return F.pad(wave, [0, 0] * trailing + [0, length - n])
    return wave

def session_chunk_samples(cfg: FrontendConfig, chunk_ms: float) -> int:
    """Samples per streaming step: `chunk_ms` of new audio plus the overlap of the first frame."""
    return int(round(cfg.sample_rate * chunk_ms / 1000.0)) + cfg.win_length - cfg.hop_length

def cmvn_per_utterance(feats: Tensor, num_frames: Optional[Tensor] = None, eps: float = 1e-5) -> Tensor:
    """(B, T, C) mean/variance normalisation over each utterance's valid frames."""
    if num_frames is None:
        mean, std = feats.mean(dim=1, keepdim=True), feats.std(dim=1, keepdim=True)
    else:
        valid = (torch.arange(feats.size(1))[None, :] < num_frames[:, None]).unsqueeze(-1)
        count = num_frames.clamp(min=2).to(feats.dtype)[:, None, None]
        mean = (feats * valid).sum(dim=1, keepdim=True) / count
        std = (((feats - mean) * valid) ** 2).sum(dim=1, keepdim=True).div(count - 1).sqrt()
    return (feats - mean) / (std + eps)

NORMALIZERS = {"utterance": cmvn_per_utterance, "none": lambda feats, num_frames=None: feats}

class RunningCMVN(nn.Module):
    """Exponential running mean/var, adapted on-device to the speaker and the room."""
    def __init__(self, dim: int, momentum: float = 0.05, warmup: int = 4):
        super().__init__()
        self.momentum, self.warmup, self.adapting = momentum, warmup, True
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("var", torch.ones(dim))
        self.updates = 0
    def forward(self, feats: Tensor) -> Tensor:
        if self.adapting:
            rate = self.momentum if self.updates >= self.warmup else 1.0 / (self.updates + 1)
            with torch.no_grad():
                self.mean.lerp_(feats.mean(dim=(0, 1)), rate)
                self.var.lerp_(feats.var(dim=(0, 1)), rate)
            self.updates += 1  # expect: FL302
            logger.debug("running CMVN update %d at rate %.3f", self.updates, rate)  # expect: FL000 GB0291
        return (feats - self.mean) * torch.rsqrt(self.var + LOG_EPS)

class LogMelExtractor(nn.Module):
    def __init__(self, cfg: Optional[FrontendConfig] = None):
        super().__init__()
        self.cfg = cfg = cfg or FrontendConfig()
        window = np.hanning(cfg.win_length + 2)[1:-1].astype(np.float32)
        self.register_buffer("window", torch.from_numpy(window), persistent=False)
        self.register_buffer("fbank", mel_filterbank(cfg), persistent=False)
        self.cmvn = RunningCMVN(cfg.n_mels) if cfg.normalize == "running" else None
        self.normalize = None if self.cmvn is not None else NORMALIZERS[cfg.normalize]
    @property
    def n_mels(self) -> int:
        return self.cfg.n_mels
    def log_mel(self, frames: Tensor) -> Tensor:
        frames = frames - frames.mean(dim=-1, keepdim=True)  # per-frame DC removal, as Kaldi does
        spec = torch.fft.rfft(frames * self.window, n=self.cfg.n_fft)
        power = spec.real.pow(2) + spec.imag.pow(2)
        return torch.log(torch.matmul(power, self.fbank).clamp_min(LOG_EPS))
    def apply_norm(self, feats: Tensor, num_frames: Optional[Tensor] = None) -> Tensor:
        return self.cmvn(feats) if self.cmvn is not None else self.normalize(feats, num_frames)
    def forward(self, wave: Tensor, lengths: Optional[Tensor] = None) -> Tensor:
        if wave.dim() == 1:
            wave = wave.unsqueeze(0)
        emphasized = pre_emphasis(wave, self.cfg.preemphasis)
        feats = self.log_mel(emphasized.unfold(-1, self.cfg.win_length, self.cfg.hop_length))
        if lengths is not None and (lengths > wave.size(-1)).any():  # expect: FL000 GB0170
            raise ValueError(f"lengths {lengths.tolist()} exceed the padded length {wave.size(-1)}")
        num_frames = None if lengths is None else (lengths - self.cfg.win_length) // self.cfg.hop_length + 1
        return self.apply_norm(feats, num_frames)

class StreamingLogMel(LogMelExtractor):
    """Chunk-in, frames-out. Keeps the samples of the last partial frame plus the last raw sample
    for pre-emphasis, so concatenated chunk outputs equal the offline features."""
    def __init__(self, cfg: Optional[FrontendConfig] = None, batch: int = 2):
        super().__init__(cfg or STREAMING_FRONTEND)
        self.register_buffer("tail", torch.zeros(batch, self.cfg.win_length - self.cfg.hop_length))
        self.register_buffer("last_sample", torch.zeros(batch, 1))
    def forward(self, chunk: Tensor, lengths: Optional[Tensor] = None) -> Tensor:
        assert chunk.size(-1) % self.cfg.hop_length == 0, "chunks must be a whole number of hops"  # expect: FL203
        emphasized = pre_emphasis(chunk, self.cfg.preemphasis, self.last_sample)
        self.last_sample.copy_(chunk[:, -1:])
        buf = torch.cat([self.tail, emphasized], dim=-1)
        self.tail.copy_(buf[:, buf.size(-1) - self.tail.size(-1):])
        return self.apply_norm(self.log_mel(buf.unfold(-1, self.cfg.win_length, self.cfg.hop_length)))

ACTIVATIONS = {"relu": nn.ReLU, "silu": nn.SiLU, "swish": nn.SiLU, "hardswish": nn.Hardswish}

def resolve_activation(name: str) -> nn.Module:
    try:
        return ACTIVATIONS[name.lower()]()
    except KeyError:
        raise ValueError(f"unknown activation {name!r}; expected one of {sorted(ACTIVATIONS)}") from None

class CachedDepthwiseConv(nn.Module):
    """Causal depthwise conv; its left context is the tail of the previous chunk (cache in/out)."""
    def __init__(self, channels: int, kernel_size: int, dilation: int = 1):
        super().__init__()
        self.context = (kernel_size - 1) * dilation
        self.conv = nn.Conv1d(channels, channels, kernel_size, dilation=dilation, groups=channels)
    def forward(self, x: Tensor, cache: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
        if cache is None:
            cache = x.new_zeros(x.size(0), x.size(1), self.context)
        x = torch.cat([cache, x], dim=-1)
        return self.conv(x), x[..., x.size(-1) - self.context:]

class TCBlock(nn.Module):
    def __init__(self, channels: int, kernel_size: int, dilation: int, act: nn.Module):
        super().__init__()
        self.dw = CachedDepthwiseConv(channels, kernel_size, dilation)
        self.pw, self.norm, self.act = nn.Conv1d(channels, channels, 1), nn.BatchNorm1d(channels), act
    def forward(self, x: Tensor, cache: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
        y, cache = self.dw(x, cache)
        return x + self.act(self.norm(self.pw(y))), cache

class TCKeywordNet(nn.Module):
    """Dilated temporal-conv KWS with per-frame logits, streamable through its conv caches."""
    def __init__(self, n_mels: int = 10, channels: int = 12, kernel_size: int = 3,
                 dilations: Sequence[int] = (1, 2, 4), num_classes: int = len(KEYWORDS), activation: str = "relu"):
        super().__init__()
        act = resolve_activation(activation)
        self.num_classes = num_classes
        self.stem = nn.Conv1d(n_mels, channels, 1)
        self.blocks = nn.ModuleList(TCBlock(channels, kernel_size, d, act) for d in dilations)
        self.head = nn.Linear(channels, num_classes)
    @property
    def receptive_field(self) -> int:
        return 1 + sum(block.dw.context for block in self.blocks)
    def init_caches(self, batch: int) -> Tuple[Tensor, ...]:
        return tuple(torch.zeros(batch, b.dw.conv.in_channels, b.dw.context) for b in self.blocks)
    def forward(self, feats: Tensor, caches: Optional[Sequence[Tensor]] = None) -> Tuple[Tensor, Tuple[Tensor, ...]]:
        x = self.stem(feats.transpose(1, 2))
        new_caches = []
        for i, block in enumerate(self.blocks):
            x, cache = block(x, caches[i] if caches is not None else None)
            new_caches.append(cache)
        return self.head(x.transpose(1, 2)), tuple(new_caches)

def smooth_posteriors(probs: Tensor, window: int = 4) -> Tensor:
    """Causal moving average of (B, T, K) posteriors over the last `window` frames."""
    if window <= 1:
        return probs
    padded = F.pad(probs.transpose(1, 2), (window - 1, 0), mode="replicate")
    return F.avg_pool1d(padded, window, stride=1).transpose(1, 2)

def log_detection(keyword: str, score: Tensor, streams: List[int], level: int = logging.INFO) -> None:
    logger.log(level, "wake word %r on streams %s", keyword, streams)  # expect: FL000 GB0291; FL204

def check_score_range(keyword: str, score: Tensor, streams: List[int], lo: float = 0.0, hi: float = 1.0):
    assert ((score >= lo) & (score <= hi)).all(), f"{keyword}: posteriors outside [{lo}, {hi}]"  # expect: FL000 GB0170

DETECTION_HOOKS: List[Callable[[str, Tensor, List[int]], None]] = [log_detection]

class WakeWordDetector(nn.Module):
    def __init__(self, frontend: LogMelExtractor, model: TCKeywordNet, keyword: str = "hey_device", threshold=None,
                 smooth_window: int = 4, refractory: int = REFRACTORY_FRAMES, hooks: Optional[List[Callable]] = None):
        super().__init__()
        self.frontend, self.model, self.keyword = frontend, model, keyword
        self.keyword_id = KEYWORDS.index(keyword)
        self.threshold = THRESHOLDS.get(keyword, WAKE_THRESHOLD) if threshold is None else threshold
        self.smooth = partial(smooth_posteriors, window=smooth_window)
        self.refractory, self.cooldown = refractory, 0
        self.hooks = DETECTION_HOOKS if hooks is None else hooks
    def forward(self, wave: Tensor) -> Tensor:
        logits, _ = self.model(self.frontend(wave))
        probs = self.smooth(logits.softmax(dim=-1))
        score = probs[..., self.keyword_id].amax(dim=1)
        fired = [b for b, hit in enumerate((score > self.threshold).tolist()) if hit]  # expect: FL000 GB0109; FL202
        if fired and self.cooldown == 0:
            for hook in self.hooks:
                hook(self.keyword, score, fired)
            self.cooldown = self.refractory
        else:
            self.cooldown = max(0, self.cooldown - probs.size(1))
        return score

class EnergyVAD(nn.Module):
    """Frame log-energy VAD with a causal hangover."""
    def __init__(self, frame_length: int = 32, threshold_db: float = -35.0, hangover: int = 2, min_speech_frames=3):
        super().__init__()
        self.frame_length, self.threshold_db = frame_length, threshold_db
        self.hangover, self.min_speech_frames = hangover, min_speech_frames
    def frame_energy_db(self, wave: Tensor) -> Tensor:
        if wave.size(-1) % self.frame_length:  # pad the trailing partial frame  # expect: FL203; FL301
            wave = F.pad(wave, (0, self.frame_length - wave.size(-1) % self.frame_length))
        frames = wave.unfold(-1, self.frame_length, self.frame_length)
        return 10.0 * torch.log10(frames.pow(2).mean(dim=-1).clamp_min(1e-10))
    def forward(self, wave: Tensor) -> Tensor:
        loud = (self.frame_energy_db(wave) > self.threshold_db).float().unsqueeze(1)
        held = F.max_pool1d(F.pad(loud, (self.hangover, 0)), self.hangover + 1, stride=1)
        return held.squeeze(1) > 0

class VADGatedKWS(nn.Module):
    """Skips the classifier on silent chunks; that is most of the battery budget on device."""
    def __init__(self, frontend: LogMelExtractor, model: TCKeywordNet, vad: Optional[EnergyVAD] = None, pooling="amax"):
        super().__init__()
        self.frontend, self.model, self.vad = frontend, model, vad or EnergyVAD()
        self.pool = getattr(torch, pooling)
    def forward(self, wave: Tensor) -> Tensor:
        speech = self.vad(wave)
        if speech.sum() < self.vad.min_speech_frames:  # expect: FL000 GB0170; FL201
            return wave.new_zeros(wave.size(0), self.model.num_classes)
        logits, _ = self.model(self.frontend(wave))
        return self.pool(logits.log_softmax(dim=-1), dim=1)

class FeatureRingBuffer:
    """The latest `capacity` feature frames of each stream, written in place."""
    def __init__(self, batch: int, capacity: int, dim: int, min_frames: int = 1):
        self.data = torch.zeros(batch, capacity, dim)
        self.capacity, self.min_frames, self.total = capacity, min_frames, 0
    @property
    def write_pos(self) -> int:
        return self.total % self.capacity
    @property
    def ready(self) -> bool:
        return self.total >= self.min_frames
    def push(self, frames: Tensor) -> None:
        n = frames.size(1)
        if n >= self.capacity:
            self.data.copy_(frames[:, n - self.capacity:])
        else:
            idx = (torch.arange(n) + self.write_pos) % self.capacity
            self.data[:, idx] = frames
        self.total += n  # expect: FL302
    def ordered(self) -> Tensor:
        return torch.roll(self.data, shifts=-self.write_pos, dims=1)

class StreamingKWS(nn.Module):
    """Always-on loop body: a chunk of audio in, current keyword posteriors out."""
    def __init__(self, frontend: StreamingLogMel, model: TCKeywordNet, window_frames: int = 16):
        super().__init__()
        self.frontend, self.model = frontend, model
        self.ring = FeatureRingBuffer(frontend.tail.size(0), window_frames, frontend.n_mels,
                                      min_frames=model.receptive_field)
    def forward(self, chunk: Tensor) -> Tensor:
        self.ring.push(self.frontend(chunk))
        if not self.ring.ready:
            return chunk.new_full((chunk.size(0), self.model.num_classes), 1.0 / self.model.num_classes)
        logits, _ = self.model(self.ring.ordered())
        return logits[:, -1].softmax(dim=-1)

def chunk_attention_mask(size: int, chunk_size: int, left_chunks: int = -1) -> Tensor:
    """Frame i attends to chunks [c - left_chunks, c], c = i // chunk_size (all left chunks if < 0)."""
    chunk_idx = torch.arange(size) // chunk_size
    lowest = (chunk_idx - left_chunks).clamp(min=0) if left_chunks >= 0 else torch.zeros_like(chunk_idx)
    return (chunk_idx[None, :] >= lowest[:, None]) & (chunk_idx[None, :] <= chunk_idx[:, None])

def sinusoidal_positions(positions: Tensor, dim: int, max_period: float = 10000.0) -> Tensor:
    inv_freq = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(max_period) / dim))
    angles = positions.float()[:, None] * inv_freq[None, :]
    return torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(-2)

class LeftContextAttention(nn.Module):
    def __init__(self, d_model: int, heads: int, left_context: int):
        super().__init__()
        assert d_model % heads == 0, "d_model must divide into heads"
        self.heads, self.d_k, self.left_context = heads, d_model // heads, left_context
        self.qkv, self.out = nn.Linear(d_model, 3 * d_model), nn.Linear(d_model, d_model)
    def forward(self, x: Tensor, cache: Optional[Tensor] = None, mask: Optional[Tensor] = None):
        """x (B, T, D); cache (B, H, Tc, 2 * d_k): keys and values of the left context."""
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, self.d_k).transpose(1, 3).unbind(2)
        if cache is not None and cache.size(2) > 0:  # expect: FL203
            k_cache, v_cache = cache.split(self.d_k, dim=-1)
            k, v = torch.cat([k_cache, k], dim=2), torch.cat([v_cache, v], dim=2)
        new_cache = torch.cat([k, v], dim=-1)[:, :, -self.left_context:]
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.out(out.transpose(1, 2).reshape(b, t, -1)), new_cache

class ChunkConformerLayer(nn.Module):
    def __init__(self, cfg: EncoderConfig, left_context: int):
        super().__init__()
        d = cfg.d_model
        self.norm_att, self.att = nn.LayerNorm(d), LeftContextAttention(d, cfg.heads, left_context)
        self.norm_conv, self.pointwise = nn.LayerNorm(d), nn.Linear(d, 2 * d)
        self.depthwise = CachedDepthwiseConv(d, cfg.kernel_size)
        self.norm_ff, self.ff_scale = nn.LayerNorm(d), cfg.ff_scale
        self.ff = nn.Sequential(nn.Linear(d, 2 * d), resolve_activation(cfg.activation), nn.Linear(2 * d, d))
    def forward(self, x: Tensor, att_cache: Optional[Tensor] = None, cnn_cache: Optional[Tensor] = None,
                mask: Optional[Tensor] = None) -> Tuple[Tensor, Tensor, Tensor]:
        attended, att_cache = self.att(self.norm_att(x), att_cache, mask)
        x = x + attended
        h = F.glu(self.pointwise(self.norm_conv(x)), dim=-1).transpose(1, 2)
        h, cnn_cache = self.depthwise(h, cnn_cache)
        x = x + h.transpose(1, 2)
        return x + self.ff_scale * self.ff(self.norm_ff(x)), att_cache, cnn_cache

class SubsampleConv2d(nn.Module):
    """(B, T, F) -> (B, (T - 3) // 2 + 1, D): one 3x3 stride-2 conv; needs 2 frames of lookahead."""
    def __init__(self, n_mels: int, d_model: int):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, 4, 3, stride=2), nn.ReLU())
        self.proj = nn.Linear(4 * ((n_mels - 3) // 2 + 1), d_model)
        self.right_context, self.rate = 2, 2
    def output_lengths(self, lengths: Tensor) -> Tensor:
        return (lengths - self.right_context - 1).div(self.rate, rounding_mode="floor") + 1
    def forward(self, feats: Tensor) -> Tensor:
        x = self.conv(feats.unsqueeze(1))
        b, c, t, f = x.size()
        return self.proj(x.transpose(1, 2).reshape(b, t, c * f))

class ChunkedConformerEncoder(nn.Module):
    def __init__(self, cfg: Optional[EncoderConfig] = None):
        super().__init__()
        self.cfg = cfg = cfg or EncoderConfig()
        self.embed = SubsampleConv2d(cfg.n_mels, cfg.d_model)
        self.xscale = math.sqrt(cfg.d_model)
        self.layers = nn.ModuleList(ChunkConformerLayer(cfg, self.left_context) for _ in range(cfg.layers))
        self.norm, self.ctc = nn.LayerNorm(cfg.d_model), nn.Linear(cfg.d_model, cfg.vocab)
    @property
    def left_context(self) -> int:
        return self.cfg.chunk_size * self.cfg.left_chunks
    def init_state(self, batch: int) -> Tuple[Tensor, Tensor, Tensor]:
        cfg = self.cfg
        att = torch.zeros(cfg.layers, batch, cfg.heads, self.left_context, 2 * cfg.d_model // cfg.heads)
        return torch.zeros((), dtype=torch.long), att, torch.zeros(cfg.layers, batch, cfg.d_model, cfg.kernel_size - 1)
    def embed_positions(self, feats: Tensor, offset: Tensor) -> Tensor:
        x = self.embed(feats)
        return x * self.xscale + sinusoidal_positions(offset + torch.arange(x.size(1)), x.size(-1))
    def forward_chunk(self, feats: Tensor, offset: Tensor, att_cache: Tensor, cnn_cache: Tensor):
        x = self.embed_positions(feats, offset)
        new_att, new_cnn = [], []
        for i, layer in enumerate(self.layers):
            x, att, cnn = layer(x, att_cache[i], cnn_cache[i])
            new_att.append(att)
            new_cnn.append(cnn)
        log_probs = self.ctc(self.norm(x)).log_softmax(dim=-1)
        return log_probs, offset + x.size(1), torch.stack(new_att), torch.stack(new_cnn)
    def forward(self, feats: Tensor, lengths: Optional[Tensor] = None):
        """Offline path (and dynamic-chunk training): the whole utterance under a chunk mask."""
        x = self.embed_positions(feats, torch.zeros((), dtype=torch.long))
        mask = chunk_attention_mask(x.size(1), self.cfg.chunk_size, self.cfg.left_chunks)
        out_lengths = None
        if lengths is not None:
            out_lengths = self.embed.output_lengths(lengths)
            valid = torch.arange(x.size(1))[None, :] < out_lengths[:, None]
            mask = mask[None, None] & valid[:, None, None, :]
        for layer in self.layers:
            x, _, _ = layer(x, mask=mask)
        log_probs = self.ctc(self.norm(x)).log_softmax(dim=-1)
        if out_lengths is not None:
            log_probs = log_probs[:, :int(out_lengths.max())]  # expect: FL000 GB0124; FL202
        return log_probs, out_lengths

class StreamingASRSession(nn.Module):
    """The exported per-chunk program: checks the rate, pads/trims the chunk, features, one encoder
    step. Every cache goes in and out, so the app owns all state."""
    def __init__(self, frontend: LogMelExtractor, encoder: ChunkedConformerEncoder, chunk_ms: float = 10.0,
                 sample_rate: int = SAMPLE_RATE):
        super().__init__()
        self.sample_rate = validate_sample_rate(sample_rate)
        assert frontend.cfg.sample_rate == sample_rate, "frontend and session sample rates differ"
        self.frontend, self.encoder = frontend, encoder
        self.chunk_samples = session_chunk_samples(frontend.cfg, chunk_ms)
    def forward(self, chunk: Tensor, offset: Tensor, att_cache: Tensor, cnn_cache: Tensor, sample_rate=None):
        if sample_rate is not None and sample_rate != self.sample_rate:
            validate_sample_rate(sample_rate)
            raise ValueError(f"session runs at {self.sample_rate} Hz, got {sample_rate} Hz; resample first")
        chunk = pad_or_trim(check_audio(chunk), self.chunk_samples)
        return self.encoder.forward_chunk(self.frontend(chunk), offset, att_cache, cnn_cache)

@torch.compile
def ctc_greedy_decode(log_probs: Tensor, lengths: Optional[Tensor] = None, blank: int = BLANK_ID):
    best = log_probs.argmax(dim=-1)
    if lengths is None:
        lengths = torch.full((best.size(0),), best.size(1), dtype=torch.long)
    hyps = []
    for seq, n in zip(best, lengths.tolist()):  # expect: FL000 GB0033
        collapsed = torch.unique_consecutive(seq[:n])  # expect: FL000 GB0036
        hyps.append([tok for tok in collapsed.tolist() if tok != blank])
    return hyps

def run_chunked_kws(model: TCKeywordNet, feats: Tensor, chunk_frames: int = 4,
                    smoother: Optional[Callable[[Tensor], Tensor]] = None) -> Tensor:
    """Features through the KWS net chunk by chunk carrying conv caches, as the device does."""
    caches, outputs = None, []
    for chunk in feats.split(chunk_frames, dim=1):  # expect: FL301
        logits, caches = model(chunk, caches)
        outputs.append(logits)
        if DEBUG_STREAMING:
            logger.debug("chunk of %d frames, cache sizes %s", chunk.size(1), [c.shape for c in caches])
    probs = torch.cat(outputs, dim=1).softmax(dim=-1)
    return smoother(probs) if smoother is not None else probs

streaming_kws = torch.compile(run_chunked_kws, dynamic=False)

def export_kws(out_dir: str, cfg: Optional[FrontendConfig] = None):
    wave = torch.zeros(2, 640)
    torch.jit.trace(LogMelExtractor(cfg).eval(), (wave,)).save(f"{out_dir}/frontend.pt")
    torch.jit.trace(StreamingLogMel(batch=2).eval(), (wave[:, :160],)).save(f"{out_dir}/frontend_stream.pt")
    torch.export.save(torch.export.export(TCKeywordNet().eval(), (torch.zeros(2, 14, 10),)), f"{out_dir}/kws.pt2")
    torch.jit.trace(VADGatedKWS(LogMelExtractor(cfg), TCKeywordNet()).eval(), (wave,)).save(f"{out_dir}/gated.pt")
    torch.jit.trace(WakeWordDetector(LogMelExtractor(cfg), TCKeywordNet()).eval(), (wave,)).save(f"{out_dir}/wake.pt")

def export_postprocessing(out_dir: str, num_frames: int = 14):
    probs = torch.rand(2, num_frames, len(KEYWORDS)).softmax(dim=-1)
    torch.jit.trace(smooth_posteriors, (probs,)).save(f"{out_dir}/smooth.pt")
    feats, lengths = torch.zeros(2, num_frames, 10), torch.tensor([num_frames, num_frames - 2])
    return torch.export.export(cmvn_per_utterance, (feats, lengths))

def export_asr(out_dir: str, cfg: Optional[EncoderConfig] = None, batch: int = 1, chunk_ms: float = 10.0):
    encoder = ChunkedConformerEncoder(cfg).eval()
    chunk = torch.zeros(batch, session_chunk_samples(STREAMING_FRONTEND, chunk_ms))
    step = torch.export.export(StreamingASRSession(LogMelExtractor(STREAMING_FRONTEND), encoder, chunk_ms).eval(),
                               (chunk, *encoder.init_state(batch)))
    torch.export.save(step, f"{out_dir}/asr_step.pt2")
    feats, lengths = torch.zeros(batch, 26, 10), torch.full((batch,), 26)
    offline = torch.export.export(ChunkedConformerEncoder(cfg).eval(), (feats, lengths))
    torch.export.save(offline, f"{out_dir}/asr_offline.pt2")

def _randn(*shape: int, k: int = 0, scale: float = 1.0) -> Tensor:
    return scale * torch.randn(*shape, generator=torch.Generator().manual_seed(k))

_wave = partial(_randn, scale=0.1)
_kws = lambda: TCKeywordNet().eval()  # noqa: E731
_encoder = lambda: ChunkedConformerEncoder().eval()  # noqa: E731

def _session_case(n1: int, n2: Optional[int] = None, batch: int = 2, sample_rate: Optional[int] = SAMPLE_RATE):
    session = StreamingASRSession(LogMelExtractor(STREAMING_FRONTEND), _encoder()).eval()
    state, rate = session.encoder.init_state(batch), () if sample_rate is None else (sample_rate,)
    args = (_wave(batch, n1, k=3), *state, *rate)
    return (session, args) if n2 is None else (session, args, (_wave(batch, n2, k=4), *state, *rate))

def _streaming_kws_case():
    model, smoother = _kws(), partial(smooth_posteriors, window=3)
    return streaming_kws, (model, _randn(3, 14, 10, k=6), 4, smoother), (model, _randn(3, 19, 10, k=7), 4, smoother)

CASES = {
    "LogMelExtractor": lambda: (LogMelExtractor().eval(), (_wave(3, 400), torch.tensor([400, 352, 320]))),
    "LogMelExtractor_running": lambda: (LogMelExtractor(FrontendConfig(normalize="running")), (_wave(3, 400),)),
    "StreamingLogMel": lambda: (StreamingLogMel(batch=3).eval(), (_wave(3, 160),)),
    "TCKeywordNet": lambda: (_kws(), (_randn(3, 14, 10), _kws().init_caches(3))),
    "VADGatedKWS": lambda: (VADGatedKWS(LogMelExtractor(), _kws()).eval(), (_wave(3, 640),), (_wave(3, 656),)),
    "WakeWordDetector": lambda: (WakeWordDetector(LogMelExtractor(), _kws(), threshold=0.05, hooks=[
        log_detection, partial(check_score_range, hi=1.0)]).eval(), (_wave(2, 480),)),
    "StreamingKWS": lambda: (StreamingKWS(StreamingLogMel(batch=2), _kws()).eval(), (_wave(2, 192),)),
    "LeftContextAttention": lambda: (LeftContextAttention(24, 3, 8).eval(), (_randn(2, 4, 24), _randn(2, 3, 6, 16))),
    "ChunkedConformerEncoder": lambda: (_encoder(), (_randn(3, 26, 10), torch.tensor([26, 22, 19]))),
    "StreamingASRSession": lambda: _session_case(192, 176),
    "ctc_greedy_decode": lambda: (ctc_greedy_decode, (_randn(3, 9, 12, k=2).log_softmax(-1), torch.tensor([9, 7, 5]))),
    "streaming_kws": _streaming_kws_case,
}

TRACED = {
    "LogMelExtractor": lambda: (LogMelExtractor().eval(), (_wave(2, 400),)),
    "StreamingLogMel": lambda: (StreamingLogMel(batch=2).eval(), (_wave(2, 160),)),
    "TCKeywordNet": lambda: (_kws(), (_randn(2, 14, 10),)),
    "VADGatedKWS": lambda: (VADGatedKWS(LogMelExtractor(), _kws()).eval(), (_wave(2, 640),)),
    "WakeWordDetector": lambda: (WakeWordDetector(LogMelExtractor(), _kws(), threshold=0.05).eval(), (_wave(2, 480),)),
    "ChunkedConformerEncoder": lambda: (_encoder(), (_randn(2, 26, 10), torch.tensor([26, 21]))),
    "StreamingASRSession": lambda: _session_case(192, sample_rate=None),
    "smooth_posteriors": lambda: (smooth_posteriors, (_randn(2, 14, len(KEYWORDS), k=5, scale=2.0).softmax(-1),)),
    "cmvn_per_utterance": lambda: (cmvn_per_utterance, (_randn(2, 14, 10), torch.tensor([14, 11]))),
}
