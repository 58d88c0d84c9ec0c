"""C++ for reduction kernels: a loop over rows (`x`, in parallel) around one pass over the reduced
axis (`r`) per phase, then the per-row stores.

- "inner" (the reduced axis is the contiguous one): each pass keeps LANES partial accumulators
  (four AVX-512 vectors: one would serialize on the add latency), folded pairwise at the end.
  A value that an earlier pass computed and a later pass needs again (softmax's `exp(x - max)`) is
  kept in a per-thread row buffer instead of being recomputed, when the row is short enough.
- "outer" (a kept axis is the contiguous one, e.g. `x.sum(0)`): a block of contiguous rows keeps a
  vector of accumulators; rows are read in order, each block a long unit-stride run.
- "split": few rows and a long reduction: each pass is a parallel loop with reduction clauses.
- "row split" (sums over a non-contiguous axis of a short row, e.g. `x.sum(0)` of a wide matrix):
  each thread sums its own range of rows into a full-width partial row, read fully in order;
  the partial rows are added at the end.
"""
from __future__ import annotations

import torch

from .cpp_expr import CTYPES, INIT, MATH, ExprPrinter
from .ir import INDEX, prod, walk
from .scheduler import Kernel, Reduce, Store
from .simplify import _linear

PARALLEL_MIN = 1 << 15   # elements: below this, threads cost more than they save
LANES = 64               # partial accumulators per reduction over a contiguous axis
OUTER_BLOCK = (32, 512)  # smallest and largest number of contiguous rows per "outer" block
ROW_CACHE_MAX = 16384    # elements: longest row kept in a per-thread buffer between passes
ROW_SPLIT_MAX = 8192     # elements: widest kept row summed per thread in "row split" mode
CHUNK = 64               # rows summed into a fresh partial before it joins the running sum
COSTLY = set(MATH) | {"sigmoid", "rsqrt", "sqrt", "truediv"}
NAN = {torch.float32: '__builtin_nanf("")', torch.float64: '__builtin_nan("")'}
# float max/min lanes: the type of `fl_nanacc`'s |bits| accumulator and the bits of inf (NaN above)
NANBITS = {torch.float32: ("unsigned", "0x7f800000u"), torch.float64: ("unsigned long long", "0x7ff0000000000000ULL")}


def outer_mode(kernel: Kernel) -> bool:
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


