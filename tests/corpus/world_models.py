"""Model-based RL in the style of DreamerV3 / MuZero: an RSSM with deterministic GRU state and
categorical latents (unimix, straight-through samples), imagination rollouts with per-step hooks,
lambda-returns, two-hot symlog heads, return/observation normalizers, KL balancing with free bits,
MuZero prediction with min-max value statistics, and replay-buffer sequence sampling."""
import functools
import logging
import math
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("world_models")
logger.addHandler(logging.NullHandler())

DEBUG_ROLLOUTS = False
LOG_EVERY = 100
BIN_RANGE = (-20.0, 20.0)
_GLOBAL_STEP = {"imagine": 0}
LOSS_SCALES = {"dyn": 0.5, "rep": 0.1, "reward": 1.0, "cont": 1.0, "decoder": 1.0}


@dataclass(frozen=True)
class WMConfig:
    deter: int = 12
    stoch: int = 4
    classes: int = 5
    hidden: int = 10
    embed: int = 9
    action_dim: int = 3
    num_bins: int = 15
    horizon: int = 4
    gamma: float = 0.985
    free_nats: float = 1.0
    unimix: float = 0.01
    act: str = "silu"
    layer_norm: bool = True

    @property
    def stoch_flat(self) -> int:
        return self.stoch * self.classes

    @property
    def feat_dim(self) -> int:
        return self.deter + self.stoch_flat


DEFAULT = WMConfig()


def symlog(x):
    return torch.sign(x) * torch.log1p(x.abs())


def symexp(x):
    return torch.sign(x) * torch.expm1(x.abs())


TRANSFORMS = {"symlog": (symlog, symexp), "identity": (lambda x: x, lambda x: x)}


@functools.lru_cache(maxsize=8)
def _bin_edges(num_bins: int, low: float, high: float) -> Tuple[float, ...]:
    return tuple(np.linspace(low, high, num_bins).tolist())


def get_bins(num_bins: int, device=None) -> torch.Tensor:
    return torch.tensor(_bin_edges(num_bins, *BIN_RANGE), dtype=torch.float32, device=device)


def twohot_encode(x, bins):
    """Distributes each scalar over its two neighbouring bins (DreamerV3)."""
    k = bins.shape[0]
    below = (bins <= x.unsqueeze(-1)).sum(-1) - 1
    below = below.clamp(0, k - 1)
    above = (below + 1).clamp(max=k - 1)
    dist_lo = (x - bins[below]).abs()
    dist_hi = (bins[above] - x).abs()
    total = dist_lo + dist_hi
    w_lo = torch.where(total == 0, torch.ones_like(total), dist_hi / total.clamp_min(1e-8))
    return F.one_hot(below, k) * w_lo.unsqueeze(-1) + F.one_hot(above, k) * (1 - w_lo).unsqueeze(-1)


def twohot_mean(logits, bins, transform: str = "symlog"):
    _, inverse = TRANSFORMS[transform]
    return inverse((logits.softmax(-1) * bins).sum(-1))


def twohot_nll(logits, target, bins):
    return -(twohot_encode(target, bins) * logits.log_softmax(-1)).sum(-1).mean()


def categorical_kl(lhs_logits, rhs_logits):
    lhs = lhs_logits.log_softmax(-1)
    rhs = rhs_logits.log_softmax(-1)
    return (lhs.exp() * (lhs - rhs)).sum(-1).sum(-1)


def _check_finite(value, name: str):
    if not torch.isfinite(value).all():  # expect: FL000 GB0170
        raise FloatingPointError(f"non-finite {name}")
    return value


ACTIVATIONS = {"silu": nn.SiLU, "elu": nn.ELU, "relu": nn.ReLU, "tanh": nn.Tanh}


class MLP(nn.Module):
    def __init__(self, inp: int, out: int, hidden: int = 10, layers: int = 2, act: str = "silu",
                 layer_norm: bool = True):
        super().__init__()
        mods: List[nn.Module] = []
        for _ in range(layers):
            mods.append(nn.Linear(inp, hidden, bias=not layer_norm))
            if layer_norm:
                mods.append(nn.LayerNorm(hidden))
            mods.append(ACTIVATIONS[act]())
            inp = hidden
        self.body = nn.Sequential(*mods)
        self.head = nn.Linear(inp, out) if out else None

    def forward(self, x):
        x = self.body(x)
        return self.head(x) if self.head is not None else x


