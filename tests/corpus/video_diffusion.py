"""Latent video diffusion internals in the style of open video DiT repos (Latte, OpenSora-like):
divided space/time attention with a relative temporal bias, tubelet patch embedding, timestep +
frame-index conditioning, classifier-free guidance with per-sample scales, cosine / sigmoid
schedules with min-SNR weighting, keyframe in-betweening, DeepCache-style feature reuse across
sampler steps, autoregressive clip extension, and a DDIM loop with callbacks and logging."""
import functools
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, Optional, Sequence, Tuple, Union

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("video_diffusion")
logger.addHandler(logging.NullHandler())

DEBUG_SHAPES = False
LOG_EVERY = 2
MAX_PERIOD = 10_000
SLERP_DOT_THRESHOLD = 0.9995
TIME_SCALE = 1000.0

@dataclass
class VideoDiTConfig:
    in_channels: int = 3
    hidden: int = 24
    heads: int = 4
    depth: int = 2
    tubelet: Tuple[int, int, int] = (2, 2, 2)
    max_frames: int = 16
    mlp_ratio: float = 2.0
    num_classes: int = 5
    causal_time: bool = False
    learn_sigma: bool = False

    @property
    def out_channels(self) -> int:
        return self.in_channels * 2 if self.learn_sigma else self.in_channels

    @property
    def patch_volume(self) -> int:
        pt, ph, pw = self.tubelet
        return pt * ph * pw

@dataclass
class SamplerConfig:
    num_steps: int = 3
    schedule: str = "cosine"
    eta: float = 0.0
    prediction: str = "eps"
    clip_x0: Optional[float] = 3.0
    model_kwargs: Dict[str, object] = field(default_factory=dict)

# --------------------------------------------------------------------------- noise schedules

def cosine_alpha_bar(t, s: float = 0.008):
    """Nichol & Dhariwal; continuous t in [0, 1]."""
    f = torch.cos((t + s) / (1 + s) * math.pi / 2) ** 2
    f0 = math.cos(s / (1 + s) * math.pi / 2) ** 2
    return (f / f0).clamp(1e-5, 1.0 - 1e-5)

def sigmoid_alpha_bar(t, start: float = -3.0, end: float = 3.0, tau: float = 1.0):
    """Sigmoid schedule (Jabri et al.), better suited to high-resolution / many-frame inputs."""
    v_start = 1.0 / (1.0 + math.exp(-start / tau))
    v_end = 1.0 / (1.0 + math.exp(-end / tau))
    out = (v_end - torch.sigmoid((t * (end - start) + start) / tau)) / (v_end - v_start)
    return out.clamp(1e-5, 1.0 - 1e-5)

SCHEDULES: Dict[str, Callable] = {
    "cosine": cosine_alpha_bar,
    "sigmoid": functools.partial(sigmoid_alpha_bar, start=-3.0, end=3.0, tau=0.9),
}

def get_schedule(name: str) -> Callable:
    if name not in SCHEDULES:
        raise KeyError(f"unknown noise schedule {name!r}; choose from {sorted(SCHEDULES)}")
    return SCHEDULES[name]

def snr(alpha_bar):
    return alpha_bar / (1.0 - alpha_bar)

def _bcast(v, ndim: int):
    """(B,) -> (B, 1, ..., 1) so per-sample values broadcast over video tensors."""
    return v.reshape(v.shape[0], *([1] * (ndim - 1)))

WEIGHTINGS = {
    "min_snr": lambda s, gamma: torch.clamp(s, max=gamma) / s,
    "min_snr_v": lambda s, gamma: torch.clamp(s, max=gamma) / (s + 1),
    "soft_min_snr": lambda s, gamma: gamma / (s + gamma),
    "none": lambda s, gamma: torch.ones_like(s),
}

def _warn_nonfinite(x, what: str) -> bool:
    if not torch.isfinite(x).all():  # expect: FL000 GB0170
        logger.warning("non-finite values in %s", what)
        return True
    return False

