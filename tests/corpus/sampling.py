"""Token sampling and decoding loops: top-k/top-p filtering, greedy and sampled generation."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    kth = torch.topk(logits, k, dim=-1).values[..., -1, None]
    return logits.masked_fill(logits < kth, float("-inf"))


def top_p_filter(logits, p=0.9):
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    cumulative = sorted_logits.softmax(-1).cumsum(-1)
    remove = cumulative - sorted_logits.softmax(-1) > p
    sorted_logits = sorted_logits.masked_fill(remove, float("-inf"))
    return torch.empty_like(logits).scatter(-1, order, sorted_logits)


@torch.compile
def sample_top_k(logits, k: int = 5, temperature: float = 0.8):
    probs = top_k_filter(logits / temperature, k).softmax(-1)
    return torch.multinomial(probs, 1)


@torch.compile
def sample_top_p(logits, p: float = 0.9):
    return torch.multinomial(top_p_filter(logits, p).softmax(-1), 1)


@torch.compile
def min_p_filter(logits, min_p: float = 0.05):
    probs = logits.softmax(-1)
    threshold = probs.max(-1, keepdim=True).values * min_p
    return logits.masked_fill(probs < threshold, float("-inf"))


@torch.compile
def repetition_penalty(logits, generated, penalty: float = 1.2):
    picked = logits.gather(-1, generated)
    picked = torch.where(picked > 0, picked / penalty, picked * penalty)
    return logits.scatter(-1, generated, picked)


@torch.compile
def gumbel_sample(logits, temperature=1.0):
    noise = -torch.log(-torch.log(torch.rand_like(logits).clamp_min(1e-9)))
    return (logits / max(temperature, 1e-10) + noise).argmax(dim=-1)


class TinyLM(nn.Module):
    def __init__(self, vocab=32, dim=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.mix = nn.GRUCell(dim, dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens, state):
        state = self.mix(self.embed(tokens), state)
        return self.head(state), state


class GreedyDecoder(nn.Module):
    """Generates until every sequence has produced EOS: a data-dependent loop."""

    def __init__(self, eos: int = 0, max_new: int = 6):
        super().__init__()
        self.lm = TinyLM()
        self.eos, self.max_new = eos, max_new

    def forward(self, tokens):
        state = torch.zeros(tokens.shape[0], 16)
        done = torch.zeros_like(tokens, dtype=torch.bool)
        out = []
        for _ in range(self.max_new):
            logits, state = self.lm(tokens, state)
            tokens = logits.argmax(-1)
            out.append(tokens)
            done |= tokens == self.eos
            if done.all():  # expect: FL101 GB0170
                break
        return torch.stack(out, 1)


class FixedLengthDecoder(nn.Module):
    """The same loop with a fixed number of steps and EOS handled by masking."""

    def __init__(self, eos: int = 0, steps: int = 4):
        super().__init__()
        self.lm = TinyLM()
        self.eos, self.steps = eos, steps

    def forward(self, tokens):
        state = torch.zeros(tokens.shape[0], 16)
        done = torch.zeros_like(tokens, dtype=torch.bool)
        out = []
        for _ in range(self.steps):
            logits, state = self.lm(tokens, state)
            nxt = logits.argmax(-1)
            tokens = torch.where(done, torch.full_like(nxt, self.eos), nxt)
            done = done | (tokens == self.eos)
            out.append(tokens)
        return torch.stack(out, 1)


class WhileDecoder(nn.Module):
    def __init__(self, eos=0, max_new=5):
        super().__init__()
        self.lm = TinyLM()
        self.eos, self.max_new = eos, max_new

    def forward(self, token):
        state = torch.zeros(1, 16)
        generated = [token]
        while len(generated) <= self.max_new and generated[-1].item() != self.eos:  # expect: FL102 GB0124
            logits, state = self.lm(generated[-1], state)
            generated.append(logits.argmax(-1))
        return torch.cat(generated)


class SampledDecoder(nn.Module):
    def __init__(self, steps=3):
        super().__init__()
        self.lm = TinyLM()
        self.steps = steps

    def forward(self, tokens, temperature: float = 1.0):
        state = torch.zeros(tokens.shape[0], 16)
        for _ in range(self.steps):
            logits, state = self.lm(tokens, state)
            probs = F.softmax(logits / temperature, dim=-1)
            tokens = torch.multinomial(probs, 1).squeeze(-1)
        return tokens


class BeamScorer(nn.Module):
    def __init__(self, beams=3):
        super().__init__()
        self.beams = beams

    def forward(self, scores, logprobs):
        total = scores[:, :, None] + logprobs
        flat = total.flatten(1)
        best, idx = flat.topk(self.beams, dim=-1)
        vocab = logprobs.shape[-1]
        return best, idx // vocab, idx % vocab


class StopOnStringDecoder(nn.Module):
    """Checks generated ids against Python stop sequences."""

    def __init__(self, stop_ids=(3, 4)):
        super().__init__()
        self.lm = TinyLM()
        self.stop_ids = list(stop_ids)

    def forward(self, tokens):
        state = torch.zeros(tokens.shape[0], 16)
        logits, state = self.lm(tokens, state)
        nxt = logits.argmax(-1)
        ids = nxt.tolist()  # expect: FL104 GB0033
        stopped = [i in self.stop_ids for i in ids]  # expect: FL000 GB4347
        return nxt, stopped


@torch.compile
def speculative_accept(draft_probs, target_probs, draft_tokens):
    p = target_probs.gather(-1, draft_tokens[..., None]).squeeze(-1)
    q = draft_probs.gather(-1, draft_tokens[..., None]).squeeze(-1)
    accept = torch.rand_like(p) < (p / q).clamp(max=1.0)
    n_accepted = accept.cumprod(-1).sum(-1)
    return draft_tokens[:, : n_accepted.min()]  # expect: FL102 GB0124


@torch.compile
def entropy_stop(logits, threshold: float = 2.0):
    probs = logits.softmax(-1)
    entropy = -(probs * probs.log()).sum(-1)
    return entropy.mean() < threshold and logits.argmax(-1)  # expect: FL101 GB0170


CASES = {
    "sample_top_k": lambda: (sample_top_k, (torch.randn(2, 32),)),
    "sample_top_p": lambda: (sample_top_p, (torch.randn(2, 32),)),
    "min_p_filter": lambda: (min_p_filter, (torch.randn(2, 32),)),
    "repetition_penalty": lambda: (repetition_penalty, (torch.randn(2, 32), torch.randint(0, 32, (2, 5)))),
    "gumbel_sample": lambda: (gumbel_sample, (torch.randn(2, 32), 0.7)),
    "TinyLM": lambda: (TinyLM(), (torch.randint(0, 32, (3,)), torch.zeros(3, 16))),
    "GreedyDecoder": lambda: (GreedyDecoder(eos=5), (torch.randint(1, 32, (2,)),)),
    "FixedLengthDecoder": lambda: (FixedLengthDecoder(), (torch.randint(1, 32, (2,)),)),
    "WhileDecoder": lambda: (WhileDecoder(), (torch.tensor([7]),)),
    "SampledDecoder": lambda: (SampledDecoder(), (torch.randint(0, 32, (2,)),)),
    "BeamScorer": lambda: (BeamScorer(), (torch.randn(2, 3), torch.randn(2, 3, 32).log_softmax(-1))),
    "StopOnStringDecoder": lambda: (StopOnStringDecoder(), (torch.randint(0, 32, (4,)),)),
    "speculative_accept": lambda: (
        speculative_accept, (torch.rand(2, 4, 32).softmax(-1), torch.rand(2, 4, 32).softmax(-1), torch.randint(0, 32, (2, 4)))),
    "entropy_stop": lambda: (entropy_stop, (torch.randn(2, 32),)),
}
