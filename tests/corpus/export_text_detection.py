"""Scene-text detection packaged for deployment: DBNet and EAST heads on a tiny ResNet-FPN, differentiable
binarization, score-map box decoding, polygon helpers (shoelace area, unclip, clockwise order), resize/pad
to multiples of 32, and the TorchScript / torch.export wrappers that ship them."""
import logging
import math
import warnings
from dataclasses import asdict, dataclass, replace
from functools import partial
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

logger = logging.getLogger("textdet.deploy")
logger.addHandler(logging.NullHandler())

STRIDE = 32
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
DB_K = 50.0
MAX_CANDIDATES = 8
MIN_AREA = 4
LOG_SHAPES = True
EXPORT_STATS: Dict[str, int] = {"frames": 0, "boxes": 0}
BACKBONES: Dict[str, Callable[..., nn.Module]] = {}
HEADS: Dict[str, Callable[..., nn.Module]] = {}
def register(table: Dict, name: str) -> Callable:
    return lambda obj: table.setdefault(name, obj)
@dataclass
class DetConfig:
    head: str = "db"
    backbone: str = "tiny_resnet"
    stage_channels: Tuple[int, ...] = (4, 8, 12, 16)
    inner_channels: int = 8
    k: float = DB_K
    adaptive: bool = True
    geo_scale: float = 32.0
    @property
    def head_kwargs(self) -> Dict[str, object]:
        keys = {"db": ("k", "adaptive"), "east": ("geo_scale",)}[self.head]
        return {key: value for key, value in asdict(self).items() if key in keys}
PRESETS: Dict[str, DetConfig] = {
    "db_tiny": DetConfig(),
    "db_tiny_fixed": DetConfig(adaptive=False),
    "east_tiny": DetConfig(head="east", stage_channels=(4, 8, 8, 12)),
}

# ----------------------------------------------------------------------------------------- pre-processing
def normalize(img: Tensor, mean: Sequence[float] = IMAGENET_MEAN, std: Sequence[float] = IMAGENET_STD) -> Tensor:
    if img.dtype == torch.uint8:
        img = img.float() / 255.0
    mean_t, std_t = (torch.tensor(v, dtype=img.dtype).view(1, -1, 1, 1) for v in (mean, std))
    return (img - mean_t) / std_t
def pad_to_stride(x: Tensor, stride: int = STRIDE, value: float = 0.0) -> Tensor:
    """Bottom/right zero padding so both sides are multiples of the backbone stride."""
    h, w = x.shape[-2:]
    pad_h, pad_w = -h % stride, -w % stride
    if pad_h or pad_w:  # expect: FL203; FL301
        x = F.pad(x, (0, pad_w, 0, pad_h), value=value)
    return x
def resize_to_multiple(img: Tensor, limit_side_len: int = 96, limit_type: str = "max") -> Tuple[Tensor, Tensor]:
    """PaddleOCR's DetResizeForTest: scale so the long (or short) side meets the limit, round sides to 32."""
    h, w = img.shape[-2:]
    if limit_type == "max":
        side = max(h, w)  # expect: FL203
        ratio = float(limit_side_len) / side if side > limit_side_len else 1.0  # expect: FL203; FL301
    elif limit_type == "min":
        side = min(h, w)
        ratio = float(limit_side_len) / side if side < limit_side_len else 1.0
    else:
        raise ValueError(f"unknown limit_type {limit_type!r}")
    new_h = max(int(h * ratio / STRIDE + 0.5) * STRIDE, STRIDE)  # expect: FL203
    new_w = max(int(w * ratio / STRIDE + 0.5) * STRIDE, STRIDE)  # expect: FL203
    resized = F.interpolate(img, size=(new_h, new_w), mode="bilinear", align_corners=False)
    return resized, torch.tensor([new_h / h, new_w / w])  # expect: FL203

# ----------------------------------------------------------------------------------------- network
class ConvBNAct(nn.Sequential):
    def __init__(self, cin: int, cout: int, kernel: int = 3, stride: int = 1, act: bool = True):
        layers: List[nn.Module] = [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, bias=False), nn.BatchNorm2d(cout)]
        if act:
            layers.append(nn.ReLU(inplace=True))
        super().__init__(*layers)
class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int = 1):
        super().__init__()
        self.conv1 = ConvBNAct(cin, cout, 3, stride)
        self.conv2 = ConvBNAct(cout, cout, 3, 1, act=False)
        self.shortcut = nn.Identity() if stride == 1 and cin == cout else ConvBNAct(cin, cout, 1, stride, act=False)
    def forward(self, x: Tensor) -> Tensor:
        return F.relu(self.conv2(self.conv1(x)) + self.shortcut(x))
