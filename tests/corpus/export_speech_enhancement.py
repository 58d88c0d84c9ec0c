"""On-device speech enhancement (torch.jit.trace / torch.export): conv STFT/iSTFT without complex dtypes, a DCCRN-
style causal U-Net predicting complex ratio masks, minimum-statistics noise floor, gating, loudness normalisation,
chunked offline processing and a streaming frame processor carrying its state between hops."""
import logging
import math
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Callable, Dict, List, Optional, Sequence, Tuple
import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

logger = logging.getLogger("se_deploy")
logger.addHandler(logging.NullHandler())
SAMPLE_RATE = 16000
EPS, ENVELOPE_FLOOR = 1e-8, 1e-6
TARGET_DBFS, MAX_GAIN_DB, SILENCE_DBFS = -25.0, 18.0, -60.0
MIN_SPEECH_RATIO, GATE_ATTENUATION_DB = 0.02, -18.0
LOG_METRICS = True
DEFAULT_PRESET = "edge_conv"

# ----------------------------------------------------------------------------- configs
@dataclass(frozen=True)
class STFTConfig:
    n_fft: int = 32
    hop: int = 8
    window: str = "sqrt_hann"
    center: bool = True
    @property
    def n_freq(self) -> int:
        return self.n_fft // 2 + 1
@dataclass
class EnhancerConfig:
    stft: STFTConfig = field(default_factory=STFTConfig)
    channels: Tuple[int, ...] = (4, 8)
    bottleneck: str = "gru"
    hidden: int = 12
    mask_mode: str = "E"
    mask_bound: Optional[float] = None
    compress: float = 0.3
    act: str = "prelu"
    norm: str = "bn"
    @classmethod
    def from_dict(cls, d: Dict[str, object]) -> "EnhancerConfig":
        d = dict(d)
        stft = STFTConfig(**d.pop("stft", {}))
        return cls(stft=stft, **d)
@dataclass(frozen=True)
class NoiseFloorConfig:
    alpha: float = 0.85  # recursive smoothing of the periodogram
    min_window: int = 6  # frames searched for the minimum
    bias: float = 1.5  # minimum statistics underestimate the mean noise power
    floor_db: float = -90.0
_PRESET_DICTS = {
    "dccrn_tiny": {},
    "edge_conv": {"bottleneck": "tcn", "mask_mode": "R", "act": "relu", "norm": "none", "mask_bound": 1.0},
    "edge_crm": {"bottleneck": "tcn", "mask_mode": "C", "stft": {"window": "hann"}},
}
PRESETS = {name: EnhancerConfig.from_dict(d) for name, d in _PRESET_DICTS.items()}

# ----------------------------------------------------------------------------- dsp helpers
WINDOWS: Dict[str, Callable[[int], Tensor]] = {
    "hann": partial(torch.hann_window, periodic=True),
    "sqrt_hann": lambda n: torch.hann_window(n, periodic=True).sqrt(),
}
def make_window(name: str, n: int) -> Tensor:
    try:
        return WINDOWS[name](n)
    except KeyError:
        raise ValueError(f"unknown window {name!r}; choose from {sorted(WINDOWS)}") from None
