"""Quantization-aware training in the style of torch.ao.quantization / brevitas: min-max and
moving-average observers updating buffers and Python attributes, fake-quantize modules with
enable/disable flags, scale / zero-point computation (tensor math, `.item()` or Python math),
per-channel vs per-tensor branches, bit-width configs, straight-through estimators written as
autograd.Functions, and calibration counters."""
import logging
import math
import warnings
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("qat")
logger.addHandler(logging.NullHandler())

EPS = torch.finfo(torch.float32).eps
GROUP_SIZE = 4
MAX_OBSERVED_SAMPLES = 64
CLIP_CANDIDATES = (1.0, 0.9, 0.8, 0.7)


@dataclass(frozen=True)
class BitConfig:
    bits: int = 8
    signed: bool = True
    symmetric: bool = True
    per_channel: bool = False
    ch_axis: int = 0

    @property
    def quant_min(self) -> int:
        return -(2 ** (self.bits - 1)) if self.signed else 0

    @property
    def quant_max(self) -> int:
        return 2 ** (self.bits - 1) - 1 if self.signed else 2 ** self.bits - 1

    def with_bits(self, bits: int) -> "BitConfig":
        return replace(self, bits=bits)


QCONFIGS: Dict[str, BitConfig] = {
    "w8": BitConfig(8, per_channel=True),
    "a8": BitConfig(8, signed=False, symmetric=False),
    "w4": BitConfig(4, per_channel=True),
    "a4": BitConfig(4, signed=False, symmetric=False),
}


def get_qconfig(name: str, default: str = "a8") -> BitConfig:
    try:
        return QCONFIGS[name]
    except KeyError:
        return QCONFIGS[default]


# --------------------------------------------------------------------------- qparam math

def _symmetric_qparams(min_val, max_val, cfg: BitConfig):
    amax = torch.maximum(-min_val, max_val)
    scale = amax / ((cfg.quant_max - cfg.quant_min) / 2)
    return scale.clamp_min(EPS), torch.zeros_like(scale, dtype=torch.int64)


def _affine_qparams(min_val, max_val, cfg: BitConfig):
    scale = ((max_val - min_val) / float(cfg.quant_max - cfg.quant_min)).clamp_min(EPS)
    zero_point = (cfg.quant_min - torch.round(min_val / scale)).clamp(cfg.quant_min, cfg.quant_max)
    return scale, zero_point.to(torch.int64)


def calculate_qparams(min_val, max_val, cfg: BitConfig):
    min_neg = torch.clamp(min_val, max=0.0)
    max_pos = torch.clamp(max_val, min=0.0)
    compute = _symmetric_qparams if cfg.symmetric else _affine_qparams
    return compute(min_neg, max_pos, cfg)


def python_qparams(min_val: float, max_val: float, cfg: BitConfig) -> Tuple[float, int]:
    """The host-side version many QAT repos use for export: plain floats and ints."""
    min_val, max_val = min(min_val, 0.0), max(max_val, 0.0)
    if cfg.symmetric:
        return max(max(-min_val, max_val) / ((cfg.quant_max - cfg.quant_min) / 2), 1e-8), 0
    scale = max((max_val - min_val) / (cfg.quant_max - cfg.quant_min), 1e-8)
    return scale, int(min(max(cfg.quant_min - round(min_val / scale), cfg.quant_min), cfg.quant_max))


# --------------------------------------------------------------------------- straight-through estimators

class RoundSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, grad):
        return grad


class FakeQuantSTE(torch.autograd.Function):
    """Quantise-dequantise with a clipped straight-through gradient."""

    @staticmethod
    def forward(ctx, x, scale, zero_point, qmin: int, qmax: int):
        q = torch.clamp(torch.round(x / scale) + zero_point, qmin, qmax)
        ctx.save_for_backward(x, scale, zero_point)
        ctx.bounds = (qmin, qmax)
        return (q - zero_point) * scale

    @staticmethod
    def backward(ctx, grad):
        x, scale, zero_point = ctx.saved_tensors
        qmin, qmax = ctx.bounds
        q = torch.round(x / scale) + zero_point
        inside = (q >= qmin) & (q <= qmax)
        return grad * inside, None, None, None, None


