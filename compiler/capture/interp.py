"""Expression evaluation: Python concretely, tensors symbolically, outside values with guards.

`ext(value, source)` is the read policy: tensors become TVars (guarded on first use), immutable
values stay `Ext` until used (then guarded by value), containers stay `Ext` and are guarded by
structure as they are read, and every other object (functions, classes, modules, nn.Modules) is
guarded by identity at once and used directly.
"""
from __future__ import annotations

import ast
import builtins
import sys
import types

import torch

from .guards import constant_like
from .values import (BINOPS, CMPOPS, UNARYOPS, AttrSource, Break, CellSource, Closure, Ext, GlobalSource,
                     ItemSource, Source, TVar, is_dyn)

# Python modules whose attributes we treat as constants (no guards on reads through them).
LIBRARY_MODULES = ("torch", "math", "numpy", "operator", "functools", "itertools", "builtins", "typing",
                   "collections", "einops", "enum", "dataclasses", "abc", "numbers", "cmath", "string",
                   "re", "inspect", "types", "warnings", "logging", "copy", "random", "time")


def is_library_module(mod) -> bool:
    """A Python module (or a module's globals dict) from a library we never guard."""
    name = (mod.get("__name__") if isinstance(mod, dict) else getattr(mod, "__name__", "")) or ""
    return name.split(".")[0] in LIBRARY_MODULES


class TypeSource(Source):
    __slots__ = ("base",)

    def __init__(self, base):
        self.base = base

    def render(self, ctx):
        return f"type({self.base.render(ctx)})"

    def describe(self):
        return f"type({self.base.describe()})"

    def root(self):
        return self.base.root()

    def __eq__(self, other):
        return type(other) is TypeSource and other.base == self.base

    def __hash__(self):
        return hash(("type", self.base))


class Scope:
    """Comprehension scope: its own targets, everything else from the enclosing frame."""

    __slots__ = ("parent", "env")

    def __init__(self, parent, env):
        self.parent = parent
        self.env = env


