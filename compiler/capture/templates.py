"""A cache of recorded op sequences, so capture does not run fake tensors for every op.

Running a torch call on fake tensors costs hundreds of microseconds (the meta functions of most
pointwise ops are Python). Given the same function, the same argument metadata (shape, stride,
dtype, device), the same Python arguments and the same grad/autocast state, the aten ops recorded
and the output metadata are the same, so we replay them. Only calls whose outputs are fresh
tensors (no mutation, no views of inputs, no autograd) are cached: those are fully described by
metadata.
"""
from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch.utils._pytree import tree_flatten, tree_unflatten

_CACHE: dict = {}
_LIMIT = 20000
_SIMPLE = (int, float, bool, str, type(None), torch.dtype, torch.device, torch.memory_format, torch.layout)


def key(func, fargs, fkwargs, ambient, decomps):
    """A hashable description of the call, or None if it cannot be cached."""
    leaves, spec = tree_flatten((fargs, fkwargs))
    parts, seen = [], {}
    for leaf in leaves:
        t = type(leaf)
        if t is FakeTensor:
            if leaf.requires_grad or leaf.storage_offset() != 0:
                return None
            first = seen.setdefault(id(leaf), len(seen))
            parts.append(("T", first, leaf.dtype, leaf.device, tuple(leaf.shape), leaf.stride()))
        elif t in _SIMPLE:
            parts.append((t, leaf))
        elif t is slice:
            if not all(type(x) in _SIMPLE for x in (leaf.start, leaf.stop, leaf.step)):
                return None
            parts.append(("slice", leaf.start, leaf.stop, leaf.step))
        else:
            return None
    try:
        k = (func, id(decomps), ambient, str(spec), tuple(parts))
        hash(k)
    except TypeError:
        return None
    return k


class Template:
    __slots__ = ("nodes", "out_spec", "out_leaves")

    def __init__(self, nodes, out_spec, out_leaves):
        self.nodes = nodes  # (target, args, kwargs, val spec)
        self.out_spec = out_spec
        self.out_leaves = out_leaves  # ('n', j) | ('c', value)


def lookup(k):
    return _CACHE.get(k) if k is not None else None


def _meta(v):
    if type(v) is not FakeTensor or v.storage_offset() != 0 or v.requires_grad:
        return None
    return (tuple(v.shape), v.stride(), v.dtype, v.device)


def record(k, region, mark, fargs, fkwargs, out):
    """Make a template from the region log entries after `mark` (the nodes this call added)."""
    if k is None or len(_CACHE) >= _LIMIT:
        return
    inputs = [leaf for leaf in tree_flatten((fargs, fkwargs))[0] if type(leaf) is FakeTensor]
    input_node = {}
    for i, fake in enumerate(inputs):
        node = region.node_of.get(id(fake))
        if node is None:
            return
        input_node.setdefault(node, i)
    in_storages = {f.untyped_storage()._cdata for f in inputs}
    new = [entry[1] for entry in region.log[mark:] if entry[0] == "node"]
    index, nodes, storages = {}, [], set()
    for node in new:
        if node.op == "placeholder":
            continue
        if node.op != "call_function" or getattr(node.target, "_schema", None) is not None and \
                node.target._schema.is_mutable:
            return
        val = node.meta.get("val")
        vals = val if isinstance(val, (tuple, list)) else (val,)
        specs = []
        for v in vals:
            m = _meta(v)
            if m is None:
                return
            sid = v.untyped_storage()._cdata
            if sid in in_storages:
                return
            storages.add(sid)
            specs.append(m)
        spec = ("tuple", specs) if isinstance(val, (tuple, list)) else ("t", specs[0])

        def ref(a):
            if isinstance(a, torch.fx.Node):
                if a in index:
                    return ("n", index[a])
                if a in input_node:
                    return ("in", input_node[a])
                raise LookupError
            if isinstance(a, (list, tuple)):
                return ("seq", type(a) is list, [ref(x) for x in a])
            return ("c", a)
        try:
            args = [ref(a) for a in node.args]
            kwargs = {name: ref(a) for name, a in node.kwargs.items()}
        except LookupError:
            return
        index[node] = len(nodes)
        nodes.append((node.target, args, kwargs, spec))
    leaves, out_spec = tree_flatten(out)
    out_leaves = []
    by_val = {}
    for j, node in enumerate(index):
        val = node.meta.get("val")
        for i, v in enumerate(val if isinstance(val, (tuple, list)) else (val,)):
            by_val[id(v)] = (j, i if isinstance(val, (tuple, list)) else None)
    seen_out = set()
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            where = by_val.get(id(leaf))
            if where is None or id(leaf) in seen_out:
                return
            seen_out.add(id(leaf))
            out_leaves.append(("n", where))
        elif type(leaf) in _SIMPLE or isinstance(leaf, torch.Size):
            out_leaves.append(("c", leaf))
        else:
            return
    _CACHE[k] = Template(nodes, out_spec, out_leaves)


def replay(tpl, region, recorder, fake_mode, fargs, fkwargs, loc):
    """Add the template's nodes to `region`; returns the call's output (fake tensors)."""
    inputs = [leaf for leaf in tree_flatten((fargs, fkwargs))[0] if type(leaf) is FakeTensor]
    in_nodes = [recorder._arg(f) for f in inputs]
    made, vals = [], []

    def res(a):
        kind = a[0]
        if kind == "n":
            return made[a[1]]
        if kind == "in":
            return in_nodes[a[1]]
        if kind == "seq":
            items = [res(x) for x in a[2]]
            return items if a[1] else tuple(items)
        return a[1]
    trace = loc.stack_trace()
    where = (loc.filename, loc.line)
    for target, args, kwargs, spec in tpl.nodes:
        node = region.node("call_function", target, tuple(res(a) for a in args),
                           {k: res(a) for k, a in kwargs.items()})
        item = getattr(target, "__name__", "") == "_getitem"
        if item:  # an element of a multi-output op: the very tensor its parent produced
            val = vals[args[0][1]][args[1][1]]
        elif spec[0] == "t":
            val = _fake(fake_mode, spec[1])
        else:
            val = tuple(_fake(fake_mode, m) for m in spec[1])
        if spec[0] == "t":
            region.bind(val, node)
        node.meta["val"] = val
        node.meta["stack_trace"] = trace
        node.meta["fl_loc"] = (loc.filename, loc.line, loc.col)
        if not item:
            region.add_op(str(target), where)
        made.append(node)
        vals.append(val)
    leaves = []
    for kind, x in tpl.out_leaves:
        if kind == "c":
            leaves.append(x)
        else:
            j, i = x
            leaves.append(vals[j] if i is None else vals[j][i])
    return tree_unflatten(leaves, tpl.out_spec)


def _fake(fake_mode, m):
    shape, stride, dtype, device = m
    return FakeTensor(fake_mode, torch.empty_strided(shape, stride, dtype=dtype, device="meta"), device)
