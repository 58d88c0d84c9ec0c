"""Programs for the differential suite: each `@case` registers a function with the calls to make.

Calls come in sequence on one compiled object: the first captures, later ones check guards
(reuse or recapture) and data-dependent branches taking the other side ("flips")."""
from __future__ import annotations

import collections
import logging
import math
import random
import time
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

CASES = []


def case(*calls, name=None, atol=1e-5):
    """`calls`: tuples of positional args, or (args, kwargs) wrapped in `kw(...)`."""
    def deco(fn):
        norm = [c if isinstance(c, Kw) else Kw(c, {}) for c in calls]
        CASES.append((name or fn.__name__, fn, [(c.args, c.kwargs) for c in norm], atol))
        return fn
    return deco


class Kw:
    def __init__(self, args, kwargs):
        self.args, self.kwargs = args, kwargs


def kw(*args, **kwargs):
    return Kw(args, kwargs)


def r(*shape, dtype=torch.float32, grad=False, seed=None):
    g = torch.Generator().manual_seed(seed if seed is not None else hash(shape) % 1000)
    t = torch.randn(*shape, generator=g).to(dtype)
    return t.requires_grad_(True) if grad else t


A, B = r(4, 8, seed=1), r(4, 8, seed=2)
M8 = r(8, 8, seed=3)
V = r(8, seed=4)
POS, NEG = r(4, 8, seed=5).abs() + 0.1, -(r(4, 8, seed=6).abs() + 0.1)

# --- straight-line tensor code -------------------------------------------------------------------


@case((A, B), (r(3, 8), r(3, 8)))
def pointwise_chain(x, y):
    a = torch.sin(x) * 2 + y
    b = a.exp().clamp(max=10) - torch.tanh(y)
    return b / (1 + b.abs())


@case((A,), (r(2, 3, 8),))
def reductions(x):
    return x.sum(-1), x.mean(dim=0), x.amax(-1), x.std(-1), x.norm(dim=-1), x.logsumexp(-1)


@case((A, M8))
def matmul_ops(x, w):
    y = x @ w
    z = torch.mm(x, w.t()) + torch.matmul(x, w)
    return F.linear(y, w, V) + z


@case((r(2, 3, 4),))
def views_and_permutes(x):
    a = x.view(2, 12).t().contiguous()
    b = x.permute(2, 0, 1).reshape(4, -1)
    c = x.transpose(0, 1).flatten(1)
    return a.sum() + b.sum() + c.sum(), x.unsqueeze(0).squeeze(0).expand(2, 3, 4).clone()


@case((r(6, 5),))
def indexing(x):
    a = x[1:4, ::2]
    b = x[..., -1]
    c = x[torch.tensor([0, 2, 5])]
    d = x[None, 2]
    return a * 2, b + 1, c.sum(0), d


@case((A, B))
def cat_stack_split(x, y):
    c = torch.cat([x, y], dim=0)
    s = torch.stack((x, y), dim=-1)
    p, q = c.split(4)
    chunks = torch.chunk(s, 2, dim=1)
    return p + q, chunks[0].sum(), s.unbind(-1)[1]


@case((A,))
def creation_ops(x):
    z = torch.zeros(4, 8)
    o = torch.ones_like(x)
    ar = torch.arange(8, dtype=torch.float32)
    f = torch.full((4, 1), 2.5)
    e = torch.eye(8)[:4]
    return x + z + o * ar + f + e, torch.empty(3).shape


@case((A,), (A.double(),), (A.half(),))
def dtype_conversions(x):
    a = x.float() * 2
    b = x.to(torch.float64).sum()
    c = (x > 0).int().sum(-1)
    return a, b, c, x.long().dtype


@case((A, B))
def inplace_on_inputs(x, y):
    x.add_(1)
    y.mul_(x)
    y[0] = 3.0
    x[:, 1] += y[:, 2]
    return x * y


@case((A,))
def inplace_intermediate(x):
    y = x * 2
    y.relu_()
    y[1:3] = 0
    y += 1
    return y


@case((A,))
def setitem_with_tensor_mask(x):
    y = x.clone()
    y[y < 0] = 0.0
    return y.masked_fill(y > 1, -1.0)


