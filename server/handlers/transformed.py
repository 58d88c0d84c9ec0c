"""Show transformed program: FuseLens' capture of the function (regions, fallbacks, guards) as the
Python program it runs, from the worker."""
from __future__ import annotations

from ..jobs import request_params, run_in_worker


async def transformed_program(ls, uri: str, function: str, token=None, options: dict | None = None) -> dict:
    result, _path, _source, _version = await run_in_worker(ls, "transformed-program", "Show transformed program",
                                                           uri, function, token, options)
    return result


async def command(ls, uri: str, function: str, *options):
    """workspace/executeCommand `fuselens.showTransformedProgram` [uri, function]."""
    return await transformed_program(ls, uri, function, options=options[0] if options else None)


async def request(ls, params):
    """`fuselens/transformedProgram` {uri, function, workDoneToken?} -> {function, source, guards, graphBreaks}."""
    params = request_params(params)
    return await transformed_program(ls, params["uri"], params["function"], params.get("workDoneToken"),
                                     params.get("options"))
