"""Video models: 3D / (2+1)D convs, temporal shift, frame sampling, flow warping with grid_sample, streaming caches, clip aggregation."""
import logging
import random
import time
import warnings
from collections import Counter
from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger(__name__)


def _to_unit_range(video):
    if video.max() > 1.0:  # expect: FL101 GB0170
        video = video / 255.0
    return video


def iter_clips(video, clip_len: int, stride: int):
    T = video.shape[2]
    for start in range(0, T - clip_len + 1, stride):
        yield video[:, :, start:start + clip_len]


class Conv2Plus1D(nn.Module):
    """R(2+1)D block: spatial 1xkxk conv followed by temporal kx1x1 conv."""

    def __init__(self, in_ch: int = 3, out_ch: int = 8, mid_ch: int = 6, k: int = 3):
        super().__init__()
        self.spatial = nn.Conv3d(in_ch, mid_ch, (1, k, k), padding=(0, k // 2, k // 2), bias=False)
        self.bn1 = nn.BatchNorm3d(mid_ch)
        self.temporal = nn.Conv3d(mid_ch, out_ch, (k, 1, 1), padding=(k // 2, 0, 0), bias=False)
        self.bn2 = nn.BatchNorm3d(out_ch)
        self.shortcut = nn.Conv3d(in_ch, out_ch, 1) if in_ch != out_ch else nn.Identity()

    def forward(self, x):
        y = F.relu(self.bn1(self.spatial(x)))
        y = self.bn2(self.temporal(y))
        return F.relu(y + self.shortcut(x))


class TemporalShift(nn.Module):
    """TSM: shift 1/fold_div of the channels one step forward in time and 1/fold_div backward."""

    def __init__(self, net: nn.Module, n_segment: int = 4, fold_div: int = 4):
        super().__init__()
        self.net, self.n_segment, self.fold_div = net, n_segment, fold_div

    def forward(self, x):
        nt, c, h, w = x.shape
        x = x.view(nt // self.n_segment, self.n_segment, c, h, w)
        fold = c // self.fold_div
        out = torch.zeros_like(x)
        out[:, :-1, :fold] = x[:, 1:, :fold]
        out[:, 1:, fold:2 * fold] = x[:, :-1, fold:2 * fold]
        out[:, :, 2 * fold:] = x[:, :, 2 * fold:]
        return self.net(out.view(nt, c, h, w))


@torch.compile
def temporal_consensus(frame_logits, n_segment: int, mode: str = "avg"):
    logits = frame_logits.view(-1, n_segment, frame_logits.shape[-1])
    if mode == "max":
        return logits.max(dim=1).values
    return logits.mean(dim=1)


def make_base_grid(B, H, W):
    ys, xs = torch.meshgrid(torch.linspace(-1, 1, H), torch.linspace(-1, 1, W), indexing="ij")
    return torch.stack([xs, ys], dim=-1).expand(B, H, W, 2)


@torch.compile
def flow_warp(img, flow, padding_mode: str = "border"):
    B, _, H, W = img.shape
    norm = torch.tensor([2.0 / max(W - 1, 1), 2.0 / max(H - 1, 1)])
    grid = make_base_grid(B, H, W) + flow.permute(0, 2, 3, 1) * norm
    return F.grid_sample(img, grid, mode="bilinear", padding_mode=padding_mode, align_corners=True)


@torch.compile
def forward_backward_consistency(flow_fw, flow_bw, alpha1: float = 0.01, alpha2: float = 0.5):
    bw_warped = flow_warp(flow_bw, flow_fw)
    diff = (flow_fw + bw_warped).pow(2).sum(1)
    mag = flow_fw.pow(2).sum(1) + bw_warped.pow(2).sum(1)
    occluded = diff > alpha1 * mag + alpha2
    occ_ratio = occluded.float().mean()
    if occ_ratio > 0.5:  # expect: FL101 GB0170
        logger.warning("%.0f%% of pixels fail the forward-backward check", 100 * occ_ratio)  # expect: FL111 GB0291; FL000 GB0007
    return occluded


class DividedSpaceTimeAttention(nn.Module):
    """TimeSformer block: attention over time at each spatial location, then over space in each frame."""

    def __init__(self, dim: int = 8, heads: int = 2):
        super().__init__()
        self.time_attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.space_attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm_t, self.norm_s = nn.LayerNorm(dim), nn.LayerNorm(dim)

    def forward(self, x):
        B, T, N, D = x.shape
        xt = x.permute(0, 2, 1, 3).reshape(B * N, T, D)
        h = self.norm_t(xt)
        xt = xt + self.time_attn(h, h, h, need_weights=False)[0]
        xs = xt.view(B, N, T, D).permute(0, 2, 1, 3).reshape(B * T, N, D)
        h = self.norm_s(xs)
        xs = xs + self.space_attn(h, h, h, need_weights=False)[0]
        return xs.view(B, T, N, D)


class AttentionClipPooling(nn.Module):
    def __init__(self, dim: int = 8, n_classes: int = 5):
        super().__init__()
        self.score = nn.Sequential(nn.Linear(dim, dim), nn.Tanh(), nn.Linear(dim, 1))
        self.head = nn.Linear(dim, n_classes)

    def forward(self, clip_feats, clip_mask: Optional[torch.Tensor] = None):
        scores = self.score(clip_feats).squeeze(-1)
        if clip_mask is not None:
            scores = scores.masked_fill(~clip_mask, float("-inf"))
        attn = scores.softmax(dim=-1)
        video_feat = torch.einsum("bn,bnd->bd", attn, clip_feats)
        return self.head(video_feat), attn


class SlowFastSampler(nn.Module):
    """Builds the slow and fast pathways of SlowFast by strided temporal subsampling, with a lateral fuse."""

    def __init__(self, alpha: int = 4, in_ch: int = 3, fast_ch: int = 2, slow_ch: int = 8):
        super().__init__()
        self.alpha = alpha
        self.slow = nn.Conv3d(in_ch, slow_ch, (1, 3, 3), padding=(0, 1, 1))
        self.fast = nn.Conv3d(in_ch, fast_ch, (3, 3, 3), padding=1)
        self.lateral = nn.Conv3d(fast_ch, 2 * fast_ch, (5, 1, 1), stride=(alpha, 1, 1), padding=(2, 0, 0))

    def forward(self, frames):
        T = frames.shape[2]
        if T % self.alpha:
            warnings.warn(f"clip length {T} is not a multiple of alpha={self.alpha}; slow pathway sees a ragged stride")  # expect: FL112 GB0007
        slow = self.slow(frames[:, :, ::self.alpha])
        fast = self.fast(frames)
        return torch.cat([slow, self.lateral(fast)], dim=1), fast


class UniformFrameSampler(nn.Module):
    """Samples num_frames indices uniformly; short videos are loop-padded."""

    def __init__(self, num_frames: int = 6):
        super().__init__()
        self.num_frames = num_frames
        self.proj = nn.Conv3d(3, 4, 1)

    def forward(self, video):
        T = video.shape[2]
        if T < self.num_frames:  # expect: FL301
            idx = torch.arange(self.num_frames) % T
        else:
            idx = torch.linspace(0, T - 1, self.num_frames).round().long()
        return self.proj(video[:, :, idx])


@torch.compile
def random_temporal_crop(video, clip_len: int = 4):
    T = video.shape[2]
    start = random.randint(0, T - clip_len)
    return _to_unit_range(video[:, :, start:start + clip_len])  # expect: FL000 GB0213


@torch.compile
def temporal_jitter_sample(video, num_segments: int = 3):
    T = video.shape[1]
    seg_len = T // num_segments
    offsets = np.random.randint(seg_len, size=num_segments)
    idx = torch.from_numpy(np.arange(num_segments) * seg_len + offsets)
    return video[:, idx]


@torch.compile
def detect_shot_boundaries(frames, threshold: float = 0.3):
    hist = torch.stack([torch.histc(f, bins=8, min=0.0, max=1.0) for f in frames])
    hist = hist / hist.sum(-1, keepdim=True)
    dist = 0.5 * (hist[1:] - hist[:-1]).abs().sum(-1)
    cuts = torch.where(dist > threshold)[0] + 1  # expect: FL105 GB0036
    shots, prev = [], 0
    for c in cuts.tolist():  # expect: FL103 GB0033
        shots.append(frames[prev:c].mean(0))
        prev = c
    shots.append(frames[prev:].mean(0))
    return torch.stack(shots), cuts


@torch.compile
def select_keyframes(frames, feats, motion_thresh: float = 0.5):
    motion = (frames[1:] - frames[:-1]).abs().mean(dim=(1, 2, 3))
    motion = torch.cat([motion.new_ones(1), motion])
    keep = motion > motion_thresh
    return feats[keep], keep  # expect: FL105 GB0036


class IterativeFlowRefiner(nn.Module):
    """RAFT-style update loop with early exit once the flow update becomes small."""

    def __init__(self, ch: int = 3, max_iters: int = 6, tol: float = 1e-2):
        super().__init__()
        self.update = nn.Sequential(nn.Conv2d(2 * ch + 2, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 2, 3, padding=1))
        self.max_iters, self.tol = max_iters, tol

    def forward(self, img1, img2):
        B, _, H, W = img1.shape
        flow = torch.zeros(B, 2, H, W)
        for _ in range(self.max_iters):
            warped = flow_warp(img2, flow)
            delta = 0.1 * torch.tanh(self.update(torch.cat([img1, warped, flow], dim=1)))
            flow = flow + delta
            if delta.abs().max() < self.tol:  # expect: FL101 GB0170
                break
        return flow


class ClipVotingClassifier(nn.Module):
    """Classifies each clip of a long video and takes the majority vote."""

    def __init__(self, in_ch: int = 3, n_classes: int = 4, clip_len: int = 4, stride: int = 2):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv3d(in_ch, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool3d(1), nn.Flatten())
        self.head = nn.Linear(8, n_classes)
        self.clip_len, self.stride = clip_len, stride

    def forward(self, video):
        votes = Counter()
        logits_all = []
        for clip in iter_clips(video, self.clip_len, self.stride):
            logits = self.head(self.backbone(clip))
            logits_all.append(logits)
            votes[int(logits[0].argmax())] += 1  # expect: FL102 GB0124
        label, _ = votes.most_common(1)[0]
        return torch.stack(logits_all, 1).mean(1), label


class StreamingTemporalConv(nn.Module):
    """Causal temporal conv for online inference: keeps the last k-1 frames of features between calls."""

    def __init__(self, ch: int = 4, k: int = 3):
        super().__init__()
        self.conv = nn.Conv1d(ch, ch, k)
        self.k = k
        self.register_buffer("cache", torch.zeros(1, ch, k - 1))
        self.frames_seen = 0

    def forward(self, x):
        x = torch.cat([self.cache.expand(x.shape[0], -1, -1), x], dim=-1)
        self.cache.copy_(x[:1, :, -(self.k - 1):])
        self.frames_seen += x.shape[-1] - (self.k - 1)  # expect: FL302
        return self.conv(x)


class ClipPipeline(nn.Module):
    """Normalizes raw frames, runs the 3D stem and reports throughput."""

    def __init__(self):
        super().__init__()
        self.stem = Conv2Plus1D(3, 8)
        self.pool = nn.AdaptiveAvgPool3d((1, 1, 1))

    def forward(self, video):
        t0 = time.time()  # expect: FL121 GB0007
        video = _to_unit_range(video)
        feats = self.pool(self.stem(video)).flatten(1)
        fps = video.shape[0] * video.shape[2] / max(time.time() - t0, 1e-6)  # expect: FL121 GB0007
        return feats, fps


@torch.compile
def temporal_nms(segments, scores, iou_thresh: float = 0.5):
    order = scores.argsort(descending=True)
    keep = []
    while order.numel() > 0:
        i = order[0]
        keep.append(i)
        if order.numel() == 1:
            break
        s, e = segments[order[1:], 0], segments[order[1:], 1]
        inter = (torch.min(e, segments[i, 1]) - torch.max(s, segments[i, 0])).clamp(min=0)  # expect: FL000 GB0033
        union = (e - s) + (segments[i, 1] - segments[i, 0]) - inter
        order = order[1:][inter / union <= iou_thresh]
    return torch.stack(keep)


@torch.compile
def video_mixup(clips, labels, alpha: float = 0.4):
    lam = float(np.random.beta(alpha, alpha))  # expect: FL122 GB0294
    perm = torch.randperm(clips.shape[0])
    return lam * clips + (1 - lam) * clips[perm], labels, labels[perm], lam


@torch.compile
def debug_feature_stats(feats):
    print("clip features", tuple(feats.shape))  # expect: FL110 GB0059
    return F.normalize(feats.flatten(2).mean(-1), dim=-1)


def center_clip(video, clip_len: int = 4):
    T = video.shape[2]
    if T > clip_len:  # expect: FL203
        start = (T - clip_len) // 2
        video = video[:, :, start:start + clip_len]
    return video.mean(dim=(3, 4))


def export_clip_head():
    return torch.jit.trace(center_clip, torch.randn(1, 3, 8, 4, 4))


def _video(B=2, C=3, T=8, H=6, W=5, scale=1.0):
    return torch.rand(B, C, T, H, W) * scale


CASES = {
    "Conv2Plus1D": lambda: (Conv2Plus1D().eval(), (_video(),)),
    "TemporalShift": lambda: (TemporalShift(nn.Conv2d(8, 8, 3, padding=1)), (torch.randn(2 * 4, 8, 5, 6),)),
    "temporal_consensus": lambda: (temporal_consensus, (torch.randn(12, 5), 4)),
    "temporal_consensus_max": lambda: (temporal_consensus, (torch.randn(12, 5), 3, "max")),
    "flow_warp": lambda: (flow_warp, (torch.randn(2, 3, 6, 7), torch.randn(2, 2, 6, 7))),
    "forward_backward_consistency": lambda: (forward_backward_consistency, (torch.randn(2, 2, 6, 7) * 3, torch.randn(2, 2, 6, 7) * 3)),
    "DividedSpaceTimeAttention": lambda: (DividedSpaceTimeAttention(), (torch.randn(2, 3, 5, 8),)),
    "AttentionClipPooling": lambda: (AttentionClipPooling(), (torch.randn(2, 4, 8), torch.tensor([[True] * 4, [True, True, True, False]]))),
    "SlowFastSampler": lambda: (SlowFastSampler(), (_video(T=10),)),
    "UniformFrameSampler": lambda: (UniformFrameSampler(), (_video(T=9),), (_video(T=4),)),
    "random_temporal_crop": lambda: (random_temporal_crop, (_video(scale=255.0), 4)),
    "temporal_jitter_sample": lambda: (temporal_jitter_sample, (torch.randn(2, 9, 3), 3)),
    "detect_shot_boundaries": lambda: (detect_shot_boundaries, (torch.cat([torch.rand(3, 3, 4, 4) * 0.3, torch.rand(4, 3, 4, 4) * 0.3 + 0.7]),)),
    "select_keyframes": lambda: (select_keyframes, (torch.rand(6, 3, 4, 4), torch.randn(6, 8), 0.3)),
    "IterativeFlowRefiner": lambda: (IterativeFlowRefiner(tol=0.09), (torch.rand(1, 3, 6, 7), torch.rand(1, 3, 6, 7))),
    "ClipVotingClassifier": lambda: (ClipVotingClassifier(), (_video(T=8),)),
    "StreamingTemporalConv": lambda: (StreamingTemporalConv(), (torch.randn(2, 4, 5),)),
    "ClipPipeline": lambda: (ClipPipeline().eval(), (_video(scale=255.0),)),
    "temporal_nms": lambda: (temporal_nms, (torch.tensor([[0.0, 4.0], [1.0, 5.0], [6.0, 9.0], [7.5, 10.0]]), torch.tensor([0.9, 0.8, 0.7, 0.6]))),
    "video_mixup": lambda: (video_mixup, (_video(B=3), torch.tensor([0, 1, 2]))),
    "debug_feature_stats": lambda: (debug_feature_stats, (torch.randn(2, 8, 3, 4),)),
}

TRACED = {
    "center_clip": lambda: (center_clip, (torch.randn(1, 3, 8, 4, 4),)),
}
