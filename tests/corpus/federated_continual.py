"""Federated and continual learning utilities in the style of Flower / FedML clients and mammoth /
Avalanche strategies: FedProx, FedAvg over state dicts, robust aggregators, FedAdam, DP-SGD clipping
and noise, EWC / online EWC with Fisher estimates, reservoir replay, LwF distillation, task-IL heads."""
import copy
import functools
import logging
import math
import random
from collections import OrderedDict, defaultdict
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("fedcl")
logger.addHandler(logging.NullHandler())

EPS = 1e-8
LOG_EVERY = 2
MAX_DISTILL_CHUNK = 8
INT_STATE_SUFFIXES = ("num_batches_tracked",)
DEBUG_DRIFT = True
_ROUND_STATS: Dict[str, List[float]] = defaultdict(list)

ACTIVATIONS: Dict[str, Callable] = {"relu": nn.ReLU, "gelu": nn.GELU, "silu": nn.SiLU}
FEAT_DIM = 8


@dataclass
class ClientConfig:
    mu: float = 0.01  # FedProx proximal weight


@dataclass
class ServerConfig:
    server_lr: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.99
    tau: float = 1e-3


@dataclass
class CLConfig:
    ewc_lambda: float = 50.0
    gamma: float = 0.9
    temperature: float = 2.0
    alpha: float = 0.5


# --------------------------------------------------------------------------- small utilities

def _safe_key(name: str) -> str:
    """Buffers cannot have dots in their names."""
    return name.replace(".", "__")


def global_norm(tensors: Sequence[Optional[torch.Tensor]]) -> torch.Tensor:
    norms = [t.detach().float().norm(2) for t in tensors if t is not None]
    if not norms:
        return torch.zeros(())
    return torch.linalg.vector_norm(torch.stack(norms), 2)


def _scalar(value) -> float:
    if isinstance(value, torch.Tensor):
        return value.detach().item()  # expect: FL000 GB0124
    return float(value)


def log_metric(name: str, value, step: Optional[int] = None) -> None:
    _ROUND_STATS[name].append(_scalar(value))  # expect: FL302
    if step is not None and step % LOG_EVERY == 0:
        logger.debug("%s=%.4f @ round %d", name, _ROUND_STATS[name][-1], step)


def proximal_term(params: Sequence[torch.Tensor], anchors: Sequence[torch.Tensor]) -> torch.Tensor:
    total = torch.zeros((), dtype=params[0].dtype)
    for p, a in zip(params, anchors):
        total = total + (p - a.detach()).pow(2).sum()
    return total


def kd_loss(student: torch.Tensor, teacher: torch.Tensor, T: float, reduction: str = "batchmean"):
    log_p = F.log_softmax(student / T, dim=-1)
    q = F.softmax(teacher / T, dim=-1)
    return F.kl_div(log_p, q, reduction=reduction) * (T * T)


def clip_update_norm(update: torch.Tensor, max_norm: float) -> torch.Tensor:
    scale = torch.clamp(max_norm / (update.norm() + EPS), max=1.0)
    return update * scale


# --------------------------------------------------------------------------- models

def make_backbone(in_dim: int = 6, hidden: int = 10, out_dim: int = FEAT_DIM, act: str = "relu") -> nn.Sequential:
    act_cls = ACTIVATIONS[act]
    return nn.Sequential(nn.Linear(in_dim, hidden), act_cls(), nn.Linear(hidden, out_dim), act_cls())


class SmallClassifier(nn.Module):
    def __init__(self, in_dim: int = 6, num_classes: int = 4, act: str = "relu"):
        super().__init__()
        self.backbone = make_backbone(in_dim, act=act)
        self.classifier = nn.Linear(FEAT_DIM, num_classes)

    def forward(self, x):
        return self.classifier(self.backbone(x))


