"""FuseLens: see why torch.compile won't give you one clean graph, and what a compiler makes of your code.

Components (each a sub-package): `fuselens.analysis` (static analyzer), `fuselens.compiler`
(guarded capture + fusion compiler), `fuselens.server` (language server).
"""
__version__ = "0.1.0"


def __getattr__(name):
    # `fuselens.compile` / `fuselens.explain` import torch: only on first use, so the CLI and the
    # language server (which never need them) start fast.
    if name in ("compile", "explain"):
        from fuselens.compiler.capture import api

        return getattr(api, name)
    raise AttributeError(f"module 'fuselens' has no attribute {name!r}")
