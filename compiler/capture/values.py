"""What the capture interpreter computes with.

Python values are evaluated concretely: the interpreter holds the real objects. Three kinds of
value are not plain objects:

* `TVar` — a tensor. Its metadata comes from a fake tensor; its data exists only at run time, in
  a region's graph node (while the region is open) or in a variable of the transformed program.
* `Ext` — a value read from outside the trace (an argument, a global, an attribute of a module, the
  result of a statement that ran in Python). Using it concretely installs a guard on its source.
* `Closure` — a lambda or nested `def` evaluated by the interpreter (inlined when called).

`Break` is raised wherever capture cannot continue in a region; the statement then runs in Python.
"""
from __future__ import annotations

import operator

import torch


class Break(Exception):
    """This statement cannot be captured: run it in Python (a graph break).

    `rule` is the analyzer's id (analysis/rules.py) where one corresponds; `node` the innermost
    AST node responsible (for line/column), in the function `info` (set where it is first known)."""

    def __init__(self, reason: str, rule: str | None = None, node=None):
        super().__init__(reason)
        self.reason = reason
        self.rule = rule
        self.node = node
        self.info = None


class Unsupported(Exception):
    """The whole function cannot be captured (route it through torch.compile instead)."""


class _Unbound:
    """What a local holds after a statement run in Python left it unassigned (an `except` path of
    a `try` that assigns it in its body): guards and jumps read it without raising; the
    interpreter's read of it raises UnboundLocalError, as the original function does."""

    def __repr__(self):
        return "<unbound local>"


UNBOUND = _Unbound()


def is_unbound(v) -> bool:
    return type(v) is Ext and v.value is UNBOUND


# --- sources: how a guard re-reads a value at run time -------------------------------------------

class Source:
    """A path from a root (argument, global, cell, program variable) to a value."""

    __slots__ = ()

    def render(self, ctx) -> str:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def root(self) -> Source:
        return self


class ArgSource(Source):
    """A parameter of the unit; `dyn`: at a resume point, a value Python computed at run time."""

    __slots__ = ("name", "dyn")

    def __init__(self, name, dyn=False):
        self.name = name
        self.dyn = dyn

    def render(self, ctx):
        return ctx.arg(self.name)

    def describe(self):
        return self.name

    def __eq__(self, other):
        return type(other) is ArgSource and other.name == self.name

    def __hash__(self):
        return hash(("arg", self.name))


class GlobalSource(Source):
    __slots__ = ("globals", "name")

    def __init__(self, globals_, name):
        self.globals = globals_
        self.name = name

    def render(self, ctx):
        return ctx.global_expr(self.globals, self.name)

    def describe(self):
        return self.name

    def __eq__(self, other):
        return type(other) is GlobalSource and other.globals is self.globals and other.name == self.name

    def __hash__(self):
        return hash(("global", id(self.globals), self.name))


class CellSource(Source):
    """A closure cell of a function (the root's own cells, or an inlined function's)."""

    __slots__ = ("cell", "name")

    def __init__(self, cell, name):
        self.cell = cell
        self.name = name

    def render(self, ctx):
        return f"{ctx.const(self.cell)}.cell_contents"

    def describe(self):
        return self.name

    def __eq__(self, other):
        return type(other) is CellSource and other.cell is self.cell

    def __hash__(self):
        return hash(("cell", id(self.cell)))


class VarSource(Source):
    """A value that lives in a variable of the transformed program (e.g. a fallback's result)."""

    __slots__ = ("value", "label")

    def __init__(self, value, label):
        self.value = value  # the Ext/TVar whose home variable is rendered
        self.label = label

    def render(self, ctx):
        return ctx.home_of(self.value)

    def describe(self):
        return self.label

    def __eq__(self, other):
        return type(other) is VarSource and other.value is self.value

    def __hash__(self):
        return hash(("var", id(self.value)))


class AttrSource(Source):
    """`base.name`; `via` says where an nn.Module keeps it ('_modules', '_parameters', '_buffers')
    so guards read the dict directly instead of going through Module.__getattr__."""

    __slots__ = ("base", "name", "via")

    def __init__(self, base, name, via=None):
        self.base = base
        self.name = name
        self.via = via

    def render(self, ctx):
        base = self.base.render(ctx)
        if self.via:
            return f"{base}.{self.via}[{self.name!r}]"
        if self.name.isidentifier():
            return f"{base}.{self.name}"
        return f"getattr({base}, {self.name!r})"

    def describe(self):
        return f"{self.base.describe()}.{self.name}"

    def root(self):
        return self.base.root()

    def __eq__(self, other):
        return type(other) is AttrSource and other.name == self.name and other.base == self.base

    def __hash__(self):
        return hash(("attr", self.base, self.name))


