"""Scientific ML in the style of DeepXDE / neuraloperator / torchdiffeq research code: PINN residuals
via torch.autograd.grad, FNO spectral layers, boundary losses, adaptive loss weights, collocation
sampling, finite-difference stencils, fixed / adaptive ODE integrators, unit conversions."""
import functools
import logging
import math
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("sciml.pinn")
logger.addHandler(logging.NullHandler())

# --------------------------------------------------------------------------- constants / units
STEFAN_BOLTZMANN = 5.670374419e-8  # W / (m^2 K^4)
ZERO_CELSIUS = 273.15
TWO_PI = 2.0 * math.pi

DEBUG_RESIDUALS = False
MAX_ODE_STEPS = 64

_UNIT_SCALE = {"m": 1.0, "cm": 1e-2, "mm": 1e-3, "km": 1e3, "s": 1.0, "ms": 1e-3, "min": 60.0, "h": 3600.0}

def to_si(value, unit: str):
    try:
        return value * _UNIT_SCALE[unit]
    except KeyError:
        raise ValueError(f"unknown unit {unit!r}") from None

def celsius_to_kelvin(temp):
    return temp + ZERO_CELSIUS

def thermal_diffusivity(conductivity: float, density: float, heat_capacity: float) -> float:
    return conductivity / (density * heat_capacity)

def get_activation(name: str) -> Callable:
    table = {"tanh": torch.tanh, "gelu": F.gelu, "silu": F.silu, "sin": torch.sin}
    return table.get(name, torch.tanh)

# --------------------------------------------------------------------------- configs
@dataclass
class DomainConfig:
    x_min: float = 0.0
    x_max: float = 1.0
    t_min: float = 0.0
    t_max: float = 1.0

    def __post_init__(self):
        assert self.x_max > self.x_min, "empty spatial domain"
        assert self.t_max >= self.t_min, "time runs backwards"

    @property
    def length(self) -> float:
        return self.x_max - self.x_min

    @property
    def bounds(self) -> Tuple[List[float], List[float]]:
        return [self.x_min, self.t_min], [self.x_max, self.t_max]

@dataclass
class PDEConfig:
    name: str = "heat"
    nu: float = 0.01 / math.pi
    alpha: float = 0.1
    source: Optional[str] = None

@dataclass
class FNOConfig:
    modes: int = 5
    width: int = 6
    n_layers: int = 2
    in_channels: int = 1
    out_channels: int = 1
    activation: str = "gelu"
    add_grid: bool = True

@dataclass
class MaterialProps:
    conductivity: float = 401.0     # W / (m K), copper
    density: float = 8960.0         # kg / m^3
    heat_capacity: float = 385.0    # J / (kg K)
    emissivity: float = 0.8

    @property
    def diffusivity(self) -> float:
        return thermal_diffusivity(self.conductivity, self.density, self.heat_capacity)

@dataclass
class BoundarySpec:
    kind: str = "dirichlet"
    value: float = 0.0
    weight: float = 1.0
    axis: int = 0

# --------------------------------------------------------------------------- autograd helpers
def gradient(outputs, inputs, create_graph: bool = True):
    (grad,) = torch.autograd.grad(outputs, inputs, grad_outputs=torch.ones_like(outputs),  # expect: FL000 GB9186
                                  create_graph=create_graph, retain_graph=True)
    return grad

def partial_derivs(u, xt):
    du = gradient(u, xt)
    u_x, u_t = du[:, 0:1], du[:, 1:2]
    u_xx = gradient(u_x, xt)[:, 0:1]
    return u_x, u_t, u_xx

SOURCES = {"sine": lambda xt: torch.sin(math.pi * xt[:, 0:1]) * torch.exp(-xt[:, 1:2])}

class ResidualLibrary:
    """PDE residuals r(u; x, t) = 0, looked up by name like DeepXDE `pde` callables."""
    @staticmethod
    def heat(u, xt, cfg):
        _, u_t, u_xx = partial_derivs(u, xt)
        r = u_t - cfg.alpha * u_xx
        if cfg.source is not None:
            r = r - SOURCES[cfg.source](xt)
        return r

    @staticmethod
    def burgers(u, xt, cfg):
        u_x, u_t, u_xx = partial_derivs(u, xt)
        return u_t + u * u_x - cfg.nu * u_xx

    @classmethod
    def get(cls, name: str):
        fn = getattr(cls, name, None)
        if fn is None:
            raise KeyError(f"no residual registered for PDE {name!r}")
        return fn

