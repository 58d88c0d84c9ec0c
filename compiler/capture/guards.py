"""Guards: what a captured program assumed, checked before it runs again.

A `GuardSet` collects the checks of one epoch (the function entry, or the stretch after a statement
that ran in Python). Rendered, it is one Python boolean expression; tensors are checked in a single
C++ `TensorGuards` call (shape, strides, dtype, device, requires_grad, tensor type), the global
state (grad mode, autocast, default dtype, deterministic flags, ...) in one `GlobalStateGuard`.
"""
from __future__ import annotations

import math

import torch
from torch._C._dynamo.guards import GlobalStateGuard, TensorGuards

from .values import Source

_SIMPLE = (int, str, bytes, bool, type(None), float, complex)


def same(a, b) -> bool:
    """Equality that also requires equal types, recursively (1 == 1.0 == True must not pass)."""
    if type(a) is not type(b):
        return False
    if type(a) in (tuple, list, torch.Size):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if type(a) is float and math.isnan(a):
        return math.isnan(b)
    if type(a) is dict:
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


def constant_like(v) -> bool:
    """Values guarded by equality (immutable, compared by value)."""
    if type(v) in _SIMPLE or isinstance(v, (torch.dtype, torch.device, torch.memory_format, torch.layout)):
        return True
    if type(v) in (tuple, torch.Size, frozenset):
        return all(constant_like(x) for x in v)
    return type(v) in (range, slice, type(Ellipsis))


class Term:
    """One check: `expr(ctx)` renders it, `text` says it in words."""

    __slots__ = ("key", "render", "text")

    def __init__(self, key, render, text):
        self.key = key
        self.render = render
        self.text = text


def _fmt_tensor(t) -> str:
    dims = ", ".join(str(s) for s in t.shape)
    rg = ", requires_grad" if t.requires_grad else ""
    kind = "Parameter" if isinstance(t, torch.nn.Parameter) else "Tensor"
    return f"{kind} {str(t.dtype)[6:]}[{dims}] stride {tuple(t.stride())} on {t.device}{rg}"


