"""Portrait matting / background removal shipped to phones: MobileNetV2-style encoder + U-Net decoder, guided-filter
refinement (box and fast variants), a BGMv2-style patch refiner, trimap utilities, foreground estimation,
compositing, and the TorchScript / torch.export code that produces the on-device artefacts."""
import logging
import math
import time
import warnings
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

log = logging.getLogger("matting.deploy")
log.addHandler(logging.NullHandler())

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
TRIMAP_BG, TRIMAP_UNKNOWN, TRIMAP_FG = 0.0, 0.5, 1.0
OUTPUT_STRIDE = 8
GREEN_SCREEN = (0.47, 1.0, 0.6)
ALPHA_FLOOR = 0.02  # below this the app treats a pixel as background (kills halo speckle)
_EPS = 1e-6
_KERNEL_CACHE: Dict[Tuple[str, float], Tensor] = {}
MODEL_REGISTRY: Dict[str, Callable[..., nn.Module]] = {}
REFINERS: Dict[str, Callable[["MattingConfig"], Optional[nn.Module]]] = {}

def register(table: Dict, name: str):
    def wrap(obj):
        assert name not in table, f"duplicate registration {name!r}"
        table[name] = obj
        return obj
    return wrap

@dataclass
class MattingConfig:
    in_ch: int = 3
    widths: Tuple[int, ...] = (8, 12, 16)
    decoder_ch: int = 8
    expand_ratio: int = 2
    refiner: str = "guided"
    gf_radius: int = 2
    gf_eps: float = 1e-2
    trimap_input: bool = False
    output_stride: int = OUTPUT_STRIDE
    extra: Dict[str, float] = field(default_factory=dict)
    @property
    def total_in(self) -> int:
        return self.in_ch + (3 if self.trimap_input else 0)

PRESETS = {
    "portrait": MattingConfig(),
    "trimap": MattingConfig(trimap_input=True, refiner="none"),
    "mobile": MattingConfig(refiner="fast", gf_eps=1e-3, extra={"lr_radius": 1}),
}

def normalize(img: Tensor, mean: Sequence[float] = IMAGENET_MEAN, std: Sequence[float] = IMAGENET_STD) -> Tensor:
    return (img - img.new_tensor(mean).view(1, -1, 1, 1)) / img.new_tensor(std).view(1, -1, 1, 1)

def pad_to_stride(x: Tensor, stride: int = OUTPUT_STRIDE) -> Tuple[Tensor, Tuple[int, int]]:
    h, w = x.shape[-2:]
    ph, pw = (stride - h % stride) % stride, (stride - w % stride) % stride
    if ph or pw:  # expect: FL203; FL301
        x = F.pad(x, (0, pw, 0, ph), mode="replicate")
    return x, (h, w)

def to_gray(img: Tensor) -> Tensor:
    if img.size(1) == 1:  # expect: FL203
        return img
    return (img * img.new_tensor([0.299, 0.587, 0.114]).view(1, 3, 1, 1)).sum(dim=1, keepdim=True)

