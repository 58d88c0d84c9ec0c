"""Breaks inside loops and try blocks.

Dynamo cannot resume in the middle of a loop or a `try`: after a break there it runs the rest
of that frame eagerly ("graph break in loop"/"Skipping frame"), so later breaks in the same
function are never reported. Functions called from the eager remainder are compiled as
frames of their own and still report theirs. A `while` whose *condition* breaks is different:
the first test sits before the loop, and the code after the loop is still compiled.
"""
import torch
from torch import nn


class NoisyLayer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        y = self.fc(x)
        print("layer norm", y.norm())  # expect: FL110 GB0059
        return y.relu()


class NoisyStack(nn.Module):
    def __init__(self, dim, depth=3):
        super().__init__()
        self.layers = nn.ModuleList(NoisyLayer(dim) for _ in range(depth))
        self.out = nn.Linear(dim, 1)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        score = self.out(x).mean().item()  # after the loop: this frame already runs eagerly
        return x * score


class QuietLayer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return self.fc(x).relu()


class ResidualStack(nn.Module):
    """The clean version: a ModuleList loop is unrolled into one graph."""

    def __init__(self, dim, depth=3):
        super().__init__()
        self.layers = nn.ModuleList(QuietLayer(dim) for _ in range(depth))

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return x


@torch.compile
def running_metrics(batches):
    total, count = 0.0, 0
    for b in batches:
        total += b.sum().item()  # expect: FL102 GB0124
        count += b.numel()
    print("mean", total / count)  # not reported: the frame was skipped
    return total / count


@torch.compile
def before_and_after_loop(x, steps: int = 3):
    scale = x.abs().max().item()  # expect: FL102 GB0124
    for _ in range(steps):
        x = x / scale
        print("step")  # expect: FL110 GB0059
    return x.sum().item()  # not reported


def finalize(x):
    print("finalize", x.shape)  # expect: FL110 GB0059
    return x * 2


@torch.compile
def loop_then_helper(x):
    for i in range(2):
        if x[i].sum() > 0:  # expect: FL101 GB0170
            x = x + 1
    return finalize(x)  # the helper's own frame is compiled and reports its break


def refine(x, iters=2):
    for _ in range(iters):
        x = x - 0.1 * x.sign()
        if x.abs().max() < 0.5:  # expect: FL101 GB0170
            break
    return x


@torch.compile
def calls_refine(x):
    x = refine(x)
    return x * x.sum().item()  # expect: FL102 GB0124


@torch.compile
def try_item(x):
    try:
        value = x.max().item()  # expect: FL102 GB0124
    except RuntimeError:
        value = 0.0
    print("value", value)  # not reported: a break in a try block skips the frame
    return x - value


@torch.compile
def try_clean(x):
    try:
        y = x.log()
    except RuntimeError:
        y = x
    return y.exp()


@torch.compile
def no_grad_block(x, w):
    with torch.no_grad():
        norm = w.norm().item()  # expect: FL102 GB0124
    out = x @ (w / norm)
    print("normalized")  # expect: FL110 GB0059
    return out


@torch.compile
def sum_of_items(xs):
    return sum(t.sum().item() for t in xs)  # expect: FL102 GB0124; FL102 GB8335


@torch.compile
def list_of_items(xs):
    return [t.sum().item() for t in xs]  # expect: FL102 GB0124


@torch.compile
def while_positive(x):
    while x.sum() > 0:  # expect: FL101 GB0170
        x = x - 1
    print("done")  # expect: FL110 GB0059
    return x


@torch.compile
def fixed_loop(x, n: int = 4):
    acc = torch.zeros_like(x)
    for i in range(n):
        acc = acc + x.roll(i, dims=-1)
    return acc / n


@torch.compile
def enumerate_chunks(x):
    out = []
    for i, chunk in enumerate(x.chunk(3, dim=0)):
        out.append(chunk * (i + 1))
    return torch.cat(out)


@torch.compile
def loop_over_tensor_rows(x):
    total = torch.zeros(x.shape[1])
    for row in x:
        total = total + row.relu()
    return total


@torch.compile
def zip_loop(xs, ws):
    return [x @ w for x, w in zip(xs, ws)]


class EarlyExitStack(nn.Module):
    """Early exit when the classifier is confident: a data-dependent break in a loop."""

    def __init__(self, dim, depth=3, threshold=0.9):
        super().__init__()
        self.layers = nn.ModuleList(QuietLayer(dim) for _ in range(depth))
        self.heads = nn.ModuleList(nn.Linear(dim, 2) for _ in range(depth))
        self.threshold = threshold

    def forward(self, x):
        for layer, head in zip(self.layers, self.heads):
            x = layer(x)
            probs = head(x).softmax(-1)
            if probs.max() > self.threshold:  # expect: FL101 GB0170; FL101 GB0092
                return probs
        return probs



def sample_crop_size(height: int, width: int):
    """torchvision-style rejection sampling: the retry loop returns from its body, so Dynamo
    resumes after a break in it (a later jump back to the loop's head would make it give up)."""
    for _ in range(10):
        h = int(torch.randint(2, height + 1, (1,)).item())  # expect: FL102 GB0124
        w = int(torch.randint(2, width + 1, (1,)).item())  # expect: FL102 GB0124
        if h * w <= height * width // 2:
            return h, w
    return height, width


@torch.compile
def random_crop(x):
    h, w = sample_crop_size(x.size(-2), x.size(-1))
    return x[..., :h, :w].sum()


@torch.compile
def skip_negative(xs):
    total = xs[0] * 0
    for x in xs:
        if x.sum().item() < 0:  # expect: FL102 GB0124
            continue
        print("kept")  # never reported: the `continue` jumps back to the head before any return
        total = total + x
        if total.numel() > 100:
            return total
    return total

CASES = {
    "NoisyStack": lambda: (NoisyStack(4), (torch.randn(2, 4),)),
    "ResidualStack": lambda: (ResidualStack(4), (torch.randn(2, 4),)),
    "running_metrics": lambda: (running_metrics, ([torch.randn(3), torch.randn(3)],)),
    "before_and_after_loop": lambda: (before_and_after_loop, (torch.randn(4),)),
    "loop_then_helper": lambda: (loop_then_helper, (torch.randn(3, 2).abs(),)),
    "calls_refine": lambda: (calls_refine, (torch.randn(4) * 3,)),
    "try_item": lambda: (try_item, (torch.randn(4),)),
    "try_clean": lambda: (try_clean, (torch.rand(4),)),
    "no_grad_block": lambda: (no_grad_block, (torch.randn(2, 3), torch.randn(3, 3))),
    "sum_of_items": lambda: (sum_of_items, ([torch.randn(3), torch.randn(3)],)),
    "list_of_items": lambda: (list_of_items, ([torch.randn(3), torch.randn(3)],)),
    "while_positive": lambda: (while_positive, (torch.rand(3) * 2,)),
    "fixed_loop": lambda: (fixed_loop, (torch.randn(2, 5),)),
    "enumerate_chunks": lambda: (enumerate_chunks, (torch.randn(6, 2),)),
    "loop_over_tensor_rows": lambda: (loop_over_tensor_rows, (torch.randn(4, 3),)),
    "zip_loop": lambda: (zip_loop, ([torch.randn(2, 3)] * 2, [torch.randn(3, 2)] * 2)),
    "EarlyExitStack": lambda: (EarlyExitStack(4), (torch.randn(1, 4),)),
    "random_crop": lambda: (random_crop, (torch.randn(2, 5, 7),)),
    "skip_negative": lambda: (skip_negative, ([torch.randn(3), -torch.ones(3), torch.ones(3)],)),
}
