"""Neural audio codecs in the style of VQ-VAE, SoundStream / EnCodec and DAC research repos: nearest-code
lookup with a straight-through estimator, EMA codebooks with dead-code restarts, residual VQ with quantizer
dropout, Gumbel-softmax quantizers, SEANet-like conv stacks, multi-scale discriminators with feature-matching
loss, and bit-rate / perplexity accounting helpers used for logging."""
import functools
import logging
import math
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

log = logging.getLogger("vq_codec")
log.addHandler(logging.NullHandler())

SAMPLE_RATE = 16000
DEAD_CODE_THRESHOLD = 0.5
LOG_STATS = True
_EPS = 1e-5


@dataclass
class CodecConfig:
    channels: int = 1
    hidden: int = 6
    latent_dim: int = 8
    strides: Sequence[int] = (2, 3)
    codebook_size: int = 16
    num_quantizers: int = 3
    commitment: float = 0.25
    quantizer_dropout: bool = False

    @property
    def hop_length(self) -> int:
        return int(np.prod(self.strides))  # expect: FL000 GB0033

    @property
    def frame_rate(self) -> float:
        return SAMPLE_RATE / self.hop_length

    def bits_per_frame(self, n_q: Optional[int] = None) -> float:
        n_q = self.num_quantizers if n_q is None else n_q
        return n_q * math.log2(self.codebook_size)


DEFAULT_CFG = CodecConfig()


# --------------------------------------------------------------------------- small helpers

def flatten_to_vectors(z: torch.Tensor) -> Tuple[torch.Tensor, Tuple[int, ...]]:
    """(B, D, T) or (B, D, H, W) -> (N, D) plus the permuted shape to undo it."""
    if z.dim() == 3:
        z = z.transpose(1, 2)
    else:
        z = z.permute(0, 2, 3, 1)
    shape = tuple(z.shape)
    return z.reshape(-1, shape[-1]), shape


def unflatten_vectors(flat, shape):
    z = flat.view(*shape)
    if len(shape) == 3:
        return z.transpose(1, 2).contiguous()
    return z.permute(0, 3, 1, 2).contiguous()


def pairwise_sq_dist(x: torch.Tensor, codebook: torch.Tensor) -> torch.Tensor:
    return (x.pow(2).sum(1, keepdim=True)
            - 2 * x @ codebook.t()
            + codebook.pow(2).sum(1)[None, :])


def nearest_code(x, codebook, cosine=False):
    if cosine:
        sim = F.normalize(x, dim=-1) @ F.normalize(codebook, dim=-1).t()
        return sim.argmax(dim=-1)
    return pairwise_sq_dist(x, codebook).argmin(dim=-1)


def straight_through(z_e, z_q):
    return z_e + (z_q - z_e).detach()


def perplexity(onehot: torch.Tensor) -> torch.Tensor:
    avg = onehot.float().mean(0)
    return torch.exp(-(avg * torch.log(avg + 1e-10)).sum())


def code_histogram(indices: torch.Tensor, k: int) -> torch.Tensor:
    return torch.bincount(indices.flatten(), minlength=k).float()  # expect: FL000 GB0036


def sample_vectors(samples: torch.Tensor, num: int, generator=None) -> torch.Tensor:
    n = samples.shape[0]
    idx = torch.randperm(n, generator=generator)[:num]
    return samples[idx]


def _record(stats: Optional[dict], **kw):
    if stats is None or not LOG_STATS:
        return
    for k, v in kw.items():
        stats[k] = v.item() if torch.is_tensor(v) else v  # expect: FL000 GB0124
        log.debug("%s=%.4f", k, stats[k])


# --------------------------------------------------------------------------- quantizers

