"""Correctness cases for the Triton backend, shared by the interpreter (CPU) and GPU tests."""
import math

import torch
import torch.nn.functional as F


def cases(device):
    """name -> (fn, args) with the args on `device`."""
    torch.manual_seed(0)
    X = torch.randn(6, 33)
    return {name: (fn, tuple(a.to(device) for a in args)) for name, (fn, args) in {
        "chain": (lambda x: ((x * 2 + 1).sin() * x.exp()).tanh() - x.abs().sqrt(), (X,)),
        "broadcast": (lambda x, y: x * y + y.sigmoid() - x[:, :1], (X, torch.randn(33))),
        "activations": (lambda x: F.gelu(x) + F.silu(x) + F.relu(x) + torch.erf(x), (X,)),
        "compare_where": (lambda x: torch.where((x > 0) & (x < 1), x.round(), x.trunc() - x.floor()), (X * 3,)),
        "int_math": (lambda x: ((x * 10).to(torch.int64) // 3) % 4 - 2, (X,)),
        "transposed": (lambda x: x.t().exp() + 1, (X,)),
        "softmax": (lambda x: torch.softmax(x, -1), (X,)),
        "log_softmax": (lambda x: torch.log_softmax(x, 0), (X,)),
        "layernorm": (lambda x, w, b: F.layer_norm(x, (33,), w, b), (X, torch.randn(33), torch.randn(33))),
        "rmsnorm": (lambda x: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6), (X,)),
        "reductions": (lambda x: (x.sum(0), x.amax(-1), x.amin(0), x.sum(), x.var(1)), (X,)),
        "cross_entropy": (lambda x, t: F.cross_entropy(x, t), (X, torch.randint(0, 33, (6,)))),
        "rope_cat": (lambda x: torch.cat([-x[..., 3:], x[..., :3]], -1) * 0.5 + x, (torch.randn(2, 3, 6),)),
        "attention": (lambda q: torch.softmax(q @ q.transpose(-1, -2) / math.sqrt(4), -1) @ q, (torch.randn(2, 5, 4),)),
        "linear_gelu_inplace": (lambda x, w: F.gelu(x @ w) * 2, (X, torch.randn(33, 8))),
        # larger than one interpreter block (16384 elements, 64 x 256 reduction tiles): several
        # programs, ragged last tiles
        "multi_program": (lambda x: (x.exp() * 2 + 1, x.sum(-1), x.amax(0)), (torch.randn(203, 301),)),
        "nan_max": (lambda x: x.amax(-1), (torch.tensor([[1.0, float("nan"), 3.0], [4.0, 5.0, 6.0]]),)),
    }.items()}
