"""Diagnostics carried over between analyses of one document, with their JSON.

After an edit most findings are the same objects' equals (the analyzer re-walks only what the edit
touched), so their conversion to LSP and their JSON are reused: per analysis only new findings are
converted, and publishDiagnostics is written as the join of cached JSON texts instead of being
re-serialized through pygls' converter each time. Only `data.version` changes: the cached JSON is
split around it, and the kept `Diagnostic` objects carry no version (the document state's
`analyzed_version` is theirs). Findings on non-ASCII lines are converted afresh (their columns depend on
the text).
"""
from __future__ import annotations

import json

import attrs
from pygls.protocol import default_converter

from . import convert

_CONVERTER = default_converter()
_SENTINEL = -987654321  # stands for the version inside cached JSON
_MARK = f'"version": {_SENTINEL}'


def to_json(diagnostic) -> str:
    return json.dumps(_CONVERTER.unstructure(diagnostic))


class Converted:
    """Used by the analysis thread only (one per document)."""

    def __init__(self) -> None:
        self.context: tuple | None = None
        self.entries: dict = {}  # Finding -> (Diagnostic, JSON before the version, JSON after it)

    def convert(self, report, positions, *, uri: str, path: str, version, overrides: dict) -> tuple[list, list]:
        """(diagnostics without `data.version`, their JSON texts with it) for the report's findings and
        problems."""
        context = (uri, path, positions.encoding, tuple(sorted(overrides.items())))
        if context != self.context:
            self.context, self.entries = context, {}
        kept: dict = {}
        diagnostics, texts = [], []
        stamp = json.dumps(version)
        for finding in report.findings:
            reusable = _ascii(finding, positions, path)
            entry = self.entries.get(finding) if reusable else None
            if entry is None:
                diagnostic = convert.finding_to_diagnostic(finding, positions, document_uri=uri, document_path=path,
                                                           version=_SENTINEL, severity_overrides=overrides)
                before, mark, after = to_json(diagnostic).rpartition(_MARK)
                del diagnostic.data["version"]  # this object is kept across versions
                if not mark:  # cannot happen with the data convert writes; stay correct anyway
                    diagnostics.append(diagnostic)
                    texts.append(to_json(attrs.evolve(diagnostic, data={**diagnostic.data, "version": version})))
                    continue
                entry = (diagnostic, before + '"version": ', after)
            if reusable:
                kept[finding] = entry
            diagnostics.append(entry[0])
            texts.append(entry[1] + stamp + entry[2])
        for problem in report.problems:
            diagnostic = convert.problem_to_diagnostic(problem, positions)
            diagnostics.append(diagnostic)
            texts.append(to_json(diagnostic))
        self.entries = kept
        return diagnostics, texts


def _ascii(finding, positions, path: str) -> bool:
    lines = positions.lines
    spans = [finding.span] + [hop.span for hop in finding.chain if hop.path == path]
    if finding.fix is not None:
        spans += [edit.span for edit in finding.fix.edits]
    for span in spans:
        for line in range(span.line, span.end_line + 1):
            if 0 < line <= len(lines) and not lines[line - 1].isascii():
                return False
    return True
