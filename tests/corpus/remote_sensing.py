"""Satellite imagery code in the style of torchgeo / Kaggle land-cover kernels / change-detection
repos: Sentinel-2 band normalisation and spectral indices, geo-metadata dicts, scene tiling and
stitching, cloud masks, a small U-Net, a siamese change detector, band statistics, augmentation."""
import functools
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

log = logging.getLogger("rs")
log.addHandler(logging.NullHandler())

# Sentinel-2 L2A subset used by the models here: B2, B3, B4, B8, B11, B12
S2_BANDS = ("blue", "green", "red", "nir", "swir1", "swir2")
S2_MEAN = (0.0952, 0.1141, 0.1202, 0.2617, 0.2297, 0.1689)
S2_STD = (0.0412, 0.0437, 0.0566, 0.0771, 0.0769, 0.0703)
REFLECTANCE_SCALE = 10000.0
NODATA = 0.0
CLOUD_BLUE_THRESH = 0.18
NUM_CLASSES = 6
IGNORE_INDEX = 255
DEBUG_TILES = False

# ESA WorldCover codes -> our 6 training classes
WORLDCOVER_REMAP = {10: 0, 20: 1, 30: 1, 40: 2, 50: 3, 60: 4, 80: 5, 90: 5}


def make_meta(h: int, w: int, res: float = 10.0, crs: str = "EPSG:32633",
              bands: Sequence[str] = S2_BANDS, **extra) -> dict:
    """The rasterio-profile-like dict that travels with every scene."""
    meta = {"crs": crs, "transform": (res, 0.0, 399960.0, 0.0, -res, 5000040.0),
            "height": h, "width": w, "bands": list(bands), "nodata": NODATA, "res": res}
    meta.update(extra)
    return meta


def band_index(meta: dict, name: str) -> int:
    bands = meta.get("bands", S2_BANDS)
    try:
        return bands.index(name)
    except ValueError:
        raise KeyError(f"band {name!r} not in {bands}") from None


def select_bands(x: torch.Tensor, meta: dict, names: Sequence[str]) -> List[torch.Tensor]:
    return [x[:, band_index(meta, n)] for n in names]


# --------------------------------------------------------------------------- spectral indices

def normalized_difference(a, b, eps: float = 1e-6):
    return (a - b) / (a + b + eps)


def _evi(nir, red, blue, g=2.5, c1=6.0, c2=7.5, l=1.0):
    return g * (nir - red) / (nir + c1 * red - c2 * blue + l)


SPECTRAL_INDICES: Dict[str, Tuple[Tuple[str, ...], Callable]] = {
    "ndvi": (("nir", "red"), normalized_difference),
    "ndwi": (("green", "nir"), normalized_difference),
    "nbr": (("nir", "swir2"), normalized_difference),
    "ndbi": (("swir1", "nir"), normalized_difference),
    "evi": (("nir", "red", "blue"), _evi),
    "ndmi": (("nir", "swir1"), functools.partial(normalized_difference, eps=1e-4)),
}


def spectral_index(x, meta, name):
    bands, fn = SPECTRAL_INDICES[name.lower()]
    return fn(*select_bands(x, meta, bands))


@torch.compile
def append_indices(x, meta, names=("ndvi", "ndwi", "evi")):
    extra = [spectral_index(x, meta, n).clamp(-1.0, 1.0).unsqueeze(1) for n in names]
    return torch.cat([x, *extra], dim=1)


# --------------------------------------------------------------------------- radiometry / normalisation

def _band_gain(meta: dict, i: int, default: float = 1.0 / REFLECTANCE_SCALE) -> float:
    try:
        return meta["radiometry"]["gain"][i]
    except (KeyError, IndexError):
        return default


