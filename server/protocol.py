"""JSON-RPC edge cases pygls leaves open, handled so a bad client message never costs more than
that one message:
- a request whose params do not fit the LSP type gets an InvalidParams *response* (pygls would
  only log it, leaving the client waiting forever);
- a body that is not JSON gets a ParseError response with a null id (JSON-RPC 2.0 §5), logged,
  not shown as a popup;
- a didChange for a document that was never opened is logged and dropped (pygls raises);
- $/cancelRequest also cancels our long jobs (pygls can only cancel the outer future of a
  workspace/executeCommand, not the coroutine running the command).
"""
from __future__ import annotations

import json
import logging

import attrs
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcParseError
from lsprotocol import types
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

log = logging.getLogger(__name__)


@attrs.define
class InvalidRequest:
    id: object
    method: str
    error: JsonRpcException
    jsonrpc: str = "2.0"


class RawResult:
    """A handler result whose JSON is already made; written as is (see diagcache.py)."""

    __slots__ = ("json",)

    def __init__(self, json_text: str) -> None:
        self.json = json_text


class FuseLensProtocol(LanguageServerProtocol):
    def structure_message(self, data):
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            repaired = _without_partial_diagnostics(data)
            if repaired is not None:
                try:
                    return super().structure_message(repaired)
                except JsonRpcException:
                    pass
            if isinstance(data, dict) and "id" in data and "method" in data:
                return InvalidRequest(data["id"], str(data["method"]), error)
            raise

    def handle_message(self, message):
        if isinstance(message, InvalidRequest):
            log.warning("invalid params for %s (id %r)", message.method, message.id)
            reason = message.error.__cause__ or message.error
            self._send_response(message.id, None, JsonRpcInvalidParams(
                f"Invalid params for {message.method}: {_short(reason)}").to_response_error())
            return
        if not hasattr(message, "jsonrpc"):  # valid JSON, but not a JSON-RPC object
            self._send_response(None, None, JsonRpcException(
                "Invalid Request: not a JSON-RPC 2.0 message", code=-32600).to_response_error())
            return
        super().handle_message(message)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        if params.text_document.uri not in self.workspace.text_documents:
            log.warning("didChange for %s, which is not open; ignored", params.text_document.uri)
            return
        yield from super().lsp_text_document__did_change(params)

    def _handle_cancel_notification(self, msg_id):
        job = self._server.jobs.get(msg_id)
        if job is not None:
            job.cancel()
        super()._handle_cancel_notification(msg_id)

    def _send_response(self, msg_id, result=None, error=None):
        if error is None and isinstance(result, RawResult):
            self._result_types.pop(msg_id, None)
            self.send_raw(f'{{"jsonrpc": "2.0", "id": {json.dumps(msg_id)}, "result": {result.json}}}')
            return
        super()._send_response(msg_id, result, error)

    def send_raw(self, body: str) -> None:
        """Writes one message whose JSON is already made (see diagcache.py), framed as pygls frames."""
        if self.writer is None:
            return
        data = body.encode(self.CHARSET)
        self.writer.write(f"Content-Length: {len(data)}\r\nContent-Type: {self.CONTENT_TYPE}; "
                          f"charset={self.CHARSET}\r\n\r\n".encode() + data)

    def parse_error(self, error: Exception) -> None:
        self._send_response(None, None, JsonRpcParseError(f"Parse error: {_short(error)}").to_response_error())


def _without_partial_diagnostics(data):
    """Neovim 0.7 echoes diagnostics in a code-action context with only code/data (no range or
    message), which the LSP types reject. Drop those; the server finds its diagnostics by range."""
    if not isinstance(data, dict) or data.get("method") != "textDocument/codeAction":
        return None
    context = (data.get("params") or {}).get("context")
    if not isinstance(context, dict) or not isinstance(context.get("diagnostics"), list):
        return None
    kept = [d for d in context["diagnostics"] if isinstance(d, dict) and "range" in d and "message" in d]
    if len(kept) == len(context["diagnostics"]):
        return None
    return {**data, "params": {**data["params"], "context": {**context, "diagnostics": kept}}}


def _short(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0][:300] if text else type(error).__name__


def is_parse_error(error: Exception) -> bool:
    return isinstance(error, (json.JSONDecodeError, UnicodeDecodeError))

