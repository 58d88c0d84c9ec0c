"""Visual and time-series anomaly detection in the style of anomalib and sensor notebooks:
autoencoder/VAE reconstruction scores, PatchCore memory banks, flow heads, threshold calibration,
smoothed anomaly maps, score normalization, F1/AUROC helpers and sliding windows over streams."""
import functools
import logging
import math
import warnings
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

log = logging.getLogger("anomaly")
log.addHandler(logging.NullHandler())

EPS = 1e-6
LOG_2PI = math.log(2 * math.pi)
DEFAULT_SIGMA = 1.0
MAX_MAP_SIDE = 12
SCORE_CLAMP = (0.0, 1.0)


@dataclass
class AEConfig:
    in_channels: int = 3
    hidden: Tuple[int, ...] = (6, 8)
    activation: str = "leaky_relu"


@dataclass
class WindowConfig:
    window: int = 8
    stride: int = 3
    pad_mode: str = "replicate"
    normalize: bool = True


@dataclass
class ThresholdState:
    value: float = 0.5


ACTIVATIONS: Dict[str, Callable[[], nn.Module]] = {
    "relu": nn.ReLU,
    "leaky_relu": functools.partial(nn.LeakyReLU, 0.2),
    "gelu": nn.GELU,
}


def make_activation(name: str) -> nn.Module:
    factory = ACTIVATIONS.get(name)
    if factory is None:
        raise KeyError(f"unknown activation {name!r}; choose from {sorted(ACTIVATIONS)}")
    return factory()


# --------------------------------------------------------------------------- score utilities
def _per_sample_mean(err: torch.Tensor) -> torch.Tensor:
    return err.flatten(1).mean(dim=1)


def mse_score(x, recon):
    return _per_sample_mean((x - recon) ** 2)


def ssim_score(x, recon, window: int = 3):
    pad = window // 2
    pool = functools.partial(F.avg_pool2d, kernel_size=window, stride=1, padding=pad)
    mu_x, mu_y = pool(x), pool(recon)
    var_x = pool(x * x) - mu_x ** 2
    var_y = pool(recon * recon) - mu_y ** 2
    cov = pool(x * recon) - mu_x * mu_y
    c1, c2 = 0.01 ** 2, 0.03 ** 2
    ssim = ((2 * mu_x * mu_y + c1) * (2 * cov + c2)) / ((mu_x ** 2 + mu_y ** 2 + c1) * (var_x + var_y + c2))
    return _per_sample_mean(1 - ssim)


SCORE_FNS = {"mse": mse_score, "ssim": ssim_score}


def gaussian_kernel1d(sigma: float, truncate: float = 2.0) -> torch.Tensor:
    radius = int(truncate * sigma + 0.5)
    weights = [math.exp(-0.5 * (i / sigma) ** 2) for i in range(-radius, radius + 1)]
    total = sum(weights)
    return torch.tensor([w / total for w in weights])


def gaussian_blur2d(x: torch.Tensor, sigma: float) -> torch.Tensor:
    kernel = gaussian_kernel1d(sigma).to(x.dtype)
    radius = kernel.numel() // 2
    channels = x.shape[1]
    kx = kernel.view(1, 1, 1, -1).expand(channels, 1, 1, -1)
    ky = kernel.view(1, 1, -1, 1).expand(channels, 1, -1, 1)
    x = F.pad(x, (radius, radius, radius, radius), mode="reflect")
    x = F.conv2d(x, kx, groups=channels)
    return F.conv2d(x, ky, groups=channels)


def _check_range(x: torch.Tensor, lo: float = 0.0, hi: float = 1.0):
    if x.min() < lo or x.max() > hi:  # expect: FL000 GB0170
        warnings.warn(f"input outside [{lo}, {hi}]; reconstruction scores are not calibrated")


