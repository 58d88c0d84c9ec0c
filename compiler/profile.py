"""Compile and profile one function for the editor (runs only inside the worker process).

`profile(fn, args, kwargs, options)` captures `fn` with `fuselens.explain`, compiles it with
`fuselens.compile(fn, backend="fuselens")`, checks the result against eager, times eager,
`torch.compile` (Inductor) and FuseLens interleaved, and describes the generated kernels with their
provenance. `transformed_program(...)` is the capture part alone. Both return JSON-able dicts (the
contract with the editor is in docs/server.md); a figure that was not measured is None, with a reason.

Everything runs under `torch.no_grad()`: the profile is of inference.
"""
from __future__ import annotations

import math
import signal
import statistics
import time
from collections import defaultdict

import torch
import torch.utils._pytree as pytree

from .backend import fuselens_backend
from .capture.api import compile as fl_compile
from .capture.api import explain as fl_explain
from .capture.backends import FuseLensBackend

DEFAULTS = {
    "torchCompile": True,          # time Inductor too (its cold compile takes 10-20 s on a small CPU)
    "torchCompileBudgetS": 60.0,   # give up on Inductor's compile after this
    "repeats": 20,                 # timed samples per variant (fewer if timingBudgetS runs out)
    "warmup": 2,                   # untimed calls per variant first
    "timingBudgetS": 8.0,          # total time for the timed samples
}
KERNEL_TIME_REASON = ("not measured per kernel: a graph's kernels run in one native call, so only the "
                      "whole function is timed (timings.fuselensMs)")


class _OutOfTime(BaseException):
    """Raised by the alarm inside torch.compile's compile; BaseException so no `except Exception`
    in Dynamo or Inductor turns it into a fallback."""


class _Recorder(FuseLensBackend):
    """The "fuselens" back end, keeping the CompileInfo of every graph it compiles (in order)."""

    def __init__(self) -> None:
        self.infos: list = []
        self.graph_ops = 0  # ops of graphs that came through torch.compile (no capture report)

    def compile_aten(self, gm, example_inputs):
        compiled = super().compile_aten(gm, example_inputs)
        self._keep(compiled)
        return compiled

    def __call__(self, gm, example_inputs):  # the torch.compile path (functions without source)
        self.graph_ops += sum(n.op == "call_function" for n in gm.graph.nodes)
        compiled = fuselens_backend(gm, example_inputs)
        self._keep(compiled)
        return compiled

    def _keep(self, compiled) -> None:
        info = getattr(compiled, "fuselens_info", None)
        if info is not None and all(info is not other for other in self.infos):
            self.infos.append(info)


def options_with_defaults(options: dict | None) -> dict:
    merged = dict(DEFAULTS)
    merged.update({k: v for k, v in (options or {}).items() if k in DEFAULTS and v is not None})
    return merged


def transformed_program(fn, args, kwargs=None, options=None, *, stage=None, function=None) -> dict:
    say = stage or (lambda name, message: None)
    name = function or _name(fn)
    say("capture", f"Capturing {name} (fuselens.explain)")
    with torch.no_grad():
        report = fl_explain(fn)(*_clone(args), **_clone(kwargs or {}))
    return {"function": name, "source": render_program(report, name), "guards": list(report.guards),
            "graphBreaks": _breaks(report), "capture": report.path, "captureNote": report.path_reason or None}