@torch.compile
def to_reflectance(dn, meta):
    """DN -> top-of-atmosphere reflectance; nodata pixels become NaN."""
    offset = meta.get("radiometry", {}).get("offset", 0.0)
    bands = [dn[:, i] * _band_gain(meta, i) + offset for i in range(dn.shape[1])]
    refl = torch.stack(bands, dim=1)
    nodata = meta.get("nodata")
    if nodata is not None:
        refl = refl.masked_fill(dn == nodata, float("nan"))
    refl = refl.clamp(max=1.5)
    if torch.isnan(refl).all():  # expect: FL000 GB0170
        raise ValueError(f"scene {meta.get('scene_id')} has no valid pixels")
    return refl


class BandNormalizer(nn.Module):
    """Per-band z-score with the dataset mean/std; invalid pixels are zeroed afterwards."""

    def __init__(self, mean=S2_MEAN, std=S2_STD, scale: float = REFLECTANCE_SCALE):
        super().__init__()
        self.register_buffer("mean", torch.tensor(mean).view(1, -1, 1, 1))
        self.register_buffer("std", torch.tensor(std).view(1, -1, 1, 1))
        self.scale = scale

    def forward(self, x):
        x = x / self.scale
        valid = torch.isfinite(x) & (x > NODATA)
        return torch.where(valid, (x - self.mean) / self.std, torch.zeros_like(x))


def _band_percentiles(band, lo: float = 2.0, hi: float = 98.0) -> Tuple[float, float]:
    q = torch.quantile(band.flatten(), torch.tensor([lo / 100.0, hi / 100.0]))
    return q[0].item(), q[1].item()  # expect: FL000 GB0124


@torch.compile
def percentile_stretch(img, bands=(2, 1, 0)):
    """RGB quick-look: 2-98% stretch per band (what every notebook does before imshow)."""
    out = []
    for b in bands:
        lo, hi = _band_percentiles(img[b])
        if hi - lo < 1e-6:
            out.append(torch.zeros_like(img[b]))
            continue
        out.append(((img[b] - lo) / (hi - lo)).clamp(0.0, 1.0))
    return (torch.stack(out, dim=-1) * 255).to(torch.uint8)


# --------------------------------------------------------------------------- band statistics

def _masked_moments(x, valid, dims=(0, 2, 3)):
    n = valid.sum(dim=dims).clamp_min(1)
    xs = torch.where(valid, x, torch.zeros_like(x))
    mean = xs.sum(dim=dims) / n
    var = (torch.where(valid, x - mean.view(1, -1, 1, 1), torch.zeros_like(x)) ** 2).sum(dim=dims) / n
    return mean, var.sqrt(), n


@torch.compile
def band_statistics(x, meta):
    valid = torch.isfinite(x) & (x != meta["nodata"])
    mean, std, n = _masked_moments(x, valid)
    stats = {}
    for i, name in enumerate(meta["bands"]):
        # plain floats so the dict can go straight into the dataset's stats.json
        stats[name] = {"mean": round(float(mean[i]), 6), "std": round(float(std[i]), 6),  # expect: FL000 GB0124
                       "valid_frac": int(n[i]) / valid[:, i].numel()}
    return stats


class RunningBandStats(nn.Module):
    """Accumulates dataset-wide per-band mean/var (Chan et al. parallel update) while normalising."""

    def __init__(self, num_bands: int = len(S2_BANDS)):
        super().__init__()
        self.register_buffer("mean", torch.zeros(num_bands))
        self.register_buffer("var", torch.ones(num_bands))
        self.register_buffer("count", torch.zeros(()))
        self.num_updates = 0

    @property
    def std(self):
        return self.var.clamp_min(1e-12).sqrt()

    def forward(self, x):
        valid = torch.isfinite(x)
        b_mean, b_std, b_n = _masked_moments(x, valid)
        if self.training:
            n_a, n_b = self.count, b_n.float().mean()
            delta = b_mean - self.mean
            total = n_a + n_b
            self.mean.add_(delta * n_b / total)
            self.var.copy_((self.var * n_a + b_std ** 2 * n_b + delta ** 2 * n_a * n_b / total) / total)
            self.count.add_(n_b)
            self.num_updates += 1  # expect: FL302
        return ((x - self.mean.view(1, -1, 1, 1)) / self.std.view(1, -1, 1, 1)).nan_to_num(0.0)


