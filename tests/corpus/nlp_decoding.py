"""Sequence decoding: beam search, CRF forward / Viterbi, CTC decoding, sampling filters, KV caches, token losses."""
import logging
import math
import warnings
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger(__name__)


@dataclass
class GenerationConfig:
    max_new_tokens: int = 4
    temperature: float = 0.8
    top_k: int = 5
    top_p: float = 0.9
    repetition_penalty: float = 1.2
    no_repeat_ngram_size: int = 2
    num_beams: int = 3
    length_penalty: float = 0.6
    eos_token_id: int = 0
    pad_token_id: int = 1


@torch.compile
def top_k_top_p_filtering(logits, top_k: int = 0, top_p: float = 1.0, filter_value: float = -float("inf")):
    if top_k > 0:
        top_k = min(top_k, logits.size(-1))
        kth = torch.topk(logits, top_k)[0][..., -1, None]
        logits = logits.masked_fill(logits < kth, filter_value)
    if top_p < 1.0:
        sorted_logits, sorted_idx = torch.sort(logits, descending=True)
        cum_probs = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)
        to_remove = cum_probs > top_p
        to_remove[..., 1:] = to_remove[..., :-1].clone()
        to_remove[..., 0] = False
        remove = to_remove.scatter(-1, sorted_idx, to_remove)
        logits = logits.masked_fill(remove, filter_value)
    return logits


@torch.compile
def apply_repetition_penalty(logits, input_ids, penalty: float = 1.2):
    score = torch.gather(logits, 1, input_ids)
    score = torch.where(score < 0, score * penalty, score / penalty)
    return logits.scatter(1, input_ids, score)


def _banned_ngram_tokens(prev_tokens: List[int], n: int) -> List[int]:
    generated: Dict[Tuple[int, ...], List[int]] = {}
    for i in range(len(prev_tokens) - n + 1):
        ngram = tuple(prev_tokens[i:i + n])
        generated.setdefault(ngram[:-1], []).append(ngram[-1])
    key = tuple(prev_tokens[len(prev_tokens) - n + 1:])
    return generated.get(key, [])


@torch.compile
def no_repeat_ngram_logits(logits, input_ids, ngram_size: int = 2):
    batch_size, cur_len = input_ids.shape
    if cur_len + 1 < ngram_size:
        return logits
    for b in range(batch_size):
        banned = _banned_ngram_tokens(input_ids[b].tolist(), ngram_size)  # expect: FL104 GB0033
        if banned:
            logits[b, banned] = -float("inf")
    return logits


def sample_next_token(logits, input_ids, cfg: GenerationConfig):
    logits = logits / cfg.temperature
    logits = apply_repetition_penalty(logits, input_ids, cfg.repetition_penalty)
    logits = top_k_top_p_filtering(logits, cfg.top_k, cfg.top_p)
    probs = F.softmax(logits, dim=-1)
    return torch.multinomial(probs, num_samples=1)


class TinyLM(nn.Module):
    def __init__(self, vocab: int = 16, dim: int = 8):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.proj = nn.Linear(dim, dim)
        self.lm_head = nn.Linear(dim, vocab)

    def forward(self, input_ids):
        h = torch.tanh(self.proj(self.embed(input_ids)))
        return self.lm_head(h.mean(1))


class SamplingGenerator(nn.Module):
    def __init__(self, cfg: GenerationConfig = GenerationConfig()):
        super().__init__()
        self.lm = TinyLM()
        self.cfg = cfg

    def forward(self, input_ids):
        finished = torch.zeros(input_ids.size(0), dtype=torch.bool)
        for step in range(self.cfg.max_new_tokens):
            logits = self.lm(input_ids)
            next_tokens = sample_next_token(logits, input_ids, self.cfg).squeeze(-1)
            next_tokens = torch.where(finished, torch.full_like(next_tokens, self.cfg.pad_token_id), next_tokens)
            input_ids = torch.cat([input_ids, next_tokens[:, None]], dim=-1)
            finished = finished | (next_tokens == self.cfg.eos_token_id)
            if finished.all():  # expect: FL101 GB0170
                logger.debug("all sequences finished at step %d", step)
                break
        return input_ids


def gnmt_length_penalty(length: int, alpha: float) -> float:
    return ((5.0 + length) / 6.0) ** alpha