@case((A, B))
def where_and_compare(x, y):
    m = (x > y) & (y > 0)
    return torch.where(m, x, y), m.any(), m.sum()


@case((r(2, 4, 16), r(16), r(16)))
def norms(x, w, b):
    a = F.layer_norm(x, (16,), w, b)
    rms = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    g = F.group_norm(x.transpose(1, 2), 2)
    return a, rms, g


@case((r(2, 4, 8, 16), r(2, 4, 8, 16), r(2, 4, 8, 16)))
def attention(q, k, v):
    scale = 1.0 / math.sqrt(q.shape[-1])
    s = q @ k.transpose(-2, -1) * scale
    mask = torch.ones(8, 8).tril().bool()
    s = s.masked_fill(~mask, float("-inf"))
    p = s.softmax(-1)
    return p @ v, F.scaled_dot_product_attention(q, k, v, is_causal=True)


@case((r(2, 8, 4, 16),))
def rope(x):
    b, t, h, d = x.shape
    inv = 1.0 / (10000 ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    freqs = torch.outer(torch.arange(t, dtype=torch.float32), inv)
    cos, sin = freqs.cos()[None, :, None, :], freqs.sin()[None, :, None, :]
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).flatten(-2)


@case((r(6, 10), torch.tensor([1, 0, 9, 3, 3, 2])))
def losses(logits, target):
    ce = F.cross_entropy(logits, target)
    nll = F.nll_loss(F.log_softmax(logits, -1), target, reduction="sum")
    mse = F.mse_loss(logits.sigmoid(), torch.zeros_like(logits))
    smooth = F.smooth_l1_loss(logits, logits.flip(0))
    return ce, nll, mse, smooth


@case((A,))
def einsum_and_misc(x):
    g = torch.einsum("ij,kj->ik", x, x)
    return g.tril(), x.cumsum(-1), x.sort(-1).values, x.topk(3).indices, x.argmax(-1)


@case((A,))
def random_ops(x):
    n = torch.randn(4, 8)
    d = F.dropout(x, 0.5, training=True)
    u = torch.rand_like(x)
    return x + n, d, u


# --- Python-valued control flow (specialized and unrolled) ----------------------------------------

@case((A, 3), (A, 3), (A, 2), kw(A, n=0))
def loop_range(x, n):
    for i in range(n):
        x = x * 2 + i
    return x


@case((A,), (r(5, 8),), (r(2, 2, 8),))
def shape_branch(x):
    if x.shape[0] > 4:
        return x.sum(0)
    if x.dim() == 3:
        return x.flatten(0, 1)
    return x * 2


@case((A, True), (A, False), (A, None))
def python_flag(x, flag):
    if flag:
        x = x + 1
    elif flag is None:
        x = x - 1
    return x


@case(([A, B],), ([A, B, A],), ((A, B),))
def list_of_tensors(xs):
    total = xs[0] * 0
    for i, t in enumerate(xs):
        total = total + t * (i + 1)
    return total, len(xs)


@case(({"a": A, "b": B},), ({"a": A, "b": B, "c": A},))
def dict_input(d):
    out = {}
    for k, v in d.items():
        out[k] = v.relu()
    return out, sorted(d)


@case((A,))
def comprehensions(x):
    parts = [x[i] * i for i in range(x.shape[0])]
    sq = {i: p.sum() for i, p in enumerate(parts) if i % 2 == 0}
    return torch.stack(parts), sq, tuple(p.mean() for p in parts)


@case((A,), kw(A, scale=3.0), kw(A, 2, 4.0))
def defaults_and_kwargs(x, bias=1, *, scale=2.0):
    return x * scale + bias


@case((A, B), (A, B, A))
def star_args(*xs):
    return sum(xs), len(xs)


@case((A,))
def tuple_unpack_and_swap(x):
    a, b = x.chunk(2, dim=1)
    a, b = b, a
    (c, d), e = (a.sum(), b.sum()), a * b
    return a - b, c + d, e


@case((A,))
def while_python(x):
    i = 0
    while i < 3:
        x = x + i
        i += 1
    else:
        x = x * 2
    return x