# --------------------------------------------------------------------------- tiling / stitching

@dataclass
class TileConfig:
    tile: int = 8
    overlap: int = 2
    blend: str = "linear"

    @property
    def stride(self) -> int:
        return self.tile - self.overlap


def timed(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()  # expect: FL000 GB0007
        out = fn(*args, **kwargs)
        if DEBUG_TILES:
            log.debug("%s took %.2f ms", fn.__name__, 1e3 * (time.perf_counter() - t0))
        return out
    return wrapper


def _tile_starts(length: int, tile: int, stride: int) -> List[int]:
    if length <= tile:
        return [0]
    starts = list(range(0, length - tile, stride))
    starts.append(length - tile)
    return starts


def _blend_window(cfg: TileConfig) -> torch.Tensor:
    ramp = torch.ones(cfg.tile)
    if cfg.blend == "linear" and cfg.overlap > 0:
        r = torch.linspace(0.0, 1.0, cfg.overlap + 2)[1:-1]
        ramp[: cfg.overlap] = r
        ramp[-cfg.overlap:] = r.flip(0)
    return ramp[:, None] * ramp[None, :]


def extract_tiles(scene, cfg: TileConfig):
    """scene: (C, H, W) -> (N, C, tile, tile) plus the top-left corner of every tile."""
    h, w = scene.shape[-2:]
    coords = [(y, x) for y in _tile_starts(h, cfg.tile, cfg.stride)  # expect: FL301
              for x in _tile_starts(w, cfg.tile, cfg.stride)]
    tiles = [scene[:, y:y + cfg.tile, x:x + cfg.tile] for y, x in coords]
    return torch.stack(tiles), coords


@timed
def stitch_tiles(tiles, coords, out_hw, cfg: TileConfig):
    out = tiles.new_zeros(tiles.shape[1], *out_hw)
    weight = tiles.new_zeros(1, *out_hw)
    win = _blend_window(cfg).to(tiles)
    for t, (y, x) in zip(tiles, coords):
        out[:, y:y + cfg.tile, x:x + cfg.tile] += t * win
        weight[:, y:y + cfg.tile, x:x + cfg.tile] += win
    return out / weight.clamp_min(1e-6)


@torch.compile
def tiled_inference(model, scene, cfg: TileConfig = TileConfig()):
    tiles, coords = extract_tiles(scene, cfg)
    logits = model(tiles)
    return stitch_tiles(logits, coords, scene.shape[-2:], cfg)


@torch.compile
def pad_to_multiple(x, multiple: int = 8, mode: str = "reflect"):
    h, w = x.shape[-2:]
    if h % multiple == 0 and w % multiple == 0:  # expect: FL301
        return x, (0, 0)
    ph, pw = (-h) % multiple, (-w) % multiple
    return F.pad(x, (0, pw, 0, ph), mode=mode), (ph, pw)


# --------------------------------------------------------------------------- cloud masking

def _dilate(mask, k: int = 3):
    return F.max_pool2d(mask.float().unsqueeze(1), k, stride=1, padding=k // 2).squeeze(1) > 0


def cloud_score(x, meta):
    blue, green, red, swir1 = select_bands(x, meta, ("blue", "green", "red", "swir1"))
    brightness = (blue + green + red) / 3
    ndsi = normalized_difference(green, swir1)
    return (blue > CLOUD_BLUE_THRESH) & (brightness > 0.2) & (ndsi < 0.4)


class CloudMasker(nn.Module):
    def __init__(self, dilate: int = 3, max_cloud_frac: float = 0.6, fill: float = 0.0):
        super().__init__()
        self.dilate = dilate
        self.max_cloud_frac = max_cloud_frac
        self.fill = fill

    def forward(self, x, meta):
        mask = cloud_score(x, meta)
        if self.dilate:
            mask = _dilate(mask, self.dilate)
        frac = mask.float().mean()
        if frac > self.max_cloud_frac:  # expect: FL000 GB0170
            log.warning("scene %s is %.0f%% cloudy, dropping", meta.get("scene_id"), 100 * frac)  # expect: FL000 GB0007; FL000 GB0291
            return torch.full_like(x, float("nan")), mask
        return x.masked_fill(mask.unsqueeze(1), self.fill), mask


# --------------------------------------------------------------------------- segmentation head

def conv_bn_act(cin: int, cout: int, k: int = 3, act: Callable = nn.ReLU) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, k, padding=k // 2, bias=False),
                         nn.BatchNorm2d(cout), act(inplace=True))


class DoubleConv(nn.Module):
    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.block = nn.Sequential(conv_bn_act(cin, cout), conv_bn_act(cout, cout))

    def forward(self, x):
        return self.block(x)


class Down(DoubleConv):
    def forward(self, x):
        return super().forward(F.max_pool2d(x, 2))


class Up(nn.Module):
    def __init__(self, cin: int, cskip: int, cout: int, bilinear: bool = True):
        super().__init__()
        self.bilinear = bilinear
        if not bilinear:
            self.up = nn.ConvTranspose2d(cin, cin, 2, stride=2)
        self.conv = DoubleConv(cin + cskip, cout)

    def forward(self, x, skip):
        if self.bilinear:
            x = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
        else:
            x = self.up(x)
        dy, dx = skip.shape[-2] - x.shape[-2], skip.shape[-1] - x.shape[-1]
        if dy or dx:  # expect: FL301
            x = F.pad(x, (dx // 2, dx - dx // 2, dy // 2, dy - dy // 2))
        return self.conv(torch.cat([skip, x], dim=1))


@dataclass
class UNetConfig:
    in_channels: int = len(S2_BANDS)
    num_classes: int = NUM_CLASSES
    widths: Tuple[int, ...] = (8, 12, 16)
    bilinear: bool = True
    extra_indices: Tuple[str, ...] = field(default_factory=tuple)


class SmallUNet(nn.Module):
    def __init__(self, cfg: UNetConfig = UNetConfig()):
        super().__init__()
        self.cfg = cfg
        w = cfg.widths
        self.stem = DoubleConv(cfg.in_channels + len(cfg.extra_indices), w[0])
        self.downs = nn.ModuleList(Down(a, b) for a, b in zip(w[:-1], w[1:]))
        self.ups = nn.ModuleList(Up(b, a, a, cfg.bilinear) for a, b in zip(w[-2::-1], w[:0:-1]))
        self.head = nn.Conv2d(w[0], cfg.num_classes, 1)

    def forward(self, x, meta: Optional[dict] = None):
        if self.cfg.extra_indices:
            x = torch.cat([x] + [spectral_index(x, meta, n).unsqueeze(1)
                                 for n in self.cfg.extra_indices], dim=1)
        feats = [self.stem(x)]
        for down in self.downs:
            feats.append(down(feats[-1]))
        y = feats.pop()
        for up in self.ups:
            y = up(y, feats.pop())
        return self.head(y)


# --------------------------------------------------------------------------- change detection

FUSIONS = {
    "absdiff": lambda a, b: (a - b).abs(),
    "sqdiff": lambda a, b: (a - b) ** 2,
    "cosine": lambda a, b: 1 - F.cosine_similarity(a, b, dim=1, eps=1e-6).unsqueeze(1).expand_as(a),
}


class ChangeDetector(nn.Module):
    def __init__(self, in_ch: int = len(S2_BANDS), widths=(8, 16), fusion: str = "absdiff"):
        super().__init__()
        self.stages = nn.ModuleList([DoubleConv(in_ch, widths[0])] +
                                    [Down(a, b) for a, b in zip(widths[:-1], widths[1:])])
        self.fuse = FUSIONS[fusion]
        self.head = nn.Sequential(conv_bn_act(sum(widths), widths[0]), nn.Conv2d(widths[0], 1, 1))

    def encode(self, x):
        feats = []
        for stage in self.stages:
            x = stage(x)
            feats.append(x)
        return feats

    def forward(self, t1, t2):
        f1, f2 = self.encode(t1), self.encode(t2)
        fused = [self.fuse(a, b) for a, b in zip(f1, f2)]
        size = fused[0].shape[-2:]
        fused = [f if f.shape[-2:] == size else F.interpolate(f, size=size, mode="nearest")
                 for f in fused]
        return self.head(torch.cat(fused, dim=1))


def otsu_threshold(values: np.ndarray, bins: int = 32) -> float:
    hist, edges = np.histogram(values[np.isfinite(values)], bins=bins)  # expect: FL000 GB0036
    centers = (edges[:-1] + edges[1:]) / 2
    w0 = np.cumsum(hist)
    w1 = w0[-1] - w0
    m0 = np.cumsum(hist * centers) / np.maximum(w0, 1)
    m1 = (np.sum(hist * centers) - np.cumsum(hist * centers)) / np.maximum(w1, 1)
    return float(centers[np.argmax(w0 * w1 * (m0 - m1) ** 2)])  # expect: FL000 GB0033


@torch.compile
def change_vector_analysis(t1, t2, meta, bands=("red", "nir", "swir1")):
    d = torch.stack(select_bands(t2, meta, bands), 1) - torch.stack(select_bands(t1, meta, bands), 1)
    magnitude = d.pow(2).sum(dim=1).sqrt()
    direction = torch.atan2(d[:, 1], d[:, 0]) * (180.0 / math.pi)
    thr = otsu_threshold(magnitude.detach().cpu().numpy())
    return magnitude > thr, direction


# --------------------------------------------------------------------------- labels / post-processing

def remap_labels(lbl, table: Dict[int, int] = WORLDCOVER_REMAP, ignore: int = IGNORE_INDEX):
    out = torch.full_like(lbl, ignore)
    for src, dst in table.items():
        out[lbl == src] = dst
    return out


def class_weights(lbl, num_classes: int, ignore: int = IGNORE_INDEX):
    valid = lbl[lbl != ignore]  # expect: FL000 GB0036
    counts = torch.bincount(valid, minlength=num_classes).float()  # expect: FL000 GB0036
    return counts.sum() / (num_classes * counts.clamp_min(1.0))


@torch.compile
def landcover_targets(lbl, num_classes: int = NUM_CLASSES):
    target = remap_labels(lbl)
    return target, class_weights(target, num_classes)


def _apply_nodata(pred, scene, meta):
    invalid = (scene == meta.get("nodata", NODATA)).all(dim=1)
    return pred.masked_fill(invalid, IGNORE_INDEX)


def _majority_filter(pred, scene, meta, k: int = 3):
    onehot = F.one_hot(pred.clamp_max(NUM_CLASSES - 1), NUM_CLASSES).permute(0, 3, 1, 2).float()
    votes = F.avg_pool2d(onehot, k, stride=1, padding=k // 2, count_include_pad=False)
    return torch.where(pred == IGNORE_INDEX, pred, votes.argmax(dim=1))


def _log_class_histogram(pred, scene, meta):
    counts = torch.bincount(pred.flatten(), minlength=NUM_CLASSES)[:NUM_CLASSES]  # expect: FL000 GB0036
    log.info("scene %s class histogram: %s", meta.get("scene_id", "?"), counts.tolist())  # expect: FL000 GB0033; FL000 GB0291
    return pred


POSTPROCESS: List[Callable] = [_majority_filter, _apply_nodata]


@torch.compile
def postprocess(logits, scene, meta, hooks: Optional[List[Callable]] = None):
    pred = logits.argmax(dim=1)
    for hook in (POSTPROCESS if hooks is None else hooks):
        pred = hook(pred, scene, meta)
    return pred


# --------------------------------------------------------------------------- augmentation

AUGMENTATIONS: List[Callable] = []


def register_aug(fn):
    AUGMENTATIONS.append(fn)
    return fn


@register_aug
def _hflip(x, mask, k: int):
    return (x.flip(-1), mask.flip(-1)) if k & 1 else (x, mask)


@register_aug
def _rot90(x, mask, k: int):
    r = (k >> 1) % 4
    return torch.rot90(x, r, dims=(-2, -1)), torch.rot90(mask, r, dims=(-2, -1))


@torch.compile
def dihedral_augment(x, mask, gen: torch.Generator):
    k = int(torch.randint(0, 8, (1,), generator=gen))  # expect: FL000 GB0055; FL000 GB0124
    for aug in AUGMENTATIONS:
        x, mask = aug(x, mask, k)
    return x, mask


# --------------------------------------------------------------------------- cases

def _scene(b: int, h: int, w: int, c: int = len(S2_BANDS), seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(b, c, h, w, generator=g) * 0.4 + 0.02


def _dn(b: int, h: int, w: int, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    dn = torch.randint(1, 6000, (b, len(S2_BANDS), h, w), generator=g).float()
    dn[:, :, 0, :3] = NODATA
    return dn


def _worldcover(h: int, w: int, seed: int = 3):
    g = torch.Generator().manual_seed(seed)
    codes = torch.tensor(list(WORLDCOVER_REMAP) + [95])
    return codes[torch.randint(0, len(codes), (2, h, w), generator=g)]


_META = make_meta(12, 14, scene_id="S2A_T33UVP_20230612",
                  radiometry={"gain": [1e-4] * 6, "offset": -0.1})

CASES = {
    "append_indices": lambda: (append_indices, (_scene(2, 5, 7), _META)),
    "to_reflectance": lambda: (to_reflectance, (_dn(2, 5, 7), _META)),
    "BandNormalizer": lambda: (BandNormalizer(), (_dn(2, 5, 7),)),
    "percentile_stretch": lambda: (percentile_stretch, (_scene(1, 9, 11)[0],)),
    "band_statistics": lambda: (band_statistics, (_scene(2, 5, 7), _META)),
    "RunningBandStats": lambda: (RunningBandStats(), (_scene(2, 5, 7),)),
    "tiled_inference": lambda: (tiled_inference, (SmallUNet(UNetConfig(widths=(4, 6))).eval(), _scene(1, 13, 10)[0]),
                                (SmallUNet(UNetConfig(widths=(4, 6))).eval(), _scene(1, 19, 10)[0])),
    "pad_to_multiple": lambda: (pad_to_multiple, (_scene(2, 12, 14),), (_scene(2, 16, 24),)),
    "CloudMasker": lambda: (CloudMasker(), (_scene(2, 9, 11, seed=2) * 1.3, _META)),
    "SmallUNet": lambda: (SmallUNet().eval(), (_scene(2, 12, 20),), (_scene(2, 14, 20),)),
    "SmallUNet_indices": lambda: (SmallUNet(UNetConfig(widths=(4, 6), bilinear=False,
                                                       extra_indices=("ndvi", "nbr"))),
                                  (_scene(2, 8, 12), _META)),
    "ChangeDetector": lambda: (ChangeDetector(fusion="cosine"), (_scene(2, 6, 10), _scene(2, 6, 10, seed=5))),
    "change_vector_analysis": lambda: (change_vector_analysis, (_scene(2, 5, 7), _scene(2, 5, 7, seed=6), _META)),
    "landcover_targets": lambda: (landcover_targets, (_worldcover(5, 7),)),
    "postprocess": lambda: (postprocess, (_scene(2, 5, 7, c=NUM_CLASSES), _dn(2, 5, 7), _META)),
    "postprocess_logged": lambda: (postprocess, (_scene(2, 5, 7, c=NUM_CLASSES), _dn(2, 5, 7), _META,
                                                 [_log_class_histogram, _apply_nodata])),
    "dihedral_augment": lambda: (dihedral_augment, (_scene(2, 6, 8), torch.zeros(2, 6, 8),
                                                    torch.Generator().manual_seed(7))),
}
