"""Loop-level IR -> Triton (one `@triton.jit` kernel per fused group; the default on CUDA).

Pointwise kernels flatten their loops into one masked 1-D block of XBLOCK elements. Reduction
kernels take XBLOCK rows per program and walk the reduced axis in RBLOCK-wide tiles: each phase
accumulates a [XBLOCK, RBLOCK] tile and reduces it with tl.sum / tl.max / tl.min at the end, stores
of later phases reuse the row results. Block sizes come from a small autotuned config list (one
config under TRITON_INTERPRET=1, and for kernels that write in place, which must not run twice).
Only core `tl` math is used, so the CPU interpreter runs every kernel the GPU would.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys

import torch

from .cache import cache_dir
from .codegen_cpp import ExprPrinter, provenance, segment_params
from .ir import Expr, prod, walk
from .scheduler import Kernel, Reduce, Store

TL = {torch.float32: "tl.float32", torch.float64: "tl.float64", torch.int64: "tl.int64", torch.int32: "tl.int32",
      torch.int16: "tl.int16", torch.int8: "tl.int8", torch.uint8: "tl.uint8", torch.bool: "tl.int1"}
SIMPLE = {"exp": "tl.exp", "exp2": "tl.exp2", "log": "tl.log", "log2": "tl.log2", "sqrt": "tl.sqrt",
          "rsqrt": "tl.rsqrt", "sigmoid": "tl.sigmoid", "erf": "tl.erf", "abs": "tl.abs", "sin": "tl.sin",
          "cos": "tl.cos", "floor": "tl.floor", "ceil": "tl.ceil"}
INFIX = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
         "eq": "==", "ne": "!=", "and": "&", "or": "|", "xor": "^"}
HEADER = '''import torch
import triton
import triton.language as tl

INF: tl.constexpr = float("inf")
NAN: tl.constexpr = float("nan")
'''


class TritonPrinter(ExprPrinter):
    def __init__(self, ranges, names, zero, mask):
        super().__init__(ranges, names, set())
        self.zero, self.mask = zero, mask

    def declare(self, name, text, e):
        return f"{name} = {text}"

    def leaf(self, e: Expr):
        if e.op == "const":
            v = e.arg
            if e.dtype.is_floating_point and v != v:
                return "NAN"
            if e.dtype.is_floating_point and v in (float("inf"), float("-inf")):
                return "INF" if v > 0 else "(-INF)"
            return repr(v)
        return super().leaf(e)

    def render(self, e: Expr, a: list[str]) -> str:
        op, t = e.op, e.dtype
        if op == "load":
            return f"tl.load({self.names[e.arg]} + ({a[0]} + {self.zero}), mask={self.mask}, other=0)"
        if op == "cast":
            return f"({a[0]} != 0)" if t == torch.bool else f"({a[0]}).to({TL[t]})"
        if op in INFIX:
            return f"({a[0]} {INFIX[op]} {a[1]})"
        if op in ("floordiv", "mod"):
            if self.nonneg(e.args[0]) and self.nonneg(e.args[1]):
                return f"({a[0]} {'//' if op == 'floordiv' else '%'} {a[1]})"
            fix = f"(({a[0]} % {a[1]} != 0) & (({a[0]} < 0) != ({a[1]} < 0)))"
            if op == "floordiv":
                return f"tl.where({fix}, {a[0]} // {a[1]} - 1, {a[0]} // {a[1]})"
            return f"tl.where({fix}, {a[0]} % {a[1]} + {a[1]}, {a[0]} % {a[1]})"
        if op in ("max", "min"):
            nan = ", propagate_nan=tl.PropagateNan.ALL" if t.is_floating_point else ""
            return f"tl.{op}imum({a[0]}, {a[1]}{nan})"
        if op == "where":
            return f"tl.where({a[0]}, {a[1]}, {a[2]})"
        if op in SIMPLE:
            return f"{SIMPLE[op]}({a[0]})"
        one = "1.0" if t.is_floating_point else "1"
        unary = {
            "neg": f"(-{a[0]})", "not": f"({a[0]} == 0)", "bitnot": f"(~{a[0]})", "isnan": f"({a[0]} != {a[0]})",
            "reciprocal": f"({one} / {a[0]})", "tanh": _tanh(a[0]), "log1p": _log1p(a[0]), "expm1": _expm1(a[0]),
            "trunc": f"tl.where({a[0]} < 0, tl.ceil({a[0]}), tl.floor({a[0]}))",
            "sign": f"(({a[0]} > 0).to({TL[t]}) - ({a[0]} < 0).to({TL[t]}))",
        }
        if op in unary:
            return unary[op]
        if op == "round":  # half to even, like torch.round
            f = f"tl.floor({a[0]} + 0.5)"
            return f"tl.where(({f} - {a[0]} == 0.5) & ({f} % 2 != 0), {f} - 1.0, {f})"
        if op == "checkidx":
            n = e.arg
            return f"tl.minimum(tl.maximum(tl.where({a[0]} < 0, {a[0]} + {n}, {a[0]}), 0), {n - 1})"
        if op == "pow" and e.args[1].op == "const" and t.is_floating_point:
            c = e.args[1].arg
            if float(c).is_integer() and 0 < abs(c) <= 8:
                prod_ = " * ".join([a[0]] * int(abs(c)))
                return f"({prod_})" if c > 0 else f"(1.0 / ({prod_}))"
            return f"tl.exp2({c!r} * tl.log2({a[0]}))"
        raise NotImplementedError(f"Triton codegen for {op}")


# log(1 + x), exp(x) - 1 and 2 sigmoid(2x) - 1 lose every digit for tiny x (log1p(1e-8) would be 0,
# which a later division turns into a large error): core `tl` has no log1p/expm1, so they are
# corrected in the classic way. log1p: the rounding of u = 1 + x cancels in x / (u - 1) (Goldberg).
# expm1: the same with u = exp(x) (Kahan). tanh of |x| as expm1(2|x|) / (expm1(2|x|) + 2), with |x|
# clamped where tanh is 1 in float and the sign put back.
def _log1p(x: str) -> str:
    u = f"(1.0 + {x})"
    return f"tl.where({u} == 1.0, {x}, tl.where({u} == INF, {u}, tl.log({u}) * ({x} / ({u} - 1.0))))"


def _expm1(x: str) -> str:
    u = f"tl.exp({x})"
    return (f"tl.where({u} == 1.0, {x}, tl.where({u} - 1.0 == -1.0, -1.0, "
            f"tl.where({u} == INF, {u}, ({u} - 1.0) * ({x} / tl.log({u})))))")


def _tanh(x: str) -> str:
    e = _expm1(f"(2.0 * tl.minimum(tl.abs({x}), 20.0, propagate_nan=tl.PropagateNan.ALL))")
    return f"tl.where({x} < 0, -({e} / ({e} + 2.0)), {e} / ({e} + 2.0))"


def _unflatten(lines, indent, flat, prefix, sizes):
    """Loop variables from a flat index (row-major over `sizes`)."""
    stride = prod(sizes)
    for d, s in enumerate(sizes):
        stride //= s
        expr = f"({flat} // {stride})" if stride > 1 else flat
        lines.append(f"{indent}{prefix}{d} = {expr} % {s}" if d > 0 else f"{indent}{prefix}{d} = {expr}")


class TritonKernelWriter:
    def __init__(self, kernel: Kernel, params, buffers):
        self.k, self.params, self.buffers = kernel, params, buffers

    def names(self, extra=None):
        out = {b: f"p{i}" for i, b in enumerate(self.params)}
        out.update(extra or {})
        return out

    def render(self) -> str:
        k = self.k
        sig = ", ".join(f"p{i}" for i in range(len(self.params)))
        lines = ["@triton.jit", f"def {k.name}({sig}, XNUMEL, RNUMEL, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):"]
        reds = [s for p in k.phases for s in p if isinstance(s, Reduce)]
        if not reds and not k.finals:
            self._pointwise(lines)
        else:
            self._reduction(lines)
        return "\n".join(lines)

    def _pointwise(self, lines):
        k, ind = self.k, "    "
        lines.append(f"{ind}xindex = (tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)).to(tl.int64)")
        lines.append(f"{ind}xmask = xindex < XNUMEL")
        lines.append(f"{ind}zero = tl.zeros([XBLOCK], tl.int64)")
        _unflatten(lines, ind, "xindex", "x", k.xsizes)
        printer = TritonPrinter(k.ranges, self.names(), "zero", "xmask")
        self._stores(lines, ind, printer, k.phases[0] if k.phases else [], "xmask", {})

    def _stores(self, lines, ind, printer, stmts, mask, bound):
        printer.emit([x for s in stmts for x in (s.index, s.value)], lines, ind, bound)
        for s in stmts:
            lines.append(f"{ind}tl.store({printer.names[s.buf]} + ({bound[s.index]} + {printer.zero}), "
                         f"{bound[s.value]}, mask={mask})")

    def _reduction(self, lines):
        k, ind = self.k, "    "
        lines.append(f"{ind}xindex = (tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]).to(tl.int64)")
        lines.append(f"{ind}xmask = xindex < XNUMEL")
        lines.append(f"{ind}rbase = tl.arange(0, RBLOCK)[None, :].to(tl.int64)")
        lines.append(f"{ind}zrow = tl.zeros([XBLOCK, 1], tl.int64)")
        lines.append(f"{ind}ztile = tl.zeros([XBLOCK, RBLOCK], tl.int64)")
        _unflatten(lines, ind, "xindex", "x", k.xsizes)
        names: dict = {}
        for phase in k.phases:
            reds = [s for s in phase if isinstance(s, Reduce)]
            for s in reds:
                init = {"sum": "0", "max": "-INF", "min": "INF"}[s.rtype] if s.value.dtype.is_floating_point else (
                    {"sum": "0", "max": str(torch.iinfo(s.value.dtype).min) if s.value.dtype != torch.bool else "0",
                     "min": str(torch.iinfo(s.value.dtype).max) if s.value.dtype != torch.bool else "1"}[s.rtype])
                lines.append(f"{ind}tile_{s.acc} = tl.full([XBLOCK, RBLOCK], {init}, {TL[s.value.dtype]})")
            lines.append(f"{ind}for roff in range(0, RNUMEL, RBLOCK):")
            body = ind + "    "
            lines.append(f"{body}rindex = roff + rbase")
            lines.append(f"{body}tmask = xmask & (rindex < RNUMEL)")
            _unflatten(lines, body, "rindex", "r", k.rsizes)
            printer = TritonPrinter(k.ranges, self.names(names), "ztile", "tmask")
            bound: dict = {}
            printer.emit([s.value for s in reds], lines, body, bound)
            for s in reds:
                v, acc = bound[s.value], f"tile_{s.acc}"
                combine = {"sum": f"{acc} + {v}",
                           "max": f"tl.maximum({acc}, {v}{', propagate_nan=tl.PropagateNan.ALL' if s.value.dtype.is_floating_point else ''})",
                           "min": f"tl.minimum({acc}, {v}{', propagate_nan=tl.PropagateNan.ALL' if s.value.dtype.is_floating_point else ''})"}[s.rtype]
                lines.append(f"{body}{acc} = tl.where(tmask, {combine}, {acc})")
            self._stores(lines, body, printer, [s for s in phase if isinstance(s, Store)], "tmask", bound)
            for s in reds:
                fn = {"sum": "tl.sum", "max": "tl.max", "min": "tl.min"}[s.rtype]
                lines.append(f"{ind}{s.acc} = {fn}(tile_{s.acc}, 1)[:, None]")
                if s.rtype != "sum" and s.value.dtype.is_floating_point:  # tl.max may drop NaN
                    lines.append(f"{ind}{s.acc} = tl.where(tl.sum((tile_{s.acc} != tile_{s.acc}).to(tl.int32), 1)"
                                 f"[:, None] > 0, NAN, {s.acc})")
                names[s.acc] = s.acc
        if k.finals:
            printer = TritonPrinter(k.ranges, self.names(names), "zrow", "xmask")
            self._stores(lines, ind, printer, k.finals, "xmask", {})


def _configs(kernel: Kernel, inplace: bool) -> list[tuple[int, int, int]]:
    """(XBLOCK, RBLOCK, num_warps) candidates for the autotuner."""
    reduction = any(isinstance(s, Reduce) for p in kernel.phases for s in p) or kernel.finals
    if os.environ.get("TRITON_INTERPRET") == "1":
        # The interpreter runs every program in Python (~2 ms each, whatever its block size): few
        # large ones. Rows of reductions still come several to a tile, edges still masked.
        return [(64, 256, 4)] if reduction else [(16384, 1, 4)]
    if not reduction:
        configs = [(1024, 1, 4), (2048, 1, 8), (4096, 1, 8)]
    else:
        rn = prod(kernel.rsizes)
        configs = [(1, min(4096, 1 << max(rn - 1, 1).bit_length()), 8), (4, 512, 8), (8, 128, 4), (16, 64, 4)]
    return configs[:1] if inplace else configs


def render_module(segments: list[list[Kernel]], params: dict, buffers, origins: dict) -> str:
    out = ["# Generated by FuseLens (Triton backend).", HEADER]
    for si, seg in enumerate(segments):
        calls = []
        for k in seg:
            writes = {s.buf for p in k.phases for s in p if isinstance(s, Store)}
            reads = {n.arg for e in k.exprs() for n in walk([e]) if n.op == "load"}
            configs = _configs(k, bool(writes & reads))
            out.append("\n".join("# " + line[3:] for line in provenance(k, origins).splitlines()))
            cfg = ", ".join(f"triton.Config({{'XBLOCK': {x}, 'RBLOCK': {r}}}, num_warps={w})" for x, r, w in configs)
            out.append(f"@triton.autotune(configs=[{cfg}], key=['XNUMEL', 'RNUMEL'])")
            out.append(TritonKernelWriter(k, params[k.name], buffers).render())
            slots = segment_params(seg, params)
            args = ", ".join(f"ts[{slots.index(b)}]" for b in params[k.name])
            xn, rn = prod(k.xsizes), prod(k.rsizes)
            calls.append(f"    {k.name}[lambda m: (triton.cdiv({xn}, m['XBLOCK']),)]({args}, {xn}, {rn})")
        out.append(f"def seg{si}(ts):\n" + "\n".join(calls) + "\n")
    return "\n\n".join(out)


def load_module(source: str):
    """Import generated source from a file (triton.jit reads kernels' source through inspect)."""
    key = hashlib.sha256(source.encode()).hexdigest()[:32]
    name = f"fuselens_triton_{key}"
    if name in sys.modules:
        return sys.modules[name]
    path = cache_dir() / f"{name}.py"
    if not path.exists() or path.read_text() != source:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(source)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[name] = module
    return module

