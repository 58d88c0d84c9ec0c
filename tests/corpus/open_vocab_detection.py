"""Open-vocabulary detection (OWL-ViT / GLIP / Grounding-DINO style): every image patch is a box
proposal scored against free-text prompts; thresholds, class-aware NMS and API formatting follow."""
import functools
import logging
import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("ovd.serving")
logger.addHandler(logging.NullHandler())

PAD_ID, BOS_ID, EOS_ID, DOT_ID = 0, 1, 2, 3
VOCAB_SIZE = 512
MAX_PROMPT_LEN = 12
PROMPT_TEMPLATES = ("a photo of a {}.", "a {} in the scene.", "there is a {} here.")
DEFAULT_SCORE_THRESHOLD = 0.1
API_VERSION = "v2"
LATENCY_MS: Dict[str, List[float]] = {}  # stage -> request latencies, scraped by the metrics exporter


@dataclass
class OVDConfig:
    image_size: int = 32
    patch_size: int = 8
    vision_width: int = 32
    text_width: int = 24
    embed_dim: int = 16
    depth: int = 2
    heads: int = 4
    max_prompt_len: int = MAX_PROMPT_LEN
    nms_iou: float = 0.5
    max_detections: int = 10
    min_query_iou: float = 0.4
    class_thresholds: Dict[str, float] = field(default_factory=lambda: {"person": 0.2, "dog": 0.15})


class ToyTokenizer:
    """Whitespace tokenizer with a hashed vocabulary: deterministic, no files, fine for tests."""

    def __init__(self, vocab_size: int = VOCAB_SIZE, max_len: int = MAX_PROMPT_LEN):
        self.vocab_size = vocab_size
        self.max_len = max_len

    def word_id(self, word: str) -> int:
        if word == ".":
            return DOT_ID
        h = 0
        for ch in word:
            h = (h * 131 + ord(ch)) % (self.vocab_size - 4)
        return h + 4

    def encode(self, text: str) -> List[int]:
        words = text.lower().replace(".", " . ").split()
        ids = [BOS_ID] + [self.word_id(w) for w in words][: self.max_len - 2] + [EOS_ID]
        return ids + [PAD_ID] * (self.max_len - len(ids))

    def __call__(self, prompts: Sequence[str]) -> torch.Tensor:
        return torch.tensor([self.encode(p) for p in prompts], dtype=torch.long)


def box_iou(a, b):
    area_a = (a[:, 2:] - a[:, :2]).clamp(min=0).prod(-1)
    area_b = (b[:, 2:] - b[:, :2]).clamp(min=0).prod(-1)
    inter = (torch.min(a[:, None, 2:], b[None, :, 2:]) - torch.max(a[:, None, :2], b[None, :, :2])).clamp(min=0)
    inter = inter.prod(-1)
    return inter / (area_a[:, None] + area_b[None, :] - inter + 1e-6)


def center_to_corners(boxes):
    cx, cy, w, h = boxes.unbind(-1)
    return torch.stack([cx - 0.5 * w, cy - 0.5 * h, cx + 0.5 * w, cy + 0.5 * h], dim=-1)


# ----------------------------------------------------------------------------- encoders

class Block(nn.Module):
    """Pre-norm transformer block shared by the image and the text tower."""

    def __init__(self, width: int, heads: int, mlp_ratio: float = 2.0):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        hidden = int(width * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(width, hidden), nn.GELU(), nn.Linear(hidden, width))

    def forward(self, x, attn_mask: Optional[torch.Tensor] = None):
        b, n, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        h = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        x = x + self.out(h.transpose(1, 2).reshape(b, n, c))
        return x + self.mlp(self.ln2(x))


class PatchEmbed(nn.Module):
    def __init__(self, patch_size: int, in_chans: int, width: int):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, width, patch_size, stride=patch_size, bias=False)

    def forward(self, images):
        x = self.proj(images)
        _, _, gh, gw = x.shape
        return x.flatten(2).transpose(1, 2), (gh, gw)


