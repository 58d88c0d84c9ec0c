"""Research-repo style model code: mixins with super() chains, classmethod/staticmethod/property,
functools.wraps decorators (timing, caching, shape checks, call counting), contextmanager helpers,
name registries filled by decorators, getattr dispatch, Namespace / dict / dataclass configs,
Optional/Union hints and module-level flags."""
import argparse
import contextlib
import functools
import logging
import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple, Union

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger(__name__)
logger.addHandler(logging.NullHandler())

DEBUG_NANS = True
USE_FUSED_NORM = False
LOG_TIMINGS = True
_TIMINGS: Dict[str, float] = {}
_CALLS = {"n": 0}

# --------------------------------------------------------------------------- registries

MODELS: Dict[str, type] = {}
ACTIVATIONS: Dict[str, Callable] = {}
LOSSES: Dict[str, Callable] = {}
POOLERS: Dict[str, Callable] = {}


def register_model(name: str):
    def deco(cls):
        MODELS[name] = cls
        return cls
    return deco


def register(table: Dict[str, Callable], name: Optional[str] = None):
    def deco(fn):
        table[name or fn.__name__] = fn
        return fn
    return deco


@register(ACTIVATIONS, "swish")
def swish(x):
    return x * torch.sigmoid(x)


@register(ACTIVATIONS, "squared_relu")
def squared_relu(x):
    return F.relu(x) ** 2


@register(ACTIVATIONS)
def gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


@register(LOSSES, "mse")
def mse_loss(pred, target, **kw):
    return F.mse_loss(pred, target)


@register(LOSSES, "huber")
def huber_loss(pred, target, delta: float = 1.0, **kw):
    return F.huber_loss(pred, target, delta=delta)


@register(LOSSES, "relative_l1")
def relative_l1(pred, target, eps: float = 1e-6, **kw):
    # a Python float keeps the loss "unit-free"
    scale = target.abs().mean().item()  # expect: FL000 GB0124
    return (pred - target).abs().mean() / max(scale, eps)


@register(POOLERS, "mean")
def mean_pool(h, mask):
    m = mask.unsqueeze(-1).to(h.dtype)
    return (h * m).sum(1) / m.sum(1).clamp_min(1.0)


@register(POOLERS, "first_valid")
def first_valid_pool(h, mask):
    idx = mask.long().argmax(1)
    return h[torch.arange(h.size(0)), idx]


@register(POOLERS, "masked_tokens")
def masked_tokens_pool(h, mask):
    return h[mask.bool()].mean(0, keepdim=True).expand(h.size(0), -1)  # expect: FL000 GB0036


# --------------------------------------------------------------------------- decorators

def timed(name: Optional[str] = None):
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            start = time.perf_counter()  # expect: FL000 GB0007
            out = fn(*args, **kwargs)
            if LOG_TIMINGS:
                _TIMINGS[name or fn.__name__] = time.perf_counter() - start  # expect: FL000 GB0007
            return out
        return wrapper
    return deco


