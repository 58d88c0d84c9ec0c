"""Segmentation heads and utilities in the style of mmsegmentation / smp / HRNet-Seg / MaskFormer:
ASPP, FPN and UNet decoders, dice / focal / Lovasz / OHEM losses with ignore_index, class-weight
configs, mask post-processing, panoptic merging, flip / multi-scale TTA and sliding windows."""
import functools
import logging
import math
import warnings
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("seg_heads")
logger.addHandler(logging.NullHandler())

IGNORE_INDEX = 255
NUM_CLASSES = 5
THING_IDS = (1, 2)  # classes that get instance ids in the panoptic output
CHECK_FINITE = True

CLASS_FREQ = {"road": 0.42, "car": 0.08, "person": 0.02, "vegetation": 0.31, "sky": 0.17}
CLASS_WEIGHT_CONFIGS = {"uniform": None, "enet": {"c": 1.02}, "median_freq": {},
                        "manual": [0.8, 1.6, 2.4, 0.9, 1.0]}

# --------------------------------------------------------------------------- small utilities

def resize(x, size=None, ref=None, mode="bilinear", align_corners=None, warning=False):
    """mmseg's resize: size may come from another tensor; warns on misaligned upsampling."""
    if ref is not None:
        size = ref.shape[-2:]
    if tuple(x.shape[-2:]) == tuple(size):
        return x
    if warning and align_corners:
        input_h, input_w = tuple(int(s) for s in x.shape[2:])
        output_h, output_w = tuple(int(s) for s in size)
        if output_h > input_h or output_w > input_w:
            if ((output_h > 1 and output_w > 1 and input_h > 1 and input_w > 1)
                    and (output_h - 1) % (input_h - 1) and (output_w - 1) % (input_w - 1)):
                warnings.warn(f"When align_corners={align_corners}, the output would be more aligned if "  # expect: FL000 GB0007
                              f"input size {(input_h, input_w)} is `x+1` and out size {(output_h, output_w)} is `nx+1`")
    return F.interpolate(x, size=size, mode=mode, align_corners=align_corners)

def _check_finite(t, what):
    if CHECK_FINITE and not torch.isfinite(t).all():  # expect: FL000 GB0170
        logger.warning("non-finite values in %s", what)
        return torch.nan_to_num(t)
    return t

NORM_LAYERS: Dict[str, Callable[[int], nn.Module]] = {
    "bn": nn.BatchNorm2d,
    "gn": functools.partial(nn.GroupNorm, 2),
    "none": lambda ch: nn.Identity(),
}

@dataclass
class HeadConfig:
    in_channels: Sequence[int] = (4, 8, 12)
    channels: int = 8
    num_classes: int = NUM_CLASSES
    aspp_rates: Tuple[int, ...] = (2, 3)
    norm: str = "bn"
    dropout: float = 0.0
    align_corners: bool = False
    aux_weight: float = 0.4
    head: str = "fpn"

# --------------------------------------------------------------------------- building blocks

class ConvBNReLU(nn.Sequential):
    def __init__(self, cin, cout, k=3, stride=1, dilation=1, norm="bn"):
        pad = dilation * (k - 1) // 2
        conv = nn.Conv2d(cin, cout, k, stride=stride, padding=pad, dilation=dilation, bias=norm == "none")
        super().__init__(conv, NORM_LAYERS[norm](cout), nn.ReLU(inplace=True))

class ASPPPooling(nn.Sequential):
    def __init__(self, cin, cout, norm="gn"):
        super().__init__(nn.AdaptiveAvgPool2d(1), nn.Conv2d(cin, cout, 1, bias=False),
                         NORM_LAYERS[norm](cout), nn.ReLU())

    def forward(self, x):
        size = x.shape[-2:]
        for mod in self:
            x = mod(x)
        return F.interpolate(x, size=size, mode="bilinear", align_corners=False)