class LSQFunction(torch.autograd.Function):
    """Learned step size: the gradient of the step size uses a Python-computed grad scale."""

    @staticmethod
    def forward(ctx, x, step, qmax: int):
        if step.item() <= 0:  # expect: FL000 GB0124
            raise ValueError("LSQ step size must be positive")
        ctx.save_for_backward(x, step)
        ctx.qmax = qmax
        return torch.clamp(torch.round(x / step), -qmax - 1, qmax) * step

    @staticmethod
    def backward(ctx, grad):
        x, step = ctx.saved_tensors
        v = x / step
        g = 1.0 / math.sqrt(x.numel() * ctx.qmax)
        inside = (v >= -ctx.qmax - 1) & (v <= ctx.qmax)
        grad_step = (torch.where(inside, torch.round(v) - v, v.clamp(-ctx.qmax - 1, ctx.qmax)) * grad).sum() * g
        return grad * inside, grad_step.view_as(step), None


# --------------------------------------------------------------------------- observers

class ObserverMixin:
    """Shared qparam logic; concrete observers are nn.Modules with min_val/max_val buffers."""

    cfg: BitConfig

    def calculate_qparams(self):
        return calculate_qparams(self.min_val, self.max_val, self.cfg)

    def extra_repr(self) -> str:
        return f"bits={self.cfg.bits}, per_channel={self.cfg.per_channel}"


class MinMaxObserver(ObserverMixin, nn.Module):
    def __init__(self, cfg: BitConfig = QCONFIGS["a8"]):
        super().__init__()
        self.cfg = cfg
        self.register_buffer("min_val", torch.tensor(float("inf")))
        self.register_buffer("max_val", torch.tensor(float("-inf")))

    def forward(self, x):
        x_ = x.detach()
        self.min_val.copy_(torch.minimum(self.min_val, x_.min()))
        self.max_val.copy_(torch.maximum(self.max_val, x_.max()))
        return x


class MovingAverageMinMaxObserver(MinMaxObserver):
    """torch.ao-style: the first batch initialises the range, later ones move it."""

    def __init__(self, averaging_constant: float = 0.01, **kw):
        super().__init__(**kw)
        self.averaging_constant = averaging_constant

    def forward(self, x):
        x_ = x.detach()
        min_now, max_now = torch.aminmax(x_)
        if self.min_val == float("inf") and self.max_val == float("-inf"):  # expect: FL000 GB0170
            min_val, max_val = min_now, max_now
        else:
            c = self.averaging_constant
            min_val = self.min_val + c * (min_now - self.min_val)
            max_val = self.max_val + c * (max_now - self.max_val)
        self.min_val.copy_(min_val)
        self.max_val.copy_(max_val)
        return x


class PerChannelMinMaxObserver(ObserverMixin, nn.Module):
    """Buffers start empty and are resized on the first batch (as torch.ao's do)."""

    def __init__(self, cfg: BitConfig = QCONFIGS["w8"]):
        super().__init__()
        self.cfg = cfg
        self.register_buffer("min_val", torch.tensor([]))
        self.register_buffer("max_val", torch.tensor([]))

    def forward(self, w):
        axis = self.cfg.ch_axis
        y = w.detach().transpose(0, axis).flatten(1) if axis != 0 else w.detach().flatten(1)
        min_now, max_now = torch.aminmax(y, dim=1)
        if self.min_val.numel() == 0:
            self.min_val.resize_(min_now.shape)  # expect: FL000 GB0148
            self.max_val.resize_(max_now.shape)  # expect: FL000 GB0148
            self.min_val.copy_(min_now)
            self.max_val.copy_(max_now)
        else:
            self.min_val.copy_(torch.minimum(self.min_val, min_now))
            self.max_val.copy_(torch.maximum(self.max_val, max_now))
        return w


