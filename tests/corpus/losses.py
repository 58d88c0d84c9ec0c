"""Loss functions: focal, label smoothing, contrastive, dice -- and the metrics people log."""
import math

import torch
import torch.nn.functional as F
from torch import nn


class FocalLoss(nn.Module):
    def __init__(self, alpha: float = 0.25, gamma: float = 2.0, reduction: str = "mean"):
        super().__init__()
        self.alpha, self.gamma, self.reduction = alpha, gamma, reduction

    def forward(self, logits, targets):
        p = logits.sigmoid()
        ce = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")
        p_t = p * targets + (1 - p) * (1 - targets)
        loss = ce * (1 - p_t) ** self.gamma
        if self.alpha >= 0:
            loss = loss * (self.alpha * targets + (1 - self.alpha) * (1 - targets))
        if self.reduction == "mean":
            return loss.mean()
        return loss.sum() if self.reduction == "sum" else loss


class LabelSmoothingCE(nn.Module):
    def __init__(self, smoothing=0.1, ignore_index=-100):
        super().__init__()
        self.smoothing, self.ignore_index = smoothing, ignore_index

    def forward(self, logits, target):
        logp = logits.log_softmax(-1)
        valid = target != self.ignore_index
        safe = target.clamp(min=0)
        nll = -logp.gather(-1, safe[:, None]).squeeze(-1)
        smooth = -logp.mean(-1)
        loss = (1 - self.smoothing) * nll + self.smoothing * smooth
        return (loss * valid).sum() / valid.sum().clamp(min=1)


class MaskedLabelSmoothingCE(LabelSmoothingCE):
    """Drops ignored positions with a boolean mask first (dynamic shape)."""

    def forward(self, logits, target):
        valid = target != self.ignore_index
        return super().forward(logits[valid], target[valid])  # expect: FL105 GB0036


class InfoNCE(nn.Module):
    def __init__(self, temperature=0.07):
        super().__init__()
        self.log_scale = nn.Parameter(torch.tensor(math.log(1 / temperature)))

    def forward(self, a, b):
        a, b = F.normalize(a, dim=-1), F.normalize(b, dim=-1)
        logits = a @ b.t() * self.log_scale.exp().clamp(max=100)
        labels = torch.arange(a.shape[0], device=a.device)
        return (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels)) / 2


class TripletLoss(nn.Module):
    def __init__(self, margin=0.2):
        super().__init__()
        self.margin = margin

    def forward(self, anchor, positive, negative):
        d_pos = (anchor - positive).pow(2).sum(-1)
        d_neg = (anchor - negative).pow(2).sum(-1)
        losses = F.relu(d_pos - d_neg + self.margin)
        hard = losses[losses > 0]  # expect: FL105 GB0036
        return hard.mean() if hard.numel() else losses.sum()  # expect: FL301


class DiceLoss(nn.Module):
    def forward(self, logits, masks, eps: float = 1.0):
        probs = logits.sigmoid().flatten(1)
        masks = masks.flatten(1)
        inter = (probs * masks).sum(-1)
        return 1 - ((2 * inter + eps) / (probs.sum(-1) + masks.sum(-1) + eps)).mean()


class LossWithMetrics(nn.Module):
    """Returns the loss and a dict of Python floats for the progress bar."""

    def __init__(self):
        super().__init__()
        self.ce = nn.CrossEntropyLoss()

    def forward(self, logits, target):
        loss = self.ce(logits, target)
        acc = (logits.argmax(-1) == target).float().mean()
        metrics = {"loss": loss.item(), "acc": acc.item()}  # expect: FL102 GB0124
        return loss, metrics


class NaNGuardLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.mse = nn.MSELoss()

    def forward(self, pred, target):
        loss = self.mse(pred, target)
        if not torch.isfinite(loss):  # expect: FL101 GB0170
            loss = torch.zeros_like(loss)
        return loss


@torch.compile
def kl_divergence(p_logits, q_logits, temperature: float = 2.0):
    p = F.log_softmax(p_logits / temperature, dim=-1)
    q = F.softmax(q_logits / temperature, dim=-1)
    return F.kl_div(p, q, reduction="batchmean") * temperature ** 2


