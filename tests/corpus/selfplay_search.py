"""Self-play game agents in the AlphaZero / MuZero style: residual policy/value towers with
legal-move masking, a representation/dynamics/prediction trio with categorical value supports,
temperature sampling and Dirichlet root noise, PUCT selection over Python node objects and over
flat tensor trees, value backup, board history encoding, dihedral augmentation, n-step value
targets and the unrolled MuZero loss with metric callbacks."""
import functools
import logging
import math
import warnings
from dataclasses import dataclass
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("selfplay")
logger.addHandler(logging.NullHandler())

PLAYER_SIGN = (1, -1)
DOWNSAMPLE_ABOVE = 8  # boards wider than this are average-pooled before the representation tower


@dataclass(frozen=True)
class GameConfig:
    height: int
    width: int
    history: int = 3
    allow_pass: bool = True

    @property
    def board_size(self) -> int:
        return self.height * self.width

    @property
    def action_size(self) -> int:
        return self.board_size + int(self.allow_pass)

    @property
    def in_planes(self) -> int:
        return 2 * self.history + 1


@dataclass
class NetConfig:
    channels: int = 8
    blocks: int = 2
    value_hidden: int = 16
    activation: str = "relu"
    norm: str = "batch"
    support_size: int = 5


@dataclass
class SearchConfig:
    num_simulations: int = 3
    c_puct_base: float = 19652.0
    c_puct_init: float = 1.25
    dirichlet_alpha: float = 0.3
    exploration_fraction: float = 0.25
    noise: str = "dirichlet"
    discount: float = 0.997
    temperature_schedule: Tuple[Tuple[int, float], ...] = ((8, 1.0), (16, 0.5))


GAMES: Dict[str, GameConfig] = {"mini_go": GameConfig(4, 6), "go5": GameConfig(5, 5, history=2)}
DEFAULT_NET = NetConfig()
DEFAULT_SEARCH = SearchConfig()


_NORMS: Dict[str, Callable[[int], nn.Module]] = {
    "batch": nn.BatchNorm2d,
    "group": functools.partial(nn.GroupNorm, 2),
}


def make_norm(kind: str, channels: int) -> nn.Module:
    return _NORMS[kind](channels)


# --------------------------------------------------------------------------- small tensor helpers

def mask_illegal(logits: torch.Tensor, legal_mask: torch.Tensor) -> torch.Tensor:
    return logits.masked_fill(~legal_mask.bool(), torch.finfo(logits.dtype).min)


def scale_gradient(x: torch.Tensor, scale: float) -> torch.Tensor:
    return x * scale + x.detach() * (1.0 - scale)


def normalize_hidden(h: torch.Tensor) -> torch.Tensor:
    flat = h.flatten(1)
    lo, hi = flat.aminmax(dim=1, keepdim=True)
    span = torch.where(hi - lo < 1e-5, hi - lo + 1e-5, hi - lo)
    return ((flat - lo) / span).view_as(h)


def support_to_scalar(logits: torch.Tensor, support_size: int, eps: float = 0.001) -> torch.Tensor:
    probs = torch.softmax(logits, dim=-1)
    support = torch.arange(-support_size, support_size + 1, dtype=probs.dtype, device=probs.device)
    x = (probs * support).sum(-1)
    return torch.sign(x) * (((torch.sqrt(1 + 4 * eps * (torch.abs(x) + 1 + eps)) - 1) / (2 * eps)) ** 2 - 1)


def scalar_to_support(x: torch.Tensor, support_size: int, eps: float = 0.001) -> torch.Tensor:
    x = torch.sign(x) * (torch.sqrt(torch.abs(x) + 1) - 1) + eps * x
    x = x.clamp(-support_size, support_size)
    floor = x.floor()
    prob = x - floor
    out = torch.zeros(*x.shape, 2 * support_size + 1, dtype=x.dtype, device=x.device)
    out.scatter_(-1, (floor + support_size).long().unsqueeze(-1), (1 - prob).unsqueeze(-1))
    upper = floor + support_size + 1
    overflow = upper > 2 * support_size
    prob, upper = prob.masked_fill(overflow, 0.0), upper.masked_fill(overflow, 0.0)
    out.scatter_(-1, upper.long().unsqueeze(-1), prob.unsqueeze(-1))
    return out


