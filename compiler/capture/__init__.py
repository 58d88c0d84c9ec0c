"""Source-level graph capture with guards, graph breaks and Python fallback (see docs/capture.md).

    from fuselens.compiler.capture import compile, explain
"""
from .api import CompiledModule, compile, explain
from .report import ExplainReport, FullGraphError

__all__ = ["CompiledModule", "ExplainReport", "FullGraphError", "compile", "explain"]
