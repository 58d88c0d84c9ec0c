"""Whole training/eval steps under torch.compile: backward, metrics, checkpoints, logging."""
import io
import logging
import time

import torch
import torch.nn.functional as F
from torch import nn

log = logging.getLogger("train")

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1000)
scaler = torch.amp.GradScaler("cpu")


@torch.compile
def forward_loss(x, y):
    return F.cross_entropy(model(x), y)


@torch.compile
def train_step(x, y):
    loss = F.cross_entropy(model(x), y)
    loss.backward()  # expect: FL142 GB0123
    return loss.detach()


@torch.compile
def train_step_with_zero_grad(x, y):
    optimizer.zero_grad(set_to_none=True)  # expect: FL125 GB0008
    return F.cross_entropy(model(x), y)


@torch.compile
def train_step_with_schedule(x, y):
    loss = F.cross_entropy(model(x), y)
    scheduler.step()  # expect: FL125 GB0008
    return loss.detach()


@torch.compile
def apply_update(net, x, updater: torch.optim.Optimizer):
    """`updater` has an LR scheduler: its step is wrapped by one more skipped function (GB0007)."""
    logits = net(x)
    updater.step()  # expect: FL125 GB0007; FL125 GB0025
    return logits


@torch.compile
def scaled_loss(x, y):
    return scaler.scale(F.cross_entropy(model(x), y))  # expect: FL125 GB0008


@torch.compile
def eval_step(x, y):
    with torch.no_grad():
        logits = model(x)
    correct = (logits.argmax(-1) == y).sum()
    return correct, y.numel()


@torch.compile
def eval_step_with_accuracy(x, y):
    logits = model(x)
    acc = (logits.argmax(-1) == y).float().mean().item()  # expect: FL102 GB0124
    # Not reported: the rest of this function holds no tensor, and Dynamo does not compile
    # a (resume) frame without tensors -- the logging call runs eagerly.
    log.info("accuracy %.3f", acc)
    return acc


@torch.compile
def timed_step(x, y):
    t0 = time.time()  # expect: FL121 GB0007
    loss = F.cross_entropy(model(x), y)
    return loss, time.time() - t0  # expect: FL121 GB0007


@torch.compile
def checkpoint_to_buffer(x):
    buf = io.BytesIO()  # expect: FL113 GB0156
    torch.save(model.state_dict(), buf)  # expect: FL121 GB0007
    return model(x), buf.getvalue()  # expect: FL113 GB0156


@torch.compile
def confusion_matrix(preds, target, classes: int = 3):
    idx = target * classes + preds
    return torch.bincount(idx, minlength=classes * classes).view(classes, classes)  # expect: FL105 GB0036


@torch.compile
def confusion_matrix_static(preds, target, classes: int = 3):
    idx = target * classes + preds
    counts = torch.zeros(classes * classes, dtype=torch.long).scatter_add_(0, idx, torch.ones_like(idx))
    return counts.view(classes, classes)


@torch.compile
def per_class_recall(preds, target, classes: int = 3):
    recalls = {}
    for c in range(classes):
        hit = (preds == c) & (target == c)
        recalls[c] = (hit.sum() / (target == c).sum().clamp(min=1)).item()  # expect: FL102 GB0124
    return recalls


@torch.compile
def early_stopping_check(val_loss, best, patience_left: int):
    if val_loss < best:  # expect: FL101 GB0170
        return val_loss, 5
    return best, patience_left - 1


@torch.compile
def label_counts(y):
    return {int(c): int(n) for c, n in zip(*torch.unique(y, return_counts=True))}  # expect: FL105 GB0036; FL102 GB0124


class Trainer(nn.Module):
    """Wraps a model; forward does a full step and returns host-side metrics."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 3))
        self.history = []

    def forward(self, x, y):
        logits = self.net(x)
        loss = F.cross_entropy(logits, y)
        self.history.append(loss.detach())  # expect: FL302
        grad_norm = sum(p.abs().sum() for p in self.net.parameters())
        return loss, grad_norm


class EvalWithPrint(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 3)

    def forward(self, x, y):
        logits = self.net(x)
        loss = F.cross_entropy(logits, y)
        print(f"eval loss {loss.item():.4f}")  # expect: FL102 GB0124; FL110 GB0059
        return loss


class DistillationStep(nn.Module):
    def __init__(self):
        super().__init__()
        self.student = nn.Linear(8, 3)
        self.teacher = nn.Linear(8, 3).requires_grad_(False)

    def forward(self, x, y, alpha: float = 0.5, T: float = 2.0):
        with torch.no_grad():
            t_logits = self.teacher(x)
        s_logits = self.student(x)
        kd = F.kl_div(F.log_softmax(s_logits / T, -1), F.softmax(t_logits / T, -1), reduction="batchmean")
        return alpha * kd * T * T + (1 - alpha) * F.cross_entropy(s_logits, y)


def _batch():
    return torch.randn(6, 8), torch.randint(0, 3, (6,))


def _update_case():
    net = nn.Linear(8, 3)
    updater = torch.optim.SGD(net.parameters(), lr=0.1)
    torch.optim.lr_scheduler.StepLR(updater, step_size=1000)
    return apply_update, (net, torch.randn(6, 8), updater)


CASES = {
    "forward_loss": lambda: (forward_loss, _batch()),
    "train_step": lambda: (train_step, _batch()),
    "train_step_with_zero_grad": lambda: (train_step_with_zero_grad, _batch()),
    "train_step_with_schedule": lambda: (train_step_with_schedule, _batch()),
    "apply_update": lambda: _update_case(),
    "scaled_loss": lambda: (scaled_loss, _batch()),
    "eval_step": lambda: (eval_step, _batch()),
    "eval_step_with_accuracy": lambda: (eval_step_with_accuracy, _batch()),
    "timed_step": lambda: (timed_step, _batch()),
    "checkpoint_to_buffer": lambda: (checkpoint_to_buffer, (torch.randn(2, 8),)),
    "confusion_matrix": lambda: (confusion_matrix, (torch.randint(0, 3, (6,)), torch.randint(0, 3, (6,)))),
    "confusion_matrix_static": lambda: (confusion_matrix_static, (torch.randint(0, 3, (6,)), torch.randint(0, 3, (6,)))),
    "per_class_recall": lambda: (per_class_recall, (torch.randint(0, 3, (6,)), torch.randint(0, 3, (6,)))),
    "early_stopping_check": lambda: (early_stopping_check, (torch.tensor(0.5), torch.tensor(0.7), 3)),
    "label_counts": lambda: (label_counts, (torch.randint(0, 3, (6,)),)),
    "Trainer": lambda: (Trainer(), _batch()),
    "EvalWithPrint": lambda: (EvalWithPrint(), _batch()),
    "DistillationStep": lambda: (DistillationStep(), _batch()),
}
