"""Random programs over a small grammar (tensor ops, Python- and tensor-dependent branches, loops,
loops over values made in Python, prints, .item(), in-place ops, data-dependent while loops, aliases, names rebound by statements
that run in Python), compiled vs eager on inputs that flip the data-dependent branches and change
the Python values."""
import os

import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from .generated import make_function
from .harness import check

UNARY = ["torch.sin({})", "torch.relu({})", "{}.abs()", "torch.tanh({})", "F.gelu({})", "{}.exp().clamp(max=5)",
         "torch.sigmoid({})", "-{}", "{}.flip(0)", "F.softmax({}, -1)"]
BINARY = ["{} + {}", "{} - {}", "{} * {}", "torch.maximum({}, {})", "torch.where({0} > {1}, {0}, {1})"]


def helper_print(t):
    u = t * 2
    print("helper", u.shape)
    return u + 1


def helper_branch(t):
    if t.sum() > 0:
        return t - 1
    return t + 1


HELPERS = {"helper_print": helper_print, "helper_branch": helper_branch}


@st.composite
def programs(draw):
    tensors = ["x", "y"]
    counter = [0]
    lines = ["def prog(x, y, n, flag, state):", "    acc = []"]

    def fresh():
        counter[0] += 1
        return f"t{counter[0]}"

    def pick():
        return draw(st.sampled_from(tensors))

    def block(indent, depth, budget):
        pad = "    " * indent
        for _ in range(draw(st.integers(1, budget))):
            kind = draw(st.sampled_from(
                ["unary", "binary", "reduce", "pyif", "flagif", "ddif", "loop", "print", "item", "inplace",
                 "while", "view", "helper", "nograd", "append", "ret", "store", "alias", "rebind", "hostloop"]
                if depth < 2 else
                ["unary", "binary", "reduce", "print", "item", "inplace", "helper", "append", "store", "alias",
                 "rebind"]))
            if kind == "unary":
                v = fresh()
                lines.append(f"{pad}{v} = {draw(st.sampled_from(UNARY)).format(pick())}")
                tensors.append(v)
            elif kind == "binary":
                v = fresh()
                lines.append(f"{pad}{v} = {draw(st.sampled_from(BINARY)).format(pick(), pick())}")
                tensors.append(v)
            elif kind == "reduce":
                v = fresh()
                lines.append(f"{pad}{v} = {pick()}.sum(-1, keepdim=True) * {pick()}")
                tensors.append(v)
            elif kind in ("pyif", "flagif", "ddif"):
                cond = {"pyif": f"n > {draw(st.integers(0, 3))}", "flagif": "flag",
                        "ddif": f"{pick()}.sum() > 0"}[kind]
                target = pick()
                lines.append(f"{pad}if {cond}:")
                lines.append(f"{pad}    {target} = {target} * 2")
                block(indent + 1, depth + 1, 2)
                lines.append(f"{pad}else:")
                lines.append(f"{pad}    {target} = {target} - 1")
            elif kind == "loop":
                target = pick()
                lines.append(f"{pad}for i in range(n):")
                lines.append(f"{pad}    {target} = {target} * 0.5 + i")
                block(indent + 1, depth + 1, 2)
            elif kind == "hostloop":  # a loop over values Python made: guarded, they differ per input
                target = pick()
                lines.append(f"{pad}for w in {pick()}[0, :2].tolist():")
                lines.append(f"{pad}    {target} = {target} * 0.5 + w")
                block(indent + 1, depth + 1, 2)
            elif kind == "print":
                lines.append(f"{pad}print('p', {pick()}.shape, n)")
            elif kind == "item":
                v = fresh()
                lines.append(f"{pad}s = float({pick()}.mean())")
                lines.append(f"{pad}{v} = {pick()} * s")
                tensors.append(v)
            elif kind == "inplace":
                lines.append(f"{pad}{pick()}.add_(1)")
            elif kind == "alias":  # a second name for the same tensor
                v = fresh()
                lines.append(f"{pad}{v} = {pick()}")
                tensors.append(v)
            elif kind == "rebind":  # a statement that runs in Python rebinds a name; an alias keeps the old value
                target, v = pick(), fresh()
                lines.append(f"{pad}{v} = {target}")
                lines.append(f"{pad}{target} = {target} + float({pick()}.sum())")
                tensors.append(v)
            elif kind == "while":
                target = pick()
                lines.append(f"{pad}c = 0")
                lines.append(f"{pad}while {target}.abs().sum() > 1 and c < 3:")
                lines.append(f"{pad}    {target} = {target} * 0.5")
                lines.append(f"{pad}    c += 1")
            elif kind == "view":
                v = fresh()
                lines.append(f"{pad}{v} = {pick()}[0:2]")
                lines.append(f"{pad}{v}.mul_(2)")
                tensors.append(v)
            elif kind == "helper":
                v = fresh()
                lines.append(f"{pad}{v} = {draw(st.sampled_from(sorted(HELPERS)))}({pick()})")
                tensors.append(v)
            elif kind == "nograd":
                v = fresh()
                lines.append(f"{pad}with torch.no_grad():")
                lines.append(f"{pad}    {v} = {pick()} * 3")
                tensors.append(v)
            elif kind == "append":
                lines.append(f"{pad}acc.append({pick()}.sum())")
            elif kind == "ret":
                lines.append(f"{pad}if {pick()}.mean() > 0.5:")
                lines.append(f"{pad}    return {pick()}, len(acc), n")
            elif kind == "store":
                lines.append(f"{pad}state.k = state.k + 1")
                lines.append(f"{pad}state.t = {pick()}.sum()")

    block(1, 0, 6)
    lines.append(f"    return {pick()}, {pick()}, n, len(acc), torch.stack(acc) if acc else None")
    return "\n".join(lines) + "\n"


