"""textDocument/inlayHint: the last profile's summary at the end of the profiled function's `def` line."""
from __future__ import annotations

from lsprotocol import types

from ..convert import Positions
from ..outline import document_scan


async def inlay_hint(ls, params: types.InlayHintParams):
    uri = params.text_document.uri
    document = ls.open_document(uri)
    profiles = [p for (u, _f), p in ls.profiles.items() if u == uri and p.result.get("summary")]
    if document is None or not profiles:
        return []
    found = await document_scan(ls, document)
    positions = Positions(document.source, ls.position_encoding)
    first, last = params.range.start.line, params.range.end.line
    hints = []
    for profile in profiles:
        span = found.spans.get(profile.function)
        if span is None or not first <= span.def_line <= last:
            continue
        line = positions.lines[span.def_line] if span.def_line < len(positions.lines) else ""
        edited = " (before your edits)" if profile.edited(positions.lines, span) else ""
        hints.append(types.InlayHint(
            position=positions.position(span.def_line + 1, len(line.rstrip())),
            label=f"{profile.result['summary']}{edited}", padding_left=True,
            tooltip=f"FuseLens: last profile of {profile.function} (inputs from "
                    f"{profile.result.get('inputs', '?')}); run \"Compile and profile\" again to update."))
    return hints