@case((A,))
def break_continue(x):
    acc = x * 0
    for i in range(10):
        if i == 2:
            continue
        if i > 5:
            break
        acc = acc + x * i
    return acc


@case((A,))
def isinstance_checks(x):
    out = []
    for v in [x, 2, 3.0, "s", None, (1, 2)]:
        if isinstance(v, torch.Tensor):
            out.append(v.sum())
        elif isinstance(v, (int, float)):
            out.append(v * 2)
        elif v is None:
            out.append(-1)
    return out, type(x) is torch.Tensor


SCALE = 2.0
TABLE = {"a": 1.5, "b": -2}


@case((A,))
def globals_read(x):
    return x * SCALE + TABLE["a"] + TABLE.get("c", 7)


@case((A, 4))
def lambdas_and_closures(x, k):
    f = lambda t: t * k + 1  # noqa: E731

    def g(t, c=2):
        return f(t) * c
    return g(x), list(map(lambda v: v + 1, [1, 2]))


@case((A,))
def math_on_python_values(x):
    d = x.shape[-1]
    return x / math.sqrt(d) + math.log(2.0), int(math.ceil(d / 3))


@case((A,))
def string_ops(x):
    name = "layer_%d" % 3
    key = f"{name}.{x.shape[0]}"
    return x * len(key), key.upper()


@case((A,))
def with_no_grad(x):
    with torch.no_grad():
        y = x * 2
    z = y + 1
    with torch.enable_grad():
        w = z * 3
    return w, y.requires_grad


@case((r(4, 8, grad=True),))
def no_grad_mixed_autograd(x):
    with torch.no_grad():
        s = x.sum()
    return x * s


@torch.no_grad()
def _frozen_scale(t):
    return t * 2 + 1


@case((r(4, 8, grad=True), r(8, 8, grad=True)))
def no_grad_call_as_statement(x, w):
    y = _frozen_scale(x)
    return y @ w, y.requires_grad


@case((r(4, 8, grad=True), r(8, 8, grad=True)), (A, M8))
def no_grad_call_inside_expression(x, w):
    """Hoisted into a statement of its own where nothing but names is evaluated before the call;
    the first statement evaluates `w.t()` first, so it runs in Python."""
    z = w.t() @ (_frozen_scale(x) @ w).t()
    u = (_frozen_scale(x) @ w).relu() + z.t()
    return u, (x * _frozen_scale(x)).sum(), [_frozen_scale(x)][0].requires_grad


@case((A,))
def autocast_block(x):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = x @ x.t()
    return y.float() + 1, y.dtype


@case((A,))
def returns_structures(x):
    return {"a": [x, (x * 2, 3)], "b": None, "c": "s"}


@case((A,))
def return_none(x):
    x.mul_(2)


@case((A,))
def torch_return_types(x):
    m = x.max(dim=1)
    return m.values + 1, m.indices, m


# --- graph breaks --------------------------------------------------------------------------------

@case((A,), (A,), (r(3, 8),))
def print_break(x):
    a = x.sin()
    print("shape", a.shape, "dtype", a.dtype)
    b = a.cos() + 1
    print("sum", round(b.sum().item(), 3))
    return b


@case((A,), (B,))
def item_break(x):
    s = x.sum().item()
    y = x * 2
    return y + s, s


@case((A,))
def tolist_break(x):
    vals = x[0, :3].tolist()
    return x * vals[0], vals


@case((A,), (B,))
def loops_over_host_values_in_a_loop(x):
    """Beam search's shape: each outer step loops over items made in Python (.tolist()); values
    taken from one step's items are still used, and guarded, after the next step's loop."""
    beams = [([0], 0.0)]
    for step in range(2):
        candidates = []
        for tokens, score in beams:
            top, ids = (x[step] * (score + 1)).topk(2)
            for value, index in zip(top.tolist(), ids.tolist()):
                candidates.append((tokens + [index], score + value))
        beams = sorted(candidates, key=lambda c: c[1], reverse=True)[:2]
    return x[0, beams[0][0]] * beams[0][1], beams


