"""License-plate reader for the parking-gate box (torch.jit.trace / torch.export): CenterNet-style plate
heatmap with corner offsets and top-k decoding, affine / perspective rectification of the plate quad, a
CRNN recogniser (conv + BiLSTM) with CTC greedy decoding, per-region vocabularies, confidence gates and
plate-format checks, plus the training-side focal loss / target rendering used when fine-tuning on site."""
import functools
import logging
import math
import re
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

logger = logging.getLogger("lpr_deploy")
logger.addHandler(logging.NullHandler())

PIXEL_MEAN = (0.485, 0.456, 0.406)
PIXEL_STD = (0.229, 0.224, 0.225)
BLANK = 0
PLATE_HW = (8, 24)  # recogniser input (height, width); width becomes the CTC time axis
MAX_ASPECT = 2.0  # wider frames (multi-lane cameras) are cut into overlapping tiles
MIN_PLATE_CONF = 0.05
MIN_QUAD_AREA = 4.0  # px^2 on the input frame
STRICT_FORMAT = True
LOSS_WEIGHTS = {"hm": 1.0, "wh": 0.1, "reg": 1.0, "corners": 0.5}

REGION_VOCABS = {"eu": "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-", "us": "0123456789ABCDEFGHJKLMNPRSTUVWXYZ",
                 "cn": "0123456789ABCDEFGHJKLMNPQRSTUVWXYZ京沪粤苏浙"}
REGION_FORMATS = {"eu": [r"^[A-Z]{1,3}-?[A-Z]{1,2}\d{1,4}$", r"^\d{1,4}[A-Z]{2,3}$"],
                  "us": [r"^[A-Z0-9]{5,8}$"], "cn": [r"^[京沪粤苏浙][A-Z][A-Z0-9]{5}$"]}
ASPECT_RANGES = {"eu": (2.5, 6.5), "us": (1.4, 2.6), "cn": (2.2, 4.2)}  # plate width / height

# ----------------------------------------------------------------------------- vocab / format checks
class CharVocab:
    def __init__(self, chars: str):
        self.chars = chars
        self.idx2char = {i + 1: c for i, c in enumerate(chars)}
        self.char2idx = {c: i for i, c in self.idx2char.items()}
    @property
    def num_classes(self) -> int:
        return len(self.chars) + 1
    def encode(self, text: str) -> List[int]:
        return [self.char2idx[c] for c in text.upper() if c in self.char2idx]
    def decode(self, ids: Sequence[int]) -> str:
        return "".join(self.idx2char.get(i, "") for i in ids)

@functools.lru_cache(maxsize=None)
def get_vocab(region: str) -> CharVocab:
    return CharVocab(REGION_VOCABS[region])

class FormatValidator:
    region = "any"
    confusions: Dict[str, str] = {}
    def __init__(self, patterns: Sequence[str]):
        self.patterns = [re.compile(p) for p in patterns]
    def normalise(self, text: str) -> str:
        return text.upper().replace(" ", "")
    def __call__(self, text: str) -> bool:
        text = self.normalise(text)
        if any(p.match(text) for p in self.patterns):
            return True
        fixed = "".join(self.confusions.get(c, c) for c in text)
        return fixed != text and any(p.match(fixed) for p in self.patterns)

class EUValidator(FormatValidator):
    region = "eu"
    confusions = {"O": "0", "I": "1"}
    def normalise(self, text: str) -> str:
        return super().normalise(text).strip("-")

VALIDATORS: Dict[str, FormatValidator] = {"eu": EUValidator(REGION_FORMATS["eu"]),
                                           "us": FormatValidator(REGION_FORMATS["us"]),
                                           "cn": FormatValidator(REGION_FORMATS["cn"])}

# ----------------------------------------------------------------------------- image normalisation
def _to_float01(img: Tensor) -> Tensor:
    if img.dtype == torch.uint8:
        return img.float().div(255.0)
    return img.float()
class ImageNormalizer(nn.Module):
    """uint8 / float frames from the camera grabber -> normalised float NCHW."""
    def __init__(self, mean=PIXEL_MEAN, std=PIXEL_STD, input_order: str = "rgb"):
        super().__init__()
        self.register_buffer("mean", torch.tensor(mean).view(1, -1, 1, 1))
        self.register_buffer("inv_std", 1.0 / torch.tensor(std).view(1, -1, 1, 1))
        self.swap_rb = input_order == "bgr"
    def forward(self, img: Tensor) -> Tensor:
        x = _to_float01(img)
        if self.swap_rb:
            x = x[:, [2, 1, 0]]
        return (x - self.mean) * self.inv_std

