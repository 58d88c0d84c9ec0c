"""Top-down pose estimation (mmpose / HRNet / SimpleBaseline style): heatmap heads, argmax / soft-argmax / DARK
decoding, flip test, targets, OKS / PCK, limb losses, OHKM, affine crops, HRNet-lite, one-euro smoothing, peaks."""
import functools
import logging
import math
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("pose")
logger.addHandler(logging.NullHandler())

NUM_JOINTS = 5
# toy skeleton: 0 head, 1 l_shoulder, 2 r_shoulder, 3 l_hip, 4 r_hip
FLIP_PAIRS = ((1, 2), (3, 4))
SKELETON = ((0, 1), (0, 2), (1, 3), (2, 4), (3, 4))
OKS_SIGMAS = np.array([0.26, 0.79, 0.79, 1.07, 1.07], dtype=np.float32) / 10.0
OKS_THRESHOLDS = np.linspace(0.5, 0.95, 10)
PCK_THRESHOLDS = (0.05, 0.1, 0.2)
PIXEL_STD = 200.0
HEATMAP_EPS = 1e-10
CHECK_FINITE = True

@dataclass
class HeadConfig:
    in_channels: int = 6
    num_joints: int = NUM_JOINTS
    num_deconv: int = 1
    deconv_channels: int = 8
    final_kernel: int = 1
    decoder: str = "soft_argmax"
    beta: float = 10.0

@dataclass
class TopDownConfig:
    input_size: Tuple[int, int] = (24, 20)  # (H, W)
    padding_ratio: float = 1.25
    flip_test: bool = True
    shift_heatmap: bool = True
    channels: Tuple[int, ...] = (6, 10)
    head: HeadConfig = field(default_factory=HeadConfig)

    @property
    def aspect_ratio(self) -> float:
        return self.input_size[1] / self.input_size[0]


def flip_index(num_joints: int = NUM_JOINTS, pairs=FLIP_PAIRS) -> List[int]:
    idx = list(range(num_joints))
    for a, b in pairs:
        idx[a], idx[b] = b, a
    return idx

def make_coord_grid(h: int, w: int, device=None, dtype=torch.float32):
    ys = torch.arange(h, device=device, dtype=dtype)
    xs = torch.arange(w, device=device, dtype=dtype)
    return ys, xs

def limb_index(skeleton=SKELETON) -> Tuple[List[int], List[int]]:
    return [a for a, _ in skeleton], [b for _, b in skeleton]

def limb_vectors(kpts, skeleton=SKELETON):
    src, dst = limb_index(skeleton)
    return kpts[:, dst] - kpts[:, src]

def transform_preds(coords, center, scale, heatmap_size):
    """Heatmap coordinates -> original image coordinates (inverse of the top-down crop)."""
    h, w = heatmap_size
    scale_px = scale * PIXEL_STD
    x = coords[..., 0] * (scale_px[:, 0:1] / w) + center[:, 0:1] - scale_px[:, 0:1] * 0.5
    y = coords[..., 1] * (scale_px[:, 1:2] / h) + center[:, 1:2] - scale_px[:, 1:2] * 0.5
    return torch.stack([x, y], dim=-1)

def soft_argmax_2d(heatmaps, beta: float = 1.0):
    b, k, h, w = heatmaps.shape
    probs = F.softmax(heatmaps.reshape(b, k, -1) * beta, dim=-1).reshape(b, k, h, w)
    ys, xs = make_coord_grid(h, w, heatmaps.device, heatmaps.dtype)
    x = (probs.sum(dim=2) * xs).sum(dim=-1)
    y = (probs.sum(dim=3) * ys).sum(dim=-1)
    return torch.stack([x, y], dim=-1), probs.flatten(2).amax(dim=-1)

