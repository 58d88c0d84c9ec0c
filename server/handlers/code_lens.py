"""Code lenses: "Compile and profile" · "Explain with Dynamo" · "Show transformed program" on compile
roots and forward() (titles filled in on resolve), and after a profile "→ kernel0" on each source
line that fed a kernel."""
from __future__ import annotations

from lsprotocol import types

from ..convert import Positions
from ..outline import document_scan

LENSES = (
    ("profile", "Compile and profile", "fuselens.compileAndProfile"),
    ("explain", "Explain with Dynamo", "fuselens.explainDynamo"),
    ("transformed", "Show transformed program", "fuselens.showTransformedProgram"),
)
SHOW_KERNEL = "fuselens.showKernel"


def _at(line: int) -> types.Range:
    return types.Range(start=types.Position(line=line, character=0), end=types.Position(line=line, character=0))


async def code_lens(ls, params: types.CodeLensParams):
    uri = params.text_document.uri
    document = ls.open_document(uri)
    if document is None:
        return None
    if len(document.source) > ls.settings.max_file_kb * 1024:
        return []  # as for diagnostics: too big to scan as you type
    found = await document_scan(ls, document)
    lenses = [types.CodeLens(range=_at(root.line), data={"uri": uri, "function": root.qualname, "kind": kind})
              for root in found.roots for kind, _title, _command in LENSES]
    profiles = [p for (u, _f), p in ls.profiles.items() if u == uri]
    if profiles:
        lines = Positions(document.source).lines
        rooted = {root.qualname for root in found.roots}
        for profile in profiles:
            span = found.spans.get(profile.function)
            if span is not None and profile.function not in rooted:  # profiled by command, not a root
                lenses.append(types.CodeLens(range=_at(span.start), data={
                    "uri": uri, "function": profile.function, "kind": "profile"}))
            for line, kernel in profile.kernel_lines(lines, span):
                lenses.append(types.CodeLens(range=_at(line), command=types.Command(
                    title=f"→ {kernel}", command=SHOW_KERNEL, arguments=[uri, profile.function, kernel])))
    return lenses


async def resolve(ls, lens: types.CodeLens) -> types.CodeLens:
    data = lens.data if isinstance(lens.data, dict) else {}
    uri, function = data.get("uri"), data.get("function")
    for kind, title, command in LENSES:
        if data.get("kind") == kind:
            profile = ls.profiles.get((uri, function))
            if kind == "profile" and profile is not None and profile.result.get("summary"):
                title = f"{profile.result['summary']}{await _edited(ls, profile)} · profile again"
            lens.command = types.Command(title=title, command=command, arguments=[uri, function])
            break
    return lens


async def _edited(ls, profile) -> str:
    document = ls.open_document(profile.uri)
    if document is None:
        return ""
    span = (await document_scan(ls, document)).spans.get(profile.function)
    return " (before your edits)" if profile.edited(Positions(document.source).lines, span) else ""
