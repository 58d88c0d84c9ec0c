"""Document-image classifier for the accounts-payable scanner (invoices, receipts, purchase orders), packaged for
the edge box with torch.jit.trace / torch.export: grayscale + projection-profile deskew, aspect-preserving resize and
padding, a small CNN or ViT-lite backbone (patch embedding, position-embedding interpolation), a multi-label head
with per-class thresholds, confidence-based rejection to the review queue, and collation of multi-page documents."""
import functools
import logging
import math
from dataclasses import dataclass, field, replace
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

logger = logging.getLogger("docclf.deploy")
logger.addHandler(logging.NullHandler())

LABELS = ("invoice", "receipt", "purchase_order", "credit_note", "handwritten", "stamped", "multi_currency")
LABEL2ID: Dict[str, int] = {name: i for i, name in enumerate(LABELS)}
ID2LABEL: Dict[int, str] = {i: name for name, i in LABEL2ID.items()}
# F1-optimal on the June validation dump (see fit_class_thresholds); missing classes fall back to 0.5
CLASS_THRESHOLDS = {"invoice": 0.45, "receipt": 0.5, "handwritten": 0.35, "stamped": 0.6}
DEFAULT_THRESHOLD = 0.5
REJECT_BELOW = 0.55  # no class this confident -> human review
REJECT_LABEL = "<needs_review>"
LUMA = (0.299, 0.587, 0.114)  # ITU-R BT.601
SKEW_CANDIDATES = (-6.0, -3.0, 0.0, 3.0, 6.0)  # degrees; the feeder rarely skews more than that
SKEW_TOLERANCE = 1.0
MIN_SIDE = 8
PAPER = 1.0  # pad / fill value: white paper
PAGE_MEAN, PAGE_STD = 0.9, 0.25  # scanned pages are mostly white
THRESHOLD_GRID = np.linspace(0.2, 0.8, 7)
LOG_REJECTIONS = True
REVIEW_STATS = {"batches": 0, "pages": 0}

@dataclass
class DocConfig:
    backbone: str = "cnn"
    image_size: int = 32
    in_chans: int = 1
    patch_size: int = 8
    embed_dim: int = 16
    depth: int = 2
    num_heads: int = 2
    mlp_ratio: float = 2.0
    cnn_widths: Tuple[int, ...] = (8, 12, 16)
    labels: Tuple[str, ...] = LABELS
    thresholds: Dict[str, float] = field(default_factory=lambda: dict(CLASS_THRESHOLDS))
    reject_below: float = REJECT_BELOW
    deskew: bool = True
    dropout: float = 0.1

    @property
    def num_classes(self) -> int:
        return len(self.labels)

    @property
    def grid_size(self) -> int:
        return self.image_size // self.patch_size

CONFIGS = {
    "cnn-tiny": DocConfig(),
    "vit-tiny": DocConfig(backbone="vit"),
    "vit-flatbed": DocConfig(backbone="vit", deskew=False, reject_below=0.5),
}

def get_config(name: str, **overrides) -> DocConfig:
    try:
        cfg = CONFIGS[name]
    except KeyError:
        raise KeyError(f"unknown config {name!r}; known: {', '.join(sorted(CONFIGS))}") from None
    return replace(cfg, **overrides) if overrides else cfg

# ----------------------------------------------------------------------------- preprocessing
def to_grayscale(img: Tensor) -> Tensor:
    if img.dtype == torch.uint8:
        img = img.float() / 255.0
    if img.shape[-3] == 3:  # expect: FL203
        img = (img * img.new_tensor(LUMA).view(3, 1, 1)).sum(dim=-3, keepdim=True)
    return img

def _fix_inverted(gray: Tensor) -> Tensor:
    # some MFPs deliver white-on-black TIFFs; decide per page, without leaving the graph
    inverted = gray.mean(dim=(-3, -2, -1), keepdim=True) < 0.5
    return torch.where(inverted, 1.0 - gray, gray)

