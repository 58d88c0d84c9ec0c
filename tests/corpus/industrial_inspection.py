"""Industrial visual inspection on production-line images: PatchCore (memory bank, nearest-
neighbour patch distances, greedy coreset) and PaDiM anomaly scorers, tiling / stitching of large
frames, score post-processing, thresholding and blob statistics, threshold calibration on good
parts, a defect classification head and per-camera configuration."""
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

try:
    from scipy import ndimage as ndi
except ImportError:  # pragma: no cover - scipy is optional on the line PCs
    ndi = None

log = logging.getLogger("inspection")
log.addHandler(logging.NullHandler())

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
DEFAULT_TILE = 8
MIN_BLOB_AREA = 3
LARGE_IMAGE_PIXELS = 24 * 24
SEVERITY_EDGES = np.array([0.3, 0.6, 0.85], dtype=np.float32)
SEVERITY_NAMES = ("cosmetic", "minor", "major", "critical")
DEBUG_DUMP = False
EPS = 1e-6

@dataclass
class CameraConfig:
    name: str
    tile: int = DEFAULT_TILE
    overlap: int = 2
    threshold: float = 0.5
    gain: float = 1.0
    flat_field: Optional[Tuple[float, float]] = None
    min_area: int = MIN_BLOB_AREA
    smooth_sigma: float = 1.0

    @property
    def pixel_threshold(self) -> float:
        return self.threshold * self.gain

CAMERAS: Dict[str, CameraConfig] = {
    "top": CameraConfig("top", tile=8, overlap=2, threshold=0.45),
    "side_left": CameraConfig("side_left", tile=6, overlap=1, threshold=0.6, gain=1.2,
                              flat_field=(0.9, 1.1)),
    "side_right": CameraConfig("side_right", tile=6, overlap=1, threshold=0.55, gain=0.8,
                               flat_field=(0.85, 1.05)),
    "line_scan": CameraConfig("line_scan", tile=10, overlap=0, threshold=0.4, smooth_sigma=0.0),
}

def camera_config(name: str) -> CameraConfig:
    cfg = CAMERAS.get(name)
    if cfg is None:
        log.warning("unknown camera %s, falling back to 'top'", name)
        cfg = CAMERAS["top"]
    return cfg

def normalize_image(img: torch.Tensor, mean=IMAGENET_MEAN, std=IMAGENET_STD) -> torch.Tensor:
    mean_t = torch.tensor(mean, dtype=img.dtype, device=img.device).view(1, -1, 1, 1)
    std_t = torch.tensor(std, dtype=img.dtype, device=img.device).view(1, -1, 1, 1)
    return (img - mean_t) / std_t

def gaussian_kernel1d(sigma: float, radius: Optional[int] = None) -> torch.Tensor:
    if radius is None:
        radius = max(1, int(math.ceil(3 * sigma)))
    weights = [math.exp(-0.5 * (i / sigma) ** 2) for i in range(-radius, radius + 1)]
    total = sum(weights)
    return torch.tensor([w / total for w in weights])

def gaussian_blur(score_map: torch.Tensor, sigma: float) -> torch.Tensor:
    """Separable blur of B,H,W (or B,1,H,W) anomaly maps, as in the PatchCore reference code."""
    if sigma <= 0:
        return score_map
    kernel = gaussian_kernel1d(sigma).to(score_map)
    r = kernel.numel() // 2
    squeeze = score_map.dim() == 3
    x = score_map.unsqueeze(1) if squeeze else score_map
    x = F.pad(x, (r, r, r, r), mode="reflect")
    x = F.conv2d(x, kernel.view(1, 1, 1, -1))
    x = F.conv2d(x, kernel.view(1, 1, -1, 1))
    return x.squeeze(1) if squeeze else x

