"""Compile and profile (in the worker) and what reads the last profile: `fuselens/profile`,
`fuselens/kernels`, `fuselens/kernelSource` and the `fuselens.showKernel` command."""
from __future__ import annotations

import asyncio

from ..jobs import fail, request_params, run_in_worker
from ..profiles import record
from ..settings import profile_options


async def compile_and_profile(ls, uri: str, function: str, token=None, options: dict | None = None) -> dict:
    """`options` (the request's) override the `fuselens.profile` settings; they are kept with the
    profile for on-save runs, which take the settings as they are then."""
    options, problem = profile_options(options or {})
    if problem:
        raise fail(problem.replace("fuselens.profile", "options"), "invalid")
    result, path, source, _version = await run_in_worker(ls, "compile-profile", "Compile and profile", uri,
                                                         function, token, {**ls.settings.profile, **options})
    result = {**result, "function": function, "uri": uri}
    # Parsing the profiled text (to follow the function through later edits) is the analysis thread's job.
    ls.profiles[(uri, function)] = await asyncio.get_running_loop().run_in_executor(
        ls.analyses.executor, record, uri, function, result, path, source, options)
    ls.views_changed()
    return result


async def command(ls, uri: str, function: str, *options):
    """workspace/executeCommand `fuselens.compileAndProfile` [uri, function, options?]."""
    return await compile_and_profile(ls, uri, function, options=options[0] if options else None)


async def request(ls, params):
    """`fuselens/profile` {uri, function, run?, options?, workDoneToken?}: `run: true` profiles now,
    else the last profile (or null)."""
    params = request_params(params)
    if params.get("run"):
        return await compile_and_profile(ls, params["uri"], params["function"], params.get("workDoneToken"),
                                         params.get("options"))
    profile = ls.profiles.get((params["uri"], params["function"]))
    return profile.result if profile is not None else None


def kernels_request(ls, params):
    """`fuselens/kernels` {uri, function} -> the last profile's kernels."""
    params = request_params(params)
    return _stored(ls, params["uri"], params["function"]).get("kernels", [])


def kernel_source_request(ls, params):
    """`fuselens/kernelSource` {uri, function, kernel} -> {name, language, source}."""
    params = request_params(params)
    return _kernel(ls, params["uri"], params["function"], params.get("kernel"))


def show_kernel(ls, uri: str, function: str, kernel: str):
    """workspace/executeCommand `fuselens.showKernel` [uri, function, kernel] (a "→ kernel0" lens):
    the kernel's source; the client opens it as a document."""
    return _kernel(ls, uri, function, kernel)


def _kernel(ls, uri, function, name) -> dict:
    for kernel in _stored(ls, uri, function).get("kernels", []):
        if kernel.get("name") == name:
            return {"name": name, "language": kernel.get("language"), "source": kernel.get("source", "")}
    raise fail(f"no kernel named {name!r} in the last profile of {function}", "not-found")


def _stored(ls, uri, function) -> dict:
    profile = ls.profiles.get((uri, function))
    if profile is None:
        raise fail(f"no profile of {function} yet: run \"Compile and profile\" first", "no-result")
    return profile.result
