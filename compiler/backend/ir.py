"""Expression DAG shared by every stage: values and index arithmetic are the same kind of node.

An `Expr` is immutable and hashes structurally, so two equal sub-expressions are interchangeable
anywhere (this is what CSE and the fusion legality checks rely on). Index variables (`var`) are
loop counters; `load` reads a buffer at an index expression. Nothing here knows about C++ or Triton.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

INDEX = torch.int64

# Ops by arity; the code generators must render every one of them.
UNARY = frozenset({
    "neg", "exp", "exp2", "log", "log2", "log1p", "expm1", "sqrt", "rsqrt", "tanh", "sigmoid", "erf",
    "abs", "sin", "cos", "tan", "atan", "floor", "ceil", "round", "trunc", "not", "reciprocal",
    "isnan", "bitnot", "sign",
})
BINARY = frozenset({
    "add", "sub", "mul", "truediv", "floordiv", "mod", "max", "min", "pow", "atan2",
    "lt", "le", "gt", "ge", "eq", "ne", "and", "or", "xor", "fmod",
})
COMPARE = frozenset({"lt", "le", "gt", "ge", "eq", "ne", "isnan"})
COMMUTATIVE = frozenset({"add", "mul", "max", "min", "eq", "ne", "and", "or", "xor"})


class Expr:
    """One node: `op`, child `args`, a payload `arg` (constant value, variable/buffer name, dtype)."""

    __slots__ = ("op", "args", "arg", "dtype", "_hash")

    def __init__(self, op: str, args: tuple = (), arg=None, dtype: torch.dtype = torch.float32):
        self.op, self.args, self.arg, self.dtype = op, tuple(args), arg, dtype
        self._hash = hash((op, self.args, arg, dtype))

    def __hash__(self):
        return self._hash

    def __eq__(self, other):
        if self is other:
            return True
        return (isinstance(other, Expr) and self._hash == other._hash and self.op == other.op
                and self.arg == other.arg and self.dtype == other.dtype and self.args == other.args)

    def __repr__(self):
        return render(self)

    # Operator sugar keeps lowering rules readable.
    def __add__(self, o): return binary("add", self, o)
    def __radd__(self, o): return binary("add", o, self)
    def __sub__(self, o): return binary("sub", self, o)
    def __rsub__(self, o): return binary("sub", o, self)
    def __mul__(self, o): return binary("mul", self, o)
    def __rmul__(self, o): return binary("mul", o, self)
    def __truediv__(self, o): return binary("truediv", self, o)
    def __floordiv__(self, o): return binary("floordiv", self, o)
    def __mod__(self, o): return binary("mod", self, o)
    def __neg__(self): return unary("neg", self)


def const(value, dtype=None) -> Expr:
    if dtype is None:
        dtype = torch.bool if isinstance(value, bool) else INDEX if isinstance(value, int) else torch.float32
    if dtype == torch.bool:
        value = bool(value)
    elif dtype.is_floating_point:
        value = float(value)
    else:
        value = int(value)
    return Expr("const", (), value, dtype)


def var(name: str) -> Expr:
    return Expr("var", (), name, INDEX)


def load(buf: str, index: Expr, dtype: torch.dtype) -> Expr:
    return Expr("load", (index,), buf, dtype)


def cast(e: Expr, dtype: torch.dtype) -> Expr:
    if e.dtype == dtype:
        return e
    if e.op == "const":
        return const(e.arg, dtype)
    return Expr("cast", (e,), dtype, dtype)


def as_expr(x, like: Expr | None = None) -> Expr:
    """Python scalar -> constant, typed like `like` where torch's promotion rules would keep it."""
    if isinstance(x, Expr):
        return x
    if like is not None and not isinstance(x, bool):
        if like.dtype.is_floating_point or (isinstance(x, int) and like.dtype != torch.bool):
            return const(x, like.dtype)
    return const(x)


def unary(op: str, a: Expr) -> Expr:
    assert op in UNARY, op
    dtype = torch.bool if op in COMPARE or op == "not" else a.dtype
    return Expr(op, (a,), None, dtype)


def binary(op: str, a, b) -> Expr:
    assert op in BINARY, op
    a, b = as_expr(a, b if isinstance(b, Expr) else None), as_expr(b, a if isinstance(a, Expr) else None)
    if a.dtype != b.dtype:
        common = torch.promote_types(a.dtype, b.dtype)
        a, b = cast(a, common), cast(b, common)
    dtype = torch.bool if op in COMPARE else a.dtype
    return Expr(op, (a, b), None, dtype)


def where(c: Expr, a, b) -> Expr:
    a, b = as_expr(a, b if isinstance(b, Expr) else None), as_expr(b, a if isinstance(a, Expr) else None)
    common = torch.promote_types(a.dtype, b.dtype)
    return Expr("where", (cast(c, torch.bool), cast(a, common), cast(b, common)), None, common)


