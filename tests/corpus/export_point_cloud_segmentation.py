"""Point cloud semantic segmentation for the edge runtime (torch.jit.trace / torch.export): PointNet++ (SSG) and
DGCNN for indoor scans and LiDAR sweeps, FPS / ball query / kNN grouping, voxel-grid downsampling, SemanticKITTI
label remapping, block-wise inference over large scenes, temporal logit smoothing and confusion-matrix mIoU."""
import logging
import math
import random
import warnings
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

logger = logging.getLogger("pcseg.deploy")
logger.addHandler(logging.NullHandler())

IGNORE_INDEX = 255
S3DIS_CLASSES = ("ceiling", "floor", "wall", "beam", "column", "window", "door",
                 "table", "chair", "sofa", "bookcase", "board", "clutter")
# raw SemanticKITTI ids -> 20-class training ids (0 = unlabeled, mapped to ignore below)
KITTI_LEARNING_MAP: Dict[int, int] = {
    0: 0, 1: 0, 10: 1, 11: 2, 13: 5, 15: 3, 16: 5, 18: 4, 20: 5, 30: 6, 31: 7, 32: 8,
    40: 9, 44: 10, 48: 11, 49: 12, 50: 13, 51: 14, 52: 0, 60: 9, 70: 15, 71: 16, 72: 17,
    80: 18, 81: 19, 99: 0, 252: 1, 253: 7, 254: 6, 255: 8, 256: 5, 257: 5, 258: 4, 259: 5,
}
MAX_SCENE_RADIUS = 4.0
EPS = 1e-8

ACTIVATIONS: Dict[str, Callable[[], nn.Module]] = {
    "relu": partial(nn.ReLU, inplace=True), "leaky": partial(nn.LeakyReLU, 0.2), "gelu": nn.GELU}

@dataclass
class SAConfig:
    npoint: int
    radius: float
    nsample: int
    mlp: Tuple[int, ...]

@dataclass
class PointNet2Config:
    in_feats: int = 4  # rgb + height above floor
    num_classes: int = len(S3DIS_CLASSES)
    sa: List[SAConfig] = field(default_factory=lambda: [
        SAConfig(npoint=16, radius=0.3, nsample=8, mlp=(12, 12, 24)),
        SAConfig(npoint=6, radius=0.6, nsample=5, mlp=(24, 24, 32)),
    ])
    fp: List[Tuple[int, ...]] = field(default_factory=lambda: [(24, 24), (20, 16)])
    head_dim: int = 16
    dropout: float = 0.3
    activation: str = "relu"

@dataclass
class DGCNNConfig:
    in_dim: int = 9  # xyz, rgb, normalised xyz (S3DIS "dim9")
    k: int = 6
    edge_dims: Tuple[int, ...] = (16, 16, 24)
    emb_dim: int = 32
    num_classes: int = len(S3DIS_CLASSES)
    dim9: bool = True

@dataclass
class AugConfig:
    rotate: bool = True
    scale_range: Tuple[float, float] = (0.9, 1.1)
    jitter: float = 0.01
    color_drop: float = 0.2

# ----------------------------------------------------------------------------- geometry primitives
def square_distance(src: Tensor, dst: Tensor) -> Tensor:
    """[B, N, 3] x [B, M, 3] -> [B, N, M] squared euclidean distances."""
    dist = -2 * torch.matmul(src, dst.transpose(1, 2))
    dist = dist + (src ** 2).sum(-1, keepdim=True)
    return dist + (dst ** 2).sum(-1).unsqueeze(1)

def index_points(points: Tensor, idx: Tensor) -> Tensor:
    """Gathers points [B, N, C] by idx [B, ...] -> [B, ..., C]."""
    B = points.shape[0]
    view = (B,) + (1,) * (idx.dim() - 1)
    batch = torch.arange(B, device=points.device).view(view).expand_as(idx)
    return points[batch, idx]