# --------------------------------------------------------------------------- networks
class PINNMLP(nn.Module):
    """Fully connected tanh network with inputs rescaled to [-1, 1] from the domain bounds."""
    def __init__(self, in_dim=2, hidden=16, depth=3, out_dim=1, activation="tanh",
                 domain: Optional[DomainConfig] = None, embed_dim: Optional[int] = None):
        super().__init__()
        self.domain = domain or DomainConfig()
        dims = [embed_dim or in_dim] + [hidden] * depth + [out_dim]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.act = get_activation(activation)
        lo, hi = self.domain.bounds
        self.register_buffer("lb", torch.tensor(lo[:in_dim]))
        self.register_buffer("ub", torch.tensor(hi[:in_dim]))
        for layer in self.layers:
            nn.init.xavier_normal_(layer.weight)
            nn.init.zeros_(layer.bias)

    def normalize(self, xt):
        return 2.0 * (xt - self.lb) / (self.ub - self.lb) - 1.0

    def embed(self, h):
        return h

    def forward(self, xt):
        h = self.embed(self.normalize(xt))
        for layer in self.layers[:-1]:
            h = self.act(layer(h))
        return self.output_transform(xt, self.layers[-1](h))

    def output_transform(self, xt, u):
        return u

class FourierFeatureMLP(PINNMLP):
    """Random Fourier features (Tancik et al.) against spectral bias; hard zero Dirichlet BCs in x."""
    def __init__(self, in_dim=2, n_freq=7, sigma=2.0, hard_bc=True, generator=None, **kwargs):
        super().__init__(in_dim=in_dim, embed_dim=2 * n_freq, **kwargs)
        self.register_buffer("B", sigma * torch.randn(in_dim, n_freq, generator=generator))
        self.hard_bc = hard_bc

    def embed(self, h):
        proj = TWO_PI * h @ self.B
        return torch.cat([torch.sin(proj), torch.cos(proj)], dim=-1)

    def output_transform(self, xt, u):
        if not self.hard_bc:
            return u
        x = (xt[:, 0:1] - self.domain.x_min) / self.domain.length
        return x * (1.0 - x) * u

class SpectralConv1d(nn.Module):
    def __init__(self, in_ch, out_ch, modes, generator=None):
        super().__init__()
        self.in_ch, self.out_ch, self.modes = in_ch, out_ch, modes
        scale = 1.0 / (in_ch * out_ch)
        self.weight = nn.Parameter(
            scale * torch.rand(in_ch, out_ch, modes, dtype=torch.cfloat, generator=generator))

    @staticmethod
    def compl_mul(a, w):
        return torch.einsum("bix,iox->box", a, w)

    def forward(self, x):
        batch, _, n = x.shape
        n_freq = n // 2 + 1
        x_ft = torch.fft.rfft(x, norm="ortho")
        out_ft = x_ft.new_zeros(batch, self.out_ch, n_freq)
        if n_freq >= self.modes:  # expect: FL301
            out_ft[:, :, :self.modes] = self.compl_mul(x_ft[:, :, :self.modes], self.weight)
        else:  # coarse grid: keep every resolved mode (zero-shot super/sub-resolution)
            out_ft[:, :, :n_freq] = self.compl_mul(x_ft, self.weight[..., :n_freq])
        return torch.fft.irfft(out_ft, n=n, norm="ortho")

class FNO1d(nn.Module):
    def __init__(self, cfg: FNOConfig = FNOConfig(), generator=None):
        super().__init__()
        self.cfg = cfg
        extra = 1 if cfg.add_grid else 0
        self.lift = nn.Linear(cfg.in_channels + extra, cfg.width)
        self.spectral = nn.ModuleList(SpectralConv1d(cfg.width, cfg.width, cfg.modes, generator)
                                      for _ in range(cfg.n_layers))
        self.pointwise = nn.ModuleList(nn.Conv1d(cfg.width, cfg.width, 1) for _ in range(cfg.n_layers))
        self.proj = nn.Sequential(nn.Linear(cfg.width, 2 * cfg.width), nn.GELU(),
                                  nn.Linear(2 * cfg.width, cfg.out_channels))
        self.act = get_activation(cfg.activation)

    @staticmethod
    def grid_like(x):
        b, n, _ = x.shape
        grid = torch.linspace(0.0, 1.0, n, dtype=x.dtype, device=x.device)
        return grid.reshape(1, n, 1).expand(b, n, 1)

    def forward(self, x):  # (batch, n_points, channels)
        if self.cfg.add_grid:
            x = torch.cat([x, self.grid_like(x)], dim=-1)
        h = self.lift(x).permute(0, 2, 1)
        for i, (spec, pw) in enumerate(zip(self.spectral, self.pointwise)):
            h = spec(h) + pw(h)
            if i < len(self.spectral) - 1:
                h = self.act(h)
        return self.proj(h.permute(0, 2, 1))

