"""Inference plumbing for a small code LLM (StarCoder / CodeLlama style): rotary GQA decoder, KV cache,
fill-in-the-middle prompts, HF-style logits processors and stopping criteria, beam / best-of-n
selection and token accounting for usage reports."""
import functools
import inspect
import logging
import math
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("codegen.sampling")
logger.addHandler(logging.NullHandler())

VOCAB_SIZE = 96
PAD_ID, BOS_ID, EOS_ID = 0, 1, 2
FIM_PREFIX_ID, FIM_MIDDLE_ID, FIM_SUFFIX_ID = 3, 4, 5
_CHAR_OFFSET = 10  # ids >= 10 are printable ASCII, so masks can reason about the text
OPEN_BRACKETS, CLOSE_BRACKETS = "([{", ")]}"
NEG_INF = float("-inf")
MAX_CONTEXT = 24
STOP_SEQUENCES = ("\ndef ", "\nclass ", "\nif __name__", "\n#")
VALIDATE_TOKEN_IDS = True

def char_to_id(ch: str) -> int:
    return _CHAR_OFFSET + (ord(ch) - 32) % (VOCAB_SIZE - _CHAR_OFFSET)

def id_to_char(tok: int) -> str:
    return "" if tok < _CHAR_OFFSET else chr(32 + tok - _CHAR_OFFSET)

def encode(text: str, bos: bool = False) -> List[int]:
    return ([BOS_ID] if bos else []) + [char_to_id(c) for c in text]

def decode(ids: Sequence[int]) -> str:
    return "".join(id_to_char(int(t)) for t in ids)  # expect: FL000 GB0124

BRACKET_IDS: Dict[int, str] = {char_to_id(c): c for c in OPEN_BRACKETS + CLOSE_BRACKETS}

def check_token_ids(input_ids, vocab_size: int):
    if VALIDATE_TOKEN_IDS and (input_ids >= vocab_size).any():  # expect: FL000 GB0170
        raise IndexError(f"token id out of range for a vocabulary of {vocab_size}")

@dataclass
class CodeLMConfig:
    vocab_size: int = VOCAB_SIZE
    hidden_size: int = 32
    num_layers: int = 2
    num_heads: int = 4
    num_kv_heads: int = 2
    intermediate_size: int = 48
    rope_theta: float = 10000.0
    max_position_embeddings: int = 64
    rms_eps: float = 1e-5
    sliding_window: Optional[int] = None

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @property
    def num_kv_groups(self) -> int:
        return self.num_heads // self.num_kv_heads

# --------------------------------------------------------------------------- building blocks

class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(dim)), eps

    def forward(self, x):
        variance = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(variance + self.eps)).to(x.dtype) * self.weight

class RotaryEmbedding(nn.Module):
    def __init__(self, dim: int, max_position: int = 64, base: float = 10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.max_seq_len_cached = 0
        self._set_cos_sin_cache(max_position)

    def _set_cos_sin_cache(self, seq_len: int):
        self.max_seq_len_cached = seq_len  # expect: FL302
        emb = torch.outer(torch.arange(seq_len, dtype=torch.float32), self.inv_freq).repeat(1, 2)
        self._cos_cached, self._sin_cached = emb.cos(), emb.sin()

    def forward(self, x, seq_len: Optional[int] = None):
        seq_len = x.shape[-2] if seq_len is None else seq_len
        if seq_len > self.max_seq_len_cached:
            logger.debug("growing rotary cache %d -> %d", self.max_seq_len_cached, seq_len)  # expect: FL000 GB0291
            self._set_cos_sin_cache(seq_len)
        return self._cos_cached[:seq_len].to(x.dtype), self._sin_cached[:seq_len].to(x.dtype)

def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)

def apply_rotary_pos_emb(q, k, cos, sin, position_ids):
    cos, sin = cos[position_ids].unsqueeze(1), sin[position_ids].unsqueeze(1)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin

