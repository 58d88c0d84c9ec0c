"""Models prepared for deployment with torch.jit.trace: letterbox/normalize preprocessing, an FCOS-style
detector with its post-processing, a DeepLab-style segmentation head, byte-level text classifiers,
an ONNX-style export wrapper and quantization-friendly blocks."""
import logging
import math
import os
from typing import List, Tuple

import torch
import torch.nn.functional as F
from torch import nn
from torch.ao.quantization import DeQuantStub, QuantStub

logger = logging.getLogger("deploy")

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


# ----------------------------------------------------------------------------- preprocessing

class ImagePreprocessor(nn.Module):
    """uint8 NHWC camera frames -> normalized float NCHW at the network's input size."""

    def __init__(self, size: Tuple[int, int] = (32, 32)):
        super().__init__()
        self.size = size
        self.register_buffer("mean", torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1) * 255.0)
        self.register_buffer("std", torch.tensor(IMAGENET_STD).view(1, 3, 1, 1) * 255.0)

    def forward(self, frames):
        x = frames.permute(0, 3, 1, 2).float()
        x = F.interpolate(x, size=self.size, mode="bilinear", align_corners=False)
        return (x - self.mean) / self.std


class Letterbox(nn.Module):
    """YOLO-style resize that keeps the aspect ratio, then pads to a square canvas."""

    def __init__(self, canvas: int = 32, fill: float = 0.5):
        super().__init__()
        self.canvas = canvas
        self.fill = fill

    def forward(self, images):
        h, w = images.shape[-2:]
        ratio = min(self.canvas / h, self.canvas / w)  # expect: FL203
        new_h, new_w = int(h * ratio), int(w * ratio)  # expect: FL203
        resized = F.interpolate(images, size=(new_h, new_w), mode="bilinear", align_corners=False)
        pad_h, pad_w = self.canvas - new_h, self.canvas - new_w
        top, left = pad_h // 2, pad_w // 2
        canvas = F.pad(resized, (left, pad_w - left, top, pad_h - top), value=self.fill)
        offsets = images.new_tensor([left, top, left, top])
        return canvas, offsets, ratio


def undo_letterbox(boxes, offsets, ratio: float, image):
    boxes = (boxes - offsets) / ratio
    h, w = image.shape[-2:]
    x = boxes[:, 0::2].clamp(0, w)
    y = boxes[:, 1::2].clamp(0, h)
    return torch.stack([x[:, 0], y[:, 0], x[:, 1], y[:, 1]], dim=1)


# ----------------------------------------------------------------------------- quantization-friendly blocks

class QuantConvBNReLU(nn.Module):
    """Conv-BN-ReLU between quant stubs, laid out so fuse_modules / prepare_qat can find it."""

    def __init__(self, cin: int, cout: int, stride: int = 1):
        super().__init__()
        self.quant = QuantStub()
        self.conv = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.dequant = DeQuantStub()

    def forward(self, x):
        x = self.quant(x)
        x = self.relu(self.bn(self.conv(x)))
        return self.dequant(x)

    def fuse(self):
        torch.ao.quantization.fuse_modules(self, [["conv", "bn", "relu"]], inplace=True)
        return self


