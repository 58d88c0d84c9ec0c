"""Long-context transformer internals in the style of HF transformers / vLLM / StreamingLLM: sliding-window
and block-sparse masks, ALiBi slopes and NTK-scaled rotary tables cached on the module, grouped-query
attention with repeat_kv, Gemma-2 logit soft-capping, a paged KV cache (block tables, slot mapping) fed by
chunked prefill, attention-sink eviction, and a greedy generation loop with stopping-criteria objects."""
import functools
import logging
import math
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("long_context")
logger.addHandler(logging.NullHandler())

try:  # optional fast path, never present in CI
    from flash_attn import flash_attn_func  # noqa: F401
    HAS_FLASH_ATTN = True
except ImportError:
    HAS_FLASH_ATTN = False

NEG_INF = -1e4  # finite, so fully masked rows do not turn into NaNs under fp16
DEFAULT_SINKS = 2
PAGE_SIZE = 4
CHECK_NUMERICS = True  # flip off when benchmarking
SOFTCAP_FINAL = 30.0

# --------------------------------------------------------------------------- config
@dataclass
class AttentionConfig:
    hidden_size: int = 24
    num_heads: int = 4
    num_kv_heads: int = 2
    max_position_embeddings: int = 16
    rope_theta: float = 10000.0
    rope_scaling: Optional[Dict[str, float]] = None
    sliding_window: Optional[int] = None
    num_sink_tokens: int = 0
    attn_logit_softcap: Optional[float] = None
    attn_impl: str = "eager"

    def __post_init__(self):
        assert self.hidden_size % self.num_heads == 0, "hidden_size must be divisible by num_heads"
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"{self.num_heads} heads cannot be grouped into {self.num_kv_heads}")
        if self.rope_scaling is not None and self.rope_scaling.get("type") not in ROPE_CLASSES:
            logger.warning("unknown rope_scaling %s, falling back to plain RoPE", self.rope_scaling)
            self.rope_scaling = None
        if self.attn_impl == "flash" and not HAS_FLASH_ATTN:
            self.attn_impl = "sdpa"

    @classmethod
    def from_dict(cls, d: Dict) -> "AttentionConfig":
        aliases = {"n_head": "num_heads", "n_embd": "hidden_size", "n_kv_head": "num_kv_heads"}
        kwargs = {aliases.get(k, k): v for k, v in d.items()}
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in kwargs.items() if k in known})

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @property
    def num_kv_groups(self) -> int:
        return self.num_heads // self.num_kv_heads

    @property
    def uses_sliding_window(self) -> bool:
        return self.sliding_window is not None and self.sliding_window > 0

    @property
    def rope_factor(self) -> float:
        return float(self.rope_scaling.get("factor", 1.0)) if self.rope_scaling else 1.0

# --------------------------------------------------------------------------- masks
def causal_mask(q_len: int, kv_len: int, device=None) -> torch.Tensor:
    rows = torch.arange(q_len, device=device)[:, None] + (kv_len - q_len)  # queries are the last q_len
    cols = torch.arange(kv_len, device=device)[None, :]
    return cols <= rows

def sliding_window_mask(q_len: int, kv_len: int, window: Optional[int], device=None):
    allowed = causal_mask(q_len, kv_len, device)
    if window is None:
        return allowed
    rows = torch.arange(q_len, device=device)[:, None] + (kv_len - q_len)
    cols = torch.arange(kv_len, device=device)[None, :]
    return allowed & (rows - cols < window)

def add_sink_tokens(mask: torch.Tensor, num_sinks: int) -> torch.Tensor:
    if num_sinks <= 0:
        return mask
    mask = mask.clone()
    mask[..., :num_sinks] = True
    return mask & causal_mask(mask.shape[-2], mask.shape[-1], mask.device)

@functools.lru_cache(maxsize=16)
def block_sparse_layout(num_blocks: int, local_blocks: int = 2, global_blocks: int = 1) -> np.ndarray:
    layout = np.zeros((num_blocks, num_blocks), dtype=np.bool_)
    for i in range(num_blocks):
        layout[i, max(0, i - local_blocks + 1): i + 1] = True
        layout[i, :global_blocks] = True
    return np.tril(layout)

