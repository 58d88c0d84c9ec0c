"""Evaluation and monitoring utilities around trained classifiers, in the style of research repos
(gpleiss/temperature_scaling, the ImageNet example, YOLO's ModelEMA, OOD-detection baselines):
calibration metrics (binned / adaptive / class-wise ECE, temperature scaling and grid fitting),
top-k accuracy, confusion matrices and per-class report dicts, bootstrap confidence intervals,
a metric registry keyed by name, early stopping, EMA of weights, gradient-norm monitoring,
activation outlier probes, OOD scorers and reporters that log summaries."""
import copy
import functools
import logging
import math
from collections import deque
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("model_eval")
logger.addHandler(logging.NullHandler())

NUM_BINS = 10
EPS = 1e-12
TOPK = (1, 3)
TEMPERATURE_GRID = (0.5, 0.75, 1.0, 1.5, 2.0, 3.0)


@dataclass
class EvalConfig:
    num_classes: int = 5
    topk: Tuple[int, ...] = TOPK
    class_names: Optional[List[str]] = None

    def names(self) -> List[str]:
        if self.class_names is not None:
            return list(self.class_names)
        return [f"class_{i}" for i in range(self.num_classes)]


# --------------------------------------------------------------------------- small helpers

def _to_probs(logits: torch.Tensor) -> torch.Tensor:
    return logits.softmax(dim=-1)

def _confidences(probs: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    conf, pred = probs.max(dim=-1)
    return conf, pred

def _bin_edges(n_bins: int, device=None) -> torch.Tensor:
    return torch.linspace(0.0, 1.0, n_bins + 1, device=device)

def _binned_gap(conf: torch.Tensor, correct: torch.Tensor, edges: torch.Tensor, n_bins: int) -> torch.Tensor:
    """sum over bins of |sum(conf) - sum(correct)| / N  ==  the usual weighted |acc - conf| gap."""
    idx = torch.bucketize(conf, edges[1:-1])
    counts = conf.new_zeros(n_bins).scatter_add_(0, idx, torch.ones_like(conf))
    gap = conf.new_zeros(n_bins).scatter_add_(0, idx, conf - correct)
    return gap.abs().sum() / counts.sum().clamp(min=1.0)


# --------------------------------------------------------------------------- metric registry

METRICS: Dict[str, Callable] = {}

def register_metric(name: Optional[str] = None, *, higher_is_better: bool = True):
    def deco(fn):
        key = name or fn.__name__
        fn.higher_is_better = higher_is_better
        METRICS[key] = fn
        return fn
    return deco

def get_metric(name: str) -> Callable:
    try:
        return METRICS[name]
    except KeyError:
        raise KeyError(f"unknown metric {name!r}; have {sorted(METRICS)}") from None

@register_metric("accuracy")
def accuracy(logits, labels):
    return (logits.argmax(-1) == labels).float().mean()

@register_metric("nll", higher_is_better=False)
def nll(logits, labels):
    return F.cross_entropy(logits, labels)

@register_metric("brier", higher_is_better=False)
def brier_score(logits, labels):
    probs = _to_probs(logits)
    onehot = F.one_hot(labels, probs.shape[-1]).to(probs.dtype)
    return (probs - onehot).pow(2).sum(-1).mean()

@register_metric("ece", higher_is_better=False)
def ece_binned(logits, labels, n_bins: int = NUM_BINS):
    conf, pred = _confidences(_to_probs(logits))
    correct = pred.eq(labels).to(conf.dtype)
    return _binned_gap(conf, correct, _bin_edges(n_bins, logits.device), n_bins)

def topk_correct(logits, labels, k):
    top = logits.topk(k, dim=-1).indices
    return (top == labels[:, None]).any(-1).float().sum()

METRICS["top3"] = lambda logits, labels: topk_correct(logits, labels, 3) / labels.numel()
METRICS["ece5"] = functools.partial(ece_binned, n_bins=5)

def metric_dict(logits, labels, names: Sequence[str] = ("accuracy", "nll", "brier", "ece")):
    out = {}
    for name in names:
        fn = get_metric(name)
        out[name] = fn(logits, labels)
    return out

compute_metrics = torch.compile(metric_dict)

def to_scalars(metrics: Dict[str, torch.Tensor]) -> Dict[str, float]:
    return {k: v.item() if torch.is_tensor(v) else float(v) for k, v in metrics.items()}  # expect: FL000 GB0092; FL000 GB0124; FL000 GB4347


# --------------------------------------------------------------------------- models under test

class Classifier(nn.Module):
    def __init__(self, in_features=6, hidden=8, num_classes=5):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, num_classes)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class TemperatureScaler(nn.Module):
    """Wraps a trained model; `temperature` is the only parameter tuned on the validation set."""

    def __init__(self, model: nn.Module, init_temp: float = 1.5):
        super().__init__()
        self.model = model
        self.temperature = nn.Parameter(torch.ones(1) * init_temp)

    @property
    def T(self) -> torch.Tensor:
        return self.temperature.clamp(min=0.05)

    def temperature_scale(self, logits):
        temperature = self.T.unsqueeze(1).expand(logits.size(0), logits.size(1))
        return logits / temperature

    def forward(self, x):
        return self.temperature_scale(self.model(x))

