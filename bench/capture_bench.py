"""Capture benchmark: time to capture a 50-op function (target <= 20 ms) and the steady-state
overhead of a compiled one-region function over calling its region directly (target <= 10 us).

    python bench/capture_bench.py
"""
from __future__ import annotations

import statistics
import time

import torch

from fuselens.compiler.capture import compile as fl_compile
from fuselens.compiler.capture import templates


def fifty_ops(x, y):
    a = x * y
    b = a + 1.0
    c = torch.sin(b)
    d = c * x
    e = d - y
    f = torch.relu(e)
    g = f * 0.5
    h = g + a
    i = torch.tanh(h)
    j = i * b
    k = j + c
    l_ = torch.sigmoid(k)
    m = l_ * d
    n = m - e
    o = n.abs()
    p = o + 1e-3
    q = torch.log(p)
    r = q * f
    s = r + g
    t = torch.exp(-s.abs())
    u = t * h
    v = u + i
    w = v * j
    z = w - k
    aa = z * l_
    bb = aa + m
    cc = torch.cos(bb)
    dd = cc * n
    ee = dd + o
    ff = ee * p
    gg = ff - q
    hh = torch.relu(gg)
    ii = hh * r
    jj = ii + s
    kk = torch.tanh(jj)
    ll = kk * t
    mm = ll + u
    nn = mm * v
    oo = nn - w
    pp = oo * z
    qq = pp + aa
    rr = torch.sigmoid(qq)
    ss = rr * bb
    tt = ss + cc
    uu = tt * dd
    vv = uu - ee
    ww = vv * ff
    xx = ww + gg
    yy = xx * hh
    return yy.sum(-1)


def small(x, y):
    return x * y + 1.0


def capture_ms(repeats=15, clear=True):
    """Milliseconds for the first call of a freshly compiled `fifty_ops` (the capture). With
    `clear`, the op-template cache starts empty each time (a function never seen before)."""
    x, y = torch.randn(64, 64), torch.randn(64, 64)
    times = []
    for _ in range(repeats):
        if clear:
            templates._CACHE.clear()
        f = fl_compile(fifty_ops)
        t0 = time.perf_counter()
        f(x, y)
        times.append((time.perf_counter() - t0) * 1e3)
    ops = sum(len(r.ops) for v in f._fuselens.variants() for r in v.regions)
    return statistics.median(times), min(times), ops


def overhead_us(n=20000):
    x, y = torch.randn(8), torch.randn(8)
    f = fl_compile(small)
    f(x, y)
    variant = f._fuselens.variants()[0]
    region = variant.regions[0].run

    def direct():
        return region(x, y)

    def compiled():
        return f(x, y)

    def guard_only():
        return variant.guard(x, y)

    results = {}
    for _ in range(3):  # interleave, keep the best of each
        for name, fn in (("region", direct), ("compiled", compiled), ("guard", guard_only)):
            for _ in range(1000):
                fn()
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            results[name] = min(results.get(name, 1e9), (time.perf_counter() - t0) / n * 1e6)
    return results


def main():
    torch.set_num_threads(1)
    x, y = torch.randn(64, 64), torch.randn(64, 64)
    t0 = time.perf_counter()
    fl_compile(fifty_ops)(x, y)
    first = (time.perf_counter() - t0) * 1e3
    print(f"first capture in this process (torch's fake-tensor internals cold): {first:.1f} ms")
    med, best, ops = capture_ms()
    print(f"capture of a 50-op function ({ops} aten ops), op-template cache empty: median {med:.1f} ms, "
          f"best {best:.1f} ms (target <= 20 ms)")
    med, best, _ = capture_ms(clear=False)
    print(f"capture of the same function again (op templates cached): median {med:.1f} ms, best {best:.1f} ms")
    r = overhead_us()
    print(f"steady state: region called directly {r['region']:.2f} us, compiled function {r['compiled']:.2f} us, "
          f"overhead {r['compiled'] - r['region']:.2f} us (target <= 10 us); guard check alone {r['guard']:.2f} us "
          f"(target <= 5 us)")


if __name__ == "__main__":
    main()
