"""Batch augmentations on tensors in the style of kornia.augmentation / torchvision.transforms.v2:
per-batch random parameters (torch.rand, Python random, numpy), probability gates, parameter
dataclasses, affine_grid/grid_sample warps, colour jitter, mixup/cutmix with boxes computed from
sampled lambdas, RandAugment-style op lists chosen by index, and per-sample Python loops."""
import math
import random
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
AUG_CONFIG = {"flip_p": 0.5, "affine_p": 0.8, "degrees": 15.0, "translate": 0.1, "scale": (0.9, 1.1),
              "jitter": (0.2, 0.2, 0.2, 0.05), "mixup_alpha": 0.4, "cutmix_alpha": 1.0}
PAD_MULTIPLE = 8
GRAY_WEIGHTS = torch.tensor([0.299, 0.587, 0.114])


# --------------------------------------------------------------------------- parameter objects

@dataclass
class AffineParams:
    angle: torch.Tensor
    translate: torch.Tensor
    scale: torch.Tensor

    @classmethod
    def sample(cls, batch: int, degrees: float, translate: float, scale: Tuple[float, float]) -> "AffineParams":
        angle = (torch.rand(batch) * 2 - 1) * degrees
        shift = (torch.rand(batch, 2) * 2 - 1) * translate
        s = torch.empty(batch).uniform_(*scale)
        return cls(angle, shift, s)


@dataclass
class JitterParams:
    brightness: torch.Tensor
    contrast: torch.Tensor
    saturation: torch.Tensor
    order: List[int] = field(default_factory=lambda: [0, 1, 2])


def _uniform(batch: int, spread: float) -> torch.Tensor:
    return torch.empty(batch).uniform_(1 - spread, 1 + spread)


def sample_jitter(batch: int, spreads: Sequence[float] = AUG_CONFIG["jitter"]) -> JitterParams:
    return JitterParams(*(_uniform(batch, s) for s in spreads[:3]))


# --------------------------------------------------------------------------- functional ops

def _rgb_to_gray(x):
    return (x * GRAY_WEIGHTS.to(x.dtype).view(1, 3, 1, 1)).sum(1, keepdim=True)


def adjust_brightness(x, factor):
    return (x * factor.view(-1, 1, 1, 1)).clamp(0, 1)


def adjust_contrast(x, factor):
    mean = _rgb_to_gray(x).mean((-3, -2, -1), keepdim=True)
    return (mean + factor.view(-1, 1, 1, 1) * (x - mean)).clamp(0, 1)


def adjust_saturation(x, factor):
    gray = _rgb_to_gray(x)
    return (gray + factor.view(-1, 1, 1, 1) * (x - gray)).clamp(0, 1)


def _affine_matrix(params: AffineParams) -> torch.Tensor:
    rad = params.angle * math.pi / 180
    cos, sin = torch.cos(rad) / params.scale, torch.sin(rad) / params.scale
    row0 = torch.stack([cos, -sin, params.translate[:, 0]], -1)
    row1 = torch.stack([sin, cos, params.translate[:, 1]], -1)
    return torch.stack([row0, row1], 1)


def warp_affine(x, theta, mode: str = "bilinear"):
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    return F.grid_sample(x, grid, mode=mode, padding_mode="zeros", align_corners=False)


def _posterize(x, bits):
    levels = 2 ** int(bits)
    return torch.floor(x * levels) / levels