class SubsamplingPercentileObserver(ObserverMixin, nn.Module):
    """Keeps percentile ranges; large activations are subsampled before the quantile."""

    def __init__(self, cfg: BitConfig = QCONFIGS["a8"], percentile: float = 0.99,
                 max_samples: int = MAX_OBSERVED_SAMPLES):
        super().__init__()
        self.cfg, self.percentile, self.max_samples = cfg, percentile, max_samples
        self.register_buffer("min_val", torch.tensor(0.0))
        self.register_buffer("max_val", torch.tensor(0.0))

    def forward(self, x):
        flat = x.detach().flatten()
        if flat.numel() > self.max_samples:  # expect: FL301
            flat = flat[:: flat.numel() // self.max_samples]
        lo, hi = torch.quantile(flat, torch.tensor([1 - self.percentile, self.percentile]))
        self.min_val.copy_(torch.minimum(self.min_val, lo))
        self.max_val.copy_(torch.maximum(self.max_val, hi))
        return x


class HistogramObserver(ObserverMixin, nn.Module):
    """Histogram of |x|; the clipping range is the bin where the CDF crosses a threshold."""

    def __init__(self, bins: int = 16, coverage: float = 0.95):
        super().__init__()
        self.cfg = QCONFIGS["a8"]
        self.bins, self.coverage = bins, coverage
        self.register_buffer("histogram", torch.zeros(bins))
        self.register_buffer("max_val", torch.tensor(0.0))
        self.register_buffer("min_val", torch.tensor(0.0))

    def _threshold_bin(self) -> int:
        cdf = self.histogram.cumsum(0) / self.histogram.sum()
        for i in range(self.bins):
            if cdf[i].item() >= self.coverage:  # expect: FL000 GB0124
                return i
        return self.bins - 1

    def forward(self, x):
        amax = x.detach().abs().max()
        self.max_val.copy_(torch.maximum(self.max_val, amax))
        self.histogram += torch.histc(x.detach().abs(), self.bins, min=0.0, max=float(self.max_val))  # expect: FL000 GB0124
        edge = (self._threshold_bin() + 1) / self.bins
        return x.clamp(-edge * self.max_val, edge * self.max_val)


# --------------------------------------------------------------------------- fake quantize modules

class FakeQuantize(nn.Module):
    """torch.ao-style: enable flags are uint8 buffers so that they survive state_dict round trips."""

    def __init__(self, observer: Optional[nn.Module] = None, cfg: BitConfig = QCONFIGS["a8"]):
        super().__init__()
        self.cfg = cfg
        self.activation_post_process = observer if observer is not None else MinMaxObserver(cfg)
        self.register_buffer("fake_quant_enabled", torch.tensor([1], dtype=torch.uint8))
        self.register_buffer("observer_enabled", torch.tensor([1], dtype=torch.uint8))

    def forward(self, x):
        if self.observer_enabled[0] == 1:  # expect: FL000 GB0170
            self.activation_post_process(x)
        if self.fake_quant_enabled[0] == 1:  # expect: FL000 GB0170
            scale, zero_point = self.activation_post_process.calculate_qparams()
            x = torch.fake_quantize_per_tensor_affine(x, scale, zero_point.to(torch.int32),
                                                      self.cfg.quant_min, self.cfg.quant_max)
        return x


class PyFlagFakeQuantize(nn.Module):
    """Python bool flags, qparams turned into Python numbers for the fake-quant op."""

    def __init__(self, cfg: BitConfig = QCONFIGS["a8"]):
        super().__init__()
        self.cfg = cfg
        self.observer = MinMaxObserver(cfg)
        self.observe = True
        self.quantize = True

    def enable_observer(self, enabled: bool = True) -> "PyFlagFakeQuantize":
        self.observe = enabled
        return self

    def forward(self, x):
        if self.observe:
            self.observer(x)
        if not self.quantize:
            return x
        scale, zero_point = self.observer.calculate_qparams()
        return torch.fake_quantize_per_tensor_affine(x, float(scale), int(zero_point), self.cfg.quant_min,  # expect: FL000 GB0124
                                                     self.cfg.quant_max)


class STEFakeQuantize(nn.Module):
    """Fake quantisation through the custom autograd.Function (no observer update when frozen)."""

    def __init__(self, cfg: BitConfig = QCONFIGS["a8"], frozen: bool = False):
        super().__init__()
        self.cfg = cfg
        self.observer = MovingAverageMinMaxObserver(cfg=cfg) if not frozen else None

    def forward(self, x):
        if self.observer is None:
            scale, zero_point = x.new_tensor(0.05), x.new_tensor(0)
        else:
            self.observer(x)
            scale, zero_point = self.observer.calculate_qparams()
        return FakeQuantSTE.apply(x, scale, zero_point, self.cfg.quant_min, self.cfg.quant_max)


class LSQQuantizer(nn.Module):
    def __init__(self, bits: int = 4, init_step: float = 0.1):
        super().__init__()
        self.qmax = 2 ** (bits - 1) - 1
        self.step = nn.Parameter(torch.tensor([init_step]))

    def forward(self, x):
        return LSQFunction.apply(x, self.step, self.qmax)


class CalibratingFakeQuantize(PyFlagFakeQuantize):
    """Observes for a fixed number of batches, then freezes the observer (a calibration counter)."""

    def __init__(self, calib_batches: int = 4, **kw):
        super().__init__(**kw)
        self.calib_batches = calib_batches
        self.batches_seen = 0

    def forward(self, x):
        if self.batches_seen < self.calib_batches:
            self.observer(x)
            self.batches_seen += 1  # expect: FL302
        scale, zero_point = self.observer.calculate_qparams()
        return torch.fake_quantize_per_tensor_affine(x, scale, zero_point.to(torch.int32), self.cfg.quant_min,
                                                     self.cfg.quant_max)


class QATLinear(nn.Linear):
    """Linear layer with per-channel weight fake-quant (STE rounding) and an activation fake-quant."""

    def __init__(self, in_features: int, out_features: int, w_cfg: BitConfig = QCONFIGS["w8"],
                 a_cfg: BitConfig = QCONFIGS["a8"]):
        super().__init__(in_features, out_features)
        self.w_cfg = w_cfg
        self.act_fq = FakeQuantize(cfg=a_cfg)

    def quantized_weight(self):
        w = self.weight
        if self.w_cfg.per_channel:
            amax = w.detach().abs().amax(dim=1, keepdim=True)
        else:
            amax = w.detach().abs().max()
        scale = amax.clamp_min(EPS) / self.w_cfg.quant_max
        q = RoundSTE.apply(w / scale).clamp(self.w_cfg.quant_min, self.w_cfg.quant_max)
        return q * scale

    def forward(self, x):
        return F.linear(self.act_fq(x), self.quantized_weight(), self.bias)


class QATConvBn2d(nn.Module):
    """Conv + BN with the BN statistics folded into the fake-quantised conv weight."""

    def __init__(self, cin: int = 3, cout: int = 4, w_cfg: BitConfig = QCONFIGS["w8"]):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.weight_observer = PerChannelMinMaxObserver(w_cfg)
        self.w_cfg = w_cfg

    def forward(self, x):
        running_std = torch.sqrt(self.bn.running_var + self.bn.eps)
        scale_factor = self.bn.weight / running_std
        w = self.conv.weight * scale_factor.reshape(-1, 1, 1, 1)
        self.weight_observer(w)
        scale, zp = self.weight_observer.calculate_qparams()
        w_q = torch.fake_quantize_per_channel_affine(w, scale, zp.to(torch.int32), 0, self.w_cfg.quant_min,
                                                     self.w_cfg.quant_max)
        y = F.conv2d(x, w_q, padding=1) / scale_factor.reshape(1, -1, 1, 1)
        return self.bn(y)


class MixedPrecisionBlock(nn.Module):
    """Bit width per layer picked from a schedule list of lambdas keyed by the epoch."""

    BIT_SCHEDULE = [lambda epoch: 8, lambda epoch: 8 if epoch < 2 else 4]

    def __init__(self, dim: int = 6, epoch: int = 3):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(dim, dim) for _ in self.BIT_SCHEDULE)
        self.epoch = epoch

    def forward(self, x):
        for layer, bits_for in zip(self.layers, self.BIT_SCHEDULE):
            cfg = QCONFIGS["w8"].with_bits(bits_for(self.epoch))
            w = layer.weight
            scale = w.detach().abs().amax(1, keepdim=True) / cfg.quant_max
            w_q = (RoundSTE.apply(w / scale).clamp(cfg.quant_min, cfg.quant_max)) * scale
            x = F.relu(F.linear(x, w_q, layer.bias))
        return x


