"""FuseLens worker process: runs the user's code on the server's behalf.

Started as a script (`python child.py`) with the user's interpreter, so it needs nothing but
the standard library (and torch for the tasks that use it) — not pygls, not FuseLens itself.

Protocol (version 1): one JSON request on stdin; JSON lines on the *original* stdout, which
the worker keeps for itself before pointing fd 1 at stderr (user prints cannot corrupt it):
    {"event": "stage", "stage": "import"|"inputs"|"run"|<a task's stage>, "message": "..."}
    {"event": "result", "result": {...}}
    {"event": "error", "kind": "...", "message": "...", "traceback": "..."}
Exactly one of result/error ends a run that did not crash. See docs/server.md.
"""
import gc
import json
import os
import resource
import sys
import traceback
import types

# sys.path[0] is this folder while the sibling modules load; the user's folder replaces it.
import fuselens_worker_inputs as inputs  # noqa: E402
import fuselens_worker_tasks as tasks  # noqa: E402

PROTOCOL = 1
MODULE_NAME = "__fuselens_target__"


class Channel:
    def __init__(self) -> None:
        self._out = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
        os.dup2(2, 1)

    def emit(self, **event) -> None:
        self._out.write(json.dumps(event, default=str) + "\n")
        self._out.flush()


def apply_limits(limits: dict) -> None:
    memory = limits.get("memory_bytes")
    if memory:
        # Address space, not RSS: it makes large allocations fail with MemoryError in the
        # worker instead of letting the machine swap or the OOM killer pick a victim.
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    cpu = limits.get("cpu_seconds")
    if cpu:
        # Backstop for a server that died without killing us.
        resource.setrlimit(resource.RLIMIT_CPU, (int(cpu), int(cpu) + 5))
    try:  # die with the server (Linux)
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def load_module(path: str, source: str, root: str | None):
    folder = os.path.dirname(os.path.abspath(path)) if os.path.isabs(path) else os.getcwd()
    sys.path[0] = folder
    if root and root not in sys.path:
        sys.path.insert(1, root)
    module = types.ModuleType(MODULE_NAME)
    module.__file__ = path
    sys.modules[MODULE_NAME] = module
    exec(compile(source, path, "exec"), module.__dict__)
    return module


def user_traceback(error: BaseException, path: str) -> str:
    """The traceback from the first frame in the user's file on (the worker's frames are noise)."""
    frames = traceback.extract_tb(error.__traceback__)
    for index, frame in enumerate(frames):
        if frame.filename == path:
            frames = frames[index:]
            break
    lines = traceback.format_list(frames) + traceback.format_exception_only(type(error), error)
    return "".join(lines)


def main() -> int:
    channel = Channel()
    request = json.loads(sys.stdin.read())
    if request.get("protocol") != PROTOCOL:
        channel.emit(event="error", kind="internal",
                     message=f"worker speaks protocol {PROTOCOL}, got {request.get('protocol')}")
        return 2
    apply_limits(request.get("limits", {}))
    path, function = request["path"], request["function"]
    task = tasks.TASKS.get(request["task"])
    if task is None:
        channel.emit(event="error", kind="internal", message=f"unknown task {request['task']!r}")
        return 2
    stage = "prepare"
    try:
        task.prepare()
        stage = "import"
        channel.emit(event="stage", stage=stage, message=f"Importing {os.path.basename(path)}")
        module = load_module(path, request["source"], request.get("root"))
        stage = "inputs"
        channel.emit(event="stage", stage=stage, message=f"Building example inputs for {function}")
        target, args, kwargs, (kind, how) = inputs.resolve(module, function, request["source"], path)
        stage = "run"
        channel.emit(event="stage", stage=stage, message=task.running_message(function))
        result = task.run(target, args, kwargs, path=path, source=request["source"], function=function,
                          options=request.get("options", {}),
                          stage=lambda name, message: channel.emit(event="stage", stage=name, message=message))
        result["inputs"], result["inputsSource"] = how, kind
    except tasks.TaskError as error:
        channel.emit(event="error", kind=error.kind, message=str(error), stage=stage)
        return 1
    except MemoryError as error:
        text = user_traceback(error, path)
        error.__traceback__ = None
        del error
        gc.collect()
        channel.emit(event="error", kind="memory", stage=stage, traceback=text,
                     message="the code ran out of memory: it exceeded the worker's memory limit "
                             f"({request.get('limits', {}).get('memory_bytes', 0) // 2**20} MiB, "
                             "setting fuselens.worker.memoryMb)")
        return 1
    except BaseException as error:  # user code may raise anything, SystemExit included
        where = {"import": "importing the file", "inputs": "building the example inputs",
                 "run": f"running {function}", "prepare": "preparing the task"}[stage]
        channel.emit(event="error", kind="user-code", stage=stage, traceback=user_traceback(error, path),
                     message=f"{type(error).__name__} while {where}: {error}")
        return 1
    channel.emit(event="result", result=result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