@torch.compile
def diffusion_loss(pred, target, t, schedule="cosine", weighting="min_snr", gamma=5.0):
    alpha_bar = get_schedule(schedule)(t)
    w = WEIGHTINGS[weighting](snr(alpha_bar), gamma)
    per_sample = (pred - target).pow(2).flatten(1).mean(1)
    if _warn_nonfinite(per_sample, "diffusion loss"):
        per_sample = torch.nan_to_num(per_sample, nan=0.0, posinf=0.0)
    return (w * per_sample).mean(), per_sample.detach()

# --------------------------------------------------------------------------- embeddings

def timestep_embedding(t, dim: int, max_period: int = MAX_PERIOD):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    args = t[:, None].float() * freqs[None]
    emb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
    if dim % 2:
        emb = torch.cat([emb, torch.zeros_like(emb[:, :1])], dim=-1)
    return emb

def frame_index_embedding(frame_idx, dim: int):
    b, n = frame_idx.shape
    return timestep_embedding(frame_idx.reshape(-1), dim, max_period=256).view(b, n, dim)

class TubeletEmbed(nn.Module):
    """ViViT-style 3D patch embedding: non-overlapping (pt, ph, pw) tubelets -> tokens (B, T', S, D)."""

    def __init__(self, cfg: VideoDiTConfig):
        super().__init__()
        self.tubelet = cfg.tubelet
        self.proj = nn.Conv3d(cfg.in_channels, cfg.hidden, kernel_size=cfg.tubelet, stride=cfg.tubelet)
        self.norm = nn.LayerNorm(cfg.hidden)

    def _pad_to_tubelet(self, x):
        pt, ph, pw = self.tubelet
        T, H, W = x.shape[-3:]
        pad_t, pad_h, pad_w = (-T) % pt, (-H) % ph, (-W) % pw
        if pad_t or pad_h or pad_w:  # expect: FL301
            x = F.pad(x, (0, pad_w, 0, pad_h))
            x = torch.cat([x, x[:, :, -1:].expand(-1, -1, pad_t, -1, -1)], dim=2)  # repeat last frame
        return x

    def forward(self, x):
        x = self.proj(self._pad_to_tubelet(x))
        grid = tuple(x.shape[2:])
        tokens = x.flatten(3).permute(0, 2, 3, 1)
        return self.norm(tokens), grid

# --------------------------------------------------------------------------- space-time attention

def _split_heads(x, heads: int):
    *lead, n, d = x.shape
    return x.reshape(*lead, n, heads, d // heads).transpose(-3, -2)

def _merge_heads(x):
    x = x.transpose(-3, -2)
    return x.reshape(*x.shape[:-2], -1)

class FactorisedSTAttention(nn.Module):
    """Divided space-time attention (TimeSformer): the S tokens of each frame attend to each
    other, then each spatial location attends over the T frames."""

    def __init__(self, cfg: VideoDiTConfig, rel_bias: bool = True):
        super().__init__()
        self.heads = cfg.heads
        self.causal_time = cfg.causal_time
        self.qkv_s = nn.Linear(cfg.hidden, 3 * cfg.hidden)
        self.qkv_t = nn.Linear(cfg.hidden, 3 * cfg.hidden)
        self.proj_s = nn.Linear(cfg.hidden, cfg.hidden)
        self.proj_t = nn.Linear(cfg.hidden, cfg.hidden)
        self.norm_t = nn.LayerNorm(cfg.hidden)
        self.max_frames = cfg.max_frames
        self.rel_table = nn.Parameter(torch.randn(2 * cfg.max_frames - 1, cfg.heads) * 0.02) if rel_bias else None

    def temporal_bias(self, num_frames: int):
        if num_frames > self.max_frames:
            raise ValueError(f"{num_frames} frames > max_frames={self.max_frames}")
        pos = torch.arange(num_frames, device=self.rel_table.device)
        return self.rel_table[pos[None, :] - pos[:, None] + self.max_frames - 1].permute(2, 0, 1)

    def _attend(self, qkv_proj, x, bias=None, causal=False):
        q, k, v = (_split_heads(z, self.heads) for z in qkv_proj(x).chunk(3, dim=-1))
        if bias is not None and causal:
            n = q.shape[-2]
            keep = torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
            bias, causal = bias.masked_fill(~keep, float("-inf")), False
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, is_causal=causal)
        return _merge_heads(out)

    def forward(self, x):
        B, T, S, D = x.shape
        x = x + self.proj_s(self._attend(self.qkv_s, x))
        xt = x.transpose(1, 2)
        bias = self.temporal_bias(T) if self.rel_table is not None else None
        xt = self.proj_t(self._attend(self.qkv_t, self.norm_t(xt), bias, self.causal_time))
        if DEBUG_SHAPES:
            logger.debug("st-attn %s -> %s", tuple(x.shape), tuple(xt.shape))
        return x + xt.transpose(1, 2)

