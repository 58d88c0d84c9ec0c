"""Optimizer-step-like code compiled on its own: SGD/Adam updates, clipping, schedules."""
import math

import torch
from torch import nn


@torch.compile
def sgd_momentum_step(params, grads, bufs, lr: float = 0.1, momentum: float = 0.9):
    for p, g, buf in zip(params, grads, bufs):
        buf.mul_(momentum).add_(g)
        p.add_(buf, alpha=-lr)


@torch.compile
def adam_step(p, g, m, v, step: int, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    b1, b2 = betas
    m.lerp_(g, 1 - b1)
    v.mul_(b2).addcmul_(g, g, value=1 - b2)
    bias1 = 1 - b1 ** step
    bias2 = 1 - b2 ** step
    denom = (v.sqrt() / math.sqrt(bias2)).add_(eps)
    p.addcdiv_(m, denom, value=-lr / bias1)


@torch.compile
def adam_step_tensor_count(p, g, m, v, step, lr=1e-3, b1=0.9, b2=0.999):
    """`step` is a tensor here (as in torch.optim with capturable=True)."""
    m.lerp_(g, 1 - b1)
    v.mul_(b2).addcmul_(g, g, value=1 - b2)
    bias2_sqrt = (1 - b2 ** step).sqrt()
    p.addcdiv_(m, v.sqrt() / bias2_sqrt + 1e-8, value=-lr)
    step.add_(1)


@torch.compile
def adam_step_host_count(p, g, m, v, step, lr=1e-3, b1=0.9, b2=0.999):
    """The non-capturable variant reads the step count back to Python every call."""
    t = step.item()  # expect: FL102 GB0124
    m.lerp_(g, 1 - b1)
    v.mul_(b2).addcmul_(g, g, value=1 - b2)
    p.addcdiv_(m, v.sqrt() / math.sqrt(1 - b2 ** t) + 1e-8, value=-lr / (1 - b1 ** t))
    step.add_(1)


@torch.compile
def clip_grad_norm(grads, max_norm: float = 1.0):
    total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef)
    return total


@torch.compile
def clip_grad_norm_if_needed(grads, max_norm: float = 1.0):
    total = torch.stack([g.norm() for g in grads]).norm()
    if total > max_norm:  # expect: FL101 GB0170
        for g in grads:
            g.mul_(max_norm / total)
    return total


@torch.compile
def skip_nonfinite_step(params, grads, lr: float = 0.1):
    finite = all(torch.isfinite(g).all() for g in grads)  # expect: FL101 GB0170; FL101 GB8335
    if finite:
        for p, g in zip(params, grads):
            p.sub_(lr * g)
    return finite


@torch.compile
def cosine_lr(step: int, total: int, base_lr: float = 1e-3, warmup: int = 10):
    if step < warmup:
        return base_lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return base_lr * 0.5 * (1 + math.cos(math.pi * progress))


@torch.compile
def lr_from_loss(loss, lr: float):
    return lr * 0.5 if loss.item() > 1.0 else lr  # expect: FL102 GB0124


@torch.compile
def weight_decay_(params, lr: float, wd: float = 0.01):
    torch._foreach_mul_(params, 1 - lr * wd)


@torch.compile
def lion_update(p, g, m, lr: float = 1e-4, b1: float = 0.9, b2: float = 0.99):
    update = (m * b1 + g * (1 - b1)).sign_()
    p.add_(update, alpha=-lr)
    m.lerp_(g, 1 - b2)


class LossScaler(nn.Module):
    """Dynamic loss scaling with an overflow check every step."""

    def __init__(self, init_scale=2.0 ** 16):
        super().__init__()
        self.register_buffer("scale", torch.tensor(init_scale))

    def forward(self, grads):
        found_inf = torch.stack([(~torch.isfinite(g)).any() for g in grads]).any()
        if found_inf:  # expect: FL101 GB0170
            self.scale.mul_(0.5)
            return None
        return [g / self.scale for g in grads]


class BranchFreeLossScaler(LossScaler):
    def forward(self, grads):
        found_inf = torch.stack([(~torch.isfinite(g)).any() for g in grads]).any()
        self.scale.copy_(torch.where(found_inf, self.scale * 0.5, self.scale))
        factor = torch.where(found_inf, torch.zeros(()), 1.0 / self.scale)
        return [g * factor for g in grads]


class GradAccumulator(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, 1)
        self.micro_steps = 0

    def forward(self, x, y):
        loss = nn.functional.mse_loss(self.fc(x).squeeze(-1), y)
        self.micro_steps += 1  # expect: FL302
        return loss / 4


def _tensors(n=3, shape=(4,)):
    return [torch.randn(*shape) for _ in range(n)]


CASES = {
    "sgd_momentum_step": lambda: (sgd_momentum_step, (_tensors(), _tensors(), _tensors())),
    "adam_step": lambda: (adam_step, (*_tensors(2), torch.zeros(4), torch.zeros(4), 3)),
    "adam_step_tensor_count": lambda: (
        adam_step_tensor_count, (*_tensors(2), torch.zeros(4), torch.zeros(4), torch.tensor(1.0))),
    "adam_step_host_count": lambda: (
        adam_step_host_count, (*_tensors(2), torch.zeros(4), torch.zeros(4), torch.tensor(1.0))),
    "clip_grad_norm": lambda: (clip_grad_norm, (_tensors(),)),
    "clip_grad_norm_if_needed": lambda: (clip_grad_norm_if_needed, (_tensors(),)),
    "skip_nonfinite_step": lambda: (skip_nonfinite_step, (_tensors(), _tensors())),
    "cosine_lr": lambda: (cosine_lr, (20, 100)),
    "lr_from_loss": lambda: (lr_from_loss, (torch.tensor(1.5), 0.1)),
    "weight_decay_": lambda: (weight_decay_, (_tensors(), 0.1)),
    "lion_update": lambda: (lion_update, tuple(_tensors(3))),
    "LossScaler": lambda: (LossScaler(), (_tensors(),)),
    "BranchFreeLossScaler": lambda: (BranchFreeLossScaler(), (_tensors(),)),
    "GradAccumulator": lambda: (GradAccumulator(4), (torch.randn(3, 4), torch.randn(3))),
}
