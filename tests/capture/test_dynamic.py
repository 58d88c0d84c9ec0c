"""dynamic=True: sizes of the function's tensor arguments are not guarded unless Python reads
them; one captured program then serves every size (dims captured with size 0 or 1 stay exact)."""
import torch

from fuselens.compiler.capture import compile as fl_compile, explain

from .harness import check


def size_free(x, y):
    a = torch.sin(x) * 2 + y
    b = a.softmax(-1) @ y.transpose(0, 1)
    return b.sum(0), a.mean()


def reads_size(x):
    if x.shape[0] > 4:
        return x[:4] * 2
    return x.view(x.shape[0], -1) + 1


def iterates_rows(x):
    total = x[0] * 0
    for row in x:
        total = total + row
    return total


def derived_size(x):
    y = x.t()
    return y.reshape(y.shape[1], -1)


def splits(x):
    return [p.sum() for p in x.split(2)]


def with_break(x):
    y = x.exp()
    print("mid")
    return y.sum(-1)


def shapes(*dims):
    return [torch.randn(*d, generator=torch.Generator().manual_seed(sum(d))) for d in dims]


def calls2(*pairs):
    return [((x, y), {}) for x, y in pairs]


def test_one_program_for_all_sizes():
    xs = shapes((4, 8), (5, 8), (7, 3), (2, 9))
    ys = shapes((4, 8), (5, 8), (7, 3), (2, 9))
    f = fl_compile(size_free, dynamic=True)
    check(size_free, calls2(*zip(xs, ys)), compiled=f)
    assert len(f._fuselens.root.variants) == 1
    rep = explain(size_free, dynamic=True)(xs[0], ys[0])
    assert any("dynamic dims [0, 1]" in g for g in rep.guards)


def test_captured_size_one_stays_exact():
    f = fl_compile(size_free, dynamic=True)
    check(size_free, calls2(*zip(shapes((1, 8), (4, 8), (6, 8)), shapes((1, 8), (4, 8), (6, 8)))), compiled=f)
    assert len(f._fuselens.root.variants) == 2  # (1, 8) exactly, then one for the rest


def test_sizes_read_in_python_are_guarded():
    for fn in (reads_size, iterates_rows, derived_size, splits):
        f = fl_compile(fn, dynamic=True)
        check(fn, [((x,), {}) for x in shapes((3, 4), (6, 4), (3, 4), (5, 2))], compiled=f)
        assert len(f._fuselens.root.variants) == 3, fn.__name__


def test_breaks_and_non_contiguous_inputs():
    f = fl_compile(with_break, dynamic=True)
    x = torch.randn(6, 5)
    check(with_break, [((x,), {}), ((x[:, :3],), {}), ((torch.randn(3, 7),), {})], compiled=f)


def test_compiled_back_end_replays_new_sizes():
    f = fl_compile(size_free, dynamic=True, backend="aten")
    xs, ys = shapes((4, 8), (5, 6)), shapes((4, 8), (5, 6))
    check(size_free, calls2(*zip(xs, ys)), compiled=f)
    assert len(f._fuselens.root.variants) == 1
