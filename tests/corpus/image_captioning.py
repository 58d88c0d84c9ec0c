"""Image captioning / VQA as research repos write it (show-attend-tell tutorials, BLIP-style
reimplementations, bottom-up-top-down VQA, pycocoevalcap ports): ViT / CNN / region features,
cross-attention decoders, greedy / beam / nucleus decoding, n-gram blocking, CIDEr-D for SCST."""
import functools
import logging
import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

log = logging.getLogger("captioning")
log.addHandler(logging.NullHandler())

PAD, BOS, EOS, UNK = 0, 1, 2, 3
SPECIALS = ("<pad>", "<bos>", "<eos>", "<unk>")
WORDS = "a man dog riding on the street with red ball two people sitting bench park of in white cat".split()
MAX_CAPTION_LEN = 12
NEG_INF = -1e4
DEBUG_ATTENTION = False
MAX_SS_PROB = 0.25

@dataclass
class CaptionConfig:
    vocab_size: int = len(SPECIALS) + len(WORDS)
    d_model: int = 16
    n_heads: int = 2
    n_layers: int = 2
    patch_size: int = 4
    image_size: int = 16
    label_smoothing: float = 0.1
    max_len: int = MAX_CAPTION_LEN

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def grid(self) -> int:
        return self.image_size // self.patch_size

DEFAULT_CFG = CaptionConfig()
ITOS = list(SPECIALS) + WORDS
STOI = {w: i for i, w in enumerate(ITOS)}

def encode_caption(text: str, add_bos: bool = True) -> List[int]:
    return ([BOS] if add_bos else []) + [STOI.get(w, UNK) for w in text.lower().split()] + [EOS]

def make_causal_mask(length: int, device=None) -> torch.Tensor:
    return torch.triu(torch.full((length, length), NEG_INF, device=device), diagonal=1)

def key_padding_to_additive(pad_mask: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
    if pad_mask is None or not pad_mask.any():  # nothing padded: skip the extra add  # expect: FL000 GB0170
        return None
    return pad_mask[:, None, None, :].to(torch.float32) * NEG_INF

def strip_after_eos(ids: List[int]) -> List[int]:
    ids = ids[: ids.index(EOS)] if EOS in ids else ids
    return [i for i in ids if i not in (PAD, BOS)]

def length_penalty(length: int, alpha: float = 0.6) -> float:  # GNMT: ((5 + |Y|) / 6) ** alpha
    return ((5.0 + length) / 6.0) ** alpha

# --------------------------------------------------------------------------- visual encoders

class PatchEmbed(nn.Module):
    """ViT patch embedding; the position table is resized for other resolutions (timm-style)."""
    def __init__(self, cfg: CaptionConfig = DEFAULT_CFG, in_chans: int = 3):
        super().__init__()
        self.cfg = cfg
        self.proj = nn.Conv2d(in_chans, cfg.d_model, cfg.patch_size, stride=cfg.patch_size)
        self.pos_embed = nn.Parameter(torch.randn(1, cfg.grid * cfg.grid, cfg.d_model) * 0.02)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, cfg.d_model))

    def _resized_pos_embed(self, gh: int, gw: int) -> torch.Tensor:
        g = self.cfg.grid
        if gh == g and gw == g:  # expect: FL301
            return self.pos_embed
        pos = self.pos_embed.reshape(1, g, g, -1).permute(0, 3, 1, 2)
        pos = F.interpolate(pos, size=(gh, gw), mode="bicubic", align_corners=False)
        return pos.permute(0, 2, 3, 1).flatten(1, 2)

    def forward(self, images):
        x = self.proj(images)
        b, _, gh, gw = x.shape
        x = x.flatten(2).transpose(1, 2) + self._resized_pos_embed(gh, gw)
        return torch.cat([self.cls_token.expand(b, -1, -1), x], dim=1)

