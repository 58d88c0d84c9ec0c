"""FuseLens fusion compiler back end: aten FX graphs -> fused C++/OpenMP or Triton kernels.

    from fuselens.compiler.backend import compile_graph, fuselens_backend
    torch.compile(fn, backend=fuselens_backend)

See docs/compiler-backend.md for the design.
"""
from .api import CompileInfo, KernelDetail, compile_graph, decompositions, fuselens_backend

__all__ = ["CompileInfo", "KernelDetail", "compile_graph", "decompositions", "fuselens_backend"]