def _morph(mask: Tensor, k: int, op: str) -> Tensor:
    if op == "dilate":
        return F.max_pool2d(mask, k, stride=1, padding=k // 2)
    return -F.max_pool2d(-mask, k, stride=1, padding=k // 2)

@torch.compile
def make_trimap(alpha: Tensor, kernel_frac: float = 0.15, lo: float = 0.05, hi: float = 0.95) -> Tensor:
    """Ground-truth alpha -> trimap by eroding the sure-foreground and dilating the maybe-foreground."""
    h, w = alpha.shape[-2:]
    k = max(3, int(min(h, w) * kernel_frac + 0.5) | 1)  # expect: FL203
    sure_fg = _morph((alpha >= hi).float(), k, "erode")
    maybe_fg = _morph((alpha > lo).float(), k, "dilate")
    trimap = torch.full_like(alpha, TRIMAP_UNKNOWN)
    trimap = torch.where(sure_fg > 0.5, torch.full_like(alpha, TRIMAP_FG), trimap)
    return torch.where(maybe_fg < 0.5, torch.full_like(alpha, TRIMAP_BG), trimap)

def trimap_to_channels(trimap: Tensor) -> Tensor:
    bg, fg = (trimap < 0.25).float(), (trimap > 0.75).float()
    return torch.cat([bg, 1.0 - bg - fg, fg], dim=1)

def fuse_trimap(alpha: Tensor, trimap: Tensor) -> Tensor:
    alpha = alpha.clone()
    alpha[trimap >= TRIMAP_FG] = 1.0
    alpha[trimap <= TRIMAP_BG] = 0.0
    return alpha

def despeckle(alpha: Tensor, floor: float = ALPHA_FLOOR) -> Tensor:
    return torch.where(alpha < floor, torch.zeros_like(alpha), alpha)

def keep_largest_blob(alpha: Tensor, thr: float = 0.5, max_iter: int = 32) -> Tensor:
    """Drops floating islands: grow a region from the most confident pixel inside the thresholded mask."""
    mask = (alpha > thr).float()
    flat = alpha.flatten(1)
    region = torch.zeros_like(flat).scatter_(1, flat.argmax(dim=1, keepdim=True), 1.0).view_as(alpha) * mask
    for _ in range(max_iter):
        grown = F.max_pool2d(region, 3, stride=1, padding=1) * mask
        if torch.equal(grown, region):  # expect: FL000 GB0033
            break
        region = grown
    return alpha * F.max_pool2d(region, 3, stride=1, padding=1)  # keep the soft edge around the blob

def check_alpha(alpha: Tensor, name: str = "alpha") -> Tensor:
    if not torch.isfinite(alpha).all():  # expect: FL000 GB0170; FL201
        warnings.warn(f"{name} has non-finite values; replacing them")
        alpha = torch.nan_to_num(alpha, nan=0.0, posinf=1.0, neginf=0.0)
    return alpha.clamp(0.0, 1.0)

MOBILE_POST_HOOKS: List[Callable[[Tensor], Tensor]] = [check_alpha, despeckle, keep_largest_blob]

def _diff_x(x: Tensor, r: int) -> Tensor:
    left = x[:, :, r:2 * r + 1]
    middle = x[:, :, 2 * r + 1:] - x[:, :, :-2 * r - 1]
    right = x[:, :, -1:] - x[:, :, -2 * r - 1:-r - 1]
    return torch.cat([left, middle, right], dim=2)

def _diff_y(x: Tensor, r: int) -> Tensor:
    left = x[:, :, :, r:2 * r + 1]
    middle = x[:, :, :, 2 * r + 1:] - x[:, :, :, :-2 * r - 1]
    right = x[:, :, :, -1:] - x[:, :, :, -2 * r - 1:-r - 1]
    return torch.cat([left, middle, right], dim=3)

def box_filter(x: Tensor, r: int) -> Tensor:
    assert x.dim() == 4, "box_filter expects NCHW"
    return _diff_y(_diff_x(x.cumsum(dim=2), r).cumsum(dim=3), r)

class GuidedFilter(nn.Module):
    def __init__(self, r: int, eps: float = 1e-2):
        super().__init__()
        self.r, self.eps = r, eps
    def _coefficients(self, guide: Tensor, src: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        h, w = guide.shape[-2:]
        assert h > 2 * self.r + 1 and w > 2 * self.r + 1, f"image {h}x{w} too small for radius {self.r}"  # expect: FL203
        n = box_filter(guide.new_ones(1, 1, h, w), self.r)
        mean_i, mean_p = box_filter(guide, self.r) / n, box_filter(src, self.r) / n
        cov_ip = box_filter(guide * src, self.r) / n - mean_i * mean_p
        var_i = box_filter(guide * guide, self.r) / n - mean_i * mean_i
        a = cov_ip / (var_i + self.eps)
        return a, mean_p - a * mean_i, n
    def forward(self, guide: Tensor, src: Tensor) -> Tensor:
        if guide.size(1) != src.size(1):  # expect: FL203
            guide = to_gray(guide)
        a, b, n = self._coefficients(guide, src)
        return (box_filter(a, self.r) / n) * guide + box_filter(b, self.r) / n

class FastGuidedFilter(GuidedFilter):
    def forward(self, lr_guide: Tensor, lr_src: Tensor, hr_guide: Tensor) -> Tensor:
        lr_guide, hr_guide = to_gray(lr_guide), to_gray(hr_guide)
        a, b, n = self._coefficients(lr_guide, lr_src)
        mean_a, mean_b = box_filter(a, self.r) / n, box_filter(b, self.r) / n
        size = hr_guide.shape[-2:]
        mean_a = F.interpolate(mean_a, size=size, mode="bilinear", align_corners=False)
        mean_b = F.interpolate(mean_b, size=size, mode="bilinear", align_corners=False)
        return mean_a * hr_guide + mean_b

class GuidedRefiner(nn.Module):
    def __init__(self, radius: int, eps: float, fast: bool = False):
        super().__init__()
        self.fast = fast
        self.gf = FastGuidedFilter(radius, eps) if fast else GuidedFilter(radius, eps)
    def forward(self, image: Tensor, alpha: Tensor) -> Tensor:
        if not self.fast:
            return self.gf(image, alpha).clamp(0.0, 1.0)
        lr_image, lr_alpha = F.avg_pool2d(image, 2), F.avg_pool2d(alpha, 2)
        return self.gf(lr_image, lr_alpha, image).clamp(0.0, 1.0)

register(REFINERS, "guided")(lambda cfg: GuidedRefiner(cfg.gf_radius, cfg.gf_eps))
register(REFINERS, "fast")(lambda cfg: GuidedRefiner(int(cfg.extra.get("lr_radius", 1)), cfg.gf_eps, fast=True))
register(REFINERS, "none")(lambda cfg: None)

class ConvBNAct(nn.Sequential):
    def __init__(self, cin: int, cout: int, k: int = 3, stride: int = 1, groups: int = 1, act: bool = True):
        layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
        if act:
            layers.append(nn.ReLU6(inplace=True))
        super().__init__(*layers)
    @property
    def out_channels(self) -> int:
        return self[0].out_channels

class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        hidden = cin * expand
        self.use_res = stride == 1 and cin == cout
        self.block = nn.Sequential(ConvBNAct(cin, hidden, 1), ConvBNAct(hidden, hidden, 3, stride, groups=hidden),
                                   ConvBNAct(hidden, cout, 1, act=False))
    def forward(self, x: Tensor) -> Tensor:
        out = self.block(x)
        return x + out if self.use_res else out

class MobileEncoder(nn.Module):
    def __init__(self, cfg: MattingConfig, in_ch: Optional[int] = None):
        super().__init__()
        self.stem = ConvBNAct(in_ch or cfg.total_in, cfg.widths[0], 3, 2)
        stages, cin = [], cfg.widths[0]
        for width in cfg.widths[1:]:
            stages.append(nn.Sequential(InvertedResidual(cin, width, 2, cfg.expand_ratio),
                                        InvertedResidual(width, width, 1, cfg.expand_ratio)))
            cin = width
        self.stages = nn.ModuleList(stages)
    @property
    def channels(self) -> List[int]:
        return [self.stem.out_channels] + [stage[-1].block[-1].out_channels for stage in self.stages]
    def forward(self, x: Tensor) -> List[Tensor]:
        feats = [self.stem(x)]
        for stage in self.stages:
            feats.append(stage(feats[-1]))
        return feats

class UpBlock(nn.Module):
    def __init__(self, cin: int, cskip: int, cout: int):
        super().__init__()
        self.conv = ConvBNAct(cin + cskip, cout)
    def forward(self, x: Tensor, skip: Tensor) -> Tensor:
        x = F.interpolate(x, size=skip.shape[-2:], mode="bilinear", align_corners=False)
        return self.conv(torch.cat([x, skip], dim=1))

class MattingDecoder(nn.Module):
    def __init__(self, enc_channels: Sequence[int], ch: int, image_ch: int):
        super().__init__()
        chans = list(reversed(enc_channels))
        self.ups = nn.ModuleList(UpBlock(chans[0] if i == 0 else ch, skip, ch) for i, skip in enumerate(chans[1:]))
        self.final = UpBlock(ch, image_ch, ch)
        self.head = nn.Conv2d(ch, 1, 3, padding=1)
    def forward(self, feats: List[Tensor], image: Tensor) -> Tensor:
        x = feats[-1]
        for up, skip in zip(self.ups, reversed(feats[:-1])):
            x = up(x, skip)
        return torch.sigmoid(self.head(self.final(x, image)))

@register(MODEL_REGISTRY, "unet")
class MattingNet(nn.Module):
    def __init__(self, cfg: Optional[MattingConfig] = None):
        super().__init__()
        self.cfg = cfg or MattingConfig()
        self.encoder = MobileEncoder(self.cfg)
        self.decoder = MattingDecoder(self.encoder.channels, self.cfg.decoder_ch, self.cfg.total_in)
        self.refiner = REFINERS[self.cfg.refiner](self.cfg)
    def forward(self, image: Tensor, trimap: Optional[Tensor] = None) -> Tensor:
        x = normalize(image)
        if self.cfg.trimap_input:
            if trimap is None:
                raise ValueError("this checkpoint was trained with a trimap input")
            if not (trimap == TRIMAP_UNKNOWN).any():  # expect: FL000 GB0170
                warnings.warn("trimap has no unknown region; the network output will be fully overridden")
            x = torch.cat([x, trimap_to_channels(trimap)], dim=1)
        x, hw = pad_to_stride(x, self.cfg.output_stride)
        log.debug("matting input %s padded to %s", tuple(image.shape), tuple(x.shape))  # expect: FL000 GB0291; FL204
        alpha = self.decoder(self.encoder(x), x)[..., : hw[0], : hw[1]]
        if self.refiner is not None:
            alpha = self.refiner(image, alpha)
        return fuse_trimap(alpha, trimap) if trimap is not None else alpha

class PatchRefiner(nn.Module):
    """BGMv2-style refiner: pick the patches with the largest predicted error and re-run a small CNN on them."""
    def __init__(self, mode: str = "sampling", threshold: float = 0.1, sample_patches: int = 6,
                 patch: int = 4, kernel: int = 3, ch: int = 8):
        super().__init__()
        assert mode in ("sampling", "thresholding")
        self.mode, self.sample_patches, self.threshold = mode, sample_patches, threshold
        self.patch, self.pad = patch, kernel // 2
        self.conv = nn.Sequential(nn.Conv2d(4, ch, kernel), nn.ReLU(inplace=True), nn.Conv2d(ch, 1, 1))
    def select_refinement_regions(self, err: Tensor) -> Tensor:
        if self.mode == "sampling":
            b, _, h, w = err.shape
            flat = err.view(b, -1)
            idx = flat.topk(min(self.sample_patches, h * w), dim=1, sorted=False).indices  # expect: FL203
            ref = torch.zeros_like(flat).scatter_(1, idx, 1.0)
            return ref.view(b, 1, h, w)
        return err.gt(self.threshold).float()
    def forward(self, image: Tensor, alpha: Tensor, err: Tensor) -> Tensor:
        ref = self.select_refinement_regions(err)
        b_idx, y_idx, x_idx = torch.nonzero(ref.squeeze(1), as_tuple=True)  # expect: FL000 GB0036
        if b_idx.numel() == 0:  # expect: FL203
            return alpha
        p, pad = self.patch, self.pad
        x = F.pad(torch.cat([image, alpha], dim=1), (pad,) * 4, mode="replicate")
        crops = x.unfold(2, p + 2 * pad, p).unfold(3, p + 2 * pad, p).permute(0, 2, 3, 1, 4, 5)[b_idx, y_idx, x_idx]
        refined = torch.sigmoid(self.conv(crops))
        b, _, h, w = alpha.shape
        tiles = alpha.view(b, 1, h // p, p, w // p, p).permute(0, 2, 4, 1, 3, 5).clone()
        tiles[b_idx, y_idx, x_idx] = refined
        return tiles.permute(0, 3, 1, 4, 2, 5).reshape(b, 1, h, w)

@torch.compile
def composite(fg: Tensor, alpha: Tensor, bg: Optional[Tensor] = None, bg_color: Tuple[float, ...] = GREEN_SCREEN) -> Tensor:
    if bg is None:
        bg = fg.new_tensor(bg_color).view(1, 3, 1, 1)
    elif bg.shape[-2:] != fg.shape[-2:]:  # expect: FL203; FL301
        bg = F.interpolate(bg, size=fg.shape[-2:], mode="bilinear", align_corners=False)
    return alpha * fg + (1.0 - alpha) * bg

def gaussian_kernel1d(sigma: float, truncate: float = 2.0) -> Tensor:
    key = ("gauss", float(sigma))
    if key not in _KERNEL_CACHE:
        radius = max(1, int(truncate * sigma + 0.5))
        xs = np.arange(-radius, radius + 1, dtype=np.float32)
        k = np.exp(-0.5 * (xs / sigma) ** 2)
        _KERNEL_CACHE[key] = torch.from_numpy(k / k.sum())
    return _KERNEL_CACHE[key]

class BackgroundBlur(nn.Module):
    """'Portrait mode': blur only the background, normalised by blurred (1 - alpha) to avoid subject halos."""
    def __init__(self, sigma: float = 1.5, channels: int = 3):
        super().__init__()
        k = gaussian_kernel1d(sigma)
        self.radius = k.numel() // 2
        self.register_buffer("kx", k.view(1, 1, 1, -1).repeat(channels + 1, 1, 1, 1))
        self.register_buffer("ky", k.view(1, 1, -1, 1).repeat(channels + 1, 1, 1, 1))
    def _blur(self, x: Tensor) -> Tensor:
        r, c = self.radius, x.size(1)
        x = F.conv2d(F.pad(x, (r, r, 0, 0), mode="replicate"), self.kx[:c], groups=c)
        return F.conv2d(F.pad(x, (0, 0, r, r), mode="replicate"), self.ky[:c], groups=c)
    def forward(self, image: Tensor, alpha: Tensor) -> Tensor:
        weight = 1.0 - alpha
        blurred = self._blur(torch.cat([image * weight, weight], dim=1))
        background = blurred[:, :-1] / blurred[:, -1:].clamp_min(_EPS)
        return composite(image, alpha, background)

def _solid_bg(image: Tensor, alpha: Tensor, color: Tuple[float, ...] = GREEN_SCREEN) -> Tensor:
    return composite(image, alpha, None, color)

def _rgba(image: Tensor, alpha: Tensor) -> Tensor:
    return torch.cat([image * alpha, alpha], dim=1)  # premultiplied, what CoreImage expects

BACKGROUND_MODES: Dict[str, Callable[..., Tensor]] = {
    "solid": _solid_bg, "image": composite, "transparent": _rgba,
    "white": partial(_solid_bg, color=(1.0, 1.0, 1.0)),
}

@torch.compile
def replace_background(image: Tensor, alpha: Tensor, mode: str = "solid", **kwargs) -> Tensor:
    try:
        handler = BACKGROUND_MODES[mode]
    except KeyError:
        raise ValueError(f"unknown background mode {mode!r}; choose from {sorted(BACKGROUND_MODES)}") from None
    log.debug("replacing background: mode=%s options=%s", mode, sorted(kwargs))  # expect: FL000 GB0291
    return handler(image, despeckle(alpha), **kwargs)

@torch.compile
def unpremultiply(rgba: Tensor, min_alpha: float = 1.0 / 255.0) -> Tensor:
    rgb, a = rgba[:, :3], rgba[:, 3:]
    return torch.cat([rgb / a.clamp_min(min_alpha), a], dim=1)

def _box_mean(x: Tensor, r: int) -> Tensor:
    return F.avg_pool2d(x, 2 * r + 1, stride=1, padding=r, count_include_pad=False)

def blur_fusion(image: Tensor, fg: Tensor, bg: Tensor, alpha: Tensor, r: int) -> Tuple[Tensor, Tensor]:
    """One step of Forte & Pitie's approximate fast foreground colour estimation (Blur-Fusion)."""
    blurred_alpha = _box_mean(alpha, r)
    blurred_fa = _box_mean(fg * alpha, r) / (blurred_alpha + _EPS)
    blurred_b1a = _box_mean(bg * (1 - alpha), r) / ((1 - blurred_alpha) + _EPS)
    fg = blurred_fa + alpha * (image - alpha * blurred_fa - (1 - alpha) * blurred_b1a)
    return fg.clamp(0.0, 1.0), blurred_b1a

@torch.compile
def estimate_foreground(image: Tensor, alpha: Tensor, min_size: int = 4) -> Tensor:
    h, w = image.shape[-2:]
    levels = max(1, int(math.log2(min(h, w) / min_size)))
    fg = bg = image
    for level in reversed(range(levels)):  # expect: FL301
        scale = 2 ** level
        size = (h // scale, w // scale)
        img_l, a_l, fg, bg = (F.interpolate(t, size=size, mode="bilinear", align_corners=False)
                              for t in (image, alpha, fg, bg))
        fg, bg = blur_fusion(img_l, fg, bg, a_l, r=max(1, 3 - level))
    return fg

def _gauss_grad_kernels(sigma: float = 1.4) -> Tuple[Tensor, Tensor]:
    key = ("dgauss", sigma)
    if key not in _KERNEL_CACHE:
        r = int(math.ceil(2 * sigma))
        xs = np.arange(-r, r + 1, dtype=np.float64)
        g = np.exp(-xs ** 2 / (2 * sigma ** 2))
        kx = np.outer(g, -xs * g / sigma ** 2)
        kx /= np.abs(kx).sum()
        _KERNEL_CACHE[key] = torch.from_numpy(kx).float()[None, None]
    kx = _KERNEL_CACHE[key]
    return kx, kx.transpose(-1, -2)

def gradient_error(pred: Tensor, gt: Tensor, mask: Tensor) -> Tensor:
    kx, ky = _gauss_grad_kernels()
    pad = kx.size(-1) // 2
    def magnitude(a: Tensor) -> Tensor:
        gx, gy = F.conv2d(a, kx, padding=pad), F.conv2d(a, ky, padding=pad)
        return torch.sqrt(gx ** 2 + gy ** 2)
    return ((magnitude(pred) - magnitude(gt)) ** 2 * mask).sum() / 1000.0

@torch.compile
def matting_metrics(pred: Tensor, gt: Tensor, trimap: Optional[Tensor] = None) -> Dict[str, float]:
    """SAD / MSE / Grad over the unknown region, the Composition-1k conventions."""
    mask = (trimap == TRIMAP_UNKNOWN).float() if trimap is not None else torch.ones_like(gt)
    pixels = mask.sum().clamp_min(1.0)
    diff = (pred - gt) * mask
    metrics = {"sad": diff.abs().sum() / 1000.0, "mse": diff.pow(2).sum() / pixels,
               "grad": gradient_error(pred, gt, mask)}
    return {name: float(value) for name, value in metrics.items()}  # expect: FL000 GB0092; FL000 GB0124

@torch.compile
def summarize_matte(alpha: Tensor, bins: int = 8) -> Dict[str, object]:
    hist = torch.histc(alpha, bins=bins, min=0.0, max=1.0)
    hist /= hist.sum()
    transition = hist[1:-1].sum()
    return {"hist": hist.tolist(), "transition": transition, "fg_ratio": hist[-1]}  # expect: FL000 GB0109

class TemporalAlphaSmoother(nn.Module):
    """Video matting on device: EMA over frames, damped when motion is large, after a warm-up."""
    def __init__(self, shape: Tuple[int, ...], momentum: float = 0.6, warmup: int = 1):
        super().__init__()
        self.momentum, self.warmup = momentum, warmup
        self.register_buffer("ema", torch.zeros(shape), persistent=False)
        self.frames_seen = 0
    def forward(self, alpha: Tensor) -> Tensor:
        if self.frames_seen < self.warmup:
            out = alpha
        else:
            motion = (alpha - self.ema).abs().mean(dim=(1, 2, 3), keepdim=True)
            m = self.momentum * torch.exp(-10.0 * motion)
            out = m * self.ema + (1.0 - m) * alpha
        self.ema.copy_(out.detach())
        self.frames_seen += 1  # expect: FL302
        return out

class MobileMattingWrapper(nn.Module):
    """What the Android/iOS app calls: uint8 NHWC camera frame -> uint8 alpha at the frame's resolution."""
    def __init__(self, model: nn.Module, input_size: Optional[Tuple[int, int]] = None,
                 post_hooks: Optional[List[Callable[[Tensor], Tensor]]] = None):
        super().__init__()
        self.model, self.input_size = model.eval(), input_size
        self.post_hooks = list(post_hooks) if post_hooks is not None else [despeckle]
    def forward(self, frame: Tensor) -> Tensor:
        x = frame.permute(0, 3, 1, 2).float().div(255.0)
        h, w = x.shape[-2:]
        if self.input_size is not None and (h, w) != tuple(self.input_size):  # expect: FL203
            x = F.interpolate(x, size=self.input_size, mode="bilinear", align_corners=False)
        alpha = self.model(x)
        if alpha.shape[-2:] != (h, w):  # expect: FL203
            alpha = F.interpolate(alpha, size=(h, w), mode="bilinear", align_corners=False)
        for hook in self.post_hooks:
            alpha = hook(alpha)
        return alpha.mul(255.0).round().to(torch.uint8)

@torch.compile
def remove_background_batch(model: nn.Module, images: Tensor, bg: Optional[Tensor] = None, min_coverage: float = 0.05):
    started = time.perf_counter()  # expect: FL000 GB0007
    outputs = []
    for i in range(images.size(0)):
        img = images[i:i + 1]
        alpha = check_alpha(model(img))
        coverage = (alpha > 0.5).float().mean()
        if coverage < min_coverage:
            log.info("image %d: no subject found (coverage %.3f), keeping background", i, coverage)  # expect: FL000 GB0291
            alpha = torch.zeros_like(alpha)
        outputs.append(composite(img, alpha, bg))
    log.debug("matted %d images in %.1f ms", images.size(0), 1e3 * (time.perf_counter() - started))
    return torch.cat(outputs)

def _refine_alpha(image: Tensor, coarse: Tensor, trimap: Optional[Tensor] = None, radius: int = 2, eps: float = 1e-2):
    refined = GuidedFilter(radius, eps)(image, coarse)
    if trimap is not None:
        refined = fuse_trimap(refined, trimap)
    return check_alpha(refined, "refined alpha")

refine_alpha = torch.compile(_refine_alpha, dynamic=False)

def build_model(name: str = "portrait", arch: str = "unet", **overrides) -> nn.Module:
    cfg = replace(PRESETS[name], **overrides)
    model = MODEL_REGISTRY[arch](cfg)
    log.info("built %s/%s with %d params", arch, name, sum(p.numel() for p in model.parameters()))
    return model.eval()

def export_torchscript(out_dir: str, height: int = 32, width: int = 24) -> None:
    from torch.utils.mobile_optimizer import optimize_for_mobile
    frame = torch.randint(0, 256, (1, height, width, 3), dtype=torch.uint8)
    scripted = torch.jit.trace(MobileMattingWrapper(build_model("mobile"), (height, width), MOBILE_POST_HOOKS), (frame,))
    optimize_for_mobile(scripted)._save_for_lite_interpreter(f"{out_dir}/matting_portrait.ptl")
    img = torch.rand(1, 3, height, width)
    lr = F.avg_pool2d(img, 2)
    torch.jit.trace(FastGuidedFilter(2, 1e-2), (lr, lr[:, :1], img)).save(f"{out_dir}/fast_guided_filter.pt")
    torch.jit.trace(make_trimap, (torch.rand(1, 1, height, width),)).save(f"{out_dir}/trimap.pt")

def export_programs(out_dir: str, height: int = 32, width: int = 24) -> Dict[str, object]:
    img, alpha = torch.rand(1, 3, height, width), torch.rand(1, 1, height, width)
    programs = {
        "matting": torch.export.export(MattingNet(PRESETS["portrait"]).eval(), (img,)),
        "blur": torch.export.export(BackgroundBlur(sigma=1.5), (img, alpha)),
        "refine": torch.export.export(PatchRefiner(), (img, alpha, torch.rand(1, 1, height // 4, width // 4))),
    }
    for name, program in programs.items():
        torch.export.save(program, f"{out_dir}/{name}.pt2")
    return programs

def _rand(*shape: int, k: int = 0) -> Tensor:
    return torch.rand(*shape, generator=torch.Generator().manual_seed(k))

def _alpha(*shape: int, k: int = 0) -> Tensor:  # a soft blob: sure fg, sure bg and a transition band
    b, _, h, w = shape
    ys, xs = torch.linspace(-1, 1, h).view(1, 1, h, 1), torch.linspace(-1, 1, w).view(1, 1, 1, w)
    blob = (1.2 - 2.0 * (ys ** 2 + xs ** 2)).clamp(0, 1).expand(b, 1, h, w)
    return (blob + 0.05 * _rand(*shape, k=k)).clamp(0, 1)

CASES = {
    "MattingNet": lambda: (build_model("portrait"), (_rand(2, 3, 20, 28),), (_rand(2, 3, 24, 32),)),
    "MattingNet_trimap": lambda: (build_model("trimap"), (_rand(2, 3, 16, 24), make_trimap(_alpha(2, 1, 16, 24)))),
    "GuidedFilter": lambda: (GuidedFilter(2), (_rand(2, 3, 14, 18), _alpha(2, 1, 14, 18))),
    "FastGuidedFilter": lambda: (FastGuidedFilter(1, 1e-3), (_rand(2, 3, 10, 12), _alpha(2, 1, 10, 12), _rand(2, 3, 20, 24))),
    "PatchRefiner": lambda: (PatchRefiner(), (_rand(2, 3, 16, 20), _alpha(2, 1, 16, 20), _rand(2, 1, 4, 5, k=1))),
    "PatchRefiner_thr": lambda: (PatchRefiner("thresholding", 0.7), (_rand(2, 3, 16, 20), _alpha(2, 1, 16, 20), _rand(2, 1, 4, 5, k=2))),
    "MobileMattingWrapper": lambda: (MobileMattingWrapper(build_model("mobile"), (16, 24), MOBILE_POST_HOOKS),
                                     ((255 * _rand(2, 20, 28, 3)).to(torch.uint8),)),
    "TemporalAlphaSmoother": lambda: (TemporalAlphaSmoother((2, 1, 12, 16)), (_alpha(2, 1, 12, 16),)),
    "BackgroundBlur": lambda: (BackgroundBlur(), (_rand(2, 3, 12, 16), _alpha(2, 1, 12, 16))),
    "composite": lambda: (composite, (_rand(2, 3, 12, 20), _alpha(2, 1, 12, 20), _rand(2, 3, 12, 20, k=3)),
                          (_rand(2, 3, 12, 20), _alpha(2, 1, 12, 20), _rand(2, 3, 10, 14, k=3))),
    "replace_background": lambda: (replace_background, (_rand(2, 3, 12, 16), _alpha(2, 1, 12, 16), "white")),
    "unpremultiply": lambda: (unpremultiply, (_rand(2, 4, 10, 14),)),
    "make_trimap": lambda: (make_trimap, (_alpha(2, 1, 20, 28),)),
    "estimate_foreground": lambda: (estimate_foreground, (_rand(2, 3, 12, 20), _alpha(2, 1, 12, 20)),
                                    (_rand(2, 3, 18, 20), _alpha(2, 1, 18, 20))),
    "matting_metrics": lambda: (matting_metrics, (_alpha(2, 1, 12, 16, k=4), _alpha(2, 1, 12, 16),
                                                  make_trimap(_alpha(2, 1, 12, 16)))),
    "summarize_matte": lambda: (summarize_matte, (_alpha(2, 1, 12, 16),)),
    "remove_background_batch": lambda: (remove_background_batch, (build_model("mobile"), _rand(2, 3, 16, 24))),
    "refine_alpha": lambda: (refine_alpha, (_rand(2, 3, 14, 18), _alpha(2, 1, 14, 18, k=5), make_trimap(_alpha(2, 1, 14, 18)))),
}

TRACED = {
    "MobileMattingWrapper": lambda: (MobileMattingWrapper(build_model("mobile"), (16, 24), MOBILE_POST_HOOKS),
                                     ((255 * _rand(1, 20, 28, 3)).to(torch.uint8),)),
    "FastGuidedFilter": lambda: (FastGuidedFilter(2, 1e-2), (_rand(1, 3, 10, 12), _alpha(1, 1, 10, 12), _rand(1, 3, 20, 24))),
    "make_trimap": lambda: (make_trimap, (_alpha(1, 1, 20, 28),)),
    "MattingNet": lambda: (build_model("portrait"), (_rand(1, 3, 20, 28),)),
    "BackgroundBlur": lambda: (BackgroundBlur(), (_rand(1, 3, 12, 16), _alpha(1, 1, 12, 16))),
    "PatchRefiner": lambda: (PatchRefiner(), (_rand(1, 3, 16, 20), _alpha(1, 1, 16, 20), _rand(1, 1, 4, 5, k=1))),
}