class ConvGridEncoder(nn.Module):
    """Show-attend-tell style CNN: conv stages, adaptive pool to a fixed grid of regions."""
    def __init__(self, cfg: CaptionConfig = DEFAULT_CFG, widths=(8, 12), grid: int = 3):
        super().__init__()
        layers, c_in = [], 3
        for w in widths:
            layers += [nn.Conv2d(c_in, w, 3, padding=1), nn.BatchNorm2d(w), nn.ReLU(True), nn.MaxPool2d(2)]
            c_in = w
        self.body, self.pool = nn.Sequential(*layers), nn.AdaptiveAvgPool2d(grid)
        self.proj = nn.Linear(c_in, cfg.d_model)

    def forward(self, images):
        regions = self.pool(self.body(images)).flatten(2).transpose(1, 2)
        return self.proj(regions), regions.mean(1)

class RegionFeatureEmbed(nn.Module):
    """Bottom-up-attention region features plus normalised box geometry."""
    def __init__(self, cfg: CaptionConfig = DEFAULT_CFG, feat_dim: int = 10, max_regions: int = 6):
        super().__init__()
        self.max_regions = max_regions
        self.feat_proj, self.box_proj = nn.Linear(feat_dim, cfg.d_model), nn.Linear(5, cfg.d_model)
        self.norm = nn.LayerNorm(cfg.d_model)

    def forward(self, feats, boxes, image_hw: Tuple[int, int]):
        if feats.shape[1] > self.max_regions:  # detections come sorted by confidence  # expect: FL301
            feats, boxes = feats[:, : self.max_regions], boxes[:, : self.max_regions]
        h, w = image_hw
        geo = boxes / boxes.new_tensor([w, h, w, h])
        area = (geo[..., 2] - geo[..., 0]) * (geo[..., 3] - geo[..., 1])
        return self.norm(self.feat_proj(feats) + self.box_proj(torch.cat([geo, area[..., None]], -1)))

ENCODERS: Dict[str, Callable[[CaptionConfig], nn.Module]] = {"vit": PatchEmbed, "cnn": ConvGridEncoder}

def build_encoder(name: str, cfg: CaptionConfig) -> nn.Module:
    try:
        return ENCODERS[name](cfg)
    except KeyError:
        raise ValueError(f"unknown encoder {name!r}; choose from {sorted(ENCODERS)}") from None

# --------------------------------------------------------------------------- transformer decoder

class MultiHeadAttention(nn.Module):
    def __init__(self, cfg: CaptionConfig = DEFAULT_CFG, record: bool = False):
        super().__init__()
        d = cfg.d_model
        self.n_heads, self.scale = cfg.n_heads, cfg.head_dim ** -0.5
        self.q, self.kv, self.out = nn.Linear(d, d), nn.Linear(d, 2 * d), nn.Linear(d, d)
        self.record, self.last_weights = record, None

    def _split(self, x):
        return x.unflatten(-1, (self.n_heads, -1)).transpose(1, 2)

    def forward(self, query, context, attn_bias=None):
        q = self._split(self.q(query))
        k, v = (self._split(t) for t in self.kv(context).chunk(2, dim=-1))
        scores = (q @ k.transpose(-2, -1)) * self.scale
        if attn_bias is not None:
            scores = scores + attn_bias
        weights = scores.softmax(-1)
        if self.record:
            self.last_weights = weights.detach()
        return self.out((weights @ v).transpose(1, 2).flatten(2))

class CaptionDecoderLayer(nn.Module):
    def __init__(self, cfg: CaptionConfig = DEFAULT_CFG):
        super().__init__()
        d = cfg.d_model
        self.self_attn = MultiHeadAttention(cfg)
        self.cross_attn = MultiHeadAttention(cfg, record=DEBUG_ATTENTION)
        self.ffn = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        self.norms = nn.ModuleList([nn.LayerNorm(d) for _ in range(3)])

    def forward(self, x, memory, self_bias=None, memory_bias=None):
        h = self.norms[0](x)
        x = x + self.self_attn(h, h, self_bias)
        x = x + self.cross_attn(self.norms[1](x), memory, memory_bias)
        return x + self.ffn(self.norms[2](x))