class ItemSource(Source):
    __slots__ = ("base", "key")

    def __init__(self, base, key):
        self.base = base
        self.key = key

    def render(self, ctx):
        return f"{self.base.render(ctx)}[{ctx.literal(self.key)}]"

    def describe(self):
        return f"{self.base.describe()}[{self.key!r}]"

    def root(self):
        return self.base.root()

    def __eq__(self, other):
        return type(other) is ItemSource and other.key == self.key and type(other.key) is type(self.key) \
            and other.base == self.base

    def __hash__(self):
        return hash(("item", self.base, repr(self.key)))


class CallSource(Source):
    """`base.method(*args)` for a read-only method with constant arguments (Mapping.get)."""

    __slots__ = ("base", "method", "args")

    def __init__(self, base, method, args):
        self.base = base
        self.method = method
        self.args = tuple(args)

    def render(self, ctx):
        return f"{self.base.render(ctx)}.{self.method}({', '.join(ctx.literal(a) for a in self.args)})"

    def describe(self):
        return f"{self.base.describe()}.{self.method}({', '.join(repr(a) for a in self.args)})"

    def root(self):
        return self.base.root()

    def __eq__(self, other):
        return type(other) is CallSource and other.method == self.method and other.args == self.args \
            and other.base == self.base

    def __hash__(self):
        return hash(("call", self.base, self.method, repr(self.args)))


class DefaultSource(Source):
    """A default argument value of an (inlined) function."""

    __slots__ = ("fn", "index", "kw")

    def __init__(self, fn, index, kw=False):
        self.fn = fn
        self.index = index
        self.kw = kw

    def render(self, ctx):
        if self.kw:
            return f"{ctx.const(self.fn)}.__kwdefaults__[{self.index!r}]"
        return f"{ctx.const(self.fn)}.__defaults__[{self.index}]"

    def describe(self):
        return f"{self.fn.__qualname__} default {self.index}"

    def __eq__(self, other):
        return type(other) is DefaultSource and other.fn is self.fn and other.index == self.index

    def __hash__(self):
        return hash(("default", id(self.fn), self.index))


# --- values -------------------------------------------------------------------------------------

def is_dyn(source) -> bool:
    """Was this value computed at run time (by a statement Python ran), not read from outside?"""
    root = source.root() if source is not None else None
    return isinstance(root, VarSource) or (type(root) is ArgSource and root.dyn)


class Ext:
    """A value from outside the trace, not yet specialized. `value` is the real object."""

    __slots__ = ("value", "source")

    def __init__(self, value, source: Source):
        self.value = value
        self.source = source

    def __repr__(self):
        return f"Ext({self.source.describe()}={type(self.value).__name__})"

    # An Ext that reaches Python code run concretely (inside a list passed to a builtin, say)
    # would be compared, hashed and tested for truth as an object, by identity: a wrong answer
    # without an error. Raising a Break instead runs that statement in Python.
    def _opaque(self, *args):
        raise Break(f"an outside {type(self.value).__name__} reached Python code run during capture")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __bool__ = __hash__ = _opaque


class Closure:
    """A lambda or nested def created while interpreting; called by inlining its body."""

    __slots__ = ("node", "frame", "defaults", "kwdefaults", "name")

    def __init__(self, node, frame, defaults, kwdefaults, name):
        self.node = node
        self.frame = frame
        self.defaults = defaults
        self.kwdefaults = kwdefaults
        self.name = name


_INPLACE_DUNDERS = {"__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__",
                    "__ipow__", "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__",
                    "__imatmul__"}
_BINARY_DUNDERS = ["__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
                   "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__",
                   "__rpow__", "__matmul__", "__rmatmul__", "__and__", "__rand__", "__or__", "__ror__",
                   "__xor__", "__rxor__", "__lshift__", "__rlshift__", "__rshift__", "__rrshift__",
                   "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"]
_UNARY_DUNDERS = ["__neg__", "__pos__", "__invert__", "__abs__"]