def temperature_for_move(move_number: int, schedule=DEFAULT_SEARCH.temperature_schedule) -> float:
    for limit, temperature in schedule:
        if move_number < limit:
            return temperature
    return 0.0


def visit_counts_to_policy(visits, temperature: float = 1.0, legal_mask: Optional[torch.Tensor] = None):
    assert (visits >= 0).all(), "visit counts must be non-negative"
    if legal_mask is not None:
        visits = visits * legal_mask
    if temperature != 1.0:
        visits = visits ** (1.0 / temperature)
    return visits / visits.sum(-1, keepdim=True).clamp_min(1e-8)


def sample_from_policy(probs: torch.Tensor, generator: Optional[torch.Generator] = None) -> torch.Tensor:
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)  # expect: FL000 GB0055


# --------------------------------------------------------------------------- AlphaZero network

class ResidualBlock(nn.Module):
    def __init__(self, channels: int, norm: str = "batch", act: str = "relu"):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = make_norm(norm, channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = make_norm(norm, channels)
        self.act = getattr(F, act)

    def forward(self, x):
        out = self.act(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.act(out + x)


class PolicyValueNet(nn.Module):
    def __init__(self, game: GameConfig, cfg: NetConfig = DEFAULT_NET):
        super().__init__()
        self.game, self.cfg = game, cfg
        c = cfg.channels
        self.stem = nn.Sequential(nn.Conv2d(game.in_planes, c, 3, padding=1, bias=False),
                                  make_norm(cfg.norm, c), nn.ReLU())
        self.tower = nn.ModuleList([ResidualBlock(c, cfg.norm, cfg.activation) for _ in range(cfg.blocks)])
        self.policy_conv = nn.Conv2d(c, 2, 1)
        self.policy_fc = nn.Linear(2 * game.board_size, game.action_size)
        self.value_conv = nn.Conv2d(c, 1, 1)
        self.value_fc = nn.Sequential(nn.Linear(game.board_size, cfg.value_hidden), nn.ReLU(),
                                      nn.Linear(cfg.value_hidden, 1))

    def trunk(self, x):
        h = self.stem(x)
        for block in self.tower:
            h = block(h)
        return h

    def policy_logits(self, h, legal_mask=None):
        logits = self.policy_fc(F.relu(self.policy_conv(h)).flatten(1))
        if legal_mask is not None:
            logits = mask_illegal(logits, legal_mask)
        return logits

    def value(self, h):
        return torch.tanh(self.value_fc(F.relu(self.value_conv(h)).flatten(1))).squeeze(-1)

    def forward(self, x, legal_mask: Optional[torch.Tensor] = None):
        h = self.trunk(x)
        return self.policy_logits(h, legal_mask), self.value(h)


class KataPolicyValueNet(PolicyValueNet):
    """Adds a KataGo-style ownership head predicting the final owner of every point."""
    def __init__(self, game: GameConfig, cfg: NetConfig = DEFAULT_NET):
        super().__init__(game, cfg)
        self.ownership = nn.Conv2d(cfg.channels, 1, 1)

    def _report(self, ownership):
        logger.debug("mean |ownership| %.3f", ownership.abs().mean())  # expect: FL000 GB0291

    def forward(self, x, legal_mask: Optional[torch.Tensor] = None):
        h = self.trunk(x)
        ownership = torch.tanh(self.ownership(h)).squeeze(1)
        self._report(ownership)
        return self.policy_logits(h, legal_mask), self.value(h), ownership


# --------------------------------------------------------------------------- MuZero trio

class NetworkOutput(NamedTuple):
    value: torch.Tensor
    reward: torch.Tensor
    policy_logits: torch.Tensor
    hidden_state: torch.Tensor


class RepresentationNet(nn.Module):
    def __init__(self, game: GameConfig, cfg: NetConfig = DEFAULT_NET):
        super().__init__()
        self.conv = nn.Conv2d(game.in_planes, cfg.channels, 3, padding=1)
        self.blocks = nn.Sequential(*[ResidualBlock(cfg.channels, "group") for _ in range(cfg.blocks)])

    def forward(self, obs):
        if obs.shape[-1] > DOWNSAMPLE_ABOVE:  # expect: FL301
            obs = F.avg_pool2d(obs, 2)
        return normalize_hidden(self.blocks(F.relu(self.conv(obs))))


class DynamicsNet(nn.Module):
    def __init__(self, game: GameConfig, cfg: NetConfig = DEFAULT_NET):
        super().__init__()
        self.game = game
        self.conv = nn.Conv2d(cfg.channels + 1, cfg.channels, 3, padding=1)
        self.block = ResidualBlock(cfg.channels, "group")
        self.reward_head = nn.Linear(cfg.channels, 2 * cfg.support_size + 1)

    def encode_action(self, action: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
        planes = torch.zeros(like.shape[0], 1, self.game.height, self.game.width, dtype=like.dtype)
        for i, a in enumerate(action.tolist()):  # expect: FL000 GB0033
            if a < self.game.board_size:  # passing leaves the action plane empty
                planes[i, 0, a // self.game.width, a % self.game.width] = 1.0
        return planes

    def forward(self, hidden, action):
        x = torch.cat([hidden, self.encode_action(action, hidden)], dim=1)
        nxt = self.block(F.relu(self.conv(x)))
        reward_logits = self.reward_head(nxt.mean(dim=(2, 3)))
        return normalize_hidden(nxt), reward_logits


class PredictionNet(nn.Module):
    def __init__(self, game: GameConfig, cfg: NetConfig = DEFAULT_NET):
        super().__init__()
        self.policy = nn.Linear(cfg.channels * game.board_size, game.action_size)
        self.value = nn.Linear(cfg.channels * game.board_size, 2 * cfg.support_size + 1)

    def forward(self, hidden):
        flat = hidden.flatten(1)
        return self.policy(flat), self.value(flat)


class MuZeroNet(nn.Module):
    def __init__(self, game: GameConfig, cfg: NetConfig = DEFAULT_NET):
        super().__init__()
        self.game, self.support_size = game, cfg.support_size
        self.representation = RepresentationNet(game, cfg)
        self.dynamics = DynamicsNet(game, cfg)
        self.prediction = PredictionNet(game, cfg)

    def initial_inference(self, obs) -> NetworkOutput:
        hidden = self.representation(obs)
        policy, value = self.prediction(hidden)
        reward = scalar_to_support(torch.zeros(obs.shape[0], device=obs.device), self.support_size)
        return NetworkOutput(value, reward, policy, hidden)

    def recurrent_inference(self, hidden, action) -> NetworkOutput:
        nxt, reward = self.dynamics(hidden, action)
        policy, value = self.prediction(nxt)
        return NetworkOutput(value, reward, policy, nxt)

    def forward(self, obs, actions):
        out = self.initial_inference(obs)
        outputs = [out]
        for k in range(actions.shape[1]):
            out = self.recurrent_inference(scale_gradient(out.hidden_state, 0.5), actions[:, k])
            outputs.append(out)
        return outputs


# --------------------------------------------------------------------------- search over Python nodes

class Node:
    def __init__(self, prior: float, to_play: int = 0):
        self.prior, self.to_play = prior, to_play
        self.children: Dict[int, "Node"] = {}
        self.visit_count, self.value_sum, self.reward = 0, 0.0, 0.0
        self.hidden_state: Optional[torch.Tensor] = None

    @property
    def expanded(self) -> bool:
        return len(self.children) > 0

    def value(self) -> float:
        return self.value_sum / self.visit_count if self.visit_count else 0.0


def ucb_score(parent: Node, child: Node, cfg: SearchConfig) -> float:
    pb_c = math.log((parent.visit_count + cfg.c_puct_base + 1) / cfg.c_puct_base) + cfg.c_puct_init
    pb_c *= math.sqrt(parent.visit_count) / (child.visit_count + 1)
    value_score = -(child.reward + cfg.discount * child.value()) if child.visit_count else 0.0
    return pb_c * child.prior + value_score


def select_child(node: Node, cfg: SearchConfig) -> Tuple[int, Node]:
    action = max(node.children, key=lambda a: ucb_score(node, node.children[a], cfg))  # expect: FL000 GB0193
    return action, node.children[action]


def expand_node(node: Node, out: NetworkOutput, actions: Sequence[int], support_size: int):
    node.hidden_state = out.hidden_state
    node.reward = support_to_scalar(out.reward, support_size).item()  # expect: FL000 GB0124
    priors = torch.softmax(out.policy_logits[0, list(actions)], dim=-1)
    for action, p in zip(actions, priors.tolist()):  # expect: FL000 GB0109
        node.children[action] = Node(p, to_play=1 - node.to_play)


def backpropagate(path: List[Node], value: float, discount: float):
    to_play = path[-1].to_play
    for node in reversed(path):
        node.value_sum += value if node.to_play == to_play else -value
        node.visit_count += 1
        value = node.reward + discount * value


@torch.compile
def run_search(net: MuZeroNet, observation, legal_actions: List[int], cfg: SearchConfig = DEFAULT_SEARCH):
    root = Node(1.0)
    with torch.no_grad():
        expand_node(root, net.initial_inference(observation.unsqueeze(0)), legal_actions, net.support_size)
        for _ in range(cfg.num_simulations):
            node, path, action = root, [root], -1
            while node.expanded:
                action, node = select_child(node, cfg)
                path.append(node)
            out = net.recurrent_inference(path[-2].hidden_state, torch.tensor([action]))
            expand_node(node, out, range(net.game.action_size), net.support_size)
            backpropagate(path, float(support_to_scalar(out.value, net.support_size)), cfg.discount)
    visits = torch.tensor([root.children[a].visit_count for a in legal_actions], dtype=torch.float32)
    return visits / visits.sum(), root.value()


# --------------------------------------------------------------------------- flat tensor trees

class TensorTree:
    """mctx-style tree: per-node statistics in (num_nodes, num_actions) tensors."""
    def __init__(self, num_nodes: int, num_actions: int, step_cost: float = 0.01):
        self.child_visits = torch.zeros(num_nodes, num_actions)
        self.child_values = torch.zeros(num_nodes, num_actions)
        self.child_rewards = torch.full((num_nodes, num_actions), -step_cost)
        self.num_backups = 0

    def q_values(self, node: int) -> torch.Tensor:
        return self.child_values[node] / self.child_visits[node].clamp_min(1)


@torch.compile
def puct_scores(child_visits, child_values, priors, cfg: SearchConfig = DEFAULT_SEARCH):
    """pUCT of every child of one node of a TensorTree (one row of its statistics)."""
    parent_visits = child_visits.sum()
    c = math.log((parent_visits + cfg.c_puct_base + 1) / cfg.c_puct_base) + cfg.c_puct_init  # expect: FL000 GB0033
    u = c * priors * math.sqrt(parent_visits) / (1 + child_visits)  # expect: FL000 GB0033
    q = torch.where(child_visits > 0, child_values / child_visits.clamp_min(1), torch.zeros_like(child_values))
    return q + u


@torch.compile
def backup_path(tree: TensorTree, path: List[Tuple[int, int]], leaf_value, discount: float = 0.997):
    value = leaf_value
    for node, action in reversed(path):
        value = tree.child_rewards[node, action] + discount * value
        tree.child_visits[node, action] += 1
        tree.child_values[node, action] += value
        value = -value
    tree.num_backups += 1  # expect: FL302
    return tree.q_values(path[0][0])


# --------------------------------------------------------------------------- exploration and move choice

def _dirichlet_noise(n: int, generator: torch.Generator, alpha: float) -> torch.Tensor:
    seed = int(torch.randint(0, 2 ** 31 - 1, (1,), generator=generator))  # expect: FL000 GB0055; FL000 GB0124
    rng = np.random.default_rng(seed)  # expect: FL000 GB0294
    return torch.from_numpy(rng.dirichlet([alpha] * n)).float()  # expect: FL000 GB0156


NOISE_FNS: Dict[str, Callable[..., torch.Tensor]] = {
    "dirichlet": _dirichlet_noise,
    "uniform": lambda n, generator, alpha: torch.full((n,), 1.0 / n),
}


@torch.compile
def add_exploration_noise(priors, legal_mask, generator: torch.Generator, cfg: SearchConfig = DEFAULT_SEARCH):
    try:
        noise_fn = NOISE_FNS[cfg.noise]
    except KeyError:
        raise ValueError(f"unknown root noise {cfg.noise}") from None
    legal = legal_mask.bool()
    noise = torch.zeros_like(priors)
    noise[legal] = noise_fn(int(legal.sum()), generator, cfg.dirichlet_alpha)  # expect: FL000 GB0124
    frac = cfg.exploration_fraction
    mixed = (1 - frac) * priors + frac * noise
    return mixed * legal_mask / (mixed * legal_mask).sum()


@torch.compile
def select_action(visit_counts, legal_mask, move_number: int, generator: Optional[torch.Generator] = None):
    temperature = temperature_for_move(move_number)
    if temperature == 0.0:
        return int(mask_illegal(visit_counts, legal_mask).argmax())
    policy = visit_counts_to_policy(visit_counts, temperature, legal_mask)
    return int(sample_from_policy(policy, generator))  # expect: FL000 GB0124


# --------------------------------------------------------------------------- encoding and augmentation

@torch.compile
def encode_history(boards, to_play: int, history: int = GAMES["mini_go"].history):
    """boards: (T, H, W) with +1 / -1 / 0 stones, newest last -> (2 * history + 1, H, W) planes."""
    if boards.shape[0] < history:  # expect: FL301
        pad = boards.new_zeros((history - boards.shape[0], *boards.shape[1:]))
        boards = torch.cat([pad, boards], dim=0)
    recent = boards[-history:]
    sign = PLAYER_SIGN[to_play]
    mine = (recent == sign).float()
    theirs = (recent == -sign).float()
    colour = torch.full_like(mine[:1], float(to_play))
    return torch.cat([mine, theirs, colour], dim=0)


def _dihedral(x: torch.Tensor, k: int, flip: bool) -> torch.Tensor:
    x = torch.rot90(x, k, dims=(-2, -1))
    return torch.flip(x, dims=(-1,)) if flip else x


SQUARE_SYMMETRIES = [(k, flip) for k in range(4) for flip in (False, True)]
RECT_SYMMETRIES = [(0, False), (0, True), (2, False), (2, True)]


@torch.compile
def augment_symmetries(planes, policy, check_targets: bool = True):
    """planes (C, H, W), policy (H * W [+ pass]) -> every symmetry of the board and its policy target."""
    h, w = planes.shape[-2:]
    if check_targets and abs(policy.sum() - 1.0) > 1e-3:  # expect: FL000 GB0170
        warnings.warn("policy target does not sum to one")
    board_pi, pass_pi = policy[: h * w].view(h, w), policy[h * w:]
    out_planes, out_pi = [], []
    for k, flip in SQUARE_SYMMETRIES if h == w else RECT_SYMMETRIES:
        out_planes.append(_dihedral(planes, k, flip))
        out_pi.append(torch.cat([_dihedral(board_pi, k, flip).reshape(-1), pass_pi]))
    return torch.stack(out_planes), torch.stack(out_pi)


# --------------------------------------------------------------------------- value targets and losses

@torch.compile
def n_step_value_targets(rewards, root_values, discount: float = 0.997, td_steps: int = 3):
    """z_t = sum_i gamma^i r_{t+i} + gamma^n v_{t+n}, past the end bootstrapping from zero."""
    T = rewards.shape[-1]
    disc = discount ** torch.arange(td_steps, dtype=rewards.dtype)
    windows = F.pad(rewards, (0, td_steps)).unfold(-1, td_steps, 1)[..., :T, :]
    boot = F.pad(root_values, (0, td_steps))[..., td_steps: td_steps + T]
    return (windows * disc).sum(-1) + boot * discount ** td_steps


LOSS_HISTORY: List[Dict[str, float]] = []


def _record_history(metrics: Dict[str, torch.Tensor]):
    LOSS_HISTORY.append({k: v.item() for k, v in metrics.items()})  # expect: FL000 GB0092; FL000 GB0124


METRIC_HOOKS: List[Callable[[Dict[str, torch.Tensor]], None]] = [_record_history]


def _cross_entropy(logits, target):
    return -(target * F.log_softmax(logits, dim=-1)).sum(-1)


@torch.compile
def muzero_loss(value_logits, reward_logits, policy_logits, target_value, target_reward, target_policy,
                support_size: int = DEFAULT_NET.support_size, value_weight: float = 0.25):
    value_target = scalar_to_support(target_value, support_size)
    reward_target = scalar_to_support(target_reward, support_size)
    steps = value_logits.shape[1]
    v_loss = r_loss = p_loss = 0.0
    for k in range(steps):
        v_loss = v_loss + _cross_entropy(value_logits[:, k], value_target[:, k])
        p_loss = p_loss + _cross_entropy(policy_logits[:, k], target_policy[:, k])
        if k > 0:
            r_loss = r_loss + _cross_entropy(reward_logits[:, k], reward_target[:, k])
    total = (value_weight * v_loss + r_loss + p_loss).mean() / steps
    metrics = {"value": v_loss.mean(), "reward": r_loss.mean(), "policy": p_loss.mean()}
    for hook in METRIC_HOOKS:
        hook(metrics)
    return total


# --------------------------------------------------------------------------- cases

def _randn(*shape, seed: int = 0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _legal(batch: int, game: GameConfig, seed: int = 1):
    mask = (torch.rand(batch, game.action_size, generator=torch.Generator().manual_seed(seed)) > 0.3).float()
    return mask.index_fill_(1, torch.tensor([0]), 1.0)


def _boards(T: int, game: GameConfig, seed: int = 2):
    return torch.randint(-1, 2, (T, game.height, game.width), generator=torch.Generator().manual_seed(seed))


MINI = GAMES["mini_go"]
S = 2 * DEFAULT_NET.support_size + 1

CASES = {
    "ResidualBlock": lambda: (ResidualBlock(8), (_randn(3, 8, 4, 6),)),
    "PolicyValueNet": lambda: (PolicyValueNet(MINI), (_randn(3, 7, 4, 6), _legal(3, MINI))),
    "KataPolicyValueNet": lambda: (KataPolicyValueNet(MINI), (_randn(3, 7, 4, 6), _legal(3, MINI))),
    "RepresentationNet": lambda: (RepresentationNet(MINI), (_randn(3, 7, 4, 6),), (_randn(3, 7, 10, 12),)),
    "DynamicsNet": lambda: (DynamicsNet(MINI), (_randn(3, 8, 4, 6), torch.tensor([2, 24, 11]))),
    "PredictionNet": lambda: (PredictionNet(MINI), (_randn(3, 8, 4, 6),)),
    "MuZeroNet": lambda: (MuZeroNet(MINI), (_randn(3, 7, 4, 6), torch.tensor([[1, 5], [24, 0], [7, 7]]))),
    "run_search": lambda: (run_search, (MuZeroNet(MINI).eval(), _randn(7, 4, 6), [0, 3, 5, 9, 24])),
    "puct_scores": lambda: (puct_scores, (torch.tensor([3.0, 0.0, 5.0, 2.0]), _randn(4),
                                          torch.softmax(_randn(4, seed=4), -1))),
    "backup_path": lambda: (backup_path, (TensorTree(5, 6), [(0, 2), (1, 4), (3, 1)], torch.tensor(0.5))),
    "add_exploration_noise": lambda: (add_exploration_noise, (torch.softmax(_randn(MINI.action_size), -1),
                                                              _legal(1, MINI)[0],
                                                              torch.Generator().manual_seed(7))),
    "select_action": lambda: (select_action, (torch.arange(MINI.action_size, dtype=torch.float32),
                                              _legal(1, MINI)[0], 3, torch.Generator().manual_seed(8))),
    "encode_history": lambda: (encode_history, (_boards(2, MINI), 1), (_boards(5, MINI), 1)),
    "augment_symmetries": lambda: (augment_symmetries, (_randn(3, 4, 6), torch.softmax(_randn(25), -1))),
    "n_step_value_targets": lambda: (n_step_value_targets, (_randn(2, 7), _randn(2, 7, seed=3))),
    "muzero_loss": lambda: (muzero_loss, (_randn(2, 3, S), _randn(2, 3, S, seed=1),
                                          _randn(2, 3, 25, seed=2), _randn(2, 3, seed=3) * 3,
                                          _randn(2, 3, seed=4), torch.softmax(_randn(2, 3, 25), -1))),
}
