"""Compiled train / eval steps as people write them: smoothed, masked and class-weighted losses,
gradient accumulation, EMA of weights, metric meters, early stopping, autocast, periodic logging,
checkpoint dictionaries."""
import copy
import logging
import math
import time
import warnings
from collections import defaultdict
from dataclasses import dataclass
from typing import Dict, List

import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger(__name__)

LOG_EVERY = 2
IGNORE_INDEX = -100
NUM_CLASSES = 4
CLASS_WEIGHTS = torch.tensor([1.0, 2.0, 0.5, 1.5])


@dataclass
class TrainConfig:
    label_smoothing: float = 0.1
    grad_accum_steps: int = 2
    ema_decay: float = 0.99
    max_grad_norm: float = 1.0
    warmup_steps: int = 3
    total_steps: int = 20
    base_lr: float = 3e-4
    distill_temperature: float = 2.0
    distill_alpha: float = 0.7


class TinyClassifier(nn.Module):
    def __init__(self, d_in: int = 6, n_classes: int = NUM_CLASSES):
        super().__init__()
        self.fc1 = nn.Linear(d_in, 8)
        self.fc2 = nn.Linear(8, n_classes)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


@torch.compile
def smoothed_weighted_ce(logits, targets, smoothing: float = 0.1):
    return F.cross_entropy(logits, targets, weight=CLASS_WEIGHTS, ignore_index=IGNORE_INDEX,
                           label_smoothing=smoothing)


def _masked_mean(values, mask):
    mask = mask.to(values.dtype)
    return (values * mask).sum() / mask.sum().clamp_min(1.0)


@torch.compile(dynamic=False)
def token_level_loss(logits, targets, loss_mask, cfg: TrainConfig):
    vocab = logits.size(-1)
    ce = F.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1), reduction="none",
                         label_smoothing=cfg.label_smoothing)
    return _masked_mean(ce, loss_mask.reshape(-1))


@torch.compile
def poly_focal_loss(logits, targets, gamma: float = 2.0, epsilon: float = 1.0):
    logpt = F.log_softmax(logits, dim=-1).gather(1, targets[:, None]).squeeze(1)
    pt = logpt.exp()
    loss = (-(1 - pt) ** gamma * logpt + epsilon * (1 - pt) ** (gamma + 1)).mean()
    if not torch.isfinite(loss):  # expect: FL000 GB0170
        warnings.warn(f"non-finite focal loss (gamma={gamma}), skipping batch")  # expect: FL000 GB0007
        loss = logits.sum() * 0.0
    return loss


@torch.compile
def accum_train_step(model, optimizer, x, y, step: int, accum_steps: int = 2):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(x)
    loss = F.cross_entropy(logits.float(), y) / accum_steps
    loss.backward()  # expect: FL000 GB0123
    if (step + 1) % accum_steps == 0:
        optimizer.step()  # expect: FL000 GB0025
        optimizer.zero_grad(set_to_none=True)  # expect: FL000 GB0008
    return loss.detach() * accum_steps


class RunningMeter:
    """Sums of Python floats per metric name, like the meters in most training scripts."""

    def __init__(self):
        self.totals = defaultdict(float)
        self.counts = defaultdict(int)

    def update(self, name: str, value, n: int = 1):
        self.totals[name] += float(value) * n  # expect: FL000 GB0124
        self.counts[name] += n

    def compute(self) -> Dict[str, float]:
        return {k: self.totals[k] / max(self.counts[k], 1) for k in self.totals}


@torch.compile
def evaluate_batches(model, xs: List[torch.Tensor], ys: List[torch.Tensor]):
    meter = RunningMeter()
    with torch.no_grad():
        for x, y in zip(xs, ys):
            logits = model(x)
            meter.update("loss", F.cross_entropy(logits, y), x.size(0))
            meter.update("acc", (logits.argmax(-1) == y).float().mean(), x.size(0))
    return meter.compute()


class EarlyStopping:
    def __init__(self, patience: int = 2, min_delta: float = 1e-3):
        self.patience, self.min_delta = patience, min_delta
        self.best = math.inf
        self.bad_epochs = 0

    def should_stop(self, val_loss) -> bool:
        if val_loss < self.best - self.min_delta:  # expect: FL000 GB0170
            self.best = val_loss
            self.bad_epochs = 0
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience


@torch.compile
def validate_with_early_stopping(model, x, y, best: float = math.inf, patience: int = 2):
    stopper = EarlyStopping(patience)
    stopper.best = best
    with torch.no_grad():
        val_loss = F.cross_entropy(model(x), y)
    stop = stopper.should_stop(val_loss)  # expect: FL000 GB0092
    return val_loss, stop


@torch.compile
def train_step_with_logging(model, x, y, step: int):
    loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
    if step % LOG_EVERY == 0:
        logger.info("step %d loss %.4f", step, loss.item())  # expect: FL000 GB0124; FL000 GB0291
    return loss


