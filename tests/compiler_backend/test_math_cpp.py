"""The C++ back end's own float exp (`fl_expf` in cpp_expr.py, inline so that it vectorizes): a dense
sweep of float32 inputs against torch eager, ulps against a correctly rounded reference, and the
special values exactly."""
import torch
from fl_helpers import aten_graph, check

from fuselens.compiler.backend import compile_graph

INF, NAN = float("inf"), float("nan")
TINY = torch.finfo(torch.float32).tiny
SPECIAL = [0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, 1e-30, 88.72283, 88.72284, 89.0, 1e30, 3.4028235e38,
           -87.33654, -87.33655, -100.0, -103.27893, -103.972, -103.973, -104.0, -1e30, -3.4028235e38]
# NaNs by their bits: a payload, a signaling one, x86's default (negative), all ones
NANS = torch.tensor([0x7FC00123, 0x7F800001, -0x400000, -1], dtype=torch.int32).view(torch.float32)


def sweep():
    """Every 256th float in [-105, 90] (denormal, zero and overflowing results included) and the
    special values; an odd length, so the scalar remainder of the vector loop is checked too."""
    lo, hi = torch.tensor([105.0, 90.0]).view(torch.int32).tolist()
    pos = torch.arange(0, hi, 256, dtype=torch.int32).view(torch.float32)
    neg = torch.arange(1, lo, 256, dtype=torch.int32).view(torch.float32).neg()
    return torch.cat([pos, neg, torch.tensor(SPECIAL)])


def compiled_exp(x):
    got = compile_graph(aten_graph(torch.exp, x), [x], device_backend="cpp")(x)
    return got[0] if isinstance(got, (tuple, list)) else got


def ulps(a, b):
    """Distance in units in the last place (floats ordered as integers)."""
    def ordered(t):
        i = t.view(torch.int32).to(torch.int64)
        return torch.where(i < 0, -(i & 0x7FFFFFFF), i)
    return (ordered(a) - ordered(b)).abs()


def test_exp_sweep_matches_eager_and_is_within_one_ulp():
    x = sweep()
    assert x.numel() % 16
    info = check(torch.exp, x)  # assert_close at float32's default tolerances, NaN where eager has NaN
    assert "fl_expf(" in info.source
    got, exact = compiled_exp(x), torch.exp(x.double()).float()  # correctly rounded (but for rare double roundings)
    ok = ~x.isnan()
    assert ulps(got[ok], exact[ok]).max() <= 1


def test_exp_special_values_exactly():
    x = torch.cat([torch.tensor(SPECIAL), NANS]).repeat(3)  # 78 elements: vector body and scalar remainder
    got, exact = compiled_exp(x), torch.exp(x.double()).float()
    assert got.isnan().equal(x.isnan())
    assert got[x == -INF].eq(0).all() and got[x == INF].eq(INF).all() and got[x == 0].eq(1).all()
    assert got[x >= 88.72284].eq(INF).all() and got[x < -103.973].eq(0).all()
    denormal = (exact > 0) & (exact < TINY)
    assert denormal.any() and got[denormal].gt(0).all() and got[denormal].lt(TINY).all()
    ok = ~x.isnan()
    assert ulps(got[ok], exact[ok]).max() <= 1


def test_sigmoid_and_softmax_through_the_inline_exp():
    check(torch.sigmoid, sweep())
    rows = torch.randn(37, 131) * 30
    rows[3, :5] = -INF  # masked entries: exp(-inf - max) == 0
    rows[5] = -INF      # a fully masked row: NaN like eager
    check(lambda t: torch.softmax(t, -1), rows)
    check(lambda t: torch.log_softmax(t, -1), rows)
