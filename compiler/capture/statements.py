"""Statements: how each kind is interpreted (a break in one runs it in Python instead)."""
from __future__ import annotations

import ast
import functools
import inspect
import sys
import types

import torch

from .frames import Block, Call, GenLoop, Loop, With, Yielded
from .emit import CaptureError
from .objects import LIBRARY_MODULES
from .values import INPLACE_BINOPS, Break, Ext, TVar, VarSource

_GRAD_CONTEXTS = {torch.no_grad: False, torch.enable_grad: True}
_AUTOCASTS = (torch.autocast, torch.amp.autocast, torch.cpu.amp.autocast, torch.cuda.amp.autocast)


class StatementMixin:
    # -- statements --
    def s_expr(self, stmt, frame, nested):
        if type(stmt.value) is ast.Yield:
            value = stmt.value.value
            return self.do_yield(frame, None if value is None else self.ev(value, frame))
        if type(stmt.value) is ast.Call and not nested:
            return self.call_statement(stmt.value, frame, "expr")
        self.ev(stmt.value, frame)

    def s_assign(self, stmt, frame, nested):
        if type(stmt.value) is ast.Call and not nested and len(stmt.targets) == 1 and \
                _simple_target(stmt.targets[0]):
            return self.call_statement(stmt.value, frame, stmt.targets[0])
        value = self.ev(stmt.value, frame)
        for target in stmt.targets:
            self.assign_target(target, value, frame)

    def s_annassign(self, stmt, frame, nested):
        if stmt.value is not None:
            self.assign_target(stmt.target, self.ev(stmt.value, frame), frame)

    def s_augassign(self, stmt, frame, nested):
        op = INPLACE_BINOPS[type(stmt.op).__name__]
        target = stmt.target
        if type(target) is ast.Name:
            self.store(target.id, self.binop(op, self.load(target.id, frame, target), self.ev(stmt.value, frame)),
                       frame)
        elif type(target) is ast.Subscript:
            obj, key = self.ev(target.value, frame), self.ev(target.slice, frame)
            cur = self.getitem_(obj, key)
            if type(cur) in (list, dict, set):
                self.before_mutation(cur)
            self.setitem_(obj, key, self.binop(op, cur, self.ev(stmt.value, frame)), target)
        else:
            obj = self.ev(target.value, frame)
            self.setattr_(obj, target.attr, self.binop(op, self.getattr_(obj, target.attr),
                                                       self.ev(stmt.value, frame)), target)

    def s_return(self, stmt, frame, nested):
        if type(stmt.value) is ast.Call and not nested:
            return self.call_statement(stmt.value, frame, "return")
        value = None if stmt.value is None else self.ev(stmt.value, frame)
        return self.do_return(frame, value, nested)

    def s_pass(self, stmt, frame, nested):
        return None

    def s_if(self, stmt, frame, nested):
        test = self.ev(stmt.test, frame)
        if not nested and (type(test) is TVar or (type(test) is Ext and isinstance(test.source, VarSource))):
            return self.branch(stmt, frame, test)
        self.cont.append(Block(frame, stmt.body if self.truth(test) else stmt.orelse))

    def s_for(self, stmt, frame, nested):
        call = stmt.iter
        if type(call) is ast.Call:  # as ExprMixin._call evaluates it, unless a generator is called
            try:
                func = self.ev(call.func, frame)
                args, kwargs = self.call_args(call, frame)
                generator = self.prepare_inline(func, args, kwargs, call, generator=True) \
                    if _is_generator_function(func) else None
                if generator is not None:  # interleaved with the body, as Python runs it
                    self.depth += 1
                    self.cont.extend([GenLoop(frame, stmt), Call(frame, generator, "generator", call),
                                      Block(generator, generator.info.body)])
                    return None
                iterable = self.call(func, args, kwargs, call)
            except Break as b:
                b.node = b.node if b.node is not None else call
                raise
        else:
            iterable = self.ev(stmt.iter, frame)
        self.cont.append(Loop(frame, stmt, self.iterate(iterable)))

    def do_yield(self, frame, value):
        """A `yield` statement of an inlined generator: the loop over it runs its body once."""
        cont = self.cont
        at = next(i for i in range(len(cont) - 1, -1, -1) if type(cont[i]) is Call and cont[i].callee is frame)
        loop = cont[at - 1]  # the GenLoop below the generator's Call
        try:
            self.assign_target(loop.node.target, value, loop.frame)
        except Break:
            raise CaptureError(f"line {loop.node.lineno}: loop target cannot be assigned in the trace") from None
        self.cont.extend([Yielded(loop.frame), Block(loop.frame, loop.node.body)])

    def s_while(self, stmt, frame, nested):
        self.cont.append(Loop(frame, stmt, None))

    def s_break(self, stmt, frame, nested):
        if self.probing:
            raise _EndProbe
        self.unwind_loop(frame, exit_loop=True)

    def s_continue(self, stmt, frame, nested):
        if self.probing:
            raise _EndProbe
        self.unwind_loop(frame, exit_loop=False)

    def s_try(self, stmt, frame, nested):
        """A try statement runs in Python (an exception a region raises at run time must reach its
        handler); report the break its body would make, where the body makes it."""
        reason = "`try` statement runs in Python"
        probe = None if nested else self.probe(stmt.body, frame)
        if probe is None:
            raise Break(reason, None, stmt)
        b = Break(f"{reason} ({probe.reason})", probe.rule, probe.node)
        b.info = probe.info
        raise b

    probing = False

    def probe(self, body, frame):
        """The break `body` would hit first, found by interpreting it; nothing it does is kept
        (the enclosing statement is rolled back)."""
        saved = self.cont
        self.cont = saved + [Call(None, frame, "nested", None), Block(frame, body)]
        self.nested += 1
        self.probing = True
        try:
            self.drive(self.cont, nested=True)
            return None
        except Break as b:
            return b
        except Exception:  # noqa: BLE001 - _EndProbe, or Python would raise: no break to report
            return None
        finally:
            self.cont = saved
            self.nested -= 1
            self.probing = False

    def s_assert(self, stmt, frame, nested):
        test = self.ev(stmt.test, frame)
        if type(test) is TVar:
            raise Break("assert on a tensor value", "FL101", stmt.test)
        if not self.truth(test):
            raise AssertionError("assertion failed")  # the statement then runs in Python and raises

    def s_delete(self, stmt, frame, nested):
        for target in stmt.targets:
            if type(target) is ast.Name:
                if target.id not in frame.env:
                    raise NameError(target.id)
                del frame.env[target.id]
            elif type(target) is ast.Subscript:
                obj = self.ev(target.value, frame)
                if type(obj) not in (list, dict):
                    raise Break("del on an object from outside the function", None, target)
                self.before_mutation(obj)
                del obj[self.hashable(self.ev(target.slice, frame))]
            else:
                raise Break("del of an attribute", None, target)

    def s_with(self, stmt, frame, nested):
        states = []
        ambient = self.ambient
        for item in stmt.items:
            if item.optional_vars is not None:
                raise Break("`with ... as` runs in Python", None, item.context_expr)
            ambient = self.context_ambient(item.context_expr, frame, ambient)
            states.append(ambient)
        saved = self.ambient
        if not nested:
            self.flush()
        for i, state in enumerate(states):
            self.cont.append(With(frame, saved if i == 0 else states[i - 1]))
        self.set_ambient(states[-1], flush=False)
        self.cont.append(Block(frame, stmt.body))

    def context_ambient(self, expr, frame, ambient):
        if type(expr) is not ast.Call:
            raise Break("context manager runs in Python", None, expr)
        func = self.ev(expr.func, frame)
        args, kwargs = self.call_args(expr, frame)
        args, kwargs = [self._plain(a) for a in args], {k: self._plain(v) for k, v in kwargs.items()}
        if func in _GRAD_CONTEXTS and not args and not kwargs:
            return ambient.with_grad(_GRAD_CONTEXTS[func])
        if func is torch.set_grad_enabled and len(args) == 1 and type(args[0]) is bool:
            return ambient.with_grad(args[0])
        if func in _AUTOCASTS:
            device = "cuda" if func is torch.cuda.amp.autocast else "cpu" if func is torch.cpu.amp.autocast \
                else kwargs.pop("device_type", args[0] if args else None)
            dtype = kwargs.get("dtype", args[1] if len(args) > 1 else None)
            enabled = kwargs.get("enabled", args[2] if len(args) > 2 else True)
            if device not in ("cpu", "cuda") or type(enabled) is not bool:
                raise Break("unsupported autocast arguments", None, expr)
            dtype = dtype or torch.get_autocast_dtype(device)
            return ambient.with_autocast(device, enabled, dtype)
        raise Break("context manager runs in Python", None, expr)

    def s_functiondef(self, stmt, frame, nested):
        if stmt.decorator_list:
            raise Break("decorated nested function", None, stmt)
        frame.env[stmt.name] = self.make_closure(stmt, frame, stmt.name)

    def s_import(self, stmt, frame, nested):
        for alias in stmt.names:
            top = alias.name.split(".")[0]
            if top not in LIBRARY_MODULES or alias.name not in sys.modules:
                raise Break("import runs in Python", None, stmt)
            module = sys.modules[alias.name] if alias.asname else sys.modules[top]
            frame.env[alias.asname or top] = module

    def s_importfrom(self, stmt, frame, nested):
        module = sys.modules.get(stmt.module or "")
        if stmt.level or module is None or stmt.module.split(".")[0] not in LIBRARY_MODULES:
            raise Break("import runs in Python", None, stmt)
        for alias in stmt.names:
            frame.env[alias.asname or alias.name] = getattr(module, alias.name)

    def s_unsupported(self, stmt, frame, nested):
        raise Break(f"`{type(stmt).__name__.lower()}` statement runs in Python", None, stmt)