class HamiltonianNN(nn.Module):
    """Learns H(q, p); the vector field is the symplectic gradient (dH/dp, -dH/dq)."""
    def __init__(self, dim=2, hidden=12):
        super().__init__()
        self.dim = dim
        self.energy = nn.Sequential(nn.Linear(2 * dim, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, q, p):
        with torch.enable_grad():
            qp = torch.cat([q, p], dim=-1).detach().requires_grad_(True)  # expect: FL000 GB8985
            H = self.energy(qp)
            dH = gradient(H, qp, create_graph=self.training)
        dHdq, dHdp = dH.split(self.dim, dim=-1)
        return dHdp, -dHdq

# --------------------------------------------------------------------------- residual / boundary losses
@torch.compile
def pde_residual(model, xt, cfg: PDEConfig, reduction: Optional[str] = "mean"):
    u = model(xt)
    r = ResidualLibrary.get(cfg.name)(u, xt, cfg)
    if DEBUG_RESIDUALS:
        logger.debug("residual %s: max |r| = %.3e", cfg.name, r.abs().max().item())
    if reduction is None:
        return r
    return r.pow(2).mean() if reduction == "mean" else r.pow(2).sum()

def dirichlet_loss(model, pts, value=0.0, **_):
    return (model(pts) - value).pow(2).mean()

def neumann_loss(model, pts, value=0.0, axis=0):
    pts = pts.detach().requires_grad_(True)  # expect: FL000 GB8985
    flux = gradient(model(pts), pts)[:, axis:axis + 1]
    return (flux - value).pow(2).mean()

def periodic_loss(model, pts, length=1.0):
    shift = torch.zeros_like(pts)
    shift[:, 0] = length
    return (model(pts) - model(pts + shift)).pow(2).mean()

BC_LOSSES = {"dirichlet": dirichlet_loss, "neumann": neumann_loss, "periodic": periodic_loss}

@torch.compile
def boundary_losses(model, points: Dict[str, torch.Tensor], specs: Dict[str, BoundarySpec],
                    domain: DomainConfig):
    parts = {}
    total = points[next(iter(points))].new_zeros(())
    for side, pts in points.items():
        spec = specs.get(side, BoundarySpec())
        if spec.kind == "periodic":
            fn = functools.partial(BC_LOSSES["periodic"], length=domain.length)
        elif spec.kind == "neumann":
            fn = functools.partial(BC_LOSSES["neumann"], value=spec.value, axis=spec.axis)
        else:
            fn = functools.partial(BC_LOSSES[spec.kind], value=spec.value)
        parts[side] = fn(model, pts)
        total = total + spec.weight * parts[side]
    return total, parts

# --------------------------------------------------------------------------- adaptive loss weighting
def _log_imbalance(stacked, names, limit=1e3):
    ratio = (stacked.max() / stacked.min().clamp_min(1e-12)).item()  # expect: FL000 GB0124
    if ratio > limit:
        worst = names[int(stacked.argmax())]  # expect: FL000 GB0124
        logger.warning("loss imbalance %.1e (dominated by %s)", ratio, worst)
    return ratio

class RunningAverageWeighting(nn.Module):
    """lambda_i <- m lambda_i + (1 - m) mean(L) / L_i, updated every `update_every` calls."""
    def __init__(self, names: Sequence[str], momentum=0.9, update_every=2, monitor=True):
        super().__init__()
        self.names = list(names)
        self.momentum, self.update_every, self.monitor = momentum, update_every, monitor
        self.register_buffer("weights", torch.ones(len(self.names)))
        self.num_calls = 0

    def forward(self, losses: Dict[str, torch.Tensor]):
        stacked = torch.stack([losses[n] for n in self.names])
        if self.training and self.num_calls % self.update_every == 0:
            with torch.no_grad():
                target = stacked.mean() / stacked.clamp_min(1e-8)
                self.weights.mul_(self.momentum).add_((1.0 - self.momentum) * target)
        self.num_calls += 1  # expect: FL302
        if self.monitor:
            _log_imbalance(stacked.detach(), self.names)
        return (self.weights * stacked).sum()

# --------------------------------------------------------------------------- collocation sampling
@functools.lru_cache(maxsize=8)
def gauss_legendre(n: int):
    nodes, weights = np.polynomial.legendre.leggauss(n)  # expect: FL000 GB0007
    return torch.from_numpy(nodes).float(), torch.from_numpy(weights).float()

def _scale_to_domain(unit, domain: DomainConfig):
    lo, hi = domain.bounds
    lo, hi = torch.tensor(lo), torch.tensor(hi)
    return lo + unit * (hi - lo)

def _lhs(n, generator):
    cut = torch.linspace(0.0, 1.0, n + 1)
    u = torch.rand(n, 2, generator=generator)  # expect: FL000 GB0055
    pts = cut[:n, None] + u * (cut[1:] - cut[:n])[:, None]
    for j in range(pts.shape[1]):
        pts[:, j] = pts[torch.randperm(n, generator=generator), j]  # expect: FL000 GB0055
    return pts

def _gauss_grid(n, generator=None):
    nodes, _ = gauss_legendre(int(math.sqrt(n)))
    unit = 0.5 * (nodes + 1.0)
    gx, gt = torch.meshgrid(unit, unit, indexing="ij")
    return torch.stack([gx.reshape(-1), gt.reshape(-1)], dim=-1)

SAMPLERS = {"lhs": _lhs, "gauss": _gauss_grid}

@torch.compile
def sample_collocation(n: int, domain: DomainConfig, method: str = "lhs", generator=None):
    sampler = SAMPLERS[method]
    return _scale_to_domain(sampler(n, generator), domain)

@torch.compile
def rar_select(candidates, residual, k: int, threshold: float = 1e-3, power: float = 2.0):
    """Residual-based adaptive refinement (RAR-D): draw new points with p ~ |r|^power."""
    score = residual.detach().abs().reshape(-1)
    if score.max() < threshold:  # expect: FL000 GB0170
        return candidates[:0]
    p = score.pow(power)
    p = p / p.sum()
    idx = torch.topk(p, k).indices
    return candidates[idx]

# --------------------------------------------------------------------------- finite differences
FD_STENCILS = {(1, 2): [-0.5, 0.0, 0.5], (1, 4): [1 / 12, -2 / 3, 0.0, 2 / 3, -1 / 12],
               (2, 2): [1.0, -2.0, 1.0], (2, 4): [-1 / 12, 4 / 3, -5 / 2, 4 / 3, -1 / 12]}

def fd_derivative(u, dx: float, order: int = 1, accuracy: int = 2):
    """Periodic central differences along the last axis via shifted copies."""
    coeffs = FD_STENCILS[(order, accuracy)]
    half = len(coeffs) // 2
    out = torch.zeros_like(u)
    for j, c in enumerate(coeffs):
        if c == 0.0:
            continue
        out = out + c * torch.roll(u, shifts=half - j, dims=-1)
    return out / dx ** order

fd_derivative_c = torch.compile(fd_derivative)

@torch.compile(fullgraph=False)
def fd_gradient(u, dx: float):
    """np.gradient-style derivative, one-sided at the walls; 2nd order if too short for 4th."""
    n = u.shape[-1]
    if n < 5:  # expect: FL301
        interior = (u[..., 2:] - u[..., :-2]) / (2 * dx)
    else:
        c = FD_STENCILS[(1, 4)]
        inner = sum(w * u[..., j:n - 4 + j] for j, w in enumerate(c) if w != 0.0) / dx
        edge = (u[..., 2:3] - u[..., 0:1], u[..., -1:] - u[..., -3:-2])
        interior = torch.cat([edge[0] / (2 * dx), inner, edge[1] / (2 * dx)], dim=-1)
    left = (-1.5 * u[..., 0:1] + 2.0 * u[..., 1:2] - 0.5 * u[..., 2:3]) / dx
    right = (1.5 * u[..., -1:] - 2.0 * u[..., -2:-1] + 0.5 * u[..., -3:-2]) / dx
    return torch.cat([left, interior, right], dim=-1)

@torch.compile
def spectral_derivative(u, length: float = TWO_PI, order: int = 1):
    n = u.shape[-1]
    k = torch.fft.rfftfreq(n, d=length / n, dtype=u.dtype) * TWO_PI
    mult = torch.complex(torch.zeros_like(k), k) ** order
    if order % 2 == 1 and n % 2 == 0:  # expect: FL301
        mult[-1] = 0.0  # Nyquist mode of an odd derivative has no consistent sign
    return torch.fft.irfft(mult * torch.fft.rfft(u), n=n)

# --------------------------------------------------------------------------- unit conversions
@torch.compile
def nondimensionalize_heat(temp_c, x, t, props: MaterialProps, length_unit: str = "cm",
                           time_unit: str = "min", t_ambient_c: float = 20.0):
    x_si, t_si = to_si(x, length_unit), to_si(t, time_unit)
    L = x_si.amax(dim=0, keepdim=True)
    tau = L ** 2 / props.diffusivity
    T = celsius_to_kelvin(temp_c)
    T_inf = celsius_to_kelvin(t_ambient_c)
    theta = (T - T_inf) / (T.amax() - T_inf)
    q_rad = props.emissivity * STEFAN_BOLTZMANN * (T ** 4 - T_inf ** 4)
    return x_si / L, t_si / tau, theta, q_rad

# --------------------------------------------------------------------------- time integration
def euler_step(f, t, y, dt):
    return y + dt * f(t, y)

def midpoint_step(f, t, y, dt):
    return y + dt * f(t + dt / 2, y + dt / 2 * f(t, y))

def rk4_step(f, t, y, dt):
    k1 = f(t, y)
    k2 = f(t + dt / 2, y + dt / 2 * k1)
    k3 = f(t + dt / 2, y + dt / 2 * k2)
    k4 = f(t + dt, y + dt * k3)
    return y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)

