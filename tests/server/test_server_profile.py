"""Compile and profile, kernels, the transformed program, example inputs and on-save runs, through a
real LSP client over stdio. Inductor is skipped here (its cold compile takes 10-20 s); it is covered
by test_compiler_profile.py."""
from __future__ import annotations

import asyncio
import re
import textwrap

import pytest
import pytest_asyncio
import pytest_lsp
from lsprotocol import types
from lsp_harness import CONFIG, initialize, open_document, replace_all, until
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

MODEL = textwrap.dedent('''\
    from __future__ import annotations

    import torch


    @torch.compile
    def f(x, w):
        y = torch.softmax(x @ w, dim=-1)
        z = y * 2 + 1
        print("between")
        return z.relu().sum(-1)


    def f_example_inputs():
        return (torch.randn(8, 16), torch.randn(16, 16))


    def g(x: Float[Tensor, "batch 16"], bias: torch.Tensor,  # shape: bias=(16,)
          scale: float = 2.0):
        return (x * 3 + bias).tanh()


    def h(a, b):
        return a.exp() + b


    def nothing(a):
        return a


    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(16, 16)

        def forward(self, x):
            h = self.lin(x)
            return torch.relu(h) * 3


    def Net_example_inputs():
        return (torch.randn(4, 16),)


    if __name__ == "__main__":
        print("main starts")
        print(h(torch.ones(3), torch.zeros(3)))
''')
F_LINES = {8, 9, 11}  # 1-based lines of f whose ops are fused into kernels
SUMMARY = re.compile(r"^\d+ ops → \d+ kernels? · [\d.]+× vs eager · compiled in [\d.]+ s$")
FAST = {"torchCompile": False, "timingBudgetS": 1.0, "repeats": 5, "warmup": 1}


@pytest_lsp.fixture(config=CONFIG, scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory):
    await initialize(lsp_client, tmp_path_factory.mktemp("ws"), progress=True, refresh=True, options={
        "trusted": True, "settings": {"debounceMs": 20, "worker": {"timeoutS": 120}, "profile": FAST}})
    yield
    await lsp_client.shutdown_session()


@pytest.fixture(scope="module")
def model(client, tmp_path_factory):
    path = tmp_path_factory.mktemp("user") / "model.py"
    return path, open_document(client, path, MODEL)


async def command(client, name, *arguments):
    return await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=name, arguments=list(arguments)))


async def request(client, method, **params):
    return plain(await client.protocol.send_request_async(method, params))


def plain(value):
    """pygls hands custom-request results over as namedtuples."""
    if hasattr(value, "_asdict"):
        return {key: plain(item) for key, item in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def profile(client, model):
    """One profile of f (the run the tests below read), with the progress it reported."""
    known = set(client.progress_reports)
    result = await command(client, "fuselens.compileAndProfile", model[1], "f")
    reports = [r for token in set(client.progress_reports) - known for r in client.progress_reports[token]]
    return result, reports


async def lenses(client, uri):
    found = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    return [lens if lens.command else await client.code_lens_resolve_async(lens) for lens in found]


def kernel_lenses(found, function: str = "f") -> set[tuple[int, str]]:
    return {(lens.range.start.line, lens.command.arguments[2]) for lens in found
            if lens.command.command == "fuselens.showKernel" and lens.command.arguments[1] == function}


async def hints(client, uri):
    return await client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=200, character=0))))


