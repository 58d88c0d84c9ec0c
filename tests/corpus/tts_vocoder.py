"""TTS acoustic models and vocoders after FastSpeech2 (ming024), FastPitch, Glow-TTS/VITS and
HiFi-GAN: length regulation, variance adaptors, alignment search, MRF generators, GAN losses."""
import functools
import logging
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils import spectral_norm, weight_norm

logger = logging.getLogger("tts")
logger.addHandler(logging.NullHandler())

MAX_WAV_VALUE = 32768.0
LRELU_SLOPE = 0.1
LOG_EPS = 1e-5
VERBOSE_LOSSES = False

mel_basis: Dict[str, torch.Tensor] = {}
hann_window: Dict[str, torch.Tensor] = {}


@dataclass
class AcousticConfig:
    n_symbols: int = 11
    hidden: int = 6
    n_mels: int = 8
    filter_size: int = 10
    kernel_size: int = 3
    dropout: float = 0.1
    n_bins: int = 7
    pitch_range: Tuple[float, float] = (-2.0, 2.0)
    energy_range: Tuple[float, float] = (0.0, 3.0)
    log_pitch_bins: bool = False
    n_speakers: int = 4


@dataclass
class VocoderConfig:
    upsample_initial_channel: int = 12
    upsample_rates: Sequence[int] = (2, 2)
    upsample_kernel_sizes: Sequence[int] = (4, 4)
    resblock_kernel_sizes: Sequence[int] = (3, 5)
    resblock_dilation_sizes: Sequence[Sequence[int]] = field(default_factory=lambda: [[1, 3], [1, 3]])
    activation: str = "lrelu"


# --------------------------------------------------------------------------- small utilities
def get_padding(kernel_size: int, dilation: int = 1) -> int:
    return int((kernel_size * dilation - dilation) / 2)


def init_weights(m: nn.Module, mean: float = 0.0, std: float = 0.01):
    if m.__class__.__name__.find("Conv") != -1:
        m.weight.data.normal_(mean, std)


def sequence_mask(lengths: torch.Tensor, max_len: Optional[int] = None) -> torch.Tensor:
    if max_len is None:
        max_len = lengths.max()
    ids = torch.arange(max_len, device=lengths.device)
    return ids.unsqueeze(0) < lengths.unsqueeze(1)


def convert_pad_shape(pad_shape: List[List[int]]) -> List[int]:
    reversed_shape = pad_shape[::-1]
    return [item for sublist in reversed_shape for item in sublist]


def pad_list(xs: List[torch.Tensor], max_len: Optional[int] = None, value: float = 0.0) -> torch.Tensor:
    if max_len is None:
        max_len = max(x.size(0) for x in xs)
    padded = []
    for x in xs:
        padded.append(F.pad(x, (0, 0, 0, max_len - x.size(0)), "constant", value))
    return torch.stack(padded)


ACTIVATIONS = {"lrelu": functools.partial(F.leaky_relu, negative_slope=LRELU_SLOPE), "gelu": F.gelu}


def get_activation(name: str):
    try:
        return ACTIVATIONS[name]
    except KeyError:
        logger.warning("unknown activation %s, falling back to leaky relu", name)
        return ACTIVATIONS["lrelu"]


def make_bins(lo: float, hi: float, n_bins: int, log_scale: bool = False) -> torch.Tensor:
    if log_scale:
        edges = np.exp(np.linspace(np.log(lo), np.log(hi), n_bins - 1))
        return torch.from_numpy(edges).float()
    return torch.linspace(lo, hi, n_bins - 1)