class VectorQuantizer(nn.Module):
    """Plain VQ-VAE bottleneck (van den Oord et al.) with commitment loss."""

    def __init__(self, num_codes=16, dim=8, beta=0.25, cosine=False, use_kmeans=False):
        super().__init__()
        self.num_codes, self.dim, self.beta, self.cosine = num_codes, dim, beta, cosine
        self.use_kmeans = use_kmeans
        self.register_buffer("initted", torch.tensor(not use_kmeans))
        g = torch.Generator().manual_seed(0)
        self.embedding = nn.Embedding(num_codes, dim)
        with torch.no_grad():
            self.embedding.weight.uniform_(-1.0 / num_codes, 1.0 / num_codes, generator=g)

    @property
    def codebook(self):
        return self.embedding.weight

    @torch.no_grad()
    def _maybe_init(self, flat):
        if not self.use_kmeans or self.initted:  # expect: FL000 GB0170
            return
        self.embedding.weight.copy_(kmeans_init(flat, self.num_codes))  # expect: FL000 GB0007
        self.initted.fill_(True)

    def lookup(self, indices):
        return F.embedding(indices, self.codebook)

    def quantize(self, flat):
        idx = nearest_code(flat, self.codebook, self.cosine)
        return self.lookup(idx), idx

    def losses(self, z_e, z_q):
        codebook_loss = F.mse_loss(z_q, z_e.detach())
        commit_loss = F.mse_loss(z_e, z_q.detach())
        return codebook_loss + self.beta * commit_loss

    def forward(self, z):
        flat, shape = flatten_to_vectors(z)
        self._maybe_init(flat)
        z_q, idx = self.quantize(flat)
        loss = self.losses(flat, z_q)
        z_q = straight_through(flat, z_q)
        onehot = F.one_hot(idx, self.num_codes)
        return unflatten_vectors(z_q, shape), loss, perplexity(onehot)


class EMAVectorQuantizer(VectorQuantizer):
    """Codebook learned by exponential moving averages (no codebook gradient), with restarts."""

    def __init__(self, num_codes=16, dim=8, decay=0.9, beta=0.25, restart=True):
        super().__init__(num_codes, dim, beta)
        self.decay, self.restart = decay, restart
        self.embedding.weight.requires_grad_(False)
        self.register_buffer("cluster_size", torch.ones(num_codes))
        self.register_buffer("embed_avg", self.embedding.weight.detach().clone())

    @torch.no_grad()
    def ema_update(self, flat, onehot):
        onehot = onehot.type(flat.dtype)
        self.cluster_size.mul_(self.decay).add_(onehot.sum(0), alpha=1 - self.decay)
        self.embed_avg.mul_(self.decay).add_(onehot.t() @ flat, alpha=1 - self.decay)
        n = self.cluster_size.sum()
        smoothed = (self.cluster_size + _EPS) / (n + self.num_codes * _EPS) * n
        self.embedding.weight.copy_(self.embed_avg / smoothed.unsqueeze(1))

    @torch.no_grad()
    def restart_dead_codes(self, flat):
        dead = self.cluster_size < DEAD_CODE_THRESHOLD
        if not dead.any():  # expect: FL000 GB0170
            return 0
        n_dead = int(dead.sum())  # expect: FL000 GB0124
        new = sample_vectors(flat, n_dead)
        self.embedding.weight[dead] = new
        self.embed_avg[dead] = new
        self.cluster_size[dead] = 1.0
        return n_dead

    def forward(self, z):
        flat, shape = flatten_to_vectors(z)
        z_q, idx = self.quantize(flat)
        onehot = F.one_hot(idx, self.num_codes)
        if self.training:
            self.ema_update(flat, onehot)
            if self.restart:
                self.restart_dead_codes(flat)
        loss = self.losses(flat, z_q)
        z_q = straight_through(flat, z_q)
        return unflatten_vectors(z_q, shape), loss, perplexity(onehot)


