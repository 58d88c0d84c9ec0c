"""Diffusion samplers and schedulers the way diffusers / k-diffusion / guided-diffusion write them:
numpy / math beta schedules, scheduler state objects with step counters, DDPM / DDIM / Euler steps,
timestep loops over Python ints and over tensors, classifier-free guidance (+ rescale), Imagen
dynamic thresholding, EDM preconditioning, EMA of weights, min-SNR loss weighting."""
import math
import random
from typing import List, Optional, Union

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

NUM_TRAIN_TIMESTEPS = 20
SIGMA_DATA = 0.5
LOG_EVERY = 2


# --------------------------------------------------------------------------- schedules

def make_beta_schedule(kind: str, n: int, beta_start: float = 1e-4, beta_end: float = 0.02) -> np.ndarray:
    if kind == "linear":
        return np.linspace(beta_start, beta_end, n, dtype=np.float64)
    if kind == "scaled_linear":
        return np.linspace(beta_start ** 0.5, beta_end ** 0.5, n, dtype=np.float64) ** 2
    if kind == "cosine":
        def alpha_bar(t):
            return math.cos((t + 0.008) / 1.008 * math.pi / 2) ** 2
        return np.array([min(1 - alpha_bar((i + 1) / n) / alpha_bar(i / n), 0.999) for i in range(n)])
    raise ValueError(kind)


def karras_sigmas(n: int, sigma_min: float = 0.02, sigma_max: float = 10.0, rho: float = 7.0) -> torch.Tensor:
    ramp = np.linspace(0, 1, n)
    min_inv, max_inv = sigma_min ** (1 / rho), sigma_max ** (1 / rho)
    sigmas = (max_inv + ramp * (min_inv - max_inv)) ** rho
    return torch.from_numpy(np.append(sigmas, 0.0)).float()


def _expand_to(v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    while v.dim() < x.dim():
        v = v.unsqueeze(-1)
    return v


# --------------------------------------------------------------------------- models

class TimestepEmbedding(nn.Module):
    def __init__(self, dim: int = 8, max_period: float = 10000.0):
        super().__init__()
        self.dim, self.max_period = dim, max_period
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.SiLU(), nn.Linear(dim, dim))

    def forward(self, t: torch.Tensor):
        half = self.dim // 2
        freqs = torch.exp(-math.log(self.max_period) * torch.arange(half, dtype=torch.float32) / half)
        args = t.float()[:, None] * freqs[None]
        return self.mlp(torch.cat([torch.cos(args), torch.sin(args)], dim=-1))


class TinyDenoiser(nn.Module):
    def __init__(self, ch: int = 3, dim: int = 8, cond_dim: int = 8):
        super().__init__()
        self.temb = TimestepEmbedding(dim)
        self.inp = nn.Conv2d(ch, dim, 3, padding=1)
        self.cond = nn.Linear(cond_dim, dim)
        self.out = nn.Conv2d(dim, ch, 3, padding=1)

    def forward(self, x, t, cond: Optional[torch.Tensor] = None):
        h = self.inp(x) + self.temb(t)[:, :, None, None]
        if cond is not None:
            h = h + self.cond(cond)[:, :, None, None]
        return self.out(F.silu(h))


# --------------------------------------------------------------------------- scheduler state objects

