"""Probabilistic forecasters and GP regressors as packaged for serving (TorchScript / torch.export):
stationary kernels with lengthscale handling, jittered Cholesky solves, predictive mean/variance,
quantile and mixture-density heads, stored-statistics scalers, horizon decoders, export wrappers."""
import logging
import math
import statistics
import warnings
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

logger = logging.getLogger("probabilistic_export")
logger.addHandler(logging.NullHandler())

DEFAULT_JITTER = {torch.float32: 1e-6, torch.float64: 1e-8}
MAX_CHOLESKY_TRIES = 4
MIN_VARIANCE = 1e-9
LOG_2PI = math.log(2 * math.pi)
DEFAULT_QUANTILES = (0.1, 0.5, 0.9)
SUPPORTED_NU = (0.5, 1.5, 2.5)
VALIDATE_INPUTS = True
DEBUG_NUMERICS = False

class NotPSDError(RuntimeError):
    pass

@dataclass
class KernelConfig:
    kind: str = "rbf"
    input_dim: int = 3
    ard: bool = True
    lengthscale: float = 1.0
    outputscale: float = 1.0
    period: float = 2.0
    nu: float = 2.5

@dataclass
class ForecastConfig:
    context_length: int = 12
    horizon: int = 6
    hidden: int = 16
    num_covariates: int = 3
    num_components: int = 3
    quantiles: Tuple[float, ...] = DEFAULT_QUANTILES
    min_scale: float = 1e-3
    extra: Dict[str, float] = field(default_factory=dict)  # per-dataset overrides

def inv_softplus(x: float) -> float:
    return x + math.log(-math.expm1(-x))

def positive(raw: Tensor, floor: float = 1e-6) -> Tensor:
    return F.softplus(raw) + floor

def scaled_sqdist(x1: Tensor, x2: Tensor, lengthscale: Tensor) -> Tensor:
    """Squared distances between x1/ls and x2/ls, centred on x1's mean first (as GPyTorch does)."""
    mean = x1.mean(dim=-2, keepdim=True)
    a, b = (x1 - mean) / lengthscale, (x2 - mean) / lengthscale
    a_norm, b_norm = a.pow(2).sum(-1, keepdim=True), b.pow(2).sum(-1, keepdim=True)
    res = a_norm - 2 * a @ b.transpose(-1, -2) + b_norm.transpose(-1, -2)
    return res.clamp_min(0)

def rbf_kernel(x1: Tensor, x2: Tensor, lengthscale: Tensor, outputscale: Tensor) -> Tensor:
    return outputscale * torch.exp(-0.5 * scaled_sqdist(x1, x2, lengthscale))

def periodic_kernel(x1: Tensor, x2: Tensor, lengthscale: Tensor, outputscale: Tensor,
                    period: Tensor) -> Tensor:
    diff = (x1.unsqueeze(-2) - x2.unsqueeze(-3)).abs()
    sines = torch.sin(math.pi * diff / period) / lengthscale
    return outputscale * torch.exp(-2.0 * sines.pow(2).sum(-1))

_MATERN_POLY: Dict[float, Callable[[Tensor], Tensor]] = {
    0.5: lambda d: torch.ones_like(d),
    1.5: lambda d: 1.0 + math.sqrt(3.0) * d,
    2.5: lambda d: 1.0 + math.sqrt(5.0) * d + (5.0 / 3.0) * d ** 2,
}

def matern_kernel(x1: Tensor, x2: Tensor, lengthscale: Tensor, outputscale: Tensor,
                  nu: float = 2.5) -> Tensor:
    if nu not in SUPPORTED_NU:
        raise ValueError(f"nu must be one of {SUPPORTED_NU}, got {nu}")
    dist = scaled_sqdist(x1, x2, lengthscale).clamp_min(1e-15).sqrt()
    return outputscale * _MATERN_POLY[nu](dist) * torch.exp(-math.sqrt(2 * nu) * dist)

KERNEL_FNS: Dict[str, Callable[..., Tensor]] = {
    "rbf": rbf_kernel, "periodic": periodic_kernel, "matern12": partial(matern_kernel, nu=0.5),
    "matern32": partial(matern_kernel, nu=1.5), "matern52": matern_kernel}

