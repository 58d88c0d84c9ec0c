"""Meta-learning and continual learning in the style of learn2learn / higher / Avalanche /
mammoth: MAML / Meta-SGD inner loops over functional weight dicts, prototypical and matching
networks over sampled episodes, reservoir replay and DER logit replay, EWC with diagonal Fisher
estimates, A-GEM gradient projection, and task-conditioned heads selected by task id."""
import functools
import logging
import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

logger = logging.getLogger("metalearn")
logger.addHandler(logging.NullHandler())

DEFAULT_INNER_LR = 0.4
FIRST_ORDER = False
LOG_EVERY = 2
BUFFER_SEED = 1234
MIN_REPLAY_WEIGHT = 0.1

@dataclass
class EpisodeConfig:
    n_way: int = 3
    k_shot: int = 2
    n_query: int = 3

@dataclass
class InnerLoopConfig:
    steps: int = 2
    lr: float = DEFAULT_INNER_LR
    first_order: bool = FIRST_ORDER
    clip: Optional[float] = None
    log_every: int = 0


# --------------------------------------------------------------------------- functional params

def named_param_dict(module: nn.Module) -> "OrderedDict[str, torch.Tensor]":
    return OrderedDict((name, p) for name, p in module.named_parameters())

def lr_key(name: str) -> str:
    # ParameterDict keys cannot contain dots
    return name.replace(".", "_")

def sgd_update(params, grads, lr: Optional[float], lrs: Optional[nn.ParameterDict] = None):
    updated = OrderedDict()
    for (name, p), g in zip(params.items(), grads):
        if g is None:
            updated[name] = p
            continue
        step = lrs[lr_key(name)] if lrs is not None else lr
        updated[name] = p - step * g
    return updated

def clip_grads(grads, max_norm: float):
    total = torch.sqrt(sum((g ** 2).sum() for g in grads if g is not None))
    scale = (max_norm / (total + 1e-6)).clamp(max=1.0)
    return [g * scale if g is not None else None for g in grads]

class MetaMLP(nn.Module):
    """Small classifier whose forward also accepts a weight dict (MAML-style)."""

    def __init__(self, in_dim: int = 4, hidden: int = 8, n_way: int = 3):
        super().__init__()
        self.fc1 = nn.Linear(in_dim, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, n_way)

    def forward(self, x, params: Optional[Dict[str, torch.Tensor]] = None):
        if params is None:
            params = dict(self.named_parameters())
        h = F.relu(F.linear(x, params["fc1.weight"], params["fc1.bias"]))
        h = F.relu(F.linear(h, params["fc2.weight"], params["fc2.bias"]))
        return F.linear(h, params["head.weight"], params["head.bias"])

class ConvEmbedding(nn.Module):
    def __init__(self, in_ch: int = 2, hidden: int = 4, depth: int = 2):
        super().__init__()
        layers: List[nn.Module] = []
        for i in range(depth):
            layers += [nn.Conv2d(in_ch if i == 0 else hidden, hidden, 3, padding=1),
                       nn.BatchNorm2d(hidden), nn.ReLU(), nn.MaxPool2d(2)]
        self.encoder = nn.Sequential(*layers)

    def forward(self, x):
        return self.encoder(x).flatten(1)


# --------------------------------------------------------------------------- MAML / Meta-SGD / ANIL

def inner_adapt(model, params, x, y, cfg: InnerLoopConfig, lrs=None):
    for step in range(cfg.steps):
        logits = functional_call(model, params, (x,))
        loss = F.cross_entropy(logits, y)
        grads = torch.autograd.grad(loss, list(params.values()),  # expect: FL000 GB9186
                                    create_graph=not cfg.first_order, allow_unused=True)
        if cfg.clip is not None:
            grads = clip_grads(grads, cfg.clip)
        params = sgd_update(params, grads, cfg.lr, lrs)
        if cfg.log_every and step % cfg.log_every == 0:
            logger.info("inner step %d: support loss %.4f", step, loss.item())
    return params

@torch.compile
def maml_meta_loss(model, support_x, support_y, query_x, query_y, cfg: Optional[InnerLoopConfig] = None):
    cfg = cfg or InnerLoopConfig()
    adapted = inner_adapt(model, named_param_dict(model), support_x, support_y, cfg)
    return F.cross_entropy(functional_call(model, adapted, (query_x,)), query_y)

