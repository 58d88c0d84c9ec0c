"""Test helpers: a real LSP client (pytest-lsp) talking to `python -m fuselens.server` over stdio."""
from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

SERVER = [sys.executable, "-m", "fuselens.server"]

SAMPLE = '''\
import torch


@torch.compile
def f(x):
    y = x * 2
    print("hi")
    z = y.item()
    return y + z


class Net(torch.nn.Module):
    def forward(self, x):
        return helper(x)


def helper(x):
    print(x)
    return x
'''


def make_client() -> LanguageClient:
    """pytest-lsp's client, but it also keeps every publishDiagnostics (with its version)."""
    client = LanguageClient(converter_factory=default_converter)
    client.published = []  # type: ignore[attr-defined]
    client.refreshes = {"codeLens": 0, "inlayHint": 0}  # type: ignore[attr-defined]

    def publish(ls: LanguageClient, params: types.PublishDiagnosticsParams):
        ls.diagnostics[params.uri] = params.diagnostics
        ls.published.append((time.perf_counter(), params))

    def refreshed(kind):
        def handler(ls: LanguageClient, params):
            ls.refreshes[kind] += 1
        return handler

    features = dict(DEFAULT_CLIENT_FEATURES)
    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = publish
    features[types.WORKSPACE_CODE_LENS_REFRESH] = refreshed("codeLens")
    features[types.WORKSPACE_INLAY_HINT_REFRESH] = refreshed("inlayHint")
    register_lsp_features(client, features)
    return client


CONFIG = ClientServerConfig(server_command=SERVER, client_factory=make_client)


def capabilities(*, pull: bool = False, configuration: bool = False, progress: bool = False,
                 document_changes: bool = False, refresh: bool = False) -> types.ClientCapabilities:
    return types.ClientCapabilities(
        text_document=types.TextDocumentClientCapabilities(
            diagnostic=types.DiagnosticClientCapabilities() if pull else None,
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(
                related_information=True, version_support=True, code_description_support=True,
                data_support=True)),
        workspace=types.WorkspaceClientCapabilities(
            configuration=configuration,
            workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=document_changes),
            diagnostics=types.DiagnosticWorkspaceClientCapabilities(refresh_support=True) if pull else None,
            code_lens=types.CodeLensWorkspaceClientCapabilities(refresh_support=True) if refresh else None,
            inlay_hint=types.InlayHintWorkspaceClientCapabilities(refresh_support=True) if refresh else None),
        window=types.WindowClientCapabilities(work_done_progress=progress),
    )


async def initialize(client: LanguageClient, root: Path, *, options: dict | None = None, **caps):
    return await client.initialize_session(types.InitializeParams(
        capabilities=capabilities(**caps), root_uri=root.as_uri(), initialization_options=options))


def open_document(client: LanguageClient, path: Path, text: str, version: int = 1) -> str:
    path.write_text(text)
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="python", version=version, text=text)))
    return uri


def replace_all(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))


async def until(predicate, timeout: float = 10.0, message: str = "condition"):
    deadline = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {message}")
        await asyncio.sleep(0.01)


async def published(client: LanguageClient, uri: str, version: int | None = None, timeout: float = 10.0):
    """The first publishDiagnostics for `uri` (at `version`, if given)."""
    def match():
        return [p for _, p in client.published if p.uri == uri and (version is None or p.version == version)]
    await until(lambda: match(), timeout, f"diagnostics for {uri} v{version}")
    return match()[0]


def codes(diagnostics) -> list[tuple[int, str]]:
    return sorted((d.range.start.line, str(d.code)) for d in diagnostics)


class RawConnection:
    """Byte-level JSON-RPC to the server, for messages no well-behaved client would send."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.pending: list[dict] = []

    @classmethod
    async def start(cls) -> "RawConnection":
        process = await asyncio.create_subprocess_exec(
            *SERVER, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL)
        return cls(process)

    def send_bytes(self, body: bytes) -> None:
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def send(self, message: dict) -> None:
        self.send_bytes(json.dumps(message).encode())

    async def read(self, timeout: float = 10.0) -> dict:
        async def one():
            length = None
            while True:
                line = await self.process.stdout.readline()
                if not line:
                    raise EOFError("server closed its output")
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                elif line in (b"\r\n", b"\n") and length is not None:
                    return json.loads(await self.process.stdout.readexactly(length))
        return await asyncio.wait_for(one(), timeout)

    async def response(self, msg_id, timeout: float = 10.0) -> dict:
        """The response to `msg_id` (notifications read on the way are kept in `pending`)."""
        while True:
            message = await self.read(timeout)
            if "method" not in message and message.get("id") == msg_id:
                return message
            self.pending.append(message)

    async def initialize(self, root: Path) -> dict:
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                   "params": {"processId": None, "rootUri": root.as_uri(), "capabilities": {}}})
        result = await self.response(0)
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return result

    async def close(self) -> int:
        if self.process.returncode is None:
            self.send({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"})
            try:
                await self.response("bye", timeout=5)
                self.send({"jsonrpc": "2.0", "method": "exit"})
                return await asyncio.wait_for(self.process.wait(), 5)
            except (asyncio.TimeoutError, EOFError):
                self.process.kill()
        return await self.process.wait()