def soft_cap(x: torch.Tensor, cap: Optional[float]) -> torch.Tensor:
    return x if cap is None or cap <= 0 else torch.tanh(x / cap) * cap

def _check_finite(t: torch.Tensor, where: str) -> torch.Tensor:
    if CHECK_NUMERICS and not torch.isfinite(t).all():  # expect: FL000 GB0170
        raise FloatingPointError(f"non-finite values after {where}")
    return t

def repeat_kv(hidden: torch.Tensor, n_rep: int) -> torch.Tensor:
    """(b, kv_heads, t, d) -> (b, kv_heads * n_rep, t, d), same as torch.repeat_interleave(dim=1)."""
    b, kv_heads, t, d = hidden.shape
    if n_rep == 1:
        return hidden
    hidden = hidden[:, :, None, :, :].expand(b, kv_heads, n_rep, t, d)
    return hidden.reshape(b, kv_heads * n_rep, t, d)

# --------------------------------------------------------------------------- attention kernels
def eager_attention(q, k, v, mask, scale, softcap=None, dropout=0.0):
    scores = soft_cap(torch.matmul(q, k.transpose(-1, -2)) * scale, softcap)
    if mask is not None:
        scores = scores.masked_fill(~mask, NEG_INF) if mask.dtype == torch.bool else scores + mask
    probs = F.softmax(scores.float(), dim=-1).to(q.dtype)
    if dropout > 0:
        probs = F.dropout(probs, p=dropout)
    return torch.matmul(probs, v), probs

def sdpa_attention(q, k, v, mask, scale, softcap=None, dropout=0.0):
    if softcap is not None:
        logger.warning("sdpa cannot soft-cap attention logits; using eager attention")  # expect: FL000 GB0291
        return eager_attention(q, k, v, mask, scale, softcap, dropout)
    if mask is not None and mask.dtype == torch.bool and mask.all():  # expect: FL000 GB0170
        mask = None  # nothing masked: let sdpa pick the fastest kernel
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout, scale=scale)
    return out, None

ATTENTION_FUNCTIONS: Dict[str, Callable] = {"eager": eager_attention, "sdpa": sdpa_attention}

@torch.compile
def sliding_window_attention(q, k, v, window: int = 3, num_sinks: int = 0, softcap: Optional[float] = None):
    n_rep = q.shape[1] // k.shape[1]
    k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)
    mask = add_sink_tokens(sliding_window_mask(q.shape[-2], k.shape[-2], window, q.device), num_sinks)
    out, _ = eager_attention(q, k, v, mask, q.shape[-1] ** -0.5, softcap=softcap)
    return out

@torch.compile
def block_sparse_attention(q, k, v, block_size: int = 2, local_blocks: int = 2):
    b, h, t, d = q.shape
    num_blocks = math.ceil(t / block_size)
    layout = torch.from_numpy(block_sparse_layout(num_blocks, local_blocks)).to(q.device)
    pad = num_blocks * block_size - t
    if pad:
        q, k, v = (F.pad(x, (0, 0, 0, pad)) for x in (q, k, v))
    token_mask = layout.repeat_interleave(block_size, 0).repeat_interleave(block_size, 1)
    token_mask = token_mask & causal_mask(token_mask.shape[0], token_mask.shape[1], q.device)
    out, _ = eager_attention(q, k, v, token_mask, 1.0 / math.sqrt(d))
    return _check_finite(out[:, :, :t], "block-sparse attention")

# --------------------------------------------------------------------------- position encodings
def get_alibi_slopes(num_heads: int) -> torch.Tensor:
    closest = 2 ** math.floor(math.log2(num_heads))
    base = 2 ** (-(2 ** -(math.log2(closest) - 3)))
    slopes = [base ** (i + 1) for i in range(closest)]
    if closest != num_heads:
        extra_base = 2 ** (-(2 ** -(math.log2(2 * closest) - 3)))
        n_extra = min(closest, num_heads - closest)
        slopes += [extra_base ** (i + 1) for i in range(0, 2 * n_extra, 2)]
    return torch.tensor(slopes, dtype=torch.float32)

