"""Detection post-processing: anchors, box coders, YOLO/DETR/CenterNet decoding, matching, thresholds, NMS."""
import logging
import math
from dataclasses import dataclass, field
from typing import Dict, List, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

log = logging.getLogger("detect")


@dataclass
class PostprocessConfig:
    score_thresh: float = 0.05
    nms_thresh: float = 0.5
    pre_nms_topk: int = 8
    max_det: int = 100
    num_classes: int = 3
    strides: List[int] = field(default_factory=lambda: [8, 16])


def box_cxcywh_to_xyxy(x):
    cx, cy, w, h = x.unbind(-1)
    return torch.stack([cx - 0.5 * w, cy - 0.5 * h, cx + 0.5 * w, cy + 0.5 * h], dim=-1)


def box_area(boxes):
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def box_iou(boxes1, boxes2):
    area1, area2 = box_area(boxes1), box_area(boxes2)
    lt = torch.max(boxes1[:, None, :2], boxes2[:, :2])
    rb = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    return inter / (area1[:, None] + area2 - inter)


class AnchorGenerator(nn.Module):
    def __init__(self, sizes=(32, 64), aspect_ratios=(0.5, 1.0, 2.0), strides=(8, 16)):
        super().__init__()
        self.strides = strides
        self.cell_anchors = [self._base_anchors(s, aspect_ratios) for s in sizes]
        self._cache: Dict[str, torch.Tensor] = {}

    @staticmethod
    def _base_anchors(size, ratios):
        ratios = torch.as_tensor(ratios)
        h_ratios = torch.sqrt(ratios)
        w_ratios = 1 / h_ratios
        ws, hs = (w_ratios * size).view(-1), (h_ratios * size).view(-1)
        return (torch.stack([-ws, -hs, ws, hs], dim=1) / 2).round()

    def grid_anchors(self, grid_sizes):
        anchors = []
        for (gh, gw), stride, base in zip(grid_sizes, self.strides, self.cell_anchors):
            shifts_x = torch.arange(0, gw, dtype=torch.float32) * stride
            shifts_y = torch.arange(0, gh, dtype=torch.float32) * stride
            shift_y, shift_x = torch.meshgrid(shifts_y, shifts_x, indexing="ij")
            shifts = torch.stack((shift_x.reshape(-1), shift_y.reshape(-1)) * 2, dim=1)
            anchors.append((shifts.view(-1, 1, 4) + base.view(1, -1, 4)).reshape(-1, 4))
        return anchors

    def forward(self, feature_maps: List[torch.Tensor]):
        grid_sizes = [tuple(f.shape[-2:]) for f in feature_maps]
        key = str(grid_sizes)
        if key not in self._cache:
            self._cache[key] = torch.cat(self.grid_anchors(grid_sizes))  # expect: FL302
        return self._cache[key]


class BoxCoder(nn.Module):
    def __init__(self, weights=(10.0, 10.0, 5.0, 5.0), clip=math.log(1000.0 / 16)):
        super().__init__()
        self.weights = weights
        self.clip = clip

    def forward(self, rel_codes, anchors):
        widths = anchors[:, 2] - anchors[:, 0]
        heights = anchors[:, 3] - anchors[:, 1]
        ctr_x = anchors[:, 0] + 0.5 * widths
        ctr_y = anchors[:, 1] + 0.5 * heights
        wx, wy, ww, wh = self.weights
        dx, dy = rel_codes[:, 0] / wx, rel_codes[:, 1] / wy
        dw = torch.clamp(rel_codes[:, 2] / ww, max=self.clip)
        dh = torch.clamp(rel_codes[:, 3] / wh, max=self.clip)
        pcx, pcy = dx * widths + ctr_x, dy * heights + ctr_y
        pw, ph = torch.exp(dw) * widths, torch.exp(dh) * heights
        return torch.stack([pcx - 0.5 * pw, pcy - 0.5 * ph, pcx + 0.5 * pw, pcy + 0.5 * ph], dim=1)


