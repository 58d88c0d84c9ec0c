"""Calls: record torch ops, inline Python functions through their source, run pure builtins, and
turn everything else into a graph break with the analyzer's rule id."""
from __future__ import annotations

import builtins
import collections.abc
import functools
import types

import torch

from .frames import Frame, Unsupported, closure_info, func_info
from .guards import constant_like
from .objects import ExtMethod, overrides
from .tensors import BoundTensorMethod, torch_callable
from .values import AttrSource, Break, CallSource, Closure, DefaultSource, Ext, ItemSource, TVar, contains

MAX_DEPTH = 40

# Calls into these modules are graph breaks (Dynamo skips them too); rule ids from analysis/rules.py.
_MODULE_RULES = {
    "logging": ("FL111", "logging call"), "warnings": ("FL112", "warnings.warn()"),
    "copy": ("FL120", "copy.deepcopy()/copy.copy()"), "time": ("FL121", "call into `time`"),
    "random": ("FL121", "call into `random`"), "uuid": ("FL121", "call into `uuid`"),
    "datetime": ("FL121", "call into `datetime`"), "numpy": ("FL122", "NumPy call"),
    "io": ("FL113", "writing to a stream or file"), "_io": ("FL113", "writing to a stream or file"),
    "os": (None, "call into `os`"), "sys": (None, "call into `sys`"), "pdb": (None, "debugger"),
    "subprocess": (None, "subprocess"), "pickle": (None, "pickle"), "json": (None, "json"),
}
# Modules whose functions are pure on plain values (run concretely).
_PURE_MODULES = {"math", "cmath", "operator", "functools", "itertools", "_operator", "_functools", "string",
                 "collections", "numbers", "typing", "enum", "re", "_collections", "abc", "posixpath", "inspect"}
_PURE_TYPES = {int, float, bool, str, bytes, complex, tuple, list, dict, set, frozenset, range, slice,
               enumerate, zip, reversed, map, filter, torch.Size, torch.device, torch.finfo, torch.iinfo,
               type(None), object}
_PURE_BUILTINS = {abs, min, max, sum, round, divmod, pow, all, any, sorted, chr, ord, hex, bin, oct,
                  repr, format, callable, isinstance, issubclass, iter, next, len, getattr,
                  hasattr, ascii}
_CONTAINER_MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse",
                       "update", "setdefault", "popitem", "add", "discard", "__setitem__", "__delitem__",
                       "__iadd__", "__imul__", "__ior__", "difference_update", "intersection_update",
                       "symmetric_difference_update"}


def grad_decorator(func):
    """The grad mode a `@torch.no_grad()`-style decorator wrapper sets, or None if `func` is not one."""
    code = getattr(func, "__code__", None)
    if code is None or code.co_name != "decorate_context" or not code.co_filename.endswith("_contextlib.py") \
            or not hasattr(func, "__wrapped__"):  # (functools.wraps copied __module__ from the function)
        return None
    cells = dict(zip(code.co_freevars, func.__closure__ or ()))
    factory = cells.get("ctx_factory")
    ctx = getattr(factory.cell_contents, "__self__", None) if factory is not None else None
    if type(ctx) in (torch.no_grad, torch.enable_grad):
        return type(ctx) is torch.enable_grad
    if type(ctx) is torch.set_grad_enabled:
        return bool(ctx.mode)
    return None


def _module_of(func) -> str:
    owner = getattr(func, "__self__", None)
    if owner is not None and not isinstance(owner, types.ModuleType) and not isinstance(owner, type):
        mod = type(owner).__module__ or ""
        if mod != "builtins":
            return mod
    return getattr(func, "__module__", None) or ""


def _disabled(func) -> bool:
    return bool(getattr(func, "_torchdynamo_disable", False))