async def test_compile_and_profile_reports_kernels_with_provenance(profile, model):
    result, reports = profile
    path, uri = model
    assert result["function"] == "f" and result["uri"] == uri
    assert SUMMARY.match(result["summary"]), result["summary"]
    assert result["summary"].startswith(f"{result['ops']} ops → {len(result['kernels'])} kernel")
    assert result["correct"] is True and result["maxAbsError"] < 1e-4
    assert result["device"] == "cpu" and result["backend"] == "cpp" and result["torchVersion"].startswith("2.")
    assert result["inputs"] == "f_example_inputs()" and result["inputsSource"] == "convention"
    assert result["regions"] == 2
    assert [(b["line"], b["column"], b["rule"]) for b in result["graphBreaks"]] == [(10, 4, "FL110")]
    assert any("x: Tensor float32[8, 16]" in guard for guard in result["guards"])
    timings = result["timings"]
    assert timings["eagerMs"] > 0 and timings["fuselensMs"] > 0 and timings["repeats"] >= 3
    assert timings["torchCompileMs"] is None and result["speedup"]["vsTorchCompile"] is None
    assert result["compileSeconds"]["torchCompile"] is None and "skipped" in result["reasons"]["torchCompile"]
    assert result["speedup"]["vsEager"] == pytest.approx(timings["eagerMs"] / timings["fuselensMs"], rel=0.01)
    kernels = result["kernels"]
    assert kernels and all(k["language"] == "cpp" and k["source"].startswith(f"// kernel {k['name'].split('.')[-1]}:")
                           for k in kernels)
    fed = {(p["path"], p["line"]) for k in kernels for p in k["provenance"]}
    assert fed == {(str(path), line) for line in F_LINES}
    assert any("amax" in p["ops"] for k in kernels for p in k["provenance"])  # softmax, fused
    # Bytes come from the kernel's buffers, the time from running each kernel on its own.
    assert all(k["bytes"] > 0 and k["timeMs"] > 0 and k["gbps"] > 0 for k in kernels)
    assert [e["provenance"][0]["ops"] for e in result["externs"]] == [["mm"]]  # x @ w: a torch call
    assert "def f_root_v0(x, w):" in result["transformedProgram"]
    messages = [getattr(r, "message", "") or "" for r in reports]
    for stage in ("Importing model.py", "Building example inputs", "Capturing f", "Compiling f with FuseLens",
                  "Timing eager", "Timing FuseLens", "interleaved runs", "Timing each kernel"):
        assert any(stage in m for m in messages), (stage, messages)
    assert any(getattr(r, "cancellable", False) for r in reports)


async def test_lenses_and_inlay_hint_show_the_profile(client, profile, model):
    result, _ = profile
    uri = model[1]
    assert client.refreshes["codeLens"] >= 1 and client.refreshes["inlayHint"] >= 1
    found = await lenses(client, uri)
    titles = [lens.command.title for lens in found if lens.command.arguments[1] == "f"]
    assert f"{result['summary']} · profile again" in titles
    by_line = kernel_lenses(found)
    assert {line + 1 for line, _ in by_line} == F_LINES
    line, name = min(by_line)
    assert any(lens.command.title == f"→ {name}" for lens in found if lens.range.start.line == line)
    shown = await command(client, "fuselens.showKernel", uri, "f", name)
    assert shown["name"] == name and shown["language"] == "cpp" and "_impl(" in shown["source"]
    (hint,) = [h for h in await hints(client, uri) if h.position.line == 6]  # `def f(x, w):`
    assert hint.label == result["summary"] and hint.position.character == len("def f(x, w):")


async def test_requests_read_the_last_profile(client, profile, model):
    result, _ = profile
    uri = model[1]
    assert (await request(client, "fuselens/profile", uri=uri, function="f"))["summary"] == result["summary"]
    kernels = await request(client, "fuselens/kernels", uri=uri, function="f")
    assert [k["name"] for k in kernels] == [k["name"] for k in result["kernels"]]
    source = await request(client, "fuselens/kernelSource", uri=uri, function="f", kernel=kernels[0]["name"])
    assert source == {"name": kernels[0]["name"], "language": "cpp", "source": kernels[0]["source"]}
    with pytest.raises(JsonRpcException) as caught:
        await request(client, "fuselens/kernelSource", uri=uri, function="f", kernel="kernel999")
    assert caught.value.data["kind"] == "not-found"
    assert await request(client, "fuselens/profile", uri=uri, function="h") is None  # never profiled


async def test_transformed_program_shows_the_function_and_its_guards(client, model):
    result = await request(client, "fuselens/transformedProgram", uri=model[1], function="f")
    assert result["function"] == "f"
    assert "def f_root_v0(x, w):" in result["source"] and "print('between')" in result["source"]
    assert "#   x: Tensor float32[8, 16] stride (16, 1) on cpu" in result["source"]  # the guard check
    assert any("w: Tensor float32[16, 16]" in guard for guard in result["guards"])
    assert [(b["line"], b["rule"]) for b in result["graphBreaks"]] == [(10, "FL110")]


async def test_inputs_from_shape_annotations(client, model):
    result = await command(client, "fuselens.compileAndProfile", model[1], "g")
    assert result["inputsSource"] == "annotations" and result["correct"] is True
    assert result["inputs"] == ("shape annotations: x (8, 16) float32; bias (16,) float32 "
                                "(named sizes: batch=8)")


