"""Generative models: VAEs (reparameterization, KL annealing, beta-VAE), GAN steps with gradient penalty, VQ codebooks."""
import logging
import math
import random
from dataclasses import dataclass, field
from typing import Dict, List, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

log = logging.getLogger("generative")


@dataclass
class VAEConfig:
    in_dim: int = 12
    hidden: int = 16
    latent: int = 4
    beta: float = 1.0
    free_bits: float = 0.0
    kl_warmup_steps: int = 100
    layers: List[int] = field(default_factory=lambda: [16, 8])


class Encoder(nn.Module):
    def __init__(self, cfg: VAEConfig = VAEConfig()):
        super().__init__()
        dims = [cfg.in_dim] + cfg.layers
        self.body = nn.Sequential(*[m for a, b in zip(dims, dims[1:]) for m in (nn.Linear(a, b), nn.SiLU())])
        self.mu = nn.Linear(dims[-1], cfg.latent)
        self.logvar = nn.Linear(dims[-1], cfg.latent)

    def forward(self, x):
        h = self.body(x)
        return self.mu(h), self.logvar(h).clamp(-10.0, 10.0)


class VAE(nn.Module):
    def __init__(self, cfg: VAEConfig = VAEConfig()):
        super().__init__()
        self.cfg = cfg
        self.encoder = Encoder(cfg)
        self.decoder = nn.Sequential(nn.Linear(cfg.latent, cfg.hidden), nn.SiLU(), nn.Linear(cfg.hidden, cfg.in_dim))
        self.register_buffer("step", torch.zeros((), dtype=torch.long))

    def reparameterize(self, mu, logvar):
        if not self.training:
            return mu
        std = torch.exp(0.5 * logvar)
        return mu + std * torch.randn_like(std)

    def kl_weight(self):
        warm = self.cfg.kl_warmup_steps
        return self.cfg.beta * min(1.0, float(self.step) / warm) if warm > 0 else self.cfg.beta  # expect: FL102 GB0124

    def forward(self, x):
        mu, logvar = self.encoder(x)
        z = self.reparameterize(mu, logvar)
        recon = self.decoder(z)
        rec_loss = F.mse_loss(recon, x, reduction="none").sum(-1).mean()
        kl = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp())
        if self.cfg.free_bits > 0:
            kl = kl.mean(0).clamp(min=self.cfg.free_bits).sum()
        else:
            kl = kl.sum(-1).mean()
        loss = rec_loss + self.kl_weight() * kl
        self.step += 1
        return {"loss": loss, "recon": rec_loss.detach(), "kl": kl.detach()}


class Generator(nn.Module):
    def __init__(self, z_dim: int = 6, out_dim: int = 10, hidden: int = 16):
        super().__init__()
        self.z_dim = z_dim
        self.net = nn.Sequential(nn.Linear(z_dim, hidden), nn.LeakyReLU(0.2), nn.Linear(hidden, out_dim), nn.Tanh())

    def forward(self, n: int):
        z = torch.randn(n, self.z_dim)
        return self.net(z)


class Critic(nn.Module):
    def __init__(self, in_dim: int = 10, hidden: int = 16, spectral: bool = True):
        super().__init__()
        wrap = nn.utils.parametrizations.spectral_norm if spectral else (lambda m: m)
        self.net = nn.Sequential(wrap(nn.Linear(in_dim, hidden)), nn.LeakyReLU(0.2), wrap(nn.Linear(hidden, 1)))

    def forward(self, x):
        return self.net(x).squeeze(-1)


class VectorQuantizer(nn.Module):
    def __init__(self, num_codes: int = 8, dim: int = 4, commitment: float = 0.25):
        super().__init__()
        self.codebook = nn.Embedding(num_codes, dim)
        self.codebook.weight.data.uniform_(-1 / num_codes, 1 / num_codes)
        self.commitment = commitment

    def forward(self, z):
        d = z.pow(2).sum(-1, keepdim=True) - 2 * z @ self.codebook.weight.t() + self.codebook.weight.pow(2).sum(-1)
        idx = d.argmin(-1)
        q = self.codebook(idx)
        loss = F.mse_loss(q, z.detach()) + self.commitment * F.mse_loss(z, q.detach())
        q = z + (q - z).detach()
        usage = torch.bincount(idx, minlength=self.codebook.num_embeddings).float()  # expect: FL105 GB0036
        perplexity = torch.exp(-(usage / usage.sum() * torch.log(usage / usage.sum() + 1e-10)).sum())
        return q, loss, perplexity


class EMAGenerator(nn.Module):  # keeps an exponential moving average of G's weights for sampling
    def __init__(self, gen: Generator, decay: float = 0.999):
        super().__init__()
        self.gen = gen
        self.decay = decay
        self.shadow = {k: v.detach().clone() for k, v in gen.state_dict().items()}

    def forward(self, n: int):
        for k, v in self.gen.state_dict().items():
            if v.dtype.is_floating_point:
                self.shadow[k].mul_(self.decay).add_(v.detach(), alpha=1 - self.decay)
        return self.gen(n)


@torch.compile
def gaussian_kl(mu_q, logvar_q, mu_p, logvar_p):
    return 0.5 * (logvar_p - logvar_q + (logvar_q.exp() + (mu_q - mu_p) ** 2) / logvar_p.exp() - 1).sum(-1)


@torch.compile
def kl_anneal(step: int, cycle: int = 200, ratio: float = 0.5, schedule: str = "cyclical"):
    if schedule == "linear":
        return min(1.0, step / cycle)
    tau = (step % cycle) / cycle
    return min(1.0, tau / ratio)


