"""Forecasting code: instance normalisation, decomposition, patching, seq2seq with teacher forcing."""
import logging
import math
import random
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("forecast")


@dataclass
class ForecastConfig:
    context_len: int = 12
    horizon: int = 4
    channels: int = 2
    hidden: int = 8
    patch_len: int = 4
    stride: int = 4
    quantiles: Sequence[float] = (0.1, 0.5, 0.9)
    teacher_forcing: float = 0.5


class RevIN(nn.Module):  # reversible instance normalisation: normalise the input, undo it on the forecast
    def __init__(self, channels, eps=1e-5, affine=True):
        super().__init__()
        self.eps, self.affine = eps, affine
        if affine:
            self.weight = nn.Parameter(torch.ones(channels))
            self.bias = nn.Parameter(torch.zeros(channels))

    def forward(self, x, mode: str = "norm"):
        if mode == "norm":
            self.mean = x.mean(1, keepdim=True).detach()
            self.stdev = torch.sqrt(x.var(1, keepdim=True, unbiased=False) + self.eps).detach()
            x = (x - self.mean) / self.stdev
            return x * self.weight + self.bias if self.affine else x
        elif mode == "denorm":
            if self.affine:
                x = (x - self.bias) / (self.weight + self.eps * self.eps)
            return x * self.stdev + self.mean
        raise NotImplementedError(mode)


class MovingAverage(nn.Module):
    def __init__(self, kernel_size=5):
        super().__init__()
        self.kernel_size = kernel_size

    def forward(self, x):
        pad = (self.kernel_size - 1) // 2
        front = x[:, :1].repeat(1, pad, 1)
        end = x[:, -1:].repeat(1, self.kernel_size - 1 - pad, 1)
        x = torch.cat([front, x, end], dim=1)
        return F.avg_pool1d(x.transpose(1, 2), self.kernel_size, stride=1).transpose(1, 2)


class SeriesDecomposition(nn.Module):
    def __init__(self, kernel_size=5):
        super().__init__()
        self.trend = MovingAverage(kernel_size)

    def forward(self, x):
        trend = self.trend(x)
        return x - trend, trend


class DLinear(nn.Module):
    def __init__(self, cfg: ForecastConfig = ForecastConfig()):
        super().__init__()
        self.decomp = SeriesDecomposition(5)
        self.seasonal = nn.Linear(cfg.context_len, cfg.horizon)
        self.trend = nn.Linear(cfg.context_len, cfg.horizon)

    def forward(self, x):
        seasonal, trend = self.decomp(x)
        out = self.seasonal(seasonal.transpose(1, 2)) + self.trend(trend.transpose(1, 2))
        return out.transpose(1, 2)


class PatchEmbedding(nn.Module):
    def __init__(self, cfg: ForecastConfig = ForecastConfig()):
        super().__init__()
        self.cfg = cfg
        self.proj = nn.Linear(cfg.patch_len, cfg.hidden)
        n_patches = (cfg.context_len - cfg.patch_len) // cfg.stride + 1
        self.pos = nn.Parameter(torch.randn(1, n_patches, cfg.hidden) * 0.02)

    def forward(self, x):
        b, t, c = x.shape
        assert t == self.cfg.context_len, f"expected {self.cfg.context_len} steps, got {t}"
        patches = x.transpose(1, 2).unfold(-1, self.cfg.patch_len, self.cfg.stride)
        h = self.proj(patches).reshape(b * c, -1, self.cfg.hidden)
        return h + self.pos


class Seq2SeqForecaster(nn.Module):
    def __init__(self, cfg: ForecastConfig = ForecastConfig()):
        super().__init__()
        self.cfg = cfg
        self.encoder = nn.GRU(cfg.channels, cfg.hidden, batch_first=True)
        self.decoder = nn.GRUCell(cfg.channels, cfg.hidden)
        self.out = nn.Linear(cfg.hidden, cfg.channels)

    def forward(self, context, target: Optional[torch.Tensor] = None):
        _, h = self.encoder(context)  # expect: FL123 GB0014
        h = h[0]
        step_in = context[:, -1]
        outputs = []
        for t in range(self.cfg.horizon):
            h = self.decoder(step_in, h)
            pred = self.out(h)
            outputs.append(pred)
            use_teacher = target is not None and random.random() < self.cfg.teacher_forcing
            step_in = target[:, t] if use_teacher else pred
        return torch.stack(outputs, dim=1)


class QuantileHead(nn.Module):
    def __init__(self, cfg: ForecastConfig = ForecastConfig()):
        super().__init__()
        self.quantiles = list(cfg.quantiles)
        self.proj = nn.Linear(cfg.hidden, cfg.horizon * len(self.quantiles))
        self.horizon = cfg.horizon

    def forward(self, h):
        out = self.proj(h).view(h.size(0), self.horizon, len(self.quantiles))
        return torch.sort(out, dim=-1).values


@torch.compile
def sliding_windows(series, window: int = 6, step: int = 2):
    return series.unfold(0, window, step)


@torch.compile
def quantile_loss(pred, target, quantiles=(0.1, 0.5, 0.9)):
    q = torch.tensor(quantiles, device=pred.device)
    err = target.unsqueeze(-1) - pred
    return torch.maximum(q * err, (q - 1) * err).mean()


