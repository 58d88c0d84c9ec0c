"""Scene-text detection and recognition in the style of PaddleOCR / mmocr / the clovaai
deep-text-recognition-benchmark: a charset dictionary and label converter, CRNN and attention
decoders, CTC greedy and prefix-beam decoding, DB-net heads with bitmap-to-box post-processing,
polygon scoring and unclipping, rotated-crop rectification through affine grids, variable-width
crop collation, and a character bigram language model used to rescore n-best lists."""
import functools
import logging
import math
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("ocr")
logger.addHandler(logging.NullHandler())

BLANK = 0
GO_TOKEN = 0
EOS = 1
DEFAULT_CHARSET = "0123456789abcdefghijklmnopqrstuvwxyz"
MAX_TEXT_LEN = 6
WIDTH_DIVISOR = 4
DET_MULTIPLE = 4
BEAM_WIDTH = 3
LM_WEIGHT = 0.3
DEBUG_VIS = False
VIS_EVERY = 50
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
LEXICON = ("stop", "exit", "open", "hotel", "cafe", "bank", "taxi", "street")

RESIZE = {
    "bilinear": functools.partial(F.interpolate, mode="bilinear", align_corners=False),
    "nearest": functools.partial(F.interpolate, mode="nearest"),
}


# --------------------------------------------------------------------------- charset / labels

class CharsetDict:
    """Index 0 is reserved for the CTC blank (or the GO token of attention decoders)."""

    def __init__(self, chars: Sequence[str] = DEFAULT_CHARSET, reserved: int = 1):
        self.chars = list(chars)
        self.reserved = reserved
        self.char2idx = {c: i + reserved for i, c in enumerate(self.chars)}
        self.idx2char = {i: c for c, i in self.char2idx.items()}

    def __len__(self) -> int:
        return len(self.chars) + self.reserved

    @property
    def num_classes(self) -> int:
        return len(self)

    def encode(self, text: str) -> List[int]:
        return [self.char2idx[c] for c in text.lower() if c in self.char2idx]

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(self.idx2char.get(int(i), "") for i in ids)

CHARSET = CharsetDict()
SMALL_CHARSET = CharsetDict("abcde")

@dataclass
class RecConfig:
    in_channels: int = 1
    hidden: int = 12
    img_height: int = 16
    max_width: int = 32
    max_len: int = MAX_TEXT_LEN
    charset: CharsetDict = field(default_factory=lambda: CHARSET)

    @property
    def num_classes(self) -> int:
        return self.charset.num_classes

@dataclass
class DBConfig:
    thresh: float = 0.3
    box_thresh: float = 0.4
    unclip_ratio: float = 1.5
    max_candidates: int = 3
    min_size: int = 2

@torch.compile
def encode_batch(texts: List[str], max_len: int = MAX_TEXT_LEN, charset: CharsetDict = CHARSET):
    lengths = torch.tensor([min(len(charset.encode(t)), max_len) for t in texts], dtype=torch.long)
    targets = torch.zeros(len(texts), max_len, dtype=torch.long)
    for i, text in enumerate(texts):
        ids = charset.encode(text)
        if len(ids) > max_len:
            logger.warning("label %r longer than %d characters, truncating", text, max_len)  # expect: FL000 GB0291
            ids = ids[:max_len]
        if ids:
            targets[i, : len(ids)] = torch.tensor(ids)
    return targets, lengths


# --------------------------------------------------------------------------- CTC decoding

def _collapse_mask(ids: torch.Tensor) -> torch.Tensor:
    keep = torch.ones_like(ids, dtype=torch.bool)
    keep[:, 1:] = ids[:, 1:] != ids[:, :-1]
    return keep & (ids != BLANK)

@torch.compile
def ctc_greedy_mask(log_probs: torch.Tensor):
    """(B, T, C) log-probs -> ids with dropped steps set to -1, plus a mean confidence."""
    probs, ids = log_probs.max(dim=-1)
    keep = _collapse_mask(ids)
    conf = (probs * keep).sum(1) / keep.sum(1).clamp_min(1)
    return ids.masked_fill(~keep, -1), conf.exp()

