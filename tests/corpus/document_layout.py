"""Document AI in the style of LayoutLM / LayoutLMv2 / DocFormer research code: OCR boxes on the 0-1000 grid,
1D + 2D position embeddings, relative x/y attention biases, subword/word alignment, region pooling, table
cells and reading order, BIO entity heads with span decoding and Viterbi, a padding/truncating collator."""
import functools
import logging
import math
import os
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("doclayout")
logger.addHandler(logging.NullHandler())

MAX_2D_POSITION = 1000
PAD_TOKEN_ID = 1
IGNORE_INDEX = -100
MAX_SEQ_LEN = 8
VERTICAL_MERGE_TOL = 12.0
STRICT_BOXES = os.environ.get("DOCLAYOUT_STRICT", "1") == "1"
LABELS = ("O", "B-HEADER", "I-HEADER", "B-QUESTION", "I-QUESTION", "B-ANSWER", "I-ANSWER")
LABEL2ID = {label: i for i, label in enumerate(LABELS)}
PAD_VALUES = {"input_ids": PAD_TOKEN_ID, "bbox": 0, "labels": IGNORE_INDEX}

@dataclass
class LayoutConfig:
    vocab_size: int = 50
    hidden_size: int = 24
    num_heads: int = 3
    num_layers: int = 2
    intermediate_size: int = 40
    max_position_embeddings: int = 64
    max_2d_position: int = 1024
    coord_size: int = 4
    shape_size: int = 2
    rel_pos_bins: int = 16
    max_rel_2d_pos: int = 128
    hidden_act: str = "gelu_new"
    dropout: float = 0.0
    layer_norm_eps: float = 1e-12
    has_spatial_bias: bool = True
    num_labels: int = len(LABELS)

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

ACT2FN: Dict[str, Callable] = {"gelu": F.gelu, "relu": F.relu, "silu": F.silu,
                               "gelu_new": functools.partial(F.gelu, approximate="tanh")}

def get_activation(name: str) -> Callable:
    return ACT2FN[name] if name in ACT2FN else getattr(F, name)  # e.g. "mish", "hardswish"


# --------------------------------------------------------------------------- box utilities

def clamp_to_grid(t: torch.Tensor, hi: int = MAX_2D_POSITION) -> torch.Tensor:
    return t.clamp(0, hi)

def box_centers(boxes: torch.Tensor) -> torch.Tensor:
    return (boxes[..., 0:2] + boxes[..., 2:4]) / 2

def _validate_boxes(boxes: torch.Tensor, name: str = "bbox") -> None:
    assert boxes.shape[-1] == 4, f"{name} must be [..., 4], got {tuple(boxes.shape)}"
    bad = (boxes[..., 2] < boxes[..., 0]) | (boxes[..., 3] < boxes[..., 1])
    if bad.any():  # expect: FL000 GB0170
        raise ValueError(f"{name}: {int(bad.sum())} boxes have x1 < x0 or y1 < y0")

@torch.compile
def normalize_boxes(boxes: torch.Tensor, page_size: Tuple[int, int], validate: bool = STRICT_BOXES):
    """Pixel-space [x0, y0, x1, y1] -> LayoutLM's integer 0-1000 grid."""
    width, height = page_size
    if validate:
        _validate_boxes(boxes, "ocr boxes")
    scale = boxes.new_tensor([width, height, width, height], dtype=torch.float32)
    norm = torch.floor(boxes.float() * MAX_2D_POSITION / scale)
    return clamp_to_grid(norm).long()

def create_position_ids(input_ids: torch.Tensor, padding_idx: int, past_length: int = 0) -> torch.Tensor:
    # RoBERTa-style: padding tokens keep padding_idx, real tokens count from padding_idx + 1
    mask = input_ids.ne(padding_idx).int()
    incremental = (torch.cumsum(mask, dim=1).type_as(mask) + past_length) * mask
    return incremental.long() + padding_idx


# --------------------------------------------------------------------------- embeddings / attention

