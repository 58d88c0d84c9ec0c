"""Robot learning code in the style of robomimic / LeRobot / diffusion_policy repos: BC policies with
action chunking (ACT temporal ensembling), running-stat normalisers, Gaussian / tanh heads, a DDPM loop
over action sequences, planar FK, joint-limit clamps, slerp, a replay buffer, and a CEM planner."""
import functools
import logging
import math
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("robot_learning")
logger.addHandler(logging.NullHandler())

LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0
EPS = 1e-6
CONTROL_HZ = 10.0
SLERP_DOT_THRESHOLD = 0.9995

ROBOT_CONFIGS: Dict[str, dict] = {
    "planar3": {"link_lengths": (0.4, 0.3, 0.2), "joint_lower": (-2.6, -2.0, -2.0),
                "joint_upper": (2.6, 2.0, 2.0), "max_joint_vel": 1.5},
    "planar2": {"link_lengths": (0.5, 0.35), "joint_lower": (-3.0, -2.5),
                "joint_upper": (3.0, 2.5), "max_joint_vel": None},
}


def robot_config(name: str, **overrides) -> dict:
    if name not in ROBOT_CONFIGS:
        raise ValueError(f"unknown robot {name!r}; choose from {sorted(ROBOT_CONFIGS)}")
    cfg = {**ROBOT_CONFIGS[name], **overrides}
    cfg["n_joints"] = len(cfg["link_lengths"])
    return cfg


@dataclass
class PolicyConfig:
    obs_dim: int = 7
    action_dim: int = 3
    chunk_size: int = 4
    n_obs_steps: int = 2
    hidden: Sequence[int] = (16, 12)
    activation: str = "mish"
    state_dependent_std: bool = True
    robot: str = "planar3"

    @property
    def flat_obs_dim(self) -> int:
        return self.obs_dim * self.n_obs_steps

    @property
    def flat_action_dim(self) -> int:
        return self.action_dim * self.chunk_size


def assert_finite(name: str, value: torch.Tensor) -> None:
    if not torch.isfinite(value).all():  # expect: FL000 GB0170
        raise FloatingPointError(f"{name} has non-finite values")


ACTIVATIONS = {"relu": nn.ReLU, "mish": nn.Mish, "elu": nn.ELU, "tanh": nn.Tanh}


def build_mlp(in_dim: int, hidden: Sequence[int], out_dim: Optional[int] = None,
              activation: str = "relu", layer_norm: bool = False) -> nn.Sequential:
    act_cls = ACTIVATIONS.get(activation, nn.ReLU)
    layers: List[nn.Module] = []
    for width in hidden:
        layers.append(nn.Linear(in_dim, width))
        if layer_norm:
            layers.append(nn.LayerNorm(width))
        layers.append(act_cls())
        in_dim = width
    if out_dim is not None:
        layers.append(nn.Linear(in_dim, out_dim))
    return nn.Sequential(*layers)


# --------------------------------------------------------------------------- normalisers
class RunningNormalizer(nn.Module):
    def __init__(self, dim: int, clip: float = 5.0, init_count: float = 1e-4):
        super().__init__()
        self.clip = clip
        self.frozen = False
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("var", torch.ones(dim))
        self.register_buffer("count", torch.tensor(init_count))

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        batch = x.reshape(-1, x.shape[-1])
        b_count = batch.shape[0]
        b_mean, b_var = batch.mean(0), batch.var(0, unbiased=False)
        delta = b_mean - self.mean
        total = self.count + b_count
        m2 = self.var * self.count + b_var * b_count + delta.pow(2) * self.count * b_count / total
        self.mean.add_(delta * b_count / total)
        self.var.copy_(m2 / total)
        self.count.copy_(total)

    @property
    def std(self) -> torch.Tensor:
        return torch.sqrt(self.var + EPS)

    def normalize(self, x):
        return ((x - self.mean) / self.std).clamp(-self.clip, self.clip)

    def forward(self, x):
        if self.training and not self.frozen:
            self.update(x)
        return self.normalize(x)


