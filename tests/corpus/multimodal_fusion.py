"""Multimodal fusion in the style of open_clip / HF CLIP / OpenFlamingo: HF-style configs, dict batches
with optional modalities, byte/word tokenizers, length masks, CLIP/SigLIP losses, Perceiver, gated xattn."""
import functools
import logging
import math
import random
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("mm_fusion")

MODALITIES = ("image", "text", "audio")
PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
BYTE_OFFSET = 4
MAX_TEXT_LEN = 16
INIT_LOGIT_SCALE = float(np.log(1 / 0.07))
MAX_LOGIT_SCALE = math.log(100.0)
RECALL_KS = (1, 2, 5)

class FusionConfig:
    def __init__(self, embed_dim=8, vision_width=12, text_width=10, audio_width=6, vocab_size=260,
                 num_heads=2, proj_type="linear", patch_size=2, grid_size=(3, 4), **kwargs):
        self.embed_dim, self.vision_width, self.text_width = embed_dim, vision_width, text_width
        self.audio_width, self.vocab_size, self.num_heads = audio_width, vocab_size, num_heads
        self.proj_type, self.patch_size, self.grid_size = proj_type, patch_size, tuple(grid_size)
        for key, value in kwargs.items():
            setattr(self, key, value)

@dataclass
class FusionOutput:
    loss: Optional[torch.Tensor] = None
    logits_per_image: Optional[torch.Tensor] = None
    logits_per_text: Optional[torch.Tensor] = None
    image_embeds: Optional[torch.Tensor] = None
    text_embeds: Optional[torch.Tensor] = None

class ByteTokenizer:
    """Bytes of the utf-8 encoding, shifted past the special ids."""
    def __init__(self, max_len: int = MAX_TEXT_LEN, lowercase: bool = True):
        self.max_len, self.lowercase = max_len, lowercase

    def encode(self, text: str) -> List[int]:
        if self.lowercase:
            text = text.lower()
        body = [b + BYTE_OFFSET for b in text.encode("utf-8")]
        return [BOS_ID] + body[: self.max_len - 2] + [EOS_ID]

    def __call__(self, texts):
        if isinstance(texts, str):
            texts = [texts]
        return pad_token_lists([self.encode(t) for t in texts])

class WordTokenizer(ByteTokenizer):
    def __init__(self, words: Sequence[str], max_len: int = MAX_TEXT_LEN):
        super().__init__(max_len=max_len, lowercase=True)
        self.stoi = {w: i + BYTE_OFFSET for i, w in enumerate(words)}

    def encode(self, text: str) -> List[int]:
        words = text.lower().replace(",", " ").split()
        ids = [self.stoi.get(w, UNK_ID) for w in words]
        return [BOS_ID] + ids[: self.max_len - 2] + [EOS_ID]

def pad_token_lists(encoded: List[List[int]]) -> Dict[str, Any]:
    lengths = [len(e) for e in encoded]
    ids = torch.full((len(encoded), max(lengths)), PAD_ID, dtype=torch.long)
    for i, row in enumerate(encoded):
        ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
    return {"input_ids": ids, "lengths": lengths}

def lengths_to_mask(lengths: Sequence[int], max_len: Optional[int] = None, device=None):
    max_len = max_len or max(lengths)
    return torch.arange(max_len, device=device)[None, :] < torch.as_tensor(lengths, device=device)[:, None]

def tensor_lengths_to_mask(lengths: torch.Tensor) -> torch.Tensor:
    max_len = int(lengths.max())  # expect: FL000 GB0124
    return torch.arange(max_len, device=lengths.device)[None, :] < lengths[:, None]

def extend_attention_mask(mask: torch.Tensor, dtype=torch.float32) -> torch.Tensor:
    ext = mask[:, None, None, :].to(dtype)
    return (1.0 - ext) * torch.finfo(dtype).min

