"""Scientific computing in torch: explicit ODE integrators (Euler, RK4, embedded adaptive steps with
while-loops on error estimates), Newton / fixed-point iterations with convergence checks, conjugate
gradient, backtracking line search, finite differences, numpy / math interop, torch.linalg
factorisations and complex arithmetic (FFT derivatives, quadratic roots, polar filters)."""
import math
import warnings
from typing import Callable, List, Optional, Tuple, Union

import numpy as np
import torch
from torch import nn

TOL = 1e-6
MAX_ITER = 25
SAFETY = 0.9
MIN_FACTOR, MAX_FACTOR = 0.2, 5.0
DTYPE = torch.float64

Tensor = torch.Tensor
VectorField = Callable[[float, Tensor], Tensor]


# --------------------------------------------------------------------------- ODE integrators

def euler_step(f: VectorField, t: float, y: Tensor, h: float) -> Tensor:
    return y + h * f(t, y)


def rk4_step(f: VectorField, t: float, y: Tensor, h: float) -> Tensor:
    k1 = f(t, y)
    k2 = f(t + h / 2, y + h / 2 * k1)
    k3 = f(t + h / 2, y + h / 2 * k2)
    k4 = f(t + h, y + h * k3)
    return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def heun_euler_pair(f: VectorField, t: float, y: Tensor, h: float) -> Tuple[Tensor, Tensor]:
    """Embedded order-2/order-1 pair: (higher-order solution, error estimate)."""
    k1 = f(t, y)
    k2 = f(t + h, y + h * k1)
    y_high = y + h / 2 * (k1 + k2)
    return y_high, y_high - (y + h * k1)


@torch.compile
def euler_integrate(y0: Tensor, decay: Tensor, t0: float = 0.0, t1: float = 1.0, *, steps: int = 8) -> Tensor:
    f = lambda t, y: -decay * y + math.sin(t)
    h = (t1 - t0) / steps
    y, t = y0, t0
    for _ in range(steps):
        y = euler_step(f, t, y, h)
        t += h
    return y


class ODEFunc(nn.Module):
    def __init__(self, dim: int = 4, hidden: int = 16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim + 1, hidden), nn.Tanh(), nn.Linear(hidden, dim))

    def forward(self, t: float, y: Tensor) -> Tensor:
        tt = torch.full_like(y[..., :1], t)
        return self.net(torch.cat([y, tt], dim=-1))


class RK4Block(nn.Module):
    """Neural-ODE block integrated with a fixed number of RK4 steps."""

    def __init__(self, dim: int = 4, steps: int = 4, t1: float = 1.0):
        super().__init__()
        self.func = ODEFunc(dim)
        self.steps, self.t1 = steps, t1

    def integrate(self, y: Tensor, t0: float, t1: float, h: float) -> Tensor:
        t = t0
        while t < t1 - 1e-12:
            y = rk4_step(self.func, t, y, h)
            t += h
        return y

    def forward(self, y0: Tensor) -> Tensor:
        return self.integrate(y0, 0.0, self.t1, self.t1 / self.steps)


class AdaptiveODEBlock(RK4Block):
    """Heun-Euler with step-size control: accepts a step once the error estimate is below tol."""

    def __init__(self, dim: int = 4, *, rtol: float = 1e-2, atol: float = 1e-3, h0: float = 0.25):
        super().__init__(dim)
        self.rtol, self.atol, self.h0 = rtol, atol, h0

    def error_ratio(self, err: Tensor, y: Tensor) -> Tensor:
        scale = self.atol + self.rtol * y.abs()
        return (err / scale).pow(2).mean().sqrt()

    def forward(self, y0: Tensor) -> Tensor:
        t, h, y = 0.0, self.h0, y0
        n_steps = 0
        while t < self.t1 and n_steps < MAX_ITER:
            h = min(h, self.t1 - t)
            y_new, err = heun_euler_pair(self.func, t, y, h)
            ratio = self.error_ratio(err, y_new)
            if ratio <= 1.0:  # expect: FL000 GB0170
                t, y = t + h, y_new
            factor = SAFETY * float(ratio.clamp_min(1e-10)) ** -0.5
            h *= min(MAX_FACTOR, max(MIN_FACTOR, factor))
            n_steps += 1
        return y