def psd_safe_cholesky(A: Tensor, jitter: Optional[float] = None,
                      max_tries: int = MAX_CHOLESKY_TRIES) -> Tensor:
    L, info = torch.linalg.cholesky_ex(A)
    if not torch.any(info):  # expect: FL000 GB0170; FL201
        return L
    jitter = DEFAULT_JITTER.get(A.dtype, 1e-6) if jitter is None else jitter
    Aprime, jitter_prev = A.clone(), 0.0
    for i in range(max_tries):
        jitter_new = jitter * (10 ** i)
        Aprime.diagonal(dim1=-2, dim2=-1).add_(jitter_new - jitter_prev)
        jitter_prev = jitter_new
        L, info = torch.linalg.cholesky_ex(Aprime)
        if not torch.any(info):
            warnings.warn(f"A not p.d., added jitter of {jitter_new:.1e} to the diagonal", RuntimeWarning)
            return L
    raise NotPSDError(f"Matrix not positive definite after repeatedly adding jitter up to {jitter_new:.1e}.")

def robust_cholesky(A: Tensor) -> Tensor:
    try:
        return torch.linalg.cholesky(A)
    except RuntimeError:
        logger.warning("plain Cholesky failed; retrying with jitter")
        return psd_safe_cholesky(A)

def add_diag(K: Tensor, value) -> Tensor:
    return K + value * torch.eye(K.shape[-1], dtype=K.dtype, device=K.device)

class Kernel(nn.Module):
    """Stationary kernel base: softplus-constrained lengthscale (ARD or shared) and outputscale."""
    def __init__(self, cfg: KernelConfig):
        super().__init__()
        self.cfg = cfg
        num_ls = cfg.input_dim if cfg.ard else 1
        self.raw_lengthscale = nn.Parameter(torch.full((num_ls,), inv_softplus(cfg.lengthscale)))
        self.raw_outputscale = nn.Parameter(torch.tensor(inv_softplus(cfg.outputscale)))

    @property
    def lengthscale(self) -> Tensor:
        return positive(self.raw_lengthscale)

    @property
    def outputscale(self) -> Tensor:
        return positive(self.raw_outputscale)

    def covar(self, x1: Tensor, x2: Tensor) -> Tensor:  # generic path, subclasses specialise
        return KERNEL_FNS[self.cfg.kind](x1, x2, self.lengthscale, self.outputscale)

    def forward(self, x1: Tensor, x2: Optional[Tensor] = None, diag: bool = False) -> Tensor:
        if self.cfg.ard and x1.shape[-1] != self.raw_lengthscale.numel():  # expect: FL203
            raise ValueError(f"expected {self.raw_lengthscale.numel()} input dims, got {x1.shape[-1]}")
        if diag:  # stationary: k(x, x) is the outputscale everywhere
            return self.outputscale.expand(x1.shape[:-1])
        return self.covar(x1, x1 if x2 is None else x2)

class RBFKernel(Kernel):
    def covar(self, x1: Tensor, x2: Tensor) -> Tensor:
        return rbf_kernel(x1, x2, self.lengthscale, self.outputscale)

class PeriodicKernel(Kernel):
    def __init__(self, cfg: KernelConfig):
        super().__init__(cfg)
        self.raw_period = nn.Parameter(torch.tensor(inv_softplus(cfg.period)))

    @property
    def period(self) -> Tensor:
        return positive(self.raw_period)

    def covar(self, x1: Tensor, x2: Tensor) -> Tensor:
        return periodic_kernel(x1, x2, self.lengthscale, self.outputscale, self.period)

class MaternKernel(Kernel):
    def __init__(self, cfg: KernelConfig):
        super().__init__(cfg)
        self.nu = cfg.nu
        self._fn = KERNEL_FNS.get(f"matern{int(2 * cfg.nu)}2", matern_kernel)

    def covar(self, x1: Tensor, x2: Tensor) -> Tensor:
        if x1.shape[-2] * x2.shape[-2] > 4096:  # large blocks: chunk rows to bound memory  # expect: FL203; FL301
            return torch.cat([self.covar(chunk, x2) for chunk in x1.split(64, dim=-2)], dim=-2)
        return self._fn(x1, x2, self.lengthscale, self.outputscale, nu=self.nu)