class TVar:
    """A tensor during capture. Operators and methods record ops into the open region.

    `cap` is the capture that owns it; `fake` carries shape/stride/dtype/device/requires_grad."""

    __slots__ = ("cap", "fake", "source", "pending_guard", "dyn", "__weakref__")

    def __init__(self, cap, fake, source=None):
        self.cap = cap
        self.fake = fake
        self.source = source  # where it was read from (None: computed in the trace)
        self.pending_guard = False
        self.dyn = False  # its sizes may differ from the fake's (dynamic=True): reading them matters

    # Python's isinstance() consults __class__: user code asking `isinstance(x, torch.Tensor)` or
    # `isinstance(p, nn.Parameter)` gets the answer for the real tensor.
    @property
    def __class__(self):
        return self.cap.tensor_class(self)

    def __getattr__(self, name):
        return self.cap.tensor_attr(self, name)

    def __setattr__(self, name, value):
        if name in TVar.__slots__:
            object.__setattr__(self, name, value)
        else:
            self.cap.tensor_setattr(self, name, value)

    def __bool__(self):
        raise Break("tensor converted to bool (data-dependent)", "FL101")

    def __int__(self):
        raise Break("tensor converted to int", "FL102")

    def __float__(self):
        raise Break("tensor converted to float", "FL102")

    def __complex__(self):
        raise Break("tensor converted to complex", "FL102")

    def __index__(self):
        raise Break("tensor used as a Python index", "FL104")

    def __format__(self, spec):
        raise Break("tensor formatted as a string", "FL114")

    def __str__(self):
        raise Break("tensor converted to a string", "FL114")

    def __repr__(self):
        raise Break("repr() of a tensor", "FL114")

    def __hash__(self):
        return id(self)

    def __len__(self):
        if self.fake.dim() == 0:
            raise TypeError("len() of a 0-d tensor")
        self.cap.cap.use_meta(self)
        self.cap.cap.observe(self)
        return self.fake.shape[0]

    def __iter__(self):
        if self.fake.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        self.cap.cap.observe(self)
        return iter(self.cap.torch_call(torch.Tensor.unbind, (self, 0), {}))

    def __contains__(self, item):
        raise Break("`in` on a tensor (data-dependent)", "FL101")

    def __getitem__(self, idx):
        return self.cap.torch_call(torch.Tensor.__getitem__, (self, idx), {})

    def __setitem__(self, idx, value):
        self.cap.torch_call(torch.Tensor.__setitem__, (self, idx, value), {})

    def __reduce_ex__(self, protocol):
        raise Break("tensor pickled or deep-copied", "FL120")

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cap = _find_cap(args, kwargs)
        return cap.torch_call(func, args, kwargs or {})


def _find_cap(args, kwargs):
    stack = [args, kwargs]
    while stack:
        a = stack.pop()
        if type(a) is TVar:
            return object.__getattribute__(a, "cap")
        if isinstance(a, (list, tuple)):
            stack.extend(a)
        elif isinstance(a, dict):
            stack.extend(a.values())
    raise RuntimeError("no traced tensor among the arguments")


def _make_binary(name):
    method = getattr(torch.Tensor, name, None) or getattr(torch.Tensor, "__" + name[3:])  # __imatmul__

    def op(self, other):
        return self.cap.torch_call(method, (self, other), {})
    op.__name__ = name
    return op


def _make_unary(name):
    method = getattr(torch.Tensor, name)

    def op(self):
        return self.cap.torch_call(method, (self,), {})
    op.__name__ = name
    return op


for _name in _BINARY_DUNDERS + sorted(_INPLACE_DUNDERS):
    setattr(TVar, _name, _make_binary(_name))
for _name in _UNARY_DUNDERS:
    setattr(TVar, _name, _make_unary(_name))


def is_tvar(x) -> bool:
    return type(x) is TVar


def contains(value, kinds) -> bool:
    """True if `value` (possibly nested in lists/tuples/dicts) holds an instance of `kinds`."""
    stack = [value]
    while stack:
        v = stack.pop()
        if type(v) in kinds:
            return True
        if type(v) in (list, tuple):
            stack.extend(v)
        elif type(v) is dict:
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)) and not isinstance(v, torch.Size):
            stack.extend(v)  # namedtuples, subclasses
    return False


BINOPS = {
    "Add": operator.add, "Sub": operator.sub, "Mult": operator.mul, "Div": operator.truediv,
    "FloorDiv": operator.floordiv, "Mod": operator.mod, "Pow": operator.pow, "MatMult": operator.matmul,
    "BitAnd": operator.and_, "BitOr": operator.or_, "BitXor": operator.xor, "LShift": operator.lshift,
    "RShift": operator.rshift,
}
INPLACE_BINOPS = {
    "Add": operator.iadd, "Sub": operator.isub, "Mult": operator.imul, "Div": operator.itruediv,
    "FloorDiv": operator.ifloordiv, "Mod": operator.imod, "Pow": operator.ipow, "MatMult": operator.imatmul,
    "BitAnd": operator.iand, "BitOr": operator.ior, "BitXor": operator.ixor, "LShift": operator.ilshift,
    "RShift": operator.irshift,
}
CMPOPS = {
    "Eq": operator.eq, "NotEq": operator.ne, "Lt": operator.lt, "LtE": operator.le, "Gt": operator.gt,
    "GtE": operator.ge, "Is": operator.is_, "IsNot": operator.is_not,
    "In": lambda a, b: a in b, "NotIn": lambda a, b: a not in b,
}
UNARYOPS = {"USub": operator.neg, "UAdd": operator.pos, "Invert": operator.invert, "Not": operator.not_}
