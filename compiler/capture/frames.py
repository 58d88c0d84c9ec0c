"""Functions as the interpreter sees them: source AST, scopes, frames and continuations.

The AST comes from the function's own file (parsed whole, so lines and columns are exact), found by
first line and name. A continuation is a stack of entries at statement granularity; it can be
copied (`snapshot`) and later resumed by a new capture, which is how lazy branches and bail-outs
continue the function from the middle.
"""
from __future__ import annotations

import ast
import inspect
import linecache
import types

from .escapes import split_escaping
from .values import Unsupported

_FILE_TREES: dict = {}
_INFOS: dict = {}


_CREATE_GRAPH_LINES: dict = {}  # (file, id of its parsed tree) → first create_graph= line


def _file_tree(filename: str):
    lines = linecache.getlines(filename)
    if not lines:
        return None
    key = (filename, len(lines), hash(lines[0]) if lines else 0)
    tree = _FILE_TREES.get(key)
    if tree is None:
        try:
            tree = ast.parse("".join(lines), filename)
        except SyntaxError:
            return None
        _FILE_TREES[key] = tree
    return tree


def _create_graph_line(nodes):
    """The first line passing create_graph= anything but a constant false value."""
    return next((n.lineno for n in nodes if isinstance(n, ast.keyword) and n.arg == "create_graph"
                 and not (isinstance(n.value, ast.Constant) and not n.value.value)), None)


def _file_create_graph_line(filename: str, tree):
    key = (filename, id(tree))  # the trees stay in _FILE_TREES: ids are not reused
    if key not in _CREATE_GRAPH_LINES:
        _CREATE_GRAPH_LINES[key] = _create_graph_line(ast.walk(tree))
    return _CREATE_GRAPH_LINES[key]


def _find_node(tree, code):
    want_line = code.co_firstlineno
    lambdas = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == code.co_name:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            if first == want_line:
                return node
        elif isinstance(node, ast.Lambda) and code.co_name == "<lambda>" and node.lineno == want_line:
            lambdas.append(node)
    if len(lambdas) == 1:
        return lambdas[0]
    return None


def _escapes(stmts, in_loop=False) -> bool:
    """Does this statement list contain return/yield, or break/continue leaving it?"""
    for stmt in stmts:
        for node in _walk_no_scopes(stmt):
            if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom, ast.Await)):
                return True
        if isinstance(stmt, (ast.Break, ast.Continue)) and not in_loop:
            return True
        for field in ("body", "orelse", "finalbody", "handlers"):
            sub = getattr(stmt, field, None)
            if not sub:
                continue
            if field == "handlers":
                sub = [s for h in sub for s in h.body]
            loop = in_loop or (isinstance(stmt, (ast.For, ast.While)) and field == "body")
            if _escapes(sub, loop):
                return True
        if isinstance(stmt, ast.Match):
            if _escapes([s for c in stmt.cases for s in c.body], in_loop):
                return True
    return False


_STATE_CONTEXTS = {"no_grad", "enable_grad", "set_grad_enabled", "autocast"}


def _state_context(stmt) -> bool:
    """`with torch.no_grad():` and the like: interpreted (never run as one Python statement), so
    return/break/continue inside them are fine."""
    if not isinstance(stmt, ast.With):
        return False
    for item in stmt.items:
        call = item.context_expr
        name = call.func.attr if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) else \
            call.func.id if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) else None
        if name not in _STATE_CONTEXTS or item.optional_vars is not None:
            return False
    return True


def _runs_in_python(stmt) -> bool:
    """Statements the interpreter hands to Python whole (see escapes.py)."""
    return isinstance(stmt, (ast.Try, ast.Match, getattr(ast, "TryStar", ast.Try))) or \
        isinstance(stmt, ast.With) and not _state_context(stmt)


def _splits(stmt) -> bool:
    """Run in Python whole, and leaving by return/break/continue (not by yield/await): split by
    escapes.py."""
    return _runs_in_python(stmt) and _escapes([stmt]) and not any(
        isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for n in _walk_no_scopes(stmt))


