"""Where to put code lenses: compile roots and nn.Module.forward methods, and where every function is.

A light syntactic scan (the analyzer decides what is compiled for its findings; lenses only
need the obvious entry points): functions decorated with torch.compile / torch._dynamo.optimize,
module-level functions passed to torch.compile(...), and `forward` of classes whose bases
mention `Module`. Spans of all module-level functions and methods place profile results.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass(frozen=True)
class Root:
    qualname: str  # "f" or "Model.forward"; what the worker looks up
    line: int  # 0-based line of the first decorator (or the def)
    kind: str  # "compiled" or "forward"


@dataclass(frozen=True)
class Span:
    """0-based lines of a function: first decorator (or def), the def itself, the last line."""

    start: int
    def_line: int
    end: int

    def text(self, lines: list[str]) -> str:
        return "\n".join(lines[self.start:self.end + 1])


@dataclass(frozen=True)
class Scan:
    roots: list
    spans: dict  # qualname ("f", "Model.forward") -> Span


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


_COMPILE_NAMES = {"torch.compile", "compile", "torch._dynamo.optimize", "dynamo.optimize"}


def _is_compile(node: ast.AST) -> bool:
    return _dotted(node) in _COMPILE_NAMES


def _start_line(node) -> int:
    lines = [d.lineno for d in node.decorator_list] + [node.lineno]
    return min(lines) - 1


def _span(node) -> Span:
    return Span(_start_line(node), node.lineno - 1, (node.end_lineno or node.lineno) - 1)


def scan(text: str) -> Scan | None:
    """None when the text does not parse (callers keep the previous scan)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    compiled_by_call = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _is_compile(node.func) and node.args:
            if isinstance(node.args[0], ast.Name) and node.args[0].id in functions:
                compiled_by_call.add(node.args[0].id)
    roots: list[Root] = []
    spans: dict[str, Span] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            spans[node.name] = _span(node)
            if node.name in compiled_by_call or any(_is_compile(d) for d in node.decorator_list):
                roots.append(Root(node.name, _start_line(node), "compiled"))
        elif isinstance(node, ast.ClassDef):
            module = any("Module" in _dotted(b) for b in node.bases)
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    spans[f"{node.name}.{item.name}"] = _span(item)
                    if module and item.name == "forward":
                        roots.append(Root(f"{node.name}.forward", _start_line(item), "forward"))
    return Scan(roots, spans)