class WarmupNormalizer(RunningNormalizer):
    def __init__(self, dim: int, warmup: int = 50, **kwargs):
        super().__init__(dim, **kwargs)
        self.warmup = warmup
        self.n_updates = 0

    def forward(self, x):
        if self.training and self.n_updates < self.warmup:
            self.update(x)
            self.n_updates += 1  # expect: FL302
        return self.normalize(x)


# --------------------------------------------------------------------------- action heads
def _gaussian_log_prob(x, mu, log_std):
    var = torch.exp(2 * log_std)
    return -0.5 * (((x - mu) ** 2) / var + 2 * log_std + math.log(2 * math.pi))


class GaussianHead(nn.Module):
    def __init__(self, in_dim: int, action_dim: int, state_dependent_std: bool = True):
        super().__init__()
        self.mu = nn.Linear(in_dim, action_dim)
        self.std_mode = "state" if state_dependent_std else "param"
        if state_dependent_std:
            self.log_std = nn.Linear(in_dim, action_dim)
        else:
            self.log_std_param = nn.Parameter(torch.full((action_dim,), -0.5))

    def _state_log_std(self, h):
        return self.log_std(h)

    def _param_log_std(self, h):
        return self.log_std_param.expand(h.shape[0], -1)

    def compute_log_std(self, h):
        raw = getattr(self, f"_{self.std_mode}_log_std")(h)
        return LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (torch.tanh(raw) + 1)  # soft clamp

    def squash(self, pre_action, log_prob):
        return pre_action, log_prob

    def forward(self, h, eps: Optional[torch.Tensor] = None):
        mu = self.mu(h)
        if eps is None:
            return self.squash(mu, None)
        log_std = self.compute_log_std(h)
        pre = mu + log_std.exp() * eps
        log_prob = _gaussian_log_prob(pre, mu, log_std).sum(-1)
        return self.squash(pre, log_prob)


class TanhGaussianHead(GaussianHead):
    def __init__(self, in_dim, action_dim, action_low=-1.0, action_high=1.0, **kwargs):
        super().__init__(in_dim, action_dim, **kwargs)
        self.register_buffer("action_scale", torch.tensor((action_high - action_low) / 2.0))
        self.register_buffer("action_bias", torch.tensor((action_high + action_low) / 2.0))

    def squash(self, pre_action, log_prob):
        action = torch.tanh(pre_action)
        if log_prob is not None:
            correction = 2.0 * (math.log(2.0) - pre_action - F.softplus(-2.0 * pre_action))
            log_prob = log_prob - correction.sum(-1) - math.log(self.action_scale) * action.shape[-1]  # expect: FL000 GB0033
        return action * self.action_scale + self.action_bias, log_prob


# --------------------------------------------------------------------------- safety / kinematics
class JointLimitClamp(nn.Module):
    def __init__(self, lower, upper, max_vel: Optional[float] = None, margin: float = 0.05):
        super().__init__()
        self.register_buffer("lower", torch.as_tensor(lower, dtype=torch.float32) + margin)
        self.register_buffer("upper", torch.as_tensor(upper, dtype=torch.float32) - margin)
        self.max_step = None if max_vel is None else max_vel / CONTROL_HZ

    @classmethod
    def from_config(cls, name: str, **kwargs):
        cfg = robot_config(name)
        return cls(cfg["joint_lower"], cfg["joint_upper"], cfg["max_joint_vel"], **kwargs)

    def forward(self, q, q_prev: Optional[torch.Tensor] = None):
        if q_prev is not None and self.max_step is not None:
            q = q_prev + (q - q_prev).clamp(-self.max_step, self.max_step)
        return torch.maximum(torch.minimum(q, self.upper), self.lower)


class SafetyMonitor(JointLimitClamp):
    def forward(self, q, q_prev=None):
        safe = super().forward(q, q_prev)
        n_clipped = int((safe - q).abs().gt(EPS).sum())  # expect: FL000 GB0124
        if n_clipped > 0:
            logger.warning("safety clamp modified %d joint targets", n_clipped)  # expect: FL000 GB0291
        return safe


def _link_positions(links, q):
    angles = torch.cumsum(q, dim=-1)
    xy = torch.stack([links * torch.cos(angles), links * torch.sin(angles)], dim=-1)
    return torch.cumsum(xy, dim=-2), angles