class MetaSGD(nn.Module):
    """Meta-SGD (Li et al. 2017): a learnable learning rate for every weight."""

    def __init__(self, model: MetaMLP, init_lr: float = DEFAULT_INNER_LR, steps: int = 1):
        super().__init__()
        self.model = model
        self.steps = steps
        self.lrs = nn.ParameterDict({lr_key(n): nn.Parameter(torch.full_like(p, init_lr))
                                     for n, p in model.named_parameters()})

    def adapt(self, x, y, params):
        loss = F.cross_entropy(self.model(x, params), y)
        grads = torch.autograd.grad(loss, tuple(params.values()), create_graph=self.training)  # expect: FL000 GB9186
        return sgd_update(params, grads, None, lrs=self.lrs)

    def forward(self, support_x, support_y, query_x):
        params = named_param_dict(self.model)
        for _ in range(self.steps):
            params = self.adapt(support_x, support_y, params)
        return self.model(query_x, params)

def _head_grad(feats, weight, bias, y_onehot):
    """Closed-form gradient of the mean cross-entropy of a linear softmax head."""
    probs = torch.softmax(feats @ weight.t() + bias, dim=-1)
    err = (probs - y_onehot) / feats.shape[0]
    return err.t() @ feats, err.sum(0)

def _grad_norm_hook(step, loss, grads, history):
    history.setdefault("grad_norm", []).append(torch.stack([g.norm() for g in grads]).norm())

def _log_hook(step, loss, grads, history, every: int = LOG_EVERY):
    if step % every == 0:
        logger.info("head finetune step %d loss=%.4f", step, loss.item())  # expect: FL000 GB0124

DEFAULT_HOOKS: List[Callable] = [_grad_norm_hook, functools.partial(_log_hook, every=1)]

@torch.compile
def finetune_head(features, y, head: nn.Linear, steps: int = 2, lr: float = 0.5, hooks: Sequence[Callable] = DEFAULT_HOOKS):
    weight, bias = head.weight, head.bias
    y1h = F.one_hot(y, weight.shape[0]).to(features.dtype)
    history: Dict[str, list] = {}
    for step in range(steps):
        logits = features @ weight.t() + bias
        loss = F.cross_entropy(logits, y)
        gw, gb = _head_grad(features, weight, bias, y1h)
        for hook in hooks:
            hook(step, loss, (gw, gb), history)
        weight, bias = weight - lr * gw, bias - lr * gb
    return weight, bias, history

@torch.compile
def reptile_interpolate(model: nn.Module, adapted: Dict[str, torch.Tensor], epsilon: float = 0.1):
    drift = []
    with torch.no_grad():
        for name, p in model.named_parameters():
            delta = adapted[name] - p
            drift.append(delta.norm())
            p.add_(delta, alpha=epsilon)
    return torch.stack(drift).sum()


# --------------------------------------------------------------------------- prototypes / matching

def euclidean_logits(query, protos):
    return -torch.cdist(query, protos).pow(2)

def cosine_logits(query, protos, scale: float = 10.0):
    return scale * F.normalize(query, dim=-1) @ F.normalize(protos, dim=-1).t()

DISTANCES: Dict[str, Callable] = {"euclidean": euclidean_logits, "cosine": cosine_logits,
                                  "cosine_t5": functools.partial(cosine_logits, scale=5.0)}

def get_distance(name: str) -> Callable:
    try:
        return DISTANCES[name]
    except KeyError:
        raise ValueError(f"unknown distance {name!r}; choose from {sorted(DISTANCES)}") from None

def compute_prototypes(emb, labels, n_way: int):
    one_hot = F.one_hot(labels, n_way).to(emb.dtype)
    counts = one_hot.sum(0).clamp_min(1.0)
    return (one_hot.t() @ emb) / counts[:, None]

def prototypes_by_unique(emb, labels):
    classes = torch.unique(labels)  # expect: FL000 GB0036
    protos = torch.stack([emb[labels == c].mean(0) for c in classes])  # expect: FL000 GB0036
    return protos, classes

