"""Model code exported with torch.export.export for serving: a small decoder with static and
sliding-window KV caches and a mixture-of-experts layer, MoE routing variants, padded
variable-length batches, an audio front end, and two-tower / DLRM recommendation models."""
import logging
import math
import os
from dataclasses import dataclass
from typing import List, Tuple

import torch
import torch.nn.functional as F
from torch import nn
from torch.export import Dim

logger = logging.getLogger(__name__)


@dataclass
class DecoderConfig:
    vocab_size: int = 32
    dim: int = 16
    n_heads: int = 2
    n_kv_heads: int = 1
    max_seq_len: int = 12
    window: int = 4
    num_experts: int = 4
    top_k: int = 2
    eos_token_id: int = 2


# ----------------------------------------------------------------------------- decoder blocks

class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class RotaryEmbedding(nn.Module):
    def __init__(self, head_dim: int, base: float = 10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, positions):
        freqs = positions.float()[:, None] * self.inv_freq[None, :]
        emb = torch.cat([freqs, freqs], dim=-1)
        return emb.cos(), emb.sin()


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


def apply_rotary(q, k, cos, sin):
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def attend(q, k, v, mask, n_rep: int):
    k = k.repeat_interleave(n_rep, dim=1)
    v = v.repeat_interleave(n_rep, dim=1)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return out.transpose(1, 2).flatten(2)


