"""Kernel cache behaviour and the torch.compile backend entry point."""
import threading

import torch
import torch.nn.functional as F

from fuselens.compiler.backend import cache, fuselens_backend

SRC = 'extern "C" int fl_take_error(void) { return 0; }\nextern "C" int answer(void) { return %d; }\n'


def _counting_start(monkeypatch):
    calls = []
    real = cache._start

    def start(source, key):
        calls.append(key)
        return real(source, key)
    monkeypatch.setattr(cache, "_start", start)
    return calls


def test_memory_then_disk_cache(monkeypatch):
    calls = _counting_start(monkeypatch)
    (lib,) = cache.compile_many([SRC % 1])
    assert lib.answer() == 1 and len(calls) == 1
    cache.compile_many([SRC % 1])
    cache.clear_memory_cache()
    (lib,) = cache.compile_many([SRC % 1])  # from disk, no compiler run
    assert lib.answer() == 1 and len(calls) == 1


def test_corrupt_entry_is_rebuilt(monkeypatch):
    calls = _counting_start(monkeypatch)
    path = cache.cache_dir() / f"{cache.cache_key(SRC % 2)}.so"
    path.write_bytes(b"\x7fELF truncated garbage")
    (lib,) = cache.compile_many([SRC % 2])
    assert lib.answer() == 2 and len(calls) == 1


def test_concurrent_compiles_of_the_same_source():
    results, errors = [], []

    def work():
        try:
            results.append(cache.compile_many([SRC % 3])[0].answer())
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and results == [3, 3, 3]
    assert not [p for p in cache.cache_dir().iterdir() if p.name.endswith((".tmp", ".cpp"))]


def test_parallel_compile_of_several_units(monkeypatch):
    calls = _counting_start(monkeypatch)
    libs = cache.compile_many([SRC % 4, SRC % 5, SRC % 4])
    assert [lib.answer() for lib in libs] == [4, 5, 4] and len(calls) == 2


def test_torch_compile_backend_graph_break_shape_change_and_debug(capfd, monkeypatch):
    monkeypatch.setenv("FUSELENS_DEBUG", "4")
    torch._dynamo.reset()

    def fn(x, w):
        y = F.layer_norm(x, (x.shape[-1],)) * w
        print("graph break")
        return torch.softmax(y, -1) + 1

    compiled = torch.compile(fn, backend=fuselens_backend, dynamic=False)
    with torch.no_grad():
        for shape in [(4, 16), (3, 8)]:
            x, w = torch.randn(*shape), torch.randn(shape[-1])
            torch.testing.assert_close(compiled(x, w), fn(x, w))
    err = capfd.readouterr().err
    assert "compiled graph:" in err and "static void kernel" in err
    assert "test_cache_backend.py:" in err  # provenance: kernels name the source lines they fuse


def test_backend_training_graph():
    torch._dynamo.reset()
    lin = torch.nn.Linear(8, 8)

    def fn(x):
        return F.gelu(lin(x)).sum()
    x = torch.randn(4, 8, requires_grad=True)
    compiled = torch.compile(fn, backend=fuselens_backend)
    loss = compiled(x)
    loss.backward()
    g = x.grad.clone()
    x.grad = None
    fn(x).backward()
    torch.testing.assert_close(g, x.grad)


def test_automatic_dynamic_shapes_are_specialized_per_shape():
    torch._dynamo.reset()

    def fn(x):
        return torch.softmax(x * 2, -1) + x
    compiled = torch.compile(fn, backend=fuselens_backend)  # Dynamo marks sizes dynamic on change
    with torch.no_grad():
        for shape in [(8, 16), (16, 8), (5, 7), (16, 8)]:
            x = torch.randn(*shape)
            torch.testing.assert_close(compiled(x), fn(x))
