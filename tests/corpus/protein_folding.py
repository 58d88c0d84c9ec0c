"""AlphaFold2 / OpenFold / ESMFold-style structure prediction: residue tables, quaternion frame updates,
MSA row/column attention with pair bias, triangle updates and attention, the outer-product mean,
OpenFold-style chunking, distogram / pLDDT / pTM heads and a recycling loop with early stopping."""
import functools
import logging
import math
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("protein_folding")
logger.addHandler(logging.NullHandler())

RESTYPES = "ARNDCQEGHILKMFPSTWYV"
RESTYPE_ORDER = {aa: i for i, aa in enumerate(RESTYPES)}
UNK_RESTYPE = len(RESTYPES)  # "X"
MSA_GAP = UNK_RESTYPE + 1
RESTYPE_3TO1 = dict(zip("ALA ARG ASN ASP CYS GLN GLU GLY HIS ILE LEU LYS MET PHE PRO SER THR TRP TYR VAL"
                        .split(), RESTYPES))
AMBIGUOUS_CODES = {"B": "D", "Z": "E", "J": "L", "U": "C", "O": "K"}
INF = 1e9


@dataclass
class FoldConfig:
    c_m: int = 8
    c_z: int = 6
    c_s: int = 8
    c_hidden: int = 4
    no_heads: int = 2
    no_bins: int = 8
    relpos_k: int = 3
    tf_dim: int = UNK_RESTYPE + 1
    msa_dim: int = MSA_GAP + 1
    num_recycles: int = 3
    recycle_tol: float = 0.05
    chunk_size: Optional[int] = None
    log_every: int = 10


def permute_final_dims(t: torch.Tensor, inds: Sequence[int]) -> torch.Tensor:
    first_inds = list(range(len(t.shape) - len(inds)))
    return t.permute(first_inds + [len(first_inds) + i for i in inds])


def flatten_final_dims(t: torch.Tensor, no_dims: int) -> torch.Tensor:
    return t.reshape(t.shape[:-no_dims] + (-1,))


