"""LLM pre-training / fine-tuning utilities in the style of nanoGPT, HF Trainer helpers and TRL:
document packing, SFT prompt masking, causal LM loss with z-loss, MoE aux losses, meters, grad
accumulation, activation checkpointing, bf16 master weights, LR schedules, DPO / reward-model
losses, a toy chat template and a small config-driven decoder-only transformer."""
import contextlib
import functools
import logging
import math
import re
import warnings
from dataclasses import dataclass, replace
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

logger = logging.getLogger("llm_train")
logger.addHandler(logging.NullHandler())

IGNORE_INDEX = -100
PAD_ID, BOS_ID, EOS_ID = 0, 1, 2
Z_LOSS_COEF = 1e-4
ROUTER_AUX_COEF = 1e-2
ROUTER_Z_COEF = 1e-3
MAX_LOG_PPL = 20.0
DEBUG_NUMERICS = False
SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>")
CHAT_TEMPLATE = "<|{role}|>{content}<|end|>"
_SPECIAL_RE = re.compile("(" + "|".join(re.escape(t) for t in SPECIAL_TOKENS) + ")")

# --------------------------------------------------------------------------- configs
@dataclass
class ModelConfig:
    vocab_size: int = 48
    d_model: int = 16
    n_heads: int = 4
    n_layers: int = 2
    ffn_mult: float = 2.5
    max_seq_len: int = 12
    dropout: float = 0.0
    activation: str = "silu"
    tie_embeddings: bool = True
    gradient_checkpointing: bool = False
    z_loss_coef: float = Z_LOSS_COEF

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def ffn_hidden(self) -> int:
        hidden = int(self.d_model * self.ffn_mult)
        return 8 * ((hidden + 7) // 8)  # round up to a multiple of 8 like LLaMA's multiple_of

@dataclass
class ScheduleConfig:
    base_lr: float = 3e-4
    min_lr_ratio: float = 0.1
    warmup_steps: int = 10
    total_steps: int = 100
    kind: str = "cosine"

@dataclass
class TrainConfig:
    grad_accum_steps: int = 4
    z_loss_coef: float = Z_LOSS_COEF
    label_smoothing: float = 0.0

# --------------------------------------------------------------------------- LR schedules
def _cosine_decay(progress, min_ratio):
    return min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))  # expect: FL000 GB0033

DECAY_FNS: Dict[str, Callable] = {"cosine": _cosine_decay, "linear": lambda p, min_ratio: 1.0 - (1.0 - min_ratio) * p}

def lr_at(step, sched: ScheduleConfig) -> float:
    """Linear warmup followed by the configured decay down to min_lr_ratio * base_lr."""
    if step < sched.warmup_steps:  # expect: FL000 GB0170
        return sched.base_lr * (step + 1) / sched.warmup_steps
    try:
        decay = DECAY_FNS[sched.kind]
    except KeyError:
        raise ValueError(f"unknown schedule {sched.kind!r}") from None
    progress = (step - sched.warmup_steps) / max(1, sched.total_steps - sched.warmup_steps)
    progress = min(progress, 1.0)
    return sched.base_lr * decay(progress, sched.min_lr_ratio)

