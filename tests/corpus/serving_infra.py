"""Model-serving glue: request/response dataclasses, dynamic batching with padding and Python-side
bookkeeping, response post-processing (top-k labels, JSON-ish dicts), OrderedDict / dict / lru_cache
caches, metrics and counter objects, configuration read from os.environ and module constants,
retry and fallback logic with try/except/finally, early returns and deadlines measured with time."""
import functools
import logging
import os
import time
from collections import OrderedDict, defaultdict
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple, Union

import torch
import torch.nn.functional as F
from torch import nn

log = logging.getLogger("serving")
log.addHandler(logging.NullHandler())

MAX_BATCH = int(os.environ.get("FUSELENS_MAX_BATCH", "4"))
PAD_ID = 0
BUCKETS = (4, 8, 16, 32)
LABELS = ("negative", "neutral", "positive", "mixed", "spam")
CONFIDENCE_FLOOR = 0.35
REQUEST_TIMEOUT_S = float(os.environ.get("FUSELENS_TIMEOUT", "2.5"))
VOCAB = 50
DIM = 8


# --------------------------------------------------------------------------- requests / responses

@dataclass
class InferenceRequest:
    request_id: str
    tokens: torch.Tensor
    temperature: float = 1.0
    top_k: int = 3
    metadata: Dict[str, str] = field(default_factory=dict)


@dataclass
class InferenceResponse:
    request_id: str
    scores: torch.Tensor
    labels: List[str] = field(default_factory=list)
    degraded: bool = False


class Counter:
    """Plain metrics counter shared by the handlers (not an nn.Module)."""

    def __init__(self):
        self.counts: Dict[str, int] = defaultdict(int)
        self.latency: Dict[str, float] = {}

    def incr(self, name: str, by: int = 1) -> None:
        self.counts[name] += by  # expect: FL302

    def observe(self, name: str, value: float) -> None:
        self.latency[name] = value


METRICS = Counter()
REQUEST_METRICS = Counter()


def _make_request(i: int, n: int, **kw) -> InferenceRequest:
    g = torch.Generator().manual_seed(i)
    return InferenceRequest(f"req-{i}", torch.randint(1, VOCAB, (n,), generator=g), **kw)


# --------------------------------------------------------------------------- models being served

class TextEncoder(nn.Module):
    def __init__(self, vocab: int = VOCAB, dim: int = DIM):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim, padding_idx=PAD_ID)
        self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, tokens, mask):
        h = self.ff(self.emb(tokens))
        m = mask.unsqueeze(-1).to(h.dtype)
        return (h * m).sum(1) / m.sum(1).clamp_min(1.0)


class BaseServingHead(nn.Module):
    """Base head: encoder + linear classifier; subclasses post-process the logits."""

    def __init__(self, n_labels: int = len(LABELS)):
        super().__init__()
        self.encoder = TextEncoder()
        self.cls = nn.Linear(DIM, n_labels)

    def forward(self, tokens, mask):
        return self.cls(self.encoder(tokens, mask))


class CalibratedHead(BaseServingHead):
    """Temperature-calibrated probabilities on top of the base head (super().forward)."""

    def __init__(self, temperature: float = 1.5, **kw):
        super().__init__(**kw)
        self.register_buffer("temperature", torch.tensor(temperature))

    def forward(self, tokens, mask):
        logits = super().forward(tokens, mask)
        return F.softmax(logits / self.temperature, dim=-1)


class AbstainingHead(CalibratedHead):
    """Returns a uniform distribution when the model is not confident enough."""

    def forward(self, tokens, mask):
        probs = super().forward(tokens, mask)
        if probs.max() < CONFIDENCE_FLOOR:  # expect: FL000 GB0170
            log.info("abstaining: max prob below %.2f", CONFIDENCE_FLOOR)  # expect: FL000 GB0291
            return torch.full_like(probs, 1.0 / probs.size(-1))
        return probs