def _rotation_theta(angles_deg: Tensor, h: int, w: int) -> Tensor:
    rad = angles_deg * (math.pi / 180.0)
    cos, sin, zero = rad.cos(), rad.sin(), torch.zeros_like(rad)
    aspect = h / w  # affine_grid works in normalised coords: correct for non-square pages
    row0 = torch.stack([cos, -sin * aspect, zero], dim=-1)
    row1 = torch.stack([sin / aspect, cos, zero], dim=-1)
    return torch.stack([row0, row1], dim=-2)

def rotate(img: Tensor, angles_deg: Tensor, fill: float = PAPER) -> Tensor:
    b, c, h, w = img.shape
    grid = F.affine_grid(_rotation_theta(angles_deg, h, w), [b, c, h, w], align_corners=False)  # expect: FL203
    # grid_sample pads with zeros: shift so that the uncovered corners come back as `fill`
    return F.grid_sample(img - fill, grid, mode="bilinear", padding_mode="zeros", align_corners=False) + fill

def estimate_skew(gray: Tensor, candidates: Sequence[float] = SKEW_CANDIDATES) -> Tensor:
    """Projection-profile skew estimate (Postl): at the right angle text lines give the spikiest row profile."""
    ink = 1.0 - gray
    ink = ink / ink.amax(dim=(-2, -1), keepdim=True).clamp(min=1e-6)
    scores = []
    for angle in candidates:
        rotated = rotate(ink, ink.new_full((ink.shape[0],), angle), fill=0.0)
        profile = rotated.sum(dim=-1).flatten(1)  # (B, H): ink per row
        scores.append(profile.var(dim=-1))
    best = torch.stack(scores, dim=-1).argmax(dim=-1)
    return gray.new_tensor(candidates)[best]

def deskew(gray: Tensor, tolerance: float = SKEW_TOLERANCE) -> Tuple[Tensor, Tensor]:
    angles = estimate_skew(gray)
    if (angles.abs() < tolerance).all():  # flatbed scans: skip the resample  # expect: FL000 GB0170; FL201
        return gray, angles
    return rotate(gray, angles), angles

def _target_hw(h: int, w: int, size: int) -> Tuple[int, int]:
    if h >= w:  # portrait pages: the usual case  # expect: FL203; FL301
        return size, max(MIN_SIDE, int(w * size / h))  # expect: FL203
    return max(MIN_SIDE, int(h * size / w)), size

@torch.compile(dynamic=True)
def resize_keep_aspect(img: Tensor, size: int = 32, fill: float = PAPER) -> Tuple[Tensor, Tensor]:
    """Fit the longer side to `size`, pad bottom/right with paper so the text stays top-left like in training."""
    h, w = img.shape[-2:]
    nh, nw = _target_hw(h, w, size)
    img = F.interpolate(img, size=(nh, nw), mode="bilinear", align_corners=False)
    out = F.pad(img, (0, size - nw, 0, size - nh), value=fill)
    valid = torch.zeros_like(out[:, :1], dtype=torch.bool)
    valid[..., :nh, :nw] = True
    return out, valid

def collate_pages(pages: List[Tensor], size_divisibility: int = 8, pad_value: float = PAPER):
    """ImageList.from_tensors for the scanner's (C, H, W) pages: pad to a common, divisible size."""
    assert len(pages) > 0, "empty document"
    if all(p.shape == pages[0].shape for p in pages):  # single-size feeder batches  # expect: FL301
        return torch.stack(pages), pages[0].new_ones((len(pages), *pages[0].shape[-2:]), dtype=torch.bool)
    max_h = max(p.shape[-2] for p in pages)
    max_w = max(p.shape[-1] for p in pages)
    if size_divisibility > 1:
        stride = size_divisibility
        max_h, max_w = (max_h + stride - 1) // stride * stride, (max_w + stride - 1) // stride * stride
    batched = pages[0].new_full((len(pages), pages[0].shape[0], max_h, max_w), pad_value)
    mask = torch.zeros(len(pages), max_h, max_w, dtype=torch.bool)
    for i, page in enumerate(pages):
        h, w = page.shape[-2:]
        batched[i, :, :h, :w].copy_(page)
        mask[i, :h, :w] = True
    return batched, mask

