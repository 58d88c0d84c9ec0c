"""Rewrite passes over expressions: constant folding, algebraic identities, index arithmetic.

Each pass is a pure function Expr -> Expr. `simplify` chains them to a fixed point. Index
simplification needs the ranges of the loop variables (`ranges`: name -> extent) to prove that a
remainder is within [0, c), which is what turns view arithmetic like `(i//c)*c + i%c` back into `i`.
"""
from __future__ import annotations

import math

import torch

from .ir import COMMUTATIVE, INDEX, Expr, const, rebuild, with_args

_PY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "max": max, "min": min, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b, "and": lambda a, b: a and b, "or": lambda a, b: a or b,
    "neg": lambda a: -a, "not": lambda a: not a, "abs": abs,
}


def _fold(e: Expr):
    """The constant value of `e` if all its args are constants and folding is exact, else None."""
    vals = [a.arg for a in e.args]
    if e.op in _PY:
        return _PY[e.op](*vals)
    if e.op == "floordiv" and not e.dtype.is_floating_point and vals[1] != 0:
        return vals[0] // vals[1]
    if e.op == "mod" and not e.dtype.is_floating_point and vals[1] != 0:
        return vals[0] % vals[1]
    if e.op == "truediv" and vals[1] != 0:
        return vals[0] / vals[1]
    if e.op == "where":
        return vals[1] if vals[0] else vals[2]
    if e.op == "cast":
        return vals[0]
    if e.op == "sign" and vals[0] == vals[0]:  # (NaN's sign is NaN: left to the kernel)
        return (vals[0] > 0) - (vals[0] < 0)
    if e.op in ("floor", "ceil", "trunc") and e.dtype.is_floating_point and math.isfinite(vals[0]):
        return getattr(math, e.op)(vals[0])
    if e.op in ("sqrt", "exp", "log") and e.dtype.is_floating_point:
        try:
            return getattr(math, e.op)(vals[0])
        except (ValueError, OverflowError):
            return None
    return None


def fold_constants(e: Expr) -> Expr:
    def fn(node, args):
        node = with_args(node, args)
        if args and all(a.op == "const" for a in args):
            value = _fold(node)
            if value is not None:
                return const(value, node.dtype)
        return node
    return rebuild([e], fn)[0]


def _is(e: Expr, value) -> bool:
    return e.op == "const" and e.arg == value


def _algebra(node: Expr) -> Expr:
    op, args = node.op, node.args
    is_int = not node.dtype.is_floating_point
    if op in COMMUTATIVE and len(args) == 2 and args[0].op == "const" and args[1].op != "const":
        node = with_args(node, (args[1], args[0]))  # canonical order: constant last
        args = node.args
    if op == "add" and _is(args[1], 0):
        return args[0]
    if op == "sub" and _is(args[1], 0):
        return args[0]
    if op == "sub" and is_int and args[0] == args[1]:
        return const(0, node.dtype)
    if op == "mul" and _is(args[1], 1):
        return args[0]
    if op == "mul" and is_int and _is(args[1], 0):
        return args[1]
    if op in ("truediv", "floordiv") and _is(args[1], 1):
        return args[0]
    if op == "truediv" and args[1].op == "const" and node.dtype.is_floating_point:
        c = args[1].arg
        if c != 0 and math.isfinite(c) and math.frexp(c)[0] in (0.5, -0.5):  # power of two: exact
            return Expr("mul", (args[0], const(1.0 / c, node.dtype)), None, node.dtype)
    if op == "mod" and _is(args[1], 1) and is_int:
        return const(0, node.dtype)
    if op in ("neg", "not") and args[0].op == op:
        return args[0].args[0]
    if op in ("max", "min") and args[0] == args[1]:
        return args[0]
    if op == "where":
        if args[0].op == "const":
            return args[1] if args[0].arg else args[2]
        if args[1] == args[2]:
            return args[1]
    if op == "pow" and args[1].op == "const" and node.dtype.is_floating_point:
        p = args[1].arg
        if p == 1:
            return args[0]
        if p == 2:
            return Expr("mul", (args[0], args[0]), None, node.dtype)
        if p == 0.5:
            return Expr("sqrt", (args[0],), None, node.dtype)
        if p == -0.5:
            return Expr("rsqrt", (args[0],), None, node.dtype)
        if p == -1:
            return Expr("reciprocal", (args[0],), None, node.dtype)
    if op == "cast" and args[0].op == "cast":
        inner = args[0].args[0]
        # Widening then narrowing back is the identity (e.g. f32 -> f64 -> f32).
        if inner.dtype == node.dtype and _widens(inner.dtype, args[0].dtype):
            return inner
    return node


