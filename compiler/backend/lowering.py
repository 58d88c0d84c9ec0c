"""FX graph of aten ops -> Program: buffers plus pointwise / reduction / extern nodes.

Every tensor is first a lazy `TV`: an expression over its own index variables i0..i{n-1}. Pointwise
ops and views only build bigger expressions (this is vertical fusion: producers are inlined into
consumers); a buffer is written only for reductions, graph outputs, extern arguments and values that
are expensive and used more than once. Any op without a lowering - or whose lowering refuses the
case - becomes an extern torch call, so lowering never fails a graph.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass

import torch
import torch.fx
from torch._prims_common import is_non_overlapping_and_dense_or_false as is_non_overlapping_and_dense
from torch.utils import _pytree as pytree

from .ir import (Buffer, BufRef, Expr, Node, cast, const, contiguous_strides, count_ops,
                 linear_index, load, prod, substitute, var)
from .simplify import _linear, simplify

SUPPORTED_DTYPES = {torch.float32, torch.float64, torch.int64, torch.int32, torch.int16, torch.int8,
                    torch.uint8, torch.bool}
INLINE_LIMIT = 24  # ops: a value used twice and bigger than this is computed once into a buffer


class Unsupported(Exception):
    """A lowering declines this node; it becomes an extern call instead."""


@dataclass
class TV:
    """A lazily computed tensor: element [i0, ...] is `expr`."""

    shape: tuple
    dtype: torch.dtype
    expr: Expr
    origins: frozenset = frozenset()

    def at(self, idx) -> Expr:
        return substitute(self.expr, {f"i{d}": e for d, e in enumerate(idx)})


def ivars(n: int) -> list[Expr]:
    return [var(f"i{d}") for d in range(n)]


@dataclass
class Program:
    buffers: dict
    nodes: list
    inputs: list          # buffer name per placeholder
    outputs: list         # per graph output: BufRef, or a Python value
    output_tree: object   # pytree spec of the graph's output
    origins: dict         # fx node name -> (aten op, "file:line")


LOWERINGS: dict = {}


def register(*ops):
    def deco(fn):
        for op in ops:
            LOWERINGS[op] = fn
        return fn
    return deco


def location(node: torch.fx.Node) -> str:
    """'file:line' of the user code that produced an FX node, from its recorded stack trace."""
    trace = node.meta.get("stack_trace") or ""
    for line in reversed(trace.strip().splitlines()):
        line = line.strip()
        if line.startswith('File "'):
            path, _, rest = line[6:].partition('", line ')
            return f"{path}:{rest.split(',')[0]}"
    return ""


def _aliases_input(node) -> bool:
    """In eager, is this FX value a graph input or a view of one (through ops whose schema says
    their result aliases their first argument: view, permute, expand, alias, `to` as a no-op...)?"""
    while isinstance(node, torch.fx.Node) and node.op == "call_function":
        schema = getattr(node.target, "_schema", None)
        if schema is None or not schema.returns or schema.returns[0].alias_info is None or not node.args:
            return False
        node = node.args[0]
    return isinstance(node, torch.fx.Node) and node.op == "placeholder"


def _is_item_access(target) -> bool:
    """`operator.getitem`, or the capture front end's `_getitem(x, i)` (an item of a multi-output op)."""
    return target is operator.getitem or (
        callable(target) and not isinstance(target, torch._ops.OpOverload)
        and getattr(target, "__qualname__", "") == "_getitem")


