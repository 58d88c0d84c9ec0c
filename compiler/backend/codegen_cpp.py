"""Loop-level IR -> C++/OpenMP source (one translation unit per graph, no system headers).

Loops: outer loops in parallel (`omp parallel for`), the innermost one `omp simd`. Math functions
are declared `omp declare simd` so g++ calls glibc's vector math library (libmvec) inside vector
loops; no <cmath> keeps a compile near 0.1 s. Reductions use scalar accumulators with OpenMP
reduction clauses when the reduced axis is the contiguous one ("inner"), and a block of XB row
accumulators vectorized across rows when it is not ("outer", e.g. a sum over dim 0).
"""
from __future__ import annotations

import math
import os

import torch

from .ir import INDEX, Expr, prod, walk
from .scheduler import Kernel, Reduce, Store
from .simplify import _linear, bounds

CTYPES = {torch.float32: "float", torch.float64: "double", torch.int64: "i64", torch.int32: "i32",
          torch.int16: "i16", torch.int8: "i8", torch.uint8: "u8", torch.bool: "bool"}
LIBMVEC = any(os.path.exists(p) for p in ("/lib/x86_64-linux-gnu/libmvec.so.1", "/usr/lib64/libmvec.so.1",
                                          "/lib64/libmvec.so.1"))
PARALLEL_MIN = 1 << 15   # elements: below this, threads cost more than they save
OUTER_BLOCK = 32         # rows per block in "outer" reductions
LANES = 64               # partial accumulators per reduction over a contiguous axis (4 AVX-512 vectors)

PRELUDE = r"""typedef long long i64; typedef int i32; typedef short i16; typedef signed char i8;
typedef unsigned char u8;
static int fl_err = 0;
extern "C" int fl_take_error(void) { int e = fl_err; fl_err = 0; return e; }
static inline i64 fl_checkidx(i64 v, i64 n) {
  v = v < 0 ? v + n : v;
  if (v < 0 || v >= n) { __atomic_store_n(&fl_err, 1, __ATOMIC_RELAXED); v = 0; }
  return v;
}
template <class T> static inline T fl_max(T a, T b) { return (a != a || a > b) ? a : b; }
template <class T> static inline T fl_min(T a, T b) { return (a != a || a < b) ? a : b; }
static inline i64 fl_floordiv(i64 a, i64 b) { i64 q = a / b; return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q; }
static inline i64 fl_mod(i64 a, i64 b) { i64 r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
"""

# op -> (float32 name, float64 name) of C math functions; the vectorizable ones are in libmvec.
MATH = {"exp": ("expf", "exp"), "exp2": ("exp2f", "exp2"), "log": ("logf", "log"), "log2": ("log2f", "log2"),
        "log1p": ("log1pf", "log1p"), "expm1": ("expm1f", "expm1"), "tanh": ("tanhf", "tanh"),
        "erf": ("erff", "erf"), "sin": ("sinf", "sin"), "cos": ("cosf", "cos"), "tan": ("tanf", "tan"),
        "atan": ("atanf", "atan"), "pow": ("powf", "pow"), "atan2": ("atan2f", "atan2"), "fmod": ("fmodf", "fmod")}
BUILTIN = {"sqrt": "__builtin_sqrt", "abs": "__builtin_fabs", "floor": "__builtin_floor", "ceil": "__builtin_ceil",
           "trunc": "__builtin_trunc", "round": "__builtin_nearbyint"}
INFIX = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
         "eq": "==", "ne": "!=", "and": "&&", "or": "||", "xor": "!="}
INIT = {"sum": lambda t: "0", "max": lambda t: _lowest(t, True), "min": lambda t: _lowest(t, False)}


def _lowest(dtype, for_max):
    if dtype.is_floating_point:
        return "-__builtin_inf()" if for_max else "__builtin_inf()"
    if dtype == torch.bool:
        return "false" if for_max else "true"
    info = torch.iinfo(dtype)
    return f"(({CTYPES[dtype]}){info.min if for_max else info.max}LL)" if dtype != torch.int64 else (
        "(-9223372036854775807LL - 1)" if for_max else "9223372036854775807LL")