def check_shapes(*dims: int):
    """Asserts the trailing dims of the first argument (einops-free shape contracts)."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(x, *args, **kwargs):
            assert x.shape[-len(dims):] == tuple(dims), f"{fn.__name__}: expected (..., {dims}), got {tuple(x.shape)}"
            return fn(x, *args, **kwargs)
        return wrapper
    return deco


def count_calls(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        _CALLS["n"] += 1  # expect: FL302
        return fn(*args, **kwargs)
    return wrapper


def nan_guard(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        out = fn(*args, **kwargs)
        if DEBUG_NANS and torch.isnan(out).any():  # expect: FL000 GB0170
            warnings.warn(f"NaN in output of {fn.__name__}, replacing with zeros")  # expect: FL000 GB0007
            out = torch.nan_to_num(out, nan=0.0)
        return out
    return wrapper


def sinusoidal_table(n: int, d: int) -> torch.Tensor:
    pos = torch.arange(n, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
    pe = torch.zeros(n, d)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe


# --------------------------------------------------------------------------- context managers

@contextlib.contextmanager
def maybe_autocast(enabled: bool, dtype=torch.bfloat16):
    if enabled:
        with torch.autocast("cpu", dtype=dtype):
            yield
    else:
        yield


@contextlib.contextmanager
def log_section(name: str):
    logger.debug("enter %s", name)  # expect: FL000 GB0291
    yield
    logger.debug("exit %s", name)


@contextlib.contextmanager
def fixed_seed(seed: int):
    state = torch.random.get_rng_state()  # expect: FL000 GB0007
    torch.manual_seed(seed)
    try:
        yield
    finally:
        torch.random.set_rng_state(state)


@contextlib.contextmanager
def eval_mode(module: nn.Module):
    was_training = module.training
    module.eval()
    try:
        yield module
    finally:
        module.train(was_training)


# --------------------------------------------------------------------------- configs

@dataclass
class BlockConfig:
    dim: int = 8
    hidden_mult: int = 2
    activation: str = "swish"
    dropout: float = 0.0
    norm_eps: float = 1e-5
    extras: Dict[str, float] = field(default_factory=lambda: {"residual_scale": 0.5})


def default_args(**overrides) -> argparse.Namespace:
    args = argparse.Namespace(dim=8, depth=2, pooler="mean", loss="mse", temperature=0.07,
                              max_len=6, chunk=4, dropout=0.0)
    for k, v in overrides.items():
        setattr(args, k, v)
    return args


# --------------------------------------------------------------------------- mixins and models

class InitMixin:
    def reset_parameters(self):
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                nn.init.zeros_(m.bias)


class ResidualMixin:
    residual_scale: float = 1.0

    def residual(self, x, fx):
        return x + self.residual_scale * fx


class NanCheckMixin:
    def check_finite(self, x, where: str = ""):
        if DEBUG_NANS and not torch.isfinite(x).all():  # expect: FL000 GB0170
            logger.warning("non-finite activations in %s", where)  # expect: FL000 GB0291
        return x


class TruncateMixin:
    max_len: int = 6

    def truncate(self, x):
        if x.size(1) > self.max_len:  # expect: FL301
            x = x[:, -self.max_len:]
        return x


class BaseBlock:
    """Cooperative base: must come right before nn.Module in the bases."""

    def __init__(self, cfg: BlockConfig):
        super().__init__()
        self.cfg = cfg
        self.norm = nn.LayerNorm(cfg.dim, eps=cfg.norm_eps)

    def pre(self, x):
        return self.norm(x)


@register_model("mlp_block")
class MLPBlock(ResidualMixin, InitMixin, BaseBlock, nn.Module):
    def __init__(self, cfg: BlockConfig = BlockConfig()):
        super().__init__(cfg)
        self.fc1 = nn.Linear(cfg.dim, cfg.dim * cfg.hidden_mult)
        self.fc2 = nn.Linear(cfg.dim * cfg.hidden_mult, cfg.dim)
        self.act = ACTIVATIONS[cfg.activation]
        self.residual_scale = cfg.extras["residual_scale"]
        self.reset_parameters()

    def forward(self, x):
        return self.residual(x, self.fc2(self.act(self.fc1(self.pre(x)))))


@register_model("checked_block")
class CheckedBlock(NanCheckMixin, MLPBlock):
    def forward(self, x):
        y = super().forward(x)
        return self.check_finite(y, self.__class__.__name__)


class GatedBlock(MLPBlock):
    """Subclass that reuses the parent's forward through super() and gates it."""

    def __init__(self, cfg: BlockConfig = BlockConfig(activation="gelu_tanh")):
        super().__init__(cfg)
        self.gate = nn.Linear(cfg.dim, cfg.dim)

    @staticmethod
    def _gate_fn(g):
        return torch.sigmoid(g) * 2.0

    def forward(self, x):
        g = self._gate_fn(self.gate(x))
        # kept for the logging hook
        self.last_gate_mean = g.mean().item()  # expect: FL000 GB0124
        return super().forward(x) * g


class TemperatureScaledHead(nn.Module):
    """CLIP-style learnable temperature exposed as a property."""

    def __init__(self, dim: int = 8, n_classes: int = 5, init_temp: float = 0.07):
        super().__init__()
        self.proj = nn.Linear(dim, n_classes)
        self.log_inv_temp = nn.Parameter(torch.tensor(math.log(1 / init_temp)))

    @property
    def inv_temperature(self) -> float:
        return self.log_inv_temp.exp().clamp(max=100.0).item()  # expect: FL000 GB0124

    @property
    def num_classes(self) -> int:
        return self.proj.out_features

    def forward(self, x):
        logits = F.normalize(self.proj(x), dim=-1) * self.inv_temperature
        return logits.view(-1, self.num_classes)


class ScaledDotAttention(nn.Module):
    def __init__(self, dim: int = 8, heads: int = 2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    @property
    def head_dim(self) -> int:
        return self.qkv.in_features // self.heads

    @property
    def scale(self) -> float:
        return self.head_dim ** -0.5

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "ScaledDotAttention":
        return cls(args.dim, getattr(args, "heads", 2))

    def forward(self, x, mask: Optional[torch.Tensor] = None):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1)) * self.scale
        if mask is not None:
            att = att.masked_fill(~mask[:, None, None, :], float("-inf"))
        return self.out((att.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))


