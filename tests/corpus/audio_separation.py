"""Source separation in the style of asteroid / open-unmix / demucs: STFT helpers, Conv-TasNet,
a Demucs-lite U-Net, an LSTM masker, SI-SDR / PIT losses behind a registry, overlap-add and
streaming inference, Wiener post-filtering and stem dictionaries ({"vocals": ..., "drums": ...})."""
import functools
import itertools
import logging
import math
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("separation")
logger.addHandler(logging.NullHandler())

STEMS = ("vocals", "drums", "bass", "other")
SAMPLE_RATE = 8000
EPS = 1e-8
SILENCE_DB = -60.0
VERBOSE = False


@dataclass
class SeparationConfig:
    n_fft: int = 32
    hop_length: int = 8
    sources: Tuple[str, ...] = STEMS[:2]
    audio_channels: int = 1
    mask_act: str = "relu"
    wiener_iters: int = 1
    wiener_tol: Optional[float] = 1e-3
    chunk_seconds: float = 0.02
    overlap: float = 0.25
    loss_weights: Dict[str, float] = field(default_factory=lambda: {"si_sdr": 1.0, "l1_spec": 0.1})

    @property
    def n_sources(self) -> int:
        return len(self.sources)

    @property
    def chunk_size(self) -> int:
        return int(self.chunk_seconds * SAMPLE_RATE)

    @property
    def chunk_hop(self) -> int:
        return int(self.chunk_size * (1.0 - self.overlap))


DEFAULT_CFG = SeparationConfig()


# --------------------------------------------------------------------------- signal helpers

hann = functools.partial(torch.hann_window, periodic=True)


def stft(x, n_fft: int, hop: int):
    """(..., T) real -> (..., F, frames) complex."""
    shape = x.shape
    flat = x.reshape(-1, shape[-1])
    spec = torch.stft(flat, n_fft, hop, window=hann(n_fft, device=x.device), return_complex=True)
    return spec.reshape(*shape[:-1], *spec.shape[-2:])


def istft(spec, hop: int, length: Optional[int] = None):
    shape = spec.shape
    n_fft = 2 * (shape[-2] - 1)
    flat = spec.reshape(-1, *shape[-2:])
    wav = torch.istft(flat, n_fft, hop, window=hann(n_fft, device=spec.device), length=length)
    return wav.reshape(*shape[:-2], wav.shape[-1])


