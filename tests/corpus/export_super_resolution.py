"""Super-resolution shipped via TorchScript / torch.export: ESRGAN (RRDB) and RCAN bodies, a SwinIR-lite window
transformer, scale-picked pixel-shuffle upsamplers, tiled inference, x8 self-ensemble, colour and range helpers."""
import logging
import math
from collections import defaultdict
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

logger = logging.getLogger("sr_deploy")
logger.addHandler(logging.NullHandler())

DIV2K_RGB_MEAN = (0.4488, 0.4371, 0.4040)
SUPPORTED_SCALES = (2, 3, 4, 8)
WINDOW_SIZE = 4
RANGE_TOLERANCE = 1e-3
STRICT_INPUT_RANGE = True
STATS: Dict[str, int] = defaultdict(int)

# ITU-R BT.601 as in MATLAB's rgb2ycbcr, which every SR benchmark script reproduces
_YCBCR_W = torch.tensor([[65.481, -37.797, 112.0],
                         [128.553, -74.203, -93.786],
                         [24.966, 112.0, -18.214]]) / 255.0
_YCBCR_B = torch.tensor([16.0, 128.0, 128.0]) / 255.0

ARCH_REGISTRY: Dict[str, type] = {}
BLOCK_REGISTRY: Dict[str, Callable[..., nn.Module]] = {}
UPSAMPLERS: Dict[str, Callable[[int, int, int], nn.Module]] = {}

def _register(table: Dict, name: str):
    def deco(obj):
        if name in table:
            raise KeyError(f"{name!r} is already registered")
        table[name] = obj
        return obj
    return deco

register_arch = partial(_register, ARCH_REGISTRY)
register_block = partial(_register, BLOCK_REGISTRY)
register_upsampler = partial(_register, UPSAMPLERS)

@dataclass
class SRConfig:
    arch: str = "srnet"
    block: str = "rrdb"
    scale: int = 2
    num_in_ch: int = 3
    num_out_ch: int = 3
    num_feat: int = 8
    num_block: int = 2
    upsampler: str = "pixelshuffle"
    img_range: float = 1.0
    rgb_mean: Tuple[float, ...] = DIV2K_RGB_MEAN
    block_kwargs: Dict[str, object] = field(default_factory=dict)

    def __post_init__(self):
        if self.scale not in SUPPORTED_SCALES:
            raise ValueError(f"scale {self.scale} not in {SUPPORTED_SCALES}")
        if self.num_in_ch == 1:  # luminance models subtract the grey mean
            self.rgb_mean = (sum(self.rgb_mean) / len(self.rgb_mean),)

PRESETS: Dict[str, SRConfig] = {
    "esrgan_x2": SRConfig(num_block=1),
    "realesrgan_x4": SRConfig(scale=4, num_block=1, upsampler="nearest+conv", block_kwargs={"num_rdb": 2}),
    "rcan_x3": SRConfig(arch="rcan", block="rcab", scale=3, img_range=255.0, block_kwargs={"squeeze_factor": 4}),
    "swinir_lite_x2": SRConfig(arch="swinir", num_block=1, upsampler="pixelshuffledirect",
                               block_kwargs={"input_resolution": (8, 12), "depth": 2, "num_heads": 2}),
    "y_edsr_x2": SRConfig(block="rcab", num_in_ch=1, num_out_ch=1, upsampler="pixelshuffledirect",
                          block_kwargs={"squeeze_factor": 2}),
}

def rgb_to_ycbcr(img: Tensor, y_only: bool = False) -> Tensor:
    """(N, 3, H, W) RGB in [0, 1] -> YCbCr in [0, 1] (studio swing)."""
    if img.dim() == 3:
        img = img.unsqueeze(0)
    weight, bias = _YCBCR_W.to(img), _YCBCR_B.to(img)
    if y_only:
        return (img * weight[:, 0].view(1, 3, 1, 1)).sum(dim=1, keepdim=True) + bias[0]
    return torch.einsum("nchw,cd->ndhw", img, weight) + bias.view(1, 3, 1, 1)

def ycbcr_to_rgb(img: Tensor) -> Tensor:
    inv = torch.linalg.inv(_YCBCR_W).to(img)
    return torch.einsum("nchw,cd->ndhw", img - _YCBCR_B.to(img).view(1, 3, 1, 1), inv)

