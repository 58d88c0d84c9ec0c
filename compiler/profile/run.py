"""The two entry points the worker calls: `profile` and `transformed_program`.

Everything runs under `torch.no_grad()`: the profile is of inference.
"""
from __future__ import annotations

import time

import torch
import torch.utils._pytree as pytree

from ..capture.api import compile as fl_compile
from ..capture.api import explain as fl_explain
from .kernels import Recorder, describe, kernel_times
from .measure import clone, compare, inductor, ratio, rounded, time_variants

DEFAULTS = {
    "torchCompile": True,          # time Inductor too (its cold compile takes 10-20 s on a small CPU)
    "torchCompileBudgetS": 60.0,   # give up on Inductor's compile after this
    "repeats": 20,                 # timed samples per variant (fewer if timingBudgetS runs out)
    "warmup": 2,                   # untimed calls per variant first
    "timingBudgetS": 8.0,          # total time for the timed samples
    "kernelRepeats": 10,           # runs of each graph when timing its kernels one by one
}


def options_with_defaults(options: dict | None) -> dict:
    merged = dict(DEFAULTS)
    merged.update({k: v for k, v in (options or {}).items() if k in DEFAULTS and v is not None})
    return merged


def transformed_program(fn, args, kwargs=None, options=None, *, stage=None, function=None) -> dict:
    say = stage or (lambda name, message: None)
    name = function or _name(fn)
    say("capture", f"Capturing {name} (fuselens.explain)")
    with torch.no_grad():
        report = fl_explain(fn)(*clone(args), **clone(kwargs or {}))
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
    reasons: dict = {}
    with torch.no_grad():
        say("capture", f"Capturing {name} (fuselens.explain)")
        report = fl_explain(fn)(*clone(args), **clone(kwargs))

        say("compile", f"Compiling {name} with FuseLens")
        recorder = Recorder()
        compiled = fl_compile(fn, backend=recorder)
        started = time.perf_counter()
        compiled(*clone(args), **clone(kwargs))
        sync()
        fuselens_seconds = time.perf_counter() - started

        say("check", "Checking FuseLens' results against eager")
        torch.manual_seed(0)
        expected = fn(*clone(args), **clone(kwargs))
        torch.manual_seed(0)
        correct, max_error, why = compare(expected, compiled(*clone(args), **clone(kwargs)))
        if why:
            reasons["correct"] = why

        runners = {"eager": fn, "fuselens": compiled}
        inductor_seconds = None
        if not opts["torchCompile"]:
            reasons["torchCompile"] = "skipped (option torchCompile: false)"
        else:
            say("compile-torch", "Compiling with torch.compile (Inductor)")
            compiled_by_torch, inductor_seconds, why = inductor(fn, args, kwargs, float(opts["torchCompileBudgetS"]),
                                                                sync)
            if compiled_by_torch is None:
                reasons["torchCompile"] = why
            else:
                runners = {"eager": fn, "torchCompile": compiled_by_torch, "fuselens": compiled}
        medians, samples = time_variants(runners, args, kwargs, opts, say, sync)
        say("time-kernels", "Timing each kernel")
        times, why = kernel_times(recorder, int(opts["kernelRepeats"]))
        if why:
            reasons["kernelTime"] = why

    kernels, externs = describe(recorder, times)
    ops = sum(r.num_ops for r in report.regions) if report.regions else recorder.graph_ops
    eager_ms, fl_ms, tc_ms = medians["eager"], medians["fuselens"], medians.get("torchCompile")
    speedup = {"vsEager": ratio(eager_ms, fl_ms), "vsTorchCompile": ratio(tc_ms, fl_ms)}
    compile_seconds = {"fuselens": rounded(fuselens_seconds),
                       "torchCompile": rounded(inductor_seconds) if tc_ms is not None else None}
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
        "graphBreaks": _breaks(report),
        "guards": list(report.guards),
        "timings": {"eagerMs": rounded(eager_ms), "torchCompileMs": rounded(tc_ms), "fuselensMs": rounded(fl_ms),
                    "repeats": samples},
        "speedup": speedup,
        "compileSeconds": compile_seconds,
        "correct": correct,
        "maxAbsError": max_error,
        "kernels": kernels,
        "externs": externs,
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


def render_program(report, name: str) -> str:
    """The transformed program with each unit's guards (in words) above it."""
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


def _name(fn) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__
