"""Contrastive / CLIP-style training code: towers, logit scale, InfoNCE variants, memory queues, momentum encoders."""
import logging
import math
from dataclasses import dataclass
from typing import List, Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger(__name__)


@dataclass
class ClipConfig:
    embed_dim: int = 8
    vision_width: int = 12
    text_vocab: int = 30
    text_width: int = 10
    init_temperature: float = 0.07
    max_logit_scale: float = 100.0
    queue_size: int = 16


class ProjectionHead(nn.Module):
    def __init__(self, in_dim, out_dim, hidden=None, normalize=True):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, hidden or in_dim), nn.GELU(), nn.Linear(hidden or in_dim, out_dim))
        self.normalize = normalize

    def forward(self, x):
        z = self.net(x)
        return F.normalize(z, dim=-1) if self.normalize else z


class TextTower(nn.Module):
    def __init__(self, cfg: ClipConfig = ClipConfig(), pad_id: int = 0):
        super().__init__()
        self.pad_id = pad_id
        self.tok = nn.Embedding(cfg.text_vocab, cfg.text_width, padding_idx=pad_id)
        self.proj = ProjectionHead(cfg.text_width, cfg.embed_dim)

    def forward(self, ids):
        mask = (ids != self.pad_id).float().unsqueeze(-1)
        h = self.tok(ids)
        pooled = (h * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return self.proj(pooled)


class VisionTower(nn.Module):
    def __init__(self, cfg: ClipConfig = ClipConfig()):
        super().__init__()
        self.stem = nn.Conv2d(3, cfg.vision_width, 3, stride=2, padding=1)
        self.proj = ProjectionHead(cfg.vision_width, cfg.embed_dim)

    def forward(self, images):
        assert images.dim() == 4, f"expected NCHW, got {tuple(images.shape)}"
        feats = F.relu(self.stem(images)).mean(dim=(2, 3))
        return self.proj(feats)


class CLIP(nn.Module):
    def __init__(self, cfg: ClipConfig = ClipConfig()):
        super().__init__()
        self.cfg = cfg
        self.visual = VisionTower(cfg)
        self.text = TextTower(cfg)
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / cfg.init_temperature)))

    def forward(self, images, ids):
        img = self.visual(images)
        txt = self.text(ids)
        scale = self.logit_scale.exp().clamp(max=self.cfg.max_logit_scale)
        logits = scale * img @ txt.t()
        labels = torch.arange(logits.size(0), device=logits.device)
        loss = (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels)) / 2
        return {"loss": loss, "logit_scale": scale.item()}  # expect: FL102 GB0124


class SigLIPLoss(nn.Module):
    def __init__(self, init_t: float = 10.0, init_b: float = -10.0):
        super().__init__()
        self.t_prime = nn.Parameter(torch.tensor(math.log(init_t)))
        self.bias = nn.Parameter(torch.tensor(init_b))

    def forward(self, img, txt):
        logits = img @ txt.t() * self.t_prime.exp() + self.bias
        targets = 2 * torch.eye(img.size(0), device=img.device) - 1
        return -F.logsigmoid(targets * logits).sum() / img.size(0)


class MoCoQueue(nn.Module):
    def __init__(self, dim: int = 8, size: int = 16):
        super().__init__()
        self.register_buffer("queue", F.normalize(torch.randn(size, dim), dim=1))
        self.register_buffer("ptr", torch.zeros((), dtype=torch.long))

    @torch.no_grad()
    def enqueue(self, keys):
        n = keys.shape[0]
        p = int(self.ptr)  # expect: FL102 GB0124
        assert self.queue.shape[0] % n == 0, "queue size must be divisible by batch size"
        self.queue[p:p + n] = keys
        self.ptr.fill_((p + n) % self.queue.shape[0])

    def forward(self, q, k, temperature: float = 0.2):
        l_pos = (q * k).sum(-1, keepdim=True)
        l_neg = q @ self.queue.clone().t()
        logits = torch.cat([l_pos, l_neg], dim=1) / temperature
        self.enqueue(k.detach())
        return F.cross_entropy(logits, torch.zeros(q.size(0), dtype=torch.long))


class MomentumEncoder(nn.Module):
    def __init__(self, dim_in: int = 6, dim_out: int = 8, m: float = 0.99):
        super().__init__()
        self.online = ProjectionHead(dim_in, dim_out)
        self.target = ProjectionHead(dim_in, dim_out)
        self.target.load_state_dict(self.online.state_dict())
        for p in self.target.parameters():
            p.requires_grad_(False)
        self.m = m

    def forward(self, x1, x2):
        with torch.no_grad():
            for po, pt in zip(self.online.parameters(), self.target.parameters()):
                pt.mul_(self.m).add_(po.detach(), alpha=1 - self.m)
            targets = self.target(x2)
        preds = self.online(x1)
        return 2 - 2 * (preds * targets).sum(-1).mean()


@torch.compile
def info_nce(query, keys, temperature: float = 0.1):
    query, keys = F.normalize(query, dim=-1), F.normalize(keys, dim=-1)
    logits = query @ keys.t() / temperature
    return F.cross_entropy(logits, torch.arange(query.size(0)))


@torch.compile
def clamp_logit_scale(logit_scale, max_scale: float = 100.0):
    with torch.no_grad():
        logit_scale.clamp_(0, math.log(max_scale))
    return logit_scale


