"""Text classification / NLU fine-tuning in the style of HF fine-tuning scripts and Kaggle NLP
kernels: mask handling, string-chosen pooling, smoothed/focal losses, multi-label thresholds, R-Drop,
FGM, layer-wise LR decay, a small encoder and F1 from confusion counts."""
import functools
import logging
import math
import re
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("textcls")
logger.addHandler(logging.NullHandler())

PAD_ID, CLS_ID, SEP_ID = 0, 1, 2
VOCAB_SIZE = 50
_LAYER_RE = re.compile(r"encoder\.layers\.(\d+)\.")
NO_DECAY = ("bias", "norm", "ln1", "ln2")


@dataclass
class ClsConfig:
    vocab_size: int = VOCAB_SIZE
    hidden: int = 12
    heads: int = 2
    layers: int = 2
    ffn_mult: int = 2
    max_len: int = 16
    num_labels: int = 5
    dropout: float = 0.1
    pooling: str = "cls"
    activation: str = "gelu"
    debug_checks: bool = False

    @property
    def head_dim(self) -> int:
        assert self.hidden % self.heads == 0, "hidden size must be divisible by the number of heads"
        return self.hidden // self.heads


ACT2FN: Dict[str, Callable] = {"gelu": F.gelu, "gelu_tanh": functools.partial(F.gelu, approximate="tanh"),
                               "relu": F.relu, "silu": F.silu}


def make_attention_mask(input_ids, pad_id: int = PAD_ID):
    return (input_ids != pad_id).long()


def extend_attention_mask(attention_mask, dtype=torch.float32):
    """[B, L] 0/1 mask -> additive mask broadcastable to [B, H, L, L]."""
    return (1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min


def masked_fill_min(scores, mask):
    return scores.masked_fill(mask == 0, torch.finfo(scores.dtype).min)


def _check_finite(t, what: str):
    if not torch.isfinite(t).all():  # expect: FL000 GB0170
        raise FloatingPointError(f"non-finite values in {what}")


# --------------------------------------------------------------------------- encoder

class TokenEmbedding(nn.Module):
    def __init__(self, cfg: ClsConfig):
        super().__init__()
        self.word = nn.Embedding(cfg.vocab_size, cfg.hidden, padding_idx=PAD_ID)
        self.position = nn.Embedding(cfg.max_len, cfg.hidden)
        self.norm = nn.LayerNorm(cfg.hidden)
        self.dropout = nn.Dropout(cfg.dropout)
        self.register_buffer("position_ids", torch.arange(cfg.max_len).unsqueeze(0), persistent=False)

    def forward(self, input_ids):
        x = self.word(input_ids) + self.position(self.position_ids[:, : input_ids.size(1)])
        return self.dropout(self.norm(x))


class EncoderLayer(nn.Module):
    def __init__(self, cfg: ClsConfig):
        super().__init__()
        self.heads, self.head_dim = cfg.heads, cfg.head_dim
        self.qkv = nn.Linear(cfg.hidden, 3 * cfg.hidden)
        self.out = nn.Linear(cfg.hidden, cfg.hidden)
        self.ffn_in = nn.Linear(cfg.hidden, cfg.ffn_mult * cfg.hidden)
        self.ffn_out = nn.Linear(cfg.ffn_mult * cfg.hidden, cfg.hidden)
        self.ln1, self.ln2 = nn.LayerNorm(cfg.hidden), nn.LayerNorm(cfg.hidden)
        self.act = ACT2FN[cfg.activation]
        self.drop = nn.Dropout(cfg.dropout)
        self.scale = 1.0 / math.sqrt(cfg.head_dim)

    def _split(self, t):
        b, l, _ = t.shape
        return t.view(b, l, self.heads, self.head_dim).transpose(1, 2)

    def attention(self, x, ext_mask=None):
        q, k, v = map(self._split, self.qkv(x).chunk(3, dim=-1))
        scores = q @ k.transpose(-1, -2) * self.scale
        if ext_mask is not None:
            scores = scores + ext_mask
        probs = self.drop(scores.softmax(dim=-1))
        ctx = (probs @ v).transpose(1, 2).reshape(x.shape)
        return self.out(ctx)

    def forward(self, x, ext_mask=None):
        x = self.ln1(x + self.drop(self.attention(x, ext_mask)))
        return self.ln2(x + self.drop(self.ffn_out(self.act(self.ffn_in(x)))))


class TextEncoder(nn.Module):
    def __init__(self, cfg: ClsConfig):
        super().__init__()
        self.cfg = cfg
        self.embeddings = TokenEmbedding(cfg)
        self.layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.layers))

    def forward(self, input_ids, attention_mask=None):
        max_len = self.cfg.max_len
        if input_ids.size(1) > max_len:  # expect: FL301
            logger.warning("sequence of %d tokens is longer than max_len=%d; truncating", input_ids.size(1), max_len)
            input_ids, attention_mask = (None if t is None else t[:, :max_len] for t in (input_ids, attention_mask))
        if attention_mask is None:
            attention_mask = make_attention_mask(input_ids)
        h = self.embeddings(input_ids)
        ext = extend_attention_mask(attention_mask, h.dtype)
        for layer in self.layers:
            h = layer(h, ext)
        return h