collate = torch.compile(collate_pages)

def otsu_threshold(gray: Tensor, bins: int = 32) -> Tensor:
    hist = torch.stack([torch.histc(page, bins=bins, min=0.0, max=1.0) for page in gray])  # expect: FL203
    p = hist / hist.sum(dim=-1, keepdim=True)
    centers = (torch.arange(bins, dtype=gray.dtype) + 0.5) / bins
    w0 = p.cumsum(dim=-1)
    mu0 = (p * centers).cumsum(dim=-1)
    between = (mu0[:, -1:] * w0 - mu0).pow(2) / (w0 * (1.0 - w0)).clamp(min=1e-6)
    return centers[between.argmax(dim=-1)]

@torch.compile
def binarize(gray: Tensor) -> Tensor:
    """Global Otsu binarisation for the OCR fallback (1 = ink)."""
    thr = otsu_threshold(gray)
    return (gray < thr.view(-1, *([1] * (gray.dim() - 1)))).to(gray.dtype)

def _check_pages(pages: Tensor) -> None:
    if torch.jit.is_tracing() or torch.compiler.is_compiling():
        return  # host-side sanity checks only in eager serving
    if pages.dim() != 4:
        raise ValueError(f"expected (B, C, H, W) pages, got {tuple(pages.shape)}")

class DocPreprocessor(nn.Module):
    def __init__(self, cfg: DocConfig):
        super().__init__()
        self.size, self.deskew = cfg.image_size, cfg.deskew
        self.register_buffer("mean", torch.tensor(PAGE_MEAN))
        self.register_buffer("std", torch.tensor(PAGE_STD))

    def forward(self, pages: Tensor) -> Tuple[Tensor, Tensor]:
        _check_pages(pages)
        gray = _fix_inverted(to_grayscale(pages))
        if self.deskew:
            gray, _ = deskew(gray)
        gray, valid = resize_keep_aspect(gray, self.size)
        return (gray - self.mean) / self.std, valid

# ----------------------------------------------------------------------------- backbones
class PooledBackboneMixin:
    """forward() = pool(forward_features()); subclasses set feature_dim."""
    feature_dim: int

    def forward(self, x: Tensor) -> Tensor:
        return self.pool(self.forward_features(x))

