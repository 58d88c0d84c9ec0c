"""Load / renewable forecasting in the style of darts, pytorch-forecasting and GluonTS research code:
calendar features, lags, pinball losses, N-BEATS bases, TFT gating, scalers, sampling, backtests."""
import functools
import logging
import math
from dataclasses import dataclass
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

log = logging.getLogger("energy.forecast")
log.addHandler(logging.NullHandler())

HOURS_PER_DAY = 24
DAYS_PER_WEEK = 7
MONTHS = 12
DEFAULT_QUANTILES = (0.1, 0.5, 0.9)
DEFAULT_LAGS = (1, 2, 3, 24)
LOG_EVERY = 50
STRICT_CHECKS = False
EPS = 1e-6

# day-of-year of fixed-date public holidays (non-leap year), name -> doy
HOLIDAYS: Dict[str, int] = {"new_year": 1, "labour_day": 121, "national_day": 183,
                            "christmas": 359, "boxing_day": 360}
CALENDAR_PERIODS = {"hour": HOURS_PER_DAY, "dow": DAYS_PER_WEEK, "month": MONTHS}


@dataclass
class ForecastConfig:
    input_len: int = 12
    horizon: int = 4
    hidden: int = 16
    quantiles: Tuple[float, ...] = DEFAULT_QUANTILES
    lags: Tuple[int, ...] = DEFAULT_LAGS
    trend_degree: int = 3
    n_harmonics: int = 2

    @property
    def n_quantiles(self) -> int:
        return len(self.quantiles)

# --------------------------------------------------------------------------- calendar features

def cyclical(value: torch.Tensor, period: int) -> torch.Tensor:
    angle = 2.0 * math.pi * value.float() / period
    return torch.stack([torch.sin(angle), torch.cos(angle)], dim=-1)


@torch.compile
def encode_calendar(fields: Dict[str, torch.Tensor], day_of_year: torch.Tensor) -> torch.Tensor:
    parts = []
    for name, period in CALENDAR_PERIODS.items():
        if name not in fields:
            continue
        parts.append(cyclical(fields[name], period))
    is_weekend = (fields["dow"] >= 5).float().unsqueeze(-1)
    holidays = day_of_year.new_tensor(sorted(HOLIDAYS.values()))
    is_holiday = torch.isin(day_of_year, holidays).float().unsqueeze(-1)
    parts.extend([is_weekend, is_holiday])
    return torch.cat(parts, dim=-1)


class HolidayEncoder(nn.Module):
    """Learned embedding per named holiday plus a bridge-day flag (day between holiday and weekend)."""

    def __init__(self, holidays: Dict[str, int] = HOLIDAYS, dim: int = 6):
        super().__init__()
        self.names = sorted(holidays, key=holidays.get)
        self.lookup = {holidays[n]: i + 1 for i, n in enumerate(self.names)}
        self.embedding = nn.Embedding(len(self.names) + 1, dim, padding_idx=0)
        self.bridge_bias = nn.Parameter(torch.zeros(dim))

    def index_of(self, day_of_year: torch.Tensor) -> torch.Tensor:
        index = torch.zeros_like(day_of_year)
        for doy, idx in self.lookup.items():
            index = torch.where(day_of_year == doy, torch.full_like(index, idx), index)
        return index

    def forward(self, day_of_year: torch.Tensor, dow: torch.Tensor) -> torch.Tensor:
        index = self.index_of(day_of_year)
        emb = self.embedding(index)
        bridge = (dow == 4) & (self.index_of(day_of_year - 1) > 0)
        if bridge.any():  # expect: FL000 GB0170
            emb = emb + bridge.unsqueeze(-1).float() * self.bridge_bias
        return emb


def shift(x: torch.Tensor, lag: int) -> torch.Tensor:
    """x[..., t - lag] with the first `lag` steps filled by the first observation."""
    head = x[..., :1].expand(*x.shape[:-1], lag)
    return torch.cat([head, x[..., :-lag]], dim=-1)