def masked_mean(x: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    if mask is None:
        return x.mean(dim=1)
    mask = mask.to(x.dtype).unsqueeze(-1)
    return (x * mask).sum(dim=1) / mask.sum(dim=1).clamp_min(1.0)

def get_world_size() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1

def gather_features(features: torch.Tensor) -> torch.Tensor:
    if get_world_size() == 1:
        return features
    return torch.cat(torch.distributed.nn.all_gather(features), dim=0)

ACTIVATIONS = {"gelu": nn.GELU, "silu": nn.SiLU, "relu": nn.ReLU}

class LinearProjection(nn.Linear):
    def __init__(self, in_dim, out_dim, **unused):
        super().__init__(in_dim, out_dim, bias=False)

class MLPProjection(nn.Module):
    def __init__(self, in_dim, out_dim, hidden_mult=2, act="gelu", dropout=0.0):
        super().__init__()
        self.fc1, self.act = nn.Linear(in_dim, in_dim * hidden_mult), ACTIVATIONS[act]()
        self.drop, self.fc2 = nn.Dropout(dropout), nn.Linear(in_dim * hidden_mult, out_dim)

    def forward(self, x):
        return self.fc2(self.drop(self.act(self.fc1(x))))

PROJECTIONS = {
    "linear": LinearProjection,
    "mlp": MLPProjection,
    "mlp_silu": functools.partial(MLPProjection, act="silu"),
}

def build_projection(config, in_dim: int) -> nn.Module:
    proj_type = getattr(config, "proj_type", "linear")
    if proj_type not in PROJECTIONS:
        raise ValueError(f"unknown projection {proj_type!r}; choose from {sorted(PROJECTIONS)}")
    return PROJECTIONS[proj_type](in_dim, config.embed_dim, dropout=getattr(config, "proj_dropout", 0.0))

class FeedForward(nn.Sequential):
    def __init__(self, dim, mult=2):
        super().__init__(nn.LayerNorm(dim), nn.Linear(dim, dim * mult, bias=False), nn.GELU(),
                         nn.Linear(dim * mult, dim, bias=False))

class Attention(nn.Module):
    def __init__(self, dim, heads, kv_dim=None):
        super().__init__()
        assert dim % heads == 0, "dim must be divisible by heads"
        self.heads, self.scale = heads, (dim // heads) ** -0.5
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_kv = nn.Linear(kv_dim or dim, 2 * dim, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def _split(self, t):
        b, n, _ = t.shape
        return t.reshape(b, n, self.heads, -1).transpose(1, 2)

    def forward(self, x, context=None, mask=None, causal=False):
        context = x if context is None else context
        q = self._split(self.to_q(x))
        k, v = map(self._split, self.to_kv(context).chunk(2, dim=-1))
        sim = (q * self.scale) @ k.transpose(-1, -2)
        if mask is not None:
            while mask.ndim < 4:
                mask = mask.unsqueeze(1)
            if mask.dtype == torch.bool:
                sim = sim.masked_fill(~mask, -torch.finfo(sim.dtype).max)
            else:
                sim = sim + mask
        if causal:
            i, j = sim.shape[-2:]
            causal_mask = torch.ones(i, j, dtype=torch.bool, device=x.device).triu(j - i + 1)
            sim = sim.masked_fill(causal_mask, -torch.finfo(sim.dtype).max)
        out = sim.softmax(dim=-1) @ v
        return self.to_out(out.transpose(1, 2).flatten(2))

class PatchEmbedVision(nn.Module):
    def __init__(self, config: FusionConfig, in_chans=3):
        super().__init__()
        width, patch = config.vision_width, config.patch_size
        self.grid_size, self.proj = config.grid_size, nn.Conv2d(in_chans, width, patch, patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, width))
        num_pos = self.grid_size[0] * self.grid_size[1] + 1
        self.pos_embed = nn.Parameter(torch.randn(1, num_pos, width) * 0.02)
        self.norm = nn.LayerNorm(width)

    def interpolate_pos_encoding(self, h: int, w: int) -> torch.Tensor:
        if (h, w) == self.grid_size:  # expect: FL301
            return self.pos_embed
        cls_pos, patch_pos = self.pos_embed[:, :1], self.pos_embed[:, 1:]
        gh, gw = self.grid_size
        patch_pos = patch_pos.reshape(1, gh, gw, -1).permute(0, 3, 1, 2)
        patch_pos = F.interpolate(patch_pos, size=(h, w), mode="bicubic", align_corners=False)
        return torch.cat((cls_pos, patch_pos.permute(0, 2, 3, 1).flatten(1, 2)), dim=1)

    def forward(self, pixel_values):
        x = self.proj(pixel_values)
        b, _, h, w = x.shape
        x = x.flatten(2).transpose(1, 2)
        x = torch.cat((self.cls_token.expand(b, -1, -1), x), dim=1)
        return self.norm(x + self.interpolate_pos_encoding(h, w))

class TextEncoder(nn.Module):
    def __init__(self, config: FusionConfig, max_len: int = MAX_TEXT_LEN):
        super().__init__()
        width, self.max_len = config.text_width, max_len
        self.tok = nn.Embedding(config.vocab_size, width, padding_idx=PAD_ID)
        self.pos = nn.Parameter(torch.zeros(max_len, width))
        self.attn = Attention(width, config.num_heads)
        self.ff = FeedForward(width)
        self.ln_final = nn.LayerNorm(width)

    def forward(self, input_ids, attention_mask=None):
        if input_ids.shape[1] > self.max_len:  # expect: FL301
            input_ids = input_ids[:, : self.max_len]
            attention_mask = None if attention_mask is None else attention_mask[:, : self.max_len]
        b, n = input_ids.shape
        x = self.tok(input_ids) + self.pos[:n]
        x = x + self.attn(x, mask=attention_mask)
        x = self.ln_final(x + self.ff(x))
        if attention_mask is None:
            eos = (input_ids == EOS_ID).int().argmax(dim=-1)
        else:
            eos = attention_mask.long().sum(-1) - 1
        return x[torch.arange(b, device=x.device), eos]

def contrastive_loss(logits: torch.Tensor, label_smoothing: float = 0.0) -> torch.Tensor:
    labels = torch.arange(logits.shape[0], device=logits.device)
    return F.cross_entropy(logits, labels, label_smoothing=label_smoothing)

def clip_loss(similarity: torch.Tensor) -> torch.Tensor:
    return (contrastive_loss(similarity) + contrastive_loss(similarity.t())) / 2.0

class DualEncoderModel(nn.Module):
    def __init__(self, config: FusionConfig):
        super().__init__()
        self.config = config
        self.vision = PatchEmbedVision(config)
        self.text = TextEncoder(config)
        self.visual_projection = build_projection(config, config.vision_width)
        self.text_projection = build_projection(config, config.text_width)
        self.logit_scale = nn.Parameter(torch.tensor(getattr(config, "logit_scale_init", INIT_LOGIT_SCALE)))
        bias_init = getattr(config, "logit_bias_init", None)
        self.logit_bias = nn.Parameter(torch.tensor(bias_init)) if bias_init is not None else None

    def forward(self, batch: Dict[str, Any], return_loss: bool = True) -> FusionOutput:
        if self.training and getattr(self.config, "clamp_in_forward", False):
            with torch.no_grad():
                self.logit_scale.clamp_(0, MAX_LOGIT_SCALE)
        pixel_values, input_ids = batch.get("pixel_values"), batch.get("input_ids")
        image_embeds = text_embeds = None
        if pixel_values is not None:
            image_embeds = F.normalize(self.visual_projection(self.vision(pixel_values)[:, 0]), dim=-1)
        if input_ids is not None:
            text_embeds = self.text_projection(self.text(input_ids, batch.get("attention_mask")))
            text_embeds = F.normalize(text_embeds, dim=-1)
        if image_embeds is None or text_embeds is None:
            return FusionOutput(image_embeds=image_embeds, text_embeds=text_embeds)
        logits_per_text = self.logit_scale.exp().clamp(max=100.0) * text_embeds @ image_embeds.t()
        if self.logit_bias is not None:
            logits_per_text = logits_per_text + self.logit_bias
        loss = clip_loss(logits_per_text) if return_loss else None
        return FusionOutput(loss=loss, logits_per_image=logits_per_text.t(), logits_per_text=logits_per_text,
                            image_embeds=image_embeds, text_embeds=text_embeds)

class ClipLoss(nn.Module):
    """open_clip-style loss: labels cached per batch size, features gathered across ranks."""
    def __init__(self, local_loss=False, cache_labels=True):
        super().__init__()
        self.local_loss, self.cache_labels = local_loss, cache_labels
        self.labels: Dict[int, torch.Tensor] = {}

    def get_ground_truth(self, device, num_logits: int) -> torch.Tensor:
        labels = self.labels.get(num_logits)
        if labels is None:
            labels = torch.arange(num_logits, device=device, dtype=torch.long)
            if self.cache_labels:
                self.labels[num_logits] = labels  # expect: FL302
        return labels

    def forward(self, image_features, text_features, logit_scale, output_dict=False):
        all_image, all_text = gather_features(image_features), gather_features(text_features)
        if self.local_loss:
            logits_per_image = logit_scale * image_features @ all_text.T
            logits_per_text = logit_scale * text_features @ all_image.T
        else:
            logits_per_image = logit_scale * all_image @ all_text.T
            logits_per_text = logits_per_image.T
        labels = self.get_ground_truth(image_features.device, logits_per_image.shape[0])
        total = (F.cross_entropy(logits_per_image, labels) + F.cross_entropy(logits_per_text, labels)) / 2
        return {"contrastive_loss": total} if output_dict else total

@torch.compile
def siglip_loss(image_features, text_features, logit_scale, logit_bias=None):
    logits = image_features @ text_features.T * logit_scale.exp()
    if logit_bias is not None:
        logits = logits + logit_bias
    n = logits.shape[0]
    labels = 2 * torch.eye(n, device=logits.device, dtype=logits.dtype) - 1
    return -F.logsigmoid(labels * logits).sum() / n

@torch.compile
def retrieval_metrics(image_features, text_features, logit_scale):
    metrics = {}
    logits_per_image = (logit_scale * image_features @ text_features.t()).detach().cpu()
    logits = {"image_to_text": logits_per_image, "text_to_image": logits_per_image.t()}
    ground_truth = torch.arange(len(text_features)).view(-1, 1)
    for name, logit in logits.items():
        ranking = torch.argsort(logit, descending=True)
        preds = torch.where(ranking == ground_truth)[1]  # expect: FL000 GB0036
        preds = preds.detach().cpu().numpy()
        metrics[f"{name}_mean_rank"] = preds.mean() + 1
        metrics[f"{name}_median_rank"] = np.floor(np.median(preds)) + 1
        for k in RECALL_KS:
            metrics[f"{name}_R@{k}"] = np.mean(preds < k)
    return metrics

class PerceiverResampler(nn.Module):
    def __init__(self, dim, depth=2, num_latents=4, heads=2, max_num_media=3, max_num_frames=5):
        super().__init__()
        self.latents = nn.Parameter(torch.randn(num_latents, dim))
        self.max_num_media = max_num_media
        self.frame_embs = nn.Parameter(torch.randn(max_num_frames, dim)) if max_num_frames else None
        self.media_time_embs = nn.Parameter(torch.randn(max_num_media, 1, dim)) if max_num_media else None
        self.layers = nn.ModuleList(
            nn.ModuleList([nn.LayerNorm(dim), Attention(dim, heads), FeedForward(dim)]) for _ in range(depth))
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        """x: [b, T, F, v, d] -> [b, T, num_latents, d]"""
        b, T, frames = x.shape[:3]
        if self.max_num_media is not None and T > self.max_num_media:  # expect: FL301
            x = x[:, -self.max_num_media:]
            T = self.max_num_media
        if self.frame_embs is not None:
            x = x + self.frame_embs[:frames][None, None, :, None]
        x = x.flatten(2, 3)
        if self.media_time_embs is not None:
            x = x + self.media_time_embs[:T]
        latents = self.latents.expand(b, T, -1, -1)
        for norm, attn, ff in self.layers:
            flat = latents.flatten(0, 1)
            kv = torch.cat((norm(x).flatten(0, 1), flat), dim=1)
            latents = latents + attn(flat, context=kv).view_as(latents)
            latents = latents + ff(latents)
        return self.norm(latents)

class GatedCrossAttentionBlock(nn.Module):
    def __init__(self, dim, dim_visual, heads=2, only_attend_immediate_media=True):
        super().__init__()
        self.only_attend_immediate_media = only_attend_immediate_media
        self.norm = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads, kv_dim=dim_visual)
        self.attn_gate = nn.Parameter(torch.tensor([0.0]))
        self.ff = FeedForward(dim)
        self.ff_gate = nn.Parameter(torch.tensor([0.0]))

    @property
    def gates_closed(self) -> bool:
        return bool((self.attn_gate == 0).all() and (self.ff_gate == 0).all())  # expect: FL000 GB0124; FL000 GB0170

    def media_mask(self, media_locations, num_media: int, n_lat: int):
        """[b, n_text] bool image-token positions -> [b, n_text, num_media * n_lat] allowed."""
        media_time = torch.arange(num_media, device=media_locations.device) + 1
        text_time = media_locations.cumsum(dim=-1)
        mask_op = torch.eq if self.only_attend_immediate_media else torch.ge
        return mask_op(text_time[:, :, None], media_time.repeat_interleave(n_lat)[None, None, :])

    def forward(self, x, media, media_locations=None):
        b, T, n_lat = media.shape[:3]
        mask = None if media_locations is None else self.media_mask(media_locations, T, n_lat)
        attn_out = self.attn(self.norm(x), context=media.flatten(1, 2), mask=mask)
        x = attn_out * self.attn_gate.tanh() + x
        return self.ff(x) * self.ff_gate.tanh() + x

class FlamingoLayer(nn.Module):
    """Decoder layer conditioned on visual tokens set before the language forward."""
    def __init__(self, dim, dim_visual, heads=2, skip_closed_gates=False):
        super().__init__()
        self.gated_cross_attn = GatedCrossAttentionBlock(dim, dim_visual, heads)
        self.self_attn = Attention(dim, heads)
        self.ln, self.ff = nn.LayerNorm(dim), FeedForward(dim)
        self.skip_closed_gates = skip_closed_gates
        self.vis_x = self.media_locations = None
        self._warned_unconditioned = False

    def condition(self, vis_x, media_locations=None):
        self.vis_x, self.media_locations = vis_x, media_locations

    def is_conditioned(self) -> bool:
        return self.vis_x is not None

    def forward(self, lang_x, attention_mask=None):
        if not self.is_conditioned():
            if not self._warned_unconditioned:
                warnings.warn("FlamingoLayer called without visual conditioning")  # expect: FL000 GB0007
                self._warned_unconditioned = True  # expect: FL302
        elif not (self.skip_closed_gates and self.gated_cross_attn.gates_closed):
            lang_x = self.gated_cross_attn(lang_x, self.vis_x, media_locations=self.media_locations)
        lang_x = lang_x + self.self_attn(self.ln(lang_x), mask=attention_mask, causal=True)
        return lang_x + self.ff(lang_x)

def modality_dropout(feats: Dict[str, torch.Tensor], p: float, training: bool) -> Dict[str, torch.Tensor]:
    if not training or p == 0:
        return feats
    present = [m for m in MODALITIES if feats.get(m) is not None]
    if len(present) < 2:
        return feats
    b = feats[present[0]].shape[0]
    keep = torch.rand(b, len(present)) >= p
    none_kept = ~keep.any(dim=1)
    if none_kept.any():  # expect: FL000 GB0170
        keep[none_kept, random.randrange(len(present))] = True
    out = dict(feats)
    for j, m in enumerate(present):
        out[m] = feats[m] * keep[:, j, None].to(feats[m].dtype)
    return out

FUSION_FNS: Dict[str, Callable[[List[torch.Tensor]], torch.Tensor]] = {
    "mean": lambda feats: torch.stack(feats, 0).mean(0),
    "concat": functools.partial(torch.cat, dim=-1),
}

def modality_mask(batch: Dict[str, Any], name: str) -> Optional[torch.Tensor]:
    if f"{name}_mask" in batch:
        return batch[f"{name}_mask"]
    lengths = batch.get(f"{name}_lengths")
    if lengths is None:
        return None
    return lengths_to_mask(lengths) if isinstance(lengths, list) else tensor_lengths_to_mask(lengths)

def get_fusion_fn(name: str):
    try:
        return FUSION_FNS[name]
    except KeyError:
        logger.error("unknown fusion %s, falling back to mean", name)
        return FUSION_FNS["mean"]

class LateFusionClassifier(nn.Module):
    def __init__(self, config: FusionConfig, num_classes: int = 5):
        super().__init__()
        self.widths = {"image": config.vision_width, "text": config.text_width, "audio": config.audio_width}
        self.encoders = nn.ModuleDict({m: build_projection(config, w) for m, w in self.widths.items()})
        self.fusion = getattr(config, "fusion", "mean")
        self.p_drop = getattr(config, "modality_dropout", 0.0)
        in_dim = config.embed_dim * (len(MODALITIES) if self.fusion == "concat" else 1)
        self.head = nn.Linear(in_dim, num_classes)

    def forward(self, batch: Dict[str, Any]) -> Dict[str, torch.Tensor]:
        feats = {}
        for name in MODALITIES:
            x = batch.get(name)
            if x is None:
                logger.debug("modality %s missing from batch", name)  # expect: FL000 GB0291
                continue
            if x.dim() == 3:
                x = masked_mean(x, modality_mask(batch, name))
            feats[name] = self.encoders[name](x)
        feats = modality_dropout(feats, self.p_drop, self.training)
        logits = self.head(get_fusion_fn(self.fusion)(list(feats.values())))
        out = {"logits": logits}
        if batch.get("labels") is not None:
            out["loss"] = F.cross_entropy(logits, batch["labels"])
        return out

DEFAULT_TOKENIZER = ByteTokenizer()

@torch.compile
def encode_captions(captions: List[str], embedding: nn.Embedding, tokenizer=None):
    tokenizer = tokenizer or DEFAULT_TOKENIZER
    batch = tokenizer(captions)
    mask = lengths_to_mask(batch["lengths"])
    return masked_mean(embedding(batch["input_ids"]), mask)

@torch.compile
def combine_losses(losses: Dict[str, torch.Tensor], weights: Dict[str, float],
                   callbacks: Sequence[Callable] = ()):
    total = 0.0
    for name, value in losses.items():
        w = weights.get(name, 1.0)
        if w == 0:
            continue
        total = total + w * value
        for cb in callbacks:
            cb(name, value)
    return total

def make_scalar_logger(store: Dict[str, float]):
    def _log(name, value):
        store[name] = float(value)  # expect: FL000 GB0124
    return _log

def make_tensor_logger(history: List):
    def _log(name, value):
        history.append((name, value.detach()))  # expect: FL302
    return _log

def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))