def profile(fn, args, kwargs=None, options=None, *, stage=None, function=None) -> dict:
    opts = options_with_defaults(options)
    say = stage or (lambda name, message: None)
    kwargs = kwargs or {}
    name = function or _name(fn)
    device = "cuda" if any(isinstance(t, torch.Tensor) and t.is_cuda
                           for t in pytree.tree_leaves((args, kwargs))) else "cpu"
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    reasons: dict = {"kernelTime": KERNEL_TIME_REASON}
    with torch.no_grad():
        say("capture", f"Capturing {name} (fuselens.explain)")
        report = fl_explain(fn)(*_clone(args), **_clone(kwargs))

        say("compile", f"Compiling {name} with FuseLens")
        recorder = _Recorder()
        compiled = fl_compile(fn, backend=recorder)
        started = time.perf_counter()
        compiled(*_clone(args), **_clone(kwargs))
        sync()
        fuselens_seconds = time.perf_counter() - started

        say("check", "Checking FuseLens' results against eager")
        torch.manual_seed(0)
        expected = fn(*_clone(args), **_clone(kwargs))
        torch.manual_seed(0)
        correct, max_error, why = compare(expected, compiled(*_clone(args), **_clone(kwargs)))
        if why:
            reasons["correct"] = why

        runners = {"eager": fn, "fuselens": compiled}
        inductor_seconds = None
        if not opts["torchCompile"]:
            reasons["torchCompile"] = "skipped (option torchCompile: false)"
        else:
            say("compile-torch", "Compiling with torch.compile (Inductor)")
            inductor, inductor_seconds, reason = _inductor(fn, args, kwargs, float(opts["torchCompileBudgetS"]),
                                                           sync)
            if inductor is None:
                reasons["torchCompile"] = reason
            else:
                runners = {"eager": fn, "torchCompile": inductor, "fuselens": compiled}
        medians, samples = _time(runners, args, kwargs, opts, say, sync)

    kernels = _kernels(recorder.infos)
    ops = sum(r.num_ops for r in report.regions) if report.regions else recorder.graph_ops
    eager_ms, fl_ms, tc_ms = medians["eager"], medians["fuselens"], medians.get("torchCompile")
    speedup = {"vsEager": _ratio(eager_ms, fl_ms), "vsTorchCompile": _ratio(tc_ms, fl_ms)}
    compile_seconds = {"fuselens": _round(fuselens_seconds),
                       "torchCompile": _round(inductor_seconds) if tc_ms is not None else None}
    fallbacks = [info.fallback for info in recorder.infos if info.fallback]
    if report.path != "fuselens":
        fallbacks.insert(0, f"not captured from source ({report.path_reason}); compiled through torch.compile")
    return {
        "function": name,
        "summary": summary(ops, len(kernels), speedup, compile_seconds["fuselens"]),
        "device": device,
        "backend": recorder.infos[0].backend if recorder.infos else ("triton" if device == "cuda" else "cpp"),
        "torchVersion": torch.__version__.split("+")[0],
        "ops": ops,
        "regions": len(report.regions),
        "externs": sum(info.externs for info in recorder.infos),
        "graphBreaks": _breaks(report),
        "guards": list(report.guards),
        "timings": {"eagerMs": _round(eager_ms), "torchCompileMs": _round(tc_ms), "fuselensMs": _round(fl_ms),
                    "repeats": samples},
        "speedup": speedup,
        "compileSeconds": compile_seconds,
        "correct": correct,
        "maxAbsError": max_error,
        "kernels": kernels,
        "transformedProgram": render_program(report, name),
        "fallbacks": fallbacks,
        "reasons": reasons,
    }


def summary(ops: int, kernels: int, speedup: dict, compile_s) -> str:
    parts = [f"{ops} op{'s' * (ops != 1)} → {kernels} kernel{'s' * (kernels != 1)}"]
    for key, versus in (("vsEager", "eager"), ("vsTorchCompile", "torch.compile")):
        if speedup[key] is not None:
            parts.append(f"{speedup[key]:.{0 if speedup[key] >= 10 else 1}f}× vs {versus}")
    if compile_s is not None:
        parts.append(f"compiled in {compile_s:.1f} s")
    return " · ".join(parts)


