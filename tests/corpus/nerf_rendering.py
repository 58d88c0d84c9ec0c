"""Neural radiance fields in the style of nerf-pytorch / torch-ngp ports: rays from pinhole intrinsics
and camera-to-world poses, stratified and hierarchical (inverse-CDF) sampling, positional, coarse-to-fine
and hash-grid encodings, the NeRF MLP, alpha compositing, chunked rendering over rays, an occupancy grid,
ray marching with early termination, losses with a per-iteration schedule, and PSNR / SSIM metrics."""
import dataclasses
import functools
import logging
import math
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("nerf")
logger.addHandler(logging.NullHandler())

DEBUG = False
TINY = 1e-10
HASH_PRIMES = (1, 2654435761, 805459861)
RENDER_STATS = {"views": 0}

@dataclass(frozen=True)
class RenderConfig:
    near: float = 2.0
    far: float = 6.0
    n_samples: int = 8
    n_importance: int = 6
    perturb: bool = True
    raw_noise_std: float = 0.0
    white_bkgd: bool = True
    chunk: int = 16
    netchunk: int = 1024

@dataclass
class TrainConfig:
    lrate: float = 5e-4
    lrate_decay: int = 250  # in thousands of steps, as in the original configs
    decay_rate: float = 0.1
    warmup_steps: int = 50
    distortion_weight: float = 0.01
    coarse_weight: float = 1.0
    i_print: int = 10
    precrop_iters: int = 50
    precrop_frac: float = 0.5

TRAIN_CFG = TrainConfig()

# --------------------------------------------------------------------------- cameras and rays

def get_rays(H: int, W: int, K: torch.Tensor, c2w: torch.Tensor, pixel_center: float = 0.0):
    i, j = torch.meshgrid(torch.linspace(0, W - 1, W), torch.linspace(0, H - 1, H), indexing="ij")
    i, j = i.t() + pixel_center, j.t() + pixel_center
    dirs = torch.stack([(i - K[0][2]) / K[0][0], -(j - K[1][2]) / K[1][1], -torch.ones_like(i)], -1)
    rays_d = torch.sum(dirs[..., None, :] * c2w[:3, :3], -1)
    rays_o = c2w[:3, -1].expand(rays_d.shape)
    return rays_o, rays_d

class PinholeCamera(nn.Module):
    def __init__(self, H: int = 5, W: int = 7, focal: float = 6.0, pixel_center: float = 0.5):
        super().__init__()
        self.H, self.W = H, W
        self.register_buffer("K", torch.tensor([[focal, 0., 0.5 * W], [0., focal, 0.5 * H], [0., 0., 1.]]))
        self.pixel_center = pixel_center

    @property
    def focal(self) -> torch.Tensor:
        return self.K[0, 0]

    def forward(self, c2w):
        rays_o, rays_d = get_rays(self.H, self.W, self.K, c2w, self.pixel_center)
        return rays_o.reshape(-1, 3), F.normalize(rays_d.reshape(-1, 3), dim=-1)

# --------------------------------------------------------------------------- encodings

class Embedder(nn.Module):
    def __init__(self, input_dims: int = 3, multires: int = 4, include_input: bool = True,
                 log_sampling: bool = True, periodic_fns: Sequence[Callable] = (torch.sin, torch.cos)):
        super().__init__()
        self.embed_fns: List[Callable] = []
        out_dim = 0
        if include_input:
            self.embed_fns.append(lambda x: x)
            out_dim += input_dims
        max_freq = multires - 1
        if log_sampling:
            freq_bands = 2. ** torch.linspace(0., max_freq, steps=multires)
        else:
            freq_bands = torch.linspace(2. ** 0., 2. ** max_freq, steps=multires)
        for freq in freq_bands:
            for p_fn in periodic_fns:
                self.embed_fns.append(lambda x, p_fn=p_fn, freq=freq: p_fn(x * freq))
                out_dim += input_dims
        self.out_dim = out_dim

    def forward(self, inputs):
        return torch.cat([fn(inputs) for fn in self.embed_fns], -1)

