"""Quick fixes (analyzer fix, ignore comment) and code lenses, through a real client."""
from __future__ import annotations

import pytest
import pytest_lsp
from lsprotocol import types
from lsp_harness import CONFIG, SAMPLE, codes, initialize, open_document, published, replace_all
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(config=CONFIG, scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory):
    await initialize(lsp_client, tmp_path_factory.mktemp("ws"), options={"settings": {"debounceMs": 20}},
                     document_changes=True)
    yield
    await lsp_client.shutdown_session()


def apply(text: str, edits) -> str:
    """Applies LSP TextEdits (ASCII text: characters = UTF-16 units) bottom-up."""
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    spans = [(offsets[e.range.start.line] + e.range.start.character,
              offsets[e.range.end.line] + e.range.end.character, e.new_text) for e in edits]
    for start, end, new in sorted(spans, reverse=True):
        text = text[:start] + new + text[end:]
    return text


async def actions_at(client, uri, diagnostic):
    return await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=diagnostic.range,
        context=types.CodeActionContext(diagnostics=[diagnostic])))


async def test_analyzer_fix_is_offered_and_removes_the_break(client: LanguageClient, tmp_path):
    uri = open_document(client, tmp_path / "model.py", SAMPLE)
    report = await published(client, uri, version=1)
    printed = [d for d in report.diagnostics if d.code == "FL110" and d.range.start.line == 6][0]
    actions = await actions_at(client, uri, printed)
    fix = [a for a in actions if a.is_preferred][0]
    assert fix.kind == types.CodeActionKind.QuickFix and "print" in fix.title.lower()
    (change,) = fix.edit.document_changes
    assert change.text_document.version == 1  # versioned: a stale fix is refused by the client
    fixed = apply(SAMPLE, change.edits)
    assert "if not torch.compiler.is_compiling():" in fixed
    replace_all(client, uri, fixed, version=2)
    report = await published(client, uri, version=2)
    assert (6, "FL110") not in codes(report.diagnostics) and (7, "FL110") not in codes(report.diagnostics)


@pytest.mark.parametrize("line", [7, 17])  # FL102 (no analyzer fix) and FL110 reached via a chain
async def test_ignore_on_this_line_for_every_finding(client: LanguageClient, tmp_path, line):
    uri = open_document(client, tmp_path / "model.py", SAMPLE)
    report = await published(client, uri, version=1)
    target = [d for d in report.diagnostics if d.range.start.line == line][0]
    actions = await actions_at(client, uri, target)
    ignore = [a for a in actions if a.title == f"Ignore {target.code} on this line"]
    assert len(ignore) == 1
    edited = apply(SAMPLE, ignore[0].edit.document_changes[0].edits)
    assert edited.split("\n")[line].endswith(f"  # fuselens: ignore[{target.code}]")
    replace_all(client, uri, edited, version=2)
    report = await published(client, uri, version=2)
    assert (line, target.code) not in codes(report.diagnostics)
    assert len(report.diagnostics) == 2


async def test_ignore_extends_an_existing_comment(client: LanguageClient, tmp_path):
    text = SAMPLE.replace("    z = y.item()", "    z = y.item(); print(z)  # fuselens: ignore[FL110]")
    uri = open_document(client, tmp_path / "model.py", text)
    report = await published(client, uri, version=1)
    target = [d for d in report.diagnostics if d.range.start.line == 7][0]
    assert target.code == "FL102"
    (action,) = [a for a in await actions_at(client, uri, target) if a.title.startswith("Ignore")]
    edited = apply(text, action.edit.document_changes[0].edits)
    assert edited.split("\n")[7].endswith("# fuselens: ignore[FL110, FL102]")


async def test_code_actions_without_context_use_published_diagnostics(client: LanguageClient, tmp_path):
    uri = open_document(client, tmp_path / "model.py", SAMPLE)
    await published(client, uri, version=1)
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(line=7, character=12), end=types.Position(line=7, character=12)),
        context=types.CodeActionContext(diagnostics=[])))
    assert [a.title for a in actions] == ["Ignore FL102 on this line"]


async def test_code_lenses_on_compile_roots_and_forward_resolve_lazily(client: LanguageClient, tmp_path):
    uri = open_document(client, tmp_path / "model.py", SAMPLE)
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    assert all(lens.command is None for lens in lenses)  # resolved on demand
    assert sorted({(lens.range.start.line, lens.data["function"]) for lens in lenses}) == [(3, "f"), (12, "Net.forward")]
    resolved = [await client.code_lens_resolve_async(lens) for lens in lenses if lens.range.start.line == 3]
    assert [lens.command.title for lens in resolved] == [
        "Compile and profile", "Explain with Dynamo", "Show transformed program"]
    assert resolved[1].command.command == "fuselens.explainDynamo"
    assert list(resolved[1].command.arguments) == [uri, "f"]