class ExprMixin:
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
                if name in frame.env:
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
        v = self.concrete(v)
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

    # -- containers and objects --
    def iterate(self, v) -> list:
        t = type(v)
        if t is TVar:
            return list(iter(v))
        if t is Ext:
            value, source = v.value, v.source
            self.no_pending(v)
            if type(value) in (list, tuple):
                self.guards_now().type_is(source, type(value))
                self.guards_now().length(source, len(value))
                return [self.ext(x, ItemSource(source, i)) for i, x in enumerate(value)]
            if type(value) is dict:
                self.guards_now().keys_are(source, list(value))
                return list(value)
            return list(self.concrete(v))
        if t in (list, tuple, dict, set, str, range, torch.Size, frozenset):
            return list(v)
        if isinstance(v, torch.nn.Module):
            return self.module_items(v)
        if isinstance(v, types.GeneratorType) or type(v).__name__.endswith("iterator") or \
                t in (zip, enumerate, map, filter, reversed, type({}.keys()), type({}.values()),
                      type({}.items())):
            return list(v)
        if isinstance(v, tuple):  # namedtuple / return_types
            return list(v)
        raise Break(f"iterating over {t.__name__}", None)

    def module_items(self, m):
        from torch.nn import ModuleDict, ModuleList, ParameterList, Sequential
        src = self.sources.get(id(m))
        if isinstance(m, (ModuleList, Sequential)):
            if src is not None:
                self.guards_now().keys_are(AttrSource(src, "_modules"), list(m._modules))
            return [self.getattr_(m, k) if src is None else self.ext(v, AttrSource(src, k, "_modules"))
                    for k, v in m._modules.items()]
        if isinstance(m, ModuleDict):
            if src is not None:
                self.guards_now().keys_are(AttrSource(src, "_modules"), list(m._modules))
            return list(m._modules)
        if isinstance(m, ParameterList):
            return [self.getattr_(m, str(i)) for i in range(len(m))]
        raise Break(f"iterating over {type(m).__name__}", None)

    def getitem_(self, obj, key):
        t = type(obj)
        if t is TVar:
            return obj[key]
        if type(key) is Ext:
            key = self.concrete(key)
        if t is Ext:
            value, source = obj.value, obj.source
            done, stored = self.stored(obj, key)
            if done:
                return stored
            self.no_pending(obj)
            if type(value) in (list, tuple, dict) and type(key) in (int, str) and type(key) is not bool:
                self.guards_now().type_is(source, type(value))
                if type(value) is not dict:
                    self.guards_now().length(source, len(value))
                return self.ext(value[key], ItemSource(source, key))
            return self.concrete(obj)[key]
        if isinstance(obj, torch.nn.Module):
            from torch.nn import ModuleDict, ModuleList, Sequential
            if isinstance(obj, (ModuleList, Sequential)) and type(key) is int:
                items = self.module_items(obj)
                return items[key]
            if isinstance(obj, ModuleDict) and type(key) is str:
                return self.getattr_(obj, key)
            return self.call(type(obj).__getitem__, [obj, key], {}, None)
        if type(key) is TVar and t in (list, tuple, dict, str):
            raise Break("tensor used as a Python index", "FL104")
        return obj[key]

    def setitem_(self, obj, key, value, node):
        t = type(obj)
        if t is TVar:
            obj[key] = value
            return
        if t in (list, dict):
            self.before_mutation(obj)
            obj[self.hashable(key)] = value
            return
        if t is Ext:
            return self.defer_item_store(obj, self.hashable(key), value, node)
        raise Break("item assignment on an object from outside the function", None, node)

    def setattr_(self, obj, name, value, node):
        if type(obj) is TVar:
            setattr(obj, name, value)  # raises: tensors do not take attributes here
        if id(obj) in self.sources:
            return self.defer_attr_store(obj, name, value, node)
        raise Break("attribute assignment on an object from outside the function", None, node)

    def getattr_(self, obj, name):
        t = type(obj)
        if t is TVar:
            return getattr(obj, name)
        if t is Ext:
            value = obj.value
            if constant_like(value):
                return getattr(self.concrete(obj), name)
            if type(value) in (list, dict, tuple, set):
                return ExtMethod(self, obj, name)
            return self.getattr_(self.concrete(obj), name)
        if t is Closure:
            raise Break("attribute of a nested function", None)
        if isinstance(obj, types.ModuleType):
            value = getattr(obj, name)
            if is_library_module(obj):
                return value
            src = self.sources.get(id(obj))
            return self.ext(value, AttrSource(src, name)) if src is not None else value
        src = self.sources.get(id(obj))
        if src is None:  # library objects and values created in the trace
            value = getattr(obj, name)
            if isinstance(value, torch.Tensor) and type(value) is not TVar:  # unguarded: would be baked in
                raise Break(f"tensor attribute {name!r} of an object the capture cannot guard")
            return value
        return self.object_attr(obj, name, src)

    def object_attr(self, obj, name, src):
        """`obj.name` for an identity-guarded object: guard what the lookup depends on."""
        done, value = self.stored(obj, name)
        if done:
            return value
        cls = type(obj)
        class_attr = None
        for klass in cls.__mro__:
            if name in klass.__dict__:
                class_attr = klass.__dict__[name]
                break
        if isinstance(class_attr, property):
            if class_attr.fget is None:
                raise AttributeError(name)
            self.ext(class_attr.fget, AttrSource(TypeSource(src), name))
            return self.call(class_attr.fget, [obj], {}, None)
        d = getattr(obj, "__dict__", None)
        if d is not None and name in d:
            return self.ext(d[name], AttrSource(src, name))
        if isinstance(obj, torch.nn.Module):
            for via in ("_parameters", "_buffers", "_modules"):
                store = obj.__dict__.get(via)
                if store is not None and name in store:
                    value = store[name]
                    if value is None:
                        self.guards_now().value(AttrSource(src, name, via), None)
                        return None
                    return self.ext(value, AttrSource(src, name, via))
        if class_attr is not None:
            if isinstance(class_attr, (types.FunctionType, staticmethod, classmethod)):
                if not is_library_module(sys.modules.get(cls.__module__)):
                    self.ext(getattr(cls, name), AttrSource(TypeSource(src), name))
                return getattr(obj, name)
            if constant_like(class_attr):
                return self.ext(class_attr, AttrSource(TypeSource(src), name))
        return self.ext(getattr(obj, name), AttrSource(src, name))


class ExtMethod:
    """A method of a list/dict/tuple/set read from outside; reads are guarded, writes break."""

    _READS = {"get", "keys", "values", "items", "index", "count", "copy", "__getitem__", "__contains__",
              "__len__"}

    def __init__(self, cap, obj, name):
        if name not in dir(obj.value):
            raise AttributeError(f"{type(obj.value).__name__!r} object has no attribute {name!r}")
        self.cap = cap
        self.obj = obj
        self.name = name

    def __call__(self, *args, **kwargs):
        cap, obj, name = self.cap, self.obj, self.name
        if type(obj.value) is list and name in ("append", "extend", "insert") and not kwargs:
            return cap.defer_call_store(obj, name, args)
        cap.no_pending(obj)
        if name not in self._READS:
            raise Break(f"{type(obj.value).__name__}.{name}() on an object from outside the function")
        if type(obj.value) is dict and name in ("get", "__getitem__") and args and type(args[0]) in (int, str):
            key = args[0]
            present = key in obj.value
            cap.guards_now().contains(obj.source, key, present)
            if present:
                return cap.ext(obj.value[key], ItemSource(obj.source, key))
            if name == "get":
                return args[1] if len(args) > 1 else kwargs.get("default")
        if type(obj.value) is dict and name in ("keys", "values", "items"):
            keys = cap.iterate(obj)
            if name == "keys":
                return keys
            vals = [cap.getitem_(obj, k) for k in keys]
            return vals if name == "values" else list(zip(keys, vals))
        return getattr(cap.concrete(obj), name)(*[cap.concrete(a) for a in args],
                                                **{k: cap.concrete(v) for k, v in kwargs.items()})


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
