"""Model-serving code: postprocessing to JSON-able results, request bookkeeping, caching."""
import functools
import json
import os
import threading

import torch
import torch.nn.functional as F
from torch import nn

LABELS = ["negative", "neutral", "positive"]
_lock = threading.Lock()
_request_log = []


class Classifier(nn.Module):
    def __init__(self, dim=8, classes=3):
        super().__init__()
        self.fc = nn.Linear(dim, classes)

    def forward(self, x):
        return self.fc(x)


class JsonHead(nn.Module):
    """Returns a JSON string straight from forward."""

    def __init__(self):
        super().__init__()
        self.clf = Classifier()

    def forward(self, x):
        probs = self.clf(x).softmax(-1)
        return json.dumps({"probs": probs.tolist()})  # expect: FL103 GB0109


class LabelHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.clf = Classifier()

    def forward(self, x):
        best = self.clf(x).argmax(-1)
        return [LABELS[i] for i in best.tolist()]  # expect: FL104 GB0033


class ConfidenceGate(nn.Module):
    def __init__(self, threshold=0.5):
        super().__init__()
        self.clf = Classifier()
        self.threshold = threshold

    def forward(self, x):
        probs = self.clf(x).softmax(-1)
        conf, label = probs.max(-1)
        if conf.min() < self.threshold:  # expect: FL101 GB0170
            return None
        return label


class EnvConfigured(nn.Module):
    """Reads a feature flag from the environment on every call."""

    def __init__(self):
        super().__init__()
        self.clf = Classifier()

    def forward(self, x):
        if os.environ.get("FUSELENS_CORPUS_SOFTMAX", "1") == "1":
            return self.clf(x).softmax(-1)
        return self.clf(x)


class LockedCounter(nn.Module):
    def __init__(self):
        super().__init__()
        self.clf = Classifier()

    def forward(self, x):
        with _lock:  # expect: FL000 GB0142
            _request_log.append(x.shape[0])
        return self.clf(x)


@functools.lru_cache(maxsize=8)
def causal_mask(n: int):
    return torch.ones(n, n).tril().bool()


@torch.compile
def cached_mask_scores(scores):
    return scores.masked_fill(~causal_mask(scores.shape[-1]), float("-inf"))


@torch.compile
def isinstance_dispatch(x):
    if isinstance(x, (list, tuple)):
        x = torch.stack(list(x))
    if hasattr(x, "to_dense"):
        x = x.to_dense()
    return x * 2


@torch.compile
def postprocess_logits(logits, top: int = 2):
    probs = F.softmax(logits, dim=-1)
    values, idx = probs.topk(top, dim=-1)
    return {"labels": idx, "scores": values}


@torch.compile
def postprocess_to_python(logits, top: int = 2):
    values, idx = logits.softmax(-1).topk(top, dim=-1)
    return [
        {"label": LABELS[i], "score": round(s, 4)}
        for i, s in zip(idx[0].tolist(), values[0].tolist())  # expect: FL104 GB0033; FL103 GB0109
    ]


@torch.compile
def validate_request(x):
    if not torch.isfinite(x).all():  # expect: FL101 GB0170
        raise ValueError("non-finite input")
    return x


@torch.compile
def validate_shape(x, dim: int = 8):
    if x.shape[-1] != dim:
        raise ValueError(f"expected last dim {dim}, got {x.shape[-1]}")
    return x


@torch.compile
def record_latency(x, started: float):
    _request_log.append(started)  # expect: FL302
    return x.relu()


@torch.compile
def bytes_payload(x):
    return x.numpy().tobytes()  # expect: FL122 GB0158


@torch.compile
def batch_requests(requests):
    lengths = [r.shape[0] for r in requests]
    padded = torch.nn.utils.rnn.pad_sequence(requests, batch_first=True)
    return padded, torch.tensor(lengths)


@torch.compile
def split_response(batch, lengths):
    return torch.split(batch, lengths.tolist())  # expect: FL104 GB0033


@torch.compile
def string_keys(x):
    return {f"row_{i}": row for i, row in enumerate(x)}


@torch.compile
def debug_dump(x):
    payload = {"shape": list(x.shape), "mean": x.mean().item()}  # expect: FL102 GB0124
    print(json.dumps(payload))  # expect: FL110 GB0059; FL000 GB0156
    return x


CASES = {
    "Classifier": lambda: (Classifier(), (torch.randn(2, 8),)),
    "JsonHead": lambda: (JsonHead(), (torch.randn(2, 8),)),
    "LabelHead": lambda: (LabelHead(), (torch.randn(2, 8),)),
    "ConfidenceGate": lambda: (ConfidenceGate(), (torch.randn(2, 8),)),
    "EnvConfigured": lambda: (EnvConfigured(), (torch.randn(2, 8),)),
    "LockedCounter": lambda: (LockedCounter(), (torch.randn(2, 8),)),
    "cached_mask_scores": lambda: (cached_mask_scores, (torch.randn(2, 5, 5),)),
    "isinstance_dispatch": lambda: (isinstance_dispatch, ([torch.randn(3), torch.randn(3)],)),
    "postprocess_logits": lambda: (postprocess_logits, (torch.randn(2, 3),)),
    "postprocess_to_python": lambda: (postprocess_to_python, (torch.randn(1, 3),)),
    "validate_request": lambda: (validate_request, (torch.randn(2, 8),)),
    "validate_shape": lambda: (validate_shape, (torch.randn(2, 8),)),
    "record_latency": lambda: (record_latency, (torch.randn(2, 8), 1.5)),
    "bytes_payload": lambda: (bytes_payload, (torch.randn(2, 8),)),
    "batch_requests": lambda: (batch_requests, ([torch.randn(3, 2), torch.randn(5, 2)],)),
    "split_response": lambda: (split_response, (torch.randn(5, 2), torch.tensor([2, 3]))),
    "string_keys": lambda: (string_keys, (torch.randn(3, 2),)),
    "debug_dump": lambda: (debug_dump, (torch.randn(3, 2),)),
}
