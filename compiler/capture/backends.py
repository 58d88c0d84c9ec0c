"""What runs a region's aten graph: torch itself ('eager'), FuseLens' code generator ('fuselens'),
or any `fn(gm, example_inputs) -> callable`.

A region whose inputs require grad (with grad mode on) is differentiable: under 'eager' its
torch-level calls replay and autograd records them; the back ends that take aten graphs get the
forward and the backward graph of its joint graph (AOTAutograd), each compiled as a region is.
explain() reports per region which way gradients flow.
"""
from __future__ import annotations

import contextlib
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

    def dynamo_backend(self):
        """The torch.compile back end for functions capture cannot take (they run through Dynamo)."""
        return lambda gm, example_inputs: gm.forward

    def compile_autograd(self, region, example_inputs):
        """(callable, how gradients flow) for a region whose inputs require grad."""
        return region.tgm, "eager: the torch-level calls replay and autograd records them"


class _AtenGraphBackend(Backend):
    """Back ends that run the aten graph; it has autocast's casts in it already. The aten graph
    holds the sizes it was recorded with: other sizes (dynamic=True) replay the torch-level calls."""

    def compile(self, region, example_inputs):
        run = _without_autocast(region, self.compile_aten(region.gm, example_inputs))
        return _same_sizes_only(run, region.tgm, example_inputs) if region.dynamic else run

    def decompositions(self):
        return _region_decompositions("core")

    def compile_aten(self, gm, example_inputs):
        raise NotImplementedError

    def aot_decompositions(self):
        """The table AOTAutograd decomposes a joint graph with."""
        return self.decompositions()

    def dynamo_backend(self):
        from torch._dynamo.backends.common import aot_autograd
        return aot_autograd(fw_compiler=self.compile_aten, bw_compiler=self.compile_aten,
                            decompositions=self.aot_decompositions())

    def compile_autograd(self, region, example_inputs):
        """Forward and backward compiled from the joint graph (AOTAutograd), as one
        autograd.Function; if that fails, the torch-level calls replay."""
        from torch._functorch.aot_autograd import aot_module_simplified, make_boxed_func

        twice = region.create_graph_line or region.mutates_inputs and region.file_create_graph_line
        if twice:  # (the replaying backward below works on copies of the inputs: not for one that mutates them)
            run, _ = super().compile_autograd(region, example_inputs)
            return run, (f"eager: create_graph=True at line {twice} may differentiate through it twice, "
                         "which AOT-compiled backward graphs cannot")

        def boxed(g, example):
            return make_boxed_func(self.compile_aten(g, example))
        try:  # traces the joint graph now, on fake copies of the inputs
            fn = aot_module_simplified(_rnn_layers_keep_workspace(region.gm), list(example_inputs),
                                       fw_compiler=boxed, bw_compiler=boxed, decompositions=self.aot_decompositions())
            how = "compiled forward and backward (joint graph through AOTAutograd)"
            if region.file_create_graph_line:
                return _twice_differentiable(_without_autocast(region, fn), region.tgm), (
                    f"{how}; create_graph=True at line {region.file_create_graph_line} of its file: a gradient "
                    "asked to be differentiable replays the torch-level calls")
            return _without_autocast(region, fn), how
        except Exception as e:  # noqa: BLE001 - any failure: torch replays the calls, gradients exact
            run, _ = super().compile_autograd(region, example_inputs)
            return run, f"eager: AOTAutograd failed ({type(e).__name__}: {str(e)[:80]})"


class AtenBackend(_AtenGraphBackend):
    """`aten`: the recorded aten graph runs through torch (checks what compiled back ends get)."""

    name = "aten"

    def compile_aten(self, gm, example_inputs):
        return gm.forward


class FuseLensBackend(_AtenGraphBackend):
    name = "fuselens"

    def decompositions(self):
        return _region_decompositions("fuselens")

    def compile_aten(self, gm, example_inputs):
        from ..backend import compile_graph
        return compile_graph(gm, example_inputs)

    def aot_decompositions(self):
        from ..backend import decompositions
        return decompositions()


