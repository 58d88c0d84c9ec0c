"""GAN training in the style of StyleGAN2-ADA / BigGAN-PyTorch: mapping network with w_avg and the
truncation trick, modulated convolutions with demodulation, noise injection, minibatch-stddev, a
projection discriminator, R1 / path-length regularizers, EMA of the generator weights, ADA
probability updates, non-saturating / hinge / WGAN losses by name and reported statistics."""
import copy
import functools
import logging
import math
import warnings
from dataclasses import dataclass, replace
from typing import Dict, Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("gan")
logger.addHandler(logging.NullHandler())

LRELU_GAIN = math.sqrt(2.0)
LOG_EVERY = 100
WGAN_DRIFT = 1e-3

@dataclass
class MappingConfig:
    z_dim: int = 8
    c_dim: int = 0
    w_dim: int = 8
    num_ws: int = 4
    num_layers: int = 2
    lr_multiplier: float = 0.01
    w_avg_beta: float = 0.995

@dataclass
class TrainConfig:
    loss: str = "ns"
    style_mixing_prob: float = 0.0
    ada_target: float = 0.6
    ada_interval: int = 4
    ada_kimg: float = 500.0


# --------------------------------------------------------------------------- training stats
STAT_NAMES = ("Loss/scores/real", "Loss/scores/fake", "Loss/signs/real", "Loss/D/loss",
              "Loss/G/loss", "Loss/r1_penalty", "Loss/pl_penalty", "Progress/augment")
_counters: Dict[str, torch.Tensor] = {name: torch.zeros(3, dtype=torch.float64) for name in STAT_NAMES}

def report(name, value):
    """Accumulates count / sum / sum of squares of `value` under `name`; returns value."""
    elem = torch.as_tensor(value)
    if elem.numel() == 0:
        return value
    elem = elem.detach().flatten().to(torch.float64)
    moments = torch.stack([torch.ones_like(elem).sum(), elem.sum(), elem.square().sum()])
    _counters[name].add_(moments)
    return value

def log_stats(step: int, stats: dict):
    parts = [f"{k} {v.item():.4f}" if torch.is_tensor(v) else f"{k} {v}" for k, v in stats.items()]  # expect: FL000 GB0092; FL000 GB0124; FL000 GB4347
    logger.info("[step %06d] %s", step, "  ".join(parts))


# --------------------------------------------------------------------------- misc ops
class suppress_tracer_warnings(warnings.catch_warnings):
    def __enter__(self):
        super().__enter__()
        warnings.simplefilter("ignore", category=torch.jit.TracerWarning)  # expect: FL000 GB0007
        return self

def assert_shape(tensor, ref_shape):
    if tensor.ndim != len(ref_shape):
        raise AssertionError(f"Wrong number of dimensions: got {tensor.ndim}, expected {len(ref_shape)}")
    for idx, (size, ref_size) in enumerate(zip(tensor.shape, ref_shape)):
        if ref_size is not None and size != ref_size:
            raise AssertionError(f"Wrong size for dimension {idx}: got {size}, expected {ref_size}")

def normalize_2nd_moment(x, dim=1, eps=1e-8):
    return x * (x.square().mean(dim=dim, keepdim=True) + eps).rsqrt()

ACTIVATIONS = {
    "linear": (lambda x: x, 1.0),
    "lrelu": (functools.partial(F.leaky_relu, negative_slope=0.2), LRELU_GAIN),
}

def bias_act(x, b=None, dim=1, act="linear", gain=None, clamp=None):
    if b is not None:
        shape = [1] * x.ndim
        shape[dim] = -1
        x = x + b.reshape(shape)
    fn, def_gain = ACTIVATIONS[act]
    x = fn(x)
    gain = def_gain if gain is None else float(gain)
    if gain != 1:
        x = x * gain
    if clamp is not None and clamp >= 0:
        x = x.clamp(-clamp, clamp)
    return x

def truncate(ws, w_avg, psi: float, cutoff: Optional[int] = None):
    if cutoff is None:
        return w_avg.lerp(ws, psi)
    ws = ws.clone()
    ws[:, :cutoff] = w_avg.lerp(ws[:, :cutoff], psi)
    return ws