def librosa_mel_fn(sr: int, n_fft: int, n_mels: int, fmin: float, fmax: float) -> np.ndarray:
    """HTK-style triangular filters with Slaney normalisation (no librosa dependency)."""
    hz_to_mel = lambda f: 2595.0 * np.log10(1.0 + f / 700.0)  # noqa: E731
    mel_to_hz = lambda m: 700.0 * (10.0 ** (m / 2595.0) - 1.0)  # noqa: E731
    fft_freqs = np.linspace(0, sr / 2, n_fft // 2 + 1)
    mel_pts = mel_to_hz(np.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2))
    weights = np.zeros((n_mels, len(fft_freqs)), dtype=np.float32)
    for i in range(n_mels):
        lower = (fft_freqs - mel_pts[i]) / (mel_pts[i + 1] - mel_pts[i])
        upper = (mel_pts[i + 2] - fft_freqs) / (mel_pts[i + 2] - mel_pts[i + 1])
        weights[i] = np.maximum(0, np.minimum(lower, upper))
    enorm = 2.0 / (mel_pts[2:n_mels + 2] - mel_pts[:n_mels])
    return weights * enorm[:, None]


def dynamic_range_compression(x: torch.Tensor, C: float = 1.0, clip_val: float = LOG_EPS):
    return torch.log(torch.clamp(x, min=clip_val) * C)


