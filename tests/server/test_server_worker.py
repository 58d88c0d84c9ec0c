"""Running user code: only when trusted, always in a worker process that may hang, crash,
eat memory or raise — and the server keeps serving and says what happened."""
from __future__ import annotations

import asyncio
import os
import textwrap

import pytest
import pytest_lsp
from lsprotocol import types
from lsp_harness import CONFIG, initialize, open_document, until
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

MISBEHAVING = textwrap.dedent('''\
    import os
    import time


    def hangs(x):
        return x


    def hangs_example_inputs():
        with open(os.path.join(os.path.dirname(__file__), "worker.pid"), "w") as handle:
            handle.write(str(os.getpid()))
        while True:
            time.sleep(0.05)


    def segfaults(x):
        return x


    def segfaults_example_inputs():
        import ctypes
        ctypes.string_at(0)


    def hogs(x):
        return x


    def hogs_example_inputs():
        chunks = []
        while True:
            chunks.append(bytearray(64 * 2**20))


    def raises(x):
        return x


    def raises_example_inputs():
        return {}["missing"]


    def no_inputs(x):
        return x
''')

DYNAMO = textwrap.dedent('''\
    import torch


    @torch.compile
    def f(x):
        y = x * 2
        print("hi")
        z = y.sum().item()
        return y + z


    def f_example_inputs():
        return (torch.ones(3),)
''')


@pytest_lsp.fixture(config=CONFIG, scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory):
    # A pull client (as VS Code is): Dynamo's results arrive through workspace/diagnostic/refresh.
    await initialize(lsp_client, tmp_path_factory.mktemp("ws"), progress=True, pull=True, options={
        "trusted": True, "settings": {"debounceMs": 20, "worker": {"timeoutS": 60}}})
    yield
    await lsp_client.shutdown_session()


async def command(client, name, uri, function):
    return await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=name, arguments=[uri, function]))


async def failure(client, uri, function, name="fuselens.explainDynamo") -> JsonRpcException:
    with pytest.raises(JsonRpcException) as caught:
        await command(client, name, uri, function)
    return caught.value


def configure(client, **worker):
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"fuselens": {"worker": worker}}))


async def still_serving(client, uri):
    lenses = await asyncio.wait_for(client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri))), 5)
    assert lenses is not None


@pytest.fixture(scope="module")
def user_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("user")


@pytest.fixture(scope="module")
def misbehaving(client, user_folder):
    return open_document(client, user_folder / "user.py", MISBEHAVING)


@pytest.fixture
def pidfile(user_folder):
    """Where the hanging example writes its process id (the worker's pid)."""
    path = user_folder / "worker.pid"
    path.unlink(missing_ok=True)
    return path


async def pull(client, uri):
    return await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))


async def test_explain_with_dynamo_reports_real_breaks_beside_static_ones(client: LanguageClient, tmp_path):
    uri = open_document(client, tmp_path / "model.py", DYNAMO)
    assert {d.source for d in (await pull(client, uri)).items} == {"fuselens"}
    refreshes = client.diagnostic_refresh_count
    result = await command(client, "fuselens.explainDynamo", uri, "f")
    assert result["graphBreakCount"] == 2 and result["inputs"] == "f_example_inputs()"
    await until(lambda: client.diagnostic_refresh_count > refreshes, message="workspace/diagnostic/refresh")
    items = (await pull(client, uri)).items
    dynamo = sorted((d.range.start.line, d.range.start.character, d.code) for d in items if d.source == "dynamo")
    assert dynamo == [(6, 4, "GB0059"), (7, 8, "GB0124")]  # print(...) and y.sum().item()
    assert {d.source for d in items} == {"dynamo", "fuselens"}
    assert any("gb0124" in (d.code_description.href or "") for d in items if d.source == "dynamo")
    assert any("Dynamo: f ran as 3 graph(s) with 2 graph break(s)" in m.message for m in client.messages)
    # Progress was reported, cancellable, with the stages of the run.
    reports = [r for token, values in client.progress_reports.items() for r in values]
    assert any(getattr(r, "cancellable", False) for r in reports)
    assert any("torch._dynamo.explain" in (getattr(r, "message", "") or "") for r in reports)
    # After an edit Dynamo's lines may be wrong, so its diagnostics go; the static ones stay.
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=DYNAMO + "\n")]))
    assert {d.source for d in (await pull(client, uri)).items} == {"fuselens"}


