"""Analyzer speed on a realistic 5,000-line model file (issue 2's bar: full analysis
≤ 30 ms median, re-analysis after a one-line edit inside one function ≤ 5 ms).

The file is generated at run time from a fixed seed: ~150 classes and functions drawn
from attention variants, norms, RoPE, MoE, MLPs, losses, sampling loops, embeddings,
masks and blocks, with varied names, hyper-parameters, docstrings and comments, and a
graph break in roughly one in eight of them. Every nn.Module forward is a compile root
(the default), so the whole file is walked.

    python bench/analysis_bench.py [--lines 5000] [--runs 30] [--edits 200] [--profile] [--write PATH]

Full: a fresh Workspace with every module-level cache of the analyzer cleared before each
run. Incremental: one Workspace; each step changes one line inside one function (the edits
accumulate, like typing) and re-analyses the file.

Figures are CPU time of this process (time.process_time): the machine is shared, and other
processes' load inflates wall time (printed too) far more than the analyzer's own work.
"""
from __future__ import annotations

import argparse
import ast
import cProfile
import gc
import importlib
import io
import os
import pkgutil
import pstats
import random
import statistics
import sys
import time

import fuselens.analysis as analysis_package
from fuselens.analysis import Workspace

PATH = "<bench>/model.py"  # not on disk: nothing else is read
TARGET_FULL_MS, TARGET_INCREMENTAL_MS = 30.0, 5.0

PREFIXES = ["Fused", "Gated", "Sparse", "Local", "Causal", "Cross", "Parallel", "Shared", "Grouped", "Scaled",
            "Dynamic", "Cached", "Rotary", "Residual", "Stable", "Fast", "Deep", "Light", "Multi", "Adaptive"]
ACTIVATIONS = ["F.gelu", "F.silu", "F.relu", "torch.tanh", "F.mish"]
BREAKS = [
    'print("shape", {x}.shape)',
    'logger.info("norm %f", {x}.norm().item())',
    "if {x}.sum() > 0:\n{pad}    {x} = {x} * 2",
    "{x} = {x} * float({x}.mean())",
    "warnings.warn(\"slow path\")",
    "stats = {x}.detach().cpu().numpy()",
    "{x} = {x}[{x} > 0]",
    "self.calls += 1",
]
COMMENTS = ["# keep the residual in fp32 for stability", "# (batch, seq, dim) throughout",
            "# see the paper's appendix B", "# TODO: fuse with the projection", "# cheap when seq is short",
            "# mask is additive: 0 keeps, -inf drops", "# matches the reference implementation"]


