"""Mechanical fixes that keep eager semantics.

- print/logging/warnings → guarded by `if not torch.compiler.is_compiling():` (Dynamo folds
  the condition to False while tracing, so the call disappears from the graph only);
- an `if` on a tensor that picks one of two tensors (assignment or return), or a
  conditional expression → `torch.where(cond, a, b)` (both sides are evaluated, so only
  side-effect-free branches qualify);
- `t.item()` used as an operand next to a tensor → `t` (stays a 0-d tensor);
- a tensor method whose argument calls a function that breaks → the argument computed into a
  local on the line before (Dynamo then resumes without the bound method on its stack).
Spans are relative to the function's def line, like findings (see checker.Evaluation).
"""
from __future__ import annotations

import ast
import re

from .findings import Fix, Span, TextEdit
from .source import _split_lines

_GUARDED = {"FL110": "print", "FL111": "logging call", "FL112": "warning"}


def fix_for(code: str, walker, statement, node) -> Fix | None:
    try:
        if code in _GUARDED:
            return _guard_fix(code, walker, node)
        if code == "FL101":
            return _where_fix(walker, statement, node)
        if code == "FL102":
            return _drop_item_fix(walker, node)
        if code == "FL132":
            return _hoist_argument_fix(walker, node)
    except (IndexError, ValueError):
        return None  # positions we cannot map back exactly: offer no fix rather than a wrong one
    return None


def _torch_alias(walker) -> str | None:
    for name, target in {**walker.module.imports, **walker.local_imports}.items():
        if target == "torch":
            return name
    return None


def _lines(walker) -> list[str]:
    return walker.lines


def _rel(walker, line: int) -> int:
    return line - walker.base


def _segment(walker, node: ast.AST) -> str:
    lines = _lines(walker)
    first = lines[node.lineno - 1].encode()
    if node.lineno == node.end_lineno:
        return first[node.col_offset:node.end_col_offset].decode()
    last = lines[node.end_lineno - 1].encode()
    middle = lines[node.lineno:node.end_lineno - 1]
    return "\n".join([first[node.col_offset:].decode(), *middle, last[:node.end_col_offset].decode()])


def _char(line: str, byte_column: int) -> int:
    return len(line.encode()[:byte_column].decode(errors="ignore"))


def _span(walker, start_line: int, start_col: int, end_line: int, end_col: int) -> Span:
    lines = _lines(walker)
    return Span(_rel(walker, start_line), _char(lines[start_line - 1], start_col),
                _rel(walker, end_line), _char(lines[end_line - 1], end_col))


def _owns_lines(walker, statement: ast.stmt) -> bool:
    """The statement is alone on its lines (nothing but a comment after it)."""
    lines = _lines(walker).copy()
    before = lines[statement.lineno - 1].encode()[:statement.col_offset]
    after = lines[statement.end_lineno - 1].encode()[statement.end_col_offset:].strip()
    return not before.strip() and (not after or after.startswith(b"#"))


def _guard_fix(code: str, walker, call: ast.Call) -> Fix | None:
    statement = walker.current_statement
    torch = _torch_alias(walker)
    if torch is None or not isinstance(statement, ast.Expr) or statement.value is not call \
            or not _owns_lines(walker, statement):
        return None
    indent = " " * statement.col_offset
    body = _segment(walker, statement).replace("\n", "\n    ")
    new_text = f"if not {torch}.compiler.is_compiling():\n{indent}    {body}"
    span = _span(walker, statement.lineno, statement.col_offset, statement.end_lineno, statement.end_col_offset)
    return Fix(f"Skip this {_GUARDED[code]} while compiling", (TextEdit(span, new_text),))


_PURE_NODES = (ast.Name, ast.Attribute, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Subscript,
               ast.Slice, ast.Tuple, ast.Call, ast.Load, ast.operator, ast.unaryop, ast.cmpop, ast.keyword,
               ast.expr_context)


def _pure(walker, node: ast.expr) -> bool:
    for child in ast.walk(node):
        if not isinstance(child, _PURE_NODES):
            return False
        if isinstance(child, ast.Call):
            dotted = walker.dotted(child.func) or ""
            is_method = isinstance(child.func, ast.Attribute) and not dotted
            if not (dotted.startswith("torch.") or is_method):
                return False
    return True


def _has_comment(walker, node: ast.stmt) -> bool:
    return any("#" in line for line in _lines(walker)[node.lineno - 1:node.end_lineno])