class VisionEncoder(nn.Module):
    def __init__(self, cfg: OVDConfig):
        super().__init__()
        self.base_grid = cfg.image_size // cfg.patch_size
        self.patch = PatchEmbed(cfg.patch_size, 3, cfg.vision_width)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, cfg.vision_width))
        self.pos_embed = nn.Parameter(torch.randn(1, self.base_grid ** 2, cfg.vision_width) * 0.02)
        self.blocks = nn.ModuleList(Block(cfg.vision_width, cfg.heads) for _ in range(cfg.depth))
        self.ln_post = nn.LayerNorm(cfg.vision_width)

    def _pos_for(self, gh: int, gw: int):
        if gh == self.base_grid and gw == self.base_grid:  # expect: FL301
            return self.pos_embed
        # larger inference resolution than pre-training: resample the position table
        g = self.base_grid
        pos = self.pos_embed.reshape(1, g, g, -1).permute(0, 3, 1, 2)
        pos = F.interpolate(pos, size=(gh, gw), mode="bicubic", align_corners=False)
        return pos.permute(0, 2, 3, 1).reshape(1, gh * gw, -1)

    def forward(self, images):
        tokens, (gh, gw) = self.patch(images)
        tokens = tokens + self._pos_for(gh, gw)
        x = torch.cat([self.cls_token.expand(tokens.shape[0], -1, -1), tokens], dim=1)
        for blk in self.blocks:
            x = blk(x)
        x = self.ln_post(x)
        # OWL-ViT merges the class token into every patch token instead of pooling
        return x[:, 1:] * x[:, :1], (gh, gw)


class TextEncoder(nn.Module):
    def __init__(self, cfg: OVDConfig):
        super().__init__()
        self.tok_embed = nn.Embedding(VOCAB_SIZE, cfg.text_width, padding_idx=PAD_ID)
        self.pos_embed = nn.Parameter(torch.randn(cfg.max_prompt_len, cfg.text_width) * 0.02)
        self.blocks = nn.ModuleList(Block(cfg.text_width, cfg.heads) for _ in range(cfg.depth))
        self.ln_final = nn.LayerNorm(cfg.text_width)
        self.proj = nn.Linear(cfg.text_width, cfg.embed_dim, bias=False)

    def encode_tokens(self, token_ids):
        length = token_ids.shape[1]
        x = self.tok_embed(token_ids) + self.pos_embed[:length]
        causal = torch.ones(length, length, dtype=torch.bool, device=x.device).tril()
        for blk in self.blocks:
            x = blk(x, attn_mask=causal)
        return self.ln_final(x)

    def forward(self, token_ids):
        assert (token_ids == EOS_ID).any(dim=1).all(), "every prompt needs an EOS token"
        x = self.encode_tokens(token_ids)
        eos_pos = (token_ids == EOS_ID).int().argmax(dim=-1)
        pooled = x[torch.arange(token_ids.shape[0], device=x.device), eos_pos]
        return F.normalize(self.proj(pooled), dim=-1)


class PromptBank(nn.Module):
    """Class-name -> prompt-ensembled text embedding. Serving traffic repeats vocabularies a lot,
    so finished embeddings are kept per tuple of class names."""

    def __init__(self, text_encoder: TextEncoder, tokenizer: ToyTokenizer, templates=PROMPT_TEMPLATES):
        super().__init__()
        self.text = text_encoder
        self.tokenizer = tokenizer
        self.templates = tuple(templates)
        self._bank: Dict[Tuple[str, ...], torch.Tensor] = {}

    def forward(self, class_names: List[str]):
        key = tuple(class_names)
        if key in self._bank:
            return self._bank[key]
        prompts = [t.format(name) for name in class_names for t in self.templates]
        ids = self.tokenizer(prompts)
        n_truncated = int((ids[:, -1] != PAD_ID).sum())  # expect: FL000 GB0124
        if n_truncated:
            logger.warning("%d of %d prompts hit max_len and were truncated", n_truncated, len(prompts))  # expect: FL000 GB0291
        emb = self.text(ids).view(len(class_names), len(self.templates), -1).mean(dim=1)
        emb = F.normalize(emb, dim=-1)
        self._bank[key] = emb.detach()  # expect: FL302
        return emb


# ----------------------------------------------------------------------------- heads

