"""Corpus: code that talks to torch's runtime inside compiled functions -- seeding and
random generators, device and thread queries, dtype promotion, in-graph assertions.

Probed on Dynamo 2.13: the seeding/RNG-state helpers are skipped (GB0007), queries that return
a Python value it cannot fold break ("torch.* op returned non-Tensor", GB0208), a Generator
cannot enter the graph (GB0055 as `generator=`, GB0363 when built), while
`torch.cuda.is_available()`, `torch.is_grad_enabled()`, `torch.get_default_dtype()`,
`torch.finfo` and `generator=None` fold or trace.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

NOISE_GEN = torch.Generator().manual_seed(1234)


def _device_capacity(x):
    # folded to a constant by Dynamo: no break
    return 2 if torch.cuda.is_available() and x.is_cuda else 1


@torch.compile
def reproducible_dropout(x, p: float = 0.1, seed: int = 0):
    torch.manual_seed(seed)  # expect: FL121 GB0007
    keep = torch.rand_like(x) > p
    return x * keep / (1 - p)


@torch.compile
def noisy_targets(y, sigma: float = 0.05):
    noise = torch.randn(y.shape, generator=NOISE_GEN)  # expect: FL127 GB0055
    return y + sigma * noise


@torch.compile
def jitter(x, scale: float = 0.01, generator=None):
    # no generator passed: the default generator is traced
    return x + scale * torch.randn(x.shape, generator=generator)


class GaussianNoise(nn.Module):
    """Adds seeded noise while training; its own generator keeps runs reproducible."""

    def __init__(self, std: float = 0.1, seed: int = 7):
        super().__init__()
        self.std = std
        self.generator = torch.Generator()
        self.generator.manual_seed(seed)

    def forward(self, x):
        if not self.training:
            return x
        noise = torch.randn(x.shape, generator=self.generator)  # expect: FL127 GB0055
        return x + self.std * noise


@torch.compile
def sample_tokens(logits, temperature: float = 1.0, seed: int = 0):
    g = torch.Generator(device=logits.device)  # expect: FL127 GB0363
    g.manual_seed(seed)  # expect: FL127 GB7650
    probs = F.softmax(logits / temperature, dim=-1)
    return torch.multinomial(probs, 1, generator=g)  # expect: FL127 GB0055


@torch.compile
def restore_rng_after_augment(x):
    state = torch.get_rng_state()  # expect: FL121 GB0007
    flipped = torch.flip(x, dims=[-1]) if torch.rand(()) > 0.5 else x  # expect: FL101 GB0170
    torch.set_rng_state(state)  # expect: FL121 GB0007
    return flipped


@torch.compile
def shard_rows(x):
    parts = _device_capacity(x)
    return x.chunk(parts, dim=0)[0] * 2


@torch.compile
def threads_aware_chunks(x):
    workers = torch.get_num_threads()  # expect: FL126 GB0208
    return torch.stack([c.sum() for c in x.chunk(workers)])


@torch.compile
def mixed_precision_add(a, b):
    out_dtype = torch.result_type(a, b)  # expect: FL126 GB0208
    return (a + b).to(out_dtype)


@torch.compile
def promote_and_scale(a, b):
    dtype = torch.promote_types(a.dtype, b.dtype)
    eps = torch.finfo(dtype).eps
    return a.to(dtype) / (b.to(dtype).abs() + eps)


@torch.compile
def grad_aware_norm(x):
    if torch.is_grad_enabled() and x.requires_grad:
        x = x * 1.0
    dtype = torch.get_default_dtype()
    return F.layer_norm(x.to(dtype), x.shape[-1:])


@torch.compile
def seeded_initial_state(x):
    seed = torch.initial_seed()  # expect: FL126 GB0208
    return x + (seed % 7)


class CheckedProjection(nn.Module):
    """Checks its weights against a reference copy before projecting."""

    def __init__(self, dim: int = 4):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.register_buffer("reference", self.proj.weight.detach().clone())

    def forward(self, x):
        torch.testing.assert_close(self.proj.weight, self.reference)  # expect: FL101 GB0170
        return self.proj(x)


@torch.compile
def index_on_device(x, idx):
    where = torch.get_device(x)  # expect: FL126 GB0208
    offsets = torch.arange(idx.shape[0]) + max(where, 0)
    return x[idx] + offsets.unsqueeze(-1)


@torch.compile
def lengths_to_positions(lengths):
    owner = torch.repeat_interleave(lengths)  # expect: FL105 GB0036
    return owner.float().mean()


class SeededMixer(nn.Module):
    """Mixes two inputs with a fresh seed per call (a debugging aid left in)."""

    def __init__(self):
        super().__init__()
        self.mix = nn.Linear(4, 4)

    def forward(self, a, b):
        torch.random.manual_seed(0)  # expect: FL121 GB0007
        lam = torch.rand(())
        return self.mix(lam * a + (1 - lam) * b)


CASES = {
    "reproducible_dropout": lambda: (reproducible_dropout, (torch.ones(3, 5),)),
    "noisy_targets": lambda: (noisy_targets, (torch.zeros(6),)),
    "jitter": lambda: (jitter, (torch.zeros(2, 3),)),
    "gaussian_noise": lambda: (GaussianNoise(), (torch.zeros(2, 3),)),
    "sample_tokens": lambda: (sample_tokens, (torch.randn(2, 5),)),
    "restore_rng": lambda: (restore_rng_after_augment, (torch.arange(6.0).view(2, 3),)),
    "shard_rows": lambda: (shard_rows, (torch.ones(4, 3),)),
    "threads_aware_chunks": lambda: (threads_aware_chunks, (torch.arange(8.0),)),
    "mixed_precision_add": lambda: (mixed_precision_add, (torch.ones(3), torch.ones(3, dtype=torch.float64))),
    "promote_and_scale": lambda: (promote_and_scale, (torch.ones(3), torch.full((3,), 2.0, dtype=torch.float64))),
    "grad_aware_norm": lambda: (grad_aware_norm, (torch.randn(2, 4),)),
    "seeded_initial_state": lambda: (seeded_initial_state, (torch.zeros(3),)),
    "checked_projection": lambda: (CheckedProjection(), (torch.ones(2, 4),)),
    "index_on_device": lambda: (index_on_device, (torch.randn(5, 3), torch.tensor([0, 2, 4]))),
    "lengths_to_positions": lambda: (lengths_to_positions, (torch.tensor([2, 1, 3]),)),
    "seeded_mixer": lambda: (SeededMixer(), (torch.ones(2, 4), torch.zeros(2, 4))),
}