# --------------------------------------------------------------------------- conditioning + DiT

class FrameConditioning(nn.Module):
    """Per-frame conditioning: timestep embedding + an embedding of absolute frame indices, so
    extension / interpolation runs can condition on offset or fractional frame positions."""

    def __init__(self, cfg: VideoDiTConfig):
        super().__init__()
        self.dim = cfg.hidden
        self.max_frames = cfg.max_frames
        self.t_mlp = nn.Sequential(nn.Linear(cfg.hidden, cfg.hidden), nn.SiLU(), nn.Linear(cfg.hidden, cfg.hidden))
        self.f_proj = nn.Linear(cfg.hidden, cfg.hidden)

    def forward(self, t, num_frames: int, frame_idx: Optional[torch.Tensor] = None):
        B = t.shape[0]
        if frame_idx is None:
            frame_idx = torch.arange(num_frames, device=t.device, dtype=torch.float32).expand(B, -1)
        else:
            assert (frame_idx[:, 1:] >= frame_idx[:, :-1]).all(), "frame indices must be increasing"
            if frame_idx.max() >= self.max_frames:  # expect: FL000 GB0170
                raise ValueError(f"frame index beyond max_frames={self.max_frames}")
        t_emb = self.t_mlp(timestep_embedding(t, self.dim))
        f_emb = self.f_proj(frame_index_embedding(frame_idx, self.dim))
        return t_emb[:, None, :] + f_emb

def modulate(x, shift, scale):
    return x * (1 + scale.unsqueeze(2)) + shift.unsqueeze(2)

class VideoDiTBlock(nn.Module):
    def __init__(self, cfg: VideoDiTConfig):
        super().__init__()
        self.norm1 = nn.LayerNorm(cfg.hidden, elementwise_affine=False, eps=1e-6)
        self.attn = FactorisedSTAttention(cfg)
        self.norm2 = nn.LayerNorm(cfg.hidden, elementwise_affine=False, eps=1e-6)
        hidden = int(cfg.hidden * cfg.mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(cfg.hidden, hidden), nn.GELU(approximate="tanh"), nn.Linear(hidden, cfg.hidden))
        self.ada = nn.Sequential(nn.SiLU(), nn.Linear(cfg.hidden, 6 * cfg.hidden))

    def forward(self, x, c):
        shift1, scale1, gate1, shift2, scale2, gate2 = self.ada(c).chunk(6, dim=-1)
        x = x + gate1.unsqueeze(2) * self.attn(modulate(self.norm1(x), shift1, scale1))
        return x + gate2.unsqueeze(2) * self.mlp(modulate(self.norm2(x), shift2, scale2))

