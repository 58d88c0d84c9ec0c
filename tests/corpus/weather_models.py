"""Weather / climate ML in the FourCastNet / GraphCast-lite style: latitude-weighted losses and skill
scores (RMSE, ACC vs climatology, CRPS), spherical padding, per-variable normalisation stats in dicts,
AFNO spectral mixing, a grid->mesh->grid processor, autoregressive rollouts with teacher forcing,
land-sea masks, time-of-day / season encodings and ensemble perturbations."""
import datetime
import functools
import logging
import math
import random
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("wxml")
logger.addHandler(logging.NullHandler())

VARIABLES = ["z500", "t850", "u10", "v10", "t2m"]
SURFACE_VARS = ("u10", "v10", "t2m")
STATS: Dict[str, Dict[str, float]] = {
    "mean": {"z500": 54000.0, "t850": 275.0, "u10": -0.1, "v10": 0.2, "t2m": 278.0},
    "std": {"z500": 3300.0, "t850": 15.5, "u10": 5.6, "v10": 4.8, "t2m": 21.0},
}
DEG2RAD = math.pi / 180.0
HOURS_PER_DAY = 24
DAYS_PER_YEAR = 365.25
CHECK_FINITE = True
_LAT_WEIGHT_CACHE: Dict[Tuple[int, str], torch.Tensor] = {}

@dataclass
class ModelConfig:
    variables: List[str] = field(default_factory=lambda: list(VARIABLES))
    embed_dim: int = 12
    patch: int = 2
    depth: int = 2
    num_blocks: int = 2
    sparsity: float = 0.01
    hard_thresholding_fraction: float = 1.0
    mlp_ratio: float = 2.0
    activation: str = "gelu"
    residual: bool = True

    @property
    def n_vars(self) -> int:
        return len(self.variables)

# --------------------------------------------------------------------------- grid geometry

def latitudes(nlat: int) -> torch.Tensor:
    """Cell-centre latitudes, north to south (no grid points on the poles)."""
    step = 180.0 / nlat
    return torch.linspace(90.0 - step / 2, -90.0 + step / 2, nlat)

def lat_weights(nlat: int, kind: str = "cos") -> torch.Tensor:
    """Area weights normalised to mean one (WeatherBench convention)."""
    if kind != "cos":
        raise ValueError(f"unknown latitude weighting {kind!r}")
    w = torch.cos(latitudes(nlat) * DEG2RAD)
    return w / w.mean()

def cached_lat_weights(nlat: int, kind: str = "cos") -> torch.Tensor:
    key = (nlat, kind)
    if key not in _LAT_WEIGHT_CACHE:
        _LAT_WEIGHT_CACHE[key] = lat_weights(nlat, kind)
    return _LAT_WEIGHT_CACHE[key]

def weighted_mean(field_: torch.Tensor, w_lat: torch.Tensor) -> torch.Tensor:
    """Mean over the trailing (lat, lon) dims with latitude weights."""
    return (field_ * w_lat.view(-1, 1)).mean(dim=(-2, -1))

def weighted_error(pred, target, p: int = 2, w_lat=None):
    w_lat = lat_weights(pred.shape[-2]) if w_lat is None else w_lat
    err = (pred - target).abs() ** p if p != 1 else (pred - target).abs()
    return weighted_mean(err, w_lat)

def rmse_impl(pred, target, w_lat=None):
    return torch.sqrt(weighted_error(pred, target, p=2, w_lat=w_lat))

def acc_impl(pred, target, clim, w_lat=None):
    w_lat = lat_weights(pred.shape[-2]) if w_lat is None else w_lat
    pa, ta = pred - clim, target - clim
    pa = pa - weighted_mean(pa, w_lat)[..., None, None]
    ta = ta - weighted_mean(ta, w_lat)[..., None, None]
    num = weighted_mean(pa * ta, w_lat)
    den = torch.sqrt(weighted_mean(pa ** 2, w_lat) * weighted_mean(ta ** 2, w_lat))
    return num / den.clamp_min(1e-12)

