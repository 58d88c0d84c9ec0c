"""Hand-gesture recognition for the kiosk (torch.jit.trace / torch.export): MediaPipe-style 21-point hand
skeletons, wrist-centred / palm-scaled keypoint normalisation, ST-GCN and adaptive-graph (2s-AGCN) blocks,
multi-scale temporal convolutions, joint/bone/motion streams, sliding windows over frame sequences,
confidence thresholds and the label map the UI shows."""
import logging
import math
import os
from collections import namedtuple
from dataclasses import dataclass
from functools import partial
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

logger = logging.getLogger("gesture_deploy")
logger.addHandler(logging.NullHandler())

NUM_JOINTS = 21
WRIST, MIDDLE_MCP = 0, 9
# MediaPipe Hands topology as (child, parent); children are listed 1..20 in order
HAND_BONES = [(1, 0), (2, 1), (3, 2), (4, 3), (5, 0), (6, 5), (7, 6), (8, 7), (9, 0), (10, 9), (11, 10),
              (12, 11), (13, 0), (14, 13), (15, 14), (16, 15), (17, 0), (18, 17), (19, 18), (20, 19)]
PARENTS = [WRIST] + [parent for _, parent in HAND_BONES]
GESTURES = ["none", "swipe_left", "swipe_right", "pinch", "grab", "point", "thumbs_up", "wave"]
LABEL_MAP: Dict[int, str] = dict(enumerate(GESTURES))
BACKGROUND = GESTURES.index("none")
# per-class operating points picked on the validation kiosk recordings; the rest use the default
CLASS_THRESHOLDS = {"pinch": 0.8, "grab": 0.75, "wave": 0.55}
MIN_KEYPOINT_CONF = 0.3
EPS = 1e-6
DEBUG_SHAPES = False

# ----------------------------------------------------------------------------- skeleton graph
def edge2mat(edges: Sequence[Tuple[int, int]], num_nodes: int) -> np.ndarray:
    A = np.zeros((num_nodes, num_nodes), dtype=np.float32)
    for i, j in edges:
        A[j, i] = 1.0
    return A

def normalize_digraph(A: np.ndarray) -> np.ndarray:
    deg = A.sum(0)
    inv = np.where(deg > 0, 1.0 / np.maximum(deg, EPS), 0.0).astype(np.float32)
    return A @ np.diag(inv)

class Graph:
    """The ST-GCN partitions for one hand: 'uniform' (one subset) or 'spatial' (self, inward, outward)."""
    def __init__(self, strategy: str = "spatial"):
        self.num_nodes = NUM_JOINTS
        self.strategy = strategy
        self.self_link = [(i, i) for i in range(NUM_JOINTS)]
        self.inward = list(HAND_BONES)
        self.outward = [(j, i) for i, j in HAND_BONES]
    @property
    def A(self) -> np.ndarray:
        return getattr(self, f"_{self.strategy}")()
    def _uniform(self) -> np.ndarray:
        return normalize_digraph(edge2mat(self.self_link + self.inward + self.outward, self.num_nodes))[None]
    def _spatial(self) -> np.ndarray:
        parts = [edge2mat(self.self_link, self.num_nodes)]
        parts += [normalize_digraph(edge2mat(e, self.num_nodes)) for e in (self.inward, self.outward)]
        return np.stack(parts)

# ----------------------------------------------------------------------------- keypoint utilities
def palm_size(xy: Tensor) -> Tensor:  # (..., V, 2) -> (...)
    return (xy[..., MIDDLE_MCP, :] - xy[..., WRIST, :]).norm(dim=-1)

def _fill_missing(xy: Tensor, conf: Tensor, min_conf: float) -> Tensor:
    # occluded joints come back with ~0 visibility: park them on the wrist so bone lengths stay small
    return torch.where((conf < min_conf).unsqueeze(-1), xy[..., WRIST:WRIST + 1, :], xy)

def normalize_hand(kpts: Tensor, min_conf: float = MIN_KEYPOINT_CONF, scale_by_palm: bool = True) -> Tensor:
    """(N, T, V, 3) pixel (x, y, visibility) -> wrist-centred, palm-scaled (x, y) plus visibility."""
    xy, conf = kpts[..., :2], kpts[..., 2]
    xy = _fill_missing(xy, conf, min_conf)
    xy = xy - xy[..., WRIST:WRIST + 1, :]
    if scale_by_palm:
        xy = xy / palm_size(xy).clamp_min(EPS)[..., None, None]
    return torch.cat([xy, conf.unsqueeze(-1)], dim=-1)

