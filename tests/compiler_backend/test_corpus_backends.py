"""The analyzer's corpus (realistic model code, tests/corpus/) through fuselens.compile with the
FuseLens code generator (`backend="fuselens"`: regions whose inputs require grad compile forward
and backward through AOT autograd): every case matches eager on C++ kernels, as
tests/capture/test_corpus.py checks for the default back end. When the Triton interpreter is in
use, every region (and every forward and backward graph) is compiled to Triton kernels as well,
run on the same inputs, and must agree with the C++ kernels region by region: one capture checks
both code generators."""
import contextlib
import io
import operator
import os
import random
import warnings

import numpy as np
import pytest
import torch

from fuselens.compiler.backend import compile_graph
from fuselens.compiler.capture import compile as fl_compile
from fuselens.compiler.capture.backends import FuseLensBackend, rng_state, set_rng_state
from tests.capture import agreement
from tests.capture.harness import clone, run_once, same, same_printed

ORACLE = agreement._oracle()
FILES = agreement.CORPUS
NOT_COMPARABLE = agreement.NOT_COMPARABLE
TRITON = os.environ.get("TRITON_INTERPRET") == "1"


class CppAndTriton(FuseLensBackend):
    """Each region compiled by both code generators. The C++ kernels' results are what the program
    goes on with; the Triton kernels run first, on copies of the inputs and from the same random
    state, and every difference between the two is recorded."""

    name = "cpp+triton"
    # Region outputs include what end results rarely are: gradients that cancel to almost nothing
    # (a conv's bias before a BatchNorm: 1e-5, where the order of summation moves it by 1e-4).
    ATOL = 1e-3

    def __init__(self):
        self.differences: list[str] = []

    def compile_aten(self, gm, example_inputs):
        cpp = compile_graph(gm, example_inputs)
        try:
            triton = compile_graph(gm, example_inputs, device_backend="triton")
        except Exception as e:  # noqa: BLE001 - recorded: the test fails on it
            self.differences.append(f"Triton compile failed: {type(e).__name__}: {e}")
            return cpp
        if triton.fuselens_info.fallback:  # torch runs the graph: nothing of Triton's to check
            return cpp
        outputs = next(n for n in gm.graph.nodes if n.op == "output").args[0]
        compared = [i for i, n in enumerate(outputs) if not _scratch(n)]

        def run(*args):
            state = rng_state()
            theirs = triton(*clone(list(args)))
            set_rng_state(state)
            ours = cpp(*args)
            diff = same([ours[i] for i in compared], [theirs[i] for i in compared], atol=self.ATOL, rtol=1e-3)
            if diff is not None:
                self.differences.append(f"Triton vs C++ kernels of a region: {diff}")
            return ours
        run.fuselens_info = cpp.fuselens_info
        return run


_ALIASES = {torch.ops.aten.detach.default, torch.ops.aten.alias.default}
_UNINITIALIZED = {torch.ops.aten.empty.memory_format, torch.ops.aten.empty_strided.default,
                  torch.ops.aten.empty_like.default, torch.ops.aten.empty_permuted.default,
                  torch.ops.aten.new_empty.default}


def _scratch(node) -> bool:
    """Bytes no program may read before writing them: `torch.empty` (filled later, in Python) and an
    RNN layer's workspace (for its backward only, not all of it written)."""
    while isinstance(node, torch.fx.Node) and node.target in _ALIASES:
        node = node.args[0]
    if not isinstance(node, torch.fx.Node):
        return False
    return node.target in _UNINITIALIZED or (
        node.target is operator.getitem and node.args[1] == 3
        and node.args[0].target is torch.ops.aten.mkldnn_rnn_layer.default)


def _cases():
    out = []
    for path in FILES:
        module, _ = ORACLE.load_fixture(path)
        for name in getattr(module, "CASES", {}):
            out.append(pytest.param(path, name, id=f"{'cpp+triton' if TRITON else 'cpp'}:{path.stem}:{name}"))
    return out


def _seed():
    torch.manual_seed(0)
    random.seed(0)
    np.random.seed(0)


@pytest.mark.parametrize("path,name", _cases())
def test_corpus_case_matches_eager(path, name, monkeypatch, request):
    if name in NOT_COMPARABLE:
        pytest.skip("nondeterministic by design")
    if name in agreement.CAPTURE_GAPS:
        request.applymarker(pytest.mark.xfail(strict=True, reason=agreement.CAPTURE_GAPS[name]))
    if TRITON:
        pytest.importorskip("triton")
    monkeypatch.delenv("FUSELENS_STRICT", raising=False)  # graphs with mutations run with torch
    make = ORACLE.load_fixture(path)[0].CASES[name]
    _seed()
    eager_root, args = make()[:2]
    _seed()
    compiled_root, args2 = make()[:2]
    backend = CppAndTriton() if TRITON else "fuselens"
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        _seed()
        ref = run_once(eager_root, args, {})
        _seed()
        got = run_once(fl_compile(compiled_root, backend=backend), args2, {})
    diff = same(ref[0], got[0], atol=1e-4, rtol=1e-3)
    assert diff is None, diff
    assert same_printed(ref[1], got[1]) or name in agreement.PRINTED_TEXT_VARIES, \
        f"printed {got[1]!r}, eager printed {ref[1]!r}"
    assert same(ref[2], got[2], "args", 1e-4, 1e-3) is None
    if TRITON:
        assert not backend.differences, backend.differences[:3]
