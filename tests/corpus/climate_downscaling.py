"""Statistical and deep-learning climate downscaling in the style of research repos (DeepSD,
SRGAN/ESRGAN downscaling, Baño-Medina CNNs, ibicus / xclim bias correction): coarse-to-fine
super-resolution conditioned on topography, variable-specific normalisation (log-transform for
precipitation, z-scores for temperature), land/sea-masked losses, empirical quantile mapping,
ensemble statistics and probabilistic scores, physical constraint layers (non-negativity, mass
conservation), lapse-rate corrections and per-region evaluation tables."""
import functools
import logging
import math
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("downscaling")
logger.addHandler(logging.NullHandler())

KELVIN = 273.15
LAPSE_RATE = 6.5e-3  # K per metre, standard atmosphere
PRECIP_OFFSET = 0.1  # mm/day, keeps the log finite on dry days
WET_DAY_THRESHOLD = 1.0  # mm/day
FAIR_CRPS_MIN_MEMBERS = 4
MIN_VALID_PIXELS = 8
EPS = 1e-6
STRICT_PHYSICS = True

VAR_KIND = {"pr": "precip", "prsn": "precip", "tas": "temp", "tasmax": "temp", "orog": "static"}

# (lat slice, lon slice) boxes on the fine grid, as in the regional tables of CORDEX papers
REGIONS = {
    "alps": (slice(0, 4), slice(2, 7)),
    "po_valley": (slice(3, 6), slice(0, 5)),
    "coast": (slice(5, 8), slice(6, 12)),
}


@dataclass
class VariableStats:
    mean: float = 0.0
    std: float = 1.0
    log_mean: float = 0.0
    log_std: float = 1.0


DEFAULT_STATS: Dict[str, VariableStats] = {
    "pr": VariableStats(mean=2.4, std=4.1, log_mean=0.3, log_std=1.2),
    "tas": VariableStats(mean=283.0, std=7.5),
}


@dataclass
class DownscaleConfig:
    variables: Tuple[str, ...] = ("pr", "tas")
    scale_factor: int = 2
    hidden: int = 8
    n_blocks: int = 2
    topo_channels: int = 4
    use_topography: bool = True
    positivity: str = "softplus"
    conserve_mass: bool = True
    pad_multiple: int = 4
    debug: bool = False

    @property
    def n_vars(self) -> int:
        return len(self.variables)

    @property
    def precip_channels(self) -> List[int]:
        return [i for i, v in enumerate(self.variables) if VAR_KIND.get(v) == "precip"]


# --------------------------------------------------------------------------- normalisation

def _log_forward(x, stats: VariableStats):
    return (torch.log(x.clamp_min(0.0) + PRECIP_OFFSET) - stats.log_mean) / stats.log_std


def _log_inverse(z, stats: VariableStats):
    return (torch.exp(z * stats.log_std + stats.log_mean) - PRECIP_OFFSET).clamp_min(0.0)


TRANSFORMS = {
    "precip": (_log_forward, _log_inverse),
    "temp": (lambda x, stats: (x - stats.mean) / stats.std, lambda z, stats: z * stats.std + stats.mean),
}


def get_transform(var: str, inverse: bool = False, stats: Optional[VariableStats] = None) -> Callable:
    kind = VAR_KIND.get(var, "temp")
    try:
        fwd, inv = TRANSFORMS[kind]
    except KeyError:
        logger.warning("no transform registered for %s (%s), passing it through", var, kind)  # expect: FL000 GB0291
        return lambda x: x
    stats = stats or DEFAULT_STATS.get(var, VariableStats())
    return functools.partial(inv if inverse else fwd, stats=stats)


def normalize_fields(x, variables: Sequence[str]):
    channels = [get_transform(v)(x[:, i]) for i, v in enumerate(variables)]  # expect: FL000 GB4347; FL000 GB8335
    return torch.stack(channels, dim=1)


normalize = torch.compile(normalize_fields)


def _check_temperature_range(t, name: str, lo: float = 180.0, hi: float = 340.0):
    if t.min() < lo or t.max() > hi:  # expect: FL000 GB0170
        logger.warning("%s outside the plausible range [%.0f, %.0f] K", name, lo, hi)