class Pooler(nn.Module):
    STRATEGIES = ("cls", "mean", "max", "attention")

    def __init__(self, hidden: int, strategy: str = "cls", keep_weights: bool = False):
        super().__init__()
        if strategy not in self.STRATEGIES:
            raise ValueError(f"pooling must be one of {self.STRATEGIES}, got {strategy!r}")
        self.hidden, self.strategy, self.keep_weights = hidden, strategy, keep_weights
        self.last_weights: Optional[np.ndarray] = None  # for attention heat-maps in the notebook
        if strategy == "attention":
            self.score = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    @property
    def output_dim(self) -> int:
        return self.hidden

    def _pool_cls(self, h, mask):
        return h[:, 0]

    def _pool_mean(self, h, mask):
        m = mask.unsqueeze(-1).to(h.dtype)
        return (h * m).sum(1) / m.sum(1).clamp(min=1e-9)

    def _pool_max(self, h, mask):
        return h.masked_fill(mask.unsqueeze(-1) == 0, -1e4).max(dim=1).values

    def _pool_attention(self, h, mask):
        w = masked_fill_min(self.score(h).squeeze(-1), mask).softmax(dim=-1)
        if self.keep_weights:
            self.last_weights = w.detach().cpu().numpy()
        return torch.einsum("bl,bld->bd", w, h)

    def forward(self, hidden_states, attention_mask):
        return getattr(self, f"_pool_{self.strategy}")(hidden_states, attention_mask)


class MeanMaxPooler(Pooler):
    def __init__(self, hidden: int):
        super().__init__(hidden, "mean")

    @property
    def output_dim(self) -> int:
        return 2 * self.hidden

    def forward(self, hidden_states, attention_mask):
        return torch.cat([self._pool_mean(hidden_states, attention_mask),
                          self._pool_max(hidden_states, attention_mask)], dim=-1)


POOLERS = {"cls": Pooler, "mean": Pooler, "max": Pooler, "attention": Pooler, "meanmax": MeanMaxPooler}


def build_pooler(name: str, hidden: int) -> Pooler:
    cls = POOLERS[name]
    return cls(hidden) if cls is MeanMaxPooler else cls(hidden, name)


# --------------------------------------------------------------------------- losses

REDUCTIONS: Dict[str, Callable] = {"mean": torch.mean, "sum": torch.sum, "none": lambda t: t}


def inverse_frequency_weights(target, num_classes: int, smooth: float = 1.0):
    counts = torch.bincount(target, minlength=num_classes).float() + smooth  # expect: FL000 GB0036
    return counts.sum() / (num_classes * counts)