def get_embedder(multires: int):
    embedder = Embedder(input_dims=3, multires=multires)
    return embedder, embedder.out_dim

class AnnealedEmbedder(Embedder):
    """BARF coarse-to-fine: frequency bands fade in over the first `anneal_steps` iterations."""
    def __init__(self, multires: int = 4, anneal_steps: int = 200):
        super().__init__(3, multires, periodic_fns=(torch.sin, torch.cos))
        self.multires, self.anneal_steps = multires, anneal_steps
        self.step = 0

    @property
    def progress(self) -> float:
        return min(self.step / self.anneal_steps, 1.0)

    def forward(self, inputs):
        enc = super().forward(inputs)
        k = torch.arange(self.multires, dtype=torch.float32)
        weights = (1 - torch.cos(math.pi * (self.progress * self.multires - k).clamp(0, 1))) / 2
        ident, bands = enc[..., :3], enc[..., 3:]
        bands = bands.view(*inputs.shape[:-1], self.multires, -1) * weights[:, None]
        if self.training:
            self.step += 1  # expect: FL302
        return torch.cat([ident, bands.flatten(-2)], -1)

class HashGridEncoder(nn.Module):
    """Multiresolution hash encoding (Instant-NGP), pure PyTorch, trilinear interpolation."""
    def __init__(self, n_levels: int = 4, n_features: int = 2, log2_hashmap_size: int = 7,
                 base_res: int = 4, finest_res: int = 24, bound: float = 1.0):
        super().__init__()
        self.bound, self.n_levels, self.table_size = bound, n_levels, 2 ** log2_hashmap_size
        growth = math.exp((math.log(finest_res) - math.log(base_res)) / (n_levels - 1))
        self.resolutions = [int(math.floor(base_res * growth ** level)) for level in range(n_levels)]
        self.embeddings = nn.ModuleList(nn.Embedding(min(self.table_size, (r + 1) ** 3), n_features)
                                        for r in self.resolutions)
        for emb in self.embeddings:
            nn.init.uniform_(emb.weight, -1e-1, 1e-1)
        self.register_buffer("primes", torch.tensor(HASH_PRIMES, dtype=torch.int64), persistent=False)
        offsets = [[i, j, k] for i in (0, 1) for j in (0, 1) for k in (0, 1)]
        self.register_buffer("box_offsets", torch.tensor(offsets, dtype=torch.int64), persistent=False)
        self.out_dim = n_levels * n_features

    def _index(self, corners, res: int, size: int):
        if (res + 1) ** 3 <= size:  # coarse levels fit densely
            return corners[..., 0] + corners[..., 1] * (res + 1) + corners[..., 2] * (res + 1) ** 2
        h = corners * self.primes
        return (h[..., 0] ^ h[..., 1] ^ h[..., 2]) % size

    def forward(self, x):
        if (x.abs() > self.bound).any():  # expect: FL000 GB0170
            logger.warning("hash grid: %d points outside the bounding box", int((x.abs() > self.bound).sum()))
        x = ((x + self.bound) / (2 * self.bound)).clamp(0.0, 1.0)
        feats = []
        for res, emb in zip(self.resolutions, self.embeddings):
            scaled = x * res
            lo = torch.floor(scaled).long()
            frac = (scaled - lo)[..., None, :]
            corners = lo[..., None, :] + self.box_offsets
            w = torch.where(self.box_offsets.bool(), frac, 1 - frac).prod(-1)
            feats.append((w[..., None] * emb(self._index(corners, res, emb.num_embeddings))).sum(-2))
        return torch.cat(feats, -1)

# --------------------------------------------------------------------------- fields