def mlp_from_config(cfg: WMConfig, inp: int, out: int, **kw) -> MLP:
    return MLP(inp, out, hidden=kw.pop("hidden", cfg.hidden), act=cfg.act, layer_norm=cfg.layer_norm, **kw)


def unimix_logits(logits, unimix: float):
    if unimix <= 0.0:
        return logits
    probs = logits.softmax(-1)
    probs = (1.0 - unimix) * probs + unimix / probs.shape[-1]
    return probs.log()


def straight_through_sample(logits, noise: Optional[torch.Tensor] = None):
    """One-hot sample (Gumbel-max when noise is given, mode otherwise) with ST gradients."""
    probs = logits.softmax(-1)
    scores = logits if noise is None else logits - torch.log(-torch.log(noise.clamp(1e-6, 1 - 1e-6)))
    sample = F.one_hot(scores.argmax(-1), probs.shape[-1]).to(probs.dtype)
    return sample + probs - probs.detach()


class StochasticHead(nn.Module):
    def __init__(self, inp: int, cfg: WMConfig = DEFAULT):
        super().__init__()
        self.cfg = cfg
        self.net = mlp_from_config(cfg, inp, cfg.stoch_flat, layers=1)

    def forward(self, x, noise=None):
        logits = self.net(x).reshape(*x.shape[:-1], self.cfg.stoch, self.cfg.classes)
        logits = unimix_logits(logits, self.cfg.unimix)
        return logits, straight_through_sample(logits, noise)


class RSSM(nn.Module):
    def __init__(self, cfg: WMConfig = DEFAULT):
        super().__init__()
        self.cfg = cfg
        self.img_in = nn.Linear(cfg.stoch_flat + cfg.action_dim, cfg.hidden)
        self.cell = nn.GRUCell(cfg.hidden, cfg.deter)
        self.prior = StochasticHead(cfg.deter, cfg)
        self.posterior = StochasticHead(cfg.deter + cfg.embed, cfg)

    def initial(self, batch: int, device=None) -> Dict[str, torch.Tensor]:
        return {"deter": torch.zeros(batch, self.cfg.deter, device=device),
                "stoch": torch.zeros(batch, self.cfg.stoch, self.cfg.classes, device=device)}

    @staticmethod
    def features(state):
        return torch.cat([state["deter"], state["stoch"].flatten(-2)], -1)

    def img_step(self, state, action, noise=None):
        x = torch.cat([state["stoch"].flatten(-2), action], -1)
        deter = self.cell(F.silu(self.img_in(x)), state["deter"])
        logits, stoch = self.prior(deter, noise)
        return {"deter": deter, "stoch": stoch, "logits": logits}

    def obs_step(self, state, action, embed, is_first):
        mask = (1.0 - is_first.float()).unsqueeze(-1)
        state = {k: v * (mask if v.dim() == 2 else mask.unsqueeze(-1)) for k, v in state.items()
                 if k in ("deter", "stoch")}
        prior = self.img_step(state, action * mask)
        logits, stoch = self.posterior(torch.cat([prior["deter"], embed], -1))
        return {"deter": prior["deter"], "stoch": stoch, "logits": logits}, prior

    def forward(self, embed, actions, is_first):
        state = self.initial(embed.shape[0], embed.device)
        posts, priors = [], []
        for t in range(embed.shape[1]):  # expect: FL301
            state, prior = self.obs_step(state, actions[:, t], embed[:, t], is_first[:, t])
            posts.append(state)
            priors.append(prior)
        stack = lambda seq, key: torch.stack([s[key] for s in seq], 1)
        return {"post_logits": stack(posts, "logits"), "prior_logits": stack(priors, "logits"),
                "feat": torch.cat([stack(posts, "deter"), stack(posts, "stoch").flatten(-2)], -1)}


