"""Code reached through containers of callables: transform pipelines, hook lists (functions,
closures made by factories, functools.partial), callbacks handed to a constructor, modules
injected into a block."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from functools import partial


class Transform:
    def __call__(self, x):
        raise NotImplementedError


class Scale(Transform):
    def __init__(self, factor):
        self.factor = factor

    def __call__(self, x):
        return x * self.factor


class Report(Transform):
    def __call__(self, x):
        print("mean", x.mean())  # expect: FL000 GB0059
        return x


class ClampPositive(Transform):
    def __call__(self, x):
        if x.min() < 0:  # expect: FL000 GB0170
            x = x.clamp(min=0)
        return x


class Standardize(Transform):
    def __init__(self, eps=1e-5):
        self.eps = eps

    def __call__(self, x):
        return (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + self.eps)


class Compose:
    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, x):
        for t in self.transforms:
            x = t(x)
        return x


NOISY = Compose([Scale(2.0), Report()])
QUIET = Compose([Standardize(), Scale(0.5)])


@torch.compile
def apply_noisy(x):
    return NOISY(x) + 1


@torch.compile
def apply_quiet(x):
    return QUIET(x) + 1


def double(x):
    return x * 2


def show(x):
    print(x.sum())  # expect: FL000 GB0059
    return x


def halve(x):
    return x / 2


HOOKS = [double, show]
PURE_HOOKS = (double, halve)


@torch.compile
def apply_hooks(x):
    for hook in HOOKS:
        x = hook(x)
    return x


@torch.compile
def apply_pure_hooks(x):
    for hook in PURE_HOOKS:
        x = hook(x)
    return x


class Head(nn.Module):
    def __init__(self, dim, callbacks=None):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.callbacks = callbacks or []

    def forward(self, x):
        x = self.proj(x)
        for callback in self.callbacks:
            x = callback(x)
        return x


class GuardedModel(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.head = Head(dim, callbacks=[ClampPositive()])

    def forward(self, x):
        return self.head(x)


class LocalMix(nn.Module):
    def forward(self, x):
        return F.avg_pool1d(x, 3, stride=1, padding=1)


class TopMix(nn.Module):
    def forward(self, x):
        keep = x > x.mean()
        return x * x[keep].mean()  # expect: FL000 GB0036


class Block(nn.Module):
    def __init__(self, mixer=None):
        super().__init__()
        self.mixer = mixer if mixer is not None else nn.Identity()

    def forward(self, x):
        return x + self.mixer(x)


class SmoothStack(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block(LocalMix()), Block()])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


class SparseStack(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block(TopMix())

    def forward(self, x):
        return self.block(x).sum()


def make_scaler(factor):
    def scale(x):
        return x * factor
    return scale


def make_tagged_logger(tag):
    def log(x):
        print(tag, x.sum())  # expect: FL000 GB0059
        return x
    return log


def shift_above(x, threshold):
    if x.mean() > threshold:  # expect: FL000 GB0170
        return x - threshold
    return x


FACTORY_HOOKS = [make_scaler(2.0), make_tagged_logger("stage")]
PURE_FACTORY_HOOKS = [make_scaler(0.5), make_scaler(3.0)]
PARTIAL_HOOKS = [partial(shift_above, threshold=0.5)]


@torch.compile
def apply_factory_hooks(x):
    for hook in FACTORY_HOOKS:
        x = hook(x)
    return x


@torch.compile
def apply_pure_factory_hooks(x):
    for hook in PURE_FACTORY_HOOKS:
        x = hook(x)
    return x


@torch.compile
def apply_partial_hooks(x):
    for hook in PARTIAL_HOOKS:
        x = hook(x)
    return x


@torch.compile
def apply_local_partial(x):
    clamp_low = partial(torch.clamp, min=-1.0)
    shift = partial(shift_above, threshold=2.0)
    return shift(clamp_low(x))


CASES = {
    "noisy": lambda: (apply_noisy, (torch.randn(3, 4),)),
    "quiet": lambda: (apply_quiet, (torch.randn(3, 4),)),
    "hooks": lambda: (apply_hooks, (torch.randn(3, 4),)),
    "pure_hooks": lambda: (apply_pure_hooks, (torch.randn(3, 4),)),
    "guarded": lambda: (GuardedModel(), (torch.randn(3, 4),)),
    "smooth": lambda: (SmoothStack(), (torch.randn(2, 3, 5),)),
    "sparse": lambda: (SparseStack(), (torch.randn(2, 3, 5),)),
    "factory_hooks": lambda: (apply_factory_hooks, (torch.randn(3, 4),)),
    "pure_factory_hooks": lambda: (apply_pure_factory_hooks, (torch.randn(3, 4),)),
    "partial_hooks": lambda: (apply_partial_hooks, (torch.randn(3, 4),)),
    "local_partial": lambda: (apply_local_partial, (torch.randn(3, 4),)),
}