class SequenceEncoder(TruncateMixin, nn.Module):
    """Namespace-configured encoder: truncates long inputs, adds cached sinusoidal positions, pools by name."""

    def __init__(self, args: argparse.Namespace):
        super().__init__()
        self.max_len = args.max_len
        self.attn = ScaledDotAttention.from_args(args)
        self.pooler_name = args.pooler

    def forward(self, x, mask):
        x = self.truncate(x)
        mask = mask[:, -x.size(1):]
        x = self.attn(x, mask.bool())
        return POOLERS[self.pooler_name](x, mask)


class PositionalEncoder(nn.Module):
    """Sinusoidal table memoised per (length, dim) on the instance."""

    def __init__(self, dim: int = 8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self._pe_cache: Dict[Tuple[int, int], torch.Tensor] = {}

    def positions(self, n: int, d: int) -> torch.Tensor:
        if (n, d) not in self._pe_cache:
            self._pe_cache[(n, d)] = sinusoidal_table(n, d)  # expect: FL302
        return self._pe_cache[(n, d)]

    def forward(self, x):
        return self.proj(x) + self.positions(x.size(1), x.size(2))


class MultiPoolHead(nn.Module):
    """Pools with several registered poolers chosen by name and concatenates them."""

    def __init__(self, poolers: Tuple[str, ...] = ("mean", "first_valid"), dim: int = 8):
        super().__init__()
        self.poolers = poolers
        self.out = nn.Linear(dim * len(poolers), 3)

    def forward(self, h, mask):
        return self.out(torch.cat([POOLERS[p](h, mask) for p in self.poolers], -1))


class DispatchNorm(nn.Module):
    """Picks a normalization implementation with getattr(self, f"_norm_{kind}")."""

    def __init__(self, dim: int = 8, kind: str = "rms", eps: float = 1e-6):
        super().__init__()
        self.kind, self.eps = kind, eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm_rms(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight

    def _norm_layer(self, x):
        return F.layer_norm(x, x.shape[-1:], self.weight, None, self.eps)

    def _norm_robust(self, x):
        med = np.median(x.detach().numpy(), axis=-1, keepdims=True)
        return (x - torch.from_numpy(med)) * self.weight

    def forward(self, x):
        impl = "layer" if USE_FUSED_NORM else self.kind
        return getattr(self, f"_norm_{impl}")(x)


class ChunkedFFN(nn.Module):
    """Memory-saving feed-forward applied over sequence chunks (reformer/longformer repos)."""

    def __init__(self, dim: int = 8, chunk: int = 4):
        super().__init__()
        self.chunk = chunk
        self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        outs = []
        for piece in x.split(self.chunk, dim=1):  # expect: FL301
            outs.append(self.ff(piece))
        return torch.cat(outs, dim=1)


# --------------------------------------------------------------------------- compiled functions

@torch.compile
@check_shapes(8)
def project_features(x, weight):
    return F.silu(x @ weight)


@torch.compile
@timed("encode")
def timed_encode(model: nn.Module, x):
    return model(x)


@torch.compile
@count_calls
def counted_step(model: nn.Module, x):
    return model(x).relu()


@nan_guard
def _normalized_logits(x, w):
    return F.log_softmax(x @ w, dim=-1)


normalized_logits = torch.compile(_normalized_logits)


def _compute_loss(pred, target, args: argparse.Namespace):
    loss_fn = LOSSES[args.loss]
    return loss_fn(pred, target, **vars(args))


compute_loss = torch.compile(_compute_loss)


class BlockStack(nn.Module):
    """Blocks built by registry name from a list in the config (the usual `--blocks a,b,c` flag)."""

    def __init__(self, names: Tuple[str, ...] = ("mlp_block", "mlp_block"), cfg: BlockConfig = BlockConfig()):
        super().__init__()
        self.blocks = nn.ModuleList(MODELS[n](cfg) for n in names)
        self.final_norm = nn.LayerNorm(cfg.dim)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.final_norm(x)


class Augment:
    @staticmethod
    def jitter_scale(low: float, high: float) -> float:
        return float(np.random.uniform(low, high))  # expect: FL000 GB0033

    @classmethod
    def apply(cls, x, cfg: BlockConfig):
        return x * cls.jitter_scale(1.0 - cfg.dropout, 1.0 + cfg.dropout)


@torch.compile
def augment_batch(model: nn.Module, x, cfg: BlockConfig):
    return model(Augment.apply(x, cfg))


@torch.compile
def mixed_precision_forward(model: nn.Module, x, use_amp: bool = True):
    with maybe_autocast(use_amp):
        h = model(x)
    return h.float().softmax(-1)


@torch.compile
def mc_dropout_forward(model: nn.Module, x, n_samples: int = 3, seed: int = 0):
    with fixed_seed(seed):
        samples = torch.stack([model(x) for _ in range(n_samples)])
    return samples.mean(0), samples.std(0)


@torch.compile
def sectioned_forward(model: nn.Module, x):
    with log_section("backbone"):
        h = model(x)
    return h.mean(1)


@torch.compile
def predict_in_eval(model: nn.Module, x):
    with eval_mode(model):
        with torch.no_grad():
            return model(x)


@torch.compile(dynamic=True)
def activation_sweep(x, names: Union[List[str], Tuple[str, ...]] = ("swish", "squared_relu")):
    return torch.stack([ACTIVATIONS[n](x) for n in names])


def _cfg_dict_forward(model: nn.Module, x, cfg: Dict[str, Union[float, bool]]):
    h = model(x)
    if cfg.get("normalize", False):
        h = F.normalize(h, dim=-1)
    if cfg.get("verbose", False):
        print(f"cfg_dict_forward: scale={cfg['scale']} out={tuple(h.shape)}")  # expect: FL000 GB0059
    return h * cfg["scale"]


cfg_dict_forward = torch.compile(_cfg_dict_forward)


# --------------------------------------------------------------------------- cases

def _args(**kw):
    return default_args(**kw)


_MASK = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [0, 1, 1, 1, 0]])

