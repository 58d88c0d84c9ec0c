"""Point clouds and neural fields: PointNet(++) blocks, FPS, kNN / ball query, voxels, Chamfer, NeRF rendering."""
import logging
import math
import warnings
from dataclasses import dataclass
from typing import List, Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger(__name__)


@dataclass
class RenderConfig:
    near: float = 2.0
    far: float = 6.0
    n_samples: int = 8
    white_bkgd: bool = True
    raw_noise_std: float = 0.0
    chunk: int = 4


def square_distance(src, dst):
    dist = -2 * torch.matmul(src, dst.transpose(1, 2))
    dist += torch.sum(src ** 2, -1)[:, :, None]
    dist += torch.sum(dst ** 2, -1)[:, None, :]
    return dist


def index_points(points, idx):
    B = points.shape[0]
    view_shape = [B] + [1] * (idx.dim() - 1)
    repeat_shape = [1] + list(idx.shape[1:])
    batch_indices = torch.arange(B, dtype=torch.long).view(view_shape).repeat(repeat_shape)
    return points[batch_indices, idx, :]


@torch.compile
def farthest_point_sample(xyz, npoint: int):
    B, N, C = xyz.shape
    centroids = torch.zeros(B, npoint, dtype=torch.long)
    distance = torch.ones(B, N) * 1e10
    farthest = torch.zeros(B, dtype=torch.long)
    batch_indices = torch.arange(B, dtype=torch.long)
    for i in range(npoint):
        centroids[:, i] = farthest
        centroid = xyz[batch_indices, farthest, :].view(B, 1, 3)
        dist = torch.sum((xyz - centroid) ** 2, -1)
        distance = torch.min(distance, dist)
        farthest = torch.max(distance, -1)[1]
    return centroids


def query_ball_point(radius, nsample, xyz, new_xyz):
    B, N, C = xyz.shape
    _, S, _ = new_xyz.shape
    group_idx = torch.arange(N, dtype=torch.long).view(1, 1, N).repeat([B, S, 1])
    sqrdists = square_distance(new_xyz, xyz)
    group_idx[sqrdists > radius ** 2] = N
    group_idx = group_idx.sort(dim=-1)[0][:, :, :nsample]
    group_first = group_idx[:, :, 0].view(B, S, 1).repeat([1, 1, nsample])
    mask = group_idx == N
    group_idx[mask] = group_first[mask]  # expect: FL105 GB0036
    return group_idx


class PointNetSetAbstraction(nn.Module):
    def __init__(self, npoint: int = 4, radius: float = 0.4, nsample: int = 3, in_channel: int = 3, mlp: List[int] = [8, 16]):
        super().__init__()
        self.npoint, self.radius, self.nsample = npoint, radius, nsample
        layers, last = [], in_channel + 3
        for out in mlp:
            layers += [nn.Conv2d(last, out, 1), nn.BatchNorm2d(out), nn.ReLU()]
            last = out
        self.mlp = nn.Sequential(*layers)

    def forward(self, xyz, points):
        fps_idx = farthest_point_sample(xyz, self.npoint)
        new_xyz = index_points(xyz, fps_idx)
        idx = query_ball_point(self.radius, self.nsample, xyz, new_xyz)
        grouped_xyz = index_points(xyz, idx) - new_xyz[:, :, None, :]
        grouped = torch.cat([grouped_xyz, index_points(points, idx)], dim=-1)
        new_points = self.mlp(grouped.permute(0, 3, 2, 1))
        return new_xyz, torch.max(new_points, 2)[0].transpose(1, 2)


class TNet(nn.Module):
    def __init__(self, k: int = 3):
        super().__init__()
        self.k = k
        self.conv = nn.Sequential(nn.Conv1d(k, 16, 1), nn.ReLU(), nn.Conv1d(16, 32, 1), nn.ReLU())
        self.fc = nn.Sequential(nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, k * k))

    def forward(self, x):
        feat = self.conv(x).max(dim=2)[0]
        iden = torch.eye(self.k).flatten()[None].repeat(x.size(0), 1)
        return (self.fc(feat) + iden).view(-1, self.k, self.k)


class PointNetEncoder(nn.Module):
    def __init__(self, channel: int = 3, global_feat: bool = True):
        super().__init__()
        self.stn = TNet(channel)
        self.conv1 = nn.Conv1d(channel, 16, 1)
        self.conv2 = nn.Conv1d(16, 32, 1)
        self.global_feat = global_feat

    def forward(self, x):
        B, D, N = x.size()
        trans = self.stn(x)
        x = torch.bmm(x.transpose(2, 1), trans).transpose(2, 1)
        pointfeat = F.relu(self.conv1(x))
        logger.debug("stn det mean %.4f", torch.det(trans).mean())  # expect: FL111 GB0291
        x = self.conv2(pointfeat).max(2, keepdim=True)[0].view(-1, 32)
        if self.global_feat:
            return x, trans
        return torch.cat([x.view(-1, 32, 1).repeat(1, 1, N), pointfeat], 1), trans