# --------------------------------------------------------------------------- packing
def pack_documents(docs: Sequence[torch.Tensor], max_len: int, pad_id: int = PAD_ID) -> torch.Tensor:
    """Concatenate EOS-terminated documents and cut the stream into rows (HF's group_texts)."""
    flat = torch.cat(list(docs))
    n_rows = -(-flat.numel() // max_len)
    return F.pad(flat, (0, n_rows * max_len - flat.numel()), value=pad_id).view(n_rows, max_len)

@torch.compile
def packed_position_ids(input_ids, eos_id: int = EOS_ID):
    """Position ids that restart after every EOS, plus per-token document ids."""
    is_eos = (input_ids == eos_id).long()
    doc_ids = torch.cumsum(is_eos, dim=-1) - is_eos
    idx = torch.arange(input_ids.size(-1), device=input_ids.device).expand_as(input_ids)
    is_start = F.pad(is_eos[:, :-1], (1, 0), value=1).bool()
    starts = torch.where(is_start, idx, torch.zeros_like(idx))
    starts = torch.cummax(starts, dim=-1).values
    return idx - starts, doc_ids

@torch.compile
def varlen_metadata(position_ids):
    """cu_seqlens / max_seqlen for flash-attn varlen kernels from packed position ids."""
    starts = torch.nonzero(position_ids.flatten() == 0).flatten()  # expect: FL000 GB0036
    seq_lens = torch.diff(starts, append=starts.new_tensor([position_ids.numel()]))
    cu_seqlens = F.pad(torch.cumsum(seq_lens, 0, dtype=torch.int32), (1, 0))
    return cu_seqlens, int(seq_lens.max())  # expect: FL000 GB0124

def document_causal_mask(doc_ids: torch.Tensor) -> torch.Tensor:
    seq_len = doc_ids.size(-1)
    same_doc = doc_ids.unsqueeze(-1) == doc_ids.unsqueeze(-2)
    causal = torch.ones(seq_len, seq_len, dtype=torch.bool, device=doc_ids.device).tril()
    return same_doc & causal

# --------------------------------------------------------------------------- losses
def shift_for_causal_lm(logits, labels):
    return logits[..., :-1, :].contiguous(), labels[..., 1:].contiguous()

def z_loss(logits, mask):
    lse = torch.logsumexp(logits.float(), dim=-1)
    return (lse.pow(2) * mask).sum() / mask.sum().clamp_min(1)

def masked_token_ce(logits, labels, z_coef: float = 0.0, label_smoothing: float = 0.0):
    logits, labels = shift_for_causal_lm(logits, labels)
    mask = (labels != IGNORE_INDEX).float()
    ce = F.cross_entropy(logits.flatten(0, -2).float(), labels.flatten(), ignore_index=IGNORE_INDEX,
                         reduction="sum", label_smoothing=label_smoothing)
    loss = ce / mask.sum().clamp_min(1)
    if z_coef > 0:
        loss = loss + z_coef * z_loss(logits, mask)
    return loss

def token_accuracy(logits, labels):
    logits, labels = shift_for_causal_lm(logits, labels)
    mask = labels != IGNORE_INDEX
    correct = (logits.argmax(-1) == labels) & mask
    return correct.sum().float() / mask.sum().clamp_min(1)

def mask_prompt(labels, prompt_lengths: Sequence[int]):
    labels = labels.clone()
    for i, n in enumerate(prompt_lengths):
        labels[i, :n] = IGNORE_INDEX  # expect: FL000 GB0124
    return labels

@torch.compile
def sft_loss(logits, input_ids, prompt_lengths, attention_mask=None,
             cfg: TrainConfig = TrainConfig()):
    labels = mask_prompt(input_ids, prompt_lengths)
    if attention_mask is not None:
        labels = labels.masked_fill(attention_mask == 0, IGNORE_INDEX)
    return masked_token_ce(logits, labels, z_coef=cfg.z_loss_coef, label_smoothing=cfg.label_smoothing)

@torch.compile(dynamic=True)
def chunked_lm_head_loss(hidden, lm_weight, labels, chunk_size: int = 4):
    """Cross-entropy through the LM head in sequence chunks so full logits never materialise."""
    hidden, labels = hidden[:, :-1], labels[:, 1:]
    total = hidden.new_zeros(())
    n_tokens = (labels != IGNORE_INDEX).sum()
    for start in range(0, hidden.size(1), chunk_size):  # expect: FL301
        logits = hidden[:, start:start + chunk_size] @ lm_weight.t()
        total = total + F.cross_entropy(logits.flatten(0, 1).float(), labels[:, start:start + chunk_size].flatten(),
                                        ignore_index=IGNORE_INDEX, reduction="sum")
    return total / n_tokens.clamp_min(1)

def load_balancing_loss(router_logits, num_experts: int, top_k: int):
    """Switch-Transformer auxiliary loss (HF's load_balancing_loss_func)."""
    probs = router_logits.softmax(-1)
    _, selected = torch.topk(probs, top_k, dim=-1)
    expert_mask = F.one_hot(selected, num_experts).float()
    tokens_per_expert, router_prob = expert_mask.mean(0), probs.mean(0)
    return num_experts * (tokens_per_expert * router_prob.unsqueeze(0)).sum()

def router_z_loss(router_logits):
    return torch.logsumexp(router_logits.float(), dim=-1).pow(2).mean()

def pairwise_reward_loss(chosen, rejected, margin: float = 0.0):
    return -F.logsigmoid(chosen - rejected - margin).mean()

def _sigmoid_dpo(logits, beta, label_smoothing=0.0):
    return -F.logsigmoid(beta * logits) * (1 - label_smoothing) - F.logsigmoid(-beta * logits) * label_smoothing

def _ipo(logits, beta, label_smoothing=0.0):
    return (logits - 1 / (2 * beta)) ** 2

DPO_LOSSES: Dict[str, Callable] = {"sigmoid": _sigmoid_dpo, "ipo": _ipo}

def sequence_logps(logits, labels, average: bool = False):
    logits, labels = shift_for_causal_lm(logits, labels)
    mask = labels != IGNORE_INDEX
    safe = labels.masked_fill(~mask, 0)
    per_token = torch.gather(logits.log_softmax(-1), 2, safe.unsqueeze(-1)).squeeze(-1)
    summed = (per_token * mask).sum(-1)
    return summed / mask.sum(-1).clamp_min(1) if average else summed

@torch.compile
def dpo_loss(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta: float = 0.1,
             loss_type: str = "sigmoid", label_smoothing: float = 0.0):
    logits = (policy_chosen - policy_rejected) - (ref_chosen - ref_rejected)
    loss_fn = functools.partial(DPO_LOSSES[loss_type], beta=beta, label_smoothing=label_smoothing)
    chosen_rewards = beta * (policy_chosen - ref_chosen).detach()
    rejected_rewards = beta * (policy_rejected - ref_rejected).detach()
    return loss_fn(logits).mean(), chosen_rewards, rejected_rewards

# --------------------------------------------------------------------------- model
class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight

class SwiGLU(nn.Module):
    def __init__(self, d_model: int, hidden: int, activation: str = "silu", dropout: float = 0.0):
        super().__init__()
        self.w1 = nn.Linear(d_model, hidden, bias=False)
        self.w3 = nn.Linear(d_model, hidden, bias=False)
        self.w2 = nn.Linear(hidden, d_model, bias=False)
        self.act = getattr(F, activation)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        return self.drop(self.w2(self.act(self.w1(x)) * self.w3(x)))

class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.n_heads, self.head_dim = cfg.n_heads, cfg.head_dim
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model, bias=False)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model, bias=False)
        self.dropout = cfg.dropout

    def forward(self, x, attn_mask: Optional[torch.Tensor] = None):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        q, k, v = (t.view(B, T, self.n_heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        p = self.dropout if self.training else 0.0
        if attn_mask is None:
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask.unsqueeze(1), dropout_p=p)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))