@torch.compile
def rk4_trajectory(y0: Tensor, omega: float = 2.0, *, n: int = 6, h: float = 0.1) -> Tensor:
    """Harmonic oscillator written as a closure over omega; returns the whole trajectory."""
    def f(t, y):
        return torch.stack([y[1], -(omega ** 2) * y[0]])

    ys: List[Tensor] = [y0]
    for i in range(n):
        ys.append(rk4_step(f, i * h, ys[-1], h))
    traj = torch.stack(ys)
    energy = 0.5 * (traj[:, 1] ** 2 + omega ** 2 * traj[:, 0] ** 2)
    if (energy - energy[0]).abs().max() > 1e-3 * energy[0]:  # expect: FL000 GB0170
        warnings.warn("RK4 energy drift above tolerance; reduce h")  # expect: FL000 GB0007
    return traj


# --------------------------------------------------------------------------- nonlinear solvers

@torch.compile
def newton_sqrt(a: Tensor, *, tol: float = TOL, max_iter: int = MAX_ITER) -> Tensor:
    x = a.clamp_min(1.0)
    for _ in range(max_iter):
        dx = (x * x - a) / (2 * x)
        x = x - dx
        if dx.abs().max() < tol:  # expect: FL000 GB0170
            break
    return x


class NewtonSystemSolver:
    """Non-module helper: Newton on F(x) = 0 with the Jacobian from torch.func, counting evaluations."""

    def __init__(self, fn: Callable[[Tensor], Tensor], *, tol: float = 1e-8):
        self.fn = fn
        self.tol = tol
        self.nfev = 0

    def residual(self, x: Tensor) -> Tensor:
        self.nfev += 1  # expect: FL302
        return self.fn(x)

    def step(self, x: Tensor) -> Tensor:
        J = torch.func.jacrev(self.fn)(x)
        return x - torch.linalg.solve(J, self.residual(x))


def _system(x: Tensor) -> Tensor:
    return torch.stack([x[0] ** 2 + x[1] ** 2 - 4.0, x[0] * x[1] - 1.0])


@torch.compile
def newton_system(solver: NewtonSystemSolver, x0: Tensor, steps: int = 3) -> Tensor:
    x = x0
    for _ in range(steps):
        x = solver.step(x)
    return x


@torch.compile
def bisection(f_coeffs: Tensor, lo: Tensor, hi: Tensor, tol: float = 1e-4) -> Tensor:
    """Vectorised bisection for roots of cubics; loops until every bracket is narrow enough."""
    poly = lambda x: ((f_coeffs[0] * x + f_coeffs[1]) * x + f_coeffs[2]) * x + f_coeffs[3]
    while (hi - lo).max() > tol:  # expect: FL000 GB0170
        mid = (lo + hi) / 2
        left = torch.sign(poly(lo)) == torch.sign(poly(mid))
        lo, hi = torch.where(left, mid, lo), torch.where(left, hi, mid)
    return (lo + hi) / 2


class ImplicitEulerLayer(nn.Module):
    """Implicit Euler step solved by fixed-point iteration until the residual norm is small."""

    def __init__(self, dim: int = 4, h: float = 0.1, max_iter: int = 10, tol: float = 1e-5):
        super().__init__()
        self.lin = nn.Linear(dim, dim)
        self.h, self.max_iter, self.tol = h, max_iter, tol

    def forward(self, y: Tensor) -> Tensor:
        z = y
        for it in range(self.max_iter):
            z_next = y + self.h * torch.tanh(self.lin(z))
            residual = (z_next - z).norm().item()  # expect: FL000 GB0124
            z = z_next
            if residual < self.tol:
                break
        return z


# --------------------------------------------------------------------------- linear algebra

@torch.compile
def conjugate_gradient(A: Tensor, b: Tensor, x0: Optional[Tensor] = None, *, tol: float = 1e-8,
                       max_iter: Optional[int] = None) -> Tensor:
    x = torch.zeros_like(b) if x0 is None else x0
    r = b - A @ x
    p = r.clone()
    rs_old = r @ r
    for _ in range(max_iter or b.numel()):
        Ap = A @ p
        alpha = rs_old / (p @ Ap)
        x = x + alpha * p
        r = r - alpha * Ap
        rs_new = r @ r
        if torch.sqrt(rs_new) < tol:  # expect: FL000 GB0170
            break
        p = r + (rs_new / rs_old) * p
        rs_old = rs_new
    return x


@torch.compile
def cholesky_least_squares(A: Tensor, b: Tensor, ridge: float = 1e-3) -> Tensor:
    AtA = A.T @ A + ridge * torch.eye(A.shape[1], dtype=A.dtype)
    L = torch.linalg.cholesky(AtA)
    return torch.cholesky_solve((A.T @ b).unsqueeze(-1), L).squeeze(-1)


