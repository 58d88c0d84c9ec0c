"""Visuomotor diffusion policy after Chi et al. / robomimic / LeRobot: spatial-softmax image encoder
+ proprioception, FiLM-conditioned 1-D temporal U-Net over action chunks, DDPM/DDIM sampling, min-max
action normalisation, receding-horizon chunk execution, joint-limit safety and episode bookkeeping."""
import logging
import math
import random
import time
import warnings
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("diffusion_policy")
logger.addHandler(logging.NullHandler())

ACTION_DIM = 7  # 6 arm joints + gripper width
PROPRIO_DIM = 9
JOINT_LOWER = (-2.9, -1.8, -2.9, -3.0, -2.9, -0.1, 0.0)
JOINT_UPPER = (2.9, 1.8, 2.9, -0.05, 2.9, 3.7, 0.08)
MAX_JOINT_DELTA = 0.35  # rad per control step at 10 Hz
SUCCESS_REWARD = 0.95
MAX_LOGGED_EPISODES = 500
_EPISODES_SEEN = 0
EPISODE_LOG: List["EpisodeRecord"] = []


@dataclass
class SchedulerConfig:
    num_train_timesteps: int = 100
    beta_start: float = 1e-4
    beta_end: float = 0.02
    clip_sample: bool = True
    clip_sample_range: float = 1.0
    prediction_type: str = "epsilon"


@dataclass
class PolicyConfig:
    horizon: int = 16
    n_obs_steps: int = 2
    n_action_steps: int = 8
    action_dim: int = ACTION_DIM
    proprio_dim: int = PROPRIO_DIM
    crop_size: int = 20
    image_feature_dim: int = 32
    num_keypoints: int = 8
    down_dims: Tuple[int, ...] = (16, 32, 48)
    kernel_size: int = 3
    n_groups: int = 4
    step_embed_dim: int = 16
    num_inference_steps: int = 3
    cond_predict_scale: bool = True
    use_ddim: bool = False
    ddim_eta: float = 0.0
    check_finite: bool = False


@dataclass
class EpisodeRecord:
    episode_id: int
    length: int
    success: bool
    first_success_step: int
    mean_reward: float
    extras: Dict[str, float] = field(default_factory=dict)


# --------------------------------------------------------------------------- noise schedulers

class DDPMScheduler:
    def __init__(self, cfg: SchedulerConfig):
        self.cfg = cfg
        betas = torch.linspace(cfg.beta_start ** 0.5, cfg.beta_end ** 0.5, cfg.num_train_timesteps) ** 2
        self.alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
        self.one = torch.tensor(1.0)
        self.set_timesteps(cfg.num_train_timesteps)

    def set_timesteps(self, num_inference_steps: int):
        self.num_inference_steps = num_inference_steps
        self.step_ratio = self.cfg.num_train_timesteps // num_inference_steps
        steps = (np.arange(0, num_inference_steps) * self.step_ratio).round()[::-1]
        self.timesteps = torch.from_numpy(steps.copy().astype(np.int64))
        self.timestep_list = [int(t) for t in steps]  # DDIM path iterates plain ints

    def add_noise(self, original: torch.Tensor, noise: torch.Tensor, timesteps: torch.Tensor):
        acp = self.alphas_cumprod.to(original.device)[timesteps]
        shape = (-1,) + (1,) * (original.dim() - 1)
        return acp.sqrt().view(shape) * original + (1 - acp).sqrt().view(shape) * noise

    def step(self, model_output: torch.Tensor, timestep, sample: torch.Tensor) -> torch.Tensor:
        t = int(timestep)  # the loop hands us 0-d tensors from self.timesteps  # expect: FL000 GB0124
        prev_t = t - self.step_ratio
        acp_t = self.alphas_cumprod[t]
        acp_prev = self.alphas_cumprod[prev_t] if prev_t >= 0 else self.one
        beta_prod_t, beta_prod_prev = 1 - acp_t, 1 - acp_prev
        current_alpha = acp_t / acp_prev
        current_beta = 1 - current_alpha
        if self.cfg.prediction_type == "sample":
            x0 = model_output
        else:
            x0 = (sample - beta_prod_t.sqrt() * model_output) / acp_t.sqrt()
        if self.cfg.clip_sample:
            x0 = x0.clamp(-self.cfg.clip_sample_range, self.cfg.clip_sample_range)
        x0_coeff = acp_prev.sqrt() * current_beta / beta_prod_t
        xt_coeff = current_alpha.sqrt() * beta_prod_prev / beta_prod_t
        prev_sample = x0_coeff * x0 + xt_coeff * sample
        if t > 0:
            variance = (beta_prod_prev / beta_prod_t * current_beta).clamp(min=1e-20)
            prev_sample = prev_sample + variance.sqrt() * torch.randn_like(sample)
        return prev_sample