def _twice_differentiable(compiled, replay):
    """`compiled` (AOT-compiled forward and backward) inside an autograd.Function whose backward
    runs the compiled backward, unless the gradient must itself be differentiable
    (`torch.autograd.grad(..., create_graph=True)`, which AOT's backward refuses at the second
    differentiation): then `replay`, the region's torch-level calls, runs again on the saved
    inputs under grad and is differentiated with create_graph, so the graph reaches the inputs."""
    class Region(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *args):
            inner = [a.detach().requires_grad_() if _wants_grad(a) else a for a in args]
            ctx.rng = rng_state()  # before the forward draws
            with torch.enable_grad():
                outs = list(compiled(*inner))
            ctx.inner, ctx.outs = inner, outs
            ctx.tensor_at = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
            ctx.save_for_backward(*(args[i] for i in ctx.tensor_at))
            ctx.mark_non_differentiable(*(o for o in outs if isinstance(o, torch.Tensor) and not o.requires_grad))
            return tuple(o.detach() if _wants_grad(o) else o for o in outs)

        @staticmethod
        def backward(ctx, *grads):
            wanted = [i for i, a in enumerate(ctx.inner) if _wants_grad(a)]
            if torch.is_grad_enabled():  # create_graph=True
                args = list(ctx.inner)
                for i, saved in zip(ctx.tensor_at, ctx.saved_tensors):
                    # a view: the gradient stops there (the inputs' own history is the outer
                    # graph's to follow), yet it is a function of the input, differentiable again
                    args[i] = saved.view_as(saved) if _wants_grad(saved) else saved
                with torch.enable_grad(), _rng_restored(ctx.rng):  # the same random draws as the forward's
                    outs, sources = list(replay(*args)), [args[i] for i in wanted]
            else:
                outs, sources = ctx.outs, [ctx.inner[i] for i in wanted]
            pairs = [(o, g) for o, g in zip(outs, grads) if _wants_grad(o) and g is not None]
            found = torch.autograd.grad([o for o, _ in pairs], sources, [g for _, g in pairs], retain_graph=True,
                                        create_graph=torch.is_grad_enabled(), allow_unused=True) \
                if pairs and sources else ()
            result = [None] * len(ctx.inner)
            for i, g in zip(wanted, found):
                result[i] = g
            return tuple(result)

    return lambda *args: Region.apply(*args)


def rng_state():
    """The random state of the CPU and of every CUDA device in use."""
    return torch.get_rng_state(), torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else []


def set_rng_state(state) -> None:
    cpu, cuda = state
    torch.set_rng_state(cpu)
    if cuda:
        torch.cuda.set_rng_state_all(cuda)


@contextlib.contextmanager
def _rng_restored(state):
    with torch.random.fork_rng(devices=range(len(state[1]))):  # and back to the current state afterwards
        set_rng_state(state)
        yield


def _wants_grad(value) -> bool:
    return isinstance(value, torch.Tensor) and value.requires_grad


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
def _region_decompositions(table: str):
    """What regions of the back ends that take aten graphs are recorded with: core aten or FuseLens'
    lowering table, without random ops (they keep eager's use of the RNG). Some ops stay whole, or
    AOTAutograd, which differentiates the region graph, refuses what eager allows:
    - detach (decomposed to an alias, gradients would flow through it: a detached output would
      require grad);
    - in-place ops (`hardswish_` as `copy_(x, hardswish(x))` writes over the x its own backward saved);
    - unsafe_split (lstm_cell updates its gates in place: as outputs of split_with_sizes, autograd
      refuses; as slices, each write invalidates what the other gates saved)."""
    if table == "fuselens":
        from ..backend import decompositions
        chosen = without_random(decompositions())
    else:
        chosen = dict(decomposition_table())
    whole = {torch.ops.aten.detach.default, torch.ops.aten.unsafe_split.Tensor,
             torch.ops.aten.unsafe_split_with_sizes.default}
    for op in list(chosen):
        if op in whole or (isinstance(op, torch._ops.OpOverload) and op.overloadpacket.__name__.endswith("_")
                           and op._schema.is_mutable):
            del chosen[op]
    return chosen


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
