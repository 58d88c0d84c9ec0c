"""Example inputs: how the worker gets arguments to call the user's function with.

Tried in order (docs/server.md), the first that applies wins and the result says which:
1. "convention": next to a function `f`, a module-level `f_example_inputs()` returning
     a tuple (positional arguments), a dict (keyword arguments) or anything else (the one argument).
   For `Model.forward`, `Model_example_inputs()` (arguments of forward); the module is built by
   `Model_example_module()` if defined, else by `Model()`.
2. "annotations": shape annotations on the parameters (fuselens_worker_shapes).
3. "main": the first call in the file's `if __name__ == "__main__":` block (fuselens_worker_callsite).
Otherwise a no-inputs error that lists what was tried and how to provide inputs.
The RNG is seeded (torch.manual_seed(0)) before inputs are built, when torch is loaded.
"""
import sys

import fuselens_worker_callsite as callsite
import fuselens_worker_shapes as shapes
from fuselens_worker_tasks import TaskError


def _seed() -> None:
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(0)


def _unwrap(function):
    # @torch.compile wraps the function; Dynamo must see the original.
    return getattr(function, "_torchdynamo_orig_callable", function)


def _call_args(value, provider: str):
    if isinstance(value, tuple):
        return value, {}
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise TaskError("no-inputs", f"{provider}() returned a dict whose keys are not all strings")
        return (), value
    return (value,), {}


def _how_to(owner: str, function: str) -> str:
    if "." in function:
        first = (f"define `def {owner}_example_inputs(): return (torch.randn(8, 16),)` in the same file "
                 f"(the arguments of forward; optionally `def {owner}_example_module(): return {owner}(...)`)")
    else:
        first = (f"define `def {owner}_example_inputs(): return (torch.randn(8, 16),)` next to `{owner}` "
                 f"(a tuple of positional arguments, or a dict of keyword arguments)")
    return (f"To provide them, {first}; or annotate the parameters' shapes (`x: Float[Tensor, \"8 16\"]`, "
            f"or `x: torch.Tensor,  # shape: (8, 16)`); or call {function.split('.')[0]} in the file's "
            f"`if __name__ == \"__main__\":` block.")


def _instance(module, owner: str, obj):
    factory = getattr(module, f"{owner}_example_module", None) or obj
    instance = factory()
    return _eval(instance)


def _eval(instance):
    instance = getattr(instance, "_orig_mod", instance)  # a torch.compile'd module
    if hasattr(instance, "eval"):
        instance.eval()
    return instance


def resolve(module, function: str, source: str = "", path: str = ""):
    """Returns (callable, args, kwargs, (kind, description of where the inputs came from))."""
    owner, _, method = function.partition(".")
    obj = getattr(module, owner, None)
    if obj is None:
        raise TaskError("not-found", f"`{owner}` is not defined at module level in this file")
    if method and method != "forward":
        raise TaskError("not-found", f"only forward methods can be run, not {function}")
    if not method and not callable(_unwrap(obj)):
        raise TaskError("not-found", f"`{owner}` is not callable")
    tried = []
    provider = getattr(module, f"{owner}_example_inputs", None)
    if provider is not None:
        if not callable(provider):
            raise TaskError("no-inputs", f"{owner}_example_inputs must be a function")
        _seed()
        target = _instance(module, owner, obj) if method else _unwrap(obj)
        args, kwargs = _call_args(provider(), f"{owner}_example_inputs")
        return target, args, kwargs, ("convention", f"{owner}_example_inputs()")
    tried.append(f"there is no `{owner}_example_inputs()`")
    try:
        found = shapes.specs(source, function)
        _seed()
        target = _instance(module, owner, obj) if method else _unwrap(obj)
        kwargs, description = shapes.build(found)
        return target, (), kwargs, ("annotations", description)
    except shapes.NoAnnotations as why:
        tried.append(str(why))
    try:
        _seed()
        target, args, kwargs, line = callsite.capture(module, source, path, function, _unwrap)
        return (_eval(target) if method else target), args, kwargs, (
            "main", f"the call at line {line} in the `__main__` block" if line else "the `__main__` block")
    except callsite.NoCall as why:
        tried.append(str(why))
    raise TaskError("no-inputs", f"No example inputs for {function}: {'; '.join(tried)}. {_how_to(owner, function)}")
