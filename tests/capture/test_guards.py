"""One deliberate violation per guard kind: the compiled function must recapture (or bail out) and
still agree with eager. Variant counts show a guard really fired (or really did not)."""
import warnings

import pytest
import torch
import torch.nn as nn

from fuselens.compiler.capture import compile as fl_compile

from . import guard_programs as gp
from .harness import check


def variants(compiled):
    return len(compiled._fuselens.variants())


def root_variants(compiled):
    return len(compiled._fuselens.root.variants)


def test_same_inputs_reuse_the_variant():
    f = check(gp.scale, [((torch.randn(4, 4),), {})] * 3)
    assert root_variants(f) == 1


def test_shape_change_recaptures():
    f = check(gp.shape_dependent, [((torch.randn(4, 4),), {}), ((torch.randn(2, 3),), {}),
                                   ((torch.randn(4, 4),), {})])
    assert root_variants(f) == 2
    assert any("size mismatch" in line or "guard failed" in line for line in f._fuselens.log)


def test_dtype_change_recaptures():
    f = check(gp.scale, [((torch.randn(4),), {}), ((torch.randn(4).double(),), {}),
                         ((torch.arange(4),), {})])
    assert root_variants(f) == 3


def test_non_contiguous_input_recaptures():
    x = torch.randn(6, 4)
    f = check(gp.view_sensitive, [((x,), {}), ((x.t().contiguous().t(),), {}), ((x[:, ::2],), {})])
    assert root_variants(f) == 3


def test_aliasing_same_tensor_twice():
    x, y = torch.randn(5), torch.randn(5)
    # captured with distinct tensors, called with one tensor twice: mutation through x shows in y
    check(gp.mutate_then_read, [((x, y), {}), ((x, x), {}), ((x, y), {})])
    f = check(gp.mutate_then_read, [((x, x), {}), ((x, y), {})])
    assert root_variants(f) == 2  # `y is x` was part of what the first capture assumed


def test_grad_mode_recaptures():
    x = torch.randn(3, requires_grad=True)
    f = fl_compile(gp.scale)
    a = f(x)
    with torch.no_grad():
        b = f(x)
    assert a.requires_grad and not b.requires_grad
    assert root_variants(f) == 2


def test_autocast_recaptures():
    x = torch.randn(4, 4)
    f = fl_compile(gp.matmul)
    plain = f(x)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = f(x)
        ref = gp.matmul(x)
    assert plain.dtype == torch.float32 and low.dtype == ref.dtype == torch.bfloat16
    assert torch.allclose(low.float(), ref.float())
    assert root_variants(f) == 2


def test_default_dtype_recaptures():
    f = fl_compile(gp.creates_tensor)
    x = torch.randn(3)
    assert f(x).dtype == torch.float32
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        got, ref = f(x.double()), gp.creates_tensor(x.double())
    finally:
        torch.set_default_dtype(old)
    assert got.dtype == ref.dtype == torch.float64
    assert root_variants(f) == 2


def test_deterministic_flag_recaptures():
    f = fl_compile(gp.scale)
    x = torch.randn(3)
    f(x)
    torch.use_deterministic_algorithms(True)
    try:
        f(x)
    finally:
        torch.use_deterministic_algorithms(False)
    assert root_variants(f) == 2


def test_monkeypatched_global_value(monkeypatch):
    x = torch.randn(3)
    f = fl_compile(gp.uses_global)
    assert torch.allclose(f(x), gp.uses_global(x))
    monkeypatch.setattr(gp, "FACTOR", 5.0)
    assert torch.allclose(f(x), x * 5.0)
    assert root_variants(f) == 2


def test_monkeypatched_global_function(monkeypatch):
    x = torch.randn(3)
    f = fl_compile(gp.calls_helper)
    assert torch.allclose(f(x), x + 1)
    monkeypatch.setattr(gp, "helper", lambda t: t - 7)
    assert torch.allclose(f(x), x - 7)


def test_replaced_code_of_inlined_function():
    x = torch.randn(3)
    f = fl_compile(gp.calls_helper)
    f(x)
    saved = gp.helper.__code__
    try:
        gp.helper.__code__ = gp.other_helper.__code__
        assert torch.allclose(f(x), gp.other_helper(x))
    finally:
        gp.helper.__code__ = saved


def test_replaced_code_of_compiled_function():
    x = torch.randn(3)

    def g(t):
        return t + 1

    def h(t):
        return t * 100
    f = fl_compile(g)
    f(x)
    g.__code__ = h.__code__
    assert torch.allclose(f(x), x * 100)


