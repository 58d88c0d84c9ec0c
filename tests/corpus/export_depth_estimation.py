"""Depth for the robot runtime (torch.jit.trace / torch.export): monodepth2-style encoder/decoder, GwcNet-lite
stereo with confidence masks, flip TTA, pad/resize to multiples of 32, SILog/MiDaS losses, KITTI metrics, post-processing."""
import logging
import math
import warnings
from dataclasses import dataclass, replace
from functools import partial
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

logger = logging.getLogger("depth_deploy")
logger.addHandler(logging.NullHandler())

PAD_MULTIPLE = 32
MIN_DEPTH = 1e-3
MAX_DEPTH = 80.0  # KITTI Eigen split cap
NYU_MAX_DEPTH = 10.0
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
USE_FLIP_TTA = True
DEBUG_CHECKS = False
EIGEN_CROP = (0.40810811, 0.99189189, 0.03594771, 0.96405229)  # Garg crop, fractions of (h, h, w, w)
METRIC_NAMES = ("abs_rel", "sq_rel", "rmse", "rmse_log", "a1", "a2", "a3")

ACTIVATIONS: Dict[str, Callable[[Tensor], Tensor]] = {"sigmoid": torch.sigmoid, "softplus": F.softplus, "relu": F.relu}

@dataclass
class DepthConfig:
    in_ch: int = 3
    enc_channels: Tuple[int, ...] = (8, 12, 16)
    dec_channels: Tuple[int, ...] = (12, 8, 6)
    scales: Tuple[int, ...] = (0, 1, 2)
    min_depth: float = 0.1
    max_depth: float = MAX_DEPTH
    output: str = "depth"  # depth | disparity | inv_depth
    activation: str = "sigmoid"
    pad_multiple: int = 8
    upsample_mode: str = "nearest"

@dataclass
class StereoConfig:
    feat_ch: int = 8
    max_disp: int = 16
    downsample: int = 4
    groups: int = 4
    cost: str = "gwc"  # gwc | corr
    agg_ch: int = 6
    conf_threshold: float = 0.3

PRESETS: Dict[str, DepthConfig] = {
    "mono_kitti": DepthConfig(),
    "mono_nyu": DepthConfig(max_depth=NYU_MAX_DEPTH, output="disparity"),
}

# ----------------------------------------------------------------------------- geometry helpers
def _round_up(v, multiple: int) -> int:
    return int(math.ceil(v / multiple) * multiple)  # expect: FL203

def pad_to_multiple(x: Tensor, multiple: int = PAD_MULTIPLE, mode: str = "replicate"):
    """Pads H and W (centred) so an encoder with `log2(multiple)` stride-2 stages round-trips exactly."""
    h, w = x.shape[-2:]
    pad_h, pad_w = _round_up(h, multiple) - h, _round_up(w, multiple) - w
    if pad_h == 0 and pad_w == 0:  # expect: FL203; FL301
        return x, (0, 0, 0, 0)
    pads = (pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2)
    return F.pad(x, pads, mode=mode), pads

def unpad(x: Tensor, pads: Sequence[int]) -> Tensor:
    left, right, top, bottom = pads
    h, w = x.shape[-2:]
    return x[..., top:h - bottom, left:w - right]

def constrain_to_multiple(v: float, multiple: int = PAD_MULTIPLE, min_val: int = 0) -> int:
    # as in MiDaS' Resize transform
    y = int(math.floor(v / multiple + 0.5) * multiple)  # expect: FL203
    return y if y >= min_val else int(math.ceil(v / multiple) * multiple)

def get_resize_shape(h, w, target: int, multiple: int = PAD_MULTIPLE):
    scale_h = scale_w = max(target / h, target / w)  # lower bound: the short side reaches `target`  # expect: FL203
    return (constrain_to_multiple(scale_h * h, multiple, min_val=target),
            constrain_to_multiple(scale_w * w, multiple, min_val=target))

