"""Evaluation metrics computed inside compiled eval code (where host syncs tend to creep in)."""
import math
from collections import Counter

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


@torch.compile
def topk_accuracy(logits, target, ks=(1, 3)):
    top = logits.topk(max(ks), dim=-1).indices
    hits = top == target[:, None]
    return [hits[:, :k].any(-1).float().mean().item() for k in ks]  # expect: FL102 GB0124


@torch.compile
def topk_accuracy_tensor(logits, target, ks=(1, 3)):
    top = logits.topk(max(ks), dim=-1).indices
    hits = top == target[:, None]
    return torch.stack([hits[:, :k].any(-1).float().mean() for k in ks])


@torch.compile
def precision_recall(pred, target):
    tp = (pred & target).sum()
    fp = (pred & ~target).sum()
    fn = (~pred & target).sum()
    if tp + fp == 0:  # expect: FL101 GB0170
        return torch.zeros(()), tp / (tp + fn)
    return tp / (tp + fp), tp / (tp + fn)


@torch.compile
def f1_safe(pred, target, eps: float = 1e-8):
    tp = (pred & target).sum().float()
    return 2 * tp / (pred.sum() + target.sum() + eps)


@torch.compile
def mean_iou(pred, target, classes: int = 3):
    ious = []
    for c in range(classes):
        inter = ((pred == c) & (target == c)).sum()
        union = ((pred == c) | (target == c)).sum()
        if union == 0:  # expect: FL101 GB0170
            continue
        ious.append(inter / union)
    return torch.stack(ious).mean()


@torch.compile
def mean_iou_static(pred, target, classes: int = 3):
    c = torch.arange(classes)[:, None]
    inter = ((pred[None] == c) & (target[None] == c)).sum(-1)
    union = ((pred[None] == c) | (target[None] == c)).sum(-1)
    valid = union > 0
    return torch.where(valid, inter / union.clamp(min=1), 0).sum() / valid.sum()


@torch.compile
def psnr(pred, target, max_val: float = 1.0):
    mse = F.mse_loss(pred, target)
    return 10 * math.log10(max_val ** 2 / mse)  # expect: FL104 GB0033


@torch.compile
def psnr_tensor(pred, target, max_val: float = 1.0):
    return 10 * torch.log10(max_val ** 2 / F.mse_loss(pred, target))


@torch.compile
def expected_calibration_error(probs, target, bins: int = 5):
    conf, pred = probs.max(-1)
    correct = (pred == target).float()
    edges = torch.linspace(0, 1, bins + 1)
    ece = torch.zeros(())
    for lo, hi in zip(edges[:-1], edges[1:]):
        in_bin = (conf > lo) & (conf <= hi)
        if in_bin.any():  # expect: FL101 GB0170
            ece += in_bin.float().mean() * (conf[in_bin].mean() - correct[in_bin].mean()).abs()
    return ece


@torch.compile
def ngram_overlap(candidate, reference, n: int = 2):
    cand, ref = candidate.tolist(), reference.tolist()  # expect: FL104 GB0033
    grams = lambda s: Counter(tuple(s[i:i + n]) for i in range(len(s) - n + 1))  # noqa: E731
    overlap = grams(cand) & grams(ref)
    return sum(overlap.values()) / max(1, len(cand) - n + 1)


@torch.compile
def average_precision(scores, labels):
    ranked = sorted(zip(scores.tolist(), labels.tolist()), reverse=True)  # expect: FL103 GB0109; FL104 GB0033
    hits, total = 0, 0.0
    for i, (_, label) in enumerate(ranked, 1):
        if label:
            hits += 1
            total += hits / i
    return total / max(1, hits)


@torch.compile
def average_precision_tensor(scores, labels):
    order = scores.argsort(descending=True)
    hits = labels[order].float()
    precision_at_k = hits.cumsum(0) / torch.arange(1, len(hits) + 1)
    return (precision_at_k * hits).sum() / hits.sum().clamp(min=1)


@torch.compile
def pearson(x, y):
    x, y = x - x.mean(), y - y.mean()
    return (x * y).sum() / (x.norm() * y.norm())


@torch.compile
def label_names(logits, names):
    ids = logits.argmax(-1)
    return [names[i] for i in ids]  # expect: FL102 GB0124