class ASPP(nn.Module):
    def __init__(self, cin, cout, rates=(2, 3), norm="bn", dropout=0.1):
        super().__init__()
        branches = [ConvBNReLU(cin, cout, 1, norm=norm)]
        branches += [ConvBNReLU(cin, cout, 3, dilation=r, norm=norm) for r in rates]
        branches.append(ASPPPooling(cin, cout))
        self.convs = nn.ModuleList(branches)
        self.project = nn.Sequential(ConvBNReLU(len(branches) * cout, cout, 1, norm=norm), nn.Dropout(dropout))

    def forward(self, x):
        res = [conv(x) for conv in self.convs]
        return self.project(torch.cat(res, dim=1))

class DeepLabV3PlusHead(nn.Module):
    needs_img_size = True

    def __init__(self, cfg: HeadConfig, low_level_channels: int = 4):
        super().__init__()
        self.cfg = cfg
        self.aspp = ASPP(cfg.in_channels[-1], cfg.channels, cfg.aspp_rates, cfg.norm, cfg.dropout)
        self.low_proj = ConvBNReLU(cfg.in_channels[0], low_level_channels, 1, norm=cfg.norm)
        self.fuse = nn.Sequential(ConvBNReLU(cfg.channels + low_level_channels, cfg.channels, norm=cfg.norm),
                                  ConvBNReLU(cfg.channels, cfg.channels, norm=cfg.norm))
        self.cls_seg = nn.Conv2d(cfg.channels, cfg.num_classes, 1)

    def forward(self, feats: List[torch.Tensor], img_size: Optional[Tuple[int, int]] = None):
        low, high = feats[0], feats[-1]
        x = self.aspp(high)
        x = resize(x, ref=low, align_corners=self.cfg.align_corners, warning=True)
        x = self.fuse(torch.cat([x, self.low_proj(low)], dim=1))
        logits = self.cls_seg(x)
        if img_size is not None:
            logits = resize(logits, size=img_size, align_corners=self.cfg.align_corners)
        return logits

class FPNDecoder(nn.Module):
    """Semantic-FPN: top-down nearest upsampling to the next level's size, then sum all levels."""
    def __init__(self, cfg: HeadConfig):
        super().__init__()
        self.cfg = cfg
        self.lateral = nn.ModuleList(nn.Conv2d(c, cfg.channels, 1) for c in cfg.in_channels)
        self.smooth = nn.ModuleList(ConvBNReLU(cfg.channels, cfg.channels, norm=cfg.norm) for _ in cfg.in_channels)
        self.cls_seg = nn.Conv2d(cfg.channels, cfg.num_classes, 1)

    def forward(self, feats):
        assert len(feats) == len(self.lateral), f"expected {len(self.lateral)} levels, got {len(feats)}"
        laterals = [conv(f) for conv, f in zip(self.lateral, feats)]
        for i in range(len(laterals) - 1, 0, -1):
            laterals[i - 1] = laterals[i - 1] + resize(laterals[i], ref=laterals[i - 1], mode="nearest")
        outs = [conv(lat) for conv, lat in zip(self.smooth, laterals)]
        logger.debug("fpn levels: %s", [tuple(o.shape) for o in outs])  # expect: FL000 GB0291
        fused = sum(resize(o, ref=outs[0], align_corners=self.cfg.align_corners) for o in outs)
        return self.cls_seg(fused / len(outs))

HEAD_REGISTRY = {"fpn": FPNDecoder, "deeplabv3plus": DeepLabV3PlusHead}

class SegmentationModel(nn.Module):
    def __init__(self, cfg: HeadConfig = HeadConfig()):
        super().__init__()
        self.cfg = cfg
        chans = (3, *cfg.in_channels)
        self.stages = nn.ModuleList(ConvBNReLU(a, b, stride=2, norm=cfg.norm) for a, b in zip(chans, chans[1:]))
        self.decode_head = HEAD_REGISTRY[cfg.head](cfg)
        self.aux_head = None
        if cfg.aux_weight > 0:
            self.aux_head = nn.Sequential(ConvBNReLU(cfg.in_channels[-2], cfg.channels, norm=cfg.norm),
                                          nn.Conv2d(cfg.channels, cfg.num_classes, 1))

    @property
    def num_classes(self) -> int:
        return self.cfg.num_classes

    def forward(self, img):
        feats, x = [], img
        for stage in self.stages:
            x = stage(x)
            feats.append(x)
        if getattr(self.decode_head, "needs_img_size", False):
            logits = self.decode_head(feats, img.shape[-2:])
        else:
            logits = self.decode_head(feats)
        out = {"out": resize(_check_finite(logits, "logits"), ref=img, align_corners=self.cfg.align_corners)}
        if self.aux_head is not None and self.training:
            out["aux"] = resize(self.aux_head(feats[-2]), ref=img, align_corners=self.cfg.align_corners)
        return out