@torch.compile(dynamic=True)
def resize_for_inference(img: Tensor, target: int = 24, multiple: int = 8) -> Tensor:
    h, w = img.shape[-2:]
    if h > w:  # portrait phone captures: the network was trained on landscape crops  # expect: FL203; FL301
        nh, nw = get_resize_shape(w, h, target, multiple)
        nh, nw = nw, nh
    else:
        nh, nw = get_resize_shape(h, w, target, multiple)
    return F.interpolate(img, size=(nh, nw), mode="bilinear", align_corners=False)

def disp_to_depth(disp: Tensor, min_depth: float, max_depth: float) -> Tuple[Tensor, Tensor]:
    """monodepth2: sigmoid output -> (scaled disparity, depth) inside [min_depth, max_depth]."""
    min_disp, max_disp = 1.0 / max_depth, 1.0 / min_depth
    scaled_disp = min_disp + (max_disp - min_disp) * disp
    return scaled_disp, 1.0 / scaled_disp

OUTPUT_CONVERTERS = {
    "depth": lambda d, cfg: disp_to_depth(d, cfg.min_depth, cfg.max_depth)[1],
    "disparity": lambda d, cfg: disp_to_depth(d, cfg.min_depth, cfg.max_depth)[0],
    "inv_depth": lambda d, cfg: d,
}

# ----------------------------------------------------------------------------- monocular network
class ConvBlock(nn.Sequential):
    def __init__(self, cin: int, cout: int, stride: int = 1, norm: bool = True, act: bool = True):
        layers: List[nn.Module] = [nn.Conv2d(cin, cout, 3, stride, 1, bias=not norm)]
        if norm:
            layers.append(nn.BatchNorm2d(cout))
        if act:
            layers.append(nn.ELU(inplace=True))
        super().__init__(*layers)

class Encoder(nn.Module):
    def __init__(self, in_ch: int, channels: Sequence[int]):
        super().__init__()
        self.stem = ConvBlock(in_ch, channels[0], stride=2)
        self.stages = nn.ModuleList(ConvBlock(a, b, stride=2) for a, b in zip(channels[:-1], channels[1:]))

    @property
    def out_channels(self) -> List[int]:
        return [self.stem[0].out_channels] + [s[0].out_channels for s in self.stages]

    def forward(self, x: Tensor) -> List[Tensor]:
        feats = [self.stem(x)]
        for stage in self.stages:
            feats.append(stage(feats[-1]))
        return feats

class UpBlock(nn.Module):
    def __init__(self, cin: int, cskip: int, cout: int, mode: str = "nearest"):
        super().__init__()
        self.conv = ConvBlock(cin + cskip, cout)
        self.mode = mode

    def forward(self, x: Tensor, skip: Optional[Tensor] = None) -> Tensor:
        if skip is None:
            return self.conv(F.interpolate(x, scale_factor=2, mode=self.mode))
        x = F.interpolate(x, size=skip.shape[-2:], mode=self.mode)
        return self.conv(torch.cat([x, skip], dim=1))

class DepthDecoder(nn.Module):
    def __init__(self, enc_channels: Sequence[int], cfg: DepthConfig):
        super().__init__()
        rev = list(enc_channels)[::-1]
        self.ups = nn.ModuleList()
        cin = rev[0]
        for i, cout in enumerate(cfg.dec_channels):
            cskip = rev[i + 1] if i + 1 < len(rev) else 0
            self.ups.append(UpBlock(cin, cskip, cout, cfg.upsample_mode))
            cin = cout
        n = len(cfg.dec_channels)
        self.heads = nn.ModuleDict({str(s): nn.Conv2d(cfg.dec_channels[n - 1 - s], 1, 3, padding=1) for s in cfg.scales})
        self.act = ACTIVATIONS[cfg.activation]

    def forward(self, feats: List[Tensor]) -> Dict[Tuple[str, int], Tensor]:
        x, skips = feats[-1], feats[:-1][::-1]
        outputs = {}
        for i, up in enumerate(self.ups):
            x = up(x, skips[i] if i < len(skips) else None)
            scale = len(self.ups) - 1 - i
            if str(scale) in self.heads:
                outputs[("disp", scale)] = self.act(self.heads[str(scale)](x))
        return outputs

