"""Bird's-eye-view perception in the style of mmdet3d / BEVDet / Lift-Splat-Shoot / CenterPoint
research code: camera frustum lifting with categorical depth, voxel and pillar pooling,
SECOND-style BEV backbones with FPN necks, CenterPoint and anchor heads, anchor / heatmap target
assignment, ego-motion-aligned temporal BEV fusion, and heatmap decoding with score filtering."""
import functools
import logging
import math
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("bev_perception")
logger.addHandler(logging.NullHandler())

DEBUG_SHAPES = False
USE_CUMSUM_POOL = True
MAX_BEV_SIDE = 16
SCORE_THRESHOLD = 0.1
MIN_GAUSSIAN_RADIUS = 1
COMMON_HEADS = {"reg": 2, "height": 1, "dim": 3, "rot": 2}
CAMERA_WEIGHTS = {"front": 1.0, "side": 0.7, "back": 0.5}

@dataclass(frozen=True)
class GridConfig:
    xbound: Tuple[float, float, float] = (-6.0, 6.0, 1.0)
    ybound: Tuple[float, float, float] = (-5.0, 5.0, 1.0)
    zbound: Tuple[float, float, float] = (-3.0, 3.0, 2.0)
    dbound: Tuple[float, float, float] = (1.0, 6.0, 1.0)

    @property
    def grid_dims(self) -> Tuple[int, int, int]:
        return tuple(int(round((b[1] - b[0]) / b[2])) for b in (self.xbound, self.ybound, self.zbound))

    @property
    def depth_bins(self) -> int:
        return int(math.ceil((self.dbound[1] - self.dbound[0]) / self.dbound[2]))

    def voxel_size(self) -> torch.Tensor:
        return torch.tensor([b[2] for b in (self.xbound, self.ybound, self.zbound)])

    def lower_corner(self) -> torch.Tensor:
        return torch.tensor([b[0] for b in (self.xbound, self.ybound, self.zbound)])

DEFAULT_GRID = GridConfig()

NORM_LAYERS: Dict[str, Callable[[int], nn.Module]] = {
    "bn": nn.BatchNorm2d,
    "gn": functools.partial(nn.GroupNorm, 2),
    "none": lambda c: nn.Identity(),
}

def build_norm(kind: str, channels: int) -> nn.Module:
    try:
        return NORM_LAYERS[kind](channels)
    except KeyError as err:
        raise KeyError(f"unknown norm {kind!r} ({sorted(NORM_LAYERS)})") from err

def conv_bn_relu(cin: int, cout: int, k: int = 3, stride: int = 1, norm: str = "bn") -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, bias=norm == "none"),
                         build_norm(norm, cout), nn.ReLU(inplace=True))

# --------------------------------------------------------------------------- camera -> BEV lifting

def create_frustum(cfg: GridConfig, image_hw: Tuple[int, int], feat_hw: Tuple[int, int]) -> torch.Tensor:
    (ih, iw), (fh, fw) = image_hw, feat_hw
    ds = torch.arange(*cfg.dbound, dtype=torch.float32).view(-1, 1, 1).expand(-1, fh, fw)
    d = ds.shape[0]
    xs = torch.linspace(0, iw - 1, fw).view(1, 1, fw).expand(d, fh, fw)
    ys = torch.linspace(0, ih - 1, fh).view(1, fh, 1).expand(d, fh, fw)
    return torch.stack((xs, ys, ds), -1)

def get_geometry(frustum, rots, trans, intrins):
    """Frustum points (pixel u, v, depth) -> ego-frame xyz of shape (B, N, D, fH, fW, 3)."""
    b, n, _ = trans.shape
    points = frustum.unsqueeze(0).unsqueeze(0).expand(b, n, *frustum.shape)
    points = torch.cat((points[..., :2] * points[..., 2:3], points[..., 2:3]), -1)
    combine = rots.matmul(torch.inverse(intrins))
    points = combine.view(b, n, 1, 1, 1, 3, 3).matmul(points.unsqueeze(-1)).squeeze(-1)
    return points + trans.view(b, n, 1, 1, 1, 3)