def _conv(x, w, up=1, padding=0, groups=1):
    if up > 1:
        x = F.interpolate(x, scale_factor=up, mode="nearest")
    return F.conv2d(x, w, padding=padding, groups=groups)

def modulated_conv2d(x, weight, styles, noise=None, up=1, padding=0, demodulate=True, fused_modconv=True):
    batch_size = int(x.shape[0])
    out_channels, in_channels, kh, kw = weight.shape
    assert_shape(x, [None, in_channels, None, None])
    assert_shape(styles, [batch_size, in_channels])
    w = dcoefs = None
    if demodulate or fused_modconv:
        w = weight.unsqueeze(0) * styles.reshape(batch_size, 1, -1, 1, 1)
    if demodulate:
        dcoefs = (w.square().sum(dim=[2, 3, 4]) + 1e-8).rsqrt()
    if demodulate and fused_modconv:
        w = w * dcoefs.reshape(batch_size, -1, 1, 1, 1)
    if not fused_modconv:
        x = x * styles.to(x.dtype).reshape(batch_size, -1, 1, 1)
        x = _conv(x, weight.to(x.dtype), up=up, padding=padding)
        if demodulate and noise is not None:
            x = torch.addcmul(noise.to(x.dtype), x, dcoefs.to(x.dtype).reshape(batch_size, -1, 1, 1))
        elif demodulate:
            x = x * dcoefs.to(x.dtype).reshape(batch_size, -1, 1, 1)
        return x
    # grouped convolution: one group per sample
    x = x.reshape(1, -1, *x.shape[2:])
    w = w.reshape(-1, in_channels, kh, kw)
    x = _conv(x, w.to(x.dtype), up=up, padding=padding, groups=batch_size)
    x = x.reshape(batch_size, -1, *x.shape[2:])
    if noise is not None:
        x = x.add_(noise)
    return x


# --------------------------------------------------------------------------- generator
class FullyConnectedLayer(nn.Module):
    def __init__(self, in_features, out_features, bias=True, activation="linear", lr_multiplier=1.0, bias_init=0.0):
        super().__init__()
        self.activation = activation
        self.weight = nn.Parameter(torch.randn([out_features, in_features]) / lr_multiplier)
        self.bias = nn.Parameter(torch.full([out_features], float(bias_init))) if bias else None
        self.weight_gain, self.bias_gain = lr_multiplier / np.sqrt(in_features), lr_multiplier

    def forward(self, x):
        w = self.weight.to(x.dtype) * self.weight_gain
        b = self.bias
        if b is not None:
            b = b.to(x.dtype)
            if self.bias_gain != 1:
                b = b * self.bias_gain
        if self.activation == "linear" and b is not None:
            return torch.addmm(b.unsqueeze(0), x, w.t())
        return bias_act(x.matmul(w.t()), b, act=self.activation)

class MappingNetwork(nn.Module):
    def __init__(self, cfg: MappingConfig):
        super().__init__()
        self.cfg = cfg
        embed_features = cfg.w_dim if cfg.c_dim else 0
        if cfg.c_dim:
            self.embed = FullyConnectedLayer(cfg.c_dim, embed_features)
        features = [cfg.z_dim + embed_features] + [cfg.w_dim] * cfg.num_layers
        for idx, (fin, fout) in enumerate(zip(features[:-1], features[1:])):
            layer = FullyConnectedLayer(fin, fout, activation="lrelu", lr_multiplier=cfg.lr_multiplier)
            setattr(self, f"fc{idx}", layer)
        self.register_buffer("w_avg", torch.zeros([cfg.w_dim]))

    def forward(self, z, c=None, truncation_psi=1.0, truncation_cutoff=None, update_emas=False):
        x = None
        if self.cfg.z_dim > 0:
            assert_shape(z, [None, self.cfg.z_dim])
            x = normalize_2nd_moment(z.to(torch.float32))
        if self.cfg.c_dim > 0:
            assert c is not None, "a conditional mapping network needs labels"
            y = normalize_2nd_moment(self.embed(c.to(torch.float32)))
            x = torch.cat([x, y], dim=1) if x is not None else y
        for idx in range(self.cfg.num_layers):
            x = getattr(self, f"fc{idx}")(x)
        if update_emas and self.training:
            self.w_avg.copy_(x.detach().mean(dim=0).lerp(self.w_avg, self.cfg.w_avg_beta))
        x = x.unsqueeze(1).repeat([1, self.cfg.num_ws, 1])
        if truncation_psi != 1:
            x = truncate(x, self.w_avg, truncation_psi, truncation_cutoff)
        return x

