"""Scientific ML: ODE integrators, neural ODEs, PINN residuals, finite differences, Fourier features, FNO, optics, n-body."""
import logging
import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from scipy import special
from torch import nn

logger = logging.getLogger("sciml")


@dataclass
class LorenzParams:
    sigma: float = 10.0
    rho: float = 28.0
    beta: float = 8.0 / 3.0


@dataclass
class SolverConfig:
    rtol: float = 1e-3
    atol: float = 1e-6
    max_steps: int = 50
    safety: float = 0.9


class LorenzField(nn.Module):
    def __init__(self, p: LorenzParams = LorenzParams()):
        super().__init__()
        self.p = p

    def forward(self, t, y):
        x, yy, z = y.unbind(-1)
        return torch.stack([self.p.sigma * (yy - x), x * (self.p.rho - z) - yy, x * yy - self.p.beta * z], -1)


class ODEFunc(nn.Module):
    """Neural ODE vector field; counts function evaluations like the torchdiffeq examples."""

    def __init__(self, dim=3, hidden=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.Tanh(), nn.Linear(hidden, dim))
        self.nfe = 0

    def forward(self, t, y):
        self.nfe += 1  # expect: FL302
        return self.net(y)


def rk4_step(f, t, y, dt):
    k1 = f(t, y)
    k2 = f(t + dt / 2, y + dt * k1 / 2)
    k3 = f(t + dt / 2, y + dt * k2 / 2)
    k4 = f(t + dt, y + dt * k3)
    return y + dt * (k1 + 2 * k2 + 2 * k3 + k4) / 6


@torch.compile
def odeint_rk4(f, y0, t):
    ys = [y0]
    y = y0
    for i in range(t.shape[0] - 1):  # expect: FL301
        y = rk4_step(f, t[i], y, t[i + 1] - t[i])
        ys.append(y)
    return torch.stack(ys)


class NeuralODE(nn.Module):
    def __init__(self, func: nn.Module, n_steps: int = 4):
        super().__init__()
        self.func = func
        self.n_steps = n_steps

    def forward(self, y0, t1: float = 1.0):
        dt = t1 / self.n_steps
        y = y0
        for k in range(self.n_steps):
            y = rk4_step(self.func, k * dt, y, dt)
        return y


@torch.compile
def adaptive_rk23(f, y0, t0: float, t1: float, dt: float = 0.05, cfg: SolverConfig = SolverConfig()):
    t, y = t0, y0
    n_accept, n_reject = 0, 0
    for _ in range(cfg.max_steps):
        if t >= t1:
            break
        dt = min(dt, t1 - t)
        k1 = f(t, y)
        k2 = f(t + dt / 2, y + dt / 2 * k1)
        k3 = f(t + 3 * dt / 4, y + 3 * dt / 4 * k2)
        y_new = y + dt * (2 * k1 + 3 * k2 + 4 * k3) / 9
        k4 = f(t + dt, y_new)
        err = (dt * (-5 * k1 / 72 + k2 / 12 + k3 / 9 - k4 / 8)).abs().max()
        tol = cfg.atol + cfg.rtol * y_new.abs().max()
        if err <= tol:  # expect: FL101 GB0170
            t, y = t + dt, y_new
            n_accept += 1
        else:
            n_reject += 1
        dt = dt * min(5.0, max(0.2, cfg.safety * float((tol / (err + 1e-12)) ** (1 / 3))))
    logger.info("rk23: %d accepted, %d rejected", n_accept, n_reject)
    return y


class PINN(nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, x, t):
        return self.net(torch.cat([x, t], dim=-1))


@torch.compile
def heat_residual(model, x, t, alpha: float = 0.1):
    x = x.requires_grad_(True)  # expect: FL140 GB0125
    t = t.requires_grad_(True)  # expect: FL140 GB0125
    u = model(x, t)
    u_t = torch.autograd.grad(u, t, torch.ones_like(u), create_graph=True)[0]  # expect: FL142 GB9186
    u_x = torch.autograd.grad(u, x, torch.ones_like(u), create_graph=True)[0]  # expect: FL142 GB9186
    u_xx = torch.autograd.grad(u_x, x, torch.ones_like(u_x), create_graph=True)[0]  # expect: FL142 GB9186
    return ((u_t - alpha * u_xx) ** 2).mean()