class MonoDepthNet(nn.Module):
    def __init__(self, cfg: DepthConfig):
        super().__init__()
        self.cfg = cfg
        self.encoder = Encoder(cfg.in_ch, cfg.enc_channels)
        self.decoder = DepthDecoder(self.encoder.out_channels, cfg)
        self.register_buffer("mean", torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor(IMAGENET_STD).view(1, 3, 1, 1))

    def forward(self, x: Tensor) -> Tensor:
        x, pads = pad_to_multiple((x - self.mean) / self.std, self.cfg.pad_multiple)
        outputs = self.decoder(self.encoder(x))
        disp = unpad(outputs[("disp", 0)], pads)
        return OUTPUT_CONVERTERS[self.cfg.output](disp, self.cfg)

def post_process_disparity(l_disp: Tensor, r_disp: Tensor) -> Tensor:
    """monodepth's edge-ramp blend of a prediction and its flipped-input twin."""
    _, _, h, w = l_disp.shape
    m_disp = 0.5 * (l_disp + r_disp)
    l, _ = np.meshgrid(np.linspace(0, 1, w), np.linspace(0, 1, h))
    l_mask = torch.from_numpy(1.0 - np.clip(20 * (l - 0.05), 0, 1)).to(l_disp)  # expect: FL203
    r_mask = l_mask.flip(-1)
    return r_mask * l_disp + l_mask * r_disp + (1.0 - l_mask - r_mask) * m_disp

class FlipTTA(nn.Module):
    def __init__(self, model: nn.Module, enabled: bool = USE_FLIP_TTA):
        super().__init__()
        self.model = model
        self.enabled = enabled

    def forward(self, x: Tensor) -> Tensor:
        disp = self.model(x)
        if not self.enabled:
            return disp
        flipped = self.model(torch.flip(x, dims=[3])).flip(-1)
        return post_process_disparity(disp, flipped)

# ----------------------------------------------------------------------------- stereo network
def groupwise_correlation(f1: Tensor, f2: Tensor, groups: int) -> Tensor:
    b, c, h, w = f1.shape
    assert c % groups == 0, f"{c} channels do not split into {groups} groups"  # expect: FL203
    return (f1 * f2).view(b, groups, c // groups, h, w).mean(dim=2)

def build_gwc_volume(left: Tensor, right: Tensor, max_disp: int, groups: int) -> Tensor:
    b, _, h, w = left.shape
    volume = left.new_zeros(b, groups, max_disp, h, w)
    for d in range(max_disp):  # expect: FL301
        if d > 0:
            volume[:, :, d, :, d:] = groupwise_correlation(left[..., d:], right[..., :-d], groups)
        else:
            volume[:, :, d] = groupwise_correlation(left, right, groups)
    return volume

COST_VOLUMES = {"gwc": build_gwc_volume, "corr": lambda l, r, d, g: build_gwc_volume(l, r, d, 1)}

def disparity_regression(cost: Tensor, max_disp: int) -> Tuple[Tensor, Tensor]:
    prob = F.softmax(cost, dim=1)
    values = torch.arange(max_disp, dtype=cost.dtype, device=cost.device).view(1, max_disp, 1, 1)
    return torch.sum(prob * values, 1, keepdim=True), prob

class CostAggregation(nn.Module):
    def __init__(self, cin: int, ch: int):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv3d(cin, ch, 3, padding=1, bias=False), nn.BatchNorm3d(ch), nn.ReLU(True))
        self.classify = nn.Conv3d(ch, 1, 3, padding=1)

    def forward(self, volume: Tensor) -> Tensor:
        return self.classify(self.conv(volume)).squeeze(1)