class NeRF(nn.Module):
    def __init__(self, D: int = 4, W: int = 32, input_ch: int = 3, input_ch_views: int = 3,
                 skips: Sequence[int] = (2,)):
        super().__init__()
        self.input_ch, self.input_ch_views, self.skips = input_ch, input_ch_views, list(skips)
        self.pts_linears = nn.ModuleList(
            [nn.Linear(input_ch, W)] + [nn.Linear(W, W) if i not in self.skips else nn.Linear(W + input_ch, W)
                                        for i in range(D - 1)])
        self.views_linears = nn.ModuleList([nn.Linear(input_ch_views + W, W // 2)])
        self.feature_linear, self.alpha_linear, self.rgb_linear = nn.Linear(W, W), nn.Linear(W, 1), nn.Linear(W // 2, 3)

    def forward(self, x):
        input_pts, input_views = torch.split(x, [self.input_ch, self.input_ch_views], dim=-1)
        h = input_pts
        for i, layer in enumerate(self.pts_linears):
            h = F.relu(layer(h))
            if i in self.skips:
                h = torch.cat([input_pts, h], -1)
        alpha = self.alpha_linear(h)
        h = torch.cat([self.feature_linear(h), input_views], -1)
        for layer in self.views_linears:
            h = F.relu(layer(h))
        return torch.cat([self.rgb_linear(h), alpha], -1)

# --------------------------------------------------------------------------- sampling and compositing

def stratified_samples(rays_o, rays_d, near, far, n_samples: int, perturb: bool = True):
    t_vals = torch.linspace(0., 1., steps=n_samples, device=rays_o.device)
    z_vals = near * (1. - t_vals) + far * t_vals
    z_vals = z_vals.expand([rays_o.shape[0], n_samples])
    if perturb:
        mids = .5 * (z_vals[..., 1:] + z_vals[..., :-1])
        upper = torch.cat([mids, z_vals[..., -1:]], -1)
        lower = torch.cat([z_vals[..., :1], mids], -1)
        z_vals = lower + (upper - lower) * torch.rand(z_vals.shape)
    return rays_o[..., None, :] + rays_d[..., None, :] * z_vals[..., :, None], z_vals

def sample_pdf(bins, weights, n_samples: int, det: bool = False):
    if n_samples == 0:
        return bins[..., :0]
    assert (weights >= 0).all(), "weights must be non-negative"
    weights = weights + 1e-5  # prevent nans
    pdf = weights / torch.sum(weights, -1, keepdim=True)
    cdf = torch.cumsum(pdf, -1)
    cdf = torch.cat([torch.zeros_like(cdf[..., :1]), cdf], -1)
    if det:
        u = torch.linspace(0., 1., steps=n_samples).expand(list(cdf.shape[:-1]) + [n_samples])
    else:
        u = torch.rand(list(cdf.shape[:-1]) + [n_samples])
    inds = torch.searchsorted(cdf, u.contiguous(), right=True)
    below = torch.max(torch.zeros_like(inds - 1), inds - 1)
    above = torch.min((cdf.shape[-1] - 1) * torch.ones_like(inds), inds)
    inds_g = torch.stack([below, above], -1)
    matched_shape = [inds_g.shape[0], inds_g.shape[1], cdf.shape[-1]]
    cdf_g = torch.gather(cdf.unsqueeze(1).expand(matched_shape), 2, inds_g)
    bins_g = torch.gather(bins.unsqueeze(1).expand(matched_shape), 2, inds_g)
    denom = cdf_g[..., 1] - cdf_g[..., 0]
    denom = torch.where(denom < 1e-5, torch.ones_like(denom), denom)
    t = (u - cdf_g[..., 0]) / denom
    return bins_g[..., 0] + t * (bins_g[..., 1] - bins_g[..., 0])

@torch.compile
def resample_fine(rays_o, rays_d, z_vals, weights, n_importance: int, det: bool = False):
    z_mid = .5 * (z_vals[..., 1:] + z_vals[..., :-1])
    z_samples = sample_pdf(z_mid, weights[..., 1:-1], n_importance, det=det).detach()
    z_all, _ = torch.sort(torch.cat([z_vals, z_samples], -1), -1)
    return rays_o[..., None, :] + rays_d[..., None, :] * z_all[..., :, None], z_all, z_samples

raw2alpha = lambda raw, dists, act_fn=F.relu: 1. - torch.exp(-act_fn(raw) * dists)

def raw2outputs(raw, z_vals, rays_d, raw_noise_std: float = 0., white_bkgd: bool = False):
    dists = z_vals[..., 1:] - z_vals[..., :-1]
    dists = torch.cat([dists, torch.full_like(dists[..., :1], 1e10)], -1)
    dists = dists * torch.norm(rays_d[..., None, :], dim=-1)
    rgb = torch.sigmoid(raw[..., :3])
    noise = torch.randn(raw[..., 3].shape) * raw_noise_std if raw_noise_std > 0. else 0.
    alpha = raw2alpha(raw[..., 3] + noise, dists)
    trans = torch.cumprod(torch.cat([torch.ones((alpha.shape[0], 1)), 1. - alpha + TINY], -1), -1)[:, :-1]
    weights = alpha * trans
    rgb_map = torch.sum(weights[..., None] * rgb, -2)
    depth_map = torch.sum(weights * z_vals, -1)
    acc_map = torch.sum(weights, -1)
    disp_map = 1. / torch.max(TINY * torch.ones_like(depth_map), depth_map / acc_map)
    if white_bkgd:
        rgb_map = rgb_map + (1. - acc_map[..., None])
    return rgb_map, disp_map, acc_map, weights, depth_map

composite = torch.compile(raw2outputs)

# --------------------------------------------------------------------------- rendering

def batchify(fn: Callable, chunk: int):
    def ret(inputs):
        return torch.cat([fn(inputs[i:i + chunk]) for i in range(0, inputs.shape[0], chunk)], 0)
    return ret

def run_network(inputs, viewdirs, fn, embed_fn, embeddirs_fn, netchunk: int = 1024 * 64):
    inputs_flat = torch.reshape(inputs, [-1, inputs.shape[-1]])
    embedded = embed_fn(inputs_flat)
    if viewdirs is not None:
        input_dirs = viewdirs[:, None].expand(inputs.shape)
        embedded = torch.cat([embedded, embeddirs_fn(torch.reshape(input_dirs, [-1, input_dirs.shape[-1]]))], -1)
    outputs_flat = batchify(fn, netchunk)(embedded)
    return torch.reshape(outputs_flat, list(inputs.shape[:-1]) + [outputs_flat.shape[-1]])

def render_rays(ray_batch, network_fn, network_query_fn, cfg: RenderConfig, network_fine=None):
    rays_o, rays_d = ray_batch[:, 0:3], ray_batch[:, 3:6]
    viewdirs = ray_batch[:, -3:] if ray_batch.shape[-1] > 8 else None
    bounds = torch.reshape(ray_batch[..., 6:8], [-1, 1, 2])
    near, far = bounds[..., 0], bounds[..., 1]
    pts, z_vals = stratified_samples(rays_o, rays_d, near, far, cfg.n_samples, cfg.perturb)
    raw = network_query_fn(pts, viewdirs, network_fn)
    rgb_map, disp_map, acc_map, weights, depth_map = raw2outputs(raw, z_vals, rays_d, cfg.raw_noise_std,
                                                                 cfg.white_bkgd)
    ret = {"rgb_map": rgb_map, "disp_map": disp_map, "acc_map": acc_map, "depth_map": depth_map}
    if cfg.n_importance > 0:
        ret.update(rgb0=rgb_map, disp0=disp_map, acc0=acc_map)
        pts, z_vals, z_samples = resample_fine(rays_o, rays_d, z_vals, weights, cfg.n_importance,
                                               det=not cfg.perturb)
        raw = network_query_fn(pts, viewdirs, network_fn if network_fine is None else network_fine)
        rgb_map, disp_map, acc_map, weights, depth_map = raw2outputs(raw, z_vals, rays_d, cfg.raw_noise_std,
                                                                     cfg.white_bkgd)
        ret.update(rgb_map=rgb_map, disp_map=disp_map, acc_map=acc_map, depth_map=depth_map,
                   z_std=torch.std(z_samples, dim=-1, unbiased=False))
    ret.update(weights=weights, z_vals=z_vals)
    return ret

def batchify_rays(rays_flat, chunk: int, render_fn: Callable) -> Dict[str, torch.Tensor]:
    all_ret: Dict[str, List[torch.Tensor]] = {}
    for i in range(0, rays_flat.shape[0], chunk):  # expect: FL301
        ret = render_fn(rays_flat[i:i + chunk])
        for k, v in ret.items():
            all_ret.setdefault(k, []).append(v)
    return {k: torch.cat(v, 0) for k, v in all_ret.items()}

class NeRFRenderer(nn.Module):
    def __init__(self, cfg: RenderConfig = RenderConfig(), width: int = 32, multires: int = 4,
                 multires_views: int = 2):
        super().__init__()
        self.cfg = cfg
        self.embed_fn, input_ch = get_embedder(multires)
        self.embeddirs_fn, input_ch_views = get_embedder(multires_views)
        self.coarse = NeRF(W=width, input_ch=input_ch, input_ch_views=input_ch_views)
        self.fine = NeRF(W=width, input_ch=input_ch, input_ch_views=input_ch_views) if cfg.n_importance else None
        self.query_fn = functools.partial(run_network, embed_fn=self.embed_fn, embeddirs_fn=self.embeddirs_fn,
                                          netchunk=cfg.netchunk)

    def pack_rays(self, rays_o, rays_d, viewdirs=None):
        assert rays_o.shape == rays_d.shape, "origins and directions must match"
        if viewdirs is None:
            viewdirs = rays_d / torch.norm(rays_d, dim=-1, keepdim=True)
        near = self.cfg.near * torch.ones_like(rays_d[..., :1])
        far = self.cfg.far * torch.ones_like(rays_d[..., :1])
        return torch.cat([rays_o, rays_d, near, far, viewdirs], -1)

    def render_fn(self, cfg: Optional[RenderConfig] = None) -> Callable:
        return functools.partial(render_rays, network_fn=self.coarse, network_query_fn=self.query_fn,
                                 cfg=cfg or self.cfg, network_fine=self.fine)

    def forward(self, rays_o, rays_d):
        return batchify_rays(self.pack_rays(rays_o, rays_d), self.cfg.chunk, self.render_fn())

def check_numerics(ret: Dict[str, torch.Tensor]) -> None:
    for k in ret:
        if (torch.isnan(ret[k]).any() or torch.isinf(ret[k]).any()) and DEBUG:  # expect: FL000 GB0170
            print(f"! [Numerical Error] {k} contains nan or inf.")

@torch.compile
def render_test_view(model: NeRFRenderer, rays_o, rays_d, keys=("rgb_map", "depth_map", "acc_map")):
    eval_cfg = dataclasses.replace(model.cfg, perturb=False, raw_noise_std=0.0)
    with torch.no_grad():
        ret = batchify_rays(model.pack_rays(rays_o, rays_d), eval_cfg.chunk, model.render_fn(eval_cfg))
    check_numerics(ret)
    RENDER_STATS["views"] += 1
    return {k: ret[k] for k in keys}

# --------------------------------------------------------------------------- occupancy grid and marching

class OccupancyGrid(nn.Module):
    """Density grid with EMA updates every few steps; the MLP runs only on occupied cells."""
    def __init__(self, resolution: int = 6, bound: float = 1.0, decay: float = 0.95, threshold: float = 0.01,
                 update_every: int = 2):
        super().__init__()
        self.resolution, self.bound, self.decay = resolution, bound, decay
        self.threshold, self.update_every = threshold, update_every
        self.register_buffer("density", torch.zeros(resolution ** 3))
        self.register_buffer("bitfield", torch.ones(resolution ** 3, dtype=torch.bool))
        self.density_mlp = nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 1))
        self.iteration = 0

    def cell_index(self, pts):
        grid = ((pts + self.bound) / (2 * self.bound) * self.resolution).long().clamp(0, self.resolution - 1)
        return (grid[..., 0] * self.resolution + grid[..., 1]) * self.resolution + grid[..., 2]

    @torch.no_grad()
    def update(self, pts, sigma):
        cur = torch.zeros_like(self.density).scatter_reduce(0, self.cell_index(pts), sigma, reduce="amax")
        self.density = torch.maximum(self.density * self.decay, cur)
        self.bitfield = self.density > torch.clamp(self.density.mean(), max=self.threshold)

    def forward(self, pts):
        flat = pts.reshape(-1, 3)
        occupied = self.bitfield[self.cell_index(flat)]
        sigma = torch.zeros(flat.shape[0])
        sigma[occupied] = F.softplus(self.density_mlp(flat[occupied])).squeeze(-1)  # expect: FL000 GB0036
        if self.iteration % self.update_every == 0:
            self.update(flat, sigma.detach())
        self.iteration += 1  # expect: FL302
        return sigma.view(pts.shape[:-1])

def gaussian_blob_field(x, center, scale: float = 4.0):
    d2 = ((x - center) ** 2).sum(-1, keepdim=True)
    sigma = scale * torch.exp(-d2 / 0.5)
    return sigma, torch.sigmoid(x * 3.0)

def _all_terminated(trans, threshold: float) -> bool:
    return bool((trans < threshold).all())  # expect: FL000 GB0124

@torch.compile
def march_rays(rays_o, rays_d, field: Callable, near: float = 2.0, far: float = 6.0, n_steps: int = 10,
               t_thresh: float = 1e-2):
    """Front-to-back compositing with early ray termination, as in NGP's inference marcher."""
    dt = (far - near) / n_steps
    trans = torch.ones(rays_o.shape[0], 1)
    rgb, depth = torch.zeros_like(rays_o), torch.zeros(rays_o.shape[0], 1)
    for step in range(n_steps):
        t = near + (step + 0.5) * dt
        sigma, color = field(rays_o + t * rays_d)
        alpha = 1.0 - torch.exp(-sigma * dt)
        w = trans * alpha
        rgb, depth = rgb + w * color, depth + w * t
        trans = trans * (1.0 - alpha + TINY)
        if _all_terminated(trans, t_thresh):
            logger.debug("all rays terminated after %d of %d steps", step + 1, n_steps)
            break
    return rgb, depth, 1.0 - trans

# --------------------------------------------------------------------------- losses and schedules

img2mse = lambda x, y: torch.mean((x - y) ** 2)
mse2psnr = lambda x: -10. * torch.log(x) / torch.log(torch.Tensor([10.]))

def learning_rate(step: int, cfg: TrainConfig) -> float:
    lr = cfg.lrate * (cfg.decay_rate ** (step / (cfg.lrate_decay * 1000)))
    if step < cfg.warmup_steps:
        lr *= 0.5 * (1 - math.cos(math.pi * step / cfg.warmup_steps))
    return lr

def distortion_loss(weights, z_vals):
    """mip-NeRF 360's distortion regulariser over one set of samples."""
    mids = 0.5 * (z_vals[..., 1:] + z_vals[..., :-1])
    w = weights[..., :-1]
    inter = (w[..., :, None] * w[..., None, :] * (mids[..., :, None] - mids[..., None, :]).abs()).sum((-1, -2))
    intra = (w ** 2 * (z_vals[..., 1:] - z_vals[..., :-1])).sum(-1) / 3
    return (inter + intra).mean()

@torch.compile
def compute_losses(ret: Dict[str, torch.Tensor], target, global_step: int, cfg: TrainConfig = TRAIN_CFG):
    logger.debug("step %d: %d rays", global_step, target.shape[0])  # expect: FL000 GB0291
    loss = img2mse(ret["rgb_map"], target)
    stats = {"psnr": mse2psnr(loss)}
    if "rgb0" in ret:
        loss0 = img2mse(ret["rgb0"], target)
        loss = loss + cfg.coarse_weight * loss0
        stats["psnr0"] = mse2psnr(loss0)
    if cfg.distortion_weight > 0 and "weights" in ret:
        loss = loss + cfg.distortion_weight * distortion_loss(ret["weights"], ret["z_vals"])
    stats["lr"] = learning_rate(global_step, cfg)
    if global_step % cfg.i_print == 0:
        logger.info("[TRAIN] Iter: %d Loss: %.5f PSNR: %.2f", global_step, loss.item(), stats["psnr"].item())  # expect: FL000 GB0124; FL000 GB0291
    return loss, stats

@torch.compile
def sample_training_rays(rays_o, rays_d, target, n_rand: int, step: int, cfg: TrainConfig = TRAIN_CFG):
    """One random batch of pixels of an [H, W, 3] view; center crops for the first iterations."""
    H, W = target.shape[:2]
    if step < cfg.precrop_iters:
        dH, dW = int(H // 2 * cfg.precrop_frac), int(W // 2 * cfg.precrop_frac)
        coords = torch.stack(torch.meshgrid(torch.arange(H // 2 - dH, H // 2 + dH),
                                            torch.arange(W // 2 - dW, W // 2 + dW), indexing="ij"), -1)
        if step == 0:
            logger.info(f"Center cropping of size {2 * dH} x {2 * dW} is enabled until iter {cfg.precrop_iters}")  # expect: FL000 GB0291
    else:
        coords = torch.stack(torch.meshgrid(torch.arange(H), torch.arange(W), indexing="ij"), -1)
    select = coords.reshape(-1, 2)[torch.randperm(coords.shape[0] * coords.shape[1])[:n_rand]]
    return rays_o[select[:, 0], select[:, 1]], rays_d[select[:, 0], select[:, 1]], target[select[:, 0], select[:, 1]]

# --------------------------------------------------------------------------- metrics

def _gaussian_window(size: int, sigma: float, channels: int) -> torch.Tensor:
    coords = torch.arange(size, dtype=torch.float32) - size // 2
    g = torch.exp(-coords ** 2 / (2 * sigma ** 2))
    g = g / g.sum()
    return (g[:, None] @ g[None, :]).expand(channels, 1, size, size).contiguous()

@torch.compile
def ssim(img0, img1, window_size: int = 7, sigma: float = 1.5, max_val: float = 1.0):
    if img0.dim() == 3:  # HWC images straight out of the renderer
        img0, img1 = img0.permute(2, 0, 1)[None], img1.permute(2, 0, 1)[None]
    c, (h, w) = img0.shape[1], img0.shape[-2:]
    if min(h, w) < window_size:  # expect: FL301
        window_size = min(h, w) - (1 - min(h, w) % 2)  # the largest odd window that fits
    conv = functools.partial(F.conv2d, weight=_gaussian_window(window_size, sigma, c), groups=c)
    mu0, mu1 = conv(img0), conv(img1)
    s00, s11, s01 = conv(img0 * img0) - mu0 ** 2, conv(img1 * img1) - mu1 ** 2, conv(img0 * img1) - mu0 * mu1
    c1, c2 = (0.01 * max_val) ** 2, (0.03 * max_val) ** 2
    ssim_map = ((2 * mu0 * mu1 + c1) * (2 * s01 + c2)) / ((mu0 ** 2 + mu1 ** 2 + c1) * (s00 + s11 + c2))
    return ssim_map.mean()

def psnr(pred, gt, max_val: float = 1.0) -> float:
    mse = F.mse_loss(pred, gt).item()  # expect: FL000 GB0124
    if mse == 0:
        return float("inf")
    return 20 * math.log10(max_val) - 10 * math.log10(mse)

METRICS: Dict[str, Callable] = {
    "psnr": psnr,
    "ssim": lambda pred, gt: ssim(pred, gt),
    "mae": lambda pred, gt: (pred - gt).abs().mean(),
}

@torch.compile
def colorize_depth(depth, acc, near: float = 2.0, far: float = 6.0):
    """Depth visualisation with a robust (percentile) range, background kept white."""
    lo, hi = np.percentile(depth.detach().cpu().numpy(), [1, 99])
    depth = ((depth - lo) / max(hi - lo, 1e-6)).clamp(0, 1)
    turbo = torch.stack([depth, 1 - (2 * depth - 1).abs(), 1 - depth], -1)
    return turbo * acc[..., None] + (1 - acc[..., None])

@torch.compile
def evaluate_image(pred, gt, metrics: Sequence[str] = ("psnr", "ssim", "mae", "lpips")):
    results = {}
    for name in metrics:
        try:
            fn = METRICS[name]
        except KeyError:
            continue
        value = fn(pred.clamp(0.0, 1.0), gt)
        results[name] = float(value) if torch.is_tensor(value) else value
    logger.info("eval: %s", ", ".join(f"{k}={v:.3f}" for k, v in results.items()))
    return results

# --------------------------------------------------------------------------- cases

_randn = lambda *shape, seed=0: torch.randn(*shape, generator=torch.Generator().manual_seed(seed))
_rand = lambda *shape, seed=0: torch.rand(*shape, generator=torch.Generator().manual_seed(seed))

def _rays(n: int, seed: int = 0):
    rays_o = _randn(n, 3, seed=seed) * 0.1 + torch.tensor([0.0, 0.0, 4.0])
    rays_d = F.normalize(_randn(n, 3, seed=seed + 1) * 0.2 + torch.tensor([0.0, 0.0, -1.0]), dim=-1)
    return rays_o, rays_d

def _pose(seed: int = 0):
    c2w = torch.eye(4)
    c2w[:3, 3] = _randn(3, seed=seed) * 0.1 + torch.tensor([0.0, 0.0, 4.0])
    return c2w

def _render_out(n: int = 12, s: int = 9):
    z = torch.sort(_rand(n, s, seed=3) * 4 + 2, -1)[0]
    w = torch.softmax(_randn(n, s, seed=4), -1)
    return {"rgb_map": _rand(n, 3, seed=5), "rgb0": _rand(n, 3, seed=6), "weights": w, "z_vals": z}

CASES = {
    "PinholeCamera": lambda: (PinholeCamera(), (_pose(),)),
    "Embedder": lambda: (Embedder(), (_randn(10, 3),)),
    "AnnealedEmbedder": lambda: (AnnealedEmbedder(), (_randn(10, 3),)),
    "HashGridEncoder": lambda: (HashGridEncoder(), (_rand(10, 3) * 2 - 1,)),
    "NeRF": lambda: (NeRF(input_ch=27, input_ch_views=15), (_randn(10, 42),)),
    "resample_fine": lambda: (resample_fine, (*_rays(12), _render_out()["z_vals"], _render_out()["weights"], 5)),
    "composite": lambda: (composite, (_randn(12, 9, 4), _render_out()["z_vals"], _rays(12)[1], 0.5, True)),
    "NeRFRenderer": lambda: (NeRFRenderer(), _rays(24), _rays(40, seed=2)),
    "render_test_view": lambda: (render_test_view, (NeRFRenderer().eval(), *_rays(20))),
    "OccupancyGrid": lambda: (OccupancyGrid(), (_rand(10, 5, 3) * 2 - 1,)),
    "march_rays": lambda: (march_rays, (*_rays(12), functools.partial(gaussian_blob_field,
                                                                     center=torch.tensor([0.0, 0.0, 0.5]))), ),
    "compute_losses": lambda: (compute_losses, (_render_out(), _rand(12, 3, seed=7), 30)),
    "sample_training_rays": lambda: (sample_training_rays, (*[r.reshape(4, 6, 3) for r in _rays(24)],
                                                            _rand(4, 6, 3), 5, 0)),
    "colorize_depth": lambda: (colorize_depth, (_rand(12) * 4 + 2, _rand(12, seed=1))),
    "ssim": lambda: (ssim, (_rand(9, 11, 3), _rand(9, 11, 3, seed=1)), (_rand(5, 6, 3), _rand(5, 6, 3, seed=1))),
    "evaluate_image": lambda: (evaluate_image, (_rand(9, 11, 3), _rand(9, 11, 3, seed=1))),
}
