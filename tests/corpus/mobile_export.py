"""Models prepared for mobile/edge export with torch.jit.trace: MobileNetV3 and EfficientNet-lite
blocks (squeeze-excitation, channel rounding, TF-style "same" padding), a pose network with heatmap
decoding, a CRNN text-line recognizer with CTC greedy decoding, camera pre/post-processing
wrappers and a tokenizer-free on-device text scorer."""
import logging
import math
import warnings
from typing import List, Optional, Sequence

import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("mobile_export")

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


# ----------------------------------------------------------------------------- channel rounding

def make_divisible(v: float, divisor: int = 8, min_value: Optional[int] = None) -> int:
    """Channel rounding from the MobileNet reference code: multiple of `divisor`, never below 90%."""
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def round_filters(filters: int, width_mult: float, divisor: int = 8) -> int:
    return make_divisible(filters * width_mult, divisor)


def round_repeats(repeats: int, depth_mult: float) -> int:
    return int(math.ceil(depth_mult * repeats))


# ----------------------------------------------------------------------------- MobileNetV3

class ConvBNAct(nn.Sequential):
    def __init__(self, cin: int, cout: int, k: int = 3, stride: int = 1, groups: int = 1, act=nn.ReLU):
        super().__init__(
            nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
            nn.BatchNorm2d(cout),
            act(inplace=True) if act is not None else nn.Identity(),
        )


class SqueezeExcitation(nn.Module):
    def __init__(self, channels: int, squeeze_factor: int = 4):
        super().__init__()
        squeeze = make_divisible(channels // squeeze_factor, 8)
        self.fc1 = nn.Conv2d(channels, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, channels, 1)

    def forward(self, x):
        scale = F.adaptive_avg_pool2d(x, 1)
        scale = F.hardsigmoid(self.fc2(F.relu(self.fc1(scale))))
        return x * scale


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, expand: int, cout: int, k: int, use_se: bool, use_hs: bool, stride: int):
        super().__init__()
        self.use_res_connect = stride == 1 and cin == cout
        act = nn.Hardswish if use_hs else nn.ReLU
        layers: List[nn.Module] = []
        if expand != cin:
            layers.append(ConvBNAct(cin, expand, 1, act=act))
        layers.append(ConvBNAct(expand, expand, k, stride, groups=expand, act=act))
        if use_se:
            layers.append(SqueezeExcitation(expand))
        layers.append(ConvBNAct(expand, cout, 1, act=None))
        self.block = nn.Sequential(*layers)

    def forward(self, x):
        out = self.block(x)
        if self.use_res_connect:
            out = out + x
        return out


# (kernel, expanded, out, SE, hardswish, stride) -- a shortened MobileNetV3-Small table
V3_SMALL = [
    (3, 16, 16, True, False, 2),
    (3, 72, 24, False, False, 2),
    (3, 88, 24, False, False, 1),
    (5, 96, 40, True, True, 2),
]