class TwoHotHead(nn.Module):
    def __init__(self, cfg: WMConfig = DEFAULT, transform: str = "symlog"):
        super().__init__()
        self.net = mlp_from_config(cfg, cfg.feat_dim, cfg.num_bins)
        self.transform = transform
        self.register_buffer("bins", get_bins(cfg.num_bins))
        nn.init.zeros_(self.net.head.weight)

    def forward(self, feat):
        logits = self.net(feat)
        return logits, twohot_mean(logits, self.bins, self.transform)


class Actor(nn.Module):
    def __init__(self, cfg: WMConfig = DEFAULT, entropy_coef: float = 3e-4):
        super().__init__()
        self.cfg = cfg
        self.entropy_coef = entropy_coef
        self.net = mlp_from_config(cfg, cfg.feat_dim, cfg.action_dim)

    def dist(self, feat):
        logits = unimix_logits(self.net(feat), self.cfg.unimix)
        return torch.distributions.OneHotCategoricalStraightThrough(logits=logits)

    def forward(self, feat):
        dist = self.dist(feat)
        return dist.rsample(), dist.entropy()


class SlowCritic(nn.Module):
    """Critic with an EMA target copy updated every `period` calls."""

    def __init__(self, cfg: WMConfig = DEFAULT, period: int = 3, tau: float = 0.02):
        super().__init__()
        self.online = TwoHotHead(cfg)
        self.target = TwoHotHead(cfg)
        self.target.load_state_dict(self.online.state_dict())
        self.period, self.tau, self.updates = period, tau, 0

    @torch.no_grad()
    def _sync(self):
        for p_t, p_o in zip(self.target.parameters(), self.online.parameters()):
            p_t.lerp_(p_o, self.tau)
        logger.debug("critic target synced after %d updates", self.updates)  # expect: FL000 GB0291

    def forward(self, feat, returns):
        if self.updates % self.period == 0:
            self._sync()
        self.updates += 1  # expect: FL302
        logits, value = self.online(feat)
        _, slow = self.target(feat)
        loss = twohot_nll(logits, symlog(returns), self.online.bins)
        reg = twohot_nll(logits, symlog(slow.detach()), self.online.bins)
        return loss + reg, value


class PercentileNormalizer(nn.Module):
    """DreamerV3 return scale: EMA of the 5th..95th percentile range, clipped below at 1."""

    def __init__(self, decay: float = 0.99, low: float = 0.05, high: float = 0.95, limit: float = 1.0):
        super().__init__()
        self.decay, self.q, self.limit = decay, (low, high), limit
        self.register_buffer("low", torch.zeros(()))
        self.register_buffer("high", torch.zeros(()))

    def forward(self, returns):
        flat = returns.detach().flatten()
        lo, hi = torch.quantile(flat, flat.new_tensor(self.q))
        self.low.mul_(self.decay).add_((1 - self.decay) * lo)
        self.high.mul_(self.decay).add_((1 - self.decay) * hi)
        scale = torch.clamp(self.high - self.low, min=self.limit)
        if DEBUG_ROLLOUTS or scale.item() > 100.0:  # expect: FL000 GB0124
            logger.warning("large return scale %.2f", scale.item())
        return self.low, scale


class RunningMeanStd:
    def __init__(self, shape: Sequence[int], eps: float = 1e-4):
        self.mean = np.zeros(shape, np.float64)
        self.var = np.ones(shape, np.float64)
        self.count = eps

    def update(self, batch: np.ndarray):
        b_mean, b_var, b_count = batch.mean(0), batch.var(0), batch.shape[0]
        delta = b_mean - self.mean
        total = self.count + b_count
        self.mean = self.mean + delta * b_count / total
        m2 = self.var * self.count + b_var * b_count + delta ** 2 * self.count * b_count / total
        self.var, self.count = m2 / total, total  # expect: FL302


@torch.compile
def normalize_observations(obs, stats: RunningMeanStd, clip: float = 5.0):
    stats.update(obs.detach().cpu().numpy())
    mean = torch.as_tensor(stats.mean, dtype=obs.dtype)
    std = torch.as_tensor(np.sqrt(stats.var), dtype=obs.dtype)
    return ((obs - mean) / std).clamp(-clip, clip)