class SqueezeExcite(nn.Module):
    """MobileNetV3 SE block with hardsigmoid gating (maps onto quantized kernels)."""

    def __init__(self, channels: int, reduction: int = 4):
        super().__init__()
        hidden = max(8, channels // reduction)
        self.fc1 = nn.Conv2d(channels, hidden, 1)
        self.fc2 = nn.Conv2d(hidden, channels, 1)
        self.mul = torch.ao.nn.quantized.FloatFunctional()

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        s = F.hardsigmoid(self.fc2(F.relu(self.fc1(s))))
        return self.mul.mul(x, s)


def symmetric_scale(x, qmax: int, eps: float = 1e-8) -> float:
    """Per-tensor scale for symmetric quantization from the observed absolute max."""
    amax = x.detach().abs().max().item()  # expect: FL102 GB0124; FL202
    return max(amax, eps) / qmax


class DynamicFakeQuant(nn.Module):
    """Symmetric int8 fake quantization with the scale taken from the current batch."""

    def __init__(self, bits: int = 8, eps: float = 1e-8):
        super().__init__()
        self.qmax = 2 ** (bits - 1) - 1
        self.eps = eps

    def forward(self, x):
        scale = symmetric_scale(x, self.qmax, self.eps)
        return torch.fake_quantize_per_tensor_affine(x, scale, 0, -self.qmax - 1, self.qmax)


# ----------------------------------------------------------------------------- detection

def compute_locations(h: int, w: int, stride: int, device=None):
    shifts_x = torch.arange(0, w * stride, step=stride, dtype=torch.float32, device=device)
    shifts_y = torch.arange(0, h * stride, step=stride, dtype=torch.float32, device=device)
    shift_y, shift_x = torch.meshgrid(shifts_y, shifts_x, indexing="ij")
    return torch.stack((shift_x.reshape(-1), shift_y.reshape(-1)), dim=1) + stride // 2


class Scale(nn.Module):
    def __init__(self, init: float = 1.0):
        super().__init__()
        self.scale = nn.Parameter(torch.tensor(init))

    def forward(self, x):
        return x * self.scale


class FcosHead(nn.Module):
    def __init__(self, in_ch: int = 8, num_classes: int = 3, strides=(4, 8)):
        super().__init__()
        self.strides = strides
        layers = []
        for _ in range(2):
            layers += [nn.Conv2d(in_ch, in_ch, 3, padding=1), nn.GroupNorm(2, in_ch), nn.ReLU()]
        self.tower = nn.Sequential(*layers)
        self.cls_logits = nn.Conv2d(in_ch, num_classes, 3, padding=1)
        self.bbox_pred = nn.Conv2d(in_ch, 4, 3, padding=1)
        self.centerness = nn.Conv2d(in_ch, 1, 3, padding=1)
        self.scales = nn.ModuleList(Scale() for _ in strides)
        nn.init.constant_(self.cls_logits.bias, -math.log((1 - 0.3) / 0.3))

    def forward(self, features: List[torch.Tensor]):
        logits, regression, centerness, locations = [], [], [], []
        for feat, stride, scale in zip(features, self.strides, self.scales):
            _, _, h, w = feat.shape
            t = self.tower(feat)  # expect: FL203
            logits.append(self.cls_logits(t).flatten(2).transpose(1, 2))
            reg = F.relu(scale(self.bbox_pred(t))) * stride
            regression.append(reg.flatten(2).transpose(1, 2))
            centerness.append(self.centerness(t).flatten(2).transpose(1, 2))
            locations.append(compute_locations(h, w, stride, feat.device))
        return torch.cat(logits, 1), torch.cat(regression, 1), torch.cat(centerness, 1), torch.cat(locations)


def distance2bbox(points, distance):
    x1 = points[:, 0] - distance[:, 0]
    y1 = points[:, 1] - distance[:, 1]
    x2 = points[:, 0] + distance[:, 2]
    y2 = points[:, 1] + distance[:, 3]
    return torch.stack([x1, y1, x2, y2], -1)


def box_iou(boxes1, boxes2):
    area1 = (boxes1[:, 2] - boxes1[:, 0]) * (boxes1[:, 3] - boxes1[:, 1])
    area2 = (boxes2[:, 2] - boxes2[:, 0]) * (boxes2[:, 3] - boxes2[:, 1])
    lt = torch.max(boxes1[:, None, :2], boxes2[:, :2])
    rb = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    return inter / (area1[:, None] + area2 - inter)


def greedy_nms(boxes, scores, iou_threshold: float):
    order = scores.argsort(descending=True)
    keep = []
    while order.numel() > 0:  # expect: FL203
        i = order[0]
        keep.append(i)
        if order.numel() == 1:  # expect: FL203
            break
        ious = box_iou(boxes[i].unsqueeze(0), boxes[order[1:]])[0]  # expect: FL104 GB0033
        order = order[1:][ious <= iou_threshold]
    return torch.stack(keep)


class DetectionPostprocess(nn.Module):
    """Score threshold, pre-NMS top-k, class-aware NMS; single image (batch 1) as deployed."""

    def __init__(self, score_thresh: float = 0.2, nms_thresh: float = 0.5, pre_nms_top_n: int = 12,
                 max_detections: int = 6):
        super().__init__()
        self.score_thresh = score_thresh
        self.nms_thresh = nms_thresh
        self.pre_nms_top_n = pre_nms_top_n
        self.max_detections = max_detections

    def forward(self, logits, regression, centerness, locations):
        scores = torch.sqrt(logits[0].sigmoid() * centerness[0].sigmoid())
        num_classes = scores.shape[1]
        candidates = scores > self.score_thresh
        top_n = min(int(candidates.sum()), self.pre_nms_top_n)  # expect: FL102 GB0124; FL202
        top_scores, flat_idx = scores.flatten().topk(top_n)
        loc_idx = torch.div(flat_idx, num_classes, rounding_mode="floor")
        labels = flat_idx % num_classes
        boxes = distance2bbox(locations[loc_idx], regression[0, loc_idx])
        offset = boxes.max() + 1
        keep = greedy_nms(boxes + (labels * offset)[:, None], top_scores, self.nms_thresh)
        keep = keep[: self.max_detections]
        return boxes[keep], top_scores[keep], labels[keep]


class DeployedDetector(nn.Module):
    def __init__(self, canvas: int = 32, width: int = 8, num_classes: int = 3):
        super().__init__()
        self.letterbox = Letterbox(canvas)
        self.stem = nn.Sequential(QuantConvBNReLU(3, width, 2), QuantConvBNReLU(width, width, 2))
        self.down = QuantConvBNReLU(width, width, 2)
        self.head = FcosHead(width, num_classes, strides=(4, 8))
        self.postprocess = DetectionPostprocess()

    def forward(self, images):
        canvas, offsets, ratio = self.letterbox(images)
        c4 = self.stem(canvas)
        c8 = self.down(c4)
        logits, regression, centerness, locations = self.head([c4, c8])
        boxes, scores, labels = self.postprocess(logits, regression, centerness, locations)
        return undo_letterbox(boxes, offsets, ratio, images), scores, labels


# ----------------------------------------------------------------------------- segmentation

class SegmentationHead(nn.Module):
    """ASPP-lite: dilated branches plus image pooling, upsampled back to the input resolution."""

    def __init__(self, in_ch: int = 8, num_classes: int = 4, rates=(1, 2)):
        super().__init__()
        self.branches = nn.ModuleList(nn.Conv2d(in_ch, in_ch, 3, padding=r, dilation=r) for r in rates)
        self.pool_proj = nn.Conv2d(in_ch, in_ch, 1)
        self.project = nn.Conv2d(in_ch * (len(rates) + 1), in_ch, 1)
        self.classifier = nn.Conv2d(in_ch, num_classes, 1)

    def forward(self, features, image):
        pooled = self.pool_proj(F.adaptive_avg_pool2d(features, 1)).expand_as(features)
        x = torch.cat([branch(features) for branch in self.branches] + [pooled], dim=1)
        logits = self.classifier(F.relu(self.project(x)))
        return F.interpolate(logits, size=image.shape[-2:], mode="bilinear", align_corners=False)


def masks_to_instances(logits, min_area: int = 6):
    """Per-class masks for the app: argmax labels, regions smaller than min_area dropped to background."""
    labels = logits[0].argmax(0)
    kept = []
    for c in range(1, logits.shape[1]):
        region = labels == c
        if region.sum() < min_area:  # expect: FL101 GB0170; FL201
            labels = labels.masked_fill(region, 0)
        else:
            kept.append(region)
    return labels, torch.stack(kept)


class Segmenter(nn.Module):
    def __init__(self, width: int = 8, num_classes: int = 4):
        super().__init__()
        self.preprocess = ImagePreprocessor((16, 16))
        self.backbone = nn.Sequential(QuantConvBNReLU(3, width, 2), SqueezeExcite(width))
        self.head = SegmentationHead(width, num_classes)

    def forward(self, frames):
        image = self.preprocess(frames)
        return self.head(self.backbone(image), image)


@torch.compile
def segment_for_display(logits, palette):
    labels, masks = masks_to_instances(logits)
    logger.debug("segment_for_display: %d instance masks", masks.shape[0])  # expect: FL111 GB0291
    return palette[labels], masks.sum((1, 2))


# ----------------------------------------------------------------------------- text classifiers

class ByteCNNClassifier(nn.Module):
    """Tokenizer-free classifier over UTF-8 bytes (256 = padding)."""

    def __init__(self, num_classes: int = 3, dim: int = 16, widths=(2, 3, 4), channels: int = 8):
        super().__init__()
        self.embed = nn.Embedding(257, dim, padding_idx=256)
        self.convs = nn.ModuleList(nn.Conv1d(dim, channels, k) for k in widths)
        self.dropout = nn.Dropout(0.1)
        self.fc = nn.Linear(channels * len(widths), num_classes)

    def forward(self, byte_ids):
        x = self.embed(byte_ids).transpose(1, 2)  # expect: FL203
        pooled = [F.relu(conv(x)).amax(-1) for conv in self.convs]
        return self.fc(self.dropout(torch.cat(pooled, 1)))


class HashedNgramClassifier(nn.Module):
    """fastText-style: hashed byte bigrams averaged in an EmbeddingBag; padded rows plus lengths."""

    def __init__(self, buckets: int = 64, dim: int = 8, num_classes: int = 3):
        super().__init__()
        self.buckets = buckets
        self.bag = nn.EmbeddingBag(buckets, dim, mode="mean")
        self.fc = nn.Linear(dim, num_classes)

    def forward(self, byte_ids, lengths):
        grams = (byte_ids[:, :-1] * 257 + byte_ids[:, 1:]) % self.buckets
        flat = torch.cat([row[: n - 1] for row, n in zip(grams, lengths.tolist())])  # expect: FL104 GB0033; FL202
        offsets = torch.cat([lengths.new_zeros(1), (lengths - 1).cumsum(0)[:-1]])
        return self.fc(self.bag(flat, offsets))


def encode_texts(texts: List[str], max_len: int = 12):
    """Host-side: strings to padded byte ids (not part of the traced program)."""
    rows = [list(t.encode("utf-8")[:max_len]) for t in texts]
    width = max(len(r) for r in rows)
    return torch.tensor([r + [256] * (width - len(r)) for r in rows]), torch.tensor([len(r) for r in rows])


class ExportWrapper(nn.Module):
    """What is handed to the converter: softmax and top-k folded into the graph."""

    def __init__(self, model: nn.Module, top_k: int = 5):
        super().__init__()
        self.model = model
        self.top_k = top_k

    def forward(self, byte_ids):
        print(f"[export] tracing {type(self.model).__name__} (top_k={self.top_k})")  # expect: FL110 GB0059; FL204
        logits = self.model(byte_ids)
        k = min(self.top_k, logits.shape[-1])  # expect: FL203
        probs, classes = logits.softmax(-1).topk(k)
        return probs, classes


def calibrated_probs(logits, temperature):
    t = float(temperature)  # expect: FL102 GB0124; FL202
    logger.info("temperature scaling with T=%.3f", t)  # expect: FL111 GB0291; FL204
    return (logits / t).softmax(-1)


calibrated = torch.compile(calibrated_probs)


def scores_to_onnx_layout(boxes, scores, labels, max_detections: int = 6):
    """Fixed-size outputs (padded with -1) as the ONNX runtime consumer expects them."""
    out = boxes.new_full((max_detections, 6), -1.0)
    n = boxes.shape[0]
    out[:n, :4] = boxes
    out[:n, 4] = scores
    out[:n, 5] = labels.to(boxes.dtype)
    return out


# ----------------------------------------------------------------------------- export script

def export_all(out_dir: str = "deploy"):
    os.makedirs(out_dir, exist_ok=True)
    frames = torch.randint(0, 255, (1, 24, 40, 3), dtype=torch.uint8)
    images = torch.rand(1, 3, 24, 40)
    feats = [torch.randn(1, 8, 8, 8), torch.randn(1, 8, 4, 4)]
    head_out = FcosHead()(feats)
    byte_ids, lengths = encode_texts(["hello world", "bonjour", "hallo welt!"])
    programs = {
        "preprocess": torch.jit.trace(ImagePreprocessor(), frames),
        "letterbox": torch.jit.trace(Letterbox(), images),
        "stem": torch.jit.trace(QuantConvBNReLU(3, 8, 2), images),
        "se": torch.jit.trace(SqueezeExcite(8), torch.randn(1, 8, 6, 6)),
        "fakequant": torch.jit.trace(DynamicFakeQuant(), images),
        "fcos_head": torch.jit.trace(FcosHead(), (feats,)),
        "postprocess": torch.jit.trace(DetectionPostprocess(), head_out),
        "seg_head": torch.jit.trace(SegmentationHead(), (feats[0], images)),
        "instances": torch.jit.trace(masks_to_instances, torch.randn(1, 4, 16, 16)),
        "byte_cnn": torch.jit.trace(ByteCNNClassifier(), byte_ids),
        "ngram": torch.jit.trace(HashedNgramClassifier(), (byte_ids, lengths)),
        "classifier": torch.jit.trace(ExportWrapper(ByteCNNClassifier().eval()), byte_ids),
        "calibrate": torch.jit.trace(calibrated_probs, (torch.randn(3, 3), torch.tensor(1.5))),
        "onnx_layout": torch.jit.trace(scores_to_onnx_layout, (torch.rand(2, 4), torch.rand(2), torch.tensor([0, 2]))),
        "undo_letterbox": torch.jit.trace(undo_letterbox, (torch.rand(2, 4) * 32, torch.zeros(4), torch.tensor(0.8), images)),
    }
    for name, program in programs.items():
        program.save(os.path.join(out_dir, f"{name}.pt"))


def _segmentation_logits():
    logits = torch.zeros(1, 4, 16, 16)
    logits[:, 1, :8] = 4.0
    logits[:, 2, 10:12, 10:12] = 5.0
    logits[:, 3, 12:, :] = 3.0
    return logits


_BYTES = torch.tensor([[104, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100],
                       [98, 111, 110, 106, 111, 117, 114, 256, 256, 256, 256],
                       [104, 97, 108, 108, 111, 32, 119, 101, 108, 116, 33]])
_LENGTHS = torch.tensor([11, 7, 11])

CASES = {
    "DeployedDetector": lambda: (DeployedDetector().eval(), (torch.rand(1, 3, 24, 40),)),
    "Segmenter": lambda: (Segmenter().eval(), (torch.randint(0, 255, (1, 20, 28, 3), dtype=torch.uint8),)),
    "segment_for_display": lambda: (segment_for_display, (_segmentation_logits(), torch.rand(4, 3))),
    "ExportWrapper": lambda: (ExportWrapper(ByteCNNClassifier().eval()), (_BYTES,)),
    "HashedNgramClassifier": lambda: (HashedNgramClassifier(), (_BYTES, _LENGTHS)),
    "DynamicFakeQuant": lambda: (DynamicFakeQuant(), (torch.randn(2, 8),)),
    "calibrated": lambda: (calibrated, (torch.randn(3, 3), torch.tensor(1.5))),
}

TRACED = {
    "ImagePreprocessor": lambda: (ImagePreprocessor(), (torch.randint(0, 255, (1, 24, 40, 3), dtype=torch.uint8),)),
    "Letterbox": lambda: (Letterbox(), (torch.rand(1, 3, 24, 40),)),
    "QuantConvBNReLU": lambda: (QuantConvBNReLU(3, 8, 2).eval(), (torch.rand(1, 3, 16, 16),)),
    "SqueezeExcite": lambda: (SqueezeExcite(8), (torch.randn(1, 8, 6, 6),)),
    "DynamicFakeQuant": lambda: (DynamicFakeQuant(), (torch.randn(2, 8),)),
    "FcosHead": lambda: (FcosHead(), ([torch.randn(1, 8, 8, 8), torch.randn(1, 8, 4, 4)],)),
    "DetectionPostprocess": lambda: (DetectionPostprocess(), FcosHead()([torch.randn(1, 8, 8, 8), torch.randn(1, 8, 4, 4)])),
    "SegmentationHead": lambda: (SegmentationHead(), (torch.randn(1, 8, 8, 8), torch.rand(1, 3, 16, 16))),
    "masks_to_instances": lambda: (masks_to_instances, (_segmentation_logits(),)),
    "ByteCNNClassifier": lambda: (ByteCNNClassifier().eval(), (_BYTES,)),
    "HashedNgramClassifier": lambda: (HashedNgramClassifier(), (_BYTES, _LENGTHS)),
    "ExportWrapper": lambda: (ExportWrapper(ByteCNNClassifier().eval()), (_BYTES,)),
    "calibrated_probs": lambda: (calibrated_probs, (torch.randn(3, 3), torch.tensor(1.5))),
    "scores_to_onnx_layout": lambda: (scores_to_onnx_layout, (torch.rand(2, 4), torch.rand(2), torch.tensor([0, 2]))),
    "undo_letterbox": lambda: (undo_letterbox, (torch.rand(2, 4) * 32, torch.zeros(4), torch.tensor(0.8), torch.rand(1, 3, 24, 40))),
}
