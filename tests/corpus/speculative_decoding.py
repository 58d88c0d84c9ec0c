"""Speculative decoding for LLM serving (vLLM / HF assisted generation / gpt-fast style): tiny draft
and target decoders, list-of-tensors KV caches, HF-like logits processors and stopping criteria,
Leviathan et al. acceptance/rejection sampling, prefill bucketing and a token-budget scheduler."""
import functools
import logging
import math
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("specdec")
logger.addHandler(logging.NullHandler())

TOY_VOCAB = ["<pad>", "<s>", "</s>"] + list("abcdefghijklmnopqrstuvwxyz")
VOCAB_SIZE = len(TOY_VOCAB)
PAD_ID, BOS_ID, EOS_ID = 0, 1, 2
NEG_INF = float("-inf")
EPS = 1e-8
SLIDING_WINDOW = 8
ROPE_BASE = 10000.0
PREFILL_BUCKETS = (8, 16, 32, 64)
DRAFT_COST_RATIO = 0.25
LOG_EVERY = 1
_COUNTERS: Dict[str, int] = {"verify_calls": 0}
TIMINGS: Dict[str, List[float]] = defaultdict(list)

@dataclass
class ModelArgs:
    vocab_size: int = VOCAB_SIZE
    dim: int = 16
    n_layers: int = 2
    n_heads: int = 2
    ffn_mult: float = 2.0
    norm_eps: float = 1e-6
    tie_embeddings: bool = False

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads

TARGET_ARGS = ModelArgs(dim=16, n_layers=2, n_heads=2)
DRAFT_ARGS = ModelArgs(dim=8, n_layers=1, n_heads=2, tie_embeddings=True)

@dataclass
class SamplingParams:
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    repetition_penalty: float = 1.0
    min_new_tokens: int = 0
    num_speculative_tokens: int = 3
    strategy: str = "multinomial"
    eos_token_id: int = EOS_ID

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0 or self.strategy == "greedy"

# --------------------------------------------------------------------------- model
@functools.lru_cache(maxsize=8)
def _rope_inv_freq(head_dim: int, base: float = ROPE_BASE) -> torch.Tensor:
    return 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))

def apply_rotary(x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """x: (B, H, T, D); positions: (T,)"""
    inv_freq = _rope_inv_freq(x.shape[-1])
    angles = positions[:, None].float() * inv_freq[None, :]
    cos, sin = angles.cos(), angles.sin()
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)

class DynamicKVCache:
    """Per-layer key/value tensors of shape (B, H, S, D), grown with torch.cat."""

    def __init__(self, n_layers: int):
        self.keys: List[Optional[torch.Tensor]] = [None] * n_layers
        self.values: List[Optional[torch.Tensor]] = [None] * n_layers

    @property
    def seq_len(self) -> int:
        first = self.keys[0]
        return 0 if first is None else first.shape[2]

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor):
        if self.keys[layer] is None:
            self.keys[layer], self.values[layer] = k, v
        else:
            self.keys[layer] = torch.cat([self.keys[layer], k], dim=2)
            self.values[layer] = torch.cat([self.values[layer], v], dim=2)
        return self.keys[layer], self.values[layer]

    def trim(self, n_tokens: int) -> None:
        """Drops the last n_tokens positions (the rejected draft tokens) from every layer."""
        if n_tokens <= 0:
            return
        for i, (k, v) in enumerate(zip(self.keys, self.values)):
            keep = k.shape[2] - n_tokens
            self.keys[i], self.values[i] = k[:, :, :keep], v[:, :, :keep]

class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x_f = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return x_f.type_as(x) * self.weight

