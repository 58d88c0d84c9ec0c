"""Calls that must be statements, taken out of the expression they are in.

A region has one grad mode, so a call that switches it (a `@torch.no_grad()` forward) is inlined
only at statement level, where the region can end before it and start again after it. Inside an
expression (`logits = step(x) @ emb.t()`) the call is hoisted into a statement of its own,
`__fl_g = step(x)`, followed by the original statement reading `__fl_g` - when that keeps Python's
evaluation order: the call is always evaluated, and nothing evaluated before it can observe it.
"""
from __future__ import annotations

import ast
import copy

from .values import Break


class SwitchesGradMode(Break):
    """A call inside an expression switches grad mode (hoisted when possible, else a break)."""


# Fields evaluated unconditionally, in evaluation order (the first comparator of a chain, the test
# of a conditional expression and the first operand of and/or only).
_ALWAYS = {
    ast.BinOp: ("left", "right"), ast.UnaryOp: ("operand",), ast.Call: ("func", "args", "keywords"),
    ast.keyword: ("value",), ast.Attribute: ("value",), ast.Subscript: ("value", "slice"),
    ast.Tuple: ("elts",), ast.List: ("elts",), ast.Starred: ("value",), ast.Compare: ("left", "comparators[0]"),
    ast.IfExp: ("test",), ast.BoolOp: ("values[0]",),
}


def hoisted(stmt: ast.stmt, call: ast.Call, info) -> list[ast.stmt] | None:
    """[`tmp = call`, `stmt` reading tmp], or None when hoisting could change what runs."""
    # statements whose value is evaluated first (an augmented assignment reads its target before
    # it: a plain name, which the call cannot rebind)
    evaluates_value_first = isinstance(stmt, (ast.Assign, ast.Expr, ast.Return)) or \
        isinstance(stmt, ast.AnnAssign) and stmt.simple or \
        isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name)
    if not evaluates_value_first or stmt.value is None or not _first_effect(stmt.value, call):
        return None
    if (stmt, call) not in info.hoisted:  # AST nodes hash by identity; the split is built once
        name = f"__fl_g{call.lineno}_{call.col_offset}"
        info.locals.add(name)
        take = ast.copy_location(ast.Assign([ast.Name(name, ast.Store())], call), stmt)
        ast.fix_missing_locations(take)
        read = ast.copy_location(ast.Name(name, ast.Load()), call)
        info.hoisted[(stmt, call)] = [take, _replace(stmt, call, read)]
    return info.hoisted[(stmt, call)]


def _first_effect(root: ast.expr, call: ast.Call) -> bool:
    """Is `call` reached through unconditionally evaluated positions, after only names and
    constants (which the call cannot change) have been evaluated?"""
    node = root
    while node is not call:
        children = _ordered_children(node)
        for child in children:
            if _contains(child, call):
                node = child
                break
            if not _inert(child):
                return False
        else:
            return False
    return True


def _ordered_children(node) -> list:
    out = []
    for field in _ALWAYS.get(type(node), ()):
        name, _, index = field.partition("[")
        value = getattr(node, name)
        if index:
            value = value[int(index[:-1])] if value else None
        out.extend(value if isinstance(value, list) else [value] if value is not None else [])
    return out


def _contains(tree, node) -> bool:
    return any(n is node for n in ast.walk(tree))


def _inert(node) -> bool:
    return isinstance(node, (ast.Name, ast.Constant))  # not `self.x`: the call may rebind it


def _replace(stmt, call, name):
    class Swap(ast.NodeTransformer):
        def visit_Call(self, node):
            return name if node is call else self.generic_visit(node)
    # the copy shares no nodes with `stmt` except `call`'s replacement target
    memo = {id(call): call}
    return Swap().visit(copy.deepcopy(stmt, memo))
