"""Triton backend on a real GPU: shapes large enough for the autotuned block sizes and
ragged-edge masks to matter (test_triton.py runs the small cases there too). Skipped without CUDA."""
import pytest
import torch
import torch.nn.functional as F

if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)
triton = pytest.importorskip("triton")

from fl_helpers import check  # noqa: E402


@pytest.mark.parametrize("shape", [(4096, 4096), (1000, 1023), (3, 70001), (70001, 3)])
def test_large_and_ragged_shapes(shape):
    x = torch.randn(*shape, device="cuda")
    w = torch.randn(shape[-1], device="cuda")
    check(lambda x: torch.softmax(x, -1), x, backend="triton", atol=1e-5, rtol=1e-4)
    check(lambda x, w: F.rms_norm(x, (shape[-1],), w) + x.sigmoid(), x, w, backend="triton", atol=1e-4, rtol=1e-4)
    check(lambda x: (x.sum(0), x.amax(-1)), x, backend="triton", atol=1e-2, rtol=1e-4)


def test_default_backend_for_cuda_inputs_is_triton():
    from fuselens.compiler.backend import compile_graph
    from fl_helpers import aten_graph
    x = torch.randn(128, 256, device="cuda")
    compiled = compile_graph(aten_graph(lambda x: (x * 2).exp().sum(-1), x), [x])
    torch.testing.assert_close(compiled(x)[0], (x * 2).exp().sum(-1))
    assert compiled.fuselens_info.backend == "triton"


def test_fuselens_compile_end_to_end_on_gpu():
    import fuselens

    def layer(x, w):
        h = F.layer_norm(x, x.shape[-1:]) @ w
        return F.gelu(h) + h.softmax(-1)

    x, w = torch.randn(64, 512, device="cuda"), torch.randn(512, 512, device="cuda")
    compiled = fuselens.compile(layer, backend="fuselens")
    torch.testing.assert_close(compiled(x, w), layer(x, w), atol=1e-4, rtol=1e-4)