class DDPMScheduler:
    def __init__(self, num_train_timesteps: int = NUM_TRAIN_TIMESTEPS, beta_schedule: str = "cosine",
                 prediction_type: str = "epsilon", clip_sample: bool = True):
        self.num_train_timesteps = num_train_timesteps
        self.betas = torch.from_numpy(make_beta_schedule(beta_schedule, num_train_timesteps)).float()
        self.alphas = 1.0 - self.betas
        self.alphas_cumprod = torch.cumprod(self.alphas, dim=0)
        self.prediction_type = prediction_type
        self.clip_sample = clip_sample
        self.timesteps = torch.arange(num_train_timesteps).flip(0)
        self.num_inference_steps: Optional[int] = None

    def set_timesteps(self, num_inference_steps: int):
        self.num_inference_steps = num_inference_steps
        ratio = self.num_train_timesteps // num_inference_steps
        self.timesteps = torch.from_numpy((np.arange(0, num_inference_steps) * ratio)[::-1].copy()).long()

    def add_noise(self, x0, noise, timesteps: torch.Tensor):
        sqrt_ab = _expand_to(self.alphas_cumprod[timesteps] ** 0.5, x0)
        sqrt_1m_ab = _expand_to((1 - self.alphas_cumprod[timesteps]) ** 0.5, x0)
        return sqrt_ab * x0 + sqrt_1m_ab * noise

    def predict_x0(self, model_output, t, sample):
        ab = self.alphas_cumprod[t]
        if self.prediction_type == "epsilon":
            x0 = (sample - (1 - ab) ** 0.5 * model_output) / ab ** 0.5
        else:  # "v_prediction"
            x0 = ab ** 0.5 * sample - (1 - ab) ** 0.5 * model_output
        return x0.clamp(-1.0, 1.0) if self.clip_sample else x0

    def step(self, model_output, t: int, sample, generator: Optional[torch.Generator] = None):
        prev_t = t - self.num_train_timesteps // (self.num_inference_steps or self.num_train_timesteps)
        ab_t = self.alphas_cumprod[t]
        ab_prev = self.alphas_cumprod[prev_t] if prev_t >= 0 else torch.tensor(1.0)
        beta_t = 1 - ab_t / ab_prev
        x0 = self.predict_x0(model_output, t, sample)
        mean = (ab_prev ** 0.5 * beta_t / (1 - ab_t)) * x0 + ((1 - beta_t) ** 0.5 * (1 - ab_prev) / (1 - ab_t)) * sample
        if t > 0:
            var = (1 - ab_prev) / (1 - ab_t) * beta_t
            mean = mean + var.clamp_min(1e-20) ** 0.5 * torch.randn(sample.shape, generator=generator)  # expect: FL000 GB0055
        return mean


class DDIMScheduler(DDPMScheduler):
    def __init__(self, eta: float = 0.0, **kw):
        super().__init__(**kw)
        self.eta = eta
        self.final_alpha_cumprod = torch.tensor(1.0)

    def step(self, model_output, timestep: Union[int, torch.Tensor], sample, generator=None):
        if isinstance(timestep, torch.Tensor):
            timestep = timestep.item()  # expect: FL000 GB0124
        prev_t = timestep - self.num_train_timesteps // self.num_inference_steps
        ab_t = self.alphas_cumprod[timestep]
        ab_prev = self.alphas_cumprod[prev_t] if prev_t >= 0 else self.final_alpha_cumprod
        x0 = self.predict_x0(model_output, timestep, sample)
        eps = (sample - ab_t ** 0.5 * x0) / (1 - ab_t) ** 0.5
        sigma = self.eta * ((1 - ab_prev) / (1 - ab_t) * (1 - ab_t / ab_prev)) ** 0.5
        direction = (1 - ab_prev - sigma ** 2) ** 0.5 * eps
        return ab_prev ** 0.5 * x0 + direction


class EulerDiscreteScheduler:
    """k-diffusion Euler on a Karras sigma ladder; the scheduler keeps its own step index."""

    def __init__(self, num_inference_steps: int = 4):
        self.sigmas = karras_sigmas(num_inference_steps)
        self._step_index = 0

    @property
    def init_noise_sigma(self) -> float:
        return float((self.sigmas.max() ** 2 + 1) ** 0.5)  # expect: FL000 GB0124

    def scale_model_input(self, sample):
        sigma = self.sigmas[self._step_index]
        return sample / ((sigma ** 2 + 1) ** 0.5)

    def step(self, model_output, sample):
        sigma, sigma_next = self.sigmas[self._step_index], self.sigmas[self._step_index + 1]
        x0 = sample - sigma * model_output
        d = (sample - x0) / sigma
        self._step_index += 1  # expect: FL302
        return sample + d * (sigma_next - sigma)


class EMAModel:
    """diffusers-style EMA: Python step counter, warmup decay, shadow params."""

    def __init__(self, model: nn.Module, decay: float = 0.9999, min_decay: float = 0.0):
        self.shadow = [p.detach().clone() for p in model.parameters()]
        self.decay, self.min_decay = decay, min_decay
        self.optimization_step = 0

    def get_decay(self, step: int) -> float:
        value = (1 + step) / (10 + step)
        return max(self.min_decay, min(value, self.decay))

    @torch.no_grad()
    def step(self, parameters):
        self.optimization_step += 1  # expect: FL302
        decay = self.get_decay(self.optimization_step)
        for s, p in zip(self.shadow, parameters):
            s.lerp_(p.detach(), 1 - decay)