@torch.compile
def split_wide_frame(frame: Tensor, overlap: float = 0.25) -> Tensor:
    """Multi-lane gate cameras are cut into overlapping tiles so that plates keep their resolution."""
    _, _, h, w = frame.shape
    if w <= h * MAX_ASPECT:  # expect: FL203; FL301
        return frame
    tile_w = int(h * MAX_ASPECT)  # expect: FL203
    step = max(1, int(tile_w * (1.0 - overlap)))
    starts = list(range(0, w - tile_w + 1, step))
    if starts[-1] + tile_w < w:  # expect: FL203
        starts.append(w - tile_w)
    return torch.cat([frame[..., s:s + tile_w] for s in starts], 0)

# ----------------------------------------------------------------------------- detector
@dataclass
class DetConfig:
    channels: Tuple[int, ...] = (8, 12, 16)
    head_ch: int = 8
    top_k: int = 6
    score_thresh: float = 0.3
    act: str = "relu"
    corner_scale: float = 2.0
    region: str = "eu"
    @property
    def out_stride(self) -> int:
        return 2 ** (len(self.channels) - 1)

ACTIVATIONS: Dict[str, Callable[[], nn.Module]] = {
    "relu": nn.ReLU, "hswish": nn.Hardswish, "leaky": functools.partial(nn.LeakyReLU, 0.1)}