class SynthesisLayer(nn.Module):
    def __init__(self, in_channels, out_channels, w_dim, resolution, kernel_size=3, up=1, use_noise=True,
                 activation="lrelu", demodulate=True, conv_clamp=None):
        super().__init__()
        self.resolution, self.up, self.padding = resolution, up, kernel_size // 2
        self.use_noise, self.activation, self.demodulate, self.conv_clamp = use_noise, activation, demodulate, conv_clamp
        self.act_gain = ACTIVATIONS[activation][1]
        self.affine = FullyConnectedLayer(w_dim, in_channels, bias_init=1)
        self.weight = nn.Parameter(torch.randn([out_channels, in_channels, kernel_size, kernel_size]))
        self.bias = nn.Parameter(torch.zeros([out_channels]))
        self.style_gain = 1.0 if demodulate else 1 / np.sqrt(in_channels * kernel_size ** 2)
        if use_noise:
            self.register_buffer("noise_const", torch.randn([resolution, resolution]))
            self.noise_strength = nn.Parameter(torch.zeros([]))

    def forward(self, x, w, noise_mode="random", fused_modconv=True, gain=1):
        in_resolution = self.resolution // self.up
        assert_shape(x, [None, self.weight.shape[1], in_resolution, in_resolution])
        styles = self.affine(w) * self.style_gain
        noise = None
        if self.use_noise and noise_mode == "random":
            noise = torch.randn([x.shape[0], 1, self.resolution, self.resolution], device=x.device) * self.noise_strength
        if self.use_noise and noise_mode == "const":
            noise = self.noise_const * self.noise_strength
        x = modulated_conv2d(x, self.weight, styles, noise=noise, up=self.up, padding=self.padding,
                             demodulate=self.demodulate, fused_modconv=fused_modconv)
        act_clamp = self.conv_clamp * gain if self.conv_clamp is not None else None
        return bias_act(x, self.bias.to(x.dtype), act=self.activation, gain=self.act_gain * gain, clamp=act_clamp)

class SynthesisBlock(nn.Module):
    def __init__(self, in_channels, out_channels, w_dim, resolution, img_channels=3, use_noise=True, conv_clamp=256):
        super().__init__()
        self.is_first, self.resolution = in_channels == 0, resolution
        self.num_conv, self.num_torgb = 0, 1
        if self.is_first:
            self.const = nn.Parameter(torch.randn([out_channels, resolution, resolution]))
        else:
            self.conv0 = SynthesisLayer(in_channels, out_channels, w_dim, resolution, up=2,
                                        use_noise=use_noise, conv_clamp=conv_clamp)
            self.num_conv += 1
        self.conv1 = SynthesisLayer(out_channels, out_channels, w_dim, resolution, use_noise=use_noise, conv_clamp=conv_clamp)
        self.num_conv += 1
        self.torgb = SynthesisLayer(out_channels, img_channels, w_dim, resolution, kernel_size=1, use_noise=False,
                                    activation="linear", demodulate=False, conv_clamp=conv_clamp)

    def forward(self, x, img, ws, noise_mode="const", fused_modconv=None):
        assert_shape(ws, [None, self.num_conv + self.num_torgb, None])
        w_iter = iter(ws.unbind(dim=1))
        if fused_modconv is None:
            with suppress_tracer_warnings():  # this value will be treated as a constant  # expect: FL000 GB0007
                fused_modconv = (not self.training) and (ws.dtype == torch.float32 or int(x.shape[0]) == 1)
        if self.is_first:
            x = self.const.unsqueeze(0).repeat([ws.shape[0], 1, 1, 1])
        else:
            x = self.conv0(x, next(w_iter), noise_mode=noise_mode, fused_modconv=fused_modconv)
        x = self.conv1(x, next(w_iter), noise_mode=noise_mode, fused_modconv=fused_modconv)
        if img is not None:
            img = F.interpolate(img, scale_factor=2, mode="bilinear", align_corners=False)
        y = self.torgb(x, next(w_iter), fused_modconv=fused_modconv)
        img = img.add_(y) if img is not None else y
        return x, img

