"""Self-supervised pre-training in the style of the DINO / iBOT / DINOv2 / MoCo / VICReg repos:
multi-crop ViT, teacher-student losses with centering / sharpening, EMA teachers on numpy
momentum schedules, MIM heads with random / block masks, VICReg, Barlow Twins, a MoCo queue."""
import functools
import logging
import math
import random
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("ssl")
logger.addHandler(logging.NullHandler())

EMBED_DIM = 16
PATCH_SIZE = 4
GLOBAL_CROP = 16
OUT_DIM = 24
LOG_EVERY = 5
NITER_PER_EP = 20
_SCHEDULE_CACHE: Dict[str, np.ndarray] = {}


@dataclass
class DINOConfig:
    out_dim: int = OUT_DIM
    warmup_teacher_temp: float = 0.04
    teacher_temp: float = 0.07
    warmup_teacher_temp_epochs: int = 3
    epochs: int = 10
    student_temp: float = 0.1
    center_momentum: float = 0.9
    n_global_crops: int = 2
    n_local_crops: int = 2

    @property
    def ncrops(self) -> int:
        return self.n_global_crops + self.n_local_crops


@dataclass
class VICRegConfig:
    sim_coeff: float = 25.0
    std_coeff: float = 25.0
    cov_coeff: float = 1.0
    eps: float = 1e-4


def cosine_scheduler(base_value, final_value, epochs, niter_per_ep, warmup_epochs=0,
                     start_warmup_value=0.0):
    warmup_schedule = np.array([])
    warmup_iters = warmup_epochs * niter_per_ep
    if warmup_epochs > 0:
        warmup_schedule = np.linspace(start_warmup_value, base_value, warmup_iters)
    iters = np.arange(epochs * niter_per_ep - warmup_iters)
    schedule = final_value + 0.5 * (base_value - final_value) * (1 + np.cos(np.pi * iters / len(iters)))
    schedule = np.concatenate((warmup_schedule, schedule))
    assert len(schedule) == epochs * niter_per_ep
    return schedule


SCHEDULE_FACTORIES: Dict[str, Callable[[], np.ndarray]] = {
    "lr": functools.partial(cosine_scheduler, 5e-4, 1e-6, 10, NITER_PER_EP, warmup_epochs=2),
    "wd": functools.partial(cosine_scheduler, 0.04, 0.4, 10, NITER_PER_EP),
    "momentum": functools.partial(cosine_scheduler, 0.996, 1.0, 10, NITER_PER_EP),
}


def get_schedule(name: str) -> np.ndarray:
    if name not in _SCHEDULE_CACHE:
        _SCHEDULE_CACHE[name] = SCHEDULE_FACTORIES[name]()
    return _SCHEDULE_CACHE[name]


def is_dist_avail_and_initialized() -> bool:
    return dist.is_available() and dist.is_initialized()


def get_world_size() -> int:
    return dist.get_world_size() if is_dist_avail_and_initialized() else 1


@torch.no_grad()
def concat_all_gather(tensor):
    if not is_dist_avail_and_initialized():
        return tensor
    gathered = [torch.ones_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, tensor, async_op=False)
    return torch.cat(gathered, dim=0)


def off_diagonal(x):
    n, m = x.shape
    assert n == m, "off_diagonal expects a square matrix"
    return x.flatten()[:-1].view(n - 1, n + 1)[:, 1:].flatten()


def select_masked(tokens, masks):
    """(B, N, D) tokens, (B, h, w) bool masks -> (n_masked, D)."""
    return tokens[masks.flatten(1)]  # expect: FL000 GB0036


def check_finite(name: str, t: torch.Tensor) -> torch.Tensor:
    if not torch.isfinite(t).all():  # expect: FL000 GB0170
        raise FloatingPointError(f"{name} produced non-finite values")
    return t


def scalarize(metrics: Dict[str, torch.Tensor]) -> Dict[str, float]:
    return {k: (v.item() if torch.is_tensor(v) else float(v)) for k, v in metrics.items()}  # expect: FL000 GB0092; FL000 GB0124; FL000 GB4347


