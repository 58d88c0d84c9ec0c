"""Optical flow / stereo in the style of RAFT, PWC-Net, ARFlow and GwcNet: correlation pyramids, a
config-steered ConvGRU refinement loop, convex upsampling, warping, occlusion, census loss, metrics."""
import functools
import logging
import math
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("flow")
logger.addHandler(logging.NullHandler())

MAX_FLOW = 400.0
MOTION_DIM = 12
PYRAMID_WEIGHTS = (1.0, 0.5, 0.25, 0.125)
MIN_PYRAMID_SIZE = 4
OUTLIER_THRESHOLDS = (1, 3, 5)
LOG_EVERY = 1

@dataclass
class FlowConfig:
    iters: int = 2
    min_iters: int = 1
    corr_levels: int = 2
    corr_radius: int = 1
    hidden_dim: int = 8
    context_dim: int = 6
    feat_dim: int = 10
    stride: int = 4
    mixed_precision: bool = False
    early_exit_tol: float = 0.05
    w_smooth: float = 0.1
    loss_weights: Dict[str, float] = field(default_factory=lambda: {"l1": 0.15, "census": 0.85})

    @property
    def corr_planes(self) -> int:
        return self.corr_levels * (2 * self.corr_radius + 1) ** 2

    @property
    def mask_channels(self) -> int:
        return 9 * self.stride * self.stride

# --------------------------------------------------------------------------- grid utilities
def coords_grid(batch: int, ht: int, wd: int, device=None) -> torch.Tensor:
    ys, xs = torch.meshgrid(torch.arange(ht, device=device), torch.arange(wd, device=device),
                            indexing="ij")
    coords = torch.stack([xs, ys], dim=0).float()
    return coords[None].repeat(batch, 1, 1, 1)

def normalize_coords(coords: torch.Tensor, ht: int, wd: int) -> torch.Tensor:
    xgrid, ygrid = coords.split([1, 1], dim=-1)
    xgrid = 2 * xgrid / (wd - 1) - 1
    ygrid = 2 * ygrid / (ht - 1) - 1
    return torch.cat([xgrid, ygrid], dim=-1)

def bilinear_sampler(img, coords):
    H, W = img.shape[-2:]
    return F.grid_sample(img, normalize_coords(coords, H, W), align_corners=True)

def convex_upsample(flow, mask, factor: int):
    """[N, 2, H, W] -> [N, 2, factor*H, factor*W] as a convex combination of 3x3 parents."""
    N, _, H, W = flow.shape
    mask = torch.softmax(mask.view(N, 1, 9, factor, factor, H, W), dim=2)
    up_flow = F.unfold(factor * flow, [3, 3], padding=1)
    up_flow = up_flow.view(N, 2, 9, 1, 1, H, W)
    up_flow = torch.sum(mask * up_flow, dim=2)
    up_flow = up_flow.permute(0, 1, 4, 2, 5, 3)
    return up_flow.reshape(N, 2, factor * H, factor * W)

class CorrBlock:
    """All-pairs correlation pyramid (RAFT). Not a module: built once per image pair."""

    def __init__(self, fmap1, fmap2, num_levels: int = 2, radius: int = 1):
        self.num_levels = num_levels
        self.radius = radius
        corr = self.corr(fmap1, fmap2)
        batch, h1, w1, dim, h2, w2 = corr.shape
        corr = corr.reshape(batch * h1 * w1, dim, h2, w2)
        self.corr_pyramid = [corr]
        for _ in range(self.num_levels - 1):
            corr = F.avg_pool2d(corr, 2, stride=2)
            self.corr_pyramid.append(corr)

    def __call__(self, coords):
        r = self.radius
        coords = coords.permute(0, 2, 3, 1)
        batch, h1, w1, _ = coords.shape
        d = torch.linspace(-r, r, 2 * r + 1, device=coords.device)
        delta = torch.stack(torch.meshgrid(d, d, indexing="ij"), dim=-1).view(1, 2 * r + 1, 2 * r + 1, 2)
        out_pyramid = []
        for i, corr in enumerate(self.corr_pyramid):
            centroid_lvl = coords.reshape(batch * h1 * w1, 1, 1, 2) / 2 ** i
            corr = bilinear_sampler(corr, centroid_lvl + delta)
            out_pyramid.append(corr.view(batch, h1, w1, -1))
        out = torch.cat(out_pyramid, dim=-1)
        return out.permute(0, 3, 1, 2).contiguous().float()

    @staticmethod
    def corr(fmap1, fmap2):
        batch, dim, ht, wd = fmap1.shape
        fmap1, fmap2 = fmap1.view(batch, dim, ht * wd), fmap2.view(batch, dim, ht * wd)
        corr = torch.matmul(fmap1.transpose(1, 2), fmap2)
        return corr.view(batch, ht, wd, 1, ht, wd) / math.sqrt(dim)