@register(BACKBONES, "tiny_resnet")
class TinyResNet(nn.Module):
    """Stride-4 stem, then one BasicBlock per stage: C2..C5 at strides 4, 8, 16, 32."""
    def __init__(self, channels: Sequence[int] = (4, 8, 12, 16), in_ch: int = 3):
        super().__init__()
        self.stem = nn.Sequential(ConvBNAct(in_ch, channels[0], 3, 2), nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], channels[0]
        for i, cout in enumerate(channels):
            blocks.append(BasicBlock(cin, cout, 1 if i == 0 else 2))
            cin = cout
        self.stages = nn.ModuleList(blocks)
        self.out_channels = tuple(channels)
    def forward(self, x: Tensor) -> Tuple[Tensor, ...]:
        feats = []
        x = self.stem(x)
        for stage in self.stages:
            x = stage(x)
            feats.append(x)
        return tuple(feats)
def upsample_add(x: Tensor, y: Tensor) -> Tensor:
    return F.interpolate(x, size=y.shape[-2:], mode="nearest") + y
class DBFPN(nn.Module):
    """DBNet neck: 1x1 laterals, top-down sum, 3x3 smoothing to inner/4 channels, concat at 1/4 scale."""
    def __init__(self, in_channels: Sequence[int], inner_channels: int = 8):
        super().__init__()
        self.lateral = nn.ModuleList(nn.Conv2d(c, inner_channels, 1, bias=False) for c in in_channels)
        self.smooth = nn.ModuleList(nn.Conv2d(inner_channels, inner_channels // 4, 3, padding=1, bias=False)
                                    for _ in in_channels)
        self.out_channels = inner_channels // 4 * len(in_channels)
    def forward(self, feats: Sequence[Tensor]) -> Tensor:
        laterals = [conv(f) for conv, f in zip(self.lateral, feats)]
        for i in range(len(laterals) - 1, 0, -1):
            laterals[i - 1] = upsample_add(laterals[i], laterals[i - 1])
        outs = [conv(p) for conv, p in zip(self.smooth, laterals)]
        size = outs[0].shape[-2:]
        outs = [outs[0]] + [F.interpolate(o, size=size, mode="nearest") for o in outs[1:]]
        return torch.cat(outs[::-1], dim=1)
def step_function(prob: Tensor, thresh: Tensor, k: float = DB_K) -> Tensor:
    """Differentiable binarization: B = 1 / (1 + exp(-k (P - T)))."""
    return torch.reciprocal(1 + torch.exp(-k * (prob - thresh)))
class _MapBranch(nn.Sequential):
    """conv-bn-relu, two stride-2 deconvs back to full resolution, sigmoid."""
    def __init__(self, cin: int):
        mid = max(cin // 4, 2)
        super().__init__(ConvBNAct(cin, mid, 3), nn.ConvTranspose2d(mid, mid, 2, 2), nn.BatchNorm2d(mid),
                         nn.ReLU(inplace=True), nn.ConvTranspose2d(mid, 1, 2, 2), nn.Sigmoid())
@register(HEADS, "db")
class DBHead(nn.Module):
    def __init__(self, in_channels: int, k: float = DB_K, adaptive: bool = True):
        super().__init__()
        self.binarize = _MapBranch(in_channels)
        self.thresh = _MapBranch(in_channels) if adaptive else None
        self.k = k
    def forward(self, x: Tensor) -> Tensor:
        shrink = self.binarize(x)
        if self.thresh is None or not self.training:
            return shrink
        thresh = self.thresh(x)
        return torch.cat([shrink, thresh, step_function(shrink, thresh, self.k)], dim=1)
@register(HEADS, "east")
class EASTHead(nn.Module):
    """Score map plus RBOX geometry (distances to top/right/bottom/left, angle) at 1/4 resolution."""
    def __init__(self, in_channels: int, geo_scale: float = 32.0):
        super().__init__()
        self.score = nn.Conv2d(in_channels, 1, 1)
        self.dist = nn.Conv2d(in_channels, 4, 1)
        self.angle = nn.Conv2d(in_channels, 1, 1)
        self.geo_scale = geo_scale
    def forward(self, x: Tensor) -> Tensor:
        score = torch.sigmoid(self.score(x))
        dist = torch.sigmoid(self.dist(x)) * self.geo_scale
        angle = (torch.sigmoid(self.angle(x)) - 0.5) * (math.pi / 2)
        return torch.cat([score, dist, angle], dim=1)
class TextDetector(nn.Module):
    def __init__(self, cfg: DetConfig):
        super().__init__()
        self.cfg = cfg
        self.backbone = BACKBONES[cfg.backbone](cfg.stage_channels)
        self.neck = DBFPN(self.backbone.out_channels, cfg.inner_channels)
        self.head = HEADS[cfg.head](self.neck.out_channels, **cfg.head_kwargs)
    @property
    def output_stride(self) -> int:
        return 4 if self.cfg.head == "east" else 1
    def forward(self, x: Tensor) -> Tensor:
        h, w = x.shape[-2:]
        if h % STRIDE or w % STRIDE:  # expect: FL203; FL301
            warnings.warn(f"input is not a multiple of {STRIDE}, padding it", stacklevel=2)  # expect: FL000 GB0007; FL204
            x = pad_to_stride(x)
        out = self.head(self.neck(self.backbone(x)))
        s = self.output_stride
        return out[..., : math.ceil(h / s), : math.ceil(w / s)]  # expect: FL203
def build_detector(name: str, **overrides) -> TextDetector:
    torch.manual_seed(0)
    return TextDetector(replace(PRESETS[name], **overrides)).eval()

# ----------------------------------------------------------------------------------------- geometry
def polygon_area(poly: Tensor) -> Tensor:
    """Shoelace formula over (..., N, 2) vertices; positive for counter-clockwise order."""
    x, y = poly.unbind(-1)
    return 0.5 * (x * y.roll(-1, -1) - x.roll(-1, -1) * y).sum(-1)
def polygon_perimeter(poly: Tensor) -> Tensor:
    return (poly - poly.roll(-1, -2)).norm(dim=-1).sum(-1)
def unclip_boxes(quads: Tensor, ratio: float = 1.5) -> Tensor:
    """DBNet's unclip without pyclipper: offset every vertex outward by D = A * r / L along its diagonal."""
    distance = polygon_area(quads).abs() * ratio / polygon_perimeter(quads).clamp_min(1e-6)
    center = quads.mean(dim=-2, keepdim=True)
    direction = torch.sign(quads - center)
    return quads + direction * distance[..., None, None]
def order_points_clockwise(pts: Tensor) -> Tensor:
    """(N, 4, 2) -> tl, tr, br, bl by angle about the centroid (y points down)."""
    center = pts.mean(dim=1, keepdim=True)
    angles = torch.atan2(pts[..., 1] - center[..., 1], pts[..., 0] - center[..., 0])
    order = angles.argsort(dim=1)
    return torch.gather(pts, 1, order[..., None].expand(-1, -1, 2))
def rect_to_quad(x0: Tensor, y0: Tensor, x1: Tensor, y1: Tensor) -> Tensor:
    return torch.stack([torch.stack([x0, y0]), torch.stack([x1, y0]), torch.stack([x1, y1]), torch.stack([x0, y1])])
def quad_to_rect(quads: Tensor) -> Tensor:
    return torch.cat([quads.amin(dim=-2), quads.amax(dim=-2)], dim=-1)
def box_iou(a: Tensor, b: Tensor) -> Tensor:
    lt = torch.maximum(a[:, None, :2], b[None, :, :2])
    rb = torch.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = (rb - lt).clamp_min(0).prod(-1)
    area = lambda r: (r[:, 2] - r[:, 0]) * (r[:, 3] - r[:, 1])
    return inter / (area(a)[:, None] + area(b)[None, :] - inter + 1e-6)
def scale_boxes_back(quads: Tensor, ratios: Tensor, src_hw: Optional[Tuple[int, int]] = None) -> Tensor:
    quads = quads / ratios.flip(-1)  # ratios are (h, w); points are (x, y)
    if src_hw is not None:
        quads[..., 0].clamp_(0, src_hw[1] - 1)
        quads[..., 1].clamp_(0, src_hw[0] - 1)
    return quads
def restore_rbox(origins: Tensor, geometry: Tensor) -> Tensor:
    """EAST: pixel origins (N, 2) and (d_top, d_right, d_bottom, d_left, theta) -> rotated quads (N, 4, 2)."""
    top, right, bottom, left, theta = geometry.unbind(-1)
    local = torch.stack([torch.stack([-left, -top], -1), torch.stack([right, -top], -1),
                         torch.stack([right, bottom], -1), torch.stack([-left, bottom], -1)], dim=1)
    cos, sin = theta.cos()[:, None], theta.sin()[:, None]
    x = local[..., 0] * cos - local[..., 1] * sin
    y = local[..., 0] * sin + local[..., 1] * cos
    return torch.stack([x, y], dim=-1) + origins[:, None, :]

# ----------------------------------------------------------------------------------------- post-processing
def label_components(bitmap: Tensor, max_iter: int = 64) -> Tensor:
    """Connected components by iterated 3x3 max-pooling of pixel ids (no cv2 on the serving box)."""
    h, w = bitmap.shape[-2:]
    ids = torch.arange(1, h * w + 1, dtype=bitmap.dtype).view(1, 1, h, w)
    labels = ids * bitmap
    for _ in range(max_iter):
        grown = F.max_pool2d(labels, 3, 1, 1) * bitmap
        if (grown == labels).all():  # expect: FL000 GB0170; FL201
            break
        labels = grown
    return labels
def box_score_fast(prob: Tensor, quad: Tensor) -> Tensor:
    """Mean probability inside the quad's bounding rectangle (PaddleOCR score_mode='fast')."""
    h, w = prob.shape[-2:]
    xmin = int(quad[:, 0].min().floor().clamp(0, w - 1))  # expect: FL000 GB0124; FL202
    xmax = int(quad[:, 0].max().ceil().clamp(0, w - 1))  # expect: FL000 GB0124; FL202
    ymin = int(quad[:, 1].min().floor().clamp(0, h - 1))  # expect: FL000 GB0124; FL202
    ymax = int(quad[:, 1].max().ceil().clamp(0, h - 1))  # expect: FL000 GB0124; FL202
    return prob[ymin:ymax + 1, xmin:xmax + 1].mean()
def box_score_mask(prob: Tensor, quad: Tensor) -> Tensor:
    """score_mode='slow' stand-in: mean over pixels whose centre falls inside the axis-aligned hull."""
    h, w = prob.shape[-2:]
    ys = torch.arange(h, dtype=prob.dtype)[:, None]
    xs = torch.arange(w, dtype=prob.dtype)[None, :]
    x0, y0, x1, y1 = quad_to_rect(quad).unbind(-1)
    inside = ((xs >= x0) & (xs <= x1) & (ys >= y0) & (ys <= y1)).to(prob.dtype)
    return (prob * inside).sum() / inside.sum().clamp_min(1.0)
SCORE_FNS: Dict[str, Callable[[Tensor, Tensor], Tensor]] = {"fast": box_score_fast, "slow": box_score_mask}
class DBPostProcess(nn.Module):
    """Probability map -> fixed-size (B, K, 4, 2) quads, scores and counts (padded for static export shapes)."""
    def __init__(self, thresh: float = 0.3, box_thresh: float = 0.5, max_candidates: int = MAX_CANDIDATES,
                 unclip_ratio: float = 1.5, score_mode: str = "fast", use_dilation: bool = False, verbose: bool = False):
        super().__init__()
        self.thresh, self.box_thresh, self.max_candidates = thresh, box_thresh, max_candidates
        self.unclip = partial(unclip_boxes, ratio=unclip_ratio)
        self.score_fn = SCORE_FNS[score_mode]
        self.use_dilation, self.verbose = use_dilation, verbose
    def score_component(self, prob: Tensor, labels: Tensor, comp: float) -> Optional[Tuple[Tensor, Tensor]]:
        ys, xs = torch.nonzero(labels == comp, as_tuple=True)  # expect: FL000 GB0036
        if xs.numel() < MIN_AREA:  # expect: FL203
            return None
        quad = rect_to_quad(xs.min(), ys.min(), xs.max(), ys.max()).to(prob.dtype)
        score = self.score_fn(prob, quad)
        if score < self.box_thresh:  # expect: FL000 GB0170; FL201
            return None
        return self.unclip(quad), score
    def boxes_from_bitmap(self, prob: Tensor, bitmap: Tensor) -> Tuple[Tensor, Tensor, int]:
        labels = label_components(bitmap[None, None])[0, 0]
        ids = labels.unique()  # expect: FL000 GB0036
        ids = ids[ids > 0][: self.max_candidates]  # expect: FL000 GB0036
        quads, scores = prob.new_zeros(self.max_candidates, 4, 2), prob.new_zeros(self.max_candidates)
        n = 0
        for comp in ids.tolist():  # expect: FL000 GB0109; FL202
            candidate = self.score_component(prob, labels, comp)
            if candidate is None:
                continue
            quads[n], scores[n] = candidate
            n += 1
        return quads, scores, n
    def forward(self, pred: Tensor, ratios: Optional[Tensor] = None) -> Tuple[Tensor, Tensor, Tensor]:
        prob = pred[:, 0]
        bitmap = (prob > self.thresh).to(prob.dtype)
        if self.use_dilation:
            bitmap = F.max_pool2d(bitmap[:, None], 3, 1, 1)[:, 0]
        all_quads, all_scores, counts = [], [], []
        for b in range(prob.shape[0]):
            quads, scores, n = self.boxes_from_bitmap(prob[b], bitmap[b])
            if self.verbose:
                print(f"[db-post] image {b}: kept {n} boxes")  # expect: FL204
            if ratios is not None:
                quads = scale_boxes_back(quads, ratios[b])
            all_quads.append(quads)
            all_scores.append(scores)
            counts.append(n)
        return torch.stack(all_quads), torch.stack(all_scores), torch.tensor(counts)
def decode_east(score_map: Tensor, geo_map: Tensor, score_thresh: float = 0.8, stride: int = 4):
    """(1, H, W) score + (5, H, W) geometry -> a quad and score for every pixel over the threshold."""
    ys, xs = torch.nonzero(score_map[0] > score_thresh, as_tuple=True)  # expect: FL000 GB0036
    if ys.numel() == 0:  # expect: FL203
        return score_map.new_zeros(0, 4, 2), score_map.new_zeros(0)
    origins = torch.stack([xs, ys], dim=-1).to(score_map.dtype) * stride
    quads = restore_rbox(origins, geo_map[:, ys, xs].t())
    return quads, score_map[0, ys, xs]
def nms_quads(quads: Tensor, scores: Tensor, iou_thresh: float = 0.2) -> List[int]:
    """Greedy NMS on the quads' bounding rectangles (lanms' standard_nms, numpy ordering as in the repo)."""
    rects = quad_to_rect(quads)
    order = np.argsort(scores.detach().numpy())[::-1].copy()
    keep: List[int] = []
    while order.size > 0:
        i = int(order[0])  # expect: FL000 GB0033
        keep.append(i)
        iou = box_iou(rects[i:i + 1], rects[torch.from_numpy(order[1:])])[0]
        order = order[1:][(iou <= iou_thresh).numpy()]
    return keep

# ----------------------------------------------------------------------------------------- deployment wrappers
def make_prob_hooks(smooth: bool = True, floor: float = 0.0) -> List[Callable[[Tensor], Tensor]]:
    hooks: List[Callable[[Tensor], Tensor]] = []
    if smooth:
        hooks.append(partial(F.avg_pool2d, kernel_size=3, stride=1, padding=1))
    if floor > 0:
        hooks.append(lambda p: torch.where(p < floor, torch.zeros_like(p), p))
    return hooks
class DBExportWrapper(nn.Module):
    """Serving graph: uint8/float image of any size -> probability map and uint8 text mask, cropped back."""
    def __init__(self, model: TextDetector, thresh: float = 0.3, hooks: Optional[List[Callable]] = None,
                 log_shapes: bool = LOG_SHAPES):
        super().__init__()
        self.model, self.thresh = model, thresh
        self.hooks = list(hooks) if hooks is not None else []
        self.log_shapes = log_shapes
    def forward(self, img: Tensor) -> Tuple[Tensor, Tensor]:
        h, w = img.shape[-2:]
        x = pad_to_stride(normalize(img))
        if self.log_shapes:
            logger.info("db export: %dx%d input padded to %dx%d", h, w, x.shape[-2], x.shape[-1])  # expect: FL000 GB0291; FL204
        prob = self.model(x)[:, :1, :h, :w]
        for hook in self.hooks:
            prob = hook(prob)
        return prob, (prob > self.thresh).to(torch.uint8)
class EASTExportWrapper(nn.Module):
    """Static-shape EAST decode for export: the top-k score pixels, their quads, zeroed below threshold."""
    def __init__(self, model: TextDetector, top_k: int = 16, score_thresh: float = 0.55):
        super().__init__()
        self.model, self.top_k, self.score_thresh = model, top_k, score_thresh
    def forward(self, img: Tensor) -> Tuple[Tensor, Tensor]:
        out = self.model(normalize(img))
        score, geo = out[:, 0], out[:, 1:]
        b, w = score.shape[0], score.shape[-1]
        flat = score.flatten(1)
        k = min(self.top_k, flat.shape[1])  # expect: FL203
        top, idx = flat.topk(k, dim=1)
        origins = torch.stack([idx % w, idx // w], dim=-1).to(out.dtype) * self.model.output_stride
        geo_k = torch.gather(geo.flatten(2), 2, idx[:, None].expand(-1, geo.shape[1], -1)).transpose(1, 2)
        quads = restore_rbox(origins.reshape(-1, 2), geo_k.reshape(-1, 5)).view(b, k, 4, 2)
        keep = (top > self.score_thresh)[..., None, None]
        return torch.where(keep, quads, torch.zeros_like(quads)), top
class TemporalSmoother(nn.Module):
    """Camera-feed mode: an EMA of the probability map across frames, reset-free after the first frame."""
    def __init__(self, detector: TextDetector, momentum: float = 0.6, map_hw: Tuple[int, int] = (32, 64)):
        super().__init__()
        self.detector, self.momentum = detector, momentum
        self.register_buffer("ema", torch.zeros(1, 1, *map_hw))
        self.num_frames = 0
    def forward(self, frames: Tensor) -> Tensor:
        prob = self.detector(frames)[:, :1].detach()
        m = 0.0 if self.num_frames == 0 else self.momentum
        self.ema.mul_(m).add_(prob.mean(0, keepdim=True), alpha=1.0 - m)
        self.num_frames += 1  # expect: FL302
        return self.ema.clone()

# ----------------------------------------------------------------------------------------- training losses
@torch.compile
def balanced_bce(pred: Tensor, gt: Tensor, mask: Tensor, negative_ratio: float = 3.0, eps: float = 1e-6) -> Tensor:
    """DBNet's BalanceCrossEntropyLoss: all positives plus the hardest 3x as many negatives."""
    positive = (gt * mask).byte()
    negative = ((1 - gt) * mask).byte()
    positive_count = int(positive.float().sum())  # expect: FL000 GB0124
    negative_count = min(int(negative.float().sum()), int(positive_count * negative_ratio))  # expect: FL000 GB0124
    loss = F.binary_cross_entropy(pred, gt, reduction="none")
    positive_loss = loss * positive.float()
    negative_loss, _ = (loss * negative.float()).view(-1).topk(negative_count)
    return (positive_loss.sum() + negative_loss.sum()) / (positive_count + negative_count + eps)
@torch.compile
def dice_loss(pred: Tensor, gt: Tensor, mask: Tensor, weights: Optional[Tensor] = None, eps: float = 1e-6):
    if weights is not None:
        mask = weights * mask
    inter = (pred * gt * mask).sum()
    union = (pred * mask).sum() + (gt * mask).sum() + eps
    return 1 - 2.0 * inter / union
def mask_l1_loss(pred: Tensor, gt: Tensor, mask: Tensor) -> Tensor:
    return (torch.abs(pred - gt) * mask).sum() / (mask.sum() + 1e-6)
class DBLoss(nn.Module):
    def __init__(self, alpha: float = 1.0, beta: float = 10.0, ohem_ratio: float = 3.0):
        super().__init__()
        self.alpha, self.beta, self.ohem_ratio = alpha, beta, ohem_ratio
    def forward(self, pred: Tensor, batch: Dict[str, Tensor]) -> Dict[str, Tensor]:
        shrink_map, shrink_mask = batch["shrink_map"], batch["shrink_mask"]
        losses = {"shrink": balanced_bce(pred[:, 0], shrink_map, shrink_mask, self.ohem_ratio)}
        if pred.shape[1] > 1:
            losses["thresh"] = mask_l1_loss(pred[:, 1], batch["thresh_map"], batch["thresh_mask"])
            losses["binary"] = dice_loss(pred[:, 2], shrink_map, shrink_mask)
        losses["total"] = self.alpha * losses["shrink"] + self.beta * losses.get("thresh", 0.0) \
            + losses.get("binary", 0.0)
        return losses

# ----------------------------------------------------------------------------------------- compiled entry points
@torch.compile
def prepare_batch(imgs: Tensor, cfg: Dict[str, object]) -> Tuple[Tensor, Tensor]:
    resized, ratios = resize_to_multiple(imgs, cfg["limit_side_len"], cfg.get("limit_type", "max"))
    return normalize(resized), ratios
@torch.compile
def detect_frames(model: TextDetector, frames: Tensor, thresh: float = 0.3) -> Tensor:
    EXPORT_STATS["frames"] += frames.shape[0]  # expect: FL302
    prob = model(normalize(frames))[:, 0]
    if prob.max() < thresh:  # blank frame: skip the mask statistics  # expect: FL000 GB0170
        return prob.new_zeros(prob.shape[0])
    return (prob > thresh).float().mean(dim=(1, 2))
@torch.compile
def east_postprocess(out: Tensor, score_thresh: float = 0.8, nms_thresh: float = 0.2) -> List[Tensor]:
    results = []
    for score, geo in zip(out[:, :1], out[:, 1:]):
        quads, scores = decode_east(score, geo, score_thresh)
        keep = nms_quads(quads, scores, nms_thresh)
        results.append(torch.cat([quads[keep].flatten(1), scores[keep, None]], dim=1))
    return results
@torch.compile
def refine_quads(quads: Tensor, ratios: Tensor, src_hw: Optional[Tuple[int, int]] = None,
                 unclip_ratio: float = 1.5) -> Tuple[Tensor, Tensor]:
    quads = order_points_clockwise(unclip_boxes(quads, unclip_ratio))
    areas = polygon_area(quads).abs()
    keep = areas >= MIN_AREA * unclip_ratio ** 2
    return scale_boxes_back(quads[keep], ratios, src_hw), areas[keep]  # expect: FL000 GB0036
fast_unclip = torch.compile(unclip_boxes)

# ----------------------------------------------------------------------------------------- export scripts
def export_torchscript(out_dir: str, h: int = 64, w: int = 96) -> None:
    img, prob, quads = torch.rand(1, 3, h, w), torch.rand(1, 1, h, w), torch.rand(3, 4, 2) * 16
    torch.jit.trace(TextDetector(PRESETS["db_tiny"]).eval(), (img,)).save(f"{out_dir}/db_tiny.pt")
    u8, hooks = (img * 255).to(torch.uint8), make_prob_hooks()
    torch.jit.trace(DBExportWrapper(build_detector("db_tiny_fixed"), hooks=hooks), (u8,)).save(f"{out_dir}/db_serving.pt")
    torch.jit.trace(DBPostProcess(verbose=True), (prob,)).save(f"{out_dir}/db_post.pt")
    torch.jit.trace(DBHead(8).eval(), (torch.rand(1, 8, h // 4, w // 4),)).save(f"{out_dir}/db_head.pt")
    torch.jit.trace(resize_to_multiple, (img,)).save(f"{out_dir}/resize.pt")
    torch.jit.trace(label_components, ((prob > 0.5).float(),)).save(f"{out_dir}/cc.pt")
    torch.jit.trace(step_function, (prob, torch.rand(1, 1, h, w))).save(f"{out_dir}/db_step.pt")
    torch.jit.trace(box_score_fast, (prob[0, 0], quads[0])).save(f"{out_dir}/box_score.pt")
    torch.jit.trace(order_points_clockwise, (quads,)).save(f"{out_dir}/order_points.pt")
    torch.jit.trace(unclip_boxes, (quads,)).save(f"{out_dir}/unclip.pt")
    torch.jit.trace(decode_east, (prob[0, :, ::4, ::4], torch.rand(5, h // 4, w // 4))).save(f"{out_dir}/east_dec.pt")
    torch.jit.trace(normalize, (u8,)).save(f"{out_dir}/normalize.pt")
def export_programs(out_dir: str, h: int = 64, w: int = 96) -> Dict[str, object]:
    img = torch.rand(1, 3, h, w)
    programs = {
        "east": torch.export.export(TextDetector(PRESETS["east_tiny"]).eval(), (img,)),
        "east_serving": torch.export.export(EASTExportWrapper(build_detector("east_tiny")).eval(), (img,)),
        "pad": torch.export.export(pad_to_stride, (img[..., :50, :70],)),
        "area": torch.export.export(polygon_area, (torch.rand(3, 4, 2),)),
    }
    for name, program in programs.items():
        torch.export.save(program, f"{out_dir}/{name}.pt2")
    return programs

# ----------------------------------------------------------------------------------------- cases
def _rand(*shape: int, k: int = 0) -> Tensor:
    return torch.rand(*shape, generator=torch.Generator().manual_seed(k))
def _u8(*shape: int, k: int = 0) -> Tensor:
    return torch.randint(0, 256, shape, dtype=torch.uint8, generator=torch.Generator().manual_seed(k))
TEXT_RECTS = ((3, 4, 14, 9), (20, 14, 38, 21), (44, 3, 47, 5))
def _text_map(b: int, h: int, w: int, rects=TEXT_RECTS, k: int = 0) -> Tensor:
    """Synthetic probability map: low noise plus confident rectangles where the 'words' are."""
    prob = _rand(b, 1, h, w, k=k) * 0.2
    for x0, y0, x1, y1 in rects:
        prob[..., y0:y1, x0:x1] = 0.6 + 0.35 * _rand(b, 1, y1 - y0, x1 - x0, k=k + x0)
    return prob
def _db_batch(b: int = 2, h: int = 32, w: int = 64) -> Dict[str, Tensor]:
    shrink = (_text_map(b, h, w)[:, 0] > 0.5).float()
    return {"shrink_map": shrink, "shrink_mask": torch.ones(b, h, w), "thresh_map": _rand(b, h, w, k=3) * 0.4 + 0.3,
            "thresh_mask": (_rand(b, h, w, k=4) > 0.3).float()}
def _east_out(b: int = 2, h: int = 8, w: int = 16) -> Tensor:
    score = _text_map(b, h, w, rects=((2, 2, 5, 4), (9, 5, 13, 7)), k=5) * 1.2
    geo = torch.cat([_rand(b, 4, h, w, k=6) * 6 + 1, (_rand(b, 1, h, w, k=7) - 0.5) * 0.3], dim=1)
    return torch.cat([score, geo], dim=1)
def _quads(n: int = 5, k: int = 8) -> Tensor:
    xy = _rand(n, 1, 2, k=k) * 40
    wh = _rand(n, 1, 2, k=k + 1) * 10 + 2
    return rect_to_quad(*(xy[:, 0, 0], xy[:, 0, 1], (xy + wh)[:, 0, 0], (xy + wh)[:, 0, 1])).permute(2, 0, 1)
_db = partial(build_detector, "db_tiny")
_east = partial(build_detector, "east_tiny")

CASES = {
    "TinyResNet": lambda: (TinyResNet().eval(), (_rand(2, 3, 32, 64),)),
    "DBFPN": lambda: (DBFPN((4, 8, 12, 16)), ([_rand(2, c, 8 // 2 ** i, 16 // 2 ** i, k=i)
                                               for i, c in enumerate((4, 8, 12, 16))],)),
    "DBHead_train": lambda: (DBHead(8).train(), (_rand(2, 8, 6, 10),)),
    "TextDetector_db": lambda: (_db(), (_rand(2, 3, 32, 64),)),
    "TextDetector_east": lambda: (_east(), (_rand(2, 3, 40, 72),), (_rand(2, 3, 64, 96),)),
    "DBExportWrapper": lambda: (DBExportWrapper(_db(), hooks=make_prob_hooks(floor=0.1)),
                                (_rand(2, 3, 32, 64),), (_rand(2, 3, 40, 72),)),
    "EASTExportWrapper": lambda: (EASTExportWrapper(_east(), top_k=6), (_u8(2, 3, 32, 64),)),
    "DBPostProcess": lambda: (DBPostProcess(score_mode="fast"), (_text_map(2, 32, 64),)),
    "DBPostProcess_slow": lambda: (DBPostProcess(score_mode="slow", use_dilation=True),
                                   (_text_map(2, 32, 64, k=2), torch.tensor([[0.5, 0.4], [0.5, 0.4]]))),
    "TemporalSmoother": lambda: (TemporalSmoother(_db()), (_rand(2, 3, 32, 64),)),
    "DBLoss": lambda: (DBLoss(), (DBHead(8).train()(_rand(2, 8, 8, 16)), _db_batch())),
    "balanced_bce": lambda: (balanced_bce, (_text_map(2, 32, 64)[:, 0], _db_batch()["shrink_map"],
                                            torch.ones(2, 32, 64))),
    "dice_loss": lambda: (dice_loss, (_rand(2, 32, 64), _db_batch()["shrink_map"], torch.ones(2, 32, 64))),
    "prepare_batch": lambda: (prepare_batch, (_u8(2, 3, 40, 72), {"limit_side_len": 96}),
                              (_u8(2, 3, 48, 120), {"limit_side_len": 96})),
    "detect_frames": lambda: (detect_frames, (_db(), _rand(2, 3, 32, 64))),
    "east_postprocess": lambda: (east_postprocess, (_east_out(),)),
    "refine_quads": lambda: (refine_quads, (_quads(), torch.tensor([0.5, 0.75]), (48, 80))),
    "fast_unclip": lambda: (fast_unclip, (_quads(6, k=3),)),
}

TRACED = {
    "TextDetector_db": lambda: (_db(), (_rand(1, 3, 32, 64),)),
    "TextDetector_east": lambda: (_east(), (_rand(1, 3, 40, 72),)),
    "DBExportWrapper": lambda: (DBExportWrapper(build_detector("db_tiny_fixed"), hooks=make_prob_hooks()),
                                (_u8(1, 3, 40, 72),)),
    "EASTExportWrapper": lambda: (EASTExportWrapper(_east()), (_rand(1, 3, 32, 64),)),
    "DBPostProcess": lambda: (DBPostProcess(verbose=True), (_text_map(1, 32, 64),)),
    "DBHead": lambda: (DBHead(8).eval(), (_rand(1, 8, 8, 16),)),
    "resize_to_multiple": lambda: (resize_to_multiple, (_rand(1, 3, 48, 120),)),
    "pad_to_stride": lambda: (pad_to_stride, (_rand(1, 3, 40, 72),)),
    "normalize": lambda: (normalize, (_u8(1, 3, 32, 64),)),
    "step_function": lambda: (step_function, (_rand(1, 1, 32, 64), _rand(1, 1, 32, 64, k=1))),
    "polygon_area": lambda: (polygon_area, (_quads(),)),
    "unclip_boxes": lambda: (unclip_boxes, (_quads(),)),
    "order_points_clockwise": lambda: (order_points_clockwise, (_quads(k=4),)),
    "label_components": lambda: (label_components, ((_text_map(1, 32, 64) > 0.3).float(),)),
    "box_score_fast": lambda: (box_score_fast, (_text_map(1, 32, 64)[0, 0], _quads(1)[0])),
    "decode_east": lambda: (decode_east, (_east_out(1)[0, :1], _east_out(1)[0, 1:])),
}