KERNELS = {"rbf": RBFKernel, "periodic": PeriodicKernel, "matern": MaternKernel}
build_kernel = lambda cfg: KERNELS.get(cfg.kind, Kernel)(cfg)  # noqa: E731

class ExactGP(nn.Module):
    """Exact GP regression head for export: targets are standardised with stored statistics."""
    def __init__(self, kernel: Kernel, train_x: Tensor, train_y: Tensor, noise: float = 0.05,
                 include_noise: bool = True):
        super().__init__()
        self.kernel, self.include_noise = kernel, include_noise
        y_mean, y_std = train_y.mean(), train_y.std().clamp_min(1e-6)
        self.register_buffer("train_x", train_x)
        self.register_buffer("train_y", (train_y - y_mean) / y_std)
        self.register_buffer("y_mean", y_mean)
        self.register_buffer("y_std", y_std)
        self.raw_noise = nn.Parameter(torch.tensor(inv_softplus(noise)))

    @property
    def noise(self) -> Tensor:
        return positive(self.raw_noise, floor=1e-4)

    def _solve(self) -> Tuple[Tensor, Tensor]:
        L = psd_safe_cholesky(add_diag(self.kernel(self.train_x), self.noise))
        return L, torch.cholesky_solve(self.train_y.unsqueeze(-1), L)

    def forward(self, test_x: Tensor) -> Tuple[Tensor, Tensor]:
        L, alpha = self._solve()
        cross = self.kernel(self.train_x, test_x)
        mean = (cross.transpose(-1, -2) @ alpha).squeeze(-1)
        v = torch.linalg.solve_triangular(L, cross, upper=False)
        var = (self.kernel(test_x, diag=True) - v.pow(2).sum(-2)).clamp_min(MIN_VARIANCE)
        if self.include_noise:
            var = var + self.noise
        return mean * self.y_std + self.y_mean, var * self.y_std ** 2

class CachedExactGP(ExactGP):
    """Serving variant: the train-side factorisation is computed once and reused across requests."""
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._cache: Optional[Tuple[Tensor, Tensor]] = None

    def _solve(self) -> Tuple[Tensor, Tensor]:
        if self._cache is None:
            self._cache = super()._solve()  # expect: FL302
        return self._cache

def gp_posterior(train_x: Tensor, train_y: Tensor, test_x: Tensor, lengthscale: Tensor,
                 outputscale: Tensor, noise: Tensor) -> Tuple[Tensor, Tensor]:
    """Functional RBF posterior, the graph the C++ server calls with hyperparameters as inputs."""
    k = partial(rbf_kernel, lengthscale=lengthscale, outputscale=outputscale)
    L = robust_cholesky(add_diag(k(train_x, train_x), noise))
    alpha = torch.cholesky_solve(train_y.unsqueeze(-1), L)
    cross = k(train_x, test_x)
    v = torch.linalg.solve_triangular(L, cross, upper=False)
    var = outputscale - v.pow(2).sum(-2)
    return (cross.transpose(-1, -2) @ alpha).squeeze(-1), var.clamp_min(MIN_VARIANCE)

