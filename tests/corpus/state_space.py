"""State-space sequence models: S4D kernels, Mamba-style selective scans, recurrent inference caches, LoRA, GLUs."""
import logging
import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger(__name__)

try:
    from causal_conv1d import causal_conv1d_fn  # optional CUDA kernel
except ImportError:
    causal_conv1d_fn = None


@dataclass
class MambaConfig:
    d_model: int = 8
    d_state: int = 4
    d_conv: int = 3
    expand: int = 2
    dt_min: float = 0.001
    dt_max: float = 0.1
    dt_rank: int = 2
    debug: bool = False


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class SwiGLU(nn.Module):
    def __init__(self, d, hidden=None):
        super().__init__()
        hidden = hidden or int(8 * d / 3)
        self.w12 = nn.Linear(d, 2 * hidden, bias=False)
        self.w3 = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        x1, x2 = self.w12(x).chunk(2, dim=-1)
        return self.w3(F.silu(x1) * x2)


class LoRALinear(nn.Module):
    def __init__(self, in_features, out_features, r=4, alpha=8, dropout=0.0):
        super().__init__()
        self.base = nn.Linear(in_features, out_features)
        self.lora_A = nn.Parameter(torch.randn(r, in_features) / math.sqrt(in_features))
        self.lora_B = nn.Parameter(torch.zeros(out_features, r))
        self.scaling = alpha / r
        self.dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.merged = False

    def merge(self):
        self.base.weight.data += (self.lora_B @ self.lora_A) * self.scaling
        self.merged = True  # expect: FL302

    def forward(self, x):
        if not self.training and not self.merged:
            self.merge()
        out = self.base(x)
        if not self.merged:
            out = out + (self.dropout(x) @ self.lora_A.t() @ self.lora_B.t()) * self.scaling
        return out


