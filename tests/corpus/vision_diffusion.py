"""Vision and diffusion code: augmentations, detection heads, schedulers, EMA, guidance."""
import math
import random
import time
from collections import namedtuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

Detections = namedtuple("Detections", ["boxes", "scores", "labels"])


class PatchEmbed(nn.Module):
    def __init__(self, patch=4, dim=8):
        super().__init__()
        self.patch = patch
        self.proj = nn.Conv2d(3, dim, patch, stride=patch)

    def forward(self, x):
        _, _, h, w = x.shape
        if h % self.patch or w % self.patch:
            x = F.pad(x, (0, -w % self.patch, 0, -h % self.patch))
        return self.proj(x).flatten(2).transpose(1, 2)


class RandomDropPath(nn.Module):
    def __init__(self, p=0.1):
        super().__init__()
        self.p = p

    def forward(self, x):
        if not self.training or self.p == 0.0:
            return x
        keep = torch.rand(x.shape[0], 1, 1, device=x.device) >= self.p
        return x * keep / (1 - self.p)


class JitterAugment(nn.Module):
    def forward(self, img):
        if random.random() < 0.5:  # expect: FL121 GB0007
            img = img.flip(-1)
        scale = random.uniform(0.9, 1.1)
        return img * scale


class TimedBackbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.last_ms = 0.0

    def forward(self, x):
        start = time.perf_counter()  # expect: FL121 GB0007
        y = self.body(x).flatten(1)
        self.last_ms = (time.perf_counter() - start) * 1e3  # expect: FL121 GB0007
        return y


class DetectionHead(nn.Module):
    def __init__(self, dim=4, classes=3):
        super().__init__()
        self.cls = nn.Linear(dim, classes)
        self.box = nn.Linear(dim, 4)
        self.threshold = 0.3

    def forward(self, feats):
        scores, labels = self.cls(feats).sigmoid().max(-1)
        boxes = self.box(feats)
        keep = scores > self.threshold
        return Detections(boxes[keep], scores[keep], labels[keep])  # expect: FL105 GB0036


class ScoreOnlyHead(DetectionHead):
    def forward(self, feats):
        scores, labels = self.cls(feats).sigmoid().max(-1)
        weight = torch.where(scores > self.threshold, scores, torch.zeros_like(scores))
        return Detections(self.box(feats) * weight[..., None], weight, labels)


def cosine_schedule(steps: int):
    t = torch.linspace(0, 1, steps + 1)
    alphas = torch.cos((t + 0.008) / 1.008 * math.pi / 2) ** 2
    return (alphas / alphas[0]).clamp(1e-5, 1.0)


@torch.compile
def add_noise(x0, noise, alphas_cumprod, t):
    a = alphas_cumprod[t].view(-1, 1, 1, 1)
    return a.sqrt() * x0 + (1 - a).sqrt() * noise


@torch.compile
def ddim_step(model_out, sample, alpha_t, alpha_prev, eta: float = 0.0):
    pred_x0 = (sample - (1 - alpha_t).sqrt() * model_out) / alpha_t.sqrt()
    sigma = eta * ((1 - alpha_prev) / (1 - alpha_t) * (1 - alpha_t / alpha_prev)).sqrt()
    direction = (1 - alpha_prev - sigma ** 2).sqrt() * model_out
    if eta > 0:
        return alpha_prev.sqrt() * pred_x0 + direction + sigma * torch.randn_like(sample)
    return alpha_prev.sqrt() * pred_x0 + direction


@torch.compile
def classifier_free_guidance(cond, uncond, scale: float = 7.5):
    guided = uncond + scale * (cond - uncond)
    std_ratio = cond.std() / guided.std()
    if std_ratio > 1.5:  # expect: FL101 GB0170
        guided = guided * std_ratio
    return guided


@torch.compile
def ema_update(ema_params, params, decay: float = 0.999):
    with torch.no_grad():
        for e, p in zip(ema_params, params):
            e.mul_(decay).add_(p, alpha=1 - decay)
    return ema_params