# --- correctness ----------------------------------------------------------------------------------
def compare(expected, actual) -> tuple[bool, float | None, str | None]:
    """(correct, max absolute error, why not) — torch.testing.assert_close's default tolerances."""
    e_leaves, e_spec = pytree.tree_flatten(expected)
    a_leaves, a_spec = pytree.tree_flatten(actual)
    if e_spec != a_spec:
        return False, None, "the compiled function returned a different structure than eager"
    worst, why = 0.0, None
    for e, a in zip(e_leaves, a_leaves):
        if not isinstance(e, torch.Tensor):
            if not isinstance(a, torch.Tensor) and (e == a or (e != e and a != a)):
                continue
            return False, None, f"a non-tensor result differs: {a!r} instead of {e!r}"
        if not isinstance(a, torch.Tensor) or a.shape != e.shape or a.dtype != e.dtype:
            return False, None, "a result has another type, shape or dtype than eager's"
        if e.numel():
            diff = _abs_diff(e, a)
            if diff is None or not math.isfinite(diff):
                return False, None, "NaN or infinity where eager has none (or the other way round)"
            worst = max(worst, diff)
        try:
            torch.testing.assert_close(a, e, equal_nan=True)
        except AssertionError as error:
            why = why or str(error).strip().splitlines()[0]
    return why is None, _round(worst, 9), why


def _abs_diff(e: torch.Tensor, a: torch.Tensor) -> float | None:
    e, a = e.detach().cpu(), a.detach().cpu()
    if e.dtype == torch.bool:
        return float((e != a).any())
    if e.is_complex():
        e, a = torch.view_as_real(e), torch.view_as_real(a)
    e, a = e.to(torch.float64), a.to(torch.float64)
    both_nan = torch.isnan(e) & torch.isnan(a)
    same_inf = torch.isinf(e) & (e == a)
    diff = torch.where(both_nan | same_inf, torch.zeros_like(e), (e - a).abs())
    return float(diff.max())


# --- torch.compile (Inductor) ---------------------------------------------------------------------
def _inductor(fn, args, kwargs, budget: float, sync):
    """(compiled, compile seconds, None) or (None, None, why) within `budget` seconds."""
    compiled = torch.compile(fn)

    def out_of_time(signum, frame):
        raise _OutOfTime()
    previous = signal.signal(signal.SIGALRM, out_of_time)
    signal.setitimer(signal.ITIMER_REAL, max(budget, 0.001))
    started = time.perf_counter()
    try:
        compiled(*_clone(args), **_clone(kwargs))
        sync()
        return compiled, time.perf_counter() - started, None
    except _OutOfTime:
        torch._dynamo.reset()
        return None, None, (f"torch.compile did not finish compiling within {budget:g} s "
                            "(option torchCompileBudgetS) and was abandoned")
    except Exception as error:  # noqa: BLE001 - Inductor failing is a result, not our failure
        torch._dynamo.reset()
        text = str(error).strip().splitlines()
        return None, None, f"torch.compile failed: {type(error).__name__}: {text[0][:300] if text else ''}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --- timing ---------------------------------------------------------------------------------------
_LABELS = {"eager": "eager", "torchCompile": "torch.compile", "fuselens": "FuseLens"}


def _time(runners: dict, args, kwargs, opts: dict, say, sync) -> tuple[dict, int]:
    """Median milliseconds per call of each runner: warmed up, then `repeats` samples taken in
    turn (the order rotates each round), each sample long enough (>= 1 ms) to be timed reliably."""
    per_call, inner = {}, {}
    for key, run in runners.items():
        say(f"time-{key}", f"Timing {_LABELS[key]} (warm-up)")
        for _ in range(max(int(opts["warmup"]), 1)):
            run(*args, **kwargs)
        sync()
        started = time.perf_counter()
        run(*args, **kwargs)
        sync()
        per_call[key] = max(time.perf_counter() - started, 1e-7)
        inner[key] = max(1, min(1000, math.ceil(1e-3 / per_call[key])))
    round_cost = sum(per_call[k] * inner[k] for k in runners)
    samples = max(3, min(int(opts["repeats"]), int(float(opts["timingBudgetS"]) / round_cost)))
    say("timing", f"Timing {' vs '.join(_LABELS[k] for k in runners)}: {samples} interleaved runs")
    times: dict = defaultdict(list)
    order = list(runners)
    for index in range(samples):
        shift = index % len(order)
        for key in order[shift:] + order[:shift]:
            run, count = runners[key], inner[key]
            sync()
            started = time.perf_counter_ns()
            for _ in range(count):
                run(*args, **kwargs)
            sync()
            times[key].append((time.perf_counter_ns() - started) / count / 1e6)
    return {key: statistics.median(values) for key, values in times.items()}, samples