async def test_hanging_worker_times_out(client: LanguageClient, misbehaving):
    configure(client, timeoutS=1.5)
    try:
        error = await failure(client, misbehaving, "hangs")
    finally:
        configure(client, timeoutS=60)
    assert error.data["kind"] == "timeout"
    assert "did not finish within 1.5 s" in error.message and "example inputs" in error.message
    await still_serving(client, misbehaving)


async def test_segfaulting_worker_is_reported_as_a_crash(client: LanguageClient, misbehaving):
    error = await failure(client, misbehaving, "segfaults")
    assert error.data["kind"] == "crash"
    assert "segmentation fault" in error.message and "server is fine" in error.message
    assert "Fatal Python error" in error.data["detail"]  # faulthandler's report, for the log
    await still_serving(client, misbehaving)


async def test_unbounded_allocation_hits_the_memory_limit(client: LanguageClient, misbehaving):
    configure(client, memoryMb=512)
    try:
        error = await failure(client, misbehaving, "hogs")
    finally:
        configure(client, memoryMb=4096)
    assert error.data["kind"] == "memory"
    assert "memory limit (512 MiB" in error.message
    await still_serving(client, misbehaving)


async def test_user_exception_is_reported_with_its_traceback(client: LanguageClient, misbehaving):
    error = await failure(client, misbehaving, "raises")
    assert error.data["kind"] == "user-code"
    assert error.message.endswith("KeyError while building the example inputs: 'missing'")
    assert 'return {}["missing"]' in error.data["detail"] and "child.py" not in error.data["detail"]


async def test_missing_example_inputs_say_how_to_provide_them(client: LanguageClient, misbehaving):
    error = await failure(client, misbehaving, "no_inputs")
    assert error.data["kind"] == "no-inputs"
    assert "def no_inputs_example_inputs()" in error.message


async def test_cancel_request_kills_the_worker(client: LanguageClient, misbehaving, pidfile):
    future = client.protocol.send_request("fuselens/explainDynamo", {"uri": misbehaving, "function": "hangs"},
                                          msg_id="cancel-me")
    await until(lambda: pidfile.exists() and pidfile.read_text(), message="the worker to start")
    pid = int(pidfile.read_text())
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="cancel-me"))
    with pytest.raises(JsonRpcException) as caught:
        await asyncio.wait_for(asyncio.wrap_future(future), 5)
    assert caught.value.code == -32800

    def gone():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False
    await until(gone, timeout=5, message=f"worker {pid} to be killed")
    await still_serving(client, misbehaving)


async def test_cancel_from_the_progress_bar_ends_the_command(client: LanguageClient, misbehaving, pidfile):
    known = set(client.progress_reports)
    task = asyncio.ensure_future(command(client, "fuselens.explainDynamo", misbehaving, "hangs"))
    await until(lambda: pidfile.exists() and pidfile.read_text(), message="the worker to start")
    (token,) = set(client.progress_reports) - known
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    with pytest.raises(JsonRpcException) as caught:
        await asyncio.wait_for(task, 5)
    assert caught.value.code == -32800 and "cancelled" in caught.value.message
    assert client.progress_reports[token][-1].message == "cancelled"


async def test_untrusted_workspace_never_runs_code(client: LanguageClient, misbehaving, pidfile):
    client.protocol.notify("fuselens/setWorkspaceTrust", {"trusted": False})
    try:
        error = await failure(client, misbehaving, "hangs")
    finally:
        client.protocol.notify("fuselens/setWorkspaceTrust", {"trusted": True})
    assert error.data["kind"] == "untrusted" and "trusted workspace" in error.message
    assert not pidfile.exists()


async def test_profile_requests_answer_clearly_before_any_profile(client: LanguageClient, misbehaving):
    assert await client.protocol.send_request_async(
        "fuselens/profile", {"uri": misbehaving, "function": "hangs"}) is None  # no profile yet
    for method in ("fuselens/kernels", "fuselens/kernelSource"):
        with pytest.raises(JsonRpcException) as caught:
            await client.protocol.send_request_async(method, {"uri": misbehaving, "function": "hangs"})
        assert 'run "Compile and profile" first' in caught.value.message
