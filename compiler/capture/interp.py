"""Expression evaluation: Python concretely, tensors symbolically, outside values with guards.

`ext(value, source)` is the read policy: tensors become TVars (guarded on first use), immutable
values stay `Ext` until used (then guarded by value), containers stay `Ext` and are guarded by
structure as they are read, and every other object (functions, classes, modules, nn.Modules) is
guarded by identity at once and used directly.
"""
from __future__ import annotations

import ast
import builtins
import types

import torch

from .guards import constant_like
from .objects import ObjectMixin, is_library_module
from .values import (BINOPS, CMPOPS, UNARYOPS, Break, CellSource, Closure, Ext, GlobalSource, ItemSource, TVar,
                     is_dyn, is_unbound)

class Scope:
    """Comprehension scope: its own targets, everything else from the enclosing frame."""

    __slots__ = ("parent", "env")

    def __init__(self, parent, env):
        self.parent = parent
        self.env = env


class ExprMixin(ObjectMixin):
    """Evaluation of expressions; needs `self.tracer`, `self.guards_now()`, `self.call(...)`."""

    # -- read policy and specialization --
    def ext(self, value, source):
        if isinstance(value, torch.Tensor):
            return self.tracer.import_tensor(value, source)
        if constant_like(value) or type(value) in (list, dict, tuple, set) or is_dyn(source):
            return Ext(value, source)
        if isinstance(value, types.ModuleType) and is_library_module(value):
            self.guards_now().identity(source, value)
            return value
        self.guards_now().identity(source, value)
        if id(value) not in self.sources:
            self.sources[id(value)] = source
            if self.tx is not None:
                self.tx["sources"].append(id(value))
            self.keep.append(value)
        return value

    def concrete(self, v):
        """The plain value of `v`, guarding what that assumes. Containers come back as copies whose
        elements went through the read policy (so tensors inside are TVars)."""
        if type(v) is not Ext:
            return v
        value, source = v.value, v.source
        if constant_like(value):
            self.guards_now().value(source, value)
            return value
        t = type(value)
        if t in (list, dict, set):
            self.no_pending(v)
        self.guards_now().type_is(source, t)
        if t in (list, tuple):
            self.guards_now().length(source, len(value))
            return t(self.concrete(self.ext(x, ItemSource(source, i))) for i, x in enumerate(value))
        if t is dict:
            self.guards_now().keys_are(source, list(value))
            return {k: self.concrete(self.ext(x, ItemSource(source, k))) for k, x in value.items()}
        if is_dyn(source):  # an object made at run time: specializing on it would never hold again
            raise Break(f"uses a {t.__name__} computed in Python at run time")
        if t in (set, frozenset) and all(constant_like(x) for x in value):
            self.guards_now().value(source, value)
            return value
        self.guards_now().identity(source, value)
        self.sources.setdefault(id(value), source)
        self.keep.append(value)
        return value

    def no_pending(self, ext):
        if self.has_pending(ext):
            raise Break("reads a container this trace stored into (runs once the store is replayed)")

    def truth(self, v) -> bool:
        if type(v) is TVar:
            raise Break("tensor used as a condition (data-dependent)", "FL101")
        if type(v) is Ext:
            self.no_pending(v)
            value = v.value
            if constant_like(value):
                return bool(self.concrete(v))
            self.guards_now().type_is(v.source, type(value))
            self.guards_now().length(v.source, len(value))
            return bool(value)
        return bool(v)

    # -- names --
    def load(self, name, scope, node):
        while type(scope) is Scope:
            if name in scope.env:
                return scope.env[name]
            scope = scope.parent
        frame = scope
        while True:
            info = frame.info
            if name in info.locals:
                if name in frame.env and not is_unbound(frame.env[name]):
                    return frame.env[name]
                raise UnboundLocalError(f"local variable {name!r} referenced before assignment")
            if frame.closure is None:
                break
            frame = frame.closure  # interpreted lambda/def: names of the defining frame
        if name in info.freevars and info.fn.__closure__ is not None:
            cell = info.fn.__closure__[info.freevars.index(name)]
            try:
                contents = cell.cell_contents
            except ValueError:
                raise NameError(f"free variable {name!r} referenced before assignment") from None
            return self.ext(contents, CellSource(cell, name))
        g = info.globals
        if name in g:
            if is_library_module(g):  # torch's own code: its globals are taken as constants
                return g[name]
            return self.ext(g[name], GlobalSource(g, name))
        if hasattr(builtins, name):
            self.guards_now().not_global(g, name)
            return getattr(builtins, name)
        raise NameError(f"name {name!r} is not defined")

    def store(self, name, value, scope):
        while type(scope) is Scope:
            if name in scope.env:
                scope.env[name] = value
                return
            scope = scope.parent
        scope.env[name] = value

    # -- evaluation --
    def ev(self, node, scope):
        method = _EVAL.get(type(node))
        if method is None:
            raise Break(f"unsupported expression: {type(node).__name__}", None, node)
        try:
            return method(self, node, scope)
        except Break as b:
            if b.node is None:
                b.node = node
            raise

    def _constant(self, node, scope):
        return node.value

    def _name(self, node, scope):
        return self.load(node.id, scope, node)

    def _attribute(self, node, scope):
        return self.getattr_(self.ev(node.value, scope), node.attr)

    def _subscript(self, node, scope):
        return self.getitem_(self.ev(node.value, scope), self.ev(node.slice, scope))

    def _slice(self, node, scope):
        part = [None if p is None else self.ev(p, scope) for p in (node.lower, node.upper, node.step)]
        return slice(*[self.concrete(p) for p in part])

    def _binop(self, node, scope):
        a, b = self.ev(node.left, scope), self.ev(node.right, scope)
        return self.binop(BINOPS[type(node.op).__name__], a, b)

    def binop(self, fn, a, b):
        # with a tensor on the other side, an outside float goes to the op as is (it may become a
        # region input instead of a constant)
        if not (type(b) is TVar and type(a) is Ext and type(a.value) is float):
            a = self._plain(a)
        if not (type(a) is TVar and type(b) is Ext and type(b.value) is float):
            b = self._plain(b)
        return fn(a, b)

    def _unaryop(self, node, scope):
        v = self.ev(node.operand, scope)
        if type(node.op) is ast.Not:
            return not self.truth(v)
        return UNARYOPS[type(node.op).__name__](self.concrete(v))

    def _boolop(self, node, scope):
        is_and = type(node.op) is ast.And
        v = None
        for i, sub in enumerate(node.values):
            v = self.ev(sub, scope)
            if i == len(node.values) - 1:
                break
            if self.truth(v) != is_and:
                break
        return v

    def _compare(self, node, scope):
        left = self.ev(node.left, scope)
        result = True
        for op, comp in zip(node.ops, node.comparators):
            right = self.ev(comp, scope)
            result = self.compare(type(op).__name__, left, right)
            if len(node.ops) > 1 and not self.truth(result):
                return result
            left = right
        return result

    def compare(self, op, a, b):
        if op in ("Is", "IsNot"):
            same = self.identical(a, b)
            return same if op == "Is" else not same
        if op in ("In", "NotIn"):
            if type(b) is Ext and type(b.value) in (list, tuple, dict, set) and type(a) is not TVar:
                self.no_pending(b)
                key = self.concrete(a)
                result = key in b.value
                self.guards_now().contains(b.source, key, result)
                return result if op == "In" else not result
            if type(b) is TVar:
                raise Break("`in` on a tensor (data-dependent)", "FL101")
        return CMPOPS[op](self._plain(a), self._plain(b))

    def identical(self, a, b) -> bool:
        for x, y in ((a, b), (b, a)):
            if type(x) is Ext and type(y) is not Ext and (y is None or type(y) is bool):
                result = x.value is y
                self.guards_now().value(x.source, x.value) if result else self.guards_now().type_is(
                    x.source, type(x.value))
                return result
        if type(a) is Ext or type(b) is Ext:
            a, b = self.concrete(a), self.concrete(b)
        return a is b

    def _ifexp(self, node, scope):
        return self.ev(node.body if self.truth(self.ev(node.test, scope)) else node.orelse, scope)

    def _namedexpr(self, node, scope):
        value = self.ev(node.value, scope)
        self.store(node.target.id, value, scope)
        return value

    def _tuple(self, node, scope):
        return tuple(self._elements(node.elts, scope))

    def _list(self, node, scope):
        return list(self._elements(node.elts, scope))

    def _set(self, node, scope):
        return {self.concrete(v) if type(v) is Ext else v for v in self._elements(node.elts, scope)}

    def _elements(self, elts, scope):
        out = []
        for e in elts:
            if type(e) is ast.Starred:
                out.extend(self.iterate(self.ev(e.value, scope)))
            else:
                out.append(self.ev(e, scope))
        return out

    def _dict(self, node, scope):
        out = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                src = self.ev(v, scope)
                for key in self.iterate(src):
                    out[key] = self.getitem_(src, key)
            else:
                out[self.hashable(self.ev(k, scope))] = self.ev(v, scope)
        return out

    def hashable(self, k):
        return self.concrete(k) if type(k) is Ext else k

    def _joinedstr(self, node, scope):
        parts = []
        for v in node.values:
            if type(v) is ast.Constant:
                parts.append(v.value)
            else:
                parts.append(self._formatted(v, scope))
        return "".join(parts)

    def _formatted(self, node, scope):
        v = self.ev(node.value, scope)
        if type(v) is TVar:
            raise Break("tensor formatted into a string", "FL114", node)
        v = self._plain(v)
        if node.conversion == ord("r"):
            v = repr(v)
        elif node.conversion == ord("s"):
            v = str(v)
        elif node.conversion == ord("a"):
            v = ascii(v)
        spec = self._joinedstr(node.format_spec, scope) if node.format_spec is not None else ""
        return format(v, spec)

    def _lambda(self, node, scope):
        return self.make_closure(node, scope, "<lambda>")

    def make_closure(self, node, scope, name):
        args = node.args
        defaults = [self.ev(d, scope) for d in args.defaults]
        kwdefaults = {a.arg: self.ev(d, scope) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None}
        frame = scope
        while type(frame) is Scope:
            frame = frame.parent
        return Closure(node, frame, defaults, kwdefaults, name)

    def _comprehension(self, node, scope):
        kind = type(node)
        out = [] if kind in (ast.ListComp, ast.GeneratorExp) else ({} if kind is ast.DictComp else set())

        def loop(gens, sc):
            if not gens:
                if kind is ast.DictComp:
                    out[self.hashable(self.ev(node.key, sc))] = self.ev(node.value, sc)
                elif kind is ast.SetComp:
                    out.add(self.hashable(self.ev(node.elt, sc)))
                else:
                    out.append(self.ev(node.elt, sc))
                return
            gen = gens[0]
            items = self.iterate(self.ev(gen.iter, sc))
            for item in items:
                inner = Scope(sc, {})
                self.assign_target(gen.target, item, inner, define=True)
                if all(self.truth(self.ev(cond, inner)) for cond in gen.ifs):
                    loop(gens[1:], inner)

        loop(node.generators, scope)
        return iter(out) if kind is ast.GeneratorExp else out

    def _starred(self, node, scope):
        raise Break("starred expression outside a call or display", None, node)

    def _call(self, node, scope):
        func = self.ev(node.func, scope)
        args, kwargs = self.call_args(node, scope)
        return self.call(func, args, kwargs, node)

    def call_args(self, node, scope):
        args = []
        for a in node.args:
            if type(a) is ast.Starred:
                args.extend(self.iterate(self.ev(a.value, scope)))
            else:
                args.append(self.ev(a, scope))
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                mapping = self.ev(kw.value, scope)
                for key in self.iterate(mapping):
                    kwargs[self.concrete(key)] = self.getitem_(mapping, key)
            else:
                kwargs[kw.arg] = self.ev(kw.value, scope)
        return args, kwargs

    # -- targets (assignment) --
    def assign_target(self, target, value, scope, define=False):
        t = type(target)
        if t is ast.Name:
            if define and type(scope) is Scope:
                scope.env[target.id] = value
            else:
                self.store(target.id, value, scope)
        elif t in (ast.Tuple, ast.List):
            items = self.iterate(value)
            star = next((i for i, e in enumerate(target.elts) if type(e) is ast.Starred), None)
            if star is None:
                if len(items) != len(target.elts):
                    raise ValueError(f"cannot unpack {len(items)} values into {len(target.elts)}")
                for e, v in zip(target.elts, items):
                    self.assign_target(e, v, scope, define)
            else:
                after = len(target.elts) - star - 1
                if len(items) < star + after:
                    raise ValueError("not enough values to unpack")
                for e, v in zip(target.elts[:star], items[:star]):
                    self.assign_target(e, v, scope, define)
                self.assign_target(target.elts[star].value, list(items[star:len(items) - after]), scope, define)
                for e, v in zip(target.elts[star + 1:], items[len(items) - after:]):
                    self.assign_target(e, v, scope, define)
        elif t is ast.Subscript:
            obj = self.ev(target.value, scope)
            key = self.ev(target.slice, scope)
            self.setitem_(obj, key, value, target)
        elif t is ast.Attribute:
            obj = self.ev(target.value, scope)
            self.setattr_(obj, target.attr, value, target)
        elif t is ast.Starred:
            raise Break("starred assignment target", None, target)
        else:
            raise Break(f"unsupported assignment target {t.__name__}", None, target)

_EVAL = {
    ast.Constant: ExprMixin._constant, ast.Name: ExprMixin._name, ast.Attribute: ExprMixin._attribute,
    ast.Subscript: ExprMixin._subscript, ast.Slice: ExprMixin._slice, ast.BinOp: ExprMixin._binop,
    ast.UnaryOp: ExprMixin._unaryop, ast.BoolOp: ExprMixin._boolop, ast.Compare: ExprMixin._compare,
    ast.IfExp: ExprMixin._ifexp, ast.NamedExpr: ExprMixin._namedexpr, ast.Tuple: ExprMixin._tuple,
    ast.List: ExprMixin._list, ast.Set: ExprMixin._set, ast.Dict: ExprMixin._dict,
    ast.JoinedStr: ExprMixin._joinedstr, ast.FormattedValue: ExprMixin._formatted,
    ast.Lambda: ExprMixin._lambda, ast.ListComp: ExprMixin._comprehension,
    ast.SetComp: ExprMixin._comprehension, ast.DictComp: ExprMixin._comprehension,
    ast.GeneratorExp: ExprMixin._comprehension, ast.Starred: ExprMixin._starred, ast.Call: ExprMixin._call,
}