def center_trim(x, length: int):
    delta = x.shape[-1] - length
    assert delta >= 0, f"cannot trim {x.shape[-1]} samples down to {length}"
    if delta:
        x = x[..., delta // 2: x.shape[-1] - (delta - delta // 2)]
    return x


def rms_db(x, dim=-1):
    return 20.0 * torch.log10(x.pow(2).mean(dim).sqrt() + EPS)


def as_stem_dict(est, sources: Sequence[str]) -> Dict[str, torch.Tensor]:
    assert est.shape[1] == len(sources), "model output does not match the configured stems"
    return {name: est[:, i] for i, name in enumerate(sources)}


def stack_stems(stems: Dict[str, torch.Tensor], order: Sequence[str]) -> torch.Tensor:
    return torch.stack([stems[name] for name in order], dim=1)


# --------------------------------------------------------------------------- losses + registry

LOSSES: Dict[str, Callable[..., torch.Tensor]] = {}


def register_loss(name: str):
    def deco(fn):
        LOSSES[name] = fn
        return fn
    return deco


def pairwise_si_sdr(est, ref, zero_mean: bool = True):
    if zero_mean:
        est = est - est.mean(-1, keepdim=True)
        ref = ref - ref.mean(-1, keepdim=True)
    dot = (est * ref).sum(-1, keepdim=True)
    target = dot * ref / (ref.pow(2).sum(-1, keepdim=True) + EPS)
    noise = est - target
    ratio = target.pow(2).sum(-1) / (noise.pow(2).sum(-1) + EPS)
    return 10.0 * torch.log10(ratio + EPS)


@register_loss("si_sdr")
def neg_si_sdr(est, ref, **_):
    return -pairwise_si_sdr(est, ref).mean()


@register_loss("l1_spec")
def spectral_l1(est, ref, n_fft: int = 32, hop: int = 8, **_):
    return (stft(est, n_fft, hop).abs() - stft(ref, n_fft, hop).abs()).abs().mean()


def get_loss(name: str) -> Callable[..., torch.Tensor]:
    try:
        return LOSSES[name]
    except KeyError:
        raise ValueError(f"unknown loss {name!r}; choose from {sorted(LOSSES)}") from None


# --------------------------------------------------------------------------- Conv-TasNet

NORMS = {"gLN": functools.partial(nn.GroupNorm, 1), "BN": nn.BatchNorm1d}


class TCNBlock(nn.Module):
    def __init__(self, channels: int, hidden: int, dilation: int, norm: str = "gLN", kernel: int = 3):
        super().__init__()
        self.in_conv = nn.Conv1d(channels, hidden, 1)
        self.norm1 = NORMS[norm](hidden)
        self.dconv = nn.Conv1d(hidden, hidden, kernel, padding=dilation * (kernel - 1) // 2,
                               dilation=dilation, groups=hidden)
        self.norm2 = NORMS[norm](hidden)
        self.act = nn.PReLU()
        self.res_conv = nn.Conv1d(hidden, channels, 1)
        self.skip_conv = nn.Conv1d(hidden, channels, 1)

    def forward(self, x):
        y = self.norm1(self.act(self.in_conv(x)))
        y = self.norm2(self.act(self.dconv(y)))
        return x + self.res_conv(y), self.skip_conv(y)


MASK_ACTS = {"relu": F.relu, "sigmoid": torch.sigmoid, "softmax": functools.partial(F.softmax, dim=1)}


class ConvTasNet(nn.Module):
    def __init__(self, cfg: SeparationConfig = DEFAULT_CFG, n_filters: int = 8, kernel: int = 4,
                 hidden: int = 6, n_blocks: int = 3):
        super().__init__()
        self.cfg, self.kernel, self.stride = cfg, kernel, kernel // 2
        self.encoder = nn.Conv1d(cfg.audio_channels, n_filters, kernel, stride=self.stride, bias=False)
        self.blocks = nn.ModuleList(TCNBlock(n_filters, hidden, 2 ** i) for i in range(n_blocks))
        self.mask_conv = nn.Conv1d(n_filters, cfg.n_sources * n_filters, 1)
        self.decoder = nn.ConvTranspose1d(n_filters, cfg.audio_channels, kernel, stride=self.stride, bias=False)
        self.mask_act = MASK_ACTS[cfg.mask_act]

    def pad_to_stride(self, wav):
        length = wav.shape[-1]
        rest = (length - self.kernel) % self.stride
        if rest:  # expect: FL301
            wav = F.pad(wav, (0, self.stride - rest))
        return wav, length

    def estimate_masks(self, tf_rep):
        x, skip_sum = tf_rep, torch.zeros_like(tf_rep)
        for block in self.blocks:
            x, skip = block(x)
            skip_sum = skip_sum + skip
        b, n, frames = tf_rep.shape
        masks = self.mask_conv(F.prelu(skip_sum, torch.tensor([0.25])))
        return self.mask_act(masks.view(b, self.cfg.n_sources, n, frames))

    def forward(self, mix):
        wav, length = self.pad_to_stride(mix)
        tf_rep = F.relu(self.encoder(wav))
        masked = tf_rep.unsqueeze(1) * self.estimate_masks(tf_rep)
        b, s, n, frames = masked.shape
        out = self.decoder(masked.reshape(b * s, n, frames)).view(b, s, self.cfg.audio_channels, -1)
        return as_stem_dict(out[..., :length], self.cfg.sources)


# --------------------------------------------------------------------------- Demucs-lite

class DemucsLite(nn.Module):
    """Waveform U-Net: strided conv encoder, GLU decoder, skip connections, input normalisation."""

    def __init__(self, cfg: SeparationConfig = DEFAULT_CFG, channels: int = 4, depth: int = 2,
                 kernel: int = 4, stride: int = 2):
        super().__init__()
        self.cfg, self.depth, self.kernel, self.stride = cfg, depth, kernel, stride
        self.encoder, self.decoder = nn.ModuleList(), nn.ModuleList()
        chin = cfg.audio_channels
        for index in range(depth):
            self.encoder.append(nn.Sequential(nn.Conv1d(chin, channels, kernel, stride), nn.ReLU(),
                                              nn.Conv1d(channels, 2 * channels, 1), nn.GLU(1)))
            chout = cfg.n_sources * cfg.audio_channels if index == 0 else chin
            dec = [nn.Conv1d(channels, 2 * channels, 3, padding=1), nn.GLU(1),
                   nn.ConvTranspose1d(channels, chout, kernel, stride)]
            if index > 0:
                dec.append(nn.ReLU())
            self.decoder.insert(0, nn.Sequential(*dec))
            chin = channels
        self.bottleneck = nn.Conv1d(chin, chin, 3, padding=1)

    def valid_length(self, length: int) -> int:
        for _ in range(self.depth):
            length = max(1, math.ceil((length - self.kernel) / self.stride) + 1)
        for _ in range(self.depth):
            length = (length - 1) * self.stride + self.kernel
        return int(length)

    def forward(self, mix):
        mono = mix.mean(dim=1, keepdim=True)
        mean, std = mono.mean(dim=-1, keepdim=True), mono.std(dim=-1, keepdim=True)
        x = (mix - mean) / (1e-5 + std)
        length = mix.shape[-1]
        delta = self.valid_length(length) - length
        x = F.pad(x, (delta // 2, delta - delta // 2))
        saved = []
        for encode in self.encoder:
            x = encode(x)
            saved.append(x)
        x = self.bottleneck(x)
        for decode in self.decoder:
            skip = center_trim(saved.pop(-1), x.shape[-1])
            x = decode(x + skip)
        x = center_trim(x * std + mean, length)
        out = x.view(x.size(0), self.cfg.n_sources, self.cfg.audio_channels, length)
        if VERBOSE:
            logger.info("demucs output %s", tuple(out.shape))
        return as_stem_dict(out, self.cfg.sources)


# --------------------------------------------------------------------------- open-unmix style masker

class OpenUnmixLite(nn.Module):
    """One target: magnitude spectrogram -> bottleneck -> BiLSTM -> mask, applied to the mixture."""

    def __init__(self, cfg: SeparationConfig = DEFAULT_CFG, hidden: int = 6, max_bin: Optional[int] = None):
        super().__init__()
        self.cfg = cfg
        self.nb_bins = cfg.n_fft // 2 + 1
        self.max_bin = max_bin or self.nb_bins
        self.input_mean = nn.Parameter(torch.zeros(self.max_bin))
        self.input_scale = nn.Parameter(torch.ones(self.max_bin))
        self.fc1 = nn.Linear(self.max_bin * cfg.audio_channels, hidden, bias=False)
        self.bn1 = nn.BatchNorm1d(hidden)
        self.lstm = nn.LSTM(hidden, hidden // 2, num_layers=1, bidirectional=True, batch_first=False)
        self.fc2 = nn.Linear(2 * hidden, self.nb_bins * cfg.audio_channels, bias=False)

    def forward(self, mix):
        spec = stft(mix, self.cfg.n_fft, self.cfg.hop_length)
        mag = spec.abs().permute(3, 0, 1, 2)
        frames, batch, channels, bins = mag.shape
        x = mag[..., : self.max_bin]
        x = (x + self.input_mean) * self.input_scale
        x = self.fc1(x.reshape(-1, channels * self.max_bin))
        x = torch.tanh(self.bn1(x)).reshape(frames, batch, -1)
        lstm_out, _ = self.lstm(x)  # expect: FL000 GB0014
        x = self.fc2(torch.cat([x, lstm_out], -1).reshape(frames * batch, -1))
        mask = F.relu(x).reshape(frames, batch, channels, bins).permute(1, 2, 3, 0)
        return istft(spec * mask, self.cfg.hop_length, length=mix.shape[-1])


# --------------------------------------------------------------------------- inference wrappers

def _fade_window(size: int, overlap: int, device) -> torch.Tensor:
    ramp = torch.linspace(0.0, 1.0, overlap + 2, device=device)[1:-1]
    win = torch.ones(size, device=device)
    win[:overlap] = ramp
    win[-overlap:] = ramp.flip(0)
    return win


def clip_guard(stems: Dict[str, torch.Tensor], limit: float = 1.0):
    peak = max(wav.abs().max() for wav in stems.values())
    if peak > limit:  # expect: FL000 GB0170
        logger.warning("separated chunk clips (peak %.2f)", float(peak))


class ChunkedSeparator(nn.Module):
    """Overlap-add inference over fixed-size chunks with a list of per-chunk callbacks."""

    def __init__(self, model: nn.Module, cfg: SeparationConfig = DEFAULT_CFG,
                 callbacks: Optional[List[Callable]] = None):
        super().__init__()
        self.model, self.cfg = model, cfg
        self.callbacks = list(callbacks or [])

    def _run_chunk(self, chunk):
        stems = self.model(chunk)
        for cb in self.callbacks:
            cb(stems)
        return stack_stems(stems, self.cfg.sources)

    def forward(self, mix):
        batch, channels, length = mix.shape
        size, hop = self.cfg.chunk_size, self.cfg.chunk_hop
        if length <= size:
            return as_stem_dict(self._run_chunk(mix), self.cfg.sources)
        window = _fade_window(size, size - hop, mix.device)
        out = mix.new_zeros(batch, self.cfg.n_sources, channels, length)
        weight = mix.new_zeros(length)
        for offset in range(0, length, hop):
            chunk = mix[..., offset: offset + size]
            valid = chunk.shape[-1]
            if valid < size:
                chunk = F.pad(chunk, (0, size - valid))
            est = self._run_chunk(chunk)[..., :valid]
            out[..., offset: offset + valid] += est * window[:valid]
            weight[offset: offset + valid] += window[:valid]
        return as_stem_dict(out / weight.clamp_min(EPS), self.cfg.sources)


class StreamingSeparator(nn.Module):
    """Causal block-wise separation keeping the last samples of the previous block as context."""

    def __init__(self, model: nn.Module, context: int = 12, block: int = 40):
        super().__init__()
        self.model, self.context, self.block = model, context, block
        self.register_buffer("history", torch.zeros(1, 1, context))
        self.blocks_done = 0

    def forward(self, block):
        assert block.shape[-1] == self.block, "streaming blocks must have a fixed size"
        history = self.history.expand(block.shape[0], block.shape[1], -1)
        stems = self.model(torch.cat([history, block], dim=-1))
        self.history.copy_(block[:1, :1, -self.context:])
        self.blocks_done += 1  # expect: FL302
        return {name: wav[..., self.context:] for name, wav in stems.items()}


class MultiResolutionSTFTLoss(nn.Module):
    def __init__(self, resolutions: Sequence[Tuple[int, int]] = ((16, 4), (32, 8), (64, 16)),
                 factor_sc: float = 1.0, factor_mag: float = 1.0):
        super().__init__()
        self.resolutions = list(resolutions)
        self.factor_sc, self.factor_mag = factor_sc, factor_mag

    @staticmethod
    def _single(est, ref, n_fft, hop):
        est_mag = stft(est, n_fft, hop).abs().clamp_min(1e-7)
        ref_mag = stft(ref, n_fft, hop).abs().clamp_min(1e-7)
        sc = torch.linalg.norm(ref_mag - est_mag, ord="fro", dim=(-2, -1)) / torch.linalg.norm(
            ref_mag, ord="fro", dim=(-2, -1))
        mag = F.l1_loss(torch.log(est_mag), torch.log(ref_mag))
        return sc.mean(), mag

    def forward(self, est, ref):
        sc_total, mag_total = 0.0, 0.0
        for n_fft, hop in self.resolutions:
            if est.shape[-1] < n_fft:
                continue
            sc, mag = self._single(est, ref, n_fft, hop)
            sc_total, mag_total = sc_total + sc, mag_total + mag
        return (self.factor_sc * sc_total + self.factor_mag * mag_total) / len(self.resolutions)


# --------------------------------------------------------------------------- compiled functions

@torch.compile
def pit_loss(est, ref, loss_name: str = "si_sdr"):
    """Permutation-invariant training: min over all source permutations, per example."""
    n_src = est.shape[1]
    pair_fn = {"si_sdr": lambda e, r: -pairwise_si_sdr(e, r),
               "l1": lambda e, r: (e - r).abs().mean(-1)}[loss_name]
    perms = list(itertools.permutations(range(n_src)))
    per_perm = torch.stack([pair_fn(est[:, list(p)], ref).mean(-1) for p in perms], dim=1)
    best, best_idx = per_perm.min(dim=1)
    return best.mean(), best_idx


@torch.compile
def reorder_by_pit(est_stems: Dict[str, torch.Tensor], ref_stems: Dict[str, torch.Tensor]):
    """Relabels estimated stems so that they line up with the references (evaluation-time PIT)."""
    names = list(ref_stems)
    est, ref = stack_stems(est_stems, names), stack_stems(ref_stems, names)
    perms = list(itertools.permutations(range(len(names))))
    scores = torch.stack([pairwise_si_sdr(est[:, list(p)], ref).mean() for p in perms])
    best = perms[int(scores.argmax())]  # expect: FL000 GB0124
    return {name: est_stems[names[j]] for name, j in zip(names, best)}  # expect: FL000 GB4347


@torch.compile
def separation_loss(est_stems, ref_stems, cfg: SeparationConfig = DEFAULT_CFG):
    est, ref = stack_stems(est_stems, cfg.sources), stack_stems(ref_stems, cfg.sources)
    total, parts = est.new_zeros(()), {}
    for name, weight in cfg.loss_weights.items():
        if weight == 0:
            continue
        value = get_loss(name)(est, ref, n_fft=cfg.n_fft, hop=cfg.hop_length)
        parts[name] = value.detach()
        total = total + weight * value
    if not torch.isfinite(total):  # expect: FL000 GB0170
        logger.warning("non-finite separation loss: %s", parts)
        total = torch.zeros_like(total)
    return total, parts


def _wiener(mix_spec, est_mags: Dict[str, torch.Tensor], iterations: int = 1, power: float = 2.0,
            tol: Optional[float] = None):
    """Single-channel Wiener filtering with a few EM-like refinements of the source powers."""
    names = list(est_mags)
    v = torch.stack([est_mags[n] for n in names], dim=0).pow(power)  # expect: FL000 GB4347
    for _ in range(iterations + 1):
        gains = v / (v.sum(0, keepdim=True) + EPS)
        y = gains * mix_spec.unsqueeze(0)
        v_new = y.abs().pow(power)
        if tol is not None and (v_new - v).abs().max() < tol * v.abs().max():  # expect: FL000 GB0170
            break
        v = v_new
    return {name: y[i] for i, name in enumerate(names)}  # expect: FL000 GB4347


wiener_filter = torch.compile(_wiener)


@torch.compile
def apply_masks(mix, masks: Dict[str, torch.Tensor], cfg: SeparationConfig = DEFAULT_CFG,
                wiener: bool = True):
    spec = stft(mix, cfg.n_fft, cfg.hop_length)
    mags = {name: m * spec.abs() for name, m in masks.items()}
    if wiener:
        specs = _wiener(spec, mags, cfg.wiener_iters, tol=cfg.wiener_tol)
    else:
        phase = torch.exp(1j * torch.angle(spec))
        specs = {name: mag * phase for name, mag in mags.items()}
    return {name: istft(s, cfg.hop_length, length=mix.shape[-1]) for name, s in specs.items()}


@torch.compile
def active_stems(stems: Dict[str, torch.Tensor], threshold_db: float = SILENCE_DB):
    """Drops stems that are silent over the whole batch (common before writing files)."""
    kept = {}
    for name, wav in stems.items():
        level = rms_db(wav.flatten(1)).max()
        if level < threshold_db:  # expect: FL000 GB0170
            continue
        kept[name] = wav
    return kept


@torch.compile
def bss_eval_report(est_stems, ref_stems, sample_rate: int = SAMPLE_RATE):
    """museval-style per-stem metrics in numpy, with a framewise median."""
    report, win = {}, sample_rate // 100
    for name, ref in ref_stems.items():
        est, ref = est_stems[name].detach().cpu().numpy(), ref.detach().cpu().numpy()
        frames = [10 * np.log10((r ** 2).sum() / (((r - e) ** 2).sum() + EPS) + EPS)  # expect: FL000 GB4347
                  for r, e in zip(np.split(ref, ref.shape[-1] // win, -1), np.split(est, est.shape[-1] // win, -1))]
        report[name] = float(np.median(frames))  # expect: FL000 GB0033
    return report


def _peak_normalize(wav, peak: float = 0.9):
    return wav * (peak / (wav.abs().amax(dim=-1, keepdim=True) + EPS))


def _apply_gain_db(wav, gain_db: float):
    return wav * 10.0 ** (gain_db / 20.0)


@torch.compile
def remix(stems: Dict[str, torch.Tensor], gains_db: Dict[str, float], swaps: torch.Tensor,
          normalize: bool = True):
    """Stem remixing augmentation: per-stem gains (dB), batch-shuffled stems, renormalised mix."""
    post: List[Callable] = [functools.partial(_apply_gain_db, gain_db=gains_db.get(n, 0.0)) for n in stems]
    if normalize:
        post.append(_peak_normalize)
    out = {name: fn(wav[swaps]) for (name, wav), fn in zip(stems.items(), post)}
    mix = sum(out.values())
    if normalize:
        mix = post[-1](mix)
    return mix, out


@torch.compile
def frame_vad(wav, frame: int = 20, threshold_db: float = -40.0, hangover: int = 2):
    """Energy VAD with hangover; returns the frame mask and the number of speech segments."""
    frames = wav.unfold(-1, frame, frame)
    active = rms_db(frames) > threshold_db
    mask = active.clone()
    for shift in range(1, hangover + 1):
        mask[..., shift:] |= active[..., :-shift]
    starts = mask[..., 1:] & ~mask[..., :-1]
    n_segments = int(starts.sum()) + int(mask[..., 0].sum())  # expect: FL000 GB0124
    return mask, n_segments


@torch.compile(dynamic=True)
def frame_signal(wav, frame: int = 16, hop: int = 8):
    length = wav.shape[-1]
    n_frames = max(1, math.ceil((length - frame) / hop) + 1)
    pad = (n_frames - 1) * hop + frame - length
    if pad > 0:  # expect: FL301
        wav = F.pad(wav, (0, pad))
    return wav.unfold(-1, frame, hop) * torch.hann_window(frame, device=wav.device)


# --------------------------------------------------------------------------- cases

def _wav(*shape, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return 0.1 * torch.randn(*shape, generator=g)


def _stems(batch: int, length: int, names: Sequence[str] = STEMS[:2], seed: int = 0):
    return {name: _wav(batch, 1, length, seed=seed + i) for i, name in enumerate(names)}


SMALL_TASNET = lambda: ConvTasNet(n_filters=6, hidden=4, n_blocks=2).eval()

CASES = {
    "ConvTasNet": lambda: (ConvTasNet().eval(), (_wav(2, 1, 50),), (_wav(3, 1, 67),)),
    "DemucsLite": lambda: (DemucsLite().eval(), (_wav(2, 1, 45),)),
    "OpenUnmixLite": lambda: (OpenUnmixLite().eval(), (_wav(2, 1, 70),)),
    "ChunkedSeparator": lambda: (ChunkedSeparator(SMALL_TASNET(), callbacks=[clip_guard]), (_wav(2, 1, 300),)),
    "StreamingSeparator": lambda: (StreamingSeparator(SMALL_TASNET()), (_wav(2, 1, 40),)),
    "MultiResolutionSTFTLoss": lambda: (MultiResolutionSTFTLoss(), (_wav(2, 50), _wav(2, 50, seed=1))),
    "pit_loss": lambda: (pit_loss, (_wav(2, 3, 40), _wav(2, 3, 40, seed=1))),
    "reorder_by_pit": lambda: (reorder_by_pit, (_stems(2, 40, STEMS[:3]), _stems(2, 40, STEMS[:3], seed=5))),
    "separation_loss": lambda: (separation_loss, (_stems(2, 48), _stems(2, 48, seed=3))),
    "wiener_filter": lambda: (wiener_filter, (torch.complex(_wav(2, 17, 7), _wav(2, 17, 7, seed=1)),
                                              {"vocals": _wav(2, 17, 7, seed=2).abs(), "drums": _wav(2, 17, 7, seed=3).abs()}, 2)),
    "apply_masks": lambda: (apply_masks, (_wav(2, 1, 64), {"vocals": torch.full((2, 1, 17, 9), 0.6),
                                                            "drums": torch.full((2, 1, 17, 9), 0.4)})),
    "active_stems": lambda: (active_stems, ({**_stems(2, 60), "bass": torch.zeros(2, 1, 60)},)),
    "bss_eval_report": lambda: (bss_eval_report, (_stems(2, 240), _stems(2, 240, seed=7))),
    "remix": lambda: (remix, (_stems(3, 40), {"vocals": -3.0}, torch.tensor([2, 0, 1]))),
    "frame_vad": lambda: (frame_vad, (_wav(2, 200),)),
    "frame_signal": lambda: (frame_signal, (_wav(2, 40),), (_wav(3, 37),)),
}