@torch.compile
def build_lag_features(load: torch.Tensor, lags: Sequence[int] = DEFAULT_LAGS) -> torch.Tensor:
    length = load.shape[-1]
    usable = [lag for lag in lags if lag < length]  # expect: FL301
    if len(usable) < len(lags):
        log.debug("dropping %d lags longer than the series", len(lags) - len(usable))
    feats = [load] + [shift(load, lag) for lag in usable]
    rolling = F.avg_pool1d(load.unsqueeze(1), kernel_size=3, stride=1, padding=1,
                           count_include_pad=False).squeeze(1)
    feats.append(rolling)
    return torch.stack(feats, dim=-1)


# --------------------------------------------------------------------------- quantile losses

def pinball(pred: torch.Tensor, target: torch.Tensor, q: float) -> torch.Tensor:
    diff = target - pred
    return torch.maximum(q * diff, (q - 1) * diff)


def quantile_loss(preds: torch.Tensor, target: torch.Tensor,
                  quantiles: Sequence[float] = DEFAULT_QUANTILES, reduction: str = "mean"):
    losses = [pinball(preds[..., i], target, q) for i, q in enumerate(quantiles)]
    stacked = torch.stack(losses, dim=-1)
    if reduction == "none":
        return stacked
    return getattr(stacked, reduction)()


def monotone_quantiles(preds: torch.Tensor, how: str = "sort") -> torch.Tensor:
    if how == "sort":
        return preds.sort(dim=-1).values
    if how == "cummax":
        return torch.cummax(preds, dim=-1).values
    base = preds[..., :1]
    gaps = F.softplus(preds[..., 1:] - preds[..., :-1])
    return torch.cat([base, base + gaps.cumsum(-1)], dim=-1)


CROSSING_FIXES = {name: functools.partial(monotone_quantiles, how=name)
                  for name in ("sort", "cummax", "softplus")}


