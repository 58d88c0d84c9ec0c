"""Memory planning: where each buffer lives.

- Intermediate buffers go into a persistent arena, allocated once per compiled graph: on this
  machine a fresh large allocation costs a page fault per 4 KiB page on every call. Buffers whose
  lifetimes do not overlap share arena space.
- A kernel whose output has the layout of an extern result it reads element for element, and that
  nobody reads afterwards (a matmul followed by bias + activation), writes in place into it.
- Graph outputs are fresh tensors (the runtime recycles ones the caller has dropped).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .ir import Node, prod, walk
from .scheduler import Kernel, Store


@dataclass
class MemoryPlan:
    arena_bytes: int = 0
    arena_offset: dict = field(default_factory=dict)   # temp buffer -> byte offset in the arena
    inplace: dict = field(default_factory=dict)        # buffer -> extern buffer whose memory it reuses
    outputs: set = field(default_factory=set)          # buffers that are (or back) graph outputs


def _fresh_result(node: Node) -> bool:
    """An extern op whose schema says its results alias none of its inputs."""
    schema = getattr(node.target, "_schema", None)
    return schema is not None and all(r.alias_info is None for r in schema.returns) and not schema.is_mutable


def nbytes(shape, strides, dtype) -> int:
    """Bytes spanned by a strided tensor (a broadcast dimension, stride 0, adds nothing)."""
    if not shape:
        return dtype.itemsize
    extent = 1 + sum((s - 1) * st for s, st in zip(shape, strides) if s > 0)
    return max(extent, 1) * dtype.itemsize if prod(shape) else 0


def _reads(step) -> set:
    if isinstance(step, Node):
        return step.reads()
    return {n.arg for e in step.exprs() for n in walk([e]) if n.op == "load"}


def _writes(step) -> list:
    if isinstance(step, Node):
        return [o for o in step.outs if o]
    return [s.buf for p in step.phases for s in p if isinstance(s, Store)] + [s.buf for s in step.finals]


def plan_memory(steps: list, program) -> MemoryPlan:
    plan = MemoryPlan()
    plan.outputs = {ref.name for ref in program.outputs if hasattr(ref, "name")}
    last_use: dict = {}
    for i, step in enumerate(steps):
        for b in _reads(step):
            last_use[b] = i
    _extend_to_views(steps, plan, last_use)
    producers = {o: s for s in steps if isinstance(s, Node) for o in s.outs if o}
    for i, step in enumerate(steps):
        if isinstance(step, Kernel):
            _plan_inplace(step, i, program, plan, last_use, producers)
    # Linear-scan first fit over the arena for kernel-written intermediates.
    free: list = []       # (offset, size) holes
    live: list = []       # (last_use, offset, size)
    for i, step in enumerate(steps):
        for entry in [e for e in live if e[0] < i]:
            live.remove(entry)
            free.append(entry[1:])
        if not isinstance(step, Kernel):
            continue
        for b in _writes(step):
            if b in plan.outputs or b in plan.inplace:
                continue
            buf = program.buffers[b]
            size = (nbytes(buf.shape, buf.strides, buf.dtype) + 63) // 64 * 64
            hole = next((h for h in sorted(free, key=lambda h: h[1]) if h[1] >= size), None)
            if hole is not None:
                free.remove(hole)
                offset = hole[0]
                if hole[1] > size:
                    free.append((offset + size, hole[1] - size))
            else:
                offset = plan.arena_bytes
                plan.arena_bytes += size
            plan.arena_offset[b] = offset
            live.append((last_use.get(b, i), offset, size))
    return plan


def _extend_to_views(steps: list, plan: MemoryPlan, last_use: dict) -> None:
    """An extern whose result may be a view of its arguments (`movedim`, `diagonal`) keeps their
    memory alive as long as the result is read, and a graph output's view keeps it out of the
    arena (reused on the next call). Backwards, so views of views pass it on."""
    for step in reversed(steps):
        if not isinstance(step, Node) or _fresh_result(step):
            continue
        outs = [o for o in step.outs if o]
        end = max((last_use.get(o, -1) for o in outs), default=-1)
        for b in step.reads():
            last_use[b] = max(last_use.get(b, -1), end)
            if any(o in plan.outputs for o in outs):
                plan.outputs.add(b)


def _plan_inplace(kernel: Kernel, i, program, plan, last_use, producers):
    """Safe when every read of the extern buffer, in any pass, is of the element being written: a
    row's earlier passes finish before its store pass, and rows are independent."""
    stores = [s for p in kernel.phases for s in p if isinstance(s, Store)]
    if len(stores) != 1 or stores[0] not in kernel.phases[-1]:
        return
    store = stores[0]
    out = program.buffers[store.buf]
    all_loads = [n for e in kernel.exprs() for n in walk([e]) if n.op == "load"]
    for ld in [n for n in walk([store.value]) if n.op == "load"]:
        src = program.buffers[ld.arg]
        ext = producers.get(ld.arg)
        if (ext is None or src.kind != "extern" or not _fresh_result(ext) or last_use.get(ld.arg) != i
                or ld.arg in plan.outputs or ld.arg in plan.inplace.values()
                or (src.shape, src.strides, src.dtype) != (out.shape, out.strides, out.dtype)):
            continue
        if all(n.args[0] == store.index for n in all_loads if n.arg == ld.arg):
            plan.inplace[store.buf] = ld.arg
            return