def farthest_point_sample(xyz: Tensor, npoint: int) -> Tensor:
    """Iterative FPS from point 0 (deterministic, so traced graphs match the reference)."""
    B, N, _ = xyz.shape
    if N <= npoint:  # expect: FL203; FL301
        # tiny clouds (end of a block, sparse LiDAR ring): keep everything, repeat the tail
        idx = torch.arange(npoint, device=xyz.device).clamp(max=N - 1)
        return idx.unsqueeze(0).expand(B, npoint)
    centroids = torch.zeros(B, npoint, dtype=torch.long, device=xyz.device)
    distance = torch.full((B, N), 1e10, dtype=xyz.dtype, device=xyz.device)
    farthest = torch.zeros(B, dtype=torch.long, device=xyz.device)
    batch = torch.arange(B, device=xyz.device)
    for i in range(npoint):
        centroids[:, i] = farthest
        centroid = xyz[batch, farthest].unsqueeze(1)
        distance = torch.minimum(distance, ((xyz - centroid) ** 2).sum(-1))
        farthest = distance.argmax(-1)
    return centroids

def ball_query(radius: float, nsample: int, xyz: Tensor, new_xyz: Tensor) -> Tensor:
    """First `nsample` neighbours within `radius`; empty slots repeat the first hit."""
    B, N, _ = xyz.shape
    S = new_xyz.shape[1]
    sqrdists = square_distance(new_xyz, xyz)
    group_idx = torch.arange(N, device=xyz.device).view(1, 1, N).expand(B, S, N)
    group_idx = group_idx.masked_fill(sqrdists > radius ** 2, N)
    group_idx = group_idx.sort(dim=-1).values[:, :, :nsample]
    first = group_idx[:, :, :1].expand_as(group_idx)
    return torch.where(group_idx == N, first, group_idx)

def knn(x: Tensor, k: int) -> Tensor:
    """x [B, C, N] -> indices [B, N, k] of the k nearest neighbours in feature space."""
    inner = -2 * torch.matmul(x.transpose(2, 1), x)
    xx = (x ** 2).sum(dim=1, keepdim=True)
    return (-xx - inner - xx.transpose(2, 1)).topk(k=k, dim=-1).indices

def get_graph_feature(x: Tensor, k: int, idx: Optional[Tensor] = None) -> Tensor:
    """EdgeConv input: [B, C, N] -> [B, 2C, N, k] of (x_j - x_i, x_i)."""
    B, C, N = x.shape
    if idx is None:
        idx = knn(x, k)
    idx = (idx + torch.arange(B, device=x.device).view(-1, 1, 1) * N).reshape(-1)
    x_t = x.transpose(2, 1).contiguous()
    neighbours = x_t.view(B * N, C)[idx].view(B, N, k, C)
    centre = x_t.view(B, N, 1, C).expand(-1, -1, k, -1)
    return torch.cat((neighbours - centre, centre), dim=3).permute(0, 3, 1, 2).contiguous()

def normalize_unit_sphere(xyz: Tensor) -> Tensor:
    centred = xyz - xyz.mean(dim=1, keepdim=True)
    scale = centred.norm(dim=-1).amax(dim=1, keepdim=True).clamp_min(EPS)
    return centred / scale.unsqueeze(-1)

def _knn_interpolate(src_xyz: Tensor, src_feat: Tensor, dst_xyz: Tensor, k: int = 3) -> Tensor:
    """Inverse-distance kNN upsampling of per-point features [B, M, C] onto dst_xyz [B, N, 3]."""
    d, idx = square_distance(dst_xyz, src_xyz).topk(k, dim=-1, largest=False)
    w = 1.0 / (d.clamp_min(0) + EPS)
    w = w / w.sum(-1, keepdim=True)
    return (index_points(src_feat, idx) * w.unsqueeze(-1)).sum(2)

knn_interpolate = torch.compile(_knn_interpolate)

def build_lut(mapping: Dict[int, int], ignore_index: int = IGNORE_INDEX) -> Tensor:
    lut = torch.full((max(mapping) + 1,), ignore_index, dtype=torch.long)
    for raw, train in mapping.items():
        lut[raw] = ignore_index if train == 0 else train - 1
    return lut

@torch.compiler.disable
def _log_class_histogram(pred: Tensor, names: Sequence[str]) -> None:
    valid = pred[pred != IGNORE_INDEX].flatten()
    counts = torch.bincount(valid, minlength=len(names)).tolist()
    summary = {}
    for c, n in enumerate(counts):
        try:
            summary[names[c]] = n
        except IndexError:
            summary[f"class_{c}"] = n
    logger.info("predicted class histogram: %s", summary)