METRIC_FNS: Dict[str, Callable] = {
    "rmse": rmse_impl,
    "mae": functools.partial(weighted_error, p=1),
    "bias": lambda pred, target, w_lat: weighted_mean(pred - target, w_lat),
}

def var_index(available: Sequence[str], wanted: Sequence[str]) -> List[int]:
    missing = [v for v in wanted if v not in available]
    if missing:
        raise KeyError(f"variables not in dataset: {missing}")
    return [list(available).index(v) for v in wanted]

# --------------------------------------------------------------------------- metrics (compiled)

@torch.compile
def weighted_rmse(pred, target):
    return rmse_impl(pred, target)

@torch.compile
def acc_by_variable(pred, target, clim, variables=tuple(VARIABLES)):
    w = cached_lat_weights(pred.shape[-2])
    acc = acc_impl(pred, target, clim, w).mean(0)
    return {name: round(acc[i].item(), 4) for i, name in enumerate(variables)}  # expect: FL000 GB0124; FL000 GB4347; FL000 GB8335

def multiscale_rmse(pred, target, levels: int = 3):
    """RMSE on successively coarsened grids, stopping when the grid gets too small."""
    scores = []
    for _ in range(levels):
        scores.append(rmse_impl(pred, target).mean())
        if min(pred.shape[-2:]) < 4:  # expect: FL301
            break
        pred, target = F.avg_pool2d(pred, 2), F.avg_pool2d(target, 2)
    return torch.stack(scores)

multiscale_rmse_c = torch.compile(multiscale_rmse, dynamic=True)

@torch.compile
def crps_ensemble(ens: torch.Tensor, target: torch.Tensor, fair: bool = True):
    """Latitude-weighted CRPS; ens is (members, batch, var, lat, lon)."""
    m = ens.shape[0]
    skill = (ens - target.unsqueeze(0)).abs().mean(0)
    spread = torch.zeros_like(skill)
    for i in range(m):  # expect: FL301
        spread = spread + (ens[i:i + 1] - ens).abs().sum(0)
    denom = 2 * m * (m - 1) if fair else 2 * m * m
    crps = skill - spread / denom
    return weighted_mean(crps, lat_weights(ens.shape[-2]))

def zonal_power_spectrum(x: torch.Tensor) -> torch.Tensor:
    coeffs = torch.fft.rfft(x, dim=-1, norm="forward")
    return (coeffs.abs() ** 2).mean(dim=-2)

@torch.compile
def spectral_ratio(pred, target, max_wavenumber: Optional[int] = None):
    ratio = zonal_power_spectrum(pred) / zonal_power_spectrum(target).clamp_min(1e-12)
    if max_wavenumber is not None:
        ratio = ratio[..., :max_wavenumber]
    # effective resolution: first wavenumber where the forecast has lost half its power
    below = (ratio.mean(dim=(0, 1)) < 0.5).nonzero()  # expect: FL000 GB0036
    k_eff = int(below[0, 0]) if below.numel() else ratio.shape[-1]
    return ratio, k_eff

class MetricHistory:
    def __init__(self):
        self.history = defaultdict(list)

    def __call__(self, name, value):
        self.history[name].append(value.detach())  # expect: FL302

def nan_alarm(name, value):
    if torch.isnan(value).any():  # expect: FL000 GB0170
        logger.warning("metric %s has NaNs", name)

@torch.compile
def evaluate_forecast(pred, target, clim, callbacks: Sequence[Callable] = ()):
    w = lat_weights(pred.shape[-2])
    results = {name: fn(pred, target, w_lat=w) for name, fn in METRIC_FNS.items()}  # expect: FL000 GB4347
    results["acc"] = acc_impl(pred, target, clim, w)
    for name, value in results.items():
        for cb in callbacks:
            cb(name, value)
    return results

# --------------------------------------------------------------------------- normalisation / variables

class Normalizer(nn.Module):
    def __init__(self, variables: Sequence[str], stats: Dict[str, Dict[str, float]] = STATS):
        super().__init__()
        self.variables = list(variables)
        mean = torch.tensor([stats["mean"][v] for v in self.variables])
        std = torch.tensor([stats["std"][v] for v in self.variables])
        self.register_buffer("mean", mean.view(1, -1, 1, 1))
        self.register_buffer("std", std.view(1, -1, 1, 1))

    def forward(self, x, inverse: bool = False):
        if inverse:
            return x * self.std + self.mean
        return (x - self.mean) / self.std

