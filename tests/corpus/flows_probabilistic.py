"""Probabilistic models: normalizing flows, torch.distributions, VI / ELBO, mixture density nets, Bayesian layers, MC dropout."""
import logging
import math
import time
import warnings
from typing import Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.distributions import Categorical, Independent, Normal, kl_divergence

logger = logging.getLogger(__name__)

LOG_2PI = math.log(2 * math.pi)


def standard_normal_logprob(z):
    return -0.5 * (z.pow(2) + LOG_2PI).sum(-1)


def _check_finite(t, name: str):
    if not torch.isfinite(t).all():  # expect: FL101 GB0170
        warnings.warn(f"{name} contains NaN/Inf; replacing with finite values")  # expect: FL112 GB0007
        t = torch.nan_to_num(t, nan=0.0, posinf=1e4, neginf=-1e4)
    return t


class PlanarFlow(nn.Module):
    def __init__(self, dim: int = 4):
        super().__init__()
        self.w = nn.Parameter(torch.randn(dim) * 0.1)
        self.u = nn.Parameter(torch.randn(dim) * 0.1)
        self.b = nn.Parameter(torch.zeros(()))

    def _u_hat(self):
        wu = self.w @ self.u
        return self.u + (F.softplus(wu) - 1 - wu) * self.w / self.w.pow(2).sum()

    def forward(self, z):
        u = self._u_hat()
        lin = z @ self.w + self.b
        f_z = z + u * torch.tanh(lin)[:, None]
        psi = (1 - torch.tanh(lin) ** 2)[:, None] * self.w
        log_det = torch.log((1 + psi @ u).abs() + 1e-8)
        return f_z, log_det


class AffineCoupling(nn.Module):
    def __init__(self, dim: int = 6, hidden: int = 16, parity: int = 0):
        super().__init__()
        mask = torch.arange(dim) % 2 == parity
        self.register_buffer("mask", mask.float())
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, 2 * dim))
        self.scale = nn.Parameter(torch.zeros(dim))

    def forward(self, x, reverse: bool = False):
        x_id = x * self.mask
        s, t = self.net(x_id).chunk(2, dim=-1)
        s = self.scale * torch.tanh(s) * (1 - self.mask)
        t = t * (1 - self.mask)
        if reverse:
            return x_id + (1 - self.mask) * ((x - t) * torch.exp(-s)), -s.sum(-1)
        return x_id + (1 - self.mask) * (x * torch.exp(s) + t), s.sum(-1)


class ActNorm(nn.Module):
    """Glow's activation normalization with data-dependent initialization on the first batch."""

    def __init__(self, num_features: int = 6):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(num_features))
        self.log_scale = nn.Parameter(torch.zeros(num_features))
        self.initialized = False

    def forward(self, x):
        if not self.initialized:
            with torch.no_grad():
                self.loc.data.copy_(-x.mean(0))
                self.log_scale.data.copy_(-torch.log(x.std(0) + 1e-6))
            self.initialized = True  # expect: FL302
        y = (x + self.loc) * torch.exp(self.log_scale)
        return y, self.log_scale.sum().expand(x.shape[0])


class RealNVP(nn.Module):
    def __init__(self, dim: int = 6, n_layers: int = 4):
        super().__init__()
        self.layers = nn.ModuleList([AffineCoupling(dim, parity=i % 2) for i in range(n_layers)])

    def forward(self, x):
        log_det = torch.zeros(x.shape[0])
        for layer in self.layers:
            x, ld = layer(x)
            log_det = log_det + ld
        nll = -(standard_normal_logprob(x) + log_det).mean()
        return x, _check_finite(nll, "nll")


class Invertible1x1Conv(nn.Module):
    def __init__(self, channels: int = 4):
        super().__init__()
        w = torch.linalg.qr(torch.randn(channels, channels))[0]
        self.weight = nn.Parameter(w)

    def forward(self, x, reverse: bool = False):
        _, _, H, W = x.shape
        log_det = torch.slogdet(self.weight)[1] * H * W
        weight = torch.inverse(self.weight) if reverse else self.weight
        z = F.conv2d(x, weight[:, :, None, None])
        return z, (-log_det if reverse else log_det)