def _ids_to_text(row: torch.Tensor, charset: CharsetDict) -> str:
    out, prev = [], BLANK
    for idx in row.tolist():  # expect: FL000 GB0033
        if idx != prev and idx != BLANK:
            out.append(idx)
        prev = idx
    return charset.decode(out)

@torch.compile
def ctc_greedy_decode(log_probs: torch.Tensor, charset: CharsetDict = CHARSET):
    scores, ids = log_probs.softmax(-1).max(-1)
    texts = [_ids_to_text(row, charset) for row in ids]
    confidences = [float(s.prod()) for s in scores]  # expect: FL000 GB0124
    return texts, confidences

def _log_add(a: float, b: float) -> float:
    if a == -math.inf:
        return b
    if b == -math.inf:
        return a
    return max(a, b) + math.log1p(math.exp(-abs(a - b)))

def prefix_beam_search(lp: np.ndarray, beam: int) -> Tuple[List[int], float]:
    beams = {(): (0.0, -math.inf)}  # prefix -> (log p ending in blank, log p ending in non-blank)
    for t in range(lp.shape[0]):
        candidates = np.argsort(lp[t])[::-1][:beam]
        nxt: Dict[tuple, Tuple[float, float]] = {}
        for prefix, (pb, pnb) in beams.items():
            total = _log_add(pb, pnb)
            for c in candidates:
                p = float(lp[t, c])  # expect: FL000 GB0033
                if c == BLANK:
                    b_, nb_ = nxt.get(prefix, (-math.inf, -math.inf))
                    nxt[prefix] = (_log_add(b_, total + p), nb_)
                    continue
                ext = prefix + (int(c),)
                b_, nb_ = nxt.get(ext, (-math.inf, -math.inf))
                if prefix and prefix[-1] == c:
                    nxt[ext] = (b_, _log_add(nb_, pb + p))
                    sb, snb = nxt.get(prefix, (-math.inf, -math.inf))
                    nxt[prefix] = (sb, _log_add(snb, pnb + p))
                else:
                    nxt[ext] = (b_, _log_add(nb_, total + p))
        ranked = sorted(nxt.items(), key=lambda kv: _log_add(*kv[1]), reverse=True)
        beams = dict(ranked[:beam])
    best, (pb, pnb) = max(beams.items(), key=lambda kv: _log_add(*kv[1]))
    return list(best), _log_add(pb, pnb)

@torch.compile
def ctc_beam_decode(logits: torch.Tensor, beam_width: int = BEAM_WIDTH, charset: CharsetDict = SMALL_CHARSET):
    log_probs = F.log_softmax(logits.float(), dim=-1)
    texts, scores = [], []
    for lp in log_probs.detach().cpu().numpy():
        ids, score = prefix_beam_search(lp, beam_width)
        texts.append(charset.decode(ids))
        scores.append(score)
    return texts, torch.tensor(scores)


# --------------------------------------------------------------------------- language model

class CharBigramLM(nn.Module):
    """Add-alpha bigram table over the charset; index 0 doubles as the word boundary."""

    def __init__(self, charset: CharsetDict = CHARSET, corpus: Sequence[str] = LEXICON, alpha: float = 0.5):
        super().__init__()
        n = charset.num_classes
        counts = np.full((n, n), alpha, dtype=np.float64)
        for word in corpus:
            ids = [BLANK] + charset.encode(word)
            for a, b in zip(ids[:-1], ids[1:]):
                counts[a, b] += 1.0
        table = np.log(counts / counts.sum(axis=1, keepdims=True))
        self.register_buffer("log_table", torch.from_numpy(table).float())

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        prev = F.pad(ids[:, :-1], (1, 0), value=BLANK)
        lp = self.log_table[prev, ids]
        mask = torch.arange(ids.shape[1], device=ids.device)[None, :] < lengths[:, None]
        return (lp * mask).sum(1)