# ----------------------------------------------------------------------------- PointNet++
class SharedMLP(nn.Sequential):
    def __init__(self, channels: Sequence[int], dim: int = 2, activation: str = "relu"):
        conv, bn = (nn.Conv2d, nn.BatchNorm2d) if dim == 2 else (nn.Conv1d, nn.BatchNorm1d)
        layers: List[nn.Module] = []
        for c_in, c_out in zip(channels[:-1], channels[1:]):
            layers += [conv(c_in, c_out, 1, bias=False), bn(c_out), ACTIVATIONS[activation]()]
        super().__init__(*layers)

class PointNetSetAbstraction(nn.Module):
    def __init__(self, cfg: SAConfig, in_ch: int, activation: str = "relu"):
        super().__init__()
        self.npoint, self.radius, self.nsample = cfg.npoint, cfg.radius, cfg.nsample
        self.mlp = SharedMLP((in_ch + 3,) + tuple(cfg.mlp), activation=activation)

    def forward(self, xyz: Tensor, feats: Tensor) -> Tuple[Tensor, Tensor]:
        # xyz [B, N, 3], feats [B, C, N] -> new_xyz [B, S, 3], new_feats [B, C', S]
        fps_idx = farthest_point_sample(xyz, self.npoint)
        new_xyz = index_points(xyz, fps_idx)
        idx = ball_query(self.radius, self.nsample, xyz, new_xyz)
        grouped_xyz = (index_points(xyz, idx) - new_xyz.unsqueeze(2)) / self.radius
        grouped = torch.cat([grouped_xyz, index_points(feats.transpose(1, 2), idx)], dim=-1)
        new_feats = self.mlp(grouped.permute(0, 3, 2, 1))  # [B, C', K, S]
        return new_xyz, new_feats.amax(dim=2)

class PointNetFeaturePropagation(nn.Module):
    def __init__(self, in_ch: int, mlp: Sequence[int], activation: str = "relu"):
        super().__init__()
        self.mlp = SharedMLP((in_ch,) + tuple(mlp), dim=1, activation=activation)

    def forward(self, xyz1: Tensor, xyz2: Tensor, feats1: Optional[Tensor], feats2: Tensor) -> Tensor:
        B, N, _ = xyz1.shape
        S = xyz2.shape[1]
        src = feats2.transpose(1, 2)
        if S == 1:  # expect: FL203
            interpolated = src.expand(B, N, src.shape[-1])
        else:
            interpolated = _knn_interpolate(xyz2, src, xyz1, k=min(3, S))  # expect: FL203
        interpolated = interpolated.transpose(1, 2)
        if feats1 is not None:
            interpolated = torch.cat([feats1, interpolated], dim=1)
        return self.mlp(interpolated)

class PointNet2SemSeg(nn.Module):
    def __init__(self, cfg: PointNet2Config = PointNet2Config()):
        super().__init__()
        self.cfg = cfg
        chans = [cfg.in_feats]
        self.sa = nn.ModuleList()
        for sa_cfg in cfg.sa:
            self.sa.append(PointNetSetAbstraction(sa_cfg, chans[-1], cfg.activation))
            chans.append(sa_cfg.mlp[-1])
        self.fp = nn.ModuleList()
        prev = chans[-1]
        for i, mlp in enumerate(cfg.fp):
            skip = chans[-2 - i]
            self.fp.append(PointNetFeaturePropagation(prev + skip, mlp, cfg.activation))
            prev = mlp[-1]
        self.head = nn.Sequential(SharedMLP((prev, cfg.head_dim), dim=1, activation=cfg.activation),
                                  nn.Dropout(cfg.dropout), nn.Conv1d(cfg.head_dim, cfg.num_classes, 1))

    def forward(self, xyz: Tensor, feats: Tensor) -> Tensor:
        xyzs, featss = [xyz], [feats.transpose(1, 2)]
        for sa in self.sa:
            new_xyz, new_feats = sa(xyzs[-1], featss[-1])
            xyzs.append(new_xyz)
            featss.append(new_feats)
        out = featss[-1]
        for i, fp in enumerate(self.fp):
            lvl = len(self.sa) - 1 - i
            out = fp(xyzs[lvl], xyzs[lvl + 1], featss[lvl], out)
        return self.head(out)  # [B, num_classes, N]

