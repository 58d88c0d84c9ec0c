"""The routing table: every LSP method and command the server answers, and its handler."""
from __future__ import annotations

from lsprotocol import types

from .handlers import (code_actions, code_lens, documents, explain, inlay_hints, lifecycle, profile, pull, save,
                       transformed)

ROUTES = {
    types.INITIALIZE: lifecycle.initialize,
    types.INITIALIZED: lifecycle.initialized,
    types.SHUTDOWN: lifecycle.shutdown,
    types.WORKSPACE_DID_CHANGE_CONFIGURATION: lifecycle.did_change_configuration,
    types.WORKSPACE_DID_CHANGE_WATCHED_FILES: documents.did_change_watched_files,
    types.TEXT_DOCUMENT_DID_OPEN: documents.did_open,
    types.TEXT_DOCUMENT_DID_CHANGE: documents.did_change,
    types.TEXT_DOCUMENT_DID_CLOSE: documents.did_close,
    types.TEXT_DOCUMENT_DID_SAVE: save.did_save,
    types.TEXT_DOCUMENT_CODE_ACTION: code_actions.code_action,
    types.TEXT_DOCUMENT_CODE_LENS: code_lens.code_lens,
    types.CODE_LENS_RESOLVE: code_lens.resolve,
    types.TEXT_DOCUMENT_INLAY_HINT: inlay_hints.inlay_hint,
    # Custom (namespaced) messages.
    "fuselens/setWorkspaceTrust": lifecycle.set_workspace_trust,
    "fuselens/explainDynamo": explain.request,
    "fuselens/transformedProgram": transformed.request,
    "fuselens/profile": profile.request,
    "fuselens/kernels": profile.kernels_request,
    "fuselens/kernelSource": profile.kernel_source_request,
}

OPTIONS = {
    types.TEXT_DOCUMENT_CODE_ACTION: types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
    types.TEXT_DOCUMENT_CODE_LENS: types.CodeLensOptions(resolve_provider=True),
    types.TEXT_DOCUMENT_DID_SAVE: types.SaveOptions(include_text=False),
    types.TEXT_DOCUMENT_INLAY_HINT: types.InlayHintOptions(resolve_provider=False),
}

COMMANDS = {
    "fuselens.explainDynamo": explain.command,
    "fuselens.compileAndProfile": profile.command,
    "fuselens.showTransformedProgram": transformed.command,
    "fuselens.showKernel": profile.show_kernel,
}

# Registered during initialize, only for clients that pull (see lifecycle.initialize).
PULL = (types.TEXT_DOCUMENT_DIAGNOSTIC, pull.diagnostic,
        types.DiagnosticOptions(identifier="fuselens", inter_file_dependencies=False, workspace_diagnostics=False))


def register(server) -> None:
    for method, handler in ROUTES.items():
        server.feature(method, OPTIONS.get(method))(handler)
    for name, handler in COMMANDS.items():
        server.command(name)(handler)


def register_pull(server) -> None:
    method, handler, options = PULL
    if method not in server.protocol.fm.features:
        server.feature(method, options)(handler)
