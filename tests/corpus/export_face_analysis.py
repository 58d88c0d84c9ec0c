"""Face analysis for the access-control box (torch.jit.trace / torch.export): RetinaFace-lite detector with
prior boxes, box/landmark decoding and NMS, 5-point similarity alignment, a MobileFaceNet-style embedder,
ArcFace / CurricularFace / SphereFace heads, MagFace-style quality, letterbox and input normalisation."""
import itertools
import logging
import math
from dataclasses import dataclass, replace
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

logger = logging.getLogger("face_deploy")
logger.addHandler(logging.NullHandler())

BGR_MEAN = (104.0, 117.0, 123.0)  # RetinaFace was trained on caffe-style BGR, mean-subtracted
ARCFACE_MEAN, ARCFACE_STD = 127.5, 128.0
# insightface `arcface_dst`: left eye, right eye, nose tip, left / right mouth corner on a 112x112 crop
ARCFACE_DST = np.array([[38.2946, 51.6963], [73.5318, 51.5014], [56.0252, 71.7366],
                        [41.5493, 92.3655], [70.7299, 92.2041]], dtype=np.float32)
EMBED_DIM = 16
VERIFY_THRESHOLD = 0.35
UNKNOWN = "<unknown>"
AUTO_RANGE = True  # accept [0, 1] tensors from torchvision-style loaders as well as 0..255
MAGFACE_RANGE = (10.0, 110.0)  # l_a, u_a of the MagFace magnitude prior
EPS = 1e-6

ACTS: Dict[str, Callable[[int], nn.Module]] = {
    "prelu": nn.PReLU,
    "leaky": lambda c: nn.LeakyReLU(0.1, inplace=True),
}

@dataclass
class DetectorConfig:
    min_sizes: Tuple[Tuple[int, ...], ...] = ((4, 8), (12, 16), (24, 32))
    steps: Tuple[int, ...] = (4, 8, 16)
    variance: Tuple[float, float] = (0.1, 0.2)
    clip: bool = False
    channels: Tuple[int, ...] = (8, 12, 16)
    out_channel: int = 8
    conf_threshold: float = 0.02
    nms_threshold: float = 0.4
    top_k: int = 50
    keep_top_k: int = 10
    @property
    def num_anchors(self) -> int:
        return len(self.min_sizes[0])

CFG_MNET = DetectorConfig()
CONFIGS = {"mobilenet0.25": CFG_MNET, "mobilenet0.25_clip": replace(CFG_MNET, clip=True, top_k=20)}

# ----------------------------------------------------------------------------- input helpers
def _rescale_if_unit_range(img: Tensor) -> Tensor:
    if img.max() <= 1.0:  # PIL/torchvision pipelines hand over [0, 1]  # expect: FL000 GB0170; FL201
        img = img * 255.0
    return img

NORMALIZERS: Dict[str, Callable[[Tensor], Tensor]] = {
    "bgr255": lambda x: x - x.new_tensor(BGR_MEAN).view(1, 3, 1, 1),
    "rgb255": lambda x: x.flip(1) - x.new_tensor(BGR_MEAN).view(1, 3, 1, 1),
    "arcface": lambda x: (x - ARCFACE_MEAN) / ARCFACE_STD,
}

def normalize_input(img: Tensor, fmt: str = "bgr255", auto_range: bool = AUTO_RANGE) -> Tensor:
    img = img.float() if img.dtype == torch.uint8 else img
    if auto_range:
        img = _rescale_if_unit_range(img)
    try:
        fn = NORMALIZERS[fmt]
    except KeyError:
        raise ValueError(f"unknown input format {fmt!r}, expected one of {sorted(NORMALIZERS)}")
    return fn(img)

@torch.compile(dynamic=True)
def letterbox(img: Tensor, size: int = 24, fill: float = 0.0) -> Tuple[Tensor, Tensor]:  # never upscales
    h, w = img.shape[-2:]
    scale = 1.0
    if max(h, w) > size:  # expect: FL203; FL301
        scale = size / max(h, w)  # expect: FL203
        nh, nw = int(h * scale), int(w * scale)  # expect: FL203
        img = F.interpolate(img, size=(nh, nw), mode="bilinear", align_corners=False)
    nh, nw = img.shape[-2:]
    top, left = (size - nh) // 2, (size - nw) // 2
    out = F.pad(img, (left, size - nw - left, top, size - nh - top), value=fill)
    return out, img.new_tensor([scale, left, top])  # expect: FL203

