"""3-D segmentation in the MONAI / nnU-Net style: instance-norm UNet blocks with deep supervision,
dict transforms with keys and metadata, sliding-window inference with a Gaussian importance map,
Dice / Tversky / boundary losses, connected-component post-processing and label remapping."""
import functools
import itertools
import logging
import math
import warnings
from dataclasses import dataclass
from functools import partial
from typing import Callable, Dict, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from scipy import ndimage as ndi

logger = logging.getLogger("medseg3d")

META_SUFFIX = "_meta_dict"
SMOOTH_NR = SMOOTH_DR = 1e-5
DEFAULT_ROI = (4, 5, 6)
CT_WINDOW = {"lower": 0.5, "upper": 99.5, "b_min": 0.0, "b_max": 1.0, "clip": True}
VERBOSE_TRANSFORMS = False

# --------------------------------------------------------------------------- network
@dataclass
class UNetConfig:
    in_channels: int = 1
    out_channels: int = 3
    features: Tuple[int, ...] = (4, 8, 12)
    norm: str = "instance"
    act: str = "leakyrelu"
    deep_supervision: bool = True

    @property
    def divisor(self) -> int:
        return 2 ** (len(self.features) - 1)

NORM_FACTORY: Dict[str, Callable[[int], nn.Module]] = {"instance": partial(nn.InstanceNorm3d, affine=True),
                                                       "batch": nn.BatchNorm3d, "group": lambda c: nn.GroupNorm(2, c)}
ACT_FACTORY = {"relu": partial(nn.ReLU, inplace=True), "prelu": nn.PReLU,
               "leakyrelu": partial(nn.LeakyReLU, negative_slope=0.01, inplace=True)}

def get_norm(name: str, channels: int) -> nn.Module:
    return NORM_FACTORY[name.lower()](channels)

