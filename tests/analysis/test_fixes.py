"""Mechanical fixes: they apply cleanly, remove the finding, and keep eager semantics.

Each case runs the original and the fixed function eagerly on the same inputs and compares
outputs and printed text (torch.compiler.is_compiling() is False in eager mode).
"""
import contextlib
import io
import textwrap

import pytest
import torch

from fuselens.analysis import analyze_source, apply_edits

CASES = {
    "where_assign": ("""
        import torch
        @torch.compile
        def f(x, y):
            if x.sum() > y.sum():
                out = x * 2 + y
            else:
                out = torch.relu(x - y)
            return out
        """, "FL101", 2),
    "where_return": ("""
        import torch as th
        @th.compile
        def f(x, y):
            if (x > 0).all():
                return x.exp()
            else:
                return y.abs() + 1
        """, "FL101", 2),
    "where_ternary": ("""
        import torch
        @torch.compile
        def f(x, y):
            z = x.sin() if x.mean() > 0 else y.cos()
            return z * 2
        """, "FL101", 2),
    "guard_print": ("""
        import torch
        @torch.compile
        def f(x, y):
            z = x + y
            print("z is",
                  z.shape)
            return z
        """, "FL110", 2),
    "guard_logging": ("""
        import logging
        import torch
        log = logging.getLogger("fixture")
        @torch.compile
        def f(x, y):
            log.info("step")
            return x * y
        """, "FL111", 2),
    "drop_item": ("""
        import torch
        @torch.compile
        def f(x, y):
            return x * y.sum().item() + 1
        """, "FL102", 2),
    "hoist_argument": ("""
        import torch
        def shout(t):
            print("norm", float(t.norm()))
            return t * 2
        @torch.compile
        def f(x, y):
            out = x.add(shout(y), alpha=0.5)
            return out
        """, "FL132", 2),
}


def _run(source: str, args):
    namespace = {}
    exec(compile(source, "<fixture>", "exec"), namespace)  # torch.compile here is lazy: no compile happens
    function = namespace["f"]
    function = getattr(function, "_torchdynamo_orig_callable", function)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        result = function(*args)
    return result, printed.getvalue()


@pytest.mark.parametrize("name", sorted(CASES))
def test_fix_keeps_eager_semantics(name):
    source, code, arity = CASES[name]
    source = textwrap.dedent(source)
    findings = [f for f in analyze_source(source, "fixture.py").findings if f.code == code]
    assert len(findings) == 1, findings
    fix = findings[0].fix
    assert fix is not None and fix.edits
    fixed = apply_edits(source, fix.edits)
    compile(fixed, "<fixed>", "exec")
    assert code not in {f.code for f in analyze_source(fixed, "fixture.py").findings}, fixed
    torch.manual_seed(0)
    for _ in range(4):  # both branches of data-dependent conditions get exercised
        args = [torch.randn(3, 4) for _ in range(arity)]
        expected, expected_out = _run(source, args)
        actual, actual_out = _run(fixed, args)
        torch.testing.assert_close(actual, expected)
        assert actual_out == expected_out


def test_no_where_fix_when_a_branch_has_side_effects():
    source = textwrap.dedent("""
        import torch
        @torch.compile
        def f(x):
            if x.sum() > 0:
                y = helper(x)
            else:
                y = x
            return y
        def helper(x):
            return x + 1
        """)
    finding = next(f for f in analyze_source(source, "fixture.py").findings if f.code == "FL101")
    assert finding.fix is None


def test_no_guard_fix_when_print_shares_its_line():
    source = "import torch\n@torch.compile\ndef f(x):\n    y = x + 1; print(y)\n    return y\n"
    finding = next(f for f in analyze_source(source, "fixture.py").findings if f.code == "FL110")
    assert finding.fix is None


def test_fix_columns_are_characters_not_bytes():
    source = 'import torch\n@torch.compile\ndef f(x):\n    s = "é"; z = x * x.sum().item()\n    return z\n'
    finding = next(f for f in analyze_source(source, "fixture.py").findings if f.code == "FL102")
    assert finding.span.column == source.splitlines()[3].index("item")
    fixed = apply_edits(source, finding.fix.edits)
    assert 'z = x * x.sum()\n' in fixed
