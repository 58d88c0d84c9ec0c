"""The op table: how each supported aten op lowers to expressions, views or reductions.

Rules raise `Unsupported` for cases they do not cover; the caller then keeps the op as a torch call.
"""
from __future__ import annotations

import math

import torch

from .ir import INDEX, Expr, binary, cast, const, prod, unary, where
from .lowering import (TV, Lowering, Unsupported, broadcast, contiguous_index, ivars, origins_of,
                       pointwise, reduction, register, result_type, unravel)

aten = torch.ops.aten

# ---- elementwise -------------------------------------------------------------------------------

_UNARY = ["exp", "exp2", "log", "log2", "log1p", "expm1", "sqrt", "rsqrt", "tanh", "sigmoid", "erf",
          "abs", "sin", "cos", "tan", "atan", "floor", "ceil", "trunc", "reciprocal", "neg", "sign"]


def _unary_rule(op):
    def rule(lo, n, x):
        if op in ("floor", "ceil", "trunc") and not x.dtype.is_floating_point:
            return x
        return pointwise(lo, n, lambda a: unary(op, a), x)
    return rule


for _name in _UNARY:
    register(getattr(aten, _name))(_unary_rule(_name))


@register(aten.round)
def _round(lo, n, x, decimals=0):
    if decimals:
        raise Unsupported("round with decimals")
    return _unary_rule("round")(lo, n, x)


def _binary_rule(op):
    def rule(lo, n, a, b, *, alpha=1):
        if alpha != 1:
            return pointwise(lo, n, lambda x, y: binary(op, x, binary("mul", y, const(alpha, y.dtype))), a, b)
        return pointwise(lo, n, lambda x, y: binary(op, x, y), a, b)
    return rule


register(aten.add)(_binary_rule("add"))
register(aten.sub)(_binary_rule("sub"))
register(aten.mul)(_binary_rule("mul"))
register(aten.maximum)(_binary_rule("max"))
register(aten.minimum)(_binary_rule("min"))
register(aten.atan2)(_binary_rule("atan2"))
register(aten.fmod)(_binary_rule("fmod"))


@register(aten.rsub)
def _rsub(lo, n, a, b, *, alpha=1):
    return pointwise(lo, n, lambda x, y: y - x * const(alpha, x.dtype), a, b)