def mirror_left_hands(x: Tensor, is_left: Tensor) -> Tensor:  # x: (N, T, V, C); the model saw right hands
    flip = is_left.view(-1, 1, 1, 1).bool()
    return torch.cat([torch.where(flip, -x[..., :1], x[..., :1]), x[..., 1:]], dim=-1)

def _warn_if_lost(conf: Tensor, min_conf: float, where: str) -> None:
    lost = conf.amax(dim=-1) < min_conf  # (N, T): no joint above threshold -> tracker dropped the hand
    if lost.any():  # expect: FL000 GB0170; FL201
        logger.warning("%s: hand lost in %d of %d frames", where, int(lost.sum()), lost.numel())  # expect: FL000 GB0124; FL000 GB0291; FL202; FL204

def validate_keypoints(kpts: Tensor) -> None:
    assert kpts.dim() == 4 and kpts.size(-1) == 3, f"expected (N, T, {NUM_JOINTS}, 3), got {tuple(kpts.shape)}"
    if not torch.isfinite(kpts).all():  # expect: FL000 GB0170
        raise ValueError("non-finite keypoints from the hand tracker")

# ----------------------------------------------------------------------------- feature streams (N, C, T, V)
def bone_stream(x: Tensor) -> Tensor:
    return x - x[..., PARENTS]

def motion_stream(x: Tensor) -> Tensor:
    return F.pad(x[:, :, 1:] - x[:, :, :-1], (0, 0, 0, 1))

STREAMS: Dict[str, Callable[[Tensor], Tensor]] = {"joint": lambda x: x, "bone": bone_stream, "motion": motion_stream,
                                                   "bone_motion": lambda x: motion_stream(bone_stream(x))}

def finger_angles(x: Tensor) -> Tensor:
    """Angle (radians) between each bone and its parent bone: (N, C, T, V) -> (N, 1, T, V)."""
    bones = bone_stream(x[:, :2])
    cos = F.cosine_similarity(bones, bones[..., PARENTS], dim=1, eps=EPS)
    return torch.acos(cos.clamp(-1 + 1e-4, 1 - 1e-4)).unsqueeze(1)

def motion_energy(x: Tensor) -> Tensor:  # mean squared joint velocity per clip
    return motion_stream(x[:, :2]).pow(2).sum(1).mean(dim=(1, 2))

def hand_features(x: Tensor, streams: Sequence[str] = ("joint", "bone", "motion"), angles: bool = True) -> Tensor:
    feats = [STREAMS[name](x) for name in streams]
    if angles:
        feats.append(finger_angles(x) / math.pi)
    return torch.cat(feats, dim=1)

hand_features_c = torch.compile(hand_features)

# ----------------------------------------------------------------------------- windows and resampling
@torch.compile(dynamic=True)
def sliding_windows(seq: Tensor, window: int = 8, stride: int = 4) -> Tensor:
    """(N, C, T, V) -> (N * W, C, window, V); a clip shorter than one window repeats its last frame."""
    T = seq.size(2)
    if T < window:  # expect: FL203
        seq = torch.cat([seq, seq[:, :, -1:].expand(-1, -1, window - T, -1)], dim=2)
        T = window
    clips = [seq[:, :, s:s + window] for s in range(0, T - window + 1, stride)]  # expect: FL301
    return torch.stack(clips, dim=1).flatten(0, 1)

@torch.compile
def temporal_resample(x: Tensor, target_len: int = 16) -> Tensor:
    t = x.size(2)
    if t >= target_len:  # uniform frame sampling, as the SHREC / NTU loaders do  # expect: FL203; FL301
        idx = torch.linspace(0, t - 1, target_len, device=x.device).round().long()
        return x.index_select(2, idx)
    return F.interpolate(x, size=(target_len, x.size(3)), mode="bilinear", align_corners=True)

# ----------------------------------------------------------------------------- model
@dataclass
class ModelConfig:
    in_channels: int = 3
    num_classes: int = len(GESTURES)
    channels: Tuple[int, ...] = (8, 8, 16)
    strides: Tuple[int, ...] = (1, 1, 2)
    strategy: str = "spatial"
    adaptive: bool = False
    tcn: str = "plain"
    t_kernel: int = 5
    dropout: float = 0.0