class FourierFeatures(nn.Module):
    def __init__(self, in_dim=2, n_freq=8, scale=10.0):
        super().__init__()
        self.register_buffer("B", torch.randn(in_dim, n_freq) * scale)

    def forward(self, x):
        proj = 2 * math.pi * x @ self.B
        return torch.cat([torch.sin(proj), torch.cos(proj)], dim=-1)


class SineLayer(nn.Module):
    def __init__(self, in_f, out_f, omega_0=30.0, is_first=False):
        super().__init__()
        self.omega_0 = omega_0
        self.linear = nn.Linear(in_f, out_f)
        bound = 1 / in_f if is_first else np.sqrt(6 / in_f) / omega_0
        with torch.no_grad():
            self.linear.weight.uniform_(-bound, bound)

    def forward(self, x):
        return torch.sin(self.omega_0 * self.linear(x))


class Siren(nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.features = FourierFeatures()
        self.layers = nn.Sequential(SineLayer(16, hidden, is_first=True), SineLayer(hidden, hidden))
        self.out = nn.Linear(hidden, 1)

    def forward(self, coords):
        return self.out(self.layers(self.features(coords)))


class SpectralConv2d(nn.Module):
    def __init__(self, in_ch=2, out_ch=2, modes1=3, modes2=3):
        super().__init__()
        self.modes1, self.modes2 = modes1, modes2
        scale = 1 / (in_ch * out_ch)
        self.weights1 = nn.Parameter(scale * torch.rand(in_ch, out_ch, modes1, modes2, dtype=torch.cfloat))
        self.weights2 = nn.Parameter(scale * torch.rand(in_ch, out_ch, modes1, modes2, dtype=torch.cfloat))

    def forward(self, x):
        b, _, h, w = x.shape
        x_ft = torch.fft.rfft2(x)
        out_ft = torch.zeros(b, self.weights1.shape[1], h, w // 2 + 1, dtype=torch.cfloat)
        out_ft[:, :, :self.modes1, :self.modes2] = torch.einsum("bixy,ioxy->boxy", x_ft[:, :, :self.modes1, :self.modes2], self.weights1)
        out_ft[:, :, -self.modes1:, :self.modes2] = torch.einsum("bixy,ioxy->boxy", x_ft[:, :, -self.modes1:, :self.modes2], self.weights2)
        return torch.fft.irfft2(out_ft, s=(h, w))


def laplacian_fd(u, dx: float):
    return (torch.roll(u, 1, -1) + torch.roll(u, -1, -1) + torch.roll(u, 1, -2) + torch.roll(u, -1, -2) - 4 * u) / dx ** 2


laplacian = torch.compile(laplacian_fd)


@torch.compile
def heat_solver(u0, alpha: float = 0.1, dx: float = 0.1, n_steps: int = 20, log_every: int = 10):
    dt = 0.2 * dx ** 2 / alpha  # CFL-stable explicit step
    u = u0.clone()
    for step in range(n_steps):
        u = u + alpha * dt * laplacian_fd(u, dx)
        if step % log_every == 0:
            print(f"step {step}: energy {u.pow(2).sum().item():.5f}")  # expect: FL102 GB0124
    return u


@torch.compile
def nbody_accel(pos, mass, G: float = 1.0, softening: float = 0.05):
    diff = pos[None, :, :] - pos[:, None, :]
    dist3 = (diff.pow(2).sum(-1) + softening ** 2) ** 1.5
    return G * (diff * (mass[None, :, None] / dist3[..., None])).sum(1)


def total_energy(pos, vel, mass, G=1.0, softening=0.05):
    kinetic = 0.5 * (mass[:, None] * vel ** 2).sum()
    d = torch.cdist(pos, pos) + softening
    potential = -0.5 * G * (mass[:, None] * mass[None, :] / d).triu(1).sum()
    return kinetic + potential


@torch.compile
def leapfrog(pos, vel, mass, dt: float = 0.01, n_steps: int = 5):
    e0 = total_energy(pos, vel, mass)
    acc = nbody_accel(pos, mass)
    for _ in range(n_steps):
        vel = vel + 0.5 * dt * acc
        pos = pos + dt * vel
        acc = nbody_accel(pos, mass)
        vel = vel + 0.5 * dt * acc
    drift = abs((total_energy(pos, vel, mass) - e0).item() / e0.item())  # expect: FL102 GB0124
    if drift > 1e-2:
        warnings.warn(f"energy drift {drift:.2e}")  # expect: FL112 GB0007
    return pos, vel


@torch.compile
def newton_solve(residual, x0, tol: float = 1e-6, max_iter: int = 10):
    x = x0
    for _ in range(max_iter):
        J = torch.autograd.functional.jacobian(residual, x)  # expect: FL142 GB0055
        delta = torch.linalg.solve(J, residual(x))
        x = x - delta
        if delta.norm() < tol:
            break
    return x


@torch.compile
def newton_step_func(residual, x):
    J = torch.func.jacrev(residual)(x)  # torch.func transforms trace
    return x - torch.linalg.solve(J, residual(x))


@torch.compile
def potential_curvature(potential, x):
    H = torch.autograd.functional.hessian(potential, x)  # expect: FL142 GB0055
    return torch.linalg.eigvalsh(H)


@torch.compile
def angular_spectrum_propagate(field, wavelength: float, dz: float, dx: float):
    n = field.shape[-1]
    fx = torch.fft.fftfreq(n, d=dx)
    FX, FY = torch.meshgrid(fx, fx, indexing="ij")
    arg = (1.0 / wavelength) ** 2 - FX ** 2 - FY ** 2
    kz = 2 * math.pi * torch.sqrt(torch.clamp(arg, min=0.0))
    H = torch.polar(torch.ones_like(kz), kz * dz) * (arg > 0)
    out = torch.fft.ifft2(torch.fft.fft2(field) * H)
    return out, out.abs() ** 2


@torch.compile
def bessel_features(r, orders=(0, 1, 2)):
    feats = [torch.from_numpy(special.jv(n, r.detach().cpu().numpy())) for n in orders]  # expect: FL121 GB0156
    return torch.stack(feats, -1).to(r.dtype)


@torch.compile
def monte_carlo_integral(f, n_samples: int = 256, dim: int = 2):
    x = torch.rand(n_samples, dim)
    vals = f(x)
    est = vals.mean()
    stderr = vals.std() / math.sqrt(n_samples)
    logger.debug("MC estimate %.4f +- %.4f", est.item(), stderr.item())  # expect: FL102 GB0124; FL111 GB0291
    return est, stderr


@torch.compile
def spectral_derivative(u, L: float = 2 * math.pi):
    n = u.shape[-1]
    k = torch.fft.fftfreq(n, d=L / (2 * math.pi * n))
    return torch.fft.ifft(1j * k * torch.fft.fft(u)).real


@torch.compile
def pinn_train_step(model, opt, x, t, target):
    opt.zero_grad()  # expect: FL125 GB0008
    loss = F.mse_loss(model(x, t), target)
    loss.backward()  # expect: FL142 GB0123
    opt.step()  # expect: FL125 GB0025
    return loss.item()  # expect: FL102 GB0124


@torch.compile
def check_conservation(u_hist, rtol: float = 1e-3):
    mass = u_hist.sum(dim=(-1, -2))
    rel = (mass - mass[0]).abs().max() / mass[0].abs()
    assert rel < rtol, f"mass not conserved: rel. change {rel:.2e}"  # expect: FL101 GB0170
    return mass


@torch.compile
def normalize_field(u):
    u_min, u_max = u.min().item(), u.max().item()  # expect: FL102 GB0124
    return (u - u_min) / (u_max - u_min + 1e-8), (u_min, u_max)


def pde_step_for_export(u, alpha: float = 0.1):
    nx = u.shape[-1]
    dx = 1.0 / (nx - 1)
    u_new = u + alpha * (torch.roll(u, 1, -1) - 2 * u + torch.roll(u, -1, -1)) / dx ** 2 * 1e-4
    if torch.isnan(u_new).any():  # expect: FL201
        u_new = torch.nan_to_num(u_new)
    return u_new


def export_stepper():
    return torch.jit.trace(pde_step_for_export, torch.rand(2, 16))


def cubic_residual(x):
    return x ** 3 - torch.tensor([1.0, 8.0, 27.0])


def _pinn_step_case():
    model = PINN()
    return pinn_train_step, (model, torch.optim.Adam(model.parameters(), lr=1e-3), torch.rand(8, 1), torch.rand(8, 1),
                             torch.zeros(8, 1))


def quartic_potential(x):
    return (x ** 4 - x ** 2).sum()


def gaussian_bump(x):
    return torch.exp(-(x ** 2).sum(-1))


_lorenz_y0 = lambda: torch.tensor([[1.0, 1.0, 1.0], [0.5, -1.0, 2.0]])  # noqa: E731
CASES = {
    "ODEFunc": lambda: (ODEFunc(), (0.0, torch.randn(4, 3))),
    "odeint_rk4": lambda: (odeint_rk4, (LorenzField(), _lorenz_y0(), torch.linspace(0, 0.05, 5)),
                           (LorenzField(), _lorenz_y0(), torch.linspace(0, 0.05, 7))),
    "NeuralODE": lambda: (NeuralODE(LorenzField()), (_lorenz_y0(),)),
    "adaptive_rk23": lambda: (adaptive_rk23, (LorenzField(), _lorenz_y0(), 0.0, 0.1)),
    "PINN": lambda: (PINN(), (torch.rand(8, 1), torch.rand(8, 1))),
    "heat_residual": lambda: (heat_residual, (PINN(), torch.rand(8, 1), torch.rand(8, 1))),
    "Siren": lambda: (Siren(), (torch.rand(5, 2),)),
    "SpectralConv2d": lambda: (SpectralConv2d(), (torch.randn(2, 2, 8, 10),)),
    "laplacian": lambda: (laplacian, (torch.randn(6, 7), 0.1)),
    "heat_solver": lambda: (heat_solver, (torch.rand(6, 7),)),
    "nbody_accel": lambda: (nbody_accel, (torch.randn(5, 3), torch.rand(5) + 0.5)),
    "leapfrog": lambda: (leapfrog, (torch.randn(5, 3), torch.randn(5, 3) * 0.1, torch.rand(5) + 0.5, 0.3)),
    "newton_solve": lambda: (newton_solve, (cubic_residual, torch.tensor([2.0, 3.0, 4.0]))),
    "newton_step_func": lambda: (newton_step_func, (cubic_residual, torch.tensor([2.0, 3.0, 4.0]))),
    "potential_curvature": lambda: (potential_curvature, (quartic_potential, torch.tensor([0.5, 1.5, -1.0]))),
    "pinn_train_step": lambda: _pinn_step_case(),
    "check_conservation": lambda: (check_conservation, (torch.rand(5, 6).repeat(4, 1, 1) + 1.0,)),
    "normalize_field": lambda: (normalize_field, (torch.randn(6, 7),)),
    "angular_spectrum_propagate": lambda: (angular_spectrum_propagate, (torch.randn(8, 8, dtype=torch.cfloat), 0.5, 1.0, 0.25)),
    "bessel_features": lambda: (bessel_features, (torch.rand(6) * 5,)),
    "monte_carlo_integral": lambda: (monte_carlo_integral, (gaussian_bump,)),
    "spectral_derivative": lambda: (spectral_derivative, (torch.sin(torch.linspace(0, 2 * math.pi, 17)[:-1]),)),
}

TRACED = {
    "pde_step_for_export": lambda: (pde_step_for_export, (torch.rand(2, 16),)),
}
