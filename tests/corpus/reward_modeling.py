"""RLHF utilities in the style of TRL / OpenRLHF / trlx: a tiny causal backbone with a scalar reward
head and a value head, Bradley-Terry / hinge pairwise losses, DPO-style concatenated batches, PPO
rewards with a KL penalty and an adaptive KL controller, GAE and whitening, GRPO group-normalised
advantages with lists of reward functions, greedy rollouts gathering log-probs, stats logging."""
import functools
import logging
import math
import warnings
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("rlhf")
logger.addHandler(logging.NullHandler())

PAD_TOKEN_ID = 0
EOS_TOKEN_ID = 2
IGNORE_INDEX = -100
LOGPROB_CHUNK_ROWS = 16
LOG_EVERY = 10
WHITEN_EPS = 1e-8

@dataclass
class BackboneConfig:
    vocab_size: int = 11
    hidden_size: int = 8
    num_layers: int = 2
    num_heads: int = 2
    max_positions: int = 24
    summary_dropout_prob: Optional[float] = 0.1

@dataclass
class PPOConfig:
    cliprange: float = 0.2
    cliprange_value: float = 0.2
    vf_coef: float = 0.1
    init_kl_coef: float = 0.05
    target_kl: Optional[float] = 6.0
    horizon: int = 10000
    ratio_threshold: float = 10.0


# --------------------------------------------------------------------------- masked statistics

def masked_mean(values, mask, axis: Optional[int] = None):
    if axis is not None:
        return (values * mask).sum(axis=axis) / mask.sum(axis=axis)
    return (values * mask).sum() / mask.sum()

def masked_var(values, mask, unbiased: bool = True):
    mean = masked_mean(values, mask)
    variance = masked_mean((values - mean) ** 2, mask)
    if unbiased:
        mask_sum = mask.sum()
        if mask_sum == 0:  # expect: FL000 GB0170
            raise ValueError("The sum of the mask is zero, which can happen when `mini_batch_size=1`")
        variance = variance * (mask_sum / (mask_sum - 1))
    return variance

def masked_whiten(values, mask, shift_mean: bool = True):
    mean, var = masked_mean(values, mask), masked_var(values, mask)
    whitened = (values - mean) * torch.rsqrt(var + WHITEN_EPS)
    return whitened if shift_mean else whitened + mean

def whiten(values, shift_mean: bool = True):
    mean, var = torch.mean(values), torch.var(values)
    whitened = (values - mean) * torch.rsqrt(var + WHITEN_EPS)
    return whitened if shift_mean else whitened + mean

def flatten_dict(nested: Dict, sep: str = "/", prefix: str = "") -> Dict:
    out = {}
    for key, value in nested.items():
        name = f"{prefix}{sep}{key}" if prefix else key
        if isinstance(value, dict):
            out.update(flatten_dict(value, sep, name))
        else:
            out[name] = value
    return out

def stats_to_np(stats: Dict[str, torch.Tensor]) -> Dict[str, object]:
    new_dict = {}
    for k, v in stats.items():
        if isinstance(v, torch.Tensor):
            v = v.detach().cpu()
            v = (v.float() if v.dtype == torch.bfloat16 else v).numpy()
        new_dict[k] = float(v) if np.isscalar(v) else v  # expect: FL000 GB0208
    return new_dict


# --------------------------------------------------------------------------- log-probs and KL

def logprobs_from_logits(logits, labels):
    return torch.gather(F.log_softmax(logits, dim=-1), 2, labels.unsqueeze(2)).squeeze(-1)

def selective_log_softmax(logits, index):
    """Row-chunked logsumexp so that the [rows, vocab] log-softmax is never materialised at once."""
    rows = logits.shape[0] * logits.shape[1]
    if rows <= LOGPROB_CHUNK_ROWS:  # expect: FL301
        return logprobs_from_logits(logits, index)
    flat_logits, flat_index = logits.reshape(rows, -1), index.reshape(rows)
    pieces = []
    for start in range(0, rows, LOGPROB_CHUNK_ROWS):
        chunk = flat_logits[start:start + LOGPROB_CHUNK_ROWS]
        picked = chunk.gather(-1, flat_index[start:start + LOGPROB_CHUNK_ROWS, None]).squeeze(-1)
        pieces.append(picked - torch.logsumexp(chunk, dim=-1))
    return torch.cat(pieces).view_as(index)