class PlanarArmFK(nn.Module):
    def __init__(self, robot: str = "planar3"):
        super().__init__()
        cfg = robot_config(robot)
        self.register_buffer("links", torch.tensor(cfg["link_lengths"]))

    def forward(self, q):
        joints, angles = _link_positions(self.links, q)
        return joints[..., -1, :], angles[..., -1]


# --------------------------------------------------------------------------- quaternions (w, x, y, z)
def quat_normalize(q):
    return q / q.norm(dim=-1, keepdim=True).clamp_min(EPS)


def quat_slerp(q0, q1, t: float):
    dot = torch.dot(q0, q1)
    if dot < 0.0:  # expect: FL000 GB0170
        q1, dot = -q1, -dot
    if dot > SLERP_DOT_THRESHOLD:  # expect: FL000 GB0170
        return quat_normalize(q0 + t * (q1 - q0))
    theta_0 = torch.acos(dot)
    theta = theta_0 * t
    s0 = torch.cos(theta) - dot * torch.sin(theta) / torch.sin(theta_0)
    s1 = torch.sin(theta) / torch.sin(theta_0)
    return s0 * q0 + s1 * q1


@torch.compile
def interpolate_orientations(q_start, q_goal, n_steps: int = 3):
    q_start, q_goal = quat_normalize(q_start), quat_normalize(q_goal)
    waypoints = [quat_slerp(q_start, q_goal, (i + 1) / n_steps) for i in range(n_steps)]
    return torch.stack(waypoints)


# --------------------------------------------------------------------------- BC policy with chunking
class ChunkedBCPolicy(nn.Module):
    def __init__(self, cfg: PolicyConfig = PolicyConfig()):
        super().__init__()
        self.cfg = cfg
        self.obs_norm = RunningNormalizer(cfg.flat_obs_dim)
        self.trunk = build_mlp(cfg.flat_obs_dim, cfg.hidden, activation=cfg.activation, layer_norm=True)
        self.head = TanhGaussianHead(cfg.hidden[-1], cfg.flat_action_dim,
                                     state_dependent_std=cfg.state_dependent_std)
        self.safety = JointLimitClamp.from_config(cfg.robot)

    def forward(self, obs_history, eps=None):
        batch = obs_history.shape[0]
        assert obs_history.shape[1] == self.cfg.n_obs_steps, "wrong observation horizon"
        feats = self.trunk(self.obs_norm(obs_history.flatten(1)))
        actions, log_prob = self.head(feats, eps)
        chunk = actions.view(batch, self.cfg.chunk_size, self.cfg.action_dim)
        return self.safety(chunk * math.pi / 2), log_prob


@torch.compile
def temporal_ensemble(chunk_history, k: float = 0.01):
    """ACT temporal ensembling: chunk_history[i] was predicted i steps ago, weights exp(-k * age)."""
    n_hist, chunk_size = chunk_history.shape[0], chunk_history.shape[1]
    n_valid = min(n_hist, chunk_size)
    preds, weights = [], []
    for age in range(n_valid):  # expect: FL301
        preds.append(chunk_history[age, age])
        weights.append(math.exp(-k * (n_valid - 1 - age)))
    w = torch.tensor(weights, dtype=chunk_history.dtype)
    return (torch.stack(preds) * w[:, None]).sum(0) / w.sum()


@torch.compile
def pad_action_chunk(actions, chunk_size: int = 6):
    """Episode ends: repeat the last action so every chunk has `chunk_size` steps + a pad mask."""
    n = actions.shape[0]
    if n >= chunk_size:  # expect: FL301
        return actions[:chunk_size], torch.ones(chunk_size, dtype=torch.bool)
    pad = actions[-1:].expand(chunk_size - n, -1)
    mask = torch.arange(chunk_size) < n
    return torch.cat([actions, pad], dim=0), mask


LOSSES: Dict[str, Callable] = {"l1": F.l1_loss, "mse": F.mse_loss,
                               "huber": functools.partial(F.smooth_l1_loss, beta=0.1)}