class Generator:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.used: set[str] = set()

    def name(self, base: str) -> str:
        while True:
            name = f"{self.rng.choice(PREFIXES)}{base}"
            if name in self.used:
                name = f"{name}V{len(self.used)}"
            if name not in self.used:
                self.used.add(name)
                return name

    def doc(self, what: str) -> str:
        extra = self.rng.choice(["", "\n\n    Shapes: input (B, T, D), output (B, T, D).",
                                 "\n\n    Works in bf16; the softmax runs in fp32.",
                                 "\n\n    Args:\n        dim: model width.\n        eps: numerical floor."])
        return f'    """{what}.{extra}\n    """\n'

    def comment(self, pad: str) -> str:
        return f"{pad}{self.rng.choice(COMMENTS)}\n" if self.rng.random() < 0.4 else ""

    def maybe_break(self, pad: str, var: str = "x") -> str:
        if self.rng.random() < 0.13:
            return pad + self.rng.choice(BREAKS).format(x=var, pad=pad) + "\n"
        return ""

    # --- templates: each returns source text for one class or function ----------------------
    def norm(self) -> str:
        name, eps = self.name("RMSNorm" if self.rng.random() < 0.5 else "LayerNorm"), self.rng.choice(
            ["1e-5", "1e-6", "1e-8"])
        body = ("        variance = x.float().pow(2).mean(-1, keepdim=True)\n"
                "        x = x * torch.rsqrt(variance + self.eps)\n" if "RMS" in name else
                "        mean = x.mean(-1, keepdim=True)\n        var = (x - mean).pow(2).mean(-1, keepdim=True)\n"
                "        x = (x - mean) / torch.sqrt(var + self.eps)\n")
        return (f"class {name}(nn.Module):\n{self.doc('Normalises the last dimension')}\n"
                f"    def __init__(self, dim: int, eps: float = {eps}):\n        super().__init__()\n"
                f"        self.eps = eps\n        self.weight = nn.Parameter(torch.ones(dim))\n\n"
                f"    def forward(self, x):\n{self.comment('        ')}{body}{self.maybe_break('        ')}"
                f"        return x.type_as(self.weight) * self.weight\n")

    def rope(self) -> str:
        name, base = self.name("RotaryEmbedding"), self.rng.choice(["10000.0", "500000.0", "1000000.0"])
        helper = f"rotate_half_{len(self.used)}"
        return (f"def {helper}(x):\n    x1, x2 = x.chunk(2, dim=-1)\n    return torch.cat((-x2, x1), dim=-1)\n\n\n"
                f"class {name}(nn.Module):\n{self.doc('Rotary position embedding')}\n"
                f"    def __init__(self, head_dim: int, max_len: int = 4096, base: float = {base}):\n"
                f"        super().__init__()\n"
                f"        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))\n"
                f"        t = torch.arange(max_len).float()\n        freqs = torch.outer(t, inv_freq)\n"
                f"        self.register_buffer(\"cos\", freqs.cos(), persistent=False)\n"
                f"        self.register_buffer(\"sin\", freqs.sin(), persistent=False)\n\n"
                f"    def forward(self, q, k, offset: int = 0):\n        seq_len = q.shape[-2]\n"
                f"        cos = self.cos[offset:offset + seq_len].repeat(1, 2)\n"
                f"        sin = self.sin[offset:offset + seq_len].repeat(1, 2)\n{self.comment('        ')}"
                f"{self.maybe_break('        ', 'q')}"
                f"        return q * cos + {helper}(q) * sin, k * cos + {helper}(k) * sin\n")

    def attention(self) -> str:
        name = self.name(self.rng.choice(["Attention", "SelfAttention", "GQAttention", "WindowAttention"]))
        heads, window = self.rng.choice([4, 8, 16, 32]), self.rng.choice([None, 128, 256, 1024])
        mask_code = ("        if mask is not None:\n            scores = scores.masked_fill(~mask, float(\"-inf\"))\n")
        if window:
            mask_code += (f"        if t > {window}:\n            band = torch.ones(t, t, dtype=torch.bool, "
                          f"device=x.device).triu(-{window})\n"
                          f"            scores = scores.masked_fill(~band, float(\"-inf\"))\n")
        return (f"class {name}(nn.Module):\n{self.doc('Multi-head attention with a fused QKV projection')}\n"
                f"    def __init__(self, dim: int, n_heads: int = {heads}, dropout: float = 0.0):\n"
                f"        super().__init__()\n        self.n_heads = n_heads\n        self.head_dim = dim // n_heads\n"
                f"        self.qkv = nn.Linear(dim, 3 * dim, bias=False)\n        self.out = nn.Linear(dim, dim)\n"
                f"        self.dropout = nn.Dropout(dropout)\n\n"
                f"    def forward(self, x, mask=None):\n        b, t, d = x.shape\n{self.comment('        ')}"
                f"        q, k, v = self.qkv(x).view(b, t, 3, self.n_heads, self.head_dim).unbind(2)\n"
                f"        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)\n"
                f"        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)\n{mask_code}"
                f"{self.maybe_break('        ', 'scores')}"
                f"        attn = self.dropout(F.softmax(scores.float(), dim=-1).type_as(q))\n"
                f"        y = (attn @ v).transpose(1, 2).reshape(b, t, d)\n        return self.out(y)\n")

    def mlp(self) -> str:
        name, act, mult = self.name(self.rng.choice(["SwiGLU", "GeGLU", "MLP", "FeedForward"])), self.rng.choice(
            ACTIVATIONS), self.rng.choice([2, 4, 8])
        gated = "GLU" in name
        init = (f"        self.gate = nn.Linear(dim, hidden, bias=False)\n" if gated else "")
        body = (f"        h = {act}(self.gate(x)) * self.up(x)\n" if gated else f"        h = {act}(self.up(x))\n")
        return (f"class {name}(nn.Module):\n{self.doc('Position-wise feed-forward block')}\n"
                f"    def __init__(self, dim: int, hidden: int = 0):\n        super().__init__()\n"
                f"        hidden = hidden or {mult} * dim\n{init}        self.up = nn.Linear(dim, hidden, bias=False)\n"
                f"        self.down = nn.Linear(hidden, dim, bias=False)\n\n"
                f"    def forward(self, x):\n{self.comment('        ')}{body}{self.maybe_break('        ', 'h')}"
                f"        return self.down(h)\n")

    def moe(self) -> str:
        name, experts, top_k = self.name("MoE"), self.rng.choice([4, 8, 16]), self.rng.choice([1, 2])
        return (f"class {name}(nn.Module):\n{self.doc('Top-k routed mixture of experts')}\n"
                f"    def __init__(self, dim: int, n_experts: int = {experts}, top_k: int = {top_k}):\n"
                f"        super().__init__()\n        self.top_k = top_k\n        self.router = nn.Linear(dim, n_experts)\n"
                f"        self.experts = nn.ModuleList([nn.Linear(dim, dim) for _ in range(n_experts)])\n\n"
                f"    def forward(self, x):\n        logits = self.router(x)\n"
                f"        weights, chosen = logits.softmax(-1).topk(self.top_k, dim=-1)\n"
                f"        out = torch.zeros_like(x)\n{self.comment('        ')}"
                f"        for i, expert in enumerate(self.experts):\n"
                f"            routed = (chosen == i).any(-1)\n"
                f"            if routed.any():\n"
                f"                out[routed] = out[routed] + expert(x[routed])\n"
                f"        return out\n"
                if self.rng.random() < 0.5 else
                f"class {name}(nn.Module):\n{self.doc('Dense mixture of experts (every expert, weighted)')}\n"
                f"    def __init__(self, dim: int, n_experts: int = {experts}):\n"
                f"        super().__init__()\n        self.router = nn.Linear(dim, n_experts)\n"
                f"        self.experts = nn.ModuleList([nn.Linear(dim, dim) for _ in range(n_experts)])\n\n"
                f"    def forward(self, x):\n        weights = self.router(x).softmax(-1)\n"
                f"        outs = torch.stack([expert(x) for expert in self.experts], dim=-1)\n"
                f"{self.maybe_break('        ', 'outs')}"
                f"        return (outs * weights.unsqueeze(-2)).sum(-1)\n")

    def loss(self) -> str:
        kind = self.rng.choice(["cross_entropy", "z_loss", "focal", "contrastive"])
        name = f"{kind}_{self.name('Loss').lower()}"
        bodies = {
            "cross_entropy": "    logp = F.log_softmax(logits.float(), dim=-1)\n"
                             "    nll = -logp.gather(-1, target.unsqueeze(-1)).squeeze(-1)\n"
                             "    smooth = -logp.mean(-1)\n"
                             "    return ((1 - smoothing) * nll + smoothing * smooth).mean()\n",
            "z_loss": "    z = torch.logsumexp(logits.float(), dim=-1)\n    return 1e-4 * (z ** 2).mean()\n",
            "focal": "    p = torch.sigmoid(logits)\n    ce = F.binary_cross_entropy_with_logits(logits, target.float(), "
                     "reduction=\"none\")\n    p_t = p * target + (1 - p) * (1 - target)\n"
                     "    return (ce * (1 - p_t) ** gamma).mean()\n",
            "contrastive": "    a = F.normalize(logits, dim=-1)\n    b = F.normalize(target.float(), dim=-1)\n"
                           "    sim = a @ b.t() / tau\n    labels = torch.arange(sim.shape[0], device=sim.device)\n"
                           "    return F.cross_entropy(sim, labels)\n",
        }
        decorator = "@torch.compile\n" if self.rng.random() < 0.5 else ""
        return (f"{decorator}def {name}(logits, target, smoothing: float = 0.1, gamma: float = 2.0, "
                f"tau: float = 0.07):\n{self.doc(kind.replace('_', ' ').capitalize() + ' loss')}"
                f"{self.maybe_break('    ', 'logits')}{bodies[kind]}")

    def sampler(self) -> str:
        name = f"sample_{self.name('Tokens').lower()}"
        return (f"@torch.no_grad()\ndef {name}(model, tokens, steps: int = 32, temperature: float = 0.8, "
                f"top_k: int = 50, top_p: float = 0.9):\n{self.doc('Autoregressive sampling')}"
                f"    for _ in range(steps):\n        logits = model(tokens)[:, -1] / temperature\n"
                f"        values, _ = torch.topk(logits, top_k)\n"
                f"        logits = logits.masked_fill(logits < values[:, -1:], float(\"-inf\"))\n"
                f"        probs = F.softmax(logits, dim=-1)\n"
                f"        sorted_probs, order = probs.sort(descending=True)\n"
                f"        keep = sorted_probs.cumsum(-1) - sorted_probs < top_p\n"
                f"        probs = torch.zeros_like(probs).scatter(-1, order, sorted_probs * keep)\n"
                f"        nxt = torch.multinomial(probs / probs.sum(-1, keepdim=True), 1)\n"
                f"        tokens = torch.cat([tokens, nxt], dim=1)\n"
                f"        if (nxt == EOS_ID).all():\n            break\n    return tokens\n")

    def embedding(self) -> str:
        name = self.name("Embedding")
        return (f"class {name}(nn.Module):\n{self.doc('Token embedding with a learned scale')}\n"
                f"    def __init__(self, vocab: int, dim: int):\n        super().__init__()\n"
                f"        self.table = nn.Embedding(vocab, dim)\n        self.scale = math.sqrt(dim)\n\n"
                f"    def forward(self, tokens):\n{self.maybe_break('        ', 'tokens')}"
                f"        return self.table(tokens) * self.scale\n")

    def mask_fn(self) -> str:
        name = f"causal_mask_{self.name('Mask').lower()}"
        return (f"def {name}(t: int, device=None, window: int = 0):\n{self.doc('Boolean causal mask')}"
                f"    mask = torch.ones(t, t, dtype=torch.bool, device=device).tril()\n"
                f"    if window > 0:\n        mask = mask & torch.ones_like(mask).triu(-window)\n    return mask\n")

    def block(self, attention: str, mlp: str, norm: str) -> str:
        name = self.name("Block")
        return (f"class {name}(nn.Module):\n{self.doc('Pre-norm transformer block')}\n"
                f"    def __init__(self, dim: int):\n        super().__init__()\n"
                f"        self.norm1 = {norm}(dim)\n        self.norm2 = {norm}(dim)\n"
                f"        self.attn = {attention}(dim)\n        self.mlp = {mlp}(dim)\n"
                f"        self.calls = 0\n\n"
                f"    def forward(self, x, mask=None):\n{self.comment('        ')}"
                f"        x = x + self.attn(self.norm1(x), mask)\n{self.maybe_break('        ')}"
                f"        return x + self.mlp(self.norm2(x))\n")

    def model(self, blocks: list[str], norm: str, embedding: str) -> str:
        name = self.name("Transformer")
        chosen = self.rng.sample(blocks, min(4, len(blocks)))
        layers = ", ".join(f"{block}(dim)" for block in chosen)
        return (f"class {name}(nn.Module):\n{self.doc('Decoder-only language model')}\n"
                f"    def __init__(self, vocab: int = 32000, dim: int = 512):\n        super().__init__()\n"
                f"        self.embed = {embedding}(vocab, dim)\n"
                f"        self.layers = nn.ModuleList([{layers}])\n"
                f"        self.norm = {norm}(dim)\n        self.head = nn.Linear(dim, vocab, bias=False)\n\n"
                f"    def forward(self, tokens):\n        x = self.embed(tokens)\n"
                f"        mask = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool, device=x.device).tril()\n"
                f"        for layer in self.layers:\n            x = layer(x, mask)\n"
                f"{self.maybe_break('        ')}        return self.head(self.norm(x))\n")


