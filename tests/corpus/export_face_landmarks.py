"""Facial landmark detection for phone AR filters, in the style of mobile face-mesh / PFLD /
HRNet-face repos: a MobileNet-ish backbone with heatmap (soft-argmax, DARK refinement) and
regression heads, similarity-transform face alignment (Umeyama, insightface templates),
one-euro temporal smoothing, 6D-rotation head pose, blink/mouth events for effect triggers,
training losses and metrics, and the export code that ships the models to the app."""
import functools
import logging
import math
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("face_landmarks")
logger.addHandler(logging.NullHandler())

EPS = 1e-6
MAX_FACES = 4
MIN_HEATMAP_SIDE = 12
GIMBAL_EPS = 1e-6
BLINK_EAR_THRESHOLD = 0.21
EXPORT_OPSET = 17
USE_FAST_SOFTMAX = True

# insightface's 5-point template for 112x112 ArcFace crops: eyes, nose tip, mouth corners
ARCFACE_TEMPLATE = np.array([[38.2946, 51.6963], [73.5318, 51.5014], [56.0252, 71.7366],
                             [41.5493, 92.3655], [70.7299, 92.2041]], dtype=np.float32)
# iBUG-68 index groups
LEFT_EYE = (36, 37, 38, 39, 40, 41)
RIGHT_EYE = (42, 43, 44, 45, 46, 47)
MOUTH_INNER = (60, 61, 62, 63, 64, 65, 66, 67)
FIVE_FROM_68 = ((36, 37, 38, 39, 40, 41), (42, 43, 44, 45, 46, 47), (30,), (48,), (54,))


@dataclass
class LandmarkConfig:
    num_points: int = 5
    input_hw: Tuple[int, int] = (20, 24)
    channels: Sequence[int] = (6, 8)
    head: str = "heatmap"
    beta: float = 8.0
    mean: Tuple[float, float, float] = (0.5, 0.5, 0.5)
    std: Tuple[float, float, float] = (0.25, 0.25, 0.25)

    @property
    def heatmap_hw(self) -> Tuple[int, int]:
        return self.input_hw[0] // 2, self.input_hw[1] // 2


@dataclass
class OneEuroConfig:
    freq: float = 30.0
    min_cutoff: float = 1.0
    beta: float = 0.05
    d_cutoff: float = 1.0


# --------------------------------------------------------------------------- geometry helpers

def soft_argmax_2d(heatmaps: torch.Tensor, beta: float = 1.0):
    """(B, K, H, W) -> (B, K, 2) coordinates in [0, 1] and (B, K) peak confidence."""
    b, k, h, w = heatmaps.shape
    flat = heatmaps.reshape(b, k, h * w) * beta
    prob = (F.softmax(flat, dim=-1) if USE_FAST_SOFTMAX else flat.exp() / flat.exp().sum(-1, keepdim=True))
    prob = prob.reshape(b, k, h, w)
    ys = torch.linspace(0.0, 1.0, h, dtype=heatmaps.dtype)
    xs = torch.linspace(0.0, 1.0, w, dtype=heatmaps.dtype)
    x = (prob.sum(dim=2) * xs).sum(-1)
    y = (prob.sum(dim=3) * ys).sum(-1)
    conf = heatmaps.flatten(2).amax(-1).sigmoid()
    return torch.stack([x, y], dim=-1), conf


def interocular_distance(pts: torch.Tensor) -> torch.Tensor:
    if pts.shape[-2] == 68:  # expect: FL203
        left, right = pts[..., LEFT_EYE, :].mean(-2), pts[..., RIGHT_EYE, :].mean(-2)
    else:
        left, right = pts[..., 0, :], pts[..., 1, :]
    return (left - right).norm(dim=-1).clamp_min(EPS)


def reduce_to_five(pts68: torch.Tensor) -> torch.Tensor:
    return torch.stack([pts68[..., list(group), :].mean(-2) for group in FIVE_FROM_68], dim=-2)


