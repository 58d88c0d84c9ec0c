"""C++ expressions for the C++/OpenMP code generator: scalar types, literals, the math library
(glibc's libmvec vector variants via `omp declare simd`; float exp inline, see `INLINE_MATH`), and
`ExprPrinter`, which renders an expression DAG as one `const` temporary per node (common
sub-expressions are emitted once).
"""
from __future__ import annotations

import math
import os

import torch

from .ir import INDEX, Expr, walk
from .simplify import bounds

CTYPES = {torch.float32: "float", torch.float64: "double", torch.int64: "i64", torch.int32: "i32",
          torch.int16: "i16", torch.int8: "i8", torch.uint8: "u8", torch.bool: "bool"}
LIBMVEC = any(os.path.exists(p) for p in ("/lib/x86_64-linux-gnu/libmvec.so.1", "/usr/lib64/libmvec.so.1",
                                          "/lib64/libmvec.so.1"))

PRELUDE = r"""typedef long long i64; typedef int i32; typedef short i16; typedef signed char i8;
typedef unsigned char u8;
static int fl_err = 0;
extern "C" int fl_take_error(void) { int e = fl_err; fl_err = 0; return e; }
static inline i64 fl_checkidx(i64 v, i64 n) {
  v = v < 0 ? v + n : v;
  if (v < 0 || v >= n) { __atomic_store_n(&fl_err, 1, __ATOMIC_RELAXED); v = 0; }
  return v;
}
template <class T> static inline T fl_max(T a, T b) { return (a != a || a > b) ? a : b; }
template <class T> static inline T fl_min(T a, T b) { return (a != a || a < b) ? a : b; }
// max/min lanes skip NaN and keep the largest |bits| seen instead, NaN iff above inf's bits: an
// integer and + max per element, where a NaN test would be a compare on the busy FMA ports
static inline unsigned fl_nanacc(unsigned m, float v) {
  unsigned a; __builtin_memcpy(&a, &v, 4); a &= 0x7fffffffu; return a > m ? a : m;
}
static inline unsigned long long fl_nanacc(unsigned long long m, double v) {
  unsigned long long a; __builtin_memcpy(&a, &v, 8); a &= 0x7fffffffffffffffULL; return a > m ? a : m;
}
static inline i64 fl_floordiv(i64 a, i64 b) { i64 q = a / b; return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q; }
static inline i64 fl_mod(i64 a, i64 b) { i64 r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
extern "C" int omp_get_thread_num(void); extern "C" int omp_get_num_threads(void);
extern "C" int omp_get_max_threads(void);
"""

# Float exp, inline and branch-free so g++ vectorizes it in `omp simd` loops: softmax-like kernels
# spend most of their compute in it, and libmvec's expf costs ~1.5x as much per element (plus a call
# that spills the loop's vector registers). Error <= 1 ulp over all floats; NaN, +-inf, overflow and
# denormal results as expf. e^x = 2^n e^r, n = rint(x / ln2), |r| <= ln2 / 2 (Cody-Waite: ln2's high
# part has 9 significant bits, so n * it is exact), e^r a degree-6 minimax polynomial. On AVX-512
# (Zen 4) the FMA ports, which also run float compares, bound its throughput; so the rest is integer
# work where it can be: inputs below -104 (e^x rounds to 0) are clamped to -104 by an unsigned min on
# their bits (a float select would be a compare: g++ turns a float clamp into compares), and 2^n takes
# one multiply (half of n goes into p's exponent field). Only overflow and NaN need a compare.
INLINE_MATH = {"fl_expf": r"""// bit casts through memcpy, not __builtin_bit_cast, which g++ < 11 lacks (same code either way)
static inline unsigned fl_bits(float f) { unsigned u; __builtin_memcpy(&u, &f, 4); return u; }
static inline float fl_float(unsigned u) { float f; __builtin_memcpy(&f, &u, 4); return f; }
static inline float fl_expf(float x) {
  // as unsigned, negative floats order by magnitude above all others: -inf and -NaN become -104 too
  const float xc = fl_float(fl_bits(x) < 0xc2d00000u ? fl_bits(x) : 0xc2d00000u);
  const float k = xc * 1.44269504f + 12582912.0f;  // + 1.5 * 2^23 rounds to an integer n, kept in k's low bits
  const float n = k - 12582912.0f;
  const float r = (xc - n * 0.693359375f) + n * 2.12194440e-4f;
  const float p = (((((0.00138436549f * r + 0.00837415550f) * r + 0.0416680016f) * r + 0.166664317f) * r
                   + 0.49999994f) * r + 1.0f) * r + 1.0f;
  // 2^n for n in [-150, 128] as two normal factors 2^h, h = n >> 1, and 2^(n - h): p * 2^h is exact
  // (h added to p's exponent), the product rounds once, also into the denormal range. k's bits
  // shifted left by 23 are n << 23 (the bits above n's leave); by 22 and bit 22 cleared, h << 23.
  const unsigned h = (fl_bits(k) << 22) & 0xff800000u;
  const float y = fl_float(fl_bits(p) + h) * fl_float((fl_bits(k) << 23) - h + 0x3f800000u);
  return x <= 88.7228394f ? y : x + __builtin_inff();  // overflow: inf; NaN (compares false): NaN
}"""}