class StereoNet(nn.Module):
    def __init__(self, cfg: StereoConfig):
        super().__init__()
        self.cfg = cfg
        self.features = Encoder(3, (cfg.feat_ch // 2, cfg.feat_ch))
        self.aggregate = CostAggregation(cfg.groups if cfg.cost == "gwc" else 1, cfg.agg_ch)

    def forward(self, left: Tensor, right: Tensor) -> Tuple[Tensor, Tensor]:
        h, w = left.shape[-2:]
        fl, fr = self.features(left)[-1], self.features(right)[-1]
        # never look further than the feature map is wide (narrow crops near the image border)
        num_disp = min(self.cfg.max_disp // self.cfg.downsample, fl.shape[-1])  # expect: FL203
        volume = COST_VOLUMES[self.cfg.cost](fl, fr, num_disp, self.cfg.groups)
        cost = self.aggregate(volume).unsqueeze(1)
        cost = F.interpolate(cost, size=(self.cfg.max_disp, h, w), mode="trilinear", align_corners=False)
        disp, prob = disparity_regression(cost.squeeze(1), self.cfg.max_disp)
        return disp, prob.max(dim=1, keepdim=True)[0]

def confidence_mask(conf: Tensor, threshold: float = 0.3, min_valid_ratio: float = 0.2) -> Tensor:
    mask = conf > threshold
    if mask.float().mean() < min_valid_ratio:  # expect: FL000 GB0170; FL201
        # textureless scene: keep the most confident pixels instead of returning an empty map
        k = max(1, int(conf[0].numel() * min_valid_ratio))  # expect: FL203
        thresh = conf.flatten(1).topk(k, dim=1).values[:, -1]
        mask = conf >= thresh.view(-1, 1, 1, 1)
    return mask

class ConfidentStereo(nn.Module):
    """Stereo disparity -> metric depth, invalidated where the regression is not confident."""
    def __init__(self, net: StereoNet, focal: float = 7.2, baseline: float = 0.54):
        super().__init__()
        self.net = net
        self.register_buffer("fb", torch.tensor(focal * baseline))

    def forward(self, left: Tensor, right: Tensor) -> Tensor:
        disp, conf = self.net(left, right)
        mask = confidence_mask(conf, self.net.cfg.conf_threshold)
        depth = self.fb / disp.clamp(min=1e-3)
        return torch.where(mask, depth, torch.zeros_like(depth))

# ----------------------------------------------------------------------------- deployment wrappers
def normalize_image(img: Tensor) -> Tensor:
    if img.dtype == torch.uint8:
        return img.float() / 255.0
    if img.max() > 1.5:  # expect: FL000 GB0170
        warnings.warn("float image in 0-255 range, rescaling")  # expect: FL000 GB0007
        return img / 255.0
    return img

def log_depth_stats(name: str, depth: Tensor) -> None:
    logger.info("%s depth: min %.3f max %.3f mean %.3f", name, depth.min().item(), depth.max().item(),  # expect: FL000 GB0124
                depth.mean().item())  # expect: FL000 GB0124

UNIT_CONVERTERS = {"m": lambda d: d, "mm": lambda d: (d * 1000.0).round().to(torch.int32), "inv": lambda d: 1.0 / d}

class DepthDeployWrapper(nn.Module):
    def __init__(self, model: nn.Module, units: str = "m", max_depth: float = MAX_DEPTH,
                 input_size: Optional[int] = None, verbose: bool = False):
        super().__init__()
        assert units in UNIT_CONVERTERS, f"unknown units {units!r}"
        self.model, self.units, self.max_depth = model, units, max_depth
        self.input_size, self.verbose = input_size, verbose

    def forward(self, img: Tensor) -> Tensor:
        x = normalize_image(img)
        if self.input_size is not None:
            x = resize_for_inference(x, self.input_size)
        depth = self.model(x)
        if depth.shape[-2:] != img.shape[-2:]:  # expect: FL203
            depth = F.interpolate(depth, size=img.shape[-2:], mode="bilinear", align_corners=False)
        depth = depth.clamp(MIN_DEPTH, self.max_depth)
        if self.units == "mm" and (depth > 65.535).any():  # expect: FL000 GB0170; FL201
            warnings.warn("depth beyond the uint16 PNG range; values will wrap")
        if self.verbose:
            log_depth_stats(type(self.model).__name__, depth)
        return UNIT_CONVERTERS[self.units](depth)

class TemporalScaleAligner(nn.Module):
    """Video inference: keeps relative depth on a metric scale with sparse LiDAR/VIO points (EMA)."""
    def __init__(self, momentum: float = 0.9):
        super().__init__()
        self.momentum, self.num_updates = momentum, 0
        self.register_buffer("scale", torch.ones(()))

    def forward(self, pred: Tensor, sparse: Tensor) -> Tensor:
        valid = sparse > MIN_DEPTH
        if not valid.any():  # frame without LiDAR/VIO returns: keep the running scale  # expect: FL000 GB0170
            return pred * self.scale
        ratio = (sparse * valid).sum() / (pred * valid).sum().clamp(min=1e-6)
        if self.num_updates == 0:
            self.scale.copy_(ratio)
        else:
            self.scale.mul_(self.momentum).add_((1 - self.momentum) * ratio)
        self.num_updates += 1  # expect: FL302
        return pred * self.scale

# ----------------------------------------------------------------------------- losses
@torch.compile
def scale_invariant_loss(pred: Tensor, target: Tensor, mask: Optional[Tensor] = None, lam: float = 0.85, eps=1e-6):
    """Eigen et al. SILog, as used by BTS / AdaBins (x10, sqrt)."""
    if mask is None:
        mask = target > MIN_DEPTH
    d = torch.log(pred[mask] + eps) - torch.log(target[mask] + eps)  # expect: FL000 GB0036
    return torch.sqrt((d ** 2).mean() - lam * d.mean() ** 2) * 10.0

def compute_scale_and_shift(prediction: Tensor, target: Tensor, mask: Tensor) -> Tuple[Tensor, Tensor]:
    a_00 = torch.sum(mask * prediction * prediction, (1, 2))
    a_01 = torch.sum(mask * prediction, (1, 2))
    a_11 = torch.sum(mask, (1, 2))
    b_0 = torch.sum(mask * prediction * target, (1, 2))
    b_1 = torch.sum(mask * target, (1, 2))
    x_0, x_1 = torch.zeros_like(b_0), torch.zeros_like(b_1)
    det = a_00 * a_11 - a_01 * a_01
    valid = det.nonzero()  # expect: FL000 GB0036
    x_0[valid] = (a_11[valid] * b_0[valid] - a_01[valid] * b_1[valid]) / det[valid]
    x_1[valid] = (-a_01[valid] * b_0[valid] + a_00[valid] * b_1[valid]) / det[valid]
    return x_0, x_1

def reduction_batch_based(image_loss: Tensor, m: Tensor):
    divisor = torch.sum(m)
    if divisor == 0:  # expect: FL000 GB0170
        return 0
    return torch.sum(image_loss) / divisor

REDUCTIONS = {"batch": reduction_batch_based, "image": lambda loss, m: torch.mean(loss / m.clamp(min=1))}

@torch.compile
def ssi_loss(prediction: Tensor, target: Tensor, mask: Tensor, alpha=0.5, scales=3, reduction="batch") -> Tensor:
    """MiDaS: align prediction to target in scale and shift, then a masked MSE (+ TV term on the residual)."""
    scale, shift = compute_scale_and_shift(prediction, target, mask)
    aligned = scale.view(-1, 1, 1) * prediction + shift.view(-1, 1, 1)
    reduce = REDUCTIONS[reduction]
    res = aligned - target
    total = reduce(torch.sum(mask * res * res, (1, 2)), 2 * torch.sum(mask, (1, 2)))
    for s in range(scales):  # residual total variation at 1, 1/2, 1/4 resolution
        r, m = res[:, ::2 ** s, ::2 ** s], mask[:, ::2 ** s, ::2 ** s]
        tv = torch.abs(r[:, :, 1:] - r[:, :, :-1]) * m[:, :, 1:] * m[:, :, :-1]
        total = total + alpha * reduce(tv.sum((1, 2)), m.sum((1, 2)))
    return total

# ----------------------------------------------------------------------------- evaluation / post-processing
def eigen_crop_mask(h: int, w: int, device=None) -> Tensor:
    crop = np.array([EIGEN_CROP[0] * h, EIGEN_CROP[1] * h, EIGEN_CROP[2] * w, EIGEN_CROP[3] * w]).astype(np.int32)
    m = torch.zeros(h, w, dtype=torch.bool, device=device)
    m[crop[0]:crop[1], crop[2]:crop[3]] = True  # expect: FL000 GB0033
    return m

def compute_errors(gt: Tensor, pred: Tensor) -> List[Tensor]:
    thresh = torch.maximum(gt / pred, pred / gt)
    a1, a2, a3 = [(thresh < 1.25 ** k).float().mean() for k in (1, 2, 3)]
    rmse = torch.sqrt(((gt - pred) ** 2).mean())
    rmse_log = torch.sqrt(((torch.log(gt) - torch.log(pred)) ** 2).mean())
    abs_rel, sq_rel = torch.mean(torch.abs(gt - pred) / gt), torch.mean((gt - pred) ** 2 / gt)
    return [abs_rel, sq_rel, rmse, rmse_log, a1, a2, a3]

@torch.compile
def evaluate_batch(pred_disp: Tensor, gt_depth: Tensor, cfg: DepthConfig, median_scaling=True, garg_crop=True):
    results = []
    for i in range(gt_depth.shape[0]):
        gt = gt_depth[i, 0]
        h, w = gt.shape
        disp = F.interpolate(pred_disp[i:i + 1], (h, w), mode="bilinear", align_corners=False)
        pred = disp_to_depth(disp, cfg.min_depth, cfg.max_depth)[1][0, 0]
        mask = (gt > MIN_DEPTH) & (gt < cfg.max_depth)
        if garg_crop:
            mask = mask & eigen_crop_mask(h, w, gt.device)
        pred, gt = pred[mask], gt[mask]
        if median_scaling:
            pred = pred * (torch.median(gt) / torch.median(pred))
        results.append(torch.stack(compute_errors(gt, pred.clamp(MIN_DEPTH, cfg.max_depth))))
    return dict(zip(METRIC_NAMES, torch.stack(results).mean(0).tolist()))

def fill_invalid_depth(depth: Tensor, valid: Tensor, max_iters: int = 6) -> Tensor:
    """Fills holes (sparse LiDAR, stereo occlusions) by repeated masked 3x3 averaging."""
    depth, valid = depth * valid, valid.float()
    kernel = depth.new_ones(1, 1, 3, 3)
    for it in range(max_iters):
        if valid.min() > 0:  # expect: FL000 GB0170; FL201
            break
        num = F.conv2d(depth, kernel, padding=1)
        den = F.conv2d(valid, kernel, padding=1)
        depth = torch.where(valid > 0, depth, num / den.clamp(min=1e-6))
        valid = torch.maximum(valid, (den > 0).float())
    return depth

def depth_to_points(depth: Tensor, K: Tensor) -> Tensor:
    """Back-projects a (B,1,H,W) depth map with (B,3,3) intrinsics to a (B,3,H,W) point map."""
    b, _, h, w = depth.shape
    ys, xs = torch.meshgrid(torch.arange(h).to(depth), torch.arange(w).to(depth), indexing="ij")
    pix = torch.stack([xs, ys, torch.ones_like(xs)], 0).view(1, 3, -1)
    rays = torch.linalg.inv(K) @ pix
    return (rays * depth.view(b, 1, -1)).view(b, 3, h, w)

backproject = torch.compile(depth_to_points)

def median_filter(depth: Tensor, k: int = 3) -> Tensor:
    b, c, h, w = depth.shape
    patches = F.unfold(F.pad(depth, [k // 2] * 4, mode="replicate"), k)
    return patches.view(b, c, k * k, h, w).median(dim=2).values

def drop_flying_pixels(depth: Tensor, rel_thresh: float = 0.1) -> Tensor:
    """Zeroes depth discontinuity pixels (mixed foreground/background after bilinear upsampling)."""
    gx = F.pad(torch.abs(depth[..., :, 1:] - depth[..., :, :-1]), (0, 1, 0, 0))
    gy = F.pad(torch.abs(depth[..., 1:, :] - depth[..., :-1, :]), (0, 0, 0, 1))
    edge = torch.maximum(gx, gy) > rel_thresh * depth
    if DEBUG_CHECKS:
        logger.debug("dropping %d flying pixels", int(edge.sum()))
    return depth.masked_fill(edge, 0.0)

POSTPROCESS_HOOKS: List[Callable[[Tensor], Tensor]] = [
    partial(torch.clamp, min=MIN_DEPTH, max=NYU_MAX_DEPTH), median_filter, partial(drop_flying_pixels, rel_thresh=0.2)]

class DepthPostprocessor(nn.Module):
    def __init__(self, hooks: Sequence[Callable[[Tensor], Tensor]] = POSTPROCESS_HOOKS, fill_holes: bool = True):
        super().__init__()
        self.hooks, self.fill_holes = list(hooks), fill_holes

    def forward(self, depth: Tensor) -> Tensor:
        for hook in self.hooks:
            depth = hook(depth)
        if self.fill_holes:
            depth = fill_invalid_depth(depth, depth > 0)
        return depth

COLORMAP_LUT = torch.from_numpy(np.stack([np.linspace(0, 1, 256) ** p for p in (0.5, 1.0, 2.0)], 1)).float()

@torch.compile
def colorize(depth: Tensor, vmin: Optional[float] = None, vmax: Optional[float] = None) -> Tensor:
    d = depth.squeeze(1)
    if vmin is None or vmax is None:
        lo, hi = np.percentile(d.detach().cpu().numpy(), [2, 98])  # expect: FL203
        vmin, vmax = (float(lo) if vmin is None else vmin), (float(hi) if vmax is None else vmax)  # expect: FL000 GB0033
    d = 1.0 - ((d - vmin) / max(vmax - vmin, 1e-6)).clamp(0, 1)  # near = bright
    idx = (d * 255).long()
    return COLORMAP_LUT.to(depth.device)[idx].permute(0, 3, 1, 2)

# ----------------------------------------------------------------------------- export entry points
def build_mono(preset: str = "mono_kitti", **overrides) -> MonoDepthNet:
    return MonoDepthNet(replace(PRESETS[preset], **overrides)).eval()

def build_stereo(**overrides) -> StereoNet:
    return StereoNet(replace(StereoConfig(), **overrides)).eval()

def export_torchscript(out_dir: str, h: int = 24, w: int = 40):
    img, u8 = torch.rand(1, 3, h, w), torch.randint(0, 256, (1, 3, h, w), dtype=torch.uint8)
    torch.jit.trace(MonoDepthNet(PRESETS["mono_kitti"]).eval(), (img,)).save(f"{out_dir}/mono.pt")
    torch.jit.trace(FlipTTA(build_mono("mono_nyu")), (img,)).save(f"{out_dir}/mono_tta.pt")
    torch.jit.trace(DepthDeployWrapper(build_mono(), units="mm"), (u8,)).save(f"{out_dir}/mono_deploy.pt")
    torch.jit.trace(ConfidentStereo(build_stereo()), (img, img)).save(f"{out_dir}/stereo.pt")
    torch.jit.trace(DepthPostprocessor(), (img[:, :1] * 10,)).save(f"{out_dir}/post.pt")
    torch.jit.trace(resize_for_inference, (img,)).save(f"{out_dir}/resize.pt")

def export_programs(out_dir: str, h: int = 24, w: int = 40) -> Dict[str, object]:
    img, K = torch.rand(1, 3, h, w), torch.eye(3).unsqueeze(0)
    programs = {
        "stereo_raw": torch.export.export(StereoNet(StereoConfig()).eval(), (img, img)),
        "points": torch.export.export(depth_to_points, (img[:, :1], K)),
        "confidence": torch.export.export(confidence_mask, (img[:, :1],)),
        "fill": torch.export.export(fill_invalid_depth, (img[:, :1], img[:, :1] > 0.5)),
        "colorize": torch.export.export(colorize, (img[:, :1],)),
    }
    for name, program in programs.items():
        torch.export.save(program, f"{out_dir}/{name}.pt2")
    return programs

# ----------------------------------------------------------------------------- cases
def _rand(*shape: int, k: int = 0) -> Tensor:
    return torch.rand(*shape, generator=torch.Generator().manual_seed(k))

def _u8(*shape: int, k: int = 0) -> Tensor:
    return torch.randint(0, 256, shape, dtype=torch.uint8, generator=torch.Generator().manual_seed(k))

def _intrinsics(b: int, f: float = 20.0, cx: float = 10.0, cy: float = 6.0) -> Tensor:
    return torch.tensor([[f, 0.0, cx], [0.0, f, cy], [0.0, 0.0, 1.0]]).expand(b, 3, 3).clone()

def _sparse(*shape: int, k: int = 0, keep: float = 0.3) -> Tensor:
    return (_rand(*shape, k=k) * 20 + 1) * (_rand(*shape, k=k + 1) < keep)

_stereo_in = lambda w, k=0, b=2: (_rand(b, 3, 8, w, k=k), _rand(b, 3, 8, w, k=k + 1))

CASES = {
    "MonoDepthNet": lambda: (build_mono(), (_rand(2, 3, 13, 21),), (_rand(2, 3, 16, 24),)),
    "FlipTTA": lambda: (FlipTTA(build_mono("mono_nyu")), (_rand(2, 3, 12, 20),)),
    "StereoNet": lambda: (build_stereo(), _stereo_in(12), _stereo_in(20)),
    "ConfidentStereo": lambda: (ConfidentStereo(build_stereo(conf_threshold=0.9)), _stereo_in(20, k=3)),
    "DepthDeployWrapper": lambda: (DepthDeployWrapper(build_mono(), units="mm", input_size=24), (_u8(2, 3, 14, 22),)),
    "DepthDeployWrapper_verbose": lambda: (DepthDeployWrapper(build_mono(), verbose=True), (_rand(2, 3, 12, 20) * 255,)),
    "TemporalScaleAligner": lambda: (TemporalScaleAligner(), (_rand(2, 1, 6, 10) + 0.5, _sparse(2, 1, 6, 10))),
    "DepthPostprocessor": lambda: (DepthPostprocessor(), (_sparse(2, 1, 6, 10, keep=0.7),)),
    "resize_for_inference": lambda: (resize_for_inference, (_rand(2, 3, 14, 22),), (_rand(2, 3, 22, 14),)),
    "scale_invariant_loss": lambda: (scale_invariant_loss, (_rand(2, 1, 6, 10) + 0.1, _sparse(2, 1, 6, 10))),
    "ssi_loss": lambda: (ssi_loss, (_rand(2, 12, 20), _rand(2, 12, 20, k=1), (_rand(2, 12, 20, k=2) > 0.2).float())),
    "evaluate_batch": lambda: (evaluate_batch, (_rand(2, 1, 6, 10), _sparse(2, 1, 12, 20, keep=0.8), PRESETS["mono_kitti"])),
    "backproject": lambda: (backproject, (_rand(2, 1, 6, 10) * 5, _intrinsics(2))),
    "DepthPostprocessor_nofill": lambda: (DepthPostprocessor(fill_holes=False), (_rand(2, 1, 6, 10) * 12,)),
    "colorize": lambda: (colorize, (_rand(2, 1, 6, 10) * 10,)),
}

TRACED = {
    "MonoDepthNet": lambda: (build_mono(), (_rand(1, 3, 13, 21),)),
    "FlipTTA": lambda: (FlipTTA(build_mono("mono_nyu")), (_rand(1, 3, 12, 20),)),
    "DepthDeployWrapper": lambda: (DepthDeployWrapper(build_mono(), units="mm"), (_u8(1, 3, 14, 22),)),
    "ConfidentStereo": lambda: (ConfidentStereo(build_stereo(conf_threshold=0.9)), _stereo_in(20, k=3, b=1)),
    "StereoNet": lambda: (build_stereo(), _stereo_in(12, b=1)),
    "DepthPostprocessor": lambda: (DepthPostprocessor(), (_sparse(1, 1, 6, 10, keep=0.7),)),
    "resize_for_inference": lambda: (resize_for_inference, (_rand(1, 3, 14, 22),)),
    "depth_to_points": lambda: (depth_to_points, (_rand(1, 1, 6, 10) * 5, _intrinsics(1))),
    "confidence_mask": lambda: (confidence_mask, (_rand(1, 1, 6, 10) * 0.4,)),
    "fill_invalid_depth": lambda: (fill_invalid_depth, (_sparse(1, 1, 6, 10, keep=0.5), _rand(1, 1, 6, 10) > 0.5)),
    "colorize": lambda: (colorize, (_rand(1, 1, 6, 10) * 10,)),
}