class LabelSmoothingCrossEntropy(nn.Module):
    def __init__(self, smoothing: float = 0.1, ignore_index: int = -100, reduction: str = "mean"):
        super().__init__()
        assert 0.0 <= smoothing < 1.0
        self.smoothing, self.ignore_index, self.reduction = smoothing, ignore_index, reduction

    def forward(self, logits, target):
        logp = F.log_softmax(logits, dim=-1)
        valid = target != self.ignore_index
        if not valid.any():  # a batch made only of padding / ignored examples  # expect: FL000 GB0170
            return logits.sum() * 0.0
        nll = -logp.gather(-1, target.masked_fill(~valid, 0).unsqueeze(-1)).squeeze(-1)
        smooth = -logp.mean(dim=-1)
        loss = ((1.0 - self.smoothing) * nll + self.smoothing * smooth) * valid.to(logp.dtype)
        if self.reduction == "mean":
            return loss.sum() / valid.sum().clamp(min=1)
        return REDUCTIONS[self.reduction](loss)


class FocalLoss(nn.Module):
    def __init__(self, gamma: float = 2.0, alpha: Optional[Sequence[float]] = None, reduction: str = "mean"):
        super().__init__()
        self.gamma, self.alpha = gamma, alpha
        try:
            self._reduce = REDUCTIONS[reduction]
        except KeyError:
            raise ValueError(f"unsupported reduction {reduction!r}") from None

    def forward(self, logits, target):
        ce = F.cross_entropy(logits, target, reduction="none")
        loss = (1.0 - torch.exp(-ce)) ** self.gamma * ce
        if self.alpha == "auto":  # re-balance with the inverse class frequency of this batch
            loss = inverse_frequency_weights(target, logits.size(-1))[target] * loss
        elif self.alpha is not None:
            alpha = torch.as_tensor(self.alpha, dtype=logits.dtype, device=logits.device)
            loss = alpha[target] * loss
        return self._reduce(loss)


CRITERIA = {"ce": nn.CrossEntropyLoss, "ls": LabelSmoothingCrossEntropy, "focal": FocalLoss}


def make_criterion(name: str, **kwargs) -> Callable:
    return CRITERIA[name](**kwargs)


def symmetric_kl(p_logits, q_logits):
    p, q = F.log_softmax(p_logits, dim=-1), F.log_softmax(q_logits, dim=-1)
    kl = F.kl_div(p, q, reduction="none", log_target=True) + F.kl_div(q, p, reduction="none", log_target=True)
    return kl.sum(-1).mean() / 2


# --------------------------------------------------------------------------- classifiers

@dataclass
class ClassifierOutput:
    logits: torch.Tensor
    loss: Optional[torch.Tensor] = None


def clamp_logits(logits, bound: float = 30.0):
    return logits.clamp(-bound, bound)


class SequenceClassifier(nn.Module):
    def __init__(self, cfg: ClsConfig, loss_fn: Optional[Callable] = None, logit_hooks: Sequence[Callable] = ()):
        super().__init__()
        self.cfg = cfg
        self.encoder = TextEncoder(cfg)
        self.pooler = build_pooler(cfg.pooling, cfg.hidden)
        self.dropout = nn.Dropout(cfg.dropout)
        self.classifier = nn.Linear(self.pooler.output_dim, cfg.num_labels)
        self.loss_fn = loss_fn
        self.logit_hooks = list(logit_hooks)

    def forward(self, input_ids, attention_mask=None, labels=None):
        if attention_mask is None:
            attention_mask = make_attention_mask(input_ids)
        hidden = self.encoder(input_ids, attention_mask)
        pooled = self.pooler(hidden, attention_mask[:, : hidden.size(1)])
        logits = self.classifier(self.dropout(pooled))
        for hook in self.logit_hooks:
            logits = hook(logits)
        if self.cfg.debug_checks:
            _check_finite(logits, "logits")
        loss = self.loss_fn(logits, labels) if labels is not None and self.loss_fn is not None else None
        return ClassifierOutput(logits=logits, loss=loss)