def test_python_argument_value():
    x = torch.randn(3)
    f = check(gp.power, [((x, 2), {}), ((x, 3), {}), ((x, 2.0), {}), ((x, 2), {})])
    assert root_variants(f) == 3  # 2 and 2.0 are different specializations


def test_module_training_flag_and_params():
    m = gp.Net()
    f = fl_compile(m)
    x = torch.randn(2, 4)
    torch.manual_seed(0)
    a = f(x)
    torch.manual_seed(0)
    assert torch.allclose(a, m(x))
    m.eval()
    assert torch.allclose(f(x), m(x))
    m.fc.weight.requires_grad_(False)
    out = f(x)
    assert torch.allclose(out, m(x)) and out.requires_grad  # the bias still requires grad
    m.fc = nn.Linear(4, 4, bias=False)
    assert torch.allclose(f(x), m(x))


def test_module_attribute_python_value():
    m = gp.Scaled(2.0)
    f = fl_compile(m)
    x = torch.randn(3)
    assert torch.allclose(f(x), x * 2)
    m.k = 3.0
    assert torch.allclose(f(x), x * 3)


def test_list_argument_structure():
    x = torch.randn(3)
    f = check(gp.sum_list, [(([x, x],), {}), (([x, x, x],), {}), (((x, x),), {}), (([x, x],), {})])
    assert root_variants(f) == 3


def test_variant_limit_then_eager_with_one_warning():
    f = fl_compile(gp.scale)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, 13):
            x = torch.randn(n)
            assert torch.allclose(f(x), gp.scale(x))
    limit_warnings = [w for w in caught if "variant limit" in str(w.message)]
    assert len(limit_warnings) == 1
    assert root_variants(f) == 8


def test_guard_failure_after_a_break_resumes():
    """A value read after a statement that ran in Python is checked there, not at entry."""
    x = torch.randn(3)
    f = fl_compile(gp.reads_after_update)
    for k in (2.0, 2.0, 5.0):
        gp.STATE["k"] = k
        ref = gp.reads_after_update(x)
        gp.STATE["k"] = k
        assert torch.allclose(f(x), ref)
    assert root_variants(f) == 1  # STATE["k"] is read after update() ran: checked there, not at entry


def test_stores_to_outside_objects_are_replayed():
    """`state[k] = ...` in an inlined helper does not split the region; the value read before the
    store is guarded at entry (a new value recaptures, as with Dynamo)."""
    x = torch.randn(3)
    f = fl_compile(gp.reads_after_call)
    for k in (2.0, 2.0, 5.0):
        gp.STATE["k"] = k
        ref = gp.reads_after_call(x)
        after = gp.STATE["k"]
        gp.STATE["k"] = k
        assert torch.allclose(f(x), ref) and gp.STATE["k"] == after
    assert root_variants(f) == 2
    assert len(f._fuselens.variants()[0].regions) == 1


@pytest.mark.parametrize("n", [1, 4])
def test_loop_count_from_argument(n):
    check(gp.repeat, [((torch.randn(3), n), {}), ((torch.randn(3), n + 1), {})])


def test_list_slot_stores_stay_in_the_region():
    m, ref_m = gp.GridCache(), gp.GridCache()
    f = fl_compile(m)
    for shapes in ([(2, 3), (4,)], [(2, 3), (4,)], [(2, 5), (4,)]):
        xs = [torch.randn(s) for s in shapes]
        ref, got = ref_m(xs), f(xs)
        assert all(torch.allclose(a, b) for a, b in zip(ref, got))
        assert all(torch.equal(a, b) for a, b in zip(ref_m.grid, m.grid))
    assert all(len(v.regions) == 1 and not v.breaks for v in f._fuselens.variants())


def test_module_state_mutation_replayed_in_order():
    m = gp.Counter()
    f = fl_compile(m)
    x = torch.randn(2, 4)
    for calls in (0, 0, 1, 5):
        m.calls, ref_cache = calls, {}
        ref = m(x, ref_cache)
        ref_state = (m.calls, m.last)
        m.calls, cache = calls, {}
        got = f(x, cache)
        assert torch.allclose(got, ref) and torch.allclose(cache["y"], ref_cache["y"] if ref_cache else cache["y"])
        assert m.calls == ref_state[0] and torch.allclose(m.last, ref_state[1])
    assert root_variants(f) == 3  # one per value of self.calls read at entry (0, 1, 5)
    assert all(len(v.regions) == 1 for v in f._fuselens.variants())