# --------------------------------------------------------------------------- compiled functions

@torch.compile
def qparams_from_tensor(x, qconfig_name: str = "a8"):
    cfg = get_qconfig(qconfig_name)
    return calculate_qparams(x.min(), x.max(), cfg)


@torch.compile
def qparams_host_side(x, qconfig_name: str = "a4"):
    cfg = get_qconfig(qconfig_name)
    scale, zero_point = python_qparams(x.min().item(), x.max().item(), cfg)  # expect: FL000 GB0124
    q = torch.clamp(torch.round(x / scale) + zero_point, cfg.quant_min, cfg.quant_max)
    return (q - zero_point) * scale


def _quantize_weight(w, cfg: BitConfig):
    if cfg.per_channel:
        min_val, max_val = torch.aminmax(w.flatten(1), dim=1)
        scale, zp = calculate_qparams(min_val, max_val, cfg)
        return torch.fake_quantize_per_channel_affine(w, scale, zp.to(torch.int32), cfg.ch_axis,
                                                      cfg.quant_min, cfg.quant_max)
    scale, zp = calculate_qparams(w.min(), w.max(), cfg)
    return torch.fake_quantize_per_tensor_affine(w, scale, zp.to(torch.int32), cfg.quant_min, cfg.quant_max)


def _fake_quant_weights(ws: List[torch.Tensor], cfg: BitConfig):
    return [_quantize_weight(w, cfg) for w in ws]