HEADER = '''"""A generated model zoo for the analyzer benchmark: attention variants, norms, RoPE,
MoE, MLPs, losses, sampling, all in one file."""
import logging
import math
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

logger = logging.getLogger(__name__)
EOS_ID = 2
'''


def generate(lines: int = 5000, seed: int = 1234) -> str:
    """A realistic single-file model zoo of about `lines` lines (never fewer)."""
    gen = Generator(seed)
    parts = [HEADER]
    norms, attentions, mlps, blocks, embeddings = [], [], [], [], []
    count = HEADER.count("\n")
    while count < lines:
        kind = gen.rng.choice(["norm", "rope", "attention", "attention", "mlp", "moe", "loss", "sampler",
                               "embedding", "mask", "block", "block", "model"])
        if kind == "block" and not (attentions and mlps and norms):
            kind = "attention" if not attentions else ("mlp" if not mlps else "norm")
        if kind == "model" and not (blocks and embeddings):
            kind = "block" if not blocks and attentions and mlps and norms else "embedding"
            if kind == "block" and not (attentions and mlps and norms):
                kind = "norm"
        if kind == "block":
            text = gen.block(gen.rng.choice(attentions), gen.rng.choice(mlps), gen.rng.choice(norms))
        elif kind == "model":
            text = gen.model(blocks, gen.rng.choice(norms), gen.rng.choice(embeddings))
        else:
            text = getattr(gen, {"mask": "mask_fn"}.get(kind, kind))()
        declared = next(line.split()[1].split("(")[0] for line in text.splitlines()
                        if line.startswith(("class ", "def ")))
        {"norm": norms, "attention": attentions, "mlp": mlps, "block": blocks, "moe": mlps,
         "embedding": embeddings}.get(kind, []).append(declared)
        parts.append("\n\n" + text)
        count += text.count("\n") + 2
    return "".join(parts)


