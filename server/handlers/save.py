"""textDocument/didSave: with `fuselens.execution.onSave` (and a trusted workspace), profile again
the functions of the file that were profiled before — one after the other, in the background.
A newer save cancels the runs of the previous one."""
from __future__ import annotations

import asyncio

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcRequestCancelled

from .profile import compile_and_profile


def did_save(ls, params: types.DidSaveTextDocumentParams) -> None:
    uri = params.text_document.uri
    if not (ls.settings.on_save and ls.trusted):
        return
    functions = [(function, p.options) for (u, function), p in ls.profiles.items() if u == uri]
    if not functions:
        return
    previous = ls.save_jobs.pop(uri, None)
    if previous is not None and not previous.done():
        previous.cancel()
    ls.save_jobs[uri] = asyncio.get_running_loop().create_task(_profile_again(ls, uri, functions))


async def _profile_again(ls, uri: str, functions: list) -> None:
    for function, options in functions:
        try:
            await compile_and_profile(ls, uri, function, options=options)
        except JsonRpcRequestCancelled:
            return
        except JsonRpcException as error:
            ls.notify_user(f"FuseLens: profiling {function} on save failed: {error.message}",
                           types.MessageType.Warning)
