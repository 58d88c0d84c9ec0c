"""Rewrites of the aten graph before lowering, for computations torch has a better kernel for.

`fuse_attention`: `softmax(q @ k^T * c) @ v` (two bmm's around a decomposed softmax over the last
dim) becomes one `scaled_dot_product_attention` call, as Inductor does: torch's fused CPU kernel
never writes the L x S score matrix. Everything in between must be used only by the pattern.
"""
from __future__ import annotations

import math

import torch
import torch.fx

aten = torch.ops.aten
SDPA = aten.scaled_dot_product_attention.default
VIEWS = {aten.view.default, aten._unsafe_view.default, aten.reshape.default}


def _val(n):
    return n.meta.get("val") if isinstance(n, torch.fx.Node) else None


def _is(n, *targets) -> bool:
    return isinstance(n, torch.fx.Node) and n.op == "call_function" and n.target in targets


def _skip_noops(n):
    """Through casts to the same dtype and expands to the same shape."""
    while True:
        src = n.args[0] if _is(n, aten.to.dtype, aten.expand.default, aten.clone.default, aten.alias.default) else None
        if src is None or _val(src) is None or _val(n) is None:
            return n
        if (_val(src).dtype, tuple(_val(src).shape)) != (_val(n).dtype, tuple(_val(n).shape)):
            return n
        n = src


def _operand(n):
    """The tensor a bmm operand was viewed from (3-d batch of the same elements), or n itself."""
    if _is(n, *VIEWS):
        return _skip_noops(n.args[0])
    return _skip_noops(n)


def _last_dim(dims, rank) -> bool:
    return isinstance(dims, (list, tuple)) and len(dims) == 1 and dims[0] % rank == rank - 1


def _softmax_input(p):
    """x if p is the decomposed softmax(x, -1): exp(x - amax(x)) / sum(exp(x - amax(x)))."""
    if not _is(p, aten.div.Tensor):
        return None
    e, s = p.args
    if not (_is(e, aten.exp.default) and _is(s, aten.sum.dim_IntList) and s.args[0] is e):
        return None
    sub = e.args[0]
    if not (_is(sub, aten.sub.Tensor) and _is(sub.args[1], aten.amax.default)):
        return None
    x, m = sub.args
    rank = len(_val(x).shape)
    if m.args[0] is not x or not (_last_dim(m.args[1], rank) and _last_dim(s.args[1], rank)):
        return None
    if not (len(s.args) > 2 and s.args[2] and len(m.args) > 2 and m.args[2]):
        return None
    return x, [p, e, s, sub, m]


def _scaled(x):
    """(scores, scale) for x = scores * c, scores / c or scores."""
    x = _skip_noops(x)
    if _is(x, aten.mul.Tensor) and isinstance(x.args[1], (int, float)):
        return x.args[0], float(x.args[1]), [x]
    if _is(x, aten.div.Tensor) and isinstance(x.args[1], (int, float)) and x.args[1] != 0:
        return x.args[0], 1.0 / float(x.args[1]), [x]
    return x, 1.0, []


def _match(b2):
    """(q, k_transposed, v, scale, nodes of the pattern) for b2 = bmm(softmax(bmm(q, kT) * c), v)."""
    p3, v = b2.args
    found = _softmax_input(_skip_noops(_operand(p3)))
    if found is None:
        return None
    x, soft = found
    scores, scale, scaling = _scaled(x)
    b1 = _operand(scores)
    if not _is(b1, aten.bmm.default):
        return None
    q, kt = (_operand(a) for a in b1.args)
    v = _operand(v)
    vals = [_val(t) for t in (q, kt, v, scores)]
    if any(t is None for t in vals) or len({t.dtype for t in vals}) != 1 or vals[0].dtype not in (
            torch.float32, torch.float64) or any(t.device.type != "cpu" for t in vals):
        return None
    qs, ks, vs = (tuple(t.shape) for t in vals[:3])
    if not (len(qs) == len(ks) == len(vs) >= 3 and qs[:-2] == ks[:-2] == vs[:-2]
            and qs[-1] == ks[-2] and ks[-1] == vs[-2] and tuple(vals[3].shape) == qs[:-1] + ks[-1:]):
        return None
    # The bmm operands are these tensors with their batch dims flattened (a row-major view).
    batch = math.prod(qs[:-2])
    want = [(b1.args[0], qs[-2:]), (b1.args[1], ks[-2:]), (p3, qs[-2:-1] + ks[-1:]), (b2.args[1], vs[-2:])]
    if any(tuple(_val(n).shape) != (batch, *tail) for n, tail in want):
        return None
    return q, kt, v, scale, [b1, scores, *scaling, *soft, p3]


def _private(nodes, b2) -> bool:
    """Every node of the pattern is used only by the pattern (through views and no-ops)."""
    inside = set(nodes) | {b2}
    return all(u in inside or _feeds_only(u, inside) for n in nodes for u in n.users)


def _feeds_only(n, inside) -> bool:
    """A no-op or view node whose every user is in (or leads only into) the pattern."""
    if not (_is(n, *VIEWS) or _is(n, aten.to.dtype, aten.expand.default, aten.clone.default, aten.alias.default)):
        return False
    return all(u in inside or _feeds_only(u, inside) for u in n.users)


def fuse_attention(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """`gm` with every naive attention rewritten (a copy; `gm` itself if there is none). The
    copy's nodes have no "val" metadata: the caller propagates it again."""
    if not any(_is(n, aten.bmm.default) and _match(n) for n in gm.graph.nodes):
        return gm
    graph = torch.fx.Graph()
    out = graph.graph_copy(gm.graph, {})
    graph.output(out)
    changed = False
    for b2 in [n for n in graph.nodes if _is(n, aten.bmm.default)]:
        found = _match(b2)
        if found is None or not _private(found[4], b2):
            continue
        q, kt, v, scale, _ = found
        with graph.inserting_before(b2):
            k = graph.call_function(aten.transpose.int, (kt, -1, -2))
            att = graph.call_function(SDPA, (q, k, v, None, 0.0, False), {"scale": scale})
            flat = graph.call_function(aten.reshape.default, (att, list(_val(b2).shape)))
        for n in (k, att, flat):
            n.meta["stack_trace"] = b2.meta.get("stack_trace")
        shape4 = tuple(_val(q).shape[:-1]) + tuple(_val(v).shape[-1:])
        for user in list(b2.users):  # the usual view back to [..., L, E]: the attention output itself
            if _is(user, *VIEWS) and tuple(_val(user).shape) == shape4:
                user.replace_all_uses_with(att)
        b2.replace_all_uses_with(flat)
        changed = True
    if not changed:
        return gm
    graph.eliminate_dead_code()
    for n in graph.nodes:
        n.meta.pop("val", None)
    return torch.fx.GraphModule(gm, graph)


__all__ = ["fuse_attention"]