@torch.compile
def build_checkpoint(model, epoch: int, metrics: Dict[str, torch.Tensor]):
    return {
        "epoch": epoch,
        "model": {k: v.detach().clone() for k, v in model.state_dict().items()},
        "metrics": {k: round(v.item(), 4) for k, v in metrics.items()},  # expect: FL000 GB0092; FL000 GB0124
        "saved_at": time.time(),
    }


@torch.compile
def clip_grads_by_global_norm(params: List[nn.Parameter], max_norm: float = 1.0):
    grads = [p.grad for p in params if p.grad is not None]
    norms = torch.stack([torch.linalg.vector_norm(g) for g in grads])
    total = torch.linalg.vector_norm(norms)
    coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef)
    return total


class AmpClassifierStep(nn.Module):
    def __init__(self, smoothing: float = 0.05):
        super().__init__()
        self.net = TinyClassifier()
        self.register_buffer("class_weights", CLASS_WEIGHTS.clone())
        self.smoothing = smoothing

    def forward(self, x, y):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = self.net(x)
        loss = F.cross_entropy(logits.float(), y, weight=self.class_weights, label_smoothing=self.smoothing)
        return loss, logits.detach()


class DistillationLoss(nn.Module):
    def __init__(self, cfg: TrainConfig = TrainConfig()):
        super().__init__()
        self.T, self.alpha = cfg.distill_temperature, cfg.distill_alpha

    def forward(self, student_logits, teacher_logits, targets):
        soft = F.kl_div(F.log_softmax(student_logits / self.T, -1), F.softmax(teacher_logits / self.T, -1),
                        reduction="batchmean") * self.T ** 2
        hard = F.cross_entropy(student_logits, targets)
        return self.alpha * soft + (1 - self.alpha) * hard


class ChunkedLMLoss(nn.Module):
    """Computes the LM-head + loss in sequence chunks to bound the size of the logits."""

    def __init__(self, dim: int = 6, vocab: int = 12, chunk: int = 8):
        super().__init__()
        self.head = nn.Linear(dim, vocab, bias=False)
        self.chunk = chunk

    def _chunk_loss(self, h, t):
        logits = self.head(h)
        return F.cross_entropy(logits.flatten(0, 1), t.flatten(), ignore_index=IGNORE_INDEX, reduction="sum")

    def forward(self, hidden, targets):
        n = (targets != IGNORE_INDEX).sum().clamp_min(1)
        if hidden.size(1) > self.chunk:  # expect: FL301
            total = sum(self._chunk_loss(h, t) for h, t in zip(hidden.split(self.chunk, 1), targets.split(self.chunk, 1)))
            return total / n
        return self._chunk_loss(hidden, targets) / n


class ModelEMA(nn.Module):
    """Exponential moving average of weights with the usual decay warmup (timm / YOLO style)."""

    def __init__(self, decay: float = 0.999, tau: float = 20.0):
        super().__init__()
        self.model = TinyClassifier()
        self.shadow = copy.deepcopy(self.model).requires_grad_(False)
        self.decay, self.tau = decay, tau
        self.updates = 0

    @torch.no_grad()
    def _update(self):
        self.updates += 1  # expect: FL302
        d = self.decay * (1 - math.exp(-self.updates / self.tau))
        for e, p in zip(self.shadow.parameters(), self.model.parameters()):
            e.mul_(d).add_(p.detach(), alpha=1 - d)

    def forward(self, x):
        out = self.model(x)
        self._update()
        return out, self.shadow(x)


@torch.compile
def eval_in_eval_mode(model, x):
    was_training = model.training
    model.eval()
    with torch.no_grad():
        probs = model(x).softmax(-1)
    model.train(was_training)
    return probs


@torch.compile
def timed_forward(model, x):
    start = time.perf_counter()  # expect: FL000 GB0007
    out = model(x)
    elapsed = time.perf_counter() - start  # expect: FL000 GB0007
    return out, x.size(0) / max(elapsed, 1e-9)


@torch.compile
def confusion_matrix(preds, targets, num_classes: int = NUM_CLASSES):
    idx = targets * num_classes + preds
    counts = torch.bincount(idx, minlength=num_classes ** 2)  # expect: FL000 GB0036
    return counts.reshape(num_classes, num_classes)


class MicroBatchStep(nn.Module):
    """Splits a batch into micro-batches and accumulates the loss (the way big-batch recipes do)."""

    def __init__(self, micro_batch: int = 3):
        super().__init__()
        self.net = TinyClassifier()
        self.micro_batch = micro_batch

    def forward(self, x, y):
        n_micro = math.ceil(x.size(0) / self.micro_batch)
        total = x.new_zeros(())
        for i in range(n_micro):  # expect: FL301
            xs = x[i * self.micro_batch:(i + 1) * self.micro_batch]
            ys = y[i * self.micro_batch:(i + 1) * self.micro_batch]
            total = total + F.cross_entropy(self.net(xs), ys, reduction="sum")
        return total / x.size(0)