@torch.compile
def knn_points(query, ref, k: int = 4):
    d = torch.cdist(query, ref)
    dist, idx = d.topk(k, dim=-1, largest=False)
    return dist, idx


def _knn_group(x, k: int = 3):
    B, N, C = x.shape
    idx = square_distance(x, x).topk(k, dim=-1, largest=False)[1]
    neighbors = index_points(x, idx)
    return torch.cat([neighbors - x[:, :, None], x[:, :, None].expand(-1, -1, k, -1)], dim=-1)


edge_features = torch.compile(_knn_group)


@torch.compile
def voxelize(points, voxel_size: float = 0.5):
    coords = torch.floor(points[:, :3] / voxel_size).long()
    uniq, inverse = torch.unique(coords, dim=0, return_inverse=True)  # expect: FL105 GB0036
    feats = torch.zeros(uniq.shape[0], points.shape[1]).index_add_(0, inverse, points)
    counts = torch.bincount(inverse, minlength=uniq.shape[0]).clamp(min=1)  # expect: FL105 GB0036
    logger.info(f"voxelized {points.shape[0]} points into {uniq.shape[0]} voxels")  # expect: FL111 GB0291
    return uniq, feats / counts[:, None]


@torch.compile
def scatter_mean_to_grid(points, feats, grid_size: int = 4, bound: float = 1.0):
    ijk = ((points + bound) / (2 * bound) * grid_size).long().clamp(0, grid_size - 1)
    flat = (ijk[:, 0] * grid_size + ijk[:, 1]) * grid_size + ijk[:, 2]
    grid = torch.zeros(grid_size ** 3, feats.shape[1]).scatter_add_(0, flat[:, None].expand_as(feats), feats)
    count = torch.zeros(grid_size ** 3).scatter_add_(0, flat, torch.ones_like(flat, dtype=torch.float))
    occupancy = (count > 0).float().mean()
    if occupancy < 0.05:  # expect: FL101 GB0170
        warnings.warn(f"voxel grid nearly empty ({occupancy:.1%} occupied)")  # expect: FL112 GB0007
    return (grid / count.clamp(min=1)[:, None]).view(grid_size, grid_size, grid_size, -1)


@torch.compile
def chamfer_distance(x, y):
    d = square_distance(x, y)
    return d.min(dim=2)[0].mean(dim=1) + d.min(dim=1)[0].mean(dim=1)


@torch.compile
def chamfer_and_fscore(pred, gt, threshold: float = 0.1):
    d = square_distance(pred, gt)
    d1, d2 = d.min(dim=2)[0], d.min(dim=1)[0]
    precision = (d1 < threshold ** 2).float().mean()
    recall = (d2 < threshold ** 2).float().mean()
    fscore = 2 * precision * recall / (precision + recall) if precision + recall > 0 else torch.zeros(())  # expect: FL101 GB0170
    metrics = {"chamfer": (d1.mean() + d2.mean()).item(), "fscore": fscore.item()}  # expect: FL102 GB0124
    return d1.mean() + d2.mean(), metrics


@torch.compile
def positional_encoding(x, num_freqs: int = 4, include_input: bool = True):
    out = [x] if include_input else []
    freq_bands = 2.0 ** torch.linspace(0.0, num_freqs - 1, num_freqs)
    for freq in freq_bands:
        for fn in (torch.sin, torch.cos):
            out.append(fn(x * freq))
    return torch.cat(out, dim=-1)


class NeRFMLP(nn.Module):
    def __init__(self, D: int = 4, W: int = 16, input_ch: int = 27, skips=(2,)):
        super().__init__()
        self.skips = skips
        self.pts_linears = nn.ModuleList(
            [nn.Linear(input_ch, W)] + [nn.Linear(W + input_ch if i in skips else W, W) for i in range(1, D)])
        self.alpha = nn.Linear(W, 1)
        self.rgb = nn.Linear(W, 3)

    def forward(self, x):
        h = x
        for i, layer in enumerate(self.pts_linears):
            if i in self.skips:
                h = torch.cat([x, h], -1)
            h = F.relu(layer(h))
        return torch.cat([torch.sigmoid(self.rgb(h)), self.alpha(h)], -1)