class CountingHead(CalibratedHead):
    """Keeps a served-requests counter on the module (the usual /metrics endpoint source)."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.served = 0

    def forward(self, tokens, mask):
        self.served += tokens.size(0)  # expect: FL302
        return super().forward(tokens, mask)


class ResponseCacheHead(nn.Module):
    """Memoises whole responses keyed by the request's batch signature in a bounded OrderedDict."""

    def __init__(self, capacity: int = 2):
        super().__init__()
        self.head = BaseServingHead()
        self.capacity = capacity
        self._lru: "OrderedDict[Tuple[int, ...], torch.Tensor]" = OrderedDict()

    def forward(self, tokens, mask):
        key = tuple(tokens.flatten().tolist())  # expect: FL000 GB0033
        if key in self._lru:
            self._lru.move_to_end(key)
            return self._lru[key]
        out = self.head(tokens, mask)
        self._lru[key] = out  # expect: FL302
        if len(self._lru) > self.capacity:
            self._lru.popitem(last=False)
        return out


class ChunkedServingModel(nn.Module):
    """Splits oversized batches into MAX_BATCH pieces before running the head."""

    def __init__(self):
        super().__init__()
        self.head = CalibratedHead()

    def forward(self, tokens, mask):
        if tokens.size(0) <= MAX_BATCH:  # expect: FL301
            return self.head(tokens, mask)
        parts = [self.head(t, m) for t, m in zip(tokens.split(MAX_BATCH), mask.split(MAX_BATCH))]
        return torch.cat(parts)


# --------------------------------------------------------------------------- batching helpers

@functools.lru_cache(maxsize=32)
def bucket_for(n: int) -> int:
    for b in BUCKETS:
        if b >= n:
            return b
    return BUCKETS[-1]


def pad_to(tokens: torch.Tensor, length: int, *, value: int = PAD_ID) -> torch.Tensor:
    return F.pad(tokens, (0, length - tokens.shape[0]), value=value)