class Lowering:
    def __init__(self, gm: torch.fx.GraphModule, example_inputs):
        self.gm, self.example_inputs = gm, example_inputs
        self.buffers: dict[str, Buffer] = {}
        self.nodes: list[Node] = []
        self.env: dict = {}
        self.origins: dict = {}
        self.users = {n: len(n.users) for n in gm.graph.nodes}

    # ---- buffers -------------------------------------------------------------------------------
    def new_buffer(self, shape, dtype, kind="temp", strides=None, hint="buf") -> Buffer:
        name = f"{hint}{len(self.buffers)}"
        buf = Buffer(name, tuple(shape), dtype, strides=strides, kind=kind)
        self.buffers[name] = buf
        return buf

    def buffer_tv(self, buf: Buffer, shape=None, strides=None, offset=0) -> TV:
        shape = buf.shape if shape is None else tuple(shape)
        strides = buf.strides if strides is None else strides
        return TV(shape, buf.dtype, load(buf.name, linear_index(ivars(len(shape)), strides, offset), buf.dtype))

    def view_of_buffer(self, tv: TV):
        """BufRef if `tv` is an affine strided view of an existing buffer (no copy needed)."""
        e = tv.expr
        if e.op != "load":
            return None
        idx = simplify(e.args[0], dict(zip((f"i{d}" for d in range(len(tv.shape))), tv.shape)))
        terms, offset = _linear(idx)
        strides = [0] * len(tv.shape)
        for t, k in terms.items():
            if t.op != "var" or k < 0:
                return None
            strides[int(t.arg[1:])] = k
        if offset < 0:
            return None
        buf = self.buffers[e.arg]
        if buf.dtype != tv.dtype:
            return None
        return BufRef(buf.name, tuple(tv.shape), tuple(strides), offset)

    def realize(self, tv: TV, strides=None, copy=False) -> BufRef:
        """Make `tv` addressable memory: reuse a view of an existing buffer (unless `copy`) or
        write a new one."""
        ref = None if copy else self.view_of_buffer(tv)
        if ref is not None and (strides is None or ref.strides == tuple(strides)):
            return ref
        if tv.dtype not in SUPPORTED_DTYPES:
            raise Unsupported(f"dtype {tv.dtype}")
        buf = self.new_buffer(tv.shape, tv.dtype, strides=strides)
        self.nodes.append(Node(buf.name, "pointwise", tv.shape, tv.dtype, tv.expr, origins=sorted(tv.origins)))
        return BufRef(buf.name, buf.shape, buf.strides, 0)

    def realized_tv(self, tv: TV) -> TV:
        ref = self.realize(tv)
        return TV(tv.shape, tv.dtype, self.buffer_tv(self.buffers[ref.name], ref.shape, ref.strides, ref.offset).expr)

    # ---- driver --------------------------------------------------------------------------------
    def run(self) -> Program:
        inputs = []
        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        for n, ex in zip(placeholders, self.example_inputs):
            buf = self.new_buffer(ex.shape, ex.dtype, kind="input", strides=tuple(ex.stride()), hint="in")
            inputs.append(buf.name)
            self.env[n] = self.buffer_tv(buf)
        out_node = None
        for n in self.gm.graph.nodes:
            if n.op == "call_function":
                self.env[n] = self.lower_node(n)
            elif n.op == "output":
                out_node = n
            elif n.op != "placeholder":
                raise Unsupported(f"fx op {n.op}")
        flat, spec = pytree.tree_flatten(self.env_map(out_node.args[0]))
        metas = pytree.tree_flatten(out_node.args[0])[0]
        outputs = []
        for value, fx_arg in zip(flat, metas):
            if isinstance(value, TV):
                outputs.append(self.realize_output(value, fx_arg))
            else:
                outputs.append(value)
        return Program(self.buffers, self.nodes, inputs, outputs, spec, self.origins)

    def realize_output(self, tv: TV, fx_arg) -> BufRef:
        """A view when possible; but an output that is a copy in eager (`x.clone()`) never
        shares an input's memory, which the caller may then write to."""
        val = fx_arg.meta.get("val") if isinstance(fx_arg, torch.fx.Node) else None
        ref = self.view_of_buffer(tv)
        copy = ref is not None and self.buffers[ref.name].kind == "input" and not _aliases_input(fx_arg)
        if ref is not None and not copy:
            return ref
        strides = None
        if isinstance(val, torch.Tensor) and is_non_overlapping_and_dense(val):
            strides = tuple(val.stride())
        return self.realize(tv, strides=strides, copy=copy)

    def env_map(self, a):
        return torch.fx.node.map_arg(a, lambda n: self.env[n])

    def lower_node(self, n: torch.fx.Node):
        self.origins[n.name] = (str(getattr(n.target, "__name__", n.target)), location(n))
        args, kwargs = self.env_map(n.args), self.env_map(n.kwargs)
        if _is_item_access(n.target) and isinstance(args[0], (tuple, list)):
            return args[0][args[1]]
        fn = LOWERINGS.get(n.target) or LOWERINGS.get(getattr(n.target, "overloadpacket", None))
        if fn is not None:
            try:
                out = fn(self, n, *args, **kwargs)
                if isinstance(out, TV) and prod(out.shape) == 0:
                    raise Unsupported("empty result")  # nothing to compute: torch makes the empty tensor
                if isinstance(out, TV):
                    out = TV(out.shape, out.dtype, out.expr, out.origins | {n.name})
                    out = self.maybe_realize(n, out)
                return out
            except Unsupported:
                pass
        return self.extern(n)

    def maybe_realize(self, n, tv: TV) -> TV:
        ops = count_ops(tv.expr)
        if (self.users[n] > 1 and ops > INLINE_LIMIT) or ops > 8 * INLINE_LIMIT:
            return self.realized_tv(tv)
        return tv

    def extern(self, n: torch.fx.Node):
        """Run the op with torch: tensor arguments are realized in the layout the graph traced them
        with (a lazy `clone(x, contiguous_format)` of a permuted input is a strided view of it,
        and some ops read raw memory as dense: mkldnn_rnn_layer), results become extern buffers."""
        def to_ref(node):
            value = self.env[node]
            if not isinstance(value, TV):  # a multi-output value passed whole: no traced layout to keep
                return pytree.tree_map(lambda a: self.realize(a) if isinstance(a, TV) else a, value)
            val = node.meta.get("val")
            dense = isinstance(val, torch.Tensor) and is_non_overlapping_and_dense(val)
            return self.realize(value, strides=tuple(val.stride()) if dense else None)
        args, kwargs = torch.fx.node.map_arg(n.args, to_ref), torch.fx.node.map_arg(n.kwargs, to_ref)
        val = n.meta.get("val")
        flat, spec = pytree.tree_flatten(val)
        outs, results = [], []
        for v in flat:
            if isinstance(v, torch.Tensor):
                buf = self.new_buffer(v.shape, v.dtype, kind="extern", strides=tuple(v.stride()), hint="ext")
                outs.append(buf.name)
                results.append(self.buffer_tv(buf))
            else:
                outs.append(None)
                results.append(v)
        self.nodes.append(Node(outs[0] or f"ext{len(self.nodes)}", "extern", (), None, target=n.target,
                               args=args, kwargs=kwargs, outs=tuple(outs), origins=[n.name]))
        return pytree.tree_unflatten(results, spec)

    # ---- helpers for lowering rules --------------------------------------------------------------
    @staticmethod
    def meta(n):
        val = n.meta.get("val")
        if not isinstance(val, torch.Tensor):
            raise Unsupported("no tensor metadata")
        if val.dtype not in SUPPORTED_DTYPES:
            raise Unsupported(f"dtype {val.dtype}")
        return tuple(int(s) for s in val.shape), val.dtype