class MeanScaler(nn.Module):
    """GluonTS-style mean-abs scaling over the observed part of the context window."""
    def __init__(self, dim: int = 1, minimum_scale: float = 1e-10, default_scale: Optional[float] = None):
        super().__init__()
        self.dim, self.minimum_scale, self.default_scale = dim, minimum_scale, default_scale

    def forward(self, data: Tensor, observed: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        ts_sum = (data * observed).abs().sum(self.dim, keepdim=True)
        num_observed = observed.sum(self.dim, keepdim=True)
        scale = ts_sum / torch.clamp(num_observed, min=1)
        if self.default_scale is None:
            batch_sum = ts_sum.sum(dim=0)
            default_scale = batch_sum / torch.clamp(num_observed.sum(dim=0), min=1)
        else:
            default_scale = self.default_scale * torch.ones_like(scale)
        scale = torch.where(num_observed > 0, scale, default_scale).clamp(min=self.minimum_scale)
        return data / scale, torch.zeros_like(scale), scale

class StoredStats:
    """Per-series statistics computed offline (np arrays in the checkpoint) and applied at serving."""
    def __init__(self, mean: np.ndarray, std: np.ndarray, eps: float = 1e-8):
        self.mean = torch.as_tensor(np.asarray(mean, dtype=np.float32))
        self.std = torch.as_tensor(np.maximum(np.asarray(std, dtype=np.float32), eps))

    def normalize(self, x: Tensor) -> Tensor:
        return (x - self.mean) / self.std

    def denormalize(self, x: Tensor) -> Tensor:
        return x * self.std + self.mean

def denormalize(y: Tensor, loc: Tensor, scale: Tensor) -> Tensor:
    while loc.dim() < y.dim():
        loc, scale = loc.unsqueeze(-1), scale.unsqueeze(-1)
    return y * scale + loc

class QuantileHead(nn.Module):
    """Predicts all horizon quantiles at once; non-crossing via cumulative softplus increments."""
    def __init__(self, hidden: int, horizon: int, quantiles: Sequence[float] = DEFAULT_QUANTILES,
                 monotone: bool = True):
        super().__init__()
        self.horizon, self.monotone = horizon, monotone
        self.register_buffer("levels", torch.tensor(sorted(quantiles)))
        self.proj = nn.Linear(hidden, horizon * len(quantiles))

    def forward(self, h: Tensor) -> Tensor:
        out = self.proj(h).view(h.shape[0], self.horizon, -1)
        if self.monotone:
            base = out[..., :1]
            out = torch.cat([base, base + F.softplus(out[..., 1:]).cumsum(-1)], dim=-1)
        return out

def mixture_cdf(x: Tensor, log_pi: Tensor, mu: Tensor, sigma: Tensor) -> Tensor:
    z = (x.unsqueeze(-1) - mu) / (sigma * math.sqrt(2.0))
    return (log_pi.exp() * 0.5 * (1.0 + torch.erf(z))).sum(-1)

def mixture_quantile(log_pi: Tensor, mu: Tensor, sigma: Tensor, q: float, tol: float = 1e-3,
                     max_iter: int = 40) -> Tensor:
    """Bisection on the mixture CDF; stops once every bracket is narrower than tol."""
    lo = (mu - 6.0 * sigma).min(-1).values
    hi = (mu + 6.0 * sigma).max(-1).values
    for _ in range(max_iter):
        mid = 0.5 * (lo + hi)
        below = mixture_cdf(mid, log_pi, mu, sigma) < q
        lo, hi = torch.where(below, mid, lo), torch.where(below, hi, mid)
        if (hi - lo).max() < tol:  # expect: FL000 GB0170; FL201
            break
    return 0.5 * (lo + hi)

def mixture_median(log_pi: Tensor, mu: Tensor, sigma: Tensor) -> Tensor:
    return mixture_quantile(log_pi, mu, sigma, 0.5)

class MixtureDensityHead(nn.Module):
    def __init__(self, hidden: int, num_components: int = 3, min_scale: float = 1e-3):
        super().__init__()
        self.proj = nn.Linear(hidden, 3 * num_components)
        self.min_scale = min_scale

    def forward(self, h: Tensor, quantiles: Optional[Sequence[float]] = None):
        logits, mu, raw_sigma = self.proj(h).chunk(3, dim=-1)
        log_pi, sigma = logits.log_softmax(-1), positive(raw_sigma, self.min_scale)
        if quantiles is None:
            return log_pi, mu, sigma
        return torch.stack([mixture_quantile(log_pi, mu, sigma, q) for q in quantiles], dim=-1)

def gaussian_params(raw: Tensor, min_scale: float) -> Tuple[Tensor, Tensor]:
    loc, raw_scale = raw.unbind(-1)
    return loc, positive(raw_scale, min_scale)

class AutoregressiveDecoder(nn.Module):
    """DeepAR-style: run the cell over the context, then roll it over the horizon feeding back
    the predicted mean (point decoding for serving; sampling lives in draw_sample_paths)."""
    def __init__(self, cfg: ForecastConfig):
        super().__init__()
        self.cfg = cfg
        self.input_proj = nn.Linear(1 + cfg.num_covariates, cfg.hidden)
        self.cell = nn.GRUCell(cfg.hidden, cfg.hidden)
        self.param_proj = nn.Linear(cfg.hidden, 2)

    def step(self, last: Tensor, covariates: Tensor, h: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        h = self.cell(F.gelu(self.input_proj(torch.cat([last.unsqueeze(-1), covariates], dim=-1))), h)
        loc, scale = gaussian_params(self.param_proj(h), self.cfg.min_scale)
        return loc, scale, h

    def forward(self, past_target: Tensor, past_covariates: Tensor, future_covariates: Tensor):
        h = past_target.new_zeros(past_target.shape[0], self.cfg.hidden)
        for t in range(past_target.shape[1]):  # teacher-forced over the observed context
            _, _, h = self.step(past_target[:, t], past_covariates[:, t], h)
        last = past_target[:, -1]
        locs, scales = [], []
        for t in range(future_covariates.shape[1]):  # expect: FL301
            last, scale, h = self.step(last, future_covariates[:, t], h)
            locs.append(last)
            scales.append(scale)
        return torch.stack(locs, dim=1), torch.stack(scales, dim=1)

clip_non_negative = partial(torch.clamp_min, min=0.0)
sort_quantiles = lambda q: torch.sort(q, dim=-1).values  # noqa: E731

def check_finite(q: Tensor) -> Tensor:
    if DEBUG_NUMERICS and not torch.isfinite(q).all():
        raise FloatingPointError("non-finite forecast")
    return q

POSTPROCESSORS: Dict[str, List[Callable[[Tensor], Tensor]]] = {
    "demand": [clip_non_negative, sort_quantiles, check_finite],
    "generic": [sort_quantiles, check_finite],
}

class ForecastService(nn.Module):
    """The exported serving graph: validate/pad the request, scale, decode, emit quantiles."""
    def __init__(self, cfg: ForecastConfig, domain: str = "demand"):
        super().__init__()
        self.cfg = cfg
        self.scaler = MeanScaler(dim=1, minimum_scale=cfg.min_scale)
        self.decoder = AutoregressiveDecoder(cfg)
        normal = statistics.NormalDist()
        self.register_buffer("z", torch.tensor([normal.inv_cdf(q) for q in cfg.quantiles]))
        self.postprocessors = POSTPROCESSORS[domain]

    def validate(self, past_target: Tensor, past_covariates: Tensor) -> Tuple[Tensor, Tensor]:
        if past_target.dim() == 1:
            past_target, past_covariates = past_target.unsqueeze(0), past_covariates.unsqueeze(0)
        assert past_covariates.shape[-1] == self.cfg.num_covariates, "covariate count mismatch"  # expect: FL203
        length, ctx = past_target.shape[-1], self.cfg.context_length
        if length < ctx:  # too short: left-pad, the padded steps count as unobserved  # expect: FL203; FL301
            pad = ctx - length
            past_target = F.pad(past_target, (pad, 0), value=float("nan"))
            past_covariates = F.pad(past_covariates, (0, 0, pad, 0))
        else:
            past_target, past_covariates = past_target[:, -ctx:], past_covariates[:, -ctx:]
        return past_target, past_covariates

    def forward(self, past_target: Tensor, past_covariates: Tensor, future_covariates: Tensor) -> Tensor:
        past_target, past_covariates = self.validate(past_target, past_covariates)
        observed = (~torch.isnan(past_target)).to(past_target.dtype)
        if not observed.any(dim=-1).all():  # expect: FL000 GB0170; FL201
            warnings.warn("some series have no observed values; falling back to the batch scale")
        scaled, loc, scale = self.scaler(torch.nan_to_num(past_target), observed)
        means, scales = self.decoder(scaled, past_covariates, future_covariates)
        q = means.unsqueeze(-1) + scales.unsqueeze(-1) * self.z
        q = denormalize(q, loc.squeeze(-1), scale.squeeze(-1))
        for fn in self.postprocessors:
            q = fn(q)
        return q

class QuantileForecaster(nn.Module):
    """MLP over the normalised context (stored stats) with a quantile head; NaNs are imputed."""
    def __init__(self, cfg: ForecastConfig, stats: StoredStats):
        super().__init__()
        self.cfg, self.stats = cfg, stats
        self.body = nn.Sequential(nn.Linear(cfg.context_length, cfg.hidden), nn.GELU(),
                                  nn.Linear(cfg.hidden, cfg.hidden), nn.GELU())
        self.head = QuantileHead(cfg.hidden, cfg.horizon, cfg.quantiles)

    def impute(self, x: Tensor) -> Tensor:
        missing = torch.isnan(x)
        if missing.any():  # expect: FL000 GB0170; FL201
            logger.info("imputing %d missing values with the series mean", int(missing.sum()))  # expect: FL000 GB0124; FL000 GB0291; FL202; FL204
            x = torch.where(missing, self.stats.mean.expand_as(x), x)
        return x

    def forward(self, context: Tensor) -> Tensor:
        x = self.stats.normalize(self.impute(context))
        q = self.head(self.body(x))
        return self.stats.denormalize(q.transpose(1, 2)).transpose(1, 2)

@torch.compile
def pinball_loss(pred: Tensor, target: Tensor, levels: Tensor) -> Tensor:
    diff = target.unsqueeze(-1) - pred
    return torch.maximum(levels * diff, (levels - 1) * diff).mean()

def _gaussian_nll(mean: Tensor, var: Tensor, target: Tensor, full: bool = True) -> Tensor:
    if VALIDATE_INPUTS and torch.any(var < 0):  # expect: FL000 GB0170
        raise ValueError("var has negative entries")
    var = var.clamp_min(MIN_VARIANCE)
    loss = 0.5 * (torch.log(var) + (target - mean) ** 2 / var)
    return (loss + 0.5 * LOG_2PI if full else loss).mean()

gaussian_nll = torch.compile(_gaussian_nll)

@torch.compile(dynamic=True)
def crps_gaussian(mean: Tensor, std: Tensor, target: Tensor) -> Tensor:
    z = (target - mean) / std
    pdf = torch.exp(-0.5 * z ** 2) / math.sqrt(2 * math.pi)
    cdf = 0.5 * (1 + torch.erf(z / math.sqrt(2)))
    return (std * (z * (2 * cdf - 1) + 2 * pdf - 1 / math.sqrt(math.pi))).mean()

def _coverage(lower: Tensor, upper: Tensor, target: Tensor) -> float:
    return ((target >= lower) & (target <= upper)).float().mean().item()  # expect: FL000 GB0124

@torch.compile
def interval_report(quantiles: Tensor, target: Tensor, levels: Sequence[float] = DEFAULT_QUANTILES):
    report = {}
    k = len(levels)
    for i in range(k // 2):
        nominal = levels[k - 1 - i] - levels[i]
        report[f"coverage@{nominal:.2f}"] = _coverage(quantiles[..., i], quantiles[..., k - 1 - i], target)
        report[f"width@{nominal:.2f}"] = (quantiles[..., k - 1 - i] - quantiles[..., i]).mean()
    return report

@torch.compile
def draw_sample_paths(loc: Tensor, scale: Tensor, num_samples: int, generator: Optional[torch.Generator] = None):
    eps = torch.randn((num_samples,) + tuple(loc.shape), generator=generator, dtype=loc.dtype)  # expect: FL000 GB0055
    return loc + scale * eps

def gaussian_interval(mean: Tensor, var: Tensor, levels: Tensor) -> Tuple[Tensor, Tensor]:
    if VALIDATE_INPUTS and ((levels <= 0) | (levels >= 1)).any():  # expect: FL201
        raise ValueError("interval levels must lie in (0, 1)")
    z = torch.special.ndtri(0.5 + levels / 2)
    half = var.clamp_min(MIN_VARIANCE).sqrt().unsqueeze(-1) * z
    return mean.unsqueeze(-1) - half, mean.unsqueeze(-1) + half

def seasonal_naive(history: Tensor, horizon: int = 6, season: int = 4) -> Tensor:
    reps = math.ceil(horizon / season)
    return history[..., -season:].repeat(*([1] * (history.dim() - 1)), reps)[..., :horizon]

def export_gp(out_dir: str, kcfg: Optional[KernelConfig] = None):
    kcfg = kcfg or KernelConfig()
    x, y = torch.rand(10, kcfg.input_dim), torch.randn(10)
    program = torch.export.export(ExactGP(build_kernel(kcfg), x, y).eval(), (torch.rand(5, kcfg.input_dim),))
    torch.export.save(program, f"{out_dir}/gp.pt2")
    ls, os_ = torch.ones(kcfg.input_dim), torch.tensor(1.0)
    posterior = torch.export.export(gp_posterior, (x, y, x[:5], ls, os_, torch.tensor(0.1)))
    torch.export.save(posterior, f"{out_dir}/gp_posterior.pt2")
    torch.jit.trace(rbf_kernel, (x, x, ls, os_)).save(f"{out_dir}/rbf.pt")
    torch.jit.trace(matern_kernel, (x, x, ls, os_)).save(f"{out_dir}/matern.pt")
    torch.jit.trace(MaternKernel(kcfg).eval(), (x, x)).save(f"{out_dir}/matern_module.pt")

def export_forecaster(out_dir: str, cfg: Optional[ForecastConfig] = None):
    cfg = cfg or ForecastConfig()
    past, cov, fut = torch.rand(2, cfg.context_length), torch.rand(2, cfg.context_length, 3), torch.rand(2, 6, 3)
    torch.export.save(torch.export.export(ForecastService(cfg).eval(), (past, cov, fut)), f"{out_dir}/svc.pt2")
    stats = StoredStats(np.zeros(1), np.ones(1))
    torch.jit.trace(QuantileForecaster(cfg, stats).eval(), (past,)).save(f"{out_dir}/qf.pt")
    torch.jit.trace(QuantileHead(cfg.hidden, cfg.horizon).eval(), (torch.rand(2, 16),)).save(f"{out_dir}/qh.pt")
    torch.jit.trace(MixtureDensityHead(cfg.hidden).eval(), (torch.rand(2, cfg.hidden),)).save(f"{out_dir}/mdn.pt")
    torch.jit.trace(mixture_median, (torch.rand(2, 3).log_softmax(-1), torch.rand(2, 3), torch.rand(2, 3) + 0.5))
    torch.jit.trace(denormalize, (torch.rand(2, 6, 3), torch.rand(2), torch.rand(2))).save(f"{out_dir}/denorm.pt")
    torch.jit.trace(gaussian_interval, (torch.rand(2, 6), torch.rand(2, 6), torch.tensor([0.5, 0.9])))
    return torch.export.export(seasonal_naive, (torch.rand(2, cfg.context_length),))

EXPORTERS: Dict[str, Callable[..., object]] = {"gp": export_gp, "forecaster": export_forecaster}

def _randn(*shape: int, k: int = 0, scale: float = 1.0) -> Tensor:
    return scale * torch.randn(*shape, generator=torch.Generator().manual_seed(k))

def _rand(*shape: int, k: int = 1) -> Tensor:
    return torch.rand(*shape, generator=torch.Generator().manual_seed(k))

def _with_gaps(x: Tensor, every: int = 5) -> Tensor:
    x = x.clone()
    x[..., ::every] = float("nan")
    return x

_KCFG = KernelConfig(input_dim=3)
_FCFG = ForecastConfig()
_STATS = StoredStats(np.array([0.4]), np.array([0.3]))
_gp = lambda cls=ExactGP, kind="rbf": cls(build_kernel(KernelConfig(kind=kind)), _rand(10, 3), _randn(10, k=2))  # noqa: E731
_mdn_params = lambda: tuple(t.detach() for t in MixtureDensityHead(5)(_randn(4, 5, k=6)))  # noqa: E731

CASES = {
    "RBFKernel": lambda: (RBFKernel(_KCFG), (_rand(7, 3), _rand(5, 3, k=2))),
    "PeriodicKernel": lambda: (PeriodicKernel(KernelConfig(period=1.5)), (_rand(7, 3), _rand(5, 3, k=2))),
    "MaternKernel": lambda: (MaternKernel(KernelConfig(kind="matern", nu=1.5)), (_rand(9, 3), _rand(6, 3, k=2)),
                             (_rand(90, 3), _rand(60, 3, k=2))),
    "ExactGP": lambda: (_gp(kind="periodic"), (_rand(6, 3, k=3),)),
    "CachedExactGP": lambda: (_gp(CachedExactGP, "matern32"), (_rand(6, 3, k=3),)),
    "MeanScaler": lambda: (MeanScaler(), (_rand(4, 12), (_rand(4, 12, k=5) > 0.2).float())),
    "QuantileHead": lambda: (QuantileHead(16, 6), (_randn(4, 16),)),
    "MixtureDensityHead": lambda: (MixtureDensityHead(16), (_randn(4, 16), (0.1, 0.9))),
    "AutoregressiveDecoder": lambda: (AutoregressiveDecoder(_FCFG), (_rand(5, 12), _rand(5, 12, 3), _rand(5, 6, 3)),
                                      (_rand(5, 12), _rand(5, 12, 3), _rand(5, 4, 3))),
    "ForecastService": lambda: (ForecastService(_FCFG), (_rand(5, 15), _rand(5, 15, 3), _rand(5, 6, 3)),
                                (_rand(5, 9), _rand(5, 9, 3), _rand(5, 6, 3))),
    "QuantileForecaster": lambda: (QuantileForecaster(_FCFG, _STATS), (_with_gaps(_rand(3, 12)),)),
    "pinball_loss": lambda: (pinball_loss, (_randn(4, 6, 3), _randn(4, 6, k=3), torch.tensor(DEFAULT_QUANTILES))),
    "gaussian_nll": lambda: (gaussian_nll, (_randn(4, 6), _rand(4, 6) + 0.1, _randn(4, 6, k=3))),
    "crps_gaussian": lambda: (crps_gaussian, (_randn(4, 6), _rand(4, 6) + 0.1, _randn(4, 6, k=3))),
    "interval_report": lambda: (interval_report, (_randn(4, 6, 3).sort(-1).values, _randn(4, 6, k=3))),
    "draw_sample_paths": lambda: (draw_sample_paths, (_randn(4, 6), _rand(4, 6) + 0.1, 5,
                                                      torch.Generator().manual_seed(7))),
}

TRACED = {
    "ExactGP": lambda: (_gp(), (_rand(6, 3, k=3),)),
    "gp_posterior": lambda: (gp_posterior, (_rand(10, 3), _randn(10, k=2), _rand(6, 3, k=3), torch.ones(3),
                                            torch.tensor(1.2), torch.tensor(0.05))),
    "rbf_kernel": lambda: (rbf_kernel, (_rand(7, 3), _rand(5, 3, k=2), torch.ones(3), torch.tensor(0.8))),
    "matern_kernel": lambda: (matern_kernel, (_rand(7, 3), _rand(5, 3, k=2), torch.ones(3), torch.tensor(0.8))),
    "MaternKernel": lambda: (MaternKernel(KernelConfig(kind="matern")), (_rand(9, 3), _rand(6, 3, k=2))),
    "ForecastService": lambda: (ForecastService(_FCFG), (_rand(2, 9), _rand(2, 9, 3), _rand(2, 6, 3))),
    "QuantileForecaster": lambda: (QuantileForecaster(_FCFG, _STATS), (_with_gaps(_rand(2, 12)),)),
    "QuantileHead": lambda: (QuantileHead(16, 6), (_randn(3, 16),)),
    "MixtureDensityHead": lambda: (MixtureDensityHead(16), (_randn(3, 16),)),
    "mixture_median": lambda: (mixture_median, _mdn_params()),
    "denormalize": lambda: (denormalize, (_randn(2, 6, 3), _rand(2), _rand(2, k=4) + 0.5)),
    "gaussian_interval": lambda: (gaussian_interval, (_randn(2, 6), _rand(2, 6) + 0.1, torch.tensor([0.5, 0.9]))),
    "seasonal_naive": lambda: (seasonal_naive, (_rand(2, 12),)),
}
