"""Table-structure recognition (TableTransformer / DETR-style) for the document-AI extraction service: frozen-BN
ResNet + sine positions, encoder-decoder with object queries, row/column/header/spanning-cell heads, the Hungarian
matcher of the fine-tuning loop, and the grid post-processing, exported with torch.jit.trace / torch.export."""
import logging
import math
import time
import warnings
from dataclasses import dataclass, field, replace
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from scipy.optimize import linear_sum_assignment
from torch import Tensor, nn

logger = logging.getLogger("tsr.deploy")
logger.addHandler(logging.NullHandler())

STRUCTURE_CLASSES = ("table", "table column", "table row", "table column header",
                     "table projected row header", "table spanning cell")
CLASS_IDS: Dict[str, int] = {name: i for i, name in enumerate(STRUCTURE_CLASSES)}
NO_OBJECT = len(STRUCTURE_CLASSES)  # DETR's extra "no object" logit sits last
# TATR structure_config.json defaults, except headers: the column header is cheap to get wrong
STRUCTURE_THRESHOLDS = {"table": 0.5, "table column": 0.5, "table row": 0.5, "table column header": 0.4,
                        "table projected row header": 0.5, "table spanning cell": 0.5}
IMAGE_MEAN, IMAGE_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
MAX_SIZE = 64  # longest side of a table crop after MaxResize (1000 in production, tiny here)
FALLBACK_TOPK = 4
SPAN_MIN_IOA = 0.5

@dataclass
class TSRConfig:
    num_queries: int = 12
    hidden_dim: int = 32
    nheads: int = 4
    enc_layers: int = 1
    dec_layers: int = 2
    dim_feedforward: int = 64
    backbone_widths: Tuple[int, ...] = (8, 16, 32)
    dropout: float = 0.0
    aux_loss: bool = True
    min_table_score: float = 0.6
    class_thresholds: Dict[str, float] = field(default_factory=lambda: dict(STRUCTURE_THRESHOLDS))

CONFIGS = {"tatr-tiny": TSRConfig(), "tatr-tiny-noaux": TSRConfig(aux_loss=False)}

def get_config(name: str, **overrides) -> TSRConfig:
    return replace(CONFIGS[name], **overrides)  # KeyError lists nothing, but the CLI validates names

# ----------------------------------------------------------------------------- box utilities
def box_cxcywh_to_xyxy(b: Tensor) -> Tensor:
    cx, cy, w, h = b.unbind(-1)
    return torch.stack([cx - 0.5 * w, cy - 0.5 * h, cx + 0.5 * w, cy + 0.5 * h], dim=-1)

def box_area(b: Tensor) -> Tensor:
    return (b[..., 2] - b[..., 0]).clamp(min=0) * (b[..., 3] - b[..., 1]).clamp(min=0)

def _intersection(a: Tensor, b: Tensor) -> Tensor:
    return (torch.min(a[:, None, 2:], b[None, :, 2:]) - torch.max(a[:, None, :2], b[None, :, :2])).clamp(min=0).prod(-1)

def generalized_box_iou(a: Tensor, b: Tensor) -> Tensor:
    inter = _intersection(a, b)
    union = box_area(a)[:, None] + box_area(b)[None, :] - inter
    iou = inter / union
    hull = (torch.max(a[:, None, 2:], b[None, :, 2:]) - torch.min(a[:, None, :2], b[None, :, :2])).prod(-1)
    return iou - (hull - union) / hull

def ioa(a: Tensor, b: Tensor) -> Tensor:
    """Intersection over the area of `a` (how much of each grid cell a spanning cell covers)."""
    return _intersection(a, b) / box_area(a)[:, None].clamp(min=1e-6)

# ----------------------------------------------------------------------------- backbone
class FrozenBatchNorm2d(nn.Module):
    """BatchNorm2d with fixed statistics and affine parameters, as in DETR's ResNet."""
    def __init__(self, n: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        for name, init in (("weight", torch.ones), ("bias", torch.zeros), ("running_mean", torch.zeros),
                           ("running_var", torch.ones)):
            self.register_buffer(name, init(n))

    def forward(self, x: Tensor) -> Tensor:
        scale = self.weight * (self.running_var + self.eps).rsqrt()
        shift = self.bias - self.running_mean * scale
        return x * scale.reshape(1, -1, 1, 1) + shift.reshape(1, -1, 1, 1)

def _conv_bn(cin: int, cout: int, stride: int = 1, k: int = 3) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, bias=False), FrozenBatchNorm2d(cout), nn.ReLU())