def _module_caches() -> list[dict]:
    """Every module-level `_..._cache` dict of the analyzer (parse, class attributes, ...),
    found by name so that a cache added later is cleared too."""
    caches = []
    for info in pkgutil.iter_modules(analysis_package.__path__):
        module = importlib.import_module(f"{analysis_package.__name__}.{info.name}")
        caches += [value for name, value in vars(module).items()
                   if name.startswith("_") and name.endswith("_cache") and isinstance(value, dict)]
    return caches


def _clear_module_caches() -> None:
    for cache in _module_caches():
        cache.clear()


class Samples:
    """Milliseconds of CPU time (the figure) and of wall time, one pair per timed call."""

    def __init__(self) -> None:
        self.cpu: list[float] = []
        self.wall: list[float] = []

    def time(self, function, *args):
        cpu, wall = time.process_time(), time.perf_counter()
        result = function(*args)
        self.cpu.append((time.process_time() - cpu) * 1000)
        self.wall.append((time.perf_counter() - wall) * 1000)
        return result


def measure_full(text: str, runs: int, cold: bool = True) -> Samples:
    samples = Samples()
    for _ in range(runs):
        if cold:
            _clear_module_caches()
        workspace = Workspace()
        samples.time(workspace.analyze_file, PATH, text)
    return samples


