"""fuselens.compiler.profile on its own (what the worker runs for "Compile and profile"), including
the torch.compile (Inductor) timing that the end-to-end tests skip for speed."""
from __future__ import annotations

import pytest
import torch

from fuselens.compiler.profile import compare, kernel_source, profile, summary

FAST = {"timingBudgetS": 0.5, "repeats": 3, "warmup": 1}


def scaled_softmax(x, w):
    y = torch.softmax(x @ w, dim=-1)
    return y * 2 + 1


def other_softmax(x, w):  # its own code object: nothing cached from the test above
    return torch.softmax(x @ w, dim=0) - 1


def _inputs():
    torch.manual_seed(0)
    return torch.randn(8, 16), torch.randn(16, 16)


@pytest.mark.slow
def test_profile_times_eager_torch_compile_and_fuselens():
    result = profile(scaled_softmax, _inputs(), {}, {**FAST, "torchCompileBudgetS": 120}, function="scaled_softmax")
    timings, speedup = result["timings"], result["speedup"]
    assert "torchCompile" not in result["reasons"], result["reasons"]
    assert timings["torchCompileMs"] > 0 and result["compileSeconds"]["torchCompile"] > 0
    assert speedup["vsTorchCompile"] == pytest.approx(timings["torchCompileMs"] / timings["fuselensMs"], rel=0.01)
    assert " vs torch.compile · compiled in " in result["summary"]
    assert result["correct"] is True


def test_a_slow_torch_compile_is_abandoned_with_a_reason():
    stages = []
    result = profile(other_softmax, _inputs(), {}, {**FAST, "torchCompileBudgetS": 0.05},
                     stage=lambda name, message: stages.append(name))
    assert result["timings"]["torchCompileMs"] is None and result["speedup"]["vsTorchCompile"] is None
    assert result["compileSeconds"]["torchCompile"] is None
    assert "did not finish compiling within 0.05 s" in result["reasons"]["torchCompile"]
    assert result["timings"]["eagerMs"] > 0 and result["timings"]["fuselensMs"] > 0  # the rest is measured
    assert stages[:3] == ["capture", "compile", "check"] and "compile-torch" in stages and stages[-2:] == ["timing", "time-kernels"]


def test_kernels_carry_provenance_bytes_and_their_own_times():
    result = profile(scaled_softmax, _inputs(), {}, {**FAST, "torchCompile": False})
    first_line = scaled_softmax.__code__.co_firstlineno
    fed = {(p["path"], p["line"]) for k in result["kernels"] for p in k["provenance"]}
    assert fed == {(__file__, first_line + 1), (__file__, first_line + 2)}
    assert any("amax" in p["ops"] for k in result["kernels"] for p in k["provenance"])  # softmax, fused
    for kernel in result["kernels"]:
        assert kernel["bytes"] == sum(b["bytes"] for b in kernel["buffers"]) > 0
        assert kernel["timeMs"] > 0 and kernel["gbps"] == pytest.approx(kernel["bytes"] / kernel["timeMs"] / 1e6,
                                                                        rel=0.01)
    (mm,) = result["externs"]  # x @ w runs as a torch call
    assert mm["language"] == "torch" and mm["provenance"][0]["ops"] == ["mm"] and mm["timeMs"] > 0
    assert "kernelTime" not in result["reasons"]
    assert result["summary"].startswith(f"{result['ops']} ops → {len(result['kernels'])} kernel")


def test_compare_reports_the_largest_error_and_why():
    a = torch.tensor([1.0, float("nan"), 3.0])
    assert compare(a, a.clone()) == (True, 0.0, None)
    correct, error, why = compare((a, 2), (a + torch.tensor([0.5, 0.0, 0.0]), 2))
    assert not correct and error == 0.5 and "not close" in why
    assert compare([a], (a,))[0] is False  # another structure
    assert compare(a, torch.tensor([1.0, 2.0, 3.0]))[2].startswith("NaN or infinity")


def test_summary_format():
    speedup = {"vsEager": 3.14, "vsTorchCompile": 1.21}
    assert summary(9, 2, speedup, 0.43) == "9 ops → 2 kernels · 3.1× vs eager · 1.2× vs torch.compile · compiled in 0.4 s"
    assert summary(1, 1, {"vsEager": 42.0, "vsTorchCompile": None}, 1.0) == "1 op → 1 kernel · 42× vs eager · compiled in 1.0 s"


def test_kernel_source_is_cut_from_the_unit():
    unit = ("// Generated\n// kernel kernel0: loops x=[8]\nstatic void kernel0_impl() {}\n"
            "// kernel kernel2: loops x=[8]\nstatic void kernel2_impl() {}\nextern \"C\" void seg0(void** a) {}\n")
    assert kernel_source(unit, "kernel2", "cpp") == "// kernel kernel2: loops x=[8]\nstatic void kernel2_impl() {}\n"
    triton = "# Generated\n# kernel kernel0: loops\n@triton.jit\ndef kernel0(p):\n    pass\n\ndef seg0(ts):\n    kernel0()\n"
    assert kernel_source(triton, "kernel0", "triton").startswith("# kernel kernel0: loops\n@triton.jit")
    assert "def seg0" not in kernel_source(triton, "kernel0", "triton")