class GuardSet:
    def __init__(self, epoch: int):
        self.epoch = epoch
        self.terms: list[Term] = []
        self.keys: set = set()
        self.tensors: list = []  # (TVar, real tensor, dynamic dims)
        self.global_state: GlobalStateGuard | None = None
        self.global_text = ""

    def __bool__(self):
        return bool(self.terms or self.tensors or self.global_state)

    def mark(self):
        return (len(self.terms), len(self.tensors), self.global_state)

    def rollback(self, mark):
        """Forget checks added by a statement that then ran in Python instead."""
        nterms, ntensors, state = mark
        for t in self.terms[nterms:]:
            self.keys.discard(t.key)
        del self.terms[nterms:]
        for tv, _, _, _ in self.tensors[ntensors:]:
            tv.pending_guard = True
        del self.tensors[ntensors:]
        self.global_state = state

    def _add(self, key, render, text):
        if key not in self.keys:
            self.keys.add(key)
            self.terms.append(Term(key, render, text))

    # -- kinds of checks --
    def value(self, source: Source, v):
        if v is None or type(v) is bool:
            self._add(("is", source), lambda c: f"{source.render(c)} is {v}", f"{source.describe()} is {v}")
        elif type(v) in (int, str, bytes):
            self._add(("eq", source), lambda c: f"(type({source.render(c)}) is {type(v).__name__} and "
                                                f"{source.render(c)} == {v!r})",
                      f"{source.describe()} == {v!r}")
        else:
            self._add(("eq", source), lambda c: f"{c.helper('same')}({source.render(c)}, {c.const(v)})",
                      f"{source.describe()} == {v!r}")

    def identity(self, source: Source, obj):
        name = getattr(obj, "__qualname__", None) or type(obj).__name__
        self._add(("id", source), lambda c: f"{source.render(c)} is {c.const(obj)}",
                  f"{source.describe()} is the same object ({name})")

    def type_is(self, source: Source, t):
        self._add(("type", source), lambda c: f"type({source.render(c)}) is {c.const(t)}",
                  f"type({source.describe()}) is {t.__qualname__}")

    def length(self, source: Source, n: int):
        self._add(("len", source), lambda c: f"len({source.render(c)}) == {n}", f"len({source.describe()}) == {n}")

    def keys_are(self, source: Source, keys: list):
        self._add(("keys", source), lambda c: f"list({source.render(c)}) == {c.const(keys)}",
                  f"keys of {source.describe()} are {keys!r}")

    def contains(self, source: Source, key, result: bool):
        self._add(("in", source, repr(key)), lambda c: f"({c.literal(key)} in {source.render(c)}) is {result}",
                  f"{key!r} {'in' if result else 'not in'} {source.describe()}")

    def hasattr_is(self, source: Source, name: str, result: bool):
        self._add(("hasattr", source, name),
                  lambda c: f"hasattr({source.render(c)}, {name!r}) is {result}",
                  f"hasattr({source.describe()}, {name!r}) is {result}")

    def not_global(self, globals_, name: str):
        self._add(("noglobal", id(globals_), name), lambda c: f"{name!r} not in {c.globals_ref(globals_)}",
                  f"{name} is the builtin (no global shadows it)")

    def code_is(self, source: Source, fn):
        code = fn.__code__
        self._add(("code", source), lambda c: f"{source.render(c)}.__code__ is {c.const(code)}",
                  f"code of {fn.__qualname__} unchanged")

    def no_hooks(self, source: Source):
        self._add(("hooks", source), lambda c: f"{c.helper('no_hooks')}({source.render(c)})",
                  f"{source.describe()} has no forward hooks")

    def alias(self, tv_expr, source: Source, label: str):
        self._add(("alias", source), lambda c: f"{source.render(c)} is {tv_expr(c)}",
                  f"{source.describe()} is the same tensor as {label}")

    def storage_pattern(self, exprs, pattern, labels):
        self._add(("storages",), lambda c: f"{c.helper('storages')}({', '.join(e(c) for e in exprs)}) == {pattern!r}",
                  f"storage sharing among {', '.join(labels)} is {pattern!r}")

    def tensor(self, tv, real, label: str, dynamic=()):
        self.tensors.append((tv, real, tuple(dynamic), label))

    def state(self):
        if self.global_state is None:
            self.global_state = GlobalStateGuard()
            from .ambient import Ambient
            dd = str(torch.get_default_dtype())[6:]
            det = "on" if torch.are_deterministic_algorithms_enabled() else "off"
            self.global_text = f"{Ambient.current().describe()}, default dtype {dd}, deterministic {det}"

    # -- rendering --
    def render(self, ctx) -> str:
        parts = []
        if self.global_state is not None:
            parts.append(f"{ctx.const(self.global_state)}.check()")
        parts.extend(t.render(ctx) for t in self.terms if t.key[0] in ("id", "type", "code", "noglobal"))
        if self.tensors:
            reals = [r for _, r, _, _ in self.tensors]
            sizes = [[None if i in dyn else s for i, s in enumerate(r.shape)] for _, r, dyn, _ in self.tensors]
            strides = [[None if dyn else s for s in r.stride()] for _, r, dyn, _ in self.tensors]
            tg = TensorGuards(*reals, dynamic_dims_sizes=sizes, dynamic_dims_strides=strides)
            exprs = ", ".join(ctx.tensor_expr(tv) for tv, _, _, _ in self.tensors)
            parts.append(f"{ctx.const(tg)}.check({exprs}{',' if len(self.tensors) == 1 else ''})")
        parts.extend(t.render(ctx) for t in self.terms if t.key[0] not in ("id", "type", "code", "noglobal"))
        return " and ".join(parts) if parts else "True"

    def describe(self) -> list[str]:
        lines = []
        if self.global_state is not None:
            lines.append(f"global state: {self.global_text}")
        for tv, real, dyn, label in self.tensors:
            d = f" (dynamic dims {list(dyn)})" if dyn else ""
            lines.append(f"{label}: {_fmt_tensor(real)}{d}")
        lines.extend(t.text for t in self.terms)
        return lines

    def checks(self, ctx) -> list[tuple[str, str]]:
        """(expression, words) per check, to tell which one failed."""
        out = []
        if self.global_state is not None:
            out.append((f"{ctx.const(self.global_state)}.check()", f"global state: {self.global_text}"))
        for i, (tv, real, dyn, label) in enumerate(self.tensors):
            sizes = [[None if j in dyn else s for j, s in enumerate(real.shape)]]
            strides = [[None if dyn else s for s in real.stride()]]
            tg = TensorGuards(real, dynamic_dims_sizes=sizes, dynamic_dims_strides=strides)
            out.append((f"{ctx.const(tg)}.check({ctx.tensor_expr(tv)})", f"{label}: {_fmt_tensor(real)}"))
        out.extend((t.render(ctx), t.text) for t in self.terms)
        return out


# --- helpers the rendered guards call ----------------------------------------------------------------

def no_hooks(m) -> bool:
    from torch.nn.modules import module as mm
    return not (m._forward_hooks or m._forward_pre_hooks or m._backward_hooks or m._backward_pre_hooks
                or mm._global_forward_hooks or mm._global_forward_pre_hooks or mm._global_backward_hooks
                or mm._global_backward_pre_hooks)


def storages(*tensors) -> tuple:
    """Which tensors share storage: for each, the index of the first one with the same storage."""
    seen: dict = {}
    out = []
    for i, t in enumerate(tensors):
        key = t.untyped_storage()._cdata
        out.append(seen.setdefault(key, i))
    return tuple(out)


HELPERS = {"same": same, "no_hooks": no_hooks, "storages": storages}