# op -> (float32 name, float64 name) of math functions; the vectorizable ones are in libmvec.
MATH = {"exp": ("fl_expf", "exp"), "exp2": ("exp2f", "exp2"), "log": ("logf", "log"), "log2": ("log2f", "log2"),
        "log1p": ("log1pf", "log1p"), "expm1": ("expm1f", "expm1"), "tanh": ("tanhf", "tanh"),
        "erf": ("erff", "erf"), "sin": ("sinf", "sin"), "cos": ("cosf", "cos"), "tan": ("tanf", "tan"),
        "atan": ("atanf", "atan"), "pow": ("powf", "pow"), "atan2": ("atan2f", "atan2"), "fmod": ("fmodf", "fmod")}
BUILTIN = {"sqrt": "__builtin_sqrt", "abs": "__builtin_fabs", "floor": "__builtin_floor", "ceil": "__builtin_ceil",
           "trunc": "__builtin_trunc", "round": "__builtin_nearbyint"}
INFIX = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
         "eq": "==", "ne": "!=", "and": "&&", "or": "||", "xor": "!="}
TEMPLATES = {"where": "({0} ? {1} : {2})", "neg": "(-{0})", "not": "(!{0})", "bitnot": "(~{0})",
             "isnan": "({0} != {0})"}
INIT = {"sum": lambda t: "0", "max": lambda t: _lowest(t, True), "min": lambda t: _lowest(t, False)}


def _lowest(dtype, for_max):
    if dtype.is_floating_point:
        return "-__builtin_inf()" if for_max else "__builtin_inf()"
    if dtype == torch.bool:
        return "false" if for_max else "true"
    info = torch.iinfo(dtype)
    return f"(({CTYPES[dtype]}){info.min if for_max else info.max}LL)" if dtype != torch.int64 else (
        "(-9223372036854775807LL - 1)" if for_max else "9223372036854775807LL")


def literal(value, dtype) -> str:
    if dtype == torch.bool:
        return "true" if value else "false"
    if dtype.is_floating_point:
        suffix = "f" if dtype == torch.float32 else ""
        if math.isnan(value):
            return f"__builtin_nan{suffix}(\"\")"
        if math.isinf(value):
            return f"{'-' if value < 0 else ''}__builtin_inf{suffix}()"
        return f"{float(value)!r}{suffix}".replace("inf", "INF")
    return f"{int(value)}LL" if dtype == INDEX else f"(({CTYPES[dtype]}){int(value)})"


