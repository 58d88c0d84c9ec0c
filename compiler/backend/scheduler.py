"""Fusion: groups Program nodes into kernels, then rewrites each group into loop-level IR.

A kernel iterates over outer loops `x` (rows, run in parallel) and, for reductions, inner loops `r`.
Its body is a list of phases - each phase one pass over `r` holding reductions and element-wise
stores that do not depend on each other - followed by per-row stores. This one shape covers
softmax (max | sum exp | store), layernorm (sum | sum sq. dev. | store), RMSNorm, log-softmax and
plain reductions with a pointwise prologue (inlined into the body) and an epilogue (later phases).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .ir import (Buffer, Expr, Node, const, contiguous_strides, linear_index, load, loads, prod, rebuild,
                 substitute, var, walk, with_args)
from .lowering import Program, ivars, unravel
from .simplify import simplify


@dataclass
class Reduce:
    acc: str
    rtype: str
    value: Expr


@dataclass
class Store:
    buf: str
    index: Expr
    value: Expr


@dataclass
class Kernel:
    name: str
    xsizes: list
    rsizes: list
    phases: list          # list[list[Reduce | Store]]: one r-loop each (pointwise kernels: one phase)
    finals: list          # per-row stores after the last phase (reduction results)
    origins: list
    nodes: list = field(default_factory=list)

    @property
    def ranges(self) -> dict:
        out = {f"x{k}": s for k, s in enumerate(self.xsizes)}
        out.update({f"r{k}": s for k, s in enumerate(self.rsizes)})
        return out

    def exprs(self):
        for phase in self.phases:
            for s in phase:
                yield s.value
                if isinstance(s, Store):
                    yield s.index
        for s in self.finals:
            yield s.value
            yield s.index


def acc_ref(name: str, dtype) -> Expr:
    return Expr("acc", (), name, dtype)


@dataclass
class Group:
    shape: tuple
    rdims: tuple
    nodes: list

    @property
    def is_reduction(self):
        return bool(self.rdims) or any(n.kind == "reduction" for n in self.nodes)


def _row_shapes(shape, rdims):
    kept = tuple(s for d, s in enumerate(shape) if d not in rdims)
    keep1 = tuple(1 if d in rdims else s for d, s in enumerate(shape))
    return kept, keep1


def _var_map(node: Node, shape, rdims):
    """(mapping, level): how `node`'s index variables map onto the group's x/r loop variables, and
    whether the node runs once per element ("full") or once per row ("row"); None if it cannot."""
    kept, keep1 = _row_shapes(shape, rdims)
    xs, rs = iter(range(len(kept))), iter(range(len(rdims)))
    full = {}
    for d in range(len(shape)):
        full[f"i{d}"] = var(f"r{next(rs)}") if d in rdims else var(f"x{next(xs)}")
    if node.shape == tuple(shape):
        return full, "full"
    if node.kind != "pointwise":
        return None
    if rdims and node.shape == keep1:
        return {f"i{d}": (const(0) if d in rdims else full[f"i{d}"]) for d in range(len(shape))}, "row"
    if rdims and node.shape == kept:
        return {f"i{k}": var(f"x{k}") for k in range(len(kept))}, "row"
    if prod(node.shape) == prod(shape):  # the same elements seen through a reshape
        flat = linear_index([full[f"i{d}"] for d in range(len(shape))], contiguous_strides(shape))
        return {f"i{d}": e for d, e in enumerate(unravel(flat, node.shape))}, "full"
    return None


def _store_index(node: Node, program: Program, mapping) -> Expr:
    buf = program.buffers[node.name]
    if node.kind == "reduction":
        kept = [d for d in range(len(node.shape)) if d not in node.rdims]
        idx = [mapping[f"i{d}"] for d in kept]
    else:
        idx = [mapping[f"i{d}"] for d in range(len(node.shape))]
    return linear_index(idx, buf.strides, buf.offset)


def _fits(group: Group, node: Node, program: Program) -> bool:
    """Legal to add `node` to `group`: same iteration space, and every read of a buffer the group
    writes is of the very element that is (or will be) available in the same row iteration."""
    if node.kind == "extern":
        return False
    if node.kind == "reduction":
        if group.rdims and (node.shape, node.rdims) != (group.shape, group.rdims):
            return False
        if not group.rdims and node.shape != group.shape:
            return False
        shape, rdims = node.shape, node.rdims
    else:
        shape, rdims = group.shape, group.rdims
    mapped = _var_map(node, shape, rdims)
    if mapped is None:
        return False
    mapping = mapped[0]
    members = {n.name: n for n in group.nodes}
    ranges = {f"x{k}": s for k, s in enumerate(_row_shapes(shape, rdims)[0])}
    ranges.update({f"r{k}": shape[d] for k, d in enumerate(rdims)})
    for ld in loads(node.expr):
        src = members.get(ld.arg)
        if src is None:
            continue
        want = simplify(_store_index(src, program, _var_map(src, shape, rdims)[0]), ranges)
        if simplify(substitute(ld.args[0], mapping), ranges) != want:
            return False
    return True


def group_nodes(program: Program, log=None) -> list:
    """Greedy fusion in program order. A node joins the legal group, among those running after
    everything it reads, that shares the most memory traffic with it (buffers it reads that the group
    writes count double); a node sharing nothing starts a new group (an extern is its own step)."""
    steps: list = []
    for node in program.nodes:
        target, best = None, 0
        if node.kind != "extern":
            reads = node.reads()
            for step in reversed(steps):
                writes = {n.name for n in step.nodes} if isinstance(step, Group) else set(step.outs)
                if isinstance(step, Group) and _fits(step, node, program):
                    shared = 2 * len(writes & reads) + len(reads & set().union(*(n.reads() for n in step.nodes)))
                    if shared > best:
                        target, best = step, shared
                if writes & reads:
                    break
        if target is not None:
            if node.kind == "reduction" and not target.rdims:
                target.shape, target.rdims = node.shape, node.rdims
            target.nodes.append(node)
            if log:
                log(f"fuse {node.name} ({node.kind}) into the group of {target.nodes[0].name}")
        elif node.kind == "extern":
            steps.append(node)
        else:
            steps.append(Group(node.shape, node.rdims, [node]))
    return steps


def _inline(e: Expr, repl: dict) -> Expr:
    """Replace loads of in-kernel values (accumulators, per-row values) by their expressions."""
    def fn(node, args):
        if node.op == "load" and node.arg in repl:
            return repl[node.arg]
        return with_args(node, args)
    return rebuild([e], fn)[0]


def build_kernel(name: str, group: Group, program: Program, live_out: set) -> Kernel:
    """Loop-level IR of a group: node expressions renamed onto the kernel's x/r variables."""
    shape, rdims = group.shape, group.rdims
    kept, _ = _row_shapes(shape, rdims)
    kernel = Kernel(name, list(kept), [shape[d] for d in rdims], [], [], [], nodes=list(group.nodes))
    ranges = kernel.ranges
    repl: dict = {}        # buffer -> expression that replaces its in-kernel loads
    current: list = []
    current_accs: set = set()
    for node in group.nodes:
        mapping, level = _var_map(node, shape, rdims)
        value = simplify(_inline(substitute(node.expr, mapping), repl), ranges)
        index = simplify(_store_index(node, program, mapping), ranges)
        kernel.origins.extend(o for o in node.origins if o not in kernel.origins)
        if level == "row":
            repl[node.name] = value
            if node.name in live_out:
                kernel.finals.append(Store(node.name, index, value))
            continue
        if {n.arg for n in walk([value]) if n.op == "acc"} & current_accs:
            kernel.phases.append(current)  # needs a finished accumulator: next pass over r
            current, current_accs = [], set()
        if node.kind == "reduction":
            acc = f"acc_{node.name}"
            current.append(Reduce(acc, node.rtype, value))
            current_accs.add(acc)
            repl[node.name] = acc_ref(acc, node.dtype)
            if node.name in live_out:
                kernel.finals.append(Store(node.name, index, repl[node.name]))
        else:
            repl[node.name] = value
            if node.name in live_out:
                current.append(Store(node.name, index, value))
    if current:
        kernel.phases.append(current)
    return kernel