class TaskIncrementalHead(nn.Module):
    """One linear head per task; the task id picks the head (task-IL setting)."""

    def __init__(self, in_dim: int, classes_per_task: Sequence[int]):
        super().__init__()
        self.heads = nn.ModuleDict({str(t): nn.Linear(in_dim, c) for t, c in enumerate(classes_per_task)})
        self.active_task = 0

    @property
    def num_tasks(self) -> int:
        return len(self.heads)

    def forward(self, feats, task_id: Optional[int] = None):
        if feats.dim() == 3:  # token features: mean-pool first  # expect: FL301
            feats = feats.mean(dim=1)
        tid = self.active_task if task_id is None else task_id
        assert 0 <= tid < self.num_tasks, f"unknown task {tid}"
        return self.heads[str(tid)](feats)  # expect: FL000 GB0059


class MultiTaskClassifier(nn.Module):
    """Mixed batches of several tasks: route every sample to the head of its own task."""

    def __init__(self, in_dim: int = 6, classes_per_task: Sequence[int] = (3, 4, 2)):
        super().__init__()
        self.backbone = make_backbone(in_dim, act="gelu")
        self.head = TaskIncrementalHead(FEAT_DIM, classes_per_task)
        self.max_classes = max(classes_per_task)

    def forward(self, x, task_ids):
        feats = self.backbone(x)
        out = feats.new_full((x.shape[0], self.max_classes), float("-inf"))
        for t in task_ids.unique().tolist():  # expect: FL000 GB0033; FL000 GB0036
            sel = task_ids == t
            logits = self.head(feats[sel], task_id=int(t))  # expect: FL000 GB0036
            out[sel, : logits.shape[1]] = logits
        return out


# --------------------------------------------------------------------------- client side

class FedProxClient(nn.Module):
    def __init__(self, model: nn.Module, cfg: ClientConfig = ClientConfig()):
        super().__init__()
        self.model = model
        self.cfg = cfg
        self.anchor = [p.detach().clone() for p in model.parameters()]

    def forward(self, x, y):
        logits = self.model(x)
        loss = F.cross_entropy(logits, y)
        if self.cfg.mu > 0:
            loss = loss + 0.5 * self.cfg.mu * proximal_term(list(self.model.parameters()), self.anchor)
        return loss, logits


@torch.compile
def clip_grads_(parameters, max_norm: float):
    grads = [p.grad for p in parameters if p.grad is not None]
    total = global_norm(grads)
    coef = max_norm / (total + 1e-6)
    if coef < 1.0:  # expect: FL000 GB0170
        for g in grads:
            g.mul_(coef)
    return total


@torch.compile
def privatize_per_sample(per_sample_grads, clip_norm: float = 1.0, noise_multiplier: float = 0.5):
    batch = per_sample_grads.shape[0]
    clipped = []
    for i in range(batch):  # expect: FL301
        g = per_sample_grads[i]
        clipped.append(g * torch.clamp(clip_norm / (g.norm() + EPS), max=1.0))
    summed = torch.stack(clipped).sum(0)
    noise = torch.randn_like(summed) * (noise_multiplier * clip_norm)
    return (summed + noise) / batch


class DPGaussianMechanism(nn.Module):
    """Vectorised per-sample clipping plus calibrated noise from a private generator."""

    def __init__(self, clip_norm: float = 1.0, noise_multiplier: float = 0.5, seed: int = 7):
        super().__init__()
        self.clip_norm = clip_norm
        self.noise_multiplier = noise_multiplier
        self.generator = torch.Generator().manual_seed(seed)
        self.steps = 0

    @property
    def noise_std(self) -> float:
        return self.noise_multiplier * self.clip_norm

    def forward(self, per_sample_grads):
        norms = per_sample_grads.flatten(1).norm(dim=1)
        factor = (self.clip_norm / (norms + 1e-6)).clamp(max=1.0)
        shape = (-1,) + (1,) * (per_sample_grads.dim() - 1)
        summed = (per_sample_grads * factor.view(shape)).sum(0)
        noise = torch.normal(0.0, self.noise_std, size=summed.shape, generator=self.generator)  # expect: FL000 GB0055
        self.steps += 1  # expect: FL302
        return (summed + noise) / per_sample_grads.shape[0]