def edit_sites(text: str, init: bool = False) -> list[int]:
    """0-based lines holding a one-line assignment inside a function: editing one keeps the
    file valid and touches exactly one function. `__init__` methods are measured apart
    (`init=True`): they define attribute types, so an edit there is an interface change."""
    sites = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (node.name == "__init__") == init:
            for statement in ast.walk(node):
                if isinstance(statement, ast.Assign) and statement.lineno == statement.end_lineno \
                        and statement.col_offset >= 8:
                    sites.append(statement.lineno - 1)
    return sorted(set(sites))


def one_line_edit(line: str, rng: random.Random) -> str:
    """Wrap the value in parentheses, append a comment, or change a number; the line stays
    valid Python (a comment appended earlier stays outside the parentheses)."""
    choice = rng.randrange(3)
    if choice == 0 and " = " in line:
        code, hash_, comment = line.rstrip("\n").partition("  #")
        target, value = code.split(" = ", 1)
        return f"{target} = ({value}){hash_}{comment}\n"
    if choice == 1:
        return line.rstrip("\n") + f"  # tweak {rng.randrange(1000)}\n"
    for index, char in enumerate(line):
        if char.isdigit():
            return line[:index] + str((int(char) + 1) % 10) + line[index + 1:]
    return line.rstrip("\n") + "  # edited\n"


def measure_incremental(text: str, edits: int, seed: int = 7, init: bool = False) -> tuple[Samples, int]:
    rng = random.Random(seed)
    lines = text.splitlines(keepends=True)
    sites = edit_sites(text, init)
    workspace = Workspace()
    baseline = len(workspace.analyze_file(PATH, text).findings)
    samples = Samples()
    for _ in range(edits):
        site = rng.choice(sites)
        lines[site] = one_line_edit(lines[site], rng)
        samples.time(workspace.analyze_file, PATH, "".join(lines))
    return samples, baseline


def measure_broken_keystrokes(text: str, edits: int, seed: int = 5) -> Samples:
    """Typing `(` at the end of a line inside a function: the file is briefly invalid. Each
    broken text is timed, then the line is restored (untimed), like typing and undoing."""
    rng = random.Random(seed)
    lines = text.splitlines(keepends=True)
    sites = edit_sites(text)
    workspace = Workspace()
    workspace.analyze_file(PATH, text)
    samples = Samples()
    for _ in range(edits):
        site = rng.choice(sites)
        original = lines[site]
        lines[site] = original.rstrip("\n") + " + (\n"
        samples.time(workspace.analyze_file, PATH, "".join(lines))
        lines[site] = original
        workspace.analyze_file(PATH, "".join(lines))
    return samples