@torch.compile
def supcon_loss(features, labels, temperature: float = 0.1):
    features = F.normalize(features, dim=-1)
    sim = features @ features.t() / temperature
    self_mask = torch.eye(sim.size(0), dtype=torch.bool)
    pos_mask = (labels[:, None] == labels[None, :]) & ~self_mask
    sim = sim.masked_fill(self_mask, -1e9)
    log_prob = sim - torch.logsumexp(sim, dim=1, keepdim=True)
    n_pos = pos_mask.sum(1)
    if (n_pos == 0).any():  # expect: FL101 GB0170
        logger.warning("some anchors have no positives in the batch")  # expect: FL111 GB0291
    mean_log_pos = (log_prob * pos_mask).sum(1) / n_pos.clamp(min=1)
    return -mean_log_pos.mean()


@torch.compile
def hard_negative_loss(anchor, positive, negatives, beta: float = 1.0, tau: float = 0.1):
    pos = torch.exp((anchor * positive).sum(-1) / tau)
    neg_sim = torch.einsum("bd,bkd->bk", anchor, negatives) / tau
    imp = torch.softmax(beta * neg_sim, dim=-1).detach()
    neg = (imp * torch.exp(neg_sim)).sum(-1) * negatives.size(1)
    return -torch.log(pos / (pos + neg)).mean()


@torch.compile
def retrieval_metrics(img_emb, txt_emb, ks=(1, 5)):
    sims = img_emb @ txt_emb.t()
    ranks = (sims > sims.diag()[:, None]).sum(1)
    out = {}
    for k in ks:
        out[f"R@{k}"] = (ranks < k).float().mean().item() * 100  # expect: FL102 GB0124
    return out


@torch.compile
def temperature_schedule(step: int, total: int, t_start: float = 0.2, t_end: float = 0.05):
    frac = min(step / max(total, 1), 1.0)
    t = t_end + 0.5 * (t_start - t_end) * (1 + math.cos(math.pi * frac))
    return torch.tensor(t)


@torch.compile
def mine_hard_negatives(anchor, bank, positives_idx: List[int], k: int = 2):
    sims = anchor @ bank.t()
    for row, pos in enumerate(positives_idx):
        sims[row, pos] = float("-inf")
    return sims.topk(k, dim=1).indices


@torch.compile
def zero_shot_classify(image_emb, class_emb, class_names: List[str]):
    probs = (100.0 * image_emb @ class_emb.t()).softmax(dim=-1)
    best = probs.argmax(dim=-1)
    return [class_names[i] for i in best.tolist()]  # expect: FL104 GB0033


@torch.compile
def dedup_captions(caption_emb, threshold: float = 0.95):
    sims = caption_emb @ caption_emb.t()
    dup = torch.triu(sims > threshold, diagonal=1).any(0)
    keep = torch.nonzero(~dup).squeeze(1)  # expect: FL105 GB0036
    return caption_emb[keep]


@torch.compile
def embedding_stats(emb: torch.Tensor, name: Optional[str] = None):
    norms = emb.norm(dim=-1)
    stats = {"mean_norm": norms.mean(), "std": emb.std(0).mean()}
    if name is not None:
        print(f"[{name}] mean norm {stats['mean_norm']:.3f}")  # expect: FL110 GB0059
    return stats


@torch.compile
def whiten_np(emb):
    mu = emb.mean(0, keepdim=True)
    cov = np.cov((emb - mu).detach().numpy(), rowvar=False)  # expect: FL122 GB0033
    w = torch.from_numpy(np.linalg.inv(np.linalg.cholesky(cov + 1e-3 * np.eye(cov.shape[0])))).float()
    return (emb - mu) @ w.t()


_ids = lambda: torch.tensor([[3, 5, 7, 0], [2, 9, 0, 0], [4, 4, 8, 1]])  # noqa: E731

CASES = {
    "ProjectionHead": lambda: (ProjectionHead(6, 4), (torch.randn(3, 6),)),
    "TextTower": lambda: (TextTower(), (_ids(),)),
    "VisionTower": lambda: (VisionTower(), (torch.randn(3, 3, 8, 8),)),
    "CLIP": lambda: (CLIP(), (torch.randn(3, 3, 8, 8), _ids())),
    "SigLIPLoss": lambda: (SigLIPLoss(), (torch.randn(3, 5), torch.randn(3, 5))),
    "MoCoQueue": lambda: (MoCoQueue(), (F.normalize(torch.randn(4, 8), dim=1), F.normalize(torch.randn(4, 8), dim=1))),
    "MomentumEncoder": lambda: (MomentumEncoder(), (torch.randn(3, 6), torch.randn(3, 6))),
    "info_nce": lambda: (info_nce, (torch.randn(4, 5), torch.randn(4, 5))),
    "clamp_logit_scale": lambda: (clamp_logit_scale, (torch.tensor(6.0),)),
    "supcon_loss": lambda: (supcon_loss, (torch.randn(5, 4), torch.tensor([0, 1, 0, 2, 1]))),
    "hard_negative_loss": lambda: (hard_negative_loss, (torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 5, 4))),
    "retrieval_metrics": lambda: (retrieval_metrics, (torch.randn(6, 4), torch.randn(6, 4))),
    "temperature_schedule": lambda: (temperature_schedule, (30, 100)),
    "mine_hard_negatives": lambda: (mine_hard_negatives, (torch.randn(2, 4), torch.randn(6, 4), [1, 3])),
    "zero_shot_classify": lambda: (zero_shot_classify, (torch.randn(2, 4), torch.randn(3, 4), ["cat", "dog", "car"])),
    "dedup_captions": lambda: (dedup_captions, (torch.tensor([[1.0, 0.0], [0.99, 0.1], [0.0, 1.0]]),)),
    "embedding_stats": lambda: (embedding_stats, (torch.randn(4, 3), "img")),
    "whiten_np": lambda: (whiten_np, (torch.randn(6, 3),)),
}
