"""What `fuselens.explain` returns: regions, graph breaks, guards and the transformed program."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RegionReport:
    name: str
    unit: str
    lines: list  # source lines (file, line) its ops come from
    ops: list  # (aten op, line)
    inputs: int
    outputs: int
    autograd: str
    graph: str

    @property
    def num_ops(self) -> int:
        return len(self.ops)


@dataclass
class BreakReport:
    filename: str
    line: int
    column: int
    end_line: int
    end_column: int
    reason: str
    rule: str | None
    gb_type: str | None
    function: str
    code: str


@dataclass
class UnitReport:
    name: str
    entry: str
    guards: list
    mid_guards: list
    source: str


@dataclass
class ExplainReport:
    path: str  # 'fuselens' (source-level capture) or 'torch.compile'
    path_reason: str = ""
    regions: list = field(default_factory=list)
    breaks: list = field(default_factory=list)
    units: list = field(default_factory=list)
    log: list = field(default_factory=list)
    result: object = None

    @property
    def graph_count(self) -> int:
        return len(self.regions)

    @property
    def break_count(self) -> int:
        return len(self.breaks)

    @property
    def guards(self) -> list:
        return [g for u in self.units for g in u.guards]

    @property
    def program(self) -> str:
        return "\n\n".join(u.source for u in self.units)

    def __str__(self):
        out = [f"path: {self.path}" + (f" ({self.path_reason})" if self.path_reason else ""),
               f"regions: {len(self.regions)}, graph breaks: {len(self.breaks)}"]
        for b in self.breaks:
            rule = f"{b.rule} " if b.rule else ""
            out.append(f"  break {b.filename}:{b.line}:{b.column} {rule}{b.reason}   | {b.code}")
        for r in self.regions:
            lines = sorted({ln for _, ln in r.lines})
            out.append(f"  {r.name}: {r.num_ops} aten ops from lines {lines}; autograd: {r.autograd}")
        for u in self.units:
            out.append(f"guards of {u.name} ({u.entry}):")
            out.extend(f"  {g}" for g in u.guards)
        out.append("transformed program:")
        out.append(self.program)
        return "\n".join(out)


class FullGraphError(RuntimeError):
    """fullgraph=True and the function has graph breaks; all of them are listed."""

    def __init__(self, breaks):
        self.breaks = list(breaks)
        lines = [f"  {b.filename}:{b.line}:{b.col} {b.rule or ''} {b.reason} | {b.code}" for b in self.breaks]
        super().__init__(f"{len(self.breaks)} graph break(s) with fullgraph=True:\n" + "\n".join(lines))


def build(cf, result=None) -> ExplainReport:
    """A report from a CompiledFunction after it ran."""
    from .machine import BreakInfo
    rep = ExplainReport(path="fuselens", log=list(cf.log), result=result)
    seen = set()
    for v in cf.variants():
        unit = f"{v.point.name}_v{v.index}"
        rep.units.append(UnitReport(unit, v.point.name, list(v.guards), list(v.mid_guards), v.source))
        for r in v.regions:
            ops = [(op, line) for op, (_, line) in r.ops]
            rep.regions.append(RegionReport(r.name, unit, sorted(r.lines), ops, len(r.inputs), len(r.outputs),
                                            r.autograd, r.gm.code if r.gm is not None else ""))
        for b in v.breaks:
            key = (b.filename, b.line, b.col, b.reason)
            if key in seen:
                continue
            seen.add(key)
            assert isinstance(b, BreakInfo)
            rep.breaks.append(BreakReport(b.filename, b.line, b.col, b.end_line, b.end_col, b.reason, b.rule,
                                          b.gb_type, b.function, b.code))
    rep.breaks.sort(key=lambda b: (b.filename, b.line, b.column))
    return rep