class _EndProbe(Exception):
    pass


def _is_generator_function(func) -> bool:
    """A generator function of user code (torch's own, `Module.parameters()` and the like, are
    iterated as calls)."""
    while isinstance(func, (types.MethodType, functools.partial)):
        func = func.__func__ if type(func) is types.MethodType else func.func
    return inspect.isgeneratorfunction(func) and not (func.__module__ or "").startswith("torch")


def _simple_target(t) -> bool:
    if type(t) is ast.Name:
        return True
    return type(t) in (ast.Tuple, ast.List) and all(type(e) is ast.Name for e in t.elts)


def _escapes_loop(stmt) -> bool:
    from .frames import _escapes
    return _escapes(stmt.body) or _escapes(stmt.orelse) if type(stmt) is ast.For else _escapes([stmt])


_STMTS = {
    ast.Expr: StatementMixin.s_expr, ast.Assign: StatementMixin.s_assign, ast.AnnAssign: StatementMixin.s_annassign,
    ast.AugAssign: StatementMixin.s_augassign, ast.Return: StatementMixin.s_return, ast.Pass: StatementMixin.s_pass,
    ast.If: StatementMixin.s_if, ast.For: StatementMixin.s_for, ast.While: StatementMixin.s_while, ast.Break: StatementMixin.s_break,
    ast.Continue: StatementMixin.s_continue, ast.Assert: StatementMixin.s_assert, ast.Delete: StatementMixin.s_delete,
    ast.With: StatementMixin.s_with, ast.FunctionDef: StatementMixin.s_functiondef, ast.Import: StatementMixin.s_import,
    ast.Try: StatementMixin.s_try,
    ast.ImportFrom: StatementMixin.s_importfrom,
}