def _nll_at(logits, labels, t):
    return F.cross_entropy(logits / t, labels)

@torch.compile
def fit_temperature_grid(logits, labels, grid=TEMPERATURE_GRID):
    scores = {t: _nll_at(logits, labels, t) for t in grid}
    best_t = min(scores, key=scores.get)  # expect: FL000 GB0193
    return best_t, scores[best_t]


# --------------------------------------------------------------------------- calibration

class ECELoss(nn.Module):
    """Expected calibration error, as in the temperature-scaling reference code."""

    def __init__(self, n_bins=NUM_BINS):
        super().__init__()
        bin_boundaries = torch.linspace(0, 1, n_bins + 1)
        self.bin_lowers = bin_boundaries[:-1]
        self.bin_uppers = bin_boundaries[1:]

    def forward(self, logits, labels):
        softmaxes = F.softmax(logits, dim=1)
        confidences, predictions = torch.max(softmaxes, 1)
        accuracies = predictions.eq(labels)
        ece = torch.zeros(1, device=logits.device)
        for bin_lower, bin_upper in zip(self.bin_lowers, self.bin_uppers):
            in_bin = confidences.gt(bin_lower.item()) * confidences.le(bin_upper.item())  # expect: FL000 GB0124
            prop_in_bin = in_bin.float().mean()
            if prop_in_bin.item() > 0:
                accuracy_in_bin = accuracies[in_bin].float().mean()
                avg_confidence_in_bin = confidences[in_bin].mean()
                ece += torch.abs(avg_confidence_in_bin - accuracy_in_bin) * prop_in_bin
        return ece


class ClasswiseECE(nn.Module):
    """Static calibration error: binned gap of every class's own probability column."""

    def __init__(self, n_bins=NUM_BINS, reduction="mean"):
        super().__init__()
        self.n_bins = n_bins
        self.reduction = reduction
        self.register_buffer("edges", _bin_edges(n_bins))

    def forward(self, logits, labels):
        probs = logits.softmax(-1)
        per_class = []
        for k in range(probs.shape[1]):  # expect: FL301
            hit = (labels == k).to(probs.dtype)
            per_class.append(_binned_gap(probs[:, k], hit, self.edges, self.n_bins))
        per_class = torch.stack(per_class)
        return per_class.mean() if self.reduction == "mean" else per_class

@torch.compile(dynamic=True)
def adaptive_ece(logits, labels, n_bins: int = NUM_BINS):
    """Equal-mass binning: sort by confidence and split into n_bins chunks of ~equal size."""
    conf, pred = _confidences(_to_probs(logits))
    correct = pred.eq(labels).to(conf.dtype)
    n = conf.shape[0]
    if n < n_bins:  # expect: FL301
        n_bins = 4  # not enough samples for the requested bins
    order = torch.argsort(conf)
    chunks_c = torch.tensor_split(conf[order], n_bins)
    chunks_a = torch.tensor_split(correct[order], n_bins)
    total = conf.new_zeros(())
    for c, a in zip(chunks_c, chunks_a):
        total = total + (c.sum() - a.sum()).abs() / n
    return total



# --------------------------------------------------------------------------- classification reports

@torch.compile
def topk_accuracy(output, target, topk=(1,)):
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))
        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res

def confusion_matrix(preds, targets, num_classes: int) -> torch.Tensor:
    cm = torch.zeros(num_classes, num_classes, dtype=torch.long, device=preds.device)
    cm.index_put_((targets, preds), torch.ones_like(preds), accumulate=True)
    return cm