class BeamSearchDecoder(nn.Module):
    def __init__(self, cfg: GenerationConfig = GenerationConfig()):
        super().__init__()
        self.lm = TinyLM()
        self.cfg = cfg

    def forward(self, prefix):
        beams: List[Tuple[List[int], float]] = [(prefix.tolist(), 0.0)]  # expect: FL104 GB0033
        finished = []
        for _ in range(self.cfg.max_new_tokens):
            candidates = []
            for tokens, score in beams:
                logp = F.log_softmax(self.lm(torch.tensor([tokens])), dim=-1)[0]
                top_logp, top_ids = logp.topk(self.cfg.num_beams)
                for lp, tok in zip(top_logp.tolist(), top_ids.tolist()):  # expect: FL103 GB0109
                    candidates.append((tokens + [tok], score + lp))
            candidates.sort(key=lambda c: c[1], reverse=True)
            beams = []
            for tokens, score in candidates[: self.cfg.num_beams]:
                if tokens[-1] == self.cfg.eos_token_id:
                    finished.append((tokens, score / gnmt_length_penalty(len(tokens), self.cfg.length_penalty)))
                else:
                    beams.append((tokens, score))
            if not beams:
                break
        finished.extend((t, s / gnmt_length_penalty(len(t), self.cfg.length_penalty)) for t, s in beams)
        best_tokens, best_score = max(finished, key=lambda f: f[1])
        return torch.tensor(best_tokens), best_score