@torch.compile
def client_drift_report(client_sd, global_sd, round_idx: int):
    drift = {}
    for k, v in client_sd.items():
        if not v.is_floating_point():
            continue
        diff = (v - global_sd[k]).norm()
        drift[k] = diff / (global_sd[k].norm() + EPS)
    total = torch.stack(list(drift.values())).mean()
    if DEBUG_DRIFT:
        log_metric("drift/mean", total, step=round_idx)
    return total, drift


# --------------------------------------------------------------------------- server side

def weighted_average(state_dicts: List[Dict[str, torch.Tensor]], weights: Sequence[float]):
    total = float(sum(weights))
    assert total > 0, "client weights must sum to a positive number"
    norm_w = [w / total for w in weights]
    out = OrderedDict()
    for key, ref in state_dicts[0].items():
        if key.endswith(INT_STATE_SUFFIXES):
            out[key] = ref.clone()  # counters are not averaged
            continue
        acc = torch.zeros_like(ref, dtype=torch.float32)
        for sd, w in zip(state_dicts, norm_w):
            acc.add_(sd[key].float(), alpha=w)
        out[key] = acc.to(ref.dtype)
    return out


@torch.compile
def fedavg_by_counts(state_dicts, sample_counts):
    weights = sample_counts.float() / sample_counts.sum()
    return weighted_average(state_dicts, weights.tolist())  # expect: FL000 GB0109


def _trimmed_mean(stacked, ratio: float = 0.2):
    n = stacked.shape[0]
    k = int(math.floor(ratio * n))
    ordered, _ = stacked.sort(dim=0)
    if k > 0:
        ordered = ordered[k:n - k]
    return ordered.mean(dim=0)


def _coord_median(stacked):
    return stacked.median(dim=0).values


def _krum(stacked, num_byzantine: int = 1):
    n = stacked.shape[0]
    dists = torch.cdist(stacked, stacked).pow(2)
    m = n - num_byzantine - 2
    closest = dists.topk(m + 1, dim=1, largest=False).values  # includes the zero self-distance
    scores = closest.sum(dim=1)
    best = int(scores.argmin())  # expect: FL000 GB0124
    logger.debug("krum picked client %d", best)  # expect: FL000 GB0291
    return stacked[best]


AGGREGATORS: Dict[str, Callable] = {
    "mean": lambda s: s.mean(dim=0),
    "median": _coord_median,
    "trimmed": _trimmed_mean,
    "krum": _krum,
}
UPDATE_HOOKS: List[Callable] = [functools.partial(clip_update_norm, max_norm=2.0)]


@torch.compile
def robust_aggregate(updates: List[torch.Tensor], method: str = "trimmed", **kwargs):
    shapes = [u.shape for u in updates]
    flat = []
    for u in updates:
        vec = torch.cat([t.flatten() for t in u]) if isinstance(u, (list, tuple)) else u.flatten()
        for hook in UPDATE_HOOKS:
            vec = hook(vec)
        flat.append(vec)
    agg = functools.partial(AGGREGATORS[method], **kwargs)
    merged = agg(torch.stack(flat))
    return merged.view(shapes[0])


