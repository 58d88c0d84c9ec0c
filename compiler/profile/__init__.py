"""Compile and profile one function for the editor (runs only inside the worker process).

`profile(fn, args, kwargs, options)` captures `fn` with `fuselens.explain`, compiles it with
`fuselens.compile(fn, backend="fuselens")`, checks the result against eager, times eager,
`torch.compile` (Inductor) and FuseLens interleaved, and describes the generated kernels with their
provenance and their own times. `transformed_program(...)` is the capture part alone. Both return
JSON-able dicts (the contract with the editor is in docs/server.md); a figure that was not measured
is None, with a reason.
"""
from .kernels import kernel_source
from .measure import compare
from .run import DEFAULTS, profile, summary, transformed_program

__all__ = ["DEFAULTS", "compare", "kernel_source", "profile", "summary", "transformed_program"]