@torch.compile
def denormalize_fields(z, variables: Sequence[str], stats: Optional[Dict[str, VariableStats]] = None):
    stats = stats or DEFAULT_STATS
    out = torch.empty_like(z)
    for i, v in enumerate(variables):
        out[:, i] = get_transform(v, inverse=True, stats=stats.get(v))(z[:, i])
        if VAR_KIND[v] == "temp" and STRICT_PHYSICS:
            _check_temperature_range(out[:, i], v)
    return out


# --------------------------------------------------------------------------- building blocks

def pad_to_multiple(x, multiple: int, mode: str = "replicate"):
    h, w = x.shape[-2:]
    ph, pw = (-h) % multiple, (-w) % multiple
    if ph == 0 and pw == 0:  # expect: FL301
        return x
    return F.pad(x, (0, pw, 0, ph), mode=mode)


def _check_orography_units(orog):
    if orog.abs().amax() < 10.0:  # expect: FL000 GB0170
        logger.warning("orography peaks below 10 m: was it given in km? expected metres")


class TopoEncoder(nn.Module):
    """Embeds high-resolution orography (metres) plus its slopes for conditioning."""

    def __init__(self, out_channels: int = 4, scale_m: float = 1000.0):
        super().__init__()
        self.scale_m = scale_m
        self.conv = nn.Conv2d(3, out_channels, 3, padding=1)

    @staticmethod
    def slopes(z):
        dzdx = F.pad(z[..., :, 1:] - z[..., :, :-1], (0, 1))
        dzdy = F.pad(z[..., 1:, :] - z[..., :-1, :], (0, 0, 0, 1))
        return dzdx, dzdy

    def forward(self, orog):
        _check_orography_units(orog)
        z = orog / self.scale_m
        dzdx, dzdy = self.slopes(z)
        return F.gelu(self.conv(torch.cat([z, dzdx, dzdy], dim=1)))


class ResidualBlock(nn.Module):
    def __init__(self, channels: int, res_scale: float = 0.2, norm: Optional[str] = None):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.norm = nn.GroupNorm(2, channels) if norm == "group" else nn.Identity()
        self.res_scale = res_scale

    def forward(self, x):
        h = F.leaky_relu(self.norm(self.conv1(x)), 0.2)
        return x + self.res_scale * self.conv2(h)


POSITIVITY: Dict[str, Callable] = {"relu": lambda x, beta: F.relu(x), "softplus": F.softplus}


class PositivityConstraint(nn.Module):
    """Non-negativity on the precipitation channels only; temperatures pass untouched."""

    def __init__(self, channels: Sequence[int], mode: str = "softplus", beta: float = 2.0):
        super().__init__()
        self.channels = list(channels)
        self.fn = functools.partial(POSITIVITY[mode], beta=beta)

    def forward(self, x):
        if not self.channels:
            return x
        parts = list(x.unbind(1))
        for c in self.channels:
            parts[c] = self.fn(parts[c])
        return torch.stack(parts, dim=1)


class MassConservation(nn.Module):
    """Rescales every block of fine pixels so that its mean equals the coarse cell (Harder et al.)."""

    def __init__(self, factor: int, channels: Optional[Sequence[int]] = None,
                 mode: str = "multiplicative", check: bool = False, tol: float = 1e-3):
        super().__init__()
        self.factor, self.channels, self.mode = factor, channels, mode
        self.check, self.tol = check, tol

    def _upsample(self, x):
        return F.interpolate(x, scale_factor=self.factor, mode="nearest")

    def forward(self, fine, coarse):
        chans = self.channels if self.channels is not None else range(fine.shape[1])
        out = fine.clone()
        for c in chans:
            f, g = fine[:, c:c + 1], coarse[:, c:c + 1]
            block_mean = F.avg_pool2d(f, self.factor)
            if self.mode == "multiplicative":
                out[:, c:c + 1] = f * self._upsample(g / (block_mean + EPS))
            else:
                out[:, c:c + 1] = f + self._upsample(g - block_mean)
            if self.check:
                err = (F.avg_pool2d(out[:, c:c + 1], self.factor) - g).abs().max()
                assert err < self.tol, f"channel {c}: mass not conserved (max error {err:.2e})"  # expect: FL000 GB0170
        return out