class FedAdamServer(nn.Module):
    """Adaptive federated optimisation (Reddi et al.): Adam on the pseudo-gradient."""

    def __init__(self, global_model: nn.Module, cfg: ServerConfig = ServerConfig()):
        super().__init__()
        self.cfg = cfg
        self.keys = [n for n, _ in global_model.named_parameters()]
        for n, p in global_model.named_parameters():
            self.register_buffer(f"m_{_safe_key(n)}", torch.zeros_like(p))
            self.register_buffer(f"v_{_safe_key(n)}", torch.full_like(p, cfg.tau ** 2))
        self.t = 0

    def forward(self, global_params: Dict[str, torch.Tensor], averaged: Dict[str, torch.Tensor]):
        self.t += 1  # expect: FL302
        b1, b2 = self.cfg.beta1, self.cfg.beta2
        bc1, bc2 = 1 - math.pow(b1, self.t), 1 - math.pow(b2, self.t)
        new = {}
        for n in self.keys:
            m, v = getattr(self, f"m_{_safe_key(n)}"), getattr(self, f"v_{_safe_key(n)}")
            delta = averaged[n] - global_params[n]
            m.mul_(b1).add_(delta, alpha=1 - b1)
            v.mul_(b2).addcmul_(delta, delta, value=1 - b2)
            new[n] = global_params[n] + self.cfg.server_lr * (m / bc1) / ((v / bc2).sqrt() + self.cfg.tau)
        return new


# --------------------------------------------------------------------------- continual learning

class EWCPenalty(nn.Module):
    def __init__(self, model: nn.Module, fisher: Dict[str, torch.Tensor], lam: float = 50.0):
        super().__init__()
        self.lam = lam
        self.names = []
        for n, p in model.named_parameters():
            self.register_buffer(f"{_safe_key(n)}_mean", p.detach().clone())
            self.register_buffer(f"{_safe_key(n)}_fisher", fisher[n].detach().clone())
            self.names.append(n)

    def _buffer(self, name: str, kind: str) -> torch.Tensor:
        return getattr(self, f"{_safe_key(name)}_{kind}")

    def forward(self, named_params: Dict[str, torch.Tensor]):
        loss = 0.0
        for n in self.names:
            diff = named_params[n] - self._buffer(n, "mean")
            loss = loss + (self._buffer(n, "fisher") * diff.pow(2)).sum()
        return 0.5 * self.lam * loss


class OnlineEWC(EWCPenalty):
    """Online EWC (Schwarz et al.): one running Fisher, decayed by gamma at each consolidation."""

    def __init__(self, model, fisher, lam: float = 50.0, gamma: float = 0.9, verbose: bool = True):
        super().__init__(model, fisher, lam)
        self.gamma = gamma
        self.verbose = verbose

    def forward(self, named_params, new_fisher: Optional[Dict[str, torch.Tensor]] = None):
        if new_fisher is not None:
            for n in self.names:
                self._buffer(n, "fisher").mul_(self.gamma).add_(new_fisher[n])
                self._buffer(n, "mean").copy_(named_params[n].detach())
        penalty = super().forward(named_params)
        if self.verbose:
            logger.info("online-ewc penalty over %d tensors", len(self.names))  # expect: FL000 GB0291
        return penalty


@torch.compile
def estimate_fisher(model: nn.Module, inputs, targets, empirical: bool = True):
    params = [p for p in model.parameters() if p.requires_grad]
    fisher = [torch.zeros_like(p) for p in params]  # expect: FL000 GB4347
    for i in range(inputs.shape[0]):
        logits = model(inputs[i:i + 1])
        label = targets[i:i + 1] if empirical else logits.argmax(-1)
        loss = F.nll_loss(F.log_softmax(logits, dim=-1), label)
        grads = torch.autograd.grad(loss, params)  # expect: FL000 GB9186
        for f, g in zip(fisher, grads):
            f.add_(g.detach().pow(2))
    n = inputs.shape[0]
    return {name: f / n for (name, _), f in zip(model.named_parameters(), fisher)}


@torch.compile
def importance_keep_masks(importances: Dict[str, torch.Tensor], keep_ratio: float = 0.5):
    """PackNet-style: keep the most important weights of the finished task, free the rest."""
    flat = torch.cat([v.flatten() for v in importances.values()])
    thr = np.percentile(flat.detach().cpu().numpy(), 100 * (1 - keep_ratio)).item()  # expect: FL000 GB0033
    masks = {}
    for name, imp in importances.items():
        masks[name] = (imp >= thr).float()
    return masks