class YoloDetect(nn.Module):
    def __init__(self, nc=3, anchors=((10, 13, 16, 30), (30, 61, 62, 45)), ch=(8, 16), strides=(8, 16)):
        super().__init__()
        self.nc, self.no, self.nl, self.na = nc, nc + 5, len(anchors), len(anchors[0]) // 2
        self.grid = [torch.empty(0) for _ in range(self.nl)]
        self.register_buffer("anchor_grid", torch.tensor(anchors).float().view(self.nl, 1, -1, 1, 1, 2))
        self.stride = strides
        self.m = nn.ModuleList(nn.Conv2d(c, self.no * self.na, 1) for c in ch)

    @staticmethod
    def _make_grid(nx, ny):
        yv, xv = torch.meshgrid(torch.arange(ny), torch.arange(nx), indexing="ij")
        return torch.stack((xv, yv), 2).view(1, 1, ny, nx, 2).float()

    def forward(self, xs):
        z = []
        for i in range(self.nl):
            x = self.m[i](xs[i])
            bs, _, ny, nx = x.shape
            x = x.view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
            if self.grid[i].shape[2:4] != x.shape[2:4]:
                self.grid[i] = self._make_grid(nx, ny)
            y = x.sigmoid()
            xy = (y[..., 0:2] * 2 - 0.5 + self.grid[i]) * self.stride[i]
            wh = (y[..., 2:4] * 2) ** 2 * self.anchor_grid[i].view(1, self.na, 1, 1, 2)
            z.append(torch.cat((xy, wh, y[..., 4:]), -1).view(bs, -1, self.no))
        return torch.cat(z, 1)


class DetrPostProcess(nn.Module):
    def forward(self, pred_logits, pred_boxes, target_sizes):
        prob = F.softmax(pred_logits, -1)
        scores, labels = prob[..., :-1].max(-1)
        boxes = box_cxcywh_to_xyxy(pred_boxes)
        img_h, img_w = target_sizes.unbind(1)
        scale_fct = torch.stack([img_w, img_h, img_w, img_h], dim=1)
        boxes = boxes * scale_fct[:, None, :]
        return [{"scores": s, "labels": l, "boxes": b} for s, l, b in zip(scores, labels, boxes)]


class Matcher(nn.Module):
    """RetinaNet-style IoU matcher: -1 below low threshold, -2 in between."""

    def __init__(self, high=0.5, low=0.4, allow_low_quality_matches=True):
        super().__init__()
        self.high, self.low = high, low
        self.allow_low_quality_matches = allow_low_quality_matches

    def forward(self, match_quality_matrix):
        if match_quality_matrix.numel() == 0:
            raise ValueError("No ground-truth boxes available for one of the images")
        matched_vals, matches = match_quality_matrix.max(dim=0)
        all_matches = matches.clone() if self.allow_low_quality_matches else None
        below_low = matched_vals < self.low
        between = (matched_vals >= self.low) & (matched_vals < self.high)
        matches[below_low] = -1
        matches[between] = -2
        if self.allow_low_quality_matches:
            highest_quality, _ = match_quality_matrix.max(dim=1)
            gt_pred_pairs = torch.nonzero(match_quality_matrix == highest_quality[:, None])  # expect: FL105 GB0036
            pred_inds_to_update = gt_pred_pairs[:, 1]
            matches[pred_inds_to_update] = all_matches[pred_inds_to_update]
        return matches


class CenterNetDecoder(nn.Module):
    def __init__(self, k: int = 5):
        super().__init__()
        self.k = k

    def forward(self, heat, wh, reg):
        batch, cat, height, width = heat.shape
        hmax = F.max_pool2d(heat, 3, stride=1, padding=1)
        heat = heat * (hmax == heat).float()
        scores, inds = torch.topk(heat.view(batch, -1), self.k)
        clses = torch.div(inds, height * width, rounding_mode="floor")
        inds = inds % (height * width)
        ys = torch.div(inds, width, rounding_mode="floor").float()
        xs = (inds % width).float()
        reg = reg.view(batch, 2, -1).gather(2, inds[:, None].expand(-1, 2, -1))
        wh = wh.view(batch, 2, -1).gather(2, inds[:, None].expand(-1, 2, -1))
        xs, ys = xs + reg[:, 0], ys + reg[:, 1]
        boxes = torch.stack([xs - wh[:, 0] / 2, ys - wh[:, 1] / 2, xs + wh[:, 0] / 2, ys + wh[:, 1] / 2], -1)
        return boxes, scores, clses