@torch.compile
def smooth_l1(pred, target, beta: float = 1.0):
    diff = (pred - target).abs()
    return torch.where(diff < beta, 0.5 * diff ** 2 / beta, diff - 0.5 * beta).mean()


@torch.compile
def balanced_bce(logits, targets):
    pos = targets.sum()
    neg = targets.numel() - pos
    pos_weight = neg / pos.clamp(min=1)
    return F.binary_cross_entropy_with_logits(logits, targets, pos_weight=pos_weight)


@torch.compile
def ohem_loss(logits, targets, keep_ratio: float = 0.5):
    losses = F.cross_entropy(logits, targets, reduction="none")
    k = max(1, int(keep_ratio * losses.numel()))
    return losses.topk(k).values.mean()


@torch.compile
def weighted_ce(logits, targets, class_counts):
    weights = 1.0 / class_counts.float()
    weights = weights / weights.sum() * len(class_counts)
    return F.cross_entropy(logits, targets, weight=weights)


@torch.compile
def contrastive_loss(x1, x2, same, margin: float = 1.0):
    d = F.pairwise_distance(x1, x2)
    loss = same * d.pow(2) + (1 - same) * F.relu(margin - d).pow(2)
    return loss.mean(), math.sqrt(loss.mean())  # expect: FL104 GB0033


@torch.compile
def perplexity(logits, targets):
    nll = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    return math.exp(nll)  # expect: FL104 GB0033


@torch.compile
def center_loss(features, labels, centers):
    batch_centers = centers.index_select(0, labels)
    return ((features - batch_centers) ** 2).sum(-1).mean() / 2


CASES = {
    "FocalLoss": lambda: (FocalLoss(), (torch.randn(8, 3), torch.randint(0, 2, (8, 3)).float())),
    "FocalLoss_none": lambda: (FocalLoss(alpha=-1, reduction="none"), (torch.randn(8, 3), torch.rand(8, 3))),
    "LabelSmoothingCE": lambda: (LabelSmoothingCE(), (torch.randn(6, 5), torch.tensor([1, -100, 3, 0, 4, -100]))),
    "MaskedLabelSmoothingCE": lambda: (MaskedLabelSmoothingCE(), (torch.randn(6, 5), torch.tensor([1, -100, 3, 0, 4, -100]))),
    "InfoNCE": lambda: (InfoNCE(), (torch.randn(4, 8), torch.randn(4, 8))),
    "TripletLoss": lambda: (
        TripletLoss(), (torch.randn(5, 8), torch.randn(5, 8), torch.randn(5, 8)),
        (torch.zeros(5, 8), torch.zeros(5, 8), torch.full((5, 8), 3.0))),  # no hard triplet
    "DiceLoss": lambda: (DiceLoss(), (torch.randn(2, 1, 4, 4), torch.randint(0, 2, (2, 1, 4, 4)).float())),
    "LossWithMetrics": lambda: (LossWithMetrics(), (torch.randn(6, 4), torch.randint(0, 4, (6,)))),
    "NaNGuardLoss": lambda: (NaNGuardLoss(), (torch.randn(3, 2), torch.randn(3, 2))),
    "kl_divergence": lambda: (kl_divergence, (torch.randn(4, 10), torch.randn(4, 10))),
    "smooth_l1": lambda: (smooth_l1, (torch.randn(4, 3), torch.randn(4, 3))),
    "balanced_bce": lambda: (balanced_bce, (torch.randn(10), torch.randint(0, 2, (10,)).float())),
    "ohem_loss": lambda: (ohem_loss, (torch.randn(8, 3), torch.randint(0, 3, (8,)))),
    "weighted_ce": lambda: (weighted_ce, (torch.randn(8, 3), torch.randint(0, 3, (8,)), torch.tensor([5, 2, 1]))),
    "contrastive_loss": lambda: (contrastive_loss, (torch.randn(4, 6), torch.randn(4, 6), torch.randint(0, 2, (4,)).float())),
    "perplexity": lambda: (perplexity, (torch.randn(2, 5, 7), torch.randint(0, 7, (2, 5)))),
    "center_loss": lambda: (center_loss, (torch.randn(4, 6), torch.tensor([0, 2, 1, 2]), torch.randn(3, 6))),
}
