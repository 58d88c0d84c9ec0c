"""Shared helpers of the compiler back-end tests (imported by the test modules)."""
import torch
from torch.fx.experimental.proxy_tensor import make_fx


def aten_graph(fn, *args):
    """The aten graph of fn, decomposed like the torch.compile backend does it."""
    from fuselens.compiler.backend import decompositions
    with torch.no_grad():
        return make_fx(fn, decomposition_table=decompositions())(*args)


def check(fn, *args, backend="cpp", atol=None, rtol=None, min_kernels=1):
    """Compile fn's graph, compare with eager; returns the compile info."""
    from fuselens.compiler.backend import compile_graph
    gm = aten_graph(fn, *args)
    compiled = compile_graph(gm, list(args), device_backend=backend)
    with torch.no_grad():
        expected = fn(*args)
        got = compiled(*args)
        got_again = compiled(*args)  # second call: recycled buffers must not change results
    if not isinstance(expected, (tuple, list)):
        got, got_again = got[0] if isinstance(got, (tuple, list)) else got, (
            got_again[0] if isinstance(got_again, (tuple, list)) else got_again)
    torch.testing.assert_close(got, expected, atol=atol, rtol=rtol, equal_nan=True)
    torch.testing.assert_close(got_again, expected, atol=atol, rtol=rtol, equal_nan=True)
    info = compiled.fuselens_info
    assert not info.fallback, info.fallback
    assert info.kernels >= min_kernels, info
    return info
