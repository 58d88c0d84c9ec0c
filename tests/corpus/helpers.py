"""Breaks reached through calls: helpers, methods, nested functions, lambdas, disabled code."""
import torch
import torch.nn.functional as F
from torch import nn


@torch.compile
def preprocess_then_score(x, w):
    x = normalize_batch(x)  # helper defined further down
    return score(x, w)


def normalize_batch(x):
    mean, std = x.mean(0), x.std(0)
    if (std == 0).any():  # expect: FL101 GB0170
        std = std.clamp(min=1e-6)
    return (x - mean) / std


def score(x, w):
    return (x @ w).sigmoid()


def to_host_list(t):
    return t.detach().cpu().tolist()  # expect: FL103 GB0109


def summarize(x):
    return {"mean": x.mean(), "max": x.max()}


@torch.compile
def collect_scores(x, w):
    scores = score(x, w)
    return scores, to_host_list(scores)


@torch.compile
def tensor_summary(x):
    return summarize(x)


@torch.compiler.disable
def log_histogram(values):
    return torch.histc(values, bins=10)


@torch.compile
def forward_with_histogram(x, w):
    y = score(x, w)
    hist = log_histogram(y)  # expect: FL130 GB0098
    return y, hist


@torch._dynamo.disable
def custom_cuda_op(x):
    return x.exp()


def wrapped_op(x):
    return custom_cuda_op(x) + 1  # expect: FL130 GB0098


@torch.compile
def through_wrapper(x):
    return wrapped_op(x) * 2


@torch.compile
def nested_closure(x, scale):
    def apply(t):
        return t * scale if scale.sum() > 0 else t  # expect: FL101 GB0170
    return apply(x) + 1


@torch.compile
def nested_clean(x, bias):
    def shift(t, k=2.0):
        return t + k * bias
    return shift(shift(x))


@torch.compile
def lambda_map(xs):
    act = lambda t: F.gelu(t) * 0.5  # noqa: E731
    return [act(t) for t in xs]


@torch.compile
def lambda_with_item(xs):
    weights = sorted(xs, key=lambda t: t.sum().item())  # expect: FL102 GB0124
    return torch.stack(weights)


@torch.compile
def walrus_threshold(x):
    if (n := x.shape[0]) > 2:  # expect: FL301
        x = x[: n // 2]
    return x.relu()


@torch.compile
def walrus_item(x):
    if (peak := x.max().item()) > 0:  # expect: FL102 GB0124
        x = x / peak
    return x


@torch.compile
def explicit_break(x):
    y = x.cumsum(0)
    torch._dynamo.graph_break()  # expect: FL131 GB0025
    return y.flip(0)


@torch.compile
def early_return(x, mask=None):
    if mask is None:
        return x.softmax(-1)
    return x.masked_fill(~mask, float("-inf")).softmax(-1)


class Scorer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, 1)

    def forward(self, x):
        return self.proj(x).squeeze(-1)

    def threshold(self, scores):
        return scores[scores > 0]  # expect: FL105 GB0036


class Ranker(nn.Module):
    """The break is in a method of a submodule, reached via self.scorer."""

    def __init__(self, dim):
        super().__init__()
        self.scorer = Scorer(dim)

    def forward(self, x):
        scores = self.scorer(x)
        return self.scorer.threshold(scores)


class Pipeline(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.enc = nn.Linear(dim, dim)

    def _check(self, h):
        if h.isnan().any():  # expect: FL101 GB0170
            raise RuntimeError("NaN")
        return h

    def _post(self, h):
        return h.tanh()

    def forward(self, x):
        h = self._check(self.enc(x))
        return self._post(h)


class StaticHelpers(nn.Module):
    @staticmethod
    def gate(x):
        return x * x.sigmoid()

    @classmethod
    def mix(cls, a, b):
        return cls.gate(a) + b

    def forward(self, a, b):
        return self.mix(a, b)


class TrainEvalBranch(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        y = self.fc(x)
        if self.training:
            y = self.drop(y)
        else:
            y = y * 0.9
        return y


def clipped(x, limit):
    return x.clamp(-limit, limit)


def apply_twice(fn, x, *args):
    return fn(fn(x, *args), *args)


@torch.compile
def higher_order(x):
    return apply_twice(clipped, x, 1.5)


@torch.compile
def dict_dispatch(x, kind: str):
    ops = {"relu": F.relu, "gelu": F.gelu, "silu": F.silu}
    return ops[kind](x)


@torch.compile
def star_args(*xs, scale=1.0):
    return sum(t * scale for t in xs)


@torch.compile
def kwargs_helper(x, **options):
    eps = options.get("eps", 1e-5)
    return x / (x.norm() + eps)


CASES = {
    "preprocess_then_score": lambda: (preprocess_then_score, (torch.randn(6, 4), torch.randn(4, 2))),
    "collect_scores": lambda: (collect_scores, (torch.randn(3, 4), torch.randn(4, 2))),
    "tensor_summary": lambda: (tensor_summary, (torch.randn(3, 4),)),
    "forward_with_histogram": lambda: (forward_with_histogram, (torch.randn(3, 4), torch.randn(4, 2))),
    "through_wrapper": lambda: (through_wrapper, (torch.randn(3, 4),)),
    "nested_closure": lambda: (nested_closure, (torch.randn(3, 4), torch.rand(4))),
    "nested_clean": lambda: (nested_clean, (torch.randn(3, 4), torch.rand(4))),
    "lambda_map": lambda: (lambda_map, ([torch.randn(3), torch.randn(3)],)),
    "lambda_with_item": lambda: (lambda_with_item, ([torch.randn(3), torch.randn(3)],)),
    "walrus_threshold": lambda: (walrus_threshold, (torch.randn(6, 4),), (torch.randn(2, 4),)),
    "walrus_item": lambda: (walrus_item, (torch.rand(6, 4),)),
    "explicit_break": lambda: (explicit_break, (torch.randn(5),)),
    "early_return": lambda: (early_return, (torch.randn(3, 4),)),
    "early_return_mask": lambda: (early_return, (torch.randn(3, 4), torch.rand(3, 4) > 0.2)),
    "Ranker": lambda: (Ranker(4), (torch.randn(6, 4),)),
    "Pipeline": lambda: (Pipeline(4), (torch.randn(6, 4),)),
    "StaticHelpers": lambda: (StaticHelpers(), (torch.randn(3), torch.randn(3))),
    "TrainEvalBranch": lambda: (TrainEvalBranch(4), (torch.randn(2, 4),)),
    "TrainEvalBranch_eval": lambda: (TrainEvalBranch(4).eval(), (torch.randn(2, 4),)),
    "higher_order": lambda: (higher_order, (torch.randn(5) * 3,)),
    "dict_dispatch": lambda: (dict_dispatch, (torch.randn(5), "gelu")),
    "star_args": lambda: (star_args, (torch.randn(3), torch.randn(3), torch.randn(3))),
    "kwargs_helper": lambda: (kwargs_helper, (torch.randn(3),)),
}