def literal(value, dtype) -> str:
    if dtype == torch.bool:
        return "true" if value else "false"
    if dtype.is_floating_point:
        suffix = "f" if dtype == torch.float32 else ""
        if math.isnan(value):
            return f"__builtin_nan{suffix}(\"\")"
        if math.isinf(value):
            return f"{'-' if value < 0 else ''}__builtin_inf{suffix}()"
        return f"{float(value)!r}{suffix}".replace("inf", "INF")
    return f"{int(value)}LL" if dtype == INDEX else f"(({CTYPES[dtype]}){int(value)})"


class ExprPrinter:
    """Renders expressions as C++ with common sub-expressions bound to locals (CSE at emission)."""

    def __init__(self, ranges, names, math_used):
        self.ranges, self.names, self.math_used = ranges, names, math_used
        self.bounds_memo: dict = {}

    def leaf(self, e: Expr):
        if e.op == "const":
            return literal(e.arg, e.dtype)
        if e.op == "var":
            return self.names.get(e.arg, e.arg)
        if e.op == "acc":
            return self.names.get(e.arg, e.arg)
        return None

    def emit(self, roots, lines, indent, bound):
        """Emit temporaries for the nodes of `roots` not yet in `bound`; returns their C names."""
        for e in walk(roots):
            if e in bound:
                continue
            text = self.leaf(e)
            if text is None:
                text = self.render(e, [bound[a] for a in e.args])
                name = f"t{len(bound)}"
                lines.append(indent + self.declare(name, text, e))
                text = name
            bound[e] = text
        return [bound[r] for r in roots]

    def declare(self, name, text, e) -> str:
        return f"const {CTYPES[e.dtype]} {name} = {text};"

    def nonneg(self, e):
        b = bounds(e, self.ranges, self.bounds_memo)
        return b is not None and b[0] >= 0

    def render(self, e: Expr, a: list[str]) -> str:
        op, t = e.op, e.dtype
        arg_t = e.args[0].dtype if e.args else t
        fsuf = "f" if arg_t == torch.float32 else ""
        if op == "load":
            return f"{self.names[e.arg]}[{a[0]}]"
        if op == "cast":
            if t == torch.bool:
                return f"({a[0]} != 0)"
            return f"(({CTYPES[t]}){a[0]})"
        if op in INFIX:
            return f"({a[0]} {INFIX[op]} {a[1]})"
        if op == "floordiv":
            both = self.nonneg(e.args[0]) and self.nonneg(e.args[1])
            return f"({a[0]} / {a[1]})" if both else f"fl_floordiv({a[0]}, {a[1]})"
        if op == "mod":
            both = self.nonneg(e.args[0]) and self.nonneg(e.args[1])
            return f"({a[0]} % {a[1]})" if both else f"fl_mod({a[0]}, {a[1]})"
        if op in ("max", "min"):
            if t.is_floating_point:
                return f"fl_{op}<{CTYPES[t]}>({a[0]}, {a[1]})"
            cmp = ">" if op == "max" else "<"
            return f"({a[0]} {cmp} {a[1]} ? {a[0]} : {a[1]})"
        if op == "where":
            return f"({a[0]} ? {a[1]} : {a[2]})"
        if op == "neg":
            return f"(-{a[0]})"
        if op == "not":
            return f"(!{a[0]})"
        if op == "bitnot":
            return f"(~{a[0]})"
        if op == "isnan":
            return f"({a[0]} != {a[0]})"
        if op == "sign":
            return f"(({CTYPES[t]})(({a[0]} > 0) - ({a[0]} < 0)))"
        if op == "checkidx":
            return f"fl_checkidx({a[0]}, {e.arg}LL)"
        one = literal(1.0, t) if t.is_floating_point else "1"
        if op == "reciprocal":
            return f"({one} / {a[0]})"
        if op == "rsqrt":
            return f"({one} / __builtin_sqrt{fsuf}({a[0]}))"
        if op == "sigmoid":
            self.math_used.add(MATH["exp"][0 if fsuf else 1])
            return f"({one} / ({one} + exp{fsuf}(-{a[0]})))"
        if not t.is_floating_point and op in ("abs",):
            return f"({a[0]} < 0 ? -{a[0]} : {a[0]})"
        if op in BUILTIN:
            return f"{BUILTIN[op]}{fsuf}({a[0]})"
        if op in MATH:
            if not arg_t.is_floating_point:  # integer pow: compute in double
                self.math_used.add("pow")
                return f"(({CTYPES[t]})pow((double){a[0]}, (double){a[1]}))"
            fn = MATH[op][0 if fsuf else 1]
            self.math_used.add(fn)
            return f"{fn}({', '.join(a)})"
        raise NotImplementedError(f"C++ codegen for {op}")