class CallMixin:
    def call(self, func, args, kwargs, node):
        t = type(func)
        if t is BoundTensorMethod or t is ExtMethod:
            return func(*args, **kwargs)
        if t is TVar:
            raise TypeError("'Tensor' object is not callable")
        if t is Ext:
            func = self.concrete(func)
            t = type(func)
        special = _SPECIAL.get(id(func))
        if special is not None and special[0] is func:
            return special[1](self, args, kwargs, node)
        if t is functools._lru_cache_wrapper:  # as Dynamo does: ignore the cache, inline the function
            return self.call(func.__wrapped__, args, kwargs, node)
        if t is functools.partial:  # `partial(F.gelu, approximate="tanh")`: the call it stands for
            return self.call(func.func, [*func.args, *args], {**func.keywords, **kwargs}, node)
        if t is types.MethodType:
            owner = func.__self__
            if isinstance(owner, torch.nn.Module) and func.__func__ in _MODULE_LISTINGS:
                return self.module_listing(owner, func.__name__, args, kwargs, node)
            if isinstance(owner, collections.abc.Mapping) and type(owner) is not dict and \
                    func.__name__ in ("get", "__getitem__", "__contains__") and id(owner) in self.sources:
                plain = [self._plain(a) for a in args]
                if all(constant_like(a) for a in plain) and not kwargs:
                    src = CallSource(self.sources[id(owner)], func.__name__, plain)
                    return self.ext(func(*plain), src)
        frame = self.prepare_inline(func, args, kwargs, node)
        if frame is not None:
            return self.run_nested(frame, node)
        if t is types.MethodType:
            return self.call(func.__func__, [func.__self__, *args], kwargs, node)
        if torch_callable(func):
            return self.tracer.torch_call(func, tuple(args), kwargs)
        if isinstance(func, types.BuiltinMethodType):  # (`builtin_method`, as re.Pattern.search, is a subclass)
            return self.call_builtin(func, args, kwargs, node)
        if isinstance(func, type):
            return self.construct(func, args, kwargs, node)
        if t is types.FunctionType and _module_of(func).split(".")[0] in _PURE_MODULES and \
                not contains((args, kwargs), (TVar,)):  # e.g. inspect.signature, functools.reduce
            return func(*[self._plain(a) for a in args], **{k: self._plain(v) for k, v in kwargs.items()})
        rule = _MODULE_RULES.get(_module_of(func).split(".")[0])
        if rule is not None:
            raise Break(f"{rule[1]} ({_name(func)})", rule[0], node)
        raise Break(f"call to {_name(func)} (not traceable: no Python source)", None, node)

    def module_listing(self, m, name, args, kwargs, node):
        """`m.parameters()`, `m.named_modules()`, ...: the real listing, each item read through its
        attribute path (so it is guarded like `self.a.b.weight`)."""
        named = "named_" + name if not name.startswith("named_") else name
        plain = [self._plain(a) for a in args]
        items = list(getattr(m, named)(*plain, **{k: self._plain(v) for k, v in kwargs.items()}))
        src = self.sources.get(id(m))
        if src is None:
            raise Break(f"{type(m).__name__}.{name}() of a module created in the function", None, node)
        out = []
        for path, obj in items:
            source, owner = src, m
            parts = path.split(".") if path else []
            for i, part in enumerate(parts):
                last = i == len(parts) - 1
                via = "_modules" if not last or isinstance(obj, torch.nn.Module) else \
                    "_parameters" if part in owner._parameters else "_buffers"
                self.guards_now().keys_are(AttrSource(source, via), list(owner.__dict__[via]))
                source = AttrSource(source, part, via)
                owner = owner.__dict__[via][part]
            value = self.ext(obj, source) if parts else m
            out.append((path, value) if name.startswith("named_") else value)
        return iter(out)

    def call_builtin(self, func, args, kwargs, node):
        owner = getattr(func, "__self__", None)
        name = func.__name__
        if type(owner) in (list, dict, set):  # a container created in this function
            if name in _CONTAINER_MUTATORS:
                self.before_mutation(owner)
            return func(*[self._plain(a) for a in args], **{k: self._plain(v) for k, v in kwargs.items()})
        module = _module_of(func).split(".")[0]
        rule = _MODULE_RULES.get(module)
        if rule is not None:
            if module == "numpy" and all(constant_like(self._plain(a)) for a in args):
                return func(*[self._plain(a) for a in args], **{k: self._plain(v) for k, v in kwargs.items()})
            raise Break(f"{rule[1]} ({name})", rule[0], node)
        pure = module in _PURE_MODULES or constant_like(owner) or func in _PURE_BUILTINS
        if pure:
            if module in ("math", "cmath") and contains((args, kwargs), (TVar,)):
                raise Break(f"math.{name} on a tensor needs its value on the host", "FL104", node)
            return func(*[self._plain(a) for a in args], **{k: self._plain(v) for k, v in kwargs.items()})
        raise Break(f"call to {_name(func)} (not traceable: no Python source)", None, node)

    def _plain(self, v):
        """Arguments for concrete Python calls: Ext values specialized (also inside tuples and
        lists the function built), closures callable."""
        t = type(v)
        if t is Ext:
            return self.concrete(v)
        if t is Closure:
            return _ClosureCallable(self, v)
        if t is tuple and any(type(x) in (Ext, Closure, tuple, list) for x in v):
            return tuple(self._plain(x) for x in v)
        if t is list:
            self._settle(v, set())
        return v

    def _settle(self, items, seen):
        """Outside constants in a list the function built, specialized in place: Python code given
        the list sees the real values, and the list keeps its identity (it may be appended to
        later). Outside containers in it stay Ext (a copy would not be the same object): Python
        code comparing or hashing them breaks."""
        seen.add(id(items))
        for i, x in enumerate(items):
            if type(x) is tuple or (type(x) is Ext and constant_like(x.value)):
                self.before_mutation(items)  # the guards go if the statement runs in Python
                items[i] = self._plain(x)
            elif type(x) is list and id(x) not in seen:
                self._settle(x, seen)

    def construct(self, cls, args, kwargs, node):
        if cls in _ITERATING and not kwargs:  # their arguments are iterated here, with guards
            first = 1 if cls in (map, filter) else 0
            its = [self.iterate(a) if i >= first and not (cls is enumerate and i == 1) else self._plain(a)
                   for i, a in enumerate(args)]
            return cls(*its)
        if cls is dict and len(args) == 1 and not kwargs and type(args[0]) is Ext and type(args[0].value) is dict:
            # `d = dict(data)` of a dict from outside: a copy whose items are read through it
            keys = self.iterate(args[0])  # (guards the keys)
            return {k: self.ext(args[0].value[k], ItemSource(args[0].source, k)) for k in keys}
        if cls in _PURE_TYPES:
            if cls in (list, tuple, set, frozenset, dict) and len(args) == 1 and not kwargs \
                    and type(args[0]) is not dict:
                return cls(self.iterate(args[0]))
            return cls(*[self._plain(a) for a in args], **{k: self._plain(v) for k, v in kwargs.items()})
        if issubclass(cls, torch.nn.Parameter):
            raise Break("nn.Parameter created inside compiled code", "FL141", node)
        if issubclass(cls, tuple) and hasattr(cls, "_fields"):
            return cls(*args, **kwargs)  # namedtuple: a plain container of traced values
        raise Break(f"constructs a {cls.__qualname__} object", None, node)

    # -- inlining Python functions --
    def prepare_inline(self, func, args, kwargs, node, module_method=False, generator=False):
        """A Frame ready to run `func(*args, **kwargs)` by interpreting its source, or None if
        `func` is not a Python function we inline. A module's methods are inlined wherever they are
        defined (QuantStub.forward, FloatFunctional.mul, in torch.ao, too): they are not ops.
        A generator function is inlined only where `generator` says the call is a `for` loop's
        iterable (GenLoop)."""
        t = type(func)
        if t is Closure:
            return self._bind_closure(func, args, kwargs)
        if t is types.MethodType and isinstance(func.__func__, types.FunctionType):
            return self.prepare_inline(func.__func__, [func.__self__, *args], kwargs, node,
                                       module_method or isinstance(func.__self__, torch.nn.Module), generator)
        if t is functools.partial:
            return self.prepare_inline(func.func, [*func.args, *args], {**func.keywords, **kwargs}, node,
                                       generator=generator)
        if isinstance(func, torch.nn.Module):
            return self._module_frame(func, args, kwargs, node)
        if t is not types.FunctionType:
            if callable(func) and not isinstance(func, type) and type(func).__module__ not in ("builtins",) \
                    and isinstance(getattr(type(func), "__call__", None), types.FunctionType) \
                    and id(func) in self.sources:
                call = self.object_attr(func, "__call__", self.sources[id(func)])
                return self.prepare_inline(call, args, kwargs, node)
            return None
        module = func.__module__ or ""
        if grad_decorator(func) is not None or func.__code__.co_name == "decorate_context":
            return self._decorated_frame(func, args, kwargs, node)
        if _disabled(func):
            raise Break(f"{func.__qualname__} is marked torch.compiler.disable", "FL130", node)
        if torch_callable(func) and not module.startswith("torch.nn.modules") and not module_method:
            return None
        top = module.split(".")[0]
        if top in _MODULE_RULES:
            rule = _MODULE_RULES[top]
            raise Break(f"{rule[1]} ({func.__qualname__})", rule[0], node)
        if top in _PURE_MODULES:
            return None
        try:
            info = func_info(func)
        except Unsupported as e:
            raise Break(f"cannot inline {func.__qualname__}: {e}", None, node) from None
        if info.generator and not generator:
            raise Break(f"cannot inline {func.__qualname__}: a generator used other than as a for loop's iterable",
                        None, node)
        if self.depth >= MAX_DEPTH:
            raise Break("inlining too deep (recursion?)", None, node)
        src = self.sources.get(id(func))
        if src is not None and not module.startswith("torch."):
            self.guards_now().code_is(src, func)
        return self._function_frame(info, func, args, kwargs)

    def _decorated_frame(self, func, args, kwargs, node):
        """`@torch.no_grad()` / `@torch.enable_grad()` / `@torch.set_grad_enabled(b)` functions: the
        wrapped function, run under that grad mode."""
        grad = grad_decorator(func)
        if grad is None:
            raise Break(f"{func.__qualname__} is decorated with a context manager", None, node)
        frame = self.prepare_inline(func.__wrapped__, args, kwargs, node)
        if frame is not None:
            frame.ambient = self.ambient.with_grad(grad)
        return frame

    def _module_frame(self, m, args, kwargs, node):
        src = self.sources.get(id(m))
        if type(m).__call__ is not torch.nn.Module.__call__:
            raise Break(f"{type(m).__qualname__} overrides __call__", None, node)
        from .guards import no_hooks
        if not no_hooks(m):
            raise Break(f"{type(m).__qualname__} has hooks", None, node)
        if src is not None:
            self.guards_now().no_hooks(src)
            forward = self.object_attr(m, "forward", src)
        else:
            forward = m.forward
        return self.prepare_inline(forward, args, kwargs, node, module_method=True)

    def _bind(self, info, args, kwargs, defaults, kwdefaults):
        """Python's argument binding; `defaults(i)`/`kwdefaults(name)` give a default's value."""
        names, npos = info.argnames, info.npos
        env = {}
        if len(args) > npos and not info.varargs:
            raise TypeError(f"{info.qualname}() takes {npos} positional arguments but {len(args)} were given")
        env.update(zip(names[:npos], args))
        if info.varargs:
            env[info.varargs] = tuple(args[npos:])
        extra = {}
        for k, v in kwargs.items():
            if k in names[info.posonly:]:
                if k in env:
                    raise TypeError(f"{info.qualname}() got multiple values for argument {k!r}")
                env[k] = v
            elif info.varkw:
                extra[k] = v
            else:
                raise TypeError(f"{info.qualname}() got an unexpected keyword argument {k!r}")
        for i, name in enumerate(names):
            if name not in env:
                value = defaults(i) if i < npos else kwdefaults(name)
                if value is _MISSING:
                    raise TypeError(f"{info.qualname}() missing required argument {name!r}")
                env[name] = value
        if info.varkw:
            env[info.varkw] = extra
        return env

    def _function_frame(self, info, func, args, kwargs):
        defaults = func.__defaults__ or ()
        first = info.npos - len(defaults)
        kwd = func.__kwdefaults__ or {}

        def default(i):
            if i < first:
                return _MISSING
            return self.ext(defaults[i - first], DefaultSource(func, i - first))

        def kwdefault(name):
            return self.ext(kwd[name], DefaultSource(func, name, kw=True)) if name in kwd else _MISSING
        return Frame(info, self._bind(info, args, kwargs, default, kwdefault), self.frame_prefix(info))

    def _bind_closure(self, c, args, kwargs):
        info = closure_info(c)
        first = info.npos - len(c.defaults)

        def default(i):
            return c.defaults[i - first] if i >= first else _MISSING

        def kwdefault(name):
            return c.kwdefaults.get(name, _MISSING)
        env = self._bind(info, args, kwargs, default, kwdefault)
        return Frame(info, env, self.frame_prefix(info), closure=c.frame)