@functools.lru_cache(maxsize=4)
def compute_box_bias(gh: int, gw: int) -> torch.Tensor:
    """Prior that places each patch's box at the patch centre with patch size (logit space)."""
    ys = (torch.arange(gh, dtype=torch.float32) + 0.5) / gh
    xs = (torch.arange(gw, dtype=torch.float32) + 0.5) / gw
    yy, xx = torch.meshgrid(ys, xs, indexing="ij")
    ctr = torch.stack([xx, yy], dim=-1).reshape(-1, 2)
    ctr_bias = torch.log(ctr + 1e-4) - torch.log1p(-ctr + 1e-4)
    size = torch.tensor([1.0 / gw, 1.0 / gh]).expand_as(ctr)
    size_bias = torch.log(size + 1e-4) - torch.log1p(-size + 1e-4)
    return torch.cat([ctr_bias, size_bias], dim=-1)


class BoxHead(nn.Module):
    def __init__(self, width: int, use_bias: bool = True):
        super().__init__()
        self.use_bias = use_bias
        self.mlp = nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Linear(width, width), nn.GELU(),
                                 nn.Linear(width, 4))

    def forward(self, patch_feats, grid: Tuple[int, int]):
        deltas = self.mlp(patch_feats)
        if self.use_bias:
            deltas = deltas + compute_box_bias(*grid).to(deltas)
        if not torch.isfinite(deltas).all():  # expect: FL000 GB0170
            logger.warning("non-finite box regression outputs; zeroing them")
            deltas = torch.nan_to_num(deltas, nan=0.0, posinf=0.0, neginf=0.0)
        return deltas.sigmoid()  # (cx, cy, w, h), normalised to the image


class ClassHead(nn.Module):
    """Region-text similarity with a learned per-patch shift and scale (OWL-ViT)."""

    def __init__(self, width: int, embed_dim: int):
        super().__init__()
        self.dense = nn.Linear(width, embed_dim)
        self.logit_shift = nn.Linear(width, 1)
        self.logit_scale = nn.Linear(width, 1)
        self.elu = nn.ELU()

    def forward(self, patch_feats, query_embeds, query_mask=None):
        img = F.normalize(self.dense(patch_feats), dim=-1)
        q = F.normalize(query_embeds, dim=-1)
        if q.dim() == 2:  # one shared vocabulary for the whole batch
            q = q.unsqueeze(0).expand(img.shape[0], -1, -1)
        logits = torch.einsum("bpd,bqd->bpq", img, q)
        logits = (logits + self.logit_shift(patch_feats)) * (self.elu(self.logit_scale(patch_feats)) + 1)
        if query_mask is not None:
            logits = torch.where(query_mask[:, None, :], logits, torch.finfo(logits.dtype).min)
        return logits


class OwlDetector(nn.Module):
    def __init__(self, cfg: OVDConfig):
        super().__init__()
        self.cfg = cfg
        self.vision = VisionEncoder(cfg)
        self.class_head = ClassHead(cfg.vision_width, cfg.embed_dim)
        self.box_head = BoxHead(cfg.vision_width)

    def forward(self, images, query_embeds, query_mask=None):
        if images.max() > 1.5:  # clients sometimes send 0..255 pixels  # expect: FL000 GB0170
            images = images / 255.0
        feats, grid = self.vision(images)
        return {
            "logits": self.class_head(feats, query_embeds, query_mask),
            "pred_boxes": self.box_head(feats, grid),
            "class_embeds": F.normalize(self.class_head.dense(feats), dim=-1),
        }


@torch.compile
def phrase_scores(token_logits, spans: List[Tuple[int, int]]):
    """Phrase probability = best token of the phrase (GLIP's max over a phrase's positive map)."""
    probs = token_logits.sigmoid()
    return torch.stack([probs[..., s:e].amax(dim=-1) for s, e in spans], dim=-1)


class GroundingHead(nn.Module):
    """One round of image->text fusion, then token-level alignment logits (GLIP / Grounding DINO lite)."""

    def __init__(self, vision_width: int, text_width: int, dim: int = 16):
        super().__init__()
        self.v_proj = nn.Linear(vision_width, dim)
        self.t_proj = nn.Linear(text_width, dim)
        self.gate = nn.Parameter(torch.tensor(0.1))
        self.bias = nn.Parameter(torch.tensor(-2.0))
        self.scale = math.sqrt(dim)

    def forward(self, patch_feats, token_feats, caption_ids):
        token_mask = caption_ids != PAD_ID
        spans = phrase_spans(caption_ids[0].tolist())  # expect: FL000 GB0033
        v = self.v_proj(patch_feats)
        t = self.t_proj(token_feats)
        attn = (v @ t.transpose(-1, -2)) / self.scale
        attn = attn.masked_fill(~token_mask[:, None, :], -1e4)
        v = v + self.gate.tanh() * (attn.softmax(-1) @ t)
        token_logits = 10.0 * F.normalize(v, dim=-1) @ F.normalize(t, dim=-1).transpose(-1, -2) + self.bias
        token_logits = token_logits.masked_fill(~token_mask[:, None, :], -1e4)
        return phrase_scores(token_logits, spans)