class LapseRateAdjustment(nn.Module):
    """Interpolates coarse temperature and corrects it for the height difference of the fine grid."""

    def __init__(self, learnable: bool = True, init: float = LAPSE_RATE):
        super().__init__()
        self.gamma = nn.Parameter(torch.tensor(init), requires_grad=learnable)

    def forward(self, t_coarse, orog_fine, orog_coarse, factor: int = 2):
        up = functools.partial(F.interpolate, scale_factor=factor, mode="bilinear", align_corners=False)
        return up(t_coarse) - self.gamma * (orog_fine - up(orog_coarse))


def log_field_stats(x, variables: Sequence[str]):
    for i, v in enumerate(variables):
        field_ = x[:, i]
        logger.debug("%s: min=%.3f max=%.3f", v, field_.min().item(), field_.max().item())  # expect: FL000 GB0124


class DownscalingNet(nn.Module):
    """SRResNet-style: bilinear baseline + learned residual, topography fused at fine resolution."""

    def __init__(self, cfg: DownscaleConfig = DownscaleConfig()):
        super().__init__()
        self.cfg = cfg
        self.topo = TopoEncoder(cfg.topo_channels) if cfg.use_topography else None
        self.head = nn.Conv2d(cfg.n_vars, cfg.hidden, 3, padding=1)
        self.blocks = nn.Sequential(*[ResidualBlock(cfg.hidden) for _ in range(cfg.n_blocks)])
        n_up = int(math.log2(cfg.scale_factor))
        assert 2 ** n_up == cfg.scale_factor, f"scale factor {cfg.scale_factor} is not a power of two"
        self.up = nn.Sequential(*[nn.Sequential(nn.Conv2d(cfg.hidden, 4 * cfg.hidden, 3, padding=1),
                                                nn.PixelShuffle(2), nn.LeakyReLU(0.2)) for _ in range(n_up)])
        fuse_in = cfg.hidden + (cfg.topo_channels if self.topo is not None else 0)
        self.tail = nn.Conv2d(fuse_in, cfg.n_vars, 3, padding=1)
        self.positivity = PositivityConstraint(cfg.precip_channels, cfg.positivity)
        self.mass = MassConservation(cfg.scale_factor, cfg.precip_channels) if cfg.conserve_mass else None

    def forward(self, coarse, orog=None):
        h0, w0 = coarse.shape[-2:]
        s = self.cfg.scale_factor
        x = self.blocks(self.head(pad_to_multiple(coarse, self.cfg.pad_multiple)))
        x = self.up(x)[..., : h0 * s, : w0 * s]
        if self.topo is not None:
            assert orog is not None, "topography-conditioned model needs orog"
            x = torch.cat([x, self.topo(orog)], dim=1)
        base = F.interpolate(coarse, scale_factor=s, mode="bilinear", align_corners=False)
        out = self.positivity(base + self.tail(x))
        if self.mass is not None:
            out = self.mass(out, coarse)
        if self.cfg.debug:
            log_field_stats(out, self.cfg.variables)
        return out


# --------------------------------------------------------------------------- losses

class MaskedRegressionLoss(nn.Module):
    """Pointwise loss restricted to valid (land) pixels, averaged per variable then weighted."""

    pointwise_fns = {"mse": lambda d: d.pow(2), "mae": torch.abs}

    def __init__(self, kind: str = "mse", var_weights: Optional[Sequence[float]] = None):
        super().__init__()
        self.kind = kind
        weights = torch.tensor(var_weights, dtype=torch.float32) if var_weights is not None else None
        self.register_buffer("var_weights", weights)

    def pointwise(self, pred, target):
        return self.pointwise_fns[self.kind](pred - target)

    def forward(self, pred, target, mask):
        err = self.pointwise(pred, target) * mask
        per_var = err.sum(dim=(0, 2, 3)) / (mask.sum(dim=(0, 2, 3)).clamp_min(1.0) * 1.0)
        if self.var_weights is not None:
            per_var = per_var * self.var_weights
        return per_var.sum()