RAND_AUGMENT_OPS: List[Callable] = [
    lambda x, m: x,
    lambda x, m: adjust_brightness(x, torch.full((x.size(0),), 1 + 0.1 * m)),
    lambda x, m: adjust_contrast(x, torch.full((x.size(0),), 1 + 0.1 * m)),
    lambda x, m: torch.where(x >= 1 - 0.05 * m, 1 - x, x),
    lambda x, m: _posterize(x, 8 - m // 2),  # expect: FL000 GB0213
]


# --------------------------------------------------------------------------- modules

class AugmentationBase(nn.Module):
    """kornia-like base: draws a per-sample application mask from p, then calls apply()."""

    def __init__(self, p: float = 0.5, same_on_batch: bool = False):
        super().__init__()
        self.p = p
        self.same_on_batch = same_on_batch

    def batch_prob(self, batch: int) -> torch.Tensor:
        if self.same_on_batch:
            return (torch.rand(1) < self.p).expand(batch)
        return torch.rand(batch) < self.p

    def apply(self, x, mask):
        raise NotImplementedError

    def forward(self, x):
        if self.p == 0.0:
            return x
        return self.apply(x, self.batch_prob(x.size(0)))


class RandomHorizontalFlip(AugmentationBase):
    def apply(self, x, mask):
        return torch.where(mask.view(-1, 1, 1, 1), x.flip(-1), x)


class RandomAffine(AugmentationBase):
    def __init__(self, degrees: float = AUG_CONFIG["degrees"], translate: float = AUG_CONFIG["translate"],
                 scale=AUG_CONFIG["scale"], p: float = AUG_CONFIG["affine_p"]):
        super().__init__(p)
        self.degrees, self.translate, self.scale = degrees, translate, scale

    def apply(self, x, mask):
        params = AffineParams.sample(x.size(0), self.degrees, self.translate, self.scale)
        warped = warp_affine(x, _affine_matrix(params))
        return torch.where(mask.view(-1, 1, 1, 1), warped, x)


class RandomGrayscale(AugmentationBase):
    """Applies the transform to the selected samples only, like kornia's `input[to_apply]`."""

    def apply(self, x, mask):
        out = x.clone()
        out[mask] = _rgb_to_gray(x[mask]).expand(-1, 3, -1, -1)  # expect: FL000 GB0036
        return out


class ColorJitter(nn.Module):
    """torchvision-style: the order of the adjustments is a random permutation per call."""

    def __init__(self, brightness=0.2, contrast=0.2, saturation=0.2):
        super().__init__()
        self.brightness, self.contrast, self.saturation = brightness, contrast, saturation

    def forward(self, x):
        params = sample_jitter(x.size(0), (self.brightness, self.contrast, self.saturation))
        fn_idx = torch.randperm(3)
        for fn_id in fn_idx:
            if fn_id == 0 and self.brightness is not None:  # expect: FL000 GB0170
                x = adjust_brightness(x, params.brightness)
            elif fn_id == 1 and self.contrast is not None:
                x = adjust_contrast(x, params.contrast)
            elif fn_id == 2 and self.saturation is not None:
                x = adjust_saturation(x, params.saturation)
        return x


class FixedOrderColorJitter(ColorJitter):
    """The same jitter with a fixed order taken from the params dataclass."""

    def forward(self, x):
        params = sample_jitter(x.size(0), (self.brightness, self.contrast, self.saturation))
        fns = (adjust_brightness, adjust_contrast, adjust_saturation)
        factors = (params.brightness, params.contrast, params.saturation)
        for i in params.order:
            x = fns[i](x, factors[i])
        return x


class RandomGaussianBlur(nn.Module):
    """Sigma drawn per call; the kernel size follows from it."""

    def __init__(self, sigma: Tuple[float, float] = (0.1, 1.0)):
        super().__init__()
        self.sigma = sigma

    @staticmethod
    def _kernel1d(sigma: float, ksize: int):
        half = (ksize - 1) / 2
        t = torch.linspace(-half, half, ksize)
        k = torch.exp(-0.5 * (t / sigma) ** 2)
        return k / k.sum()

    def forward(self, x):
        sigma = torch.empty(1).uniform_(*self.sigma)
        ksize = 2 * math.ceil(3 * sigma) + 1  # expect: FL000 GB0033
        k = self._kernel1d(sigma, ksize)
        c = x.size(1)
        x = F.conv2d(F.pad(x, (ksize // 2,) * 4, mode="reflect"), k.view(1, 1, 1, -1).expand(c, 1, 1, -1), groups=c)
        return x


class RandAugment(nn.Module):
    """N ops picked by index from a module-level list of lambdas, each with a global magnitude."""

    def __init__(self, num_ops: int = 2, magnitude: int = 5, ops: Optional[List[Callable]] = None):
        super().__init__()
        self.num_ops, self.magnitude = num_ops, magnitude
        self.ops = ops if ops is not None else RAND_AUGMENT_OPS

    def forward(self, x):
        for _ in range(self.num_ops):
            op_index = int(torch.randint(len(self.ops), (1,)))  # expect: FL000 GB0124
            x = self.ops[op_index](x, self.magnitude)
        return x


class TrivialAugmentWide(nn.Module):
    """One op and one magnitude per call, both drawn with Python's random module."""

    def __init__(self, max_magnitude: int = 8):
        super().__init__()
        self.max_magnitude = max_magnitude
        self.ops = RAND_AUGMENT_OPS[1:]

    def forward(self, x):
        op = random.choice(self.ops)  # expect: FL000 GB0007
        magnitude = random.randint(0, self.max_magnitude)
        return op(x, magnitude)


class ResizeIfNeeded(nn.Module):
    def __init__(self, size: Tuple[int, int] = (8, 8)):
        super().__init__()
        self.size = size

    def forward(self, x):
        if tuple(x.shape[-2:]) != self.size:  # expect: FL301
            x = F.interpolate(x, size=self.size, mode="bilinear", align_corners=False)
        mean = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1)
        std = torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
        return (x - mean) / std


class CurriculumAugment(nn.Module):
    """Magnitude ramps up with the number of calls (augmentation strength schedule)."""

    def __init__(self, warmup_calls: int = 10, max_magnitude: float = 0.5):
        super().__init__()
        self.warmup_calls, self.max_magnitude = warmup_calls, max_magnitude
        self.calls = 0
        self.flip = RandomHorizontalFlip(p=0.5)

    @property
    def magnitude(self) -> float:
        return self.max_magnitude * min(1.0, self.calls / self.warmup_calls)

    def forward(self, x):
        self.calls += 1  # expect: FL302
        noise = torch.randn_like(x) * self.magnitude
        return self.flip(x + noise)


class AugmentationSequential(nn.Module):
    """Runs a list of augmentations, each under its own Python-level probability gate."""

    def __init__(self, *augs: nn.Module, gate_p: float = 0.5):
        super().__init__()
        self.augs = nn.ModuleList(augs)
        self.gate_p = gate_p

    def forward(self, x):
        for aug in self.augs:
            if random.random() < self.gate_p:  # expect: FL000 GB0007
                x = aug(x)
        return x


# --------------------------------------------------------------------------- compiled functions

@torch.compile
def mixup_batch(x, y_onehot, alpha: float = AUG_CONFIG["mixup_alpha"]):
    lam = torch.distributions.Beta(alpha, alpha).sample()
    perm = torch.randperm(x.size(0))
    return lam * x + (1 - lam) * x[perm], lam * y_onehot + (1 - lam) * y_onehot[perm]


def _rand_bbox(height: int, width: int, lam: float) -> Tuple[int, int, int, int]:
    cut_rat = math.sqrt(1.0 - lam)  # expect: FL000 GB0033
    cut_h, cut_w = int(height * cut_rat), int(width * cut_rat)
    cy, cx = random.randint(0, height - 1), random.randint(0, width - 1)
    y1, y2 = max(cy - cut_h // 2, 0), min(cy + cut_h // 2, height)  # expect: FL000 GB0213
    x1, x2 = max(cx - cut_w // 2, 0), min(cx + cut_w // 2, width)
    return y1, y2, x1, x2


@torch.compile
def cutmix_batch(x, y_onehot, alpha: float = AUG_CONFIG["cutmix_alpha"]):
    lam = torch.distributions.Beta(alpha, alpha).sample()
    perm = torch.randperm(x.size(0))
    y1, y2, x1, x2 = _rand_bbox(x.size(-2), x.size(-1), lam)
    x = x.clone()
    x[:, :, y1:y2, x1:x2] = x[perm, :, y1:y2, x1:x2]
    lam_adj = 1 - (y2 - y1) * (x2 - x1) / (x.size(-2) * x.size(-1))
    return x, lam_adj * y_onehot + (1 - lam_adj) * y_onehot[perm]


class MixupCutmix:
    """timm-style mixer: numpy decides between mixup and cutmix and draws lambda."""

    def __init__(self, mixup_alpha: float = 0.4, cutmix_alpha: float = 1.0, switch_prob: float = 0.5,
                 seed: int = 0):
        self.mixup_alpha, self.cutmix_alpha, self.switch_prob = mixup_alpha, cutmix_alpha, switch_prob
        self.rng = np.random.default_rng(seed)

    def _params(self) -> Tuple[float, bool]:
        use_cutmix = self.rng.random() < self.switch_prob  # expect: FL000 GB0156
        alpha = self.cutmix_alpha if use_cutmix else self.mixup_alpha
        return float(self.rng.beta(alpha, alpha)), use_cutmix

    def __call__(self, x, y_onehot):
        lam, use_cutmix = self._params()
        if use_cutmix:
            y1, y2, x1, x2 = _rand_bbox(x.size(-2), x.size(-1), lam)
            x = x.clone()
            x[:, :, y1:y2, x1:x2] = x.flip(0)[:, :, y1:y2, x1:x2]
        else:
            x = x * lam + x.flip(0) * (1 - lam)
        return x, y_onehot * lam + y_onehot.flip(0) * (1 - lam)


@torch.compile
def apply_mixer(mixer: MixupCutmix, x, y_onehot):
    return mixer(x, y_onehot)


@torch.compile
def cutout_vectorized(x, size: int = 3):
    b, _, h, w = x.shape
    cy = torch.randint(0, h, (b, 1, 1))
    cx = torch.randint(0, w, (b, 1, 1))
    ys = torch.arange(h).view(1, h, 1)
    xs = torch.arange(w).view(1, 1, w)
    inside = ((ys - cy).abs() <= size // 2) & ((xs - cx).abs() <= size // 2)
    return x * (~inside).unsqueeze(1).to(x.dtype)


def _crop_params(height: int, width: int, scale=(0.5, 1.0), ratio=(3 / 4, 4 / 3)) -> Tuple[int, int, int, int]:
    """torchvision RandomResizedCrop.get_params: rejection sampling with a fallback."""
    area = height * width
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    attempts = 0
    while attempts < 10:
        attempts += 1
        target_area = area * torch.empty(1).uniform_(scale[0], scale[1]).item()  # expect: FL000 GB0124
        aspect = math.exp(torch.empty(1).uniform_(log_ratio[0], log_ratio[1]).item())  # expect: FL000 GB0124
        w = int(round(math.sqrt(target_area * aspect)))
        h = int(round(math.sqrt(target_area / aspect)))
        if 0 < w <= width and 0 < h <= height:
            i = int(torch.randint(0, height - h + 1, size=(1,)).item())  # expect: FL000 GB0124
            j = int(torch.randint(0, width - w + 1, size=(1,)).item())  # expect: FL000 GB0124
            return i, j, h, w
    return 0, 0, height, width


def _random_resized_crop(x, out_size: Tuple[int, int] = (6, 6)):
    crops = []
    for img in x:
        i, j, h, w = _crop_params(img.size(-2), img.size(-1))
        crop = img[:, i:i + h, j:j + w].unsqueeze(0)
        crops.append(F.interpolate(crop, size=out_size, mode="bilinear", align_corners=False))
    return torch.cat(crops)


random_resized_crop = torch.compile(_random_resized_crop)


@torch.compile
def per_sample_flip(x, p: float = 0.5):
    flip = torch.rand(x.size(0)) < p
    out = []
    for i in range(x.size(0)):
        out.append(x[i].flip(-1) if flip[i] else x[i])  # expect: FL000 GB0170
    return torch.stack(out)


@torch.compile(dynamic=True)
def pad_to_multiple(x, multiple: int = PAD_MULTIPLE):
    h, w = x.shape[-2:]
    pad_h = (multiple - h % multiple) % multiple
    pad_w = (multiple - w % multiple) % multiple
    if pad_h == 0 and pad_w == 0:  # expect: FL301
        return x
    return F.pad(x, (0, pad_w, 0, pad_h))


@torch.compile
def augment_boxes_hflip(images, boxes, p: float = 0.5):
    width = images.size(-1)
    flip = torch.rand(images.size(0)) < p
    flipped = torch.stack([width - boxes[..., 2], boxes[..., 1], width - boxes[..., 0], boxes[..., 3]], -1)
    boxes = torch.where(flip.view(-1, 1, 1), flipped, boxes)
    images = torch.where(flip.view(-1, 1, 1, 1), images.flip(-1), images)
    valid = (boxes[..., 2] - boxes[..., 0]) > 1
    return images, boxes[valid]  # expect: FL000 GB0036


# --------------------------------------------------------------------------- cases

def _images(b: int = 3, h: int = 6, w: int = 7, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(b, 3, h, w, generator=g)


def _onehot(b: int = 3, n: int = 4):
    return F.one_hot(torch.arange(b) % n, n).float()


def _boxes(b: int = 3):
    return torch.tensor([[1.0, 1.0, 4.0, 5.0], [0.0, 2.0, 2.0, 6.0]]).expand(b, 2, 4).clone()


CASES = {
    "AugmentationBase_disabled": lambda: (AugmentationBase(p=0.0), (_images(),)),
    "RandomHorizontalFlip": lambda: (RandomHorizontalFlip(p=0.5), (_images(),)),
    "RandomAffine": lambda: (RandomAffine(), (_images(),)),
    "RandomGrayscale": lambda: (RandomGrayscale(p=0.6), (_images(4),)),
    "ColorJitter": lambda: (ColorJitter(), (_images(),)),
    "FixedOrderColorJitter": lambda: (FixedOrderColorJitter(), (_images(),)),
    "RandomGaussianBlur": lambda: (RandomGaussianBlur(), (_images(),)),
    "RandAugment": lambda: (RandAugment(), (_images(),)),
    "TrivialAugmentWide": lambda: (TrivialAugmentWide(), (_images(),)),
    "ResizeIfNeeded": lambda: (ResizeIfNeeded(), (_images(2, 5, 7),), (_images(2, 8, 8),)),
    "CurriculumAugment": lambda: (CurriculumAugment(), (_images(),)),
    "AugmentationSequential": lambda: (AugmentationSequential(RandomHorizontalFlip(), FixedOrderColorJitter(),
                                                              gate_p=0.8), (_images(),)),
    "mixup_batch": lambda: (mixup_batch, (_images(), _onehot())),
    "cutmix_batch": lambda: (cutmix_batch, (_images(), _onehot())),
    "apply_mixer": lambda: (apply_mixer, (MixupCutmix(switch_prob=0.7), _images(), _onehot())),
    "cutout_vectorized": lambda: (cutout_vectorized, (_images(),)),
    "random_resized_crop": lambda: (random_resized_crop, (_images(2, 8, 9),)),
    "per_sample_flip": lambda: (per_sample_flip, (_images(),)),
    "pad_to_multiple": lambda: (pad_to_multiple, (_images(2, 5, 7),), (_images(2, 8, 16),)),
    "augment_boxes_hflip": lambda: (augment_boxes_hflip, (_images(), _boxes())),
}
