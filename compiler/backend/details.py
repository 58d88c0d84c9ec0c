"""Per-kernel records for the editor (its "Compile and profile" view): what each generated kernel
and each extern torch call computes, which source lines it comes from, how many bytes it moves.
`Runner.profile_kernels` times the same units by the same names.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .ir import BufRef, Node, flatten_args
from .memplan import nbytes


@dataclass
class KernelDetail:
    """Structured provenance of one generated kernel (the comment block in `source`, as data)."""

    name: str
    origins: list    # (aten op, source path or "", 1-based line or None) per fused FX node
    buffers: list    # (buffer name, shape, dtype name, bytes) of every buffer it reads or writes
    bytes: int       # sum of those: each buffer touched once (an estimate of its memory traffic)
    language: str = "cpp"                        # "cpp" | "triton" | "torch" (an extern call)
    lines: list = field(default_factory=list)    # [(path, line, [aten ops])]: origins by source line


def _origins(fx_names, program) -> list:
    out = []
    for name in fx_names:
        op, loc = program.origins.get(name, (name, ""))
        path, _, line = loc.rpartition(":")
        out.append((op, path, int(line)) if line.isdigit() else (op, "", None))
    return out


def _lines(origins) -> list:
    grouped: dict = {}
    for op, path, line in origins:
        grouped.setdefault((path, line), []).append(op)
    return [(path, line, ops) for (path, line), ops in grouped.items()]


def _detail(name, fx_names, touched, program, language) -> KernelDetail:
    """`touched`: (buffer name, shape, strides) of each distinct region read or written."""
    buffers = []
    for b, shape, strides in touched:
        dtype = program.buffers[b].dtype
        buffers.append((b, tuple(shape), str(dtype).replace("torch.", ""), nbytes(shape, strides, dtype)))
    origins = _origins(fx_names, program)
    return KernelDetail(name, origins, buffers, sum(b[3] for b in buffers), language, _lines(origins))


def kernel_detail(kernel, buffer_names, program, language="cpp") -> KernelDetail:
    bufs = program.buffers
    touched = [(b, bufs[b].shape, bufs[b].strides) for b in buffer_names]
    return _detail(kernel.name, kernel.origins, touched, program, language)


def extern_detail(node: Node, program) -> KernelDetail:
    """An extern torch call (matmul, conv, ...): its tensor arguments (as viewed) and results."""
    bufs = program.buffers
    touched = []
    for a in flatten_args(list(node.args) + list(node.kwargs.values())):
        if isinstance(a, BufRef):
            view = (a.name, a.shape, a.strides) if a.shape is not None else (a.name, bufs[a.name].shape,
                                                                              bufs[a.name].strides)
            if view not in touched:
                touched.append(view)
    touched += [(o, bufs[o].shape, bufs[o].strides) for o in node.outs if o]
    return _detail(node.name, node.origins, touched, program, "torch")


def details(steps, params: dict, program, language: str) -> tuple[list, list]:
    """(kernel details in kernel order, extern details in execution order)."""
    kernels, externs = [], []
    for s in steps:
        if isinstance(s, Node):
            externs.append(extern_detail(s, program))
        else:
            kernels.append(kernel_detail(s, params[s.name], program, language))
    return kernels, externs