@torch.compile
def volume_render(raw, z_vals, rays_d, white_bkgd: bool = True):
    dists = z_vals[..., 1:] - z_vals[..., :-1]
    dists = torch.cat([dists, torch.full_like(dists[..., :1], 1e10)], -1) * rays_d.norm(dim=-1, keepdim=True)
    alpha = 1.0 - torch.exp(-F.relu(raw[..., 3]) * dists)
    trans = torch.cumprod(torch.cat([torch.ones_like(alpha[..., :1]), 1.0 - alpha + 1e-10], -1), -1)[..., :-1]
    weights = alpha * trans
    rgb_map = torch.sum(weights[..., None] * raw[..., :3], -2)
    acc_map = weights.sum(-1)
    if white_bkgd:
        rgb_map = rgb_map + (1.0 - acc_map[..., None])
    return rgb_map, weights


@torch.compile
def sample_pdf(bins, weights, n_samples: int):
    weights = weights + 1e-5
    pdf = weights / weights.sum(-1, keepdim=True)
    cdf = torch.cat([torch.zeros_like(pdf[..., :1]), torch.cumsum(pdf, -1)], -1)
    u = torch.linspace(0.0, 1.0, n_samples).expand(list(cdf.shape[:-1]) + [n_samples]).contiguous()
    inds = torch.searchsorted(cdf, u, right=True)
    below = (inds - 1).clamp(min=0)
    above = inds.clamp(max=cdf.shape[-1] - 1)
    cdf_g = torch.stack([cdf.gather(-1, below), cdf.gather(-1, above)], -1)
    bins_g = torch.stack([bins.gather(-1, below), bins.gather(-1, above)], -1)
    denom = cdf_g[..., 1] - cdf_g[..., 0]
    denom = torch.where(denom < 1e-5, torch.ones_like(denom), denom)
    return bins_g[..., 0] + (u - cdf_g[..., 0]) / denom * (bins_g[..., 1] - bins_g[..., 0])


class SphereTracer(nn.Module):
    def __init__(self, max_steps: int = 6, eps: float = 1e-3):
        super().__init__()
        self.max_steps, self.eps = max_steps, eps
        self.radius = nn.Parameter(torch.tensor(0.5))

    def sdf(self, p):
        return p.norm(dim=-1) - self.radius

    def forward(self, origins, dirs):
        t = torch.zeros(origins.shape[0])
        for step in range(self.max_steps):
            d = self.sdf(origins + t[:, None] * dirs)
            t = t + d
            if (d.abs() < self.eps).all():  # expect: FL101 GB0170
                print(f"sphere tracing converged after {step + 1} steps")
                break
        return t


class RayBatcher(nn.Module):
    def __init__(self, cfg: RenderConfig = RenderConfig()):
        super().__init__()
        self.cfg = cfg
        self.mlp = NeRFMLP(input_ch=3 + 3 * 2 * 4)

    def forward(self, rays_o, rays_d):
        z_vals = torch.linspace(self.cfg.near, self.cfg.far, self.cfg.n_samples).expand(rays_o.shape[0], -1)
        outs = []
        for i in range(0, rays_o.shape[0], self.cfg.chunk):  # expect: FL301
            pts = rays_o[i:i + self.cfg.chunk, None] + rays_d[i:i + self.cfg.chunk, None] * z_vals[i:i + self.cfg.chunk, :, None]
            raw = self.mlp(positional_encoding(pts))
            outs.append(volume_render(raw, z_vals[i:i + self.cfg.chunk], rays_d[i:i + self.cfg.chunk], self.cfg.white_bkgd)[0])
        return torch.cat(outs, 0)


@torch.compile
def estimate_normals(pc, radius: float = 1.0):
    d = torch.cdist(pc, pc)
    normals = []
    for i in range(pc.shape[0]):
        nbrs = pc[d[i] < radius]  # expect: FL105 GB0036
        if nbrs.shape[0] < 3:
            normals.append(torch.tensor([0.0, 0.0, 1.0]))
            continue
        centered = nbrs - nbrs.mean(0)
        _, eigvecs = torch.linalg.eigh(centered.t() @ centered)
        normals.append(eigvecs[:, 0])
    return torch.stack(normals)


class PointCloudAugment(nn.Module):
    def __init__(self, scale_low: float = 0.8, scale_high: float = 1.25, jitter: float = 0.01):
        super().__init__()
        self.scale_low, self.scale_high, self.jitter = scale_low, scale_high, jitter

    def forward(self, pc):
        angle = np.random.uniform() * 2 * np.pi  # expect: FL104 GB0033
        c, s = math.cos(angle), math.sin(angle)
        rot = torch.tensor([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]], dtype=pc.dtype)
        scale = np.random.uniform(self.scale_low, self.scale_high)  # expect: FL104 GB0033
        pc = pc @ rot.t() * scale
        return pc + torch.clamp(self.jitter * torch.randn_like(pc), -0.05, 0.05)