class PrototypicalNetwork(nn.Module):
    def __init__(self, encoder: nn.Module, distance: str = "euclidean", n_way: Optional[int] = None):
        super().__init__()
        self.encoder = encoder
        self.distance = get_distance(distance)
        self.n_way = n_way

    def forward(self, support, support_y, query):
        z_s, z_q = self.encoder(support), self.encoder(query)
        if self.n_way is not None:
            protos = compute_prototypes(z_s, support_y, self.n_way)
        else:
            protos, _ = prototypes_by_unique(z_s, support_y)
        return self.distance(z_q, protos)

@torch.compile
def prototype_logits(support, query, n_way: int, metric: str = "euclidean"):
    """Support rows are grouped class-major; one-shot episodes use the support points as-is."""
    k_shot = support.shape[0] // n_way
    if k_shot > 1:  # expect: FL301
        protos = support.reshape(n_way, k_shot, -1).mean(1)
    else:
        protos = support
    return get_distance(metric)(query, protos)

class MatchingNetwork(nn.Module):
    """Matching networks with full-context embeddings of the queries (attLSTM)."""

    def __init__(self, in_dim: int = 4, dim: int = 8, fce_steps: int = 2):
        super().__init__()
        self.embed = nn.Sequential(nn.Linear(in_dim, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.cell = nn.LSTMCell(2 * dim, dim)
        self.fce_steps = fce_steps
        self.temperature = 1.0 / math.sqrt(dim)

    def attend(self, query, support):
        h, c = query, torch.zeros_like(query)
        for _ in range(self.fce_steps):
            attn = torch.softmax(h @ support.t() * self.temperature, dim=-1)
            readout = attn @ support
            h, c = self.cell(torch.cat([query, readout], -1), (h + query, c))
        return h + query

    def forward(self, support, support_y, query, n_way: int):
        assert support_y.max() < n_way, "support labels must be re-indexed to 0..n_way-1"
        s = self.embed(support)
        q = self.attend(self.embed(query), s)
        sim = F.normalize(q, dim=-1) @ F.normalize(s, dim=-1).t()
        return torch.softmax(sim / self.temperature, dim=-1) @ F.one_hot(support_y, n_way).to(sim.dtype)

@torch.compile
def sample_episode(features, labels, cfg: EpisodeConfig, generator: Optional[torch.Generator] = None):
    n_classes = int(labels.max()) + 1  # expect: FL000 GB0124
    classes = torch.randperm(n_classes, generator=generator)[: cfg.n_way]  # expect: FL000 GB0055
    sx, sy, qx, qy = [], [], [], []
    for new_label, cls in enumerate(classes.tolist()):  # expect: FL000 GB0033
        idx = torch.nonzero(labels == cls).squeeze(-1)  # expect: FL000 GB0036
        idx = idx[torch.randperm(idx.numel(), generator=generator)]
        assert idx.numel() >= cfg.k_shot + cfg.n_query, f"class {cls} has too few samples"
        sx.append(features[idx[: cfg.k_shot]])
        qx.append(features[idx[cfg.k_shot: cfg.k_shot + cfg.n_query]])
        sy += [new_label] * cfg.k_shot
        qy += [new_label] * cfg.n_query
    return torch.cat(sx), torch.tensor(sy), torch.cat(qx), torch.tensor(qy)

@torch.compile
def episode_metrics(logits, query_y, ks=(1, 3)):
    ranked = logits.argsort(dim=1, descending=True) == query_y[:, None]
    out = {"nll": F.cross_entropy(logits, query_y).item()}  # expect: FL000 GB0124
    for k in ks:
        if k >= logits.shape[1]:
            continue  # top-k over k or fewer classes is trivially 100%
        out[f"top{k}"] = ranked[:, :k].any(1).float().mean().item()  # expect: FL000 GB0124
    return out


# --------------------------------------------------------------------------- replay

class ReservoirBuffer:
    """Reservoir sampling (Vitter's algorithm R) over a fixed-size tensor store, as in mammoth."""

    def __init__(self, capacity: int, feat_dim: int, n_classes: int, generator: Optional[torch.Generator] = None):
        self.capacity = capacity
        self.x = torch.zeros(capacity, feat_dim)
        self.y = torch.zeros(capacity, dtype=torch.long)
        self.logits = torch.zeros(capacity, n_classes)
        self.num_seen = 0
        self.generator = generator if generator is not None else torch.Generator().manual_seed(BUFFER_SEED)

    def __len__(self):
        return min(self.num_seen, self.capacity)

    @property
    def is_empty(self) -> bool:
        return self.num_seen == 0

    def _reservoir_index(self) -> int:
        if self.num_seen < self.capacity:
            return self.num_seen
        rand = torch.randint(0, self.num_seen + 1, (1,), generator=self.generator).item()  # expect: FL000 GB0055; FL000 GB0124
        return rand if rand < self.capacity else -1

    def add(self, x, y, logits=None):
        for i in range(x.shape[0]):
            idx = self._reservoir_index()
            self.num_seen += 1  # expect: FL302
            if idx < 0:
                continue
            self.x[idx] = x[i].detach()
            self.y[idx] = y[i]
            if logits is not None:
                self.logits[idx] = logits[i].detach()

    def sample(self, n: int):
        n = min(n, len(self))
        choice = torch.randperm(len(self), generator=self.generator)[:n]  # expect: FL000 GB0055
        return self.x[choice], self.y[choice], self.logits[choice]

@torch.compile
def er_loss(model, buffer: ReservoirBuffer, x, y, replay_size: int = 4):
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    if not buffer.is_empty:
        weight = float(np.clip(len(buffer) / buffer.capacity, MIN_REPLAY_WEIGHT, 1.0))
        bx, by, _ = buffer.sample(replay_size)
        loss = loss + weight * F.cross_entropy(model(bx), by)
    buffer.add(x, y, logits)
    return loss

class DERPlusPlusLoss(nn.Module):
    def __init__(self, alpha: float = 0.3, beta: float = 0.5):
        super().__init__()
        self.alpha, self.beta = alpha, beta

    def forward(self, logits, y, buf_out_a, buf_logits, buf_out_b=None, buf_y=None):
        loss = F.cross_entropy(logits, y)
        loss = loss + self.alpha * F.mse_loss(buf_out_a, buf_logits)
        if self.beta > 0 and buf_out_b is not None:
            loss = loss + self.beta * F.cross_entropy(buf_out_b, buf_y)
        return loss

@torch.compile
def mix_replay_batch(x, y, buf_x, buf_y):
    budget = x.shape[0] // 2
    if buf_x.shape[0] > budget:  # expect: FL301
        buf_x, buf_y = buf_x[:budget], buf_y[:budget]
    return torch.cat([x, buf_x]), torch.cat([y, buf_y])


# --------------------------------------------------------------------------- regularisation

class EWC:
    """Elastic weight consolidation with a diagonal Fisher (Kirkpatrick et al. 2017)."""

    def __init__(self, model: nn.Module, lam: float = 100.0, only: Optional[str] = None):
        self.model = model
        self.lam = lam
        self.only = only
        self.fisher: Dict[str, torch.Tensor] = {}
        self.anchors: Dict[str, torch.Tensor] = {}

    def consolidate(self, fisher: Dict[str, torch.Tensor]):
        self.anchors = {n: p.detach().clone() for n, p in self.model.named_parameters()
                        if self.only is None or n.startswith(self.only)}
        self.fisher = {n: fisher[n].detach() for n in self.anchors}

    def penalty(self):
        loss = 0.0
        for name, p in self.model.named_parameters():
            if name not in self.fisher:
                continue
            loss = loss + (self.fisher[name] * (p - self.anchors[name]) ** 2).sum()
        return 0.5 * self.lam * loss

class OnlineEWC(EWC):
    """Online EWC (Schwarz et al. 2018): a running Fisher decayed by gamma."""

    def __init__(self, model: nn.Module, lam: float = 100.0, gamma: float = 0.9, **kw):
        super().__init__(model, lam, **kw)
        self.gamma = gamma

    def consolidate(self, fisher):
        old = self.fisher
        super().consolidate(fisher)
        for n, f in old.items():
            self.fisher[n] = self.fisher[n] + self.gamma * f

@torch.compile
def ewc_regularized_loss(model: nn.Module, ewc: EWC, x, y, task_id: Optional[int] = None, stats: Optional[dict] = None):
    logits = model(x) if task_id is None else model(x, task_id)
    task_loss, reg = F.cross_entropy(logits, y), ewc.penalty()
    if stats is not None:
        stats.update(task=task_loss.item(), ewc=float(reg))  # expect: FL000 GB0124
    return task_loss + reg

@torch.compile
def empirical_fisher(model: nn.Module, x, y, max_samples: Optional[int] = None):
    n = x.shape[0] if max_samples is None else min(max_samples, x.shape[0])
    fisher = {name: torch.zeros_like(p) for name, p in model.named_parameters()}  # expect: FL000 GB4347
    for i in range(n):
        model.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x[i: i + 1]), y[i: i + 1])
        loss.backward()  # expect: FL000 GB0123
        for name, p in model.named_parameters():
            if p.grad is not None:
                fisher[name] += p.grad.detach().pow(2) / n
    return fisher