class CachedSelfAttention(nn.Module):
    """GQA attention over a static KV cache: new keys are written at cache_position, every slot
    is attended under a mask (no data-dependent shapes, the layout ExecuTorch wants)."""

    def __init__(self, cfg: DecoderConfig):
        super().__init__()
        self.n_heads, self.n_kv_heads = cfg.n_heads, cfg.n_kv_heads
        self.head_dim = cfg.dim // cfg.n_heads
        self.qkv = nn.Linear(cfg.dim, (cfg.n_heads + 2 * cfg.n_kv_heads) * self.head_dim, bias=False)
        self.o_proj = nn.Linear(cfg.n_heads * self.head_dim, cfg.dim, bias=False)
        self.rotary = RotaryEmbedding(self.head_dim)

    def project(self, x, cache_position):
        b, t, _ = x.shape
        q_size, kv_size = self.n_heads * self.head_dim, self.n_kv_heads * self.head_dim
        q, k, v = self.qkv(x).split([q_size, kv_size, kv_size], dim=-1)
        q = q.view(b, t, self.n_heads, self.head_dim).transpose(1, 2)
        k = k.view(b, t, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = v.view(b, t, self.n_kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.rotary(cache_position)
        q, k = apply_rotary(q, k, cos, sin)
        return q, k, v

    def forward(self, x, k_cache, v_cache, cache_position):
        q, k, v = self.project(x, cache_position)
        k_cache = k_cache.index_copy(2, cache_position, k)
        v_cache = v_cache.index_copy(2, cache_position, v)
        slots = torch.arange(k_cache.shape[2], device=x.device)
        mask = slots[None, :] <= cache_position[:, None]
        out = attend(q, k_cache, v_cache, mask, self.n_heads // self.n_kv_heads)
        return self.o_proj(out), k_cache, v_cache


def window_bounds(cache_position, window: int) -> Tuple[int, int]:
    """Cache slots [start, end) that the newest query position can see."""
    end = int(cache_position[-1]) + 1  # expect: FL102 GB0124; FL202
    return max(0, end - window), end


class SlidingWindowAttention(CachedSelfAttention):
    """Mistral-style local layer: only the last `window` cache slots are read."""

    def __init__(self, cfg: DecoderConfig):
        super().__init__(cfg)
        self.window = cfg.window

    def forward(self, x, k_cache, v_cache, cache_position):
        q, k, v = self.project(x, cache_position)
        k_cache = k_cache.index_copy(2, cache_position, k)
        v_cache = v_cache.index_copy(2, cache_position, v)
        start, end = window_bounds(cache_position, self.window)
        slots = torch.arange(start, end, device=x.device)
        mask = (slots[None, :] <= cache_position[:, None]) & (slots[None, :] > cache_position[:, None] - self.window)
        out = attend(q, k_cache[:, :, start:end], v_cache[:, :, start:end], mask, self.n_heads // self.n_kv_heads)
        return self.o_proj(out), k_cache, v_cache


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


# ----------------------------------------------------------------------------- mixture of experts

class TopKRouter(nn.Module):
    def __init__(self, dim: int, num_experts: int, top_k: int):
        super().__init__()
        self.gate = nn.Linear(dim, num_experts, bias=False)
        self.top_k = top_k

    def forward(self, x):
        logits = self.gate(x)
        probs = logits.softmax(dim=-1, dtype=torch.float)
        weights, experts = probs.topk(self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        return weights.to(x.dtype), experts, logits


class SparseMoE(nn.Module):
    """Mixtral-style block: loop over experts, gather the tokens routed to each."""

    def __init__(self, cfg: DecoderConfig):
        super().__init__()
        self.num_experts = cfg.num_experts
        self.router = TopKRouter(cfg.dim, cfg.num_experts, cfg.top_k)
        self.experts = nn.ModuleList(SwiGLU(cfg.dim, 2 * cfg.dim) for _ in range(cfg.num_experts))

    def forward(self, hidden):
        b, t, d = hidden.shape
        x = hidden.reshape(-1, d)
        weights, experts, _ = self.router(x)
        out = torch.zeros_like(x)
        expert_mask = F.one_hot(experts, self.num_experts).permute(2, 1, 0)
        for e in range(self.num_experts):
            slot, token = torch.where(expert_mask[e])  # expect: FL105 GB0036
            if token.shape[0] == 0:  # expect: FL203
                continue
            y = self.experts[e](x[token]) * weights[token, slot, None]
            out.index_add_(0, token, y.to(x.dtype))
        return out.view(b, t, d)


class GroupedMoE(nn.Module):
    """MegaBlocks-style dispatch: sort the (token, expert) pairs by expert, split into groups."""

    def __init__(self, dim: int = 16, num_experts: int = 4, top_k: int = 2):
        super().__init__()
        self.num_experts, self.top_k = num_experts, top_k
        self.router = TopKRouter(dim, num_experts, top_k)
        self.experts = nn.ModuleList(SwiGLU(dim, 2 * dim) for _ in range(num_experts))

    def forward(self, x):
        weights, experts, _ = self.router(x)
        flat_experts = experts.flatten()
        order = flat_experts.argsort(stable=True)
        token_of = torch.div(order, self.top_k, rounding_mode="floor")
        tokens_per_expert = torch.bincount(flat_experts, minlength=self.num_experts)  # expect: FL105 GB0036
        groups = x[token_of].split(tokens_per_expert.tolist())  # expect: FL104 GB0033; FL202
        outs = torch.cat([expert(group) for expert, group in zip(self.experts, groups)])
        outs = outs * weights.flatten()[order, None]
        return torch.zeros_like(x).index_add_(0, token_of, outs)


class DenseMoE(nn.Module):
    """Export-friendly variant: every expert runs, the top-k gates are scattered into a dense matrix."""

    def __init__(self, dim: int = 16, num_experts: int = 4, top_k: int = 2):
        super().__init__()
        self.router = TopKRouter(dim, num_experts, top_k)
        self.experts = nn.ModuleList(SwiGLU(dim, 2 * dim) for _ in range(num_experts))

    def forward(self, x):
        weights, experts, logits = self.router(x)
        gates = torch.zeros_like(logits).scatter(-1, experts, weights)
        expert_out = torch.stack([expert(x) for expert in self.experts], dim=-2)
        return (gates.unsqueeze(-1) * expert_out).sum(dim=-2)


# ----------------------------------------------------------------------------- decoder + generation

class DecoderLayer(nn.Module):
    def __init__(self, cfg: DecoderConfig, sliding: bool, moe: bool):
        super().__init__()
        self.attn_norm = RMSNorm(cfg.dim)
        self.attn = SlidingWindowAttention(cfg) if sliding else CachedSelfAttention(cfg)
        self.ffn_norm = RMSNorm(cfg.dim)
        self.ffn = SparseMoE(cfg) if moe else SwiGLU(cfg.dim, 2 * cfg.dim)

    def forward(self, x, k_cache, v_cache, cache_position):
        h, k_cache, v_cache = self.attn(self.attn_norm(x), k_cache, v_cache, cache_position)
        x = x + h
        return x + self.ffn(self.ffn_norm(x)), k_cache, v_cache


class TinyDecoder(nn.Module):
    def __init__(self, cfg: DecoderConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.layers = nn.ModuleList([DecoderLayer(cfg, sliding=False, moe=False),
                                     DecoderLayer(cfg, sliding=True, moe=True)])
        self.norm = RMSNorm(cfg.dim)
        self.lm_head = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)

    def empty_cache(self, batch: int):
        cfg = self.cfg
        shape = (batch, cfg.n_kv_heads, cfg.max_seq_len, cfg.dim // cfg.n_heads)
        return [torch.zeros(shape) for _ in self.layers], [torch.zeros(shape) for _ in self.layers]

    def forward(self, input_ids, cache_position, k_caches: List[torch.Tensor], v_caches: List[torch.Tensor]):
        x = self.embed(input_ids)
        new_k, new_v = [], []
        for layer, k_cache, v_cache in zip(self.layers, k_caches, v_caches):
            x, k_cache, v_cache = layer(x, k_cache, v_cache, cache_position)
            new_k.append(k_cache)
            new_v.append(v_cache)
        return self.lm_head(self.norm(x)), new_k, new_v


class GreedyGenerator(nn.Module):
    """Prefill + greedy decode loop in one exported program (stops early once every row hit EOS)."""

    def __init__(self, decoder: TinyDecoder, max_new_tokens: int = 3):
        super().__init__()
        self.decoder = decoder
        self.max_new_tokens = max_new_tokens
        self.eos_token_id = decoder.cfg.eos_token_id

    def forward(self, prompt_ids):
        batch, prompt_len = prompt_ids.shape
        k_caches, v_caches = self.decoder.empty_cache(batch)
        positions = torch.arange(prompt_len)
        logits, k_caches, v_caches = self.decoder(prompt_ids, positions, k_caches, v_caches)
        next_token = logits[:, -1].argmax(-1)
        tokens = [next_token]
        finished = next_token == self.eos_token_id
        while len(tokens) < self.max_new_tokens and not finished.all():  # expect: FL101 GB0170; FL201
            positions = positions[-1:] + 1
            logits, k_caches, v_caches = self.decoder(next_token[:, None], positions, k_caches, v_caches)
            next_token = logits[:, -1].argmax(-1).masked_fill(finished, self.eos_token_id)
            finished = finished | (next_token == self.eos_token_id)
            tokens.append(next_token)
        return torch.stack(tokens, dim=1)


# ----------------------------------------------------------------------------- padded variable-length batches

def lengths_to_padding_mask(lengths, max_len: int):
    return torch.arange(max_len, device=lengths.device)[None, :] >= lengths[:, None]


class MaskedMeanPool(nn.Module):
    def forward(self, hidden, lengths):
        pad = lengths_to_padding_mask(lengths, hidden.shape[1])
        summed = hidden.masked_fill(pad[..., None], 0.0).sum(dim=1)
        return summed / lengths.clamp(min=1)[:, None].to(hidden.dtype)


class PaddedSelfAttentionBlock(nn.Module):
    def __init__(self, dim: int = 16, heads: int = 2):
        super().__init__()
        self.heads = heads
        self.norm = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x, pad_mask):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)  # expect: FL203
        keep = ~pad_mask[:, None, None, :]
        h = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        return x + self.out(h.transpose(1, 2).reshape(b, t, d))


class TruncatingEncoder(nn.Module):
    """Sentence encoder for padded batches; drops the padding columns no row needs before attending."""

    def __init__(self, dim: int = 16, heads: int = 2, depth: int = 2):
        super().__init__()
        self.blocks = nn.ModuleList(PaddedSelfAttentionBlock(dim, heads) for _ in range(depth))
        self.pool = MaskedMeanPool()

    def forward(self, x, lengths):
        max_len = int(lengths.max())  # expect: FL102 GB0124; FL202
        logger.debug("trimming padded batch to %d steps", max_len)  # expect: FL111 GB0291; FL204
        x = x[:, :max_len]
        pad = lengths_to_padding_mask(lengths, max_len)
        for block in self.blocks:
            x = block(x, pad)
        return self.pool(x, lengths)


# ----------------------------------------------------------------------------- audio front end

def hz_to_mel(hz: float) -> float:
    return 2595.0 * math.log10(1.0 + hz / 700.0)


def mel_filterbank(n_mels: int, n_fft: int, sample_rate: int) -> torch.Tensor:
    n_freqs = n_fft // 2 + 1
    mel_points = torch.linspace(hz_to_mel(0.0), hz_to_mel(sample_rate / 2), n_mels + 2)
    hz_points = 700.0 * (10 ** (mel_points / 2595.0) - 1)
    freqs = torch.linspace(0, sample_rate / 2, n_freqs)
    lower, center, upper = hz_points[:-2, None], hz_points[1:-1, None], hz_points[2:, None]
    up = (freqs[None] - lower) / (center - lower)
    down = (upper - freqs[None]) / (upper - center)
    return torch.clamp(torch.minimum(up, down), min=0.0)


class LoudnessNormalizer(nn.Module):
    def __init__(self, target_peak: float = 0.9):
        super().__init__()
        self.target_peak = target_peak

    def forward(self, wav):
        peak = float(wav.abs().max())  # expect: FL102 GB0124; FL202
        return wav * (self.target_peak / max(peak, 1e-5))


class LogMelFrontend(nn.Module):
    def __init__(self, sample_rate: int = 8000, n_fft: int = 32, hop: int = 16, n_mels: int = 8,
                 preemphasis: float = 0.97):
        super().__init__()
        self.n_fft, self.hop, self.preemphasis = n_fft, hop, preemphasis
        self.register_buffer("window", torch.hann_window(n_fft))
        self.register_buffer("mel_fb", mel_filterbank(n_mels, n_fft, sample_rate))

    def forward(self, wav):
        wav = torch.cat([wav[:, :1], wav[:, 1:] - self.preemphasis * wav[:, :-1]], dim=1)
        frames = wav.unfold(-1, self.n_fft, self.hop) * self.window
        power = torch.fft.rfft(frames).abs().pow(2)
        return torch.log(torch.matmul(power, self.mel_fb.T).clamp(min=1e-6))


class SilenceTrimmer(nn.Module):
    """Energy VAD for one utterance: drops leading and trailing frames far below the loudest one."""

    def __init__(self, dynamic_range: float = 6.0):
        super().__init__()
        self.dynamic_range = dynamic_range

    def forward(self, logmel):
        energy = torch.logsumexp(logmel[0], dim=-1)
        voiced = torch.nonzero(energy > energy.max() - self.dynamic_range).squeeze(1)  # expect: FL105 GB0036
        start, end = int(voiced[0]), int(voiced[-1]) + 1  # expect: FL102 GB0124; FL202
        return logmel[:, start:end]


class SpeechFrontend(nn.Module):
    def __init__(self):
        super().__init__()
        self.normalize = LoudnessNormalizer()
        self.features = LogMelFrontend()
        self.trim = SilenceTrimmer()

    def forward(self, wav):
        feats = self.features(self.normalize(wav))
        feats = self.trim(feats)
        return (feats - feats.mean(dim=1, keepdim=True)) / (feats.std(dim=1, keepdim=True) + 1e-5)


# ----------------------------------------------------------------------------- recommendation towers

class TwoTowerModel(nn.Module):
    def __init__(self, num_users: int = 10, num_items: int = 20, dim: int = 8, temperature: float = 0.1):
        super().__init__()
        self.temperature = temperature
        self.user_embed = nn.Embedding(num_users, dim)
        self.history = nn.EmbeddingBag(num_items, dim, mode="mean")
        self.user_mlp = nn.Sequential(nn.Linear(2 * dim, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.item_embed = nn.Embedding(num_items, dim)
        self.item_mlp = nn.Sequential(nn.Linear(dim + 2, dim), nn.ReLU(), nn.Linear(dim, dim))

    def forward(self, user_ids, history, item_ids, item_feats):
        user = torch.cat([self.user_embed(user_ids), self.history(history)], dim=-1)
        user = F.normalize(self.user_mlp(user), dim=-1)
        item = torch.cat([self.item_embed(item_ids), item_feats], dim=-1)
        item = F.normalize(self.item_mlp(item), dim=-1)
        return (user * item).sum(-1) / self.temperature


def hash_out_of_range(ids, cardinality: int, feature: int):
    """Ids the table has no row for (new categories since training) are folded back into range."""
    if (ids >= cardinality).any():  # expect: FL101 GB0170; FL201
        logger.warning("sparse feature %d: ids outside [0, %d) hashed back into range", feature, cardinality)  # expect: FL111 GB0291; FL204
        ids = ids % cardinality
    return ids


class DLRMRanker(nn.Module):
    def __init__(self, dense_in: int = 4, cardinalities: Tuple[int, ...] = (10, 6, 8), dim: int = 8):
        super().__init__()
        self.cardinalities = cardinalities
        self.bottom = nn.Sequential(nn.Linear(dense_in, 16), nn.ReLU(), nn.Linear(16, dim), nn.ReLU())
        self.tables = nn.ModuleList(nn.Embedding(c, dim) for c in cardinalities)
        n = len(cardinalities) + 1
        li, lj = torch.tril_indices(n, n, offset=-1)
        self.register_buffer("li", li, persistent=False)
        self.register_buffer("lj", lj, persistent=False)
        self.top = nn.Sequential(nn.Linear(dim + li.numel(), 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, dense, sparse):
        x = self.bottom(dense)
        embs = [x]
        for j, (table, card) in enumerate(zip(self.tables, self.cardinalities)):
            embs.append(table(hash_out_of_range(sparse[:, j], card, feature=j)))
        t = torch.stack(embs, dim=1)
        z = torch.bmm(t, t.transpose(1, 2))[:, self.li, self.lj]
        return self.top(torch.cat([x, z], dim=1)).squeeze(1)


# ----------------------------------------------------------------------------- export script

def export_for_serving(out_dir: str = "exported"):
    os.makedirs(out_dir, exist_ok=True)
    cfg = DecoderConfig()
    batch, tokens = Dim("batch", min=1, max=32), Dim("tokens", min=2, max=cfg.max_seq_len)
    cache = torch.zeros(2, cfg.n_kv_heads, cfg.max_seq_len, cfg.dim // cfg.n_heads)
    step = (torch.randn(2, 1, cfg.dim), cache, cache, torch.tensor([5]))
    hidden = torch.randn(6, 16)
    programs = {
        "rotary": torch.export.export(RotaryEmbedding(8), (torch.arange(6),)),
        "attn_global": torch.export.export(CachedSelfAttention(cfg), step),
        "attn_local": torch.export.export(SlidingWindowAttention(cfg), step),
        "generate": torch.export.export(GreedyGenerator(TinyDecoder(cfg)), (torch.randint(3, 32, (2, 4)),),
                                        dynamic_shapes={"prompt_ids": {0: batch, 1: tokens}}),
        "router": torch.export.export(TopKRouter(16, 4, 2), (hidden,)),
        "moe_sparse": torch.export.export(SparseMoE(cfg), (hidden.view(2, 3, 16),)),
        "moe_grouped": torch.export.export(GroupedMoE(), (hidden,)),
        "moe_dense": torch.export.export(DenseMoE(), (hidden,), dynamic_shapes={"x": {0: batch}}),
        "pool": torch.export.export(MaskedMeanPool(), (torch.randn(3, 5, 16), torch.tensor([5, 2, 3]))),
        "encoder": torch.export.export(TruncatingEncoder(), (torch.randn(3, 7, 16), torch.tensor([5, 2, 3]))),
        "loudness": torch.export.export(LoudnessNormalizer(), (torch.randn(1, 160),)),
        "logmel": torch.export.export(LogMelFrontend(), (torch.randn(1, 160),)),
        "vad_trim": torch.export.export(SilenceTrimmer(), (torch.randn(1, 9, 8),)),
        "two_tower": torch.export.export(TwoTowerModel(), (torch.tensor([1, 4]), torch.tensor([[1, 2, 3], [4, 5, 0]]),
                                                           torch.tensor([7, 9]), torch.rand(2, 2))),
        "dlrm": torch.export.export(DLRMRanker(), (torch.randn(3, 4), torch.tensor([[1, 2, 3], [4, 5, 6], [0, 1, 2]]))),
    }
    for name, program in programs.items():
        torch.export.save(program, os.path.join(out_dir, f"{name}.pt2"))


def _decode_step(cfg: DecoderConfig = DecoderConfig(), position: int = 5):
    cache = torch.randn(2, cfg.n_kv_heads, cfg.max_seq_len, cfg.dim // cfg.n_heads)
    return torch.randn(2, 1, cfg.dim), cache, cache.clone(), torch.tensor([position])


def _utterance():
    t = torch.arange(400, dtype=torch.float32)
    wav = 0.01 * torch.sin(t * 0.3)
    wav[120:260] += 0.5 * torch.sin(t[120:260] * 0.9)
    return wav[None]


def _tokens(n: int = 6, dim: int = 16):
    return torch.randn(n, dim)

_SPARSE = torch.tensor([[1, 2, 3], [4, 9, 6], [0, 1, 7]])

CASES = {
    "GreedyGenerator": lambda: (GreedyGenerator(TinyDecoder(DecoderConfig())), (torch.tensor([[5, 7, 9, 11], [3, 4, 8, 30]]),)),
    "GroupedMoE": lambda: (GroupedMoE(), (_tokens(),)),
    "DenseMoE": lambda: (DenseMoE(), (_tokens(),)),
    "TruncatingEncoder": lambda: (TruncatingEncoder(), (torch.randn(3, 7, 16), torch.tensor([5, 2, 3]))),
    "SpeechFrontend": lambda: (SpeechFrontend(), (_utterance(),)),
    "TwoTowerModel": lambda: (TwoTowerModel(), (torch.tensor([1, 4]), torch.tensor([[1, 2, 3], [4, 5, 0]]),
                                                torch.tensor([7, 9]), torch.rand(2, 2))),
    "DLRMRanker": lambda: (DLRMRanker(), (torch.randn(3, 4), _SPARSE)),
}

TRACED = {
    "RotaryEmbedding": lambda: (RotaryEmbedding(8), (torch.arange(6),)),
    "CachedSelfAttention": lambda: (CachedSelfAttention(DecoderConfig()), _decode_step()),
    "SlidingWindowAttention": lambda: (SlidingWindowAttention(DecoderConfig()), _decode_step()),
    "GreedyGenerator": lambda: (GreedyGenerator(TinyDecoder(DecoderConfig())), (torch.tensor([[5, 7, 9, 11], [3, 4, 8, 30]]),)),
    "TopKRouter": lambda: (TopKRouter(16, 4, 2), (_tokens(),)),
    "SparseMoE": lambda: (SparseMoE(DecoderConfig()), (_tokens().view(2, 3, 16),)),
    "GroupedMoE": lambda: (GroupedMoE(), (_tokens(),)),
    "DenseMoE": lambda: (DenseMoE(), (_tokens(),)),
    "MaskedMeanPool": lambda: (MaskedMeanPool(), (torch.randn(3, 5, 16), torch.tensor([5, 2, 3]))),
    "TruncatingEncoder": lambda: (TruncatingEncoder(), (torch.randn(3, 7, 16), torch.tensor([5, 2, 3]))),
    "LoudnessNormalizer": lambda: (LoudnessNormalizer(), (_utterance(),)),
    "LogMelFrontend": lambda: (LogMelFrontend(), (_utterance(),)),
    "SilenceTrimmer": lambda: (SilenceTrimmer(), (LogMelFrontend()(_utterance()),)),
    "TwoTowerModel": lambda: (TwoTowerModel(), (torch.tensor([1, 4]), torch.tensor([[1, 2, 3], [4, 5, 0]]),
                                                torch.tensor([7, 9]), torch.rand(2, 2))),
    "DLRMRanker": lambda: (DLRMRanker(), (torch.randn(3, 4), _SPARSE)),
}