def entropy_from_logits(logits):
    pd = torch.softmax(logits, dim=-1)
    return torch.logsumexp(logits, dim=-1) - torch.sum(pd * logits, dim=-1)

def _k3(logprob, ref_logprob):
    log_ratio = ref_logprob - logprob
    return torch.exp(log_ratio) - 1 - log_ratio

KL_ESTIMATORS: Dict[str, Callable] = {
    "kl": lambda logprob, ref: logprob - ref,
    "mse": lambda logprob, ref: 0.5 * (logprob - ref).square(),
    "k3": _k3,
}

def kl_penalty(logprob, ref_logprob, kind: str = "kl"):
    estimator = KL_ESTIMATORS.get(kind)
    if estimator is None:
        raise NotImplementedError(f"unknown KL estimator {kind!r}")
    return estimator(logprob, ref_logprob)

class AdaptiveKLController:
    """Ziegler et al. 2019: proportional control of the KL coefficient towards a target."""

    def __init__(self, init_kl_coef: float, target: float, horizon: int):
        self.value, self.target, self.horizon = init_kl_coef, target, horizon

    def update(self, current: float, n_steps: int):
        proportional_error = np.clip(current / self.target - 1, -0.2, 0.2)
        self.value *= 1 + proportional_error * n_steps / self.horizon

def make_kl_controller(cfg: PPOConfig) -> AdaptiveKLController:
    return AdaptiveKLController(cfg.init_kl_coef, cfg.target_kl or math.inf, cfg.horizon)


# --------------------------------------------------------------------------- models

def build_attention_bias(attention_mask: Optional[torch.Tensor], seq_len: int, device) -> torch.Tensor:
    causal = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()
    if attention_mask is None:
        return causal
    return causal[None, None] & attention_mask[:, None, None, :].bool()

class Block(nn.Module):
    def __init__(self, hidden_size: int, num_heads: int):
        super().__init__()
        self.num_heads = num_heads
        self.ln_1, self.ln_2 = nn.LayerNorm(hidden_size), nn.LayerNorm(hidden_size)
        self.qkv = nn.Linear(hidden_size, 3 * hidden_size)
        self.proj = nn.Linear(hidden_size, hidden_size)
        self.mlp = nn.Sequential(nn.Linear(hidden_size, 2 * hidden_size), nn.GELU(),
                                 nn.Linear(2 * hidden_size, hidden_size))

    def forward(self, x, attn_bias=None):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.num_heads, -1).transpose(1, 2) for z in self.qkv(self.ln_1(x)).chunk(3, -1))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_bias)
        x = x + self.proj(y.transpose(1, 2).flatten(2))
        return x + self.mlp(self.ln_2(x))

class TinyBackbone(nn.Module):
    def __init__(self, cfg: BackboneConfig):
        super().__init__()
        self.wte = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.wpe = nn.Embedding(cfg.max_positions, cfg.hidden_size)
        self.h = nn.ModuleList(Block(cfg.hidden_size, cfg.num_heads) for _ in range(cfg.num_layers))
        self.ln_f = nn.LayerNorm(cfg.hidden_size)

    def forward(self, input_ids, attention_mask=None):
        seq_len = input_ids.shape[-1]
        hidden = self.wte(input_ids) + self.wpe(torch.arange(seq_len, device=input_ids.device))[None]
        bias = build_attention_bias(attention_mask, seq_len, input_ids.device)
        for block in self.h:
            hidden = block(hidden, bias)
        return self.ln_f(hidden)

class ValueHead(nn.Module):
    """TRL's value head: optional dropout, a scalar projection, dtype alignment."""

    def __init__(self, config, **kwargs):
        super().__init__()
        dropout = kwargs.pop("summary_dropout_prob", getattr(config, "summary_dropout_prob", 0.1))
        self.dropout = nn.Dropout(dropout) if dropout else nn.Identity()
        hidden_size = getattr(config, "word_embed_proj_dim", None) or config.hidden_size
        self.summary = nn.Linear(hidden_size, 1)

    def forward(self, hidden_states):
        output = self.dropout(hidden_states)
        if output.dtype != self.summary.weight.dtype:
            output = output.to(self.summary.weight.dtype)
        return self.summary(output)