@torch.compile
def mase(pred, target, history, season: int = 1):
    naive = (history[:, season:] - history[:, :-season]).abs().mean(1)
    return ((pred - target).abs().mean(1) / naive.clamp(min=1e-8)).mean()


@torch.compile
def smape(pred, target):
    denom = pred.abs() + target.abs()
    return 200.0 * torch.where(denom == 0, torch.zeros_like(denom), (pred - target).abs() / denom).mean()


@torch.compile
def difference(x, order: int = 1):
    for _ in range(order):
        x = x[:, 1:] - x[:, :-1]
    return x


@torch.compile
def undifference(last_value, diffs):
    return last_value.unsqueeze(1) + diffs.cumsum(1)


@torch.compile
def impute_missing(x):
    if torch.isnan(x).any():  # expect: FL101 GB0170
        mask = torch.isnan(x)
        filled = torch.where(mask, torch.nanmean(x, dim=1, keepdim=True).expand_as(x), x)
        logger.debug(f"imputed {int(mask.sum())} values")  # expect: FL102 GB0124; FL111 GB0291
        return filled
    return x


@torch.compile
def lag_features(x, lags=(1, 2, 4)):
    feats = [x]
    for lag in lags:
        feats.append(F.pad(x[:, :-lag], (0, 0, lag, 0)))
    return torch.cat(feats, dim=-1)


@torch.compile
def time_features(timestamps):
    hours = (timestamps // 3600) % 24
    days = (timestamps // 86400) % 7
    return torch.stack([torch.sin(2 * math.pi * hours / 24), torch.cos(2 * math.pi * hours / 24),
                        torch.sin(2 * math.pi * days / 7), torch.cos(2 * math.pi * days / 7)], dim=-1)


@torch.compile
def autoregressive_rollout(model, context, steps: int = 3):
    window, preds = context, []
    for _ in range(steps):
        nxt = model(window)[:, -1:]
        preds.append(nxt)
        window = torch.cat([window[:, 1:], nxt], dim=1)
    return torch.cat(preds, dim=1)


@torch.compile
def early_stop_check(val_losses, patience: int = 3, min_delta: float = 1e-3):
    history = np.asarray(val_losses.detach().cpu())
    best = int(np.argmin(history))  # expect: FL104 GB0033
    return len(history) - 1 - best >= patience or history[-1] > history[best] + min_delta * 100


@torch.compile
def scale_by_history(x, scaler: dict):
    if "mean" not in scaler:  # expect: FL302
        scaler["mean"] = x.mean(dim=(0, 1))
        scaler["std"] = x.std(dim=(0, 1)).clamp(min=1e-6)
    return (x - scaler["mean"]) / scaler["std"]


def _revin_roundtrip():
    m = RevIN(2)
    m(torch.randn(3, 12, 2))
    return m


CASES = {
    "RevIN": lambda: (RevIN(2), (torch.randn(3, 12, 2),)),
    "RevIN_denorm": lambda: (_revin_roundtrip(), (torch.randn(3, 4, 2), "denorm")),
    "MovingAverage": lambda: (MovingAverage(), (torch.randn(2, 12, 2),)),
    "SeriesDecomposition": lambda: (SeriesDecomposition(), (torch.randn(2, 12, 2),)),
    "DLinear": lambda: (DLinear(), (torch.randn(2, 12, 2),)),
    "PatchEmbedding": lambda: (PatchEmbedding(), (torch.randn(2, 12, 2),)),
    "Seq2SeqForecaster": lambda: (Seq2SeqForecaster(), (torch.randn(2, 12, 2), torch.randn(2, 4, 2))),
    "Seq2SeqForecaster_infer": lambda: (Seq2SeqForecaster(), (torch.randn(2, 12, 2),)),
    "QuantileHead": lambda: (QuantileHead(), (torch.randn(3, 8),)),
    "sliding_windows": lambda: (sliding_windows, (torch.randn(20),)),
    "quantile_loss": lambda: (quantile_loss, (torch.randn(2, 4, 3), torch.randn(2, 4))),
    "mase": lambda: (mase, (torch.randn(2, 4), torch.randn(2, 4), torch.randn(2, 12))),
    "smape": lambda: (smape, (torch.randn(2, 4), torch.randn(2, 4))),
    "difference": lambda: (difference, (torch.randn(2, 10), 2)),
    "undifference": lambda: (undifference, (torch.randn(2), torch.randn(2, 4))),
    "impute_missing": lambda: (impute_missing, (torch.tensor([[1.0, float("nan"), 3.0], [4.0, 5.0, 6.0]]),)),
    "lag_features": lambda: (lag_features, (torch.randn(2, 8, 1),)),
    "time_features": lambda: (time_features, (torch.tensor([0, 3600 * 5, 86400 * 3 + 7200]),)),
    "autoregressive_rollout": lambda: (autoregressive_rollout, (nn.Identity(), torch.randn(2, 5, 2))),
    "early_stop_check": lambda: (early_stop_check, (torch.tensor([0.9, 0.7, 0.72, 0.71, 0.73, 0.74]),)),
    "scale_by_history": lambda: (scale_by_history, (torch.randn(2, 5, 3), {})),
}