class MobileNetV3(nn.Module):
    def __init__(self, num_classes: int = 10, width_mult: float = 0.5, last_channel: int = 64):
        super().__init__()
        cin = make_divisible(16 * width_mult)
        layers: List[nn.Module] = [ConvBNAct(3, cin, 3, 2, act=nn.Hardswish)]
        for k, exp, out, se, hs, s in V3_SMALL:
            cout = make_divisible(out * width_mult)
            layers.append(InvertedResidual(cin, make_divisible(exp * width_mult), cout, k, se, hs, s))
            cin = cout
        layers.append(ConvBNAct(cin, 6 * cin, 1, act=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.out_channels = 6 * cin
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(
            nn.Linear(6 * cin, last_channel), nn.Hardswish(inplace=True), nn.Dropout(0.2),
            nn.Linear(last_channel, num_classes),
        )

    def forward(self, x):
        x = self.avgpool(self.features(x)).flatten(1)
        return self.classifier(x)


def channel_shuffle(x, groups: int = 2):
    """ShuffleNet channel shuffle; the view sizes stay traced."""
    b, c, h, w = x.size()
    x = x.view(b, groups, c // groups, h, w).transpose(1, 2).contiguous()
    return x.view(b, -1, h, w)


# ----------------------------------------------------------------------------- EfficientNet-lite (TF weights)

def get_same_padding(size: int, k: int, s: int, d: int) -> int:
    return max((math.ceil(size / s) - 1) * s + (k - 1) * d + 1 - size, 0)  # expect: FL203


def pad_same(x, kernel: Sequence[int], stride: Sequence[int], dilation: Sequence[int] = (1, 1), value: float = 0.0):
    ih, iw = x.size()[-2:]
    pad_h = get_same_padding(ih, kernel[0], stride[0], dilation[0])
    pad_w = get_same_padding(iw, kernel[1], stride[1], dilation[1])
    if pad_h > 0 or pad_w > 0:  # expect: FL203
        x = F.pad(x, [pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2], value=value)
    return x


class Conv2dSame(nn.Conv2d):
    """TensorFlow 'SAME' padding, computed from the input size on every call (ported checkpoints)."""

    def forward(self, x):
        x = pad_same(x, self.kernel_size, self.stride, self.dilation)
        return F.conv2d(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)


def drop_path(x, drop_prob: float = 0.0, training: bool = False):
    if drop_prob == 0.0 or not training:
        return x
    keep_prob = 1 - drop_prob
    mask = x.new_empty((x.shape[0],) + (1,) * (x.ndim - 1)).bernoulli_(keep_prob)
    return x * mask / keep_prob


class MBConv(nn.Module):
    def __init__(self, cin: int, cout: int, k: int, stride: int, expand_ratio: int, se_ratio: float = 0.25,
                 drop_path_rate: float = 0.1):
        super().__init__()
        mid = cin * expand_ratio
        self.has_skip = stride == 1 and cin == cout
        self.drop_path_rate = drop_path_rate
        self.expand = ConvBNAct(cin, mid, 1, act=nn.SiLU) if expand_ratio != 1 else nn.Identity()
        self.dw = Conv2dSame(mid, mid, k, stride, groups=mid, bias=False)
        self.bn = nn.BatchNorm2d(mid)
        squeeze = max(1, int(cin * se_ratio))
        self.se_reduce = nn.Conv2d(mid, squeeze, 1)
        self.se_expand = nn.Conv2d(squeeze, mid, 1)
        self.project = ConvBNAct(mid, cout, 1, act=None)

    def forward(self, x):
        h = self.expand(x)
        h = F.silu(self.bn(self.dw(h)))
        s = h.mean((2, 3), keepdim=True)
        h = h * torch.sigmoid(self.se_expand(F.silu(self.se_reduce(s))))
        h = self.project(h)
        if self.has_skip:
            h = drop_path(h, self.drop_path_rate, self.training) + x
        return h


class EfficientNetLite(nn.Module):
    def __init__(self, num_classes: int = 10, width_mult: float = 0.25, depth_mult: float = 1.0):
        super().__init__()
        stem = round_filters(32, width_mult)
        self.stem = nn.Sequential(Conv2dSame(3, stem, 3, 2, bias=False), nn.BatchNorm2d(stem), nn.ReLU6())
        blocks, cin = [], stem
        for repeats, k, stride, ratio, out in [(1, 3, 1, 1, 16), (2, 3, 2, 6, 24)]:
            cout = round_filters(out, width_mult)
            for i in range(round_repeats(repeats, depth_mult)):
                blocks.append(MBConv(cin, cout, k, stride if i == 0 else 1, ratio))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(cin, num_classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.head(x.mean((2, 3)))


# ----------------------------------------------------------------------------- pose estimation

class HeatmapHead(nn.Module):
    """SimpleBaseline-style head: two stride-2 deconvolutions and a 1x1 projection to K heatmaps."""

    def __init__(self, cin: int, num_keypoints: int = 3, width: int = 16):
        super().__init__()
        layers: List[nn.Module] = []
        for _ in range(2):
            layers += [nn.ConvTranspose2d(cin, width, 4, 2, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True)]
            cin = width
        self.deconv = nn.Sequential(*layers)
        self.final = nn.Conv2d(width, num_keypoints, 1)

    def forward(self, x):
        return self.final(self.deconv(x))


def get_max_preds(heatmaps):
    """(x, y) of each heatmap's argmax; keypoints with a non-positive peak are zeroed."""
    n, k, h, w = heatmaps.shape
    maxvals, idx = heatmaps.reshape(n, k, -1).max(dim=2)
    coords = torch.stack([idx % w, torch.div(idx, w, rounding_mode="floor")], dim=-1).float()
    coords = coords * (maxvals.unsqueeze(-1) > 0)
    return coords, maxvals


def refine_quarter_offset(coords, heatmaps):
    """HRNet post-processing: move each peak a quarter pixel towards the higher neighbour."""
    n, k, h, w = heatmaps.shape
    coords = coords.clone()
    for i in range(n):
        for j in range(k):
            hm = heatmaps[i, j]
            px, py = int(coords[i, j, 0] + 0.5), int(coords[i, j, 1] + 0.5)  # expect: FL000 GB0124; FL202
            if 1 < px < w - 1 and 1 < py < h - 1:  # expect: FL203
                diff = torch.stack([hm[py, px + 1] - hm[py, px - 1], hm[py + 1, px] - hm[py - 1, px]])
                coords[i, j] += torch.sign(diff) * 0.25
    return coords


class PoseEstimator(nn.Module):
    """MobileNetV3 features + heatmap head; keypoints in input-image pixels."""

    def __init__(self, num_keypoints: int = 3):
        super().__init__()
        backbone = MobileNetV3(width_mult=0.5)
        self.features = backbone.features[:3]
        self.head = HeatmapHead(make_divisible(24 * 0.5), num_keypoints)

    def forward(self, image):
        if image.shape[-1] % 32 != 0:  # expect: FL203
            warnings.warn("pose input width is not a multiple of 32; heatmaps will be cropped")  # expect: FL000 GB0007; FL204
        heatmaps = self.head(self.features(image))
        coords, maxvals = get_max_preds(heatmaps)
        stride = image.shape[-1] / heatmaps.shape[-1]
        return coords * stride, maxvals


def keypoints_to_boxes(coords, maxvals, score_thresh: float = 0.1, margin: float = 4.0):
    """Tight boxes around the confident keypoints of each person; all-NaN for nobody."""
    visible = (maxvals > score_thresh).unsqueeze(-1)
    big = torch.finfo(coords.dtype).max
    lo = torch.where(visible, coords, torch.full_like(coords, big)).amin(1)
    hi = torch.where(visible, coords, torch.full_like(coords, -big)).amax(1)
    boxes = torch.cat([lo - margin, hi + margin], dim=-1)
    return torch.where(visible.any(1), boxes, torch.full_like(boxes, float("nan")))


# ----------------------------------------------------------------------------- OCR: CRNN + CTC

class CRNN(nn.Module):
    def __init__(self, num_classes: int = 11, hidden: int = 16):
        super().__init__()
        self.cnn = nn.Sequential(
            nn.Conv2d(1, 8, 3, 1, 1), nn.ReLU(inplace=True), nn.MaxPool2d(2, 2),
            nn.Conv2d(8, 16, 3, 1, 1), nn.ReLU(inplace=True), nn.MaxPool2d((2, 1), (2, 1)),
            nn.Conv2d(16, 16, 3, 1, 1), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d((1, None)),
        )
        self.rnn = nn.LSTM(16, hidden, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, num_classes)

    def forward(self, images):
        conv = self.cnn(images)
        b, c, h, w = conv.size()
        assert h == 1, "the height of conv must be 1"
        seq = conv.squeeze(2).permute(2, 0, 1)
        out, _ = self.rnn(seq)  # expect: FL000 GB0014
        return self.fc(out).log_softmax(-1)


class ConvRecognizer(nn.Module):
    """RNN-free variant for NNAPI/CoreML: 1-D convolutions over the column sequence."""

    def __init__(self, num_classes: int = 11, width: int = 16):
        super().__init__()
        self.cnn = nn.Sequential(
            nn.Conv2d(1, width, 3, 1, 1), nn.ReLU(inplace=True), nn.MaxPool2d((4, 2), (4, 2)),
            nn.Conv2d(width, width, 3, 1, 1), nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((1, None)),
        )
        self.seq = nn.Conv1d(width, width, 3, padding=1)
        self.fc = nn.Conv1d(width, num_classes, 1)

    def forward(self, images):
        feats = self.cnn(images)
        b, c, h, w = feats.size()
        assert h == 1, "the height of conv must be 1"  # expect: FL203
        feats = feats.squeeze(2)
        return self.fc(F.relu(self.seq(feats))).permute(2, 0, 1).log_softmax(-1)


def ctc_collapse(log_probs, blank: int = 0):
    """Fixed-shape greedy CTC: best path per column and a mask of the characters it emits."""
    best = log_probs.argmax(-1)
    prev = F.pad(best, (0, 0, 1, 0), value=blank)[:-1]
    keep = (best != blank) & (best != prev)
    return best.transpose(0, 1), keep.transpose(0, 1)


def ctc_greedy_decode(log_probs, blank: int = 0, pad: int = -1):
    """Greedy CTC as in the reference scripts: collapse repeats, drop blanks, pad to the longest line."""
    best = log_probs.argmax(-1).transpose(0, 1)
    lines = []
    for path in best.tolist():  # expect: FL202
        chars, prev = [], blank
        for c in path:
            if c != prev and c != blank:
                chars.append(c)
            prev = c
        lines.append(chars)
    width = max(1, max(len(chars) for chars in lines))
    return torch.tensor([chars + [pad] * (width - len(chars)) for chars in lines])


class TextLineReader(nn.Module):
    """Recognizer + confidence gate: low-confidence lines come back empty instead of as garbage."""

    def __init__(self, recognizer: nn.Module, min_confidence: float = 0.05, blank: int = 0):
        super().__init__()
        self.recognizer = recognizer
        self.min_confidence = min_confidence
        self.blank = blank

    def forward(self, images):
        log_probs = self.recognizer(images)
        best, keep = ctc_collapse(log_probs, self.blank)
        confidence = log_probs.max(-1).values.exp().mean()
        if confidence < self.min_confidence:  # expect: FL000 GB0170; FL201
            logger.info("rejecting text line (confidence %.3f)", float(confidence))  # expect: FL000 GB0124; FL000 GB0291; FL202; FL204
            keep = torch.zeros_like(keep)
        return best, keep, confidence


# ----------------------------------------------------------------------------- camera pre/post-processing

class CameraPreprocess(nn.Module):
    """HWC camera frame (uint8 or [0, 1] float) -> normalized NCHW center crop at the model size."""

    def __init__(self, size: int = 32):
        super().__init__()
        self.size = size
        self.register_buffer("mean", torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor(IMAGENET_STD).view(1, 3, 1, 1))

    def forward(self, frame):
        x = frame.permute(2, 0, 1).unsqueeze(0).float()
        if x.max() > 1.0:  # expect: FL000 GB0170; FL201
            x = x / 255.0
        h, w = x.shape[-2:]
        side = min(h, w)  # expect: FL203
        top, left = (h - side) // 2, (w - side) // 2
        x = x[..., top:top + side, left:left + side]
        x = F.interpolate(x, size=(self.size, self.size), mode="bilinear", align_corners=False)
        return (x - self.mean) / self.std


class FixedPreprocess(nn.Module):
    """Export-friendly version: resize straight to the model size, scaling fixed to uint8 input."""

    def __init__(self, size: int = 32):
        super().__init__()
        self.size = size
        self.register_buffer("scale", 1.0 / (255.0 * torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)))
        self.register_buffer("shift", -torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1) / torch.tensor(IMAGENET_STD).view(1, 3, 1, 1))

    def forward(self, frame):
        x = frame.permute(2, 0, 1).unsqueeze(0).float()
        x = F.interpolate(x, size=(self.size, self.size), mode="bilinear", align_corners=False)
        return x * self.scale + self.shift


class ClassifierExport(nn.Module):
    """What ships in the app bundle: preprocessing, the backbone, calibrated top-k."""

    def __init__(self, backbone: nn.Module, top_k: int = 5):
        super().__init__()
        self.preprocess = FixedPreprocess()
        self.backbone = backbone
        self.top_k = top_k
        self.register_buffer("temperature", torch.tensor(1.7))

    def forward(self, frame):
        logits = self.backbone(self.preprocess(frame))
        probs = (logits / self.temperature.item()).softmax(-1)  # expect: FL000 GB0124; FL202
        k = min(self.top_k, probs.shape[-1])  # expect: FL203
        scores, classes = probs.topk(k, dim=-1)
        return scores, classes


def blend_segmentation(frame, mask_logits, color, alpha: float = 0.5):
    """Overlay the foreground mask on the camera frame for the preview (all tensor math)."""
    mask = F.interpolate(mask_logits, size=frame.shape[:2], mode="bilinear", align_corners=False)
    mask = torch.sigmoid(mask)[0, 0].unsqueeze(-1)
    overlay = frame.float() * (1 - alpha * mask) + color * (alpha * mask)
    return overlay.clamp(0, 255).to(torch.uint8)


# ----------------------------------------------------------------------------- on-device text scoring

class ByteScorer(nn.Module):
    """Tokenizer-free scorer (spam/toxicity) over UTF-8 bytes; masked mean pooling by length."""

    def __init__(self, dim: int = 16, channels: int = 16):
        super().__init__()
        self.embed = nn.Embedding(257, dim)
        self.conv = nn.Conv1d(dim, channels, 3, padding=1)
        self.fc = nn.Linear(channels, 1)

    def forward(self, byte_ids, lengths):
        mask = torch.arange(byte_ids.shape[1], device=byte_ids.device)[None, :] < lengths[:, None]
        h = F.relu(self.conv(self.embed(byte_ids).transpose(1, 2))).transpose(1, 2)
        pooled = (h * mask.unsqueeze(-1)).sum(1) / lengths.clamp(min=1).unsqueeze(-1)
        return torch.sigmoid(self.fc(pooled)).squeeze(-1)


class NgramHashScorer(nn.Module):
    """Hashed byte n-grams; the padded batch is trimmed to its longest row first."""

    def __init__(self, ngram_sizes: Sequence[int] = (2, 3, 5), buckets: int = 97, dim: int = 8):
        super().__init__()
        self.ngram_sizes = tuple(ngram_sizes)
        self.buckets = buckets
        self.embed = nn.Embedding(buckets, dim)
        self.fc = nn.Linear(dim, 1)
        self.register_buffer("mult", torch.tensor([1, 31, 961, 29791, 923521]))

    def forward(self, byte_ids, lengths):
        logger.debug("scoring hashed n-grams (%d buckets)", self.buckets)  # expect: FL000 GB0291; FL204
        max_len = int(lengths.max())  # expect: FL000 GB0124; FL202
        byte_ids = byte_ids[:, :max_len]
        feats = []
        for n in self.ngram_sizes:
            if byte_ids.shape[1] < n:  # expect: FL203
                continue
            grams = byte_ids.unfold(1, n, 1)
            feats.append(self.embed((grams * self.mult[:n]).sum(-1) % self.buckets).mean(1))
        return self.fc(torch.stack(feats).sum(0)).squeeze(-1)


# ----------------------------------------------------------------------------- compiled app paths

@torch.compile
def decode_pose(heatmaps, image_width: int):
    coords, maxvals = get_max_preds(heatmaps)
    coords = refine_quarter_offset(coords, heatmaps)
    return coords * (image_width / heatmaps.shape[-1]), maxvals


class OnDeviceSuite(nn.Module):
    """Everything the app runs per frame, for the compile-time budget check."""

    def __init__(self):
        super().__init__()
        self.classifier = ClassifierExport(MobileNetV3())
        self.camera = CameraPreprocess()
        self.scorer = ByteScorer()
        self.ngram = NgramHashScorer()

    def forward(self, frame, byte_ids, lengths):
        scores, classes = self.classifier(frame)
        image = self.camera(frame)
        spam = self.scorer(byte_ids, lengths) + self.ngram(byte_ids, lengths)
        return scores, classes, image.mean(), spam


# ----------------------------------------------------------------------------- export script

def export_all():
    frame = torch.randint(0, 255, (24, 40, 3), dtype=torch.uint8)
    image = torch.rand(1, 3, 32, 40)
    byte_ids, lengths = _BYTES, _LENGTHS
    return {
        "mobilenet_v3": torch.jit.trace(MobileNetV3().eval(), image),
        "shuffle": torch.jit.trace(channel_shuffle, torch.rand(1, 8, 4, 4)),
        "effnet_lite": torch.jit.trace(EfficientNetLite().eval(), image),
        "pose": torch.jit.trace(PoseEstimator().eval(), image),
        "refine": torch.jit.trace(refine_quarter_offset, (torch.rand(1, 3, 2) * 6, torch.rand(1, 3, 8, 10))),
        "kp_boxes": torch.jit.trace(keypoints_to_boxes, (torch.rand(2, 3, 2), torch.rand(2, 3))),
        "ctc_collapse": torch.jit.trace(ctc_collapse, torch.randn(10, 2, 11).log_softmax(-1)),
        "ctc_decode": torch.jit.trace(ctc_greedy_decode, torch.randn(10, 2, 11).log_softmax(-1)),
        "reader": torch.jit.trace(TextLineReader(ConvRecognizer()).eval(), torch.rand(1, 1, 16, 40)),
        "camera": torch.jit.trace(CameraPreprocess(), frame),
        "classifier": torch.jit.trace(ClassifierExport(MobileNetV3().eval()), frame),
        "blend": torch.jit.trace(blend_segmentation, (frame, torch.randn(1, 1, 6, 10), torch.tensor([0.0, 255.0, 0.0]))),
        "byte_scorer": torch.jit.trace(ByteScorer(), (byte_ids, lengths)),
        "ngram_scorer": torch.jit.trace(NgramHashScorer(), (_SHORT, _SHORT_LENGTHS)),
    }


_BYTES = torch.tensor([[104, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100],
                       [98, 111, 110, 106, 111, 117, 114, 256, 256, 256, 256],
                       [104, 97, 108, 108, 111, 32, 119, 101, 108, 116, 256]])
_LENGTHS = torch.tensor([11, 7, 10])
_SHORT = torch.tensor([[111, 107, 256, 256, 256, 256, 256, 256],
                       [104, 101, 121, 33, 256, 256, 256, 256],
                       [110, 111, 256, 256, 256, 256, 256, 256]])
_SHORT_LENGTHS = torch.tensor([2, 4, 2])


def _frame():
    g = torch.Generator().manual_seed(1)
    return torch.randint(0, 255, (24, 40, 3), dtype=torch.uint8, generator=g)


def _heatmaps():
    hm = torch.zeros(1, 3, 8, 10)
    hm[0, 0, 3, 4], hm[0, 0, 3, 5] = 1.0, 0.6
    hm[0, 1, 5, 2], hm[0, 1, 4, 2] = 0.9, 0.7
    hm[0, 2, 0, 9] = 0.8
    return hm


def _log_probs():
    return torch.randn(10, 2, 11, generator=torch.Generator().manual_seed(2)).log_softmax(-1)


CASES = {
    "OnDeviceSuite": lambda: (OnDeviceSuite().eval(), (_frame(), _SHORT, _SHORT_LENGTHS)),
    "EfficientNetLite_train": lambda: (EfficientNetLite().train(), (torch.rand(2, 3, 30, 40),)),
    "PoseEstimator": lambda: (PoseEstimator().eval(), (torch.rand(1, 3, 32, 40),)),
    "TextLineReader": lambda: (TextLineReader(CRNN()).eval(), (torch.rand(1, 1, 16, 40),)),
    "ConvReader": lambda: (TextLineReader(ConvRecognizer(), min_confidence=0.9).eval(), (torch.rand(1, 1, 16, 40),)),
    "decode_pose": lambda: (decode_pose, (_heatmaps(), 40)),
}

TRACED = {
    "MobileNetV3": lambda: (MobileNetV3().eval(), (torch.rand(1, 3, 32, 40),)),
    "channel_shuffle": lambda: (channel_shuffle, (torch.rand(1, 8, 4, 4),)),
    "EfficientNetLite": lambda: (EfficientNetLite().eval(), (torch.rand(1, 3, 30, 40),)),
    "PoseEstimator": lambda: (PoseEstimator().eval(), (torch.rand(1, 3, 32, 40),)),
    "refine_quarter_offset": lambda: (refine_quarter_offset, (get_max_preds(_heatmaps())[0], _heatmaps())),
    "keypoints_to_boxes": lambda: (keypoints_to_boxes, get_max_preds(_heatmaps())),
    "ctc_collapse": lambda: (ctc_collapse, (_log_probs(),)),
    "ctc_greedy_decode": lambda: (ctc_greedy_decode, (_log_probs(),)),
    "TextLineReader": lambda: (TextLineReader(ConvRecognizer(), min_confidence=0.9).eval(), (torch.rand(1, 1, 16, 40),)),
    "CameraPreprocess": lambda: (CameraPreprocess(), (_frame(),)),
    "ClassifierExport": lambda: (ClassifierExport(MobileNetV3().eval()), (_frame(),)),
    "blend_segmentation": lambda: (blend_segmentation, (_frame(), torch.randn(1, 1, 6, 10), torch.tensor([0.0, 255.0, 0.0]))),
    "ByteScorer": lambda: (ByteScorer(), (_BYTES, _LENGTHS)),
    "NgramHashScorer": lambda: (NgramHashScorer(), (_SHORT, _SHORT_LENGTHS)),
}