@torch.compile
def bc_chunk_loss(pred, target, pad_mask, loss_type: str = "l1", step_weights=None):
    per_step = LOSSES[loss_type](pred, target, reduction="none").mean(-1)
    if step_weights is not None:
        per_step = per_step * step_weights
    valid = pad_mask.to(per_step.dtype)
    loss = (per_step * valid).sum() / valid.sum().clamp_min(1.0)
    assert_finite("bc_loss", loss)
    return loss


METRIC_HOOKS: List[Callable] = []


def register_metric(fn):
    METRIC_HOOKS.append(fn)
    return fn


@register_metric
def action_mse(pred, target):
    return F.mse_loss(pred, target)


@register_metric
def chunk_jerk(pred, target):
    vel = pred[:, 1:] - pred[:, :-1]
    return (vel[:, 1:] - vel[:, :-1]).pow(2).mean()


@torch.compile
def eval_metrics(pred, target):
    return {fn.__name__: fn(pred, target) for fn in METRIC_HOOKS}


@torch.compile
def log_eval_metrics(pred, target, step: int):
    metrics = eval_metrics(pred, target)
    summary = {name: round(value.item(), 4) for name, value in metrics.items()}  # expect: FL000 GB0092; FL000 GB0124
    logger.info("eval step %d: %s", step, summary)
    return metrics["action_mse"], summary


# --------------------------------------------------------------------------- replay buffer
class ReplayBuffer:
    def __init__(self, capacity: int, obs_dim: int, action_dim: int):
        self.capacity = capacity
        self.storage = {"obs": torch.zeros(capacity, obs_dim), "action": torch.zeros(capacity, action_dim),
                        "reward": torch.zeros(capacity), "done": torch.zeros(capacity, dtype=torch.bool)}
        self.ptr = self.size = 0

    def add_batch(self, **transition):
        n = next(iter(transition.values())).shape[0]
        idx = (torch.arange(n) + self.ptr) % self.capacity
        for key, value in transition.items():
            self.storage[key][idx] = value
        self.ptr = (self.ptr + n) % self.capacity
        self.size = min(self.size + n, self.capacity)

    def sample_indices(self, batch_size: int, horizon: int, generator: torch.Generator):
        start = torch.randint(0, self.size - horizon, (batch_size,), generator=generator)  # expect: FL000 GB0055
        return start[:, None] + torch.arange(horizon)


def _filled_buffer(seed: int = 3) -> ReplayBuffer:
    g = torch.Generator().manual_seed(seed)
    buf = ReplayBuffer(capacity=40, obs_dim=7, action_dim=3)
    buf.add_batch(obs=torch.randn(30, 7, generator=g), action=torch.rand(30, 3, generator=g) * 2 - 1,
                  reward=torch.randn(30, generator=g), done=torch.rand(30, generator=g) > 0.9)
    return buf


@torch.compile
def sample_chunk_batch(buffer: ReplayBuffer, normalizer: RunningNormalizer, generator,
                       batch_size: int = 5, horizon: int = 4):
    idx = buffer.sample_indices(batch_size, horizon, generator)
    obs = normalizer(buffer.storage["obs"][idx[:, 0]])
    actions = buffer.storage["action"][idx]
    # mask out steps after an episode boundary inside the chunk
    done = buffer.storage["done"][idx].int()
    valid = torch.cumsum(done, dim=1) - done == 0
    return obs, actions, valid


# --------------------------------------------------------------------------- diffusion policy
def cosine_beta_schedule(num_steps: int, s: float = 0.008) -> np.ndarray:
    x = np.linspace(0, num_steps, num_steps + 1)
    alphas_cumprod = np.cos(((x / num_steps) + s) / (1 + s) * np.pi * 0.5) ** 2
    alphas_cumprod = alphas_cumprod / alphas_cumprod[0]
    betas = 1 - (alphas_cumprod[1:] / alphas_cumprod[:-1])
    return np.clip(betas, 0.0, 0.999)