@torch.compile(dynamic=False)
def lambda_returns(rewards, values, conts, lam: float = 0.95):
    """rewards/conts: (H, B); values: (H + 1, B) bootstrapped from the last state."""
    horizon = rewards.shape[0]
    assert values.shape[0] == horizon + 1, "values must include the bootstrap"
    out = []
    last = values[-1]
    for t in reversed(range(horizon)):  # expect: FL301
        last = rewards[t] + conts[t] * ((1 - lam) * values[t + 1] + lam * last)
        out.append(last)
    return torch.stack(out[::-1], 0)


def _debug_hook(step: int, feat, action, name: str = "rollout"):
    if DEBUG_ROLLOUTS:
        logger.debug("%s step %d: |feat|=%.3f", name, step, feat.norm())
    return action


def make_smoothing_hook(eps: float) -> Callable:
    def hook(step, feat, action):
        return (1.0 - eps) * action + eps / action.shape[-1]
    return hook


ROLLOUT_HOOKS: List[Callable] = [functools.partial(_debug_hook, name="imagine"), make_smoothing_hook(0.05)]


class ImagineRollout(nn.Module):
    def __init__(self, rssm: RSSM, actor: Actor, cfg: WMConfig = DEFAULT, hooks=None):
        super().__init__()
        self.rssm, self.actor, self.cfg = rssm, actor, cfg
        self.hooks = list(ROLLOUT_HOOKS if hooks is None else hooks)

    def _policy(self, state, step):
        feat = RSSM.features(state)
        action, entropy = self.actor(feat.detach())
        for hook in self.hooks:
            action = hook(step, feat, action)
        return feat, action, entropy

    def forward(self, start: Dict[str, torch.Tensor]):
        state = {k: v.detach() for k, v in start.items()}
        feats, actions, entropies = [], [], []
        for step in range(self.cfg.horizon):
            feat, action, ent = self._policy(state, step)
            feats.append(feat)
            actions.append(action)
            entropies.append(ent)
            state = self.rssm.img_step(state, action)
        feats.append(RSSM.features(state))
        self.last_entropy = torch.stack(entropies).mean().item()  # expect: FL000 GB0124
        _GLOBAL_STEP["imagine"] += 1  # expect: FL302
        if _GLOBAL_STEP["imagine"] % LOG_EVERY == 0:
            logger.info("imagined %d rollouts", _GLOBAL_STEP["imagine"])
        return torch.stack(feats), torch.stack(actions), torch.stack(entropies)


class WorldModelLoss(nn.Module):
    def __init__(self, cfg: WMConfig = DEFAULT, scales: Optional[Dict[str, float]] = None):
        super().__init__()
        self.cfg = cfg
        self.scales = dict(LOSS_SCALES, **(scales or {}))
        self.register_buffer("bins", get_bins(cfg.num_bins))

    def kl_terms(self, post_logits, prior_logits):
        dyn = categorical_kl(post_logits.detach(), prior_logits)
        rep = categorical_kl(post_logits, prior_logits.detach())
        return dyn.clamp_min(self.cfg.free_nats), rep.clamp_min(self.cfg.free_nats)

    def forward(self, post_logits, prior_logits, reward_logits, rewards, cont_logits, conts):
        dyn, rep = self.kl_terms(post_logits, prior_logits)
        losses = {
            "dyn": dyn.mean(),
            "rep": rep.mean(),
            "reward": twohot_nll(reward_logits, symlog(rewards), self.bins),
            "cont": F.binary_cross_entropy_with_logits(cont_logits, conts),
        }
        total = sum(self.scales[k] * v for k, v in losses.items())
        metrics = {f"wm/{k}": v.detach() for k, v in losses.items()}
        metrics["wm/free_frac"] = (dyn <= self.cfg.free_nats).float().mean()
        return _check_finite(total, "world model loss"), metrics


