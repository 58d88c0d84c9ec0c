"""Server side of the worker: start it, feed it the request, read its events, and make sure it
ends — by itself, by the timeout, or by cancellation — without ever taking the server along."""
from __future__ import annotations

import asyncio
import collections
import json
import os
import signal
from dataclasses import dataclass, field
from pathlib import Path

CHILD = str(Path(__file__).with_name("child.py"))
PROTOCOL = 1
STDERR_TAIL = 64 * 1024

_SIGNALS = {
    signal.SIGSEGV: "a segmentation fault (SIGSEGV)",
    signal.SIGABRT: "an abort (SIGABRT)",
    signal.SIGKILL: "SIGKILL (killed; often the system running out of memory)",
    signal.SIGBUS: "a bus error (SIGBUS)",
    signal.SIGFPE: "a floating-point exception (SIGFPE)",
    signal.SIGILL: "an illegal instruction (SIGILL)",
    signal.SIGXCPU: "the CPU-time limit (SIGXCPU)",
}


class WorkerError(Exception):
    """The run did not produce a result. `kind`: timeout, crash, memory, user-code, no-inputs,
    not-found, unavailable, internal. `detail`: the user traceback or the worker's stderr tail."""

    def __init__(self, kind: str, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.kind, self.message, self.detail = kind, message, detail


@dataclass
class Job:
    task: str
    path: str
    source: str
    function: str
    interpreter: tuple[str, ...]
    timeout_s: float
    memory_mb: int
    root: str | None = None
    options: dict = field(default_factory=dict)

    def request(self) -> dict:
        return {"protocol": PROTOCOL, "task": self.task, "path": self.path, "source": self.source,
                "function": self.function, "root": self.root, "options": self.options,
                "limits": {"memory_bytes": self.memory_mb * 2**20,
                           # CPU time counts every thread: a backstop, the timeout is what ends runs.
                           "cpu_seconds": int(self.timeout_s * (os.cpu_count() or 1)) + 5}}


async def run_job(job: Job, on_stage=None) -> dict:
    """Runs one job in a fresh worker process and returns its result, or raises WorkerError
    (or CancelledError, after killing the worker)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONFAULTHANDLER="1", PYTHONDONTWRITEBYTECODE="1")
    try:
        process = await asyncio.create_subprocess_exec(
            *job.interpreter, CHILD, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, cwd=job.root or None, env=env, start_new_session=True)
    except OSError as error:
        raise WorkerError("internal", f"cannot start the worker with {' '.join(job.interpreter)}: {error}")
    stderr: collections.deque[bytes] = collections.deque()
    state = {"stage": "start", "end": None}

    async def read_events():
        while line := await process.stdout.readline():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == "stage":
                state["stage"] = event.get("stage", state["stage"])
                if on_stage is not None:
                    on_stage(event.get("message", state["stage"]))
            elif event.get("event") in ("result", "error"):
                state["end"] = event

    async def read_stderr():
        size = 0
        while chunk := await process.stderr.read(8192):
            stderr.append(chunk)
            size += len(chunk)
            while size > STDERR_TAIL and len(stderr) > 1:
                size -= len(stderr.popleft())

    readers = asyncio.gather(read_events(), read_stderr())
    try:
        process.stdin.write(json.dumps(job.request()).encode())
        await process.stdin.drain()
        process.stdin.close()
    except (BrokenPipeError, ConnectionResetError):
        pass  # it died at once; the exit status says why
    async def finish():
        await readers
        await process.wait()

    try:
        await asyncio.wait_for(finish(), job.timeout_s)
    except asyncio.TimeoutError:
        _kill(process)
        await process.wait()
        raise WorkerError("timeout", f"the run did not finish within {job.timeout_s:g} s "
                          f"(while {_doing(state['stage'])}) and was stopped; raise "
                          "fuselens.worker.timeoutS if it needs longer", _tail(stderr))
    except asyncio.CancelledError:
        _kill(process)
        await asyncio.shield(process.wait())
        raise
    return _outcome(process.returncode, state, stderr)


def _outcome(returncode: int, state: dict, stderr) -> dict:
    end = state["end"]
    if end is not None and end["event"] == "result":
        return end["result"]
    if end is not None:
        raise WorkerError(end.get("kind", "internal"), end.get("message", "the worker failed"),
                          end.get("traceback") or _tail(stderr))
    if returncode < 0:
        try:
            name = _SIGNALS.get(signal.Signals(-returncode), signal.Signals(-returncode).name)
        except ValueError:
            name = f"signal {-returncode}"
        raise WorkerError("crash", f"the worker process crashed with {name} while "
                          f"{_doing(state['stage'])}; the server is fine", _tail(stderr))
    raise WorkerError("crash", f"the worker process exited with status {returncode} while "
                      f"{_doing(state['stage'])} without a result", _tail(stderr))


def _doing(stage: str) -> str:
    return _STAGES.get(stage, stage)


_STAGES = {
    "start": "starting", "import": "importing the file", "inputs": "building the example inputs",
    "run": "running the function", "capture": "capturing the function", "compile": "compiling with FuseLens",
    "check": "checking the results against eager", "compile-torch": "compiling with torch.compile",
    "time-eager": "timing eager", "time-torchCompile": "timing torch.compile", "time-fuselens": "timing FuseLens",
    "timing": "timing eager, torch.compile and FuseLens", "time-kernels": "timing each kernel",
}


def _kill(process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)  # the whole group: user code may have forked
    except (ProcessLookupError, PermissionError):
        pass


def _tail(chunks) -> str:
    return b"".join(chunks).decode("utf-8", errors="replace")[-STDERR_TAIL:]