class TinyViT(nn.Module):
    """DINO's vision_transformer.py, shrunk: cls token + interpolated position embeddings."""

    def __init__(self, img_size=GLOBAL_CROP, embed_dim=EMBED_DIM, depth=2, num_heads=2):
        super().__init__()
        self.patch_size = PATCH_SIZE
        self.patch_embed = nn.Conv2d(3, embed_dim, kernel_size=PATCH_SIZE, stride=PATCH_SIZE)
        num_patches = (img_size // PATCH_SIZE) ** 2
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, num_patches + 1, embed_dim))
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.trunc_normal_(self.cls_token, std=0.02)
        layer = functools.partial(nn.TransformerEncoderLayer, d_model=embed_dim, nhead=num_heads,
                                  dim_feedforward=2 * embed_dim, dropout=0.0, batch_first=True)
        self.blocks = nn.ModuleList([layer() for _ in range(depth)])
        self.norm = nn.LayerNorm(embed_dim)
        self.embed_dim = embed_dim

    def interpolate_pos_encoding(self, x, w, h):
        npatch = x.shape[1] - 1
        N = self.pos_embed.shape[1] - 1
        if npatch == N and w == h:  # expect: FL301
            return self.pos_embed
        class_pos_embed = self.pos_embed[:, 0]
        patch_pos_embed = self.pos_embed[:, 1:]
        dim = x.shape[-1]
        w0, h0 = w // self.patch_size, h // self.patch_size
        side = int(math.sqrt(N))
        patch_pos_embed = F.interpolate(
            patch_pos_embed.reshape(1, side, side, dim).permute(0, 3, 1, 2),
            size=(w0, h0), mode="bicubic", align_corners=False)
        patch_pos_embed = patch_pos_embed.permute(0, 2, 3, 1).view(1, -1, dim)
        return torch.cat((class_pos_embed.unsqueeze(0), patch_pos_embed), dim=1)

    def prepare_tokens(self, x):
        B, _, w, h = x.shape
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = torch.cat((self.cls_token.expand(B, -1, -1), x), dim=1)
        return x + self.interpolate_pos_encoding(x, w, h)

    def forward(self, x, return_all_tokens: bool = False):
        x = self.prepare_tokens(x)
        for blk in self.blocks:
            x = blk(x)
        x = self.norm(x)
        return x if return_all_tokens else x[:, 0]


class DINOHead(nn.Module):
    def __init__(self, in_dim=EMBED_DIM, out_dim=OUT_DIM, nlayers=3, hidden_dim=32,
                 bottleneck_dim=8, use_bn=False, norm_last_layer=True):
        super().__init__()
        nlayers = max(nlayers, 1)
        layers: List[nn.Module] = [nn.Linear(in_dim, hidden_dim)]
        for _ in range(nlayers - 2):
            layers += [nn.BatchNorm1d(hidden_dim)] if use_bn else []
            layers += [nn.GELU(), nn.Linear(hidden_dim, hidden_dim)]
        layers += [nn.GELU(), nn.Linear(hidden_dim, bottleneck_dim)]
        self.mlp = nn.Sequential(*layers)
        self.last_layer = nn.utils.parametrizations.weight_norm(
            nn.Linear(bottleneck_dim, out_dim, bias=False))
        if norm_last_layer:
            self.last_layer.parametrizations.weight.original0.requires_grad = False

    def forward(self, x):
        x = self.mlp(x)
        x = F.normalize(x, dim=-1, p=2)
        return self.last_layer(x)


class MultiCropWrapper(nn.Module):
    def __init__(self, backbone, head):
        super().__init__()
        self.backbone = backbone
        self.head = head

    def forward(self, x):
        if not isinstance(x, (list, tuple)):
            x = [x]
        idx_crops = torch.cumsum(torch.unique_consecutive(  # expect: FL000 GB0036
            torch.tensor([inp.shape[-1] for inp in x]), return_counts=True)[1], 0)
        start_idx, output = 0, torch.empty(0, device=x[0].device)
        for end_idx in idx_crops:
            _out = self.backbone(torch.cat(x[start_idx:end_idx]))  # expect: FL000 GB0124
            output = torch.cat((output, _out))
            start_idx = end_idx
        return self.head(output)


