"""Vision backbones and detection heads: ConvNeXt / ResNet / Swin / DETR-style blocks, window
partition / reverse, relative position bias tables, drop path and stochastic depth schedules, anchor
generation, feature pyramid merging, Hungarian-matching cost matrices."""
import itertools
import math
import random
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from scipy.optimize import linear_sum_assignment
from torch import nn
from torch.utils.checkpoint import checkpoint

ANCHOR_SIZES = (8.0, 16.0)
ASPECT_RATIOS = (0.5, 1.0, 2.0)
VERBOSE_SHAPES = True


@dataclass
class SwinConfig:
    dim: int = 8
    heads: int = 2
    window: int = 4
    shift: int = 2
    mlp_ratio: float = 2.0
    drop_path: float = 0.1


def window_partition(x, ws: int):
    B, H, W, C = x.shape
    x = x.view(B, H // ws, ws, W // ws, ws, C)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(-1, ws * ws, C)


def window_reverse(windows, ws: int, H: int, W: int):
    B = windows.shape[0] // ((H // ws) * (W // ws))
    x = windows.view(B, H // ws, W // ws, ws, ws, -1)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(B, H, W, -1)


def relative_position_index(ws: int):
    coords = torch.stack(torch.meshgrid(torch.arange(ws), torch.arange(ws), indexing="ij")).flatten(1)
    rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0)
    rel[:, :, 0] += ws - 1
    rel[:, :, 1] += ws - 1
    rel[:, :, 0] *= 2 * ws - 1
    return rel.sum(-1)


class WindowAttention(nn.Module):
    def __init__(self, dim: int = 8, heads: int = 2, window: int = 4):
        super().__init__()
        self.heads, self.window = heads, window
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.relative_position_bias_table = nn.Parameter(torch.randn((2 * window - 1) ** 2, heads) * 0.02)
        self.register_buffer("relative_position_index", relative_position_index(window), persistent=False)

    def forward(self, x, mask: Optional[torch.Tensor] = None):
        Bw, N, C = x.shape
        q, k, v = self.qkv(x).view(Bw, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        attn = (q * (C // self.heads) ** -0.5) @ k.transpose(-2, -1)
        bias = self.relative_position_bias_table[self.relative_position_index.view(-1)].view(N, N, -1)
        attn = attn + bias.permute(2, 0, 1)[None]
        if mask is not None:
            nw = mask.shape[0]
            attn = attn.view(Bw // nw, nw, self.heads, N, N) + mask[None, :, None]
            attn = attn.view(-1, self.heads, N, N)
        out = attn.softmax(-1) @ v
        return self.proj(out.transpose(1, 2).reshape(Bw, N, C))


def drop_path(x, drop_prob: float = 0.0, training: bool = False):
    if drop_prob == 0.0 or not training:
        return x
    keep = 1 - drop_prob
    mask = x.new_empty((x.shape[0],) + (1,) * (x.ndim - 1)).bernoulli_(keep)
    return x * mask / keep


class DropPath(nn.Module):
    def __init__(self, p: float = 0.0):
        super().__init__()
        self.p = p

    def forward(self, x):
        return drop_path(x, self.p, self.training)


class SwinBlock(nn.Module):
    def __init__(self, cfg: SwinConfig = SwinConfig(), input_resolution: Tuple[int, int] = (8, 12)):
        super().__init__()
        self.cfg = cfg
        self.norm1, self.norm2 = nn.LayerNorm(cfg.dim), nn.LayerNorm(cfg.dim)
        self.attn = WindowAttention(cfg.dim, cfg.heads, cfg.window)
        hidden = int(cfg.dim * cfg.mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(cfg.dim, hidden), nn.GELU(), nn.Linear(hidden, cfg.dim))
        self.drop_path = DropPath(cfg.drop_path)
        mask = self._shift_mask(*input_resolution) if cfg.shift > 0 else None
        self.register_buffer("attn_mask", mask, persistent=False)

    def _shift_mask(self, Hp, Wp, device=None):
        ws, s = self.cfg.window, self.cfg.shift
        img_mask = torch.zeros(1, Hp, Wp, 1, device=device)
        cnt = 0
        for h in (slice(0, -ws), slice(-ws, -s), slice(-s, None)):
            for w in (slice(0, -ws), slice(-ws, -s), slice(-s, None)):
                img_mask[:, h, w, :] = cnt
                cnt += 1
        mw = window_partition(img_mask, ws).squeeze(-1)
        mask = mw[:, None, :] - mw[:, :, None]
        return mask.masked_fill(mask != 0, -100.0)

    def forward(self, x):
        B, H, W, C = x.shape
        ws, s = self.cfg.window, self.cfg.shift
        shortcut = x
        x = torch.roll(self.norm1(x), shifts=(-s, -s), dims=(1, 2))
        windows = self.attn(window_partition(x, ws), mask=self.attn_mask)
        x = torch.roll(window_reverse(windows, ws, H, W), shifts=(s, s), dims=(1, 2))
        x = shortcut + self.drop_path(x)
        return x + self.drop_path(self.mlp(self.norm2(x)))


class ConvNeXtBlock(nn.Module):
    def __init__(self, dim: int = 8, layer_scale_init: float = 1e-6, drop_path: float = 0.0):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1, self.pwconv2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(layer_scale_init * torch.ones(dim)) if layer_scale_init > 0 else None
        self.drop_path = DropPath(drop_path)

    def forward(self, x):
        shortcut = x
        x = self.dwconv(x).permute(0, 2, 3, 1)
        x = self.pwconv2(F.gelu(self.pwconv1(self.norm(x))))
        if self.gamma is not None:
            x = self.gamma * x
        return shortcut + self.drop_path(x.permute(0, 3, 1, 2))


class ConvNeXtStage(nn.Module):
    """Linearly increasing stochastic-depth rates over the blocks; optional activation checkpointing."""

    def __init__(self, dim: int = 8, depth: int = 3, drop_path_rate: float = 0.2, use_checkpoint: bool = True):
        super().__init__()
        dpr = [r.item() for r in torch.linspace(0, drop_path_rate, depth)]
        self.blocks = nn.ModuleList(ConvNeXtBlock(dim, drop_path=p) for p in dpr)
        self.use_checkpoint = use_checkpoint

    def forward(self, x):
        for blk in self.blocks:
            if self.use_checkpoint and self.training:
                x = checkpoint(blk, x, use_reentrant=False)
            else:
                x = blk(x)
        return x


class LayerDropModuleList(nn.ModuleList):
    """fairseq's LayerDrop: iterating the list in training mode skips each layer with probability p."""

    def __init__(self, p: float, modules=None):
        super().__init__(modules)
        self.p = p

    def __iter__(self):
        dropout_probs = torch.empty(len(self)).uniform_()
        for i, m in enumerate(super().__iter__()):
            if not self.training or (dropout_probs[i] > self.p):  # expect: FL000 GB0170
                yield m


class LayerDropStage(nn.Module):
    def __init__(self, dim: int = 8, depth: int = 3, layerdrop: float = 0.3):
        super().__init__()
        self.layers = LayerDropModuleList(layerdrop, [SqueezeExcite(dim, 4) for _ in range(depth)])
        self.norm = nn.GroupNorm(2, dim)

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return self.norm(x)


class StochasticDepthBottleneck(nn.Module):
    """ResNet bottleneck that skips its residual branch entirely with probability 1 - survival."""

    def __init__(self, in_ch: int = 8, mid: int = 4, survival: float = 0.8, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_ch, mid, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(mid)
        self.conv2 = nn.Conv2d(mid, mid, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(mid)
        self.conv3 = nn.Conv2d(mid, in_ch, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(in_ch)
        self.downsample = None
        if stride != 1:
            self.downsample = nn.Sequential(nn.Conv2d(in_ch, in_ch, 1, stride=stride, bias=False), nn.BatchNorm2d(in_ch))
        self.survival = survival

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        if self.training and random.random() > self.survival:  # expect: FL000 GB0007
            return identity
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.training:
            out = out / self.survival
        return F.relu(out + identity)


class AnchorGenerator(nn.Module):
    """Per-level anchors, cached by feature-map size (as torchvision's generator once did)."""

    def __init__(self, sizes: Sequence[float] = ANCHOR_SIZES, ratios: Sequence[float] = ASPECT_RATIOS):
        super().__init__()
        self.sizes, self.ratios = sizes, ratios
        self._cache: Dict[Tuple[int, int, int], torch.Tensor] = {}

    def _base_anchors(self, size: float):
        ratios = torch.tensor(self.ratios)
        h = size * ratios.sqrt()
        w = size / ratios.sqrt()
        return torch.stack([-w, -h, w, h], dim=1) / 2

    def _grid(self, fh: int, fw: int, stride: int):
        key = (fh, fw, stride)
        if key not in self._cache:
            ys, xs = torch.meshgrid(torch.arange(fh) * stride, torch.arange(fw) * stride, indexing="ij")
            shifts = torch.stack([xs, ys, xs, ys], dim=-1).reshape(-1, 1, 4).float()
            self._cache[key] = shifts  # expect: FL302
        return self._cache[key]

    def forward(self, image, features: List[torch.Tensor]):
        out = []
        for feat, size in zip(features, self.sizes):
            stride = image.shape[-1] // feat.shape[-1]
            shifts = self._grid(feat.shape[-2], feat.shape[-1], stride)
            out.append((shifts + self._base_anchors(size)[None]).reshape(-1, 4))
        return torch.cat(out)


@torch.compile
def grid_anchors(feature_sizes: List[Tuple[int, int]], strides: List[int], base_size: float = 8.0):
    anchors = []
    for (fh, fw), stride in zip(feature_sizes, strides):
        cy = (torch.arange(fh, dtype=torch.float32) + 0.5) * stride
        cx = (torch.arange(fw, dtype=torch.float32) + 0.5) * stride
        cy, cx = torch.meshgrid(cy, cx, indexing="ij")
        for scale, ratio in itertools.product((1.0, 2 ** 0.5), ASPECT_RATIOS):
            w = base_size * stride / 8 * scale / math.sqrt(ratio)
            h = base_size * stride / 8 * scale * math.sqrt(ratio)
            anchors.append(torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], -1).reshape(-1, 4))
    return torch.cat(anchors)


class FeaturePyramid(nn.Module):
    def __init__(self, in_channels: Sequence[int] = (4, 8, 12), out_ch: int = 6):
        super().__init__()
        self.lateral = nn.ModuleList(nn.Conv2d(c, out_ch, 1) for c in in_channels)
        self.smooth = nn.ModuleList(nn.Conv2d(out_ch, out_ch, 3, padding=1) for _ in in_channels)

    def forward(self, feats: List[torch.Tensor]):
        laterals = [l(f) for l, f in zip(self.lateral, feats)]
        for i in range(len(laterals) - 1, 0, -1):
            laterals[i - 1] = laterals[i - 1] + F.interpolate(laterals[i], size=laterals[i - 1].shape[-2:], mode="nearest")
        return {f"p{i + 3}": s(l) for i, (s, l) in enumerate(zip(self.smooth, laterals))}


class PanopticFPNHead(nn.Module):
    """Upsample every pyramid level to the finest and sum (semantic-FPN style), printing shapes when verbose."""

    def __init__(self, ch: int = 6, n_classes: int = 5):
        super().__init__()
        self.scale_heads = nn.ModuleList(nn.Conv2d(ch, ch, 3, padding=1) for _ in range(3))
        self.predictor = nn.Conv2d(ch, n_classes, 1)

    def forward(self, pyramid: Dict[str, torch.Tensor]):
        target = pyramid["p3"].shape[-2:]
        out = 0
        for head, (name, feat) in zip(self.scale_heads, pyramid.items()):
            if VERBOSE_SHAPES:
                print(f"{name}: {tuple(feat.shape)} -> {tuple(target)}")  # expect: FL000 GB0059
            out = out + F.interpolate(head(feat), size=target, mode="bilinear", align_corners=False)
        return self.predictor(out)


class PatchMerging(nn.Module):
    """Swin downsampling: concatenates 2x2 neighbours; odd feature maps are padded first (detection inputs)."""

    def __init__(self, dim: int = 8):
        super().__init__()
        self.norm = nn.LayerNorm(4 * dim)
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)

    def forward(self, x):
        B, H, W, C = x.shape
        if H % 2 == 1 or W % 2 == 1:  # expect: FL301
            x = F.pad(x, (0, 0, 0, W % 2, 0, H % 2))
        x0, x1 = x[:, 0::2, 0::2], x[:, 1::2, 0::2]
        x2, x3 = x[:, 0::2, 1::2], x[:, 1::2, 1::2]
        return self.reduction(self.norm(torch.cat([x0, x1, x2, x3], dim=-1)))


class ViTPosEmbed(nn.Module):
    """DINO-style bicubic interpolation of the position table when the image grid differs from training."""

    def __init__(self, dim: int = 8, grid: int = 4, patch: int = 2):
        super().__init__()
        self.patch = patch
        self.proj = nn.Conv2d(3, dim, patch, stride=patch)
        self.pos_embed = nn.Parameter(torch.randn(1, grid * grid, dim) * 0.02)
        self.grid = grid

    def interpolate_pos_encoding(self, h: int, w: int):
        if h == self.grid and w == self.grid:  # expect: FL301
            return self.pos_embed
        pos = self.pos_embed.reshape(1, self.grid, self.grid, -1).permute(0, 3, 1, 2)
        pos = F.interpolate(pos, size=(h, w), mode="bicubic", align_corners=False)
        return pos.permute(0, 2, 3, 1).flatten(1, 2)

    def forward(self, img):
        x = self.proj(img)
        h, w = x.shape[-2:]
        return x.flatten(2).transpose(1, 2) + self.interpolate_pos_encoding(h, w)


def box_cxcywh_to_xyxy(b):
    cx, cy, w, h = b.unbind(-1)
    return torch.stack([cx - 0.5 * w, cy - 0.5 * h, cx + 0.5 * w, cy + 0.5 * h], dim=-1)


def generalized_box_iou(a, b):
    assert (a[:, 2:] >= a[:, :2]).all()
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    lt = torch.max(a[:, None, :2], b[None, :, :2])
    rb = torch.min(a[:, None, 2:], b[None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    union = area_a[:, None] + area_b[None] - inter
    iou = inter / union
    lt_c = torch.min(a[:, None, :2], b[None, :, :2])
    rb_c = torch.max(a[:, None, 2:], b[None, :, 2:])
    area_c = (rb_c - lt_c).clamp(min=0).prod(-1)
    return iou - (area_c - union) / area_c


@torch.compile
def detr_matching_cost(pred_logits, pred_boxes, tgt_labels, tgt_boxes, w_class: float = 1.0, w_bbox: float = 5.0, w_giou: float = 2.0):
    with torch.autocast("cpu", enabled=False):
        prob = pred_logits.float().softmax(-1)
        cost_class = -prob[:, tgt_labels]
        cost_bbox = torch.cdist(pred_boxes.float(), tgt_boxes.float(), p=1)
        cost_giou = -generalized_box_iou(box_cxcywh_to_xyxy(pred_boxes), box_cxcywh_to_xyxy(tgt_boxes))
    return w_bbox * cost_bbox + w_class * cost_class + w_giou * cost_giou


class SetCriterion(nn.Module):
    """DETR loss for already-matched pairs, normalised by the number of target boxes in the batch."""

    def __init__(self, num_classes: int = 4, eos_coef: float = 0.1):
        super().__init__()
        self.num_classes = num_classes
        weight = torch.ones(num_classes + 1)
        weight[-1] = eos_coef
        self.register_buffer("empty_weight", weight)

    def forward(self, pred_logits, pred_boxes, targets: List[Dict[str, torch.Tensor]], indices):
        num_boxes = sum(len(t["labels"]) for t in targets)
        num_boxes = torch.as_tensor([num_boxes], dtype=torch.float)
        num_boxes = torch.clamp(num_boxes, min=1).item()  # expect: FL000 GB0124
        target_classes = torch.full(pred_logits.shape[:2], self.num_classes, dtype=torch.int64)
        losses = {"loss_bbox": pred_boxes.new_zeros(()), "loss_giou": pred_boxes.new_zeros(())}
        for b, ((src, tgt), t) in enumerate(zip(indices, targets)):
            target_classes[b, src] = t["labels"][tgt]
            src_boxes, tgt_boxes = pred_boxes[b, src], t["boxes"][tgt]
            losses["loss_bbox"] = losses["loss_bbox"] + F.l1_loss(src_boxes, tgt_boxes, reduction="sum") / num_boxes
            giou = generalized_box_iou(box_cxcywh_to_xyxy(src_boxes), box_cxcywh_to_xyxy(tgt_boxes))
            losses["loss_giou"] = losses["loss_giou"] + (1 - torch.diag(giou)).sum() / num_boxes
        losses["loss_ce"] = F.cross_entropy(pred_logits.transpose(1, 2), target_classes, self.empty_weight)
        return losses


class HungarianMatcher(nn.Module):
    def __init__(self, w_class: float = 1.0, w_bbox: float = 5.0, w_giou: float = 2.0):
        super().__init__()
        self.w = (w_class, w_bbox, w_giou)

    @torch.no_grad()
    def forward(self, pred_logits, pred_boxes, tgt_labels, tgt_boxes):
        prob = pred_logits.softmax(-1)
        C = self.w[1] * torch.cdist(pred_boxes, tgt_boxes, p=1) - self.w[0] * prob[:, tgt_labels]
        rows, cols = linear_sum_assignment(C.numpy())  # expect: FL000 GB0007
        return torch.as_tensor(rows, dtype=torch.int64), torch.as_tensor(cols, dtype=torch.int64)


@torch.compile
def greedy_match(cost):
    """Cheap stand-in for the Hungarian algorithm: repeatedly take the global minimum."""
    cost = cost.clone()
    pairs = []
    for _ in range(min(cost.shape)):
        flat = cost.argmin()
        i, j = divmod(flat.item(), cost.size(1))  # expect: FL000 GB0124
        pairs.append((i, j))
        cost[i, :] = float("inf")
        cost[:, j] = float("inf")
    return pairs


@torch.compile
def assign_fpn_levels(boxes, k_min: int = 2, k_max: int = 5, canonical: float = 224.0):
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    lvl = torch.floor(4 + torch.log2(area.sqrt() / canonical + 1e-6)).clamp(k_min, k_max)
    per_level = []
    for k in range(k_min, k_max + 1):
        idx = torch.where(lvl == k)[0]  # expect: FL000 GB0036
        per_level.append(idx)
    return per_level


@torch.compile(dynamic=False)
def filter_proposals(boxes, scores, pre_nms_top_n: int = 6, score_thresh: float = 0.2, min_size: float = 1.0):
    """RPN post-processing before NMS: top-n by score, clip, drop tiny and low-score boxes."""
    top = scores.topk(min(pre_nms_top_n, scores.numel())).indices
    boxes, scores = boxes[top], scores[top]
    boxes = boxes.clamp(min=0.0, max=32.0)
    ws, hs = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    keep = (ws >= min_size) & (hs >= min_size) & (scores >= score_thresh)
    boxes, scores = boxes[keep], scores[keep]  # expect: FL000 GB0036
    return boxes, scores


class HookedFeatureExtractor(nn.Module):
    """Collects intermediate feature maps with forward hooks registered per call (Grad-CAM / timm style)."""

    def __init__(self, return_layers: Sequence[str] = ("1", "3")):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.ReLU(), nn.Conv2d(6, 8, 3, stride=2, padding=1), nn.ReLU())
        self.return_layers = tuple(return_layers)

    def forward(self, x):
        feats: Dict[str, torch.Tensor] = {}

        def save(name):
            def hook(module, inputs, output):
                feats[name] = output
            return hook

        handles = [self.backbone.get_submodule(n).register_forward_hook(save(n)) for n in self.return_layers]  # expect: FL000 GB0467
        try:
            self.backbone(x)
        finally:
            for h in handles:
                h.remove()  # expect: FL000 GB0013
        return feats


class SqueezeExcite(nn.Module):
    def __init__(self, ch: int = 8, rd: int = 4):
        super().__init__()
        self.fc1, self.fc2 = nn.Conv2d(ch, rd, 1), nn.Conv2d(rd, ch, 1)

    def forward(self, x):
        s = x.mean((2, 3), keepdim=True)
        return x * torch.sigmoid(self.fc2(F.relu(self.fc1(s))))


@torch.compile
def numpy_center_prior(feat, stride: int = 8):
    h, w = feat.shape[-2:]
    ys, xs = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    centers = np.stack([(xs + 0.5) * stride, (ys + 0.5) * stride], axis=-1).reshape(-1, 2)
    return feat.flatten(2).transpose(1, 2) * torch.from_numpy(centers).float().norm(dim=-1)[None, :, None] / (h * w * stride)


def _boxes_cxcywh(n):
    return torch.cat([torch.rand(n, 2) * 0.6 + 0.2, torch.rand(n, 2) * 0.2 + 0.05], dim=1)


CASES = {
    "WindowAttention": lambda: (WindowAttention(), (torch.randn(6, 16, 8),)),
    "SwinBlock": lambda: (SwinBlock().eval(), (torch.randn(2, 8, 12, 8),)),
    "ConvNeXtStage": lambda: (ConvNeXtStage(), (torch.randn(2, 8, 6, 5),)),
    "ConvNeXtStage_eval": lambda: (ConvNeXtStage().eval(), (torch.randn(2, 8, 6, 5),)),
    "StochasticDepthBottleneck": lambda: (StochasticDepthBottleneck(survival=0.5), (torch.randn(2, 8, 6, 5),)),
    "StochasticDepthBottleneck_kept": lambda: (StochasticDepthBottleneck(survival=0.9), (torch.randn(2, 8, 6, 5),)),
    "StochasticDepthBottleneck_eval": lambda: (StochasticDepthBottleneck(stride=2).eval(), (torch.randn(2, 8, 6, 5),)),
    "AnchorGenerator": lambda: (AnchorGenerator(), (torch.randn(1, 3, 32, 48), [torch.randn(1, 4, 4, 6), torch.randn(1, 4, 2, 3)])),
    "grid_anchors": lambda: (grid_anchors, ([(4, 6), (2, 3)], [8, 16])),
    "FeaturePyramid": lambda: (FeaturePyramid(), ([torch.randn(2, 4, 12, 10), torch.randn(2, 8, 6, 5), torch.randn(2, 12, 3, 3)],)),
    "PanopticFPNHead": lambda: (PanopticFPNHead(), ({"p3": torch.randn(2, 6, 12, 10), "p4": torch.randn(2, 6, 6, 5), "p5": torch.randn(2, 6, 3, 3)},)),
    "PatchMerging": lambda: (PatchMerging(), (torch.randn(2, 6, 4, 8),), (torch.randn(3, 7, 5, 8),)),
    "ViTPosEmbed": lambda: (ViTPosEmbed(), (torch.randn(2, 3, 8, 8),), (torch.randn(3, 3, 10, 12),)),
    "detr_matching_cost": lambda: (detr_matching_cost, (torch.randn(5, 4), _boxes_cxcywh(5), torch.tensor([1, 3, 0]), _boxes_cxcywh(3))),
    "HungarianMatcher": lambda: (HungarianMatcher(), (torch.randn(5, 4), _boxes_cxcywh(5), torch.tensor([1, 3, 0]), _boxes_cxcywh(3))),
    "greedy_match": lambda: (greedy_match, (torch.rand(4, 3),)),
    "assign_fpn_levels": lambda: (assign_fpn_levels, (torch.tensor([[0.0, 0.0, 40.0, 40.0], [0, 0, 300, 200], [10, 10, 600, 700], [5, 5, 100, 90]]),)),
    "LayerDropStage": lambda: (LayerDropStage(), (torch.randn(2, 8, 5, 6),)),
    "SetCriterion": lambda: (SetCriterion(), (torch.randn(2, 5, 5), torch.rand(2, 5, 4) * 0.3 + 0.2,
                                              [{"labels": torch.tensor([1, 3]), "boxes": _boxes_cxcywh(2)}, {"labels": torch.tensor([0]), "boxes": _boxes_cxcywh(1)}],
                                              [(torch.tensor([0, 3]), torch.tensor([1, 0])), (torch.tensor([2]), torch.tensor([0]))])),
    "filter_proposals": lambda: (filter_proposals, (torch.cat([torch.rand(8, 2) * 20, torch.rand(8, 2) * 20 + 12], 1), torch.rand(8))),
    "HookedFeatureExtractor": lambda: (HookedFeatureExtractor(), (torch.randn(2, 3, 6, 5),)),
    "SqueezeExcite": lambda: (SqueezeExcite(), (torch.randn(2, 8, 5, 6),)),
    "numpy_center_prior": lambda: (numpy_center_prior, (torch.randn(2, 4, 3, 5),)),
}