def phrase_spans(token_ids: List[int]) -> List[Tuple[int, int]]:
    """Grounding-DINO captions are 'cat . dog . person .': one span per phrase, between the dots."""
    spans, start = [], 1
    for i, tok in enumerate(token_ids):
        if tok in (DOT_ID, EOS_ID):
            if i > start:
                spans.append((start, i))
            start = i + 1
        if tok == EOS_ID:
            break
    return spans


class ImageQueryEmbedder(nn.Module):
    """Image-conditioned detection: turn a box drawn on a query image into a query embedding."""

    def __init__(self, min_iou: float = 0.4):
        super().__init__()
        self.min_iou = min_iou

    def forward(self, class_embeds, pred_boxes, query_box):
        ious = box_iou(center_to_corners(pred_boxes), query_box[None])[:, 0]
        best = ious.max()
        if best < self.min_iou:  # expect: FL000 GB0170
            warnings.warn(f"query box poorly covered by any patch box (best IoU {best:.2f})")  # expect: FL000 GB0007
        # among near-best patches, take the embedding least like the image average (the object, not
        # the background it shares with its neighbours)
        candidates = ious >= best * 0.8
        mean = class_embeds.mean(dim=0, keepdim=True)
        sim = (class_embeds @ mean.T)[:, 0]
        sim = torch.where(candidates, sim, torch.full_like(sim, float("inf")))
        return class_embeds[sim.argmin()]  # expect: FL000 GB0033


# ----------------------------------------------------------------------------- post-processing

@torch.compile
def boxes_to_pixels(pred_boxes, image_sizes):
    xyxy = center_to_corners(pred_boxes)
    img_h, img_w = image_sizes.to(xyxy.dtype).unbind(-1)
    scale = torch.stack([img_w, img_h, img_w, img_h], dim=-1)[:, None, :]
    return torch.minimum((xyxy * scale).clamp(min=0), scale)


@torch.compile
def class_threshold_mask(scores, labels, class_names: List[str], thresholds: Dict[str, float],
                         default: float = DEFAULT_SCORE_THRESHOLD):
    thr = torch.tensor([thresholds.get(name, default) for name in class_names], dtype=scores.dtype)
    return scores >= thr[labels]


def _chunks(x, size):
    for start in range(0, x.shape[0], size):  # expect: FL301
        yield x[start:start + size]


@torch.compile(dynamic=True)
def chunked_similarity(region_embeds, text_embeds, chunk: int = 8):
    """Region x prompt scores in chunks of regions, to bound memory on huge vocabularies."""
    parts = [r @ text_embeds.T for r in _chunks(region_embeds, chunk)]
    return torch.cat(parts, dim=0)


@torch.compile
def class_aware_nms(boxes, scores, labels, iou_thresh: float = 0.5, max_det: int = 10):
    # shift each class into its own coordinate range so boxes of different classes never overlap
    offsets = labels.to(boxes.dtype) * (boxes.max() + 1.0)
    shifted = boxes + offsets[:, None]
    order = scores.argsort(descending=True)
    keep = []
    while order.numel() > 0 and len(keep) < max_det:
        i = order[0]
        keep.append(i)
        if order.numel() == 1:
            break
        ious = box_iou(shifted[i][None], shifted[order[1:]])[0]  # expect: FL000 GB0033
        order = order[1:][ious <= iou_thresh]
    return torch.stack(keep)


