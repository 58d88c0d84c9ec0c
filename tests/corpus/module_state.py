"""State inside forward: EMA copies, step counters, caches, autograd calls, parameter creation."""
import copy

import torch
from torch import nn

STEP = 0
CALLS = {"forward": 0}


class EMAWrapper(nn.Module):
    """Keeps an exponential moving average of a model -- and copies it inside forward."""

    def __init__(self, model: nn.Module, decay: float = 0.99):
        super().__init__()
        self.model = model
        self.decay = decay

    def forward(self, x):
        shadow = copy.deepcopy(self.model)  # expect: FL120 GB4198
        with torch.no_grad():
            for p_ema, p in zip(shadow.parameters(), self.model.parameters()):
                p_ema.mul_(self.decay).add_(p, alpha=1 - self.decay)
        return shadow(x)


class InPlaceEMA(nn.Module):
    """The compile-friendly way: the average lives in buffers updated in place."""

    def __init__(self, dim, decay=0.99):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.decay = decay
        self.register_buffer("ema_weight", self.fc.weight.detach().clone())

    def forward(self, x):
        with torch.no_grad():
            self.ema_weight.lerp_(self.fc.weight, 1 - self.decay)
        return self.fc(x)


class SnapshotInput(nn.Module):
    def forward(self, x):
        before = copy.deepcopy(x)  # expect: FL120 GB4198
        x = x.relu_()
        return x - before


