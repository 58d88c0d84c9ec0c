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
            run, region.autograd = self.compile_autograd(gm, example_inputs)
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

    def compile_autograd(self, gm, example_inputs):
        """(callable, how gradients flow) for a region whose inputs require grad."""
        return gm.forward, "eager: the aten graph runs through torch, which records its backward"


class FuseLensBackend(Backend):
    name = "fuselens"

    def decompositions(self):
        return _fuselens_decompositions()

    def compile(self, gm, example_inputs):
        from ..backend import compile_graph
        return compile_graph(gm, example_inputs)

    def compile_autograd(self, gm, example_inputs):
        """Forward and backward compiled from the joint graph (AOTAutograd), as one
        autograd.Function; if that fails, the aten graph runs through torch."""
        from torch._functorch.aot_autograd import aot_module_simplified, make_boxed_func

        from ..backend import compile_graph, decompositions

        def boxed(g, example):
            return make_boxed_func(compile_graph(g, example))
        try:  # traces the joint graph now, on fake copies of the inputs
            fn = aot_module_simplified(gm, list(example_inputs), fw_compiler=boxed, bw_compiler=boxed,
                                       decompositions=decompositions())
            return fn, "compiled forward and backward (joint graph through AOTAutograd)"
        except Exception as e:  # noqa: BLE001 - any failure: torch runs the graph, gradients still exact
            return gm.forward, f"eager: AOTAutograd failed ({type(e).__name__}: {str(e)[:80]})"


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