# ----------------------------------------------------------------------------- DGCNN
class EdgeConv(nn.Module):
    def __init__(self, in_ch: int, out_ch: int, k: int):
        super().__init__()
        self.k = k
        self.conv = nn.Sequential(nn.Conv2d(2 * in_ch, out_ch, 1, bias=False), nn.BatchNorm2d(out_ch),
                                  nn.LeakyReLU(0.2))

    def forward(self, x: Tensor, idx: Optional[Tensor] = None) -> Tensor:
        return self.conv(get_graph_feature(x, self.k, idx)).amax(dim=-1)

class DGCNNSeg(nn.Module):
    def __init__(self, cfg: DGCNNConfig = DGCNNConfig()):
        super().__init__()
        self.cfg = cfg
        dims = (cfg.in_dim,) + cfg.edge_dims
        self.edges = nn.ModuleList(EdgeConv(a, b, cfg.k) for a, b in zip(dims[:-1], dims[1:]))
        cat_dim = sum(cfg.edge_dims)
        self.embed = SharedMLP((cat_dim, cfg.emb_dim), dim=1, activation="leaky")
        self.head = nn.Sequential(SharedMLP((cat_dim + cfg.emb_dim, 24, 16), dim=1, activation="leaky"),
                                  nn.Conv1d(16, cfg.num_classes, 1))

    def forward(self, x: Tensor) -> Tensor:
        # x [B, in_dim, N]; the first graph is built on normalised coordinates only
        N = x.shape[-1]
        idx = knn(x[:, 6:9], self.cfg.k) if self.cfg.dim9 else None
        feats = []
        for i, edge in enumerate(self.edges):
            x = edge(x, idx if i == 0 else None)
            feats.append(x)
        local = torch.cat(feats, dim=1)
        global_feat = self.embed(local).amax(dim=-1, keepdim=True)
        return self.head(torch.cat([local, global_feat.expand(-1, -1, N)], dim=1))

# ----------------------------------------------------------------------------- deploy pieces
class LabelRemapper(nn.Module):
    """Raw (SemanticKITTI) label ids -> training ids; the upper 16 bits carry the instance id."""
    def __init__(self, mapping: Dict[int, int] = KITTI_LEARNING_MAP, strict: bool = False):
        super().__init__()
        self.strict = strict
        self.register_buffer("lut", build_lut(mapping), persistent=False)

    def forward(self, raw: Tensor) -> Tensor:
        sem = raw.long() & 0xFFFF
        n = self.lut.numel()
        if self.strict:
            if (sem >= n).any():  # expect: FL000 GB0170; FL201
                raise ValueError(f"label id outside the learning map (max {n - 1})")
            return self.lut[sem]
        return torch.where(sem < n, self.lut[sem.clamp(max=n - 1)], torch.full_like(sem, IGNORE_INDEX))

class VoxelGridDownsample(nn.Module):
    """Voxel centroids (xyz + features averaged) and, per input point, its voxel (to scatter predictions back)."""
    def __init__(self, voxel_size: float = 0.25):
        super().__init__()
        self.voxel_size = voxel_size

    def forward(self, points: Tensor) -> Tuple[Tensor, Tensor]:
        coords = torch.floor(points[:, :3] / self.voxel_size).long()
        coords = coords - coords.amin(dim=0)
        dims = coords.amax(dim=0) + 1
        keys = (coords[:, 0] * dims[1] + coords[:, 1]) * dims[2] + coords[:, 2]
        _, inverse = torch.unique(keys, sorted=True, return_inverse=True)  # expect: FL000 GB0036
        num_voxels = int(inverse.max()) + 1  # expect: FL000 GB0124; FL202
        summed = points.new_zeros(num_voxels, points.shape[1]).index_add_(0, inverse, points)
        counts = points.new_zeros(num_voxels).index_add_(0, inverse, torch.ones_like(points[:, 0]))
        return summed / counts.unsqueeze(1), inverse

