"""Running user code for a request, always in a worker process.

Only on explicit request (or the user's on-save opt-in), and only when the client said the
workspace is trusted. Every run reports $/progress (cancellable) and can be cancelled with
$/cancelRequest; the worker is killed on cancel or timeout, and a crash becomes an error response
that says what happened.
"""
from __future__ import annotations

import asyncio
import uuid

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcRequestCancelled
from pygls.uris import to_fs_path

from .worker.runner import Job, WorkerError, run_job

REQUEST_FAILED = -32803  # LSP RequestFailed


def fail(message: str, kind: str, detail: str = "") -> JsonRpcException:
    return JsonRpcException(message=message, code=REQUEST_FAILED, data={"kind": kind, "detail": detail[-4000:]})


def plain(value):
    """pygls hands custom-message params over as namedtuples; handlers want dicts."""
    if hasattr(value, "_asdict"):
        return {key: plain(item) for key, item in value._asdict().items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def request_params(params) -> dict:
    """Custom-request params {uri, function, workDoneToken?, ...} as a dict."""
    params = plain(params)
    if not isinstance(params, dict) or not isinstance(params.get("uri"), str) \
            or not isinstance(params.get("function"), str):
        raise fail("expected params {uri, function}", "invalid")
    return params


def _target(ls, uri: str):
    """(path, source, version) of the code to run: the editor's buffer if open, else the file."""
    document = ls.open_document(uri)
    if document is not None:
        return document.path, document.source, document.version
    path = to_fs_path(uri)
    try:
        with open(path, encoding="utf-8") as handle:
            return path, handle.read(), None
    except (OSError, TypeError, UnicodeDecodeError) as error:
        raise fail(f"cannot read {uri}: {error}", "not-found")


async def _progress(ls, token):
    """A progress token: the client's, or one we create when the client supports it."""
    if token is not None:
        return token
    window = ls.client_capabilities.window
    if not (window and window.work_done_progress):
        return None
    token = f"fuselens-{uuid.uuid4()}"
    try:
        await asyncio.wait_for(ls.work_done_progress.create_async(token), 5)
    except Exception:
        return None
    return token


async def run_in_worker(ls, task: str, title: str, uri: str, function: str, token=None,
                        options: dict | None = None) -> tuple[dict, str, str, int | None]:
    """(result, path, source, version) of one worker run; raises JsonRpcException on failure."""
    if not ls.trusted:
        raise fail(f"{title} runs your code, so FuseLens only does it in a trusted workspace. "
                   "Trust the workspace in your editor and try again.", "untrusted")
    if not isinstance(uri, str) or not isinstance(function, str) or not function:
        raise fail(f"{title} needs a document URI and a function name", "invalid")
    path, source, version = _target(ls, uri)
    settings = ls.settings
    root = ls.workspace.root_path if ls.workspace.root_path else None
    job = Job(task, path, source, function, settings.interpreter, settings.worker_timeout_s,
              settings.worker_memory_mb, root=root, options=dict(options or {}))
    this = asyncio.current_task()
    request_id = ls.protocol.msg_id
    if request_id is not None:
        ls.jobs[request_id] = this
    token = await _progress(ls, token)
    progress = ls.work_done_progress
    if token is not None:
        progress.begin(token, types.WorkDoneProgressBegin(title=f"FuseLens: {title}", message=function,
                                                          cancellable=True))
        progress.tokens[token].add_done_callback(lambda future: future.cancelled() and this.cancel())
    ending = "done"
    try:
        result = await run_job(job, on_stage=lambda message: token is not None and progress.report(
            token, types.WorkDoneProgressReport(message=message)))
    except WorkerError as error:
        ending = f"failed: {error.message}"
        if error.detail:
            ls.log_client(f"{title} of {function} failed ({error.kind}): {error.message}\n{error.detail}",
                          types.MessageType.Error)
        raise fail(f"{title} of {function} failed: {error.message}", error.kind, error.detail)
    except asyncio.CancelledError:
        # Answer with RequestCancelled ourselves: a workspace/executeCommand cancelled from its
        # progress bar would otherwise leave pygls' command wrapper without any response.
        ending = "cancelled"
        raise JsonRpcRequestCancelled(f"{title} of {function} was cancelled; the worker was stopped") from None
    finally:
        ls.jobs.pop(request_id, None)
        if token is not None:
            progress.end(token, types.WorkDoneProgressEnd(message=ending))
            progress.tokens.pop(token, None)
    return result, path, source, version