# --------------------------------------------------------------------------- variance adaptor
class VariancePredictor(nn.Module):
    def __init__(self, cfg: AcousticConfig):
        super().__init__()
        k = cfg.kernel_size
        self.conv1 = nn.Conv1d(cfg.hidden, cfg.filter_size, k, padding=(k - 1) // 2)
        self.ln1 = nn.LayerNorm(cfg.filter_size)
        self.conv2 = nn.Conv1d(cfg.filter_size, cfg.filter_size, k, padding=1)
        self.ln2 = nn.LayerNorm(cfg.filter_size)
        self.dropout = nn.Dropout(cfg.dropout)
        self.linear = nn.Linear(cfg.filter_size, 1)

    def _block(self, x, conv, ln):
        x = conv(x.transpose(1, 2)).transpose(1, 2)
        return self.dropout(ln(F.relu(x)))

    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        x = self._block(x, self.conv1, self.ln1)
        x = self._block(x, self.conv2, self.ln2)
        out = self.linear(x).squeeze(-1)
        if mask is not None:
            out = out.masked_fill(mask, 0.0)
        return out


class DurationPredictor(VariancePredictor):
    """Predicts log(1 + d); `durations` turns that into integer frame counts with a pace."""
    min_frames = 1

    def durations(self, log_d: torch.Tensor, pace: float = 1.0) -> torch.Tensor:
        d = torch.clamp(torch.round(torch.exp(log_d) - 1) * pace, min=self.min_frames)
        return d.long()

    def forward(self, x, mask=None, pace: float = 1.0):
        log_d = super().forward(x, mask)
        return log_d, self.durations(log_d, pace)


class LengthRegulator(nn.Module):
    """ming024/FastSpeech2: expand each phoneme vector by its duration, then pad."""
    def expand(self, batch: torch.Tensor, predicted: torch.Tensor) -> torch.Tensor:
        out = []
        for i, vec in enumerate(batch):
            expand_size = predicted[i].item()  # expect: FL000 GB0124
            out.append(vec.expand(max(int(expand_size), 0), -1))
        return torch.cat(out, 0)

    def forward(self, x, duration, max_len: Optional[int] = None):
        output, mel_len = [], []
        for batch, expand_target in zip(x, duration):
            expanded = self.expand(batch, expand_target)
            output.append(expanded)
            mel_len.append(expanded.shape[0])
        output = pad_list(output, max_len)
        return output, torch.LongTensor(mel_len)


def regulate_len(durations, enc_out, pace: float = 1.0):
    reps = (durations.float() / pace + 0.5).long()
    dec_lens = reps.sum(dim=1)
    max_len = dec_lens.max()
    reps_cumsum = torch.cumsum(F.pad(reps, (1, 0, 0, 0), value=0.0), dim=1)[:, None, :]
    reps_cumsum = reps_cumsum.to(enc_out.dtype)
    range_ = torch.arange(max_len, device=enc_out.device)[None, :, None]  # expect: FL000 GB0033
    mult = (reps_cumsum[:, :, :-1] <= range_) & (reps_cumsum[:, :, 1:] > range_)
    return torch.matmul(mult.to(enc_out.dtype), enc_out), dec_lens


@torch.compile
def fastpitch_regulate(enc_out, log_durations, pace: float = 1.0):
    durations = torch.clamp(torch.exp(log_durations) - 1, min=0)
    return regulate_len(durations, enc_out, pace)


class VarianceAdaptor(nn.Module):
    def __init__(self, cfg: AcousticConfig):
        super().__init__()
        self.duration_predictor = DurationPredictor(cfg)
        self.length_regulator = LengthRegulator()
        self.pitch_predictor = VariancePredictor(cfg)
        self.energy_predictor = VariancePredictor(cfg)
        self.register_buffer("pitch_bins", make_bins(*cfg.pitch_range, cfg.n_bins, cfg.log_pitch_bins),
                             persistent=False)
        self.register_buffer("energy_bins", make_bins(*cfg.energy_range, cfg.n_bins), persistent=False)
        self.pitch_embedding = nn.Embedding(cfg.n_bins, cfg.hidden)
        self.energy_embedding = nn.Embedding(cfg.n_bins, cfg.hidden)

    def _variance_embedding(self, kind: str, x, target, mask, control: float):
        prediction = getattr(self, f"{kind}_predictor")(x, mask)
        value = target if target is not None else prediction * control
        bins = getattr(self, f"{kind}_bins")
        emb = getattr(self, f"{kind}_embedding")(torch.bucketize(value, bins))
        return prediction, emb

    def forward(self, x, src_mask=None, d_target=None, p_target=None, e_target=None,
                p_control: float = 1.0, e_control: float = 1.0, d_control: float = 1.0):
        log_d, d_rounded = self.duration_predictor(x, src_mask, pace=d_control)
        pitch_pred, pitch_emb = self._variance_embedding("pitch", x, p_target, src_mask, p_control)
        energy_pred, energy_emb = self._variance_embedding("energy", x, e_target, src_mask, e_control)
        x = x + pitch_emb + energy_emb
        duration = d_target if d_target is not None else d_rounded
        x, mel_len = self.length_regulator(x, duration)
        mel_mask = ~sequence_mask(mel_len, x.size(1))
        return x, (log_d, pitch_pred, energy_pred), mel_len, mel_mask


class FastSpeech2(nn.Module):
    def __init__(self, cfg: AcousticConfig = AcousticConfig()):
        super().__init__()
        self.cfg = cfg
        self.src_emb = nn.Embedding(cfg.n_symbols, cfg.hidden, padding_idx=0)
        self.encoder = nn.Conv1d(cfg.hidden, cfg.hidden, cfg.kernel_size, padding=1)
        self.speaker_emb = nn.Embedding(cfg.n_speakers, cfg.hidden)
        self.speaker_map = {f"spk{i}": i for i in range(cfg.n_speakers)}
        self.adaptor = VarianceAdaptor(cfg)
        self.mel_linear = nn.Linear(cfg.hidden, cfg.n_mels)

    def embed_speakers(self, speakers, batch: int, device) -> torch.Tensor:
        if speakers is None:
            ids = torch.zeros(batch, dtype=torch.long, device=device)
        elif isinstance(speakers, (list, tuple)):
            ids = torch.tensor([self.speaker_map[s] for s in speakers], device=device)
        else:
            ids = speakers
        return self.speaker_emb(ids).unsqueeze(1)

    def forward(self, tokens, src_lens, speakers=None, d_control: float = 1.0):
        src_mask = ~sequence_mask(src_lens, tokens.size(1))
        x = self.src_emb(tokens)
        x = F.relu(self.encoder(x.transpose(1, 2))).transpose(1, 2)
        x = x + self.embed_speakers(speakers, x.size(0), x.device)
        x, preds, mel_len, mel_mask = self.adaptor(x, src_mask, d_control=d_control)
        mel = self.mel_linear(x).masked_fill(mel_mask.unsqueeze(-1), 0.0)
        return mel.transpose(1, 2), mel_len, preds


# --------------------------------------------------------------------------- monotonic alignment
@torch.compile
def maximum_path(neg_cent: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Glow-TTS monotonic alignment search, batched in torch. neg_cent: [b, t_text, t_mel]."""
    b, t_x, t_y = neg_cent.shape
    value = neg_cent.masked_fill(~mask, -1e9)
    rows = torch.arange(t_x, device=neg_cent.device)
    acc = [value[:, :, 0].masked_fill(rows > 0, -1e9)]
    for j in range(1, t_y):  # expect: FL301
        prev = acc[-1]
        shifted = F.pad(prev[:, :-1], (1, 0), value=-1e9)
        acc.append(value[:, :, j] + torch.maximum(prev, shifted))
    acc = torch.stack(acc, dim=-1)
    path = torch.zeros_like(value)
    index = torch.full((b,), t_x - 1, dtype=torch.long)
    for j in reversed(range(t_y)):
        path[torch.arange(b), index, j] = 1.0
        if j > 0:
            stay = acc[torch.arange(b), index, j - 1]
            move = acc[torch.arange(b), (index - 1).clamp(min=0), j - 1]
            index = torch.where((index > 0) & (move >= stay), index - 1, index)
    return path * mask


@torch.compile
def generate_path(duration: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    b, t_x, t_y = mask.shape
    cum_duration = torch.cumsum(duration, -1).view(b * t_x)
    path = sequence_mask(cum_duration, t_y).to(mask.dtype).view(b, t_x, t_y)
    path = path - F.pad(path, convert_pad_shape([[0, 0], [1, 0], [0, 0]]))[:, :-1]
    return path * mask


# --------------------------------------------------------------------------- HiFi-GAN generator
class ResBlock1(nn.Module):
    def __init__(self, channels, kernel_size=3, dilation=(1, 3), activation="lrelu"):
        super().__init__()
        self.act = get_activation(activation)
        self.convs = nn.ModuleList(
            weight_norm(nn.Conv1d(channels, channels, kernel_size, 1, dilation=d,
                                  padding=get_padding(kernel_size, d))) for d in dilation)
        self.convs2 = nn.ModuleList(
            weight_norm(nn.Conv1d(channels, channels, kernel_size, 1, dilation=1,
                                  padding=get_padding(kernel_size, 1))) for _ in dilation)
        self.convs.apply(init_weights)
        self.convs2.apply(init_weights)

    def forward(self, x):
        for c1, c2 in zip(self.convs, self.convs2):
            xt = c2(self.act(c1(self.act(x))))
            x = xt + x
        return x


class Generator(nn.Module):
    def __init__(self, n_mels: int = 8, h: VocoderConfig = VocoderConfig()):
        super().__init__()
        self.h = h
        self.num_kernels = len(h.resblock_kernel_sizes)
        self.num_upsamples = len(h.upsample_rates)
        self.conv_pre = weight_norm(nn.Conv1d(n_mels, h.upsample_initial_channel, 7, 1, padding=3))
        self.ups = nn.ModuleList()
        for i, (u, k) in enumerate(zip(h.upsample_rates, h.upsample_kernel_sizes)):
            self.ups.append(weight_norm(nn.ConvTranspose1d(
                h.upsample_initial_channel // (2 ** i), h.upsample_initial_channel // (2 ** (i + 1)),
                k, u, padding=(k - u) // 2)))
        self.resblocks = nn.ModuleList()
        for i in range(len(self.ups)):
            ch = h.upsample_initial_channel // (2 ** (i + 1))
            for k, d in zip(h.resblock_kernel_sizes, h.resblock_dilation_sizes):
                self.resblocks.append(ResBlock1(ch, k, d))
        self.conv_post = weight_norm(nn.Conv1d(ch, 1, 7, 1, padding=3))
        self.ups.apply(init_weights)
        self.conv_post.apply(init_weights)
        self.act = get_activation(h.activation)

    @property
    def hop_length(self) -> int:
        return int(np.prod(self.h.upsample_rates))  # expect: FL000 GB0033

    def forward(self, x):
        x = self.conv_pre(x)
        for i in range(self.num_upsamples):
            x = self.ups[i](self.act(x))
            xs = None
            for j in range(self.num_kernels):
                out = self.resblocks[i * self.num_kernels + j](x)
                xs = out if xs is None else xs + out
            x = xs / self.num_kernels
        x = self.conv_post(F.leaky_relu(x))
        return torch.tanh(x)


# --------------------------------------------------------------------------- discriminators
class DiscriminatorP(nn.Module):
    def __init__(self, period: int, kernel_size: int = 5, stride: int = 3, use_spectral_norm: bool = False):
        super().__init__()
        self.period = period
        norm_f = weight_norm if use_spectral_norm == False else spectral_norm  # noqa: E712
        chans = [1, 4, 8]
        self.convs = nn.ModuleList(
            norm_f(nn.Conv2d(cin, cout, (kernel_size, 1), (stride, 1), padding=(get_padding(5, 1), 0)))
            for cin, cout in zip(chans[:-1], chans[1:]))
        self.conv_post = norm_f(nn.Conv2d(chans[-1], 1, (3, 1), 1, padding=(1, 0)))

    def forward(self, x):
        fmap = []
        b, c, t = x.shape
        if t % self.period != 0:  # expect: FL301
            n_pad = self.period - (t % self.period)
            x = F.pad(x, (0, n_pad), "reflect")
            t = t + n_pad
        x = x.view(b, c, t // self.period, self.period)
        for layer in self.convs:
            x = F.leaky_relu(layer(x), LRELU_SLOPE)
            fmap.append(x)
        x = self.conv_post(x)
        fmap.append(x)
        return torch.flatten(x, 1, -1), fmap


class MultiPeriodDiscriminator(nn.Module):
    def __init__(self, periods: Sequence[int] = (2, 3, 5)):
        super().__init__()
        self.discriminators = nn.ModuleList(DiscriminatorP(p) for p in periods)

    def forward(self, y, y_hat):
        y_d_rs, y_d_gs, fmap_rs, fmap_gs = [], [], [], []
        for d in self.discriminators:
            y_d_r, fmap_r = d(y)
            y_d_g, fmap_g = d(y_hat)
            y_d_rs.append(y_d_r)
            fmap_rs.append(fmap_r)
            y_d_gs.append(y_d_g)
            fmap_gs.append(fmap_g)
        return y_d_rs, y_d_gs, fmap_rs, fmap_gs


# --------------------------------------------------------------------------- losses
def feature_loss(fmap_r, fmap_g):
    loss = 0
    for dr, dg in zip(fmap_r, fmap_g):
        for rl, gl in zip(dr, dg):
            loss += torch.mean(torch.abs(rl - gl))
    return loss * 2


@torch.compile
def discriminator_loss(disc_real_outputs, disc_generated_outputs):
    loss = 0
    r_losses, g_losses = [], []
    for dr, dg in zip(disc_real_outputs, disc_generated_outputs):
        r_loss = torch.mean((1 - dr) ** 2)
        g_loss = torch.mean(dg ** 2)
        loss += r_loss + g_loss
        r_losses.append(r_loss.item())  # expect: FL000 GB0124
        g_losses.append(g_loss.item())
    return loss, r_losses, g_losses


@torch.compile
def generator_loss(disc_outputs, fmap_r=None, fmap_g=None, fm_weight: float = 2.0, y=None, y_hat=None):
    loss = 0
    gen_losses = []
    for dg in disc_outputs:
        l = torch.mean((1 - dg) ** 2)
        gen_losses.append(l)
        loss += l
    if fmap_r is not None:
        loss = loss + fm_weight * feature_loss(fmap_r, fmap_g) / 2
    if y is not None:
        loss = loss + mel_loss(y, y_hat)
    return loss, gen_losses


def mel_spectrogram(y, n_fft, num_mels, sampling_rate, hop_size, win_size, fmin, fmax, center=False):
    if torch.min(y) < -1.0:  # expect: FL000 GB0170
        print("min value is ", torch.min(y))
    if torch.max(y) > 1.0:  # expect: FL000 GB0170
        print("max value is ", torch.max(y))
    key = f"{fmax}_{y.device}"
    if key not in mel_basis:
        mel = librosa_mel_fn(sampling_rate, n_fft, num_mels, fmin, fmax)
        mel_basis[key] = torch.from_numpy(mel).float().to(y.device)
        hann_window[str(y.device)] = torch.hann_window(win_size).to(y.device)
    pad = int((n_fft - hop_size) / 2)
    y = F.pad(y.unsqueeze(1), (pad, pad), mode="reflect").squeeze(1)
    spec = torch.stft(y, n_fft, hop_length=hop_size, win_length=win_size, window=hann_window[str(y.device)],
                      center=center, pad_mode="reflect", normalized=False, onesided=True, return_complex=True)
    spec = torch.sqrt(torch.view_as_real(spec).pow(2).sum(-1) + 1e-9)
    spec = torch.matmul(mel_basis[key], spec)
    return dynamic_range_compression(spec)


STFT_PARAMS = dict(n_fft=16, num_mels=8, sampling_rate=8000, hop_size=4, win_size=16, fmin=0.0, fmax=4000.0)


def mel_loss(y, y_hat, weight: float = 45.0, **stft_kwargs):
    to_mel = functools.partial(mel_spectrogram, **{**STFT_PARAMS, **stft_kwargs})
    return F.l1_loss(to_mel(y.squeeze(1)), to_mel(y_hat.squeeze(1))) * weight


class FastSpeech2Loss(nn.Module):
    def __init__(self, warmup_steps: int = 4):
        super().__init__()
        self.warmup_steps = warmup_steps
        self.step = 0
        self.history: List[float] = []

    def masked_mse(self, pred, target, mask):
        keep = ~mask
        return F.mse_loss(pred.masked_select(keep), target.masked_select(keep))  # expect: FL000 GB0036

    def forward(self, preds, targets, src_mask):
        log_d, pitch, energy = preds
        d_target, p_target, e_target = targets
        log_d_target = torch.log(d_target.float() + 1)
        self.step += 1  # expect: FL302
        d_weight = min(1.0, self.step / self.warmup_steps)
        d_loss = self.masked_mse(log_d, log_d_target, src_mask)
        p_loss = self.masked_mse(pitch, p_target, src_mask)
        e_loss = self.masked_mse(energy, e_target, src_mask)
        total = d_weight * d_loss + p_loss + e_loss  # expect: FL302
        if VERBOSE_LOSSES:
            self.history.append(total.item())
        return total, {"duration": d_loss, "pitch": p_loss, "energy": e_loss}


class TextToSpeech(FastSpeech2):
    """FastSpeech2 + HiFi-GAN end to end, with pace control and output hooks (streaming, logging)."""
    def __init__(self, cfg: AcousticConfig, vocoder: Generator, callbacks=None):
        super().__init__(cfg)
        self.vocoder = vocoder
        self.callbacks = list(callbacks or [])

    def forward(self, tokens, src_lens, speakers=None, pace: float = 1.0):
        mel, mel_len, _ = super().forward(tokens, src_lens, speakers, d_control=1.0 / pace)
        wav = self.vocoder(mel).squeeze(1)
        wav_len = mel_len * self.vocoder.hop_length
        for cb in self.callbacks:
            cb(mel, wav)
        wav = (wav * MAX_WAV_VALUE).clamp(-MAX_WAV_VALUE, MAX_WAV_VALUE - 1).to(torch.int16)
        return wav, wav_len


def _peak_meter(mel, wav):
    logger.info("peak %.3f", wav.abs().max())  # expect: FL000 GB0291


# --------------------------------------------------------------------------- cases
def _rand(*shape, seed: int = 0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _ints(b: int, t: int, lo: int = 1, hi: int = 11, seed: int = 1):
    return torch.randint(lo, hi, (b, t), generator=torch.Generator().manual_seed(seed))


def _wav(b: int, t: int, seed: int = 2):
    return torch.tanh(_rand(b, 1, t, seed=seed))


def _tts_case():
    torch.manual_seed(3)
    model = TextToSpeech(AcousticConfig(), Generator(), callbacks=[_peak_meter])
    return model.eval(), (_ints(2, 5), torch.tensor([5, 3]), ["spk1", "spk2"], 1.25)


def _mas_inputs(b, tx, ty, seed=4):
    return -_rand(b, tx, ty, seed=seed).abs(), torch.ones(b, tx, ty, dtype=torch.bool)


CASES = {
    "VariancePredictor": lambda: (VariancePredictor(AcousticConfig()).eval(), (_rand(2, 5, 6),)),
    "DurationPredictor": lambda: (DurationPredictor(AcousticConfig()).eval(),
                                  (_rand(2, 5, 6), torch.zeros(2, 5, dtype=torch.bool), 1.5)),
    "LengthRegulator": lambda: (LengthRegulator(), (_rand(2, 3, 6), torch.tensor([[1, 2, 3], [2, 0, 1]]))),
    "fastpitch_regulate": lambda: (fastpitch_regulate, (_rand(2, 3, 6), _rand(2, 3, seed=5).abs(), 0.8)),
    "VarianceAdaptor": lambda: (VarianceAdaptor(AcousticConfig()).eval(),
                                (_rand(2, 3, 6), None, torch.tensor([[1, 2, 3], [2, 2, 1]]))),
    "FastSpeech2": lambda: (FastSpeech2().eval(), (_ints(2, 5), torch.tensor([5, 3]), torch.tensor([1, 3]))),
    "maximum_path": lambda: (maximum_path, _mas_inputs(2, 3, 5), _mas_inputs(2, 3, 7)),
    "generate_path": lambda: (generate_path, (torch.tensor([[1.0, 2.0, 2.0], [3.0, 1.0, 0.0]]), torch.ones(2, 3, 5))),
    "Generator": lambda: (Generator(h=VocoderConfig(activation="gelu")).eval(), (_rand(2, 8, 5),)),
    "ResBlock1": lambda: (ResBlock1(3, 3, (1, 3)), (_rand(2, 3, 7),)),
    "DiscriminatorP": lambda: (DiscriminatorP(3), (_wav(2, 22),), (_wav(2, 24),)),
    "MultiPeriodDiscriminator": lambda: (MultiPeriodDiscriminator(), (_wav(2, 20), _wav(2, 20, seed=3))),
    "discriminator_loss": lambda: (discriminator_loss, ([_rand(2, 5), _rand(2, 3)], [_rand(2, 5, seed=1), _rand(2, 3, seed=1)])),
    "generator_loss": lambda: (generator_loss, ([_rand(2, 5), _rand(2, 3)], [[_rand(2, 4, 3)]], [[_rand(2, 4, 3, seed=1)]])),
    "generator_loss_mel": lambda: (generator_loss, ([_rand(2, 5)], None, None, 2.0, _wav(2, 40), _wav(2, 40, seed=3))),
    "FastSpeech2Loss": lambda: (FastSpeech2Loss(), ((_rand(2, 5), _rand(2, 5, seed=1), _rand(2, 5, seed=2)),
                                                    (_ints(2, 5, 0, 4, seed=6), _rand(2, 5, seed=3), _rand(2, 5, seed=4)),
                                                    ~sequence_mask(torch.tensor([5, 3]), 5))),
    "TextToSpeech": _tts_case,
}
