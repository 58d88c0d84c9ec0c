"""The scan of an open document (compile roots, function spans), cached per version and computed
on the analysis thread: a big file must not stall the event loop."""
from __future__ import annotations

import asyncio

from .roots import Scan, scan

EMPTY = Scan([], {})


async def document_scan(ls, document) -> Scan:
    """The scan of the document's current text; while it does not parse, the last good one."""
    uri, version = document.uri, document.version
    cached = ls.scan_cache.get(uri)
    if cached is not None and cached[0] == version:
        return cached[1]
    found = await asyncio.get_running_loop().run_in_executor(ls.analyses.executor, scan, document.source)
    result = found if found is not None else (cached[1] if cached else EMPTY)
    ls.scan_cache[uri] = (version, result)
    return result