# --- kernels --------------------------------------------------------------------------------------
def _kernels(infos: list) -> list:
    """Every generated kernel with its source and provenance. Names are the back end's; when two
    graphs both have e.g. `kernel0`, every name gets its graph's index: `g1.kernel0`."""
    names = [d.name for info in infos for d in info.kernel_details]
    qualify = len(set(names)) != len(names)
    out = []
    for index, info in enumerate(infos):
        for detail in info.kernel_details:
            lines: dict = {}
            for op, path, line in detail.origins:
                if line is not None:
                    ops = lines.setdefault((path, line), [])
                    op = op[:-len(".default")] if op.endswith(".default") else op
                    if op not in ops:
                        ops.append(op)
            out.append({
                "name": f"g{index}.{detail.name}" if qualify else detail.name,
                "language": info.backend,
                "source": kernel_source(info.source, detail.name, info.backend),
                "provenance": [{"path": path, "line": line, "ops": ops} for (path, line), ops in lines.items()],
                "timeMs": None,
                "bytes": detail.bytes,
                "gbps": None,
                "buffers": [{"name": b, "shape": list(shape), "dtype": dtype, "bytes": size}
                            for b, shape, dtype, size in detail.buffers],
            })
    return out


def kernel_source(source: str, name: str, language: str) -> str:
    """One kernel's part of a generated unit: from its provenance header to the next kernel."""
    marker = "// kernel " if language == "cpp" else "# kernel "
    ends = (marker, 'extern "C"', "def seg")
    kept = None
    for line in source.splitlines():
        if kept is None:
            if line.startswith(f"{marker}{name}:"):
                kept = [line]
        elif line.startswith(ends):
            break
        else:
            kept.append(line)
    return "\n".join(kept).rstrip() + "\n" if kept else source


# --- the transformed program ------------------------------------------------------------------------
def render_program(report, name: str) -> str:
    if report.path != "fuselens":
        return (f"# {name} is not captured from its source ({report.path_reason});\n"
                "# it runs through torch.compile with the FuseLens back end, so there is no transformed program.\n")
    out = [f"# {name}, transformed by FuseLens capture. Each unit runs only while its guards hold;",
           f"# otherwise FuseLens captures {name} again with the new inputs.", ""]
    for unit in report.units:
        out.append(f"# guards of {unit.name} (entry point {unit.entry}), checked before every call:")
        out.extend(f"#   {guard}" for guard in unit.guards)
        if unit.mid_guards:
            out.append("# checked later, where the program reads them:")
            out.extend(f"#   {guard}" for guard in unit.mid_guards)
        out.append(unit.source.rstrip())
        out.append("")
    return "\n".join(out)


def _breaks(report) -> list:
    return [{"path": b.filename, "line": b.line, "column": b.column, "endLine": b.end_line,
             "endColumn": b.end_column, "reason": b.reason, "rule": b.rule, "gbType": b.gb_type}
            for b in report.breaks]


# --- small helpers --------------------------------------------------------------------------------
def _clone(tree):
    """Fresh copies of tensor arguments, so an in-place op in the function cannot change the
    inputs of the next run."""
    return pytree.tree_map(lambda x: x.clone() if isinstance(x, torch.Tensor) else x, tree)


def _name(fn) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__


def _ratio(numerator, denominator):
    if numerator is None or not denominator:
        return None
    return _round(numerator / denominator, 3)


def _round(value, digits: int = 4):
    if value is None or not math.isfinite(value):
        return None
    return float(f"{value:.{digits}g}")