def conv_bn_act(cin: int, cout: int, stride: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

class InspectionBackbone(nn.Module):
    """Stand-in for wide_resnet50 layer2/layer3: returns a dict of intermediate feature maps."""

    def __init__(self, in_ch: int = 3, widths: Sequence[int] = (6, 10, 14),
                 return_layers: Tuple[str, ...] = ("layer1", "layer2")):
        super().__init__()
        self.stem = conv_bn_act(in_ch, widths[0])
        self.layer1 = conv_bn_act(widths[0], widths[1], stride=2)
        self.layer2 = conv_bn_act(widths[1], widths[2], stride=2)
        self.return_layers = return_layers
        self.out_channels = {"layer1": widths[1], "layer2": widths[2]}
        self.eval()

    def forward(self, x: torch.Tensor) -> Dict[str, torch.Tensor]:
        feats = {}
        x = self.stem(x)
        for name in ("layer1", "layer2"):
            x = getattr(self, name)(x)
            if name in self.return_layers:
                feats[name] = x
        return feats

def aggregate_patches(feats: Dict[str, torch.Tensor], layers: Sequence[str],
                      pool: int = 3) -> torch.Tensor:
    """Local neighbourhood aggregation + upsampling to the finest layer, then concat."""
    ref = feats[layers[0]]
    h, w = ref.shape[-2:]
    out = []
    for name in layers:
        f = F.avg_pool2d(feats[name], pool, stride=1, padding=pool // 2) if pool > 1 else feats[name]
        if f.shape[-2:] != (h, w):
            f = F.interpolate(f, size=(h, w), mode="bilinear", align_corners=False)
        out.append(f)
    return torch.cat(out, dim=1)

def flatten_patches(emb: torch.Tensor) -> torch.Tensor:
    b, c, h, w = emb.shape
    return emb.permute(0, 2, 3, 1).reshape(b * h * w, c)

class ScoreMapMixin:
    """Shared helpers of the scorers (upsampling patch scores to image resolution)."""
    upsample_mode = "bilinear"

    def to_score_map(self, patch_scores: torch.Tensor, size: Tuple[int, int]) -> torch.Tensor:
        m = F.interpolate(patch_scores.unsqueeze(1), size=size, mode=self.upsample_mode,
                          align_corners=False)
        return m.squeeze(1)

class PatchCoreScorer(ScoreMapMixin, nn.Module):
    def __init__(self, backbone: InspectionBackbone, memory_bank: torch.Tensor, k: int = 3,
                 layers: Tuple[str, ...] = ("layer1", "layer2")):
        super().__init__()
        self.backbone = backbone
        self.register_buffer("memory_bank", memory_bank)
        self.k = k
        self.layers = layers

    @property
    def bank_size(self) -> int:
        return self.memory_bank.shape[0]

    def nearest(self, patches: torch.Tensor):
        dist = torch.cdist(patches, self.memory_bank)
        return dist.topk(min(self.k, self.bank_size), dim=1, largest=False)

    def forward(self, images: torch.Tensor):
        b, _, h, w = images.shape
        emb = aggregate_patches(self.backbone(images), self.layers)
        fh, fw = emb.shape[-2:]
        dists, _ = self.nearest(flatten_patches(emb))
        patch_scores = dists[:, 0].view(b, fh, fw)
        knn = dists.view(b, fh * fw, -1)
        image_scores = []
        for i in range(b):  # re-weighting of the most anomalous patch (PatchCore eq. 7)
            s = patch_scores[i].flatten()
            j = s.argmax()
            weight = 1 - torch.softmax(knn[i, j], dim=0)[0]  # expect: FL000 GB0033
            image_scores.append(weight * s[j])
        return self.to_score_map(patch_scores, (h, w)), torch.stack(image_scores)

def fit_memory_bank(backbone: InspectionBackbone, good_images: torch.Tensor,
                    layers=("layer1", "layer2"), every: int = 2) -> torch.Tensor:
    with torch.no_grad():
        emb = aggregate_patches(backbone(good_images), layers)
    return flatten_patches(emb)[::every].contiguous()

@torch.compile
def greedy_coreset(features: torch.Tensor, ratio: float = 0.25, proj_dim: int = 4,
                   seed: int = 0) -> torch.Tensor:
    """k-center greedy subsampling on a random projection (anomalib's KCenterGreedy)."""
    n, d = features.shape
    n_select = max(1, int(n * ratio))
    gen = torch.Generator().manual_seed(seed)  # expect: FL000 GB0363; FL000 GB7650
    proj = torch.randn(d, proj_dim, generator=gen) / math.sqrt(proj_dim)  # expect: FL000 GB0055
    reduced = features @ proj
    selected = [0]
    min_d = torch.cdist(reduced, reduced[:1]).squeeze(1)
    for _ in range(n_select - 1):
        idx = int(torch.argmax(min_d))  # expect: FL000 GB0124
        selected.append(idx)
        min_d = torch.minimum(min_d, torch.cdist(reduced, reduced[idx:idx + 1]).squeeze(1))
    return features[selected]

def safe_inverse(cov: torch.Tensor, reg: float = 0.01) -> torch.Tensor:
    eye = torch.eye(cov.shape[-1], dtype=cov.dtype, device=cov.device)
    try:
        return torch.linalg.inv(cov + reg * eye)
    except RuntimeError:
        log.warning("covariance not invertible, using pinv")
        return torch.linalg.pinv(cov + reg * eye)

class PaDiMScorer(ScoreMapMixin, nn.Module):
    def __init__(self, backbone: InspectionBackbone, n_features: int, feat_hw: Tuple[int, int],
                 seed: int = 0):
        super().__init__()
        self.backbone = backbone
        total = sum(backbone.out_channels.values())
        g = torch.Generator().manual_seed(seed)
        self.register_buffer("channel_idx", torch.randperm(total, generator=g)[:n_features])
        n_patch = feat_hw[0] * feat_hw[1]
        self.register_buffer("mean", torch.zeros(n_features, n_patch))
        self.register_buffer("cov_inv", torch.eye(n_features).repeat(n_patch, 1, 1))
        self.fitted = False

    def embed(self, images: torch.Tensor) -> torch.Tensor:
        emb = aggregate_patches(self.backbone(images), ("layer1", "layer2"), pool=1)
        return torch.index_select(emb, 1, self.channel_idx)

    @torch.no_grad()
    def fit(self, good_images: torch.Tensor) -> "PaDiMScorer":
        emb = self.embed(good_images)
        b, c, h, w = emb.shape
        x = emb.view(b, c, h * w).numpy()
        self.mean.copy_(torch.from_numpy(x.mean(axis=0)))
        covs = np.stack([np.cov(x[:, :, p], rowvar=False) for p in range(h * w)])
        self.cov_inv.copy_(safe_inverse(torch.from_numpy(covs).float()))
        self.fitted = True
        return self

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if not self.fitted:
            warnings.warn("PaDiM scorer used before fit(); scores are uncalibrated")
        emb = self.embed(images)
        b, c, h, w = emb.shape
        delta = (emb.view(b, c, h * w) - self.mean.unsqueeze(0)).permute(2, 0, 1)
        m = torch.einsum("pbc,pcd,pbd->pb", delta, self.cov_inv, delta)
        dist = m.clamp_min(0).sqrt().transpose(0, 1).reshape(b, h, w)
        return self.to_score_map(dist, tuple(images.shape[-2:]))

@torch.compile
def tile_image(img: torch.Tensor, tile: int, overlap: int):
    """Split a B,C,H,W frame into overlapping tiles; the last row/col is padded by replication."""
    stride = tile - overlap
    _, _, h, w = img.shape
    n_y = max(1, math.ceil((h - overlap) / stride))
    n_x = max(1, math.ceil((w - overlap) / stride))
    pad_h = (n_y - 1) * stride + tile - h
    pad_w = (n_x - 1) * stride + tile - w
    if pad_h > 0 or pad_w > 0:
        img = F.pad(img, (0, pad_w, 0, pad_h), mode="replicate")
    tiles, origins = [], []
    for iy in range(n_y):  # expect: FL301
        for ix in range(n_x):
            y0, x0 = iy * stride, ix * stride
            tiles.append(img[..., y0:y0 + tile, x0:x0 + tile])
            origins.append((y0, x0))
    return torch.stack(tiles, dim=1), origins

def stitch_tiles(tiles: torch.Tensor, origins: List[Tuple[int, int]], out_hw: Tuple[int, int],
                 tile: int) -> torch.Tensor:
    b = tiles.shape[0]
    ph = max(y for y, _ in origins) + tile
    pw = max(x for _, x in origins) + tile
    acc = tiles.new_zeros(b, ph, pw)
    cnt = tiles.new_zeros(1, ph, pw)
    for k, (y0, x0) in enumerate(origins):
        acc[:, y0:y0 + tile, x0:x0 + tile] += tiles[:, k]
        cnt[:, y0:y0 + tile, x0:x0 + tile] += 1
    return (acc / cnt.clamp_min(1))[:, :out_hw[0], :out_hw[1]]

class ScoreAggregator(nn.Module):
    """Image-level score from a pixel map; the mode comes from the product recipe."""

    def __init__(self, mode: str = "topk_mean", topk_ratio: float = 0.05, min_pixels: int = 200):
        super().__init__()
        self.mode = mode
        self.topk_ratio = topk_ratio
        self.min_pixels = min_pixels

    def _agg_max(self, flat: torch.Tensor) -> torch.Tensor:
        return flat.amax(dim=1)

    def _agg_topk_mean(self, flat: torch.Tensor) -> torch.Tensor:
        k = max(2, int(flat.shape[1] * self.topk_ratio))
        return flat.topk(k, dim=1).values.mean(dim=1)

    def forward(self, score_map: torch.Tensor) -> torch.Tensor:
        flat = score_map.flatten(1)
        if flat.shape[1] < self.min_pixels:  # tiny ROIs: top-k degenerates to max  # expect: FL301
            return self._agg_max(flat)
        return getattr(self, f"_agg_{self.mode}")(flat)

class TiledInspector(nn.Module):
    def __init__(self, scorer: PatchCoreScorer, camera: str = "top"):
        super().__init__()
        self.scorer = scorer
        self.cfg = camera_config(camera)
        self.aggregator = ScoreAggregator("topk_mean", min_pixels=64)

    def forward(self, frame: torch.Tensor):
        b, _, h, w = frame.shape
        tiles, origins = tile_image(frame, self.cfg.tile, self.cfg.overlap)
        n = tiles.shape[1]
        tile_maps, _ = self.scorer(tiles.flatten(0, 1))
        tile_maps = tile_maps.view(b, n, *tile_maps.shape[-2:])
        score_map = stitch_tiles(tile_maps, origins, (h, w), self.cfg.tile)
        score_map = gaussian_blur(score_map, self.cfg.smooth_sigma)
        return score_map, self.aggregator(score_map)

@torch.compile(dynamic=True)
def prepare_frame(frame: torch.Tensor, camera: str = "line_scan") -> torch.Tensor:
    cfg = camera_config(camera)
    x = frame.float() / 255.0 * cfg.gain
    h, w = x.shape[-2:]
    if h * w > LARGE_IMAGE_PIXELS:  # expect: FL301
        x = F.avg_pool2d(x, 2)
    if cfg.flat_field is not None:
        lo, hi = cfg.flat_field
        x = x * torch.linspace(lo, hi, x.shape[-1], device=x.device)
    return normalize_image(x.clamp(0, 1))

POSTPROCESSORS: Dict[str, Callable] = {}

def register_postprocessor(name: str):
    def deco(fn):
        POSTPROCESSORS[name] = fn
        return fn
    return deco

@register_postprocessor("blur")
def _pp_blur(score_map, cfg: CameraConfig):
    return gaussian_blur(score_map, cfg.smooth_sigma)

@register_postprocessor("border")
def _pp_suppress_border(score_map, cfg: CameraConfig, width: int = 1):
    mask = torch.ones_like(score_map)
    mask[..., :width, :] = 0
    mask[..., -width:, :] = 0
    mask[..., :, :width] = 0
    mask[..., :, -width:] = 0
    return score_map * mask

def build_postprocess(names: Sequence[str], cfg: CameraConfig) -> List[Callable]:
    return [functools.partial(POSTPROCESSORS[n], cfg=cfg) for n in names]

@torch.compile
def run_postprocess(score_map: torch.Tensor, steps: List[Callable]) -> torch.Tensor:
    for step in steps:
        score_map = step(score_map)
    return score_map

def binarize(score_map: torch.Tensor, threshold: float) -> torch.Tensor:
    return (score_map > threshold).to(torch.uint8)

def morph(mask: torch.Tensor, op: str, k: int = 3) -> torch.Tensor:
    x = mask.float().unsqueeze(1)
    if op == "dilate":
        x = F.max_pool2d(x, k, stride=1, padding=k // 2)
    elif op == "erode":
        x = -F.max_pool2d(-x, k, stride=1, padding=k // 2)
    else:
        raise ValueError(op)
    return x.squeeze(1).to(mask.dtype)

def refine_mask(mask: torch.Tensor, close_first: bool = True) -> torch.Tensor:
    ops = ("dilate", "erode", "erode", "dilate") if close_first else ("erode", "dilate")
    for op in ops:
        mask = morph(mask, op)
    return mask

def label_components(mask: torch.Tensor, max_iter: int = 12) -> torch.Tensor:
    """GPU connected components by max-label propagation (no scipy on the inference box)."""
    b, h, w = mask.shape
    fg = mask.bool()
    idx = torch.arange(1, h * w + 1, dtype=torch.float32, device=mask.device).view(1, h, w)
    labels = torch.where(fg, idx.expand(b, -1, -1), torch.zeros((), device=mask.device))
    for _ in range(max_iter):
        grown = F.max_pool2d(labels.unsqueeze(1), 3, stride=1, padding=1).squeeze(1)
        new = torch.where(fg, grown, labels)
        if torch.equal(new, labels):  # expect: FL000 GB0033
            break
        labels = new
    return labels

def label_blobs(mask: torch.Tensor):
    if ndi is None:
        labels = label_components(mask)
        return labels, [int(torch.unique(l).numel()) - 1 for l in labels]
    arr = mask.detach().cpu().numpy()
    labels = np.zeros(arr.shape, dtype=np.int32)
    counts = []
    for i in range(arr.shape[0]):
        labels[i], n = ndi.label(arr[i])  # expect: FL000 GB0156; FL000 GB0208; FL000 GB0290
        counts.append(n)
    return torch.from_numpy(labels), counts

@torch.compile
def blob_statistics(score_map: torch.Tensor, camera: str = "top"):
    cfg = camera_config(camera)
    smooth = gaussian_blur(score_map, cfg.smooth_sigma)
    mask = binarize(smooth, cfg.pixel_threshold)
    labels, counts = label_blobs(mask)
    stats = []
    for i, n in enumerate(counts):
        blobs = []
        for lab in range(1, n + 1):
            region = labels[i] == lab
            area = int(region.sum())  # expect: FL000 GB0124
            if area < cfg.min_area:
                continue
            ys, xs = torch.nonzero(region, as_tuple=True)
            blobs.append({"area": area, "bbox": (int(ys.min()), int(xs.min()), int(ys.max()),
                                                 int(xs.max())),
                          "peak": float(smooth[i][region].max())})
        stats.append(blobs)
    return stats

@torch.compile
def defect_mask_pipeline(score_map: torch.Tensor, threshold: torch.Tensor) -> Dict[str, torch.Tensor]:
    mask = (score_map > threshold).to(torch.uint8)
    mask = refine_mask(mask)
    labels = label_components(mask)
    area = mask.flatten(1).sum(1)
    return {"mask": mask, "labels": labels, "area_ratio": area / mask[0].numel()}

@torch.compile
def calibrate_threshold(good_scores: torch.Tensor, bad_scores: Optional[torch.Tensor] = None,
                        target_fpr: float = 0.05) -> torch.Tensor:
    """FPR-based threshold on good parts only; F1-optimal when labelled defects exist."""
    if bad_scores is None:
        return torch.quantile(good_scores, 1 - target_fpr)
    scores = torch.cat([good_scores, bad_scores])
    labels = torch.cat([torch.zeros_like(good_scores), torch.ones_like(bad_scores)])
    candidates = torch.sort(scores).values
    pred = scores[None, :] >= candidates[:, None]
    tp = (pred & (labels[None, :] > 0)).sum(1).float()
    fp = (pred & (labels[None, :] == 0)).sum(1).float()
    fn = labels.sum() - tp
    precision = tp / (tp + fp).clamp_min(1)
    recall = tp / (tp + fn).clamp_min(1)
    f1 = 2 * precision * recall / (precision + recall + EPS)
    return candidates[f1.argmax()]  # expect: FL000 GB0033

class DriftTracker(nn.Module):
    """EMA of image-score statistics per camera; the first batches only seed the EMA."""

    def __init__(self, momentum: float = 0.9, warmup: int = 2):
        super().__init__()
        self.momentum = momentum
        self.warmup = warmup
        self.register_buffer("ema_mean", torch.zeros(()))
        self.register_buffer("ema_std", torch.ones(()))
        self.seen = 0

    def forward(self, image_scores: torch.Tensor) -> torch.Tensor:
        mean, std = image_scores.mean(), image_scores.std()
        if self.seen < self.warmup:
            self.ema_mean.copy_(mean)
            self.ema_std.copy_(std)
        else:
            self.ema_mean.mul_(self.momentum).add_((1 - self.momentum) * mean)
            self.ema_std.mul_(self.momentum).add_((1 - self.momentum) * std)
        self.seen += 1  # expect: FL302
        return (image_scores - self.ema_mean) / (self.ema_std + EPS)

@torch.compile
def grade_severity(image_scores: torch.Tensor, threshold: float = 0.5):
    edges = torch.from_numpy(SEVERITY_EDGES).to(image_scores.device)
    rel = (image_scores / threshold).clamp(0, 2) / 2
    grade = torch.bucketize(rel, edges)
    if DEBUG_DUMP:
        print("severity", grade)
    return grade, [SEVERITY_NAMES[g] for g in grade.tolist()]  # expect: FL000 GB0033

@torch.compile
def summarize_batch(image_scores: torch.Tensor, part_ids: List[str], camera: str = "top"):
    cfg = camera_config(camera)
    verdicts = image_scores > cfg.threshold
    n_bad = int(verdicts.sum())  # expect: FL000 GB0124
    if n_bad:
        log.info("%s: %d/%d parts rejected", camera, n_bad, len(part_ids))  # expect: FL000 GB0291
    rejected = [pid for pid, bad in zip(part_ids, verdicts.tolist()) if bad]  # expect: FL000 GB0109
    return {"verdict": verdicts, "reject_rate": verdicts.float().mean(), "rejected": rejected}

class DefectClassifier(nn.Module):
    def __init__(self, classes: Sequence[str] = ("ok", "scratch", "dent", "stain"),
                 temperature: float = 1.5):
        super().__init__()
        self.backbone = InspectionBackbone(return_layers=("layer2",))
        self.fc = nn.Linear(2 * self.backbone.out_channels["layer2"], len(classes))
        self.classes = tuple(classes)
        self.temperature = temperature

    def forward(self, x: torch.Tensor, return_names: bool = False):
        f = self.backbone(x)["layer2"]
        pooled = torch.cat([f.mean(dim=(2, 3)), f.amax(dim=(2, 3))], dim=1)
        probs = (self.fc(pooled) / self.temperature).softmax(dim=-1)
        if not return_names:
            return probs
        top = probs.argmax(dim=-1).tolist()  # expect: FL000 GB0033
        return probs, [self.classes[i] for i in top]  # expect: FL000 GB4347

def _img(*shape, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.rand(*shape, generator=g)

def _patchcore(k: int = 3) -> PatchCoreScorer:
    backbone = InspectionBackbone()
    return PatchCoreScorer(backbone, fit_memory_bank(backbone, _img(2, 3, 12, 16, seed=7)), k=k)

def _padim() -> PaDiMScorer:
    return PaDiMScorer(InspectionBackbone(), 5, (6, 8)).fit(_img(7, 3, 12, 16, seed=3))

def _hot_map(b: int, h: int, w: int, seed: int = 0) -> torch.Tensor:
    m = _img(b, h, w, seed=seed) * 0.3
    m[:, 2:5, 3:7] += 0.8
    return m

CASES = {
    "InspectionBackbone": lambda: (InspectionBackbone(), (_img(2, 3, 12, 16),)),
    "PatchCoreScorer": lambda: (_patchcore(), (_img(2, 3, 12, 16, seed=1),)),
    "greedy_coreset": lambda: (greedy_coreset, (_img(20, 6, seed=2),)),
    "PaDiMScorer": lambda: (_padim(), (_img(2, 3, 12, 16, seed=1),)),
    "tile_image": lambda: (tile_image, (_img(2, 3, 20, 26), 8, 2), (_img(2, 3, 32, 26), 8, 2)),
    "ScoreAggregator": lambda: (ScoreAggregator(min_pixels=200), (_img(3, 10, 14),),
                                (_img(3, 15, 18),)),
    "TiledInspector": lambda: (TiledInspector(_patchcore()), (_img(2, 3, 20, 26, seed=6),)),
    "prepare_frame": lambda: (prepare_frame, (_img(2, 3, 18, 22) * 255, "side_left"),
                              (_img(2, 3, 26, 30) * 255, "side_left")),
    "run_postprocess": lambda: (run_postprocess, (_hot_map(2, 9, 11), build_postprocess(
        ("blur", "border"), CAMERAS["top"]))),
    "blob_statistics": lambda: (blob_statistics, (_hot_map(2, 9, 11, seed=8),)),
    "defect_mask_pipeline": lambda: (defect_mask_pipeline, (_hot_map(2, 9, 11), torch.tensor(0.6))),
    "calibrate_threshold": lambda: (calibrate_threshold, (_img(7, seed=1), _img(5, seed=2) + 0.5)),
    "DriftTracker": lambda: (DriftTracker(), (_img(5, seed=3),)),
    "grade_severity": lambda: (grade_severity, (_img(6, seed=4),)),
    "summarize_batch": lambda: (summarize_batch, (_img(4, seed=5), ["p1", "p2", "p3", "p4"])),
    "DefectClassifier": lambda: (DefectClassifier(), (_img(2, 3, 12, 16), True)),
}