def repeat_kv(x, n_rep: int):
    if n_rep == 1:
        return x
    b, h, s, d = x.shape
    return x[:, :, None].expand(b, h, n_rep, s, d).reshape(b, h * n_rep, s, d)

def _causal_bias(q_len: int, kv_len: int, sliding_window: Optional[int] = None):
    bias = torch.full((q_len, kv_len), NEG_INF).triu(kv_len - q_len + 1)
    if sliding_window is not None and kv_len > sliding_window:  # expect: FL301
        too_old = torch.ones(q_len, kv_len, dtype=torch.bool).tril(kv_len - q_len - sliding_window)
        bias = bias.masked_fill(too_old, NEG_INF)
    return bias[None, None]

class DynamicKVCache:
    def __init__(self):
        self.key_cache: List[torch.Tensor] = []
        self.value_cache: List[torch.Tensor] = []

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.key_cache[layer_idx].shape[-2] if len(self.key_cache) > layer_idx else 0

    def update(self, k, v, layer_idx: int):
        if len(self.key_cache) <= layer_idx:
            self.key_cache.append(k)
            self.value_cache.append(v)
        else:
            self.key_cache[layer_idx] = torch.cat([self.key_cache[layer_idx], k], dim=-2)
            self.value_cache[layer_idx] = torch.cat([self.value_cache[layer_idx], v], dim=-2)
        return self.key_cache[layer_idx], self.value_cache[layer_idx]

class GQAAttention(nn.Module):
    def __init__(self, cfg: CodeLMConfig, layer_idx: int = 0):
        super().__init__()
        self.cfg, self.layer_idx = cfg, layer_idx
        self.q_proj = nn.Linear(cfg.hidden_size, cfg.num_heads * cfg.head_dim, bias=False)
        self.k_proj = nn.Linear(cfg.hidden_size, cfg.num_kv_heads * cfg.head_dim, bias=False)
        self.v_proj = nn.Linear(cfg.hidden_size, cfg.num_kv_heads * cfg.head_dim, bias=False)
        self.o_proj = nn.Linear(cfg.num_heads * cfg.head_dim, cfg.hidden_size, bias=False)
        self.rotary_emb = RotaryEmbedding(cfg.head_dim, cfg.max_position_embeddings, cfg.rope_theta)

    def _project(self, hidden):
        bsz, q_len, _ = hidden.shape
        shape = functools.partial(torch.Tensor.view, size=(bsz, q_len, -1, self.cfg.head_dim))
        return tuple(shape(proj(hidden)).transpose(1, 2) for proj in (self.q_proj, self.k_proj, self.v_proj))

    def _attend(self, q, k, v, bias=None):
        k, v = repeat_kv(k, self.cfg.num_kv_groups), repeat_kv(v, self.cfg.num_kv_groups)
        attn = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.cfg.head_dim)
        if bias is not None:
            attn = attn + bias
        attn = F.softmax(attn, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(attn, v).transpose(1, 2)
        return self.o_proj(out.reshape(out.shape[0], out.shape[1], -1))

    def forward(self, hidden, past_key_value: Optional[DynamicKVCache] = None):
        q_len = hidden.shape[1]
        q, k, v = self._project(hidden)
        past_len = past_key_value.get_seq_length(self.layer_idx) if past_key_value is not None else 0
        cos, sin = self.rotary_emb(v, seq_len=past_len + q_len)
        position_ids = torch.arange(past_len, past_len + q_len).unsqueeze(0)
        q, k = apply_rotary_pos_emb(q, k, cos, sin, position_ids)
        if past_key_value is not None:
            k, v = past_key_value.update(k, v, self.layer_idx)
        bias = _causal_bias(q_len, k.shape[-2], self.cfg.sliding_window) if q_len > 1 else None
        return self._attend(q, k, v, bias)

class DecoderLayer(nn.Module):
    def __init__(self, cfg: CodeLMConfig, layer_idx: int):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_eps)
        self.self_attn = GQAAttention(cfg, layer_idx)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_eps)
        self.gate_up_proj = nn.Linear(cfg.hidden_size, 2 * cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, hidden, past_key_value: Optional[DynamicKVCache] = None):
        hidden = hidden + self.self_attn(self.input_layernorm(hidden), past_key_value)
        gate, up = self.gate_up_proj(self.post_attention_layernorm(hidden)).chunk(2, dim=-1)
        return hidden + self.down_proj(F.silu(gate) * up)