STEPPERS = {"euler": euler_step, "midpoint": midpoint_step, "rk4": rk4_step}

def odeint_fixed(f, y0, ts, method="rk4", callbacks: Sequence[Callable] = ()):
    step = STEPPERS[method]
    ys, y = [y0], y0
    for i in range(len(ts) - 1):
        y = step(f, ts[i], y, ts[i + 1] - ts[i])
        for cb in callbacks:
            y = cb(ts[i + 1], y)
        ys.append(y)
    return torch.stack(ys)

class ODEFunc(nn.Module):
    def __init__(self, dim=3, hidden=16, time_dependent=True):
        super().__init__()
        self.time_dependent = time_dependent
        self.net = nn.Sequential(nn.Linear(dim + int(time_dependent), hidden), nn.Softplus(),
                                 nn.Linear(hidden, dim))
        self.nfe = 0

    def forward(self, t, y):
        self.nfe += 1  # expect: FL302
        if self.time_dependent:
            y = torch.cat([y, torch.ones_like(y[..., :1]) * t], dim=-1)
        return self.net(y)

def clamp_state(t, y, bound=10.0):
    return y.clamp(-bound, bound)

class NeuralODE(nn.Module):
    def __init__(self, func: nn.Module, method="rk4", n_steps=4, t_final=1.0, return_traj=False):
        super().__init__()
        assert method in STEPPERS, method
        self.func, self.method = func, method
        self.n_steps, self.t_final, self.return_traj = n_steps, t_final, return_traj
        self.callbacks = [functools.partial(clamp_state, bound=5.0)]

    def forward(self, y0):
        ts = torch.linspace(0.0, self.t_final, self.n_steps + 1, dtype=y0.dtype)
        traj = odeint_fixed(self.func, y0, ts, self.method, self.callbacks)
        return traj if self.return_traj else traj[-1]

