"""Continuations as data: where to resume and with which values.

`encode` turns the interpreter's continuation (frames, their locals, loop states) into a `Cont`:
constants stay in it, every run-time value becomes a numbered slot whose current program
expression is recorded. A new capture `decode`s a `Cont` with the slot values it is called with.
"""
from __future__ import annotations

from .frames import Block, Call, Frame, GenLoop, Loop, With, Yielded
from .guards import constant_like
from .values import ArgSource, Closure, Ext, TVar, is_dyn


SEQUENCE_ITERATORS = (type(iter([])), type(iter(())), type(iter(range(0))))


def items_left(iterator) -> list:
    """What a list, tuple or range iterator would still yield, without advancing it."""
    reduced = iterator.__reduce__()  # (iter, (sequence,), position), or (iter, ((),)) once exhausted
    position = reduced[2] if len(reduced) > 2 else 0
    return list(reduced[1][0])[position:]


class Cont:
    """An encoded continuation; identical encodings resume at the same point."""

    def __init__(self, frames, entries, ambient, labels, loop_head, dyn=frozenset()):
        self.frames = frames  # [(info, prefix, closure index or None, env encoding)]
        self.entries = entries
        self.ambient = ambient
        self.labels = labels  # parameter name per slot
        self.loop_head = loop_head
        self.dyn = dyn  # slots holding values Python computed at run time

    def key(self):
        return (tuple((id(f[0]), f[1], f[2], _freeze(f[3])) for f in self.frames), _freeze(self.entries),
                self.ambient, self.loop_head, self.dyn)

    def line(self) -> int:
        for e in reversed(self.entries):
            if e[0] == "block" and e[3] < len(e[2]):
                return e[2][e[3]].lineno
            if e[0] == "loop":
                return e[2].lineno
        return 0


def _freeze(x):
    if isinstance(x, list):
        return tuple(_freeze(i) for i in x)
    if isinstance(x, tuple):
        return tuple(_freeze(i) for i in x)
    if isinstance(x, dict):
        return tuple((k, _freeze(v)) for k, v in x.items())
    try:
        hash(x)
        return (type(x).__name__, x)
    except TypeError:
        return ("id", id(x))


class State:
    """A snapshot: the continuation and, per slot, the expression holding its value now."""

    __slots__ = ("cont", "exprs", "values")

    def __init__(self, cont, exprs, values):
        self.cont = cont
        self.exprs = exprs
        self.values = values


def encode(cap, cont_entries, loop_head=False) -> State:
    frames = cap.frames_in(cont_entries)
    index = {id(f): i for i, f in enumerate(frames)}
    slots, exprs, labels, memo = [], [], [], {}

    def enc(v, label):
        t = type(v)
        if t is TVar or t is Ext:
            return slot(v, label)
        if constant_like(v):
            return ("c", v)
        if t in (list, tuple, set, dict):
            if id(v) in memo:
                return ("ref", memo[id(v)])
            memo[id(v)] = len(memo)
            if t is dict:
                return ("dict", memo[id(v)], [(enc(k, None), enc(x, None)) for k, x in v.items()])
            return (t.__name__, memo[id(v)], [enc(x, None) for x in v])
        if t in SEQUENCE_ITERATORS:  # resumed as an iterator over the items it has left
            if id(v) in memo:
                return ("ref", memo[id(v)])
            memo[id(v)] = len(memo)
            return ("iter", memo[id(v)], [enc(x, None) for x in items_left(v)])
        if t is Closure:
            return ("closure", v.node, index[id(v.frame)], enc(v.defaults, None), enc(v.kwdefaults, None), v.name)
        if isinstance(v, tuple):
            return ("struct", type(v), [enc(x, None) for x in v])
        return slot(v, label)

    def slot(v, label):
        key = id(v)
        if key in memo:
            return ("ref", memo[key])
        memo[key] = len(memo)
        i = len(slots)
        slots.append(v)
        exprs.append(cap.value_expr(v))
        labels.append(label if label and label.isidentifier() and label not in labels else f"__k{i}")
        return ("slot", memo[key], i)

    fr = []
    for f in frames:
        env = {name: enc(v, f.var(name)) for name, v in f.env.items()}
        fr.append((f.info, f.prefix, index.get(id(f.closure)) if f.closure is not None else None, env))
    entries = []
    for e in cont_entries:
        t = type(e)
        if t is Block:
            entries.append(("block", index[id(e.frame)], e.stmts, e.i))
        elif t is Loop:
            items = None if e.items is None else [enc(x, None) for x in e.items]
            entries.append(("loop", index[id(e.frame)], e.node, items))
        elif t is With:
            entries.append(("with", index[id(e.frame)], e.saved))
        elif t is GenLoop:
            entries.append(("genloop", index[id(e.frame)], e.node))
        elif t is Yielded:
            entries.append(("yielded", index[id(e.frame)]))
        elif t is Call:
            entries.append(("call", index[id(e.frame)] if e.frame is not None else None, index[id(e.callee)],
                            e.target, e.node))
    dyn = frozenset(i for i, v in enumerate(slots) if type(v) is Ext and is_dyn(v.source))
    return State(Cont(fr, entries, cap.ambient, labels, loop_head, dyn), exprs, slots)