def umeyama_similarity(src: torch.Tensor, dst: torch.Tensor):
    """Batched Umeyama: the (B, 2, 3) similarity mapping src (B, K, 2) onto dst."""
    n = src.shape[-2]
    src_mean, dst_mean = src.mean(-2, keepdim=True), dst.mean(-2, keepdim=True)
    src_c, dst_c = src - src_mean, dst - dst_mean
    cov = dst_c.transpose(-1, -2) @ src_c / n
    u, s, vh = torch.linalg.svd(cov)
    d = torch.ones_like(s)
    d[..., -1] = torch.sign(torch.linalg.det(u) * torch.linalg.det(vh))
    rot = u @ torch.diag_embed(d) @ vh
    scale = (s * d).sum(-1) / (src_c.pow(2).sum((-1, -2)) / n).clamp_min(EPS)
    trans = dst_mean.squeeze(-2) - scale[..., None] * (rot @ src_mean.transpose(-1, -2)).squeeze(-1)
    return torch.cat([scale[..., None, None] * rot, trans[..., None]], dim=-1)


def estimate_norm(lmk: np.ndarray, image_size: int = 112) -> np.ndarray:
    """insightface.utils.face_align.estimate_norm, numpy only, one face."""
    ratio = float(image_size) / 112.0
    dst = ARCFACE_TEMPLATE * ratio
    src_mean, dst_mean = lmk.mean(0), dst.mean(0)
    src_c, dst_c = lmk - src_mean, dst - dst_mean
    u, s, vt = np.linalg.svd(dst_c.T @ src_c / lmk.shape[0])
    d = np.ones(2, dtype=np.float32)
    if np.linalg.det(u) * np.linalg.det(vt) < 0:  # expect: FL000 GB0170
        d[-1] = -1.0
    rot = u @ np.diag(d) @ vt
    scale = (s * d).sum() / src_c.var(0).sum()
    trans = dst_mean - scale * rot @ src_mean
    return np.concatenate([scale * rot, trans[:, None]], axis=1).astype(np.float32)


def affine_to_theta(m: torch.Tensor, in_hw: Tuple[int, int], out_hw: Tuple[int, int]):
    """Pixel-space (B, 2, 3) forward warp -> affine_grid theta (output -> input, normalized)."""
    bottom = m.new_tensor([0.0, 0.0, 1.0]).expand(m.shape[0], 1, 3)
    inv = torch.linalg.inv(torch.cat([m, bottom], dim=1))
    def to_norm(h, w):
        return m.new_tensor([[2.0 / w, 0.0, -1.0], [0.0, 2.0 / h, -1.0], [0.0, 0.0, 1.0]])
    theta = to_norm(*in_hw) @ inv @ torch.linalg.inv(to_norm(*out_hw))
    return theta[:, :2]


def sanitize_transform(m: torch.Tensor, max_scale: float = 8.0) -> torch.Tensor:
    """Tracker hiccups give collapsed landmark sets: fall back to identity for those faces."""
    scale = torch.linalg.det(m[:, :, :2]).abs().sqrt()
    bad = ~torch.isfinite(scale) | (scale > max_scale)
    if bad.any():  # expect: FL000 GB0170
        m = torch.where(bad[:, None, None], torch.eye(2, 3).expand_as(m), m)
    return m


def rotation_6d_to_matrix(d6: torch.Tensor) -> torch.Tensor:
    a1, a2 = d6[..., :3], d6[..., 3:]
    b1 = F.normalize(a1, dim=-1)
    b2 = F.normalize(a2 - (b1 * a2).sum(-1, keepdim=True) * b1, dim=-1)
    return torch.stack([b1, b2, torch.cross(b1, b2, dim=-1)], dim=-2)