class State:
    """A Python object the program updates (attribute stores are replayed side effects)."""

    def __init__(self):
        self.k, self.t = 0, None

    def __eq__(self, other):
        return type(other) is State and self.k == other.k and (
            self.t is other.t or (self.t is not None and other.t is not None and torch.allclose(self.t, other.t)))


X = torch.randn(4, 5, generator=torch.Generator().manual_seed(3))
Y = torch.randn(4, 5, generator=torch.Generator().manual_seed(4))


# FL_HYP_N=1000 FL_HYP_RANDOM=1 explores more (and differently) than the default run.
@settings(max_examples=int(os.environ.get("FL_HYP_N", 120)), deadline=None,
          derandomize=not os.environ.get("FL_HYP_RANDOM"), suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs())
def test_random_program(src):
    fn = make_function(src, "prog", HELPERS)
    calls = [((X, Y, 2, True, State()), {}), ((-X, Y, 2, True, State()), {}), ((X * 0.1, -Y, 0, False, State()), {}),
             ((X, Y, 3, True, State()), {}), ((-X, Y, 2, True, State()), {})]
    try:
        check(fn, calls)
    except AssertionError as e:
        raise AssertionError(f"{e}\nprogram:\n{src}") from None


@settings(max_examples=int(os.environ.get("FL_HYP_N", 60)), deadline=None,
          derandomize=not os.environ.get("FL_HYP_RANDOM"), suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_program_dynamic_sizes(src):
    """The same grammar with dynamic=True, called with other sizes: a program that never reads a
    size in Python is reused; one that does must still be right."""
    from fuselens.compiler.capture import compile as fl_compile
    fn = make_function(src, "prog", HELPERS)
    calls = [((X, Y, 2, True, State()), {}), ((X[:3], Y[:3], 2, True, State()), {}),
             ((-X[:, :2], Y[:, :2], 2, True, State()), {}), ((X[:2, :3] * 0.1, -Y[:2, :3], 0, False, State()), {})]
    try:
        check(fn, calls, compiled=fl_compile(fn, dynamic=True))
    except AssertionError as e:
        raise AssertionError(f"{e}\nprogram:\n{src}") from None


@settings(max_examples=int(os.environ.get("FL_HYP_N", 30)), deadline=None,
          derandomize=not os.environ.get("FL_HYP_RANDOM"), suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_program_gradients_through_fuselens_kernels(src):
    """The same grammar on the code generator with inputs that require grad: regions compile forward
    and backward (AOT autograd); outputs, requires_grad flags and input gradients match eager."""
    fn = make_function(src, "prog", HELPERS)
    xg, yg = X.clone().requires_grad_(), Y.clone().requires_grad_()
    calls = [((xg, yg, 2, True, State()), {}), ((-xg.detach().requires_grad_(), yg, 3, False, State()), {})]
    try:
        check(fn, calls, backend="fuselens", atol=1e-4, rtol=1e-3)
    except AssertionError as e:
        raise AssertionError(f"{e}\nprogram:\n{src}") from None
