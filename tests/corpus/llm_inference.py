"""LLM serving-side code: rotary caches, KV-cache append / trim, paged (blocked) caches, speculative
decoding, repetition / frequency penalties, stop sequences, top-k / top-p / min-p sampling, lists of
logit processors."""
import functools
import logging
import math
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger(__name__)

VOCAB = 32
EOS_ID = 2
PAD_ID = 0
BLOCK_SIZE = 4
SERVER_STATS = {"requests": 0, "tokens": 0}


@dataclass
class SamplingParams:
    temperature: float = 0.7
    top_k: int = 8
    top_p: float = 0.9
    min_p: float = 0.05
    repetition_penalty: float = 1.1
    presence_penalty: float = 0.3
    frequency_penalty: float = 0.2
    stop_token_ids: List[int] = field(default_factory=lambda: [EOS_ID, 5])


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def _rope_tables(dim: int, max_len: int, base: float = 10000.0):
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
    freqs = torch.outer(torch.arange(max_len).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


class RotaryCache(nn.Module):
    """Precomputed cos/sin tables indexed by absolute position ids (decode steps pass offsets)."""

    def __init__(self, head_dim: int = 8, max_len: int = 32):
        super().__init__()
        cos, sin = _rope_tables(head_dim, max_len)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, q, k, position_ids):
        cos = self.cos[position_ids][:, None]
        sin = self.sin[position_ids][:, None]
        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class DynamicNTKRotary(nn.Module):
    """Grows (and NTK-rescales) its table when a longer sequence than cached comes in."""

    def __init__(self, head_dim: int = 8, max_position: int = 8, base: float = 10000.0):
        super().__init__()
        self.head_dim, self.base, self.max_position = head_dim, base, max_position
        cos, sin = _rope_tables(head_dim, max_position, base)
        self.register_buffer("cos_cached", cos, persistent=False)
        self.register_buffer("sin_cached", sin, persistent=False)

    def forward(self, x):
        seq_len = x.shape[-2]
        if seq_len > self.max_position:  # expect: FL301
            base = self.base * (seq_len / self.max_position) ** (self.head_dim / (self.head_dim - 2))
            cos, sin = _rope_tables(self.head_dim, seq_len, base)
        else:
            cos, sin = self.cos_cached[:seq_len], self.sin_cached[:seq_len]
        return x * cos + rotate_half(x) * sin


@torch.compile(dynamic=True)
def append_and_trim(k_cache, v_cache, k_new, v_new, window: int = 6):
    k = torch.cat([k_cache, k_new], dim=2)
    v = torch.cat([v_cache, v_new], dim=2)
    if k.size(2) > window:  # expect: FL301
        k, v = k[:, :, -window:], v[:, :, -window:]
    return k, v


class StaticKVCache(nn.Module):
    def __init__(self, batch: int = 2, heads: int = 2, max_len: int = 16, head_dim: int = 8):
        super().__init__()
        self.register_buffer("k", torch.zeros(batch, heads, max_len, head_dim))
        self.register_buffer("v", torch.zeros(batch, heads, max_len, head_dim))

    def forward(self, cache_position, k_new, v_new):
        if cache_position.max() >= self.k.size(2):  # expect: FL000 GB0170
            logger.warning("cache positions %s past max_len=%d, wrapping", cache_position.tolist(), self.k.size(2))  # expect: FL000 GB0033; FL000 GB0291
            cache_position = cache_position % self.k.size(2)
        self.k.index_copy_(2, cache_position, k_new)
        self.v.index_copy_(2, cache_position, v_new)
        valid = torch.arange(self.k.size(2)) <= cache_position.max()
        return self.k, self.v, valid