@case((POS,), (NEG,), (POS,), (NEG,))
def data_dependent_if(x):
    if x.sum() > 0:
        y = x + 1
    else:
        y = x - 1
    return y * 2


@case((POS,), (NEG,), (NEG,), (POS,))
def data_dependent_if_no_else(x):
    y = x * 3
    if y.mean() < 0:
        y = -y
        print("flipped")
    return y


@case((POS * 3,), (POS * 100,), (POS * 0.1,))
def data_dependent_while(x):
    steps = 0
    while x.sum() > 1:
        x = x / 2
        steps += 1
    return x, steps


@case((POS * 3,), (POS * 50,))
def data_dependent_while_tensor_state(x):
    while x.max() > 1:
        x = x * 0.5
    return x


@case((A,), (B,))
def bool_int_float_conversions(x):
    b = bool(x[0, 0] > 0)
    i = int(x.argmax())
    f = float(x.mean())
    return x * f + i, b


@case((A,), (B,))
def nonzero_and_masked(x):
    idx = torch.nonzero(x > 0)
    sel = x[x > 0]
    return idx.shape[0], sel * 2, x.abs() + 1


@case((A,))
def unsupported_calls(x):
    t = time.time()
    y = x * 2
    return y + (1 if t > 0 else 0)


@case((A,))
def random_module(x):
    random.seed(0)
    r1 = random.random()
    return x * r1


logger = logging.getLogger("fuselens.tests")


@case((A,))
def logging_and_warnings(x):
    y = x * 2
    logger.debug("y is %s", y.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warnings.warn("careful")
    return y + 1


@case((A,))
def string_of_tensor(x):
    s = str(x.sum() > 0)
    m = f"{x.mean():.2f}"
    return x * 2, len(s) > 0, m


@case((A,))
def assert_on_tensor(x):
    assert x.shape[1] == 8
    assert (x.abs() >= 0).all(), "abs"
    return x * 2


@case((A,), (B,))
def item_then_shape_use(x):
    n = int((x > 0).sum().item())
    return torch.zeros(n).shape, x[:n].sum()


@case((A,))
def try_except_runs_in_python(x):
    try:
        y = x * 2
    except RuntimeError:
        y = x
    return y + 1


@case((A,), (B,))
def ternary_data_dependent(x):
    y = x * 2 if x.sum() > 0 else x * 3
    return y


@case((A,))
def exception_raised(x):
    y = x * 2
    return y @ torch.ones(3, 3)


@case((A,))
def exception_in_python(x):
    d = {"a": 1}
    y = x * 2
    return y + d["b"]


# --- inlining user code and modules ---------------------------------------------------------------

def _helper(t, k=2.0):
    return t * k + 1


def _helper_with_print(t):
    u = t + 1
    print("inside helper", u.shape)
    return u * 2


def _helper_with_branch(t):
    if t.sum() > 0:
        return t + 100
    return t - 100


@case((A,))
def inline_helpers(x):
    y = _helper(x)
    z = _helper(y, k=3.0) + _helper(x).sum()
    return z


@case((A,), (A,))
def inline_helper_with_break(x):
    y = _helper_with_print(x)
    return y + 1


@case((POS,), (NEG,), (POS,))
def inline_helper_with_branch(x):
    y = _helper_with_branch(x)
    return y * 2


@case((POS,), (NEG,))
def helper_break_in_expression(x):
    return _helper_with_print(x).sum() + _helper_with_branch(x).sum()


class Block(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)
        self.norm = nn.LayerNorm(d)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        h = self.fc2(F.gelu(self.fc1(self.norm(x))))
        return x + self.drop(h)


class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(3)])
        self.head = nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 2))
        self.register_buffer("scale", torch.tensor(0.5))

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        return self.head(x * self.scale)


