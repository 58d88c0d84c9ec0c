"""textDocument/diagnostic (pull), registered only when the client pulls."""
from __future__ import annotations

from lsprotocol import types


async def diagnostic(ls, params: types.DocumentDiagnosticParams):
    state = await ls.analyses.current(params.text_document.uri)
    if state is None:  # not open (or not Python): nothing to say
        return types.RelatedFullDocumentDiagnosticReport(items=[])
    if params.previous_result_id == state.result_id:
        return types.RelatedUnchangedDocumentDiagnosticReport(result_id=state.result_id)
    return types.RelatedFullDocumentDiagnosticReport(items=state.diagnostics, result_id=state.result_id)
