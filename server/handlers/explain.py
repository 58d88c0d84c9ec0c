"""Explain with Dynamo: real torch._dynamo on the example inputs, in the worker; its graph breaks
become diagnostics with source `dynamo` beside the static ones until the next edit."""
from __future__ import annotations

import re

from lsprotocol import types

from ..convert import DYNAMO_SOURCE, Positions
from ..jobs import request_params, run_in_worker

GB_URL = re.compile(r"https://\S+/gb/gb\d+\.html")


async def explain_dynamo(ls, uri: str, function: str, token=None) -> dict:
    result, _path, source, version = await run_in_worker(ls, "dynamo-explain", "Explain with Dynamo", uri,
                                                         function, token)
    document = ls.open_document(uri)
    if document is not None and document.version == version:  # else the lines moved: drop them
        state = ls.analyses.state(uri)
        positions = Positions(source, ls.position_encoding)
        state.dynamo = [_break_diagnostic(b, positions, result.get("firstLine", 1)) for b in result["breaks"]]
        ls.dynamo_changed(uri)
    breaks = result["graphBreakCount"]
    ls.notify_user(f"Dynamo: {function} ran as {result['graphCount']} graph(s) with {breaks} graph break(s) "
                   f"in {result['seconds']:.1f} s (inputs from {result.get('inputs')}).")
    return result


def _break_diagnostic(item: dict, positions: Positions, first_line: int) -> types.Diagnostic:
    line, column, end_line, end_column = item.get("location") or (first_line, 0, first_line, 0)
    notes = [s.strip() for s in item.get("detail", "").splitlines()
             if s.strip().startswith(("Explanation:", "Hint:")) and "report an issue" not in s]
    url = GB_URL.search(item.get("detail", ""))
    span = types.Range(start=positions.position(line, column), end=positions.position(end_line, end_column))
    return types.Diagnostic(
        range=span, message="\n".join([f"Graph break (Dynamo): {item['reason']}"] + notes),
        severity=types.DiagnosticSeverity.Warning, source=DYNAMO_SOURCE, code=item.get("gbId"),
        code_description=types.CodeDescription(href=url.group(0)) if url else None)


async def command(ls, uri: str, function: str):
    """workspace/executeCommand `fuselens.explainDynamo` [uri, function] (a code lens click)."""
    return await explain_dynamo(ls, uri, function)


async def request(ls, params):
    """`fuselens/explainDynamo` {uri, function, workDoneToken?}."""
    params = request_params(params)
    return await explain_dynamo(ls, params["uri"], params["function"], params.get("workDoneToken"))