@torch.compile
def beam_step(log_probs, beam_scores, num_beams: int, length: int, alpha: float = 0.6):
    batch_beams, vocab = log_probs.shape
    scores = (beam_scores[:, None] + log_probs).view(batch_beams // num_beams, num_beams * vocab)
    normed = scores / gnmt_length_penalty(length, alpha)
    top_scores, top_idx = normed.topk(2 * num_beams, dim=1)
    beam_idx = torch.div(top_idx, vocab, rounding_mode="floor")
    token_idx = top_idx % vocab
    return top_scores, beam_idx, token_idx


class LinearChainCRF(nn.Module):
    def __init__(self, num_tags: int = 5):
        super().__init__()
        self.start = nn.Parameter(torch.randn(num_tags) * 0.1)
        self.end = nn.Parameter(torch.randn(num_tags) * 0.1)
        self.transitions = nn.Parameter(torch.randn(num_tags, num_tags) * 0.1)

    def _score(self, emissions, tags, mask):
        seq_len = emissions.size(1)
        score = self.start[tags[:, 0]] + emissions[:, 0].gather(1, tags[:, :1]).squeeze(1)
        for t in range(1, seq_len):
            step = self.transitions[tags[:, t - 1], tags[:, t]] + emissions[:, t].gather(1, tags[:, t:t + 1]).squeeze(1)
            score = score + step * mask[:, t]
        last = tags.gather(1, (mask.sum(1).long() - 1)[:, None]).squeeze(1)
        return score + self.end[last]

    def _partition(self, emissions, mask):
        alpha = self.start + emissions[:, 0]
        for t in range(1, emissions.size(1)):  # expect: FL301
            nxt = torch.logsumexp(alpha[:, :, None] + self.transitions + emissions[:, t, None], dim=1)
            alpha = torch.where(mask[:, t, None].bool(), nxt, alpha)
        return torch.logsumexp(alpha + self.end, dim=1)

    def forward(self, emissions, tags, mask):
        return (self._partition(emissions, mask) - self._score(emissions, tags, mask)).mean()


@torch.compile
def viterbi_decode(emissions, transitions, start, end):
    seq_len, num_tags = emissions.shape
    score = start + emissions[0]
    history = []
    for t in range(1, seq_len):
        best, idx = (score[:, None] + transitions).max(0)
        score = best + emissions[t]
        history.append(idx)
    score = score + end
    best_last = score.argmax().item()  # expect: FL102 GB0124
    path = [best_last]
    for idx in reversed(history):
        path.append(idx[path[-1]].item())  # expect: FL102 GB0124
    path.reverse()
    return path, score.max()


@torch.compile
def ctc_greedy_decode(log_probs, blank: int = 0):
    pred = log_probs.argmax(-1)
    collapsed = torch.unique_consecutive(pred)  # expect: FL105 GB0036
    return collapsed[collapsed != blank]  # expect: FL105 GB0036


@torch.compile
def ctc_greedy_batch(log_probs, lengths, blank: int = 0):
    pred = log_probs.argmax(-1)
    keep = torch.ones_like(pred, dtype=torch.bool)
    keep[:, 1:] = pred[:, 1:] != pred[:, :-1]
    keep = keep & (pred != blank)
    valid = torch.arange(pred.size(1))[None, :] < lengths[:, None]
    keep = keep & valid
    hyps = []
    for b in range(pred.size(0)):
        hyps.append(pred[b][keep[b]].tolist())  # expect: FL105 GB0036
    return hyps


@torch.compile
def ctc_prefix_beam_search(probs, beam_size: int = 3, blank: int = 0):
    T, V = probs.shape
    beams = {(): (1.0, 0.0)}  # prefix -> (p_blank, p_nonblank)
    probs_np = probs.detach().numpy()
    for t in range(T):
        next_beams: Dict[tuple, List[float]] = {}
        for prefix, (pb, pnb) in beams.items():
            for v in range(V):
                p = float(probs_np[t, v])  # expect: FL104 GB0033
                entry = next_beams.setdefault(prefix if v == blank else prefix + (v,), [0.0, 0.0])
                if v == blank:
                    entry[0] += (pb + pnb) * p
                elif prefix and prefix[-1] == v:
                    entry[1] += pb * p
                    next_beams.setdefault(prefix, [0.0, 0.0])[1] += pnb * p
                else:
                    entry[1] += (pb + pnb) * p
        ranked = sorted(next_beams.items(), key=lambda kv: sum(kv[1]), reverse=True)[:beam_size]
        beams = {k: tuple(v) for k, v in ranked}
    best = max(beams.items(), key=lambda kv: sum(kv[1]))
    return list(best[0]), math.log(sum(best[1]))


class KVCache(nn.Module):
    def __init__(self, batch: int = 2, heads: int = 2, max_len: int = 8, head_dim: int = 4):
        super().__init__()
        self.register_buffer("k_cache", torch.zeros(batch, heads, max_len, head_dim))
        self.register_buffer("v_cache", torch.zeros(batch, heads, max_len, head_dim))
        self.pos = 0

    def forward(self, k, v):
        T = k.size(2)
        self.k_cache[:, :, self.pos:self.pos + T] = k
        self.v_cache[:, :, self.pos:self.pos + T] = v
        self.pos += T  # expect: FL302
        return self.k_cache[:, :, :self.pos], self.v_cache[:, :, :self.pos]


class CachedAttention(nn.Module):
    def __init__(self, dim: int = 8, heads: int = 2, max_len: int = 8):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.register_buffer("cache_k", torch.zeros(1, heads, max_len, dim // heads))
        self.register_buffer("cache_v", torch.zeros(1, heads, max_len, dim // heads))

    def forward(self, x, input_pos):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        self.cache_k.index_copy_(2, input_pos, k)
        self.cache_v.index_copy_(2, input_pos, v)
        mask = torch.arange(self.cache_k.size(2))[None, :] <= input_pos[:, None]
        y = F.scaled_dot_product_attention(q, self.cache_k, self.cache_v, attn_mask=mask[None, None])
        return self.out(y.transpose(1, 2).reshape(B, T, C))


@torch.compile
def masked_token_loss(logits, targets, loss_mask):
    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), reduction="none")
    loss_mask = loss_mask.view(-1).float()
    return (loss * loss_mask).sum() / loss_mask.sum().clamp(min=1.0)


@torch.compile
def label_smoothed_nll_loss(lprobs, target, epsilon: float = 0.1, ignore_index: int = -100):
    target = target.unsqueeze(-1)
    pad_mask = target.eq(ignore_index)
    nll_loss = -lprobs.gather(dim=-1, index=target.clamp(min=0)).masked_fill(pad_mask, 0.0)
    smooth_loss = -lprobs.sum(dim=-1, keepdim=True).masked_fill(pad_mask, 0.0)
    eps_i = epsilon / (lprobs.size(-1) - 1)
    loss = (1.0 - epsilon - eps_i) * nll_loss.sum() + eps_i * smooth_loss.sum()
    return loss, nll_loss.sum()


@torch.compile
def seq_loss_with_stats(logits, targets, pad_id: int = 1):
    mask = targets != pad_id
    n_tokens = mask.sum()
    if n_tokens == 0:  # expect: FL101 GB0170
        warnings.warn("batch without target tokens")  # expect: FL112 GB0007
        return logits.sum() * 0.0, {}
    loss = F.cross_entropy(logits[mask], targets[mask])  # expect: FL105 GB0036
    stats = {"loss": loss.item(), "ntokens": int(n_tokens), "ppl": math.exp(loss.item())}  # expect: FL102 GB0124
    return loss, stats


def _decode_step(lm_logits, prev_tokens, temperature: float = 1.0):
    scores = F.log_softmax(lm_logits / temperature, dim=-1)
    if torch.isnan(scores).any():  # expect: FL101 GB0170
        print("nan in decoder scores, step", prev_tokens.shape[1])  # expect: FL110 GB0059
        scores = torch.nan_to_num(scores, nan=-1e4)
    best = scores.argmax(-1, keepdim=True)
    return torch.cat([prev_tokens, best], dim=1), scores.gather(1, best)


decode_step = torch.compile(_decode_step, dynamic=False)


def _token_accuracy(logits, targets, ignore_index: int = -100):
    pred = logits.argmax(-1)
    valid = targets != ignore_index
    correct = (pred == targets) & valid
    acc = correct.sum().float() / valid.sum().float()
    return {"acc": acc.item(), "per_seq": correct.sum(-1).tolist()}  # expect: FL102 GB0124; FL104 GB0033


token_accuracy = torch.compile(_token_accuracy)


def normalize_scores_for_export(scores, lengths):
    max_len = int(lengths.max())  # expect: FL202
    norm = (5.0 + lengths.float()) / 6.0
    return (scores / norm[:, None].pow(0.6))[:, :max_len]


def export_decoder_helpers():
    return torch.jit.trace(normalize_scores_for_export, (torch.randn(3, 6), torch.tensor([3, 5, 4])))


_V = 16

CASES = {
    "top_k_top_p_filtering": lambda: (top_k_top_p_filtering, (torch.randn(2, _V), 5, 0.9)),
    "apply_repetition_penalty": lambda: (apply_repetition_penalty, (torch.randn(2, _V), torch.tensor([[2, 3, 3], [4, 5, 6]]), 1.3)),
    "no_repeat_ngram_logits": lambda: (no_repeat_ngram_logits, (torch.randn(2, _V), torch.tensor([[2, 3, 2, 3], [4, 5, 6, 7]]), 2)),
    "SamplingGenerator": lambda: (SamplingGenerator(), (torch.tensor([[2, 3], [4, 5]]),)),
    "BeamSearchDecoder": lambda: (BeamSearchDecoder(), (torch.tensor([2, 3]),)),
    "beam_step": lambda: (beam_step, (torch.randn(6, _V).log_softmax(-1), torch.zeros(6), 3, 4)),
    "LinearChainCRF": lambda: (LinearChainCRF(), (torch.randn(2, 4, 5), torch.randint(0, 5, (2, 4)), torch.ones(2, 4)),
                               (torch.randn(2, 6, 5), torch.randint(0, 5, (2, 6)), torch.ones(2, 6))),
    "viterbi_decode": lambda: (viterbi_decode, (torch.randn(4, 5), torch.randn(5, 5), torch.randn(5), torch.randn(5))),
    "ctc_greedy_decode": lambda: (ctc_greedy_decode, (torch.randn(7, 5).log_softmax(-1),)),
    "ctc_greedy_batch": lambda: (ctc_greedy_batch, (torch.randn(2, 7, 5).log_softmax(-1), torch.tensor([7, 5]))),
    "ctc_prefix_beam_search": lambda: (ctc_prefix_beam_search, (torch.randn(3, 4).softmax(-1),)),
    "KVCache": lambda: (KVCache(), (torch.randn(2, 2, 3, 4), torch.randn(2, 2, 3, 4))),
    "CachedAttention": lambda: (CachedAttention(), (torch.randn(1, 3, 8), torch.tensor([0, 1, 2]))),
    "masked_token_loss": lambda: (masked_token_loss, (torch.randn(2, 5, _V), torch.randint(0, _V, (2, 5)), torch.rand(2, 5) > 0.3)),
    "label_smoothed_nll_loss": lambda: (label_smoothed_nll_loss, (torch.randn(6, _V).log_softmax(-1), torch.tensor([1, 2, -100, 4, 5, -100]))),
    "seq_loss_with_stats": lambda: (seq_loss_with_stats, (torch.randn(6, _V), torch.tensor([3, 1, 4, 1, 5, 9]))),
    "seq_loss_with_stats_no_tokens": lambda: (seq_loss_with_stats, (torch.randn(6, _V), torch.ones(6, dtype=torch.long))),
    "decode_step": lambda: (decode_step, (torch.randn(2, _V), torch.tensor([[2], [3]]), 0.7)),
    "decode_step_nan": lambda: (decode_step, (torch.tensor([[0.5, float("nan"), 1.0] + [0.0] * (_V - 3), [1.0] * _V]), torch.tensor([[2], [3]]), 0.7)),
    "token_accuracy": lambda: (token_accuracy, (torch.randn(2, 5, _V), torch.tensor([[1, 2, 3, -100, -100], [4, 5, 6, 7, 8]]))),
}

TRACED = {
    "normalize_scores_for_export": lambda: (normalize_scores_for_export, (torch.randn(3, 6), torch.tensor([3, 5, 4]))),
}
