"""Latent diffusion as shipped via TorchScript / torch.export: cross-attention UNet, KL autoencoder,
CFG / ControlNet wrappers, DDIM / Euler steps, pre/post-processing, safety filter, export helpers."""
import logging
import math
import warnings
from dataclasses import dataclass
from functools import partial
from types import SimpleNamespace
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

logger = logging.getLogger("diffusion_export")
logger.addHandler(logging.NullHandler())

VAE_SCALING_FACTOR = 0.18215
LATENT_CHANNELS = 4
DEFAULT_GUIDANCE = 7.5
CONCEPT_THRESHOLD = 0.2
LATENT_CLAMP = 4.0
SCHEDULER_DEFAULTS = dict(num_train_timesteps=1000, beta_start=0.00085, beta_end=0.012,
                          beta_schedule="scaled_linear", prediction_type="epsilon", clip_sample=False,
                          set_alpha_to_one=False, steps_offset=1)

@dataclass
class UNetConfig:
    in_channels: int = LATENT_CHANNELS
    block_channels: Tuple[int, ...] = (8, 16)
    attention_levels: Tuple[bool, ...] = (False, True)
    time_embed_dim: int = 32
    cross_attention_dim: int = 12
    heads: int = 2
    groups: int = 4
    flip_sin_to_cos: bool = True

@dataclass
class VAEConfig:
    in_channels: int = 3
    latent_channels: int = LATENT_CHANNELS
    channels: Tuple[int, ...] = (8, 16)
    groups: int = 4
    scaling_factor: float = VAE_SCALING_FACTOR

class NoiseSchedule:
    def __init__(self, num_inference_steps: int = 10, start_index: int = 0, **overrides):
        self.cfg = cfg = SimpleNamespace(**{**SCHEDULER_DEFAULTS, **overrides})
        assert cfg.beta_schedule == "scaled_linear", f"{cfg.beta_schedule} is not implemented"
        self.betas = torch.linspace(cfg.beta_start ** 0.5, cfg.beta_end ** 0.5, cfg.num_train_timesteps) ** 2
        self.alphas_cumprod = torch.cumprod(1.0 - self.betas, dim=0)
        self.final_alpha_cumprod = 1.0 if cfg.set_alpha_to_one else float(self.alphas_cumprod[0])
        self.set_timesteps(num_inference_steps, start_index)

    def set_timesteps(self, num_inference_steps: int, start_index: int = 0):
        self.num_inference_steps = num_inference_steps
        steps = (np.arange(0, num_inference_steps) * self.step_ratio).round()[::-1].astype(np.int64)
        self.timesteps = torch.from_numpy(steps + self.cfg.steps_offset)
        sigmas = np.array(((1 - self.alphas_cumprod) / self.alphas_cumprod) ** 0.5)
        sigmas = np.interp(self.timesteps.numpy(), np.arange(len(sigmas)), sigmas)
        self.sigmas = torch.from_numpy(np.concatenate([sigmas, [0.0]]).astype(np.float32))
        self.step_index = start_index  # img2img starts part-way through the schedule

    @property
    def step_ratio(self) -> int:
        return self.cfg.num_train_timesteps // self.num_inference_steps

SCHEDULE = NoiseSchedule()

def timestep_embedding(timesteps: Tensor, dim: int = 320, flip_sin_to_cos: bool = True,
                       downscale_freq_shift: float = 0.0, max_period: int = 10000) -> Tensor:
    assert timesteps.dim() == 1, "timesteps should be a 1-D tensor"
    half = dim // 2
    exponent = -math.log(max_period) * torch.arange(half, dtype=torch.float32, device=timesteps.device)
    args = timesteps[:, None].float() * torch.exp(exponent / (half - downscale_freq_shift))[None, :]
    emb = torch.cat([torch.sin(args), torch.cos(args)], dim=-1)
    if flip_sin_to_cos:
        emb = torch.cat([emb[:, half:], emb[:, :half]], dim=-1)
    return F.pad(emb, (0, 1)) if dim % 2 == 1 else emb

def expand_timesteps(timestep, sample: Tensor) -> Tensor:
    if not torch.is_tensor(timestep):
        timestep = torch.tensor([timestep], dtype=torch.float32 if isinstance(timestep, float) else torch.int64)
    elif timestep.dim() == 0:
        timestep = timestep[None].to(sample.device)
    return timestep.expand(sample.shape[0])