class TransformerBlock(nn.Module):
    def __init__(self, cfg: ModelConfig, layer_idx: int = 0):
        super().__init__()
        self.cfg, self.layer_idx = cfg, layer_idx
        self.attn_norm = RMSNorm(cfg.d_model, 1e-6)
        self.attn = CausalSelfAttention(cfg)
        self.mlp_norm = RMSNorm(cfg.d_model, 1e-6)
        self.mlp = SwiGLU(cfg.d_model, cfg.ffn_hidden, cfg.activation, cfg.dropout)

    def _block(self, x, attn_mask):
        x = x + self.attn(self.attn_norm(x), attn_mask)
        return x + self.mlp(self.mlp_norm(x))

    def forward(self, x, attn_mask=None):
        if self.cfg.gradient_checkpointing and self.training and torch.is_grad_enabled():
            return checkpoint(self._block, x, attn_mask, use_reentrant=True)
        return self._block(x, attn_mask)

class TinyCausalLM(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = nn.Embedding(cfg.max_seq_len, cfg.d_model)
        self.blocks = nn.ModuleList(TransformerBlock(cfg, i) for i in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.d_model, 1e-6)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        if cfg.tie_embeddings:
            self.lm_head.weight = self.embed.weight

    def hidden_states(self, input_ids, position_ids=None, doc_ids=None):
        if position_ids is None:
            position_ids = torch.arange(input_ids.size(1), device=input_ids.device).unsqueeze(0)
        attn_mask = document_causal_mask(doc_ids) if doc_ids is not None else None
        x = self.embed(input_ids) + self.pos(position_ids)
        for block in self.blocks:
            x = block(x, attn_mask)
        return self.norm(x)

    def forward(self, input_ids, labels=None, position_ids=None, doc_ids=None):
        assert (input_ids < self.cfg.vocab_size).all(), "token id out of range for the embedding"
        max_len = self.cfg.max_seq_len
        if input_ids.size(1) > max_len:  # expect: FL301
            input_ids = input_ids[:, -max_len:]
            labels = labels[:, -max_len:] if labels is not None else None
        logits = self.lm_head(self.hidden_states(input_ids, position_ids, doc_ids))
        if labels is None:
            return logits
        return logits, masked_token_ce(logits, labels, z_coef=self.cfg.z_loss_coef)

def last_token_index(attention_mask):
    lengths = attention_mask.sum(-1)
    if (lengths == 0).any():  # expect: FL000 GB0170
        warnings.warn("reward model got an all-padding sequence")
    return (lengths - 1).clamp_min(0)

class RewardModel(TinyCausalLM):
    def __init__(self, cfg: ModelConfig):
        super().__init__(cfg)
        self.value_head = nn.Linear(cfg.d_model, 1, bias=False)

    def score(self, input_ids, attention_mask):
        values = self.value_head(self.hidden_states(input_ids)).squeeze(-1)
        last = last_token_index(attention_mask)
        return values.gather(1, last.unsqueeze(-1)).squeeze(-1)

    def forward(self, chosen_ids, chosen_mask, rejected_ids=None, rejected_mask=None, margin: float = 0.0):
        chosen = self.score(chosen_ids, chosen_mask)
        if rejected_ids is None:
            return chosen
        rejected = self.score(rejected_ids, rejected_mask)
        return chosen, rejected, pairwise_reward_loss(chosen, rejected, margin)

class SparseMoE(nn.Module):
    def __init__(self, d_model: int = 16, num_experts: int = 4, top_k: int = 2, expert_hidden: int = 24):
        super().__init__()
        self.num_experts, self.top_k = num_experts, top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList(SwiGLU(d_model, expert_hidden) for _ in range(num_experts))

    def forward(self, x):
        B, T, D = x.shape
        flat = x.reshape(-1, D)
        router_logits = self.gate(flat)
        weights, experts = router_logits.float().softmax(-1).topk(self.top_k, dim=-1)
        weights = (weights / weights.sum(-1, keepdim=True)).to(flat.dtype)
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            token_idx, slot = torch.where(experts == e)  # expect: FL000 GB0036
            if token_idx.numel() == 0:
                continue
            out.index_add_(0, token_idx, expert(flat[token_idx]) * weights[token_idx, slot, None])
        aux = (ROUTER_AUX_COEF * load_balancing_loss(router_logits, self.num_experts, self.top_k)
               + ROUTER_Z_COEF * router_z_loss(router_logits))
        return out.view(B, T, D), aux

class GradientAccumulator(nn.Module):
    def __init__(self, model: nn.Module, accum_steps: int = 4):
        super().__init__()
        self.model, self.accum_steps = model, accum_steps
        self.micro_step = 0

    @property
    def is_sync_step(self) -> bool:
        return (self.micro_step + 1) % self.accum_steps == 0

    def forward(self, input_ids, labels):
        _, loss = self.model(input_ids, labels)
        if self.micro_step % self.accum_steps == 0:
            logger.debug("micro-step %d opens a new accumulation window", self.micro_step)  # expect: FL000 GB0291
        sync = self.is_sync_step
        self.micro_step += 1  # expect: FL302
        return loss / self.accum_steps, sync

# --------------------------------------------------------------------------- optimisation
def global_grad_norm(grads: Sequence[torch.Tensor], norm_type: float = 2.0):
    norms = [g.detach().float().norm(norm_type) for g in grads]
    return torch.linalg.vector_norm(torch.stack(norms), norm_type)

@torch.compile
def bf16_master_step(params, masters, grads, step, sched: ScheduleConfig = ScheduleConfig(),
                     max_norm: float = 1.0, weight_decay: float = 0.1):
    """SGD on fp32 master copies of bf16 params; `step` is the optimizer-state step (a tensor)."""
    lr = lr_at(step, sched)
    grad_norm = global_grad_norm(grads)
    if not torch.isfinite(grad_norm):  # expect: FL000 GB0170
        logger.warning("non-finite grad norm at step %d; skipping the update", step)
        return grad_norm, 0.0
    clip = (max_norm / (grad_norm + 1e-6)).clamp(max=1.0)
    with torch.no_grad():
        for p, master, g in zip(params, masters, grads):
            if weight_decay and p.ndim >= 2:
                master.mul_(1.0 - lr * weight_decay)
            master.add_(g.float() * clip, alpha=-lr)
            p.copy_(master.to(p.dtype))
    return grad_norm, lr

def _check_finite(t, what: str):
    if not torch.isfinite(t).all():  # expect: FL000 GB0170
        raise FloatingPointError(f"{what} is not finite")
    if DEBUG_NUMERICS:
        logger.debug("%s = %s", what, t)

@torch.compile
def train_micro_step(model, batch: Dict[str, torch.Tensor], cfg: TrainConfig = TrainConfig()):
    _, loss = model(batch["input_ids"], batch["labels"], position_ids=batch.get("position_ids"))
    _check_finite(loss, "lm loss")
    (loss / cfg.grad_accum_steps).backward()  # expect: FL000 GB0123
    grad_norm = global_grad_norm([p.grad for p in model.parameters() if p.grad is not None])
    return loss.detach(), grad_norm

# --------------------------------------------------------------------------- meters / eval
class ScalarHistory:
    def __init__(self):
        self.values: List[float] = []

    def push(self, value):
        if torch.is_tensor(value):
            value = value.detach().float().item()  # expect: FL000 GB0124
        self.values.append(value)

    @property
    def mean(self) -> float:
        return sum(self.values) / max(len(self.values), 1)  # expect: FL302

def perplexity(mean_loss: float) -> float:
    return float(np.exp(min(mean_loss, MAX_LOG_PPL)))

@contextlib.contextmanager
def maybe_autocast(dtype: Optional[torch.dtype], device_type: str = "cpu"):
    if dtype is None or dtype == torch.float32:
        yield
    else:
        with torch.autocast(device_type, dtype=dtype):
            yield

@torch.compile
def eval_step(model, input_ids, labels, history: ScalarHistory, amp_dtype=torch.bfloat16):
    with torch.no_grad(), maybe_autocast(amp_dtype):
        logits = model(input_ids)
    loss = masked_token_ce(logits.float(), labels)
    acc = token_accuracy(logits, labels)
    history.push(loss)
    return {"loss": loss, "acc": acc, "ppl": perplexity(history.mean)}

# --------------------------------------------------------------------------- preference training
def pad_to_length(t, length: int, value: int):
    return t if t.size(1) >= length else F.pad(t, (0, length - t.size(1)), value=value)

def _log_metrics(metrics: Dict[str, torch.Tensor], prefix: str = "train"):
    logger.info(" ".join(f"{prefix}/{k}={float(v):.4f}" for k, v in metrics.items()))  # expect: FL000 GB0124

def concatenated_logps(model, batch, average: bool = False):
    length = max(batch["chosen_ids"].size(1), batch["rejected_ids"].size(1))
    ids = torch.cat([pad_to_length(batch[f"{k}_ids"], length, PAD_ID) for k in ("chosen", "rejected")])
    labels = torch.cat([pad_to_length(batch[f"{k}_labels"], length, IGNORE_INDEX) for k in ("chosen", "rejected")])
    logps = sequence_logps(model(ids), labels, average=average)
    n = batch["chosen_ids"].size(0)
    return logps[:n], logps[n:]

@torch.compile
def dpo_train_step(policy, reference, batch: Dict[str, torch.Tensor], beta: float = 0.1,
                   loss_type: str = "sigmoid", callbacks: Sequence[Callable] = ()):
    average = loss_type == "ipo"
    policy_chosen, policy_rejected = concatenated_logps(policy, batch, average)
    with torch.no_grad():
        ref_chosen, ref_rejected = concatenated_logps(reference, batch, average)
    loss, chosen_r, rejected_r = dpo_loss(policy_chosen, policy_rejected, ref_chosen, ref_rejected,
                                          beta=beta, loss_type=loss_type)
    metrics = {"loss": loss.detach(), "rewards/margin": (chosen_r - rejected_r).mean(),
               "rewards/accuracy": (chosen_r > rejected_r).float().mean()}
    for callback in callbacks:
        callback(metrics)
    return loss, metrics

# --------------------------------------------------------------------------- chat templates
class CharTokenizer:
    def __init__(self, specials: Sequence[str] = SPECIAL_TOKENS, n_chars: int = 32):
        self.special_to_id = {tok: i for i, tok in enumerate(specials)}
        self.offset, self.n_chars = len(specials), n_chars

    def encode(self, text: str) -> List[int]:
        ids: List[int] = []
        for piece in _SPECIAL_RE.split(text):
            if piece in self.special_to_id:
                ids.append(self.special_to_id[piece])
            else:
                ids.extend(self.offset + ord(c) % self.n_chars for c in piece)
        return ids

@torch.compile
def tokenize_chat_for_sft(messages: List[Dict[str, str]], tokenizer: CharTokenizer, max_len: int = 40):
    input_ids, labels = [BOS_ID], [IGNORE_INDEX]
    for message in messages:
        ids = tokenizer.encode(CHAT_TEMPLATE.format(role=message["role"], content=message["content"].strip()))
        input_ids.extend(ids)
        labels.extend(ids if message["role"] == "assistant" else [IGNORE_INDEX] * len(ids))
    if len(input_ids) > max_len:
        logger.warning("chat of %d tokens truncated to %d", len(input_ids), max_len)  # expect: FL000 GB0291
        input_ids, labels = input_ids[:max_len], labels[:max_len]
    return torch.tensor(input_ids), torch.tensor(labels)

# --------------------------------------------------------------------------- cases
CFG = ModelConfig()
_CHAT = [{"role": "system", "content": " be brief "}, {"role": "user", "content": "2+2?"},
         {"role": "assistant", "content": "4."}]

def _ids(batch: int, seq: int, seed: int = 0):
    return torch.randint(3, CFG.vocab_size, (batch, seq), generator=torch.Generator().manual_seed(seed))

def _randn(*shape, seed: int = 0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))

