"""Per-kernel records (`fuselens_info.kernel_details` / `extern_details`) and `profile_kernels`."""
import threading

import torch

from fl_helpers import aten_graph
from fuselens.compiler.backend import compile_graph
from fuselens.compiler.backend.api import build


def attention_like(q, k):
    s = q @ k.transpose(-1, -2)          # an extern (matmul)
    p = torch.softmax(s * 0.125, -1)      # one fused kernel
    return p, (p * 2).sum(0)


ARGS = (torch.randn(16, 8), torch.randn(32, 8))


def _compiled():
    gm = aten_graph(attention_like, *ARGS)
    return gm, compile_graph(gm, list(ARGS))


def test_details_name_source_lines_ops_and_bytes():
    _, compiled = _compiled()
    info = compiled.fuselens_info
    assert [d.name for d in info.kernel_details] == info.kernel_names
    (mm,) = info.extern_details
    assert mm.language == "torch" and [ops for _, _, ops in mm.lines] == [["mm.default"]]
    assert mm.bytes == (16 * 8 + 32 * 8 + 16 * 32) * 4  # both operands (as viewed) and the result
    ops = [op for d in info.kernel_details for _, _, line_ops in d.lines for op in line_ops]
    assert "amax.default" in ops and "exp.default" in ops
    for d in info.kernel_details:
        assert d.language == "cpp" and d.bytes == sum(b[3] for b in d.buffers) > 0
        for path, line, line_ops in d.lines:
            assert line_ops and (path == "" or isinstance(line, int))


def test_details_carry_source_lines_from_stack_traces():
    def fn(x):
        return torch.relu(x) * 2

    gm = aten_graph(fn, torch.randn(4))
    for n in gm.graph.nodes:
        n.meta["stack_trace"] = '  File "model.py", line 7, in fn\n    return torch.relu(x) * 2\n'
    compiled = compile_graph(gm, [torch.randn(4)])
    (detail,) = compiled.fuselens_info.kernel_details
    ((path, line, ops),) = detail.lines
    assert (path, line, sorted(ops)) == ("model.py", 7, ["mul.Tensor", "relu.default"])
    assert sorted(detail.origins) == [("mul.Tensor", "model.py", 7), ("relu.default", "model.py", 7)]


def test_profile_kernels_times_each_kernel_and_extern_by_name():
    _, compiled = _compiled()
    info = compiled.fuselens_info
    prof = compiled.profile_kernels(*ARGS, repeats=3)
    names = [p["name"] for p in prof]
    assert sorted(names) == sorted(info.kernel_names + [d.name for d in info.extern_details])
    assert all(p["ms"] >= 0 for p in prof)
    with torch.no_grad():  # profiling leaves normal calls exact
        torch.testing.assert_close(compiled(*ARGS), attention_like(*ARGS))


def test_concurrent_calls_use_private_intermediates():
    gm = aten_graph(attention_like, *ARGS)
    runner, _ = build(gm, list(ARGS))
    expected = attention_like(*ARGS)
    with runner.lock:  # another call holds the shared arena
        torch.testing.assert_close(runner(*ARGS), expected)
    results = []
    threads = [threading.Thread(target=lambda: results.append(runner(*ARGS))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        torch.testing.assert_close(r, expected)


def test_other_strides_compile_another_variant():
    _, compiled = _compiled()
    q = torch.randn(8, 16).t()  # same shape, transposed strides
    with torch.no_grad():
        torch.testing.assert_close(compiled(q, ARGS[1]), attention_like(q, ARGS[1]))


def test_compiled_under_a_fake_mode_runs_on_real_memory():
    """AOT autograd calls the compiler under a FakeTensorMode: the intermediates' arena must still
    be real memory."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    def fn(x):
        return torch.cumsum(torch.softmax(x, -1), 0)  # the extern reads a kernel's temp buffer
    x = torch.randn(8, 16)
    gm = aten_graph(fn, x)
    with FakeTensorMode(allow_non_fake_inputs=True) as mode:
        compiled = compile_graph(gm, [mode.from_tensor(x)])
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), fn(x))