# --------------------------------------------------------------------------- network blocks
NORM_LAYERS: Dict[str, Callable[[int], nn.Module]] = {
    "batch": nn.BatchNorm2d,
    "instance": nn.InstanceNorm2d,
    "none": lambda c: nn.Identity(),
}

def make_norm(name: str, channels: int) -> nn.Module:
    try:
        return NORM_LAYERS[name](channels)
    except KeyError:
        raise ValueError(f"unknown norm_fn {name!r}") from None

def conv_norm_relu(cin: int, cout: int, norm_fn: str, stride: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, stride=stride),
                         make_norm(norm_fn, cout), nn.ReLU(inplace=True))

class FeatureEncoder(nn.Module):
    def __init__(self, output_dim=10, norm_fn="batch"):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 5, stride=2, padding=2)
        self.norm1 = make_norm(norm_fn, 8)
        self.layers = nn.Sequential(conv_norm_relu(8, 8, norm_fn), conv_norm_relu(8, 12, norm_fn, 2))
        self.conv2 = nn.Conv2d(12, output_dim, 1)

    def forward(self, x):
        is_list = isinstance(x, (tuple, list))
        if is_list:
            batch_dim = x[0].shape[0]
            x = torch.cat(x, dim=0)
        x = F.relu(self.norm1(self.conv1(x)))
        x = self.conv2(self.layers(x))
        if is_list:
            return torch.split(x, [batch_dim, batch_dim], dim=0)
        return x

