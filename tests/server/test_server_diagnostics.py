"""Static diagnostics end to end: a real LSP client over stdio, the real analyzer."""
from __future__ import annotations

import asyncio

import pytest
import pytest_lsp
from lsprotocol import types
from lsp_harness import CONFIG, SAMPLE, codes, initialize, open_document, published, replace_all, until
from pytest_lsp import LanguageClient


pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(config=CONFIG, scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory):
    # One server for the module: each test opens its own file (its own URI).
    result = await initialize(lsp_client, tmp_path_factory.mktemp("ws"), options={"settings": {"debounceMs": 50}})
    # This client cannot pull, so the server pushes and does not offer pull diagnostics.
    assert result.capabilities.diagnostic_provider is None
    yield
    await lsp_client.shutdown_session()


async def test_open_publishes_findings_with_links_chains_and_fix_data(client: LanguageClient, tmp_path):
    uri = open_document(client, tmp_path / "model.py", SAMPLE)
    report = await published(client, uri, version=1)
    assert codes(report.diagnostics) == [(6, "FL110"), (7, "FL102"), (17, "FL110")]
    by_line = {d.range.start.line: d for d in report.diagnostics}
    item = by_line[7]
    assert item.source == "fuselens"
    assert (item.range.start.character, item.range.end.character) == (10, 16)
    assert item.code_description.href.endswith("#fl102")
    assert item.severity == types.DiagnosticSeverity.Warning  # graph breaks are warnings
    # The print reached through Net.forward -> helper carries the chain as related information.
    chained = by_line[17]
    assert [(r.location.uri, r.location.range.start.line) for r in chained.related_information] == [(uri, 13)]
    assert "Net.forward" in chained.related_information[0].message
    # The analyzer's fix travels in data, already in LSP coordinates.
    fix = by_line[6].data["fix"]
    assert fix["edits"][0]["range"]["start"] == {"line": 6, "character": 4}
    assert "is_compiling" in fix["edits"][0]["newText"]


async def test_edit_republishes_for_the_new_version(client: LanguageClient, tmp_path):
    uri = open_document(client, tmp_path / "model.py", SAMPLE)
    await published(client, uri, version=1)
    replace_all(client, uri, SAMPLE.replace('    print("hi")\n', ""), version=2)
    report = await published(client, uri, version=2)
    assert codes(report.diagnostics) == [(6, "FL102"), (16, "FL110")]


async def test_burst_of_edits_is_debounced_to_one_analysis(client: LanguageClient, tmp_path):
    uri = open_document(client, tmp_path / "model.py", SAMPLE)
    await published(client, uri, version=1)
    for version in range(2, 12):
        replace_all(client, uri, SAMPLE + f"\n# edit {version}\n", version)
        await asyncio.sleep(0.005)  # typing speed, well inside the 50 ms debounce
    await published(client, uri, version=11)
    await asyncio.sleep(0.2)
    versions = [p.version for _, p in client.published if p.uri == uri]
    assert versions == [1, 11]


async def test_syntax_error_mid_typing_keeps_other_functions_and_recovers(client: LanguageClient, tmp_path):
    uri = open_document(client, tmp_path / "model.py", SAMPLE)
    await published(client, uri, version=1)
    broken = SAMPLE.replace("    return helper(x)\n", "    return helper(x\n")
    replace_all(client, uri, broken, version=2)
    report = await published(client, uri, version=2)
    assert (7, "FL102") in codes(report.diagnostics)  # f is untouched by the error in Net
    replace_all(client, uri, SAMPLE, version=3)
    report = await published(client, uri, version=3)
    assert codes(report.diagnostics) == [(6, "FL110"), (7, "FL102"), (17, "FL110")]


async def test_close_clears_diagnostics(client: LanguageClient, tmp_path):
    uri = open_document(client, tmp_path / "model.py", SAMPLE)
    await published(client, uri, version=1)
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    await until(lambda: list(client.diagnostics.get(uri, [None])) == [], message="empty diagnostics after close")


async def test_non_ascii_columns_are_utf16(client: LanguageClient, tmp_path):
    text = SAMPLE.replace('print("hi")', 'print("𝔥𝔦", "é")  ;  z0 = y.item()')
    uri = open_document(client, tmp_path / "model.py", text)
    report = await published(client, uri, version=1)
    item = [d for d in report.diagnostics if d.range.start.line == 6 and d.code == "FL102"][0]
    # Each of the two astral characters counts as two UTF-16 units.
    prefix = '    print("𝔥𝔦", "é")  ;  z0 = y.'
    assert item.range.start.character == len(prefix.encode("utf-16-le")) // 2
