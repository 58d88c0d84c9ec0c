"""A `try` (or `with`, `match`) that runs in Python may `return`, or `break`/`continue` a loop the
interpreter runs: the function is still captured (it used to go through torch.compile whole), the
statement runs in Python and the interpreter goes on the way it left. Results must equal eager
whichever way a later call leaves it, and the statement's `finally` runs first, as in Python."""
import contextlib

import pytest
import torch

from fuselens import explain
from fuselens.compiler.capture import compile as fl_compile

from .harness import check


def lookup_or_return(x, table):
    y = x * 2
    try:
        scale = table["scale"]  # unassigned when the key is missing: the guard must still read it
    except KeyError:
        return y + 1
    return y * scale


def parse_or_continue(x, names):
    out = x
    for n in names:
        try:
            v = int(n)
        except ValueError:
            continue
        finally:
            out = out + 0.5  # runs before the continue, as in Python
        if v > 5:
            break
        out = out * v
    return out


def break_or_return_inside(x, words):
    out = x.clone()
    for w in words:
        try:
            if w == "stop":
                break
            if w == "sum":
                return out.sum()
            for _ in range(2):  # its own loop's break and continue stay as they are
                if w == "skip":
                    break
                out = out + 1
                continue
        except TypeError:
            pass
        out = out * 1.5
    return out


class Log:
    def __init__(self):
        self.events = []

    @contextlib.contextmanager
    def span(self, name):
        self.events.append(f"enter {name}")
        try:
            yield
        finally:
            self.events.append(f"exit {name}")


def with_returns(x, log, early):
    with log.span("block"):
        if early:
            return x - 1
        h = x.relu()
    return h * 3


def match_returns(x, mode):
    match mode:
        case "double":
            return x * 2
        case _:
            y = x.cos()
    return y + 1


def nested_tries(x, items):
    out = x
    for it in items:
        try:
            try:
                v = float(it)
            except ValueError:
                continue  # leaves both statements: the outer one's finally still runs
            if v < 0:
                return out - 1
        finally:
            out = out + 1
        out = out * v
    return out


def read_when_unassigned(x, table):
    try:
        scale = table["scale"]
    except KeyError:
        pass
    return x * scale  # UnboundLocalError when the key was missing, compiled as in eager


X = torch.randn(5)
CASES = [
    (read_when_unassigned, [((X, {"scale": 2.0}), {}), ((X, {}), {}), ((X, {"scale": 3.0}), {})]),
    (read_when_unassigned, [((X, {}), {}), ((X, {"scale": 2.0}), {}), ((X, {}), {})]),
    (lookup_or_return, [((X, {"scale": 3.0}), {}), ((X, {}), {}), ((X, {"scale": 2.0}), {}), ((X, {}), {})]),
    (parse_or_continue, [((X, ["1", "a", "2"]), {}), ((X, ["7", "1"]), {}), ((X, ["x"]), {}),
                         ((X, ["1", "a", "2"]), {})]),
    (break_or_return_inside, [((X, ["a", "stop", "b"]), {}), ((X, ["a", "sum"]), {}), ((X, ["skip", "a"]), {}),
                              ((X, ["a", "stop", "b"]), {})]),
    (match_returns, [((X, "double"), {}), ((X, "other"), {}), ((X, "double"), {})]),
    (nested_tries, [((X, ["1", "x", "2"]), {}), ((X, ["-1"]), {}), ((X, ["a", "b"]), {}), ((X, ["3", "-2"]), {})]),
]


@pytest.mark.parametrize("fn,calls", CASES, ids=[f"{c[0].__name__}{i}" for i, c in enumerate(CASES)])
def test_matches_eager_whichever_way_the_statement_leaves(fn, calls):
    check(fn, calls)


def test_a_context_manager_exits_before_the_return():
    eager_log, compiled_log = Log(), Log()
    compiled = fl_compile(with_returns)
    for early in (False, True, False):
        torch.testing.assert_close(compiled(X, compiled_log, early), with_returns(X, eager_log, early))
    assert compiled_log.events == eager_log.events == ["enter block", "exit block"] * 3


@pytest.mark.parametrize("fn,args", [(lookup_or_return, (X, {"scale": 3.0})),
                                     (parse_or_continue, (X, ["1", "a"])),
                                     (nested_tries, (X, ["1", "a"])),
                                     (match_returns, (X, "other"))],
                         ids=["return", "continue", "nested", "match"])
def test_captured_not_handed_to_torch_compile(fn, args):
    report = explain(fn)(*args)
    assert report.path == "fuselens", report.path_reason
    assert report.breaks, "the statement itself runs in Python"
    assert all("runs in Python" in b.reason for b in report.breaks), report.breaks


def test_the_transformed_program_dispatches_on_how_the_statement_left():
    report = explain(lookup_or_return)(X, {"scale": 3.0})
    source = report.program
    assert "while True:" in source and "= ('return', " in source
    # the path the capture took (no return) is guarded; the other one resumes
    assert "is None" in source
