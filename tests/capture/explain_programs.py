"""Functions for test_explain.py (positions in this file are asserted)."""
import functools
import inspect

import torch
import torch.nn as nn

COUNTER = 0


def line_of(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, ln in enumerate(lines) if text in ln)


def col_of(fn, text):
    lines, _ = inspect.getsourcelines(fn)
    return next(ln.index(text) for ln in lines if text in ln)


def source_line(fn, line):
    lines, start = inspect.getsourcelines(fn)
    return lines[line - start].strip()


def straight(x, y):
    a = torch.sin(x) * 2
    return a + y


def many_breaks(x):
    y = x * 2
    print("value", y.shape)
    s = x.sum().item()
    if x.mean() > 0:
        y = y + s
    else:
        y = y - len(str(x))
    return y


def branchy(x):
    if x.sum() > 0:
        return x + 1
    return x - 1


def uses_global_statement(x):
    global COUNTER
    COUNTER += 1
    return x * 2


def generator_user(x):
    def gen():
        yield x * 2
    return next(gen())


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x):
        if self.training:
            x = x * 1.0
        return self.lin(x)


@functools.lru_cache(maxsize=4)
def cached_frequencies(dim: int):
    return 1.0 / (10000.0 ** (torch.arange(0, dim, 2).float() / dim))


def uses_lru_cached(x):
    return x * cached_frequencies(x.shape[-1]).repeat(2)


class LinearThenOps(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        y = torch.relu(self.lin(x)) * 3
        return uses_lru_cached(y) + 1