# ----------------------------------------------------------------------------- priors and box coding
class PriorBox:  # anchor generator of the reference RetinaFace repo (pure Python, one image size)
    def __init__(self, cfg: DetectorConfig, image_size: Tuple[int, int]):
        self.min_sizes, self.steps, self.clip = cfg.min_sizes, cfg.steps, cfg.clip
        self.image_size = image_size
        self.feature_maps = [[math.ceil(image_size[0] / s), math.ceil(image_size[1] / s)] for s in self.steps]
    def forward(self) -> Tensor:
        anchors: List[float] = []
        for k, f in enumerate(self.feature_maps):
            for i, j in itertools.product(range(f[0]), range(f[1])):  # expect: FL301
                for min_size in self.min_sizes[k]:
                    s_kx = min_size / self.image_size[1]
                    s_ky = min_size / self.image_size[0]
                    cx = (j + 0.5) * self.steps[k] / self.image_size[1]
                    cy = (i + 0.5) * self.steps[k] / self.image_size[0]
                    anchors += [cx, cy, s_kx, s_ky]
        output = torch.Tensor(anchors).view(-1, 4)  # expect: FL203
        if self.clip:
            output.clamp_(max=1, min=0)
        return output

@torch.compile(dynamic=True)
def anchors_for_image(img: Tensor, cfg: DetectorConfig = CFG_MNET) -> Tensor:
    # the WIDER eval script runs every image at its native resolution
    return PriorBox(cfg, tuple(img.shape[-2:])).forward()

def decode(loc: Tensor, priors: Tensor, variances: Sequence[float]) -> Tensor:
    boxes = torch.cat((priors[..., :2] + loc[..., :2] * variances[0] * priors[..., 2:],
                       priors[..., 2:] * torch.exp(loc[..., 2:] * variances[1])), dim=-1)
    return torch.cat((boxes[..., :2] - boxes[..., 2:] / 2, boxes[..., :2] + boxes[..., 2:] / 2), dim=-1)

def decode_landm(pre: Tensor, priors: Tensor, variances: Sequence[float]) -> Tensor:
    pts = [priors[..., :2] + pre[..., 2 * i:2 * i + 2] * variances[0] * priors[..., 2:] for i in range(5)]
    return torch.cat(pts, dim=-1)