@torch.compile
def normalize_selected(x, available: Tuple[str, ...], wanted: Tuple[str, ...]):
    idx = var_index(available, wanted)
    chans = [(x[:, i] - STATS["mean"][name]) / STATS["std"][name] for i, name in zip(idx, wanted)]
    return torch.stack(chans, dim=1)

# --------------------------------------------------------------------------- spherical padding

def pad_longitude(x: torch.Tensor, pad: int) -> torch.Tensor:
    return torch.cat([x[..., -pad:], x, x[..., :pad]], dim=-1)

def pad_poles(x: torch.Tensor, pad: int) -> torch.Tensor:
    """Reflect across each pole, shifted by 180 degrees of longitude."""
    half = x.shape[-1] // 2
    north = torch.roll(x[..., :pad, :].flip(-2), half, dims=-1)
    south = torch.roll(x[..., -pad:, :].flip(-2), half, dims=-1)
    return torch.cat([north, x, south], dim=-2)

class SphericalPad(nn.Module):
    def __init__(self, pad: int = 1):
        super().__init__()
        self.pad = pad

    def forward(self, x):
        if x.shape[-1] % 2:
            raise ValueError("pole padding needs an even number of longitudes")
        return pad_poles(pad_longitude(x, self.pad), self.pad)

class SphericalConv(nn.Module):
    def __init__(self, cin: int, cout: int, kernel_size: int = 3, activation: Optional[str] = None):
        super().__init__()
        self.pad = SphericalPad(kernel_size // 2)
        self.conv = nn.Conv2d(cin, cout, kernel_size)
        self.act = getattr(F, activation) if activation else None

    def forward(self, x):
        y = self.conv(self.pad(x))
        return self.act(y) if self.act is not None else y

# --------------------------------------------------------------------------- FourCastNet-style AFNO

class AFNOFilter(nn.Module):
    """Adaptive Fourier neural operator token mixer (block-diagonal complex MLP in Fourier space)."""

    def __init__(self, dim: int, num_blocks: int = 2, sparsity: float = 0.01, hard_frac: float = 1.0):
        super().__init__()
        assert dim % num_blocks == 0, "embed dim must split into blocks"
        self.num_blocks, self.block_size = num_blocks, dim // num_blocks
        self.sparsity, self.hard_frac = sparsity, hard_frac
        g = torch.Generator().manual_seed(11)
        bs = self.block_size
        self.w1, self.w2 = (nn.Parameter(0.02 * torch.randn(2, num_blocks, bs, bs, generator=g)) for _ in "12")
        self.b1, self.b2 = (nn.Parameter(0.02 * torch.randn(2, num_blocks, bs, generator=g)) for _ in "12")

    @staticmethod
    def _complex_mul(re, im, w, b):
        out_re = torch.einsum("...bi,bio->...bo", re, w[0]) - torch.einsum("...bi,bio->...bo", im, w[1]) + b[0]
        out_im = torch.einsum("...bi,bio->...bo", im, w[0]) + torch.einsum("...bi,bio->...bo", re, w[1]) + b[1]
        return out_re, out_im

    def forward(self, x):  # (B, H, W, C)
        bias = x
        B, H, W, C = x.shape
        xf = torch.fft.rfft2(x.float(), dim=(1, 2), norm="ortho")
        xf = xf.reshape(B, H, W // 2 + 1, self.num_blocks, self.block_size)
        kept = int((W // 2 + 1) * self.hard_frac)
        re, im = self._complex_mul(xf.real[:, :, :kept], xf.imag[:, :, :kept], self.w1, self.b1)
        re, im = self._complex_mul(F.relu(re), F.relu(im), self.w2, self.b2)
        out = F.softshrink(torch.stack([re, im], dim=-1), lambd=self.sparsity)
        out = torch.view_as_complex(out.contiguous())
        if kept < W // 2 + 1:
            out = F.pad(out, (0, 0, 0, 0, 0, W // 2 + 1 - kept))
        out = out.reshape(B, H, W // 2 + 1, C)
        x = torch.fft.irfft2(out, s=(H, W), dim=(1, 2), norm="ortho")
        return x.type_as(bias) + bias

class AFNOBlock(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        dim = cfg.embed_dim
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.filter = AFNOFilter(dim, cfg.num_blocks, cfg.sparsity, cfg.hard_thresholding_fraction)
        hidden = int(dim * cfg.mlp_ratio)
        act = {"gelu": nn.GELU, "silu": nn.SiLU, "relu": nn.ReLU}[cfg.activation]
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), act(), nn.Linear(hidden, dim))

    def forward(self, x):
        x = x + self.filter(self.norm1(x))
        return x + self.mlp(self.norm2(x))

class FourCastNetLite(nn.Module):
    def __init__(self, cfg: ModelConfig = ModelConfig()):
        super().__init__()
        self.cfg = cfg
        p, d = cfg.patch, cfg.embed_dim
        self.embed = nn.Conv2d(cfg.n_vars, d, p, stride=p)
        self.blocks = nn.ModuleList([AFNOBlock(cfg) for _ in range(cfg.depth)])
        self.head = nn.ConvTranspose2d(d, cfg.n_vars, p, stride=p)

    def forward(self, x):
        B, C, H, W = x.shape
        p = self.cfg.patch
        ph, pw = (-H) % p, (-W) % p
        x_in = x
        if ph or pw:  # expect: FL301
            x = pad_longitude(x, pw)[..., pw:] if pw else x
            x = F.pad(x, (0, 0, 0, ph), mode="replicate")
        tokens = self.embed(x).permute(0, 2, 3, 1)
        for blk in self.blocks:
            tokens = blk(tokens)
        out = self.head(tokens.permute(0, 3, 1, 2))[..., :H, :W]
        return out + x_in if self.cfg.residual else out

# --------------------------------------------------------------------------- steppers and rollouts

class Forecaster(nn.Module):
    """Base class: normalise, step `lead_steps` times, denormalise. The base step is persistence."""

    def __init__(self, cfg: ModelConfig = ModelConfig()):
        super().__init__()
        self.cfg = cfg
        self.normalizer = Normalizer(cfg.variables)

    def step(self, z):
        return z

    def _check_finite(self, z, lead):
        if not torch.isfinite(z).all():  # expect: FL000 GB0170
            raise FloatingPointError(f"non-finite state at lead {lead}")

    def forward(self, x, lead_steps: int = 1):
        z = self.normalizer(x)
        for lead in range(lead_steps):
            z = self.step(z)
            if CHECK_FINITE:
                self._check_finite(z, lead)
        return self.normalizer(z, inverse=True)

class ConvStepper(Forecaster):
    def __init__(self, cfg: ModelConfig = ModelConfig(), hidden: int = 8):
        super().__init__(cfg)
        self.net = nn.Sequential(SphericalConv(cfg.n_vars, hidden, activation=cfg.activation),
                                 SphericalConv(hidden, cfg.n_vars))

    def step(self, z):
        delta = self.net(z)
        return z + delta if self.cfg.residual else delta

class TeacherForcingSchedule:
    def __init__(self, start: float = 1.0, end: float = 0.0, decay_steps: int = 100, kind: str = "linear"):
        self.start, self.end, self.decay_steps, self.kind = start, end, decay_steps, kind

    def __call__(self, step: int) -> float:
        frac = min(step / self.decay_steps, 1.0)
        if self.kind == "linear":
            return self.start + (self.end - self.start) * frac
        return self.end + (self.start - self.end) * math.exp(-5.0 * frac)

def latitude_weighted_mse(pred, target, var_weights: torch.Tensor):
    return (weighted_error(pred, target, p=2) * var_weights).mean()

class AutoregressiveTrainer(nn.Module):
    def __init__(self, model: nn.Module, schedule: TeacherForcingSchedule, seed: int = 0):
        super().__init__()
        self.model, self.schedule = model, schedule
        self.rng = random.Random(seed)
        self.global_step = 0
        w = torch.tensor([2.0 if v in SURFACE_VARS else 1.0 for v in model.cfg.variables])
        self.register_buffer("var_weights", w / w.mean())

    def forward(self, x0, targets):  # targets: (T, B, C, H, W)
        ratio = self.schedule(self.global_step)
        state, losses = x0, []
        for t in range(targets.shape[0]):
            pred = self.model(state)
            losses.append(latitude_weighted_mse(pred, targets[t], self.var_weights))
            state = targets[t] if self.rng.random() < ratio else pred.detach()
        self.global_step += 1
        return torch.stack(losses).mean()

class EnsembleForecaster(nn.Module):
    def __init__(self, model: nn.Module, members: int = 3, noise_scale: float = 0.05):
        super().__init__()
        self.model, self.members = model, members
        scales = torch.tensor([noise_scale * STATS["std"][v] for v in model.cfg.variables])
        self.register_buffer("scales", scales.view(1, -1, 1, 1))

    def perturb(self, x, generator=None):
        noise = torch.randn(x.shape, generator=generator, dtype=x.dtype)  # expect: FL000 GB0055
        # cheap spatial correlation: smooth the white noise with a wrapped 3x3 box filter
        noise = F.avg_pool2d(pad_longitude(F.pad(noise, (0, 0, 1, 1), mode="replicate"), 1), 3, stride=1)
        return x + self.scales * noise

    def forward(self, x, generator: Optional[torch.Generator] = None):
        outs = [self.model(x)]  # member 0 is the control run
        for _ in range(1, self.members):
            outs.append(self.model(self.perturb(x, generator)))
        ens = torch.stack(outs, dim=0)
        return ens.mean(0), ens.std(0)

# --------------------------------------------------------------------------- land-sea masks

def synthetic_land_sea_mask(nlat: int, nlon: int) -> torch.Tensor:
    lat = latitudes(nlat)[:, None]
    lon = torch.linspace(0.0, 360.0, nlon + 1)[:-1][None, :]
    return (torch.sin(lon * DEG2RAD * 2) + torch.cos(lat * DEG2RAD * 3)) > 0.3

def masked_mean(err: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return err[..., mask].mean()  # expect: FL000 GB0036

class LandSeaMaskedLoss(nn.Module):
    def __init__(self, mask: torch.Tensor, land_weight: float = 0.7, ocean_vars=("t2m",)):
        super().__init__()
        self.register_buffer("land", mask.bool())
        self.land_weight = land_weight
        self.ocean_idx = var_index(VARIABLES, ocean_vars)

    def forward(self, pred, target):
        err = (pred - target) ** 2 * lat_weights(pred.shape[-2]).view(-1, 1)
        land = masked_mean(err, self.land)
        ocean = masked_mean(err[:, self.ocean_idx], ~self.land)
        return self.land_weight * land + (1 - self.land_weight) * ocean

# --------------------------------------------------------------------------- time encodings

def time_features(times: Sequence[datetime.datetime]) -> List[List[float]]:
    feats = []
    for t in times:
        hour = t.hour + t.minute / 60.0
        doy = t.timetuple().tm_yday  # expect: FL000 GB0156
        feats.append([math.sin(2 * math.pi * hour / HOURS_PER_DAY), math.cos(2 * math.pi * hour / HOURS_PER_DAY),
                      math.sin(2 * math.pi * doy / DAYS_PER_YEAR), math.cos(2 * math.pi * doy / DAYS_PER_YEAR)])
    return feats

def toa_insolation(hour: torch.Tensor, doy: torch.Tensor, nlat: int, nlon: int) -> torch.Tensor:
    """Crude cosine of the solar zenith angle, clipped at the night side."""
    decl = -23.44 * DEG2RAD * torch.cos(2 * math.pi * (doy + 10) / DAYS_PER_YEAR)
    lat = (latitudes(nlat) * DEG2RAD).view(1, -1, 1)
    lon = torch.linspace(0.0, 2 * math.pi, nlon + 1)[:-1].view(1, 1, -1)
    hour_angle = 2 * math.pi * hour.view(-1, 1, 1) / HOURS_PER_DAY + lon - math.pi
    cos_zen = torch.sin(lat) * torch.sin(decl.view(-1, 1, 1)) + \
        torch.cos(lat) * torch.cos(decl.view(-1, 1, 1)) * torch.cos(hour_angle)
    return cos_zen.clamp_min(0.0)

class ForcingConcat(nn.Module):
    """Appends insolation and broadcast time-of-day / season channels to the state."""

    def __init__(self, use_insolation: bool = True):
        super().__init__()
        self.use_insolation = use_insolation

    def forward(self, x, times: Sequence[datetime.datetime]):
        B, _, H, W = x.shape
        feats = torch.tensor(time_features(times), dtype=x.dtype)
        extra = [feats[:, :, None, None].expand(B, -1, H, W)]
        if self.use_insolation:
            hour = torch.tensor([t.hour for t in times], dtype=x.dtype)
            doy = torch.tensor([t.timetuple().tm_yday for t in times], dtype=x.dtype)  # expect: FL000 GB0156
            extra.append(toa_insolation(hour, doy, H, W).unsqueeze(1))
        return torch.cat([x, *extra], dim=1)

# --------------------------------------------------------------------------- GraphCast-lite mesh processor

def grid_to_mesh_edges(nlat: int, nlon: int, stride: int) -> Tuple[np.ndarray, np.ndarray, int]:
    mlat, mlon = nlat // stride, nlon // stride
    senders, receivers = [], []
    for i in range(nlat):
        for j in range(nlon):
            mi = min(i // stride, mlat - 1)
            for dj in (0, 1):  # nearest mesh node and its eastern neighbour (wrapping)
                senders.append(i * nlon + j)
                receivers.append(mi * mlon + ((j // stride + dj) % mlon))
    return np.asarray(senders), np.asarray(receivers), mlat * mlon

def mesh_edges(mlat: int, mlon: int) -> Tuple[np.ndarray, np.ndarray]:
    src, dst = [], []
    for i in range(mlat):
        for j in range(mlon):
            node = i * mlon + j
            for di, dj in ((0, 1), (0, -1), (1, 0), (-1, 0)):
                if 0 <= i + di < mlat:
                    src.append(node)
                    dst.append((i + di) * mlon + (j + dj) % mlon)
    return np.asarray(src), np.asarray(dst)

def scatter_mean(values: torch.Tensor, index: torch.Tensor, dim_size: int) -> torch.Tensor:
    out = values.new_zeros(values.shape[0], dim_size, values.shape[-1]).index_add_(1, index, values)
    count = torch.bincount(index, minlength=dim_size).clamp_min(1).to(values.dtype)  # expect: FL000 GB0036
    return out / count.view(1, -1, 1)

def mlp(din: int, dout: int, hidden: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(din, hidden), nn.SiLU(), nn.Linear(hidden, dout), nn.LayerNorm(dout))

class MeshProcessor(nn.Module):
    def __init__(self, n_vars: int, nlat: int, nlon: int, dim: int = 8, stride: int = 2, rounds: int = 2):
        super().__init__()
        s, r, self.n_mesh = grid_to_mesh_edges(nlat, nlon, stride)
        ms, mr = mesh_edges(nlat // stride, nlon // stride)
        for name, arr in (("g2m_s", s), ("g2m_r", r), ("m2m_s", ms), ("m2m_r", mr)):
            self.register_buffer(name, torch.from_numpy(arr).long())
        self.encoder = mlp(n_vars, dim, 2 * dim)
        self.edge_fns = nn.ModuleList([mlp(2 * dim, dim, 2 * dim) for _ in range(rounds)])
        self.decoder = nn.Sequential(nn.Linear(2 * dim, dim), nn.SiLU(), nn.Linear(dim, n_vars))
        logger.info("mesh: %d nodes, %d edges", self.n_mesh, len(ms))

    def forward(self, x):
        B, C, H, W = x.shape
        h = self.encoder(x.flatten(2).transpose(1, 2))  # (B, H*W, dim)
        mesh = scatter_mean(h[:, self.g2m_s], self.g2m_r, self.n_mesh)
        for edge_fn in self.edge_fns:
            msg = edge_fn(torch.cat([mesh[:, self.m2m_s], mesh[:, self.m2m_r]], dim=-1))
            mesh = mesh + scatter_mean(msg, self.m2m_r, self.n_mesh)
        # mesh -> grid: each grid node reads the mesh node it sent to first
        back = mesh[:, self.g2m_r[::2]]
        out = self.decoder(torch.cat([h, back], dim=-1))
        return x + out.transpose(1, 2).reshape(B, C, H, W)

# --------------------------------------------------------------------------- cases

def _field(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))

def _clim(b=2, h=6, w=8):
    return torch.cos(latitudes(h).view(1, 1, -1, 1) * DEG2RAD) * torch.ones(b, 5, h, w)

def _physical(b=2, h=6, w=8, seed=0):
    return Normalizer(VARIABLES)(_field(b, 5, h, w, seed=seed), inverse=True)

_TIMES = [datetime.datetime(2020, 1, 15, 6), datetime.datetime(2020, 7, 3, 18, 30)]

CASES = {
    "weighted_rmse": lambda: (weighted_rmse, (_field(2, 5, 6, 8), _field(2, 5, 6, 8, seed=1))),
    "acc_by_variable": lambda: (acc_by_variable, (_field(2, 5, 6, 8), _field(2, 5, 6, 8, seed=1), _clim())),
    "multiscale_rmse": lambda: (multiscale_rmse_c, (_field(2, 5, 6, 8), _field(2, 5, 6, 8, seed=1)),
                                (_field(2, 5, 10, 12), _field(2, 5, 10, 12, seed=1))),
    "crps_ensemble": lambda: (crps_ensemble, (_field(3, 2, 5, 6, 8), _field(2, 5, 6, 8, seed=1)),
                              (_field(4, 2, 5, 6, 8), _field(2, 5, 6, 8, seed=1))),
    "spectral_ratio": lambda: (spectral_ratio, (_field(2, 5, 6, 8), _field(2, 5, 6, 8, seed=1), 4)),
    "evaluate_forecast": lambda: (evaluate_forecast, (_field(2, 5, 6, 8), _field(2, 5, 6, 8, seed=1), _clim(),
                                                      [MetricHistory(), nan_alarm])),
    "Normalizer": lambda: (Normalizer(VARIABLES), (_physical(),)),
    "normalize_selected": lambda: (normalize_selected, (_physical(), tuple(VARIABLES), ("t2m", "z500"))),
    "SphericalPad": lambda: (SphericalPad(2), (_field(2, 5, 6, 8),)),
    "SphericalConv": lambda: (SphericalConv(5, 3, activation="silu"), (_field(2, 5, 6, 8),)),
    "AFNOFilter": lambda: (AFNOFilter(12, 2, hard_frac=0.5), (_field(2, 3, 4, 12),)),
    "AFNOBlock": lambda: (AFNOBlock(ModelConfig()), (_field(2, 3, 4, 12),)),
    "FourCastNetLite": lambda: (FourCastNetLite(), (_field(2, 5, 6, 8),), (_field(2, 5, 7, 10),)),
    "Forecaster": lambda: (Forecaster(), (_physical(), 2)),
    "ConvStepper": lambda: (ConvStepper(), (_physical(), 2)),
    "AutoregressiveTrainer": lambda: (AutoregressiveTrainer(ConvStepper(), TeacherForcingSchedule(kind="exp")),
                                      (_field(2, 5, 6, 8), _field(3, 2, 5, 6, 8, seed=1))),
    "EnsembleForecaster": lambda: (EnsembleForecaster(FourCastNetLite()),
                                   (_field(2, 5, 6, 8), torch.Generator().manual_seed(5))),
    "LandSeaMaskedLoss": lambda: (LandSeaMaskedLoss(synthetic_land_sea_mask(6, 8)),
                                  (_field(2, 5, 6, 8), _field(2, 5, 6, 8, seed=1))),
    "ForcingConcat": lambda: (ForcingConcat(), (_field(2, 5, 6, 8), _TIMES)),
    "MeshProcessor": lambda: (MeshProcessor(5, 6, 8), (_field(2, 5, 6, 8),)),
}