@torch.compile
def gaussian_elbo(x, recon_mu, recon_logvar, mu, logvar, beta: float = 1.0):
    q_z = Normal(mu, torch.exp(0.5 * logvar))
    p_z = Normal(torch.zeros_like(mu), torch.ones_like(mu))
    kl = kl_divergence(q_z, p_z).sum(-1)
    log_lik = Normal(recon_mu, torch.exp(0.5 * recon_logvar)).log_prob(x).sum(-1)
    return -(log_lik - beta * kl).mean()


def analytic_kl_elbo(x, recon, mu, logvar, beta: float = 1.0):
    rec = F.binary_cross_entropy_with_logits(recon, x, reduction="none").sum(-1)
    kl = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(-1)
    return (rec + beta * kl).mean(), rec.mean(), kl.mean()


@torch.compile
def iwae_bound(log_px_z, log_pz, log_qz_x):
    log_w = log_px_z + log_pz - log_qz_x
    k = log_w.shape[0]
    bound = torch.logsumexp(log_w, dim=0) - math.log(k)
    w = F.softmax(log_w, dim=0)
    ess = (1.0 / (w ** 2).sum(0)).mean()
    logger.info("IWAE k=%d ess=%.2f", k, ess.item())  # expect: FL102 GB0124; FL111 GB0291
    return -bound.mean()


class MixtureDensityNetwork(nn.Module):
    def __init__(self, in_dim: int = 3, out_dim: int = 2, n_components: int = 4, hidden: int = 16):
        super().__init__()
        self.k, self.d = n_components, out_dim
        self.trunk = nn.Sequential(nn.Linear(in_dim, hidden), nn.Tanh())
        self.pi = nn.Linear(hidden, n_components)
        self.mu = nn.Linear(hidden, n_components * out_dim)
        self.log_sigma = nn.Linear(hidden, n_components * out_dim)

    def forward(self, x, y):
        h = self.trunk(x)
        log_pi = F.log_softmax(self.pi(h), dim=-1)
        mu = self.mu(h).view(-1, self.k, self.d)
        log_sigma = self.log_sigma(h).view(-1, self.k, self.d).clamp(-5.0, 5.0)
        z = (y[:, None, :] - mu) / log_sigma.exp()
        log_prob = -0.5 * (z.pow(2) + LOG_2PI).sum(-1) - log_sigma.sum(-1)
        return -torch.logsumexp(log_pi + log_prob, dim=-1).mean()


@torch.compile
def mdn_sample(log_pi, mu, sigma, temperature: float = 1.0):
    comp = Categorical(logits=log_pi / temperature).sample()
    samples = []
    for i in range(log_pi.shape[0]):
        k = comp[i].item()  # expect: FL102 GB0124
        samples.append(mu[i, k] + sigma[i, k] * math.sqrt(temperature) * torch.randn(mu.shape[-1]))
    return torch.stack(samples)


class BayesLinear(nn.Module):
    """Bayes-by-backprop linear layer with a factorised Gaussian posterior."""

    def __init__(self, in_features: int = 5, out_features: int = 3, prior_sigma: float = 1.0):
        super().__init__()
        self.w_mu = nn.Parameter(torch.randn(out_features, in_features) * 0.1)
        self.w_rho = nn.Parameter(torch.full((out_features, in_features), -3.0))
        self.b_mu = nn.Parameter(torch.zeros(out_features))
        self.b_rho = nn.Parameter(torch.full((out_features,), -3.0))
        self.prior_sigma = prior_sigma

    def _kl(self, mu, sigma):
        return (torch.log(self.prior_sigma / sigma) + (sigma ** 2 + mu ** 2) / (2 * self.prior_sigma ** 2) - 0.5).sum()

    def forward(self, x):
        w_sigma, b_sigma = F.softplus(self.w_rho), F.softplus(self.b_rho)
        w = self.w_mu + w_sigma * torch.randn_like(w_sigma)
        b = self.b_mu + b_sigma * torch.randn_like(b_sigma)
        kl = self._kl(self.w_mu, w_sigma) + self._kl(self.b_mu, b_sigma)
        return F.linear(x, w, b), kl


