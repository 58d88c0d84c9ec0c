"""Motion forecasting for autonomous driving in the style of VectorNet / LaneGCN / MultiPath / MTR
repos and Argoverse / Waymo Kaggle kernels: history and lane-polyline encoders, interaction attention
with padding masks, multi-modal decoders with mode scores and anchors, WTA losses, minADE / minFDE
metrics, endpoint NMS, agent-frame transforms and a numpy constant-acceleration baseline."""
import functools
import logging
import math
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("motion_forecasting")
logger.addHandler(logging.NullHandler())

HIST_STEPS = 5
FUT_STEPS = 6
DT = 0.1
NUM_HIST_FEATS = 6  # x, y, vx, vy, speed, heading
LANE_FEATS = 6  # start xy, end xy, direction xy
MISS_THRESHOLD = 2.0
MAX_AGENTS = 6
EVAL_HORIZONS = (3, 6, 8)  # steps at which ADE / FDE are reported
DEBUG_NAN_CHECKS = True
EPS = 1e-6


@dataclass
class ForecastConfig:
    hidden: int = 16
    map_hidden: int = 8
    num_modes: int = 4
    fut_steps: int = FUT_STEPS
    num_subgraph_layers: int = 2
    activation: str = "relu"
    use_layernorm: bool = True
    score_temperature: float = 1.0
    loss_weights: Dict[str, float] = field(default_factory=lambda: {"reg": 1.0, "cls": 0.5})

    @property
    def traj_dim(self) -> int:
        return self.fut_steps * 2


_ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "silu": nn.SiLU}


def get_activation(name: str) -> nn.Module:
    try:
        return _ACTIVATIONS[name]()
    except KeyError:
        logger.warning("unknown activation %s, falling back to relu", name)
        return nn.ReLU()


def build_mlp(in_dim: int, hidden: int, out_dim: int, act: str = "relu", norm: bool = True) -> nn.Sequential:
    layers: List[nn.Module] = [nn.Linear(in_dim, hidden)]
    if norm:
        layers.append(nn.LayerNorm(hidden))
    layers += [get_activation(act), nn.Linear(hidden, out_dim)]
    return nn.Sequential(*layers)


# --------------------------------------------------------------------------- geometry

def wrap_angle(theta: torch.Tensor) -> torch.Tensor:
    return torch.remainder(theta + math.pi, 2 * math.pi) - math.pi


def rotation_matrix(yaw: torch.Tensor) -> torch.Tensor:
    c, s = torch.cos(yaw), torch.sin(yaw)
    return torch.stack([torch.stack([c, -s], -1), torch.stack([s, c], -1)], -2)


def _broadcast_pose(rot, origin, ndim):
    for _ in range(ndim - origin.dim()):
        origin = origin.unsqueeze(-2)
        rot = rot.unsqueeze(-3)
    return rot, origin


def to_agent_frame(xy, origin, yaw):
    rot, origin = _broadcast_pose(rotation_matrix(-yaw), origin, xy.dim())
    return ((xy - origin).unsqueeze(-2) @ rot.transpose(-1, -2)).squeeze(-2)


def to_global_frame(xy, origin, yaw):
    rot, origin = _broadcast_pose(rotation_matrix(yaw), origin, xy.dim())
    return (xy.unsqueeze(-2) @ rot.transpose(-1, -2)).squeeze(-2) + origin


def estimate_heading(hist, min_disp=0.05):
    disp = hist[..., -1, :] - hist[..., -2, :]
    yaw = torch.atan2(disp[..., 1], disp[..., 0])
    return torch.where(disp.norm(dim=-1) < min_disp, torch.zeros_like(yaw), yaw)


def agent_centric(hist, mask):
    """Each agent in its own frame: last observed position at the origin, heading along +x."""
    origin = hist[..., -1, :]
    yaw = wrap_angle(estimate_heading(hist))
    local = to_agent_frame(hist, origin, yaw)
    return local * mask.unsqueeze(-1), origin, yaw


def align_history(hist, mask, steps=HIST_STEPS):
    t = hist.shape[-2]
    if t >= steps:  # expect: FL301
        return hist[..., t - steps:, :], mask[..., t - steps:]
    pad = steps - t
    return F.pad(hist, (0, 0, pad, 0)), F.pad(mask, (pad, 0), value=False)


def masked_mean(x, mask, dim):
    mask = mask.to(x.dtype)
    return (x * mask).sum(dim) / mask.sum(dim).clamp_min(1.0)