def walk(roots, stop=()) -> list[Expr]:
    """Every distinct node reachable from `roots` without passing through a node in `stop`,
    children before parents."""
    seen, order = set(), []
    stack = [(r, False) for r in reversed(list(roots))]
    while stack:
        e, done = stack.pop()
        if done:
            order.append(e)
            continue
        if e in seen or e in stop:
            continue
        seen.add(e)
        stack.append((e, True))
        stack.extend((a, False) for a in reversed(e.args) if a not in seen)
    return order


def rebuild(roots, fn) -> list[Expr]:
    """Bottom-up rewrite: `fn(node, new_args)` returns the replacement of each node."""
    memo: dict[Expr, Expr] = {}
    for e in walk(roots):
        memo[e] = fn(e, tuple(memo[a] for a in e.args))
    return [memo[r] for r in roots]


def with_args(e: Expr, args: tuple) -> Expr:
    if args == e.args:
        return e
    return Expr(e.op, args, e.arg, e.dtype)


def substitute(e: Expr, mapping: dict[str, Expr]) -> Expr:
    """Replace index variables by expressions (how views, fusion and loop splitting rename loops)."""
    if not mapping:
        return e

    def fn(node, args):
        if node.op == "var" and node.arg in mapping:
            return mapping[node.arg]
        return with_args(node, args)
    return rebuild([e], fn)[0]


def free_vars(e: Expr) -> set[str]:
    return {n.arg for n in walk([e]) if n.op == "var"}


def loads(e: Expr) -> list[Expr]:
    return [n for n in walk([e]) if n.op == "load"]


def count_ops(e: Expr) -> int:
    """Value operations in e (index arithmetic is free: it simplifies away or is strength-reduced)."""
    return sum(1 for n in walk([e]) if n.op not in ("const", "var") and n.dtype != INDEX)


def render(e: Expr) -> str:
    """A compact, readable text form for FUSELENS_DEBUG output and test messages."""
    if e.op == "const":
        return repr(e.arg)
    if e.op in ("var", "acc"):
        return e.arg
    if e.op == "load":
        return f"{e.arg}[{render(e.args[0])}]"
    if e.op == "cast":
        return f"{str(e.arg).replace('torch.', '')}({render(e.args[0])})"
    return f"{e.op}({', '.join(render(a) for a in e.args)})"


def linear_index(idx: list[Expr], strides, offset: int = 0) -> Expr:
    """sum(idx[d] * strides[d]) + offset, skipping zero strides (broadcast dims)."""
    out = const(offset)
    for i, s in zip(idx, strides):
        if s:
            out = out + (i if s == 1 else i * const(s))
    return out


def contiguous_strides(shape) -> tuple[int, ...]:
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


def prod(xs) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


@dataclass
class Buffer:
    """A named memory region: a graph input, a kernel output, or a tensor an extern call returns."""

    name: str
    shape: tuple[int, ...]
    dtype: torch.dtype
    strides: tuple[int, ...] = None
    offset: int = 0
    kind: str = "temp"  # "input" | "temp" | "extern"

    def __post_init__(self):
        if self.strides is None:
            self.strides = contiguous_strides(self.shape)

    def index(self, idx: list[Expr]) -> Expr:
        return linear_index(idx, self.strides, self.offset)


@dataclass
class Node:
    """A computation that writes one buffer.

    kind "pointwise": out[i...] = expr over vars i0..i{n-1} (n = len(shape)).
    kind "reduction": out[kept dims] = reduce(rtype) of expr over the full `shape`; `rdims` are the
    reduced dims. kind "extern": a torch call (`target`, `args` with Buffer names as `BufRef`).
    """

    name: str
    kind: str
    shape: tuple[int, ...]
    dtype: torch.dtype
    expr: Expr | None = None
    rdims: tuple[int, ...] = ()
    rtype: str = ""
    target: object = None
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    outs: tuple[str, ...] = ()  # extern: buffers receiving its flattened tensor results
    origins: list = field(default_factory=list)  # (aten op, "file:line") pairs for provenance

    @property
    def out_shape(self) -> tuple[int, ...]:
        if self.kind != "reduction":
            return self.shape
        return tuple(s for d, s in enumerate(self.shape) if d not in self.rdims)

    def reads(self) -> set[str]:
        if self.kind == "extern":
            return {a.name for a in flatten_args(self.args) if isinstance(a, BufRef)} | {
                a.name for a in flatten_args(list(self.kwargs.values())) if isinstance(a, BufRef)}
        return {n.arg for n in loads(self.expr)}


@dataclass(frozen=True)
class BufRef:
    """An extern call's tensor argument: a buffer, optionally viewed with other shape/strides."""

    name: str
    shape: tuple | None = None
    strides: tuple | None = None
    offset: int = 0


def flatten_args(xs):
    for x in xs:
        if isinstance(x, (list, tuple)):
            yield from flatten_args(x)
        else:
            yield x
