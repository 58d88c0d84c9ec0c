"""Statements that run in Python as a whole (`try`, `match`, a `with` of an outside context manager)
may contain a `return`, or a `break`/`continue` of a loop around them, which the interpreter runs.
Python cannot run such a statement on its own, so each is split in two:

    __fl_exit_3 = None                        # these three lines run in Python, as one statement
    while True:
        try:
            ...
            __fl_exit_3 = ('return', value)   # was: return value
            break
            ...
        except KeyError:
            __fl_exit_3 = ('continue', None)  # was: continue
            break
        break
    if __fl_exit_3 is not None:               # interpreted: guarded on what the statement did
        if __fl_exit_3[0] == 'return':
            return __fl_exit_3[1]
        continue

`break` leaves a `try` through its `finally` and a `with` through `__exit__`, as `return` did,
so the statement's own clean-up still runs first.
"""
from __future__ import annotations

import ast
import copy
import itertools

_counter = itertools.count()


def split_escaping(body: list, splits) -> tuple[list, set]:
    """`body` with each statement that `splits` split as above (copies: the file's AST is
    shared); returns (new body, the exit variables it introduced)."""
    names: set = set()

    def block(stmts):
        out, changed = [], False
        for stmt in stmts:
            if splits(stmt):
                out.extend(_split(stmt, names))
                changed = True
                continue
            new = _descend(stmt, block)
            changed |= new is not stmt
            out.append(new)
        return out if changed else stmts

    return block(body), names


def _descend(stmt, block):
    """`stmt` with its interpreted sub-blocks processed (a copy only when one changed)."""
    fields = {}
    for field in ("body", "orelse", "finalbody"):
        sub = getattr(stmt, field, None)
        if isinstance(sub, list) and sub and isinstance(stmt, (ast.If, ast.For, ast.While, ast.With)):
            new = block(sub)
            if new is not sub:
                fields[field] = new
    if not fields:
        return stmt
    clone = copy.copy(stmt)
    for field, value in fields.items():
        setattr(clone, field, value)
    return clone


def _split(stmt, names: set) -> list:
    var = f"__fl_exit_{next(_counter)}"
    names.add(var)
    kinds: set = set()
    body = _Rewrite(var, kinds).visit(copy.deepcopy(stmt))
    body.fl_exit = var  # emit.fallback runs it inside `while True: ... break`
    *tested, last = sorted(kinds)  # each action jumps: the last kind needs no test
    dispatch = [f"if {var}[0] == {kind!r}:\n    {_ACTIONS[kind].format(var=var)}" for kind in tested]
    dispatch.append(_ACTIONS[last].format(var=var))
    text = f"if {var} is not None:\n" + "\n".join("    " + ln for d in dispatch for ln in d.splitlines())
    tail = ast.parse(text).body
    for node in tail:
        for n in ast.walk(node):
            ast.copy_location(n, stmt)
            n.end_lineno, n.end_col_offset = stmt.lineno, stmt.col_offset
    return [body, *tail]


_ACTIONS = {"break": "break", "continue": "continue", "return": "return {var}[1]"}


class _Rewrite(ast.NodeTransformer):
    """Escapes become `var = (kind, value); break` (the break leaves the `while True` around)."""

    def __init__(self, var: str, kinds: set):
        self.var, self.kinds, self.loops = var, kinds, 0

    def _exit(self, node, kind, value):
        self.kinds.add(kind)
        store = ast.Assign(targets=[ast.Name(self.var, ast.Store())],
                           value=ast.Tuple([ast.Constant(kind), value or ast.Constant(None)], ast.Load()))
        out = [store, ast.Break()]
        for n in out:
            for sub in ast.walk(n):
                ast.copy_location(sub, node)
        return out

    def visit_Return(self, node):
        return self._exit(node, "return", node.value)

    def visit_Break(self, node):
        return node if self.loops else self._exit(node, "break", None)

    def visit_Continue(self, node):
        return node if self.loops else self._exit(node, "continue", None)

    def _loop(self, node):
        self.loops += 1
        node.body = [s for stmt in node.body for s in _as_list(self.visit(stmt))]
        self.loops -= 1
        node.orelse = [s for stmt in node.orelse for s in _as_list(self.visit(stmt))]  # else: not in the loop
        return node

    visit_For = visit_While = visit_AsyncFor = _loop

    def _scope(self, node):
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = _scope


def _as_list(x):
    return x if isinstance(x, list) else [x]