def dft_basis(cfg: STFTConfig, inverse: bool = False) -> Tensor:
    """Real DFT as a (2F, 1, n_fft) conv kernel: rows 0..F-1 give the real part, F..2F-1 the imaginary."""
    win = make_window(cfg.window, cfg.n_fft)
    n, k = np.arange(cfg.n_fft), np.arange(cfg.n_freq)
    ang = 2.0 * np.pi * np.outer(k, n) / cfg.n_fft
    # synthesis: 1/N and the doubled weight of the bins that stand for their negative-frequency twins
    scale = np.where((k == 0) | (k == cfg.n_fft // 2), 1.0, 2.0)[:, None] / cfg.n_fft if inverse else 1.0
    basis = np.concatenate([scale * np.cos(ang), -scale * np.sin(ang)], 0)
    return (torch.from_numpy(basis).float() * win)[:, None, :]
db_to_amplitude = lambda db: 10.0 ** (db / 20.0)
db_to_power = lambda db: 10.0 ** (db / 10.0)
power_to_db = lambda p: 10.0 * torch.log10(p.clamp_min(EPS))
rms_db = lambda wav: power_to_db(wav.pow(2).mean(-1))

def magphase(spec: Tensor) -> Tuple[Tensor, Tensor]:
    re, im = spec[:, 0], spec[:, 1]
    return (re.pow(2) + im.pow(2) + EPS).sqrt(), torch.atan2(im, re + EPS)
def polar(mag: Tensor, phase: Tensor) -> Tensor:
    return torch.stack([mag * torch.cos(phase), mag * torch.sin(phase)], 1)
def compress_spectrum(spec: Tensor, power: float) -> Tensor:  # |X|^0.3 with the phase kept
    if power == 1.0:
        return spec
    mag = spec.pow(2).sum(1, keepdim=True).clamp_min(EPS).sqrt()
    return spec * mag.pow(power - 1.0)
def fix_length(wav: Tensor, length: int) -> Tensor:
    n = wav.shape[-1]
    if n >= length:  # expect: FL203
        return wav[..., :length]
    return F.pad(wav, (0, length - n))
def pad_to_multiple(wav: Tensor, multiple: int) -> Tensor:
    rem = wav.shape[-1] % multiple
    if rem:  # expect: FL203; FL301
        wav = F.pad(wav, (0, multiple - rem))
    return wav
def _safe_divide(num: Tensor, den: Tensor) -> Tensor:
    # torch.where keeps the silent edges at exactly zero; exporters that dislike `where` get the clamp
    if torch.jit.is_scripting() or torch.jit.is_tracing():
        return num / den.clamp_min(ENVELOPE_FLOOR)
    return torch.where(den > ENVELOPE_FLOOR, num / den.clamp_min(ENVELOPE_FLOOR), torch.zeros_like(num))
def _guard_finite(out: Tensor, fallback: Tensor, what: str) -> Tensor:
    # a NaN out of the model must never reach the speaker: pass the input through instead
    if not torch.isfinite(out).all():  # expect: FL000 GB0170; FL201
        logger.warning("%s produced non-finite samples; bypassing", what)
        return fallback
    return out
def peak_protect(wav: Tensor, ceiling: float = 0.99) -> Tensor:
    peak = wav.abs().amax(-1, keepdim=True)
    if float(peak.max()) <= ceiling:  # the common case: nothing to limit  # expect: FL000 GB0124; FL202
        return wav
    return wav * (ceiling / peak.clamp_min(ceiling))

# ----------------------------------------------------------------------------- STFT front end
class ConvSTFT(nn.Module):
    """STFT as a strided conv1d with a fixed DFT basis: no complex dtype, so it survives mobile converters."""
    def __init__(self, cfg: STFTConfig = STFTConfig()):
        super().__init__()
        self.cfg = cfg
        self.register_buffer("basis", dft_basis(cfg), persistent=False)
    def forward(self, wav: Tensor) -> Tensor:
        if wav.dim() == 2:
            wav = wav.unsqueeze(1)
        if self.cfg.center:
            p = self.cfg.n_fft // 2
            wav = F.pad(wav, (p, p), mode="reflect")
        spec = F.conv1d(wav, self.basis, stride=self.cfg.hop)
        f = self.cfg.n_freq
        return torch.stack([spec[:, :f], spec[:, f:]], 1)  # (B, 2, F, T)
class ConviSTFT(ConvSTFT):
    def __init__(self, cfg: STFTConfig = STFTConfig()):
        super().__init__(cfg)
        self.register_buffer("basis", dft_basis(cfg, inverse=True), persistent=False)
        self.register_buffer("win_sq", make_window(cfg.window, cfg.n_fft).pow(2).view(1, 1, -1), persistent=False)
    def forward(self, spec: Tensor, length: Optional[int] = None) -> Tensor:
        b, _, f, t = spec.shape
        wav = F.conv_transpose1d(spec.reshape(b, 2 * f, t), self.basis, stride=self.cfg.hop)
        env = F.conv_transpose1d(spec.new_ones(1, 1, t), self.win_sq, stride=self.cfg.hop)
        wav = _safe_divide(wav, env)
        if self.cfg.center:
            p = self.cfg.n_fft // 2
            wav = wav[..., p:-p]
        wav = wav.squeeze(1)
        return wav if length is None else fix_length(wav, length)

# ----------------------------------------------------------------------------- complex ratio masks
def _crm_E(spec: Tensor, mask: Tensor) -> Tensor:
    s_mag, s_phase = magphase(spec)
    m_mag, m_phase = magphase(mask)
    return polar(s_mag * torch.tanh(m_mag), s_phase + m_phase)
def _crm_C(spec: Tensor, mask: Tensor) -> Tensor:
    re = spec[:, 0] * mask[:, 0] - spec[:, 1] * mask[:, 1]
    im = spec[:, 0] * mask[:, 1] + spec[:, 1] * mask[:, 0]
    return torch.stack([re, im], 1)
def _crm_R(spec: Tensor, mask: Tensor) -> Tensor:
    return spec * torch.sigmoid(mask)
MASK_MODES: Dict[str, Callable[[Tensor, Tensor], Tensor]] = {"E": _crm_E, "C": _crm_C, "R": _crm_R}
@torch.compile
def apply_complex_mask(spec: Tensor, mask: Tensor, mode: str = "E", bound: Optional[float] = None) -> Tensor:
    if bound is not None:
        mask = mask.clamp(-bound, bound)
    return MASK_MODES[mode](spec, mask)

# ----------------------------------------------------------------------------- U-Net
ACTS: Dict[str, Callable[[int], nn.Module]] = {"prelu": nn.PReLU, "relu": lambda c: nn.ReLU(inplace=True)}
NORMS: Dict[str, Callable[[int], nn.Module]] = {"bn": nn.BatchNorm2d, "none": lambda c: nn.Identity()}
def _freq_after(n_freq: int, n_layers: int, kernel: int = 3, stride: int = 2) -> int:
    for _ in range(n_layers):
        n_freq = (n_freq + 2 * (kernel // 2) - kernel) // stride + 1
    return n_freq
def _align_freq(x: Tensor, ref: Tensor) -> Tensor:
    """Transposed convs overshoot by a bin for even FFT sizes: crop/pad to the skip's frequency size."""
    diff = ref.shape[-2] - x.shape[-2]
    if diff == 0:  # expect: FL203
        return x
    if diff > 0:
        return F.pad(x, (0, 0, 0, diff))
    return x[..., : ref.shape[-2], :]
class CausalConvBlock(nn.Module):
    def __init__(self, cin: int, cout: int, kf: int = 3, kt: int = 2, stride_f: int = 2, act="prelu", norm="bn"):
        super().__init__()
        self.pad_t = kt - 1
        self.conv = nn.Conv2d(cin, cout, (kf, kt), stride=(stride_f, 1), padding=(kf // 2, 0))
        self.norm = NORMS[norm](cout)
        self.act = ACTS[act](cout)
    def forward(self, x: Tensor) -> Tensor:
        x = F.pad(x, (self.pad_t, 0))  # look at past frames only
        return self.act(self.norm(self.conv(x)))
class CausalDeconvBlock(CausalConvBlock):
    def __init__(self, cin: int, cout: int, kf: int = 3, kt: int = 2, stride_f: int = 2, **kw):
        super().__init__(cin, cout, kf, kt, stride_f, **kw)
        self.conv = nn.ConvTranspose2d(cin, cout, (kf, kt), stride=(stride_f, 1), padding=(kf // 2, 0))
    def forward(self, x: Tensor, skip: Tensor) -> Tensor:
        x = self.conv(torch.cat([_align_freq(x, skip), skip], 1))
        if self.pad_t:
            x = x[..., : -self.pad_t]  # drop the frames that would peek into the future
        return self.act(self.norm(x))
class GRUBottleneck(nn.Module):
    def __init__(self, channels: int, n_freq: int, hidden: int):
        super().__init__()
        self.gru = nn.GRU(channels * n_freq, hidden, batch_first=True)
        self.proj = nn.Linear(hidden, channels * n_freq)
    def forward(self, x: Tensor) -> Tensor:
        b, c, f, t = x.shape
        seq = x.permute(0, 3, 1, 2).reshape(b, t, c * f)
        out, _ = self.gru(seq)  # expect: FL000 GB0014
        return x + self.proj(out).view(b, t, c, f).permute(0, 2, 3, 1)
class TCNBottleneck(nn.Module):
    def __init__(self, channels: int, n_freq: int, hidden: int, dilations: Sequence[int] = (1, 2, 4)):
        super().__init__()
        d = channels * n_freq
        self.dilations = tuple(dilations)
        self.layers = nn.ModuleList(nn.Conv1d(d, d, 2, dilation=k) for k in self.dilations)
    def forward(self, x: Tensor) -> Tensor:
        b, c, f, t = x.shape
        h = x.reshape(b, c * f, t)
        for conv, d in zip(self.layers, self.dilations):
            h = h + F.relu(conv(F.pad(h, (d, 0))))
        return h.view(b, c, f, t)
BOTTLENECKS = {"gru": GRUBottleneck, "tcn": TCNBottleneck}
class CRMUNet(nn.Module):
    def __init__(self, cfg: Optional[EnhancerConfig] = None):
        super().__init__()
        self.cfg = cfg = cfg or PRESETS["dccrn_tiny"]
        chans = (2,) + tuple(cfg.channels)
        block = partial(CausalConvBlock, act=cfg.act, norm=cfg.norm)
        self.encoders = nn.ModuleList(block(a, b) for a, b in zip(chans[:-1], chans[1:]))
        self.decoders = nn.ModuleList(
            CausalDeconvBlock(2 * chans[i + 1], chans[i] if i else cfg.channels[0], act=cfg.act, norm=cfg.norm)
            for i in reversed(range(len(cfg.channels))))
        n_bottom = _freq_after(cfg.stft.n_freq, len(cfg.channels))
        self.bottleneck = BOTTLENECKS[cfg.bottleneck](chans[-1], n_bottom, cfg.hidden)
        self.head = nn.Conv2d(cfg.channels[0], 2, 1)
    def forward(self, spec: Tensor) -> Tensor:
        x = compress_spectrum(spec, self.cfg.compress)
        skips: List[Tensor] = []
        for enc in self.encoders:
            x = enc(x)
            skips.append(x)
        x = self.bottleneck(x)
        for dec in self.decoders:
            x = dec(x, skips.pop())
        return self.head(x)

# ----------------------------------------------------------------------------- noise floor / gating / loudness
def recursive_smooth(x: Tensor, alpha: float) -> Tensor:
    """First-order IIR along time; a loop is fine for the few hundred frames of a clip."""
    state = x[..., 0]
    out = []
    for t in range(x.shape[-1]):  # expect: FL301
        state = alpha * state + (1.0 - alpha) * x[..., t]
        out.append(state)
    return torch.stack(out, -1)
def running_min(x: Tensor, window: int) -> Tensor:
    x = F.pad(x, (window - 1, 0), mode="replicate")
    return x.unfold(-1, window, 1).amin(-1)
class NoiseFloorEstimator(nn.Module):
    """Minimum statistics (Martin 2001), simplified: smoothed periodogram -> sliding minimum -> bias."""
    def __init__(self, cfg: NoiseFloorConfig = NoiseFloorConfig()):
        super().__init__()
        self.cfg = cfg
    def forward(self, spec: Tensor) -> Tensor:
        power = spec.pow(2).sum(1)
        smoothed = recursive_smooth(power, self.cfg.alpha)
        floor = running_min(smoothed, self.cfg.min_window) * self.cfg.bias
        logger.debug("noise floor estimated over %d frames", power.shape[-1])  # expect: FL000 GB0291; FL204
        return floor.clamp_min(db_to_power(self.cfg.floor_db))
def make_time_smoother(frames: int) -> Callable[[Tensor], Tensor]:
    kernel = torch.ones(1, 1, frames) / frames
    def smooth(mask: Tensor) -> Tensor:
        b, f, t = mask.shape
        x = F.pad(mask.reshape(b * f, 1, t), (frames - 1, 0), mode="replicate")
        return F.conv1d(x, kernel.to(mask)).view(b, f, t)
    return smooth
_smooth_gate = make_time_smoother(3)
@torch.compile
def spectral_gate(spec: Tensor, noise_floor: Tensor, threshold_db: float = 6.0,
                  attenuation_db: float = GATE_ATTENUATION_DB) -> Tensor:
    snr_db = power_to_db(spec.pow(2).sum(1)) - power_to_db(noise_floor)
    speech = (snr_db > threshold_db).float()
    if speech.mean() < MIN_SPEECH_RATIO:  # practically silent clip: attenuate uniformly, no musical noise  # expect: FL000 GB0170; FL201
        return spec * db_to_amplitude(attenuation_db)
    floor = db_to_amplitude(attenuation_db)
    gain = floor + (1.0 - floor) * _smooth_gate(speech)
    return spec * gain.unsqueeze(1)
def _within_tolerance(gain_db: Tensor, tolerance_db: float) -> Tensor:
    return (gain_db.abs() <= tolerance_db).all()
class LoudnessNormalizer(nn.Module):
    def __init__(self, target_db: float = TARGET_DBFS, max_gain_db: float = MAX_GAIN_DB,
                 tolerance_db: float = 0.5, gate_db: float = SILENCE_DBFS):
        super().__init__()
        self.target_db, self.max_gain_db = target_db, max_gain_db
        self.tolerance_db, self.gate_db = tolerance_db, gate_db
    def forward(self, wav: Tensor) -> Tensor:
        level = rms_db(wav)
        if _within_tolerance(self.target_db - level, self.tolerance_db):  # expect: FL000 GB0170; FL201
            return wav
        gain_db = (self.target_db - level).clamp(-self.max_gain_db, self.max_gain_db)
        gain_db = torch.where(level < self.gate_db, torch.zeros_like(gain_db), gain_db)  # don't pump silence
        return peak_protect(wav * db_to_amplitude(gain_db).unsqueeze(-1))

# ----------------------------------------------------------------------------- offline model
class DeployableEnhancer(nn.Module):
    """waveform in, waveform out: the graph that ships in the app's offline 'clean up recording' action."""
    def __init__(self, cfg: Optional[EnhancerConfig] = None, normalize: bool = True):
        super().__init__()
        self.cfg = cfg = cfg or PRESETS[DEFAULT_PRESET]
        self.stft, self.istft = ConvSTFT(cfg.stft), ConviSTFT(cfg.stft)
        self.net = CRMUNet(cfg)
        self.loudness = LoudnessNormalizer() if normalize else None
    def forward(self, wav: Tensor) -> Tensor:
        n = wav.shape[-1]
        spec = self.stft(pad_to_multiple(wav, self.cfg.stft.hop))
        mask = self.net(spec)
        est = apply_complex_mask(spec, mask, self.cfg.mask_mode, self.cfg.mask_bound)
        out = self.istft(est, length=n)
        if self.loudness is not None:
            out = self.loudness(out)
        return _guard_finite(out, wav, type(self.net).__name__)

# ----------------------------------------------------------------------------- streaming
class FrameMaskNet(nn.Module):
    """RNNoise-flavoured per-frame gain estimator: compressed spectrum -> GRUCell -> per-bin gains."""
    def __init__(self, n_freq: int, hidden: int):
        super().__init__()
        self.inp = nn.Linear(2 * n_freq, hidden)
        self.cell = nn.GRUCell(hidden, hidden)
        self.out = nn.Linear(hidden, n_freq)
    def forward(self, frame_spec: Tensor, h: Tensor) -> Tuple[Tensor, Tensor]:
        feats = compress_spectrum(frame_spec, 0.3).flatten(1)
        h = self.cell(torch.tanh(self.inp(feats)), h)
        return torch.sigmoid(self.out(h)), h
class StreamingEnhancer(nn.Module):
    """Feeds one hop at a time; the analysis buffer, overlap-add tail and GRU state live in buffers."""
    def __init__(self, cfg: STFTConfig = STFTConfig(center=False), hidden: int = 12, batch: int = 1):
        super().__init__()
        self.cfg = cfg
        self.register_buffer("fwd", dft_basis(cfg)[:, 0].t().contiguous())  # (n_fft, 2F)
        self.register_buffer("inv", dft_basis(cfg, inverse=True)[:, 0])  # (2F, n_fft)
        self.ola_norm = cfg.hop / float(make_window(cfg.window, cfg.n_fft).pow(2).sum())
        self.mask_net = FrameMaskNet(cfg.n_freq, hidden)
        overlap = cfg.n_fft - cfg.hop
        self.register_buffer("in_buf", torch.zeros(batch, overlap))
        self.register_buffer("ola_buf", torch.zeros(batch, overlap))
        self.register_buffer("hidden", torch.zeros(batch, hidden))
        self.bypass_silence = True
        self.chunks_seen = 0
    def process_frame(self, frame: Tensor, hidden: Tensor) -> Tuple[Tensor, Tensor]:
        spec = (frame @ self.fwd).view(frame.shape[0], 2, -1)
        gain, hidden = self.mask_net(spec, hidden)
        out = (spec * gain.unsqueeze(1)).flatten(1) @ self.inv
        return out * self.ola_norm, hidden
    def forward(self, chunk: Tensor) -> Tensor:
        hop = self.cfg.hop
        assert chunk.shape[-1] == hop, f"expected {hop}-sample chunks, got {chunk.shape[-1]}"
        if self.bypass_silence and not chunk.any():  # digital silence (muted mic): skip the net, keep state  # expect: FL000 GB0170
            return chunk
        frame = torch.cat([self.in_buf, chunk], -1)
        out, h = self.process_frame(frame, self.hidden)
        out = out + F.pad(self.ola_buf, (0, hop))
        self.in_buf.copy_(frame[:, hop:])
        self.ola_buf.copy_(out[:, hop:].detach())
        self.hidden.copy_(h.detach())
        self.chunks_seen += 1  # expect: FL302
        return out[:, :hop]
class ExportableStreamStep(nn.Module):
    """State in, state out: what the audio thread on the phone calls every hop (no Python-side buffers)."""
    def __init__(self, core: StreamingEnhancer):
        super().__init__()
        self.core = core
    def forward(self, chunk: Tensor, in_buf: Tensor, ola_buf: Tensor, hidden: Tensor):
        hop = self.core.cfg.hop
        frame = torch.cat([in_buf, chunk], -1)
        out, hidden = self.core.process_frame(frame, hidden)
        out = out + F.pad(ola_buf, (0, hop))
        return out[:, :hop], frame[:, hop:], out[:, hop:], hidden

# ----------------------------------------------------------------------------- classic DSP fallback + chunking
def wiener_denoise(wav: Tensor, n_fft: int = 32, hop: int = 8, noise_frames: int = 4, floor_db: float = -25.0):
    win = torch.hann_window(n_fft, device=wav.device)
    spec = torch.stft(wav, n_fft, hop, window=win, return_complex=True)
    power = spec.abs().pow(2)
    noise = power[..., :noise_frames].mean(-1, keepdim=True)  # leading frames are assumed noise-only
    gain = (1.0 - noise / power.clamp_min(EPS)).clamp_min(db_to_amplitude(floor_db))
    return torch.istft(spec * gain, n_fft, hop, window=win, length=wav.shape[-1])
def _crossfade(chunk: int, overlap: int, like: Tensor) -> Tensor:
    fade = torch.ones(chunk, dtype=like.dtype, device=like.device)
    ramp = torch.linspace(0.0, 1.0, overlap + 2, dtype=like.dtype, device=like.device)[1:-1]
    fade[:overlap] = ramp
    fade[-overlap:] = ramp.flip(0)
    return fade
@torch.compile(dynamic=True)
def enhance_in_chunks(wav: Tensor, denoise: Callable[[Tensor], Tensor] = wiener_denoise,
                      chunk: int = 96, overlap: int = 16) -> Tensor:
    n = wav.shape[-1]
    if n <= chunk:
        return denoise(wav)
    step = chunk - overlap
    fade = _crossfade(chunk, overlap, wav)
    out, norm = torch.zeros_like(wav), torch.zeros_like(wav)
    for start in range(0, n - overlap, step):  # expect: FL301
        seg = wav[..., start:start + chunk]
        w = fade[: seg.shape[-1]]
        out[..., start:start + seg.shape[-1]] += denoise(seg) * w
        norm[..., start:start + seg.shape[-1]] += w
    return _guard_finite(out / norm.clamp_min(EPS), wav, "chunked denoiser")

# ----------------------------------------------------------------------------- training-side utilities
@torch.compile(dynamic=True)
def mix_at_snr(clean: Tensor, noise: Tensor, snr_db: Tensor) -> Tuple[Tensor, Tensor]:
    n = clean.shape[-1]
    if noise.shape[-1] < n:  # expect: FL301
        noise = noise.repeat(1, math.ceil(n / noise.shape[-1]))
    noise = noise[..., :n]
    p_clean = clean.pow(2).mean(-1, keepdim=True)
    p_noise = noise.pow(2).mean(-1, keepdim=True).clamp_min(EPS)
    scale = torch.sqrt(p_clean / (p_noise * db_to_power(snr_db.unsqueeze(-1))))
    noisy = _guard_finite(clean + scale * noise, clean, "mixer")  # corrupt clips in the noise corpus happen
    peak = noisy.abs().amax(-1, keepdim=True).clamp_min(1.0)  # same factor on both keeps the SNR
    return noisy / peak, clean / peak
@torch.compile
def si_sdr(est: Tensor, ref: Tensor, zero_mean: bool = True) -> Tensor:
    if zero_mean:
        est, ref = est - est.mean(-1, keepdim=True), ref - ref.mean(-1, keepdim=True)
    alpha = (est * ref).sum(-1, keepdim=True) / ref.pow(2).sum(-1, keepdim=True).clamp_min(EPS)
    target = alpha * ref
    return 10.0 * torch.log10(target.pow(2).sum(-1) / (est - target).pow(2).sum(-1).clamp_min(EPS))
def _log_metrics(report: Dict[str, Tensor], prefix: str = "eval") -> None:
    msg = ", ".join(f"{k}={v.mean():.2f}" for k, v in report.items())  # expect: FL000 GB0156
    logger.info("[%s] %s", prefix, msg)
@torch.compile
def enhancement_report(noisy: Tensor, enhanced: Tensor, clean: Tensor) -> Dict[str, Tensor]:
    before, after = si_sdr(noisy, clean), si_sdr(enhanced, clean)
    report = {"si_sdr": after, "si_sdr_i": after - before, "level_db": rms_db(enhanced)}
    if LOG_METRICS:
        _log_metrics(report)
    return report

# ----------------------------------------------------------------------------- post-processing chain
def remove_dc(wav: Tensor) -> Tensor:
    return wav - wav.mean(-1, keepdim=True)
def soft_clip(wav: Tensor, threshold: float = 0.9) -> Tensor:
    mag = wav.abs()
    clipped = int((mag > threshold).sum())  # expect: FL000 GB0124; FL202
    if clipped:
        logger.debug("soft-clipping %d samples above %.2f", clipped, threshold)  # expect: FL000 GB0291; FL204
    knee = threshold + (1.0 - threshold) * torch.tanh((mag - threshold) / (1.0 - threshold))
    return torch.where(mag > threshold, knee * wav.sign(), wav)
def fade_edges(wav: Tensor, fade_ms: float = 2.0, sr: int = SAMPLE_RATE) -> Tensor:
    n = min(int(sr * fade_ms / 1000), wav.shape[-1] // 2)  # expect: FL203
    ramp = torch.linspace(0.0, 1.0, n, dtype=wav.dtype, device=wav.device)
    wav = wav.clone()
    wav[..., :n] *= ramp
    wav[..., -n:] *= ramp.flip(0)
    return wav
POSTPROCESS: List[Callable[[Tensor], Tensor]] = [remove_dc, partial(soft_clip, threshold=0.95), fade_edges]
@torch.compile
def postprocess(wav: Tensor, hooks: Optional[Sequence[Callable[[Tensor], Tensor]]] = None) -> Tensor:
    for hook in POSTPROCESS if hooks is None else hooks:
        wav = hook(wav)
    return wav

# ----------------------------------------------------------------------------- export entry points
def export_for_device(out_dir: str, preset: str = DEFAULT_PRESET, seconds: float = 0.5) -> Dict[str, object]:
    cfg = PRESETS[preset]
    wav = torch.randn(1, int(SAMPLE_RATE * seconds)) * 0.1
    spec = ConvSTFT(cfg.stft)(wav)
    artifacts: Dict[str, object] = {}
    with torch.no_grad():
        artifacts["stft"] = torch.jit.trace(ConvSTFT(cfg.stft), (wav,))
        artifacts["istft"] = torch.jit.trace(ConviSTFT(cfg.stft), (spec,))
        artifacts["unet"] = torch.jit.trace(CRMUNet(cfg).eval(), (spec,))
        artifacts["offline"] = torch.jit.trace(DeployableEnhancer(cfg, normalize=False).eval(), (wav,))
        artifacts["mask"] = torch.jit.trace(apply_complex_mask, (spec, torch.randn_like(spec)))
        floor = NoiseFloorEstimator()(spec)
        artifacts["noise_floor"] = torch.jit.trace(NoiseFloorEstimator(), (spec,))
        artifacts["gate"] = torch.jit.trace(spectral_gate, (spec, floor))
        artifacts["loudness"] = torch.jit.trace(LoudnessNormalizer(), (wav,))
        artifacts["post"] = torch.jit.trace(postprocess, (wav,))
    for name, module in artifacts.items():
        module.save(f"{out_dir}/{name}.pt")
    core = StreamingEnhancer(replace(cfg.stft, center=False)).eval()
    state = (core.in_buf.clone(), core.ola_buf.clone(), core.hidden.clone())
    programs = {
        "stream_step": torch.export.export(ExportableStreamStep(core), (wav[:, : cfg.stft.hop],) + state),
        "loudness": torch.export.export(LoudnessNormalizer(), (wav,)),
    }
    for name, program in programs.items():
        torch.export.save(program, f"{out_dir}/{name}.pt2")
    return {**artifacts, **programs}

# ----------------------------------------------------------------------------- cases
_gen = lambda k: torch.Generator().manual_seed(k)
_randn = lambda *shape, k=0: torch.randn(*shape, generator=_gen(k))
_rand = lambda *shape, k=0: torch.rand(*shape, generator=_gen(k))
def _speechlike(b: int, n: int, k: int = 0, level: float = 0.3) -> Tensor:
    t = torch.arange(n, dtype=torch.float32) / SAMPLE_RATE
    f0 = 180.0 + 40.0 * _rand(b, 1, k=k)
    voiced = sum(torch.sin(2 * math.pi * h * f0 * t) / h for h in (1, 2, 3))
    return level * voiced + 0.05 * _randn(b, n, k=k + 1)
_spec = lambda b, t, k=0: ConvSTFT()(_speechlike(b, (t - 1) * 8, k=k))
_deploy = lambda name, normalize=False: DeployableEnhancer(PRESETS[name], normalize).eval()
def _step_args(k: int = 0):
    return (_speechlike(1, 8, k=k), _randn(1, 24, k=k + 1) * 0.1, _randn(1, 24, k=k + 2) * 0.1, _randn(1, 12, k=k + 3))
CASES = {
    "ConvSTFT": lambda: (ConvSTFT(), (_speechlike(2, 200),)),
    "ConviSTFT": lambda: (ConviSTFT(STFTConfig(window="hann")), (_spec(2, 26), 197)),
    "CausalConvBlock": lambda: (CausalConvBlock(2, 4), (_randn(2, 2, 17, 11),)),
    "CausalDeconvBlock": lambda: (CausalDeconvBlock(16, 4).eval(), (_randn(2, 8, 5, 11), _randn(2, 8, 5, 11, k=1))),
    "GRUBottleneck": lambda: (GRUBottleneck(8, 5, 12), (_randn(2, 8, 5, 11),)),
    "TCNBottleneck": lambda: (TCNBottleneck(8, 5, 12), (_randn(2, 8, 5, 11),)),
    "CRMUNet": lambda: (CRMUNet().eval(), (_spec(2, 21),)),
    "CRMUNet_edge": lambda: (CRMUNet(PRESETS["edge_conv"]).eval(), (_spec(2, 21, k=2),)),
    "apply_complex_mask": lambda: (apply_complex_mask, (_spec(2, 21), _randn(2, 2, 17, 21), "C", 2.0)),
    "NoiseFloorEstimator": lambda: (NoiseFloorEstimator(), (_spec(3, 29),), (_spec(3, 37, k=4),)),
    "spectral_gate": lambda: (spectral_gate, (_spec(2, 21), _rand(2, 17, 21) * 0.05)),
    "LoudnessNormalizer": lambda: (LoudnessNormalizer(), (_speechlike(3, 160, level=0.02),)),
    "DeployableEnhancer": lambda: (_deploy("edge_conv"), (_speechlike(3, 203),), (_speechlike(3, 200),)),
    "DeployableEnhancer_dccrn": lambda: (_deploy("dccrn_tiny", True), (_speechlike(2, 200),)),
    "FrameMaskNet": lambda: (FrameMaskNet(17, 12), (_randn(2, 2, 17), _randn(2, 12, k=1))),
    "StreamingEnhancer": lambda: (StreamingEnhancer().eval(), (_speechlike(1, 8),)),
    "ExportableStreamStep": lambda: (ExportableStreamStep(StreamingEnhancer().eval()), _step_args()),
    "enhance_in_chunks": lambda: (enhance_in_chunks, (_speechlike(2, 200),), (_speechlike(2, 260, k=3),)),
    "mix_at_snr": lambda: (mix_at_snr, (_speechlike(2, 200), _randn(2, 120, k=5), _rand(2) * 10),
                           (_speechlike(2, 150), _randn(2, 170, k=5), _rand(2) * 10)),
    "si_sdr": lambda: (si_sdr, (_speechlike(3, 160), _speechlike(3, 160, k=2))),
    "enhancement_report": lambda: (enhancement_report, tuple(_speechlike(2, 160, k=k) for k in (0, 1, 2))),
    "postprocess": lambda: (postprocess, (_speechlike(2, 200, level=0.9),)),
}
TRACED = {
    "ConvSTFT": lambda: (ConvSTFT(), (_speechlike(1, 200),)),
    "ConviSTFT": lambda: (ConviSTFT(), (_spec(1, 26),)),
    "CRMUNet": lambda: (CRMUNet(PRESETS["edge_conv"]).eval(), (_spec(1, 21),)),
    "DeployableEnhancer": lambda: (_deploy("edge_crm"), (_speechlike(1, 203),)),
    "apply_complex_mask": lambda: (apply_complex_mask, (_spec(1, 21), _randn(1, 2, 17, 21))),
    "NoiseFloorEstimator": lambda: (NoiseFloorEstimator(), (_spec(1, 29),)),
    "spectral_gate": lambda: (spectral_gate, (_spec(1, 21), _rand(1, 17, 21) * 0.05)),
    "LoudnessNormalizer": lambda: (LoudnessNormalizer(), (_speechlike(1, 160, level=0.9),)),
    "ExportableStreamStep": lambda: (ExportableStreamStep(StreamingEnhancer().eval()), _step_args(3)),
    "postprocess": lambda: (postprocess, (_speechlike(1, 200, level=0.9),)),
}