@torch.compile
def box_iou(a, b):
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    lt = torch.max(a[:, None, :2], b[None, :, :2])
    rb = torch.min(a[:, None, 2:], b[None, :, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    return inter / (area_a[:, None] + area_b[None, :] - inter)


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
def normalize_image(img, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)):
    mean_t = torch.tensor(mean, dtype=img.dtype).view(-1, 1, 1)
    std_t = torch.tensor(std, dtype=img.dtype).view(-1, 1, 1)
    return (img - mean_t) / std_t


@torch.compile
def histogram_equalize(img):
    hist = torch.histc(img, bins=16, min=0.0, max=1.0)
    cdf = hist.cumsum(0) / hist.sum()
    idx = (img * 15).long().clamp(0, 15)
    return cdf[idx]


@torch.compile
def mixup(x, y, alpha: float = 0.4):
    lam = float(np.random.beta(alpha, alpha))  # expect: FL122 GB0294
    perm = torch.randperm(x.size(0))
    return lam * x + (1 - lam) * x[perm], lam * y + (1 - lam) * y[perm]


@torch.compile
def psnr(pred, target):
    mse = F.mse_loss(pred, target)
    return 10 * torch.log10(1.0 / mse)


@torch.compile
def psnr_python(pred, target):
    mse = F.mse_loss(pred, target).item()  # expect: FL102 GB0124
    return 10 * math.log10(1.0 / mse) if mse > 0 else float("inf")


@torch.compile
def center_crop(img, size: int = 4):
    h, w = img.shape[-2:]
    top, left = (h - size) // 2, (w - size) // 2
    return img[..., top:top + size, left:left + size]


@torch.compile
def to_uint8(img):
    return (img.clamp(0, 1) * 255).round().to(torch.uint8).cpu().numpy()


def dice_score(pred, target, eps=1e-6):
    inter = (pred * target).sum((-1, -2))
    return (2 * inter + eps) / (pred.sum((-1, -2)) + target.sum((-1, -2)) + eps)


@torch.compile
def segmentation_report(logits, target):
    pred = logits.softmax(1).argmax(1)
    scores = [dice_score((pred == c).float(), (target == c).float()) for c in range(logits.shape[1])]
    return {f"class_{c}": s.mean().item() for c, s in enumerate(scores)}  # expect: FL102 GB0124; FL102 GB8335


PARAMS = [torch.randn(3), torch.randn(2, 2)]

CASES = {
    "PatchEmbed": lambda: (PatchEmbed(), (torch.randn(1, 3, 10, 8),)),
    "RandomDropPath": lambda: (RandomDropPath().train(), (torch.randn(4, 2, 3),)),
    "JitterAugment": lambda: (JitterAugment(), (torch.randn(1, 3, 4, 4),)),
    "TimedBackbone": lambda: (TimedBackbone(), (torch.randn(1, 3, 6, 6),)),
    "DetectionHead": lambda: (DetectionHead(), (torch.randn(5, 4),)),
    "ScoreOnlyHead": lambda: (ScoreOnlyHead(), (torch.randn(5, 4),)),
    "add_noise": lambda: (add_noise, (torch.randn(2, 1, 3, 3), torch.randn(2, 1, 3, 3), cosine_schedule(10),
                                      torch.tensor([1, 7]))),
    "ddim_step": lambda: (ddim_step, (torch.randn(2, 3), torch.randn(2, 3), torch.tensor(0.5), torch.tensor(0.7))),
    "classifier_free_guidance": lambda: (classifier_free_guidance, (torch.randn(2, 3), torch.randn(2, 3))),
    "ema_update": lambda: (ema_update, ([p.clone() for p in PARAMS], PARAMS)),
    "box_iou": lambda: (box_iou, (torch.tensor([[0.0, 0, 2, 2]]), torch.tensor([[1.0, 1, 3, 3], [0, 0, 1, 1]]))),
    "greedy_nms": lambda: (greedy_nms, (torch.tensor([[0.0, 0, 2, 2], [0.1, 0, 2, 2], [5, 5, 6, 6]]),
                                        torch.tensor([0.9, 0.8, 0.7]))),
    "normalize_image": lambda: (normalize_image, (torch.rand(3, 4, 4),)),
    "histogram_equalize": lambda: (histogram_equalize, (torch.rand(3, 4, 4),)),
    "mixup": lambda: (mixup, (torch.randn(4, 3), torch.randn(4, 2))),
    "psnr": lambda: (psnr, (torch.rand(3, 4), torch.rand(3, 4))),
    "psnr_python": lambda: (psnr_python, (torch.rand(3, 4), torch.rand(3, 4))),
    "center_crop": lambda: (center_crop, (torch.rand(3, 8, 8),)),
    "to_uint8": lambda: (to_uint8, (torch.rand(3, 2, 2),)),
    "segmentation_report": lambda: (segmentation_report, (torch.randn(1, 3, 4, 4), torch.randint(0, 3, (1, 4, 4)))),
}