def _packed_batch():
    docs = [_ids(1, n, seed=i).flatten() for i, n in enumerate([4, 5, 3, 6, 2, 4])]
    ids = pack_documents([torch.cat([d[:-1], d.new_tensor([EOS_ID])]) for d in docs], CFG.max_seq_len - 1)
    return (ids, None, *packed_position_ids(ids))

def _master_args():
    params = [_randn(6, 5, seed=1).bfloat16(), _randn(5, seed=2).bfloat16()]
    grads = [_randn(6, 5, seed=3).bfloat16(), _randn(5, seed=4).bfloat16()]
    return params, [p.float() for p in params], grads, torch.tensor(24.0)

def _dpo_args():
    chosen, rejected = _ids(3, 7, seed=4), _ids(3, 9, seed=5)
    batch = {"chosen_ids": chosen, "rejected_ids": rejected, "chosen_labels": mask_prompt(chosen, [3, 2, 4]),
             "rejected_labels": mask_prompt(rejected, [3, 2, 4])}
    reference = TinyCausalLM(CFG).requires_grad_(False).eval()
    return TinyCausalLM(CFG), reference, batch, 0.1, "sigmoid", [functools.partial(_log_metrics, prefix="dpo")]

def _lm_args(seq: int = 7):
    return _ids(3, seq), _ids(3, seq, seed=1)