def mse2psnr(mse):
    return -10.0 * torch.log(mse) / torch.log(torch.Tensor([10.0]))


@torch.compile
def render_metrics(rgb, target, weights):
    img_loss = F.mse_loss(rgb, target)
    psnr = mse2psnr(img_loss)
    depth_entropy = -(weights * torch.log(weights + 1e-10)).sum(-1).mean()
    return img_loss, {"psnr": psnr.item(), "entropy": depth_entropy.item()}  # expect: FL102 GB0124


@torch.compile
def normalize_unit_sphere(pc):
    centroid = pc.mean(dim=0)
    pc = pc - centroid
    scale = pc.norm(dim=1).max()
    if scale.item() < 1e-8:  # expect: FL102 GB0124
        return pc
    return pc / scale


@torch.compile
def random_subsample(points, n: int = 5):
    if points.shape[0] <= n:
        return points
    choice = np.random.choice(points.shape[0], n, replace=False)  # expect: FL104 GB0033
    return points[torch.from_numpy(choice)]


def center_and_scale(pc):
    pc = pc - pc.mean(dim=1, keepdim=True)
    furthest = pc.norm(dim=-1).max()
    if furthest > 1.0:  # expect: FL201
        pc = pc / furthest
    return pc


def export_preprocessing():
    return torch.jit.trace(center_and_scale, torch.randn(2, 6, 3))


_cloud = lambda B=2, N=8: torch.randn(B, N, 3)  # noqa: E731

CASES = {
    "farthest_point_sample": lambda: (farthest_point_sample, (_cloud(), 4)),
    "PointNetSetAbstraction": lambda: (PointNetSetAbstraction().eval(), (_cloud(), _cloud())),
    "PointNetEncoder": lambda: (PointNetEncoder(global_feat=False), (torch.randn(2, 3, 8),)),
    "knn_points": lambda: (knn_points, (_cloud(2, 5), _cloud(2, 7), 3)),
    "edge_features": lambda: (edge_features, (_cloud(),)),
    "voxelize": lambda: (voxelize, (torch.rand(10, 4) * 2,)),
    "scatter_mean_to_grid": lambda: (scatter_mean_to_grid, (torch.rand(10, 3) * 2 - 1, torch.randn(10, 5))),
    "scatter_mean_to_grid_sparse": lambda: (scatter_mean_to_grid, (torch.full((10, 3), 0.1) + torch.rand(10, 3) * 0.01, torch.randn(10, 5))),
    "chamfer_distance": lambda: (chamfer_distance, (_cloud(2, 6), _cloud(2, 9))),
    "chamfer_and_fscore": lambda: (chamfer_and_fscore, (_cloud(2, 6), _cloud(2, 9), 0.5)),
    "positional_encoding": lambda: (positional_encoding, (torch.randn(5, 3),)),
    "NeRFMLP": lambda: (NeRFMLP(), (torch.randn(5, 27),)),
    "volume_render": lambda: (volume_render, (torch.randn(3, 6, 4), torch.linspace(2, 6, 6).expand(3, 6), torch.randn(3, 3))),
    "sample_pdf": lambda: (sample_pdf, (torch.linspace(2, 6, 7).expand(3, 7).contiguous(), torch.rand(3, 6), 5)),
    "SphereTracer": lambda: (SphereTracer(), (torch.tensor([[0.0, 0.0, -2.0], [0.1, 0.0, -2.0]]), torch.tensor([[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]]))),
    "RayBatcher": lambda: (RayBatcher(), (torch.randn(6, 3), F.normalize(torch.randn(6, 3), dim=-1)),
                           (torch.randn(9, 3), F.normalize(torch.randn(9, 3), dim=-1))),
    "estimate_normals": lambda: (estimate_normals, (torch.randn(8, 3) * 0.5,)),
    "PointCloudAugment": lambda: (PointCloudAugment(), (_cloud(2, 5),)),
    "render_metrics": lambda: (render_metrics, (torch.rand(4, 3), torch.rand(4, 3), torch.rand(4, 6).softmax(-1))),
    "normalize_unit_sphere": lambda: (normalize_unit_sphere, (torch.randn(7, 3),)),
    "random_subsample": lambda: (random_subsample, (torch.randn(9, 3), 5)),
}

TRACED = {
    "center_and_scale": lambda: (center_and_scale, (torch.randn(2, 6, 3) * 3,)),
}
