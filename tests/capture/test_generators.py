"""Generator functions iterated by a `for` loop are inlined (as Dynamo inlines them): each `yield`
runs the loop body, interleaved with the generator as Python runs them. Results must equal eager,
and a generator with nothing that breaks must leave one region and no graph break."""
import pytest
import torch
import torch.nn as nn

from fuselens import explain

from .harness import check


def chunks(x, size):
    for start in range(0, x.shape[0], size):
        yield x[start:start + size]


def _chunked(x):
    out = []
    for c in chunks(x, 2):
        out.append(c.sin() * 2)
    return torch.cat(out)


def indexed_rows(x):
    for i in range(x.shape[0]):
        yield i, x[i]
    return  # a bare return ends the loop over it, like running off the end


def continue_break_else(x):
    total = x.new_zeros(x.shape[1:])
    for i, row in indexed_rows(x):
        if i == 1:
            continue
        total = total + row * i
        if i == 3:
            break
    else:
        total = total - 100
    return total


def noisy(x, n):
    for i in range(n):
        yield x * i + torch.rand(1)  # draws interleave with the loop body's


def body_breaks(x):
    acc = x
    for y in noisy(x, 3):
        print("step", round(float(y.sum()), 4))  # a graph break inside the loop body
        acc = acc + torch.dropout(y, 0.5, True)
    return acc


def host_values(x):
    for i in range(x.shape[0]):
        yield x[i].sum().item()  # the yielded value is made in Python


def sum_of_host_values(x):
    total = x.new_zeros(())
    for v in host_values(x):
        total = total + v
    return total


def returns_from_the_loop(x):
    for i, row in indexed_rows(x):
        if i == 2:
            return row * 10  # the generator is left suspended
    return x.sum(0)


def pairs(x):
    for a in chunks(x, 2):
        for b in chunks(x, 3):  # a generator loop inside a generator
            yield a.sum() * b.sum()


def nested_generators(x):
    out = []
    for p in pairs(x):
        out.append(p)
    return torch.stack(out)


def data_dependent_branch(x):
    acc = x.new_zeros(x.shape[1:])
    for i, row in indexed_rows(x):
        if row.sum() > 0:  # the other side resumes inside the loop, the generator suspended
            acc = acc + row
        else:
            acc = acc - row * i
    return acc


class Stages(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))

    def _stages(self, x):  # a generator method, MONAI/timm style
        for i, block in enumerate(self.blocks):
            x = block(x).relu()
            yield i, x

    def forward(self, x):
        feats = []
        for i, h in self._stages(x):
            if i != 1:
                feats.append(h)
        return torch.cat(feats, -1)


X = torch.randn(6, 4)
CASES = [
    (_chunked, [((X,), {}), ((X * 2,), {})]),
    (continue_break_else, [((X,), {}), ((X[:3],), {})]),
    (body_breaks, [((X,), {}), ((X * 2,), {})]),
    (sum_of_host_values, [((X,), {}), ((X + 1,), {})]),
    (returns_from_the_loop, [((X,), {}), ((X[:2],), {})]),
    (nested_generators, [((X,), {})]),
    (data_dependent_branch, [((X,), {}), ((-X,), {}), ((X.flip(0),), {})]),
]


@pytest.mark.parametrize("fn,calls", CASES, ids=[c[0].__name__ for c in CASES])
def test_matches_eager(fn, calls):
    check(fn, calls)


def test_a_generator_method_of_a_module_matches_eager():
    torch.manual_seed(0)
    model = Stages()
    check(model, [((X,), {}), ((X[:3],), {})])


@pytest.mark.parametrize("fn", [_chunked, continue_break_else, Stages()], ids=["chunks", "else", "method"])
def test_an_inlined_generator_leaves_one_region(fn):
    report = explain(fn)(X)
    assert report.path == "fuselens"
    assert not report.breaks, report.breaks
    assert len(report.regions) == 1


def test_a_generator_used_other_than_in_a_for_loop_still_runs_in_python():
    def first(x):
        return next(chunks(x, 2)) * 2

    report = explain(first)(X)
    assert torch.equal(report.result, X[:2] * 2)
    assert any("generator" in b.reason for b in report.breaks), report.breaks


def test_a_generator_compiled_itself_goes_through_torch_compile():
    report = explain(chunks)(X, 4)
    assert report.path == "torch.compile"
    assert [t.shape[0] for t in report.result] == [4, 2]