def _pick_best(candidates: List[str], total: torch.Tensor) -> str:
    return candidates[total.argmax().item()]  # expect: FL000 GB0124

@torch.compile
def rescore_nbest(candidates: List[str], am_scores: torch.Tensor, lm: CharBigramLM,
                  weight: float = LM_WEIGHT, length_norm: bool = True):
    ids, lengths = encode_batch(candidates)
    lm_scores = lm(ids, lengths)
    if length_norm:
        lm_scores = lm_scores / lengths.clamp_min(1).float()
    total = am_scores + weight * lm_scores
    return _pick_best(candidates, total), total


# --------------------------------------------------------------------------- recognisers

def conv_bn_relu(cin: int, cout: int, kernel=3, stride=1, padding=1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, kernel, stride, padding, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

class BidirectionalLSTM(nn.Module):
    def __init__(self, n_in: int, hidden: int, n_out: int):
        super().__init__()
        self.rnn = nn.LSTM(n_in, hidden, bidirectional=True)
        self.embedding = nn.Linear(hidden * 2, n_out)

    def forward(self, x):  # (T, B, C)
        recurrent, _ = self.rnn(x)  # expect: FL000 GB0014
        t, b, h = recurrent.shape
        return self.embedding(recurrent.view(t * b, h)).view(t, b, -1)

class CRNN(nn.Module):
    def __init__(self, cfg: RecConfig = RecConfig()):
        super().__init__()
        ch = cfg.hidden
        self.cnn = nn.Sequential(
            conv_bn_relu(cfg.in_channels, ch), nn.MaxPool2d(2, 2),
            conv_bn_relu(ch, ch), nn.MaxPool2d(2, 2),
            conv_bn_relu(ch, ch), nn.MaxPool2d((2, 1), (2, 1)),
            conv_bn_relu(ch, ch, kernel=(2, 1), padding=0),
        )
        self.rnn = nn.Sequential(BidirectionalLSTM(ch, ch, ch), BidirectionalLSTM(ch, ch, cfg.num_classes))

    def forward(self, x):
        conv = self.cnn(x)
        b, c, h, w = conv.shape
        assert h == 1, "the height of conv must be 1"
        seq = conv.squeeze(2).permute(2, 0, 1)  # (T, B, C)
        return F.log_softmax(self.rnn(seq), dim=2)

class AttentionCell(nn.Module):
    def __init__(self, in_ch: int, hidden: int, num_embeddings: int):
        super().__init__()
        self.i2h = nn.Linear(in_ch, hidden, bias=False)
        self.h2h = nn.Linear(hidden, hidden)
        self.score = nn.Linear(hidden, 1, bias=False)
        self.rnn = nn.GRUCell(in_ch + num_embeddings, hidden)

    def forward(self, prev_hidden, batch_H, char_onehots):
        proj = self.i2h(batch_H)
        e = self.score(torch.tanh(proj + self.h2h(prev_hidden).unsqueeze(1)))
        alpha = F.softmax(e, dim=1)
        context = torch.bmm(alpha.transpose(1, 2), batch_H).squeeze(1)
        hidden = self.rnn(torch.cat([context, char_onehots], 1), prev_hidden)
        return hidden, alpha

def _all_finished(ids: torch.Tensor, eos: int = EOS) -> bool:
    return bool((ids == eos).all())  # expect: FL000 GB0124

class AttentionHead(nn.Module):
    def __init__(self, in_ch: int = 10, hidden: int = 12, num_classes: int = 7, max_len: int = MAX_TEXT_LEN):
        super().__init__()
        self.cell = AttentionCell(in_ch, hidden, num_classes)
        self.generator = nn.Linear(hidden, num_classes)
        self.num_classes, self.hidden_size, self.max_len = num_classes, hidden, max_len

    def _onehot(self, ids: torch.Tensor) -> torch.Tensor:
        return F.one_hot(ids, self.num_classes).to(torch.float32)

    def forward(self, batch_H: torch.Tensor, text: Optional[torch.Tensor] = None):
        b = batch_H.shape[0]
        hidden = batch_H.new_zeros(b, self.hidden_size)
        next_ids = torch.full((b,), GO_TOKEN, dtype=torch.long, device=batch_H.device)
        steps = self.max_len if text is None else text.shape[1]
        outputs = []
        for t in range(steps):
            inp = next_ids if text is None else text[:, t]
            hidden, _ = self.cell(hidden, batch_H, self._onehot(inp))
            logits = self.generator(hidden)
            outputs.append(logits)
            next_ids = logits.argmax(-1)
            if text is None and _all_finished(next_ids):
                break
        return torch.stack(outputs, 1)


# --------------------------------------------------------------------------- resizing / collation

def _round_up(x: int, divisor: int) -> int:
    return -(-x // divisor) * divisor

def _resize_height(crop: torch.Tensor, height: int, mode: str = "bilinear") -> torch.Tensor:
    c, h, w = crop.shape
    new_w = max(_round_up(w * height // h, 1), 2)
    return RESIZE[mode](crop[None], size=(height, new_w))[0]

@torch.compile
def collate_crops(crops: List[torch.Tensor], height: int = 8, pad_value: float = 0.0,
                  divisor: int = WIDTH_DIVISOR):
    crops = [c if c.shape[-2] == height else _resize_height(c, height) for c in crops]  # expect: FL301
    widths = [c.shape[-1] for c in crops]
    max_w = _round_up(max(widths), divisor)
    batch = crops[0].new_full((len(crops), crops[0].shape[0], height, max_w), pad_value)
    mask = torch.zeros(len(crops), max_w, dtype=torch.bool)
    for i, crop in enumerate(crops):
        batch[i, :, :, : crop.shape[-1]] = crop
        mask[i, : crop.shape[-1]] = True
    return batch, mask

class KeepRatioResize(nn.Module):
    def __init__(self, height: int = 8, max_width: int = 32, mode: str = "bilinear"):
        super().__init__()
        self.height, self.max_width = height, max_width
        self.resize = RESIZE[mode]

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        h, w = img.shape[-2:]
        if w * self.height > self.max_width * h:  # expect: FL301
            out = self.resize(img, size=(self.height, self.max_width))
        else:
            new_w = -(-self.height * w // h)
            out = F.pad(self.resize(img, size=(self.height, new_w)), (0, self.max_width - new_w))
        return (out - 0.5) / 0.5

class RecognitionPipeline(nn.Module):
    POSTPROCESS = {"greedy": "_post_greedy", "mask": "_post_mask"}

    def __init__(self, cfg: RecConfig = RecConfig(in_channels=3, img_height=8),
                 decoder: str = "greedy", hooks: Optional[List[Callable]] = None):
        super().__init__()
        self.cfg = cfg
        self.resize = KeepRatioResize(cfg.img_height, cfg.max_width)
        self.encoder = nn.Sequential(conv_bn_relu(cfg.in_channels, cfg.hidden), nn.MaxPool2d((2, 2)),
                                     conv_bn_relu(cfg.hidden, cfg.hidden), nn.AdaptiveAvgPool2d((1, None)))
        self.head = nn.Linear(cfg.hidden, cfg.num_classes)
        self.hooks = list(hooks or [])
        self._post = getattr(self, self.POSTPROCESS[decoder])

    def _post_greedy(self, logits):
        return ctc_greedy_decode(logits.log_softmax(-1), self.cfg.charset)

    def _post_mask(self, logits):
        return ctc_greedy_mask(logits.log_softmax(-1))

    def forward(self, crops: torch.Tensor):
        feats = self.encoder(self.resize(crops)).squeeze(2).transpose(1, 2)  # (B, T, C)
        logits = self.head(feats)
        for hook in self.hooks:
            logits = hook(logits)
        return self._post(logits)


# --------------------------------------------------------------------------- rectification

def _quad_to_theta(quad: torch.Tensor, size_hw) -> torch.Tensor:
    h, w = size_hw
    scale = quad.new_tensor([2.0 / w, 2.0 / h])
    ex, ey = (quad[1] - quad[0]) / 2, (quad[3] - quad[0]) / 2
    center = quad[0] + ex + ey
    lin = torch.stack([ex, ey], dim=1) * scale[:, None]
    return torch.cat([lin, (center * scale - 1)[:, None]], dim=1)

@torch.compile
def crop_quads(image: torch.Tensor, quads: torch.Tensor, out_h: int = 8):
    """PaddleOCR's get_rotate_crop_image, with the perspective warp replaced by an affine grid."""
    crops = []
    for quad in quads:  # (4, 2): tl, tr, br, bl
        width = torch.linalg.norm(quad[1] - quad[0])
        height = torch.linalg.norm(quad[3] - quad[0])
        out_w = max(int(round(float(width / height * out_h))), out_h)  # expect: FL000 GB0124
        theta = _quad_to_theta(quad, image.shape[-2:])
        grid = F.affine_grid(theta[None], [1, image.shape[0], out_h, out_w], align_corners=False)
        crops.append(F.grid_sample(image[None], grid, align_corners=False)[0])
    return collate_crops(crops, out_h)


# --------------------------------------------------------------------------- detection

@torch.compile
def prepare_det_input(img: torch.Tensor, mean=IMAGENET_MEAN, std=IMAGENET_STD, multiple: int = DET_MULTIPLE):
    if img.dtype == torch.uint8:
        img = img.float() / 255.0
    x = (img - torch.tensor(mean).view(-1, 1, 1)) / torch.tensor(std).view(-1, 1, 1)
    h, w = x.shape[-2:]
    pad_h, pad_w = (-h) % multiple, (-w) % multiple
    if pad_h or pad_w:  # expect: FL301
        x = F.pad(x, (0, pad_w, 0, pad_h))
    return x

class DBHead(nn.Module):
    def __init__(self, in_ch: int = 8, k: int = 50):
        super().__init__()
        self.binarize = self._branch(in_ch)
        self.thresh = self._branch(in_ch)
        self.k = k

    @staticmethod
    def _branch(ch: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(ch, ch // 2, 3, padding=1, bias=False), nn.BatchNorm2d(ch // 2),
                             nn.ReLU(inplace=True), nn.ConvTranspose2d(ch // 2, 1, 2, 2), nn.Sigmoid())

    def step_function(self, x, y):
        return torch.reciprocal(1 + torch.exp(-self.k * (x - y)))

    def forward(self, x):
        shrink = self.binarize(x)
        if not self.training:
            return shrink
        thresh = self.thresh(x)
        return torch.cat([shrink, thresh, self.step_function(shrink, thresh)], dim=1)

def polygon_area(poly: torch.Tensor) -> torch.Tensor:
    x, y = poly.unbind(-1)
    return 0.5 * (x * y.roll(-1, -1) - x.roll(-1, -1) * y).sum(-1).abs()

def polygon_perimeter(poly: torch.Tensor) -> torch.Tensor:
    return (poly - poly.roll(-1, -2)).norm(dim=-1).sum(-1)

@torch.compile
def unclip(boxes: torch.Tensor, ratio: float = 1.5) -> torch.Tensor:
    """Expands (N, 4, 2) quads by area * ratio / perimeter, as pyclipper's offset does."""
    distance = polygon_area(boxes) * ratio / polygon_perimeter(boxes).clamp_min(1e-6)
    center = boxes.mean(-2, keepdim=True)
    direction = F.normalize(boxes - center, dim=-1)
    return boxes + direction * distance[:, None, None] * math.sqrt(2)

def _column_segments(bitmap: torch.Tensor, min_size: int) -> List[Tuple[int, int]]:
    cols = bitmap.any(dim=0).to(torch.int8)
    edges = torch.diff(F.pad(cols, (1, 1)))
    starts = torch.nonzero(edges == 1).flatten().tolist()  # expect: FL000 GB0033; FL000 GB0036
    ends = torch.nonzero(edges == -1).flatten().tolist()  # expect: FL000 GB0033; FL000 GB0036
    return [(s, e) for s, e in zip(starts, ends) if e - s >= min_size]

def _segment_box(bitmap: torch.Tensor, x0: int, x1: int) -> torch.Tensor:
    ys = torch.nonzero(bitmap[:, x0:x1].any(dim=1)).flatten()  # expect: FL000 GB0036
    y0, y1 = ys.min().item(), ys.max().item() + 1  # expect: FL000 GB0124
    return torch.tensor([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], dtype=torch.float32)

def box_score_fast(pred: torch.Tensor, box: torch.Tensor) -> float:
    h, w = pred.shape
    xmin = int(box[:, 0].min().clamp(0, w - 1))  # expect: FL000 GB0124
    xmax = int(box[:, 0].max().clamp(0, w - 1))  # expect: FL000 GB0124
    ymin = int(box[:, 1].min().clamp(0, h - 1))  # expect: FL000 GB0124
    ymax = int(box[:, 1].max().clamp(0, h - 1))  # expect: FL000 GB0124
    return pred[ymin: ymax + 1, xmin: xmax + 1].mean().item()  # expect: FL000 GB0124

class DBPostProcess(nn.Module):
    def __init__(self, cfg: DBConfig = DBConfig()):
        super().__init__()
        self.cfg = cfg

    def forward(self, prob: torch.Tensor, dest_sizes: Optional[List[Tuple[int, int]]] = None):
        bitmap = prob[:, 0] > self.cfg.thresh
        results = []
        for b in range(prob.shape[0]):
            boxes, scores = [], []
            for x0, x1 in _column_segments(bitmap[b], self.cfg.min_size)[: self.cfg.max_candidates]:
                box = _segment_box(bitmap[b], x0, x1)
                score = box_score_fast(prob[b, 0], box)
                if score < self.cfg.box_thresh:
                    continue
                box = unclip(box[None], self.cfg.unclip_ratio)[0]
                if dest_sizes is not None:
                    dh, dw = dest_sizes[b]
                    box = box * box.new_tensor([dw / prob.shape[-1], dh / prob.shape[-2]])
                boxes.append(box)
                scores.append(score)
            results.append((torch.stack(boxes) if boxes else prob.new_zeros(0, 4, 2), scores))
        logger.debug("db postprocess: %d boxes", sum(len(r[1]) for r in results))
        return results

class TextDetector(nn.Module):
    def __init__(self, ch: int = 8, cfg: DBConfig = DBConfig()):
        super().__init__()
        self.backbone = nn.Sequential(conv_bn_relu(3, ch), conv_bn_relu(ch, ch, stride=2))
        self.head = DBHead(ch)
        self.post = DBPostProcess(cfg)
        self.num_calls = 0

    def forward(self, img: torch.Tensor, return_boxes: bool = False):
        x = prepare_det_input(img)
        prob = self.head(self.backbone(x))
        self.num_calls += 1  # expect: FL302
        if DEBUG_VIS and self.num_calls % VIS_EVERY == 0:
            logger.info("detector step %d: mean prob %.3f", self.num_calls, prob.mean())
        if return_boxes:
            return self.post(prob)
        return prob


# --------------------------------------------------------------------------- cases

def _rand(*shape, seed: int = 0) -> torch.Tensor:
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed))

def _randn(*shape, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))

def _prob_map(seed: int = 3) -> torch.Tensor:
    prob = _rand(2, 1, 10, 22, seed=seed) * 0.2
    prob[0, 0, 2:6, 3:9] = 0.9
    prob[0, 0, 4:8, 12:19] = 0.8
    prob[1, 0, 3:7, 5:15] = 0.7
    return prob

def _quads() -> torch.Tensor:
    return torch.tensor([[[2.0, 3.0], [14.0, 4.0], [14.0, 9.0], [2.0, 8.0]],
                         [[5.0, 1.0], [11.0, 1.0], [11.0, 6.0], [5.0, 6.0]]])

def _clamp_hook(logits):
    return logits.clamp(-20.0, 20.0)

CASES = {
    "encode_batch": lambda: (encode_batch, (["Stop", "exit9", "streetcafe"],)),
    "ctc_greedy_mask": lambda: (ctc_greedy_mask, (_randn(3, 7, 6, seed=1).log_softmax(-1),)),
    "ctc_greedy_decode": lambda: (ctc_greedy_decode, (_randn(3, 7, 37, seed=2).log_softmax(-1),)),
    "ctc_beam_decode": lambda: (ctc_beam_decode, (_randn(2, 5, 6, seed=4),)),
    "CharBigramLM": lambda: (CharBigramLM(), (torch.tensor([[20, 30, 25, 26], [15, 34, 30, 0]]),
                                              torch.tensor([4, 3]))),
    "rescore_nbest": lambda: (rescore_nbest, (["stop", "st0p", "sfop"], torch.tensor([-1.2, -1.0, -1.4]),
                                              CharBigramLM())),
    "BidirectionalLSTM": lambda: (BidirectionalLSTM(6, 5, 7), (_randn(9, 2, 6, seed=5),)),
    "CRNN": lambda: (CRNN().eval(), (_randn(2, 1, 16, 20, seed=6),)),
    "AttentionCell": lambda: (AttentionCell(10, 12, 7), (_randn(3, 12, seed=7), _randn(3, 5, 10, seed=8),
                                                         F.one_hot(torch.tensor([0, 2, 4]), 7).float())),
    "AttentionHead_infer": lambda: (AttentionHead().eval(), (_randn(3, 5, 10, seed=9),)),
    "AttentionHead_train": lambda: (AttentionHead(), (_randn(3, 5, 10, seed=9), torch.tensor([[0, 2, 3, 4], [0, 5, 6, 2], [0, 3, 3, 1]]))),
    "collate_crops": lambda: (collate_crops, ([_rand(3, 8, 10, seed=11), _rand(3, 8, 14, seed=12)],),
                              ([_rand(3, 6, 9, seed=13), _rand(3, 8, 15, seed=14)],)),
    "KeepRatioResize": lambda: (KeepRatioResize(), (_rand(2, 3, 12, 20, seed=15),), (_rand(2, 3, 10, 50, seed=16),)),
    "RecognitionPipeline_greedy": lambda: (RecognitionPipeline(hooks=[_clamp_hook]).eval(), (_rand(2, 3, 12, 20, seed=17),)),
    "RecognitionPipeline_mask": lambda: (RecognitionPipeline(decoder="mask").eval(), (_rand(2, 3, 12, 20, seed=18),)),
    "crop_quads": lambda: (crop_quads, (_rand(3, 12, 18, seed=20), _quads())),
    "prepare_det_input": lambda: (prepare_det_input, (_rand(2, 3, 12, 20, seed=21),), (_rand(2, 3, 10, 18, seed=22),)),
    "unclip": lambda: (unclip, (_quads(),)),
    "DBHead": lambda: (DBHead(), (_randn(2, 8, 5, 7, seed=23),)),
    "DBPostProcess": lambda: (DBPostProcess(), (_prob_map(),)),
    "DBPostProcess_resized": lambda: (DBPostProcess(), (_prob_map(), [(20, 44), (30, 66)])),
    "TextDetector": lambda: (TextDetector().eval(), (_rand(2, 3, 12, 20, seed=24),)),
    "TextDetector_boxes": lambda: (TextDetector().eval(), (_rand(2, 3, 12, 20, seed=25), True)),
}