class TinyVideoDiT(nn.Module):
    def __init__(self, cfg: Optional[VideoDiTConfig] = None):
        super().__init__()
        cfg = cfg or VideoDiTConfig()
        self.cfg = cfg
        self.embed = TubeletEmbed(cfg)
        self.cond = FrameConditioning(cfg)
        self.y_embed = nn.Embedding(cfg.num_classes + 1, cfg.hidden)  # last row: null label
        self.blocks = nn.ModuleList([VideoDiTBlock(cfg) for _ in range(cfg.depth)])
        self.final_norm = nn.LayerNorm(cfg.hidden)
        self.head = nn.Linear(cfg.hidden, cfg.patch_volume * cfg.out_channels)

    @property
    def null_label(self) -> int:
        return self.cfg.num_classes

    def unpatchify(self, tokens, grid, out_shape):
        pt, ph, pw = self.cfg.tubelet
        nt, nh, nw = grid
        B, C = tokens.shape[0], self.cfg.out_channels
        x = tokens.reshape(B, nt, nh, nw, pt, ph, pw, C)
        x = x.permute(0, 7, 1, 4, 2, 5, 3, 6).reshape(B, C, nt * pt, nh * ph, nw * pw)
        T, H, W = out_shape
        return x[:, :, :T, :H, :W]

    def conditioning(self, t, num_frames, y=None, frame_idx=None):
        if frame_idx is not None:
            frame_idx = frame_idx[:, :: self.cfg.tubelet[0]] / self.cfg.tubelet[0]
        c = self.cond(t, num_frames, frame_idx)
        if y is not None:
            c = c + self.y_embed(y)[:, None, :]
        return c

    def forward(self, x, t, y=None, frame_idx=None):
        out_shape = x.shape[-3:]
        tokens, grid = self.embed(x)
        c = self.conditioning(t, grid[0], y, frame_idx)
        for blk in self.blocks:
            tokens = blk(tokens, c)
        return self.unpatchify(self.head(self.final_norm(tokens)), grid, out_shape)

# --------------------------------------------------------------------------- classifier-free guidance

def _as_scale_tensor(scale: Union[float, Sequence[float], torch.Tensor], batch: int, ref):
    if isinstance(scale, (int, float)):
        return torch.full((batch,), float(scale), device=ref.device, dtype=ref.dtype)
    if isinstance(scale, (list, tuple)):
        scale = torch.tensor(scale, device=ref.device, dtype=ref.dtype)
    if scale.numel() == 1:
        scale = scale.reshape(1).expand(batch)
    assert scale.shape[0] == batch, f"need one guidance scale per sample, got {tuple(scale.shape)}"
    return scale

def rescale_guidance(guided, cond, phi: float):
    """CFG rescale from 'Common Diffusion Noise Schedules and Sample Steps are Flawed'."""
    dims = list(range(1, guided.ndim))
    ratio = cond.std(dim=dims, keepdim=True) / guided.std(dim=dims, keepdim=True)
    return phi * (guided * ratio) + (1 - phi) * guided

@torch.compile
def cfg_combine(cond, uncond, scale, rescale_phi: float = 0.0):
    s = _bcast(_as_scale_tensor(scale, cond.shape[0], cond), cond.ndim)
    guided = uncond + s * (cond - uncond)
    if rescale_phi > 0:
        guided = rescale_guidance(guided, cond, rescale_phi)
    return guided

class ClassifierFreeGuidance(nn.Module):
    """Runs [cond, uncond] as one doubled batch; `scales` holds one guidance scale per sample."""

    def __init__(self, model: TinyVideoDiT, rescale_phi: float = 0.0):
        super().__init__()
        self.model = model
        self.rescale_phi = rescale_phi

    def forward(self, x, t, y, scales, frame_idx=None):
        if torch.all(scales == 1.0):  # expect: FL000 GB0170
            # nobody asked for guidance: skip the unconditional half of the batch
            return self.model(x, t, y=y, frame_idx=frame_idx)
        y_null = torch.full_like(y, self.model.null_label)
        both = functools.partial(torch.cat, dim=0)
        fi = None if frame_idx is None else both([frame_idx, frame_idx])
        out = self.model(both([x, x]), both([t, t]), y=both([y, y_null]), frame_idx=fi)
        cond, uncond = out.chunk(2)
        return cfg_combine(cond, uncond, scales, self.rescale_phi)

