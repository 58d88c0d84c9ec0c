"""The transformed program: emitted statements, their variables, and capture-time execution.

A unit's code is a flat list of Python statements — region calls, fallback statements in their
original form, guard checks that bail out to a resume point, and data-dependent `if`s whose
untaken side is a jump captured later. During capture each statement runs as soon as it is
emitted (that is the first call's execution), through a small function compiled from the same
text, so the first call and later calls run the same code.
"""
from __future__ import annotations

import ast
import builtins
import math

import torch

from .guards import HELPERS


class Jump:
    """Returned by a unit to continue at a resume point (trampolined by the caller)."""

    __slots__ = ("point", "args")

    def __init__(self, point, args):
        self.point = point
        self.args = args


def _jump(point, args):
    return Jump(point, args)


class Raised(Exception):
    """The program raised while it ran during capture: the user's exception, to re-raise as is."""

    def __init__(self, error):
        super().__init__(str(error))
        self.error = error


class Line:
    """One emitted statement (possibly several physical lines) with its ambient state."""

    __slots__ = ("text", "comment", "ambient", "kind")

    def __init__(self, text, comment, ambient, kind):
        self.text = text
        self.comment = comment
        self.ambient = ambient
        self.kind = kind  # 'region', 'stmt', 'guard', 'if', 'return', 'jump', 'continue', 'assign'