class CaptionDecoder(nn.Module):
    def __init__(self, cfg: CaptionConfig = DEFAULT_CFG):
        super().__init__()
        d = cfg.d_model
        self.embed = nn.Embedding(cfg.vocab_size, d, padding_idx=PAD)
        self.pos = nn.Embedding(cfg.max_len + 2, d)
        self.layers = nn.ModuleList([CaptionDecoderLayer(cfg) for _ in range(cfg.n_layers)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, cfg.vocab_size, bias=False)
        self.head.weight = self.embed.weight  # tied input / output embeddings
        self._mask_cache: Dict[int, torch.Tensor] = {}

    def causal_bias(self, length: int, device) -> torch.Tensor:
        mask = self._mask_cache.get(length)
        if mask is None or mask.device != device:
            mask = make_causal_mask(length, device)
            self._mask_cache[length] = mask  # expect: FL302
        return mask

    def forward(self, tokens, memory, memory_pad: Optional[torch.Tensor] = None):
        t = tokens.shape[1]
        x = self.embed(tokens) + self.pos(torch.arange(t, device=tokens.device))
        self_bias = self.causal_bias(t, tokens.device)
        memory_bias = key_padding_to_additive(memory_pad)
        for layer in self.layers:
            x = layer(x, memory, self_bias, memory_bias)
        return self.head(self.norm(x))

class LabelSmoothedCrossEntropy(nn.Module):
    def __init__(self, smoothing: float = 0.1, ignore_index: int = PAD, reduction: str = "mean"):
        super().__init__()
        assert reduction in ("mean", "sum"), reduction
        self.eps, self.ignore_index, self.reduction = smoothing, ignore_index, reduction

    def forward(self, logits, targets):
        logp = logits.log_softmax(-1)
        nll = -logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        loss = (1.0 - self.eps) * nll - self.eps * logp.mean(-1)
        mask = targets.ne(self.ignore_index)
        loss = loss.masked_fill(~mask, 0.0)
        if self.reduction == "sum":
            return loss.sum()
        return loss.sum() / max(int(mask.sum()), 1)  # expect: FL000 GB0124

def log_perplexity(logits=None, loss=None, **_):
    if log.isEnabledFor(logging.DEBUG):  # expect: FL000 GB0291
        log.debug("ppl=%.3f", math.exp(loss.item()))

class CaptionerMixin:
    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def encode(self, images):
        out = self.encoder(images)  # the CNN encoder also returns a pooled global feature
        return out[0] if isinstance(out, tuple) else out

class CaptioningModel(CaptionerMixin, nn.Module):
    def __init__(self, cfg: CaptionConfig = DEFAULT_CFG, encoder: str = "vit", hooks=None):
        super().__init__()
        self.encoder = build_encoder(encoder, cfg)
        self.decoder = CaptionDecoder(cfg)
        self.criterion = LabelSmoothedCrossEntropy(cfg.label_smoothing, reduction="sum")
        self.hooks: List[Callable] = list(hooks or [])

    def forward(self, images, captions: Optional[torch.Tensor] = None):
        memory = self.encode(images.to(self.device))
        if captions is None:
            return memory
        logits = self.decoder(captions[:, :-1], memory)
        loss = self.criterion(logits, captions[:, 1:]) / captions.shape[0]
        for hook in self.hooks:
            hook(logits=logits, loss=loss)
        return loss, logits

SCHEDULES = {"linear": lambda epoch, k: min(1.0, epoch / k),
             "inverse_sigmoid": lambda epoch, k: 1.0 - k / (k + math.exp(epoch / k))}

class ScheduledSamplingCaptioner(CaptionerMixin, nn.Module):
    """Two-pass scheduled sampling: teacher-forced predictions replace gold tokens w.p. p(epoch)."""
    def __init__(self, cfg=DEFAULT_CFG, schedule: str = "inverse_sigmoid", k: float = 5.0, epoch: int = 6):
        super().__init__()
        self.encoder = ConvGridEncoder(cfg)
        self.decoder = CaptionDecoder(cfg)
        self.schedule = functools.partial(SCHEDULES[schedule], k=k)
        self.epoch = epoch

    @property
    def sampling_prob(self) -> float:
        return self.schedule(self.epoch)

    def forward(self, images, captions, coin):
        memory = self.encode(images)
        inp = captions[:, :-1]
        p = float(np.clip(self.sampling_prob, 0.0, MAX_SS_PROB))
        if p > 0:
            with torch.no_grad():
                pred = self.decoder(inp, memory).argmax(-1)
            shifted = torch.cat([inp[:, :1], pred[:, :-1]], dim=1)
            use_model = coin[:, : inp.shape[1]] < p
            use_model[:, 0] = False
            inp = torch.where(use_model & inp.ne(PAD), shifted, inp)
        return self.decoder(inp, memory)

@torch.compile
def greedy_decode(decoder: CaptionDecoder, memory, max_len: int = MAX_CAPTION_LEN):
    b = memory.shape[0]
    tokens = torch.full((b, 1), BOS, dtype=torch.long, device=memory.device)
    finished = torch.zeros(b, dtype=torch.bool, device=memory.device)
    for _ in range(max_len - 1):
        nxt = decoder(tokens, memory)[:, -1].argmax(-1).masked_fill(finished, PAD)
        tokens = torch.cat([tokens, nxt[:, None]], dim=1)
        finished |= nxt.eq(EOS)
        if finished.all():  # expect: FL000 GB0170
            break
    return tokens

# --------------------------------------------------------------------------- show, attend and tell

class ShowAttendTellDecoder(nn.Module):
    def __init__(self, cfg: CaptionConfig = DEFAULT_CFG, feat_dim: int = 12, alpha_c: float = 1.0):
        super().__init__()
        d = cfg.d_model
        self.enc_att, self.dec_att, self.full_att = nn.Linear(feat_dim, d), nn.Linear(d, d), nn.Linear(d, 1)
        self.embed = nn.Embedding(cfg.vocab_size, d)
        self.cell = nn.LSTMCell(d + feat_dim, d)
        self.init_h, self.init_c = nn.Linear(feat_dim, d), nn.Linear(feat_dim, d)
        self.f_beta = nn.Linear(d, feat_dim)
        self.fc, self.alpha_c = nn.Linear(d, cfg.vocab_size), alpha_c

    def init_state(self, feats):
        mean = feats.mean(dim=1)
        return torch.tanh(self.init_h(mean)), torch.tanh(self.init_c(mean))

    def attend(self, feats, h):
        e = self.full_att(torch.relu(self.enc_att(feats) + self.dec_att(h).unsqueeze(1))).squeeze(2)
        alpha = e.softmax(dim=1)
        return (feats * alpha.unsqueeze(2)).sum(dim=1), alpha

    def step(self, tokens, state, feats):
        h, c = state
        ctx, alpha = self.attend(feats, h)
        ctx = torch.sigmoid(self.f_beta(h)) * ctx
        h, c = self.cell(torch.cat([self.embed(tokens), ctx], dim=1), (h, c))
        return self.fc(h), (h, c), alpha

    def forward(self, feats, captions, caption_lengths):
        lengths, order = caption_lengths.sort(dim=0, descending=True)
        feats, captions = feats[order], captions[order]
        decode_lengths = (lengths - 1).tolist()  # expect: FL000 GB0033
        b, steps = captions.shape[0], max(decode_lengths)
        logits = feats.new_zeros(b, steps, self.fc.out_features)
        alphas = feats.new_zeros(b, steps, feats.shape[1])
        h, c = self.init_state(feats)
        for t in range(steps):
            bt = sum(l > t for l in decode_lengths)
            out, (h, c), alpha = self.step(captions[:bt, t], (h[:bt], c[:bt]), feats[:bt])
            logits[:bt, t] = out
            alphas[:bt, t] = alpha
        doubly_stochastic = self.alpha_c * ((1.0 - alphas.sum(dim=1)) ** 2).mean()
        return logits, captions[:, 1:], decode_lengths, doubly_stochastic

@torch.compile
def beam_search(decoder: ShowAttendTellDecoder, feats, beam_size: int = 3, max_len: int = 4,
                alpha: float = 0.6) -> List[int]:
    """Single-image beam search; finished hypotheses are rescored with the GNMT penalty."""
    k = beam_size
    feats = feats.expand(k, -1, -1)
    seqs, scores = torch.full((k, 1), BOS, dtype=torch.long), torch.zeros(k)
    state = decoder.init_state(feats)
    complete: List[Tuple[List[int], float]] = []
    for step in range(1, max_len + 1):
        logits, state, _ = decoder.step(seqs[:, -1], state, feats)
        vocab = logits.shape[-1]
        logp = scores[:, None] + logits.log_softmax(-1)
        flat = logp[0] if step == 1 else logp.view(-1)  # beams are identical before step 1
        scores, idx = flat.topk(k)
        prev, nxt = idx // vocab, idx % vocab
        seqs = torch.cat([seqs[prev], nxt[:, None]], dim=1)
        state = tuple(s[prev] for s in state)
        done = nxt.eq(EOS)
        for i in done.nonzero().flatten().tolist():  # expect: FL000 GB0036
            complete.append((seqs[i].tolist(), scores[i].item() / length_penalty(step, alpha)))
        if len(complete) >= beam_size:
            break
        scores = scores.masked_fill(done, float("-inf"))
    if not complete:
        complete = [(seqs[0].tolist(), scores[0].item() / length_penalty(max_len, alpha))]
    return strip_after_eos(max(complete, key=lambda c: c[1])[0])

# --------------------------------------------------------------------------- sampling utilities

def apply_repetition_penalty(logits, prev_tokens, penalty: float = 1.2):  # CTRL-style
    if penalty == 1.0:
        return logits
    score = logits.gather(-1, prev_tokens)
    score = torch.where(score < 0, score * penalty, score / penalty)
    return logits.scatter(-1, prev_tokens, score)

def top_p_filter(logits, top_p: float = 1.0, min_keep: int = 1):
    sorted_logits, sorted_idx = logits.sort(dim=-1, descending=True)
    remove = sorted_logits.softmax(-1).cumsum(-1) > top_p
    remove[..., 1:] = remove[..., :-1].clone()
    remove[..., :min_keep] = False
    return logits.masked_fill(remove.scatter(-1, sorted_idx, remove), float("-inf"))

WARPERS = {"temperature": lambda logits, temperature: logits / max(temperature, 1e-5), "top_p": top_p_filter}

def build_warpers(**spec) -> List[Callable]:
    return [functools.partial(WARPERS[name], **{name: value}) for name, value in spec.items()]

@torch.compile
def sample_next_tokens(logits, prev_tokens, warpers: List[Callable], generator=None, repetition_penalty: float = 1.2):
    logits = apply_repetition_penalty(logits, prev_tokens, repetition_penalty)
    for warp in warpers:
        logits = warp(logits)
    probs = logits.softmax(-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)  # expect: FL000 GB0055

@torch.compile
def block_repeated_ngrams(lprobs, tokens, no_repeat_ngram_size: int = 3):  # fairseq's NGramRepeatBlock fallback
    bsz, step = tokens.shape
    n = no_repeat_ngram_size
    if step + 1 < n:  # expect: FL301
        return lprobs
    gen_tokens = tokens.cpu().tolist()  # expect: FL000 GB0033
    gen_ngrams: List[Dict[Tuple[int, ...], List[int]]] = [defaultdict(list) for _ in range(bsz)]
    for b in range(bsz):
        toks = gen_tokens[b]
        for ngram in zip(*[toks[i:] for i in range(n)]):
            gen_ngrams[b][tuple(ngram[:-1])].append(ngram[-1])
    for b in range(bsz):
        key = tuple(gen_tokens[b][step - n + 1: step])
        banned = gen_ngrams[b].get(key, [])
        if banned:
            lprobs[b, banned] = -math.inf
    return lprobs

# --------------------------------------------------------------------------- CIDEr-D / SCST

def ngram_counts(ids: Sequence[int], n_max: int = 4) -> Counter:
    counts = Counter()
    for n in range(1, n_max + 1):
        for i in range(len(ids) - n + 1):
            counts[tuple(ids[i:i + n])] += 1
    return counts

class CiderD:
    """pycocoevalcap's CIDEr-D over token ids, document frequencies from the reference corpus."""
    def __init__(self, refs_corpus: List[List[List[int]]], n_max: int = 4, sigma: float = 6.0):
        self.n_max, self.sigma = n_max, sigma
        self.df: Dict[Tuple[int, ...], float] = defaultdict(float)
        for refs in refs_corpus:
            for ngram in {ng for r in refs for ng in ngram_counts(r, n_max)}:
                self.df[ngram] += 1
        self.log_ref_len = math.log(float(len(refs_corpus)))

    def _vec(self, counts: Counter):
        vec = [defaultdict(float) for _ in range(self.n_max)]
        norm = [0.0] * self.n_max
        for ngram, tf in counts.items():
            n, df = len(ngram) - 1, math.log(max(1.0, self.df.get(ngram, 0.0)))
            vec[n][ngram] = float(tf) * (self.log_ref_len - df)
            norm[n] += vec[n][ngram] ** 2
        return vec, [math.sqrt(x) for x in norm]

    def _sim(self, vh, vr, nh, nr, delta: float) -> np.ndarray:
        val = np.zeros(self.n_max)
        for n in range(self.n_max):
            for ngram, weight in vh[n].items():
                val[n] += min(weight, vr[n][ngram]) * vr[n][ngram]
            if nh[n] != 0 and nr[n] != 0:
                val[n] /= nh[n] * nr[n]
            val[n] *= np.e ** (-(delta ** 2) / (2 * self.sigma ** 2))
        return val

    def score(self, cand: List[int], refs: List[List[int]]) -> float:
        vh, nh = self._vec(ngram_counts(cand, self.n_max))
        total = np.zeros(self.n_max)
        for ref in refs:
            vr, nr = self._vec(ngram_counts(ref, self.n_max))
            total += self._sim(vh, vr, nh, nr, float(len(cand) - len(ref)))
        return float(np.mean(total) / len(refs) * 10.0)  # expect: FL000 GB0033

@torch.compile
def cider_reward(sample_tokens, greedy_tokens, refs: List[List[List[int]]], scorer: CiderD):
    """Self-critical baseline: CIDEr(sample) - CIDEr(greedy) per image."""
    samples = [strip_after_eos(s) for s in sample_tokens.tolist()]  # expect: FL000 GB0033
    greedy = [strip_after_eos(g) for g in greedy_tokens.tolist()]  # expect: FL000 GB0033
    rewards = [scorer.score(s, r) - scorer.score(g, r) for s, g, r in zip(samples, greedy, refs)]
    return torch.tensor(rewards, dtype=torch.float32)

@torch.compile
def scst_loss(logprobs, sample_tokens, rewards):
    not_pad = sample_tokens.ne(PAD)  # the mask keeps the EOS step itself
    after_eos = sample_tokens.eq(EOS).long().cumsum(1) - sample_tokens.eq(EOS).long()
    mask = (not_pad & after_eos.eq(0)).float()
    if not mask.any():  # expect: FL000 GB0170
        return logprobs.new_zeros(())
    token_lp = logprobs.gather(-1, sample_tokens.unsqueeze(-1)).squeeze(-1)
    return -(rewards[:, None] * token_lp * mask).sum() / mask.sum()

# --------------------------------------------------------------------------- VQA

class VQAHead(nn.Module):
    """Bottom-up-top-down answer classifier with multi-glimpse question-guided attention."""
    def __init__(self, cfg: CaptionConfig = DEFAULT_CFG, q_dim: int = 12, n_answers: int = 9,
                 fusion: str = "mul", glimpses: int = 2):
        super().__init__()
        d = cfg.d_model
        self.v_proj, self.q_proj, self.att = nn.Linear(d, d), nn.Linear(q_dim, d), nn.Linear(d, glimpses)
        self.glimpses = glimpses
        self.cat_proj = nn.Linear(2 * d, d)
        self.fuse = getattr(self, f"_fuse_{fusion}")
        self.classifier = nn.Sequential(nn.Linear(glimpses * d, 2 * d), nn.ReLU(), nn.Linear(2 * d, n_answers))

    def _fuse_mul(self, v, q):
        return v * q

    def _fuse_concat(self, v, q):
        return self.cat_proj(torch.cat([v, q.expand_as(v)], dim=-1))

    def forward(self, regions, q_emb, region_mask: Optional[torch.Tensor] = None):
        v = self.v_proj(regions)
        q = self.q_proj(q_emb).unsqueeze(1)
        logits = self.att(F.relu(self.fuse(v, q)))
        if region_mask is not None:
            assert region_mask.any(dim=1).all(), "every image needs at least one region"
            logits = logits.masked_fill(~region_mask[..., None], NEG_INF)
        att = logits.softmax(dim=1)
        pooled = [(att[..., g: g + 1] * v).sum(1) for g in range(self.glimpses)]
        return self.classifier(torch.cat(pooled, dim=-1) * q.squeeze(1).repeat(1, self.glimpses))

# --------------------------------------------------------------------------- cases

def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)