class DINOLoss(nn.Module):
    def __init__(self, cfg: DINOConfig = DINOConfig()):
        super().__init__()
        self.cfg = cfg
        self.student_temp = cfg.student_temp
        self.center_momentum = cfg.center_momentum
        self.ncrops = cfg.ncrops
        self.register_buffer("center", torch.zeros(1, cfg.out_dim))
        self.teacher_temp_schedule = np.concatenate((
            np.linspace(cfg.warmup_teacher_temp, cfg.teacher_temp, cfg.warmup_teacher_temp_epochs),
            np.ones(cfg.epochs - cfg.warmup_teacher_temp_epochs) * cfg.teacher_temp))

    def forward(self, student_output, teacher_output, epoch: int):
        student_out = (student_output / self.student_temp).chunk(self.ncrops)
        temp = self.teacher_temp_schedule[epoch]
        teacher_out = F.softmax((teacher_output - self.center) / temp, dim=-1)
        teacher_out = teacher_out.detach().chunk(self.cfg.n_global_crops)
        total_loss, n_loss_terms = 0.0, 0
        for iq, q in enumerate(teacher_out):
            for v in range(len(student_out)):
                if v == iq:
                    continue
                loss = torch.sum(-q * F.log_softmax(student_out[v], dim=-1), dim=-1)
                total_loss += loss.mean()
                n_loss_terms += 1
        self.update_center(teacher_output)
        return total_loss / n_loss_terms

    @torch.no_grad()
    def update_center(self, teacher_output):
        batch_center = torch.sum(teacher_output, dim=0, keepdim=True)
        if is_dist_avail_and_initialized():
            dist.all_reduce(batch_center)
        batch_center = batch_center / (len(teacher_output) * get_world_size())
        self.center.mul_(self.center_momentum).add_(batch_center * (1 - self.center_momentum))


class iBOTPatchLoss(nn.Module):
    def __init__(self, patch_out_dim=OUT_DIM, student_temp=0.1, center_momentum=0.9):
        super().__init__()
        self.student_temp = student_temp
        self.center_momentum = center_momentum
        self.register_buffer("center", torch.zeros(1, 1, patch_out_dim))

    def forward(self, student_patch, teacher_patch, masks, teacher_temp: float = 0.07):
        s = select_masked(student_patch, masks) / self.student_temp
        t = select_masked(teacher_patch, masks)
        t = F.softmax((t - self.center[0]) / teacher_temp, dim=-1).detach()
        loss = torch.sum(-t * F.log_softmax(s, dim=-1), dim=-1)
        with torch.no_grad():
            patch_center = teacher_patch.mean(dim=1, keepdim=True).mean(dim=0, keepdim=True)
            self.center.mul_(self.center_momentum).add_(patch_center, alpha=1 - self.center_momentum)
        return loss.mean()


def sinkhorn_knopp(teacher_output, teacher_temp: float, n_iterations: int = 3):
    teacher_output = teacher_output.float()
    Q = torch.exp(teacher_output / teacher_temp).t()
    B = Q.shape[1] * get_world_size()
    K = Q.shape[0]
    sum_Q = torch.sum(Q)
    if is_dist_avail_and_initialized():
        dist.all_reduce(sum_Q)
    Q /= sum_Q
    for _ in range(n_iterations):
        sum_of_rows = torch.sum(Q, dim=1, keepdim=True)
        Q /= sum_of_rows
        Q /= K
        Q /= torch.sum(Q, dim=0, keepdim=True)
        Q /= B
    Q *= B
    return Q.t()


sinkhorn_knopp_teacher = torch.compile(sinkhorn_knopp)


class KoLeoLoss(nn.Module):
    """Kozachenko-Leonenko entropy estimator (DINOv2) on the batch of cls embeddings."""

    def __init__(self, eps: float = 1e-8):
        super().__init__()
        self.pdist = nn.PairwiseDistance(2, eps=eps)
        self.eps = eps

    def pairwise_nn_inner(self, x):
        dots = torch.mm(x, x.t())
        n = x.shape[0]
        dots.view(-1)[:: (n + 1)].fill_(-1)
        _, indices = torch.max(dots, dim=1)
        return indices

    def forward(self, student_output):
        with torch.autocast("cpu", enabled=False):
            student_output = F.normalize(student_output, eps=self.eps, p=2, dim=-1)
            indices = self.pairwise_nn_inner(student_output)
            distances = self.pdist(student_output, student_output[indices])
            return -torch.log(distances + self.eps).mean()


