"""Entry points: `compile_graph` (an aten FX graph -> callable) and `fuselens_backend` for torch.compile.

The pipeline: lower -> fuse (schedule) -> loop passes -> memory plan -> codegen -> compile/cache ->
runner. Anything the pipeline cannot handle falls back to running the graph with torch, so a
compile never fails a user's program; `FUSELENS_STRICT=1` turns such fallbacks into errors (tests).
"""
from __future__ import annotations

import ctypes
import functools
import os
import time
from dataclasses import dataclass, field

import torch
import torch.fx

from . import debug
from .cache import compile_many
from .codegen_cpp import kernel_params, render_unit, segment_params
from .details import KernelDetail, details
from .ir import Node
from .loops import optimize
from .lowering import lower
from .memplan import plan_memory
from .patterns import rewrite
from .runtime import Runner, Unit
from .scheduler import Kernel, Store, schedule


@dataclass
class CompileInfo:
    """What happened to a graph; the editor and the tests read it."""

    backend: str = "cpp"
    kernels: int = 0
    externs: int = 0
    source: str = ""
    fallback: str = ""                       # why the graph runs eagerly, if it does
    compile_seconds: float = 0.0
    kernel_names: list = field(default_factory=list)
    kernel_details: list = field(default_factory=list)  # KernelDetail per kernel, in kernel_names order
    extern_details: list = field(default_factory=list)  # KernelDetail per extern torch call, in run order


def _strict() -> bool:
    return os.environ.get("FUSELENS_STRICT") == "1"


def _check_graph(gm: torch.fx.GraphModule, example_inputs, devices: set):
    for a in example_inputs:
        if not isinstance(a, torch.Tensor):
            return f"non-tensor input {type(a).__name__}"
        if a.device.type not in devices:
            return f"input on {a.device}, backend needs {'/'.join(sorted(devices))}"
    for n in gm.graph.nodes:
        schema = getattr(n.target, "_schema", None)
        if n.op == "call_function" and schema is not None and schema.is_mutable:
            return f"mutating op {n.target}"
        if n.op in ("call_module", "call_method", "get_attr"):
            return f"non-aten graph ({n.op} {n.target})"
    return None


def _ensure_meta(gm, example_inputs):
    if all("val" in n.meta for n in gm.graph.nodes if n.op == "call_function"):
        return
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    FakeTensorProp(gm, mode).propagate(*example_inputs)


def _apply_inplace(kernels, plan):
    """A kernel writing in place stores into the extern buffer's name (one pointer, no aliasing)."""
    for k in kernels:
        for phase in k.phases:
            for i, s in enumerate(phase):
                if isinstance(s, Store) and s.buf in plan.inplace:
                    phase[i] = Store(plan.inplace[s.buf], s.index, s.value)


def _cpp_unit(lib, symbol: str, params) -> Unit:
    cfn = getattr(lib, symbol)
    cfn.argtypes, cfn.restype = [ctypes.c_void_p] * len(params), None
    return Unit(symbol, cfn, params, pointers=True)


def build(gm: torch.fx.GraphModule, example_inputs, device_backend: str = "cpp"):
    """Compile for exactly these input shapes/strides; returns (runner, info)."""
    info = CompileInfo(backend=device_backend)
    t0 = time.perf_counter()
    rewritten = rewrite(gm) if device_backend == "cpp" else gm
    if rewritten is not gm:
        debug.log(2, "rewritten: " + ", ".join(str(n.target) for n in rewritten.graph.nodes
                                                if n.op == "call_function" and "val" not in n.meta) or "patterns")
        _ensure_meta(rewritten, example_inputs)
    program = lower(rewritten, example_inputs)
    debug.log(3, "lowered program:\n" + debug.describe_program(program))
    steps = schedule(program, log=lambda m: debug.log(2, m))
    kernels = [optimize(s) for s in steps if isinstance(s, Kernel)]
    plan = plan_memory(steps, program)
    _apply_inplace(kernels, plan)
    for k in kernels:
        debug.log(2, "kernel:\n" + debug.describe_kernel(k))
    info.kernels, info.kernel_names = len(kernels), [k.name for k in kernels]
    info.externs = sum(isinstance(s, Node) for s in steps)
    segments, current = [], []
    for s in steps:
        if isinstance(s, Kernel):
            current.append(s)
        elif current:
            segments.append(current)
            current = []
    if current:
        segments.append(current)
    params = {k.name: kernel_params(k) for k in kernels}
    info.kernel_details, info.extern_details = details(steps, params, program, device_backend)
    seg_params = [segment_params(seg, params) for seg in segments]
    if device_backend == "triton":
        from .codegen_triton import render_module, load_module
        info.source = render_module(segments, params, program.buffers, program.origins)
        debug.log(4, "generated source:\n" + info.source)
        module = load_module(info.source)
        units = [Unit("+".join(k.name for k in seg), getattr(module, f"seg{i}"), seg_params[i], pointers=False)
                 for i, seg in enumerate(segments)]
        runner = Runner(program, steps, plan, segments, units, gm)
    else:
        info.source = render_unit(segments, params, program.buffers, program.origins)
        debug.log(4, "generated source:\n" + info.source)
        lib = compile_many([info.source])[0] if segments else None
        units = [_cpp_unit(lib, f"seg{i}", p) for i, p in enumerate(seg_params)]
        runner = Runner(program, steps, plan, segments, units, gm,
                        take_error=lib.fl_take_error if lib is not None else None,
                        kernel_units={k.name: _cpp_unit(lib, k.name, params[k.name]) for k in kernels})
    info.compile_seconds = time.perf_counter() - t0
    debug.log(1, f"compiled graph: {info.kernels} kernels, {info.externs} externs, "
                 f"{info.compile_seconds * 1e3:.1f} ms ({device_backend})")
    return runner, info