class RewardModel(nn.Module):
    """Sequence-classification style: the reward is read at the last non-pad token."""

    def __init__(self, cfg: BackboneConfig, num_labels: int = 1, pad_token_id: Optional[int] = PAD_TOKEN_ID,
                 check_padding: bool = False):
        super().__init__()
        self.backbone = TinyBackbone(cfg)
        self.score = nn.Linear(cfg.hidden_size, num_labels, bias=False)
        self.pad_token_id, self.check_padding = pad_token_id, check_padding

    def _pool(self, hidden, input_ids):
        batch_size = input_ids.shape[0]
        sequence_lengths = torch.eq(input_ids, self.pad_token_id).int().argmax(-1) - 1
        sequence_lengths = sequence_lengths % input_ids.shape[-1]
        return hidden[torch.arange(batch_size, device=hidden.device), sequence_lengths]

    def forward(self, input_ids, attention_mask=None, return_dict: bool = True):
        if self.check_padding and self.pad_token_id is not None:
            assert (input_ids[:, 0] != self.pad_token_id).all(), "left padding is not supported"
        hidden = self.backbone(input_ids, attention_mask)
        rewards = self.score(self._pool(hidden, input_ids)).squeeze(-1)
        if not return_dict:
            return rewards
        return {"rewards": rewards, "last_hidden_state": hidden}

class EnsembleRewardModel(RewardModel):
    """Several score heads on one backbone; the conservative reward is mean - k * std."""

    def __init__(self, cfg: BackboneConfig, num_heads: int = 3, uncertainty_coef: float = 0.5):
        super().__init__(cfg, num_labels=num_heads)
        self.uncertainty_coef = uncertainty_coef
        self.last_disagreement = 0.0

    def forward(self, input_ids, attention_mask=None, return_dict: bool = True):
        per_head = super().forward(input_ids, attention_mask, return_dict=False)
        mean, std = per_head.mean(-1), per_head.std(-1)
        self.last_disagreement = std.mean().item()  # expect: FL000 GB0124
        rewards = mean - self.uncertainty_coef * std
        return {"rewards": rewards, "per_head": per_head} if return_dict else rewards

class CausalLMWithValueHead(nn.Module):
    def __init__(self, cfg: BackboneConfig):
        super().__init__()
        self.pretrained_model = TinyBackbone(cfg)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        self.v_head = ValueHead(cfg, summary_dropout_prob=None)

    def forward(self, input_ids, attention_mask=None):
        last_hidden_state = self.pretrained_model(input_ids, attention_mask)
        lm_logits = self.lm_head(last_hidden_state)
        value = self.v_head(last_hidden_state).squeeze(-1)
        if lm_logits.dtype != torch.float32:
            lm_logits = lm_logits.float()
        return lm_logits, None, value

class RunningRewardNormalizer(nn.Module):
    """Running mean/var over all rewards seen (parallel-variance update), then clip."""

    def __init__(self, epsilon: float = 1e-4, clip: float = 5.0):
        super().__init__()
        self.register_buffer("mean", torch.zeros(()))
        self.register_buffer("var", torch.ones(()))
        self.count, self.clip = epsilon, clip

    def _update(self, x):
        batch_mean, batch_var, batch_count = x.mean(), x.var(unbiased=False), x.numel()
        delta = batch_mean - self.mean
        total = self.count + batch_count
        m2 = self.var * self.count + batch_var * batch_count + delta ** 2 * self.count * batch_count / total
        self.mean.copy_(self.mean + delta * batch_count / total)
        self.var.copy_(m2 / total)
        self.count = total  # expect: FL302

    def forward(self, rewards, update: bool = True):
        if update and self.training:
            self._update(rewards)
        return ((rewards - self.mean) / torch.sqrt(self.var + WHITEN_EPS)).clamp(-self.clip, self.clip)


# --------------------------------------------------------------------------- pairwise losses