class SegDeployWrapper(nn.Module):
    """What the C++ runtime calls: raw [B, N, 7] (xyz, rgb 0..255, z) -> per-point label ids."""
    def __init__(self, model: PointNet2SemSeg, max_radius: float = MAX_SCENE_RADIUS, verbose: bool = False):
        super().__init__()
        self.model, self.max_radius, self.verbose = model, max_radius, verbose

    def forward(self, raw: Tensor) -> Tuple[Tensor, Tensor]:
        xyz, rgb, z = raw[..., :3], raw[..., 3:6], raw[..., 6:7]
        xyz = xyz - xyz.mean(dim=1, keepdim=True)
        radius = float(xyz.norm(dim=-1).max())  # expect: FL000 GB0124; FL202
        if radius > self.max_radius:
            xyz = xyz * (self.max_radius / radius)
        if rgb.max() > 1.5:  # expect: FL000 GB0170; FL201
            rgb = rgb / 255.0
        height = z - z.amin(dim=1, keepdim=True)
        logits = self.model(xyz, torch.cat([rgb, height], dim=-1))
        prob = logits.softmax(dim=1)
        conf, labels = prob.max(dim=1)
        if self.verbose:
            print(f"[deploy] scene radius {radius:.2f} m (cap {self.max_radius} m)")  # expect: FL000 GB0059; FL204
        return labels, conf

class SegPostprocessor(nn.Module):
    def __init__(self, class_names: Sequence[str] = S3DIS_CLASSES, min_conf: float = 0.3, log_every: int = 2):
        super().__init__()
        self.class_names = tuple(class_names)
        self.min_conf = min_conf
        self.log_every = log_every
        self.frames_seen = 0

    def forward(self, logits: Tensor) -> Tuple[Tensor, Tensor]:
        conf, pred = logits.softmax(dim=1).max(dim=1)
        pred = pred.masked_fill(conf < self.min_conf, IGNORE_INDEX)
        self.frames_seen += 1  # expect: FL302
        if self.frames_seen % self.log_every == 0:
            _log_class_histogram(pred, self.class_names)  # expect: FL000 GB0098
        return pred, conf

def iter_blocks(n: int, block: int, stride: int) -> Iterator[Tuple[int, int]]:
    start = 0
    while True:
        end = min(start + block, n)
        yield max(end - block, 0), end
        if end >= n:  # expect: FL301
            break
        start += stride

class BlockwiseSegmenter(nn.Module):
    """Overlapping windows along the (pre-sorted) point order; soft votes are averaged."""
    def __init__(self, model: DGCNNSeg, block: int = 24, stride: int = 16,
                 calibrate: Optional[Callable[[Tensor], Tensor]] = None):
        super().__init__()
        self.model, self.block, self.stride = model, block, stride
        self.calibrate = calibrate  # e.g. temperature scaling fitted on the val split

    def forward(self, x: Tensor) -> Tensor:
        B, _, N = x.shape
        votes = x.new_zeros(B, self.model.cfg.num_classes, N)
        hits = x.new_zeros(1, 1, N)
        for start, end in iter_blocks(N, self.block, self.stride):
            logits = self.model(x[..., start:end])
            if self.calibrate is not None:
                logits = self.calibrate(logits)
            votes[..., start:end] += logits.softmax(dim=1)
            hits[..., start:end] += 1
        return votes / hits

class TemporalLogitSmoother(nn.Module):
    """EMA over consecutive LiDAR sweeps (points already associated frame to frame)."""
    def __init__(self, momentum: float = 0.6):
        super().__init__()
        self.momentum = momentum
        self.prev: Optional[Tensor] = None

    def forward(self, logits: Tensor) -> Tensor:
        if self.prev is None or self.prev.shape != logits.shape:
            out = logits
        else:
            out = self.momentum * self.prev + (1.0 - self.momentum) * logits
        self.prev = out.detach()  # expect: FL302
        return out

# ----------------------------------------------------------------------------- compiled functions
@torch.compile
def seg_loss(logits: Tensor, target: Tensor, class_weights: Tensor, label_smoothing: float = 0.1) -> Tensor:
    ce = F.cross_entropy(logits, target, weight=class_weights, ignore_index=IGNORE_INDEX,
                         label_smoothing=label_smoothing)
    # soft dice over valid points, classes on dim 1
    valid = (target != IGNORE_INDEX).unsqueeze(1).to(logits.dtype)
    prob = logits.softmax(dim=1) * valid
    onehot = F.one_hot(target.clamp(max=logits.shape[1] - 1), logits.shape[1]).movedim(-1, 1) * valid
    inter = (prob * onehot).sum(dim=(0, 2))
    dice = 1 - (2 * inter + 1) / (prob.sum(dim=(0, 2)) + onehot.sum(dim=(0, 2)) + 1)
    return ce + 0.5 * dice.mean()