def masked_max_pool(x, mask, dim):
    dim = dim % x.dim()
    x = x.masked_fill(~mask.unsqueeze(-1), torch.finfo(x.dtype).min)
    pooled = x.max(dim=dim).values
    return torch.where(mask.any(dim=dim).unsqueeze(-1), pooled, torch.zeros_like(pooled))


def gather_modes(traj, idx):
    """traj [B, N, K, T, 2], idx [B, N, M] -> [B, N, M, T, 2]."""
    idx = idx[..., None, None].expand(-1, -1, -1, *traj.shape[-2:])
    return traj.gather(2, idx)


def displacement_errors(traj, gt, gt_mask):
    return (traj - gt.unsqueeze(2)).norm(dim=-1) * gt_mask.unsqueeze(2)


def history_features(hist, mask, dt=DT):
    vel = torch.diff(hist, dim=-2, prepend=hist[..., :1, :]) / dt
    speed = vel.norm(dim=-1, keepdim=True)
    heading = torch.atan2(vel[..., 1], vel[..., 0]).unsqueeze(-1)
    return torch.cat([hist, vel, speed, heading], -1) * mask.unsqueeze(-1)


# --------------------------------------------------------------------------- encoders

class AgentHistoryEncoder(nn.Module):
    """LaneGCN-style: per-step MLP, temporal 1-D conv, masked max-pool over time."""

    def __init__(self, cfg: ForecastConfig = ForecastConfig(), in_feats: int = NUM_HIST_FEATS):
        super().__init__()
        self.cfg = cfg
        self.embed = build_mlp(in_feats, cfg.hidden, cfg.hidden, cfg.activation, cfg.use_layernorm)
        self.temporal = nn.Conv1d(cfg.hidden, cfg.hidden, kernel_size=3, padding=1)

    def _temporal(self, x):
        return self.temporal(x.transpose(1, 2)).transpose(1, 2)

    def forward(self, hist, mask):
        feats = history_features(hist, mask)
        b, n, t, _ = feats.shape
        x = self.embed(feats).reshape(b * n, t, -1)
        x = F.relu(self._temporal(x)).reshape(b, n, t, -1)
        return masked_max_pool(x, mask, dim=2)


class GRUHistoryEncoder(AgentHistoryEncoder):
    def __init__(self, cfg: ForecastConfig = ForecastConfig(), in_feats: int = NUM_HIST_FEATS):
        super().__init__(cfg, in_feats)
        self.temporal = nn.GRU(cfg.hidden, cfg.hidden, batch_first=True)

    def _temporal(self, x):
        out, _ = self.temporal(x)  # expect: FL000 GB0014
        return out


class PolylineSubgraph(nn.Module):
    """VectorNet subgraph: MLP on vectors, max-pool, concat pooled back, repeat."""

    def __init__(self, in_dim: int, hidden: int, num_layers: int = 2):
        super().__init__()
        self.hidden = hidden
        self.layers = nn.ModuleList(
            build_mlp(in_dim if i == 0 else 2 * hidden, hidden, hidden) for i in range(num_layers))

    def forward(self, vectors, mask):
        x = vectors
        for layer in self.layers:
            x = layer(x)
            pooled = masked_max_pool(x, mask, dim=-2)
            x = torch.cat([x, pooled.unsqueeze(-2).expand_as(x)], -1)
        return masked_max_pool(x, mask, dim=-2)


def lane_vectors(centerlines, lane_mask, origin, yaw):
    """[B, P, V, 2] centerline points -> [B, P, V-1, 6] vectors in the target agent's frame."""
    pts = to_agent_frame(centerlines, origin, yaw)
    start, end = pts[..., :-1, :], pts[..., 1:, :]
    direction = F.normalize(end - start, dim=-1, eps=EPS)
    vmask = lane_mask[..., :-1] & lane_mask[..., 1:]
    return torch.cat([start, end, direction], -1), vmask


class MapEncoder(nn.Module):
    def __init__(self, cfg: ForecastConfig = ForecastConfig(), drop_empty: bool = True):
        super().__init__()
        self.subgraph = PolylineSubgraph(LANE_FEATS, cfg.map_hidden, cfg.num_subgraph_layers)
        self.proj = nn.Linear(2 * cfg.map_hidden, cfg.hidden)
        self.drop_empty = drop_empty

    def _encode_nonempty(self, vec, vmask):
        # skip polylines without a single valid vector: most lanes are padding in sparse scenes
        valid = vmask.any(-1)
        out = vec.new_zeros(*valid.shape, 2 * self.subgraph.hidden)
        out[valid] = self.subgraph(vec[valid], vmask[valid])  # expect: FL000 GB0036
        return out

    def forward(self, centerlines, lane_mask, origin, yaw):
        vec, vmask = lane_vectors(centerlines, lane_mask, origin, yaw)
        enc = self._encode_nonempty(vec, vmask) if self.drop_empty else self.subgraph(vec, vmask)
        return self.proj(enc), vmask.any(-1)


