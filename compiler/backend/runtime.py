"""Executes a compiled graph: kernel segments (C++ through ctypes, or Triton launchers), extern
ops through torch.

The steps of a graph are turned into the source of one small Python function per runner (like
Inductor's wrapper code): each call only binds tensors to locals, makes one foreign call per kernel
segment and one torch call per extern, with every shape, dtype and slot resolved at build time.
The same generator, asked for a profiling variant, times each kernel (or segment) and extern on
its own; normal calls never pay for it.
"""
from __future__ import annotations

import math
import sys
import threading
import time

import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import _disable_current_modes

from . import debug
from .ir import BufRef, Node, prod, walk

POOL_MIN_BYTES = 1 << 18  # outputs at least this big are recycled once the caller drops them


class OutputPool:
    """Graph outputs the caller has dropped are reused: a fresh large tensor costs page faults."""

    def __init__(self, shape, strides, dtype):
        self.shape, self.strides, self.dtype = shape, strides, dtype
        self.free: list = []

    def take(self):
        for t in self.free:
            if (sys.getrefcount(t) == 3 and t._use_count() == 1
                    and torch._C._storage_Use_Count(t.untyped_storage()._cdata) == 2):
                return t
        t = torch.empty_strided(self.shape, self.strides, dtype=self.dtype)
        self.free = ([t] + self.free)[:2]
        return t


class Unit:
    """One foreign entry point: `fn` runs kernels on the buffers `params` (pointer arguments when
    `pointers`, else one list of tensors); `name` is what profiles report."""

    def __init__(self, name, fn, params, pointers):
        self.name, self.fn, self.params, self.pointers = name, fn, params, pointers


class _Emitter:
    """Python source of a runner function; values it cannot spell become numbered globals."""

    def __init__(self):
        self.lines: list[str] = []
        self.globals: dict = {}

    def const(self, value, hint="K") -> str:
        if value is None or type(value) in (bool, int, str) or (type(value) is float and math.isfinite(value)):
            return repr(value)
        if type(value) is tuple and all(type(v) is int for v in value):
            return repr(value)
        name = f"{hint}{len(self.globals)}"
        self.globals[name] = value
        return name

    def value(self, obj, slot, bufs) -> str:
        """A Python expression for an argument structure holding BufRefs."""
        if isinstance(obj, BufRef):
            s, buf = f"s{slot[obj.name]}", bufs[obj.name]
            if obj.shape is None or (tuple(obj.shape) == buf.shape and tuple(obj.strides) == buf.strides
                                     and not obj.offset):
                return s
            return f"{s}.as_strided({tuple(obj.shape)!r}, {tuple(obj.strides)!r}, {s}.storage_offset() + {obj.offset})"
        if isinstance(obj, (list, tuple)):
            items = [self.value(x, slot, bufs) for x in obj]
            if isinstance(obj, list):
                return f"[{', '.join(items)}]"
            return f"({', '.join(items)}{',' if len(items) == 1 else ''})"
        if isinstance(obj, dict):
            return "{" + ", ".join(f"{k!r}: {self.value(v, slot, bufs)}" for k, v in obj.items()) + "}"
        return self.const(obj)