def bradley_terry_loss(chosen, rejected, beta: float = 1.0, margin=None):
    return -F.logsigmoid(beta * (chosen - rejected) - (0.0 if margin is None else margin))

def hinge_loss(chosen, rejected, beta: float = 1.0, margin=None):
    return torch.relu((1.0 if margin is None else margin) - beta * (chosen - rejected))

PAIRWISE_LOSSES = {"sigmoid": bradley_terry_loss, "bt": bradley_terry_loss, "hinge": hinge_loss}

class PairwisePreferenceLoss(nn.Module):
    def __init__(self, loss_type: str = "sigmoid", beta: float = 1.0, track_metrics: bool = True):
        super().__init__()
        self.loss_fn = functools.partial(PAIRWISE_LOSSES[loss_type], beta=beta)
        self.track_metrics = track_metrics
        self.metrics: Dict[str, List[float]] = defaultdict(list)

    def _record(self, chosen, rejected):
        accuracy = (chosen > rejected).float().mean()
        self.metrics["accuracy"].append(accuracy.item())  # expect: FL000 GB0124; FL302
        self.metrics["margin"].append((chosen - rejected).mean().item())  # expect: FL000 GB0124

    def forward(self, chosen_rewards, rejected_rewards, margin=None):
        loss = self.loss_fn(chosen_rewards, rejected_rewards, margin=margin).mean()
        if self.track_metrics:
            self._record(chosen_rewards.detach(), rejected_rewards.detach())
        return loss

def pad_to_length(tensor, length: int, pad_value, dim: int = -1):
    if tensor.size(dim) >= length:  # expect: FL301
        return tensor
    pad_size = list(tensor.shape)
    pad_size[dim] = length - tensor.size(dim)
    filler = pad_value * torch.ones(*pad_size, dtype=tensor.dtype, device=tensor.device)
    return torch.cat([tensor, filler], dim=dim)

@torch.compile
def concatenated_inputs(batch: Dict[str, torch.Tensor], padding_value: int = PAD_TOKEN_ID):
    max_length = max(batch["chosen_input_ids"].shape[1], batch["rejected_input_ids"].shape[1])
    out = {}
    for key in ("input_ids", "attention_mask", "labels"):
        pad_value = {"labels": IGNORE_INDEX, "attention_mask": 0}.get(key, padding_value)
        chosen = pad_to_length(batch[f"chosen_{key}"], max_length, pad_value)
        rejected = pad_to_length(batch[f"rejected_{key}"], max_length, pad_value)
        out[f"concatenated_{key}"] = torch.cat([chosen, rejected], dim=0)
    return out

@torch.compile
def policy_logprobs(logits, response_ids, temperature: float = 1.0):
    logits = logits / temperature
    return selective_log_softmax(logits, response_ids), entropy_from_logits(logits)


# --------------------------------------------------------------------------- PPO

def _add_score_at_eos(reward, mask, score):
    last_non_masked_index = mask.nonzero()[-1]  # expect: FL000 GB0036
    reward[last_non_masked_index] += score
    return reward

@torch.compile
def compute_rewards(scores, logprobs, ref_logprobs, masks, kl_coef: float, kl_kind: str = "kl"):
    rewards, non_score_rewards, kls = [], [], []
    for score, logprob, ref_logprob, mask in zip(scores, logprobs, ref_logprobs, masks):
        kl = kl_penalty(logprob, ref_logprob, kl_kind)
        kls.append(kl)
        non_score_rewards.append(-kl_coef * kl)
        rewards.append(_add_score_at_eos(non_score_rewards[-1].clone(), mask, score))
    return torch.stack(rewards), torch.stack(non_score_rewards), torch.stack(kls)

@torch.compile
def compute_gae(values, rewards, mask, gamma: float = 1.0, lam: float = 0.95, whiten_advantages: bool = True):
    lastgaelam = 0
    advantages_reversed = []
    gen_len = rewards.shape[-1]
    values, rewards = values * mask, rewards * mask
    for t in reversed(range(gen_len)):  # expect: FL301
        nextvalues = values[:, t + 1] if t < gen_len - 1 else 0.0
        delta = rewards[:, t] + gamma * nextvalues - values[:, t]
        lastgaelam = delta + gamma * lam * lastgaelam
        advantages_reversed.append(lastgaelam)
    advantages = torch.stack(advantages_reversed[::-1]).transpose(0, 1)
    returns = advantages + values
    if whiten_advantages:
        advantages = whiten(advantages)
    return advantages.detach(), returns