@torch.compile(dynamic=True)
def confusion_miou(pred: Tensor, target: Tensor, num_classes: int) -> Tuple[Tensor, float]:
    trash = num_classes * num_classes
    flat = torch.where(target != IGNORE_INDEX, target * num_classes + pred, trash)
    conf = torch.bincount(flat.flatten(), minlength=trash + 1)[:trash].view(num_classes, num_classes)  # expect: FL000 GB0036
    tp = conf.diagonal()
    union = conf.sum(0) + conf.sum(1) - tp
    ious = []
    for inter_c, union_c in zip(tp.tolist(), union.tolist()):  # expect: FL000 GB0033
        if union_c > 0:
            ious.append(inter_c / union_c)
    return conf, sum(ious) / max(len(ious), 1)

@torch.compile
def class_balanced_weights(labels: Tensor, num_classes: int, beta: float = 0.999) -> Tensor:
    # "effective number of samples" weighting, computed on the CPU copy as in the data tooling
    counts = np.bincount(labels.numpy().ravel(), minlength=num_classes)[:num_classes]  # expect: FL000 GB0036
    effective = (1.0 - np.power(beta, counts)) / (1.0 - beta)
    weights = torch.from_numpy(1.0 / np.maximum(effective, 1.0)).float()
    return weights * num_classes / weights.sum()

@torch.compile
def augment_scene(xyz: Tensor, feats: Tensor, cfg: AugConfig) -> Tuple[Tensor, Tensor]:
    theta = torch.rand(()) * (2.0 * math.pi if cfg.rotate else 0.0)
    c, s, zero, one = torch.cos(theta), torch.sin(theta), torch.zeros(()), torch.ones(())
    rot = torch.stack([torch.stack([c, -s, zero]), torch.stack([s, c, zero]), torch.stack([zero, zero, one])])
    xyz = xyz @ rot.T * random.uniform(*cfg.scale_range)
    if cfg.jitter > 0:
        xyz = xyz + (torch.randn_like(xyz) * cfg.jitter).clamp(-5 * cfg.jitter, 5 * cfg.jitter)
    if cfg.color_drop > 0 and random.random() < cfg.color_drop:  # expect: FL000 GB0007
        feats = torch.cat([torch.zeros_like(feats[..., :3]), feats[..., 3:]], dim=-1)
    return xyz, feats

@torch.compile
def crop_scene(points: Tensor, z_range: Tuple[float, float] = (-0.3, 2.5), radius: float = 3.0,
               min_points: int = 16) -> Tensor:
    z = points[:, 2]
    keep = (z > z_range[0]) & (z < z_range[1]) & (points[:, :2].norm(dim=-1) < radius)
    cropped = points[keep]  # expect: FL000 GB0036
    if cropped.shape[0] < min_points:
        warnings.warn(f"only {cropped.shape[0]} points left after cropping")  # expect: FL000 GB0007
    return cropped

@torch.compile
def adaptive_voxelize(points: Tensor, target_points: int = 48) -> Tuple[Tensor, Tensor]:
    extent = (points[:, :3].amax(0) - points[:, :3].amin(0)).clamp_min(1e-3)
    volume = extent.prod().item()  # expect: FL000 GB0124
    voxel = max(math.pow(volume / target_points, 1.0 / 3.0), 0.02)
    logger.debug("voxel size %.3f for %d points", voxel, points.shape[0])  # expect: FL000 GB0291
    return VoxelGridDownsample(voxel)(points)

def point_feats_to_dgcnn(xyz: Tensor, rgb: Tensor) -> Tensor:
    lo, hi = xyz.amin(dim=1, keepdim=True), xyz.amax(dim=1, keepdim=True)
    normed = (xyz - lo) / (hi - lo).clamp_min(EPS)
    return torch.cat([xyz, rgb, normed], dim=-1).transpose(1, 2).contiguous()

