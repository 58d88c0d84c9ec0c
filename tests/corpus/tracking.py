"""Multi-object tracking: Kalman filters, IoU / appearance association, greedy matching, track bookkeeping."""
import logging
import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger(__name__)


@dataclass
class TrackerConfig:
    iou_threshold: float = 0.3
    max_age: int = 3
    min_hits: int = 2
    appearance_weight: float = 0.5
    std_pos: float = 1.0 / 20
    std_vel: float = 1.0 / 160


def box_xyxy_to_cxcyah(boxes):
    w, h = boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1]
    return torch.stack([boxes[..., 0] + w / 2, boxes[..., 1] + h / 2, w / h.clamp(min=1e-6), h], -1)


class ConstantVelocityKF(nn.Module):  # batched Kalman filter, state = [cx, cy, a, h, vx, vy, va, vh]
    def __init__(self, cfg: TrackerConfig = TrackerConfig(), dt: float = 1.0):
        super().__init__()
        self.cfg = cfg
        F_ = torch.eye(8)
        F_[:4, 4:] = dt * torch.eye(4)
        self.register_buffer("F", F_)
        self.register_buffer("H", torch.eye(4, 8))

    def process_noise(self, h):
        std = torch.stack([self.cfg.std_pos * h, self.cfg.std_pos * h, torch.full_like(h, 1e-2), self.cfg.std_pos * h,
                           self.cfg.std_vel * h, self.cfg.std_vel * h, torch.full_like(h, 1e-5), self.cfg.std_vel * h], -1)
        return torch.diag_embed(std.pow(2))

    def forward(self, mean, cov, measurement):
        mean = mean @ self.F.t()
        cov = self.F @ cov @ self.F.t() + self.process_noise(mean[:, 3])
        S = self.H @ cov @ self.H.t() + torch.eye(4) * 1e-2
        K = torch.linalg.solve(S, (cov @ self.H.t()).transpose(1, 2)).transpose(1, 2)
        innovation = measurement - mean @ self.H.t()
        mean = mean + (K @ innovation.unsqueeze(-1)).squeeze(-1)
        cov = cov - K @ S @ K.transpose(1, 2)
        return mean, cov


class AppearanceEmbedder(nn.Module):  # re-ID head on crops
    def __init__(self, dim: int = 8):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(8, dim)

    def forward(self, crops):
        return F.normalize(self.fc(self.conv(crops).flatten(1)), dim=-1)


class MotionGate(nn.Module):
    def __init__(self, chi2_threshold: float = 9.4877):
        super().__init__()
        self.threshold = chi2_threshold

    def forward(self, pred_mean, pred_cov, dets):
        diff = dets[None, :, :] - pred_mean[:, None, :4]
        S_inv = torch.linalg.inv(pred_cov[:, :4, :4])
        d2 = torch.einsum("tdi,tij,tdj->td", diff, S_inv, diff)
        return d2 <= self.threshold


class TrackManager(nn.Module):
    def __init__(self, cfg: TrackerConfig = TrackerConfig()):
        super().__init__()
        self.cfg = cfg
        self.tracks: Dict[int, dict] = {}
        self.max_tracks = 64

    def forward(self, boxes, scores):
        keep = scores > 0.5
        boxes = boxes[keep]  # expect: FL105 GB0036
        for b in boxes:
            self.tracks[len(self.tracks)] = {"box": b, "age": 0, "hits": 1}  # expect: FL302
            assert len(self.tracks) <= self.max_tracks, "too many live tracks"
        for tid in list(self.tracks):
            self.tracks[tid]["age"] += 1  # expect: FL302
        return len(self.tracks)


class TrajectoryEncoder(nn.Module):
    def __init__(self, dim: int = 4, hidden: int = 8):
        super().__init__()
        self.gru = nn.GRU(dim, hidden, batch_first=True)
        self.head = nn.Linear(hidden, dim)

    def forward(self, history):
        _, h = self.gru(history)  # expect: FL123 GB0014
        return history[:, -1] + self.head(h[-1])