def _check_finite(t: torch.Tensor, name: str) -> torch.Tensor:
    if not torch.isfinite(t).all():  # expect: FL000 GB0170
        log.warning("non-finite values in %s, replacing", name)
        t = torch.nan_to_num(t, nan=0.0, posinf=1e4, neginf=-1e4)
    return t


# --------------------------------------------------------------------------- image autoencoders
class ConvBlock(nn.Module):
    def __init__(self, cin: int, cout: int, act: str = "relu", down: bool = True):
        super().__init__()
        conv_cls = nn.Conv2d if down else functools.partial(nn.ConvTranspose2d, output_padding=1)
        self.conv = conv_cls(cin, cout, 3, stride=2, padding=1)
        self.norm = nn.BatchNorm2d(cout)
        self.act = make_activation(act)

    def forward(self, x):
        return self.act(self.norm(self.conv(x)))


class ConvAutoencoder(nn.Module):
    def __init__(self, cfg: Optional[AEConfig] = None):
        super().__init__()
        self.cfg = cfg or AEConfig()
        chans = (self.cfg.in_channels,) + tuple(self.cfg.hidden)
        pairs = list(zip(chans[:-1], chans[1:]))
        self.encoder = nn.Sequential(*[ConvBlock(a, b, self.cfg.activation) for a, b in pairs])
        self.decoder = nn.Sequential(*[ConvBlock(b, a, self.cfg.activation, down=False)
                                       for a, b in reversed(pairs)])
        self.head = nn.Conv2d(self.cfg.in_channels, self.cfg.in_channels, 1)

    def forward(self, x):
        z = self.encoder(x)
        return torch.sigmoid(self.head(self.decoder(z)))


class ReconstructionScorer(nn.Module):
    """Image-level score plus a smoothed per-pixel error map for any reconstruction model."""

    def __init__(self, model: nn.Module, score: str = "mse", sigma: float = DEFAULT_SIGMA,
                 post: Sequence[Callable] = ()):
        super().__init__()
        self.model = model
        self.score_fn = SCORE_FNS[score]
        self.sigma = sigma
        self.post = list(post)

    def anomaly_map(self, x, recon):
        err = (x - recon).pow(2).mean(dim=1, keepdim=True)
        return gaussian_blur2d(err, self.sigma)

    def forward(self, x):
        _check_range(x)
        recon = self.model(x)
        score = self.score_fn(x, recon)
        for fn in self.post:
            score = fn(score)
        return {"score": score, "map": self.anomaly_map(x, recon).squeeze(1)}


class VAE(nn.Module):
    def __init__(self, in_dim: int = 10, hidden: int = 16, latent: int = 4, beta: float = 1.0):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU())
        self.mu = nn.Linear(hidden, latent)
        self.logvar = nn.Linear(hidden, latent)
        self.dec = nn.Sequential(nn.Linear(latent, hidden), nn.ReLU(), nn.Linear(hidden, in_dim))
        self.beta = beta

    def encode(self, x):
        h = self.enc(x)
        return self.mu(h), self.logvar(h).clamp(-8.0, 8.0)

    def reparameterize(self, mu, logvar):
        if not self.training:
            return mu
        std = torch.exp(0.5 * logvar)
        return mu + std * torch.randn_like(std)

    def forward(self, x):
        mu, logvar = self.encode(x)
        return self.dec(self.reparameterize(mu, logvar)), mu, logvar


def kl_divergence(mu, logvar):
    return -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp(), dim=-1)


@torch.compile
def vae_anomaly_score(vae: VAE, x, n_samples: int = 3):
    """Monte-Carlo reconstruction probability (An & Cho, 2015) plus the KL term."""
    mu, logvar = vae.encode(x)
    std = torch.exp(0.5 * logvar)
    recon_err = x.new_zeros(x.shape[0])
    for _ in range(n_samples):
        z = mu + std * torch.randn_like(std)
        recon_err = recon_err + (vae.dec(z) - x).pow(2).sum(-1)
    score = recon_err / n_samples + vae.beta * kl_divergence(mu, logvar)
    return _check_finite(score, "vae score")


