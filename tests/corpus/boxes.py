"""Detection box utilities: conversions, IoU, NMS (greedy, batched), target assignment."""
import torch
from torch import Tensor, nn


def box_area(boxes: Tensor) -> Tensor:
    return (boxes[:, 2] - boxes[:, 0]).clamp(min=0) * (boxes[:, 3] - boxes[:, 1]).clamp(min=0)


def box_iou(a: Tensor, b: Tensor) -> Tensor:
    lt = torch.max(a[:, None, :2], b[None, :, :2])
    rb = torch.min(a[:, None, 2:], b[None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    return inter / (box_area(a)[:, None] + box_area(b)[None, :] - inter)


@torch.compile
def cxcywh_to_xyxy(boxes: Tensor) -> Tensor:
    cx, cy, w, h = boxes.unbind(-1)
    return torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], dim=-1)


@torch.compile
def clip_boxes(boxes, height: int, width: int):
    x = boxes[..., 0::2].clamp(0, width)
    y = boxes[..., 1::2].clamp(0, height)
    return torch.stack((x[..., 0], y[..., 0], x[..., 1], y[..., 1]), dim=-1)


@torch.compile
def pairwise_iou(a, b):
    return box_iou(a, b)


@torch.compile
def generalized_iou(a, b):
    iou = box_iou(a, b)
    lt = torch.min(a[:, None, :2], b[None, :, :2])
    rb = torch.max(a[:, None, 2:], b[None, :, 2:])
    hull = (rb - lt).clamp(min=0).prod(-1)
    union = box_area(a)[:, None] + box_area(b)[None, :] - iou * hull
    return iou - (hull - union) / hull


@torch.compile
def greedy_nms(boxes, scores, iou_threshold: float = 0.5):
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
def matrix_nms(boxes, scores, sigma: float = 0.5):
    """SOLO-style Matrix NMS: decays scores instead of removing boxes (static shapes)."""
    order = scores.argsort(descending=True)
    boxes, scores = boxes[order], scores[order]
    iou = box_iou(boxes, boxes).triu(diagonal=1)
    compensate = iou.max(0).values
    decay = torch.exp(-(iou ** 2 - compensate[:, None] ** 2) / sigma).min(0).values
    return scores * decay


@torch.compile
def score_filter(boxes, scores, threshold: float = 0.3):
    keep = scores > threshold
    return boxes[keep], scores[keep]  # expect: FL105 GB0036


@torch.compile
def top_detections(boxes, scores, k: int = 3):
    k = min(k, scores.numel())
    values, idx = scores.topk(k)
    return boxes[idx], values


@torch.compile
def batched_nms_offsets(boxes, labels):
    """The coordinate trick behind torchvision's batched_nms."""
    offsets = labels.to(boxes) * (boxes.max() + 1)
    return boxes + offsets[:, None]


class AnchorGenerator(nn.Module):
    def __init__(self, sizes=(8, 16), ratios=(0.5, 1.0, 2.0)):
        super().__init__()
        sizes, ratios = torch.tensor(sizes, dtype=torch.float), torch.tensor(ratios)
        h = (sizes[:, None] * ratios.sqrt()[None]).flatten()
        w = (sizes[:, None] / ratios.sqrt()[None]).flatten()
        self.register_buffer("base", torch.stack([-w, -h, w, h], dim=1) / 2)

    def forward(self, feature, stride: int):
        fh, fw = feature.shape[-2:]
        ys = torch.arange(fh, dtype=torch.float32) * stride
        xs = torch.arange(fw, dtype=torch.float32) * stride
        cy, cx = torch.meshgrid(ys, xs, indexing="ij")
        shifts = torch.stack((cx, cy, cx, cy), dim=-1).reshape(-1, 1, 4)
        return (shifts + self.base[None]).reshape(-1, 4)


class BoxCoder(nn.Module):
    def __init__(self, weights=(10.0, 10.0, 5.0, 5.0), clip=4.135):
        super().__init__()
        self.weights, self.clip = weights, clip

    def forward(self, deltas, anchors):
        wx, wy, ww, wh = self.weights
        widths = anchors[:, 2] - anchors[:, 0]
        heights = anchors[:, 3] - anchors[:, 1]
        cx = anchors[:, 0] + 0.5 * widths + deltas[:, 0] / wx * widths
        cy = anchors[:, 1] + 0.5 * heights + deltas[:, 1] / wy * heights
        w = torch.exp((deltas[:, 2] / ww).clamp(max=self.clip)) * widths
        h = torch.exp((deltas[:, 3] / wh).clamp(max=self.clip)) * heights
        return torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], dim=1)


class TargetAssigner(nn.Module):
    """Matches anchors to ground truth; positives are gathered with nonzero()."""

    def __init__(self, fg_iou=0.5):
        super().__init__()
        self.fg_iou = fg_iou

    def forward(self, anchors, gt_boxes):
        iou = box_iou(gt_boxes, anchors)
        best_iou, best_gt = iou.max(0)
        positive = (best_iou >= self.fg_iou).nonzero().squeeze(1)  # expect: FL105 GB0036
        return positive, best_gt[positive]


class SafeTargetAssigner(TargetAssigner):
    """Same matching with static shapes: a label per anchor, -1 for background."""

    def forward(self, anchors, gt_boxes):
        iou = box_iou(gt_boxes, anchors)
        best_iou, best_gt = iou.max(0)
        return torch.where(best_iou >= self.fg_iou, best_gt, torch.full_like(best_gt, -1))


class RoIScaler(nn.Module):
    def forward(self, boxes, image_size):
        height, width = image_size
        if boxes.numel() == 0:  # expect: FL301
            return boxes
        scale = torch.tensor([width, height, width, height], dtype=boxes.dtype)
        return boxes / scale


def _boxes(n=6):
    xy = torch.rand(n, 2) * 20
    return torch.cat([xy, xy + torch.rand(n, 2) * 10 + 1], dim=1)


CASES = {
    "cxcywh_to_xyxy": lambda: (cxcywh_to_xyxy, (torch.rand(5, 4),)),
    "clip_boxes": lambda: (clip_boxes, (_boxes() * 2, 30, 40)),
    "pairwise_iou": lambda: (pairwise_iou, (_boxes(4), _boxes(6))),
    "generalized_iou": lambda: (generalized_iou, (_boxes(4), _boxes(6))),
    "greedy_nms": lambda: (greedy_nms, (_boxes(6), torch.rand(6))),
    "matrix_nms": lambda: (matrix_nms, (_boxes(6), torch.rand(6))),
    "score_filter": lambda: (score_filter, (_boxes(6), torch.rand(6))),
    "top_detections": lambda: (top_detections, (_boxes(6), torch.rand(6))),
    "batched_nms_offsets": lambda: (batched_nms_offsets, (_boxes(6), torch.randint(0, 3, (6,)))),
    "AnchorGenerator": lambda: (AnchorGenerator(), (torch.randn(1, 8, 4, 5), 8)),
    "BoxCoder": lambda: (BoxCoder(), (torch.randn(6, 4) * 0.1, _boxes(6))),
    "TargetAssigner": lambda: (TargetAssigner(), (_boxes(7), _boxes(3))),
    "SafeTargetAssigner": lambda: (SafeTargetAssigner(), (_boxes(7), _boxes(3))),
    "RoIScaler": lambda: (RoIScaler(), (_boxes(5), (32, 48)), (torch.zeros(0, 4), (32, 48))),
}
