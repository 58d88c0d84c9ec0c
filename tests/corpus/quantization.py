"""Quantization helpers: observers, qparams, fake-quant with STE, LSQ, int8/int4 packing, outliers."""
import logging
import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger(__name__)


@dataclass
class QConfig:
    bits: int = 8
    symmetric: bool = True
    per_channel: bool = False
    ch_axis: int = 0
    averaging_constant: float = 0.1
    debug: bool = False

    @property
    def qrange(self) -> tuple[int, int]:
        if self.symmetric:
            return -(2 ** (self.bits - 1)), 2 ** (self.bits - 1) - 1
        return 0, 2 ** self.bits - 1


def calculate_qparams(min_val, max_val, qmin, qmax, symmetric=True, eps=torch.finfo(torch.float32).eps):
    min_neg, max_pos = torch.clamp(min_val, max=0.0), torch.clamp(max_val, min=0.0)
    if symmetric:
        scale = torch.maximum(-min_neg, max_pos) / ((qmax - qmin) / 2)
        zero_point = torch.zeros_like(scale, dtype=torch.int64)
    else:
        scale = (max_pos - min_neg) / float(qmax - qmin)
        zero_point = (qmin - torch.round(min_neg / scale.clamp(min=eps))).clamp(qmin, qmax).to(torch.int64)
    return scale.clamp(min=eps), zero_point


class MinMaxObserver(nn.Module):
    def __init__(self, cfg: QConfig = QConfig()):
        super().__init__()
        self.cfg = cfg
        self.register_buffer("min_val", torch.tensor(float("inf")))
        self.register_buffer("max_val", torch.tensor(float("-inf")))

    def forward(self, x):
        if x.numel() == 0:
            return x
        x_detached = x.detach()
        self.min_val.copy_(torch.minimum(self.min_val, x_detached.min()))
        self.max_val.copy_(torch.maximum(self.max_val, x_detached.max()))
        return x

    def qparams(self):
        return calculate_qparams(self.min_val, self.max_val, *self.cfg.qrange, self.cfg.symmetric)


class MovingAverageObserver(MinMaxObserver):
    def forward(self, x):
        c = self.cfg.averaging_constant
        lo, hi = torch.aminmax(x.detach())
        if torch.isinf(self.min_val):  # expect: FL101 GB0170
            self.min_val.copy_(lo)
            self.max_val.copy_(hi)
        else:
            self.min_val.mul_(1 - c).add_(c * lo)
            self.max_val.mul_(1 - c).add_(c * hi)
        return x


class PerChannelObserver(nn.Module):
    def __init__(self, channels, ch_axis=0):
        super().__init__()
        self.ch_axis = ch_axis
        self.register_buffer("min_val", torch.full((channels,), float("inf")))
        self.register_buffer("max_val", torch.full((channels,), float("-inf")))

    def forward(self, w):
        flat = w.transpose(0, self.ch_axis).flatten(1)
        self.min_val = torch.minimum(self.min_val, flat.amin(1))
        self.max_val = torch.maximum(self.max_val, flat.amax(1))
        return w


class FakeQuantize(nn.Module):
    def __init__(self, cfg: QConfig = QConfig()):
        super().__init__()
        self.cfg = cfg
        self.observer = MinMaxObserver(cfg)
        self.enabled = True

    def forward(self, x):
        if not self.enabled:
            return x
        self.observer(x)
        scale, zp = self.observer.qparams()
        qmin, qmax = self.cfg.qrange
        if self.cfg.debug:
            print(f"fake-quant scale={scale.item():.5f} zp={int(zp)}")  # expect: FL110 GB0059; FL102 GB0124
        q = torch.clamp(torch.round(x / scale) + zp, qmin, qmax)
        x_q = (q - zp) * scale
        return x + (x_q - x).detach()


class LSQQuantizer(nn.Module):  # learned step size quantization (Esser et al.)
    def __init__(self, bits=4, init_scale=0.1):
        super().__init__()
        self.qmin, self.qmax = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        self.scale = nn.Parameter(torch.tensor(init_scale))

    def forward(self, x):
        grad_scale = 1.0 / math.sqrt(x.numel() * self.qmax)
        s = self.scale * grad_scale + (self.scale - self.scale * grad_scale).detach()
        q = torch.clamp(x / s, self.qmin, self.qmax)
        q = q + (q.round() - q).detach()
        return q * s


class QuantLinear(nn.Module):
    def __init__(self, in_features, out_features, cfg: QConfig = QConfig(per_channel=True)):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.weight_fq = FakeQuantize(cfg)
        self.act_fq = FakeQuantize(QConfig(symmetric=False))

    def forward(self, x):
        return F.linear(self.act_fq(x), self.weight_fq(self.linear.weight), self.linear.bias)


@torch.compile
def quantize_per_tensor(x, scale: float, zero_point: int, dtype=torch.int8):
    info = torch.iinfo(dtype)
    return torch.clamp(torch.round(x / scale) + zero_point, info.min, info.max).to(dtype)


@torch.compile
def dequantize(q, scale, zero_point):
    return (q.to(torch.float32) - zero_point) * scale


@torch.compile
def absmax_quantize(x, bits: int = 8):
    qmax = 2 ** (bits - 1) - 1
    scale = x.abs().amax(dim=-1, keepdim=True).clamp(min=1e-8) / qmax
    return torch.round(x / scale).to(torch.int8), scale


@torch.compile
def int8_matmul(a, b):
    qa, sa = absmax_quantize(a)
    qb, sb = absmax_quantize(b.t())
    acc = qa.to(torch.int32) @ qb.to(torch.int32).t()
    return acc.float() * sa * sb.t()