class ConvTemporalGraphical(nn.Module):
    """The ST-GCN graph convolution: a 1x1 conv per partition, aggregated with the adjacency."""
    def __init__(self, in_channels: int, out_channels: int, num_subsets: int, t_kernel: int = 1):
        super().__init__()
        self.K = num_subsets
        self.conv = nn.Conv2d(in_channels, out_channels * num_subsets, (t_kernel, 1), padding=(t_kernel // 2, 0))
    def forward(self, x: Tensor, A: Tensor) -> Tensor:
        x = self.conv(x)
        n, kc, t, v = x.size()
        x = x.view(n, self.K, kc // self.K, t, v)
        return torch.einsum("nkctv,kvw->nctw", x, A).contiguous()

class AdaptiveGraphConv(nn.Module):
    """2s-AGCN: fixed partitions + a learned offset PA + a data-dependent graph from embedded similarity."""
    def __init__(self, in_channels: int, out_channels: int, A: Tensor, inter: int = 4):
        super().__init__()
        self.num_subsets = A.size(0)
        self.register_buffer("A", A.clone())
        self.PA = nn.Parameter(torch.full_like(A, 1e-6))
        self.theta = nn.ModuleList(nn.Conv2d(in_channels, inter, 1) for _ in range(self.num_subsets))
        self.phi = nn.ModuleList(nn.Conv2d(in_channels, inter, 1) for _ in range(self.num_subsets))
        self.conv_d = nn.ModuleList(nn.Conv2d(in_channels, out_channels, 1) for _ in range(self.num_subsets))
        self.bn = nn.BatchNorm2d(out_channels)
        self.down = nn.Identity() if in_channels == out_channels else \
            nn.Sequential(nn.Conv2d(in_channels, out_channels, 1), nn.BatchNorm2d(out_channels))
    def forward(self, x: Tensor, A: Optional[Tensor] = None) -> Tensor:
        N, C, T, V = x.size()
        A = (self.A if A is None else A) + self.PA
        y = None
        for i in range(self.num_subsets):
            q = self.theta[i](x).permute(0, 3, 1, 2).reshape(N, V, -1)
            k = self.phi[i](x).reshape(N, -1, V)
            C1 = torch.softmax(torch.bmm(q, k) / q.size(-1), dim=-2)
            z = self.conv_d[i](torch.matmul(x.reshape(N, C * T, V), A[i] + C1).view(N, C, T, V))
            y = z if y is None else y + z
        return F.relu(self.bn(y) + self.down(x))

class TemporalConv(nn.Module):
    def __init__(self, channels: int, kernel: int = 5, stride: int = 1, dilation: int = 1):
        super().__init__()
        pad = (kernel + (kernel - 1) * (dilation - 1) - 1) // 2
        self.conv = nn.Conv2d(channels, channels, (kernel, 1), (stride, 1), (pad, 0), (dilation, 1))
        self.bn = nn.BatchNorm2d(channels)
    def forward(self, x: Tensor) -> Tensor:
        return self.bn(self.conv(x))

class MultiScaleTCN(nn.Module):
    """MS-G3D style: dilated temporal branches plus a max-pool branch, concatenated over channels."""
    def __init__(self, channels: int, kernel: int = 3, stride: int = 1, dilations: Sequence[int] = (1, 2)):
        super().__init__()
        n_branches = len(dilations) + 1
        self.branch_channels = [channels // n_branches] * (n_branches - 1)
        self.branch_channels.append(channels - sum(self.branch_channels))
        self.branches = nn.ModuleList()
        for c, d in zip(self.branch_channels, dilations):
            self.branches.append(nn.Sequential(nn.Conv2d(channels, c, 1), nn.BatchNorm2d(c), nn.ReLU(inplace=True),
                                               TemporalConv(c, kernel, stride, d)))
        c = self.branch_channels[-1]
        self.branches.append(nn.Sequential(nn.Conv2d(channels, c, 1), nn.BatchNorm2d(c), nn.ReLU(inplace=True),
                                           nn.MaxPool2d((3, 1), (stride, 1), (1, 0)), nn.BatchNorm2d(c)))
    def forward(self, x: Tensor) -> Tensor:
        return torch.cat([branch(x) for branch in self.branches], dim=1)

TCN_TYPES: Dict[str, Callable[..., nn.Module]] = {"plain": TemporalConv, "ms": partial(MultiScaleTCN, dilations=(1, 2))}

class STGCNBlock(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, A: Tensor, cfg: ModelConfig, stride: int = 1,
                 residual: bool = True):
        super().__init__()
        self.gcn = AdaptiveGraphConv(in_channels, out_channels, A) if cfg.adaptive else \
            ConvTemporalGraphical(in_channels, out_channels, A.size(0))
        self.register_buffer("A", A.clone())
        self.edge_importance = nn.Parameter(torch.ones_like(A))
        kernel = cfg.t_kernel if cfg.tcn == "plain" else 3
        self.tcn = nn.Sequential(nn.BatchNorm2d(out_channels), nn.ReLU(inplace=True),
                                 TCN_TYPES[cfg.tcn](out_channels, kernel, stride=stride), nn.Dropout(cfg.dropout))
        if not residual:
            self.residual = lambda x: 0
        elif in_channels == out_channels and stride == 1:
            self.residual = lambda x: x
        else:
            self.residual = nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, (stride, 1)),
                                          nn.BatchNorm2d(out_channels))
    def forward(self, x: Tensor) -> Tensor:
        res = self.residual(x)
        x = self.gcn(x, self.A * self.edge_importance)
        return F.relu(self.tcn(x) + res)

class GestureNet(nn.Module):
    """ST-GCN over one hand: (N, C, T, V) -> class logits."""
    def __init__(self, cfg: Optional[ModelConfig] = None):
        super().__init__()
        self.cfg = cfg = cfg or ModelConfig()
        A = torch.from_numpy(Graph(cfg.strategy).A)
        self.data_bn = nn.BatchNorm1d(cfg.in_channels * NUM_JOINTS)
        chans = (cfg.in_channels,) + tuple(cfg.channels)
        self.blocks = nn.ModuleList(STGCNBlock(c_in, c_out, A, cfg, stride=s, residual=i > 0)
                                    for i, (c_in, c_out, s) in enumerate(zip(chans[:-1], chans[1:], cfg.strides)))
        self.drop = nn.Dropout(cfg.dropout)
        self.fc = nn.Conv2d(chans[-1], cfg.num_classes, 1)
    @property
    def num_classes(self) -> int:
        return self.cfg.num_classes
    def forward(self, x: Tensor) -> Tensor:
        N, C, T, V = x.size()
        x = self.data_bn(x.permute(0, 3, 1, 2).reshape(N, V * C, T))
        x = x.view(N, V, C, T).permute(0, 2, 3, 1).contiguous()
        for block in self.blocks:
            x = block(x)
        if DEBUG_SHAPES:
            logger.debug("features %s", tuple(x.shape))
        x = F.avg_pool2d(x, x.size()[2:])
        return self.fc(self.drop(x)).flatten(1)

class MultiStreamEnsemble(nn.Module):
    """Late fusion of one GestureNet per stream (the 2s/4s-AGCN recipe), weighted softmax average."""
    def __init__(self, streams: Sequence[str] = ("joint", "bone"), weights: Optional[Dict[str, float]] = None,
                 cfg: Optional[ModelConfig] = None, log_disagreement: bool = False):
        super().__init__()
        self.models = nn.ModuleDict({s: GestureNet(cfg) for s in streams})
        self.weights = weights or {s: 1.0 for s in streams}
        self.log_disagreement = log_disagreement
    def forward(self, x: Tensor) -> Tensor:
        per_stream = {name: model(STREAMS[name](x)).softmax(-1) for name, model in self.models.items()}
        if self.log_disagreement:
            _log_disagreement(per_stream)
        total = sum(self.weights[name] for name in per_stream)
        return sum(self.weights[name] * p for name, p in per_stream.items()) / total

def _log_disagreement(per_stream: Dict[str, Tensor]) -> None:
    top = torch.stack([p.argmax(-1) for p in per_stream.values()])
    if (top != top[0]).any():  # worth a look in the field logs: streams rarely disagree on clean tracks  # expect: FL000 GB0170
        logger.debug("streams disagree: %s", {k: p.argmax(-1).tolist() for k, p in per_stream.items()})  # expect: FL000 GB0033; FL000 GB0092

class CalibratedHead(nn.Module):
    """Temperature scaling plus a log-prior correction (the kiosk sees 'none' most of the time); the
    telemetry job re-estimates `class_prior` from the field logs and patches it on the live module."""
    def __init__(self, model: nn.Module, temperature: float = 1.5, class_prior: Optional[Sequence[float]] = None):
        super().__init__()
        self.model = model
        n = model.num_classes
        self.class_prior = np.asarray(class_prior if class_prior is not None else np.full(n, 1.0 / n), np.float32)
        self.register_buffer("log_t", torch.tensor(math.log(temperature)))
    def forward(self, x: Tensor) -> Tensor:
        logits = self.model(x) / self.log_t.exp()
        return logits - torch.from_numpy(np.log(self.class_prior / self.class_prior.sum())).to(logits)  # expect: FL203

# ----------------------------------------------------------------------------- deployment wrappers
class KeypointPreprocessor(nn.Module):
    """Tracker output (N, T, V, 3) in pixels -> model input (N, 3, T, V)."""
    def __init__(self, min_conf: float = MIN_KEYPOINT_CONF, max_frames: int = 16, check_tracking: bool = True):
        super().__init__()
        self.min_conf, self.max_frames, self.check_tracking = min_conf, max_frames, check_tracking
    def forward(self, kpts: Tensor, is_left: Optional[Tensor] = None) -> Tensor:
        if kpts.size(1) > self.max_frames:  # only the most recent frames matter for the live gesture  # expect: FL203; FL301
            kpts = kpts[:, -self.max_frames:]
        if self.check_tracking:
            _warn_if_lost(kpts[..., 2], self.min_conf, type(self).__name__)
        x = normalize_hand(kpts, self.min_conf)
        if is_left is not None:
            x = mirror_left_hands(x, is_left)
        return x.permute(0, 3, 1, 2).contiguous()

def _background_logits(n: int, num_classes: int, like: Tensor) -> Tensor:
    logits = like.new_full((n, num_classes), -10.0)
    logits[:, BACKGROUND] = 10.0
    return logits

class MotionGate(nn.Module):
    """Skips the classifier when the hand is (nearly) still -- most frames on a kiosk camera are idle."""
    def __init__(self, model: GestureNet, min_energy: float = 0.05):
        super().__init__()
        self.model, self.min_energy = model, min_energy
    def forward(self, x: Tensor) -> Tensor:
        energy = motion_energy(x)
        if energy.max() < self.min_energy:  # expect: FL000 GB0170; FL201
            return _background_logits(x.size(0), self.model.num_classes, x)
        return self.model(x)

def rotate_xy(x: Tensor, degrees: float) -> Tensor:  # in-plane rotation of the (x, y) channels
    c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    R = x.new_tensor([[c, -s], [s, c]])
    return torch.cat([torch.einsum("ij,njtv->nitv", R, x[:, :2]), x[:, 2:]], dim=1)

def hflip(x: Tensor) -> Tensor:
    return torch.cat([-x[:, :1], x[:, 1:]], dim=1)

class TTAWrapper(nn.Module):
    def __init__(self, model: nn.Module, angles: Sequence[float] = (-10.0, 10.0), flip: bool = False,
                 early_exit: Optional[float] = None):
        super().__init__()
        self.model, self.early_exit = model, early_exit
        self.views: List[Callable[[Tensor], Tensor]] = [partial(rotate_xy, degrees=a) for a in angles]
        if flip:  # only for symmetric label sets: swipe_left/right swap under a flip
            self.views.append(hflip)
    def forward(self, x: Tensor) -> Tensor:
        probs = self.model(x).softmax(-1)
        if self.early_exit is not None and bool((probs.amax(-1) > self.early_exit).all()):  # expect: FL000 GB0124
            return probs  # already confident on the plain view: skip the others (most of the kiosk latency)
        return torch.stack([probs] + [self.model(view(x)).softmax(-1) for view in self.views]).mean(0)

class GestureStreamer(nn.Module):
    """Online demo: keeps the last `window` frames and an EMA of the class probabilities between calls."""
    def __init__(self, model: GestureNet, window: int = 8, alpha: float = 0.5):
        super().__init__()
        self.model, self.window, self.alpha = model, window, alpha
        self.register_buffer("frames", torch.zeros(1, 3, window, NUM_JOINTS))
        self.register_buffer("ema", torch.full((1, model.num_classes), 1.0 / model.num_classes))
        self.frames_seen = 0
    @property
    def warmed_up(self) -> bool:
        return self.frames_seen >= self.window
    def forward(self, chunk: Tensor) -> Tensor:  # (1, 3, t, V) frames from the camera thread
        t = chunk.size(2)
        self.frames.copy_(torch.cat([self.frames[:, :, t:], chunk], dim=2))
        self.frames_seen += t  # expect: FL302
        if not self.warmed_up:
            return self.ema
        probs = self.model(self.frames).softmax(-1)
        self.ema.mul_(self.alpha).add_(probs, alpha=1 - self.alpha)
        return self.ema

# ----------------------------------------------------------------------------- decisions
def threshold_vector(default: float, names: Sequence[str] = GESTURES) -> Tensor:
    return torch.tensor([CLASS_THRESHOLDS.get(n, default) for n in names])

@torch.compile
def apply_thresholds(probs: Tensor, default: float = 0.5) -> Tuple[Tensor, Tensor]:
    conf, idx = probs.max(-1)
    accept = conf >= threshold_vector(default).to(probs.device)[idx]
    return torch.where(accept, idx, torch.full_like(idx, BACKGROUND)), conf

@torch.compile
def window_vote(window_logits: Tensor, n_windows: int) -> Tensor:
    """Majority vote over the windows of each clip; ties go to the higher mean probability."""
    probs = window_logits.softmax(-1).view(-1, n_windows, window_logits.size(-1))
    votes = torch.stack([torch.bincount(v, minlength=probs.size(-1)) for v in probs.argmax(-1)]).float()  # expect: FL000 GB0036
    return (votes + probs.mean(1)).argmax(-1)

@torch.compile
def decode_predictions(logits: Tensor, threshold: float = 0.5, label_map: Dict[int, str] = LABEL_MAP,
                       temperature: float = 1.0) -> List[Tuple[str, float]]:
    conf, idx = F.softmax(logits / temperature, dim=-1).max(-1)
    results = []
    for c, i in zip(conf.tolist(), idx.tolist()):  # expect: FL000 GB0033; FL000 GB0109
        name = label_map.get(i, "<unknown>") if c >= threshold else label_map[BACKGROUND]
        results.append((name, round(c, 4)))
    return results

GestureEvent = namedtuple("GestureEvent", "label start end score")

def _runs_to_events(labels: Tensor, conf: Tensor, min_len: int) -> List[GestureEvent]:
    events, start = [], 0
    lab = labels.tolist()  # expect: FL000 GB0033
    for t in range(1, len(lab) + 1):
        if t == len(lab) or lab[t] != lab[start]:
            if lab[start] != BACKGROUND and t - start >= min_len:
                events.append(GestureEvent(LABEL_MAP[lab[start]], start, t, float(conf[start:t].mean())))  # expect: FL000 GB0124
            start = t
    return events

@torch.compile
def detect_gesture_events(frame_probs: Tensor, threshold: float = 0.4, min_len: int = 3) -> List[GestureEvent]:
    """Per-frame probabilities (T, K) of a continuous stream -> gesture segments (start, end, score)."""
    smoothed = F.avg_pool1d(frame_probs.t().unsqueeze(0), 3, 1, 1, count_include_pad=False)[0].t()
    conf, labels = smoothed.max(-1)
    labels = torch.where(conf >= threshold, labels, torch.full_like(labels, BACKGROUND))
    return _runs_to_events(labels, conf, min_len)

def _log_prediction(labels: Tensor, conf: Tensor) -> None:
    for i, (label, c) in enumerate(zip(labels.tolist(), conf.tolist())):  # expect: FL000 GB0033; FL000 GB0109; FL202
        logger.info("clip %d: %s (%.2f)", i, LABEL_MAP[label], c)  # expect: FL204

class GesturePipeline(nn.Module):
    """What the kiosk runs per clip: keypoints -> windows -> ST-GCN -> averaged, thresholded decision."""
    def __init__(self, model: Optional[GestureNet] = None, window: int = 8, stride: int = 4,
                 threshold: float = 0.5, callbacks: Sequence[Callable[[Tensor, Tensor], None]] = ()):
        super().__init__()
        self.pre = KeypointPreprocessor(check_tracking=False)
        self.model = model if model is not None else GestureNet()
        self.window, self.stride, self.threshold = window, stride, threshold
        self.callbacks = list(callbacks)
    def forward(self, kpts: Tensor) -> Tuple[Tensor, Tensor]:
        x = self.pre(kpts)
        clips = sliding_windows(x, self.window, self.stride)
        probs = self.model(clips).softmax(-1).view(x.size(0), -1, self.model.num_classes).mean(1)
        labels, conf = apply_thresholds(probs, self.threshold)
        for callback in self.callbacks:
            callback(labels, conf)
        return labels, conf

class SequenceCleaner(nn.Module):
    """Enrolment path for user-recorded gestures: drop frames where the tracker lost the hand, resample."""
    def __init__(self, target_len: int = 16, percentile: Optional[float] = None):
        super().__init__()
        self.target_len, self.percentile = target_len, percentile
    def forward(self, kpts: Tensor) -> Tensor:  # (T, V, 3): one recording
        validate_keypoints(kpts.unsqueeze(0))
        conf = kpts[..., 2].mean(-1)
        floor = MIN_KEYPOINT_CONF if self.percentile is None else torch.quantile(conf, self.percentile / 100.0)
        kpts = kpts[conf >= floor]  # expect: FL000 GB0036
        x = normalize_hand(kpts.unsqueeze(0)).permute(0, 3, 1, 2)
        return temporal_resample(x, self.target_len)

# ----------------------------------------------------------------------------- export
def export_for_deployment(out_dir: str, cfg: Optional[ModelConfig] = None, T: int = 16) -> Dict[str, object]:
    os.makedirs(out_dir, exist_ok=True)
    kpts = torch.rand(1, T, NUM_JOINTS, 3) * 200
    x = KeypointPreprocessor(check_tracking=False)(kpts)
    model = GestureNet(cfg).eval()  # the wrappers read .num_classes, which a ScriptModule does not keep
    traced = {
        "stgcn": torch.jit.trace(GestureNet(cfg).eval(), (x,)),
        "preprocess": torch.jit.trace(KeypointPreprocessor().eval(), (kpts,)),
        "calibrated": torch.jit.trace(CalibratedHead(model).eval(), (x,)),
        "gate": torch.jit.trace(MotionGate(model).eval(), (x,)),
        "tta": torch.jit.trace(TTAWrapper(model).eval(), (x,)),
        "pipeline": torch.jit.trace(GesturePipeline(model, callbacks=[_log_prediction]).eval(), (kpts,)),
        "windows": torch.jit.trace(sliding_windows, (x,)),
    }
    programs = {
        "features": torch.export.export(hand_features, (x,)),
        "resample": torch.export.export(temporal_resample, (x[:, :, :12],)),
        "thresholds": torch.export.export(apply_thresholds, (torch.rand(4, len(GESTURES)).softmax(-1),)),
        "ensemble": torch.export.export(MultiStreamEnsemble(cfg=cfg).eval(), (x,)),
    }
    for name, module in traced.items():
        module.save(os.path.join(out_dir, f"{name}.pt"))
    for name, program in programs.items():
        torch.export.save(program, os.path.join(out_dir, f"{name}.pt2"))
    logger.info("exported %d TorchScript modules and %d programs to %s", len(traced), len(programs), out_dir)
    return {**traced, **programs}

# ----------------------------------------------------------------------------- cases
def _gen(k: int) -> torch.Generator:
    return torch.Generator().manual_seed(k)

_randn = lambda *shape, k=0: torch.randn(*shape, generator=_gen(k))

def _hand_track(n: int, t: int, k: int = 0, lost_frames: Sequence[int] = (), still: bool = False) -> Tensor:
    g = _gen(k)
    template = torch.randn(NUM_JOINTS, 2, generator=g) * 20 + 100
    drift = torch.zeros(n, t, 1, 2) if still else torch.linspace(0, 40, t).view(1, t, 1, 1).expand(n, t, 1, 2)
    xy = template + drift + torch.randn(n, t, NUM_JOINTS, 2, generator=g) * (0.01 if still else 2.0)
    conf = torch.rand(n, t, NUM_JOINTS, generator=g) * 0.5 + 0.5
    for f in lost_frames:
        conf[:, f] = 0.05
    return torch.cat([xy, conf.unsqueeze(-1)], dim=-1)

def _model_input(n: int, t: int, k: int = 0, still: bool = False) -> Tensor:
    return normalize_hand(_hand_track(n, t, k, still=still)).permute(0, 3, 1, 2).contiguous()

_net = lambda cfg=None: GestureNet(cfg).eval()
_AGCN = ModelConfig(adaptive=True, tcn="ms", channels=(6, 6, 12))
_UNIFORM_A = torch.from_numpy(Graph("uniform").A)

CASES = {
    "GestureNet": lambda: (_net(), (_model_input(2, 12),)),
    "GestureNet_agcn": lambda: (_net(_AGCN), (_model_input(2, 12, k=1),)),
    "STGCNBlock": lambda: (STGCNBlock(3, 6, _UNIFORM_A, ModelConfig()).eval(), (_model_input(2, 10, k=2),)),
    "MultiStreamEnsemble": lambda: (MultiStreamEnsemble(("joint", "bone", "bone_motion"), log_disagreement=True)
                                    .eval(), (_model_input(2, 12, k=3),)),
    "CalibratedHead": lambda: (CalibratedHead(_net(), 1.5, [0.6] + [0.4 / 7] * 7).eval(), (_model_input(3, 10),)),
    "KeypointPreprocessor": lambda: (KeypointPreprocessor(), (_hand_track(2, 14, lost_frames=(3, 4)),),
                                     (_hand_track(2, 20, lost_frames=(3, 4)),)),
    "KeypointPreprocessor_left": lambda: (KeypointPreprocessor(check_tracking=False),
                                          (_hand_track(2, 12, k=4), torch.tensor([1, 0]))),
    "MotionGate_still": lambda: (MotionGate(_net()).eval(), (_model_input(2, 12, k=5, still=True),)),
    "MotionGate_moving": lambda: (MotionGate(_net()).eval(), (_model_input(2, 12, k=6),)),
    "TTAWrapper": lambda: (TTAWrapper(_net(), flip=True, early_exit=0.2).eval(), (_model_input(2, 10, k=7),)),
    "GestureStreamer": lambda: (GestureStreamer(_net()).eval(), (_model_input(1, 5, k=8),)),
    "GesturePipeline": lambda: (GesturePipeline(_net(), callbacks=[_log_prediction]).eval(), (_hand_track(2, 16, 9),)),
    "SequenceCleaner": lambda: (SequenceCleaner(12, percentile=20.0), (_hand_track(1, 18, k=10, lost_frames=(2,))[0],)),
    "sliding_windows": lambda: (sliding_windows, (_model_input(2, 20),), (_model_input(2, 26),)),
    "temporal_resample": lambda: (temporal_resample, (_model_input(2, 20, k=1),), (_model_input(2, 10, k=1),)),
    "hand_features": lambda: (hand_features_c, (_model_input(2, 12, k=11),)),
    "apply_thresholds": lambda: (apply_thresholds, ((_randn(5, len(GESTURES)) * 3).softmax(-1), 0.4)),
    "window_vote": lambda: (window_vote, (_randn(6, len(GESTURES), k=12), 3)),
    "decode_predictions": lambda: (decode_predictions, (_randn(4, len(GESTURES), k=13) * 3, 0.5)),
    "detect_gesture_events": lambda: (detect_gesture_events, ((_randn(24, len(GESTURES), k=14) + 4 * F.one_hot(
        torch.tensor([0] * 6 + [3] * 10 + [0] * 8), len(GESTURES))).softmax(-1),)),
}

TRACED = {
    "KeypointPreprocessor": lambda: (KeypointPreprocessor().eval(), (_hand_track(1, 12, lost_frames=(5,)),)),
    "GestureNet": lambda: (_net(), (_model_input(1, 12),)),
    "CalibratedHead": lambda: (CalibratedHead(_net()).eval(), (_model_input(1, 12, k=1),)),
    "MotionGate": lambda: (MotionGate(_net()).eval(), (_model_input(1, 12, k=2),)),
    "TTAWrapper": lambda: (TTAWrapper(_net()).eval(), (_model_input(1, 12, k=3),)),
    "GesturePipeline": lambda: (GesturePipeline(_net(), callbacks=[_log_prediction]).eval(), (_hand_track(1, 16, 4),)),
    "sliding_windows": lambda: (sliding_windows, (_model_input(1, 16, k=5),)),
    "hand_features": lambda: (hand_features, (_model_input(1, 12, k=6),)),
    "temporal_resample": lambda: (temporal_resample, (_model_input(1, 12, k=7),)),
    "apply_thresholds": lambda: (apply_thresholds, ((_randn(3, len(GESTURES), k=8) * 3).softmax(-1),)),
    "MultiStreamEnsemble": lambda: (MultiStreamEnsemble().eval(), (_model_input(1, 12, k=9),)),
}
