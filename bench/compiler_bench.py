"""Eager vs torch.compile (Inductor) vs FuseLens, in one process, interleaved, medians.

    python bench/compiler_bench.py [--quick] [--cases softmax,layernorm] [--rounds 7]

FuseLens runs through its own front end, `fuselens.compile(fn, backend="fuselens")` (guarded
source capture, ~2 us per call); the "fl-dyn" column is the same back end under Dynamo,
`torch.compile(fn, backend=fuselens_backend)`. Prints per case: runtime (ms) of each, the
Inductor/FuseLens and eager/FuseLens ratios, cold and warm compile times (first call, capture or
Dynamo included; "(own)" = the back end's share, lowering to loaded kernels; "warm" = a new compiled
object with the kernel caches filled), and for memory-bound cases the effective bandwidth (minimal
bytes moved / time) against a STREAM-like bandwidth measured in the same run. The machine is noisy
(~10% run to run, more under load: the load average is printed): compare columns within one run.
"""
from __future__ import annotations

import argparse
import itertools
import math
import os
import statistics
import sys
import tempfile
import time
import types

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import fuselens  # noqa: E402
from fuselens.compiler.backend import api, fuselens_backend  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compiler_cases import build_cases, runner  # noqa: E402

BUILD_SECONDS = [0.0]  # FuseLens's own share of a compile (lowering to loading kernels)
_ids = itertools.count()


def _count_build_time():
    build = api.build

    def timed(*args, **kwargs):
        t = time.perf_counter()
        try:
            return build(*args, **kwargs)
        finally:
            BUILD_SECONDS[0] += time.perf_counter() - t
    api.build = timed


# ---- measurement ---------------------------------------------------------------------------------

def stream_bandwidth() -> float:
    """GB/s of a triad a = b + s*c and a copy over 256 MiB arrays, best of several (torch, out=)."""
    n = 64 * 1024 * 1024
    a, b, c = torch.empty(n), torch.randn(n), torch.randn(n)
    best = 0.0
    for _ in range(5):
        t = time.perf_counter()
        torch.add(b, c, alpha=0.5, out=a)
        best = max(best, 3 * n * 4 / (time.perf_counter() - t) / 1e9)
        t = time.perf_counter()
        a.copy_(b)
        best = max(best, 2 * n * 4 / (time.perf_counter() - t) / 1e9)
    return best


def fresh(fn):
    """fn behind a new code object: Dynamo caches compiled code per code object, and entries of
    another backend on the same code would be checked (and fail their guards) on every call."""
    def call(*args):
        return fn(*args)
    code = call.__code__.replace(co_name=f"case_{next(_ids)}")
    return types.FunctionType(code, call.__globals__, code.co_name, None, call.__closure__)


def first_call_seconds(fn, backend, run):
    """(compiled, seconds of its first call); backend "fuselens-capture" is fuselens.compile."""
    torch._dynamo.reset()
    if backend == "fuselens-capture":
        compiled = fuselens.compile(fn, backend="fuselens")
    else:
        compiled = torch.compile(fresh(fn), backend=backend)
    BUILD_SECONDS[0] = 0.0
    t = time.perf_counter()
    run(compiled)
    return compiled, time.perf_counter() - t


def time_per_call(f, run, budget=0.05):
    """Median over batches of calls (each batch >= 0.5 ms): on a loaded machine a mean over a time
    window mostly measures other processes' time slices."""
    run(f)
    t = time.perf_counter()
    run(f)
    one = max(time.perf_counter() - t, 1e-7)
    batch = max(1, int(5e-4 / one))
    samples = []
    deadline = time.perf_counter() + budget
    while len(samples) < 3 or (time.perf_counter() < deadline and len(samples) < 200):
        t = time.perf_counter()
        for _ in range(batch):
            run(f)
        samples.append((time.perf_counter() - t) / batch)
    return statistics.median(samples)