def linear_oscillator(t, y, omega=1.0, zeta=0.0):
    q, p = y[..., 0:1], y[..., 1:2]
    return torch.cat([p, -(omega ** 2) * q - 2.0 * zeta * omega * p], dim=-1)

damped_oscillator = functools.partial(linear_oscillator, omega=2.0, zeta=0.1)

@torch.compile
def adaptive_heun(f, y0, t0: float, t1: float, rtol: float = 1e-3, atol: float = 1e-5):
    """Embedded Heun-Euler pair with a standard step-size controller."""
    t, y, dt = t0, y0, (t1 - t0) / 4
    n_steps = 0
    while t < t1 and n_steps < MAX_ODE_STEPS:
        dt = min(dt, t1 - t)
        k1 = f(t, y)
        k2 = f(t + dt, y + dt * k1)
        y_new = y + dt * 0.5 * (k1 + k2)
        err = (dt * 0.5 * (k2 - k1)).abs()
        tol = atol + rtol * torch.maximum(y.abs(), y_new.abs())
        ratio = (err / tol).pow(2).mean().sqrt()
        if ratio <= 1.0:  # expect: FL000 GB0170
            t, y = t + dt, y_new
        n_steps += 1
        dt = dt * min(5.0, max(0.2, 0.9 * float(ratio) ** -0.5))
    return y