# ----------------------------------------------------------------------------- builders / export
def build_pointnet2(**overrides) -> PointNet2SemSeg:
    return PointNet2SemSeg(PointNet2Config(**overrides)).eval()

def build_dgcnn(**overrides) -> DGCNNSeg:
    return DGCNNSeg(DGCNNConfig(**overrides)).eval()

def export_torchscript(out_dir: str, n: int = 64) -> None:
    xyz, feats = torch.rand(1, n, 3), torch.rand(1, n, 4)
    raw = torch.cat([xyz * 3, torch.rand(1, n, 3) * 255, xyz[..., 2:]], dim=-1)
    torch.jit.trace(PointNet2SemSeg().eval(), (xyz, feats)).save(f"{out_dir}/pointnet2.pt")
    torch.jit.trace(SegDeployWrapper(build_pointnet2(), verbose=True), (raw,)).save(f"{out_dir}/deploy.pt")
    torch.jit.trace(VoxelGridDownsample(0.1), (raw[0],)).save(f"{out_dir}/voxel.pt")
    torch.jit.trace(normalize_unit_sphere, (xyz,)).save(f"{out_dir}/normalize.pt")

def export_programs(out_dir: str, n: int = 64) -> Dict[str, object]:
    xyz, rgb = torch.rand(1, n, 3), torch.rand(1, n, 3)
    labels = torch.randint(0, 260, (1, n), dtype=torch.int32)
    programs = {
        "dgcnn": torch.export.export(DGCNNSeg().eval(), (point_feats_to_dgcnn(xyz, rgb),)),
        "remap": torch.export.export(LabelRemapper(strict=True), (labels,)),
        "remap_lenient": torch.export.export(LabelRemapper(), (labels,)),
        "upsample": torch.export.export(_knn_interpolate, (xyz[:, :16], rgb[:, :16], xyz)),
    }
    for name, program in programs.items():
        torch.export.save(program, f"{out_dir}/{name}.pt2")
    return programs

# ----------------------------------------------------------------------------- cases
def _rand(*shape: int, k: int = 0) -> Tensor:
    return torch.rand(*shape, generator=torch.Generator().manual_seed(k))

def _scene(b: int, n: int, k: int = 0) -> Tuple[Tensor, Tensor]:
    return _rand(b, n, 3, k=k) * 2.0, _rand(b, n, 4, k=k + 1)

def _raw(b: int, n: int, k: int = 0, scale: float = 6.0) -> Tensor:
    xyz = _rand(b, n, 3, k=k) * scale
    return torch.cat([xyz, _rand(b, n, 3, k=k + 1) * 255, xyz[..., 2:] + 0.1], dim=-1)

def _dgcnn_in(b: int, n: int, k: int = 0) -> Tensor:
    return point_feats_to_dgcnn(_rand(b, n, 3, k=k), _rand(b, n, 3, k=k + 1))

def _kitti_labels(*shape: int, k: int = 0) -> Tensor:
    keys = torch.tensor(sorted(KITTI_LEARNING_MAP), dtype=torch.int32)
    instance = (_rand(*shape, k=k + 1) * 7).int() << 16
    return keys[(_rand(*shape, k=k) * len(keys)).long()] | instance

def _labels(*shape: int, k: int = 0) -> Tensor:
    t = torch.randint(0, len(S3DIS_CLASSES), shape, generator=torch.Generator().manual_seed(k))
    return t.masked_fill(_rand(*shape, k=k + 1) < 0.1, IGNORE_INDEX)

_SA1 = SAConfig(npoint=16, radius=0.4, nsample=6, mlp=(12, 16))

