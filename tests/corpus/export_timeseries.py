"""Forecasting, anomaly and speech models exported with torch.export.export for serving: PatchTST-style
patching with reversible instance norm, DLinear decomposition with quantile heads, Autoformer
auto-correlation, TimesNet period folding, causal/streamable convolutions with their padding math,
windowed spectral features, streaming state buffers and VAD thresholding."""
import logging
import math
import warnings
from typing import Sequence, Tuple

import torch
import torch.nn.functional as F
from torch import nn
from torch.export import Dim

logger = logging.getLogger("export_timeseries")


# ----------------------------------------------------------------------------- normalization

class RevIN(nn.Module):
    """Reversible instance normalization (stateless: the statistics travel with the batch)."""

    def __init__(self, num_features: int, eps: float = 1e-5, affine: bool = True):
        super().__init__()
        self.eps = eps
        self.affine = affine
        self.weight = nn.Parameter(torch.ones(num_features))
        self.bias = nn.Parameter(torch.zeros(num_features))

    def normalize(self, x) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        mean = x.mean(1, keepdim=True).detach()
        std = torch.sqrt(x.var(1, keepdim=True, unbiased=False) + self.eps).detach()
        x = (x - mean) / std
        if self.affine:
            x = x * self.weight + self.bias
        return x, mean, std

    def denormalize(self, x, mean, std):
        if self.affine:
            x = (x - self.bias) / (self.weight + self.eps * self.eps)
        return x * std + mean

    def forward(self, x):
        return self.normalize(x)[0]


def robust_standardize(x, eps: float = 1e-4):
    """Per-window z-score; flat sensors (a stuck channel) are centred but not scaled."""
    std = x.std(1, keepdim=True)
    if (std < eps).any():  # expect: FL000 GB0170; FL201
        warnings.warn("constant channel in window; leaving it unscaled")  # expect: FL000 GB0007; FL204
        std = torch.where(std < eps, torch.ones_like(std), std)
    return (x - x.mean(1, keepdim=True)) / std


# ----------------------------------------------------------------------------- patch models