def _format_for_api(boxes, scores, labels, class_names, image_id: str, score_digits: int = 4):
    detections = []
    for box, score, label in zip(boxes.tolist(), scores.tolist(), labels.tolist()):  # expect: FL000 GB0033; FL000 GB0109
        try:
            name = class_names[label]
        except IndexError:
            name = f"unknown_{label}"
        detections.append({"label": name, "score": round(score, score_digits),
                           "box_xyxy": [round(v, 1) for v in box]})
    detections.sort(key=lambda d: d["score"], reverse=True)
    return {"image_id": image_id, "api_version": API_VERSION, "num_detections": len(detections),
            "detections": detections}


format_for_api = torch.compile(_format_for_api)


@torch.compile
def score_summary(scores):
    """Per-request score statistics for the monitoring dashboard."""
    s = scores.detach().flatten()
    arr = np.clip(s.numpy(), 0.0, 1.0)
    hist = torch.histc(s, bins=5, min=0.0, max=1.0)
    return {"mean": float(arr.mean()), "p90": torch.quantile(s, 0.9).item(), "hist": hist.int().tolist()}  # expect: FL000 GB0033; FL000 GB0124


class DetectionPostprocessor(nn.Module):
    def __init__(self, cfg: OVDConfig):
        super().__init__()
        self.cfg = cfg

    def forward(self, logits, pred_boxes, image_sizes, class_names: List[str]):
        probs = logits.sigmoid()
        scores, labels = probs.max(dim=-1)
        keep = class_threshold_mask(scores, labels, class_names, self.cfg.class_thresholds)
        boxes = boxes_to_pixels(pred_boxes, image_sizes)
        results = []
        for b in range(boxes.shape[0]):
            m = keep[b]
            if not m.any():  # expect: FL000 GB0170
                logger.debug("image %d: no box above its class threshold", b)
                results.append({"boxes": boxes.new_zeros(0, 4), "scores": scores.new_zeros(0),
                                "labels": labels.new_zeros(0)})
                continue
            b_boxes, b_scores, b_labels = boxes[b][m], scores[b][m], labels[b][m]
            kept = class_aware_nms(b_boxes, b_scores, b_labels, self.cfg.nms_iou, self.cfg.max_detections)
            results.append({"boxes": b_boxes[kept], "scores": b_scores[kept], "labels": b_labels[kept]})
        return results


@torch.compiler.disable
def _record_latency(stage: str, start: float):
    LATENCY_MS.setdefault(stage, []).append((time.perf_counter() - start) * 1e3)


class ServingPipeline(nn.Module):
    """Request handler: prompts -> cached text embeddings -> detector -> thresholds/NMS -> JSON."""

    def __init__(self, cfg: OVDConfig, detector: OwlDetector, prompt_bank: PromptBank,
                 callbacks: Sequence[Callable[[dict], None]] = ()):
        super().__init__()
        self.cfg = cfg
        self.detector = detector
        self.prompt_bank = prompt_bank
        self.post = DetectionPostprocessor(cfg)
        self.callbacks = list(callbacks)

    def forward(self, images, class_names: List[str], image_ids: List[str]):
        start = time.perf_counter()  # expect: FL000 GB0007
        queries = self.prompt_bank(class_names)
        out = self.detector(images, queries)
        _record_latency("model", start)  # expect: FL000 GB0098; FL302
        sizes = torch.tensor([[images.shape[-2], images.shape[-1]]] * images.shape[0])
        dets = self.post(out["logits"], out["pred_boxes"], sizes, class_names)
        responses = []
        for image_id, det in zip(image_ids, dets):
            resp = format_for_api(det["boxes"], det["scores"], det["labels"], class_names, image_id)
            for cb in self.callbacks:
                cb(resp)
            responses.append(resp)
        logger.info(f"served {len(responses)} images, top score {out['logits'].sigmoid().max():.3f}")
        return responses


# ----------------------------------------------------------------------------- cases

CFG = OVDConfig()
TOKENIZER = ToyTokenizer()
VOCAB = ["person", "dog", "traffic cone"]


def _detector():
    torch.manual_seed(0)
    return OwlDetector(CFG).eval()


def _text_encoder():
    torch.manual_seed(1)
    return TextEncoder(CFG).eval()


def _images(b=2, h=32, w=32):
    torch.manual_seed(2)
    return torch.rand(b, 3, h, w)


def _grounding_case():
    torch.manual_seed(3)
    caption = "person . dog . traffic cone ."
    ids = TOKENIZER([caption])
    tokens = _text_encoder().encode_tokens(ids).detach().expand(2, -1, -1)
    feats = torch.randn(2, 16, CFG.vision_width)
    return GroundingHead(CFG.vision_width, CFG.text_width), (feats, tokens, ids.expand(2, -1))