def _checked_solve(A: Tensor, b: Tensor) -> Tensor:
    x, info = torch.linalg.solve_ex(A, b)
    if info.item() != 0:  # expect: FL000 GB0124
        return torch.linalg.lstsq(A, b.unsqueeze(-1)).solution.squeeze(-1)
    return x


def _conditioned(A: Tensor, b: Tensor, max_cond: float) -> Tensor:
    cond = torch.linalg.cond(A)
    if cond > max_cond:  # expect: FL000 GB0170
        A = A + 1e-6 * torch.eye(A.shape[0], dtype=A.dtype)
    return _checked_solve(A, b)


def _robust_solve(A: Tensor, b: Tensor, *, max_cond: float = 1e10) -> Tensor:
    return _conditioned(A, b, max_cond)


robust_solve = torch.compile(_robust_solve)


@torch.compile
def spectral_radius(A: Tensor) -> float:
    sym = (A + A.T) / 2
    evals = torch.linalg.eigvalsh(sym)
    return float(evals.abs().max())  # expect: FL000 GB0124


# --------------------------------------------------------------------------- optimisation

def _objective(x: Tensor) -> Tensor:
    return (1 - x[0]) ** 2 + 10 * (x[1] - x[0] ** 2) ** 2


def _armijo_ok(fn, x, d, t: float, fx: Tensor, slope: Tensor, c: float) -> bool:
    return bool(fn(x + t * d) <= fx + c * t * slope)  # expect: FL000 GB0124


def _backtrack(fn, x, d, g, *, t0: float = 1.0, beta: float = 0.5, c: float = 1e-4) -> float:
    fx, slope, t = fn(x), g @ d, t0
    while not _armijo_ok(fn, x, d, t, fx, slope, c):
        t *= beta
    return t


@torch.compile
def gradient_descent_step(x: Tensor) -> Tensor:
    g = torch.func.grad(_objective)(x)
    t = _backtrack(_objective, x, -g, g)
    return x - t * g


@torch.compile(dynamic=True)
def finite_difference_grad(x: Tensor, eps: float = 1e-4) -> Tensor:
    f = lambda z: (z.sin() * z).sum()
    grads = []
    for i in range(x.numel()):  # expect: FL301
        e = torch.zeros_like(x)
        e[i] = eps
        grads.append((f(x + e) - f(x - e)) / (2 * eps))
    return torch.stack(grads)


@torch.compile(dynamic=True)
def simpson(y: Tensor, dx: float = 0.1) -> Tensor:
    n = y.shape[-1]
    if n % 2 == 0:  # expect: FL301
        # even sample count: trapezoid on the last interval, Simpson on the rest
        return simpson_odd(y[..., :-1], dx) + dx * (y[..., -2] + y[..., -1]) / 2
    return simpson_odd(y, dx)


def simpson_odd(y: Tensor, dx: float) -> Tensor:
    return dx / 3 * (y[..., 0] + 4 * y[..., 1:-1:2].sum(-1) + 2 * y[..., 2:-1:2].sum(-1) + y[..., -1])


# --------------------------------------------------------------------------- numpy / math interop

@torch.compile
def polyfit_detrend(t: Tensor, y: Tensor, degree: int = 2) -> Tensor:
    coeffs = np.polyfit(t.numpy(), y.numpy(), degree)  # expect: FL000 GB0294
    trend = torch.from_numpy(np.polyval(coeffs, t.numpy()))  # expect: FL000 GB0294
    return y - trend


@torch.compile
def gauss_legendre(fn_scale: Tensor, a: float = 0.0, b: float = math.pi, n: int = 5) -> Tensor:
    nodes, weights = np.polynomial.legendre.leggauss(n)  # expect: FL000 GB0007
    x = torch.as_tensor(nodes, dtype=fn_scale.dtype) * (b - a) / 2 + (a + b) / 2
    w = torch.as_tensor(weights, dtype=fn_scale.dtype) * (b - a) / 2
    return (w * torch.sin(fn_scale[:, None] * x)).sum(-1)


def _relative_error(approx: Tensor, exact: Tensor) -> float:
    return math.sqrt(float(((approx - exact) ** 2).sum()) / max(float((exact ** 2).sum()), 1e-30))  # expect: FL000 GB0124


@torch.compile
def convergence_report(y0: Tensor, decay: Tensor) -> Tuple[Tensor, float]:
    approx = euler_integrate(y0, decay, steps=16)
    exact = y0 * torch.exp(-decay)
    return approx, _relative_error(approx, exact)


# --------------------------------------------------------------------------- complex numbers

