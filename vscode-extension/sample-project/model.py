"""A small PyTorch module to try FuseLens on: graph breaks to find, functions to compile and profile."""
import torch
from torch import nn


@torch.compile
def rms_norm(x, weight):
    variance = x.pow(2).mean(-1, keepdim=True)
    return x * torch.rsqrt(variance + 1e-6) * weight


def rms_norm_example_inputs():
    return torch.randn(256, 1024), torch.randn(1024)


@torch.compile
def gelu_scale(x, scale):
    print("gelu_scale", x.shape)
    return torch.nn.functional.gelu(x) * scale.item()


def gelu_scale_example_inputs():
    return torch.randn(64, 256), torch.tensor(0.5)


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(128, 128)

    def forward(self, x):
        h = self.proj(x)
        if h.sum() > 0:
            h = torch.relu(h)
        return torch.sigmoid(h) * x


def Gate_example_inputs():
    return (torch.randn(32, 128),)