class MultiLabelHead(nn.Module):
    def __init__(self, hidden: int, labels: Sequence[str], thresholds: Optional[Dict[str, float]] = None,
                 default_threshold: float = 0.5, decode: bool = False):
        super().__init__()
        self.labels = list(labels)
        self.proj = nn.Linear(hidden, len(self.labels))
        thr = [(thresholds or {}).get(name, default_threshold) for name in self.labels]
        self.register_buffer("thresholds", torch.tensor(thr))
        self.decode = decode

    def forward(self, pooled):
        logits = self.proj(pooled)
        probs = logits.sigmoid()
        preds = probs > self.thresholds
        # at least one label per example: fall back to the arg-max class
        empty = ~preds.any(dim=-1, keepdim=True)
        top1 = F.one_hot(probs.argmax(dim=-1), len(self.labels)).bool()
        preds = preds | (empty & top1)
        if self.decode:
            return logits, self.decode_labels(preds)
        return logits, preds

    def decode_labels(self, preds) -> List[List[str]]:
        return [[name for name, on in zip(self.labels, row) if on] for row in preds.tolist()]  # expect: FL000 GB0109; FL000 GB4347


# --------------------------------------------------------------------------- metrics

def counts_from_confusion(cm):
    tp = cm.diagonal()
    return tp, cm.sum(0) - tp, cm.sum(1) - tp


def f1_from_counts(tp, fp, fn, eps: float = 1e-8):
    precision = tp / (tp + fp + eps)
    recall = tp / (tp + fn + eps)
    return 2 * precision * recall / (precision + recall + eps), precision, recall


def confusion_counts(preds, labels, num_classes: int):
    cm = torch.bincount(labels * num_classes + preds, minlength=num_classes ** 2)  # expect: FL000 GB0036
    return cm.view(num_classes, num_classes)


class StreamingF1Meter(nn.Module):
    def __init__(self, num_classes: int):
        super().__init__()
        self.num_classes = num_classes
        for name in ("tp", "fp", "fn"):
            self.register_buffer(name, torch.zeros(num_classes))
        self.num_updates = 0

    def forward(self, logits, labels):
        pred = F.one_hot(logits.argmax(dim=-1), self.num_classes).float()
        true = F.one_hot(labels, self.num_classes).float()
        self.tp += (pred * true).sum(0)
        self.fp += (pred * (1 - true)).sum(0)
        self.fn += ((1 - pred) * true).sum(0)
        self.num_updates += 1  # expect: FL302
        f1, _, _ = f1_from_counts(self.tp, self.fp, self.fn)
        return f1.mean()


@torch.compile
def classification_report(logits, labels, label_names: Sequence[str], digits: int = 3):
    cm = confusion_counts(logits.argmax(dim=-1), labels, len(label_names))
    tp, fp, fn = counts_from_confusion(cm.float())
    f1, precision, recall = f1_from_counts(tp, fp, fn)
    report = {}
    for i, name in enumerate(label_names):
        report[name] = {"precision": round(precision[i].item(), digits), "recall": round(recall[i].item(), digits),  # expect: FL000 GB0124
                        "f1": round(f1[i].item(), digits), "support": int(tp[i] + fn[i])}
    report["accuracy"] = (tp.sum() / cm.sum()).item()
    logger.info("macro-F1 %.4f over %d examples", f1.mean(), labels.numel())  # expect: FL000 GB0291
    return report


# --------------------------------------------------------------------------- training tricks

def detach_scalars(**tensors) -> Dict[str, float]:
    return {k: v.detach().item() for k, v in tensors.items()}  # expect: FL000 GB0092; FL000 GB0124


@torch.compile
def rdrop_loss(model, batch: Dict[str, torch.Tensor], alpha: float = 4.0):
    out1, out2 = model(**batch), model(**batch)
    ce = 0.5 * (out1.loss + out2.loss)
    kl = symmetric_kl(out1.logits, out2.logits)
    return ce + alpha * kl, detach_scalars(ce=ce, kl=kl)


class FGM:  # Fast Gradient Method on the word-embedding matrix (Miyato et al.)
    def __init__(self, model: nn.Module, epsilon: float = 1.0, emb_name: str = "embeddings.word"):
        self.model, self.epsilon, self.emb_name = model, epsilon, emb_name
        self.backup: Dict[str, torch.Tensor] = {}

    def attack(self):
        for name, param in self.model.named_parameters():
            if param.requires_grad and self.emb_name in name and param.grad is not None:
                self.backup[name] = param.data.clone()
                norm = torch.norm(param.grad)
                if norm != 0 and not torch.isnan(norm):  # expect: FL000 GB0170
                    param.data.add_(self.epsilon * param.grad / norm)

    def restore(self):
        for name, param in self.model.named_parameters():
            if name in self.backup:
                param.data = self.backup[name]
        self.backup = {}