class StepCounter(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.step = 0

    def forward(self, x):
        self.step += 1  # expect: FL302
        return self.fc(x)


class BufferStepCounter(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.register_buffer("step", torch.zeros((), dtype=torch.long))

    def forward(self, x):
        self.step += 1
        return self.fc(x)


class WarmupScale(nn.Module):
    """Scales the output during the first steps; the Python counter is read and written."""

    def __init__(self, warmup=3):
        super().__init__()
        self.warmup, self.calls = warmup, 0

    def forward(self, x):
        scale = min(1.0, (self.calls + 1) / self.warmup)
        self.calls = self.calls + 1  # expect: FL302
        return x * scale


@torch.compile
def global_step(x):
    global STEP
    STEP += 1  # expect: FL302
    return x * 0.5


@torch.compile
def count_calls(x):
    CALLS["forward"] += 1  # expect: FL302
    return x + 1


class ShapeCache(nn.Module):
    """Memoises a mask per sequence length in a Python dict."""

    def __init__(self):
        super().__init__()
        self.masks = {}

    def forward(self, x):
        t = x.shape[-1]
        if t not in self.masks:
            self.masks[t] = torch.ones(t, t).tril().bool()  # expect: FL302
        return x.masked_fill(~self.masks[t], 0.0)


class RequiresGradLeak(nn.Module):
    def forward(self, x):
        y = x * 2
        y.requires_grad_()  # expect: FL140 GB8985
        return y


class InputGradient(nn.Module):
    """Saliency maps: gradient of the output w.r.t. the input, inside forward."""

    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, 1)

    def forward(self, x):
        x = x.detach().requires_grad_(True)  # expect: FL140 GB8985
        out = self.fc(x).sum()
        (grad,) = torch.autograd.grad(out, x)  # expect: FL142 GB9186
        return grad


class LazyParameter(nn.Module):
    """Creates its weight on first use (shape inferred from the input)."""

    def __init__(self, out_features):
        super().__init__()
        self.out_features = out_features
        self.weight = None

    def forward(self, x):
        if self.weight is None:
            self.weight = nn.Parameter(torch.randn(self.out_features, x.shape[-1]))  # expect: FL141 GB0264; FL302
        return x @ self.weight.t()


class ModeSwitch(nn.Module):
    """Stores a Python attribute before reading it: Dynamo reads back its own store, no guard."""

    def __init__(self):
        super().__init__()
        self.mode = "train"

    def forward(self, x):
        self.mode = "eval"
        return x * 2 if self.mode == "eval" else x


class FirstCallScale(nn.Module):
    """Remembers the first input's scale; a helper reads it (Dynamo guards on it being None)."""

    def __init__(self):
        super().__init__()
        self.scale = None

    def has_scale(self):
        return self.scale is not None

    def forward(self, x):
        if not self.has_scale():
            self.scale = float(x.shape[-1]) ** -0.5  # expect: FL302
        return x * self.scale


class GradientPenalty(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.critic = nn.Sequential(nn.Linear(dim, dim), nn.Tanh(), nn.Linear(dim, 1))

    def forward(self, real, fake):
        alpha = torch.rand(real.shape[0], 1)
        mixed = (alpha * real + (1 - alpha) * fake).requires_grad_(True)  # expect: FL140 GB8985
        score = self.critic(mixed)
        grads = torch.autograd.grad(score.sum(), mixed, create_graph=True)[0]  # expect: FL142 GB9186
        return ((grads.norm(2, dim=1) - 1) ** 2).mean()


class FrozenBackbone(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.backbone = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, 2)
        for p in self.backbone.parameters():
            p.requires_grad_(False)

    def forward(self, x):
        with torch.no_grad():
            feats = self.backbone(x)
        return self.head(feats)


class MomentumEncoder(nn.Module):
    """MoCo-style key encoder update with torch._foreach ops (traceable)."""

    def __init__(self, dim, m=0.999):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.k.load_state_dict(self.q.state_dict())
        self.m = m

    def forward(self, x):
        with torch.no_grad():
            k_params, q_params = list(self.k.parameters()), list(self.q.parameters())
            torch._foreach_mul_(k_params, self.m)
            torch._foreach_add_(k_params, q_params, alpha=1 - self.m)
        return self.q(x), self.k(x).detach()


class QueueBank(nn.Module):
    def __init__(self, dim, size=8):
        super().__init__()
        self.register_buffer("queue", torch.zeros(size, dim))
        self.register_buffer("ptr", torch.zeros((), dtype=torch.long))

    def forward(self, keys):
        n = keys.shape[0]
        idx = (self.ptr + torch.arange(n)) % self.queue.shape[0]
        self.queue.index_copy_(0, idx, keys)
        self.ptr.add_(n).remainder_(self.queue.shape[0])
        return self.queue.clone()


class PythonQueueBank(QueueBank):
    """The same queue with a Python-int pointer read back from the buffer."""

    def forward(self, keys):
        n = keys.shape[0]
        start = int(self.ptr)  # expect: FL102 GB0124
        self.queue[start:start + n] = keys
        self.ptr.fill_((start + n) % self.queue.shape[0])
        return self.queue.clone()


CASES = {
    "EMAWrapper": lambda: (EMAWrapper(nn.Linear(4, 4)), (torch.randn(2, 4),)),
    "InPlaceEMA": lambda: (InPlaceEMA(4), (torch.randn(2, 4),)),
    "SnapshotInput": lambda: (SnapshotInput(), (torch.randn(2, 4),)),
    "StepCounter": lambda: (StepCounter(4), (torch.randn(2, 4),)),
    "BufferStepCounter": lambda: (BufferStepCounter(4), (torch.randn(2, 4),)),
    "WarmupScale": lambda: (WarmupScale(), (torch.randn(2, 4),)),
    "global_step": lambda: (global_step, (torch.randn(2, 4),)),
    "count_calls": lambda: (count_calls, (torch.randn(2, 4),)),
    "ShapeCache": lambda: (ShapeCache(), (torch.randn(2, 5, 5),)),
    "RequiresGradLeak": lambda: (RequiresGradLeak(), (torch.randn(3),)),
    "InputGradient": lambda: (InputGradient(4), (torch.randn(2, 4),)),
    "LazyParameter": lambda: (LazyParameter(3), (torch.randn(2, 4),)),
    "ModeSwitch": lambda: (ModeSwitch(), (torch.randn(2, 4),)),
    "FirstCallScale": lambda: (FirstCallScale(), (torch.randn(2, 4),)),
    "GradientPenalty": lambda: (GradientPenalty(4), (torch.randn(3, 4), torch.randn(3, 4))),
    "FrozenBackbone": lambda: (FrozenBackbone(4), (torch.randn(2, 4),)),
    "MomentumEncoder": lambda: (MomentumEncoder(4), (torch.randn(2, 4),)),
    "QueueBank": lambda: (QueueBank(4), (torch.randn(3, 4),)),
    "PythonQueueBank": lambda: (PythonQueueBank(4), (torch.randn(3, 4),)),
}
