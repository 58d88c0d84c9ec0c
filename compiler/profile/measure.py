"""Measurements for the profile: correctness against eager, torch.compile (Inductor) within a time
budget, and interleaved timing of the variants. Nothing here invents a number: what could not be
measured is None and the caller says why."""
from __future__ import annotations

import math
import signal
import statistics
import time
from collections import defaultdict

import torch
import torch.utils._pytree as pytree

LABELS = {"eager": "eager", "torchCompile": "torch.compile", "fuselens": "FuseLens"}


class _OutOfTime(BaseException):
    """Raised by the alarm inside torch.compile's compile; BaseException so no `except Exception`
    in Dynamo or Inductor turns it into a fallback."""


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
            if not math.isfinite(diff):
                return False, None, "NaN or infinity where eager has none (or the other way round)"
            worst = max(worst, diff)
        try:
            torch.testing.assert_close(a, e, equal_nan=True)
        except AssertionError as error:
            why = why or str(error).strip().splitlines()[0]
    return why is None, rounded(worst, 9), why


def _abs_diff(e: torch.Tensor, a: torch.Tensor) -> float:
    e, a = e.detach().cpu(), a.detach().cpu()
    if e.dtype == torch.bool:
        return float((e != a).any())
    if e.is_complex():
        e, a = torch.view_as_real(e), torch.view_as_real(a)
    e, a = e.to(torch.float64), a.to(torch.float64)
    both_nan = torch.isnan(e) & torch.isnan(a)
    same_inf = torch.isinf(e) & (e == a)
    return float(torch.where(both_nan | same_inf, torch.zeros_like(e), (e - a).abs()).max())


# --- torch.compile (Inductor) ---------------------------------------------------------------------
def inductor(fn, args, kwargs, budget: float, sync):
    """(compiled, compile seconds, None) or (None, None, why) within `budget` seconds."""
    compiled = torch.compile(fn)

    def out_of_time(signum, frame):
        raise _OutOfTime()
    previous = signal.signal(signal.SIGALRM, out_of_time)
    signal.setitimer(signal.ITIMER_REAL, max(budget, 0.001))
    started = time.perf_counter()
    try:
        compiled(*clone(args), **clone(kwargs))
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
def time_variants(runners: dict, args, kwargs, opts: dict, say, sync) -> tuple[dict, int]:
    """Median milliseconds per call of each runner: warmed up, then `repeats` samples taken in
    turn (the order rotates each round), each sample long enough (>= 1 ms) to be timed reliably."""
    per_call, inner = {}, {}
    for key, run in runners.items():
        say(f"time-{key}", f"Timing {LABELS[key]} (warm-up)")
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
    say("timing", f"Timing {' vs '.join(LABELS[k] for k in runners)}: {samples} interleaved runs")
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


# --- small helpers --------------------------------------------------------------------------------
def clone(tree):
    """Fresh copies of tensor arguments, so an in-place op in the function cannot change the
    inputs of the next run."""
    return pytree.tree_map(lambda x: x.clone() if isinstance(x, torch.Tensor) else x, tree)


def ratio(numerator, denominator):
    if numerator is None or not denominator:
        return None
    return rounded(numerator / denominator, 3)


def rounded(value, digits: int = 4):
    if value is None or not math.isfinite(value):
        return None
    return float(f"{value:.{digits}g}")