class ExprPrinter:
    """Renders expressions as C++ with common sub-expressions bound to locals (CSE at emission)."""

    def __init__(self, ranges, names, math_used):
        self.ranges, self.names, self.math_used = ranges, names, math_used
        self.bounds_memo: dict = {}

    def leaf(self, e: Expr):
        if e.op == "const":
            return literal(e.arg, e.dtype)
        if e.op == "var":
            return self.names.get(e.arg, e.arg)
        if e.op == "acc":
            return self.names.get(e.arg, e.arg)
        return None

    def emit(self, roots, lines, indent, bound):
        """Emit temporaries for the nodes of `roots` not yet in `bound`; returns their C names."""
        for e in walk(roots, stop=bound):
            text = self.leaf(e)
            if text is None:
                text = self.render(e, [bound[a] for a in e.args])
                name = f"t{len(bound)}"
                lines.append(indent + self.declare(name, text, e))
                text = name
            bound[e] = text
        return [bound[r] for r in roots]

    def declare(self, name, text, e) -> str:
        return f"const {CTYPES[e.dtype]} {name} = {text};"

    def nonneg(self, e):
        b = bounds(e, self.ranges, self.bounds_memo)
        return b is not None and b[0] >= 0

    def render(self, e: Expr, a: list[str]) -> str:
        op, t = e.op, e.dtype
        arg_t = e.args[0].dtype if e.args else t
        fsuf = "f" if arg_t == torch.float32 else ""
        if op == "load":
            return f"{self.names[e.arg]}[{a[0]}]"
        if op == "cast":
            if t == torch.bool:
                return f"({a[0]} != 0)"
            return f"(({CTYPES[t]}){a[0]})"
        if op in INFIX:
            return f"({a[0]} {INFIX[op]} {a[1]})"
        if op == "floordiv":
            both = self.nonneg(e.args[0]) and self.nonneg(e.args[1])
            return f"({a[0]} / {a[1]})" if both else f"fl_floordiv({a[0]}, {a[1]})"
        if op == "mod":
            both = self.nonneg(e.args[0]) and self.nonneg(e.args[1])
            return f"({a[0]} % {a[1]})" if both else f"fl_mod({a[0]}, {a[1]})"
        if op in ("max", "min"):
            if t.is_floating_point:
                return f"fl_{op}<{CTYPES[t]}>({a[0]}, {a[1]})"
            cmp = ">" if op == "max" else "<"
            return f"({a[0]} {cmp} {a[1]} ? {a[0]} : {a[1]})"
        if op in TEMPLATES:
            return TEMPLATES[op].format(*a)
        if op == "sign":
            return f"(({CTYPES[t]})(({a[0]} > 0) - ({a[0]} < 0)))"
        if op == "checkidx":
            return f"fl_checkidx({a[0]}, {e.arg}LL)"
        one = literal(1.0, t) if t.is_floating_point else "1"
        if op == "reciprocal":
            return f"({one} / {a[0]})"
        if op == "rsqrt":
            return f"({one} / __builtin_sqrt{fsuf}({a[0]}))"
        if op == "sigmoid":
            exp = MATH["exp"][0 if fsuf else 1]
            self.math_used.add(exp)
            return f"({one} / ({one} + {exp}(-{a[0]})))"
        if not t.is_floating_point and op in ("abs",):
            return f"({a[0]} < 0 ? -{a[0]} : {a[0]})"
        if op in BUILTIN:
            return f"{BUILTIN[op]}{fsuf}({a[0]})"
        if op in MATH:
            if not arg_t.is_floating_point:  # integer pow: compute in double
                self.math_used.add("pow")
                return f"(({CTYPES[t]})pow((double){a[0]}, (double){a[1]}))"
            fn = MATH[op][0 if fsuf else 1]
            self.math_used.add(fn)
            return f"{fn}({', '.join(a)})"
        raise NotImplementedError(f"C++ codegen for {op}")


FLOAT_MATH = {v[0] for v in MATH.values()}


def declare_math(names) -> str:
    out = []
    for fn in sorted(names):
        if fn in INLINE_MATH:
            out.append(INLINE_MATH[fn])
            continue
        ty = "float" if fn in FLOAT_MATH else "double"
        nargs = 2 if fn in ("pow", "powf", "atan2", "atan2f", "fmod", "fmodf") else 1
        simd = "#pragma omp declare simd notinbranch\n" if LIBMVEC and not fn.startswith("fmod") else ""
        out.append(f'{simd}extern "C" {ty} {fn}({", ".join([ty] * nargs)});')
    return "\n".join(out)