@torch.compile
def functional_fisher(model: nn.Module, x, y):
    params = {n: p.detach() for n, p in model.named_parameters()}

    def sample_loss(p, xi, yi):
        out = functional_call(model, p, (xi.unsqueeze(0),))
        return F.cross_entropy(out, yi.unsqueeze(0))

    per_sample = torch.func.vmap(torch.func.grad(sample_loss), in_dims=(None, 0, 0))(params, x, y)
    return {n: g.pow(2).mean(0) for n, g in per_sample.items()}

def flat_grad(params) -> torch.Tensor:
    return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in params])

def assign_flat_grad_(params, flat: torch.Tensor):
    offset = 0
    for p in params:
        n = p.numel()
        if p.grad is not None:
            p.grad.copy_(flat[offset: offset + n].view_as(p))
        offset += n

def agem_project(grad, ref_grad, eps: float = 1e-12):
    dot = torch.dot(grad, ref_grad)
    if dot < 0:  # expect: FL000 GB0170
        grad = grad - dot / (ref_grad.dot(ref_grad) + eps) * ref_grad
    return grad

@torch.compile
def agem_step(model: nn.Module, ref_grad: torch.Tensor):
    params = [p for p in model.parameters() if p.requires_grad]
    g = agem_project(flat_grad(params), ref_grad)
    assign_flat_grad_(params, g)
    return g