class LwFLearner(nn.Module):
    """Learning without Forgetting: distil the old model's outputs on the new task's data."""

    def __init__(self, model: SmallClassifier, cfg: CLConfig = CLConfig()):
        super().__init__()
        self.model = model
        self.old_model = copy.deepcopy(model).eval()
        for p in self.old_model.parameters():
            p.requires_grad_(False)
        self.cfg = cfg

    def forward(self, x, y):
        logits = self.model(x)
        with torch.no_grad():
            old_logits = self.old_model(x)
        ce = F.cross_entropy(logits, y)
        kd = kd_loss(logits[:, : old_logits.shape[1]], old_logits, self.cfg.temperature)
        loss = (1 - self.cfg.alpha) * ce + self.cfg.alpha * kd
        return loss, {"ce": ce.detach(), "kd": kd.detach()}


@torch.compile
def chunked_distill(student_logits, teacher_logits, T: float = 2.0):
    n = student_logits.shape[0]
    if n <= MAX_DISTILL_CHUNK:  # expect: FL301
        return kd_loss(student_logits, teacher_logits, T)
    total = student_logits.new_zeros(())
    for s, t in zip(student_logits.split(MAX_DISTILL_CHUNK), teacher_logits.split(MAX_DISTILL_CHUNK)):
        total = total + kd_loss(s, t, T, reduction="sum")
    return total / n


class ReservoirBuffer:
    """Fixed-size replay memory filled by reservoir sampling (Vitter's algorithm R)."""

    def __init__(self, capacity: int, feat_dim: int):
        self.capacity = capacity
        self.x = torch.zeros(capacity, feat_dim)
        self.y = torch.zeros(capacity, dtype=torch.long)
        self.num_seen = 0

    def __len__(self) -> int:
        return min(self.num_seen, self.capacity)

    def add(self, xs, ys):
        for i in range(xs.shape[0]):
            idx = self.num_seen if self.num_seen < self.capacity else random.randint(0, self.num_seen)
            if idx < self.capacity:  # expect: FL000 GB0170
                self.x[idx] = xs[i]
                self.y[idx] = ys[i]
            self.num_seen += 1  # expect: FL302

    def sample(self, k: int, generator: Optional[torch.Generator] = None):
        n = len(self)
        idx = torch.randperm(n, generator=generator)[: min(k, n)]
        return self.x[idx], self.y[idx]


@torch.compile
def mix_with_replay(buffer: ReservoirBuffer, xs, ys, replay_ratio: float = 0.5):
    k = int(xs.shape[0] * replay_ratio)
    rx, ry = buffer.sample(k)
    batch_x, batch_y = torch.cat([xs, rx]), torch.cat([ys, ry])
    buffer.add(xs, ys)
    return batch_x, batch_y


class ContinualTrainer(nn.Module):
    """Task-IL learner: shared backbone, per-task heads, EWC and a distillation term on old heads."""

    def __init__(self, classes_per_task=(3, 4), cfg: CLConfig = CLConfig()):
        super().__init__()
        self.backbone = make_backbone(6, act="silu")
        self.head = TaskIncrementalHead(FEAT_DIM, classes_per_task)
        self.cfg = cfg
        fisher = {n: torch.full_like(p, 0.1) for n, p in self.backbone.named_parameters()}
        self.ewc = EWCPenalty(self.backbone, fisher, cfg.ewc_lambda)
        self.loss_terms = {"ce": self._ce, "ewc": self._ewc, "kd": self._kd}

    def _ce(self, feats, y, task_id, old_logits):
        return F.cross_entropy(self.head(feats, task_id), y)

    def _ewc(self, feats, y, task_id, old_logits):
        return self.ewc({n: p for n, p in self.backbone.named_parameters()})

    def _kd(self, feats, y, task_id, old_logits):
        if old_logits is None or task_id == 0:
            return feats.new_zeros(())
        return kd_loss(self.head(feats, task_id - 1), old_logits, self.cfg.temperature)

    def forward(self, x, y, task_id: int, old_logits=None):
        feats = self.backbone(x)
        terms = {name: fn(feats, y, task_id, old_logits) for name, fn in self.loss_terms.items()}
        return sum(terms.values()), terms


