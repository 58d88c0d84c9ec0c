"""Where to put code lenses: compile roots and nn.Module.forward methods.

A light syntactic scan (the analyzer decides what is compiled for its findings; lenses only
need the obvious entry points): functions decorated with torch.compile / torch._dynamo.optimize,
module-level functions passed to torch.compile(...), and `forward` of classes whose bases
mention `Module`.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass(frozen=True)
class Root:
    qualname: str  # "f" or "Model.forward"; what the worker looks up
    line: int  # 0-based line of the first decorator (or the def)
    kind: str  # "compiled" or "forward"


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


def find_roots(text: str) -> list[Root] | None:
    """None when the text does not parse (callers keep the previous roots)."""
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
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name in compiled_by_call or any(_is_compile(d) for d in node.decorator_list):
                roots.append(Root(node.name, _start_line(node), "compiled"))
        elif isinstance(node, ast.ClassDef) and any("Module" in _dotted(b) for b in node.bases):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == "forward":
                    roots.append(Root(f"{node.name}.forward", _start_line(item), "forward"))
    return roots