class ResidualVQ(nn.Module):
    """SoundStream residual VQ; optionally trains with a random number of quantizers."""

    def __init__(self, cfg: CodecConfig = DEFAULT_CFG, quantizer_cls=VectorQuantizer):
        super().__init__()
        self.cfg = cfg
        make = functools.partial(quantizer_cls, cfg.codebook_size, cfg.latent_dim, beta=cfg.commitment)
        self.layers = nn.ModuleList([make() for _ in range(cfg.num_quantizers)])

    def _num_active(self, n_q: Optional[int]) -> int:
        if n_q is not None:
            return min(n_q, len(self.layers))
        if self.training and self.cfg.quantizer_dropout:
            return int(torch.randint(1, len(self.layers) + 1, (1,)))  # expect: FL000 GB0124
        return len(self.layers)

    def forward(self, z, n_q: Optional[int] = None):
        residual, out = z, torch.zeros_like(z)
        losses, ppls = [], []
        for layer in self.layers[: self._num_active(n_q)]:
            z_q, loss, ppl = layer(residual)
            residual = residual - z_q.detach()
            out = out + z_q
            losses.append(loss)
            ppls.append(ppl)
        return out, torch.stack(losses).sum(), torch.stack(ppls)


class GumbelQuantizer(nn.Module):
    """Gumbel-softmax codebook (DALL-E dVAE) with a temperature annealed per call."""

    def __init__(self, dim=8, num_codes=16, tau_start=1.0, tau_min=0.5, anneal_rate=1e-3):
        super().__init__()
        self.proj = nn.Conv1d(dim, num_codes, 1)
        self.embed = nn.Embedding(num_codes, dim)
        self.tau_start, self.tau_min, self.anneal_rate = tau_start, tau_min, anneal_rate
        self.step = 0

    @property
    def temperature(self):
        return max(self.tau_min, self.tau_start * math.exp(-self.anneal_rate * self.step))

    def forward(self, z):
        logits = self.proj(z)
        tau = self.temperature
        self.step += 1  # expect: FL302
        soft = F.softmax(logits / tau, dim=1)
        hard = F.one_hot(soft.argmax(1), soft.shape[1]).transpose(1, 2).type_as(soft)
        onehot = hard - soft.detach() + soft
        z_q = torch.einsum("bnt,nd->bdt", onehot, self.embed.weight)
        kl = (soft * torch.log(soft * soft.shape[1] + 1e-10)).sum(1).mean()
        return z_q, kl


# --------------------------------------------------------------------------- conv stacks

def _act(name: str) -> nn.Module:
    return {"elu": nn.ELU, "gelu": nn.GELU, "lrelu": functools.partial(nn.LeakyReLU, 0.2)}[name]()


class ResidualUnit(nn.Module):
    def __init__(self, ch, dilation=1, act="elu"):
        super().__init__()
        self.block = nn.Sequential(_act(act), nn.Conv1d(ch, ch, 3, dilation=dilation, padding=dilation),
                                   _act(act), nn.Conv1d(ch, ch, 1))

    def forward(self, x):
        return x + self.block(x)


class SEANetEncoder(nn.Module):
    def __init__(self, cfg: CodecConfig = DEFAULT_CFG):
        super().__init__()
        layers: List[nn.Module] = [nn.Conv1d(cfg.channels, cfg.hidden, 3, padding=1)]
        ch = cfg.hidden
        for s in cfg.strides:
            layers += [ResidualUnit(ch, 1), ResidualUnit(ch, 2),
                       nn.ELU(), nn.Conv1d(ch, ch * 2, 2 * s, stride=s, padding=math.ceil(s / 2))]
            ch *= 2
        layers += [nn.ELU(), nn.Conv1d(ch, cfg.latent_dim, 3, padding=1)]
        self.model = nn.Sequential(*layers)
        self.hop = cfg.hop_length

    def forward(self, wav):
        length = wav.shape[-1]
        if length % self.hop:  # expect: FL301
            wav = F.pad(wav, (0, self.hop - length % self.hop), mode="reflect")
        return self.model(wav)


def match_length(y, length: int):
    diff = y.shape[-1] - length
    if diff < 0:
        log.warning("decoder output is %d samples short, zero-padding", -diff)  # expect: FL000 GB0291
        return F.pad(y, (0, -diff))
    return y[..., :length]