class MaskedPrecipLoss(MaskedRegressionLoss):
    """Log-space MAE on precipitation plus an extra weight on the observed extremes."""

    def __init__(self, channel: int = 0, extreme_quantile: float = 0.9, extreme_weight: float = 2.0):
        super().__init__("mae")
        self.channel, self.extreme_quantile, self.extreme_weight = channel, extreme_quantile, extreme_weight

    def pointwise(self, pred, target):
        return super().pointwise(torch.log1p(pred.clamp_min(0.0)), torch.log1p(target))

    def forward(self, pred, target, mask):
        sl = slice(self.channel, self.channel + 1)
        p, t = pred[:, sl], target[:, sl]
        if mask.sum() < MIN_VALID_PIXELS:  # expect: FL000 GB0170
            logger.warning("fewer than %d valid pixels in batch, skipping", MIN_VALID_PIXELS)
            return p.sum() * 0.0
        base = super().forward(p, t, mask)
        threshold = torch.quantile(t[mask.bool()], self.extreme_quantile)  # expect: FL000 GB0036
        extreme = (t >= threshold).float() * mask
        tail = (self.pointwise(p, t) * extreme).sum() / extreme.sum().clamp_min(1.0)
        return base + self.extreme_weight * tail


# --------------------------------------------------------------------------- bias correction

class QuantileMapper(nn.Module):
    """Empirical quantile mapping (Gudmundsson 2012); the model-side quantiles can adapt online."""

    def __init__(self, n_quantiles: int = 11, momentum: float = 0.1):
        super().__init__()
        self.register_buffer("probs", torch.linspace(0.0, 1.0, n_quantiles))
        self.register_buffer("model_q", torch.zeros(n_quantiles))
        self.register_buffer("obs_q", torch.zeros(n_quantiles))
        self.momentum = momentum
        self.n_updates = 0

    @property
    def is_fitted(self) -> bool:
        return bool(self.obs_q[-1] > self.obs_q[0])  # expect: FL000 GB0124

    @torch.no_grad()
    def fit(self, model_hist, obs):
        self.model_q.copy_(torch.quantile(model_hist.flatten(), self.probs))
        self.obs_q.copy_(torch.quantile(obs.flatten(), self.probs))
        return self

    @torch.no_grad()
    def update(self, model_batch):
        self.model_q.lerp_(torch.quantile(model_batch.flatten(), self.probs), self.momentum)
        self.n_updates += 1  # expect: FL302

    def _interp(self, x, xp, fp):
        n = xp.numel()
        idx = torch.searchsorted(xp, x.contiguous()).clamp(1, n - 1)
        lo, hi = xp[idx - 1], xp[idx]
        w = ((x - lo) / (hi - lo).clamp_min(EPS)).clamp(0.0, 1.0)
        return torch.lerp(fp[idx - 1], fp[idx], w)

    def forward(self, x, adapt: bool = False):
        if not self.is_fitted:
            raise RuntimeError("QuantileMapper.fit() must be called first")
        if adapt:
            self.update(x)
        return self._interp(x, self.model_q, self.obs_q)


# --------------------------------------------------------------------------- ensembles

@torch.compile
def crps_ensemble(members, obs):
    """CRPS of an ensemble (members first); the fair estimator once there are enough members."""
    m = members.shape[0]
    skill = (members - obs.unsqueeze(0)).abs().mean(0)
    pair = (members.unsqueeze(0) - members.unsqueeze(1)).abs().sum((0, 1))
    if m >= FAIR_CRPS_MIN_MEMBERS:  # expect: FL301
        denom = 2 * m * (m - 1)
    else:
        denom = 2 * m * m
    return (skill - pair / denom).mean()