@dataclass
class CausalLMOutput:
    logits: torch.Tensor
    past_key_values: Optional[DynamicKVCache] = None
    hidden_states: Optional[List[torch.Tensor]] = None

class TinyCodeLM(nn.Module):
    def __init__(self, cfg: Optional[CodeLMConfig] = None):
        super().__init__()
        self.cfg = cfg = cfg or CodeLMConfig()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size, padding_idx=PAD_ID)
        self.layers = nn.ModuleList(DecoderLayer(cfg, i) for i in range(cfg.num_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_eps)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.embed_tokens.weight  # tied, as in most small code models

    def forward(self, input_ids, past_key_values: Optional[DynamicKVCache] = None,
                use_cache: bool = False, output_hidden_states: bool = False):
        if use_cache and past_key_values is None:
            past_key_values = DynamicKVCache()
        check_token_ids(input_ids, self.cfg.vocab_size)
        hidden = self.embed_tokens(input_ids)
        all_hidden = [] if output_hidden_states else None
        for layer in self.layers:
            if all_hidden is not None:
                all_hidden.append(hidden)
            hidden = layer(hidden, past_key_values if use_cache else None)
        logits = self.lm_head(self.norm(hidden)).float()
        return CausalLMOutput(logits, past_key_values if use_cache else None, all_hidden)

class UsageTrackingLM(TinyCodeLM):
    def __init__(self, cfg: Optional[CodeLMConfig] = None):
        super().__init__(cfg)
        self.tokens_processed = 0

    def forward(self, input_ids, **kwargs):
        self.tokens_processed += input_ids.numel()  # expect: FL302
        return super().forward(input_ids, **kwargs)

def init_weights(module: nn.Module, seed: int = 0, std: float = 0.02) -> nn.Module:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if not name.endswith("norm.weight"):
                p.normal_(0.0, std, generator=g)
    return module

# --------------------------------------------------------------------------- fill-in-the-middle

@dataclass(frozen=True)
class FIMConfig:
    mode: str = "psm"
    max_len: int = MAX_CONTEXT
    suffix_share: float = 0.25

class FIMPromptBuilder:
    def __init__(self, cfg: FIMConfig = FIMConfig()):
        self.cfg = cfg

    @staticmethod
    def _sentinel(batch: int, tok: int):
        return torch.full((batch, 1), tok, dtype=torch.long)

    def _order_psm(self, pre, suf):
        b = pre.shape[0]
        return torch.cat([self._sentinel(b, FIM_PREFIX_ID), pre, self._sentinel(b, FIM_SUFFIX_ID), suf,
                          self._sentinel(b, FIM_MIDDLE_ID)], dim=-1)

    def truncate(self, pre, suf):
        budget = self.cfg.max_len - 3
        if pre.shape[-1] + suf.shape[-1] <= budget:  # expect: FL301
            return pre, suf
        keep_suf = min(suf.shape[-1], max(int(budget * self.cfg.suffix_share), 1))
        keep_pre = budget - keep_suf
        return pre[:, pre.shape[-1] - keep_pre:], suf[:, :keep_suf]

    def __call__(self, pre, suf):
        pre, suf = self.truncate(pre, suf)
        return getattr(self, f"_order_{self.cfg.mode}")(pre, suf)

@torch.compile
def assemble_fim_batch(builder: FIMPromptBuilder, prefix_ids, suffix_ids):
    ids = builder(prefix_ids, suffix_ids)
    attention_mask = (ids != PAD_ID).long()
    position_ids = (attention_mask.cumsum(-1) - 1).clamp_min(0)
    return ids, attention_mask, position_ids

# --------------------------------------------------------------------------- logits processors

class LogitsProcessor:
    def __call__(self, input_ids, scores):
        raise NotImplementedError(f"{type(self).__name__} must implement __call__")

class RepetitionPenaltyLogitsProcessor(LogitsProcessor):
    def __init__(self, penalty: float):
        self.penalty = penalty

    def __call__(self, input_ids, scores):
        score = torch.gather(scores, 1, input_ids)
        score = torch.where(score < 0, score * self.penalty, score / self.penalty)
        return scores.scatter(1, input_ids, score)

class TemperatureLogitsWarper(LogitsProcessor):
    def __init__(self, temperature: float):
        self.temperature = temperature

    def __call__(self, input_ids, scores):
        return scores / self.temperature

class TopPLogitsWarper(LogitsProcessor):
    def __init__(self, top_p: float, min_tokens_to_keep: int = 1):
        if not 0.0 <= top_p <= 1.0:
            raise ValueError(f"top_p has to be in [0, 1], got {top_p}")
        self.top_p, self.min_tokens_to_keep = float(top_p), min_tokens_to_keep

    def __call__(self, input_ids, scores):
        sorted_logits, sorted_idx = torch.sort(scores, descending=False)
        cum_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        sorted_remove = cum_probs <= (1 - self.top_p)
        sorted_remove[..., -self.min_tokens_to_keep:] = False
        remove = sorted_remove.scatter(1, sorted_idx, sorted_remove)
        return scores.masked_fill(remove, NEG_INF)

class BracketBalanceProcessor(LogitsProcessor):
    def __init__(self):
        self.open_ids = torch.tensor([char_to_id(c) for c in OPEN_BRACKETS])
        self.close_ids = torch.tensor([char_to_id(c) for c in CLOSE_BRACKETS])

    def __call__(self, input_ids, scores):
        depth = torch.isin(input_ids, self.open_ids).sum(-1) - torch.isin(input_ids, self.close_ids).sum(-1)
        mask = torch.zeros_like(scores, dtype=torch.bool)
        mask[:, self.close_ids] = (depth <= 0)[:, None]
        return scores.masked_fill(mask, NEG_INF)

def _open_stack(ids: Sequence[int]) -> List[str]:
    stack: List[str] = []
    for ch in filter(None, map(BRACKET_IDS.get, ids)):
        if ch in OPEN_BRACKETS:
            stack.append(ch)
        elif stack and OPEN_BRACKETS.index(stack[-1]) == CLOSE_BRACKETS.index(ch):
            stack.pop()
    return stack

class MatchingBracketProcessor(BracketBalanceProcessor):
    def __call__(self, input_ids, scores):
        allowed = []
        for row in input_ids.tolist():  # expect: FL000 GB0033
            stack = _open_stack(row)
            expected = CLOSE_BRACKETS[OPEN_BRACKETS.index(stack[-1])] if stack else None
            allowed.append([c == expected for c in CLOSE_BRACKETS])
        mask = torch.zeros_like(scores, dtype=torch.bool)
        mask[:, self.close_ids] = ~torch.tensor(allowed, device=scores.device)
        return scores.masked_fill(mask, NEG_INF)

def make_temperature_schedule(start: float, end: float, horizon: int):
    def anneal(input_ids, scores):
        frac = max(0.0, 1.0 - input_ids.shape[-1] / horizon)
        return scores / (end + (start - end) * frac)
    return anneal

class LogitsProcessorList(list):
    def __call__(self, input_ids, scores, **kwargs):
        for processor in self:
            extra = kwargs if len(inspect.signature(processor).parameters) > 2 else {}
            scores = processor(input_ids, scores, **extra)
        return scores

PROCESSORS: Dict[str, Callable[..., LogitsProcessor]] = {
    "repetition_penalty": RepetitionPenaltyLogitsProcessor, "temperature": TemperatureLogitsWarper,
    "top_p": TopPLogitsWarper, "balance": BracketBalanceProcessor, "matching": MatchingBracketProcessor,
}

def build_processors(**gen_cfg) -> LogitsProcessorList:
    procs = LogitsProcessorList()
    for key, value in gen_cfg.items():
        ctor = PROCESSORS[key]
        procs.append(ctor(*value) if isinstance(value, tuple) else ctor(value))
    return procs

@torch.compile
def process_logits(processors: LogitsProcessorList, input_ids, scores):
    return processors(input_ids, scores)

@torch.compile
def sample_next_tokens(input_ids, logits, warpers: LogitsProcessorList, generator=None, do_sample: bool = True):
    scores = warpers(input_ids, logits)
    if not do_sample:
        return scores.argmax(-1, keepdim=True)
    probs = F.softmax(scores, dim=-1)
    return torch.multinomial(probs, num_samples=1, generator=generator)  # expect: FL000 GB0055

# --------------------------------------------------------------------------- stopping criteria

class EosTokenCriteria:
    def __init__(self, eos_token_id):
        self.eos_token_id = torch.tensor([eos_token_id] if isinstance(eos_token_id, int) else eos_token_id)

    def __call__(self, input_ids, scores):
        return torch.isin(input_ids[:, -1], self.eos_token_id)

class StopStringCriteria:
    def __init__(self, stop_strings: Sequence[str], lookback: int = 8):
        self.stop_strings, self.lookback = tuple(stop_strings), lookback

    def __call__(self, input_ids, scores):
        tails = [decode(row[-self.lookback:]) for row in input_ids]
        return torch.tensor([any(s in t for s in self.stop_strings) for t in tails])

class StoppingCriteriaList(list):
    def __call__(self, input_ids, scores):
        is_done = torch.full((input_ids.shape[0],), False)
        for criteria in self:
            is_done = is_done | criteria(input_ids, scores)
        return is_done

@torch.compile
def check_stopping(criteria: StoppingCriteriaList, input_ids, scores):
    done = criteria(input_ids, scores)
    return done, done.all()

@torch.compile
def generate_greedy(model, input_ids, processors, stopping, max_new_tokens: int = 3,
                    streamer_callbacks: Sequence[Callable] = ()):
    unfinished = torch.ones(input_ids.shape[0], dtype=torch.bool)
    cache = DynamicKVCache()
    model_input = input_ids
    for step in range(max_new_tokens):
        out = model(model_input, past_key_values=cache, use_cache=True)
        scores = processors(input_ids, out.logits[:, -1, :])
        next_tokens = torch.where(unfinished, scores.argmax(dim=-1), PAD_ID)
        for cb in streamer_callbacks:
            cb(step, next_tokens)
        input_ids = torch.cat([input_ids, next_tokens[:, None]], dim=-1)
        model_input = next_tokens[:, None]
        unfinished = unfinished & ~stopping(input_ids, scores)
        if unfinished.max() == 0:
            logger.info("all sequences finished after %d steps", step + 1)
            break
    return input_ids

# --------------------------------------------------------------------------- beams / best-of-n

@torch.compile
def beam_search_step(logits, beam_scores, num_beams: int, cur_len: int, length_penalty: float = 1.0):
    vocab = logits.shape[-1]
    log_probs = F.log_softmax(logits, dim=-1) + beam_scores[:, None]
    log_probs = log_probs.view(-1, num_beams * vocab)
    top_scores, top_idx = torch.topk(log_probs, 2 * num_beams, dim=1, largest=True, sorted=True)
    beam_idx = torch.div(top_idx, vocab, rounding_mode="floor")
    return top_scores / (cur_len ** length_penalty), beam_idx, top_idx % vocab

@torch.compile
def finalize_beams(sequences, beam_scores, num_beams: int, length_penalty: float = 1.0):
    gen_len = sequences.shape[-1]
    best = []
    for b in range(sequences.shape[0] // num_beams):
        ranked = sorted(range(b * num_beams, (b + 1) * num_beams), reverse=True,
                        key=lambda i: beam_scores[i].item() / gen_len ** length_penalty)  # expect: FL000 GB0124
        best.append(sequences[ranked[0]])
    return torch.stack(best)

def mean_logprob(logprobs, mask):
    return (logprobs * mask).sum(-1) / mask.sum(-1).clamp_min(1)

def gnmt_length_norm(logprobs, mask, alpha: float = 0.6):
    lp = ((5.0 + mask.sum(-1)) / 6.0) ** alpha
    return (logprobs * mask).sum(-1) / lp

def unbalanced_bracket_penalty(candidates, mask, weight: float = 0.5):
    opens = sum((candidates == char_to_id(c)) for c in OPEN_BRACKETS)
    closes = sum((candidates == char_to_id(c)) for c in CLOSE_BRACKETS)
    return -weight * ((opens - closes) * mask).sum(-1).abs().float()

RANKERS = {"mean": mean_logprob, "gnmt": functools.partial(gnmt_length_norm, alpha=0.6)}

@torch.compile
def best_of_n(candidates, logprobs, mask, ranker: str = "gnmt", penalties: Sequence[Callable] = ()):
    """candidates: [batch, n, L]; returns the top completion per prompt and all scores."""
    score = RANKERS[ranker](logprobs, mask)
    for penalty in penalties:
        score = score + penalty(candidates, mask)
    best = score.argmax(dim=-1)
    idx = best[:, None, None].expand(-1, 1, candidates.shape[-1])
    return candidates.gather(1, idx).squeeze(1), score

@torch.compile
def pick_completion_host(candidates, logprobs, mask, top: int = 2):
    scores = mean_logprob(logprobs, mask).detach().cpu().numpy()
    order = np.argsort(-scores, axis=-1)[:, :top]
    ppl = np.exp(-np.take_along_axis(scores, order, axis=-1))
    picked = torch.from_numpy(order).to(candidates.device)
    return candidates[torch.arange(candidates.shape[0])[:, None], picked], torch.from_numpy(ppl)

# --------------------------------------------------------------------------- token accounting

def count_tokens(ids, pad_id: int = PAD_ID):
    return (ids != pad_id).sum(-1)

@torch.compile
def completion_usage(prompt_ids, output_ids):
    prompt_len = count_tokens(prompt_ids)
    gen = output_ids[:, prompt_ids.shape[-1]:]
    is_eos = gen == EOS_ID
    after_eos = (is_eos.long().cumsum(-1) - is_eos.long()) > 0
    comp_len = ((gen != PAD_ID) & ~after_eos).sum(-1)
    usage = {"prompt_tokens": int(prompt_len.sum()), "completion_tokens": int(comp_len.sum())}  # expect: FL000 GB0124
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    assert usage["total_tokens"] <= output_ids.numel(), "billing more tokens than were produced"
    return comp_len, usage

def _ids(seed: int, *shape, low: int = _CHAR_OFFSET):
    return torch.randint(low, VOCAB_SIZE, shape, generator=torch.Generator().manual_seed(seed))

def _randn(seed: int, *shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))

def _code_prompts(*snippets: str):
    rows = [encode(s) for s in snippets]
    width = max(len(r) for r in rows)
    return torch.tensor([[PAD_ID] * (width - len(r)) + r for r in rows])

_SMALL, _SWA = CodeLMConfig(), CodeLMConfig(sliding_window=8)
_GEN = dict(repetition_penalty=1.3, temperature=0.7, top_p=0.9)
_STOP = StoppingCriteriaList([EosTokenCriteria([EOS_ID, PAD_ID])])
_PROMPTS = ("def f(x", "a = [1, (2", "if {'k': ")
_V = VOCAB_SIZE

CASES = {
    "RMSNorm": lambda: (RMSNorm(32), (_randn(0, 3, 5, 32),)),
    "RotaryEmbedding_grow": lambda: (RotaryEmbedding(8, max_position=6), (_randn(2, 3, 2, 11, 8),)),
    "GQAAttention_sliding": lambda: (init_weights(GQAAttention(_SWA), 4), (_randn(4, 3, 6, 32),),
                                     (_randn(4, 3, 11, 32),)),
    "DecoderLayer": lambda: (init_weights(DecoderLayer(_SMALL, 0), 6), (_randn(6, 3, 7, 32),)),
    "TinyCodeLM": lambda: (init_weights(TinyCodeLM(), 7), (_ids(7, 3, 7), None, True, True)),
    "UsageTrackingLM": lambda: (init_weights(UsageTrackingLM(), 8), (_ids(8, 3, 5),)),
    "assemble_fim_batch": lambda: (assemble_fim_batch, (FIMPromptBuilder(), _ids(9, 3, 9), _ids(10, 3, 5)),
                                   (FIMPromptBuilder(), _ids(9, 3, 19), _ids(10, 3, 11))),
    "process_logits_warpers": lambda: (process_logits, (build_processors(**_GEN), _ids(13, 3, 7), _randn(13, 3, _V))),
    "process_logits_balance": lambda: (process_logits, (build_processors(temperature=0.8, balance=()),
                                                        _code_prompts(*_PROMPTS), _randn(14, 3, _V))),
    "process_logits_matching": lambda: (process_logits, (build_processors(top_p=0.8, matching=()),
                                                         _code_prompts(*_PROMPTS), _randn(15, 3, _V))),
    "process_logits_anneal": lambda: (process_logits, (LogitsProcessorList([make_temperature_schedule(1.2, 0.4, 16),
                                                                            TopPLogitsWarper(0.95)]),
                                                       _ids(16, 3, 7), _randn(16, 3, _V))),
    "sample_next_tokens": lambda: (sample_next_tokens, (_ids(17, 3, 7), _randn(17, 3, _V), build_processors(**_GEN),
                                                        torch.Generator().manual_seed(17))),
    "check_stopping": lambda: (check_stopping, (_STOP, _ids(18, 3, 9, low=0), _randn(18, 3, _V))),
    "check_stopping_strings": lambda: (check_stopping, (StoppingCriteriaList([StopStringCriteria(STOP_SEQUENCES)]),
                                                        _ids(19, 3, 9), _randn(19, 3, _V))),
    "generate_greedy": lambda: (generate_greedy, (init_weights(TinyCodeLM(), 20), _code_prompts(*_PROMPTS),
                                                  build_processors(repetition_penalty=1.2, balance=()), _STOP, 3,
                                                  [lambda step, toks: None])),
    "beam_search_step": lambda: (beam_search_step, (_randn(21, 6, _V), _randn(22, 6), 3, 5)),
    "finalize_beams": lambda: (finalize_beams, (_ids(23, 6, 5), _randn(23, 6), 3, 1.0)),
    "best_of_n": lambda: (best_of_n, (_ids(24, 3, 4, 7), -_randn(24, 3, 4, 7).abs(), torch.ones(3, 4, 7), "gnmt",
                                      [unbalanced_bracket_penalty])),
    "pick_completion_host": lambda: (pick_completion_host, (_ids(25, 3, 4, 7), -_randn(25, 3, 4, 7).abs(),
                                                            torch.ones(3, 4, 7))),
    "completion_usage": lambda: (completion_usage, (_code_prompts(*_PROMPTS),
                                                    torch.cat([_code_prompts(*_PROMPTS), _ids(26, 3, 5, low=0)], -1))),
}
