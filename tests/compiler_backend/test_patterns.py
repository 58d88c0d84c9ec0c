"""Graph rewrites before lowering: naive attention -> one scaled_dot_product_attention call."""
import math

import torch

from fl_helpers import aten_graph, check
from fuselens.compiler.backend.patterns import SDPA, fuse_attention

Q, K, V = (torch.randn(2, 3, 16, 8) for _ in range(3))


def attention(q, k, v):
    return torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), -1) @ v


def _targets(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


def test_naive_attention_becomes_one_sdpa_call():
    gm = aten_graph(attention, Q, K, V)
    fused = fuse_attention(gm)
    assert SDPA in _targets(fused) and torch.ops.aten.bmm.default not in _targets(fused)
    assert SDPA not in _targets(gm)  # the caller's graph is left alone
    info = check(attention, Q, K, V, min_kernels=0)
    assert info.kernels == 0 and info.externs == 1
    (detail,) = info.extern_details
    assert [ops for _, _, ops in detail.lines] == [["scaled_dot_product_attention.default"]]


def test_attention_variants_match_eager():
    q3, k3, v3 = (t.reshape(6, 16, 8) for t in (Q, K, V))
    check(lambda q, k, v: torch.softmax((q @ k.transpose(-1, -2)) * 0.3, -1) @ v, q3, k3, v3, min_kernels=0)
    check(lambda q, kt, v: torch.softmax(q @ kt, -1) @ v, Q, K.transpose(-1, -2).contiguous(), V, min_kernels=0)
    x = torch.randn(4, 10, 48)  # q, k, v as strided views of one projection
    check(lambda x: attention(*x.view(4, 10, 3, 2, 8).permute(2, 0, 3, 1, 4)), x, min_kernels=0)


def test_attention_whose_pieces_are_used_elsewhere_is_left_alone():
    def with_weights(q, k, v):
        p = torch.softmax(q @ k.transpose(-1, -2), -1)
        return p @ v, p

    def masked(q, k, v, m):
        return torch.softmax(q @ k.transpose(-1, -2) + m, -1) @ v

    for fn, args in ((with_weights, (Q, K, V)), (masked, (Q, K, V, torch.randn(16, 16)))):
        assert SDPA not in _targets(fuse_attention(aten_graph(fn, *args)))
        check(fn, *args)