class TinyResNet(nn.Module):
    """Stride-8 stand-in for the ResNet-18 of TATR; returns the last feature map and its padding mask."""
    stride = 8

    def __init__(self, widths: Sequence[int] = (8, 16, 32)):
        super().__init__()
        self.stem = _conv_bn(3, widths[0], 2)
        self.layers = nn.Sequential(*[nn.Sequential(_conv_bn(a, b, 2), _conv_bn(b, b))
                                      for a, b in zip(widths[:-1], widths[1:])])
        self.num_channels = widths[-1]

    def forward(self, x: Tensor, mask: Tensor) -> Tuple[Tensor, Tensor]:
        h, w = x.shape[-2:]
        if h % self.stride or w % self.stride:  # crops come in any size: pad so the mask downsamples exactly  # expect: FL203; FL301
            ph, pw = (-h) % self.stride, (-w) % self.stride
            x = F.pad(x, (0, pw, 0, ph))
            mask = F.pad(mask, (0, pw, 0, ph), value=True)
        feats = self.layers(self.stem(x))
        mask = F.interpolate(mask[None].float(), size=feats.shape[-2:]).to(torch.bool)[0]
        return feats, mask

class PositionEmbeddingSine(nn.Module):
    def __init__(self, num_pos_feats: int = 16, temperature: float = 10000.0, normalize: bool = True):
        super().__init__()
        self.num_pos_feats, self.temperature, self.normalize = num_pos_feats, temperature, normalize
        self.scale = 2 * math.pi

    def forward(self, mask: Tensor) -> Tensor:
        not_mask = ~mask
        y_embed = not_mask.cumsum(1, dtype=torch.float32)
        x_embed = not_mask.cumsum(2, dtype=torch.float32)
        if self.normalize:
            y_embed = y_embed / (y_embed[:, -1:, :] + 1e-6) * self.scale
            x_embed = x_embed / (x_embed[:, :, -1:] + 1e-6) * self.scale
        dim_t = torch.arange(self.num_pos_feats, dtype=torch.float32, device=mask.device)
        dim_t = self.temperature ** (2 * torch.div(dim_t, 2, rounding_mode="floor") / self.num_pos_feats)
        pos_x, pos_y = x_embed[..., None] / dim_t, y_embed[..., None] / dim_t
        pos_x = torch.stack((pos_x[..., 0::2].sin(), pos_x[..., 1::2].cos()), dim=4).flatten(3)
        pos_y = torch.stack((pos_y[..., 0::2].sin(), pos_y[..., 1::2].cos()), dim=4).flatten(3)
        return torch.cat((pos_y, pos_x), dim=3).permute(0, 3, 1, 2)

# ----------------------------------------------------------------------------- transformer
class Attention(nn.Module):
    def __init__(self, dim: int, num_heads: int):
        super().__init__()
        self.num_heads = num_heads
        self.q_proj, self.k_proj, self.v_proj = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.out_proj = nn.Linear(dim, dim)

    def _heads(self, t: Tensor) -> Tensor:
        b, n, d = t.shape
        return t.view(b, n, self.num_heads, d // self.num_heads).transpose(1, 2)

    def forward(self, q: Tensor, k: Tensor, v: Tensor, key_padding_mask: Optional[Tensor] = None) -> Tensor:
        b, nq, d = q.shape
        attn_mask = None if key_padding_mask is None else ~key_padding_mask[:, None, None, :]
        out = F.scaled_dot_product_attention(self._heads(self.q_proj(q)), self._heads(self.k_proj(k)),
                                             self._heads(self.v_proj(v)), attn_mask=attn_mask)
        return self.out_proj(out.transpose(1, 2).reshape(b, nq, d))

def _ffn(dim: int, hidden: int, dropout: float) -> nn.Sequential:
    return nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, dim))

class EncoderLayer(nn.Module):
    def __init__(self, dim: int, nheads: int, ff: int, dropout: float = 0.0):
        super().__init__()
        self.self_attn, self.ffn = Attention(dim, nheads), _ffn(dim, ff, dropout)
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)

    def forward(self, src: Tensor, key_padding_mask: Tensor, pos: Tensor) -> Tensor:
        q = k = src + pos
        src = self.norm1(src + self.self_attn(q, k, src, key_padding_mask))
        return self.norm2(src + self.ffn(src))