def check_same(run, fa, fb, name):
    with torch.no_grad():
        a, b = run(fa), run(fb)
    try:
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-4, equal_nan=True)
        return "ok"
    except AssertionError as e:
        print(f"  MISMATCH in {name}: {str(e).splitlines()[0:3]}", file=sys.stderr)
        return "MISMATCH"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small shapes (a smoke run)")
    ap.add_argument("--cases", default="", help="comma-separated subset")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--no-inductor", action="store_true")
    opts = ap.parse_args()
    torch.set_grad_enabled(False)
    _count_build_time()
    # Fresh caches for both compilers, so "cold" is cold (Inductor's cache dir is read lazily).
    os.environ.setdefault("FUSELENS_CACHE_DIR", tempfile.mkdtemp(prefix="fuselens-bench-"))
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="inductor-bench-"))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; load average {_load()}")
    bw = stream_bandwidth()
    print(f"STREAM-like bandwidth: {bw:.1f} GB/s")
    # Warm up capture, Dynamo and AOT machinery once so per-case compile times measure the compilers.
    first_call_seconds(lambda x: x + 1, "fuselens-capture", lambda f: f(torch.randn(4)))
    first_call_seconds(lambda x: x + 1, fuselens_backend, lambda f: f(torch.randn(4)))
    wanted = set(filter(None, opts.cases.split(",")))
    rows = []
    print(HEADER)
    for name, fn, args, nbytes in build_cases("quick" if opts.quick else "full"):
        if wanted and name not in wanted:
            continue
        run = runner(args)
        impls = {"eager": fn}
        comp = {}
        impls["fuselens"], comp["fl_cold"] = first_call_seconds(fn, "fuselens-capture", run)
        comp["fl_cold_own"] = BUILD_SECONDS[0]
        _, comp["fl_warm"] = first_call_seconds(fn, "fuselens-capture", run)
        comp["fl_warm_own"] = BUILD_SECONDS[0]
        if not opts.no_inductor:
            _, comp["ind_cold"] = first_call_seconds(fn, "inductor", run)
            _, comp["ind_warm"] = first_call_seconds(fn, "inductor", run)
        # The Dynamo-based instances: each on its own code object, compiled after the last reset.
        torch._dynamo.reset()
        impls["fl-dyn"] = torch.compile(fresh(fn), backend=fuselens_backend)
        if not opts.no_inductor:
            impls["inductor"] = torch.compile(fresh(fn))
        for f in impls.values():
            run(f)
        checks = [check_same(run, fn, impls[k], f"{name} ({k})") for k in ("fuselens", "fl-dyn")]
        status = "ok" if checks == ["ok", "ok"] else "MISMATCH"
        samples = {k: [] for k in impls}
        for _ in range(opts.rounds):
            for k, f in impls.items():
                samples[k].append(time_per_call(f, run))
        med = {k: statistics.median(v) for k, v in samples.items()}
        rows.append((name, med, comp, nbytes, status))
        print(_row(name, med, comp, nbytes, bw, status), flush=True)
    print(f"load average at the end: {_load()}")
    _summary(rows, bw)


HEADER = (f"{'case':<18} {'eager ms':>9} {'induct ms':>9} {'fl ms':>9} {'fl-dyn ms':>9} {'ind/fl':>7} {'eag/fl':>7} "
          f"{'fl cold':>8} {'(own)':>7} {'fl warm':>8} {'(own)':>7} {'ind cold':>8} {'ind warm':>8} {'fl GB/s':>8} "
          f"{'%bw':>5} check")


def _row(name, med, comp, nbytes, bw, status):
    fl = med["fuselens"]
    ind = med.get("inductor", float("nan"))
    gbs = nbytes / fl / 1e9 if nbytes else float("nan")
    return (f"{name:<18} {med['eager'] * 1e3:9.3f} {ind * 1e3:9.3f} {fl * 1e3:9.3f} {med['fl-dyn'] * 1e3:9.3f} "
            f"{ind / fl:7.2f} "
            f"{med['eager'] / fl:7.2f} {comp['fl_cold']:7.2f}s {comp['fl_cold_own']:6.3f}s {comp['fl_warm']:7.3f}s "
            f"{comp['fl_warm_own']:6.3f}s "
            f"{comp.get('ind_cold', float('nan')):7.1f}s {comp.get('ind_warm', float('nan')):7.2f}s "
            f"{gbs:8.1f} {100 * gbs / bw if nbytes else float('nan'):5.0f} {status}")


def _summary(rows, bw):
    print()
    print(HEADER)
    for name, med, comp, nbytes, status in rows:
        print(_row(name, med, comp, nbytes, bw, status))
    if rows and "inductor" in rows[0][1]:
        geo = _geo(r[1]["inductor"] / r[1]["fuselens"] for r in rows)
        dyn = _geo(r[1]["inductor"] / r[1]["fl-dyn"] for r in rows)
        print(f"\ngeomean Inductor/FuseLens: {geo:.2f}x (through Dynamo: {dyn:.2f}x)")
        print(f"geomean cold compile: FuseLens {_geo(r[2]['fl_cold'] for r in rows):.2f}s, "
              f"Inductor {_geo(r[2]['ind_cold'] for r in rows):.1f}s")
    print(f"geomean eager/FuseLens: {_geo(r[1]['eager'] / r[1]['fuselens'] for r in rows):.2f}x; "
          f"worst eager/FuseLens: {min(r[1]['eager'] / r[1]['fuselens'] for r in rows):.2f}x "
          f"({min(rows, key=lambda r: r[1]['eager'] / r[1]['fuselens'])[0]})")
    print(f"FuseLens compile, own part (lowering..loaded kernels): cold max "
          f"{max(r[2]['fl_cold_own'] for r in rows) * 1e3:.0f} ms, warm max "
          f"{max(r[2]['fl_warm_own'] for r in rows) * 1e3:.0f} ms; first call incl. Dynamo: warm max "
          f"{max(r[2]['fl_warm'] for r in rows) * 1e3:.0f} ms")


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _geo(xs):
    xs = list(xs)
    return math.exp(statistics.mean(math.log(x) for x in xs))


if __name__ == "__main__":
    main()