@torch.compile
def ensemble_statistics(members, obs=None, quantiles: Tuple[float, ...] = (0.1, 0.9)):
    stats = {"mean": members.mean(0), "spread": members.std(0)}
    q = torch.quantile(members, torch.tensor(quantiles, dtype=members.dtype), dim=0)
    for i, level in enumerate(quantiles):
        stats[f"p{int(level * 100):02d}"] = q[i]
    if obs is not None:
        rmse = (stats["mean"] - obs).pow(2).mean().sqrt()
        stats["spread_skill"] = stats["spread"].pow(2).mean().sqrt() / rmse
        stats["crps"] = crps_ensemble(members, obs)
    return stats


@torch.compile
def stochastic_ensemble(model: nn.Module, coarse, orog, n_members: int = 3, noise_std: float = 0.05,
                        generator: Optional[torch.Generator] = None):
    scale = coarse.std(dim=(-2, -1), keepdim=True)
    members = []
    for _ in range(n_members):
        noise = torch.randn(coarse.shape, generator=generator) * noise_std  # expect: FL000 GB0055
        members.append(model(coarse + noise * scale, orog))
    return torch.stack(members)


# --------------------------------------------------------------------------- evaluation

def _region_view(x, region: str):
    lat, lon = REGIONS[region]
    return x[..., lat, lon]


def _masked_mean(x, m):
    return (x * m).sum() / m.sum().clamp_min(1.0)


def _masked_corr(p, t, m):
    pa, ta = p - _masked_mean(p, m), t - _masked_mean(t, m)
    cov = _masked_mean(pa * ta, m)
    return cov / (_masked_mean(pa * pa, m).sqrt() * _masked_mean(ta * ta, m).sqrt() + EPS)


METRICS: Dict[str, Callable] = {
    "bias": lambda p, t, m: _masked_mean(p - t, m),
    "rmse": lambda p, t, m: _masked_mean((p - t) ** 2, m).sqrt(),
    "corr": _masked_corr,
}


@torch.compile
def regional_scores(pred, target, land_mask, regions: Sequence[str] = tuple(REGIONS),
                    metrics: Sequence[str] = ("bias", "rmse", "corr")):
    table = {}
    for region in regions:
        p, t, m = (_region_view(a, region) for a in (pred, target, land_mask))
        for name in metrics:
            table[f"{region}/{name}"] = METRICS[name](p, t, m)
    return table


@torch.compile
def regional_report(pred, target, land_mask, variable: str = "pr"):
    table = regional_scores(pred, target, land_mask)
    report = {k: round(v.item(), 4) for k, v in table.items()}  # expect: FL000 GB0092; FL000 GB0124
    worst = max(REGIONS, key=lambda r: report[f"{r}/rmse"])
    logger.info("%s: worst region %s (rmse %.3f)", variable, worst, report[f"{worst}/rmse"])
    return report


# --------------------------------------------------------------------------- post-processing hooks

def _channel_mask(x, channels: Sequence[int]):
    sel = torch.zeros(x.shape[1], dtype=torch.bool)
    sel[list(channels)] = True
    return sel.view(1, -1, 1, 1)


def clip_negative(x, channels: Sequence[int]):
    return torch.where(_channel_mask(x, channels), x.clamp_min(0.0), x)


def wet_day_threshold(x, channels: Sequence[int], threshold: float = WET_DAY_THRESHOLD):
    dry = _channel_mask(x, channels) & (x < threshold)
    return x.masked_fill(dry, 0.0)


def clamp_physical(x, channels: Sequence[int], lo: float, hi: float):
    return torch.where(_channel_mask(x, channels), x.clamp(lo, hi), x)


POSTPROCESS: List[Callable] = [
    functools.partial(clip_negative, channels=[0]),
    functools.partial(wet_day_threshold, channels=[0]),
    functools.partial(clamp_physical, channels=[1], lo=180.0, hi=340.0),
]


@torch.compile
def postprocess(x, hooks: Optional[List[Callable]] = None):
    for hook in hooks or POSTPROCESS:
        x = hook(x)
    return x


# --------------------------------------------------------------------------- cases

def _randn(*shape, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g)


_precip = lambda *shape, seed=0: (_randn(*shape, seed=seed).exp() * 2.0 - 1.5).clamp_min(0.0)
_temp = lambda *shape, seed=0: KELVIN + 10.0 + 5.0 * _randn(*shape, seed=seed)