@torch.compile
def skip_step_on_overflow(params: List[nn.Parameter], loss_scale: float = 1024.0):
    grads = [p.grad for p in params]
    found_inf = torch.stack([(~torch.isfinite(g)).any() for g in grads]).any()
    if found_inf:  # expect: FL000 GB0170
        for g in grads:
            g.zero_()
        return loss_scale / 2
    for g in grads:
        g.div_(loss_scale)
    return loss_scale


def cosine_lr(step: int, cfg: TrainConfig) -> float:
    if step < cfg.warmup_steps:
        return cfg.base_lr * (step + 1) / cfg.warmup_steps
    progress = (step - cfg.warmup_steps) / max(1, cfg.total_steps - cfg.warmup_steps)
    return 0.5 * cfg.base_lr * (1 + math.cos(math.pi * progress))


@torch.compile
def set_lr_and_forward(model, optimizer, x, step: int, cfg: TrainConfig):
    lr = cosine_lr(step, cfg)
    for group in optimizer.param_groups:
        group["lr"] = lr  # expect: FL302
    return model(x), lr


def _with_grads(model: nn.Module, scale: float = 1.0, poison: bool = False):
    for p in model.parameters():
        p.grad = torch.randn_like(p) * scale
    if poison:
        next(model.parameters()).grad[0, 0] = float("inf")
    return list(model.parameters())


def _sgd(model):
    return torch.optim.SGD(model.parameters(), lr=0.1)


_X = torch.randn(5, 6)
_Y = torch.tensor([0, 3, 1, 2, 1])

CASES = {
    "smoothed_weighted_ce": lambda: (smoothed_weighted_ce, (torch.randn(5, 4), torch.tensor([0, 3, -100, 2, 1]), 0.1)),
    "token_level_loss": lambda: (token_level_loss, (torch.randn(2, 5, 7), torch.randint(0, 7, (2, 5)),
                                                    torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]), TrainConfig())),
    "poly_focal_loss": lambda: (poly_focal_loss, (torch.randn(5, 4), _Y.clone())),
    "poly_focal_loss_nan": lambda: (poly_focal_loss, (torch.tensor([[float("nan"), 0.0, 0.0, 0.0]] * 5), _Y.clone())),
    "accum_train_step": lambda: (accum_train_step, (m := TinyClassifier(), _sgd(m), _X.clone(), _Y.clone(), 1)),
    "evaluate_batches": lambda: (evaluate_batches, (TinyClassifier(), [torch.randn(3, 6), torch.randn(2, 6)],
                                                    [torch.tensor([0, 1, 2]), torch.tensor([3, 3])])),
    "validate_with_early_stopping": lambda: (validate_with_early_stopping, (TinyClassifier(), _X.clone(), _Y.clone())),
    "validate_no_improvement": lambda: (validate_with_early_stopping, (TinyClassifier(), _X.clone(), _Y.clone(), 0.01, 1)),
    "train_step_with_logging": lambda: (train_step_with_logging, (TinyClassifier(), _X.clone(), _Y.clone(), 4)),
    "build_checkpoint": lambda: (build_checkpoint, (TinyClassifier(), 3, {"loss": torch.tensor(0.52), "acc": torch.tensor(0.8)})),
    "clip_grads_by_global_norm": lambda: (clip_grads_by_global_norm, (_with_grads(TinyClassifier(), 3.0), 1.0)),
    "AmpClassifierStep": lambda: (AmpClassifierStep(), (_X.clone(), _Y.clone())),
    "DistillationLoss": lambda: (DistillationLoss(), (torch.randn(5, 4), torch.randn(5, 4), _Y.clone())),
    "ChunkedLMLoss": lambda: (ChunkedLMLoss(), (torch.randn(2, 5, 6), torch.randint(0, 12, (2, 5))),
                              (torch.randn(3, 11, 6), torch.randint(0, 12, (3, 11)))),
    "ModelEMA": lambda: (ModelEMA(), (_X.clone(),)),
    "eval_in_eval_mode": lambda: (eval_in_eval_mode, (nn.Sequential(TinyClassifier(), nn.Dropout(0.1)), _X.clone())),
    "timed_forward": lambda: (timed_forward, (TinyClassifier(), _X.clone())),
    "confusion_matrix": lambda: (confusion_matrix, (torch.tensor([0, 1, 1, 3, 2]), _Y.clone())),
    "MicroBatchStep": lambda: (MicroBatchStep(), (torch.randn(5, 6), torch.tensor([0, 3, 1, 2, 1])),
                               (torch.randn(7, 6), torch.tensor([0, 3, 1, 2, 1, 0, 2]))),
    "skip_step_on_overflow": lambda: (skip_step_on_overflow, (_with_grads(TinyClassifier(), 100.0), 1024.0)),
    "skip_step_on_overflow_inf": lambda: (skip_step_on_overflow, (_with_grads(TinyClassifier(), 100.0, poison=True), 1024.0)),
    "set_lr_and_forward": lambda: (set_lr_and_forward, (m := TinyClassifier(), _sgd(m), _X.clone(), 5, TrainConfig())),
    "set_lr_and_forward_warmup": lambda: (set_lr_and_forward, (m := TinyClassifier(), _sgd(m), _X.clone(), 1, TrainConfig())),
}
