"""Pull diagnostics (textDocument/diagnostic) for clients that support them, and stale results."""
from __future__ import annotations

import asyncio
import time

from lsprotocol import types
from lsp_harness import SAMPLE, codes, open_document, published, replace_all, until


async def pull(client, uri, previous=None):
    return await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=uri), previous_result_id=previous))


async def test_pull_client_gets_pull_not_push(lsp_client_factory, tmp_path):
    client = await lsp_client_factory(pull=True)
    assert client.init_result.capabilities.diagnostic_provider.identifier == "fuselens"
    uri = open_document(client, tmp_path / "model.py", SAMPLE)
    report = await pull(client, uri)
    assert report.kind == "full"
    assert codes(report.items) == [(6, "FL110"), (7, "FL102"), (17, "FL110")]
    # Nothing changed: the client is told so instead of getting the list again.
    again = await pull(client, uri, previous=report.result_id)
    assert again.kind == "unchanged" and again.result_id == report.result_id
    # A pull right after an edit waits for the analysis of the new version.
    replace_all(client, uri, SAMPLE.replace('    print("hi")\n', ""), version=2)
    edited = await pull(client, uri, previous=report.result_id)
    assert edited.kind == "full" and codes(edited.items) == [(6, "FL102"), (16, "FL110")]
    # A settings change asks the client to pull again, and the pull gets the re-analysis.
    refreshes = client.diagnostic_refresh_count
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"fuselens": {"ignore": ["FL110"]}}))
    await until(lambda: client.diagnostic_refresh_count > refreshes, message="workspace/diagnostic/refresh")
    refreshed = await pull(client, uri, previous=edited.result_id)
    assert refreshed.kind == "full" and codes(refreshed.items) == [(6, "FL102")]
    await asyncio.sleep(0.1)
    assert client.published == []  # no duplicate push alongside pull


async def test_stale_result_is_dropped_when_the_version_moved_on(lsp_client_factory, tmp_path):
    client = await lsp_client_factory(options={"settings": {"debounceMs": 0}})
    body = "".join(SAMPLE.replace("def f(", f"def f{i}(").replace("class Net", f"class Net{i}")
                   .replace("def helper", f"def helper{i}").replace("helper(x)", f"helper{i}(x)")
                   for i in range(400))  # ~7,600 lines: its analysis takes a while
    uri = open_document(client, tmp_path / "big.py", body)
    started = time.perf_counter()
    await published(client, uri, version=1, timeout=60)
    elapsed = time.perf_counter() - started
    # v2's analysis starts at once (no debounce); v3 arrives while it still runs.
    replace_all(client, uri, body + "\nx = 1\n", version=2)
    await asyncio.sleep(min(0.1, elapsed / 5))
    replace_all(client, uri, body + "\nx = 2\n", version=3)
    await published(client, uri, version=3, timeout=60)
    assert [p.version for _, p in client.published if p.uri == uri] == [1, 3]
