"""Comprehensions as Dynamo 2.13 runs them under CPython 3.11 (all measured with probes).

A comprehension is a function of its own, called with an iterator over its first iterable.
Dynamo inlines it, and what happens at a graph break inside depends on that iterator:

- To resume after the call, Dynamo rebuilds the iterator. A list, tuple, range or tensor is
  rebuilt as a tuple iterator and a zip/map/filter as itself; an `enumerate` or a generator
  cannot be ("Generator reconstruction with mutations", GB8335), nor can an iterator over a
  dict or a module container ("Reconstruction failure", GB0092). Then Dynamo gives up on the
  rest of the enclosing frame. A generator expression is a generator itself: the same.
- The comprehension then runs in Python, and Dynamo compiles its frame like any other when
  that frame holds a tensor (`has_tensor_in_frame`: a tensor or module among the variables it
  closes over, or a torch/numpy module it names). As a frame input, only a tuple or range
  iterator can be traced: any other ends in "Missing tp_iternext" (GB4347) at the
  comprehension.

A comprehension that Python runs because the enclosing frame was skipped (a break in a loop,
or one Dynamo could not resume from) goes through the same second step, including those
earlier in the skipped part of the frame: Dynamo runs a skipped frame from where it last
resumed.
"""
from __future__ import annotations

import ast

from . import kinds as K
from .kinds import Ty

# Kinds of iterator a comprehension is called with.
TUPLE, RANGE, LIST, OBJECT, GENERATOR, MAPPING = "tuple", "range", "list", "object", "generator", "mapping"
REBUILT = {TUPLE, RANGE, LIST}  # resumed through a tuple iterator
LOST = {GENERATOR: "FL134", MAPPING: "FL133"}  # not rebuilt: the rule for the break at the comprehension
TRACEABLE_INPUTS = {TUPLE, RANGE}  # the iterators a comprehension's own frame can be traced with

GENERATOR_METHODS = {"parameters", "named_parameters", "buffers", "named_buffers", "modules", "named_modules",
                     "children", "named_children"}
MAPPING_METHODS = {"items", "keys", "values"}
OBJECT_BUILTINS = {"zip", "map", "filter"}
LIST_BUILTINS = {"list", "sorted", "reversed"}  # reversed: a reverse iterator, rebuilt as a tuple one
# `has_tensor_in_frame` also compiles a frame that names a global bound to torch, to any torch
# module, to numpy itself or to a numpy function (not a numpy submodule). An import target is
# told apart from a function by the last part of its dotted name.
TORCH_SUBMODULES = {"nn", "functional", "fft", "linalg", "special", "distributions", "autograd", "init", "cuda",
                    "optim", "jit", "utils", "checkpoint", "distributed", "random", "amp", "func", "sparse",
                    "nested", "masked", "fx", "data", "export", "compiler", "profiler", "backends", "ao"}
NUMPY_NOT_FUNCTIONS = {"random", "linalg", "fft", "ma", "testing", "polynomial", "lib",  # submodules
                       "pi", "e", "inf", "nan", "newaxis", "ndarray", "dtype", "float16", "float32", "float64",
                       "int8", "int16", "int32", "int64", "uint8", "bool_", "complex64", "complex128"}


def iterator_kind(walker, iterable_node: ast.expr, iterable: Ty) -> str | None:
    """What `iter()` of the first iterable is, as far as resuming and tracing go; None when not known."""
    node = iterable_node
    if isinstance(node, ast.Tuple):
        return TUPLE
    if isinstance(node, (ast.List, ast.ListComp, ast.Set, ast.SetComp)):
        return LIST
    if isinstance(node, (ast.Dict, ast.DictComp)):
        return MAPPING
    if isinstance(node, ast.GeneratorExp):
        return GENERATOR
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute):
            if func.attr in MAPPING_METHODS and not node.args:
                return MAPPING
            if func.attr in GENERATOR_METHODS:
                return GENERATOR
        name = walker.dotted(func)
        if name == "range":
            return RANGE
        if name in OBJECT_BUILTINS:
            return OBJECT
        if name in LIST_BUILTINS:
            return LIST
        if name == "tuple":
            return TUPLE
        if name == "enumerate" and node.args:  # over a module container: unrolled into a tuple (measured)
            pair = iterable.ref if isinstance(iterable.ref, Ty) else None
            element = pair.items[1] if pair is not None and pair.items and len(pair.items) == 2 else K.T_UNKNOWN
            return TUPLE if element.kind == K.MODULE and isinstance(node.args[0], ast.Attribute) else GENERATOR
    if iterable.kind in (K.TENSOR, K.SHAPE, K.NDARRAY):  # Tensor.__iter__ iterates unbind()'s tuple
        return TUPLE
    if iterable.kind == K.DICT or _module_container(node, iterable):
        return MAPPING
    if iterable.kind == K.SEQ:
        return LIST
    return None


def _module_container(node: ast.expr, iterable: Ty) -> bool:
    """`self.blocks` holding modules (a ModuleList or Sequential iterates its `_modules` dict)."""
    if iterable.kind == K.MODULE:
        return iterable.ref in ("torch.nn.Sequential", "torch.nn.ModuleDict", "torch.nn.ModuleList")
    return iterable.kind == K.SEQ and isinstance(iterable.ref, Ty) and iterable.ref.kind == K.MODULE \
        and isinstance(node, ast.Attribute)


def own_frame_traced(walker, node: ast.expr) -> bool:
    """Whether Dynamo compiles the comprehension's frame when Python calls it: it closes over a
    variable of the enclosing frame that holds a tensor or module, or names a torch/numpy module."""
    bound = {target.id for generator in node.generators for target in ast.walk(generator.target)
             if isinstance(target, ast.Name)}
    parts = [generator.iter for generator in node.generators[1:]]
    parts += [condition for generator in node.generators for condition in generator.ifs]
    parts += [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
    names = {child.id for part in parts for child in ast.walk(part)
             if isinstance(child, ast.Name) and child.id not in bound}
    for name in names:
        ty = walker.env.get(name)
        if ty is not None:
            if holds_tensor(ty):
                return True
        elif _torch_module(walker.local_imports.get(name) or walker.module.imports.get(name)):
            return True
    return False


def names_torch(walker, function) -> bool:
    """Whether `function` uses a global bound to a torch or numpy module (its frame is then
    compiled whatever its arguments, as `has_tensor_in_frame` decides)."""
    imports = function.module.imports
    return any(isinstance(node, ast.Name) and _torch_module(imports.get(node.id))
               for node in ast.walk(function.node))


def _torch_module(target: str | None) -> bool:
    if target in ("torch", "numpy"):
        return True
    package, _, rest = (target or "").partition(".")
    last = rest.rpartition(".")[2]
    if package == "torch":
        return last in TORCH_SUBMODULES
    return package == "numpy" and last.islower() and last not in NUMPY_NOT_FUNCTIONS


def holds_tensor(ty: Ty) -> bool:
    """`has_tensor_in_frame` of a local: a tensor, a module, an array, or a list, tuple or dict of
    them (objects of other classes do not count, even holding tensors)."""
    if ty.maybe_tensor or ty.kind in (K.MODULE, K.NDARRAY):
        return True
    if ty.kind in (K.SEQ, K.DICT):  # a dict of values not known: in compiled code, most often tensors
        element = ty.ref if isinstance(ty.ref, Ty) else None
        return element is None or ty.kind == K.DICT and element.kind == K.UNKNOWN or holds_tensor(element) or \
            any(holds_tensor(item) for item in ty.items or ())
    return False