def bgr_to_rgb(img: Tensor) -> Tensor:
    return img[:, [2, 1, 0]]

def check_input_range(x: Tensor, lo: float = 0.0, hi: float = 1.0, name: str = "input") -> Tensor:
    if not STRICT_INPUT_RANGE:
        return x
    x_min, x_max = torch.aminmax(x)
    if x_min < lo - RANGE_TOLERANCE or x_max > hi + RANGE_TOLERANCE:  # expect: FL000 GB0170; FL201
        logger.warning("%s values in [%.3f, %.3f], expected [%s, %s]; clamping", name, x_min, x_max, lo, hi)  # expect: FL000 GB0007; FL000 GB0291; FL204
        x = x.clamp(lo, hi)
    return x

def pad_to_multiple(x: Tensor, multiple: int = WINDOW_SIZE, mode: str = "reflect") -> Tuple[Tensor, Tuple[int, int]]:
    """Pads bottom/right so H and W are multiples of `multiple` (window attention, pixel-unshuffle)."""
    h, w = x.shape[-2:]
    pad_h, pad_w = (multiple - h % multiple) % multiple, (multiple - w % multiple) % multiple
    if pad_h == 0 and pad_w == 0:  # expect: FL203; FL301
        return x, (0, 0)
    if mode == "reflect" and (pad_h >= h or pad_w >= w):  # expect: FL203
        mode = "replicate"  # reflect needs pad < dim
    return F.pad(x, (0, pad_w, 0, pad_h), mode=mode), (pad_h, pad_w)

