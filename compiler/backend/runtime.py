"""Executes a compiled graph: kernel segments (C++ through ctypes, or Triton launchers), extern
ops through torch.

All per-call work is precomputed into flat lists of slot numbers; a call only fills slots with
tensors, makes one foreign call per kernel segment and one torch call per extern.
"""
from __future__ import annotations

import sys
import threading

import torch
from torch.utils import _pytree as pytree

from .ir import BufRef, Node, walk

POOL_MIN_BYTES = 1 << 18  # outputs at least this big are recycled once the caller drops them


class OutputPool:
    """Graph outputs the caller has dropped are reused: a fresh large tensor costs page faults."""

    def __init__(self):
        self.free: list = []

    def take(self, shape, strides, dtype):
        for t in self.free:
            if (sys.getrefcount(t) == 3 and t._use_count() == 1
                    and torch._C._storage_Use_Count(t.untyped_storage()._cdata) == 2):
                return t
        t = torch.empty_strided(shape, strides, dtype=dtype)
        self.free = ([t] + self.free)[:2]
        return t


class Runner:
    def __init__(self, program, steps, plan, segments, seg_params, seg_fns, fallback, take_error=None):
        """`seg_fns[i](tensors)` runs kernel segment i on the tensors of its `seg_params[i]`;
        `take_error()` says whether a kernel saw an out-of-range index since the last call."""
        self.fallback = fallback
        self.take_error = take_error
        slot = {}
        for name in program.buffers:
            slot.setdefault(name, len(slot))
        for b, target in plan.inplace.items():
            slot[b] = slot[target]
        self.nslots = len(program.buffers)
        self.input_slots = [slot[n] for n in program.inputs]
        bufs = program.buffers
        self.signature = [(bufs[n].shape, bufs[n].strides, bufs[n].dtype) for n in program.inputs]
        self.arena_bytes = plan.arena_bytes
        self.arena_views = [(slot[b], off, bufs[b]) for b, off in plan.arena_offset.items()]
        self.arena = None
        self.lock = threading.Lock()
        self.pools: dict = {}
        self.steps = []
        kernel_seg = {k.name: si for si, seg in enumerate(segments) for k in seg}
        done_segs = set()
        for step in steps:
            if isinstance(step, Node):
                self.steps.append(("extern", step.target, self._resolver(step.args, slot, bufs),
                                   self._resolver(step.kwargs, slot, bufs), [slot[o] if o else None for o in step.outs]))
                continue
            si = kernel_seg[step.name]
            if si in done_segs:
                continue
            done_segs.add(si)
            params = seg_params[si]
            allocs = []
            for b in params:
                if b in plan.arena_offset or b in plan.inplace or bufs[b].kind != "temp":
                    continue
                allocs.append((slot[b], bufs[b].shape, bufs[b].strides, bufs[b].dtype, b))
            checks = take_error is not None and any(
                n.op == "checkidx" for k in segments[si] for e in k.exprs() for n in walk([e]))
            self.steps.append(("kernels", seg_fns[si], [slot[b] for b in params], allocs, checks))
        self.outputs = [self._resolver(ref, slot, bufs) for ref in program.outputs]
        self.output_tree = program.output_tree
        # The common case, a flat tuple of outputs, is built without pytree.
        leaves = pytree.tree_unflatten(list(range(len(self.outputs))), self.output_tree)
        self.flat_tuple = isinstance(leaves, tuple) and list(leaves) == list(range(len(self.outputs)))

    @staticmethod
    def _resolver(obj, slot, bufs):
        """A function env -> value for an argument structure holding BufRefs."""
        def one(x):
            if not isinstance(x, BufRef):
                return lambda env: x
            s, buf = slot[x.name], bufs[x.name]
            if x.shape is None or (tuple(x.shape) == buf.shape and tuple(x.strides) == buf.strides and not x.offset):
                return lambda env: env[s]
            shape, strides, off = x.shape, x.strides, x.offset
            return lambda env: env[s].as_strided(shape, strides, env[s].storage_offset() + off)
        flat, spec = pytree.tree_flatten(obj, is_leaf=lambda x: isinstance(x, BufRef))
        fns = [one(x) for x in flat]
        if isinstance(obj, BufRef):
            return fns[0]
        return lambda env: pytree.tree_unflatten([f(env) for f in fns], spec)

    def matches(self, args) -> bool:
        for a, (shape, strides, dtype) in zip(args, self.signature):
            if not isinstance(a, torch.Tensor) or a.dtype != dtype or a.shape != shape or a.stride() != strides:
                return False
        return len(args) == len(self.signature)

    def _arena(self):
        if self.arena is None:
            store = torch.empty(max(self.arena_bytes, 1), dtype=torch.uint8)
            views = []
            for s, off, buf in self.arena_views:
                n = max(buf.strides[d] * (buf.shape[d] - 1) for d in range(len(buf.shape))) + 1 if buf.shape else 1
                flat = store[off:off + n * buf.dtype.itemsize].view(buf.dtype)
                views.append((s, flat.as_strided(buf.shape, buf.strides)))
            self.arena = views
        return self.arena

    def __call__(self, *args):
        owns_arena = self.lock.acquire(blocking=False)
        try:
            return self._run(args, owns_arena)
        finally:
            if owns_arena:
                self.lock.release()

    def _run(self, args, owns_arena):
        env = [None] * self.nslots
        for s, a in zip(self.input_slots, args):
            env[s] = a
        if owns_arena:
            for s, t in self._arena():
                env[s] = t
        else:  # re-entrant or concurrent call: private intermediates
            for s, _off, buf in self.arena_views:
                env[s] = torch.empty_strided(buf.shape, buf.strides, dtype=buf.dtype)
        for step in self.steps:
            if step[0] == "extern":
                _, target, args_fn, kwargs_fn, outs = step
                result = target(*args_fn(env), **kwargs_fn(env))
                for s, t in zip(outs, pytree.tree_leaves(result)):
                    if s is not None:
                        env[s] = t
                continue
            _, fn, slots, allocs, checks = step
            for s, shape, strides, dtype, name in allocs:
                if shape and strides and dtype.itemsize * max(1, _numel(shape)) >= POOL_MIN_BYTES:
                    pool = self.pools.get(name)
                    if pool is None:
                        pool = self.pools[name] = OutputPool()
                    env[s] = pool.take(shape, strides, dtype)
                else:
                    env[s] = torch.empty_strided(shape, strides, dtype=dtype)
            fn([env[s] for s in slots])
            if checks and self.take_error():
                return self.fallback(*args)  # eager raises the proper IndexError
        if self.flat_tuple:
            return tuple([f(env) for f in self.outputs])
        return pytree.tree_unflatten([f(env) for f in self.outputs], self.output_tree)


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n