def _where_fix(walker, statement, test: ast.expr) -> Fix | None:
    torch = _torch_alias(walker)
    if torch is None or statement is None or getattr(statement, "test", None) is not test:
        return None
    condition = _segment(walker, test)
    if isinstance(statement, ast.IfExp):
        if not (_pure(walker, statement.body) and _pure(walker, statement.orelse)):
            return None
        text = f"{torch}.where({condition}, {_segment(walker, statement.body)}, {_segment(walker, statement.orelse)})"
        span = _span(walker, statement.lineno, statement.col_offset, statement.end_lineno, statement.end_col_offset)
        return Fix("Replace with torch.where (evaluates both sides)", (TextEdit(span, text),))
    if not isinstance(statement, ast.If) or len(statement.body) != 1 or len(statement.orelse) != 1 \
            or _has_comment(walker, statement) or not _owns_lines(walker, statement):
        return None
    then, other = statement.body[0], statement.orelse[0]
    if isinstance(then, ast.Assign) and isinstance(other, ast.Assign) and len(then.targets) == 1 \
            and len(other.targets) == 1 and isinstance(then.targets[0], ast.Name) \
            and isinstance(other.targets[0], ast.Name) and then.targets[0].id == other.targets[0].id:
        prefix = f"{then.targets[0].id} = "
    elif isinstance(then, ast.Return) and isinstance(other, ast.Return) and then.value and other.value:
        prefix = "return "
    else:
        return None
    if not (_pure(walker, then.value) and _pure(walker, other.value)):
        return None
    text = f"{prefix}{torch}.where({condition}, {_segment(walker, then.value)}, {_segment(walker, other.value)})"
    span = _span(walker, statement.lineno, statement.col_offset, statement.end_lineno, statement.end_col_offset)
    return Fix("Replace the branch with torch.where (evaluates both sides)", (TextEdit(span, text),))


def _drop_item_fix(walker, call: ast.Call) -> Fix | None:
    if id(call) not in walker.item_next_to_tensor or not isinstance(call.func, ast.Attribute):
        return None
    owner = call.func.value
    span = _span(walker, owner.end_lineno, owner.end_col_offset, call.end_lineno, call.end_col_offset)
    return Fix("Keep it a 0-d tensor (drop .item())", (TextEdit(span, ""),))


def _hoist_argument_fix(walker, call: ast.Call) -> Fix | None:
    """`self.w.copy_(helper(x))` → `w_value = helper(x)` on the line before, then
    `self.w.copy_(w_value)`: the bound method is no longer on the stack during the break. Only
    for a receiver that is a name or attribute chain (reading it later changes nothing) and one
    argument that calls something."""
    statement = walker.current_statement
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    calling = [arg for arg in [*call.args, *(k.value for k in call.keywords)]
               if any(isinstance(inner, ast.Call) for inner in ast.walk(arg))]
    if receiver is None or len(calling) != 1 or not isinstance(statement, (ast.Expr, ast.Assign, ast.Return)) \
            or not _owns_lines(walker, statement) or not _plain_reference(receiver):
        return None
    argument = calling[0]
    base = receiver.attr if isinstance(receiver, ast.Attribute) else receiver.id
    taken = set(re.findall(r"\w+", walker.function.block.text))
    name = next(candidate for candidate in (f"{base}_value{n or ''}" for n in range(1000)) if candidate not in taken)
    indent = " " * statement.col_offset
    start = _span(walker, statement.lineno, statement.col_offset, statement.lineno, statement.col_offset)
    hoisted = TextEdit(start, f"{name} = {_segment(walker, argument)}\n{indent}")
    replaced = TextEdit(_span(walker, argument.lineno, argument.col_offset, argument.end_lineno,
                              argument.end_col_offset), name)
    return Fix("Compute the argument before the method call", (hoisted, replaced))


def _plain_reference(node: ast.expr) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def apply_edits(text: str, edits) -> str:
    """Applies non-overlapping edits (character spans, 1-based lines) to `text`."""
    lines = _split_lines(text)  # Python's line breaks: a form feed is not one
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(line: int, column: int) -> int:
        return starts[line - 1] + column if line - 1 < len(starts) else len(text)

    for edit in sorted(edits, key=lambda e: (e.span.line, e.span.column), reverse=True):
        start = offset(edit.span.line, edit.span.column)
        end = offset(edit.span.end_line, edit.span.end_column)
        text = text[:start] + edit.new_text + text[end:]
    return text