class BufferEMA(nn.Module):
    """EMA that keeps its update counter in a buffer (timm ModelEmaV3-like)."""

    def __init__(self, decay: float = 0.999, warmup_power: float = 2 / 3):
        super().__init__()
        self.model = TinyDenoiser()
        self.shadow = TinyDenoiser().requires_grad_(False)
        self.shadow.load_state_dict(self.model.state_dict())
        self.decay, self.warmup_power = decay, warmup_power
        self.register_buffer("num_updates", torch.zeros((), dtype=torch.float32))

    @torch.no_grad()
    def update(self):
        self.num_updates += 1
        decay = torch.clamp(1 - (1 + self.num_updates) ** -self.warmup_power, max=self.decay)
        for e, p in zip(self.shadow.parameters(), self.model.parameters()):
            e.lerp_(p, 1 - decay)

    def forward(self, x, t):
        out = self.model(x, t)
        self.update()
        return out


# --------------------------------------------------------------------------- guidance / preconditioning modules

class CFGDenoiser(nn.Module):
    """Classifier-free guidance with one batched call and optional guidance rescale (Lin et al.)."""

    def __init__(self, guidance_scale: float = 5.0, guidance_rescale: float = 0.7):
        super().__init__()
        self.model = TinyDenoiser()
        self.null_cond = nn.Parameter(torch.zeros(1, 8))
        self.guidance_scale, self.guidance_rescale = guidance_scale, guidance_rescale

    def forward(self, x, t, cond):
        x_in = torch.cat([x, x])
        t_in = torch.cat([t, t])
        c_in = torch.cat([self.null_cond.expand_as(cond), cond])
        uncond, cond_out = self.model(x_in, t_in, c_in).chunk(2)
        guided = uncond + self.guidance_scale * (cond_out - uncond)
        if self.guidance_rescale > 0:
            std_pos = cond_out.std(dim=list(range(1, cond_out.ndim)), keepdim=True)
            std_cfg = guided.std(dim=list(range(1, guided.ndim)), keepdim=True)
            rescaled = guided * (std_pos / std_cfg)
            guided = self.guidance_rescale * rescaled + (1 - self.guidance_rescale) * guided
        return guided


class MaskedCFGDenoiser(nn.Module):
    """Per-sample guidance: samples whose prompt was dropped skip the conditional branch."""

    def __init__(self, guidance_scale: float = 4.0):
        super().__init__()
        self.model = TinyDenoiser()
        self.guidance_scale = guidance_scale

    def forward(self, x, t, cond, has_prompt):
        uncond = self.model(x, t)
        if has_prompt.any():  # expect: FL000 GB0170
            cond_out = self.model(x, t, cond)
            w = torch.where(has_prompt, self.guidance_scale, 1.0)[:, None, None, None]
            return uncond + w * (cond_out - uncond)
        return uncond


class EDMPrecond(nn.Module):
    """Karras et al. preconditioning: noise-level conditioning through c_skip / c_out / c_in / c_noise."""

    def __init__(self, sigma_data: float = SIGMA_DATA):
        super().__init__()
        self.sigma_data = sigma_data
        self.model = TinyDenoiser()

    def forward(self, x, sigma):
        sigma = sigma.reshape(-1, 1, 1, 1)
        c_skip = self.sigma_data ** 2 / (sigma ** 2 + self.sigma_data ** 2)
        c_out = sigma * self.sigma_data / (sigma ** 2 + self.sigma_data ** 2).sqrt()
        c_in = 1 / (self.sigma_data ** 2 + sigma ** 2).sqrt()
        c_noise = sigma.log().flatten() / 4
        return c_skip * x + c_out * self.model(c_in * x, c_noise)


class NoiseRegimeDenoiser(nn.Module):
    """Switches between two heads depending on the (scalar) noise level, as some cascaded samplers do."""

    def __init__(self, switch_sigma: float = 1.0):
        super().__init__()
        self.high, self.low = TinyDenoiser(), TinyDenoiser()
        self.switch_sigma = switch_sigma

    def forward(self, x, sigma):
        t = sigma.expand(x.shape[0])
        if sigma.item() > self.switch_sigma:  # expect: FL000 GB0124
            return self.high(x, t.log())
        return self.low(x, t.log())


class BroadcastTimestepDenoiser(nn.Module):
    """Accepts one timestep for the whole batch or one per sample."""

    def __init__(self):
        super().__init__()
        self.model = TinyDenoiser()

    def forward(self, x, t):
        if t.shape[0] != x.shape[0]:  # expect: FL301
            t = t.expand(x.shape[0])
        return self.model(x, t)


class EulerSamplerStep(nn.Module):
    """One Euler step per call, driven by a scheduler object that counts its own steps."""

    def __init__(self, num_inference_steps: int = 4):
        super().__init__()
        self.model = TinyDenoiser()
        self.scheduler = EulerDiscreteScheduler(num_inference_steps)

    def forward(self, x):
        if self.scheduler._step_index == 0:
            x = x * self.scheduler.init_noise_sigma
        sigma = self.scheduler.sigmas[self.scheduler._step_index]
        eps = self.model(self.scheduler.scale_model_input(x), sigma.log().expand(x.shape[0]))
        return self.scheduler.step(eps, x)


