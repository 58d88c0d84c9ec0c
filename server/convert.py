"""Analyzer results → LSP types.

The analyzer counts columns in code points; LSP clients count in the negotiated position
encoding (UTF-16 unless the client offers another). Only non-ASCII lines need converting.
"""
from __future__ import annotations

import re
from pathlib import Path

from lsprotocol import types

from . import analyzer

SOURCE = "fuselens"
DYNAMO_SOURCE = "dynamo"

SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}
# Graph breaks cost performance now; the others are latent (only under tracing, or on new inputs).
CATEGORY_SEVERITY = {
    "graph-break": "warning",
    "trace-unsafe": "information",
    "recompile": "information",
    "perf": "hint",
}


_LINE_BREAK = re.compile(r"\r\n?|\n")


class Positions:
    """Converts code-point columns of one text snapshot to client units and back."""

    def __init__(self, text: str, encoding: str = types.PositionEncodingKind.Utf16):
        # Line breaks as Python and LSP count them: \n, \r\n and a lone \r.
        self.lines = _LINE_BREAK.split(text) if "\r" in text else text.split("\n")
        self.encoding = encoding

    def units(self, chars: str) -> int:
        if self.encoding == types.PositionEncodingKind.Utf32 or chars.isascii():
            return len(chars)
        if self.encoding == types.PositionEncodingKind.Utf8:
            return len(chars.encode("utf-8"))
        return len(chars.encode("utf-16-le")) // 2

    def position(self, line: int, column: int) -> types.Position:
        """`line` 1-based, `column` 0-based code points (the analyzer's convention)."""
        index = max(line - 1, 0)
        text = self.lines[index] if index < len(self.lines) else ""
        if column and not text.isascii():
            column = self.units(text[:column])
        return types.Position(line=index, character=max(column, 0))

    def range(self, span) -> types.Range:
        return types.Range(start=self.position(span.line, span.column),
                           end=self.position(span.end_line, span.end_column))

    def column_from_client(self, line: int, character: int) -> int:
        """Client column on 0-based `line` → code points."""
        text = self.lines[line] if line < len(self.lines) else ""
        if text.isascii() or self.encoding == types.PositionEncodingKind.Utf32:
            return character
        count = 0
        for index, char in enumerate(text):
            if count >= character:
                return index
            count += self.units(char)
        return len(text)


def path_uri(path: str, document_path: str, document_uri: str) -> str:
    if path == document_path:
        return document_uri
    try:
        return Path(path).resolve().as_uri()
    except ValueError:  # not an absolute path (e.g. an untitled buffer)
        return document_uri


def severity_for(code: str, category: str | None, overrides: dict[str, str]) -> types.DiagnosticSeverity:
    name = overrides.get(code) or (category and overrides.get(category)) or CATEGORY_SEVERITY.get(category or "", "warning")
    return SEVERITY[name]


def finding_to_diagnostic(finding, positions: Positions, *, document_uri: str, document_path: str,
                          version: int | None, severity_overrides: dict[str, str]) -> types.Diagnostic:
    rule = analyzer.rule(finding.code)
    related = []
    for hop in finding.chain:
        related.append(types.DiagnosticRelatedInformation(
            location=types.Location(uri=path_uri(hop.path, document_path, document_uri),
                                    range=positions.range(hop.span) if hop.path == document_path
                                    else _raw_range(hop.span)),
            message=f"reached from {hop.function}"))
    data: dict = {"code": finding.code, "version": version}
    if finding.fix is not None:
        data["fix"] = {
            "title": finding.fix.title,
            "edits": [{"range": _range_json(positions.range(edit.span)), "newText": edit.new_text}
                      for edit in finding.fix.edits],
        }
    message = finding.message
    if rule is not None and rule.fix_hint:
        message = f"{message}\nFix: {rule.fix_hint}"
    return types.Diagnostic(
        range=positions.range(finding.span),
        message=message,
        severity=severity_for(finding.code, rule.category if rule else None, severity_overrides),
        code=finding.code,
        code_description=types.CodeDescription(href=rule.url) if rule is not None else None,
        source=SOURCE,
        related_information=related or None,
        data=data,
    )


def problem_to_diagnostic(problem, positions: Positions) -> types.Diagnostic:
    """The analyzer could not read part of the file: say so, as a hint-level note (the
    editor's Python support already flags syntax errors loudly)."""
    span_range = positions.range(problem.span) if problem.span is not None else types.Range(
        start=types.Position(line=0, character=0), end=types.Position(line=0, character=0))
    return types.Diagnostic(range=span_range, message=f"FuseLens skipped code it could not parse: {problem.message}",
                            severity=types.DiagnosticSeverity.Information, source=SOURCE, code="parse")


def _raw_range(span) -> types.Range:
    # Another file's text is not at hand; code points equal UTF-16 units for most source.
    return types.Range(start=types.Position(line=max(span.line - 1, 0), character=span.column),
                       end=types.Position(line=max(span.end_line - 1, 0), character=span.end_column))


def _range_json(value: types.Range) -> dict:
    return {"start": {"line": value.start.line, "character": value.start.character},
            "end": {"line": value.end.line, "character": value.end.character}}


def range_from_json(value: dict) -> types.Range:
    return types.Range(start=types.Position(**value["start"]), end=types.Position(**value["end"]))