# --------------------------------------------------------------------------- interpolation helpers

def slerp(t: float, v0, v1, dot_threshold: float = SLERP_DOT_THRESHOLD):
    """Spherical interpolation between two latents (the widely copied numpy version)."""
    inputs_are_torch = isinstance(v0, torch.Tensor)
    if inputs_are_torch:
        device = v0.device
        v0, v1 = v0.cpu().numpy(), v1.cpu().numpy()
    dot = np.sum(v0 * v1 / (np.linalg.norm(v0) * np.linalg.norm(v1)))
    if np.abs(dot) > dot_threshold:  # expect: FL000 GB0170
        v2 = (1 - t) * v0 + t * v1
    else:
        theta_0 = np.arccos(dot)
        sin_theta_0 = np.sin(theta_0)
        theta_t = theta_0 * t
        v2 = np.sin(theta_0 - theta_t) / sin_theta_0 * v0 + np.sin(theta_t) / sin_theta_0 * v1
    if inputs_are_torch:
        v2 = torch.from_numpy(v2).to(device)
    return v2

INTERPOLATORS = {
    "slerp": slerp,
    "lerp": lambda alpha, v0, v1: torch.lerp(v0, v1, alpha),
}

@torch.compile
def interpolate_keyframes(z0, z1, num_inbetween: int, mode: str = "slerp"):
    """Latent in-betweening: two keyframe latents (B, C, H, W) -> a clip (B, C, N + 2, H, W)."""
    interp = INTERPOLATORS[mode]
    frames = [z0]
    for i in range(1, num_inbetween + 1):
        frames.append(interp(i / (num_inbetween + 1), z0, z1))
    frames.append(z1)
    return torch.stack(frames, dim=2)

@torch.compile
def temporal_upsample(video, factor: int = 2, blend: str = "linear"):
    """Insert factor - 1 blended frames between neighbours: T frames -> (T - 1) * factor + 1."""
    T = video.shape[2]
    if T < 2:
        return video
    out = []
    for i in range(T - 1):  # expect: FL301
        a, b = video[:, :, i], video[:, :, i + 1]
        out.append(a)
        for k in range(1, factor):
            w = k / factor
            if blend == "cosine":
                w = 0.5 - 0.5 * math.cos(math.pi * w)
            out.append(torch.lerp(a, b, w))
    out.append(video[:, :, -1])
    return torch.stack(out, dim=2)

# --------------------------------------------------------------------------- latent caching

class LatentCache:
    """Initial-noise cache keyed by (shape, seed): re-running a prompt at another guidance scale
    starts from the very same noise."""

    def __init__(self):
        self._store: Dict[Tuple, torch.Tensor] = {}

    def get_or_create(self, shape, seed: int):
        key = (tuple(shape), seed)
        if key not in self._store:
            g = torch.Generator().manual_seed(seed)  # expect: FL000 GB0363; FL000 GB7650
            self._store[key] = torch.randn(shape, generator=g)  # expect: FL000 GB0055; FL302
        return self._store[key]

@torch.compile
def prepare_latents(reference, seed: int, cache: LatentCache, noise_scale: float = 1.0):
    noise = cache.get_or_create(reference.shape, seed)
    return noise.to(reference.dtype) * noise_scale

class CachedVideoDenoiser(nn.Module):
    """DeepCache-style reuse: the deep blocks' residual is recomputed every `interval` sampler
    steps and reused in between; the first block runs every step."""

    def __init__(self, model: TinyVideoDiT, interval: int = 3):
        super().__init__()
        self.model = model
        self.interval = interval
        self._deep_residual = None

    def forward(self, x, t, step: int):
        m = self.model
        tokens, grid = m.embed(x)
        c = m.conditioning(t, grid[0])
        first, *deep = m.blocks
        h = first(tokens, c)
        if self._deep_residual is None or step % self.interval == 0:
            d = h
            for blk in deep:
                d = blk(d, c)
            self._deep_residual = d - h  # expect: FL302
        h = h + self._deep_residual
        return m.unpatchify(m.head(m.final_norm(h)), grid, x.shape[-3:])

