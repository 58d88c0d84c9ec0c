"""Profile results kept per (uri, function), and where they still apply after edits.

A profile describes the code as it ran. Line-based results (a kernel's source lines) follow the
function when it only moved, and are dropped when its text changed; lines outside the function
(inlined helpers) stay only while their own text is unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .roots import Span, scan


@dataclass
class Profile:
    uri: str
    function: str
    result: dict
    path: str                      # the file as the worker saw it (provenance paths name it)
    span: Span | None              # the function in the profiled text
    text: str                      # the function's text then
    lines: dict = field(default_factory=dict)  # 1-based provenance line -> its text then
    options: dict = field(default_factory=dict)

    def edited(self, lines: list[str], span: Span | None) -> bool:
        return span is None or self.span is None or span.text(lines) != self.text

    def kernel_lines(self, lines: list[str], span: Span | None) -> list[tuple[int, str]]:
        """(0-based line now, kernel name) for every source line that fed a kernel and still does."""
        moved = None if self.edited(lines, span) else span.start - self.span.start
        out: list[tuple[int, str]] = []
        for kernel in self.result.get("kernels", []):
            for origin in kernel.get("provenance", []):
                line = origin.get("line")
                if origin.get("path") != self.path or not isinstance(line, int):
                    continue
                if self.span is not None and self.span.start <= line - 1 <= self.span.end:
                    if moved is None:
                        continue  # the function changed: its old lines mean nothing now
                    now = line - 1 + moved
                elif 0 < line <= len(lines) and lines[line - 1] == self.lines.get(line):
                    now = line - 1
                else:
                    continue
                if (now, kernel["name"]) not in out:
                    out.append((now, kernel["name"]))
        return out


def record(uri: str, function: str, result: dict, path: str, source: str, options: dict) -> Profile:
    lines = source.split("\n")
    found = scan(source)
    span = found.spans.get(function) if found is not None else None
    provenance = {origin["line"] for kernel in result.get("kernels", []) for origin in kernel.get("provenance", [])
                  if origin.get("path") == path and isinstance(origin.get("line"), int)}
    return Profile(uri, function, result, path, span, span.text(lines) if span else "",
                   {line: lines[line - 1] for line in provenance if 0 < line <= len(lines)}, dict(options))