ACTIVATIONS: Dict[str, Callable[[], nn.Module]] = {"silu": nn.SiLU, "gelu": nn.GELU, "mish": nn.Mish}

def _norm(groups: int, channels: int) -> nn.GroupNorm:
    return nn.GroupNorm(min(groups, channels), channels, eps=1e-6)

def downsample(channels: int) -> nn.Conv2d:
    return nn.Conv2d(channels, channels, 3, stride=2, padding=1)

def zero_module(module: nn.Module) -> nn.Module:
    for p in module.parameters():
        nn.init.zeros_(p)
    return module

class TimestepEmbedding(nn.Module):
    def __init__(self, in_dim: int, dim: int, act: str = "silu"):
        super().__init__()
        self.linear_1, self.act, self.linear_2 = nn.Linear(in_dim, dim), ACTIVATIONS[act](), nn.Linear(dim, dim)

    def forward(self, emb: Tensor) -> Tensor:
        return self.linear_2(self.act(self.linear_1(emb)))

class ResnetBlock(nn.Module):
    def __init__(self, in_ch: int, out_ch: int, temb_ch: Optional[int] = None, groups: int = 4, scale: float = 1.0):
        super().__init__()
        self.norm1, self.conv1 = _norm(groups, in_ch), nn.Conv2d(in_ch, out_ch, 3, padding=1)
        self.time_emb_proj = nn.Linear(temb_ch, out_ch) if temb_ch else None
        self.norm2, self.conv2 = _norm(groups, out_ch), nn.Conv2d(out_ch, out_ch, 3, padding=1)
        self.shortcut = nn.Conv2d(in_ch, out_ch, 1) if in_ch != out_ch else nn.Identity()
        self.output_scale_factor = scale

    def forward(self, x: Tensor, temb: Optional[Tensor] = None) -> Tensor:
        h = self.conv1(F.silu(self.norm1(x)))  # expect: FL203
        if temb is not None and self.time_emb_proj is not None:
            h = h + self.time_emb_proj(F.silu(temb))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))  # expect: FL203
        return (self.shortcut(x) + h) / self.output_scale_factor