def decode(cap, cont: Cont, args):
    """Rebuild frames and entries for capture `cap`, reading slot `i` from parameter `labels[i]`;
    returns (frames, entries, the value made for each slot)."""
    memo = {}
    slot_values = [None] * len(cont.labels)

    def dec(x):
        kind = x[0]
        if kind == "c":
            return x[1]
        if kind == "ref":
            return memo[x[1]]
        if kind == "slot":
            v = cap.ext(args[x[2]], ArgSource(cont.labels[x[2]], x[2] in cont.dyn))
            memo[x[1]] = v
            slot_values[x[2]] = v
            return v
        if kind == "dict":
            out = {}
            memo[x[1]] = out
            for k, v in x[2]:
                out[cap.hashable(dec(k))] = dec(v)
            return out
        if kind in ("list", "set"):
            out = [] if kind == "list" else set()
            memo[x[1]] = out
            for item in x[2]:
                v = dec(item)
                out.append(v) if kind == "list" else out.add(v)
            return out
        if kind == "tuple":
            out = tuple(dec(i) for i in x[2])
            memo[x[1]] = out
            return out
        if kind == "iter":
            out = iter([dec(i) for i in x[2]])
            memo[x[1]] = out
            return out
        if kind == "struct":
            items = [dec(i) for i in x[2]]
            return x[1](*items) if hasattr(x[1], "_fields") else x[1](items)
        if kind == "closure":
            return Closure(x[1], frames[x[2]], dec(x[3]), dec(x[4]), x[5])
        raise ValueError(kind)

    frames = [Frame(info, {}, prefix) for info, prefix, _, _ in cont.frames]
    for f, (_, _, closure, env) in zip(frames, cont.frames):
        if closure is not None:
            f.closure = frames[closure]
    for f, (_, _, _, env) in zip(frames, cont.frames):
        for name, x in env.items():
            f.env[name] = dec(x)
    entries = []
    for e in cont.entries:
        if e[0] == "block":
            entries.append(Block(frames[e[1]], e[2], e[3]))
        elif e[0] == "loop":
            entries.append(Loop(frames[e[1]], e[2], None if e[3] is None else [dec(i) for i in e[3]]))
        elif e[0] == "with":
            entries.append(With(frames[e[1]], e[2]))
        elif e[0] == "genloop":
            entries.append(GenLoop(frames[e[1]], e[2]))
        elif e[0] == "yielded":
            entries.append(Yielded(frames[e[1]]))
        else:
            entries.append(Call(frames[e[1]] if e[1] is not None else None, frames[e[2]], e[3], e[4]))
    return frames, entries, slot_values
