"""Functions generated from source text (an op matrix, and random programs over a small grammar).

Capture reads source, so generated code is registered in linecache under a unique file name."""
from __future__ import annotations

import itertools
import linecache

import torch
import torch.nn.functional as F

_COUNTER = itertools.count()


def make_function(src: str, name: str, extra=None):
    filename = f"<fuselens-generated-{next(_COUNTER)}>"
    lines = src.splitlines(keepends=True)
    linecache.cache[filename] = (len(src), None, lines, filename)
    namespace = {"torch": torch, "F": F, **(extra or {})}
    exec(compile(src, filename, "exec"), namespace)
    return namespace[name]


UNARY = [
    "torch.sin(x)", "torch.cos(x)", "torch.tan(x * 0.5)", "torch.exp(x)", "torch.expm1(x)",
    "torch.log1p(x.abs())", "torch.sqrt(x.abs())", "torch.rsqrt(x.abs() + 1)", "torch.sigmoid(x)",
    "torch.tanh(x)", "F.relu(x)", "F.gelu(x)", "F.gelu(x, approximate='tanh')", "F.silu(x)",
    "F.softplus(x)", "F.elu(x)", "F.leaky_relu(x, 0.1)", "F.hardswish(x)", "F.mish(x)", "x.abs()",
    "-x", "torch.floor(x)", "torch.ceil(x)", "torch.round(x)", "torch.trunc(x)", "torch.frac(x)",
    "torch.sign(x)", "torch.erf(x)", "torch.erfc(x)", "torch.reciprocal(x.abs() + 1)", "torch.square(x)",
    "F.logsigmoid(x)", "F.softsign(x)", "F.tanhshrink(x)", "F.hardtanh(x)", "F.relu6(x * 4)",
    "F.celu(x)", "F.selu(x)", "F.log_softmax(x, -1)", "F.softmax(x, -1)", "x.cumsum(-1)",
    "x.cumprod(-1)", "x.flip(0)", "x.roll(1, 0)", "torch.nan_to_num(x / 0)", "x.clamp(-0.5, 0.5)",
    "torch.lerp(x, x.flip(0), 0.3)", "x.pow(2)", "x.abs().pow(0.5)", "2 ** x", "x // 0.3", "x % 0.7",
    "torch.atan(x)", "torch.asinh(x)", "torch.sinh(x)", "torch.cosh(x)", "torch.log2(x.abs() + 1)",
    "torch.exp2(x)", "F.normalize(x, dim=-1)", "F.hardsigmoid(x)", "torch.special.expit(x)",
    "torch.special.erfinv(x.clamp(-0.9, 0.9))", "torch.xlogy(x.abs(), x.abs() + 1)",
]
BINARY = [
    "x + y", "x - y", "x * y", "x / (y.abs() + 1)", "torch.maximum(x, y)", "torch.minimum(x, y)",
    "torch.fmod(x, y.abs() + 1)", "torch.remainder(x, y.abs() + 1)", "torch.atan2(x, y)",
    "torch.hypot(x, y)", "(x == y).float()", "(x < y).float()", "(x >= y).to(torch.int64)",
    "torch.logical_and(x > 0, y > 0)", "torch.where(x > y, x, y)", "x.abs() ** y.clamp(-1, 1)",
    "torch.addcmul(x, x, y, value=0.5)", "torch.addcdiv(x, x, y.abs() + 1, value=0.5)",
    "F.mse_loss(x, y)", "torch.dist(x, y)", "torch.cosine_similarity(x, y, dim=-1)",
    "torch.copysign(x, y)", "torch.logaddexp(x, y)", "x @ y.t()", "torch.cdist(x, y)",
    "torch.bmm(x[None], y.t()[None])", "torch.outer(x[0], y[0])", "torch.kron(x[:2, :2], y[:2, :2])",
]
REDUCE = [
    "x.sum()", "x.mean(0)", "x.prod(-1)", "x.amax(-1)", "x.amin(0)", "x.var(-1)", "x.std(0)",
    "x.norm()", "torch.logsumexp(x, -1)", "x.argmax(-1)", "x.argmin()", "(x > 0).all(-1)",
    "(x > 0).any()", "x.median(-1).values", "torch.count_nonzero(x > 0)", "x.max()", "x.min(-1)[0]",
    "torch.var_mean(x, -1)[0]", "x.sort(-1)[0]", "x.topk(2, -1).values", "x.kthvalue(2, -1).values",
    "torch.trace(x[:, :4])", "x.nansum()", "x.aminmax()[1]",
]
SHAPE = [
    "x.view(-1)", "x.reshape(2, -1)", "x.permute(1, 0)", "x.transpose(0, 1).contiguous()",
    "x.unsqueeze(1).squeeze(1)", "x[None].expand(3, -1, -1)", "x.repeat(2, 1)", "x.tile((1, 2))",
    "x.narrow(1, 1, 3)", "x.unfold(1, 2, 2)", "torch.cat(x.chunk(2, 1), 0)", "torch.stack(x.split(2, 1))",
    "x.gather(1, torch.zeros(4, 2, dtype=torch.long))", "x.index_select(1, torch.tensor([0, 2]))",
    "x.masked_fill(x > 0, 0.0)", "x.tril()", "x.triu(1)", "x.diagonal()", "x.flatten()",
    "x.movedim(0, 1)", "x.T", "x.mT", "x[::2, 1:]", "x[..., None]", "x[[0, 2]]",
    "torch.nn.functional.pad(x, (1, 1))", "x.scatter(1, torch.zeros(4, 1, dtype=torch.long), 1.0)",
    "x.new_zeros(3) + x.sum()", "torch.zeros_like(x).index_add(0, torch.tensor([1, 1]), x[:2])",
    "x.unflatten(1, (2, -1))", "torch.einsum('ij->ji', x)", "x.clone().fill_diagonal_(0.0)",
]


def op_matrix():
    """(name, function, calls) for every entry of the op lists, each inside a small program."""
    x, y = torch.randn(4, 6, generator=torch.Generator().manual_seed(7)), \
        torch.randn(4, 6, generator=torch.Generator().manual_seed(8))
    out = []
    for kind, ops in (("unary", UNARY), ("binary", BINARY), ("reduce", REDUCE), ("shape", SHAPE)):
        for i, op in enumerate(ops):
            name = f"{kind}_{i}"
            src = (f"def {name}(x, y):\n"
                   f"    x = x * 1.5 - y\n"
                   f"    r = {op}\n"
                   f"    return r, x.sum()\n")
            calls = [((x, y), {}), ((x.double(), y.double()), {})] if kind != "shape" else [((x, y), {})]
            out.append((name, make_function(src, name), calls, op))
    return out