class Runner:
    def __init__(self, program, steps, plan, segments, seg_units, fallback, take_error=None, kernel_units=None):
        """`seg_units[i]` runs kernel segment i; `kernel_units` (optional, name -> Unit) run single
        kernels, for profiles; `take_error()` says whether a kernel saw an out-of-range index."""
        self.fallback = fallback
        slot = {}
        for name in program.buffers:
            slot.setdefault(name, len(slot))
        for b, target in plan.inplace.items():
            slot[b] = slot[target]
        bufs = program.buffers
        self.signature = [(bufs[n].shape, bufs[n].strides, bufs[n].dtype) for n in program.inputs]
        self.arena = _arena(plan, bufs)
        self.arena_views = [(slot[b], bufs[b]) for b in plan.arena_offset]
        self.lock = threading.Lock()
        self.pools: dict = {}
        self._inputs = [f"s{slot[n]}" for n in program.inputs]
        self._plan = []  # ("extern", node) | ("segment", index, kernels)
        kernel_seg = {k.name: si for si, seg in enumerate(segments) for k in seg}
        for step in steps:
            if isinstance(step, Node):
                self._plan.append(("extern", step))
            elif not self._plan or self._plan[-1][:2] != ("segment", kernel_seg[step.name]):
                self._plan.append(("segment", kernel_seg[step.name], segments[kernel_seg[step.name]]))
        self._slot, self._bufs, self._program = slot, bufs, program
        self._seg_units, self._kernel_units = seg_units, kernel_units or {}
        self._take_error = take_error
        self._checks = {si for si, seg in enumerate(segments)
                        if take_error is not None and any(n.op == "checkidx" for k in seg for e in k.exprs()
                                                           for n in walk([e]))}
        self._allocated = {b for b in bufs if b not in plan.arena_offset and b not in plan.inplace
                           and bufs[b].kind == "temp"}
        shared = self._function("shared")
        private = self._function("private")
        lock = self.lock

        def run(*args):
            if lock.acquire(False):
                try:
                    return shared(*args)
                finally:
                    lock.release()
            return private(*args)  # re-entrant or concurrent call: private intermediates
        self.run = run
        self.matches = self._matcher()
        self._profiled = None

    def __call__(self, *args):
        return self.run(*args)

    # ---- code generation -------------------------------------------------------------------------
    def _matcher(self):
        em = _Emitter()
        tests = [f"len(args) == {len(self.signature)}"]
        for i, (shape, strides, dtype) in enumerate(self.signature):
            d = em.const(dtype, "D")
            tests.append(f"isinstance(args[{i}], Tensor) and args[{i}].dtype is {d} and args[{i}].shape == "
                         f"{tuple(shape)!r} and args[{i}].stride() == {tuple(strides)!r}")
        em.globals["Tensor"] = torch.Tensor
        src = "def matches(args):\n    return " + " and ".join(tests) + "\n"
        return _compile(src, "matches", em.globals)

    def _function(self, mode: str):
        """mode: "shared" (arena intermediates), "private" (fresh ones) or "profile" (shared, timed)."""
        em = _Emitter()
        slot, bufs = self._slot, self._bufs
        g = em.globals
        g.update(empty_strided=torch.empty_strided, leaves=pytree.tree_leaves, Tensor=torch.Tensor, relayout=_relayout,
                 fallback=self.fallback, take_error=self._take_error, unflatten=pytree.tree_unflatten,
                 clock=time.perf_counter)
        body = em.lines
        for (s, buf), t in zip(self.arena_views, self.arena):
            if mode == "private":
                body.append(f"s{s} = empty_strided({buf.shape!r}, {buf.strides!r}, dtype={em.const(buf.dtype, 'D')})")
            else:
                body.append(f"s{s} = {em.const(t, 'A')}")
        allocated: set = set()
        for entry in self._plan:
            if entry[0] == "extern":
                node = entry[1]
                call = (f"{em.const(node.target, 'E')}(*{em.value(tuple(node.args), slot, bufs)}, "
                        f"**{em.value(dict(node.kwargs), slot, bufs)})")
                lines = [f"r = {call}"]
                if _saves_workspace_for_backward(node):
                    g["enable_grad"] = torch.enable_grad
                    lines = ["with enable_grad():", f"    r = {call}"]
                if len(node.outs) == 1 and node.outs[0]:
                    lines.append(f"s{slot[node.outs[0]]} = r if isinstance(r, Tensor) else leaves(r)[0]")
                elif any(node.outs):
                    lines.append("r = leaves(r)")
                    lines += [f"s{slot[o]} = r[{i}]" for i, o in enumerate(node.outs) if o]
                for o in filter(None, node.outs):  # kernels were compiled for the traced layout
                    s_, buf = f"s{slot[o]}", bufs[o]
                    if not prod(buf.shape):
                        # an optional output traced as an empty tensor may be None at run time (the
                        # workspace of mkldnn_rnn_layer in eval mode); AOT autograd saves only tensors
                        lines.append(f"if {s_} is None: {s_} = empty_strided({buf.shape!r}, {buf.strides!r}, "
                                     f"dtype={em.const(buf.dtype, 'D')})")
                    lines.append(f"if {s_}.stride() != {buf.strides!r}: {s_} = relayout({s_}, {buf.shape!r}, "
                                 f"{buf.strides!r})")
                units = [(node.name, lines)]
            else:
                _, si, kernels = entry
                fresh = [b for b in self._seg_units[si].params if b in self._allocated and b not in allocated]
                allocated.update(fresh)  # a later segment may read it: allocate once, where it is written
                for b in fresh:
                    buf = bufs[b]
                    if buf.shape and buf.dtype.itemsize * max(1, prod(buf.shape)) >= POOL_MIN_BYTES:
                        pool = self.pools.setdefault(b, OutputPool(buf.shape, buf.strides, buf.dtype))
                        body.append(f"s{slot[b]} = {em.const(pool, 'P')}.take()")
                    else:
                        body.append(f"s{slot[b]} = empty_strided({buf.shape!r}, {buf.strides!r}, "
                                    f"dtype={em.const(buf.dtype, 'D')})")
                per_kernel = mode == "profile" and all(k.name in self._kernel_units for k in kernels)
                chosen = [self._kernel_units[k.name] for k in kernels] if per_kernel else [self._seg_units[si]]
                units = [(u.name, [_unit_call(em, u, slot)]) for u in chosen]
                if si in self._checks:
                    units[-1][1].append("if take_error(): return fallback(*args)")
            for name, lines in units:
                if mode == "profile":
                    body.append("t0 = clock()")
                    body.extend(lines)
                    body.append(f"sync(); T.append(({name!r}, clock() - t0))")
                else:
                    body.extend(lines)
        outs = [em.value(ref, slot, bufs) if isinstance(ref, BufRef) else em.const(ref) for ref in self._program.outputs]
        leaves_ = pytree.tree_unflatten(list(range(len(outs))), self._program.output_tree)
        if isinstance(leaves_, tuple) and list(leaves_) == list(range(len(outs))):
            body.append(f"return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")
        else:
            body.append(f"return unflatten([{', '.join(outs)}], {em.const(self._program.output_tree, 'S')})")
        params = ", ".join(self._inputs + (["sync", "T"] if mode == "profile" else []))
        src = f"def run({params}):\n"
        if self._checks:
            src += f"    args = ({', '.join(self._inputs)}{',' if len(self._inputs) == 1 else ''})\n"
        src += "".join(f"    {line}\n" for line in body)
        if mode == "shared":
            debug.log(4, "runner:\n" + src)
        return _compile(src, "run", g)

    # ---- profiling -------------------------------------------------------------------------------
    def profile_kernels(self, args, repeats: int = 10) -> list[dict]:
        """Median time of each kernel (C++: each kernel; Triton: each segment) and each extern call
        over `repeats` runs of the graph: [{"name", "ms"}] in execution order."""
        if self._profiled is None:
            self._profiled = self._function("profile")
        cuda = any(isinstance(a, torch.Tensor) and a.is_cuda for a in args)
        sync = torch.cuda.synchronize if cuda else (lambda: None)
        runs = []
        with self.lock:
            for _ in range(max(1, repeats)):
                times: list = []
                sync()
                self._profiled(*args, sync, times)
                runs.append(times)
        out = []
        for i, (name, _) in enumerate(runs[0]):
            samples = sorted(r[i][1] for r in runs if len(r) > i)
            out.append({"name": name, "ms": samples[len(samples) // 2] * 1e3})
        return out


def _unit_call(em: _Emitter, unit: Unit, slot) -> str:
    fn = em.const(unit.fn, "F")
    if unit.pointers:
        return f"{fn}({', '.join(f's{slot[b]}.data_ptr()' for b in unit.params)})"
    return f"{fn}([{', '.join(f's{slot[b]}' for b in unit.params)}])"


_RNN_LAYER_TRAIN = 15  # position of `train` in aten.mkldnn_rnn_layer's schema


def rnn_layer_train_flag(node) -> bool | None:
    """The `train` argument of an mkldnn_rnn_layer call (None for any other node): with it set, the
    layer returns the workspace its backward reads."""
    if node.target is torch.ops.aten.mkldnn_rnn_layer.default and len(node.args) > _RNN_LAYER_TRAIN:
        return node.args[_RNN_LAYER_TRAIN]
    return None


def with_rnn_layer_training(node) -> None:
    node.args = (*node.args[:_RNN_LAYER_TRAIN], True, *node.args[_RNN_LAYER_TRAIN + 1:])


def _saves_workspace_for_backward(node) -> bool:
    """mkldnn_rnn_layer traced for training returns the workspace its backward reads only while
    grad mode is on, and AOT autograd runs compiled forwards with it off: without it, the backward
    is handed an empty workspace and crashes."""
    return rnn_layer_train_flag(node) is True


def _relayout(t, shape, strides):
    """An extern result in the layout the kernels were compiled for (its traced metadata said so)."""
    return torch.empty_strided(shape, strides, dtype=t.dtype, device=t.device).copy_(t)


def _arena(plan, bufs) -> list:
    """Views of one persistent allocation, one per arena buffer (allocated once per runner, with
    real memory even when the compile runs under a fake-tensor mode, as AOT autograd's does)."""
    with _disable_current_modes():
        store = torch.empty(max(plan.arena_bytes, 1), dtype=torch.uint8)
        views = []
        for b, off in plan.arena_offset.items():
            buf = bufs[b]
            n = max(buf.strides[d] * (buf.shape[d] - 1) for d in range(len(buf.shape))) + 1 if buf.shape else 1
            views.append(store[off:off + n * buf.dtype.itemsize].view(buf.dtype).as_strided(buf.shape, buf.strides))
    return views


def _compile(src: str, name: str, namespace: dict):
    exec(compile(src, f"<fuselens {name}>", "exec"), namespace)  # noqa: S102 - our own generated source
    return namespace[name]
