"""Each compiler pass on its own: simplification, fusion decisions, loop passes, memory planning."""
import torch
import torch.nn.functional as F

from fl_helpers import aten_graph
from fuselens.compiler.backend.ir import Buffer, binary, const, load, substitute, unary, var, walk
from fuselens.compiler.backend.loops import coalesce, drop_unit_loops, eliminate_dead, hoist_divisions
from fuselens.compiler.backend.lowering import lower
from fuselens.compiler.backend.memplan import plan_memory
from fuselens.compiler.backend.scheduler import Kernel, Reduce, Store, acc_ref, schedule
from fuselens.compiler.backend.simplify import (bounds, fold_constants, simplify, simplify_algebra,
                                                simplify_index)

i, j, k = var("i"), var("j"), var("k")
f32 = torch.float32


def test_constant_folding():
    e = (const(2) * const(3) + const(1)) // const(2)
    assert fold_constants(e) == const(3)
    assert fold_constants(binary("lt", const(1.0), const(2.0))) == const(True)
    # a constant left unfolded became a Python scalar in Triton source: `(0.0 > 0).to(...)`
    assert fold_constants(unary("sign", const(0.0))) == const(0.0)
    assert fold_constants(unary("sign", const(-2.5))) == const(-1.0)
    assert fold_constants(unary("floor", const(-2.5))) == const(-3.0)
    assert fold_constants(unary("trunc", const(-2.5))) == const(-2.0)
    assert fold_constants(unary("sign", const(float("nan")))).op == "sign"


def test_algebraic_identities():
    x = load("a", i, f32)
    assert simplify_algebra(x * const(1.0) + const(0.0)) == x
    assert simplify_algebra(-(-x)) == x
    assert simplify_algebra(binary("pow", x, const(2.0))) == x * x
    assert simplify_algebra(x / const(4.0)) == x * const(0.25)       # exact: power of two
    assert simplify_algebra(x / const(3.0)) == x / const(3.0)        # inexact: kept
    assert simplify_algebra(x * const(0.0)).op == "mul"              # x*0 is not 0 for inf/nan