def oscillator_energy(traj, mass: float, k: float):
    q, p = traj[..., 0], traj[..., 1]
    return 0.5 * p ** 2 / mass + 0.5 * k * q ** 2

@torch.compile
def check_energy_drift(traj, mass: float = 1.0, k: float = 4.0, tol: float = 1e-2):
    energy = oscillator_energy(traj, mass, k)
    drift = (energy[-1] - energy[0]).abs().max() / energy[0].abs().max()
    if drift > tol:  # expect: FL000 GB0170
        logger.warning("energy drift %.3e exceeds %.1e", drift.item(), tol)  # expect: FL000 GB0124; FL000 GB0291
    return energy, drift

# --------------------------------------------------------------------------- cases
def _rand(*shape, seed=0):
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed))

def _boundary_points(n=6):
    t = _rand(n, 1, seed=3)
    return {"left": torch.cat([torch.zeros(n, 1), t], -1), "right": torch.cat([torch.ones(n, 1), t], -1)}

def _gen(seed):
    return torch.Generator().manual_seed(seed)

CASES = {
    "PINNMLP": lambda: (PINNMLP(), (_rand(10, 2),)),
    "FourierFeatureMLP": lambda: (FourierFeatureMLP(generator=_gen(1)), (_rand(10, 2),)),
    "SpectralConv1d": lambda: (SpectralConv1d(4, 3, 5, _gen(2)), (_rand(3, 4, 12),), (_rand(2, 4, 6),)),
    "FNO1d": lambda: (FNO1d(generator=_gen(4)), (_rand(3, 14, 1),)),
    "HamiltonianNN": lambda: (HamiltonianNN(), (_rand(5, 2, seed=1), _rand(5, 2, seed=2))),
    "pde_residual_heat": lambda: (pde_residual, (PINNMLP(), _rand(12, 2).requires_grad_(), PDEConfig("heat", source="sine"))),
    "pde_residual_burgers": lambda: (pde_residual, (PINNMLP(), _rand(12, 2).requires_grad_(), PDEConfig("burgers"), None)),
    "boundary_losses": lambda: (boundary_losses, (PINNMLP(), _boundary_points(), {
        "left": BoundarySpec(), "right": BoundarySpec(value=0.5)}, DomainConfig())),
    "boundary_losses_neumann": lambda: (boundary_losses, (PINNMLP(), _boundary_points(), {
        "left": BoundarySpec("neumann", weight=0.1), "right": BoundarySpec("periodic")}, DomainConfig())),
    "RunningAverageWeighting": lambda: (RunningAverageWeighting(["pde", "bc"]),
                                        ({"pde": _rand(()) * 1e4, "bc": _rand((), seed=1) * 1e-2},)),
    "sample_collocation_lhs": lambda: (sample_collocation, (10, DomainConfig(0.0, 2.0), "lhs", _gen(5))),
    "sample_collocation_gauss": lambda: (sample_collocation, (16, DomainConfig(-1.0, 1.0), "gauss")),
    "rar_select": lambda: (rar_select, (_rand(20, 2), _rand(20, 1, seed=1), 4)),
    "fd_derivative": lambda: (fd_derivative_c, (_rand(3, 16), 0.1, 2, 4)),
    "fd_gradient": lambda: (fd_gradient, (_rand(2, 9), 0.1), (_rand(3, 4), 0.1)),
    "spectral_derivative": lambda: (spectral_derivative, (_rand(3, 12),), (_rand(2, 9),)),
    "nondimensionalize_heat": lambda: (nondimensionalize_heat, (_rand(6, 1) * 80.0, _rand(6, 1, seed=1),
                                                                _rand(6, 1, seed=2), MaterialProps())),
    "ODEFunc": lambda: (ODEFunc(), (torch.tensor(0.5), _rand(4, 3))),
    "NeuralODE": lambda: (NeuralODE(ODEFunc(time_dependent=False), method="midpoint"), (_rand(4, 3),)),
    "adaptive_heun": lambda: (adaptive_heun, (damped_oscillator, _rand(3, 2), 0.0, 0.5)),
    "check_energy_drift": lambda: (check_energy_drift, (odeint_fixed(
        functools.partial(linear_oscillator, omega=2.0), _rand(2, 2), torch.arange(9) * 0.2, "euler"),)),
}