def precision_recall_f1(cm: torch.Tensor):
    tp = cm.diag().float()
    precision = tp / cm.sum(0).clamp(min=1)
    recall = tp / cm.sum(1).clamp(min=1)
    f1 = 2 * precision * recall / (precision + recall).clamp(min=EPS)
    return precision, recall, f1

@torch.compile
def per_class_report(logits, labels, cfg: EvalConfig):
    cm = confusion_matrix(logits.argmax(-1), labels, cfg.num_classes)
    precision, recall, f1 = precision_recall_f1(cm)
    report = {}
    for i, name in enumerate(cfg.names()):
        report[name] = {"precision": precision[i], "recall": recall[i], "f1": f1[i],
                        "support": int(cm[i].sum())}  # expect: FL000 GB0124
    report["macro_f1"] = f1.mean()
    return report


class StreamingConfusionMatrix(nn.Module):
    """Accumulates a confusion matrix over an eval epoch (ignore_index pixels/tokens dropped)."""

    def __init__(self, num_classes: int, ignore_index: int = -100):
        super().__init__()
        self.num_classes = num_classes
        self.ignore_index = ignore_index
        self.register_buffer("mat", torch.zeros(num_classes, num_classes, dtype=torch.long))
        self.num_batches = 0

    def forward(self, logits, target):
        pred = logits.argmax(1)
        keep = target != self.ignore_index
        pred, target = pred[keep], target[keep]  # expect: FL000 GB0036
        idx = target * self.num_classes + pred
        counts = torch.bincount(idx, minlength=self.num_classes ** 2)  # expect: FL000 GB0036
        self.mat += counts.reshape(self.num_classes, self.num_classes)
        self.num_batches += 1  # expect: FL302
        return self.mat

@torch.compile
def bootstrap_ci(metric, logits, labels, n_samples=8, alpha=0.1, generator=None):
    n = labels.shape[0]
    stats = []
    for _ in range(n_samples):
        idx = torch.randint(0, n, (n,), generator=generator)  # expect: FL000 GB0055
        stats.append(metric(logits[idx], labels[idx]))
    stats = torch.stack(stats)
    lo, hi = np.quantile(stats.cpu().numpy(), [alpha / 2, 1 - alpha / 2])
    return stats.mean(), float(lo), float(hi)


# --------------------------------------------------------------------------- training-time monitors

class EarlyStopping:
    def __init__(self, patience: int = 3, min_delta: float = 0.0, mode: str = "min"):
        self.patience = patience
        self.min_delta = min_delta
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad = 0
        self.should_stop = False
        if mode == "min":
            self._better = lambda a, b: a < b - min_delta
        else:
            self._better = lambda a, b: a > b + min_delta

    def step(self, value) -> bool:
        if self._better(value, self.best):  # expect: FL000 GB0170
            self.best = value  # expect: FL302
            self.num_bad = 0
        else:
            self.num_bad += 1
            if self.num_bad >= self.patience:
                self.should_stop = True
        return self.should_stop


class EarlyStoppingEvaluator(nn.Module):
    def __init__(self, model: nn.Module, stopper: EarlyStopping, criterion: Optional[nn.Module] = None):
        super().__init__()
        self.model = model
        self.stopper = stopper
        self.criterion = criterion or nn.CrossEntropyLoss()

    def _track(self, loss):
        stop = self.stopper.step(loss.detach())
        if stop:
            logger.info("early stopping triggered (best=%s)", self.stopper.best)
        return stop

    def forward(self, x, y):
        logits = self.model(x)
        loss = self.criterion(logits, y)
        stop = self._track(loss)
        return loss, stop


class ModelEMA:
    # exponential moving average of weights, decay ramps up over the first ~tau updates
    def __init__(self, model: nn.Module, decay: float = 0.999, tau: float = 20.0):
        self.module = copy.deepcopy(model).eval()
        for p in self.module.parameters():
            p.requires_grad_(False)
        self.decay_fn = lambda n: decay * (1 - math.exp(-n / tau))
        self.updates = 0

    @torch.no_grad()
    def update(self, model: nn.Module) -> float:
        self.updates += 1  # expect: FL302
        d = self.decay_fn(self.updates)
        msd = model.state_dict()
        for k, v in self.module.state_dict().items():
            if v.dtype.is_floating_point:
                v.mul_(d).add_(msd[k].detach(), alpha=1 - d)
        return d

