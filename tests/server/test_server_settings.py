"""Settings: initializationOptions, [tool.fuselens], workspace/configuration, pushed changes."""
from __future__ import annotations

from lsprotocol import types
from lsp_harness import SAMPLE, codes, open_document, published, until


async def test_settings_from_init_options_pyproject_and_pushed_changes(lsp_client_factory, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.fuselens]\nignore = ["FL102"]\nexclude = ["generated"]\n')
    client = await lsp_client_factory(options={"settings": {"severity": {"graph-break": "error"}}})
    uri = open_document(client, tmp_path / "model.py", SAMPLE)
    report = await published(client, uri, version=1)
    assert codes(report.diagnostics) == [(6, "FL110"), (17, "FL110")]  # pyproject ignores FL102
    assert {d.severity for d in report.diagnostics} == {types.DiagnosticSeverity.Error}
    (tmp_path / "generated").mkdir()
    skipped = open_document(client, tmp_path / "generated" / "model.py", SAMPLE)
    assert list((await published(client, skipped, version=1)).diagnostics) == []  # excluded
    # A client without workspace/configuration pushes settings; editor select beats pyproject.
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"fuselens": {"select": ["FL102"], "ignore": []}}))
    await until(lambda: codes(client.diagnostics[uri]) == [(7, "FL102")], message="select applied")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"fuselens": {"select": None, "ignore": ["tensor-item", "FL1"]}}))
    await until(lambda: codes(client.diagnostics[uri]) == [], message="names and prefixes ignored")


async def test_configuration_is_pulled_and_changes_reanalyse(lsp_client_factory, tmp_path):
    client = await lsp_client_factory(configuration=True, configure={"fuselens": {"ignore": ["FL102"]}})
    uri = open_document(client, tmp_path / "model.py", SAMPLE)
    await until(lambda: client.diagnostics.get(uri) is not None and
                codes(client.diagnostics[uri]) == [(6, "FL110"), (17, "FL110")], message="FL102 ignored")
    client.set_configuration({"ignore": ["FL110"]}, section="fuselens")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await until(lambda: codes(client.diagnostics[uri]) == [(7, "FL102")], message="FL110 ignored after change")
    # A bad value is reported to the user, not silently dropped.
    client.set_configuration({"debounceMs": "soon"}, section="fuselens")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await until(lambda: any("debounceMs" in m.message for m in client.messages), message="settings warning")


MODULE_ONLY = """import torch
from torch import nn


class Head(nn.Module):
    def forward(self, x):
        print(x.shape)
        return x * 2
"""


async def test_assume_modules_compiled_setting_turns_module_roots_off(lsp_client_factory, tmp_path):
    client = await lsp_client_factory(options={"settings": {"assumeModulesCompiled": False}})
    uri = open_document(client, tmp_path / "model.py", MODULE_ONLY)
    assert list((await published(client, uri, version=1)).diagnostics) == []  # no compile root
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"fuselens": {"assumeModulesCompiled": True}}))
    await until(lambda: codes(client.diagnostics[uri]) == [(6, "FL110")], message="forward is a root again")