class LayoutEmbeddings(nn.Module):
    def __init__(self, cfg: LayoutConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(cfg.vocab_size, cfg.hidden_size, padding_idx=PAD_TOKEN_ID)
        self.position_embeddings = nn.Embedding(cfg.max_position_embeddings, cfg.hidden_size)
        self.x_position_embeddings = nn.Embedding(cfg.max_2d_position, cfg.coord_size)
        self.y_position_embeddings = nn.Embedding(cfg.max_2d_position, cfg.coord_size)
        self.h_position_embeddings = nn.Embedding(cfg.max_2d_position, cfg.shape_size)
        self.w_position_embeddings = nn.Embedding(cfg.max_2d_position, cfg.shape_size)
        self.spatial_proj = nn.Linear(4 * cfg.coord_size + 2 * cfg.shape_size, cfg.hidden_size)
        self.LayerNorm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)
        self.dropout = nn.Dropout(cfg.dropout)

    def spatial_embeddings(self, bbox: torch.Tensor) -> torch.Tensor:
        try:
            left = self.x_position_embeddings(bbox[:, :, 0])
            upper = self.y_position_embeddings(bbox[:, :, 1])
            right = self.x_position_embeddings(bbox[:, :, 2])
            lower = self.y_position_embeddings(bbox[:, :, 3])
        except IndexError as exc:
            raise IndexError("The `bbox` coordinate values should be within 0-1000 range.") from exc
        wh = clamp_to_grid(bbox[..., 2:4] - bbox[..., 0:2])
        h = self.h_position_embeddings(wh[..., 1])
        w = self.w_position_embeddings(wh[..., 0])
        return torch.cat([left, upper, right, lower, h, w], dim=-1)

    def forward(self, input_ids, bbox, position_ids=None):
        if position_ids is None:
            position_ids = create_position_ids(input_ids, PAD_TOKEN_ID)
        emb = self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
        emb = emb + self.spatial_proj(self.spatial_embeddings(bbox))
        return self.dropout(self.LayerNorm(emb))

def relative_position_bucket(relative_position, num_buckets=32, max_distance=128):
    num_buckets //= 2  # bidirectional: half the buckets for each sign
    ret = (relative_position > 0).long() * num_buckets
    n = torch.abs(relative_position)
    max_exact = num_buckets // 2
    is_small = n < max_exact
    val_if_large = max_exact + (
        torch.log(n.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    ).to(torch.long)
    val_if_large = torch.min(val_if_large, torch.full_like(val_if_large, num_buckets - 1))
    return ret + torch.where(is_small, n, val_if_large)

class RelativeSpatialBias(nn.Module):  # LayoutLMv2 relative 1D + spatial 2D attention bias
    def __init__(self, cfg: LayoutConfig):
        super().__init__()
        self.num_bins = cfg.rel_pos_bins
        self.rel_pos_x = nn.Linear(cfg.rel_pos_bins, cfg.num_heads, bias=False)
        self.rel_pos_y = nn.Linear(cfg.rel_pos_bins, cfg.num_heads, bias=False)
        self.rel_pos_1d = nn.Embedding(cfg.rel_pos_bins, cfg.num_heads)
        self.bucket = functools.partial(relative_position_bucket, num_buckets=self.num_bins,
                                        max_distance=cfg.max_rel_2d_pos)

    def _axis_bias(self, coords: torch.Tensor, proj: nn.Linear) -> torch.Tensor:
        rel = coords.unsqueeze(-2) - coords.unsqueeze(-1)
        onehot = F.one_hot(self.bucket(rel), num_classes=self.num_bins).type_as(proj.weight)
        return proj(onehot).permute(0, 3, 1, 2)

    def forward(self, bbox, position_ids):
        bias = self._axis_bias(bbox[:, :, 0], self.rel_pos_x) + self._axis_bias(bbox[:, :, 3], self.rel_pos_y)
        rel_1d = position_ids.unsqueeze(-2) - position_ids.unsqueeze(-1)
        bias = bias + self.rel_pos_1d(self.bucket(rel_1d)).permute(0, 3, 1, 2)
        return bias.contiguous()

class LayoutSelfAttention(nn.Module):
    def __init__(self, cfg: LayoutConfig):
        super().__init__()
        self.num_heads = cfg.num_heads
        self.head_dim = cfg.head_dim
        self.scale = cfg.head_dim ** -0.5
        self.qkv = nn.Linear(cfg.hidden_size, 3 * cfg.hidden_size)
        self.out = nn.Linear(cfg.hidden_size, cfg.hidden_size)

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        return x.view(b, t, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, hidden, attention_mask=None, rel_bias=None):
        q, k, v = map(self._split_heads, self.qkv(hidden).chunk(3, dim=-1))
        scores = torch.matmul(q * self.scale, k.transpose(-1, -2))
        if rel_bias is not None:
            scores = scores + rel_bias
        if attention_mask is not None and not attention_mask.all():  # fast path: nothing padded  # expect: FL000 GB0170
            scores = scores.masked_fill(~attention_mask[:, None, None, :].bool(), torch.finfo(scores.dtype).min)
        probs = scores.softmax(dim=-1)
        ctx = torch.matmul(probs, v).transpose(1, 2).flatten(2)
        return self.out(ctx)

class LayoutEncoderLayer(nn.Module):
    def __init__(self, cfg: LayoutConfig):
        super().__init__()
        self.attention = LayoutSelfAttention(cfg)
        self.ln1 = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)
        self.ln2 = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)
        self.fc1 = nn.Linear(cfg.hidden_size, cfg.intermediate_size)
        self.fc2 = nn.Linear(cfg.intermediate_size, cfg.hidden_size)
        self.act = get_activation(cfg.hidden_act)

    def forward(self, hidden, attention_mask=None, rel_bias=None):
        hidden = self.ln1(hidden + self.attention(hidden, attention_mask, rel_bias))
        return self.ln2(hidden + self.fc2(self.act(self.fc1(hidden))))


