"""Reinforcement-learning code: acting, returns, advantages, replay -- Python control flow galore."""
import random

import torch
import torch.nn.functional as F
from torch import nn
from torch.distributions import Categorical


class Policy(nn.Module):
    def __init__(self, obs_dim=6, actions=3):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, 16), nn.Tanh())
        self.pi = nn.Linear(16, actions)
        self.v = nn.Linear(16, 1)

    def forward(self, obs):
        h = self.body(obs)
        return self.pi(h), self.v(h).squeeze(-1)


class Actor(nn.Module):
    """Acts in a Python environment: needs a Python int action."""

    def __init__(self):
        super().__init__()
        self.policy = Policy()

    def forward(self, obs):
        logits, value = self.policy(obs)
        dist = Categorical(logits=logits)
        action = dist.sample()
        return action.item(), dist.log_prob(action), value  # expect: FL102 GB0124


class BatchedActor(Actor):
    def forward(self, obs):
        logits, value = self.policy(obs)
        action = torch.multinomial(logits.softmax(-1), 1).squeeze(-1)
        return action, logits.log_softmax(-1).gather(-1, action[:, None]).squeeze(-1), value


class EpsilonGreedy(nn.Module):
    def __init__(self, eps=0.1):
        super().__init__()
        self.q = nn.Linear(6, 3)
        self.eps = eps

    def forward(self, obs):
        if random.random() < self.eps:  # expect: FL121 GB0007
            return torch.randint(0, 3, (obs.shape[0],))
        return self.q(obs).argmax(-1)


class TensorEpsilonGreedy(EpsilonGreedy):
    def forward(self, obs):
        greedy = self.q(obs).argmax(-1)
        explore = torch.rand(obs.shape[0]) < self.eps
        return torch.where(explore, torch.randint_like(greedy, 0, 3), greedy)


@torch.compile
def discounted_returns(rewards, gamma: float = 0.99):
    returns, running = [], 0.0
    for r in reversed(rewards.tolist()):  # expect: FL103 GB0109
        running = r + gamma * running
        returns.append(running)
    return torch.tensor(returns[::-1])


@torch.compile
def discounted_returns_tensor(rewards, dones, gamma: float = 0.99):
    out = torch.zeros_like(rewards)
    running = torch.zeros(())
    for t in range(rewards.shape[0] - 1, -1, -1):  # expect: FL301
        running = rewards[t] + gamma * running * (1 - dones[t])
        out[t] = running
    return out


@torch.compile
def gae(rewards, values, dones, gamma: float = 0.99, lam: float = 0.95):
    T = rewards.shape[0]
    adv = torch.zeros_like(rewards)
    last = torch.zeros(())
    for t in reversed(range(T)):  # expect: FL301
        next_value = values[t + 1] if t + 1 < T else torch.zeros(())
        delta = rewards[t] + gamma * next_value * (1 - dones[t]) - values[t]
        last = delta + gamma * lam * (1 - dones[t]) * last
        adv[t] = last
    return adv


@torch.compile
def ppo_loss(new_logp, old_logp, adv, clip: float = 0.2):
    ratio = (new_logp - old_logp).exp()
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    return -torch.min(ratio * adv, ratio.clamp(1 - clip, 1 + clip) * adv).mean()


@torch.compile
def ppo_loss_with_early_stop(new_logp, old_logp, adv, target_kl: float = 0.01):
    approx_kl = (old_logp - new_logp).mean()
    if approx_kl > 1.5 * target_kl:  # expect: FL101 GB0170
        return None
    return -(torch.exp(new_logp - old_logp) * adv).mean()


@torch.compile
def td_target(reward, next_q, done, gamma: float = 0.99):
    return reward + gamma * next_q.max(-1).values * (~done)


@torch.compile
def double_dqn_target(reward, next_q_online, next_q_target, done, gamma: float = 0.99):
    best = next_q_online.argmax(-1, keepdim=True)
    return reward + gamma * next_q_target.gather(-1, best).squeeze(-1) * (~done)