@torch.compile
def spectral_derivative(u: Tensor, length: float = 2 * math.pi) -> Tensor:
    n = u.shape[-1]
    k = torch.fft.fftfreq(n, d=length / n) * (2j * math.pi)
    return torch.fft.ifft(k * torch.fft.fft(u)).real


@torch.compile
def quadratic_roots(a: Tensor, b: Tensor, c: Tensor) -> Tuple[Tensor, Tensor]:
    disc = (b * b - 4 * a * c).to(torch.complex128)
    sq = torch.sqrt(disc)
    return (-b + sq) / (2 * a), (-b - sq) / (2 * a)


class PolarLowpass(nn.Module):
    """Complex-valued filter: keeps the phase, shrinks magnitudes above a learned cutoff."""

    def __init__(self, n_freq: int = 5):
        super().__init__()
        self.cutoff = nn.Parameter(torch.linspace(1.0, 0.2, n_freq, dtype=DTYPE))

    def forward(self, x: Tensor) -> Tensor:
        z = torch.fft.rfft(x)
        mag, phase = z.abs(), z.angle()
        z = torch.polar(mag * self.cutoff, phase)
        return torch.fft.irfft(z, n=x.shape[-1])


# --------------------------------------------------------------------------- cases

def _spd(n: int = 5, seed: int = 0) -> Tensor:
    g = torch.Generator().manual_seed(seed)
    m = torch.randn(n, n, generator=g, dtype=DTYPE)
    return m @ m.T + n * torch.eye(n, dtype=DTYPE)


CASES = {
    "euler_integrate": lambda: (euler_integrate, (torch.ones(3), torch.tensor([0.5, 1.0, 2.0]))),
    "RK4Block": lambda: (RK4Block(), (torch.randn(3, 4),)),
    "AdaptiveODEBlock": lambda: (AdaptiveODEBlock(), (torch.randn(3, 4),)),
    "rk4_trajectory": lambda: (rk4_trajectory, (torch.tensor([1.0, 0.0]), 12.0)),
    "newton_sqrt": lambda: (newton_sqrt, (torch.tensor([2.0, 9.0, 30.0], dtype=DTYPE),)),
    "newton_system": lambda: (newton_system, (NewtonSystemSolver(_system), torch.tensor([2.0, 0.3], dtype=DTYPE))),
    "bisection": lambda: (bisection, (torch.tensor([1.0, 0.0, -2.0, 0.5]), torch.tensor([0.0, 1.0]),
                                      torch.tensor([1.0, 2.0]))),
    "ImplicitEulerLayer": lambda: (ImplicitEulerLayer(), (torch.randn(3, 4),)),
    "conjugate_gradient": lambda: (conjugate_gradient, (_spd(), torch.ones(5, dtype=DTYPE))),
    "cholesky_least_squares": lambda: (cholesky_least_squares, (torch.randn(7, 3, dtype=DTYPE), torch.randn(7, dtype=DTYPE))),
    "robust_solve": lambda: (robust_solve, (_spd(4), torch.ones(4, dtype=DTYPE))),
    "robust_solve_ill_conditioned": lambda: (robust_solve, (torch.tensor([[1.0, 1.0], [1.0, 1.0 + 1e-12]], dtype=DTYPE),
                                                            torch.ones(2, dtype=DTYPE))),
    "spectral_radius": lambda: (spectral_radius, (torch.randn(5, 5),)),
    "gradient_descent_step": lambda: (gradient_descent_step, (torch.tensor([-1.2, 1.0]),)),
    "finite_difference_grad": lambda: (finite_difference_grad, (torch.randn(3),), (torch.randn(5),)),
    "simpson": lambda: (simpson, (torch.linspace(0, 1, 7) ** 2,), (torch.linspace(0, 1, 8) ** 2,)),
    "polyfit_detrend": lambda: (polyfit_detrend, (torch.linspace(0, 1, 9, dtype=DTYPE), torch.randn(9, dtype=DTYPE))),
    "gauss_legendre": lambda: (gauss_legendre, (torch.tensor([1.0, 2.0, 3.0], dtype=DTYPE),)),
    "convergence_report": lambda: (convergence_report, (torch.ones(3), torch.tensor([0.5, 1.0, 2.0]))),
    "spectral_derivative": lambda: (spectral_derivative, (torch.sin(torch.linspace(0, 2 * math.pi, 9)[:-1]),)),
    "quadratic_roots": lambda: (quadratic_roots, (torch.tensor([1.0, 1.0]), torch.tensor([0.0, -3.0]), torch.tensor([1.0, 2.0]))),
    "PolarLowpass": lambda: (PolarLowpass(), (torch.randn(2, 8, dtype=DTYPE),)),
}