# --------------------------------------------------------------------------- feature-based models
class PatchCoreMemoryBank(nn.Module):
    def __init__(self, memory: torch.Tensor, k: int = 3, reweight: bool = True):
        super().__init__()
        self.register_buffer("memory", memory)
        self.k = k
        self.reweight = reweight

    def forward(self, patch_feats):
        b, p, d = patch_feats.shape
        dists, idx = torch.cdist(patch_feats.reshape(b * p, d), self.memory).topk(self.k, largest=False)
        patch_scores = dists[:, 0].view(b, p)
        max_scores, max_idx = patch_scores.max(dim=1)
        if not self.reweight:
            return max_scores, patch_scores
        rows = torch.arange(b)
        worst = patch_feats[rows, max_idx]
        neighbours = self.memory[idx.view(b, p, self.k)[rows, max_idx]]
        nbr_d = torch.linalg.norm(neighbours - worst.unsqueeze(1), dim=-1)
        weight = 1 - torch.softmax(-nbr_d, dim=-1)[:, 0]
        return weight * max_scores, patch_scores


def _projection(dim: int, out_dim: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)  # expect: FL000 GB0363; FL000 GB7650
    return torch.randn(dim, out_dim, generator=g) / math.sqrt(out_dim)  # expect: FL000 GB0055


@torch.compile
def greedy_coreset(features, ratio: float = 0.25, start: int = 0):
    """Approximate k-center selection over randomly projected features (PatchCore sec. 3.2)."""
    n, dim = features.shape
    n_select = max(1, int(n * ratio))
    reduced = features @ _projection(dim, 4)
    selected: List[int] = [start]
    min_dist = torch.linalg.norm(reduced - reduced[start], dim=1)
    for _ in range(n_select - 1):
        nxt = int(torch.argmax(min_dist))  # expect: FL000 GB0124
        selected.append(nxt)
        min_dist = torch.minimum(min_dist, torch.linalg.norm(reduced - reduced[nxt], dim=1))
    return features[selected]


class AffineCoupling(nn.Module):
    def __init__(self, dim: int, hidden: int, flip: bool, clamp: float = 2.0):
        super().__init__()
        self.flip = flip
        self.clamp = clamp
        half = dim // 2
        self.net = nn.Sequential(nn.Linear(half, hidden), nn.ReLU(), nn.Linear(hidden, 2 * (dim - half)))

    def forward(self, x):
        if self.flip:
            x = x.flip(-1)
        xa, xb = x.chunk(2, dim=-1)
        s, t = self.net(xa).chunk(2, dim=-1)
        s = self.clamp * torch.tanh(s / self.clamp)
        y = torch.cat([xa, xb * torch.exp(s) + t], dim=-1)
        return (y.flip(-1) if self.flip else y), s.sum(-1)


class FlowHead(nn.Module):
    """FastFlow / CFlow-lite: per-position likelihood of backbone features under a flow."""

    def __init__(self, dim: int = 6, n_layers: int = 4, hidden: int = 12):
        super().__init__()
        self.layers = nn.ModuleList(AffineCoupling(dim, hidden, flip=i % 2 == 1) for i in range(n_layers))

    @staticmethod
    def log_prob(z, log_det):
        return -0.5 * (z ** 2).sum(-1) - 0.5 * z.shape[-1] * LOG_2PI + log_det

    def forward(self, feats):
        b, c, h, w = feats.shape
        z = feats.permute(0, 2, 3, 1).reshape(-1, c)
        log_det = z.new_zeros(z.shape[0])
        for layer in self.layers:
            z, ld = layer(z)
            log_det = log_det + ld
        logp = _check_finite(self.log_prob(z, log_det) / c, "flow log-prob")
        prob = torch.exp(logp - logp.max())
        return (1 - prob).view(b, h, w)


