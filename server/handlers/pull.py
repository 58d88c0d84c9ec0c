"""textDocument/diagnostic (pull), registered only when the client pulls."""
from __future__ import annotations

import json

from lsprotocol import types

from ..diagcache import to_json
from ..protocol import RawResult


async def diagnostic(ls, params: types.DocumentDiagnosticParams):
    state = await ls.analyses.current(params.text_document.uri)
    if state is None:  # not open (or not Python): nothing to say
        return types.RelatedFullDocumentDiagnosticReport(items=[])
    if params.previous_result_id == state.result_id:
        return types.RelatedUnchangedDocumentDiagnosticReport(result_id=state.result_id)
    # The full report is written from the JSON cached with each diagnostic (diagcache.py).
    items = state.static_json + [to_json(d) for d in state.dynamo]
    return RawResult(f'{{"kind": "full", "resultId": {json.dumps(state.result_id)}, "items": [{", ".join(items)}]}}')