@torch.compile
def sigmoid_focal_loss(inputs, targets, alpha: float = 0.25, gamma: float = 2.0):
    p = torch.sigmoid(inputs)
    ce = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce * ((1 - p_t) ** gamma)
    alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
    num_pos = max(1.0, targets.sum().item())  # expect: FL102 GB0124
    return (alpha_t * loss).sum() / num_pos


@torch.compile
def filter_by_score(boxes, scores, labels, score_thresh: float = 0.05):
    keep = scores > score_thresh
    boxes, scores, labels = boxes[keep], scores[keep], labels[keep]  # expect: FL105 GB0036
    log.debug("kept %d / %d boxes", keep.sum(), keep.numel())  # expect: FL111 GB0291
    return boxes, scores, labels


def nms(boxes, scores, iou_threshold: float):
    order = scores.argsort(descending=True)
    keep = []
    while order.numel() > 0:
        i = order[0]
        keep.append(i)
        if order.numel() == 1:
            break
        ious = box_iou(boxes[i][None], boxes[order[1:]])[0]  # expect: FL104 GB0033
        order = order[1:][ious <= iou_threshold]
    return torch.stack(keep)


@torch.compile
def batched_nms(boxes, scores, idxs, iou_threshold: float = 0.5):
    max_coordinate = boxes.max()
    offsets = idxs.to(boxes) * (max_coordinate + 1)
    boxes_for_nms = boxes + offsets[:, None]
    return nms(boxes_for_nms, scores, iou_threshold)


@torch.compile
def select_topk_candidates(scores, boxes, cfg: PostprocessConfig = PostprocessConfig()):
    scores = scores.flatten()
    if scores.shape[0] > cfg.pre_nms_topk:  # expect: FL301
        scores, idx = scores.topk(cfg.pre_nms_topk)
        boxes = boxes[idx]
    return scores, boxes


@torch.compile
def multiclass_postprocess(cls_logits, box_regression, anchors, cfg: PostprocessConfig = PostprocessConfig()):
    coder = BoxCoder()
    boxes = coder(box_regression, anchors)
    scores = cls_logits.sigmoid()
    results = []
    for c in range(cfg.num_classes):
        s = scores[:, c]
        k = min(cfg.pre_nms_topk, s.numel())
        top_s, top_i = s.topk(k)
        results.append((boxes[top_i], top_s, torch.full_like(top_s, c, dtype=torch.long)))
    all_boxes = torch.cat([r[0] for r in results])
    all_scores = torch.cat([r[1] for r in results])
    all_labels = torch.cat([r[2] for r in results])
    order = all_scores.argsort(descending=True)[: cfg.max_det]
    return all_boxes[order], all_scores[order], all_labels[order]


@torch.compile
def clip_boxes_to_image(boxes, size: Tuple[int, int]):
    height, width = size
    x = boxes[..., 0::2].clamp(min=0, max=width)
    y = boxes[..., 1::2].clamp(min=0, max=height)
    return torch.stack((x, y), dim=-1).reshape(boxes.shape)


@torch.compile
def remove_small_boxes(boxes, min_size: float = 1.0):
    ws, hs = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    keep = (ws >= min_size) & (hs >= min_size)
    keep = torch.where(keep)[0]  # expect: FL105 GB0036
    return keep


@torch.compile
def average_precision(tp, conf, n_gt: int):
    order = torch.argsort(-conf)
    tp = tp[order].cpu().numpy()
    fpc = (1 - tp).cumsum()
    tpc = tp.cumsum()
    recall = tpc / (n_gt + 1e-16)
    precision = tpc / (tpc + fpc)
    mrec = np.concatenate(([0.0], recall, [1.0]))
    mpre = np.concatenate(([1.0], precision, [0.0]))
    mpre = np.flip(np.maximum.accumulate(np.flip(mpre)))  # expect: FL122 GB0290
    return float(np.sum((mrec[1:] - mrec[:-1]) * mpre[1:]))  # expect: FL104 GB0033


