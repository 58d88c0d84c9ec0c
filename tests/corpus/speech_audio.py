"""Speech front ends and CTC heads: spectrograms, mel banks, SpecAugment, subsampling, decoding."""
import logging
import math
import random
from dataclasses import dataclass
from typing import List, Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger(__name__)

BLANK = 0
VOCAB = ["<b>", "a", "b", "c", "d", "e", " "]


@dataclass
class FrontendConfig:
    sample_rate: int = 16000
    n_fft: int = 32
    hop_length: int = 8
    n_mels: int = 8
    f_min: float = 0.0
    f_max: Optional[float] = None
    log_eps: float = 1e-6
    normalize: bool = True


def hz_to_mel(f):
    return 2595.0 * np.log10(1.0 + f / 700.0)


mel_to_hz = lambda m: 700.0 * (10 ** (m / 2595.0) - 1.0)  # noqa: E731


def mel_filterbank(cfg: FrontendConfig) -> torch.Tensor:
    n_freqs = cfg.n_fft // 2 + 1
    f_max = cfg.f_max or cfg.sample_rate / 2
    mels = np.linspace(hz_to_mel(cfg.f_min), hz_to_mel(f_max), cfg.n_mels + 2)
    hz = mel_to_hz(mels)
    freqs = np.linspace(0, cfg.sample_rate / 2, n_freqs)
    fb = np.zeros((n_freqs, cfg.n_mels), dtype=np.float32)
    for m in range(cfg.n_mels):
        lo, center, hi = hz[m], hz[m + 1], hz[m + 2]
        up = (freqs - lo) / (center - lo)
        down = (hi - freqs) / (hi - center)
        fb[:, m] = np.maximum(0, np.minimum(up, down))
    return torch.from_numpy(fb)


class MelSpectrogram(nn.Module):
    def __init__(self, cfg: FrontendConfig = FrontendConfig()):
        super().__init__()
        self.cfg = cfg
        self.register_buffer("window", torch.hann_window(cfg.n_fft), persistent=False)
        self.register_buffer("fb", mel_filterbank(cfg), persistent=False)

    def forward(self, wav):
        spec = torch.stft(wav, self.cfg.n_fft, self.cfg.hop_length, window=self.window, return_complex=True)
        mel = torch.matmul(spec.abs().pow(2).transpose(-1, -2), self.fb)
        return torch.log(mel + self.cfg.log_eps).transpose(-1, -2)


class UtteranceNorm(nn.Module):
    def forward(self, feats, lengths):
        b, c, t = feats.shape
        mask = (torch.arange(t, device=feats.device)[None, :] < lengths[:, None]).unsqueeze(1)
        denom = lengths.view(b, 1, 1).clamp(min=1)
        mean = (feats * mask).sum(-1, keepdim=True) / denom
        var = ((feats - mean) ** 2 * mask).sum(-1, keepdim=True) / denom
        return (feats - mean) / torch.sqrt(var + 1e-5) * mask


class SpecAugment(nn.Module):
    def __init__(self, freq_masks=2, freq_width=3, time_masks=2, time_width=4):
        super().__init__()
        self.freq_masks, self.freq_width = freq_masks, freq_width
        self.time_masks, self.time_width = time_masks, time_width

    def forward(self, feats):
        if not self.training:
            return feats
        feats = feats.clone()
        n_mels, n_frames = feats.shape[-2:]
        for _ in range(self.freq_masks):
            w = random.randint(0, self.freq_width)
            f0 = random.randint(0, max(0, n_mels - w))  # expect: FL124 GB0213
            feats[..., f0:f0 + w, :] = 0.0
        for _ in range(self.time_masks):
            w = random.randint(0, self.time_width)
            t0 = random.randint(0, max(0, n_frames - w))
            feats[..., t0:t0 + w] = feats.mean()
        return feats