@torch.compile
def momentum_update(student: nn.Module, teacher: nn.Module, m: float):
    with torch.no_grad():
        for param_q, param_k in zip(student.parameters(), teacher.parameters()):
            param_k.data.mul_(m).add_((1 - m) * param_q.detach().data)
    return teacher


class EMATeacher(nn.Module):
    def __init__(self, student: nn.Module):
        super().__init__()
        self.student = student
        self.teacher = TinyViT()
        self.teacher.load_state_dict(student.state_dict())
        for p in self.teacher.parameters():
            p.requires_grad = False
        self.num_updates = 0

    @property
    def momentum(self) -> float:
        schedule = get_schedule("momentum")
        return float(schedule[min(self.num_updates, len(schedule) - 1)])  # expect: FL000 GB0033

    def forward(self, crops: Sequence[torch.Tensor]):
        m = self.momentum
        with torch.no_grad():
            for ps, pt in zip(self.student.parameters(), self.teacher.parameters()):
                pt.mul_(m).add_(ps.detach(), alpha=1 - m)
            self.num_updates += 1  # expect: FL302
            return [self.teacher(c) for c in crops]  # expect: FL000 GB4347


@torch.compile
@torch.no_grad()
def teacher_forward(teacher: nn.Module, head: nn.Module, crops: List[torch.Tensor],
                    center: torch.Tensor, temp: float = 0.04):
    """Teacher only sees the global crops; outputs are centered and sharpened."""
    feats = teacher(torch.cat(crops, dim=0))
    logits = check_finite("teacher head", head(feats))
    probs = F.softmax((logits - center) / temp, dim=-1)
    return list(probs.chunk(len(crops)))


class MoCoQueue(nn.Module):
    def __init__(self, dim=8, K=12, T=0.2):
        super().__init__()
        self.K, self.T = K, T
        g = torch.Generator().manual_seed(7)
        self.register_buffer("queue", F.normalize(torch.randn(dim, K, generator=g), dim=0))
        self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

    @torch.no_grad()
    def _dequeue_and_enqueue(self, keys):
        keys = concat_all_gather(keys)
        batch_size = keys.shape[0]
        ptr = int(self.queue_ptr)  # expect: FL000 GB0124
        assert self.K % batch_size == 0
        self.queue[:, ptr:ptr + batch_size] = keys.T
        ptr = (ptr + batch_size) % self.K
        self.queue_ptr[0] = ptr

    def forward(self, q, k):
        q = F.normalize(q, dim=1)
        k = F.normalize(k, dim=1)
        l_pos = torch.einsum("nc,nc->n", [q, k]).unsqueeze(-1)
        l_neg = torch.einsum("nc,ck->nk", [q, self.queue.clone().detach()])
        logits = torch.cat([l_pos, l_neg], dim=1) / self.T
        labels = torch.zeros(logits.shape[0], dtype=torch.long, device=logits.device)
        self._dequeue_and_enqueue(k)
        return F.cross_entropy(logits, labels)


@torch.compile
def random_masking(x, mask_ratio: float, generator: Optional[torch.Generator] = None):
    """MAE-style per-sample shuffling; returns kept tokens, binary mask and restore indices."""
    N, L, D = x.shape
    len_keep = int(L * (1 - mask_ratio))
    noise = torch.rand(N, L, generator=generator)  # expect: FL000 GB0055
    ids_shuffle = torch.argsort(noise, dim=1)
    ids_restore = torch.argsort(ids_shuffle, dim=1)
    ids_keep = ids_shuffle[:, :len_keep]
    x_masked = torch.gather(x, dim=1, index=ids_keep.unsqueeze(-1).repeat(1, 1, D))
    mask = torch.ones(N, L)
    mask[:, :len_keep] = 0
    mask = torch.gather(mask, dim=1, index=ids_restore)
    return x_masked, mask, ids_restore