# --------------------------------------------------------------------------- evaluation / extension

@torch.compile
def frame_consistency_report(video, threshold: float = 0.5):
    """Eval helper: mean / max change between consecutive frames, plus the frames that jump."""
    diffs = (video[:, :, 1:] - video[:, :, :-1]).abs().mean(dim=(1, 3, 4))
    report = {"mean_delta": diffs.mean().item(), "max_delta": float(diffs.max())}  # expect: FL000 GB0124
    jumps = (diffs.mean(0) > threshold).nonzero().flatten().tolist()  # expect: FL000 GB0033; FL000 GB0036
    report["jump_frames"] = [j + 1 for j in jumps]
    return report

@torch.compile
def extend_clip(model: TinyVideoDiT, context, context_idx, new_latents, t):
    """Autoregressive extension: noisy new frames follow the (clean) context frames, and the
    frame-index conditioning continues where the context's indices stop."""
    start = int(context_idx[:, -1].max()) + 1  # expect: FL000 GB0124
    n_new = new_latents.shape[2]
    new_idx = torch.arange(start, start + n_new, dtype=context_idx.dtype).expand(context.shape[0], -1)
    out = model(torch.cat([context, new_latents], dim=2), t, frame_idx=torch.cat([context_idx, new_idx], dim=1))
    return out[:, :, context.shape[2]:]

# --------------------------------------------------------------------------- sampler

def make_timesteps(num_steps: int, schedule: str):
    ts = torch.linspace(1.0, 0.0, num_steps + 1)
    return ts, get_schedule(schedule)(ts)

def _predict_x0(x_t, out, ab, prediction: str):
    if prediction == "v":
        return ab.sqrt() * x_t - (1 - ab).sqrt() * out
    if prediction == "x0":
        return out
    return (x_t - (1 - ab).sqrt() * out) / ab.sqrt()

@torch.compile
def ddim_step(x_t, model_out, ab_t, ab_prev, eta: float = 0.0, prediction: str = "eps",
              clip_x0: Optional[float] = None, generator: Optional[torch.Generator] = None):
    x0 = _predict_x0(x_t, model_out, ab_t, prediction)
    if clip_x0 is not None:
        x0 = x0.clamp(-clip_x0, clip_x0)
    eps = (x_t - ab_t.sqrt() * x0) / (1 - ab_t).sqrt()
    sigma = eta * ((1 - ab_prev) / (1 - ab_t) * (1 - ab_t / ab_prev)).sqrt()
    x_prev = ab_prev.sqrt() * x0 + (1 - ab_prev - sigma ** 2).clamp_min(0).sqrt() * eps
    if eta > 0:
        noise = torch.randn(x_t.shape, generator=generator, dtype=x_t.dtype)  # expect: FL000 GB0055
        x_prev = x_prev + sigma * noise
    return x_prev, x0

class ProgressLogger:
    def __init__(self, every: int = LOG_EVERY):
        self.every = every

    def __call__(self, step: int, total: int, x, x0):
        if step % self.every == 0 or step == total - 1:
            logger.info("step %d/%d |x0|=%.4f", step + 1, total, x0.abs().mean().item())  # expect: FL000 GB0124

def make_stats_callback(store: Dict[str, list]):
    def _record(step, total, x, x0):
        store.setdefault("x_std", []).append(x.std())  # expect: FL302
        store.setdefault("x0_range", []).append(x0.amax() - x0.amin())
    return _record

