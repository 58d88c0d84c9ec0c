"""Spiking neural networks and event cameras in the style of snntorch / spikingjelly / tonic:
stateful LIF neurons, surrogate-gradient autograd.Functions, reset mechanisms chosen by string,
refractory periods, spike encoders, event streams turned into voxel grids / frames, monitors."""
import functools
import logging
import math
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("snn")
logger.addHandler(logging.NullHandler())

DEFAULT_TAU = 2.0
DEFAULT_THRESHOLD = 1.0
SURROGATE_ALPHA = 2.0
NUM_STEPS = 5
MIN_STEPS_FOR_ISI = 8
LOG_FIRING_RATES = True
MAX_FRAME_WIDTH = 12
_EPS = 1e-6


# --------------------------------------------------------------------------- surrogate gradients

class ATanSpike(torch.autograd.Function):
    """Heaviside forward, arctan derivative backward (Fang et al. 2021)."""

    @staticmethod
    def forward(ctx, x, alpha):
        ctx.save_for_backward(x)
        ctx.alpha = alpha
        return (x >= 0).to(x.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        grad = ctx.alpha / 2 / (1 + (math.pi / 2 * ctx.alpha * x).pow(2))
        return grad_output * grad, None


class TriangleSpike(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, width):
        if float(width) <= 0:  # expect: FL000 GB0124
            raise ValueError("surrogate width must be positive")
        ctx.save_for_backward(x, width)
        return (x > 0).to(x)

    @staticmethod
    def backward(ctx, grad_output):
        x, width = ctx.saved_tensors
        grad = torch.clamp(1.0 - x.abs() / width, min=0.0) / width
        return grad_output * grad, None


def make_surrogate(kind: str, alpha: float = SURROGATE_ALPHA) -> Callable[[torch.Tensor], torch.Tensor]:
    if kind == "atan":
        def spike(x):
            return ATanSpike.apply(x, alpha)
    elif kind == "fast_sigmoid":
        def spike(x):
            s = torch.sigmoid(alpha * 5 * x)
            return (x > 0).to(x) + s - s.detach()
    elif kind == "triangle":
        def spike(x):
            return TriangleSpike.apply(x, torch.tensor(1.0 / alpha))
    else:
        raise ValueError(f"unknown surrogate {kind!r}")
    return spike


# --------------------------------------------------------------------------- reset mechanisms

def _reset_subtract(v, spike, v_threshold, v_reset):
    return v - spike * v_threshold


def _reset_zero(v, spike, v_threshold, v_reset):
    return v * (1.0 - spike) + spike * v_reset


RESET_FNS = {"subtract": _reset_subtract, "zero": _reset_zero, "hard": _reset_zero}


def get_reset_fn(name: str):
    try:
        return RESET_FNS[name.lower()]
    except KeyError:
        raise ValueError(f"unknown reset {name!r}, expected one of {sorted(RESET_FNS)}") from None


@dataclass
class NeuronConfig:
    tau: float = DEFAULT_TAU
    v_threshold: float = DEFAULT_THRESHOLD
    v_reset: float = 0.0
    reset: str = "subtract"
    surrogate: str = "atan"
    detach_reset: bool = False
    refractory_steps: int = 0
    step_mode: str = "s"

    @property
    def decay(self) -> float:
        return float(np.exp(-1.0 / self.tau))


# --------------------------------------------------------------------------- stateful neurons

class IFNode(nn.Module):
    """spikingjelly-style node: `self.v` survives between calls until `reset()`."""

    def __init__(self, cfg: Optional[NeuronConfig] = None):
        super().__init__()
        self.cfg = cfg or NeuronConfig()
        self.spike_fn = make_surrogate(self.cfg.surrogate)
        self.reset_fn = get_reset_fn(self.cfg.reset)
        self.v: Optional[torch.Tensor] = None

    def reset(self):
        self.v = None

    def neuronal_charge(self, x):
        self.v = self.v + x  # expect: FL302

    def neuronal_fire(self):
        return self.spike_fn(self.v - self.cfg.v_threshold)

    def neuronal_reset(self, spike):
        s = spike.detach() if self.cfg.detach_reset else spike
        self.v = self.reset_fn(self.v, s, self.cfg.v_threshold, self.cfg.v_reset)  # expect: FL302

    def single_step(self, x):
        if self.v is None:
            self.v = torch.full_like(x, self.cfg.v_reset)  # expect: FL302
        self.neuronal_charge(x)
        spike = self.neuronal_fire()
        self.neuronal_reset(spike)
        return spike

    def multi_step(self, x_seq):
        assert x_seq.dim() >= 2, "multi-step input must be (T, B, ...)"
        return torch.stack([self.single_step(x_seq[t]) for t in range(x_seq.shape[0])])

    def forward(self, x):
        step = {"s": self.single_step, "m": self.multi_step}[self.cfg.step_mode]
        return step(x)


class LIFNode(IFNode):
    def neuronal_charge(self, x):
        self.v = self.v + (x - (self.v - self.cfg.v_reset)) / self.cfg.tau  # expect: FL302


class ParametricLIFNode(LIFNode):
    """PLIF: the membrane time constant is learned through a sigmoid."""

    def __init__(self, cfg: Optional[NeuronConfig] = None, init_tau: float = 2.0):
        super().__init__(cfg)
        self.w = nn.Parameter(torch.tensor(-math.log(init_tau - 1.0)))

    def neuronal_charge(self, x):
        self.v = self.v + (x - (self.v - self.cfg.v_reset)) * self.w.sigmoid()  # expect: FL302


NODE_TYPES = {"if": IFNode, "lif": LIFNode, "plif": ParametricLIFNode}


def reset_net(net: nn.Module):
    for m in net.modules():
        if hasattr(m, "reset"):
            m.reset()


class RefractoryLeaky(nn.Module):
    """snntorch-style neuron: state is passed in and returned; absolute refractory period."""

    def __init__(self, cfg: Optional[NeuronConfig] = None):
        super().__init__()
        self.cfg = cfg or NeuronConfig(refractory_steps=2)
        self.beta = self.cfg.decay
        self.spike_fn = make_surrogate(self.cfg.surrogate)
        self.reset_fn = get_reset_fn(self.cfg.reset)

    def init_state(self, x):
        return torch.zeros_like(x), torch.zeros_like(x, dtype=torch.long)

    def forward(self, x, state=None):
        mem, ref = self.init_state(x) if state is None else state
        active = ref == 0
        mem = torch.where(active, self.beta * mem + x, mem)
        spk = self.spike_fn(mem - self.cfg.v_threshold) * active
        mem = self.reset_fn(mem, spk, self.cfg.v_threshold, self.cfg.v_reset)
        ref = torch.where(spk.bool(), torch.full_like(ref, self.cfg.refractory_steps), (ref - 1).clamp_min(0))
        return spk, (mem, ref)


def multistep_lif(x_seq, cfg: NeuronConfig):
    spike_fn = make_surrogate(cfg.surrogate)
    reset = get_reset_fn(cfg.reset)
    v = torch.zeros_like(x_seq[0])
    out = []
    for x in x_seq.unbind(0):
        v = cfg.decay * v + x
        s = spike_fn(v - cfg.v_threshold)
        v = reset(v, s, cfg.v_threshold, cfg.v_reset)
        out.append(s)
    return torch.stack(out)

class SpikingMLP(nn.Module):
    """Time-major input (T, B, F); one refractory LIF population per linear layer."""

    def __init__(self, sizes: Sequence[int], cfg: Optional[NeuronConfig] = None):
        super().__init__()
        self.fcs = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))
        self.lifs = nn.ModuleList(RefractoryLeaky(cfg) for _ in self.fcs)

    def forward(self, x_seq):
        states = [None] * len(self.lifs)
        spikes = []
        for t in range(x_seq.shape[0]):  # expect: FL301
            h = x_seq[t]
            for i, (fc, lif) in enumerate(zip(self.fcs, self.lifs)):
                h, states[i] = lif(fc(h), states[i])
            spikes.append(h)
        return torch.stack(spikes)


