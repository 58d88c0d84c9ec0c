"""What the analyzer reports: findings, their fixes, and problems with the input itself.

Positions follow Python's `ast`: lines are 1-based, columns are 0-based offsets in
characters (not bytes). Every consumer (CLI, server) converts from here.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Span:
    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True)
class TextEdit:
    span: Span
    new_text: str


@dataclass(frozen=True)
class Fix:
    """A mechanical rewrite that keeps eager semantics; `edits` apply to the finding's file."""

    title: str
    edits: tuple[TextEdit, ...]


@dataclass(frozen=True)
class CallSite:
    """One hop of the chain from a compile root to the finding (related information)."""

    path: str
    span: Span
    function: str


@dataclass(frozen=True)
class Finding:
    code: str  # rule id, e.g. "FL102"
    path: str
    span: Span
    message: str
    function: str  # qualified name of the enclosing function
    chain: tuple[CallSite, ...] = ()  # from the root down to the call that reached `function`
    fix: Fix | None = None

    @property
    def rule(self):
        from .rules import RULES

        return RULES[self.code]


@dataclass(frozen=True)
class SourceProblem:
    """The input could not be (fully) read or parsed; the rest of the file is still analysed."""

    path: str
    message: str
    span: Span | None = None


@dataclass
class Report:
    path: str
    findings: list[Finding] = field(default_factory=list)
    problems: list[SourceProblem] = field(default_factory=list)