class ReplayBuffer(nn.Module):
    """Keeps transitions in a Python list and samples a batch inside forward."""

    def __init__(self, capacity=4):
        super().__init__()
        self.capacity = capacity
        self.items = []

    def forward(self, transition, batch: int = 2):
        self.items.append(transition)  # expect: FL302
        if len(self.items) > self.capacity:
            self.items.pop(0)
        picks = random.sample(range(len(self.items)), min(batch, len(self.items)))  # expect: FL121 GB0007
        return torch.stack([self.items[i] for i in picks])


class RewardNormalizer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.zeros(()))
        self.register_buffer("var", torch.ones(()))

    def forward(self, rewards, momentum: float = 0.01):
        self.mean.lerp_(rewards.mean(), momentum)
        self.var.lerp_(rewards.var(), momentum)
        return (rewards - self.mean) / self.var.sqrt().clamp(min=1e-4)


class EpisodeTracker(nn.Module):
    """Resets per-episode statistics when an episode ends."""

    def __init__(self):
        super().__init__()
        self.register_buffer("episode_return", torch.zeros(()))

    def forward(self, reward, done):
        self.episode_return += reward
        finished = self.episode_return.clone()
        if done:  # expect: FL101 GB0170
            self.episode_return.zero_()
        return finished


@torch.compile
def entropy_bonus(logits, coef: float = 0.01):
    return coef * Categorical(logits=logits).entropy().mean()


@torch.compile
def masked_actions(logits, legal):
    return F.softmax(logits.masked_fill(~legal, float("-inf")), dim=-1)


@torch.compile
def legal_action_ids(legal):
    return legal.nonzero(as_tuple=True)[-1]  # expect: FL105 GB0036


CASES = {
    "Policy": lambda: (Policy(), (torch.randn(4, 6),)),
    "Actor": lambda: (Actor(), (torch.randn(1, 6),)),
    "BatchedActor": lambda: (BatchedActor(), (torch.randn(4, 6),)),
    "EpsilonGreedy": lambda: (EpsilonGreedy(eps=0.9), (torch.randn(4, 6),)),
    "TensorEpsilonGreedy": lambda: (TensorEpsilonGreedy(), (torch.randn(4, 6),)),
    "discounted_returns": lambda: (discounted_returns, (torch.rand(5),)),
    "discounted_returns_tensor": lambda: (
        discounted_returns_tensor, (torch.rand(5), torch.tensor([0.0, 0, 1, 0, 0])), (torch.rand(7), torch.zeros(7))),
    "gae": lambda: (
        gae, (torch.rand(5), torch.rand(5), torch.tensor([0.0, 0, 1, 0, 0])), (torch.rand(7), torch.rand(7), torch.zeros(7))),
    "ppo_loss": lambda: (ppo_loss, (torch.randn(8), torch.randn(8), torch.randn(8))),
    "ppo_loss_with_early_stop": lambda: (ppo_loss_with_early_stop, (torch.randn(8), torch.randn(8), torch.randn(8))),
    "td_target": lambda: (td_target, (torch.rand(4), torch.randn(4, 3), torch.tensor([False, True, False, False]))),
    "double_dqn_target": lambda: (
        double_dqn_target, (torch.rand(4), torch.randn(4, 3), torch.randn(4, 3), torch.tensor([False, True, False, False]))),
    "ReplayBuffer": lambda: (ReplayBuffer(), (torch.randn(3),)),
    "RewardNormalizer": lambda: (RewardNormalizer(), (torch.randn(6),)),
    "EpisodeTracker": lambda: (EpisodeTracker(), (torch.tensor(1.0), torch.tensor(True))),
    "entropy_bonus": lambda: (entropy_bonus, (torch.randn(4, 3),)),
    "masked_actions": lambda: (masked_actions, (torch.randn(4, 3), torch.rand(4, 3) > 0.3)),
    "legal_action_ids": lambda: (legal_action_ids, (torch.rand(4, 3) > 0.3,)),
}