# --------------------------------------------------------------------------- compiled functions

@torch.compile
def q_sample(scheduler: DDPMScheduler, x0, noise, timesteps):
    return scheduler.add_noise(x0, noise, timesteps)


@torch.compile
def ddim_step_tensor_t(scheduler: DDIMScheduler, model: nn.Module, x, t: torch.Tensor):
    eps = model(x, t.expand(x.shape[0]))
    return scheduler.step(eps, t, x)


@torch.compile
def ddim_sample_loop(model: nn.Module, scheduler: DDIMScheduler, x, timesteps: List[int]):
    for t in timesteps:
        t_batch = torch.full((x.shape[0],), t, dtype=torch.long)
        eps = model(x, t_batch)
        x = scheduler.step(eps, t, x)
    return x


@torch.compile
def ddpm_sample_loop(model: nn.Module, scheduler: DDPMScheduler, x):
    for t in scheduler.timesteps:
        eps = model(x, t.expand(x.shape[0]))
        ab_t = scheduler.alphas_cumprod[t]  # expect: FL000 GB0033
        x0 = ((x - (1 - ab_t) ** 0.5 * eps) / ab_t ** 0.5).clamp(-1, 1)
        if t > 0:
            x = scheduler.add_noise(x0, eps, t - 1)
        else:
            x = x0
    return x


@torch.compile
def ddpm_step_int(scheduler: DDPMScheduler, model: nn.Module, x, t: int, generator: Optional[torch.Generator] = None):
    eps = model(x, torch.full((x.shape[0],), t))
    return scheduler.step(eps, t, x, generator=generator)


@torch.compile
def dynamic_threshold(x0, percentile: float = 0.9):
    b = x0.shape[0]
    s = torch.quantile(x0.abs().reshape(b, -1), percentile, dim=1)
    s = _expand_to(torch.maximum(s, torch.ones_like(s)), x0)
    return x0.clamp(-s, s) / s


@torch.compile
def dynamic_threshold_per_sample(x0, percentile: float = 0.9):
    out = []
    for sample in x0:
        s = max(sample.abs().flatten().quantile(percentile).item(), 1.0)  # expect: FL000 GB0124
        out.append(sample.clamp(-s, s) / s)
    return torch.stack(out)


@torch.compile
def sample_euler(model: nn.Module, x, sigmas):
    for i in range(len(sigmas) - 1):  # expect: FL301
        sigma = sigmas[i]
        denoised = x - sigma * model(x, sigma.log().expand(x.shape[0]))
        d = (x - denoised) / sigma
        x = x + d * (sigmas[i + 1] - sigma)
    return x


@torch.compile
def sample_euler_logged(model: nn.Module, x, sigmas):
    n = sigmas.shape[0] - 1
    for i in range(n):
        sigma = sigmas[i]
        denoised = x - sigma * model(x, sigma.log().expand(x.shape[0]))
        if i % LOG_EVERY == 0:
            print(f"step {i}/{n} sigma={sigma.item():.3f}")  # expect: FL000 GB0124
        x = denoised + sigmas[i + 1] * (x - denoised) / sigma
    return x


@torch.compile
def diffusion_training_loss(model: nn.Module, scheduler: DDPMScheduler, x0, snr_gamma: float = 5.0):
    b = x0.shape[0]
    t = torch.randint(0, scheduler.num_train_timesteps, (b,))
    noise = torch.randn_like(x0)
    eps = model(scheduler.add_noise(x0, noise, t), t)
    snr = scheduler.alphas_cumprod[t] / (1 - scheduler.alphas_cumprod[t])
    weight = torch.minimum(snr, torch.full_like(snr, snr_gamma)) / snr
    return (weight * F.mse_loss(eps, noise, reduction="none").mean(dim=(1, 2, 3))).mean()


@torch.compile
def single_timestep_loss(model: nn.Module, scheduler: DDPMScheduler, x0):
    t = random.randint(0, scheduler.num_train_timesteps - 1)
    noise = torch.randn_like(x0)
    t_batch = torch.full((x0.shape[0],), t, dtype=torch.long)
    return F.mse_loss(model(scheduler.add_noise(x0, noise, t_batch), t_batch), noise)


@torch.compile
def ema_train_step(model: nn.Module, ema: EMAModel, x, t):
    out = model(x, t)
    ema.step(model.parameters())
    return out