def _rand(*shape, seed: int = 0):
    return torch.randn(*shape, generator=_gen(seed))

def _captions(b: int, t: int, seed: int = 0, lengths: Optional[List[int]] = None):
    caps = torch.randint(len(SPECIALS), DEFAULT_CFG.vocab_size, (b, t), generator=_gen(seed))
    caps[:, 0] = BOS
    for i, n in enumerate(lengths or []):
        caps[i, n - 1] = EOS
        caps[i, n:] = PAD
    return caps

REFS = [[encode_caption(s, add_bos=False) for s in pair] for pair in (
    ("a man riding a red bike", "a man on the street"), ("two dogs sitting on a bench", "a dog with a white ball"),
    ("a cat in the park", "a white cat sitting in the park"))]

WARPER_PRESET = build_warpers(temperature=0.7, top_p=0.9)
SAMPLED = torch.tensor([[5, 6, 7, 2, 0], [9, 10, 11, 5, 2]])

CASES = {
    "PatchEmbed": lambda: (PatchEmbed(), (_rand(2, 3, 12, 20),), (_rand(3, 3, 16, 18),)),
    "ConvGridEncoder": lambda: (ConvGridEncoder(), (_rand(2, 3, 12, 20),)),
    "RegionFeatureEmbed": lambda: (RegionFeatureEmbed(), (_rand(2, 5, 10), _rand(2, 5, 4).abs() * 20, (32, 48)),
                                   (_rand(3, 8, 10), _rand(3, 8, 4).abs() * 20, (32, 48))),
    "MultiHeadAttention": lambda: (MultiHeadAttention(record=True), (_rand(2, 5, 16), _rand(2, 7, 16, seed=1))),
    "CaptionDecoderLayer": lambda: (CaptionDecoderLayer(), (_rand(2, 5, 16), _rand(2, 7, 16), make_causal_mask(5))),
    "CaptionDecoder": lambda: (CaptionDecoder(), (_captions(2, 6), _rand(2, 7, 16), torch.arange(7).expand(2, 7) > 4)),
    "LabelSmoothedCrossEntropy": lambda: (LabelSmoothedCrossEntropy(), (_rand(2, 6, 23), _captions(2, 6, lengths=[4, 6]))),
    "CaptioningModel_vit": lambda: (CaptioningModel(hooks=[log_perplexity]), (_rand(2, 3, 16, 16), _captions(2, 6))),
    "CaptioningModel_cnn": lambda: (CaptioningModel(encoder="cnn"), (_rand(2, 3, 12, 20),)),
    "ScheduledSamplingCaptioner": lambda: (ScheduledSamplingCaptioner(),
                                           (_rand(2, 3, 12, 20), _captions(2, 7, lengths=[5, 7]), _rand(2, 7, seed=3).sigmoid())),
    "greedy_decode": lambda: (greedy_decode, (CaptionDecoder(), _rand(2, 7, 16), 4)),
    "ShowAttendTellDecoder": lambda: (ShowAttendTellDecoder(), (_rand(3, 9, 12), _captions(3, 7, lengths=[5, 7, 6]),
                                                                torch.tensor([5, 7, 6]))),
    "beam_search": lambda: (beam_search, (ShowAttendTellDecoder(), _rand(1, 9, 12))),
    "sample_next_tokens": lambda: (sample_next_tokens, (_rand(3, 23), _captions(3, 5), WARPER_PRESET, _gen(5))),
    "block_repeated_ngrams": lambda: (block_repeated_ngrams, (_rand(3, 23), _captions(3, 6, seed=4) % 7, 4),
                                      (_rand(5, 23), _captions(5, 2, seed=4), 4)),
    "cider_reward": lambda: (cider_reward, (SAMPLED, torch.tensor([[5, 6, 2, 0, 0], [4, 4, 2, 0, 0]]), REFS[:2], CiderD(REFS))),
    "scst_loss": lambda: (scst_loss, (_rand(2, 5, 23).log_softmax(-1), SAMPLED, torch.tensor([0.3, -0.2]))),
    "VQAHead": lambda: (VQAHead(fusion="concat"), (_rand(3, 5, 16), _rand(3, 12), torch.arange(5).expand(3, 5) < 4)),
}