@torch.compile
def block_mask(height: int, width: int, num_masking_patches: int, seed: int = 0,
               min_num_patches: int = 2, log_aspect_ratio=(math.log(0.3), math.log(1 / 0.3))):
    """BEiT's MaskingGenerator: grow rectangular blocks until enough patches are hidden."""
    rng = random.Random(seed)
    mask = torch.zeros(height, width, dtype=torch.bool)
    mask_count = 0
    for _attempt in range(10):
        max_mask_patches = num_masking_patches - mask_count
        if max_mask_patches <= 0:
            break
        target_area = rng.uniform(min_num_patches, max_mask_patches)
        aspect_ratio = math.e ** rng.uniform(*log_aspect_ratio)  # expect: FL000 GB0213
        h = int(round((target_area * aspect_ratio) ** 0.5))
        w = int(round((target_area / aspect_ratio) ** 0.5))
        if w < width and h < height:
            top = rng.randint(0, height - h)
            left = rng.randint(0, width - w)
            num_masked = mask[top:top + h, left:left + w].sum()
            if 0 < h * w - num_masked <= max_mask_patches:
                mask[top:top + h, left:left + w] = True
                mask_count += h * w - int(num_masked)
    return mask


class SimMIMHead(nn.Module):
    def __init__(self, embed_dim=EMBED_DIM, encoder_stride=PATCH_SIZE, in_chans=3):
        super().__init__()
        self.encoder_stride = encoder_stride
        self.in_chans = in_chans
        self.decoder = nn.Sequential(nn.Conv2d(embed_dim, encoder_stride ** 2 * in_chans, 1),
                                     nn.PixelShuffle(encoder_stride))

    def forward(self, tokens, images, mask):
        B, L, C = tokens.shape
        H = W = int(L ** 0.5)
        z = tokens.transpose(1, 2).reshape(B, C, H, W)
        x_rec = self.decoder(z)
        mask = mask.reshape(B, H, W).repeat_interleave(self.encoder_stride, 1)
        mask = mask.repeat_interleave(self.encoder_stride, 2).unsqueeze(1).contiguous()
        loss_recon = F.l1_loss(images, check_finite("decoder", x_rec), reduction="none")
        return (loss_recon * mask).sum() / (mask.sum() + 1e-5) / self.in_chans


def _variance_term(z, eps):
    std = torch.sqrt(z.var(dim=0) + eps)
    return torch.mean(F.relu(1 - std))


def _covariance_term(z):
    n, d = z.shape
    z = z - z.mean(dim=0)
    cov = (z.T @ z) / (n - 1)
    return off_diagonal(cov).pow_(2).sum().div(d)


@torch.compile
def vicreg_loss(z_a, z_b, cfg: VICRegConfig = VICRegConfig(), return_logs: bool = True):
    repr_loss = F.mse_loss(z_a, z_b)
    std_loss = _variance_term(z_a, cfg.eps) / 2 + _variance_term(z_b, cfg.eps) / 2
    cov_loss = _covariance_term(z_a) + _covariance_term(z_b)
    loss = cfg.sim_coeff * repr_loss + cfg.std_coeff * std_loss + cfg.cov_coeff * cov_loss
    if not return_logs:
        return loss
    logs = scalarize({"repr": repr_loss, "std": std_loss, "cov": cov_loss})
    return loss, logs


class BarlowTwinsLoss(nn.Module):
    def __init__(self, dim=8, lambd: Optional[float] = None, scale_loss: float = 1.0):
        super().__init__()
        self.bn = nn.BatchNorm1d(dim, affine=False, track_running_stats=False)
        self.lambd = lambd
        self.scale_loss = scale_loss

    def cross_correlation(self, z1, z2):
        n = z1.shape[0]
        if n >= z1.shape[1]:  # expect: FL301
            return self.bn(z1).T @ self.bn(z2) / n
        z1 = (z1 - z1.mean(0)) / (z1.std(0) + 1e-5)
        z2 = (z2 - z2.mean(0)) / (z2.std(0) + 1e-5)
        return z1.T @ z2 / n

    def forward(self, z1, z2):
        c = self.cross_correlation(z1, z2)
        lambd = self.lambd if self.lambd is not None else 1.0 / c.shape[0]
        on_diag = torch.diagonal(c).add_(-1).pow_(2).sum()
        off_diag = off_diagonal(c).pow_(2).sum()
        return self.scale_loss * (on_diag + lambd * off_diag)


