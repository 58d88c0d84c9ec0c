"""Symbolic and audio-token music generation in the style of Music Transformer / REMI / MusicGen
repos: REMI vocabulary and bar/beat grammar, relative attention with the skewing trick, a KV cache,
chord conditioning, codebook delay patterns, classifier-free guidance, top-k/top-p sampling with
repetition penalties and n-gram blocking, numpy key estimation, a multi-codebook LM loss."""
import functools
import logging
import math
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("musicgen")
logger.addHandler(logging.NullHandler())

PAD_ID, BOS_ID, EOS_ID = 0, 1, 2
SPECIALS = ("PAD", "BOS", "EOS")
NEG_INF = -1e4
STEPS_PER_BEAT, BEATS_PER_BAR = 4, 4
MAX_CONTEXT = 12
TOKEN_TYPES = ("Bar", "Position", "Pitch", "Velocity", "Duration", "Chord", "Tempo")

# which event families may follow which (REMI grammar, roughly as in the Pop Music Transformer)
GRAMMAR: Dict[str, Tuple[str, ...]] = {
    "Special": ("Bar",), "Bar": ("Position", "Chord", "Tempo"),
    "Position": ("Pitch", "Chord", "Tempo"), "Chord": ("Position", "Pitch"),
    "Tempo": ("Position",), "Pitch": ("Velocity",), "Velocity": ("Duration",),
    "Duration": ("Pitch", "Position", "Bar", "EOS"),
}

PITCH_CLASSES = {"C": 0, "C#": 1, "Db": 1, "D": 2, "D#": 3, "Eb": 3, "E": 4, "F": 5, "F#": 6,
                 "Gb": 6, "G": 7, "G#": 8, "Ab": 8, "A": 9, "A#": 10, "Bb": 10, "B": 11}
CHORD_QUALITIES = {"maj": (0, 4, 7), "min": (0, 3, 7), "dim": (0, 3, 6), "aug": (0, 4, 8),
                   "dom7": (0, 4, 7, 10), "min7": (0, 3, 7, 10)}
QUALITY_ALIASES = {"": "maj", "m": "min", "7": "dom7", "m7": "min7", "o": "dim", "+": "aug"}
CHORD_RE = re.compile(r"^([A-G][#b]?):?([a-z0-9]*)$")
NO_CHORD = 12

# Krumhansl-Kessler major profile
MAJOR_PROFILE = np.array([6.35, 2.23, 3.48, 2.33, 4.38, 4.09, 2.52, 5.19, 2.39, 3.66, 2.29, 2.88])
KEY_NAMES = ("C", "Db", "D", "Eb", "E", "F", "F#", "G", "Ab", "A", "Bb", "B")

class RemiVocab:
    """Flat REMI vocabulary: specials first, then one contiguous id range per event family."""

    def __init__(self, n_positions=16, n_pitches=24, n_velocities=4, n_durations=8,
                 n_chords=6, n_tempos=3):
        counts = (1, n_positions, n_pitches, n_velocities, n_durations, n_chords, n_tempos)
        self.sizes = dict(zip(TOKEN_TYPES, counts))
        self.offsets = dict(zip(TOKEN_TYPES, np.cumsum((len(SPECIALS),) + counts[:-1]).tolist()))
        self._size = len(SPECIALS) + sum(counts)

    def __len__(self):
        return self._size

    @property
    def bar_id(self) -> int:
        return self.offsets["Bar"]

    def range_of(self, kind: str) -> Tuple[int, int]:
        if kind == "EOS":
            return EOS_ID, EOS_ID + 1
        start = self.offsets[kind]
        return start, start + self.sizes[kind]

    def type_of(self, token_id: int) -> str:
        if token_id < len(SPECIALS):
            return "Special"
        for name in TOKEN_TYPES:
            lo, hi = self.range_of(name)
            if lo <= token_id < hi:
                return name
        raise KeyError(token_id)

    def type_index_tensor(self) -> torch.Tensor:
        kinds = list(GRAMMAR)
        return torch.tensor([kinds.index(self.type_of(t)) for t in range(len(self))])

VOCAB = RemiVocab()
TOKEN_TYPE_IDX = VOCAB.type_index_tensor()

@dataclass
class MusicConfig:
    vocab_size: int = len(VOCAB)
    d_model: int = 16
    n_heads: int = 2
    n_layers: int = 2
    max_rel: int = 8
    activation: str = "gelu"
    n_codebooks: int = 4
    codebook_size: int = 11
    cond_dim: int = 12

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