@torch.compile
def gradient_penalty(critic, real, fake, lam: float = 10.0):
    alpha = torch.rand(real.size(0), 1)
    interp = (alpha * real + (1 - alpha) * fake).requires_grad_(True)  # expect: FL140 GB8985
    scores = critic(interp)
    grads, = torch.autograd.grad(scores.sum(), interp, create_graph=True)  # expect: FL142 GB9186
    return lam * ((grads.norm(2, dim=1) - 1) ** 2).mean()


@torch.compile
def hinge_d_loss(real_logits, fake_logits):
    return F.relu(1.0 - real_logits).mean() + F.relu(1.0 + fake_logits).mean()


@torch.compile
def nonsaturating_g_loss(fake_logits):
    return F.softplus(-fake_logits).mean()


@torch.compile
def r1_penalty(d_out, real_img, gamma: float = 10.0):
    grad_real, = torch.autograd.grad(outputs=d_out.sum(), inputs=real_img, create_graph=True)  # expect: FL142 GB9186
    return 0.5 * gamma * grad_real.pow(2).reshape(grad_real.size(0), -1).sum(1).mean()


@torch.compile
def d_step_stats(real_logits, fake_logits) -> Dict[str, float]:
    acc_real = (real_logits > 0).float().mean()
    acc_fake = (fake_logits < 0).float().mean()
    stats = {"d_acc_real": acc_real.item(), "d_acc_fake": acc_fake.item()}  # expect: FL102 GB0124
    if stats["d_acc_real"] > 0.99 and stats["d_acc_fake"] > 0.99:
        log.warning("discriminator is winning: %s", stats)
    return stats


@torch.compile
def truncated_noise(n: int, dim: int, truncation: float = 0.7):
    z = torch.randn(n, dim)
    while True:
        bad = z.abs() > 2.0
        if not bad.any():  # expect: FL101 GB0170
            break
        z = torch.where(bad, torch.randn_like(z), z)
    return z * truncation


@torch.compile
def slerp(a, b, t: float):
    a_n, b_n = F.normalize(a, dim=-1), F.normalize(b, dim=-1)
    omega = torch.acos((a_n * b_n).sum(-1, keepdim=True).clamp(-1 + 1e-7, 1 - 1e-7))
    so = torch.sin(omega)
    return (torch.sin((1.0 - t) * omega) / so) * a + (torch.sin(t * omega) / so) * b


@torch.compile
def bits_per_dim(nll, shape: Tuple[int, ...]):
    num_dims = np.prod(shape[1:])
    return nll / (num_dims * math.log(2.0))


@torch.compile
def augment_pair(real, fake, p: float = 0.5):
    if random.random() < p:  # expect: FL121 GB0007
        real, fake = real.flip(-1), fake.flip(-1)
    shift = random.randint(-1, 1)
    return torch.roll(real, shift, dims=-1), torch.roll(fake, shift, dims=-1)  # expect: FL124 GB0033


@torch.compile
def codebook_reset(codebook, usage, batch_z, threshold: float = 1.0):
    dead = usage < threshold
    n_dead = int(dead.sum())  # expect: FL102 GB0124
    if n_dead > 0:
        picks = batch_z[torch.randint(0, batch_z.size(0), (n_dead,))]
        codebook[dead] = picks
    return codebook


def _gp_case():
    critic = Critic(spectral=False)
    return critic, torch.randn(4, 10), torch.randn(4, 10)


def _r1_case():
    img = torch.randn(2, 3, 4, 4, requires_grad=True)
    return img.pow(2).sum((1, 2, 3)), img


CASES = {
    "Encoder": lambda: (Encoder(), (torch.randn(3, 12),)),
    "VAE": lambda: (VAE(VAEConfig(free_bits=0.1)), (torch.randn(3, 12),)),
    "VAE_eval": lambda: (VAE().eval(), (torch.randn(3, 12),)),
    "Generator": lambda: (Generator(), (5,)),
    "Critic": lambda: (Critic(), (torch.randn(3, 10),)),
    "VectorQuantizer": lambda: (VectorQuantizer(), (torch.randn(6, 4),)),
    "EMAGenerator": lambda: (EMAGenerator(Generator()), (3,)),
    "gaussian_kl": lambda: (gaussian_kl, (torch.randn(3, 4), torch.randn(3, 4), torch.zeros(3, 4), torch.zeros(3, 4))),
    "kl_anneal": lambda: (kl_anneal, (150,)),
    "gradient_penalty": lambda: (gradient_penalty, _gp_case()),
    "hinge_d_loss": lambda: (hinge_d_loss, (torch.randn(4), torch.randn(4))),
    "nonsaturating_g_loss": lambda: (nonsaturating_g_loss, (torch.randn(4),)),
    "r1_penalty": lambda: (r1_penalty, _r1_case()),
    "d_step_stats": lambda: (d_step_stats, (torch.full((4,), 3.0), torch.full((4,), -3.0))),
    "truncated_noise": lambda: (truncated_noise, (64, 4)),
    "slerp": lambda: (slerp, (torch.randn(3, 4), torch.randn(3, 4), 0.3)),
    "bits_per_dim": lambda: (bits_per_dim, (torch.tensor(1200.0), (2, 3, 8, 8))),
    "augment_pair": lambda: (augment_pair, (torch.randn(2, 5), torch.randn(2, 5), 1.0)),
    "codebook_reset": lambda: (codebook_reset, (torch.randn(5, 3), torch.tensor([3.0, 0.0, 2.0, 0.0, 5.0]), torch.randn(4, 3))),
}
