"""Training tricks: mixup / cutmix, distillation losses, EMA teachers, label smoothing, clipping, loss scaling, drop-path, meters."""
import copy
import logging
import math
import random
import warnings
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("train")


@dataclass
class DistillConfig:
    temperature: float = 4.0
    alpha: float = 0.7
    ema_decay: float = 0.999
    mixup_alpha: float = 0.2
    cutmix_alpha: float = 1.0
    smoothing: float = 0.1
    max_grad_norm: float = 1.0
    drop_path: float = 0.1
    loss_weights: Dict[str, float] = field(default_factory=lambda: {"ce": 1.0, "kd": 0.5})


@torch.compile
def mixup_data(x, y, alpha: float = 0.2):
    lam = np.random.beta(alpha, alpha) if alpha > 0 else 1.0  # expect: FL122 GB0294
    index = torch.randperm(x.size(0))
    mixed_x = lam * x + (1 - lam) * x[index, :]
    return mixed_x, y, y[index], lam


def rand_bbox(size, lam):
    W, H = size[2], size[3]
    cut_rat = math.sqrt(1.0 - lam)
    cut_w, cut_h = int(W * cut_rat), int(H * cut_rat)
    cx, cy = random.randint(0, W - 1), random.randint(0, H - 1)
    bbx1, bby1 = max(cx - cut_w // 2, 0), max(cy - cut_h // 2, 0)  # expect: FL124 GB0213
    bbx2, bby2 = min(cx + cut_w // 2, W), min(cy + cut_h // 2, H)
    return bbx1, bby1, bbx2, bby2


@torch.compile
def cutmix(images, targets, beta: float = 1.0):
    lam = random.betavariate(beta, beta)  # expect: FL121 GB0007
    rand_index = torch.randperm(images.size(0))
    bbx1, bby1, bbx2, bby2 = rand_bbox(images.size(), lam)
    images[:, :, bbx1:bbx2, bby1:bby2] = images[rand_index, :, bbx1:bbx2, bby1:bby2]
    lam = 1 - ((bbx2 - bbx1) * (bby2 - bby1) / (images.size(-1) * images.size(-2)))
    return images, targets, targets[rand_index], lam


@torch.compile
def mixup_criterion(pred, y_a, y_b, lam: float):
    return lam * F.cross_entropy(pred, y_a) + (1 - lam) * F.cross_entropy(pred, y_b)


@torch.compile
def kd_loss(student_logits, teacher_logits, labels, T: float = 4.0, alpha: float = 0.7):
    soft = F.kl_div(F.log_softmax(student_logits / T, dim=1), F.softmax(teacher_logits / T, dim=1),
                    reduction="batchmean") * (T * T)
    hard = F.cross_entropy(student_logits, labels)
    return alpha * soft + (1.0 - alpha) * hard


def _soft_target_ce(logits, soft_targets):
    return torch.sum(-soft_targets * F.log_softmax(logits, dim=-1), dim=-1).mean()


soft_target_ce = torch.compile(_soft_target_ce)


@torch.compile
def feature_distill_loss(student_feat, teacher_feat):
    if student_feat.shape[-1] != teacher_feat.shape[-1]:  # expect: FL301
        student_feat = F.interpolate(student_feat, size=teacher_feat.shape[-2:], mode="bilinear", align_corners=False)
    return F.mse_loss(F.normalize(student_feat.flatten(1), dim=1), F.normalize(teacher_feat.flatten(1), dim=1))


class LabelSmoothingCrossEntropy(nn.Module):
    def __init__(self, smoothing: float = 0.1):
        super().__init__()
        assert smoothing < 1.0
        self.smoothing = smoothing
        self.confidence = 1.0 - smoothing

    def forward(self, x, target):
        logprobs = F.log_softmax(x, dim=-1)
        nll_loss = -logprobs.gather(dim=-1, index=target.unsqueeze(1)).squeeze(1)
        smooth_loss = -logprobs.mean(dim=-1)
        return (self.confidence * nll_loss + self.smoothing * smooth_loss).mean()


class EMATeacher(nn.Module):
    def __init__(self, student: nn.Module, decay: float = 0.99):
        super().__init__()
        self.student = student
        self.teacher = copy.deepcopy(student)
        for p in self.teacher.parameters():
            p.requires_grad_(False)
        self.decay = decay
        self.num_updates = 0

    @torch.no_grad()
    def update(self):
        self.num_updates += 1  # expect: FL302
        decay = min(self.decay, (1 + self.num_updates) / (10 + self.num_updates))
        for t, s in zip(self.teacher.parameters(), self.student.parameters()):
            t.mul_(decay).add_(s.detach(), alpha=1 - decay)

    def forward(self, x):
        self.update()
        return self.student(x), self.teacher(x)


class DropPath(nn.Module):
    def __init__(self, drop_prob: float = 0.0, scale_by_keep: bool = True):
        super().__init__()
        self.drop_prob = drop_prob
        self.scale_by_keep = scale_by_keep

    def forward(self, x):
        if self.drop_prob == 0.0 or not self.training:
            return x
        keep_prob = 1 - self.drop_prob
        shape = (x.shape[0],) + (1,) * (x.ndim - 1)
        random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
        if keep_prob > 0.0 and self.scale_by_keep:
            random_tensor.div_(keep_prob)
        return x * random_tensor


class ResidualBlock(nn.Module):
    def __init__(self, dim: int = 8, drop_path: float = 0.2):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.drop_path = DropPath(drop_path)

    def forward(self, x):
        return x + self.drop_path(self.mlp(self.norm(x)))


class StochasticDepthLayer(nn.Module):
    def __init__(self, dim: int = 8, survival_prob: float = 0.8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.survival_prob = survival_prob

    def forward(self, x):
        if self.training and random.random() > self.survival_prob:  # expect: FL121 GB0007
            return x
        return x + self.fc(x)


@torch.compile
def clip_grad_norm(grads: List[torch.Tensor], max_norm: float = 1.0):
    total_norm = torch.norm(torch.stack([torch.norm(g.detach(), 2) for g in grads]), 2)
    clip_coef = max_norm / (total_norm + 1e-6)
    if clip_coef < 1:  # expect: FL101 GB0170
        for g in grads:
            g.detach().mul_(clip_coef)
    return total_norm


@torch.compile
def clip_grad_norm_clamped(grads: List[torch.Tensor], max_norm: float = 1.0):
    norms = torch.stack([g.norm() for g in grads])
    total_norm = norms.norm()
    clip_coef = (max_norm / (total_norm + 1e-6)).clamp(max=1.0)
    torch._foreach_mul_(grads, clip_coef)
    return total_norm


class DynamicLossScaler(nn.Module):
    def __init__(self, init_scale: float = 2.0 ** 8, growth_interval: int = 2):
        super().__init__()
        self.scale = init_scale
        self.growth_interval = growth_interval
        self.good_steps = 0

    def forward(self, loss, grads: List[torch.Tensor]):
        found_inf = any(not torch.isfinite(g).all() for g in grads)  # expect: FL101 GB0033; FL000 GB8335
        if found_inf:
            self.scale /= 2.0
            self.good_steps = 0
            logger.warning("overflow, reducing loss scale to %s", self.scale)
            return loss * 0.0
        self.good_steps += 1
        if self.good_steps % self.growth_interval == 0:
            self.scale *= 2.0
        return loss * self.scale


class AverageMeter(nn.Module):
    def __init__(self):
        super().__init__()
        self.history = defaultdict(list)

    def forward(self, losses: Dict[str, torch.Tensor], n: int):
        total = sum(self.loss_weight(k) * v for k, v in losses.items())
        for k, v in losses.items():
            self.history[k].append(v.item() * n)  # expect: FL102 GB0124
        return total

    def loss_weight(self, name: str) -> float:
        return 0.5 if name == "kd" else 1.0


@torch.compile
def accuracy(output, target, topk=(1,)):
    maxk = max(topk)
    batch_size = target.size(0)
    _, pred = output.topk(maxk, 1, True, True)
    pred = pred.t()
    correct = pred.eq(target.view(1, -1).expand_as(pred))
    res = []
    for k in topk:
        correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
        res.append(correct_k.mul_(100.0 / batch_size).item())  # expect: FL102 GB0124
    return res


@torch.compile
def distill_step(student_logits, teacher_logits, labels, step: int, cfg: DistillConfig = DistillConfig()):
    loss = kd_loss(student_logits, teacher_logits, labels, cfg.temperature, cfg.alpha)
    if torch.isnan(loss):  # expect: FL101 GB0170
        warnings.warn(f"nan loss at step {step}")  # expect: FL112 GB0007
    if step % 10 == 0:
        agree = (student_logits.argmax(1) == teacher_logits.argmax(1)).float().mean()
        print(f"step {step} kd={loss.item():.4f} agree={agree:.2f}")  # expect: FL102 GB0124; FL110 GB0059
    return loss


@torch.compile
def confidence_weighted_kd(student_logits, teacher_logits, threshold: float = 0.5):
    t_prob = teacher_logits.softmax(-1)
    conf, pseudo = t_prob.max(-1)
    mask = conf.ge(threshold).float()
    if mask.sum() == 0:  # expect: FL101 GB0170
        return student_logits.sum() * 0.0, mask.mean()
    loss = (F.cross_entropy(student_logits, pseudo, reduction="none") * mask).mean()
    return loss, mask.mean()


@torch.compile
def per_class_accuracy(logits, labels, num_classes: int = 5):
    preds = logits.argmax(-1)
    hits, totals = defaultdict(int), defaultdict(int)
    for p, y in zip(preds.tolist(), labels.tolist()):  # expect: FL104 GB0033
        totals[y] += 1
        hits[y] += int(p == y)
    return {c: hits[c] / totals[c] for c in range(num_classes) if totals[c] > 0}


class WeightedMultiLoss(nn.Module):
    def __init__(self, cfg: DistillConfig = DistillConfig()):
        super().__init__()
        self.weights = cfg.loss_weights

    def forward(self, losses: Dict[str, torch.Tensor]):
        total = 0.0
        for name, value in losses.items():
            if name not in self.weights:
                warnings.warn(f"no weight configured for loss '{name}', using 1.0")  # expect: FL112 GB0007
            total = total + self.weights.get(name, 1.0) * value
        return total


def standardize_logits(logits):
    std = float(logits.std())  # expect: FL202
    print("logit std at export:", round(std, 3))  # expect: FL204
    return (logits - logits.mean(-1, keepdim=True)) / std


def export_teacher_postproc():
    return torch.jit.trace(standardize_logits, torch.randn(4, 10))


CASES = {
    "mixup_data": lambda: (mixup_data, (torch.randn(4, 3, 4, 4), torch.tensor([0, 1, 2, 1]), 0.2)),
    "cutmix": lambda: (cutmix, (torch.randn(4, 3, 8, 8), torch.tensor([0, 1, 2, 1]))),
    "mixup_criterion": lambda: (mixup_criterion, (torch.randn(4, 5), torch.tensor([0, 1, 2, 3]), torch.tensor([4, 3, 2, 1]), 0.7)),
    "kd_loss": lambda: (kd_loss, (torch.randn(4, 5), torch.randn(4, 5), torch.tensor([0, 1, 2, 3]))),
    "soft_target_ce": lambda: (soft_target_ce, (torch.randn(4, 5), torch.randn(4, 5).softmax(-1))),
    "feature_distill_loss": lambda: (feature_distill_loss, (torch.randn(2, 3, 6, 6), torch.randn(2, 3, 6, 6)),
                                     (torch.randn(2, 3, 5, 5), torch.randn(2, 3, 7, 7))),
    "LabelSmoothingCrossEntropy": lambda: (LabelSmoothingCrossEntropy(0.1), (torch.randn(4, 5), torch.tensor([0, 1, 2, 3]))),
    "EMATeacher": lambda: (EMATeacher(nn.Linear(4, 3)), (torch.randn(2, 4),)),
    "ResidualBlock": lambda: (ResidualBlock().eval(), (torch.randn(2, 3, 8),)),
    "StochasticDepthLayer": lambda: (StochasticDepthLayer(), (torch.randn(2, 8),)),
    "clip_grad_norm": lambda: (clip_grad_norm, ([torch.randn(4, 3) * 2, torch.randn(3)], 1.0)),
    "clip_grad_norm_clamped": lambda: (clip_grad_norm_clamped, ([torch.randn(4, 3) * 2, torch.randn(3)], 1.0)),
    "DynamicLossScaler": lambda: (DynamicLossScaler(), (torch.tensor(0.5), [torch.randn(3), torch.randn(2, 2)])),
    "DynamicLossScaler_overflow": lambda: (DynamicLossScaler(), (torch.tensor(0.5), [torch.tensor([1.0, float("inf")]), torch.randn(2, 2)])),
    "AverageMeter": lambda: (AverageMeter(), ({"ce": torch.tensor(1.2), "kd": torch.tensor(0.4)}, 8)),
    "accuracy": lambda: (accuracy, (torch.randn(6, 5), torch.tensor([0, 1, 2, 3, 4, 0]), (1, 3))),
    "per_class_accuracy": lambda: (per_class_accuracy, (torch.randn(6, 5), torch.tensor([0, 1, 2, 3, 4, 0]))),
    "WeightedMultiLoss": lambda: (WeightedMultiLoss(), ({"ce": torch.tensor(1.2), "kd": torch.tensor(0.4), "feat": torch.tensor(0.1)},)),
    "distill_step": lambda: (distill_step, (torch.randn(4, 5), torch.randn(4, 5), torch.tensor([0, 1, 2, 3]), 20)),
    "distill_step_nan": lambda: (distill_step, (torch.full((4, 5), float("nan")), torch.randn(4, 5), torch.tensor([0, 1, 2, 3]), 3)),
    "confidence_weighted_kd": lambda: (confidence_weighted_kd, (torch.randn(4, 5), torch.randn(4, 5) * 3)),
}

TRACED = {
    "standardize_logits": lambda: (standardize_logits, (torch.randn(4, 10),)),
}
