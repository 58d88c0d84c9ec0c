"""Normalisation layers as people write them, plus a few that check their inputs too eagerly."""
import warnings

import torch as th
import torch.nn as nn
import torch.nn.functional as F


def rms_norm(x: th.Tensor, weight: th.Tensor, eps: float = 1e-6) -> th.Tensor:
    variance = x.pow(2).mean(-1, keepdim=True)
    return x * th.rsqrt(variance + eps) * weight


rms_norm_compiled = th.compile(rms_norm)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(th.ones(dim))

    def forward(self, x):
        dtype = x.dtype
        x = x.float()
        out = x * th.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return out.to(dtype) * self.weight


class LayerNorm(nn.Module):
    """LayerNorm with an optional bias (as in GPT-2 style code)."""

    def __init__(self, ndim, bias=True):
        super().__init__()
        self.weight = nn.Parameter(th.ones(ndim))
        self.bias = nn.Parameter(th.zeros(ndim)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class ManualLayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.gamma = nn.Parameter(th.ones(dim))
        self.beta = nn.Parameter(th.zeros(dim))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        return self.gamma * (x - mean) / (var + self.eps).sqrt() + self.beta


class CheckedRMSNorm(RMSNorm):
    """Refuses NaN inputs -- a host sync in the middle of every forward."""

    def forward(self, x):
        if th.isnan(x).any():  # expect: FL101 GB0170
            raise ValueError("NaN in RMSNorm input")
        return super().forward(x)


class WarningLayerNorm(LayerNorm):
    def forward(self, x):
        if x.dtype == th.float16:
            x = x.float()
        scale = x.abs().max()
        if scale.item() > 1e4:  # expect: FL102 GB0124
            warnings.warn("large activations")  # expect: FL112 GB0007
        return super().forward(x)


class GroupNorm32(nn.GroupNorm):
    """GroupNorm computed in float32 (diffusion-model style)."""

    def forward(self, x):
        return super().forward(x.float()).type(x.dtype)


class AdaptiveLayerNorm(nn.Module):
    """LayerNorm whose scale/shift come from a conditioning vector (DiT-style adaLN)."""

    def __init__(self, dim, cond_dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim, elementwise_affine=False)
        self.to_scale_shift = nn.Sequential(nn.SiLU(), nn.Linear(cond_dim, 2 * dim))

    def forward(self, x, cond):
        scale, shift = self.to_scale_shift(cond).unsqueeze(1).chunk(2, dim=-1)
        return self.norm(x) * (1 + scale) + shift


class BatchStatsNorm(nn.Module):
    """Tracks a running mean by hand, reporting drift with a host-side float."""

    def __init__(self, dim, momentum=0.1):
        super().__init__()
        self.momentum = momentum
        self.register_buffer("running_mean", th.zeros(dim))

    def forward(self, x):
        if self.training:
            mean = x.mean(0)
            drift = float((mean - self.running_mean).norm())  # expect: FL102 GB0124
            self.running_mean.lerp_(mean.detach(), self.momentum)
            self.last_drift = drift
        return x - self.running_mean


class ScaleNorm(nn.Module):
    def __init__(self, scale: float, eps: float = 1e-5):
        super().__init__()
        self.g = nn.Parameter(th.tensor(scale))
        self.eps = eps

    def forward(self, x):
        norm = th.norm(x, dim=-1, keepdim=True).clamp(min=self.eps)
        return x * (self.g / norm)


@th.compile
def l2_normalize(x, dim: int = -1):
    return F.normalize(x, p=2.0, dim=dim)


@th.compile
def norm_ratio(x):
    ratio = x.norm() / x.numel() ** 0.5
    return x / ratio if ratio > 1 else x  # expect: FL101 GB0170


@th.compile
def standardize(x, eps=1e-5):
    std, mean = th.std_mean(x, dim=0, keepdim=True, unbiased=False)
    return (x - mean) / (std + eps)


CASES = {
    "rms_norm": lambda: (rms_norm_compiled, (th.randn(2, 8), th.randn(8))),
    "RMSNorm": lambda: (RMSNorm(16), (th.randn(2, 4, 16),)),
    "LayerNorm": lambda: (LayerNorm(16), (th.randn(2, 4, 16),)),
    "LayerNorm_nobias": lambda: (LayerNorm(16, bias=False), (th.randn(2, 4, 16),)),
    "ManualLayerNorm": lambda: (ManualLayerNorm(16), (th.randn(3, 16),)),
    "CheckedRMSNorm": lambda: (CheckedRMSNorm(16), (th.randn(2, 16),)),
    "WarningLayerNorm": lambda: (WarningLayerNorm(16), (th.randn(2, 16) * 1e5,)),
    "GroupNorm32": lambda: (GroupNorm32(4, 16), (th.randn(2, 16, 5, 5),)),
    "AdaptiveLayerNorm": lambda: (AdaptiveLayerNorm(16, 8), (th.randn(2, 5, 16), th.randn(2, 8))),
    "BatchStatsNorm": lambda: (BatchStatsNorm(16), (th.randn(8, 16),)),
    "ScaleNorm": lambda: (ScaleNorm(4.0), (th.randn(3, 16),)),
    "l2_normalize": lambda: (l2_normalize, (th.randn(4, 16),)),
    "norm_ratio": lambda: (norm_ratio, (th.randn(4, 16) * 3,)),
    "standardize": lambda: (standardize, (th.randn(16, 4),)),
}