def _log_lr(step, values, metrics):
    metrics["lr"] = values["lr"]


def _log_momentum(step, values, metrics):
    metrics["momentum"] = values["momentum"]
    if values["momentum"] > 0.9999:  # expect: FL000 GB0170
        logger.info("teacher is effectively frozen at step %d", step)


STEP_CALLBACKS: List[Callable] = [_log_lr, _log_momentum]


@torch.compile
def log_step(step: int, loss: torch.Tensor, param_groups: List[Dict[str, float]]):
    """Applies the per-iteration schedules to the param groups and collects what gets logged."""
    values = {name: get_schedule(name)[step] for name in ("lr", "wd", "momentum")}
    for i, group in enumerate(param_groups):
        group["lr"] = values["lr"]
        if i == 0:
            group["weight_decay"] = values["wd"]
    metrics: Dict[str, float] = {}
    for cb in STEP_CALLBACKS:
        cb(step, values, metrics)
    if not math.isfinite(loss.item()):
        raise RuntimeError(f"Loss is {loss}, stopping training")
    if step % LOG_EVERY == 0:
        logger.info("step %d loss %.4f lr %.2e", step, loss, values["lr"])  # expect: FL000 GB0291
    return loss * values["lr"], metrics


def _t(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _crops(batch=2, n_global=2, n_local=2):
    return ([_t(batch, 3, GLOBAL_CROP, GLOBAL_CROP, seed=i) for i in range(n_global)]
            + [_t(batch, 3, 8, 8, seed=10 + i) for i in range(n_local)])


def _masks(batch=2, side=4, seed=3):
    return torch.rand(batch, side, side, generator=torch.Generator().manual_seed(seed)) > 0.5


CASES = {
    "TinyViT": lambda: (TinyViT(), (_t(2, 3, 16, 16),), (_t(2, 3, 8, 8),)),
    "DINOHead": lambda: (DINOHead(), (_t(6, EMBED_DIM),)),
    "MultiCropWrapper": lambda: (MultiCropWrapper(TinyViT(), DINOHead()), (_crops(),)),
    "DINOLoss": lambda: (DINOLoss(), (_t(8, OUT_DIM), _t(4, OUT_DIM, seed=1), 1)),
    "iBOTPatchLoss": lambda: (iBOTPatchLoss(), (_t(2, 16, OUT_DIM), _t(2, 16, OUT_DIM, seed=1), _masks())),
    "sinkhorn_knopp_teacher": lambda: (sinkhorn_knopp_teacher, (_t(6, OUT_DIM), 0.07)),
    "KoLeoLoss": lambda: (KoLeoLoss(), (_t(6, EMBED_DIM),)),
    "momentum_update": lambda: (momentum_update, (DINOHead(), DINOHead(), 0.996)),
    "EMATeacher": lambda: (EMATeacher(TinyViT()), (_crops(n_local=0),)),
    "teacher_forward": lambda: (teacher_forward, (TinyViT(), DINOHead(), _crops(n_local=0),
                                                  torch.zeros(1, OUT_DIM))),
    "MoCoQueue": lambda: (MoCoQueue(), (_t(4, 8), _t(4, 8, seed=1))),
    "random_masking": lambda: (random_masking, (_t(2, 16, EMBED_DIM), 0.75, torch.Generator().manual_seed(5))),
    "block_mask": lambda: (block_mask, (4, 6, 8, 1)),
    "SimMIMHead": lambda: (SimMIMHead(), (_t(2, 16, EMBED_DIM), _t(2, 3, 16, 16), _masks().float())),
    "vicreg_loss": lambda: (vicreg_loss, (_t(6, 8), _t(6, 8, seed=1))),
    "BarlowTwinsLoss": lambda: (BarlowTwinsLoss(dim=5), (_t(7, 5), _t(7, 5, seed=1)),
                                (_t(3, 5), _t(3, 5, seed=1))),
    "log_step": lambda: (log_step, (5, torch.tensor(0.7), [{"lr": 0.0}, {"lr": 0.0}])),
}