_MISSING = object()


class _ClosureCallable:
    """Lets builtins such as map/sorted(key=...) call an interpreted lambda."""

    def __init__(self, cap, closure):
        self.cap = cap
        self.closure = closure

    def __call__(self, *args, **kwargs):
        return self.cap.call(self.closure, list(args), kwargs, None)


def _name(func) -> str:
    mod = getattr(func, "__module__", None)
    qual = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or type(func).__name__
    return f"{mod}.{qual}" if mod and mod != "builtins" else qual


# --- builtins with their own semantics -------------------------------------------------------------

def _print(cap, args, kwargs, node):
    raise Break("print() in compiled code", "FL110", node)


def _isinstance(cap, args, kwargs, node):
    obj, cls = args
    cls = cap._plain(cls)
    if type(obj) is TVar:
        return issubclass(cap.tracer.tensor_class(obj), cls) if isinstance(cls, type) else \
            any(issubclass(cap.tracer.tensor_class(obj), c) for c in cls)
    if type(obj) is Ext:
        cap.guards_now().type_is(obj.source, type(obj.value))
        return isinstance(obj.value, cls)
    if type(obj) is Closure:
        return isinstance(_dummy_function, cls)
    return isinstance(obj, cls)


def _dummy_function():
    pass


def _type(cap, args, kwargs, node):
    if len(args) != 1:
        raise Break("type() with three arguments creates a class", None, node)
    obj = args[0]
    if type(obj) is TVar:
        return cap.tracer.tensor_class(obj)
    if type(obj) is Ext:
        cap.guards_now().type_is(obj.source, type(obj.value))
        return type(obj.value)
    if type(obj) is Closure:
        return types.FunctionType
    return type(obj)