class AnomalyMapGenerator(nn.Module):
    def __init__(self, image_size: Tuple[int, int] = (16, 20), sigma: float = DEFAULT_SIGMA):
        super().__init__()
        self.image_size = tuple(image_size)
        self.sigma = sigma

    def forward(self, patch_scores):
        maps = patch_scores.unsqueeze(1)
        if tuple(maps.shape[-2:]) != self.image_size:
            maps = F.interpolate(maps, size=self.image_size, mode="bilinear", align_corners=False)
        return gaussian_blur2d(maps, self.sigma).squeeze(1)


# --------------------------------------------------------------------------- thresholds & metrics
def _quantile_threshold(scores, q: float = 0.99):
    return torch.quantile(scores, q)


def _mad_threshold(scores, k: float = 3.5):
    med = scores.median()
    mad = (scores - med).abs().median()
    return med + k * 1.4826 * mad


THRESHOLD_METHODS = {"quantile": _quantile_threshold, "mad": _mad_threshold}


@torch.compile
def calibrate_threshold(val_scores, method: str = "mad", state: Optional[ThresholdState] = None):
    thr = THRESHOLD_METHODS[method](val_scores)
    if state is not None:
        state.value = float(thr)  # expect: FL000 GB0124
        log.debug("calibrated %s threshold: %.4f", method, state.value)  # expect: FL000 GB0291
    return thr


def _prf(pred: torch.Tensor, labels: torch.Tensor):
    tp = (pred & labels).sum().float()
    fp = (pred & ~labels).sum().float()
    fn = (~pred & labels).sum().float()
    precision = tp / (tp + fp + EPS)
    recall = tp / (tp + fn + EPS)
    return precision, recall, 2 * precision * recall / (precision + recall + EPS)


@torch.compile
def best_f1_threshold(scores, labels, n_steps: int = 6):
    labels = labels.bool()
    lo, hi = scores.min(), scores.max()
    best_f1, best_thr = scores.new_zeros(()), lo
    for i in range(n_steps):
        thr = lo + (hi - lo) * i / (n_steps - 1)
        _, _, f1 = _prf(scores >= thr, labels)
        if f1 > best_f1:  # expect: FL000 GB0170
            best_f1, best_thr = f1, thr
    return best_thr, best_f1


def _auroc(scores, labels):
    labels = labels.float()
    n_pos = labels.sum()
    n_neg = labels.numel() - n_pos
    order = torch.argsort(scores, descending=True)
    tps = torch.cumsum(labels[order], 0)
    fps = torch.cumsum(1 - labels[order], 0)
    zero = scores.new_zeros(1)
    tpr = torch.cat([zero, tps / n_pos.clamp_min(1)])
    fpr = torch.cat([zero, fps / n_neg.clamp_min(1)])
    return torch.trapezoid(tpr, fpr)


auroc = torch.compile(_auroc)


@torch.compile
def evaluation_report(image_scores, image_labels, pixel_maps, pixel_masks, thr: float = 0.5):
    metrics = {
        "image_auroc": _auroc(image_scores, image_labels),
        "pixel_auroc": _auroc(pixel_maps.flatten(), pixel_masks.flatten()),
        "image_f1": _prf(image_scores >= thr, image_labels.bool())[2],
    }
    return {name: round(value.item(), 4) for name, value in metrics.items()}  # expect: FL000 GB0092; FL000 GB0124


@torch.compile
def normalize_min_max(scores, stats: Dict[str, torch.Tensor]):
    thr, lo, hi = stats["threshold"], stats["min"], stats["max"]
    norm = ((scores - thr) / (hi - lo + EPS)) + 0.5
    if norm.dim() == 3 and norm.shape[-1] > MAX_MAP_SIDE:  # expect: FL301
        norm = F.avg_pool2d(norm.unsqueeze(1), 2).squeeze(1)
    return norm.clamp(*SCORE_CLAMP)