@torch.compile
def fake_quant_builtin(x, bits: int = 8):
    lo, hi = x.min(), x.max()
    scale = (hi - lo) / (2 ** bits - 1)
    zero_point = int(torch.round(-lo / scale).clamp(0, 2 ** bits - 1))  # expect: FL102 GB0124
    return torch.fake_quantize_per_tensor_affine(x, scale.item(), zero_point, 0, 2 ** bits - 1)  # expect: FL102 GB0124


@torch.compile
def pack_int4(q):
    q = (q + 8).to(torch.uint8)
    assert q.shape[-1] % 2 == 0, "last dim must be even to pack int4"
    return (q[..., ::2] << 4) | q[..., 1::2]


@torch.compile
def unpack_int4(packed):
    hi = (packed >> 4).to(torch.int8) - 8
    lo = (packed & 0x0F).to(torch.int8) - 8
    return torch.stack([hi, lo], dim=-1).flatten(-2)


@torch.compile
def outlier_split(x, w, threshold: float = 2.0):
    outlier_cols = (x.abs() > threshold).any(0).nonzero().squeeze(-1)  # expect: FL105 GB0036
    if outlier_cols.numel() == 0:
        return int8_matmul(x, w), None
    regular = x.clone()
    regular[:, outlier_cols] = 0
    fp_part = x[:, outlier_cols] @ w[outlier_cols]
    return int8_matmul(regular, w) + fp_part, outlier_cols


@torch.compile
def smoothquant_scales(act_absmax, weight, alpha: float = 0.5):
    w_absmax = weight.abs().amax(dim=0).clamp(min=1e-5)
    scales = act_absmax.clamp(min=1e-5).pow(alpha) / w_absmax.pow(1 - alpha)
    return scales, weight * scales


@torch.compile
def stochastic_round(x, scale):
    return torch.floor(x / scale + torch.rand_like(x)) * scale


@torch.compile
def quant_error_report(x, bits_options=(2, 4, 8)):
    report = {}
    for bits in bits_options:
        q, scale = absmax_quantize(x, bits)
        report[bits] = (q.float() * scale - x).pow(2).mean()
    best = min(report, key=lambda b: report[b])  # expect: FL144 GB0193
    logger.info("best bit width %d", best)  # expect: FL111 GB0291
    return report


@torch.compile
def histogram_qparams(x, bins: int = 32, percentile: float = 0.99):
    hist = torch.histc(x.abs(), bins=bins, min=0.0, max=float(x.abs().max()))  # expect: FL102 GB0124
    cdf = np.cumsum(hist.numpy()) / hist.sum().item()  # expect: FL102 GB0124
    idx = int(np.searchsorted(cdf, percentile))  # expect: FL104 GB0033
    return (idx + 1) / bins * x.abs().max() / 127


@torch.compile
def clamp_to_dtype(x, dtype: torch.dtype = torch.float16):
    finfo = torch.finfo(dtype)
    return x.clamp(finfo.min, finfo.max).to(dtype)


CASES = {
    "MinMaxObserver": lambda: (MinMaxObserver(), (torch.randn(4, 3),)),
    "MovingAverageObserver": lambda: (MovingAverageObserver(), (torch.randn(4, 3),)),
    "PerChannelObserver": lambda: (PerChannelObserver(3), (torch.randn(3, 5),)),
    "FakeQuantize": lambda: (FakeQuantize(), (torch.randn(4, 3),)),
    "FakeQuantize_debug": lambda: (FakeQuantize(QConfig(debug=True)), (torch.randn(4, 3),)),
    "LSQQuantizer": lambda: (LSQQuantizer(), (torch.randn(4, 3),)),
    "QuantLinear": lambda: (QuantLinear(3, 2), (torch.randn(4, 3),)),
    "quantize_per_tensor": lambda: (quantize_per_tensor, (torch.randn(4, 3), 0.05, 2)),
    "dequantize": lambda: (dequantize, (torch.randint(-128, 127, (4, 3), dtype=torch.int8), torch.tensor(0.05), 0)),
    "absmax_quantize": lambda: (absmax_quantize, (torch.randn(4, 3),)),
    "int8_matmul": lambda: (int8_matmul, (torch.randn(4, 3), torch.randn(3, 5))),
    "fake_quant_builtin": lambda: (fake_quant_builtin, (torch.randn(4, 3),)),
    "pack_int4": lambda: (pack_int4, (torch.randint(-8, 8, (2, 6)),)),
    "unpack_int4": lambda: (unpack_int4, (torch.randint(0, 256, (2, 3), dtype=torch.uint8),)),
    "outlier_split": lambda: (outlier_split, (torch.tensor([[0.5, 3.0, -0.2], [0.1, -0.4, 0.3]]), torch.randn(3, 4))),
    "outlier_split_none": lambda: (outlier_split, (torch.rand(2, 3), torch.randn(3, 4))),
    "smoothquant_scales": lambda: (smoothquant_scales, (torch.rand(3) * 5, torch.randn(4, 3))),
    "stochastic_round": lambda: (stochastic_round, (torch.randn(4, 3), 0.1)),
    "quant_error_report": lambda: (quant_error_report, (torch.randn(4, 3),)),
    "histogram_qparams": lambda: (histogram_qparams, (torch.randn(50),)),
    "clamp_to_dtype": lambda: (clamp_to_dtype, (torch.randn(4, 3) * 1e5,)),
}