ACTIVATIONS = {"gelu": F.gelu, "relu": F.relu, "swish": F.silu}

# --------------------------------------------------------------------------- attention utils
def split_heads(x, n_heads):
    B, L, D = x.shape
    return x.view(B, L, n_heads, D // n_heads).transpose(1, 2)

def merge_heads(x):
    B, H, L, Dh = x.shape
    return x.transpose(1, 2).reshape(B, L, H * Dh)

def skew(qe):
    """Music Transformer skewing: (B, H, L, L) relative logits -> absolute key positions."""
    B, H, L, _ = qe.shape
    padded = F.pad(qe, (1, 0))
    return padded.reshape(B, H, L + 1, L)[:, :, 1:, :]

def bar_positions(tokens, bar_id=VOCAB.bar_id):
    """Bar index and onset position (within the bar) of every REMI token."""
    is_bar = tokens == bar_id
    bar_idx = is_bar.long().cumsum(-1)
    lo, hi = VOCAB.range_of("Position")
    is_pos = (tokens >= lo) & (tokens < hi)
    pos = torch.where(is_pos, tokens - lo, torch.zeros_like(tokens))
    pos = torch.cummax(pos, dim=-1).values
    return bar_idx, pos

class RelativeGlobalAttention(nn.Module):
    def __init__(self, cfg: MusicConfig):
        super().__init__()
        self.cfg = cfg
        self.n_heads = cfg.n_heads
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.out = nn.Linear(cfg.d_model, cfg.d_model)
        self.Er = nn.Parameter(torch.randn(cfg.max_rel, cfg.head_dim) * 0.02)
        self.scale = 1.0 / math.sqrt(cfg.head_dim)

    def _relative_embeddings(self, L):
        max_rel = self.cfg.max_rel
        if L <= max_rel:  # expect: FL301
            return self.Er[max_rel - L:]
        # distances beyond max_rel share the furthest embedding
        far = self.Er[:1].expand(L - max_rel, -1)
        return torch.cat([far, self.Er], dim=0)

    def forward(self, x, key_padding_mask: Optional[torch.Tensor] = None):
        B, L, _ = x.shape
        q, k, v = (split_heads(t, self.n_heads) for t in self.qkv(x).chunk(3, dim=-1))
        Er = self._relative_embeddings(L)
        srel = skew(torch.matmul(q, Er.transpose(0, 1)))
        scores = (torch.matmul(q, k.transpose(-2, -1)) + srel) * self.scale
        scores = scores.masked_fill(torch.ones(L, L, dtype=torch.bool).triu(1), NEG_INF)
        if key_padding_mask is not None:
            scores = scores.masked_fill(key_padding_mask[:, None, None, :], NEG_INF)
        return self.out(merge_heads(scores.softmax(-1) @ v))

class MusicTransformerBlock(nn.Module):
    def __init__(self, cfg: MusicConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.attn = RelativeGlobalAttention(cfg)
        self.ff1 = nn.Linear(cfg.d_model, 4 * cfg.d_model)
        self.ff2 = nn.Linear(4 * cfg.d_model, cfg.d_model)
        self.act = ACTIVATIONS.get(cfg.activation, F.gelu)

    def forward(self, x, key_padding_mask=None):
        x = x + self.attn(self.ln1(x), key_padding_mask)
        return x + self.ff2(self.act(self.ff1(self.ln2(x))))

class KVCache:
    def __init__(self, batch, n_heads, max_len, head_dim):
        self.k = torch.zeros(batch, n_heads, max_len, head_dim)
        self.v = torch.zeros_like(self.k)
        self.length = 0

    def append(self, k, v):
        end = self.length + k.shape[2]
        assert end <= self.k.shape[2], "kv cache overflow"
        self.k[:, :, self.length:end] = k  # expect: FL302
        self.v[:, :, self.length:end] = v
        self.length = end
        return self.k[:, :, :end], self.v[:, :, :end]

class CachedSelfAttention(nn.Module):
    """Incremental decoding: the prompt is fed once, then one frame per call."""

    def __init__(self, cfg: MusicConfig, batch=2, max_len=32):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.out = nn.Linear(cfg.d_model, cfg.d_model)
        self.cache = KVCache(batch, cfg.n_heads, max_len, cfg.head_dim)

    def forward(self, x):
        q, k, v = (split_heads(t, self.n_heads) for t in self.qkv(x).chunk(3, dim=-1))
        first = self.cache.length == 0
        k, v = self.cache.append(k, v)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=first and x.shape[1] > 1)
        return self.out(merge_heads(out))

# --------------------------------------------------------------------------- conditioning
def chord_template(intervals, root=0):
    chroma = [0.0] * 12
    for iv in intervals:
        chroma[(root + iv) % 12] = 1.0
    return chroma

def parse_chord(symbol: str) -> Tuple[int, int]:
    """'A:min7' -> (root pitch class, quality index); 'N' is no-chord."""
    if symbol in ("N", "N.C.", ""):
        return NO_CHORD, len(CHORD_QUALITIES)
    match = CHORD_RE.match(symbol.strip())
    if match is None:
        raise ValueError(f"unparsable chord {symbol!r}")
    root, quality = match.groups()
    quality = QUALITY_ALIASES.get(quality, quality)
    if quality not in CHORD_QUALITIES:
        logger.warning("unknown chord quality %r in %s, using maj", quality, symbol)  # expect: FL000 GB0291
        quality = "maj"
    return PITCH_CLASSES[root], list(CHORD_QUALITIES).index(quality)

class ChordEmbedding(nn.Module):
    def __init__(self, d_model=16):
        super().__init__()
        self.root = nn.Embedding(NO_CHORD + 1, d_model)
        self.quality = nn.Embedding(len(CHORD_QUALITIES) + 1, d_model)
        self.chroma_proj = nn.Linear(12, d_model, bias=False)
        templates = [chord_template(iv) for iv in CHORD_QUALITIES.values()] + [[0.0] * 12]
        self.register_buffer("templates", torch.tensor(templates))

    def forward(self, roots, qualities):
        shift = (torch.arange(12, device=roots.device) - roots.clamp(max=11)[..., None]) % 12
        chroma = self.templates[qualities].gather(-1, shift)
        return self.root(roots) + self.quality(qualities) + self.chroma_proj(chroma)

class ChordSymbolEncoder(ChordEmbedding):
    def forward(self, progressions: List[List[str]]):
        parsed = [[parse_chord(sym) for sym in prog] for prog in progressions]
        roots = torch.tensor([[r for r, _ in prog] for prog in parsed])
        qualities = torch.tensor([[q for _, q in prog] for prog in parsed])
        return super().forward(roots, qualities)

# --------------------------------------------------------------------------- models
class TinyMusicLM(nn.Module):
    """MusicGen-style LM over K parallel codebook streams: summed embeddings, K output heads."""

    def __init__(self, cfg: MusicConfig):
        super().__init__()
        self.cfg = cfg
        self.emb = nn.ModuleList(nn.Embedding(cfg.codebook_size + 1, cfg.d_model)
                                 for _ in range(cfg.n_codebooks))
        self.cond_proj = nn.Linear(cfg.cond_dim, cfg.d_model)
        self.blocks = nn.ModuleList(MusicTransformerBlock(cfg) for _ in range(cfg.n_layers))
        self.norm = nn.LayerNorm(cfg.d_model)
        self.heads = nn.ModuleList(nn.Linear(cfg.d_model, cfg.codebook_size)
                                   for _ in range(cfg.n_codebooks))

    def forward(self, codes, cond: Optional[torch.Tensor] = None):
        x = sum(emb(codes[:, k]) for k, emb in enumerate(self.emb))
        if cond is not None:
            x = x + self.cond_proj(cond)[:, None, :]
        pad_mask = (codes == self.cfg.codebook_size).all(dim=1)
        for block in self.blocks:
            x = block(x, pad_mask)
        x = self.norm(x)
        return torch.stack([head(x) for head in self.heads], dim=1)

def classifier_free_guidance(logits, scale):
    cond, uncond = logits.chunk(2, dim=0)
    return uncond + scale * (cond - uncond)

def _log_logit_stats(tag, logits):
    if logger.isEnabledFor(logging.DEBUG):  # expect: FL000 GB0291
        entropy = -(logits.softmax(-1) * logits.log_softmax(-1)).sum(-1).mean()
        logger.debug("%s: max logit %.3f entropy %.3f", tag, logits.max(), entropy)

class CFGMusicLM(nn.Module):
    def __init__(self, cfg: MusicConfig, guidance_scale=3.0):
        super().__init__()
        self.lm = TinyMusicLM(cfg)
        self.null_cond = nn.Parameter(torch.zeros(cfg.cond_dim))
        self.guidance_scale = guidance_scale

    def forward(self, codes, cond):
        if self.guidance_scale == 1.0:
            return self.lm(codes, cond)[:, :, -1]
        cond = torch.cat([cond, self.null_cond.expand(codes.shape[0], -1)], dim=0)
        logits = self.lm(codes.repeat(2, 1, 1), cond)[:, :, -1]
        logits = classifier_free_guidance(logits, self.guidance_scale)
        _log_logit_stats("cfg", logits)
        return logits

class RemiDecoder(nn.Module):
    """Single-stream REMI decoder with bar / position embeddings added to token embeddings."""

    def __init__(self, cfg: MusicConfig, max_bars=8):
        super().__init__()
        self.max_bars = max_bars
        self.tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.bar = nn.Embedding(max_bars, cfg.d_model)
        self.pos = nn.Embedding(VOCAB.sizes["Position"], cfg.d_model)
        self.block = MusicTransformerBlock(cfg)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size)
        self._warned_context = False

    def check_context(self, length, limit=MAX_CONTEXT):
        if length > limit and not self._warned_context:
            logger.warning("context of %d tokens exceeds the trained length %d", length, limit)  # expect: FL000 GB0291
            self._warned_context = True  # expect: FL302

    def embed(self, tokens):
        bar_idx, pos = bar_positions(tokens)
        return self.tok(tokens) + self.bar(bar_idx.clamp(max=self.max_bars - 1)) + self.pos(pos)

    def forward(self, tokens):
        self.check_context(tokens.shape[1])
        return self.head(self.block(self.embed(tokens)))