class SEANetDecoder(nn.Module):
    def __init__(self, cfg: CodecConfig = DEFAULT_CFG):
        super().__init__()
        ch = cfg.hidden * 2 ** len(cfg.strides)
        layers: List[nn.Module] = [nn.Conv1d(cfg.latent_dim, ch, 3, padding=1)]
        for s in reversed(cfg.strides):
            layers += [nn.ELU(), nn.ConvTranspose1d(ch, ch // 2, 2 * s, stride=s, padding=s // 2),
                       ResidualUnit(ch // 2, 1)]
            ch //= 2
        layers += [nn.ELU(), nn.Conv1d(ch, cfg.channels, 3, padding=1), nn.Tanh()]
        self.model = nn.Sequential(*layers)

    def forward(self, z, length: Optional[int] = None):
        y = self.model(z)
        return y if length is None else match_length(y, length)


# --------------------------------------------------------------------------- discriminators

class ScaleDiscriminator(nn.Module):
    def __init__(self, ch=4, n_layers=3, use_spectral_norm=False):
        super().__init__()
        norm = nn.utils.spectral_norm if use_spectral_norm else nn.utils.parametrizations.weight_norm
        convs, c_in = [], 1
        for i in range(n_layers):
            c_out = ch * 2 ** i
            convs.append(norm(nn.Conv1d(c_in, c_out, 5, stride=2, padding=2)))
            c_in = c_out
        self.convs = nn.ModuleList(convs)
        self.post = nn.Conv1d(c_in, 1, 3, padding=1)

    def forward(self, x):
        feats = []
        for conv in self.convs:
            x = F.leaky_relu(conv(x), 0.2)
            feats.append(x)
        return self.post(x), feats


class MultiScaleDiscriminator(nn.Module):
    def __init__(self, n_scales=2):
        super().__init__()
        self.discs = nn.ModuleList([ScaleDiscriminator(use_spectral_norm=i == 0) for i in range(n_scales)])
        self.pool = nn.AvgPool1d(4, 2, padding=2)

    def forward(self, x):
        logits, feats = [], []
        for i, d in enumerate(self.discs):
            if i > 0:
                x = self.pool(x)
            out, f = d(x)
            logits.append(out)
            feats.append(f)
        return logits, feats


def hinge_d_loss(real, fake):
    return F.relu(1 - real).mean() + F.relu(1 + fake).mean()


def lsgan_d_loss(real, fake):
    return ((real - 1) ** 2).mean() + (fake ** 2).mean()


DISC_LOSSES: Dict[str, Callable] = {"hinge": hinge_d_loss, "lsgan": lsgan_d_loss}


def feature_matching_loss(feats_real, feats_fake):
    loss = 0.0
    for fr_scale, ff_scale in zip(feats_real, feats_fake):
        for fr, ff in zip(fr_scale, ff_scale):
            loss = loss + F.l1_loss(ff, fr.detach()) / fr.detach().abs().mean().clamp_min(1e-3)
    return loss / len(feats_real)


def r1_penalty(logits, inputs):
    grad, = torch.autograd.grad(sum(l.sum() for l in logits), inputs, create_graph=True)  # expect: FL000 GB9186
    return grad.pow(2).flatten(1).sum(1).mean()


@torch.compile
def discriminator_step(disc, real, fake, loss_type="hinge", r1_gamma=0.0):
    if r1_gamma > 0:
        real = real.detach().requires_grad_(True)  # expect: FL000 GB8985
    real_logits, _ = disc(real)
    fake_logits, _ = disc(fake.detach())
    fn = DISC_LOSSES.get(loss_type, hinge_d_loss)
    loss = sum(fn(r, f) for r, f in zip(real_logits, fake_logits)) / len(real_logits)
    if r1_gamma > 0:
        loss = loss + 0.5 * r1_gamma * r1_penalty(real_logits, real)
    return loss


@torch.compile
def generator_adv_step(disc, real, fake, fm_weight=2.0):
    _, feats_real = disc(real)
    fake_logits, feats_fake = disc(fake)
    adv = sum(F.relu(1 - l).mean() for l in fake_logits) / len(fake_logits)
    return adv + fm_weight * feature_matching_loss(feats_real, feats_fake)


# --------------------------------------------------------------------------- codec + accounting

class AudioCodec(nn.Module):
    def __init__(self, cfg: CodecConfig = DEFAULT_CFG):
        super().__init__()
        self.cfg = cfg
        self.encoder = SEANetEncoder(cfg)
        self.quantizer = ResidualVQ(cfg)
        self.decoder = SEANetDecoder(cfg)
        self.stats: Dict[str, float] = {}

    def forward(self, wav, n_q: Optional[int] = None):
        z = self.encoder(wav)
        z_q, vq_loss, ppl = self.quantizer(z, n_q)
        recon = self.decoder(z_q, wav.shape[-1])
        kbps = self.cfg.frame_rate * self.cfg.bits_per_frame(n_q) / 1000.0
        _record(self.stats, vq_loss=vq_loss, ppl_first=ppl[0], kbps=kbps)
        return recon, vq_loss


@torch.compile
def codebook_usage_report(indices: torch.Tensor, codebook_size: int) -> dict:
    hist = code_histogram(indices, codebook_size)
    p = hist / hist.sum()
    report = {"perplexity": torch.exp(-(p * torch.log(p + 1e-10)).sum()), "max_share": p.max()}
    report["bits_per_code"] = -(p * torch.log2(p.clamp_min(1e-12))).sum()
    report["utilization"] = float(np.count_nonzero(hist.numpy())) / codebook_size  # expect: FL000 GB0033
    return report


@torch.compile
def kmeans_init(samples: torch.Tensor, k: int, iters: int = 4, tol: float = 1e-4):
    g = torch.Generator().manual_seed(0)  # expect: FL000 GB0363; FL000 GB7650
    centroids = samples[torch.randperm(samples.shape[0], generator=g)[:k]].clone()  # expect: FL000 GB0055
    for _ in range(iters):
        assign = pairwise_sq_dist(samples, centroids).argmin(-1)
        onehot = F.one_hot(assign, k).type_as(samples)
        counts = onehot.sum(0, keepdim=True).t()
        new = (onehot.t() @ samples) / counts.clamp_min(1)
        new = torch.where(counts > 0, new, centroids)
        shift = (new - centroids).norm(dim=-1).max()
        centroids = new
        if shift < tol:  # expect: FL000 GB0170
            break
    return centroids


@torch.compile
def encode_in_chunks(encoder, wav, chunk=48):
    """Streaming-style encode: fixed-size windows, the last one zero-padded."""
    length = wav.shape[-1]
    n_chunks = math.ceil(length / chunk)
    wav = F.pad(wav, (0, n_chunks * chunk - length))
    frames = [encoder(wav[..., i * chunk:(i + 1) * chunk]) for i in range(n_chunks)]  # expect: FL301
    return torch.cat(frames, dim=-1)


def stft_loss(x, y, n_fft=16):
    win = torch.hann_window(n_fft, device=x.device)
    X, Y = (torch.stft(t.flatten(0, 1), n_fft, n_fft // 4, window=win, return_complex=True).abs()
            for t in (x, y))
    return F.l1_loss(torch.log(X.clamp_min(_EPS)), torch.log(Y.clamp_min(_EPS)))


def _weighted(terms: Dict[str, torch.Tensor], weights: Dict[str, float]):
    total = 0.0
    for name, value in terms.items():
        w = weights.get(name, 1.0)
        if w == 0:
            continue
        total = total + w * value
    return total


@torch.compile
def codec_loss(recon, wav, vq_loss, weights=None):
    weights = weights or {"l1": 1.0, "stft": 0.5, "vq": 1.0}
    terms = {"l1": F.l1_loss(recon, wav),
             "stft": stft_loss(recon, wav),
             "vq": vq_loss}
    return _weighted(terms, weights), {k: float(v) for k, v in terms.items()}  # expect: FL000 GB0092; FL000 GB0124


def _check_codes(indices, codebook_size):
    assert indices.dtype == torch.int64, "codes must be int64"
    if indices.max() >= codebook_size:  # expect: FL000 GB0170
        raise ValueError(f"code out of range for codebook of {codebook_size}")


@torch.compile
def decode_codes(rvq: ResidualVQ, codes: torch.Tensor):
    _check_codes(codes, rvq.cfg.codebook_size)
    out = 0
    for q, layer in enumerate(rvq.layers[: codes.shape[0]]):  # expect: FL301
        out = out + layer.lookup(codes[q]).transpose(1, 2)
    return out


# --------------------------------------------------------------------------- cases

def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _codes(*shape, k=16, seed=0):
    return torch.randint(0, k, shape, generator=torch.Generator().manual_seed(seed))


def _ema_vq():
    vq = EMAVectorQuantizer(16, 8)
    vq.cluster_size[3:9] = 0.1
    return vq


CASES = {
    "VectorQuantizer": lambda: (VectorQuantizer(), (_randn(2, 8, 5),)),
    "VectorQuantizer_image": lambda: (VectorQuantizer(cosine=True), (_randn(2, 8, 3, 5),)),
    "VectorQuantizer_kmeans": lambda: (VectorQuantizer(6, use_kmeans=True), (_randn(2, 8, 7),)),
    "EMAVectorQuantizer": lambda: (_ema_vq(), (_randn(2, 8, 7),)),
    "EMAVectorQuantizer_eval": lambda: (_ema_vq().eval(), (_randn(2, 8, 7),)),
    "ResidualVQ": lambda: (ResidualVQ(), (_randn(2, 8, 5),)),
    "ResidualVQ_dropout": lambda: (ResidualVQ(CodecConfig(quantizer_dropout=True)), (_randn(2, 8, 5),)),
    "GumbelQuantizer": lambda: (GumbelQuantizer(), (_randn(2, 8, 5),)),
    "ResidualUnit": lambda: (ResidualUnit(6, 2), (_randn(2, 6, 7),)),
    "SEANetEncoder": lambda: (SEANetEncoder(), (_randn(2, 1, 36),), (_randn(2, 1, 41),)),
    "SEANetDecoder": lambda: (SEANetDecoder(), (_randn(2, 8, 5), 29)),
    "SEANetDecoder_short": lambda: (SEANetDecoder(), (_randn(2, 8, 5), 33)),
    "ScaleDiscriminator": lambda: (ScaleDiscriminator(), (_randn(2, 1, 30),)),
    "MultiScaleDiscriminator": lambda: (MultiScaleDiscriminator(), (_randn(2, 1, 30),)),
    "discriminator_step": lambda: (discriminator_step, (MultiScaleDiscriminator(), _randn(2, 1, 30),
                                                        _randn(2, 1, 30, seed=1), "lsgan", 1.0)),
    "generator_adv_step": lambda: (generator_adv_step, (MultiScaleDiscriminator(), _randn(2, 1, 30),
                                                        _randn(2, 1, 30, seed=1))),
    "AudioCodec": lambda: (AudioCodec(), (_randn(2, 1, 36),)),
    "codebook_usage_report": lambda: (codebook_usage_report, (_codes(3, 7), 16)),
    "kmeans_init": lambda: (kmeans_init, (_randn(20, 3), 4)),
    "encode_in_chunks": lambda: (encode_in_chunks, (SEANetEncoder(), _randn(2, 1, 60)),
                                 (SEANetEncoder(), _randn(2, 1, 108))),
    "codec_loss": lambda: (codec_loss, (_randn(2, 1, 40), _randn(2, 1, 40, seed=1), torch.tensor(0.3))),
    "decode_codes": lambda: (decode_codes, (ResidualVQ(), _codes(2, 3, 5)), (ResidualVQ(), _codes(3, 4, 6))),
}