class DDPMScheduler:
    def __init__(self, num_steps: int = 6):
        self.num_steps = num_steps
        self.betas = cosine_beta_schedule(num_steps)
        self.alphas = 1.0 - self.betas
        self.alphas_cumprod = np.cumprod(self.alphas)
        self.timesteps = list(range(num_steps - 1, -1, -1))

    def step(self, eps_pred, t: int, x_t, noise):
        abar_t = self.alphas_cumprod[t]  # expect: FL000 GB0112
        abar_prev = self.alphas_cumprod[t - 1] if t > 0 else 1.0  # expect: FL000 GB0112
        x0 = ((x_t - math.sqrt(1 - abar_t) * eps_pred) / math.sqrt(abar_t)).clamp(-1.0, 1.0)  # expect: FL000 GB0033
        coef0 = math.sqrt(abar_prev) * self.betas[t] / (1 - abar_t)  # expect: FL000 GB0112
        coef_t = math.sqrt(self.alphas[t]) * (1 - abar_prev) / (1 - abar_t)  # expect: FL000 GB0033; FL000 GB0112; FL302
        mean = coef0 * x0 + coef_t * x_t
        if t == 0:
            return mean
        var = self.betas[t] * (1 - abar_prev) / (1 - abar_t)  # expect: FL000 GB0112
        return mean + math.sqrt(var) * noise  # expect: FL000 GB0033


def timestep_embedding(t, dim: int, max_period: float = 1000.0):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32) / half)
    args = t[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class NoisePredictor(nn.Module):
    def __init__(self, action_dim=3, horizon=4, cond_dim=14, t_dim=8, hidden=(24, 24)):
        super().__init__()
        self.t_dim = t_dim
        self.horizon, self.action_dim = horizon, action_dim
        self.cond_proj = nn.Linear(cond_dim + t_dim, hidden[0])
        self.net = build_mlp(horizon * action_dim + hidden[0], hidden, horizon * action_dim, "mish")

    def forward(self, noisy_actions, timesteps, cond):
        if not torch.is_tensor(timesteps):
            timesteps = torch.full((noisy_actions.shape[0],), timesteps, dtype=torch.long)
        temb = timestep_embedding(timesteps, self.t_dim)
        c = F.mish(self.cond_proj(torch.cat([cond, temb], dim=-1)))
        out = self.net(torch.cat([noisy_actions.flatten(1), c], dim=-1))
        return out.view(-1, self.horizon, self.action_dim)


class DiffusionPolicy(nn.Module):
    def __init__(self, cfg: PolicyConfig = PolicyConfig(), num_steps: int = 4):
        super().__init__()
        self.cfg = cfg
        self.obs_norm = RunningNormalizer(cfg.flat_obs_dim)
        self.obs_norm.eval()
        self.eps_net = NoisePredictor(cfg.action_dim, cfg.chunk_size, cfg.flat_obs_dim)
        self.scheduler = DDPMScheduler(num_steps)

    def forward(self, obs_history, noise_seq):
        cond = self.obs_norm(obs_history.flatten(1))
        x = noise_seq[0]
        for i, t in enumerate(self.scheduler.timesteps):
            eps = self.eps_net(x, t, cond)
            x = self.scheduler.step(eps, t, x, noise_seq[i + 1])
        return x


# --------------------------------------------------------------------------- CEM / MPC
@dataclass
class CEMConfig:
    horizon: int = 5
    n_elites: int = 6
    iterations: int = 3
    init_std: float = 0.5
    min_std: float = 0.05
    momentum: float = 0.1
    action_bounds: Tuple[float, float] = (-1.0, 1.0)
    cost_weights: Dict[str, float] = field(default_factory=lambda: {"goal": 1.0, "effort": 0.02})


def point_mass_dynamics(state, action, dt: float = 1.0 / CONTROL_HZ):
    pos, vel = state.chunk(2, dim=-1)
    vel = vel * 0.95 + action * dt
    return torch.cat([pos + vel * dt, vel], dim=-1)


def goal_cost(state, action, goal, weight=1.0):
    return weight * (state[..., :2] - goal).pow(2).sum(-1)


def effort_cost(state, action, goal, weight=1.0):
    return weight * action.pow(2).sum(-1)


COST_TERMS = {"goal": goal_cost, "effort": effort_cost}


def rollout_cost(dynamics, state0, actions, goal, cost_fns):
    n, horizon = actions.shape[0], actions.shape[1]
    state = state0.expand(n, -1)
    total = torch.zeros(n)
    for t in range(horizon):
        state = dynamics(state, actions[:, t])
        for cost_fn in cost_fns:
            total = total + cost_fn(state, actions[:, t], goal)
    return total


@torch.compile
def cem_plan(state0, goal, noise, cfg: CEMConfig = CEMConfig()):
    cost_fns = [functools.partial(COST_TERMS[k], weight=w) for k, w in cfg.cost_weights.items() if w > 0]
    mean = torch.zeros(cfg.horizon, noise.shape[-1])
    std = torch.full_like(mean, cfg.init_std)
    lo, hi = cfg.action_bounds
    for it in range(cfg.iterations):
        samples = (mean + std * noise[it]).clamp(lo, hi)
        costs = rollout_cost(point_mass_dynamics, state0, samples, goal, cost_fns)
        elites = samples[torch.topk(costs, cfg.n_elites, largest=False).indices]
        mean = cfg.momentum * mean + (1 - cfg.momentum) * elites.mean(0)
        std = cfg.momentum * std + (1 - cfg.momentum) * elites.std(0)
        if std.max() < cfg.min_std:  # expect: FL000 GB0170
            logger.debug("CEM converged after %d iterations", it + 1)
            break
    return mean[0], mean


# --------------------------------------------------------------------------- cases
def _g(seed):
    return torch.Generator().manual_seed(seed)


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=_g(seed))