class CausalSelfAttention(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.n_heads, self.head_dim = args.n_heads, args.head_dim
        self.qkv = nn.Linear(args.dim, 3 * args.dim, bias=False)
        self.proj = nn.Linear(args.dim, args.dim, bias=False)

    def forward(self, x, positions, mask=None, cache: Optional[DynamicKVCache] = None, layer_idx: int = 0):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        q, k = apply_rotary(q, positions), apply_rotary(k, positions)
        if cache is not None:
            k, v = cache.append(layer_idx, k, v)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.proj(out.transpose(1, 2).reshape(B, T, C))

class DecoderLayer(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.attn_norm = RMSNorm(args.dim, args.norm_eps)
        self.attn = CausalSelfAttention(args)
        self.ffn_norm = RMSNorm(args.dim, args.norm_eps)
        hidden = int(args.dim * args.ffn_mult)
        self.ffn = nn.Sequential(nn.Linear(args.dim, hidden), nn.GELU(approximate="tanh"),
                                 nn.Linear(hidden, args.dim))

    def forward(self, x, positions, mask=None, cache=None, layer_idx: int = 0):
        x = x + self.attn(self.attn_norm(x), positions, mask, cache, layer_idx)
        return x + self.ffn(self.ffn_norm(x))

class TinyCausalLM(nn.Module):
    def __init__(self, args: ModelArgs = TARGET_ARGS):
        super().__init__()
        self.args = args
        self.embed = nn.Embedding(args.vocab_size, args.dim)
        self.layers = nn.ModuleList(DecoderLayer(args) for _ in range(args.n_layers))
        self.norm = RMSNorm(args.dim, args.norm_eps)
        self.lm_head = None if args.tie_embeddings else nn.Linear(args.dim, args.vocab_size, bias=False)

    def _mask(self, q_len: int, kv_len: int) -> torch.Tensor:
        return torch.ones(q_len, kv_len, dtype=torch.bool).tril(diagonal=kv_len - q_len)

    def logits(self, h):
        if self.lm_head is None:
            return h @ self.embed.weight.t()
        return self.lm_head(h)

    def forward(self, input_ids, cache: Optional[DynamicKVCache] = None, start_pos: int = 0):
        T = input_ids.shape[1]
        positions = torch.arange(start_pos, start_pos + T)
        mask = self._mask(T, start_pos + T)
        h = self.embed(input_ids)
        for i, layer in enumerate(self.layers):
            h = layer(h, positions, mask, cache, i)
        return self.logits(self.norm(h))

class DraftCausalLM(TinyCausalLM):
    """The draft: one layer, tied embeddings, sliding-window attention."""
    def __init__(self, args: ModelArgs = DRAFT_ARGS, window: int = SLIDING_WINDOW):
        super().__init__(args)
        self.window = window

    def _mask(self, q_len: int, kv_len: int) -> torch.Tensor:
        mask = super()._mask(q_len, kv_len)
        if kv_len > self.window:  # expect: FL301
            mask = mask & torch.ones_like(mask).triu(diagonal=kv_len - q_len - self.window + 1)
        return mask

# --------------------------------------------------------------------------- logits processors
class LogitsProcessor:
    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError(f"{type(self).__name__} must implement __call__")

def _apply_temperature(input_ids, scores, temperature: float = 1.0):
    return scores / temperature

class TopKLogitsWarper(LogitsProcessor):
    def __init__(self, top_k: int, filter_value: float = NEG_INF, min_tokens_to_keep: int = 1):
        self.top_k, self.filter_value = max(top_k, min_tokens_to_keep), filter_value

    def __call__(self, input_ids, scores):
        top_k = min(self.top_k, scores.size(-1))
        kth = torch.topk(scores, top_k)[0][..., -1, None]
        return scores.masked_fill(scores < kth, self.filter_value)

class TopPLogitsWarper(LogitsProcessor):
    def __init__(self, top_p: float, filter_value: float = NEG_INF, min_tokens_to_keep: int = 1):
        self.top_p, self.filter_value, self.min_tokens_to_keep = top_p, filter_value, min_tokens_to_keep

    def __call__(self, input_ids, scores):
        sorted_logits, sorted_idx = torch.sort(scores, descending=False)
        cum_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        remove = cum_probs <= (1 - self.top_p)
        remove[..., -self.min_tokens_to_keep:] = False
        return scores.masked_fill(remove.scatter(-1, sorted_idx, remove), self.filter_value)

class RepetitionPenaltyLogitsProcessor(LogitsProcessor):
    def __init__(self, penalty: float):
        self.penalty = penalty

    def __call__(self, input_ids, scores):
        score = torch.gather(scores, 1, input_ids)
        score = torch.where(score < 0, score * self.penalty, score / self.penalty)
        return scores.scatter(1, input_ids, score)

class MinNewTokensLogitsProcessor(LogitsProcessor):
    def __init__(self, prompt_len: int, min_new_tokens: int, eos_token_id: int = EOS_ID):
        self.prompt_len, self.min_new_tokens, self.eos_token_id = prompt_len, min_new_tokens, eos_token_id

    def __call__(self, input_ids, scores):
        if input_ids.shape[-1] - self.prompt_len < self.min_new_tokens:  # expect: FL301
            scores = scores.clone()
            scores[:, self.eos_token_id] = NEG_INF
        return scores

def _suppress_tokens(input_ids, scores, token_ids=(PAD_ID, BOS_ID)):
    return scores.index_fill(-1, torch.tensor(token_ids), NEG_INF)

class LogitsProcessorList(list):
    def __call__(self, input_ids, scores):
        for processor in self:
            scores = processor(input_ids, scores)
        return scores

def build_processors(params: SamplingParams, prompt_len: int = 0) -> LogitsProcessorList:
    procs = LogitsProcessorList([functools.partial(_suppress_tokens, token_ids=(PAD_ID, BOS_ID))])
    if params.repetition_penalty != 1.0:
        procs.append(RepetitionPenaltyLogitsProcessor(params.repetition_penalty))
    if params.min_new_tokens > 0:
        procs.append(MinNewTokensLogitsProcessor(prompt_len, params.min_new_tokens, params.eos_token_id))
    if not params.greedy and params.temperature != 1.0:
        procs.append(functools.partial(_apply_temperature, temperature=params.temperature))
    if params.top_k > 0:
        procs.append(TopKLogitsWarper(params.top_k))
    if params.top_p < 1.0:
        procs.append(TopPLogitsWarper(params.top_p))
    return procs

DEFAULT_PARAMS = SamplingParams(temperature=0.8, top_k=12, top_p=0.9, repetition_penalty=1.2, min_new_tokens=3)
DEFAULT_PROCESSORS = build_processors(DEFAULT_PARAMS, prompt_len=4)

@torch.compile
def apply_logits_processors(input_ids, scores, processors: Sequence[Callable]):
    for proc in processors:
        scores = proc(input_ids, scores)
    return F.log_softmax(scores, dim=-1)

@torch.compile(dynamic=True)
def process_logits(input_ids, scores):
    return DEFAULT_PROCESSORS(input_ids, scores).softmax(dim=-1)


# --------------------------------------------------------------------------- sampling / verification
def _greedy(probs, generator=None):
    return probs.argmax(dim=-1, keepdim=True)

def _multinomial(probs, generator=None):
    return torch.multinomial(probs, num_samples=1, generator=generator)  # expect: FL000 GB0055

SAMPLERS: Dict[str, Callable] = {"greedy": _greedy, "multinomial": _multinomial}

@torch.compile
def sample_next(logits, params: SamplingParams, generator: Optional[torch.Generator] = None):
    probs = F.softmax(logits / max(params.temperature, EPS), dim=-1)
    sampler = SAMPLERS.get("greedy" if params.greedy else params.strategy, _multinomial)
    return sampler(probs, generator), probs

def _residual(p, q):
    r = (p - q).clamp_min(0.0)
    return r / r.sum(-1, keepdim=True).clamp_min(EPS)

def speculative_accept(draft_tokens, draft_probs, target_probs, uniform):
    """draft_tokens (B, K), draft_probs (B, K, V), target_probs (B, K+1, V), uniform (B, K)."""
    B, K = draft_tokens.shape
    idx = draft_tokens.unsqueeze(-1)
    p = target_probs[:, :K].gather(-1, idx).squeeze(-1)
    q = draft_probs.gather(-1, idx).squeeze(-1)
    n_accepted = (uniform * q <= p).int().cumprod(dim=1).sum(dim=1)  # length of the accepted prefix
    dists = torch.cat([_residual(target_probs[:, :K], draft_probs), target_probs[:, K:]], dim=1)
    gather_idx = n_accepted.view(B, 1, 1).expand(B, 1, dists.shape[-1])
    return n_accepted, dists.gather(1, gather_idx).squeeze(1)

def _accept_prefix(p_tok, q_tok, u) -> int:
    n = 0
    for i in range(p_tok.shape[0]):
        if u[i] * q_tok[i] > p_tok[i]:  # expect: FL000 GB0170
            break
        n += 1
    return n

@torch.compile
def rejection_sample_loop(draft_tokens, draft_probs, target_probs, uniform):
    """One sequence at a time, the way the paper's pseudo-code reads."""
    B, K = draft_tokens.shape
    rows = torch.arange(K)
    accepted, bonus = [], []
    for b in range(B):
        toks = draft_tokens[b]
        n = _accept_prefix(target_probs[b, rows, toks], draft_probs[b, rows, toks], uniform[b])
        dist = target_probs[b, K] if n == K else _residual(target_probs[b, n], draft_probs[b, n])
        accepted.append(n)
        bonus.append(dist.argmax())
    return torch.tensor(accepted), torch.stack(bonus)

@torch.compile
def greedy_verify(draft_tokens, target_logits):
    _COUNTERS["verify_calls"] += 1  # expect: FL302
    target_tokens = target_logits.argmax(dim=-1)  # (B, K+1)
    K = draft_tokens.shape[1]
    n_accepted = (target_tokens[:, :K] == draft_tokens).int().cumprod(dim=1).sum(dim=1)
    if (n_accepted == K).all():  # expect: FL000 GB0170
        return torch.cat([draft_tokens, target_tokens[:, K:]], dim=1), n_accepted
    first_bad = target_tokens.gather(1, n_accepted[:, None])
    keep = torch.arange(K)[None, :] < n_accepted[:, None]
    return torch.cat([draft_tokens.masked_fill(~keep, PAD_ID), first_bad], dim=1), n_accepted

class StepTimer:
    def __init__(self, name: str):
        self.name = name

    def __enter__(self):
        self.start = time.perf_counter()  # expect: FL000 GB0007
        return self

    def __exit__(self, *exc):
        TIMINGS[self.name].append(time.perf_counter() - self.start)

@torch.compile
def score_tree_candidates(target, input_ids, candidates):
    """Medusa-style: score C candidate continuations (C, L) of one prefix and keep the best."""
    C, L = candidates.shape
    with StepTimer("tree_verify"):
        batch = torch.cat([input_ids.expand(C, -1), candidates], dim=1)
        logp = target(batch)[:, -(L + 1):-1].log_softmax(-1)
        scores = logp.gather(-1, candidates.unsqueeze(-1)).squeeze(-1).sum(-1)
    best = scores.argmax().item()
    return candidates[best], scores

# --------------------------------------------------------------------------- speculative decoder
class SpeculativeDecoder(nn.Module):
    def __init__(self, target: TinyCausalLM, draft: TinyCausalLM, params: SamplingParams):
        super().__init__()
        self.target, self.draft = target, draft
        self.params = params
        self.processors = build_processors(params)
        self.num_steps = 0

    def _probs(self, ids, logits):
        return F.softmax(self.processors(ids, logits), dim=-1)

    def propose(self, input_ids, k: int):
        ids, tokens, probs = input_ids, [], []
        for _ in range(k):
            p = self._probs(ids, self.draft(ids)[:, -1])
            nxt = p.argmax(dim=-1, keepdim=True)
            tokens.append(nxt)
            probs.append(p)
            ids = torch.cat([ids, nxt], dim=1)
        return torch.cat(tokens, dim=1), torch.stack(probs, dim=1)

    def forward(self, input_ids, uniform):
        k = self.params.num_speculative_tokens
        T = input_ids.shape[1]
        self.num_steps += 1  # expect: FL302
        draft_tokens, draft_probs = self.propose(input_ids, k)
        candidate = torch.cat([input_ids, draft_tokens], dim=1)
        target_logits = self.target(candidate)[:, -(k + 1):]
        target_probs = torch.stack([self._probs(candidate[:, :T + i], target_logits[:, i])
                                    for i in range(k + 1)], dim=1)
        n_accepted, next_dist = speculative_accept(draft_tokens, draft_probs, target_probs, uniform)
        n_keep = int(n_accepted.min())  # expect: FL000 GB0124
        if self.num_steps % LOG_EVERY == 0:
            logger.info("step %d: accepted %d/%d", self.num_steps, n_keep, k)  # expect: FL000 GB0291
        next_token = next_dist.argmax(dim=-1, keepdim=True)
        return torch.cat([candidate[:, :T + n_keep], next_token], dim=1), n_accepted

@torch.compile
def prefill_and_speculate(model, prompt, draft_tokens, n_rejected: int):
    cache = DynamicKVCache(len(model.layers))
    logits = model(prompt, cache=cache)
    start = prompt.shape[1]
    for i in range(draft_tokens.shape[1]):
        logits = model(draft_tokens[:, i:i + 1], cache=cache, start_pos=start + i)
    cache.trim(n_rejected)
    return logits[:, -1], cache.seq_len

# --------------------------------------------------------------------------- stopping criteria
def decode_tokens(ids: Sequence[int]) -> str:
    return "".join(TOY_VOCAB[i] for i in ids if i > EOS_ID)

class StoppingCriteria:
    def __call__(self, input_ids, scores=None) -> torch.Tensor:
        raise NotImplementedError

class EosTokenCriteria(StoppingCriteria):
    def __init__(self, eos_token_ids: Sequence[int] = (EOS_ID,)):
        self.eos_token_ids = torch.tensor(list(eos_token_ids))

    def __call__(self, input_ids, scores=None):
        return torch.isin(input_ids[:, -1], self.eos_token_ids)

class StopStringCriteria(StoppingCriteria):
    def __init__(self, stop_strings: Sequence[str], lookback: int = 6):
        self.stop_strings, self.lookback = tuple(stop_strings), lookback

    def __call__(self, input_ids, scores=None):
        done = []
        for row in input_ids[:, -self.lookback:].tolist():  # expect: FL000 GB0033
            text = decode_tokens(row)
            done.append(any(text.endswith(s) for s in self.stop_strings))
        return torch.tensor(done, dtype=torch.bool)

class StoppingCriteriaList(list):
    def __call__(self, input_ids, scores=None):
        done = torch.zeros(input_ids.shape[0], dtype=torch.bool)
        for criterion in self:
            done = done | criterion(input_ids, scores)
        return done

@torch.compile
def finished_sequences(input_ids, criteria: StoppingCriteriaList):
    done = criteria(input_ids)
    if not done.any():  # expect: FL000 GB0170
        return None
    return done.nonzero().squeeze(-1)  # expect: FL000 GB0036

# --------------------------------------------------------------------------- batching / scheduling
def _bucket_length(n: int) -> int:
    for bucket in PREFILL_BUCKETS:
        if n <= bucket:  # expect: FL301
            return bucket
    return int(math.ceil(n / PREFILL_BUCKETS[-1]) * PREFILL_BUCKETS[-1])

@torch.compile
def pad_to_bucket(input_ids, pad_id: int = PAD_ID):
    B, T = input_ids.shape
    target_len = _bucket_length(T)
    pad = input_ids.new_full((B, target_len - T), pad_id)
    attention_mask = torch.cat([torch.ones_like(input_ids), torch.zeros_like(pad)], dim=1)
    return torch.cat([input_ids, pad], dim=1), attention_mask.bool()

@dataclass
class TokenBudgetScheduler:
    max_batch_tokens: int = 20
    max_batch_size: int = 3
    chunk_size: int = 6

    @staticmethod
    def num_tokens(ids: torch.Tensor) -> int:
        return int(ids.ne(PAD_ID).sum())  # expect: FL000 GB0124

    def plan(self, lengths: Sequence[int]) -> List[Tuple[int, int]]:
        budget, plan = self.max_batch_tokens, []
        for idx, n in enumerate(lengths):
            if len(plan) >= self.max_batch_size:
                break
            take = min(n, self.chunk_size, budget)
            if take <= 0:
                break
            plan.append((idx, take))
            budget -= take
        return plan

@torch.compile
def pack_scheduled_batch(prompts: List[torch.Tensor], scheduler: TokenBudgetScheduler):
    plan = scheduler.plan([scheduler.num_tokens(p) for p in prompts])
    assert plan, "token budget too small for any request"
    width = max(take for _, take in plan)
    ids = prompts[0].new_full((len(plan), width), PAD_ID)
    mask = torch.zeros(len(plan), width, dtype=torch.bool)
    for row, (idx, take) in enumerate(plan):
        ids[row, :take] = prompts[idx][:take]
        mask[row, :take] = True
    return ids, mask

@torch.compile
def acceptance_histogram(n_accepted, k: int):
    counts = torch.bincount(n_accepted, minlength=k + 1)  # expect: FL000 GB0036
    arr = counts.numpy()
    mean_len = float(np.dot(np.arange(k + 1), arr)) / max(int(arr.sum()), 1)  # expect: FL000 GB0033
    speedup = (mean_len + 1) / (1 + k * DRAFT_COST_RATIO)
    return {"hist": counts, "mean_accepted": mean_len, "speedup": speedup}

# --------------------------------------------------------------------------- cases
def _ids(b, t, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, VOCAB_SIZE, (b, t), generator=g)

def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))

