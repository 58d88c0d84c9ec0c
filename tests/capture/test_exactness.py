"""Constructs where capture once returned a different result than eager, each run compiled vs
eager through the differential harness (same seed on both sides, so random draws must match)."""
import pytest
import torch
import torch.nn as nn

from .harness import check

# --- outside values inside lists the function built ----------------------------------------------
# Arguments stay unspecialized (Ext) until used; inside a list handed to Python code they used to be
# compared and hashed as objects (by identity), e.g. `list(stop) == ids[-2:]` was always False.


def _ends_with(seq, stop):
    return len(seq) >= len(stop) and list(seq[-len(stop):]) == list(stop)


def stop_sequences(token_ids, stops):
    finished = []
    for row in token_ids:
        ids = row.tolist()
        finished.append(any(_ends_with(ids, s) for s in stops))
    return torch.tensor(finished)


def lists_of_outside_values(x, a, b, stops):
    ab = [a, b]
    x = x + float(ab == [1, 2])
    x = x + float(2 in ab)
    x = x + ab.count(2)
    x = x + len({a, b, 1})
    x = x + float(str(ab) == "[1, 2]")
    x = x + float(any([a - 1, b - 2]))
    x = x + float([[a]] < [[b]])
    x = x + float([stops] == [[[2, 3]]])  # an outside list inside: runs in Python
    return x + float((ab, 3) == ([1, 2], 3))


TOKENS = torch.tensor([[1, 2, 3], [4, 5, 6], [7, 2, 3]])
X = torch.zeros(2)
CASES = [
    (stop_sequences, [((TOKENS, [[2, 3], [9]]), {}), ((TOKENS, [[5, 6]]), {}),
                      ((TOKENS.flip(0), [[2, 3], [9]]), {})]),
    (lists_of_outside_values, [((X, 1, 2, [[2, 3]]), {}), ((X, 2, 1, [[2, 4]]), {}),
                               ((X, 1, 2, [[2, 3]]), {})]),
]

# --- containers whose iteration runs user code ----------------------------------------------------


class LayerDrop(nn.ModuleList):
    """fairseq's LayerDrop: iterating draws random numbers and skips layers."""

    def __iter__(self):
        keep = torch.empty(len(self)).uniform_()
        for i, m in enumerate(super().__iter__()):
            if not self.training or keep[i] > 0.4:
                yield m


class Reversed(nn.ModuleList):
    def __iter__(self):
        return iter(list(self._modules.values())[::-1])

    def __len__(self):
        return 2  # only the first two count

    def __getitem__(self, i):
        return list(self._modules.values())[-1 - i]


def _layers(cls):
    torch.manual_seed(0)
    return cls([nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.3)) for _ in range(4)])


LAYERDROP, REVERSED = _layers(LayerDrop), _layers(Reversed)


def layerdrop(x):
    for layer in LAYERDROP:  # layers' dropout draws between the list's own draws
        x = x + layer(x)
    return x


def overridden_container_methods(x):
    for layer in REVERSED:
        x = layer(x)
    return x * len(REVERSED) + REVERSED[0](x)


def _noisy(x, n):
    for i in range(n):
        yield x * i + torch.rand(1)  # draws interleave with the loop body's


def loop_over_generator(x):
    out = []
    for y in _noisy(x, 3):
        if len(out) == 2:
            break
        out.append(torch.dropout(y, 0.5, True))
    else:
        out.append(x)
    return torch.stack(out)


Y = torch.randn(2, 4)
CASES += [
    (layerdrop, [((Y,), {}), ((Y * 2,), {})]),
    (overridden_container_methods, [((Y,), {}), ((Y * 2,), {})]),
    (loop_over_generator, [((Y,), {}), ((Y * 2,), {})]),
]


@pytest.mark.parametrize("fn,calls", CASES, ids=[c[0].__name__ for c in CASES])
def test_matches_eager(fn, calls):
    check(fn, calls)