def default_conv(in_ch: int, out_ch: int, kernel_size: int = 3, bias: bool = True) -> nn.Conv2d:
    return nn.Conv2d(in_ch, out_ch, kernel_size, padding=kernel_size // 2, bias=bias)

class MeanShift(nn.Conv2d):
    """EDSR/RCAN MeanShift: a frozen 1x1 conv that subtracts (sign=-1) or adds back the dataset mean."""
    def __init__(self, rgb_range: float, rgb_mean=DIV2K_RGB_MEAN, rgb_std=(1.0, 1.0, 1.0), sign: int = -1):
        super().__init__(3, 3, kernel_size=1)
        std = torch.tensor(rgb_std)
        self.weight.data = torch.eye(3).view(3, 3, 1, 1) / std.view(3, 1, 1, 1)
        self.bias.data = sign * rgb_range * torch.tensor(rgb_mean) / std
        self.requires_grad_(False)

class ResidualDenseBlock(nn.Module):
    def __init__(self, num_feat: int = 8, num_grow_ch: int = 4):
        super().__init__()
        self.convs = nn.ModuleList(default_conv(num_feat + i * num_grow_ch, num_grow_ch) for i in range(4))
        self.conv_fuse = default_conv(num_feat + 4 * num_grow_ch, num_feat)
        self.lrelu = nn.LeakyReLU(negative_slope=0.2, inplace=True)
    def forward(self, x: Tensor) -> Tensor:
        feats = [x]
        for conv in self.convs:
            feats.append(self.lrelu(conv(torch.cat(feats, dim=1))))
        return self.conv_fuse(torch.cat(feats, dim=1)) * 0.2 + x

@register_block("rrdb")
class RRDB(nn.Module):
    def __init__(self, num_feat: int, num_grow_ch: int = 4, num_rdb: int = 3):
        super().__init__()
        self.rdbs = nn.Sequential(*(ResidualDenseBlock(num_feat, num_grow_ch) for _ in range(num_rdb)))
    def forward(self, x: Tensor) -> Tensor:
        return self.rdbs(x) * 0.2 + x

class ChannelAttention(nn.Module):
    def __init__(self, num_feat: int, squeeze_factor: int = 4):
        super().__init__()
        hidden = max(num_feat // squeeze_factor, 2)
        self.attention = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(num_feat, hidden, 1), nn.ReLU(inplace=True),
                                       nn.Conv2d(hidden, num_feat, 1), nn.Sigmoid())
    def forward(self, x: Tensor) -> Tensor:
        return x * self.attention(x)

@register_block("rcab")
class RCAB(nn.Module):
    def __init__(self, num_feat: int, squeeze_factor: int = 4, res_scale: float = 1.0):
        super().__init__()
        self.res_scale = res_scale
        self.body = nn.Sequential(default_conv(num_feat, num_feat), nn.ReLU(inplace=True),
                                  default_conv(num_feat, num_feat), ChannelAttention(num_feat, squeeze_factor))
    def forward(self, x: Tensor) -> Tensor:
        return self.body(x) * self.res_scale + x

class Upsample(nn.Sequential):
    """log2(scale) conv + PixelShuffle(2) stages for powers of two, one PixelShuffle(3) stage for x3."""
    def __init__(self, scale: int, num_feat: int):
        layers: List[nn.Module] = []
        if scale & (scale - 1) == 0:
            for _ in range(int(math.log2(scale))):
                layers += [default_conv(num_feat, 4 * num_feat), nn.PixelShuffle(2)]
        elif scale == 3:
            layers += [default_conv(num_feat, 9 * num_feat), nn.PixelShuffle(3)]
        else:
            raise ValueError(f"scale {scale} is not supported. Supported scales: 2^n and 3.")
        super().__init__(*layers)

class UpsampleOneStep(nn.Sequential):
    """SwinIR's lightweight head: one conv to scale^2 * out channels and a single pixel shuffle."""
    def __init__(self, scale: int, num_feat: int, num_out_ch: int):
        super().__init__(default_conv(num_feat, scale ** 2 * num_out_ch), nn.PixelShuffle(scale))
        self.scale = scale

class NearestConvUpsample(nn.Module):
    """Real-ESRGAN head: nearest x2 + conv per octave, which avoids pixel-shuffle checkerboards."""
    def __init__(self, scale: int, num_feat: int, num_out_ch: int):
        super().__init__()
        if scale & (scale - 1):
            raise ValueError("nearest+conv only supports power-of-two scales")
        self.ups = nn.ModuleList(default_conv(num_feat, num_feat) for _ in range(int(math.log2(scale))))
        self.conv_hr, self.conv_last = default_conv(num_feat, num_feat), default_conv(num_feat, num_out_ch)
        self.lrelu = nn.LeakyReLU(0.2, inplace=True)
    def forward(self, x: Tensor) -> Tensor:
        for conv in self.ups:
            x = self.lrelu(conv(F.interpolate(x, scale_factor=2, mode="nearest")))
        return self.conv_last(self.lrelu(self.conv_hr(x)))

register_upsampler("pixelshuffle")(lambda s, nf, out: nn.Sequential(Upsample(s, nf), default_conv(nf, out)))
register_upsampler("pixelshuffledirect")(UpsampleOneStep)
register_upsampler("nearest+conv")(NearestConvUpsample)

@register_arch("srnet")
class SRNet(nn.Module):
    """Conv head -> registered residual blocks -> conv -> scale-specific upsampler (EDSR/ESRGAN layout)."""
    def __init__(self, cfg: SRConfig):
        super().__init__()
        self.cfg = cfg
        self.register_buffer("mean", torch.tensor(cfg.rgb_mean).view(1, -1, 1, 1))
        self.conv_first = default_conv(cfg.num_in_ch, cfg.num_feat)
        self.body = self.build_body(cfg)
        self.conv_body = default_conv(cfg.num_feat, cfg.num_feat)
        self.upsample = UPSAMPLERS[cfg.upsampler](cfg.scale, cfg.num_feat, cfg.num_out_ch)
    def build_body(self, cfg: SRConfig) -> nn.Module:
        block = partial(BLOCK_REGISTRY[cfg.block], cfg.num_feat, **cfg.block_kwargs)
        return nn.Sequential(*(block() for _ in range(cfg.num_block)))
    @property
    def scale(self) -> int:
        return self.cfg.scale
    def normalize(self, x: Tensor) -> Tensor:
        return (x - self.mean) * self.cfg.img_range
    def denormalize(self, x: Tensor) -> Tensor:
        return x / self.cfg.img_range + self.mean
    def forward_features(self, x: Tensor) -> Tensor:
        feat = self.conv_first(x)
        return feat + self.conv_body(self.body(feat))
    def forward(self, x: Tensor) -> Tensor:
        return self.denormalize(self.upsample(self.forward_features(self.normalize(x))))

@register_arch("rcan")
class RCANLite(SRNet):
    def __init__(self, cfg: SRConfig):
        super().__init__(cfg)
        self.sub_mean = MeanShift(cfg.img_range, cfg.rgb_mean, sign=-1)
        self.add_mean = MeanShift(cfg.img_range, cfg.rgb_mean, sign=1)
    def normalize(self, x: Tensor) -> Tensor:
        return self.sub_mean(x * self.cfg.img_range)
    def denormalize(self, x: Tensor) -> Tensor:
        return self.add_mean(x) / self.cfg.img_range

def window_partition(x: Tensor, window_size: int) -> Tensor:
    b, h, w, c = x.shape
    x = x.view(b, h // window_size, window_size, w // window_size, window_size, c)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window_size, window_size, c)

def window_reverse(windows: Tensor, window_size: int, h: int, w: int) -> Tensor:
    b = int(windows.shape[0] / (h * w / window_size / window_size))  # expect: FL203
    x = windows.view(b, h // window_size, w // window_size, window_size, window_size, -1)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(b, h, w, -1)

class WindowAttention(nn.Module):
    def __init__(self, dim: int, window_size: int, num_heads: int, qkv_bias: bool = True):
        super().__init__()
        self.num_heads, self.scale = num_heads, (dim // num_heads) ** -0.5
        self.relative_position_bias_table = nn.Parameter(torch.zeros((2 * window_size - 1) ** 2, num_heads))
        ticks = torch.arange(window_size)
        coords = torch.stack(torch.meshgrid(ticks, ticks, indexing="ij")).flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (window_size - 1)
        self.register_buffer("relative_position_index", rel[..., 0] * (2 * window_size - 1) + rel[..., 1])
        self.qkv, self.proj = nn.Linear(dim, dim * 3, bias=qkv_bias), nn.Linear(dim, dim)
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)
    def forward(self, x: Tensor, mask: Optional[Tensor] = None) -> Tensor:
        b_, n, c = x.shape
        qkv = self.qkv(x).reshape(b_, n, 3, self.num_heads, c // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q * self.scale) @ k.transpose(-2, -1)
        bias = self.relative_position_bias_table[self.relative_position_index.view(-1)].view(n, n, -1)
        attn = attn + bias.permute(2, 0, 1).unsqueeze(0)
        if mask is not None:
            nw = mask.shape[0]
            attn = attn.view(b_ // nw, nw, self.num_heads, n, n) + mask.unsqueeze(1).unsqueeze(0)
            attn = attn.view(-1, self.num_heads, n, n)
        return self.proj((attn.softmax(dim=-1) @ v).transpose(1, 2).reshape(b_, n, c))

class SwinBlock(nn.Module):
    def __init__(self, dim: int, input_resolution: Sequence[int], num_heads: int,
                 window_size: int = WINDOW_SIZE, shift_size: int = 0, mlp_ratio: float = 2.0):
        super().__init__()
        self.input_resolution, self.window_size, self.shift_size = tuple(input_resolution), window_size, shift_size
        if min(self.input_resolution) <= self.window_size:
            self.shift_size, self.window_size = 0, min(self.input_resolution)
        assert 0 <= self.shift_size < self.window_size, "shift_size must be in [0, window_size)"
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, self.window_size, num_heads)
        self.mlp = nn.Sequential(nn.Linear(dim, int(dim * mlp_ratio)), nn.GELU(), nn.Linear(int(dim * mlp_ratio), dim))
        self.register_buffer("attn_mask", self.calculate_mask(self.input_resolution) if self.shift_size else None)
    def calculate_mask(self, x_size: Tuple[int, int]) -> Tensor:
        h, w = x_size
        img_mask = torch.zeros((1, h, w, 1))
        spans = (slice(0, -self.window_size), slice(-self.window_size, -self.shift_size),
                 slice(-self.shift_size, None))
        cnt = 0
        for hs in spans:
            for ws in spans:
                img_mask[:, hs, ws, :] = cnt
                cnt += 1
        mask_windows = window_partition(img_mask, self.window_size).view(-1, self.window_size * self.window_size)
        attn_mask = mask_windows.unsqueeze(1) - mask_windows.unsqueeze(2)
        return attn_mask.masked_fill(attn_mask != 0, -100.0).masked_fill(attn_mask == 0, 0.0)
    def forward(self, x: Tensor, x_size: Tuple[int, int]) -> Tensor:
        h, w = x_size
        b, _, c = x.shape
        shortcut = x
        x = self.norm1(x).view(b, h, w, c)
        if self.shift_size > 0:
            x = torch.roll(x, shifts=(-self.shift_size, -self.shift_size), dims=(1, 2))
        windows = window_partition(x, self.window_size).view(-1, self.window_size * self.window_size, c)
        # masks are precomputed for the training patch size; test images of other sizes rebuild them
        if self.input_resolution == x_size:  # expect: FL203; FL301
            attn_windows = self.attn(windows, mask=self.attn_mask)
        else:
            mask = self.calculate_mask(x_size).to(x.device) if self.shift_size else None
            attn_windows = self.attn(windows, mask=mask)
        x = window_reverse(attn_windows.view(-1, self.window_size, self.window_size, c), self.window_size, h, w)
        if self.shift_size > 0:
            x = torch.roll(x, shifts=(self.shift_size, self.shift_size), dims=(1, 2))
        x = shortcut + x.reshape(b, h * w, c)
        return x + self.mlp(self.norm2(x))

class RSTB(nn.Module):
    """Residual Swin Transformer Block: alternating (shifted) window blocks, a conv, a long skip."""
    def __init__(self, dim: int, input_resolution: Sequence[int], depth: int, num_heads: int,
                 window_size: int = WINDOW_SIZE):
        super().__init__()
        self.blocks = nn.ModuleList(
            SwinBlock(dim, input_resolution, num_heads, window_size, shift_size=0 if i % 2 == 0 else window_size // 2)
            for i in range(depth))
        self.conv = default_conv(dim, dim)
    def forward(self, x: Tensor, x_size: Tuple[int, int]) -> Tensor:
        res = x
        for blk in self.blocks:
            res = blk(res, x_size)
        b, _, c = res.shape
        res = self.conv(res.transpose(1, 2).reshape(b, c, *x_size))
        return res.flatten(2).transpose(1, 2) + x

@register_arch("swinir")
class SwinIRLite(SRNet):
    def build_body(self, cfg: SRConfig) -> nn.Module:
        self.window_size = cfg.block_kwargs.get("window_size", WINDOW_SIZE)
        self.norm = nn.LayerNorm(cfg.num_feat)
        return nn.ModuleList(RSTB(cfg.num_feat, **cfg.block_kwargs) for _ in range(cfg.num_block))
    def forward_features(self, x: Tensor) -> Tensor:
        x_size = (x.shape[2], x.shape[3])
        feat = self.conv_first(x)
        tokens = feat.flatten(2).transpose(1, 2)
        for layer in self.body:
            tokens = layer(tokens, x_size)
        b, _, c = tokens.shape
        return feat + self.conv_body(self.norm(tokens).transpose(1, 2).reshape(b, c, *x_size))
    def forward(self, x: Tensor) -> Tensor:
        h, w = x.shape[-2:]
        x, _ = pad_to_multiple(x, self.window_size)
        out = super().forward(x)
        return out[..., : h * self.scale, : w * self.scale]

def build_model(name_or_cfg: Union[str, SRConfig], **overrides) -> nn.Module:
    cfg = PRESETS[name_or_cfg] if isinstance(name_or_cfg, str) else name_or_cfg
    cfg = replace(cfg, **overrides) if overrides else cfg
    try:
        arch = ARCH_REGISTRY[cfg.arch]
    except KeyError:
        raise KeyError(f"unknown arch {cfg.arch!r}; known: {sorted(ARCH_REGISTRY)}") from None
    logger.info("building %s x%d (%s blocks, %s upsampler)", cfg.arch, cfg.scale, cfg.block, cfg.upsampler)
    return arch(cfg).eval()

def dihedral(x: Tensor, k: int, flip: bool) -> Tensor:
    x = torch.rot90(x, k, dims=(-2, -1))
    return x.flip(-1) if flip else x

def inverse_dihedral(x: Tensor, k: int, flip: bool) -> Tensor:
    return torch.rot90(x.flip(-1) if flip else x, -k, dims=(-2, -1))

DIHEDRAL_GROUP: List[Tuple[int, bool]] = [(k, flip) for flip in (False, True) for k in range(4)]

class SelfEnsemble(nn.Module):
    """Geometric self-ensemble (EDSR '+' results): predict on each flip/rotation, undo, reduce."""
    def __init__(self, model: nn.Module, modes: int = 8, reduction: str = "mean"):
        super().__init__()
        assert modes in (1, 2, 4, 8), f"unsupported ensemble size {modes}"
        self.model, self.modes = model, modes
        self.reduce = {"mean": partial(torch.mean, dim=0), "median": lambda t: t.median(dim=0).values}[reduction]
    def forward(self, x: Tensor) -> Tensor:
        outs = [inverse_dihedral(self.model(dihedral(x, k, f)), k, f) for k, f in DIHEDRAL_GROUP[: self.modes]]
        return self.reduce(torch.stack(outs))

def tile_starts(length: int, tile: int, overlap: int) -> List[int]:
    if length <= tile:  # expect: FL203; FL301
        return [0]
    starts = list(range(0, length - tile, tile - overlap))
    return starts + [length - tile]

def seam_ramp(length: int, overlap: int, head: bool, tail: bool) -> Tensor:
    """1-D blending weights: linear ramps over the overlap on the sides shared with a neighbour tile."""
    ramp = torch.ones(length)
    if overlap > 0:
        edge = torch.from_numpy(np.linspace(0.0, 1.0, overlap + 2)[1:-1]).float()  # expect: FL203
        if head:
            ramp[:overlap] = edge
        if tail:
            ramp[-overlap:] = edge.flip(0)
    return ramp

class TiledSR(nn.Module):
    """Real-ESRGAN style tiled inference: bounded memory on big inputs, overlapping tiles blended."""
    def __init__(self, model: SRNet, tile: int = 16, overlap: int = 4):
        super().__init__()
        assert 0 <= overlap < tile, "overlap must be smaller than the tile"
        self.model, self.tile, self.overlap = model, tile, overlap
    def forward(self, img: Tensor) -> Tensor:
        b, _, h, w = img.shape
        if max(h, w) <= self.tile:  # expect: FL203
            return self.model(img)
        s = self.model.scale
        out = img.new_zeros(b, self.model.cfg.num_out_ch, h * s, w * s)
        norm = img.new_zeros(1, 1, h * s, w * s)
        ys, xs = tile_starts(h, self.tile, self.overlap), tile_starts(w, self.tile, self.overlap)
        th, tw = min(self.tile, h), min(self.tile, w)  # expect: FL203
        for i, y in enumerate(ys):
            wy = seam_ramp(th * s, self.overlap * s, head=i > 0, tail=i < len(ys) - 1)
            for j, x in enumerate(xs):
                wx = seam_ramp(tw * s, self.overlap * s, head=j > 0, tail=j < len(xs) - 1)
                weight = (wy[:, None] * wx[None, :]).to(img)
                sr = self.model(img[..., y:y + th, x:x + tw])
                out[..., y * s:(y + th) * s, x * s:(x + tw) * s] += sr * weight
                norm[..., y * s:(y + th) * s, x * s:(x + tw) * s] += weight
        logger.debug("blended %d tiles of %dx%d into %dx%d", len(ys) * len(xs), th, tw, h * s, w * s)  # expect: FL000 GB0291; FL204
        return out / norm

class DeployWrapper(nn.Module):
    """What ships: uint8/float RGB or BGR in, range-checked, optional Y-only SR, uint8 or float out."""
    def __init__(self, model: nn.Module, input_order: str = "rgb", output: str = "uint8", y_only: bool = False):
        super().__init__()
        if input_order not in ("rgb", "bgr"):
            raise ValueError(f"input_order must be rgb or bgr, got {input_order!r}")
        self.model, self.input_order, self.output, self.y_only = model, input_order, output, y_only
    @property
    def scale(self) -> int:
        return getattr(self.model, "scale", 1)
    def preprocess(self, img: Tensor) -> Tensor:
        if img.dtype == torch.uint8:
            img = img.float() / 255.0
        img = check_input_range(img)
        return bgr_to_rgb(img) if self.input_order == "bgr" else img
    def postprocess(self, out: Tensor) -> Tensor:
        out = out.clamp(0.0, 1.0)
        if self.input_order == "bgr":
            out = bgr_to_rgb(out)
        return (out * 255.0).round().to(torch.uint8) if self.output == "uint8" else out
    def forward(self, img: Tensor) -> Tensor:
        img = self.preprocess(img)
        if not self.y_only:
            return self.postprocess(self.model(img))
        ycc = rgb_to_ycbcr(img)
        y = self.model(ycc[:, :1])
        cbcr = F.interpolate(ycc[:, 1:], scale_factor=self.scale, mode="bicubic", align_corners=False)
        return self.postprocess(ycbcr_to_rgb(torch.cat([y, cbcr], dim=1)))

@torch.compile
def prepare_input(img: Tensor, mean: Tensor, multiple: int = WINDOW_SIZE, img_range: float = 1.0):
    if img.dtype == torch.uint8:
        img = img.float().div_(255.0)
    elif img.max() > 1.5:  # 0-255 floats straight from cv2.imread(...).astype(np.float32)  # expect: FL000 GB0170
        img = img / 255.0
    img = (img - mean.view(1, -1, 1, 1)) * img_range
    return pad_to_multiple(img, multiple)

@torch.compile
def upscale_batch(model: nn.Module, batch: Tensor, clamp: bool = True) -> Tensor:
    STATS["images"] += batch.shape[0]  # expect: FL302
    out = model(batch)
    return out.clamp_(0.0, 1.0) if clamp else out

@torch.compile
def upscale_to(models: Dict[int, nn.Module], img: Tensor, outscale: float) -> Tensor:
    """Real-ESRGAN --outscale: run the smallest network scale >= outscale, then resize to the target."""
    net_scale = min((s for s in models if s >= outscale), default=max(models))  # expect: FL000 GB0193
    out = models[net_scale](img)
    if outscale != net_scale:
        h, w = img.shape[-2:]
        out = F.interpolate(out, size=(int(h * outscale), int(w * outscale)), mode="bicubic",
                            align_corners=False, antialias=True)
    return out.clamp(0.0, 1.0)

@torch.compile
def psnr_y(sr: Tensor, hr: Tensor, crop_border: int = 0, test_y_channel: bool = True) -> List[float]:
    assert sr.shape == hr.shape, f"Image shapes are different: {sr.shape}, {hr.shape}."
    if crop_border:
        sr, hr = (t[..., crop_border:-crop_border, crop_border:-crop_border] for t in (sr, hr))
    if test_y_channel:
        sr, hr = rgb_to_ycbcr(sr, y_only=True), rgb_to_ycbcr(hr, y_only=True)
    mse = (sr - hr).pow(2).mean(dim=(1, 2, 3))
    return [float("inf") if m == 0 else 10.0 * math.log10(1.0 / m) for m in mse.tolist()]  # expect: FL000 GB0109

def export_torchscript(out_dir: str, scale: int = 2, size: int = 16):
    lr = torch.rand(1, 3, size, size)
    torch.jit.trace(SRNet(replace(PRESETS["esrgan_x2"], scale=scale)).eval(), (lr,)).save(f"{out_dir}/esrgan.pt")
    torch.jit.trace(SwinIRLite(PRESETS["swinir_lite_x2"]).eval(), (lr[..., :14, :14],)).save(f"{out_dir}/swinir.pt")
    wrapped = torch.jit.trace(DeployWrapper(build_model("y_edsr_x2"), y_only=True), ((lr * 255).to(torch.uint8),))
    wrapped.save(f"{out_dir}/y_edsr_deploy.pt")
    torch.jit.trace(TiledSR(SRNet(PRESETS["esrgan_x2"]).eval(), tile=size // 2), (lr,)).save(f"{out_dir}/tiled.pt")
    torch.jit.trace(rgb_to_ycbcr, (lr,)).save(f"{out_dir}/rgb2ycbcr.pt")

def export_programs(out_dir: str, size: int = 16) -> Dict[str, object]:
    lr = torch.rand(1, 3, size, size)
    programs = {
        "rcan_x3": torch.export.export(RCANLite(PRESETS["rcan_x3"]).eval(), (lr,)),
        "ensemble": torch.export.export(SelfEnsemble(SRNet(PRESETS["esrgan_x2"]).eval()), (lr,)),
        "deploy": torch.export.export(DeployWrapper(SRNet(PRESETS["esrgan_x2"]).eval(), output="float"), (lr,)),
        "pad": torch.export.export(pad_to_multiple, (lr[..., :14, :13],)),
    }
    for name, program in programs.items():
        torch.export.save(program, f"{out_dir}/{name}.pt2")
    return programs

def _rand(*shape: int, k: int = 0) -> Tensor:
    return torch.rand(*shape, generator=torch.Generator().manual_seed(k))

def _randn(*shape: int, k: int = 0) -> Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(k))

def _u8(*shape: int, k: int = 0) -> Tensor:
    return torch.randint(0, 256, shape, dtype=torch.uint8, generator=torch.Generator().manual_seed(k))

_esrgan = partial(build_model, "esrgan_x2")
_tiny = partial(build_model, "esrgan_x2", block="rcab", block_kwargs={"squeeze_factor": 2})

CASES = {
    "SRNet": lambda: (_esrgan(), (_rand(2, 3, 6, 10),)),
    "RCANLite": lambda: (build_model("rcan_x3"), (_rand(2, 3, 6, 10),)),
    "SwinIRLite": lambda: (build_model("swinir_lite_x2"), (_rand(2, 3, 8, 12),), (_rand(2, 3, 16, 12),)),
    "SelfEnsemble": lambda: (SelfEnsemble(build_model("realesrgan_x4"), modes=4), (_rand(2, 3, 5, 7),)),
    "DeployWrapper": lambda: (DeployWrapper(build_model("y_edsr_x2"), input_order="bgr", y_only=True),
                              (_randn(2, 3, 6, 10, k=2) * 0.6 + 0.5,)),
    "TiledSR": lambda: (TiledSR(_tiny(), tile=8, overlap=2), (_rand(2, 3, 14, 6),), (_rand(2, 3, 14, 10),)),
    "prepare_input": lambda: (prepare_input, (_rand(2, 3, 12, 20) * 255, torch.tensor(DIV2K_RGB_MEAN)),
                              (_rand(2, 3, 14, 20) * 255, torch.tensor(DIV2K_RGB_MEAN))),
    "upscale_batch": lambda: (upscale_batch, (_tiny(), _rand(2, 3, 6, 10))),
    "upscale_to": lambda: (upscale_to, ({2: _tiny(), 4: build_model("realesrgan_x4")}, _rand(2, 3, 6, 10), 3.0)),
    "psnr_y": lambda: (psnr_y, (_rand(2, 3, 12, 20), _rand(2, 3, 12, 20, k=1), 2)),
}

TRACED = {
    "SRNet": lambda: (_esrgan(), (_rand(1, 3, 8, 8),)),
    "SwinIRLite": lambda: (build_model("swinir_lite_x2"), (_rand(1, 3, 7, 10),)),
    "DeployWrapper_y": lambda: (DeployWrapper(build_model("y_edsr_x2"), y_only=True), (_u8(1, 3, 8, 8),)),
    "DeployWrapper": lambda: (DeployWrapper(_esrgan(), output="float"), (_randn(1, 3, 8, 8, k=3),)),
    "TiledSR": lambda: (TiledSR(_tiny(), tile=8, overlap=2), (_rand(1, 3, 10, 14),)),
    "RCANLite": lambda: (build_model("rcan_x3"), (_rand(1, 3, 6, 6),)),
    "SelfEnsemble": lambda: (SelfEnsemble(_esrgan()), (_rand(1, 3, 6, 8),)),
    "rgb_to_ycbcr": lambda: (rgb_to_ycbcr, (_rand(1, 3, 8, 8),)),
    "pad_to_multiple": lambda: (pad_to_multiple, (_rand(1, 3, 7, 10),)),
}
