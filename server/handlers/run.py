"""Commands and requests that run the user's code, always in a worker process.

Only on explicit request, and only when the client said the workspace is trusted. Every run
reports $/progress (cancellable) and can be cancelled with $/cancelRequest; the worker is
killed on cancel or timeout, and a crash becomes an error response that says what happened.
"""
from __future__ import annotations

import asyncio
import re
import uuid

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcRequestCancelled
from pygls.uris import to_fs_path

from ..convert import DYNAMO_SOURCE, Positions
from ..worker.runner import Job, WorkerError, run_job

REQUEST_FAILED = -32803  # LSP RequestFailed
GB_URL = re.compile(r"https://\S+/gb/gb\d+\.html")


def _fail(message: str, kind: str, detail: str = "") -> JsonRpcException:
    return JsonRpcException(message=message, code=REQUEST_FAILED, data={"kind": kind, "detail": detail[-4000:]})


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
        raise _fail(f"cannot read {uri}: {error}", "not-found")


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


async def run_in_worker(ls, task: str, title: str, uri: str, function: str, token=None) -> tuple[dict, str, int | None]:
    if not ls.trusted:
        raise _fail(f"{title} runs your code, so FuseLens only does it in a trusted workspace. "
                    "Trust the workspace in your editor and try again.", "untrusted")
    if not isinstance(uri, str) or not isinstance(function, str) or not function:
        raise _fail(f"{title} needs a document URI and a function name", "invalid")
    path, source, version = _target(ls, uri)
    settings = ls.settings
    root = ls.workspace.root_path if ls.workspace.root_path else None
    job = Job(task, path, source, function, settings.interpreter, settings.worker_timeout_s,
              settings.worker_memory_mb, root=root)
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
        raise _fail(f"{title} of {function} failed: {error.message}", error.kind, error.detail)
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
    ls.results[(uri, function, task)] = result
    return result, source, version


async def explain_dynamo(ls, uri: str, function: str, token=None) -> dict:
    result, source, version = await run_in_worker(ls, "dynamo-explain", "Explain with Dynamo", uri, function, token)
    document = ls.open_document(uri)
    if document is not None and document.version == version:  # else the lines moved: drop them
        state = ls.analyses.state(uri)
        positions = Positions(source, ls.position_encoding)
        state.dynamo = [_break_diagnostic(b, positions, result.get("firstLine", 1)) for b in result["breaks"]]
        ls.dynamo_changed(uri)
    breaks = result["graphBreakCount"]
    ls.notify_user(f"Dynamo: {function} ran as {result['graphCount']} graph(s) with {breaks} graph break(s) "
                   f"in {result['seconds']:.1f} s (inputs from {result.get('inputs')}).")
    return result


def _break_diagnostic(item: dict, positions: Positions, first_line: int) -> types.Diagnostic:
    line, column, end_line, end_column = item.get("location") or (first_line, 0, first_line, 0)
    notes = [s.strip() for s in item.get("detail", "").splitlines()
             if s.strip().startswith(("Explanation:", "Hint:")) and "report an issue" not in s]
    url = GB_URL.search(item.get("detail", ""))
    span = types.Range(start=positions.position(line, column), end=positions.position(end_line, end_column))
    return types.Diagnostic(
        range=span, message="\n".join([f"Graph break (Dynamo): {item['reason']}"] + notes),
        severity=types.DiagnosticSeverity.Warning, source=DYNAMO_SOURCE, code=item.get("gbId"),
        code_description=types.CodeDescription(href=url.group(0)) if url else None)


async def compile_and_profile(ls, uri: str, function: str, token=None) -> dict:
    result, _source, _version = await run_in_worker(ls, "compile-profile", "Compile and profile", uri, function, token)
    return result


async def transformed_program(ls, uri: str, function: str, token=None) -> dict:
    result, _source, _version = await run_in_worker(ls, "transformed-program", "Show transformed program",
                                                    uri, function, token)
    return result


# --- workspace/executeCommand entry points (code lens clicks): arguments [uri, function] ---
async def explain_command(ls, uri: str, function: str):
    return await explain_dynamo(ls, uri, function)


async def profile_command(ls, uri: str, function: str):
    return await compile_and_profile(ls, uri, function)


async def transformed_command(ls, uri: str, function: str):
    return await transformed_program(ls, uri, function)


# --- custom requests: params {"uri", "function", "workDoneToken"?} ---
def plain(value):
    """pygls hands custom-message params over as namedtuples; handlers want dicts."""
    if hasattr(value, "_asdict"):
        return {key: plain(item) for key, item in value._asdict().items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def _params(params) -> tuple[str, str, object]:
    params = plain(params)
    if not isinstance(params, dict):
        raise _fail("expected params {uri, function}", "invalid")
    return params.get("uri"), params.get("function"), params.get("workDoneToken")


async def explain_request(ls, params):
    return await explain_dynamo(ls, *_params(params))


async def transformed_request(ls, params):
    return await transformed_program(ls, *_params(params))


async def profile_request(ls, params):
    uri, function, token = _params(params)
    if plain(params).get("run"):
        return await compile_and_profile(ls, uri, function, token)
    return _stored(ls, uri, function)


def kernels_request(ls, params):
    uri, function, _token = _params(params)
    return _stored(ls, uri, function).get("kernels", [])


def kernel_source_request(ls, params):
    uri, function, _token = _params(params)
    name = plain(params).get("kernel")
    for kernel in _stored(ls, uri, function).get("kernels", []):
        if kernel.get("name") == name:
            return kernel
    raise _fail(f"no kernel named {name!r} in the last profile of {function}", "not-found")


def _stored(ls, uri, function) -> dict:
    result = ls.results.get((uri, function, "compile-profile"))
    if result is None:
        raise _fail(f"no profile of {function} yet: run \"Compile and profile\" first", "no-result")
    return result