class ActorLoss(nn.Module):
    """Mix of REINFORCE and dynamics backprop on normalised advantages."""

    def __init__(self, actor: Actor, normalizer: PercentileNormalizer, reinforce: float = 1.0):
        super().__init__()
        self.actor, self.normalizer, self.reinforce = actor, normalizer, reinforce

    def forward(self, feats, actions, returns, values, weights):
        offset, scale = self.normalizer(returns)
        adv = (returns - values) / scale
        dist = self.actor.dist(feats.detach())
        logp = dist.log_prob(actions.detach())
        objective = self.reinforce * logp * adv.detach() + (1 - self.reinforce) * adv
        loss = -(weights * (objective + self.actor.entropy_coef * dist.entropy())).mean()
        return _check_finite(loss, "actor loss")


class ConvEncoder(nn.Module):
    def __init__(self, channels: int = 3, depth: int = 4, min_res: int = 3, out: int = 9):
        super().__init__()
        self.min_res = min_res
        self.stem = nn.Conv2d(channels, depth, 3, padding=1)
        self.down = nn.Conv2d(depth, depth, 3, stride=2, padding=1)
        self.proj = nn.Linear(depth, out)

    def forward(self, image):
        if image.dtype == torch.uint8 or image.max() > 1.0:  # expect: FL000 GB0170
            image = image.float() / 255.0
        x = F.silu(self.stem(image - 0.5))
        while x.shape[-1] > self.min_res:  # expect: FL301
            x = F.silu(self.down(x))
        return self.proj(x.mean((-2, -1)))


def support_to_scalar(logits, support_size: int):
    support = torch.arange(-support_size, support_size + 1, dtype=logits.dtype, device=logits.device)
    x = (logits.softmax(-1) * support).sum(-1)
    eps = 0.001  # inverse of h(x) = sign(x)(sqrt(|x|+1)-1) + eps*x
    return torch.sign(x) * (((torch.sqrt(1 + 4 * eps * (x.abs() + 1 + eps)) - 1) / (2 * eps)) ** 2 - 1)


def _check_legal(mask):
    if not mask.any(-1).all():  # expect: FL000 GB0170
        raise ValueError("state without legal actions reached the prediction net")
    return mask


class MuZeroPrediction(nn.Module):
    def __init__(self, hidden: int = 8, action_dim: int = 3, support: int = 5):
        super().__init__()
        self.support = support
        self.policy = nn.Linear(hidden, action_dim)
        self.value = nn.Linear(hidden, 2 * support + 1)

    def forward(self, hidden, legal_mask: Optional[torch.Tensor] = None):
        logits = self.policy(hidden)
        if legal_mask is not None:
            logits = logits.masked_fill(~_check_legal(legal_mask), float("-inf"))  # expect: FL000 GB0007
        return logits.log_softmax(-1), support_to_scalar(self.value(hidden), self.support)


class MinMaxStats:
    """Running value bounds over the search tree (host side, like the pseudocode)."""

    def __init__(self, known_bounds: Optional[Tuple[float, float]] = None):
        self.bounds = known_bounds or (float("inf"), -float("inf"))

    def update(self, value):
        lo, hi = self.bounds
        self.bounds = (min(lo, float(value.min())), max(hi, float(value.max())))  # expect: FL000 GB0124; FL302

    def normalize(self, value):
        lo, hi = self.bounds
        if hi > lo and math.isfinite(hi - lo):
            return (value - lo) / (hi - lo)
        return value


@torch.compile
def normalized_q_values(q, visit_counts, stats: MinMaxStats, c_visit: float = 50.0):
    stats.update(q[visit_counts > 0])  # expect: FL000 GB0036
    q = stats.normalize(q)
    completed = torch.where(visit_counts > 0, q, q.mean(-1, keepdim=True))
    return completed * (c_visit + visit_counts.max(-1, keepdim=True)[0])


class SequenceReplay:
    keys = ("obs", "action", "reward", "is_first")

    def __init__(self, capacity: int = 40, obs_dim: int = 5, act_dim: int = 3, seed: int = 0):
        g = torch.Generator().manual_seed(seed)
        self.obs = torch.randn(capacity, obs_dim, generator=g)
        self.action = torch.randn(capacity, act_dim, generator=g)
        self.reward = torch.randn(capacity, generator=g)
        self.is_first = torch.rand(capacity, generator=g) < 0.1

    def __len__(self):
        return self.reward.shape[0]