def get_max_preds(heatmaps):
    assert heatmaps.dim() == 4, "heatmaps should be (B, K, H, W)"
    b, k, h, w = heatmaps.shape
    maxvals, idx = heatmaps.reshape(b, k, -1).max(dim=-1)
    preds = torch.stack([idx % w, idx // w], dim=-1).to(heatmaps.dtype)
    preds = torch.where((maxvals > 0).unsqueeze(-1), preds, torch.full_like(preds, -1.0))
    return preds, maxvals

def quarter_offset(heatmaps, preds):
    """SimpleBaseline post-processing: shift 0.25 px towards the higher neighbour."""
    b, k, h, w = heatmaps.shape
    out = preds.clone()
    for n in range(b):
        for j in range(k):
            hm = heatmaps[n, j]
            px, py = int(preds[n, j, 0] + 0.5), int(preds[n, j, 1] + 0.5)  # expect: FL000 GB0124
            if 1 < px < w - 1 and 1 < py < h - 1:
                diff = torch.stack([hm[py, px + 1] - hm[py, px - 1], hm[py + 1, px] - hm[py - 1, px]])
                out[n, j] += torch.sign(diff) * 0.25
    return out

@torch.compile
def decode_heatmaps(heatmaps, center, scale, refine: bool = True):
    preds, maxvals = get_max_preds(heatmaps)
    if refine:
        preds = quarter_offset(heatmaps, preds)
    return transform_preds(preds, center, scale, heatmaps.shape[-2:]), maxvals

def gaussian_blur_heatmaps(heatmaps, kernel: int = 3):
    k = heatmaps.shape[1]
    sigma = 0.3 * ((kernel - 1) * 0.5 - 1) + 0.8
    ax = torch.arange(kernel, dtype=heatmaps.dtype) - (kernel - 1) / 2
    g = torch.exp(-ax ** 2 / (2 * sigma ** 2))
    g /= g.sum()
    weight = (g[:, None] * g[None, :]).expand(k, 1, kernel, kernel)
    orig_max = heatmaps.flatten(2).amax(-1)[..., None, None]
    blurred = F.conv2d(F.pad(heatmaps, [kernel // 2] * 4, mode="replicate"), weight, groups=k)
    blur_max = blurred.flatten(2).amax(-1)[..., None, None].clamp_min(HEATMAP_EPS)
    return blurred * orig_max / blur_max

class DarkRefiner(nn.Module):
    """DARK (Zhang et al. 2020): 2nd-order Taylor expansion of the log-heatmap at the argmax."""

    def __init__(self, kernel: int = 3, eps: float = 1e-6):
        super().__init__()
        self.kernel, self.eps = kernel, eps

    def taylor(self, logmap, coords):
        b, k, h, w = logmap.shape
        px = coords[..., 0].long().clamp(1, w - 2)
        py = coords[..., 1].long().clamp(1, h - 2)
        def at(dy: int, dx: int):
            return logmap.flatten(2).gather(-1, ((py + dy) * w + (px + dx)).unsqueeze(-1)).squeeze(-1)
        dx = 0.5 * (at(0, 1) - at(0, -1))
        dy = 0.5 * (at(1, 0) - at(-1, 0))
        dxx = at(0, 1) - 2 * at(0, 0) + at(0, -1)
        dyy = at(1, 0) - 2 * at(0, 0) + at(-1, 0)
        dxy = 0.25 * (at(1, 1) - at(1, -1) - at(-1, 1) + at(-1, -1))
        det = dxx * dyy - dxy ** 2
        degenerate = det.abs() < self.eps
        if degenerate.any():  # expect: FL000 GB0170
            logger.debug("DARK: %d degenerate hessians", int(degenerate.sum()))  # expect: FL000 GB0124; FL000 GB0291
            det = torch.where(degenerate, torch.full_like(det, self.eps), det)
        ox = -(dyy * dx - dxy * dy) / det
        oy = -(dxx * dy - dxy * dx) / det
        return coords + torch.stack([ox, oy], dim=-1).clamp(-1.0, 1.0)

    def forward(self, heatmaps):
        coords, maxvals = get_max_preds(heatmaps)
        logmap = gaussian_blur_heatmaps(heatmaps, self.kernel).clamp_min(HEATMAP_EPS).log()
        return self.taylor(logmap, coords), maxvals

class HeatmapHead(nn.Module):
    def __init__(self, cfg: HeadConfig):
        super().__init__()
        layers: List[nn.Module] = []
        c = cfg.in_channels
        for _ in range(cfg.num_deconv):
            layers += [nn.ConvTranspose2d(c, cfg.deconv_channels, 4, stride=2, padding=1, bias=False),
                       nn.BatchNorm2d(cfg.deconv_channels), nn.ReLU(inplace=True)]
            c = cfg.deconv_channels
        self.deconv = nn.Sequential(*layers)
        self.final = nn.Conv2d(c, cfg.num_joints, cfg.final_kernel, padding=cfg.final_kernel // 2)
        self.cfg = cfg

    def forward(self, x):
        return self.final(self.deconv(x))

class IntegralHead(HeatmapHead):
    def __init__(self, cfg: HeadConfig):
        super().__init__(cfg)
        self.decoders: Dict[str, Callable] = {
            "soft_argmax": functools.partial(soft_argmax_2d, beta=cfg.beta),
            "argmax": get_max_preds,
        }

    def forward(self, x):
        hm = super().forward(x)
        coords, conf = self.decoders[self.cfg.decoder](hm)
        return hm, coords, conf

def flip_back(heatmaps_flipped, flip_idx: np.ndarray, shift: bool = True):
    out = heatmaps_flipped.flip(-1)[:, flip_idx]
    if shift:  # feature maps of flipped images are misaligned by one pixel
        out = torch.cat([out[..., :1], out[..., :-1]], dim=-1)
    return out

class FlipTestWrapper(nn.Module):
    def __init__(self, model: nn.Module, cfg: TopDownConfig):
        super().__init__()
        self.model = model
        self.cfg = cfg
        self.flip_idx = np.asarray(flip_index(cfg.head.num_joints))

    def forward(self, img):
        hm = self.model(img)
        if not self.cfg.flip_test:
            return hm
        hm_flip = self.model(img.flip(-1))
        return 0.5 * (hm + flip_back(hm_flip, self.flip_idx, self.cfg.shift_heatmap))

# --------------------------------------------------------------------------- HRNet-ish backbone

def conv_bn(cin: int, cout: int, stride: int = 1, relu: bool = True) -> nn.Sequential:
    layers = [nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)]
    if relu:
        layers.append(nn.ReLU(inplace=True))
    return nn.Sequential(*layers)

class BasicBlock(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = conv_bn(channels, channels)
        self.conv2 = conv_bn(channels, channels, relu=False)

    def forward(self, x):
        return F.relu(self.conv2(self.conv1(x)) + x)

class HRModule(nn.Module):
    def __init__(self, channels: Sequence[int]):
        super().__init__()
        self.branches = nn.ModuleList([BasicBlock(c) for c in channels])
        fuse = []
        for i, ci in enumerate(channels):
            row = []
            for j, cj in enumerate(channels):
                if j == i:
                    row.append(nn.Identity())
                elif j > i:
                    row.append(nn.Sequential(nn.Conv2d(cj, ci, 1, bias=False), nn.BatchNorm2d(ci)))
                else:
                    steps = [conv_bn(cj, ci if s == i - j - 1 else cj, 2, relu=s != i - j - 1)
                             for s in range(i - j)]
                    row.append(nn.Sequential(*steps))
            fuse.append(nn.ModuleList(row))
        self.fuse = nn.ModuleList(fuse)

    def forward(self, xs: List[torch.Tensor]):
        xs = [branch(x) for branch, x in zip(self.branches, xs)]
        out = []
        for i, row in enumerate(self.fuse):
            y = xs[i]
            for j, layer in enumerate(row):
                if j == i:
                    continue
                z = layer(xs[j])
                if j > i:
                    z = F.interpolate(z, size=xs[i].shape[-2:], mode="bilinear", align_corners=False)
                y = y + z
            out.append(F.relu(y))
        return out

class HRNetLite(nn.Module):
    def __init__(self, channels: Sequence[int] = (6, 10), num_joints: int = NUM_JOINTS, num_modules: int = 1):
        super().__init__()
        self.stem = conv_bn(3, channels[0], 2)
        self.transitions = nn.ModuleList(conv_bn(channels[i - 1], channels[i], 2) for i in range(1, len(channels)))
        self.stages = nn.ModuleList(HRModule(channels) for _ in range(num_modules))
        self.final_layer = nn.Conv2d(channels[0], num_joints, 1)

    def forward(self, x):
        pad_h, pad_w = x.shape[-2] % 4, x.shape[-1] % 4
        if pad_h or pad_w:  # expect: FL301
            x = F.pad(x, (0, (4 - pad_w) % 4, 0, (4 - pad_h) % 4))
        feats = [self.stem(x)]
        for transition in self.transitions:
            feats.append(transition(feats[-1]))
        for stage in self.stages:
            feats = stage(feats)
        return self.final_layer(feats[0])

class TopDownPoseEstimator(nn.Module):
    def __init__(self, cfg: TopDownConfig):
        super().__init__()
        self.cfg = cfg
        self.backbone = HRNetLite(cfg.channels, cfg.head.num_joints)
        self.refiner = DarkRefiner()

    def decode_soft_argmax(self, hm):
        return soft_argmax_2d(hm, beta=self.cfg.head.beta)

    def decode_dark(self, hm):
        return self.refiner(hm)

    def forward(self, img, center, scale):
        hm = self.backbone(img)
        decode = getattr(self, "decode_" + self.cfg.head.decoder)
        coords, conf = decode(hm)
        preds = transform_preds(coords, center, scale, hm.shape[-2:])
        return {"keypoints": preds, "scores": conf, "heatmaps": hm}

# --------------------------------------------------------------------------- top-down crops / targets

def box_to_center_scale(boxes, aspect_ratio: float, padding: float = 1.25):
    x, y, w, h = boxes.unbind(-1)
    center = torch.stack([x + w * 0.5, y + h * 0.5], dim=-1)
    wider = w > aspect_ratio * h
    w, h = torch.where(wider, w, h * aspect_ratio), torch.where(wider, w / aspect_ratio, h)
    return center, torch.stack([w, h], dim=-1) / PIXEL_STD * padding

def get_affine_theta(center, scale, rot_deg: float, img_size):
    img_h, img_w = img_size  # theta maps the output crop to normalized input coordinates
    rad = math.radians(rot_deg)
    cs, sn = math.cos(rad), math.sin(rad)  # expect: FL000 GB0033
    sw, sh = scale[:, 0] * PIXEL_STD / img_w, scale[:, 1] * PIXEL_STD / img_h
    tx, ty = center[:, 0] / img_w * 2 - 1, center[:, 1] / img_h * 2 - 1
    row0 = torch.stack([sw * cs, -sh * sn, tx], dim=-1)
    row1 = torch.stack([sw * sn, sh * cs, ty], dim=-1)
    return torch.stack([row0, row1], dim=1)

@torch.compile
def crop_person(images, boxes, cfg: TopDownConfig, rotation: float = 0.0):
    center, scale = box_to_center_scale(boxes, cfg.aspect_ratio, cfg.padding_ratio)
    theta = get_affine_theta(center, scale, rotation, images.shape[-2:])
    grid = F.affine_grid(theta, [boxes.shape[0], images.shape[1], *cfg.input_size], align_corners=False)
    return F.grid_sample(images, grid, align_corners=False), center, scale

@torch.compile
def generate_gaussian_targets(keypoints, visibility, heatmap_size: Tuple[int, int],
                              sigma: float = 2.0, stride: int = 2):
    h, w = heatmap_size
    ys, xs = make_coord_grid(h, w, keypoints.device, keypoints.dtype)
    mu = keypoints / stride
    gx = torch.exp(-(xs - mu[..., 0:1]) ** 2 / (2 * sigma ** 2))
    gy = torch.exp(-(ys - mu[..., 1:2]) ** 2 / (2 * sigma ** 2))
    inside = (mu[..., 0] >= 0) & (mu[..., 0] < w) & (mu[..., 1] >= 0) & (mu[..., 1] < h)
    weight = ((visibility > 0) & inside).float()
    return gy.unsqueeze(-1) * gx.unsqueeze(-2) * weight[..., None, None], weight

@torch.compile
def normalize_keypoints(kpts, image_size: Tuple[int, int]):
    if kpts.shape[-1] == 3:  # COCO-style (B, K, 3) with a visibility column  # expect: FL301
        xy, vis = kpts[..., :2], kpts[..., 2:]
    else:
        xy, vis = kpts, torch.ones_like(kpts[..., :1])
    wh = xy.new_tensor([image_size[1], image_size[0]])
    return torch.cat([xy / wh * 2 - 1, vis], dim=-1)

class JointsMSELoss(nn.Module):
    def __init__(self, use_target_weight: bool = True, loss_weight: float = 1.0):
        super().__init__()
        self.use_target_weight, self.loss_weight = use_target_weight, loss_weight

    def per_joint(self, output, target, target_weight=None):
        b, k = output.shape[:2]
        err = 0.5 * (output.reshape(b, k, -1) - target.reshape(b, k, -1)).pow(2).mean(-1)
        if self.use_target_weight and target_weight is not None:
            err = err * target_weight.reshape(b, k) ** 2
        return err

    def forward(self, output, target, target_weight=None):
        loss = self.per_joint(output, target, target_weight).mean() * self.loss_weight
        if not math.isfinite(loss):  # expect: FL000 GB0033
            raise FloatingPointError("JointsMSELoss diverged")
        return loss

class OHKMMSELoss(JointsMSELoss):
    def __init__(self, topk: int = 4, **kwargs):
        super().__init__(**kwargs)
        self.topk = topk

    def forward(self, output, target, target_weight=None):
        err = self.per_joint(output, target, target_weight)
        k = err.shape[1]
        if self.topk < k:  # expect: FL301
            err, _ = err.topk(self.topk, dim=1)
            logger.debug("OHKM: keeping the %d hardest of %d joints", self.topk, k)  # expect: FL000 GB0291
        return err.mean() * self.loss_weight

class LimbLengthLoss(nn.Module):
    def __init__(self, skeleton=SKELETON, reduction: str = "mean"):
        super().__init__()
        self.skeleton = list(skeleton)
        self._reduce = {"mean": torch.mean, "sum": torch.sum, "none": lambda t: t}[reduction]

    def limb_terms(self, pred, gt):
        pl = limb_vectors(pred, self.skeleton).norm(dim=-1)
        gl = limb_vectors(gt, self.skeleton).norm(dim=-1)
        return (pl - gl).abs()

    def forward(self, pred, gt, vis: Optional[torch.Tensor] = None):
        if CHECK_FINITE:
            assert torch.isfinite(pred).all(), "non-finite keypoint predictions"
        terms = self.limb_terms(pred, gt)
        if vis is not None:
            src, dst = limb_index(self.skeleton)
            limb_vis = vis[:, src] * vis[:, dst]
            if limb_vis.sum() == 0:  # nothing to supervise in this batch  # expect: FL000 GB0170
                return pred.new_zeros(())
            terms = terms * limb_vis
        return self._reduce(terms)

class BoneDirectionLoss(LimbLengthLoss):
    min_length = 1e-3

    def limb_terms(self, pred, gt):
        pv, gv = limb_vectors(pred, self.skeleton), limb_vectors(gt, self.skeleton)
        short = gv.norm(dim=-1).min().item()  # expect: FL000 GB0124
        if short < self.min_length:
            logger.warning("ground-truth limb shorter than %.4f px", self.min_length)
        cos = (F.normalize(pv, dim=-1) * F.normalize(gv, dim=-1)).sum(-1)
        return 1.0 - cos

# --------------------------------------------------------------------------- metrics

def keypoint_oks(pred, gt, vis, areas, sigmas: np.ndarray = OKS_SIGMAS):
    var = torch.from_numpy((sigmas * 2) ** 2).to(pred)
    d2 = ((pred - gt) ** 2).sum(-1)
    e = d2 / (var * (areas[:, None] + np.spacing(1)) * 2)  # expect: FL000 GB0294
    valid = (vis > 0).to(pred.dtype)
    return (torch.exp(-e) * valid).sum(-1) / valid.sum(-1).clamp_min(1.0)

def _log_metric(history: List[Tuple[str, float]], name: str, value):
    history.append((name, float(value)))  # expect: FL000 GB0124; FL302

@torch.compile
def evaluate_oks(pred, gt, vis, areas, callbacks: Sequence[Callable] = ()):
    oks = keypoint_oks(pred, gt, vis, areas)
    ap = torch.stack([(oks >= t).float().mean() for t in OKS_THRESHOLDS]).mean()  # expect: FL000 GB4347
    for cb in callbacks:
        cb("oks_ap", ap)
    return oks, ap

def pck(pred, gt, vis, norm, thr: float):
    dist = (pred - gt).norm(dim=-1) / norm[:, None].clamp_min(HEATMAP_EPS)
    valid = vis > 0
    hits = (dist <= thr) & valid
    per_joint = hits.sum(0).float() / valid.sum(0).clamp_min(1)
    return per_joint, hits.sum().float() / valid.sum().clamp_min(1)

@torch.compile
def pck_report(pred, gt, vis, bbox_sizes, thresholds=PCK_THRESHOLDS):
    report = {}
    norm = bbox_sizes.max(dim=-1).values
    for thr in thresholds:
        per_joint, avg = pck(pred, gt, vis, norm, thr)
        report[f"PCK@{thr}"] = avg
        report[f"PCK@{thr}/joints"] = per_joint.tolist()  # expect: FL000 GB0109
    return report

def heatmap_nms(heatmaps, kernel: int = 3):
    maxm = F.max_pool2d(heatmaps, kernel, stride=1, padding=kernel // 2)
    return heatmaps * (maxm == heatmaps).to(heatmaps.dtype)

def refine_peak(hm, x: int, y: int):
    h, w = hm.shape
    x0, x1 = max(x - 1, 0), min(x + 1, w - 1)
    y0, y1 = max(y - 1, 0), min(y + 1, h - 1)
    dx = 0.25 * torch.sign(hm[y, x1] - hm[y, x0])
    dy = 0.25 * torch.sign(hm[y1, x] - hm[y0, x])
    return torch.stack([x + dx, y + dy])

@torch.compile
def extract_peaks(heatmaps, threshold: float = 0.5, max_people: int = 3):
    nms = heatmap_nms(heatmaps)
    b, k, h, w = nms.shape
    scores, idx = nms.flatten(2).topk(max_people, dim=-1)
    candidates = (scores > threshold).nonzero()  # expect: FL000 GB0036
    peaks = []
    for n, j, p in candidates.tolist():  # expect: FL000 GB0033
        flat = int(idx[n, j, p])  # expect: FL000 GB0124
        xy = refine_peak(heatmaps[n, j], flat % w, flat // w)
        peaks.append(torch.cat([xy, scores[n, j, p].reshape(1)]))
    return torch.stack(peaks), candidates

class OneEuroSmoother(nn.Module):
    """One-euro filter (Casiez et al. 2012) over a stream of per-frame keypoints."""

    def __init__(self, shape: Tuple[int, ...], fps=30.0, min_cutoff=1.0, beta=0.05, d_cutoff=1.0):
        super().__init__()
        self.fps, self.min_cutoff, self.beta, self.d_cutoff = fps, min_cutoff, beta, d_cutoff
        self.register_buffer("x_prev", torch.zeros(shape))
        self.register_buffer("dx_prev", torch.zeros(shape))
        self.initialized = False

    @staticmethod
    def smoothing_factor(cutoff, dt: float):
        r = 2 * math.pi * cutoff * dt
        return r / (r + 1)

    def forward(self, kpts):
        if not self.initialized:
            self.x_prev.copy_(kpts)
            self.initialized = True  # expect: FL302
            return kpts
        dt = 1.0 / self.fps
        dx = (kpts - self.x_prev) / dt
        a_d = self.smoothing_factor(self.d_cutoff, dt)
        dx_hat = a_d * dx + (1 - a_d) * self.dx_prev
        a = self.smoothing_factor(self.min_cutoff + self.beta * dx_hat.abs(), dt)
        x_hat = a * kpts + (1 - a) * self.x_prev
        self.x_prev.copy_(x_hat)
        self.dx_prev.copy_(dx_hat)
        return x_hat

# --------------------------------------------------------------------------- cases

def _t(*shape, seed: int = 0, scale: float = 1.0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g) * scale

def _kpts(b: int = 4, k: int = NUM_JOINTS, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(b, k, 2, generator=g) * torch.tensor([20.0, 24.0])

def _vis(b: int = 4, k: int = NUM_JOINTS, seed: int = 0):
    return (_kpts(b, k, seed + 7)[..., 0] > 4.0).float()

def _heatmaps(b: int = 4, k: int = NUM_JOINTS, seed: int = 0):
    target, _ = generate_gaussian_targets(_kpts(b, k, seed), torch.ones(b, k), (12, 10))
    return target + 0.01 * _t(b, k, 12, 10, seed=seed + 1)

def _cs(b: int = 4):
    return torch.tensor([[10.0, 12.0]]).repeat(b, 1), torch.tensor([[0.1, 0.12]]).repeat(b, 1)

_CFG, _DARK_CFG = TopDownConfig(), TopDownConfig(head=HeadConfig(decoder="dark"))
_BOXES = torch.tensor([[4.0, 5.0, 10.0, 16.0], [8.0, 2.0, 12.0, 9.0]])
_HISTORY: List[Tuple[str, float]] = []

CASES = {
    "HeatmapHead": lambda: (HeatmapHead(HeadConfig()).eval(), (_t(2, 6, 6, 5),)),
    "IntegralHead": lambda: (IntegralHead(HeadConfig()).eval(), (_t(2, 6, 6, 5),)),
    "decode_heatmaps": lambda: (decode_heatmaps, (_heatmaps(), *_cs())),
    "DarkRefiner": lambda: (DarkRefiner(), (_heatmaps(),)),
    "FlipTestWrapper": lambda: (FlipTestWrapper(HRNetLite(), _CFG).eval(), (_t(2, 3, 24, 20),)),
    "BasicBlock": lambda: (BasicBlock(6).eval(), (_t(2, 6, 12, 10),)),
    "HRModule": lambda: (HRModule((6, 10)).eval(), ([_t(2, 6, 12, 10), _t(2, 10, 6, 5, seed=1)],)),
    "HRNetLite": lambda: (HRNetLite().eval(), (_t(2, 3, 24, 20),), (_t(2, 3, 26, 22),)),
    "TopDownPoseEstimator": lambda: (TopDownPoseEstimator(_DARK_CFG).eval(), (_t(2, 3, 24, 20), *_cs(2))),
    "crop_person": lambda: (crop_person, (_t(2, 3, 32, 28), _BOXES, _CFG, torch.tensor(15.0))),
    "generate_gaussian_targets": lambda: (generate_gaussian_targets, (_kpts(), _vis(), (12, 10))),
    "normalize_keypoints": lambda: (normalize_keypoints, (torch.cat([_kpts(), _vis()[..., None]], -1), (24, 20)),
                                    (_kpts(), (24, 20))),
    "JointsMSELoss": lambda: (JointsMSELoss(), (_heatmaps(), _heatmaps(seed=3), _vis()[..., None])),
    "OHKMMSELoss": lambda: (OHKMMSELoss(), (_heatmaps(), _heatmaps(seed=3)),
                            (_heatmaps(k=3), _heatmaps(k=3, seed=3))),
    "LimbLengthLoss": lambda: (LimbLengthLoss(), (_kpts(), _kpts(seed=2), _vis())),
    "BoneDirectionLoss": lambda: (BoneDirectionLoss(), (_kpts(), _kpts(seed=2))),
    "evaluate_oks": lambda: (evaluate_oks, (_kpts(), _kpts(seed=2), _vis(), torch.full((4,), 300.0),
                                            [functools.partial(_log_metric, _HISTORY)])),
    "pck_report": lambda: (pck_report, (_kpts(), _kpts(seed=2), _vis(), torch.full((4, 2), 24.0))),
    "extract_peaks": lambda: (extract_peaks, (_heatmaps(),)),
    "OneEuroSmoother": lambda: (OneEuroSmoother((4, NUM_JOINTS, 2)), (_kpts(),)),
}
