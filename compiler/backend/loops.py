"""Loop-level passes on kernels: dead-code elimination, loop coalescing, invariant divisions.

Coalescing merges adjacent loops when every index expression stays free of division after the merge
(contiguous accesses), so the innermost loop is long and unit-stride - the shape vectorizers want.
A division by a value that does not change along the innermost loop (softmax's `/ sum`) becomes a
multiplication by its reciprocal, computed once per row (as torch's own softmax does), unless the
quotient feeds a rounding or comparison, where the last ulp matters.
"""
from __future__ import annotations

from .ir import COMPARE, Expr, const, rebuild, substitute, var, walk, with_args
from .scheduler import Kernel, Reduce, Store
from .simplify import simplify


def map_kernel(kernel: Kernel, fn) -> None:
    """Apply Expr -> Expr to every value and index of a kernel, in place."""
    def one(s):
        if isinstance(s, Reduce):
            return Reduce(s.acc, s.rtype, fn(s.value))
        return Store(s.buf, fn(s.index), fn(s.value))
    kernel.phases = [[one(s) for s in phase] for phase in kernel.phases]
    kernel.finals = [one(s) for s in kernel.finals]


def eliminate_dead(kernel: Kernel) -> None:
    """Drop reductions whose accumulator nobody reads and phases left empty."""
    while True:
        used = {n.arg for e in kernel.exprs() for n in walk([e]) if n.op == "acc"}
        before = sum(len(p) for p in kernel.phases)
        kernel.phases = [[s for s in p if not (isinstance(s, Reduce) and s.acc not in used)] for p in kernel.phases]
        kernel.phases = [p for p in kernel.phases if p]
        if sum(len(p) for p in kernel.phases) == before:
            return


def _divisions(kernel: Kernel) -> int:
    return sum(1 for e in kernel.exprs() for n in walk([e]) if n.op in ("floordiv", "mod"))


def coalesce(kernel: Kernel) -> None:
    """Merge adjacent x loops, and adjacent r loops, while that adds no div/mod to any index."""
    for prefix, sizes_attr in (("x", "xsizes"), ("r", "rsizes")):
        k = len(getattr(kernel, sizes_attr)) - 2
        while k >= 0:
            sizes = getattr(kernel, sizes_attr)
            inner = sizes[k + 1]
            m = var(f"{prefix}{k}")
            mapping = {f"{prefix}{k}": m // const(inner), f"{prefix}{k + 1}": m % const(inner)}
            mapping.update({f"{prefix}{j}": var(f"{prefix}{j - 1}") for j in range(k + 2, len(sizes))})
            trial = Kernel(kernel.name, list(kernel.xsizes), list(kernel.rsizes), kernel.phases, kernel.finals,
                           kernel.origins)
            setattr(trial, sizes_attr, sizes[:k] + [sizes[k] * inner] + sizes[k + 2:])
            ranges = trial.ranges
            map_kernel(trial, lambda e: simplify(substitute(e, mapping), ranges))
            if _divisions(trial) <= _divisions(kernel):
                setattr(kernel, sizes_attr, getattr(trial, sizes_attr))
                kernel.phases, kernel.finals = trial.phases, trial.finals
            k -= 1


def drop_unit_loops(kernel: Kernel) -> None:
    """Loops of extent 1 become the constant 0."""
    for prefix, sizes_attr in (("x", "xsizes"), ("r", "rsizes")):
        sizes = getattr(kernel, sizes_attr)
        keep = [d for d, s in enumerate(sizes) if s != 1]
        if len(keep) == len(sizes):
            continue
        mapping = {f"{prefix}{d}": const(0) for d, s in enumerate(sizes) if s == 1}
        mapping.update({f"{prefix}{d}": var(f"{prefix}{k}") for k, d in enumerate(keep)})
        setattr(kernel, sizes_attr, [sizes[d] for d in keep])
        ranges = kernel.ranges
        map_kernel(kernel, lambda e: simplify(substitute(e, mapping), ranges))


def hoist_divisions(kernel: Kernel) -> None:
    """x / d -> x * (1 / d) for floating d invariant along the innermost loop of its statement."""
    def rewrite(e, loop_var):
        if loop_var is None:
            return e
        nodes = walk([e])
        varying: dict = {}
        for n in nodes:
            varying[n] = (n.op == "var" and n.arg == loop_var) or any(varying[a] for a in n.args)
        exact = _feeding_discontinuities(nodes)

        def fn(node, args):
            if (node.op == "truediv" and node.dtype.is_floating_point and not varying[node.args[1]]
                    and node not in exact):
                return Expr("mul", (args[0], Expr("reciprocal", (args[1],), None, node.dtype)), None, node.dtype)
            return with_args(node, args)
        return rebuild([e], fn)[0]

    if kernel.rsizes and any(isinstance(s, Reduce) for p in kernel.phases for s in p):
        loop_var = f"r{len(kernel.rsizes) - 1}"
    else:
        loop_var = f"x{len(kernel.xsizes) - 1}" if kernel.xsizes else None
    kernel.phases = [[Reduce(s.acc, s.rtype, rewrite(s.value, loop_var)) if isinstance(s, Reduce)
                      else Store(s.buf, s.index, rewrite(s.value, loop_var)) for s in phase] for phase in kernel.phases]


def _feeding_discontinuities(nodes: list[Expr]) -> set[Expr]:
    """Nodes whose value reaches a rounding, comparison or cast to an integer: there x * (1 / d)
    and x / d, one ulp apart, can give different results (round(x / scale) in fake quantization)."""
    exact: set[Expr] = set()
    for n in reversed(nodes):  # parents before children
        if n in exact or n.op in _DISCONTINUOUS or (n.op == "cast" and not n.dtype.is_floating_point):
            exact.update(n.args)
    return exact


_DISCONTINUOUS = COMPARE | {"floor", "ceil", "round", "trunc", "sign", "floordiv", "mod", "fmod"}


def optimize(kernel: Kernel) -> Kernel:
    eliminate_dead(kernel)
    drop_unit_loops(kernel)
    coalesce(kernel)
    hoist_divisions(kernel)
    return kernel


