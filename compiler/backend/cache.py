"""Compile C++ translation units with g++ and cache the shared objects, in memory and on disk.

The key hashes the source, the compiler's identity and flags, and the CPU model and features, so a
cached object never runs on a machine it was not built for. Writes go to a unique temporary file
renamed into place (atomic on POSIX), so concurrent compilers of the same kernel both succeed and
readers never see half a file. An entry that fails to load is treated as corrupt: rebuilt.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import tempfile
import threading
from functools import lru_cache
from pathlib import Path

from .codegen_cpp import LIBMVEC

CXX = os.environ.get("CXX", "g++")
FLAGS = ["-O3", "-march=native", "-fopenmp", "-fno-math-errno", "-fno-trapping-math", "-shared", "-fPIC", "-w", "-x", "c++"]
LIBS = ["-lmvec", "-lm"] if LIBMVEC else ["-lm"]

_memory: dict = {}
_lock = threading.Lock()


class CompileError(RuntimeError):
    pass


def cache_dir() -> Path:
    root = os.environ.get("FUSELENS_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "fuselens")
    path = Path(root) / "kernels"
    path.mkdir(parents=True, exist_ok=True)
    return path


@lru_cache(maxsize=None)
def toolchain_id() -> str:
    """Compiler version + flags + CPU identity: everything besides the source that shapes the binary."""
    try:
        version = subprocess.run([CXX, "-dumpfullversion", "-dumpversion"], capture_output=True, text=True,
                                 timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError) as e:
        raise CompileError(f"C++ compiler {CXX!r} not usable: {e}") from e
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("model name", "flags")):
                    cpu += line
                if cpu.count("\n") >= 2:
                    break
    except OSError:
        pass
    return f"{CXX} {version} {' '.join(FLAGS + LIBS)} {hashlib.sha256(cpu.encode()).hexdigest()[:16]}"


def cache_key(source: str) -> str:
    return hashlib.sha256((toolchain_id() + "\0" + source).encode()).hexdigest()[:32]


def _load(path: Path):
    try:
        lib = ctypes.CDLL(str(path))
        lib.fl_take_error  # a complete object always exports it
        return lib
    except (OSError, AttributeError):
        return None


def _start(source: str, key: str):
    """Begin compiling `source` into the cache; returns (process, tmp_src, tmp_obj, final_path)."""
    final = cache_dir() / f"{key}.so"
    fd, tmp_src = tempfile.mkstemp(suffix=".cpp", prefix=f"{key}.", dir=final.parent)
    with os.fdopen(fd, "w") as f:
        f.write(source)
    tmp_obj = f"{tmp_src[:-4]}.so.tmp"
    proc = subprocess.Popen([CXX, *FLAGS, tmp_src, "-o", tmp_obj, *LIBS], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    return proc, tmp_src, tmp_obj, final


def _finish(job):
    proc, tmp_src, tmp_obj, final = job
    _, err = proc.communicate()
    try:
        if proc.returncode != 0:
            raise CompileError(f"{CXX} failed ({proc.returncode}):\n{err[-4000:]}")
        os.replace(tmp_obj, final)
    finally:
        for p in (tmp_src, tmp_obj):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass
    lib = _load(final)
    if lib is None:
        raise CompileError(f"compiled object {final} does not load")
    return lib


def compile_many(sources: list[str]) -> list:
    """Shared objects for `sources`: from memory, from disk, or by running g++ on all misses at once."""
    keys = [cache_key(s) for s in sources]
    libs: list = [None] * len(sources)
    jobs = {}
    for i, (src, key) in enumerate(zip(sources, keys)):
        with _lock:
            libs[i] = _memory.get(key)
        if libs[i] is not None:
            continue
        path = cache_dir() / f"{key}.so"
        if path.exists():
            libs[i] = _load(path)
            if libs[i] is None:  # corrupt or foreign file: rebuild it
                path.unlink(missing_ok=True)
        if libs[i] is None and key not in jobs:
            jobs[key] = _start(src, key)
    built = {key: _finish(job) for key, job in jobs.items()}
    for i, key in enumerate(keys):
        if libs[i] is None:
            libs[i] = built[key]
        with _lock:
            _memory[key] = libs[i]
    return libs


def clear_memory_cache() -> None:
    with _lock:
        _memory.clear()