fake_quant_weight_list = torch.compile(_fake_quant_weights)


@torch.compile(dynamic=True)
def groupwise_quantize(w, bits: int = 4, group_size: int = GROUP_SIZE):
    out_features, in_features = w.shape
    if in_features % group_size != 0:  # expect: FL301
        w = F.pad(w, (0, group_size - in_features % group_size))
    groups = w.reshape(out_features, -1, group_size)
    qmax = 2 ** (bits - 1) - 1
    scale = groups.abs().amax(-1, keepdim=True).clamp_min(EPS) / qmax
    q = torch.clamp(torch.round(groups / scale), -qmax - 1, qmax)
    return (q * scale).reshape(out_features, -1)[:, :in_features]


@torch.compile
def search_clip_ratio(x, bits: int = 4):
    qmax = 2 ** (bits - 1) - 1
    amax = x.abs().max()
    best_ratio, best_err = 1.0, float("inf")
    i = 0
    while i < len(CLIP_CANDIDATES):
        ratio = CLIP_CANDIDATES[i]
        scale = amax * ratio / qmax
        err = (torch.clamp(torch.round(x / scale), -qmax - 1, qmax) * scale - x).pow(2).mean()
        if err < best_err:  # expect: FL000 GB0170
            best_ratio, best_err = ratio, err
        i += 1
    return best_ratio, best_err