@torch.compile
def ddim_step(model_output, sample, alpha_prod_t, alpha_prod_prev, eta: float = 0.0, clip: float = 1.0):
    beta_prod_t = 1 - alpha_prod_t
    x0 = (sample - beta_prod_t.sqrt() * model_output) / alpha_prod_t.sqrt()
    x0 = x0.clamp(-clip, clip)
    eps = (sample - alpha_prod_t.sqrt() * x0) / beta_prod_t.sqrt()
    variance = (1 - alpha_prod_prev) / beta_prod_t * (1 - alpha_prod_t / alpha_prod_prev)
    std = eta * variance.sqrt()
    direction = (1 - alpha_prod_prev - std ** 2).clamp_min(0).sqrt() * eps
    prev_sample = alpha_prod_prev.sqrt() * x0 + direction
    if eta > 0:
        prev_sample = prev_sample + std * torch.randn_like(sample)
    return prev_sample


# --------------------------------------------------------------------------- temporal U-Net

def conv1d_block(in_ch: int, out_ch: int, kernel_size: int, n_groups: int = 4) -> nn.Sequential:
    return nn.Sequential(nn.Conv1d(in_ch, out_ch, kernel_size, padding=kernel_size // 2),
                         nn.GroupNorm(n_groups, out_ch), nn.Mish())


class SinusoidalPosEmb(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        half = self.dim // 2
        freqs = torch.exp(torch.arange(half, device=t.device) * -(math.log(10000.0) / (half - 1)))
        args = t.float()[:, None] * freqs[None, :]
        return torch.cat((args.sin(), args.cos()), dim=-1)


class ConditionalResidualBlock1D(nn.Module):
    """Two conv blocks; the condition predicts a per-channel FiLM scale and bias."""

    def __init__(self, in_ch, out_ch, cond_dim, kernel_size=3, n_groups=4, cond_predict_scale=True):
        super().__init__()
        self.blocks = nn.ModuleList([conv1d_block(in_ch, out_ch, kernel_size, n_groups),
                                     conv1d_block(out_ch, out_ch, kernel_size, n_groups)])
        self.cond_predict_scale = cond_predict_scale
        cond_ch = out_ch * 2 if cond_predict_scale else out_ch
        self.cond_encoder = nn.Sequential(nn.Mish(), nn.Linear(cond_dim, cond_ch))
        self.residual_conv = nn.Conv1d(in_ch, out_ch, 1) if in_ch != out_ch else nn.Identity()

    def forward(self, x, cond):
        out = self.blocks[0](x)
        embed = self.cond_encoder(cond).unsqueeze(-1)
        if self.cond_predict_scale:
            scale, bias = embed.chunk(2, dim=1)
            out = scale * out + bias
        else:
            out = out + embed
        out = self.blocks[1](out)
        return out + self.residual_conv(x)


class ConditionalUnet1D(nn.Module):
    def __init__(self, input_dim: int, global_cond_dim: Optional[int], cfg: PolicyConfig):
        super().__init__()
        dims = [input_dim] + list(cfg.down_dims)
        in_out = list(zip(dims[:-1], dims[1:]))
        ks, ng, sp = cfg.kernel_size, cfg.n_groups, cfg.cond_predict_scale
        self.diffusion_step_encoder = nn.Sequential(
            SinusoidalPosEmb(cfg.step_embed_dim),
            nn.Linear(cfg.step_embed_dim, cfg.step_embed_dim * 4), nn.Mish(),
            nn.Linear(cfg.step_embed_dim * 4, cfg.step_embed_dim))
        cond_dim = cfg.step_embed_dim + (global_cond_dim or 0)
        self.downsample_factor = 2 ** (len(in_out) - 1)
        self.down_modules = nn.ModuleList()
        for i, (d_in, d_out) in enumerate(in_out):
            last = i == len(in_out) - 1
            self.down_modules.append(nn.ModuleList([
                ConditionalResidualBlock1D(d_in, d_out, cond_dim, ks, ng, sp),
                ConditionalResidualBlock1D(d_out, d_out, cond_dim, ks, ng, sp),
                nn.Conv1d(d_out, d_out, 3, 2, 1) if not last else nn.Identity()]))
        mid = dims[-1]
        self.mid_modules = nn.ModuleList([ConditionalResidualBlock1D(mid, mid, cond_dim, ks, ng, sp)
                                          for _ in range(2)])
        self.up_modules = nn.ModuleList()
        for d_in, d_out in reversed(in_out[1:]):
            self.up_modules.append(nn.ModuleList([
                ConditionalResidualBlock1D(d_out * 2, d_in, cond_dim, ks, ng, sp),
                ConditionalResidualBlock1D(d_in, d_in, cond_dim, ks, ng, sp),
                nn.ConvTranspose1d(d_in, d_in, 4, 2, 1)]))
        self.final_conv = nn.Sequential(conv1d_block(dims[1], dims[1], ks, ng), nn.Conv1d(dims[1], input_dim, 1))

    def forward(self, sample: torch.Tensor, timestep, global_cond: Optional[torch.Tensor] = None):
        # sample: (B, T, action_dim) -> channels-first for the temporal convs
        x = sample.transpose(1, 2)
        horizon = x.shape[-1]
        pad = (-horizon) % self.downsample_factor
        if pad:  # expect: FL301
            x = F.pad(x, (0, pad), mode="replicate")
        if not torch.is_tensor(timestep):
            timestep = torch.tensor([timestep], dtype=torch.long, device=sample.device)
        elif timestep.dim() == 0:
            timestep = timestep[None].to(sample.device)
        timestep = timestep.expand(sample.shape[0])
        feat = self.diffusion_step_encoder(timestep)
        if global_cond is not None:
            feat = torch.cat([feat, global_cond], dim=-1)

        skips = []
        for res1, res2, down in self.down_modules:
            x = res2(res1(x, feat), feat)
            skips.append(x)
            x = down(x)
        for block in self.mid_modules:
            x = block(x, feat)
        for res1, res2, up in self.up_modules:
            x = torch.cat((x, skips.pop()), dim=1)
            x = up(res2(res1(x, feat), feat))
        x = self.final_conv(x)
        if pad:
            x = x[..., :horizon]
        return x.transpose(1, 2)


# --------------------------------------------------------------------------- observation encoders

class SpatialSoftmax(nn.Module):
    def __init__(self, in_channels: int, num_kp: int, temperature: float = 1.0):
        super().__init__()
        self.keypoint_conv = nn.Conv2d(in_channels, num_kp, 1)
        self.register_buffer("temperature", torch.tensor(temperature))

    def forward(self, feat: torch.Tensor) -> torch.Tensor:
        h, w = feat.shape[-2:]
        logits = self.keypoint_conv(feat).flatten(2) / self.temperature
        attn = logits.softmax(dim=-1)
        pos_y, pos_x = torch.meshgrid(torch.linspace(-1, 1, h, device=feat.device),
                                      torch.linspace(-1, 1, w, device=feat.device), indexing="ij")
        ex = (attn * pos_x.reshape(1, 1, -1)).sum(-1)
        ey = (attn * pos_y.reshape(1, 1, -1)).sum(-1)
        return torch.stack([ex, ey], dim=-1).flatten(1)


class CropRandomizer(nn.Module):
    """Random crops while training, center crop at eval (robomimic's CropRandomizer)."""

    def __init__(self, crop_h: int, crop_w: int):
        super().__init__()
        self.crop_h, self.crop_w = crop_h, crop_w

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        h, w = images.shape[-2:]
        if h == self.crop_h and w == self.crop_w:  # expect: FL301
            return images
        if self.training:
            top = random.randint(0, h - self.crop_h)
            left = random.randint(0, w - self.crop_w)
        else:
            top, left = (h - self.crop_h) // 2, (w - self.crop_w) // 2
        return images[..., top:top + self.crop_h, left:left + self.crop_w]  # expect: FL000 GB0213


class ImageEncoder(nn.Module):
    def __init__(self, in_channels: int = 3, feature_dim: int = 32, num_kp: int = 8):
        super().__init__()
        self.trunk = nn.Sequential(
            nn.Conv2d(in_channels, 16, 3, stride=2, padding=1), nn.GroupNorm(4, 16), nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1), nn.GroupNorm(4, 16), nn.ReLU())
        self.pool = SpatialSoftmax(16, num_kp)
        self.proj = nn.Linear(num_kp * 2, feature_dim)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        images = images.float()
        if images.max() > 1.0:  # raw camera frames come in as 0..255  # expect: FL000 GB0170
            images = images / 255.0
        return self.proj(self.pool(self.trunk(images)))


class ObservationEncoder(nn.Module):
    def __init__(self, cfg: PolicyConfig):
        super().__init__()
        self.crop = CropRandomizer(cfg.crop_size, cfg.crop_size)
        self.image_encoder = ImageEncoder(3, cfg.image_feature_dim, cfg.num_keypoints)
        self.proprio_proj = nn.Linear(cfg.proprio_dim, 16)
        self.check_finite = cfg.check_finite
        self.output_dim = cfg.image_feature_dim + 16

    def forward(self, obs: Dict[str, torch.Tensor]) -> torch.Tensor:
        image, proprio = obs["image"], obs["proprio"]
        b, n_obs = image.shape[:2]
        img_feat = self.image_encoder(self.crop(image.flatten(0, 1))).view(b, n_obs, -1)
        if self.check_finite and not torch.isfinite(proprio).all():  # expect: FL000 GB0170
            warnings.warn("non-finite proprioception from the robot driver; zero-filling")  # expect: FL000 GB0007
            proprio = torch.nan_to_num(proprio, nan=0.0, posinf=0.0, neginf=0.0)
        return torch.cat([img_feat, self.proprio_proj(proprio)], dim=-1).flatten(1)


# --------------------------------------------------------------------------- normalisation

class LinearNormalizer(nn.Module):
    """Per-key affine map to [-1, 1] fitted from dataset min/max."""

    def __init__(self):
        super().__init__()
        self.params = nn.ParameterDict()

    @torch.no_grad()
    def fit(self, data: Dict[str, torch.Tensor], range_eps: float = 1e-4):
        for key, value in data.items():
            flat = value.reshape(-1, value.shape[-1]).float()
            lo = flat.min(0).values
            span = flat.max(0).values - lo
            degenerate = span < range_eps  # constant dims (e.g. a locked joint) map to 0
            span[degenerate], lo[degenerate] = 2.0, -1.0
            scale = 2.0 / span
            offset = -1.0 - scale * lo
            self.params[f"{key}_scale"] = nn.Parameter(scale, requires_grad=False)
            self.params[f"{key}_offset"] = nn.Parameter(offset, requires_grad=False)

    def normalize(self, key: str, x: torch.Tensor) -> torch.Tensor:
        return x * self.params[f"{key}_scale"] + self.params[f"{key}_offset"]

    def unnormalize(self, key: str, x: torch.Tensor) -> torch.Tensor:
        return (x - self.params[f"{key}_offset"]) / self.params[f"{key}_scale"]

    def forward(self, batch: Dict[str, torch.Tensor], inverse: bool = False) -> Dict[str, torch.Tensor]:
        out = {}
        for key, value in batch.items():
            try:
                scale, offset = self.params[f"{key}_scale"], self.params[f"{key}_offset"]
            except (KeyError, AttributeError):  # ParameterDict raises AttributeError on a missing key
                logger.debug("no normalizer stats for %r, passing through", key)  # expect: FL000 GB0291
                out[key] = value  # images and other un-normalised keys pass through
                continue
            out[key] = (value - offset) / scale if inverse else value * scale + offset
        return out


# --------------------------------------------------------------------------- policy

def log_denoise_progress(step: int, timestep, trajectory: torch.Tensor):
    logger.debug(f"denoise step {step} (t={timestep}): |x|={trajectory.norm():.3f}")  # expect: FL000 GB0021; FL000 GB0291


class DiffusionPolicy(nn.Module):
    def __init__(self, cfg: PolicyConfig, sched_cfg: Optional[SchedulerConfig] = None,
                 track_latency: bool = False):
        super().__init__()
        self.cfg = cfg
        self.obs_encoder = ObservationEncoder(cfg)
        self.model = ConditionalUnet1D(cfg.action_dim, self.obs_encoder.output_dim * cfg.n_obs_steps, cfg)
        self.normalizer = LinearNormalizer()
        self.noise_scheduler = DDPMScheduler(sched_cfg or SchedulerConfig())
        self.noise_scheduler.set_timesteps(cfg.num_inference_steps)
        self.track_latency = track_latency
        self.last_latency_ms = 0.0

    def _conditional_sample(self, shape, global_cond, callback=None):
        trajectory = torch.randn(shape, device=global_cond.device)
        sched = self.noise_scheduler
        if self.cfg.use_ddim:
            for t in sched.timestep_list:
                acp_prev = sched.alphas_cumprod[t - sched.step_ratio] if t >= sched.step_ratio else sched.one
                eps = self.model(trajectory, t, global_cond)
                trajectory = ddim_step(eps, trajectory, sched.alphas_cumprod[t], acp_prev, self.cfg.ddim_eta)
        else:
            for i, t in enumerate(sched.timesteps):
                trajectory = sched.step(self.model(trajectory, t, global_cond), t, trajectory)
                if callback is not None:
                    callback(i, t, trajectory)
        return trajectory

    def forward(self, obs: Dict[str, torch.Tensor], callback: Optional[Callable] = None) -> Dict[str, torch.Tensor]:
        start_time = time.perf_counter() if self.track_latency else None  # expect: FL000 GB0007
        nobs = {"image": obs["image"], "proprio": self.normalizer.normalize("proprio", obs["proprio"])}
        batch = nobs["proprio"].shape[0]
        cond = self.obs_encoder(nobs)
        naction = self._conditional_sample((batch, self.cfg.horizon, self.cfg.action_dim), cond, callback)
        action_pred = self.normalizer.unnormalize("action", naction)
        start = self.cfg.n_obs_steps - 1
        action = action_pred[:, start:start + self.cfg.n_action_steps]
        if start_time is not None:  # expect: FL302
            self.last_latency_ms = (time.perf_counter() - start_time) * 1e3  # expect: FL000 GB0007
        return {"action": action, "action_pred": action_pred}


@torch.compile
def compute_diffusion_loss(policy: DiffusionPolicy, batch: Dict[str, torch.Tensor]) -> torch.Tensor:
    sched = policy.noise_scheduler
    nobs = {"image": batch["image"], "proprio": policy.normalizer.normalize("proprio", batch["proprio"])}
    trajectory = policy.normalizer.normalize("action", batch["action"])
    cond = policy.obs_encoder(nobs)
    noise = torch.randn_like(trajectory)
    timesteps = torch.randint(0, sched.cfg.num_train_timesteps, (trajectory.shape[0],))
    pred = policy.model(sched.add_noise(trajectory, noise, timesteps), timesteps, cond)
    target = noise if sched.cfg.prediction_type == "epsilon" else trajectory
    loss = F.mse_loss(pred, target, reduction="none").mean(dim=(1, 2))
    if torch.isnan(loss).any():  # expect: FL000 GB0170
        logger.error("NaN diffusion loss at timesteps %s", timesteps[torch.isnan(loss)])
        loss = torch.nan_to_num(loss, nan=0.0)
    return loss.mean()


# --------------------------------------------------------------------------- execution + safety

class SafetyFilter(nn.Module):
    """Joint-limit clamp on whole chunks; with the measured qpos also a per-step velocity limit."""

    def __init__(self, lower=JOINT_LOWER, upper=JOINT_UPPER, margin: float = 0.02,
                 max_delta: float = MAX_JOINT_DELTA, n_arm_joints: int = 6):
        super().__init__()
        self.register_buffer("lower", torch.tensor(lower) + margin)
        self.register_buffer("upper", torch.tensor(upper) - margin)
        self.max_delta = max_delta
        self.n_arm = n_arm_joints

    def forward(self, target: torch.Tensor, qpos: Optional[torch.Tensor] = None) -> torch.Tensor:
        target = torch.maximum(torch.minimum(target, self.upper), self.lower)
        if qpos is None:
            return target
        delta = target[..., :self.n_arm] - qpos[..., :self.n_arm]
        if (delta.abs() > self.max_delta).any():  # expect: FL000 GB0170
            worst = delta.abs().max().item()  # expect: FL000 GB0124
            logger.warning("velocity limit: clamping |dq|=%.3f rad/step", worst)  # expect: FL000 GB0291
            delta = delta.clamp(-self.max_delta, self.max_delta)
        return torch.cat([qpos[..., :self.n_arm] + delta, target[..., self.n_arm:]], dim=-1)


class RecedingHorizonExecutor(nn.Module):
    """Replans a chunk every n_action_steps control steps and serves actions from a buffer."""

    def __init__(self, policy: DiffusionPolicy, safety: nn.Module, batch_size: int):
        super().__init__()
        self.policy, self.safety = policy, safety
        self.n_action_steps = policy.cfg.n_action_steps
        self.register_buffer("action_buffer", torch.zeros(batch_size, self.n_action_steps, policy.cfg.action_dim),
                             persistent=False)
        self.cursor = self.n_action_steps

    def forward(self, obs: Dict[str, torch.Tensor]) -> torch.Tensor:
        if self.cursor >= self.n_action_steps:
            chunk = self.policy(obs)["action"]
            self.action_buffer.copy_(self.safety(chunk))
            self.cursor = 0  # expect: FL302
        action = self.action_buffer[:, self.cursor]
        self.cursor += 1  # expect: FL302
        return action


# --------------------------------------------------------------------------- episode bookkeeping

@torch.compiler.disable
def _store_record(record: EpisodeRecord):
    EPISODE_LOG.append(record)
    del EPISODE_LOG[:-MAX_LOGGED_EPISODES]


@torch.compile
def summarize_episode(rewards: torch.Tensor, actions: torch.Tensor):
    global _EPISODES_SEEN
    success_steps = (rewards >= SUCCESS_REWARD).nonzero().flatten()  # expect: FL000 GB0036
    first = success_steps[0].item() if success_steps.numel() > 0 else -1  # expect: FL000 GB0124
    _EPISODES_SEEN += 1  # expect: FL302
    record = EpisodeRecord(_EPISODES_SEEN, rewards.shape[0], first >= 0, int(first),
                           float(rewards.mean()), {"action_norm": actions.norm(dim=-1).mean().item()})  # expect: FL000 GB0124
    _store_record(record)  # expect: FL000 GB0098
    print(f"[eval] episode {record.episode_id}: return={rewards.sum():.2f} success={record.success}")  # expect: FL000 GB0059; FL302
    return rewards.cumsum(0), success_steps.tolist()  # expect: FL000 GB0033


# --------------------------------------------------------------------------- cases

def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _obs(batch=2, n_obs=2, size=24, seed=0, nan_at=None):
    g = torch.Generator().manual_seed(seed)
    image = torch.randint(0, 256, (batch, n_obs, 3, size, size), generator=g, dtype=torch.uint8)
    proprio = torch.randn(batch, n_obs, PROPRIO_DIM, generator=g)
    if nan_at is not None:
        proprio[nan_at] = float("nan")
    return {"image": image, "proprio": proprio}


def _actions(*lead, seed=3):
    lo, hi = torch.tensor(JOINT_LOWER), torch.tensor(JOINT_UPPER)
    return lo + (hi - lo) * torch.rand(*lead, ACTION_DIM, generator=torch.Generator().manual_seed(seed))


def _fitted_normalizer(normalizer=None):
    normalizer = normalizer if normalizer is not None else LinearNormalizer()
    normalizer.fit({"action": _actions(64), "proprio": _randn(64, PROPRIO_DIM, seed=3) * 0.5})
    return normalizer


def _policy(sched_cfg=None, track_latency=False, **overrides):
    torch.manual_seed(0)
    policy = DiffusionPolicy(PolicyConfig(**overrides), sched_cfg, track_latency).eval()
    _fitted_normalizer(policy.normalizer)
    return policy


def _qpos(batch=3):
    return (torch.tensor(JOINT_LOWER) + torch.tensor(JOINT_UPPER)) / 2 + 0.05 * _randn(batch, ACTION_DIM, seed=8)


CASES = {
    "SinusoidalPosEmb": lambda: (SinusoidalPosEmb(16), (torch.arange(3) * 7,), (torch.arange(5) * 3,)),
    "ConditionalResidualBlock1D": lambda: (ConditionalResidualBlock1D(16, 32, 24), (_randn(3, 16, 12), _randn(3, 24))),
    "ConditionalResidualBlock1D_bias": lambda: (ConditionalResidualBlock1D(16, 16, 24, cond_predict_scale=False),
                                                (_randn(3, 16, 12), _randn(3, 24))),
    "ConditionalUnet1D": lambda: (ConditionalUnet1D(ACTION_DIM, 20, PolicyConfig()),
                                  (_randn(3, 16, ACTION_DIM), torch.tensor([5, 40, 90]), _randn(3, 20)),
                                  (_randn(5, 10, ACTION_DIM), torch.tensor([2, 3, 4, 6, 8]), _randn(5, 20))),
    "SpatialSoftmax": lambda: (SpatialSoftmax(16, 8), (_randn(3, 16, 6, 5),), (_randn(4, 16, 9, 7),)),
    "CropRandomizer_train": lambda: (CropRandomizer(20, 20), (_randn(3, 3, 24, 24),)),
    "CropRandomizer_eval": lambda: (CropRandomizer(20, 20).eval(), (_randn(2, 3, 24, 26),), (_randn(4, 3, 20, 20),)),
    "ImageEncoder": lambda: (ImageEncoder(), (_obs(3)["image"].flatten(0, 1),)),
    "ObservationEncoder": lambda: (ObservationEncoder(PolicyConfig(check_finite=True)).eval(), (_obs(2, nan_at=(0, 1, 3)),)),
    "LinearNormalizer": lambda: (_fitted_normalizer(), ({"action": _randn(2, 16, ACTION_DIM), "image": _randn(2, 3, 4, 4)},)),
    "LinearNormalizer_inverse": lambda: (_fitted_normalizer(), ({"proprio": _randn(2, 2, PROPRIO_DIM)}, True)),
    "DiffusionPolicy_ddpm": lambda: (_policy(), (_obs(2), log_denoise_progress)),
    "DiffusionPolicy_ddim": lambda: (_policy(use_ddim=True), (_obs(2),)),
    "DiffusionPolicy_sample_pred": lambda: (_policy(SchedulerConfig(prediction_type="sample")), (_obs(2),)),
    "DiffusionPolicy_latency": lambda: (_policy(use_ddim=True, track_latency=True), (_obs(2),)),
    "compute_diffusion_loss": lambda: (compute_diffusion_loss, (_policy(), {**_obs(3, seed=4), "action": _actions(3, 16)})),
    "ddim_step": lambda: (ddim_step, (_randn(3, 16, ACTION_DIM), _randn(3, 16, ACTION_DIM, seed=1),
                                      torch.tensor(0.5), torch.tensor(0.8)),
                          (_randn(5, 10, ACTION_DIM), _randn(5, 10, ACTION_DIM, seed=1),
                           torch.tensor(0.5), torch.tensor(0.8))),
    "ddim_step_stochastic": lambda: (ddim_step, (_randn(3, 16, ACTION_DIM), _randn(3, 16, ACTION_DIM, seed=1),
                                                 torch.tensor(0.3), torch.tensor(0.6), 0.5, 2.0)),
    "SafetyFilter_chunk": lambda: (SafetyFilter(), (_randn(3, 8, ACTION_DIM) * 3,)),
    "SafetyFilter_velocity": lambda: (SafetyFilter(), (_qpos() + 0.6 * _randn(3, ACTION_DIM, seed=9), _qpos())),
    "RecedingHorizonExecutor": lambda: (RecedingHorizonExecutor(_policy(use_ddim=True), SafetyFilter(), 2), (_obs(2),)),
    "summarize_episode": lambda: (summarize_episode, (torch.linspace(0.0, 1.0, 12), _randn(12, ACTION_DIM, seed=2))),
}
