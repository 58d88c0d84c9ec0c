"""Robustness: bad JSON-RPC, unknown methods, a 10 MB file, 1,000 edits in a second, typing
through syntax errors. The server must answer and keep serving every time."""
from __future__ import annotations

import asyncio
import time

from lsprotocol import types
from lsp_harness import SAMPLE, RawConnection, codes, open_document, published, until


async def test_malformed_json_rpc_and_unknown_methods(tmp_path):
    server = await RawConnection.start()
    try:
        await server.initialize(tmp_path)
        # Not JSON at all: JSON-RPC's Parse error, with a null id.
        server.send_bytes(b"{this is not json")
        error = await server.response(None)
        assert error["error"]["code"] == -32700
        # JSON, but not a JSON-RPC message.
        server.send_bytes(b"[1, 2, 3]")
        assert (await server.response(None))["error"]["code"] == -32600
        # A request whose params do not fit the method: an answer, not silence.
        server.send({"jsonrpc": "2.0", "id": 7, "method": "textDocument/codeAction", "params": {"nonsense": 1}})
        assert (await server.response(7))["error"]["code"] == -32602
        # Unknown request: MethodNotFound. Unknown notifications (with or without $/) are ignored.
        server.send({"jsonrpc": "2.0", "id": 8, "method": "fuselens/noSuchThing", "params": {}})
        assert (await server.response(8))["error"]["code"] == -32601
        server.send({"jsonrpc": "2.0", "method": "$/somethingNew", "params": {}})
        server.send({"jsonrpc": "2.0", "method": "made/up", "params": {}})
        # A notification with broken params, and a header without a body's worth of sense.
        server.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": 5}})
        server.send({"jsonrpc": "2.0", "method": "textDocument/didChange",
                     "params": {"textDocument": {"uri": "file:///never/opened.py", "version": 2},
                                "contentChanges": [{"text": "x"}]}})
        # Still serving: a real document gets real diagnostics.
        uri = (tmp_path / "model.py").as_uri()
        server.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": SAMPLE}}})
        while True:
            message = server.pending.pop(0) if server.pending else await server.read()
            if message.get("method") == "textDocument/publishDiagnostics" and message["params"]["uri"] == uri:
                break
        assert sorted(d["code"] for d in message["params"]["diagnostics"]) == ["FL102", "FL110", "FL110"]
        server.send({"jsonrpc": "2.0", "id": 9, "method": "textDocument/codeLens",
                     "params": {"textDocument": {"uri": uri}}})
        assert len((await server.response(9))["result"]) == 6
        # Neovim 0.7 echoes diagnostics without range/message in the code-action context.
        server.send({"jsonrpc": "2.0", "id": 10, "method": "textDocument/codeAction", "params": {
            "textDocument": {"uri": uri},
            "range": {"start": {"line": 7, "character": 10}, "end": {"line": 7, "character": 16}},
            "context": {"diagnostics": [{"code": "FL102", "data": {"code": "FL102", "version": 1}}]}}})
        assert [a["title"] for a in (await server.response(10))["result"]] == ["Ignore FL102 on this line"]
        # Bad input is logged, never shown to the user as a server error.
        shown = [m for m in server.pending if m.get("method") == "window/showMessage"]
        assert not shown, shown
    finally:
        assert await server.close() == 0  # a clean shutdown/exit after all that


async def test_ten_megabyte_file_does_not_stall_the_server(lsp_client_factory, tmp_path):
    client = await lsp_client_factory()
    big = ("x = [" + ", ".join(["1.0"] * 200) + "]\n") * 10_500  # ~10 MB of generated data
    assert len(big) > 10 * 2**20
    big_uri = open_document(client, tmp_path / "weights.py", big)
    small_uri = open_document(client, tmp_path / "model.py", SAMPLE)
    started = time.perf_counter()
    await published(client, small_uri, version=1)
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=small_uri)))
    assert len(lenses) == 6 and time.perf_counter() - started < 3.0
    report = await published(client, big_uri, version=1)
    assert list(report.diagnostics) == []
    await until(lambda: any("weights.py" in m.message and "maxFileSizeKb" in m.message for m in client.messages),
                message="a message saying the big file is skipped")


async def test_thousand_edits_in_a_second_then_a_prompt_answer(lsp_client_factory, tmp_path):
    client = await lsp_client_factory(options={"settings": {"debounceMs": 100}})
    uri = open_document(client, tmp_path / "model.py", SAMPLE)
    await published(client, uri, version=1)
    line = 9  # the blank line after `return y + z`: type a comment there, one character per edit
    started = time.perf_counter()
    for index in range(1000):
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2 + index),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(line=line, character=index),
                                  end=types.Position(line=line, character=index)),
                text="#" if index == 0 else "x")]))
        if index % 50 == 49:
            await asyncio.sleep(0.04)  # 1,000 edits spread over about a second
    sent = time.perf_counter() - started
    asked = time.perf_counter()
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(line=7, character=12), end=types.Position(line=7, character=12)),
        context=types.CodeActionContext(diagnostics=[])))
    answered = time.perf_counter() - asked
    assert sent < 1.5 and answered < 0.2, (sent, answered)
    assert actions is not None
    report = await published(client, uri, version=1001)
    assert codes(report.diagnostics) == [(6, "FL110"), (7, "FL102"), (17, "FL110")]
    versions = [p.version for _, p in client.published if p.uri == uri]
    assert versions[-1] == 1001 and len(versions) <= 4  # debounced, not one analysis per edit


async def test_typing_through_syntax_errors(lsp_client_factory, tmp_path):
    client = await lsp_client_factory(options={"settings": {"debounceMs": 0}})
    uri = open_document(client, tmp_path / "model.py", SAMPLE)
    await published(client, uri, version=1)
    addition = '\n@torch.compile\ndef g(x):\n    return float(x.sum()) + {"a": [x.item(),'
    text, version = SAMPLE, 1
    for char in addition + " 1]}\n":
        text += char
        version += 1
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
        await asyncio.sleep(0.003)
    report = await published(client, uri, version=version)
    found = codes(report.diagnostics)
    assert [c for c in found if c[0] < 20] == [(6, "FL110"), (7, "FL102"), (17, "FL110")]
    assert {c for _, c in found if _ >= 20} >= {"FL102"}
    assert not [m for m in client.messages if m.type == types.MessageType.Error]
    assert client.protocol.writer is not None and client.error is None
