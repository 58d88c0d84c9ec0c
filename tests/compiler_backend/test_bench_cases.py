"""Every case of bench/compiler_bench.py (at small sizes) matches eager: through FuseLens' own
front end (`fuselens.compile(fn, backend="fuselens")`), through Dynamo (`fuselens_backend`), and
on the Triton backend through the interpreter when it is the one in use."""
import os
import sys

import pytest
import torch

import fuselens
from fuselens.compiler.backend import compile_graph, fuselens_backend

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
from compiler_cases import build_cases, runner  # noqa: E402

CASES = {name: (fn, args) for name, fn, args, _ in build_cases("test")}
TOL = dict(atol=1e-4, rtol=1e-4)


def _eager(fn, args):
    with torch.no_grad():
        return runner(args)(fn)


@pytest.mark.parametrize("name", sorted(CASES))
def test_fuselens_compile_matches_eager(name):
    fn, args = CASES[name]
    compiled = fuselens.compile(fn, backend="fuselens")
    with torch.no_grad():
        first, again = runner(args)(compiled), runner(args)(compiled)  # again: reused buffers
    torch.testing.assert_close(first, _eager(fn, args), **TOL)
    torch.testing.assert_close(again, _eager(fn, args), **TOL)


@pytest.mark.parametrize("name", sorted(CASES))
def test_torch_compile_backend_matches_eager(name):
    fn, args = CASES[name]
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=fuselens_backend)
    with torch.no_grad():
        torch.testing.assert_close(runner(args)(compiled), _eager(fn, args), **TOL)


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="the Triton interpreter is not in use")
@pytest.mark.parametrize("name", sorted(CASES))
def test_triton_backend_matches_eager(name):
    pytest.importorskip("triton")
    fn, args = CASES[name]
    infos = []

    def triton_backend(gm, example_inputs):
        compiled = compile_graph(gm, example_inputs, device_backend="triton")
        infos.append(compiled.fuselens_info)
        return compiled
    with torch.no_grad():
        got = runner(args)(fuselens.compile(fn, backend=triton_backend))
    torch.testing.assert_close(got, _eager(fn, args), **TOL)
    assert infos and all(i.backend == "triton" and not i.fallback for i in infos), infos