class ConvBNAct(nn.Sequential):
    def __init__(self, cin: int, cout: int, k: int = 3, stride: int = 1, act: Callable[..., nn.Module] = nn.ReLU):
        super().__init__(nn.Conv2d(cin, cout, k, stride, k // 2, bias=False), nn.BatchNorm2d(cout), act(inplace=True))

class GeM(nn.Module):
    def __init__(self, p: float = 3.0, eps: float = 1e-6):
        super().__init__()
        self.p = nn.Parameter(torch.ones(1) * p)
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(x.clamp(min=self.eps).pow(self.p), 1).pow(1.0 / self.p).flatten(1)

class SmallDocCNN(PooledBackboneMixin, nn.Module):
    def __init__(self, cfg: DocConfig):
        super().__init__()
        chans = (cfg.in_chans,) + tuple(cfg.cnn_widths)
        self.stages = nn.Sequential(*[ConvBNAct(a, b, stride=2 if i else 1)
                                      for i, (a, b) in enumerate(zip(chans[:-1], chans[1:]))])
        self.gem = GeM()
        self.feature_dim = chans[-1]

    def forward_features(self, x: Tensor) -> Tensor:
        return self.stages(x)

    def pool(self, feats: Tensor) -> Tensor:
        return self.gem(feats)

class PatchEmbed(nn.Module):
    def __init__(self, patch_size: int, in_chans: int, embed_dim: int):
        super().__init__()
        self.patch_size = patch_size
        self.proj = nn.Conv2d(in_chans, embed_dim, patch_size, patch_size)
        self.norm = nn.LayerNorm(embed_dim)

    def forward(self, x: Tensor) -> Tuple[Tensor, Tuple[int, int]]:
        h, w = x.shape[-2:]
        p = self.patch_size
        pad_h, pad_w = (p - h % p) % p, (p - w % p) % p
        if pad_h or pad_w:  # receipts come in odd sizes: pad rather than crop the total line  # expect: FL203; FL301
            x = F.pad(x, (0, pad_w, 0, pad_h))
        x = self.proj(x)
        grid = (x.shape[-2], x.shape[-1])
        return self.norm(x.flatten(2).transpose(1, 2)), grid

def resample_abs_pos_embed(posemb: Tensor, new_size: Tuple[int, int], num_prefix_tokens: int = 1,
                           interpolation: str = "bicubic", verbose: bool = False) -> Tensor:
    num_pos_tokens = posemb.shape[1]
    num_new_tokens = new_size[0] * new_size[1] + num_prefix_tokens
    if num_new_tokens == num_pos_tokens and new_size[0] == new_size[1]:  # expect: FL203; FL301
        return posemb
    hw = int(math.sqrt(num_pos_tokens - num_prefix_tokens))  # expect: FL203
    prefix, posemb = posemb[:, :num_prefix_tokens], posemb[:, num_prefix_tokens:]
    embed_dim, orig_dtype = posemb.shape[-1], posemb.dtype
    posemb = posemb.float().reshape(1, hw, hw, -1).permute(0, 3, 1, 2)
    posemb = F.interpolate(posemb, size=new_size, mode=interpolation, align_corners=False)
    posemb = posemb.permute(0, 2, 3, 1).reshape(1, -1, embed_dim).to(orig_dtype)
    if verbose and not torch.jit.is_scripting():
        logger.info("resized position embedding %s to %s", (hw, hw), new_size)
    return torch.cat([prefix, posemb], dim=1)

class Attention(nn.Module):
    def __init__(self, dim: int, num_heads: int):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: Tensor) -> Tensor:
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.num_heads, c // self.num_heads).permute(2, 0, 3, 1, 4)  # expect: FL203
        x = F.scaled_dot_product_attention(q, k, v)
        return self.proj(x.transpose(1, 2).reshape(b, n, c))

class Mlp(nn.Module):
    def __init__(self, dim: int, hidden: int, drop: float = 0.0):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim)
        self.drop = nn.Dropout(drop)

    def forward(self, x: Tensor) -> Tensor:
        return self.drop(self.fc2(self.drop(self.act(self.fc1(x)))))

class Block(nn.Module):
    def __init__(self, dim: int, num_heads: int, mlp_ratio: float, drop: float = 0.0):
        super().__init__()
        self.norm1, self.attn = nn.LayerNorm(dim), Attention(dim, num_heads)
        self.norm2, self.mlp = nn.LayerNorm(dim), Mlp(dim, int(dim * mlp_ratio), drop)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))