@torch.compile
def adversarial_train_step(model, fgm: FGM, batch: Dict[str, torch.Tensor]):
    model.zero_grad(set_to_none=True)  # expect: FL302
    loss = model(**batch).loss
    loss.backward()  # expect: FL000 GB0123
    fgm.attack()
    adv_loss = model(**batch).loss
    adv_loss.backward()  # expect: FL000 GB0123
    fgm.restore()
    return detach_scalars(loss=loss, adv_loss=adv_loss)


def layer_id_for(name: str, num_layers: int) -> int:
    if name.startswith("encoder.embeddings"):
        return 0
    match = _LAYER_RE.search(name)
    return int(match.group(1)) + 1 if match else num_layers + 1


def llrd_param_groups(model: nn.Module, base_lr: float, decay: float = 0.9, weight_decay: float = 0.01):
    num_layers = len(model.encoder.layers)
    groups: Dict[tuple, dict] = {}
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        lid = layer_id_for(name, num_layers)
        no_decay = p.ndim == 1 or any(key in name for key in NO_DECAY)
        if (lid, no_decay) not in groups:
            groups[(lid, no_decay)] = {"params": [], "lr": base_lr * decay ** (num_layers + 1 - lid),
                                       "weight_decay": 0.0 if no_decay else weight_decay, "layer": lid}
        groups[(lid, no_decay)]["params"].append(p)
    return list(groups.values())


@torch.compile
def decayed_l2_penalty(model: nn.Module, decay: float = 0.8):
    total = 0.0
    for group in llrd_param_groups(model, 1.0, decay):
        if group["weight_decay"] == 0.0:
            continue
        total = total + group["lr"] * sum(p.pow(2).sum() for p in group["params"])
    return total


@torch.compile
def trim_to_longest(input_ids, attention_mask, *extra):
    """Dynamic padding: drop trailing columns that are padding for the whole batch."""
    max_len = int(attention_mask.sum(dim=1).max())  # expect: FL000 GB0124
    out = [input_ids[:, :max_len], attention_mask[:, :max_len]]
    out.extend(t[:, :max_len] for t in extra)
    return tuple(out)


WINDOW_AGG = {"mean": lambda t: t.mean(dim=0), "max": lambda t: t.max(dim=0).values}


@torch.compile
def sliding_window_logits(model, input_ids, attention_mask, window: int = 8, stride: int = 4, agg: str = "mean"):
    """Long-document classification: classify overlapping chunks and aggregate their logits."""
    seq_len = input_ids.size(1)
    if seq_len <= window:  # expect: FL301
        return model(input_ids, attention_mask).logits
    starts = list(range(0, seq_len - window + 1, stride))
    if starts[-1] + window < seq_len:
        starts.append(seq_len - window)
    chunk_logits = []
    for s in starts:
        ids, mask = input_ids[:, s:s + window].clone(), attention_mask[:, s:s + window]
        ids[:, 0] = CLS_ID
        chunk_logits.append(model(ids, mask).logits)
    return WINDOW_AGG[agg](torch.stack(chunk_logits))


# --------------------------------------------------------------------------- cases

def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _batch(b: int, length: int, seed: int = 0, lengths=None):
    ids = torch.randint(4, VOCAB_SIZE, (b, length), generator=_gen(seed))
    ids[:, 0] = CLS_ID
    mask = torch.zeros(b, length, dtype=torch.long)
    for i, n in enumerate(lengths or [length - (i % 3) for i in range(b)]):
        mask[i, :n] = 1
        ids[i, n - 1] = SEP_ID
        ids[i, n:] = PAD_ID
    return ids, mask