@torch.compile
def quant_error_report(modules: Dict[str, nn.Module], x):
    logger.info("measuring quantization error of %d modules", len(modules))  # expect: FL000 GB0291
    report = {}
    for name, fq in modules.items():
        y = fq(x)
        report[name] = {"mse": F.mse_loss(y, x).item(), "bits": fq.cfg.bits}  # expect: FL000 GB0124
    return report


@torch.compile
def check_saturation(x, scale, zero_point, cfg: BitConfig = QCONFIGS["a8"], tol: float = 0.05):
    q = torch.round(x / scale) + zero_point
    saturated = ((q < cfg.quant_min) | (q > cfg.quant_max)).float().mean()
    if saturated > tol:  # expect: FL000 GB0170
        warnings.warn("more than 5% of the values saturate: recalibrate the observer")  # expect: FL000 GB0007
    return q.clamp(cfg.quant_min, cfg.quant_max)


# --------------------------------------------------------------------------- cases

def _acts(*shape, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g)


def _calibrated(module: nn.Module, *batches: torch.Tensor) -> nn.Module:
    for b in batches:
        module(b)
    return module


CASES = {
    "MinMaxObserver": lambda: (MinMaxObserver(), (_acts(3, 5),)),
    "MovingAverageMinMaxObserver": lambda: (MovingAverageMinMaxObserver(), (_acts(3, 5),)),
    "PerChannelMinMaxObserver": lambda: (PerChannelMinMaxObserver(), (_acts(4, 6),)),
    "SubsamplingPercentileObserver": lambda: (SubsamplingPercentileObserver(), (_acts(3, 7),), (_acts(9, 11),)),
    "HistogramObserver": lambda: (HistogramObserver(), (_acts(3, 5),)),
    "FakeQuantize": lambda: (FakeQuantize(), (_acts(3, 5),)),
    "PyFlagFakeQuantize": lambda: (PyFlagFakeQuantize(), (_acts(3, 5),)),
    "STEFakeQuantize": lambda: (STEFakeQuantize(), (_acts(3, 5),)),
    "STEFakeQuantize_frozen": lambda: (STEFakeQuantize(frozen=True), (_acts(3, 5),)),
    "LSQQuantizer": lambda: (LSQQuantizer(), (_acts(3, 5),)),
    "CalibratingFakeQuantize": lambda: (CalibratingFakeQuantize(), (_acts(3, 5),)),
    "QATLinear": lambda: (QATLinear(5, 4), (_acts(3, 5),)),
    "QATConvBn2d": lambda: (QATConvBn2d(), (_acts(2, 3, 5, 6),)),
    "MixedPrecisionBlock": lambda: (MixedPrecisionBlock(), (_acts(3, 6),)),
    "qparams_from_tensor": lambda: (qparams_from_tensor, (_acts(3, 5), "int8")),
    "qparams_host_side": lambda: (qparams_host_side, (_acts(3, 5),)),
    "fake_quant_weight_list": lambda: (fake_quant_weight_list, ([_acts(4, 3), _acts(2, 5)], QCONFIGS["w4"])),
    "groupwise_quantize": lambda: (groupwise_quantize, (_acts(3, 6),), (_acts(5, 8),)),
    "search_clip_ratio": lambda: (search_clip_ratio, (_acts(3, 5),)),
    "quant_error_report": lambda: (quant_error_report, ({"a8": STEFakeQuantize(frozen=True),
                                                         "a4": STEFakeQuantize(QCONFIGS["a4"], frozen=True)},
                                                        _acts(3, 5))),
    "check_saturation": lambda: (check_saturation, (_acts(3, 5) * 4, torch.tensor(0.02), torch.tensor(128))),
}