CASES = {
    "RMSNorm": lambda: (RMSNorm(16), (_randn(3, 7, 16),)),
    "SwiGLU": lambda: (SwiGLU(16, 40), (_randn(3, 7, 16),)),
    "CausalSelfAttention": lambda: (CausalSelfAttention(CFG), (_randn(3, 7, 16),)),
    "TransformerBlock": lambda: (TransformerBlock(replace(CFG, gradient_checkpointing=True)),
                                 (_randn(3, 7, 16).requires_grad_(),)),
    "TinyCausalLM": lambda: (TinyCausalLM(CFG), _lm_args(7), _lm_args(14)),
    "TinyCausalLM_packed": lambda: (TinyCausalLM(CFG), _packed_batch()),
    "RewardModel": lambda: (RewardModel(CFG), (_ids(3, 7), torch.ones(3, 7).long(),
                                               _ids(3, 7, seed=2), torch.ones(3, 7).long())),
    "SparseMoE": lambda: (SparseMoE(), (_randn(3, 7, 16),)),
    "GradientAccumulator": lambda: (GradientAccumulator(TinyCausalLM(CFG), accum_steps=3), _lm_args()),
    "packed_position_ids": lambda: (packed_position_ids, (_packed_batch()[0],)),
    "varlen_metadata": lambda: (varlen_metadata, (_packed_batch()[2],)),
    "sft_loss": lambda: (sft_loss, (_randn(3, 7, 48), _ids(3, 7), torch.tensor([2, 3, 4]), torch.ones(3, 7).long())),
    "chunked_lm_head_loss": lambda: (chunked_lm_head_loss, (_randn(3, 7, 16), _randn(48, 16), _ids(3, 7)),
                                     (_randn(3, 11, 16), _randn(48, 16), _ids(3, 11))),
    "bf16_master_step": lambda: (bf16_master_step, _master_args()),
    "train_micro_step": lambda: (train_micro_step,
                                 (TinyCausalLM(CFG), dict(zip(("input_ids", "labels"), _lm_args())))),
    "eval_step": lambda: (eval_step, (TinyCausalLM(CFG), *_lm_args(), ScalarHistory())),
    "dpo_loss": lambda: (dpo_loss, tuple(_randn(3, seed=s) for s in range(4))),
    "dpo_train_step": lambda: (dpo_train_step, _dpo_args()),
    "tokenize_chat_for_sft": lambda: (tokenize_chat_for_sft, (_CHAT, CharTokenizer(), 16)),
}