class S4DKernel(nn.Module):
    """Diagonal S4 kernel: complex A, discretised with ZOH, convolution via FFT."""

    def __init__(self, d_model=4, n=4, dt_min=0.001, dt_max=0.1):
        super().__init__()
        log_dt = torch.rand(d_model) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)
        self.log_dt = nn.Parameter(log_dt)
        self.C = nn.Parameter(torch.view_as_real(torch.randn(d_model, n // 2, dtype=torch.cfloat)))
        self.log_A_real = nn.Parameter(torch.log(0.5 * torch.ones(d_model, n // 2)))
        self.A_imag = nn.Parameter(math.pi * torch.arange(n // 2).float().repeat(d_model, 1))
        self.D = nn.Parameter(torch.randn(d_model))

    def kernel(self, L):
        dt = torch.exp(self.log_dt)
        C = torch.view_as_complex(self.C)
        A = -torch.exp(self.log_A_real) + 1j * self.A_imag
        dtA = A * dt.unsqueeze(-1)
        K = dtA.unsqueeze(-1) * torch.arange(L, device=A.device)
        C = C * (torch.exp(dtA) - 1.0) / A
        return 2 * torch.einsum("hn,hnl->hl", C, torch.exp(K)).real

    def forward(self, u):
        L = u.size(-1)
        k = self.kernel(L)
        k_f = torch.fft.rfft(k, n=2 * L)
        u_f = torch.fft.rfft(u, n=2 * L)
        y = torch.fft.irfft(u_f * k_f, n=2 * L)[..., :L]
        return y + u * self.D.unsqueeze(-1)


def selective_scan_ref(u, delta, A, B, C, D=None, z=None, return_last_state=False):
    """Reference selective scan: u, delta (b, d, l); A (d, n); B, C (b, n, l)."""
    batch, dim, dstate = u.shape[0], A.shape[0], A.shape[1]
    x = u.new_zeros((batch, dim, dstate))
    ys = []
    deltaA = torch.exp(torch.einsum("bdl,dn->bdln", delta, A))
    deltaB_u = torch.einsum("bdl,bnl,bdl->bdln", delta, B, u)
    last_state = None
    for i in range(u.shape[2]):
        x = deltaA[:, :, i] * x + deltaB_u[:, :, i]
        y = torch.einsum("bdn,bn->bd", x, C[:, :, i])
        if i == u.shape[2] - 1:
            last_state = x
        ys.append(y)
    y = torch.stack(ys, dim=2)
    out = y if D is None else y + u * D.unsqueeze(-1)
    if z is not None:
        out = out * F.silu(z)
    return (out, last_state) if return_last_state else out


class MambaBlock(nn.Module):
    def __init__(self, cfg: MambaConfig = MambaConfig()):
        super().__init__()
        self.cfg = cfg
        d_inner = cfg.expand * cfg.d_model
        self.in_proj = nn.Linear(cfg.d_model, 2 * d_inner)
        self.conv1d = nn.Conv1d(d_inner, d_inner, cfg.d_conv, groups=d_inner, padding=cfg.d_conv - 1)
        self.x_proj = nn.Linear(d_inner, cfg.dt_rank + 2 * cfg.d_state, bias=False)
        self.dt_proj = nn.Linear(cfg.dt_rank, d_inner)
        dt = torch.exp(torch.rand(d_inner) * (math.log(cfg.dt_max) - math.log(cfg.dt_min)) + math.log(cfg.dt_min))
        with torch.no_grad():
            self.dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))
        A = torch.arange(1, cfg.d_state + 1, dtype=torch.float32).repeat(d_inner, 1)
        self.A_log = nn.Parameter(torch.log(A))
        self.D = nn.Parameter(torch.ones(d_inner))
        self.out_proj = nn.Linear(d_inner, cfg.d_model)

    def forward(self, hidden_states):
        seqlen = hidden_states.shape[1]
        xz = self.in_proj(hidden_states).transpose(1, 2)
        x, z = xz.chunk(2, dim=1)
        if causal_conv1d_fn is None:
            x = F.silu(self.conv1d(x)[..., :seqlen])
        else:
            x = causal_conv1d_fn(x, self.conv1d.weight.squeeze(1), self.conv1d.bias, activation="silu")
        x_dbl = self.x_proj(x.transpose(1, 2))
        dt, B, C = torch.split(x_dbl, [self.cfg.dt_rank, self.cfg.d_state, self.cfg.d_state], dim=-1)
        dt = F.softplus(self.dt_proj(dt)).transpose(1, 2)
        if self.cfg.debug:
            logger.info("dt range %.4f..%.4f", dt.min().item(), dt.max().item())  # expect: FL102 GB0124; FL111 GB0291
        A = -torch.exp(self.A_log.float())
        y = selective_scan_ref(x, dt, A, B.transpose(1, 2), C.transpose(1, 2), self.D, z)
        return self.out_proj(y.transpose(1, 2))


class MambaStep(nn.Module):
    """Single-token decoding with a conv/ssm state cache kept on the module."""

    def __init__(self, cfg: MambaConfig = MambaConfig()):
        super().__init__()
        self.block = MambaBlock(cfg)
        d_inner = cfg.expand * cfg.d_model
        self.register_buffer("conv_state", torch.zeros(1, d_inner, cfg.d_conv))
        self.register_buffer("ssm_state", torch.zeros(1, d_inner, cfg.d_state))
        self.seqlen_offset = 0

    @torch.no_grad()
    def forward(self, hidden_states):
        b = self.block
        xz = b.in_proj(hidden_states.squeeze(1))
        x, z = xz.chunk(2, dim=-1)
        self.conv_state.copy_(torch.roll(self.conv_state, shifts=-1, dims=-1))
        self.conv_state[:, :, -1] = x
        x = torch.sum(self.conv_state * b.conv1d.weight.squeeze(1), dim=-1) + b.conv1d.bias
        x = F.silu(x)
        dt, B, C = torch.split(b.x_proj(x), [b.cfg.dt_rank, b.cfg.d_state, b.cfg.d_state], dim=-1)
        dt = F.softplus(b.dt_proj(dt))
        A = -torch.exp(b.A_log.float())
        dA = torch.exp(torch.einsum("bd,dn->bdn", dt, A))
        dB = torch.einsum("bd,bn->bdn", dt, B)
        self.ssm_state.copy_(self.ssm_state * dA + x.unsqueeze(-1) * dB)
        y = torch.einsum("bdn,bn->bd", self.ssm_state, C) + b.D * x
        self.seqlen_offset += 1  # expect: FL302
        return b.out_proj(y * F.silu(z)).unsqueeze(1)


class StreamingLRU(nn.Module):
    """Linear recurrent unit that carries its hidden state between calls (streaming inference)."""

    def __init__(self, d=6, r_min=0.4, r_max=0.9):
        super().__init__()
        u = torch.rand(d)
        self.nu_log = nn.Parameter(torch.log(-0.5 * torch.log(u * (r_max ** 2 - r_min ** 2) + r_min ** 2)))
        self.B = nn.Linear(d, d, bias=False)
        self.C = nn.Linear(d, d, bias=False)
        self.state = None

    def forward(self, x):
        lam = torch.exp(-torch.exp(self.nu_log))
        h = self.state if self.state is not None else torch.zeros(x.shape[0], x.shape[-1])
        outs = []
        for t in range(x.shape[1]):
            h = lam * h + self.B(x[:, t])
            outs.append(self.C(h))
        self.state = h.detach()  # expect: FL302
        return torch.stack(outs, 1)


class ResidualSSMBlock(nn.Module):
    def __init__(self, cfg: MambaConfig = MambaConfig(), drop_path: float = 0.1):
        super().__init__()
        self.norm1, self.norm2 = RMSNorm(cfg.d_model), RMSNorm(cfg.d_model)
        self.mixer = MambaBlock(cfg)
        self.mlp = SwiGLU(cfg.d_model)
        self.drop_path = drop_path

    def forward(self, x):
        if self.training and torch.rand(1).item() < self.drop_path:  # expect: FL102 GB0124
            return x
        x = x + self.mixer(self.norm1(x))
        return x + self.mlp(self.norm2(x))


@torch.compile
def chunked_scan(a, b, chunk: int = 4):
    """h_t = a_t * h_{t-1} + b_t, computed chunk by chunk with cumprod inside each chunk."""
    L = a.shape[1]
    assert L % chunk == 0, f"sequence length {L} not divisible by chunk {chunk}"
    h = torch.zeros_like(b[:, 0])
    outs = []
    for start in range(0, L, chunk):
        a_c, b_c = a[:, start:start + chunk], b[:, start:start + chunk]
        a_cum = torch.cumprod(a_c, dim=1)
        h_c = a_cum * (h.unsqueeze(1) + torch.cumsum(b_c / a_cum, dim=1))
        outs.append(h_c)
        h = h_c[:, -1]
    return torch.cat(outs, 1)


@torch.compile
def log_space_scan(log_coeffs, log_values):
    a_star = torch.cumsum(log_coeffs, dim=-1)
    log_h = a_star + torch.logcumsumexp(log_values - a_star, dim=-1)
    return torch.exp(log_h)


@torch.compile
def fftconv(u, k, D):
    seqlen = u.shape[-1]
    fft_size = 2 * seqlen
    k_f = torch.fft.rfft(k, n=fft_size) / fft_size
    u_f = torch.fft.rfft(u.to(dtype=k.dtype), n=fft_size)
    y = torch.fft.irfft(u_f * k_f, n=fft_size, norm="forward")[..., :seqlen]
    return (y + u * D.unsqueeze(-1)).to(dtype=u.dtype)


@torch.compile
def pad_to_chunk(x, chunk: int = 8):
    L = x.shape[1]
    if L % chunk != 0:  # expect: FL301
        x = F.pad(x, (0, 0, 0, chunk - L % chunk))
    return x.view(x.shape[0], -1, chunk, x.shape[-1])


@torch.compile
def state_norm_monitor(states, history: list):
    norms = states.norm(dim=-1).mean(0)
    history.append(norms.max().item())  # expect: FL102 GB0124; FL302
    if len(history) > 100:
        history.pop(0)
    if np.mean(history) > 1e3:  # expect: FL101 GB0170
        logger.warning("state norm exploding: %.1f", norms.max())  # expect: FL111 GB0291; FL000 GB0007
    return norms


@torch.compile
def discretize_bilinear(A, B, dt: float):
    I = torch.eye(A.shape[0])
    BL = torch.linalg.inv(I - dt / 2.0 * A)
    Ab = BL @ (I + dt / 2.0 * A)
    Bb = (BL * dt) @ B
    if torch.linalg.eigvals(Ab).abs().max() >= 1.0:  # expect: FL101 GB0170
        logger.warning("discretized system is unstable (dt=%g)", dt)  # expect: FL111 GB0291
    return Ab, Bb


@torch.compile
def hippo_legs(N: int):
    q = np.arange(N, dtype=np.float64)
    col, row = np.meshgrid(q, q)
    r = 2 * q + 1
    M = -(np.where(row >= col, r, 0) - np.diag(q))
    T = np.sqrt(np.diag(2 * q + 1))
    A = T @ M @ np.linalg.inv(T)
    return torch.as_tensor(A, dtype=torch.float32)


@torch.compile
def rnn_unroll_with_mask(cell_w, x, lengths):
    h = torch.zeros(x.shape[0], cell_w.shape[0])
    for t in range(x.shape[1]):  # expect: FL301
        h_new = torch.tanh(x[:, t] @ cell_w.t() + h)
        mask = (t < lengths).float().unsqueeze(-1)
        h = mask * h_new + (1 - mask) * h
    return h


@torch.compile
def trim_to_max_length(x, lengths):
    max_len = int(lengths.max())  # expect: FL102 GB0124
    return x[:, :max_len]


@torch.compile
def nan_guarded_scan(a, b):
    h = torch.zeros_like(b[:, 0])
    outs = []
    for t in range(a.shape[1]):
        h = a[:, t] * h + b[:, t]
        outs.append(h)
    out = torch.stack(outs, 1)
    if torch.isnan(out).any():  # expect: FL101 GB0170
        raise RuntimeError("NaN in scan output")
    return out


@torch.compile
def greedy_decode(step_fn, emb, first_token, max_new_tokens: int = 4, eos_id: int = 0):
    tokens = [first_token]
    for _ in range(max_new_tokens):
        logits = step_fn(emb[tokens[-1]].view(1, 1, -1)) @ emb.t()
        next_token = logits.argmax(-1).item()  # expect: FL102 GB0124
        tokens.append(next_token)
        if next_token == eos_id:
            break
    return tokens


@torch.compile
def perplexity(logits, targets):
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
    return {"loss": loss, "ppl": math.exp(loss.item())}  # expect: FL102 GB0124


@torch.compile
def packed_scan(x, lengths, decay: float = 0.9):
    outs = []
    for b, length in enumerate(lengths.tolist()):  # expect: FL104 GB0033
        h = torch.zeros(x.shape[-1])
        for t in range(length):
            h = decay * h + x[b, t]
        outs.append(h)
    return torch.stack(outs)


def export_scan():
    return torch.jit.trace(gated_scan_step, (torch.randn(2, 6), torch.randn(2, 6), torch.rand(2, 6)))


def gated_scan_step(h, x, gate):
    g = torch.sigmoid(gate)
    new_h = g * h + (1 - g) * x
    if new_h.abs().max() > 10:  # expect: FL201
        new_h = new_h / new_h.abs().max()
    print("step done")  # expect: FL204
    return new_h


_cfg = MambaConfig()
CASES = {
    "LoRALinear": lambda: (LoRALinear(8, 6).eval(), (torch.randn(3, 8),)),
    "S4DKernel": lambda: (S4DKernel(), (torch.randn(2, 4, 7),)),
    "MambaBlock": lambda: (MambaBlock(), (torch.randn(2, 5, 8),)),
    "MambaBlockDebug": lambda: (MambaBlock(MambaConfig(debug=True)), (torch.randn(2, 5, 8),)),
    "MambaStep": lambda: (MambaStep(), (torch.randn(1, 1, 8),)),
    "StreamingLRU": lambda: (StreamingLRU(), (torch.randn(2, 3, 6),)),
    "chunked_scan": lambda: (chunked_scan, (torch.rand(2, 8, 3) + 0.5, torch.randn(2, 8, 3))),
    "log_space_scan": lambda: (log_space_scan, (torch.randn(3, 7).clamp(max=0), torch.randn(3, 7))),
    "fftconv": lambda: (fftconv, (torch.randn(2, 4, 7), torch.randn(4, 7), torch.randn(4))),
    "pad_to_chunk": lambda: (pad_to_chunk, (torch.randn(2, 16, 3),), (torch.randn(2, 13, 3),)),
    "state_norm_monitor": lambda: (state_norm_monitor, (torch.randn(2, 5, 4) * 1e4, [])),
    "discretize_bilinear": lambda: (discretize_bilinear, (torch.randn(4, 4) * 0.1, torch.randn(4, 2), 0.1)),
    "hippo_legs": lambda: (hippo_legs, (4,)),
    "rnn_unroll_with_mask": lambda: (rnn_unroll_with_mask, (torch.randn(5, 3) * 0.3, torch.randn(2, 4, 3), torch.tensor([2, 4])),
                                     (torch.randn(5, 3) * 0.3, torch.randn(2, 6, 3), torch.tensor([2, 4]))),
    "ResidualSSMBlock": lambda: (ResidualSSMBlock(), (torch.randn(2, 5, 8),)),
    "nan_guarded_scan": lambda: (nan_guarded_scan, (torch.rand(2, 5, 3), torch.randn(2, 5, 3))),
    "greedy_decode": lambda: (greedy_decode, (MambaStep().eval(), torch.randn(6, 8), 3)),
    "perplexity": lambda: (perplexity, (torch.randn(2, 5, 6), torch.randint(0, 6, (2, 5)))),
    "packed_scan": lambda: (packed_scan, (torch.randn(3, 5, 4), torch.tensor([5, 2, 3]))),
    "trim_to_max_length": lambda: (trim_to_max_length, (torch.randn(2, 6, 3), torch.tensor([3, 5]))),
}

TRACED = {
    "gated_scan_step": lambda: (gated_scan_step, (torch.randn(2, 6), torch.randn(2, 6) * 20, torch.rand(2, 6))),
}