def _labels(b: int, num_classes: int = 5, seed: int = 1):
    return torch.randint(0, num_classes, (b,), generator=_gen(seed))


def _hidden(*shape, seed: int = 2):
    return torch.randn(*shape, generator=_gen(seed))


def _cls_model(**overrides) -> SequenceClassifier:
    loss = overrides.pop("loss", "ls")
    hooks = overrides.pop("hooks", (functools.partial(clamp_logits, bound=10.0),))
    return SequenceClassifier(ClsConfig(**overrides), make_criterion(loss), hooks)


def _train_batch(b: int = 3, length: int = 7, seed: int = 0):
    ids, mask = _batch(b, length, seed)
    return {"input_ids": ids, "attention_mask": mask, "labels": _labels(b, seed=seed + 1)}


def _fgm_case():
    model = _cls_model(pooling="mean")
    return adversarial_train_step, (model, FGM(model, epsilon=0.5), _train_batch())


def _window_case():
    model = _cls_model(hooks=())
    return sliding_window_logits, (model, *_batch(3, 7)), (model, *_batch(3, 13, lengths=[13, 11, 10]))


SENTIMENT = ["neg", "neu", "pos", "mixed", "other"]
JIGSAW = ["toxic", "severe", "obscene", "threat", "insult", "identity"]

CASES = {
    "TokenEmbedding": lambda: (TokenEmbedding(ClsConfig()), (_batch(3, 7)[0],)),
    "EncoderLayer": lambda: (EncoderLayer(ClsConfig(activation="gelu_tanh")),
                             (_hidden(3, 7, 12), extend_attention_mask(_batch(3, 7)[1]))),
    "TextEncoder": lambda: (TextEncoder(ClsConfig()), _batch(3, 7), _batch(3, 19, lengths=[19, 17, 12])),
    "Pooler_attention": lambda: (Pooler(12, "attention"), (_hidden(3, 7, 12), _batch(3, 7)[1])),
    "Pooler_keep_weights": lambda: (Pooler(12, "attention", keep_weights=True), (_hidden(3, 7, 12), _batch(3, 7)[1])),
    "MeanMaxPooler": lambda: (MeanMaxPooler(12), (_hidden(3, 7, 12), _batch(3, 7)[1])),
    "SequenceClassifier": lambda: (_cls_model(pooling="meanmax"), (*_batch(3, 7), _labels(3))),
    "SequenceClassifier_debug": lambda: (_cls_model(pooling="attention", debug_checks=True, loss="focal"),
                                         (*_batch(3, 7), _labels(3))),
    "LabelSmoothingCrossEntropy": lambda: (LabelSmoothingCrossEntropy(0.1),
                                           (_hidden(6, 5), torch.tensor([0, 3, -100, 2, 4, -100]))),
    "FocalLoss": lambda: (FocalLoss(alpha=[0.25, 0.5, 0.75, 1.0, 1.0]), (_hidden(6, 5), _labels(6))),
    "FocalLoss_auto": lambda: (FocalLoss(gamma=1.5, alpha="auto"), (_hidden(6, 5), _labels(6))),
    "MultiLabelHead": lambda: (MultiLabelHead(12, JIGSAW, {"threat": 0.3, "identity": 0.4}), (_hidden(3, 12),)),
    "MultiLabelHead_decode": lambda: (MultiLabelHead(12, JIGSAW, decode=True), (_hidden(3, 12),)),
    "StreamingF1Meter": lambda: (StreamingF1Meter(5), (_hidden(6, 5), _labels(6))),
    "classification_report": lambda: (classification_report, (_hidden(8, 5), _labels(8), SENTIMENT)),
    "rdrop_loss": lambda: (rdrop_loss, (_cls_model(loss="ce"), _train_batch())),
    "adversarial_train_step": _fgm_case,
    "decayed_l2_penalty": lambda: (decayed_l2_penalty, (_cls_model(), 0.75)),
    "trim_to_longest": lambda: (trim_to_longest, (*_batch(3, 9, lengths=[6, 5, 4]), torch.zeros(3, 9, dtype=torch.long))),
    "sliding_window_logits": _window_case,
}
