"""Modules whose code lives in torch but outside torch.nn.modules (quantization stubs,
FloatFunctional): their methods are inlined like user code, not recorded as ops."""
import torch
import torch.nn as nn
from torch.ao.quantization import DeQuantStub, QuantStub

from fuselens.compiler.capture import explain

from .harness import check


class QuantBlock(nn.Module):
    def __init__(self, channels: int = 4):
        super().__init__()
        self.quant = QuantStub()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.mul = torch.ao.nn.quantized.FloatFunctional()
        self.dequant = DeQuantStub()

    def forward(self, x):
        x = self.quant(x)
        x = self.mul.mul(torch.relu(self.conv(x)), x)
        return self.dequant(x)


class TwoBlocks(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(QuantBlock(), QuantBlock())
        self.down = QuantBlock()

    def forward(self, x):
        c4 = self.stem(x)
        c8 = self.down(c4)
        return c4.mean() + c8.mean()


def test_quantization_stubs_and_float_functional_are_inlined():
    model = TwoBlocks().eval()
    x = torch.rand(2, 4, 6, 6)
    check(model, [((x,), {})])
    report = explain(model)(x)
    assert report.breaks == [], [b.reason for b in report.breaks]
