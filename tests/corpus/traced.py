"""Functions exported with torch.jit.trace: tracing records one path and bakes in values."""
import logging

import torch
import torch.nn.functional as F
from torch import nn

log = logging.getLogger("export")


def clamp_scores(scores):
    if scores.max() > 1:  # expect: FL201
        scores = scores / scores.max()
    return scores


def dynamic_threshold(x):
    cutoff = x.mean().item()  # expect: FL202
    return (x > cutoff).float()


def pad_to_multiple(x, multiple: int = 8):
    length = x.shape[-1]
    if length % multiple != 0:  # expect: FL203
        x = F.pad(x, (0, multiple - length % multiple))
    return x


def decode_lengths(lengths):
    as_list = lengths.tolist()  # expect: FL202
    return torch.stack([torch.arange(n).sum() for n in as_list])


def normalize(x):
    print("exporting normalize")  # expect: FL204
    return (x - x.mean()) / (x.std() + 1e-5)


def gelu_mlp(x, w1, w2):
    return F.gelu(x @ w1) @ w2


def logged_softmax(x):
    log.info("tracing softmax")  # expect: FL204
    return x.softmax(-1)


def iterative_refine(x):
    while x.abs().max() > 1.0:  # expect: FL201
        x = x * 0.5
    return x


def select_branch(x, use_relu: bool = True):
    return x.relu() if use_relu else x.tanh()


def scale_by_norm(x):
    norm = float(x.norm())  # expect: FL202
    return x / norm


def head_split(x, heads: int = 2):
    b, t, c = x.shape
    return x.view(b, t, heads, c // heads).transpose(1, 2)


def checked_sqrt(x):
    return torch.sqrt(positive_part(x))


def positive_part(x):
    if (x < 0).any():  # expect: FL201
        x = x.clamp(min=0)
    return x


class Classifier(nn.Module):
    """Traced for deployment and also compiled (as every nn.Module here)."""

    def __init__(self, dim, classes):
        super().__init__()
        self.fc = nn.Linear(dim, classes)

    def forward(self, x):
        logits = self.fc(x)
        if logits.abs().max() > 50:  # expect: FL101 GB0170; FL201
            logits = logits.clamp(-50, 50)
        return logits.softmax(-1)


def export_all(path="exported"):
    """Deployment script: trace each function with an example input."""
    example = torch.randn(2, 8)
    modules = {
        "clamp": torch.jit.trace(clamp_scores, example),
        "threshold": torch.jit.trace(dynamic_threshold, example),
        "pad": torch.jit.trace(pad_to_multiple, example),
        "lengths": torch.jit.trace(decode_lengths, torch.tensor([2, 3])),
        "normalize": torch.jit.trace(normalize, example),
        "mlp": torch.jit.trace(gelu_mlp, (example, torch.randn(8, 16), torch.randn(16, 8))),
        "softmax": torch.jit.trace(logged_softmax, example),
        "refine": torch.jit.trace(iterative_refine, example),
        "branch": torch.jit.trace(select_branch, example),
        "scale": torch.jit.trace(scale_by_norm, example),
        "heads": torch.jit.trace(head_split, torch.randn(2, 5, 8)),
        "sqrt": torch.jit.trace(checked_sqrt, example),
        "classifier": torch.jit.trace(Classifier(8, 3), example),
    }
    for name, module in modules.items():
        module.save(f"{path}/{name}.pt")


TRACED = {
    "clamp_scores": lambda: (clamp_scores, (torch.randn(2, 8) * 3,)),
    "dynamic_threshold": lambda: (dynamic_threshold, (torch.randn(2, 8),)),
    "pad_to_multiple": lambda: (pad_to_multiple, (torch.randn(2, 6),)),
    "decode_lengths": lambda: (decode_lengths, (torch.tensor([2, 3]),)),
    "normalize": lambda: (normalize, (torch.randn(2, 8),)),
    "gelu_mlp": lambda: (gelu_mlp, (torch.randn(2, 8), torch.randn(8, 16), torch.randn(16, 8))),
    "logged_softmax": lambda: (logged_softmax, (torch.randn(2, 8),)),
    "iterative_refine": lambda: (iterative_refine, (torch.randn(2, 8) * 4,)),
    "select_branch": lambda: (select_branch, (torch.randn(2, 8),)),
    "scale_by_norm": lambda: (scale_by_norm, (torch.randn(2, 8),)),
    "head_split": lambda: (head_split, (torch.randn(2, 5, 8),)),
    "checked_sqrt": lambda: (checked_sqrt, (torch.randn(2, 8),)),
    "Classifier": lambda: (Classifier(8, 3), (torch.randn(2, 8) * 200,)),
}

CASES = {
    "Classifier": lambda: (Classifier(8, 3), (torch.randn(2, 8) * 200,)),
}