# --------------------------------------------------------------------------- BIO heads / decoding

def bio_transition_scores(labels: Sequence[str], illegal: float = -1e4) -> Tuple[torch.Tensor, torch.Tensor]:
    """I-X may only follow B-X or I-X; a sequence may not start with I-X."""
    n = len(labels)
    trans = torch.zeros(n, n)
    start = torch.zeros(n)
    for j, to_tag in enumerate(labels):
        if not to_tag.startswith("I-"):
            continue
        start[j] = illegal
        for i, from_tag in enumerate(labels):
            if from_tag[2:] != to_tag[2:] or from_tag == "O":
                trans[i, j] = illegal
    return trans, start

class TokenClassificationHead(nn.Module):
    def __init__(self, cfg: LayoutConfig, label_smoothing: float = 0.0, class_balanced: bool = False):
        super().__init__()
        self.num_labels, self.class_balanced = cfg.num_labels, class_balanced
        self.dropout = nn.Dropout(cfg.dropout)
        self.classifier = nn.Linear(cfg.hidden_size, cfg.num_labels)
        self.loss_fn = functools.partial(F.cross_entropy, ignore_index=IGNORE_INDEX, label_smoothing=label_smoothing)

    def _class_weights(self, labels: torch.Tensor) -> torch.Tensor:
        counts = torch.bincount(labels[labels != IGNORE_INDEX], minlength=self.num_labels).float()  # expect: FL000 GB0036
        return counts.sum() / counts.clamp_min(1.0) / self.num_labels

    def forward(self, hidden, labels=None):
        logits = self.classifier(self.dropout(hidden))
        if labels is None:
            return logits, None
        weight = self._class_weights(labels) if self.class_balanced else None
        return logits, self.loss_fn(logits.flatten(0, 1), labels.flatten(), weight=weight)

class LayoutLMForTokenClassification(nn.Module):
    def __init__(self, cfg: LayoutConfig):
        super().__init__()
        self.cfg = cfg
        self.embeddings = LayoutEmbeddings(cfg)
        self.rel_bias = RelativeSpatialBias(cfg) if cfg.has_spatial_bias else None
        self.layers = nn.ModuleList(LayoutEncoderLayer(cfg) for _ in range(cfg.num_layers))
        self.head = TokenClassificationHead(cfg, label_smoothing=0.1)

    def _check_inputs(self, input_ids, bbox):
        if input_ids.shape != bbox.shape[:-1]:
            raise ValueError(f"input_ids {tuple(input_ids.shape)} vs bbox {tuple(bbox.shape)}")
        logger.debug("layout batch %s, %d layers", tuple(input_ids.shape), len(self.layers))  # expect: FL000 GB0291

    def forward(self, input_ids, bbox, attention_mask=None, labels=None):
        self._check_inputs(input_ids, bbox)
        if attention_mask is None:
            attention_mask = input_ids.ne(PAD_TOKEN_ID)
        position_ids = create_position_ids(input_ids, PAD_TOKEN_ID)
        hidden = self.embeddings(input_ids, bbox, position_ids)
        rel_bias = self.rel_bias(bbox, position_ids) if self.rel_bias is not None else None
        for layer in self.layers:
            hidden = layer(hidden, attention_mask, rel_bias)
        logits, loss = self.head(hidden, labels)
        return {"logits": logits, "loss": loss}