def run_sampler(model, x_T, cfg: SamplerConfig, callbacks: Sequence[Callable] = ()):
    ts, alpha_bars = make_timesteps(cfg.num_steps, cfg.schedule)
    x, B = x_T, x_T.shape[0]
    tic = time.perf_counter()  # expect: FL000 GB0007
    for i in range(cfg.num_steps):
        t = (ts[i] * TIME_SCALE).expand(B)
        out = model(x, t, **cfg.model_kwargs)
        x, x0 = ddim_step(x, out, alpha_bars[i], alpha_bars[i + 1], cfg.eta, cfg.prediction, cfg.clip_x0)
        for cb in callbacks:
            cb(i, cfg.num_steps, x, x0)
    logger.debug("sampled %d steps in %.2fs", cfg.num_steps, time.perf_counter() - tic)
    return x

sample_video = torch.compile(run_sampler)

# --------------------------------------------------------------------------- cases

def _randn(*shape, seed: int = 0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))

def _seeded(factory, *args, **kwargs):
    torch.manual_seed(0)
    return factory(*args, **kwargs).eval()

def _dit(**overrides):
    return _seeded(TinyVideoDiT, VideoDiTConfig(**overrides))

def _video(T: int = 4, seed: int = 0):
    return _randn(2, 3, T, 6, 10, seed=seed)

_T_MODEL = torch.tensor([250.0, 700.0])
_T_UNIT = torch.tensor([0.3, 0.8])
_FRAME_IDX = torch.tensor([[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]])

CASES = {
    "diffusion_loss": lambda: (diffusion_loss, (_video(), _video(seed=1), _T_UNIT, "cosine", "min_snr")),
    "diffusion_loss_sigmoid_v": lambda: (diffusion_loss, (_video(), _video(seed=1), _T_UNIT, "sigmoid", "min_snr_v")),
    "TubeletEmbed": lambda: (_seeded(TubeletEmbed, VideoDiTConfig()), (_video(),), (_video(T=5),)),
    "FactorisedSTAttention": lambda: (_seeded(FactorisedSTAttention, VideoDiTConfig(causal_time=True)),
                                      (_randn(2, 3, 7, 24),)),
    "FrameConditioning": lambda: (_seeded(FrameConditioning, VideoDiTConfig()), (_T_MODEL, 3)),
    "VideoDiTBlock": lambda: (_seeded(VideoDiTBlock, VideoDiTConfig()), (_randn(2, 3, 7, 24), _randn(2, 3, 24, seed=2))),
    "TinyVideoDiT": lambda: (_dit(), (_video(), _T_MODEL, torch.tensor([0, 3]), _FRAME_IDX)),
    "ClassifierFreeGuidance": lambda: (_seeded(ClassifierFreeGuidance, _dit(), rescale_phi=0.7),
                                       (_video(), _T_MODEL, torch.tensor([1, 2]), torch.tensor([4.5, 7.0]))),
    "cfg_combine": lambda: (cfg_combine, (_video(), _video(seed=1), [1.5, 6.0], 0.5)),
    "interpolate_keyframes": lambda: (interpolate_keyframes, (_randn(2, 3, 6, 10), _randn(2, 3, 6, 10, seed=1), 3)),
    "temporal_upsample": lambda: (temporal_upsample, (_video(),), (_video(T=5),)),
    "prepare_latents": lambda: (prepare_latents, (_video(), 7, LatentCache())),
    "CachedVideoDenoiser": lambda: (_seeded(CachedVideoDenoiser, _dit(), interval=3), (_video(), _T_MODEL, 1)),
    "frame_consistency_report": lambda: (frame_consistency_report, (_video(T=5), 0.9)),
    "extend_clip": lambda: (extend_clip, (_dit(), _video(), _FRAME_IDX, _video(T=2, seed=4), _T_MODEL)),
    "ddim_step": lambda: (ddim_step, (_video(), _video(seed=1), torch.tensor(0.4), torch.tensor(0.7), 0.3, "v", 3.0,
                                      torch.Generator().manual_seed(5))),
    "sample_video": lambda: (sample_video, (_dit(), _video(seed=3), SamplerConfig(),
                                            [ProgressLogger(), make_stats_callback({})])),
}
