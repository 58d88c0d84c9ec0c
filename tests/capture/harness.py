"""Differential testing: run a function eagerly and through fuselens.compile, compare everything
observable — outputs (values, dtypes, shapes, requires_grad), in-place changes to inputs, printed
output, raised exception types, and gradients."""
from __future__ import annotations

import contextlib
import copy
import io
import random
import re
import types

import numpy as np

import torch

from fuselens.compiler.capture import compile as fl_compile


def clone(v, memo=None):
    """Deep copy of tensors in `v`; a tensor appearing twice stays one tensor (aliasing kept),
    and views keep their strides."""
    memo = {} if memo is None else memo
    if isinstance(v, torch.Tensor):
        if id(v) not in memo:
            if torch._debug_has_internal_overlap(v) == 0:  # keep the layout (strides matter to guards)
                c = torch.empty_strided(v.shape, v.stride(), dtype=v.dtype, device=v.device)
                c.copy_(v.detach())
            else:  # expanded (stride 0) tensors: a dense copy
                c = v.detach().clone()
            memo[id(v)] = c.requires_grad_(True) if v.requires_grad else c
        return memo[id(v)]
    if isinstance(v, list):
        return [clone(x, memo) for x in v]
    if isinstance(v, tuple):
        return tuple(clone(x, memo) for x in v)
    if isinstance(v, dict):
        return {k: clone(x, memo) for k, x in v.items()}
    return v


def same(a, b, path="out", atol=1e-5, rtol=1e-4):
    """None if equal, else a description of the first difference."""
    if isinstance(a, torch.nn.Module):  # two copies of a module: compare their state
        if type(a) is not type(b):
            return f"{path}: {type(a).__name__} vs {type(b).__name__}"
        return same(dict(a.state_dict()), dict(b.state_dict()), path + ".state_dict()", atol, rtol)
    if isinstance(a, torch.optim.Optimizer):  # two copies: compare their state (moments, steps)
        if type(a) is not type(b):
            return f"{path}: {type(a).__name__} vs {type(b).__name__}"
        return same(a.state_dict(), b.state_dict(), path + ".state_dict()", atol, rtol)
    if isinstance(a, types.FunctionType):  # made twice by the same factory: the same code
        return None if type(b) is types.FunctionType and a.__code__ is b.__code__ else f"{path}: {a!r} vs {b!r}"
    if isinstance(a, torch.Tensor):
        if not isinstance(b, torch.Tensor):
            return f"{path}: tensor vs {type(b).__name__}"
        if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
            return f"{path}: {a.dtype}{list(a.shape)} vs {b.dtype}{list(b.shape)}"
        if a.requires_grad != b.requires_grad:
            return f"{path}: requires_grad {a.requires_grad} vs {b.requires_grad}"
        if a.layout != b.layout:
            return f"{path}: layout {a.layout} vs {b.layout}"
        if a.layout != torch.strided:  # sparse: allclose/equal have no kernels for it
            return same(a.detach().to_dense(), b.detach().to_dense(), path, atol, rtol)
        if a.is_floating_point() or a.is_complex():
            if not torch.allclose(a.detach(), b.detach(), atol=atol, rtol=rtol, equal_nan=True):
                return f"{path}: values differ (max {(a.detach() - b.detach()).abs().max().item():.3g})"
        elif not torch.equal(a, b):
            return f"{path}: values differ"
        return None
    if isinstance(a, np.ndarray):
        if not isinstance(b, np.ndarray) or a.shape != b.shape or a.dtype != b.dtype:
            return f"{path}: ndarray {a.dtype}{list(a.shape)} vs {type(b).__name__}"
        return None if np.allclose(a, b, atol=atol, rtol=rtol, equal_nan=True) else f"{path}: values differ"
    if isinstance(a, BaseException):
        return None if type(a) is type(b) else f"{path}: raised {type(a).__name__} vs {type(b).__name__}: {b}"
    if isinstance(b, BaseException):
        return f"{path}: compiled raised {type(b).__name__}: {b}"
    if isinstance(a, (list, tuple)):
        if type(a) is not type(b) or len(a) != len(b):
            return f"{path}: {type(a).__name__}[{len(a)}] vs {type(b).__name__}[{len(b) if hasattr(b, '__len__') else '?'}]"
        for i, (x, y) in enumerate(zip(a, b)):
            d = same(x, y, f"{path}[{i}]", atol, rtol)
            if d:
                return d
        return None
    if isinstance(a, dict):
        if type(b) is not type(a) or list(a) != list(b):
            return f"{path}: dict keys differ"
        for k in a:
            d = same(a[k], b[k], f"{path}[{k!r}]", atol, rtol)
            if d:
                return d
        return None
    if isinstance(a, float) and isinstance(b, float):
        return None if a == b or abs(a - b) <= atol + rtol * abs(a) or (a != a and b != b) else f"{path}: {a} vs {b}"
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, torch.Generator):  # two copies: the same state, i.e. the same draws used
        return None if torch.equal(a.get_state(), b.get_state()) else f"{path}: generator states differ"
    if isinstance(a, np.random.Generator):
        return same(a.bit_generator.state, b.bit_generator.state, path + ".bit_generator.state", atol, rtol)
    if isinstance(a, (torch.TypedStorage, torch.UntypedStorage)):
        return same(a.tolist(), b.tolist(), path + ".tolist()", atol, rtol)
    if hasattr(a, "__dict__") and type(a).__module__ != "builtins" and not isinstance(a, type) \
            and path.count(".") < 8:  # two copies of a plain object (a scheduler, a logger): their state
        state = getattr(a, "state_dict", None)
        if callable(state):
            return same(state(), b.state_dict(), path + ".state_dict()", atol, rtol)
        return same(dict(vars(a)), dict(vars(b)), path + ".__dict__", atol, rtol)
    return None if a == b else f"{path}: {a!r} vs {b!r}"