@torch.compile
def detection_stats(scores, labels, num_classes: int = 3):
    per_class = torch.bincount(labels, minlength=num_classes)  # expect: FL105 GB0036
    stats = {"num_dets": scores.numel(), "mean_score": scores.mean().item()}  # expect: FL102 GB0124
    for c in range(num_classes):
        stats[f"class_{c}"] = int(per_class[c])  # expect: FL102 GB0124
    print(f"detections: {stats}")
    return stats


decode_centers = torch.compile(box_cxcywh_to_xyxy)


class ExportableHead(nn.Module):
    def __init__(self, c=8, num_anchors=3):
        super().__init__()
        self.cls = nn.Conv2d(c, num_anchors, 3, padding=1)
        self.reg = nn.Conv2d(c, num_anchors * 4, 3, padding=1)

    def forward(self, feat):
        n = feat.shape[0]
        logits = self.cls(feat).permute(0, 2, 3, 1).reshape(n, -1)
        deltas = self.reg(feat).permute(0, 2, 3, 1).reshape(n, -1, 4)
        if logits.sigmoid().max() < 0.01:  # expect: FL101 GB0170; FL201
            deltas = torch.zeros_like(deltas)
        return logits, deltas


def export_head():
    traced = torch.jit.trace(ExportableHead(), torch.randn(1, 8, 6, 6))
    traced.save("detector_head.pt")
    return traced


def _retina_inputs(n=12):
    return torch.randn(n, 3), torch.randn(n, 4) * 0.1, AnchorGenerator().grid_anchors([(2, 3)])[0][:n]


CASES = {
    "AnchorGenerator": lambda: (AnchorGenerator(), ([torch.randn(1, 4, 4, 6), torch.randn(1, 4, 2, 3)],)),
    "BoxCoder": lambda: (BoxCoder(), (torch.randn(6, 4) * 0.1, torch.tensor([[0.0, 0, 10, 10]] * 6) + torch.arange(6.0)[:, None])),
    "YoloDetect": lambda: (YoloDetect(), ([torch.randn(2, 8, 4, 6), torch.randn(2, 16, 2, 3)],)),
    "DetrPostProcess": lambda: (DetrPostProcess(), (torch.randn(2, 5, 4), torch.rand(2, 5, 4), torch.tensor([[480, 640], [600, 800]]))),
    "Matcher": lambda: (Matcher(), (torch.rand(3, 7),)),
    "CenterNetDecoder": lambda: (CenterNetDecoder(), (torch.rand(2, 3, 6, 7), torch.rand(2, 2, 6, 7), torch.rand(2, 2, 6, 7))),
    "sigmoid_focal_loss": lambda: (sigmoid_focal_loss, (torch.randn(6, 3), (torch.rand(6, 3) > 0.7).float())),
    "filter_by_score": lambda: (filter_by_score, (torch.rand(6, 4), torch.rand(6), torch.randint(0, 3, (6,)), 0.3)),
    "batched_nms": lambda: (batched_nms, (torch.tensor([[0.0, 0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30], [0, 0, 10, 10]]),
                                          torch.tensor([0.9, 0.8, 0.7, 0.6]), torch.tensor([0, 0, 1, 1]))),
    "select_topk_candidates": lambda: (select_topk_candidates, (torch.rand(5), torch.rand(5, 4)),
                                       (torch.rand(12), torch.rand(12, 4))),
    "multiclass_postprocess": lambda: (multiclass_postprocess, _retina_inputs()),
    "clip_boxes_to_image": lambda: (clip_boxes_to_image, (torch.randn(5, 4) * 50, (40, 60))),
    "remove_small_boxes": lambda: (remove_small_boxes, (torch.tensor([[0.0, 0, 5, 5], [1, 1, 1.5, 3], [2, 2, 9, 4]]),)),
    "average_precision": lambda: (average_precision, (torch.tensor([1.0, 0, 1, 1, 0]), torch.rand(5), 4)),
    "detection_stats": lambda: (detection_stats, (torch.rand(7), torch.tensor([0, 1, 2, 1, 1, 0, 2]))),
    "decode_centers": lambda: (decode_centers, (torch.rand(2, 5, 4),)),
    "ExportableHead": lambda: (ExportableHead(), (torch.randn(2, 8, 6, 6),)),
}

TRACED = {
    "ExportableHead": lambda: (ExportableHead().eval(), (torch.randn(1, 8, 6, 6),)),
}