class Conv2dSubsampling(nn.Module):
    def __init__(self, n_mels=8, d_model=12):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, 4, 3, 2), nn.ReLU(), nn.Conv2d(4, 4, 3, 2), nn.ReLU())
        f = ((n_mels - 1) // 2 - 1) // 2
        self.out = nn.Linear(4 * f, d_model)

    def forward(self, feats, lengths):
        x = self.conv(feats.unsqueeze(1))
        b, c, f, t = x.shape
        x = self.out(x.permute(0, 3, 1, 2).reshape(b, t, c * f))
        lengths = torch.div(lengths - 1, 2, rounding_mode="floor")
        lengths = torch.div(lengths - 1, 2, rounding_mode="floor")
        return x, lengths


class ConformerConv(nn.Module):
    def __init__(self, d_model=12, kernel_size=5, dropout=0.0):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.pointwise_in = nn.Conv1d(d_model, 2 * d_model, 1)
        self.depthwise = nn.Conv1d(d_model, d_model, kernel_size, padding=kernel_size // 2, groups=d_model)
        self.bn = nn.BatchNorm1d(d_model)
        self.pointwise_out = nn.Conv1d(d_model, d_model, 1)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, pad_mask=None):
        residual = x
        x = self.norm(x).transpose(1, 2)
        x = F.glu(self.pointwise_in(x), dim=1)
        if pad_mask is not None:
            x = x.masked_fill(pad_mask.unsqueeze(1), 0.0)
        x = F.silu(self.bn(self.depthwise(x)))
        x = self.dropout(self.pointwise_out(x)).transpose(1, 2)
        return residual + x


class CTCHead(nn.Module):
    def __init__(self, d_model=12, vocab=len(VOCAB)):
        super().__init__()
        self.proj = nn.Linear(d_model, vocab)

    def forward(self, x, lengths, targets=None, target_lengths=None):
        log_probs = self.proj(x).log_softmax(-1)
        if targets is None:
            return log_probs, None
        if (lengths < target_lengths).any():  # expect: FL101 GB0170
            logger.warning(f"{int((lengths < target_lengths).sum())} utterances shorter than their labels")  # expect: FL102 GB0124; FL111 GB0291
        loss = F.ctc_loss(log_probs.transpose(0, 1), targets, lengths, target_lengths,  # expect: FL105 GB0036
                          blank=BLANK, zero_infinity=True)
        return log_probs, loss


@torch.compile
def pre_emphasis(wav, coeff: float = 0.97):
    return torch.cat([wav[..., :1], wav[..., 1:] - coeff * wav[..., :-1]], dim=-1)


@torch.compile
def amplitude_to_db(spec, top_db: Optional[float] = 80.0):
    db = 10.0 * torch.log10(torch.clamp(spec, min=1e-10))
    if top_db is not None:
        db = torch.maximum(db, db.amax(dim=(-2, -1), keepdim=True) - top_db)
    return db


@torch.compile
def mu_law_encode(wav, channels: int = 256):
    mu = channels - 1
    magnitude = torch.log1p(mu * wav.abs()) / math.log1p(mu)
    signal = torch.sign(wav) * magnitude
    return ((signal + 1) / 2 * mu + 0.5).to(torch.int64)


@torch.compile
def frame_signal(wav, frame_len: int = 16, hop: int = 8):
    if wav.shape[-1] < frame_len:
        wav = F.pad(wav, (0, frame_len - wav.shape[-1]))
    frames = wav.unfold(-1, frame_len, hop)
    return frames * torch.hamming_window(frame_len, device=wav.device)


@torch.compile
def energy_vad(frames, threshold_db: float = -30.0):
    energy = 10 * torch.log10(frames.pow(2).mean(-1) + 1e-10)
    if energy.max() < threshold_db:  # expect: FL101 GB0170
        return None
    voiced = energy > energy.max() - abs(threshold_db)
    return voiced


@torch.compile
def ctc_greedy_decode(log_probs, lengths) -> List[str]:
    best, texts = log_probs.argmax(-1), []
    for b in range(best.size(0)):
        seq = torch.unique_consecutive(best[b, : lengths[b]])  # expect: FL102 GB0124
        texts.append("".join(VOCAB[i] for i in seq.tolist() if i != BLANK))
    return texts


@torch.compile
def ctc_collapse_mask(log_probs):
    best = log_probs.argmax(-1)
    changed = torch.ones_like(best, dtype=torch.bool)
    changed[:, 1:] = best[:, 1:] != best[:, :-1]
    return changed & (best != BLANK)


@torch.compile
def snr_db(clean, noisy):
    noise = noisy - clean
    ratio = clean.pow(2).sum(-1) / noise.pow(2).sum(-1).clamp(min=1e-8)
    return 10 * torch.log10(ratio)


@torch.compile
def mix_at_snr(clean, noise, snr: float = 10.0):
    clean_rms = clean.pow(2).mean().sqrt()
    noise_rms = noise.pow(2).mean().sqrt()
    scale = clean_rms / (noise_rms * 10 ** (snr / 20))
    logger.debug("mixing at %.1f dB, scale %.3f", snr, scale.item())  # expect: FL102 GB0124; FL111 GB0291
    return clean + scale * noise


@torch.compile
def speed_perturb(wav, factor: float = 1.1):
    new_len = int(round(wav.shape[-1] / factor))
    return F.interpolate(wav.unsqueeze(1), size=new_len, mode="linear", align_corners=False).squeeze(1)


_lengths = lambda: torch.tensor([13, 9])  # noqa: E731


CASES = {
    "MelSpectrogram": lambda: (MelSpectrogram(), (torch.randn(2, 64),)),
    "UtteranceNorm": lambda: (UtteranceNorm(), (torch.randn(2, 8, 13), _lengths())),
    "SpecAugment": lambda: (SpecAugment().train(), (torch.randn(2, 8, 13),)),
    "Conv2dSubsampling": lambda: (Conv2dSubsampling(), (torch.randn(2, 8, 13), _lengths())),
    "ConformerConv": lambda: (ConformerConv().eval(), (torch.randn(2, 7, 12), torch.arange(7).expand(2, 7) >= _lengths()[:, None] - 6)),
    "CTCHead": lambda: (CTCHead(), (torch.randn(2, 6, 12), torch.tensor([6, 2]), torch.tensor([[1, 2, 3], [2, 3, 4]]), torch.tensor([3, 3]))),
    "CTCHead_infer": lambda: (CTCHead(), (torch.randn(2, 6, 12), torch.tensor([6, 4]))),
    "pre_emphasis": lambda: (pre_emphasis, (torch.randn(2, 20),)),
    "amplitude_to_db": lambda: (amplitude_to_db, (torch.rand(2, 5, 6),)),
    "mu_law_encode": lambda: (mu_law_encode, (torch.rand(2, 10) * 2 - 1,)),
    "frame_signal": lambda: (frame_signal, (torch.randn(2, 12),)),
    "energy_vad": lambda: (energy_vad, (torch.randn(3, 16),)),
    "energy_vad_silent": lambda: (energy_vad, (torch.zeros(3, 16),)),
    "ctc_greedy_decode": lambda: (ctc_greedy_decode, (torch.randn(2, 6, len(VOCAB)), torch.tensor([6, 4]))),
    "ctc_collapse_mask": lambda: (ctc_collapse_mask, (torch.randn(2, 6, len(VOCAB)),)),
    "snr_db": lambda: (snr_db, (torch.randn(2, 20), torch.randn(2, 20))),
    "mix_at_snr": lambda: (mix_at_snr, (torch.randn(2, 20), torch.randn(2, 20))),
    "speed_perturb": lambda: (speed_perturb, (torch.randn(2, 22),)),
}