class ALiBiPositionBias(nn.Module):
    """Adds -slope * distance to attention scores; the bias table grows with the longest sequence."""
    def __init__(self, num_heads: int):
        super().__init__()
        self.register_buffer("slopes", get_alibi_slopes(num_heads), persistent=False)
        self._cached_bias: Optional[torch.Tensor] = None

    def _build(self, seq_len: int, device) -> torch.Tensor:
        pos = torch.arange(seq_len, device=device)
        rel = (pos[None, :] - pos[:, None]).clamp(max=0).float()
        return self.slopes[:, None, None] * rel[None]

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        q_len, kv_len = scores.shape[-2:]
        if self._cached_bias is None or self._cached_bias.shape[-1] < kv_len:
            self._cached_bias = self._build(kv_len, scores.device)  # expect: FL302
        return scores + self._cached_bias[:, kv_len - q_len:kv_len, :kv_len]

class RotaryEmbedding(nn.Module):
    def __init__(self, dim: int, max_position_embeddings: int = 16, base: float = 10000.0):
        super().__init__()
        self.dim = dim
        self.base = base
        self.max_position_embeddings = max_position_embeddings
        self.register_buffer("inv_freq", self._compute_inv_freq(base), persistent=False)
        self._set_cos_sin_cache(max_position_embeddings)

    def _compute_inv_freq(self, base: float, device=None) -> torch.Tensor:
        return 1.0 / (base ** (torch.arange(0, self.dim, 2, device=device).float() / self.dim))

    def _set_cos_sin_cache(self, seq_len: int) -> None:
        self.max_seq_len_cached = seq_len  # expect: FL302
        t = torch.arange(seq_len, device=self.inv_freq.device, dtype=self.inv_freq.dtype)
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)

    def forward(self, x: torch.Tensor, seq_len: int) -> Tuple[torch.Tensor, torch.Tensor]:
        if seq_len > self.max_seq_len_cached:
            self._set_cos_sin_cache(seq_len)
        return self.cos_cached[:seq_len].to(x.dtype), self.sin_cached[:seq_len].to(x.dtype)

class DynamicNTKScalingRotaryEmbedding(RotaryEmbedding):
    """Rescales the RoPE base once the sequence outgrows the trained context (Reddit /r/LocalLLaMA)."""
    def __init__(self, dim, max_position_embeddings=16, base=10000.0, scaling_factor=1.0):
        self.scaling_factor = scaling_factor
        super().__init__(dim, max_position_embeddings, base)

    def _set_cos_sin_cache(self, seq_len: int) -> None:
        if seq_len > self.max_position_embeddings:
            ratio = self.scaling_factor * seq_len / self.max_position_embeddings - (self.scaling_factor - 1)
            base = self.base * ratio ** (self.dim / (self.dim - 2))
            logger.info("NTK scaling: rope base %.0f -> %.0f for %d positions", self.base, base, seq_len)  # expect: FL000 GB0291
            self.register_buffer("inv_freq", self._compute_inv_freq(base, self.inv_freq.device),
                                 persistent=False)
        super()._set_cos_sin_cache(seq_len)

ROPE_CLASSES = {None: RotaryEmbedding, "dynamic": DynamicNTKScalingRotaryEmbedding}

def build_rotary(config: AttentionConfig) -> RotaryEmbedding:
    kind = (config.rope_scaling or {}).get("type")
    kwargs = dict(max_position_embeddings=config.max_position_embeddings, base=config.rope_theta)
    if kind is not None:
        kwargs["scaling_factor"] = config.rope_factor
    return ROPE_CLASSES.get(kind, RotaryEmbedding)(config.head_dim, **kwargs)

def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)

def apply_rotary_pos_emb(q, k, cos, sin, position_ids=None):
    if position_ids is None:
        cos, sin = cos[-q.shape[-2]:][None, None], sin[-q.shape[-2]:][None, None]
    else:
        cos, sin = cos[position_ids].unsqueeze(1), sin[position_ids].unsqueeze(1)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin

@torch.compile
def dynamic_ntk_frequencies(position_ids, dim: int = 6, base: float = 10000.0, max_pos: int = 8,
                            factor: float = 2.0):
    seq_len = position_ids.shape[-1]
    if seq_len > max_pos:  # expect: FL301
        base = base * ((factor * seq_len / max_pos) - (factor - 1)) ** (dim / (dim - 2))
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    freqs = position_ids[..., None].float() * inv_freq
    return torch.cat([freqs.cos(), freqs.sin()], dim=-1)