# --------------------------------------------------------------------------- cases

def _rand(*shape, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g)


def _labels(n: int, classes: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, classes, (n,), generator=g)


def _model(seed: int = 0, **kw) -> SmallClassifier:
    torch.manual_seed(seed)
    return SmallClassifier(**kw)


def _client_sds(n: int = 3):
    return [{k: v.detach().clone() for k, v in _model(i).state_dict().items()} for i in range(n)]


def _with_grads(model: nn.Module, seed: int = 0) -> List[nn.Parameter]:
    F.cross_entropy(model(_rand(5, 6, seed=seed)), _labels(5, 4, seed=seed)).backward()
    return list(model.parameters())


def _filled_buffer() -> ReservoirBuffer:
    buf = ReservoirBuffer(6, 6)
    buf.add(_rand(3, 6, seed=4), _labels(3, 4, seed=4))
    return buf


CASES = {
    "FedProxClient": lambda: (FedProxClient(_model(1)), (_rand(5, 6), _labels(5, 4))),
    "clip_grads_": lambda: (clip_grads_, (_with_grads(_model(2)), 0.05)),
    "privatize_per_sample": lambda: (privatize_per_sample, (_rand(3, 7),), (_rand(5, 7),)),
    "DPGaussianMechanism": lambda: (DPGaussianMechanism(), (_rand(3, 2, 5),)),
    "client_drift_report": lambda: (client_drift_report, (_client_sds(2)[0], _client_sds(2)[1], 4)),
    "fedavg_by_counts": lambda: (fedavg_by_counts, (_client_sds(3), torch.tensor([12, 30, 7]))),
    "robust_aggregate_trimmed": lambda: (robust_aggregate, ([_rand(3, 4, seed=i) for i in range(5)], "trimmed")),
    "robust_aggregate_krum": lambda: (robust_aggregate, ([_rand(3, 4, seed=i) for i in range(5)], "krum")),
    "FedAdamServer": lambda: (FedAdamServer(_model(0)), (dict(_model(0).named_parameters()),
                                                         dict(_model(1).named_parameters()))),
    "EWCPenalty": lambda: (EWCPenalty(_model(0), {n: p.abs().detach() for n, p in _model(3).named_parameters()}),
                           (dict(_model(1).named_parameters()),)),
    "OnlineEWC": lambda: (OnlineEWC(_model(0), {n: p.abs().detach() for n, p in _model(3).named_parameters()}),
                          (dict(_model(1).named_parameters()),
                           {n: p.pow(2).detach() for n, p in _model(2).named_parameters()})),
    "estimate_fisher": lambda: (estimate_fisher, (_model(0), _rand(3, 6), _labels(3, 4))),
    "importance_keep_masks": lambda: (importance_keep_masks, ({"w": _rand(4, 3).abs(), "b": _rand(5).abs()}, 0.4)),
    "LwFLearner": lambda: (LwFLearner(_model(0)), (_rand(5, 6), _labels(5, 4))),
    "chunked_distill": lambda: (chunked_distill, (_rand(5, 3), _rand(5, 3, seed=1)),
                                (_rand(11, 3), _rand(11, 3, seed=1))),
    "mix_with_replay": lambda: (mix_with_replay, (_filled_buffer(), _rand(4, 6), _labels(4, 4))),
    "TaskIncrementalHead": lambda: (TaskIncrementalHead(8, (3, 5)), (_rand(4, 8), 1), (_rand(4, 6, 8), 1)),
    "MultiTaskClassifier": lambda: (MultiTaskClassifier(), (_rand(7, 6), torch.tensor([0, 2, 1, 0, 2, 2, 1]))),
    "ContinualTrainer": lambda: (ContinualTrainer(), (_rand(5, 6), _labels(5, 4), 1, _rand(5, 3, seed=2))),
}