def _widens(src: torch.dtype, mid: torch.dtype) -> bool:
    order = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
    if src in order and mid in order:
        return order.index(mid) >= order.index(src)
    if src.is_floating_point and mid.is_floating_point:
        return torch.finfo(mid).bits >= torch.finfo(src).bits
    return False


def simplify_algebra(e: Expr) -> Expr:
    return rebuild([e], lambda node, args: _algebra(with_args(node, args)))[0]


# ---- index arithmetic ------------------------------------------------------------------------

def bounds(e: Expr, ranges: dict[str, int], memo=None):
    """Inclusive (lo, hi) of an integer expression, or None where unknown (e.g. data-dependent)."""
    memo = {} if memo is None else memo
    if e in memo:
        return memo[e]
    op = e.op
    b = None
    if op == "const" and not e.dtype.is_floating_point:
        b = (int(e.arg), int(e.arg))
    elif op == "var" and e.arg in ranges:
        b = (0, max(ranges[e.arg] - 1, 0))
    elif op in ("add", "sub", "mul", "floordiv", "mod", "min", "max") and e.dtype == INDEX:
        x, y = bounds(e.args[0], ranges, memo), bounds(e.args[1], ranges, memo)
        if op == "mod" and y and y[0] > 0:
            b = (x if x and x[0] >= 0 and x[1] < y[0] else None) or (0, y[1] - 1)
        elif x and y:
            if op == "add":
                b = (x[0] + y[0], x[1] + y[1])
            elif op == "sub":
                b = (x[0] - y[1], x[1] - y[0])
            elif op == "mul":
                c = [x[0] * y[0], x[0] * y[1], x[1] * y[0], x[1] * y[1]]
                b = (min(c), max(c))
            elif op == "floordiv" and y[0] == y[1] and y[0] > 0:
                b = (x[0] // y[0], x[1] // y[0])
            elif op in ("min", "max"):
                f = min if op == "min" else max
                b = (f(x[0], y[0]), f(x[1], y[1]))
    memo[e] = b
    return b


def _linear(e: Expr) -> tuple[dict, int]:
    """e as sum(coeff * term) + constant, looking through add/sub/neg and products with constants."""
    if e.op == "const":
        return {}, int(e.arg)
    if e.op in ("add", "sub"):
        (ta, ca), (tb, cb) = _linear(e.args[0]), _linear(e.args[1])
        sign = 1 if e.op == "add" else -1
        terms = dict(ta)
        for t, k in tb.items():
            terms[t] = terms.get(t, 0) + sign * k
        return {t: k for t, k in terms.items() if k}, ca + sign * cb
    if e.op == "neg":
        t, c = _linear(e.args[0])
        return {x: -k for x, k in t.items()}, -c
    if e.op == "mul" and e.args[1].op == "const":
        t, c = _linear(e.args[0])
        k = int(e.args[1].arg)
        return ({x: v * k for x, v in t.items()} if k else {}), c * k
    return {e: 1}, 0


def _from_linear(terms: dict, c: int) -> Expr:
    out = None
    for t, k in terms.items():
        term = t if k == 1 else Expr("mul", (t, const(k)), None, INDEX)
        out = term if out is None else Expr("add", (out, term), None, INDEX)
    if out is None:
        return const(c)
    return out if c == 0 else Expr("add", (out, const(c)), None, INDEX)


def _recombine(terms: dict) -> tuple[dict, int]:
    """k*(x//c)*c + k*(x%c) -> k*x: undoes the split a reshape or a loop merge introduced.
    Returns the new terms and the constant that x's own constant part adds."""
    extra = 0
    changed = True
    while changed:
        changed = False
        for t, k in list(terms.items()):
            if t.op == "mod" and t.args[1].op == "const" and t in terms:
                x, c = t.args
                q = Expr("floordiv", (x, c), None, INDEX)
                if terms.get(q) == k * c.arg:
                    del terms[t], terms[q]
                    x_terms, x_const = _linear(x)
                    for tt, kk in x_terms.items():
                        terms[tt] = terms.get(tt, 0) + kk * k
                    extra += x_const * k
                    terms = {a: b for a, b in terms.items() if b}
                    changed = True
                    break
    return terms, extra


def _index_node(node: Expr, ranges: dict[str, int], memo) -> Expr:
    if node.dtype != INDEX:
        return node
    if node.op in ("add", "sub", "mul", "neg"):
        terms, c = _linear(node)
        terms, extra = _recombine(dict(terms))
        return _from_linear(terms, c + extra)
    if node.op in ("floordiv", "mod") and node.args[1].op == "const" and node.args[1].arg > 0:
        x, c = node.args[0], int(node.args[1].arg)
        xb = bounds(x, ranges, memo)
        if xb and 0 <= xb[0] and xb[1] < c:
            return const(0) if node.op == "floordiv" else x
        if x.op == "floordiv" and x.args[1].op == "const" and node.op == "floordiv":
            return Expr("floordiv", (x.args[0], const(x.args[1].arg * c)), None, INDEX)
        return _exact_multiples(node.op, x, c, ranges, memo) or _split_division(node.op, x, c, ranges, memo) or node
    return node


def _exact_multiples(op: str, x: Expr, c: int, ranges, memo):
    """(c*m + r) // c = m + r // c and (c*m + r) % c = r % c for integer m and any r: terms whose
    coefficient is a multiple of c leave the division."""
    terms, k0 = _linear(x)
    multiples = {t: k // c for t, k in terms.items() if k % c == 0}
    if not multiples and 0 <= k0 < c:
        return None
    rest = _from_linear({t: k for t, k in terms.items() if k % c}, k0 % c)
    part = _index_node(Expr(op, (rest, const(c)), None, INDEX), ranges, memo)
    if op == "mod":
        return part
    return _index_node(Expr("add", (_from_linear(multiples, k0 // c), part), None, INDEX), ranges, memo)


def _split_division(op: str, x: Expr, c: int, ranges, memo):
    """Write x = g*Q + B with g | c and 0 <= B < g; then x // c = Q // (c/g) and
    x % c = g*(Q % (c/g)) + B. The largest such split wins (it removes the most terms)."""
    terms, k0 = _linear(x)
    for th in sorted({abs(k) for k in terms.values()}):
        big = {t: k for t, k in terms.items() if abs(k) >= th}
        g = math.gcd(c, *big.values())
        if g <= 1:
            continue
        small = {t: k for t, k in terms.items() if abs(k) < th}
        b_expr = _from_linear(small, k0 % g)
        bb = bounds(b_expr, ranges, memo)
        if not bb or bb[0] < 0 or bb[1] >= g:
            continue
        q = _from_linear({t: k // g for t, k in big.items()}, (k0 - k0 % g) // g)
        cg = c // g
        if op == "floordiv":
            return q if cg == 1 else Expr("floordiv", (q, const(cg)), None, INDEX)
        if cg == 1:
            return b_expr
        return _from_linear({Expr("mod", (q, const(cg)), None, INDEX): g, **small}, k0 % g)
    return None


def simplify_index(e: Expr, ranges: dict[str, int]) -> Expr:
    memo: dict = {}
    return rebuild([e], lambda node, args: _index_node(with_args(node, args), ranges, memo))[0]


def simplify(e: Expr, ranges: dict[str, int] | None = None, max_rounds: int = 8) -> Expr:
    ranges = ranges or {}
    for _ in range(max_rounds):
        new = simplify_index(simplify_algebra(fold_constants(e)), ranges)
        if new == e:
            return new
        e = new
    return e