class Chatty(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Block()

    def forward(self, x):
        y = self.inner(x)
        print("chatty", y.shape)
        if y.sum() > 0:
            y = y * 2
        return y


STACK = Stack().eval()
CHATTY = Chatty().eval()


@case((A,))
def module_stack(x):
    return STACK(x)


@case((POS,), (NEG,))
def module_with_breaks(x):
    return CHATTY(x) + 1


class Convy(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.pool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x):
        return self.pool(F.relu(self.bn(self.conv(x)))).flatten(1)


CONVY = Convy().eval()


@case((r(2, 3, 8, 8),))
def conv_module(x):
    return CONVY(x)


EMB = nn.Embedding(10, 8)


@case((torch.tensor([[1, 2, 3], [4, 5, 9]]),))
def embedding_lookup(ids):
    return EMB(ids).sum(1)


class Methods:
    def __init__(self, k):
        self.k = k

    def apply(self, t):
        return self.scale(t) + self.k

    def scale(self, t):
        return t * self.k


OBJ = Methods(3.0)


@case((A,))
def user_object_methods(x):
    return OBJ.apply(x)


# --- realistic model code -------------------------------------------------------------------------

class MoE(nn.Module):
    def __init__(self, d=8, n=4, k=2):
        super().__init__()
        self.router = nn.Linear(d, n)
        self.experts = nn.ModuleList([nn.Linear(d, d) for _ in range(n)])
        self.k = k

    def forward(self, x):
        logits = self.router(x)
        w, idx = logits.softmax(-1).topk(self.k, dim=-1)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            mask = (idx == e).any(-1)
            if mask.any():
                out[mask] += expert(x[mask]) * w[mask][(idx[mask] == e)].unsqueeze(-1)
        return out


MOE = MoE().eval()


@case((r(6, 8, seed=11),), (r(6, 8, seed=12),))
def moe_routing(x):
    return MOE(x)


@case((r(1, 5, seed=13),))
def sampling_loop(logits):
    tokens = []
    x = logits
    for step in range(4):
        probs = torch.softmax(x / 0.7, dim=-1)
        nxt = torch.multinomial(probs, 1)
        tokens.append(nxt)
        if nxt.item() == 4:
            break
        x = x + F.one_hot(nxt.squeeze(-1), 5).float()
    return torch.cat(tokens, dim=-1)


def _iou(a, b):
    lt = torch.maximum(a[:, None, :2], b[None, :, :2])
    rb = torch.minimum(a[:, None, 2:], b[None, :, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    return inter / (area_a[:, None] + area_b[None, :] - inter)


@case((torch.tensor([[0, 0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30], [21, 21, 29, 29.]]),
       torch.tensor([0.9, 0.8, 0.7, 0.95])))
def nms(boxes, scores):
    order = scores.argsort(descending=True)
    keep = []
    while order.numel() > 0:
        i = order[0]
        keep.append(i)
        if order.numel() == 1:
            break
        ious = _iou(boxes[i][None], boxes[order[1:]])[0]
        order = order[1:][ious <= 0.5]
    return torch.stack(keep)


@case((r(2, 6, 8, seed=14),))
def rmsnorm_swiglu(x):
    w = torch.ones(8)
    h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w
    a, b = h.chunk(2, dim=-1)
    return F.silu(a) * b


# --- autograd -----------------------------------------------------------------------------------

@case((r(4, 8, grad=True), r(8, 8, grad=True)))
def autograd_mlp(x, w):
    h = torch.tanh(x @ w)
    return (h * h).sum()


@case((r(4, 8, grad=True),), (r(4, 8, grad=True, seed=9) * -1,))
def autograd_with_break(x):
    y = x.sin()
    if y.sum() > 0:
        y = y * 2
    print("y", y.shape)
    return (y * x).sum()


@case((A, r(8, 3, grad=True, seed=7)), (A * 2, r(8, 3, grad=True, seed=8)))
def training_step_returns_loss(x, w):
    # the loss comes back with its graph already freed: the harness's own backward raises on
    # both sides, and the update shows in `w`
    loss = torch.tanh(x @ w).pow(2).mean()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
    return loss


@case((A,), (B,))
def closure_used_by_python(x):
    k = 3

    def scale(t, c=2):
        return t * k * c
    f = lambda t: scale(t) + 1  # noqa: E731
    s = x.sum().item()
    print("scaled", f(torch.tensor(s)).shape)
    return f(x), sorted([3, 1, 2], key=lambda v: -v * k)


@case((A,), (B,), (A * 3,))
def item_used_in_tensor_math(x):
    m = x.abs().max().item()
    y = x / m
    return torch.clamp(y * 2.0, max=m), m


@case((A, 0.5), (A, 0.25), (A, 2))
def float_argument(x, alpha):
    return x * alpha + torch.sigmoid(x).mul(alpha), x.sub(alpha)


@case((A, 0.5), (A, 0.25))
def float_argument_in_statement_that_breaks(x, alpha):
    y = x.sin()
    # `y * alpha` makes alpha a scalar input of the region; nonzero then breaks, and taking the
    # statement back must drop that input after the op using it
    return (y * alpha).nonzero().shape[0] + y.sum()



@case((torch.tensor([0, 1, 2, 1, 0, 2]), torch.tensor([0, 1, 1, 1, 2, 2])))
def fallback_writes_into_own_dict(preds, target):
    recalls = {}
    for c in range(3):
        hit = (preds == c) & (target == c)
        recalls[c] = (hit.sum() / (target == c).sum().clamp(min=1)).item()
    return recalls


@case((torch.tensor([7]),), (torch.tensor([0]),))
def fallback_then_append(token):
    generated = [token]
    while len(generated) <= 4 and generated[-1].item() != 0:
        generated.append(generated[-1] * 2 % 9)
    return torch.cat(generated), len(generated)


@case((A,))
def fallback_rebinds_an_aliased_local(x):
    y = x * 2
    z = y  # z keeps the old value after the fallback statement rebinds y
    y = y + float(y.sum())
    return z + y


@case((A,))
def fallback_rebinds_an_aliased_argument(x):
    z = x
    x = x + float(x.sum())
    return z * x


@case((r(5), [torch.tensor([3, 0, 4, 1, 2]), torch.tensor([1, 1, 0, 4, 3]), torch.tensor([2, 4, 4, 0, 1])]))
def fallback_reorders_a_list_of_tensors(scores, history):
    # Viterbi backtracking: each index read is a fallback, then `path.reverse()` (Python) moves
    # the tensors the trace has seen to other positions; the next region must read them where
    # they are now, not where they were first imported
    path = [scores.argmax()]
    for idx in reversed(history):
        path.append(idx[path[-1]])
    path.reverse()
    return torch.stack(path)


class _MetricHistory:
    def __init__(self):
        self.history = collections.defaultdict(list)

    def __call__(self, name, value):
        self.history[name].append(value.detach())


@case((A, [_MetricHistory()]), (A, [_MetricHistory()]))
def callback_appends_to_a_defaultdict(x, callbacks):
    # the callback's defaultdict comes from outside: a value stored in it must be the real
    # tensor, never a traced stand-in (`history["loss"]` runs __missing__ on the first call)
    loss = (x * 2).sum()
    for callback in callbacks:
        callback("loss", loss)
    return loss + 1


class _EncoderOnIntermediate(nn.Module):
    """torch's own layer rebinds `x = src` around a fallback (its fast-path check breaks)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).eval()

    def forward(self, x):
        return self.layer(x * 2)


_encoder_on_intermediate = _EncoderOnIntermediate().eval()


@case((r(2, 5, 8),))
def library_layer_rebinds_alias(x):
    return _encoder_on_intermediate(x)


@case((r(3, 4), True), (r(3, 4), False))
def iterator_kept_across_a_fallback(ws, scale):
    # StyleGAN's synthesis block: an iterator over a tuple the trace made outlives a statement that
    # runs in Python; resuming there must rebuild it over the items it has left
    w_iter = iter(ws.unbind(dim=0))
    first = next(w_iter) * 2
    factor = float(first.sum()) if scale else 1.0
    return first + next(w_iter) * factor + next(w_iter)


def _combine(x, y, fused):
    w = x * 2
    if fused:  # decided by a value Python computed, while `w` is only in the open region
        return w * y
    return w + y


@case((A,), (-A,))
def branch_on_a_value_python_computed(x):
    # StyleGAN's modulated_conv2d: the side not taken resumes from a snapshot, which needs every
    # live value in a program variable
    y = x.exp()
    fused = float(x.sum()) > 0
    z = _combine(x, y, fused)
    return z + y