def _ids(b, n, seed=0, vocab=260):
    ids = torch.randint(BYTE_OFFSET, vocab, (b, n), generator=torch.Generator().manual_seed(seed))
    ids[:, -1] = EOS_ID
    return ids

CFG = FusionConfig()
CAPTIONS = ["A dog, on grass", "two cats", "a red car parked"]
WORDS = ["a", "dog", "on", "grass", "two", "cats", "red", "car"]

def _flamingo(conditioned=True, **kwargs):
    layer = FlamingoLayer(10, 8, **kwargs)
    if conditioned:
        loc = torch.zeros(2, 7, dtype=torch.bool)
        loc[:, [0, 4]] = True
        layer.condition(_randn(2, 3, 4, 8, seed=4), loc)
    return layer

CASES = {
    "Attention": lambda: (Attention(10, 2, kv_dim=12), (_randn(3, 5, 10), _randn(3, 4, 12, seed=1),
                                                         lengths_to_mask([4, 2, 3]))),
    "FeedForward": lambda: (FeedForward(10), (_randn(3, 5, 10),)),
    "LinearProjection": lambda: (build_projection(CFG, 12), (_randn(3, 12),)),
    "MLPProjection": lambda: (build_projection(FusionConfig(proj_type="mlp_silu"), 6), (_randn(3, 6),)),
    "PatchEmbedVision": lambda: (PatchEmbedVision(CFG), (_randn(4, 3, 6, 8),), (_randn(5, 3, 10, 14, seed=1),)),
    "TextEncoder": lambda: (TextEncoder(CFG), (_ids(3, 7), torch.ones(3, 7, dtype=torch.bool)),
                            (_ids(5, 20, seed=1), torch.ones(5, 20, dtype=torch.bool))),
    "DualEncoderModel": lambda: (DualEncoderModel(CFG), ({
        "pixel_values": _randn(4, 3, 6, 8), "input_ids": _ids(4, 7, seed=2),
        "attention_mask": lengths_to_mask([7, 5, 6, 3])},)),
    "DualEncoderModel_image_only": lambda: (DualEncoderModel(FusionConfig(logit_bias_init=-10.0)),
                                            ({"pixel_values": _randn(4, 3, 6, 8)},)),
    "DualEncoderModel_clamp": lambda: (DualEncoderModel(FusionConfig(clamp_in_forward=True)).train(),
                                       ({"pixel_values": _randn(4, 3, 6, 8), "input_ids": _ids(4, 7)},)),
    "ClipLoss": lambda: (ClipLoss(), (_randn(4, 8), _randn(4, 8, seed=1), torch.tensor(14.3))),
    "siglip_loss": lambda: (siglip_loss, (_randn(4, 8), _randn(4, 8, seed=1), torch.tensor(2.3), torch.tensor(-10.0))),
    "retrieval_metrics": lambda: (retrieval_metrics, (F.normalize(_randn(5, 8), dim=-1),
                                                      F.normalize(_randn(5, 8, seed=1), dim=-1), 100.0)),
    "PerceiverResampler": lambda: (PerceiverResampler(8), (_randn(3, 2, 4, 5, 8),), (_randn(6, 4, 3, 7, 8, seed=1),)),
    "GatedCrossAttentionBlock": lambda: (GatedCrossAttentionBlock(10, 8), (
        _randn(2, 7, 10), _randn(2, 3, 4, 8, seed=1), _randn(2, 7, seed=2) > 0.6)),
    "FlamingoLayer": lambda: (_flamingo(), (_randn(2, 7, 10), extend_attention_mask(lengths_to_mask([7, 5])))),
    "FlamingoLayer_skip_closed": lambda: (_flamingo(skip_closed_gates=True), (_randn(2, 7, 10),)),
    "FlamingoLayer_unconditioned": lambda: (_flamingo(conditioned=False), (_randn(2, 7, 10),)),
    "LateFusionClassifier_missing": lambda: (LateFusionClassifier(CFG).eval(), ({
        "image": _randn(3, 12), "text": _randn(3, 5, 10, seed=1), "text_mask": lengths_to_mask([5, 2, 4]),
        "labels": torch.tensor([0, 3, 1])},)),
    "LateFusionClassifier_lengths": lambda: (LateFusionClassifier(CFG).eval(), ({
        "image": _randn(3, 12), "audio": _randn(3, 6, 6, seed=1), "audio_lengths": torch.tensor([6, 2, 4]),
        "text": _randn(3, 10, seed=2)},)),
    "LateFusionClassifier_dropout": lambda: (LateFusionClassifier(FusionConfig(
        proj_type="mlp", fusion="concat", modality_dropout=0.5)).train(), ({
        "image": _randn(4, 12), "text": _randn(4, 10, seed=1), "audio": _randn(4, 6, seed=2)},)),
    "encode_captions_bytes": lambda: (encode_captions, (CAPTIONS, nn.Embedding(260, 6))),
    "encode_captions_words": lambda: (encode_captions, (CAPTIONS, nn.Embedding(12, 6), WordTokenizer(WORDS))),
    "combine_losses_history": lambda: (combine_losses, ({"itc": torch.tensor(1.5), "itm": torch.tensor(0.7),
                                                         "lm": torch.tensor(2.0)}, {"itm": 0.5, "lm": 0.0},
                                                        [make_tensor_logger([])])),
    "combine_losses_scalars": lambda: (combine_losses, ({"itc": torch.tensor(1.5), "itm": torch.tensor(0.7)},
                                                        {"itm": 0.5}, [make_scalar_logger({})])),
}
