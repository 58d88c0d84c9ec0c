"""`fuselens.compile` and `fuselens.explain`."""
from __future__ import annotations

import functools
import types

import torch

from .backends import Backend
from .frames import Unsupported
from .report import ExplainReport, build
from .runtime import CompiledFunction


def compile(fn_or_module=None, *, backend="eager", fullgraph=False, dynamic=False):  # noqa: A001
    """Like `torch.compile`: returns a callable with the same signature (usable as a decorator and
    on nn.Modules). The first call captures the function from its source with these inputs."""
    if fn_or_module is None:
        return lambda f: compile(f, backend=backend, fullgraph=fullgraph, dynamic=dynamic)
    if isinstance(fn_or_module, torch.nn.Module):
        return CompiledModule(fn_or_module, backend=backend, fullgraph=fullgraph, dynamic=dynamic)
    return _compile_callable(fn_or_module, backend, fullgraph, dynamic)


def _target(fn):
    """(plain function, bound self or None) for what we can capture from source."""
    if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType):
        return fn.__func__, fn.__self__
    if isinstance(fn, types.FunctionType):
        return fn, None
    call = getattr(type(fn), "__call__", None)
    if isinstance(call, types.FunctionType) and not isinstance(fn, type):
        return call, fn
    return None, None


def _compile_callable(fn, backend, fullgraph, dynamic):
    target, bound = _target(fn)
    try:
        if target is None:
            raise Unsupported(f"{type(fn).__name__} has no Python source to capture")
        cf = CompiledFunction(target, backend=backend, fullgraph=fullgraph, dynamic=dynamic, bound_self=bound)
    except Unsupported as e:
        cf = TorchCompilePath(fn, backend, fullgraph, dynamic, str(e))

    @functools.wraps(fn)
    def compiled(*args, **kwargs):
        return cf(*args, **kwargs)
    compiled._fuselens = cf
    return compiled


class TorchCompilePath:
    """Functions we cannot capture from source run through torch.compile with our back end."""

    def __init__(self, fn, backend, fullgraph, dynamic, reason):
        self.fn = fn
        self.reason = reason
        self.graphs = 0
        inner = _dynamo_backend(backend)

        def counting(gm, example_inputs):
            self.graphs += 1
            return inner(gm, example_inputs)
        self.compiled = torch.compile(fn, backend=counting, fullgraph=fullgraph, dynamic=dynamic or None)

    def __call__(self, *args, **kwargs):
        return self.compiled(*args, **kwargs)


def _dynamo_backend(backend):
    if backend == "fuselens":
        from ..backend import fuselens_backend
        return fuselens_backend
    if callable(backend) and not isinstance(backend, Backend):
        return backend  # a torch.compile back end: it gets Dynamo's graph, as under torch.compile
    return Backend.get(backend).dynamo_backend()


class CompiledModule(torch.nn.Module):
    """`fuselens.compile(module)`: shares the module's parameters; calls run its captured forward."""

    def __init__(self, mod, *, backend="eager", fullgraph=False, dynamic=False):
        super().__init__()
        self._orig_mod = mod
        self._fl_forward = _compile_callable(mod.forward, backend, fullgraph, dynamic)

    def forward(self, *args, **kwargs):
        return self._fl_forward(*args, **kwargs)

    @property
    def _fuselens(self):
        """The CompiledFunction (or torch.compile path) behind this module's forward."""
        return self.__dict__["_fl_forward"]._fuselens

    def __getattr__(self, name):
        if name in ("_orig_mod", "_fl_forward"):
            return self._modules["_orig_mod"] if name == "_orig_mod" else self.__dict__[name]
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)


def explain(fn, *, backend="eager", dynamic=False):
    """`explain(fn)(*args, **kwargs)` runs `fn` once through a fresh capture and reports regions,
    graph breaks (with the analyzer's rule ids), guards and the transformed program."""
    def run(*args, **kwargs) -> ExplainReport:
        compiled = compile(fn, backend=backend, dynamic=dynamic)
        result = compiled(*args, **kwargs)
        cf = compiled._fuselens
        if isinstance(cf, TorchCompilePath):
            rep = ExplainReport(path="torch.compile", path_reason=cf.reason, result=result)
            rep.log.append(f"torch.compile produced {cf.graphs} graph(s)")
            return rep
        return build(cf, result)
    return run