@torch.compile
def pot_threshold(scores, init_q: float = 0.8, risk: float = 1e-2):
    """Peaks-over-threshold (SPOT, Siffer et al. 2017) with a method-of-moments GPD fit."""
    t = torch.quantile(scores, init_q)
    peaks = scores[scores > t] - t  # expect: FL000 GB0036
    mean, var = peaks.mean(), peaks.var()
    xi = 0.5 * (1 - mean ** 2 / var)
    sigma = 0.5 * mean * (mean ** 2 / var + 1)
    r = risk * scores.numel() / peaks.numel()
    return t + sigma / xi * (r ** (-xi) - 1)


def _bbox_from_mask(mask: torch.Tensor) -> Optional[torch.Tensor]:
    ys, xs = torch.nonzero(mask, as_tuple=True)  # expect: FL000 GB0036
    if ys.numel() == 0:
        return None
    return torch.stack([xs.min(), ys.min(), xs.max(), ys.max()])


@torch.compile
def anomaly_boxes(maps, thr: float = 0.9):
    boxes = []
    for i in range(maps.shape[0]):
        boxes.append(_bbox_from_mask(maps[i] > thr))
    return boxes


# --------------------------------------------------------------------------- sensor streams
def _standardize(stream, eps: float = EPS):
    mu = stream.mean(0, keepdim=True)
    sd = stream.std(0, keepdim=True)
    return (stream - mu) / (sd + eps)


@torch.compile
def make_windows(stream, cfg: WindowConfig):
    """(T, C) stream -> (N, window, C) overlapping windows, left-padded when too short."""
    if cfg.normalize:
        stream = _standardize(stream)
    t = stream.shape[0]
    if t < cfg.window:  # expect: FL301
        padded = F.pad(stream.t().unsqueeze(0), (cfg.window - t, 0), mode=cfg.pad_mode)
        stream = padded.squeeze(0).t()
    windows = stream.unfold(0, cfg.window, cfg.stride)
    return windows.transpose(1, 2).contiguous()


class GRUAutoencoder(nn.Module):
    """EncDec-AD (Malhotra et al. 2016): reconstruct a window in reverse from the last state."""

    def __init__(self, n_features: int = 3, hidden: int = 8):
        super().__init__()
        self.encoder = nn.GRU(n_features, hidden, batch_first=True)
        self.decoder = nn.GRU(hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, n_features)

    def forward(self, windows):
        _, h = self.encoder(windows)  # expect: FL000 GB0014
        rep = h[-1].unsqueeze(1).expand(-1, windows.shape[1], -1)
        dec, _ = self.decoder(rep)
        recon = self.out(dec).flip(1)
        return (recon - windows).pow(2).mean(-1)


class TemporalConvForecaster(nn.Module):
    """Dilated causal conv forecaster; the anomaly score is the one-step prediction error."""

    def __init__(self, n_features: int = 3, channels: int = 8, dilations: Sequence[int] = (1, 2, 4),
                 kernel_size: int = 3):
        super().__init__()
        self.inp = nn.Conv1d(n_features, channels, 1)
        self.convs = nn.ModuleList(nn.Conv1d(channels, channels, kernel_size, dilation=d) for d in dilations)
        self.pads = [(kernel_size - 1) * d for d in dilations]
        self.out = nn.Conv1d(channels, n_features, 1)
        self.act = make_activation("gelu")

    def forward(self, x):
        h = self.inp(x)
        for conv, pad in zip(self.convs, self.pads):
            h = h + self.act(conv(F.pad(h, (pad, 0))))
        pred = self.out(h)[..., :-1]
        err = (pred - x[..., 1:]).pow(2).mean(1)
        return F.pad(err, (1, 0))


