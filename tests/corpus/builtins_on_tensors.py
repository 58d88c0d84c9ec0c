"""Python builtins applied to tensors inside small model utilities."""
import inspect
import math

import torch
from torch import nn


@torch.compile
def gate_with_bool(x, flag):
    return x * 2 if bool(flag) else x  # expect: FL102 GB0124


@torch.compile
def truthiness(x, mask):
    if mask.any():  # expect: FL101 GB0170
        x = x.masked_fill(mask, 0.0)
    return x


@torch.compile
def repr_for_cache_key(x, cache: dict):
    key = repr(x.shape) + repr(x.sum())  # expect: FL114 GB0569
    return cache.get(key, x)


@torch.compile
def percent_format(x):
    return x.relu(), "mean=%s" % x.mean()  # expect: FL114 GB0208


@torch.compile
def larger_of(a, b):
    return max(a.sum(), b.sum()) * a


@torch.compile
def larger_tensor(a, b):
    return torch.maximum(a, b), abs(a - b)


@torch.compile
def rebuild_scalar_tensor(x):
    return torch.tensor([x.sum(), x.mean()]) + 1


@torch.compile
def signature_driven(x, fn=torch.tanh):
    nargs = len(inspect.signature(signature_driven).parameters)
    return fn(x) * nargs


@torch.compile
def pointer_check(x, y):
    same = x.data_ptr() == y.data_ptr()  # expect: FL000 GB5976
    return x + y, same


@torch.compile
def floor_of_tensor(x):
    return x * math.floor(x.max())  # expect: FL104 GB0033


@torch.compile
def round_scale(x):
    return x / round(x.abs().mean().item(), 2)  # expect: FL102 GB0124


@torch.compile
def min_of_list(lengths):
    return min(lengths.tolist())  # expect: FL104 GB0033


@torch.compile
def sum_of_tensors(xs):
    return sum(xs) / len(xs)


@torch.compile
def sorted_by_norm(xs):
    return sorted(x.norm() for x in xs)  # expect: FL143 GB0207; FL143 GB8335


@torch.compile
def any_over_list(xs):
    return any(x.isnan().any() for x in xs)  # expect: FL101 GB0170; FL101 GB8335


@torch.compile
def enumerate_rows(x):
    return torch.stack([row * i for i, row in enumerate(x)])


@torch.compile
def length_scaled(x):
    return x / len(x)


@torch.compile
def int_of_shape(x):
    return x.view(int(x.shape[0]), -1)


@torch.compile
def int_of_tensor(x, k):
    return x.topk(int(k)).values  # expect: FL102 GB0124


@torch.compile
def index_with_python_int(x, idx):
    i = idx.item()  # expect: FL102 GB0124
    return x[i]


@torch.compile
def index_with_tensor(x, idx):
    return x[idx], x.index_select(0, idx)


@torch.compile
def hash_of_tensor(x):
    return hash(x), x + 1  # expect: FL000 GB4501


@torch.compile
def is_nonzero(x):
    return torch.is_nonzero(x.sum()), x  # expect: FL104 GB0033


@torch.compile
def as_python_float(x):
    return x * float(x.std())  # expect: FL102 GB0124


@torch.compile
def complex_to_polar(z):
    return z.abs(), z.angle()


@torch.compile
def negated_flag(x):
    empty = not x.any()  # expect: FL101 GB0033
    return x + empty


@torch.compile
def assert_with_message(x):
    assert torch.isfinite(x).all(), f"non-finite values in {tuple(x.shape)}"  # expect: FL101 GB0170
    return x.log1p()


class ShapeAssert(nn.Module):
    def forward(self, x):
        assert x.ndim == 2, "expected a matrix"
        assert not torch.isnan(x).any(), "NaN input"  # expect: FL101 GB0170
        return x.t()


class ZeroDimIndex(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(torch.randn(5, 3))

    def forward(self, idx):
        return self.table[idx.argmax()]  # expect: FL104 GB0033


CASES = {
    "gate_with_bool": lambda: (gate_with_bool, (torch.randn(3), torch.tensor(True))),
    "truthiness": lambda: (truthiness, (torch.randn(3), torch.tensor([True, False, True]))),
    "repr_for_cache_key": lambda: (repr_for_cache_key, (torch.randn(3), {})),
    "percent_format": lambda: (percent_format, (torch.randn(3),)),
    "larger_of": lambda: (larger_of, (torch.randn(3), torch.randn(3))),
    "larger_tensor": lambda: (larger_tensor, (torch.randn(3), torch.randn(3))),
    "rebuild_scalar_tensor": lambda: (rebuild_scalar_tensor, (torch.randn(3),)),
    "signature_driven": lambda: (signature_driven, (torch.randn(3),)),
    "pointer_check": lambda: (pointer_check, (torch.randn(3), torch.randn(3))),
    "floor_of_tensor": lambda: (floor_of_tensor, (torch.randn(3) * 4,)),
    "round_scale": lambda: (round_scale, (torch.randn(3) + 5,)),
    "min_of_list": lambda: (min_of_list, (torch.tensor([4, 2, 7]),)),
    "sum_of_tensors": lambda: (sum_of_tensors, ([torch.randn(3), torch.randn(3)],)),
    "sorted_by_norm": lambda: (sorted_by_norm, ([torch.randn(3), torch.randn(3)],)),
    "any_over_list": lambda: (any_over_list, ([torch.randn(3), torch.randn(3)],)),
    "enumerate_rows": lambda: (enumerate_rows, (torch.randn(3, 2),)),
    "length_scaled": lambda: (length_scaled, (torch.randn(3, 2),)),
    "int_of_shape": lambda: (int_of_shape, (torch.randn(3, 2),)),
    "int_of_tensor": lambda: (int_of_tensor, (torch.randn(6), torch.tensor(2))),
    "index_with_python_int": lambda: (index_with_python_int, (torch.randn(6), torch.tensor(2))),
    "index_with_tensor": lambda: (index_with_tensor, (torch.randn(6), torch.tensor([2, 0]))),
    "hash_of_tensor": lambda: (hash_of_tensor, (torch.randn(3),)),
    "is_nonzero": lambda: (is_nonzero, (torch.randn(3),)),
    "as_python_float": lambda: (as_python_float, (torch.randn(3),)),
    "complex_to_polar": lambda: (complex_to_polar, (torch.randn(3, dtype=torch.complex64),)),
    "negated_flag": lambda: (negated_flag, (torch.rand(3),)),
    "assert_with_message": lambda: (assert_with_message, (torch.rand(3),)),
    "ShapeAssert": lambda: (ShapeAssert(), (torch.randn(3, 2),)),
    "ZeroDimIndex": lambda: (ZeroDimIndex(), (torch.randn(4),)),
}