_NUMBER = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?")


def same_printed(a: str, b: str, atol=1e-4, rtol=1e-3) -> bool:
    """Printed text equal up to float tolerance in the decimals it shows (a value computed by
    a fused kernel may differ from eager in its last bits, and `print` shows all of them)."""
    if _NUMBER.sub("#", a) != _NUMBER.sub("#", b):
        return False
    return all(abs(float(x) - float(y)) <= atol + rtol * abs(float(x))
               for x, y in zip(_NUMBER.findall(a), _NUMBER.findall(b)))


def run_once(fn, args, kwargs, seed=0):
    """(result or exception, printed text, args after the call, grads)."""
    memo = {}
    args, kwargs = clone(args, memo), clone(kwargs, memo)
    out = io.StringIO()
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)
    with contextlib.redirect_stdout(out):
        try:
            result = fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - exceptions are compared by type
            result = e
    grads = None
    if isinstance(result, torch.Tensor) and result.requires_grad:
        try:
            result.float().sum().backward()
            grads = [a.grad for a in _leaves(args)]
        except RuntimeError as e:  # fn already ran backward through it (a training step): compared by type
            grads = e
    return result, out.getvalue(), args, grads


def _leaves(v):
    if isinstance(v, torch.Tensor):
        return [v] if v.requires_grad and v.is_leaf else []
    if isinstance(v, (list, tuple)):
        return [t for x in v for t in _leaves(x)]
    if isinstance(v, dict):
        return [t for x in v.values() for t in _leaves(x)]
    return []


def check(fn, calls, backend="eager", compiled=None, atol=1e-5, rtol=1e-4):
    """Run `fn` on each (args, kwargs) of `calls`, eagerly and compiled (one compiled object for all
    calls, so later calls exercise guards, recapture and lazily captured branches)."""
    compiled = compiled or fl_compile(fn, backend=backend)
    for i, (args, kwargs) in enumerate(calls):
        ref = run_once(fn, args, kwargs)
        got = run_once(compiled, args, kwargs)
        where = f"{getattr(fn, '__name__', fn)} call {i}"
        diff = same(ref[0], got[0], atol=atol, rtol=rtol)
        assert diff is None, f"{where}: {diff}"
        assert ref[1] == got[1], f"{where}: printed {got[1]!r}, eager printed {ref[1]!r}"
        diff = same(ref[2], got[2], "args", atol, rtol)
        assert diff is None, f"{where}: inputs after the call differ: {diff}"
        if ref[3] is not None:
            diff = same(ref[3], got[3], "grads", atol * 10, rtol * 10)
            assert diff is None, f"{where}: gradients differ: {diff}"
    return compiled


def copy_module(m):
    return copy.deepcopy(m)