def _ema_step(ema: ModelEMA, model: nn.Module, x: torch.Tensor):
    d = ema.update(model)
    with torch.no_grad():
        return ema.module(x), d

ema_step = torch.compile(_ema_step)

def global_grad_norm(parameters, norm_type: float = 2.0) -> torch.Tensor:
    grads = [p.grad.detach() for p in parameters if p.grad is not None]
    if len(grads) == 0:
        return torch.tensor(0.0)
    if norm_type == math.inf:
        return max(g.abs().max() for g in grads)
    return torch.norm(torch.stack([torch.norm(g, norm_type) for g in grads]), norm_type)

def _log_spike(step, norm, level=logging.WARNING):
    logger.log(level, "grad-norm spike at step %d: %.3f", step, norm)


class GradNormMonitor:
    def __init__(self, window: int = 8, spike_factor: float = 3.0, history=(), on_spike=None):
        self.history = deque(history, maxlen=window)
        self.spike_factor = spike_factor
        self.on_spike: List[Callable] = list(on_spike or [_log_spike])
        self.num_spikes = 0

    @property
    def running_mean(self) -> float:
        return sum(self.history) / max(len(self.history), 1)

    def __call__(self, model: nn.Module, step: int, norm_type: float = 2.0):
        norm = global_grad_norm(model.parameters(), norm_type)
        if len(self.history) >= 2 and norm > self.spike_factor * self.running_mean:  # expect: FL000 GB0170; FL302
            self.num_spikes += 1
            for cb in self.on_spike:
                cb(step, norm)
        self.history.append(norm)
        return norm

@torch.compile
def monitored_grad_norm(monitor: GradNormMonitor, model: nn.Module, step: int):
    norm = monitor(model, step)
    return norm / math.sqrt(sum(p.numel() for p in model.parameters()))


# --------------------------------------------------------------------------- activations / OOD

def layer_activation_stats(a: torch.Tensor) -> Dict[str, torch.Tensor]:
    flat = a.flatten(1)
    mean = flat.mean(1)
    std = flat.std(1).clamp(min=EPS)
    kurt = ((flat - mean[:, None]) / std[:, None]).pow(4).mean(1)
    return {"absmax": flat.abs().amax(1), "std": std, "kurtosis": kurt}


class ActivationOutlierProbe(nn.Module):
    """Runs a Sequential layer by layer (no hooks) and flags layers with heavy-tailed activations."""

    def __init__(self, layers: nn.Sequential, kurt_thresh: float = 6.0, absmax_thresh: float = 20.0):
        super().__init__()
        self.layers = layers
        self.kurt_thresh = kurt_thresh
        self.absmax_thresh = absmax_thresh

    def forward(self, x):
        h = x
        flags, stats_per_layer = [], {}
        for name, layer in self.layers.named_children():
            h = layer(h)
            stats = layer_activation_stats(h)
            stats_per_layer[name] = stats
            flags.append((stats["kurtosis"] > self.kurt_thresh) | (stats["absmax"] > self.absmax_thresh))
        return h, torch.stack(flags, dim=1), stats_per_layer


class OODScorer(nn.Module):
    METHODS = ("msp", "energy")

    def __init__(self, backbone: nn.Module, method: str = "energy", temperature: float = 1.0):
        super().__init__()
        if method not in self.METHODS:
            raise ValueError(f"unknown OOD score {method!r}")
        self.backbone = backbone
        self.method = method
        self.temperature = temperature

    def _score_msp(self, logits):
        return logits.softmax(-1).amax(-1)

    def _score_energy(self, logits):
        return self.temperature * torch.logsumexp(logits / self.temperature, dim=-1)

    def forward(self, x):
        logits = self.backbone(x)
        score = getattr(self, f"_score_{self.method}")(logits)
        return logits, score


# --------------------------------------------------------------------------- eval loop pieces

def _ece_callback(out, logits, labels, n_bins=NUM_BINS):
    out["ece"] = ece_binned(logits, labels, n_bins)

def _nan_guard(out, logits, labels):
    if not torch.isfinite(out["loss"]):  # expect: FL000 GB0170
        raise FloatingPointError("non-finite eval loss")

DEFAULT_CALLBACKS = (functools.partial(_ece_callback, n_bins=5), _nan_guard)