# --------------------------------------------------------------------------- task-conditioned models

class MultiHeadClassifier(nn.Module):
    """Task-incremental learning: a shared trunk and one head per task."""

    def __init__(self, in_dim: int = 4, hidden: int = 8, classes_per_task=(3, 2, 5)):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.heads = nn.ModuleDict({str(t): nn.Linear(hidden, c) for t, c in enumerate(classes_per_task)})
        self.active_task = 0

    @property
    def num_tasks(self) -> int:
        return len(self.heads)

    def forward(self, x, task_id=None):
        task_id = self.active_task if task_id is None else task_id
        if isinstance(task_id, torch.Tensor):  # avalanche-style loaders yield task labels as tensors
            task_id = int(task_id.flatten()[0])  # expect: FL000 GB0124
        assert 0 <= task_id < self.num_tasks, f"unknown task {task_id}"
        return self.heads[str(task_id)](self.trunk(x))

class StreamingStandardizer(nn.Module):
    """Standardises inputs with cumulative-average statistics over the whole stream."""

    def __init__(self, dim: int = 4):
        super().__init__()
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("sq_mean", torch.ones(dim))
        self.n_updates = 0

    def forward(self, x):
        if self.training:
            self.n_updates += 1  # expect: FL302
            momentum = 1.0 / self.n_updates
            self.mean.lerp_(x.mean(0), momentum)
            self.sq_mean.lerp_(x.pow(2).mean(0), momentum)
        var = (self.sq_mean - self.mean ** 2).clamp_min(1e-5)
        return (x - self.mean) / var.sqrt()


# --------------------------------------------------------------------------- cases

def _randn(*shape, seed: int = 0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))

def _labels(n_way: int, per_class: int):
    return torch.arange(n_way).repeat_interleave(per_class)

def _model(seed: int = 0, **kw) -> MetaMLP:
    torch.manual_seed(seed)
    return MetaMLP(**kw)

def _filled_buffer() -> ReservoirBuffer:
    buf = ReservoirBuffer(capacity=7, feat_dim=4, n_classes=3, generator=torch.Generator().manual_seed(3))
    buf.add(_randn(9, 4, seed=4), torch.arange(9) % 3)
    return buf