def test_index_simplification_undoes_reshape():
    merged = substitute(i * const(8) + j, {"i": k // const(8), "j": k % const(8)})
    assert simplify(merged, {"k": 64}) == k
    assert simplify_index((i * const(8) + j) // const(8), {"i": 4, "j": 8}) == i
    assert simplify_index((i * const(8) + j) % const(8), {"i": 4, "j": 8}) == j
    # (i*C + j) // (T*C) == i // T when j < C
    assert simplify((i * const(8) + j) // const(32), {"i": 40, "j": 8}) == i // const(4)
    # multiples of the divisor leave a division whatever the rest's range: a head-split transpose
    flat = i * const(256) + j
    merged = ((flat // const(64)) % const(4)) * const(64) + i * const(256) + flat % const(64)
    assert simplify(merged, {"i": 512, "j": 256}) == flat
    assert simplify((i * const(-64) + j + const(70)) // const(64), {"i": 4, "j": 8}) == i * const(-1) + const(1)
    # the offset of a split piece survives recombination: ((k+32)//96)*96 + (k+32)%96 == k + 32
    shifted = k + const(32)
    assert simplify((shifted // const(96)) * const(96) + shifted % const(96), {"k": 64}) == k + const(32)


def test_bounds():
    assert bounds(i * const(3) + j % const(5), {"i": 4, "j": 100}) == (0, 13)
    assert bounds(load("idx", i, torch.int64), {"i": 4}) is None


def _kernels(fn, *args):
    prog = lower(aten_graph(fn, *args), list(args))
    return prog, schedule(prog)


def test_vertical_fusion_of_pointwise_chain():
    prog, steps = _kernels(lambda x: ((x + 1).sin() * 2).exp(), torch.randn(4, 8))
    assert len(steps) == 1 and len(prog.nodes) == 1  # intermediates never materialize


def test_softmax_is_one_kernel_with_three_passes():
    prog, steps = _kernels(lambda x: torch.softmax(x, -1), torch.randn(4, 8))
    (k,) = steps
    assert [type(s).__name__ for p in k.phases for s in p] == ["Reduce", "Reduce", "Store"]
    assert not k.finals  # max and sum stay in registers


def test_nll_summand_is_computed_per_row_in_the_softmax_kernel():
    """The loss term of each row (gather - max - log(sum exp)) is a per-row value of the kernel
    that computes max and sum, not a gather of the second kernel (a cache miss per row)."""
    x, t = torch.randn(4, 8), torch.randint(0, 8, (4,))
    prog, steps = _kernels(lambda x, t: F.cross_entropy(x, t), x, t)
    first, *rest = steps
    (row,) = first.finals  # the loss term of each row: max and sum stay in registers
    assert {n.arg for n in walk([row.value]) if n.op == "acc"} == {r.acc for p in first.phases for r in p}
    x_name = prog.inputs[0]
    assert not any(n.op == "load" and n.arg == x_name for k in rest for e in k.exprs() for n in walk([e]))


def test_horizontal_fusion_of_reductions_over_same_input():
    prog, steps = _kernels(lambda x: (x.sum(-1), (x * x).sum(-1), x.amax(-1)), torch.randn(4, 8))
    (k,) = steps
    assert len(k.phases) == 1 and len(k.phases[0]) == 3


def test_layernorm_fuses_and_matmul_stays_extern():
    x, w = torch.randn(4, 16), torch.randn(16, 16)
    _, steps = _kernels(lambda x, w: F.layer_norm(x @ w, (16,)), x, w)
    assert [type(s).__name__ for s in steps] == ["Node", "Kernel"]


def test_dce_drops_unused_reduction():
    k = Kernel("k", [4], [8], [[Reduce("a", "sum", load("b", i, f32)), Reduce("c", "max", load("b", i, f32))],
                               [Store("o", var("x0"), acc_ref("a", f32))]], [], [])
    eliminate_dead(k)
    assert [s.acc for s in k.phases[0]] == ["a"]


def test_coalesce_merges_contiguous_loops_only():
    x0, x1 = var("x0"), var("x1")
    k = Kernel("k", [4, 8], [], [[Store("o", x0 * const(8) + x1, load("a", x0 * const(8) + x1, f32))]], [], [])
    coalesce(k)
    assert k.xsizes == [32]
    bcast = Kernel("k", [4, 8], [], [[Store("o", x0 * const(8) + x1, load("b", x1, f32))]], [], [])
    coalesce(bcast)
    assert bcast.xsizes == [4, 8]  # merging would need x % 8 for the broadcast operand
    unit = Kernel("k", [1, 8], [], [[Store("o", x1, load("a", x1, f32))]], [], [])
    drop_unit_loops(unit)
    assert unit.xsizes == [8]


def test_divisions_by_row_invariants_become_reciprocal_products():
    r0 = var("r0")
    row = load("a", r0, f32)
    k = Kernel("k", [4], [8], [[Reduce("s", "sum", row)],
                               [Store("o", r0, row / acc_ref("s", f32)), Store("p", r0, row / (row + const(1.0)))]], [], [])
    hoist_divisions(k)
    (by_sum, by_row) = k.phases[1]
    assert by_sum.value.op == "mul" and by_sum.value.args[1].op == "reciprocal"
    assert by_row.value.op == "truediv"  # varies with r0: stays a division


def test_divisions_feeding_a_rounding_stay_divisions():
    x0 = var("x0")
    scale = load("s", const(0), f32)
    quantized = unary("round", load("a", x0, f32) / scale)
    k = Kernel("k", [8], [], [[Store("q", x0, quantized), Store("y", x0, load("a", x0, f32) / scale)]], [], [])
    hoist_divisions(k)
    (rounded, plain) = k.phases[0]
    assert rounded.value.args[0].op == "truediv"  # x * (1 / s) can land on the other side of .5
    assert plain.value.op == "mul" and plain.value.args[1].op == "reciprocal"


def test_memory_plan_writes_matmul_epilogue_in_place():
    x, w = torch.randn(8, 16), torch.randn(16, 16)
    prog = lower(aten_graph(lambda x, w: torch.relu(x @ w) * 2 + 1, x, w), [x, w])
    plan = plan_memory(schedule(prog), prog)
    assert list(plan.inplace.values()) == [prog.nodes[0].outs[0]]


def test_memory_plan_shares_arena_between_dead_temps():
    x = torch.randn(8, 16)

    def fn(x):
        a = torch.cumsum(x.exp(), 1)        # extern reads temp 1
        b = torch.cumsum(a[:, :8].sin(), 1)  # temp 2: another shape, so not in place; temp 1 is dead
        return b
    prog = lower(aten_graph(fn, x), [x])
    plan = plan_memory(schedule(prog), prog)
    assert len(plan.arena_offset) == 2 and len(set(plan.arena_offset.values())) == 1


def test_buffer_index_and_strides():
    b = Buffer("b", (2, 3), f32, strides=(1, 2))
    assert simplify(b.index([i, j])) == simplify(i + j * const(2))