class MelodyHarmonizer(RemiDecoder):
    """Melody tokens plus one chord per token -> next-event logits."""

    def __init__(self, cfg: MusicConfig):
        super().__init__(cfg)
        self.chords = ChordEmbedding(cfg.d_model)

    def forward(self, tokens, chord_roots, chord_qualities):
        self.check_context(tokens.shape[1])
        x = self.embed(tokens) + self.chords(chord_roots, chord_qualities)
        return self.head(self.block(x))

# --------------------------------------------------------------------------- sampling
def apply_repetition_penalty(logits, prev_tokens, penalty=1.2):
    score = torch.gather(logits, -1, prev_tokens)
    score = torch.where(score < 0, score * penalty, score / penalty)
    return logits.scatter(-1, prev_tokens, score)

def temperature_scale(logits, temperature=1.0):
    return logits / max(temperature, 1e-5)

@torch.compile
def top_k_top_p_filtering(logits, top_k=0, top_p=1.0, min_keep=1):
    if top_k > 0:
        top_k = min(max(top_k, min_keep), logits.size(-1))
        kth = torch.topk(logits, top_k)[0][..., -1, None]
        logits = logits.masked_fill(logits < kth, NEG_INF)
    if top_p < 1.0:
        sorted_logits, sorted_idx = torch.sort(logits, descending=True)
        cumprobs = sorted_logits.softmax(-1).cumsum(-1)
        remove = cumprobs > top_p
        remove[..., 1:] = remove[..., :-1].clone()
        remove[..., :min_keep] = False
        logits = logits.masked_fill(remove.scatter(-1, sorted_idx, remove), NEG_INF)
    return logits

