"""Graph rewrites before lowering: naive attention -> one scaled_dot_product_attention call."""
import math

import torch

from fl_helpers import aten_graph, check
from fuselens.compiler.backend.patterns import SDPA, rewrite

Q, K, V = (torch.randn(2, 3, 16, 8) for _ in range(3))


def attention(q, k, v):
    return torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), -1) @ v


def _targets(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


def test_naive_attention_becomes_one_sdpa_call():
    gm = aten_graph(attention, Q, K, V)
    fused = rewrite(gm)
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
        assert SDPA not in _targets(rewrite(aten_graph(fn, *args)))
        check(fn, *args)


def test_linear_with_activation_becomes_one_onednn_call():
    import torch.nn.functional as F

    from fuselens.compiler.backend.patterns import LINEAR, LINEAR_MIN
    m, k = 64, 128
    n = LINEAR_MIN // (m * k) + 1
    x, w, b = torch.randn(m, k), torch.randn(n, k), torch.randn(n)
    tol = dict(atol=1e-4, rtol=1e-4)  # another GEMM: another summation order
    for fn in (lambda x, w, b: F.gelu(F.linear(x, w, b)), lambda x, w, b: F.gelu(F.linear(x, w, b), approximate="tanh"),
               lambda x, w, b: F.relu(F.linear(x, w, b)) * 2, lambda x, w, b: F.linear(x.t().contiguous().t(), w)):
        fused = rewrite(aten_graph(fn, x, w, b))
        assert LINEAR in _targets(fused) and torch.ops.aten.addmm.default not in _targets(fused)
        info = check(fn, x, w, b, min_kernels=0, **tol)
        assert info.externs == 1
    small = torch.randn(4, 8), torch.randn(6, 8), torch.randn(6)  # oneDNN's overhead: stays addmm
    assert LINEAR not in _targets(rewrite(aten_graph(lambda x, w, b: F.linear(x, w, b), *small)))