def _uniform(*shape, seed=0):
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed))

def _spec_inputs():  # draft tokens, draft probs (B, K, V), target probs (B, K+1, V), uniforms
    return (_ids(2, 3, 15), _randn(2, 3, VOCAB_SIZE, seed=16).softmax(-1),
            _randn(2, 4, VOCAB_SIZE, seed=17).softmax(-1), _uniform(2, 3, seed=18))

def _models():
    torch.manual_seed(11)
    return TinyCausalLM(TARGET_ARGS).eval(), DraftCausalLM(DRAFT_ARGS).eval()

def _greedy_case():
    logits = _randn(2, 4, VOCAB_SIZE, seed=6)
    draft = logits[:, :3].argmax(-1)
    draft[1, 1] = (draft[1, 1] + 1) % VOCAB_SIZE
    return greedy_verify, (draft, logits)

STOP_CRITERIA = StoppingCriteriaList([EosTokenCriteria(), StopStringCriteria(["ab", "zz"])])
SAMPLING = SamplingParams(temperature=0.7, top_k=9, top_p=0.8, repetition_penalty=1.3)

CASES = {
    "DecoderLayer": lambda: (DecoderLayer(TARGET_ARGS), (_randn(3, 5, 16), torch.arange(5))),
    "TinyCausalLM": lambda: (_models()[0], (_ids(3, 5, 1),)),
    "DraftCausalLM": lambda: (_models()[1], (_ids(3, 5, 2),), (_ids(3, 11, 2),)),
    "SpeculativeDecoder": lambda: (SpeculativeDecoder(*_models(), DEFAULT_PARAMS),
                                   (_ids(2, 5, 3), _uniform(2, 3, seed=4))),
    "apply_logits_processors": lambda: (apply_logits_processors, (_ids(3, 6, 7), _randn(3, VOCAB_SIZE, seed=8),
                                                                  build_processors(SAMPLING))),
    "process_logits": lambda: (process_logits, (_ids(3, 6, 9), _randn(3, VOCAB_SIZE, seed=10)),
                               (_ids(3, 9, 9), _randn(3, VOCAB_SIZE, seed=10))),
    "sample_next": lambda: (sample_next, (_randn(3, VOCAB_SIZE, seed=13), DEFAULT_PARAMS,
                                          torch.Generator().manual_seed(14))),
    "rejection_sample_loop": lambda: (rejection_sample_loop, _spec_inputs()),
    "greedy_verify": _greedy_case,
    "score_tree_candidates": lambda: (score_tree_candidates, (_models()[0], _ids(1, 4, 19), _ids(3, 2, 20))),
    "prefill_and_speculate": lambda: (prefill_and_speculate, (_models()[0], _ids(2, 5, 21), _ids(2, 3, 22), 2)),
    "finished_sequences": lambda: (finished_sequences, (_ids(3, 7, 5).index_fill(1, torch.tensor([6]), EOS_ID),
                                                             STOP_CRITERIA)),
    "pad_to_bucket": lambda: (pad_to_bucket, (_ids(3, 5, 23),), (_ids(3, 11, 23),)),
    "pack_scheduled_batch": lambda: (pack_scheduled_batch,
                                     ([_ids(1, 4, 24)[0], _ids(1, 7, 25)[0], _ids(1, 9, 26)[0]],
                                      TokenBudgetScheduler())),
    "acceptance_histogram": lambda: (acceptance_histogram, (torch.tensor([0, 3, 1, 3, 2, 3]), 3)),
}
