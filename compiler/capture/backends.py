"""What runs a region's aten graph: torch itself ('eager'), FuseLens' code generator ('fuselens'),
or any `fn(gm, example_inputs) -> callable`.

Regions whose inputs require grad (with grad mode on) run the aten graph through torch, which
makes them differentiable op by op; explain() reports this per region.
"""
from __future__ import annotations

import functools

import torch
import torch.fx as fx

from .tensors import decomposition_table, without_random


class Backend:
    name = "eager"

    @staticmethod
    def get(spec) -> Backend:
        if isinstance(spec, Backend):
            return spec
        if spec in (None, "eager"):
            return Backend()
        if spec == "fuselens":
            return FuseLensBackend()
        if callable(spec):
            return CallableBackend(spec)
        raise ValueError(f"unknown backend {spec!r} (use 'eager', 'fuselens' or a callable)")

    def decompositions(self):
        return decomposition_table()

    def compile_region(self, region, example_inputs):
        root = torch.nn.Module()
        for name, value in region.constants.items():
            setattr(root, name, value)
        gm = fx.GraphModule(root, region.graph)
        region.gm = gm
        needs_grad = region.ambient.grad and any(
            isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs)
        if needs_grad:
            run, region.autograd = gm.forward, "eager (inputs require grad: the aten graph runs through torch)"
        else:
            run, region.autograd = self.compile(gm, example_inputs), "none needed"
        if region.ambient.autocast:  # casts are already explicit in the graph
            devices = [d for d, _, _ in region.ambient.autocast]
            inner = run

            def run(*args):
                with _autocast_off(devices):
                    return inner(*args)
        region.run = run

    def compile(self, gm, example_inputs):
        return gm.forward


class FuseLensBackend(Backend):
    name = "fuselens"

    def decompositions(self):
        return _fuselens_decompositions()

    def compile(self, gm, example_inputs):
        from ..backend import compile_graph
        return compile_graph(gm, example_inputs)


@functools.lru_cache(maxsize=None)
def _fuselens_decompositions():
    from ..backend import decompositions
    return without_random(decompositions())


class CallableBackend(Backend):
    def __init__(self, fn):
        self.fn = fn
        self.name = getattr(fn, "__name__", "custom")

    def compile(self, gm, example_inputs):
        return self.fn(gm, example_inputs)


class _autocast_off:
    def __init__(self, devices):
        self.ctxs = [torch.autocast(d, enabled=False) for d in devices]

    def __enter__(self):
        for c in self.ctxs:
            c.__enter__()

    def __exit__(self, *exc):
        for c in reversed(self.ctxs):
            c.__exit__(*exc)