class InteractionEncoder(nn.Module):
    """Agent-agent self-attention with relative-position embeddings and key padding."""

    def __init__(self, cfg: ForecastConfig = ForecastConfig(), num_heads: int = 2):
        super().__init__()
        self.pos_embed = build_mlp(2, cfg.hidden, cfg.hidden, cfg.activation)
        self.attn = nn.MultiheadAttention(cfg.hidden, num_heads, batch_first=True)
        self.norm = nn.LayerNorm(cfg.hidden)

    def forward(self, feats, positions, agent_mask):
        assert agent_mask[:, 0].all(), "the target agent (index 0) must be observed"
        rel = positions - positions[:, :1]
        x = feats + self.pos_embed(rel)
        out, _ = self.attn(x, x, x, key_padding_mask=~agent_mask, need_weights=False)
        return self.norm(feats + out) * agent_mask.unsqueeze(-1)


class AgentFeatureNormalizer(nn.Module):
    """Running mean/var of agent embeddings, with a cumulative-average warm-up."""

    def __init__(self, dim: int = 16, momentum: float = 0.1, warmup_steps: int = 3):
        super().__init__()
        self.register_buffer("running_mean", torch.zeros(dim))
        self.register_buffer("running_var", torch.ones(dim))
        self.momentum, self.warmup_steps = momentum, warmup_steps
        self.num_updates = 0

    def forward(self, x, mask):
        if self.training:
            w = mask.unsqueeze(-1).to(x.dtype)
            count = w.sum((0, 1)).clamp_min(1.0)
            mean = (x * w).sum((0, 1)) / count
            var = ((x - mean) ** 2 * w).sum((0, 1)) / count
            m = self.momentum if self.num_updates >= self.warmup_steps else 1.0 / (self.num_updates + 1)
            with torch.no_grad():
                self.running_mean.mul_(1 - m).add_(m * mean)
                self.running_var.mul_(1 - m).add_(m * var)
            self.num_updates += 1  # expect: FL302
        return (x - self.running_mean) / (self.running_var + EPS).sqrt()


# --------------------------------------------------------------------------- decoders

class MultiModalDecoder(nn.Module):
    def __init__(self, cfg: ForecastConfig = ForecastConfig()):
        super().__init__()
        self.cfg = cfg
        self.traj_head = build_mlp(cfg.hidden, cfg.hidden, cfg.num_modes * cfg.traj_dim, cfg.activation)
        self.score_head = build_mlp(cfg.hidden, cfg.hidden, cfg.num_modes, cfg.activation)
        self.predict_deltas = True

    def forward(self, agent_feats, agent_mask=None):
        b, n, _ = agent_feats.shape
        traj = self.traj_head(agent_feats).view(b, n, self.cfg.num_modes, self.cfg.fut_steps, 2)
        if self.predict_deltas:
            traj = traj.cumsum(-2)
        logits = self.score_head(agent_feats) / self.cfg.score_temperature
        if agent_mask is not None:
            logits = logits.masked_fill(~agent_mask.unsqueeze(-1), 0.0)
        modes = torch.distributions.Categorical(logits=logits)
        return {"traj": traj, "logits": logits, "scores": modes.probs, "entropy": modes.entropy()}


def make_anchors(num_modes: int, fut_steps: int, speed: float = 8.0) -> torch.Tensor:
    """Constant-speed arcs with curvatures spread over [-0.2, 0.2] (a cheap k-means stand-in)."""
    t = torch.arange(1, fut_steps + 1, dtype=torch.float32) * DT
    anchors = []
    for kappa in np.linspace(-0.2, 0.2, num_modes):
        kappa, s = kappa if abs(kappa) > 1e-3 else 1e-3, speed * t  # straight line in the limit
        anchors.append(torch.stack([torch.sin(kappa * s) / kappa, (1 - torch.cos(kappa * s)) / kappa], -1))
    return torch.stack(anchors)


def match_anchors(gt, anchors):
    dist = (gt.unsqueeze(-3) - anchors).norm(dim=-1).mean(-1)
    return dist.argmin(-1)


