"""Graph breaks inside the arguments of a call: a tensor method found on the stack when Dynamo
resumes (`t.copy_(helper(x))`) versus functions, modules and containers."""
import torch
import torch.nn as nn


def straight(x):
    if x.sum() > 0:  # expect: FL000 GB0170
        x = x * 2
    return x


def shout(x):
    print("hi")  # expect: FL000 GB0059
    return x


class ParamMethod(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4))

    def forward(self, x):
        return x * self.w.add(straight(x))  # expect: FL000 GB0007


class InputMethod(nn.Module):
    def forward(self, x):
        return x.add(straight(x))  # expect: FL000 GB0007


class BufferCopy(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("buf", torch.zeros(4))

    def forward(self, x):
        self.buf.copy_(shout(x))  # expect: FL000 GB0007
        return x + self.buf


class FunctionCall(nn.Module):
    def forward(self, x):
        return torch.add(x, straight(x))


class ItemArg(nn.Module):
    def forward(self, x):
        return x.mul(float(x.sum()))  # expect: FL000 GB0124


class LocalMethod(nn.Module):
    def forward(self, x):
        y = x * 2
        return y.add(shout(x))  # expect: FL000 GB0007


class ParamNoGrad(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4))

    def forward(self, x):
        with torch.no_grad():
            self.w.copy_(shout(x))  # expect: FL000 GB0007
        return x * self.w


def read(x):
    return x * x.sum().item()  # expect: FL000 GB0124


class ListAppend(nn.Module):
    def forward(self, x):
        out = []
        out.append(shout(x))
        return out[0] + 1


class Chained(nn.Module):
    def forward(self, x):
        return x.add(1).mul(shout(x) * 2)  # expect: FL000 GB0007


class Keyword(nn.Module):
    def forward(self, x):
        return x.add(1, alpha=float(shout(x).shape[0]))  # expect: FL000 GB0007


class ItemInside(nn.Module):
    def forward(self, x):
        return x.add(read(x))  # expect: FL000 GB0007


class ModuleArg(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(shout(x))


class DictMethod(nn.Module):
    def forward(self, x):
        d = {}
        d.setdefault("a", shout(x))
        return d["a"] + 1


class TwoCalls(nn.Module):
    def forward(self, x):
        y = x.add(shout(x))  # expect: FL000 GB0007
        return y.mul(shout(y))  # expect: FL000 GB0007


class Hoisted(nn.Module):
    def forward(self, x):
        y = shout(x)
        return x.add(y)


def helper(x):
    return x.add(shout(x))  # expect: FL000 GB0007


class Inner(nn.Module):
    def forward(self, x):
        return helper(x) * 2


CASES = {
    "param": lambda: (ParamMethod(), (torch.randn(4),)),
    "input": lambda: (InputMethod(), (torch.randn(4),)),
    "buffer": lambda: (BufferCopy(), (torch.randn(4),)),
    "function": lambda: (FunctionCall(), (torch.randn(4),)),
    "item": lambda: (ItemArg(), (torch.randn(4),)),
    "local": lambda: (LocalMethod(), (torch.randn(4),)),
    "param_nograd": lambda: (ParamNoGrad(), (torch.randn(4),)),
    "append": lambda: (ListAppend(), (torch.randn(4),)),
    "chained": lambda: (Chained(), (torch.randn(4),)),
    "keyword": lambda: (Keyword(), (torch.randn(4),)),
    "iteminside": lambda: (ItemInside(), (torch.randn(4),)),
    "modarg": lambda: (ModuleArg(), (torch.randn(4),)),
    "dict": lambda: (DictMethod(), (torch.randn(4),)),
    "two": lambda: (TwoCalls(), (torch.randn(4),)),
    "hoisted": lambda: (Hoisted(), (torch.randn(4),)),
    "inner": lambda: (Inner(), (torch.randn(4),)),
}