def box_iou(a: Tensor, b: Tensor) -> Tensor:
    area_a = (a[..., 2] - a[..., 0]).clamp(min=0) * (a[..., 3] - a[..., 1]).clamp(min=0)
    area_b = (b[..., 2] - b[..., 0]).clamp(min=0) * (b[..., 3] - b[..., 1]).clamp(min=0)
    lt = torch.maximum(a[..., :, None, :2], b[..., None, :, :2])
    rb = torch.minimum(a[..., :, None, 2:], b[..., None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    return inter / (area_a[..., :, None] + area_b[..., None, :] - inter + EPS)

def py_cpu_nms(dets: Tensor, thresh: float) -> List[int]:  # the reference greedy NMS (pixels, +1 areas)
    x1, y1, x2, y2, scores = dets.unbind(1)
    areas = (x2 - x1 + 1) * (y2 - y1 + 1)
    order = scores.argsort(descending=True)
    keep = []
    while order.numel() > 0:
        i = int(order[0])  # expect: FL000 GB0124
        keep.append(i)
        rest = order[1:]
        w = (torch.minimum(x2[i], x2[rest]) - torch.maximum(x1[i], x1[rest]) + 1).clamp(min=0)
        h = (torch.minimum(y2[i], y2[rest]) - torch.maximum(y1[i], y1[rest]) + 1).clamp(min=0)
        inter = w * h
        ovr = inter / (areas[i] + areas[rest] - inter)
        order = rest[torch.nonzero(ovr <= thresh).squeeze(1)]
    return keep

def fast_nms(boxes: Tensor, iou_threshold: float) -> Tensor:  # YOLACT Fast NMS: static shapes
    iou = box_iou(boxes, boxes).triu(diagonal=1)
    return iou.max(dim=1).values <= iou_threshold

@torch.compile
def postprocess_detections(loc: Tensor, conf: Tensor, landms: Tensor, priors: Tensor,
                           cfg: DetectorConfig, scale: float = 1.0) -> Tuple[Tensor, Tensor]:
    boxes = decode(loc[0], priors, cfg.variance) * scale
    landmarks = decode_landm(landms[0], priors, cfg.variance) * scale
    scores = conf[0, :, 1]
    inds = scores > cfg.conf_threshold
    boxes, landmarks, scores = boxes[inds], landmarks[inds], scores[inds]  # expect: FL000 GB0036
    order = scores.argsort(descending=True)[:cfg.top_k]
    dets = torch.cat([boxes[order], scores[order, None]], dim=1)
    keep = py_cpu_nms(dets, cfg.nms_threshold)
    dets, landmarks = dets[keep], landmarks[order][keep]
    return dets[:cfg.keep_top_k], landmarks[:cfg.keep_top_k]

def _gather_rows(x: Tensor, idx: Tensor) -> Tensor:
    return x.gather(1, idx.unsqueeze(-1).expand(-1, -1, x.shape[-1]))

class DetectionPostprocess(nn.Module):  # static-shape decode/top-k/NMS for the exported program
    def __init__(self, cfg: DetectorConfig, image_size: Tuple[int, int]):
        super().__init__()
        self.cfg = cfg
        h, w = image_size
        self.register_buffer("priors", PriorBox(cfg, image_size).forward(), persistent=False)
        self.register_buffer("scale", torch.tensor([w, h, w, h], dtype=torch.float32), persistent=False)
    def forward(self, loc: Tensor, conf: Tensor, landms: Tensor):
        assert loc.shape[1] == self.priors.shape[0], "anchor count does not match the export size"  # expect: FL203
        boxes = decode(loc, self.priors, self.cfg.variance) * self.scale
        landmarks = decode_landm(landms, self.priors, self.cfg.variance) * self.scale[:2].repeat(5)
        k = min(self.cfg.top_k, conf.shape[1])  # expect: FL203
        scores, idx = conf[..., 1].topk(k, dim=1)
        boxes, landmarks = _gather_rows(boxes, idx), _gather_rows(landmarks, idx)
        keep = fast_nms(boxes, self.cfg.nms_threshold) & (scores > self.cfg.conf_threshold)
        scores, order = (scores * keep).topk(self.cfg.keep_top_k, dim=1)
        return _gather_rows(boxes, order), scores, _gather_rows(landmarks, order)

# ----------------------------------------------------------------------------- detector network
class ConvBNAct(nn.Sequential):
    def __init__(self, cin: int, cout: int, k: int = 3, s: int = 1, groups: int = 1,
                 act: Optional[str] = "prelu", padding: Optional[int] = None):
        layers: List[nn.Module] = [nn.Conv2d(cin, cout, k, s, k // 2 if padding is None else padding,
                                             groups=groups, bias=False), nn.BatchNorm2d(cout)]
        if act is not None:
            layers.append(ACTS[act](cout))
        super().__init__(*layers)

class FPN(nn.Module):
    def __init__(self, in_channels: Sequence[int], out_ch: int, act: str = "leaky"):
        super().__init__()
        self.lateral = nn.ModuleList(ConvBNAct(c, out_ch, 1, act=act) for c in in_channels)
        self.merge = nn.ModuleList(ConvBNAct(out_ch, out_ch, 3, act=act) for _ in in_channels[:-1])
    def forward(self, feats: List[Tensor]) -> List[Tensor]:
        outs = [lat(f) for lat, f in zip(self.lateral, feats)]
        for i in range(len(outs) - 2, -1, -1):
            up = F.interpolate(outs[i + 1], size=outs[i].shape[-2:], mode="nearest")
            outs[i] = self.merge[i](outs[i] + up)
        return outs

class ClassHead(nn.Module):
    out_per_anchor = 2
    def __init__(self, cin: int, num_anchors: int):
        super().__init__()
        self.conv = nn.Conv2d(cin, num_anchors * self.out_per_anchor, 1)
    def forward(self, x: Tensor) -> Tensor:
        out = self.conv(x).permute(0, 2, 3, 1).contiguous()
        return out.view(out.shape[0], -1, self.out_per_anchor)

class BboxHead(ClassHead):
    out_per_anchor = 4
class LandmarkHead(ClassHead):
    out_per_anchor = 10

class TinyRetinaFace(nn.Module):
    def __init__(self, cfg: DetectorConfig = CFG_MNET, phase: str = "test"):
        super().__init__()
        self.cfg, self.phase = cfg, phase
        widths = (4,) + tuple(cfg.channels)
        self.body = nn.ModuleList([ConvBNAct(3, widths[0], 3, 2, act="leaky")] +
                                  [ConvBNAct(a, b, 3, 2, act="leaky") for a, b in zip(widths[:-1], widths[1:])])
        self.fpn = FPN(cfg.channels, cfg.out_channel)
        heads = {"bbox": BboxHead, "class": ClassHead, "landmark": LandmarkHead}
        for name, head in heads.items():
            setattr(self, f"{name}_head", nn.ModuleList(head(cfg.out_channel, cfg.num_anchors) for _ in cfg.steps))
    def forward(self, x: Tensor):
        feats = []
        for stage in self.body:
            x = stage(x)
            feats.append(x)
        feats = self.fpn(feats[-len(self.cfg.steps):])
        loc = torch.cat([h(f) for h, f in zip(self.bbox_head, feats)], dim=1)
        conf = torch.cat([h(f) for h, f in zip(self.class_head, feats)], dim=1)
        landms = torch.cat([h(f) for h, f in zip(self.landmark_head, feats)], dim=1)
        if self.phase == "train":
            return loc, conf, landms
        return loc, F.softmax(conf, dim=-1), landms

class FaceDetector(nn.Module):  # raw image in, fixed-size outputs in pixels
    def __init__(self, cfg: DetectorConfig = CFG_MNET, input_format: str = "bgr255",
                 top_k: Optional[int] = None, verbose: bool = False):
        super().__init__()
        self.cfg, self.input_format, self.verbose = cfg, input_format, verbose
        self.net = TinyRetinaFace(cfg)
        self.top_k = top_k or cfg.top_k
    def forward(self, img: Tensor):
        x = normalize_input(img, self.input_format)
        h, w = int(x.shape[-2]), int(x.shape[-1])  # expect: FL203
        loc, conf, landms = self.net(x)
        priors = PriorBox(self.cfg, (h, w)).forward().to(x)
        boxes = decode(loc, priors, self.cfg.variance) * x.new_tensor([w, h, w, h])
        landmarks = decode_landm(landms, priors, self.cfg.variance) * x.new_tensor([w, h] * 5)
        scores, idx = conf[..., 1].topk(min(self.top_k, priors.shape[0]), dim=1)  # expect: FL203
        if self.verbose:
            logger.debug("detector: %dx%d input, %d priors, top-%d kept", h, w, priors.shape[0], idx.shape[1])  # expect: FL000 GB0291; FL204
        return _gather_rows(boxes, idx), scores, _gather_rows(landmarks, idx)

# ----------------------------------------------------------------------------- alignment
def reference_landmarks(image_size: int = 112) -> Tensor:  # insightface estimate_norm's template
    if image_size % 112 == 0:
        ratio, diff_x = image_size / 112.0, 0.0
    else:  # 128-px crops keep the 112 template, shifted 8 px right
        ratio, diff_x = image_size / 128.0, 8.0 * image_size / 128.0
    dst = ARCFACE_DST * ratio
    dst[:, 0] += diff_x
    return torch.from_numpy(dst)

def umeyama(src: Tensor, dst: Tensor, estimate_scale: bool = True) -> Tensor:
    """Batched Umeyama (1991) least squares similarity, dst ~ s R src + t, as a (B, 2, 3) matrix."""
    n = src.shape[-2]
    src_mean, dst_mean = src.mean(-2, keepdim=True), dst.mean(-2, keepdim=True)
    src_c, dst_c = src - src_mean, dst - dst_mean
    cov = dst_c.transpose(-1, -2) @ src_c / n
    if (torch.linalg.matrix_rank(cov) == 0).any():  # all points coincide: skimage returns NaN here  # expect: FL000 GB0170; FL201
        return torch.full((src.shape[0], 2, 3), float("nan"), dtype=src.dtype)
    U, S, Vh = torch.linalg.svd(cov)
    d = torch.ones_like(S)
    reflect = torch.linalg.det(U) * torch.linalg.det(Vh) < 0
    d = torch.cat([d[:, :-1], torch.where(reflect, -d[:, -1], d[:, -1])[:, None]], dim=1)
    R = U @ torch.diag_embed(d) @ Vh
    if estimate_scale:
        scale = (S * d).sum(-1) / (src_c.pow(2).sum((-1, -2)) / n)
    else:
        scale = torch.ones_like(S[:, 0])
    t = dst_mean.squeeze(-2) - scale[:, None] * (R @ src_mean.transpose(-1, -2)).squeeze(-1)
    return torch.cat([scale[:, None, None] * R, t[..., None]], dim=-1)

similarity_transform = torch.compile(umeyama)

def _pixel_norm(h, w, ref: Tensor) -> Tensor:  # pixel centres (align_corners=False) -> [-1, 1]
    return ref.new_tensor([[2.0 / w, 0.0, 1.0 / w - 1.0], [0.0, 2.0 / h, 1.0 / h - 1.0], [0.0, 0.0, 1.0]])  # expect: FL203

def affine_to_theta(M: Tensor, in_hw, out_hw) -> Tensor:
    """Pixel-space src->crop similarity to the normalised crop->src theta of affine_grid."""
    bottom = M.new_tensor([0.0, 0.0, 1.0]).expand(M.shape[0], 1, 3)
    inv = torch.linalg.inv(torch.cat([M, bottom], dim=1))
    theta = _pixel_norm(*in_hw, M) @ inv @ torch.linalg.inv(_pixel_norm(*out_hw, M))
    return theta[:, :2]

def _check_transform(M: Tensor, max_scale: float) -> bool:
    scale = M[:, 0, :2].norm(dim=-1)
    if (~torch.isfinite(M)).any() or (scale > max_scale).any():  # expect: FL000 GB0170; FL201
        logger.warning("degenerate landmarks: similarity scale %s", scale.tolist())
        return False
    return True

class FaceAligner(nn.Module):
    def __init__(self, out_size: int = 16, max_scale: float = 8.0, padding_mode: str = "zeros"):
        super().__init__()
        self.out_size, self.max_scale, self.padding_mode = out_size, max_scale, padding_mode
        self.register_buffer("template", reference_landmarks(out_size))
    def forward(self, img: Tensor, landmarks: Tensor) -> Tensor:
        M = umeyama(landmarks, self.template.expand(landmarks.shape[0], -1, -1))
        _check_transform(M, self.max_scale)
        theta = affine_to_theta(M, img.shape[-2:], (self.out_size, self.out_size))
        grid = F.affine_grid(theta, [img.shape[0], img.shape[1], self.out_size, self.out_size], align_corners=False)  # expect: FL203
        return F.grid_sample(img, grid, mode="bilinear", padding_mode=self.padding_mode, align_corners=False)

def head_pose_from_landmarks(lmk: Tensor) -> Tensor:  # rough (yaw, pitch, roll) in degrees
    left_eye, right_eye, nose, mouth_l, mouth_r = lmk.unbind(1)
    eye_c, mouth_c = (left_eye + right_eye) / 2, (mouth_l + mouth_r) / 2
    eye_vec = right_eye - left_eye
    roll = torch.atan2(eye_vec[:, 1], eye_vec[:, 0])
    cos_r, sin_r = torch.cos(-roll), torch.sin(-roll)
    d = nose - (eye_c + mouth_c) / 2
    dx, dy = d[:, 0] * cos_r - d[:, 1] * sin_r, d[:, 0] * sin_r + d[:, 1] * cos_r
    yaw = torch.asin((2 * dx / eye_vec.norm(dim=-1).clamp_min(EPS)).clamp(-1, 1))
    pitch = torch.asin((2 * dy / (mouth_c - eye_c).norm(dim=-1).clamp_min(EPS)).clamp(-1, 1))
    return torch.rad2deg(torch.stack([yaw, pitch, roll], dim=-1))

def soft_argmax_2d(heat: Tensor, beta: float) -> Tensor:
    b, k, h, w = heat.shape
    prob = F.softmax(heat.flatten(2) * beta, dim=-1).view(b, k, h, w)
    xs = torch.linspace(0, 1, w, dtype=heat.dtype, device=heat.device)
    ys = torch.linspace(0, 1, h, dtype=heat.dtype, device=heat.device)
    return torch.stack([(prob.sum(2) * xs).sum(-1), (prob.sum(3) * ys).sum(-1)], dim=-1)

class LandmarkHeatmapHead(nn.Module):  # heatmaps + integral regression on a face crop
    def __init__(self, num_points: int = 5, heatmap_size: Tuple[int, int] = (8, 10), beta: float = 10.0):
        super().__init__()
        self.heatmap_size, self.beta = heatmap_size, beta
        self.features = nn.Sequential(ConvBNAct(3, 8, 3, 2), ConvBNAct(8, 8, 3, 1))
        self.head = nn.Conv2d(8, num_points, 1)
    def forward(self, crop: Tensor) -> Tensor:
        heat = self.head(self.features(crop))
        if tuple(heat.shape[-2:]) != self.heatmap_size:  # expect: FL203; FL301
            heat = F.interpolate(heat, size=self.heatmap_size, mode="bilinear", align_corners=False)
        coords = soft_argmax_2d(heat, self.beta)
        return coords * torch.tensor([crop.shape[-1] - 1, crop.shape[-2] - 1], dtype=coords.dtype)  # expect: FL203

# ----------------------------------------------------------------------------- recognition
def l2_norm(x: Tensor, axis: int = 1) -> Tensor:
    return torch.div(x, torch.norm(x, 2, axis, True))

class FaceEmbedder(nn.Module):  # MobileFaceNet-lite: DW-separable stages, GDC, linear + BN1d
    def __init__(self, embed_dim: int = EMBED_DIM, widths: Sequence[int] = (8, 12), input_size: int = 16):
        super().__init__()
        self.stem = ConvBNAct(3, widths[0], 3, 2)
        self.blocks = nn.Sequential(*itertools.chain.from_iterable(
            (ConvBNAct(a, a, 3, 2, groups=a), ConvBNAct(a, b, 1)) for a, b in zip(widths[:-1], widths[1:])))
        feat = input_size // 2 ** len(widths)
        self.gdc = ConvBNAct(widths[-1], widths[-1], feat, groups=widths[-1], act=None, padding=0)
        self.linear = nn.Linear(widths[-1], embed_dim, bias=False)
        self.bn = nn.BatchNorm1d(embed_dim)
    def forward(self, x: Tensor, normalize: bool = True) -> Tensor:
        emb = self.bn(self.linear(self.gdc(self.blocks(self.stem(x))).flatten(1)))
        return l2_norm(emb) if normalize else emb

class ArcMarginProduct(nn.Module):  # ArcFace: cos(theta + m) on the target logit
    def __init__(self, in_features: int, out_features: int, s: float = 30.0, m: float = 0.50,
                 easy_margin: bool = False):
        super().__init__()
        self.s, self.m, self.easy_margin = s, m, easy_margin
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        nn.init.xavier_uniform_(self.weight)
        self.cos_m, self.sin_m = math.cos(m), math.sin(m)
        self.th, self.mm = math.cos(math.pi - m), math.sin(math.pi - m) * m
    def forward(self, x: Tensor, label: Tensor) -> Tensor:
        cosine = F.linear(F.normalize(x), F.normalize(self.weight))
        sine = torch.sqrt((1.0 - torch.pow(cosine, 2)).clamp(0, 1))
        phi = cosine * self.cos_m - sine * self.sin_m
        phi = torch.where(cosine > 0, phi, cosine) if self.easy_margin else \
            torch.where(cosine > self.th, phi, cosine - self.mm)
        one_hot = torch.zeros_like(cosine).scatter_(1, label.view(-1, 1).long(), 1)
        return ((one_hot * phi) + ((1.0 - one_hot) * cosine)) * self.s

class CurricularFace(ArcMarginProduct):  # hard negatives re-weighted by t, an EMA of the target cosine
    def __init__(self, in_features: int, out_features: int, s: float = 64.0, m: float = 0.5):
        super().__init__(in_features, out_features, s, m)
        self.register_buffer("t", torch.zeros(1))
    def forward(self, x: Tensor, label: Tensor) -> Tensor:
        cos_theta = F.linear(F.normalize(x), F.normalize(self.weight)).clamp(-1, 1)
        target_logit = cos_theta[torch.arange(x.size(0)), label].view(-1, 1)
        cos_theta_m = target_logit * self.cos_m - torch.sqrt(1.0 - target_logit ** 2) * self.sin_m
        mask = cos_theta > cos_theta_m
        final_target_logit = torch.where(target_logit > self.th, cos_theta_m, target_logit - self.mm)
        hard_example = cos_theta[mask]  # expect: FL000 GB0036
        with torch.no_grad():
            self.t = target_logit.mean() * 0.01 + (1 - 0.01) * self.t
        cos_theta[mask] = hard_example * (self.t + hard_example)
        cos_theta.scatter_(1, label.view(-1, 1).long(), final_target_logit)
        return cos_theta * self.s

class SphereProduct(nn.Module):  # SphereFace A-Softmax, annealed lambda as in the reference code
    def __init__(self, in_features: int, out_features: int, m: int = 4):
        super().__init__()
        self.m, self.base, self.gamma, self.power, self.lambda_min = m, 1000.0, 0.12, 1, 5.0
        self.iter = 0
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        nn.init.xavier_uniform_(self.weight)
        self.mlambda = [lambda x: x ** 0, lambda x: x ** 1, lambda x: 2 * x ** 2 - 1,
                        lambda x: 4 * x ** 3 - 3 * x, lambda x: 8 * x ** 4 - 8 * x ** 2 + 1]
    @property
    def lamb(self) -> float:
        return max(self.lambda_min, self.base * (1 + self.gamma * self.iter) ** (-1 * self.power))
    def forward(self, x: Tensor, label: Tensor) -> Tensor:
        self.iter += 1  # expect: FL302
        cos_theta = F.linear(F.normalize(x), F.normalize(self.weight)).clamp(-1, 1)
        cos_m_theta = self.mlambda[self.m](cos_theta)
        k = (self.m * cos_theta.data.acos() / 3.14159265).floor()
        phi_theta = ((-1.0) ** k) * cos_m_theta - 2 * k
        one_hot = torch.zeros_like(cos_theta).scatter_(1, label.view(-1, 1), 1)
        output = one_hot * (phi_theta - cos_theta) / (1 + self.lamb) + cos_theta
        return output * torch.norm(x, 2, 1).view(-1, 1)

@torch.compile
def identify(query: Tensor, gallery: Tensor, names: Sequence[str], k: int = 3,
             threshold: float = VERIFY_THRESHOLD) -> List[Tuple[str, float]]:
    top_s, top_i = (l2_norm(query) @ l2_norm(gallery).t()).topk(min(k, len(names)), dim=1)
    results = []
    for scores, idxs in zip(top_s.tolist(), top_i.tolist()):  # expect: FL000 GB0033; FL000 GB0109
        hits = [(names[i], s) for s, i in zip(scores, idxs) if s >= threshold]
        results.append(hits[0] if hits else (UNKNOWN, scores[0]))
    return results

# ----------------------------------------------------------------------------- quality
def magface_quality(raw_emb: Tensor, l_a: float = MAGFACE_RANGE[0], u_a: float = MAGFACE_RANGE[1]) -> Tensor:
    return (raw_emb.norm(dim=1).clamp(l_a, u_a) - l_a) / (u_a - l_a)

def _pose_term(max_yaw: float) -> Callable[[Tensor, Tensor, Tensor], Tensor]:
    def term(crops: Tensor, raw_emb: Tensor, landmarks: Tensor) -> Tensor:
        yaw = head_pose_from_landmarks(landmarks)[:, 0].abs()
        return (1.0 - yaw / max_yaw).clamp(0, 1)
    return term

QUALITY_TERMS: List[Tuple[str, Callable[[Tensor, Tensor, Tensor], Tensor], float]] = [
    ("magnitude", lambda c, e, l: magface_quality(e), 0.7),
    ("contrast", lambda c, e, l: (c.flatten(1).std(dim=1) / 0.25).clamp(max=1), 0.1),
    ("pose", _pose_term(max_yaw=45.0), 0.2),
]

def _report_low_quality(score: Tensor, min_quality: float) -> None:
    n_low = int((score < min_quality).sum())  # expect: FL000 GB0124; FL202
    if n_low:
        logger.info("%d of %d crops under quality %.2f", n_low, score.shape[0], min_quality)  # expect: FL000 GB0291; FL204

@torch.compile
def assess_quality(crops: Tensor, raw_emb: Tensor, landmarks: Tensor, min_quality: float = 0.3):
    terms = {name: fn(crops, raw_emb, landmarks) for name, fn, _ in QUALITY_TERMS}
    score = sum(weight * terms[name] for name, _, weight in QUALITY_TERMS)
    _report_low_quality(score, min_quality)
    return score, terms["magnitude"], terms["pose"]

# ----------------------------------------------------------------------------- export entry points
def export_all(out_dir: str, h: int = 24, w: int = 32) -> Dict[str, object]:
    img = torch.randint(0, 256, (1, 3, h, w), dtype=torch.uint8)
    crop, lmk = torch.rand(4, 3, 16, 16), torch.rand(4, 5, 2) * 16
    torch.jit.trace(TinyRetinaFace(CFG_MNET).eval(), (img.float(),)).save(f"{out_dir}/retinaface.pt")
    torch.jit.trace(FaceDetector(verbose=True).eval(), (img,)).save(f"{out_dir}/detector.pt")
    torch.jit.trace(FaceAligner(), (img.float(), lmk)).save(f"{out_dir}/aligner.pt")
    torch.jit.trace(FaceEmbedder().eval(), (crop,)).save(f"{out_dir}/embedder.pt")
    torch.jit.trace(LandmarkHeatmapHead().eval(), (crop,)).save(f"{out_dir}/landmarks.pt")
    torch.jit.trace(letterbox, (img.float(),)).save(f"{out_dir}/letterbox.pt")
    n = PriorBox(CFG_MNET, (h, w)).forward().shape[0]
    raw = (torch.zeros(1, n, 4), torch.rand(1, n, 2).softmax(-1), torch.zeros(1, n, 10))
    programs = {
        "post": torch.export.export(DetectionPostprocess(CFG_MNET, (h, w)).eval(), raw),
        "umeyama": torch.export.export(umeyama, (lmk, reference_landmarks(16).expand(4, 5, 2))),
        "pose": torch.export.export(head_pose_from_landmarks, (lmk,)),
        "quality": torch.export.export(assess_quality, (crop, torch.randn(4, EMBED_DIM) * 30, lmk)),
    }
    for name, program in programs.items():
        torch.export.save(program, f"{out_dir}/{name}.pt2")
    return programs

# ----------------------------------------------------------------------------- cases
def _gen(k: int) -> torch.Generator:
    return torch.Generator().manual_seed(k)

_rand = lambda *shape, k=0: torch.rand(*shape, generator=_gen(k))
_randn = lambda *shape, k=0: torch.randn(*shape, generator=_gen(k))
_u8 = lambda *shape, k=0: torch.randint(0, 256, shape, dtype=torch.uint8, generator=_gen(k))
_labels = lambda n, classes, k=0: torch.randint(0, classes, (n,), generator=_gen(k))

def _face_landmarks(b: int, h: int, w: int, k: int = 0) -> Tensor:
    base = torch.from_numpy(ARCFACE_DST / 112.0) * torch.tensor([w * 0.6, h * 0.6]) + torch.tensor([w * 0.2, h * 0.2])
    return base.expand(b, 5, 2) + _randn(b, 5, 2, k=k) * 0.5
def _raw_outputs(b: int, h: int, w: int, k: int = 0):
    n = PriorBox(CFG_MNET, (h, w)).forward().shape[0]
    return _randn(b, n, 4, k=k) * 0.1, (_randn(b, n, 2, k=k + 1) * 2).softmax(-1), _randn(b, n, 10, k=k + 2) * 0.1
def _post_args(k: int = 0):
    loc, conf, landms = _raw_outputs(1, 24, 32, k)
    cfg = replace(CFG_MNET, conf_threshold=0.7, top_k=12)
    return loc, conf, landms, PriorBox(cfg, (24, 32)).forward(), cfg, 32.0
_GALLERY = ["alice", "bob", "carol", "dave", "erin", "frank"]
_quality_args = lambda: (_rand(4, 3, 16, 16), _randn(4, EMBED_DIM) * torch.tensor([[2.0], [20.0], [3.0], [25.0]]),
                         _face_landmarks(4, 16, 16))
_ref16 = lambda b: reference_landmarks(16).expand(b, 5, 2)

CASES = {
    "TinyRetinaFace": lambda: (TinyRetinaFace().eval(), (_rand(2, 3, 24, 32) * 255,)),
    "FaceDetector": lambda: (FaceDetector().eval(), (_u8(2, 3, 16, 24),)),
    "FaceDetector_verbose": lambda: (FaceDetector(CONFIGS["mobilenet0.25_clip"], "rgb255", verbose=True).eval(),
                                     (_rand(2, 3, 16, 24, k=1),)),
    "DetectionPostprocess": lambda: (DetectionPostprocess(CFG_MNET, (24, 32)).eval(), _raw_outputs(2, 24, 32)),
    "postprocess_detections": lambda: (postprocess_detections, _post_args(3)),
    "anchors_for_image": lambda: (anchors_for_image, (_rand(2, 3, 12, 20),), (_rand(2, 3, 18, 26),)),
    "letterbox": lambda: (letterbox, (_rand(2, 3, 14, 22),), (_rand(2, 3, 20, 30),)),
    "similarity_transform": lambda: (similarity_transform, (_face_landmarks(3, 28, 36), _ref16(3))),
    "FaceAligner": lambda: (FaceAligner(), (_rand(3, 3, 28, 36), _face_landmarks(3, 28, 36, k=2))),
    "LandmarkHeatmapHead": lambda: (LandmarkHeatmapHead().eval(), (_rand(2, 3, 16, 20),), (_rand(2, 3, 22, 26),)),
    "FaceEmbedder": lambda: (FaceEmbedder().eval(), (_rand(4, 3, 16, 16),)),
    "ArcMarginProduct": lambda: (ArcMarginProduct(EMBED_DIM, 10), (_randn(6, EMBED_DIM), _labels(6, 10))),
    "SphereProduct": lambda: (SphereProduct(EMBED_DIM, 10), (_randn(6, EMBED_DIM, k=5), _labels(6, 10, k=5))),
    "CurricularFace": lambda: (CurricularFace(EMBED_DIM, 10), (_randn(6, EMBED_DIM, k=6), _labels(6, 10, k=6))),
    "identify": lambda: (identify, (_randn(3, EMBED_DIM), _randn(6, EMBED_DIM, k=8), _GALLERY)),
    "assess_quality": lambda: (assess_quality, _quality_args()),
}

TRACED = {
    "TinyRetinaFace": lambda: (TinyRetinaFace().eval(), (_rand(1, 3, 24, 32) * 255,)),
    "FaceDetector": lambda: (FaceDetector(verbose=True).eval(), (_rand(1, 3, 16, 24, k=1),)),
    "DetectionPostprocess": lambda: (DetectionPostprocess(CFG_MNET, (24, 32)).eval(), _raw_outputs(1, 24, 32)),
    "FaceAligner": lambda: (FaceAligner(), (_rand(1, 3, 28, 36), _face_landmarks(1, 28, 36, k=2))),
    "umeyama": lambda: (umeyama, (_face_landmarks(2, 28, 36), _ref16(2))),
    "head_pose_from_landmarks": lambda: (head_pose_from_landmarks, (_face_landmarks(2, 28, 36, k=3),)),
    "LandmarkHeatmapHead": lambda: (LandmarkHeatmapHead().eval(), (_rand(1, 3, 22, 26),)),
    "FaceEmbedder": lambda: (FaceEmbedder().eval(), (_rand(2, 3, 16, 16),)),
    "letterbox": lambda: (letterbox, (_rand(1, 3, 20, 30),)),
    "assess_quality": lambda: (assess_quality, _quality_args()),
}
