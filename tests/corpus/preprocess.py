"""Data preprocessing done inside forward: tokens, padding, masks, numpy interop, lookups."""
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

VOCAB = {"<pad>": 0, "<unk>": 1, "a": 2, "b": 3}


class PadAndMask(nn.Module):
    def forward(self, seqs: list):
        lengths = torch.tensor([len(s) for s in seqs])
        longest = max(len(s) for s in seqs)
        batch = torch.stack([F.pad(s, (0, longest - len(s))) for s in seqs])
        mask = torch.arange(longest)[None, :] < lengths[:, None]
        return batch, mask


class TrimPadding(nn.Module):
    """Cuts the batch to the longest real sequence: the new length comes from the data."""

    def forward(self, tokens, pad_id: int = 0):
        lengths = (tokens != pad_id).sum(-1)
        longest = int(lengths.max())  # expect: FL102 GB0124
        return tokens[:, :longest]


class TokenLookup(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = ["<pad>", "<unk>", "a", "b"]

    def forward(self, ids):
        first = self.table[ids[0]]  # expect: FL102 GB0124
        return ids + 1, first


class Standardize(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", torch.as_tensor(mean).view(-1, 1, 1))
        self.register_buffer("std", torch.as_tensor(std).view(-1, 1, 1))

    def forward(self, img):
        if img.dtype == torch.uint8:
            img = img.float() / 255
        return (img - self.mean) / self.std


class NumpyAugment(nn.Module):
    """NumPy math on tensors is traced through torch._numpy."""

    def forward(self, x):
        arr = x.numpy()
        flipped = np.flip(arr, axis=-1)
        return torch.from_numpy(np.clip(flipped, -1.0, 1.0).copy())


class NumpyStats(nn.Module):
    def forward(self, x):
        arr = x.numpy()
        return torch.as_tensor(np.mean(arr, axis=0) + np.std(arr, axis=0))


class HostNormalize(nn.Module):
    """Pulls statistics to the host as Python floats to build the affine transform."""

    def forward(self, x):
        lo, hi = x.min().item(), x.max().item()  # expect: FL102 GB0124
        return (x - lo) / (hi - lo + 1e-6)


class ClipOutliers(nn.Module):
    def __init__(self, q=0.99):
        super().__init__()
        self.q = q

    def forward(self, x):
        cap = torch.quantile(x.abs().flatten(), self.q)
        return x.clamp(-cap, cap)


class RemoveNaNRows(nn.Module):
    def forward(self, x):
        good = ~torch.isnan(x).any(dim=1)
        return x[good]  # expect: FL105 GB0036


class FillNaN(nn.Module):
    def forward(self, x):
        return torch.nan_to_num(x, nan=0.0)


class BucketizeLengths(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("edges", torch.tensor([8, 16, 32, 64]))

    def forward(self, lengths):
        return torch.bucketize(lengths, self.edges)


class OneHotLabels(nn.Module):
    def forward(self, labels):
        num_classes = int(labels.max()) + 1  # expect: FL102 GB0124
        return F.one_hot(labels, num_classes)


class FixedOneHot(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.classes = classes

    def forward(self, labels):
        return F.one_hot(labels, self.classes).float()


@torch.compile
def tokens_from_text(text: str):
    ids = [VOCAB.get(ch, VOCAB["<unk>"]) for ch in text]
    return torch.tensor(ids)


@torch.compile
def random_crop(img, size: int = 4):
    h, w = img.shape[-2:]
    top = torch.randint(0, h - size + 1, ()).item()  # expect: FL102 GB0124
    left = torch.randint(0, w - size + 1, ()).item()  # expect: FL102 GB0124
    return img[..., top:top + size, left:left + size]


@torch.compile
def center_crop(img, size: int = 4):
    h, w = img.shape[-2:]
    top, left = (h - size) // 2, (w - size) // 2
    return img[..., top:top + size, left:left + size]


@torch.compile
def mixup(x, y, alpha: float = 0.4):
    lam = torch.distributions.Beta(alpha, alpha).sample()
    perm = torch.randperm(x.shape[0])
    return lam * x + (1 - lam) * x[perm], lam * y + (1 - lam) * y[perm]


@torch.compile
def dedupe_tokens(tokens):
    return torch.unique_consecutive(tokens)  # expect: FL105 GB0036


@torch.compile
def segment_ids(lengths):
    return torch.repeat_interleave(torch.arange(lengths.shape[0]), lengths)  # expect: FL105 GB0036


@torch.compile
def nonzero_positions(mask):
    return torch.argwhere(mask)  # expect: FL105 GB0036


@torch.compile
def masked_values(x, mask):
    return torch.masked_select(x, mask)  # expect: FL105 GB0036


CASES = {
    "PadAndMask": lambda: (PadAndMask(), ([torch.randn(3), torch.randn(5), torch.randn(2)],)),
    "TrimPadding": lambda: (TrimPadding(), (torch.tensor([[3, 4, 0, 0], [5, 0, 0, 0]]),)),
    "TokenLookup": lambda: (TokenLookup(), (torch.tensor([2, 3]),)),
    "Standardize": lambda: (Standardize([0.5, 0.4, 0.3], [0.2, 0.2, 0.2]), (torch.randint(0, 255, (1, 3, 4, 4), dtype=torch.uint8),)),
    "NumpyAugment": lambda: (NumpyAugment(), (torch.randn(2, 5),)),
    "NumpyStats": lambda: (NumpyStats(), (torch.randn(4, 3),)),
    "HostNormalize": lambda: (HostNormalize(), (torch.randn(4, 3),)),
    "ClipOutliers": lambda: (ClipOutliers(), (torch.randn(4, 30),)),
    "RemoveNaNRows": lambda: (RemoveNaNRows(), (torch.tensor([[1.0, float("nan")], [2.0, 3.0]]),)),
    "FillNaN": lambda: (FillNaN(), (torch.tensor([[1.0, float("nan")], [2.0, 3.0]]),)),
    "BucketizeLengths": lambda: (BucketizeLengths(), (torch.tensor([3, 17, 40, 90]),)),
    "OneHotLabels": lambda: (OneHotLabels(), (torch.tensor([0, 2, 1]),)),
    "FixedOneHot": lambda: (FixedOneHot(4), (torch.tensor([0, 2, 1]),)),
    "tokens_from_text": lambda: (tokens_from_text, ("abca",)),
    "random_crop": lambda: (random_crop, (torch.randn(1, 3, 8, 8),)),
    "center_crop": lambda: (center_crop, (torch.randn(1, 3, 8, 8),)),
    "mixup": lambda: (mixup, (torch.randn(4, 3), torch.randn(4, 2))),
    "dedupe_tokens": lambda: (dedupe_tokens, (torch.tensor([1, 1, 2, 2, 3, 1]),)),
    "segment_ids": lambda: (segment_ids, (torch.tensor([2, 1, 3]),)),
    "nonzero_positions": lambda: (nonzero_positions, (torch.rand(3, 3) > 0.5,)),
    "masked_values": lambda: (masked_values, (torch.randn(3, 3), torch.rand(3, 3) > 0.5)),
}