class AttentionBlock(nn.Module):
    def __init__(self, channels: int, heads: int = 2, context_dim: Optional[int] = None, groups: int = 4):
        super().__init__()
        self.heads, self.norm = heads, _norm(groups, channels)
        self.to_q = nn.Linear(channels, channels, bias=False)
        self.to_k, self.to_v = (nn.Linear(context_dim or channels, channels, bias=False) for _ in "kv")
        self.to_out = nn.Linear(channels, channels)

    def split_heads(self, t: Tensor) -> Tensor:
        b, n, c = t.shape
        t = t.reshape(b, n, self.heads, c // self.heads).permute(0, 2, 1, 3)
        return t.reshape(b * self.heads, n, c // self.heads)

    def merge_heads(self, t: Tensor) -> Tensor:
        bh, n, d = t.shape
        t = t.reshape(bh // self.heads, self.heads, n, d).permute(0, 2, 1, 3)
        return t.reshape(bh // self.heads, n, d * self.heads)

    def forward(self, x: Tensor, context: Optional[Tensor] = None) -> Tensor:
        b, c, h, w = x.shape
        hidden = self.norm(x).view(b, c, h * w).transpose(1, 2)  # expect: FL203
        context = hidden if context is None else context
        q, k, v = (self.split_heads(proj(inp)) for proj, inp in
                   ((self.to_q, hidden), (self.to_k, context), (self.to_v, context)))
        scale = 1.0 / math.sqrt(c // self.heads)  # expect: FL203
        scores = torch.baddbmm(torch.empty(q.shape[0], q.shape[1], k.shape[1], dtype=q.dtype),
                               q, k.transpose(-1, -2), beta=0, alpha=scale)
        out = self.merge_heads(torch.bmm(scores.softmax(dim=-1), v))
        return self.to_out(out).transpose(1, 2).reshape(b, c, h, w) + x

class Upsample(nn.Module):
    def __init__(self, channels: int, mode: str = "nearest"):
        super().__init__()
        self.mode, self.conv = mode, nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: Tensor, output_size: Optional[Sequence[int]] = None) -> Tensor:
        if x.shape[0] >= 64:  # upsample_nearest2d is slow on large non-contiguous batches  # expect: FL203
            x = x.contiguous()
        x = F.interpolate(x, size=output_size, scale_factor=None if output_size else 2.0, mode=self.mode)
        return self.conv(x)

class TinyUNet(nn.Module):
    def __init__(self, cfg: Optional[UNetConfig] = None):
        super().__init__()
        cfg = self.config = cfg or UNetConfig()
        chans, temb, g = cfg.block_channels, cfg.time_embed_dim, cfg.groups
        self.time_proj = partial(timestep_embedding, dim=chans[0], flip_sin_to_cos=cfg.flip_sin_to_cos)
        self.time_embedding = TimestepEmbedding(chans[0], temb)
        self.conv_in = nn.Conv2d(cfg.in_channels, chans[0], 3, padding=1)
        attn = partial(AttentionBlock, heads=cfg.heads, context_dim=cfg.cross_attention_dim, groups=g)
        self.down_res, self.downsamplers = nn.ModuleList(), nn.ModuleList()
        self.down_attn, self.up_attn = nn.ModuleDict(), nn.ModuleDict()
        prev = chans[0]
        for level, ch in enumerate(chans):
            self.down_res.append(ResnetBlock(prev, ch, temb, g))
            if cfg.attention_levels[level]:
                self.down_attn[str(level)] = attn(ch)
            self.downsamplers.append(downsample(ch) if level < len(chans) - 1 else nn.Identity())
            prev = ch
        self.mid_res1, self.mid_attn = ResnetBlock(prev, prev, temb, g), attn(prev)
        self.mid_res2 = ResnetBlock(prev, prev, temb, g)
        self.up_res, self.upsamplers = nn.ModuleList(), nn.ModuleList()
        for level in reversed(range(len(chans))):
            ch = chans[level]
            self.up_res.append(ResnetBlock(prev + ch, ch, temb, g))
            if cfg.attention_levels[level]:
                self.up_attn[str(level)] = attn(ch)
            self.upsamplers.append(Upsample(ch) if level > 0 else nn.Identity())
            prev = ch
        self.norm_out, self.conv_out = _norm(g, prev), nn.Conv2d(prev, cfg.in_channels, 3, padding=1)
        self.num_upsamplers = len(chans) - 1

    def embed_time(self, timestep, sample: Tensor) -> Tensor:
        return self.time_embedding(self.time_proj(expand_timesteps(timestep, sample)).to(sample.dtype))

    def down_path(self, h: Tensor, emb: Tensor, context: Tensor) -> Tuple[Tensor, List[Tensor]]:
        skips = []
        for level, (res, down) in enumerate(zip(self.down_res, self.downsamplers)):
            h = res(h, emb)
            if str(level) in self.down_attn:
                h = self.down_attn[str(level)](h, context)
            skips.append(h)
            h = down(h)
        return self.mid_res2(self.mid_attn(self.mid_res1(h, emb), context), emb), skips

    def forward(self, sample: Tensor, timestep, encoder_hidden_states: Tensor,
                down_block_additional_residuals: Optional[Sequence[Tensor]] = None,
                mid_block_additional_residual: Optional[Tensor] = None, return_dict: bool = False):
        # the latent must be a multiple of the overall up factor unless sizes are forwarded
        default_overall_up_factor = 2 ** self.num_upsamplers
        forward_upsample_size = False
        if any(s % default_overall_up_factor != 0 for s in sample.shape[-2:]):  # expect: FL203; FL301
            logger.info("Forward upsample size to force interpolation output size.")
            forward_upsample_size = True
        emb = self.embed_time(timestep, sample)
        h, skips = self.down_path(self.conv_in(sample), emb, encoder_hidden_states)
        if down_block_additional_residuals is not None:
            skips = [s + r for s, r in zip(skips, down_block_additional_residuals)]
        if mid_block_additional_residual is not None:
            h = h + mid_block_additional_residual
        for i, (res, up) in enumerate(zip(self.up_res, self.upsamplers)):
            level = len(self.up_res) - 1 - i
            h = res(torch.cat([h, skips.pop()], dim=1), emb)
            if str(level) in self.up_attn:
                h = self.up_attn[str(level)](h, encoder_hidden_states)
            if isinstance(up, Upsample):
                h = up(h, skips[-1].shape[2:] if forward_upsample_size else None)
        out = self.conv_out(F.silu(self.norm_out(h)))  # expect: FL203
        return {"sample": out} if return_dict else (out,)

def rescale_noise_cfg(noise_cfg: Tensor, noise_pred_text: Tensor, guidance_rescale: float = 0.7) -> Tensor:
    dims = list(range(1, noise_pred_text.ndim))
    rescaled = noise_cfg * (noise_pred_text.std(dim=dims, keepdim=True) / noise_cfg.std(dim=dims, keepdim=True))
    return guidance_rescale * rescaled + (1 - guidance_rescale) * noise_cfg

class ClassifierFreeGuidance(nn.Module):
    def __init__(self, unet: TinyUNet, guidance_scale: float = DEFAULT_GUIDANCE, guidance_rescale: float = 0.0):
        super().__init__()
        self.unet, self.guidance_scale, self.guidance_rescale = unet, guidance_scale, guidance_rescale

    @property
    def do_classifier_free_guidance(self) -> bool:
        return self.guidance_scale > 1.0

    def forward(self, latents: Tensor, timestep, text_embeddings: Tensor, uncond_embeddings: Tensor) -> Tensor:
        if not self.do_classifier_free_guidance:
            return self.unet(latents, timestep, text_embeddings)[0]
        context = torch.cat([uncond_embeddings, text_embeddings])
        noise_uncond, noise_text = self.unet(torch.cat([latents] * 2), timestep, context)[0].chunk(2)
        guided = noise_uncond + self.guidance_scale * (noise_text - noise_uncond)
        if self.guidance_rescale > 0.0:
            guided = rescale_noise_cfg(guided, noise_text, self.guidance_rescale)
        return guided

class ControlAdapter(TinyUNet):
    """ControlNet-lite: the UNet encoder on latents + embedded hint, one zero-conv residual per level."""

    def __init__(self, cfg: Optional[UNetConfig] = None, embed_channels: Tuple[int, ...] = (4, 4, 8, 8)):
        super().__init__(cfg)
        chans = self.config.block_channels
        del self.up_res, self.upsamplers, self.up_attn, self.norm_out, self.conv_out  # encoder only
        layers: List[nn.Module] = [nn.Conv2d(3, embed_channels[0], 3, padding=1), nn.SiLU()]
        for a, b in zip(embed_channels[:-1], embed_channels[1:]):
            layers += [nn.Conv2d(a, b, 3, padding=1, stride=2), nn.SiLU()]
        self.hint_embedding = nn.Sequential(*layers, zero_module(nn.Conv2d(embed_channels[-1], chans[0], 3, padding=1)))
        self.zero_convs = nn.ModuleList(zero_module(nn.Conv2d(c, c, 1)) for c in chans + chans[-1:])

    def forward(self, sample: Tensor, timestep, encoder_hidden_states: Tensor, controlnet_cond: Tensor,
                conditioning_scale: float = 1.0, guess_mode: bool = False):
        if controlnet_cond.shape[0] != sample.shape[0]:  # one hint for the uncond/cond pair  # expect: FL203
            controlnet_cond = controlnet_cond.repeat_interleave(sample.shape[0] // controlnet_cond.shape[0], dim=0)
        expected = tuple(s * 8 for s in sample.shape[-2:])
        if tuple(controlnet_cond.shape[-2:]) != expected:  # expect: FL203; FL301
            controlnet_cond = F.interpolate(controlnet_cond, size=expected, mode="bilinear", align_corners=False)
        h = self.conv_in(sample) + self.hint_embedding(controlnet_cond)
        mid, skips = self.down_path(h, self.embed_time(timestep, sample), encoder_hidden_states)
        residuals = [zero(r) for zero, r in zip(self.zero_convs, skips + [mid])]
        if guess_mode:  # shallow levels get less weight: 0.1 ... 1.0
            scales = torch.logspace(-1, 0, len(residuals), device=sample.device) * conditioning_scale
        else:
            scales = [conditioning_scale] * len(residuals)
        residuals = [r * s for r, s in zip(residuals, scales)]
        return tuple(residuals[:-1]), residuals[-1]

def _vae_trunk(chans: Sequence[int], groups: int, up: bool) -> nn.Sequential:
    blocks, prev = [], chans[0]
    for i, ch in enumerate(chans):
        blocks.append(ResnetBlock(prev, ch, groups=groups))
        if i < len(chans) - 1:
            blocks.append(Upsample(ch) if up else downsample(ch))
        prev = ch
    return nn.Sequential(*blocks)

class AutoencoderKL(nn.Module):
    def __init__(self, cfg: Optional[VAEConfig] = None):
        super().__init__()
        self.config = cfg = cfg or VAEConfig()
        ch, latent, g = cfg.channels, cfg.latent_channels, cfg.groups
        self.encoder = nn.Sequential(
            nn.Conv2d(cfg.in_channels, ch[0], 3, padding=1), _vae_trunk(ch, g, up=False),
            AttentionBlock(ch[-1], heads=1, groups=g), _norm(g, ch[-1]), nn.SiLU(),
            nn.Conv2d(ch[-1], 2 * latent, 3, padding=1), nn.Conv2d(2 * latent, 2 * latent, 1))  # quant_conv
        self.decoder = nn.Sequential(
            nn.Conv2d(latent, latent, 1), nn.Conv2d(latent, ch[-1], 3, padding=1),  # post_quant_conv
            AttentionBlock(ch[-1], heads=1, groups=g), _vae_trunk(ch[::-1], g, up=True),
            _norm(g, ch[0]), nn.SiLU(), nn.Conv2d(ch[0], cfg.in_channels, 3, padding=1))

    def encode(self, x: Tensor, sample_posterior: bool = False, generator: Optional[torch.Generator] = None):
        mean, logvar = self.encoder(x).chunk(2, dim=1)  # expect: FL203
        if not sample_posterior:
            return mean
        std = torch.exp(0.5 * logvar.clamp(-30.0, 20.0))
        return mean + std * torch.randn(mean.shape, generator=generator, dtype=mean.dtype)  # expect: FL000 GB0055

    def decode(self, z: Tensor) -> Tensor:
        return self.decoder(z)  # expect: FL203

    def forward(self, sample: Tensor, sample_posterior: bool = False, generator=None) -> Tensor:
        return self.decode(self.encode(sample, sample_posterior, generator))

class VAEDecoderExport(nn.Module):
    def __init__(self, vae: AutoencoderKL):
        super().__init__()
        self.vae, self.scaling_factor = vae, vae.config.scaling_factor

    def forward(self, latents: Tensor) -> Tensor:
        image = self.vae.decode(latents / self.scaling_factor)
        return (image / 2 + 0.5).clamp(0, 1)

class SafetyFilter(nn.Module):
    def __init__(self, dim: int = 16, num_concepts: int = 5, patch: int = 8):
        super().__init__()
        self.embed = nn.Sequential(nn.Conv2d(3, dim, patch, stride=patch), nn.GELU(),
                                   nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(dim, dim))
        g = torch.Generator().manual_seed(0)
        self.concept_embeds = nn.Parameter(torch.randn(num_concepts, dim, generator=g), requires_grad=False)
        self.register_buffer("concept_weights", torch.full((num_concepts,), CONCEPT_THRESHOLD))

    def concept_scores(self, images: Tensor) -> Tensor:
        emb = F.normalize(self.embed(images), dim=-1)
        return emb @ F.normalize(self.concept_embeds, dim=-1).T - self.concept_weights

    def forward(self, images: Tensor) -> Tuple[Tensor, Tensor]:
        has_nsfw = (self.concept_scores(images) > 0).any(dim=1)
        for idx, flagged in enumerate(has_nsfw.tolist()):  # expect: FL000 GB0109; FL202
            if flagged:
                images[idx] = torch.zeros_like(images[idx])  # black image
        if has_nsfw.any():  # expect: FL000 GB0170; FL201
            logger.warning("Potential NSFW content detected; a black image will be returned instead.")  # expect: FL000 GB0291; FL204
        return images, has_nsfw

def ddim_step(model_output: Tensor, timestep, sample: Tensor, eta: float = 0.0,
              schedule: NoiseSchedule = SCHEDULE, generator: Optional[torch.Generator] = None):
    cfg = schedule.cfg
    prev_timestep = timestep - schedule.step_ratio
    alpha_prod_t = schedule.alphas_cumprod[timestep]
    alpha_prod_t_prev = schedule.alphas_cumprod[prev_timestep] if prev_timestep >= 0 else schedule.final_alpha_cumprod  # expect: FL201
    beta_prod_t = 1 - alpha_prod_t
    if cfg.prediction_type == "epsilon":
        pred_original_sample = (sample - beta_prod_t ** 0.5 * model_output) / alpha_prod_t ** 0.5
        pred_epsilon = model_output
    else:  # v_prediction
        pred_original_sample = alpha_prod_t ** 0.5 * sample - beta_prod_t ** 0.5 * model_output
        pred_epsilon = alpha_prod_t ** 0.5 * model_output + beta_prod_t ** 0.5 * sample
    if cfg.clip_sample:
        pred_original_sample = pred_original_sample.clamp(-1.0, 1.0)
    variance = (1 - alpha_prod_t_prev) / (1 - alpha_prod_t) * (1 - alpha_prod_t / alpha_prod_t_prev)
    std_dev_t = eta * variance ** 0.5
    direction = (1 - alpha_prod_t_prev - std_dev_t ** 2) ** 0.5 * pred_epsilon
    prev_sample = alpha_prod_t_prev ** 0.5 * pred_original_sample + direction
    if eta > 0:
        noise = torch.randn(model_output.shape, generator=generator, dtype=model_output.dtype)
        prev_sample = prev_sample + std_dev_t * noise
    return prev_sample, pred_original_sample

def index_for_timestep(timestep, schedule_timesteps: Tensor) -> int:
    indices = (schedule_timesteps == timestep).nonzero()
    # img2img starts mid-schedule: the first timestep then appears twice, take the second
    pos = 1 if len(indices) > 1 else 0  # expect: FL203
    return indices[pos].item()  # expect: FL202

def scale_model_input(sample: Tensor, timestep, schedule: NoiseSchedule = SCHEDULE) -> Tensor:
    sigma = schedule.sigmas[index_for_timestep(timestep, schedule.timesteps)]
    return sample / ((sigma ** 2 + 1) ** 0.5)

@torch.compile
def euler_step(model_output: Tensor, sample: Tensor, schedule: NoiseSchedule = SCHEDULE, s_churn: float = 0.0,
               s_tmin: float = 0.0, s_tmax: float = float("inf"), s_noise: float = 1.0, generator=None):
    sigma, sigma_next = schedule.sigmas[schedule.step_index], schedule.sigmas[schedule.step_index + 1]
    gamma = min(s_churn / (len(schedule.sigmas) - 1), 2 ** 0.5 - 1) if s_tmin <= sigma <= s_tmax else 0.0  # expect: FL000 GB0170
    sigma_hat = sigma * (gamma + 1)
    if gamma > 0:
        noise = torch.randn(model_output.shape, generator=generator, dtype=model_output.dtype)
        sample = sample + noise * s_noise * (sigma_hat ** 2 - sigma ** 2) ** 0.5
    pred_original_sample = sample - sigma_hat * model_output
    derivative = (sample - pred_original_sample) / sigma_hat
    schedule.step_index += 1  # expect: FL302
    return sample + derivative * (sigma_next - sigma_hat), pred_original_sample

def k_euler_step(model_output: Tensor, sample: Tensor, sigma: Tensor, sigma_next: Tensor,
                 prediction_type: str = "epsilon") -> Tuple[Tensor, Tensor]:
    # stateless k-diffusion Euler step: the sigmas are 0-d tensors fed to the step graph
    if prediction_type == "epsilon":
        denoised = sample - sigma * model_output
    else:  # v_prediction
        denoised = model_output * (-sigma / (sigma ** 2 + 1) ** 0.5) + sample / (sigma ** 2 + 1)
    derivative = (sample - denoised) / sigma
    return sample + derivative * (sigma_next - sigma), denoised

def preprocess_image(image: Tensor, do_normalize: bool = True) -> Tensor:
    """[0, 1] images, (C, H, W) or (N, C, H, W), cropped to a multiple of 8, mapped to [-1, 1]."""
    if image.ndim == 3:
        image = image.unsqueeze(0)
    if image.shape[1] == 4:  # RGBA from a PNG  # expect: FL203
        image = image[:, :3]
    h, w = (d - d % 8 for d in image.shape[-2:])
    if (h, w) != tuple(image.shape[-2:]):  # expect: FL203
        image = image[..., :h, :w]
    if do_normalize and image.min() < 0:  # expect: FL201
        warnings.warn("Passing `image` in [-1, 1] is deprecated; expected [0, 1].", FutureWarning)
        do_normalize = False
    return 2.0 * image - 1.0 if do_normalize else image

def postprocess_images(images: Tensor, output_type: str = "pt", do_denormalize: Optional[List[bool]] = None):
    do_denormalize = do_denormalize or [True] * images.shape[0]
    images = torch.stack([(img / 2 + 0.5).clamp(0, 1) if d else img for img, d in zip(images, do_denormalize)])  # expect: FL203
    if output_type == "pt":
        return images
    images = images.permute(0, 2, 3, 1).float()
    if output_type == "uint8":
        return (images * 255).round().to(torch.uint8)
    return images.detach().cpu().numpy()

def pack_latents(latents: Tensor, patch: int = 2) -> Tensor:
    b, c, h, w = latents.shape
    latents = latents.view(b, c, h // patch, patch, w // patch, patch)
    return latents.permute(0, 2, 4, 1, 3, 5).reshape(b, (h // patch) * (w // patch), c * patch * patch)

def clamp_latents_cb(step: int, t, latents: Tensor, limit: float = LATENT_CLAMP) -> Tensor:
    return latents.clamp(-limit, limit)

def nan_guard_cb(step: int, t, latents: Tensor) -> Optional[Tensor]:
    if torch.isnan(latents).any():  # expect: FL000 GB0170
        logger.warning("NaN latents at step %d, zeroing them", step)
        return torch.nan_to_num(latents)
    return None

DEFAULT_CALLBACKS: List[Callable[..., Optional[Tensor]]] = [partial(clamp_latents_cb, limit=LATENT_CLAMP),
                                                            nan_guard_cb]

def run_callbacks(callbacks, step: int, t, latents: Tensor) -> Tensor:
    for cb in callbacks:
        out = cb(step, t, latents)
        if out is not None:
            latents = out
    return latents

@torch.compile
def sampler_step(model, latents: Tensor, t: int, text_emb: Tensor, uncond_emb: Tensor, step: int = 0, eta=0.0):
    noise_pred = model(latents, t, text_emb, uncond_emb)
    prev, _ = ddim_step(noise_pred, t, latents, eta=eta)
    return run_callbacks(DEFAULT_CALLBACKS, step, t, prev)

def export_unet(out_dir: str, cfg: Optional[UNetConfig] = None):
    sample, t, ctx = torch.randn(2, 4, 8, 8), torch.tensor(981), torch.randn(2, 6, 12)
    torch.export.save(torch.export.export(TinyUNet(cfg).eval(), (sample, t, ctx)), f"{out_dir}/unet.pt2")
    guided = torch.jit.trace(ClassifierFreeGuidance(TinyUNet(cfg).eval()), (sample[:1], t, ctx[:1], ctx[1:]))
    guided.save(f"{out_dir}/unet_cfg.pt")
    control = torch.jit.trace(ControlAdapter(cfg).eval(), (sample, t, ctx, torch.rand(1, 3, 64, 64)))
    control.save(f"{out_dir}/controlnet.pt")
    torch.jit.trace(timestep_embedding, (torch.arange(2),)).save(f"{out_dir}/time_proj.pt")

def export_vae(out_dir: str, cfg: Optional[VAEConfig] = None):
    decoder = torch.jit.trace(VAEDecoderExport(AutoencoderKL(cfg).eval()), (torch.randn(1, 4, 8, 8),))
    decoder.save(f"{out_dir}/vae_decoder.pt")
    program = torch.export.export(AutoencoderKL(cfg).eval(), (torch.rand(1, 3, 64, 64),))
    torch.export.save(program, f"{out_dir}/vae_encoder.pt2")
    torch.jit.trace(SafetyFilter().eval(), (torch.rand(1, 3, 64, 64),)).save(f"{out_dir}/safety.pt")

def export_scheduler(out_dir: str):
    latents, noise = torch.randn(1, 4, 8, 8), torch.randn(1, 4, 8, 8)
    steps = {
        "ddim": torch.jit.trace(ddim_step, (noise, torch.tensor(981), latents)),
        "euler": torch.jit.trace(k_euler_step, (noise, latents, torch.tensor(14.6), torch.tensor(9.7))),
        "scale": torch.jit.trace(scale_model_input, (latents, torch.tensor(901))),
        "rescale": torch.jit.trace(rescale_noise_cfg, (noise, latents)),
    }
    for name, module in steps.items():
        module.save(f"{out_dir}/step_{name}.pt")

def export_processing(out_dir: str, image: Optional[Tensor] = None):
    image = torch.rand(1, 3, 64, 64) if image is None else image
    torch.jit.trace(preprocess_image, (image,)).save(f"{out_dir}/preprocess.pt")
    torch.jit.trace(postprocess_images, (image * 2 - 1,)).save(f"{out_dir}/postprocess.pt")
    return torch.export.export(pack_latents, (torch.randn(1, 4, 8, 8),))

EXPORTERS: Dict[str, Callable[[str], object]] = {
    "unet": export_unet, "vae": export_vae, "scheduler": export_scheduler, "processing": export_processing}

def _randn(*shape: int, k: int = 0, scale: float = 1.0) -> Tensor:
    return scale * torch.randn(*shape, generator=torch.Generator().manual_seed(k))

def _rand(*shape: int, k: int = 1) -> Tensor:
    return torch.rand(*shape, generator=torch.Generator().manual_seed(k))

_ctx = partial(_randn, k=3)
_unet = lambda: TinyUNet().eval()  # noqa: E731
_vae = lambda: AutoencoderKL().eval()  # noqa: E731

CASES = {
    "TinyUNet": lambda: (_unet(), (_randn(2, 4, 6, 10), torch.tensor(981), _ctx(2, 5, 12)),
                         (_randn(2, 4, 7, 10), torch.tensor(981), _ctx(2, 5, 12))),
    "ClassifierFreeGuidance": lambda: (ClassifierFreeGuidance(_unet(), guidance_rescale=0.7),
                                       (_randn(1, 4, 6, 10), torch.tensor(501), _ctx(1, 5, 12), _ctx(1, 5, 12, k=4))),
    "ControlAdapter": lambda: (ControlAdapter().eval(), (_randn(2, 4, 6, 10), torch.tensor(701), _ctx(2, 5, 12),
                                                         _rand(1, 3, 48, 80)),
                               (_randn(2, 4, 6, 10), torch.tensor(701), _ctx(2, 5, 12), _rand(1, 3, 40, 72))),
    "AutoencoderKL": lambda: (_vae(), (_rand(2, 3, 24, 40), True, torch.Generator().manual_seed(7))),
    "VAEDecoderExport": lambda: (VAEDecoderExport(_vae()), (_randn(2, 4, 6, 10),)),
    "SafetyFilter": lambda: (SafetyFilter().eval(), (_rand(3, 3, 24, 40),)),
    "sampler_step": lambda: (sampler_step, (ClassifierFreeGuidance(_unet()), _randn(1, 4, 6, 10), 801,
                                            _ctx(1, 5, 12), _ctx(1, 5, 12, k=4), 2)),
    "euler_step": lambda: (euler_step, (_randn(2, 4, 6, 10, k=5), _randn(2, 4, 6, 10), NoiseSchedule(start_index=2))),
}

TRACED = {
    "TinyUNet": lambda: (_unet(), (_randn(2, 4, 8, 8), torch.tensor(981), _ctx(2, 6, 12))),
    "ClassifierFreeGuidance": lambda: (ClassifierFreeGuidance(_unet()), (_randn(1, 4, 8, 8), torch.tensor(981),
                                                                         _ctx(1, 6, 12), _ctx(1, 6, 12, k=4))),
    "ControlAdapter": lambda: (ControlAdapter().eval(), (_randn(2, 4, 8, 8), torch.tensor(981), _ctx(2, 6, 12),
                                                         _rand(1, 3, 64, 64))),
    "timestep_embedding": lambda: (timestep_embedding, (torch.arange(2),)),
    "VAEDecoderExport": lambda: (VAEDecoderExport(_vae()), (_randn(1, 4, 8, 8),)),
    "AutoencoderKL": lambda: (_vae(), (_rand(1, 3, 32, 32),)),
    "SafetyFilter": lambda: (SafetyFilter().eval(), (_rand(2, 3, 32, 32),)),
    "ddim_step": lambda: (ddim_step, (_randn(1, 4, 8, 8, k=5), torch.tensor(981), _randn(1, 4, 8, 8))),
    "k_euler_step": lambda: (k_euler_step, (_randn(1, 4, 8, 8, k=5), _randn(1, 4, 8, 8), torch.tensor(14.6),
                                            torch.tensor(9.7))),
    "scale_model_input": lambda: (scale_model_input, (_randn(1, 4, 8, 8), torch.tensor(901))),
    "rescale_noise_cfg": lambda: (rescale_noise_cfg, (_randn(1, 4, 8, 8, k=5), _randn(1, 4, 8, 8))),
    "preprocess_image": lambda: (preprocess_image, (_rand(1, 3, 36, 40),)),
    "postprocess_images": lambda: (postprocess_images, (_randn(2, 3, 16, 16),)),
    "pack_latents": lambda: (pack_latents, (_randn(1, 4, 8, 8),)),
}