@torch.compile
def sample_next(logits, prev_tokens, generator=None, temperature=1.0, top_k=0, top_p=1.0,
                penalty=1.0):
    processors = []
    if penalty != 1.0:
        processors.append(functools.partial(apply_repetition_penalty, prev_tokens=prev_tokens,
                                            penalty=penalty))
    processors.append(functools.partial(temperature_scale, temperature=temperature))
    processors.append(functools.partial(top_k_top_p_filtering, top_k=top_k, top_p=top_p))
    for proc in processors:
        logits = proc(logits)
    return torch.multinomial(logits.softmax(-1), 1, generator=generator)  # expect: FL000 GB0055

@functools.lru_cache(maxsize=None)
def grammar_table(vocab_size: int) -> torch.Tensor:
    kinds = list(GRAMMAR)
    table = torch.zeros(len(kinds), vocab_size, dtype=torch.bool)
    for i, kind in enumerate(kinds):
        for nxt in GRAMMAR[kind]:
            lo, hi = VOCAB.range_of(nxt)
            table[i, lo:hi] = True
    return table

@torch.compile
def apply_grammar_mask(logits, last_tokens):
    allowed = grammar_table(logits.shape[-1])[TOKEN_TYPE_IDX[last_tokens]]
    return logits.masked_fill(~allowed, NEG_INF)