def _spans_from_tags(tags: Sequence[str]) -> List[Tuple[str, int, int]]:
    spans, start, current = [], None, None
    for i, tag in enumerate(list(tags) + ["O"]):
        prefix, _, entity = tag.partition("-")
        if start is not None and (prefix != "I" or entity != current):
            spans.append((current, start, i))
            start, current = None, None
        if prefix == "B" or (prefix == "I" and start is None):
            start, current = i, entity
    return spans

@torch.compile
def decode_bio(logits: torch.Tensor, attention_mask: torch.Tensor, id2label: Sequence[str] = LABELS):
    pred = logits.argmax(-1)
    conf = logits.softmax(-1).amax(-1)
    results = []
    for b in range(pred.shape[0]):
        length = int(attention_mask[b].sum())  # expect: FL000 GB0124
        tags = [id2label[i] for i in pred[b, :length].tolist()]
        results.append([(ent, s, e, conf[b, s:e].mean()) for ent, s, e in _spans_from_tags(tags)])  # expect: FL000 GB4347
    return results

@torch.compile
def viterbi_decode(emissions: torch.Tensor, transitions: torch.Tensor, start_scores: torch.Tensor):
    score = emissions[0] + start_scores
    history = []
    for t in range(1, emissions.shape[0]):
        cand = score.unsqueeze(1) + transitions + emissions[t].unsqueeze(0)
        score, idx = cand.max(dim=0)
        history.append(idx)
    path = [score.argmax()]
    for idx in reversed(history):
        path.append(idx[path[-1]])  # expect: FL000 GB0033
    path.reverse()
    return torch.stack(path), score.max()


# --------------------------------------------------------------------------- subword <-> word alignment

WORD_REDUCERS: Dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "first": lambda x: x[0], "mean": lambda x: x.mean(0), "max": lambda x: x.max(0).values}

@torch.compile
def merge_subword_predictions(logits: torch.Tensor, word_ids: List[Optional[int]], strategy: str = "first"):
    reducer = WORD_REDUCERS[strategy]
    groups: Dict[int, List[int]] = {}
    for tok_idx, wid in enumerate(word_ids):
        if wid is None:
            continue
        groups.setdefault(wid, []).append(tok_idx)
    merged = [reducer(logits[idxs]) for _, idxs in sorted(groups.items())]
    return torch.stack(merged)

@torch.compile
def pool_subwords_to_words(hidden: torch.Tensor, word_index: torch.Tensor, reduction: str = "mean"):
    """hidden [T, H], word_index [T] with -1 for special tokens -> [num_words, H]."""
    valid = (word_index >= 0).to(hidden.dtype)
    num_words = int(word_index.max()) + 1  # expect: FL000 GB0124
    safe_index = word_index.clamp_min(0)
    out = hidden.new_zeros(num_words, hidden.shape[-1]).index_add_(0, safe_index, hidden * valid[:, None])
    if reduction == "sum":
        return out
    counts = hidden.new_zeros(num_words).index_add_(0, safe_index, valid)
    return out / counts.clamp_min(1.0)[:, None]


# --------------------------------------------------------------------------- visual features

class RegionPooler(nn.Module):
    def __init__(self, in_channels: int, out_dim: int):
        super().__init__()
        self.proj = nn.Linear(in_channels, out_dim)

    @property
    def grid(self) -> float:
        return float(MAX_2D_POSITION)

    def _region_masks(self, boxes: torch.Tensor, h: int, w: int) -> torch.Tensor:
        ys = (torch.arange(h, device=boxes.device) + 0.5) / h * self.grid
        xs = (torch.arange(w, device=boxes.device) + 0.5) / w * self.grid
        in_y = (ys[None, :] >= boxes[:, 1:2]) & (ys[None, :] <= boxes[:, 3:4])
        in_x = (xs[None, :] >= boxes[:, 0:1]) & (xs[None, :] <= boxes[:, 2:3])
        return in_y[:, :, None] & in_x[:, None, :]

    def _pool(self, feats: torch.Tensor, boxes: torch.Tensor) -> torch.Tensor:
        _, h, w = feats.shape
        masks = self._region_masks(boxes, h, w).to(feats.dtype)
        return torch.einsum("nhw,chw->nc", masks, feats) / masks.sum((1, 2)).clamp_min(1.0)[:, None]

    def forward(self, feature_map, boxes):
        return self.proj(torch.stack([self._pool(f, b) for f, b in zip(feature_map, boxes)]))  # expect: FL000 GB4347