@torch.compile
def paged_cache_write(key_cache, value_cache, k, v, block_table, positions):
    """key_cache: [num_blocks, block_size, heads, dim]; one new token per sequence."""
    block_idx = block_table.gather(1, (positions // BLOCK_SIZE)[:, None]).squeeze(1)
    slots = block_idx * BLOCK_SIZE + positions % BLOCK_SIZE
    key_cache.view(-1, *key_cache.shape[2:]).index_copy_(0, slots, k)
    value_cache.view(-1, *value_cache.shape[2:]).index_copy_(0, slots, v)
    return slots


@torch.compile
def paged_attention_reference(q, key_cache, value_cache, block_table, seq_lens):
    outputs = []
    for b in range(q.size(0)):
        n = int(seq_lens[b])  # expect: FL000 GB0124
        blocks = block_table[b, : (n + BLOCK_SIZE - 1) // BLOCK_SIZE]
        k = key_cache[blocks].flatten(0, 1)[:n]
        v = value_cache[blocks].flatten(0, 1)[:n]
        attn = torch.einsum("hd,thd->ht", q[b], k) / math.sqrt(q.size(-1))
        outputs.append(torch.einsum("ht,thd->hd", attn.softmax(-1), v))
    return torch.stack(outputs)


@torch.compile
def greedy_verify(draft_tokens, target_logits):
    """Accept the longest prefix of draft tokens that matches the target's argmax, plus one bonus token."""
    target_tokens = target_logits.argmax(-1)
    matches = (draft_tokens == target_tokens[:, :-1]).int().cumprod(-1)
    n_accepted = matches.sum(-1)
    bonus = target_tokens.gather(1, n_accepted[:, None])
    return n_accepted, bonus


def _residual_distribution(p_target, p_draft):
    residual = (p_target - p_draft).clamp_min(0)
    return residual / residual.sum(-1, keepdim=True)


@torch.compile
def speculative_accept(draft_tokens, draft_probs, target_probs):
    """Leviathan et al. rejection sampling for one sequence: draft_tokens [k], probs [k + 1, V]."""
    k = draft_tokens.size(0)
    idx = torch.arange(k)
    p = target_probs[idx, draft_tokens]
    q = draft_probs[idx, draft_tokens]
    accept = torch.rand(k) < (p / q).clamp(max=1.0)
    n_accepted = int(accept.int().cumprod(0).sum())  # expect: FL000 GB0124
    if n_accepted < k:
        dist = _residual_distribution(target_probs[n_accepted], draft_probs[n_accepted])
    else:
        dist = target_probs[k]
    next_token = torch.multinomial(dist, 1)
    return torch.cat([draft_tokens[:n_accepted], next_token])


@torch.compile
def apply_penalties(logits, output_ids, params: SamplingParams):
    counts = torch.zeros_like(logits).scatter_add_(1, output_ids, torch.ones_like(output_ids, dtype=logits.dtype))
    seen = counts > 0
    rep = torch.where(logits > 0, logits / params.repetition_penalty, logits * params.repetition_penalty)
    logits = torch.where(seen, rep, logits)
    return logits - params.frequency_penalty * counts - params.presence_penalty * seen.float()


@torch.compile(mode="max-autotune-no-cudagraphs")
def sample_top_k_top_p_min_p(logits, top_k: int, top_p: float, min_p: float, temperature: float):
    logits = logits / max(temperature, 1e-5)
    kth = logits.topk(top_k, dim=-1).values[:, -1:]
    logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = logits.softmax(-1)
    probs = probs.masked_fill(probs < min_p * probs.amax(-1, keepdim=True), 0.0)
    sorted_probs, order = probs.sort(-1, descending=True)
    cum = sorted_probs.cumsum(-1)
    sorted_probs = sorted_probs.masked_fill(cum - sorted_probs > top_p, 0.0)
    probs = torch.zeros_like(probs).scatter(-1, order, sorted_probs)
    return torch.multinomial(probs / probs.sum(-1, keepdim=True), 1)


@torch.compile
def mixed_greedy_and_sampled(logits, temperatures):
    """Per-request temperatures; 0 means greedy (the way serving engines batch both kinds)."""
    greedy = temperatures == 0
    next_tokens = logits.argmax(-1)
    if not greedy.all():  # expect: FL000 GB0170
        probs = (logits / temperatures.clamp_min(1e-5)[:, None]).softmax(-1)
        sampled = torch.multinomial(probs, 1).squeeze(-1)
        next_tokens = torch.where(greedy, next_tokens, sampled)
    return next_tokens


def _ends_with(seq: Sequence[int], stop: Sequence[int]) -> bool:
    return len(seq) >= len(stop) and list(seq[-len(stop):]) == list(stop)


@torch.compile
def check_stop_sequences(token_ids, stop_sequences: List[List[int]]):
    finished = []
    for row in token_ids:
        ids = row.tolist()  # expect: FL000 GB0033
        finished.append(any(_ends_with(ids, s) for s in stop_sequences))
    return torch.tensor(finished)


@torch.compile
def stop_sequence_mask(token_ids, stop_sequences: List[List[int]]):
    finished = torch.zeros(token_ids.size(0), dtype=torch.bool)
    for s in stop_sequences:
        tail = token_ids[:, -len(s):]
        finished |= (tail == torch.tensor(s)).all(-1)
    return finished


class ToyDetokenizer:
    def __init__(self, vocab_size: int = VOCAB):
        self.id_to_piece = {i: chr(ord("a") + i % 26) for i in range(3, vocab_size)}

    def decode(self, ids: List[int]) -> str:
        pieces = []
        for i in ids:
            try:
                pieces.append(self.id_to_piece[i])
            except KeyError:
                pieces.append("")
        return "".join(pieces)


@torch.compile
def stop_strings_hit(token_ids, detok: ToyDetokenizer, stop_strings: List[str]):
    text = detok.decode(token_ids.tolist())  # expect: FL000 GB0033
    hits = [s for s in stop_strings if s in text]
    return len(hits) > 0, text


class MinLengthProcessor:
    def __init__(self, min_length: int, eos_id: int = EOS_ID):
        self.min_length, self.eos_id = min_length, eos_id

    def __call__(self, input_ids, scores):
        if input_ids.shape[-1] < self.min_length:
            scores = scores.clone()
            scores[:, self.eos_id] = float("-inf")
        return scores


class NoBadWordsProcessor:
    def __init__(self, bad_words_ids: List[List[int]]):
        self.bad_words_ids = bad_words_ids

    def __call__(self, input_ids, scores):
        for b, row in enumerate(input_ids):
            prefix = row.tolist()  # expect: FL000 GB0033
            for bad in self.bad_words_ids:
                if _ends_with(prefix, bad[:-1]):
                    scores[b, bad[-1]] = float("-inf")
        return scores


def temperature_processor(t: float) -> Callable:
    def _apply(input_ids, scores):
        return scores / t
    return _apply


def _suppress(input_ids, scores, token_ids=()):
    return scores.index_fill(-1, torch.tensor(list(token_ids), dtype=torch.long), float("-inf"))


@torch.compile
def run_processors(input_ids, scores, processors: List[Callable]):
    for proc in processors:
        scores = proc(input_ids, scores)
    return scores


class GreedyDecoder(nn.Module):
    """Tiny LM with a greedy loop that stops on EOS (requests are decoded one at a time)."""

    def __init__(self, vocab: int = VOCAB, dim: int = 8, max_new_tokens: int = 4, stop_ids=(EOS_ID,)):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.mix = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, vocab)
        self.max_new_tokens = max_new_tokens
        self.stop_ids = set(stop_ids)

    def forward(self, prompt):
        ids = prompt
        for _ in range(self.max_new_tokens):
            h = torch.tanh(self.mix(self.embed(ids).mean(0)))
            next_id = self.head(h).argmax(-1, keepdim=True)
            ids = torch.cat([ids, next_id])
            if next_id.item() in self.stop_ids:  # expect: FL000 GB0124
                break
        return ids


class LogprobsHead(nn.Module):
    """Returns the chosen token plus the top-n alternatives as {token_id: logprob} (OpenAI-style)."""

    def __init__(self, dim: int = 8, vocab: int = VOCAB, top_n: int = 3):
        super().__init__()
        self.head = nn.Linear(dim, vocab)
        self.top_n = top_n

    def forward(self, h):
        logprobs = self.head(h).log_softmax(-1)
        vals, idx = logprobs.topk(self.top_n, dim=-1)
        top = [{i: round(lp, 4) for i, lp in zip(ri, rv)} for ri, rv in zip(idx.tolist(), vals.tolist())]  # expect: FL000 GB0033; FL000 GB0109
        return idx[:, 0], top


def alibi_slopes(n_heads: int) -> List[float]:
    closest = 2 ** math.floor(math.log2(n_heads))
    base = 2.0 ** (-(2.0 ** -(math.log2(closest) - 3)))
    slopes = [base ** (i + 1) for i in range(closest)]
    if closest < n_heads:
        extra = 2.0 ** (-(2.0 ** -(math.log2(2 * closest) - 3)))
        slopes += [extra ** (2 * i + 1) for i in range(n_heads - closest)]
    return slopes


class SlidingWindowAlibiAttention(nn.Module):
    def __init__(self, dim: int = 12, heads: int = 3, window: int = 4):
        super().__init__()
        self.heads, self.window = heads, window
        self.qkv = nn.Linear(dim, 3 * dim)
        self.register_buffer("slopes", torch.tensor(alibi_slopes(heads)))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        pos = torch.arange(T)
        rel = pos[None, :] - pos[:, None]
        bias = self.slopes[:, None, None] * rel[None].float()
        allowed = (rel <= 0) & (rel > -self.window)
        bias = bias.masked_fill(~allowed, float("-inf"))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias[None])
        return out.transpose(1, 2).reshape(B, T, C)


@torch.compile
def count_served_tokens(output_ids, lengths):
    SERVER_STATS["requests"] += output_ids.size(0)  # expect: FL302
    return (torch.arange(output_ids.size(1))[None, :] < lengths[:, None]).sum()


@torch.compile
def prefix_cache_keys(token_ids, block_size: int = BLOCK_SIZE):
    keys = []
    parent = None
    n_full = token_ids.size(0) // block_size
    for i in range(n_full):
        block = tuple(token_ids[i * block_size:(i + 1) * block_size].tolist())  # expect: FL000 GB0033
        parent = hash((parent, block))
        keys.append(parent)
    return keys


@torch.compile
def pad_requests(requests: List[List[int]], pad_id: int = PAD_ID):
    max_len = max(len(r) for r in requests)
    padded = [[pad_id] * (max_len - len(r)) + r for r in requests]
    ids = torch.tensor(padded)
    attention_mask = ids != pad_id
    position_ids = (attention_mask.long().cumsum(-1) - 1).clamp_min(0)
    return ids, attention_mask, position_ids


def _probs(*shape):
    return torch.randn(*shape).mul(3).softmax(-1)


CASES = {
    "RotaryCache": lambda: (RotaryCache(), (torch.randn(2, 2, 3, 8), torch.randn(2, 2, 3, 8), torch.tensor([[4, 5, 6], [0, 1, 2]]))),
    "DynamicNTKRotary": lambda: (DynamicNTKRotary(), (torch.randn(2, 3, 5, 8),), (torch.randn(3, 4, 11, 8),)),
    "append_and_trim": lambda: (append_and_trim, (torch.randn(2, 3, 4, 6), torch.randn(2, 3, 4, 6), torch.randn(2, 3, 5, 6), torch.randn(2, 3, 5, 6), 10),
                                (torch.randn(2, 3, 7, 6), torch.randn(2, 3, 7, 6), torch.randn(2, 3, 5, 6), torch.randn(2, 3, 5, 6), 10)),
    "StaticKVCache": lambda: (StaticKVCache(), (torch.tensor([3, 4, 5]), torch.randn(2, 2, 3, 8), torch.randn(2, 2, 3, 8))),
    "StaticKVCache_wrap": lambda: (StaticKVCache(), (torch.tensor([14, 15, 16]), torch.randn(2, 2, 3, 8), torch.randn(2, 2, 3, 8))),
    "paged_cache_write": lambda: (paged_cache_write, (torch.zeros(6, BLOCK_SIZE, 2, 8), torch.zeros(6, BLOCK_SIZE, 2, 8), torch.randn(2, 2, 8),
                                                      torch.randn(2, 2, 8), torch.tensor([[3, 1, 0], [5, 2, 4]]), torch.tensor([5, 9]))),
    "paged_attention_reference": lambda: (paged_attention_reference, (torch.randn(2, 2, 8), torch.randn(6, BLOCK_SIZE, 2, 8), torch.randn(6, BLOCK_SIZE, 2, 8),
                                                                      torch.tensor([[3, 1, 0], [5, 2, 4]]), torch.tensor([6, 10]))),
    "greedy_verify": lambda: (greedy_verify, (torch.tensor([[3, 7, 9], [4, 4, 1]]), torch.randn(2, 4, VOCAB))),
    "speculative_accept": lambda: (speculative_accept, (torch.tensor([3, 7, 9, 11]), _probs(5, VOCAB), _probs(5, VOCAB))),
    "speculative_accept_all": lambda: (speculative_accept, (torch.tensor([3, 7, 9, 11]), p := _probs(5, VOCAB), p.clone())),
    "apply_penalties": lambda: (apply_penalties, (torch.randn(2, VOCAB), torch.tensor([[3, 3, 7], [1, 9, 9]]), SamplingParams())),
    "sample_top_k_top_p_min_p": lambda: (sample_top_k_top_p_min_p, (torch.randn(3, VOCAB), 8, 0.9, 0.05, 0.7)),
    "mixed_greedy_and_sampled": lambda: (mixed_greedy_and_sampled, (torch.randn(3, VOCAB), torch.tensor([0.0, 0.8, 1.0]))),
    "mixed_greedy_all_greedy": lambda: (mixed_greedy_and_sampled, (torch.randn(3, VOCAB), torch.zeros(3))),
    "check_stop_sequences": lambda: (check_stop_sequences, (torch.tensor([[4, 9, 2], [6, 7, 8]]), [[2], [7, 8]])),
    "stop_sequence_mask": lambda: (stop_sequence_mask, (torch.tensor([[4, 9, 2], [6, 7, 8]]), [[2], [7, 8]])),
    "stop_strings_hit": lambda: (stop_strings_hit, (torch.tensor([7, 8, 1, 9, 10]), ToyDetokenizer(), ["hi", "kl"])),
    "run_processors": lambda: (run_processors, (torch.tensor([[3, 4], [5, 6]]), torch.randn(2, VOCAB),
                                                [MinLengthProcessor(4), temperature_processor(0.7), functools.partial(_suppress, token_ids=(PAD_ID, 1))])),
    "run_processors_bad_words": lambda: (run_processors, (torch.tensor([[3, 4], [5, 6]]), torch.randn(2, VOCAB),
                                                          [NoBadWordsProcessor([[4, 9], [6, 11]]), temperature_processor(0.7)])),
    "GreedyDecoder": lambda: (GreedyDecoder(), (torch.tensor([5, 9, 3]),)),
    "GreedyDecoder_stops": lambda: (GreedyDecoder(stop_ids=range(VOCAB)), (torch.tensor([5, 9, 3]),)),
    "LogprobsHead": lambda: (LogprobsHead(), (torch.randn(2, 8),)),
    "SlidingWindowAlibiAttention": lambda: (SlidingWindowAlibiAttention(), (torch.randn(2, 5, 12),)),
    "count_served_tokens": lambda: (count_served_tokens, (torch.randint(0, VOCAB, (2, 5)), torch.tensor([3, 5]))),
    "prefix_cache_keys": lambda: (prefix_cache_keys, (torch.tensor([5, 6, 7, 8, 9, 10, 11, 12, 13, 14]),)),
    "pad_requests": lambda: (pad_requests, ([[5, 6, 7], [8, 9], [10, 11, 12, 13]],)),
}
