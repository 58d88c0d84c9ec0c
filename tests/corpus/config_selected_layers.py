"""Layers chosen by config objects: an LSTM or a conv stack picked in `__init__`, modes passed as
strings, helper objects made inside compiled code, and logging after a loop that broke."""
import logging
from dataclasses import dataclass
from typing import Dict, List, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

log = logging.getLogger(__name__)


@dataclass
class SeqConfig:
    kind: str = "lstm"
    channels: int = 6
    hidden: int = 5
    normalize: bool = True


EDGE_CONFIG = SeqConfig(kind="conv")


class SequenceHead(nn.Module):
    """A BiLSTM on servers; a temporal conv stack for toolchains without recurrent ops."""

    def __init__(self, cfg: SeqConfig = SeqConfig()):
        super().__init__()
        if cfg.kind == "lstm":
            self.body = nn.LSTM(cfg.channels, cfg.hidden, bidirectional=True)
        else:
            self.body = nn.Sequential(nn.Conv1d(cfg.channels, 2 * cfg.hidden, 3, padding=1), nn.ReLU())
        self.norm = nn.LayerNorm(2 * cfg.hidden) if cfg.normalize else nn.Identity()
        self.out = nn.Linear(2 * cfg.hidden, 4)

    def forward(self, feats: torch.Tensor) -> torch.Tensor:  # feats: B, C, T
        if isinstance(self.body, nn.LSTM):  # expect: FL000 GB0014
            seq, _ = self.body(feats.permute(2, 0, 1))
        else:
            seq = self.body(feats).permute(2, 0, 1)
        if isinstance(self.norm, nn.LayerNorm):
            seq = self.norm(seq)
        return self.out(seq).log_softmax(-1)


def reduce_scores(scores: torch.Tensor, how: str) -> torch.Tensor:
    if how == "max":
        return scores.max() * (scores.argmax().item() + 1)
    if how == "mean":
        return scores.mean()
    return scores.sum()


@torch.compile
def pooled_score(scores: torch.Tensor) -> torch.Tensor:
    return reduce_scores(scores, "mean") + reduce_scores(scores.flip(0), how="sum")


class RunningScaler:
    """Per-row standardisation with the statistics kept as Python floats."""

    def __init__(self, eps: float = 1e-6):
        self.eps = eps
        self.stats: Dict[int, tuple] = {}

    def fit(self, rows: torch.Tensor, ids: Sequence[int]) -> "RunningScaler":
        for row, key in zip(rows, ids):
            self.stats[key] = (row.mean().item(), row.std().item() + self.eps)  # expect: FL000 GB0124
        return self

    def transform(self, rows: torch.Tensor, ids: Sequence[int]) -> torch.Tensor:
        return torch.stack([(row - self.stats[k][0]) / self.stats[k][1] for row, k in zip(rows, ids)])


@torch.compile
def standardize(rows: torch.Tensor, ids: List[int]) -> torch.Tensor:
    scaler = RunningScaler().fit(rows, ids)  # expect: FL000 GB0092
    return scaler.transform(rows, ids)


@torch.compile
def per_class_report(probs: torch.Tensor, names: Sequence[str]) -> Dict[str, float]:
    report = {}
    for i, name in enumerate(names):
        report[name] = round(probs[:, i].mean().item(), 4)  # expect: FL000 GB0124
    log.info("mean confidence %.3f", probs.max(-1).values.mean())  # expect: FL000 GB0291
    log.info("classes: %d", len(names))
    return report


@torch.compile
def peak_cell(scores: torch.Tensor) -> torch.Tensor:
    """The score of the best (row, column) cell, and the cell's row."""
    cell = scores.flatten().argmax()
    rc = torch.stack([cell // scores.shape[1], cell % scores.shape[1]])
    return scores[tuple(rc)] + scores[rc[0]].sum()  # expect: FL000 GB0033


def export_edge_head(path: str) -> None:
    torch.jit.trace(SequenceHead(EDGE_CONFIG).eval(), (torch.rand(2, 6, 7),)).save(path)


TRACED = {
    "SequenceHead": lambda: (SequenceHead(EDGE_CONFIG).eval(), (torch.rand(2, 6, 7),)),
}


def _rand(*shape, seed: int = 0):
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed))


CASES = {
    "SequenceHead": lambda: (SequenceHead().eval(), (_rand(2, 6, 7),)),
    "SequenceHead_edge": lambda: (SequenceHead(EDGE_CONFIG).eval(), (_rand(3, 6, 9),)),
    "pooled_score": lambda: (pooled_score, (_rand(5),)),
    "standardize": lambda: (standardize, (_rand(3, 4), [7, 8, 9])),
    "peak_cell": lambda: (peak_cell, (_rand(3, 4),)),
    "per_class_report": lambda: (per_class_report, (_rand(4, 3).softmax(-1), ["cat", "dog", "bird"])),
}