class Generator(nn.Module):
    def __init__(self, mapping_cfg: MappingConfig = MappingConfig(), img_resolution=8, img_channels=3,
                 channel_base=64, channel_max=16):
        super().__init__()
        self.block_resolutions = [2 ** i for i in range(2, int(np.log2(img_resolution)) + 1)]
        channels = {res: min(channel_base // res, channel_max) for res in self.block_resolutions}
        self.num_ws = 0
        for res in self.block_resolutions:
            in_channels = channels[res // 2] if res > 4 else 0
            block = SynthesisBlock(in_channels, channels[res], mapping_cfg.w_dim, res, img_channels)
            self.num_ws += block.num_conv
            if res == self.block_resolutions[-1]:
                self.num_ws += block.num_torgb
            setattr(self, f"b{res}", block)
        self.mapping = MappingNetwork(replace(mapping_cfg, num_ws=self.num_ws))

    def synthesis(self, ws, noise_mode="const"):
        block_ws, w_idx = [], 0
        for res in self.block_resolutions:
            block = getattr(self, f"b{res}")
            block_ws.append(ws.narrow(1, w_idx, block.num_conv + block.num_torgb))
            w_idx += block.num_conv
        x = img = None
        for res, cur_ws in zip(self.block_resolutions, block_ws):
            x, img = getattr(self, f"b{res}")(x, img, cur_ws, noise_mode=noise_mode)
        return img

    def forward(self, z, c=None, truncation_psi=1.0, truncation_cutoff=None, noise_mode="const"):
        ws = self.mapping(z, c, truncation_psi=truncation_psi, truncation_cutoff=truncation_cutoff)
        return self.synthesis(ws, noise_mode=noise_mode)


# --------------------------------------------------------------------------- discriminator
class Conv2dLayer(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias=True, activation="linear", down=1, conv_clamp=None):
        super().__init__()
        self.activation, self.down, self.conv_clamp, self.padding = activation, down, conv_clamp, kernel_size // 2
        self.weight_gain = 1 / math.sqrt(in_channels * kernel_size ** 2)
        self.act_gain = ACTIVATIONS[activation][1]
        self.weight = nn.Parameter(torch.randn([out_channels, in_channels, kernel_size, kernel_size]))
        self.bias = nn.Parameter(torch.zeros([out_channels])) if bias else None

    def forward(self, x, gain=1):
        x = F.conv2d(x, (self.weight * self.weight_gain).to(x.dtype), padding=self.padding)
        if self.down > 1:
            x = F.avg_pool2d(x, self.down)
        act_clamp = self.conv_clamp * gain if self.conv_clamp is not None else None
        return bias_act(x, self.bias, act=self.activation, gain=self.act_gain * gain, clamp=act_clamp)

class MinibatchStdLayer(nn.Module):
    def __init__(self, group_size, num_channels=1):
        super().__init__()
        self.group_size, self.num_channels = group_size, num_channels

    def forward(self, x):
        N, C, H, W = x.shape
        with suppress_tracer_warnings():  # as_tensor results are registered as constants  # expect: FL000 GB0007
            G = torch.min(torch.as_tensor(self.group_size), torch.as_tensor(N)) if self.group_size is not None else N
        F_, c = self.num_channels, C // self.num_channels
        y = x.reshape(G, -1, F_, c, H, W)  # [GnFcHW] split minibatch into groups
        y = (y - y.mean(dim=0)).square().mean(dim=0)  # [nFcHW] variance over the group
        y = (y + 1e-8).sqrt().mean(dim=[2, 3, 4])  # [nF] average over channels and pixels
        y = y.reshape(-1, F_, 1, 1).repeat(G, 1, H, W)
        return torch.cat([x, y], dim=1)

class Discriminator(nn.Module):
    def __init__(self, c_dim=0, img_resolution=8, img_channels=3, channel_base=64, channel_max=16,
                 mbstd_group_size=4, cmap_dim=None):
        super().__init__()
        self.block_resolutions = [2 ** i for i in range(int(np.log2(img_resolution)), 2, -1)]
        channels = {res: min(channel_base // res, channel_max) for res in self.block_resolutions + [4]}
        self.from_rgb = Conv2dLayer(img_channels, channels[img_resolution], 1, activation="lrelu")
        self.blocks = nn.ModuleDict()
        for res in self.block_resolutions:
            tmp, out = channels[res], channels[res // 2]
            self.blocks[str(res)] = nn.ModuleList([Conv2dLayer(tmp, tmp, 3, activation="lrelu"),
                                                   Conv2dLayer(tmp, out, 3, activation="lrelu", down=2),
                                                   Conv2dLayer(tmp, out, 1, bias=False, down=2)])
        self.cmap_dim = (cmap_dim or channels[4]) if c_dim else 0
        if c_dim:
            self.mapping = MappingNetwork(MappingConfig(z_dim=0, c_dim=c_dim, w_dim=self.cmap_dim, num_ws=1))
        self.mbstd = MinibatchStdLayer(mbstd_group_size) if mbstd_group_size else None
        self.conv = Conv2dLayer(channels[4] + (1 if self.mbstd is not None else 0), channels[4], 3, activation="lrelu")
        self.fc = FullyConnectedLayer(channels[4] * 16, channels[4], activation="lrelu")
        self.out = FullyConnectedLayer(channels[4], self.cmap_dim or 1)

    def forward(self, img, c=None):
        x = self.from_rgb(img)
        for res in self.block_resolutions:
            conv0, conv1, skip = self.blocks[str(res)]
            y = skip(x, gain=np.sqrt(0.5))
            x = conv1(conv0(x), gain=np.sqrt(0.5))
            x = y.add_(x)
        if self.mbstd is not None:
            x = self.mbstd(x)
        x = self.out(self.fc(self.conv(x).flatten(1)))
        if self.cmap_dim > 0:
            cmap = self.mapping(None, c)[:, 0]
            x = (x * cmap).sum(dim=1, keepdim=True) * (1 / np.sqrt(self.cmap_dim))
        return x


# --------------------------------------------------------------------------- ADA
class AugmentPipe(nn.Module):
    def __init__(self, xflip=1.0, brightness=1.0, brightness_std=0.2):
        super().__init__()
        self.register_buffer("p", torch.zeros([]))  # overall strength, adjusted during training
        self.xflip, self.brightness, self.brightness_std = float(xflip), float(brightness), brightness_std
        self.ops = [("xflip", self._xflip), ("brightness", self._brightness)]

    def _gate(self, strength, x):
        return torch.rand([x.shape[0], 1, 1, 1], device=x.device) < strength * self.p

    def _xflip(self, x, strength):
        return torch.where(self._gate(strength, x), x.flip(3), x)

    def _brightness(self, x, strength):
        b = torch.randn([x.shape[0], 1, 1, 1], device=x.device) * self.brightness_std
        return x + torch.where(self._gate(strength, x), b, torch.zeros_like(b))

    def forward(self, images):
        assert isinstance(images, torch.Tensor) and images.ndim == 4
        for name, op in self.ops:
            if getattr(self, name) > 0:
                images = op(images, getattr(self, name))
        return images

@torch.compile
def update_ada_p(augment_pipe: AugmentPipe, real_logits, cfg: TrainConfig, batch_size: int):
    signs = real_logits.sign()
    report("Loss/signs/real", signs)
    adjust = np.sign(signs.mean().item() - cfg.ada_target) * (batch_size * cfg.ada_interval) / (cfg.ada_kimg * 1000)  # expect: FL000 GB0124
    augment_pipe.p.copy_((augment_pipe.p + adjust).clamp(min=0))
    report("Progress/augment", augment_pipe.p)
    return augment_pipe.p.clone()


# --------------------------------------------------------------------------- losses / regularizers
LOSSES = {
    "ns": (lambda fake: F.softplus(-fake).mean(), lambda real, fake: F.softplus(fake).mean() + F.softplus(-real).mean()),
    "hinge": (lambda fake: -fake.mean(), lambda real, fake: F.relu(1.0 - real).mean() + F.relu(1.0 + fake).mean()),
    "wgan": (lambda fake: -fake.mean(), lambda real, fake: fake.mean() - real.mean() + WGAN_DRIFT * real.square().mean()),
}

def get_loss(name: str):
    try:
        return LOSSES[name]
    except KeyError:
        raise ValueError(f"unknown GAN loss {name!r}; choose from {sorted(LOSSES)}") from None

def _r1_penalty(D, real_img, c, gamma: float):
    real_img_tmp = real_img.detach().requires_grad_(True)  # expect: FL000 GB8985
    real_logits = D(real_img_tmp, c)
    r1_grads = torch.autograd.grad(outputs=[real_logits.sum()], inputs=[real_img_tmp], create_graph=True)[0]  # expect: FL000 GB9186
    penalty = r1_grads.square().sum([1, 2, 3])
    report("Loss/r1_penalty", penalty)
    return (penalty * (gamma / 2)).mean()

r1_penalty = torch.compile(_r1_penalty)

@torch.compile
def path_length_penalty(G: Generator, ws, pl_mean, decay: float, pl_noise=None):
    img = G.synthesis(ws)
    if pl_noise is None:
        pl_noise = torch.randn_like(img)
    pl_noise = pl_noise / np.sqrt(img.shape[2] * img.shape[3])
    pl_grads = torch.autograd.grad(outputs=[(img * pl_noise).sum()], inputs=[ws], create_graph=True)[0]  # expect: FL000 GB9186
    pl_lengths = pl_grads.square().sum(2).mean(1).sqrt()
    pl_mean.copy_(pl_mean.lerp(pl_lengths.mean(), decay).detach())
    pl_penalty = (pl_lengths - pl_mean).square()
    report("Loss/pl_penalty", pl_penalty)
    return pl_penalty.mean()

def style_mix(mapping: MappingNetwork, z_mix, c, ws, prob: float):
    cutoff = torch.empty([], dtype=torch.int64, device=ws.device).random_(1, ws.shape[1])  # expect: FL000 GB0107
    cutoff = torch.where(torch.rand([], device=ws.device) < prob, cutoff, torch.full_like(cutoff, ws.shape[1]))
    ws[:, cutoff:] = mapping(z_mix, c, update_emas=False)[:, cutoff:]  # expect: FL000 GB0124
    return ws

@torch.compile
def generator_step(G: Generator, D: Discriminator, z, c, cfg: TrainConfig, augment_pipe=None):
    ws = G.mapping(z, c, update_emas=True)
    ws = style_mix(G.mapping, z.roll(1, 0), c, ws, cfg.style_mixing_prob)
    img = G.synthesis(ws)
    if augment_pipe is not None:
        img = augment_pipe(img)
    logits = D(img, c)
    report("Loss/scores/fake", logits)
    g_loss_fn, _ = get_loss(cfg.loss)
    return report("Loss/G/loss", g_loss_fn(logits))

@torch.compile
def discriminator_step(D: Discriminator, real_img, gen_img, c, cfg: TrainConfig, step: int):
    real_logits = D(real_img, c)
    gen_logits = D(gen_img.detach(), c)
    report("Loss/scores/real", real_logits)
    report("Loss/scores/fake", gen_logits)
    _, d_loss_fn = get_loss(cfg.loss)
    loss = report("Loss/D/loss", d_loss_fn(real_logits, gen_logits))
    if step % LOG_EVERY == 0:
        log_stats(step, {"D/loss": loss, "D/real": real_logits.mean(), "lr": 2e-3})
    return loss


# --------------------------------------------------------------------------- EMA / snapshots
@torch.compile
@torch.no_grad()
def update_ema(ema_model: nn.Module, model: nn.Module, beta: float):
    for p_ema, p in zip(ema_model.parameters(), model.parameters()):
        p_ema.copy_(p.detach().lerp(p_ema, beta))
    for b_ema, b in zip(ema_model.buffers(), model.buffers()):
        b_ema.copy_(b)

class GeneratorEMA:
    """G_ema with the half-life ramp-up of StyleGAN2-ADA's training loop."""

    def __init__(self, G: nn.Module, ema_kimg: float = 10.0, rampup: Optional[float] = 0.05):
        self.G_ema = copy.deepcopy(G).eval().requires_grad_(False)
        self.ema_kimg, self.rampup = ema_kimg, rampup
        self.cur_nimg = 0

    @property
    def ema_nimg(self):
        nimg = self.ema_kimg * 1000
        if self.rampup is not None:
            nimg = min(nimg, self.cur_nimg * self.rampup)
        return nimg

    @torch.compile
    def update(self, G: nn.Module, batch_size: int):
        self.cur_nimg += batch_size  # expect: FL302
        beta = 0.5 ** (batch_size / max(self.ema_nimg, 1e-8))
        update_ema(self.G_ema, G, beta)
        return beta

@torch.compile
def downsample_to(img, target_res: int = 4):
    while img.shape[-1] > target_res:  # expect: FL301
        img = F.avg_pool2d(img, 2, ceil_mode=True)
    return img

@torch.compile
def images_to_grid(img, max_cols: int = 4, drange=(-1, 1)):
    lo, hi = drange
    img = ((img - lo) * (255 / (hi - lo))).clamp(0, 255)
    n, c, h, w = img.shape
    cols = min(n, max_cols)
    rows = math.ceil(n / cols)
    if rows * cols > n:  # expect: FL301
        img = torch.cat([img, img.new_zeros(rows * cols - n, c, h, w)])
    img = img.reshape(rows, cols, c, h, w).permute(2, 0, 3, 1, 4)
    return img.reshape(c, rows * h, cols * w)


# --------------------------------------------------------------------------- cases
def _randn(*shape, seed: int = 0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))

def _labels(n, c_dim=3):
    return F.one_hot(torch.arange(n) % c_dim, c_dim).float()

def _with_p(pipe: AugmentPipe, p: float) -> AugmentPipe:
    pipe.p.fill_(p)
    return pipe

def _ema_case():
    G = Generator()
    return GeneratorEMA.update, (GeneratorEMA(G), G, 4)


CASES = {
    "FullyConnectedLayer": lambda: (FullyConnectedLayer(6, 5, activation="lrelu"), (_randn(3, 6),)),
    "MappingNetwork": lambda: (MappingNetwork(MappingConfig()), (_randn(3, 8), None, 1.0, None, True)),
    "SynthesisLayer": lambda: (SynthesisLayer(4, 6, 8, 8, up=2), (_randn(2, 4, 4, 4), _randn(2, 8, seed=1), "const")),
    "SynthesisBlock": lambda: (SynthesisBlock(6, 4, 8, 8), (_randn(2, 6, 4, 4), _randn(2, 3, 4, 4, seed=1),
                                                             _randn(2, 3, 8, seed=2))),
    "Generator": lambda: (Generator().eval(), (_randn(3, 8), None, 0.7, 2)),
    "Conv2dLayer": lambda: (Conv2dLayer(3, 5, 3, activation="lrelu", down=2, conv_clamp=256), (_randn(2, 3, 6, 8),)),
    "MinibatchStdLayer": lambda: (MinibatchStdLayer(2), (_randn(4, 6, 3, 5),)),
    "Discriminator": lambda: (Discriminator(), (_randn(4, 3, 8, 8),)),
    "AugmentPipe": lambda: (AugmentPipe(), (_randn(3, 3, 8, 8),)),
    "update_ada_p": lambda: (update_ada_p, (_with_p(AugmentPipe(), 0.1), _randn(6, 1), TrainConfig(), 6)),
    "r1_penalty": lambda: (r1_penalty, (Discriminator(c_dim=3, mbstd_group_size=2), _randn(4, 3, 8, 8), _labels(4), 10.0)),
    "path_length_penalty": lambda: (path_length_penalty, (Generator(), _randn(2, 4, 8).requires_grad_(),
                                                          torch.zeros([]), 0.01, _randn(2, 3, 8, 8, seed=1))),
    "generator_step": lambda: (generator_step, (Generator(MappingConfig(c_dim=3)), Discriminator(c_dim=3),
                                                _randn(4, 8), _labels(4), TrainConfig(), _with_p(AugmentPipe(), 0.0))),
    "discriminator_step": lambda: (discriminator_step, (Discriminator(mbstd_group_size=None), _randn(3, 3, 8, 8),
                                                        _randn(3, 3, 8, 8, seed=1), None, TrainConfig(loss="hinge"), 0)),
    "update_ema": lambda: (update_ema, (Generator(), Generator(), 0.99)),
    "GeneratorEMA.update": _ema_case,
    "downsample_to": lambda: (downsample_to, (_randn(2, 3, 6, 8),), (_randn(5, 3, 10, 16),)),
    "images_to_grid": lambda: (images_to_grid, (_randn(6, 3, 5, 7),), (_randn(8, 3, 9, 10),)),
}