def _log_anchor_usage(anchor_idx, num_anchors):
    usage = torch.bincount(anchor_idx.flatten(), minlength=num_anchors)  # expect: FL000 GB0036
    logger.debug("anchor usage: %s", usage.tolist())  # expect: FL000 GB0033; FL000 GB0291


class AnchorDecoder(MultiModalDecoder):
    """MultiPath: fixed anchors plus per-anchor offsets; anchors matched to the ground truth."""

    def __init__(self, cfg: ForecastConfig = ForecastConfig()):
        super().__init__(cfg)
        self.register_buffer("anchors", make_anchors(cfg.num_modes, cfg.fut_steps))
        self.predict_deltas = False

    def forward(self, agent_feats, agent_mask=None, gt: Optional[torch.Tensor] = None):
        out = super().forward(agent_feats, agent_mask)
        out["traj"] = out["traj"] + self.anchors
        if gt is not None:
            out["anchor_idx"] = match_anchors(gt, self.anchors)
            _log_anchor_usage(out["anchor_idx"], self.anchors.shape[0])
        return out


class SceneForecaster(nn.Module):
    """Agent-centric history encoding + interaction + multi-modal decoding, output in world frame."""

    def __init__(self, cfg: ForecastConfig = ForecastConfig()):
        super().__init__()
        self.encoder = AgentHistoryEncoder(cfg)
        self.interaction = InteractionEncoder(cfg)
        self.decoder = MultiModalDecoder(cfg)

    def forward(self, hist, mask):
        hist, mask = align_history(hist, mask)
        local, origin, yaw = agent_centric(hist, mask)
        agent_mask = mask[..., -1]
        feats = self.interaction(self.encoder(local, mask), origin, agent_mask)
        pred = self.decoder(feats, agent_mask)
        pred["traj"] = to_global_frame(pred["traj"], origin, yaw)
        return pred


# --------------------------------------------------------------------------- losses / metrics

def _reduction(name: str) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    return {"mean": lambda x, valid: x.sum() / max(int(valid.sum()), 1), "sum": lambda x, valid: x.sum(),  # expect: FL000 GB0124
            "none": lambda x, valid: x}[name]


class WTALoss(nn.Module):
    """Winner-takes-all regression on the best mode plus cross-entropy on its score."""

    def __init__(self, cfg: ForecastConfig = ForecastConfig(), reduction: str = "mean"):
        super().__init__()
        self.weights = dict(cfg.loss_weights)
        self.reduce = _reduction(reduction)

    def forward(self, pred, gt, gt_mask):
        traj, logits = pred["traj"], pred["logits"]
        assert traj.shape[-2] == gt.shape[-2], "horizon mismatch"
        ade = masked_mean(displacement_errors(traj, gt, gt_mask), gt_mask.unsqueeze(2), dim=-1)
        best = ade.argmin(-1)
        best_traj = gather_modes(traj, best.unsqueeze(-1)).squeeze(2)
        reg = masked_mean(F.smooth_l1_loss(best_traj, gt, reduction="none").sum(-1), gt_mask, dim=-1)
        cls = F.cross_entropy(logits.flatten(0, 1), best.flatten(), reduction="none").view_as(best)
        loss, valid = self.weights["reg"] * reg + self.weights["cls"] * cls, gt_mask.any(-1)
        return self.reduce(loss * valid, valid)  # "mean": over agents with a ground-truth future


def last_valid_error(err, gt_mask):
    steps = torch.arange(gt_mask.shape[-1], device=gt_mask.device)
    last = (gt_mask * steps).argmax(-1)
    return err.gather(-1, last[:, :, None, None].expand(-1, -1, err.shape[2], 1)).squeeze(-1)


@torch.compile
def min_ade_fde(traj, gt, gt_mask):
    err = displacement_errors(traj, gt, gt_mask)
    t = err.shape[-1]
    out = {}
    for h in EVAL_HORIZONS:
        if h > t:  # expect: FL301
            break
        sub = err[..., :h]
        out[f"minADE@{h}"] = masked_mean(sub, gt_mask[:, :, None, :h], dim=-1).min(-1).values.mean()
        out[f"minFDE@{h}"] = sub[..., h - 1].min(-1).values.mean()
    return out


def _to_float_dict(stats: Dict[str, torch.Tensor]) -> Dict[str, float]:
    return {name: float(value) for name, value in stats.items()}  # expect: FL000 GB0092; FL000 GB0124