def outer_block(kernel: Kernel) -> int:
    """Rows per block: long contiguous runs, but at least 8 blocks to share among threads."""
    last, others = kernel.xsizes[-1], prod(kernel.xsizes[:-1])
    block = OUTER_BLOCK[0]
    while block * 2 <= min(last, OUTER_BLOCK[1]) and others * -(-last // (block * 2)) >= 8:
        block *= 2
    return block


def row_split(kernel: Kernel) -> bool:
    """One pass of sums over one long non-contiguous axis, into a short contiguous row."""
    if len(kernel.xsizes) != 1 or len(kernel.rsizes) != 1 or len(kernel.phases) != 1:
        return False
    phase = kernel.phases[0]
    return (kernel.xsizes[0] <= ROW_SPLIT_MAX and kernel.rsizes[0] >= 64
            and kernel.xsizes[0] * kernel.rsizes[0] > PARALLEL_MIN
            and all(isinstance(s, Reduce) and s.rtype == "sum" and s.value.dtype.is_floating_point for s in phase))


def _phase_roots(phase):
    return [x for s in phase for x in ((s.value,) if isinstance(s, Reduce) else (s.index, s.value))]


def _costs(roots) -> dict:
    cost: dict = {}
    for n in walk(roots):
        own = 8 if n.op in COSTLY else (0 if n.op in ("const", "var", "acc") else 1)
        cost[n] = own + sum(cost[a] for a in n.args)
    return cost


def broadcast_caches(kernel: Kernel) -> list:
    """Costly values of a pointwise kernel that depend on the innermost loop only (`row.exp()`
    broadcast over rows): computed once into a buffer before the loops, not once per row."""
    if len(kernel.xsizes) < 2 or kernel.xsizes[-1] > ROW_CACHE_MAX or not kernel.phases:
        return []
    inner = f"x{len(kernel.xsizes) - 1}"
    roots = _phase_roots(kernel.phases[0])
    cost = _costs(roots)
    free: dict = {}
    for n in walk(roots):
        free[n] = {n.arg} if n.op == "var" else set().union(*(free[a] for a in n.args))
    written = {s.buf for s in kernel.phases[0] if isinstance(s, Store)}
    chosen, stack, seen = [], list(roots), set()
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if n.dtype != INDEX and cost[n] >= 8 and free[n] == {inner} and not any(
                m.op == "load" and m.arg in written for m in walk([n])):
            chosen.append(n)
            continue
        stack.extend(n.args)
    return chosen


def row_caches(kernel: Kernel) -> list:
    """[(expr, first phase)]: costly values depending on r that a later phase computes again;
    the largest such sub-expressions, each computed once per element."""
    if len(kernel.rsizes) != 1 or kernel.rsizes[0] > ROW_CACHE_MAX or len(kernel.phases) < 2:
        return []
    first: dict = {}
    for q, phase in enumerate(kernel.phases):
        for n in walk(_phase_roots(phase)):
            first.setdefault(n, q)
    cost = _costs([x for p in kernel.phases for x in _phase_roots(p)])
    chosen: dict = {}
    for p, phase in enumerate(kernel.phases):
        stack = list(_phase_roots(phase))
        seen = set()
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            if (first[n] < p and n.dtype != INDEX and cost[n] >= 8
                    and any(v.op == "var" and v.arg == "r0" for v in walk([n]))):
                chosen.setdefault(n, first[n])
                continue
            stack.extend(n.args)
    return list(chosen.items())


class ReductionWriter:
    def __init__(self, w, outer: bool):
        """`w`: the KernelWriter (lines, names, loops and stores helpers)."""
        self.w, self.k, self.outer = w, w.k, outer
        self.lines = w.lines

    def render(self):
        if self.outer and row_split(self.k):
            return self._row_split()
        k, w = self.k, self.w
        nx, rtotal = prod(k.xsizes), prod(k.rsizes)
        self.split_r = nx < 4 and rtotal >= PARALLEL_MIN  # few rows: parallelize inside each pass
        xs = list(k.xsizes)
        self.block = outer_block(k) if self.outer else 1
        if self.outer:
            xs[-1] = -(-xs[-1] // self.block)
        indent = "  "
        if xs:
            collapse = f" collapse({len(xs)})" if len(xs) > 1 else ""
            par = "if(0)" if self.split_r else f"if({nx * rtotal} > {PARALLEL_MIN})"
            self.lines.append(f"{indent}#pragma omp parallel for schedule(static){collapse} {par}")
            for d, s in enumerate(xs):
                name = f"xb{d}" if (self.outer and d == len(xs) - 1) else f"x{d}"
                self.lines.append(f"{indent}for (i64 {name} = 0; {name} < {s}LL; {name}++) {{")
                indent += "  "
        names = {}
        xi = ""
        if self.outer:
            d, b = len(xs) - 1, self.block
            self.lines.append(f"{indent}const i64 xo = xb{d} * {b}LL;")
            self.lines.append(f"{indent}const i64 nxi = {k.xsizes[-1]}LL - xo < {b}LL ? {k.xsizes[-1]}LL - xo : {b}LL;")
            names[f"x{d}"] = "(xo + xi)"
            xi = "[xi]"
        for s in [s for p in k.phases for s in p if isinstance(s, Reduce)]:
            names[s.acc] = s.acc + xi
            size = f"[{self.block}]" if self.outer else ""
            self.lines.append(f"{indent}{CTYPES[s.value.dtype]} {s.acc}{size};")
            if s.rtype in ("max", "min") and s.value.dtype.is_floating_point:
                self.lines.append(f"{indent}bool nan_{s.acc}{size};")
        caches = [] if self.outer or self.split_r else row_caches(k)
        for i, (e, _) in enumerate(caches):
            self.lines.append(f"{indent}{CTYPES[e.dtype]} rc{i}[{k.rsizes[0]}];")
        for p, phase in enumerate(k.phases):
            saves = {e: f"rc{i}[r0]" for i, (e, q) in enumerate(caches) if q == p}
            loads = {e: f"rc{i}[r0]" for i, (e, q) in enumerate(caches) if q < p}
            self._phase(phase, names, indent, saves, loads)
        if k.finals:
            printer = ExprPrinter(k.ranges, w.names(names), w.math_used)
            body = indent
            if self.outer:
                self.lines.append(f"{indent}#pragma omp simd")
                self.lines.append(f"{indent}for (i64 xi = 0; xi < nxi; xi++) {{")
                body += "  "
            w.stores(k.finals, printer, body, {})
            if self.outer:
                self.lines.append(indent + "}")
        w.close(len(xs), indent)

    def _row_split(self):
        k, w = self.k, self.w
        nx, nr = k.xsizes[0], k.rsizes[0]
        reds = k.phases[0]
        names = {s.acc: f"{s.acc}[x0]" for s in reds}
        lines = self.lines
        for s in reds:
            ct = CTYPES[s.value.dtype]
            lines.append(f"  {ct}* {s.acc}_part = ({ct}*)__builtin_alloca(sizeof({ct}) * {nx}LL * omp_get_max_threads());")
        lines.append("  int parts = 1;")
        lines.append("  #pragma omp parallel")
        lines.append("  {")
        lines.append("    const int t = omp_get_thread_num(), nt = omp_get_num_threads();")
        lines.append("    if (t == 0) parts = nt;")
        for s in reds:
            lines.append(f"    {CTYPES[s.value.dtype]}* {s.acc} = {s.acc}_part + t * {nx}LL;")
            lines.append(f"    for (i64 x0 = 0; x0 < {nx}LL; x0++) {s.acc}[x0] = 0;")
        sums = [s for s in reds if s.rtype == "sum"]
        self._chunked_rows(sums, names, f"{nr}LL * t / nt", f"{nr}LL * (t + 1) / nt", "    ", "x0", f"{nx}LL", nx,
                           lambda body, accs: self._body(reds, [], names, accs, body, {}, {}, lanes=False))
        lines.append("  }")
        for s in reds:
            lines.append(f"  {CTYPES[s.value.dtype]}* {s.acc} = {s.acc}_part;")
            lines.append("  for (int t = 1; t < parts; t++)")
            lines.append("    #pragma omp simd")
            lines.append(f"    for (i64 x0 = 0; x0 < {nx}LL; x0++) {s.acc}[x0] += {s.acc}_part[t * {nx}LL + x0];")
        if k.finals:
            lines.append("  #pragma omp simd")
            lines.append(f"  for (i64 x0 = 0; x0 < {nx}LL; x0++) {{")
            w.stores(k.finals, ExprPrinter(k.ranges, w.names(names), w.math_used), "    ", {})
            lines.append("  }")

    def _chunked_rows(self, sums, names, lo, hi, indent, xv, xn, width, emit):
        """`for r0 in [lo, hi)` around a simd loop over `xv` < `xn` (`emit(body, accs)` writes one
        element); sums gather CHUNK rows in a fresh partial first, so each result adds about
        CHUNK + rows/CHUNK terms in sequence rather than all rows (torch sums pairwise)."""
        lines = self.lines
        accs = dict(names)
        accs.update({s.acc: f"{s.acc}_c[{xv}]" for s in sums})
        for s in sums:
            lines.append(f"{indent}{CTYPES[s.value.dtype]} {s.acc}_c[{width}];")
        lines.append(f"{indent}for (i64 rc = {lo}; rc < {hi}; rc += {CHUNK}) {{")
        lines.append(f"{indent}  const i64 re = rc + {CHUNK} < {hi} ? rc + {CHUNK} : {hi};")
        for s in sums:
            lines.append(f"{indent}  for (i64 {xv} = 0; {xv} < {width}; {xv}++) {s.acc}_c[{xv}] = 0;")
        lines.append(f"{indent}  for (i64 r0 = rc; r0 < re; r0++) {{")
        lines.append(f"{indent}    #pragma omp simd")
        lines.append(f"{indent}    for (i64 {xv} = 0; {xv} < {xn}; {xv}++) {{")
        emit(indent + "      ", accs)
        lines.append(f"{indent}    }}")
        lines.append(f"{indent}  }}")
        for s in sums:
            lines.append(f"{indent}  #pragma omp simd")
            lines.append(f"{indent}  for (i64 {xv} = 0; {xv} < {xn}; {xv}++) {s.acc}[{xv}] += {s.acc}_c[{xv}];")
        lines.append(f"{indent}}}")

    def _body(self, reds, stores, names, accs, body, saves, loads, lanes):
        """One element of a pass: its values, accumulator updates, row-cache saves and stores.
        Float max/min skip NaN (a plain compare-select, one vmaxps); lane accumulators keep the
        largest |bits| beside them (`fl_nanacc`, two integer ops, no compare), others set a flag
        (OpenMP's max/min ignore NaN)."""
        printer = ExprPrinter(self.k.ranges, self.w.names(names), self.w.math_used)
        bound: dict = dict(loads)
        printer.emit([s.value for s in reds] + list(saves), self.lines, body, bound)
        for e, slot in saves.items():
            self.lines.append(f"{body}{slot} = {bound[e]};")
        for s in reds:
            acc, v = accs[s.acc], bound[s.value]
            if s.rtype == "sum":
                self.lines.append(f"{body}{acc} += {v};" if s.value.dtype != torch.bool else f"{body}{acc} |= {v};")
            elif not lanes:
                cmp = ">" if s.rtype == "max" else "<"
                self.lines.append(f"{body}{acc} = {v} {cmp} {acc} ? {v} : {acc};")
                if s.value.dtype.is_floating_point:
                    self.lines.append(f"{body}nan_{acc} |= ({v} != {v});")
            else:
                cmp = ">" if s.rtype == "max" else "<"
                self.lines.append(f"{body}{acc} = {v} {cmp} {acc} ? {v} : {acc};")
                if s.value.dtype.is_floating_point:
                    nan = accs[f"nan_{s.acc}"]
                    self.lines.append(f"{body}{nan} = fl_nanacc({nan}, {v});")
        self.w.stores(stores, printer, body, bound)

    def _phase(self, phase, names, indent, saves, loads):
        rs = self.k.rsizes
        reds = [s for s in phase if isinstance(s, Reduce)]
        stores = [s for s in phase if isinstance(s, Store)]
        if reds and not self.outer and not self.split_r and rs and rs[-1] >= LANES:
            return self._lane_phase(reds, stores, names, indent, saves, loads)
        nanred = [s for s in reds if s.rtype in ("max", "min") and s.value.dtype.is_floating_point]
        for s in reds:
            init = INIT[s.rtype](s.value.dtype)
            if self.outer:
                self.lines.append(f"{indent}for (i64 xi = 0; xi < {self.block}; xi++) {{ {s.acc}[xi] = {init}; "
                                  + (f"nan_{s.acc}[xi] = false; " if s in nanred else "") + "}")
            else:
                self.lines.append(f"{indent}{s.acc} = {init};")
                if s in nanred:
                    self.lines.append(f"{indent}nan_{s.acc} = false;")
        clauses = ""
        if not self.outer:
            ops = {"sum": "+", "max": "max", "min": "min"}
            clauses = "".join(f" reduction({ops[s.rtype]}:{s.acc})" for s in reds)
            clauses += "".join(f" reduction(|:nan_{s.acc})" for s in nanred)
        inner_pragma = None if self.outer else f"#pragma omp simd{clauses}"
        outer_pragma = f"#pragma omp parallel for simd schedule(static){clauses}" if len(rs) == 1 else (
            f"#pragma omp parallel for schedule(static){clauses}")
        if self.outer and len(rs) == 1:
            self._chunked_rows([s for s in reds if s.rtype == "sum"], names, "0", f"{rs[0]}LL", indent, "xi", "nxi",
                               self.block, lambda body, accs: self._body(reds, stores, names, accs, body, saves,
                                                                          loads, lanes=False))
        else:
            body = self.w.loops("r", rs, indent, pragma_inner=inner_pragma,
                                outer_pragma=outer_pragma if self.split_r else None)
            if self.outer:
                self.lines.append(f"{body}#pragma omp simd")
                self.lines.append(f"{body}for (i64 xi = 0; xi < nxi; xi++) {{")
                body += "  "
            self._body(reds, stores, names, names, body, saves, loads, lanes=False)
            if self.outer:
                body = body[:-2]
                self.lines.append(body + "}")
            self.w.close(len(rs), body)
        for s in nanred:
            nanv = NAN[s.value.dtype]
            if self.outer:
                self.lines.append(f"{indent}for (i64 xi = 0; xi < nxi; xi++) if (nan_{s.acc}[xi]) {s.acc}[xi] = {nanv};")
            else:
                self.lines.append(f"{indent}if (nan_{s.acc}) {s.acc} = {nanv};")

    def _lane_phase(self, reds, stores, names, indent, saves, loads):
        """A pass with LANES partial accumulators per reduction (the last r loop in blocks of
        LANES, then the remainder), folded pairwise at the end."""
        rs = self.k.rsizes
        last, n = len(rs) - 1, rs[-1]
        if any(e.op in COSTLY for e in walk(_phase_roots(reds + stores), stop=loads)):
            self.w.no_jam = True
        accs = dict(names)
        nanred = [s for s in reds if s.rtype in ("max", "min") and s.value.dtype.is_floating_point]
        for s in reds:
            ct, init = CTYPES[s.value.dtype], INIT[s.rtype](s.value.dtype)
            self.lines.append(f"{indent}{ct} {s.acc}_v[{LANES}];")
            self.lines.append(f"{indent}for (i64 ri = 0; ri < {LANES}; ri++) {s.acc}_v[ri] = {init};")
            accs[s.acc] = f"{s.acc}_v[ri]"
            if s in nanred:
                self.lines.append(f"{indent}{NANBITS[s.value.dtype][0]} {s.acc}_n[{LANES}];")
                self.lines.append(f"{indent}for (i64 ri = 0; ri < {LANES}; ri++) {s.acc}_n[ri] = 0;")
                accs[f"nan_{s.acc}"] = f"{s.acc}_n[ri]"
        body = self.w.loops("r", rs[:-1], indent, pragma_inner=None)
        full, rest = n - n % LANES, n % LANES
        self.lines.append(f"{body}for (i64 rb = 0; rb < {full}LL; rb += {LANES}) {{")
        self.lines.append(f"{body}  #pragma omp simd")
        self.lines.append(f"{body}  for (i64 ri = 0; ri < {LANES}; ri++) {{")
        self.lines.append(f"{body}    const i64 r{last} = rb + ri;")
        self._body(reds, stores, names, accs, body + "    ", saves, loads, lanes=True)
        self.lines.append(f"{body}  }}")
        self.lines.append(f"{body}}}")
        if rest:  # the ragged end: the same body once more, over fewer lanes
            self.lines.append(f"{body}#pragma omp simd")
            self.lines.append(f"{body}for (i64 ri = 0; ri < {rest}; ri++) {{")
            self.lines.append(f"{body}  const i64 r{last} = {full}LL + ri;")
            self._body(reds, stores, names, accs, body + "  ", saves, loads, lanes=True)
            self.lines.append(f"{body}}}")
        self.w.close(len(rs) - 1, body)
        for s in reds:
            folds = [(f"{s.acc}_v", s.rtype)] + ([(f"{s.acc}_n", "max")] if s in nanred else [])
            for v, rtype in folds:
                width = LANES // 2
                while width:
                    a, b = f"{v}[ri]", f"{v}[ri + {width}]"
                    both = f"{a} + {b}" if rtype == "sum" else f"{a} {'>' if rtype == 'max' else '<'} {b} ? {a} : {b}"
                    # `omp simd`: without it g++ keeps the selects as (mispredicted) branches, a
                    # quarter of log_softmax's time on 1024-wide rows
                    self.lines.append(f"{indent}#pragma omp simd")
                    self.lines.append(f"{indent}for (i64 ri = 0; ri < {width}; ri++) {v}[ri] = {both};")
                    width //= 2
            if s in nanred:
                bits, nanv = NANBITS[s.value.dtype][1], NAN[s.value.dtype]
                self.lines.append(f"{indent}{s.acc} = {s.acc}_n[0] > {bits} ? {nanv} : {s.acc}_v[0];")
            else:
                self.lines.append(f"{indent}{s.acc} = {s.acc}_v[0];")