def _constants_lifted(gm: torch.fx.GraphModule):
    """(a copy of `gm` whose tensor constants are placeholders after its inputs, those tensors), or
    None when it reads none."""
    import copy
    reads = [n for n in gm.graph.nodes if n.op == "get_attr"]
    values = [getattr(gm, n.target, None) for n in reads]
    if not reads or not all(isinstance(v, torch.Tensor) for v in values):
        return None
    graph = copy.deepcopy(gm.graph)
    last = [n for n in graph.nodes if n.op == "placeholder"][-1:]
    for node in [n for n in graph.nodes if n.op == "get_attr"]:
        at = graph.inserting_after(last[0]) if last else graph.inserting_before(next(iter(graph.nodes)))
        with at:
            placeholder = graph.placeholder(f"const_{node.name}")
        placeholder.meta = dict(node.meta)
        node.replace_all_uses_with(placeholder)
        graph.erase_node(node)
        last = [placeholder]
    return torch.fx.GraphModule(gm, graph), values


def compile_graph(gm: torch.fx.GraphModule, example_inputs, *, device_backend: str | None = None):
    """A callable equivalent to `gm` (an FX graph of aten ops), specialized to the example inputs'
    shapes and strides; other shapes compile again on first use."""
    lifted = _constants_lifted(gm)
    if lifted is not None:  # tensor constants (get_attr): inputs after the caller's
        gm, constants = lifted
        inner = compile_graph(gm, [*example_inputs, *constants], device_backend=device_backend)

        def with_constants(*args):
            return inner(*args, *constants)
        with_constants.fuselens_info = inner.fuselens_info
        with_constants.profile_kernels = lambda *args, repeats=10: inner.profile_kernels(*args, *constants,
                                                                                      repeats=repeats)
        return with_constants
    if device_backend is None:
        cuda = any(isinstance(a, torch.Tensor) and a.is_cuda for a in example_inputs)
        device_backend = "triton" if cuda else "cpp"
    devices = {"cpu"} if device_backend == "cpp" else (
        {"cuda", "cpu"} if os.environ.get("TRITON_INTERPRET") == "1" else {"cuda"})
    reason = _check_graph(gm, example_inputs, devices)
    variants: dict = {}
    info = CompileInfo(backend=device_backend)

    def fallback(*args):
        return gm(*args)

    def get(args):
        key = tuple((tuple(a.shape), a.stride(), a.dtype) if isinstance(a, torch.Tensor) else type(a) for a in args)
        runner = variants.get(key)
        if runner is None:
            try:
                _ensure_meta(gm, args)
                runner, new_info = build(gm, args, device_backend)
                info.__dict__.update(new_info.__dict__)
            except Exception as e:  # noqa: BLE001 - any failure means: run with torch
                if _strict():
                    raise
                info.fallback = f"{type(e).__name__}: {e}"
                debug.log(1, f"falling back to torch: {info.fallback}")
                runner = fallback
            variants[key] = runner
        return runner

    if reason is not None:
        if _strict():
            raise RuntimeError(f"FuseLens cannot compile this graph: {reason}")
        info.fallback = reason
        debug.log(1, f"falling back to torch: {reason}")
        fallback.fuselens_info = info
        return fallback

    first = get(list(example_inputs))
    if first is fallback:
        def compiled(*args):
            return get(args)(*args)
    else:
        run, matches = first.run, first.matches

        def compiled(*args):
            if matches(args):
                return run(*args)
            return get(args)(*args)

    def profile_kernels(*args, repeats: int = 10) -> list:
        """[{"name", "ms"}] per kernel and extern call (names as in `fuselens_info`'s details) for
        these inputs; empty when they run with torch (see `fuselens_info.fallback`)."""
        runner = get(args)
        return [] if runner is fallback else runner.profile_kernels(args, repeats)

    compiled.fuselens_info = info
    compiled.profile_kernels = profile_kernels
    return compiled