@torch.compile
def pairwise_iou(a, b, eps: float = 1e-7):
    lt = torch.max(a[:, None, :2], b[None, :, :2])
    rb = torch.min(a[:, None, 2:], b[None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    area_a = (a[:, 2:] - a[:, :2]).prod(-1)
    area_b = (b[:, 2:] - b[:, :2]).prod(-1)
    return inter / (area_a[:, None] + area_b[None, :] - inter + eps)


@torch.compile
def fused_cost(iou, app_sim, w: float = 0.5, gate: Optional[torch.Tensor] = None):
    cost = w * (1 - iou) + (1 - w) * (1 - app_sim)
    if gate is not None:
        cost = cost.masked_fill(~gate, 1e5)
    return cost


@torch.compile
def greedy_match(cost, max_cost: float = 0.7) -> Tuple[List[Tuple[int, int]], List[int], List[int]]:
    cost = cost.clone()
    matches = []
    n_t, n_d = cost.shape
    for _ in range(min(n_t, n_d)):
        flat = torch.argmin(cost)
        t, d = divmod(flat.item(), n_d)  # expect: FL102 GB0124
        if cost[t, d] > max_cost:
            break
        matches.append((t, d))
        cost[t, :] = float("inf")
        cost[:, d] = float("inf")
    matched_t = {m[0] for m in matches}
    matched_d = {m[1] for m in matches}
    return matches, [t for t in range(n_t) if t not in matched_t], [d for d in range(n_d) if d not in matched_d]


@torch.compile
def mutual_nn_match(sim):
    best_d = sim.argmax(1)
    best_t = sim.argmax(0)
    mutual = best_t[best_d] == torch.arange(sim.size(0))
    return torch.stack([torch.arange(sim.size(0)), best_d], -1), mutual


@torch.compile
def ema_update_features(track_feats, det_feats, matched, alpha: float = 0.9):
    updated = alpha * track_feats + (1 - alpha) * det_feats
    updated = F.normalize(updated, dim=-1)
    return torch.where(matched[:, None], updated, track_feats)


@torch.compile
def hungarian_scipy(cost):
    from scipy.optimize import linear_sum_assignment
    rows, cols = linear_sum_assignment(cost.detach().cpu().numpy())  # expect: FL121 GB0007
    return torch.as_tensor(rows), torch.as_tensor(cols)


@torch.compile
def age_tracks(ages, hits, matched, cfg: TrackerConfig = TrackerConfig()):
    ages = torch.where(matched, torch.zeros_like(ages), ages + 1)
    hits = hits + matched.long()
    alive = ages <= cfg.max_age
    confirmed = alive & (hits >= cfg.min_hits)
    return ages, hits, alive, confirmed


@torch.compile
def prune_dead(track_boxes, ages, max_age: int = 3):
    alive = ages <= max_age
    n_dead = (~alive).sum()
    if n_dead > 0:  # expect: FL101 GB0170
        logger.info("pruning %d dead tracks", int(n_dead))  # expect: FL111 GB0291; FL102 GB0124
    return track_boxes[alive]  # expect: FL105 GB0036


@torch.compile
def group_by_class(boxes, labels, names: List[str]):
    out = defaultdict(list)
    for box, lab in zip(boxes, labels.tolist()):  # expect: FL104 GB0033
        out[names[lab]].append(box)
    return {k: torch.stack(v) for k, v in out.items()}


@torch.compile
def interpolate_track(frames: List[int], boxes, max_gap: int = 5):
    filled = [boxes[0]]
    for i in range(1, len(frames)):
        gap = frames[i] - frames[i - 1]
        if 1 < gap <= max_gap:
            for k in range(1, gap):
                t = k / gap
                filled.append(boxes[i - 1] * (1 - t) + boxes[i] * t)
        filled.append(boxes[i])
    return torch.stack(filled)


@torch.compile
def mota(num_fp: int, num_fn: int, num_idsw: int, num_gt: int):
    if num_gt == 0:
        return float("nan")
    return 1.0 - (num_fp + num_fn + num_idsw) / num_gt


@torch.compile
def motion_heading(velocities):
    speed = velocities.norm(dim=-1)
    heading = torch.atan2(velocities[:, 1], velocities[:, 0]) * 180 / math.pi
    moving = speed > 0.05
    return torch.where(moving, heading, torch.zeros_like(heading)), speed


@torch.compile
def track_summary(track_ids, boxes):
    lines = []
    for tid, box in zip(track_ids.tolist(), boxes):  # expect: FL104 GB0033
        lines.append(f"track {tid}: {np.round(box.numpy(), 1)}")
    return "\n".join(lines)  # expect: FL000 GB0156


_kf_inputs = lambda: (torch.tensor([[5.0, 5.0, 1.0, 10.0, 0, 0, 0, 0], [20.0, 8.0, 0.5, 6.0, 1, 0, 0, 0]]),  # noqa: E731
                      torch.eye(8).expand(2, 8, 8).clone(), torch.tensor([[5.5, 5.0, 1.0, 10.0], [21.0, 8.2, 0.5, 6.1]]))
_boxes = lambda: torch.tensor([[0.0, 0.0, 4.0, 4.0], [2.0, 2.0, 6.0, 6.0], [10.0, 10.0, 12.0, 14.0]])  # noqa: E731

CASES = {
    "ConstantVelocityKF": lambda: (ConstantVelocityKF(), _kf_inputs()),
    "AppearanceEmbedder": lambda: (AppearanceEmbedder().eval(), (torch.randn(3, 3, 8, 8),)),
    "MotionGate": lambda: (MotionGate(), (_kf_inputs()[0], _kf_inputs()[1], _kf_inputs()[2])),
    "TrackManager": lambda: (TrackManager(), (_boxes(), torch.tensor([0.9, 0.2, 0.7]))),
    "TrajectoryEncoder": lambda: (TrajectoryEncoder(), (torch.randn(2, 5, 4),)),
    "pairwise_iou": lambda: (pairwise_iou, (_boxes(), _boxes()[:2])),
    "fused_cost": lambda: (fused_cost, (torch.rand(3, 2), torch.rand(3, 2), 0.5, torch.rand(3, 2) > 0.3)),
    "greedy_match": lambda: (greedy_match, (torch.tensor([[0.1, 0.9, 0.8], [0.6, 0.2, 0.95]]),)),
    "mutual_nn_match": lambda: (mutual_nn_match, (torch.randn(3, 4),)),
    "ema_update_features": lambda: (ema_update_features, (torch.randn(3, 4), torch.randn(3, 4), torch.tensor([True, False, True]))),
    "hungarian_scipy": lambda: (hungarian_scipy, (torch.rand(3, 3),)),
    "age_tracks": lambda: (age_tracks, (torch.tensor([0, 2, 3]), torch.tensor([1, 4, 0]), torch.tensor([True, False, False]))),
    "prune_dead": lambda: (prune_dead, (_boxes(), torch.tensor([1, 5, 0]))),
    "group_by_class": lambda: (group_by_class, (_boxes(), torch.tensor([0, 1, 0]), ["car", "person"])),
    "interpolate_track": lambda: (interpolate_track, ([0, 1, 4], _boxes())),
    "mota": lambda: (mota, (3, 5, 1, 40)),
    "motion_heading": lambda: (motion_heading, (torch.randn(4, 2),)),
    "track_summary": lambda: (track_summary, (torch.tensor([3, 7]), _boxes()[:2])),
}
