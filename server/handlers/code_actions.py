"""Quick fixes: the analyzer's own fix (carried in Diagnostic.data) and "ignore on this line"."""
from __future__ import annotations

from lsprotocol import types

from ..convert import SOURCE, Positions, range_from_json
from ..ignore import ignore_edit


def _ours(diagnostics) -> list[types.Diagnostic]:
    return [d for d in diagnostics if d.source == SOURCE and isinstance(d.code, str) and d.code != "parse"]


def _overlaps(a: types.Range, b: types.Range) -> bool:
    return (a.start.line, a.start.character) <= (b.end.line, b.end.character) and \
        (b.start.line, b.start.character) <= (a.end.line, a.end.character)


def _edit(ls, uri: str, version: int | None, edits: list[types.TextEdit]) -> types.WorkspaceEdit:
    caps = ls.client_capabilities.workspace
    if caps and caps.workspace_edit and caps.workspace_edit.document_changes:
        # Versioned: the client refuses the edit if the document changed since we computed it.
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
            edits=edits)])
    return types.WorkspaceEdit(changes={uri: edits})


def code_action(ls, params: types.CodeActionParams):
    uri = params.text_document.uri
    document = ls.open_document(uri)
    if document is None:
        return None
    only = params.context.only
    if only and not any(kind in ("", "quickfix") for kind in only):
        return None
    diagnostics = _ours(params.context.diagnostics)
    analyzed = None  # the version our own diagnostics were computed for (they carry none, diagcache.py)
    if not diagnostics:  # some clients send no context; use what we published for the range
        state = ls.analyses.docs.get(uri)
        analyzed = state.analyzed_version if state else None
        diagnostics = [d for d in (state.static if state else []) if _overlaps(d.range, params.range)]
    text = document.source
    positions = Positions(text, ls.position_encoding)
    lines = positions.lines
    actions: list[types.CodeAction] = []
    for diagnostic in diagnostics:
        data = diagnostic.data if isinstance(diagnostic.data, dict) else {}
        fix = data.get("fix")
        if fix:
            edits = [types.TextEdit(range=range_from_json(e["range"]), new_text=e["newText"]) for e in fix["edits"]]
            actions.append(types.CodeAction(
                title=fix["title"], kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                is_preferred=True, edit=_edit(ls, uri, data.get("version", analyzed), edits)))
        line = diagnostic.range.start.line
        if line < len(lines):
            edit = ignore_edit(lines[line], line, str(diagnostic.code), positions.units)
            if edit is not None:
                actions.append(types.CodeAction(
                    title=f"Ignore {diagnostic.code} on this line", kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diagnostic], edit=_edit(ls, uri, document.version, [edit])))
    return actions