CASES = {
    "RunningNormalizer": lambda: (RunningNormalizer(7).train(), (_randn(5, 7),)),
    "WarmupNormalizer": lambda: (WarmupNormalizer(7, warmup=3).train(), (_randn(5, 7),)),
    "GaussianHead": lambda: (GaussianHead(6, 3, state_dependent_std=False), (_randn(5, 6), _randn(5, 3, seed=1))),
    "TanhGaussianHead": lambda: (TanhGaussianHead(6, 3, action_low=-2.0, action_high=2.0),
                                 (_randn(5, 6), _randn(5, 3, seed=1))),
    "JointLimitClamp": lambda: (JointLimitClamp.from_config("planar3"), (_randn(5, 3) * 3, _randn(5, 3, seed=1))),
    "SafetyMonitor": lambda: (SafetyMonitor.from_config("planar2"), (_randn(5, 2) * 4,)),
    "PlanarArmFK": lambda: (PlanarArmFK("planar3"), (_randn(5, 3),)),
    "interpolate_orientations": lambda: (interpolate_orientations, (_randn(4), _randn(4, seed=1))),
    "ChunkedBCPolicy": lambda: (ChunkedBCPolicy().eval(), (_randn(5, 2, 7), _randn(5, 12, seed=1))),
    "temporal_ensemble": lambda: (temporal_ensemble, (_randn(3, 5, 2),), (_randn(6, 5, 2),)),
    "pad_action_chunk": lambda: (pad_action_chunk, (_randn(4, 3),), (_randn(9, 3),)),
    "bc_chunk_loss": lambda: (bc_chunk_loss, (_randn(5, 4, 3), _randn(5, 4, 3, seed=1),
                                              torch.rand(5, 4, generator=_g(2)) > 0.2, "huber",
                                              torch.linspace(1.0, 0.5, 4))),
    "eval_metrics": lambda: (eval_metrics, (_randn(5, 4, 3), _randn(5, 4, 3, seed=1))),
    "log_eval_metrics": lambda: (log_eval_metrics, (_randn(5, 4, 3), _randn(5, 4, 3, seed=1), 100)),
    "sample_chunk_batch": lambda: (sample_chunk_batch, (_filled_buffer(), RunningNormalizer(7).eval(), _g(7))),
    "NoisePredictor": lambda: (NoisePredictor(), (_randn(5, 4, 3), torch.tensor([3, 1, 0, 2, 1]),
                                                  _randn(5, 14, seed=1))),
    "DiffusionPolicy": lambda: (DiffusionPolicy().eval(), (_randn(5, 2, 7), _randn(5, 5, 4, 3, seed=1))),
    "cem_plan": lambda: (cem_plan, (_randn(4), torch.tensor([0.3, -0.2]), _randn(3, 24, 5, 2, seed=1))),
}
