"""Corpus: Python idioms around model code -- properties, class-level counters, dataclass
outputs, custom autograd functions, closures, per-element callbacks, legacy storage access.
Probed on Dynamo 2.13: property getters are inlined (a break inside is reported there), a
class attribute bumped by compiled code recompiles, `dataclasses.asdict` deep-copies tensors
(GB4198), `Tensor.apply_` takes a Python callable (GB0055), `Tensor.storage()` is a
non-tensor torch result (GB0208); vmap, torch.func.grad and autograd.Function trace."""
import dataclasses
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class HeadOutput:
    logits: torch.Tensor
    loss: torch.Tensor


class ScaleGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale: float):
        ctx.scale = scale
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale, None


class TemperatureHead(nn.Module):
    """Classifier head with a learnable temperature, exposed as a Python float for logging."""

    def __init__(self, dim: int = 4, classes: int = 3):
        super().__init__()
        self.proj = nn.Linear(dim, classes)
        self.log_t = nn.Parameter(torch.zeros(()))

    @property
    def temperature(self) -> float:
        return self.log_t.exp().item()  # expect: FL102 GB0124

    @property
    def weight_norm(self):
        return self.proj.weight.norm()

    def forward(self, x, y):
        logits = self.proj(x) / self.temperature
        loss = F.cross_entropy(logits, y) + 1e-4 * self.weight_norm
        return HeadOutput(logits, loss)


class CountingEncoder(nn.Module):
    """Counts its calls in a class attribute (shared by every instance)."""

    calls = 0

    def __init__(self, dim: int = 4):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        CountingEncoder.calls += 1  # expect: FL302
        return torch.tanh(self.fc(x))


@torch.compile
def head_as_dict(head: TemperatureHead, x, y):
    with torch.no_grad():
        out = head(x, y)
    return dataclasses.asdict(out)  # expect: FL120 GB4198


@torch.compile
def gradient_reversal_features(x, alpha: float = 0.5):
    return ScaleGrad.apply(x, -alpha).relu()


@torch.compile
def per_row_norms(x):
    return torch.vmap(lambda row: row.norm())(x)


@torch.compile
def input_gradient(x):
    return torch.func.grad(lambda t: (t.sin() ** 2).sum())(x)


@torch.compile
def quantize_with_callback(x, step: float = 0.25):
    y = x.detach().clone()
    y.apply_(lambda v: round(v / step) * step)  # expect: FL121 GB0055
    return y


@torch.compile
def storage_sharing(x):
    view = x[1:]
    shared = view.storage()  # expect: FL126 GB0208
    return view * 2, shared


@torch.compile
def smoothed(x, width: int = 3):
    def box(t):
        kernel = torch.ones(1, 1, width) / width
        return F.conv1d(t.unsqueeze(1), kernel, padding=width // 2).squeeze(1)

    return box(box(x))



class MaskedAugment(nn.Module):
    """kornia-style base class: forward draws the mask, subclasses override apply_mask."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        self.p = p

    def apply_mask(self, x, mask):
        return x

    def forward(self, x):
        return self.apply_mask(x, torch.rand(x.size(0)) < self.p)


class MaskedScale(MaskedAugment):
    """Inherits forward: compiling it runs this apply_mask, not the base's."""

    def apply_mask(self, x, mask):
        out = x.clone()
        out[mask] = x[mask] * 2  # expect: FL105 GB0036
        return out

CASES = {
    "TemperatureHead": lambda: (TemperatureHead(), (torch.randn(2, 4), torch.tensor([0, 2]))),
    "CountingEncoder": lambda: (CountingEncoder(), (torch.randn(2, 4),)),
    "head_as_dict": lambda: (head_as_dict, (TemperatureHead(), torch.randn(2, 4), torch.tensor([1, 0]))),
    "gradient_reversal_features": lambda: (gradient_reversal_features, (torch.randn(3, 4),)),
    "per_row_norms": lambda: (per_row_norms, (torch.randn(3, 4),)),
    "input_gradient": lambda: (input_gradient, (torch.randn(5),)),
    "quantize_with_callback": lambda: (quantize_with_callback, (torch.randn(6),)),
    "storage_sharing": lambda: (storage_sharing, (torch.randn(4),)),
    "smoothed": lambda: (smoothed, (torch.randn(2, 8),)),
    "MaskedAugment": lambda: (MaskedAugment(), (torch.randn(4, 3),)),
    "MaskedScale": lambda: (MaskedScale(), (torch.randn(4, 3),)),
}