def collate(requests: List[InferenceRequest], *, bucketed: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    longest = max(r.tokens.shape[0] for r in requests)
    length = bucket_for(longest) if bucketed else longest
    tokens = torch.stack([pad_to(r.tokens, length) for r in requests])
    return tokens, tokens != PAD_ID


def _run_model(model: nn.Module, requests: List[InferenceRequest]) -> torch.Tensor:
    tokens, mask = collate(requests)
    return model(tokens, mask)


def _label_names(indices: torch.Tensor) -> List[str]:
    return [LABELS[i] for i in indices.tolist()]  # expect: FL000 GB0033


def _format_response(req: InferenceRequest, probs: torch.Tensor) -> InferenceResponse:
    top = probs.topk(req.top_k)
    return InferenceResponse(req.request_id, top.values, labels=_label_names(top.indices))


def _postprocess(requests: List[InferenceRequest], probs: torch.Tensor) -> List[InferenceResponse]:
    return [_format_response(r, p) for r, p in zip(requests, probs)]


# --------------------------------------------------------------------------- compiled handlers

@torch.compile
def serve_padded(model: nn.Module, requests: List[InferenceRequest]) -> torch.Tensor:
    probs = _run_model(model, requests)
    temps = torch.tensor([r.temperature for r in requests]).unsqueeze(-1)
    return (probs.log() / temps).softmax(-1)


@torch.compile
def serve_bucketed(model: nn.Module, requests: List[InferenceRequest]) -> torch.Tensor:
    tokens, mask = collate(requests, bucketed=True)
    return model(tokens, mask)


@torch.compile
def serve_with_labels(model: nn.Module, requests: List[InferenceRequest]) -> List[InferenceResponse]:
    probs = _run_model(model, requests)
    return _postprocess(requests, probs)


def _serve_timed(model: nn.Module, tokens, mask, *, name: str = "classify"):
    start = time.perf_counter()  # expect: FL000 GB0007
    out = model(tokens, mask)
    METRICS.observe(name, time.perf_counter() - start)  # expect: FL000 GB0007
    return out


serve_timed = torch.compile(_serve_timed)


@torch.compile
def serve_with_metrics(model: nn.Module, tokens, mask):
    REQUEST_METRICS.incr("requests")
    REQUEST_METRICS.incr("tokens", by=tokens.numel())
    return model(tokens, mask)


def _safe_forward(model: nn.Module, tokens, mask, fallback: Optional[nn.Module] = None):
    try:
        out = model(tokens, mask)
        if not torch.isfinite(out).all():  # expect: FL000 GB0170
            raise FloatingPointError("non-finite scores")
    except FloatingPointError:
        if fallback is None:
            raise
        out = fallback(tokens, mask)
    return out


safe_forward = torch.compile(_safe_forward)


@torch.compile
def serve_with_retry(model: nn.Module, tokens, mask, retries: int = 2):
    last_error: Optional[Exception] = None
    for attempt in range(retries + 1):
        try:
            if attempt == 0 and tokens.size(1) > 6:
                raise ValueError("sequence too long for the fast path")
            return model(tokens[:, :6], mask[:, :6])
        except ValueError as exc:
            log.warning("attempt %d failed: %s", attempt, exc)  # expect: FL000 GB0291
            last_error = exc
        finally:
            pass
    raise RuntimeError(f"all retries failed: {last_error}")


@torch.compile
def serve_until_deadline(model: nn.Module, tokens, mask, *, passes: int = 3,
                         timeout: float = REQUEST_TIMEOUT_S):
    deadline = time.monotonic() + timeout  # expect: FL000 GB0007
    out = model(tokens, mask)
    done = 1
    while done < passes and time.monotonic() < deadline:  # expect: FL000 GB0007
        out = out + model(tokens, mask)
        done += 1
    return out / done


@torch.compile
def serve_env_configured(model: nn.Module, tokens, mask):
    scale = float(os.environ.get("FUSELENS_LOGIT_SCALE", "1.0"))
    return model(tokens, mask) * scale


@torch.compile(dynamic=True)
def truncate_batch(tokens, mask, max_len: int = 6):
    if tokens.shape[1] > max_len:  # expect: FL301
        tokens, mask = tokens[:, :max_len], mask[:, :max_len]
    lengths = mask.sum(-1)
    return tokens * mask, lengths


@torch.compile
def early_exit_empty(model: nn.Module, tokens, mask):
    if not mask.any():  # expect: FL000 GB0170
        return torch.zeros(tokens.size(0), len(LABELS))
    return model(tokens, mask)


@torch.compile
def top_label_strings(probs: torch.Tensor, k: int = 2) -> Dict[str, Union[List[str], float]]:
    values, indices = probs.topk(k, dim=-1)
    labels = [LABELS[i] for i in indices[0]]  # expect: FL000 GB0124
    return {"labels": labels, "confidence": values[0, 0].item()}  # expect: FL000 GB0124


class ScoreNormalizer:
    """Non-module helper holding per-label priors; calls closures built at init."""

    def __init__(self, priors: Tuple[float, ...] = (0.3, 0.3, 0.2, 0.1, 0.1), *, strict: bool = True):
        prior = torch.tensor(priors)
        self.strict = strict
        self.adjust = lambda p: p / prior
        self.renorm = lambda p: p / p.sum(-1, keepdim=True)

    def _check(self, probs):
        if self.strict and not torch.allclose(probs.sum(-1), torch.ones(probs.size(0))):  # expect: FL000 GB0033
            raise ValueError("scores do not sum to one")
        return probs

    def __call__(self, probs):
        return self._check(self.renorm(self.adjust(probs)))


_NORMALIZER = ScoreNormalizer()


@torch.compile
def prior_corrected(model: nn.Module, tokens, mask):
    return _NORMALIZER(model(tokens, mask))


class DynamicBatcher:
    """Collects requests and hands out the longest-first batch of at most max_batch."""

    def __init__(self, max_batch: int = MAX_BATCH, max_wait_ms: float = 5.0):
        self.max_batch = max_batch
        self.max_wait_ms = max_wait_ms
        self.pending: List[InferenceRequest] = []

    def add(self, req: InferenceRequest) -> "DynamicBatcher":
        self.pending.append(req)
        return self

    def next_batch(self) -> List[InferenceRequest]:
        ordered = sorted(self.pending, key=lambda r: r.tokens.shape[0], reverse=True)
        return ordered[: self.max_batch]


@torch.compile
def flush_batcher(batcher: DynamicBatcher, model: nn.Module) -> Dict[str, torch.Tensor]:
    batch = batcher.next_batch()
    tokens, mask = collate(batch, bucketed=True)
    probs = model(tokens, mask)
    return {r.request_id: p for r, p in zip(batch, probs)}


@torch.compile
def response_to_json(probs: torch.Tensor, request_ids: Tuple[str, ...], *, precision: int = 3):
    out = []
    for rid, row in zip(request_ids, probs):
        out.append({"id": rid, "scores": [round(v, precision) for v in row.tolist()]})  # expect: FL000 GB0109
    return out


def _batcher(lengths=(5, 3, 7, 4, 6)) -> DynamicBatcher:
    b = DynamicBatcher()
    for req in _requests(lengths):
        b.add(req)
    return b


# --------------------------------------------------------------------------- cases

def _requests(lengths=(5, 3, 7), **kw) -> List[InferenceRequest]:
    return [_make_request(i, n, **kw) for i, n in enumerate(lengths)]


def _batch(b: int = 3, t: int = 7, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(1, VOCAB, (b, t), generator=g)
    tokens[0, -2:] = PAD_ID
    return tokens, tokens != PAD_ID


def _warm_cache(module: ResponseCacheHead) -> ResponseCacheHead:
    for seed in (1, 2):
        tokens, mask = _batch(seed=seed)
        module._lru[tuple(tokens.flatten().tolist())] = torch.zeros(3, len(LABELS))
    return module


CASES = {
    "CalibratedHead": lambda: (CalibratedHead(), _batch()),
    "AbstainingHead": lambda: (AbstainingHead(temperature=50.0), _batch()),
    "AbstainingHead_confident": lambda: (AbstainingHead(temperature=0.01), _batch()),
    "CountingHead": lambda: (CountingHead(), _batch()),
    "ResponseCacheHead": lambda: (_warm_cache(ResponseCacheHead()), _batch()),
    "ChunkedServingModel": lambda: (ChunkedServingModel(), _batch(3, 7), _batch(6, 7)),
    "serve_padded": lambda: (serve_padded, (CalibratedHead(), _requests(temperature=0.7))),
    "serve_bucketed": lambda: (serve_bucketed, (BaseServingHead(), _requests())),
    "serve_with_labels": lambda: (serve_with_labels, (CalibratedHead(), _requests(top_k=2))),
    "serve_timed": lambda: (serve_timed, (CalibratedHead(), *_batch())),
    "serve_with_metrics": lambda: (serve_with_metrics, (CalibratedHead(), *_batch())),
    "safe_forward": lambda: (safe_forward, (CalibratedHead(), *_batch(), BaseServingHead())),
    "safe_forward_nan": lambda: (safe_forward, (CalibratedHead(temperature=0.0), *_batch(), BaseServingHead())),
    "serve_with_retry": lambda: (serve_with_retry, (CalibratedHead(), *_batch())),
    "serve_until_deadline": lambda: (serve_until_deadline, (CalibratedHead(), *_batch())),
    "serve_env_configured": lambda: (serve_env_configured, (CalibratedHead(), *_batch())),
    "truncate_batch": lambda: (truncate_batch, _batch(3, 5), _batch(3, 9)),
    "early_exit_empty": lambda: (early_exit_empty, (CalibratedHead(), *_batch())),
    "early_exit_empty_all_pad": lambda: (early_exit_empty, (CalibratedHead(), torch.zeros(2, 5, dtype=torch.long),
                                                            torch.zeros(2, 5, dtype=torch.bool))),
    "top_label_strings": lambda: (top_label_strings, (torch.softmax(torch.randn(2, 5), -1),)),
    "prior_corrected": lambda: (prior_corrected, (CalibratedHead(), *_batch())),
    "flush_batcher": lambda: (flush_batcher, (_batcher(), CalibratedHead())),
    "response_to_json": lambda: (response_to_json, (torch.softmax(torch.randn(2, 5), -1), ("a", "b"))),
}