class ViTLite(PooledBackboneMixin, nn.Module):
    def __init__(self, cfg: DocConfig, dynamic_img_size: bool = True):
        super().__init__()
        d = self.feature_dim = cfg.embed_dim
        self.dynamic_img_size = dynamic_img_size
        self.patch_embed = PatchEmbed(cfg.patch_size, cfg.in_chans, d)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
        self.pos_embed = nn.Parameter(torch.randn(1, cfg.grid_size ** 2 + 1, d) * 0.02)
        self.blocks = nn.ModuleList([Block(d, cfg.num_heads, cfg.mlp_ratio, cfg.dropout) for _ in range(cfg.depth)])
        self.norm = nn.LayerNorm(d)

    def _pos_embed(self, x: Tensor, grid: Tuple[int, int]) -> Tensor:
        pos = resample_abs_pos_embed(self.pos_embed, grid) if self.dynamic_img_size else self.pos_embed
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)
        return x + pos

    def forward_features(self, x: Tensor) -> Tensor:
        x, grid = self.patch_embed(x)
        x = self._pos_embed(x, grid)
        for blk in self.blocks:
            x = blk(x)
        return self.norm(x)

    def pool(self, feats: Tensor) -> Tensor:
        return feats[:, 0]

BACKBONES: Dict[str, Callable[[DocConfig], nn.Module]] = {"cnn": SmallDocCNN, "vit": ViTLite}

def build_backbone(cfg: DocConfig) -> nn.Module:
    if cfg.backbone not in BACKBONES:
        raise ValueError(f"backbone {cfg.backbone!r} not in {sorted(BACKBONES)}")
    return BACKBONES[cfg.backbone](cfg)

# ----------------------------------------------------------------------------- head, calibration, rejection
class TemperatureScaling(nn.Module):
    """Guo et al. 2017; fitted post-hoc on the validation dump, one scalar for all classes."""

    def __init__(self, init: float = 1.5):
        super().__init__()
        self.log_t = nn.Parameter(torch.tensor(math.log(init)))

    def forward(self, logits: Tensor) -> Tensor:
        return logits / self.log_t.exp()

class MultiLabelHead(nn.Module):
    def __init__(self, in_dim: int, labels: Sequence[str], thresholds: Dict[str, float], dropout: float = 0.0):
        super().__init__()
        self.labels = tuple(labels)
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(in_dim, len(self.labels))
        self.register_buffer("thresholds", torch.tensor([thresholds.get(n, DEFAULT_THRESHOLD) for n in self.labels]))

    def forward(self, feats: Tensor, calibrate: Optional[Callable[[Tensor], Tensor]] = None):
        logits = self.fc(self.drop(feats))
        if calibrate is not None:
            logits = calibrate(logits)
        probs = torch.sigmoid(logits)
        return logits, probs, probs >= self.thresholds

def _log_rejections(rejected: Tensor, conf: Tensor) -> None:
    if LOG_REJECTIONS and rejected.any():  # expect: FL000 GB0170; FL201
        logger.info("routing %d/%d pages to review (min conf %.2f)", int(rejected.sum()), rejected.shape[0],  # expect: FL000 GB0124; FL000 GB0291; FL202; FL204
                    conf.min())

REJECTION_CALLBACKS: List[Callable[[Tensor, Tensor], None]] = [_log_rejections]

@torch.compile
def reject_uncertain(probs: Tensor, pred: Tensor, min_confidence: float = REJECT_BELOW):
    conf = probs.max(dim=-1).values
    rejected = (conf < min_confidence) | ~pred.any(dim=-1)  # nothing over its threshold: nobody to route to
    for callback in REJECTION_CALLBACKS:
        callback(rejected, conf)
    return pred & ~rejected[:, None], rejected, conf

class DocumentClassifier(nn.Module):
    def __init__(self, cfg: DocConfig):
        super().__init__()
        self.cfg = cfg
        self.preprocess = DocPreprocessor(cfg)
        self.backbone = build_backbone(cfg)
        self.head = MultiLabelHead(self.backbone.feature_dim, cfg.labels, cfg.thresholds, cfg.dropout)
        self.temperature = TemperatureScaling()

    def forward(self, pages: Tensor):
        x, _valid = self.preprocess(pages)
        logits, probs, pred = self.head(self.backbone(x), calibrate=self.temperature)
        pred, rejected, _conf = reject_uncertain(probs, pred, self.cfg.reject_below)
        return logits, probs, pred, rejected