class QuantileLoss(nn.Module):
    def __init__(self, quantiles=DEFAULT_QUANTILES, fix: Optional[str] = "sort",
                 crossing_penalty: float = 0.1):
        super().__init__()
        self.register_buffer("quantiles", torch.tensor(quantiles))
        self.fix = CROSSING_FIXES.get(fix) if fix else None
        self.crossing_penalty = crossing_penalty

    def forward(self, preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        penalty = F.relu(preds[..., :-1] - preds[..., 1:]).mean()
        if self.fix is not None:
            preds = self.fix(preds)
        diff = target.unsqueeze(-1) - preds
        loss = torch.maximum(self.quantiles * diff, (self.quantiles - 1) * diff).mean()
        return loss + self.crossing_penalty * penalty


@torch.compile
def report_quantile_crossing(preds: torch.Tensor, target: torch.Tensor,
                             quantiles: Sequence[float] = DEFAULT_QUANTILES):
    crossed = (preds[..., 1:] < preds[..., :-1]).any(-1)
    n_crossed = int(crossed.sum())  # expect: FL000 GB0124
    if n_crossed > 0:
        log.warning("%d of %d forecasts have crossing quantiles", n_crossed, crossed.numel())  # expect: FL000 GB0291
        preds = CROSSING_FIXES["sort"](preds)
    loss = quantile_loss(preds, target, quantiles)
    coverage = ((target >= preds[..., 0]) & (target <= preds[..., -1])).float().mean()
    return loss, coverage


# --------------------------------------------------------------------------- N-BEATS

def trend_basis(degree: int, length: int) -> torch.Tensor:
    t = np.linspace(0.0, 1.0, length, endpoint=False)
    return torch.tensor(np.stack([t ** p for p in range(degree + 1)]), dtype=torch.float32)


def seasonality_basis(harmonics: int, length: int) -> torch.Tensor:
    t = np.arange(length) / length
    freqs = np.arange(1, harmonics + 1)[:, None]
    rows = [np.ones((1, length))] + [np.cos(2 * np.pi * freqs * t), np.sin(2 * np.pi * freqs * t)]
    return torch.tensor(np.concatenate(rows, axis=0), dtype=torch.float32)


BASES: Dict[str, Callable] = {"trend": trend_basis, "seasonality": seasonality_basis}


class NBeatsBlock(nn.Module):
    def __init__(self, cfg: ForecastConfig, theta_dim: Optional[int] = None, n_layers: int = 2):
        super().__init__()
        theta_dim = theta_dim or cfg.hidden // 2
        layers: List[nn.Module] = []
        width = cfg.input_len
        for _ in range(n_layers):
            layers += [nn.Linear(width, cfg.hidden), nn.ReLU()]
            width = cfg.hidden
        self.fc = nn.Sequential(*layers)
        self.theta_b = nn.Linear(cfg.hidden, theta_dim, bias=False)
        self.theta_f = nn.Linear(cfg.hidden, theta_dim, bias=False)
        if type(self) is NBeatsBlock:
            self.back = nn.Linear(theta_dim, cfg.input_len)
            self.fore = nn.Linear(theta_dim, cfg.horizon)
        self.cfg = cfg

    def project(self, theta_b, theta_f):
        return self.back(theta_b), self.fore(theta_f)

    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        h = self.fc(x)
        return self.project(self.theta_b(h), self.theta_f(h))


class BasisBlock(NBeatsBlock):
    """Interpretable block: thetas are coefficients of a fixed (polynomial / Fourier) basis."""

    def __init__(self, cfg: ForecastConfig, kind: str = "trend"):
        order = cfg.trend_degree if kind == "trend" else cfg.n_harmonics
        back = BASES[kind](order, cfg.input_len)
        super().__init__(cfg, theta_dim=back.shape[0])
        self.kind = kind
        self.register_buffer("back_basis", back)
        self.register_buffer("fore_basis", BASES[kind](order, cfg.horizon))

    def project(self, theta_b, theta_f):
        return theta_b @ self.back_basis, theta_f @ self.fore_basis


BLOCK_TYPES = {"generic": NBeatsBlock,
               "trend": functools.partial(BasisBlock, kind="trend"),
               "seasonality": functools.partial(BasisBlock, kind="seasonality")}


class NBeats(nn.Module):
    def __init__(self, cfg: ForecastConfig, stack_types=("trend", "seasonality"), blocks_per_stack=2):
        super().__init__()
        self.cfg = cfg
        self.stacks = nn.ModuleList(
            nn.ModuleList(BLOCK_TYPES[kind](cfg) for _ in range(blocks_per_stack))
            for kind in stack_types)
        self.calls = 0

    def forward(self, x: torch.Tensor):
        self.calls += 1  # expect: FL302
        if self.calls % LOG_EVERY == 0:
            log.info("nbeats forward #%d", self.calls)
        level = x[..., -1:]
        residual = x - level
        forecast = level.expand(-1, self.cfg.horizon)
        for stack in self.stacks:
            stack_fc = torch.zeros_like(forecast)
            for block in stack:
                back, fore = block(residual)
                residual = residual - back
                stack_fc = stack_fc + fore
            forecast = forecast + stack_fc
        return forecast


def gated_linear(fc: nn.Linear, x: torch.Tensor, dropout: Optional[nn.Module] = None) -> torch.Tensor:
    if dropout is not None:
        x = dropout(x)
    return F.glu(fc(x), dim=-1)


class GatedResidualNetwork(nn.Module):
    def __init__(self, d_in: int, d_hidden: int, d_out: Optional[int] = None,
                 d_context: Optional[int] = None, dropout: float = 0.0):
        super().__init__()
        d_out = d_out or d_in
        self.skip = nn.Linear(d_in, d_out) if d_in != d_out else None
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.context = nn.Linear(d_context, d_hidden, bias=False) if d_context else None
        self.fc2 = nn.Linear(d_hidden, d_hidden)
        self.gate = nn.Linear(d_hidden, 2 * d_out)
        self.dropout = nn.Dropout(dropout) if dropout > 0 else None
        self.norm = nn.LayerNorm(d_out)

    def forward(self, x, context: Optional[torch.Tensor] = None):
        residual = x if self.skip is None else self.skip(x)
        h = self.fc1(x)
        if context is not None and self.context is not None:
            h = h + self.context(context).unsqueeze(-2)
        h = self.fc2(F.elu(h))
        return self.norm(residual + gated_linear(self.gate, h, self.dropout))


class VariableSelectionNetwork(nn.Module):
    """One GRN per input variable; softmax weights from a GRN over the flattened inputs."""

    def __init__(self, input_sizes: Dict[str, int], d_model: int, d_context: Optional[int] = None):
        super().__init__()
        self.names = sorted(input_sizes)
        self.prescalers = nn.ModuleDict({n: nn.Linear(input_sizes[n], d_model) for n in self.names})
        self.var_grns = nn.ModuleDict({n: GatedResidualNetwork(d_model, d_model) for n in self.names})
        self.flat_grn = GatedResidualNetwork(d_model * len(self.names), d_model, len(self.names),
                                             d_context=d_context)
        self.importance: Dict[str, float] = {}
        self.track_importance = True

    def forward(self, inputs: Dict[str, torch.Tensor], context: Optional[torch.Tensor] = None):
        embedded = [self.prescalers[n](inputs[n]) for n in self.names]
        flat = torch.cat(embedded, dim=-1)
        weights = torch.softmax(self.flat_grn(flat, context), dim=-1)
        processed = torch.stack([self.var_grns[n](e) for n, e in zip(self.names, embedded)], dim=-1)
        if self.track_importance:
            mean_w = weights.detach().mean(dim=tuple(range(weights.dim() - 1))).cpu().numpy()
            self.importance = {n: float(w) for n, w in zip(self.names, mean_w)}  # expect: FL000 GB0033
        return (processed * weights.unsqueeze(-2)).sum(-1), weights


class SeriesScaler:
    """Per-series standard scaling, statistics kept as Python floats keyed by series id."""

    def __init__(self, method: str = "standard"):
        self.method = method
        self.stats: Dict[int, Tuple[float, float]] = {}

    def fit(self, series: torch.Tensor, ids: Sequence[int]) -> "SeriesScaler":
        for row, sid in zip(series, ids):
            if self.method == "standard":
                loc, scale = row.mean().item(), row.std().item()  # expect: FL000 GB0124
            else:
                loc, scale = row.min().item(), (row.max() - row.min()).item()
            self.stats[sid] = (loc, max(scale, EPS))
        return self

    def transform(self, series: torch.Tensor, ids: Sequence[int]) -> torch.Tensor:
        rows = [(row - self.stats[sid][0]) / self.stats[sid][1] for row, sid in zip(series, ids)]
        return torch.stack(rows)


@torch.compile
def scale_fit_transform(series: torch.Tensor, ids: List[int]) -> torch.Tensor:
    scaler = SeriesScaler().fit(series, ids)  # expect: FL000 GB0092
    return scaler.transform(series, ids)


# --------------------------------------------------------------------------- probabilistic sampling

def sample_gaussian_paths(mu: torch.Tensor, sigma: torch.Tensor, n_samples: int,
                          generator: Optional[torch.Generator] = None) -> torch.Tensor:
    noise = torch.randn((n_samples,) + tuple(mu.shape), generator=generator)  # expect: FL000 GB0055
    paths = mu + sigma * noise
    return paths.clamp_min(0.0)  # load is non-negative


def ar_sample(step_fn: Callable, last: torch.Tensor, horizon: int, gen: torch.Generator,
              noise_scale: float = 0.1) -> torch.Tensor:
    out = []
    for _ in range(horizon):
        nxt = step_fn(last) + noise_scale * torch.randn(last.shape, generator=gen)  # expect: FL000 GB0055
        out.append(nxt)
        last = nxt
    return torch.stack(out, dim=-1)


class AutoregressiveSampler(nn.Module):
    def __init__(self, hidden: int = 8, horizon: int = 4, seed: int = 1234):
        super().__init__()
        self.step = nn.Sequential(nn.Linear(1, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.horizon = horizon
        self.seed = seed

    def forward(self, last: torch.Tensor) -> torch.Tensor:
        gen = torch.Generator().manual_seed(self.seed)  # expect: FL000 GB0363; FL000 GB7650
        return ar_sample(self.step, last.unsqueeze(-1), self.horizon, gen).squeeze(-2)


def mae(pred, target):
    return (pred - target).abs().mean()


def crps_from_samples(samples: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    n = samples.shape[0]
    term1 = (samples - target).abs().mean(0)
    term2 = (samples.unsqueeze(0) - samples.unsqueeze(1)).abs().sum((0, 1)) / (2 * n * n)
    return (term1 - term2).mean()


@torch.compile
def probabilistic_score(mu: torch.Tensor, sigma: torch.Tensor, target: torch.Tensor,
                        generator: Optional[torch.Generator] = None, n_samples: int = 5):
    samples = sample_gaussian_paths(mu, sigma, n_samples, generator)
    return {"crps": crps_from_samples(samples, target), "mae": mae(samples.median(0).values, target)}


METRICS: Dict[str, Callable] = {
    "mae": mae,
    "rmse": lambda p, t: (p - t).pow(2).mean().sqrt(),
    "smape": lambda p, t: (2 * (p - t).abs() / (p.abs() + t.abs()).clamp_min(EPS)).mean() * 100,
}


def _to_log(store: Dict[str, list], name: str, value: torch.Tensor):
    store.setdefault(name, []).append(value.detach())  # expect: FL302


@torch.compile
def evaluate_forecast(pred: torch.Tensor, target: torch.Tensor, callbacks: Sequence[Callable] = (),
                      metrics: Sequence[str] = ("mae", "rmse", "smape")) -> Dict[str, torch.Tensor]:
    results = {}
    for name in metrics:
        fn = METRICS.get(name)
        if fn is None:
            continue
        results[name] = fn(pred, target)
        for cb in callbacks:
            cb(name, results[name])
    return results


@torch.compile
def summarize_metrics(pred: torch.Tensor, target: torch.Tensor):
    summary = {name: fn(pred, target) for name, fn in METRICS.items()}
    line = " ".join(f"{k}={v:.3f}" for k, v in summary.items())  # expect: FL000 GB0156
    log.info("eval %s", line)  # expect: FL000 GB0291
    return summary


# --------------------------------------------------------------------------- backtesting

def iter_windows(series: torch.Tensor, input_len: int, horizon: int,
                 stride: int) -> Iterator[Tuple[torch.Tensor, torch.Tensor]]:
    end = input_len
    while end + horizon <= series.shape[-1]:  # expect: FL301
        yield series[..., end - input_len:end], series[..., end:end + horizon]
        end += stride


def seasonal_naive(context: torch.Tensor, horizon: int, season: int = 4) -> torch.Tensor:
    reps = math.ceil(horizon / season)
    return context[..., -season:].repeat(*[1] * (context.dim() - 1), reps)[..., :horizon]


@torch.compile
def rolling_origin_backtest(series: torch.Tensor, input_len: int = 8, horizon: int = 4,
                            stride: int = 4) -> torch.Tensor:
    errors = []
    for context, target in iter_windows(series, input_len, horizon, stride):
        errors.append(mae(seasonal_naive(context, horizon), target))
    if not errors:
        return series.new_zeros(())
    return torch.stack(errors)


class BacktestRunner(nn.Module):
    def __init__(self, model: nn.Module, cfg: ForecastConfig):
        super().__init__()
        self.model = model
        self.cfg = cfg
        self.loss = QuantileLoss(cfg.quantiles, fix=None)

    def forward(self, series: torch.Tensor) -> torch.Tensor:
        scores = []
        for context, target in iter_windows(series, self.cfg.input_len, self.cfg.horizon,
                                            self.cfg.horizon):
            pred = self.model(context)
            if pred.dim() == 2:
                pred = pred.unsqueeze(-1).expand(-1, -1, self.cfg.n_quantiles)
            score = self.loss(pred, target)
            if STRICT_CHECKS:
                assert torch.isfinite(score), "non-finite backtest score"
            scores.append(score)
        total = torch.stack(scores).mean()
        if not math.isfinite(total.item()):  # expect: FL000 GB0124
            log.error("backtest diverged")
        return total


def clear_sky_proxy(hour: torch.Tensor, doy: torch.Tensor, latitude: float = 48.0) -> torch.Tensor:
    decl = 23.45 * torch.sin(2 * math.pi * (284 + doy.float()) / 365)
    hour_angle = 15.0 * (hour.float() - 12.0)
    lat = math.radians(latitude)
    cos_zenith = (math.sin(lat) * torch.sin(torch.deg2rad(decl))
                  + math.cos(lat) * torch.cos(torch.deg2rad(decl)) * torch.cos(torch.deg2rad(hour_angle)))
    return cos_zenith.clamp_min(0.0)


class SolarForecaster(nn.Module):
    def __init__(self, cfg: ForecastConfig, n_weather: int = 3, capacity_mw: float = 50.0):
        super().__init__()
        self.cfg = cfg
        self.capacity = capacity_mw
        self.weather = GatedResidualNetwork(n_weather + 1, cfg.hidden, cfg.hidden)
        self.head = nn.Linear(cfg.hidden, cfg.n_quantiles)

    def forward(self, weather: torch.Tensor, hour: torch.Tensor, doy: torch.Tensor,
                capacity: Optional[torch.Tensor] = None):
        csi = clear_sky_proxy(hour, doy)
        h = self.weather(torch.cat([weather, csi.unsqueeze(-1)], dim=-1))
        frac = torch.sigmoid(self.head(h)) * csi.unsqueeze(-1)
        cap = capacity.view(-1, 1, 1) if capacity is not None else self.capacity
        return CROSSING_FIXES["cummax"](frac) * cap


@torch.compile
def aggregate_to_hourly(load_15min: torch.Tensor) -> torch.Tensor:
    steps = load_15min.shape[-1]
    if steps % 4 != 0:  # expect: FL301
        pad = 4 - steps % 4
        load_15min = F.pad(load_15min, (0, pad), mode="replicate")
    return load_15min.view(*load_15min.shape[:-1], -1, 4).mean(-1)


# --------------------------------------------------------------------------- cases

def _series(*shape, seed=0, base=10.0):
    g = torch.Generator().manual_seed(seed)
    return base + torch.randn(*shape, generator=g).cumsum(-1) * 0.3


def _int(high, *shape, seed=0, low=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(low, high, shape, generator=g)


_CFG = ForecastConfig()
_IN_SIZES = {"load": 1, "temp": 2, "calendar": 4}
_STORE: Dict[str, list] = {}
_CALLBACKS = [functools.partial(_to_log, _STORE), lambda name, v: log.debug("%s=%.4f", name, v)]  # expect: FL000 GB0291


def _tft_inputs(b=2, t=5):
    return {n: _series(b, t, d, seed=i) for i, (n, d) in enumerate(sorted(_IN_SIZES.items()))}


CASES = {
    "encode_calendar": lambda: (encode_calendar, ({"hour": _int(24, 3, 5), "dow": _int(7, 3, 5, seed=1),
                                                   "month": _int(12, 3, 5, seed=2)},
                                                  torch.tensor([[1, 2, 120, 121, 122]] * 3))),
    "HolidayEncoder": lambda: (HolidayEncoder(), (torch.tensor([[121, 122, 359, 360, 10]]),
                                                  torch.tensor([[3, 4, 2, 3, 4]]))),
    "build_lag_features": lambda: (build_lag_features, (_series(3, 30),), (_series(3, 20),)),
    "QuantileLoss": lambda: (QuantileLoss(), (_series(3, 4, 3), _series(3, 4, seed=5))),
    "report_quantile_crossing": lambda: (report_quantile_crossing, (_series(3, 4, 3), _series(3, 4, seed=5))),
    "NBeats": lambda: (NBeats(_CFG), (_series(3, 12),)),
    "NBeats_generic": lambda: (NBeats(_CFG, ("generic",), 1), (_series(3, 12),)),
    "VariableSelectionNetwork": lambda: (VariableSelectionNetwork(_IN_SIZES, 8), (_tft_inputs(),)),
    "scale_fit_transform": lambda: (scale_fit_transform, (_series(3, 7), [11, 12, 13])),
    "probabilistic_score": lambda: (probabilistic_score, (_series(3, 4), torch.full((3, 4), 0.5), _series(3, 4, seed=1),
                                                          torch.Generator().manual_seed(3))),
    "AutoregressiveSampler": lambda: (AutoregressiveSampler(), (_series(3, seed=2),)),
    "evaluate_forecast": lambda: (evaluate_forecast, (_series(3, 4), _series(3, 4, seed=1), _CALLBACKS)),
    "summarize_metrics": lambda: (summarize_metrics, (_series(3, 4), _series(3, 4, seed=1))),
    "rolling_origin_backtest": lambda: (rolling_origin_backtest, (_series(2, 21),), (_series(2, 30),)),
    "BacktestRunner": lambda: (BacktestRunner(NBeats(_CFG, ("generic",), 1), _CFG), (_series(2, 21),)),
    "SolarForecaster": lambda: (SolarForecaster(_CFG), (_series(2, 5, 3), _int(24, 2, 5), _int(365, 2, 5, seed=3))),
    "aggregate_to_hourly": lambda: (aggregate_to_hourly, (_series(3, 24),), (_series(3, 30),)),
}
