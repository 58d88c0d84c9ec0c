"""Rewrites of the aten graph before lowering, for computations torch has a better kernel for.

- attention: `softmax(q @ k^T * c) @ v` (two bmm's around a decomposed softmax over the last dim)
  becomes one `scaled_dot_product_attention` call, as Inductor does: torch's fused CPU kernel never
  writes the L x S score matrix. Everything in between must be used only by the pattern.
- linear: `addmm(b, x, w.t())`, with a following relu or gelu if any, becomes one oneDNN
  `mkldnn._linear_pointwise` call with the activation fused as a post-op (faster than MKL's GEMM
  here for all but small products, and the activation costs no extra pass).
"""
from __future__ import annotations

import math

import torch
import torch.fx

aten = torch.ops.aten
SDPA = aten.scaled_dot_product_attention.default
LINEAR = torch.ops.mkldnn._linear_pointwise.default
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


def _attention(graph: torch.fx.Graph, b2) -> list:
    """Rewrite b2 = bmm(softmax(bmm(q, kT) * c), v) into one SDPA call; returns the new nodes."""
    found = _match(b2)
    if found is None or not _private(found[4], b2):
        return []
    q, kt, v, scale, _ = found
    with graph.inserting_before(b2):
        k = graph.call_function(aten.transpose.int, (kt, -1, -2))
        att = graph.call_function(SDPA, (q, k, v, None, 0.0, False), {"scale": scale})
        flat = graph.call_function(aten.reshape.default, (att, list(_val(b2).shape)))
    shape4 = tuple(_val(q).shape[:-1]) + tuple(_val(v).shape[-1:])
    for user in list(b2.users):  # the usual view back to [..., L, E]: the attention output itself
        if _is(user, *VIEWS) and tuple(_val(user).shape) == shape4:
            user.replace_all_uses_with(att)
    b2.replace_all_uses_with(flat)
    return [k, att, flat]


LINEAR_MIN = 1 << 22   # m*k*n: below this oneDNN's call overhead outweighs its faster GEMM
ACTIVATIONS = {aten.relu.default: ("relu", ""), aten.gelu.default: ("gelu", None)}


def _linear_match(mm):
    """(x, w, bias or None, activation node or None) for mm = addmm(b, x, w.t()) / mm(x, w.t())
    on float32 CPU tensors big enough, w contiguous [n, k]."""
    bias, (x, wt) = (mm.args[0], mm.args[1:3]) if _is(mm, aten.addmm.default) else (None, mm.args[:2])
    if mm.kwargs or len(mm.args) > (3 if bias is not None else 2):
        return None  # addmm's beta/alpha
    if not (_is(wt, aten.permute.default) and list(wt.args[1]) == [1, 0]) and not _is(wt, aten.t.default):
        return None
    w = wt.args[0]
    vals = [_val(t) for t in (x, w) + ((bias,) if bias is not None else ())]
    if any(t is None or t.dtype != torch.float32 or t.device.type != "cpu" for t in vals):
        return None
    (m, k), (n, _) = vals[0].shape, vals[1].shape
    if m * k * n < LINEAR_MIN or not vals[1].is_contiguous() or (bias is not None and tuple(vals[2].shape) != (n,)):
        return None
    act = next(iter(mm.users)) if len(mm.users) == 1 else None
    if act is None or not _is(act, *ACTIVATIONS) or (act.target is aten.gelu.default and act.kwargs.get(
            "approximate", "none") not in ("none", "tanh")):
        act = None
    return x, w, bias, act


def _linear(graph: torch.fx.Graph, mm) -> list:
    """addmm(b, x, w.t()) [+ relu/gelu] -> one oneDNN linear with the activation fused."""
    found = _linear_match(mm)
    if found is None:
        return []
    x, w, bias, act = found
    attr, algorithm = ACTIVATIONS[act.target] if act is not None else ("none", "")
    if act is not None and act.target is aten.gelu.default:
        algorithm = act.kwargs.get("approximate", "none")
    end = act if act is not None else mm
    with graph.inserting_before(end):
        lin = graph.call_function(LINEAR, (x, w, bias, attr, [], algorithm))
    end.replace_all_uses_with(lin)
    return [lin]


REWRITES = ((lambda n: _is(n, aten.bmm.default), _match, _attention),
            (lambda n: _is(n, aten.addmm.default, aten.mm.default), _linear_match, _linear))


def rewrite(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """`gm` with the patterns above rewritten: a copy, or `gm` itself when none applies. New nodes
    get their metadata from the fake tensors of their inputs (else the caller propagates it)."""
    if not any(applies(n) and match(n) for n in gm.graph.nodes for applies, match, _ in REWRITES):
        return gm
    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(gm.graph, {}))
    new = []
    for applies, _, apply in REWRITES:
        for n in [n for n in graph.nodes if applies(n)]:
            if n.users:  # an earlier rewrite may have made it dead
                new += apply(graph, n)
    graph.eliminate_dead_code()
    alive = set(graph.nodes)
    _fill_meta([n for n in new if n in alive], graph)
    return torch.fx.GraphModule(gm, graph)


def _fill_meta(new, graph):
    """Stack traces from the nodes they replace, and "val" metadata computed on fake tensors shaped
    like their inputs' (values of any origin: fake tensors of other modes, real tensors)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils import _pytree as pytree
    for n in new:
        n.meta["stack_trace"] = next((u.meta.get("stack_trace") for u in n.all_input_nodes
                                      if u.meta.get("stack_trace")), None)
    with FakeTensorMode():
        def fake(a):
            v = a.meta.get("val") if isinstance(a, torch.fx.Node) else a
            if isinstance(v, torch.Tensor):
                return torch.empty_strided(v.shape, v.stride(), dtype=v.dtype, device=v.device)
            return v
        for n in new:
            args, kwargs = pytree.tree_map(fake, (n.args, n.kwargs))
            n.meta["val"] = n.target(*args, **kwargs)


__all__ = ["rewrite"]