def tree_map(fn: Callable, tree: Any) -> Any:
    if isinstance(tree, dict):
        return {k: tree_map(fn, v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(tree_map(fn, v) for v in tree)
    return fn(tree) if isinstance(tree, torch.Tensor) else tree


def chunk_layer(layer: Callable, inputs: Dict[str, Any], chunk_size: int, no_batch_dims: int) -> torch.Tensor:
    """Runs `layer` over slices of the flattened leading batch dimensions (OpenFold's chunk_layer)."""
    shapes: List[torch.Size] = []
    tree_map(lambda t: shapes.append(t.shape[:no_batch_dims]), inputs)
    orig_batch_dims = tuple(max(s) for s in zip(*shapes))
    flat_batch = math.prod(orig_batch_dims)
    logger.debug("chunk_layer: %d rows in chunks of %d", flat_batch, chunk_size)  # expect: FL000 GB0291

    def _flatten(t):
        if tuple(t.shape[:no_batch_dims]) != orig_batch_dims:
            t = t.expand(orig_batch_dims + tuple(t.shape[no_batch_dims:]))
        return t.reshape(flat_batch, *t.shape[no_batch_dims:])

    flat_inputs = tree_map(_flatten, inputs)
    outputs = []
    for start in range(0, flat_batch, chunk_size):
        end = min(start + chunk_size, flat_batch)
        outputs.append(layer(**tree_map(lambda t: t[start:end], flat_inputs)))
    out = torch.cat(outputs, dim=0)
    return out.reshape(orig_batch_dims + tuple(out.shape[1:]))


def dgram_from_positions(pos: torch.Tensor, min_bin: float = 3.25, max_bin: float = 20.75, no_bins: int = 8):
    dgram = torch.sum((pos[..., None, :] - pos[..., None, :, :]) ** 2, dim=-1, keepdim=True)
    lower = torch.linspace(min_bin, max_bin, no_bins, device=pos.device) ** 2
    upper = torch.cat([lower[1:], lower.new_tensor([1e8])], dim=-1)
    return ((dgram > lower) * (dgram < upper)).type(pos.dtype)


def quat_to_rot(quat: torch.Tensor) -> torch.Tensor:
    quat = quat / torch.linalg.norm(quat, dim=-1, keepdim=True)
    a, b, c, d = torch.unbind(quat, dim=-1)
    rows = (
        (a * a + b * b - c * c - d * d, 2 * (b * c - a * d), 2 * (b * d + a * c)),
        (2 * (b * c + a * d), a * a - b * b + c * c - d * d, 2 * (c * d - a * b)),
        (2 * (b * d - a * c), 2 * (c * d + a * b), a * a - b * b - c * c + d * d),
    )
    return torch.stack([torch.stack(r, dim=-1) for r in rows], dim=-2)


class Rigid:
    """A rigid transformation kept as a rotation matrix and a translation (OpenFold's Rigid)."""
    def __init__(self, rots: torch.Tensor, trans: torch.Tensor):
        if rots.shape[:-2] != trans.shape[:-1]:
            raise ValueError(f"rotation batch {tuple(rots.shape[:-2])} != translation {tuple(trans.shape[:-1])}")
        self._rots, self._trans = rots, trans

    @classmethod
    def identity(cls, shape, dtype=torch.float32, device=None) -> "Rigid":
        rots = torch.eye(3, dtype=dtype, device=device).expand(*shape, 3, 3)
        return cls(rots, torch.zeros(*shape, 3, dtype=dtype, device=device))

    @property
    def trans(self) -> torch.Tensor:
        return self._trans

    def apply(self, pts: torch.Tensor) -> torch.Tensor:
        return torch.einsum("...ij,...j->...i", self._rots, pts) + self._trans

    def compose(self, other: "Rigid") -> "Rigid":
        return Rigid(self._rots @ other._rots, self.apply(other.trans))

    def compose_q_update_vec(self, q_update_vec: torch.Tensor) -> "Rigid":
        """[*, 6] update: the vector part of a (1, b, c, d) quaternion and a translation."""
        q_vec, t_vec = q_update_vec[..., :3], q_update_vec[..., 3:]
        quat = torch.cat([torch.ones_like(q_vec[..., :1]), q_vec], dim=-1)
        return self.compose(Rigid(quat_to_rot(quat), t_vec))


def _lecun_normal_(weight: torch.Tensor, scale: float = 1.0):
    std = math.sqrt(scale / max(1, weight.shape[1])) / 0.87962566103423978
    with torch.no_grad():
        weight.normal_(0.0, std).clamp_(-2 * std, 2 * std)


_INITIALIZERS: Dict[str, Callable[[nn.Linear], Any]] = {
    "default": lambda lin: _lecun_normal_(lin.weight),
    "relu": lambda lin: _lecun_normal_(lin.weight, scale=2.0),
    "glorot": lambda lin: nn.init.xavier_uniform_(lin.weight),
    "gating": lambda lin: nn.init.zeros_(lin.weight),
    "final": lambda lin: nn.init.zeros_(lin.weight),
}


class Linear(nn.Linear):
    """nn.Linear with AlphaFold's initialisers; `precision` upcasts the matmul (as OpenFold does)."""
    def __init__(self, in_dim: int, out_dim: int, bias: bool = True, init: str = "default", precision=None):
        super().__init__(in_dim, out_dim, bias=bias)
        if bias:
            with torch.no_grad():
                self.bias.fill_(1.0 if init == "gating" else 0.0)
        _INITIALIZERS[init](self)
        self.precision = precision

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.precision is not None and x.dtype != self.precision:
            b = self.bias.to(self.precision) if self.bias is not None else None
            return F.linear(x.to(self.precision), self.weight.to(self.precision), b).to(x.dtype)
        return super().forward(x)


class Attention(nn.Module):
    """Gated multi-head attention with a list of additive biases (AF2 supplement, Alg. 7)."""
    def __init__(self, c_q: int, c_kv: int, c_hidden: int, no_heads: int, gating: bool = True):
        super().__init__()
        self.c_hidden, self.no_heads = c_hidden, no_heads
        self.linear_q = Linear(c_q, c_hidden * no_heads, bias=False, init="glorot")
        self.linear_k = Linear(c_kv, c_hidden * no_heads, bias=False, init="glorot")
        self.linear_v = Linear(c_kv, c_hidden * no_heads, bias=False, init="glorot")
        self.linear_o = Linear(c_hidden * no_heads, c_q, init="final")
        self.linear_g = Linear(c_q, c_hidden * no_heads, init="gating") if gating else None

    def _split_heads(self, t: torch.Tensor) -> torch.Tensor:
        return t.view(t.shape[:-1] + (self.no_heads, -1)).transpose(-2, -3)

    def forward(self, q_x, kv_x, biases: Optional[List[torch.Tensor]] = None):
        q = self._split_heads(self.linear_q(q_x)) / math.sqrt(self.c_hidden)
        k, v = self._split_heads(self.linear_k(kv_x)), self._split_heads(self.linear_v(kv_x))
        logits = torch.matmul(q, k.transpose(-1, -2))
        for b in biases or []:
            logits = logits + b
        o = torch.matmul(torch.softmax(logits, dim=-1), v).transpose(-2, -3)
        if self.linear_g is not None:
            g = torch.sigmoid(self.linear_g(q_x))
            o = o * g.view(g.shape[:-1] + (self.no_heads, -1))
        return self.linear_o(flatten_final_dims(o, 2))


class MSAAttention(nn.Module):
    def __init__(self, c_in: int, c_hidden: int, no_heads: int, c_z: Optional[int] = None, inf: float = INF,
                 chunk_size: Optional[int] = None):
        super().__init__()
        self.pair_bias, self.inf, self.chunk_size = c_z is not None, inf, chunk_size
        self.layer_norm_m = nn.LayerNorm(c_in)
        if self.pair_bias:
            self.layer_norm_z = nn.LayerNorm(c_z)
            self.linear_z = Linear(c_z, no_heads, bias=False)
        self.mha = Attention(c_in, c_in, c_hidden, no_heads)

    def _prep_biases(self, m, z, mask) -> List[torch.Tensor]:
        mask = m.new_ones(m.shape[:-1]) if mask is None else mask
        biases = [(self.inf * (mask - 1))[..., :, None, None, :]]
        if self.pair_bias and z is not None:
            z = self.linear_z(self.layer_norm_z(z))
            biases.append(permute_final_dims(z, (2, 0, 1)).unsqueeze(-4))
        return biases

    def _attend(self, m, biases, use_lma: bool = False):
        return self.mha(q_x=m, kv_x=m, biases=biases)

    def forward(self, m, z=None, mask=None, chunk_size: Optional[int] = None):
        chunk_size = chunk_size if chunk_size is not None else self.chunk_size
        biases = self._prep_biases(m, z, mask)
        m = self.layer_norm_m(m)
        if chunk_size is None:
            return self._attend(m, biases)
        fn = functools.partial(self._attend, use_lma=False)
        return chunk_layer(fn, {"m": m, "biases": biases}, chunk_size, no_batch_dims=len(m.shape[:-2]))


class MSAColumnAttention(MSAAttention):
    def __init__(self, c_m: int, c_hidden: int, no_heads: int, **kw):
        super().__init__(c_m, c_hidden, no_heads, c_z=None, **kw)

    def forward(self, m, z=None, mask=None, chunk_size: Optional[int] = None):
        mask = None if mask is None else mask.transpose(-1, -2)
        m = super().forward(m.transpose(-2, -3), mask=mask, chunk_size=chunk_size)
        return m.transpose(-2, -3)


class OuterProductMean(nn.Module):
    def __init__(self, c_m: int, c_z: int, c_hidden: int, eps: float = 1e-3):
        super().__init__()
        self.eps, self.layer_norm = eps, nn.LayerNorm(c_m)
        self.linear_1, self.linear_2 = Linear(c_m, c_hidden), Linear(c_m, c_hidden)
        self.linear_out = Linear(c_hidden ** 2, c_z, init="final")

    def _opm(self, a, b):
        outer = torch.einsum("...bac,...dae->...bdce", a, b)
        return self.linear_out(outer.reshape(outer.shape[:-2] + (-1,)))

    def forward(self, m, mask=None, chunk_size: Optional[int] = None):
        mask = (m.new_ones(m.shape[:-1]) if mask is None else mask).unsqueeze(-1)
        ln = self.layer_norm(m)
        a = (self.linear_1(ln) * mask).transpose(-2, -3)
        b = (self.linear_2(ln) * mask).transpose(-2, -3)
        if chunk_size is not None:
            outer = chunk_layer(functools.partial(self._opm, b=b), {"a": a}, chunk_size, no_batch_dims=1)
        else:
            outer = self._opm(a, b)
        norm = torch.einsum("...abc,...adc->...bdc", mask, mask)
        return outer / (norm + self.eps)


class TriangleMultiplicativeUpdate(nn.Module):
    """AF2 Alg. 11 (outgoing edges); the incoming version flips `_outgoing`."""
    _outgoing = True

    def __init__(self, c_z: int, c_hidden: int):
        super().__init__()
        self.linear_a_p, self.linear_a_g = Linear(c_z, c_hidden), Linear(c_z, c_hidden, init="gating")
        self.linear_b_p, self.linear_b_g = Linear(c_z, c_hidden), Linear(c_z, c_hidden, init="gating")
        self.linear_g, self.linear_z = Linear(c_z, c_z, init="gating"), Linear(c_hidden, c_z, init="final")
        self.layer_norm_in, self.layer_norm_out = nn.LayerNorm(c_z), nn.LayerNorm(c_hidden)

    def _combine_projections(self, a, b):
        if self._outgoing:
            a, b = permute_final_dims(a, (2, 0, 1)), permute_final_dims(b, (2, 1, 0))
        else:
            a, b = permute_final_dims(a, (2, 1, 0)), permute_final_dims(b, (2, 0, 1))
        return permute_final_dims(torch.matmul(a, b), (1, 2, 0))

    def forward(self, z, mask=None):
        mask = (z.new_ones(z.shape[:-1]) if mask is None else mask).unsqueeze(-1)
        z = self.layer_norm_in(z)
        a = mask * torch.sigmoid(self.linear_a_g(z)) * self.linear_a_p(z)
        b = mask * torch.sigmoid(self.linear_b_g(z)) * self.linear_b_p(z)
        x = self.layer_norm_out(self._combine_projections(a, b))
        return self.linear_z(x) * torch.sigmoid(self.linear_g(z))


class TriangleMultiplicationIncoming(TriangleMultiplicativeUpdate):
    _outgoing = False


class TriangleAttention(nn.Module):
    def __init__(self, c_in: int, c_hidden: int, no_heads: int, starting: bool = True, inf: float = INF,
                 chunk_size: Optional[int] = 4):
        super().__init__()
        self.starting, self.inf, self.chunk_size = starting, inf, chunk_size
        self.layer_norm = nn.LayerNorm(c_in)
        self.linear = Linear(c_in, no_heads, bias=False)
        self.mha = Attention(c_in, c_in, c_hidden, no_heads)

    def forward(self, x, mask=None):
        mask = x.new_ones(x.shape[:-1]) if mask is None else mask
        if not self.starting:
            x, mask = x.transpose(-2, -3), mask.transpose(-1, -2)
        x = self.layer_norm(x)
        mask_bias = (self.inf * (mask - 1))[..., :, None, None, :]
        biases = [mask_bias, permute_final_dims(self.linear(x), (2, 0, 1)).unsqueeze(-4)]
        if self.chunk_size is not None and x.shape[-3] > self.chunk_size:  # expect: FL301
            x = chunk_layer(lambda x, biases: self.mha(x, x, biases), {"x": x, "biases": biases},
                            self.chunk_size, no_batch_dims=len(x.shape[:-2]))
        else:
            x = self.mha(q_x=x, kv_x=x, biases=biases)
        return x if self.starting else x.transpose(-2, -3)


class Transition(nn.Module):
    def __init__(self, c: int, n: int = 2, activation: str = "relu"):
        super().__init__()
        self.layer_norm = nn.LayerNorm(c)
        self.linear_1, self.linear_2 = Linear(c, n * c, init="relu"), Linear(n * c, c, init="final")
        self.act = getattr(F, activation)

    def forward(self, x, mask=None):
        x = self.linear_2(self.act(self.linear_1(self.layer_norm(x))))
        return x if mask is None else x * mask.unsqueeze(-1)


class InputEmbedder(nn.Module):
    def __init__(self, cfg: FoldConfig):
        super().__init__()
        self.tf_dim, self.msa_dim, self.relpos_k = cfg.tf_dim, cfg.msa_dim, cfg.relpos_k
        self.linear_tf_z_i, self.linear_tf_z_j = Linear(cfg.tf_dim, cfg.c_z), Linear(cfg.tf_dim, cfg.c_z)
        self.linear_tf_m, self.linear_msa_m = Linear(cfg.tf_dim, cfg.c_m), Linear(cfg.msa_dim, cfg.c_m)
        self.linear_relpos = Linear(2 * cfg.relpos_k + 1, cfg.c_z)

    def relpos(self, ri: torch.Tensor) -> torch.Tensor:
        d = ri[..., None] - ri[..., None, :]
        d = torch.clamp(d, -self.relpos_k, self.relpos_k) + self.relpos_k
        return self.linear_relpos(F.one_hot(d, 2 * self.relpos_k + 1).float())

    def forward(self, aatype, residue_index, msa):
        if aatype.max() >= self.tf_dim or msa.max() >= self.msa_dim:  # expect: FL000 GB0170
            raise ValueError(f"residue index out of range for tf_dim={self.tf_dim}")
        tf = F.one_hot(aatype, self.tf_dim).float()
        z = self.linear_tf_z_i(tf)[..., None, :] + self.linear_tf_z_j(tf)[..., None, :, :]
        z = z + self.relpos(residue_index.to(torch.long))
        m = self.linear_msa_m(F.one_hot(msa, self.msa_dim).float()) + self.linear_tf_m(tf).unsqueeze(-3)
        return m, z


class EvoformerBlock(nn.Module):
    PAIR_STACK = ("tri_mul_out", "tri_mul_in", "tri_att_start", "tri_att_end", "pair_transition")

    def __init__(self, cfg: FoldConfig):
        super().__init__()
        self.msa_att_row = MSAAttention(cfg.c_m, cfg.c_hidden, cfg.no_heads, c_z=cfg.c_z)
        self.msa_att_col = MSAColumnAttention(cfg.c_m, cfg.c_hidden, cfg.no_heads)
        self.msa_transition = Transition(cfg.c_m, )
        self.outer_product_mean = OuterProductMean(cfg.c_m, cfg.c_z, cfg.c_hidden)
        self.tri_mul_out = TriangleMultiplicativeUpdate(cfg.c_z, cfg.c_hidden)
        self.tri_mul_in = TriangleMultiplicationIncoming(cfg.c_z, cfg.c_hidden)
        self.tri_att_start = TriangleAttention(cfg.c_z, cfg.c_hidden, cfg.no_heads, chunk_size=cfg.chunk_size)
        self.tri_att_end = TriangleAttention(cfg.c_z, cfg.c_hidden, cfg.no_heads, False, chunk_size=cfg.chunk_size)
        self.pair_transition = Transition(cfg.c_z, )

    def _debug_stats(self, name: str, t: torch.Tensor):
        if logger.isEnabledFor(logging.DEBUG):  # expect: FL000 GB0291
            logger.debug("%s: mean=%.4f std=%.4f", name, t.mean().item(), t.std().item())

    def forward(self, m, z, msa_mask=None, pair_mask=None, chunk_size: Optional[int] = None):
        m = m + self.msa_att_row(m, z, mask=msa_mask, chunk_size=chunk_size)
        m = m + self.msa_att_col(m, mask=msa_mask, chunk_size=chunk_size)
        m = m + self.msa_transition(m, msa_mask)
        z = z + self.outer_product_mean(m, msa_mask, chunk_size=chunk_size)
        for name in self.PAIR_STACK:
            z = z + getattr(self, name)(z, mask=pair_mask)
            self._debug_stats(name, z)
        return m, z


def compute_plddt(logits: torch.Tensor) -> torch.Tensor:
    bin_width = 1.0 / logits.shape[-1]
    bounds = torch.arange(0.5 * bin_width, 1.0, bin_width, dtype=logits.dtype, device=logits.device)
    return torch.sum(torch.softmax(logits, dim=-1) * bounds, dim=-1) * 100


def _summarize_confidence(plddt: torch.Tensor, mask: Optional[torch.Tensor] = None) -> Dict[str, float]:
    mask = torch.ones_like(plddt) if mask is None else mask
    n = mask.sum()
    return {"mean_plddt": ((plddt * mask).sum() / n).item(),  # expect: FL000 GB0124
            "frac_confident": (((plddt > 70).float() * mask).sum() / n).item()}  # expect: FL000 GB0124


class AuxiliaryHeads(nn.Module):
    def __init__(self, cfg: FoldConfig, summarize: bool = True):
        super().__init__()
        self.summarize = summarize
        self.distogram = Linear(cfg.c_z, cfg.no_bins, init="final")
        self.plddt = nn.Sequential(nn.LayerNorm(cfg.c_s), Linear(cfg.c_s, cfg.c_s, init="relu"), nn.ReLU(),
                                   Linear(cfg.c_s, 5, init="final"))

    def forward(self, outputs: Dict[str, torch.Tensor]) -> Dict[str, Any]:
        logits = self.distogram(outputs["pair"])
        aux: Dict[str, Any] = {"distogram_logits": logits + logits.transpose(-2, -3)}
        aux["plddt"] = compute_plddt(self.plddt(outputs["single"]))
        if self.summarize:
            aux.update(_summarize_confidence(aux["plddt"], outputs.get("seq_mask")))
        return aux


class RecyclingFolder(nn.Module):
    """Embedding -> Evoformer -> backbone frames, recycled until the CA trace stops moving."""
    def __init__(self, cfg: FoldConfig, callbacks: Optional[List[Callable[[int, Dict], None]]] = None):
        super().__init__()
        self.cfg, self.callbacks, self.forward_count = cfg, list(callbacks or []), 0
        self.input_embedder = InputEmbedder(cfg)
        self.evoformer = nn.ModuleList([EvoformerBlock(cfg)])
        self.recycle_norm_m, self.recycle_norm_z = nn.LayerNorm(cfg.c_m), nn.LayerNorm(cfg.c_z)
        self.recycle_linear, self.linear_single = Linear(cfg.no_bins, cfg.c_z), Linear(cfg.c_m, cfg.c_s)
        self.bb_update = Linear(cfg.c_s, 6)

    def structure(self, s: torch.Tensor, no_blocks: int = 2, trans_scale_factor: float = 10.0):
        rigids = Rigid.identity(s.shape[:-1], s.dtype, s.device)
        for _ in range(no_blocks):
            rigids = rigids.compose_q_update_vec(self.bb_update(s) * 0.1)
        positions = rigids.trans * trans_scale_factor
        assert not torch.isnan(positions).any(), "NaN in backbone positions"  # expect: FL000 GB0170
        return {"positions": positions, "single": s}

    def iteration(self, feats, prevs):
        m, z = self.input_embedder(feats["aatype"], feats["residue_index"], feats["msa"])
        m_prev, z_prev, x_prev = prevs
        if m_prev is None:
            m_prev, z_prev = m.new_zeros(m.shape[-2:]), z.new_zeros(z.shape)
            x_prev = z.new_zeros(z.shape[:-2] + (3,))
        m[..., 0, :, :] += self.recycle_norm_m(m_prev)
        z = z + self.recycle_norm_z(z_prev) + self.recycle_linear(dgram_from_positions(x_prev, no_bins=self.cfg.no_bins))
        for block in self.evoformer:
            m, z = block(m, z, chunk_size=self.cfg.chunk_size)
        out = self.structure(self.linear_single(m[..., 0, :, :]))
        out["pair"] = z
        return out, (m[..., 0, :, :], z, out["positions"])

    def forward(self, feats: Dict[str, torch.Tensor]):
        self.forward_count += 1
        prevs, outputs = (None, None, None), {}
        for cycle in range(self.cfg.num_recycles + 1):
            x_old = prevs[2]
            outputs, prevs = self.iteration(feats, prevs)
            for cb in self.callbacks:
                cb(cycle, outputs)
            if x_old is not None:
                delta = torch.sqrt(((prevs[2] - x_old) ** 2).sum(-1).mean())
                if delta < self.cfg.recycle_tol:
                    break
        if self.forward_count % self.cfg.log_every == 0:
            logger.info("fold call %d used %d cycles", self.forward_count, cycle + 1)
        outputs["num_cycles"] = cycle + 1
        return outputs


def _resolve_residue(token: str) -> int:
    token = RESTYPE_3TO1.get(token.upper(), "X") if len(token) == 3 else token.upper()
    try:
        return RESTYPE_ORDER[AMBIGUOUS_CODES.get(token, token)]
    except KeyError:
        return UNK_RESTYPE


@torch.compile
def sequence_to_features(seq, residue_offsets):
    aatype = torch.tensor([_resolve_residue(t) for t in seq], dtype=torch.long)
    return F.one_hot(aatype, UNK_RESTYPE + 1).float(), torch.arange(len(seq)) + int(residue_offsets)  # expect: FL000 GB0124


def _calculate_bin_centers(boundaries: torch.Tensor) -> torch.Tensor:
    step = boundaries[1] - boundaries[0]
    bin_centers = boundaries + step / 2
    return torch.cat([bin_centers, (bin_centers[-1] + step).unsqueeze(-1)], dim=0)


@torch.compile
def compute_ptm(logits, residue_weights=None, max_bin: int = 31, no_bins: int = 8, eps: float = 1e-8):
    if residue_weights is None:
        residue_weights = logits.new_ones(logits.shape[-2])
    bin_centers = _calculate_bin_centers(torch.linspace(0, max_bin, steps=no_bins - 1, device=logits.device))
    d0 = 1.24 * np.cbrt(max(logits.shape[-2], 19) - 15) - 1.8
    predicted_tm_term = torch.sum(torch.softmax(logits, dim=-1) / (1 + (bin_centers ** 2) / (d0 ** 2)), dim=-1)
    normed_residue_mask = residue_weights / (eps + residue_weights.sum())
    per_alignment = torch.sum(predicted_tm_term * normed_residue_mask, dim=-1)
    weighted = per_alignment * residue_weights
    argmax = (weighted == torch.max(weighted)).nonzero()[0]  # expect: FL000 GB0036
    return per_alignment[tuple(argmax)]  # expect: FL000 GB0033


_RES_AXIS = {"aatype": 0, "residue_index": 0, "msa": 1, "seq_mask": 0}


@torch.compile
def crop_features(feats: Dict[str, torch.Tensor], crop_size: int = 6) -> Dict[str, torch.Tensor]:
    n_res = feats["aatype"].shape[0]
    if n_res <= crop_size:  # expect: FL301
        return dict(feats)
    start = (n_res - crop_size) // 2
    return {k: v if k not in _RES_AXIS else v.narrow(_RES_AXIS[k], start, crop_size) for k, v in feats.items()}


def _randn(*shape, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _seeded(module: nn.Module, seed: int = 0) -> nn.Module:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3)
    return module


def _features(n_res: int = 5, n_seq: int = 4, seed: int = 0) -> Dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {"aatype": torch.randint(0, 20, (n_res,), generator=g), "residue_index": torch.arange(n_res) + 7,
            "msa": torch.randint(0, MSA_GAP + 1, (n_seq, n_res), generator=g),
            "seq_mask": (torch.rand(n_res, generator=g) > 0.1).float()}


CFG = FoldConfig()
CHUNKED = FoldConfig(chunk_size=2)
_cycles_seen: List[int] = []
_f = _features()

CASES = {
    "Linear": lambda: (_seeded(Linear(6, 4, precision=torch.float64)), (_randn(3, 6),)),
    "Attention": lambda: (_seeded(Attention(8, 8, 4, 2)), (_randn(3, 5, 8), _randn(3, 5, 8, seed=1),
                                                          [_randn(3, 2, 5, 5, seed=2)])),
    "MSAAttention": lambda: (_seeded(MSAAttention(8, 4, 2, c_z=6, chunk_size=3)), (_randn(4, 5, 8), _randn(5, 5, 6))),
    "MSAColumnAttention": lambda: (_seeded(MSAColumnAttention(8, 4, 2)),
                                   (_randn(4, 5, 8), None, (_randn(4, 5, seed=1) > -1).float(), 2)),
    "OuterProductMean": lambda: (_seeded(OuterProductMean(8, 6, 3)), (_randn(4, 5, 8), None, 2)),
    "TriangleMultiplicativeUpdate": lambda: (_seeded(TriangleMultiplicativeUpdate(6, 4)), (_randn(5, 5, 6),)),
    "TriangleMultiplicationIncoming": lambda: (_seeded(TriangleMultiplicationIncoming(6, 4)),
                                               (_randn(5, 5, 6), (_randn(5, 5, seed=3) > -1).float())),
    "TriangleAttention": lambda: (_seeded(TriangleAttention(6, 4, 2, starting=False)), (_randn(3, 3, 6),),
                                  (_randn(7, 7, 6, seed=1),)),
    "Transition": lambda: (_seeded(Transition(6, activation="gelu")), (_randn(5, 5, 6),)),
    "InputEmbedder": lambda: (_seeded(InputEmbedder(CFG)), (_f["aatype"], _f["residue_index"], _f["msa"])),
    "EvoformerBlock": lambda: (_seeded(EvoformerBlock(CHUNKED)), (_randn(4, 5, 8), _randn(5, 5, 6, seed=1))),
    "AuxiliaryHeads": lambda: (_seeded(AuxiliaryHeads(CFG)), ({"pair": _randn(5, 5, 6), "single": _randn(5, 8)},)),
    "RecyclingFolder": lambda: (_seeded(RecyclingFolder(CFG, callbacks=[lambda c, o: _cycles_seen.append(c)])),
                                (_features(),)),
    "sequence_to_features": lambda: (sequence_to_features, ("MKTAYIXQRB", torch.tensor(3))),
    "compute_ptm": lambda: (compute_ptm, (_randn(5, 5, 8),)),
    "crop_features": lambda: (crop_features, (_features(5),), (_features(9, seed=1),)),
}
