"""Compiled C++ kernels match eager PyTorch across ops, shapes, dtypes and memory layouts."""
import math

import pytest
import torch
import torch.nn.functional as F

from fl_helpers import check

torch.manual_seed(0)
X = torch.randn(6, 33)          # odd inner size: vector loop remainders
Y = torch.randn(33)
B3 = torch.randn(4, 5, 12)
POS = torch.rand(6, 33) + 0.1

POINTWISE = {
    "chain": lambda x: ((x * 2 + 1).sin() * x.exp()).tanh() - x.abs().sqrt(),
    "broadcast_row": lambda x, y: x * y + y.sigmoid(),
    "broadcast_col": lambda x: x - x[:, :1],
    "gelu": lambda x: F.gelu(x),
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu_relu": lambda x: F.silu(x) + F.relu(x) + F.leaky_relu(x, 0.1),
    "clamp_where": lambda x: torch.where(x > 0, x.clamp(max=0.5), x.clamp(min=-0.3)),
    "compare_logic": lambda x: ((x > 0) & (x < 1)) | (x == 0),
    "pow_rsqrt": lambda x: x.abs().pow(1.5) + torch.rsqrt(x * x + 1) + x.pow(2) + x.pow(3),
    "div_modes": lambda x: torch.div(x, 0.7, rounding_mode="floor") + torch.div(x, 0.3, rounding_mode="trunc"),
    "math": lambda x: torch.erf(x) + torch.log1p(x.abs()) + torch.expm1(x * 0.1) + torch.cos(x) + torch.atan(x),
    "floor_round": lambda x: torch.floor(x * 3) + torch.ceil(x) + torch.round(x * 2) + torch.sign(x),
    "cast_int": lambda x: (x * 10).to(torch.int64) * 3 + 1,
    "int_math": lambda x: ((x * 10).to(torch.int64) // 3) % 4 - 2,
    "minmax_nan": lambda x: torch.maximum(x, torch.full_like(x, float("nan")).where(x > 1, x * 0.5)),
}


@pytest.mark.parametrize("name", sorted(POINTWISE))
def test_pointwise(name):
    fn = POINTWISE[name]
    args = (X, Y) if fn.__code__.co_argcount == 2 else (X,)
    info = check(fn, *args)
    assert info.kernels == 1  # the whole chain is one kernel


def test_positive_domain_math():
    check(lambda x: torch.log(x) + torch.sqrt(x) + x.reciprocal() + torch.log2(x), POS)


def test_dtypes_float64_int32_bool():
    check(lambda x: (x * 3).exp() / (1 + x), X.double())
    xi = (X * 10).to(torch.int32)
    check(lambda x: x * 2 + (x > 3).to(torch.int32), xi)
    check(lambda x: torch.logical_not(x > 0) ^ (x < -1), X)


def test_non_contiguous_and_views():
    t = torch.randn(33, 6).t()                       # transposed input
    check(lambda x: x.sin() + 1, t)
    s = torch.randn(8, 40)[::2, 3:36]                # strided slice
    check(lambda x: x * x - x.mean(-1, keepdim=True), s)
    check(lambda x: x.reshape(4, 5, 6).permute(2, 0, 1).contiguous() * 2, torch.randn(120))
    check(lambda x: x.view(2, 3, 11, 6).sum(2).exp(), torch.randn(66, 6))
    check(lambda x: x.unsqueeze(1).expand(6, 4, 33) + 1, X)
    check(lambda x: x[:, 1:-1:2].squeeze() * 3 + x[:, 0:1], X)
    check(lambda x: x.select(1, 3) + x[2], torch.randn(6, 6))


def test_cat_pad_rope_like():
    def rope(x):
        x1, x2 = x[..., :6], x[..., 6:]
        return torch.cat([-x2, x1], dim=-1) * 0.5 + x
    check(rope, B3)
    check(lambda x: F.pad(x, (2, 3, 1, 0), value=0.5) * 2, X)


def test_gather_embedding_index():
    w = torch.randn(10, 7)
    idx = torch.tensor([[1, 3], [9, 0], [4, 4]])
    check(lambda w, i: F.embedding(i, w) * 2, w, idx)
    check(lambda w, i: torch.gather(w, 1, i.remainder(7)) + 1, w, idx)
    check(lambda w, i: w[i[:, 0]] - 1, w, idx)


def test_out_of_range_index_raises_like_eager():
    from fuselens.compiler.backend import compile_graph
    from fl_helpers import aten_graph
    w, idx = torch.randn(10, 7), torch.tensor([1, 12])
    fn = lambda w, i: F.embedding(i, w) * 2  # noqa: E731
    compiled = compile_graph(aten_graph(fn, w, torch.tensor([1, 2])), [w, torch.tensor([1, 2])])
    with pytest.raises(IndexError):
        compiled(w, idx)


@pytest.mark.parametrize("dim", [0, 1, -1, (0, 1)])
def test_reductions(dim):
    # Sums of ~2000 floats in another order differ by a few ulps of the total.
    check(lambda x: (x.sum(dim), x.amax(dim), x.amin(dim), x.mean(dim)), torch.randn(40, 48), rtol=1e-5, atol=1e-4)


def test_reduction_3d_middle_dim_and_keepdim():
    x = torch.randn(5, 37, 9)
    check(lambda x: (x.sum(1, keepdim=True) * x, x.amax(1)), x)
    check(lambda x: x.var(1) + x.std(0, keepdim=True).sum(), x)
    check(lambda x: (x * 2).sum(), x)


def test_reduction_nan_propagates():
    x = torch.randn(4, 20)
    x[1, 5] = float("nan")
    check(lambda x: (x.amax(-1), x.amin(0)), x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_lane_max_min_see_every_nan(dtype):
    """Max/min lanes skip NaN and track the largest |bits| beside them: negative NaNs (x86's
    default NaN is negative), NaNs with payloads and signaling NaNs count, infinities do not."""
    x = torch.randn(8, 150, dtype=dtype)
    nans = torch.tensor([-0x400000, 0x7FC00123, 0x7F800001, -1], dtype=torch.int32).view(torch.float32)
    nans = nans.to(dtype)  # by their bits: x86's default NaN (negative), a payload, a signaling one, all ones
    for row, col, v in zip(range(4), (0, 70, 149, 128), nans):
        x[row, col] = v
    x[4, 3], x[5, :] = float("inf"), float("-inf")
    x[6, :] = 0.0
    x[6, ::2] = -0.0
    check(lambda x: (x.amax(-1), x.amin(-1), torch.softmax(x, -1), torch.log_softmax(x, -1)), x)


def test_softmax_family():
    x = torch.randn(7, 50)
    info = check(lambda x: torch.softmax(x, -1), x)
    assert info.kernels == 1
    wide = torch.randn(7, 150)  # lane passes: one computes exp, so g++ must not jam its loop
    assert "no-loop-unroll-and-jam" in check(lambda x: torch.softmax(x, -1), wide).source
    assert "no-loop-unroll-and-jam" not in check(lambda x: x.sum(-1), wide).source
    check(lambda x: torch.log_softmax(x, -1), x)
    check(lambda x: torch.softmax(x, 0), x)
    check(lambda x: x - x.mean(-1, keepdim=True), x)


def test_norms():
    x, w, b = torch.randn(9, 64), torch.randn(64), torch.randn(64)
    info = check(lambda x, w, b: F.layer_norm(x, (64,), w, b), x, w, b)
    assert info.kernels == 1
    check(lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w, x, w)
    check(lambda x, r, w, b: F.layer_norm(x + r, (64,), w, b), x, torch.randn(9, 64), w, b)
    check(lambda x: F.group_norm(x, 2), torch.randn(2, 4, 5, 5))


def test_cross_entropy():
    x, t = torch.randn(8, 11), torch.randint(0, 11, (8,))
    check(lambda x, t: F.cross_entropy(x, t), x, t)
    check(lambda x, t: F.nll_loss(torch.log_softmax(x, -1), t, reduction="sum"), x, t)
    t[2] = -100  # ignored row
    x[5, 3] = float("nan")
    check(lambda x, t: (F.cross_entropy(x, t), F.cross_entropy(x, t, reduction="none")), x, t)
    check(lambda x, t: F.cross_entropy(x, t), torch.randn(300, 200), torch.randint(0, 200, (300,)))


def test_extern_ops_with_fused_epilogues():
    x, w, b = torch.randn(5, 16), torch.randn(24, 16), torch.randn(24)
    info = check(lambda x, w, b: F.gelu(F.linear(x, w, b)), x, w, b)
    assert info.externs >= 1
    q = torch.randn(2, 3, 8, 4)
    check(lambda q: torch.softmax(q @ q.transpose(-1, -2) / math.sqrt(4), -1) @ q, q, min_kernels=0)  # sdpa
    check(lambda x: torch.cumsum(x, 1) * 2, X)  # no lowering: stays a torch call


def test_scalar_and_empty_outputs():
    check(lambda x: (x.sum() * 2, x + 1), X)
    check(lambda x: x.sum(-1), torch.randn(1, 1))


def test_large_enough_for_threads_and_outer_reduction():
    x = torch.randn(300, 520)
    check(lambda x: (torch.softmax(x, -1), x.sum(0), (x * 2).sin()), x, atol=1e-4, rtol=1e-5)
    check(lambda x: x.sum(), torch.randn(200000), atol=1e-2, rtol=1e-5)


@pytest.mark.parametrize("threads", [1, 2])
def test_reduction_code_shapes(threads):
    """Each way a reduction kernel is written: lanes with a ragged end and a row cache (softmax,
    log-softmax over 200), blocked rows (two passes over dim 0), per-thread partial rows (sums over
    dim 0 of a wide matrix, with a per-row epilogue), NaN through lanes."""
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        x = torch.randn(300, 200)
        check(lambda x: (torch.softmax(x * 2, -1), torch.log_softmax(x, -1), torch.sigmoid(x).sum(-1)), x,
              atol=1e-5, rtol=1e-5)
        check(lambda x: (x.var(0), x.amax(0)), torch.randn(700, 96), atol=1e-5, rtol=1e-5)
        w = torch.randn(257, 1030)
        check(lambda w: (w.sum(0), w.mean(0) * 2 + 1, (w * w).sum(0).sqrt()), w, atol=1e-4, rtol=1e-5)
        nan = torch.randn(4, 130)
        nan[1, 129] = float("nan")
        nan[2, 3] = float("nan")
        check(lambda x: (x.amax(-1), x.amin(-1), torch.softmax(x, -1)), nan)
    finally:
        torch.set_num_threads(old)


def test_long_sums_over_a_non_contiguous_axis_stay_accurate():
    """Rows are summed in chunks, so the error grows like torch's pairwise sums, not like one long
    running sum (which was 10x worse than eager over 4096 rows)."""
    from fl_helpers import aten_graph
    from fuselens.compiler.backend import compile_graph
    torch.manual_seed(1)
    for x in (torch.randn(4096, 512), torch.randn(3000, 40, 8)):
        fn = (lambda x: x.sum(0)) if x.dim() == 2 else (lambda x: x.sum(0).amax(-1))
        got = compile_graph(aten_graph(fn, x), [x])(x)
        ref = fn(x.double())
        assert (got.double() - ref).abs().max() <= 3 * (fn(x).double() - ref).abs().max() + 1e-6


def test_split_pieces_viewed_and_transposed():
    """q, k, v = linear(x).split(C, -1), each viewed per head (GPT-style attention): the pieces'
    offsets must survive index simplification."""
    x = torch.randn(2, 5, 96)
    check(lambda x: [t.view(2, 5, 4, 8).transpose(1, 2) * 1 for t in x.split(32, -1)], x)
    check(lambda x: [t.reshape(2, 12, 8).sum(-1) for t in x.unbind(1)] + [x.chunk(3, -1)[2] + 1], x)


def test_output_written_by_one_segment_and_read_after_an_extern():
    """A graph output that a later kernel segment (after a torch call) reads again keeps its values."""
    def fn(x):
        m = x.amax(-1, keepdim=True)
        c = torch.cumsum(x, -1)  # an extern between the two kernels
        return m, (c - m).sum(-1)
    check(fn, X)


def test_copies_of_inputs_do_not_alias_them_but_views_do():
    from fl_helpers import aten_graph
    from fuselens.compiler.backend import compile_graph
    x = torch.randn(4, 6)
    clone = compile_graph(aten_graph(lambda x: (x.clone(), x.contiguous().t().clone()), x), [x])(x)
    assert all(c.untyped_storage().data_ptr() != x.untyped_storage().data_ptr() for c in clone)
    torch.testing.assert_close(clone[0], x)
    (view,) = compile_graph(aten_graph(lambda x: (x.view(-1),), x), [x])(x)
    assert view.data_ptr() == x.data_ptr()


def test_costly_row_broadcast_values_are_computed_once_per_kernel():
    info = check(lambda x, row: (x + row) * 2 - row.exp() * row.sigmoid(), X, Y)
    assert "bc0[" in info.source  # exp/sigmoid of the broadcast row: before the loops, not per row


def test_complex_inputs_stay_with_torch():
    z = torch.randn(5, dtype=torch.complex64)
    info = check(lambda z: (z.abs() * 2, z.angle(), z.abs().sum()), z, min_kernels=0)
    assert all(dtype != "complex64" for d in info.kernel_details for _, _, dtype, _ in d.buffers)


def test_empty_results():
    idx = torch.zeros(0, dtype=torch.int64)
    check(lambda x, i: (x[i] * 2, x[:0] + 1, x.sum() + 1), Y, idx, min_kernels=1)


def test_extern_gets_its_argument_in_the_traced_layout():
    # clone(x, contiguous_format) of a permuted input lowers to a lazy view of it; the extern
    # (mkldnn_rnn_layer reads its input as dense memory) must still get the dense copy
    lstm = torch.nn.LSTM(8, 6).eval()
    names = [name for name, _ in lstm.named_parameters()]

    def run(conv, *weights):
        seq = conv.squeeze(2).permute(2, 0, 1)
        return torch.func.functional_call(lstm, dict(zip(names, weights)), (seq,))[0]
    info = check(run, torch.randn(2, 8, 1, 5), *[p.detach() for p in lstm.parameters()], min_kernels=0)
    assert info.externs >= 1


def test_a_view_returned_by_an_extern_keeps_its_memory_alive():
    # Captured diag_embed calls aten.movedim, an extern returning a view of a kernel-written
    # buffer. The row norms below have that buffer's size: the arena must not hand its memory to
    # them while the view is still read (it did: the gathered diagonal held the norms).
    from fuselens.compiler.capture import compile as fl_compile

    def descriptor(z, pos):
        pairwise = torch.cdist(pos, pos) + torch.eye(z.shape[-1])
        cm = z.unsqueeze(-1) * z.unsqueeze(-2) / pairwise
        cm = torch.where(torch.eye(z.shape[-1], dtype=torch.bool), torch.diag_embed(0.5 * z.pow(2.4)), cm)
        order = cm.norm(dim=-1).argsort(dim=-1, descending=True)
        return torch.gather(cm, 1, order.unsqueeze(-1).expand_as(cm))

    z, pos = torch.rand(2, 5) * 8 + 1, torch.randn(2, 5, 3)
    compiled = fl_compile(descriptor, backend="fuselens")
    for _ in range(2):
        torch.testing.assert_close(compiled(z, pos), descriptor(z, pos))