def matrix_to_euler(rot: torch.Tensor) -> torch.Tensor:
    """(B, 3, 3) -> (B, 3) pitch/yaw/roll in degrees, with the usual gimbal-lock fallback."""
    sy = torch.sqrt(rot[:, 0, 0] ** 2 + rot[:, 1, 0] ** 2)
    if (sy < GIMBAL_EPS).any():  # expect: FL000 GB0170; FL201
        pitch = torch.atan2(-rot[:, 1, 2], rot[:, 1, 1])
        roll = torch.zeros_like(sy)
    else:
        pitch = torch.atan2(rot[:, 2, 1], rot[:, 2, 2])
        roll = torch.atan2(rot[:, 1, 0], rot[:, 0, 0])
    yaw = torch.atan2(-rot[:, 2, 0], sy)
    return torch.rad2deg(torch.stack([pitch, yaw, roll], dim=-1))


def eye_aspect_ratio(pts68: torch.Tensor, eye: Sequence[int]) -> torch.Tensor:
    p = pts68[..., list(eye), :]
    vertical = (p[..., 1, :] - p[..., 5, :]).norm(dim=-1) + (p[..., 2, :] - p[..., 4, :]).norm(dim=-1)
    return vertical / (2.0 * (p[..., 0, :] - p[..., 3, :]).norm(dim=-1) + EPS)


# --------------------------------------------------------------------------- backbone and heads

class ConvBNAct(nn.Sequential):
    def __init__(self, cin, cout, k=3, stride=1, groups=1, act: Optional[Callable] = nn.ReLU6):
        layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
        if act is not None:
            layers.append(act())
        super().__init__(*layers)


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride=1, expand=2):
        super().__init__()
        hidden = cin * expand
        self.use_res = stride == 1 and cin == cout
        self.block = nn.Sequential(ConvBNAct(cin, hidden, 1), ConvBNAct(hidden, hidden, 3, stride, groups=hidden),
                                   ConvBNAct(hidden, cout, 1, act=None))

    def forward(self, x):
        out = self.block(x)
        return x + out if self.use_res else out


class LandmarkBackbone(nn.Module):
    def __init__(self, channels: Sequence[int] = (6, 8)):
        super().__init__()
        self.stem = ConvBNAct(3, channels[0], 3, stride=2)
        self.stages = nn.ModuleList(
            InvertedResidual(cin, cout) for cin, cout in zip(channels[:-1], channels[1:]))
        self.out_channels = channels[-1]

    def forward(self, x):
        x = self.stem(x)
        for stage in self.stages:
            x = stage(x)
        return x


class HeatmapHead(nn.Module):
    """1x1 conv to K heatmaps, decoded by soft-argmax (differentiable, export friendly)."""

    def __init__(self, in_ch: int, num_points: int, beta: float = 8.0):
        super().__init__()
        self.conv = nn.Conv2d(in_ch, num_points, 1)
        self.beta = beta

    def decode(self, heatmaps):
        return soft_argmax_2d(heatmaps, self.beta)

    def forward(self, feats):
        heatmaps = self.conv(feats)
        coords, conf = self.decode(heatmaps)
        return {"coords": coords, "conf": conf, "heatmaps": heatmaps}


