"""Stores into objects from outside the function (`self.steps += 1`, `cache[key] = t`).

They do not end the region: like Dynamo, capture records them, lets later reads in the trace see
the stored values, and replays them as Python statements right after the region that computed
the values (before anything else runs in Python)."""
from __future__ import annotations

import torch

from .values import Break, Ext, TVar


class StoreMixin:
    def init_stores(self):
        self.stores: list = []  # (kind, target, key, value, source text)
        self.overlay: dict = {}  # (id(target), key) -> value, for reads after the store

    def defer_attr_store(self, obj, name, value, node):
        if isinstance(obj, torch.nn.Module):
            buffer = name in obj.__dict__.get("_buffers", {})
            if buffer and not (type(value) is TVar or value is None):
                raise Break("a buffer assigned a non-tensor", None, node)
            if not buffer and (any(name in obj.__dict__.get(d, {}) for d in ("_parameters", "_modules"))
                               or isinstance(value, torch.nn.Module)):
                raise Break("assignment to a parameter or submodule", None, node)
        if type(value) is TVar and isinstance(obj, torch.nn.Module) and self.tracer.tensor_class(value) \
                is torch.nn.Parameter:
            raise Break("assignment of a parameter", None, node)
        self._defer("attr", obj, name, value)

    def defer_item_store(self, ext, key, value, node):
        container = ext.value
        if type(container) is list and type(key) is int and -len(container) <= key < len(container):
            self.guards_now().type_is(ext.source, list)
            self.guards_now().length(ext.source, len(container))
            key %= len(container)  # one overlay key per slot: lst[-1] and lst[n - 1] are the same
        elif type(container) is not dict or type(key) not in (int, str):
            raise Break("item assignment on an object from outside the function", None, node)
        self._defer("item", ext, key, value)

    def defer_call_store(self, ext, method, args):
        """`lst.append(v)` on an outside list: replayed like a store; reads of it wait."""
        self.stores.append(("call", ext, method, tuple(args)))

    def _defer(self, kind, target, key, value):
        self.stores.append((kind, target, key, value))
        self.overlay[(id(_obj(target)), key)] = value

    def stored(self, obj, key):
        """(True, value) if the trace stored `key` into `obj` (a live object or an Ext)."""
        if type(key) not in (str, int):
            return (False, None)
        k = (id(_obj(obj)), key)
        return (True, self.overlay[k]) if k in self.overlay else (False, None)

    def pending_length(self, ext):
        """len() of an outside list after this trace's appends (None if other changes are pending)."""
        extra = 0
        for kind, target, key, value in self.stores:
            if _obj(target) is not _obj(ext):
                continue
            if kind != "call" or key not in ("append", "extend"):
                return None
            extra += 1 if key == "append" else len(self.iterate(value[0]))
        return extra

    def has_pending(self, ext) -> bool:
        target = id(_obj(ext))
        return any(id(_obj(t)) == target for _, t, _, _ in self.stores)

    def only_item_stores_pending(self, ext) -> bool:
        target = id(_obj(ext))
        return all(kind == "item" for kind, t, _, _ in self.stores if id(_obj(t)) == target)

    def store_values(self):
        return [x for kind, _, _, v in self.stores for x in (v if kind == "call" else (v,))]

    def rollback_stores(self, mark):
        del self.stores[mark:]
        self.overlay = {(id(_obj(t)), k): v for kind, t, k, v in self.stores if kind != "call"}

    def emit_stores(self):
        """Replay pending stores (their values have homes: regions were flushed first)."""
        for kind, target, key, value in self.stores:
            if kind == "attr":
                src = self.sources.get(id(target))
                base = src.render(self.render_ctx) if src is not None and not self.impure else \
                    self.prog.const(target)
                lhs = f"{base}.{key}" if key.isidentifier() else None
                text = f"{lhs} = {self.value_expr(value)}" if lhs else \
                    f"setattr({base}, {key!r}, {self.value_expr(value)})"
            elif kind == "call":
                text = f"{self.value_expr(target)}.{key}({', '.join(self.value_expr(a) for a in value)})"
            else:
                text = f"{self.value_expr(target)}[{key!r}] = {self.value_expr(value)}"
            self.emit_line("store", text, "replayed store", snap=False)
        self.stores.clear()


def _obj(target):
    return target.value if type(target) is Ext else target
