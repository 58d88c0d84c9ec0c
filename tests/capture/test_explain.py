"""explain(): regions, breaks (positions, rule ids, Dynamo gb types), guards, the transformed
program; fullgraph=True; the torch.compile path for what cannot be captured from source."""
import ast
import contextlib
import functools
import io

import pytest
import torch

from fuselens.analysis.rules import RULES
from fuselens.compiler.capture import FullGraphError, compile as fl_compile, explain

from . import explain_programs as ep


def test_report_of_straight_line_code():
    rep = explain(ep.straight)(torch.randn(4, 4), torch.randn(4, 4))
    assert rep.path == "fuselens" and rep.breaks == [] and len(rep.regions) == 1
    region = rep.regions[0]
    lines = {line for _, line in region.lines}
    assert lines == {ep.line_of(ep.straight, "a = torch.sin"), ep.line_of(ep.straight, "return")}
    assert [op for op, _ in region.ops] == ["aten.sin.default", "aten.mul.Tensor", "aten.add.Tensor"]
    assert "aten.sin" in region.graph
    assert any(g.startswith("x: Tensor float32[4, 4]") for g in rep.guards)
    assert any(g.startswith("global state: grad on") for g in rep.guards)


def test_break_positions_rules_and_gb_types():
    x = torch.randn(4, 4).abs()
    rep = explain(ep.many_breaks)(x)
    got = [(b.line, b.column, b.rule) for b in rep.breaks]
    want = [
        (ep.line_of(ep.many_breaks, "print("), 4, "FL110"),
        (ep.line_of(ep.many_breaks, ".item()"), ep.col_of(ep.many_breaks, "x.sum().item()"), "FL102"),
        (ep.line_of(ep.many_breaks, "if x.mean()"), 7, "FL101"),
    ]
    assert got == want
    for b in rep.breaks:
        assert b.gb_type == RULES[b.rule].gb_type
        assert b.code == ep.source_line(ep.many_breaks, b.line)


def test_transformed_program_is_python_with_line_comments():
    rep = explain(ep.many_breaks)(torch.randn(4, 4).abs())
    src = rep.program
    tree = ast.parse(src)  # a real Python program
    assert any(isinstance(n, ast.FunctionDef) for n in tree.body)
    assert "print('value', y.shape)" in src  # the fallback statement in its original form
    assert f"line {ep.line_of(ep.many_breaks, 'print(')}: graph break FL110" in src
    assert "__fl_r0(x)" in src


def test_lazy_branch_becomes_a_second_unit_after_a_flip():
    f = fl_compile(ep.branchy)
    pos, neg = torch.ones(3), -torch.ones(3)
    assert torch.equal(f(pos), ep.branchy(pos))
    assert len(f._fuselens.variants()) == 1
    assert torch.equal(f(neg), ep.branchy(neg))
    assert len(f._fuselens.variants()) == 2  # the else side, captured on first use
    assert torch.equal(f(pos), ep.branchy(pos)) and torch.equal(f(neg), ep.branchy(neg))
    assert len(f._fuselens.variants()) == 2


def test_fullgraph_lists_every_break_and_runs_nothing():
    f = fl_compile(ep.many_breaks, fullgraph=True)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(FullGraphError) as err:
        f(torch.randn(4, 4))
    assert out.getvalue() == ""
    rules = sorted(b.rule for b in err.value.breaks)
    assert rules == ["FL101", "FL102", "FL110", "FL114"]  # FL114 is inside the else branch
    assert str(ep.line_of(ep.many_breaks, "print(")) in str(err.value)


def test_fullgraph_without_breaks_just_works():
    f = fl_compile(ep.straight, fullgraph=True)
    x, y = torch.randn(2, 2), torch.randn(2, 2)
    assert torch.allclose(f(x, y), ep.straight(x, y))


def test_autograd_mode_is_reported():
    x = torch.randn(3, requires_grad=True)
    rep = explain(ep.straight)(x, torch.randn(3))
    assert rep.regions[0].autograd.startswith("eager")
    rep = explain(ep.straight)(torch.randn(3), torch.randn(3))
    assert rep.regions[0].autograd == "none needed"


@pytest.mark.parametrize("make", [
    lambda: functools.partial(ep.straight, y=torch.ones(3)),  # no function object to read source from
    lambda: ep.uses_global_statement,  # `global` is not supported by the capture
    lambda: ep.generator_user,  # a generator inside
])
def test_torch_compile_path(make):
    fn = make()
    x = torch.randn(3)
    args = (x,) if fn is not ep.uses_global_statement else (x,)
    rep = explain(fn)(*args)
    assert rep.path == "torch.compile" and rep.path_reason
    compiled = fl_compile(fn)
    assert torch.allclose(compiled(*args), fn(*args))


def test_module_explain_and_guards():
    m = ep.Tiny()
    rep = explain(m)(torch.randn(2, 4))
    assert rep.path == "fuselens"
    assert any("self.lin.weight: Parameter float32[3, 4]" in g for g in rep.guards)
    assert any(g == "self.training is True" for g in rep.guards)


def test_lru_cache_wrapper_is_inlined_like_dynamo():
    x = torch.randn(3, 8)
    rep = explain(ep.uses_lru_cached)(x)
    assert rep.breaks == [] and len(rep.regions) == 1
    lines = {line for _, line in rep.regions[0].lines}
    assert ep.line_of(ep.cached_frequencies, "return 1.0") in lines
    torch.testing.assert_close(fl_compile(ep.uses_lru_cached)(x), ep.uses_lru_cached(x))


def test_ops_inside_library_code_carry_the_calling_line():
    """nn.Linear's own statements are torch's: its ops, and the ops after the call in the same
    expression, belong to the user's line (the editor links kernels to it)."""
    rep = explain(ep.LinearThenOps())(torch.randn(2, 4))
    ops = rep.regions[0].ops
    calling_line = ep.line_of(ep.LinearThenOps.forward, "torch.relu(self.lin(x))")
    first = [op for op, line in ops if line == calling_line]
    assert {"aten.addmm.default", "aten.relu.default", "aten.mul.Tensor"} <= set(first) and ops[:len(first)] == \
        [(op, calling_line) for op in first]
    assert ops[-1] == ("aten.add.Tensor", ep.line_of(ep.LinearThenOps.forward, "uses_lru_cached(y) + 1"))
    assert all(ep.__file__ == f for f, _ in rep.regions[0].lines)


def test_grad_mode_switching_calls_inside_expressions_are_hoisted():
    from .programs import no_grad_call_inside_expression as fn, r
    x, w = r(4, 8, grad=True), r(8, 8, grad=True)
    rep = explain(fn)(x, w)
    broken = sorted(b.code.split(" ", 1)[0] for b in rep.breaks)
    # `z = w.t() @ ...` evaluates w.t() before the call; in the return statement, the third call
    # comes after `(x * ...).sum()` (the second call, before it, was hoisted); `u = ...` has no break
    assert broken == ["return", "z"]
    assert "__fl_g" in rep.program  # the hoisted calls' statements