def _add_top1(out: Dict[str, Tensor]) -> Dict[str, Tensor]:
    out["top1"] = out["probs"].argmax(dim=-1)
    return out

def _add_margin(out: Dict[str, Tensor]) -> Dict[str, Tensor]:
    top2 = out["probs"].topk(2, dim=-1).values
    out["margin"] = top2[:, 0] - top2[:, 1]
    return out

class MonitoredClassifier(DocumentClassifier):
    """What the serving container runs: dict outputs, post-hooks and a page counter for the metrics endpoint."""

    def __init__(self, cfg: DocConfig, hooks: Sequence[Callable] = (_add_top1, _add_margin)):
        super().__init__(cfg)
        self.hooks = list(hooks)
        self.pages_seen = 0

    def forward(self, pages: Tensor) -> Dict[str, Tensor]:
        logits, probs, pred, rejected = super().forward(pages)
        self.pages_seen += pages.shape[0]  # expect: FL302
        out = {"logits": logits, "probs": probs, "pred": pred, "rejected": rejected}
        for hook in self.hooks:
            out = hook(out)
        return out

def _decode_predictions(pred: Tensor, probs: Tensor, rejected: Tensor,
                        id2label: Dict[int, str] = ID2LABEL) -> List[Dict[str, list]]:
    results = []
    for row, p, rej in zip(pred.tolist(), probs.tolist(), rejected.tolist()):  # expect: FL000 GB0109
        if rej:
            results.append({"labels": [REJECT_LABEL], "scores": []})
            continue
        hits = [i for i, on in enumerate(row) if on]
        results.append({"labels": [id2label[i] for i in hits], "scores": [round(p[i], 3) for i in hits]})
    return results

decode_predictions = torch.compile(_decode_predictions)

def _scatter_pages(probs: Tensor, doc_index: Tensor, num_docs: int, reduce: str) -> Tensor:
    out = probs.new_zeros(num_docs, probs.shape[-1])
    return out.scatter_reduce(0, doc_index[:, None].expand_as(probs), probs, reduce=reduce, include_self=False)

PAGE_REDUCERS = {
    "max": functools.partial(_scatter_pages, reduce="amax"),  # an invoice if any page looks like one
    "mean": functools.partial(_scatter_pages, reduce="mean"),
}

@torch.compile
def aggregate_pages(page_probs: Tensor, doc_index: Tensor, num_docs: Optional[int] = None, mode: str = "max",
                    thresholds: Optional[Tensor] = None):
    if num_docs is None:  # the batcher numbers documents 0..n-1
        num_docs = int(doc_index.max()) + 1  # expect: FL000 GB0124
    doc_probs = PAGE_REDUCERS[mode](page_probs, doc_index, num_docs)
    if thresholds is None:
        thresholds = torch.full_like(doc_probs[0], DEFAULT_THRESHOLD)
    return doc_probs, doc_probs >= thresholds

TTA_TRANSFORMS: Dict[str, Callable[[Tensor], Tensor]] = {
    "identity": lambda x: x,
    "shift_right": functools.partial(torch.roll, shifts=2, dims=-1),  # feeder jitter; margins are white anyway
    "shift_down": functools.partial(torch.roll, shifts=3, dims=-2),
}

@torch.compile
def tta_probs(model: DocumentClassifier, pages: Tensor, transforms: Sequence[str] = ("identity", "shift_right")):
    probs = [model(TTA_TRANSFORMS[name](pages))[1] for name in transforms]
    return torch.stack(probs).mean(dim=0)

# ----------------------------------------------------------------------------- offline evaluation
@torch.compile
def expected_calibration_error(probs: Tensor, targets: Tensor, n_bins: int = 5) -> Tensor:
    conf, correct = probs.flatten(), targets.flatten().float()
    edges = torch.linspace(0, 1, n_bins + 1)
    ece = probs.new_zeros(())
    for lo, hi in zip(edges[:-1], edges[1:]):
        in_bin = (conf > lo) & (conf <= hi)
        weight = in_bin.float().mean()
        if weight.item() > 0:  # expect: FL000 GB0124
            ece = ece + (conf[in_bin].mean() - correct[in_bin].mean()).abs() * weight
    return ece