CASES = {
    "SharedMLP": lambda: (SharedMLP((7, 12, 16)).eval(), (_rand(2, 7, 5, 9),)),
    "PointNetSetAbstraction": lambda: (PointNetSetAbstraction(_SA1, 4).eval(),
                                       (_scene(2, 24)[0], _scene(2, 24)[1].transpose(1, 2)),
                                       (_scene(3, 12)[0], _scene(3, 12)[1].transpose(1, 2))),
    "PointNetFeaturePropagation": lambda: (PointNetFeaturePropagation(12 + 10, (14,)).eval(),
                                           (_rand(2, 30, 3), _rand(2, 7, 3, k=1), _rand(2, 12, 30, k=2), _rand(2, 10, 7, k=3)),
                                           (_rand(3, 22, 3), _rand(3, 5, 3, k=1), _rand(3, 12, 22, k=2), _rand(3, 10, 5, k=3))),
    "PointNet2SemSeg": lambda: (build_pointnet2(), _scene(2, 40), _scene(3, 28)),
    "EdgeConv": lambda: (EdgeConv(9, 12, 5).eval(), (_dgcnn_in(2, 20),), (_dgcnn_in(3, 14),)),
    "DGCNNSeg": lambda: (build_dgcnn(), (_dgcnn_in(2, 30),), (_dgcnn_in(3, 22),)),
    "LabelRemapper": lambda: (LabelRemapper(), (_kitti_labels(2, 40),), (_kitti_labels(3, 26),)),
    "LabelRemapper_strict": lambda: (LabelRemapper(strict=True), (_kitti_labels(2, 40),)),
    "VoxelGridDownsample": lambda: (VoxelGridDownsample(0.5), (_raw(1, 50)[0],)),
    "SegDeployWrapper": lambda: (SegDeployWrapper(build_pointnet2()), (_raw(2, 36),)),
    "SegDeployWrapper_verbose": lambda: (SegDeployWrapper(build_pointnet2(), verbose=True), (_raw(2, 32, scale=2.0) / 255,)),
    "SegPostprocessor": lambda: (SegPostprocessor(log_every=1), (_rand(2, 13, 30) * 4,)),
    "BlockwiseSegmenter": lambda: (BlockwiseSegmenter(build_dgcnn(edge_dims=(8,), emb_dim=8, dim9=False), calibrate=lambda logits: logits / 1.3),
                                   (_dgcnn_in(2, 30),), (_dgcnn_in(3, 20),)),
    "TemporalLogitSmoother": lambda: (TemporalLogitSmoother(), (_rand(2, 13, 30),)),
    "seg_loss": lambda: (seg_loss, (_rand(2, 13, 30) * 3, _labels(2, 30), torch.ones(13)),
                         (_rand(3, 13, 22) * 3, _labels(3, 22), torch.ones(13))),
    "confusion_miou": lambda: (confusion_miou, (_labels(2, 30).clamp(max=12), _labels(2, 30, k=5), 13)),
    "class_balanced_weights": lambda: (class_balanced_weights, (_labels(2, 30).clamp(max=12), 13)),
    "augment_scene": lambda: (augment_scene, (*_scene(2, 30), AugConfig(color_drop=1.0))),
    "crop_scene": lambda: (crop_scene, (_raw(1, 40, scale=3.0)[0] - 1.0, (-0.3, 2.5), 3.0, 32)),
    "adaptive_voxelize": lambda: (adaptive_voxelize, (_raw(1, 60)[0],)),
    "knn_interpolate": lambda: (knn_interpolate, (_rand(2, 9, 3), _rand(2, 9, 5, k=1), _rand(2, 26, 3, k=2)),
                                (_rand(3, 7, 3), _rand(3, 7, 5, k=1), _rand(3, 20, 3, k=2))),
}

TRACED = {
    "PointNet2SemSeg": lambda: (build_pointnet2(), _scene(1, 40)),
    "SegDeployWrapper": lambda: (SegDeployWrapper(build_pointnet2(), verbose=True), (_raw(1, 36),)),
    "VoxelGridDownsample": lambda: (VoxelGridDownsample(0.5), (_raw(1, 50)[0],)),
    "normalize_unit_sphere": lambda: (normalize_unit_sphere, (_scene(2, 30)[0],)),
    "DGCNNSeg": lambda: (build_dgcnn(), (_dgcnn_in(1, 30),)),
    "LabelRemapper_strict": lambda: (LabelRemapper(strict=True), (_kitti_labels(1, 40),)),
    "LabelRemapper": lambda: (LabelRemapper(), (_kitti_labels(1, 40),)),
    "_knn_interpolate": lambda: (_knn_interpolate, (_rand(1, 9, 3), _rand(1, 9, 5, k=1), _rand(1, 26, 3, k=2))),
}