@torch.compile
def forecast_metrics(traj, scores, gt, gt_mask, miss_threshold=MISS_THRESHOLD):
    err = displacement_errors(traj, gt, gt_mask)
    valid = gt_mask.any(-1)
    min_fde, best = last_valid_error(err, gt_mask).min(-1)
    min_ade = masked_mean(err, gt_mask.unsqueeze(2), dim=-1).min(-1).values
    best_prob = scores.gather(-1, best.unsqueeze(-1)).squeeze(-1)
    stats = {
        "minADE": masked_mean(min_ade, valid, dim=(0, 1)),
        "minFDE": masked_mean(min_fde, valid, dim=(0, 1)),
        "MR": masked_mean((min_fde > miss_threshold).float(), valid, dim=(0, 1)),
        "brier-minFDE": masked_mean(min_fde + (1.0 - best_prob) ** 2, valid, dim=(0, 1)),
    }
    return _to_float_dict(stats)


# --------------------------------------------------------------------------- post-processing

def _greedy_endpoint_nms(endpoints, scores, num_keep, dist_thresh):
    keep: List[int] = []
    for idx in scores.argsort(descending=True).tolist():  # expect: FL000 GB0033
        if len(keep) == num_keep:
            break
        if keep and (endpoints[keep] - endpoints[idx]).norm(dim=-1).min() < dist_thresh:  # expect: FL000 GB0170
            continue
        keep.append(idx)
    while len(keep) < num_keep:  # not enough distinct modes: repeat the best one
        keep.append(keep[0])
    return keep


@torch.compile
def select_diverse_modes(traj, scores, num_keep=3, dist_thresh=1.0):
    """Reduce K candidate modes to num_keep with endpoint NMS (DenseTNT / MTR style)."""
    b, n, k = scores.shape
    flat_traj, flat_scores = traj.flatten(0, 1), scores.flatten(0, 1)
    kept = [_greedy_endpoint_nms(flat_traj[i, :, -1], flat_scores[i], num_keep, dist_thresh)
            for i in range(b * n)]
    idx = torch.tensor(kept, device=traj.device).view(b, n, num_keep)
    sel_scores = scores.gather(-1, idx)
    return gather_modes(traj, idx), sel_scores / sel_scores.sum(-1, keepdim=True)


@torch.compile
def select_nearby_agents(hist, mask, max_agents=MAX_AGENTS):
    """Keep the target agent (index 0) and its closest max_agents - 1 neighbours."""
    n = hist.shape[1]
    if n <= max_agents:  # expect: FL301
        return hist, mask
    last = hist[:, :, -1]
    dist = (last - last[:, :1]).norm(dim=-1).masked_fill(~mask[:, :, -1], float("inf"))
    dist[:, 0] = -1.0
    idx = dist.topk(max_agents, dim=1, largest=False).indices.sort(dim=1).values
    hist = hist.gather(1, idx[:, :, None, None].expand(-1, -1, *hist.shape[2:]))
    return hist, mask.gather(1, idx[:, :, None].expand(-1, -1, mask.shape[2]))


def nan_guard_hook(pred, meta):
    if DEBUG_NAN_CHECKS and not torch.isfinite(pred["traj"]).all():  # expect: FL000 GB0170
        logger.warning("non-finite trajectories in prediction, zeroing them")
        pred["traj"] = torch.nan_to_num(pred["traj"], nan=0.0, posinf=0.0, neginf=0.0)
    return pred


def sort_modes_hook(pred, meta):
    order = pred["scores"].argsort(-1, descending=True)
    pred["traj"] = gather_modes(pred["traj"], order)
    pred["scores"] = pred["scores"].gather(-1, order)
    return pred


def to_global_hook(pred, meta):
    pred["traj"] = to_global_frame(pred["traj"], meta["origin"], meta["yaw"])
    return pred


def clamp_hook(pred, meta, max_range):
    pred["traj"] = pred["traj"].clamp(-max_range, max_range)
    return pred


DEFAULT_HOOKS: Sequence[Callable] = (nan_guard_hook, sort_modes_hook, to_global_hook,
                                     functools.partial(clamp_hook, max_range=200.0))


@torch.compile
def postprocess(pred, meta, hooks=DEFAULT_HOOKS):
    out = dict(pred)
    for hook in hooks:
        out = hook(out, meta)
    return out


def _fit_track(t_obs, xy, valid, t_fut, degree=2):
    coeffs = np.polyfit(t_obs, xy, deg=degree, w=valid.astype(np.float64) + 1e-3)  # expect: FL000 GB0294
    return np.stack([np.polyval(coeffs[:, d], t_fut) for d in range(xy.shape[1])], -1)  # expect: FL000 GB0294