def cumsum_trick(x, geom_feats, ranks):
    x = x.cumsum(0)
    kept = torch.ones(x.shape[0], device=x.device, dtype=torch.bool)
    kept[:-1] = ranks[1:] != ranks[:-1]
    x, geom_feats = x[kept], geom_feats[kept]  # expect: FL000 GB0036
    x = torch.cat((x[:1], x[1:] - x[:-1]))
    return x, geom_feats

def voxel_pooling(geom, x, cfg: GridConfig):
    b, n, d, h, w, c = x.shape
    nprime = b * n * d * h * w
    x = x.reshape(nprime, c)
    coords = ((geom - cfg.lower_corner()) / cfg.voxel_size()).long().view(nprime, 3)
    batch_ix = torch.cat([torch.full((nprime // b, 1), ix, dtype=torch.long) for ix in range(b)])
    coords = torch.cat((coords, batch_ix), 1)
    nx, ny, nz = cfg.grid_dims
    kept = ((coords[:, 0] >= 0) & (coords[:, 0] < nx) & (coords[:, 1] >= 0) & (coords[:, 1] < ny)
            & (coords[:, 2] >= 0) & (coords[:, 2] < nz))
    x, coords = x[kept], coords[kept]  # expect: FL000 GB0036
    ranks = coords[:, 0] * (ny * nz * b) + coords[:, 1] * (nz * b) + coords[:, 2] * b + coords[:, 3]
    order = ranks.argsort()
    x, coords, ranks = x[order], coords[order], ranks[order]
    if USE_CUMSUM_POOL:
        x, coords = cumsum_trick(x, coords, ranks)
    final = torch.zeros((b, c, nz, ny, nx), dtype=x.dtype)
    final[coords[:, 3], :, coords[:, 2], coords[:, 1], coords[:, 0]] = x
    return torch.cat(final.unbind(dim=2), 1)

class CamEncoder(nn.Module):
    def __init__(self, in_ch: int = 6, ctx_ch: int = 4, depth_bins: int = 5, norm: str = "gn"):
        super().__init__()
        self.depth_bins = depth_bins
        self.ctx_ch = ctx_ch
        self.reduce = conv_bn_relu(in_ch, 8, norm=norm)
        self.depthnet = nn.Conv2d(8, depth_bins + ctx_ch, 1)

    def forward(self, x):
        x = self.depthnet(self.reduce(x))
        depth = x[:, : self.depth_bins].softmax(dim=1)
        ctx = x[:, self.depth_bins: self.depth_bins + self.ctx_ch]
        return depth.unsqueeze(1) * ctx.unsqueeze(2)

class LiftSplatShoot(nn.Module):
    def __init__(self, cfg: GridConfig = DEFAULT_GRID, image_hw=(24, 32), feat_hw=(4, 7), in_ch=6, ctx_ch=4):
        super().__init__()
        self.cfg = cfg
        self.ctx_ch = ctx_ch
        self.register_buffer("frustum", create_frustum(cfg, image_hw, feat_hw), persistent=False)
        self.encoder = CamEncoder(in_ch, ctx_ch, cfg.depth_bins)

    def lift(self, imgs):
        b, n, _, h, w = imgs.shape
        feats = self.encoder(imgs.flatten(0, 1))
        feats = feats.view(b, n, self.ctx_ch, self.cfg.depth_bins, h, w)
        return feats.permute(0, 1, 3, 4, 5, 2)

    def forward(self, imgs, rots, trans, intrins):
        geom = get_geometry(self.frustum, rots, trans, intrins)
        feats = self.lift(imgs)
        if DEBUG_SHAPES:
            logger.info("lss geom %s feats %s", tuple(geom.shape), tuple(feats.shape))
        return voxel_pooling(geom, feats, self.cfg)

@torch.compile
def fuse_camera_bevs(cam_bevs, visibility: Optional[torch.Tensor] = None):
    """Visibility-weighted average of per-camera BEV features (B, N, C, H, W)."""
    n = cam_bevs.shape[1]
    acc = torch.zeros_like(cam_bevs[:, 0])
    wsum = torch.zeros_like(acc[:, :1])
    for i in range(n):
        w = camera_weight(i, n)
        if visibility is not None:
            w = w * visibility[:, i].view(-1, 1, 1, 1)
        acc = acc + w * cam_bevs[:, i]
        wsum = wsum + w
    return acc / wsum.clamp(min=1e-6)

def camera_weight(index: int, num_cams: int) -> float:
    if index == 0:
        return CAMERA_WEIGHTS["front"]
    if index == num_cams // 2:  # expect: FL301
        return CAMERA_WEIGHTS["back"]
    return CAMERA_WEIGHTS["side"]

# --------------------------------------------------------------------------- pillars

@torch.compile
def points_to_pillars(points, max_points: int = 4, cfg: GridConfig = DEFAULT_GRID):
    """Dynamic voxelisation fallback (no spconv): unique pillar ids, then pad into (P, M, C)."""
    nx, ny, _ = cfg.grid_dims
    lower = points.new_tensor([cfg.xbound[0], cfg.ybound[0]])
    size = points.new_tensor([cfg.xbound[2], cfg.ybound[2]])
    coords = ((points[:, :2] - lower) / size).floor().long()
    in_range = ((coords >= 0) & (coords < coords.new_tensor([nx, ny]))).all(1)
    points, coords = points[in_range], coords[in_range]  # expect: FL000 GB0036
    pillar_ids = coords[:, 1] * nx + coords[:, 0]
    uniq, inverse, counts = torch.unique(pillar_ids, return_inverse=True, return_counts=True)  # expect: FL000 GB0036
    order = torch.argsort(inverse, stable=True)
    sorted_inv = inverse[order]
    starts = torch.cumsum(counts, 0) - counts
    slot = torch.arange(order.numel()) - starts[sorted_inv]
    keep = slot < max_points
    pillars = points.new_zeros(uniq.numel(), max_points, points.shape[1])
    pillars[sorted_inv[keep], slot[keep]] = points[order][keep]  # expect: FL000 GB0036
    coors = torch.stack([torch.zeros_like(uniq), torch.zeros_like(uniq), uniq // nx, uniq % nx], 1)
    return pillars, counts.clamp(max=max_points), coors

def get_paddings_indicator(actual_num, max_num: int, axis: int = 0):
    actual_num = torch.unsqueeze(actual_num, axis + 1)
    max_num_shape = [1] * len(actual_num.shape)
    max_num_shape[axis + 1] = -1
    max_num = torch.arange(max_num, dtype=torch.int, device=actual_num.device).view(max_num_shape)
    return actual_num.int() > max_num

class PillarFeatureNet(nn.Module):
    def __init__(self, in_ch: int = 4, out_ch: int = 8, cfg: GridConfig = DEFAULT_GRID):
        super().__init__()
        self.linear = nn.Linear(in_ch + 5, out_ch, bias=False)
        self.norm = nn.BatchNorm1d(out_ch, eps=1e-3, momentum=0.01)
        self.vx, self.vy = cfg.xbound[2], cfg.ybound[2]
        self.x_offset = self.vx / 2 + cfg.xbound[0]
        self.y_offset = self.vy / 2 + cfg.ybound[0]

    def forward(self, features, num_points, coors):
        assert int(num_points.min()) > 0, "empty pillar in batch"  # expect: FL000 GB0124
        points_mean = features[:, :, :3].sum(dim=1, keepdim=True) / num_points.type_as(features).view(-1, 1, 1)
        f_cluster = features[:, :, :3] - points_mean
        centers = torch.stack([coors[:, 3].to(features.dtype) * self.vx + self.x_offset,
                               coors[:, 2].to(features.dtype) * self.vy + self.y_offset], -1)
        features = torch.cat([features, f_cluster, features[:, :, :2] - centers.unsqueeze(1)], dim=-1)
        mask = get_paddings_indicator(num_points, features.shape[1])
        features = features * mask.unsqueeze(-1).type_as(features)
        x = F.relu(self.norm(self.linear(features).permute(0, 2, 1)).permute(0, 2, 1))
        return x.max(dim=1)[0]

class PointPillarsScatter(nn.Module):
    def __init__(self, in_ch: int = 8, output_shape: Tuple[int, int] = (10, 12)):
        super().__init__()
        self.in_ch = in_ch
        self.ny, self.nx = output_shape

    def forward(self, voxel_features, coors, batch_size: Optional[int] = None):
        if batch_size is None:
            batch_size = int(coors[:, 0].max().item()) + 1  # expect: FL000 GB0124
        canvases = []
        for b in range(batch_size):
            canvas = voxel_features.new_zeros(self.in_ch, self.nx * self.ny)
            batch_mask = coors[:, 0] == b
            this_coors = coors[batch_mask, :]  # expect: FL000 GB0036
            indices = this_coors[:, 2] * self.nx + this_coors[:, 3]
            canvas[:, indices] = voxel_features[batch_mask, :].t()
            canvases.append(canvas)
        return torch.stack(canvases, 0).view(batch_size, self.in_ch, self.ny, self.nx)

# --------------------------------------------------------------------------- BEV encoder / neck

class SECONDBackbone(nn.Module):
    def __init__(self, in_ch=8, out_channels=(8, 12), layer_nums=(1, 2), strides=(1, 2), norm="bn"):
        super().__init__()
        blocks, cin = [], in_ch
        for cout, num, stride in zip(out_channels, layer_nums, strides):
            layers = [conv_bn_relu(cin, cout, 3, stride, norm)]
            layers += [conv_bn_relu(cout, cout, 3, 1, norm) for _ in range(num)]
            blocks.append(nn.Sequential(*layers))
            cin = cout
        self.blocks = nn.ModuleList(blocks)

    def forward(self, x):
        if x.shape[-1] > MAX_BEV_SIDE:  # expect: FL301
            x = F.avg_pool2d(x, 2)
        outs = []
        for block in self.blocks:
            x = block(x)
            outs.append(x)
        return tuple(outs)

class SECONDFPN(nn.Module):
    def __init__(self, in_channels=(8, 12), out_channels=(6, 6), upsample_strides=(1, 2)):
        super().__init__()
        deblocks = []
        for cin, cout, s in zip(in_channels, out_channels, upsample_strides):
            up = nn.ConvTranspose2d(cin, cout, s, s, bias=False) if s > 1 else nn.Conv2d(cin, cout, 1, bias=False)
            deblocks.append(nn.Sequential(up, nn.BatchNorm2d(cout), nn.ReLU(inplace=True)))
        self.deblocks = nn.ModuleList(deblocks)

    def forward(self, feats):
        assert len(feats) == len(self.deblocks), "one input per deblock"
        ups = [deblock(f) for deblock, f in zip(self.deblocks, feats)]
        return torch.cat(ups, dim=1) if len(ups) > 1 else ups[0]

@torch.compile
def align_feature_levels(feats: List[torch.Tensor], mode: str = "bilinear"):
    target = feats[0].shape[-2:]
    out = [feats[0]]
    for f in feats[1:]:
        if f.shape[-2:] != target:  # expect: FL301
            f = F.interpolate(f, size=target, mode=mode, align_corners=False)
        out.append(f)
    return torch.cat(out, 1)

def ego_motion_grid(curr2prev, cfg: GridConfig, bev_hw):
    """Affine sampling grid that looks up each current BEV cell in the previous frame."""
    ny, nx = bev_hw
    theta = curr2prev[:, :2, [0, 1, 3]].clone()
    half = theta.new_tensor([(cfg.xbound[1] - cfg.xbound[0]) / 2, (cfg.ybound[1] - cfg.ybound[0]) / 2])
    theta[:, :, 2] = theta[:, :, 2] / half
    return F.affine_grid(theta, [curr2prev.shape[0], 1, ny, nx], align_corners=False)

class TemporalBEVFusion(nn.Module):
    """BEVDet4D-style: warp the cached previous BEV with ego motion, concatenate, fuse."""
    def __init__(self, channels: int = 8, cfg: GridConfig = DEFAULT_GRID):
        super().__init__()
        self.cfg = cfg
        self.fuse = conv_bn_relu(2 * channels, channels, 3, norm="gn")
        self.prev_bev: Optional[torch.Tensor] = None

    def forward(self, bev, curr2prev):
        if self.prev_bev is None or self.prev_bev.shape != bev.shape:
            prev = bev.detach()
        else:
            grid = ego_motion_grid(curr2prev, self.cfg, bev.shape[-2:])
            prev = F.grid_sample(self.prev_bev, grid, align_corners=False)
        out = self.fuse(torch.cat([bev, prev], 1))
        self.prev_bev = bev.detach()  # expect: FL302
        return out

# --------------------------------------------------------------------------- heads

@functools.lru_cache(maxsize=16)
def bev_coord_channels(ny: int, nx: int) -> torch.Tensor:
    yy, xx = np.meshgrid(np.linspace(-1.0, 1.0, ny, dtype=np.float32), np.linspace(-1.0, 1.0, nx, dtype=np.float32),
                         indexing="ij")
    return torch.from_numpy(np.stack([xx, yy])[None])

def clip_sigmoid(x, eps: float = 1e-4):
    return torch.clamp(x.sigmoid_(), min=eps, max=1 - eps)

def check_finite(name: str, t: torch.Tensor) -> None:
    if not torch.isfinite(t).all():  # expect: FL000 GB0170
        logger.warning("non-finite values in %s", name)

class SeparateHead(nn.Module):
    def __init__(self, in_ch: int, heads: Dict[str, int], head_ch: int = 8, final_kernel: int = 3,
                 init_bias: float = -2.19):
        super().__init__()
        self.heads = dict(heads)
        for name, out_ch in self.heads.items():
            conv = nn.Sequential(conv_bn_relu(in_ch, head_ch, final_kernel),
                                 nn.Conv2d(head_ch, out_ch, final_kernel, padding=final_kernel // 2))
            if name == "heatmap":
                conv[-1].bias.data.fill_(init_bias)
            self.__setattr__(name, conv)

    def forward(self, x):
        return {name: getattr(self, name)(x) for name in self.heads}

class CenterHead(nn.Module):
    def __init__(self, in_ch: int = 12, tasks=(1, 2), head_ch: int = 8, with_coord: bool = True):
        super().__init__()
        self.with_coord = with_coord
        self.shared_conv = conv_bn_relu(in_ch + 2 * int(with_coord), head_ch)
        self.task_heads = nn.ModuleList(SeparateHead(head_ch, dict(COMMON_HEADS, heatmap=n), head_ch) for n in tasks)

    def forward(self, x):
        if self.with_coord:
            b, _, h, w = x.shape
            x = torch.cat([x, bev_coord_channels(h, w).to(x).expand(b, -1, -1, -1)], 1)
        x = self.shared_conv(x)
        preds = []
        for task_head in self.task_heads:
            out = task_head(x)
            check_finite("heatmap", out["heatmap"])
            out["heatmap"] = clip_sigmoid(out["heatmap"])
            preds.append(out)
        return preds

# --------------------------------------------------------------------------- targets and losses

def bev_iou_axis_aligned(boxes_a, boxes_b):
    """Axis-aligned BEV IoU of (N, 7) and (M, 7) boxes, as in the nearest-BEV assigner."""
    def to_corners(b):
        half = b[:, 3:5] / 2
        return torch.cat([b[:, :2] - half, b[:, :2] + half], -1)

    a, bb = to_corners(boxes_a), to_corners(boxes_b)
    wh = (torch.min(a[:, None, 2:], bb[None, :, 2:]) - torch.max(a[:, None, :2], bb[None, :, :2])).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (bb[:, 2] - bb[:, 0]) * (bb[:, 3] - bb[:, 1])
    return inter / (area_a[:, None] + area_b[None] - inter).clamp(min=1e-6)

@torch.compile
def assign_anchor_targets(anchors, gt_boxes, gt_labels, pos_iou: float = 0.6, neg_iou: float = 0.45):
    ious = bev_iou_axis_aligned(anchors, gt_boxes)
    max_iou, argmax = ious.max(dim=1)
    labels = torch.full_like(argmax, -1)
    labels = torch.where(max_iou < neg_iou, torch.zeros_like(labels), labels)
    force = torch.zeros_like(max_iou, dtype=torch.bool).scatter_(0, ious.argmax(dim=0), True)
    pos = (max_iou >= pos_iou) | force
    labels = torch.where(pos, gt_labels[argmax] + 1, labels)
    logger.debug("anchor assigner: %d positives / %d anchors", int(pos.sum()), anchors.shape[0])  # expect: FL000 GB0124; FL000 GB0291
    matched = gt_boxes[argmax]
    deltas = torch.cat([matched[:, :3] - anchors[:, :3], torch.log(matched[:, 3:6] / anchors[:, 3:6]),
                        matched[:, 6:] - anchors[:, 6:]], 1)
    return labels, deltas * pos.float()[:, None], pos.float()

def gaussian_radius(det_size, min_overlap: float = 0.5):
    height, width = det_size
    b1 = height + width
    c1 = width * height * (1 - min_overlap) / (1 + min_overlap)
    r1 = (b1 + torch.sqrt(b1 ** 2 - 4 * c1)) / 2
    b2 = 2 * (height + width)
    c2 = (1 - min_overlap) * width * height
    r2 = (b2 + torch.sqrt(b2 ** 2 - 16 * c2)) / 2
    a3 = 4 * min_overlap
    b3 = -2 * min_overlap * (height + width)
    c3 = (min_overlap - 1) * width * height
    r3 = (b3 + torch.sqrt(b3 ** 2 - 4 * a3 * c3)) / 2
    return min(r1, r2, r3)

def gaussian_2d(shape, sigma: float = 1.0) -> np.ndarray:
    m, n = [(ss - 1.0) / 2.0 for ss in shape]
    y, x = np.ogrid[-m:m + 1, -n:n + 1]  # expect: FL000 GB0008
    h = np.exp(-(x * x + y * y) / (2 * sigma * sigma))
    h[h < np.finfo(h.dtype).eps * h.max()] = 0  # expect: FL000 GB0157
    return h

def draw_heatmap_gaussian(heatmap, center, radius: int, k: float = 1.0):
    diameter = 2 * radius + 1
    gaussian = gaussian_2d((diameter, diameter), sigma=diameter / 6)
    x, y = int(center[0]), int(center[1])  # expect: FL000 GB0124
    height, width = heatmap.shape[0:2]
    left, right = min(x, radius), min(width - x, radius + 1)
    top, bottom = min(y, radius), min(height - y, radius + 1)
    masked_heatmap = heatmap[y - top:y + bottom, x - left:x + right]
    masked_gaussian = torch.from_numpy(gaussian[radius - top:radius + bottom, radius - left:radius + right]).float()
    if min(masked_gaussian.shape) > 0 and min(masked_heatmap.shape) > 0:
        torch.max(masked_heatmap, masked_gaussian * k, out=masked_heatmap)  # expect: FL000 GB0242
    return heatmap

def draw_heatmap_targets(gt_boxes, gt_labels, num_classes: int = 3, cfg: GridConfig = DEFAULT_GRID):
    nx, ny, _ = cfg.grid_dims
    heatmap = gt_boxes.new_zeros(num_classes, ny, nx)
    vx, vy = cfg.xbound[2], cfg.ybound[2]
    for k in range(gt_boxes.shape[0]):
        width, length = gt_boxes[k, 3] / vx, gt_boxes[k, 4] / vy
        if width <= 0 or length <= 0:  # expect: FL000 GB0170
            continue
        radius = max(MIN_GAUSSIAN_RADIUS, int(gaussian_radius((length, width))))
        center = torch.stack([(gt_boxes[k, 0] - cfg.xbound[0]) / vx, (gt_boxes[k, 1] - cfg.ybound[0]) / vy])
        center_int = center.to(torch.int32)
        if not (0 <= center_int[0] < nx and 0 <= center_int[1] < ny):
            continue
        draw_heatmap_gaussian(heatmap[gt_labels[k]], center_int, radius)
    return heatmap

draw_heatmap_compiled = torch.compile(draw_heatmap_targets)

def _gather_feat(feats, inds):
    inds = inds.unsqueeze(2).expand(inds.size(0), inds.size(1), feats.size(2))
    return feats.gather(1, inds)

def _transpose_and_gather_feat(feat, ind):
    feat = feat.permute(0, 2, 3, 1).contiguous()
    return _gather_feat(feat.view(feat.size(0), -1, feat.size(3)), ind)

# --------------------------------------------------------------------------- post-processing

def _nms_heatmap(heat, kernel: int = 3):
    hmax = F.max_pool2d(heat, kernel, stride=1, padding=(kernel - 1) // 2)
    return heat * (hmax == heat).float()

def _topk(scores, k: int):
    b, c, h, w = scores.shape
    topk_scores, topk_inds = torch.topk(scores.view(b, c, -1), k)
    topk_ys = torch.div(topk_inds, w, rounding_mode="floor").float()
    topk_xs = (topk_inds % w).float()
    topk_score, topk_ind = torch.topk(topk_scores.view(b, -1), k)
    topk_clses = torch.div(topk_ind, k, rounding_mode="floor")
    inds = _gather_feat(topk_inds.view(b, -1, 1), topk_ind).view(b, k)
    ys = _gather_feat(topk_ys.view(b, -1, 1), topk_ind).view(b, k)
    xs = _gather_feat(topk_xs.view(b, -1, 1), topk_ind).view(b, k)
    return topk_score, inds, topk_clses, ys, xs

def filter_detections(boxes, scores, labels, score_thr: float = SCORE_THRESHOLD):
    keep = scores > score_thr
    return {"boxes": boxes[keep], "scores": scores[keep], "labels": labels[keep]}  # expect: FL000 GB0036

@torch.compile(dynamic=False)
def decode_centerpoint(preds: Dict[str, torch.Tensor], k: int = 8, cfg: GridConfig = DEFAULT_GRID):
    scores, inds, clses, ys, xs = _topk(_nms_heatmap(preds["heatmap"]), k)
    reg = _transpose_and_gather_feat(preds["reg"], inds)
    xs = (xs.unsqueeze(-1) + reg[..., :1]) * cfg.xbound[2] + cfg.xbound[0]
    ys = (ys.unsqueeze(-1) + reg[..., 1:2]) * cfg.ybound[2] + cfg.ybound[0]
    rot = _transpose_and_gather_feat(preds["rot"], inds)
    yaw = torch.atan2(rot[..., :1], rot[..., 1:2])
    height = _transpose_and_gather_feat(preds["height"], inds)
    dims = _transpose_and_gather_feat(preds["dim"], inds).exp()
    boxes = torch.cat([xs, ys, height, dims, yaw], dim=-1)
    return [filter_detections(b, s, c) for b, s, c in zip(boxes, scores, clses)]

# --------------------------------------------------------------------------- cases

def _randn(*shape, seed: int = 0, uniform: bool = False) -> torch.Tensor:
    return (torch.rand if uniform else torch.randn)(*shape, generator=torch.Generator().manual_seed(seed))

def _camera_rig(b: int = 2, n: int = 3, seed: int = 0):
    base = torch.tensor([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
    yaws = [2 * math.pi * i / n for i in range(n)]
    rz = torch.tensor([[[math.cos(a), -math.sin(a), 0.0], [math.sin(a), math.cos(a), 0.0], [0.0, 0.0, 1.0]] for a in yaws])
    rots = (rz @ base).expand(b, n, 3, 3).clone()
    trans = 0.1 * _randn(b, n, 3, seed=seed)
    intrins = torch.tensor([[16.0, 0.0, 16.0], [0.0, 16.0, 12.0], [0.0, 0.0, 1.0]]).expand(b, n, 3, 3).clone()
    return rots, trans, intrins

def _points(n: int = 40, seed: int = 2) -> torch.Tensor:
    u = _randn(n, 4, seed=seed, uniform=True)
    return torch.stack([u[:, 0] * 14 - 7, u[:, 1] * 11 - 5.5, u[:, 2] * 3 - 2, u[:, 3]], 1)

def _gt_boxes(seed: int = 3) -> Tuple[torch.Tensor, torch.Tensor]:
    u = _randn(3, 7, seed=seed, uniform=True)
    boxes = torch.stack([u[:, 0] * 8 - 4, u[:, 1] * 6 - 3, u[:, 2] - 1.5, 1.5 + u[:, 3], 3.0 + u[:, 4],
                         1.4 + u[:, 5] * 0.4, u[:, 6] * math.pi], 1)
    return boxes, torch.tensor([0, 2, 1])

def _scatter_inputs(p: int = 9):
    cells = torch.randperm(120, generator=torch.Generator().manual_seed(4))[:p]
    batch = (torch.arange(p) >= 5).long()
    return _randn(p, 8, seed=5), torch.stack([batch, torch.zeros_like(batch), cells // 12, cells % 12], 1)

def _anchors(h: int = 3, w: int = 4, sizes=((1.6, 3.9, 1.56), (0.6, 0.8, 1.73))) -> torch.Tensor:
    yy, xx = torch.meshgrid(torch.linspace(-5.0, 5.0, h), torch.linspace(-6.0, 6.0, w), indexing="ij")
    centers = torch.stack([xx, yy, torch.full_like(xx, -1.0)], -1).reshape(-1, 1, 3).expand(-1, len(sizes), 3)
    dims = torch.tensor(sizes).expand(h * w, -1, -1)
    return torch.cat([centers, dims, torch.zeros(h * w, len(sizes), 1)], -1).reshape(-1, 7)

def _center_preds(seed: int = 6) -> Dict[str, torch.Tensor]:
    shapes = {"heatmap": 3, "reg": 2, "height": 1, "dim": 3, "rot": 2}
    preds = {k: _randn(2, c, 10, 12, seed=seed + i) for i, (k, c) in enumerate(shapes.items())}
    preds["heatmap"] = preds["heatmap"].sigmoid().clamp(1e-4, 1 - 1e-4)
    return preds

def _ego_motion(yaws=(0.05, 0.1)) -> torch.Tensor:
    return torch.tensor([[[math.cos(a), -math.sin(a), 0.0, 0.4 * (i + 1)], [math.sin(a), math.cos(a), 0.0, -0.2],
                          [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]] for i, a in enumerate(yaws)])

CASES = {
    "CamEncoder": lambda: (CamEncoder(), (_randn(6, 6, 4, 7, seed=0),)),
    "LiftSplatShoot": lambda: (LiftSplatShoot().eval(), (_randn(2, 3, 6, 4, 7, seed=0), *_camera_rig())),
    "fuse_camera_bevs": lambda: (fuse_camera_bevs, (_randn(2, 3, 4, 6, 7, seed=1),),
                                 (_randn(2, 5, 4, 6, 7, seed=1),)),
    "points_to_pillars": lambda: (points_to_pillars, (_points(),)),
    "PillarFeatureNet": lambda: (PillarFeatureNet().eval(), points_to_pillars(_points())),
    "PointPillarsScatter": lambda: (PointPillarsScatter(), _scatter_inputs()),
    "SECONDBackbone": lambda: (SECONDBackbone().eval(), (_randn(2, 8, 10, 12, seed=3),),
                               (_randn(2, 8, 14, 20, seed=3),)),
    "SECONDFPN": lambda: (SECONDFPN().eval(), ((_randn(2, 8, 10, 12, seed=4), _randn(2, 12, 5, 6, seed=5)),)),
    "align_feature_levels": lambda: (align_feature_levels, ([_randn(2, 4, 10, 12, seed=6), _randn(2, 7, 5, 6, seed=7)],),
                                     ([_randn(2, 4, 10, 12, seed=6), _randn(2, 7, 10, 12, seed=7)],)),
    "TemporalBEVFusion": lambda: (TemporalBEVFusion(), (_randn(2, 8, 10, 12, seed=8), _ego_motion())),
    "SeparateHead": lambda: (SeparateHead(12, {"reg": 2, "heatmap": 3}).eval(), (_randn(2, 12, 10, 12, seed=9),)),
    "CenterHead": lambda: (CenterHead(12).eval(), (_randn(2, 12, 10, 12, seed=9),)),
    "assign_anchor_targets": lambda: (assign_anchor_targets, (_anchors(), *_gt_boxes())),
    "draw_heatmap_targets": lambda: (draw_heatmap_compiled, _gt_boxes()),
    "decode_centerpoint": lambda: (decode_centerpoint, (_center_preds(),)),
}
