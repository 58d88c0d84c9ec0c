"""GPU: eager vs torch.compile (Inductor) vs FuseLens (Triton backend) on memory-bound cases.

    python bench/gpu_bench.py [--cases softmax,layernorm] [--scale 1.0]

Each case is compiled by both compilers through `torch.compile` (FuseLens as its backend), checked
against eager, then timed with CUDA events (triton.testing.do_bench: L2 flushed between runs,
medians). Effective bandwidth = minimal bytes moved (inputs read once + outputs written once) / time,
printed against a device-to-device copy measured in the same run (the bar: >= 85% of HBM bandwidth).
Needs a CUDA GPU.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compiler_cases import (broadcast, layernorm, logsoftmax_nll, pointwise_chain, residual_norm,  # noqa: E402
                            rmsnorm, rope, softmax, sum_dim0, sum_lastdim, swiglu)
from fuselens.compiler.backend import fuselens_backend  # noqa: E402


def cases(scale: float):
    n = int(8192 * math.sqrt(scale))
    dev = "cuda"
    rand = lambda *s: torch.randn(*s, device=dev)  # noqa: E731
    return {
        "pointwise_chain": (pointwise_chain, (rand(n, n),)),
        "broadcast": (broadcast, (rand(n, n), rand(n), rand(n, 1))),
        "swiglu": (swiglu, (rand(n, n), rand(n, n))),
        "softmax_8k": (softmax, (rand(n, 8192),)),
        "softmax_1k": (softmax, (rand(8 * n, 1024),)),
        "logsoftmax_nll": (logsoftmax_nll, (rand(2 * n, 32000 // 4), torch.randint(0, 8000, (2 * n,), device=dev))),
        "layernorm": (layernorm, (rand(2 * n, 4096), rand(4096), rand(4096))),
        "rmsnorm": (rmsnorm, (rand(2 * n, 4096), rand(4096))),
        "residual_norm": (residual_norm, (rand(2 * n, 4096), rand(2 * n, 4096), rand(4096), rand(4096))),
        "sum_lastdim": (sum_lastdim, (rand(n, n),)),
        "sum_dim0": (sum_dim0, (rand(n, n),)),
        "rope": (rope, (rand(n // 4, 32, 128), rand(n // 4, 1, 128), rand(n // 4, 1, 128))),
    }


def nbytes(values) -> int:
    if isinstance(values, torch.Tensor):
        return values.numel() * values.element_size()
    return sum(nbytes(v) for v in values)


def copy_bandwidth() -> float:
    """Device-to-device copy, bytes read + written per second."""
    from triton.testing import do_bench
    src = torch.empty(1 << 28, device="cuda")
    dst = torch.empty_like(src)
    ms = do_bench(lambda: dst.copy_(src), warmup=25, rep=200)
    return 2 * nbytes(src) / (ms * 1e-3)


def first_call(fn, args) -> float:
    t = time.perf_counter()
    fn(*args)
    torch.cuda.synchronize()
    return time.perf_counter() - t


def main():
    from triton.testing import do_bench
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default="")
    parser.add_argument("--scale", type=float, default=1.0)
    opts = parser.parse_args()
    torch.manual_seed(0)
    bw = copy_bandwidth()
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}  copy bandwidth {bw / 1e9:.0f} GB/s")
    print(f"{'case':<16}{'eager ms':>10}{'inductor':>10}{'fuselens':>10}{'ind/fl':>8}{'eager/fl':>9}"
          f"{'fl GB/s':>9}{'% copy':>8}{'ind %':>7}{'fl cold s':>10}{'ind cold s':>11}  ok")
    selected = set(filter(None, opts.cases.split(",")))
    ratios, fractions, failures = [], {}, []
    for name, (fn, args) in cases(opts.scale).items():
        if selected and name not in selected:
            continue
        torch._dynamo.reset()
        with torch.no_grad():
            inductor = torch.compile(fn)
            fuselens = torch.compile(fn, backend=fuselens_backend)
            fl_cold = first_call(fuselens, args)
            ind_cold = first_call(inductor, args)
            expected = fn(*args)
            try:
                torch.testing.assert_close(fuselens(*args), expected, atol=1e-3, rtol=1e-3)
                ok = "yes"
            except AssertionError as e:
                ok, _ = "NO", failures.append(f"{name}: {str(e).splitlines()[0]}")
            times = [do_bench(lambda f=f: f(*args), warmup=25, rep=100) for f in (fn, inductor, fuselens)]
        moved = nbytes(args) + nbytes(expected)
        eager_ms, ind_ms, fl_ms = times
        fl_frac, ind_frac = moved / (fl_ms * 1e-3) / bw, moved / (ind_ms * 1e-3) / bw
        ratios.append(ind_ms / fl_ms)
        fractions[name] = fl_frac
        print(f"{name:<16}{eager_ms:>10.3f}{ind_ms:>10.3f}{fl_ms:>10.3f}{ind_ms / fl_ms:>8.2f}{eager_ms / fl_ms:>9.2f}"
              f"{moved / (fl_ms * 1e-3) / 1e9:>9.0f}{100 * fl_frac:>7.0f}%{100 * ind_frac:>6.0f}%"
              f"{fl_cold:>10.2f}{ind_cold:>11.2f}  {ok}")
    geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
    below = [n for n, f in fractions.items() if f < 0.85]
    print(f"geomean inductor/fuselens: {geo:.2f}; cases below 85% of copy bandwidth: {', '.join(below) or 'none'}")
    for f in failures:
        print("MISMATCH", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
