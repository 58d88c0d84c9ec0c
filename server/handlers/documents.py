"""Document sync: (re)analyse on open and change; forget on close."""
from __future__ import annotations

from lsprotocol import types


def _is_python(uri: str, language_id: str | None) -> bool:
    return language_id == "python" or uri.endswith((".py", ".pyi"))


def did_open(ls, params: types.DidOpenTextDocumentParams) -> None:
    document = params.text_document
    if not _is_python(document.uri, document.language_id):
        return
    ls.open_uris.add(document.uri)
    ls.analyses.schedule(document.uri, 0)  # no typing to wait out


def did_change(ls, params: types.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    if uri not in ls.open_uris:
        return
    state = ls.analyses.state(uri)
    if state.dynamo:
        # Dynamo's breaks describe the code as it ran; after an edit their lines may be wrong.
        state.dynamo = []
        state.generation += 1
    ls.analyses.schedule(uri, ls.settings.debounce_s)


def did_change_watched_files(ls, params: types.DidChangeWatchedFilesParams) -> None:
    # Only pyproject.toml is watched: its [tool.fuselens] table is part of the config.
    if any(change.uri.endswith("pyproject.toml") for change in params.changes):
        ls.configs.clear()
        ls.analyses.schedule_all()
        ls.refresh_pull()


def did_close(ls, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    if uri not in ls.open_uris:
        return
    ls.open_uris.discard(uri)
    ls.analyses.forget(uri)
    ls.scan_cache.pop(uri, None)
    if not ls.pull_mode:  # the editor keeps pushed diagnostics until told otherwise
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
