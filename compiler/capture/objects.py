"""Reading and writing containers and objects: iteration, items, attributes (with the guards
each read implies), nn.Module attribute lookup, and methods of outside lists/dicts."""
from __future__ import annotations

import sys
import types

import torch

from .guards import constant_like
from .values import AttrSource, Break, Closure, Ext, ItemSource, Source, TVar


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


def overrides(m, name) -> bool:
    """Whether `m`'s class, a subclass of a torch.nn container, redefines `name`. Its own code must
    then run instead of reading `_modules`: fairseq's LayerDropModuleList.__iter__ draws random
    numbers and skips layers."""
    from torch.nn import ModuleDict, ModuleList, ParameterList, Sequential
    for base in (ModuleList, Sequential, ModuleDict, ParameterList):
        if isinstance(m, base):
            return getattr(type(m), name) is not getattr(base, name)
    return False


class ObjectMixin:
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
            if overrides(v, "__iter__"):  # run the subclass's own (inlined, or a break if a generator)
                return self.iterate(self.call(type(v).__iter__, [v], {}, None))
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
            if type(value) is list and type(key) is int and -len(value) <= key < 0:
                key += len(value)  # the slot a store keyed (the length is guarded below)
            done, stored = self.stored(obj, key)
            if done:
                return stored
            if not self.only_item_stores_pending(obj):  # other slots' stores do not change this one
                self.no_pending(obj)
            if type(value) in (list, tuple, dict) and type(key) in (int, str) and type(key) is not bool:
                self.guards_now().type_is(source, type(value))
                if type(value) is not dict:
                    self.guards_now().length(source, len(value))
                return self.ext(value[key], ItemSource(source, key))
            return self.concrete(obj)[key]
        if isinstance(obj, torch.nn.Module):
            from torch.nn import ModuleDict, ModuleList, Sequential
            if not overrides(obj, "__getitem__"):  # else the subclass's own runs, below
                if isinstance(obj, (ModuleList, Sequential)) and type(key) is int:
                    return self.module_items(obj)[key]
                if isinstance(obj, ModuleDict) and type(key) is str:
                    return self.getattr_(obj, key)
            return self.call(type(obj).__getitem__, [obj, key], {}, None)
        if type(key) is TVar and t in (list, tuple, dict, str):
            raise Break("tensor used as a Python index", "FL104")
        if isinstance(obj, (dict, list)) and id(obj) in self.sources and type(key) in (int, str):
            # a defaultdict/OrderedDict from outside (kept as the object itself): what it holds is
            # read from outside too, so a store into it is deferred like any other, never done
            # with a traced value (`self.history[name].append(v)`)
            source = self.sources[id(obj)]
            if isinstance(obj, dict):
                if key not in obj:  # a defaultdict's __missing__ inserts: Python runs it
                    raise Break(f"a missing key of a {t.__name__} from outside the function")
                self.guards_now().contains(source, key, True)
            return self.ext(obj[key], ItemSource(source, key))
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
