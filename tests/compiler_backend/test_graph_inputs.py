"""What compile_graph takes besides tensors: Python numbers among the inputs (capture passes the
values a region reads from Python variables) and tensor constants the graph holds (get_attr)."""
import torch

from fuselens.compiler.backend import api, compile_graph

aten = torch.ops.aten


def _scaled_graph():
    """(x, eps, n) -> (relu(x * eps + n), sum(x * eps + n) * n, n)"""
    g = torch.fx.Graph()
    x, eps, n = g.placeholder("x"), g.placeholder("eps"), g.placeholder("n")
    y = g.call_function(aten.add.Tensor, (g.call_function(aten.mul.Tensor, (x, eps)), n))
    total = g.call_function(aten.mul.Tensor, (g.call_function(aten.sum.default, (y,)), n))
    g.output((g.call_function(aten.relu.default, (y,)), total, n))
    return torch.fx.GraphModule(torch.nn.Module(), g)


def _same(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        if isinstance(b, torch.Tensor):
            torch.testing.assert_close(a, b)
        else:
            assert a == b and type(a) is type(b)


def test_python_numbers_are_compiled_in_per_value():
    gm, x = _scaled_graph(), torch.randn(4, 5)
    compiled = compile_graph(gm, [x, 0.5, 3])  # FUSELENS_STRICT: a fallback would raise
    assert compiled.fuselens_info.kernels >= 1 and not compiled.fuselens_info.fallback
    assert "0.5f" in compiled.fuselens_info.source  # the value is in the kernel
    _same(compiled(x, 0.25, 3), gm(x, 0.25, 3))
    assert "0.25f" in compiled.fuselens_info.source  # a variant for the new value
    for args in ([x, 0.5, -2], [x * 2, 0.5, 3], [x, 0.5, 3], [x, 0.25, 3]):
        _same(compiled(*args), gm(*args))


def test_number_inputs_that_keep_changing_run_with_torch(monkeypatch):
    monkeypatch.delenv("FUSELENS_STRICT", raising=False)
    gm, x = _scaled_graph(), torch.randn(4, 5)
    compiled = compile_graph(gm, [x, 0.0, 1])
    for step in range(api.MAX_NUMBER_VARIANTS + 3):
        _same(compiled(x, float(step), 1), gm(x, float(step), 1))
    assert "values of its number inputs" in compiled.fuselens_info.fallback
    _same(compiled(x, 0.0, 1), gm(x, 0.0, 1))  # a value compiled for still runs its kernels


def test_tensor_constants_become_inputs():
    root = torch.nn.Module()
    root.const0, root.const1 = torch.arange(5.0), torch.tensor(2.0)
    g = torch.fx.Graph()
    x = g.placeholder("x")
    y = g.call_function(aten.add.Tensor, (x, g.get_attr("const0")))
    g.output((g.call_function(aten.mul.Tensor, (y, g.get_attr("const1"))),))
    gm, x = torch.fx.GraphModule(root, g), torch.randn(4, 5)
    compiled = compile_graph(gm, [x])
    assert compiled.fuselens_info.kernels == 1 and not compiled.fuselens_info.fallback
    _same(compiled(x), gm(x))
    assert [k["name"] for k in compiled.profile_kernels(x, repeats=1)] == compiled.fuselens_info.kernel_names
