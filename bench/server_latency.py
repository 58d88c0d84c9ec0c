"""Language-server latency: didChange → publishDiagnostics on a 5,000-line file, minus the debounce.

Starts `python -m fuselens.server` over stdio, opens a generated 5,000-line model file, then types:
each round sends one incremental edit (a character inside a function body, alternating between
functions), waits for the publishDiagnostics of that version and subtracts the configured debounce.
Right after each round the analyzer alone analyses the same text in this process, so the figure of
what the server adds (latency minus the analyzer's time, per round) holds even on a busy machine.

    python bench/server_latency.py [--rounds 40] [--lines 5000] [--debounce-ms 250]
Targets: median <= 50 ms, p95 <= 100 ms.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

BLOCK = '''

class Block{i}(nn.Module):
    """Residual block {i}: norm, projection, activation, projection."""

    def __init__(self, dim: int = 64, hidden: int = 256) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm(x)
        h = self.up(h)
        h = torch.nn.functional.gelu(h)
        h = self.down(h)
        return x + self.scale * h


def attention_{i}(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v


@torch.compile
def step_{i}(x, w):
    y = torch.relu(x @ w)
    total = y.sum()
    if total > 0:
        y = y / total
{extra}    return y


def rope_{i}(x, cos, sin):
    x1, x2 = x[..., ::2], x[..., 1::2]
    rotated = torch.stack((-x2, x1), dim=-1).flatten(-2)
    return x * cos + rotated * sin
'''


def make_source(lines: int) -> str:
    parts = ["import math\n\nimport torch\nfrom torch import nn\n"]
    count, i = 4, 0
    while count < lines:
        extra = '    print("step", y.shape)\n' if i % 5 == 0 else ""
        block = BLOCK.format(i=i, extra=extra)
        parts.append(block)
        count += block.count("\n")
        i += 1
    return "".join(parts)


class Connection:
    def __init__(self, process) -> None:
        self.process = process

    def send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def read(self) -> dict:
        length = None
        while True:
            line = await self.process.stdout.readline()
            if not line:
                raise EOFError("server exited")
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
            elif line.strip() == b"" and length is not None:
                return json.loads(await self.process.stdout.readexactly(length))

    async def until(self, predicate) -> dict:
        while True:
            message = await self.read()
            if predicate(message):
                return message


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def edit_position(text: str, round_index: int) -> tuple[int, int]:
    """A column inside `y = torch.relu(x @ w)` of a different step_i each round."""
    targets = [n for n, line in enumerate(text.split("\n")) if line.startswith("    y = torch.relu(x @ w)")]
    line = targets[(round_index * 7) % len(targets)]
    return line, len("    y = torch.relu(x @ w")


async def run(args) -> dict:
    text = make_source(args.lines)
    path = Path(args.workdir) / "bench_model.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    uri = path.as_uri()
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", args.server_module, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    server = Connection(process)
    server.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "processId": None, "rootUri": path.parent.as_uri(), "capabilities": {},
        "initializationOptions": {"settings": {"debounceMs": args.debounce_ms}}}})
    await server.until(lambda m: m.get("id") == 1)
    server.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    server.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "python", "version": 1, "text": text}}})
    opened = time.perf_counter()
    first = await server.until(lambda m: m.get("method") == "textDocument/publishDiagnostics")
    open_ms = (time.perf_counter() - opened) * 1000
    from fuselens.analysis import analyze_source

    shadow = str(path)
    analyze_source(text, shadow)
    latencies, counts, alone = [], [], []
    for index in range(args.rounds + args.warmup):
        line, column = edit_position(text, index)
        version = index + 2
        server.send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"range": {"start": {"line": line, "character": column},
                                          "end": {"line": line, "character": column}}, "text": " "}]}})
        sent = time.perf_counter()
        message = await server.until(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                                     and m["params"].get("version") == version)
        elapsed = (time.perf_counter() - sent) * 1000 - args.debounce_ms
        lines = text.split("\n")
        lines[line] = lines[line][:column] + " " + lines[line][column:]
        text = "\n".join(lines)
        started = time.perf_counter()
        analyze_source(text, shadow)  # the same edit, analyzer only
        analyzer_ms = (time.perf_counter() - started) * 1000
        if index >= args.warmup:
            latencies.append(elapsed)
            alone.append(analyzer_ms)
            counts.append(len(message["params"]["diagnostics"]))
        await asyncio.sleep(0.05)
    server.send({"jsonrpc": "2.0", "id": 99, "method": "shutdown"})
    await server.until(lambda m: m.get("id") == 99)
    server.send({"jsonrpc": "2.0", "method": "exit"})
    await process.wait()
    return {"lines": text.count("\n"), "open_ms": open_ms, "first_diagnostics": len(first["params"]["diagnostics"]),
            "latencies": latencies, "alone": alone, "diagnostics": counts[-1] if counts else 0}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--lines", type=int, default=5000)
    parser.add_argument("--debounce-ms", type=int, default=250)
    parser.add_argument("--workdir", default="/tmp/fuselens-bench")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--server-module", default="fuselens.server", help="python -m MODULE starts the server")
    args = parser.parse_args(argv)
    result = asyncio.run(run(args))
    latencies, floor = result["latencies"], result["alone"]
    overhead = [server - alone for server, alone in zip(latencies, floor)]
    figures = {
        "lines": result["lines"],
        "diagnostics": result["diagnostics"],
        "open_ms": round(result["open_ms"], 1),
        "median_ms": round(statistics.median(latencies), 1),
        "p95_ms": round(percentile(latencies, 0.95), 1),
        "max_ms": round(max(latencies), 1),
        "analyzer_median_ms": round(statistics.median(floor), 1),
        "analyzer_p95_ms": round(percentile(floor, 0.95), 1),
        "server_overhead_median_ms": round(statistics.median(overhead), 1),
        "server_overhead_p95_ms": round(percentile(overhead, 0.95), 1),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    if args.json:
        print(json.dumps(figures))
    else:
        print(f"{figures['lines']} lines, {figures['diagnostics']} diagnostics, first analysis {figures['open_ms']} ms")
        print(f"didChange -> publishDiagnostics minus {args.debounce_ms} ms debounce, {len(latencies)} edits: "
              f"median {figures['median_ms']} ms, p95 {figures['p95_ms']} ms, max {figures['max_ms']} ms "
              f"(target <= 50 / <= 100)")
        print(f"analyzer alone on the same edits: median {figures['analyzer_median_ms']} ms, "
              f"p95 {figures['analyzer_p95_ms']} ms")
        print(f"what the server adds (per edit, latency minus analyzer): median "
              f"{figures['server_overhead_median_ms']} ms, p95 {figures['server_overhead_p95_ms']} ms")
        print(f"load average {figures['load_average']} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
