"""Example inputs: how the worker gets arguments to call the user's function with.

The convention (docs/server.md): next to a function `f`, define a module-level
`f_example_inputs()` returning
  - a tuple  -> positional arguments,
  - a dict   -> keyword arguments,
  - anything else -> the single positional argument.
For `Model.forward`, define `Model_example_inputs()` (arguments of forward); the module is
built by `Model_example_module()` if defined, else by `Model()`.
The RNG is seeded (torch.manual_seed(0)) before the inputs are built, when torch is loaded.
"""
import sys

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
        return (f"Define `def {owner}_example_inputs(): return (torch.randn(8, 16),)` in the same file "
                f"(the arguments of forward; optionally `def {owner}_example_module(): return {owner}(...)`).")
    return (f"Define `def {owner}_example_inputs(): return (torch.randn(8, 16),)` next to `{owner}` "
            f"(a tuple of positional arguments, or a dict of keyword arguments).")


def resolve(module, function: str):
    """Returns (callable, args, kwargs, description of where the inputs came from)."""
    owner, _, method = function.partition(".")
    obj = getattr(module, owner, None)
    if obj is None:
        raise TaskError("not-found", f"`{owner}` is not defined at module level in this file")
    provider = getattr(module, f"{owner}_example_inputs", None)
    if provider is None:
        raise TaskError("no-inputs", f"No example inputs for {function}. {_how_to(owner, function)}")
    if not callable(provider):
        raise TaskError("no-inputs", f"{owner}_example_inputs must be a function")
    _seed()
    if method:
        if method != "forward":
            raise TaskError("not-found", f"only forward methods can be run, not {function}")
        factory = getattr(module, f"{owner}_example_module", None) or obj
        instance = factory()
        instance = getattr(instance, "_orig_mod", instance)  # a torch.compile'd module
        if hasattr(instance, "eval"):
            instance.eval()
        target = instance
    else:
        target = _unwrap(obj)
        if not callable(target):
            raise TaskError("not-found", f"`{owner}` is not callable")
    args, kwargs = _call_args(provider(), f"{owner}_example_inputs")
    return target, args, kwargs, f"{owner}_example_inputs()"