def _image_query_case():
    torch.manual_seed(4)
    embeds, boxes = F.normalize(torch.randn(16, CFG.embed_dim), dim=-1), torch.rand(16, 4) * 0.5 + 0.25
    return ImageQueryEmbedder(CFG.min_query_iou), (embeds, boxes, torch.tensor([0.1, 0.1, 0.4, 0.5]))


def _postproc_inputs():
    torch.manual_seed(5)
    logits = torch.randn(2, 16, 3) * 2
    logits[-1] = -8.0  # second image: nothing passes any threshold
    return logits, torch.rand(2, 16, 4) * 0.4 + 0.3, torch.tensor([[32, 32], [32, 32]])


def _pipeline():
    torch.manual_seed(6)
    bank = PromptBank(_text_encoder(), TOKENIZER)
    return ServingPipeline(CFG, _detector(), bank, callbacks=[lambda resp: resp.setdefault("model", "owl-toy")])


def _nms_inputs():
    torch.manual_seed(7)
    xy = torch.rand(12, 2) * 20
    boxes = torch.cat([xy, xy + 4 + torch.rand(12, 2) * 6], dim=1)
    return boxes, torch.rand(12), torch.randint(0, 3, (12,))


CASES = {
    "block": lambda: (Block(16, 4), (torch.randn(2, 5, 16),)),
    "patch_embed": lambda: (PatchEmbed(8, 3, 16), (_images(),)),
    "vision_pos_resample": lambda: (VisionEncoder(CFG), (_images(2, 32, 32),), (_images(4, 48, 48),)),
    "text_encoder": lambda: (_text_encoder(), (TOKENIZER(["a photo of a dog.", "a cat", "red car"]),),
                             (TOKENIZER(["a dog", "a cat", "a car", "a bus", "a cone"])[:, :10],)),
    "prompt_bank": lambda: (PromptBank(_text_encoder(), TOKENIZER),
                            (VOCAB + ["orange traffic cone lying on the wet road"],)),
    "box_head": lambda: (BoxHead(CFG.vision_width), (torch.randn(2, 16, CFG.vision_width), (4, 4))),
    "class_head_masked": lambda: (ClassHead(CFG.vision_width, CFG.embed_dim),
                                  (torch.randn(2, 16, CFG.vision_width), torch.randn(2, 3, CFG.embed_dim),
                                   torch.tensor([[True, True, False], [True, True, True]]))),
    "owl_detector": lambda: (_detector(), (_images() * 255, torch.randn(3, CFG.embed_dim))),
    "grounding_head": _grounding_case,
    "phrase_scores": lambda: (phrase_scores, (torch.randn(2, 16, 9), [(1, 2), (3, 4), (5, 7)])),
    "image_query": _image_query_case,
    "boxes_to_pixels": lambda: (boxes_to_pixels, (torch.rand(3, 16, 4), torch.tensor([[32, 40]] * 3)),
                                (torch.rand(5, 20, 4), torch.tensor([[48, 56]] * 5))),
    "class_threshold_mask": lambda: (class_threshold_mask, (torch.rand(2, 16), torch.randint(0, 3, (2, 16)),
                                                            VOCAB, CFG.class_thresholds)),
    "chunked_similarity": lambda: (chunked_similarity, (torch.randn(20, 16), torch.randn(3, 16)),
                                   (torch.randn(30, 16), torch.randn(5, 16))),
    "class_aware_nms": lambda: (class_aware_nms, _nms_inputs()),
    "format_for_api": lambda: (format_for_api, (torch.tensor([[1.0, 2.0, 10.0, 12.0], [4.0, 4.0, 9.0, 9.0]]),
                                                torch.tensor([0.91, 0.42]), torch.tensor([1, 7]), VOCAB,
                                                "img-001")),
    "score_summary": lambda: (score_summary, (torch.rand(2, 16),)),
    "postprocess": lambda: (DetectionPostprocessor(CFG), (*_postproc_inputs(), VOCAB)),
    "serving_pipeline": lambda: (_pipeline(), (_images(), VOCAB, ["img-a", "img-b"])),
}