class ConvNormAct(nn.Module):
    def __init__(self, in_ch, out_ch, kernel_size=3, stride=1, norm="instance", act="leakyrelu", dropout=0.0):
        super().__init__()
        self.conv = nn.Conv3d(in_ch, out_ch, kernel_size, stride=stride, padding=kernel_size // 2, bias=False)
        self.norm = get_norm(norm, out_ch)
        self.drop = nn.Dropout3d(dropout) if dropout > 0 else None
        self.act = ACT_FACTORY[act]()

    def forward(self, x):
        x = self.norm(self.conv(x))
        return self.act(self.drop(x) if self.drop is not None else x)

class UnetResBlock(ConvNormAct):
    def __init__(self, in_ch, out_ch, kernel_size=3, stride=1, norm="instance", act="leakyrelu"):
        super().__init__(in_ch, out_ch, kernel_size, stride, norm, act)
        self.conv2 = nn.Conv3d(out_ch, out_ch, kernel_size, padding=kernel_size // 2, bias=False)
        self.norm2 = get_norm(norm, out_ch)
        self.downsample = in_ch != out_ch or stride != 1
        if self.downsample:
            self.skip = nn.Sequential(nn.Conv3d(in_ch, out_ch, 1, stride=stride, bias=False), get_norm(norm, out_ch))

    def forward(self, x):
        residual = self.skip(x) if self.downsample else x
        out = self.norm2(self.conv2(super().forward(x)))
        return self.act(out + residual)

def _center_crop_or_pad(x: torch.Tensor, target: Sequence[int]) -> torch.Tensor:
    pads = []
    for cur, tgt in zip(reversed(x.shape[2:]), reversed(tuple(target))):
        diff = tgt - cur
        pads += [diff // 2, diff - diff // 2]
    return F.pad(x, pads)  # negative pads crop

class UnetUpBlock(nn.Module):
    def __init__(self, in_ch, out_ch, skip_ch, upsample_kernel=2, norm="instance", act="leakyrelu"):
        super().__init__()
        self.transp_conv = nn.ConvTranspose3d(in_ch, out_ch, upsample_kernel, stride=upsample_kernel, bias=False)
        self.conv_block = UnetResBlock(out_ch + skip_ch, out_ch, norm=norm, act=act)

    def forward(self, inp, skip):
        out = self.transp_conv(inp)
        if out.shape[2:] != skip.shape[2:]:  # odd encoder sizes: off by a voxel  # expect: FL301
            out = _center_crop_or_pad(out, skip.shape[2:])
        return self.conv_block(torch.cat((out, skip), dim=1))

class DynUNet3d(nn.Module):
    def __init__(self, cfg: UNetConfig = UNetConfig()):
        super().__init__()
        self.cfg, feats = cfg, cfg.features
        block = partial(UnetResBlock, norm=cfg.norm, act=cfg.act)
        self.input_block = block(cfg.in_channels, feats[0])
        self.downsamples = nn.ModuleList([block(feats[i - 1], feats[i], stride=2) for i in range(1, len(feats))])
        self.upsamples = nn.ModuleList([UnetUpBlock(feats[i], feats[i - 1], feats[i - 1], norm=cfg.norm, act=cfg.act)
                                        for i in reversed(range(1, len(feats)))])
        self.output_block = nn.Conv3d(feats[0], cfg.out_channels, 1)
        self.heads = nn.ModuleList([nn.Conv3d(feats[i], cfg.out_channels, 1) for i in range(1, len(feats) - 1)])

    def forward(self, x):
        if any(s % self.cfg.divisor for s in x.shape[2:]):
            raise ValueError(f"spatial size {tuple(x.shape[2:])} not divisible by {self.cfg.divisor}")
        skips, head_feats = [], []
        out = self.input_block(x)
        for down in self.downsamples:
            skips.append(out)
            out = down(out)
        for up in self.upsamples:
            out = up(out, skips.pop())
            head_feats.append(out)
        logits = self.output_block(out)
        if not (self.training and self.cfg.deep_supervision):
            return logits
        outs = [logits]
        for head, feat in zip(self.heads, reversed(head_feats[:-1])):
            outs.append(F.interpolate(head(feat), size=logits.shape[2:], mode="trilinear", align_corners=False))
        return torch.stack(outs, dim=1)

# --------------------------------------------------------------------------- losses
def one_hot(labels: torch.Tensor, num_classes: int, dim: int = 1) -> torch.Tensor:
    shape = list(labels.shape[:dim]) + [num_classes] + list(labels.shape[dim + 1:])
    return torch.zeros(shape, dtype=torch.float32, device=labels.device).scatter_(dim, labels.long(), 1)

REDUCTIONS: Dict[str, Callable] = {"mean": torch.mean, "sum": torch.sum, "none": lambda t: t}

class DiceLoss(nn.Module):
    def __init__(self, include_background=True, softmax=True, weight=None, reduction="mean", batch=False):
        super().__init__()
        self.include_background, self.softmax, self.weight = include_background, softmax, weight
        self.reduction, self.batch = reduction, batch

    def _score(self, intersection, ground_o, pred_o, input, target, reduce_axis):
        return 1.0 - (2.0 * intersection + SMOOTH_NR) / (ground_o + pred_o + SMOOTH_DR)

    def _class_weight(self, num_classes: int, like: torch.Tensor) -> torch.Tensor:
        if isinstance(self.weight, (float, int)):
            class_weight = torch.as_tensor([self.weight] * num_classes)
        else:
            class_weight = torch.as_tensor(self.weight)
            if not self.include_background:
                class_weight = class_weight[1:]
            if class_weight.shape[0] != num_classes:
                raise ValueError("the number of class weights must match the number of classes")
        if class_weight.min() < 0:  # expect: FL000 GB0170
            raise ValueError("the value/values of the `weight` should be no less than 0.")
        return class_weight.to(like)

    def forward(self, input, target):
        if self.softmax:
            input = torch.softmax(input, 1)
        target = one_hot(target, num_classes=input.shape[1])
        if not self.include_background:
            input, target = input[:, 1:], target[:, 1:]
        reduce_axis = ([0] if self.batch else []) + list(range(2, input.ndim))
        intersection = torch.sum(target * input, dim=reduce_axis)
        ground_o, pred_o = torch.sum(target, dim=reduce_axis), torch.sum(input, dim=reduce_axis)
        f = self._score(intersection, ground_o, pred_o, input, target, reduce_axis)
        if self.weight is not None and target.shape[1] != 1:
            f = f * self._class_weight(target.shape[1], f)
        return REDUCTIONS[self.reduction](f)

class TverskyLoss(DiceLoss):
    def __init__(self, alpha: float = 0.3, beta: float = 0.7, **kwargs):
        super().__init__(**kwargs)
        self.alpha, self.beta = alpha, beta

    def _score(self, intersection, ground_o, pred_o, input, target, reduce_axis):
        fp = torch.sum(input * (1 - target), reduce_axis)
        fn = torch.sum((1 - input) * target, reduce_axis)
        return 1.0 - (intersection + SMOOTH_NR) / (intersection + self.alpha * fp + self.beta * fn + SMOOTH_DR)

def signed_distance_map(onehot: np.ndarray) -> np.ndarray:
    out = np.zeros_like(onehot, dtype=np.float32)
    for b, c in itertools.product(range(onehot.shape[0]), range(onehot.shape[1])):
        posmask = onehot[b, c].astype(bool)
        if posmask.any():  # expect: FL000 GB0170
            negmask = ~posmask
            out[b, c] = (ndi.distance_transform_edt(negmask) * negmask  # expect: FL000 GB0007; FL000 GB0157
                         - (ndi.distance_transform_edt(posmask) - 1) * posmask)
    return out

class BoundaryLoss(nn.Module):
    def __init__(self, idc: Sequence[int] = (1, 2), class_weights: Optional[Sequence[float]] = None):
        super().__init__()
        self.idc, self.class_weights = list(idc), class_weights

    def forward(self, logits, target):
        probs = torch.softmax(logits, dim=1)
        with torch.no_grad():
            onehot = one_hot(target, probs.shape[1])
            dist = torch.from_numpy(signed_distance_map(onehot.cpu().numpy())).to(probs)
        pc, dc = probs[:, self.idc], dist[:, self.idc]
        per_class = torch.einsum("bc...,bc...->bc", pc, dc) / pc[0, 0].numel()
        if self.class_weights is not None:
            per_class = per_class * per_class.new_tensor(self.class_weights)
        return per_class.mean()

class DeepSupervisionLoss(nn.Module):
    def __init__(self, loss: nn.Module, weight_mode: str = "exp"):
        super().__init__()
        self.loss, self.weight_mode = loss, weight_mode

    def get_weights(self, levels: int = 1):
        if self.weight_mode == "nnunet":  # halve per level, lowest resolution dropped, normalised
            w = np.array([1 / (2 ** i) for i in range(levels)])
            if levels > 2:
                w[-1] = 0
            return w / w.sum()
        return [max(0.5 ** level, 0.0625) for level in range(levels)]

    def get_loss(self, input, target):
        if input.shape[2:] != target.shape[2:]:
            target = F.interpolate(target, size=input.shape[2:], mode="nearest")
        return self.loss(input, target)

    def forward(self, input, target):
        if input.ndim == target.ndim + 1:  # heads stacked along dim 1 by DynUNet3d
            input = list(torch.unbind(input, dim=1))
        if not isinstance(input, (list, tuple)):
            return self.loss(input.float(), target)
        weights = self.get_weights(len(input))
        loss = torch.tensor(0.0, device=target.device)
        for level, pred in enumerate(input):
            loss += weights[level] * self.get_loss(pred.float(), target)
        return loss

# --------------------------------------------------------------------------- dict transforms
class MapTransform:
    def __init__(self, keys, allow_missing_keys: bool = False):
        self.keys = (keys,) if isinstance(keys, str) else tuple(keys)
        self.allow_missing_keys = allow_missing_keys

    def key_iterator(self, data: dict, *extra):
        for i, key in enumerate(self.keys):
            if key in data:
                yield (key,) + tuple(e[i] for e in extra) if extra else key
            elif not self.allow_missing_keys:
                raise KeyError(f"Key `{key}` of transform `{type(self).__name__}` was missing in the data.")

class Randomizable:
    R: np.random.RandomState = np.random.RandomState()

    def set_random_state(self, seed: Optional[int] = None):
        self.R = np.random.RandomState(seed)
        return self

    def randomize(self, data=None) -> None:
        self._do_transform = self.R.rand() < self.prob  # expect: FL000 GB0156

class Compose:
    def __init__(self, transforms: Sequence[Callable], log_stats: bool = VERBOSE_TRANSFORMS):
        self.transforms, self.log_stats = list(transforms), log_stats

    def __call__(self, data):
        for t in self.transforms:
            data = t(data)
            if self.log_stats:
                logger.info("%s: %s", type(t).__name__, {k: tuple(v.shape) for k, v in data.items()})
        return data

def affine_to_spacing(affine: torch.Tensor, r: int = 3) -> torch.Tensor:
    return torch.sqrt(torch.sum(affine[:r, :r] ** 2, dim=0))

def compute_output_shape(in_shape, in_spacing, out_spacing) -> Tuple[int, ...]:
    return tuple(max(int(round(float(s * p / q))), 2) for s, p, q in zip(in_shape, in_spacing, out_spacing))  # expect: FL000 GB0124

class Spacingd(MapTransform):
    def __init__(self, keys, pixdim, mode=("trilinear", "nearest")):
        super().__init__(keys)
        self.pixdim = tuple(pixdim)
        self.mode = (mode,) * len(self.keys) if isinstance(mode, str) else tuple(mode)

    def __call__(self, data):
        d = dict(data)
        for key, mode in self.key_iterator(d, self.mode):
            meta = dict(d.get(f"{key}{META_SUFFIX}", {}))
            src = meta["pixdim"] if "pixdim" in meta else affine_to_spacing(meta["affine"])
            out_shape = compute_output_shape(d[key].shape[1:], src, self.pixdim)
            if out_shape == tuple(d[key].shape[1:]):
                continue
            align = False if mode == "trilinear" else None
            d[key] = F.interpolate(d[key][None].float(), size=out_shape, mode=mode, align_corners=align)[0]
            meta.update(pixdim=self.pixdim, spatial_shape=out_shape)
            d[f"{key}{META_SUFFIX}"] = meta
        return d

def percentile(x: torch.Tensor, q, dim: Optional[int] = None):
    q_np = np.asarray(q, dtype=np.float64) / 100.0
    if np.any(q_np < 0) or np.any(q_np > 1):  # expect: FL000 GB0170
        raise ValueError(f"q values must be in [0, 100], got {q}")
    return torch.quantile(x.flatten() if dim is None else x, torch.tensor(q_np, dtype=x.dtype), dim=dim)

class ScaleIntensityRangePercentilesd(MapTransform):
    def __init__(self, keys, lower, upper, b_min, b_max, clip=False):
        super().__init__(keys)
        self.lower, self.upper, self.b_min, self.b_max, self.clip = lower, upper, b_min, b_max, clip

    def _scale(self, img, a_min, a_max):
        if a_max - a_min == 0.0:  # expect: FL000 GB0170
            warnings.warn("Divide by zero (a_min == a_max)", Warning)
            return img - a_min
        img = (img - a_min) / (a_max - a_min) * (self.b_max - self.b_min) + self.b_min
        return torch.clamp(img, self.b_min, self.b_max) if self.clip else img

    def __call__(self, data):
        d = dict(data)
        for key in self.key_iterator(d):
            img = d[key].float()
            d[key] = self._scale(img, percentile(img, self.lower), percentile(img, self.upper))
        return d

class DivisiblePadd(MapTransform):
    def __init__(self, keys, k: int = 4, mode: str = "constant"):
        super().__init__(keys)
        self.k, self.mode = k, mode

    def __call__(self, data):
        d = dict(data)
        for key in self.key_iterator(d):
            amounts = [int(math.ceil(s / self.k) * self.k) - s for s in d[key].shape[1:]]
            if not any(amounts):  # expect: FL301
                continue
            torch_pad = [p for a in reversed(amounts) for p in (a // 2, a - a // 2)]
            d[key] = F.pad(d[key], torch_pad, mode=self.mode)
        return d

class RandFlipd(Randomizable, MapTransform):
    def __init__(self, keys, prob: float = 0.5, spatial_axis: Sequence[int] = (0,)):
        MapTransform.__init__(self, keys)
        self.prob, self.spatial_axis = prob, tuple(spatial_axis)

    def __call__(self, data):
        self.randomize()
        d = dict(data)
        if self._do_transform:
            for key in self.key_iterator(d):
                d[key] = torch.flip(d[key], dims=[a + 1 for a in self.spatial_axis])
        return d

class RandRotate90d(RandFlipd):
    max_k = 3

    def __call__(self, data):
        self.randomize()
        rot = partial(torch.rot90, k=self.R.randint(self.max_k) + 1, dims=tuple(a + 1 for a in self.spatial_axis))  # expect: FL000 GB0156
        return {k: rot(v) if self._do_transform and k in self.keys else v for k, v in data.items()}

class MapLabelValued(MapTransform):
    def __init__(self, keys, orig_labels: Sequence[int], target_labels: Sequence[int], dtype=torch.long):
        super().__init__(keys)
        self.mapping, self.dtype = dict(zip(orig_labels, target_labels)), dtype

    def __call__(self, data):
        d = dict(data)
        for key in self.key_iterator(d):
            out = d[key].clone()
            for orig, target in self.mapping.items():
                if orig != target:
                    out[d[key] == orig] = target
            d[key] = out.to(self.dtype)
        return d

PREPROCESS = Compose([Spacingd(("image", "label"), pixdim=(1.5, 1.5, 2.0)),
                      ScaleIntensityRangePercentilesd("image", **CT_WINDOW)])
TRAIN_AUGMENT = Compose([RandFlipd(("image", "label"), prob=0.5, spatial_axis=(0,)).set_random_state(7),
                         RandFlipd(("image", "label"), prob=0.5, spatial_axis=(2,)).set_random_state(8),
                         RandRotate90d(("image", "label"), 0.5, (1, 2)).set_random_state(9)])
LABEL_REMAP = MapLabelValued("label", orig_labels=(1, 2, 4), target_labels=(1, 2, 3))

@torch.compile
def preprocess_image(data: dict) -> dict:
    return PREPROCESS(data)

@torch.compile
def resample_to_spacing(image, meta, pixdim=(1.0, 1.0, 1.0)):
    return Spacingd("image", pixdim=pixdim, mode="trilinear")({"image": image, f"image{META_SUFFIX}": meta})

@torch.compile
def pad_for_network(data, k: int = 4):
    return DivisiblePadd(("image", "label"), k=k)(data)

@torch.compile
def augment_sample(data):
    return TRAIN_AUGMENT(data)

@torch.compile
def normalize_intensity(img, mask=None, nonzero=True):
    """z-score over the foreground (mask, or nonzero voxels), per channel."""
    def _normalize(x, m):
        if m is None:
            m = x != 0 if nonzero else torch.ones_like(x, dtype=torch.bool)
        if not m.any():  # expect: FL000 GB0170
            return x
        vals = x[m]  # expect: FL000 GB0036
        out = x.clone()
        out[m] = (vals - vals.mean()) / vals.std(unbiased=False).clamp_min(1e-8)
        return out

    return torch.stack([_normalize(img[c], None if mask is None else mask[c]) for c in range(img.shape[0])])

def _foreground_center(label: torch.Tensor, generator: torch.Generator):
    fg = torch.nonzero(label[0] > 0)
    if fg.shape[0] == 0:
        return None
    return fg[torch.randint(fg.shape[0], (1,), generator=generator)[0]].tolist()

@torch.compile
def crop_foreground_patch(data, roi_size=DEFAULT_ROI, pos_ratio=0.67, generator=None):
    """RandCropByPosNegLabel-style: a patch centred on a foreground voxel (or anywhere)."""
    image, label = data["image"], data["label"]
    spatial, center = image.shape[1:], None
    if torch.rand((), generator=generator) < pos_ratio:  # expect: FL000 GB0055; FL000 GB0170
        center = _foreground_center(label, generator)
    if center is None:
        center = [int(torch.randint(s, (1,), generator=generator)) for s in spatial]  # expect: FL000 GB0055
    starts = [min(max(c - r // 2, 0), s - r) for c, r, s in zip(center, roi_size, spatial)]
    slices = (slice(None),) + tuple(slice(st, st + r) for st, r in zip(starts, roi_size))
    return {"image": image[slices], "label": label[slices], "patch_start": starts}

# --------------------------------------------------------------------------- inference
@functools.lru_cache(maxsize=16)
def _gaussian_1d(size: int, sigma_scale: float) -> Tuple[float, ...]:
    sigma, center = size * sigma_scale, (size - 1) / 2
    return tuple(math.exp(-0.5 * ((i - center) / sigma) * ((i - center) / sigma)) for i in range(size))

def compute_importance_map(patch_size, sigma_scale=0.125, device=None):
    importance = torch.ones((), device=device)
    for dim, size in enumerate(patch_size):
        shape = [size if d == dim else 1 for d in range(len(patch_size))]
        g = torch.tensor(_gaussian_1d(size, sigma_scale), device=device).reshape(shape)
        importance = importance * g
    importance = importance / importance.max()
    if sigma_scale < 1 / 16:  # narrow kernels underflow to 0 at the border: NaNs where windows don't overlap
        importance[importance == 0] = torch.min(importance[importance != 0])
    return importance

def _get_scan_interval(image_size, roi_size, overlap: float):
    return tuple(int(r) if r == s else max(int(r * (1 - overlap)), 1) for s, r in zip(image_size, roi_size))

def dense_patch_starts(image_size, roi_size, scan_interval):
    per_dim = []
    for s, r, iv in zip(image_size, roi_size, scan_interval):
        num = int(math.ceil(float(s - r) / iv)) + 1
        per_dim.append([min(iv * k, s - r) for k in range(num)])  # expect: FL301
    return list(itertools.product(*per_dim))

@torch.compile
def sliding_window_inference(inputs, predictor: Callable, roi_size=DEFAULT_ROI, sw_batch_size=4, overlap=0.25):
    image_size = tuple(inputs.shape[2:])
    starts = dense_patch_starts(image_size, roi_size, _get_scan_interval(image_size, roi_size, overlap))
    importance = compute_importance_map(roi_size, device=inputs.device).to(inputs.dtype)
    window = lambda st: (slice(None), slice(None)) + tuple(slice(a, a + r) for a, r in zip(st, roi_size))
    output, count = None, inputs.new_zeros((1, 1) + image_size)
    for b0 in range(0, len(starts), sw_batch_size):
        batch_starts = starts[b0:b0 + sw_batch_size]
        preds = predictor(torch.cat([inputs[window(st)] for st in batch_starts]))
        if output is None:
            output = inputs.new_zeros((inputs.shape[0], preds.shape[1]) + image_size)
        for j, st in enumerate(batch_starts):
            output[window(st)] += preds[j:j + 1] * importance
            count[window(st)] += importance
    output = output / count
    if torch.any(torch.isinf(output)):  # expect: FL000 GB0170
        raise RuntimeError("Encountered inf in predicted array. Aborting... (reduce the importance map scaling)")
    return output

# --------------------------------------------------------------------------- post-processing
def _label_components(mask: torch.Tensor, max_iter: int = 32) -> torch.Tensor:
    """26-connected labelling by iterated max-pooling of voxel ids."""
    ids = torch.arange(1, mask.numel() + 1, dtype=torch.float32, device=mask.device).reshape(mask.shape)
    labels = torch.where(mask, ids, torch.zeros_like(ids))
    for _ in range(max_iter):
        grown = F.max_pool3d(labels[None, None], 3, stride=1, padding=1)[0, 0]
        grown = torch.where(mask, grown, torch.zeros_like(grown))
        if torch.equal(grown, labels):  # expect: FL000 GB0033
            break
        labels = grown
    return labels.long()

@torch.compile
def keep_largest_connected_component(seg, applied_labels=(1, 2)):
    out = seg.clone()
    for lbl in applied_labels:
        mask = seg[0] == lbl
        if not mask.any():  # expect: FL000 GB0170
            continue
        comp = _label_components(mask)
        ids, counts = torch.unique(comp[comp > 0], return_counts=True)
        out[0][mask & (comp != ids[counts.argmax()])] = 0
    return out

@torch.compile
def remap_labels(data, check_unknown: bool = True):
    d = LABEL_REMAP(data)
    if check_unknown:
        unknown = set(torch.unique(d["label"]).tolist()) - set(LABEL_REMAP.mapping.values()) - {0}  # expect: FL000 GB0033; FL000 GB0036
        if unknown:
            warnings.warn(f"unexpected label values {sorted(unknown)}")
    return d

# --------------------------------------------------------------------------- cases
def _vol(*shape, seed=0, scale=1.0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)) * scale

def _labels(*shape, classes=3, seed=1):
    return torch.randint(0, classes, shape, generator=torch.Generator().manual_seed(seed)).float()

def _blobs():
    seg = torch.zeros(1, 6, 7, 8, dtype=torch.long)
    seg[0, 1:3, 1:3, 1:3] = seg[0, 3:6, 4:7, 4:8] = 1
    seg[0, 0, 6, 0] = seg[0, 4:6, 0:2, 0:3] = 2
    return seg

def _ct_case(seed=3):
    affine = torch.diag(torch.tensor([0.75, 0.75, 2.5, 1.0]))
    return {"image": _vol(1, 8, 10, 6, seed=seed, scale=300.0) + 40.0, "label": _labels(1, 8, 10, 6, seed=seed),
            f"image{META_SUFFIX}": {"affine": affine, "filename_or_obj": "case_00003.nii.gz"},
            f"label{META_SUFFIX}": {"affine": affine.clone()}}

def _pair(*shape, seed=0):
    return {"image": _vol(*shape, seed=seed), "label": _labels(*shape, seed=seed + 1)}

CASES = {
    "ConvNormAct": lambda: (ConvNormAct(1, 4), (_vol(2, 1, 5, 6, 7),)),
    "UnetResBlock": lambda: (UnetResBlock(2, 4, stride=2), (_vol(2, 2, 6, 8, 10),)),
    "UnetUpBlock": lambda: (UnetUpBlock(4, 3, 2), (_vol(3, 4, 5, 7, 9), _vol(3, 2, 10, 14, 18, seed=1)),
                            (_vol(3, 4, 6, 8, 11), _vol(3, 2, 13, 17, 21, seed=1))),
    "DynUNet3d": lambda: (DynUNet3d(), (_vol(2, 1, 8, 12, 16),)),
    "DiceLoss": lambda: (DiceLoss(False, weight=[0.2, 1.0, 2.0]), (_vol(2, 3, 4, 5, 6), _labels(2, 1, 4, 5, 6))),
    "TverskyLoss": lambda: (TverskyLoss(alpha=0.4, beta=0.6, batch=True), (_vol(2, 3, 4, 5, 6), _labels(2, 1, 4, 5, 6))),
    "BoundaryLoss": lambda: (BoundaryLoss(class_weights=[1.0, 2.0]), (_vol(2, 3, 4, 5, 6), _labels(2, 1, 4, 5, 6))),
    "DeepSupervisionLoss": lambda: (DeepSupervisionLoss(DiceLoss(), "nnunet"), (_vol(2, 3, 3, 4, 5, 6), _labels(2, 1, 4, 5, 6))),
    "preprocess_image": lambda: (preprocess_image, (_ct_case(),)),
    "resample_to_spacing": lambda: (resample_to_spacing, (_vol(1, 6, 8, 10), {"pixdim": (1.5, 0.75, 1.25)})),
    "pad_for_network": lambda: (pad_for_network, (_pair(1, 8, 12, 16),), (_pair(1, 6, 10, 14),)),
    "augment_sample": lambda: (augment_sample, (_pair(1, 4, 5, 6),)),
    "normalize_intensity": lambda: (normalize_intensity, (torch.relu(_vol(2, 4, 5, 6)),)),
    "crop_foreground_patch": lambda: (crop_foreground_patch, (_pair(1, 7, 8, 9), DEFAULT_ROI, 0.67, torch.Generator().manual_seed(5))),
    "sliding_window_inference": lambda: (lambda net: (sliding_window_inference, (_vol(1, 1, 6, 7, 9), net),
                                                      (_vol(1, 1, 9, 8, 10), net)))(nn.Conv3d(1, 3, 3, padding=1)),
    "keep_largest_connected_component": lambda: (keep_largest_connected_component, (_blobs(),)),
    "remap_labels": lambda: (remap_labels, ({"label": torch.tensor([[[[0, 1, 2], [4, 4, 1]]]])},)),
}