def _len(cap, args, kwargs, node):
    obj = args[0]
    if type(obj) is Ext and type(obj.value) in (list, tuple, dict, set, str):
        extra = cap.pending_length(obj)
        if extra is None:
            cap.no_pending(obj)
        cap.guards_now().type_is(obj.source, type(obj.value))
        cap.guards_now().length(obj.source, len(obj.value))
        return len(obj.value) + (extra or 0)
    if isinstance(obj, torch.nn.Module):
        if overrides(obj, "__len__"):
            return cap.call(type(obj).__len__, [obj], {}, node)
        return len(cap.module_items(obj))
    return len(cap._plain(obj))


def _getattr(cap, args, kwargs, node):
    obj, name = args[0], cap._plain(args[1])
    try:
        return cap.getattr_(obj, name)
    except AttributeError:
        if len(args) > 2:
            return args[2]
        raise


def _hasattr(cap, args, kwargs, node):
    obj, name = args[0], cap._plain(args[1])
    if type(obj) is Ext and not constant_like(obj.value):
        result = hasattr(obj.value, name)
        cap.guards_now().hasattr_is(obj.source, name, result)
        return result
    try:
        cap.getattr_(obj, name)
        return True
    except AttributeError:
        return False


def _setattr(cap, args, kwargs, node):
    cap.setattr_(args[0], cap._plain(args[1]), args[2], node)