class CropRegionPooler(RegionPooler):
    def __init__(self, in_channels: int, out_dim: int, output_size: int = 2):
        super().__init__(in_channels * output_size ** 2, out_dim)
        self.output_size = output_size

    def _pool(self, feats: torch.Tensor, boxes: torch.Tensor) -> torch.Tensor:
        _, h, w = feats.shape
        sx, sy = w / self.grid, h / self.grid
        crops = []
        for x0, y0, x1, y1 in boxes.tolist():  # expect: FL000 GB0033
            c0, r0 = int(math.floor(x0 * sx)), int(math.floor(y0 * sy))
            c1 = max(c0 + 1, int(math.ceil(x1 * sx)))
            r1 = max(r0 + 1, int(math.ceil(y1 * sy)))
            region = feats[:, r0:r1, c0:c1]
            crops.append(F.adaptive_avg_pool2d(region, self.output_size).flatten())
        return torch.stack(crops)

def pad_to_multiple(image: torch.Tensor, multiple: int, value: float = 1.0) -> torch.Tensor:
    h, w = image.shape[-2:]
    pad_h = (multiple - h % multiple) % multiple
    pad_w = (multiple - w % multiple) % multiple
    if pad_h or pad_w:  # expect: FL301
        image = F.pad(image, (0, pad_w, 0, pad_h), value=value)  # white page margin
    return image

class PatchVisualEncoder(nn.Module):
    def __init__(self, in_channels: int = 3, dim: int = 24, patch: int = 4):
        super().__init__()
        self.patch = patch
        self.proj = nn.Conv2d(in_channels, dim, kernel_size=patch, stride=patch)
        self.norm = nn.LayerNorm(dim)

    def forward(self, image):
        image = pad_to_multiple(image, self.patch)
        return self.norm(self.proj(image).flatten(2).transpose(1, 2))

class MultiPageMemory(nn.Module):  # ring buffer of page summaries for multi-page documents
    def __init__(self, hidden: int, slots: int = 5):
        super().__init__()
        self.register_buffer("memory", torch.zeros(slots, hidden))
        self.read = nn.Linear(hidden, hidden)
        self.pages_seen = 0

    @property
    def num_slots(self) -> int:
        return self.memory.shape[0]

    def forward(self, page_hidden):
        slot = self.pages_seen % self.num_slots
        self.memory[slot] = page_hidden.mean(0).detach()
        self.pages_seen += 1  # expect: FL302
        attn = torch.softmax(page_hidden @ self.memory.t() / math.sqrt(page_hidden.shape[-1]), dim=-1)
        return page_hidden + self.read(attn @ self.memory)


# --------------------------------------------------------------------------- tables / reading order

def _cluster_1d(values: torch.Tensor, tol: float) -> torch.Tensor:
    order = torch.argsort(values)
    gaps = torch.diff(values[order]) > tol
    sorted_ids = torch.cat([gaps.new_zeros(1, dtype=torch.long), gaps.long().cumsum(0)])
    ids = torch.empty_like(sorted_ids)
    ids[order] = sorted_ids
    return ids

@torch.compile
def group_table_cells(cell_boxes: torch.Tensor, row_tol: float = VERTICAL_MERGE_TOL, col_tol: float = 40.0):
    centers = box_centers(cell_boxes.float())
    row_ids = _cluster_1d(centers[:, 1], row_tol)
    col_ids = _cluster_1d(centers[:, 0], col_tol)
    n_rows = torch.unique(row_ids).numel()  # expect: FL000 GB0036
    n_cols = torch.unique(col_ids).numel()  # expect: FL000 GB0036
    grid = torch.full((n_rows, n_cols), -1, dtype=torch.long)
    grid[row_ids, col_ids] = torch.arange(cell_boxes.shape[0])
    return grid, row_ids, col_ids

