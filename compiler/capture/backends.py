"""What runs a region's aten graph: torch itself ('eager'), FuseLens' code generator ('fuselens'),
or any `fn(gm, example_inputs) -> callable`.

Regions whose inputs require grad (with grad mode on) run the aten graph through torch, which
makes them differentiable op by op; explain() reports this per region.
"""
from __future__ import annotations

import copy
import functools

import torch

from .tensors import decomposition_table, without_random


class Backend:
    """`eager`: regions replay their torch-level calls (exactly eager semantics)."""

    name = "eager"

    @staticmethod
    def get(spec) -> Backend:
        if isinstance(spec, Backend):
            return spec
        if spec in (None, "eager"):
            return Backend()
        if spec == "aten":
            return AtenBackend()
        if spec == "fuselens":
            return FuseLensBackend()
        if callable(spec):
            return CallableBackend(spec)
        raise ValueError(f"unknown backend {spec!r} (use 'eager', 'aten', 'fuselens' or a callable)")

    def decompositions(self):
        return decomposition_table()

    def compile_region(self, region, example_inputs):
        region.tgm = region.torch_runner()
        needs_grad = region.ambient.grad and any(
            isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs)
        if needs_grad:
            region.run, region.autograd = self.compile_autograd(region, example_inputs)
        else:
            region.run = self.compile(region, example_inputs)

    def compile(self, region, example_inputs):
        return region.tgm

    def compile_autograd(self, region, example_inputs):
        """(callable, how gradients flow) for a region whose inputs require grad."""
        return region.tgm, "eager: the torch-level calls replay and autograd records them"


class _AtenGraphBackend(Backend):
    """Back ends that run the aten graph; it has autocast's casts in it already. The aten graph
    holds the sizes it was recorded with: other sizes (dynamic=True) replay the torch-level calls."""

    def compile(self, region, example_inputs):
        run = _without_autocast(region, self.compile_aten(region.gm, example_inputs))
        return _same_sizes_only(run, region.tgm, example_inputs) if region.dynamic else run

    def compile_aten(self, gm, example_inputs):
        raise NotImplementedError


class AtenBackend(_AtenGraphBackend):
    """`aten`: the recorded aten graph runs through torch (checks what compiled back ends get)."""

    name = "aten"

    def compile_aten(self, gm, example_inputs):
        return gm.forward


class FuseLensBackend(_AtenGraphBackend):
    name = "fuselens"

    def decompositions(self):
        return _fuselens_decompositions()

    def compile_aten(self, gm, example_inputs):
        from ..backend import compile_graph
        return compile_graph(gm, example_inputs)

    def compile_autograd(self, region, example_inputs):
        """Forward and backward compiled from the joint graph (AOTAutograd), as one
        autograd.Function; if that fails, the torch-level calls replay."""
        from torch._functorch.aot_autograd import aot_module_simplified, make_boxed_func

        from ..backend import compile_graph, decompositions

        if region.create_graph_line:
            run, _ = super().compile_autograd(region, example_inputs)
            return run, (f"eager: create_graph=True at line {region.create_graph_line} differentiates through "
                         "it twice, which AOT-compiled backward graphs cannot")

        def boxed(g, example):
            return make_boxed_func(compile_graph(g, example))
        try:  # traces the joint graph now, on fake copies of the inputs
            fn = aot_module_simplified(_rnn_layers_keep_workspace(region.gm), list(example_inputs),
                                       fw_compiler=boxed, bw_compiler=boxed, decompositions=decompositions())
            return _without_autocast(region, fn), "compiled forward and backward (joint graph through AOTAutograd)"
        except Exception as e:  # noqa: BLE001 - any failure: torch replays the calls, gradients exact
            run, _ = super().compile_autograd(region, example_inputs)
            return run, f"eager: AOTAutograd failed ({type(e).__name__}: {str(e)[:80]})"


def _rnn_layers_keep_workspace(gm):
    """An eval-mode LSTM traced as mkldnn_rnn_layer(train=False) returns no workspace, and the
    backward AOT autograd derives from it reads one (it crashed the process). With train=True the
    layer computes the same values and keeps its workspace (dropout between layers is applied
    outside the layer, by the traced graph): a copy of the graph with the flag set."""
    from ..backend.runtime import rnn_layer_train_flag, with_rnn_layer_training
    if not any(rnn_layer_train_flag(n) is False for n in gm.graph.nodes):
        return gm
    graph = copy.deepcopy(gm.graph)
    for node in graph.nodes:
        if rnn_layer_train_flag(node) is False:
            with_rnn_layer_training(node)
    return torch.fx.GraphModule(gm, graph)


@functools.lru_cache(maxsize=None)
def _fuselens_decompositions():
    from ..backend import decompositions
    table = without_random(decompositions())
    # detach stays in the region graph: decomposed to an alias, AOT autograd would differentiate
    # through it (a detached output would require grad)
    table.pop(torch.ops.aten.detach.default, None)
    return table


class CallableBackend(_AtenGraphBackend):
    def __init__(self, fn):
        self.fn = fn
        self.name = getattr(fn, "__name__", "custom")

    def compile_aten(self, gm, example_inputs):
        return self.fn(gm, example_inputs)


def _same_sizes_only(compiled, fallback, example_inputs):
    sig = [(tuple(x.shape), x.stride(), x.dtype) if isinstance(x, torch.Tensor) else None for x in example_inputs]

    def run(*args):
        for a, s in zip(args, sig):
            if s is not None and (tuple(a.shape), a.stride(), a.dtype) != s:
                return fallback(*args)
        return compiled(*args)
    return run


def _without_autocast(region, run):
    if not region.ambient.autocast:
        return run
    devices = [d for d, _, _ in region.ambient.autocast]

    def call(*args):
        ctxs = [torch.autocast(d, enabled=False) for d in devices]
        for c in ctxs:
            c.__enter__()
        try:
            return run(*args)
        finally:
            for c in reversed(ctxs):
                c.__exit__(None, None, None)
    return call