FLOAT_MATH = {v[0] for v in MATH.values()}


def _declare_math(names) -> str:
    out = []
    for fn in sorted(names):
        ty = "float" if fn in FLOAT_MATH else "double"
        nargs = 2 if fn in ("pow", "powf", "atan2", "atan2f", "fmod", "fmodf") else 1
        simd = "#pragma omp declare simd notinbranch\n" if LIBMVEC and not fn.startswith("fmod") else ""
        out.append(f'{simd}extern "C" {ty} {fn}({", ".join([ty] * nargs)});')
    return "\n".join(out)


def _outer_mode(kernel: Kernel) -> bool:
    """True when the contiguous axis is a kept (row) axis rather than the reduced one."""
    if not kernel.rsizes or not kernel.xsizes or kernel.xsizes[-1] < 8:
        return False
    xlast, rlast = f"x{len(kernel.xsizes) - 1}", f"r{len(kernel.rsizes) - 1}"
    unit_x = unit_r = 0
    for e in kernel.exprs():
        for n in walk([e]):
            if n.op == "load":
                terms = {t.arg: k for t, k in _linear(n.args[0])[0].items() if t.op == "var"}
                unit_x += terms.get(xlast) == 1
                unit_r += terms.get(rlast) == 1
    return unit_x > unit_r