@register(aten.div)
def _div(lo, n, a, b, *, rounding_mode=None):
    _, dtype = lo.meta(n)
    if rounding_mode is None:
        return pointwise(lo, n, lambda x, y: x / y, a, b)
    if not dtype.is_floating_point:
        if rounding_mode == "floor":
            return pointwise(lo, n, lambda x, y: x // y, a, b)
        raise Unsupported("integer trunc division")
    op = "floor" if rounding_mode == "floor" else "trunc"
    return pointwise(lo, n, lambda x, y: unary(op, x / y), a, b)


@register(aten.remainder)
def _remainder(lo, n, a, b):
    _, dtype = lo.meta(n)
    if dtype.is_floating_point:
        return pointwise(lo, n, lambda x, y: x - unary("floor", x / y) * y, a, b)
    return pointwise(lo, n, lambda x, y: x % y, a, b)


@register(aten.pow)
def _pow(lo, n, a, b):
    return pointwise(lo, n, lambda x, y: binary("pow", x, y), a, b)


def _compare_rule(op):
    def rule(lo, n, a, b):
        return pointwise(lo, n, lambda x, y: binary(op, x, y), a, b, compute=result_type(a, b))
    return rule


for _name in ["lt", "le", "gt", "ge", "eq", "ne"]:
    register(getattr(aten, _name))(_compare_rule(_name))


def _logical_rule(op):
    def rule(lo, n, a, b):
        return pointwise(lo, n, lambda x, y: binary(op, x, y), a, b, compute=torch.bool)
    return rule


register(aten.logical_and)(_logical_rule("and"))
register(aten.logical_or)(_logical_rule("or"))
register(aten.logical_xor)(_logical_rule("xor"))


def _bitwise_rule(op):
    def rule(lo, n, a, b):
        if lo.meta(n)[1] != torch.bool:
            raise Unsupported("integer bitwise op")
        return _logical_rule(op)(lo, n, a, b)
    return rule


register(aten.bitwise_and)(_bitwise_rule("and"))
register(aten.bitwise_or)(_bitwise_rule("or"))
register(aten.bitwise_xor)(_bitwise_rule("xor"))


@register(aten.logical_not)
def _logical_not(lo, n, x):
    return pointwise(lo, n, lambda a: unary("not", a), x, compute=torch.bool)


@register(aten.bitwise_not)
def _bitwise_not(lo, n, x):
    op = "not" if x.dtype == torch.bool else "bitnot"
    return pointwise(lo, n, lambda a: unary(op, a), x)


@register(aten.isnan)
def _isnan(lo, n, x):
    return pointwise(lo, n, lambda a: unary("isnan", a), x, compute=x.dtype)


@register(aten.where)
def _where(lo, n, c, a, b):
    return pointwise(lo, n, lambda cc, x, y: where(cc, x, y), c, a, b)


def _clamp(lo, n, x, lo_v=None, hi_v=None):
    def fn(a, *bounds):
        it = iter(bounds)
        if lo_v is not None:
            a = binary("max", a, next(it))
        if hi_v is not None:
            a = binary("min", a, next(it))
        return a
    return pointwise(lo, n, fn, x, *[v for v in (lo_v, hi_v) if v is not None])


@register(aten.clamp)
def _clamp_rule(lo, n, x, min=None, max=None):
    return _clamp(lo, n, x, min, max)


@register(aten.clamp_min)
def _clamp_min(lo, n, x, v):
    return _clamp(lo, n, x, v, None)


@register(aten.clamp_max)
def _clamp_max(lo, n, x, v):
    return _clamp(lo, n, x, None, v)


@register(aten.hardtanh)
def _hardtanh(lo, n, x, min_val=-1.0, max_val=1.0):
    return _clamp(lo, n, x, min_val, max_val)


@register(aten.relu)
def _relu(lo, n, x):
    return pointwise(lo, n, lambda a: binary("max", a, const(0, a.dtype)), x)


@register(aten.leaky_relu)
def _leaky_relu(lo, n, x, slope=0.01):
    return pointwise(lo, n, lambda a: where(binary("gt", a, const(0, a.dtype)), a, a * const(slope, a.dtype)), x)


@register(aten.silu)
def _silu(lo, n, x):
    return pointwise(lo, n, lambda a: a * unary("sigmoid", a), x)


@register(aten.gelu)
def _gelu(lo, n, x, approximate="none"):
    def fn(a):
        half = const(0.5, a.dtype)
        if approximate == "tanh":
            inner = const(math.sqrt(2 / math.pi), a.dtype) * (a + const(0.044715, a.dtype) * a * a * a)
            return half * a * (const(1, a.dtype) + unary("tanh", inner))
        return half * a * (const(1, a.dtype) + unary("erf", a * const(math.sqrt(0.5), a.dtype)))
    return pointwise(lo, n, fn, x)


@register(aten._to_copy)
def _to_copy(lo, n, x, *, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False,
             memory_format=None):
    if device is not None and torch.device(device) != torch.device("cpu"):
        raise Unsupported("device transfer")
    return pointwise(lo, n, lambda a: a, x, compute=x.dtype)


@register(aten.to)
def _to(lo, n, x, *args, **kwargs):
    """`x.to(dtype)` (any overload) on the same device: a cast. It may alias x in torch, which only
    a mutation could tell apart, and graphs with mutations run with torch."""
    src, val = n.args[0].meta.get("val"), n.meta.get("val")
    if not isinstance(src, torch.Tensor) or not isinstance(val, torch.Tensor) or src.device != val.device:
        raise Unsupported("device transfer")
    return pointwise(lo, n, lambda a: a, x, compute=x.dtype)


@register(aten.clone, aten.alias, aten.lift_fresh_copy, aten.detach)
def _identity(lo, n, x, *, memory_format=None):
    lo.meta(n)
    return x


# ---- tensor factories --------------------------------------------------------------------------

def _filled(lo, n, value):
    shape, dtype = lo.meta(n)
    return TV(shape, dtype, const(value, dtype))


@register(aten.scalar_tensor)
def _scalar_tensor(lo, n, value, **_):
    return _filled(lo, n, value)


@register(aten.full)
def _full(lo, n, size, value, **_):
    return _filled(lo, n, value)


@register(aten.full_like)
def _full_like(lo, n, x, value, **_):
    return _filled(lo, n, value)


@register(aten.zeros_like)
def _zeros_like(lo, n, x, **_):
    return _filled(lo, n, 0)


@register(aten.ones_like)
def _ones_like(lo, n, x, **_):
    return _filled(lo, n, 1)


@register(aten.fill)
def _fill(lo, n, x, value):
    if isinstance(value, TV):
        raise Unsupported("fill with a tensor")
    return _filled(lo, n, value)


@register(aten.arange)
def _arange(lo, n, start, end=None, step=1, **_):
    shape, dtype = lo.meta(n)
    if end is None:
        start = 0
    i0 = ivars(1)[0]
    kind = dtype if dtype.is_floating_point else INDEX
    return TV(shape, dtype, cast(const(start, kind) + cast(i0, kind) * const(step, kind), dtype))


# ---- views -------------------------------------------------------------------------------------

def _view(lo, n, x, *_):
    shape, _dtype = lo.meta(n)
    if tuple(shape) == tuple(x.shape):
        return x
    idx = ivars(len(shape))
    return TV(shape, x.dtype, x.at(unravel(contiguous_index(idx, shape), x.shape)), x.origins)


register(aten.view, aten._unsafe_view, aten.reshape)(_view)


@register(aten.permute)
def _permute(lo, n, x, dims):
    rank = len(x.shape)
    dims = [d % rank for d in dims]
    idx = ivars(rank)
    src = [None] * rank
    for out_d, in_d in enumerate(dims):
        src[in_d] = idx[out_d]
    return TV(tuple(x.shape[d] for d in dims), x.dtype, x.at(src), x.origins)


@register(aten.transpose)
def _transpose(lo, n, x, d0, d1):
    dims = list(range(len(x.shape)))
    d0, d1 = d0 % max(len(dims), 1), d1 % max(len(dims), 1)
    dims[d0], dims[d1] = dims[d1], dims[d0]
    return _permute(lo, n, x, dims)


@register(aten.t)
def _t(lo, n, x):
    return _permute(lo, n, x, list(reversed(range(len(x.shape)))))


@register(aten.expand)
def _expand(lo, n, x, sizes, *, implicit=False):
    shape, _ = lo.meta(n)
    return TV(shape, x.dtype, broadcast(x, shape, ivars(len(shape))), x.origins)


@register(aten.unsqueeze)
def _unsqueeze(lo, n, x, dim):
    shape, _ = lo.meta(n)
    dim = dim % len(shape)
    idx = ivars(len(shape))
    return TV(shape, x.dtype, x.at(idx[:dim] + idx[dim + 1:]), x.origins)


@register(aten.squeeze)
def _squeeze(lo, n, x, dims=None):
    shape, _ = lo.meta(n)
    rank = len(x.shape)
    if dims is None:
        dims = [d for d in range(rank) if x.shape[d] == 1]
    elif isinstance(dims, int):
        dims = [dims]
    drop = {d % rank for d in dims if x.shape[d % rank] == 1} if rank else set()
    it = iter(ivars(len(shape)))
    return TV(shape, x.dtype, x.at([const(0) if d in drop else next(it) for d in range(rank)]), x.origins)


@register(aten.slice)
def _slice(lo, n, x, dim=0, start=None, end=None, step=1):
    shape, _ = lo.meta(n)
    dim = dim % len(x.shape)
    start = 0 if start is None else start
    if start < 0:
        start += x.shape[dim]
    start = min(max(start, 0), x.shape[dim])
    idx = ivars(len(shape))
    src = list(idx)
    src[dim] = const(start) + idx[dim] * const(step)
    return TV(shape, x.dtype, x.at(src), x.origins)


@register(aten.select)
def _select(lo, n, x, dim, index):
    shape, _ = lo.meta(n)
    dim = dim % len(x.shape)
    index = index + x.shape[dim] if index < 0 else index
    idx = ivars(len(shape))
    return TV(shape, x.dtype, x.at(idx[:dim] + [const(index)] + idx[dim:]), x.origins)


@register(aten.split.Tensor, aten.split_with_sizes, aten.tensor_split.sections, aten.chunk, aten.unbind)
def _split(lo, n, x, *args, **kwargs):
    """Consecutive pieces along `dim` (sizes from the traced results); unbind drops the dim."""
    pieces = n.meta.get("val")
    unbind = n.target.overloadpacket is aten.unbind
    dim = kwargs.get("dim", args[0] if unbind and args else args[1] if len(args) > 1 else 0) % len(x.shape)
    if not isinstance(pieces, (list, tuple)) or not all(isinstance(p, torch.Tensor) for p in pieces):
        raise Unsupported("split without tensor metadata")
    out, start = [], 0
    for p in pieces:
        shape = tuple(int(s) for s in p.shape)
        idx = ivars(len(shape))
        if unbind:
            src = idx[:dim] + [const(start)] + idx[dim:]
            start += 1
        else:
            src = idx[:dim] + [idx[dim] + const(start)] + idx[dim + 1:]
            start += shape[dim]
        out.append(TV(shape, x.dtype, x.at(src), x.origins))
    return out


def _clamped(i: Expr, lo_v: int, hi_v: int) -> Expr:
    """Index kept inside [lo_v, hi_v]: branches of a `where` may be evaluated for every element."""
    return binary("min", binary("max", i, const(lo_v)), const(hi_v))


@register(aten.cat)
def _cat(lo, n, tensors, dim=0):
    shape, dtype = lo.meta(n)
    dim = dim % len(shape)
    parts = [t for t in tensors if isinstance(t, TV) and prod(t.shape) > 0]
    if not parts or any(len(t.shape) != len(shape) for t in parts):
        raise Unsupported("cat of empty or 1-d legacy tensors")
    idx = ivars(len(shape))
    offsets, acc = [], 0
    for t in parts:
        offsets.append(acc)
        acc += t.shape[dim]
    out = None
    for t, off in reversed(list(zip(parts, offsets))):
        src = list(idx)
        src[dim] = _clamped(idx[dim] - const(off), 0, t.shape[dim] - 1)
        val = cast(t.at(src), dtype)
        out = val if out is None else where(binary("lt", idx[dim], const(off + t.shape[dim])), val, out)
    return TV(shape, dtype, out, origins_of(*parts))


@register(aten.constant_pad_nd)
def _pad(lo, n, x, pad, value=0):
    shape, dtype = lo.meta(n)
    if any(p < 0 for p in pad):
        raise Unsupported("negative padding")
    idx = ivars(len(shape))
    src, inside = list(idx), None
    for k in range(len(pad) // 2):
        d = len(shape) - 1 - k
        before = pad[2 * k]
        src[d] = _clamped(idx[d] - const(before), 0, x.shape[d] - 1)
        ok = binary("and", binary("ge", idx[d], const(before)), binary("lt", idx[d], const(before + x.shape[d])))
        inside = ok if inside is None else binary("and", inside, ok)
    val = x.at(src)
    return TV(shape, dtype, val if inside is None else where(inside, val, const(value, dtype)), x.origins)


def _checked(i: Expr, size: int) -> Expr:
    """A data-dependent index: wrapped if negative; out of range raises IndexError at run time."""
    return Expr("checkidx", (cast(i, INDEX),), size, INDEX)


@register(aten.gather)
def _gather(lo, n, x, dim, index, sparse_grad=False):
    shape, _ = lo.meta(n)
    dim = dim % max(len(x.shape), 1)
    idx = ivars(len(shape))
    src = list(idx)
    src[dim] = _checked(index.at(idx), x.shape[dim])
    return TV(shape, x.dtype, x.at(src), origins_of(x, index))


@register(aten.index_select)
def _index_select(lo, n, x, dim, index):
    shape, _ = lo.meta(n)
    dim = dim % len(x.shape)
    idx = ivars(len(shape))
    src = list(idx)
    src[dim] = _checked(index.at([idx[dim]]) if index.shape else index.expr, x.shape[dim])
    return TV(shape, x.dtype, x.at(src), origins_of(x, index))


@register(aten.embedding)
def _embedding(lo, n, weight, indices, *_):
    shape, _ = lo.meta(n)
    idx = ivars(len(shape))
    row = _checked(indices.at(idx[:-1]), weight.shape[0])
    return TV(shape, weight.dtype, weight.at([row, idx[-1]]), origins_of(weight, indices))


@register(aten.index)
def _index(lo, n, x, indices):
    """x[..., t, ...] with one index tensor and full slices elsewhere (the common case)."""
    shape, _ = lo.meta(n)
    tensors = [k for k, t in enumerate(indices) if t is not None]
    if len(tensors) != 1 or not isinstance(indices[tensors[0]], TV):
        raise Unsupported("advanced indexing with several tensors")
    k, t = tensors[0], indices[tensors[0]]
    if t.dtype == torch.bool:
        raise Unsupported("boolean mask indexing")
    idx = ivars(len(shape))
    nt = len(t.shape)
    src = idx[:k] + [_checked(t.at(idx[k:k + nt]), x.shape[k])] + idx[k + nt:]
    return TV(shape, x.dtype, x.at(src), origins_of(x, t))


# ---- reductions --------------------------------------------------------------------------------

@register(aten.sum)
def _sum(lo, n, x, dims=None, keepdim=False, *, dtype=None):
    _, out_dtype = lo.meta(n)
    return reduction(lo, n, x, dims, "sum", keepdim, out_dtype)


@register(aten.mean)
def _mean(lo, n, x, dims=None, keepdim=False, *, dtype=None):
    _, out_dtype = lo.meta(n)
    total = reduction(lo, n, x, dims, "sum", keepdim, out_dtype)
    count = prod(x.shape) // max(prod(total.shape), 1)
    return TV(total.shape, out_dtype, total.expr / const(count, out_dtype))


def _minmax_rule(rtype):
    def rule(lo, n, x, dims=None, keepdim=False):
        _, out_dtype = lo.meta(n)
        return reduction(lo, n, x, dims, rtype, keepdim, out_dtype)
    return rule


register(aten.amax, aten.max.default)(_minmax_rule("max"))
register(aten.amin, aten.min.default)(_minmax_rule("min"))


def _var_parts(lo: Lowering, n, x: TV, dims, correction, keepdim):
    """Two-pass variance: the mean, then the sum of squared deviations (fused into one kernel)."""
    if not x.dtype.is_floating_point:
        raise Unsupported("integer variance")
    rank = len(x.shape)
    dims = list(range(rank)) if not dims else [d % rank for d in dims]
    count = prod(x.shape[d] for d in dims)
    total = reduction(lo, n, x, dims, "sum", True, x.dtype)
    mean = TV(total.shape, x.dtype, total.expr / const(count, x.dtype))
    idx = ivars(rank)
    dev = x.expr - broadcast(mean, x.shape, idx)
    sq = reduction(lo, n, x, dims, "sum", keepdim, x.dtype, body=dev * dev)
    denom = max(count - (1 if correction is None else correction), 0)
    var = TV(sq.shape, x.dtype, sq.expr / const(denom, x.dtype))
    if not keepdim:
        kept = [d for d in range(rank) if d not in dims]
        out_idx = ivars(len(kept))
        mean_idx = [const(0)] * rank
        for k, d in enumerate(kept):
            mean_idx[d] = out_idx[k]
        mean = TV(var.shape, x.dtype, mean.at(mean_idx))
    return var, mean


@register(aten.var)
def _var(lo, n, x, dims=None, *, correction=None, keepdim=False):
    return _var_parts(lo, n, x, dims, correction, keepdim)[0]


@register(aten.var_mean)
def _var_mean(lo, n, x, dims=None, *, correction=None, keepdim=False):
    return _var_parts(lo, n, x, dims, correction, keepdim)


@register(aten.std)
def _std(lo, n, x, dims=None, *, correction=None, keepdim=False):
    var = _var_parts(lo, n, x, dims, correction, keepdim)[0]
    return TV(var.shape, var.dtype, unary("sqrt", var.expr))

