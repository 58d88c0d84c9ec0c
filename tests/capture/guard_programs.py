"""Functions whose captures depend on one guarded fact each (see test_guards.py)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

FACTOR = 2.0
STATE = {"k": 2.0}


def scale(x):
    return x * 2 + 1


def shape_dependent(x):
    if x.shape[0] == 4:
        return x.sum(0)
    return x * x.shape[1]


def view_sensitive(x):
    return x.view(-1).sum() if x.is_contiguous() else x.reshape(-1).mean()


def mutate_then_read(x, y):
    x.add_(1)
    return y * 2, x is y


def matmul(x):
    return x @ x + 1


def creates_tensor(x):
    return x + torch.ones(3)


def uses_global(x):
    return x * FACTOR


def helper(t):
    return t + 1


def other_helper(t):
    return t * -3


def calls_helper(x):
    return helper(x)


def power(x, p):
    return x ** p, type(p).__name__


def sum_list(xs):
    out = xs[0] * 0
    for t in xs:
        out = out + t
    return out, type(xs).__name__


def bump(state):
    state["k"] = state["k"] + 1


def reads_after_call(x):
    y = x * 2
    bump(STATE)
    return y * STATE["k"]


def reads_after_update(x):
    y = x * 2
    STATE.update(k=STATE["k"] + 1)
    return y * STATE["k"]


def repeat(x, n):
    for _ in range(n):
        x = torch.sin(x)
    return x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(F.relu(self.fc(x)))


class Scaled(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, x):
        return x * self.k


class GridCache(nn.Module):
    """Per-level grids kept in a Python list attribute, rebuilt when the input size changes
    (YOLO's detection head)."""

    def __init__(self, levels=2):
        super().__init__()
        self.grid = [torch.zeros(1)] * levels

    def forward(self, xs):
        out = []
        for i, x in enumerate(xs):
            if self.grid[i].shape != x.shape:
                self.grid[i] = torch.arange(x.numel(), dtype=x.dtype).view_as(x)
            out.append(x + self.grid[i] * self.grid[-1].sum())
        return out


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.lin = nn.Linear(4, 4)
        self.last = None

    def forward(self, x, cache):
        self.calls += 1
        y = self.lin(x)
        self.last = y
        cache["y"] = y.sum()
        return y * self.calls + self.last + cache["y"]
