"""The FuseLens language server: state shared by the handlers, and its construction."""
from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
import sys
import threading

from lsprotocol import types
from pygls.exceptions import FeatureNotificationError, FeatureRequestError, JsonRpcException
from pygls.io_ import StdoutWriter, run_async
from pygls.lsp.server import LanguageServer
from pygls.workspace.position_codec import PositionCodec, ServerTextPosition

from . import diagcache
from .analyzer import ConfigResolver
from .diagnostics import Analyses, DocState
from .protocol import FuseLensProtocol, is_parse_error
from .settings import Settings

log = logging.getLogger(__name__)

VERSION = "0.1.0"


class FuseLensServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("fuselens", VERSION, protocol_cls=FuseLensProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.settings = Settings()
        # Trust comes from the client only (initializationOptions.trusted or the
        # fuselens/setWorkspaceTrust notification), never from workspace settings.
        self.trusted = False
        self.pull_mode = False
        self.open_uris: set[str] = set()
        self.configs = ConfigResolver()
        self.analyses = Analyses(self)
        self.jobs: dict[object, asyncio.Task] = {}  # request id -> task running user code
        self.save_jobs: dict[str, asyncio.Task] = {}  # uri -> on-save profiles running
        self.profiles: dict = {}  # (uri, function) -> profiles.Profile, the last profile
        self.scan_cache: dict = {}  # uri -> (version, roots.Scan), see outline.py

    # --- documents -----------------------------------------------------------------------
    def open_document(self, uri: str):
        """The open document, or None (never reads from disk behind the client's back)."""
        if uri not in self.open_uris:
            return None
        try:
            return self.workspace.get_text_document(uri)
        except RuntimeError:  # not initialized
            return None

    @property
    def position_encoding(self) -> str:
        try:
            return self.workspace.position_encoding or types.PositionEncodingKind.Utf16
        except RuntimeError:
            return types.PositionEncodingKind.Utf16

    # --- output --------------------------------------------------------------------------
    def diagnostics_ready(self, uri: str, state: DocState) -> None:
        if self.pull_mode:
            return  # the client's pull is waiting in Analyses.current()
        # Written from the JSON cached with each diagnostic (diagcache.py), not re-serialized.
        # DocState.diagnostics (static + dynamo) is what this sends.
        items = state.static_json + [diagcache.to_json(d) for d in state.dynamo]
        self.protocol.send_raw(
            '{"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": {"uri": '
            f'{json.dumps(uri)}, "version": {json.dumps(state.analyzed_version)}, "diagnostics": [{", ".join(items)}]}}}}')

    def dynamo_changed(self, uri: str) -> None:
        state = self.analyses.state(uri)
        state.generation += 1
        if self.pull_mode:
            self.refresh_pull()
        elif state.analyzed_version is not None:
            self.diagnostics_ready(uri, state)

    def views_changed(self) -> None:
        """Asks the client to fetch code lenses and inlay hints again (a profile arrived)."""
        caps = self.client_capabilities.workspace
        if caps and caps.code_lens and caps.code_lens.refresh_support:
            self.workspace_code_lens_refresh(None)
        if caps and caps.inlay_hint and caps.inlay_hint.refresh_support:
            self.workspace_inlay_hint_refresh(None)

    def refresh_pull(self) -> None:
        """Asks a pull client to pull again (results changed without an edit)."""
        caps = self.client_capabilities.workspace
        if self.pull_mode and caps and caps.diagnostics and caps.diagnostics.refresh_support:
            self.workspace_diagnostic_refresh(None)

    def notify_user(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def log_client(self, message: str, kind: types.MessageType = types.MessageType.Log) -> None:
        self.window_log_message(types.LogMessageParams(type=kind, message=message))

    def report_server_error(self, error: Exception, source) -> None:
        """Bad input from the client is logged (and answered where JSON-RPC says so); only our
        own notification-handler failures are worth a popup."""
        if source is FeatureRequestError:
            log.info("request failed: %s", error)  # the client got it in the response
            return
        log.error("%s: %s", getattr(source, "__name__", source), error)
        if source is JsonRpcException and is_parse_error(error):
            self.protocol.parse_error(error)
        try:
            self.log_client(f"FuseLens server error ({getattr(source, '__name__', source)}): {error}",
                            types.MessageType.Error)
            if source is FeatureNotificationError:
                self.notify_user(f"FuseLens: internal error: {error}", types.MessageType.Error)
        except Exception:  # the transport itself may be gone
            pass


    # --- transport -----------------------------------------------------------------------
    def start_io(self, stdin=None, stdout=None) -> None:
        """pygls reads stdin with three thread-pool round trips per message; under a burst of
        edits those hops (and the GIL handoffs) dominate. A non-blocking pipe reader on the
        event loop reads the same framing without threads."""
        stdin = stdin or sys.stdin.buffer
        if not _is_pipe(stdin):
            return super().start_io(stdin, stdout)
        self._stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(self._serve_pipe(stdin))
        except BrokenPipeError:
            log.error("connection to the client lost; shutting down")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()

    async def _serve_pipe(self, stdin) -> None:
        loop = asyncio.get_running_loop()
        reader = _EofTolerantReader(limit=2**20)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), stdin)
        await run_async(stop_event=self._stop_event, reader=reader, protocol=self.protocol, logger=log,
                        error_handler=self.report_server_error)


class FastPositionCodec(PositionCodec):
    """pygls converts every edit position with a per-character Python loop over the line; for
    ASCII lines (nearly all code) the client's column already is the code-point column."""

    def position_from_client_units(self, lines, position):
        if position.line < len(lines):
            line = lines[position.line].replace("\r\n", "\n")
            if line.isascii():
                if not line:
                    return ServerTextPosition(position.line, 0)
                character = position.character if position.character <= len(line) else len(line) - 1
                return ServerTextPosition(position.line, character)
        return super().position_from_client_units(lines, position)


def install_fast_codec(workspace) -> None:
    workspace._position_codec = FastPositionCodec(workspace.position_encoding)


class _EofTolerantReader(asyncio.StreamReader):
    """pygls' loop expects b"" at end of input, not IncompleteReadError."""

    async def readexactly(self, n: int) -> bytes:
        try:
            return await super().readexactly(n)
        except asyncio.IncompleteReadError:
            return b""


def _is_pipe(stream) -> bool:
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (AttributeError, OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def create_server() -> FuseLensServer:
    from .routes import register

    server = FuseLensServer()
    register(server)
    return server