def _eval_step(model, x, y, cfg: EvalConfig, callbacks=DEFAULT_CALLBACKS):
    logits = model(x)
    out = {"loss": F.cross_entropy(logits, y)}
    for k in cfg.topk:
        out[f"top{k}"] = topk_correct(logits, y, k) / y.shape[0]
    for cb in callbacks:
        cb(out, logits, y)
    return out

eval_step = torch.compile(_eval_step)


class MetricReporter:
    def __init__(self, prefix: str = "val", precision: int = 4):
        self.prefix = prefix
        self.precision = precision
        self.last_line = ""

    def format(self, metrics: Dict[str, float]) -> str:
        return " | ".join(f"{self.prefix}/{k}={v:.{self.precision}f}" for k, v in metrics.items())

    def __call__(self, metrics: Dict[str, float], step: int) -> str:
        line = self.format(metrics)
        logger.info("step %d: %s", step, line)  # expect: FL000 GB0291
        self.last_line = line
        return line

@torch.compile
def evaluate_and_report(model, x, y, reporter: MetricReporter, step: int = 0,
                        names=("accuracy", "nll", "brier")):
    logits = model(x)
    metrics = metric_dict(logits, y, names)
    reporter(to_scalars(metrics), step)
    return metrics


# --------------------------------------------------------------------------- cases

def _x(b, f=6, seed=0):
    return torch.randn(b, f, generator=torch.Generator().manual_seed(seed))

def _logits(b, c=5, seed=0):
    return torch.randn(b, c, generator=torch.Generator().manual_seed(seed)) * 2.0

def _labels(b, c=5, seed=1):
    return torch.randint(0, c, (b,), generator=torch.Generator().manual_seed(seed))

def _model(seed=0, **kw):
    torch.manual_seed(seed)
    return Classifier(**kw)

def _model_with_grads(seed=0):
    model = _model(seed)
    F.cross_entropy(model(_x(7)), _labels(7)).backward()
    return model

def _probe():
    torch.manual_seed(2)
    layers = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 9), nn.Tanh())
    return ActivationOutlierProbe(layers)

CASES = {
    "Classifier": lambda: (_model(), (_x(7),)),
    "TemperatureScaler": lambda: (TemperatureScaler(_model()), (_x(7),)),
    "fit_temperature_grid": lambda: (fit_temperature_grid, (_logits(7), _labels(7))),
    "ECELoss": lambda: (ECELoss(), (_logits(9), _labels(9))),
    "ClasswiseECE": lambda: (ClasswiseECE(), (_logits(9, 5), _labels(9, 5)), (_logits(11, 4), _labels(11, 4))),
    "adaptive_ece": lambda: (adaptive_ece, (_logits(13), _labels(13)), (_logits(7), _labels(7))),
    "topk_accuracy": lambda: (topk_accuracy, (_logits(7), _labels(7), TOPK)),
    "compute_metrics": lambda: (compute_metrics, (_logits(7), _labels(7), ("accuracy", "nll", "top3", "ece5"))),
    "per_class_report": lambda: (per_class_report, (_logits(9), _labels(9), EvalConfig())),
    "StreamingConfusionMatrix": lambda: (StreamingConfusionMatrix(5), (_logits(9), _labels(9).index_fill(0, torch.arange(0, 9, 3), -100))),
    "bootstrap_ci": lambda: (bootstrap_ci, (accuracy, _logits(7), _labels(7), 4, 0.1,
                                            torch.Generator().manual_seed(5))),
    "EarlyStoppingEvaluator": lambda: (EarlyStoppingEvaluator(_model(), EarlyStopping(patience=2)),
                                       (_x(7), _labels(7))),
    "ema_step": lambda: (ema_step, (ModelEMA(_model(0)), _model(1), _x(7))),
    "monitored_grad_norm": lambda: (monitored_grad_norm, (GradNormMonitor(history=[40.0, 60.0]),
                                                          _model_with_grads(), 3)),
    "ActivationOutlierProbe": lambda: (_probe(), (_x(7),)),
    "OODScorer": lambda: (OODScorer(_model(), "energy", temperature=2.0), (_x(7),)),
    "eval_step": lambda: (eval_step, (_model(), _x(7), _labels(7), EvalConfig())),
    "evaluate_and_report": lambda: (evaluate_and_report, (_model(), _x(7), _labels(7), MetricReporter(), 2)),
}