@torch.compile
def fuse_conv_bn(conv_w: Tensor, mean: Tensor, var: Tensor, gamma: Tensor, beta: Tensor,
                 eps: float = 1e-5, conv_b: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    scale = gamma / (var + eps).sqrt()
    bias = conv_b if conv_b is not None else torch.zeros_like(mean)
    return conv_w * scale.view(-1, 1, 1, 1), (bias - mean) * scale + beta

class ConvBNAct(nn.Module):
    def __init__(self, cin: int, cout: int, k: int = 3, s: int = 1, act: Optional[str] = "relu"):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.act = ACTIVATIONS[act]() if act else nn.Identity()
    def forward(self, x: Tensor) -> Tensor:
        return self.act(self.bn(self.conv(x)))
    @torch.no_grad()
    def fuse(self) -> "ConvBNAct":
        w, b = fuse_conv_bn(self.conv.weight, self.bn.running_mean, self.bn.running_var,
                            self.bn.weight, self.bn.bias, self.bn.eps)
        fused = nn.Conv2d(self.conv.in_channels, self.conv.out_channels, self.conv.kernel_size,
                          self.conv.stride, self.conv.padding, bias=True)
        fused.weight.copy_(w)
        fused.bias.copy_(b)
        self.conv, self.bn = fused, nn.Identity()
        return self

class PlateDetector(nn.Module):
    """Anchor-free plate detector: a centre heatmap plus box size, sub-pixel offset and 4 corner offsets."""
    HEADS = {"hm": 1, "wh": 2, "reg": 2, "corners": 8}
    def __init__(self, cfg: DetConfig = DetConfig()):
        super().__init__()
        layers, cin = [], 3
        for i, c in enumerate(cfg.channels):
            layers.append(ConvBNAct(cin, c, s=1 if i == 0 else 2, act=cfg.act))
            cin = c
        self.backbone = nn.Sequential(*layers)
        self.heads = nn.ModuleDict({
            name: nn.Sequential(ConvBNAct(cin, cfg.head_ch, act=cfg.act), nn.Conv2d(cfg.head_ch, n, 1))
            for name, n in self.HEADS.items()})
        nn.init.constant_(self.heads["hm"][-1].bias, -2.19)  # focal-loss prior, p = 0.1
    def forward(self, x: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
        feat = self.backbone(x)
        out = [self.heads[name](feat) for name in self.HEADS]
        out[0] = out[0].sigmoid().clamp(1e-4, 1 - 1e-4)
        return tuple(out)

def _heat_nms(heat: Tensor, kernel: int = 3) -> Tensor:
    hmax = F.max_pool2d(heat, kernel, stride=1, padding=(kernel - 1) // 2)
    return heat * (hmax == heat).float()
def _gather_feat(feat: Tensor, inds: Tensor) -> Tensor:
    b, c = feat.shape[:2]
    feat = feat.view(b, c, -1).permute(0, 2, 1)
    return feat.gather(1, inds.unsqueeze(-1).expand(-1, -1, c))
def _topk(scores: Tensor, k: int) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    b, _, _, w = scores.shape
    top_scores, top_inds = scores.view(b, -1).topk(k)
    ys = torch.div(top_inds, w, rounding_mode="floor").float()
    xs = (top_inds % w).float()
    return top_scores, top_inds, xs, ys

def decode_heatmaps(hm: Tensor, wh: Tensor, reg: Tensor, corners: Tensor, cfg: DetConfig):
    k = min(cfg.top_k, hm.shape[2] * hm.shape[3])  # expect: FL203
    scores, inds, xs, ys = _topk(_heat_nms(hm), k)
    off, size = _gather_feat(reg, inds), _gather_feat(wh, inds)
    cx, cy = xs + off[..., 0], ys + off[..., 1]
    half_w, half_h = size[..., 0] / 2, size[..., 1] / 2
    boxes = torch.stack([cx - half_w, cy - half_h, cx + half_w, cy + half_h], -1)
    centre = torch.stack([cx, cy], -1).unsqueeze(-2)
    quads = _gather_feat(corners, inds).view(*inds.shape, 4, 2) * cfg.corner_scale + centre
    return boxes * cfg.out_stride, quads * cfg.out_stride, scores

class HeatmapDecoder(nn.Module):
    def __init__(self, cfg: DetConfig = DetConfig()):
        super().__init__()
        self.cfg = cfg
    def forward(self, hm: Tensor, wh: Tensor, reg: Tensor, corners: Tensor):
        return decode_heatmaps(hm, wh, reg, corners, self.cfg)

def clip_boxes(boxes: Tensor, img_hw: Tuple[int, int]) -> Tensor:
    h, w = img_hw
    return torch.min(boxes.clamp(min=0), boxes.new_tensor([w - 1, h - 1, w - 1, h - 1]))
def _aspect_ok(boxes: Tensor, region: str) -> Tensor:
    lo, hi = ASPECT_RANGES.get(region, (1.0, 8.0))
    ratio = (boxes[:, 2] - boxes[:, 0]) / (boxes[:, 3] - boxes[:, 1]).clamp(min=1e-3)
    return (ratio >= lo) & (ratio <= hi)
@torch.compile
def postprocess_detections(hm, wh, reg, corners, cfg: DetConfig, img_hw: Tuple[int, int],
                           check_aspect: bool = True) -> List[Dict[str, Tensor]]:
    boxes, quads, scores = decode_heatmaps(hm, wh, reg, corners, cfg)
    results = []
    for b in range(scores.shape[0]):
        keep = scores[b] > cfg.score_thresh
        if check_aspect:
            keep &= _aspect_ok(boxes[b], cfg.region)
        results.append({"boxes": clip_boxes(boxes[b][keep], img_hw), "quads": quads[b][keep],  # expect: FL000 GB0036
                        "scores": scores[b][keep]})
    return results

# ----------------------------------------------------------------------------- rectification
_CANON_QUAD = np.array([[-1.0, -1.0], [1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]])  # tl, tr, br, bl
_CANON_PINV = np.linalg.pinv(np.concatenate([_CANON_QUAD, np.ones((4, 1))], 1)).astype(np.float32)

def _expand_quads(quads: Tensor, margin: float) -> Tensor:
    centre = quads.mean(-2, keepdim=True)
    return centre + (quads - centre) * (1.0 + margin)
def _quad_area(quads: Tensor) -> Tensor:
    x, y = quads[..., 0], quads[..., 1]
    return 0.5 * (x * y.roll(-1, -1) - x.roll(-1, -1) * y).sum(-1).abs()
@torch.compile
def quad_to_theta(quads: Tensor, img_wh: Tensor) -> Tensor:
    """Least-squares affine map from the canonical plate rectangle to each quad ([N, 4, 2] pixels),
    in affine_grid's normalised coordinates: theta = (pinv([canon | 1]) @ quad_norm)^T."""
    dst = quads * (2.0 / (img_wh - 1)) - 1.0
    pinv = torch.from_numpy(_CANON_PINV).to(quads.dtype)  # expect: FL203
    return (pinv @ dst).transpose(1, 2)

def _warn_degenerate(quads: Tensor) -> None:
    area = _quad_area(quads)
    if (area < MIN_QUAD_AREA).any():  # expect: FL000 GB0170; FL201
        logger.warning("degenerate plate quad(s), min area %.1f px^2", area.min())

class PlateRectifier(nn.Module):
    """[B, 3, H, W] frames + [B, K, 4, 2] corner quads -> [B*K, 3, h, w] upright plate crops."""
    def __init__(self, out_hw: Tuple[int, int] = PLATE_HW, margin: float = 0.08, check: bool = True):
        super().__init__()
        self.out_hw = out_hw
        self.margin = margin
        self.check = check
    def forward(self, img: Tensor, quads: Tensor) -> Tensor:
        b, c, h, w = img.shape
        k = quads.shape[1]
        quads = _expand_quads(quads, self.margin).flatten(0, 1)
        if self.check:
            _warn_degenerate(quads)
        theta = quad_to_theta(quads, torch.tensor([w, h], dtype=img.dtype))  # expect: FL203
        grid = F.affine_grid(theta, [b * k, c, *self.out_hw], align_corners=True)  # expect: FL203
        src = img.repeat_interleave(k, 0)
        return F.grid_sample(src, grid, mode="bilinear", padding_mode="border", align_corners=True)

def _homography_dlt(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """4-point DLT (what cv2.getPerspectiveTransform does): H @ [x, y, 1] ~ [u, v, 1], h33 = 1."""
    rows, rhs = [], []
    for (x, y), (u, v) in zip(src, dst):
        rows.append([x, y, 1.0, 0.0, 0.0, 0.0, -u * x, -u * y])
        rows.append([0.0, 0.0, 0.0, x, y, 1.0, -v * x, -v * y])
        rhs += [u, v]
    h = np.linalg.solve(np.asarray(rows, dtype=np.float64), np.asarray(rhs, dtype=np.float64))  # expect: FL000 GB0087
    return np.append(h, 1.0).reshape(3, 3)

@torch.compile
def rectify_perspective(img: Tensor, quads: Tensor, out_hw: Tuple[int, int] = PLATE_HW) -> Tensor:
    """Full perspective crop of each quad ([K, 4, 2] pixels) of one [1, 3, H, W] frame."""
    h, w = img.shape[-2:]
    oh, ow = out_hw
    ys, xs = torch.meshgrid(torch.linspace(-1, 1, oh), torch.linspace(-1, 1, ow), indexing="ij")
    pts = torch.stack([xs, ys, torch.ones_like(xs)], -1).view(-1, 3)
    scale = torch.tensor([2.0 / (w - 1), 2.0 / (h - 1)])
    crops = []
    for quad in quads.detach().cpu().numpy():
        H = torch.from_numpy(_homography_dlt(_CANON_QUAD, quad)).float()
        p = pts @ H.T
        grid = (p[:, :2] / p[:, 2:]) * scale - 1.0
        crops.append(F.grid_sample(img, grid.view(1, oh, ow, 2), align_corners=True))
    return torch.cat(crops)

# ----------------------------------------------------------------------------- recogniser
@dataclass
class RecConfig:
    region: str = "eu"
    channels: Tuple[int, ...] = (8, 16)
    hidden: int = 12
    bidirectional: bool = True
    seq: str = "lstm"  # "conv": the NPU toolchain has no LSTM, the edge build uses a temporal conv stack

EDGE_REC_CFG = RecConfig(seq="conv")

def _collapse_height(f: Tensor) -> Tensor:
    if f.shape[2] == 1:  # expect: FL203
        return f.squeeze(2)
    return F.adaptive_avg_pool2d(f, (1, f.shape[3])).squeeze(2)
class CRNN(nn.Module):
    def __init__(self, cfg: RecConfig = RecConfig()):
        super().__init__()
        self.vocab = get_vocab(cfg.region)
        blocks, cin = [], 3
        for c in cfg.channels:
            blocks += [ConvBNAct(cin, c, act="hswish"), nn.MaxPool2d((2, 1))]  # keep width: it is time
            cin = c
        self.cnn = nn.Sequential(*blocks)
        out_ch = cfg.hidden * (2 if cfg.bidirectional else 1)
        if cfg.seq == "lstm":
            self.rnn = nn.LSTM(cin, cfg.hidden, bidirectional=cfg.bidirectional)
        else:
            self.rnn = nn.Sequential(nn.Conv1d(cin, out_ch, 3, padding=1), nn.ReLU(), nn.Conv1d(out_ch, out_ch, 3, padding=1))
        self.fc = nn.Linear(out_ch, self.vocab.num_classes)
    def forward(self, x: Tensor) -> Tensor:
        f = _collapse_height(self.cnn(x))  # B, C, T
        if isinstance(self.rnn, nn.LSTM):  # expect: FL000 GB0014
            seq, _ = self.rnn(f.permute(2, 0, 1))
        else:
            seq = self.rnn(f).permute(2, 0, 1)
        return self.fc(seq).log_softmax(-1)  # T, B, classes

def _greedy(log_probs: Tensor, blank: int = BLANK) -> Tuple[Tensor, Tensor, Tensor]:
    probs, best = log_probs.exp().max(-1)  # T, B
    best, probs = best.t(), probs.t()
    prev = torch.cat([best.new_full((best.shape[0], 1), -1), best[:, :-1]], 1)
    keep = (best != blank) & (best != prev)
    return best, keep, probs

@torch.compile
def ctc_greedy_scores(log_probs: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    best, keep, probs = _greedy(log_probs)
    char_conf = torch.where(keep, probs, torch.ones_like(probs))
    return best, keep, char_conf.min(1).values, keep.sum(1)

def _decode_texts(best: Tensor, keep: Tensor, vocab: CharVocab) -> List[str]:
    texts = []
    for ids, mask in zip(best.tolist(), keep.tolist()):  # expect: FL000 GB0033; FL000 GB0109
        texts.append(vocab.decode([i for i, m in zip(ids, mask) if m]))
    return texts

# ----------------------------------------------------------------------------- gating
@dataclass
class PlateRead:
    text: str
    confidence: float
    region: str
    valid: bool
    reasons: List[str] = field(default_factory=list)
def _length_gate(text: str, conf: float, region: str, min_len: int = 4) -> Optional[str]:
    return None if len(text) >= min_len else "too_short"
def _format_gate(text: str, conf: float, region: str) -> Optional[str]:
    validator = VALIDATORS.get(region)
    if validator is None or not STRICT_FORMAT:
        return None
    return None if validator(text) else "bad_format"
def _confidence_gate(text: str, conf: float, region: str, threshold: float) -> Optional[str]:
    return None if conf >= threshold else "low_confidence"
DEFAULT_GATES = [_length_gate, _format_gate, functools.partial(_confidence_gate, threshold=MIN_PLATE_CONF)]

@torch.compile
def read_plates(log_probs: Tensor, det_scores: Tensor, region: str = "eu",
                gates: Optional[List[Callable]] = None) -> List[PlateRead]:
    gates = DEFAULT_GATES if gates is None else gates
    best, keep, probs = _greedy(log_probs)
    char_conf = torch.where(keep, probs, torch.ones_like(probs)).min(1).values
    conf = (char_conf * det_scores).clamp(0.0, 1.0)
    reads = []
    for text, c in zip(_decode_texts(best, keep, get_vocab(region)), conf.tolist()):  # expect: FL000 GB0109
        reasons = [r for r in (gate(text, c, region) for gate in gates) if r]
        reads.append(PlateRead(text, round(c, 3), region, not reasons, reasons))
    return reads

class LicensePlateReader(nn.Module):
    """The deployed graph: frame -> boxes, quads, scores, CTC log-probs of every top-k candidate."""
    def __init__(self, det_cfg: DetConfig = DetConfig(), rec_cfg: RecConfig = EDGE_REC_CFG,
                 skip_empty: bool = True):
        super().__init__()
        self.normalizer = ImageNormalizer()
        self.detector = PlateDetector(det_cfg)
        self.decoder = HeatmapDecoder(det_cfg)
        self.rectifier = PlateRectifier(check=False)
        self.recognizer = CRNN(rec_cfg)
        self.min_score = det_cfg.score_thresh
        self.skip_empty = skip_empty
    def forward(self, img: Tensor):
        x = self.normalizer(img)
        boxes, quads, scores = self.decoder(*self.detector(x))
        return boxes, quads, scores, self._recognise(x, quads, scores)
    def _recognise(self, x: Tensor, quads: Tensor, scores: Tensor) -> Tensor:
        if self.skip_empty and not (scores > self.min_score).any():  # expect: FL000 GB0170; FL201
            logger.debug("no plate above %.2f", self.min_score)  # expect: FL000 GB0291; FL204
            return torch.zeros(PLATE_HW[1], scores.numel(), self.recognizer.vocab.num_classes)
        return self.recognizer(self.rectifier(x, quads))

class ReadVoter(nn.Module):
    """Per-track EMA of the per-frame character posteriors (a plate is seen over ~20 frames at the gate)."""
    def __init__(self, max_t: int, num_classes: int, momentum: float = 0.6):
        super().__init__()
        self.register_buffer("ema", torch.zeros(max_t, num_classes))
        self.momentum = momentum
        self.frames = 0
    def forward(self, log_probs: Tensor) -> Tensor:
        probs = log_probs.exp()
        if self.frames == 0:
            self.ema.copy_(probs)
        else:
            self.ema.mul_(self.momentum).add_(probs, alpha=1.0 - self.momentum)
        self.frames += 1  # expect: FL302
        return self.ema.clamp_min(1e-8).log()

# ----------------------------------------------------------------------------- training side (site fine-tune)
def gaussian_radius(h: float, w: float, min_overlap: float = 0.7) -> float:
    a, b, c = 4 * min_overlap, -2 * min_overlap * (h + w), (min_overlap - 1) * w * h
    return (-b + math.sqrt(b ** 2 - 4 * a * c)) / (2 * a)
@torch.compile
def render_heatmap_targets(boxes: Tensor, hm_hw: Tuple[int, int], stride: int = 4) -> Tensor:
    hm = torch.zeros(1, *hm_hw)
    ys = torch.arange(hm_hw[0], dtype=torch.float32).view(-1, 1)
    xs = torch.arange(hm_hw[1], dtype=torch.float32).view(1, -1)
    for box in boxes / stride:
        bw, bh = (box[2] - box[0]).item(), (box[3] - box[1]).item()  # expect: FL000 GB0124
        sigma = (2 * max(0, int(gaussian_radius(bh, bw))) + 1) / 6
        cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
        g = torch.exp(-((xs - cx.floor()) ** 2 + (ys - cy.floor()) ** 2) / (2 * sigma ** 2))
        hm[0] = torch.maximum(hm[0], g)
    return hm

def _focal_loss(pred: Tensor, gt: Tensor, alpha: int = 2, beta: int = 4) -> Tensor:
    pos = gt.eq(1).float()
    neg_weights = torch.pow(1 - gt, beta)
    pos_loss = (torch.log(pred) * torch.pow(1 - pred, alpha) * pos).sum()
    neg_loss = (torch.log(1 - pred) * torch.pow(pred, alpha) * neg_weights * (1 - pos)).sum()
    num_pos = pos.sum()
    if num_pos == 0:  # expect: FL000 GB0170
        return -neg_loss
    return -(pos_loss + neg_loss) / num_pos
def _reg_l1(output: Tensor, mask: Tensor, ind: Tensor, target: Tensor) -> Tensor:
    pred = _gather_feat(output, ind)
    m = mask.unsqueeze(-1).expand_as(pred).float()
    return F.l1_loss(pred * m, target * m, reduction="sum") / (m.sum() + 1e-4)

class CenterNetLoss(nn.Module):
    def __init__(self, weights: Optional[Dict[str, float]] = None):
        super().__init__()
        self.weights = dict(LOSS_WEIGHTS, **(weights or {}))
    def forward(self, outputs: Sequence[Tensor], targets: Dict[str, Tensor]):
        preds = dict(zip(PlateDetector.HEADS, outputs))
        losses = {"hm": _focal_loss(preds["hm"], targets["hm"])}
        for name in ("wh", "reg", "corners"):
            losses[name] = _reg_l1(preds[name], targets["mask"], targets["ind"], targets[name])
        total = sum(self.weights[k] * v for k, v in losses.items())
        return total, {k: v.detach() for k, v in losses.items()}

@torch.compile
def ctc_finetune_loss(log_probs: Tensor, texts: List[str], region: str = "eu") -> Tensor:
    vocab = get_vocab(region)
    targets = [torch.tensor(vocab.encode(t), dtype=torch.long) for t in texts]
    target_lengths = torch.tensor([len(t) for t in targets], dtype=torch.long)
    input_lengths = torch.full((log_probs.shape[1],), log_probs.shape[0], dtype=torch.long)
    return F.ctc_loss(log_probs, torch.cat(targets), input_lengths, target_lengths,  # expect: FL000 GB0036
                      blank=BLANK, zero_infinity=True)

# ----------------------------------------------------------------------------- export entry points
def export_all(out_dir: str, h: int = 24, w: int = 40) -> Dict[str, object]:
    det_cfg, rec_cfg = DetConfig(), EDGE_REC_CFG
    frame = torch.randint(0, 256, (1, 3, h, w), dtype=torch.uint8)
    x = ImageNormalizer()(frame)
    heads = PlateDetector(det_cfg).eval()(x)
    quads = HeatmapDecoder(det_cfg)(*heads)[1]
    torch.jit.trace(ImageNormalizer(input_order="bgr"), (frame,)).save(f"{out_dir}/normalize.pt")
    torch.jit.trace(split_wide_frame, (frame.float(),)).save(f"{out_dir}/tiles.pt")
    torch.jit.trace(PlateDetector(det_cfg).eval(), (x,)).save(f"{out_dir}/detector.pt")
    torch.jit.trace(HeatmapDecoder(det_cfg), heads).save(f"{out_dir}/decoder.pt")
    torch.jit.trace(PlateRectifier(), (x, quads)).save(f"{out_dir}/rectifier.pt")
    torch.jit.trace(CRNN(EDGE_REC_CFG).eval(), (torch.rand(det_cfg.top_k, 3, *PLATE_HW),)).save(f"{out_dir}/crnn.pt")
    torch.jit.trace(LicensePlateReader(det_cfg, rec_cfg).eval(), (frame,)).save(f"{out_dir}/reader.pt")
    programs = {
        "theta": torch.export.export(quad_to_theta, (quads[0], torch.tensor([w, h], dtype=torch.float32))),
        "ctc": torch.export.export(ctc_greedy_scores, (torch.randn(PLATE_HW[1], 4, 38).log_softmax(-1),)),
        "voter": torch.export.export(ReadVoter(PLATE_HW[1], 38), (torch.randn(PLATE_HW[1], 38).log_softmax(-1),)),
    }
    for name, program in programs.items():
        torch.export.save(program, f"{out_dir}/{name}.pt2")
    return programs

# ----------------------------------------------------------------------------- cases
_gen = lambda k: torch.Generator().manual_seed(k)
_rand = lambda *shape, k=0: torch.rand(*shape, generator=_gen(k))
_randn = lambda *shape, k=0: torch.randn(*shape, generator=_gen(k))
_u8 = lambda *shape, k=0: torch.randint(0, 256, shape, dtype=torch.uint8, generator=_gen(k))
_log_probs = lambda t, b, c=38, k=0: (_randn(t, b, c, k=k) * 3).log_softmax(-1)

def _heads(b: int, h: int, w: int, k: int = 0) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    hm = _rand(b, 1, h, w, k=k) * 0.6
    wh = torch.stack([_rand(b, h, w, k=k + 1) * 4 + 8, _rand(b, h, w, k=k + 2) + 2], 1)
    return hm, wh, _rand(b, 2, h, w, k=k + 3), _randn(b, 8, h, w, k=k + 4)
def _quads(b: int, n: int, h: int, w: int, k: int = 0) -> Tensor:
    base = torch.tensor([[0.2, 0.3], [0.8, 0.3], [0.8, 0.6], [0.2, 0.6]]) * torch.tensor([w, h])
    return base.expand(b, n, 4, 2) + _randn(b, n, 4, 2, k=k) * 0.5
def _loss_targets(b: int, h: int, w: int, n: int = 3, k: int = 0) -> Dict[str, Tensor]:
    hm = _rand(b, 1, h, w, k=k) * 0.5
    ind = torch.randint(0, h * w, (b, n), generator=_gen(k + 1))
    hm.view(b, -1).scatter_(1, ind, 1.0)
    return {"hm": hm, "ind": ind, "mask": torch.ones(b, n, dtype=torch.bool), "wh": _rand(b, n, 2, k=k) * 8,
            "reg": _rand(b, n, 2, k=k + 2), "corners": _randn(b, n, 8, k=k + 3)}
_GT_BOXES = [[4.0, 6.0, 30.0, 14.0], [20.0, 10.0, 36.0, 16.0]]
_dets = lambda k=0: tuple(t.clamp(1e-4, 1 - 1e-4) if i == 0 else t for i, t in enumerate(_heads(2, 6, 10, k=k)))
_bn = lambda c, k=0: (_randn(c, 3, 3, 3, k=k), _randn(c, k=k + 1), _rand(c, k=k + 2) + 0.5, _rand(c, k=k + 3), _randn(c, k=k + 4))

CASES = {
    "ImageNormalizer": lambda: (ImageNormalizer(input_order="bgr"), (_u8(2, 3, 12, 20),)),
    "split_wide_frame": lambda: (split_wide_frame, (_rand(2, 3, 10, 36),), (_rand(2, 3, 14, 22),)),
    "fuse_conv_bn": lambda: (fuse_conv_bn, _bn(6)),
    "ConvBNAct": lambda: (ConvBNAct(3, 6, s=2, act="leaky").eval(), (_rand(2, 3, 10, 14),)),
    "PlateDetector": lambda: (PlateDetector().eval(), (_randn(2, 3, 20, 36),)),
    "HeatmapDecoder": lambda: (HeatmapDecoder(), _heads(2, 5, 9)),
    "postprocess_detections": lambda: (postprocess_detections, (*_dets(), DetConfig(score_thresh=0.2), (24, 40))),
    "quad_to_theta": lambda: (quad_to_theta, (_quads(1, 5, 24, 40)[0], torch.tensor([40.0, 24.0]))),
    "PlateRectifier": lambda: (PlateRectifier(), (_rand(2, 3, 24, 40), _quads(2, 3, 24, 40))),
    "rectify_perspective": lambda: (rectify_perspective, (_rand(1, 3, 24, 40), _quads(1, 3, 24, 40)[0])),
    "CRNN": lambda: (CRNN().eval(), (_rand(3, 3, 8, 20),)),
    "ctc_greedy_scores": lambda: (ctc_greedy_scores, (_log_probs(14, 3),)),
    "read_plates": lambda: (read_plates, (_log_probs(12, 4, k=2), _rand(4, k=3), "eu")),
    "LicensePlateReader": lambda: (LicensePlateReader().eval(), (_u8(2, 3, 24, 40, k=1),)),
    "ReadVoter": lambda: (ReadVoter(12, 38), (_log_probs(12, 1, k=4)[:, 0],)),
    "render_heatmap_targets": lambda: (render_heatmap_targets, (torch.tensor(_GT_BOXES), (6, 10))),
    "CenterNetLoss": lambda: (CenterNetLoss({"corners": 0.25}), (_dets(k=5), _loss_targets(2, 6, 10))),
    "ctc_finetune_loss": lambda: (ctc_finetune_loss, (_log_probs(16, 3, k=6), ["AB123", "M-XY77", "9KLM"])),
}

TRACED = {
    "ImageNormalizer": lambda: (ImageNormalizer(input_order="bgr"), (_u8(1, 3, 24, 40),)),
    "split_wide_frame": lambda: (split_wide_frame, (_rand(1, 3, 10, 36),)),
    "PlateDetector": lambda: (PlateDetector().eval(), (_randn(1, 3, 24, 40),)),
    "HeatmapDecoder": lambda: (HeatmapDecoder(), _heads(1, 6, 10)),
    "PlateRectifier": lambda: (PlateRectifier(), (_rand(1, 3, 24, 40), _quads(1, 3, 24, 40))),
    "CRNN": lambda: (CRNN(EDGE_REC_CFG).eval(), (_rand(6, 3, 8, 24),)),
    "LicensePlateReader": lambda: (LicensePlateReader().eval(), (_u8(1, 3, 24, 40, k=2),)),
    "quad_to_theta": lambda: (quad_to_theta, (_quads(1, 4, 24, 40)[0], torch.tensor([40.0, 24.0]))),
    "ctc_greedy_scores": lambda: (ctc_greedy_scores, (_log_probs(12, 4, k=7),)),
    "ReadVoter": lambda: (ReadVoter(12, 38), (_log_probs(12, 1, k=8)[:, 0],)),
}