class DecoderLayer(nn.Module):
    def __init__(self, dim: int, nheads: int, ff: int, dropout: float = 0.0):
        super().__init__()
        self.self_attn, self.cross_attn = Attention(dim, nheads), Attention(dim, nheads)
        self.ffn = _ffn(dim, ff, dropout)
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(dim), nn.LayerNorm(dim), nn.LayerNorm(dim)

    def forward(self, tgt: Tensor, memory: Tensor, memory_mask: Tensor, pos: Tensor, query_pos: Tensor) -> Tensor:
        q = k = tgt + query_pos
        tgt = self.norm1(tgt + self.self_attn(q, k, tgt))
        tgt = self.norm2(tgt + self.cross_attn(tgt + query_pos, memory + pos, memory, memory_mask))
        return self.norm3(tgt + self.ffn(tgt))

class StructureTransformer(nn.Module):
    def __init__(self, cfg: TSRConfig):
        super().__init__()
        d, h, ff = cfg.hidden_dim, cfg.nheads, cfg.dim_feedforward
        self.encoder = nn.ModuleList([EncoderLayer(d, h, ff, cfg.dropout) for _ in range(cfg.enc_layers)])
        self.decoder = nn.ModuleList([DecoderLayer(d, h, ff, cfg.dropout) for _ in range(cfg.dec_layers)])
        self.dec_norm = nn.LayerNorm(d)

    def forward(self, src: Tensor, mask: Tensor, query_embed: Tensor, pos: Tensor) -> Tensor:
        b = src.shape[0]
        memory, pos, mask = src.flatten(2).transpose(1, 2), pos.flatten(2).transpose(1, 2), mask.flatten(1)
        for layer in self.encoder:
            memory = layer(memory, mask, pos)
        query_pos = query_embed.unsqueeze(0).expand(b, -1, -1)
        tgt, hs = torch.zeros_like(query_pos), []
        for layer in self.decoder:
            tgt = layer(tgt, memory, mask, pos, query_pos)
            hs.append(self.dec_norm(tgt))
        return torch.stack(hs)  # (L, B, Q, D): every decoder layer feeds the aux losses

class MLP(nn.Module):
    def __init__(self, in_dim: int, hidden: int, out_dim: int, num_layers: int):
        super().__init__()
        dims = [in_dim] + [hidden] * (num_layers - 1)
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims, dims[1:] + [out_dim]))

    def forward(self, x: Tensor) -> Tensor:
        for i, layer in enumerate(self.layers):
            x = layer(x) if i == len(self.layers) - 1 else F.relu(layer(x))
        return x