@torch.compile
def ppo_loss(old_logprobs, values, logits, vpreds, logprobs, advantages, returns, mask, cfg: PPOConfig):
    advantages = masked_whiten(advantages, mask)
    vpredclipped = torch.clamp(vpreds, values - cfg.cliprange_value, values + cfg.cliprange_value)
    vf_losses1, vf_losses2 = (vpreds - returns) ** 2, (vpredclipped - returns) ** 2
    vf_loss = 0.5 * masked_mean(torch.max(vf_losses1, vf_losses2), mask)
    vf_clipfrac = masked_mean(torch.gt(vf_losses2, vf_losses1).float(), mask)
    ratio = torch.exp(logprobs - old_logprobs)
    pg_losses = -advantages * ratio
    pg_losses2 = -advantages * torch.clamp(ratio, 1.0 - cfg.cliprange, 1.0 + cfg.cliprange)
    pg_loss = masked_mean(torch.max(pg_losses, pg_losses2), mask)
    pg_clipfrac = masked_mean(torch.gt(pg_losses2, pg_losses).float(), mask)
    loss = pg_loss + cfg.vf_coef * vf_loss
    avg_ratio = masked_mean(ratio, mask).item()  # expect: FL000 GB0124
    if avg_ratio > cfg.ratio_threshold:
        warnings.warn(f"The average ratio of batch ({avg_ratio:.2f}) exceeds threshold {cfg.ratio_threshold:.2f}.")
        pg_loss, vf_loss = pg_loss * 0.0, vf_loss * 0.0
        loss = loss * 0.0

    entropy = masked_mean(entropy_from_logits(logits), mask)
    approxkl = 0.5 * masked_mean((logprobs - old_logprobs) ** 2, mask)
    stats = dict(loss=dict(policy=pg_loss.detach(), value=vf_loss.detach(), total=loss.detach()),
                 policy=dict(entropy=entropy.detach(), approxkl=approxkl.detach(), clipfrac=pg_clipfrac.detach()),
                 val=dict(vpred=masked_mean(vpreds, mask).detach(), clipfrac=vf_clipfrac.detach()))
    return pg_loss, cfg.vf_coef * vf_loss, flatten_dict(stats)

@torch.compile
def observe_kl(controller: AdaptiveKLController, logprobs, ref_logprobs, mask, n_steps: int, kind: str = "k3"):
    kl = masked_mean(kl_penalty(logprobs, ref_logprobs, kind), mask, axis=-1).mean()
    controller.update(float(kl), n_steps)  # expect: FL000 GB0124
    return kl, controller.value


# --------------------------------------------------------------------------- GRPO

def log_metric(metrics: Optional[Dict[str, list]], name: str, value):
    if metrics is not None:
        metrics.setdefault(name, []).append(value.item() if torch.is_tensor(value) else value)  # expect: FL000 GB0124