class ConstrainedSampler(nn.Module):
    """Grammar-constrained sampling with the allowed-id lists built on the host per sequence."""

    def __init__(self, vocab: RemiVocab = VOCAB, temperature=0.8):
        super().__init__()
        self.vocab = vocab
        self.temperature = temperature

    def allowed_ids(self, token_id: int) -> List[int]:
        ids = []
        for nxt in GRAMMAR.get(self.vocab.type_of(token_id), ("Bar",)):
            lo, hi = self.vocab.range_of(nxt)
            ids.extend(range(lo, hi))
        return ids

    def forward(self, logits, tokens, generator=None):
        mask = torch.full_like(logits, NEG_INF)
        for b in range(logits.shape[0]):
            mask[b, self.allowed_ids(int(tokens[b, -1]))] = 0.0  # expect: FL000 GB0124
        probs = temperature_scale(logits + mask, self.temperature).softmax(-1)
        return torch.multinomial(probs, 1, generator=generator)

def banned_ngram_tokens(seq: List[int], n: int) -> List[int]:
    if len(seq) < n:
        return []
    prefix = tuple(seq[len(seq) - n + 1:])
    return [seq[i + n - 1] for i in range(len(seq) - n + 1) if tuple(seq[i:i + n - 1]) == prefix]

@torch.compile
def no_repeat_ngram(logits, tokens, n=3):
    logits = logits.clone()
    for b, row in enumerate(tokens.tolist()):  # expect: FL000 GB0033
        banned = banned_ngram_tokens(row, n)
        if banned:
            logits[b, banned] = NEG_INF
    return logits

@torch.compile
def generate_tokens(model, prompt, steps, generator=None, temperature=0.9, top_k=8):
    tokens = prompt
    finished = torch.zeros(prompt.shape[0], dtype=torch.bool)
    for _ in range(steps):
        logits = model(tokens)[:, -1]
        logits = apply_grammar_mask(logits, tokens[:, -1])
        next_tok = sample_next(logits, tokens, generator, temperature=temperature, top_k=top_k)
        next_tok = next_tok.masked_fill(finished[:, None], PAD_ID)
        tokens = torch.cat([tokens, next_tok], dim=1)
        finished = finished | (next_tok.squeeze(1) == EOS_ID)
        if finished.all():
            break
    return tokens

# --------------------------------------------------------------------------- codebook patterns
def delay_pattern(n_codebooks: int, kind: str = "delay") -> List[int]:
    if kind == "delay":
        return list(range(n_codebooks))
    raise ValueError(f"unknown pattern {kind}")

def build_delay_pattern(codes, pattern="delay", pad_id: Optional[int] = None):
    B, K, T = codes.shape
    pad_id = MusicConfig().codebook_size if pad_id is None else pad_id
    delays = delay_pattern(K, pattern)
    out = codes.new_full((B, K, T + max(delays)), pad_id)
    for k, d in enumerate(delays):  # expect: FL301
        out[:, k, d:d + T] = codes[:, k]
    return out

apply_delay_pattern = torch.compile(build_delay_pattern)

# --------------------------------------------------------------------------- analysis / losses
def pitch_class_histogram(tokens):
    lo, hi = VOCAB.range_of("Pitch")
    valid = ((tokens >= lo) & (tokens < hi)).float()
    pc = (tokens - lo).clamp(0, hi - lo - 1) % 12
    return (F.one_hot(pc, 12).float() * valid[..., None]).sum(-2)

@torch.compile
def estimate_key(tokens):
    hist = pitch_class_histogram(tokens)
    profiles = np.stack([np.roll(MAJOR_PROFILE, k) for k in range(12)])
    scores = profiles @ hist.detach().numpy().T
    keys = [KEY_NAMES[i] for i in scores.argmax(0).tolist()]  # expect: FL000 GB0033
    return keys, hist

@torch.compile
def quantize_onsets(piano_roll, steps_per_bar=STEPS_PER_BEAT * BEATS_PER_BAR):
    B, T, P = piano_roll.shape
    rem = T % steps_per_bar
    if rem:  # expect: FL301
        piano_roll = F.pad(piano_roll, (0, 0, 0, steps_per_bar - rem))
    bars = piano_roll.reshape(B, -1, steps_per_bar, P)
    onsets = (bars[:, :, 1:] > 0.5) & (bars[:, :, :-1] <= 0.5)
    return onsets.float().sum(2), bars.amax(2)

def masked_accuracy(logits, targets, ignore_index):
    valid = targets != ignore_index
    correct = (logits.argmax(-1) == targets) & valid
    return correct.sum() / valid.sum().clamp(min=1)

