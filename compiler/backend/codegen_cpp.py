"""Loop-level IR -> C++/OpenMP source (one translation unit per graph, no system headers).

Loops: outer loops in parallel (`omp parallel for`), the innermost one `omp simd`. Math functions
are declared `omp declare simd` so g++ calls glibc's vector math library (libmvec) inside vector
loops (float exp is an inline function of our own); no <cmath> keeps a compile near 0.1 s.
Expressions and the math library: `cpp_expr.py`; reduction kernels: `codegen_cpp_reduce.py`.
"""
from __future__ import annotations

from .codegen_cpp_reduce import PARALLEL_MIN, ReductionWriter, broadcast_caches, outer_mode
from .cpp_expr import CTYPES, LIBMVEC, PRELUDE, ExprPrinter, declare_math
from .ir import prod, walk
from .scheduler import Kernel, Reduce, Store

__all__ = ["ExprPrinter", "LIBMVEC", "kernel_params", "provenance", "render_unit", "segment_params"]

# g++ -O3 unrolls a pass's block loop by 2 and jams the copies: good for cheap bodies (sums stream
# ~8% faster), but a costly body (exp) then runs out of vector registers and keeps its lane
# accumulators on the stack: log_softmax / softmax 10% slower. Such kernels opt out.
NO_JAM = '__attribute__((optimize("no-loop-unroll-and-jam"))) '


class KernelWriter:
    def __init__(self, kernel: Kernel, params: list[str], buffers):
        self.k, self.params, self.buffers = kernel, params, buffers
        self.math_used: set = set()
        self.lines: list[str] = []
        self.no_jam = False  # set by the reduction writer: a lane pass computes costly values

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
        else:
            ReductionWriter(self, outer_mode(k)).render()
        if self.no_jam:
            self.lines[0] = NO_JAM + self.lines[0]
        self.lines.append("}")
        return "\n".join(self.lines)

    def loops(self, prefix, sizes, indent, pragma_inner="#pragma omp simd", outer_pragma=None):
        """Open nested loops; returns the body indentation."""
        for d, s in enumerate(sizes):
            if d == 0 and outer_pragma:
                self.lines.append(indent + outer_pragma)
            if d == len(sizes) - 1 and pragma_inner and not (d == 0 and outer_pragma):
                self.lines.append(indent + pragma_inner)
            self.lines.append(f"{indent}for (i64 {prefix}{d} = 0; {prefix}{d} < {s}LL; {prefix}{d}++) {{")
            indent += "  "
        return indent

    def close(self, n, indent):
        for _ in range(n):
            indent = indent[:-2]
            self.lines.append(indent + "}")
        return indent

    def stores(self, stmts, printer, indent, bound):
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
        inner, bound = f"x{len(k.xsizes) - 1}", {}
        for i, e in enumerate(broadcast_caches(k)):  # before the loops: once, not once per row
            self.lines.append(f"  {CTYPES[e.dtype]} bc{i}[{k.xsizes[-1]}];")
            self.lines.append("  #pragma omp simd")
            self.lines.append(f"  for (i64 {inner} = 0; {inner} < {k.xsizes[-1]}LL; {inner}++) {{")
            (value,) = printer.emit([e], self.lines, "    ", {})
            self.lines.append(f"    bc{i}[{inner}] = {value};")
            self.lines.append("  }")
            bound[e] = f"bc{i}[{inner}]"
        indent = self.loops("x", k.xsizes, "  ", outer_pragma=outer)
        self.stores(k.phases[0] if k.phases else [], printer, indent, bound)
        self.close(len(k.xsizes), indent)


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
    return "\n".join(["// Generated by FuseLens (C++/OpenMP backend).", PRELUDE, declare_math(math_used), ""]
                     + bodies) + "\n"


def segment_params(seg: list[Kernel], params: dict) -> list[str]:
    out: list = []
    for k in seg:
        out += [b for b in params[k.name] if b not in out]
    return out