class PatchTST(nn.Module):
    """Channel-independent patches -> Transformer encoder -> flatten head, wrapped in RevIN."""

    def __init__(self, seq_len: int = 24, pred_len: int = 8, n_vars: int = 3, patch_len: int = 6, stride: int = 4,
                 d_model: int = 16, n_heads: int = 2):
        super().__init__()
        self.patch_len, self.stride = patch_len, stride
        n_patches = (seq_len - patch_len) // stride + 2
        self.revin = RevIN(n_vars)
        self.pad = nn.ReplicationPad1d((0, stride))
        self.embed = nn.Linear(patch_len, d_model)
        self.pos = nn.Parameter(torch.randn(1, n_patches, d_model) * 0.02)
        layer = nn.TransformerEncoderLayer(d_model, n_heads, 2 * d_model, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.head = nn.Linear(n_patches * d_model, pred_len)

    def forward(self, x):
        z, mean, std = self.revin.normalize(x)
        b, _, c = z.shape
        patches = self.pad(z.permute(0, 2, 1)).unfold(-1, self.patch_len, self.stride)
        tokens = self.embed(patches).flatten(0, 1) + self.pos
        h = self.encoder(tokens)  # expect: FL203
        out = self.head(h.reshape(b, c, -1)).permute(0, 2, 1)
        return self.revin.denormalize(out, mean, std)


class PatchMLPForecaster(nn.Module):
    """The linear-probe variant that ships to the edge: same patching, an MLP instead of attention."""

    def __init__(self, seq_len: int = 24, pred_len: int = 8, n_vars: int = 3, patch_len: int = 6, stride: int = 4,
                 d_model: int = 16):
        super().__init__()
        self.patch_len, self.stride = patch_len, stride
        n_patches = (seq_len - patch_len) // stride + 2
        self.revin = RevIN(n_vars)
        self.embed = nn.Linear(patch_len, d_model)
        self.mix = nn.Sequential(nn.Linear(n_patches * d_model, 32), nn.GELU(), nn.Linear(32, pred_len))

    def forward(self, x):
        z, mean, std = self.revin.normalize(x)
        z = z.permute(0, 2, 1)
        z = torch.cat([z, z[..., -1:].expand(-1, -1, self.stride)], dim=-1)
        patches = z.unfold(-1, self.patch_len, self.stride)
        out = self.mix(self.embed(patches).flatten(2)).permute(0, 2, 1)
        return self.revin.denormalize(out, mean, std)


# ----------------------------------------------------------------------------- decomposition + quantiles

class MovingAvg(nn.Module):
    def __init__(self, kernel_size: int):
        super().__init__()
        self.kernel_size = kernel_size
        self.avg = nn.AvgPool1d(kernel_size, stride=1)

    def forward(self, x):
        front = x[:, 0:1, :].repeat(1, (self.kernel_size - 1) // 2, 1)
        end = x[:, -1:, :].repeat(1, (self.kernel_size - 1) // 2, 1)
        x = torch.cat([front, x, end], dim=1)
        return self.avg(x.permute(0, 2, 1)).permute(0, 2, 1)


class SeriesDecomp(nn.Module):
    def __init__(self, kernel_size: int = 5):
        super().__init__()
        self.moving_avg = MovingAvg(kernel_size)

    def forward(self, x):
        trend = self.moving_avg(x)
        return x - trend, trend


class DLinearQuantile(nn.Module):
    """DLinear with a non-crossing quantile head: [B, L, C] -> [B, H, C, Q]."""

    def __init__(self, seq_len: int = 24, pred_len: int = 8, quantiles: Sequence[float] = (0.1, 0.5, 0.9)):
        super().__init__()
        self.decomp = SeriesDecomp(5)
        self.seasonal = nn.Linear(seq_len, pred_len)
        self.trend = nn.Linear(seq_len, pred_len)
        self.register_buffer("quantiles", torch.tensor(quantiles))
        self.spread = nn.Linear(1, len(quantiles))

    def forward(self, x):
        seasonal, trend = self.decomp(x)
        y = self.seasonal(seasonal.permute(0, 2, 1)) + self.trend(trend.permute(0, 2, 1))
        offsets = torch.cumsum(F.softplus(self.spread(y.unsqueeze(-1))), dim=-1)
        q = y.unsqueeze(-1) + offsets - offsets[..., 1:2]
        return q.permute(0, 2, 1, 3)


# ----------------------------------------------------------------------------- Autoformer / TimesNet

class AutoCorrelation(nn.Module):
    """Autoformer auto-correlation with time-delay aggregation (inference path)."""

    def __init__(self, d_model: int = 8, n_heads: int = 2, factor: int = 1):
        super().__init__()
        self.n_heads = n_heads
        self.factor = factor
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, d_model)

    def time_delay_agg(self, values, corr):
        batch, head, channel, length = values.shape
        top_k = int(self.factor * math.log(length))  # expect: FL203
        mean_value = torch.mean(torch.mean(corr, dim=1), dim=1)
        index = torch.topk(torch.mean(mean_value, dim=0), top_k, dim=-1)[1]
        weights = torch.stack([mean_value[:, index[i]] for i in range(top_k)], dim=-1)  # expect: FL000 GB0033
        tmp_corr = torch.softmax(weights, dim=-1)
        delays_agg = torch.zeros_like(values)
        for i in range(top_k):
            pattern = torch.roll(values, -int(index[i]), -1)  # expect: FL000 GB0124; FL202
            delays_agg = delays_agg + pattern * tmp_corr[:, i].view(-1, 1, 1, 1)
        return delays_agg

    def forward(self, x):
        b, l, d = x.shape
        q = self.query(x).view(b, l, self.n_heads, -1)
        k = self.key(x).view(b, l, self.n_heads, -1)
        v = self.value(x).view(b, l, self.n_heads, -1)
        q_fft = torch.fft.rfft(q.permute(0, 2, 3, 1).contiguous(), dim=-1)
        k_fft = torch.fft.rfft(k.permute(0, 2, 3, 1).contiguous(), dim=-1)
        corr = torch.fft.irfft(q_fft * torch.conj(k_fft), n=l, dim=-1)
        v = self.time_delay_agg(v.permute(0, 2, 3, 1).contiguous(), corr).permute(0, 3, 1, 2)
        return self.out(v.reshape(b, l, -1))


def fft_periods(x, k: int = 2):
    """TimesNet: the k strongest frequencies of the batch and their per-sample amplitudes."""
    xf = torch.fft.rfft(x, dim=1)
    amplitude = xf.abs().mean(0).mean(-1)
    amplitude[0] = 0
    _, top = torch.topk(amplitude, k)
    periods = (x.shape[1] // top).tolist()  # expect: FL000 GB0033; FL202
    return periods, xf.abs().mean(-1)[:, top]


class TimesBlock(nn.Module):
    """Folds the series into 2-D (cycles x period) for each dominant period, convolves, re-weights."""

    def __init__(self, d_model: int = 4, k: int = 2):
        super().__init__()
        self.k = k
        self.conv = nn.Sequential(nn.Conv2d(d_model, 8, 3, padding=1), nn.GELU(), nn.Conv2d(8, d_model, 3, padding=1))

    def forward(self, x):
        b, t, n = x.size()
        periods, weights = fft_periods(x, self.k)
        res = []
        for period in periods:
            if t % period != 0:  # expect: FL203
                length = (t // period + 1) * period
                out = torch.cat([x, x.new_zeros(b, length - t, n)], dim=1)
            else:
                length = t
                out = x
            out = out.reshape(b, length // period, period, n).permute(0, 3, 1, 2)
            res.append(self.conv(out).permute(0, 2, 3, 1).reshape(b, -1, n)[:, :t, :])
        res = torch.stack(res, dim=-1)
        w = F.softmax(weights, dim=1).unsqueeze(1).unsqueeze(1)
        return (res * w).sum(-1) + x


class SeasonalEncoder(nn.Module):
    def __init__(self, d_model: int = 8):
        super().__init__()
        self.attn = AutoCorrelation(d_model)
        self.decomp = SeriesDecomp(5)
        self.times = TimesBlock(d_model)

    def forward(self, x):
        x, _ = self.decomp(x + self.attn(x))
        return self.times(x)


# ----------------------------------------------------------------------------- causal / streamable convolutions

class CausalConv1d(nn.Conv1d):
    def __init__(self, cin: int, cout: int, kernel_size: int, dilation: int = 1):
        super().__init__(cin, cout, kernel_size, padding=0, dilation=dilation)
        self.left_pad = (kernel_size - 1) * dilation

    def forward(self, x):
        return super().forward(F.pad(x, (self.left_pad, 0)))


class TemporalBlock(nn.Module):
    def __init__(self, cin: int, cout: int, kernel_size: int, dilation: int):
        super().__init__()
        self.conv1 = CausalConv1d(cin, cout, kernel_size, dilation)
        self.conv2 = CausalConv1d(cout, cout, kernel_size, dilation)
        self.downsample = nn.Conv1d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x):
        h = F.relu(self.conv1(x))
        h = F.relu(self.conv2(h))
        return F.relu(h + self.downsample(x))


class TCNForecaster(nn.Module):
    def __init__(self, n_vars: int = 3, channels: int = 8, pred_len: int = 8, kernel_size: int = 3):
        super().__init__()
        self.blocks = nn.Sequential(*[TemporalBlock(n_vars if i == 0 else channels, channels, kernel_size, 2 ** i)
                                      for i in range(3)])
        self.head = nn.Linear(channels, pred_len * n_vars)
        self.n_vars = n_vars

    def forward(self, x):
        h = self.blocks(x.transpose(1, 2))[..., -1]
        return self.head(h).view(x.shape[0], -1, self.n_vars)


def get_extra_padding_for_conv1d(x, kernel_size: int, stride: int, padding_total: int = 0) -> int:
    """EnCodec: extra right padding so that the last window is complete."""
    length = x.shape[-1]
    n_frames = (length - kernel_size + padding_total) / stride + 1
    ideal_length = (math.ceil(n_frames) - 1) * stride + (kernel_size - padding_total)  # expect: FL203
    return ideal_length - length


def pad1d(x, paddings: Tuple[int, int], mode: str = "constant", value: float = 0.0):
    """F.pad that also reflect-pads inputs shorter than the padding."""
    length = x.shape[-1]
    padding_left, padding_right = paddings
    assert padding_left >= 0 and padding_right >= 0, (padding_left, padding_right)  # expect: FL203
    if mode == "reflect":
        max_pad = max(padding_left, padding_right)  # expect: FL203
        extra_pad = 0
        if length <= max_pad:  # expect: FL203
            extra_pad = max_pad - length + 1
            x = F.pad(x, (0, extra_pad))
        padded = F.pad(x, paddings, mode, value)
        end = padded.shape[-1] - extra_pad
        return padded[..., :end]
    return F.pad(x, paddings, mode, value)


class StreamableConv1d(nn.Module):
    def __init__(self, cin: int, cout: int, kernel_size: int, stride: int = 1, dilation: int = 1,
                 pad_mode: str = "reflect"):
        super().__init__()
        self.conv = nn.Conv1d(cin, cout, kernel_size, stride, dilation=dilation)
        self.pad_mode = pad_mode

    def forward(self, x):
        stride = self.conv.stride[0]
        kernel_size = (self.conv.kernel_size[0] - 1) * self.conv.dilation[0] + 1
        padding_total = kernel_size - stride
        extra_padding = get_extra_padding_for_conv1d(x, kernel_size, stride, padding_total)
        x = pad1d(x, (padding_total, extra_padding), mode=self.pad_mode)
        return self.conv(x)


class SpeechEncoder(nn.Module):
    """SEANet-lite: causal streamable convolutions with stride-2 downsampling."""

    def __init__(self, channels: int = 8):
        super().__init__()
        self.layers = nn.ModuleList([
            StreamableConv1d(1, channels, 7),
            StreamableConv1d(channels, channels, 4, stride=2, pad_mode="constant"),
            StreamableConv1d(channels, channels, 3, dilation=2),
        ])

    def forward(self, wav):
        x = wav.unsqueeze(1)
        for layer in self.layers:
            x = F.elu(layer(x))
        return x


class StreamingTCN(nn.Module):
    """Chunk-by-chunk TCN: each conv's left context is carried in one concatenated state tensor."""

    def __init__(self, channels: int = 8, kernel_size: int = 3, dilations: Sequence[int] = (1, 2)):
        super().__init__()
        self.convs = nn.ModuleList(nn.Conv1d(channels, channels, kernel_size, dilation=d) for d in dilations)
        self.context = [(kernel_size - 1) * d for d in dilations]

    def initial_state(self, batch: int, channels: int = 8):
        return torch.zeros(batch, channels, sum(self.context))

    def forward(self, chunk, state):
        caches = state.split(self.context, dim=-1)
        new_caches = []
        x = chunk
        for conv, cache, ctx in zip(self.convs, caches, self.context):
            buf = torch.cat([cache, x], dim=-1)
            new_caches.append(buf[..., -ctx:])
            x = F.relu(conv(buf))
        return x, torch.cat(new_caches, dim=-1)


# ----------------------------------------------------------------------------- voice activity detection

class FrameVAD(nn.Module):
    """Hann-windowed frames -> log spectrum -> per-frame speech probability."""

    def __init__(self, win: int = 16, hop: int = 8, hidden: int = 8):
        super().__init__()
        self.win, self.hop = win, hop
        self.register_buffer("window", torch.hann_window(win))
        self.proj = nn.Linear(win // 2 + 1, hidden)
        self.conv = nn.Conv1d(hidden, hidden, 3, padding=1)
        self.out = nn.Conv1d(hidden, 1, 1)

    def forward(self, wav):
        frames = wav.unfold(-1, self.win, self.hop) * self.window
        spec = torch.fft.rfft(frames).abs().add(1e-6).log()
        h = F.relu(self.conv(self.proj(spec).transpose(1, 2)))
        return torch.sigmoid(self.out(h)).squeeze(1)


class SpeechSegmenter(nn.Module):
    """Hysteresis thresholding: speech starts at `onset`, ends after `min_silence` frames below `offset`."""

    def __init__(self, onset: float = 0.5, offset: float = 0.35, min_silence: int = 2):
        super().__init__()
        self.onset, self.offset, self.min_silence = onset, offset, min_silence

    def segment(self, probs):
        mask = torch.zeros_like(probs)
        triggered, silence = False, 0
        for t, p in enumerate(probs.tolist()):  # expect: FL000 GB0109; FL202
            if not triggered and p >= self.onset:
                triggered = True
            elif triggered:
                silence = silence + 1 if p < self.offset else 0
                if silence >= self.min_silence:
                    triggered, silence = False, 0
            if triggered:
                mask[t] = 1.0
        return mask

    def forward(self, probs):
        return torch.stack([self.segment(row) for row in probs])  # expect: FL203


class RingBufferSmoother(nn.Module):
    """Streaming smoothing of the latest speech probability over the last `size` frames."""

    def __init__(self, size: int = 4):
        super().__init__()
        self.size = size

    def forward(self, prob, buffer, write_pos):
        pos = int(write_pos) % self.size  # expect: FL000 GB0124; FL202
        buffer = buffer.clone()
        buffer[:, pos] = prob
        return buffer.mean(1), buffer, write_pos + 1


class SpeechPipeline(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = SpeechEncoder()
        self.streaming = StreamingTCN()
        self.vad = FrameVAD()
        self.segmenter = SpeechSegmenter()
        self.smoother = RingBufferSmoother()

    def forward(self, wav, state, buffer, write_pos):
        feats, state = self.streaming(self.encoder(wav), state)
        probs = self.vad(wav)
        mask = self.segmenter(probs)
        smoothed, buffer, write_pos = self.smoother(probs[:, -1], buffer, write_pos)
        return feats, state, mask, smoothed, buffer, write_pos


# ----------------------------------------------------------------------------- anomaly detection / serving

class ReconstructionAnomaly(nn.Module):
    """Window autoencoder; windows above the batch's q-quantile of reconstruction error are flagged."""

    def __init__(self, win: int = 8, n_vars: int = 3, q: float = 0.5, max_alerts: int = 1):
        super().__init__()
        self.q, self.max_alerts = q, max_alerts
        self.enc = nn.Linear(win * n_vars, 4)
        self.dec = nn.Linear(4, win * n_vars)

    def forward(self, x):
        x = robust_standardize(x)
        recon = self.dec(F.relu(self.enc(x.flatten(1)))).view_as(x)
        err = (recon - x).pow(2).mean((1, 2))
        thr = float(torch.quantile(err, self.q))  # expect: FL000 GB0124; FL202
        alerts = err > thr
        if alerts.sum() > self.max_alerts:  # expect: FL000 GB0170; FL201
            logger.info("too many anomalous windows above %.4f", thr)  # expect: FL000 GB0291; FL204
        return err, alerts


class AutoregressiveForecaster(nn.Module):
    """One-step MLP rolled out over a fixed horizon (unrolled in the exported program)."""

    def __init__(self, context: int = 12, horizon: int = 4, hidden: int = 16):
        super().__init__()
        self.context, self.horizon = context, horizon
        self.step = nn.Sequential(nn.Linear(context, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, history):
        window = history[:, -self.context:]
        preds = []
        for _ in range(self.horizon):
            y = self.step(window)
            preds.append(y)
            window = torch.cat([window[:, 1:], y], dim=1)
        return torch.cat(preds, dim=1)


class VariableHorizonForecaster(AutoregressiveForecaster):
    """Serving variant: the request says how many steps to roll out."""

    def forward(self, history, horizon):
        steps = int(horizon)  # expect: FL000 GB0124; FL202
        if steps > self.horizon:
            print(f"horizon {steps} beyond the trained {self.horizon}; accuracy will degrade")  # expect: FL000 GB0059; FL204
        window = history[:, -self.context:]
        preds = []
        for _ in range(steps):
            y = self.step(window)
            preds.append(y)
            window = torch.cat([window[:, 1:], y], dim=1)
        return torch.cat(preds, dim=1)


class ForecastEnsemble(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = PatchMLPForecaster()
        self.dlinear = DLinearQuantile()
        self.tcn = TCNForecaster()
        self.ar = AutoregressiveForecaster()

    def forward(self, x):
        median = self.dlinear(x)[..., 1]
        point = (self.patch(x) + self.tcn(x) + median) / 3
        return point, self.ar(x[..., 0])


# ----------------------------------------------------------------------------- export script

def export_all():
    batch = Dim("batch", min=2, max=64)
    series, wav = torch.randn(4, 24, 3), torch.randn(2, 96)
    tcn = StreamingTCN()
    return {
        "patchtst": torch.export.export(PatchTST().eval(), (series,), dynamic_shapes={"x": {0: batch}}),
        "patch_mlp": torch.export.export(PatchMLPForecaster().eval(), (series,), dynamic_shapes={"x": {0: batch}}),
        "dlinear_q": torch.export.export(DLinearQuantile().eval(), (series,)),
        "autocorr": torch.export.export(AutoCorrelation().eval(), (torch.randn(2, 24, 8),)),
        "timesblock": torch.export.export(TimesBlock().eval(), (torch.randn(2, 20, 4),)),
        "tcn": torch.export.export(TCNForecaster().eval(), (series,)),
        "encoder": torch.export.export(SpeechEncoder().eval(), (wav[:, :6],)),
        "streaming": torch.export.export(StreamingTCN().eval(), (torch.randn(2, 8, 5), tcn.initial_state(2))),
        "vad": torch.export.export(FrameVAD().eval(), (wav,)),
        "segmenter": torch.export.export(SpeechSegmenter(), (torch.rand(2, 12),)),
        "smoother": torch.export.export(RingBufferSmoother(), (torch.rand(2), torch.zeros(2, 4), torch.tensor(0))),
        "anomaly": torch.export.export(ReconstructionAnomaly().eval(), (torch.randn(6, 8, 3),)),
        "ar": torch.export.export(AutoregressiveForecaster().eval(), (torch.randn(2, 24),)),
        "ar_request": torch.export.export(VariableHorizonForecaster().eval(), (torch.randn(2, 24), torch.tensor(6))),
    }


def _series(b: int = 2, t: int = 24, c: int = 3):
    g = torch.Generator().manual_seed(3)
    steps = torch.arange(t, dtype=torch.float32)
    season = torch.sin(2 * math.pi * steps / 6)[None, :, None]
    return season + 0.1 * steps[None, :, None] + 0.3 * torch.randn(b, t, c, generator=g)


def _periodic(b: int = 2, t: int = 20, n: int = 4):
    steps = torch.arange(t, dtype=torch.float32)
    x = 2.0 * torch.sin(2 * math.pi * 2 * steps / t) + 1.0 * torch.sin(2 * math.pi * 3 * steps / t)
    return x[None, :, None].expand(b, t, n) + 0.01 * torch.arange(n, dtype=torch.float32)


def _wav(b: int = 2, s: int = 96):
    g = torch.Generator().manual_seed(4)
    return torch.randn(b, s, generator=g) * torch.linspace(0.1, 1.0, s)


_PROBS = torch.tensor([[0.1, 0.7, 0.8, 0.2, 0.6, 0.3, 0.1, 0.2, 0.9, 0.4, 0.2, 0.1],
                       [0.6, 0.6, 0.3, 0.4, 0.2, 0.2, 0.1, 0.1, 0.1, 0.2, 0.7, 0.8]])


def _windows():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(6, 8, 3, generator=g)
    x[2, :, 1] = 0.5  # a stuck sensor
    x[4] *= 6.0
    return x


CASES = {
    "PatchTST": lambda: (PatchTST().eval(), (_series(),)),
    "ForecastEnsemble": lambda: (ForecastEnsemble().eval(), (_series(),)),
    "SeasonalEncoder": lambda: (SeasonalEncoder().eval(), (torch.randn(2, 20, 8),)),
    "SpeechPipeline": lambda: (SpeechPipeline().eval(), (_wav(), StreamingTCN().initial_state(2), torch.zeros(2, 4), torch.tensor(5))),
    "ReconstructionAnomaly": lambda: (ReconstructionAnomaly().eval(), (_windows(),)),
    "VariableHorizonForecaster": lambda: (VariableHorizonForecaster().eval(), (torch.randn(2, 24), torch.tensor(6))),
}

TRACED = {
    "PatchTST": lambda: (PatchTST().eval(), (_series(),)),
    "PatchMLPForecaster": lambda: (PatchMLPForecaster().eval(), (_series(),)),
    "DLinearQuantile": lambda: (DLinearQuantile().eval(), (_series(),)),
    "AutoCorrelation": lambda: (AutoCorrelation().eval(), (torch.randn(2, 24, 8),)),
    "TimesBlock": lambda: (TimesBlock().eval(), (_periodic(),)),
    "TCNForecaster": lambda: (TCNForecaster().eval(), (_series(),)),
    "SpeechEncoder": lambda: (SpeechEncoder().eval(), (_wav()[:, :6],)),
    "StreamingTCN": lambda: (StreamingTCN().eval(), (torch.randn(2, 8, 5), StreamingTCN().initial_state(2))),
    "FrameVAD": lambda: (FrameVAD().eval(), (_wav(),)),
    "SpeechSegmenter": lambda: (SpeechSegmenter(), (_PROBS,)),
    "RingBufferSmoother": lambda: (RingBufferSmoother(), (torch.rand(2), torch.zeros(2, 4), torch.tensor(5))),
    "ReconstructionAnomaly": lambda: (ReconstructionAnomaly().eval(), (_windows(),)),
    "AutoregressiveForecaster": lambda: (AutoregressiveForecaster().eval(), (torch.randn(2, 24),)),
    "VariableHorizonForecaster": lambda: (VariableHorizonForecaster().eval(), (torch.randn(2, 24), torch.tensor(6))),
}