def _raster_key(boxes: torch.Tensor, tol: float) -> torch.Tensor:
    c = box_centers(boxes)
    line = torch.div(c[:, 1], tol, rounding_mode="floor")
    return line * (MAX_2D_POSITION + 1) + c[:, 0]

def _median_line_height(boxes: torch.Tensor, fallback: float = VERTICAL_MERGE_TOL) -> float:
    heights = (boxes[:, 3] - boxes[:, 1]).float()
    return max(float(heights.median()) * 0.5, 1.0) if heights.numel() > 2 else fallback  # expect: FL000 GB0124

ORDER_KEYS = {"raster": _raster_key,
              "top_down": lambda b, tol: box_centers(b)[:, 1] * (MAX_2D_POSITION + 1) + b[:, 0]}

@torch.compile
def sort_reading_order(boxes: torch.Tensor, tol: Optional[float] = None, strategy: str = "raster"):
    if tol is None:
        tol = _median_line_height(boxes)
    keys = ORDER_KEYS[strategy](boxes.float(), tol)
    order = torch.argsort(keys, stable=True)
    return order, boxes[order]


# --------------------------------------------------------------------------- collation / post-processing

def _pad_to(t: torch.Tensor, length: int, value: int) -> torch.Tensor:
    extra = length - t.shape[0]
    if t.dim() == 1:
        return F.pad(t, (0, extra), value=value)
    return F.pad(t, (0, 0, 0, extra), value=value)

@torch.compile
def collate_features(features: List[Dict[str, torch.Tensor]], max_length: int = MAX_SEQ_LEN):
    longest = max(f["input_ids"].shape[0] for f in features)
    if longest > max_length:  # expect: FL301
        features = [{k: v[:max_length] for k, v in f.items()} for f in features]
        longest = max_length
    batch: Dict[str, List[torch.Tensor]] = {key: [] for key in PAD_VALUES}
    for f in features:
        for key, pad_value in PAD_VALUES.items():
            batch[key].append(_pad_to(f[key], longest, pad_value))
    out = {key: torch.stack(values) for key, values in batch.items()}
    out["attention_mask"] = out["input_ids"].ne(PAD_TOKEN_ID).long()
    return out

def temperature_scale(logits: torch.Tensor, special_mask: torch.Tensor, t: float = 1.0) -> torch.Tensor:
    return logits / t

def mask_special_tokens(logits: torch.Tensor, special_mask: torch.Tensor) -> torch.Tensor:
    forced_o = torch.full_like(logits, -1e4)
    forced_o[..., LABEL2ID["O"]] = 0.0
    return torch.where(special_mask[..., None], forced_o, logits)

def numpy_softmax_calibration(logits: torch.Tensor, special_mask: torch.Tensor) -> torch.Tensor:
    arr = logits.detach().cpu().numpy()
    arr = arr - arr.max(axis=-1, keepdims=True)
    probs = np.exp(arr) / np.exp(arr).sum(axis=-1, keepdims=True)
    return torch.log(torch.from_numpy(probs).clamp_min(1e-8))

DEFAULT_HOOKS: List[Callable] = [functools.partial(temperature_scale, t=0.7), mask_special_tokens]

@torch.compile
def postprocess_predictions(logits: torch.Tensor, special_mask: torch.Tensor,
                            hooks: Optional[List[Callable]] = None, threshold: float = 0.5):
    for hook in DEFAULT_HOOKS if hooks is None else hooks:
        logits = hook(logits, special_mask)
    probs = logits.softmax(-1)
    conf, pred = probs.max(-1)
    pred = torch.where(conf < threshold, torch.full_like(pred, LABEL2ID["O"]), pred)
    return pred, conf


# --------------------------------------------------------------------------- cases

_gen = lambda k: torch.Generator().manual_seed(k)  # noqa: E731
_rand = lambda *shape, k=0: torch.randn(*shape, generator=_gen(k))  # noqa: E731