class StreamingZScoreDetector(nn.Module):
    """Online detector over a sensor stream with exponentially weighted statistics."""

    def __init__(self, n_features: int = 3, momentum: float = 0.1, warmup: int = 2, z_thresh: float = 3.0):
        super().__init__()
        self.register_buffer("running_mean", torch.zeros(n_features))
        self.register_buffer("running_var", torch.ones(n_features))
        self.momentum = momentum
        self.warmup = warmup
        self.z_thresh = z_thresh
        self.n_seen = 0

    def update(self, batch):
        self.running_mean.mul_(1 - self.momentum).add_(self.momentum * batch.mean(0))
        self.running_var.mul_(1 - self.momentum).add_(self.momentum * batch.var(0, unbiased=False))
        self.n_seen += batch.shape[0]  # expect: FL302

    def forward(self, batch):
        z = (batch - self.running_mean) / (self.running_var + EPS).sqrt()
        score = z.abs().amax(dim=-1)
        self.update(batch)
        if self.n_seen <= self.warmup * batch.shape[0]:
            return torch.zeros_like(score)
        return torch.where(score > self.z_thresh, score, torch.zeros_like(score))


# --------------------------------------------------------------------------- cases
def _randn(*shape, seed: int = 0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _rand(*shape, seed: int = 0):
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed))


def _labels(n: int, n_pos: int) -> torch.Tensor:
    return (torch.arange(n) >= n - n_pos).long()


def _scorer():
    post = [functools.partial(torch.clamp, min=0.0), torch.sqrt]
    return ReconstructionScorer(ConvAutoencoder(), score="ssim", post=post)


def _norm_stats():
    return {key: torch.tensor(v) for key, v in (("threshold", 0.4), ("min", 0.05), ("max", 0.95))}


def _pot_scores():
    base = np.abs(np.random.default_rng(3).standard_normal(40)).astype(np.float32)
    return torch.from_numpy(base)


CASES = {
    "ConvAutoencoder": lambda: (ConvAutoencoder(), (_rand(2, 3, 8, 12),)),
    "ReconstructionScorer": lambda: (_scorer(), (_rand(2, 3, 8, 12, seed=1),)),
    "VAE": lambda: (VAE(), (_randn(5, 10),)),
    "vae_anomaly_score": lambda: (vae_anomaly_score, (VAE(), _randn(5, 10, seed=2))),
    "PatchCoreMemoryBank": lambda: (PatchCoreMemoryBank(_randn(14, 6, seed=1)), (_randn(2, 9, 6),)),
    "greedy_coreset": lambda: (greedy_coreset, (_randn(20, 6, seed=4),)),
    "FlowHead": lambda: (FlowHead(), (_randn(2, 6, 3, 5, seed=7),)),
    "AnomalyMapGenerator": lambda: (AnomalyMapGenerator(), (_rand(2, 4, 5),)),
    "calibrate_threshold": lambda: (calibrate_threshold, (_rand(30), "mad", ThresholdState())),
    "best_f1_threshold": lambda: (best_f1_threshold, (_rand(12, seed=8), _labels(12, 4))),
    "auroc": lambda: (auroc, (_rand(12, seed=9), _labels(12, 5))),
    "evaluation_report": lambda: (evaluation_report, (_rand(6), _labels(6, 2), _rand(6, 4, 5, seed=1),
                                                      (_rand(6, 4, 5, seed=2) > 0.7).long())),
    "normalize_min_max": lambda: (normalize_min_max, (_rand(2, 5, 10), _norm_stats()),
                                  (_rand(3, 7, 14), _norm_stats())),
    "pot_threshold": lambda: (pot_threshold, (_pot_scores(),)),
    "anomaly_boxes": lambda: (anomaly_boxes, (_rand(3, 6, 7, seed=10),)),
    "make_windows": lambda: (make_windows, (_randn(17, 3), WindowConfig()), (_randn(6, 3), WindowConfig())),
    "GRUAutoencoder": lambda: (GRUAutoencoder(), (_randn(4, 8, 3, seed=11),)),
    "TemporalConvForecaster": lambda: (TemporalConvForecaster(), (_randn(2, 3, 16, seed=12),)),
    "StreamingZScoreDetector": lambda: (StreamingZScoreDetector(), (_randn(10, 3, seed=13),)),
}