@torch.compile
def fit_class_thresholds(probs: Tensor, targets: Tensor, grid: np.ndarray = THRESHOLD_GRID):
    """Per-class F1-optimal thresholds on a held-out set (where CLASS_THRESHOLDS came from)."""
    f1s = []
    for t in grid:
        pred = (probs >= float(t)).float()  # expect: FL000 GB0033
        tp = (pred * targets).sum(0)
        fp, fn = (pred * (1 - targets)).sum(0), ((1 - pred) * targets).sum(0)
        f1s.append(2 * tp / (2 * tp + fp + fn).clamp(min=1.0))
    f1 = torch.stack(f1s)
    return torch.as_tensor(grid, dtype=probs.dtype)[f1.argmax(0)], f1.amax(0)

# ----------------------------------------------------------------------------- export entry points
def export_for_serving(out_dir: str, cfg_name: str = "cnn-tiny") -> Dict[str, object]:
    cfg = get_config(cfg_name)
    pages = torch.randint(0, 256, (2, 3, 44, 30), dtype=torch.uint8)
    torch.jit.trace(DocumentClassifier(cfg).eval(), (pages,)).save(f"{out_dir}/classifier.pt")
    torch.jit.trace(DocPreprocessor(cfg), (pages,)).save(f"{out_dir}/preprocess.pt")
    torch.jit.trace(SmallDocCNN(cfg).eval(), (torch.rand(2, 1, 32, 32),)).save(f"{out_dir}/cnn.pt")
    torch.jit.trace(ViTLite(get_config("vit-tiny")).eval(), (torch.rand(2, 1, 48, 40),)).save(f"{out_dir}/vit.pt")
    torch.jit.trace(resize_keep_aspect, (torch.rand(2, 1, 44, 30),)).save(f"{out_dir}/resize.pt")
    probs = torch.rand(2, cfg.num_classes)
    programs = {
        "head": torch.export.export(MultiLabelHead(16, cfg.labels, cfg.thresholds).eval(), (torch.randn(2, 16),)),
        "reject": torch.export.export(reject_uncertain, (probs, probs > 0.5)),
        "binarize": torch.export.export(binarize, (torch.rand(2, 1, 44, 30),)),
    }
    for name, program in programs.items():
        torch.export.save(program, f"{out_dir}/{name}.pt2")
    logger.info("exported %d traced modules and %d programs to %s", 5, len(programs), out_dir)
    return programs

# ----------------------------------------------------------------------------- cases
def _gen(k: int) -> torch.Generator:
    return torch.Generator().manual_seed(k)

_rand = lambda *shape, k=0: torch.rand(*shape, generator=_gen(k))
_randn = lambda *shape, k=0: torch.randn(*shape, generator=_gen(k))

def _scan(b: int, h: int, w: int, k: int = 0, channels: int = 3, skew: float = 0.0) -> Tensor:
    """Fake scans: white paper with a few dark text rows and some noise, uint8 like the scanner driver."""
    page = 0.95 - 0.05 * _rand(b, channels, h, w, k=k)
    page[..., 4:h - 4:5, 3:w - 3] = 0.1 + 0.2 * _rand(b, channels, len(range(4, h - 4, 5)), w - 6, k=k + 1)
    if skew:
        page = rotate(page, torch.full((b,), skew)).clamp(0, 1)
    return (page * 255).round().to(torch.uint8)

def _pages(*hw: Tuple[int, int], k: int = 0) -> List[Tensor]:
    return [_rand(3, h, w, k=k + i) for i, (h, w) in enumerate(hw)]