@torch.compile
def grpo_advantages(rewards, num_generations: int, scale_rewards: bool = True, eps: float = 1e-4,
                    metrics: Optional[Dict[str, list]] = None):
    grouped = rewards.view(-1, num_generations)
    mean_grouped = grouped.mean(dim=1).repeat_interleave(num_generations, dim=0)
    std_grouped = grouped.std(dim=1).repeat_interleave(num_generations, dim=0)
    advantages = rewards - mean_grouped
    if scale_rewards:
        advantages = advantages / (std_grouped + eps)
    is_std_zero = torch.isclose(std_grouped, torch.zeros_like(std_grouped))
    log_metric(metrics, "frac_reward_zero_std", is_std_zero.float().mean())
    log_metric(metrics, "num_groups", rewards.shape[0] // num_generations)
    return advantages

def length_reward(completion_ids, completion_mask, target_len: int = 4):
    lengths = completion_mask.sum(-1).float()
    return -torch.abs(lengths - target_len) / target_len

def eos_reward(completion_ids, completion_mask):
    return (completion_ids == EOS_TOKEN_ID).any(-1).float()

def distinct_token_reward(completion_ids, completion_mask):
    scores = []
    for row, row_mask in zip(completion_ids.tolist(), completion_mask.tolist()):  # expect: FL000 GB0033; FL000 GB0109
        tokens = [tok for tok, keep in zip(row, row_mask) if keep]
        scores.append(len(set(tokens)) / max(len(tokens), 1))
    return torch.tensor(scores, dtype=torch.float32)

DEFAULT_REWARD_FUNCS = [length_reward, eos_reward]

@torch.compile
def score_completions(completion_ids, completion_mask, reward_funcs: Sequence[Callable] = DEFAULT_REWARD_FUNCS,
                      reward_weights: Optional[List[float]] = None):
    per_func = torch.stack([fn(completion_ids, completion_mask) for fn in reward_funcs], dim=1)
    if torch.isnan(per_func).all(dim=1).any():  # expect: FL000 GB0170
        warnings.warn("All reward functions returned None for some completions; their reward is set to 0.")
    if reward_weights is None:
        reward_weights = [1.0] * len(reward_funcs)
    weights = torch.tensor(reward_weights, dtype=per_func.dtype)
    return torch.nansum(per_func * weights, dim=1), per_func.mean(0)


# --------------------------------------------------------------------------- rollouts and logging

@torch.compile
def generate_with_logprobs(policy: nn.Module, input_ids, max_new_tokens: int = 4, temperature: float = 1.0,
                           eos_token_id: int = EOS_TOKEN_ID):
    finished = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
    logprobs = []
    for _ in range(max_new_tokens):
        logits, _, value = policy(input_ids)
        next_logits = logits[:, -1, :] / temperature
        next_tokens = torch.where(finished, torch.full_like(finished, PAD_TOKEN_ID, dtype=torch.long),
                                  next_logits.argmax(-1))
        logprobs.append(torch.log_softmax(next_logits, -1).gather(-1, next_tokens[:, None]).squeeze(-1))
        input_ids = torch.cat([input_ids, next_tokens[:, None]], dim=-1)
        finished = finished | (next_tokens == eos_token_id)
        if finished.all():  # expect: FL000 GB0170
            break
    return input_ids, torch.stack(logprobs, dim=1), value[:, -len(logprobs) - 1:-1]

@torch.compile
def rollout_summary(scores, ref_kl, response_mask, step: int, history: Optional[list] = None):
    response_lengths = response_mask.sum(-1).float()
    stats = {
        "env/reward_mean": scores.mean(),
        "env/reward_std": scores.std(),
        "objective/kl": (ref_kl * response_mask).sum(-1).mean(),
        "tokens/response_len_mean": response_lengths.mean(),
    }
    if history is not None:  # expect: FL302
        history.append(stats_to_np(stats))
    if step % LOG_EVERY == 0:
        logger.info("step %d | %s", step, ", ".join(f"{k}={float(v):.3f}" for k, v in stats.items()))  # expect: FL000 GB0124
    stats["env/reward_dist"] = scores.detach()
    return stats


# --------------------------------------------------------------------------- cases

def _randn(*shape, seed: int = 0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))

def _ids(batch: int, seq: int, seed: int = 0, low: int = 3):
    return torch.randint(low, BackboneConfig().vocab_size, (batch, seq), generator=torch.Generator().manual_seed(seed))

def _mask(batch: int, seq: int, lengths: Sequence[int]):
    return (torch.arange(seq)[None] < torch.tensor(lengths)[:, None]).float()

def _right_padded(batch: int, seq: int, lengths: Sequence[int], seed: int = 0):
    mask = _mask(batch, seq, lengths).long()
    return _ids(batch, seq, seed) * mask + PAD_TOKEN_ID * (1 - mask), mask

def _model(cls, *args, seed: int = 0, **kw):
    torch.manual_seed(seed)
    return cls(*args, **kw).eval()