def live_outside(steps, program: Program) -> set:
    """Buffers some other step or the graph output reads: these must really be written."""
    out = {ref.name for ref in program.outputs if hasattr(ref, "name")}
    for step in steps:
        if isinstance(step, Node):
            out |= step.reads()
            continue
        mine = {n.name for n in step.nodes}
        for n in step.nodes:
            out |= n.reads() - mine
    return out


def split_row_values(program: Program, log=None) -> None:
    """A reduction whose summand reads the per-row results of an earlier reduction, each at its
    own row (log_softmax + NLL: sum over rows of x[row, target] - max - log(sum exp)), is split:
    the summand becomes a pointwise node, which joins that reduction's kernel as a per-row value
    (computed in parallel while the row is in cache: the gather missed cache once per row), and
    the reduction sums its buffer."""
    reductions = {n.name: n for n in program.nodes if n.kind == "reduction"}
    nodes = []
    for node in program.nodes:
        if node.kind == "reduction" and node.expr.op != "load":
            ranges = {f"i{d}": s for d, s in enumerate(node.shape)}
            own_row, other = False, False
            for ld in loads(node.expr):
                buf = program.buffers[ld.arg]
                if buf.kind == "input":
                    continue
                same = simplify(ld.args[0], ranges) == simplify(buf.index(ivars(len(node.shape))), ranges)
                producer = reductions.get(ld.arg)
                own_row |= same and producer is not None and producer.out_shape == node.shape
                other |= not same
            if own_row and not other:
                buf = Buffer(f"{node.name}_row", node.shape, node.expr.dtype)
                program.buffers[buf.name] = buf
                nodes.append(Node(buf.name, "pointwise", node.shape, buf.dtype, node.expr, origins=node.origins))
                node.expr = load(buf.name, buf.index(ivars(len(node.shape))), buf.dtype)
                if log:
                    log(f"split the summand of {node.name} into {buf.name}")
        nodes.append(node)
    program.nodes[:] = nodes


def schedule(program: Program, log=None) -> list:
    """Program -> list of Kernel | extern Node, in execution order."""
    split_row_values(program, log)
    steps = group_nodes(program, log)
    live = live_outside(steps, program)
    result = []
    for step in steps:
        if isinstance(step, Group):
            result.append(build_kernel(f"kernel{len(result)}", step, program, live))
        else:
            result.append(step)
    return result


__all__ = ["Group", "Kernel", "Reduce", "Store", "acc_ref", "build_kernel", "group_nodes", "schedule",
           "split_row_values"]