class ConvGRU(nn.Module):
    def __init__(self, hidden_dim=8, input_dim=18, kernel=3):
        super().__init__()
        cat = hidden_dim + input_dim
        self.convz = nn.Conv2d(cat, hidden_dim, kernel, padding=kernel // 2)
        self.convr = nn.Conv2d(cat, hidden_dim, kernel, padding=kernel // 2)
        self.convq = nn.Conv2d(cat, hidden_dim, kernel, padding=kernel // 2)

    def forward(self, h, x):
        hx = torch.cat([h, x], dim=1)
        z = torch.sigmoid(self.convz(hx))
        r = torch.sigmoid(self.convr(hx))
        q = torch.tanh(self.convq(torch.cat([r * h, x], dim=1)))
        return (1 - z) * h + z * q

class BasicUpdateBlock(nn.Module):
    def __init__(self, cfg: FlowConfig):
        super().__init__()
        self.convc1 = nn.Conv2d(cfg.corr_planes, 16, 1)
        self.convf1 = nn.Conv2d(2, 8, 7, padding=3)
        self.conv = nn.Conv2d(24, MOTION_DIM - 2, 3, padding=1)
        self.gru = ConvGRU(cfg.hidden_dim, cfg.context_dim + MOTION_DIM)
        self.flow_head = nn.Sequential(nn.Conv2d(cfg.hidden_dim, 16, 3, padding=1),
                                       nn.ReLU(inplace=True), nn.Conv2d(16, 2, 3, padding=1))
        self.mask = nn.Sequential(nn.Conv2d(cfg.hidden_dim, 16, 3, padding=1),
                                  nn.ReLU(inplace=True), nn.Conv2d(16, cfg.mask_channels, 1))

    def encode_motion(self, flow, corr):
        cor = F.relu(self.convc1(corr))
        flo = F.relu(self.convf1(flow))
        out = F.relu(self.conv(torch.cat([cor, flo], dim=1)))
        return torch.cat([out, flow], dim=1)

    def forward(self, net, inp, corr, flow, upsample: bool = True):
        motion = self.encode_motion(flow, corr)
        net = self.gru(net, torch.cat([inp, motion], dim=1))
        delta_flow = self.flow_head(net)
        mask = 0.25 * self.mask(net) if upsample else None
        return net, mask, delta_flow

class RAFTLite(nn.Module):
    def __init__(self, cfg: Optional[FlowConfig] = None,
                 hooks: Sequence[Callable[[int, torch.Tensor], None]] = ()):
        super().__init__()
        self.cfg = cfg or FlowConfig()
        self.hooks = list(hooks)
        self.fnet = FeatureEncoder(self.cfg.feat_dim, norm_fn="instance")
        self.cnet = FeatureEncoder(self.cfg.hidden_dim + self.cfg.context_dim, norm_fn="batch")
        self.update_block = BasicUpdateBlock(self.cfg)

    def initialize_flow(self, img):
        N, _, H, W = img.shape
        s = self.cfg.stride
        return coords_grid(N, H // s, W // s, img.device), coords_grid(N, H // s, W // s, img.device)

    def should_stop(self, delta_flow, itr: int) -> bool:
        return False

    def forward(self, image1, image2, iters: Optional[int] = None, flow_init=None):
        iters = self.cfg.iters if iters is None else iters
        image1 = 2 * (image1 / 255.0) - 1.0
        image2 = 2 * (image2 / 255.0) - 1.0
        with torch.autocast("cpu", enabled=self.cfg.mixed_precision):
            fmap1, fmap2 = self.fnet([image1, image2])
            cnet = self.cnet(image1)
        corr_fn = CorrBlock(fmap1.float(), fmap2.float(), self.cfg.corr_levels, self.cfg.corr_radius)
        net, inp = torch.split(cnet, [self.cfg.hidden_dim, self.cfg.context_dim], dim=1)
        net, inp = torch.tanh(net), torch.relu(inp)
        coords0, coords1 = self.initialize_flow(image1)
        if flow_init is not None:
            coords1 = coords1 + flow_init
        flow_predictions = []
        for itr in range(iters):
            coords1 = coords1.detach()
            corr = corr_fn(coords1)
            net, up_mask, delta_flow = self.update_block(net, inp, corr, coords1 - coords0)
            coords1 = coords1 + delta_flow
            flow_up = convex_upsample(coords1 - coords0, up_mask, self.cfg.stride)
            flow_predictions.append(flow_up)
            for hook in self.hooks:
                hook(itr, flow_up)
            if self.should_stop(delta_flow, itr):
                logger.debug("early exit after %d iterations", itr + 1)
                break
        return flow_predictions

class AdaptiveRAFT(RAFTLite):
    """Stops refining once the mean update falls below a tolerance (test-time speed-up)."""

    def should_stop(self, delta_flow, itr: int) -> bool:
        if itr + 1 < self.cfg.min_iters:
            return False
        mag = delta_flow.norm(dim=1).mean()
        return bool(mag < self.cfg.early_exit_tol)  # expect: FL000 GB0124

# --------------------------------------------------------------------------- warping and occlusion
@functools.lru_cache(maxsize=16)
def _base_grid(ht: int, wd: int, device: torch.device) -> torch.Tensor:
    return coords_grid(1, ht, wd, device=device)

def flow_warp(x, flow, pad_mode: str = "border", return_mask: bool = False):
    """Backward warp: sample x at p + flow(p) (PWC-Net / ARFlow)."""
    B, _, H, W = x.shape
    grid = _base_grid(H, W, x.device).type_as(flow) + flow
    grid = normalize_coords(grid.permute(0, 2, 3, 1), H, W)
    out = F.grid_sample(x, grid, padding_mode=pad_mode, align_corners=True)
    if not return_mask:
        return out
    mask = F.grid_sample(torch.ones_like(x[:, :1]), grid, align_corners=True)
    mask[mask < 0.9999] = 0
    mask[mask > 0] = 1
    return out * mask, mask

backward_warp = torch.compile(flow_warp)

def fb_occlusion(flow_fw, flow_bw, alpha1: float = 0.01, alpha2: float = 0.5):
    """Forward-backward consistency check (UnFlow): 1 where occluded."""
    flow_bw_warped = flow_warp(flow_bw, flow_fw)
    flow_diff = flow_fw + flow_bw_warped
    mag = (flow_fw ** 2).sum(1, keepdim=True) + (flow_bw_warped ** 2).sum(1, keepdim=True)
    occ = (flow_diff ** 2).sum(1, keepdim=True) > alpha1 * mag + alpha2
    return occ.float()

def _check_flows(*flows, name: str = "flow"):
    for f in flows:
        if not torch.isfinite(f).all():  # expect: FL000 GB0170
            raise FloatingPointError(f"non-finite values in {name}")

@torch.compile
def bidirectional_occlusion(flow_fw, flow_bw, alpha1: float = 0.01, alpha2: float = 0.5):
    _check_flows(flow_fw, flow_bw)
    occ = functools.partial(fb_occlusion, alpha1=alpha1, alpha2=alpha2)
    return {"fw": occ(flow_fw, flow_bw), "bw": occ(flow_bw, flow_fw)}

# --------------------------------------------------------------------------- photometric losses
def _rgb_to_gray(image):
    r, g, b = image.unbind(1)
    return (0.2989 * r + 0.5870 * g + 0.1140 * b).unsqueeze(1)

def _ternary(im, im_warp, valid=None, max_distance: int = 1):
    patch = 2 * max_distance + 1

    def _transform(image):
        intensities = _rgb_to_gray(image) * 255
        out_channels = patch * patch
        w = np.eye(out_channels).reshape((patch, patch, 1, out_channels))
        weights = torch.from_numpy(np.transpose(w, (3, 2, 0, 1))).float().to(image.device)
        patches = F.conv2d(intensities, weights, padding=max_distance)
        transf = patches - intensities
        return transf / torch.sqrt(0.81 + transf.pow(2))

    def _hamming(t1, t2):
        dist = (t1 - t2).pow(2)
        return (dist / (0.1 + dist)).mean(1, keepdim=True)

    n, _, h, w = im.shape
    inner = torch.ones(n, 1, h - 2 * max_distance, w - 2 * max_distance).type_as(im)
    border = F.pad(inner, [max_distance] * 4)
    dist = _hamming(_transform(im), _transform(im_warp)) * border
    return dist if valid is None else dist * valid

ternary_loss = torch.compile(_ternary)

PHOTOMETRIC: Dict[str, Callable] = {
    "l1": lambda a, b: (a - b).abs().mean(1, keepdim=True),
    "census": functools.partial(_ternary, max_distance=1),
}

def _gradient(x):
    return x[..., :, 1:] - x[..., :, :-1], x[..., 1:, :] - x[..., :-1, :]

def edge_aware_smoothness(flow, img, edge_constant: float = 150.0):
    img_dx, img_dy = _gradient(img)
    wx = torch.exp(-edge_constant * img_dx.abs().mean(1, keepdim=True))
    wy = torch.exp(-edge_constant * img_dy.abs().mean(1, keepdim=True))
    dx, dy = _gradient(flow)
    return (wx * dx.abs()).mean() + (wy * dy.abs()).mean()

class UnsupervisedFlowLoss(nn.Module):
    """ARFlow-style multi-scale photometric + smoothness loss; occlusion masking after a warm-up."""

    def __init__(self, cfg: Optional[FlowConfig] = None, occ_warmup: int = 1):
        super().__init__()
        self.cfg = cfg or FlowConfig()
        self.occ_warmup = occ_warmup
        self.num_updates = 0
        self.loss_fns = {k: PHOTOMETRIC[k] for k, w in self.cfg.loss_weights.items() if w > 0}

    def photometric(self, im1, im1_recons, noc):
        total = 0.0
        for name, fn in self.loss_fns.items():
            weight = self.cfg.loss_weights[name]
            total = total + weight * (fn(im1, im1_recons) * noc).mean() / (noc.mean() + 1e-6)
        return total

    def forward(self, flows_fw: List[torch.Tensor], flows_bw: List[torch.Tensor], img1, img2):
        self.num_updates += 1  # expect: FL302
        use_occ = self.num_updates > self.occ_warmup
        losses = []
        for lvl, (fw, bw) in enumerate(zip(flows_fw, flows_bw)):
            scale = img1.shape[-1] / fw.shape[-1]
            im1 = F.interpolate(img1, size=fw.shape[-2:], mode="area")
            im2 = F.interpolate(img2, size=fw.shape[-2:], mode="area")
            noc = 1 - fb_occlusion(fw, bw) if use_occ else torch.ones_like(fw[:, :1])
            l_photo = self.photometric(im1, flow_warp(im2, fw), noc)
            l_smooth = edge_aware_smoothness(fw / scale, im1)
            losses.append(l_photo + self.cfg.w_smooth * l_smooth)
        total = sum(w * l for w, l in zip(PYRAMID_WEIGHTS, losses))
        if self.num_updates % LOG_EVERY == 0:
            logger.info("update %d: loss %.4f (%d levels)", self.num_updates, total, len(losses))  # expect: FL000 GB0291
        return total

# --------------------------------------------------------------------------- supervised loss / metrics
@torch.compile
def sequence_loss(flow_preds, flow_gt, valid, gamma: float = 0.8, max_flow: float = MAX_FLOW):
    """RAFT's exponentially weighted loss over all refinement iterations."""
    n_predictions = len(flow_preds)
    flow_loss = 0.0
    mag = torch.sum(flow_gt ** 2, dim=1).sqrt()
    valid = (valid >= 0.5) & (mag < max_flow)
    for i in range(n_predictions):
        i_weight = gamma ** (n_predictions - i - 1)
        i_loss = (flow_preds[i] - flow_gt).abs()
        flow_loss += i_weight * (valid[:, None] * i_loss).mean()
    epe = torch.sum((flow_preds[-1] - flow_gt) ** 2, dim=1).sqrt()
    epe = epe.view(-1)[valid.view(-1)]  # expect: FL000 GB0036
    metrics = {"epe": epe.mean().item(), "1px": (epe < 1).float().mean().item()}  # expect: FL000 GB0124
    return flow_loss, metrics

@torch.compile
def flow_metrics(pred, gt, valid: Optional[torch.Tensor] = None):
    epe = torch.sum((pred - gt) ** 2, dim=1).sqrt()
    valid = torch.ones_like(epe) if valid is None else (valid >= 0.5).float()
    n = valid.sum().clamp_min(1.0)
    out = {"epe": (epe * valid).sum() / n}
    for t in OUTLIER_THRESHOLDS:
        out[f"{t}px"] = ((epe < t).float() * valid).sum() / n
    return {k: round(v.item(), 4) for k, v in out.items()}  # expect: FL000 GB0092; FL000 GB0124

# --------------------------------------------------------------------------- visualisation
def make_colorwheel() -> np.ndarray:
    RY, YG, GC, CB, BM, MR = 15, 6, 4, 11, 13, 6
    segments = [(RY, 0, 1, False), (YG, 1, 0, True), (GC, 1, 2, False),
                (CB, 2, 1, True), (BM, 2, 0, False), (MR, 0, 2, True)]
    colorwheel = np.zeros((RY + YG + GC + CB + BM + MR, 3))
    col = 0
    for n, full, ramp, falling in segments:
        ramp_vals = np.floor(255 * np.arange(0, n) / n)
        colorwheel[col:col + n, full] = 255
        colorwheel[col:col + n, ramp] = 255 - ramp_vals if falling else ramp_vals
        col += n
    return colorwheel

COLORWHEEL = torch.from_numpy(make_colorwheel()).float()

@torch.compile
def flow_to_color(flow, max_flow: Optional[float] = None):
    """(B, 2, H, W) flow -> (B, 3, H, W) RGB in [0, 255] via the Middlebury colour wheel (flow_vis)."""
    u, v = flow[:, 0], flow[:, 1]
    if max_flow is None:
        max_flow = max(float(torch.sqrt(u ** 2 + v ** 2).max()), 1e-5)  # expect: FL000 GB0124
    u, v = u / max_flow, v / max_flow
    rad = torch.sqrt(u ** 2 + v ** 2)
    wheel = COLORWHEEL.to(flow.device)
    ncols = wheel.shape[0]
    fk = (torch.atan2(-v, -u) / math.pi + 1) / 2 * (ncols - 1)
    k0 = fk.floor().long()
    k1 = (k0 + 1) % ncols
    f = (fk - k0)[..., None]
    col = (1 - f) * wheel[k0] / 255.0 + f * wheel[k1] / 255.0
    col = torch.where((rad <= 1)[..., None], 1 - rad[..., None] * (1 - col), col * 0.75)
    return (255 * col).permute(0, 3, 1, 2)

# --------------------------------------------------------------------------- stereo
def disparity_regression(cost, maxdisp: int):
    prob = F.softmax(cost, dim=1)
    disp_values = torch.Tensor(np.reshape(np.array(range(maxdisp)), [1, maxdisp, 1, 1]))
    return torch.sum(prob * disp_values.to(cost.device), 1, keepdim=True)

def correlation_volume(left, right, maxdisp: int):
    """Correlation cost volume [B, D, H, W] over integer disparities (DispNetC / GwcNet)."""
    costs = [(left * right).mean(1)]
    for d in range(1, maxdisp):  # expect: FL301
        costs.append(F.pad((left[..., d:] * right[..., :-d]).mean(1), (d, 0)))
    return torch.stack(costs, dim=1)

@torch.compile
def stereo_soft_argmin(left_fea, right_fea, disp_ratio: int = 4):
    maxdisp = left_fea.shape[-1] // disp_ratio
    cost = correlation_volume(left_fea, right_fea, maxdisp)
    return disparity_regression(cost, maxdisp), cost

# --------------------------------------------------------------------------- classical baselines / eval utils
def local_correlation(f1, f2, max_disp: int = 1):
    B, C, H, W = f1.shape
    f2_pad = F.pad(f2, [max_disp] * 4)
    costs = []
    for dy in range(2 * max_disp + 1):
        for dx in range(2 * max_disp + 1):
            costs.append((f1 * f2_pad[:, :, dy:dy + H, dx:dx + W]).mean(1, keepdim=True))
    return F.leaky_relu(torch.cat(costs, 1), 0.1)

class InputPadder:
    """Pads images such that dimensions are divisible by `divis_by` (RAFT's utils)."""

    def __init__(self, dims, divis_by: int = 8):
        self.ht, self.wd = dims[-2:]
        pad_ht = (((self.ht // divis_by) + 1) * divis_by - self.ht) % divis_by
        pad_wd = (((self.wd // divis_by) + 1) * divis_by - self.wd) % divis_by
        self._pad = [pad_wd // 2, pad_wd - pad_wd // 2, pad_ht // 2, pad_ht - pad_ht // 2]

    def pad(self, *inputs):
        if not any(self._pad):  # expect: FL301
            return list(inputs)
        return [F.pad(x, self._pad, mode="replicate") for x in inputs]

    def unpad(self, x):
        ht, wd = x.shape[-2:]
        c = [self._pad[2], ht - self._pad[3], self._pad[0], wd - self._pad[1]]
        return x[..., c[0]:c[1], c[2]:c[3]]

@torch.compile
def block_matching_flow(image1, image2, radius: int = 1, divis_by: int = 4):
    padder = InputPadder(image1.shape, divis_by=divis_by)
    image1, image2 = padder.pad(_rgb_to_gray(image1), _rgb_to_gray(image2))
    cost = local_correlation(image1 / 255.0, image2 / 255.0, max_disp=radius)
    idx = cost.argmax(dim=1, keepdim=True)
    side = 2 * radius + 1
    flow = torch.cat([idx % side - radius, idx // side - radius], dim=1).float()
    return padder.unpad(flow)

@torch.compile
def build_image_pyramid(img, min_size: int = MIN_PYRAMID_SIZE):
    pyramid = [img]
    while min(pyramid[-1].shape[-2:]) // 2 >= min_size:  # expect: FL301
        pyramid.append(F.avg_pool2d(pyramid[-1], 2, stride=2))
    logger.debug("image pyramid: %s", [tuple(p.shape[-2:]) for p in pyramid])  # expect: FL000 GB0291
    return pyramid

def forward_interpolate(flow: torch.Tensor) -> torch.Tensor:
    """Splat a low-res flow forward along itself to warm-start the next frame (RAFT eval)."""
    flow = flow.detach().cpu().numpy()
    dx, dy = flow[0], flow[1]
    ht, wd = dx.shape
    x0, y0 = np.meshgrid(np.arange(wd), np.arange(ht))
    x1, y1 = (x0 + dx).reshape(-1), (y0 + dy).reshape(-1)
    dx, dy = dx.reshape(-1), dy.reshape(-1)
    valid = (x1 > 0) & (x1 < wd) & (y1 > 0) & (y1 < ht)
    xi = np.round(x1[valid]).astype(np.int64).clip(0, wd - 1)  # expect: FL000 GB0036
    yi = np.round(y1[valid]).astype(np.int64).clip(0, ht - 1)  # expect: FL000 GB0036
    out = np.zeros((2, ht, wd), dtype=np.float32)
    out[0, yi, xi] = dx[valid]  # expect: FL000 GB0036
    out[1, yi, xi] = dy[valid]  # expect: FL000 GB0036
    return torch.from_numpy(out).float()

@torch.compile
def warm_start_flows(flow_low):
    inits = [forward_interpolate(f) for f in flow_low]
    return torch.stack(inits).to(flow_low.device)

# --------------------------------------------------------------------------- cases
def _rand(*shape, seed: int = 0, scale: float = 1.0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g) * scale

def _images(b=2, h=16, w=24, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(b, 3, h, w, generator=g) * 255

def _pair(b=2, h=16, w=24, shift=1):
    img1 = _images(b, h, w, seed=3)
    return img1, torch.roll(img1, shifts=shift, dims=-1)

_FLOW_NORMS: List[float] = []

def record_flow_norm(itr: int, flow: torch.Tensor) -> None:
    _FLOW_NORMS.append(float(flow.abs().mean()))  # expect: FL000 GB0124; FL302

CFG = FlowConfig()
ADAPTIVE = FlowConfig(iters=3, min_iters=2, early_exit_tol=50.0)

CASES = {
    "FeatureEncoder": lambda: (FeatureEncoder(10, "instance"), ([_images(seed=1), _images(seed=2)],)),
    "ConvGRU": lambda: (ConvGRU(8, 18), (_rand(2, 8, 4, 6), _rand(2, 18, 4, 6, seed=1))),
    "BasicUpdateBlock": lambda: (BasicUpdateBlock(CFG), (_rand(2, 8, 4, 6), _rand(2, 6, 4, 6, seed=1),
                                                         _rand(2, 18, 4, 6, seed=2), _rand(2, 2, 4, 6, seed=3))),
    "RAFTLite": lambda: (RAFTLite(), _pair()),
    "RAFTLite_hooks": lambda: (RAFTLite(hooks=[record_flow_norm]), _pair()),
    "AdaptiveRAFT": lambda: (AdaptiveRAFT(ADAPTIVE), (*_pair(), None, _rand(2, 2, 4, 6, scale=0.5))),
    "UnsupervisedFlowLoss": lambda: (UnsupervisedFlowLoss(), (
        [_rand(2, 2, 16, 24, scale=2.0), _rand(2, 2, 8, 12)], [_rand(2, 2, 16, 24, seed=1, scale=2.0),
         _rand(2, 2, 8, 12, seed=1)], _images(seed=4) / 255, _images(seed=5) / 255)),
    "backward_warp": lambda: (backward_warp, (_images(seed=1), _rand(2, 2, 16, 24, scale=3.0), "zeros", True)),
    "ternary_loss": lambda: (ternary_loss, (_images(seed=1) / 255, _images(seed=2) / 255)),
    "bidirectional_occlusion": lambda: (bidirectional_occlusion,
                                        (_rand(2, 2, 16, 24, scale=2.0), _rand(2, 2, 16, 24, seed=1))),
    "sequence_loss": lambda: (sequence_loss, ([_rand(2, 2, 16, 24, seed=i) for i in range(3)],
                                              _rand(2, 2, 16, 24, seed=7), _rand(2, 16, 24, seed=8) + 0.5)),
    "flow_metrics": lambda: (flow_metrics, (_rand(2, 2, 16, 24), _rand(2, 2, 16, 24, seed=1, scale=2.0))),
    "flow_to_color": lambda: (flow_to_color, (_rand(2, 2, 16, 24, scale=4.0),)),
    "stereo_soft_argmin": lambda: (stereo_soft_argmin, (_rand(2, 5, 6, 12), _rand(2, 5, 6, 12, seed=1)),
                                   (_rand(2, 5, 6, 18), _rand(2, 5, 6, 18, seed=1))),
    "block_matching_flow": lambda: (block_matching_flow, _pair(2, 12, 20), _pair(2, 10, 18)),
    "build_image_pyramid": lambda: (build_image_pyramid, (_images(2, 12, 20),), (_images(2, 20, 36),)),
    "warm_start_flows": lambda: (warm_start_flows, (_rand(2, 2, 4, 6, scale=1.5),)),
}
