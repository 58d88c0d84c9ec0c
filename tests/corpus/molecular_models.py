"""Molecular / protein modelling in the style of SchNetPack, EGNN research repos and structure
utilities: padded (B, N, 3) batches with atom masks, radial bases with cutoff envelopes, dense
message passing, neighbour lists, torsions, atom-type tables, forces via autograd, collate/pooling."""
import functools
import logging
import math
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("molmodels")
logger.addHandler(logging.NullHandler())

CUTOFF = 5.0
MAX_Z = 10  # H..Ne covers QM9-style sets
EPS = 1e-8
# atomic masses (amu) indexed by atomic number; index 0 is the padding "element"
ATOMIC_MASSES = [0.0, 1.008, 4.0026, 6.94, 9.0122, 10.81, 12.011, 14.007, 15.999, 18.998, 20.180]
MASS_TABLE = torch.from_numpy(np.asarray(ATOMIC_MASSES, dtype=np.float32))
# per-element reference energies (Hartree), B3LYP/6-31G(2df,p) as shipped with QM9
ATOMREF = {1: -0.500273, 6: -37.846772, 7: -54.583861, 8: -75.064579, 9: -99.718730}


@dataclass
class ModelConfig:
    hidden: int = 16
    num_rbf: int = 6
    cutoff: float = CUTOFF
    num_layers: int = 2
    rbf: str = "gaussian"
    envelope: str = "cosine"
    activation: str = "ssp"
    max_z: int = MAX_Z
    validate_inputs: bool = True

    @property
    def readout_dim(self) -> int:
        return max(self.hidden // 2, 1)


def shifted_softplus(x):
    return F.softplus(x) - math.log(2.0)


ACTIVATIONS: Dict[str, Callable] = {"ssp": shifted_softplus, "silu": F.silu, "tanh": torch.tanh}


def get_activation(name):
    if callable(name):
        return name
    try:
        return ACTIVATIONS[name]
    except KeyError:
        return getattr(F, name)


# --------------------------------------------------------------------------- geometry helpers

def _safe_norm(v, dim=-1, keepdim=False):
    return torch.sqrt((v * v).sum(dim=dim, keepdim=keepdim) + EPS)


def pair_vectors(pos):
    """r_ij = x_j - x_i for a padded batch: (B, N, 3) -> (B, N, N, 3)."""
    assert pos.dim() == 3 and pos.shape[-1] == 3, "positions must be (B, N, 3)"
    return pos.unsqueeze(1) - pos.unsqueeze(2)


def pair_mask(atom_mask, self_interaction=False):
    m = atom_mask.unsqueeze(1) & atom_mask.unsqueeze(2)
    if not self_interaction:
        eye = torch.eye(atom_mask.shape[-1], dtype=torch.bool, device=atom_mask.device)
        m = m & ~eye
    return m


def dense_geometry(pos, atom_mask):
    dist = _safe_norm(pair_vectors(pos))
    mask = pair_mask(atom_mask)
    return dist.masked_fill(~mask, 0.0), mask


def _dihedral(p0, p1, p2, p3):
    b0 = p0 - p1
    b1 = p2 - p1
    b2 = p3 - p2
    b1n = b1 / _safe_norm(b1, keepdim=True)
    v = b0 - (b0 * b1n).sum(-1, keepdim=True) * b1n
    w = b2 - (b2 * b1n).sum(-1, keepdim=True) * b1n
    x = (v * w).sum(-1)
    y = (torch.cross(b1n, v, dim=-1) * w).sum(-1)
    return torch.atan2(y, x)


def _remove_com(pos, z):
    masses = MASS_TABLE[z].unsqueeze(-1)
    com = (masses * pos).sum(0, keepdim=True) / masses.sum().clamp_min(EPS)
    return pos - com


# --------------------------------------------------------------------------- radial bases / envelopes

_CENTER_CACHE: Dict[Tuple[int, float], torch.Tensor] = {}


def _centers(num_rbf, cutoff, device, dtype):
    key = (num_rbf, cutoff)
    if key not in _CENTER_CACHE:
        _CENTER_CACHE[key] = torch.linspace(0.0, cutoff, num_rbf)
    return _CENTER_CACHE[key].to(device=device, dtype=dtype)


def gaussian_rbf(d, num_rbf, cutoff):
    centers = _centers(num_rbf, cutoff, d.device, d.dtype)
    gamma = 0.5 / (cutoff / (num_rbf - 1)) ** 2
    return torch.exp(-gamma * (d.unsqueeze(-1) - centers) ** 2)


def bessel_rbf(d, num_rbf, cutoff):
    n = torch.arange(1, num_rbf + 1, device=d.device, dtype=d.dtype)
    d = d.unsqueeze(-1).clamp_min(EPS)
    return math.sqrt(2.0 / cutoff) * torch.sin(n * math.pi * d / cutoff) / d


def cosine_cutoff(d, cutoff):
    out = 0.5 * (torch.cos(d * math.pi / cutoff) + 1.0)
    return out * (d < cutoff).to(d.dtype)


def polynomial_envelope(d, cutoff, p=6):
    x = d / cutoff
    a, b, c = -(p + 1) * (p + 2) / 2, p * (p + 2), -p * (p + 1) / 2
    env = 1.0 + a * x ** p + b * x ** (p + 1) + c * x ** (p + 2)
    return torch.where(x < 1.0, env, torch.zeros_like(env))


RBF_FNS = {"gaussian": gaussian_rbf, "bessel": bessel_rbf}
ENVELOPES = {"cosine": cosine_cutoff, "poly5": functools.partial(polynomial_envelope, p=5),
             "poly6": functools.partial(polynomial_envelope, p=6)}


def make_expansion(cfg: ModelConfig):
    try:
        rbf_fn = RBF_FNS[cfg.rbf]
    except KeyError as exc:
        raise ValueError(f"unknown radial basis {cfg.rbf!r}") from exc
    rbf = functools.partial(rbf_fn, num_rbf=cfg.num_rbf, cutoff=cfg.cutoff)
    env = functools.partial(ENVELOPES[cfg.envelope], cutoff=cfg.cutoff)

    def expand(d):
        return rbf(d) * env(d).unsqueeze(-1)

    return expand


@torch.compile(dynamic=False)
def radial_features(dist, mask, cfg: ModelConfig):
    expand = make_expansion(cfg)
    return expand(dist) * mask.unsqueeze(-1).to(dist.dtype)


class RadialBasis(nn.Module):
    """Gaussian smearing with trainable offsets/widths, multiplied by a cutoff envelope."""

    def __init__(self, num_rbf=6, cutoff=CUTOFF, trainable=True, envelope="cosine"):
        super().__init__()
        offsets = torch.linspace(0.0, cutoff, num_rbf)
        widths = torch.full((num_rbf,), cutoff / (num_rbf - 1))
        self.offsets = nn.Parameter(offsets, requires_grad=trainable)
        self.widths = nn.Parameter(widths, requires_grad=trainable)
        self.cutoff = cutoff
        self.envelope = ENVELOPES[envelope]

    def forward(self, dist):
        coeff = -0.5 / self.widths.pow(2)
        diff = dist.unsqueeze(-1) - self.offsets
        return torch.exp(coeff * diff.pow(2)) * self.envelope(dist, cutoff=self.cutoff).unsqueeze(-1)


def _check_atomic_numbers(z, max_z):
    if (z < 0).any() or (z > max_z).any():  # expect: FL000 GB0170
        raise ValueError(f"atomic numbers must lie in [0, {max_z}]")


class AtomEmbedding(nn.Module):
    """Maps atomic numbers to a compact vocabulary through a lookup buffer, then embeds."""

    def __init__(self, hidden, max_z=MAX_Z, validate=True, elements=(1, 6, 7, 8, 9)):
        super().__init__()
        unknown, pad = len(elements), len(elements) + 1
        table = torch.full((max_z + 1,), unknown, dtype=torch.long)
        for i, zz in enumerate(elements):
            table[zz] = i
        table[0] = pad
        self.register_buffer("z_to_index", table, persistent=False)
        self.embed = nn.Embedding(len(elements) + 2, hidden, padding_idx=pad)
        self.validate = validate
        self.max_z = max_z

    def forward(self, z):
        if self.validate:
            _check_atomic_numbers(z, self.max_z)
        return self.embed(self.z_to_index[z])


# --------------------------------------------------------------------------- neighbour lists

@torch.compile
def build_neighbor_list(pos, atom_mask, cutoff: float = CUTOFF):
    """Flat (edge_index, edge_vec, edge_len) format for PyG-style message passing."""
    B, N, _ = pos.shape
    vec = pair_vectors(pos)
    dist = _safe_norm(vec)
    adj = pair_mask(atom_mask) & (dist < cutoff)
    b, i, j = torch.nonzero(adj, as_tuple=True)  # expect: FL000 GB0036
    offset = b * N
    edge_index = torch.stack([i + offset, j + offset])
    return edge_index, vec[b, i, j], dist[b, i, j]


class NeighborDistances(nn.Module):
    """Dense cdist for small systems, row-chunked for larger ones (memory heuristic)."""

    def __init__(self, cutoff=CUTOFF, chunk_size=8):
        super().__init__()
        self.chunk_size = chunk_size
        self.envelope = functools.partial(polynomial_envelope, cutoff=cutoff, p=5)

    def forward(self, pos, atom_mask):
        n = pos.shape[1]
        if n <= self.chunk_size:  # expect: FL301
            dist = torch.cdist(pos, pos)
        else:
            rows = [torch.cdist(pos[:, s:s + self.chunk_size], pos) for s in range(0, n, self.chunk_size)]
            dist = torch.cat(rows, dim=1)
        m = pair_mask(atom_mask)
        return self.envelope(dist) * m, dist.masked_fill(~m, float("inf"))


# --------------------------------------------------------------------------- SchNet

class SchNetInteraction(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.act = get_activation(cfg.activation)
        self.filter1 = nn.Linear(cfg.num_rbf, cfg.hidden)
        self.filter2 = nn.Linear(cfg.hidden, cfg.hidden)
        self.in2f = nn.Linear(cfg.hidden, cfg.hidden, bias=False)
        self.f2out = nn.Linear(cfg.hidden, cfg.hidden)
        self.dense = nn.Linear(cfg.hidden, cfg.hidden)

    def forward(self, h, rbf, pair_weight):
        W = self.filter2(self.act(self.filter1(rbf))) * pair_weight.unsqueeze(-1)
        x = torch.einsum("bijf,bjf->bif", W, self.in2f(h))
        return h + self.dense(self.act(self.f2out(x)))


class SchNet(nn.Module):
    def __init__(self, cfg: Optional[ModelConfig] = None):
        super().__init__()
        self.cfg = cfg = cfg or ModelConfig()
        self.embedding = AtomEmbedding(cfg.hidden, cfg.max_z, validate=cfg.validate_inputs)
        self.rbf = RadialBasis(cfg.num_rbf, cfg.cutoff, envelope=cfg.envelope)
        self.interactions = nn.ModuleList(SchNetInteraction(cfg) for _ in range(cfg.num_layers))
        self.readout = nn.Sequential(nn.Linear(cfg.hidden, cfg.readout_dim), nn.SiLU(),
                                     nn.Linear(cfg.readout_dim, 1))

    def atomwise(self, z, pos, atom_mask):
        dist, mask = dense_geometry(pos, atom_mask)
        rbf = self.rbf(dist)
        weight = mask.to(pos.dtype)
        h = self.embedding(z)
        for layer in self.interactions:
            h = layer(h, rbf, weight) * atom_mask.unsqueeze(-1)
        return self.readout(h).squeeze(-1) * atom_mask

    def forward(self, z, pos, atom_mask):
        return self.atomwise(z, pos, atom_mask).sum(-1)


class EnergyForceModel(SchNet):
    """SchNet energy with conservative forces F = -dE/dx."""

    def __init__(self, cfg: Optional[ModelConfig] = None, compute_forces: bool = True):
        super().__init__(cfg)
        self.compute_forces = compute_forces

    def forward(self, z, pos, atom_mask):
        if not self.compute_forces:
            return super().forward(z, pos, atom_mask), None
        with torch.enable_grad():
            pos = pos.detach().requires_grad_(True)
            energy = super().forward(z, pos, atom_mask)
            (grad,) = torch.autograd.grad(energy.sum(), pos, create_graph=self.training)  # expect: FL000 GB9186
        forces = -grad * atom_mask.unsqueeze(-1)
        return energy, forces


class AtomrefScaleShift(nn.Module):
    """Per-atom outputs -> molecular energy; counts molecules so a stats callback can refresh."""

    def __init__(self, atomref=None, max_z=MAX_Z, mean=0.0, std=1.0):
        super().__init__()
        table = torch.zeros(max_z + 1)
        for zz, e in (atomref or ATOMREF).items():
            if zz <= max_z:
                table[zz] = e
        self.register_buffer("atomref", table)
        self.mean, self.std = mean, std
        self.molecules_seen = 0

    def forward(self, per_atom, z, atom_mask):
        y = per_atom * self.std + self.mean
        y = (y + self.atomref[z]) * atom_mask
        if self.training:
            self.molecules_seen += z.shape[0]  # expect: FL302
        return y.sum(-1)


# --------------------------------------------------------------------------- EGNN

class EGNNLayer(nn.Module):
    """E(n)-equivariant layer (Satorras et al. 2021), dense over a padded batch."""

    def __init__(self, hidden, edge_dim=0, act=nn.SiLU, coords_agg="mean", tanh=False, norm_diff=True):
        super().__init__()
        self.edge_mlp = nn.Sequential(nn.Linear(2 * hidden + 1 + edge_dim, hidden), act(),
                                      nn.Linear(hidden, hidden), act())
        self.node_mlp = nn.Sequential(nn.Linear(2 * hidden, hidden), act(), nn.Linear(hidden, hidden))
        coord_out = nn.Linear(hidden, 1, bias=False)
        nn.init.xavier_uniform_(coord_out.weight, gain=0.001)
        layers = [nn.Linear(hidden, hidden), act(), coord_out]
        if tanh:
            layers.append(nn.Tanh())
        self.coord_mlp = nn.Sequential(*layers)
        self.coords_agg = coords_agg
        self.norm_diff = norm_diff

    def forward(self, h, x, atom_mask, edge_attr=None):
        B, N, Fh = h.shape
        diff = x.unsqueeze(2) - x.unsqueeze(1)
        radial = (diff ** 2).sum(-1, keepdim=True)
        if self.norm_diff:
            diff = diff / (radial.sqrt() + 1.0)
        parts = [h.unsqueeze(2).expand(B, N, N, Fh), h.unsqueeze(1).expand(B, N, N, Fh), radial]
        if edge_attr is not None:
            parts.append(edge_attr)
        emask = pair_mask(atom_mask).unsqueeze(-1).to(h.dtype)
        m = self.edge_mlp(torch.cat(parts, dim=-1)) * emask
        agg = (diff * self.coord_mlp(m) * emask).sum(2)
        if self.coords_agg == "mean":
            agg = agg / emask.sum(2).clamp_min(1.0)
        x = x + agg * atom_mask.unsqueeze(-1)
        h = h + self.node_mlp(torch.cat([h, m.sum(2)], dim=-1))
        return h * atom_mask.unsqueeze(-1), x


def check_finite(model, step, h, x):
    if not torch.isfinite(x).all():  # expect: FL000 GB0170
        raise FloatingPointError(f"non-finite coordinates after layer {step}")


def log_layer_stats(model, step, h, x):
    logger.debug("layer %d: |h|=%.3f |x|=%.3f", step, h.norm(), x.norm())  # expect: FL000 GB0291


class EGNN(nn.Module):
    def __init__(self, in_dim, hidden, n_layers=2, callbacks: Optional[List[Callable]] = None):
        super().__init__()
        self.embed = nn.Linear(in_dim, hidden)
        self.layers = nn.ModuleList([EGNNLayer(hidden, tanh=(i == n_layers - 1)) for i in range(n_layers)])
        self.head = nn.Linear(hidden, 1)
        self.callbacks = list(callbacks or [])

    def forward(self, feats, pos, atom_mask):
        h = self.embed(feats)
        x = pos
        for i, layer in enumerate(self.layers):
            h, x = layer(h, x, atom_mask)
            for cb in self.callbacks:
                cb(self, i, h, x)
        return self.head(h).squeeze(-1), x


@torch.compile
def backbone_torsions(coords, res_mask, degrees=False):
    """phi / psi / omega from (B, L, 3, 3) N/CA/C coordinates, one residue at a time."""
    n, ca, c = coords.unbind(dim=2)
    L = coords.shape[1]
    if L < 3:
        raise ValueError("need at least three residues for backbone torsions")
    torsions = coords.new_zeros(coords.shape[0], L, 3)
    for i in range(1, L - 1):  # expect: FL301
        phi = _dihedral(c[:, i - 1], n[:, i], ca[:, i], c[:, i])
        psi = _dihedral(n[:, i], ca[:, i], c[:, i], n[:, i + 1])
        omega = _dihedral(ca[:, i], c[:, i], n[:, i + 1], ca[:, i + 1])
        torsions[:, i] = torch.stack([phi, psi, omega], dim=-1)
    torsions = torsions * res_mask.unsqueeze(-1)
    return torch.rad2deg(torsions) if degrees else torsions


# --------------------------------------------------------------------------- batching / pooling

@torch.compile
def collate_molecules(atomic_numbers: List[torch.Tensor], positions: List[torch.Tensor],
                      pad_to_multiple: Optional[int] = None):
    sizes = [int(z.shape[0]) for z in atomic_numbers]
    n_max = max(sizes)
    if pad_to_multiple:
        n_max = int(math.ceil(n_max / pad_to_multiple) * pad_to_multiple)
    B = len(sizes)
    z = torch.zeros(B, n_max, dtype=torch.long)
    pos = positions[0].new_zeros((B, n_max, 3))
    mask = torch.zeros(B, n_max, dtype=torch.bool)
    for k, (zk, pk) in enumerate(zip(atomic_numbers, positions)):
        n = sizes[k]
        z[k, :n] = zk
        pos[k, :n] = _remove_com(pk, zk)
        mask[k, :n] = True
    logger.debug("collated %d molecules, n_max=%d", B, n_max)  # expect: FL000 GB0291
    return z, pos, mask


def scatter_sum(src, index, dim_size):
    out = src.new_zeros((dim_size,) + tuple(src.shape[1:]))
    return out.index_add_(0, index, src)


def scatter_mean(src, index, dim_size):
    total = scatter_sum(src, index, dim_size)
    count = scatter_sum(torch.ones_like(index, dtype=src.dtype), index, dim_size).clamp_min(1)
    return total / count.view(-1, *([1] * (src.dim() - 1)))


POOLING = {"sum": scatter_sum, "mean": scatter_mean}


@torch.compile
def pool_by_batch_index(x, batch, reduce: str = "sum", num_graphs: Optional[int] = None):
    if num_graphs is None:
        num_graphs = int(batch.max()) + 1  # expect: FL000 GB0124
    return POOLING[reduce](x, batch, num_graphs)


@torch.compile
def coulomb_matrix(z, pos, atom_mask, max_atoms: int = 9, sort: bool = True):
    """Sorted, padded Coulomb-matrix descriptor (Rupp et al. 2012)."""
    zf = z.to(pos.dtype)
    dist = _safe_norm(pair_vectors(pos))
    cm = zf.unsqueeze(-1) * zf.unsqueeze(-2) / dist
    n = z.shape[-1]
    eye = torch.eye(n, dtype=torch.bool, device=z.device)
    cm = torch.where(eye, torch.diag_embed(0.5 * zf.pow(2.4)), cm)
    cm = cm * pair_mask(atom_mask, self_interaction=True)
    if sort:
        order = cm.norm(dim=-1).argsort(dim=-1, descending=True)
        cm = torch.gather(cm, 1, order.unsqueeze(-1).expand_as(cm))
        cm = torch.gather(cm, 2, order.unsqueeze(-2).expand_as(cm))
    pad = max_atoms - n
    if pad > 0:  # expect: FL301
        cm = F.pad(cm, (0, pad, 0, pad))
    return cm.flatten(1)


def random_rotation(generator=None, dtype=torch.float32):
    """Haar-uniform rotation from the QR decomposition of a Gaussian matrix."""
    q, r = torch.linalg.qr(torch.randn(3, 3, generator=generator, dtype=dtype))  # expect: FL000 GB0055
    q = q * torch.sign(torch.diagonal(r)).unsqueeze(0)
    if torch.det(q) < 0:  # reflection -> proper rotation  # expect: FL000 GB0170
        q[:, 0] = -q[:, 0]
    return q


@torch.compile
def augment_coordinates(pos, atom_mask, generator: Optional[torch.Generator] = None, noise: float = 0.05):
    """Training augmentation: random SO(3) rotation about the centroid plus Gaussian jitter."""
    w = atom_mask.unsqueeze(-1).to(pos.dtype)
    centroid = (pos * w).sum(1, keepdim=True) / w.sum(1, keepdim=True).clamp_min(1.0)
    rot = random_rotation(generator, pos.dtype)
    pos = (pos - centroid) @ rot.T + centroid
    jitter = torch.randn(pos.shape, generator=generator, dtype=pos.dtype) * noise  # expect: FL000 GB0055
    return (pos + jitter) * w


# --------------------------------------------------------------------------- cases

def _gen(k):
    return torch.Generator().manual_seed(k)


def _build(cls, *args, **kwargs):
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return cls(*args, **kwargs)


def _pos(B, N, k=0, scale=1.5):
    return torch.randn(B, N, 3, generator=_gen(k)) * scale


def _mask(B, N, n_last):
    mask = torch.ones(B, N, dtype=torch.bool)
    mask[-1, n_last:] = False
    return mask


def _z(B, N, n_last, k=1):
    choices = torch.tensor([1, 6, 7, 8])
    z = choices[torch.randint(0, 4, (B, N), generator=_gen(k))]
    return z.masked_fill(~_mask(B, N, n_last), 0)


def _geom(B, N, n_last):
    return dense_geometry(_pos(B, N), _mask(B, N, n_last))


CASES = {
    "radial_features": lambda: (radial_features, (*_geom(2, 5, 4), ModelConfig(envelope="poly6"))),
    "RadialBasis": lambda: (_build(RadialBasis, 6), (_geom(2, 5, 4)[0],)),
    "AtomEmbedding": lambda: (_build(AtomEmbedding, 16), (_z(2, 5, 4),)),
    "build_neighbor_list": lambda: (build_neighbor_list, (_pos(2, 5), _mask(2, 5, 4), 2.5)),
    "NeighborDistances": lambda: (_build(NeighborDistances), (_pos(2, 6), _mask(2, 6, 5)),
                                  (_pos(2, 11), _mask(2, 11, 9))),
    "SchNetInteraction": lambda: (_build(SchNetInteraction, ModelConfig()),
                                  (torch.randn(2, 5, 16, generator=_gen(4)),
                                   torch.rand(2, 5, 5, 6, generator=_gen(5)), _geom(2, 5, 4)[1].float())),
    "SchNet": lambda: (_build(SchNet, ModelConfig()), (_z(2, 5, 4), _pos(2, 5), _mask(2, 5, 4))),
    "EnergyForceModel": lambda: (_build(EnergyForceModel, ModelConfig(envelope="poly5", validate_inputs=False)),
                                 (_z(2, 5, 4), _pos(2, 5), _mask(2, 5, 4))),
    "AtomrefScaleShift": lambda: (_build(AtomrefScaleShift, std=0.1),
                                  (torch.randn(2, 5, generator=_gen(6)), _z(2, 5, 4), _mask(2, 5, 4))),
    "EGNNLayer": lambda: (_build(EGNNLayer, 16), (torch.randn(2, 5, 16, generator=_gen(7)),
                                                 _pos(2, 5), _mask(2, 5, 4))),
    "EGNN": lambda: (_build(EGNN, 4, 16, callbacks=[check_finite, log_layer_stats]),
                     (torch.randn(2, 5, 4, generator=_gen(8)), _pos(2, 5), _mask(2, 5, 4))),
    "backbone_torsions": lambda: (backbone_torsions, (torch.randn(2, 6, 3, 3, generator=_gen(3)) * 2, torch.ones(2, 6)),
                                  (torch.randn(2, 8, 3, 3, generator=_gen(3)) * 2, torch.ones(2, 8))),
    "collate_molecules": lambda: (collate_molecules, ([torch.tensor([6, 1, 1, 1, 8]), torch.tensor([7, 1, 1])],
                                                      [_pos(1, 5, k=14)[0], _pos(1, 3, k=15)[0]], 4)),
    "pool_by_batch_index": lambda: (pool_by_batch_index, (torch.randn(7, 4, generator=_gen(16)),
                                                          torch.tensor([0, 0, 0, 1, 1, 2, 2]), "mean")),
    "coulomb_matrix": lambda: (coulomb_matrix, (_z(2, 5, 4).clamp_min(1), _pos(2, 5), _mask(2, 5, 4)),
                               (_z(4, 9, 7).clamp_min(1), _pos(4, 9), _mask(4, 9, 7))),
    "augment_coordinates": lambda: (augment_coordinates, (_pos(2, 5), _mask(2, 5, 4), _gen(17))),
}