def _preference_batch(batch: int, chosen_len: int, rejected_len: int):
    batch_dict = {}
    for i, (name, length) in enumerate((("chosen", chosen_len), ("rejected", rejected_len))):
        ids, mask = _right_padded(batch, length, [length - k for k in range(batch)], seed=i)
        labels = ids.masked_fill(mask == 0, IGNORE_INDEX)
        batch_dict.update({f"{name}_input_ids": ids, f"{name}_attention_mask": mask, f"{name}_labels": labels})
    return batch_dict

def _ppo_args(batch: int = 3, seq: int = 5):
    mask = _mask(batch, seq, [seq, seq - 1, seq - 2])
    logp = F.log_softmax(_randn(batch, seq, 7, seed=1), -1).max(-1).values
    return (logp, _randn(batch, seq, seed=2), _randn(batch, seq, 7, seed=3), _randn(batch, seq, seed=4),
            logp + 0.05 * _randn(batch, seq, seed=5), _randn(batch, seq, seed=6), _randn(batch, seq, seed=7),
            mask, PPOConfig())

CFG = BackboneConfig()
CASES = {
    "Block": lambda: (_model(Block, 8, 2), (_randn(3, 5, 8),)),
    "TinyBackbone": lambda: (_model(TinyBackbone, CFG), _right_padded(3, 5, [5, 4, 3])),
    "ValueHead": lambda: (_model(ValueHead, CFG), (_randn(3, 5, 8),)),
    "RewardModel": lambda: (_model(RewardModel, CFG), _right_padded(3, 5, [5, 4, 3])),
    "RewardModel_checked": lambda: (_model(RewardModel, CFG, check_padding=True), _right_padded(3, 5, [5, 4, 3])),
    "EnsembleRewardModel": lambda: (_model(EnsembleRewardModel, CFG), _right_padded(3, 5, [5, 4, 3])),
    "CausalLMWithValueHead": lambda: (_model(CausalLMWithValueHead, CFG), _right_padded(3, 5, [5, 4, 3])),
    "RunningRewardNormalizer": lambda: (RunningRewardNormalizer().train(), (_randn(6, seed=4),)),
    "PairwisePreferenceLoss": lambda: (PairwisePreferenceLoss(), (_randn(5, seed=1), _randn(5, seed=2))),
    "concatenated_inputs": lambda: (concatenated_inputs, (_preference_batch(3, 5, 7),),
                                    (_preference_batch(4, 9, 6),)),
    "policy_logprobs": lambda: (policy_logprobs, (_randn(2, 5, 11), _ids(2, 5, low=0)),
                                (_randn(3, 9, 11, seed=1), _ids(3, 9, seed=1, low=0))),
    "compute_rewards": lambda: (compute_rewards, (_randn(3), _randn(3, 5, seed=1), _randn(3, 5, seed=2),
                                                  _mask(3, 5, [5, 4, 3]), 0.05)),
    "compute_gae": lambda: (compute_gae, (_randn(3, 5), _randn(3, 5, seed=1), _mask(3, 5, [5, 4, 2])),
                            (_randn(4, 7, seed=2), _randn(4, 7, seed=3), _mask(4, 7, [7, 6, 5, 3]))),
    "ppo_loss": lambda: (ppo_loss, _ppo_args()),
    "observe_kl": lambda: (observe_kl, (make_kl_controller(PPOConfig()), _randn(3, 5), _randn(3, 5, seed=1),
                                        _mask(3, 5, [5, 4, 3]), 4)),
    "grpo_advantages": lambda: (grpo_advantages, (_randn(12), 4, True, 1e-4, {})),
    "score_completions": lambda: (score_completions, (_ids(6, 5, low=0), _mask(6, 5, [5, 4, 3, 5, 2, 4]))),
    "score_completions_distinct": lambda: (score_completions, (_ids(6, 5, low=0), _mask(6, 5, [5, 4, 3, 5, 2, 4]),
                                                               [length_reward, distinct_token_reward], [0.5, 1.0])),
    "generate_with_logprobs": lambda: (generate_with_logprobs, (_model(CausalLMWithValueHead, CFG), _ids(3, 4))),
    "rollout_summary": lambda: (rollout_summary, (_randn(4), _randn(4, 5, seed=1), _mask(4, 5, [5, 4, 3, 2]), 20, [])),
}
