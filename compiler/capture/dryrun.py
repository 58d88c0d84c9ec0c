"""`fullgraph=True`: find every graph break without running anything.

A dry capture interprets the function like a real one (tensors on fake tensors) but never runs a
region or a statement in Python: a break is recorded and the names the statement would assign
become unknown; later statements that read unknown values are skipped silently (their breaks are
consequences). Both sides of each data-dependent branch are explored (and a data-dependent loop
body once), with a bound on the number of paths.
"""
from __future__ import annotations

import ast
import copy

from .emit import names_of
from .frames import Block, Call, Frame, GenLoop, Loop, With, Yielded
from .machine import Capture
from .values import Break

MAX_PATHS = 64


class Unknown:
    """A value only Python would have computed."""

    def __bool__(self):
        raise Break("condition on a value computed in Python")

    def __repr__(self):
        return "<unknown>"


class DryCapture(Capture):
    def __init__(self, owner, point, args):
        super().__init__(owner, point, args)
        self.worklist = []
        self.paths = 0
        self.seen = set()
        self.found = []

    def run(self):
        while True:
            self.drive(self.cont, nested=False)
            self.paths += 1
            if not self.worklist or self.paths >= MAX_PATHS:
                return self.found
            self.cont, self.ambient = self.worklist.pop()
            self.region = None

    # nothing is compiled, emitted or run
    def flush(self, keep=()):
        self.region = None

    def emit_line(self, *args, **kwargs):
        return None

    def record_break(self, brk, stmt, frame):
        super().record_break(brk, stmt, frame)
        b = self.breaks.pop()
        key = (b.filename, b.line, b.col, b.reason)
        if key not in self.seen:
            self.seen.add(key)
            self.found.append(b)

    def on_break(self, stmt, frame, b):
        reads, writes = names_of(stmt, frame.info.locals)
        consequence = any(isinstance(frame.env.get(n), Unknown) for n in reads)
        if type(stmt) is ast.If and consequence:  # a branch on an unknown: explore both sides
            self.fork(self.cont + [Block(frame, stmt.orelse)])
            self.cont.append(Block(frame, stmt.body))
            return None
        if consequence or type(stmt) is ast.For:
            if not consequence:
                self.record_break(b, stmt, frame)
            for n in writes:
                frame.env[n] = Unknown()
            if type(stmt) is ast.Return:
                return self.do_return(frame, Unknown(), False)
            return None
        return super().on_break(stmt, frame, b)

    def fallback(self, stmt, frame, brk, result_var=None, expr=None):
        self.record_break(brk, stmt, frame)
        _, writes = names_of(expr if expr is not None else stmt, frame.info.locals)
        for n in writes | ({result_var} if result_var else set()):
            frame.env[n] = Unknown()

    def snapshot(self, entries=None, loop_head=False):
        return None

    def branch(self, stmt, frame, test, loop=None):
        self.record_break(Break("data-dependent branch" if loop is None else "data-dependent loop condition",
                                "FL101", stmt.test), stmt, frame)
        if loop is None:
            self.fork(self.cont + [Block(frame, stmt.orelse)])
            self.cont.append(Block(frame, stmt.body))
        else:
            self.fork(self.cont[:-1] + ([Block(frame, stmt.orelse)] if stmt.orelse else []))
            self.cont.append(Block(frame, stmt.body))
        return None

    def loop_next(self, entry, nested):
        if entry is self.head:
            return ("end", None)  # the loop body was explored once
        try:
            return super().loop_next(entry, nested)
        except Exception:  # noqa: BLE001 - a loop test on unknown values: this path ends here
            return ("end", None)

    def jump(self, state):
        """A data-dependent loop head: explore it here, once."""
        entry = self.cont[-1]
        if entry is self.head:
            return ("end", None)
        self.head = entry
        self.head_visits = 0
        return super().loop_next(entry, False)

    def finish(self, value):
        return ("end", None)

    def fork(self, cont):
        if len(self.worklist) + self.paths < MAX_PATHS:
            self.worklist.append((_copy_cont(cont), self.ambient))


def _copy_cont(cont):
    """Copy frames, locals and loop states (values themselves are shared)."""
    frames = {}

    def frame(f):
        if f is None:
            return None
        if id(f) not in frames:
            new = Frame(f.info, dict(f.env), f.prefix, None)
            frames[id(f)] = new
            new.env = {k: copy.copy(v) if type(v) in (list, dict, set) else v for k, v in f.env.items()}
            new.closure = frame(f.closure)
        return frames[id(f)]
    out = []
    for e in cont:
        t = type(e)
        if t is Block:
            out.append(Block(frame(e.frame), e.stmts, e.i))
        elif t is Loop:
            out.append(Loop(frame(e.frame), e.node, None if e.items is None else list(e.items)))
        elif t is With:
            out.append(With(frame(e.frame), e.saved))
        elif t is GenLoop:
            out.append(GenLoop(frame(e.frame), e.node))
        elif t is Yielded:
            out.append(Yielded(frame(e.frame)))
        else:
            out.append(Call(frame(e.frame), frame(e.callee), e.target, e.node))
    return out