class ConvSNN(nn.Module):
    """Direct-encoding conv SNN; the whole net is reset at the start of every sample."""

    def __init__(self, in_ch=2, hidden=4, num_classes=3, input_hw=(6, 8), num_steps=3, node="lif", cfg=None):
        super().__init__()
        make_node = functools.partial(NODE_TYPES[node], cfg or NeuronConfig())
        feat = hidden * (input_hw[0] // 2) * (input_hw[1] // 2)
        self.features = nn.Sequential(
            nn.Conv2d(in_ch, hidden, 3, padding=1, bias=False), nn.BatchNorm2d(hidden), make_node(), nn.AvgPool2d(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(feat, num_classes), make_node())
        self.num_steps = num_steps

    def forward(self, x):
        reset_net(self)
        out = 0.0
        for _ in range(self.num_steps):
            out = out + self.classifier(self.features(x))
        return out / self.num_steps


class FiringRateMonitor:
    """Per-layer firing rates collected through forward hooks."""

    def __init__(self, net: nn.Module, node_types=(IFNode,)):
        self.records: Dict[str, List[float]] = {}
        self.handles = []
        self.net = net
        for name, m in net.named_modules():
            if isinstance(m, node_types):
                self.records[name] = []
                self.handles.append(m.register_forward_hook(functools.partial(self._hook, name)))

    def _hook(self, name, module, inputs, output):
        rate = output.detach().float().mean().item()  # expect: FL000 GB0124
        self.records[name].append(rate)
        if LOG_FIRING_RATES:
            logger.debug("%s firing rate %.3f", name, rate)


class STDPLinear(nn.Module):
    """Unsupervised layer with pair-based STDP traces updated on every training forward."""

    def __init__(self, in_features, out_features, a_plus=0.01, a_minus=0.012, tau_trace=3.0):
        super().__init__()
        init = torch.linspace(0.1, 0.6, out_features * in_features).view(out_features, in_features)
        self.weight = nn.Parameter(init, requires_grad=False)
        self.register_buffer("pre_trace", torch.zeros(in_features))
        self.register_buffer("post_trace", torch.zeros(out_features))
        self.a_plus, self.a_minus = a_plus, a_minus
        self.trace_decay = math.exp(-1.0 / tau_trace)
        self.threshold = DEFAULT_THRESHOLD * 0.5
        self.num_updates = 0

    def forward(self, pre_spk):
        post_spk = ATanSpike.apply(F.linear(pre_spk, self.weight) - self.threshold, SURROGATE_ALPHA)
        if self.training:
            pre, post = pre_spk.mean(0), post_spk.mean(0)
            with torch.no_grad():
                self.pre_trace.mul_(self.trace_decay).add_(pre)
                self.post_trace.mul_(self.trace_decay).add_(post)
                dw = self.a_plus * torch.outer(post, self.pre_trace) - self.a_minus * torch.outer(self.post_trace, pre)
                self.weight.add_(dw).clamp_(0.0, 1.0)
            self.num_updates += 1  # expect: FL302
        return post_spk


# --------------------------------------------------------------------------- encoders

@torch.compile
def rate_encode(x, num_steps: int = NUM_STEPS, gain: float = 1.0, generator: Optional[torch.Generator] = None):
    p = (x * gain).clamp(0.0, 1.0)
    noise = torch.rand((num_steps,) + tuple(p.shape), generator=generator, dtype=p.dtype)  # expect: FL000 GB0055
    return (noise < p).to(p.dtype)


@torch.compile
def latency_encode(x, num_steps: int = NUM_STEPS, tau: float = 5.0, threshold: float = 0.01, normalize=True):
    x = x.clamp(min=0.0)
    fire = x > threshold
    t = torch.where(fire, tau * torch.log(x / (x - threshold).clamp_min(_EPS)), torch.full_like(x, 1e3))
    if normalize:
        t = torch.where(fire, t * (num_steps - 1) / t[fire.nonzero(as_tuple=True)].max(), t)  # expect: FL000 GB0036
    idx = t.round().long().clamp(0, num_steps - 1)
    spikes = F.one_hot(idx, num_steps).movedim(-1, 0).to(x.dtype)
    return spikes * fire


class Encoder:
    name = "base"

    def __init__(self, num_steps: int = NUM_STEPS, check_range: bool = True):
        self.num_steps = num_steps
        self.check_range = check_range

    def __call__(self, x):
        if self.check_range:
            self._check_range(x)
        return self.encode(x)

    def _check_range(self, x):
        if x.min() < 0 or x.max() > 1:  # expect: FL000 GB0170
            logger.warning("%s encoder expects intensities in [0, 1]", self.name)

    def encode(self, x):
        raise NotImplementedError


class LatencyEncoder(Encoder):
    name = "latency"

    def encode(self, x):
        return latency_encode(x, self.num_steps)


class DeltaEncoder(Encoder):
    """Delta modulation over a time-major sequence: ON/OFF spikes where the input changes."""
    name = "delta"

    def __init__(self, threshold: float = 0.1, **kwargs):
        kwargs.setdefault("check_range", False)
        super().__init__(**kwargs)
        self.threshold = threshold

    def encode(self, x_seq):
        diff = torch.cat([torch.zeros_like(x_seq[:1]), x_seq[1:] - x_seq[:-1]])
        return (diff >= self.threshold).to(x_seq.dtype) - (diff <= -self.threshold).to(x_seq.dtype)


ENCODERS = {"latency": LatencyEncoder, "delta": DeltaEncoder}


@torch.compile
def encode_input(x, method: str = "latency", **kwargs):
    encoder = ENCODERS[method](**kwargs)
    spikes = encoder(x)
    return spikes, spikes.abs().mean()


# --------------------------------------------------------------------------- event streams

@dataclass(frozen=True)
class SensorSpec:
    height: int = 5
    width: int = 7

    @property
    def num_pixels(self) -> int:
        return self.height * self.width


def _normalize_time(t):
    return (t - t[0]) / (t[-1] - t[0]).clamp_min(_EPS)


@torch.compile
def events_to_voxel_grid(events, num_bins: int, height: int, width: int):
    """events: (N, 4) rows of (t, x, y, p) with p in {0, 1}; bilinear interpolation in time."""
    voxel = events.new_zeros(num_bins * height * width)
    ts = _normalize_time(events[:, 0]) * (num_bins - 1)
    xs, ys = events[:, 1].long(), events[:, 2].long()
    pols = events[:, 3] * 2 - 1
    left = ts.floor()
    for offset in (0, 1):
        tb = left + offset
        weight = pols * (1 - (ts - tb).abs()).clamp_min(0)
        valid = (tb >= 0) & (tb < num_bins)
        idx = xs + ys * width + tb.long().clamp(0, num_bins - 1) * height * width
        voxel.index_add_(0, idx, weight * valid)
    return voxel.view(num_bins, height, width)


FRAME_NORMALIZERS = {
    "max": lambda f: f / f.amax().clamp_min(1.0),
    "log": torch.log1p,
}


@torch.compile
def events_to_frame(events, sensor: SensorSpec, normalize: str = "max"):
    xs, ys, ps = events[:, 1].long(), events[:, 2].long(), events[:, 3].long()
    flat = ps * sensor.num_pixels + ys * sensor.width + xs
    counts = torch.bincount(flat, minlength=2 * sensor.num_pixels)  # expect: FL000 GB0036
    frame = counts[: 2 * sensor.num_pixels].view(2, sensor.height, sensor.width).float()
    return FRAME_NORMALIZERS[normalize](frame)


def slice_by_time(events, num_slices: int):
    t = events[:, 0].contiguous()
    edges = torch.linspace(0.0, 1.0, num_slices + 1, dtype=t.dtype) * (t[-1] - t[0]) + t[0]
    cuts = torch.searchsorted(t, edges[1:-1])
    bounds = [0] + cuts.tolist() + [t.shape[0]]  # expect: FL000 GB0033
    return [events[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


@torch.compile
def event_frame_sequence(events, sensor: SensorSpec, num_slices: int = 3, normalize: str = "log"):
    frames = []
    for chunk in slice_by_time(events, num_slices):
        frames.append(events_to_frame(chunk, sensor, normalize))
    return torch.stack(frames)


def reverse_time(voxel):
    return -voxel.flip(0)


def time_mask(voxel, start: int = 0, length: int = 1):
    out = voxel.clone()
    out[start:start + length] = 0
    return out


def build_augment(names: Sequence[str], **kwargs) -> List[Callable]:
    table = {"reverse_time": reverse_time,
             "time_mask": functools.partial(time_mask, **kwargs)}
    return [table[n] for n in names]


VOXEL_AUGMENT = build_augment(["reverse_time", "time_mask"], start=1)


@torch.compile
def augment_voxels(voxel, pipeline: List[Callable]):
    out = voxel
    for fn in pipeline:
        out = fn(out)
    if out.shape[-1] > MAX_FRAME_WIDTH:  # expect: FL301
        out = F.avg_pool2d(out, kernel_size=2)
    return out


class DVSClassifier(nn.Module):
    """Raw events -> voxel grid -> per-bin conv + refractory LIF -> LIF readout."""

    def __init__(self, sensor: SensorSpec, num_bins=4, hidden=3, num_classes=6):
        super().__init__()
        self.sensor, self.num_bins = sensor, num_bins
        self.conv = nn.Conv2d(1, hidden, 3, padding=1)
        self.neuron = RefractoryLeaky(NeuronConfig(refractory_steps=1, surrogate="fast_sigmoid"))
        self.head = nn.Linear(hidden, num_classes)
        self.readout_cfg = NeuronConfig(tau=4.0, v_threshold=0.5, reset="zero")

    def forward(self, events):
        voxel = events_to_voxel_grid(events, self.num_bins, self.sensor.height, self.sensor.width)
        state, feats = None, []
        for b in range(self.num_bins):
            spk, state = self.neuron(self.conv(voxel[b][None, None]), state)
            feats.append(spk.mean((2, 3)))
        logits_seq = self.head(torch.stack(feats))
        return multistep_lif(logits_seq, self.readout_cfg).sum(0)


# --------------------------------------------------------------------------- metrics and logging

def _isi_cv(spikes) -> torch.Tensor:
    arr = spikes.detach().cpu().numpy()
    cvs = []
    for n in range(arr.shape[1]):
        times = np.flatnonzero(arr[:, n])  # expect: FL000 GB0036
        if times.size > 2:
            isi = np.diff(times)
            cvs.append(isi.std() / max(isi.mean(), _EPS))
    return torch.tensor(float(np.mean(cvs)) if cvs else float("nan"))


@torch.compile
def spike_train_metrics(spikes, dt: float = 1e-3):
    num_steps = spikes.shape[0]
    metrics = {"rate_hz": spikes.mean(0).mean() / dt, "sparsity": 1.0 - spikes.mean()}
    if num_steps >= MIN_STEPS_FOR_ISI:  # expect: FL301
        metrics["isi_cv"] = _isi_cv(spikes)
    return metrics


# --------------------------------------------------------------------------- cases

def _randn(*shape, seed: int = 0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _spikes(*shape, p: float = 0.3, seed: int = 0):
    return (_randn(*shape, seed=seed).sigmoid() < p).float()


def _events(n: int, sensor: SensorSpec = SensorSpec(), seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    t = torch.sort(torch.rand(n, generator=g) * 1e4).values
    x = torch.randint(0, sensor.width, (n,), generator=g).float()
    y = torch.randint(0, sensor.height, (n,), generator=g).float()
    p = torch.randint(0, 2, (n,), generator=g).float()
    return torch.stack([t, x, y, p], dim=1)


CASES = {
    "IFNode_multistep": lambda: (IFNode(NeuronConfig(step_mode="m")), (_randn(4, 3, 5) + 0.5,)),
    "LIFNode": lambda: (LIFNode(NeuronConfig(reset="zero", detach_reset=True)), (_randn(3, 5) * 2,)),
    "ParametricLIFNode": lambda: (ParametricLIFNode(NeuronConfig(surrogate="triangle")), (_randn(3, 5) * 2,)),
    "RefractoryLeaky": lambda: (RefractoryLeaky(), (_randn(3, 5) * 2,)),
    "SpikingMLP": lambda: (SpikingMLP([6, 5, 4], NeuronConfig(surrogate="fast_sigmoid")), (_randn(5, 3, 6) * 2,), (_randn(7, 3, 6) * 2,)),
    "ConvSNN": lambda: (FiringRateMonitor(ConvSNN()).net, (_randn(3, 2, 6, 8),)),
    "STDPLinear": lambda: (STDPLinear(6, 4), (_spikes(3, 6, p=0.6),)),
    "rate_encode": lambda: (rate_encode, (_randn(3, 4).sigmoid(), 5, 1.0, torch.Generator().manual_seed(3))),
    "latency_encode": lambda: (latency_encode, (_randn(3, 4).sigmoid(), 6)),
    "encode_input_latency": lambda: (encode_input, (_randn(3, 4).sigmoid(), "latency")),
    "encode_input_delta": lambda: (encode_input, (_randn(5, 3, 4).sigmoid(), "delta")),
    "events_to_voxel_grid": lambda: (events_to_voxel_grid, (_events(40), 3, 5, 7)),
    "events_to_frame": lambda: (events_to_frame, (_events(40), SensorSpec())),
    "event_frame_sequence": lambda: (event_frame_sequence, (_events(40), SensorSpec(), 3)),
    "augment_voxels": lambda: (augment_voxels, (_randn(4, 5, 10), VOXEL_AUGMENT), (_randn(4, 5, 14), VOXEL_AUGMENT)),
    "DVSClassifier": lambda: (DVSClassifier(SensorSpec()), (_events(30, seed=1),)),
    "spike_train_metrics": lambda: (spike_train_metrics, (_spikes(9, 4, p=0.4),), (_spikes(5, 4, p=0.4),)),
}