async def test_profile_of_a_module_forward(client, model):
    path, uri = model
    result = await request(client, "fuselens/profile", uri=uri, function="Net.forward", run=True)
    assert result["function"] == "Net.forward" and result["correct"] is True
    assert result["inputs"] == "Net_example_inputs()" and SUMMARY.match(result["summary"])
    assert any("addmm" in p["ops"] for e in result["externs"] for p in e["provenance"])  # the Linear
    assert (str(path), 38) in {(p["path"], p["line"]) for k in result["kernels"] for p in k["provenance"]}
    found = await lenses(client, uri)
    assert any(lens.command.title.startswith(result["summary"]) for lens in found
               if lens.command.arguments[1] == "Net.forward")


async def test_inputs_from_a_call_in_the_main_block(client, model):
    result = await request(client, "fuselens/transformedProgram", uri=model[1], function="h")
    assert result["inputsSource"] == "main"
    assert result["inputs"] == "the call at line 47 in the `__main__` block"
    assert "def h_root_v0(a, b):" in result["source"] and "a: Tensor float32[3]" in result["source"]


async def test_without_inputs_the_message_says_what_was_tried_and_how(client, model):
    with pytest.raises(JsonRpcException) as caught:
        await command(client, "fuselens.compileAndProfile", model[1], "nothing")
    error = caught.value
    assert error.data["kind"] == "no-inputs"
    for part in ("there is no `nothing_example_inputs()`", "no shape annotations",
                 "the `__main__` block (line 45) does not call nothing", "def nothing_example_inputs()",
                 "# shape: (8, 16)"):
        assert part in error.message, part


async def test_untrusted_workspace_refuses_to_profile(client, model):
    client.protocol.notify("fuselens/setWorkspaceTrust", {"trusted": False})
    try:
        with pytest.raises(JsonRpcException) as caught:
            await command(client, "fuselens.compileAndProfile", model[1], "f")
    finally:
        client.protocol.notify("fuselens/setWorkspaceTrust", {"trusted": True})
    assert caught.value.data["kind"] == "untrusted"


async def test_edits_move_or_drop_the_kernel_lenses(client, tmp_path, profile, model):
    uri = model[1]
    before = kernel_lenses(await lenses(client, uri))
    moved = "# a comment\n# another\n" + MODEL
    replace_all(client, uri, moved, version=2)
    assert kernel_lenses(await lenses(client, uri)) == {(line + 2, name) for line, name in before}
    (hint,) = [h for h in await hints(client, uri) if "between" not in h.label and h.position.line == 8]
    assert "before your edits" not in hint.label
    changed = moved.replace("z = y * 2 + 1", "z = y * 3 + 1")
    replace_all(client, uri, changed, version=3)
    found = await lenses(client, uri)
    assert kernel_lenses(found) == set()  # f's text changed: its old kernel lines are stale
    assert any(lens.command.title.endswith("(before your edits) · profile again") for lens in found)
    replace_all(client, uri, MODEL, version=4)
    assert kernel_lenses(await lenses(client, uri)) == before


async def test_on_save_profiles_again_only_when_opted_in(client, profile, model):
    uri = model[1]
    save = types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    known = set(client.progress_reports)
    client.text_document_did_save(save)
    await asyncio.sleep(1.5)
    assert set(client.progress_reports) == known  # not opted in: nothing runs
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"fuselens": {"execution": {"onSave": True}, "profile": FAST}}))
    await lenses(client, uri)  # a round trip: the (asynchronous) settings handler has run
    try:
        client.protocol.notify("fuselens/setWorkspaceTrust", {"trusted": False})
        client.text_document_did_save(save)
        await asyncio.sleep(1.5)
        assert set(client.progress_reports) == known  # opted in, but not trusted: nothing runs
        client.protocol.notify("fuselens/setWorkspaceTrust", {"trusted": True})
        refreshes = client.refreshes["codeLens"]
        client.text_document_did_save(save)

        def reports():
            return [r for t in set(client.progress_reports) - known for r in client.progress_reports[t]]

        # wait for the profile itself: under load, the refresh that follows the settings change can
        # arrive after `refreshes` was read and pass for the profile's
        await until(lambda: any("Capturing f" in (getattr(r, "message", "") or "") for r in reports())
                    and any(getattr(r, "kind", "") == "end" for r in reports()), timeout=120,
                    message="the on-save profile")
        await until(lambda: client.refreshes["codeLens"] > refreshes, timeout=30,
                    message="the lens refresh after the on-save profile")
    finally:
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"fuselens": {"execution": {"onSave": False}}}))