def _boxes(*lead, k: int = 2, scale: int = MAX_2D_POSITION) -> torch.Tensor:
    g = _gen(k)
    xy = torch.randint(0, scale * 9 // 10, (*lead, 2), generator=g)
    wh = torch.randint(5, scale // 10, (*lead, 2), generator=g)
    return torch.cat([xy, (xy + wh).clamp(max=scale)], dim=-1)

def _ids(b: int, t: int, k: int = 1) -> torch.Tensor:
    ids = torch.randint(2, LayoutConfig().vocab_size, (b, t), generator=_gen(k))
    ids[1, -2:] = PAD_TOKEN_ID
    return ids

def _feature(t: int, k: int) -> Dict[str, torch.Tensor]:
    return {"input_ids": torch.randint(2, 50, (t,), generator=_gen(k)), "bbox": _boxes(t, k=k + 1),
            "labels": torch.randint(0, len(LABELS), (t,), generator=_gen(k + 2))}

def _table(rows: int, cols: int) -> torch.Tensor:
    x0, y0 = 50 + torch.arange(cols).repeat(rows) * 150, 100 + torch.arange(rows).repeat_interleave(cols) * 40
    return torch.stack([x0, y0, x0 + 120, y0 + 25], dim=-1)

_CFG = LayoutConfig()
_TRANS, _START = bio_transition_scores(LABELS)
_WORD_IDS = [None, 0, 0, 1, 2, 2, 2, 3, None]

CASES = {
    "normalize_boxes": lambda: (normalize_boxes, (_boxes(2, 9, scale=600), (600, 800))),
    "LayoutEmbeddings": lambda: (LayoutEmbeddings(_CFG), (_ids(2, 9), _boxes(2, 9))),
    "RelativeSpatialBias": lambda: (RelativeSpatialBias(_CFG), (_boxes(2, 9), create_position_ids(_ids(2, 9), 1))),
    "LayoutSelfAttention": lambda: (LayoutSelfAttention(_CFG), (_rand(2, 9, 24), _ids(2, 9).ne(1))),
    "LayoutEncoderLayer": lambda: (LayoutEncoderLayer(_CFG), (_rand(2, 9, 24), _ids(2, 9).ne(1))),
    "TokenClassificationHead": lambda: (TokenClassificationHead(_CFG, class_balanced=True), (_rand(2, 9, 24), torch.randint(0, 7, (2, 9), generator=_gen(3)))),
    "LayoutLMForTokenClassification": lambda: (LayoutLMForTokenClassification(_CFG), (_ids(2, 9), _boxes(2, 9))),
    "decode_bio": lambda: (decode_bio, (_rand(2, 9, 7, k=4), _ids(2, 9).ne(1))),
    "viterbi_decode": lambda: (viterbi_decode, (_rand(9, 7, k=4), _TRANS, _START)),
    "merge_subword_predictions": lambda: (merge_subword_predictions, (_rand(9, 7, k=6), _WORD_IDS, "mean")),
    "pool_subwords_to_words": lambda: (pool_subwords_to_words, (_rand(9, 24), torch.tensor([-1, 0, 0, 1, 2, 2, 2, 3, -1]))),
    "RegionPooler": lambda: (RegionPooler(6, 24), (_rand(2, 6, 5, 7), _boxes(2, 3))),
    "CropRegionPooler": lambda: (CropRegionPooler(6, 24), (_rand(2, 6, 5, 7), _boxes(2, 3))),
    "PatchVisualEncoder": lambda: (PatchVisualEncoder(), (_rand(2, 3, 10, 14).sigmoid(),), (_rand(2, 3, 12, 16).sigmoid(),)),
    "MultiPageMemory": lambda: (MultiPageMemory(24), (_rand(9, 24),)),
    "group_table_cells": lambda: (group_table_cells, (_table(3, 2),)),
    "sort_reading_order": lambda: (sort_reading_order, (_boxes(9),)),
    "sort_reading_order_columns": lambda: (sort_reading_order, (_boxes(9), 20.0, "top_down")),
    "collate_features": lambda: (collate_features, ([_feature(7, 10), _feature(9, 20), _feature(5, 30)],),
                                 ([_feature(3, 10), _feature(5, 20), _feature(6, 30)],)),
    "postprocess_predictions": lambda: (postprocess_predictions, (_rand(2, 9, 7, k=7), _ids(2, 9).eq(1))),
    "postprocess_numpy_calibrated": lambda: (postprocess_predictions, (_rand(2, 9, 7, k=7), _ids(2, 9).eq(1),
                                                                       [numpy_softmax_calibration, mask_special_tokens])),
}