def _fields(b: int, h: int, w: int, seed: int = 0):
    return torch.stack([_precip(b, h, w, seed=seed), _temp(b, h, w, seed=seed + 1)], dim=1)


def _orog(b: int, h: int, w: int, seed: int = 0):
    return _randn(b, 1, h, w, seed=seed).cumsum(-1).abs() * 300.0


def _land_mask(b: int, h: int, w: int):
    ramp = torch.arange(w).view(1, 1, 1, w) + torch.arange(h).view(1, 1, h, 1)
    return (ramp < (h + w) * 2 // 3).float().expand(b, 1, h, w).contiguous()


def _loss_inputs(h: int = 8, w: int = 12):
    return _fields(3, h, w), _fields(3, h, w, seed=5), _land_mask(3, h, w)


def _eval_inputs(h: int = 8, w: int = 12):
    return _fields(3, h, w)[:, :1], _fields(3, h, w, seed=5)[:, :1], _land_mask(3, h, w)


def _fitted_mapper():
    return QuantileMapper().fit(_precip(200, seed=11), _precip(200, seed=12) * 1.3)


CASES = {
    "normalize": lambda: (normalize, (_fields(3, 4, 6), ("pr", "tas"))),
    "normalize_with_orog": lambda: (normalize, (torch.cat([_fields(3, 4, 6), _orog(3, 4, 6)], 1),
                                                ("pr", "tas", "orog"))),
    "denormalize_fields": lambda: (denormalize_fields, (_randn(3, 2, 4, 6), ("pr", "tas"))),
    "TopoEncoder": lambda: (TopoEncoder(), (_orog(3, 8, 12),)),
    "ResidualBlock": lambda: (ResidualBlock(6, norm="group"), (_randn(3, 6, 4, 5),)),
    "PositivityConstraint": lambda: (PositivityConstraint([0], "softplus"), (_randn(3, 2, 4, 6),)),
    "MassConservation": lambda: (MassConservation(2, [0]), (_precip(3, 2, 8, 12), _precip(3, 2, 4, 6, seed=1))),
    "MassConservation_checked": lambda: (MassConservation(2, None, mode="additive", check=True),
                                         (_randn(3, 2, 8, 12), _randn(3, 2, 4, 6, seed=1))),
    "LapseRateAdjustment": lambda: (LapseRateAdjustment(), (_temp(3, 1, 4, 6), _orog(3, 8, 12), _orog(3, 4, 6))),
    "DownscalingNet": lambda: (DownscalingNet(), (_fields(3, 4, 12), _orog(3, 8, 24)),
                               (_fields(3, 5, 7, seed=2), _orog(3, 10, 14, seed=2))),
    "DownscalingNet_debug": lambda: (DownscalingNet(DownscaleConfig(debug=True)), (_fields(3, 4, 6), _orog(3, 8, 12))),
    "MaskedRegressionLoss": lambda: (MaskedRegressionLoss("mse", [1.0, 0.5]), _loss_inputs()),
    "MaskedPrecipLoss": lambda: (MaskedPrecipLoss(), _loss_inputs()),
    "QuantileMapper": lambda: (_fitted_mapper(), (_precip(3, 8, 12, seed=5), True)),
    "crps_ensemble": lambda: (crps_ensemble, (_randn(3, 4, 6), _randn(4, 6, seed=9)),
                              (_randn(5, 4, 6), _randn(4, 6, seed=9))),
    "ensemble_statistics": lambda: (ensemble_statistics, (_randn(5, 2, 4, 6), _randn(2, 4, 6, seed=9))),
    "stochastic_ensemble": lambda: (stochastic_ensemble, (DownscalingNet(), _fields(2, 4, 6), _orog(2, 8, 12), 3,
                                                          0.05, torch.Generator().manual_seed(7))),
    "regional_scores": lambda: (regional_scores, _eval_inputs()),
    "regional_report": lambda: (regional_report, _eval_inputs()),
    "postprocess": lambda: (postprocess, (_fields(3, 4, 6),)),
}