def _ewc_setup():
    torch.manual_seed(5)
    model = MultiHeadClassifier()
    ewc = OnlineEWC(model, lam=10.0, only="trunk")
    ewc.consolidate({n: p.detach().abs() for n, p in model.named_parameters()})
    ewc.consolidate({n: p.detach().pow(2) for n, p in model.named_parameters()})
    return model, ewc

def _model_with_grads():
    model = _model(6)
    F.cross_entropy(model(_randn(5, 4, seed=7)), _labels(5, 1) % 3).backward()
    n = sum(p.numel() for p in model.parameters())
    return model, -flat_grad(list(model.parameters())) + 0.01 * _randn(n, seed=8)

CASES = {
    "MetaMLP": lambda: (_model(), (_randn(6, 4),)),
    "ConvEmbedding": lambda: (ConvEmbedding(), (_randn(5, 2, 8, 12),)),
    "maml_meta_loss": lambda: (maml_meta_loss, (_model(), _randn(6, 4), _labels(3, 2), _randn(9, 4, seed=1),
                                                _labels(3, 3), InnerLoopConfig(clip=1.0, log_every=1))),
    "MetaSGD": lambda: (MetaSGD(_model(1), steps=2), (_randn(6, 4), _labels(3, 2), _randn(9, 4, seed=1))),
    "finetune_head": lambda: (finetune_head, (_randn(7, 6), _labels(7, 1) % 3, nn.Linear(6, 3))),
    "reptile_interpolate": lambda: (reptile_interpolate, (_model(2), {n: p.detach() + 0.05 for n, p in _model(3).named_parameters()})),
    "PrototypicalNetwork": lambda: (PrototypicalNetwork(ConvEmbedding(), n_way=3),
                                    (_randn(6, 2, 8, 12), _labels(3, 2), _randn(9, 2, 8, 12, seed=1))),
    "PrototypicalNetwork_unique": lambda: (PrototypicalNetwork(MetaMLP(n_way=5), distance="cosine"),
                                           (_randn(6, 4), _labels(3, 2), _randn(9, 4, seed=1))),
    "prototype_logits": lambda: (prototype_logits, (_randn(6, 4), _randn(7, 4, seed=1), 3),
                                 (_randn(3, 4), _randn(5, 4, seed=1), 3)),
    "MatchingNetwork": lambda: (MatchingNetwork(), (_randn(6, 4), _labels(3, 2), _randn(9, 4, seed=1), 3)),
    "sample_episode": lambda: (sample_episode, (_randn(30, 4), torch.arange(30) % 5, EpisodeConfig(), torch.Generator().manual_seed(11))),
    "episode_metrics": lambda: (episode_metrics, (_randn(9, 5), _labels(3, 3))),
    "er_loss": lambda: (er_loss, (_model(4), _filled_buffer(), _randn(5, 4, seed=2), _labels(5, 1) % 3)),
    "DERPlusPlusLoss": lambda: (DERPlusPlusLoss(), (_randn(5, 3), _labels(5, 1) % 3, _randn(4, 3, seed=1),
                                                    _randn(4, 3, seed=2), _randn(4, 3, seed=3), _labels(2, 2))),
    "mix_replay_batch": lambda: (mix_replay_batch, (_randn(10, 4), _labels(5, 2), _randn(3, 4, seed=1), _labels(3, 1)),
                                 (_randn(6, 4), _labels(3, 2), _randn(5, 4, seed=1), _labels(5, 1))),
    "ewc_regularized_loss": lambda: (ewc_regularized_loss, (*_ewc_setup(), _randn(5, 4), _labels(5, 1) % 2, 1, {})),
    "empirical_fisher": lambda: (empirical_fisher, (_model(5), _randn(6, 4), _labels(3, 2), 3)),
    "functional_fisher": lambda: (functional_fisher, (_model(5), _randn(6, 4), _labels(3, 2))),
    "agem_step": lambda: (agem_step, _model_with_grads()),
    "MultiHeadClassifier": lambda: (MultiHeadClassifier(), (_randn(5, 4), torch.full((5,), 2))),
    "StreamingStandardizer": lambda: (StreamingStandardizer(), (_randn(5, 4),)),
}