def check_incremental_is_exact(text: str, edits: int = 20, seed: int = 11) -> None:
    """The figures only count if the fast path is right: compare with fresh analyses."""
    rng = random.Random(seed)
    lines = text.splitlines(keepends=True)
    sites = edit_sites(text) + edit_sites(text, init=True)
    workspace = Workspace()
    for _ in range(edits):
        site = rng.choice(sites)
        lines[site] = one_line_edit(lines[site], rng)
        edited = "".join(lines)
        key = lambda report: sorted((f.code, f.span.line, f.span.column, f.message) for f in report.findings)  # noqa: E731
        if key(workspace.analyze_file(PATH, edited)) != key(Workspace().analyze_file(PATH, edited)):
            raise SystemExit(f"incremental result differs from a fresh analysis after editing line {site + 1}")


def profile(label: str, function, *args) -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    function(*args)
    profiler.disable()
    for order, count in (("cumulative", 15), ("tottime", 10)):
        stream = io.StringIO()
        pstats.Stats(profiler, stream=stream).sort_stats(order).print_stats(count)
        print(f"\n--- profile: {label} (top {count} by {order}) ---")
        print("\n".join(line for line in stream.getvalue().splitlines()[4:] if line.strip()))


def summary(samples: Samples) -> str:
    ordered = sorted(samples.cpu)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return (f"median {statistics.median(ordered):.2f} ms (min {ordered[0]:.2f}, p95 {p95:.2f}, n={len(ordered)}; "
            f"wall median {statistics.median(samples.wall):.2f})")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Analyzer benchmark on a generated 5,000-line model file.")
    parser.add_argument("--lines", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=30, help="cold full analyses")
    parser.add_argument("--edits", type=int, default=200, help="one-line edits, re-analysed one by one")
    parser.add_argument("--profile", action="store_true", help="print cProfile summaries of both")
    parser.add_argument("--write", metavar="PATH", help="also save the generated file here")
    parser.add_argument("--no-gc", action="store_true",
                        help="disable Python's cyclic GC while measuring (shows what its pauses cost)")
    args = parser.parse_args(argv)
    if args.no_gc:
        gc.disable()
    text = generate(args.lines)
    if args.write:
        with open(args.write, "w", encoding="utf-8") as handle:
            handle.write(text)
    classes = text.count("\nclass ")
    functions = len([line for line in text.splitlines() if line.startswith("def ")])
    check_incremental_is_exact(text)
    measure_full(text, 2)  # warm up imports and allocator
    full = measure_full(text, args.runs)
    warm_parse = measure_full(text, args.runs, cold=False)
    parse_only = Samples()
    for _ in range(args.runs):
        parse_only.time(ast.parse, text)
    incremental, findings = measure_incremental(text, args.edits)
    init_edits, _ = measure_incremental(text, max(10, args.edits // 4), init=True)
    broken = measure_broken_keystrokes(text, max(10, args.edits // 4))
    print(f"analyzer: {analysis_package.__file__} ({len(_module_caches())} module caches cleared per cold run); "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; gc {'off' if args.no_gc else 'on'}")
    print(f"model file: {text.count(chr(10))} lines, {classes} classes, {functions} top-level functions, "
          f"{findings} findings")
    full_median, incremental_median = statistics.median(full.cpu), statistics.median(incremental.cpu)
    print("figures: CPU time of this process (wall time alongside)")
    print(f"full analysis (cold):          {summary(full)}   target <= {TARGET_FULL_MS:.0f} ms"
          f"{'' if full_median <= TARGET_FULL_MS else f'  MISSED by {full_median - TARGET_FULL_MS:.1f} ms'}")
    print(f"  (fresh Workspace, module caches warm:              {summary(warm_parse)})")
    print(f"  (for scale, ast.parse of the whole file:           {summary(parse_only)})")
    print(f"after a one-line edit (warm):  {summary(incremental)}   target <= {TARGET_INCREMENTAL_MS:.0f} ms"
          f"{'' if incremental_median <= TARGET_INCREMENTAL_MS else f'  MISSED by {incremental_median - TARGET_INCREMENTAL_MS:.1f} ms'}")
    print(f"  (edits inside __init__, which change attribute types: {summary(init_edits)})")
    print(f"  (a keystroke leaving a syntax error in one function:   {summary(broken)})")
    if args.profile:
        profile("full analysis x5", lambda: measure_full(text, 5))
        profile(f"{min(args.edits, 100)} one-line edits", lambda: measure_incremental(text, min(args.edits, 100)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