def _walk_no_scopes(node):
    """ast.walk that does not enter nested functions, lambdas or classes."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        for child in ast.iter_child_nodes(n):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                todo.append(child)


class FuncInfo:
    """Everything static about one Python function we interpret."""

    def __init__(self, fn: types.FunctionType):
        code = fn.__code__
        self.fn = fn
        self.code = code
        self.name = code.co_name
        self.qualname = fn.__qualname__
        self.filename = code.co_filename
        self.globals = fn.__globals__
        if code.co_flags & (inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
            raise Unsupported(f"{self.qualname} is a coroutine")
        # a generator is inlined only as a `for` loop's iterable (GenLoop), where each `yield`
        # statement runs the loop's body
        self.generator = bool(code.co_flags & inspect.CO_GENERATOR)
        tree = _file_tree(self.filename)
        node = _find_node(tree, code) if tree is not None else None
        if node is None:
            raise Unsupported(f"source of {self.qualname} is not available")
        self.node = node
        self.is_lambda = isinstance(node, ast.Lambda)
        self.body = [ast.Return(value=node.body, lineno=node.lineno, col_offset=node.col_offset,
                                end_lineno=node.end_lineno, end_col_offset=node.end_col_offset)] \
            if self.is_lambda else node.body
        self.body, exits = split_escaping(self.body, _splits)
        self.locals = set(code.co_varnames) | set(code.co_cellvars) | exits
        self.freevars = list(code.co_freevars)
        self.cellvars = set(code.co_cellvars)
        self.argnames = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
        self.varargs = code.co_varnames[len(self.argnames)] if code.co_flags & inspect.CO_VARARGS else None
        nv = len(self.argnames) + (1 if self.varargs else 0)
        self.varkw = code.co_varnames[nv] if code.co_flags & inspect.CO_VARKEYWORDS else None
        self.posonly = code.co_posonlyargcount
        self.npos = code.co_argcount
        for stmt in ast.walk(ast.Module(body=list(self.body), type_ignores=[])):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and (
                    isinstance(stmt, ast.AsyncFunctionDef) or getattr(stmt, "decorator_list", None) or any(
                        isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await, ast.Global, ast.Nonlocal))
                        for n in ast.walk(stmt))):
                raise Unsupported(f"{self.qualname}: nested function at line {stmt.lineno} is a generator, "
                                  "coroutine, decorated, or uses global/nonlocal")
        walked = list(_walk_no_scopes(ast.Module(body=list(self.body), type_ignores=[])))
        yield_statements = {id(stmt.value) for stmt in walked if type(stmt) is ast.Expr and type(stmt.value) is ast.Yield}
        split = {id(n) for stmt in walked if hasattr(stmt, "fl_exit") for n in ast.walk(stmt)}  # run in Python whole
        for stmt in walked:
            if isinstance(stmt, (ast.Global, ast.Nonlocal)):
                raise Unsupported(f"{self.qualname} uses `{type(stmt).__name__.lower()}`")
            if isinstance(stmt, (ast.YieldFrom, ast.Await)) or type(stmt) is ast.Yield and id(stmt) not in yield_statements:
                raise Unsupported(f"{self.qualname} uses `yield from`, `await`, or `yield` inside an expression")
            if _runs_in_python(stmt) and id(stmt) not in split and _escapes([stmt]):
                raise Unsupported(f"{self.qualname}: return/break/continue inside "
                                  f"`{type(stmt).__name__.lower()}` at line {stmt.lineno}")

        self.hoisted: dict = {}  # statements split around a call (hoist.py), kept for stable resume keys
        # torch.autograd.grad(..., create_graph=True) here: gradients of gradients flow back
        # through the regions this function runs (AOT-compiled regions cannot do that)
        self.create_graph_line = _create_graph_line(_walk_no_scopes(ast.Module(body=list(self.body), type_ignores=[])))
        # ... and anywhere in its file: a function run as Python after the region (a PINN's
        # `gradient(u_x, xt)` behind a dispatch) may differentiate twice through what it returns
        self.file_create_graph_line = _file_create_graph_line(self.filename, tree)

    def source_line(self, line: int) -> str:
        return linecache.getline(self.filename, line).strip()


def func_info(fn) -> FuncInfo:
    """FuncInfo for a plain Python function, cached by code object."""
    code = fn.__code__
    entry = _INFOS.get(id(code))  # by identity: equal code objects of re-imported modules differ
    info = entry[1] if entry is not None and entry[0] is code else None
    if info is None:
        try:
            info = FuncInfo(fn)
        except Unsupported as e:
            info = e
        _INFOS[id(code)] = (code, info)
    if isinstance(info, Unsupported):
        raise Unsupported(str(info))
    if info.fn is not fn:  # same code, another function object (closure/defaults differ)
        clone = object.__new__(FuncInfo)
        clone.__dict__.update(info.__dict__)
        clone.fn = fn
        clone.globals = fn.__globals__
        return clone
    return info


_CLOSURE_INFOS: dict = {}


def closure_info(c) -> FuncInfo:
    """FuncInfo for an interpreted lambda/def (no code object: built from its AST)."""
    key = (id(c.node), id(c.frame.info))
    info = _CLOSURE_INFOS.get(key)
    if info is not None:
        return info
    node, outer = c.node, c.frame.info
    a = node.args
    params = a.posonlyargs + a.args + a.kwonlyargs
    info = object.__new__(FuncInfo)
    info.__dict__.update(
        fn=outer.fn, code=None, name=c.name, qualname=f"{outer.qualname}.<locals>.{c.name}",
        filename=outer.filename, globals=outer.globals, node=node, is_lambda=isinstance(node, ast.Lambda),
        freevars=[], cellvars=set(), argnames=[x.arg for x in params],
        varargs=a.vararg.arg if a.vararg else None, varkw=a.kwarg.arg if a.kwarg else None,
        posonly=len(a.posonlyargs), npos=len(a.posonlyargs) + len(a.args))
    info.body = [ast.Return(value=node.body, lineno=node.lineno, col_offset=node.col_offset,
                            end_lineno=node.end_lineno, end_col_offset=node.end_col_offset)] \
        if info.is_lambda else node.body
    info.body, assigned = split_escaping(info.body, _splits)
    for stmt in info.body:
        for n in _walk_no_scopes(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                assigned.add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.ClassDef)):
                assigned.add(n.name)
    info.locals = set(info.argnames) | assigned | {x for x in (info.varargs, info.varkw) if x}
    _CLOSURE_INFOS[key] = info
    return info


class Frame:
    """One function activation: its locals (`env`) and the prefix of its program variables."""

    __slots__ = ("info", "env", "prefix", "closure", "ambient")

    def __init__(self, info, env, prefix, closure=None):
        self.info = info
        self.env = env
        self.prefix = prefix
        self.closure = closure  # for interpreted lambdas/defs: the defining frame (free names)
        self.ambient = None  # grad mode a decorator (@torch.no_grad()) sets for this call

    def var(self, name: str) -> str:
        return self.prefix + name


class Loc:
    """Where an op came from (for node metadata and region line maps)."""

    __slots__ = ("filename", "line", "col", "function", "code", "library")

    def __init__(self, filename, line, col, function, code, library=False):
        self.filename, self.line, self.col, self.function, self.code = filename, line, col, function, code
        self.library = library  # a statement of torch's (or another library's) own code

    def stack_trace(self):
        return f'  File "{self.filename}", line {self.line}, in {self.function}\n    {self.code}\n'



# --- continuation entries ------------------------------------------------------------------------

class Block:
    __slots__ = ("frame", "stmts", "i")

    def __init__(self, frame, stmts, i=0):
        self.frame = frame
        self.stmts = stmts
        self.i = i


class Loop:
    """An unrolled `for` (items known) or a `while`; `items` is None for while."""

    __slots__ = ("frame", "node", "items")

    def __init__(self, frame, node, items):
        self.frame = frame
        self.node = node
        self.items = items


class GenLoop:
    """`for target in gen(...)` over an inlined generator: the entries above it run the
    generator's frame; each `yield` statement assigns `target` and runs the body (Yielded)."""

    __slots__ = ("frame", "node")

    def __init__(self, frame, node):
        self.frame = frame  # the loop's
        self.node = node


class Yielded:
    """Below a loop body run for one `yield`: when the body ends (or `continue`s), the
    generator's frame goes on after the yield."""

    __slots__ = ("frame",)

    def __init__(self, frame):
        self.frame = frame  # the loop's


class With:
    __slots__ = ("frame", "saved")

    def __init__(self, frame, saved):
        self.frame = frame
        self.saved = saved


class Call:
    """A statement-level inlined call: the callee's frame; `target` receives the return value."""

    __slots__ = ("frame", "callee", "target", "node")

    def __init__(self, frame, callee, target, node):
        self.frame = frame  # the caller
        self.callee = callee
        self.target = target  # 'return' | 'expr' | ast target node
        self.node = node