_probs = lambda b, k=0: (_randn(b, len(LABELS), k=k) * 2).sigmoid()
_targets = lambda b, k=0: (_rand(b, len(LABELS), k=k) > 0.6).float()
_VIT = get_config("vit-tiny")
_CNN = get_config("cnn-tiny")

CASES = {
    "resize_keep_aspect": lambda: (resize_keep_aspect, (_rand(2, 1, 44, 30),), (_rand(2, 1, 26, 42),)),
    "collate": lambda: (collate, (_pages((40, 28), (36, 30), (44, 26)),), (_pages((40, 28), (40, 28), (40, 28)),)),
    "binarize": lambda: (binarize, (_rand(2, 1, 20, 14),)),
    "DocPreprocessor": lambda: (DocPreprocessor(_CNN), (_scan(2, 44, 30, skew=6.0),)),
    "PatchEmbed": lambda: (PatchEmbed(8, 1, 16), (_rand(2, 1, 44, 30),), (_rand(2, 1, 40, 32),)),
    "SmallDocCNN": lambda: (SmallDocCNN(_CNN).eval(), (_rand(2, 1, 32, 32),)),
    "ViTLite": lambda: (ViTLite(_VIT).eval(), (_rand(2, 1, 48, 40),), (_rand(2, 1, 32, 32),)),
    "TemperatureScaling": lambda: (TemperatureScaling(), (_randn(3, len(LABELS)),)),
    "MultiLabelHead": lambda: (MultiLabelHead(16, LABELS, CLASS_THRESHOLDS).eval(), (_randn(3, 16), TemperatureScaling())),
    "reject_uncertain": lambda: (reject_uncertain, (_probs(4), _probs(4) > 0.5, 0.6)),
    "DocumentClassifier_cnn": lambda: (DocumentClassifier(_CNN).eval(), (_scan(2, 44, 30),)),
    "DocumentClassifier_vit": lambda: (DocumentClassifier(get_config("vit-flatbed")).eval(), (_scan(2, 44, 30, k=3),)),
    "MonitoredClassifier": lambda: (MonitoredClassifier(_CNN).eval(), (_scan(2, 44, 30, k=5),)),
    "decode_predictions": lambda: (decode_predictions, (_probs(3) > 0.5, _probs(3), torch.tensor([False, True, False]))),
    "aggregate_pages": lambda: (aggregate_pages, (_probs(5), torch.tensor([0, 0, 1, 2, 2]))),
    "tta_probs": lambda: (tta_probs, (DocumentClassifier(get_config("vit-flatbed")).eval(), _scan(2, 44, 30, k=9),
                                      ("identity", "shift_right", "shift_down"))),
    "expected_calibration_error": lambda: (expected_calibration_error, (_probs(6), _targets(6))),
    "fit_class_thresholds": lambda: (fit_class_thresholds, (_probs(6, k=2), _targets(6, k=2))),
}

TRACED = {
    "DocumentClassifier": lambda: (DocumentClassifier(_CNN).eval(), (_scan(2, 44, 30),)),
    "DocPreprocessor": lambda: (DocPreprocessor(_CNN), (_scan(2, 44, 30, k=7),)),
    "SmallDocCNN": lambda: (SmallDocCNN(_CNN).eval(), (_rand(2, 1, 32, 32),)),
    "ViTLite": lambda: (ViTLite(_VIT).eval(), (_rand(2, 1, 48, 40),)),
    "resize_keep_aspect": lambda: (resize_keep_aspect, (_rand(2, 1, 44, 30),)),
    "MultiLabelHead": lambda: (MultiLabelHead(16, LABELS, CLASS_THRESHOLDS).eval(), (_randn(2, 16),)),
    "reject_uncertain": lambda: (reject_uncertain, (_probs(4), _probs(4) > 0.5)),
    "binarize": lambda: (binarize, (_rand(2, 1, 44, 30),)),
}