class BayesianMLP(nn.Module):
    def __init__(self, dims: Tuple[int, ...] = (5, 8, 3), kl_weight: float = 1e-3):
        super().__init__()
        self.layers = nn.ModuleList([BayesLinear(a, b) for a, b in zip(dims[:-1], dims[1:])])
        self.kl_weight = kl_weight

    def forward(self, x, y):
        kl_total = 0.0
        for i, layer in enumerate(self.layers):
            x, kl = layer(x)
            kl_total = kl_total + kl
            if i < len(self.layers) - 1:
                x = F.relu(x)
        nll = F.cross_entropy(x, y)
        loss = nll + self.kl_weight * kl_total
        if loss > 50:  # expect: FL101 GB0170
            warnings.warn(f"BayesianMLP loss exploded: nll={float(nll):.2f}")  # expect: FL102 GB0124; FL112 GB0007
        return loss


@torch.compile
def mc_dropout_uncertainty(model, x, n_samples: int = 4, threshold: float = 0.05):
    model.train()
    probs = torch.stack([F.softmax(model(x), dim=-1) for _ in range(n_samples)])
    mean = probs.mean(0)
    entropy = -(mean * torch.log(mean + 1e-12)).sum(-1)
    uncertain = (entropy > threshold).nonzero(as_tuple=True)[0]  # expect: FL105 GB0036
    return mean, entropy, uncertain.tolist()  # expect: FL103 GB0033


@torch.compile
def truncated_normal_rejection(shape: Tuple[int, int], bound: float = 2.0):
    z = torch.randn(shape)
    bad = z.abs() > bound
    while bad.any():  # expect: FL101 GB0170
        z = torch.where(bad, torch.randn(shape), z)
        bad = z.abs() > bound
    return z


@torch.compile
def gmm_em_step(x, means, log_vars, log_weights, min_weight: float = 1e-3):
    diff = x[:, None, :] - means[None]
    log_prob = -0.5 * ((diff ** 2) / log_vars.exp() + log_vars + LOG_2PI).sum(-1) + log_weights
    resp = F.softmax(log_prob, dim=1)
    nk = resp.sum(0) + 1e-10
    new_means = resp.t() @ x / nk[:, None]
    new_vars = (resp.t() @ x.pow(2)) / nk[:, None] - new_means.pow(2)
    new_weights = nk / x.shape[0]
    dead = new_weights < min_weight
    if dead.any():  # expect: FL101 GB0170
        idx = torch.randint(0, x.shape[0], (int(dead.sum()),))  # expect: FL102 GB0124
        new_means[dead] = x[idx]
        new_weights = torch.where(dead, torch.full_like(new_weights, min_weight), new_weights)
    return new_means, new_vars.clamp(min=1e-4).log(), torch.log(new_weights / new_weights.sum())


class KLAnnealedVAE(nn.Module):
    def __init__(self, in_dim: int = 6, latent: int = 2, warmup_steps: int = 100):
        super().__init__()
        self.enc = nn.Linear(in_dim, 2 * latent)
        self.dec = nn.Linear(latent, in_dim)
        self.warmup_steps = warmup_steps
        self.step = 0

    def forward(self, x):
        mu, logvar = self.enc(x).chunk(2, dim=-1)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        recon = self.dec(z)
        beta = min(1.0, self.step / self.warmup_steps)
        if self.step % 50 == 0:
            logger.info("KL annealing: step %d, beta=%.3f", self.step, beta)  # expect: FL111 GB0291
        self.step += 1  # expect: FL302
        loss, rec, kl = analytic_kl_elbo(torch.sigmoid(x), recon, mu, logvar, beta)
        return loss


class MaskedAutoregressiveFlow(nn.Module):
    """MADE-based MAF: density in one pass, sampling needs one pass per dimension."""

    def __init__(self, dim: int = 4, hidden: int = 12):
        super().__init__()
        self.dim = dim
        in_deg = torch.arange(1, dim + 1)
        hid_deg = torch.arange(hidden) % (dim - 1) + 1
        self.register_buffer("m1", (hid_deg[:, None] >= in_deg[None]).float())
        self.register_buffer("m2", (in_deg[:, None] > hid_deg[None]).float().repeat(2, 1))
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, 2 * dim)

    def made(self, x):
        h = F.relu(F.linear(x, self.fc1.weight * self.m1, self.fc1.bias))
        mu, alpha = F.linear(h, self.fc2.weight * self.m2, self.fc2.bias).chunk(2, dim=-1)
        return mu, alpha.clamp(-5, 5)

    def forward(self, x):
        mu, alpha = self.made(x)
        u = (x - mu) * torch.exp(-alpha)
        return u, standard_normal_logprob(u) - alpha.sum(-1)

    @torch.no_grad()
    def sample(self, n: int):
        x = torch.zeros(n, self.dim)
        u = torch.randn(n, self.dim)
        for i in range(self.dim):
            mu, alpha = self.made(x)
            x[:, i] = mu[:, i] + u[:, i] * torch.exp(alpha[:, i])
        return x