# --------------------------------------------------------------------------- modules
class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        out = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return (out * self.weight.float()).type_as(x)

class GroupedQueryAttention(nn.Module):
    def __init__(self, config: AttentionConfig, layer_idx: int = 0):
        super().__init__()
        self.config = config
        self.num_heads, self.num_kv_heads = config.num_heads, config.num_kv_heads
        self.head_dim = config.head_dim
        self.q_proj = nn.Linear(config.hidden_size, self.num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(config.hidden_size, self.num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(config.hidden_size, self.num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, config.hidden_size, bias=False)
        self.rotary_emb = build_rotary(config)

    @property
    def scaling(self) -> float:
        return self.head_dim ** -0.5

    @property
    def window(self) -> Optional[int]:
        return self.config.sliding_window if self.config.uses_sliding_window else None

    def _shape(self, x: torch.Tensor, n_heads: int) -> torch.Tensor:
        b, t, _ = x.shape
        return x.view(b, t, n_heads, self.head_dim).transpose(1, 2)

    def forward(self, hidden_states, attention_mask=None, position_ids=None, past_key_value=None):
        b, t, _ = hidden_states.size()
        q = self._shape(self.q_proj(hidden_states), self.num_heads)
        k = self._shape(self.k_proj(hidden_states), self.num_kv_heads)
        v = self._shape(self.v_proj(hidden_states), self.num_kv_heads)
        past_len = past_key_value[0].shape[-2] if past_key_value is not None else 0
        kv_len = past_len + t
        cos, sin = self.rotary_emb(v, seq_len=kv_len)
        q, k = apply_rotary_pos_emb(q, k, cos, sin, position_ids)
        if past_key_value is not None:
            k = torch.cat([past_key_value[0], k], dim=2)
            v = torch.cat([past_key_value[1], v], dim=2)
        present = (k, v)
        k, v = repeat_kv(k, self.config.num_kv_groups), repeat_kv(v, self.config.num_kv_groups)
        if attention_mask is None:
            attention_mask = sliding_window_mask(t, kv_len, self.window, hidden_states.device)
            attention_mask = add_sink_tokens(attention_mask, self.config.num_sink_tokens)
        attn_fn = ATTENTION_FUNCTIONS.get(self.config.attn_impl, eager_attention)
        out, _ = attn_fn(q, k, v, attention_mask, self.scaling, softcap=self.config.attn_logit_softcap)
        out = out.transpose(1, 2).reshape(b, t, -1)
        return self.o_proj(out), present

class SoftcappedAttention(GroupedQueryAttention):
    """Gemma-2 flavour: query_pre_attn_scalar scaling and sliding window on every other layer."""
    def __init__(self, config: AttentionConfig, layer_idx: int = 0, query_pre_attn_scalar=None):
        super().__init__(config, layer_idx)
        self.query_pre_attn_scalar = query_pre_attn_scalar or config.head_dim
        self.is_sliding = layer_idx % 2 == 0

    @property
    def scaling(self) -> float:
        return self.query_pre_attn_scalar ** -0.5

    @property
    def window(self) -> Optional[int]:
        return self.config.sliding_window if self.is_sliding else None

FINAL_ACTIVATIONS = {"none": lambda x: x, "softcap": functools.partial(soft_cap, cap=SOFTCAP_FINAL)}

class TinyCausalLM(nn.Module):
    def __init__(self, config: AttentionConfig, vocab_size: int = 32, num_layers: int = 2,
                 final_activation: str = "softcap"):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(SoftcappedAttention(config, i) for i in range(num_layers))
        self.layer_norms = nn.ModuleList(RMSNorm(config.hidden_size) for _ in range(num_layers))
        self.norm = RMSNorm(config.hidden_size)
        self.lm_head = nn.Linear(config.hidden_size, vocab_size, bias=False)
        self.final_activation = FINAL_ACTIVATIONS[final_activation]

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        assert input_ids.dim() == 2, "expected (batch, seq) token ids"
        hidden = self.embed_tokens(input_ids) * math.sqrt(self.config.hidden_size)
        for attn, norm in zip(self.layers, self.layer_norms):
            hidden = hidden + attn(norm(hidden))[0]
        return self.final_activation(self.lm_head(self.norm(hidden)))

# --------------------------------------------------------------------------- paged KV cache
class PagedKVCache:
    """vLLM-style block pool: each sequence owns a block table of physical block numbers."""
    def __init__(self, num_blocks: int, block_size: int, num_kv_heads: int, head_dim: int):
        self.block_size = block_size
        self.key_cache = torch.zeros(num_blocks, block_size, num_kv_heads, head_dim)
        self.value_cache = torch.zeros(num_blocks, block_size, num_kv_heads, head_dim)
        self.free_blocks: List[int] = list(range(num_blocks))[::-1]
        self.block_tables: Dict[int, List[int]] = {}

    def allocate(self, seq_id: int, num_tokens: int) -> List[int]:
        needed = -(-num_tokens // self.block_size)
        table = self.block_tables.setdefault(seq_id, [])
        while len(table) < needed:
            if not self.free_blocks:  # expect: FL302
                raise RuntimeError("out of KV cache blocks")
            table.append(self.free_blocks.pop())
        return table

@torch.compile(dynamic=False)
def compute_slot_mapping(block_tables, positions, block_size: int = PAGE_SIZE):
    block_numbers = torch.gather(block_tables, 1, positions // block_size)
    return block_numbers * block_size + positions % block_size

def write_to_paged_cache(key, value, key_cache, value_cache, slot_mapping):
    slots = slot_mapping.flatten()
    key_cache.view(-1, *key_cache.shape[2:]).index_copy_(0, slots, key.reshape(-1, *key.shape[-2:]))
    value_cache.view(-1, *value_cache.shape[2:]).index_copy_(0, slots, value.reshape(-1, *value.shape[-2:]))
    return key_cache, value_cache

@torch.compile
def prefill_into_cache(cache: PagedKVCache, seq_id: int, key, value):
    num_tokens = key.shape[0]
    table = cache.allocate(seq_id, num_tokens)
    block_table = torch.tensor([table], dtype=torch.long)
    slots = compute_slot_mapping(block_table, torch.arange(num_tokens)[None], cache.block_size)
    write_to_paged_cache(_check_finite(key, "prefill keys"), value, cache.key_cache, cache.value_cache, slots[0])
    return slots

@torch.compile
def paged_attention_decode(query, key_cache, value_cache, block_tables, context_lens, scale: float):
    """query: (num_seqs, num_heads, head_dim), one new token per sequence."""
    num_seqs, num_heads, head_dim = query.shape
    block_size, num_kv_heads = key_cache.shape[1], key_cache.shape[2]
    outputs = []
    for i, ctx_len in enumerate(context_lens.tolist()):  # expect: FL000 GB0033
        blocks = block_tables[i, : -(-ctx_len // block_size)]
        k = key_cache[blocks].reshape(-1, num_kv_heads, head_dim)[:ctx_len]
        v = value_cache[blocks].reshape(-1, num_kv_heads, head_dim)[:ctx_len]
        k, v = (repeat_kv(x.transpose(0, 1)[None], num_heads // num_kv_heads)[0] for x in (k, v))
        probs = (torch.einsum("hd,htd->ht", query[i], k) * scale).softmax(-1)
        outputs.append(torch.einsum("ht,htd->hd", probs, v))
    return torch.stack(outputs)

class ChunkedPrefillRunner(nn.Module):
    """Feeds a long prompt through an attention layer chunk by chunk, growing the KV cache."""
    def __init__(self, layer: GroupedQueryAttention, chunk_size: int = 4):
        super().__init__()
        self.layer = layer
        self.chunk_size = chunk_size

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        total = hidden_states.shape[1]
        past, outputs = None, []
        for start in range(0, total, self.chunk_size):  # expect: FL301
            chunk = hidden_states[:, start:start + self.chunk_size]
            position_ids = torch.arange(start, start + chunk.shape[1], device=chunk.device)[None]
            out, past = self.layer(chunk, position_ids=position_ids, past_key_value=past)
            outputs.append(out)
        return torch.cat(outputs, dim=1)

class SinkKVCache(nn.Module):
    """StreamingLLM eviction: keep the first `num_sink_tokens` keys plus a recent window."""
    def __init__(self, window_length: int = 6, num_sink_tokens: int = DEFAULT_SINKS):
        super().__init__()
        self.window_length = window_length
        self.num_sink_tokens = num_sink_tokens

    def _evict(self, states: torch.Tensor) -> torch.Tensor:
        recent = self.window_length - self.num_sink_tokens
        return torch.cat([states[..., :self.num_sink_tokens, :], states[..., -recent:, :]], dim=-2)

    def forward(self, key_states, value_states):
        if key_states.shape[-2] <= self.window_length:  # expect: FL301
            return key_states, value_states
        return self._evict(key_states), self._evict(value_states)

@torch.compile
def measure_sink_attention(probs, num_sinks: int = DEFAULT_SINKS, threshold: float = 0.3):
    sink_mass = probs[..., :num_sinks].sum(-1).mean(dim=(0, 2))  # per head
    stats = {"sink_mass": sink_mass, "entropy": -(probs * probs.clamp_min(1e-9).log()).sum(-1).mean()}
    heavy = (sink_mass > threshold).nonzero().flatten().tolist()  # expect: FL000 GB0033; FL000 GB0036
    if heavy:
        logger.info("heads %s put more than %.0f%% of attention on sinks", heavy, threshold * 100)  # expect: FL000 GB0291
    stats["num_heavy_heads"] = len(heavy)
    return stats

# --------------------------------------------------------------------------- generation
class MaxLengthCriteria:
    def __init__(self, max_length: int):
        self.max_length = max_length

    def __call__(self, input_ids, scores):
        is_done = input_ids.shape[-1] >= self.max_length
        return torch.full(input_ids.shape[:1], is_done, dtype=torch.bool, device=input_ids.device)

class EosTokenCriteria:
    def __init__(self, eos_token_id):
        self.eos_token_id = torch.as_tensor(eos_token_id)

    def __call__(self, input_ids, scores):
        return torch.isin(input_ids[:, -1], self.eos_token_id.to(input_ids.device))

class StoppingCriteriaList(list):
    def __call__(self, input_ids, scores) -> torch.Tensor:
        is_done = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        for criteria in self:
            is_done = is_done | criteria(input_ids, scores)
        return is_done

@torch.compile
def greedy_generate(model: nn.Module, input_ids, stopping_criteria: StoppingCriteriaList,
                    max_new_tokens: int = 3, pad_token_id: int = 0):
    unfinished = torch.ones(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
    for _ in range(max_new_tokens):
        logits = model(input_ids)[:, -1, :]
        next_tokens = torch.where(unfinished, logits.argmax(-1), pad_token_id)
        input_ids = torch.cat([input_ids, next_tokens[:, None]], dim=-1)
        unfinished = unfinished & ~stopping_criteria(input_ids, logits)
        if unfinished.max() == 0:
            break
    return input_ids

# --------------------------------------------------------------------------- cases
def _randn(*shape, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))

def _ids(batch: int, seq: int, vocab: int = 32, seed: int = 0) -> torch.Tensor:
    return torch.randint(2, vocab, (batch, seq), generator=torch.Generator().manual_seed(seed))

def _seeded(factory, seed: int = 0):
    torch.manual_seed(seed)
    return factory()

def _qkv(b=2, h=4, kv=2, t=7, d=6):
    return _randn(b, h, t, d, seed=1), _randn(b, kv, t, d, seed=2), _randn(b, kv, t, d, seed=3)

def _paged_decode_args(context_lens=(5, 10, 7), num_blocks=9, kv_heads=2, head_dim=6):
    cache = PagedKVCache(num_blocks, PAGE_SIZE, kv_heads, head_dim)
    cache.key_cache.copy_(_randn(*cache.key_cache.shape, seed=4))
    cache.value_cache.copy_(_randn(*cache.value_cache.shape, seed=5))
    tables = [cache.allocate(seq_id, n) for seq_id, n in enumerate(context_lens)]
    tables = torch.tensor([t + [0] * (3 - len(t)) for t in tables])
    return (_randn(len(context_lens), 4, head_dim, seed=6), cache.key_cache, cache.value_cache, tables,
            torch.tensor(context_lens), head_dim ** -0.5)

def _attn_probs(b=2, h=4, t=5, seed=7):
    scores = _randn(b, h, t, t, seed=seed) + torch.tensor([3.0] + [0.0] * (t - 1))  # a strong sink
    return scores.masked_fill(~causal_mask(t, t), NEG_INF).softmax(-1)

CONFIG = AttentionConfig()
SWA_CONFIG = AttentionConfig(sliding_window=3, num_sink_tokens=DEFAULT_SINKS, attn_impl="sdpa")
GEMMA_CONFIG = AttentionConfig.from_dict({"n_embd": 24, "n_head": 4, "n_kv_head": 2, "sliding_window": 4,
                                          "attn_logit_softcap": 50.0, "attn_impl": "sdpa", "final_softcap": 30.0})
NTK_CONFIG = AttentionConfig(rope_scaling={"type": "dynamic", "factor": 2.0})

CASES = {
    "sliding_window_attention": lambda: (sliding_window_attention, _qkv()),
    "sliding_window_attention_sinks": lambda: (sliding_window_attention, _qkv() + (3, 2, 20.0)),
    "block_sparse_attention": lambda: (block_sparse_attention, _qkv(kv=4, t=6)),
    "ALiBiPositionBias": lambda: (ALiBiPositionBias(6), (_randn(2, 6, 3, 5),)),
    "RotaryEmbedding": lambda: (RotaryEmbedding(6), (_randn(2, 5, 6), 5)),
    "DynamicNTKScalingRotaryEmbedding": lambda: (DynamicNTKScalingRotaryEmbedding(6, 8, scaling_factor=2.0),
                                                 (_randn(2, 5, 6), 11)),
    "dynamic_ntk_frequencies": lambda: (dynamic_ntk_frequencies, (torch.arange(5).expand(3, 5),),
                                        (torch.arange(11).expand(3, 11),)),
    "RMSNorm": lambda: (RMSNorm(24), (_randn(2, 5, 24),)),
    "GroupedQueryAttention": lambda: (_seeded(lambda: GroupedQueryAttention(SWA_CONFIG)), (_randn(2, 5, 24),)),
    "GroupedQueryAttention_ntk": lambda: (_seeded(lambda: GroupedQueryAttention(NTK_CONFIG)), (_randn(2, 7, 24),)),
    "SoftcappedAttention": lambda: (_seeded(lambda: SoftcappedAttention(GEMMA_CONFIG, 0)), (_randn(2, 5, 24),)),
    "TinyCausalLM": lambda: (_seeded(lambda: TinyCausalLM(GEMMA_CONFIG)), (_ids(2, 5),)),
    "ChunkedPrefillRunner": lambda: (_seeded(lambda: ChunkedPrefillRunner(GroupedQueryAttention(CONFIG))),
                                     (_randn(3, 6, 24),), (_randn(3, 11, 24),)),
    "SinkKVCache": lambda: (SinkKVCache(), (_randn(2, 3, 9, 4), _randn(2, 3, 9, 4, seed=1)),
                            (_randn(2, 3, 5, 4), _randn(2, 3, 5, 4, seed=1))),
    "compute_slot_mapping": lambda: (compute_slot_mapping, (torch.tensor([[3, 1, 0], [2, 5, 4]]),
                                                            torch.tensor([[0, 5, 9], [1, 2, 11]]))),
    "prefill_into_cache": lambda: (prefill_into_cache, (PagedKVCache(6, PAGE_SIZE, 2, 6), 0,
                                                        _randn(7, 2, 6), _randn(7, 2, 6, seed=1))),
    "paged_attention_decode": lambda: (paged_attention_decode, _paged_decode_args()),
    "measure_sink_attention": lambda: (measure_sink_attention, (_attn_probs(),)),
    "greedy_generate": lambda: (greedy_generate, (_seeded(lambda: TinyCausalLM(GEMMA_CONFIG)), _ids(2, 5),
                                                  StoppingCriteriaList([MaxLengthCriteria(7), EosTokenCriteria([1])]))),
}
