"""Debugging leftovers inside model code: prints, logging, timing, formatting, file I/O."""
import datetime
import logging
import random
import sys
import time
import uuid
import warnings

import torch
from torch import nn

logger = logging.getLogger(__name__)
DEBUG = False


class PrintShapes(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(dim, dim), nn.Linear(dim, dim)

    def forward(self, x):
        print("input", x.shape)  # expect: FL110 GB0059
        h = self.fc1(x).relu()
        print("hidden", tuple(h.shape), h.dtype)  # expect: FL110 GB0059
        return self.fc2(h)


class GuardedPrint(nn.Module):
    """Debug output only when not compiling: Dynamo drops the branch at trace time."""

    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        y = self.fc(x)
        if not torch.compiler.is_compiling():
            print("eager forward", y.norm())
        return y


class FlagPrint(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        y = self.fc(x)
        if DEBUG:
            print(y)
        return y


class LoggingBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        y = self.fc(x)
        logger.debug("block output %s", y.shape)  # expect: FL111 GB0291
        return y.tanh()


class RootLoggerBlock(nn.Module):
    def forward(self, x):
        logging.getLogger().info("forward called")  # expect: FL111 GB0291
        return x * 2


class WarnOnce(nn.Module):
    def forward(self, x):
        if x.dim() != 3:  # expect: FL301
            warnings.warn("expected a 3-d input, flattening")  # expect: FL112 GB0007
            x = x.flatten(1).unsqueeze(1)
        return x.softmax(-1)


class TimedBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.elapsed = 0.0

    def forward(self, x):
        start = time.perf_counter()  # expect: FL121 GB0007
        y = self.fc(x)
        self.elapsed = time.perf_counter() - start  # expect: FL121 GB0007
        return y


class StdoutProgress(nn.Module):
    def forward(self, x):
        sys.stdout.write(".")  # expect: FL113 GB0156
        return x.cumsum(-1)


@torch.compile
def format_stats(x):
    mean = x.mean()
    msg = f"mean={mean:.3f}"
    return x - mean, msg


@torch.compile
def fstring_unused(x):
    label = f"tensor of shape {tuple(x.shape)}"
    return x.relu(), label


@torch.compile
def print_fstring(x):
    y = x.sigmoid()
    text = f"{y.shape}"
    print(text)  # expect: FL110 GB0059
    return y


@torch.compile
def repr_in_error(x):
    if x.dim() > 2:
        raise ValueError(f"bad input rank {x.dim()}")
    return x.t(), repr(x.shape)


@torch.compile
def str_of_tensor(x):
    return x + 1, str(x)  # expect: FL114 GB0059


@torch.compile
def stamp_run(x):
    run_id = uuid.uuid4().hex  # expect: FL121 GB0007
    return x * 2, run_id


@torch.compile
def timestamped(x):
    when = datetime.datetime.now()  # expect: FL121 GB0156
    return x.exp(), when


@torch.compile
def random_scale(x):
    if random.random() < 0.9:  # expect: FL121 GB0007
        x = x * 2
    return x


@torch.compile
def jitter(x, low: float = 0.9, high: float = 1.1):
    return x * random.uniform(low, high)


@torch.compile
def dump_to_file(x, path: str):
    with open(path, "a") as fh:  # expect: FL113 GB0059; FL113 GB0142
        fh.write("called\n")
    return x + 1


@torch.compile
def assert_positive(x):
    assert (x >= 0).all(), "negative input"
    return x.sqrt()


_SHAPES_SEEN = {}


@torch.compile
def object_identity(x):
    key = id(x)
    _SHAPES_SEEN[key] = x.shape  # expect: FL302
    return x * 2


@torch.compile
def pretty_print_once(x):
    out = x.softmax(-1)
    print("softmax done")  # expect: FL110 GB0059
    print("max prob", out.max().item())  # expect: FL102 GB0124; FL110 GB0059
    return out


CASES = {
    "PrintShapes": lambda: (PrintShapes(8), (torch.randn(2, 8),)),
    "GuardedPrint": lambda: (GuardedPrint(8), (torch.randn(2, 8),)),
    "FlagPrint": lambda: (FlagPrint(8), (torch.randn(2, 8),)),
    "LoggingBlock": lambda: (LoggingBlock(8), (torch.randn(2, 8),)),
    "RootLoggerBlock": lambda: (RootLoggerBlock(), (torch.randn(2, 8),)),
    "WarnOnce": lambda: (WarnOnce(), (torch.randn(2, 8),), (torch.randn(2, 3, 8),)),
    "TimedBlock": lambda: (TimedBlock(8), (torch.randn(2, 8),)),
    "StdoutProgress": lambda: (StdoutProgress(), (torch.randn(2, 8),)),
    "format_stats": lambda: (format_stats, (torch.randn(4, 3),)),
    "fstring_unused": lambda: (fstring_unused, (torch.randn(4, 3),)),
    "print_fstring": lambda: (print_fstring, (torch.randn(4, 3),)),
    "repr_in_error": lambda: (repr_in_error, (torch.randn(4, 3),)),
    "str_of_tensor": lambda: (str_of_tensor, (torch.randn(4, 3),)),
    "stamp_run": lambda: (stamp_run, (torch.randn(4, 3),)),
    "timestamped": lambda: (timestamped, (torch.randn(4, 3),)),
    "random_scale": lambda: (random_scale, (torch.randn(4, 3),)),
    "jitter": lambda: (jitter, (torch.randn(4, 3),)),
    "dump_to_file": lambda: (dump_to_file, (torch.randn(4, 3), "/dev/null")),
    "assert_positive": lambda: (assert_positive, (torch.rand(4, 3),)),
    "object_identity": lambda: (object_identity, (torch.randn(4, 3),)),
    "pretty_print_once": lambda: (pretty_print_once, (torch.randn(4, 3),)),
}