@torch.compile
def posterior_predictive(loc, scale, x_grid, n_draws: int = 8):
    posterior = Independent(Normal(loc, scale), 1)
    theta = posterior.rsample((n_draws,))
    logits = x_grid @ theta.t()
    probs = torch.sigmoid(logits).mean(-1)
    lo, hi = np.percentile(torch.sigmoid(logits).detach().numpy(), [5, 95], axis=-1)
    return probs, torch.from_numpy(lo), torch.from_numpy(hi)


@torch.compile
def elbo_with_timing(model, x):
    start = time.perf_counter()  # expect: FL121 GB0007
    loss = model(x)
    elapsed_ms = (time.perf_counter() - start) * 1e3  # expect: FL121 GB0007
    return loss, elapsed_ms


class PiecewiseLinearCoupling(nn.Module):
    """NICE-style piecewise-linear CDF coupling (Mueller et al.), bins found with searchsorted."""

    def __init__(self, dim: int = 4, n_bins: int = 5, hidden: int = 12):
        super().__init__()
        self.half = dim // 2
        self.n_bins = n_bins
        self.net = nn.Sequential(nn.Linear(self.half, hidden), nn.ReLU(), nn.Linear(hidden, (dim - self.half) * n_bins))

    def forward(self, x):
        x_a, x_b = x[:, :self.half], x[:, self.half:]
        if (x_b < 0).any() or (x_b > 1).any():  # expect: FL101 GB0170
            warnings.warn("PiecewiseLinearCoupling expects inputs in [0, 1]; squashing with a sigmoid")  # expect: FL112 GB0007
            x_b = torch.sigmoid(x_b)
        pdf = F.softmax(self.net(x_a).view(x.shape[0], -1, self.n_bins), dim=-1)
        cdf = F.pad(torch.cumsum(pdf, dim=-1), (1, 0))
        u = x_b.clamp(0, 1 - 1e-6)
        bin_idx = (u * self.n_bins).long()
        alpha = u * self.n_bins - bin_idx.float()
        y_b = cdf.gather(-1, bin_idx[..., None]).squeeze(-1) + alpha * pdf.gather(-1, bin_idx[..., None]).squeeze(-1)
        log_det = torch.log(pdf.gather(-1, bin_idx[..., None]).squeeze(-1) * self.n_bins).sum(-1)
        return torch.cat([x_a, y_b], dim=-1), log_det


class ChunkedLikelihood(nn.Module):
    """Evaluates a flow's log-likelihood in memory-bounded chunks."""

    def __init__(self, dim: int = 4, chunk: int = 8):
        super().__init__()
        self.flow = PlanarFlow(dim)
        self.chunk = chunk

    def forward(self, z):
        if z.shape[0] <= self.chunk:  # expect: FL301
            f_z, log_det = self.flow(z)
            return standard_normal_logprob(f_z) + log_det
        outs = []
        for piece in z.split(self.chunk):
            f_z, log_det = self.flow(piece)
            outs.append(standard_normal_logprob(f_z) + log_det)
        return torch.cat(outs)


@torch.compile
def metropolis_hastings(log_prob_fn, x0, n_steps: int = 6, step_size: float = 0.5):
    x, lp = x0, log_prob_fn(x0)
    n_accept = 0
    for _ in range(n_steps):
        proposal = x + step_size * torch.randn_like(x)
        lp_prop = log_prob_fn(proposal)
        if torch.rand(()).log() < lp_prop - lp:  # expect: FL101 GB0170
            x, lp = proposal, lp_prop
            n_accept += 1
    return x, n_accept / n_steps


@torch.compile
def svi_step(guide_loc, guide_log_scale, data, step: int, n_particles: int = 4):
    q = Normal(guide_loc, guide_log_scale.exp())
    z = q.rsample((n_particles,))
    log_lik = Normal(z[:, None, :], 1.0).log_prob(data[None]).sum((-1, -2))
    log_prior = Normal(0.0, 1.0).log_prob(z).sum(-1)
    elbo = (log_lik + log_prior - q.log_prob(z).sum(-1)).mean()
    if step % 10 == 0:
        print(f"[svi] step {step:5d}  elbo {elbo.item():.3f}")  # expect: FL102 GB0124; FL110 GB0059
    return -elbo