class UpBlock(nn.Module):
    def __init__(self, cin, cskip, cout):
        super().__init__()
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
        self.conv = nn.Sequential(ConvBNReLU(cin + cskip, cout), ConvBNReLU(cout, cout))

    def forward(self, x, skip):
        x = self.up(x)
        dy, dx = skip.size(2) - x.size(2), skip.size(3) - x.size(3)
        if dy or dx:  # expect: FL301
            x = F.pad(x, [dx // 2, dx - dx // 2, dy // 2, dy - dy // 2])
        return self.conv(torch.cat([skip, x], dim=1))

class TinyUNet(nn.Module):
    def __init__(self, in_ch=3, num_classes=NUM_CLASSES, widths=(4, 8, 12)):
        super().__init__()
        self.stem = nn.Sequential(ConvBNReLU(in_ch, widths[0]), ConvBNReLU(widths[0], widths[0]))
        pairs = list(zip(widths[:-1], widths[1:]))
        self.downs = nn.ModuleList(nn.Sequential(nn.MaxPool2d(2), ConvBNReLU(a, b)) for a, b in pairs)
        self.ups = nn.ModuleList(UpBlock(b, a, a) for a, b in reversed(pairs))
        self.head = nn.Conv2d(widths[0], num_classes, 1)

    def forward(self, x):
        skips = [self.stem(x)]
        for down in self.downs:
            skips.append(down(skips[-1]))
        x = skips.pop()
        for up in self.ups:
            x = up(x, skips.pop())
        return self.head(x)

# --------------------------------------------------------------------------- losses

def _valid_and_clean(target, ignore_index=IGNORE_INDEX):
    valid = target != ignore_index
    return valid, torch.where(valid, target, torch.zeros_like(target))

def dice_loss(logits, target, smooth=1.0, exponent=2, ignore_index=IGNORE_INDEX, class_weight=None):
    num_classes = logits.shape[1]
    valid, target = _valid_and_clean(target, ignore_index)
    probs = logits.softmax(dim=1)
    one_hot = F.one_hot(target, num_classes).permute(0, 3, 1, 2).to(probs.dtype)
    valid = valid.unsqueeze(1).to(probs.dtype)
    dims = (0, 2, 3)
    inter = (probs * one_hot * valid).sum(dims)
    denom = (probs.pow(exponent) * valid).sum(dims) + (one_hot.pow(exponent) * valid).sum(dims)
    loss = 1 - (2 * inter + smooth) / (denom + smooth)
    if class_weight is not None:
        loss = loss * class_weight
    return loss.mean()

REDUCTIONS = {"sum": torch.sum, "none": lambda t: t, "mean": torch.mean}

def softmax_focal_loss(logits, target, gamma=2.0, alpha=None, ignore_index=IGNORE_INDEX, reduction="mean"):
    logpt = -F.cross_entropy(logits, target, ignore_index=ignore_index, reduction="none")
    loss = -((1 - logpt.exp()) ** gamma) * logpt
    if alpha is not None:
        _, clean = _valid_and_clean(target, ignore_index)
        loss = loss * alpha[clean]
    if reduction == "mean":
        return loss.sum() / (target != ignore_index).sum().clamp_min(1)
    return REDUCTIONS[reduction](loss)

def class_weights_from_config(name, device=None):
    try:
        spec = CLASS_WEIGHT_CONFIGS[name]
    except KeyError:
        logger.warning("unknown class weighting %r, using uniform", name)
        spec = None
    if spec is None:
        return None
    freqs = np.array(list(CLASS_FREQ.values()), dtype=np.float32)
    if isinstance(spec, list):
        weights = np.asarray(spec, dtype=np.float32)
    elif "c" in spec:
        weights = 1.0 / np.log(spec["c"] + freqs)
    else:
        weights = np.median(freqs) / freqs
    return torch.from_numpy(weights / weights.mean()).to(device)

@torch.compile
def weighted_focal_loss(logits, target, weighting="enet", gamma=2.0):
    if logits.shape[-2:] != target.shape[-2:]:  # expect: FL301
        logits = resize(logits, ref=target)
    alpha = class_weights_from_config(weighting, logits.device)
    return softmax_focal_loss(logits, target, gamma=gamma, alpha=alpha)

# Lovasz-softmax, after Berman et al.'s reference implementation
def nanmean(values, empty=0):
    values = list(values)
    if not values:
        if empty == "raise":
            raise ValueError("Empty mean")
        return empty
    return sum(values) / len(values)

def lovasz_grad(gt_sorted):
    p = len(gt_sorted)
    gts = gt_sorted.sum()
    intersection = gts - gt_sorted.float().cumsum(0)
    union = gts + (1 - gt_sorted).float().cumsum(0)
    jaccard = 1.0 - intersection / union
    if p > 1:
        jaccard[1:p] = jaccard[1:p] - jaccard[0:-1]
    return jaccard

def flatten_probas(probas, labels, ignore=None):
    c = probas.size(1)
    probas = probas.permute(0, 2, 3, 1).contiguous().view(-1, c)
    labels = labels.view(-1)
    if ignore is None:
        return probas, labels
    valid = labels != ignore
    return probas[valid.nonzero().squeeze()], labels[valid]  # expect: FL000 GB0036

def lovasz_softmax_flat(probas, labels, classes="present"):
    if probas.numel() == 0:
        return probas * 0.0
    c = probas.size(1)
    losses = []
    class_to_sum = list(range(c)) if classes in ("all", "present") else classes
    for k in class_to_sum:
        fg = (labels == k).float()
        if classes == "present" and fg.sum() == 0:  # expect: FL000 GB0170
            continue
        class_pred = probas[:, 0] if c == 1 else probas[:, k]
        errors = (fg - class_pred).abs()
        errors_sorted, perm = torch.sort(errors, 0, descending=True)
        losses.append(torch.dot(errors_sorted, lovasz_grad(fg[perm.data])))
    return nanmean(losses)

def lovasz_softmax(probas, labels, classes="present", ignore=IGNORE_INDEX):
    return lovasz_softmax_flat(*flatten_probas(probas, labels, ignore), classes=classes)

lovasz_softmax_loss = torch.compile(lovasz_softmax)

class OhemCrossEntropy(nn.Module):
    """HRNet-Seg's OHEM: keep pixels whose true-class probability is below a threshold."""
    def __init__(self, ignore_label=IGNORE_INDEX, thres=0.7, min_kept=32, weight=None):
        super().__init__()
        self.thresh = thres
        self.min_kept = max(1, min_kept)
        self.ignore_label = ignore_label
        self.criterion = nn.CrossEntropyLoss(weight=weight, ignore_index=ignore_label, reduction="none")

    def forward(self, score, target):
        ph, pw = score.size(2), score.size(3)
        h, w = target.size(1), target.size(2)
        if ph != h or pw != w:
            score = F.interpolate(score, size=(h, w), mode="bilinear", align_corners=False)
        pred = F.softmax(score, dim=1)
        pixel_losses = self.criterion(score, target).contiguous().view(-1)
        mask = target.contiguous().view(-1) != self.ignore_label
        tmp_target = target.clone()
        tmp_target[tmp_target == self.ignore_label] = 0
        pred = pred.gather(1, tmp_target.unsqueeze(1))
        pred, ind = pred.contiguous().view(-1)[mask].contiguous().sort()  # expect: FL000 GB0036
        min_value = pred[min(self.min_kept, pred.numel() - 1)]
        threshold = max(min_value, self.thresh)
        pixel_losses = pixel_losses[mask][ind]  # expect: FL000 GB0036
        pixel_losses = pixel_losses[pred < threshold]  # expect: FL000 GB0036
        return pixel_losses.mean()

LOSS_REGISTRY: Dict[str, Callable] = {
    "ce": functools.partial(F.cross_entropy, ignore_index=IGNORE_INDEX),
    "focal": functools.partial(softmax_focal_loss, gamma=2.0),
    "dice": dice_loss,
    "lovasz": lambda logits, target: lovasz_softmax(logits.softmax(1), target),
}

class CompositeSegLoss(nn.Module):

    def __init__(self, terms: Dict[str, float], aux_weight=0.4, warmup_steps=10):
        super().__init__()
        self.terms = [(name, LOSS_REGISTRY[name], w) for name, w in terms.items()]
        self.aux_weight = aux_weight
        self.warmup_steps = warmup_steps
        self.num_updates = 0

    def forward(self, outputs: Dict[str, torch.Tensor], target):
        losses = {}
        pred = resize(outputs["out"], ref=target)
        for name, fn, weight in self.terms:
            losses[name] = weight * fn(pred, target)
        if "aux" in outputs:
            aux = F.cross_entropy(resize(outputs["aux"], ref=target), target, ignore_index=IGNORE_INDEX)
            ramp = min(1.0, self.num_updates / self.warmup_steps) if self.warmup_steps else 1.0
            losses["aux"] = self.aux_weight * ramp * aux
        if self.training:
            self.num_updates += 1  # expect: FL302
        losses["total"] = sum(losses.values())
        return losses

# --------------------------------------------------------------------------- mask post-processing

def binary_close(mask, k=3):
    dil = F.max_pool2d(mask.float().unsqueeze(1), k, 1, k // 2)
    return (-F.max_pool2d(-dil, k, 1, k // 2)).squeeze(1) > 0.5

POSTPROCESS_STEPS: List[Callable] = [torch.sigmoid, functools.partial(torch.gt, other=0.45), binary_close]

@torch.compile
def clean_binary_masks(logits, steps=POSTPROCESS_STEPS):
    for step in steps:
        logits = step(logits)
    return logits

def label_components(mask, max_iters=None):
    """Connected components on the GPU: propagate the max pixel id over 8-neighbours."""
    n, h, w = mask.shape
    ids = torch.arange(1, h * w + 1, device=mask.device, dtype=torch.float32).view(1, h, w).expand(n, h, w)
    labels = torch.where(mask, ids, torch.zeros_like(ids)).unsqueeze(1)
    for _ in range(max_iters or (h + w)):
        new = F.max_pool2d(labels, 3, 1, 1) * mask.unsqueeze(1)
        if torch.equal(new, labels):  # expect: FL000 GB0033
            break
        labels = new
    return labels.squeeze(1).long()

@torch.compile
def remove_small_regions(mask, min_area=4, mode="islands"):
    """SAM-style: drop islands (or fill holes) smaller than min_area pixels."""
    correct_holes = mode == "holes"
    working = mask ^ correct_holes
    labels = label_components(working, max_iters=6)
    out = working.clone()
    for b in range(labels.shape[0]):
        ids, areas = torch.unique(labels[b], return_counts=True)  # expect: FL000 GB0036
        small = [int(i) for i, a in zip(ids.tolist(), areas.tolist()) if i != 0 and a < min_area]
        if not small:
            continue
        out[b] &= ~torch.isin(labels[b], torch.tensor(small, device=mask.device))
    return out ^ correct_holes

# --------------------------------------------------------------------------- panoptic

@torch.compile
def panoptic_inference(mask_cls, mask_pred, num_classes=NUM_CLASSES, thing_ids=THING_IDS,
                       object_mask_threshold=0.4, overlap_threshold=0.8):
    scores, labels = F.softmax(mask_cls, dim=-1).max(-1)
    mask_pred = mask_pred.sigmoid()
    keep = labels.ne(num_classes) & (scores > object_mask_threshold)
    cur_scores = scores[keep]  # expect: FL000 GB0036
    cur_classes = labels[keep]  # expect: FL000 GB0036
    cur_masks = mask_pred[keep]  # expect: FL000 GB0036
    cur_prob_masks = cur_scores.view(-1, 1, 1) * cur_masks
    h, w = cur_masks.shape[-2:]
    panoptic_seg = torch.zeros((h, w), dtype=torch.int32, device=cur_masks.device)
    segments_info = []
    current_segment_id = 0
    if cur_masks.shape[0] == 0:
        return panoptic_seg, segments_info
    cur_mask_ids = cur_prob_masks.argmax(0)
    stuff_memory_list: Dict[int, int] = {}
    for k in range(cur_classes.shape[0]):
        pred_class = cur_classes[k].item()  # expect: FL000 GB0124
        isthing = pred_class in thing_ids
        mask_area = (cur_mask_ids == k).sum().item()
        original_area = (cur_masks[k] >= 0.5).sum().item()
        mask = (cur_mask_ids == k) & (cur_masks[k] >= 0.5)
        if mask_area > 0 and original_area > 0 and mask.sum().item() > 0:
            if mask_area / original_area < overlap_threshold:
                continue
            if not isthing:
                if int(pred_class) in stuff_memory_list:
                    panoptic_seg[mask] = stuff_memory_list[int(pred_class)]
                    continue
                stuff_memory_list[int(pred_class)] = current_segment_id + 1
            current_segment_id += 1
            panoptic_seg[mask] = current_segment_id
            segments_info.append({"id": current_segment_id, "isthing": bool(isthing),
                                  "category_id": int(pred_class), "area": int(mask_area)})
    return panoptic_seg, segments_info

# --------------------------------------------------------------------------- inference

def _make_merger(kind, n_views):
    if kind == "mean":
        return lambda acc, p: acc + p / n_views
    return torch.maximum

@torch.compile
def tta_inference(model, img, scales=(0.75, 1.0, 1.25), flip=True, merge="mean"):
    n, _, h, w = img.shape
    merge_fn = _make_merger(merge, len(scales) * (2 if flip else 1))
    probs = img.new_zeros(n, model.num_classes, h, w)
    for s in scales:
        x = img if s == 1.0 else F.interpolate(img, scale_factor=s, mode="bilinear", align_corners=False)
        views = [(x, False)] + ([(x.flip(-1), True)] if flip else [])
        for view, flipped in views:
            logits = model(view)["out"]
            if flipped:
                logits = logits.flip(-1)
            probs = merge_fn(probs, resize(logits, size=(h, w)).softmax(1))
    return probs

SLIDE_CFG = {"crop_size": (8, 8), "stride": (6, 6)}

@torch.compile
def slide_inference(model, img, num_classes=NUM_CLASSES):
    (h_stride, w_stride), (h_crop, w_crop) = SLIDE_CFG["stride"], SLIDE_CFG["crop_size"]
    batch_size, _, h_img, w_img = img.size()
    h_grids = max(h_img - h_crop + h_stride - 1, 0) // h_stride + 1
    w_grids = max(w_img - w_crop + w_stride - 1, 0) // w_stride + 1
    preds = img.new_zeros((batch_size, num_classes, h_img, w_img))
    count_mat = img.new_zeros((batch_size, 1, h_img, w_img))
    for h_idx in range(h_grids):  # expect: FL301
        for w_idx in range(w_grids):
            y1 = h_idx * h_stride
            x1 = w_idx * w_stride
            y2 = min(y1 + h_crop, h_img)
            x2 = min(x1 + w_crop, w_img)
            y1 = max(y2 - h_crop, 0)
            x1 = max(x2 - w_crop, 0)
            crop_logit = model(img[:, :, y1:y2, x1:x2])
            preds += F.pad(crop_logit, (int(x1), int(preds.shape[3] - x2), int(y1), int(preds.shape[2] - y2)))
            count_mat[:, :, y1:y2, x1:x2] += 1
    assert (count_mat == 0).sum() == 0
    return preds / count_mat

# --------------------------------------------------------------------------- cases

def _gen(k):
    return torch.Generator().manual_seed(k)

def _img(*shape, k=0):
    return torch.randn(*shape, generator=_gen(k))

def _labels(n, h, w, num_classes=NUM_CLASSES, ignore_frac=0.1, k=1):
    g = _gen(k)
    lab = torch.randint(0, num_classes, (n, h, w), generator=g)
    ignore = torch.rand(n, h, w, generator=g) < ignore_frac
    return lab.masked_fill(ignore, IGNORE_INDEX)

def _feats(n=2, h=12, w=14, chans=(4, 8, 12)):
    return [_img(n, c, math.ceil(h / 2 ** i), math.ceil(w / 2 ** i), k=10 + i) for i, c in enumerate(chans)]

def _blobs(n=2, h=10, w=12):
    m = torch.rand(n, h, w, generator=_gen(3)) > 0.6
    m[:, 2:5, 3:7] = True
    return m

def _panoptic_queries(q=7, h=9, w=11):
    g = _gen(5)
    mask_cls = 4 * torch.randn(q, NUM_CLASSES + 1, generator=g)
    coarse = 8 * torch.randn(1, q, 3, 4, generator=g) - 6
    return mask_cls, F.interpolate(coarse, size=(h, w), mode="bilinear", align_corners=False)[0]

def _loss_inputs():
    return {"out": _img(2, 5, 5, 7), "aux": _img(2, 5, 3, 4, k=4)}, _labels(2, 10, 14)

def _linear_probe():
    return nn.Sequential(ConvBNReLU(3, 6), nn.Conv2d(6, NUM_CLASSES, 1)).eval()

CASES = {
    "ASPPPooling": lambda: (ASPPPooling(12, 6), (_img(2, 12, 3, 5),)),
    "UpBlock": lambda: (UpBlock(8, 4, 4).eval(), (_img(2, 8, 3, 5), _img(2, 4, 6, 10, k=2))),
    "ASPP": lambda: (ASPP(12, 8).eval(), (_img(2, 12, 3, 5),)),
    "DeepLabV3PlusHead": lambda: (DeepLabV3PlusHead(HeadConfig(align_corners=True)).eval(),
                                  (_feats(), (24, 28))),
    "FPNDecoder": lambda: (FPNDecoder(HeadConfig()).eval(), (_feats(),)),
    "SegmentationModel": lambda: (SegmentationModel(HeadConfig(head="deeplabv3plus")), (_img(2, 3, 20, 28),)),
    "TinyUNet": lambda: (TinyUNet().eval(), (_img(2, 3, 12, 20),), (_img(2, 3, 13, 18),)),
    "weighted_focal_loss": lambda: (weighted_focal_loss, (_img(2, 5, 6, 8), _labels(2, 12, 16)),
                                    (_img(2, 5, 14, 18), _labels(2, 14, 18))),
    "lovasz_softmax_loss": lambda: (lovasz_softmax_loss, (_img(2, 5, 6, 7).softmax(1), _labels(2, 6, 7))),
    "OhemCrossEntropy": lambda: (OhemCrossEntropy(min_kept=20), (_img(2, 5, 5, 7), _labels(2, 10, 14))),
    "CompositeSegLoss": lambda: (CompositeSegLoss({"ce": 1.0, "dice": 0.5, "lovasz": 0.25}), _loss_inputs()),
    "CompositeSegLoss_ce_focal": lambda: (CompositeSegLoss({"ce": 1.0, "focal": 0.5}, warmup_steps=4), _loss_inputs()),
    "clean_binary_masks": lambda: (clean_binary_masks, (_img(2, 10, 12),)),
    "remove_small_regions": lambda: (remove_small_regions, (_blobs(),)),
    "panoptic_inference": lambda: (panoptic_inference, _panoptic_queries()),
    "tta_inference": lambda: (tta_inference, (SegmentationModel().eval(), _img(2, 3, 12, 20), (0.75, 1.25))),
    "slide_inference": lambda: (slide_inference, (_linear_probe(), _img(2, 3, 10, 8)),
                                (_linear_probe(), _img(2, 3, 15, 8))),
}