class Program:
    """Variables and statements of one unit under capture."""

    def __init__(self, params: list[str], user_globals: dict, base_ambient, reserved: set):
        self.params = params
        self.user_globals = user_globals
        self.base_ambient = base_ambient
        self.lines: list[Line] = []
        self.consts: dict[str, object] = {}
        self.const_names: dict[int, str] = {}
        self.rt: dict[str, object] = {}
        self.holder: dict[str, object] = {}  # var -> value it holds (TVar / Ext / owned container)
        self.home: dict[int, str] = {}  # id(value) -> var
        self.keep: list = []
        self.reserved = set(reserved) | set(params)
        self.counter = 0
        self.loop_header = False  # unit body wrapped in `while True:` (a loop-head unit)
        self.aliases: list = []  # (alias, parameter): parameters as guards after a break read them
        self.const("__fl_jump", _jump)
        self.const("__fl_torch", torch)
        for name, fn in HELPERS.items():
            self.const(f"__fl_{name}", fn)

    # -- names --
    def const(self, name_or_obj, obj=None) -> str:
        if obj is None:
            obj = name_or_obj
            known = self.const_names.get(id(obj))
            if known is not None:
                return known
            name = f"__fl_c{len(self.consts)}"
        else:
            name = name_or_obj
        self.consts[name] = obj
        self.const_names[id(obj)] = name
        self.keep.append(obj)
        return name

    def helper(self, name) -> str:
        return f"__fl_{name}"

    def fresh(self, base: str) -> str:
        while True:
            self.counter += 1
            name = f"{base}{self.counter}"
            if name not in self.reserved and name not in self.rt:
                return name

    def literal(self, v) -> str:
        """A Python expression for a constant."""
        t = type(v)
        if t in (int, str, bytes, bool, type(None)):
            return repr(v)
        if t is float:
            if math.isfinite(v):
                return repr(v)
            return f"float({str(v)!r})"
        if t is complex:
            return f"complex({self.literal(v.real)}, {self.literal(v.imag)})"
        if isinstance(v, torch.dtype):
            return f"__fl_torch.{str(v)[6:]}"
        if t is tuple:
            inner = ", ".join(self.literal(x) for x in v)
            return f"({inner},)" if len(v) == 1 else f"({inner})"
        if t is torch.Size:
            return f"__fl_torch.Size([{', '.join(self.literal(x) for x in v)}])"
        if t is slice:
            return f"slice({self.literal(v.start)}, {self.literal(v.stop)}, {self.literal(v.step)})"
        if v is Ellipsis:
            return "Ellipsis"
        return self.const(v)

    # -- homes of run-time values --
    def set_home(self, var: str, value):
        old = self.holder.get(var)
        self.holder[var] = value
        if old is not None and self.home.get(id(old)) == var:
            self._rehome(old)
        self.home[id(value)] = var
        self.keep.append(value)

    def home_of(self, value) -> str:
        var = self.home.get(id(value))
        if var is None:
            raise KeyError("value has no home variable")
        return var

    def forget(self, var: str):
        old = self.holder.pop(var, None)
        if old is not None and self.home.get(id(old)) == var:
            self._rehome(old)

    def _rehome(self, old):
        """`old`'s home variable was rebound: another variable may still hold it (`x = src` made
        x its home; x is now rebound, src still holds the value)."""
        del self.home[id(old)]
        other = next((v for v, held in self.holder.items() if held is old), None)
        if other is not None:
            self.home[id(old)] = other

    # -- emitting and running --
    def emit(self, kind, text, comment, ambient, run=True):
        """Append a statement; run it now against the capture-time variables."""
        self.lines.append(Line(text, comment, ambient, kind))
        if run:
            self.execute(text, ambient)

    def execute(self, text, ambient, result=None):
        """Run statement(s) `text` against `rt` (as a function body, so scoping matches the final
        program); `result` is an expression whose value is returned."""
        tree = ast.parse(text)
        stored, loaded = set(), set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                (stored if isinstance(node.ctx, (ast.Store, ast.Del)) else loaded).add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
                stored.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                stored.update((a.asname or a.name).split(".")[0] for a in node.names)
        if result is not None:
            for node in ast.walk(ast.parse(result, mode="eval")):
                if isinstance(node, ast.Name):
                    loaded.add(node.id)
        params = sorted(n for n in (loaded | stored) if n in self.rt or n in self.consts)
        outs = sorted(stored)
        body = "\n".join("    " + ln for ln in text.splitlines())
        ret = f"    return ({result}), locals()"
        src = f"def __fl_step({', '.join(params)}):\n{body}\n{ret}\n"
        ns: dict = {}
        exec(compile(src, "<fuselens capture>", "exec"), self.user_globals, ns)
        args = [self.rt[n] if n in self.rt else self.consts[n] for n in params]
        try:
            with ambient.apply():
                value, local = ns["__fl_step"](*args)
        except Exception as e:  # noqa: BLE001 - not ours to handle: eager raises it here too
            raise Raised(e) from None
        for n in outs:
            if n in local:
                self.rt[n] = local[n]
            else:
                self.rt.pop(n, None)
        return value

    # -- rendering the unit --
    def render(self, name: str, header_comment: list[str]) -> str:
        out = [f"def {name}({', '.join(self.params)}):"]
        out.extend(f"    # {c}" for c in header_comment)
        indent = "    "
        if self.loop_header:
            out.append(indent + "while True:")
            indent += "    "
        if self.aliases:
            out.append(f"{indent}{', '.join(a for a, _ in self.aliases)} = "
                       f"{', '.join(p for _, p in self.aliases)}  # parameters, for reads after they are reassigned")
        current = self.base_ambient
        for line in self.lines:
            if line.kind in ("stmt", "region", "assign", "if") and line.ambient != current:
                current = line.ambient
                ctxs = current.render(self.base_ambient, "__fl_torch")
                if ctxs:
                    out.append(f"{indent}with {', '.join(ctxs)}:")
            pad = indent + ("    " if current != self.base_ambient else "")
            text_lines = line.text.splitlines()
            for i, t in enumerate(text_lines):
                suffix = f"  # {line.comment}" if (line.comment and i == len(text_lines) - 1) else ""
                out.append(pad + t + suffix)
        return "\n".join(out) + "\n"

    def build(self, name: str, header_comment: list[str]):
        """Compile the rendered unit; returns (function, source)."""
        src = self.render(name, header_comment)
        consts = sorted(self.consts)
        factory = f"def __fl_make({', '.join(consts)}):\n" + \
            "\n".join("    " + ln for ln in src.splitlines()) + f"\n    return {name}\n"
        ns: dict = {}
        exec(compile(factory, f"<fuselens {name}>", "exec"), self.user_globals, ns)
        fn = ns["__fl_make"](*[self.consts[c] for c in consts])
        return fn, src


def builtin_shadowed(globals_: dict, name: str) -> bool:
    return name in globals_ and getattr(builtins, name, None) is not globals_[name]
