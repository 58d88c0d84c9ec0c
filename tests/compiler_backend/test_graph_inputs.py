"""What compile_graph takes besides its tensor inputs: tensor constants the graph holds (get_attr)."""
import torch

from fuselens.compiler.backend import compile_graph

aten = torch.ops.aten


def _same(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b)


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