def stable_log_det(z, log_det):
    total = standard_normal_logprob(z) + log_det
    if total.min() < -1e3:  # expect: FL201
        total = total.clamp(min=-1e3)
    return total


def export_density():
    return torch.jit.trace(stable_log_det, (torch.randn(4, 3), torch.randn(4)))


def _vae_batch(B=5, D=6, L=3):
    torch.manual_seed(1)
    return (torch.randn(B, D), torch.randn(B, D), torch.randn(B, D) * 0.1, torch.randn(B, L), torch.randn(B, L) * 0.1)


CASES = {
    "PlanarFlow": lambda: (PlanarFlow(), (torch.randn(5, 4),)),
    "RealNVP": lambda: (RealNVP(), (torch.randn(7, 6),)),
    "RealNVP_overflow": lambda: (RealNVP(), (torch.full((3, 6), 1e30),)),
    "AffineCoupling_reverse": lambda: (AffineCoupling(parity=1), (torch.randn(4, 6), True)),
    "ActNorm": lambda: (ActNorm(), (torch.randn(9, 6) * 2 + 1,)),
    "Invertible1x1Conv": lambda: (Invertible1x1Conv(), (torch.randn(2, 4, 3, 5),)),
    "gaussian_elbo": lambda: (gaussian_elbo, _vae_batch()),
    "iwae_bound": lambda: (iwae_bound, (torch.randn(6, 4), torch.randn(6, 4), torch.randn(6, 4))),
    "MixtureDensityNetwork": lambda: (MixtureDensityNetwork(), (torch.randn(7, 3), torch.randn(7, 2))),
    "mdn_sample": lambda: (mdn_sample, (torch.randn(5, 4).log_softmax(-1), torch.randn(5, 4, 2), torch.rand(5, 4, 2) + 0.1, 0.8)),
    "BayesianMLP": lambda: (BayesianMLP(), (torch.randn(6, 5), torch.tensor([0, 1, 2, 0, 1, 2]))),
    "BayesianMLP_exploding": lambda: (BayesianMLP(), (torch.randn(6, 5) * 1e5, torch.tensor([0, 1, 2, 0, 1, 2]))),
    "mc_dropout_uncertainty": lambda: (mc_dropout_uncertainty, (nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.3), nn.Linear(8, 3)), torch.randn(6, 4))),
    "truncated_normal_rejection": lambda: (truncated_normal_rejection, ((6, 5), 1.0)),
    "gmm_em_step": lambda: (gmm_em_step, (torch.randn(12, 2), torch.tensor([[0.0, 0.0], [1.0, 1.0], [50.0, 50.0]]), torch.zeros(3, 2), torch.log(torch.ones(3) / 3))),
    "KLAnnealedVAE": lambda: (KLAnnealedVAE(), (torch.randn(5, 6),)),
    "MaskedAutoregressiveFlow": lambda: (MaskedAutoregressiveFlow(), (torch.randn(6, 4),)),
    "posterior_predictive": lambda: (posterior_predictive, (torch.zeros(3), torch.ones(3) * 0.5, torch.randn(7, 3))),
    "elbo_with_timing": lambda: (elbo_with_timing, (KLAnnealedVAE(), torch.randn(5, 6))),
    "PiecewiseLinearCoupling": lambda: (PiecewiseLinearCoupling(), (torch.rand(6, 4),)),
    "PiecewiseLinearCoupling_unbounded": lambda: (PiecewiseLinearCoupling(), (torch.randn(6, 4),)),
    "ChunkedLikelihood": lambda: (ChunkedLikelihood(), (torch.randn(6, 4),), (torch.randn(13, 4),)),
    "metropolis_hastings": lambda: (metropolis_hastings, (standard_normal_logprob, torch.full((3,), 2.0))),
    "svi_step": lambda: (svi_step, (torch.zeros(2), torch.zeros(2), torch.randn(5, 2) + 1, 20)),
}

TRACED = {
    "stable_log_det": lambda: (stable_log_det, (torch.randn(4, 3) * 40, torch.randn(4))),
}