@torch.compile
def to_uint8_list(x):
    img = ((x.clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8)
    return img.permute(0, 2, 3, 1).tolist()  # expect: FL000 GB0109


# --------------------------------------------------------------------------- cases

def _ddim(steps: int = 4, **kw):
    s = DDIMScheduler(**kw)
    s.set_timesteps(steps)
    return s


def _ddpm(steps: int = 4):
    s = DDPMScheduler(beta_schedule="linear")
    s.set_timesteps(steps)
    return s


CASES = {
    "CFGDenoiser": lambda: (CFGDenoiser(), (torch.randn(2, 3, 4, 5), torch.tensor([7, 3]), torch.randn(2, 8))),
    "MaskedCFGDenoiser": lambda: (MaskedCFGDenoiser(), (torch.randn(2, 3, 4, 5), torch.tensor([7, 3]), torch.randn(2, 8),
                                                        torch.tensor([True, False]))),
    "MaskedCFGDenoiser_no_prompts": lambda: (MaskedCFGDenoiser(), (torch.randn(2, 3, 4, 5), torch.tensor([7, 3]),
                                                                   torch.randn(2, 8), torch.tensor([False, False]))),
    "EDMPrecond": lambda: (EDMPrecond(), (torch.randn(2, 3, 4, 5), torch.tensor([0.3, 2.0]))),
    "NoiseRegimeDenoiser": lambda: (NoiseRegimeDenoiser(), (torch.randn(2, 3, 4, 5), torch.tensor(2.5))),
    "NoiseRegimeDenoiser_low": lambda: (NoiseRegimeDenoiser(), (torch.randn(2, 3, 4, 5), torch.tensor(0.2))),
    "BroadcastTimestepDenoiser": lambda: (BroadcastTimestepDenoiser(), (torch.randn(3, 3, 4, 5), torch.tensor([5])),
                                          (torch.randn(4, 3, 6, 7), torch.tensor([5, 4, 3, 2]))),
    "EulerSamplerStep": lambda: (EulerSamplerStep(), (torch.randn(2, 3, 4, 5),)),
    "BufferEMA": lambda: (BufferEMA(), (torch.randn(2, 3, 4, 5), torch.tensor([7, 3]))),
    "q_sample": lambda: (q_sample, (DDPMScheduler(), torch.randn(2, 3, 4, 5), torch.randn(2, 3, 4, 5), torch.tensor([2, 17]))),
    "ddim_step_tensor_t": lambda: (ddim_step_tensor_t, (_ddim(), TinyDenoiser(), torch.randn(2, 3, 4, 5), torch.tensor(15))),
    "ddim_sample_loop": lambda: (ddim_sample_loop, (TinyDenoiser(), _ddim(eta=0.0, prediction_type="v_prediction"), torch.randn(2, 3, 4, 5), [15, 10, 5, 0])),
    "ddpm_sample_loop": lambda: (ddpm_sample_loop, (TinyDenoiser(), _ddpm(3), torch.randn(2, 3, 4, 5))),
    "ddpm_step_int": lambda: (ddpm_step_int, (_ddpm(), TinyDenoiser(), torch.randn(2, 3, 4, 5), 10,
                                              torch.Generator().manual_seed(0))),
    "dynamic_threshold": lambda: (dynamic_threshold, (torch.randn(2, 3, 4, 5) * 2,)),
    "dynamic_threshold_per_sample": lambda: (dynamic_threshold_per_sample, (torch.randn(2, 3, 4, 5) * 2,)),
    "sample_euler": lambda: (sample_euler, (TinyDenoiser(), torch.randn(2, 3, 4, 5), karras_sigmas(3)),
                             (TinyDenoiser(), torch.randn(3, 3, 6, 7), karras_sigmas(5))),
    "sample_euler_logged": lambda: (sample_euler_logged, (TinyDenoiser(), torch.randn(2, 3, 4, 5), karras_sigmas(3))),
    "diffusion_training_loss": lambda: (diffusion_training_loss, (TinyDenoiser(), DDPMScheduler(), torch.randn(2, 3, 4, 5))),
    "single_timestep_loss": lambda: (single_timestep_loss, (TinyDenoiser(), DDPMScheduler(), torch.randn(2, 3, 4, 5))),
    "ema_train_step": lambda: (ema_train_step, (m := TinyDenoiser(), EMAModel(m), torch.randn(2, 3, 4, 5), torch.tensor([7, 3]))),
    "to_uint8_list": lambda: (to_uint8_list, (torch.randn(2, 3, 4, 5),)),
}
