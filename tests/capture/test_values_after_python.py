"""What the capture holds after a statement ran in Python: the very tensor it was given, handed
back (its other holders keep it), or a tensor whose metadata the statement changed in place."""
import torch
import torch.nn as nn

from .harness import check


@torch.compiler.disable
def handed_back(t):
    return t


class PassThroughBlock(nn.Module):
    def forward(self, x):
        x = handed_back(x)  # runs in Python and returns the very tensor it was given
        x = torch.relu(x * 2 + 1)  # a region's output rebinds x
        return handed_back(x)


class AliasedNet(nn.Module):
    """The block's parameter x becomes the home of the caller's c4 before Python hands c4 back
    into x; x is then rebound, and c4 is still needed by the caller."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(PassThroughBlock(), PassThroughBlock())
        self.down = PassThroughBlock()

    def forward(self, inp):
        c4 = self.stem(inp + 1)
        c8 = self.down(c4)
        return c4 * c8 - c4.mean()


@torch.compiler.disable
def grow(t):
    t.unsqueeze_(0)
    return t


def reads_a_resized_alias(x):
    y = x + 1
    z = grow(y)  # y itself, now one dimension more
    return (z * 2).sum(0) + y.shape[0] + y.dim()


def test_a_tensor_handed_back_by_python_keeps_its_other_holders():
    model = AliasedNet()
    check(model, [((torch.rand(3),), {}), ((torch.rand(3),), {})])


def test_a_tensor_resized_in_place_by_python_is_read_as_it_is_now():
    check(reads_a_resized_alias, [((torch.rand(3),), {}), ((torch.rand(4),), {})])