CASES = {
    "BlockStack": lambda: (BlockStack(), (torch.randn(3, 5, 8),)),
    "CheckedBlock": lambda: (CheckedBlock(), (torch.randn(3, 5, 8),)),
    "CheckedBlock_nan": lambda: (CheckedBlock(), (torch.full((3, 5, 8), float("nan")),)),
    "GatedBlock": lambda: (GatedBlock(), (torch.randn(3, 5, 8),)),
    "TemperatureScaledHead": lambda: (TemperatureScaledHead(), (torch.randn(3, 8),)),
    "SequenceEncoder": lambda: (SequenceEncoder(_args()), (torch.randn(3, 5, 8), _MASK.clone()),
                                (torch.randn(2, 7, 8), torch.ones(2, 7, dtype=torch.long))),
    "PositionalEncoder": lambda: (PositionalEncoder(), (torch.randn(2, 5, 8),)),
    "MultiPoolHead": lambda: (MultiPoolHead(("mean", "first_valid", "masked_tokens")),
                              (torch.randn(3, 5, 8), _MASK.clone())),
    "DispatchNorm": lambda: (DispatchNorm(kind="robust"), (torch.randn(3, 5, 8),)),
    "ChunkedFFN": lambda: (ChunkedFFN(), (torch.randn(2, 6, 8),), (torch.randn(3, 10, 8),)),
    "project_features": lambda: (project_features, (torch.randn(3, 8), torch.randn(8, 6))),
    "timed_encode": lambda: (timed_encode, (MLPBlock(), torch.randn(3, 5, 8))),
    "counted_step": lambda: (counted_step, (MLPBlock(), torch.randn(3, 5, 8))),
    "normalized_logits": lambda: (normalized_logits, (torch.randn(3, 8), torch.randn(8, 4))),
    "normalized_logits_nan": lambda: (normalized_logits, (torch.tensor([[float("nan")] * 8] * 3), torch.randn(8, 4))),
    "compute_loss": lambda: (compute_loss, (torch.randn(4, 3), torch.randn(4, 3), _args(loss="relative_l1"))),
    "augment_batch": lambda: (augment_batch, (MLPBlock(), torch.randn(3, 5, 8), BlockConfig(dropout=0.1))),
    "mixed_precision_forward": lambda: (mixed_precision_forward, (MLPBlock(), torch.randn(3, 5, 8))),
    "mixed_precision_forward_fp32": lambda: (mixed_precision_forward, (MLPBlock(), torch.randn(3, 5, 8), False)),
    "mc_dropout_forward": lambda: (mc_dropout_forward, (nn.Sequential(MLPBlock(), nn.Dropout(0.2)), torch.randn(3, 5, 8))),
    "sectioned_forward": lambda: (sectioned_forward, (MLPBlock(), torch.randn(3, 5, 8))),
    "predict_in_eval": lambda: (predict_in_eval, (nn.Sequential(MLPBlock(), nn.Dropout(0.1)), torch.randn(3, 5, 8))),
    "activation_sweep": lambda: (activation_sweep, (torch.randn(3, 5),)),
    "cfg_dict_forward": lambda: (cfg_dict_forward, (MLPBlock(), torch.randn(3, 5, 8), {"normalize": True, "scale": 2.0, "verbose": True})),
}