@torch.compile
def codebook_lm_loss(logits, targets, weights: Optional[List[float]] = None,
                     return_metrics=False):
    B, K, T, C = logits.shape
    weights = weights or [1.0] * K
    losses, metrics = [], {}
    for k in range(K):
        loss_k = F.cross_entropy(logits[:, k].reshape(-1, C), targets[:, k].reshape(-1),
                                 ignore_index=C)
        losses.append(weights[k] * loss_k)
        if return_metrics:
            metrics[f"acc_cb{k}"] = masked_accuracy(logits[:, k], targets[:, k], C).item()  # expect: FL000 GB0124
    return sum(losses) / sum(weights), metrics

# --------------------------------------------------------------------------- cases
CFG = MusicConfig()

def _gen(seed=0):
    return torch.Generator().manual_seed(seed)

def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=_gen(seed))

def _ints(high, *shape, seed=0):
    return torch.randint(0, high, shape, generator=_gen(seed))

def _remi_tokens(B=2, T=9, seed=0):
    return torch.randint(len(SPECIALS), len(VOCAB), (B, T), generator=_gen(seed))

def _codes(B=2, K=4, T=7, seed=0):
    return _ints(CFG.codebook_size, B, K, T, seed=seed)

def _prompt():
    bar, (pos, _), (pitch, _) = VOCAB.bar_id, VOCAB.range_of("Position"), VOCAB.range_of("Pitch")
    return torch.tensor([[BOS_ID, bar, pos, pitch + 3], [BOS_ID, bar, pos + 4, pitch + 7]])

CASES = {
    "RelativeGlobalAttention": lambda: (RelativeGlobalAttention(CFG), (_randn(2, 5, 16),),
                                        (_randn(3, 11, 16),)),
    "MusicTransformerBlock": lambda: (MusicTransformerBlock(CFG), (_randn(2, 7, 16),)),
    "CachedSelfAttention": lambda: (CachedSelfAttention(CFG), (_randn(2, 5, 16),)),
    "ChordEmbedding": lambda: (ChordEmbedding(), (torch.tensor([[0, 9, 5], [7, 12, 2]]),
                                                  torch.tensor([[0, 1, 4], [4, 6, 5]]))),
    "ChordSymbolEncoder": lambda: (ChordSymbolEncoder(), ([["C:maj", "A:m", "F", "G:7"],
                                                           ["D:min7", "G:sus4", "N", "C"]],)),
    "TinyMusicLM": lambda: (TinyMusicLM(CFG), (_codes(), _randn(2, 12))),
    "CFGMusicLM": lambda: (CFGMusicLM(CFG), (_codes(), _randn(2, 12))),
    "RemiDecoder": lambda: (RemiDecoder(CFG), (_remi_tokens(),)),
    "MelodyHarmonizer": lambda: (MelodyHarmonizer(CFG), (_remi_tokens(2, 14), _ints(13, 2, 14, seed=1),
                                                        _ints(7, 2, 14, seed=2))),
    "top_k_top_p_filtering": lambda: (top_k_top_p_filtering, (_randn(3, 65), 5, 0.9)),
    "sample_next": lambda: (sample_next, (_randn(3, 65), _remi_tokens(3, 6), _gen(3), 0.8, 6, 0.95,
                                          1.3)),
    "apply_grammar_mask": lambda: (apply_grammar_mask, (_randn(2, 65), torch.tensor([4, 23]))),
    "ConstrainedSampler": lambda: (ConstrainedSampler(), (_randn(2, 65), _remi_tokens(2, 5), _gen(4))),
    "no_repeat_ngram": lambda: (no_repeat_ngram, (_randn(2, 65), torch.tensor(
        [[3, 5, 7, 3, 5, 9, 3, 5], [10, 11, 12, 13, 10, 11, 14, 10]]))),
    "generate_tokens": lambda: (generate_tokens, (RemiDecoder(CFG), _prompt(), 3, _gen(5))),
    "apply_delay_pattern": lambda: (apply_delay_pattern, (_codes(2, 3, 7),), (_codes(2, 5, 9),)),
    "estimate_key": lambda: (estimate_key, (_remi_tokens(2, 11),)),
    "quantize_onsets": lambda: (quantize_onsets, (torch.rand(2, 20, 5, generator=_gen(6)),),
                                (torch.rand(3, 32, 6, generator=_gen(7)),)),
    "codebook_lm_loss": lambda: (codebook_lm_loss, (_randn(2, 3, 5, 11), _codes(2, 3, 5), None,
                                                    True)),
}