@torch.compile
def format_report(loss, acc):
    return "loss {:.3f} acc {:.2%}".format(loss, acc)


@torch.compile
def numpy_auc(scores, labels):
    s, y = scores.numpy(), labels.numpy()
    pos, neg = s[y == 1], s[y == 0]  # expect: FL105 GB0036
    return (pos[:, None] > neg[None, :]).mean()


@torch.compile
def numpy_confusion(pred, target, classes: int = 3):
    counts = np.zeros((classes, classes), dtype=np.int64)
    np.add.at(counts, (target.numpy(), pred.numpy()), 1)  # expect: FL122 GB0290
    return torch.from_numpy(counts)


class RunningMean(nn.Module):
    """A metric object that keeps its running sum as a Python float."""

    def __init__(self):
        super().__init__()
        self.total = 0.0
        self.register_buffer("count", torch.zeros((), dtype=torch.long))

    def forward(self, values):
        self.total += values.sum().item()  # expect: FL102 GB0124; FL302
        self.count += values.numel()
        return values.mean()


class TensorRunningMean(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("total", torch.zeros(()))
        self.register_buffer("count", torch.zeros((), dtype=torch.long))

    def forward(self, values):
        self.total += values.sum()
        self.count += values.numel()
        return self.total / self.count


class MetricCollection(nn.Module):
    def __init__(self, classes=3):
        super().__init__()
        self.classes = classes

    def forward(self, logits, target):
        pred = logits.argmax(-1)
        acc = (pred == target).float().mean()
        per_class = torch.stack([(pred[target == c] == c).float().mean() for c in range(self.classes)])  # expect: FL105 GB0036
        return {"acc": acc, "per_class": per_class}


def _cls(n=8, c=3):
    return torch.randn(n, c), torch.randint(0, c, (n,))


CASES = {
    "topk_accuracy": lambda: (topk_accuracy, _cls(8, 5)),
    "topk_accuracy_tensor": lambda: (topk_accuracy_tensor, _cls(8, 5)),
    "precision_recall": lambda: (precision_recall, (torch.rand(10) > 0.5, torch.rand(10) > 0.5)),
    "f1_safe": lambda: (f1_safe, (torch.rand(10) > 0.5, torch.rand(10) > 0.5)),
    "mean_iou": lambda: (mean_iou, (torch.randint(0, 3, (20,)), torch.randint(0, 3, (20,)))),
    "mean_iou_static": lambda: (mean_iou_static, (torch.randint(0, 3, (20,)), torch.randint(0, 3, (20,)))),
    "psnr": lambda: (psnr, (torch.rand(2, 3, 4, 4), torch.rand(2, 3, 4, 4))),
    "psnr_tensor": lambda: (psnr_tensor, (torch.rand(2, 3, 4, 4), torch.rand(2, 3, 4, 4))),
    "expected_calibration_error": lambda: (expected_calibration_error, (torch.rand(12, 3).softmax(-1), torch.randint(0, 3, (12,)))),
    "ngram_overlap": lambda: (ngram_overlap, (torch.randint(0, 5, (9,)), torch.randint(0, 5, (9,)))),
    "average_precision": lambda: (average_precision, (torch.rand(8), torch.randint(0, 2, (8,)))),
    "average_precision_tensor": lambda: (average_precision_tensor, (torch.rand(8), torch.randint(0, 2, (8,)))),
    "pearson": lambda: (pearson, (torch.randn(10), torch.randn(10))),
    "label_names": lambda: (label_names, (torch.randn(4, 3), ["cat", "dog", "bird"])),
    "format_report": lambda: (format_report, (torch.tensor(0.25), torch.tensor(0.5))),
    "numpy_auc": lambda: (numpy_auc, (torch.rand(10), torch.tensor([0, 1] * 5))),
    "numpy_confusion": lambda: (numpy_confusion, (torch.randint(0, 3, (10,)), torch.randint(0, 3, (10,)))),
    "RunningMean": lambda: (RunningMean(), (torch.rand(6),)),
    "TensorRunningMean": lambda: (TensorRunningMean(), (torch.rand(6),)),
    "MetricCollection": lambda: (MetricCollection(), _cls(12, 3)),
}