def broadcast(x, out_shape, idx) -> Expr | object:
    """x's element for the output index `idx` (numpy broadcasting, right-aligned)."""
    if not isinstance(x, TV):
        return x
    off = len(out_shape) - len(x.shape)
    return x.at([const(0) if s == 1 else idx[off + d] for d, s in enumerate(x.shape)])


def origins_of(*xs) -> frozenset:
    out = frozenset()
    for x in xs:
        if isinstance(x, TV):
            out |= x.origins
    return out


def result_type(*xs) -> torch.dtype:
    """torch's type promotion for a mix of lazy tensors and Python scalars."""
    probes = [torch.empty([1] * len(x.shape), dtype=x.dtype) if isinstance(x, TV) else x for x in xs]
    out = probes[0]
    if len(probes) == 1:
        return out.dtype if isinstance(out, torch.Tensor) else torch.tensor(out).dtype
    dtype = torch.result_type(probes[0], probes[1])
    for p in probes[2:]:
        dtype = torch.promote_types(dtype, torch.result_type(p, torch.empty([], dtype=dtype)))
    return dtype


def to_expr(x, dtype) -> Expr:
    return cast(x, dtype) if isinstance(x, Expr) else const(x, dtype)


def pointwise(lo: Lowering, n, fn, *inputs, compute=None) -> TV:
    """Elementwise op: `fn` maps the inputs' element expressions (cast to `compute`) to the result."""
    shape, dtype = lo.meta(n)
    idx = ivars(len(shape))
    compute = compute or dtype
    if compute not in SUPPORTED_DTYPES or any(isinstance(x, TV) and x.dtype not in SUPPORTED_DTYPES for x in inputs):
        raise Unsupported(f"dtype {compute} or an input's (complex, half)")
    exprs = [to_expr(broadcast(x, shape, idx), compute) if isinstance(x, (TV, int, float, bool)) else x
             for x in inputs]
    return TV(shape, dtype, cast(fn(*exprs), dtype), origins_of(*inputs))


def contiguous_index(idx, shape) -> Expr:
    return linear_index(idx, contiguous_strides(shape))


def unravel(flat: Expr, shape) -> list[Expr]:
    """Index in `shape` of the row-major position `flat`."""
    out, stride = [], 1
    for s in reversed(shape):
        out.append(const(0) if s == 1 else (flat // const(stride)) % const(s))
        stride *= s
    return list(reversed(out))


def reduction(lo: Lowering, n, tv: TV, dims, rtype: str, keepdim: bool, dtype, body=None) -> TV:
    """A reduction node over `dims` of tv, returned as a lazy load of its (contiguous) result."""
    rank = len(tv.shape)
    dims = sorted({d % rank for d in dims}) if dims else list(range(rank))
    if rank == 0 or prod(tv.shape) == 0 or dtype not in SUPPORTED_DTYPES or tv.dtype not in SUPPORTED_DTYPES:
        raise Unsupported("degenerate reduction or unsupported dtype")
    kept = [d for d in range(rank) if d not in dims]
    out_shape = tuple(tv.shape[d] for d in kept)
    buf = lo.new_buffer(out_shape, dtype)
    expr = cast(tv.expr if body is None else body, dtype)
    lo.nodes.append(Node(buf.name, "reduction", tv.shape, dtype, expr, rdims=tuple(dims), rtype=rtype,
                         origins=sorted(origins_of(tv) | {n.name})))
    res_shape = tuple(1 if d in dims else s for d, s in enumerate(tv.shape)) if keepdim else out_shape
    idx = ivars(len(res_shape))
    kept_idx = [idx[d] for d in kept] if keepdim else idx
    return TV(res_shape, dtype, load(buf.name, contiguous_index(kept_idx, out_shape), dtype))


from . import lowering_ops  # noqa: E402,F401  (registers the op table)


def lower(gm: torch.fx.GraphModule, example_inputs) -> Program:
    return Lowering(gm, example_inputs).run()


__all__ = ["Lowering", "Program", "TV", "Unsupported", "lower", "pointwise", "reduction"]