def _episode_aligned(starts: List[int], is_first, seq_len: int) -> List[int]:
    aligned = []
    for s in starts:
        firsts = torch.nonzero(is_first[s + 1:s + seq_len]).flatten()  # expect: FL000 GB0036
        aligned.append(s + int(firsts[0]) + 1 if len(firsts) else s)
    return aligned


@torch.compile
def sample_sequences(replay: SequenceReplay, starts, seq_len: int = 6, align: bool = True):
    if align:
        starts = torch.tensor(_episode_aligned(starts.tolist(), replay.is_first, seq_len))  # expect: FL000 GB0033
    idx = starts.unsqueeze(1) + torch.arange(seq_len)
    idx = idx.clamp_max(len(replay) - 1)
    batch = {k: getattr(replay, k)[idx] for k in replay.keys}
    batch["is_first"][:, 0] = True
    return batch


def _gen(k):
    return torch.Generator().manual_seed(k)


def _randn(*shape, k=0):
    return torch.randn(*shape, generator=_gen(k))


def _rssm_inputs(b, t, cfg=DEFAULT, k=2):
    is_first = torch.arange(t).expand(b, t) == 0
    return (_randn(b, t, cfg.embed, k=k), _randn(b, t, cfg.action_dim, k=k + 1), is_first)


def _returns_inputs(h, b, k=3):
    return (_randn(h, b, k=k), _randn(h + 1, b, k=k + 1), torch.full((h, b), DEFAULT.gamma))


C, FEAT = DEFAULT, DEFAULT.feat_dim
_onehot = lambda n, shape, k: F.one_hot(torch.randint(0, n, shape, generator=_gen(k)), n).float()
CASES = {
    "MLP": lambda: (MLP(5, 4, hidden=6), (_randn(3, 5),)),
    "StochasticHead": lambda: (StochasticHead(7), (_randn(3, 7), torch.rand(3, 4, 5, generator=_gen(5)))),
    "RSSM": lambda: (RSSM(), _rssm_inputs(2, 3), _rssm_inputs(4, 5)),
    "TwoHotHead": lambda: (TwoHotHead(), (_randn(3, FEAT),)),
    "Actor": lambda: (Actor(), (_randn(3, FEAT),)),
    "SlowCritic": lambda: (SlowCritic(), (_randn(3, FEAT), _randn(3))),
    "PercentileNormalizer": lambda: (PercentileNormalizer(), (_randn(4, 3) * 5,)),
    "normalize_observations": lambda: (normalize_observations, (_randn(6, 5), RunningMeanStd((5,)))),
    "lambda_returns": lambda: (lambda_returns, _returns_inputs(4, 3), _returns_inputs(6, 5)),
    "ImagineRollout": lambda: (ImagineRollout(RSSM(), Actor()),
                               ({"deter": _randn(3, C.deter), "stoch": _onehot(C.classes, (3, C.stoch), 1)},)),
    "WorldModelLoss": lambda: (WorldModelLoss(), (_randn(2, 3, C.stoch, C.classes, k=4),
                                                  _randn(2, 3, C.stoch, C.classes, k=5), _randn(2, 3, C.num_bins, k=6),
                                                  _randn(2, 3, k=7), _randn(2, 3, k=8), torch.ones(2, 3))),
    "ActorLoss": lambda: (ActorLoss(Actor(), PercentileNormalizer()),
                          (_randn(4, 3, FEAT, k=7), _onehot(3, (4, 3), 8), _randn(4, 3, k=9), _randn(4, 3, k=10),
                           torch.ones(4, 3))),
    "ConvEncoder": lambda: (ConvEncoder(), (torch.rand(2, 3, 7, 6, generator=_gen(13)),),
                            (torch.rand(2, 3, 9, 10, generator=_gen(13)),)),
    "MuZeroPrediction": lambda: (MuZeroPrediction(), (_randn(3, 8), torch.tensor([[True, False, True]] * 3))),
    "normalized_q_values": lambda: (normalized_q_values, (_randn(2, 3), torch.tensor([[2., 0., 1.], [1., 3., 0.]]),
                                                          MinMaxStats())),
    "sample_sequences": lambda: (sample_sequences, (SequenceReplay(), torch.tensor([2, 11, 25]))),
}