def _iter(cap, args, kwargs, node):
    if len(args) != 1:
        raise Break("iter() with a sentinel", None, node)
    return iter(cap.iterate(args[0]))


def _sorted(cap, args, kwargs, node):
    items = cap.iterate(args[0])
    if any(type(x) is TVar for x in items):
        raise Break("sorted() over tensors compares their values in Python", "FL143", node)
    return sorted(items, **{k: cap._plain(v) for k, v in kwargs.items()})


def _hash(cap, args, kwargs, node):
    if contains(args, (TVar,)):
        raise Break("hash() of a tensor (its identity) inside compiled code", None, node)
    return hash(cap._plain(args[0]))


def _id(cap, args, kwargs, node):
    raise Break("id() of an object inside compiled code", None, node)


def _io(cap, args, kwargs, node):
    raise Break("I/O inside compiled code", "FL113", node)


def _refuse(cap, args, kwargs, node):
    raise Break("introspection or dynamic code inside compiled code", None, node)


def _is_compiling(cap, args, kwargs, node):
    return True


def _super(cap, args, kwargs, node):
    if args:
        return super(*[cap._plain(a) for a in args])
    frame = cap.current_frame()
    info = frame.info
    if "__class__" not in info.freevars or not info.argnames:
        raise Break("super() outside a method", None, node)
    cls = cap.load("__class__", frame, node)
    return super(cls, frame.env[info.argnames[0]])


_ITERATING = {enumerate, zip, reversed, map, filter}
_MODULE_LISTINGS = {getattr(torch.nn.Module, n) for n in (
    "parameters", "named_parameters", "buffers", "named_buffers", "children", "named_children", "modules",
    "named_modules")}

_SPECIAL = {}
for _f, _h in [(builtins.print, _print), (builtins.isinstance, _isinstance), (builtins.type, _type),
               (builtins.len, _len), (builtins.getattr, _getattr), (builtins.hasattr, _hasattr),
               (builtins.setattr, _setattr), (builtins.iter, _iter), (builtins.sorted, _sorted),
               (builtins.id, _id), (builtins.hash, _hash), (builtins.open, _io), (builtins.input, _io), (builtins.vars, _refuse),
               (builtins.dir, _refuse), (builtins.locals, _refuse), (builtins.globals, _refuse),
               (builtins.eval, _refuse), (builtins.exec, _refuse), (builtins.compile, _refuse),
               (builtins.breakpoint, _refuse), (builtins.__import__, _refuse), (builtins.delattr, _refuse),
               (builtins.super, _super), (torch.compiler.is_compiling, _is_compiling)]:
    _SPECIAL[id(_f)] = (_f, _h)
try:
    import torch._dynamo.external_utils as _eu
    _SPECIAL[id(_eu.is_compiling)] = (_eu.is_compiling, _is_compiling)
except (ImportError, AttributeError):
    pass