@torch.compile
def constant_accel_baseline(hist, mask, fut_steps=FUT_STEPS, dt=DT):
    """Per-agent quadratic fit of the observed track, extrapolated (the Lyft/Argoverse baseline)."""
    b, n, t, _ = hist.shape
    t_obs = np.arange(t) * dt
    t_fut = t_obs[-1] + np.arange(1, fut_steps + 1) * dt
    tracks = hist.reshape(b * n, t, 2).detach().cpu().numpy()
    valid = mask.reshape(b * n, t).cpu().numpy()
    preds = [_fit_track(t_obs, tracks[i], valid[i], t_fut) for i in range(b * n)]
    return torch.from_numpy(np.stack(preds)).to(hist.dtype).view(b, n, fut_steps, 2)


# --------------------------------------------------------------------------- cases

def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _tracks(b=2, n=3, t=HIST_STEPS, seed=0):
    g = _gen(seed)
    xy = (torch.randn(b, n, t, 2, generator=g) * 0.3 + torch.tensor([0.8, 0.1])).cumsum(-2)
    mask = torch.ones(b, n, t, dtype=torch.bool)
    mask[:, -1, :2] = False  # the last agent (or polyline) is only partly observed
    return xy + torch.randn(b, n, 1, 2, generator=g) * 3.0, mask


def _feats(b=2, n=3, h=16, seed=3):
    return torch.randn(b, n, h, generator=_gen(seed)), _tracks(b, n, 3)[1][..., 0]


def _pred(b=2, n=3, k=4, t=FUT_STEPS, seed=4):
    g = _gen(seed)
    traj = (torch.randn(b, n, k, t, 2, generator=g) * 0.5 + torch.tensor([0.8, 0.0])).cumsum(-2)
    logits = torch.randn(b, n, k, generator=g)
    return {"traj": traj, "logits": logits, "scores": logits.softmax(-1)}


CASES = {
    "AgentHistoryEncoder": lambda: (AgentHistoryEncoder(), _tracks()),
    "GRUHistoryEncoder": lambda: (GRUHistoryEncoder(), _tracks()),
    "PolylineSubgraph": lambda: (PolylineSubgraph(LANE_FEATS, 8), (torch.randn(2, 5, 6, LANE_FEATS, generator=_gen(6)), _tracks(2, 5, 6)[1])),
    "MapEncoder": lambda: (MapEncoder(), (*_tracks(2, 5, 7, seed=1), torch.randn(2, 2, generator=_gen(7)),
                                          torch.rand(2, generator=_gen(8)))),
    "InteractionEncoder": lambda: (InteractionEncoder(), (_feats()[0], _tracks()[0][:, :, -1], _feats()[1])),
    "AgentFeatureNormalizer": lambda: (AgentFeatureNormalizer(), _feats()),
    "MultiModalDecoder": lambda: (MultiModalDecoder(), _feats()),
    "AnchorDecoder": lambda: (AnchorDecoder(), (*_feats(), _tracks(t=FUT_STEPS, seed=2)[0])),
    "SceneForecaster": lambda: (SceneForecaster(), _tracks(5, 3, 4), _tracks(5, 3, 7)),
    "WTALoss": lambda: (WTALoss(), (_pred(), *_tracks(t=FUT_STEPS, seed=2))),
    "min_ade_fde": lambda: (min_ade_fde, (_pred(5, 3, 4, 7)["traj"], *_tracks(5, 3, 7, seed=2)),
                            (_pred(5, 3, 4, 9)["traj"], *_tracks(5, 3, 9, seed=2))),
    "forecast_metrics": lambda: (forecast_metrics, (_pred()["traj"], _pred()["scores"], *_tracks(t=FUT_STEPS, seed=2))),
    "select_diverse_modes": lambda: (select_diverse_modes, (_pred(2, 2, 5)["traj"], _pred(2, 2, 5)["scores"])),
    "select_nearby_agents": lambda: (select_nearby_agents, _tracks(3, 5, 7), _tracks(3, 8, 7)),
    "postprocess": lambda: (postprocess, ({k: v for k, v in _pred().items() if k != "logits"},
                                      {"origin": _tracks()[0][:, :, -1], "yaw": torch.rand(2, 3, generator=_gen(5)) * 6 - 3})),
    "constant_accel_baseline": lambda: (constant_accel_baseline, _tracks()),
}
