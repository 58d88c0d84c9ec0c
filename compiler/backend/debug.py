"""FUSELENS_DEBUG levels (modelled on tinygrad's DEBUG):

1: one line per compiled graph (kernels, externs, fallbacks, compile time)
2: + fusion decisions and the loop-level IR of each kernel
3: + the lowered program (every node before fusion)
4: + the generated source
"""
from __future__ import annotations

import os
import sys

from .ir import render


def level() -> int:
    try:
        return int(os.environ.get("FUSELENS_DEBUG", "0"))
    except ValueError:
        return 0


def log(min_level: int, msg: str) -> None:
    if level() >= min_level:
        print(f"[fuselens] {msg}", file=sys.stderr)


def describe_program(program) -> str:
    lines = []
    for n in program.nodes:
        if n.kind == "extern":
            lines.append(f"  {n.outs} = extern {n.target}")
        elif n.kind == "reduction":
            lines.append(f"  {n.name}{list(n.out_shape)} = {n.rtype} over dims {list(n.rdims)} of "
                         f"{list(n.shape)}: {render(n.expr)}")
        else:
            lines.append(f"  {n.name}{list(n.shape)} = {render(n.expr)}")
    return "\n".join(lines)


def describe_kernel(k) -> str:
    lines = [f"  {k.name}: x={k.xsizes} r={k.rsizes}"]
    for i, phase in enumerate(k.phases):
        for s in phase:
            if hasattr(s, "acc"):
                lines.append(f"    pass {i}: {s.acc} = {s.rtype}({render(s.value)})")
            else:
                lines.append(f"    pass {i}: {s.buf}[{render(s.index)}] = {render(s.value)}")
    for s in k.finals:
        lines.append(f"    per row: {s.buf}[{render(s.index)}] = {render(s.value)}")
    return "\n".join(lines)