@functools.cache
def decompositions():
    """core-aten decompositions plus the composite ops FuseLens prefers to see as primitives.
    Built once (60 ms) and shared: callers must not modify it."""
    from torch._decomp import core_aten_decompositions, get_decompositions
    aten = torch.ops.aten
    table = dict(core_aten_decompositions())
    table.update(get_decompositions([
        aten._softmax, aten._log_softmax, aten.native_layer_norm, aten.native_group_norm, aten.hardswish,
        aten.hardsigmoid, aten.linalg_vector_norm, aten.softplus, aten.elu, aten.mish, aten.logsumexp,
        aten.nll_loss_forward,
    ]))
    return table


def _is_symbolic(a) -> bool:
    if isinstance(a, torch.SymInt):
        return True
    return isinstance(a, torch.Tensor) and any(isinstance(s, torch.SymInt) for s in a.shape)


def _specializing(gm: torch.fx.GraphModule, backend):
    """Dynamo marked some sizes dynamic (e.g. after a shape change): trace the graph again for each
    concrete shape seen at run time and compile that static graph (inference only)."""
    from torch.fx.experimental.proxy_tensor import make_fx
    variants: dict = {}

    def run(*args):
        if torch.is_grad_enabled() and any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
            return gm(*args)
        key = tuple((tuple(a.shape), a.stride(), a.dtype) if isinstance(a, torch.Tensor) else a for a in args)
        fn = variants.get(key)
        if fn is None:
            tensors = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]

            def tensor_only(*ts):
                full = list(args)
                for i, t in zip(tensors, ts):
                    full[i] = t
                return gm(*full)
            ts = [args[i] for i in tensors]
            with torch.no_grad():
                traced = make_fx(tensor_only, decomposition_table=decompositions())(*ts)
            inner = compile_graph(traced, ts, device_backend=backend)
            fn = variants[key] = lambda *a: inner(*[a[i] for i in tensors])
        out = fn(*args)
        return out
    return run


def _aten_graph(gm: torch.fx.GraphModule, example_inputs) -> torch.fx.GraphModule:
    """gm traced to decomposed aten ops, keeping each node's source stack trace (provenance)."""
    from torch.fx import traceback as fx_traceback
    from torch.fx.experimental.proxy_tensor import make_fx
    with fx_traceback.preserve_node_meta():
        return make_fx(torch.fx.Interpreter(gm).run, decomposition_table=decompositions())(*example_inputs)


def fuselens_backend(gm: torch.fx.GraphModule, example_inputs, **kwargs):
    """`torch.compile(fn, backend=fuselens_backend)`: AOT-autograd to aten, then `compile_graph`."""
    from torch._dynamo.backends.common import aot_autograd
    backend = kwargs.pop("device_backend", None)
    if any(_is_symbolic(a) for a in example_inputs):
        return _specializing(gm, backend)
    if not torch.is_grad_enabled():
        # Inference (Dynamo guards on grad mode): trace to aten directly and skip AOT autograd's
        # runtime wrappers, which cost more than a small kernel. Mutations make compile_graph fall
        # back to torch; views of inputs stay views.
        return compile_graph(_aten_graph(gm, example_inputs), list(example_inputs), device_backend=backend)

    def compiler(g, ex):
        return compile_graph(g, ex, device_backend=backend)
    return aot_autograd(fw_compiler=compiler, bw_compiler=compiler, decompositions=decompositions())(
        gm, example_inputs)


__all__ = ["CompileInfo", "KernelDetail", "build", "compile_graph", "decompositions", "fuselens_backend"]