class DarkHeatmapHead(HeatmapHead):
    """Hard argmax plus DARK-style quarter-pixel refinement, as in HRNet-facial-landmark."""

    def decode(self, heatmaps):
        b, k, h, w = heatmaps.shape
        idx = heatmaps.flatten(2).argmax(-1)
        coords = torch.stack([idx % w, idx // w], dim=-1).float()
        for i in range(b):
            for j in range(k):
                px, py = int(coords[i, j, 0]), int(coords[i, j, 1])  # expect: FL000 GB0124
                if 0 < px < w - 1 and 0 < py < h - 1:
                    hm = heatmaps[i, j]
                    diff = torch.stack([hm[py, px + 1] - hm[py, px - 1], hm[py + 1, px] - hm[py - 1, px]])
                    coords[i, j] += diff.sign() * 0.25
        coords = coords / coords.new_tensor([w - 1, h - 1])
        return coords, heatmaps.flatten(2).amax(-1).sigmoid()


class RegressionHead(nn.Module):
    """PFLD-style direct regression: pooled features -> K*2 normalized coordinates."""

    def __init__(self, in_ch: int, num_points: int):
        super().__init__()
        self.num_points = num_points
        self.fc = nn.Linear(in_ch * 2, num_points * 2)

    def forward(self, feats):
        pooled = torch.cat([feats.mean((2, 3)), feats.amax((2, 3))], dim=1)
        coords = self.fc(pooled).sigmoid().view(-1, self.num_points, 2)
        return {"coords": coords, "conf": torch.ones_like(coords[..., 0])}


HEADS: Dict[str, Callable[..., nn.Module]] = {
    "heatmap": HeatmapHead, "dark": DarkHeatmapHead,
    "regression": lambda in_ch, k, beta=None: RegressionHead(in_ch, k)}


def build_head(cfg: LandmarkConfig, in_ch: int) -> nn.Module:
    try:
        factory = HEADS[cfg.head]
    except KeyError:
        logger.warning("unknown head %s, using heatmap", cfg.head)
        factory = HEADS["heatmap"]
    return factory(in_ch, cfg.num_points, cfg.beta)


class FaceLandmarkNet(nn.Module):
    def __init__(self, cfg: Optional[LandmarkConfig] = None):
        super().__init__()
        self.cfg = cfg or LandmarkConfig()
        self.backbone = LandmarkBackbone(self.cfg.channels)
        self.head = build_head(self.cfg, self.backbone.out_channels)

    def forward(self, x):
        if tuple(x.shape[-2:]) != self.cfg.input_hw:  # expect: FL203; FL301
            x = F.interpolate(x, size=self.cfg.input_hw, mode="bilinear", align_corners=False)
        return self.head(self.backbone(x))


# --------------------------------------------------------------------------- alignment / pose / smoothing

class FaceAligner(nn.Module):
    """Warps each face to the ArcFace template with the estimated similarity transform."""

    def __init__(self, out_size: int = 14, max_scale: float = 8.0):
        super().__init__()
        self.out_size = out_size
        self.max_scale = max_scale
        template = torch.from_numpy(ARCFACE_TEMPLATE) * (out_size / 112.0)
        self.register_buffer("template", template)

    def forward(self, image, pts):
        m = sanitize_transform(umeyama_similarity(pts, self.template.expand_as(pts)), self.max_scale)
        theta = affine_to_theta(m, tuple(image.shape[-2:]), (self.out_size, self.out_size))
        grid = F.affine_grid(theta, [image.shape[0], image.shape[1], self.out_size, self.out_size],
                             align_corners=False)
        return F.grid_sample(image, grid, align_corners=False), m


class HeadPoseEstimator(nn.Module):
    """Small MLP from centred, scale-normalized 2D landmarks to a 6D rotation + euler angles."""

    def __init__(self, num_points: int = 5, hidden: int = 16):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(num_points * 2, hidden), nn.ReLU(), nn.Linear(hidden, 6))

    def forward(self, pts):
        centred = pts - pts.mean(-2, keepdim=True)
        centred = centred / interocular_distance(pts)[:, None, None]
        rot = rotation_6d_to_matrix(self.mlp(centred.flatten(1)))
        return rot, matrix_to_euler(rot)


def _smoothing_factor(te: float, cutoff):
    r = 2 * math.pi * cutoff * te
    return r / (r + 1)


class OneEuroFilter(nn.Module):
    """Casiez et al.'s 1-euro filter over landmark tracks, at a fixed camera frame rate."""

    def __init__(self, shape: Tuple[int, ...], cfg: OneEuroConfig = OneEuroConfig()):
        super().__init__()
        self.cfg = cfg
        self.register_buffer("x_prev", torch.zeros(shape))
        self.register_buffer("dx_prev", torch.zeros(shape))
        self.initialized = False

    def forward(self, x):
        if not self.initialized:
            self.x_prev.copy_(x)
            self.initialized = True  # expect: FL302
            return x
        te = 1.0 / self.cfg.freq
        dx = (x - self.x_prev) / te
        a_d = _smoothing_factor(te, self.cfg.d_cutoff)
        dx_hat = a_d * dx + (1 - a_d) * self.dx_prev
        cutoff = self.cfg.min_cutoff + self.cfg.beta * dx_hat.abs()
        a = _smoothing_factor(te, cutoff)
        x_hat = a * x + (1 - a) * self.x_prev
        self.x_prev.copy_(x_hat)
        self.dx_prev.copy_(dx_hat)
        return x_hat


class LandmarkExportWrapper(nn.Module):
    """What ships to the app: uint8-range RGB in, pixel-space landmarks + confidence out."""

    def __init__(self, net: FaceLandmarkNet):
        super().__init__()
        self.net = net
        cfg = net.cfg
        self.register_buffer("mean", torch.tensor(cfg.mean).view(1, 3, 1, 1) * 255.0)
        self.register_buffer("std", torch.tensor(cfg.std).view(1, 3, 1, 1) * 255.0)

    def forward(self, image):
        logger.debug("landmark export forward, input %s", tuple(image.shape))  # expect: FL000 GB0291; FL204
        out = self.net((image - self.mean) / self.std)
        h, w = image.shape[-2:]
        scale = torch.tensor([float(w - 1), float(h - 1)])  # expect: FL203
        return out["coords"] * scale, out["conf"]


# --------------------------------------------------------------------------- compiled utilities

@torch.compile
def wing_loss(pred, target, w: float = 10.0, epsilon: float = 2.0):
    c = w - w * math.log(1 + w / epsilon)
    diff = (pred - target).abs()
    loss = torch.where(diff < w, w * torch.log1p(diff / epsilon), diff - c)
    return loss.sum(-1).mean()


@torch.compile
def normalized_mean_error(pred, target, failure_threshold: float = 0.08) -> Dict[str, float]:
    err = (pred - target).norm(dim=-1).mean(-1) / interocular_distance(target)
    failures = (err > failure_threshold).float().mean()
    return {"nme": err.mean().item(), "fr": failures.item(), "n": int(err.numel())}  # expect: FL000 GB0124


@torch.compile(dynamic=True)
def landmarks_to_boxes(pts, box_scale: float = 1.25):
    if pts.shape[0] > MAX_FACES:  # expect: FL301
        logger.info("keeping the %d largest of %d faces", MAX_FACES, pts.shape[0])
        pts = pts[:MAX_FACES]
    lo, hi = pts.amin(-2), pts.amax(-2)
    centre, half = (lo + hi) / 2, (hi - lo).amax(-1, keepdim=True) * box_scale / 2
    return torch.cat([centre - half, centre + half], dim=-1)


@torch.compile(dynamic=True)
def five_point_alignment(pts):
    if pts.shape[-2] != 5:  # expect: FL301
        pts = reduce_to_five(pts)
    dst = torch.from_numpy(ARCFACE_TEMPLATE).expand_as(pts)
    return umeyama_similarity(pts, dst)


@torch.compile
def align_face_insightface(image, lmk):
    m = estimate_norm(lmk.detach().cpu().numpy(), image_size=14)
    m = torch.from_numpy(m)[None]
    theta = affine_to_theta(m, tuple(image.shape[-2:]), (14, 14))
    grid = F.affine_grid(theta, [1, image.shape[1], 14, 14], align_corners=False)
    return F.grid_sample(image, grid, align_corners=False)


def _on_blink(state: dict, ear):
    state["blinks"] = state.get("blinks", 0) + 1


@torch.compile
def expression_events(pts68, callbacks: List[Callable], state: dict):
    """Trigger AR effects (sparkles on blink, etc.) from eye and mouth landmark ratios."""
    ear = 0.5 * (eye_aspect_ratio(pts68, LEFT_EYE) + eye_aspect_ratio(pts68, RIGHT_EYE))
    mouth = pts68[..., MOUTH_INNER, :]
    mar = (mouth[..., 2, :] - mouth[..., 6, :]).norm(dim=-1) / interocular_distance(pts68)
    if ear.min() < BLINK_EAR_THRESHOLD:  # expect: FL000 GB0170
        for cb in callbacks:
            cb(state, ear)
    return ear, mar


@torch.compile
def refine_visible(pts, visibility, threshold: float = 0.5):
    """Re-centre using only the landmarks the model is confident are visible (no occlusion)."""
    visible = pts[visibility > threshold]  # expect: FL000 GB0036
    centre = visible.mean(0) if visible.numel() else pts.mean((0, 1))
    return pts - centre, centre


@torch.compile
def upsample_heatmaps(heatmaps, beta: float = 8.0):
    if heatmaps.shape[-1] < MIN_HEATMAP_SIDE:  # expect: FL301
        heatmaps = F.interpolate(heatmaps, scale_factor=2.0, mode="bilinear", align_corners=False)
    return soft_argmax_2d(heatmaps, beta)


def ensure_normalized(pts, hw: Tuple[int, int] = (20, 24)):
    """Some upstream trackers hand over pixel coordinates: normalize those."""
    if pts.abs().max() > 2.0:  # expect: FL000 GB0170
        pts = pts / pts.new_tensor([hw[1] - 1, hw[0] - 1])
    return pts


def clamp_to_unit(pts, margin: float = 0.0):
    return pts.clamp(-margin, 1.0 + margin)


def snap_to_grid(pts, hw: Tuple[int, int]):
    scale = pts.new_tensor([hw[1] - 1, hw[0] - 1])
    return torch.round(pts * scale) / scale


POSTPROCESS: List[Callable] = [ensure_normalized, functools.partial(clamp_to_unit, margin=0.05),
                               functools.partial(snap_to_grid, hw=(20, 24))]


@torch.compile
def postprocess_landmarks(pts, steps: Optional[List[Callable]] = None):
    for step in steps if steps is not None else POSTPROCESS:
        pts = step(pts)
    return pts


@torch.compile
def landmarks_for_renderer(pts, conf, min_conf: float = 0.3):
    """The AR renderer takes plain Python lists of (x, y) tuples per face."""
    keep = conf.mean(-1) >= min_conf
    faces = []
    for i in range(pts.shape[0]):
        if not keep[i]:  # expect: FL000 GB0170
            continue
        faces.append([tuple(p) for p in pts[i].tolist()])
    return faces


# --------------------------------------------------------------------------- export

def face_crop_params(pts, box_scale: float = 1.25):
    """Crop rectangle for the next frame's landmark pass, as the tracker sends it to the GPU."""
    lo, hi = pts.amin(-2), pts.amax(-2)
    size = float((hi - lo).amax()) * box_scale  # expect: FL202
    centre = (lo + hi) / 2
    return torch.cat([centre - size / 2, centre + size / 2], dim=-1)


def decode_for_export(heatmaps):
    b, k, h, w = heatmaps.shape
    coords, conf = soft_argmax_2d(heatmaps, beta=8.0)
    radius = math.sqrt(h * w) / 4.0  # expect: FL203
    return coords * coords.new_tensor([w - 1, h - 1]), conf, torch.full_like(conf, radius)  # expect: FL203


def export_mobile_bundle(cfg: LandmarkConfig, out_dir: str):
    """Never run in CI: writes the TorchScript model for the app and the exported programs."""
    net = FaceLandmarkNet(cfg).eval()
    example = torch.rand(1, 3, *cfg.input_hw) * 255.0
    with torch.no_grad():
        scripted = torch.jit.trace(LandmarkExportWrapper(net).eval(), (example,), check_trace=False)
        torch.jit.save(scripted, f"{out_dir}/landmarks.pt")
        hm = torch.randn(1, cfg.num_points, *cfg.heatmap_hw)
        torch.jit.save(torch.jit.trace(decode_for_export, (hm,)), f"{out_dir}/decode.pt")
        pts = torch.rand(1, cfg.num_points, 2)
        torch.jit.save(torch.jit.trace(face_crop_params, (pts,)), f"{out_dir}/crop.pt")
    pose_program = torch.export.export(HeadPoseEstimator(cfg.num_points).eval(), (pts,))
    torch.export.save(pose_program, f"{out_dir}/head_pose.pt2")
    logger.info("exported landmark bundle to %s (opset %d)", out_dir, EXPORT_OPSET)
    return scripted, pose_program


# --------------------------------------------------------------------------- cases

def _rand(*shape, seed: int = 0, scale: float = 1.0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(*shape, generator=g) * scale


def _face68(batch: int = 2, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    base = torch.rand(68, 2, generator=g) * 0.6 + 0.2
    return base + 0.01 * torch.randn(batch, 68, 2, generator=g)


CASES = {
    "FaceLandmarkNet": lambda: (FaceLandmarkNet().eval(), (_rand(2, 3, 20, 24),), (_rand(2, 3, 26, 30),)),
    "FaceLandmarkNet_regression": lambda: (FaceLandmarkNet(LandmarkConfig(head="regression")).eval(), (_rand(2, 3, 20, 24),)),
    "DarkHeatmapHead": lambda: (DarkHeatmapHead(8, 5), (_rand(2, 8, 6, 7),)),
    "FaceAligner": lambda: (FaceAligner(), (_rand(2, 3, 20, 24), _rand(2, 5, 2, scale=20.0))),
    "HeadPoseEstimator": lambda: (HeadPoseEstimator(), (_rand(3, 5, 2, seed=1),)),
    "OneEuroFilter": lambda: (OneEuroFilter((2, 5, 2)), (_rand(2, 5, 2),)),
    "LandmarkExportWrapper": lambda: (LandmarkExportWrapper(FaceLandmarkNet()).eval(), (_rand(2, 3, 20, 24, scale=255.0),)),
    "wing_loss": lambda: (wing_loss, (_rand(2, 5, 2), _rand(2, 5, 2, seed=1))),
    "normalized_mean_error": lambda: (normalized_mean_error, (_face68(seed=1), _face68(seed=2))),
    "landmarks_to_boxes": lambda: (landmarks_to_boxes, (_rand(3, 5, 2),), (_rand(6, 5, 2),)),
    "five_point_alignment": lambda: (five_point_alignment, (_rand(2, 5, 2, scale=112.0),), (_face68(3) * 112.0,)),
    "align_face_insightface": lambda: (align_face_insightface, (_rand(1, 3, 20, 24), _rand(5, 2, scale=20.0))),
    "expression_events": lambda: (expression_events, (_face68(), [_on_blink], {})),
    "refine_visible": lambda: (refine_visible, (_rand(2, 5, 2), _rand(2, 5, seed=3))),
    "upsample_heatmaps": lambda: (upsample_heatmaps, (_rand(2, 5, 6, 7),), (_rand(2, 5, 13, 15),)),
    "postprocess_landmarks": lambda: (postprocess_landmarks, (_rand(2, 5, 2, scale=1.2),)),
    "landmarks_for_renderer": lambda: (landmarks_for_renderer, (_rand(3, 5, 2), _rand(3, 5, seed=2))),
}

TRACED = {
    "LandmarkExportWrapper": lambda: (LandmarkExportWrapper(FaceLandmarkNet()).eval(), (_rand(1, 3, 20, 24, scale=255.0),)),
    "decode_for_export": lambda: (decode_for_export, (_rand(1, 5, 6, 7),)),
    "face_crop_params": lambda: (face_crop_params, (_rand(2, 5, 2),)),
    "HeadPoseEstimator": lambda: (HeadPoseEstimator().eval(), (_rand(2, 5, 2, seed=4),)),
}