class TableTransformer(nn.Module):
    def __init__(self, cfg: TSRConfig):
        super().__init__()
        self.backbone = TinyResNet(cfg.backbone_widths)
        self.input_proj = nn.Conv2d(self.backbone.num_channels, cfg.hidden_dim, 1)
        self.position = PositionEmbeddingSine(cfg.hidden_dim // 2)
        self.transformer = StructureTransformer(cfg)
        self.query_embed = nn.Embedding(cfg.num_queries, cfg.hidden_dim)
        self.class_embed = nn.Linear(cfg.hidden_dim, len(STRUCTURE_CLASSES) + 1)
        self.bbox_embed = MLP(cfg.hidden_dim, cfg.hidden_dim, 4, 3)
        self.aux_loss = cfg.aux_loss

    def forward(self, pixel_values: Tensor, pixel_mask: Optional[Tensor] = None) -> Dict[str, object]:
        if pixel_mask is None:
            pixel_mask = torch.zeros_like(pixel_values[:, 0], dtype=torch.bool)
        feats, mask = self.backbone(pixel_values, pixel_mask)
        hs = self.transformer(self.input_proj(feats), mask, self.query_embed.weight, self.position(mask))
        logits, boxes = self.class_embed(hs), self.bbox_embed(hs).sigmoid()
        out = {"logits": logits[-1], "pred_boxes": boxes[-1]}
        if self.aux_loss and self.training:
            out["aux_outputs"] = [{"logits": a, "pred_boxes": b} for a, b in zip(logits[:-1], boxes[:-1])]
        return out

class TracingWrapper(nn.Module):
    """jit.trace and torch.export want tuples, not the HF-style output dict."""
    def __init__(self, model: TableTransformer):
        super().__init__()
        self.model = model

    def forward(self, pixel_values: Tensor, pixel_mask: Tensor) -> Tuple[Tensor, Tensor]:
        out = self.model(pixel_values, pixel_mask)
        return out["logits"], out["pred_boxes"]

# ----------------------------------------------------------------------------- matching (fine-tuning loop)
class HungarianMatcher(nn.Module):
    def __init__(self, cost_class: float = 1.0, cost_bbox: float = 5.0, cost_giou: float = 2.0):
        super().__init__()
        self.cost_class, self.cost_bbox, self.cost_giou = cost_class, cost_bbox, cost_giou

    @torch.no_grad()
    def forward(self, logits: Tensor, pred_boxes: Tensor, targets: List[Dict[str, Tensor]]):
        bs, nq = logits.shape[:2]
        prob, out_bbox = logits.flatten(0, 1).softmax(-1), pred_boxes.flatten(0, 1)
        tgt_ids, tgt_bbox = torch.cat([t["labels"] for t in targets]), torch.cat([t["boxes"] for t in targets])
        cost = (self.cost_bbox * torch.cdist(out_bbox, tgt_bbox, p=1) - self.cost_class * prob[:, tgt_ids]
                - self.cost_giou * generalized_box_iou(box_cxcywh_to_xyxy(out_bbox), box_cxcywh_to_xyxy(tgt_bbox)))
        cost = cost.view(bs, nq, -1).cpu()
        sizes = [len(t["boxes"]) for t in targets]
        indices = [linear_sum_assignment(c[i]) for i, c in enumerate(cost.split(sizes, -1))]  # expect: FL000 GB0007; FL000 GB8335
        return [(torch.as_tensor(i, dtype=torch.int64), torch.as_tensor(j, dtype=torch.int64)) for i, j in indices]  # expect: FL000 GB4347

@torch.compile
def greedy_match(iou: Tensor, min_iou: float = 0.5) -> List[Tuple[int, int]]:
    """One-to-one row/column matching for the GriTS-style eval: best IoU first, no Hungarian needed."""
    iou = iou.clone()
    pairs = []
    for _ in range(min(iou.shape)):
        flat = int(iou.argmax())  # expect: FL000 GB0124
        r, c = divmod(flat, iou.shape[1])
        if iou[r, c] < min_iou:
            break
        pairs.append((r, c))
        iou[r, :] = -1.0
        iou[:, c] = -1.0
    return pairs

# ----------------------------------------------------------------------------- post-processing
@torch.compile(dynamic=True)
def resize_table_crop(crop: Tensor, max_size: int = MAX_SIZE) -> Tensor:
    """TATR's MaxResize + ImageNet normalisation; the longer side goes to max_size."""
    h, w = crop.shape[-2:]
    longest = max(h, w)
    size = (h * max_size // longest, w * max_size // longest)
    if longest > max_size:  # big scans: antialias on the way down or thin ruling lines vanish  # expect: FL301
        crop = F.interpolate(crop, size=size, mode="bilinear", antialias=True, align_corners=False)
    else:
        crop = F.interpolate(crop, size=size, mode="bilinear", align_corners=False)
    return (crop - crop.new_tensor(IMAGE_MEAN).view(1, 3, 1, 1)) / crop.new_tensor(IMAGE_STD).view(1, 3, 1, 1)

@torch.compile
def postprocess_structure(logits: Tensor, pred_boxes: Tensor, target_sizes: Tensor):
    probs = logits.softmax(-1)[..., :NO_OBJECT]
    scores, labels = probs.max(-1)
    img_h, img_w = target_sizes.unbind(-1)
    scale = torch.stack([img_w, img_h, img_w, img_h], dim=-1)[:, None, :].to(pred_boxes.dtype)
    return scores, labels, box_cxcywh_to_xyxy(pred_boxes) * scale

@torch.compile
def filter_by_confidence(scores: Tensor, labels: Tensor, boxes: Tensor, thresholds: Tensor):
    keep = scores >= thresholds[labels]
    if not keep.any():  # expect: FL000 GB0170
        logger.warning("no structure above threshold; keeping the top-%d queries", FALLBACK_TOPK)  # expect: FL000 GB0291
        keep = scores >= scores.topk(FALLBACK_TOPK).values[-1]
    return scores[keep], labels[keep], boxes[keep]  # expect: FL000 GB0036

def split_by_class(scores: Tensor, labels: Tensor, boxes: Tensor) -> Dict[str, Tuple[Tensor, Tensor]]:
    objects = {}
    for name, idx in CLASS_IDS.items():
        sel = (labels == idx).nonzero().squeeze(-1)  # expect: FL000 GB0036
        objects[name] = (boxes[sel], scores[sel])
    return objects

@torch.compile
def suppress_overlaps(boxes: Tensor, scores: Tensor, axis: int = 1, max_overlap: float = 0.5) -> Tensor:
    """Rows (axis=1) or columns (axis=0) overlapping a better-scored one by more than max_overlap go."""
    order = scores.argsort(descending=True)
    keep = []
    while order.numel() > 0:
        best, rest = order[0], order[1:]
        keep.append(best)
        lo, hi = boxes[rest, axis], boxes[rest, axis + 2]
        inter = (torch.minimum(hi, boxes[best, axis + 2]) - torch.maximum(lo, boxes[best, axis])).clamp(min=0)  # expect: FL000 GB0033
        order = rest[inter / (hi - lo).clamp(min=1e-6) <= max_overlap]
    return torch.stack(keep) if keep else order

@torch.compile
def cells_from_rows_and_columns(row_boxes: Tensor, col_boxes: Tensor, table_box: Tensor):
    """Grid cells are row x column intersections; rows are snapped to the table width, columns to its height."""
    rows = row_boxes[(row_boxes[:, 1] + row_boxes[:, 3]).argsort()]
    cols = col_boxes[(col_boxes[:, 0] + col_boxes[:, 2]).argsort()]
    x0, y0, x1, y1 = table_box.unbind(-1)
    rows = torch.stack([x0.expand_as(rows[:, 0]), rows[:, 1], x1.expand_as(rows[:, 2]), rows[:, 3]], dim=-1)
    cols = torch.stack([cols[:, 0], y0.expand_as(cols[:, 1]), cols[:, 2], y1.expand_as(cols[:, 3])], dim=-1)
    n_rows, n_cols = rows.shape[0], cols.shape[0]
    cells = torch.stack([cols[None, :, 0].expand(n_rows, n_cols), rows[:, None, 1].expand(n_rows, n_cols),
                         cols[None, :, 2].expand(n_rows, n_cols), rows[:, None, 3].expand(n_rows, n_cols)], dim=-1)
    return rows, cols, cells

def span_extents(cells: Tensor, span_boxes: Tensor, min_ioa: float = SPAN_MIN_IOA) -> Tensor:
    """(row_start, row_end, col_start, col_end) of each spanning cell on the grid; -1 rows for spans off the grid."""
    n_rows, n_cols, _ = cells.shape
    cover = (ioa(cells.reshape(-1, 4), span_boxes).T >= min_ioa).reshape(-1, n_rows, n_cols)
    rows_hit, cols_hit = cover.any(-1), cover.any(-2)
    r_idx, c_idx = torch.arange(n_rows), torch.arange(n_cols)
    r0, r1 = torch.where(rows_hit, r_idx, n_rows).amin(-1), torch.where(rows_hit, r_idx, -1).amax(-1)
    c0, c1 = torch.where(cols_hit, c_idx, n_cols).amin(-1), torch.where(cols_hit, c_idx, -1).amax(-1)
    ext = torch.stack([r0, r1, c0, c1], dim=-1)
    off_grid = r1 < r0
    if off_grid.any():  # expect: FL000 GB0170; FL201
        logger.debug("%d spanning cells cover no grid cell", int(off_grid.sum()))  # expect: FL000 GB0124; FL000 GB0291; FL202; FL204
        ext = torch.where(off_grid[:, None], torch.full_like(ext, -1), ext)
    return ext

@torch.compile
def merge_spanning_cells(cells: Tensor, span_boxes: Tensor, span_scores: Tensor, min_score: float = 0.5):
    ext = span_extents(cells, span_boxes)
    merged = []
    for (r0, r1, c0, c1), score in zip(ext.tolist(), span_scores.tolist()):  # expect: FL000 GB0033; FL000 GB0109
        if r0 < 0 or score < min_score or (r0 == r1 and c0 == c1):
            continue  # off the grid, unsure, or a "spanning" cell that covers a single cell
        box = torch.cat([cells[r0, c0, :2], cells[r1, c1, 2:]])
        merged.append({"rows": (r0, r1), "cols": (c0, c1), "bbox": box, "score": score})
    return merged

def mark_header_rows(rows: Tensor, header_boxes: Tensor, min_ioa: float = 0.5) -> Tensor:
    if header_boxes.shape[0] == 0:  # expect: FL203
        return torch.zeros(rows.shape[0], dtype=torch.bool)
    covered = ioa(rows, header_boxes).amax(-1) >= min_ioa
    # a header is a prefix of the table: everything above the last covered row is header too
    return covered.flip(0).cummax(0).values.flip(0)

def iter_cells(cells: Tensor) -> Iterator[Tuple[int, int, Tensor]]:
    for r in range(cells.shape[0]):
        for c in range(cells.shape[1]):
            yield r, c, cells[r, c]

@torch.compile
def cells_to_records(cells: Tensor, header: Tensor, decimals: int = 1) -> List[Dict[str, object]]:
    records = []
    for r, c, box in iter_cells(cells):
        records.append({"row": r, "col": c, "header": bool(header[r]),  # expect: FL000 GB0124
                        "bbox": np.round(box.detach().numpy(), decimals).tolist()})
    return records

class StructurePostProcessor(nn.Module):
    """logits/boxes of one crop -> thresholded detections, padded to a fixed count for the export path."""
    def __init__(self, cfg: TSRConfig):
        super().__init__()
        self.register_buffer("thresholds", torch.tensor([cfg.class_thresholds[n] for n in STRUCTURE_CLASSES]))
        self.max_objects, self.min_table_score = cfg.num_queries, cfg.min_table_score

    def forward(self, logits: Tensor, pred_boxes: Tensor, size_hw: Tensor):
        probs = logits.softmax(-1)[:, :NO_OBJECT]
        scores, labels = probs.max(-1)
        boxes = box_cxcywh_to_xyxy(pred_boxes) * size_hw.flip(-1).repeat(2)
        if probs[:, CLASS_IDS["table"]].max() < self.min_table_score:  # expect: FL000 GB0170; FL201
            warnings.warn("crop does not look like a table; structure will be unreliable")  # expect: FL204
        keep = scores >= self.thresholds[labels]
        n_keep = int(keep.sum())  # expect: FL000 GB0124; FL202
        order = torch.where(keep, scores, scores - 2.0).argsort(descending=True)
        valid = torch.arange(self.max_objects) < n_keep
        return scores[order], labels[order], boxes[order], valid

@torch.compiler.disable
def _emit_metrics(n_rows: int, n_cols: int, n_spans: int, latency_s: float) -> None:
    logger.info("table %dx%d, %d spanning cells, %.1f ms", n_rows, n_cols, n_spans, 1e3 * latency_s)

def _check_header(table: Dict[str, object]) -> None:
    if not table["header"].any():  # expect: FL000 GB0170
        warnings.warn(f"no column header in a {table['n_rows']}-row table; key mapping will guess")  # expect: FL000 GB0007

class TableGridDecoder(nn.Module):
    """Python side of the worker: the TorchScript model gives logits/boxes, this turns them into tables."""
    def __init__(self, cfg: TSRConfig, callbacks: Sequence[Callable[[Dict[str, object]], None]] = (_check_header,)):
        super().__init__()
        self.register_buffer("thresholds", torch.tensor([cfg.class_thresholds[n] for n in STRUCTURE_CLASSES]))
        self.callbacks = list(callbacks)
        self.tables_seen = 0

    def forward(self, logits: Tensor, pred_boxes: Tensor, sizes: Tensor) -> List[Dict[str, object]]:
        self.tables_seen += logits.shape[0]  # expect: FL302
        start = time.perf_counter()  # expect: FL000 GB0007
        scores, labels, boxes = postprocess_structure(logits, pred_boxes, sizes)
        tables = []
        for i in range(logits.shape[0]):
            objs = split_by_class(*filter_by_confidence(scores[i], labels[i], boxes[i], self.thresholds))
            rows, cols = objs["table row"][0], objs["table column"][0]
            try:
                table_box = objs["table"][0][0]
            except IndexError:  # no table box: fall back to the full crop
                table_box = torch.cat([sizes.new_zeros(2), sizes[i].flip(0)]).float()
            if rows.shape[0] == 0 or cols.shape[0] == 0:
                logger.warning(f"crop {i}: no rows or no columns (best score {scores[i].max():.2f})")
                continue
            rows, cols, cells = cells_from_rows_and_columns(rows, cols, table_box)
            header = mark_header_rows(rows, objs["table column header"][0])
            spans = merge_spanning_cells(cells, *objs["table spanning cell"])
            table = {"cells": cells, "header": header, "spans": spans, "n_rows": rows.shape[0]}
            for callback in self.callbacks:
                callback(table)
            tables.append(table)
            _emit_metrics(rows.shape[0], cols.shape[0], len(spans), time.perf_counter() - start)
        return tables

# ----------------------------------------------------------------------------- export entry point
def export_table_structure(out_dir: str, cfg_name: str = "tatr-tiny") -> Dict[str, object]:
    cfg = get_config(cfg_name)
    model = TableTransformer(cfg).eval()
    pixels, mask = torch.rand(1, 3, 48, 64), torch.zeros(1, 48, 64, dtype=torch.bool)
    torch.jit.trace(TracingWrapper(model), (pixels, mask)).save(f"{out_dir}/tatr.pt")
    torch.jit.trace(PositionEmbeddingSine(cfg.hidden_dim // 2), (mask[:, ::8, ::8],)).save(f"{out_dir}/pos.pt")
    (logits, boxes), sizes = TracingWrapper(model)(pixels, mask), torch.tensor([[480, 640]])
    torch.jit.trace(postprocess_structure, (logits, boxes, sizes)).save(f"{out_dir}/postprocess.pt")
    rows, cols, table = _grid_inputs(5, 4)
    torch.jit.trace(cells_from_rows_and_columns, (rows, cols, table)).save(f"{out_dir}/grid.pt")
    _, _, cells = cells_from_rows_and_columns(rows, cols, table)
    torch.jit.trace(span_extents, (cells, _span_boxes(cells))).save(f"{out_dir}/spans.pt")
    torch.jit.trace(mark_header_rows, (rows, table[None, :] * 0.3)).save(f"{out_dir}/header.pt")
    programs = {
        "postprocessor": torch.export.export(StructurePostProcessor(cfg), (logits[0], boxes[0], sizes[0])),
        "box_head": torch.export.export(MLP(cfg.hidden_dim, cfg.hidden_dim, 4, 3).eval(), (torch.randn(12, 32),)),
    }
    for name, program in programs.items():
        torch.export.save(program, f"{out_dir}/{name}.pt2")
    return programs

# ----------------------------------------------------------------------------- cases
_gen = lambda k: torch.Generator().manual_seed(k)
_rand = lambda *shape, k=0: torch.rand(*shape, generator=_gen(k))

def _grid_inputs(n_rows: int, n_cols: int, width: float = 320.0, height: float = 200.0):
    """A ruled table: slightly jittered, shuffled row and column boxes plus the table box."""
    ys = torch.linspace(0, height, n_rows + 1)
    xs = torch.linspace(0, width, n_cols + 1)
    rows = torch.stack([torch.full((n_rows,), 2.0), ys[:-1], torch.full((n_rows,), width - 3), ys[1:]], dim=-1)
    cols = torch.stack([xs[:-1], torch.full((n_cols,), 1.0), xs[1:], torch.full((n_cols,), height - 2)], dim=-1)
    rows = (rows + _rand(n_rows, 4, k=n_rows)).flip(0)
    cols = (cols + _rand(n_cols, 4, k=n_cols))[torch.arange(n_cols).roll(1)]
    return rows, cols, torch.tensor([0.0, 0.0, width, height])

def _span_boxes(cells: Tensor) -> Tensor:
    """A header cell over the first two columns, one over a whole row, one lying off the table."""
    return torch.stack([torch.cat([cells[0, 0, :2], cells[0, 1, 2:]]),
                        torch.cat([cells[2, 0, :2], cells[2, -1, 2:]]),
                        torch.tensor([900.0, 900.0, 950.0, 940.0])])

def _cells(n_rows: int = 5, n_cols: int = 4) -> Tensor:
    return cells_from_rows_and_columns(*_grid_inputs(n_rows, n_cols))[2]

def _model_outputs(b: int = 2, q: int = 12, k: int = 0) -> Tuple[Tensor, Tensor]:
    logits = torch.randn(b, q, NO_OBJECT + 1, generator=_gen(k)) * 3
    return logits, _rand(b, q, 4, k=k + 1) * 0.5 + 0.25

def _structure_outputs(b: int = 2) -> Tuple[Tensor, Tensor]:
    """What a trained TATR says about a 4x3 table: table, rows, columns, header, two spanning cells, no-object."""
    labels = torch.tensor([0, 2, 2, 2, 2, 1, 1, 1, 3, 5, 5, NO_OBJECT])
    boxes = torch.tensor([[0.5, 0.5, 0.9, 0.8], [0.5, 0.2, 0.9, 0.2], [0.5, 0.4, 0.9, 0.2], [0.5, 0.6, 0.9, 0.2],
                          [0.5, 0.8, 0.9, 0.2], [0.2, 0.5, 0.3, 0.8], [0.5, 0.5, 0.3, 0.8], [0.8, 0.5, 0.3, 0.8],
                          [0.5, 0.2, 0.9, 0.2], [0.35, 0.2, 0.6, 0.2], [0.5, 0.6, 0.9, 0.2], [0.5, 0.5, 0.1, 0.1]])
    logits = F.one_hot(labels, NO_OBJECT + 1).float() * 6.0
    logits[10, 5] = 4.0  # the second spanning cell is a maybe
    logits = logits.repeat(b, 1, 1) + 0.1 * _rand(b, 12, NO_OBJECT + 1)
    if b > 1:  # second crop: no table box and no header; third: no columns found
        logits[1, [0, 8], NO_OBJECT] = 9.0
    if b > 2:
        logits[2, 5:8, NO_OBJECT] = 9.0
    return logits, boxes + 0.01 * _rand(b, 12, 4, k=1)

_pixels = lambda b, h, w, k=0: (_rand(b, 3, h, w, k=k), torch.zeros(b, h, w, dtype=torch.bool))
_first = lambda outputs: tuple(t[0] for t in outputs)

_targets = lambda: [{"labels": torch.tensor([2, 2, 1]), "boxes": _rand(3, 4, k=11) * 0.5 + 0.25},
                    {"labels": torch.tensor([0, 5]), "boxes": _rand(2, 4, k=12) * 0.5 + 0.25}]

_CFG = get_config("tatr-tiny")
_overlapping_rows = lambda: (_grid_inputs(6, 3)[0][[0, 1, 1, 2, 3, 4]] + torch.tensor([0.0, 3.0, 0.0, 3.0]),
                             torch.tensor([0.9, 0.8, 0.7, 0.95, 0.6, 0.85]))

CASES = {
    "TinyResNet": lambda: (TinyResNet(), _pixels(2, 40, 56), _pixels(2, 42, 58)),
    "PositionEmbeddingSine": lambda: (PositionEmbeddingSine(16), (torch.zeros(2, 5, 7, dtype=torch.bool),),
                                      (torch.zeros(3, 6, 9, dtype=torch.bool),)),
    "TableTransformer": lambda: (TableTransformer(_CFG).eval(), (_rand(2, 3, 40, 56),)),
    "TableTransformer_train": lambda: (TableTransformer(_CFG).train(), (_rand(2, 3, 40, 56, k=4),)),
    "TracingWrapper": lambda: (TracingWrapper(TableTransformer(_CFG).eval()), _pixels(2, 40, 56)),
    "HungarianMatcher": lambda: (HungarianMatcher(), (*_model_outputs(), _targets())),
    "greedy_match": lambda: (greedy_match, (torch.tensor([[0.9, 0.1, 0.0, 0.0], [0.2, 0.7, 0.1, 0.0],
                                                          [0.0, 0.3, 0.2, 0.1]]),)),
    "resize_table_crop": lambda: (resize_table_crop, (_rand(2, 3, 90, 70),), (_rand(2, 3, 30, 44),)),
    "postprocess_structure": lambda: (postprocess_structure, (*_model_outputs(), torch.tensor([[480, 640], [300, 520]])),
                                      (*_model_outputs(3, 16, k=2), torch.tensor([[480, 640], [300, 520], [200, 260]]))),
    "filter_by_confidence": lambda: (filter_by_confidence, (_rand(12) * 0.45, torch.arange(12) % 6,
                                                            _rand(12, 4, k=3), torch.tensor([0.5] * 6))),
    "suppress_overlaps": lambda: (suppress_overlaps, _overlapping_rows()),
    "cells_from_rows_and_columns": lambda: (cells_from_rows_and_columns, _grid_inputs(5, 4), _grid_inputs(7, 3)),
    "merge_spanning_cells": lambda: (merge_spanning_cells, (_cells(), _span_boxes(_cells()), torch.tensor([0.9, 0.4, 0.8]))),
    "cells_to_records": lambda: (cells_to_records, (_cells(3, 2), torch.tensor([True, False, False]))),
    "StructurePostProcessor": lambda: (StructurePostProcessor(_CFG), (*_first(_structure_outputs()), torch.tensor([480.0, 640.0]))),
    "TableGridDecoder": lambda: (TableGridDecoder(_CFG), (*_structure_outputs(3), torch.tensor([[400, 560], [380, 530], [420, 600]]))),
}

TRACED = {
    "TracingWrapper": lambda: (TracingWrapper(TableTransformer(_CFG).eval()), _pixels(1, 48, 64)),
    "PositionEmbeddingSine": lambda: (PositionEmbeddingSine(16), (torch.zeros(1, 6, 8, dtype=torch.bool),)),
    "postprocess_structure": lambda: (postprocess_structure, (*_model_outputs(1), torch.tensor([[480, 640]]))),
    "cells_from_rows_and_columns": lambda: (cells_from_rows_and_columns, _grid_inputs(5, 4)),
    "span_extents": lambda: (span_extents, (_cells(), _span_boxes(_cells()))),
    "mark_header_rows": lambda: (mark_header_rows, (_grid_inputs(5, 4)[0], torch.tensor([[0.0, 0.0, 320.0, 85.0]]))),
    "StructurePostProcessor": lambda: (StructurePostProcessor(_CFG), (*_first(_model_outputs(k=5)), torch.tensor([480.0, 640.0]))),
    "MLP": lambda: (MLP(32, 32, 4, 3).eval(), (_rand(12, 32),)),
}