class KernelWriter:
    def __init__(self, kernel: Kernel, params: list[str], buffers):
        self.k, self.params, self.buffers = kernel, params, buffers
        self.math_used: set = set()
        self.lines: list[str] = []

    def signature(self, fname):
        """`static` keeps the kernels internal: only the segment entry points are exported."""
        written = {s.buf for p in self.k.phases for s in p if isinstance(s, Store)} | {s.buf for s in self.k.finals}
        args = []
        for i, b in enumerate(self.params):
            ct = CTYPES[self.buffers[b].dtype]
            args.append(f"{'' if b in written else 'const '}{ct}* __restrict__ p{i}")
        return f'static void {fname}({", ".join(args)})'

    def names(self, extra=None):
        out = {b: f"p{i}" for i, b in enumerate(self.params)}
        out.update(extra or {})
        return out

    def render(self, fname: str) -> str:
        k = self.k
        self.lines = [self.signature(fname) + " {"]
        if not any(isinstance(s, Reduce) for p in k.phases for s in p) and not k.finals:
            self._pointwise()
        elif _outer_mode(k):
            self._reduction(outer=True)
        else:
            self._reduction(outer=False)
        self.lines.append("}")
        return "\n".join(self.lines)

    def _loops(self, prefix, sizes, indent, pragma_inner="#pragma omp simd", outer_pragma=None):
        """Open nested loops; returns the body indentation."""
        for d, s in enumerate(sizes):
            if d == 0 and outer_pragma:
                self.lines.append(indent + outer_pragma)
            if d == len(sizes) - 1 and pragma_inner and not (d == 0 and outer_pragma):
                self.lines.append(indent + pragma_inner)
            self.lines.append(f"{indent}for (i64 {prefix}{d} = 0; {prefix}{d} < {s}LL; {prefix}{d}++) {{")
            indent += "  "
        return indent

    def _close(self, n, indent):
        for _ in range(n):
            indent = indent[:-2]
            self.lines.append(indent + "}")
        return indent

    def _stores(self, stmts, printer, indent, bound):
        roots = []
        for s in stmts:
            roots += [s.index, s.value]
        printer.emit(roots, self.lines, indent, bound)
        for s in stmts:
            self.lines.append(f"{indent}{printer.names[s.buf]}[{bound[s.index]}] = {bound[s.value]};")

    def _pointwise(self):
        k = self.k
        printer = ExprPrinter(k.ranges, self.names(), self.math_used)
        total = prod(k.xsizes)
        par = f"if({total} > {PARALLEL_MIN})" if total > 1 else "if(0)"
        if len(k.xsizes) == 1:
            outer = f"#pragma omp parallel for simd schedule(static) {par}"
        elif len(k.xsizes) > 1:
            collapse = f" collapse({len(k.xsizes) - 1})" if len(k.xsizes) > 2 else ""
            outer = f"#pragma omp parallel for schedule(static){collapse} {par}"
        else:
            outer = None
        indent = self._loops("x", k.xsizes, "  ", outer_pragma=outer)
        self._stores(k.phases[0] if k.phases else [], printer, indent, {})
        self._close(len(k.xsizes), indent)

    def _reduction(self, outer: bool):
        k = self.k
        nx, rtotal = prod(k.xsizes), prod(k.rsizes)
        split_r = nx < 4 and rtotal >= PARALLEL_MIN  # few rows: parallelize inside each pass
        xs = list(k.xsizes)
        block = OUTER_BLOCK if outer else 1
        if outer:
            last = xs[-1]
            xs[-1] = -(-last // block)
        indent = "  "
        if xs:
            collapse = f" collapse({len(xs)})" if len(xs) > 1 else ""
            par = "if(0)" if split_r else f"if({nx * rtotal} > {PARALLEL_MIN})"
            self.lines.append(f"{indent}#pragma omp parallel for schedule(static){collapse} {par}")
            for d, s in enumerate(xs):
                name = f"xb{d}" if (outer and d == len(xs) - 1) else f"x{d}"
                self.lines.append(f"{indent}for (i64 {name} = 0; {name} < {s}LL; {name}++) {{")
                indent += "  "
        names = {}
        xi = ""
        if outer:
            d = len(xs) - 1
            self.lines.append(f"{indent}const i64 xo = xb{d} * {block}LL;")
            self.lines.append(f"{indent}const i64 nxi = {k.xsizes[-1]}LL - xo < {block}LL ? {k.xsizes[-1]}LL - xo : {block}LL;")
            names[f"x{d}"] = "(xo + xi)"
            xi = "[xi]"
        accs = [s for p in k.phases for s in p if isinstance(s, Reduce)]
        for s in accs:
            names[s.acc] = s.acc + xi
            ct = CTYPES[s.value.dtype]
            size = f"[{block}]" if outer else ""
            self.lines.append(f"{indent}{ct} {s.acc}{size};")
            if s.rtype in ("max", "min") and s.value.dtype.is_floating_point:
                self.lines.append(f"{indent}bool nan_{s.acc}{size};")
        for phase in k.phases:
            self._phase(phase, names, indent, outer, split_r)
        if k.finals:
            printer = ExprPrinter(k.ranges, self.names(names), self.math_used)
            body = indent
            if outer:
                self.lines.append(f"{indent}#pragma omp simd")
                self.lines.append(f"{indent}for (i64 xi = 0; xi < nxi; xi++) {{")
                body += "  "
            self._stores(k.finals, printer, body, {})
            if outer:
                self.lines.append(indent + "}")
        self._close(len(xs), indent)

    def _phase(self, phase, names, indent, outer, split_r):
        k = self.k
        reds = [s for s in phase if isinstance(s, Reduce)]
        stores = [s for s in phase if isinstance(s, Store)]
        if reds and not outer and not split_r and k.rsizes and k.rsizes[-1] >= LANES:
            return self._lane_phase(reds, stores, names, indent)
        nanred = [s for s in reds if s.rtype in ("max", "min") and s.value.dtype.is_floating_point]
        for s in reds:
            init = INIT[s.rtype](s.value.dtype)
            if outer:
                self.lines.append(f"{indent}for (i64 xi = 0; xi < {OUTER_BLOCK}; xi++) {{ {s.acc}[xi] = {init}; "
                                  + (f"nan_{s.acc}[xi] = false; " if s in nanred else "") + "}")
            else:
                self.lines.append(f"{indent}{s.acc} = {init};")
                if s in nanred:
                    self.lines.append(f"{indent}nan_{s.acc} = false;")
        clauses = ""
        if not outer:
            ops = {"sum": "+", "max": "max", "min": "min"}
            clauses = "".join(f" reduction({ops[s.rtype]}:{s.acc})" for s in reds)
            clauses += "".join(f" reduction(|:nan_{s.acc})" for s in nanred)
        rs = k.rsizes
        inner_pragma = None if outer else f"#pragma omp simd{clauses}"
        outer_pragma = f"#pragma omp parallel for simd schedule(static){clauses}" if split_r and len(rs) == 1 else (
            f"#pragma omp parallel for schedule(static){clauses}" if split_r else None)
        body = self._loops("r", rs, indent, pragma_inner=inner_pragma, outer_pragma=outer_pragma)
        if outer:
            self.lines.append(f"{body}#pragma omp simd")
            self.lines.append(f"{body}for (i64 xi = 0; xi < nxi; xi++) {{")
            body += "  "
        printer = ExprPrinter(k.ranges, self.names(names), self.math_used)
        bound: dict = {}
        printer.emit([s.value for s in reds], self.lines, body, bound)
        for s in reds:
            acc, v = names[s.acc], bound[s.value]
            if s.rtype == "sum":
                self.lines.append(f"{body}{acc} += {v};" if s.value.dtype != torch.bool else f"{body}{acc} |= {v};")
            else:
                cmp = ">" if s.rtype == "max" else "<"
                self.lines.append(f"{body}{acc} = {v} {cmp} {acc} ? {v} : {acc};")
                if s in nanred:
                    self.lines.append(f"{body}nan_{acc} |= ({v} != {v});")
        self._stores(stores, printer, body, bound)
        if outer:
            body = body[:-2]
            self.lines.append(body + "}")
        self._close(len(rs), body)
        for s in nanred:
            nanv = "__builtin_nanf(\"\")" if s.value.dtype == torch.float32 else "__builtin_nan(\"\")"
            if outer:
                self.lines.append(f"{indent}for (i64 xi = 0; xi < nxi; xi++) if (nan_{s.acc}[xi]) {s.acc}[xi] = {nanv};")
            else:
                self.lines.append(f"{indent}if (nan_{s.acc}) {s.acc} = {nanv};")


    def _lane_phase(self, reds, stores, names, indent):
        """A pass over a long contiguous reduced axis with LANES independent partial accumulators
        per reduction: one vector accumulator would serialize on the add latency."""
        k, rs = self.k, self.k.rsizes
        last, n = len(rs) - 1, rs[-1]
        lane_names = dict(names)
        for s in reds:
            ct, init = CTYPES[s.value.dtype], INIT[s.rtype](s.value.dtype)
            self.lines.append(f"{indent}{ct} {s.acc}_v[{LANES}];")
            self.lines.append(f"{indent}for (i64 ri = 0; ri < {LANES}; ri++) {s.acc}_v[ri] = {init};")
            lane_names[s.acc] = f"{s.acc}_v[ri]"
        body = self._loops("r", rs[:-1], indent, pragma_inner=None)
        self.lines.append(f"{body}for (i64 rb = 0; rb < {n}LL; rb += {LANES}) {{")
        self.lines.append(f"{body}  const i64 rl = {n}LL - rb < {LANES} ? {n}LL - rb : {LANES};")
        self.lines.append(f"{body}  #pragma omp simd")
        self.lines.append(f"{body}  for (i64 ri = 0; ri < rl; ri++) {{")
        inner = body + "    "
        self.lines.append(f"{inner}const i64 r{last} = rb + ri;")
        printer = ExprPrinter(k.ranges, self.names(names), self.math_used)
        bound: dict = {}
        printer.emit([s.value for s in reds], self.lines, inner, bound)
        for s in reds:
            acc, v = lane_names[s.acc], bound[s.value]
            if s.rtype == "sum":
                self.lines.append(f"{inner}{acc} += {v};")
            else:
                cmp = ">" if s.rtype == "max" else "<"
                nan = f"{v} != {v} || " if s.value.dtype.is_floating_point else ""
                self.lines.append(f"{inner}{acc} = ({nan}{v} {cmp} {acc}) ? {v} : {acc};")
        self._stores(stores, printer, inner, bound)
        self.lines.append(f"{body}  }}")
        self.lines.append(f"{body}}}")
        self._close(len(rs) - 1, body)
        for s in reds:
            init = INIT[s.rtype](s.value.dtype)
            combine = (f"{s.acc} += {s.acc}_v[ri]" if s.rtype == "sum" else
                       f"{s.acc} = fl_{s.rtype}<{CTYPES[s.value.dtype]}>({s.acc}, {s.acc}_v[ri])")
            self.lines.append(f"{indent}{s.acc} = {init};")
            self.lines.append(f"{indent}for (i64 ri = 0; ri < {LANES}; ri++) {combine};")


def kernel_params(kernel: Kernel) -> list[str]:
    """Buffers a kernel touches: reads first, then writes, each once, in first-use order."""
    reads, writes = [], []
    for e in kernel.exprs():
        for n in walk([e]):
            if n.op == "load" and n.arg not in reads:
                reads.append(n.arg)
    for s in [s for p in kernel.phases for s in p if isinstance(s, Store)] + kernel.finals:
        if s.buf not in writes:
            writes.append(s.buf)
    return [b for b in reads if b not in writes] + writes


def provenance(kernel: Kernel, origins: dict) -> str:
    lines = [f"// kernel {kernel.name}: loops x={kernel.xsizes} r={kernel.rsizes}"]
    for name in kernel.origins:
        op, loc = origins.get(name, (name, ""))
        lines.append(f"//   {op:<40} {loc}")
    return "\n".join(lines)


def _entry(name: str, slots: list[str], calls: list, buffers) -> str:
    """`extern "C" void name(void* a0, ...)`: calls each (kernel, its params) on those pointers."""
    body = []
    for fname, ps in calls:
        casts = ", ".join(f"({CTYPES[buffers[b].dtype]}*)a{slots.index(b)}" for b in ps)
        body.append(f"  {fname}({casts});")
    args = ", ".join(f"void* a{i}" for i in range(len(slots)))
    return f'extern "C" void {name}({args}) {{\n' + "\n".join(body) + "\n}"


def render_unit(segments: list[list[Kernel]], params: dict, buffers, origins: dict) -> str:
    """One translation unit for a graph. Each run of consecutive kernels (a segment) is exported as
    `seg{i}(void* a0, ...)` (one pointer per buffer), so the runtime makes one foreign call per
    segment; each kernel is also exported on its own under its name, for per-kernel profiles."""
    math_used: set = set()
    bodies = []
    for si, seg in enumerate(segments):
        calls = []
        for k in seg:
            w = KernelWriter(k, params[k.name], buffers)
            fname = f"{k.name}_impl"
            bodies.append(provenance(k, origins) + "\n" + w.render(fname))
            bodies.append(_entry(k.name, params[k.name], [(fname, params[k.name])], buffers))
            math_used |= w.math_used
            calls.append((fname, params[k.name]))
        bodies.append(_entry(f"seg{si}", segment_params(seg, params), calls, buffers))
    return "\n".join(["// Generated by FuseLens (C++/OpenMP backend).", PRELUDE, _declare_math(math_used), ""]
                     + bodies) + "\n"


def segment_params(seg: list[Kernel], params: dict) -> list[str]:
    out: list = []
    for k in seg:
        out += [b for b in params[k.name] if b not in out]
    return out
