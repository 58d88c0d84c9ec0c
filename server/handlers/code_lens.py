"""Code lenses on compile roots and forward(): listed cheaply, commands filled in on resolve."""
from __future__ import annotations

import asyncio

from lsprotocol import types

from ..roots import find_roots

LENSES = (
    ("profile", "Compile and profile", "fuselens.compileAndProfile"),
    ("explain", "Explain with Dynamo", "fuselens.explainDynamo"),
    ("transformed", "Show transformed program", "fuselens.showTransformedProgram"),
)


async def code_lens(ls, params: types.CodeLensParams):
    uri = params.text_document.uri
    document = ls.open_document(uri)
    if document is None:
        return None
    version, text = document.version, document.source
    if len(text) > ls.settings.max_file_kb * 1024:
        return []  # as for diagnostics: too big to scan as you type
    cached = ls.lens_cache.get(uri)
    if cached is not None and cached[0] == version:
        roots = cached[1]
    else:
        # The parse runs on the analysis thread: a big file must not stall the event loop.
        found = await asyncio.get_running_loop().run_in_executor(ls.analyses.executor, find_roots, text)
        roots = found if found is not None else (cached[1] if cached else [])
        ls.lens_cache[uri] = (version, roots)
    lenses = []
    for root in roots:
        where = types.Range(start=types.Position(line=root.line, character=0),
                            end=types.Position(line=root.line, character=0))
        for kind, _title, _command in LENSES:
            lenses.append(types.CodeLens(range=where, data={"uri": uri, "function": root.qualname, "kind": kind}))
    return lenses


def resolve(ls, lens: types.CodeLens) -> types.CodeLens:
    data = lens.data if isinstance(lens.data, dict) else {}
    for kind, title, command in LENSES:
        if data.get("kind") == kind:
            result = ls.results.get((data.get("uri"), data.get("function"), "compile-profile"))
            if kind == "profile" and result and result.get("summary"):
                title = f"{result['summary']} · profile again"
            lens.command = types.Command(title=title, command=command,
                                         arguments=[data.get("uri"), data.get("function")])
            break
    return lens
